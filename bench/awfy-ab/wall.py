#!/usr/bin/env python3
"""Wall time of whole commands, side by side in one run.

Each LABEL=COMMAND runs --rounds times, the commands interleaved in ABBA order (A B C, C B A,
A B C, ...), so slow drifts of the machine hit all alike; reports the median and the minimum
wall time of each, from process start to exit (start-up and everything after the program's
last output included: what a user waits for).  A command that fails stops the measurement.

usage: bench/awfy-ab/wall.py [--rounds 12] [--cwd DIR] LABEL=COMMAND...
  e.g. (in an AWFY directory; the commands are split on spaces)
  wall.py --rounds 12 "on=som --jit=on -cp .:Core:DeltaBlue Harness.som DeltaBlue 3 12000" \\
                      "off=som --jit=off -cp .:Core:DeltaBlue Harness.som DeltaBlue 3 12000"
Standard library only.
"""
import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--rounds', type=int, default=12)
    ap.add_argument('--cwd', default=None, help='directory to run the commands in')
    ap.add_argument('commands', nargs='+', metavar='LABEL=COMMAND')
    a = ap.parse_args()
    cands = []
    for c in a.commands:
        label, sep, cmd = c.partition('=')
        if not sep or not label or not cmd.strip():
            ap.error(f'expected LABEL=COMMAND, got {c!r}')
        cands.append((label, shlex.split(cmd)))
    times = {label: [] for label, _ in cands}
    print(f'load average at start: {" ".join(f"{x:.2f}" for x in os.getloadavg())}')
    for r in range(a.rounds):
        for label, argv in (cands if r % 2 == 0 else cands[::-1]):
            t = time.perf_counter()
            p = subprocess.run(argv, cwd=a.cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            dt = time.perf_counter() - t
            if p.returncode:
                sys.stderr.write(p.stderr.decode(errors='replace'))
                sys.exit(f'{label}: exit status {p.returncode}')
            times[label].append(dt)
    w = max(len(label) for label, _ in cands)
    for label, _ in cands:
        v = times[label]
        print(f'{label:{w}s}  median {statistics.median(v) * 1e3:9.1f} ms  '
              f'min {min(v) * 1e3:9.1f} ms  ({len(v)} runs)')
    print(f'load average at end: {" ".join(f"{x:.2f}" for x in os.getloadavg())}')


if __name__ == '__main__':
    main()
