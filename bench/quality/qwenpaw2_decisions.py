"""Does `compact --check` (default flags: no --system-tokens, no --tools-tokens) decide what QwenPaw 2.2.2's own
`compress_context()` does? Both strategies, C from 4,096 to 131,072, sessions of a real agent's tool set.

    /work/main/.venv/bin/python bench/quality/qwenpaw2_decisions.py [--qwenpaw-python /tmp/qp2-full/bin/python]

The QwenPaw side runs in a venv with the qwenpaw 2.2.2.post1 wheel and its dependencies (see
bench/peer/qwenpaw2_fixed_parts.py for how to make it). Per strategy, a copy of ../shared/corpus/generated/qwenpaw-2.2.2
gets the strategy through QwenPaw's `save_agent_config`; τ-bench airline conversations (bench/quality/compact2_tau.py),
cut to lengths around each C's trigger, become session files (named by QwenPaw's `session_filename`, registered
through its `ChatManager`), beside the corpus's own alice (scroll) / bob (native) sessions. Then:
  * qwenmem: `compact --check --json --max-input-length C <file>` (the tool set and system prompt are qwenmem's own
    rebuild of what QwenPaw sends);
  * QwenPaw: the workspace started with its bootstrap, the request's agent built by `AgentBuilder.build` with the
    file loaded by its `SessionLoadHook`, `agent.model.context_size = C`, then the real `agent.compress_context()`
    (the summary model call fails at once; AgentScope's truncation fallback applies the same split).
A case agrees when both say compact / no-compact alike and keep the same message ids (scroll: the transcript's,
the placeholders aside) and, under scroll, fold the same number of tool results first (compress step 3). Writes the "qwenpaw2-decisions" section of bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
CONTEXT_SIZES = (4096, 9000, 32768, 65536, 131072)
TARGETS = (0.5, 0.75, 0.79, 0.81, 0.9, 1.2)  # session totals around the trigger (0.8·C), as fractions of C
CORPUS_SESSIONS = {"scroll": "console/alice_console--alice", "native": "console/bob_console--bob"}


# ------------------------------------------------------------------------------------------- the QwenPaw child

async def _qwenpaw_prepare(cases: list[dict]) -> list[str]:
    from qwenpaw.app.chats.manager import ChatManager
    from qwenpaw.app.chats.repo.json_repo import JsonChatRepository
    from qwenpaw.app.chats.session import session_filename

    wsdir = Path(os.environ["QWENPAW_WORKING_DIR"]) / "workspaces" / "default"
    chats = ChatManager(repo=JsonChatRepository(wsdir / "chats.json"))
    rels = []
    for case in cases:
        sid, uid = case["session_id"], case["user_id"]
        path = wsdir / "sessions" / "console" / session_filename(sid, uid)
        path.write_text(json.dumps(case["doc"], ensure_ascii=False), encoding="utf-8")
        await chats.get_or_create_chat(sid, uid, "console", name=case["name"])
        rels.append(f"console/{path.stem}")
    return rels


async def _qwenpaw_decide(strategy: str, cases: list[dict]) -> list[dict]:
    from qwenpaw.app.workspace.bootstrap_factory import WorkspaceBootstrapFactory
    from qwenpaw.app.workspace.workspace import Workspace
    from qwenpaw.hooks.session.session_hook import SessionLoadHook
    from qwenpaw.runtime.builder import AgentBuilder
    from qwenpaw.runtime.hooks import HookContext
    from qwenpaw.schemas import AgentRequest

    wsdir = Path(os.environ["QWENPAW_WORKING_DIR"]) / "workspaces" / "default"
    workspace = Workspace(agent_id="default", workspace_dir=str(wsdir))
    workspace.bootstrap_plugins(**WorkspaceBootstrapFactory.build_bootstrap_kwargs(None))
    await workspace.start()
    out = []
    for case in cases:
        sid, uid = case["session_id"], case["user_id"]
        req = AgentRequest(input=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}], session_id=sid,
                           user_id=uid, channel="console")
        ctx = HookContext(request=req, session_id=sid, agent_id="default", root_session_id=sid,
                          root_agent_id="default", workspace_dir=wsdir, workspace=workspace, app_services=None)
        await SessionLoadHook().run(ctx)
        if not ctx.session_state:
            raise SystemExit(f"{case['name']}: QwenPaw's SessionLoadHook did not load the file")
        agent = await AgentBuilder().build(ctx)
        agent.model.context_size = case["C"]

        async def no_summary(*args, **kwargs):
            raise RuntimeError("bench: no summary model")

        agent.model.generate_structured_output = no_summary
        agent.context_config.compression_fallback_to_truncation = True
        before = [m.id for m in agent.state.context]
        summary_before = agent.state.summary
        kwargs = await agent._prepare_model_input()
        tokens = await agent.model.count_tokens(**kwargs)
        try:
            await agent.compress_context()
            error = ""
        except Exception as exc:  # noqa: BLE001 - what QwenPaw raises is part of the answer
            error = f"{type(exc).__name__}: {exc}"
        after = [m.id for m in agent.state.context]
        manager = getattr(agent, "_context_manager", None)
        synthetic = set(getattr(manager, "synthetic_ids", None) or getattr(manager, "_synthetic_ids", None) or ())
        # scroll's step 3 (ScrollContextManager.compress): completed-turn tool results folded before the split
        pre_folded = (getattr(manager, "last_compress", None) or {}).get("pre_folded", 0)
        compacted = after != before or agent.state.summary != summary_before
        out.append({"name": case["name"], "C": case["C"], "tokens": tokens, "compacted": compacted,
                    "kept": [i for i in after if i not in synthetic], "error": error, "pre_folded": pre_folded,
                    "strategy": "scroll" if getattr(agent, "_context_manager", None) is not None else "native"})
    try:
        await workspace.stop()
    except Exception as exc:  # ReMe's close times out against the dead stub port
        print(f"note: {exc}", file=sys.stderr)
    return out


def qwenpaw_child(phase: str, strategy: str, cases_file: str) -> None:
    cases = json.loads(Path(cases_file).read_text(encoding="utf-8"))
    if phase == "prepare":
        from qwenpaw.config.config import load_agent_config, save_agent_config

        cfg = load_agent_config("default")
        cfg.running.light_context_config.strategy = strategy
        cfg.running.llm_retry_enabled = False
        save_agent_config("default", cfg)
        print(json.dumps(asyncio.run(_qwenpaw_prepare(cases))))
    else:
        print(json.dumps(asyncio.run(_qwenpaw_decide(strategy, cases))))


# ------------------------------------------------------------------------------------------- the qwenmem parent

def _tau_context(name: str, context: list[dict], c: int, target: float, fixed_tokens: int) -> list[dict]:
    """The longest prefix (cut before a user message) whose count stays under target·C."""
    budget_bytes = max(0, (target * c - fixed_tokens) * 4)
    used, cut = 0, 0
    for i, m in enumerate(context):
        size = sum(len(json.dumps(b.get("text") or b.get("input") or b.get("output") or "", ensure_ascii=False)
                       .encode()) for b in m["content"])
        if used + size > budget_bytes:
            break
        used += size
        if i + 1 < len(context) and context[i + 1]["role"] == "user":
            cut = i + 1
    return context[:max(cut, 2)]


def unique_tool_ids(context: list[dict], prefix: str) -> list[dict]:
    """τ-bench reuses tool-call ids across conversations; QwenPaw's own ids are unique (a repeated id is a damaged
    session that QwenPaw's `_sanitize_tool_messages` dedups), so each call gets its own, its result follows it."""
    import copy

    out, latest, n = copy.deepcopy(context), {}, 0
    for msg in out:
        for block in msg["content"]:
            if block["type"] == "tool_call":
                n += 1
                latest[block["id"]] = block["id"] = f"{prefix}_{n}"
            elif block["type"] == "tool_result" and block["id"] in latest:
                block["id"] = latest[block["id"]]
    return out


