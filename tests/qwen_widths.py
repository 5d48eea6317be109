"""Checks shared by the width tests: kinsoku violations in captured output (a panel's borders stripped)."""

from qwenmem.cli.wrap import CLOSING, OPENING

CJK_CLOSING = {ch for ch in CLOSING if ord(ch) > 0x7F}
CJK_OPENING = {ch for ch in OPENING if ord(ch) > 0x7F}


def _body(line: str) -> str:
    return line.strip().strip("│").strip()


def kinsoku_violations(lines: list[str]) -> list[str]:
    """Lines that start with a CJK closing mark after a non-empty line, or end with a CJK opening mark before one."""
    bad = []
    bodies = [_body(line) for line in lines]
    for k, body in enumerate(bodies):
        if k and bodies[k - 1] and body[:1] in CJK_CLOSING:
            bad.append(lines[k])
        if k + 1 < len(bodies) and bodies[k + 1] and body[-1:] in CJK_OPENING:
            bad.append(lines[k])
    return bad
