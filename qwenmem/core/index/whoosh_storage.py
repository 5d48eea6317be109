"""Whoosh's file storage with qwenmem's publish steps (issue 24, item 6).

Whoosh writes its segment files in place and publishes each table of contents (`_MAIN_<n>.toc`) by renaming a
temporary over it, with no fsync at all: after a power cut, CURRENT could name a generation whose segments or
table of contents are empty. Here a TOC rename is a publish like any other (qwenmem.core.fsio): every file Whoosh
wrote in the directory so far (the segments, the TOC temporary; a forked writer's half too) is fsynced first, then
the rename, then the directory. store.publish fsyncs the whole generation again (cheap: nothing is dirty) before
CURRENT names it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from whoosh.filedb.filestore import FileStorage

from qwenmem.core.fsio import fsync_all, fsync_dir, make_dirs


class DurableFileStorage(FileStorage):  # type: ignore[misc]  # whoosh is untyped
    def create(self) -> "DurableFileStorage":
        make_dirs(self.folder)
        return self

    def rename_file(self, oldname: str, newname: str, safe: bool = False) -> None:
        folder = Path(self.folder)
        # the bytes and the names of everything written here so far (the folder itself: segments made in place)
        fsync_all([*(p for p in folder.iterdir() if p.is_file() and not p.is_symlink()), folder])
        super().rename_file(oldname, newname, safe=safe)
        fsync_dir(folder)


def create_index(directory: Path, schema: Any) -> Any:
    return DurableFileStorage(str(directory)).create().create_index(schema)


def open_index(directory: Path) -> Any:
    return DurableFileStorage(str(directory)).open_index()


__all__ = ["DurableFileStorage", "create_index", "open_index"]
