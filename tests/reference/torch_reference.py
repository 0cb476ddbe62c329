#!/usr/bin/env python3
"""The parity fixtures: the PyTorch reference (torch_bert.py) against zibert.

Builds a tiny BertForSequenceClassification (DESIGN §3: Hugging Face tensor
names, exact-erf GELU, LayerNorm eps 1e-12, tanh pooler on [CLS]) in float64
from the reference model, runs it on two sequences (one padded), and records
the logits, the loss, every parameter's gradient, and the parameters after 3
AdamW steps with linear warmup/decay and gradient clipping. The fixture is committed, so the
C++ tests never need PyTorch.

It writes a second fixture the same way for BertForMaskedLM's shape: the
encoder with the masked-LM head (transform dense, GELU, LayerNorm, a decoder
tied to the word embeddings plus cls.predictions.bias), the logits on the
masked positions only, the loss over them, every gradient
(the tied decoder's adding into the word embeddings') and 3 AdamW steps.

usage: /usr/bin/python3 tests/reference/torch_reference.py [OUT.json [OUT_MLM.json]]   (Debian python3-torch)
"""
import json
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_bert import Bert, hf_config  # noqa: E402

torch.manual_seed(1234)
DT = torch.float64

CFG = dict(vocab_size=12, max_len=8, dim=8, heads=2, ffn=16, layers=2, labels=3, layer_norm_eps=1e-12)
PAD, CLS, SEP = 0, 2, 3
IDS = [[CLS, 5, 6, 7, 8, SEP], [CLS, 9, 10, SEP, PAD, PAD]]
LABELS = [2, 0]
# The masked-LM fixture: [MASK] = 4 in place of some characters; the loss is
# on the chosen positions (rows b*T+t), one of them kept as it was.
MLM_IDS = [[CLS, 5, 4, 7, 8, SEP], [CLS, 9, 4, SEP, PAD, PAD]]
MLM_POSITIONS = [2, 4, 8]
MLM_TARGETS = [6, 8, 10]
ADAM = dict(lr=0.05, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01, clip_norm=0.5, warmup=2, total=3, steps=3)


def layout(cfg, task="classify"):
    c, f = cfg["dim"], cfg["ffn"]
    shapes = [("bert.embeddings.word_embeddings.weight", (cfg["vocab_size"], c)),
              ("bert.embeddings.position_embeddings.weight", (cfg["max_len"], c)),
              ("bert.embeddings.LayerNorm.weight", (c,)), ("bert.embeddings.LayerNorm.bias", (c,))]
    for l in range(cfg["layers"]):
        p = f"bert.encoder.layer.{l}."
        for part in ("query", "key", "value"):
            shapes.append((p + f"attention.self.{part}.weight", (c, c)))
        for part in ("query", "key", "value"):
            shapes.append((p + f"attention.self.{part}.bias", (c,)))
        shapes += [(p + "attention.output.dense.weight", (c, c)), (p + "attention.output.dense.bias", (c,)),
                   (p + "attention.output.LayerNorm.weight", (c,)), (p + "attention.output.LayerNorm.bias", (c,)),
                   (p + "intermediate.dense.weight", (f, c)), (p + "intermediate.dense.bias", (f,)),
                   (p + "output.dense.weight", (c, f)), (p + "output.dense.bias", (c,)),
                   (p + "output.LayerNorm.weight", (c,)), (p + "output.LayerNorm.bias", (c,))]
    if task == "classify":
        shapes += [("bert.pooler.dense.weight", (c, c)), ("bert.pooler.dense.bias", (c,)),
                   ("classifier.weight", (cfg["labels"], c)), ("classifier.bias", (cfg["labels"],))]
    else:
        shapes += [("cls.predictions.transform.dense.weight", (c, c)), ("cls.predictions.transform.dense.bias", (c,)),
                   ("cls.predictions.transform.LayerNorm.weight", (c,)),
                   ("cls.predictions.transform.LayerNorm.bias", (c,)), ("cls.predictions.bias", (cfg["vocab_size"],))]
    return shapes


