"""QwenPaw 1.x session repair: what its strict `agent.load_state_dict` needs (spec qwenpaw-workspace.md §2.2)."""
