"""2.x repair bench: a seeded corruption corpus of QwenPaw 2.x session files, repaired by a real `sessions repair`
run, every result validated by AgentScope 2.0.10's own `AgentState` (in a separate venv).

    python bench/quality/repair2_bench.py [--seed 7] [--per-class 12] [--no-record]

Sources: the 2.x session files of the generated corpus (../shared/corpus/generated/qwenpaw-2.2.2, when present)
and the self-written fixtures of tests/fixtures/qwenpaw2/builder.py. Each class (byte damage: truncated,
trailing_garbage, concatenated, bom, invalid_utf8, lone_surrogate, not_a_session; AgentState rules: user_tool_result,
data_no_media_type, tool_input_dict, content_string, bad_block_state, system_data, non_dict_message, missing_name,
tool_role, text_not_string, mixed, random_field; 1.x blocks inside a 2.x file: legacy_blocks; a block without its
"type": untyped_block) is written next to healthy copies into one workspace and repaired with
`run_repair(mode=repair)` (quarantine, atomic writes, lock).

Measured per class: recoverable messages (complete in the damaged bytes and loadable or fixable) found again in the
repaired file; originals preserved (the quarantined copy is byte-identical to the damaged file); healthy files
byte-identical; invented messages (ids in the result that were not in the damaged file); repaired files that pass
`AgentState.model_validate` (bench/peer/agentscope2_validate.py under the agentscope venv, created if missing); and
whether qwenmem's rules (repair/gen2/rules.py) agree with AgentScope's verdict on each damaged file.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "qwenpaw2"))

import builder  # noqa: E402

AS2_VENV = Path(os.environ.get("QWENMEM_AS2_VENV", "/tmp/as2-venv"))
SHARED = Path(os.environ.get("QWENMEM_SHARED", ROOT.parent / "shared"))
CORPUS_SESSIONS = SHARED / "corpus" / "generated" / "qwenpaw-2.2.2" / "root" / "workspaces" / "default" / "sessions"


def ensure_venv() -> Path:
    python = AS2_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(AS2_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "agentscope==2.0.10"], check=True)
    return python


def dumps(doc) -> str:
    return json.dumps(doc, ensure_ascii=False)


_SOURCES: list[tuple[str, dict]] = []


def sources() -> list[tuple[str, dict]]:
    """The healthy 2.x documents (built once: builder ids are random, seeded runs reuse the same objects)."""
    if _SOURCES:
        return _SOURCES
    ids_rng = random.Random(20261201)
    builder.new_id = lambda: f"{ids_rng.getrandbits(128):032x}"  # reproducible fixture ids (uuid4 otherwise)
    out = _SOURCES
    if CORPUS_SESSIONS.is_dir():
        for p in sorted(CORPUS_SESSIONS.rglob("*.json")):
            try:
                doc = json.JSONDecoder().raw_decode(p.read_text(encoding="utf-8"))[0]
            except ValueError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get("agent"), dict) and "state" in doc["agent"]:
                out.append((f"corpus:{p.relative_to(CORPUS_SESSIONS)}", doc))
    clock = builder.Clock()
    out.append(("builder:en", builder.document(builder.state("b-en", builder.conversation(14, clock)))))
    out.append(("builder:zh", builder.document(builder.state("b-zh", builder.conversation(10, clock, lang="zh")))))
    live = [builder.placeholder(clock, "b-scroll")] + builder.conversation(8, clock)
    seq = {m["id"]: (i + 10, i + 10) for i, m in enumerate(live)}
    scroll = builder.scroll_state("b-scroll", live, seq, (1, 9), [live[0]["id"]])
    out.append(("builder:scroll", builder.document(builder.state("b-scroll", live), scroll)))
    return out


def ctx(doc) -> list:
    return doc["agent"]["state"]["context"]


def ids(doc) -> list[str]:
    return [m["id"] for m in ctx(doc) if isinstance(m, dict) and isinstance(m.get("id"), str)]


class Case:
    def __init__(self, cls: str, source: str, data: bytes, recoverable: set[str], moved: set[str] | None = None,
                 exact: bool = True):
        self.cls, self.source, self.data, self.recoverable = cls, source, data, recoverable
        self.moved = moved or set()  # tool_result ids that must end up in an assistant message
        self.exact = exact  # recovered messages must equal the originals


# --- byte-level damage -------------------------------------------------------------------------------------------

def truncated(rng, name, doc):
    text = dumps(doc)
    start = text.index('"context"') + 12
    cut = rng.randrange(start, len(text) - 1)
    rec = set()
    for m in ctx(doc):
        s = dumps(m)
        pos = text.find(s)
        if pos >= 0 and pos + len(s) <= cut:
            rec.add(m["id"])
    return Case("truncated", name, text[:cut].encode(), rec)


def torn_middle(rng, name, doc):
    """A stretch inside the context overwritten (NULs or random bytes: a torn write, a bad sector)."""
    text = dumps(doc)
    start = text.index('"context"') + 12
    end = text.index('"reply_context"') if '"reply_context"' in text else len(text) - 2
    lo = rng.randrange(start, max(start + 1, end - 50))
    n = rng.randint(8, 300)
    fill = rng.choice(["\x00" * n, "".join(chr(rng.randint(33, 126)) for _ in range(n))])
    rec = set()
    for m in ctx(doc):
        s = dumps(m)
        pos = text.find(s)
        if pos >= 0 and (pos + len(s) <= lo or pos >= lo + n):
            rec.add(m["id"])
    return Case("torn_middle", name, (text[:lo] + fill + text[lo + n:]).encode(), rec)


def trailing_garbage(rng, name, doc):
    text = dumps(doc).encode()
    tail = rng.choice([b"\x00" * rng.randint(1, 4096), b"}]}", text[-rng.randint(5, 200):],
                       bytes(rng.randint(32, 126) for _ in range(rng.randint(1, 80))), b"\n\n{\"agent\": {"])
    return Case("trailing_garbage", name, text + tail, set(ids(doc)))


def concatenated(rng, name, doc):
    older = copy.deepcopy(doc)
    k = rng.randint(1, max(1, len(ctx(doc)) - 1))
    older["agent"]["state"]["context"] = ctx(older)[:k]
    first = dumps(older)
    if rng.random() < 0.5:  # a save cut short, then a complete one appended after it
        first = first[:rng.randrange(len(first) // 2, len(first) - 1)]
    return Case("concatenated", name, (first + rng.choice(["", "\n"]) + dumps(doc)).encode(), set(ids(doc)))


def bom(rng, name, doc):
    return Case("bom", name, b"\xef\xbb\xbf" + dumps(doc).encode(), set(ids(doc)))


def _text_positions(text: str) -> list[int]:
    out, pos = [], 0
    while True:
        pos = text.find('"text": "', pos)
        if pos < 0:
            return out
        out.append(pos + 9)
        pos += 9


def invalid_utf8(rng, name, doc):
    text = dumps(doc)
    pos = rng.choice(_text_positions(text))
    data = text[:pos].encode() + rng.choice([b"\xff", b"\xc3", b"\xe4\xb8"]) + text[pos:].encode()
    return Case("invalid_utf8", name, data, set(ids(doc)), exact=False)


def lone_surrogate(rng, name, doc):
    text = dumps(doc)
    pos = rng.choice(_text_positions(text))
    return Case("lone_surrogate", name, (text[:pos] + rng.choice(["\\ud800", "\\udfff"]) + text[pos:]).encode(),
                set(ids(doc)), exact=False)


def not_a_session(rng, name, doc):
    state = doc["agent"]["state"]
    value = rng.choice([state, {k: v for k, v in doc["agent"].items()}, state["context"]])
    return Case("not_a_session", name, dumps(value).encode(), set(ids(doc)))


# --- AgentState rules --------------------------------------------------------------------------------------------

def _list_msgs(doc):
    return [m for m in ctx(doc) if isinstance(m, dict) and isinstance(m.get("content"), list)]


def _tool_msgs(doc):
    return [m for m in _list_msgs(doc) if any(isinstance(b, dict) and b.get("type") == "tool_call"
                                              for b in m["content"])]


def user_tool_result(rng, name, doc):
    d = copy.deepcopy(doc)
    msgs = _tool_msgs(d)
    if not msgs:
        return None
    m = rng.choice(msgs)
    res = next((b for b in m["content"] if b.get("type") == "tool_result"), None)
    if res is None:
        return None
    m["content"].remove(res)
    user = {"name": "user", "content": [res], "role": "user", "id": builder.new_id(), "metadata": {},
            "created_at": m["created_at"]}
    ctx(d).insert(ctx(d).index(m) + 1, user)
    return Case("user_tool_result", name, dumps(d).encode(), set(ids(doc)), moved={res["id"]}, exact=False)


def _user_msgs(doc):
    return [m for m in _list_msgs(doc) if m.get("role") == "user" and not (m.get("metadata") or {}).get("qwenpaw_tag") ==
            "scroll_memory"]


def data_no_media_type(rng, name, doc):
    d = copy.deepcopy(doc)
    users = _user_msgs(d)
    if not users:
        return None
    m = rng.choice(users)
    src = rng.choice([{"type": "url", "url": "https://example.test/photo.jpg"},
                      {"type": "base64", "data": "aGVsbG8="}])
    m["content"].append({"type": "data", "id": builder.new_id(), "source": src, "name": "photo.jpg"})
    return Case("data_no_media_type", name, dumps(d).encode(), set(ids(doc)), exact=False)


def tool_input_dict(rng, name, doc):
    d = copy.deepcopy(doc)
    msgs = _tool_msgs(d)
    if not msgs:
        return None
    call = next(b for b in rng.choice(msgs)["content"] if b.get("type") == "tool_call")
    if isinstance(call["input"], str):
        call["input"] = json.loads(call["input"]) if call["input"].startswith("{") else {"raw": call["input"]}
    return Case("tool_input_dict", name, dumps(d).encode(), set(ids(doc)), exact=False)


def content_string(rng, name, doc):
    d = copy.deepcopy(doc)
    users = [m for m in _user_msgs(d) if all(isinstance(b, dict) and b.get("type") == "text" for b in m["content"])]
    if not users:
        return None
    m = rng.choice(users)
    m["content"] = "\n".join(b.get("text", "") for b in m["content"] if b.get("type") == "text")
    return Case("content_string", name, dumps(d).encode(), set(ids(doc)), exact=False)


def bad_block_state(rng, name, doc):
    d = copy.deepcopy(doc)
    msgs = _tool_msgs(d)
    if not msgs:
        return None
    block = rng.choice([b for b in rng.choice(msgs)["content"] if isinstance(b, dict)
                        and b.get("type") in ("tool_call", "tool_result")])
    block["state"] = rng.choice(["done", "ok", "", "SUCCESS"])
    return Case("bad_block_state", name, dumps(d).encode(), set(ids(doc)), exact=False)


def system_data(rng, name, doc):
    d = copy.deepcopy(doc)
    t = _list_msgs(d)[0].get("created_at", "2026-12-01T08:00:00")
    sysmsg = {"name": "system", "role": "system", "id": builder.new_id(), "metadata": {}, "created_at": t,
              "content": [{"type": "text", "text": "be brief"},
                          {"type": "data", "source": {"type": "url", "url": "https://x.test/a.png",
                                                      "media_type": "image/png"}}]}
    ctx(d).insert(rng.randint(0, len(ctx(d))), sysmsg)
    return Case("system_data", name, dumps(d).encode(), set(ids(doc)) | {sysmsg["id"]}, exact=False)


def non_dict_message(rng, name, doc):
    d = copy.deepcopy(doc)
    ctx(d).insert(rng.randint(0, len(ctx(d))), rng.choice([42, "hello", None, [1, 2]]))
    return Case("non_dict_message", name, dumps(d).encode(), set(ids(doc)))


def missing_name(rng, name, doc):
    d = copy.deepcopy(doc)
    rng.choice(ctx(d)).pop("name")
    return Case("missing_name", name, dumps(d).encode(), set(ids(doc)), exact=False)


def tool_role(rng, name, doc):
    d = copy.deepcopy(doc)
    msgs = _tool_msgs(d)
    if not msgs:
        return None
    rng.choice(msgs)["role"] = rng.choice(["tool", "function", None])
    return Case("tool_role", name, dumps(d).encode(), set(ids(doc)), exact=False)


def text_not_string(rng, name, doc):
    d = copy.deepcopy(doc)
    m = rng.choice(_list_msgs(d))
    m["content"].append({"type": "text", "text": rng.choice([None, 7, {"t": 1}])})
    return Case("text_not_string", name, dumps(d).encode(), set(ids(doc)), exact=False)


_ODD_VALUES = [None, 7, 1.5, True, "x", "", [], {}, [1], {"a": 1}, "2026-12-01T08:00:00", "https://x.test/a.png"]


def random_field(rng, name, doc):
    """1-3 random fields of messages/blocks/state set to an odd value or deleted: probes every rule, and whether
    qwenmem's rules and AgentState agree on it."""
    d = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        m = rng.choice(ctx(d))
        target = m
        if m["content"] and rng.random() < 0.6:
            target = rng.choice(m["content"])
            if isinstance(target.get("source"), dict) and rng.random() < 0.5:
                target = target["source"]
            elif isinstance(target.get("output"), list) and target["output"] and rng.random() < 0.4:
                target = rng.choice(target["output"])
        elif m.get("usage") and rng.random() < 0.2:
            target = m["usage"]
        key = rng.choice(sorted(target))
        if rng.random() < 0.25:
            target.pop(key)
        else:
            target[key] = copy.deepcopy(rng.choice(_ODD_VALUES))
    if rng.random() < 0.2:
        st = d["agent"]["state"]
        st[rng.choice(["session_id", "summary", "reply_context", "tool_context", "tasks_context"])] = \
            copy.deepcopy(rng.choice(_ODD_VALUES))
    # a message whose content was destroyed carries nothing to recover (it goes to the quarantine record)
    alive = {m["id"] for m in _list_msgs(d) if isinstance(m.get("id"), str)}
    return Case("random_field", name, dumps(d).encode(), alive & set(ids(doc)), exact=False)


