from qwenmem.cli.entry import main  # first: Ctrl-C handled before the heavy imports

main()
