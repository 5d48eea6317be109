"""The bulk e5 kernel chosen from the CPU's flags and what is installed (core/index/e5_kernel.py)."""

from __future__ import annotations

import pytest

from qwenmem.core.index import e5_kernel

AVX2 = {"avx", "avx2", "fma", "f16c"}
BF16 = AVX2 | {"avx512f", "avx512_vnni", "avx512_bf16"}


@pytest.fixture(autouse=True)
def no_override(monkeypatch):
    monkeypatch.delenv("QWENMEM_E5_KERNEL", raising=False)


@pytest.mark.parametrize(("flags", "ort", "kernel"), [
    (AVX2, True, "ort-int8"),      # AVX2 without bf16: int8 on ONNX Runtime
    (BF16, True, "ort-int8"),      # measured faster than native bf16 on the avx512_bf16 + VNNI EPYC
    (BF16, False, "bf16"),         # no onnxruntime: torch, bf16 where native
    (AVX2, False, "fp32"),         # no onnxruntime, no bf16: torch fp32 (torch int8 was slower there)
    ({"sse4_2"}, True, "fp32"),    # no AVX2: ORT's int8 products have no fast path
    (set(), False, "fp32"),
])
def test_choice_per_cpu_and_install(flags, ort, kernel):
    assert e5_kernel.choose(flags, ort=ort) == kernel


def test_override_names_every_kernel(monkeypatch):
    monkeypatch.setattr(e5_kernel, "ort_installed", lambda: True)
    for kernel in ("ort-int8", "ort-fp32", "bf16", "int8", "fp32"):
        monkeypatch.setenv("QWENMEM_E5_KERNEL", kernel.upper())
        assert e5_kernel.choose(AVX2) == kernel
        assert e5_kernel.describe()["source"] == "QWENMEM_E5_KERNEL"


def test_an_ort_kernel_asked_for_without_onnxruntime_falls_back_to_the_cpus_choice(monkeypatch):
    monkeypatch.setattr(e5_kernel, "ort_installed", lambda: False)
    monkeypatch.setenv("QWENMEM_E5_KERNEL", "ort-int8")
    assert e5_kernel.choose(BF16) == "bf16"
    assert e5_kernel.choose(AVX2) == "fp32"
    assert "onnxruntime not installed" in str(e5_kernel.describe()["source"])


def test_unknown_override_is_ignored(monkeypatch):
    monkeypatch.setenv("QWENMEM_E5_KERNEL", "fp64")
    assert e5_kernel.choose(AVX2, ort=True) == "ort-int8"
