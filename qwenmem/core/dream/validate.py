"""Checks an LLM's proposed MEMORY.md before anything is written. Each failed check names itself in one line."""

from __future__ import annotations

from collections import Counter

from qwenmem.core.dream.changelog import ADDED, REMOVED, Change
from qwenmem.core.dream.markdown import parse
from qwenmem.core.dream.normalize import normalize
from qwenmem.core.dream.secrets import secrets_in
from qwenmem.core.errors import ValidationError


def _mask(secret: str) -> str:
    return secret[:4] + "…" if len(secret) > 4 else "…"


def _line_key(line: str) -> str:
    return normalize(line)


def check_rewrite(old_body: str, new_body: str, changes: list[Change], max_shrink: float = 0.5,
                  allow_shrink: bool = False) -> list[Change]:
    """Raise ValidationError if the rewrite is unsafe; return the changes completed with the duplicates qwenmem
    itself accounted for (lines the LLM dropped that still occur elsewhere in the new text)."""
    if not new_body.strip():
        raise ValidationError("rejected: the proposed MEMORY.md is empty")
    old_size, new_size = len(old_body.strip().encode()), len(new_body.strip().encode())
    if not allow_shrink and old_size and new_size < (1 - max_shrink) * old_size:
        raise ValidationError(f"rejected: the proposed MEMORY.md is {100 * (1 - new_size / old_size):.0f}% smaller "
                              f"than the current one (limit {100 * max_shrink:.0f}%; --allow-shrink or --max-shrink "
                              "to accept)")
    introduced = secrets_in(new_body) - secrets_in(old_body)
    if introduced:
        shown = ", ".join(sorted(_mask(s) for s in introduced)[:3])
        raise ValidationError(f"rejected: the proposed MEMORY.md introduces {len(introduced)} secret-looking "
                              f"value(s) not present before ({shown})")
    reported = [normalize(c.old or "") for c in changes if c.action != ADDED]
    old_doc, new_doc = parse(old_body), parse(new_body)
    new_titles = {normalize(h.title) for h in new_doc.headings}
    for h in old_doc.headings:
        key = normalize(h.title)
        if key and key not in new_titles and not any(key in r for r in reported):
            raise ValidationError(f"rejected: heading {'#' * h.level} {h.title!r} was dropped without a change entry")
    old_count = Counter(k for k in map(_line_key, old_body.splitlines()) if k)
    new_count = Counter(k for k in map(_line_key, new_body.splitlines()) if k)
    completed = list(changes)
    unaccounted = []
    originals: dict[str, str] = {}
    for line in old_body.splitlines():
        originals.setdefault(_line_key(line), line.strip())
    for key, count in old_count.items():
        if new_count[key] >= count:
            continue
        if any(key in r for r in reported):
            continue
        if new_count[key] >= 1:
            completed.append(Change(REMOVED, "duplicate line dropped by the LLM (the same text remains elsewhere)",
                                    old=originals[key]))
            continue
        unaccounted.append(originals[key])
    if unaccounted:
        sample = "; ".join(repr(u[:60]) for u in unaccounted[:3])
        raise ValidationError(f"rejected: {len(unaccounted)} removed line(s) are not accounted for in the LLM's "
                              f"change list, e.g. {sample}")
    return completed
