#!/usr/bin/env python3
"""Evaluation of the som profiler (issue 4): accuracy run-to-run, accuracy against the exact
mode, overhead per mode and rate, self-tuning, VM-state split, threads.

usage: bench/eval/eval.py --build build/release [--runs 10] [--reps 3] [--quick]
                          [--awfy /work/somref/Examples/AreWeFastYet] [--out DIR]
Writes DIR/results.md (the tables used in docs/evaluation.md) and DIR/results.json.
Benchmarks that are missing or fail are skipped and listed.  Standard library only.
Run on an otherwise idle machine for the overhead numbers (CPU time, user+sys, of the
whole som process: the manager thread's work counts as overhead)."""
import argparse
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OPTS = None
# name -> inner iterations for one ~1 s run of the AWFY harness (release build)
AWFY = {'Bounce': 3000, 'DeltaBlue': 60000, 'Json': 200, 'List': 1500, 'Mandelbrot': 300,
        'NBody': 250000, 'Permute': 1000, 'Queens': 1200, 'Richards': 50, 'Sieve': 3500,
        'Storage': 1800, 'Towers': 1100, 'CD': 60}
AWFY_DIRS = ['Core', 'CD', 'DeltaBlue', 'Json', 'NBody', 'Richards', 'Havlak']


def benches():
    e2e = os.path.join(ROOT, 'tests', 'e2e', 'somprof')
    out = [('Fig2', [os.path.join(e2e, 'Fig2.som'), '6000']),
           ('Hot', [os.path.join(e2e, 'Hot.som'), '4000'])]
    bs = os.path.join(ROOT, 'bench', 'som')
    for name, it, size in (('NFib', 1, 32), ('Dispatch', 1, 10000000)):
        if os.path.exists(os.path.join(bs, name + '.som')):
            out.append((name, [os.path.join(bs, name + '.som'), str(it), str(size)]))
    d = OPTS.awfy
    if d and os.path.exists(os.path.join(d, 'Harness.som')):
        cp = ':'.join([os.path.join(d, x) for x in AWFY_DIRS if os.path.isdir(os.path.join(d, x))] + [d])
        for name, inner in AWFY.items():
            out.append((name, ['-cp', cp, os.path.join(d, 'Harness.som'), name, '1', str(inner)]))
    if OPTS.only:
        out = [b for b in out if b[0] in OPTS.only.split(',')]
    return out


def som_bin():
    return os.path.join(OPTS.build, 'tools', 'som', 'som')


def sampo_bin():
    return os.path.join(OPTS.build, 'tools', 'sampo', 'sampo')


def run_som(args, env=None):
    """Runs som; answers (cpu seconds, wall seconds, returncode, stderr)."""
    t0 = time.monotonic()
    e = dict(os.environ, **env) if env else None
    p = subprocess.Popen([som_bin()] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=e)
    _, status, ru = os.wait4(p.pid, 0)
    err = p.stderr.read().decode(errors='replace')
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    return ru.ru_utime + ru.ru_stime, time.monotonic() - t0, p.returncode, err


def prof_args(mode, hz, out, extra=()):
    a = ['--prof=' + mode, '--prof-out', out]
    if hz:
        a += ['--prof-hz', str(hz)]
    return a + list(extra)


def compare(a, b):
    p = subprocess.run([sampo_bin(), 'compare', a, b], capture_output=True, text=True)
    c = re.search(r'correlation\(self\):\s+([-0-9.na]+)', p.stdout)
    o = re.search(r'overlap:\s+([0-9.]+)%', p.stdout)
    if not c or not o:
        return None
    return float(c.group(1)) if c.group(1) != 'nan' else 0.0, float(o.group(1))


def report_meta(path):
    p = subprocess.run([sampo_bin(), 'report', path], capture_output=True, text=True)
    meta = {}
    for line in p.stdout.splitlines():
        f = line.split()
        if line.startswith('# ') and len(f) >= 3:
            meta[f[1]] = f[2]
    meta['_events'] = [l for l in p.stdout.splitlines() if 'tune:' in l or 'coop tune' in l]
    return meta


