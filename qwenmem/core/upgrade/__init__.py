"""`qwenmem upgrade`: a whole QwenPaw 1.x workspace moved to the 2.x shape at once, keeping the whole record
(spec qwenpaw2-workspace.md §2.6, §3, §7.1; issue 28).

Modules: `stable` (the 1.x → 2.x message conversion with ids and timestamps generated once, from the message
itself), `source` (a workspace's 1.x record: session files with their marks, dialog/ offloads), `gen1_summary` (1.x's
`_compressed_summary` as a scroll continuation summary), `shape` (the 2.x session document per strategy),
`store` (history.db: QwenPaw's schema, rows, FTS), `agentjson` (the 2.x keys), `journal` (what a run changed, for
`--undo`), `run` (the plan and its writes).
"""
