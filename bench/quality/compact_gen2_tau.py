"""QwenPaw 2.x compaction on τ-bench airline transcripts turned into 2.x sessions (AgentScope 2.0 Msg shape).

Writes the "compaction-2x" section of bench/RESULTS.md. Run from the repository root:
    /work/main/.venv/bin/python bench/quality/compact_gen2_tau.py [--agentscope-python /tmp/as2-venv/bin/python] [--make-venv]
`--make-venv` first creates the AgentScope venv (python -m venv + pip install agentscope==2.0.10) at the path given
by --agentscope-python's parent's parent. Offline: the extractive summarizer. Per session and context size C:
  * native: tokens before, the real `compact` (tier 2: split, summary, dialog/), tokens after, and checks (file
    loads and every compressed message is in dialog/ (compact verifies both), a rerun changes nothing, AgentScope's AgentState/Msg validation);
  * scroll: the real `compact` (eviction into the index + placeholder; history.db rows written first by the bench
    as QwenPaw's write-through would have), tokens after (placeholder included), every evicted message found in
    history.db with SQL, AgentScope validation.
Tier 1 is 2.x tool-result pruning, run by the same `compact`.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "fixtures" / "qwenpaw2"))

import builder  # noqa: E402  (tests/fixtures/qwenpaw2/builder.py: agent.json, state, scroll state, history.db rows)
from bench._results import update_section  # noqa: E402

from qwenmem.core.compaction.options import CompactOptions  # noqa: E402
from qwenmem.core.compaction.run import compact_sessions  # noqa: E402
from qwenmem.core.compaction.gen2.check import Gen2CheckOptions, check_ref  # noqa: E402
from qwenmem.core.sessions import iter_session_refs  # noqa: E402
from qwenmem.core.settings import load_settings  # noqa: E402
from qwenmem.core.settings.gen2 import load_gen2_settings  # noqa: E402
from qwenmem.core.workspace import discover_workspace  # noqa: E402

SHARED = REPO.parent / "shared"
TAU = SHARED / "corpus" / "benchmarks" / "tau-bench" / "gpt-4o-airline.json"


def _stamp(clock: datetime) -> str:
    return clock.strftime("%Y-%m-%dT%H:%M:%S.%f")


def _block(kind: str, clock: datetime, **fields) -> dict:
    return {"type": kind, **fields, "id": builder.new_id(), "created_at": _stamp(clock), "finished_at": None}


def _msg(role: str, name: str, content: list, clock: datetime, metadata: dict | None = None) -> dict:
    return {"name": name, "content": content, "role": role, "id": builder.new_id(), "metadata": metadata or {},
            "created_at": _stamp(clock), "usage": None, "finished_at": None, "finished_reason": None,
            "structured_output": None, "error": None}


def tau_sessions(runs_per_session: int = 67) -> list[tuple[str, str, list[dict]]]:
    """(name, system prompt, context): one airline agent serving customers in a row. AgentScope 2.0 accumulates a
    reply into one assistant message, so every assistant turn up to the next user message (texts, tool calls and
    their results) becomes one message."""
    runs = json.loads(TAU.read_text(encoding="utf-8"))
    out = []
    for s in range(0, len(runs), runs_per_session):
        context: list[dict] = []
        sys_prompt = ""
        clock = datetime(2026, 11, 20, 9, 0) + timedelta(days=s // runs_per_session)
        reply: dict | None = None
        for run in runs[s:s + runs_per_session]:
            clock += timedelta(minutes=37)
            for m in run["traj"]:
                clock += timedelta(seconds=9)
                if m["role"] == "system":
                    sys_prompt = m["content"]
                elif m["role"] == "user":
                    reply = None
                    context.append(_msg("user", "user", [_block("text", clock, text=m["content"])], clock,
                                        {"qwenpaw_tag": "external_user_query"}))
                else:
                    if reply is None:
                        reply = _msg("assistant", "Friday", [], clock)
                        context.append(reply)
                    if m["role"] == "assistant":
                        if m.get("content"):
                            reply["content"].append(_block("text", clock, text=m["content"]))
                        for tc in m.get("tool_calls") or []:
                            reply["content"].append({"type": "tool_call", "id": tc["id"], "name": tc["function"]["name"],
                                                     "input": tc["function"]["arguments"], "state": "finished",
                                                     "suggested_rules": [], "created_at": _stamp(clock),
                                                     "finished_at": None})
                    else:  # tool
                        reply["content"].append({"type": "tool_result", "id": m["tool_call_id"], "name": m["name"],
                                                 "output": [_block("text", clock, text=m["content"])],
                                                 "state": "success", "metadata": {}, "created_at": _stamp(clock),
                                                 "finished_at": None})
        out.append((f"tau_airline_{s // runs_per_session + 1}", sys_prompt, context))
    return out


def write_workspace(root: Path, strategy: str, sessions: list) -> Path:
    ws = root / strategy
    (ws / "sessions" / "console").mkdir(parents=True)
    builder.agent_json(ws, strategy=strategy)
    conn = builder.create_history_db(ws / "history.db") if strategy == "scroll" else None
    for name, _, context in sessions:
        sid = f"console:{name}"
        scroll = builder.scroll_state(sid, context, {}, None, []) if conn else None
        doc = builder.document(builder.state(sid, context), scroll)
        (ws / "sessions" / "console" / f"{name}.json").write_text(builder.dumps(doc), encoding="utf-8")
        if conn:
            builder.insert_rows(conn, builder.rows_for(sid, context))
    if conn:
        conn.commit()
        conn.close()
    return ws


def evicted_rows_missing(db: Path, session_id: str, ids: list[str]) -> list[str]:
    """SQL, independent of qwenmem's reader: every evicted message must have its row in history.db."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        have = {k for (k,) in conn.execute("SELECT dedup_key FROM conversation_history WHERE session_id = ?",
                                            (session_id,))}
    missing = [i for i in ids if i not in have]
    return [f"{len(missing)} evicted message(s) not in history.db"] if missing else []