def path(*parts):
    return os.path.join(OPTS.out, *parts)


# ---- 1 + 2: accuracy --------------------------------------------------------------------

CONFIGS = [('async-1k', 'async', 1000, []), ('async-tuned', 'async', 0, []),
           ('coop-1k', 'coop', 1000, []), ('coop-tuned', 'coop', 0, [])]


def one_run(job):
    name, args, cfg, i = job
    label, mode, hz, extra = cfg
    out = path('prof', '%s.%s.%d.prof' % (name, label, i))
    if OPTS.reuse and os.path.exists(out):
        return job, 0, ''
    cpu, _, rc, err = run_som(prof_args(mode, hz, out, extra) + args)
    return job, rc, err if rc else ''


def accuracy(bs, res):
    os.makedirs(path('prof'), exist_ok=True)
    jobs = [(n, a, c, i) for n, a in bs for c in CONFIGS for i in range(OPTS.runs)]
    jobs += [(n, a, ('exact', 'exact', 0, []), 0) for n, a in bs]
    jobs += [(n, a, ('exact-lean', 'exact', 0, ['--prof-lean']), 0) for n, a in bs]
    failed = set()
    with ThreadPoolExecutor(OPTS.jobs) as ex:
        for (n, _, c, i), rc, err in ex.map(one_run, jobs):
            if rc:
                failed.add(n)
                print('  %s %s run %d failed: %s' % (n, c[0], i, err.strip()[-200:]), file=sys.stderr)
    res['skipped'] = sorted(failed)
    acc = {}
    for n, _ in bs:
        if n in failed:
            continue
        acc[n] = {}
        ex = path('prof', '%s.exact.0.prof' % n)
        exl = path('prof', '%s.exact-lean.0.prof' % n)
        for label, *_ in CONFIGS:
            files = [path('prof', '%s.%s.%d.prof' % (n, label, i)) for i in range(OPTS.runs)]
            pairs = [compare(a, b) for a, b in itertools.combinations(files, 2)]
            pairs = [p for p in pairs if p]
            vs_inv = [compare(f, ex) for f in files]
            vs_time = [compare(f, exl + '.time') for f in files]
            meta = report_meta(files[0])
            acc[n][label] = {
                'corr': statistics.mean(p[0] for p in pairs) if pairs else None,
                'overlap': statistics.mean(p[1] for p in pairs) if pairs else None,
                'exact_inv_corr': statistics.mean(v[0] for v in vs_inv if v),
                'exact_inv_overlap': statistics.mean(v[1] for v in vs_inv if v),
                'exact_time_corr': statistics.mean(v[0] for v in vs_time if v),
                'exact_time_overlap': statistics.mean(v[1] for v in vs_time if v),
                'samples': int(meta.get('samples', '0') or 0),
                'rate_changes': int(meta.get('rate_changes', '0') or 0),
                'interval_ns': int(meta.get('interval_ns', '0') or 0),
                'interval_initial_ns': int(meta.get('interval_initial_ns', '0') or 0),
                'partial': int(meta.get('partial', '0') or 0),
                'orphans': int(meta.get('orphans', '0') or 0),
            }
        print('  accuracy %s done' % n, file=sys.stderr)
    res['accuracy'] = acc


# ---- 3: overhead --------------------------------------------------------------------------

OVH = [('none', None, 0), ('empty-1k', 'async', 1000), ('empty-5k', 'async', 5000),
       ('async-100', 'async', 100), ('async-1k', 'async', 1000),
       ('async-5k', 'async', 5000), ('async-tuned', 'async', 0), ('coop-100', 'coop', 100),
       ('coop-1k', 'coop', 1000), ('coop-5k', 'coop', 5000), ('coop-tuned', 'coop', 0)]
