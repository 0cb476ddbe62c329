#!/usr/bin/env python3
"""The PyTorch side of bench/bench-vs-pytorch: the model zibert trains
(DESIGN §3: post-LN BERT, exact-erf GELU, LayerNorm eps 1e-12, tanh pooler on
[CLS], dropout 0.1), as the PyTorch reference (tests/reference/torch_bert.py)
defines it with Hugging Face's names and semantics, trained with AdamW (decay
on matrices only), linear warmup/decay and gradient clipping, on the same
labelled TSV in batches formed the same way as zibert's (length-bucketed).
Prints one JSON object with the same fields as `zibert bench --json`.

With --mlm it measures masked-LM pretraining instead (`zibert bench --mlm`):
BertForMaskedLM's head (transform, GELU, LayerNorm, a decoder tied to the
word embeddings), the texts packed into max-len sequences as zibert packs
them, 15 % of the characters chosen afresh each step (80/10/10), and the
head's (V, C) product on the chosen rows only, as zibert computes it (Hugging
Face's BertForMaskedLM computes it for every row, which is slower).

With --int8 it measures inference only: the float32 model, then the same
model through torch.quantization.quantize_dynamic (every Linear int8,
activations quantized per batch at run time) on each quantized engine this
build offers (Debian's: onednn and qnnpack); the faster engine is reported.

usage: bench/torch_bench.py --data F.tsv --threads N --batch B --seconds S
                              --layers L --heads H --dim C --ffn F --max-len T [--mlm | --int8]
"""
import argparse
import contextlib
import json
import random
import resource
import sys
import time
import unicodedata

import os

import torch
import torch.nn.functional as Fn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
from torch_bert import Bert, hf_config, init_weights  # noqa: E402

PAD, UNK, CLS, SEP, MASK, NUM_SPECIAL = 0, 1, 2, 3, 4, 5


def make_model(a, vocab, head, labels=2):
    """The reference BERT (tests/reference/torch_bert.py) in zibert's shape: no token types, hidden
    dropout 0.1 as zibert trains, none on the attention weights (zibert has none there), Q, K and V
    in one product (PyTorch's best case), Hugging Face's initialisation."""
    config = hf_config(vocab, a.max_len, a.dim, a.heads, a.ffn, a.layers, labels=labels, type_vocab_size=0,
                       dropout=0.1, attention_dropout=0.0)
    return init_weights(Bert(config, head=head, fused_qkv=True))


def pack_lines(seqs, max_len):
    """zibert's packing (train/packing): [CLS] line [SEP] line [SEP] ... up to max_len."""
    out, cur = [], [CLS]
    for s in seqs:
        line = s[1:-1]
        while len(line) > max_len - 2:
            if len(cur) > 1:
                out.append(cur)
                cur = [CLS]
            out.append([CLS] + line[: max_len - 2] + [SEP])
            line = line[max_len - 2:]
        if not line:
            continue
        if len(cur) + len(line) + 1 > max_len:
            out.append(cur)
            cur = [CLS]
        cur += line + [SEP]
    if len(cur) > 1:
        out.append(cur)
    return out


def mask_tokens(ids, vocab, gen):
    """BERT's masking: 15 % of the characters chosen; 80 % [MASK], 10 % random, 10 % kept."""
    chosen = (ids >= NUM_SPECIAL) & (torch.rand(ids.shape, generator=gen) < 0.15)
    action = torch.rand(ids.shape, generator=gen)
    out = ids.clone()
    out[chosen & (action < 0.8)] = MASK
    rand = chosen & (action >= 0.8) & (action < 0.9)
    out[rand] = torch.randint(NUM_SPECIAL, vocab, (int(rand.sum()),), generator=gen)
    positions = chosen.reshape(-1).nonzero().squeeze(1)
    return out, positions, ids.reshape(-1)[positions]


def load(path, max_len):
    texts, labels = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            label, text = line.split("\t", 1)
            texts.append(unicodedata.normalize("NFKC", text))
            labels.append(label)
    counts = {}
    for t in texts:
        for ch in t:
            counts[ch] = counts.get(ch, 0) + 1
    chars = sorted(counts, key=lambda ch: (-counts[ch], ord(ch)))
    vocab = {ch: NUM_SPECIAL + i for i, ch in enumerate(chars)}
    label_ids = {name: i for i, name in enumerate(sorted(set(labels)))}
    seqs = [[CLS] + [vocab.get(ch, UNK) for ch in t][: max_len - 2] + [SEP] for t in texts]
    return seqs, [label_ids[l] for l in labels], NUM_SPECIAL + len(chars), max(2, len(label_ids))


