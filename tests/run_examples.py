#!/usr/bin/env python3
"""Runs every example the program and the README show, as a user would type it.

  run_examples.py ZIBERT SOURCE_DIR

The examples: the command lines under "Example:" or "Examples:" in `zibert
--help` and in each command's help, those of `zibert` with no command, and
the README tour's (its code blocks: "$ command" lines followed by what they
print, or plain command lines). Each runs with bash in one scratch folder that
holds the files the examples name (notes.txt, train.tsv, …) and links to the
source tree's data/ and models/, with ZIBERT's folder first on PATH. An
example works when it exits 0 (or its writer got SIGPIPE from a reader such as
head that stopped early) and, where its output is shown, prints those
lines in that order ("…" stands for lines left out). An example that needs
what the tests do not have says so in a trailing comment, "# needs …", or
runs until stopped, "# runs until Ctrl-C"; it is skipped with that reason.
A `zibert bench` example that gives no --seconds runs with --seconds 0.3: what
is checked is that it works, not the speed it reports, and at the default 3 s
a phase the benchmarks took nine tenths of this test's time.
The last line reads "N passed, N failed, N skipped"."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = re.compile(r"#\s*(needs .*|runs until Ctrl-C.*)$")


def run(cmd, cwd, env, timeout=300):
    return subprocess.run(["bash", "-c", "set -o pipefail; " + cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def quick_bench(cmd):
    """cmd, with --seconds 0.3 after `zibert bench` when it gives none."""
    if re.match(r"zibert bench\b", cmd) and "--seconds" not in cmd:
        return "zibert bench --seconds 0.3" + cmd[len("zibert bench"):]
    return cmd


def join_continued(lines):
    out, cur = [], ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1].rstrip() + " "
            continue
        out.append((cur + line.strip()).strip())
        cur = ""
    return out


def help_examples(zibert, env):
    """(where, command) of every example in the program's help."""
    top = run(f"{zibert} --help", "/", env).stdout
    commands = []
    block = top.split("Subcommands:\n", 1)[1]
    for line in block.splitlines():
        m = re.match(r"^  (\S+)\s", line)
        if m:
            commands.append(m.group(1))
    found = []
    for line in top.split("Usage:")[0].splitlines():  # the description's examples
        if line.startswith("  zibert "):
            found.append(("zibert --help", line.strip()))
    for name in commands:
        text = run(f"{zibert} {name} --help", "/", env).stdout
        m = re.search(r"^Examples?:\n((?:  .*\n?|\n)*)", text, re.M)
        if not m:
            continue
        lines = [l for l in m.group(1).splitlines() if l.startswith("  ")]
        for cmd in join_continued(lines):
            found.append((f"zibert {name} --help", cmd))
    # zibert with no command: one example per command, some of them using
    # what the examples above made (train.jsonl)
    listing = run(zibert, "/", env).stderr
    for line in listing.splitlines():
        if re.match(r"^\s{10,}zibert ", line):
            found.append(("zibert", line.strip()))
    return found


def readme_examples(source):
    """(where, command, shown output lines or None) of the README tour's code blocks."""
    text = open(os.path.join(source, "README.md"), encoding="utf-8").read()
    tour = text.split("## A tour", 1)[1].split("\n## ", 1)[0]
    found = []
    for block in re.findall(r"```(\w*)\n(.*?)```", tour, re.S):
        lines = block[1].splitlines()
        if any(l.startswith("$ ") for l in lines):
            cmd, shown = None, []
            for line in lines + ["$ "]:
                if line.startswith("$ "):
                    if cmd:
                        found.append(("README", cmd, shown))
                    cmd, shown = line[2:].strip(), []
                else:
                    shown.append(line)
        else:
            for cmd in join_continued(lines):
                if cmd:
                    found.append(("README", cmd, None))
    return found


def shown_in_order(shown, actual):
    """The shown lines, "…" skipping, appear in actual's lines in that order."""
    lines = actual.splitlines()
    i = 0
    for want in shown:
        if want.strip() in ("…", ""):
            continue
        while i < len(lines) and lines[i].rstrip() != want.rstrip():
            i += 1
        if i == len(lines):
            return want
        i += 1
    return None


def scratch_folder(source):
    work = tempfile.mkdtemp(prefix="zibert-examples-")
    os.symlink(os.path.join(source, "data"), os.path.join(work, "data"))
    os.symlink(os.path.join(source, "models"), os.path.join(work, "models"))
    demo = [l.split("\t") for l in open(os.path.join(source, "data", "demo.tsv"), encoding="utf-8").read().splitlines()]
    rows = demo[1:]
    texts = [r[1] for r in rows]

    def write(name, text):
        with open(os.path.join(work, name), "w", encoding="utf-8") as f:
            f.write(text)

    for name in ("train.tsv", "dev.tsv", "test.tsv"):
        write(name, "label\ttext\n" + "".join(f"{r[0]}\t{r[1]}\n" for r in rows))
    write("notes.txt", "".join(t + "\n" for t in texts[:6] + texts[-6:]))
    write("menu.txt", "今日推荐：佛跳墙、红烧肉、清蒸鱼\n")
    write("review.txt", "年夜饭点了一坛佛跳墙，味道很好。\n")
    write("chat.log", "")
    write("corpus.txt", "".join(t + "\n" for t in texts))
    write("simplified.txt", "".join(t + "\n" for t in texts))
    write("traditional.txt", "佛跳牆要提前一天預訂。\n這家店的湯很好喝。\n我們明天去吃飯。\n")
    write("variants.tsv", "仏\t佛\n")
    write("sentences.txt", "".join(t + "\n" for t in texts))
    write("unlabelled.txt", "".join(t + "\n" for t in texts))
    # A Hugging Face checkpoint directory, as zibert import's examples read one (rbt3/).
    shutil.copytree(os.path.join(source, "tests", "data", "hf", "pretraining-bin"), os.path.join(work, "rbt3"))
    for name in ("model.safetensors", "old.safetensors", "big.safetensors"):
        shutil.copy(os.path.join(source, "models", "fotiaoqiang.safetensors"), os.path.join(work, name))
    return work


def main():
    zibert, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    env = dict(os.environ, PATH=os.path.dirname(zibert) + os.pathsep + os.environ.get("PATH", ""), COLUMNS="100")
    env.pop("ZIBERT_MODEL", None)
    examples = [(w, c, None) for w, c in help_examples(zibert, env)] + readme_examples(source)
    work = scratch_folder(source)
    passed = failed = skipped = 0
    for where, cmd, shown in examples:
        skip = SKIP.search(cmd)
        if skip:
            print(f"SKIP  [{where}] {cmd}\n      ({skip.group(1)})")
            skipped += 1
            continue
        r = run(quick_bench(cmd), work, env)
        if r.returncode == 141:  # SIGPIPE: a reader such as head stopped early, as it means to
            r.returncode = 0
        missing = shown_in_order(shown, r.stdout + r.stderr) if shown is not None and r.returncode == 0 else None
        if r.returncode == 0 and missing is None:
            print(f"ok    [{where}] {cmd}")
            passed += 1
            continue
        failed += 1
        print(f"FAIL  [{where}] {cmd}")
        print(f"      exit {r.returncode}" + (f"; shown but not printed: {missing}" if missing else ""))
        for line in (r.stderr or r.stdout).splitlines()[-5:]:
            print("      | " + line)
    shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
