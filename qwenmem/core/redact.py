"""No configured secret in anything qwenmem prints or logs.

Every API key qwenmem is given (a provider's key, `embedding_model_config.api_key`, `$EMBEDDING_API_KEY`,
`$OPENAI_API_KEY`, `$QWENMEM_LLM_API_KEY`, `--llm-api-key`) is registered here when it is read. An endpoint's error
that echoes the key back ("Incorrect API key provided: sk-abc…"), a traceback under --debug, a log or change-log
line: all pass through `redact()`, which replaces each registered secret with QwenPaw's mask (`_mask_key`: the
first 5 characters, then one `*` per further character; a key of 5 characters or fewer is shown as it is, as
QwenPaw does). The CLI wraps stdout and stderr in `MaskingStream` for the whole run.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import traceback
from types import TracebackType
from typing import Any, Iterable, Iterator, Mapping, TextIO, cast

SECRET_ENV_VARS = ("EMBEDDING_API_KEY", "OPENAI_API_KEY", "QWENMEM_LLM_API_KEY")
SECRET_OPTIONS = ("--llm-api-key",)
_PLACEHOLDERS = {"sk-no-key", "none", "null", "EMPTY"}  # what we pass when there is no key: nothing to hide

# Process-wide on purpose: a secret stays masked in everything the process prints after it was read, whichever
# workspace or thread prints it (a fleet worker's later records included). Forgetting one is the danger, keeping it
# only masks more; the set is bounded by the keys configured.
_secrets: set[str] = set()
_lock = threading.Lock()


def mask_secret(value: str) -> str:
    """QwenPaw's _mask_key: keep the first 5 characters, replace the rest with `*`."""
    return value if len(value) <= 5 else value[:5] + "*" * (len(value) - 5)


def register(value: object) -> None:
    """Remember a secret (ignored: empty, placeholders, and keys QwenPaw's mask would not change)."""
    if not isinstance(value, str):
        return
    value = value.strip()
    if len(value) <= 5 or value in _PLACEHOLDERS or value.startswith("ENC:"):
        return
    with _lock:
        _secrets.add(value)


def register_from(env: Mapping[str, str], argv: Iterable[str] = ()) -> None:
    """The secrets known before anything is parsed: the environment's keys and `--llm-api-key` on the line."""
    for var in SECRET_ENV_VARS:
        register(env.get(var))
    args = list(argv)
    for i, arg in enumerate(args):
        for opt in SECRET_OPTIONS:
            if arg == opt and i + 1 < len(args):
                register(args[i + 1])
            elif arg.startswith(opt + "="):
                register(arg[len(opt) + 1:])


def forget_all() -> None:
    with _lock:
        _secrets.clear()


def redact(text: str) -> str:
    if not _secrets or not text:
        return text
    for secret in sorted(_secrets, key=len, reverse=True):  # a key that contains another is masked whole
        if secret in text:
            text = text.replace(secret, mask_secret(secret))
    return text


class MaskingStream:
    """A text stream that masks registered secrets in everything written through it (all else is delegated)."""

    def __init__(self, inner: TextIO):
        self._inner = inner

    def write(self, text: str) -> int:
        self._inner.write(redact(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # any attribute of a text stream: the inner one's
        return getattr(self._inner, name)


def _masking_excepthook(exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    """--debug lets a traceback through: it is printed masked too (the key can be in an exception's message)."""
    text = "".join(traceback.format_exception(exc_type, exc, tb))
    with contextlib.suppress(Exception):
        stream = sys.__stderr__ if sys.stderr is None else sys.stderr
        if stream is not None:
            stream.write(redact(text))


@contextlib.contextmanager
def masked_output(env: Mapping[str, str] | None = None, argv: Iterable[str] = ()) -> Iterator[None]:
    """For one CLI run: register the environment's and the command line's keys, and mask stdout, stderr and any
    uncaught traceback. The streams are put back afterwards."""
    register_from(os.environ if env is None else env, argv)
    out, err = sys.stdout, sys.stderr
    sys.excepthook = _masking_excepthook
    # a MaskingStream is a TextIO by delegation (__getattr__), which the checker cannot see
    sys.stdout, sys.stderr = cast(TextIO, MaskingStream(out)), cast(TextIO, MaskingStream(err))
    try:
        yield
    finally:
        if isinstance(sys.stdout, MaskingStream):
            sys.stdout = out
        if isinstance(sys.stderr, MaskingStream):
            sys.stderr = err
