#!/usr/bin/env python3
"""help_man_test.py SAMPO MANDIR - every option in `sampo CMD --help` is documented in
docs/man/sampo-CMD.1 and every option documented there is in --help, for every subcommand.
help_man_test.py --som SOM MANDIR - the same for `som --help` and docs/man/som.1.
Options are taken from the definition part of the help's option lines ("  -o, --output OUT
  text") and from the tag lines after .TP in the man page."""
import re
import subprocess
import sys

OPT = re.compile(r"(?<![\w-])(--?[A-Za-z][A-Za-z-]*)")


def help_options(prog, cmd):
    r = subprocess.run([prog] + ([cmd] if cmd else []) + ["--help"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {prog} {cmd or ''} --help exited {r.returncode}: {r.stderr}")
    opts = set()
    for line in r.stdout.splitlines():
        if not re.match(r"^\s+-", line):
            continue
        term = re.split(r"\s{2,}", line.strip())[0]  # the definition, before the text
        opts.update(OPT.findall(term))
    return opts


def man_options(path):
    lines = open(path, encoding="utf-8").read().splitlines()
    opts = set()
    for i, line in enumerate(lines[:-1]):
        if line.strip() != ".TP":
            continue
        tag = lines[i + 1].replace("\\-", "-")
        tag = re.sub(r"\\f[BIRP]", "", tag)
        if not tag.startswith("."):
            continue  # a plain-text tag is not an option
        opts.update(OPT.findall(tag.split(None, 1)[1] if " " in tag else ""))
    return opts


def main():
    if sys.argv[1] == "--som":
        prog, mandir = sys.argv[2], sys.argv[3]
        cmds = [None]
    else:
        prog, mandir = sys.argv[1], sys.argv[2]
        cmds = ["record", "report", "export", "flame", "hist", "compare", "timeline"]
        if "annotate" in subprocess.run([prog, "--help"], capture_output=True, text=True).stdout:
            cmds.append("annotate")
    bad = 0
    for cmd in cmds:
        h = help_options(prog, cmd)
        page = f"sampo-{cmd}.1" if cmd else "som.1"
        m = man_options(f"{mandir}/{page}")
        name = f"sampo {cmd}" if cmd else "som"
        if not h:
            print(f"FAIL: {name} --help lists no options")
            bad += 1
        for o in sorted(h - m):
            print(f"FAIL: {name}: {o} is in --help but not in {page}")
            bad += 1
        for o in sorted(m - h):
            print(f"FAIL: {name}: {o} is in {page} but not in --help")
            bad += 1
        print(f"{name}: {len(h)} options in --help, {len(m)} in the man page")
    if bad:
        sys.exit(1)
    print("help and man pages agree")


main()
