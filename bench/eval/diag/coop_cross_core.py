#!/usr/bin/env python3
"""coop_cross_core.py - where does a coop tick go, and where did the marking thread see it?

A diagnostic for docs/evaluation.md (coop's bias; not run by CI).  It needs two release
builds of som: STOCK (main) and DIAG (main with bench/eval/diag/coop-cross-core.patch), and
runs tests/e2e/somprof/Grow.som (small activations called from loops) RUNS times each:

  async         STOCK --prof=async --prof-hz 1000      the reference (run 0) and its noise
  coop-stretch  DIAG  --prof=coop  --prof-hz 1000  DIAG_TICKLOG=F
                                                       the default rule (the stretch where the
                                                       VM saw the flag), with a log of every
                                                       flag taken
  coop-marker   STOCK --prof=coop  --prof-hz 1000  SOMPROF_COOP_CHARGE=marker
                                                       the activation the marking thread saw
                                                       on top when it set the flag

Per run: the correlation of method self counts with async run 0 (`sampo compare`) and, from
the log, how the frame index the marker read on top and the one the stretch rule charged are
distributed (total variation distance between the two histograms: 0 = same spread).
With --pin VM,MARKER the VM thread and the other threads are pinned to those CPUs.

    bench/eval/diag/coop_cross_core.py --stock /work/build-s9 --diag /tmp/exp/b --runs 8
"""
import argparse
import os
import re
import subprocess
import sys
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PROG = os.path.join(ROOT, 'tests', 'e2e', 'somprof', 'Grow.som')


def run(build, mode, out, size, env=None, pin=None):
    e = dict(os.environ, **(env or {}))
    p = subprocess.Popen([os.path.join(build, 'tools', 'som', 'som'), '--prof=' + mode, '--prof-hz',
                          '1000', '--prof-out', out, PROG, str(size)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=e)
    if pin:
        time.sleep(0.2)  # the marking thread exists once the profiler started
        for tid in os.listdir('/proc/%d/task' % p.pid):
            cpu = pin[0] if int(tid) == p.pid else pin[1]
            subprocess.run(['taskset', '-pc', str(cpu), tid], stdout=subprocess.DEVNULL)
    _, err = p.communicate()
    if p.returncode:
        sys.exit('som failed: %s' % err.decode(errors='replace')[-300:])


def corr(sampo, a, b):
    out = subprocess.run([sampo, 'compare', a, b], capture_output=True, text=True).stdout
    m = re.search(r'correlation\(self\):\s+([-0-9.]+)', out)
    return float(m.group(1)) if m else float('nan')


def spread(log):
    """Histograms of the marker's frame index and of the charged one; their distance."""
    seen, charged, n = Counter(), Counter(), 0
    for line in open(log):
        f = line.split()
        if len(f) == 4 and int(f[2]) >= 0:
            seen[int(f[2])] += 1
            charged[int(f[3])] += 1
            n += 1
    if not n:
        return float('nan'), 0
    keys = set(seen) | set(charged)
    return 0.5 * sum(abs(seen[k] - charged[k]) for k in keys) / n, n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--stock', required=True)
    ap.add_argument('--diag', required=True)
    ap.add_argument('--runs', type=int, default=6)
    ap.add_argument('--size', type=int, default=300000)
    ap.add_argument('--pin', help='VM,MARKER: CPUs for the VM thread and the other threads')
    ap.add_argument('--out', default='/tmp/coop-cross-core')
    o = ap.parse_args()
    os.makedirs(o.out, exist_ok=True)
    pin = [int(x) for x in o.pin.split(',')] if o.pin else None
    sampo = os.path.join(o.stock, 'tools', 'sampo', 'sampo')
    f = lambda kind, i: os.path.join(o.out, '%s.%d.prof' % (kind, i))
    rows = []
    for i in range(o.runs):  # interleaved, so slow drifts of the machine hit every kind alike
        run(o.stock, 'async', f('async', i), o.size, pin=pin)
        log = os.path.join(o.out, 'coop-stretch.%d.log' % i)
        run(o.stock, 'coop', f('coop', i), o.size, {'SOMPROF_COOP_CHARGE': 'marker'}, pin)
        run(o.diag, 'coop', f('coop-stretch', i), o.size, {'DIAG_TICKLOG': log}, pin)
        tv, n = spread(log)
        rows.append((i, corr(sampo, f('async', 0), f('async', i)) if i else None,
                     corr(sampo, f('async', 0), f('coop', i)),
                     corr(sampo, f('async', 0), f('coop-stretch', i)), tv, n))
        r = rows[-1]
        print('run %d: async %s  coop-marker %.4f  coop-stretch %.4f (marker vs charged frame index: '
              'distance %.3f over %d flags)' % (i, '%.4f' % r[1] if r[1] is not None else '(ref)',
                                                r[2], r[3], r[4], r[5]), flush=True)
    a = [r[1] for r in rows if r[1] is not None]
    print('correlation with async run 0, min / max: async %.4f / %.4f, coop-marker %.4f / %.4f, '
          'coop-stretch %.4f / %.4f' % (min(a or [1]), max(a or [1]), min(r[2] for r in rows),
                                        max(r[2] for r in rows), min(r[3] for r in rows),
                                        max(r[3] for r in rows)))


if __name__ == '__main__':
    main()
