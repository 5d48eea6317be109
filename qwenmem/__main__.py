# First, with the C module only: a SIGINT / SIGTERM while the entry point is being found and imported is noted, and
# raised by qwenmem.cli.entry once its handlers are in place (one line, 130 / 143), never in the middle of an import.
import _signal

_noted: list[int] = []


def _note(signum: int, frame: object) -> None:
    _noted.append(signum)


for _signum in (_signal.SIGINT, _signal.SIGTERM):
    if _signal.getsignal(_signum) is not _signal.SIG_IGN:  # an ignored SIGINT (nohup, `&`) stays ignored
        _signal.signal(_signum, _note)

from qwenmem.cli.entry import main  # noqa: E402

main(noted=_noted)
