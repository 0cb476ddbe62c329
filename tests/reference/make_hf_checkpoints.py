#!/usr/bin/env python3
"""Hugging Face BERT checkpoint directories, written as transformers writes them, with
the reference's outputs on them: the fixtures of zibert import (tests/test_hf_import.cpp,
tests/test_hf_hostile.cpp).

    tests/reference/make_hf_checkpoints.py OUT_DIR [--shape small|base]

Each directory holds config.json, vocab.txt, tokenizer_config.json and weights, in
one of the forms real checkpoints have:
  cls-safetensors   BertForSequenceClassification, model.safetensors (F32), 3 labels
  pretraining-bin   BertForPreTraining: pytorch_model.bin (torch.save's zip), LayerNorm
                    gamma/beta, the decoder sharing the word embeddings' storage,
                    the next-sentence head and position_ids (I64)
  mlm-untied-bf16   BertForMaskedLM with a decoder of its own (tie_word_embeddings
                    false), model.safetensors in BF16, sharded with an index
  bertmodel-f16     BertModel: names without "bert.", no heads, F16 safetensors
expected.json gives, per directory, the reference's outputs in float64 on the
weights as stored: classifier probabilities and pooled outputs, masked-LM
probabilities, the [CLS] states, and the classifier loss's gradients.
--shape base writes the same four at bert-base-like widths (768, 12 heads,
3072) for a check at real sizes; the committed fixtures are small.
--shape rbt3 writes one directory, rbt3, of RBT3's shape (3 layers, 768 wide,
12 heads, 3072, 512 positions, 21128 tokens: the specials, [unused1..99], ASCII
and the CJK ideographs from U+4E00) with random weights: for timing
fine-tuning, as no real checkpoint can be downloaded here.
"""
import argparse
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_bert import Bert, hf_config, init_weights  # noqa: E402

