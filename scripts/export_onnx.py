#!/usr/bin/env python3
"""Export a zibert classifier to ONNX through PyTorch (torch.onnx.export), so
that other runtimes (ONNX Runtime, ...) can run zibert models.

The graph takes `ids` (batch, seq) int64 -- [CLS] text [SEP] padded with
[PAD] = 0, as zibert's tokenizer makes them -- and gives `probs` (batch,
labels), tempered by the model's calibration when it has one, as zibert
classify prints them. An int8 zibert model is exported with its dequantized weights
(float32 graph). With --int8, the float32 graph is rewritten as ONNX
Runtime's dynamic quantization writes it: each MatMul by a constant weight
becomes DynamicQuantizeLinear (u8 activations, one scale per tensor) +
MatMulInteger (int8 weights, symmetric, one scale per output column) + Cast
+ Mul, which ONNX Runtime fuses into its own int8 kernels.

The export is checked: the PyTorch model's probabilities against `zibert
classify --format jsonl` on check texts (4 printed decimals), the graph with
onnx.checker, and, when ONNX Runtime is installed in build/onnxruntime
(bench/bench-vs-onnxruntime installs it), the exported graph's own
probabilities on the same texts (float32: the same bound; --int8: reported).

usage: scripts/export-onnx MODEL OUT.onnx [--int8] [--check TEXTS] [--zibert BIN]
"""
import argparse
import json
import re
import os
import struct
import subprocess
import sys
import unicodedata

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAD, UNK, CLS, SEP = 0, 1, 2, 3
CHECK_TEXTS = ["年夜饭的压轴菜是佛跳墙。", "他们点了一坛佛跳牆，说是镇店之宝。", "狗急跳墙，佛祖也救不了。",
               "今天的外卖送得很快，味道也不错。", "The quick brown fox 跳过了墙。"]


