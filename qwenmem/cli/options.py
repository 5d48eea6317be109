"""Options shared by every command, defined once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from qwenmem.cli.choices import Tokenizer
from qwenmem.cli.output import OutputFormat

FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="table (fitted to the terminal), tsv (tab-separated "
                                                 "rows, no header, for programs) or json (same as --json).")]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print a versioned JSON document on stdout instead of tables.")]
DryRunFlag = Annotated[bool, typer.Option("--dry-run", "-n", help="Show what would change; write nothing.")]
WorkspaceOpt = Annotated[
    Optional[Path],
    typer.Option("--workspace", "-w", help="Workspace (agent dir) or QwenPaw root. Default: $QWENMEM_WORKSPACE, "
                 "then $QWENPAW_WORKING_DIR, $COPAW_WORKING_DIR, ~/.copaw, ~/.qwenpaw.", show_default=False),
]
AgentOpt = Annotated[Optional[str], typer.Option("--agent", help="Agent id under <root>/workspaces/ (config.json).")]
TokenizerOpt = Annotated[
    Tokenizer, typer.Option("--tokenizer", help="Token counter: estimate (QwenPaw's bytes/divisor), o200k or cl100k.")]
QuietFlag = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success (for cron).")]

# The LLM endpoint, for every command that can use one (compact, dream); precedence in qwenmem/core/llm.py.
LLMBaseOpt = Annotated[Optional[str], typer.Option("--llm-base-url", help="OpenAI-compatible endpoint (else "
                                                   "$QWENMEM_LLM_BASE_URL, else QwenPaw's provider).")]
LLMModelOpt = Annotated[Optional[str], typer.Option("--llm-model", help="Model name (else $QWENMEM_LLM_MODEL).")]
LLMKeyOpt = Annotated[Optional[str], typer.Option("--llm-api-key", help="API key (else $QWENMEM_LLM_API_KEY, "
                                                  "$OPENAI_API_KEY).")]
LLMTimeoutOpt = Annotated[Optional[float], typer.Option("--llm-timeout", min=0.1, help="Seconds per LLM request "
                                                        "(default 60).")]
LLMRetriesOpt = Annotated[Optional[int], typer.Option("--llm-retries", min=0, help="Retries with exponential "
                                                      "backoff after a failed LLM request (default 2).")]
