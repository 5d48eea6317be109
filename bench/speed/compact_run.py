"""A whole `compact` run: CPU of `--check --all` and `--all --dry-run` over many real sessions, and the wall time of
`compact --all` against a remote LLM that answers in 0.5 s (the real scripted HTTP server of the tests).

Writes the "compaction-run" section of bench/RESULTS.md. Run from the repository root:

    python bench/speed/compact_run.py [--baseline OTHER_CHECKOUT]

`--baseline` runs the same measurements with another checkout of qwenmem (e.g. a clone of an older commit) first,
for a before/after table. The real-session part needs ../shared (the team corpus) and is left out without it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(REPO / "tests"))
from bench._results import update_section  # noqa: E402
from llm_server import ScriptedLLMServer  # noqa: E402

CORPUS_SESSION = (REPO.parent / "shared" / "corpus" / "real" / "zzjmay123__aiWorkflow__c70a43d" / "sessions"
                  / "ou_975690183c044ff01e03b1d66fb98df9_6fb98df9.json")
COPIES = 100
LLM_SESSIONS = 8
LLM_DELAY = 0.5
GOOD = "## Goal\n- g\n\n## Next Steps\n1. n"


def _qwenmem(repo: Path, ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "qwenmem", "-w", str(ws), "compact", *args],
                          env=dict(os.environ, PYTHONPATH=str(repo)), capture_output=True, text=True, check=False,
                          cwd=ws.parent)  # not this checkout: `-m` puts the working directory first on sys.path


def cpu_seconds(repo: Path, ws: Path, *args: str, runs: int = 3) -> float:
    """The least CPU (user + sys) of `runs` cold processes: the least disturbed by other load on the machine."""
    best = float("inf")
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        _qwenmem(repo, ws, *args)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def corpus_workspace(root: Path) -> Path:
    ws = root / "corpus-ws"
    (ws / "sessions").mkdir(parents=True)
    for i in range(COPIES):
        shutil.copyfile(CORPUS_SESSION, ws / "sessions" / f"ou_copy{i}.json")
    return ws


def llm_workspace(ws: Path) -> Path:
    shutil.rmtree(ws, ignore_errors=True)
    (ws / "sessions" / "console").mkdir(parents=True)
    (ws / "agent.json").write_text(json.dumps({"language": "en"}), encoding="utf-8")
    for k in range(LLM_SESSIONS):
        msgs = [{"id": f"m{k}-{i}", "name": "user" if i % 2 == 0 else "Paw",
                 "role": "user" if i % 2 == 0 else "assistant",
                 "content": [{"type": "text", "text": f"sess{k} turn {i} " + "x" * 1200}], "metadata": {},
                 "timestamp": f"2026-05-20 10:{i:02d}:0{k}.000"} for i in range(8)]
        doc = {"agent": {"memory": {"content": [[m, []] for m in msgs], "_compressed_summary": ""},
                         "toolkit": {"active_groups": []}, "name": "Paw", "_sys_prompt": "You are Paw."}}
        (ws / "sessions" / "console" / f"s{k}.json").write_text(json.dumps(doc), encoding="utf-8")
    return ws


def llm_wall(repo: Path, root: Path, server: ScriptedLLMServer, runs: int = 3) -> tuple[float, int, int]:
    """(least wall seconds, LLM requests per run, sessions compacted)."""
    best, requests, compacted = float("inf"), 0, 0
    for _ in range(runs):
        ws = llm_workspace(root / "llm-ws")
        seen = len(server.chat_requests())
        start = time.perf_counter()
        run = _qwenmem(repo, ws, "--all", "--max-input-length", "2000", "--summarizer", "llm", "--llm-base-url",
                       server.base_url, "--llm-model", "scripted", "--llm-api-key", "sk-test", "--no-longterm",
                       "--json")
        best = min(best, time.perf_counter() - start)
        requests = len(server.chat_requests()) - seen
        compacted = sum(s["status"] == "compacted" for s in json.loads(run.stdout)["result"]["sessions"])
    return best, requests, compacted


def measure(repo: Path, root: Path, server: ScriptedLLMServer) -> dict[str, float | int]:
    out: dict[str, float | int] = {}
    if CORPUS_SESSION.is_file():
        ws = corpus_workspace(root / repo.name)
        out["check_cpu"] = cpu_seconds(repo, ws, "--check", "--all")
        out["dry_cpu"] = cpu_seconds(repo, ws, "--all", "--dry-run", "--summarizer", "extractive",
                                     "--max-input-length", "32768")
    out["llm_wall"], out["llm_requests"], out["llm_compacted"] = llm_wall(repo, root, server)
    return out


def _head(repo: Path) -> str:
    run = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                         check=False)
    return run.stdout.strip() or "(not a git checkout)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another qwenmem checkout to measure first")
    ns = parser.parse_args()
    repos = ([(f"baseline {_head(ns.baseline)}", ns.baseline.resolve())] if ns.baseline else []) + [
        (f"this checkout {_head(REPO)}", REPO)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="qm-compact-run-") as tmp, \
            ScriptedLLMServer([{"delay": LLM_DELAY, "content": GOOD}]) as server:
        for label, repo in repos:
            rows.append((label, measure(repo, Path(tmp), server)))
            print(label, rows[-1][1], flush=True)

    def cell(values: dict[str, float | int], key: str) -> str:
        return f"{values[key]:.2f}" if key in values else "–"

    lines = [f"`python bench/speed/compact_run.py{' --baseline <older checkout>' if ns.baseline else ''}`. CPU: least of 3 "
             f"cold runs over {COPIES} copies of a real 444 KB session (page cache warm); LLM: least wall time of 3 "
             f"runs of `compact --all` on {LLM_SESSIONS} sessions that each need a summary, the server answering "
             f"each request after {LLM_DELAY} s.", "",
             "| code | `--check --all` CPU s | `--all --dry-run` CPU s | `--all` with LLM, wall s | LLM requests | "
             "compacted |", "|---|---:|---:|---:|---:|---:|"]
    for label, v in rows:
        lines.append(f"| {label} | {cell(v, 'check_cpu')} | {cell(v, 'dry_cpu')} | {cell(v, 'llm_wall')} | "
                     f"{v['llm_requests']} | {v['llm_compacted']} |")
    update_section("compaction-run", "## Compaction: a whole run\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
