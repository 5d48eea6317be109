"""Compaction of QwenPaw 2.x sessions with 2.x's own math (spec qwenpaw2-workspace.md §4).

  tokens.py  AgentScope 2.0's count_tokens on raw Msg dicts (bytes/4 over the concatenation, +2000 per data block)
  prompt.py  the parts a 2.x session file does not store: the system prompt and the tool schemas (estimates)
  native.py  the native strategy: trigger, AgentScope's split walk, the summary template
  scroll.py  the scroll strategy: trigger / reserve / hard limit and the eviction split (decision only)
  check.py   `compact --check` for one 2.x session file
  run.py     `compact` (native) for one 2.x session file: summary, dialog/ offload, safe write

The 1.x compaction lives in qwenmem.core.compaction; the CLI dispatches per file generation.
"""
