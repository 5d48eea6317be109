"""QwenPaw 2.x session repair: diagnose a 2.x file, the AgentScope 2.0 validation rules and their fixes, the 1.x to 2.x
conversion as QwenPaw loads it, and scroll bookkeeping against history.db."""