EMPTY = {'SAMPO_EMPTY_HANDLER': '1'}  # the signal floor: libsampo's handler returns at once


def overhead(bs, res):
    out = {}
    tmp = path('ovh.prof')
    for n, args in bs:
        if n in res.get('skipped', []):
            continue
        cpu = {c[0]: [] for c in OVH}
        for _ in range(OPTS.reps):  # interleaved, so drifts hit every configuration alike
            for label, mode, hz in OVH:
                a = args if mode is None else prof_args(mode, hz, tmp) + args
                c, _, rc, _ = run_som(a, EMPTY if label.startswith('empty') else None)
                if rc == 0:
                    cpu[label].append(c)
        base = statistics.median(cpu['none']) if cpu['none'] else None
        out[n] = {'base_s': base}
        for label, _, _ in OVH[1:]:
            if base and cpu[label]:
                out[n][label] = 100.0 * (statistics.median(cpu[label]) / base - 1)
        print('  overhead %s done' % n, file=sys.stderr)
    res['overhead'] = out


# ---- 5: VM states, 6: threads --------------------------------------------------------------

def parse_states(err, what):
    m = re.search(r'somprof: %s states:(.*)' % what, err)
    if not m:
        return None
    return {k: float(v) for k, v in re.findall(r'(\w+)=([0-9.]+)%', m.group(1))}


def states(bs, res):
    out = {}
    for n, args in bs:
        if n in res.get('skipped', []):
            continue
        for label, mode in (('async', 'async'), ('coop', 'coop')):
            _, _, rc, err = run_som(prof_args(mode, 1000, path('st.prof'), ['--prof-states']) + args)
            s, e = parse_states(err, 'sampled'), parse_states(err, 'exact')
            if rc or not s or not e:
                continue
            out.setdefault(n, {})[label] = {'sampled': s, 'exact': e,
                                            'maxdiff': max(abs(s[k] - e[k]) for k in s)}
    res['states'] = out


def tuning(bs, res):
    """Long tuned runs (10x the inner iterations): interval over time and rate changes."""
    out = {}
    os.makedirs(path('prof'), exist_ok=True)
    for n, args in bs:
        if n not in ('Fig2', 'NBody', 'Richards') or n in res.get('skipped', []):
            continue
        a = list(args)
        a[-1] = str(int(a[-1]) * 10)
        for mode in ('async', 'coop'):
            f = path('prof', '%s.long-%s.prof' % (n, mode))
            _, wall, rc, _ = run_som(prof_args(mode, 0, f) + a)
            if rc:
                continue
            m = report_meta(f)
            out.setdefault(n, {})[mode] = {'wall': wall, 'samples': int(m.get('samples', '0') or 0),
                                           'rate_changes': int(m.get('rate_changes', '0') or 0),
                                           'interval_ns': int(m.get('interval_ns', '0') or 0),
                                           'events': m['_events'][:12]}
    res['tuning'] = out


def threads(bs, res):
    out = {}
    pick = [b for b in bs if b[0] in ('Fig2', 'Richards', 'DeltaBlue', 'NBody')]
    for n, args in pick:
        if n in res.get('skipped', []):
            continue
        ref = path('prof', '%s.async-1k.0.prof' % n)
        for t in (1, 2, 4):
            base = statistics.median([run_som(['--threads', str(t)] + args)[1] for _ in range(OPTS.reps)])
            f = path('prof', '%s.threads%d.prof' % (n, t))
            walls = [run_som(['--threads', str(t)] + prof_args('async', 1000, f) + args)[1]
                     for _ in range(OPTS.reps)]
            c = compare(ref, f) if os.path.exists(ref) else None
            out.setdefault(n, {})[t] = {'wall_base': base,
                                        'overhead': 100.0 * (statistics.median(walls) / base - 1),
                                        'corr_vs_1thread': c[0] if c else None,
                                        'overlap_vs_1thread': c[1] if c else None}
    res['threads'] = out


