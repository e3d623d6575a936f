from nixgen.cli import main

main()
