"""How hard the heaviest property tests try. The default run (the fast set) takes a fifth of a test's examples; the
full run (--run-slow or QWENMEM_RUN_SLOW=1, as CI does) takes them all. Set by conftest before tests import."""
from __future__ import annotations

FULL_RUN = False


def examples(full: int) -> int:
    """`full` examples in the full run, a fifth (at least 10) in the default one."""
    return full if FULL_RUN else max(10, full // 5)
