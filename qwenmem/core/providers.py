"""The active model's effective context size, as QwenPaw 2.x resolves it (spec qwenpaw2-workspace.md §1.4).

Provider JSON lives in the secret dir (`$QWENPAW_SECRET_DIR`, default `<root>.secret`):
`providers/{builtin,custom,plugin}/<id>.json` and `providers/active_model.json`. Precedence, from QwenPaw
2.2.2.post1 `providers/context_windows.py resolve_context_window` / `model_resolution.py resolve_model_info`:

1. a user-configured per-model `max_input_length` (`max_input_length_configured: true`);
2. the value the provider API reported (`max_input_length_auto_detected`);
3. a positive `max_input_length` that is not the 128k default;
4. the catalog of known model families below (not for local providers such as Ollama);
5. 128 × 1024.
A known `input_token_limit` lower than that wins. The `effective_max_input_length` stored in the JSON is a cache
QwenPaw recomputes, so it is not trusted (the generated corpus stores 131072 for a model configured at 9000).

Provider `api_key` values are stored `ENC:<fernet token>`; they are never decrypted here, and never returned.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from qwenmem.core.workspace import is_file, read_json_file

DEFAULT_CONTEXT_WINDOW = 128 * 1024
PROVIDER_KINDS = ("builtin", "custom", "plugin")

# providers/context_windows.py _KNOWN_CONTEXT_WINDOWS @2.2.2.post1: (pattern, max input tokens), longest wins.
KNOWN_CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("qwen-long", 10_000_000), ("qwen-flash", 1_000_000), ("qwen-turbo-latest", 1_000_000), ("qwen-turbo", 131_072),
    ("qwen3.8", 1_000_000), ("qwen3.7-max", 1_000_000), ("qwen3.7-plus", 1_000_000), ("qwen3.6-plus", 1_000_000),
    ("qwen-plus-latest", 1_000_000), ("qwen-plus", 131_072), ("qwen3-coder-plus", 1_000_000),
    ("qwen3-coder", 262_144), ("qwen3-max", 262_144), ("qwen-max", 131_072), ("qwq", 131_072),
    ("claude-instant", 100_000), ("claude-2", 100_000), ("claude", 200_000),
    ("gpt-4.1", 1_047_576), ("gpt-5", 272_000), ("o4-mini", 200_000), ("o3", 200_000),
    ("gemini-1.5-pro", 2_097_152), ("gemini", 1_048_576),
    ("minimax-m3", 1_000_000), ("minimax-m2.7", 204_800),
    ("kimi-k3", 1_000_000), ("kimi-k2", 262_144), ("glm-5.2", 1_000_000), ("glm-4.6", 200_000),
    ("grok-4-fast", 2_000_000), ("grok-4", 256_000),
)
_PATTERNS = tuple(sorted(KNOWN_CONTEXT_WINDOWS, key=lambda kv: len(kv[0]), reverse=True))


def _at_word_boundary(model_id: str, pattern: str) -> bool:
    i = model_id.find(pattern)
    while i != -1:
        if i == 0 or not model_id[i - 1].isalnum():
            return True
        i = model_id.find(pattern, i + 1)
    return False


def known_context_size(model_id: str) -> int | None:
    normalized = (model_id or "").lower()
    for pattern, tokens in _PATTERNS if normalized else ():
        if _at_word_boundary(normalized, pattern):
            return tokens
    return None


def _positive_int(value: Any) -> int | None:
    return value if type(value) is int and value > 0 else None


def effective_context_size(model_id: str, info: Mapping[str, Any] | None, local: bool = False) -> tuple[int, str]:
    """(tokens, where it came from) for one model entry of a provider JSON (None: no entry)."""
    info = info or {}
    configured = _positive_int(info.get("max_input_length"))
    if configured and info.get("max_input_length_configured") is True:
        value, source = configured, "user-configured max_input_length"
    elif _positive_int(info.get("max_input_length_auto_detected")):
        value, source = info["max_input_length_auto_detected"], "detected from the provider API"
    elif configured and configured != DEFAULT_CONTEXT_WINDOW:
        value, source = configured, "provider max_input_length"
    elif not local and (known := known_context_size(model_id)):
        value, source = known, "QwenPaw's context-window catalog"
    else:
        value, source = DEFAULT_CONTEXT_WINDOW, "QwenPaw default (128k)"
    limit = _positive_int(info.get("input_token_limit"))
    if limit and limit < value:
        value, source = limit, "provider input_token_limit"
    return value, source


def secret_dir(root: Path, env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(env["QWENPAW_SECRET_DIR"]).expanduser() if env.get("QWENPAW_SECRET_DIR") else Path(f"{root}.secret")


@dataclass
class ProviderModel:
    provider_id: str | None
    model_id: str | None
    context_size: int
    context_source: str
    provider_file: str | None = None
    api_key: str = "none"  # "encrypted (ENC:…, not shown)" | "set (plain text)" | "none"
    active_source: str = "default"
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"provider_id": self.provider_id, "model_id": self.model_id, "context_size": self.context_size,
                "context_source": self.context_source, "provider_file": self.provider_file, "api_key": self.api_key,
                "active_source": self.active_source}


def api_key_state(value: Any) -> str:
    if not isinstance(value, str) or not value:
        return "none"
    return "encrypted (ENC:…, not shown)" if value.startswith("ENC:") else "set (plain text, not shown)"


def _read(path: Path) -> dict[str, Any] | None:
    try:
        doc = read_json_file(path)
    except Exception:  # a damaged provider file must not stop `info`; QwenPaw falls back to defaults too
        return None
    return doc if isinstance(doc, dict) else None


def active_model(secret: Path, agent_doc: Mapping[str, Any] | None = None) -> tuple[str | None, str | None, str]:
    """(provider id, model id, where from): agent.json `active_model`, else providers/active_model.json."""
    active = (agent_doc or {}).get("active_model")
    if isinstance(active, dict) and active.get("provider_id") and active.get("model"):
        return str(active["provider_id"]), str(active["model"]), "agent.json active_model"
    doc = _read(secret / "providers" / "active_model.json") if (secret / "providers" / "active_model.json").is_file() else None
    if doc and doc.get("provider_id") and doc.get("model"):
        return str(doc["provider_id"]), str(doc["model"]), "providers/active_model.json"
    return None, None, "none"


def resolve_provider_model(root: Path, agent_doc: Mapping[str, Any] | None = None,
                           env: Mapping[str, str] | None = None) -> ProviderModel:
    secret = secret_dir(root, env)
    provider_id, model_id, where = active_model(secret, agent_doc)
    if not provider_id or not model_id:
        return ProviderModel(None, None, DEFAULT_CONTEXT_WINDOW, "QwenPaw default (128k; no active model)")
    for kind in PROVIDER_KINDS:
        path = secret / "providers" / kind / f"{provider_id}.json"
        if not is_file(path):  # a provider id too long for the file system is simply not there
            continue
        doc = _read(path)
        if doc is None:
            return ProviderModel(provider_id, model_id, DEFAULT_CONTEXT_WINDOW, "QwenPaw default (128k)", str(path),
                                 active_source=where, notes=(f"{path}: unreadable provider file",))
        info = None
        for key in ("models", "extra_models", "discovered_models"):
            for entry in doc.get(key) or [] if isinstance(doc.get(key), list) else []:
                if isinstance(entry, dict) and entry.get("id") == model_id:
                    info = entry
                    break
            if info is not None:
                break
        size, source = effective_context_size(model_id, info, local=doc.get("is_local") is True)
        return ProviderModel(provider_id, model_id, size, source, str(path), api_key_state(doc.get("api_key")), where)
    size, source = effective_context_size(model_id, None)
    return ProviderModel(provider_id, model_id, size, source, active_source=where,
                         notes=(f"provider {provider_id!r} has no JSON under {secret / 'providers'}",))
