from qwenmem.cli.signals import main  # first: Ctrl-C handled before the heavy imports

main()
