"""The Whoosh tokenizer over analysis.spans. A module of its own because Whoosh pickles the schema, so the
class must be importable by name; only fulltext.py imports it, lazily (whoosh stays out of `--help`)."""

from __future__ import annotations

from typing import Any, Iterator

from whoosh.analysis import Token, Tokenizer

from qwenmem.core.index.analysis import spans


class CJKIdentifierTokenizer(Tokenizer):  # type: ignore[misc]  # whoosh has no type hints
    def __call__(self, value: str, positions: bool = False, chars: bool = False, keeporiginal: bool = False,
                 removestops: bool = True, start_pos: int = 0, start_char: int = 0, tokenize: bool = True,
                 mode: str = "", **kwargs: Any) -> Iterator[Any]:
        token = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        pos = start_pos
        for text, start, end, is_part in spans(value, query=(mode == "query")):
            token.text = text
            token.boost = 1.0
            token.stopped = False
            if keeporiginal:
                token.original = text
            if positions:
                # Identifier parts share the whole word's position, so phrases over whole words still match.
                token.pos = pos - 1 if is_part else pos
                if not is_part:
                    pos += 1
            if chars:
                token.startchar = start_char + start
                token.endchar = start_char + end
            yield token
