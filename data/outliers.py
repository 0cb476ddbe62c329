#!/usr/bin/env python3
"""Outlier texts for the 佛跳墙 detector (train --outliers: outlier exposure,
Hendrycks et al., ICLR 2019), and their matched mentions.

An outlier is a base sentence with the phrase spaced by a separator the
detector is not taught: a punctuation mark or symbol (「, ?, ※, ¥, →, …), a
doubled separator (__, //, ——), a spaced one (" / ", " | "), or two mixed
(-_). Trained towards the uniform distribution, such texts teach the detector
that a spacing it does not know leaves it unsure, rather than sure either way.
Each outlier comes with a matched mention: the same sentence, place and
script with one of synth's seventeen separators, so that what tells the two
apart is the separator alone (not the sentence, its length or the place).

Held out, never used here, are the forms README's Calibration table
measures (data/unseen-forms.tsv): ^ $ % ` \\ 、 -- == ++ ^^ and " . ", " ~ ",
" * ", " ^ ", and 仏 (and the ten added on 2026-12-05: – … † ♦ ∙ 〜 ‐ " → ").
The comma (，, NFKC ,) is an outlier separator only with --comma, which
data/build-fotiaoqiang passes (since 2026-12-05): the commonest mark in
Chinese, read by the detector as a clause break, it had left 佛，跳，墙 sure
of "no mention" (P 0.9953) however the rest generalised. scripts/detect-train
does not pass it: for a phrase made of words, such as 北京烤鸭, the comma
outliers taught the detector that 北京，…烤鸭 (two clauses) may be a mention
(4 to 7 of 15 such hand-written near misses wrong, against 0 or 1 without,
over four draws of the outliers; the README's Calibration section).
A separator is kept only if NFKC leaves it one character that is neither a
letter, a digit, a space, one of synth's separators nor a held-out one.

Writes OUTDIR/outliers.txt (one text per line) and OUTDIR/matched.tsv
(label<TAB>text<TAB>category, label 1). --phrase (repeatable: the phrase and
its variants; default 佛跳墙, 佛跳牆, 佛跳墻) and --known (the separators synth
was given, as one string; default the seventeen above) make them for another
detector (scripts/detect-train).

The base sentences are BASE/{simplified,traditional}.txt (--base; default OUTDIR).

With --mix WORDS (repeatable; a Latin word per character of the phrase, such as
its pinyin 'fo tiao qiang'), --mixed N more outliers write the phrase half in
Latin letters: one or two of its characters replaced by their words, as typed,
capitalised or upper-cased (fo跳墙, 佛跳Qiang, FO TIAO墙), each with its
matched mention. No form of them is taught as a mention or as a negative, so
the detector should be unsure of such texts, not sure of "no".

With --describe FILE (descriptions of the dish that never name it, one per
line, such as data/fotiaoqiang-descriptions.txt), --described N more
outliers put one in a base sentence or a short frame (我想吃{}, {}真香), each
with its matched mention (the phrase in its place): a text that describes
the dish is told apart from a mention by the name alone, and the detector
should not be sure it is none.

usage: outliers.py OUTDIR [--count 3000] [--seed 7] [--phrase P ...] [--known SEPS] [--base DIR] [--comma]
                   [--mix WORDS ... --mixed N] [--describe FILE --described N]
"""
import argparse
import os
import random
import unicodedata

# synth's separators in data/build-fotiaoqiang (with the space and ·).
KNOWN = list(" ·-—_/|・\u3000~*+.@=#&")
HELD_OUT_CHARS = set("^$%`\\、仏–…†♦∙〜‐")
HELD_OUT = HELD_OUT_CHARS | {"--", "==", "++", "^^", " . ", " ~ ", " * ", " ^ ", " → "}
SINGLE = ("!\"',():;<>?[]{}" "。《》「」『』【】〔〕•‧°±×÷→←↑↓★☆○●□■△▲◆◇※§¶©®€£¥¢‰♪♥✓≈≠≤≥∞√¤¦¬‖‘’“”〈〉")
MULTI = ["__", "//", "||", "..", "**", "~~", "##", "&&", "@@", "——", "··", " - ", " _ ", " / ", " | ", " + ", " @ ",
         " # ", "-_", "/.", "!!", "??", "::", ";;"]
PHRASES = ["佛跳墙", "佛跳牆", "佛跳墻"]
SHORT = ["{}", "一锅{}", "一坛{}", "{}年菜", "招牌{}", "正宗{}", "我想吃{}", "今天吃{}"]
FRAMES = ["我想吃{}。", "{}真香。", "今天终于吃到了{}。", "年夜饭有{}。", "你吃过{}吗？", "{}，贵是贵，但值得。",
          "昨天点了{}。", "{}要提前预订。"]


