"""The completion scripts in real shells: bash, zsh and fish run in tmux (a real terminal), we type and press <TAB>,
and read the screen. `qwenmem` is a wrapper on PATH that runs this checkout.

Needs tmux, bash, zsh and fish (Debian packages; .ci/run installs them). Without one of them the tests for that
shell skip with the reason, except under CI (CI=true), where a missing shell is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from helpers import FIXTURE_ROOT, REPO

SHELLS = {
    # shell -> (command line that starts it with no user configuration, lines that load our script)
    "bash": (["bash", "--norc", "--noprofile"],
             ["bind 'set show-all-if-ambiguous on'", "bind 'set completion-query-items 0'",
              f"source {REPO / 'completions' / 'qwenmem.bash'}"]),
    "zsh": (["zsh", "-f"],
            [f"fpath=({REPO / 'completions'} $fpath)", "autoload -U compinit && compinit -u", "setopt nobeep"]),
    "fish": (["fish", "--no-config"], [f"source {REPO / 'completions' / 'qwenmem.fish'}"]),
}


def _missing(shell: str) -> str | None:
    for tool in ("tmux", shell):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install tmux zsh fish; .ci/run does)"
    return None


class Terminal:
    """One shell in a detached tmux session, 200 columns wide so that nothing wraps."""

    def __init__(self, shell: str, cwd: Path, bindir: Path):
        self.name = f"qwenmem-test-{uuid.uuid4().hex[:8]}"
        self.tmux = ["tmux", "-L", self.name]
        argv, setup = SHELLS[shell]
        env = {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "HOME": str(cwd), "TERM": "xterm-256color",
               "PS1": "$ ", "PROMPT": "$ ", "LANG": "C.UTF-8", "fish_greeting": ""}
        env_args = [f"{k}={v}" for k, v in env.items()]
        # a server of its own (-L): a shared default server that exits as another test closes its last session
        # makes a concurrent new-session fail (seen under pytest-xdist)
        subprocess.run([*self.tmux, "-f", "/dev/null", "new-session", "-d", "-s", self.name, "-x", "200", "-y",
                        "50", "-c", str(cwd), "env", "-i", *env_args, *argv], check=True)
        self.wait_for_prompt()
        for line in setup + ["clear"]:
            self.send(line, "Enter")
        time.sleep(0.5)
        self.wait_for_prompt()

    def send(self, *keys: str) -> None:
        for key in keys:
            literal = key not in ("Enter", "Tab", "C-c", "C-u")
            subprocess.run([*self.tmux, "send-keys", "-t", self.name, *(["-l"] if literal else []), key], check=True)

    def screen(self) -> str:
        return subprocess.run([*self.tmux, "capture-pane", "-p", "-t", self.name], capture_output=True, text=True,
                              check=True).stdout

    def wait_for_prompt(self, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(line.rstrip().endswith(("$", ">")) for line in self.screen().splitlines()):
                return
            time.sleep(0.1)

    def complete(self, line: str, *, expect: list[str], timeout: float = 20) -> str:
        """Type `line`, press <TAB>, wait until every expected text is on screen; return the screen."""
        self.send("C-c")
        time.sleep(0.2)
        self.send("clear", "Enter")
        time.sleep(0.3)
        self.send(line, "Tab")
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if all(e in screen for e in expect):
                time.sleep(0.3)  # let the shell finish drawing
                return self.screen()
            time.sleep(0.15)
        raise AssertionError(f"after {line!r}<TAB> expected {expect}, screen was:\n{screen}")

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


pytestmark = pytest.mark.slow  # a few seconds per shell start and per <TAB>; CI runs them (--run-slow)


@pytest.fixture(scope="module", params=sorted(SHELLS))
def term(request, tmp_path_factory):
    shell = request.param
    tmp_path = tmp_path_factory.mktemp(shell)
    reason = _missing(shell)
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must test {shell}: {reason}")
        pytest.skip(reason)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "qwenmem"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} -m qwenmem \"$@\"\n")
    wrapper.chmod(0o755)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "zzfile.txt").write_text("a file that must never be offered where no file is expected\n")
    t = Terminal(shell, cwd, bindir)
    t.shell = shell
    yield t
    t.close()


def _after(screen: str, line: str) -> str:
    """The screen from the typed line on (what the shell printed for this <TAB>)."""
    idx = screen.rfind(line[:20])
    return screen[idx:] if idx >= 0 else screen


def test_subcommand_then_its_subcommands(term):
    screen = term.complete("qwenmem sess", expect=["qwenmem sessions"])
    assert "qwenmem sessions" in screen


def test_after_sessions_show_it_offers_session_keys_not_subcommands(term):
    line = f"qwenmem -w {FIXTURE_ROOT} --agent default sessions show "
    screen = _after(term.complete(line, expect=["console/default_1772000000001", "telegram/7700112233"]), line)
    assert "restore" not in screen and "repair" not in screen


def test_sort_offers_its_values_and_inserts_no_dash(term):
    line = "qwenmem sessions list --sort "
    screen = term.complete(line, expect=["modified", "tokens", "health"])
    assert "--sort -" not in screen and "--json" not in _after(screen, line)


def test_completions_offers_the_three_shells_and_no_files(term):
    line = "qwenmem completions "
    screen = term.complete(line, expect=["bash", "fish", "zsh"])
    assert "zzfile" not in screen


def test_agent_ids_come_from_the_root(term):
    line = f"qwenmem -w {FIXTURE_ROOT} --agent "
    term.complete(line, expect=["coder", "default", "writer"])


def test_option_values_of_search_mode_and_compact_summarizer(term):
    term.complete("qwenmem search --mode ", expect=["hybrid", "text", "vector"])
    term.complete("qwenmem compact --summarizer ", expect=["extractive", "llm", "auto"])


def test_options_of_a_nested_command(term):
    term.complete("qwenmem sessions repair --fix", expect=["--fix-tool-pairs"])


def test_options_and_subcommands_come_with_their_descriptions_in_zsh_and_fish(term):
    """zsh and fish show each option's and subcommand's help beside it (bash completion can only list words)."""
    described = term.shell != "bash"
    line = "qwenmem sessions list --"
    screen = _after(term.complete(line, expect=["--json", "--sort"] + (
        ["Print a versioned JSON document"] if described else [])), line)
    assert ("Print a versioned JSON document" in screen) == described
    line = "qwenmem s"
    screen = _after(term.complete(line, expect=["sessions", "search", "snapshot"] + (
        ["List, show and repair session files"] if described else [])), line)
    assert ("List, show and repair session files" in screen) == described