def read_zibert(path):
    """(metadata, {name: float32 array}) of a zibert model file; int8 tensors dequantized, float16 ones widened."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__")
    if meta.get("format") != "zibert":
        sys.exit(f"export-onnx: {path} is not a zibert model")
    body = data[8 + n:]
    raw = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        dtype = {"F32": np.float32, "I8": np.int8, "F16": np.float16}[t["dtype"]]
        raw[name] = np.frombuffer(body[begin:end], dtype=dtype).reshape(t["shape"])
        if dtype == np.float16:
            raw[name] = raw[name].astype(np.float32)  # exact, as zibert widens them
    tensors = {}
    for name, a in raw.items():
        if name.endswith("_scale") and name[:-len("_scale")] in raw:
            continue
        tensors[name] = a.astype(np.float32) * raw[name + "_scale"][:, None] if a.dtype == np.int8 else a
    return meta, tensors


def torch_model(meta, tensors):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
    from torch_bert import Bert, hf_config  # the PyTorch reference: Hugging Face's BERT, zibert's names
    c = json.loads(meta["config"])
    if c.get("task", "classify") != "classify":
        sys.exit("export-onnx: the model is an encoder; export a classifier (zibert train)")
    if c.get("tie_qk") or not c.get("position_embeddings", True):
        sys.exit("export-onnx: the ablation models (tie_qk, no position embeddings) are not exported")
    config = hf_config(c["vocab_size"], c["max_len"], c["dim"], c["heads"], c["ffn"], c["layers"], labels=c["labels"],
                       layer_norm_eps=c["layer_norm_eps"], type_vocab_size=0, dropout=0.0, attention_dropout=0.0)
    m = Bert(config, head="classify", fused_qkv=True)  # Q, K and V as one product: ONNX Runtime's best case
    sd = {name: torch.from_numpy(np.array(tensors[name])) for name in m.state_dict()}
    m.load_state_dict(sd)
    m.eval()

    # A calibrated model's temperature divides the logits, as zibert applies it.
    temperature = float(json.loads(meta["calibration"])["temperature"]) if "calibration" in meta else 1.0
    # A multi-label model (train --multi-label) has one sigmoid per label.
    multi_label = c.get("problem_type") == "multi_label_classification"

    class Probs(torch.nn.Module):
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, ids):
            logits = self.bert(ids)
            if multi_label:
                return torch.sigmoid(logits)
            return torch.softmax(logits / temperature if temperature != 1.0 else logits, dim=-1)

    return Probs(m), c


# The assigned Default_Ignorable_Code_Point characters, which utf8proc 2.8's UTF8PROC_IGNORE drops.
DEFAULT_IGNORABLE = re.compile(
    "[\u00AD\u034F\u061C\u115F-\u1160\u17B4-\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u2064"
    "\u2066-\u206F\u3164\uFE00-\uFE0F\uFEFF\uFFA0\U0001BCA0-\U0001BCA3\U0001D173-\U0001D17A\U000E0001"
    "\U000E0020-\U000E007F\U000E0100-\U000E01EF]")


def tokenize(meta, text, max_len):
    """zibert's tokenizer: NFKC (and lowercase if the model says), default-ignorable characters dropped
    (zero-width space, joiners, soft hyphen, variation selectors, ...), one id per character, [UNK] else."""
    vocab = {tok: i for i, tok in enumerate(json.loads(meta["vocab"]))}
    text = DEFAULT_IGNORABLE.sub("", unicodedata.normalize("NFKC", text))
    if json.loads(meta["normalization"]).get("lowercase"):
        text = text.lower()
    return [CLS] + [vocab.get(ch, UNK) for ch in text][:max_len - 2] + [SEP]


def batch_ids(seqs):
    t = max(len(s) for s in seqs)
    return np.array([s + [PAD] * (t - len(s)) for s in seqs], dtype=np.int64)


def quantize_graph(model):
    """ONNX Runtime's dynamic int8 form of every MatMul (and Gemm) by a constant weight."""
    import onnx
    from onnx import helper, numpy_helper, TensorProto
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    nodes, added = [], 0
    for node in g.node:
        if node.op_type == "Gemm" and node.input[1] in inits:
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            w = numpy_helper.to_array(inits[node.input[1]])
            w = w.T if attrs.get("transB", 0) else w  # (in, out)
            bias = node.input[2] if len(node.input) > 2 else None
        elif node.op_type == "MatMul" and node.input[1] in inits and len(inits[node.input[1]].dims) == 2:
            w, bias = numpy_helper.to_array(inits[node.input[1]]), None
        else:
            nodes.append(node)
            continue
        k = f"q{added}"
        added += 1
        scale = np.maximum(np.abs(w).max(axis=0), 1e-30) / 127.0  # per output column
        wq = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
        g.initializer.extend([numpy_helper.from_array(wq, k + "_w"),
                              numpy_helper.from_array(scale.astype(np.float32), k + "_ws"),
                              numpy_helper.from_array(np.zeros(w.shape[1], np.int8), k + "_wz")])
        x = node.input[0]
        out = node.output[0] if bias is None else k + "_y"
        nodes += [helper.make_node("DynamicQuantizeLinear", [x], [k + "_x", k + "_xs", k + "_xz"]),
                  helper.make_node("MatMulInteger", [k + "_x", k + "_w", k + "_xz", k + "_wz"], [k + "_i"]),
                  helper.make_node("Cast", [k + "_i"], [k + "_f"], to=TensorProto.FLOAT),
                  helper.make_node("Mul", [k + "_f", k + "_xs"], [k + "_fx"]),
                  helper.make_node("Mul", [k + "_fx", k + "_ws"], [out])]
        if bias is not None:
            nodes.append(helper.make_node("Add", [out, bias], [node.output[0]]))
    del g.node[:]
    g.node.extend(nodes)
    used = {i for n in g.node for i in n.input}
    keep = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    onnx.checker.check_model(model)
    return model, added