def build_cases(strategy: str, fixed_tokens: int) -> list[dict]:
    import builder  # tests/fixtures/qwenpaw2/builder.py
    from bench.quality.compact2_tau import tau_sessions

    sessions = tau_sessions()
    cases = []
    for c in CONTEXT_SIZES:
        for k, target in enumerate(TARGETS):
            name, _, context = sessions[k % len(sessions)]
            sid, uid = f"console:t{c}x{k}", f"t{c}x{k}"
            ctx = unique_tool_ids(_tau_context(name, context, c, target, fixed_tokens), f"call_{c}x{k}")
            scroll = builder.scroll_state(sid, ctx, {}, None, []) if strategy == "scroll" else None
            doc = builder.document(builder.state(sid, ctx), scroll)
            cases.append({"name": f"{name}@{target:g}C", "C": c, "session_id": sid, "user_id": uid, "doc": doc})
    return cases


def qwenmem_check(ws: Path, rel: str, c: int) -> dict:
    from qwenmem.cli.app import main
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(["-w", str(ws), "compact", "--check", rel, "--max-input-length", str(c), "--json"])
        except SystemExit:
            pass
    return json.loads(out.getvalue())["result"]["sessions"][0]


def run_strategy(strategy: str, qp: Path, tmp: Path) -> list[dict]:
    from bench.peer.qwenpaw2_fixed_parts import copy_root

    wsdir = copy_root(tmp / strategy)
    env = dict(os.environ, QWENPAW_WORKING_DIR=str(wsdir.parent.parent),
               QWENPAW_SECRET_DIR=str(wsdir.parent.parent.parent / "root.secret"))
    from qwenmem.core.compaction.gen2.qwenpaw_measured import MEASURED_TOTALS

    cases = build_cases(strategy, sum(MEASURED_TOTALS[f"{strategy}/en"]))
    cases_file = tmp / f"{strategy}.json"
    cases_file.write_text(json.dumps(cases, ensure_ascii=False), encoding="utf-8")

    def child(phase: str) -> list:
        proc = subprocess.run([str(qp), __file__, "--child", phase, strategy, str(cases_file)], env=env,
                              capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0:
            raise SystemExit(f"QwenPaw child ({phase}) failed:\n{proc.stderr[-4000:]}")
        return json.loads(proc.stdout.strip().splitlines()[-1])

    rels = child("prepare")
    # the corpus's own session of this strategy, at each C
    corpus = [{"name": CORPUS_SESSIONS[strategy].split("/")[1].split("_")[0], "C": c,
               "session_id": "console:" + CORPUS_SESSIONS[strategy].split("/")[1].split("_")[0],
               "user_id": CORPUS_SESSIONS[strategy].split("/")[1].split("_")[0], "rel": CORPUS_SESSIONS[strategy]}
              for c in CONTEXT_SIZES]
    for case, rel in zip(cases, rels):
        case["rel"] = rel
    allcases = [{k: v for k, v in case.items() if k != "doc"} for case in cases] + corpus
    mine = [qwenmem_check(wsdir, case["rel"], case["C"]) for case in allcases]  # before QwenPaw touches history.db
    cases_file.write_text(json.dumps(allcases), encoding="utf-8")
    theirs = child("decide")
    rows = []
    for case, m, q in zip(allcases, mine, theirs):
        placeholders = set()
        doc = json.loads((wsdir / "sessions" / (case["rel"] + ".json")).read_text(encoding="utf-8"))
        for msg in doc["agent"]["state"]["context"]:
            if (msg.get("metadata") or {}).get("qwenpaw_tag") == "scroll_memory":
                placeholders.add(msg["id"])
        mine_kept = [i for i in (m["kept_ids"] if m["would_compact"] else [x["id"] for x in
                     doc["agent"]["state"]["context"]]) if i not in placeholders]
        their_kept = [i for i in q["kept"] if i not in placeholders and i in
                      {x["id"] for x in doc["agent"]["state"]["context"]} | set(mine_kept)]
        if strategy == "scroll":  # QwenPaw's new placeholder is not a transcript message
            their_kept = [i for i in q["kept"] if i in {x["id"] for x in doc["agent"]["state"]["context"]}
                          and i not in placeholders]
        folds = re.search(r"folding (\d+) completed tool result", m["reason"])
        mine_folded = int(folds.group(1)) if folds else 0
        agree = (m["would_compact"] == q["compacted"] and mine_kept == their_kept
                 and mine_folded == q.get("pre_folded", 0))
        rows.append({"strategy": strategy, "session": case["name"], "C": case["C"], "qwenmem_total": m["terms"]["total"],
                     "qwenpaw_tokens": q["tokens"], "qwenmem": m["would_compact"], "qwenpaw": q["compacted"],
                     "kept": f"{len(mine_kept)}/{len(their_kept)}", "agree": agree,
                     "folded": f"{mine_folded}/{q.get('pre_folded', 0)}", "error": q["error"],
                     "system": m["terms"]["system"], "tools": m["terms"]["tools"]})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--qwenpaw-python", type=Path, default=Path("/tmp/qp2-full/bin/python"))
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--no-record", action="store_true")
    ap.add_argument("--strategies", default="native,scroll")
    args = ap.parse_args()
    if args.child:
        qwenpaw_child(*args.child)
        return 0
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "tests" / "fixtures" / "qwenpaw2"))
    if not args.qwenpaw_python.is_file():
        print(f"no QwenPaw interpreter at {args.qwenpaw_python}", file=sys.stderr)
        return 2
    rows = []
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="qwenpaw2_decisions_") as tmp:
        for strategy in args.strategies.split(","):
            rows += run_strategy(strategy, args.qwenpaw_python, Path(tmp))
            loads.append(os.getloadavg()[0])
    agree = sum(r["agree"] for r in rows)
    head = ("| strategy | session | C | qwenmem total | QwenPaw count | qwenmem compacts | QwenPaw compacts | kept "
            "(qwenmem/QwenPaw) | pre-folded (qwenmem/QwenPaw) | agree |\n|---|---|---:|---:|---:|---|---|---:|---:|---|\n")
    body = "".join(f"| {r['strategy']} | {r['session']} | {r['C']:,} | {r['qwenmem_total']:,} | {r['qwenpaw_tokens']:,} | "
                   f"{'yes' if r['qwenmem'] else 'no'} | {'yes' if r['qwenpaw'] else 'no'}"
                   f"{' (' + r['error'][:40] + ')' if r['error'] else ''} | {r['kept']} | {r['folded']} | "
                   f"{'yes' if r['agree'] else '**NO**'} |\n" for r in rows)
    md = ("## QwenPaw 2.x: compact --check decisions against QwenPaw's compress_context()\n\n"
          f"Command: `/work/main/.venv/bin/python bench/quality/qwenpaw2_decisions.py --strategies {args.strategies}` "
          "(QwenPaw side: "
          "`/tmp/qp2-full/bin/python`, qwenpaw 2.2.2.post1 + agentscope 2.0.10 with dependencies). Default flags: "
          "no `--system-tokens`, no `--tools-tokens`; qwenmem rebuilds the system prompt and the tool schemas "
          f"(here {rows[0]['system']:,} and {rows[0]['tools']:,} tokens for the first {rows[0]['strategy']} case). "
          "τ-bench airline conversations cut around each C's trigger plus the corpus's own session; QwenPaw's count "
          "is `model.count_tokens` of its real `_prepare_model_input()`; kept ids compared (scroll: transcript "
          "only), and under scroll the number of completed-turn tool results folded before the split (QwenPaw's "
          "`last_compress['pre_folded']`, qwenmem's reason). 1-minute load average "
          f"{min(loads):.1f}-{max(loads):.1f} on 2 cores (decisions only; no timing).\n\n"
          f"**Agreement: {agree}/{len(rows)}.**\n\n" + head + body)
    print(md)
    if not args.no_record:
        from bench._results import update_section

        update_section("qwenpaw2-decisions", md)
    return 0 if agree == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
