"""CoPaw / QwenPaw 1.x sessions: `{"agent": {"memory": {"content": [[msg, marks], …], "_compressed_summary"}, …}}`
(spec qwenpaw-workspace.md §2). QwenPaw's unit tests also write a bare `{"memory": …}`; both layouts are read.
"""

from __future__ import annotations

from typing import Any, Final

from qwenmem.core.session_model._blocks import normalize_content
from qwenmem.core.session_model.codec import encode_document
from qwenmem.core.session_model.model import Message, Session

GEN1: Final = "1.x"


def memory_holder(doc: Any) -> tuple[dict[str, Any], str] | None:
    """(the dict holding `memory`, layout) when `doc` is a 1.x session, else None."""
    if isinstance(doc, dict) and isinstance(doc.get("agent"), dict):
        mem = doc["agent"].get("memory")
        if isinstance(mem, dict) and isinstance(mem.get("content"), list) and "state" not in doc["agent"]:
            return doc["agent"], "agent"
        return None
    if isinstance(doc, dict) and isinstance(doc.get("memory"), dict) and isinstance(doc["memory"].get("content"), list):
        return doc, "memory"
    return None


def encode(doc: Any) -> bytes:
    """The 1.x writer: the bytes of a document as QwenPaw 1.x saves it (app/runner/session.py: one line,
    ensure_ascii=False, default separators). Every production write of a 1.x session goes through here, then through
    fsio's atomic writer. Lone surrogates raise UnicodeEncodeError: QwenPaw's own next save would truncate the file
    to 0 bytes, so callers replace them first (repair.encoding.replace_surrogates)."""
    return encode_document(doc)


def read_message(item: Any, index: int) -> Message:
    if isinstance(item, list) and len(item) == 2:
        msg, marks = item[0], item[1] if isinstance(item[1], list) else []
    else:
        msg, marks = item, None
    if not isinstance(msg, dict):
        return Message(index, None, None, None, None, raw=item, marks=marks)
    raw_metadata = msg.get("metadata")
    metadata: dict[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
    return Message(index, _opt(msg.get("id")), _opt(msg.get("role")), _opt(msg.get("name")),
                   _opt(msg.get("timestamp")), normalize_content(msg.get("content")),
                   compressed=bool(marks and "compressed" in marks), marks=marks, metadata=metadata, raw=item)


def _opt(value: Any) -> str | None:
    return None if value is None else str(value)


def read(doc: dict[str, Any]) -> Session:
    """Read a 1.x document (the caller checked memory_holder(doc) is not None)."""
    holder, layout = memory_holder(doc)  # type: ignore[misc]
    memory = holder["memory"]
    summary = memory.get("_compressed_summary")
    summary = summary if isinstance(summary, str) else ""
    messages = [read_message(item, i) for i, item in enumerate(memory["content"])]
    return Session(GEN1, doc, layout, messages, summary=summary, summary_kind="compressed_summary" if summary else "")


def set_messages(session: Session, items: list[Any]) -> Session:
    """Writer: replace memory.content with raw items ([msg, marks] pairs or bare messages) and re-read.
    Every other key of the document is kept as it was."""
    holder, _ = memory_holder(session.doc)  # type: ignore[misc]
    holder["memory"]["content"] = items
    return read(session.doc)


def set_summary(session: Session, summary: str) -> Session:
    holder, _ = memory_holder(session.doc)  # type: ignore[misc]
    holder["memory"]["_compressed_summary"] = summary
    return read(session.doc)
