#!/usr/bin/env python3
"""Runs Sampo's SOM benchmarks (bench/som/*.som) and/or the Are-We-Fast-Yet
SOM benchmarks with one or two `som` binaries / core libraries and prints a
table of milliseconds per iteration (median, or with --stat min the minimum,
of the timed iterations), the
ratio between the two configurations, geometric means and nfib calls/s.

Examples:
  bench/som/run.py --som build/release/tools/som/som
  bench/som/run.py --som A/som --som2 B/som --corelib2 /work/somref/Smalltalk
  bench/som/run.py --som build/release/tools/som/som --awfy -n 3
  bench/som/run.py --som ... --awfy --inner Bounce=50 --only Bounce,Sieve

Only the standard library of python3 is used.
"""
import argparse
import json
import math
import os
import resource
import re
import statistics
import subprocess
import sys
import time

OPTS = None
HERE = os.path.dirname(os.path.abspath(__file__))

# name -> default problem size (argument 3 of BenchBase>>run:)
MICRO = {
    'NFib': 30,
    'Loops': 1000000,
    'Fields': 1000000,
    'Closures': 300000,
    'Dispatch': 1000000,
    'Alloc': 300000,
    'Strings': 100000,
}

# name -> default inner iterations. Values chosen to take roughly 0.1-1 s per
# iteration on an interpreter; Mandelbrot, NBody, CD and Havlak only verify
# their result for particular values (see docs/testing.md), the ones used here do.
AWFY = {
    'Bounce': 200,
    'CD': 10,
    'DeltaBlue': 5000,
    'Havlak': 1,
    'Json': 10,
    'List': 100,
    'Mandelbrot': 500,
    'NBody': 250000,
    'Permute': 100,
    'Queens': 100,
    'Richards': 5,
    'Sieve': 200,
    'Storage': 100,
    'Towers': 100,
}
AWFY_DIRS = ['Core', 'CD', 'DeltaBlue', 'Havlak', 'Json', 'NBody', 'Richards']

MICRO_RE = re.compile(r'^(\w+): iteration (\d+) (\d+)us\s*$')
AWFY_RE = re.compile(r'^(\w+): iterations=1 runtime: (\d+)us\s*$')
CALLS_RE = re.compile(r'^NFib: calls/s (\d+)\s*$')


class Config:
    """One column of the table: a som binary plus an optional core library."""

    def __init__(self, label, som, corelib):
        self.label = label
        self.som = som
        self.corelib = corelib

    def classpath(self, dirs):
        cp = list(dirs)
        if self.corelib:
            cp.append(self.corelib)
        return ':'.join(cp)


def run_once(cfg, cp_dirs, main, args, timeout, verbose):
    """Runs one som process; answers (iteration times in us, stdout, wall s)."""
    cmd = [cfg.som]
    cp = cfg.classpath(cp_dirs)
    if cp:
        cmd += ['-cp', cp]
    cmd += [main] + [str(a) for a in args]
    if verbose:
        print('+ ' + ' '.join(cmd), file=sys.stderr)
    start = time.monotonic()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout, universal_newlines=True,
                              errors='replace')
    except subprocess.TimeoutExpired:
        return None, 'timeout after %ss' % timeout, timeout
    except OSError as e:
        return None, str(e), 0.0
    wall = time.monotonic() - start
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    out = proc.stdout
    if proc.returncode != 0 or 'ERROR' in out:
        tail = (out + proc.stderr).strip().splitlines()[-3:]
        return None, 'exit %d: %s' % (proc.returncode, ' | '.join(tail)), wall
    times = []
    for line in out.splitlines():
        m = MICRO_RE.match(line) or AWFY_RE.match(line)
        if m:
            times.append(int(m.group(m.lastindex)))
    if not times:
        return None, 'no timing lines in output', wall
    return times, out, cpu