def plan(lengths, batch, seed):
    """Length-bucketed batches as zibert forms them: shuffled, sorted by length
    in pools of 50 batches, batch order shuffled (seed), or sorted (None)."""
    order = list(range(len(lengths)))
    if seed is None:
        order.sort(key=lambda i: lengths[i])
        return [order[i:i + batch] for i in range(0, len(order), batch)]
    rng = random.Random(seed)
    rng.shuffle(order)
    pool = 50 * batch
    batches = []
    for start in range(0, len(order), pool):
        chunk = sorted(order[start:start + pool], key=lambda i: lengths[i])
        batches += [chunk[i:i + batch] for i in range(0, len(chunk), batch)]
    rng.shuffle(batches)
    return batches


def pack(seqs, labels, members):
    T = max(len(seqs[i]) for i in members)
    ids = torch.zeros((len(members), T), dtype=torch.long)
    for r, i in enumerate(members):
        ids[r, :len(seqs[i])] = torch.tensor(seqs[i])
    return ids, torch.tensor([labels[i] for i in members])


def forward_flops(a, n, labels):
    per_token = 2 * a.dim * a.dim * 4 + 4 * a.dim * a.ffn  # every row of every layer, as PyTorch computes them
    return a.layers * (n * per_token + 4 * n * n * a.dim) + 2 * a.dim * a.dim + 2 * a.dim * labels


def optimizer(model):
    """AdamW as zibert's (decay on matrices only) with a warmup schedule."""
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([dict(params=decay, weight_decay=0.01), dict(params=no_decay, weight_decay=0.0)],
                            lr=1e-4, betas=(0.9, 0.999), eps=1e-8)
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda k: min(1.0, (k + 1) / 100))


def mlm_flops(a, n, chosen, vocab):
    """What this model computes: every row of every layer, the head on the chosen rows (zibert's
    mlm_forward_flops counts its last layer's chosen rows only, which is all it computes)."""
    return forward_flops(a, n, 0) - 2 * a.dim * a.dim + chosen * (2 * a.dim * a.dim + 2 * a.dim * vocab)


