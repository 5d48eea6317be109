"""On-disk layout of the index and its crash-safe generations.

    <ws>/.qwenmem/index/
        CURRENT                 name of the live generation, replaced atomically (the commit point)
        gen-<n>/manifest.json   format, chunker, embedder identity, per-file content hash and chunk count
        gen-<n>/chunks.json     [[chunk_id, path, start_line, end_line, text_hash], ...] in row order
        gen-<n>/vectors.npy     float16 piece vectors (rows), L2-normalised
        gen-<n>/owners.npy      int32 chunk row of each piece vector
        gen-<n>/fulltext/       Whoosh index (chunk text stored for snippets)

A reindex builds gen-<n+1> beside the live one and only then rewrites CURRENT, so a crash at any point leaves
the previous generation intact and in use. Only generation directories that CURRENT does not name are ever
deleted, and only inside index/ (everything there is rebuildable).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qwenmem.core import confine, modes
from qwenmem.core.fsio import atomic_write_bytes, fsync_all, make_dirs

if TYPE_CHECKING:  # pragma: no cover
    from qwenmem.core.workspace import Workspace

FORMAT = 1
POINTER = "CURRENT"


def index_dir(ws: "Workspace") -> Path:
    return confine.check(ws.data_dir / "index")  # Whoosh opens files itself: refuse a .qwenmem/ link out first


def lock_path(ws: "Workspace") -> Path:
    # Its own lock, not the workspace lock: `dream` holds that one while it calls reindex().
    return ws.data_dir / "index.lock"


def current_generation(ws: "Workspace") -> Path | None:
    pointer = index_dir(ws) / POINTER
    try:
        name = confine.read_text(pointer).strip()
    except OSError:
        return None
    gen = index_dir(ws) / name
    if not name.startswith("gen-") or "/" in name or not (gen / "manifest.json").is_file():
        return None
    return gen


def new_generation_dir(ws: "Workspace") -> Path:
    root = index_dir(ws)
    try:
        make_dirs(root)
    except OSError as exc:  # e.g. a plain file named index, or a read-only .qwenmem/
        from qwenmem.core.errors import WorkspaceError

        raise WorkspaceError(f"cannot create the index directory {root} ({exc.strerror or exc}); move whatever is "
                             "there aside and run `qwenmem reindex` again") from None
    numbers = [int(p.name[4:]) for p in root.glob("gen-*") if p.name[4:].isdigit()]
    gen = root / f"gen-{max(numbers, default=0) + 1:06d}"
    gen.mkdir()
    fsync_all([root])  # the generation's name, durable in index/ before anything is written into it
    return gen


def publish(ws: "Workspace", gen: Path) -> None:
    """Make `gen` the live generation (atomic), then drop every other generation."""
    modes.adopt_tree(index_dir(ws))  # Whoosh wrote its files itself: the workspace's owner, private modes
    # every file of the generation and every directory entry in it durable before CURRENT names it
    parts = [p for p in gen.rglob("*") if not p.is_symlink()]
    fsync_all(p for p in parts if p.is_file())
    fsync_all([gen, *(p for p in parts if p.is_dir())])
    atomic_write_bytes(index_dir(ws) / POINTER, (gen.name + "\n").encode())
    drop_stale_generations(ws)


def drop_stale_generations(ws: "Workspace") -> None:
    live = current_generation(ws)
    for gen in index_dir(ws).glob("gen-*"):
        if gen.is_dir() and gen != live:
            shutil.rmtree(gen, ignore_errors=True)


@dataclass
class Manifest:
    chunker: str
    embedder: dict[str, Any]  # {"backend": ..., "model": ..., "model_id": ..., "dim": ...}
    files: dict[str, dict[str, Any]] = field(default_factory=dict)  # path -> {sha256, size, mtime_ns, chunks, source}
    sources: list[str] = field(default_factory=lambda: ["memory"])
    recursive: bool = False
    vectors_missing: int = 0  # chunks left without vectors because the embedder failed; the next reindex adds them
    format: int = FORMAT
    built_at: str = ""

    def dump(self) -> bytes:
        return json.dumps(self.__dict__, ensure_ascii=False, indent=1, sort_keys=True).encode()

    @classmethod
    def load(cls, gen: Path) -> "Manifest | None":
        try:
            doc = json.loads(confine.read_text(gen / "manifest.json"))
            if doc.get("format") != FORMAT:
                return None
            return cls(**{k: doc[k] for k in cls.__dataclass_fields__ if k in doc})
        except (OSError, ValueError, TypeError):
            return None


def usable(gen: Path, manifest: "Manifest | None" = None) -> bool:
    """Whether every part of a generation loads and the parts agree: chunks.json parses, the full-text index has
    its table of contents, and an index built with a model has one owner per piece vector, both files whole.
    A generation that fails is rebuilt from the files (truncated by a full disk, or files deleted by hand).
    Runs before every search, so it reads only .npy headers (no numpy import: text search stays light)."""
    manifest = manifest or Manifest.load(gen)
    if manifest is None or not any((gen / "fulltext").glob("*.toc")):
        return False
    try:
        load_chunks(gen)
        if not (manifest.embedder or {}).get("model_id"):
            return True
        vectors, owners = npy_shape(gen / "vectors.npy"), npy_shape(gen / "owners.npy")
    except (OSError, ValueError, TypeError, SyntaxError):
        return False
    return (vectors is not None and owners is not None and len(vectors) == 2 and len(owners) == 1
            and vectors[0] == owners[0])


def npy_shape(path: Path) -> tuple[int, ...] | None:
    """The shape an .npy file declares, or None when the file is shorter or longer than that shape needs."""
    import ast

    with confine.open_binary(path) as fh:
        head = fh.read(12)
        if len(head) < 10 or head[:6] != b"\x93NUMPY":
            return None
        width = 2 if head[6] == 1 else 4
        header_len = int.from_bytes(head[8:8 + width], "little")
        fh.seek(8 + width)
        header = ast.literal_eval(fh.read(header_len).decode("latin-1"))
    shape = tuple(int(n) for n in header["shape"])
    itemsize = int(header["descr"][2:])  # '<f2', '<i4'
    count = 1
    for n in shape:
        count *= n
    return shape if path.stat().st_size == 8 + width + header_len + count * itemsize else None


@dataclass(frozen=True)  # shared by the load_chunks cache
class ChunkRow:
    id: str
    path: str
    start_line: int
    end_line: int
    hash: str


def load_chunks(gen: Path) -> list[ChunkRow]:
    """The chunk table, parsed once per process: a search checks the generation (usable) and then scores it, and a
    reindex reads the previous table twice. Keyed by size and mtime too, so a rebuilt table is never served stale."""
    path = gen / "chunks.json"
    st = path.stat()
    return list(_parsed_chunks(str(path), st.st_size, st.st_mtime_ns))


@lru_cache(maxsize=4)
def _parsed_chunks(path: str, size: int, mtime_ns: int) -> tuple[ChunkRow, ...]:
    return tuple(ChunkRow(*r) for r in json.loads(confine.read_text(path)))


def write_chunks(gen: Path, rows: list[ChunkRow]) -> None:
    data = json.dumps([[r.id, r.path, r.start_line, r.end_line, r.hash] for r in rows], ensure_ascii=False)
    (gen / "chunks.json").write_text(data, encoding="utf-8")


def load_vectors(gen: Path) -> tuple[Any, Any] | None:
    """(vectors float16 [pieces, dim], owners int32 [pieces]) or None when the index has no vectors."""
    import numpy as np

    vec_path, own_path = gen / "vectors.npy", gen / "owners.npy"
    if not vec_path.exists() or not own_path.exists():
        return None
    return np.load(vec_path, mmap_mode="r"), np.load(own_path)


def write_vectors(gen: Path, vectors: Any, owners: Any) -> None:
    import numpy as np

    np.save(gen / "vectors.npy", np.asarray(vectors, dtype=np.float16))
    np.save(gen / "owners.npy", np.asarray(owners, dtype=np.int32))