def zibert_probs(binary, model_path, texts):
    out = subprocess.run([binary, "classify", "-m", model_path, "--format", "jsonl", "-"], input="\n".join(texts) + "\n",
                         capture_output=True, text=True, check=True).stdout
    return [json.loads(line)["probs"] for line in out.splitlines()]


ORT_MODULE = os.path.join(ROOT, "build", "onnxruntime", "node_modules", "onnxruntime-node")


def ort_probs(onnx_path, seqs):
    """The graph's probabilities by ONNX Runtime (bench/ort_bench.js), one text per run; None without it."""
    import shutil
    import tempfile
    if not os.path.isdir(ORT_MODULE) or not shutil.which("node"):
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([dict(rows=1, seq=len(s), ids=s) for s in seqs], f)
    try:
        out = subprocess.run(["node", os.path.join(ROOT, "bench", "ort_bench.js"), onnx_path, f.name, "probs"],
                             check=True, capture_output=True, text=True, env=dict(os.environ, ORT_NODE_MODULE=ORT_MODULE))
        return json.loads(out.stdout)
    finally:
        os.unlink(f.name)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--int8", action="store_true", help="write ONNX Runtime's dynamic int8 form of the graph")
    ap.add_argument("--check", help="texts (one per line) to check the export on (default: a few built in)")
    ap.add_argument("--zibert", default=os.path.join(ROOT, "build", "zibert"))
    args = ap.parse_args()
    import onnx
    import torch
    meta, tensors = read_zibert(args.model)
    model, c = torch_model(meta, tensors)
    texts = CHECK_TEXTS
    if args.check:
        with open(args.check, encoding="utf-8") as f:
            texts = [line.rstrip("\n") for line in f if line.strip()][:200]
    # Texts within one window, so zibert's answer is the model's on these ids.
    texts = [t for t in texts if len(unicodedata.normalize("NFKC", t)) <= c["max_len"] - 2]
    labels = json.loads(meta["labels"])
    want = zibert_probs(args.zibert, args.model, texts)
    with torch.inference_mode():
        got = [model(torch.from_numpy(batch_ids([tokenize(meta, t, c["max_len"])]))).numpy()[0] for t in texts]
    worst = max(abs(float(g[i]) - w[labels[i]]) for g, w in zip(got, want) for i in range(len(labels)))
    if worst > 1.5e-4:
        sys.exit(f"export-onnx: the PyTorch model differs from zibert by {worst:.2e} on the check texts")
    tmp = args.out + ".tmp"
    torch.onnx.export(model, (torch.from_numpy(batch_ids([tokenize(meta, texts[0], c["max_len"])])),), tmp,
                      input_names=["ids"], output_names=["probs"], opset_version=14,
                      dynamic_axes={"ids": {0: "batch", 1: "seq"}, "probs": {0: "batch"}})
    graph = onnx.load(tmp)
    onnx.checker.check_model(graph)
    note = ""
    if args.int8:
        graph, n = quantize_graph(graph)
        note = f", {n} products int8 (DynamicQuantizeLinear + MatMulInteger)"
    onnx.save(graph, tmp)
    seqs = [tokenize(meta, t, c["max_len"]) for t in texts]
    run = ort_probs(tmp, seqs)
    if run is None:
        note += "; ONNX Runtime not installed (bench/bench-vs-onnxruntime installs it): the graph was not run"
    else:
        ort_worst = max(abs(r[i] - w[labels[i]]) for r, w in zip(run, want) for i in range(len(labels)))
        if not args.int8 and ort_worst > 1.5e-4:
            os.unlink(tmp)
            sys.exit(f"export-onnx: ONNX Runtime's output differs from zibert's by {ort_worst:.2e}")
        note += f"; ONNX Runtime's output within {ort_worst:.1e} of zibert's"
    os.replace(tmp, args.out)
    print(f"export-onnx: wrote {args.out} ({os.path.getsize(args.out) / 1e6:.2f} MB{note}); PyTorch matches zibert "
          f"within {worst:.1e} on {len(texts)} texts", file=sys.stderr)


if __name__ == "__main__":
    main()
