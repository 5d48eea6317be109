"""Shell completion scripts generated from the command tree (the command: qwenmem/cli/commands/completions.py).

The scripts are static (no Python start-up per <TAB>) for subcommands, options and option values; only agent ids
and session keys are dynamic: they ask `qwenmem __complete agents|sessions [-w DIR] [--agent ID]`, which
qwenmem/cli/completion_words.py answers without importing Typer's command tree or any model code.
tests/cli/test_completions.py fails when completions/ drifts from the app; tests/cli/test_completions_shells.py drives
the three shells for real.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    import click

SHELLS = ("bash", "zsh", "fish")
COMPLETION_FILES = {"bash": "qwenmem.bash", "zsh": "_qwenmem", "fish": "qwenmem.fish"}

# What a value is completed with: a word list, or one of these kinds.
DIRS, FILES, AGENTS, SESSIONS, FREE = "@dirs", "@files", "@agents", "@sessions", "@free"
Values = str | list[str]  # one of those kinds, or the words themselves


def _value_kinds() -> dict[str, Values]:
    """Option (or "<command path>|option") -> its values, for options whose type is not a closed set. An option
    typed with an enum (qwenmem/cli/choices.py) completes to its choices; any other option not listed here takes
    a free value (nothing offered)."""
    from qwenmem.core.sessions import ROLES

    return {
        "--workspace": DIRS, "-w": DIRS, "--into": DIRS, "--log-file": FILES, "--from": FILES, "--agent": AGENTS,
        "--role": list(ROLES), "--sources": ["memory", "dialog", "sessions", "all"],
    }


def _choices(param: Any) -> list[str] | None:
    """The values of a parameter typed with an enum (a click Choice), in their declared order."""
    from enum import Enum

    choices = getattr(getattr(param, "type_descriptor", None), "choices", None)  # Typer's own parameters
    choices = choices or getattr(getattr(param, "type", None), "choices", None)  # a plain click Choice
    return [c.value if isinstance(c, Enum) else str(c) for c in choices] if choices else None


# positional arguments: command path -> what they are
_ARG_KINDS: dict[str, Values] = {
    "compact": SESSIONS, "sessions show": SESSIONS, "sessions repair": SESSIONS, "sessions restore": SESSIONS,
}


@dataclass
class Command:
    path: str
    subs: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)  # options that take no value
    values: dict[str, Values] = field(default_factory=dict)  # option -> word list or kind
    arg: Values | None = None  # what positional arguments complete to (None: no positional)
    nargs: int = 0  # how many positionals (-1: any number)
    helps: dict[str, str] = field(default_factory=dict)  # option or subcommand -> one-line description (zsh, fish)


def _one_line(text: str | None, limit: int = 70) -> str:
    """The first sentence of a help text, on one line, at most `limit` characters (what zsh and fish show)."""
    words = " ".join((text or "").split())
    first = words.split(". ")[0].rstrip(".")
    return first if len(first) <= limit else first[:limit - 1].rstrip() + "…"


def command_tree(root: Any) -> dict[str, Command]:
    """{'sessions list': Command(...), ...}: every visible command path of the click command `root`, with its
    options and their values."""
    kinds = _value_kinds()
    out: dict[str, Command] = {}

    def walk(cmd: click.Command, path: str) -> None:
        node = Command(path)
        for p in cmd.params:
            if p.param_type_name == "argument":
                node.arg = _choices(p) or _ARG_KINDS.get(path, FREE)
                node.nargs = -1 if p.nargs == -1 or node.nargs == -1 else node.nargs + p.nargs
                continue
            names = [o for o in list(p.opts) + list(getattr(p, "secondary_opts", []) or []) if o.startswith("-")]
            takes_value = not getattr(p, "is_flag", False) and not getattr(p, "count", False)
            for name in names:
                if takes_value and name in p.opts:
                    node.values[name] = _choices(p) or kinds.get(f"{path}|{name}", kinds.get(name, FREE))
                else:
                    node.flags.append(name)
                node.helps[name] = _one_line(getattr(p, "help", None))
        subs = getattr(cmd, "commands", None) or {}
        node.subs = sorted(name for name, sub in subs.items() if not getattr(sub, "hidden", False))
        for name in node.subs:
            node.helps[name] = _one_line(subs[name].get_short_help_str(limit=200))
        node.flags = sorted(set(node.flags))
        out[path] = node
        for name in node.subs:
            walk(subs[name], f"{path} {name}".strip())

    walk(root, "")
    return out


def generate(shell: str, root: Any) -> str:
    """The completion script for `shell` of the click command `root` (the app, reached through the click context
    by the command, or built by the caller: no import of the app here)."""
    tree = command_tree(root)
    if shell == "bash":
        return _bash(tree)
    if shell == "zsh":
        return _zsh(tree)
    if shell == "fish":
        return _fish(tree)
    raise typer.BadParameter(f"choose one of {', '.join(SHELLS)}")


def _kind_word(kind: Values) -> str:
    return " ".join(kind) if isinstance(kind, list) else str(kind)


def _options(node: Command) -> list[str]:
    return sorted(node.flags + list(node.values))


def _sh_cases(tree: dict[str, Command], pattern: str) -> str:
    """Shared by bash and zsh (both read POSIX-like `case`): one line per fact the scripts look up."""
    lines = []
    for path, node in sorted(tree.items()):
        if pattern == "subs" and node.subs:
            lines.append(f'        "{path}") echo "{" ".join(node.subs)}" ;;')
        elif pattern == "opts":
            lines.append(f'        "{path}") echo "{" ".join(_options(node))}" ;;')
        elif pattern == "values":
            for opt, kind in sorted(node.values.items()):
                lines.append(f'        "{path}|{opt}") echo "{_kind_word(kind)}" ;;')
        elif pattern == "args" and node.arg is not None:
            lines.append(f'        "{path}") echo "{node.nargs} {_kind_word(node.arg)}" ;;')
    return "\n".join(lines)


_SH_LOOKUPS = """_qwenmem_subs() {{
    case "$1" in
{subs}
    esac
}}
_qwenmem_opts() {{
    case "$1" in
{opts}
    esac
}}
# "<path>|<option>" -> its values (a word list, @dirs, @files, @agents, @sessions, @free); nothing for a flag
_qwenmem_values() {{
    case "$1" in
{values}
    esac
}}
# "<path>" -> "<how many positionals, -1 for any> <what they complete to>"
_qwenmem_args() {{
    case "$1" in
{args}
    esac
}}
"""


def _sh_lookups(tree: dict[str, Command]) -> str:
    return _SH_LOOKUPS.format(subs=_sh_cases(tree, "subs"), opts=_sh_cases(tree, "opts"),
                              values=_sh_cases(tree, "values"), args=_sh_cases(tree, "args"))


# The command line walk, shared in spirit by the three shells: find the command path (skipping option values),
# count positionals, collect -w/--agent for the dynamic look-ups, then decide what the current word is.
_BASH = r"""# bash completion for qwenmem (generated by `qwenmem completions bash`; do not edit)
{lookups}
_qwenmem() {{
    local cur prev qpath="" w i skip="" npos=0 vals
    local -a ctx=()
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${{COMP_WORDS[i]}}"
        if [[ -n $skip ]]; then skip=""; continue; fi
        case "$w" in
            -w|--workspace|--agent) ctx+=("$w" "${{COMP_WORDS[i+1]}}") ;;
        esac
        case "$w" in
            -*) [[ -n "$(_qwenmem_values "$qpath|$w")" ]] && skip=1; continue ;;
        esac
        if [[ " $(_qwenmem_subs "$qpath") " == *" $w "* ]]; then
            qpath="${{qpath:+$qpath }}$w"; npos=0
        else
            npos=$((npos + 1))
        fi
    done
    prev=""
    [[ $COMP_CWORD -gt 1 && -n $skip ]] && prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    if [[ -n $prev ]]; then
        vals="$(_qwenmem_values "$qpath|$prev")"
    elif [[ $cur == -* ]]; then
        vals="$(_qwenmem_opts "$qpath")"
    elif [[ -n "$(_qwenmem_subs "$qpath")" ]]; then
        vals="$(_qwenmem_subs "$qpath")"
    else
        local spec n
        spec="$(_qwenmem_args "$qpath")"
        n="${{spec%% *}}"
        if [[ -n $spec && ( $n == -1 || $npos -lt $n ) ]]; then vals="${{spec#* }}"; else vals="$(_qwenmem_opts "$qpath")"; fi
    fi
    case "$vals" in
        @dirs) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")) ;;
        @files) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")) ;;
        @sessions)  # qwenmem narrows (prefix, else the shortened form or a substring): no compgen filter
            COMPREPLY=($(command qwenmem __complete sessions "${{ctx[@]}}" --like "$cur" 2>/dev/null)) ;;
        @agents)
            COMPREPLY=($(compgen -W "$(command qwenmem __complete "${{vals#@}}" "${{ctx[@]}}" 2>/dev/null)" -- "$cur")) ;;
        @free) COMPREPLY=() ;;
        *) COMPREPLY=($(compgen -W "$vals" -- "$cur")) ;;
    esac
}}
complete -F _qwenmem qwenmem
"""


def _bash(tree: dict[str, Command]) -> str:
    return _BASH.format(lookups=_sh_lookups(tree))


# zsh: `words` and `path` are special arrays (the command line; $PATH), so no local may take those names.
_ZSH = r"""#compdef qwenmem
# zsh completion for qwenmem (generated by `qwenmem completions zsh`; do not edit)
{lookups}
_qwenmem() {{
    local cur qpath="" qw qprev="" skip="" npos=0 vals spec n i described=""
    local -a ctx reply_words
    cur="${{words[CURRENT]}}"
    for (( i = 2; i < CURRENT; i++ )); do
        qw="${{words[i]}}"
        if [[ -n $skip ]]; then skip=""; continue; fi
        case "$qw" in
            -w|--workspace|--agent) ctx+=("$qw" "${{words[i+1]}}") ;;
        esac
        if [[ $qw == -* ]]; then
            [[ -n "$(_qwenmem_values "$qpath|$qw")" ]] && skip=1 && qprev="$qw"
            continue
        fi
        if [[ " $(_qwenmem_subs "$qpath") " == *" $qw "* ]]; then
            qpath="${{qpath:+$qpath }}$qw"; npos=0
        else
            npos=$(( npos + 1 ))
        fi
    done
    if [[ -n $skip ]]; then
        vals="$(_qwenmem_values "$qpath|$qprev")"
    elif [[ $cur == -* ]]; then
        vals="$(_qwenmem_opts "$qpath")"; described="opts|$qpath"
    elif [[ -n "$(_qwenmem_subs "$qpath")" ]]; then
        vals="$(_qwenmem_subs "$qpath")"; described="subs|$qpath"
    else
        spec="$(_qwenmem_args "$qpath")"
        n="${{spec%% *}}"
        if [[ -n $spec && ( $n == -1 || $npos -lt $n ) ]]; then vals="${{spec#* }}"
        else vals="$(_qwenmem_opts "$qpath")"; described="opts|$qpath"; fi
    fi
    case "$vals" in
        @dirs) _files -/ ;;
        @files) _files ;;
        @sessions)  # qwenmem narrows (prefix, else the shortened form or a substring): -U keeps its words
            reply_words=(${{(f)"$(command qwenmem __complete sessions "${{ctx[@]}}" --like "$PREFIX" 2>/dev/null)"}})
            compadd -U -- "${{reply_words[@]}}" ;;
        @agents)
            reply_words=(${{(f)"$(command qwenmem __complete ${{vals#@}} "${{ctx[@]}}" 2>/dev/null)"}})
            compadd -- "${{reply_words[@]}}" ;;
        @free) return 1 ;;
        *)  # options and subcommands with their descriptions; option values as words
            if [[ -n $described ]]; then
                reply_words=(${{(f)"$(_qwenmem_described "$described")"}})
                _describe -t "${{described%%|*}}" "${{${{described%%|*}}/opts/option}}" reply_words
            else
                reply_words=(${{=vals}}); compadd -- "${{reply_words[@]}}"
            fi ;;
    esac
}}
if [[ "${{zsh_eval_context[-1]}}" == loadautofunc ]]; then
    _qwenmem "$@"
