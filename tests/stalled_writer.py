"""A stand-in for a QwenPaw 1.x assistant (spec §3.3): each turn loads the session (anything unreadable loads as an
empty conversation, like `_safe_json_loads`), appends one message, and saves with open("w") + write, stalling between
the two halves of the write. Run as a second process: `python stalled_writer.py PATH TURNS STALL_SECONDS`."""

import json
import sys
import time


def main(path: str, turns: int, stall: float) -> None:
    for turn in range(turns):
        try:
            with open(path, encoding="utf-8") as fh:
                state = json.loads(fh.read())
            content = state["agent"]["memory"]["content"]
        except (ValueError, KeyError, TypeError, OSError):
            state = {"agent": {"memory": {"content": [], "_compressed_summary": ""}, "toolkit": {"active_groups": []},
                               "name": "Friday", "_sys_prompt": ""}}
            content = state["agent"]["memory"]["content"]
        content.append([{"id": f"turn-{turn}", "name": "user", "role": "user",
                         "content": [{"type": "text", "text": f"turn {turn} " + "words " * 40}], "metadata": {},
                         "timestamp": f"2026-03-02 10:{turn // 60:02d}:{turn % 60:02d}.000"}, []])
        text = json.dumps(state, ensure_ascii=False)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text[: len(text) // 2])
            fh.flush()
            time.sleep(stall)
            fh.write(text[len(text) // 2:])
        time.sleep(0.02)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
