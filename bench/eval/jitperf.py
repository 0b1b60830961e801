#!/usr/bin/env python3
"""Does perf name the JIT's compiled SOM methods?  (issue 12; docs/evaluation.md J.5)

For every AWFY benchmark: `SAMPO_JITDUMP=1 perf record -k 1 -e cpu-clock som --jit=on ...`,
then `perf inject --jit` (which turns libsampo's jitdump into one ELF object per compiled
function, jitted-PID-N.so) and `perf report --sort dso,sym`.  Counts the samples in compiled
code (those objects), how many of them carry a compiled method's name ("Class>>sel [jit t2
vN]"), the samples in anonymous memory left unnamed (compiled code perf could not name), and
the distinct compiled methods named.

usage: bench/eval/jitperf.py --som build/release/tools/som/som --awfy DIR [--only B,..]
                             [--hz 999] [--out DIR] [--json FILE]
Needs linux-perf (`apt-get install linux-perf`) and perf_event_paranoid <= 2 (user-space
cpu-clock sampling of one's own process).  No PMU is needed: cpu-clock is a software event.
Standard library only."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

AWFY = {'Bounce': 1500, 'CD': 100, 'DeltaBlue': 20000, 'Havlak': 1, 'Json': 60, 'List': 1000,
        'Mandelbrot': 500, 'NBody': 250000, 'Permute': 600, 'Queens': 600, 'Richards': 30,
        'Sieve': 1500, 'Storage': 600, 'Towers': 600}
AWFY_DIRS = ['Core', 'CD', 'DeltaBlue', 'Json', 'NBody', 'Richards', 'Havlak']
LINE = re.compile(r'^\s*([0-9.]+)%\s+(\d+)\s+(\S.*?)\s+\[(.)\]\s+(.*)$')


def one(opts, name, work):
    d = opts.awfy
    cp = ':'.join([os.path.join(d, x) for x in AWFY_DIRS] + [d])
    data, jit = os.path.join(work, 'perf.data'), os.path.join(work, 'perf.jit.data')
    env = dict(os.environ, SAMPO_JITDUMP='1', SAMPO_JITDUMP_DIR=work)
    rec = ['perf', 'record', '-q', '-k', '1', '-e', 'cpu-clock', '-F', str(opts.hz), '-o', data,
           opts.som, '--jit=on', '-cp', cp, os.path.join(d, 'Harness.som'), name, '3',
           str(AWFY[name])]
    p = subprocess.run(rec, env=env, capture_output=True, text=True)
    if p.returncode or 'ERROR' in p.stdout:
        return {'error': (p.stderr or p.stdout).strip()[-200:]}
    p = subprocess.run(['perf', 'inject', '--jit', '-i', data, '-o', jit], capture_output=True,
                       text=True)
    if p.returncode:
        return {'error': 'perf inject: ' + p.stderr.strip()[-200:]}
    p = subprocess.run(['perf', 'report', '-i', jit, '--stdio', '-n', '-q', '--sort', 'dso,sym'],
                       capture_output=True, text=True)
    total = in_jit = named = anon = 0
    methods = {}
    for line in p.stdout.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        n, dso, sym = int(m.group(2)), m.group(3).strip(), m.group(5).strip()
        total += n
        if dso.startswith('jitted-'):
            in_jit += n
            if '[jit t' in sym:
                named += n
                methods[sym] = methods.get(sym, 0) + n
        elif dso.startswith(('[JIT]', '//anon', '[anon')) or dso == '[unknown]':
            anon += n
    top = sorted(methods.items(), key=lambda kv: -kv[1])[:3]
    return {'samples': total, 'jit_samples': in_jit, 'jit_named': named, 'anon_unnamed': anon,
            'methods_named': len(methods), 'top': top}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--som', required=True)
    ap.add_argument('--awfy', required=True, help='SOM-st/SOM Examples/AreWeFastYet')
    ap.add_argument('--only')
    ap.add_argument('--hz', type=int, default=999)
    ap.add_argument('--out', default='/tmp/jitperf')
    ap.add_argument('--json')
    opts = ap.parse_args()
    if not shutil.which('perf'):
        sys.exit('jitperf.py: no perf (apt-get install linux-perf)')
    opts.som = os.path.abspath(opts.som)
    names = opts.only.split(',') if opts.only else list(AWFY)
    res = {}
    print('| benchmark | samples | in compiled code | of them named | unnamed anonymous code | '
          'compiled methods named | hottest |')
    print('|---|---:|---:|---:|---:|---:|---|')
    for n in names:
        work = os.path.join(opts.out, n)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        r = res[n] = one(opts, n, work)
        if 'error' in r:
            print('| %s | failed: %s |' % (n, r['error'].replace('\n', ' ')[:80]))
            continue
        pct = 100.0 * r['jit_named'] / r['jit_samples'] if r['jit_samples'] else 0
        print('| %s | %d | %d (%.1f%%) | %d (%.1f%%) | %d | %d | %s |' % (
            n, r['samples'], r['jit_samples'], 100.0 * r['jit_samples'] / max(r['samples'], 1),
            r['jit_named'], pct, r['anon_unnamed'], r['methods_named'],
            '; '.join('%s %d' % kv for kv in r['top'][:1])), flush=True)
    if opts.json:
        json.dump(res, open(opts.json, 'w'), indent=1)


if __name__ == '__main__':
    main()
