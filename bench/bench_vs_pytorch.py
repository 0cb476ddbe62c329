#!/usr/bin/env python3
"""zibert against PyTorch: the same post-LN BERT, the same generated TSV, the
same batch, optimiser and number of threads, one after the other in one run.
Each side runs --rounds times per shape, alternating, and its median is kept.

With --mlm both sides measure masked-LM pretraining (zibert bench --mlm,
torch_bench.py --mlm: BertForMaskedLM's head, packed sequences, fresh masks)
in place of classifier training and inference.

With --int8 both sides measure inference only, float32 and int8: zibert
bench --int8 (the network quantized as zibert quantize does) against
torch.quantization.quantize_dynamic on the Linear layers, on the faster of
the quantized engines Debian's PyTorch offers (onednn, qnnpack).

With --bf16 both sides run their matrix products in bfloat16: zibert bench
--bf16 (AMX where the CPU has it) against the model under PyTorch's
torch.autocast("cpu", dtype=torch.bfloat16) (oneDNN's bfloat16 kernels).

With --max-len 512 the texts are 300-500 characters long and the batch is 8
(long inputs); PyTorch then runs under a 16 GiB address-space cap.

usage: bench/bench-vs-pytorch [--threads 2] [--batch 32 (64 with --mlm, 8 at --max-len 512)] [--seconds 5]
                                [--mlm | --int8] [--rounds 3] [--texts 4096] [--shape NAME] [--max-len 128|512]
                                [--bf16] [--json] [--zibert BIN]
"""
import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZIBERT = os.path.join(ROOT, "build", "zibert")
SHAPES = [("shipped", dict(layers=2, heads=4, dim=64, ffn=256)),
          ("C=128", dict(layers=4, heads=4, dim=128, ffn=512)),
          ("rbt3", dict(layers=3, heads=12, dim=768, ffn=3072)),
          ("base", dict(layers=12, heads=12, dim=768, ffn=3072))]
DEFAULT_SHAPES = ("shipped", "C=128")  # the real BERT shapes take minutes: asked for by --shape
# Characters the generated texts draw from: zibert's small models' vocabulary,
# and for the 768-wide shapes about the 21,128 ids of Chinese BERTs.
CHARS = {"shipped": 3000, "C=128": 3000, "rbt3": 21123, "base": 21123}
# Text lengths in characters at each --max-len: short sentences up to the
# limit, or long texts of 300-500 characters.
LENGTHS = {128: (8, 126), 512: (300, 500)}
TORCH_ADDRESS_CAP = 16 << 30  # bytes: PyTorch's address space at max-len 512


def write_data(path, texts, seed, chars, lengths):
    """Random CJK texts, lengths uniform in the range, over `chars` characters."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(texts):
            n = rng.randint(*lengths)
            text = "".join(chr(0x4E00 + rng.randrange(chars)) for _ in range(n))
            f.write(f"{rng.randint(0, 1)}\t{text}\n")


def machine():
    """The CPU's model name and the number of cores, as /proc/cpuinfo says."""
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        return f"{names[0]}, {len(names)} logical CPUs"
    except (OSError, IndexError):
        return "unknown CPU"


def shape_flags(args, shape):
    return [f"--{k}={v}" for k, v in shape.items()] + [f"--max-len={args.max_len}"]


def run_zibert(args, data, shape):
    cmd = [args.zibert, "bench", "--data", data, "--json", "--threads", str(args.threads), "--batch", str(args.batch),
           "--seconds", str(args.seconds)] + shape_flags(args, shape) + (["--mlm"] if args.mlm else []) + \
        (["--int8", "--infer-only"] if args.int8 else []) + (["--bf16"] if args.bf16 else [])
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def run_torch(args, data, shape):
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS=str(args.threads),
               GLOG_minloglevel="2")  # qnnpack warns once per Linear call
    # PyTorch at its best: this machine's OpenBLAS overrides (OPENBLAS_CORETYPE,
    # OPENBLAS_L2_SIZE, set for older OpenBLAS builds) slow a current one, so
    # they are lifted for PyTorch's command alone.
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(name, None)
    cmd = ["/usr/bin/python3", os.path.join(ROOT, "bench", "torch_bench.py"), "--data", data, "--threads",
           str(args.threads), "--batch", str(args.batch), "--seconds", str(args.seconds)] + shape_flags(args, shape) + \
        (["--mlm"] if args.mlm else []) + (["--int8"] if args.int8 else []) + (["--bf16"] if args.bf16 else [])

    def cap():
        if args.max_len > 128:
            resource.setrlimit(resource.RLIMIT_AS, (TORCH_ADDRESS_CAP, TORCH_ADDRESS_CAP))
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, env=env,
                                     preexec_fn=cap).stdout)


