"""`qwenmem completions bash|zsh|fish`: print a shell completion script, generated from the command tree by
qwenmem/cli/completion.py. No library operation: the script describes this CLI's commands, which core never sees."""

from __future__ import annotations

from typing import Annotated

import typer

from qwenmem.cli.choices import Shell


def completions(ctx: typer.Context, shell: Annotated[Shell, typer.Argument(help="The shell to complete in.")]) -> None:
    """Print a shell completion script: subcommands, options, option values, agent ids and session keys.

    Examples:

      qwenmem completions bash > ~/.local/share/bash-completion/completions/qwenmem

      qwenmem completions zsh > ~/.zfunc/_qwenmem    # with fpath+=(~/.zfunc) before compinit

      qwenmem completions fish > ~/.config/fish/completions/qwenmem.fish
    """
    import sys

    from qwenmem.cli.completion import generate

    sys.stdout.write(generate(shell.value, ctx.find_root().command))
