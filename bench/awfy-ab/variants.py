#!/usr/bin/env python3
"""Whole-process wall time of one `som` under several settings, side by side in one run.

Each variant is a label, `som` options and environment settings; every round runs each
benchmark once per variant, the order rotated (and reversed every other round) so the
machine's drifts and the first-run penalty hit all alike.  Reports the median wall time of
the process per variant (minimum in brackets), the ratios of every variant to the first and
the geometric means.  Standard sizes (AWFY's rebench.conf) and 3 outer iterations by default:
start-up, compilation and warm-up included, the "total time" of docs/evaluation.md, J.2.

usage: bench/awfy-ab/variants.py --som S --awfy DIR [--rounds 4] [--iterations 3]
           [--only DeltaBlue,CD] [--raw] VARIANT...
VARIANT = label:option,option:VAR=value,VAR=value (options or settings may be empty), e.g.
  off:--jit=off:  qf0:--jit=on:SOM_JIT_QUICK_FIRST=0  qf1:--jit=on:SOM_JIT_QUICK_FIRST=1
DIR is SOM-st/SOM's Examples/AreWeFastYet.  Standard library only."""
import argparse
import math
import os
import statistics
import subprocess
import sys
import time

STANDARD = {'Bounce': 1500, 'CD': 250, 'DeltaBlue': 12000, 'Havlak': 1500, 'Json': 100,
            'List': 1500, 'Mandelbrot': 500, 'NBody': 250000, 'Permute': 1000, 'Queens': 1000,
            'Richards': 100, 'Sieve': 3000, 'Storage': 1000, 'Towers': 600}
CP = '.:Core:CD:DeltaBlue:Havlak:Json:NBody:Richards'


def parse_variant(s):
    parts = s.split(':')
    if len(parts) != 3 or not parts[0]:
        raise argparse.ArgumentTypeError(f"expected label:options:settings, got '{s}'")
    env = {}
    for kv in filter(None, parts[2].split(',')):
        if '=' not in kv:
            raise argparse.ArgumentTypeError(f"expected VAR=value in '{s}', got '{kv}'")
        k, v = kv.split('=', 1)
        env[k] = v
    return parts[0], [o for o in parts[1].split(',') if o], env


def run(som, awfy, bench, iterations, variant):
    _, opts, env = variant
    t0 = time.monotonic()
    r = subprocess.run([som, *opts, '-cp', CP, 'Harness.som', bench, str(iterations),
                        str(STANDARD[bench])], cwd=awfy, env={**os.environ, **env},
                       capture_output=True, text=True)
    wall = time.monotonic() - t0
    if r.returncode != 0 or 'Total Runtime' not in r.stdout:
        sys.exit(f"variants.py: {bench} under {variant[0]} failed (exit {r.returncode}): "
                 f"{(r.stderr or r.stdout)[-300:]}")
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--som', required=True)
    ap.add_argument('--awfy', required=True)
    ap.add_argument('--rounds', type=int, default=4)
    ap.add_argument('--iterations', type=int, default=3)
    ap.add_argument('--only', default='')
    ap.add_argument('--raw', action='store_true', help='print every run time too')
    ap.add_argument('variants', nargs='+', type=parse_variant)
    a = ap.parse_args()
    if not os.path.isfile(os.path.join(a.awfy, 'Harness.som')):
        sys.exit(f"variants.py: {a.awfy}: no Harness.som (expected SOM-st/SOM's "
                 "Examples/AreWeFastYet)")
    a.som = os.path.abspath(a.som)
    if not os.access(a.som, os.X_OK):
        sys.exit(f"variants.py: {a.som}: not an executable")
    benches = [b for b in a.only.split(',') if b] or list(STANDARD)
    for b in benches:
        if b not in STANDARD:
            sys.exit(f"variants.py: unknown benchmark '{b}'")
    V = a.variants
    labels = [v[0] for v in V]
    base = labels[0]
    print('benchmark    ' + ' '.join(f'{l:>8s}' for l in labels) + '  ' +
          ' '.join(f'{l + "/" + base:>12s}' for l in labels[1:]) +
          '   (median wall s of the process; minimum in brackets)')
    ratios = {l: [] for l in labels[1:]}
    for b in benches:
        t = {l: [] for l in labels}
        for r in range(a.rounds):
            order = V[r % len(V):] + V[:r % len(V)]
            if r % 2:
                order = order[::-1]
            for v in order:
                t[v[0]].append(run(a.som, a.awfy, b, a.iterations, v))
        med = {l: statistics.median(x) for l, x in t.items()}
        for l in labels[1:]:
            ratios[l].append(med[l] / med[base])
        print(f'{b:12s} ' + ' '.join(f'{med[l]:8.3f}' for l in labels) + '  ' +
              ' '.join(f'{med[l] / med[base]:12.3f}' for l in labels[1:]) + '   [' +
              ' '.join(f'{min(t[l]):.3f}' for l in labels) + ']', flush=True)
        if a.raw:
            for l in labels:
                print(f'  {l}: ' + ' '.join(f'{x:.2f}' for x in sorted(t[l])))
    for l in labels[1:]:
        g = math.exp(sum(map(math.log, ratios[l])) / len(ratios[l]))
        print(f'geomean {l}/{base} {g:.3f} over {len(ratios[l])}')


if __name__ == '__main__':
    main()