def median_of(runs, phase, key):
    return statistics.median(r[phase][key] for r in runs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--batch", type=int, default=None,
                    help="examples per step (default 32, as train; with --mlm 64, as pretrain)")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--texts", type=int, default=4096)
    ap.add_argument("--zibert", default=ZIBERT, help="the zibert binary (default: build/zibert)")
    ap.add_argument("--shape", choices=[name for name, _ in SHAPES], action="append",
                    help="run this shape (repeatable; default: shipped and C=128; rbt3 and base are the "
                         "768-wide shapes of real Chinese BERTs)")
    ap.add_argument("--max-len", type=int, choices=sorted(LENGTHS), default=128,
                    help="positions: 128 (texts of 8-126 characters) or 512 (300-500, batch 8)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--mlm", action="store_true", help="masked-LM pretraining instead of training and inference")
    ap.add_argument("--int8", action="store_true", help="float32 and int8 inference instead")
    ap.add_argument("--bf16", action="store_true",
                    help="matrix products in bfloat16 on both sides (zibert --bf16, PyTorch autocast)")
    args = ap.parse_args()
    if args.mlm + args.int8 + args.bf16 > 1:
        ap.error("--mlm, --int8 and --bf16 exclude each other")
    if args.batch is None:
        args.batch = 64 if args.mlm else 8 if args.max_len == 512 else 32
    phases = ("pretrain",) if args.mlm else ("inference", "inference_int8") if args.int8 else ("train", "inference")
    shapes = [(name, shape) for name, shape in SHAPES if name in (args.shape or DEFAULT_SHAPES)]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, shape in shapes:
            data = os.path.join(tmp, f"bench-{CHARS[name]}.tsv")
            if not os.path.exists(data):
                write_data(data, args.texts, 1, CHARS[name], LENGTHS[args.max_len])
            z, t = [], []
            for r in range(args.rounds):
                print(f"bench-vs-pytorch: {name} round {r + 1}/{args.rounds}", file=sys.stderr)
                z.append(run_zibert(args, data, shape))
                t.append(run_torch(args, data, shape))
            row = dict(shape=name, **shape, max_len=args.max_len, batch=args.batch, threads=args.threads,
                       torch=t[0]["torch"], torch_int8_engine=t[0].get("int8_engine", ""),
                       zibert_int8_speedup=statistics.median(x.get("int8_speedup", 0) for x in z),
                       ceiling_gflops=statistics.median(x["ceiling"]["gflops"] for x in z),
                       ceiling_gemm_gflops=statistics.median(x["ceiling"]["gemm_gflops"] for x in z),
                       ceiling_eigen_gflops=statistics.median(x["ceiling"]["eigen_gflops"] for x in z))
            for phase in phases:
                zs, ts = median_of(z, phase, "examples_per_s"), median_of(t, phase, "examples_per_s")
                row[phase] = dict(zibert_examples_per_s=zs, torch_examples_per_s=ts, ratio=zs / ts,
                                  zibert_gflops=median_of(z, phase, "gflops"),
                                  zibert_ceiling_fraction=median_of(z, phase, "ceiling_fraction"),
                                  torch_gflops=median_of(t, phase, "gflops"),
                                  zibert_peak_rss_mb=median_of(z, phase, "peak_rss_mb"),
                                  torch_peak_rss_mb=median_of(t, phase, "peak_rss_mb"))
            results.append(row)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{time.strftime('%Y-%m-%d')}, {machine()}")
    print(f"{args.texts} generated texts of {'-'.join(map(str, LENGTHS[args.max_len]))} characters, "
          f"max-len {args.max_len}, batch {args.batch}, {args.threads} threads, "
          f"median of {args.rounds} rounds of {args.seconds:g} s per phase; PyTorch {results[0]['torch']}" +
          (", products in bfloat16 (zibert --bf16, PyTorch autocast)" if args.bf16 else "") +
          (f", int8 engine {results[0]['torch_int8_engine']}" if args.int8 else ""))
    print(f"{'shape':<28} {'phase':<10} {'zibert ex/s':>11} {'PyTorch ex/s':>12} {'ratio':>6} "
          f"{'zibert GFLOP/s':>14} {'of ceiling':>10} {'PyTorch GFLOP/s':>15} {'peak MB: zibert':>15} {'PyTorch':>7}")
    for row in results:
        label = f"{row['shape']} L{row['layers']} H{row['heads']} C{row['dim']} F{row['ffn']}"
        for phase in phases:
            p = row[phase]
            print(f"{label:<28} {phase.replace('inference_int8', 'int8'):<10} {p['zibert_examples_per_s']:>11.0f} {p['torch_examples_per_s']:>12.0f} "
                  f"{p['ratio']:>5.1f}x {p['zibert_gflops']:>14.1f} {100 * p['zibert_ceiling_fraction']:>9.1f}% "
                  f"{p['torch_gflops']:>15.1f} {p['zibert_peak_rss_mb']:>15.0f} {p['torch_peak_rss_mb']:>7.0f}")
        if args.int8:
            print(f"{'':<28} int8/float32: zibert {row['zibert_int8_speedup']:.2f}x (median of its rounds), PyTorch "
                  f"{row['inference_int8']['torch_examples_per_s'] / row['inference']['torch_examples_per_s']:.2f}x")
        print(f"{'':<28} ceiling    {row['ceiling_gflops']:.1f} GFLOP/s (2048^3 float32, same threads; "
              f"zibert's gemm {row['ceiling_gemm_gflops']:.1f}, Eigen {row['ceiling_eigen_gflops']:.1f})")


if __name__ == "__main__":
    main()