def run(c: int, sessions: list, work: Path, as2: Path | None) -> tuple[list[dict], list[str]]:
    rows, problems = [], []
    sys_tokens = {name: int(len(p.encode()) / 4 + 0.5) for name, p, _ in sessions}
    for strategy in ("native", "scroll"):
        ws_dir = write_workspace(work / str(c), strategy, sessions)
        ws = discover_workspace(ws_dir)
        settings, g2 = load_settings(ws), load_gen2_settings(ws)
        for ref in iter_session_refs(ws):
            name = ref.path.stem
            opts2 = Gen2CheckOptions(context_size=c, system_tokens=sys_tokens[name], tools_tokens=0)
            check = check_ref(ws, ref, settings, opts2, g2)
            row = {"session": name, "strategy": strategy, "C": c, "msgs": check.message_count,
                   "before": check.terms.total, "trigger": check.trigger, "reserve": check.reserve,
                   "compacts": check.would_compact, "removed": len(check.removed_ids),
                   "kept": len(check.kept_ids), "after": check.keep_tokens, "time": "", "checks": "decision only"}
            if True:  # both strategies run the real compact
                opts = CompactOptions(max_input_length=c, summarizer="extractive", gen2_check=opts2)
                start = time.perf_counter()
                [report], _ = compact_sessions(ws, [ref], settings, opts)
                row["time"] = f"{time.perf_counter() - start:.2f} s"
                row["after"] = report.context_tokens_after
                if report.status in ("compacted", "dry-run"):
                    row["removed"], row["kept"] = len(report.removed_ids), len(report.kept_ids)
                row["t1"] = report.tier1.tokens_after if report.tier1.ran else row["before"]
                row["cut"] = getattr(report.tier1.detail, "outputs_cut", 0) + getattr(report.tier1.detail, "outputs_recut", 0)
                row["status"] = report.status
                issues = list(report.warnings)
                if report.status == "compacted":
                    old = json.loads((ws.path / report.backup).read_text(encoding="utf-8"))["agent"]["state"]
                    old_ids = {m["id"] for m in old["context"]}
                    if not set(report.removed_ids) <= old_ids or not set(report.kept_ids) - old_ids <= {
                            report.kept_ids[0] if strategy == "scroll" else None}:
                        issues.append("kept/removed ids are not the file's")
                    [again], _ = compact_sessions(ws, [ref], settings, opts)
                    if again.status != "unchanged":
                        issues.append(f"rerun: {again.status}")
                    if strategy == "native" and not sorted((ws.path / "dialog").glob("*.jsonl")):
                        issues.append("no dialog file")
                    if strategy == "scroll":
                        issues += evicted_rows_missing(ws.path / "history.db", f"console:{name}", report.removed_ids)
                row["checks"] = "; ".join(issues) or "ok"
                problems += [f"{name} C={c}: {i}" for i in issues]
            rows.append(row)
        if as2:
            targets = [str(ws_dir / "sessions")] + ([str(ws_dir / "dialog")] if (ws_dir / "dialog").is_dir() else [])
            proc = subprocess.run([str(as2), str(REPO / "bench" / "peer" / "agentscope2_check.py"), *targets],
                                  capture_output=True, text=True)
            verdict = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
            for r in rows:
                if r["strategy"] == strategy and r["C"] == c:
                    r["checks"] += f"; AgentScope: {'valid' if proc.returncode == 0 else 'INVALID'}"
            if proc.returncode != 0:
                problems.append(f"C={c}: AgentScope validation failed: {proc.stdout.strip()[:500]} {verdict}")
    return rows, problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agentscope-python", type=Path, default=Path(os.environ.get("QWENMEM_AS2_VENV") or "/tmp/as2-venv") / "bin" / "python")
    ap.add_argument("--make-venv", action="store_true")
    ap.add_argument("--no-record", action="store_true")
    args = ap.parse_args()
    as2: Path | None = args.agentscope_python
    if args.make_venv and not as2.is_file():
        subprocess.run([sys.executable, str(REPO / "bench" / "peer" / "agentscope2_check.py"), "--make-venv",
                        str(as2.parent.parent)], check=True)
    if not as2.is_file():
        print(f"no AgentScope interpreter at {as2}: validation skipped", file=sys.stderr)
        as2 = None
    sessions = tau_sessions()
    rows, problems = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for c in (131_072, 32_768):
            r, p = run(c, sessions, Path(tmp), as2)
            rows += r
            problems += p
    head = ("| session | strategy | C | msgs | tokens before | after tier 1 (outputs cut) | trigger | reserve | "
            "compacts? | removed | kept | tokens after tier 2 | time | checks |\n"
            "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|\n")
    body = "".join(f"| {r['session']} | {r['strategy']} | {r['C']:,} | {r['msgs']} | {r['before']:,} | {r['t1']:,} ({r['cut']}) | "
                   f"{r['trigger']:,.0f} | {r['reserve']:,.0f} | {'yes' if r['compacts'] else 'no'} | {r['removed']} | "
                   f"{r['kept']} | {r['after']:,} | {r['time']} | {r['checks']} |\n" for r in rows)
    md = ("## Compaction, QwenPaw 2.x (τ-bench airline as 2.x sessions)\n\n"
          "Command: `nice /work/main/.venv/bin/python bench/quality/compact_gen2_tau.py` (AgentScope 2.0.10 validation through "
          "`/tmp/as2-venv/bin/python bench/peer/agentscope2_check.py`). 67 customer conversations per session, one "
          "assistant message per reply (AgentScope 2.0 accumulation), the airline system prompt counted exactly "
          "(`--system-tokens`), tool schemas 0. Tokens are AgentScope's count. native: the real `compact` "
          "(extractive summary, dialog/ offload), tokens after = system + rendered summary + kept context. scroll: "
          "the real `compact` (history.db rows inserted first, as QwenPaw's write-through does; eviction into a "
          "Tier-0 block + placeholder), tokens after = system + placeholder + live tail; every evicted message "
          "checked in history.db with SQL. Tier 1 is 2.x tool-result pruning (agent.json defaults: 3000 bytes for "
          "old results under native, 50000 under scroll); the decision is taken after it. removed/kept are the real run's (scroll: kept includes the new placeholder).\n\n" + head + body)
    if problems:
        md += "\nProblems:\n" + "".join(f"- {p}\n" for p in problems)
    print(md)
    if not args.no_record:
        update_section("compaction-2x", md)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
