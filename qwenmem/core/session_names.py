"""Naming a session loosely: what a person types after reading a table. Tables shorten a long key in the middle
(`ou_975690183…df9_6fb98df9`); people type a prefix (`default_177`) or a distinctive part (`6fb98df9`).

`loose_matches` tries, in order, the shortened form itself (head…tail), a prefix, then a substring, and returns
the names matched at the first step that matches anything: one is the session, several are the candidates a
caller lists (an ambiguous name is a usage error that names them, never a guess).
"""

from __future__ import annotations

from collections.abc import Iterable

ELLIPSES = ("…", "...")  # the table's ellipsis, and what a keyboard without it gives


def _shortened(names: list[str], query: str) -> list[str]:
    for mark in ELLIPSES:
        if mark in query:
            head, _, tail = query.partition(mark)
            if head or tail:
                return [n for n in names if len(n) >= len(head) + len(tail) and n.startswith(head)
                        and n.endswith(tail)]
    return []


def loose_matches(names: Iterable[str], query: str) -> list[str]:
    """The names `query` names loosely: its shortened form, else a prefix, else a substring (case-sensitive, as
    file names are). Empty when nothing matches; several when the query is ambiguous."""
    pool = list(dict.fromkeys(names))
    if not query:
        return []
    for step in (_shortened(pool, query), [n for n in pool if n.startswith(query)],
                 [n for n in pool if query in n]):
        if step:
            return step
    return []


def candidates_text(query: str, names: list[str], what: str = "sessions", limit: int = 10) -> str:
    """`'default_177' matches 2 sessions: default_1773379549580, default_1773384423741` (at most `limit` names)."""
    shown = ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")
    return f"{query!r} matches {len(names)} {what}: {shown}; name one of them"
