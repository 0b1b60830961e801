#!/usr/bin/env python3
"""Run-to-run agreement of profiles taken after warm-up (issue 12, J.5 (b)).

eval.py's accuracy runs profile a whole run, warm-up included.  With the JIT on, the warm-up
(interpreted code, quick first versions, full versions arriving from the compiler thread's
queue) takes a different course in every run, because when each version arrives depends on
timing.  This script profiles only the iterations after a warm-up (SteadyHarness.som, som
--prof-paused, System profilerStart), RUNS times per --jit mode, and prints the mean
correlation / overlap over all pairs of runs, with and without the JIT compiler thread's
samples (sampo compare --ignore '\\[jit compile\\]').  Since stop 35 the JIT's controller
keeps getting samples while the profile is paused (libsampo's feed_paused); before, the
paused warm-up compiled from counters alone and the sample-driven compilations came in the
profiled iterations (docs/evaluation.md J.5, "Stop 35").

  steady_overlap.py --build build/release --awfy AWFY_DIR --bench DeltaBlue:4:12:60000 \\
      [--modes off,on,eager] [--runs 4] [--hz 1000] [--out DIR]

--bench NAME:WARMUP:ITERATIONS:INNER (repeatable).  Standard library only.
"""
import argparse
import itertools
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import eval as ev  # noqa: E402  (compare: sampo compare's correlation and overlap)
AWFY_CP = ('.', 'Core', 'CD', 'DeltaBlue', 'Havlak', 'Json', 'NBody', 'Richards')


def samples(sampo, path):
    p = subprocess.run([sampo, 'report', path], capture_output=True, text=True)
    m = re.search(r'^# sampo profile: sampled, (\d+) samples', p.stdout, re.M)
    return int(m.group(1)) if m else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--build', required=True)
    ap.add_argument('--awfy', required=True)
    ap.add_argument('--bench', action='append', required=True)
    ap.add_argument('--modes', default='off,on,eager')
    ap.add_argument('--runs', type=int, default=4)
    ap.add_argument('--hz', type=int, default=1000)
    ap.add_argument('--out', default='/tmp/steady_overlap')
    ap.add_argument('--som-arg', action='append', default=[],
                    help='an extra som option (repeatable), e.g. --som-arg=-H1G')
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)  # the runs start in the AWFY directory
    som = os.path.join(a.build, 'tools', 'som', 'som')
    sampo = os.path.join(a.build, 'tools', 'sampo', 'sampo')
    for exe in (som, sampo):
        if not os.access(exe, os.X_OK):
            sys.exit('steady_overlap.py: no %s (build it first)' % exe)
    ev.OPTS = argparse.Namespace(build=a.build)
    os.makedirs(a.out, exist_ok=True)
    cp = ':'.join([HERE] + [os.path.join(a.awfy, d) for d in AWFY_CP])
    print('| benchmark (warm-up, profiled iterations x inner) | --jit | samples per run | '
          'corr / overlap % | program alone |')
    print('|---|---|---|---|---|')
    for spec in a.bench:
        try:
            name, warm, iters, inner = spec.split(':')
        except ValueError:
            sys.exit('steady_overlap.py: --bench NAME:WARMUP:ITERATIONS:INNER, got %r' % spec)
        for mode in a.modes.split(','):
            profs = []
            for r in range(a.runs):
                out = os.path.join(a.out, '%s.%s.%d.prof' % (name, mode, r))
                cmd = [som, '--jit=' + mode] + a.som_arg + ['--prof=async', '--prof-hz', str(a.hz), '--prof-paused',
                       '--prof-out', out, '-cp', cp, 'SteadyHarness.som', name, warm, iters, inner]
                p = subprocess.run(cmd, cwd=a.awfy, capture_output=True, text=True)
                if p.returncode != 0 or not os.path.exists(out):
                    sys.exit('steady_overlap.py: failed (%d): %s\n%s' % (p.returncode, ' '.join(cmd),
                                                                         p.stderr[-2000:]))
                profs.append(out)
            cols = []
            for ignore in (None, r'\[jit compile\]'):
                pairs = [ev.compare(x, y, ignore) for x, y in itertools.combinations(profs, 2)]
                pairs = [q for q in pairs if q]
                cols.append('%.3f / %.1f (%.1f-%.1f)' % (
                    statistics.mean(q[0] for q in pairs), statistics.mean(q[1] for q in pairs),
                    min(q[1] for q in pairs), max(q[1] for q in pairs)) if pairs else '-')
            n = statistics.mean(samples(sampo, x) for x in profs)
            print('| %s (%s, %s x %s) | %s | %.0f | %s | %s |' % (name, warm, iters, inner, mode, n,
                                                                  cols[0], cols[1]), flush=True)


if __name__ == '__main__':
    main()
