#!/usr/bin/env python3
"""Pearson correlation of per-function self-sample shares between two profiles.

Each argument is a perf.data file (read with `perf script -F ip,sym,dso`) or a sampo profile
(read with `sampo report --limit 0`, flat profile: self samples per function and object).
Functions are keyed by name; whatever stays unknown is keyed "[unknown] OBJECT" for both
tools (perf splits unknown code by address, sampo by object offset; neither is comparable
across tools, their object is).
usage: correlate.py SAMPO_BIN A B   -> prints "R_ALL R_NAMED N_KEYS": r over every key (the
union of both key sets), and r over named functions only (unknown keys left out, shares still
of all samples) - the second is the stricter test of the names.
"""
import math
import os
import re
import subprocess
import sys


def key(name, obj):
    obj = os.path.basename(obj or "")
    if not name or name.startswith("[unknown"):
        m = re.match(r"\[unknown\] (\S+)\+0x", name or "")
        return "[unknown] " + (m.group(1) if m else obj or "?")
    return name


def perf_shares(path):
    out = subprocess.run(["perf", "script", "-i", path, "-F", "ip,sym,dso"],
                         capture_output=True, text=True, check=True).stdout
    counts = {}
    for line in out.splitlines():
        m = re.match(r"\s*[0-9a-f]+\s+(.*?)\s+\(([^()]*)\)\s*$", line)
        if not m:
            continue
        k = key(m.group(1), m.group(2))
        counts[k] = counts.get(k, 0) + 1
    return counts


FLAT = re.compile(r"\s*[\d.]+%\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+\d+\s+(.*?)(?: \(([^()]*)\))?$")


def sampo_shares(sampo, path):
    out = subprocess.run([sampo, "report", "--limit", "0", path], capture_output=True, text=True,
                         check=True).stdout
    flat = out.split("## flat profile")[1].split("\n\n")[0].splitlines()[2:]
    counts = {}
    for line in flat:
        m = FLAT.match(line)
        if m and int(m.group(1)):
            k = key(m.group(2), m.group(3))
            counts[k] = counts.get(k, 0) + int(m.group(1))
    return counts


def shares(sampo, path):
    with open(path, "rb") as f:
        head = f.read(8)
    c = perf_shares(path) if head.startswith(b"PERFILE") else sampo_shares(sampo, path)
    tot = sum(c.values()) or 1
    return {k: v / tot for k, v in c.items()}


def pearson(a, b):
    keys = sorted(set(a) | set(b))
    x = [a.get(k, 0.0) for k in keys]
    y = [b.get(k, 0.0) for k in keys]
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((p - mx) * (q - my) for p, q in zip(x, y))
    sxx = sum((p - mx) ** 2 for p in x)
    syy = sum((q - my) ** 2 for q in y)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else 0.0, len(keys)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: correlate.py SAMPO_BIN A B")
    a, b = shares(sys.argv[1], sys.argv[2]), shares(sys.argv[1], sys.argv[3])
    r, n = pearson(a, b)
    named = lambda d: {k: v for k, v in d.items() if not k.startswith("[unknown]")}
    r_named, _ = pearson(named(a), named(b))
    print("%.4f %.4f %d" % (r, r_named, n))
    if os.environ.get("CORRELATE_TOP"):
        for k in sorted(set(a) | set(b), key=lambda k: -max(a.get(k, 0), b.get(k, 0)))[:25]:
            print("  %6.2f%% %6.2f%%  %s" % (100 * a.get(k, 0), 100 * b.get(k, 0), k))


if __name__ == "__main__":
    main()
