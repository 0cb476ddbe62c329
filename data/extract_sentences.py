#!/usr/bin/env python3
"""Extracts clean Chinese sentences from Debian's fortunes-zh and manpages-zh.

Writes two files, one sentence per line, de-duplicated:
  simplified.txt   fortunes (chinese.u8 prose and proverbs, tang300/song100
                   poetry) and zh_CN man pages
  traditional.txt  zh_TW man pages, and `opencc -c s2twp` conversions of a third
                   of the fortune sentences (those then leave simplified.txt)

Each man page is taken in one script only (zh_CN or zh_TW, by a hash of its
name), and each fortune sentence in one script only, so the same content never
appears twice in different scripts (where it could leak across splits).
Kept sentences have 8–120 characters, at least 60 % of them CJK ideographs.

usage: extract_sentences.py OUTDIR
"""
import glob
import hashlib
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

FORTUNES = "/usr/share/games/fortunes"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
SENTENCE_END = re.compile(r"(?<=[。！？；!?])")


def is_cjk(c):
    o = ord(c)
    return 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF


def keep(s):
    s = s.strip()
    if not 8 <= len(s) <= 120:
        return None
    visible = [c for c in s if not c.isspace()]
    if sum(is_cjk(c) for c in visible) < 0.6 * len(visible):
        return None
    return s


def split_paragraph(text):
    # Wrapped lines join without a space between CJK characters.
    text = re.sub(r"\s*\n\s*", "", text).strip()
    return [p for p in SENTENCE_END.split(text) if p.strip()]


def fortune_sentences(names=("chinese.u8", "tang300.u8", "song100.u8")):
    out = []
    for name in names:
        with open(os.path.join(FORTUNES, name), encoding="utf-8", errors="replace") as f:
            entries = f.read().split("\n%\n")
        for entry in entries:
            paragraphs = []
            for block in re.split(r"\n\s*\n", entry):
                lines = [l for l in block.split("\n") if l.strip()]
                # titles, authors and attributions are coloured or start with --
                lines = [l for l in lines if "\x1b[" not in l and not l.strip().startswith("--")]
                if name == "chinese.u8":
                    paragraphs += split_paragraph("\n".join(lines))
                else:  # poetry: each line is a sentence
                    paragraphs += [ANSI.sub("", l).strip() for l in lines]
            out += [ANSI.sub("", p) for p in paragraphs]
    return out


def render(page):
    env = dict(os.environ, MANWIDTH="1000", LANG="C.UTF-8")
    try:
        r = subprocess.run(["man", "-E", "UTF-8", "-l", page], capture_output=True, env=env, timeout=60)
        text = subprocess.run(["col", "-bx"], input=r.stdout, capture_output=True).stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return []
    out = []
    for block in re.split(r"\n\s*\n", text):
        out += split_paragraph(block)
    return out


def man_sentences():
    pages = {}
    for lang in ("zh_CN", "zh_TW"):
        for path in glob.glob(f"/usr/share/man/{lang}/man*/*"):
            pages.setdefault(os.path.relpath(path, f"/usr/share/man/{lang}"), {})[lang] = path
    chosen = {"zh_CN": [], "zh_TW": []}
    for rel, by_lang in sorted(pages.items()):
        want = "zh_TW" if int(hashlib.sha1(rel.encode()).hexdigest(), 16) % 2 else "zh_CN"
        lang = want if want in by_lang else next(iter(sorted(by_lang)))
        chosen[lang].append(by_lang[lang])
    result = {}
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for lang, paths in chosen.items():
            result[lang] = [s for sents in pool.map(render, paths) for s in sents]
    return result["zh_CN"], result["zh_TW"]


def dedupe(sentences):
    seen, out = set(), []
    for s in sentences:
        s = keep(s)
        if s and s not in seen:
            seen.add(s)
            out.append(s)
    return out


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    fortunes = dedupe(fortune_sentences())
    to_convert = [s for s in fortunes if int(hashlib.sha1(s.encode()).hexdigest(), 16) % 3 == 0]
    simplified_fortunes = [s for s in fortunes if int(hashlib.sha1(s.encode()).hexdigest(), 16) % 3 != 0]
    converted = subprocess.run(["opencc", "-c", "s2twp.json"], input="\n".join(to_convert) + "\n",
                               capture_output=True, text=True, check=True).stdout.splitlines()
    man_cn, man_tw = man_sentences()
    simplified = dedupe(simplified_fortunes + man_cn)
    traditional = dedupe(converted + man_tw)
    for name, rows in (("simplified.txt", simplified), ("traditional.txt", traditional)):
        with open(os.path.join(outdir, name), "w", encoding="utf-8") as f:
            f.write("\n".join(rows) + "\n")
        print(f"{name}: {len(rows)} sentences", file=sys.stderr)


if __name__ == "__main__":
    main()
