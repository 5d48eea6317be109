"""Lone UTF-16 surrogates in a str: what Python makes of JSON escapes like \\ud83d, of bytes that are not UTF-8 on
the command line, and of a model splitting an emoji. No encoder, tokenizer or HTTP client accepts them, and QwenPaw's
next save of such a string truncates the file. One rule everywhere: a split pair is joined, a lone one becomes
U+FFFD. A light module of its own, so the search path can use it without importing the repair package."""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def fix_surrogates(text: str) -> tuple[str, int, int]:
    """(fixed text, lone surrogates replaced, pairs joined); clean text comes back unchanged at regex speed."""
    if not _SURROGATE.search(text):
        return text, 0, 0
    joined = len(_PAIR.findall(text))
    lone = len(_SURROGATE.findall(text)) - 2 * joined
    # UTF-16 round trip: the decoder joins every valid pair and replaces each unpaired unit with one U+FFFD
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace"), lone, joined


def without_surrogates(text: str) -> str:
    return fix_surrogates(text)[0]
