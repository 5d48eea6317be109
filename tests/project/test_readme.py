"""The README's exit-code table and newcomer commands stay true."""

import re

from helpers import REPO
from qwenmem.cli.errors import EXIT_CODE_HELP, ExitCode

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_exit_code_table_matches_the_code():
    block = README.split("<!-- exit-codes")[1].split("<!-- /exit-codes -->")[0]
    rows = re.findall(r"^\| (\d+) \| (\w+) \| (.+) \|$", block, re.M)
    assert [(int(c), n, m) for c, n, m in rows] == [(int(c), c.name, EXIT_CODE_HELP[c]) for c in ExitCode]


def test_exactly_two_newcomer_commands_and_they_exist():
    block = README.split("## Try it")[1].split("```sh")[1].split("```")[0]
    commands = [ln.split("#")[0].strip() for ln in block.strip().splitlines()]
    assert commands == ["./scripts/demo.sh", "./scripts/test.sh"]
    for cmd in commands:
        assert (REPO / cmd).is_file()
    assert "scripts/test.sh" in (REPO / ".ci" / "run").read_text()
