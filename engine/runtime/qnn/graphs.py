"""Static-shape ONNX graphs for a block of decoder layers (the unit the QNN runtime loads and runs).

A graph is (layers [first, last), S tokens fed, C context slots). Everything that varies per call is
an input, so one graph serves every position: the token embeddings ``x`` [S, hidden], RoPE ``cos`` /
``sin`` [S, head_dim] for the tokens' positions, an additive ``mask`` [group*S, C+S] (rows repeated
per query head of a kv group; columns = C cache slots, then the S new tokens), and the block's K/V
cache ``past_k`` / ``past_v`` [layers, kv_heads, C, head_dim]. Outputs: the block's hidden states
and the new tokens' K/V [layers, kv_heads, S, head_dim] (after RoPE), which the engine writes into
its own cache. The embedding lookup, the final norm and the output projection stay on the CPU
(calibration reads the output projection for every prompt position).

Only ops the HTP backend supports are used (MatMul, Add, Mul, Div, Sqrt, Abs, ReduceMax, ReduceMean,
Softmax, Sigmoid, Slice, Neg, Concat, Reshape, Transpose), with weights stored pre-transposed as
initializers so each projection is one MatMul.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ..transformer import CompactTransformer

OPSET = 17
GRAPH_VERSION = 5     # bump when the graph changes: cached context binaries are keyed by it
MASKED = -30000.0     # additive mask value: finite so fp16 softmax never sees inf - inf
RMS_RANGE = 16.0      # RMSNorm squares entries scaled into [-16, 16]: <= 256 each, no fp16 overflow


class _Builder:
    def __init__(self):
        self.nodes: list = []
        self.inits: list = []
        self._n = 0

    def name(self, hint: str) -> str:
        self._n += 1
        return f"{hint}_{self._n}"

    def op(self, op: str, inputs: list[str], hint: str = "", **attrs) -> str:
        out = self.name(hint or op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def const(self, array: np.ndarray, hint: str) -> str:
        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def shape(self, dims: list[int]) -> str:
        return self.const(np.array(dims, dtype=np.int64), "shape")


def _f32(w) -> np.ndarray:
    """A raw (unpacked) weight of the CPU model as the float32 array a graph constant holds."""
    return np.asarray(w, dtype=np.float32)


def _rms(b: _Builder, x: str, weight: np.ndarray, eps: float) -> str:
    """RMSNorm, written so that no fp16 intermediate overflows or falls into the subnormals.

    The HTP runs these graphs in fp16 and flushes subnormals to zero (below 6.1e-5). Small models
    carry massive activations (SmolLM2's residual stream reaches ~25,000 on attention-sink
    tokens): x^2 overflows there, and 1/max|x| (4e-5) is flushed, zeroing the whole row. With
    m = max|x| and r = 1/sqrt(m) (0.004..30 for m in 1e-3..65504): sc = (R*r)*r = R/m scales the
    row into [-R, R] for the mean of squares, and the result is x * ((R*r) * (r*inv)), each factor
    in fp16's normal range; algebraically x * rsqrt(mean(x^2) + eps)."""
    one = b.const(np.array(1.0, np.float32), "one")
    m = b.op("ReduceMax", [b.op("Abs", [x])], axes=[-1], keepdims=1)
    r = b.op("Div", [one, b.op("Sqrt", [m])])
    rr = b.op("Mul", [r, b.const(np.array(RMS_RANGE, np.float32), "range")])
    xs = b.op("Mul", [b.op("Mul", [x, r]), rr])                                 # x * R/m
    mean = b.op("ReduceMean", [b.op("Mul", [xs, xs])], axes=[-1], keepdims=1)  # opset 17: axes attr
    sc = b.op("Mul", [rr, r])
    eps_s = b.op("Mul", [sc, b.op("Mul", [sc, b.const(np.array(eps, np.float32), "eps")])])
    inv = b.op("Div", [one, b.op("Sqrt", [b.op("Add", [mean, eps_s])])])
    f = b.op("Mul", [rr, b.op("Mul", [r, inv])])
    return b.op("Mul", [b.op("Mul", [x, f]), b.const(weight, "norm_w")])


def _rope(b: _Builder, x: str, cos: str, sin: str, half: int, head_dim: int) -> str:
    """x [S, heads, D]; cos/sin [S, 1, D]."""
    starts, mids, ends = (b.const(np.array([v], np.int64), "idx") for v in (0, half, head_dim))
    axis = b.const(np.array([-1], np.int64), "axis")
    x1 = b.op("Slice", [x, starts, mids, axis])
    x2 = b.op("Slice", [x, mids, ends, axis])
    rotated = b.op("Concat", [b.op("Neg", [x2]), x1], axis=-1)
    return b.op("Add", [b.op("Mul", [x, cos]), b.op("Mul", [rotated, sin])])


