"""`qwenmem fleet … -- COMMAND [ARGS]`: the command line after `--`, parsed by the single-workspace CLI's own command.

The words go through the Typer command `qwenmem COMMAND` is (the same flags, types, ranges, choices and the same
flag rules), then become the frozen options of the fleet operation (qwenmem/core/fleet/operations.py), by the
command's own `options_from` where it has one. A flag the command takes but fleet does not run is refused by name,
never dropped; -w/--agent are fleet's to choose, and
the output flags (--json, --format, --quiet) are taken and mean nothing: a fleet record is always JSON.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from qwenmem.core.errors import UsageError
from qwenmem.core.fleet.operations import OPERATIONS, Command

#: taken by every command, meaningless for a record (always JSON, written whatever --quiet says)
OUTPUT_PARAMS = frozenset({"json_out", "output_format", "quiet"})
#: the workspace is fleet's to choose: the paths before `--`
PLACE_PARAMS = frozenset({"workspace", "agent"})

Params = dict[str, Any]


@dataclass(frozen=True)
class Given:
    """The parsed flags, and which of them were on the command line (not defaults)."""

    params: Params
    typed: frozenset[str]
    spelling: dict[str, str]  # parameter name -> its first option string, for messages
    name: str

    def only(self, allowed: frozenset[str], why: str = "") -> None:
        extra = sorted(self.typed - allowed - OUTPUT_PARAMS)
        if extra:
            flags = ", ".join(self.spelling.get(p, p.upper()) for p in extra)
            raise UsageError(f"fleet -- {self.name}: {flags}: not run by fleet{why}; run it per workspace "
                             f"(qwenmem -w WS {self.name} …)")

    def refuse(self, refused: frozenset[str]) -> None:
        self.only(self.typed - refused)


def _compact(g: Given) -> Any:
    from qwenmem.cli.commands.compact import options_from

    return options_from(g.params)


def _repair(g: Given) -> Any:
    from qwenmem.cli.commands.sessions.repair import FLEET_PARAMS, repair_options

    options = repair_options(g.params)  # the command's flag rules first, then what fleet does not run
    g.only(FLEET_PARAMS)
    return options


def _reindex(g: Given) -> Any:
    from qwenmem.cli.commands.reindex import options_from

    return options_from(g.params)


def _dream(g: Given) -> Any:
    from qwenmem.cli.commands.dream import RESTORE_PARAMS, options_from
    from qwenmem.core.ops import dream

    dream.validate(g.params["backup"], g.params["restore_flag"])
    g.refuse(RESTORE_PARAMS | {"log_file"})  # a restore is a workspace's own undo; the log file is the run's
    return options_from(g.params)


def _history_check(g: Given) -> Any:
    from qwenmem.core.ops import history_check

    g.only(frozenset({"deep"}))
    return history_check.Options(deep=g.params["deep"])


def _doctor(g: Given) -> Any:
    from qwenmem.core.ops import doctor

    g.only(frozenset())
    return doctor.Options()


def _upgrade(g: Given) -> Any:
    from qwenmem.core.ops import upgrade

    g.only(frozenset({"strategy", "dry_run", "undo", "retention_days"}))
    p = g.params
    return upgrade.Options(strategy=p["strategy"].value, dry_run=p["dry_run"], undo=p["undo"],
                           retention_days=p["retention_days"])


#: fleet's commands: how each one's parsed flags become its operation's options
OPTIONS: dict[str, Callable[[Given], Any]] = {
    "doctor": _doctor, "sessions repair": _repair, "compact": _compact, "reindex": _reindex, "dream": _dream,
    "history check": _history_check, "upgrade": _upgrade,
}
assert set(OPTIONS) == set(OPERATIONS)


def parse_command(ctx: Any, words: list[str]) -> Command:
    """`sessions repair --check` as the operation and its options, parsed by `qwenmem sessions repair` itself
    under the fleet command's context `ctx` (its errors read `qwenmem fleet -- sessions repair …`)."""
    from typer._click.core import ParameterSource

    from qwenmem.cli.context import state

    for n in (2, 1):
        name = " ".join(words[:n])
        if len(words) >= n and name in OPERATIONS:
            break
    else:
        supported = "; ".join(op.usage for op in OPERATIONS.values())
        raise UsageError(f"fleet cannot run {' '.join(words) or 'nothing'!r}; it runs: {supported}")
    root = ctx.find_root()
    command = root.command
    for word in words[:n]:
        command = command.get_command(root, word)
    st = state(ctx)
    json_before = st.json  # the command's --json would turn fleet's own errors into an envelope
    try:
        sub = command.make_context(f"fleet -- {name}", list(words[n:]), parent=ctx.parent or ctx)
    finally:
        st.json = json_before
    typed = frozenset(p.name for p in command.params
                      if p.name and sub.get_parameter_source(p.name) is ParameterSource.COMMANDLINE)
    spelling = {p.name: (p.opts[0] if p.opts and p.opts[0].startswith("-") else p.name.upper())
                for p in command.params if p.name}
    if typed & PLACE_PARAMS:
        flags = ", ".join(spelling[p] for p in sorted(typed & PLACE_PARAMS))
        raise UsageError(f"fleet -- {name}: {flags}: fleet runs on the workspaces named before `--`")
    options = OPTIONS[name](Given(dict(sub.params), typed, spelling, name))
    return Command(name, tuple(words[n:]), options)

