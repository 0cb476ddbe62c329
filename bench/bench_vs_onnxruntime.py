#!/usr/bin/env python3
"""zibert against ONNX Runtime (CPU, npm onnxruntime-node) on the same model,
texts and length-bucketed batches, float32 and int8, at 1 and 2 threads.

Per shape: zibert trains a model for one epoch on generated texts (the
weights only need to be real), `zibert quantize` makes its int8 twin, and
scripts/export-onnx exports the float32 model twice: as it is, and in ONNX
Runtime's dynamic int8 form (DynamicQuantizeLinear + MatMulInteger, int8
weights per output column). ONNX Runtime gets the batches zibert's Predictor
forms (texts sorted by length, 32 per batch, cut to at most 512 token rows),
one session run per batch with intra-op threads; zibert runs `bench -m
MODEL --infer-only --data` (its Predictor over the same texts). Each of the
four runs --rounds times per thread count, alternating; medians are kept.
Before timing, ONNX Runtime's probabilities are checked against zibert's.

usage: bench/bench-vs-onnxruntime [--seconds 5] [--rounds 3] [--texts 4096] [--threads 1,2]
                                    [--shape NAME] [--json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from bench_vs_pytorch import CHARS, DEFAULT_SHAPES, LENGTHS, SHAPES, write_data, shape_flags  # noqa: E402
from export_onnx import read_zibert, tokenize  # noqa: E402

ZIBERT = os.path.join(ROOT, "build", "zibert")
ORT_DIR = os.path.join(ROOT, "build", "onnxruntime")
PREDICT_ROWS, BATCH_WINDOWS = 512, 32  # zibert's kPredictRows and window batches
MAX_LEN = 128


def zibert(*args, **kw):
    return subprocess.run([ZIBERT, *args], check=True, capture_output=True, text=True, **kw).stdout


def batches_of(meta, texts):
    """The passes zibert's Predictor forms (infer/window_plan): by length, 32 a batch, <= 512 rows a pass."""
    seqs = sorted((tokenize(meta, t, MAX_LEN) for t in texts), key=len)
    out = []
    for b0 in range(0, len(seqs), BATCH_WINDOWS):
        bucket = seqs[b0:b0 + BATCH_WINDOWS]
        t = max(map(len, bucket))
        group = max(1, PREDICT_ROWS // t)
        for g0 in range(0, len(bucket), group):
            rows = bucket[g0:g0 + group]
            out.append(dict(rows=len(rows), seq=t, ids=[i for s in rows for i in s + [0] * (t - len(s))]))
    return out


def ort(model, batches_path, mode, threads=1, seconds=5):
    env = dict(os.environ, ORT_NODE_MODULE=os.path.join(ORT_DIR, "node_modules", "onnxruntime-node"))
    out = subprocess.run(["node", os.path.join(ROOT, "bench", "ort_bench.js"), model, batches_path, mode,
                          str(threads), str(seconds)], check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out)


def check(tmp, meta, texts, onnx_path, model_path, labels, tolerance):
    """ONNX Runtime's probabilities on some texts against zibert classify's (4 decimals)."""
    texts = texts[:64]
    path = os.path.join(tmp, "check.json")
    # One text per batch, so that each row is the text alone (as classify sees it).
    with open(path, "w") as f:
        json.dump([dict(rows=1, seq=len(s), ids=s) for s in (tokenize(meta, t, MAX_LEN) for t in texts)], f)
    got = ort(onnx_path, path, "probs")
    out = zibert("classify", "-m", model_path, "--format", "jsonl", "-", input="\n".join(texts) + "\n")
    want = [json.loads(line)["probs"] for line in out.splitlines()]
    worst = max(abs(g[i] - w[labels[i]]) for g, w in zip(got, want) for i in range(len(labels)))
    agree = sum((g[1] >= 0.5) == (w[labels[1]] >= 0.5) for g, w in zip(got, want)) / len(texts)
    if worst > tolerance:
        sys.exit(f"bench-vs-onnxruntime: {onnx_path} differs from {model_path} by {worst:.2e} (> {tolerance})")
    return worst, agree


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--texts", type=int, default=4096)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--shape", choices=[name for name, _ in SHAPES], action="append",
                    help="run this shape (repeatable; default: shipped and C=128; rbt3 and base are the 768-wide "
                         "shapes of real Chinese BERTs)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.max_len = MAX_LEN
    threads = [int(t) for t in args.threads.split(",")]
    shapes = [(n, s) for n, s in SHAPES if n in (args.shape or DEFAULT_SHAPES)]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, shape in shapes:
            data = os.path.join(tmp, f"bench-{CHARS[name]}.tsv")  # over a Chinese BERT's vocabulary when 768 wide
            write_data(data, args.texts, 1, CHARS[name], LENGTHS[MAX_LEN])
            with open(data, encoding="utf-8") as f:
                texts = [line.rstrip("\n").split("\t", 1)[1] for line in f]
            print(f"bench-vs-onnxruntime: {name}: training, quantizing, exporting", file=sys.stderr)
            f32, i8 = os.path.join(tmp, f"{name}.safetensors"), os.path.join(tmp, f"{name}.int8.safetensors")
            # The weights only need to be real: at the 768-wide shapes, one epoch of 64 texts.
            train = data
            if shape["dim"] >= 768:
                train = os.path.join(tmp, f"{name}.train.tsv")
                with open(data, encoding="utf-8") as f, open(train, "w", encoding="utf-8") as out:
                    out.writelines(f.readlines()[:64])
            zibert("train", "--data", train, "--out", f32, "--epochs", "1", "--seed", "1", "-q", *shape_flags(args, shape))
            zibert("quantize", "-m", f32, "--out", i8, "-q")
            onnx_f32, onnx_i8 = os.path.join(tmp, f"{name}.onnx"), os.path.join(tmp, f"{name}.int8.onnx")
            for out, extra in ((onnx_f32, []), (onnx_i8, ["--int8"])):
                subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "export_onnx.py"), f32, out, *extra],
                               check=True, capture_output=True)
            meta, _ = read_zibert(f32)
            labels = json.loads(meta["labels"])
            batches_path = os.path.join(tmp, f"{name}.batches.json")
            with open(batches_path, "w") as f:
                json.dump(batches_of(meta, texts), f)
            checks = dict(ort_f32_vs_zibert_f32=check(tmp, meta, texts, onnx_f32, f32, labels, 1.5e-4),
                          ort_int8_vs_zibert_int8=check(tmp, meta, texts, onnx_i8, i8, labels, 1.0))
            for t in threads:
                runs = {k: [] for k in ("zibert_f32", "zibert_int8", "ort_f32", "ort_int8")}
                for r in range(args.rounds):
                    print(f"bench-vs-onnxruntime: {name}, {t} threads, round {r + 1}/{args.rounds}", file=sys.stderr)
                    for key, model in (("zibert_f32", f32), ("zibert_int8", i8)):
                        j = json.loads(zibert("bench", "-m", model, "--infer-only", "--data", data, "--json",
                                              "--threads", str(t), "--seconds", str(args.seconds),
                                              "--ceiling-size", "256"))
                        runs[key].append(j["inference"]["examples_per_s"])
                    for key, model in (("ort_f32", onnx_f32), ("ort_int8", onnx_i8)):
                        runs[key].append(ort(model, batches_path, "bench", t, args.seconds)["examples_per_s"])
                row = dict(shape=name, **shape, threads=t, rounds=args.rounds, checks=checks,
                           **{k: statistics.median(v) for k, v in runs.items()})
                row["int8_vs_ort_best"] = row["zibert_int8"] / max(row["ort_f32"], row["ort_int8"])
                row["f32_vs_ort_f32"] = row["zibert_f32"] / row["ort_f32"]
                results.append(row)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{args.texts} generated texts of 8-126 characters; examples/s, median of {args.rounds} alternating rounds "
          f"of {args.seconds:g} s; ONNX Runtime {ort_version()}")
    print(f"{'shape':<24} {'threads':>7} {'zibert f32':>10} {'zibert int8':>11} {'ORT f32':>9} {'ORT int8':>9} "
          f"{'f32/ORT f32':>11} {'int8/ORT best':>13}")
    for row in results:
        label = f"{row['shape']} L{row['layers']} C{row['dim']} F{row['ffn']}"
        print(f"{label:<24} {row['threads']:>7} {row['zibert_f32']:>10.0f} {row['zibert_int8']:>11.0f} "
              f"{row['ort_f32']:>9.0f} {row['ort_int8']:>9.0f} {row['f32_vs_ort_f32']:>10.2f}x "
              f"{row['int8_vs_ort_best']:>12.2f}x")
    for row in results[::len(threads)]:
        (wf, _), (wi, agree) = row["checks"]["ort_f32_vs_zibert_f32"], row["checks"]["ort_int8_vs_zibert_int8"]
        print(f"check {row['shape']}: ORT f32 within {wf:.1e} of zibert f32; ORT int8 within {wi:.3f} of zibert "
              f"int8, same label on {100 * agree:.0f} % of 64 texts")


def ort_version():
    try:
        with open(os.path.join(ORT_DIR, "node_modules", "onnxruntime-node", "package.json")) as f:
            return json.load(f)["version"]
    except OSError:
        return "?"


if __name__ == "__main__":
    main()