else
    compdef _qwenmem qwenmem
fi
"""


def _zsh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _zsh_described(tree: dict[str, Command]) -> str:
    """`_qwenmem_described "opts|<path>"` / `"subs|<path>"`: one "word:description" line each, for _describe."""
    lines = []
    for path, node in sorted(tree.items()):
        for kind, words in (("opts", _options(node)), ("subs", node.subs)):
            if words:
                entries = " ".join(_zsh_quote(f"{w}:{node.helps.get(w, '')}".rstrip(":")) for w in words)
                lines.append(f'        "{kind}|{path}") printf "%s\\n" {entries} ;;')
    return "_qwenmem_described() {\n    case \"$1\" in\n" + "\n".join(lines) + "\n    esac\n}\n"


def _zsh(tree: dict[str, Command]) -> str:
    return _ZSH.format(lookups=_sh_lookups(tree) + _zsh_described(tree))


_FISH_HEAD = r"""# fish completion for qwenmem (generated by `qwenmem completions fish`; do not edit)
function __qwenmem_subs
    switch "$argv[1]"
{subs}
    end
end
function __qwenmem_takes_value
    switch "$argv[1]"
{values}
            return 0
    end
    return 1
end
function __qwenmem_args
    switch "$argv[1]"
{args}
    end
end
# the command path of the line so far ("", "sessions", "sessions show", ...), option values skipped
function __qwenmem_path
    set -l qpath ""
    set -l skip 0
    for w in (commandline -opc)[2..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        if string match -q -- '-*' $w
            __qwenmem_takes_value "$qpath|$w"; and set skip 1
            continue
        end
        if contains -- $w (__qwenmem_subs "$qpath")
            set qpath (string trim -- "$qpath $w")
        end
    end
    echo $qpath
end
function __qwenmem_path_is
    test (__qwenmem_path) = "$argv[1]"
end
# true while the positionals of the current command still take a value of their own
function __qwenmem_wants_arg
    set -l qpath (__qwenmem_path)
    test "$qpath" = "$argv[1]"; or return 1
    set -l n (__qwenmem_args "$qpath")
    test -n "$n"; or return 1
    test $n = -1; and return 0
    set -l npos 0
    set -l skip 0
    set -l seen ""
    for w in (commandline -opc)[2..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        if string match -q -- '-*' $w
            __qwenmem_takes_value "$seen|$w"; and set skip 1
            continue
        end
        if contains -- $w (__qwenmem_subs "$seen")
            set seen (string trim -- "$seen $w")
        else if test "$seen" = "$qpath"
            set npos (math $npos + 1)
        end
    end
    test $npos -lt $n
end
function __qwenmem_dynamic
    set -l ctx
    set -l tokens (commandline -opc)
    for i in (seq 2 (count $tokens))
        switch $tokens[$i]
            case -w --workspace --agent
                set -l j (math $i + 1)
                test $j -le (count $tokens); and set -a ctx $tokens[$i] $tokens[$j]
        end
    end
    command qwenmem __complete $argv[1] $ctx --like (commandline -ct) 2>/dev/null
end
complete -c qwenmem -f
"""


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_option(path: str, opt: str, kind: Values | None, help_text: str = "") -> str:
    flag = f"-l {opt[2:]}" if opt.startswith("--") else f"-s {opt[1:]}"
    head = f"complete -c qwenmem -n '__qwenmem_path_is \"{path}\"' {flag}"
    if help_text:
        head += f" -d {_fish_quote(help_text)}"
    if kind is None:
        return head
    if kind == DIRS:
        return f"{head} -x -a '(__fish_complete_directories)'"
    if kind == FILES:
        return f"{head} -r -F"
    if kind in (AGENTS, SESSIONS):
        return f"{head} -x -a '(__qwenmem_dynamic {kind[1:]})'"
    if kind == FREE:
        return f"{head} -x"
    return f"{head} -x -a '{_kind_word(kind)}'"


def _fish(tree: dict[str, Command]) -> str:
    subs = "\n".join(f'        case "{p}"\n            printf "%s\\n" {" ".join(n.subs)}'
                     for p, n in sorted(tree.items()) if n.subs)
    values = "\n".join(f'        case "{p}|{o}"' for p, n in sorted(tree.items()) for o in sorted(n.values))
    args = "\n".join(f'        case "{p}"\n            echo {n.nargs}' for p, n in sorted(tree.items())
                     if n.arg is not None)
    lines = [_FISH_HEAD.format(subs=subs, values=values, args=args).rstrip("\n")]
    for path, node in sorted(tree.items()):
        cond = f"'__qwenmem_path_is \"{path}\"'"
        for sub in node.subs:
            described = f" -d {_fish_quote(node.helps[sub])}" if node.helps.get(sub) else ""
            lines.append(f"complete -c qwenmem -n {cond} -a '{sub}'{described}")
        for opt in node.flags:
            lines.append(_fish_option(path, opt, None, node.helps.get(opt, "")))
        for opt, kind in sorted(node.values.items()):
            lines.append(_fish_option(path, opt, kind, node.helps.get(opt, "")))
        if node.arg is not None and node.arg != FREE:
            cond = f"'__qwenmem_wants_arg \"{path}\"'"
            if node.arg in (AGENTS, SESSIONS):
                lines.append(f"complete -c qwenmem -n {cond} -a '(__qwenmem_dynamic {node.arg[1:]})'")
            else:
                lines.append(f"complete -c qwenmem -n {cond} -a '{_kind_word(node.arg)}'")
    return "\n".join(lines) + "\n"