def build_block(model: CompactTransformer, first: int, last: int, S: int, C: int) -> onnx.ModelProto:
    c = model.config
    H, D, KV, NH = c.hidden_size, c.head_dim, c.num_kv_heads, c.num_heads
    G = NH // KV
    nq, nkv = NH * D, KV * D
    b = _Builder()
    x = "x"
    cos3 = b.op("Reshape", ["cos", b.shape([S, 1, D])])
    sin3 = b.op("Reshape", ["sin", b.shape([S, 1, D])])
    scale = b.const(np.array(1.0 / np.sqrt(D), np.float32), "scale")
    new_k, new_v = [], []
    for j, i in enumerate(range(first, last)):
        L = model.layers[i]
        h = _rms(b, x, _f32(L.ln_in), c.rms_eps)
        qkv = b.op("MatMul", [h, b.const(_f32(L.wqkv).T, f"wqkv{i}")])
        if L.bqkv is not None:
            qkv = b.op("Add", [qkv, b.const(_f32(L.bqkv), f"bqkv{i}")])
        ax = b.const(np.array([-1], np.int64), "axis")
        cut = [b.const(np.array([v], np.int64), "idx") for v in (0, nq, nq + nkv, nq + 2 * nkv)]
        q = b.op("Slice", [qkv, cut[0], cut[1], ax])
        k = b.op("Slice", [qkv, cut[1], cut[2], ax])
        v = b.op("Slice", [qkv, cut[2], cut[3], ax])
        q = _rope(b, b.op("Reshape", [q, b.shape([S, NH, D])]), cos3, sin3, D // 2, D)
        k = _rope(b, b.op("Reshape", [k, b.shape([S, KV, D])]), cos3, sin3, D // 2, D)
        k = b.op("Transpose", [k], perm=[1, 0, 2])                       # [KV, S, D]
        v = b.op("Transpose", [b.op("Reshape", [v, b.shape([S, KV, D])])], perm=[1, 0, 2])
        new_k.append(b.op("Reshape", [k, b.shape([1, KV, S, D])]))
        new_v.append(b.op("Reshape", [v, b.shape([1, KV, S, D])]))
        # this layer's cache slice [KV, C, D] of the block input, then cache + new tokens
        lj = [b.const(np.array([v_], np.int64), "idx") for v_ in (j, j + 1)]
        zero_ax = b.const(np.array([0], np.int64), "axis")
        pk = b.op("Reshape", [b.op("Slice", ["past_k", lj[0], lj[1], zero_ax]), b.shape([KV, C, D])])
        pv = b.op("Reshape", [b.op("Slice", ["past_v", lj[0], lj[1], zero_ax]), b.shape([KV, C, D])])
        k_all = b.op("Concat", [pk, k], axis=1)                           # [KV, C+S, D]
        v_all = b.op("Concat", [pv, v], axis=1)
        # GQA: fold each kv head's query group into the row axis: [KV, G*S, D]
        qg = b.op("Transpose", [b.op("Reshape", [q, b.shape([S, KV, G, D])])], perm=[1, 2, 0, 3])
        qg = b.op("Reshape", [qg, b.shape([KV, G * S, D])])
        scores = b.op("MatMul", [qg, b.op("Transpose", [k_all], perm=[0, 2, 1])])
        scores = b.op("Add", [b.op("Mul", [scores, scale]), "mask"])
        o = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v_all])   # [KV, G*S, D]
        o = b.op("Transpose", [b.op("Reshape", [o, b.shape([KV, G, S, D])])], perm=[2, 0, 1, 3])
        o = b.op("Reshape", [o, b.shape([S, nq])])
        x = b.op("Add", [x, b.op("MatMul", [o, b.const(_f32(L.wo).T, f"wo{i}")])])
        h = _rms(b, x, _f32(L.ln_post), c.rms_eps)
        gu = b.op("MatMul", [h, b.const(_f32(L.wgu).T, f"wgu{i}")])
        inter = L.wdown.shape[1]
        cg = [b.const(np.array([v_], np.int64), "idx") for v_ in (0, inter, 2 * inter)]
        g = b.op("Slice", [gu, cg[0], cg[1], ax])
        u = b.op("Slice", [gu, cg[1], cg[2], ax])
        act = b.op("Mul", [b.op("Mul", [g, b.op("Sigmoid", [g])]), u])
        x = b.op("Add", [x, b.op("MatMul", [act, b.const(_f32(L.wdown).T, f"wdown{i}")])])
    n = last - first
    b.nodes.append(helper.make_node("Identity", [x], ["x_out"]))
    b.nodes.append(helper.make_node("Concat", new_k, ["k_new"], axis=0))
    b.nodes.append(helper.make_node("Concat", new_v, ["v_new"], axis=0))
    f32 = TensorProto.FLOAT
    graph = helper.make_graph(
        b.nodes, f"block_{first}_{last}_s{S}_c{C}",
        [helper.make_tensor_value_info("x", f32, [S, H]),
         helper.make_tensor_value_info("cos", f32, [S, D]),
         helper.make_tensor_value_info("sin", f32, [S, D]),
         helper.make_tensor_value_info("mask", f32, [G * S, C + S]),
         helper.make_tensor_value_info("past_k", f32, [n, KV, C, D]),
         helper.make_tensor_value_info("past_v", f32, [n, KV, C, D])],
        [helper.make_tensor_value_info("x_out", f32, [S, H]),
         helper.make_tensor_value_info("k_new", f32, [n, KV, S, D]),
         helper.make_tensor_value_info("v_new", f32, [n, KV, S, D])],
        b.inits)
    model_proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                    producer_name="hexa")
    model_proto.ir_version = 9
    return model_proto


def save_block(proto: onnx.ModelProto, path: Path) -> None:
    """Weights go to a side file: a block's initializers can pass protobuf's 2 GB limit on big models."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Path(str(path) + ".weights").unlink(missing_ok=True)   # onnx refuses to overwrite it
    onnx.save_model(proto, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location=path.name + ".weights", size_threshold=1024)
