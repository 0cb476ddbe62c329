#!/usr/bin/python3
"""PyTorch reference for zibert's parity tests.

Builds the same tiny post-LN BERT classifier as zibert (DESIGN §3: Hugging Face
tensor names, exact-erf GELU, LayerNorm eps 1e-12, tanh pooler on [CLS]) in
float64, runs it on two sequences (one padded), and records the logits, the
loss, every parameter's gradient, and the parameters after 3 AdamW steps with
linear warmup/decay and gradient clipping. The fixture is committed, so the
C++ tests never need PyTorch.

It writes a second fixture the same way for BertForMaskedLM's shape (issue
16): the encoder with the masked-LM head (transform dense, GELU, LayerNorm,
a decoder tied to the word embeddings plus cls.predictions.bias), the
logits on the masked positions only, the loss over them, every gradient
(the tied decoder's adding into the word embeddings') and 3 AdamW steps.

usage: tests/reference/torch_reference.py [OUT.json [OUT_MLM.json]]   (Debian python3-torch)
"""
import json
import math
import os
import sys

import torch

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


def make_params(cfg, task="classify"):
    params = {}
    for name, shape in layout(cfg, task):
        if name.endswith("LayerNorm.weight"):
            t = 1.0 + 0.2 * (torch.rand(shape, dtype=DT) - 0.5)
        else:
            t = torch.rand(shape, dtype=DT) - 0.5  # large enough for clear gradients
        params[name] = torch.nn.Parameter(t)
    return params


def encode(P, ids, cfg):
    B, T = ids.shape
    c, H = cfg["dim"], cfg["heads"]
    D = c // H
    eps = cfg["layer_norm_eps"]
    ln = lambda x, pre: torch.nn.functional.layer_norm(x, (c,), P[pre + ".weight"], P[pre + ".bias"], eps)
    lin = lambda x, pre: x @ P[pre + ".weight"].T + P[pre + ".bias"]
    mask = (ids != PAD)  # (B, T) key-padding mask
    x = P["bert.embeddings.word_embeddings.weight"][ids] + P["bert.embeddings.position_embeddings.weight"][:T]
    x = ln(x, "bert.embeddings.LayerNorm")
    for l in range(cfg["layers"]):
        p = f"bert.encoder.layer.{l}."
        heads = lambda t: t.view(B, T, H, D).transpose(1, 2)  # (B, H, T, D)
        q = heads(lin(x, p + "attention.self.query"))
        k = heads(lin(x, p + "attention.self.key"))
        v = heads(lin(x, p + "attention.self.value"))
        s = q @ k.transpose(-1, -2) / math.sqrt(D)
        s = s.masked_fill(~mask[:, None, None, :], float("-inf"))
        a = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, c)
        x = ln(x + lin(a, p + "attention.output.dense"), p + "attention.output.LayerNorm")
        h = torch.nn.functional.gelu(lin(x, p + "intermediate.dense"))  # exact erf form
        x = ln(x + lin(h, p + "output.dense"), p + "output.LayerNorm")
    return x


def lin_of(P, x, pre):
    return x @ P[pre + ".weight"].T + P[pre + ".bias"]


def forward(P, ids, cfg):
    x = encode(P, ids, cfg)
    pooled = torch.tanh(lin_of(P, x[:, 0], "bert.pooler.dense"))
    return lin_of(P, pooled, "classifier")


def forward_mlm(P, ids, positions, cfg):
    """BertForMaskedLM's logits on the chosen rows only, (M, V)."""
    c = cfg["dim"]
    x = encode(P, ids, cfg).reshape(-1, c)[positions]
    h = torch.nn.functional.gelu(lin_of(P, x, "cls.predictions.transform.dense"))
    h = torch.nn.functional.layer_norm(h, (c,), P["cls.predictions.transform.LayerNorm.weight"],
                                       P["cls.predictions.transform.LayerNorm.bias"], cfg["layer_norm_eps"])
    return h @ P["bert.embeddings.word_embeddings.weight"].T + P["cls.predictions.bias"]


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
    P = make_params(CFG)
    ids = torch.tensor(IDS)
    labels = torch.tensor(LABELS)
    fixture = {"config": CFG, "ids": IDS, "mask": [[int(i != PAD) for i in row] for row in IDS], "labels": LABELS,
               "adam": ADAM, "params": {n: flat(p) for n, p in P.items()}}

    def classify():
        logits = forward(P, ids, CFG)
        return logits, torch.nn.functional.cross_entropy(logits, labels)
    record(P, classify, fixture)
    with open(out, "w") as f:
        json.dump(fixture, f)
    print(f"wrote {out}: loss {fixture['loss']:.6f}, grad norms {fixture['grad_norms']}")

    # BertForMaskedLM: the same encoder shape, the masked-LM head.
    cfg = dict(CFG, labels=0, task="mlm")
    P = make_params(cfg, "mlm")
    ids = torch.tensor(MLM_IDS)
    positions, targets = torch.tensor(MLM_POSITIONS), torch.tensor(MLM_TARGETS)
    fixture = {"config": cfg, "ids": MLM_IDS, "positions": MLM_POSITIONS, "targets": MLM_TARGETS, "adam": ADAM,
               "params": {n: flat(p) for n, p in P.items()}}

    def mlm():
        logits = forward_mlm(P, ids, positions, cfg)
        return logits, torch.nn.functional.cross_entropy(logits, targets)
    record(P, mlm, fixture)
    with open(out_mlm, "w") as f:
        json.dump(fixture, f)
    print(f"wrote {out_mlm}: loss {fixture['loss']:.6f}, grad norms {fixture['grad_norms']}")


if __name__ == "__main__":
    main()
