#!/usr/bin/env python3
"""Writes a toy corpus for the claim of DESIGN §0: random CJK strings where
label 1 has 佛跳墙 inserted contiguously and label 0 has 佛, 跳 and 墙 inserted
in the same order but never adjacent. Only a model that sees order and
adjacency (two attention layers with positions) can separate them.

usage: toy_corpus.py OUT.tsv COUNT SEED [--min-len N] [--max-len N]
"""
import argparse
import random

PHRASE = "佛跳墙"
# Filler characters from the start of the CJK block, none of them in the phrase.
def make_pool(size):
    return [chr(c) for c in range(0x4E00, 0x4E00 + size + 10) if chr(c) not in PHRASE][:size]



def positive(rng, pool, length):
    chars = [rng.choice(pool) for _ in range(length)]
    at = rng.randint(0, length)
    return "".join(chars[:at]) + PHRASE + "".join(chars[at:])


def scattered(rng, pool, length):
    chars = [rng.choice(pool) for _ in range(length)]
    # three insertion points with at least one filler character between them
    while True:
        a, b, c = sorted(rng.sample(range(length + 1), 3))
        if b - a >= 1 and c - b >= 1:
            break
    out = chars[:a] + ["佛"] + chars[a:b] + ["跳"] + chars[b:c] + ["墙"] + chars[c:]
    return "".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("count", type=int)
    ap.add_argument("seed", type=int)
    ap.add_argument("--min-len", type=int, default=8)
    ap.add_argument("--max-len", type=int, default=30)
    ap.add_argument("--pool", type=int, default=200, help="how many distinct filler characters")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    pool = make_pool(args.pool)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("label\ttext\tcategory\n")
        for i in range(args.count):
            length = rng.randint(args.min_len, args.max_len)
            if i % 2 == 0:
                f.write(f"1\t{positive(rng, pool, length)}\tcontiguous\n")
            else:
                f.write(f"0\t{scattered(rng, pool, length)}\tscattered\n")


if __name__ == "__main__":
    main()
