"""Operations: one command as a library call, `run(ws, Options) -> Outcome`, shared by the CLI and fleet.

The CLI maps its flags to the operation's frozen `Options` and renders the `Outcome`; a fleet worker runs the same
operation on each workspace and writes the same `Outcome` as its record. Nothing here prints or exits.
Started with `compact --check` (issue 25); the other commands still call their features from their CLI modules.
"""
