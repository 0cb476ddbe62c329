#!/usr/bin/env python3
"""What int8 attention products would cost in accuracy ("attention
products may stay float32 if int8 there costs accuracy; measure and say").

zibert's int8 path keeps q·kᵀ and p·v in float32. This study emulates, in
PyTorch on the model's own weights, the int8 path as it is and the int8 path
with int8 attention too, by fake quantization (quantize, then dequantize: an
int8 product with exact int32 sums computes exactly the product of the
dequantized values):

  linear   every Linear's input per row to u8 with a zero point (zibert's
           quantize_rows), the weights as the file's int8 (dequantized);
  +attn    also q and k per (token, head) row to symmetric int8, the softmax
           weights p per row to u8 (scale max/255, zero 0), v per (head
           column) over the keys to symmetric int8, as an int8 GEMM's
           operands would be.

It reports accuracy and agreement with the float32 model on labelled data.
usage: /usr/bin/python3 studies/int8_attention_study.py FLOAT.safetensors INT8.safetensors DATA.tsv [...more pairs and data]
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))
from export_onnx import read_zibert, torch_model, tokenize, batch_ids  # noqa: E402


def fake_u8_rows(x):
    """Per row (last axis) u8 with a zero point, 0 exact: zibert's quantize_rows."""
    import torch
    lo = torch.clamp(x.amin(dim=-1, keepdim=True), max=0.0)
    hi = torch.clamp(x.amax(dim=-1, keepdim=True), min=0.0)
    scale = (hi - lo) / 255.0
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    zero = torch.clamp(torch.round(-lo / scale), 0, 255)
    q = torch.clamp(torch.round(x / scale) + zero, 0, 255)
    return (q - zero) * scale


def fake_s8_rows(x):
    """Per row (last axis) symmetric int8 (the weights' scheme)."""
    import torch
    top = x.abs().amax(dim=-1, keepdim=True)
    scale = torch.where(top > 0, top / 127.0, torch.ones_like(top))
    return torch.clamp(torch.round(x / scale), -127, 127) * scale


def predict(model, meta, texts, attention_int8, linear_int8):
    import torch
    import torch.nn.functional as Fn
    bert = model.bert.bert  # Probs wraps the reference Bert (tests/reference/torch_bert.py)
    head = model.bert
    max_len = bert.embeddings.position_embeddings.num_embeddings
    lin = (lambda layer, x: layer(fake_u8_rows(x))) if linear_int8 else (lambda layer, x: layer(x))
    out = []
    with torch.no_grad():
        for b in range(0, len(texts), 64):
            seqs = [tokenize(meta, t, max_len) for t in texts[b:b + 64]]
            ids = torch.from_numpy(batch_ids(seqs))
            B, T = ids.shape
            C = bert.embeddings.word_embeddings.embedding_dim
            mask = (ids == 0)[:, None, None, :]  # [PAD] keys
            e = bert.embeddings
            x = e.LayerNorm(e.word_embeddings(ids) + e.position_embeddings.weight[:T])
            for layer in bert.encoder.layer:
                sa = getattr(layer.attention, "self")
                H = sa.heads
                D = C // H
                q, k, v = (lin(m, x).view(B, T, H, D).transpose(1, 2) for m in (sa.query, sa.key, sa.value))
                if attention_int8:
                    q, k = fake_s8_rows(q), fake_s8_rows(k)
                    v = fake_s8_rows(v.transpose(-1, -2)).transpose(-1, -2)  # per head column over the keys
                s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
                p = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1)
                if attention_int8:
                    p = fake_u8_rows(p)
                a = (p @ v).transpose(1, 2).reshape(B, T, C)
                x = layer.attention.output.LayerNorm(x + lin(layer.attention.output.dense, a))
                h = Fn.gelu(lin(layer.intermediate.dense, x))
                x = layer.output.LayerNorm(x + lin(layer.output.dense, h))
            pooled = torch.tanh(lin(bert.pooler.dense, x[:, 0]))
            out.append(torch.softmax(lin(head.classifier, pooled), dim=-1).numpy())
    return np.concatenate(out)


def read_tsv(path):
    rows = [line.rstrip("\n").split("\t") for line in open(path, encoding="utf-8")]
    head = rows[0]
    ti, li = head.index("text"), head.index("label")
    return [r[ti] for r in rows[1:] if len(r) > max(ti, li)], [r[li] for r in rows[1:] if len(r) > max(ti, li)]


def main():
    args = sys.argv[1:]
    if len(args) < 3 or len(args) % 3:
        sys.exit(__doc__)
    import torch
    torch.set_num_threads(2)
    print("model\tdata\tfloat32\tint8 linear\tint8 linear+attention\tagree (linear)\tagree (+attn)\tmax |dP| (+attn vs linear)")
    for i in range(0, len(args), 3):
        f32, i8, data = args[i:i + 3]
        texts, gold = read_tsv(data)
        meta, tensors = read_zibert(f32)
        model_f, _ = torch_model(meta, tensors)
        meta8, tensors8 = read_zibert(i8)
        model_q, _ = torch_model(meta8, tensors8)
        labels = __import__("json").loads(meta["labels"])
        g = np.array([labels.index(x) for x in gold])
        pf = predict(model_f, meta, texts, False, False)
        pl = predict(model_q, meta8, texts, False, True)
        pa = predict(model_q, meta8, texts, True, True)
        acc = lambda p: (p.argmax(1) == g).mean()
        agree = lambda p: (p.argmax(1) == pf.argmax(1)).mean()
        print(f"{os.path.basename(f32)}\t{os.path.basename(data)} ({len(texts)})\t{acc(pf):.4f}\t{acc(pl):.4f}\t"
              f"{acc(pa):.4f}\t{agree(pl):.4f}\t{agree(pa):.4f}\t{np.abs(pa - pl).max():.4f}")


if __name__ == "__main__":
    main()
