"""Workspace discovery precedence: --workspace > $QWENMEM_WORKSPACE > QwenPaw's root rules; --agent via config.json."""

import json
from pathlib import Path

import pytest

from qwenmem.core.errors import ConfigError, UnsafePathError, WorkspaceError
from qwenmem.core.workspace import discover_workspace, resolve_inside


def make_ws(path: Path) -> Path:
    (path / "sessions").mkdir(parents=True)
    return path


def test_flag_beats_env(tmp_path):
    a, b = make_ws(tmp_path / "a"), make_ws(tmp_path / "b")
    ws = discover_workspace(a, env={"QWENMEM_WORKSPACE": str(b), "QWENPAW_WORKING_DIR": str(b)}, home=tmp_path)
    assert ws.path == a.resolve() and ws.source == "--workspace"


def test_qwenmem_env_beats_qwenpaw_env(tmp_path):
    a, b = make_ws(tmp_path / "a"), make_ws(tmp_path / "b")
    ws = discover_workspace(env={"QWENMEM_WORKSPACE": str(a), "QWENPAW_WORKING_DIR": str(b)}, home=tmp_path)
    assert ws.path == a.resolve() and ws.source == "$QWENMEM_WORKSPACE"


def test_qwenpaw_env_beats_legacy_copaw_env(tmp_path):
    a, b = make_ws(tmp_path / "a"), make_ws(tmp_path / "b")
    ws = discover_workspace(env={"QWENPAW_WORKING_DIR": str(a), "COPAW_WORKING_DIR": str(b)}, home=tmp_path)
    assert ws.path == a.resolve()
    ws = discover_workspace(env={"COPAW_WORKING_DIR": str(b)}, home=tmp_path)
    assert ws.path == b.resolve()


def test_home_copaw_beats_qwenpaw_when_it_exists(tmp_path):
    make_ws(tmp_path / ".qwenpaw")
    with pytest.raises(WorkspaceError):
        discover_workspace(env={}, home=tmp_path / "nohome")
    assert discover_workspace(env={}, home=tmp_path).path == (tmp_path / ".qwenpaw").resolve()
    make_ws(tmp_path / ".copaw")
    assert discover_workspace(env={}, home=tmp_path).path == (tmp_path / ".copaw").resolve()


def test_multi_agent_root_selects_active_then_flag(tmp_path):
    root = tmp_path / "root"
    make_ws(root / "workspaces" / "default")
    make_ws(root / "elsewhere" / "w2")
    (root / "config.json").write_text(json.dumps({"agents": {
        "active_agent": "work",
        "profiles": {"default": {"id": "default", "workspace_dir": str(root / "workspaces" / "default")},
                     "work": {"id": "work", "workspace_dir": "elsewhere/w2"}}}}))
    assert discover_workspace(root, env={}).path == (root / "elsewhere" / "w2").resolve()
    ws = discover_workspace(root, agent="default", env={})
    assert ws.path == (root / "workspaces" / "default").resolve() and ws.agent_id == "default"
    with pytest.raises(WorkspaceError, match="agent 'nobody' not found"):
        discover_workspace(root, agent="nobody", env={})


def test_root_without_config_uses_workspaces_default(tmp_path):
    root = tmp_path / "root"
    make_ws(root / "workspaces" / "default")
    assert discover_workspace(root, env={}).path == (root / "workspaces" / "default").resolve()


def test_legacy_single_agent_root_is_the_workspace(tmp_path):
    root = make_ws(tmp_path / ".copaw")
    (root / "MEMORY.md").write_text("# m\n")
    assert discover_workspace(env={}, home=tmp_path).path == root.resolve()


def test_malformed_config_json_names_file_and_position(tmp_path):
    root = tmp_path / "root"
    make_ws(root / "workspaces" / "default")
    (root / "config.json").write_text('{"agents": {\n  "active_agent": ,\n}}')
    with pytest.raises(ConfigError) as info:
        discover_workspace(root, env={})
    assert str(root / "config.json") in str(info.value) and ":2:" in str(info.value)


def test_missing_and_non_workspace_dirs(tmp_path):
    with pytest.raises(WorkspaceError, match="does not exist"):
        discover_workspace(tmp_path / "missing", env={})
    (tmp_path / "empty").mkdir()
    with pytest.raises(WorkspaceError, match="not a QwenPaw workspace"):
        discover_workspace(tmp_path / "empty", env={})
    (tmp_path / "file").write_text("x")
    with pytest.raises(WorkspaceError, match="not a directory"):
        discover_workspace(tmp_path / "file", env={})


def test_resolve_inside_refuses_traversal_and_escaping_symlinks(tmp_path):
    ws = make_ws(tmp_path / "ws")
    (tmp_path / "secret.txt").write_text("s")
    (ws / "sessions" / "link.json").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(UnsafePathError):
        resolve_inside(ws, "../secret.txt")
    with pytest.raises(UnsafePathError):
        resolve_inside(ws, "sessions/link.json")
    with pytest.raises(UnsafePathError):
        resolve_inside(ws, "/etc/passwd")
    assert resolve_inside(ws, "sessions") == (ws / "sessions").resolve()
