"""QwenPaw 2.x sessions: `{"agent": {"state": <AgentState>, "scroll": {…}?, "mode_state": {…}}}`
(spec qwenpaw2-workspace.md §2.2-2.3).

* Messages are AgentScope 2.0 `Msg` dicts in `state.context`, oldest first, stamped `created_at`.
* One assistant message holds a whole reply: text, `tool_call` and its `tool_result` blocks together.
* Under scroll, `context[0]` may be the synthetic `memory` placeholder (eviction index + continuation summary): it is
  flagged `synthetic` and is not transcript (spec §10, QwenPaw's `_is_scroll_memory_placeholder`).
* Native compaction keeps its rendered summary in `state.summary` (a string or a list of text/data blocks).
"""

from __future__ import annotations

from typing import Any, Final, TypedDict

from qwenmem.core.session_model._blocks import flatten_output, normalize_content
from qwenmem.core.session_model.codec import encode_document
from qwenmem.core.session_model.model import DATA, TEXT, Message, ScrollState, Session

GEN2: Final = "2.x"
SCROLL_MEMORY_TAG = "scroll_memory"
ROLES = ("user", "assistant", "system")
# AgentScope 2.0 validates blocks by role (agentscope/message/_base.py L32-47): QwenPaw refuses to load otherwise.
ALLOWED_BLOCKS = {"user": {TEXT, DATA}, "system": {TEXT}}


# ------------------------------------------------------------------------------------------- the document's keys
# Every other module reads and writes the 2.x document's key paths through these (issue 25): they take any JSON
# value and give back what is written there, so each caller keeps its own verdict for each JSON type.

SCROLL_KEY: Final = "scroll"
MODE_STATE_KEY: Final = "mode_state"
AGENT_TAIL_KEYS: Final = (SCROLL_KEY, MODE_STATE_KEY)  # what the agent holds beside `state` (spec §2.2)


def context_path(state_key: str = "state") -> tuple[str, str, str]:
    """Where the messages are, as a tolerant_json partial path (`state_key`: what the damaged file calls `state`)."""
    return ("agent", state_key, "context")


CONTEXT_PATH: Final = context_path()


def agent_value(doc: Any) -> dict[str, Any] | None:
    """The `agent` object of any JSON value, of either generation or none (None when it is not an object)."""
    agent = doc.get("agent") if isinstance(doc, dict) else None
    return agent if isinstance(agent, dict) else None


def agent_of(doc: Any) -> dict[str, Any] | None:
    """The agent of a 2.x document: an `agent` object that holds `state`; None for anything else."""
    agent = agent_value(doc)
    if agent is not None and "state" in agent:
        return agent
    return None


def has_agent_key(value: Any) -> bool:
    return isinstance(value, dict) and "agent" in value


def is_document(value: Any) -> bool:
    """A 2.x session document (`{"agent": {"state": …}}`), whatever `state` holds."""
    return agent_of(value) is not None


def agent_dict(doc: Any) -> dict[str, Any]:
    """agent_of for a document the caller knows is 2.x (TypeError otherwise, as indexing None raised before)."""
    agent = agent_of(doc)
    if agent is None:
        raise TypeError("not a QwenPaw 2.x session document (no agent.state)")
    return agent


def state_of(doc: Any) -> Any:
    """`agent.state` as written (any JSON type); None when there is none."""
    return state_in(agent_value(doc))


def state_in(agent: Any) -> Any:
    """`state` of an agent object as written; None when `agent` is not an object or has none."""
    return agent.get("state") if isinstance(agent, dict) else None


def context_in(state: Any, default: Any = None) -> Any:
    """`state.context` of an AgentState value as written; `default` when the key is absent, None when `state` is
    not an object."""
    return state.get("context", default) if isinstance(state, dict) else None


def context_of(doc: Any, default: Any = None) -> Any:
    """`agent.state.context` as written (context_in of state_of)."""
    return context_in(state_of(doc), default)


