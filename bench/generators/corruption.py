"""A corruption corpus built from the real session files, with the ground truth of what is recoverable.

Every case says which [message, marks] items a perfect repair would keep, computed from the healthy original
(the byte span of each item is found by re-serialising it exactly as QwenPaw does), never from qwenmem's output.
Used by bench/quality/repair_bench.py and by the tests.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS_REAL = REPO.parent / "shared" / "corpus" / "real"
MARKER = "\ue000"  # a private-use character we plant and then turn into damaged bytes
MARKER_BYTES = MARKER.encode("utf-8")


@dataclass
class Case:
    cls: str
    name: str
    data: bytes
    expected: list  # recoverable content items, in order
    expected_summary: str | None  # the summary if it is recoverable, else None
    fix_tool_pairs: bool = False
    source: str = ""
    detail: str = ""
    notes: dict = field(default_factory=dict)


def real_session_files() -> list[Path]:
    return sorted(p for p in CORPUS_REAL.rglob("sessions/*") if p.is_file())


def dumps(doc) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")


def item_spans(data: bytes, doc: dict) -> list[tuple[int, int]]:
    """Byte span of each content item in a file that QwenPaw wrote (single line, default separators)."""
    head = b'{"agent": {"memory": {"content": ['
    if not data.startswith(head):
        raise ValueError("not a file in QwenPaw's own serialisation")
    pos, spans = len(head), []
    for item in doc["agent"]["memory"]["content"]:
        enc = dumps(item)
        if data[pos:pos + len(enc)] != enc:
            raise ValueError("item does not re-serialise to the same bytes")
        spans.append((pos, pos + len(enc)))
        pos += len(enc) + 2
    return spans


def summary_end(data: bytes, doc: dict, spans: list[tuple[int, int]]) -> int:
    mem = doc["agent"]["memory"]
    content_end = (spans[-1][1] if spans else len(b'{"agent": {"memory": {"content": [')) + 1
    rest = b', "_compressed_summary": ' + dumps(mem.get("_compressed_summary", ""))
    assert data[content_end:content_end + len(rest)] == rest
    return content_end + len(rest)


def tool_pairs_consistent(items: list) -> bool:
    msgs = [i[0] if isinstance(i, list) else i for i in items]
    uses = {b.get("id") for m in msgs if isinstance(m.get("content"), list) for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_use"}
    results = {b.get("id") for m in msgs if isinstance(m.get("content"), list) for b in m["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"}
    return uses == results


def sources(paths: list[Path] | None = None) -> list[tuple[str, bytes, dict]]:
    """(name, bytes, doc) of every real session file (or of `paths`) that loads as JSON."""
    out = []
    for path in real_session_files() if paths is None else paths:
        data = path.read_bytes()
        try:
            doc = json.loads(data.decode("utf-8"))
        except ValueError:
            continue
        out.append((f"{path.parents[1].name[:24]}__{path.stem}"[:90], data, doc))
    return out


def _text_positions(doc: dict) -> list[tuple[int, int]]:
    """(item index, block index) of text blocks with at least 4 characters."""
    out = []
    for i, (msg, _marks) in enumerate(doc["agent"]["memory"]["content"]):
        if isinstance(msg.get("content"), list):
            out += [(i, j) for j, b in enumerate(msg["content"])
                    if isinstance(b, dict) and b.get("type") == "text" and len(b.get("text", "")) >= 4]
    return out


def _plant(doc: dict, rng: random.Random, count: int, replacement: str) -> tuple[dict, dict]:
    """(doc with MARKER planted in `count` text blocks, the same doc with `replacement` there instead)."""
    damaged, expected = json.loads(json.dumps(doc)), json.loads(json.dumps(doc))
    spots = _text_positions(doc)
    for i, j in rng.sample(spots, min(count, len(spots))):
        text = doc["agent"]["memory"]["content"][i][0]["content"][j]["text"]
        k = rng.randrange(1, len(text))
        damaged["agent"]["memory"]["content"][i][0]["content"][j]["text"] = text[:k] + MARKER + text[k:]
        expected["agent"]["memory"]["content"][i][0]["content"][j]["text"] = text[:k] + replacement + text[k:]
    return damaged, expected


def generate(seed: int = 7, truncations: int = 16, paths: list[Path] | None = None) -> list[Case]:
    """Cases from the real corpus, or from `paths` (the tests pass their own fixture sessions)."""
    rng = random.Random(seed)
    cases: list[Case] = []
    for name, data, doc in sources(paths):
        items = doc["agent"]["memory"]["content"]
        summary = doc["agent"]["memory"].get("_compressed_summary", "")
        spans = item_spans(data, doc)
        s_end = summary_end(data, doc, spans)
        healthy = tool_pairs_consistent(items)

        def truncated_at(cut: int, cls: str = "truncated", tail: bytes = b"", detail: str = "") -> Case:
            keep = [it for it, (_, e) in zip(items, spans) if e <= cut]
            return Case(cls, f"{name}.cut{cut}", data[:cut] + tail, keep, summary if cut >= s_end else None,
                        source=name, detail=detail or f"cut at byte {cut} of {len(data)}")

        # truncation: random offsets, offsets inside multi-byte characters, offsets at item boundaries
        start = spans[0][0] if spans else 10
        offsets = {rng.randrange(start, len(data)) for _ in range(truncations)}
        multibyte = [i for i in range(start, len(data)) if 0x80 <= data[i] <= 0xBF]
        offsets |= set(rng.sample(multibyte, min(4, len(multibyte))))
        offsets |= {e for _, e in rng.sample(spans, min(2, len(spans)))}
        offsets |= {s_end - 1, s_end + 5}
        cases += [truncated_at(c) for c in sorted(offsets) if 0 < c < len(data)]
        if not healthy:
            continue  # the other classes need a file whose only problem is the one we add
        cases.append(truncated_at(rng.randrange(start, len(data)), "truncated+nul_tail", b"\x00" * 4096))
        cases.append(Case("trailing_garbage", f"{name}.garbage", data + b"QQ", items, summary, source=name))
        cases.append(Case("trailing_garbage", f"{name}.tornwrite", data + data[-17:], items, summary, source=name,
                          detail="the last 17 bytes repeated, as in QwenPaw#3277"))
        cases.append(Case("trailing_garbage", f"{name}.nultail", data + b"\x00" * 1000, items, summary, source=name))
        if len(items) >= 2:
            k = len(items) // 2
            older = json.loads(json.dumps(doc))
            older["agent"]["memory"]["content"] = items[:k]
            cases.append(Case("concatenated", f"{name}.old+new", dumps(older) + data, items, summary, source=name))
            cases.append(Case("concatenated", f"{name}.new+old", data + dumps(older), items, summary, source=name))
        cases.append(Case("concatenated", f"{name}.twice", data + data, items, summary, source=name))
        cases.append(Case("bom", f"{name}.bom", b"\xef\xbb\xbf" + data, items, summary, source=name))
        if _text_positions(doc):
            for cls, repl, count in (("invalid_utf8", b"\xff", 3), ("invalid_utf8", b"\xc3", 1),
                                     ("lone_surrogates", b"\xed\xa0\x80", 2), ("lone_surrogates", b"\\ud83d", 2)):
                damaged, expected = _plant(doc, rng, count, "\ufffd")
                blob = dumps(damaged).replace(MARKER_BYTES, repl)
                tag = repl.hex() if repl[0] != 0x5C else "escaped"
                cases.append(Case(cls, f"{name}.{cls}.{tag}", blob, expected["agent"]["memory"]["content"],
                                  summary, source=name))
        if len(items) >= 3:
            damaged = json.loads(json.dumps(doc))
            content = damaged["agent"]["memory"]["content"]
            broken = rng.sample(range(len(content)), min(3, len(content) - 1))
            breakers = [lambda it: it[0].pop("role"), lambda it: it[0].__setitem__("content", 42),
                        lambda it: it[0].__setitem__("id", 123), lambda it: it.pop(), lambda it: it.append("x"),
                        lambda it: it[0].__setitem__("role", "tool")]
            for idx in broken:
                rng.choice(breakers)(content[idx])
            keep = [it for i, it in enumerate(items) if i not in broken]
            cases.append(Case("broken_messages", f"{name}.broken", dumps(damaged), keep, summary, source=name))
        # mid-file damage: a block of NULs or junk over part of the conversation
        if len(items) >= 4:
            for filler in (b"\x00", b"#"):
                a = rng.randrange(spans[1][0], spans[-2][1])
                b = min(a + rng.randrange(50, 3000), spans[-1][0])
                if b <= a:
                    continue
                blob = data[:a] + filler * (b - a) + data[b:]
                keep = [it for it, (s, e) in zip(items, spans) if e <= a or s >= b]
                cases.append(Case("damaged_json", f"{name}.mid{filler.hex()}{a}", blob, keep, summary, source=name,
                                  detail=f"bytes {a}-{b} overwritten"))
        # orphan tool pairs: drop a result message (dangling call) or a call message (orphan result)
        result_msgs = [i for i, (m, _) in enumerate(items) if m.get("role") == "system" and isinstance(
            m.get("content"), list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in m["content"])]
        if result_msgs:
            drop = rng.choice(result_msgs)
            damaged = json.loads(json.dumps(doc))
            del damaged["agent"]["memory"]["content"][drop]
            keep = [it for i, it in enumerate(items) if i != drop]
            cases.append(Case("orphan_tool_pairs", f"{name}.dangling", dumps(damaged), keep, summary, True, name))
            ids = {b["id"] for b in items[drop][0]["content"] if b.get("type") == "tool_result"}
            callers = [i for i, (m, _) in enumerate(items) if isinstance(m.get("content"), list) and m["role"] ==
                       "assistant" and {b.get("id") for b in m["content"] if isinstance(b, dict)
                                        and b.get("type") == "tool_use"} <= ids and any(
                isinstance(b, dict) and b.get("type") == "tool_use" for b in m["content"])]
            if callers:
                caller = callers[0]
                damaged = json.loads(json.dumps(doc))
                del damaged["agent"]["memory"]["content"][caller]
                keep = [it for i, it in enumerate(items) if i not in (caller, drop)]
                cases.append(Case("orphan_tool_pairs", f"{name}.orphanresult", dumps(damaged), keep, summary, True,
                                  name, notes={"removed_expected": 1}))
    for i, blob in enumerate((b"", b"\x00" * 4096, b"   \n", b"[1, 2, 3]", b'{"foo": 1}')):
        cases.append(Case("empty" if i < 3 else "not_a_session", f"hopeless{i}", blob, [], None))
    return cases
