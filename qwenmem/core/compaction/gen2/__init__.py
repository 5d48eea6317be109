"""Compaction of QwenPaw 2.x sessions with 2.x's own math (spec qwenpaw2-workspace.md §4).

  tokens.py  AgentScope 2.0's count_tokens on raw Msg dicts (bytes/4 over the concatenation, +2000 per data block)
  prompt.py  the parts a 2.x session file does not store: the system prompt and the tool schemas (estimates)
  native.py  the native strategy: trigger, AgentScope's split walk, the summary template
  scroll.py  the scroll strategy: trigger / reserve / hard limit and the eviction split (decision only)
  prune.py   2.x tool-result pruning (tool_results/ artifacts, quoted-path notice, qwenpaw_truncation metadata)
  check.py   `compact --check` for one 2.x session file
  summary.py the five summary fields (LLM JSON reply or offline extractive)
  dialog.py  dialog/<date>.jsonl offload in the 2.0 Msg shape
  evict.py   scroll eviction: Tier-0 block, placeholder, bookkeeping pruned to the live tail
  history_write.py  history.db rows for live messages QwenPaw never persisted (written before any eviction)
  run.py     `compact` for one 2.x session file: tier 1 pruning, then native or scroll, safe writes

The 1.x compaction lives in qwenmem.core.compaction.gen1; qwenmem.core.compaction.run reads each file once and
dispatches it by its generation.
"""