def measure(cfg, bench, opts):
    """Answers a dict with ms (median per iteration), samples, calls/s, error."""
    if bench in AWFY:
        inner = opts.inner.get(bench, AWFY[bench])
        dirs = [os.path.join(opts.awfy_dir, d) for d in AWFY_DIRS]
        if not any(os.path.isfile(os.path.join(d, bench + '.som'))
                   for d in dirs + [opts.awfy_dir]):
            return {'error': 'missing: no %s.som under %s' % (bench, opts.awfy_dir),
                    'missing': True}
        main = os.path.join(opts.awfy_dir, 'Harness.som')
        args = [bench, opts.n, inner]
    else:
        size = opts.inner.get(bench, MICRO[bench])
        dirs = []
        main = os.path.join(HERE, bench + '.som')
        args = [opts.n, size]
    samples, calls, cpus = [], [], []  # cpus: per-process CPU us per iteration
    for _ in range(opts.runs):
        times, out, cpu = run_once(cfg, dirs, main, args, opts.timeout, opts.verbose)
        if times is None:
            return {'error': out}
        cpus.append(cpu / len(times) * 1e6)
        skip = opts.warmup if len(times) > opts.warmup else 0
        samples += times[skip:]
        for line in out.splitlines():
            m = CALLS_RE.match(line)
            if m:
                calls.append(int(m.group(1)))
    min_wall = min(samples)
    pick = min if opts.stat == 'min' else statistics.median
    if opts.stat == 'cpu':
        samples = cpus  # CPU time of the whole process / iterations, in us
    res = {'ms': pick(samples) / 1000.0, 'samples': len(samples),
           'min_wall': min_wall}
    if calls:
        n_calls = nfib_calls(opts.inner.get('NFib', MICRO['NFib']))
        res['calls'] = n_calls / (res['ms'] / 1000.0)
        # calls/s of the fastest timed iteration (wall clock)
        res['calls_best'] = n_calls / (res['min_wall'] / 1e6)
    return res


def nfib_calls(n):
    a = b = 1
    for _ in range(2, n + 1):
        a, b = b, a + b + 1
    return b


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    if not xs:
        return float('nan')
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def fmt_ms(r):
    if 'missing' in r:
        return 'missing'
    if 'error' in r:
        return 'FAIL'
    return '%.2f' % r['ms']


def print_table(title, benches, cfgs, results):
    print()
    print('## ' + title + ' [%s]' % {'median': 'median of timed iterations',
                                      'min': 'fastest timed iteration',
                                      'cpu': 'process CPU time / iterations'}[OPTS.stat])
    head = ['benchmark'] + ['%s ms/iter' % c.label for c in cfgs]
    if len(cfgs) == 2:
        head.append('%s/%s' % (cfgs[1].label, cfgs[0].label))
    rows = []
    for b in benches:
        row = [b] + [fmt_ms(results[c.label][b]) for c in cfgs]
        if len(cfgs) == 2:
            r0, r1 = results[cfgs[0].label][b], results[cfgs[1].label][b]
            row.append('%.2f' % (r1['ms'] / r0['ms'])
                       if 'ms' in r0 and 'ms' in r1 and r0['ms'] > 0 else '-')
        rows.append(row)
    gm = ['geomean'] + ['%.2f' % geomean([results[c.label][b].get('ms') for b in benches])
                        for c in cfgs]
    if len(cfgs) == 2:
        ratios = []
        for b in benches:
            r0, r1 = results[cfgs[0].label][b], results[cfgs[1].label][b]
            if 'ms' in r0 and 'ms' in r1 and r0['ms'] > 0:
                ratios.append(r1['ms'] / r0['ms'])
        gm.append('%.2f' % geomean(ratios))
    rows.append(gm)
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    line = lambda r: '| ' + ' | '.join(str(v).rjust(w) if i else str(v).ljust(w)
                                       for i, (v, w) in enumerate(zip(r, widths))) + ' |'
    print(line(head))
    print('|' + '|'.join('-' * (w + 2) for w in widths) + '|')
    for r in rows:
        print(line(r))
    for c in cfgs:
        for b in benches:
            r = results[c.label][b]
            if 'error' in r:
                print('%s %s: %s' % (c.label, b, r['error']))
            if 'calls' in r:
                print('%s nfib calls/s: %.3g (from ms/iter above), %.3g (fastest timed iteration)'
                      % (c.label, r['calls'], r['calls_best']))


def parse_inner(items):
    out = {}
    for it in items or []:
        for part in it.split(','):
            name, _, val = part.partition('=')
            if not val:
                raise SystemExit('--inner expects Name=N, got %r' % part)
            out[name.strip()] = int(val)
    return out


