"""The command-line adapter: parse arguments, call qwenmem.core, render results."""