def scroll_of(doc: Any) -> Any:
    """`agent.scroll` as written (any JSON type); None when there is none."""
    agent = agent_value(doc)
    return agent.get("scroll") if agent is not None else None


def scroll_in(agent: dict[str, Any]) -> Any:
    """`scroll` of an agent object as written."""
    return agent.get("scroll")


def set_context(doc: dict[str, Any], context: list[Any]) -> None:
    """Writer: replace `agent.state.context` of a 2.x document whose state is an object (the caller checked)."""
    agent_dict(doc)["state"]["context"] = context


def set_context_in(state: dict[str, Any], context: list[Any]) -> None:
    state["context"] = context


def summary_in(state: Any, default: Any = None) -> Any:
    """`state.summary` of an AgentState value as written (a string, or a list of text/data blocks when valid);
    `default` when the key is absent or `state` is not an object."""
    return state.get("summary", default) if isinstance(state, dict) else default


def set_summary_in(state: dict[str, Any], summary: str) -> None:
    state["summary"] = summary


def ensure_scroll(doc: dict[str, Any]) -> dict[str, Any]:
    """`agent.scroll` of a 2.x document, added as `{}` at the end of the agent when it is missing."""
    scroll: dict[str, Any] = agent_dict(doc).setdefault("scroll", {})
    return scroll


def ensure_mode_state(doc: dict[str, Any]) -> None:
    """Add an empty `agent.mode_state` at the end of the agent when it is missing (AgentScope's default)."""
    agent_dict(doc).setdefault("mode_state", {})


def missing_tail_keys(doc: dict[str, Any]) -> list[str]:
    """Which of `scroll`, `mode_state` the agent of a 2.x document lacks."""
    agent = agent_dict(doc)
    return [k for k in AGENT_TAIL_KEYS if k not in agent]


def new_document(state: Any, scroll: dict[str, Any] | None = None) -> dict[str, Any]:
    """A 2.x document as QwenPaw writes a new one: state, then scroll (under the scroll strategy), then mode_state."""
    agent: dict[str, Any] = {"state": state}
    if scroll is not None:
        agent["scroll"] = scroll
    agent["mode_state"] = {}
    return {"agent": agent}


def state_with_context(context: Any, summary: Any = None) -> dict[str, Any]:
    """The smallest AgentState: `context` (and `summary` when given) only; AgentScope's defaults apply to the rest
    on load."""
    return {"context": context} if summary is None else {"summary": summary, "context": context}


def full_state(session_id: str, summary: Any, context: list[dict[str, Any]], reply_id: str) -> dict[str, Any]:
    """`AgentState().model_dump(mode="json")` with this session's values, keys in AgentScope's order (what a new
    2.x document holds once QwenPaw has saved it)."""
    return {"session_id": session_id, "summary": summary, "context": context,
            "reply_context": {"reply_id": reply_id, "cur_iter": 0, "structured_schema": None,
                              "structured_output": None},
            "permission_context": {"mode": "bypass", "working_directories": {}, "allow_rules": {}, "deny_rules": {},
                                   "ask_rules": {}},
            "tool_context": {"max_cache_files": 100, "max_cache_bytes": 25000.0, "read_file_cache": [],
                             "activated_groups": []},
            "tasks_context": {"tasks": []}, "middle_context": {}}


def renamed_to_state(agent: dict[str, Any], key: str) -> dict[str, Any]:
    """A copy of `agent` whose `key` is called `state` again (damage changed the key), in the same place."""
    return {("state" if k == key else k): v for k, v in agent.items()}


def document_of_agent(agent: dict[str, Any]) -> dict[str, Any]:
    return {"agent": agent}


def with_agent(value: dict[str, Any], agent: dict[str, Any]) -> dict[str, Any]:
    """`value` with its `agent` replaced by (or, when it has none, added as) `agent`, the other keys kept in order."""
    return dict(value, agent=agent)


def encode(doc: Any) -> bytes:
    """The 2.x writer: the bytes of a document as QwenPaw 2.x saves it (app/chats/session.py L296-301). Every
    production write of a 2.x session goes through here, then through fsio's atomic writer."""
    return encode_document(doc)