def find_som():
    root = os.path.dirname(os.path.dirname(HERE))
    for sub in ['build/release', 'build', 'build/dev']:
        p = os.path.join(root, sub, 'tools/som/som')
        if os.access(p, os.X_OK):
            return p
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--som', help='som binary (default: build/release, build or build/dev)')
    ap.add_argument('--corelib', help='core library directory appended to -cp '
                    '(default: none, i.e. the one built into the binary)')
    ap.add_argument('--som2', help='second som binary, shown side by side')
    ap.add_argument('--corelib2', help='core library for the second column '
                    '(with no --som2, the same binary is run twice)')
    ap.add_argument('--label', default=None, help='label of the first column')
    ap.add_argument('--label2', default=None, help='label of the second column')
    ap.add_argument('-n', type=int, default=5, help='iterations per process (default 5)')
    ap.add_argument('--runs', type=int, default=1, help='processes per benchmark (default 1)')
    ap.add_argument('--warmup', type=int, default=1,
                    help='iterations dropped from each process (default 1)')
    ap.add_argument('--stat', choices=['median', 'min', 'cpu'], default='median',
                    help='per-iteration number shown: median or min of the timed '
                    'iterations (wall clock, from system ticks), or cpu = user+sys '
                    'CPU time of the process divided by its iterations (includes '
                    'start-up; the most robust on a loaded machine). Default median')
    ap.add_argument('--micro', action='store_true', help='run bench/som micro-benchmarks')
    ap.add_argument('--awfy', action='store_true', help='run the 14 AWFY benchmarks')
    ap.add_argument('--awfy-dir', default='/work/somref/Examples/AreWeFastYet',
                    help='AWFY SOM directory holding Harness.som and Core/ ...')
    ap.add_argument('--only', help='comma-separated benchmark names')
    ap.add_argument('--inner', action='append',
                    help='Name=N: problem size / inner iterations (repeatable)')
    ap.add_argument('--timeout', type=float, default=600, help='seconds per process')
    ap.add_argument('--json', metavar='FILE', help='also write all results as JSON')
    ap.add_argument('-v', '--verbose', action='store_true', help='print commands')
    opts = ap.parse_args()
    global OPTS
    OPTS = opts
    opts.inner = parse_inner(opts.inner)
    if not opts.micro and not opts.awfy:
        opts.micro = True
    som = opts.som or find_som()
    if not som:
        raise SystemExit('no som binary found; pass --som PATH')
    cfgs = [Config(opts.label or 'A', som, opts.corelib)]
    if opts.som2 or opts.corelib2:
        cfgs.append(Config(opts.label2 or 'B', opts.som2 or som,
                           opts.corelib2 or (opts.corelib if opts.som2 else None)))
    only = set(opts.only.split(',')) if opts.only else None
    for c in cfgs:
        print('%s: %s%s' % (c.label, c.som, ' -cp ...:' + c.corelib if c.corelib else ''))
    groups = []
    if opts.micro:
        groups.append(('SOM micro-benchmarks (bench/som)', list(MICRO)))
    if opts.awfy:
        if not os.path.isfile(os.path.join(opts.awfy_dir, 'Harness.som')):
            raise SystemExit('no Harness.som in %s (use --awfy-dir)' % opts.awfy_dir)
        groups.append(('Are-We-Fast-Yet (inner iterations: %s)' % ', '.join(
            '%s %d' % (b, opts.inner.get(b, AWFY[b])) for b in AWFY
            if not only or b in only), list(AWFY)))
    failed = False
    report = {'stat': opts.stat, 'n': opts.n, 'runs': opts.runs,
              'configs': [{'label': c.label, 'som': c.som, 'corelib': c.corelib} for c in cfgs],
              'groups': []}
    for title, benches in groups:
        benches = [b for b in benches if not only or b in only]
        if not benches:
            continue
        results = {c.label: {} for c in cfgs}
        for b in benches:
            for c in cfgs:
                r = measure(c, b, opts)
                results[c.label][b] = r
                failed |= 'error' in r and 'missing' not in r
                print('  %-10s %-3s %s' % (b, c.label, fmt_ms(r)), file=sys.stderr, flush=True)
        print_table(title, benches, cfgs, results)
        report['groups'].append({'title': title, 'results': results})
    if opts.json:
        with open(opts.json, 'w') as f:
            json.dump(report, f, indent=1, sort_keys=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
