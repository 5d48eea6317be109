"""Ctrl-C during start-up (issue 24 §8): no traceback, whatever is being imported when it arrives.

Each case runs the real entry point (`python -m qwenmem`) in a fresh interpreter whose import system sends the process
a real SIGINT (or SIGTERM) the moment one given module starts to be imported: the first lines of the entry point,
the signal module's own dependencies, Typer, the command's modules. Then the same with real delays on a launcher's
clock, for several commands.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from helpers import REPO
from qwenpaw2_support import copy_corpus, needs_gen2_corpus

pytestmark = needs_gen2_corpus

# A meta-path finder that signals the process when `module` is first looked for, then steps aside.
SIGNAL_AT_IMPORT = textwrap.dedent("""
    import os, runpy, sys
    module, signum, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    class SignalAt:
        fired = False
        def find_spec(self, name, path=None, target=None):
            if name == module and not SignalAt.fired:
                SignalAt.fired = True
                os.kill(os.getpid(), signum)
            return None
    for loaded in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
        del sys.modules[loaded]  # imported by the interpreter's own start-up: look for it again
    sys.meta_path.insert(0, SignalAt())
    sys.argv = ["qwenmem", *argv]
    runpy.run_module("qwenmem", run_name="__main__", alter_sys=True)
""")

EARLY_MODULES = ["qwenmem.cli.entry", "qwenmem.cli.signals", "qwenmem.core.interrupts", "typing", "threading",
                 "qwenmem.cli.app", "typer", "qwenmem.cli.root", "qwenmem.cli.commands.history", "qwenmem.core.history.maintain",
                 "sqlite3"]


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    ws = copy_corpus(tmp_path_factory.mktemp("gen2"))
    (ws / "history.db.corrupt-20261130T101500").write_bytes((ws / "history.db").read_bytes())
    return ws


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), NO_COLOR="1")


def _sigint_as_a_terminal_gives_it() -> None:
    """In the child, before exec: a suite started in the background (`cmd &` in a script) ignores SIGINT, and
    qwenmem rightly keeps an ignored SIGINT, so the Ctrl-C cases would see 0 instead of 130."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("module", EARLY_MODULES)
@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_the_entry_point_imports_is_one_line(ws, module, signum, code):
    proc = subprocess.run([sys.executable, "-c", SIGNAL_AT_IMPORT, module, str(int(signum)), "-w", str(ws),
                           "history", "salvage"], capture_output=True, text=True, env=_env(), timeout=120,
                          stdin=subprocess.DEVNULL, preexec_fn=_sigint_as_a_terminal_gives_it)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not list((ws / ".qwenmem").glob("quarantine/*")) if (ws / ".qwenmem").exists() else True


COMMANDS = [["history", "salvage"], ["snapshot"], ["dream", "--mode", "deterministic", "--no-embeddings"],
            ["compact", "--all", "--check"], ["sessions", "list"], ["info"], ["reindex", "--embedder", "none"]]


def _spawn_held(args: list[str]) -> subprocess.Popen:
    """As a launcher that holds SIGINT until the program is ready (so the interpreter's own start-up, which no
    Python program can handle, is out of the picture): every later instant is qwenmem's."""
    def prepare() -> None:
        _sigint_as_a_terminal_gives_it()
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})

    return subprocess.Popen([sys.executable, "-m", "qwenmem", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=_env(), text=True, preexec_fn=prepare)


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_ctrl_c_at_early_instants_of_real_commands_is_one_line(ws, args):
    for delay in (0.05, 0.15, 0.3, 0.6):
        proc = _spawn_held(["-w", str(ws), *args])
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        if proc.returncode in (0, 1, 6):  # finished first
            continue
        assert "Traceback" not in err, (delay, err)
        assert proc.returncode == 130 and len(err.strip().splitlines()) == 1, (delay, proc.returncode, err)


def test_a_signal_raised_inside_a_class_body_still_ends_the_run_as_a_signal():
    """Python 3.11 wraps an exception from __set_name__ (a dataclass field's, as a lazy import defines it) in a
    RuntimeError: a Ctrl-C arriving there is still a Ctrl-C, not an internal error."""
    import signal as _signal

    from qwenmem.cli.runner import _reraise_signal
    from qwenmem.core.interrupts import Interrupted

    class Arrives:
        def __set_name__(self, owner, name):
            raise Interrupted(_signal.SIGTERM)

    try:
        type("Defined", (), {"field": Arrives()})
    except Exception as exc:  # noqa: BLE001 - whichever wrapper this Python uses
        caught = exc
    except Interrupted as exc:  # a Python that does not wrap it
        caught = exc
    if isinstance(caught, Interrupted):
        pytest.skip("this Python raises the signal from __set_name__ unwrapped")
    with pytest.raises(Interrupted) as raised:
        _reraise_signal(caught)
    assert raised.value.signum == _signal.SIGTERM
    _reraise_signal(RuntimeError("a plain error stays an error"))  # no exception