def run_phase(batches, seqs, step, seconds, flop_factor, a, labels, whole=False):
    """Steps over the batches in order until `seconds` have passed; whole: in
    whole passes over every batch, as zibert bench times inference (a pass of
    length-sorted batches cut short would time only the shortest texts)."""
    packed = [pack(seqs, labels_all, m) for m in batches for labels_all in [LABELS]]
    # two untimed steps warm up, the first on the largest batch (as zibert bench does)
    step(*max(packed, key=lambda p: p[0].numel()))
    step(*packed[1 % len(packed)])
    res = dict(steps=0, examples=0, tokens=0, padded=0, flops=0.0)
    nxt = 0 if whole else 2 % len(packed)
    start = time.perf_counter()
    while (res["steps"] < 3 or time.perf_counter() - start < seconds) if not whole else \
            (res["steps"] < len(packed) or nxt != 0 or time.perf_counter() - start < seconds):
        ids, y = packed[nxt]
        for i in batches[nxt]:
            res["tokens"] += len(seqs[i])
            res["flops"] += flop_factor * forward_flops(a, len(seqs[i]), labels)
        step(ids, y)
        res["steps"] += 1
        res["examples"] += ids.shape[0]
        res["padded"] += ids.numel()
        nxt = (nxt + 1) % len(packed)
    secs = time.perf_counter() - start
    gflops = res["flops"] / secs / 1e9
    return dict(seconds=secs, steps=res["steps"], examples=res["examples"], examples_per_s=res["examples"] / secs,
                tokens_per_s=res["tokens"] / secs, padding=1 - res["tokens"] / res["padded"], gflops=gflops,
                peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


LABELS = None


def main():
    global LABELS
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    for name, default in [("threads", 2), ("batch", 32), ("layers", 2), ("heads", 4), ("dim", 64), ("ffn", 256),
                          ("max-len", 128), ("seed", 1)]:
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--mlm", action="store_true", help="measure masked-LM pretraining instead")
    ap.add_argument("--int8", action="store_true", help="measure float32 and dynamic-int8 inference only")
    ap.add_argument("--bf16", action="store_true",
                    help="products in bfloat16: the model run under torch.autocast('cpu', dtype=torch.bfloat16)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    seqs, LABELS, vocab, n_labels = load(a.data, a.max_len)
    if a.mlm:
        print(json.dumps(mlm_main(a, seqs, vocab)))
        return
    lengths = [len(s) for s in seqs]
    model = make_model(a, vocab, "classify", n_labels)
    params = sum(p.numel() for p in model.parameters())
    opt, sched = optimizer(model)

    def products():
        return torch.autocast("cpu", dtype=torch.bfloat16) if a.bf16 else contextlib.nullcontext()

    def train_step(ids, y):
        opt.zero_grad(set_to_none=True)
        with products():
            logits = model(ids)
        loss = Fn.cross_entropy(logits.float(), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()

    def infer_step(ids, y):
        with torch.inference_mode(), products():
            torch.softmax(model(ids).float(), dim=-1)

    if a.int8:
        print(json.dumps(int8_main(a, model, seqs, lengths, n_labels, params, vocab)))
        return
    model.train()
    train = run_phase(plan(lengths, a.batch, a.seed), seqs, train_step, a.seconds, 3.0, a, n_labels)
    model.eval()
    infer = run_phase(plan(lengths, a.batch, None), seqs, infer_step, a.seconds, 1.0, a, n_labels, whole=True)
    print(json.dumps(dict(torch=torch.__version__, threads=torch.get_num_threads(), parameters=params,
                          vocab_size=vocab, bf16=a.bf16, train=train, inference=infer)))


def int8_main(a, model, seqs, lengths, n_labels, params, vocab):
    """Float32 inference, then quantize_dynamic's on every quantized engine."""
    import copy
    model.eval()
    batches = plan(lengths, a.batch, None)

    def infer_with(m):
        def step(ids, y):
            with torch.inference_mode():
                torch.softmax(m(ids), dim=-1)
        return run_phase(batches, seqs, step, a.seconds, 1.0, a, n_labels, whole=True)

    out = dict(torch=torch.__version__, threads=torch.get_num_threads(), parameters=params, vocab_size=vocab,
               inference=infer_with(model), engines={})
    for engine in [e for e in ("onednn", "fbgemm", "qnnpack") if e in torch.backends.quantized.supported_engines]:
        torch.backends.quantized.engine = engine
        q = torch.quantization.quantize_dynamic(copy.deepcopy(model), {torch.nn.Linear}, dtype=torch.qint8)
        out["engines"][engine] = infer_with(q)
    best = max(out["engines"], key=lambda e: out["engines"][e]["examples_per_s"])
    out["inference_int8"], out["int8_engine"] = out["engines"][best], best
    return out


def mlm_main(a, seqs, vocab):
    packed = pack_lines(seqs, a.max_len)
    lengths = [len(s) for s in packed]
    model = make_model(a, vocab, "mlm")
    params = sum(p.numel() for p in model.parameters())
    opt, sched = optimizer(model)
    gen = torch.Generator().manual_seed(a.seed)
    batches = plan(lengths, a.batch, a.seed)
    padded = [pack(packed, [0] * len(packed), m)[0] for m in batches]

    def step(ids):
        masked, positions, targets = mask_tokens(ids, vocab, gen)  # drawn afresh each step, timed too
        opt.zero_grad(set_to_none=True)
        loss = Fn.cross_entropy(model.mlm_logits(masked, positions), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        return int(positions.numel())

    model.train()
    for i in range(2):
        step(padded[i % len(padded)])
    res = dict(steps=0, examples=0, tokens=0, padded=0, flops=0.0)
    nxt = 2 % len(padded)
    start = time.perf_counter()
    while res["steps"] < 3 or time.perf_counter() - start < a.seconds:
        ids = padded[nxt]
        chosen = step(ids)
        n_real = sum(lengths[i] for i in batches[nxt])
        res["tokens"] += n_real
        # the chosen rows spread over the batch's sequences in proportion to their characters
        res["flops"] += 3.0 * sum(mlm_flops(a, lengths[i], chosen * lengths[i] / n_real, vocab) for i in batches[nxt])
        res["steps"] += 1
        res["examples"] += ids.shape[0]
        res["padded"] += ids.numel()
        nxt = (nxt + 1) % len(padded)
    secs = time.perf_counter() - start
    phase = dict(seconds=secs, steps=res["steps"], examples=res["examples"], examples_per_s=res["examples"] / secs,
                 tokens_per_s=res["tokens"] / secs, padding=1 - res["tokens"] / res["padded"],
                 gflops=res["flops"] / secs / 1e9,
                 peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return dict(torch=torch.__version__, threads=torch.get_num_threads(), parameters=params, vocab_size=vocab,
                pretrain=phase)


if __name__ == "__main__":
    main()
