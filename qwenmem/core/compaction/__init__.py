"""Three-tier compaction of QwenPaw sessions: tool-result pruning, conversation summary, daily-log note.

The neutral core: run.py (a run over several sessions, dispatched per file generation), context.py (what one run
shares), options.py, tiers.py and check.py (the per-tier and per-session reports), dialog.py (dialog/ offload
plumbing). Each generation's own math and writes are in gen1/ (QwenPaw 1.x) and gen2/ (QwenPaw 2.x).
"""
