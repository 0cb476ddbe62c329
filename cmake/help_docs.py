#!/usr/bin/env python3
"""The reference documentation, generated from the program's own help, so it
cannot drift from what the program accepts:

  help_docs.py ZIBERT --markdown FILE       docs/cli.md: every command and option
  help_docs.py ZIBERT --man DIR             zibert(1) and zibert-COMMAND(1) pages
  help_docs.py ZIBERT --completion FILE     bash completion of commands and options

ZIBERT is the built binary; it is run with --help for the program and for each
command it lists."""
import argparse
import os
import re
import subprocess
import sys


def help_of(zibert, *args):
    env = dict(os.environ, COLUMNS="100")
    run = subprocess.run([zibert, *args, "--help"], capture_output=True, text=True, env=env)
    if run.returncode != 0:
        sys.exit(f"help_docs: {zibert} {' '.join(args)} --help failed: {run.stderr.strip()}")
    return run.stdout


def commands_of(top_help):
    """(name, summary) of each command, from the Subcommands: block."""
    block = top_help.split("Subcommands:\n", 1)[1]
    out = []
    for line in block.splitlines():
        m = re.match(r"^  (\S+)\s+(.*)$", line)
        if m:
            out.append((m.group(1), m.group(2).strip()))
    return out


def options_of(command_help):
    """Every option spelling in the Options: block (-m, --model, ...)."""
    block = command_help.split("Options:\n", 1)[1] if "Options:\n" in command_help else ""
    names = []
    for line in block.splitlines():
        m = re.match(r"^  (-[^\s]+)", line)
        if not m:
            continue
        for name in m.group(1).split(","):
            if name.startswith("-") and name not in names:
                names.append(name)
    return names


def markdown(zibert):
    top = help_of(zibert)
    parts = [
        "# Command-line reference\n\n",
        "Generated from the program's own `--help` by `cmake/help_docs.py`; a test fails when it is stale.\n",
        "Regenerate it with `cmake --build build --target cli-doc`.\n\n",
        "## zibert\n\n```\n", top, "```\n\n",
    ]
    commands = commands_of(top)
    parts.append("| command | what it does |\n|---|---|\n")
    for name, summary in commands:
        parts.append(f"| [`{name}`](#zibert-{name}) | {summary} |\n")
    for name, _ in commands:
        parts += [f"\n## zibert {name}\n\n```\n", help_of(zibert, name), "```\n"]
    return "".join(parts)


def roff_text(text):
    """Preformatted roff: backslashes escaped, no line taken for a request."""
    out = []
    for line in text.rstrip("\n").split("\n"):
        line = line.replace("\\", "\\e")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def man_pages(zibert, directory, version):
    top = help_of(zibert)
    commands = commands_of(top)
    os.makedirs(directory, exist_ok=True)
    header = '.TH {name} 1 "" "zibert {version}" "zibert manual"\n'
    see_also = ", ".join([r"\fBzibert\fR(1)"] + [rf"\fBzibert-{n}\fR(1)" for n, _ in commands])
    page = [header.format(name="ZIBERT", version=version),
            ".SH NAME\nzibert \\- a character-level BERT text classifier for the shell\n",
            ".SH SYNOPSIS\n\\fBzibert\\fR \\fICOMMAND\\fR [\\fIOPTIONS\\fR]\n",
            ".SH DESCRIPTION\n.nf\n" + roff_text(top) + "\n.fi\n",
            ".SH COMMANDS\n"]
    for name, summary in commands:
        page.append(f".TP\n\\fBzibert-{name}\\fR(1)\n{roff_text(summary)}\n")
    page += [".SH ENVIRONMENT\n.TP\nZIBERT_MODEL\nThe model file used when a command is given no \\fB-m\\fR.\n",
             ".TP\nZIBERT_INT8_ISA\nThe int8 product path: amx-int8, avx512-vnni, avx-vnni, avx2 or scalar.\n",
             ".TP\nZIBERT_FLOAT_ISA\nThe float32 product path: avx512, avx2 or eigen "
             "(default: the best this CPU has; all give the same results).\n",
             ".SH EXIT STATUS\n0 success (for classify's filter modes: something matched), 1 nothing matched, "
             "2 an error, said in one line on standard error.\n",
             ".SH SEE ALSO\n" + see_also + "\n"]
    write(os.path.join(directory, "zibert.1"), "".join(page))
    for name, summary in commands:
        text = help_of(zibert, name)
        page = [header.format(name=f"ZIBERT-{name.upper()}", version=version),
                f".SH NAME\nzibert-{name} \\- {roff_text(summary)}\n",
                f".SH SYNOPSIS\n\\fBzibert {name}\\fR [\\fIOPTIONS\\fR]\n",
                ".SH DESCRIPTION\n.nf\n" + roff_text(text) + "\n.fi\n",
                ".SH SEE ALSO\n" + see_also + "\n"]
        write(os.path.join(directory, f"zibert-{name}.1"), "".join(page))


def completion(zibert):
    top = help_of(zibert)
    commands = commands_of(top)
    cases = []
    for name, _ in commands:
        opts = " ".join(options_of(help_of(zibert, name)))
        cases.append(f"    {name}) opts='{opts}' ;;")
    names = " ".join(n for n, _ in commands)
    return f"""# bash completion for zibert, generated from its --help by cmake/help_docs.py
_zibert() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} command="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "${{COMP_WORDS[i]}}" in -*) ;; *) command=${{COMP_WORDS[i]}}; break ;; esac
  done
  if [ -z "$command" ]; then
    COMPREPLY=($(compgen -W '{names} --help --version' -- "$cur"))
    return
  fi
  local opts=""
  case "$command" in
{chr(10).join(cases)}
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}}
complete -o filenames -F _zibert zibert
"""


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("zibert")
    ap.add_argument("--markdown")
    ap.add_argument("--man")
    ap.add_argument("--completion")
    ap.add_argument("--version", default="")
    a = ap.parse_args()
    if a.markdown:
        write(a.markdown, markdown(a.zibert))
    if a.man:
        man_pages(a.zibert, a.man, a.version)
    if a.completion:
        write(a.completion, completion(a.zibert))


if __name__ == "__main__":
    main()
