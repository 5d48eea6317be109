"""Three-tier compaction of QwenPaw sessions: tool-result pruning, conversation summary, daily-log note."""
