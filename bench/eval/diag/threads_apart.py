#!/usr/bin/env python3
"""Run-to-run accuracy with the threads taken apart (docs/evaluation.md J.5): for every pair
of runs of a benchmark and configuration in an eval.py output directory, the overlap and the
self correlation of (a) all samples, (b) the VM threads' samples only (stacks rooted at
System>>boot), from `sampo export --collapsed` (contexts without call sites, so the overlap
is a little higher than `sampo compare`'s), and (c) the share of the samples that are the
JIT compiler thread's.  With the JIT on, (b) against (a) shows how much of the difference
between runs is the compiler thread's (which methods it compiled, and when).

usage: bench/eval/diag/threads_apart.py --sampo SAMPO DIR [DIR...] [--configs async-1k,coop-1k]
Standard library only."""
import argparse
import collections
import glob
import itertools
import os
import re
import statistics
import subprocess


def load(sampo, f):
    p = subprocess.run([sampo, 'export', '--collapsed', f], capture_output=True, text=True)
    ctx_all, ctx_vm = collections.Counter(), collections.Counter()
    for line in p.stdout.splitlines():
        stack, _, w = line.rpartition(' ')
        if not w.isdigit():
            continue
        ctx_all[stack] += int(w)
        if stack.split(';')[0] == 'System>>boot':
            ctx_vm[stack] += int(w)
    return ctx_all, ctx_vm


def overlap(a, b):
    ta, tb = sum(a.values()), sum(b.values())
    if not ta or not tb:
        return None
    return 100.0 * sum(min(a[k] / ta, b[k] / tb) for k in set(a) | set(b))


def corr(a, b):
    def selfs(c):
        s = collections.Counter()
        for k, w in c.items():
            s[k.split(';')[-1]] += w
        return s
    sa, sb = selfs(a), selfs(b)
    keys = sorted(set(sa) | set(sb))
    xs, ys = [sa[k] for k in keys], [sb[k] for k in keys]
    if len(keys) < 2:
        return None
    try:
        return statistics.correlation(xs, ys)
    except statistics.StatisticsError:
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--sampo', required=True)
    ap.add_argument('--configs', default='async-1k,coop-1k')
    ap.add_argument('dirs', nargs='+')
    o = ap.parse_args()
    print('| dir | benchmark | config | all: corr / overlap % | VM threads: corr / overlap % | '
          'compiler thread % |')
    print('|---|---|---|---|---|---|')
    for d in o.dirs:
        files = glob.glob(os.path.join(d, 'prof', '*.prof'))
        names = sorted({re.sub(r'\..*', '', os.path.basename(f)) for f in files})
        for n in names:
            for c in o.configs.split(','):
                runs = sorted(glob.glob(os.path.join(d, 'prof', '%s.%s.*.prof' % (n, c))))
                if len(runs) < 2:
                    continue
                data = [load(o.sampo, f) for f in runs]
                pa = [(corr(x[0], y[0]), overlap(x[0], y[0]))
                      for x, y in itertools.combinations(data, 2)]
                pv = [(corr(x[1], y[1]), overlap(x[1], y[1]))
                      for x, y in itertools.combinations(data, 2)]
                comp = [100.0 * (1 - sum(x[1].values()) / max(1, sum(x[0].values())))
                        for x in data]
                m = lambda v: statistics.mean([x for x in v if x is not None])
                print('| %s | %s | %s | %.3f / %.1f | %.3f / %.1f | %.1f |' % (
                    os.path.basename(d.rstrip('/')), n, c, m(p[0] for p in pa),
                    m(p[1] for p in pa), m(p[0] for p in pv), m(p[1] for p in pv),
                    statistics.mean(comp)), flush=True)


if __name__ == '__main__':
    main()