SPECIALS = ["[PAD]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CHARS = "佛跳墙是一道闽菜名肴年夜饭的压轴好吃我们点了坛汤很香鲜"
TEXTS = ["佛跳墙是一道闽菜", "年夜饭的压轴菜", "我们点了一坛佛跳墙很香", "好吃"]
MASKED = "年夜饭的压轴菜是佛跳[MASK]"


def vocab():
    return SPECIALS + list(CHARS) + ["##" + c for c in "汤香"] + ["hello", "!"]


def ids_of(text, v):
    """[CLS] text [SEP]: one id per CJK character, [MASK] as itself (what BertTokenizer gives here)."""
    index = {t: i for i, t in enumerate(v)}
    out, i = [index["[CLS]"]], 0
    while i < len(text):
        if text.startswith("[MASK]", i):
            out.append(index["[MASK]"])
            i += 6
        else:
            out.append(index.get(text[i], index["[UNK]"]))
            i += 1
    return out + [index["[SEP]"]]


def safetensors_bytes(tensors, dtype):
    """The safetensors layout: 8-byte header length, JSON header, raw little-endian data."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        t = t.contiguous()
        if t.dtype == torch.int64:
            code, raw = "I64", t.numpy().tobytes()
        elif dtype == "BF16":
            code, raw = "BF16", t.to(torch.bfloat16).view(torch.int16).numpy().tobytes()
        elif dtype == "F16":
            code, raw = "F16", t.to(torch.float16).numpy().tobytes()
        else:
            code, raw = "F32", t.to(torch.float32).numpy().tobytes()
        header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def stored(t, dtype):
    """The values as the file stores them, in float64."""
    if dtype == "BF16":
        return t.to(torch.bfloat16).to(torch.float64)
    if dtype == "F16":
        return t.to(torch.float16).to(torch.float64)
    return t.to(torch.float32).to(torch.float64)


def write_common(path, config, v, lower=True):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f, indent=2, ensure_ascii=False)
    with open(os.path.join(path, "vocab.txt"), "w") as f:
        f.write("\n".join(v) + "\n")
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": lower, "tokenizer_class": "BertTokenizer", "model_max_length": 512}, f)


def outputs(model, v, dtype, grads=False):
    """The reference's outputs in float64 on the weights as stored."""
    m64 = model.to(torch.float64)
    with torch.no_grad():
        for p in m64.parameters():
            p.copy_(stored(p, dtype))
    m64.eval()
    out = {}
    batch = [ids_of(t, v) for t in TEXTS]
    width = max(map(len, batch))
    ids = torch.tensor([b + [0] * (width - len(b)) for b in batch])
    states = m64.bert(ids)
    out["ids"] = batch
    out["cls_states"] = states[:, 0].tolist()
    if model.head == "classify":
        logits = m64(ids)
        out["probs"] = torch.softmax(logits, -1).tolist()
        out["pooled"] = m64.pooled(ids).tolist()
        if grads:
            labels = torch.tensor([0, 1, 2, 1])
            m64.zero_grad()
            torch.nn.functional.cross_entropy(m64(ids), labels).backward()
            out["labels"] = labels.tolist()
            out["grads"] = {n: p.grad.flatten().tolist() for n, p in m64.named_parameters()}
    if model.head == "mlm":
        mids = ids_of(MASKED, v)
        pos = mids.index(v.index("[MASK]"))
        logits = m64.mlm_logits(torch.tensor([mids]), torch.tensor([pos]))
        out["mlm_ids"] = mids
        out["mlm_position"] = pos
        out["mlm_probs"] = torch.softmax(logits, -1)[0].tolist()
    return out


def write_rbt3(d):
    v = ["[PAD]"] + [f"[unused{i}]" for i in range(1, 100)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    v += [chr(c) for c in range(33, 127)]
    v += [chr(0x4E00 + i) for i in range(21128 - len(v))]
    c = hf_config(len(v), 512, 768, 12, 3072, 3)
    c.update(model_type="bert", pad_token_id=0, architectures=["BertForMaskedLM"], position_embedding_type="absolute")
    m = init_weights(Bert(c, head="mlm", pooler=True))
    write_common(d, c, v)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(dict(m.state_dict()), "F32"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--shape", choices=["small", "base", "rbt3"], default="small")
    a = ap.parse_args()
    torch.manual_seed(11)
    if a.shape == "rbt3":
        write_rbt3(os.path.join(a.out, "rbt3"))
        return
    v = vocab()
    dim, heads, ffn, layers = (16, 2, 40, 2) if a.shape == "small" else (768, 12, 3072, 2)
    base = hf_config(len(v), 64, dim, heads, ffn, layers, labels=3, dropout=0.1)
    base.update(model_type="bert", pad_token_id=0, position_embedding_type="absolute")
    expected = {}

    def randomise(model):
        """Weights far from the initialisation, so every tensor matters."""
        init_weights(model, std=0.3)
        with torch.no_grad():
            for n, p in model.named_parameters():
                if "LayerNorm" in n or n.endswith("bias"):
                    p.add_(torch.randn_like(p) * 0.3)
        return model

    # BertForSequenceClassification, safetensors F32, 3 labels with names.
    c = dict(base, architectures=["BertForSequenceClassification"],
             id2label={"0": "负面", "1": "中性", "2": "正面"}, label2id={"负面": 0, "中性": 1, "正面": 2},
             problem_type="single_label_classification")
    m = randomise(Bert(c, head="classify"))
    d = os.path.join(a.out, "cls-safetensors")
    write_common(d, c, v)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(dict(m.state_dict()), "F32"))
    expected["cls-safetensors"] = outputs(m, v, "F32", grads=True)

    # BertForPreTraining in pytorch_model.bin: gamma/beta, tied decoder stored, NSP head, position_ids.
    c = dict(base, architectures=["BertForPreTraining"])
    m = randomise(Bert(c, head="mlm", pooler=True))
    state = {}
    for n, t in m.state_dict().items():
        n = n.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        state[n] = t
    word = m.bert.embeddings.word_embeddings.weight.data
    state["cls.predictions.decoder.weight"] = word  # the same storage, as a tied model saves it
    state["cls.predictions.decoder.bias"] = state["cls.predictions.bias"]
    state["cls.seq_relationship.weight"] = torch.randn(2, dim)
    state["cls.seq_relationship.bias"] = torch.randn(2)
    state["bert.embeddings.position_ids"] = torch.arange(64).unsqueeze(0)
    d = os.path.join(a.out, "pretraining-bin")
    write_common(d, c, v)
    torch.save(state, os.path.join(d, "pytorch_model.bin"))
    expected["pretraining-bin"] = outputs(m, v, "F32")

    # BertForMaskedLM, untied decoder, BF16 safetensors in two shards with an index.
    c = dict(base, architectures=["BertForMaskedLM"], tie_word_embeddings=False)
    m = randomise(Bert(c, head="mlm", pooler=False, tie_decoder=False))
    d = os.path.join(a.out, "mlm-untied-bf16")
    write_common(d, c, v)
    sd = dict(m.state_dict())
    names = list(sd)
    shards = {"model-00001-of-00002.safetensors": names[: len(names) // 2],
              "model-00002-of-00002.safetensors": names[len(names) // 2:]}
    weight_map = {}
    for file, part in shards.items():
        with open(os.path.join(d, file), "wb") as f:
            f.write(safetensors_bytes({n: sd[n] for n in part}, "BF16"))
        weight_map.update({n: file for n in part})
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2)
    expected["mlm-untied-bf16"] = outputs(m, v, "BF16")

    # BertModel: no "bert." prefix, no heads, F16.
    c = dict(base, architectures=["BertModel"])
    m = randomise(Bert(c, head=None, pooler=True))
    d = os.path.join(a.out, "bertmodel-f16")
    write_common(d, c, v)
    sd = {n[len("bert."):]: t for n, t in m.state_dict().items()}
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(sd, "F16"))
    expected["bertmodel-f16"] = outputs(m, v, "F16")

    with open(os.path.join(a.out, "expected.json"), "w") as f:
        json.dump(expected, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
