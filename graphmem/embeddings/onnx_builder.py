"""Write an fp32 ONNX graph of a BERT encoder (all-MiniLM-L6-v2) straight from its safetensors weights.

Why build instead of export: ``torch.onnx.export`` needs torch (GBs); this needs only ``onnx``
and ``safetensors`` and takes about a second. The graph is a plain post-LayerNorm BERT
encoder (opset 17) with inputs ``input_ids``, ``attention_mask``, ``token_type_ids`` (int64,
``[batch, seq]``) and output ``last_hidden_state`` (float32, ``[batch, seq, hidden]``).
Pooling and normalisation stay in NumPy, where they are cheap and easy to check.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

# Bump when the graph changes: it is part of the cache key, so old cached graphs are ignored.
BUILDER_VERSION = "1"


def build_bert_onnx(model_dir: Path) -> bytes:
    """Return the serialised ONNX model for the BERT weights in ``model_dir``.

    Args:
        model_dir: folder holding ``config.json`` and ``model.safetensors``.

    Returns:
        The ``ModelProto`` bytes (~90 MB for MiniLM-L6), checked by ``onnx.checker``.
    """
    import onnx  # only needed to build: imported here so embedding from a cached graph skips it
    from onnx import TensorProto as TP
    from onnx import helper, numpy_helper
    from safetensors.numpy import load_file

    cfg = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    W = {k: v.astype(np.float32) for k, v in load_file(str(model_dir / "model.safetensors")).items()}
    pfx = "" if "embeddings.word_embeddings.weight" in W else "bert."
    D, H, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    hd, eps = D // H, float(cfg.get("layer_norm_eps", 1e-12))
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: Any, dtype: type = np.float32) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(kind: str, inputs: list[str], out: str | None = None, **attrs: Any) -> str:
        out = out or f"{kind}_{len(nodes)}"
        nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def linear(x: str, n: str) -> str:  # x @ W.T + b; the transpose is done once, here
        w_t = const(n + ".w_t", np.ascontiguousarray(W[n + ".weight"].T))
        return op("Add", [op("MatMul", [x, w_t]), const(n + ".b", W[n + ".bias"])])

    def norm(x: str, n: str) -> str:
        g, b = const(n + ".g", W[n + ".weight"]), const(n + ".beta", W[n + ".bias"])
        return op("LayerNormalization", [x, g, b], axis=-1, epsilon=eps)

    one, half, sqrt2 = const("one", 1.0), const("half", 0.5), const("sqrt2", np.sqrt(2.0))
    scale = const("scale", 1.0 / np.sqrt(hd))
    shape4, shape3 = const("s4", [0, 0, H, hd], np.int64), const("s3", [0, 0, D], np.int64)

    def heads(t: str, perm: list[int]) -> str:
        return op("Transpose", [op("Reshape", [t, shape4])], perm=perm)

    def emb(t: str, ids: str) -> str:
        return op("Gather", [const(t, W[f"{pfx}embeddings.{t}.weight"]), ids])

    seq_len = op("Gather", [op("Shape", ["input_ids"]), const("i1", 1, np.int64)])
    pos_ids = op("Range", [const("i0", 0, np.int64), seq_len, const("step", 1, np.int64)])
    x = op("Add", [emb("word_embeddings", "input_ids"), emb("position_embeddings", pos_ids)])
    x = norm(op("Add", [x, emb("token_type_embeddings", "token_type_ids")]), pfx + "embeddings.LayerNorm")
    # additive attention mask [B,1,1,S]: 0 for tokens, -1e9 for padding
    mask = op("Unsqueeze", [op("Cast", ["attention_mask"], to=TP.FLOAT), const("axes", [1, 2], np.int64)])
    mask_bias = op("Mul", [op("Sub", [one, mask]), const("neg", -1e9)])

    for i in range(L):
        n = f"{pfx}encoder.layer.{i}."
        q = heads(linear(x, n + "attention.self.query"), [0, 2, 1, 3])  # [B,H,S,hd]
        k = heads(linear(x, n + "attention.self.key"), [0, 2, 3, 1])  # [B,H,hd,S]
        v = heads(linear(x, n + "attention.self.value"), [0, 2, 1, 3])
        att = op("Softmax", [op("Add", [op("Mul", [op("MatMul", [q, k]), scale]), mask_bias])], axis=-1)
        ctx = op("Reshape", [op("Transpose", [op("MatMul", [att, v])], perm=[0, 2, 1, 3]), shape3])
        x = norm(op("Add", [linear(ctx, n + "attention.output.dense"), x]), n + "attention.output.LayerNorm")
        h = linear(x, n + "intermediate.dense")
        # exact (erf) GELU, as BERT uses; onnxruntime fuses this pattern into one Gelu kernel
        gelu = op("Mul", [op("Mul", [h, op("Add", [op("Erf", [op("Div", [h, sqrt2])]), one])]), half])
        x = norm(op("Add", [linear(gelu, n + "output.dense"), x]), n + "output.LayerNorm")
    op("Identity", [x], out="last_hidden_state")

    ins = [
        helper.make_tensor_value_info(s, TP.INT64, ["batch", "seq"])
        for s in ("input_ids", "attention_mask", "token_type_ids")
    ]
    outs = [helper.make_tensor_value_info("last_hidden_state", TP.FLOAT, ["batch", "seq", D])]
    model = helper.make_model(
        helper.make_graph(nodes, "minilm", ins, outs, inits),
        opset_imports=[helper.make_opsetid("", 17)],
        producer_name="graphmem",
        producer_version=BUILDER_VERSION,
    )
    model.ir_version = 8  # readable by onnxruntime releases older than the installed onnx
    onnx.checker.check_model(model)
    data: bytes = model.SerializeToString()
    return data
