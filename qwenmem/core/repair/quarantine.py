"""Quarantine runs: <workspace>/.qwenmem/quarantine/<run>/ holds original bytes, alternatives and a manifest.

qwenmem never deletes anything under quarantine/. The manifest is rewritten (atomically) after every file, so a
run that dies half-way still describes what it did.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, is_dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from qwenmem.core import confine
from qwenmem.core.errors import WorkspaceError
from qwenmem.core.fsio import atomic_write_bytes, timestamp_slug
from qwenmem.core.workspace import Workspace

MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
AREA = "quarantine"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _plain(obj: Any) -> Any:
    if is_dataclass(obj) and not isinstance(obj, type):
        return asdict(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(type(obj).__name__)


QuarantineKind = Literal["repair", "restore"]  # the run that kept the originals (RunInfo.kind reads it back)


@dataclass
class QuarantineRun:
    ws: Workspace
    kind: QuarantineKind
    run_id: str = field(default_factory=timestamp_slug)
    entries: list[dict[str, Any]] = field(default_factory=list)
    created: str = field(default_factory=lambda: datetime.now().astimezone().isoformat(timespec="seconds"))

    @property
    def directory(self) -> Path:
        return self.ws.data_dir / AREA / self.run_id

    def save_extra(self, rel: str, name: str, text: str) -> str:
        """Keep a piece of text that is not going back into the session (an alternative document, stray bytes)."""
        dest = self.directory / "alternatives" / f"{rel}.{name}"
        atomic_write_bytes(dest, text.encode("utf-8", "surrogatepass"))
        return dest.relative_to(self.directory).as_posix()

    def record(self, entry: dict[str, Any]) -> None:
        self.entries.append(entry)
        self.write_manifest()

    def write_manifest(self) -> None:
        doc = {"qwenmem_quarantine": MANIFEST_VERSION, "run": self.run_id, "kind": self.kind, "created": self.created,
               "workspace": str(self.ws.path), "files": self.entries}
        data = json.dumps(doc, ensure_ascii=False, indent=2, default=_plain).encode("utf-8", "surrogatepass")
        atomic_write_bytes(self.directory / MANIFEST, data)


@dataclass
class RunInfo:
    run_id: str
    kind: str
    created: str
    files: list[str]  # workspace-relative paths of the originals kept in this run
    path: str


def list_runs(ws: Workspace) -> list[RunInfo]:
    base = ws.data_dir / AREA
    if not base.is_dir():
        return []
    runs = []
    for d in sorted(p for p in base.iterdir() if p.is_dir()):
        manifest = read_manifest(d)
        files = sorted(originals_in_run(d, manifest))
        if manifest is not None:
            runs.append(RunInfo(d.name, str(manifest.get("kind", "?")), str(manifest.get("created", "")), files,
                                ws.relative(d)))
        else:
            runs.append(RunInfo(d.name, "unknown (no manifest)", "", files, ws.relative(d)))
    return runs


def originals_in_run(run_dir: Path, manifest: dict[str, Any] | None = None) -> dict[str, Path]:
    """{workspace-relative path: kept original} for one run. The manifest names them, but an original is copied
    aside before its entry is recorded, so a run killed in between holds a file the manifest does not mention:
    such files count too (restore must never lose track of kept bytes)."""
    manifest = manifest if manifest is not None else read_manifest(run_dir)
    listed = {e["path"]: run_dir / e["original"] for e in (manifest or {}).get("files", [])
              if isinstance(e, dict) and e.get("original")}
    claimed = {p.resolve() for p in listed.values()}
    for f in run_dir.rglob("*"):
        rel = f.relative_to(run_dir).as_posix()
        if (f.is_file() and rel != MANIFEST and not rel.startswith("alternatives/") and not rel.endswith(".qwenmem-tmp")
                and f.resolve() not in claimed):
            listed.setdefault(rel, f)
    return listed


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(confine.read_bytes(run_dir / MANIFEST).decode("utf-8", "surrogatepass"))
    except (OSError, ValueError, WorkspaceError):
        return None
    return doc if isinstance(doc, dict) else None
