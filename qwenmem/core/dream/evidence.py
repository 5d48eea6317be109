"""Lexical evidence that one memory entry says nothing another does not, and that two entries are about the same
thing. An embedding cannot give either: multilingual-e5 scores unrelated short lines of one file at cosine ~0.9
(`- **姓名**: 周振江` vs the spouse line), so a cosine only ever narrows the candidates, and these checks decide.

Tokens: NFKC, casefolded; numbers whole (`10.0.3.7:5432`), Latin-like words, CJK one character each (Chinese has
no spaces), and the check marks ✅/❌ as yes/no. Only articles and copulas are ignored, never numbers.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_CJK = "\u2e80-\u9fff\u3040-\u30ff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"\d+(?:[.,:]\d+)*|[{_CJK}]|[^\W\d_{_CJK}]+|[✅✔☑❌✗✘]")
_MARKS = {"✅": "✓yes", "✔": "✓yes", "☑": "✓yes", "❌": "✓no", "✗": "✓no", "✘": "✓no"}
# "**key**: value", "key: value", "key：value" — the key names what the entry is about
_KEYED = re.compile(r"^\s*(?:\*\*|__)?([^:：*_\n]{1,40}?)(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?\s*(\S.*)$", re.S)

# Only articles and copulas are ignored: prepositions carry meaning ("reports to Bob" vs "reports on Bob's team").
STOPWORDS = frozenset("the an is are was were be been".split()) | frozenset("的了")
NEGATIONS = frozenset(
    "not no never none nothing nobody without don doesn didn isn aren wasn weren won cannot shouldn mustn "
    "neither nor".split()
) | frozenset({"不", "没", "無", "无", "未", "别", "別", "勿", "非", "否", "✓no"})
_CLAUSE = re.compile(r"[;，；、。！？!?]|,(?!\d)|\.(?=\s|$)")  # "12,000" stays one number
SAME_SUBJECT_MIN = 0.75  # Jaccard of the non-number content tokens for "about the same thing"


def tokens(text: str) -> list[str]:
    return list(_tokens(text))


@lru_cache(maxsize=8192)  # a dream compares each entry with many others
def _tokens(text: str) -> tuple[str, ...]:
    text = unicodedata.normalize("NFKC", _MD_LINK.sub(r"\1", text)).casefold()
    return tuple(_MARKS.get(t, t) for t in _TOKEN.findall(text))


def content(toks: list[str]) -> list[str]:
    return [t for t in toks if t not in STOPWORDS]


def _is_number(tok: str) -> bool:
    return tok[:1].isdigit()


def _subject_key(first_line: str) -> str | None:
    m = _KEYED.match(first_line)
    if not m or m.group(1).strip().endswith(("http", "https")) or re.search(r"\d$", m.group(1)):
        return None
    return "".join(content(tokens(m.group(1)))) or None


@dataclass(frozen=True)
class Profile:
    """What the checks need of one entry, computed once per text (a dream compares each entry with many)."""

    words: tuple[str, ...]  # content tokens in order
    vocabulary: frozenset[str]
    clauses: tuple[tuple[str, ...], ...]
    key: str | None
    negations: frozenset[str]
    numbers: frozenset[str]
    subject_words: frozenset[str]  # content words without numbers and negations
    adjacent: frozenset[tuple[str, str]]  # neighbouring content words (within a clause, for the clauses' own)
    clause_adjacent: frozenset[tuple[str, str]]


@lru_cache(maxsize=8192)
def profile(text: str) -> Profile:
    toks = tokens(text)
    words = tuple(content(toks))
    parts = tuple(c for c in (tuple(content(tokens(piece))) for piece in _CLAUSE.split(text)) if c)
    return Profile(words, frozenset(words), parts, _subject_key(text.split("\n", 1)[0]),
                   frozenset(t for t in toks if t in NEGATIONS), frozenset(t for t in toks if _is_number(t)),
                   frozenset(t for t in words if not _is_number(t) and t not in NEGATIONS),
                   frozenset(zip(words, words[1:])), frozenset(pair for c in parts for pair in zip(c, c[1:])))


def subject_key(text: str) -> str | None:
    """The key of a "key: value" entry, normalised ("**姓名**: 周振江" → "姓名"), else None. Only the first line
    counts, and a URL's or a time's colon is no key separator."""
    return profile(text).key


def keys_agree(a: str, b: str) -> bool:
    """False only when both entries are keyed and by different keys."""
    ka, kb = profile(a).key, profile(b).key
    return ka is None or kb is None or ka == kb


def negations(text: str) -> frozenset[str]:
    return profile(text).negations


def clauses(text: str) -> list[list[str]]:
    """The entry's clauses (split at commas, semicolons and sentence ends) as content-token sequences."""
    return [list(c) for c in profile(text).clauses]


def _contiguous(part: tuple[str, ...], whole: tuple[str, ...]) -> bool:
    n = len(part)
    return any(whole[k:k + n] == part for k in range(len(whole) - n + 1))


def restates(loser: str, keeper: str) -> bool:
    """Whether `keeper` states everything `loser` states, so that removing `loser` loses nothing: every clause of
    `loser` occurs word for word (articles, case, spacing and punctuation aside) in `keeper`, `keeper` negates
    nothing `loser` affirms (nor the reverse), and a keyed entry keeps its key ("**端口**: 8080" is not
    "**管理端口**: 8080"). Clauses may move ("For work, the user prefers …" / "The user prefers … for work"), words
    inside a clause may not: "Alice owns the billing service" is not restated by "Alice's manager owns the billing
    service", though every word is there and a model scores the two as near-identical.
    """
    lp, kp = profile(loser), profile(keeper)
    if not lp.clauses or not kp.words or not lp.vocabulary <= kp.vocabulary \
            or not lp.clause_adjacent <= kp.adjacent:  # cheap necessary conditions first
        return False
    if lp.negations != kp.negations or not keys_agree(loser, keeper):
        return False
    return all(_contiguous(part, kp.words) for part in lp.clauses)


def same_subject(a: str, b: str) -> bool:
    """Whether two entries are about the same thing, so that differing values may contradict: keyed entries need
    the same key; other entries nearly the same words once numbers are set aside."""
    pa, pb = profile(a), profile(b)
    if pa.key is not None and pb.key is not None:
        return pa.key == pb.key
    wa, wb = pa.subject_words, pb.subject_words
    if not wa or not wb:
        return False
    return len(wa & wb) / len(wa | wb) >= SAME_SUBJECT_MIN


def values_differ(a: str, b: str) -> bool:
    """Different numbers, or one negates what the other affirms."""
    pa, pb = profile(a), profile(b)
    return pa.numbers != pb.numbers or pa.negations != pb.negations
