"""issue 24 item 9 (the parts outside history.db): deep nesting in a message field, any JSON value in any key of
a 2.x session, and any front matter in a ReMe note give one line naming the file (or a normal answer), never an
internal error, and change no file."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
import string
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from helpers import SAMPLE, invoke, run_cli
from qwenpaw2_support import builder, copy_corpus, needs_gen2_corpus
from speed import examples

from qwenmem.core import reme_index, reme_notes


def _digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".qwenmem" not in p.parts}


def _nest(depth: int) -> str:
    return "[" * depth + '"leaf"' + "]" * depth


def _deep_in_first_message(session: Path, depth: int) -> None:
    """A field of the first message (its metadata) nested `depth` deep; the rest of the file as it was."""
    doc = json.loads(session.read_text(encoding="utf-8"))
    agent = doc["agent"]
    first = agent["state"]["context"][0] if "state" in agent else agent["memory"]["content"][0][0]
    first.setdefault("metadata", {})
    first["metadata"]["deep"] = "<<deep>>"
    session.write_text(json.dumps(doc, ensure_ascii=False).replace('"<<deep>>"', _nest(depth)), encoding="utf-8")


def _gen1_ws(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    shutil.copytree(SAMPLE, ws)
    return ws, ws / "sessions" / "console" / "default_1764235442381.json"


def _gen2_ws(tmp_path: Path) -> tuple[Path, Path]:
    ws = copy_corpus(tmp_path)
    return ws, ws / "sessions" / "console" / "alice_console--alice.json"


@pytest.mark.parametrize("make", [_gen1_ws, pytest.param(_gen2_ws, marks=needs_gen2_corpus)], ids=["1.x", "2.x"])
def test_a_message_field_nested_500_deep_is_checked(tmp_path, make):
    """It was `RecursionError` (copy.deepcopy takes two frames a level): json reads 500 levels, and so does
    QwenPaw, so qwenmem checks the file like any other."""
    ws, session = make(tmp_path)
    _deep_in_first_message(session, 500)
    before = _digest(ws)
    run = run_cli("-w", str(ws), "compact", "--check", "--all", "--json")
    assert run.code in (0, 1), run.stderr
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.stderr
    doc = run.json()
    rel = session.relative_to(ws / "sessions").with_suffix("").as_posix()
    assert any(rel in json.dumps(r) for r in doc["result"]["sessions"]), (rel, run.stdout[:2000])
    assert _digest(ws) == before


@pytest.mark.parametrize("make", [_gen1_ws, pytest.param(_gen2_ws, marks=needs_gen2_corpus)], ids=["1.x", "2.x"])
def test_nesting_too_deep_to_read_is_one_line_naming_the_file(tmp_path, make):
    ws, session = make(tmp_path)
    _deep_in_first_message(session, 50_000)
    before = _digest(ws)
    run = run_cli("-w", str(ws), "compact", "--check", "--all")
    assert run.code in (0, 1), run.stderr  # the other sessions are checked; this one is reported
    lines = [ln for ln in run.stderr.splitlines() if session.name in ln]
    assert len(lines) == 1 and "nested too deeply" in lines[0], run.stderr
    assert "Traceback" not in run.stderr
    assert _digest(ws) == before


# --- any JSON value in any key of a 2.x session ------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20) | st.sampled_from(["", "..", "../x", "user", "assistant", "tool_call", "text", "\x00"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
DEEP_MARK = "<<deep-500>>"


def _gen2_session() -> dict:
    clock = builder.Clock()
    return builder.document(builder.state("s2", builder.conversation(2, clock, tool_every=1)))


def _paths(obj, prefix=()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, prefix + (i,))
    return out


GEN2_DOC = _gen2_session()
GEN2_PATHS = _paths(GEN2_DOC)


def _gen2_workspace(root: Path, doc: dict) -> Path:
    ws = root / "ws"
    (ws / "sessions" / "console").mkdir(parents=True)
    builder.agent_json(ws)
    builder.write_chats(ws, [builder.chat("s2", "u2", "console")])
    text = builder.dumps(doc).replace(json.dumps(DEEP_MARK), _nest(500))
    (ws / "sessions" / "console" / builder.session_filename("s2", "u2")).write_text(text, encoding="utf-8")
    return ws


OPERATIONS = [("sessions", "list"), ("sessions", "show", "console/u2_s2"), ("sessions", "repair", "--check"),
              ("compact", "--check", "--all"), ("info",)]


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(path=st.sampled_from(GEN2_PATHS), value=json_values | st.just(DEEP_MARK))
def test_any_json_value_in_any_key_of_a_2x_session(tmp_path_factory, path, value):
    doc = copy.deepcopy(GEN2_DOC)
    holder = doc
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    ws = _gen2_workspace(tmp_path_factory.mktemp("g2"), doc)
    before = _digest(ws)
    for op in OPERATIONS:
        run = invoke("-w", str(ws), *op, "--json")
        assert "internal error" not in run.stderr and "Traceback" not in run.stderr, (path, value, op, run.stderr)
        if run.stdout.strip():
            out = json.loads(run.stdout)
            assert all(e.get("code") != "internal_error" for e in out.get("errors", [])), (path, op, out["errors"])
    assert _digest(ws) == before


# --- ReMe note front matter: any YAML, any value type, junk ------------------------------------------------------

yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20) | st.dates() | st.datetimes() | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)
KNOWN_KEYS = ["title", "name", "description", "tags", "tag", "date", "created", "session_id"]
front_keys = st.sampled_from(KNOWN_KEYS) | st.text(string.ascii_letters, min_size=1, max_size=8)


def _front(meta: dict) -> str:
    try:
        return yaml.safe_dump(meta, allow_unicode=True, sort_keys=False)
    except yaml.YAMLError:
        return yaml.safe_dump({"title": "x"})


junk_yaml = st.sampled_from([
    "title: [unclosed\n", "date: 2026-13-45\n", "*undefined_alias\n", "a: &x [*x]\n", "? [a, b]\n: c\n",
    "tags: !!python/object:os.system ls\n", "- a list\n- not a map\n", "\t bad: indent\n", "# only a comment\n",
    "title: " + "[" * 600 + "]" * 600 + "\n", "title: " + "{a: " * 300 + "1" + "}" * 300 + "\n",
    "k: v\n" * 5000, "\x00\x01\x02\n", "created: !!binary '@@@@'\n",
]) | st.text(max_size=200)


def _check_note(text: str) -> None:
    note = reme_notes.parse_note(text)
    if note.front_matter_lines == 0:
        assert note.body == text
    else:
        head = "".join(line + "\n" for line in text.split("\n")[:note.front_matter_lines])
        assert head + note.body == text  # nothing lost
    note.title, note.description, note.tags, note.date("memory/2026-01-02/x.md")  # noqa: B018
    view, meta = reme_index.index_view("memory/2026-01-02/x.md", text)
    assert view.count("\n") == text.count("\n")  # every line keeps its number
    json.dumps(meta)  # stored in the index manifest as JSON


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(front_keys, yaml_values, max_size=6), st.text(max_size=80))
def test_any_value_type_in_any_front_matter_field(meta, body):
    _check_note("---\n" + _front(meta) + "---\n" + body)


@settings(max_examples=300, deadline=None)
@given(junk_yaml, st.text(max_size=80), st.sampled_from(["---", "...", "--- ", "---\r"]))
def test_junk_front_matter_never_raises_and_loses_nothing(junk, body, fence):
    _check_note("---\n" + junk + ("" if junk.endswith("\n") else "\n") + fence + "\n" + body)


@needs_gen2_corpus
@settings(max_examples=examples(8), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(junk_yaml | st.dictionaries(front_keys, yaml_values, max_size=4).map(_front))
def test_commands_over_a_note_with_any_front_matter(tmp_path_factory, front):
    """reindex, search and a dry-run dream over a 2.x memory tree holding the note: no internal error, no change."""
    ws = copy_corpus(tmp_path_factory.mktemp("g2"))
    note = sorted((ws / "memory").rglob("*/*.md"))[0]
    note.write_text("---\n" + front + ("" if front.endswith("\n") else "\n") + "---\nThe deploy uses port 8443.\n",
                    encoding="utf-8")
    before = _digest(ws)
    for op in (("reindex", "--embedder", "none"), ("search", "8443"), ("dream", "--dry-run", "--no-embeddings")):
        run = invoke("-w", str(ws), *op, "--json")
        assert "internal error" not in run.stderr and "Traceback" not in run.stderr, (op, front[:200], run.stderr)
        assert run.code in (0, 1), (op, run.code, run.stderr)
    assert _digest(ws) == before
