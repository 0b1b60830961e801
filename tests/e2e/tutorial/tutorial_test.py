#!/usr/bin/env python3
"""tutorial_test.py TUTORIAL SOM SAMPO REPO WORKDIR - runs every ```sh block of
docs/tutorial.md, in order, in one bash (set -euo pipefail), as a reader would from the
repository root: WORKDIR gets the repository's examples/ and build/release/tools/{som,sampo}
linked to the binaries under test, and is the working directory.

A block preceded by an HTML comment `<!-- needs: CMD -->` runs only when CMD is on the PATH
(else it is reported as skipped).  The test fails if a block fails (the block and its output
are shown), if the tutorial has fewer than 10 blocks, or if it takes longer than the ctest
timeout."""
import os
import re
import shutil
import subprocess
import sys

FENCE = re.compile(r"^```(\w*)\s*$")
NEEDS = re.compile(r"^<!--\s*needs:\s*([\w.+-]+)\s*-->\s*$")


def blocks(path):
    """[(line number, needs, text)] of the sh blocks."""
    out, lines = [], open(path, encoding="utf-8").read().splitlines()
    i, needs = 0, None
    while i < len(lines):
        m = NEEDS.match(lines[i])
        if m:
            needs = m.group(1)
            i += 1
            continue
        f = FENCE.match(lines[i])
        if f:
            lang, start, body = f.group(1), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if lang == "sh":
                out.append((start, needs, "\n".join(body)))
            needs = None
        elif lines[i].strip():
            needs = None  # a needs: comment applies to the block right after it
        i += 1
    return out


def main():
    tutorial, som, sampo, repo, work = sys.argv[1:6]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    shutil.copytree(os.path.join(repo, "examples"), os.path.join(work, "examples"))
    for tool, binary in (("som", som), ("sampo", sampo)):
        d = os.path.join(work, "build", "release", "tools", tool)
        os.makedirs(d)
        os.symlink(os.path.abspath(binary), os.path.join(d, tool))
    found = blocks(tutorial)
    if len(found) < 10:
        print("FAIL: only %d sh blocks in %s" % (len(found), tutorial))
        return 1
    script = ["set -euo pipefail"]
    ran = 0
    for line, needs, text in found:
        if needs and not shutil.which(needs):
            print("SKIP block at line %d (needs %s, not installed)" % (line, needs))
            continue
        script.append("echo '=== block at line %d' >&2" % line)
        script.append(text)
        ran += 1
    env = dict(os.environ)
    env.setdefault("HOME", work)
    env["GOCACHE"] = os.path.join(work, ".gocache")  # go tool pprof, if present
    p = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    marks = re.findall(r"=== block at line (\d+)", p.stderr)
    if p.returncode != 0:
        print("FAIL: the block at line %s of %s exited %d" %
              (marks[-1] if marks else "?", tutorial, p.returncode))
        print("--- stdout (tail):\n" + "\n".join(p.stdout.splitlines()[-30:]))
        print("--- stderr (tail):\n" + "\n".join(p.stderr.splitlines()[-30:]))
        return 1
    if len(marks) != ran:
        print("FAIL: %d blocks started, %d expected" % (len(marks), ran))
        return 1
    print("%d blocks of %s ran, %d skipped" % (ran, tutorial, len(found) - ran))
    return 0


sys.exit(main())
