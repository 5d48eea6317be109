"""Drive ReMe 0.4.1.11's own index and search (run by the ReMe venv's Python, never imported by qwenmem).

    <reme venv>/bin/python bench/peer/reme04_driver.py WS QUERIES.json OUT.jsonl [--limit 10] [--embed-url URL --dim N]
        [--no-index]

Wiring as QwenPaw 2.2.2.post1 does (qwenpaw2-workspace.md §5.2): daily_dir memory/, digest_dir digest/, index in
mem_metadata/, regex tokenizer, BM25, local file store; the `search` step with vector_weight 0.7,
candidate_multiplier 3.0, expand_links. Embeddings (optional) through ReMe's OpenAI backend at --embed-url. The
watcher is replaced by one on-demand run of its start-up scan (init_changes_step -> update_index_step), so the index
is complete before the first query. Writes one JSON line per query: hits (path, start_line, end_line, chars) and
seconds; the first line is {"index_seconds": …}.
"""

import argparse
import asyncio
import json
import os
import sys
import time


def config(ws: str, embed_url: str | None, dim: int):
    from reme.config import resolve_app_config

    off = {"backend": "base"}
    components: dict = {}
    if embed_url:
        components = {
            "as_embedding": {"default": {"backend": "openai", "model": "bench-embed", "dimensions": dim,
                                         "credential": {"api_key": "bench", "base_url": embed_url}, "parameters": {}}},
            "embedding_store": {"default": {"backend": "local", "as_embedding": "default"}},
            "file_store": {"default": {"embedding_store": "default"}},
        }
    return resolve_app_config(
        log_config=False, workspace_dir=ws, daily_dir="memory", digest_dir="digest", metadata_dir="mem_metadata",
        enable_logo=False, log_to_console=False, log_to_file=False, components=components,
        jobs={"index_update_loop": {"backend": "base", "steps": [
                  {"backend": "init_changes_step", "monitor_type": "file_store", "monitor_name": "default",
                   "dispatch_steps": ["update_index_step"]}]},
              "resource_watch_loop": off, "digest_watch_loop": off, "dream_cron": off, "optimize_index_cron": off,
              "search": {"steps": [{"backend": "search_step", "vector_weight": 0.7, "candidate_multiplier": 3.0,
                                    "expand_links": True, "max_links_per_direction": 10}]}})


async def main(args) -> None:
    os.environ.setdefault("LLM_API_KEY", "unused")  # the chat model is never called by index or search
    os.environ.setdefault("LLM_BASE_URL", "http://127.0.0.1:9/v1")
    from reme.application import Application

    queries = json.load(open(args.queries, encoding="utf-8"))
    app = Application(**config(args.ws, args.embed_url, args.dim))
    await app._start()
    out = open(args.out, "w", encoding="utf-8")
    t = time.perf_counter()
    if not args.no_index:
        await app.run_job("index_update_loop")
    out.write(json.dumps({"index_seconds": time.perf_counter() - t}) + "\n")
    for q in queries:
        t = time.perf_counter()
        r = await app.run_job("search", query=q, limit=args.limit)
        seconds = time.perf_counter() - t
        hits = [{"path": h["path"], "start_line": h["start_line"], "end_line": h["end_line"], "chars": len(h["text"])}
                for h in (r.metadata.get("results") or [])]
        out.write(json.dumps({"query": q, "hits": hits, "seconds": seconds}, ensure_ascii=False) + "\n")
    out.close()
    await app._close()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("ws")
    p.add_argument("queries")
    p.add_argument("out")
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--embed-url")
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--no-index", action="store_true")
    asyncio.run(main(p.parse_args()))
    sys.exit(0)
