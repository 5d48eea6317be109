"""Every domain error names its own envelope code and exit; the CLI and a fleet record read those words, and the
numbers are the CLI's (a fleet driver no longer rebuilds exceptions from their class names)."""

import typing

import pytest

from qwenmem.cli.errors import ExitCode, classify
from qwenmem.core import errors as E

# written out, not read from the code: a changed word or exit must change this table too
EXPECTED = {
    E.QwenmemError: ("error", 1),
    E.WorkspaceError: ("workspace_unavailable", 3),
    E.ConfigError: ("config_invalid", 3),
    E.UnsafePathError: ("unsafe_path", 2),
    E.NotFoundError: ("not_found", 2),
    E.AmbiguousError: ("ambiguous", 2),
    E.BusyError: ("busy", 4),
    E.ChangedUnderneathError: ("changed_underneath", 4),
    E.LLMError: ("llm_failed", 5),
    E.ValidationError: ("rejected", 5),
    E.UsageError: ("usage", 2),
    E.UnsafeLinkError: ("unsafe_link", 6),
    E.DiskFullError: ("disk_full", 7),
}


@pytest.mark.parametrize("cls", list(EXPECTED), ids=lambda c: c.__name__)
def test_each_error_names_its_code_and_exit(cls):
    exc = cls("/x", "bad") if cls is E.ConfigError else cls("bad")
    assert classify(exc) == (ExitCode(EXPECTED[cls][1]), EXPECTED[cls][0])


def test_every_error_class_of_core_is_in_the_table_and_declares_its_own_words():
    classes = {c for c in vars(E).values() if isinstance(c, type) and issubclass(c, E.QwenmemError)}
    assert classes == set(EXPECTED)
    for cls in classes:
        assert "code" in vars(cls) and "exit_as" in vars(cls), f"{cls.__name__} inherits its words"
    assert set(typing.get_args(E.ErrorCode)) == {code for code, _ in EXPECTED.values()}
    assert {ExitCode[name.upper()] for name in typing.get_args(E.ErrorExit)} == {ExitCode(n) for _, n in EXPECTED.values()}


def test_anything_else_is_an_internal_error():
    assert classify(RuntimeError("x")) == (ExitCode.PROBLEMS, "internal_error")


def test_a_fleet_record_of_a_caught_error_carries_its_words(tmp_path):
    from qwenmem.cli.commands.fleet import record_exit_code
    from qwenmem.core.events import Events
    from qwenmem.core.fleet.tasks import ERROR, _failed

    record = _failed(ERROR, E.ConfigError(tmp_path / "agent.json", "not JSON"), 0.1, Events())
    assert record["error"]["code"] == "config_invalid" and record["exit_as"] == "workspace"
    assert record_exit_code(record) == 3

