#!/usr/bin/env python3
"""English sentences from Debian's fortunes (English fortune cookies), one a
line: 30-140 characters, five words or more, plain ASCII prose (verse and
ASCII art left out), sorted. With --count N, N of them drawn at random
(--seed) instead of all: a detector recipe's English base sentences.

The sentences a recipe does not draw (--count N --seed 1) are shuffled once
and split: the first 5,000 are bench/fp-sample --english's, which no recipe
trains on, and the rest (--plain) are plain negatives a recipe may train on.

usage: english_sentences.py OUT [--count N] [--seed S] [--plain] [--fortunes DIR]
"""
import argparse
import glob
import os
import random
import re
import sys


def sentences(fortunes):
    found = set()
    for path in sorted(glob.glob(os.path.join(fortunes, "*"))):
        name = os.path.basename(path)
        if "." in name or name in ("chinese", "tang300", "song100", "art", "ascii-art"):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, IsADirectoryError):
            continue
        for cookie in text.split("\n%\n"):
            if re.search(r"^\s", cookie, re.M) and cookie.count("\n") > 3:
                continue  # indented: verse, dialogue or art
            for s in re.split(r"(?<=[.!?])\s+", " ".join(cookie.split())):
                if (30 <= len(s) <= 140 and len(s.split()) >= 5 and s[0].isupper() and s[-1] in ".!?"
                        and re.fullmatch(r"[A-Za-z0-9 ,.;:'\"!?()-]+", s)):
                    found.add(s)
    return sorted(found)


MEASURED = 5000  # bench/fp-sample --english's sentences


def drawn(found, count, seed):
    """count of the sentences at random (seed): a recipe's base sentences."""
    found = list(found)
    random.Random(seed).shuffle(found)
    return found[:count]


def untaught(found, count):
    """The sentences a recipe drawing count with seed 1 never sees, in a fixed
    shuffled order: the first MEASURED are for measuring, the rest for --plain."""
    taught = set(drawn(found, count, 1))
    rest = sorted(s for s in found if s not in taught)
    random.Random(1).shuffle(rest)
    return rest


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--plain", action="store_true",
                    help="the sentences neither drawn (--count N --seed 1) nor measured: plain negatives")
    ap.add_argument("--fortunes", default="/usr/share/games/fortunes")
    a = ap.parse_args()
    found = sentences(a.fortunes)
    if not found:
        sys.exit(f"english_sentences.py: {a.fortunes}: no English fortunes (is Debian's fortunes installed?)")
    if a.plain:
        if not a.count or a.seed != 1:
            sys.exit("english_sentences.py: --plain needs the recipe's --count N and seed 1")
        found = untaught(found, a.count)[MEASURED:]
    elif a.count:
        found = drawn(found, a.count, a.seed)
    tmp = a.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s in found))
    os.replace(tmp, a.out)
    print(f"english_sentences.py: {len(found)} sentences in {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
