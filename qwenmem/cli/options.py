"""Options shared by every command, defined once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

JsonFlag = Annotated[bool, typer.Option("--json", help="Print a versioned JSON document on stdout instead of tables.")]
DryRunFlag = Annotated[bool, typer.Option("--dry-run", "-n", help="Show what would change; write nothing.")]
WorkspaceOpt = Annotated[
    Optional[Path],
    typer.Option("--workspace", "-w", help="Workspace (agent dir) or QwenPaw root. Default: $QWENMEM_WORKSPACE, "
                 "then $QWENPAW_WORKING_DIR, $COPAW_WORKING_DIR, ~/.copaw, ~/.qwenpaw.", show_default=False),
]
AgentOpt = Annotated[Optional[str], typer.Option("--agent", help="Agent id under <root>/workspaces/ (config.json).")]
TokenizerOpt = Annotated[
    str, typer.Option("--tokenizer", help="Token counter: estimate (QwenPaw's bytes/divisor), o200k or cl100k.")]
QuietFlag = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success (for cron).")]
