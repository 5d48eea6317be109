"""Compaction of QwenPaw 1.x sessions with 1.x's own math (spec qwenpaw-workspace.md §4).

  threshold.py  when 1.x compacts and what it keeps, for both agent.json key layouts (current and legacy)
  prune.py      tier 1: tool-result pruning and its offload files
  summarize.py  tier 2: the summary (LLM or offline extractive); formatting.py and prompts.py feed it
  longterm.py   tier 3: the daily-log note
  check.py      `compact --check` for one 1.x session file
  run.py        `compact` for one 1.x session file: the three tiers in memory, then the safe writes

The run over several sessions of either generation lives in qwenmem.core.compaction.run.
"""
