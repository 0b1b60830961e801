#!/usr/bin/env python3
"""The overlap two runs would have if they differed only by sampling noise.

usage: bench/eval/overlap_limit.py --sampo BIN --prof DIR [--config async-1k] NAME...
For each benchmark NAME, pools the runs DIR/NAME.CONFIG.<i>.prof (their collapsed exports,
i.e. calling contexts with weights), draws pairs of runs of the mean sample count from the
pooled distribution (multinomial), and prints their mean overlap next to the measured mean
pairwise overlap.  Equal numbers mean the runs disagree only as much as sampling noise
makes them: nothing lost or misplaced by the profiler.  Standard library only."""
import argparse
import collections
import glob
import itertools
import math
import random
import subprocess


def load(sampo, f):
    d = collections.Counter()
    out = subprocess.run([sampo, 'export', '--collapsed', f], capture_output=True, text=True).stdout
    for line in out.splitlines():
        stack, _, w = line.rpartition(' ')
        d[stack] += int(w)
    return d


def overlap(a, b):
    ta, tb = sum(a.values()), sum(b.values())
    return sum(min(a[k] / ta, b[k] / tb) for k in set(a) | set(b))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--sampo', required=True)
    ap.add_argument('--prof', required=True)
    ap.add_argument('--config', default='async-1k')
    ap.add_argument('--sims', type=int, default=10)
    ap.add_argument('names', nargs='+')
    o = ap.parse_args()
    random.seed(1)
    for name in o.names:
        runs = [load(o.sampo, f) for f in sorted(glob.glob('%s/%s.%s.*.prof' % (o.prof, name, o.config)))]
        if len(runs) < 2:
            continue
        # weights are time (the interval in force per sample): in samples again by their
        # greatest common divisor (one interval at a fixed rate)
        g = math.gcd(*[v for r in runs for v in r.values()])
        runs = [collections.Counter({k: v // g for k, v in r.items()}) for r in runs]
        pool = collections.Counter()
        for r in runs:
            pool.update(r)
        n = sum(sum(r.values()) for r in runs) // len(runs)
        keys = list(pool)
        w = [pool[k] for k in keys]
        sims = [overlap(collections.Counter(random.choices(keys, w, k=n)),
                        collections.Counter(random.choices(keys, w, k=n))) for _ in range(o.sims)]
        meas = [overlap(a, b) for a, b in itertools.combinations(runs, 2)]
        print('%-10s samples/run %5d  contexts %4d  noise-only overlap %5.1f%%  measured %5.1f%%' % (
            name, n, len(keys), 100 * sum(sims) / len(sims), 100 * sum(meas) / len(meas)))


if __name__ == '__main__':
    main()
