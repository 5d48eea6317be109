"""Session identity: channel directories, flat legacy files, chats.json mapping and the ambiguous '_' split."""

import json

from qwenmem.core.sessions import chat_filename, iter_session_refs, sanitize_filename
from qwenmem.core.workspace import discover_workspace


def test_sanitize_matches_qwenpaw_rule():
    assert sanitize_filename("test:session") == "test--session"
    assert sanitize_filename('a\\b/c:d*e?f"g<h>i|j') == "a--b--c--d--e--f--g--h--i--j"
    assert chat_filename("1234", "discord:dm:1234") == "1234_discord--dm--1234.json"
    assert chat_filename("", "x:y") == "x--y.json"


def test_chats_json_settles_the_split(sample_ws):
    refs = {r.rel: r for r in iter_session_refs(discover_workspace(sample_ws, env={}))}
    discord = refs["sessions/discord/4821_discord--dm--4821.json"]
    assert (discord.user_id, discord.session_id, discord.channel, discord.source) == (
        "4821", "discord:dm:4821", "discord", "chats.json")
    legacy = refs["sessions/default_legacy_trip.json"]
    assert legacy.ambiguous and legacy.source == "filename (ambiguous)"
    assert ("default", "legacy_trip") in legacy.alternatives and ("default_legacy", "trip") in legacy.alternatives
    assert legacy.channel is None


def test_flat_file_with_channel_twin_is_marked_stale(sample_ws):
    src = sample_ws / "sessions" / "console" / "default_1764235442381.json"
    (sample_ws / "sessions" / src.name).write_bytes(src.read_bytes())
    refs = {r.rel: r for r in iter_session_refs(discover_workspace(sample_ws, env={}))}
    assert refs[f"sessions/{src.name}"].stale_flat_copy
    assert not refs[f"sessions/console/{src.name}"].stale_flat_copy


def test_ids_with_underscores_are_flagged(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sessions").mkdir(parents=True)
    (ws / "sessions" / "ou_975690183c044ff01e03b1d66fb98df9_6fb98df9.json").write_text("{}")
    (ws / "sessions" / "default_1773379549580.json").write_text("{}")
    refs = {r.path.name: r for r in iter_session_refs(discover_workspace(ws, env={}))}
    assert refs["ou_975690183c044ff01e03b1d66fb98df9_6fb98df9.json"].ambiguous
    plain = refs["default_1773379549580.json"]
    assert not plain.ambiguous and (plain.user_id, plain.session_id) == ("default", "1773379549580")


def test_chats_json_for_flat_legacy_file(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sessions").mkdir(parents=True)
    (ws / "sessions" / "ou_a_b_c.json").write_text("{}")
    (ws / "chats.json").write_text(json.dumps({"version": 1, "chats": [
        {"id": "1", "session_id": "b_c", "user_id": "ou_a", "channel": "feishu"}]}))
    ref = next(iter_session_refs(discover_workspace(ws, env={})))
    assert (ref.user_id, ref.session_id, ref.channel, ref.source) == ("ou_a", "b_c", "feishu", "chats.json")
