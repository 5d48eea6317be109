from qwenmem.cli.app import main

main()
