"""Convert a 1.x session document to the 2.x shape exactly as QwenPaw 2.2.2.post1 loads it (pure, no file access).

QwenPaw's load of a 1.x file (spec qwenpaw2-workspace.md §2.6; `react_agent.py L438-454`,
`app/chats/utils.py parse_legacy_memory_state`, `_compat/message.py msg_from_dict`): a fresh `AgentState()`, whose
context is every `[msg, marks]` item's message (marks dropped, so messages 1.x marked "compressed" re-enter the
live context, §8.5) converted by `msg_from_dict`, and whose summary is `_compressed_summary`. The file written here
holds that state's `summary` and `context`; every other field is left to AgentScope's defaults, which is what the
conversion gives (a fresh `session_id`/`reply_id` on every load). Block ids and `created_at` are generated as
AgentScope does (uuid4 hex, naive local ISO time), because the converter generates them afresh on every load.
QwenPaw's load-time sanitizer (tool pairing, empty text blocks) runs the same way on the converted file as on the
1.x one, so it is not applied here: nothing is dropped by the conversion itself.
"""

from __future__ import annotations

import json
import mimetypes
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from qwenmem.core.repair.gen2 import rules
from qwenmem.core.session_model import gen1_doc, gen2

_MODALITY_DEFAULT_MIME = {"image": "image/*", "audio": "audio/*", "video": "video/*"}
# AgentScope 2.0 Msg fields, in model_dump order (message/_base.py); other top-level keys are dropped on load
MSG_FIELDS = ("name", "content", "role", "id", "metadata", "created_at", "usage", "finished_at", "finished_reason",
              "structured_output", "error")


class NotConvertible(ValueError):
    """QwenPaw's own load of this 1.x file fails (the converter or AgentState validation raises)."""


@dataclass
class Conversion:
    doc: dict[str, Any]
    messages: int = 0
    compressed: int = 0  # messages 1.x marked compressed: back in the live context
    summary_chars: int = 0
    actions: list[str] = field(default_factory=list)
    dropped_keys: dict[str, int] = field(default_factory=dict)  # top-level message keys AgentScope 2.0 drops


def _new_id() -> str:
    return uuid.uuid4().hex


def _now() -> str:
    return datetime.now().isoformat()


def _stamp(block: dict[str, Any]) -> dict[str, Any]:
    """The generated fields AgentScope adds to every block it validates."""
    block.setdefault("id", _new_id())
    block.setdefault("created_at", _now())
    block.setdefault("finished_at", None)
    return block


def ensure_url_scheme(url: str) -> str:
    """`file://` for an absolute local path, as QwenPaw's `_ensure_url_scheme` does (same machine, same result)."""
    if url.startswith(("/", "~")):
        resolved = str(Path(unquote(url)).expanduser().resolve())
    elif len(url) >= 3 and url[1] == ":" and url[2] in ("/", "\\"):
        resolved = str(Path(unquote(url)).resolve())
    elif url.startswith("\\\\"):
        resolved = unquote(url)
    else:
        return url
    resolved = resolved.replace("\\", "/")
    if resolved.startswith("//"):
        return "file://" + resolved.lstrip("/")
    return "file://" + (resolved if resolved.startswith("/") else "/" + resolved)


def _source(source: Any, modality: str) -> dict[str, Any]:
    if not isinstance(source, dict):
        raise NotConvertible(f"unsupported source for a 1.x {modality} block: {type(source).__name__}")
    kind = source.get("type")
    if kind == "url":
        url = ensure_url_scheme(str(source.get("url")))
        media = source.get("media_type") or mimetypes.guess_type(url)[0] or _MODALITY_DEFAULT_MIME.get(
            modality, "application/octet-stream")
        return {"type": "url", "url": url, "media_type": media}
    if kind == "base64":
        media = source.get("media_type") or _MODALITY_DEFAULT_MIME.get(modality, "application/octet-stream")
        return {"type": "base64", "data": source.get("data"), "media_type": media}
    raise NotConvertible(f"unknown source type {kind!r} in a 1.x {modality} block")


def file_as_text(block: dict[str, Any]) -> dict[str, Any]:
    """A 1.x file block as the text block QwenPaw puts in its place."""
    name = block.get("filename") or block.get("name") or ""
    source = block.get("source")
    if isinstance(source, dict):
        path = (source.get("url") or "") if source.get("type") == "url" else ""
    else:
        path = str(source) if source else ""
    name = name or (Path(path).name if path else "") or "file"
    return {"type": "text", "text": f"File '{name}' is available at: {path}" if path else f"File '{name}'"}


