"""Text keys for comparing memory entries: whitespace-, case- and punctuation-insensitive, CJK-aware."""

from __future__ import annotations

import re
import unicodedata

# A promoted line's "(from [[memory/<date>/<note>.md]])" says where it came from, not what it states
from qwenmem.core.reme_notes import without_citations

_MD_LINK = re.compile(r"\[([^\[\]]*)\]\([^)]*\)")  # not [^\]]*: a run of "[" made that quadratic
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_NOT_LETTER_OR_DIGIT = re.compile(r"[\W_]+")


def normalize(text: str) -> str:
    """Letters and digits only, casefolded, after NFKC (full-width → ASCII, compatibility forms unified).

    Whitespace goes entirely, because mixed CJK/Latin text is spaced inconsistently ("English,  中文"), and all
    punctuation and symbols go (both ASCII and CJK: ，。：（） …, Markdown emphasis, emoji).
    """
    text = unicodedata.normalize("NFKC", _MD_LINK.sub(r"\1", without_citations(text))).casefold()
    return _NOT_LETTER_OR_DIGIT.sub("", text)


def bigrams(key: str) -> set[str]:
    if len(key) < 2:
        return {key} if key else set()
    return {key[i:i + 2] for i in range(len(key) - 1)}


def dice(a: str | set[str], b: str | set[str]) -> float:
    ga = a if isinstance(a, set) else bigrams(a)
    gb = b if isinstance(b, set) else bigrams(b)
    if not ga or not gb:
        return 0.0
    return 2 * len(ga & gb) / (len(ga) + len(gb))


def containment(inner: str | set[str], outer: str | set[str]) -> float:
    """How much of `inner`'s bigrams also occur in `outer` (1.0 = all of them)."""
    gi = inner if isinstance(inner, set) else bigrams(inner)
    go = outer if isinstance(outer, set) else bigrams(outer)
    return len(gi & go) / len(gi) if gi else 0.0


def numbers(text: str) -> set[str]:
    return set(_NUMBER.findall(unicodedata.normalize("NFKC", without_citations(text))))


def is_cjk_heavy(key: str) -> bool:
    cjk = sum(1 for ch in key if "\u3040" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af")
    return cjk * 2 >= len(key) if key else False


_LETTERS = re.compile(r"[^\W\d_]+")


def words(text: str) -> set[str]:
    """Words without numbers: Latin-like runs as words, CJK (which has no spaces) as single characters."""
    out: set[str] = set()
    for run in _LETTERS.findall(unicodedata.normalize("NFKC", text).casefold()):
        if any(ord(ch) >= 0x2E80 for ch in run):
            out.update(run)
        else:
            out.add(run)
    return out


def same_subject(old: str, new: str) -> bool:
    """Whether `new` restates `old` (every word of the old entry is still there), so that differing numbers mean a
    changed value rather than another thing: "Server A has 16 GB" is not superseded by "Server B has 32 GB"."""
    old_words, new_words = words(old), words(new)
    if not old_words:
        return False
    missing = len(old_words - new_words)
    return missing == 0 or (len(old_words) >= 10 and missing <= len(old_words) // 10)
