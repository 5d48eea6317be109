"""Operations: one command as a library call, `run(ws, Options) -> Outcome`, shared by the CLI and fleet.

The CLI maps its flags to the operation's frozen `Options` and renders the `Outcome`; a fleet worker runs the same
operation on each workspace and writes the same `Outcome` as its record. Nothing here prints or exits.
A module's OMITTED_FIELDS are fields of its data that the JSON document leaves out: what the outcome already
carries (its warnings) or only people's view needs (issue 25).
"""
