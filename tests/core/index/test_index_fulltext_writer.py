"""The fast full-text writer (core/index/whoosh_writer.py) writes what Whoosh's own writer writes.

Each index is built twice from the same documents, once by Whoosh's SegmentWriter and once by ours (serial, and
split over two processes), and compared through Whoosh's reader: every term with its statistics, every posting
(document, weight, encoded positions), every stored field and field length, and the ranking of queries.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from helpers import SAMPLE
from qwenmem.core.index import fulltext
from qwenmem.core.index.chunking import chunk_text
from qwenmem.core.index.whoosh_writer import FastSegmentWriter, write_documents

WORDS = ("deploy database invoice holiday kubernetes garden piano budget researching researched handleWebSocketReconnect "
         "max_batch_size ECONNREFUSED IPv6Address HTTP2Server 数据库 连接 超时 订单 服务 写入 回滚 猫 test_test "
         "İstanbul naïve café x y").split()


def documents() -> list[dict]:
    """Chunks of the sample workspace's memory (English and Chinese) plus generated notes: identifiers, stems,
    repeated words, and terms common enough to need several posting blocks (Whoosh writes 128 postings a block)."""
    texts = []
    for path in sorted(SAMPLE.rglob("*.md")):
        rel = path.relative_to(SAMPLE).as_posix()
        texts += [(c.path, c.start_line, c.end_line, c.text) for c in chunk_text(rel, path.read_text(encoding="utf-8"))]
    rng = random.Random(7)
    for i in range(420):
        lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14))) for _ in range(rng.randint(1, 6))]
        texts.append((f"memory/gen-{i // 40:02d}.md", i, i + len(lines), "\n".join(lines)))
    texts.append(("memory/empty.md", 1, 1, ""))
    texts.append(("memory/punct.md", 1, 1, "... --- !!!"))
    return [{"chunk_id": f"c{n:05d}", "path": p, "lines": (a, b), "text": t} for n, (p, a, b, t) in enumerate(texts)]


def whoosh_build(directory: Path, docs: list[dict]):
    ix = fulltext.create(directory)
    writer = ix.writer()  # Whoosh's own SegmentWriter
    for doc in docs:
        writer.add_document(**doc)
    writer.commit()
    return ix


def fast_build(directory: Path, docs: list[dict], parallel_min: int):
    ix = fulltext.create(directory)
    write_documents(ix, set(), docs, parallel_min=parallel_min)
    return ix


def snapshot(ix) -> dict:
    """Everything a search can read back, keyed by global document number."""
    with ix.reader() as r:
        terms = {}
        for field, text in r.all_terms():
            info = r.term_info(field, text)
            postings = r.postings(field, text)
            items = []
            while postings.is_active():
                items.append((postings.id(), postings.weight(), postings.value()))
                postings.next()
            terms[(field, text)] = (info.weight(), info.doc_frequency(), info.min_length(), info.max_length(),
                                    info.max_weight(), info.min_id(), info.max_id(), items)
        n = r.doc_count_all()
        return {"terms": terms, "stored": [r.stored_fields(i) for i in range(n)],
                "lengths": [r.doc_field_length(i, "text") for i in range(n)],
                "total": r.field_length("text"), "count": n}


QUERIES = ["database timeout", "数据库连接超时", "reconnect", "ECONNREFUSED", "researching the budget", "猫",
           "max_batch_size", "piano garden holiday", "test", "http2server", "Istanbul", "x"]


def ranking(directory: Path) -> list[list[tuple[str, float]]]:
    fulltext._open_index.cache_clear()
    return [fulltext.search(directory, q, limit=50) for q in QUERIES]


@pytest.mark.parametrize("parallel_min", [10**9, 2], ids=["one-process", "two-processes"])
def test_same_index_as_whoosh_writer(tmp_path, parallel_min):
    docs = documents()
    expected = snapshot(whoosh_build(tmp_path / "whoosh", docs))
    ours = fast_build(tmp_path / "fast", docs, parallel_min)
    got = snapshot(ours)
    assert got["count"] == expected["count"] == len(docs)
    assert got["stored"] == expected["stored"]
    assert got["lengths"] == expected["lengths"] and got["total"] == expected["total"]
    assert got.keys() == expected.keys()
    assert set(got["terms"]) == set(expected["terms"])
    for key, value in expected["terms"].items():
        assert got["terms"][key] == value, key
    multi_block = [k for k, v in expected["terms"].items() if len(v[-1]) > 128]
    assert multi_block, "the documents must exercise posting lists of several blocks"
    assert len(ours.reader().leaf_readers()) == (2 if parallel_min == 2 else 1)
    assert ranking(tmp_path / "fast") == ranking(tmp_path / "whoosh")


def test_incremental_write_with_deletions_and_merge(tmp_path):
    """A later write deletes a file's documents and adds new ones; Whoosh then merges the small segments (through
    the pool, out of document order): the result equals Whoosh's own writer doing the same."""
    docs = documents()
    first, second = docs[:300], docs[300:]
    removed = {"memory/gen-01.md"}
    for name, builder in (("whoosh", None), ("fast", FastSegmentWriter)):
        ix = fulltext.create(tmp_path / name)
        for batch, remove in ((first, set()), (second, removed)):
            writer = ix.writer() if builder is None else builder(ix)
            for path in sorted(remove):
                writer.delete_by_term("path", path)
            for doc in batch:
                writer.add_document(**doc)
            writer.commit()
    fast, whoosh = fulltext.clone(tmp_path / "fast", tmp_path / "fast2"), fulltext.clone(tmp_path / "whoosh", tmp_path / "w2")
    assert snapshot(fast) == snapshot(whoosh)
    assert ranking(tmp_path / "fast2") == ranking(tmp_path / "w2")


def test_child_failure_raises_and_leaves_no_index(tmp_path):
    docs = documents()
    docs[-1] = dict(docs[-1], lines=lambda: 0)  # cannot be pickled into the stored fields: fails in the child
    ix = fulltext.create(tmp_path / "ix")
    with pytest.raises(Exception):
        write_documents(ix, set(), docs, parallel_min=2)
    assert ix.doc_count_all() == 0
