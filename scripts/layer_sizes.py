#!/usr/bin/env python3
"""Lines of qwenmem per layer of docs/ARCHITECTURE.md (core's layers, then the CLI's commands and plumbing), and the
largest functions: `python3 scripts/layer_sizes.py [--top N]`. Counts every line of each .py file."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORE = REPO / "qwenmem" / "core"
CLI = REPO / "qwenmem" / "cli"


def layers() -> dict[str, str]:
    """core unit -> 'N name', from the ```layers block."""
    block = re.search(r"```layers\n(.*?)```", (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8"), re.S)
    assert block, "docs/ARCHITECTURE.md has no layers block"
    out = {}
    for line in block.group(1).splitlines():
        head, _, units = line.partition(":")
        out.update({unit: head.strip() for unit in units.split()})
    return out


def part_of(path: Path, units: dict[str, str]) -> str:
    if path.is_relative_to(CORE):
        rel = path.relative_to(CORE).parts
        unit = rel[0].removesuffix(".py")
        return "core/__init__" if unit == "__init__" else f"core {units.get(unit, '(undeclared) ' + unit)}"
    if path.is_relative_to(CLI / "commands"):
        return "cli commands"
    return "cli plumbing" if path.is_relative_to(CLI) else "qwenmem (entry)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--top", type=int, default=5, help="how many of the largest functions to list")
    top = parser.parse_args().top
    units = layers()
    lines: dict[str, int] = {}
    functions: list[tuple[int, str]] = []
    for path in sorted((REPO / "qwenmem").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        part = part_of(path, units)
        lines[part] = lines.get(part, 0) + len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                functions.append((node.end_lineno - node.lineno + 1,
                                  f"{path.relative_to(REPO)}:{node.lineno} {node.name}"))
    for part in sorted(lines):
        print(f"{part:40} {lines[part]:7,}")
    print(f"{'total':40} {sum(lines.values()):7,}")
    for size, where in sorted(functions, reverse=True)[:top]:
        print(f"{size:4} lines  {where}")


if __name__ == "__main__":
    main()
