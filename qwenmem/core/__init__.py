"""The qwenmem library. Nothing here imports typer or rich (tests/test_architecture.py)."""
