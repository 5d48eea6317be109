"""Tokenisation shared by the Whoosh field, the query builder and the snippet highlighter.

* CJK (and kana/hangul) runs become overlapping character bigrams; a lone character stays a unigram. No
  dictionary, deterministic, and `数据库` is found inside `数据库连接超时` (environment.md §4, Appendix A).
* Every other word is lower-cased and kept whole, so identifiers and error codes (`ECONNREFUSED`,
  `handleWebSocketReconnect`, `max_batch_size`) match exactly. At index time a word is also split into its
  parts (camelCase humps, `_`, letter/digit boundaries) at the same position, so `reconnect` finds
  `handleWebSocketReconnect`; queries use the whole word only, so an exact identifier is not diluted.
* A plain Latin word also gets its Porter stem at the same position (index and query), so `researching`
  finds `research`; the exact form still scores higher because it matches twice. Queries drop English stop
  words (unless nothing else is left).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterator

CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
RUN = re.compile(r"[%s]+|[^\W%s]+" % (CJK_RANGES, CJK_RANGES))
IS_CJK = re.compile(r"[%s]" % CJK_RANGES)
PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W\d_A-Za-z]+")


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
        low = run.lower()
        yield low, m.start(), m.end(), False
        if low.isascii() and low.isalpha() and len(low) > 3:
            stemmed = stem(low)
            if stemmed != low:
                yield stemmed, m.start(), m.end(), True
        if not query:
            parts = list(PART.finditer(run))
            if len(parts) > 1:  # offsets come from the original word: lower() can change a word's length (İ)
                for part in parts:
                    yield part.group().lower(), m.start() + part.start(), m.start() + part.end(), True


def query_terms(query: str) -> tuple[list[str], list[list[str]]]:
    """(distinct terms, phrases): every token of the query, minus English stop words when other words remain,
    and one phrase per CJK run of 3+ characters (its bigrams in order) so the exact substring ranks first."""
    terms: list[str] = []
    phrases: list[list[str]] = []
    stops: list[str] = []
    for m in RUN.finditer(query):
        run = m.group()
        toks = [t for t, _, _, _ in spans(run, query=True)]
        if IS_CJK.match(run) and len(toks) > 1:
            phrases.append(toks)
        for t in toks:
            target = stops if t in STOP_WORDS else terms
            if t not in target:
                target.append(t)
    return (terms or stops), phrases


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    from whoosh.lang.porter import stem as porter

    return str(porter(word))


STOP_WORDS = frozenset("""a about after again all am an and any are as at be because been before being but by can
could did do does doing during each for from had has have having he her here hers him his how i if in into is it its
me my no nor not of on or our ours she should so some such than that the their them then there these they this those
to too up us was we were what when where which while who whom why will with would you your yours""".split())