def is_placeholder(msg: dict[str, Any], synthetic_ids: set[str]) -> bool:
    if isinstance(msg.get("id"), str) and msg["id"] in synthetic_ids:
        return True
    metadata = msg.get("metadata")
    if isinstance(metadata, dict) and metadata.get("qwenpaw_tag") == SCROLL_MEMORY_TAG:
        return True
    if msg.get("role") != "user" or msg.get("name") != "memory":
        return False
    text = "\n".join(str(b.get("text") or "") for b in msg.get("content") or [] if isinstance(b, dict)
                     and b.get("type") == "text") if isinstance(msg.get("content"), list) else str(msg.get("content"))
    return text.lstrip().startswith("<system-info>") and "[context compressed]" in text


def read_message(msg: Any, index: int, synthetic_ids: set[str]) -> tuple[Message, list[str]]:
    if not isinstance(msg, dict):
        return Message(index, None, None, None, None, raw=msg), [f"message {index}: a {type(msg).__name__}, not an object"]
    problems = []
    role = msg.get("role")
    content = msg.get("content")
    if role not in ROLES:
        problems.append(f"message {index}: role {role!r} is not user/assistant/system")
    if not isinstance(content, list):
        problems.append(f"message {index}: content is not a list (AgentScope 2.0 rejects it)")
    blocks = normalize_content(content)
    allowed = ALLOWED_BLOCKS.get(role) if isinstance(role, str) else None
    if allowed is not None and isinstance(content, list):
        bad = sorted({b.original_type or b.type for b in blocks if b.type not in allowed})
        if bad:
            problems.append(f"message {index}: a {role} message may not hold {', '.join(bad)} blocks "
                            "(QwenPaw refuses to load this session)")
    raw_metadata = msg.get("metadata")
    metadata: dict[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
    created = msg.get("created_at")
    message = Message(index, None if msg.get("id") is None else str(msg.get("id")), role if isinstance(role, str) else None,
                      None if msg.get("name") is None else str(msg.get("name")),
                      None if created is None else str(created), blocks,
                      synthetic=is_placeholder(msg, synthetic_ids), metadata=metadata, raw=msg)
    return message, problems


def read_scroll(agent: dict[str, Any]) -> ScrollState | None:
    scroll = agent.get("scroll")
    if not isinstance(scroll, dict):
        return None
    ids = scroll.get("synthetic_ids")
    seq_by_id = scroll.get("seq_by_id")
    summary = scroll.get("continuation_summary")
    index = scroll.get("index")
    return ScrollState(scroll, summary if isinstance(summary, dict) else None, index if isinstance(index, dict) else None,
                       [str(i) for i in ids] if isinstance(ids, list) else [],
                       seq_by_id if isinstance(seq_by_id, dict) else {}, scroll.get("summary_update_failed") is True)


def summary_text(summary: Any) -> str:
    if isinstance(summary, str):
        return summary
    return flatten_output(summary) if isinstance(summary, list) else ""


def read(doc: dict[str, Any]) -> Session:
    """Read a 2.x document (the caller checked agent_of(doc) is not None). Never raises for bad content."""
    agent = agent_dict(doc)
    state = agent["state"]
    problems: list[str] = []
    if not isinstance(state, dict):
        return Session(GEN2, doc, "agent", [], problems=["agent.state is not an object"])
    scroll = read_scroll(agent)
    synthetic = set(scroll.synthetic_ids) if scroll else set()
    context = state.get("context")
    if context is None:
        context = []
    elif not isinstance(context, list):
        problems.append("agent.state.context is not a list")
        context = []
    messages = []
    for i, msg in enumerate(context):
        message, msg_problems = read_message(msg, i, synthetic)
        messages.append(message)
        problems.extend(msg_problems)
    summary = summary_text(summary_in(state))
    mode_state = agent.get("mode_state")
    sid = state.get("session_id")
    seq_by_id = scroll.seq_by_id if scroll else {}
    for m in messages:
        span = seq_by_id.get(m.id) if m.id else None
        if isinstance(span, list) and len(span) == 2 and all(type(v) is int for v in span):
            m.seq, m.seq_hi = span
    return Session(GEN2, doc, "agent", messages, summary=summary, summary_kind="native" if summary else "",
                   session_id=None if sid is None else str(sid), scroll=scroll,
                   mode_state=mode_state if isinstance(mode_state, dict) else None, problems=problems)


def set_messages(session: Session, msgs: list[Any]) -> Session:
    """Writer: replace state.context with raw Msg dicts and re-read; every other key is kept. Keeping the scroll
    bookkeeping consistent (synthetic_ids, persisted_*) is the caller's job (spec §10 "Writing a 2.x session")."""
    set_context(session.doc, msgs)
    return read(session.doc)


def set_summary(session: Session, summary: str) -> Session:
    set_summary_in(agent_dict(session.doc)["state"], summary)
    return read(session.doc)


def quick_problems(doc: dict[str, Any]) -> list[str]:
    """The problems read() would report, without building the model (sessions list runs this for every file)."""
    state = agent_dict(doc)["state"]
    if not isinstance(state, dict):
        return ["agent.state is not an object"]
    context = state.get("context")
    if context is None:
        return []
    if not isinstance(context, list):
        return ["agent.state.context is not a list"]
    problems = []
    for i, msg in enumerate(context):
        if type(msg) is not dict:
            problems.append(f"message {i}: a {type(msg).__name__}, not an object")
            continue
        role, content = msg.get("role"), msg.get("content")
        if role not in ROLES:
            problems.append(f"message {i}: role {role!r} is not user/assistant/system")
        if type(content) is not list:
            problems.append(f"message {i}: content is not a list (AgentScope 2.0 rejects it)")
            continue
        allowed = ALLOWED_BLOCKS.get(role) if isinstance(role, str) else None
        if allowed is not None:
            kinds = {(b.get("type") if type(b) is dict and isinstance(b.get("type"), str) else None) for b in content}
            kinds = {"data" if k in ("image", "audio", "video", "file") else k for k in kinds}
            if not kinds <= allowed:
                # the full reader names the blocks; rerun it for this rare case
                return read(doc).problems
    return problems


class QuickStats(TypedDict):
    messages: int  # transcript messages (scroll placeholders excluded)
    in_context: int
    first: str | None  # created_at of the first and last transcript message
    last: str | None
    summary: str
    continuation_summary: bool
    session_id: str | None
    context: list[Any]  # state.context as written


def quick_stats(doc: dict[str, Any]) -> QuickStats:
    """Counts for a listing row without building the model: transcript messages (placeholders excluded), context
    length, first/last created_at, the summary text, whether a continuation summary exists, the embedded session id."""
    agent = agent_dict(doc)
    state = agent["state"] if isinstance(agent["state"], dict) else {}
    raw_context = state.get("context")
    context: list[Any] = raw_context if isinstance(raw_context, list) else []
    scroll = agent.get("scroll") if isinstance(agent.get("scroll"), dict) else None
    ids = scroll.get("synthetic_ids") if scroll else None
    synthetic = {str(i) for i in ids} if isinstance(ids, list) else set()
    stamps, transcript = [], 0
    for msg in context:
        if type(msg) is not dict:
            transcript += 1  # not a message QwenPaw can load, but an entry of the context (read() counts it too)
            continue
        if is_placeholder(msg, synthetic):
            continue
        transcript += 1
        if msg.get("created_at"):
            stamps.append(str(msg["created_at"]))
    sid = state.get("session_id")
    return QuickStats(messages=transcript, in_context=len(context), first=stamps[0] if stamps else None,
                      last=stamps[-1] if stamps else None, summary=summary_text(state.get("summary")),
                      continuation_summary=bool(scroll and isinstance(scroll.get("continuation_summary"), dict)),
                      session_id=None if sid is None else str(sid), context=context)