RULES = [user_tool_result, data_no_media_type, tool_input_dict, content_string, bad_block_state, system_data,
         non_dict_message, missing_name, tool_role, text_not_string]


def mixed(rng, name, doc):
    """Two or three rule breaks in one file, then possibly byte damage on top."""
    case = None
    current = doc
    rec, moved = set(ids(doc)), set()
    for fn in rng.sample([f for f in RULES if f is not non_dict_message], rng.randint(2, 3)):
        before = set(ids(current))
        c = fn(rng, name, current)
        if c is None:
            continue
        current = json.loads(c.data)
        if c.cls == "system_data":  # a new message with content; user_tool_result's wrapper is not one
            rec |= c.recoverable - before
        moved |= c.moved
        case = c
    if case is None:
        return None
    rec &= {m["id"] for m in _list_msgs(current) if isinstance(m.get("id"), str)} | \
        {m["id"] for m in ctx(current) if isinstance(m, dict) and isinstance(m.get("content"), str)}
    return Case("mixed", name, dumps(current).encode(), rec, moved, exact=False)


def legacy_blocks(rng, name, doc):
    """1.x blocks inside a 2.x file: a tool_use (dict input and a different raw_input), an image at a local path,
    a file block; QwenPaw's msg_from_dict converts all three."""
    d = copy.deepcopy(doc)
    msgs, users = _tool_msgs(d), _user_msgs(d)
    if not msgs or not users:
        return None
    m = rng.choice(msgs)
    i = next(j for j, b in enumerate(m["content"]) if b.get("type") == "tool_call")
    call = m["content"][i]
    args = json.loads(call["input"]) if call["input"].startswith("{") else {"raw": call["input"]}
    m["content"][i] = {"type": "tool_use", "id": call["id"], "name": call["name"], "input": args,
                       "raw_input": call["input"][: len(call["input"]) // 2]}
    u = rng.choice(users)
    u["content"].append({"type": "image", "source": {"type": "url", "url": f"/home/user/pics/p{rng.randint(1, 99)}.png"}})
    u["content"].append({"type": "file", "filename": "notes.pdf", "source": {"type": "url", "url": "/home/user/notes.pdf"}})
    return Case("legacy_blocks", name, dumps(d).encode(), set(ids(doc)), exact=False)


def untyped_block(rng, name, doc):
    """A block that lost its "type" key: AgentScope reads it as the member of its block union it validates as."""
    d = copy.deepcopy(doc)
    blocks = [b for m in _list_msgs(d) for b in m["content"] if isinstance(b, dict) and "type" in b]
    if not blocks:
        return None
    del rng.choice(blocks)["type"]
    return Case("untyped_block", name, dumps(d).encode(), set(ids(doc)), exact=False)


CLASSES = ([truncated, torn_middle, trailing_garbage, concatenated, bom, invalid_utf8, lone_surrogate, not_a_session] + RULES
           + [mixed, random_field, legacy_blocks, untyped_block])


def generate(seed: int, per_class: int) -> tuple[list[Case], list[tuple[str, bytes]]]:
    rng = random.Random(seed)
    srcs = sources()
    cases = []
    for fn in CLASSES:
        made = 0
        tries = 0
        while made < per_class and tries < per_class * 10:
            tries += 1
            name, doc = srcs[tries % len(srcs)]
            case = fn(rng, name, doc)
            if case is not None:
                cases.append(case)
                made += 1
    healthy = [(name, dumps(doc).encode()) for name, doc in srcs]
    return cases, healthy


def _validate(python: Path, paths: list[Path]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for i in range(0, len(paths), 200):
        chunk = paths[i:i + 200]
        proc = subprocess.run([str(python), str(ROOT / "bench" / "peer" / "agentscope2_validate.py"), *map(str, chunk)],
                              capture_output=True, text=True)
        for f in json.loads(proc.stdout)["files"]:
            out[f["path"]] = f
    return out


def run(seed: int, per_class: int) -> tuple[dict, dict]:
    from qwenmem.core.repair.gen2.diagnose import validation_problems
    from qwenmem.core.repair.run import REPAIR, run_repair
    from qwenmem.core.sessions import iter_session_refs
    from qwenmem.core.workspace import discover_workspace

    python = ensure_venv()
    cases, healthy = generate(seed, per_class)
    tmp = Path(tempfile.mkdtemp(prefix="repair2-bench-"))
    ws_path = tmp / "ws"
    sessions = ws_path / "sessions"
    (sessions / "damaged").mkdir(parents=True)
    (sessions / "healthy").mkdir()
    (tmp / "before").mkdir()
    (sessions / ".synced.json").write_text("{}")
    old = time.time() - 3600
    paths = {}
    for i, case in enumerate(cases):
        p = sessions / "damaged" / f"{case.cls}_{i:04d}.json"
        p.write_bytes(case.data)
        (tmp / "before" / p.name).write_bytes(case.data)
        os.utime(p, (old, old))
        paths[i] = p
    hpaths = []
    for i, (_name, data) in enumerate(healthy):
        p = sessions / "healthy" / f"h{i:02d}.json"
        p.write_bytes(data)
        os.utime(p, (old, old))
        hpaths.append((p, data))
    before_verdict = _validate(python, sorted((tmp / "before").iterdir()))
    ws = discover_workspace(ws_path)
    t0 = time.monotonic()
    result = run_repair(ws, list(iter_session_refs(ws)), REPAIR)
    elapsed = time.monotonic() - t0
    reports = {Path(ws_path / r.path).resolve(): r for r in result.files}
    after_verdict = _validate(python, [p for p in paths.values()] + [p for p, _ in hpaths])
    stats: dict[str, dict] = {}
    agree = {"agree": 0, "disagree": 0, "examples": []}
    summary_missing: list[dict] = []
    for i, case in enumerate(cases):
        s = stats.setdefault(case.cls, dict(files=0, recoverable=0, recovered=0, exact_ok=0, exact_total=0,
                                            preserved=0, changed=0, invented=0, valid=0, moved=0, moved_ok=0,
                                            unrecoverable=0))
        s["files"] += 1
        p = paths[i]
        rep = reports[p.resolve()]
        now = p.read_bytes()
        s["recoverable"] += len(case.recoverable)
        if rep.status == "repaired":
            s["changed"] += 1
            kept = ws_path / rep.quarantined if rep.quarantined else None
            s["preserved"] += bool(kept and kept.read_bytes() == case.data)
        else:
            s["preserved"] += now == case.data
            s["unrecoverable"] += rep.status in ("unrecoverable", "error")
        try:
            result_doc = json.loads(now.decode("utf-8"))
            result_ctx = result_doc["agent"]["state"]["context"]
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            result_ctx = []
        by_id = {m.get("id"): m for m in result_ctx if isinstance(m, dict)}
        damaged_text = case.data.decode("utf-8", "replace")
        # an id that is not in the damaged bytes (a numeric id stored as a string is the same id)
        s["invented"] += sum(1 for mid in by_id if isinstance(mid, str) and json.dumps(mid) not in damaged_text
                             and not (mid.replace(".", "", 1).isdigit() and mid in damaged_text))
        found = case.recoverable & set(by_id)
        if case.recoverable - found and len(summary_missing) < 20:
            summary_missing.append({"file": p.name, "missing": sorted(case.recoverable - found)[:3]})
        s["recovered"] += len(found)
        if case.exact:
            source = dict(sources())[case.source]
            orig = {m["id"]: m for m in ctx(source)}
            s["exact_total"] += len(found)
            s["exact_ok"] += sum(1 for mid in found if mid in orig and by_id[mid] == orig[mid])
        for tid in case.moved:
            s["moved"] += 1
            ok = any(m.get("role") == "assistant" and any(
                isinstance(b, dict) and b.get("type") == "tool_result" and b.get("id") == tid for b in m["content"])
                and any(isinstance(b, dict) and b.get("type") == "tool_call" and b.get("id") == tid
                        for b in m["content"]) for m in result_ctx)
            s["moved_ok"] += ok
            if not ok and len(summary_missing) < 20:
                summary_missing.append({"file": p.name, "not_moved": tid})
        verdict = after_verdict.get(str(p))
        s["valid"] += bool(verdict and verdict["ok"] and verdict["kind"] == "2.x")
        try:
            strict = json.loads(case.data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            strict = None
        if isinstance(strict, dict) and isinstance(strict.get("agent"), dict) and "state" in strict["agent"]:
            ours_ok = not validation_problems(case.data)
            theirs = before_verdict[str(tmp / "before" / p.name)]
            if ours_ok == theirs["ok"]:
                agree["agree"] += 1
            else:
                agree["disagree"] += 1
                if len(agree["examples"]) < 5:
                    agree["examples"].append({"file": p.name, "agentscope": theirs["errors"][:2],
                                              "qwenmem_ok": ours_ok})
    healthy_same = sum(1 for p, data in hpaths if p.read_bytes() == data)
    healthy_valid = sum(1 for p, _ in hpaths if after_verdict[str(p)]["ok"])
    summary = {"seed": seed, "files": len(cases), "healthy": len(hpaths), "healthy_same": healthy_same,
               "healthy_valid": healthy_valid, "seconds": round(elapsed, 2), "agreement": agree,
               "sources": [n for n, _ in sources()], "workdir": str(tmp),
               "missing": summary_missing}
    return stats, summary


def _pct(a: int, b: int) -> str:
    return f"{a}/{b} ({100.0 * a / b:.1f}%)" if b else "-"


def markdown(stats: dict, summary: dict, per_class: int) -> str:
    lines = [f"Command: `python bench/quality/repair2_bench.py --seed {summary['seed']} --per-class {per_class}`. "
             f"{summary['files']} damaged 2.x files generated from {len(summary['sources'])} sources "
             f"({', '.join(summary['sources'])}), repaired in one workspace next to {summary['healthy']} healthy "
             f"copies by `run_repair(mode=repair)` in {summary['seconds']} s. *Recoverable* = messages complete in the "
             "damaged bytes; *recovered* = the same id in the repaired file; *exact* = equal to the original "
             "message (byte-damage classes that do not alter content); *AgentState* = repaired file passes "
             "`AgentState.model_validate` of agentscope 2.0.10; *invented* = message ids in the result that are "
             "not in the damaged file.", "",
             "| class | files | recovered | exact | tool_results moved to their call | originals preserved | "
             "AgentState valid | invented | unrecoverable |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    tot = dict(recoverable=0, recovered=0, preserved=0, files=0, valid=0, invented=0)
    for cls, s in stats.items():
        lines.append(f"| {cls} | {s['files']} | {_pct(s['recovered'], s['recoverable'])} | "
                     f"{_pct(s['exact_ok'], s['exact_total'])} | {_pct(s['moved_ok'], s['moved'])} | "
                     f"{_pct(s['preserved'], s['files'])} | {_pct(s['valid'], s['files'])} | {s['invented']} | "
                     f"{s['unrecoverable']} |")
        for k in tot:
            tot[k] += s[k]
    lines.append(f"| **all** | {tot['files']} | {_pct(tot['recovered'], tot['recoverable'])} | | | "
                 f"{_pct(tot['preserved'], tot['files'])} | {_pct(tot['valid'], tot['files'])} | {tot['invented']} | |")
    a = summary["agreement"]
    lines += ["", f"Healthy files byte-identical after the run: {_pct(summary['healthy_same'], summary['healthy'])}; "
              f"healthy files valid for AgentState: {_pct(summary['healthy_valid'], summary['healthy'])}.",
              f"qwenmem's rules (repair/gen2/rules.py) vs AgentState on the damaged files that parse strictly: "
              f"{a['agree']} agree, {a['disagree']} disagree" + (f" (e.g. {json.dumps(a['examples'][:2])})"
                                                                 if a["disagree"] else "") + "."]
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--per-class", type=int, default=12)
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    stats, summary = run(args.seed, args.per_class)
    md = markdown(stats, summary, args.per_class)
    print(md)
    for miss in summary["missing"]:
        print("not recovered:", json.dumps(miss), file=sys.stderr)
    if not args.no_record:
        sys.path.insert(0, str(ROOT))
        from bench._results import update_section

        update_section("repair2", "## Repair of QwenPaw 2.x session files\n" + md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
