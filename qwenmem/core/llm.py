"""The optional remote LLM: any OpenAI-compatible chat endpoint, reached through the `openai` package.

Configuration precedence (first that names a base URL wins), documented in the README:
  1. flags (--llm-base-url, --llm-model, --llm-api-key)
  2. $QWENMEM_LLM_BASE_URL, $QWENMEM_LLM_MODEL, $QWENMEM_LLM_API_KEY (else $OPENAI_API_KEY), $QWENMEM_LLM_TIMEOUT
  3. QwenPaw's provider config: agent.json active_model → <secret dir>/providers/{custom,builtin}/<id>.json
With none of these, `resolve_llm_config` returns None and callers use their deterministic fallback.
`openai` is imported only when a request is actually made.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from qwenmem.core.errors import LLMError, UsageError
from qwenmem.core import redact
from qwenmem.core.redact import mask_secret
from qwenmem.core.settings import Settings
from qwenmem.core.workspace import Workspace, read_json_file


@dataclass(frozen=True)
class LLMConfig:
    base_url: str
    model: str
    api_key: str
    timeout: float = 60.0
    max_retries: int = 2
    source: str = "flags"

    def describe(self) -> str:
        key = mask_secret(self.api_key) if self.api_key else "(none)"
        return f"{self.model} at {self.base_url} (key {key}; from {self.source})"


def _provider_config(ws: Workspace, settings: Settings, env: Mapping[str, str]) -> tuple[str, str, str] | None:
    if not settings.active_provider:
        return None
    secret = env.get("QWENPAW_SECRET_DIR") or env.get("COPAW_SECRET_DIR") or f"{ws.root}.secret"
    for kind in ("custom", "builtin"):
        path = Path(secret) / "providers" / kind / f"{settings.active_provider}.json"
        if path.is_file():
            doc = read_json_file(path)
            if isinstance(doc, dict) and doc.get("base_url"):
                return str(doc["base_url"]), str(doc.get("api_key") or ""), str(path)
    return None


def resolve_llm_config(
    ws: Workspace | None,
    settings: Settings | None,
    base_url: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    retries: int | None = None,
) -> LLMConfig | None:
    env = os.environ if env is None else env
    env_timeout = env.get("QWENMEM_LLM_TIMEOUT")
    if not timeout and env_timeout:
        try:
            timeout = float(env_timeout)
        except ValueError:
            timeout = 0.0
        if not 0 < timeout < float("inf"):
            raise UsageError(f"$QWENMEM_LLM_TIMEOUT={env_timeout!r}: expected a number of seconds, e.g. 60")
    timeout = timeout or 60.0
    key = api_key or env.get("QWENMEM_LLM_API_KEY") or env.get("OPENAI_API_KEY") or ""
    if base_url:
        source = "flags"
    elif env.get("QWENMEM_LLM_BASE_URL"):
        base_url, source = env["QWENMEM_LLM_BASE_URL"], "$QWENMEM_LLM_BASE_URL"
    elif ws is not None and settings is not None and (found := _provider_config(ws, settings, env)):
        base_url, provider_key, source = found
        key = api_key or provider_key or key
        model = model or settings.active_model
    else:
        return None
    model = model or env.get("QWENMEM_LLM_MODEL") or (settings.active_model if settings else None)
    if not model:
        raise LLMError(f"an LLM base URL is configured ({source}) but no model: set --llm-model or $QWENMEM_LLM_MODEL")
    redact.register(key)  # --llm-api-key, $QWENMEM_LLM_API_KEY, $OPENAI_API_KEY or the provider's: masked in output
    return LLMConfig(base_url.rstrip("/"), model, key or "sk-no-key", timeout, 2 if retries is None else retries, source)


class ChatClient:
    """A thin, validated wrapper over openai's chat.completions with timeouts and retries with backoff."""

    def __init__(self, config: LLMConfig):
        self.config = config
        self._client: Any = None  # openai.OpenAI, built on first use (importing openai is slow)
        self._async_client: Any = None

    def _kwargs(self) -> dict[str, Any]:
        return dict(base_url=self.config.base_url, api_key=self.config.api_key, timeout=self.config.timeout,
                    max_retries=self.config.max_retries)

    def _request(self, system: str, user: str, max_tokens: int | None) -> dict[str, Any]:
        return dict(model=self.config.model,
                    messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                    **({"max_tokens": max_tokens} if max_tokens else {}))

    def complete(self, system: str, user: str, max_tokens: int | None = None) -> str:
        import openai

        if self._client is None:
            self._client = openai.OpenAI(**self._kwargs())
        with _as_llm_error(self.config):
            reply = self._client.chat.completions.create(**self._request(system, user, max_tokens))
        return _extract_text(reply, self.config.base_url)

    async def acomplete(self, system: str, user: str, max_tokens: int | None = None) -> str:
        import openai

        if self._async_client is None:
            self._async_client = openai.AsyncOpenAI(**self._kwargs())
        with _as_llm_error(self.config):
            reply = await self._async_client.chat.completions.create(**self._request(system, user, max_tokens))
        return _extract_text(reply, self.config.base_url)


@contextmanager
def _as_llm_error(config: LLMConfig) -> Iterator[None]:
    """Every way a request can fail becomes one LLMError line (exit 5), never an openai traceback."""
    import openai

    try:
        yield
    except openai.APITimeoutError:
        raise LLMError(f"LLM at {config.base_url} timed out after {config.timeout:g}s") from None
    except openai.APIConnectionError:
        raise LLMError(f"LLM at {config.base_url} is unreachable") from None
    except openai.APIStatusError as exc:
        raise LLMError(f"LLM at {config.base_url} answered HTTP {exc.status_code}") from None
    except openai.OpenAIError as exc:
        raise LLMError(f"LLM call failed: {type(exc).__name__}: {exc}") from None
    except ValueError:  # a 200 reply whose body is not JSON surfaces from openai as json.JSONDecodeError
        raise LLMError(f"LLM at {config.base_url} returned a malformed (non-JSON) reply") from None


def _extract_text(reply: Any, base_url: str) -> str:
    try:
        text = reply.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        raise LLMError(f"LLM at {base_url} returned a reply with no message") from None
    if not isinstance(text, str) or not text.strip():
        raise LLMError(f"LLM at {base_url} returned an empty reply")
    return text
