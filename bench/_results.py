"""Benchmarks record their numbers in bench/RESULTS.md, each in its own marked section."""

from __future__ import annotations

import platform
import re
from datetime import datetime, timezone
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def machine() -> str:
    import os

    return f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores, {platform.machine()}"


def update_section(name: str, markdown: str) -> None:
    """Replace the text between <!-- BEGIN name --> and <!-- END name --> (appending the section if missing)."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body = f"<!-- BEGIN {name} -->\n{markdown.rstrip()}\n\n_Recorded {stamp} on {machine()}._\n<!-- END {name} -->"
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmark results\n"
    pattern = re.compile(rf"<!-- BEGIN {re.escape(name)} -->.*?<!-- END {re.escape(name)} -->", re.S)
    text = pattern.sub(lambda _: body, text) if pattern.search(text) else text.rstrip() + "\n\n" + body + "\n"
    RESULTS.write_text(text, encoding="utf-8")
