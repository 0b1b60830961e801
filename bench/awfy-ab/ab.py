#!/usr/bin/env python3
"""A/B of two `som` builds on the Are-We-Fast-Yet benchmarks, side by side in one run.

Each benchmark runs --runs times per build, the builds interleaved in ABBA order (A B B A
A B ...), so slow drifts of the machine hit both alike.  Reports the CPU time (user+sys of
the som process) per build -- the median of the runs, or --stat min / mean -- the ratio
B/A per benchmark, and the geometric mean of the ratios. CPU time, not wall time: on these
virtual machines it is the steadier of the two.

usage: bench/awfy-ab/ab.py A_SOM B_SOM [--runs 3] [--stat median|min|mean] [--awfy DIR]
                           [--only Bounce,List]
Standard library only."""
import argparse
import math
import os
import resource
import statistics
import subprocess
import sys

# name -> inner iterations for a run of roughly 0.2-1 s (release build); NBody, Mandelbrot,
# CD and Havlak verify their result only at some counts (docs/testing.md; 250000, 500, 100, 15 are)
BENCH = {'Bounce': 3000, 'List': 1500, 'Richards': 40, 'DeltaBlue': 30000, 'Json': 100,
         'Towers': 600, 'Storage': 600, 'Sieve': 1000, 'Permute': 600, 'Queens': 600,
         'Mandelbrot': 500, 'NBody': 250000, 'CD': 100, 'Havlak': 15}
DIRS = ['Core', 'CD', 'DeltaBlue', 'Json', 'NBody', 'Richards', 'Havlak']


def cpu_of(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode:
        raise RuntimeError('exit %d: %s' % (p.returncode, p.stderr.strip()[-300:]))
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('a')
    ap.add_argument('b')
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--awfy', default=os.environ.get('AWFY_SOM_DIR',
                                                     '/work/somref/Examples/AreWeFastYet'))
    ap.add_argument('--only', help='comma-separated benchmark names')
    ap.add_argument('--stat', choices=['median', 'min', 'mean'], default='median',
                    help='statistic of the runs per build (default median)')
    o = ap.parse_args()
    if not os.path.exists(os.path.join(o.awfy, 'Harness.som')):
        sys.exit('ab.py: no Harness.som in %s (--awfy)' % o.awfy)
    cp = ':'.join([os.path.join(o.awfy, d) for d in DIRS] + [o.awfy])
    names = o.only.split(',') if o.only else list(BENCH)
    ratios = []
    print('CPU seconds per run, %s of %d runs per build, ABBA order' % (o.stat, o.runs))
    print('%-11s %9s %9s %7s' % ('benchmark', 'A cpu s', 'B cpu s', 'B/A'))
    for n in names:
        args = ['-cp', cp, os.path.join(o.awfy, 'Harness.som'), n, '1', str(BENCH.get(n, 1))]
        t = {'a': [], 'b': []}
        try:
            for i in range(o.runs):
                for k in (('a', 'b') if i % 2 == 0 else ('b', 'a')):
                    t[k].append(cpu_of([getattr(o, k)] + args))
        except RuntimeError as e:
            print('%-11s skipped: %s' % (n, e))
            continue
        stat = {'median': statistics.median, 'min': min, 'mean': statistics.mean}[o.stat]
        a, b = stat(t['a']), stat(t['b'])
        ratios.append(b / a)
        print('%-11s %9.3f %9.3f %7.3f' % (n, a, b, b / a))
    if ratios:
        g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print('geometric mean of B/A over %d benchmarks: %.3f' % (len(ratios), g))


if __name__ == '__main__':
    main()