def _block(block: Any) -> Any:
    """`_coerce_block`, then the block as AgentScope 2.0 validates and dumps it."""
    if not isinstance(block, dict):
        return block
    kind = block.get("type")
    if kind in ("image", "audio", "video") and block.get("source") is not None:
        return _stamp({"type": "data", "id": _new_id(), "source": _source(block["source"], kind),
                       "name": block.get("name")})
    if kind == "tool_use":
        raw = block.get("input") or block.get("raw_input") or "{}"
        text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
        return _stamp({"type": "tool_call", "id": block.get("id", ""), "name": block.get("name", ""), "input": text,
                       "state": "pending", "suggested_rules": []})
    if kind == "file":
        return _stamp(file_as_text(block))
    return _validated_block(block)


def _validated_block(block: dict[str, Any]) -> Any:
    """A block of a 2.0 type with AgentScope's defaults filled and unknown keys dropped (thinking keeps them)."""
    kind = block.get("type")
    if kind == "text":
        return _stamp({"type": "text", "text": block.get("text"), **_kept(block, ("id", "created_at", "finished_at"))})
    if kind == "thinking":
        return _stamp(dict(block))
    if kind == "tool_result":
        output = block.get("output")
        if isinstance(output, list):
            output = [_block(b) for b in output]
        return _stamp({"type": "tool_result", "id": block.get("id"), "name": block.get("name"), "output": output,
                       "state": block.get("state", "running"), "metadata": block.get("metadata", {}),
                       **_kept(block, ("created_at", "finished_at"))})
    if kind == "data":
        return _stamp({"type": "data", **_kept(block, ("id",)), "source": block.get("source"),
                       "name": block.get("name"), **_kept(block, ("created_at", "finished_at"))})
    return block  # anything else fails validation below, as it does in QwenPaw


def _kept(block: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: block[k] for k in keys if k in block}


def convert_message(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`msg_from_dict` + `Msg.model_dump(mode="json")`: the message and the top-level keys dropped."""
    payload = dict(data)
    if "created_at" not in payload and "timestamp" in payload:
        payload["created_at"] = payload.pop("timestamp")
    else:
        payload.pop("timestamp", None)
    content = payload.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if isinstance(content, list):
        content = [_block(b) for b in content]
        payload["content"] = content
    role = payload.get("role")
    if isinstance(content, list) and role in ("system", "user"):
        allowed = rules.ALLOWED_BY_ROLE[role]
        if any(isinstance(b, dict) and b.get("type") is not None and b["type"] not in allowed for b in content):
            payload["role"] = "assistant"
    dropped = [k for k in payload if k not in MSG_FIELDS]
    if "name" not in payload:
        payload["name"] = payload.get("role") or "assistant"
    if payload.get("metadata") is None:
        payload["metadata"] = {}
    defaults: dict[str, Any] = {"id": _new_id(), "created_at": _now(), "usage": None, "finished_at": None,
                                "finished_reason": None, "structured_output": None, "error": None}
    msg = {k: payload[k] if k in payload else defaults[k] for k in MSG_FIELDS if k in payload or k in defaults}
    return msg, dropped


def convert_gen1(doc: dict[str, Any]) -> Conversion:
    """The 2.x document QwenPaw 2.x loads from this 1.x document ({"agent": {"memory": …}}). NotConvertible when
    QwenPaw's own load would fail."""
    memory = gen1_doc.memory_value(gen1_doc.agent_value(doc))
    if not isinstance(memory, dict):
        raise NotConvertible("no agent.memory object: QwenPaw 2.x does not convert this file")
    context: list[dict[str, Any]] = []
    compressed = 0
    dropped: dict[str, int] = {}
    for item in memory.get("content", []) or []:
        payload, marks = (item[0], item[1]) if isinstance(item, (list, tuple)) and len(item) == 2 else (item, [])
        if not isinstance(payload, dict):
            continue  # parse_legacy_memory_state skips it
        msg, gone = convert_message(payload)
        for key in gone:
            dropped[key] = dropped.get(key, 0) + 1
        compressed += isinstance(marks, list) and "compressed" in marks
        context.append(msg)
    summary = memory.get("_compressed_summary") or ""
    state = gen2.state_with_context(context, summary)
    problems = rules.state_violations(state)
    if problems:
        raise NotConvertible("QwenPaw 2.x cannot load it: " + "; ".join(map(str, problems[:3])))
    conv = Conversion(gen2.new_document(state), len(context), compressed,
                      len(summary) if isinstance(summary, str) else 0, dropped_keys=dropped)
    conv.actions.append(f"convert to the 2.x shape as QwenPaw 2.x loads it: {len(context)} message(s) into "
                        "agent.state.context" + (", the compressed summary into agent.state.summary" if summary else ""))
    if compressed:
        conv.actions.append(f"{compressed} message(s) marked compressed come back into the live context next to the "
                            "summary (QwenPaw 2.x drops the marks)")
    if dropped:
        conv.actions.append("message keys AgentScope 2.0 drops: " + ", ".join(f"{k} ({n})" for k, n in
                                                                             sorted(dropped.items())))
    return conv
