"""Compaction on every real session in the corpus and on τ-bench airline transcripts turned into large sessions.

Writes the "compaction" section of bench/RESULTS.md. Run from the repository root:
    /work/main/.venv/bin/python bench/quality/compact_corpus.py [--agentscope-python /path/to/python-with-agentscope]
Offline: the extractive summarizer does tier 2 and tier 3 (no LLM is reachable here). For every compacted session
it verifies that the file still loads, that the kept messages are tool-aligned, that every removed message is in
dialog/, and that a second run changes nothing.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench._results import update_section  # noqa: E402

from qwenmem.core.compaction import dialog as dialog_mod  # noqa: E402
from qwenmem.core.compaction.gen1.check import check_session  # noqa: E402
from qwenmem.core.compaction.options import CompactOptions  # noqa: E402
from qwenmem.core.compaction.run import compact_sessions  # noqa: E402
from qwenmem.core.compaction.gen1.threshold import compute_budget, plan_compaction, tool_ids_aligned  # noqa: E402
from qwenmem.core.sessions import CORRUPT, iter_session_refs, load_session  # noqa: E402
from qwenmem.core.settings import load_settings  # noqa: E402
from qwenmem.core.tokens import get_counter, message_tokens  # noqa: E402
from qwenmem.core.workspace import discover_workspace  # noqa: E402

SHARED = REPO.parent / "shared"
REAL = SHARED / "corpus" / "real"
TAU = SHARED / "corpus" / "benchmarks" / "tau-bench" / "gpt-4o-airline.json"
PAIR = "sessions/ou_975690183c044ff01e03b1d66fb98df9_6fb98df9.json"


def tau_sessions(runs_per_session: int = 67) -> list[tuple[str, dict]]:
    """Each session: one airline agent serving `runs_per_session` customers in a row (OpenAI transcript → QwenPaw)."""
    runs = json.loads(TAU.read_text(encoding="utf-8"))
    out = []
    for s in range(0, len(runs), runs_per_session):
        content, sys_prompt, n = [], "", 0
        clock = datetime(2024, 5, 15, 9, 0) + timedelta(days=s // runs_per_session)
        for run in runs[s:s + runs_per_session]:
            clock += timedelta(minutes=37)
            for m in run["traj"]:
                n += 1
                clock += timedelta(seconds=9)
                stamp = clock.strftime("%Y-%m-%d %H:%M:%S.") + f"{clock.microsecond // 1000:03d}"
                base = {"id": f"tau{s:03d}x{n:06d}", "metadata": {}, "timestamp": stamp}
                if m["role"] == "system":
                    sys_prompt = m["content"]
                    continue
                if m["role"] == "user":
                    msg = {"name": "user", "role": "user", "content": [{"type": "text", "text": m["content"]}]}
                elif m["role"] == "assistant":
                    blocks = [{"type": "text", "text": m["content"]}] if m.get("content") else []
                    for tc in m.get("tool_calls") or []:
                        args = tc["function"]["arguments"]
                        blocks.append({"type": "tool_use", "id": tc["id"], "name": tc["function"]["name"],
                                       "input": json.loads(args), "raw_input": args})
                    msg = {"name": "Friday", "role": "assistant", "content": blocks}
                else:
                    msg = {"name": "system", "role": "system", "content": [{
                        "type": "tool_result", "id": m["tool_call_id"], "name": m["name"],
                        "output": [{"type": "text", "text": m["content"]}]}]}
                content.append([{"id": base["id"], **msg, "metadata": {}, "timestamp": stamp}, []])
        doc = {"agent": {"memory": {"content": content, "_compressed_summary": ""},
                         "toolkit": {"active_groups": []}, "name": "Friday", "_sys_prompt": sys_prompt}}
        out.append((f"tau_airline_{s // runs_per_session + 1}", doc))
    return out


def verify(ws, ref, report, settings, was_aligned: bool) -> list[str]:
    problems = []
    loaded = load_session(ref)
    if loaded.session is None or loaded.health == CORRUPT:
        problems.append("does not load")
        return problems
    msgs = [e.msg for e in loaded.session.entries() if not e.compressed]
    if not tool_ids_aligned(msgs) and was_aligned:
        problems.append("kept messages not tool-aligned")
    backup = ws.path / report.backup if report.backup else None
    if backup and report.removed_ids:
        old = json.loads(backup.read_text(encoding="utf-8"))
        removed = [it[0] if isinstance(it, list) else it for it in old["agent"]["memory"]["content"]]
        removed = [m for m in removed if isinstance(m, dict) and m.get("id") in set(report.removed_ids)]
        missing = dialog_mod.all_in_dialog(ws.path / settings.dialog_path, removed)
        if missing:
            problems.append(f"{len(missing)} removed message(s) missing from dialog/")
    return problems


def run_workspace(ws_dir: Path, opts: CompactOptions) -> list[dict]:
    ws = discover_workspace(ws_dir)
    settings = load_settings(ws)
    rows = []
    for ref in iter_session_refs(ws):
        loaded = load_session(ref)
        if loaded.session is None or loaded.health == CORRUPT:
            rows.append({"session": ref.path.name, "status": "skipped (damaged: repair first)"})
            continue
        check = check_session(ws, ref, settings, opts)
        was_aligned = tool_ids_aligned([e.msg for e in loaded.session.entries() if not e.compressed])
        start = time.perf_counter()
        [report], _ = compact_sessions(ws, [ref], settings, opts)
        elapsed = time.perf_counter() - start
        problems = verify(ws, ref, report, settings, was_aligned)
        if not was_aligned:
            problems.append("ok (already had an unanswered tool_use before compaction)")
        dialog_before = {p: p.read_bytes() for p in (ws.path / "dialog").glob("*.jsonl")}
        [again], _ = compact_sessions(ws, [ref], settings, opts)
        if again.status != "unchanged" or dialog_before != {p: p.read_bytes() for p in (ws.path / "dialog").glob("*.jsonl")}:
            problems.append(f"second run was not a no-op ({again.status})")
        rows.append({
            "session": ref.path.name[:38], "msgs": check.message_count, "S": check.budget.fixed_tokens,
            "L": check.budget.left, "before": report.context_tokens_before,
            "after_t1": report.check.tokens.system + report.check.tokens.summary + report.tier1.tokens_after,
            "outputs_cut": getattr(report.tier1.detail, "outputs_cut", 0) + getattr(report.tier1.detail, "outputs_recut", 0),
            "removed": len(report.removed_ids), "kept": len(report.kept_ids) if report.tier2.ran else check.message_count,
            "after": report.context_tokens_after, "note": getattr(report.tier3.detail, "chars", 0) if report.tier3.ran else 0,
            "status": report.status, "seconds": elapsed, "verified": "; ".join(problems) or "ok"})
    return rows


def table(rows: list[dict]) -> str:
    head = ("| session | msgs | S | L | context before | after tier 1 | outputs cut | removed | kept | context after "
            "| tier-3 note chars | status | time | checks |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|")
    lines = [head]
    for r in rows:
        if "msgs" not in r:
            lines.append(f"| {r['session']} | | | | | | | | | | | {r['status']} | | |")
            continue
        lines.append(f"| {r['session']} | {r['msgs']} | {r['S']:,} | {r['L']:,} | {r['before']:,} | {r['after_t1']:,} | "
                     f"{r['outputs_cut']} | {r['removed']} | {r['kept']} | {r['after']:,} | {r['note']:,} | "
                     f"{r['status']} | {r['seconds']:.2f} s | {r['verified']} |")
    return "\n".join(lines)


def pair_comparison() -> str:
    counter = get_counter("estimate", 4)
    before = json.loads((REAL / "zzjmay123__aiWorkflow__c70a43d" / PAIR).read_text(encoding="utf-8"))
    after = json.loads((REAL / "zzjmay123__aiWorkflow__f1d82e0" / PAIR).read_text(encoding="utf-8"))
    b_msgs = [it[0] for it in before["agent"]["memory"]["content"]]
    a_msgs = [it[0] for it in after["agent"]["memory"]["content"]]
    tokens = [message_tokens(m, counter) for m in b_msgs]
    lines = ["| generation, M | S | L = T − S | message tokens | room | compacts? | would keep |", "|---|---:|---:|---:|---:|---|---:|"]
    for gen, ratio in (("current", 0.8), ("legacy", 0.75)):
        for m in (131072, 65536):
            b = compute_budget(gen, m, ratio, 0.1, before["agent"]["_sys_prompt"],
                               before["agent"]["memory"]["_compressed_summary"], counter)
            p = plan_compaction(b_msgs, tokens, b)
            lines.append(f"| {gen}, {m:,} | {b.fixed_tokens:,} | {b.left:,} | {p.total_tokens:,} | {p.room:,} | "
                         f"{'yes' if p.would_compact else 'no'} | {len(p.keep)} msgs / {p.keep_tokens:,} tok |")
    forced = plan_compaction(b_msgs, tokens, compute_budget("current", 131072, 0.8, 0.1, before["agent"]["_sys_prompt"],
                                                            before["agent"]["memory"]["_compressed_summary"], counter),
                             force=True)
    lines.append(f"| current, 131,072, forced (`--force`) | | | | | yes | {len(forced.keep)} msgs / "
                 f"{forced.keep_tokens:,} tok |")
    shared = len({m['id'] for m in a_msgs} & {m['id'] for m in b_msgs})
    a_tokens = sum(message_tokens(m, counter) for m in a_msgs)
    facts = (f"Before (c70a43d): {len(b_msgs)} messages, last at {b_msgs[-1]['timestamp']}. After (f1d82e0): "
             f"{len(a_msgs)} messages from {a_msgs[0]['timestamp']} to {a_msgs[-1]['timestamp']}, {a_tokens:,} message "
             f"tokens, tool-aligned: {tool_ids_aligned(a_msgs)}, first message role {a_msgs[0]['role']}; "
             f"message ids shared with before: {shared}. Summary {len(before['agent']['memory']['_compressed_summary']):,}"
             f" → {len(after['agent']['memory']['_compressed_summary']):,} characters.")
    return "\n".join(lines) + "\n\n" + facts


def agentscope_check(python: str, root: Path) -> str:
    import subprocess

    proc = subprocess.run([python, str(REPO / "bench" / "peer" / "agentscope_load_check.py"), str(root)], capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0:
        return f"agentscope check could not run: {proc.stderr.strip().splitlines()[-1:]}"
    res = json.loads(proc.stdout)
    failures = "; ".join(res["failures"]) or "none"
    return (f"Loaded back with the real agentscope {res['agentscope']} (`InMemoryMemory.load_state_dict`, "
            f"`Toolkit.load_state_dict`, `Msg.from_dict` on every message and every dialog line): "
            f"{res['sessions_loaded']} session files and {res['dialog_lines_loaded']:,} dialog lines loaded; "
            f"failures: {failures}. (Expected: only the corpus's already-truncated `main_main.json.backup_*`, copied "
            "once per run, which qwenmem refuses to compact; it is not a file qwenmem wrote.)")


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agentscope-python", help="an interpreter with agentscope installed, to load the results")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="qwenmem-compact-bench-"))
    try:
        sections = []
        # 1. every real session, QwenPaw defaults (M = 131072), then a 32K-context model
        for label, extra in (("defaults (M = 131,072)", {}), ("M = 32,768 (a small local model)", {"max_input_length": 32768})):
            rows = []
            for src in sorted(p for p in REAL.rglob("sessions/*") if p.is_file()):
                ws_dir = work / f"real-{len(rows)}-{label[:3]}"
                (ws_dir / "sessions").mkdir(parents=True)
                shutil.copy2(src, ws_dir / "sessions" / (src.name if src.name.endswith(".json") else src.name + ".json"))
                rows += run_workspace(ws_dir, CompactOptions(summarizer="extractive", **extra))
            sections.append(f"### Real sessions, {label}\n\n" + table(rows))
        # 2. τ-bench airline transcripts as five large sessions
        ws_dir = work / "tau"
        (ws_dir / "sessions" / "console").mkdir(parents=True)
        for name, doc in tau_sessions():
            (ws_dir / "sessions" / "console" / f"default_{name}.json").write_text(json.dumps(doc, ensure_ascii=False),
                                                                               encoding="utf-8")
        rows = run_workspace(ws_dir, CompactOptions(summarizer="extractive"))
        sections.append("### τ-bench airline (gpt-4o), 67 customer conversations per session, defaults\n\n" + table(rows))
        sections.append("### The real before/after pair (zzjmay123/aiWorkflow c70a43d → f1d82e0)\n\n" + pair_comparison())
        if args.agentscope_python:
            sections.append("### Loading the results in agentscope\n\n" + agentscope_check(args.agentscope_python, work))
        intro = ("Command: `/work/main/.venv/bin/python bench/quality/compact_corpus.py --agentscope-python "
                 "/tmp/asvenv/bin/python` (extractive summarizer, estimate "
                 "tokenizer). Context tokens = system prompt + summary + in-context messages. `checks`: file loads, "
                 "kept messages tool-aligned, every removed message found in dialog/, second run is a no-op. "
                 "/tmp/asvenv is a throwaway venv, not a qwenmem dependency: `pip install agentscope==1.0.20 "
                 "mcp==1.20.0 'pydantic<2.12' greenlet tqdm` (QwenPaw's agentscope pin, plus what it needs to import).")
        markdown = intro + "\n\n" + "\n\n".join(sections)
        update_section("compaction", markdown)
        print(markdown)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
