"""QwenPaw 1.x compaction: tier-1 pruning, the tier-2 summary and its message formatting, the tier-3 daily-log note."""