# ---- tables ---------------------------------------------------------------------------------

def fmt(v, f='%.3f'):
    return '-' if v is None else f % v


def tables(res):
    L = ['# somprof evaluation results', '',
         'runs=%d reps=%d build=%s date=%s' % (OPTS.runs, OPTS.reps, OPTS.build, time.strftime('%Y-%m-%d %H:%M')), '']
    if res.get('skipped'):
        L += ['Skipped (missing or failing): ' + ', '.join(res['skipped']), '']
    acc = res.get('accuracy', {})
    L += ['## 1. Accuracy run-to-run (mean over all pairs of %d runs)' % OPTS.runs, '',
          '| benchmark | ' + ' | '.join('%s corr / overlap %%' % c[0] for c in CONFIGS) + ' | samples (async-1k) |',
          '|---|' + '---|' * (len(CONFIGS) + 1)]
    for n, a in acc.items():
        L.append('| %s | ' % n + ' | '.join('%s / %s' % (fmt(a[c[0]]['corr']), fmt(a[c[0]]['overlap'], '%.1f'))
                                            for c in CONFIGS) + ' | %d |' % a['async-1k']['samples'])
    L += ['', '## 2. Accuracy against the exact mode (mean over runs)', '',
          'inv = exact invocation counts (--prof=exact: every activation and primitive, trivial methods',
          'activated); time = exact time-weighted profile of a --prof=exact --prof-lean run (self',
          'microseconds; only the frames a sampler sees; per-call hook work subtracted).', '',
          '| benchmark | ' + ' | '.join('%s vs inv | %s vs time' % (c[0], c[0]) for c in CONFIGS) + ' |',
          '|---|' + '---|' * (2 * len(CONFIGS))]
    for n, a in acc.items():
        cells = []
        for c in CONFIGS:
            x = a[c[0]]
            cells.append('%s / %s' % (fmt(x['exact_inv_corr']), fmt(x['exact_inv_overlap'], '%.1f')))
            cells.append('%s / %s' % (fmt(x['exact_time_corr']), fmt(x['exact_time_overlap'], '%.1f')))
        L.append('| %s | ' % n + ' | '.join(cells) + ' |')
    ov = res.get('overhead', {})
    if ov:
        L += ['', '## 3. Overhead (%% CPU time over the unprofiled run, median of %d interleaved runs)' % OPTS.reps, '',
              '| benchmark | base s | ' + ' | '.join(c[0] for c in OVH[1:]) + ' |', '|---|---|' + '---|' * (len(OVH) - 1)]
        for n, o in ov.items():
            L.append('| %s | %s | ' % (n, fmt(o['base_s'], '%.2f')) +
                     ' | '.join(fmt(o.get(c[0]), '%+.1f') for c in OVH[1:]) + ' |')
        cols = {c[0]: [o[c[0]] for o in ov.values() if c[0] in o] for c in OVH[1:]}
        L.append('| **median** | | ' + ' | '.join(fmt(statistics.median(v) if v else None, '%+.1f')
                                                   for v in cols.values()) + ' |')
    L += ['', '## 4. Self-tuning (first tuned run of each benchmark)', '',
          '| benchmark | mode | initial interval ms | final interval ms | rate changes | samples |',
          '|---|---|---|---|---|---|']
    for n, a in acc.items():
        for c in ('async-tuned', 'coop-tuned'):
            x = a[c]
            L.append('| %s | %s | %s | %s | %d | %d |' % (n, c, fmt(x['interval_initial_ns'] / 1e6 if x['interval_initial_ns'] else None, '%.3f'),
                                                       fmt(x['interval_ns'] / 1e6 if x['interval_ns'] else None, '%.3f'),
                                                       x['rate_changes'], x['samples']))
    tu = res.get('tuning', {})
    if tu:
        L += ['', '### Long tuned runs (10x inner iterations)', '',
              '| benchmark | mode | wall s | samples | rate changes | final interval ms |', '|---|---|---|---|---|---|']
        for n, m in tu.items():
            for mode, x in m.items():
                L.append('| %s | %s | %.1f | %d | %d | %.3f |' % (n, mode, x['wall'], x['samples'],
                                                              x['rate_changes'], x['interval_ns'] / 1e6))
        for n, m in tu.items():
            for mode, x in m.items():
                if x['events']:
                    L += ['', '%s %s interval log:' % (n, mode), '```'] + x['events'] + ['```']
    st = res.get('states', {})
    if st:
        L += ['', '## 5. VM-state split, sampled vs exact in the same run (1 kHz), percent', '',
              '| benchmark | mode | interp s/e | primitive s/e | gc s/e | compiling s/e | max diff pp |',
              '|---|---|---|---|---|---|---|']
        for n, m in st.items():
            for mode, x in m.items():
                s, e = x['sampled'], x['exact']
                L.append('| %s | %s | %s | %s | %s | %s | %.2f |' % (
                    n, mode, *['%.1f / %.1f' % (s.get(k, 0), e.get(k, 0))
                               for k in ('interpreting', 'primitive', 'gc', 'compiling')], x['maxdiff']))
    th = res.get('threads', {})
    if th:
        L += ['', '## 6. Threads (async 1 kHz; overhead on wall time; accuracy vs the 1-thread run)', '',
              '| benchmark | threads | base wall s | overhead % | corr vs 1 thread | overlap % |', '|---|---|---|---|---|---|']
        for n, m in th.items():
            for t, x in m.items():
                L.append('| %s | %s | %.2f | %+.1f | %s | %s |' % (n, t, x['wall_base'], x['overhead'],
                                                             fmt(x['corr_vs_1thread']), fmt(x['overlap_vs_1thread'], '%.1f')))
    return '\n'.join(L) + '\n'


