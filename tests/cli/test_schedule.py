"""`qwenmem schedule dream|doctor|snapshot` prints a crontab line that really runs under cron's bare environment
(`env -i PATH=/usr/bin:/bin`), and `doctor --quiet` says only what needs attention (issue 26, "Cron")."""

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from helpers import run_cli


def _cron_command(ws: Path, job: str, *extra: str) -> str:
    run = run_cli("-w", str(ws), "schedule", job, *extra)
    assert run.code == 0, run.stderr
    lines = [line for line in run.stdout.splitlines() if line and not line.startswith("#")]
    assert len(lines) == 1, run.stdout
    minute, hour, dom, month, dow, command = lines[0].split(None, 5)
    assert (dom, month, dow) == ("*", "*", "*") and minute.isdigit() and hour.isdigit()
    return command


def _under_cron(command: str, home: Path) -> subprocess.CompletedProcess:
    """What cron does: /bin/sh -c the line, with PATH=/usr/bin:/bin and nothing else of ours."""
    return subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", f"HOME={home}", "LOGNAME=cron", "SHELL=/bin/sh",
                           "/bin/sh", "-c", command], capture_output=True, text=True, cwd="/", timeout=300,
                          stdin=subprocess.DEVNULL)


def test_the_snapshot_line_runs_under_cron_and_takes_a_snapshot(sample_ws, tmp_path):
    command = _cron_command(sample_ws, "snapshot")
    executable = next(w for w in shlex.split(command) if not w.startswith("PYTHONPATH="))
    assert Path(executable).is_absolute() and os.access(executable, os.X_OK), command
    assert f"-w {sample_ws.resolve()}" in command
    ran = _under_cron(command, tmp_path)
    assert ran.returncode == 0, (command, ran.stderr)
    assert ran.stdout == ""  # --quiet: cron mails nothing when all went well
    listed = run_cli("-w", str(sample_ws), "snapshot", "list", "--json").json()["result"]
    assert len(listed["snapshots"]) == 1, listed


def test_the_dream_and_doctor_lines_run_under_cron(sample_ws, tmp_path):
    dream = _under_cron(_cron_command(sample_ws, "dream", "--at", "23:30"), tmp_path)
    assert dream.returncode == 0, dream.stderr
    assert "23:30" not in dream.stderr
    doctor = _under_cron(_cron_command(sample_ws, "doctor"), tmp_path)
    assert doctor.returncode in (0, 1), doctor.stderr  # never 127 "qwenmem: not found"
    assert "not found" not in doctor.stderr


def test_the_time_of_day_is_the_crontab_schedule_and_a_bad_one_is_refused(sample_ws):
    run = run_cli("-w", str(sample_ws), "schedule", "dream", "--at", "03:07")
    assert [line for line in run.stdout.splitlines() if not line.startswith("#")][0].startswith("7 3 * * * ")
    bad = run_cli("-w", str(sample_ws), "schedule", "dream", "--at", "25:00")
    assert bad.code == 2 and "HH:MM" in bad.stderr and bad.stdout == ""


def test_systemd_units_name_the_absolute_command_and_a_daily_timer(sample_ws):
    run = run_cli("-w", str(sample_ws), "schedule", "doctor", "--systemd")
    assert run.code == 0, run.stderr
    exec_start = next(line for line in run.stdout.splitlines() if line.startswith("ExecStart="))
    assert Path(exec_start.removeprefix("ExecStart=").split()[0]).is_absolute()
    assert "OnCalendar=*-*-* 08:00:00" in run.stdout and "[Install]" in run.stdout
    doc = run_cli("-w", str(sample_ws), "schedule", "doctor", "--json").json()
    assert doc["status"] == "ok" and doc["result"]["job"] == "doctor" and doc["result"]["hour"] == 8


def test_doctor_quiet_prints_nothing_when_all_is_well_and_only_the_attention_otherwise(sample_ws, tmp_path):
    full = run_cli("-w", str(sample_ws), "doctor")  # the sample holds one damaged session
    short = run_cli("-w", str(sample_ws), "doctor", "--quiet")
    assert full.code == short.code == 1
    assert "telegram/77_telegram--77" in short.stdout and "attention" in short.stdout
    assert "note " not in short.stdout and "  index " not in short.stdout, short.stdout
    assert len(short.stdout.splitlines()) < len(full.stdout.splitlines())
    (sample_ws / "sessions" / "telegram" / "77_telegram--77.json").unlink()
    well = run_cli("-w", str(sample_ws), "doctor", "--quiet")
    assert well.code == 0 and well.stdout == "" and well.stderr == "", (well.stdout, well.stderr)


@pytest.mark.parametrize("job", ["dream", "doctor", "snapshot"])
def test_every_job_prints_an_absolute_workspace(sample_ws, job):
    command = _cron_command(sample_ws, job)
    assert str(sample_ws.resolve()) in command