def make_model(cfg, task="classify"):
    """The reference model (torch_bert.Bert) in float64 without dropout or token types, its
    parameters drawn in layout's order (the order the committed fixtures were drawn in)."""
    config = hf_config(cfg["vocab_size"], cfg["max_len"], cfg["dim"], cfg["heads"], cfg["ffn"], cfg["layers"],
                       labels=cfg["labels"], layer_norm_eps=cfg["layer_norm_eps"], type_vocab_size=0,
                       dropout=0.0, attention_dropout=0.0)
    rng = torch.get_rng_state()  # the modules' own initialisation draws nothing from the fixture's stream
    model = Bert(config, head=task).to(DT)
    torch.set_rng_state(rng)
    own = dict(model.named_parameters())
    assert sorted(own) == sorted(n for n, _ in layout(cfg, task)), "layout and the model disagree"
    with torch.no_grad():
        for name, shape in layout(cfg, task):
            if name.endswith("LayerNorm.weight"):
                t = 1.0 + 0.2 * (torch.rand(shape, dtype=DT) - 0.5)
            else:
                t = torch.rand(shape, dtype=DT) - 0.5  # large enough for clear gradients
            own[name].copy_(t)
    return model, {name: own[name] for name, _ in layout(cfg, task)}


def flat(t):
    return [float(v) for v in t.detach().reshape(-1)]


def lr_lambda(step):  # same schedule as zibert's lr_multiplier
    k = step + 1
    if k <= ADAM["warmup"]:
        return k / ADAM["warmup"]
    return max(0.0, (ADAM["total"] - k + 1) / (ADAM["total"] - ADAM["warmup"] + 1))


def record(P, loss_fn, fixture):
    """The loss, logits and gradients at P, then 3 AdamW steps with clipping, into fixture."""
    logits, loss = loss_fn()
    loss.backward()
    fixture["logits"] = [flat(row) for row in logits]
    fixture["loss"] = float(loss)
    fixture["grads"] = {n: flat(p.grad) for n, p in P.items()}
    decay = [p for n, p in P.items() if p.dim() == 2]
    no_decay = [p for n, p in P.items() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": ADAM["weight_decay"]},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=ADAM["lr"], betas=(ADAM["beta1"], ADAM["beta2"]), eps=ADAM["eps"])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
    norms = []
    for _ in range(ADAM["steps"]):
        opt.zero_grad()
        loss_fn()[1].backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(list(P.values()), ADAM["clip_norm"])))
        opt.step()
        sched.step()
    assert all(n > ADAM["clip_norm"] for n in norms), "the fixture should exercise clipping"
    fixture["grad_norms"] = norms
    fixture["params_after"] = {n: flat(p) for n, p in P.items()}


def main():
    here = os.path.join(os.path.dirname(__file__), "..", "data")
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "torch_parity.json")
    out_mlm = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "torch_parity_mlm.json")
    model, P = make_model(CFG)
    ids = torch.tensor(IDS)
    labels = torch.tensor(LABELS)
    fixture = {"config": CFG, "ids": IDS, "mask": [[int(i != PAD) for i in row] for row in IDS], "labels": LABELS,
               "adam": ADAM, "params": {n: flat(p) for n, p in P.items()}}

    def classify():
        logits = model(ids)
        return logits, torch.nn.functional.cross_entropy(logits, labels)
    record(P, classify, fixture)
    with open(out, "w") as f:
        json.dump(fixture, f)
    print(f"wrote {out}: loss {fixture['loss']:.6f}, grad norms {fixture['grad_norms']}")

    # BertForMaskedLM: the same encoder shape, the masked-LM head.
    cfg = dict(CFG, labels=0, task="mlm")
    model, P = make_model(cfg, "mlm")
    ids = torch.tensor(MLM_IDS)
    positions, targets = torch.tensor(MLM_POSITIONS), torch.tensor(MLM_TARGETS)
    fixture = {"config": cfg, "ids": MLM_IDS, "positions": MLM_POSITIONS, "targets": MLM_TARGETS, "adam": ADAM,
               "params": {n: flat(p) for n, p in P.items()}}

    def mlm():
        logits = model.mlm_logits(ids, positions)
        return logits, torch.nn.functional.cross_entropy(logits, targets)
    record(P, mlm, fixture)
    with open(out_mlm, "w") as f:
        json.dump(fixture, f)
    print(f"wrote {out_mlm}: loss {fixture['loss']:.6f}, grad norms {fixture['grad_norms']}")


if __name__ == "__main__":
    main()
