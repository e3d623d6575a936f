from nixgen.cmdline.entry import main

main()
