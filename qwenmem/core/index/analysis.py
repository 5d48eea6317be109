"""Tokenisation shared by the Whoosh field, the query builder and the snippet highlighter.

* CJK (and kana/hangul) runs become overlapping character bigrams; a lone character stays a unigram. No
  dictionary, deterministic, and `数据库` is found inside `数据库连接超时` (environment.md §4, Appendix A).
* Every other word is lower-cased and kept whole, so identifiers and error codes (`ECONNREFUSED`,
  `handleWebSocketReconnect`, `max_batch_size`) match exactly. At index time a word is also split into its
  parts (camelCase humps, `_`, letter/digit boundaries) at the same position, so `websocket` finds
  `handleWebSocketReconnect`; queries use the whole word only, so an exact identifier is not diluted.
"""

from __future__ import annotations

import re
from typing import Iterator

CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
RUN = re.compile(r"[%s]+|[^\W%s]+" % (CJK_RANGES, CJK_RANGES))
IS_CJK = re.compile(r"[%s]" % CJK_RANGES)
PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W\d_A-Za-z]+")


def word_parts(word: str) -> list[str]:
    """The lower-cased sub-words of an identifier, [] when the word has only one part."""
    parts = [p.lower() for p in PART.findall(word)]
    return parts if len(parts) > 1 else []


def spans(text: str, query: bool = False) -> Iterator[tuple[str, int, int, bool]]:
    """(term, start char, end char, is_part) for every token; parts only when not `query`."""
    for m in RUN.finditer(text):
        run = m.group()
        if IS_CJK.match(run):
            if len(run) == 1:
                yield run, m.start(), m.end(), False
            else:
                for i in range(len(run) - 1):
                    yield run[i:i + 2], m.start() + i, m.start() + i + 2, False
            continue
        yield run.lower(), m.start(), m.end(), False
        if not query:
            offset = 0
            for part in word_parts(run):
                at = run.lower().find(part, offset)
                if at < 0:
                    continue
                offset = at + len(part)
                yield part, m.start() + at, m.start() + at + len(part), True


def query_groups(query: str) -> list[list[str]]:
    """The query as groups of terms: one group per CJK run (its bigrams, in order) or per other word."""
    groups: list[list[str]] = []
    for m in RUN.finditer(query):
        terms = [t for t, _, _, _ in spans(m.group(), query=True)]
        if terms:
            groups.append(terms)
    return groups
