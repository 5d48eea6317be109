"""Lexical evidence that one memory entry says nothing another does not, and that two entries are about the same
thing. An embedding cannot give either: multilingual-e5 scores unrelated short lines of one file at cosine ~0.9
(`- **姓名**: 周振江` vs the spouse line), so a cosine only ever narrows the candidates, and these checks decide.

Tokens: NFKC, casefolded; numbers whole (`10.0.3.7:5432`), Latin-like words, CJK one character each (Chinese has
no spaces), and the check marks ✅/❌ as yes/no. Function words are ignored for containment, never numbers.
"""

from __future__ import annotations

import re
import unicodedata

_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_CJK = "\u2e80-\u9fff\u3040-\u30ff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"\d+(?:[.,:]\d+)*|[{_CJK}]|[^\W\d_{_CJK}]+|[✅✔☑❌✗✘]")
_MARKS = {"✅": "✓yes", "✔": "✓yes", "☑": "✓yes", "❌": "✓no", "✗": "✓no", "✘": "✓no"}
# "**key**: value", "key: value", "key：value" — the key names what the entry is about
_KEYED = re.compile(r"^\s*(?:\*\*|__)?([^:：*_\n]{1,40}?)(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?\s*(\S.*)$", re.S)

STOPWORDS = frozenset(
    "the a an is are was were be been of to in on at for and or with by as it its that this these those now also "
    "there here which who from into than then so very".split()
) | frozenset("的了是在和与及也都之就着把被")
NEGATIONS = frozenset(
    "not no never none nothing nobody without don doesn didn isn aren wasn weren won cannot can't shouldn mustn "
    "neither nor".split()
) | frozenset({"不", "没", "無", "无", "未", "别", "別", "勿", "非", "否", "✓no"})

# Calibrated on bench/data/dream_pairs.json (bench/dream_pairs.py): of the shorter entry's consecutive content-token
# pairs, how many must also be consecutive in the longer one. Every true duplicate there scores >= 0.75; word-order
# swaps ("A reports to B" / "B reports to A") and reshuffled CJK phrases score lower.
ORDER_MIN = 0.6
SAME_SUBJECT_MIN = 0.75  # Jaccard of the non-number content tokens for "about the same thing"


def tokens(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", _MD_LINK.sub(r"\1", text)).casefold()
    return [_MARKS.get(t, t) for t in _TOKEN.findall(text)]


def content(toks: list[str]) -> list[str]:
    return [t for t in toks if t not in STOPWORDS]


def _is_number(tok: str) -> bool:
    return tok[:1].isdigit()


def subject_key(text: str) -> str | None:
    """The key of a "key: value" entry, normalised ("**姓名**: 周振江" → "姓名"), else None. Only the first line
    counts, and a URL's or a time's colon is no key separator."""
    first = text.split("\n", 1)[0]
    m = _KEYED.match(first)
    if not m or m.group(1).strip().endswith(("http", "https")) or re.search(r"\d$", m.group(1)):
        return None
    key = "".join(content(tokens(m.group(1))))
    return key or None


def keys_agree(a: str, b: str) -> bool:
    """False only when both entries are keyed and by different keys."""
    ka, kb = subject_key(a), subject_key(b)
    return ka is None or kb is None or ka == kb


def negations(text: str) -> set[str]:
    return {t for t in tokens(text) if t in NEGATIONS}


def _pairs(seq: list[str]) -> list[tuple[str, str]]:
    return list(zip(seq, seq[1:]))


def order_overlap(inner: list[str], outer: list[str]) -> float:
    """Share of `inner`'s consecutive token pairs that are also consecutive in `outer` (1.0 for a single token)."""
    pi = _pairs(inner)
    if not pi:
        return 1.0 if inner and inner[0] in outer else 0.0
    po = set(_pairs(outer))
    return sum(p in po for p in pi) / len(pi)


def restates(loser: str, keeper: str) -> bool:
    """Whether `keeper` states everything `loser` states, so that removing `loser` loses nothing:
    every content word and number of `loser` occurs in `keeper`, mostly in the same order, `keeper` negates nothing
    `loser` affirms (and the reverse), and a keyed entry keeps its key ("**端口**: 8080" is not "**管理端口**: 8080").
    """
    lt, kt = tokens(loser), tokens(keeper)
    lc, kc = content(lt), content(kt)
    if not lc:
        return False
    if not set(lc) <= set(kc):
        return False
    if {t for t in lt if t in NEGATIONS} != {t for t in kt if t in NEGATIONS}:
        return False
    if not keys_agree(loser, keeper):
        return False
    return order_overlap(lc, kc) >= ORDER_MIN


def same_subject(a: str, b: str) -> bool:
    """Whether two entries are about the same thing, so that differing values may contradict: keyed entries need
    the same key; other entries nearly the same words once numbers are set aside."""
    ka, kb = subject_key(a), subject_key(b)
    if ka is not None and kb is not None:
        return ka == kb
    wa = {t for t in content(tokens(a)) if not _is_number(t) and t not in NEGATIONS}
    wb = {t for t in content(tokens(b)) if not _is_number(t) and t not in NEGATIONS}
    if not wa or not wb:
        return False
    return len(wa & wb) / len(wa | wb) >= SAME_SUBJECT_MIN


def values_differ(a: str, b: str) -> bool:
    """Different numbers, or one negates what the other affirms."""
    ta, tb = tokens(a), tokens(b)
    nums_a, nums_b = {t for t in ta if _is_number(t)}, {t for t in tb if _is_number(t)}
    neg_a, neg_b = {t for t in ta if t in NEGATIONS}, {t for t in tb if t in NEGATIONS}
    return nums_a != nums_b or neg_a != neg_b
