#!/usr/bin/env python3
"""Start-up and whole-run cost of `sampo record` for two builds, side by side (ABBA order).

Runs `sampo record -q -o /dev/null.. -- CMD` N times per build, alternating A B B A, and prints
min and median of CPU time (user+sys of the whole process tree) and wall time per build.
usage: startup.py N SAMPO_A PRELOAD_A SAMPO_B PRELOAD_B -- CMD [ARGS...]
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def run(sampo, preload, cmd, out):
    env = dict(os.environ, SAMPO_PRELOAD=preload)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run([sampo, "record", "-q", "-o", out, "--"] + cmd, env=env, check=False,
                   stdout=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), wall


def main():
    if len(sys.argv) < 8 or sys.argv[6] != "--":
        sys.exit(__doc__)
    n = int(sys.argv[1])
    builds = {"A": sys.argv[2:4], "B": sys.argv[4:6]}
    cmd = sys.argv[7:]
    res = {"A": [], "B": []}
    with tempfile.TemporaryDirectory() as d:
        for i in range(n):
            for k in ("AB" if i % 2 == 0 else "BA"):
                res[k].append(run(*builds[k], cmd, os.path.join(d, "p.prof")))
    for k in "AB":
        cpu = [c for c, _ in res[k]]
        wall = [w for _, w in res[k]]
        print("%s: cpu min %.1f ms median %.1f ms, wall min %.1f ms median %.1f ms  (%s)" % (
            k, 1e3 * min(cpu), 1e3 * statistics.median(cpu), 1e3 * min(wall),
            1e3 * statistics.median(wall), builds[k][0]))


if __name__ == "__main__":
    main()