def separators(known, comma):
    kept = set()
    for c in SINGLE:
        n = unicodedata.normalize("NFKC", c)
        if n == "," and not comma:
            continue
        if len(n) == 1 and not n.isalnum() and not n.isspace() and n not in known and n not in HELD_OUT_CHARS:
            kept.add(n)
    return sorted(kept) + [s for s in MULTI if s not in known and s not in HELD_OUT]


def mixed_form(rng, phrase, words):
    """The phrase with one or more (never all) of its characters replaced by their words."""
    n = len(phrase)
    k = rng.randrange(1, n) if n > 1 else 1
    latin = set(rng.sample(range(n), k))
    case = rng.choice((str.lower, str.lower, str.capitalize, str.upper))
    spaced = rng.random() < 0.3
    out = ""
    for i, c in enumerate(phrase):
        if i in latin:
            out += (" " if spaced and out and not out.endswith(" ") else "") + case(words[i])
        else:
            out += (" " if spaced and out and out[-1].isascii() else "") + c
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--phrase", action="append", help="the phrase or a variant (repeat)")
    ap.add_argument("--known", help="the separators the detector is taught, as one string")
    ap.add_argument("--base", help="the folder of the base sentences (default: OUTDIR)")
    ap.add_argument("--comma", action="store_true", help="the comma is an outlier separator too")
    ap.add_argument("--mix", action="append", default=[], help="a Latin word per character of the phrase (repeat)")
    ap.add_argument("--mixed", type=int, default=0, help="outliers with the phrase half in those words")
    ap.add_argument("--describe", help="descriptions of the dish that never name it, one a line")
    ap.add_argument("--described", type=int, default=0, help="outliers made of those descriptions")
    a = ap.parse_args()
    mixes = [m.split() for m in a.mix]
    if a.mixed and not mixes:
        ap.error("--mixed needs --mix")
    descriptions = []
    if a.describe:
        with open(a.describe, encoding="utf-8") as f:
            descriptions = [line.strip() for line in f if line.strip()]
    if a.described and not descriptions:
        ap.error("--described needs --describe FILE with a description a line")
    rng = random.Random(a.seed)
    known = list(a.known) if a.known is not None else KNOWN
    phrases = a.phrase or PHRASES
    seps = separators(known, a.comma)
    base = {}
    for script in ("simplified", "traditional"):
        with open(os.path.join(a.base or a.outdir, script + ".txt"), encoding="utf-8") as f:
            base[script] = [line.strip() for line in f if line.strip()]
    with open(os.path.join(a.outdir, "outliers.txt"), "w", encoding="utf-8") as out, \
         open(os.path.join(a.outdir, "matched.tsv"), "w", encoding="utf-8") as matched:
        for _ in range(a.count):
            script = rng.choice(("simplified", "traditional"))
            phrase = rng.choice(phrases)
            sep, taught = rng.choice(seps), rng.choice(known)
            if rng.random() < 0.3:  # short, on its own or in a dish's name
                template = rng.choice(SHORT)
                before, after, kind = template[:template.index("{}")], template[template.index("{}") + 2:], "short"
            else:
                s = rng.choice(base[script])
                k = rng.randrange(len(s) + 1)
                before, after, kind = s[:k], s[k:], script
            out.write(before + sep.join(phrase) + after + "\n")
            matched.write(f"1\t{before}{taught.join(phrase)}{after}\tpos-matched/{kind}\n")
        for _ in range(a.mixed):
            script = rng.choice(("simplified", "traditional"))
            phrase, words = rng.choice(phrases), rng.choice(mixes)
            if len(words) != len(phrase):
                ap.error(f"--mix '{' '.join(words)}' has {len(words)} words for the {len(phrase)} characters of {phrase}")
            s = rng.choice(base[script])
            k = rng.randrange(len(s) + 1)
            out.write(s[:k] + mixed_form(rng, phrase, words) + s[k:] + "\n")
            matched.write(f"1\t{s[:k]}{phrase}{s[k:]}\tpos-matched/mixed\n")
        for _ in range(a.described):
            phrase, description = rng.choice(phrases), rng.choice(descriptions)
            if rng.random() < 0.5:
                frame = rng.choice(FRAMES)
                before, after = frame[:frame.index("{}")], frame[frame.index("{}") + 2:]
            else:
                s = rng.choice(base[rng.choice(("simplified", "traditional"))])
                k = rng.randrange(len(s) + 1)
                before, after = s[:k], s[k:]
            out.write(before + description + after + "\n")
            matched.write(f"1\t{before}{phrase}{after}\tpos-matched/described\n")
    print(f"outliers.py: {a.count + a.mixed + a.described} outliers and matched mentions, {len(seps)} separators", flush=True)


if __name__ == "__main__":
    main()
