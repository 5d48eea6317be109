"""A 2.x-shaped long-term memory tree of any size, and a full picture of a tree (bytes, modes, mtimes)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

NOTE = """---
description: Note {n} about project {p}, written by auto memory.
name: topic-{n}
session_id: qpsid_sha256_{h}
---

## Facts
- Fact {n}: the deploy of service {p} uses port {port}.
- Decided on {day} to keep {p} on Python 3.11.
"""


def build_memory_tree(ws: Path, notes: int) -> None:
    """`notes` topic notes spread over days, their day indexes, a digest, MEMORY.md and mem_metadata/."""
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "MEMORY.md").write_text("---\nsummary: core\n---\n\n## Core Long-Term Memory\n- likes tea\n")
    days: dict[str, list[str]] = {}
    for n in range(notes):
        day = f"2026-{1 + n % 12:02d}-{1 + n % 28:02d}"
        note = ws / "memory" / day / f"topic-{n}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(NOTE.format(n=n, p=f"svc{n % 37}", port=8000 + n, day=day,
                                    h=hashlib.sha256(str(n).encode()).hexdigest()))
        days.setdefault(day, []).append(f"- [[memory/{day}/topic-{n}.md]] name: topic-{n}")
    for day, lines in days.items():
        (ws / "memory" / f"{day}.md").write_text(
            f"---\nname: '{day}'\ndescription: {len(lines)} note(s) today.\n---\n\n<!-- notes:auto -->\n"
            + "\n".join(lines) + "\n<!-- /notes:auto -->")
    for bucket in ("procedure", "personal", "wiki"):
        (ws / "digest" / bucket).mkdir(parents=True, exist_ok=True)
    (ws / "digest" / "personal" / "tea.md").write_text(
        "---\nname: tea\ndescription: drinks\n---\n\nLikes tea.\n\n## Sources\n- [[memory/2026-01-01/topic-0.md]]\n")
    (ws / "mem_metadata" / "file_store").mkdir(parents=True, exist_ok=True)
    (ws / "mem_metadata" / "file_store" / "file_chunks_default_v1.jsonl.zst").write_bytes(b"\x28\xb5\x2f\xfd ReMe")


def picture(ws: Path, under=("MEMORY.md", "memory", "digest", "mem_metadata")) -> dict[str, tuple]:
    """path -> (sha256, mode, mtime_ns) for files, ("dir", mode) for directories."""
    out: dict[str, tuple] = {}
    for top in under:
        base = ws / top
        if base.is_file():
            st = base.stat()
            out[top] = (hashlib.sha256(base.read_bytes()).hexdigest(), st.st_mode & 0o7777, st.st_mtime_ns)
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            d = Path(dirpath)
            out[d.relative_to(ws).as_posix() + "/"] = ("dir", d.stat().st_mode & 0o7777)
            for name in filenames:
                p = d / name
                st = p.lstat()
                out[p.relative_to(ws).as_posix()] = (hashlib.sha256(p.read_bytes()).hexdigest(),
                                                     st.st_mode & 0o7777, st.st_mtime_ns)
    return out


def bytes_on_disk(root: Path) -> int:
    """Allocated bytes of every file and directory under root (what `du` counts)."""
    total = 0
    for dirpath, dirnames, filenames in os.walk(root):
        total += os.lstat(dirpath).st_blocks * 512
        for name in filenames:
            total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


def apparent_bytes(root: Path) -> int:
    return sum(os.lstat(os.path.join(d, f)).st_size for d, _, fs in os.walk(root) for f in fs)
