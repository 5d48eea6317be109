"""bench/_timing.py reports the measured process's own peak RSS, also when the bench process itself is large."""

import os
import sys

import pytest

from bench._timing import measure

MIB = 1 << 20


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss across fork+exec is Linux behaviour")
def test_peak_rss_is_the_childs_own_not_the_large_parents():
    ballast = b"\x01" * (300 * MIB)  # written, so resident: this process now peaks above 300 MiB
    # Forked straight from here, a tiny child reports this process's size (what the benches measured before):
    pid = os.fork()
    if pid == 0:
        os.execv(sys.executable, [sys.executable, "-c", "pass"])
    _, _, usage = os.wait4(pid, 0)
    assert usage.ru_maxrss * 1024 >= 300 * MIB
    # Through the launcher, the same tiny child is its own few MiB, and one that allocates 150 MiB is that size.
    tiny = measure([sys.executable, "-c", "pass"])
    big = measure([sys.executable, "-c", f"x = b'1' * {150 * MIB}"])
    assert tiny.code == big.code == 0
    assert tiny.peak_rss_mib < 60, tiny
    assert 150 <= big.peak_rss_mib < 220, big
    assert tiny.wall > 0 and tiny.cpu > 0
    del ballast


def test_exit_code_and_discarded_stdout_are_reported(capfd):
    run = measure([sys.executable, "-c", "import sys; print('noise'); sys.exit(3)"])
    assert run.code == 3
    assert "noise" not in capfd.readouterr().out