def main():
    global OPTS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--build', default=os.path.join(ROOT, 'build', 'release'))
    ap.add_argument('--awfy', default='/work/somref/Examples/AreWeFastYet')
    ap.add_argument('--runs', type=int, default=10)
    ap.add_argument('--reps', type=int, default=3)
    ap.add_argument('--jobs', type=int, default=2, help='parallel accuracy runs (not overhead)')
    ap.add_argument('--only', help='comma-separated benchmark names')
    ap.add_argument('--skip', default='', help='comma-separated sections: accuracy,overhead,states,threads')
    ap.add_argument('--quick', action='store_true', help='3 runs, 1 rep, our benchmarks only')
    ap.add_argument('--reuse', action='store_true',
                    help='keep profiles already in OUT/prof and results of skipped sections')
    ap.add_argument('--out', default=os.path.join(ROOT, 'build', 'eval'))
    OPTS = ap.parse_args()
    if OPTS.quick:
        OPTS.runs, OPTS.reps, OPTS.awfy = 3, 1, None
    if not os.path.exists(som_bin()) or not os.path.exists(sampo_bin()):
        sys.exit('eval.py: no som/sampo under %s (build it first)' % OPTS.build)
    os.makedirs(OPTS.out, exist_ok=True)
    bs = benches()
    res = {}
    if OPTS.reuse and os.path.exists(path('results.json')):
        res = json.load(open(path('results.json')))
    os.makedirs(path('prof'), exist_ok=True)
    skip = OPTS.skip.split(',')
    for name, fn in (('accuracy', accuracy), ('overhead', overhead), ('states', states),
                     ('tuning', tuning), ('threads', threads)):
        if name not in skip:
            t0 = time.monotonic()
            fn(bs, res)
            print('%s: %.0f s' % (name, time.monotonic() - t0), file=sys.stderr)
            json.dump(res, open(path('results.json'), 'w'), indent=1)
            open(path('results.md'), 'w').write(tables(res))
    print(tables(res))


if __name__ == '__main__':
    main()
