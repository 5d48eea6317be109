"""The qwenmem library. Nothing here imports typer or rich (tests/project/test_architecture.py)."""
