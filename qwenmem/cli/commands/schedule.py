"""`qwenmem schedule dream|doctor|snapshot`: a ready crontab line (or a systemd user service and timer) that runs
under cron's bare environment (`PATH=/usr/bin:/bin`, no virtualenv): the absolute path of the qwenmem that is
running, and of the workspace. Prints only; installs nothing."""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from qwenmem.cli.choices import Job
from qwenmem.cli.context import open_workspace
from qwenmem.cli.options import AgentOpt, JsonFlag, WorkspaceOpt
from qwenmem.cli.result import CommandResult

#: the job's arguments after `qwenmem -w WS`, and its default time of day
JOBS: dict[str, tuple[list[str], str, str]] = {
    "dream": (["dream", "--quiet"], "04:00", "consolidate MEMORY.md with the day's log"),
    "doctor": (["doctor", "--quiet"], "08:00", "say what needs attention (prints only then; exit 1)"),
    "snapshot": (["snapshot", "--quiet"], "03:30", "back up memory/, digest/ and MEMORY.md"),
}
#: what qwenmem reads from the environment that a crontab does not have
ENV_VARS = ("QWENMEM_LLM_BASE_URL", "QWENMEM_LLM_MODEL", "QWENMEM_LLM_API_KEY", "OPENAI_API_KEY",
            "EMBEDDING_BASE_URL", "EMBEDDING_MODEL_NAME", "EMBEDDING_API_KEY", "QWENPAW_SECRET_DIR",
            "COPAW_SECRET_DIR")


def schedule(
    ctx: typer.Context,
    job: Annotated[Job, typer.Argument(help="What to run: dream, doctor or snapshot.")],
    at: Annotated[str, typer.Option("--at", help="Time of day, HH:MM (local time; default: dream 04:00, doctor "
                                    "08:00, snapshot 03:30).", show_default=False)] = "",
    systemd: Annotated[bool, typer.Option("--systemd", help="Print a systemd user service and timer instead of a "
                                          "crontab line.")] = False,
    json_out: JsonFlag = False,
    workspace: WorkspaceOpt = None,
    agent: AgentOpt = None,
) -> CommandResult:
    """Print a crontab line (or a systemd user service and timer) for a nightly job, with the absolute path of
    this qwenmem and of the workspace, so that it runs under cron's PATH=/usr/bin:/bin. Installs nothing.

    Examples:

      qwenmem schedule dream

      qwenmem -w ~/.qwenpaw schedule doctor --at 07:30

      (crontab -l; qwenmem schedule dream) | crontab -

      qwenmem schedule snapshot --systemd
    """
    from qwenmem.core.errors import UsageError

    hour, minute = _time_of_day(at or JOBS[job.value][1], UsageError)
    from qwenmem.cli.context import state

    st = state(ctx)
    ws = open_workspace(ctx, workspace, agent)  # a workspace that cannot be found fails here, not at 04:00
    named = workspace or st.workspace
    if job is Job.DOCTOR:  # doctor covers every agent of the root it is given (or the one --agent names)
        target = Path(named).expanduser() if named else (ws.root or ws.path)
        chosen_agent = agent or st.agent
        chosen: list[str] = ["--agent", chosen_agent] if chosen_agent else []
    else:
        target, chosen = ws.path, []
    argv = [*qwenmem_command(), "-w", str(Path(target).resolve()), *JOBS[job.value][0], *chosen]
    line = " ".join(shlex.quote(a) if not a.startswith("PYTHONPATH=") else a for a in argv)
    missing = [v for v in ENV_VARS if os.environ.get(v)]
    text = (_systemd(job.value, line, hour, minute) if systemd else _crontab(job.value, line, hour, minute))
    data = {"job": job.value, "command": line, "hour": hour, "minute": minute, "text": text}
    warnings = [f"{', '.join(missing)} set here but not under {'systemd' if systemd else 'cron'}: add them to the "
                f"{'unit (Environment=)' if systemd else 'crontab'} if the job needs them"] if missing else []
    return CommandResult(data, warnings=warnings, render=lambda: _print(text))


def _time_of_day(value: str, error: Any) -> tuple[int, int]:
    m = re.fullmatch(r"(\d{1,2}):(\d{2})", value.strip())
    if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise error(f"--at {value!r}: give a time of day as HH:MM, e.g. 04:00")
    return int(m.group(1)), int(m.group(2))


def qwenmem_command() -> list[str]:
    """How to start this qwenmem from anywhere: the `qwenmem` script that is running, else this interpreter with
    `-m qwenmem` (and PYTHONPATH when the package is not installed in it: a source checkout)."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name == "qwenmem" and script.is_file():
        return [str(script.absolute())]
    import qwenmem

    package_parent = Path(qwenmem.__file__).resolve().parent.parent
    python = str(Path(sys.executable).absolute())
    if _importable_without_help(python, package_parent):
        return [python, "-m", "qwenmem"]
    return [f"PYTHONPATH={shlex.quote(str(package_parent))}", python, "-m", "qwenmem"]


def _importable_without_help(python: str, package_parent: Path) -> bool:
    """Whether `python -m qwenmem` in an empty environment, from /, finds this very package."""
    import subprocess

    try:
        found = subprocess.run([python, "-c", "import qwenmem, os; print(os.path.dirname(os.path.dirname("
                                "os.path.realpath(qwenmem.__file__))))"], capture_output=True, text=True,
                               env={"PATH": "/usr/bin:/bin"}, cwd="/", timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return found.returncode == 0 and Path(found.stdout.strip()) == package_parent


def _crontab(job: str, line: str, hour: int, minute: int) -> str:
    return (f"# qwenmem {job}: {JOBS[job][2]}, daily at {hour:02d}:{minute:02d} (crontab -e, or append with "
            f"`(crontab -l; qwenmem schedule {job}) | crontab -`)\n{minute} {hour} * * * {line}\n")


def _systemd(job: str, line: str, hour: int, minute: int) -> str:
    unit = f"qwenmem-{job}"
    exec_start = line
    environment = ""
    if line.startswith("PYTHONPATH="):
        assignment, _, exec_start = line.partition(" ")
        environment = f"Environment={assignment}\n"
    return (f"# ~/.config/systemd/user/{unit}.service\n"
            f"[Unit]\nDescription=qwenmem {job}: {JOBS[job][2]}\n\n"
            f"[Service]\nType=oneshot\n{environment}ExecStart={exec_start}\n\n"
            f"# ~/.config/systemd/user/{unit}.timer\n"
            f"[Unit]\nDescription=qwenmem {job}, daily at {hour:02d}:{minute:02d}\n\n"
            f"[Timer]\nOnCalendar=*-*-* {hour:02d}:{minute:02d}:00\nPersistent=true\n\n"
            f"[Install]\nWantedBy=timers.target\n\n"
            f"# then: systemctl --user daemon-reload && systemctl --user enable --now {unit}.timer\n")


def _print(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
