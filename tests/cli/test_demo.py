"""`qwenmem demo` as a new user meets it: readable at 100 columns, removes its copy unless --keep, and ends by
saying how to run qwenmem from a new shell."""

from __future__ import annotations

from rich.cells import cell_len

from helpers import run_cli

SESSION_KEYS = ("default_legacy_trip", "console/default_1764235442381", "discord/4821_discord--dm--4821",
                "telegram/77_telegram--77")


def test_demo_fits_100_columns_cleans_up_and_says_how_to_run_qwenmem(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    run = run_cli("demo", env={"COLUMNS": "100", "TMPDIR": str(tmp)}, timeout=600)
    assert run.code == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    # the first screen: a title, a four-line info (not a table of every setting), the rule of the first step;
    # then the listing, names on one line each
    listing_at = run.stdout.index("$ qwenmem sessions list")
    first_screen = run.stdout[:listing_at].splitlines()
    assert len(first_screen) <= 7, first_screen
    assert max(cell_len(line) for line in first_screen if not line.startswith("workspace")) <= 100, first_screen
    listing = run.stdout[listing_at:]
    listing = listing[:listing.index("\n\n")]
    assert max(cell_len(line) for line in listing.splitlines()) <= 100
    # (a message's own text, or a dream's quoted entry, is as long as it is; the demo's own lines are not)
    doctor = run.stdout[run.stdout.index("$ qwenmem doctor"):run.stdout.index("The demo copy is removed")]
    wrapped = [line for line in doctor.splitlines()[1:]
               if line and not line.startswith(("  ", "workspace ", "agent ")) and "need attention" not in line
               and "nothing needs attention" not in line]
    assert not wrapped, doctor
    for key in SESSION_KEYS:
        assert any(key in line for line in listing.splitlines()), f"{key} wrapped:\n{listing}"
    assert list(tmp.iterdir()) == []  # the temporary copy is gone
    tail = "\n".join(lines[-3:])
    assert ".venv/bin/qwenmem" in tail and "pipx install ." in tail and "--keep" in run.stdout


def test_python_m_qwenmem_works_from_the_folder_holding_a_clone_named_qwenmem(tmp_path):
    import os
    import subprocess
    import sys

    from helpers import REPO

    holder = tmp_path / "src"
    holder.mkdir()
    (holder / "qwenmem").symlink_to(REPO, target_is_directory=True)  # as `git clone … qwenmem` would leave it
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-m", "qwenmem", "--version"], cwd=holder, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("qwenmem "), proc.stderr


def test_demo_written_to_a_file_draws_rules_and_panels_at_80_columns(tmp_path):
    """issue 26: with stdout a file (no terminal, no COLUMNS), Rich's fallback made every rule and panel 240
    columns wide; tables take their natural width and no line is padded past its text."""
    import os
    import subprocess
    import sys

    from helpers import REPO

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = str(REPO)
    env["TMPDIR"] = str(tmp_path)
    out = tmp_path / "demo.txt"
    with open(out, "w", encoding="utf-8") as f:
        proc = subprocess.run([sys.executable, "-m", "qwenmem", "demo"], stdout=f, stderr=subprocess.PIPE, text=True,
                              env=env, stdin=subprocess.DEVNULL, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = out.read_text(encoding="utf-8").splitlines()
    drawn = [line for line in lines if any(ch in line for ch in "─━╭╰│")]
    assert len(drawn) >= 10  # the step rules and the panels are there
    assert max(cell_len(line) for line in drawn) <= 80, max(drawn, key=cell_len)
    # nothing padded or wrapped with a trailing space (a lone " " is a diff's context line for an empty line)
    assert not [line for line in lines if line != line.rstrip() and line.strip()]
