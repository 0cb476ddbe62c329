#!/usr/bin/env python3
"""The general Chinese corpus for pretraining, built from Debian
packages only; nothing of it is committed.

Writes OUTDIR/zh-corpus.txt, one sentence per line, de-duplicated, and
OUTDIR/zh-sources.tsv, source<TAB>sentence for the source-identification task:
  fortune      fortunes-zh's prose and proverbs (chinese.u8), simplified
  poem         fortunes-zh's Tang and Song poems (tang300.u8, song100.u8)
  man-zh_CN    manpages-zh, simplified
  man-zh_TW    manpages-zh, traditional
  doc-zh_CN    debian-reference-zh-cn, maint-guide-zh-cn, debian-faq-zh-cn
  doc-zh_TW    debian-reference-zh-tw, maint-guide-zh-tw
Sentences are those extract_sentences.py keeps (8-120 characters, at least
60 % CJK ideographs), split at 。！？；, and each appears once, in one source.

usage: zh_corpus.py OUTDIR
"""
import glob
import gzip
import html.parser
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import extract_sentences as ex  # noqa: E402


class Text(html.parser.HTMLParser):
    """The visible text of an HTML page, paragraphs apart; code blocks left out."""

    def __init__(self):
        super().__init__()
        self.parts, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in ("pre", "script", "style", "code", "tt"):
            self.skip += 1
        if tag in ("p", "li", "td", "dt", "dd", "h1", "h2", "h3", "h4", "div", "br", "title"):
            self.parts.append("\n\n")

    def handle_endtag(self, tag):
        if tag in ("pre", "script", "style", "code", "tt") and self.skip:
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def paragraphs_sentences(text):
    out = []
    for block in re.split(r"\n\s*\n", text):
        out += ex.split_paragraph(block)
    return out


def html_sentences(pattern):
    out = []
    for path in sorted(glob.glob(pattern)):
        parser = Text()
        with open(path, encoding="utf-8", errors="replace") as f:
            parser.feed(f.read())
        out += paragraphs_sentences("".join(parser.parts))
    return out


def txt_gz_sentences(path):
    if not os.path.exists(path):
        return []
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as f:
        return paragraphs_sentences(f.read())


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    man_cn, man_tw = ex.man_sentences()
    sources = [
        ("fortune", ex.fortune_sentences(["chinese.u8"])),
        ("poem", ex.fortune_sentences(["tang300.u8", "song100.u8"])),
        ("man-zh_CN", man_cn),
        ("man-zh_TW", man_tw),
        ("doc-zh_CN", txt_gz_sentences("/usr/share/debian-reference/debian-reference.zh-cn.txt.gz")
         + html_sentences("/usr/share/doc/maint-guide-zh-cn/html/*.html")
         + html_sentences("/usr/share/doc/debian-faq/html/*.zh-cn.html")
         + html_sentences("/usr/share/doc/debian-faq-zh-cn/html/*.html")),
        ("doc-zh_TW", txt_gz_sentences("/usr/share/debian-reference/debian-reference.zh-tw.txt.gz")
         + html_sentences("/usr/share/doc/maint-guide-zh-tw/html/*.html")),
    ]
    seen, rows = set(), []
    for name, sentences in sources:
        kept = 0
        for s in sentences:
            s = ex.keep(s)
            if s and s not in seen:
                seen.add(s)
                rows.append((name, s))
                kept += 1
        print(f"{name}: {kept} sentences", file=sys.stderr)
    with open(os.path.join(outdir, "zh-corpus.txt"), "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for _, s in rows))
    with open(os.path.join(outdir, "zh-sources.tsv"), "w", encoding="utf-8") as f:
        f.write("label\ttext\n" + "".join(f"{n}\t{s}\n" for n, s in rows))
    print(f"zh-corpus.txt: {len(rows)} sentences, {sum(len(s) for _, s in rows)} characters", file=sys.stderr)


if __name__ == "__main__":
    main()
