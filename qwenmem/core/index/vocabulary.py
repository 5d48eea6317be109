"""The words of a search: its modes and fusions. A leaf module, so that what only names them (the `search`
operation's options, every command's start-up) does not import the search and the index with them."""

from __future__ import annotations

from typing import Literal

SearchMode = Literal["hybrid", "text", "vector"]
Fusion = Literal["weighted", "rrf", "reme"]
MODES: tuple[SearchMode, ...] = ("hybrid", "text", "vector")
FUSIONS: tuple[Fusion, ...] = ("weighted", "rrf", "reme")
