from nixgen.entry import main

main()
