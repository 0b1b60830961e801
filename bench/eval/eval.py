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
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OPTS = None
# name -> inner iterations for one ~1 s run of the AWFY harness (release build)
AWFY = {'Bounce': 3000, 'DeltaBlue': 60000, 'Json': 200, 'List': 1500, 'Mandelbrot': 500,
        'NBody': 250000, 'Permute': 1000, 'Queens': 1200, 'Richards': 50, 'Sieve': 3500,
        'Storage': 1800, 'Towers': 1100, 'CD': 100, 'Havlak': 1}
AWFY_DIRS = ['Core', 'CD', 'DeltaBlue', 'Json', 'NBody', 'Richards', 'Havlak']


def benches():
    """(name, args, index of the argument that scales the run linearly) per benchmark, each at
    its base size (about one second, release build); accuracy runs scale it (see sizing)."""
    e2e = os.path.join(ROOT, 'tests', 'e2e', 'somprof')
    out = [('Fig2', [os.path.join(e2e, 'Fig2.som'), '6000'], 1),
           ('Hot', [os.path.join(e2e, 'Hot.som'), '4000'], 1),
           ('Grow', [os.path.join(e2e, 'Grow.som'), '70000'], 1)]
    bs = os.path.join(ROOT, 'bench', 'som')
    for name, it, size in (('NFib', 1, 32), ('Dispatch', 1, 10000000)):
        if os.path.exists(os.path.join(bs, name + '.som')):
            out.append((name, [os.path.join(bs, name + '.som'), str(it), str(size)], 1))
    d = OPTS.awfy
    if d and os.path.exists(os.path.join(d, 'Harness.som')):
        cp = ':'.join([os.path.join(d, x) for x in AWFY_DIRS if os.path.isdir(os.path.join(d, x))] + [d])
        for name, inner in AWFY.items():
            # scaled through the outer iterations (linear; inner is a problem size for some)
            out.append((name, ['-cp', cp, os.path.join(d, 'Harness.som'), name, '1', str(inner)], 4))
    if OPTS.only:
        out = [b for b in out if b[0] in OPTS.only.split(',')]
    return out


def scaled(args, lin, f):
    a = list(args)
    a[lin] = str(int(a[lin]) * f)
    return a


def som_bin():
    return os.path.join(OPTS.build, 'tools', 'som', 'som')


def sampo_bin():
    return os.path.join(OPTS.build, 'tools', 'sampo', 'sampo')


def run_som(args, env=None):
    """Runs som; answers (cpu seconds, wall seconds, returncode, stderr)."""
    t0 = time.monotonic()
    e = dict(os.environ, **env) if env else None
    p = subprocess.Popen([som_bin()] + (OPTS.som_arg or []) + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=e)
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


# The JIT compiler thread's samples (one frame, "Class>>selector [jit compile]"): `--ignore`
# this leaves the program's own threads.
JIT_COMPILE_RE = r'\[jit compile\]'


def compare(a, b, ignore=None):
    p = subprocess.run([sampo_bin(), 'compare'] + (['--ignore', ignore] if ignore else []) + [a, b],
                       capture_output=True, text=True)
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


def cfg_runs(label):
    return OPTS.tuned_runs if label.endswith('tuned') else OPTS.runs


def target_samples(name):
    """--samples, or a larger target for benchmarks whose trees need more (--samples-for)."""
    for item in (OPTS.samples_for or '').split(','):
        if item.startswith(name + '='):
            return int(item.split('=', 1)[1])
    return OPTS.samples


def calibrate(job):
    n, args, cfg = job
    label, mode, hz, extra = cfg
    f = path('cal', '%s.%s.prof' % (n, label))
    _, wall, rc, _ = run_som(prof_args(mode, hz, f, extra) + args)
    m = report_meta(f) if rc == 0 else {}
    return n, label, int(m.get('samples', '0') or 0), wall


def sizing(bs, res, cfgs):
    """Runs are sized by samples, not seconds: one calibration run per benchmark and
    configuration at the base size gives its samples; accuracy runs repeat the workload
    ceil(--samples / that) times (the benchmark's linear argument), so every run, at 1 kHz or
    at the self-tuned rate, has about --samples samples."""
    os.makedirs(path('cal'), exist_ok=True)
    sz = res.setdefault('sizes', {})
    jobs = [(n, a, c) for n, a, _ in bs for c in cfgs
            if not (OPTS.reuse and c[0] in sz.get(n, {}))]
    with ThreadPoolExecutor(OPTS.jobs) as ex:
        for n, label, smp, wall in ex.map(calibrate, jobs):
            sz.setdefault(n, {})[label] = {'base_samples': smp, 'base_wall': wall}
    for n, _, _ in bs:  # the factor follows the target, also for reused calibrations
        for c in cfgs:
            x = sz.get(n, {}).get(c[0])
            if x:
                x['target'] = target_samples(n)
                x['factor'] = max(1, -(-x['target'] // x['base_samples'])) if x['base_samples'] else 1
    return sz


def one_run(job):
    name, args, cfg, i = job[:4]
    env = job[4] if len(job) > 4 else None
    label, mode, hz, extra = cfg
    out = path('prof', '%s.%s.%d.prof' % (name, label, i))
    if OPTS.reuse and os.path.exists(out):
        return job, 0, ''
    cpu, _, rc, err = run_som(prof_args(mode, hz, out, extra) + args, env)
    return job, rc, err if rc else ''


def base_cpu(job):
    n, args = job
    cpu, _, rc, _ = run_som(args)
    return n, cpu if rc == 0 else None


def mean(xs):
    xs = [x for x in xs if x is not None]
    return statistics.mean(xs) if xs else None


def accuracy(bs, res):
    os.makedirs(path('prof'), exist_ok=True)
    cfgs = [c for c in CONFIGS if not OPTS.configs or c[0] in OPTS.configs.split(',')]
    sz = sizing(bs, res, cfgs + ([CONFIGS[0]] if CONFIGS[0] not in cfgs else []))
    fac = lambda n, label: sz[n][label]['factor']
    jobs = [(n, scaled(a, l, fac(n, c[0])), c, i) for n, a, l in bs for c in cfgs
            for i in range(cfg_runs(c[0]))]
    if not OPTS.configs or 'exact' in OPTS.configs.split(','):
        # invocation counts scale with the repetitions: the base size gives the same shares;
        # the time view is taken at the 1 kHz runs' size, with the CPU time of an unprofiled
        # run of that size given, so the instrumentation's cost is calibrated in situ
        # (SOMPROF_EXACT_BASE_NS, docs/design/vm-profiling.md)
        jobs += [(n, a, ('exact', 'exact', 0, []), 0) for n, a, l in bs]
        big = [(n, scaled(a, l, fac(n, 'async-1k'))) for n, a, l in bs]
        base = res.get('exact_base_cpu_s', {}) if OPTS.reuse else {}
        todo = [b for b in big if b[0] not in base]
        with ThreadPoolExecutor(OPTS.jobs) as ex:
            base.update(ex.map(base_cpu, todo))
        res['exact_base_cpu_s'] = base
        jobs += [(n, a, ('exact-lean', 'exact', 0, ['--prof-lean']), 0,
                  {'SOMPROF_EXACT_BASE_NS': str(int(base[n] * 1e9))} if base.get(n) else None)
                 for n, a in big]
    failed = set(res.get('skipped', []))
    # coop runs one at a time, after the others: its marking thread samples by wall clock,
    # and two runs in parallel would oversubscribe the two cores (a descheduled VM takes its
    # pending flags at the first safe point it reaches)
    coop = [j for j in jobs if j[2][1] == 'coop']
    rest = [j for j in jobs if j[2][1] != 'coop']
    with ThreadPoolExecutor(OPTS.jobs) as ex:
        done = list(ex.map(one_run, rest))
    done += [one_run(j) for j in coop]  # after the others, alone on the machine
    for (n, _, c, i, *_), rc, err in done:
        if rc:
            failed.add(n)
            print('  %s %s run %d failed: %s' % (n, c[0], i, err.strip()[-200:]), file=sys.stderr)
    res['skipped'] = sorted(failed)
    acc = res.setdefault('accuracy', {})
    for n, _, _ in bs:
        if n in failed:
            continue
        ex = path('prof', '%s.exact.0.prof' % n)
        # the time view: the 'repro' section's two runs when there (current build), else run 0
        exl = [path('prof', '%s.exact-lean.%d.prof.time' % (n, i)) for i in (1, 2)]
        exl = [f for f in exl if os.path.exists(f)] or [path('prof', '%s.exact-lean.0.prof.time' % n)]
        for label, *_ in cfgs:
            files = [path('prof', '%s.%s.%d.prof' % (n, label, i)) for i in range(cfg_runs(label))]
            pairs = [compare(a, b) for a, b in itertools.combinations(files, 2)]
            pairs = [p for p in pairs if p]
            # the program's threads alone (no JIT compiler thread; the same for --jit=off)
            prog = [compare(a, b, JIT_COMPILE_RE) for a, b in itertools.combinations(files, 2)]
            prog = [p for p in prog if p]
            vs_inv = [compare(f, ex) for f in files]
            vs_time = [compare(f, t) for f in files for t in exl]
            metas = [report_meta(f) for f in files]
            meta = metas[0]
            acc.setdefault(n, {})[label] = {
                'runs': len(files),
                'factor': fac(n, label),
                'corr': mean(p[0] for p in pairs),
                'overlap': mean(p[1] for p in pairs),
                'corr_min': min((p[0] for p in pairs), default=None),
                'overlap_min': min((p[1] for p in pairs), default=None),
                'prog_corr': mean(p[0] for p in prog),
                'prog_overlap': mean(p[1] for p in prog),
                'exact_inv_corr': mean(v[0] if v else None for v in vs_inv),
                'exact_inv_overlap': mean(v[1] if v else None for v in vs_inv),
                'exact_time_corr': mean(v[0] if v else None for v in vs_time),
                'exact_time_overlap': mean(v[1] if v else None for v in vs_time),
                'samples': int(meta.get('samples', '0') or 0),
                'samples_mean': mean(int(m.get('samples', '0') or 0) for m in metas),
                'duration_s': mean(int(m.get('duration_ns', '0') or 0) / 1e9 for m in metas),
                'rate_changes': int(meta.get('rate_changes', '0') or 0),
                'interval_ns': int(meta.get('interval_ns', '0') or 0),
                'interval_initial_ns': int(meta.get('interval_initial_ns', '0') or 0),
                'partial': int(meta.get('partial', '0') or 0),
                'orphans': int(meta.get('orphans', '0') or 0),
            }
        print('  accuracy %s done' % n, file=sys.stderr)


# ---- 1n: samples that name SOM methods (the JIT's compiled code expanded) -------------------

def named_share(f):
    """Of a profile's samples (weights of `sampo export --collapsed`): (VM-thread weight, of it
    the weight whose every frame is a named SOM frame, all weight, of it the weight named).
    VM-thread stacks start at System>>boot; the JIT's compiler thread (som-jit) has one frame
    "Class>>selector [jit compile]" while it compiles that method, else its native stack.  A
    frame counts as named when it is Class>>selector (no [unknown], no unresolved
    method@0x...)."""
    p = subprocess.run([sampo_bin(), 'export', '--collapsed', f], capture_output=True, text=True)
    vm = named = total = all_named = 0
    for line in p.stdout.splitlines():
        stack, _, w = line.rpartition(' ')
        try:
            w = int(w)
        except ValueError:
            continue
        total += w
        frames = stack.split(';')
        ok = all('>>' in x and '[unknown]' not in x and '@0x' not in x for x in frames)
        all_named += w if ok else 0
        if frames[0] != 'System>>boot':
            continue
        vm += w
        named += w if ok else 0
    return vm, named, total, all_named


def names(bs, res):
    out = {}
    cfgs = [c for c in CONFIGS if not OPTS.configs or c[0] in OPTS.configs.split(',')]
    for n, _, _ in bs:
        for label, *_ in cfgs:
            files = [path('prof', '%s.%s.%d.prof' % (n, label, i)) for i in range(cfg_runs(label))]
            files = [f for f in files if os.path.exists(f)]
            if not files:
                continue
            vm = named = total = all_named = 0
            worst = worst_all = None
            for f in files:
                a, b, c, d = named_share(f)
                vm, named, total, all_named = vm + a, named + b, total + c, all_named + d
                if a:
                    worst = min(worst if worst is not None else 100.0, 100.0 * b / a)
                if c:
                    worst_all = min(worst_all if worst_all is not None else 100.0, 100.0 * d / c)
            out.setdefault(n, {})[label] = {
                'runs': len(files), 'named_pct': 100.0 * named / vm if vm else None,
                'named_min_pct': worst, 'vm_pct': 100.0 * vm / total if total else None,
                'all_named_pct': 100.0 * all_named / total if total else None,
                'all_named_min_pct': worst_all}
    res['names'] = out


# ---- 2b: samples against the exact time of the same run ----------------------------------

SAME = [('async-1k-same', 'async', 1000, ['--prof-exact-time']),
        ('async-tuned-same', 'async', 0, ['--prof-exact-time'])]


def same_run(bs, res):
    """--prof-exact-time: every activation of the sampled run itself is timed (lean exact tree,
    fenced clock reads where the samples' view changes), so the samples are compared with
    the exact time of the very execution they sampled: no second run, no calibration of the
    instrumentation (it is part of what both see).  Sized by samples like the accuracy runs,
    with calibration runs of their own (the hooks slow call-heavy code down several times)."""
    bs = [b for b in bs if b[0] not in res.get('skipped', [])]
    sz = sizing(bs, res, SAME)
    jobs = []
    for n, a, l in bs:
        for c in SAME:
            jobs += [(n, scaled(a, l, sz[n][c[0]]['factor']), c, i) for i in range(OPTS.same_runs)]
    with ThreadPoolExecutor(OPTS.jobs) as ex:
        done = list(ex.map(one_run, jobs))
    out = {}
    for (n, _, c, i, *_), rc, err in done:
        if rc:
            print('  %s %s run %d failed: %s' % (n, c[0], i, err.strip()[-200:]), file=sys.stderr)
            continue
        f = path('prof', '%s.%s.%d.prof' % (n, c[0], i))
        v = compare(f, f + '.time')
        m = report_meta(f)
        if v:
            out.setdefault(n, {}).setdefault(c[0], []).append(
                {'corr': v[0], 'overlap': v[1], 'samples': int(m.get('samples', '0') or 0),
                 'duration_s': int(m.get('duration_ns', '0') or 0) / 1e9})
    res['same_run'] = {n: {k: {'corr': mean(x['corr'] for x in v),
                               'corr_min': min(x['corr'] for x in v),
                               'overlap': mean(x['overlap'] for x in v),
                               'samples': mean(x['samples'] for x in v),
                               'duration_s': mean(x['duration_s'] for x in v), 'runs': len(v)}
                           for k, v in m.items()} for n, m in out.items()}


def exact_repro(bs, res):
    """How reproducible the separate-run ground truth is: two more --prof=exact --prof-lean
    runs of the same size (same SOMPROF_EXACT_BASE_NS), their time views compared."""
    sz, base = res.get('sizes', {}), res.get('exact_base_cpu_s', {})
    jobs = []
    for n, a, l in bs:
        if n in res.get('skipped', []) or not base.get(n):
            continue
        big = scaled(a, l, sz.get(n, {}).get('async-1k', {}).get('factor', 1))
        jobs += [(n, big, ('exact-lean', 'exact', 0, ['--prof-lean']), i,
                  {'SOMPROF_EXACT_BASE_NS': str(int(base[n] * 1e9))}) for i in (1, 2)]
    with ThreadPoolExecutor(OPTS.jobs) as ex:
        done = list(ex.map(one_run, jobs))
    out = {}
    for n in sorted({j[0] for j in jobs}):
        a, b = (path('prof', '%s.exact-lean.%d.prof.time' % (n, i)) for i in (1, 2))
        v = compare(a, b) if os.path.exists(a) and os.path.exists(b) else None
        if v:
            out[n] = {'corr': v[0], 'overlap': v[1]}
    res['exact_repro'] = out


# ---- 3: overhead --------------------------------------------------------------------------

OVH = [('none', None, 0), ('empty-1k', 'async', 1000), ('empty-5k', 'async', 5000),
       ('async-100', 'async', 100), ('async-1k', 'async', 1000),
       ('async-5k', 'async', 5000), ('async-tuned', 'async', 0), ('coop-100', 'coop', 100),
       ('coop-1k', 'coop', 1000), ('coop-5k', 'coop', 5000), ('coop-tuned', 'coop', 0)]
EMPTY = {'SAMPO_EMPTY_HANDLER': '1'}  # the signal floor: libsampo's handler returns at once


def overhead(bs, res):
    """Rounds are interleaved (every configuration once per round), so drifts of the machine
    hit all alike.  Both wall time (the run time the issue asks about: the marking and manager
    threads run on the other core) and CPU time (user+sys of the whole process: everything
    the profiler costs) are kept; per configuration the median over rounds."""
    out = {}
    tmp = path('ovh.prof')
    ovh = [c for c in OVH if not OPTS.ovh or c[0] == 'none' or c[0] in OPTS.ovh.split(',')]
    for n, args, _ in bs:
        if n in res.get('skipped', []):
            continue
        cpu = {c[0]: [] for c in ovh}
        wall = {c[0]: [] for c in ovh}
        for _ in range(OPTS.reps):
            for label, mode, hz in ovh:
                a = args if mode is None else prof_args(mode, hz, tmp) + args
                c, w, rc, _ = run_som(a, EMPTY if label.startswith('empty') else None)
                if rc == 0:
                    cpu[label].append(c)
                    wall[label].append(w)
        o = out[n] = {'base_s': statistics.median(cpu['none']) if cpu['none'] else None,
                      'base_wall_s': statistics.median(wall['none']) if wall['none'] else None,
                      'cpu_runs': cpu, 'wall_runs': wall}
        for what, d in (('cpu', cpu), ('wall', wall)):
            base = statistics.median(d['none']) if d['none'] else None
            if base:  # the unprofiled runs' own spread: (max - min) / median, percent
                o[what + '_noise'] = 100.0 * (max(d['none']) - min(d['none'])) / base
            for label, _, _ in ovh[1:]:
                if base and d[label]:
                    o[what + ':' + label] = 100.0 * (statistics.median(d[label]) / base - 1)
        print('  overhead %s done' % n, file=sys.stderr)
    res['overhead_focus' if OPTS.ovh else 'overhead'] = out


# ---- 3e: in-process breakdown of the async profiler's own cost ---------------------------

OURS = re.compile(r'(prof_|cc_|spa_|spn_|spx_|spc_|spo_|sampo_|capture_|trig_|mgr_|ring_|tune_)')


def perf_share(out):
    """From `perf report --sort comm,sym`: percent of the run's CPU samples in the profiler's
    code on the VM thread, and in the profiler's own threads (all their code, kernel too)."""
    vm = thr = 0.0
    for line in out.splitlines():
        f = line.split()
        if line.startswith('#') or len(f) < 2 or not f[0].endswith('%'):
            continue
        v = float(f[0].rstrip('%'))
        if f[1].startswith('sampo'):
            thr += v
        elif len(f) > 3 and OURS.match(f[3]):
            vm += v
    return vm, thr


def breakdown(bs, res):
    """perf record -e cpu-clock -F 20000 of each benchmark under async 1 kHz and under the
    empty handler: what libsampo + somprof code costs beyond the signal itself, in points of
    the run's CPU (the signal's own cost, kernel delivery and VM exits, is the floor)."""
    if not shutil.which('perf'):
        print('  breakdown: no perf, skipped', file=sys.stderr)
        return
    out = {}
    data = path('perf.data')
    sz = res.get('sizes', {})
    for n, args, lin in bs:
        if n in res.get('skipped', []):
            continue
        # ~2000 samples (a third of the accuracy runs): per-sample costs dominate the fixed
        # ones (thread start, symbol tables), which would inflate a 0.1 s run's percentages
        args = scaled(args, lin, max(1, sz.get(n, {}).get('async-1k', {}).get('factor', 3) // 3))
        row = {}
        for label, env in (('async-1k', None), ('empty-1k', EMPTY)):
            e = dict(os.environ, **env) if env else None
            cmd = ['perf', 'record', '-q', '-e', 'cpu-clock', '-F', '20000', '-o', data, som_bin()]
            p = subprocess.run(cmd + prof_args('async', 1000, path('bd.prof')) + args,
                               capture_output=True, env=e)
            if p.returncode:
                continue
            rep = subprocess.run(['perf', 'report', '-i', data, '--stdio', '--sort', 'comm,sym'],
                                 capture_output=True, text=True).stdout
            row[label] = perf_share(rep)
        if len(row) == 2:
            a, z = row['async-1k'], row['empty-1k']
            out[n] = {'vm': a[0], 'threads': a[1], 'empty_vm': z[0], 'empty_threads': z[1],
                      'extra': a[0] + a[1] - z[0] - z[1]}
    res['breakdown'] = out


# ---- 5: VM states, 6: threads --------------------------------------------------------------

def parse_states(err, what):
    m = re.search(r'somprof: %s states:(.*)' % what, err)
    if not m:
        return None
    return {k: float(v) for k, v in re.findall(r'(\w+)=([0-9.]+)%', m.group(1))}


def states(bs, res):
    out = {}
    sz = res.get('sizes', {})
    for n, args, lin in bs:
        if n in res.get('skipped', []):
            continue
        # the accuracy runs' size (~6000 samples: sampling noise ~0.6 pp on a 30% share); one
        # at a time (the exact split's clock is wall time)
        args = scaled(args, lin, sz.get(n, {}).get('async-1k', {}).get('factor', 1))
        for label, mode in (('async', 'async'), ('coop', 'coop')):
            runs = []
            for _ in range(OPTS.states_runs):
                _, _, rc, err = run_som(prof_args(mode, 1000, path('st.prof'), ['--prof-states']) + args)
                s, e = parse_states(err, 'sampled'), parse_states(err, 'exact')
                if not rc and s and e:
                    runs.append((s, e))
            if not runs:
                continue
            avg = lambda i: {k: statistics.mean(r[i][k] for r in runs) for k in runs[0][i]}
            diffs = [max(abs(s[k] - e[k]) for k in s) for s, e in runs]
            out.setdefault(n, {})[label] = {'sampled': avg(0), 'exact': avg(1), 'runs': len(runs),
                                            'maxdiff': max(diffs), 'maxdiffs': diffs}
    res['states'] = out


def tuning(bs, res):
    """Long tuned runs (10x the inner iterations): interval over time and rate changes."""
    out = {}
    os.makedirs(path('prof'), exist_ok=True)
    for n, args, lin in bs:
        if n not in ('Fig2', 'NBody', 'Richards') or n in res.get('skipped', []):
            continue
        a = scaled(args, lin, 10)
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
    for n, args, _ in pick:
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
    L += ['## 1. Accuracy run-to-run (mean over all pairs of runs; runs sized to ~%d samples%s)'
          % (OPTS.samples, ', ' + OPTS.samples_for if OPTS.samples_for else ''), '',
          'Per configuration: correlation / overlap %, the same of the program\'s threads alone (the',
          'JIT compiler thread\'s samples left out: `sampo compare --ignore \'\\[jit compile\\]\'`), then',
          'mean samples per run and run length (s).', '',
          '| benchmark | ' + ' | '.join('%s corr / overlap %% | program alone | samples, s' % c[0]
                                        for c in CONFIGS) + ' |',
          '|---|' + '---|' * (3 * len(CONFIGS))]
    for n, a in acc.items():
        cells = []
        for c in CONFIGS:
            x = a.get(c[0])
            if not x:
                cells += ['-', '-', '-']
                continue
            cells.append('%s / %s' % (fmt(x['corr']), fmt(x['overlap'], '%.1f')))
            cells.append('%s / %s' % (fmt(x.get('prog_corr')), fmt(x.get('prog_overlap'), '%.1f')))
            cells.append('%s, %s' % (fmt(x.get('samples_mean'), '%.0f'), fmt(x.get('duration_s'), '%.1f')))
        L.append('| %s | ' % n + ' | '.join(cells) + ' |')
    L += ['', '## 2. Accuracy against the exact mode (mean over runs)', '',
          'inv = exact invocation counts (--prof=exact: every activation and primitive, trivial methods',
          'activated): a different quantity from time, shown for contrast; time = the exact time-weighted',
          'profile of a --prof=exact --prof-lean run at the 1 kHz runs\' size (self ns; only the frames a',
          'sampler sees; the instrumentation\'s cost calibrated in situ against an unprofiled run of',
          'the same size, SOMPROF_EXACT_BASE_NS).', '',
          'Last column: the exact time views of two more such runs against each other (how well the',
          'ground truth reproduces itself from run to run).', '',
          '| benchmark | ' + ' | '.join('%s vs inv | %s vs time' % (c[0], c[0]) for c in CONFIGS) +
          ' | exact time vs exact time |',
          '|---|' + '---|' * (2 * len(CONFIGS) + 1)]
    rp = res.get('exact_repro', {})
    for n, a in acc.items():
        cells = []
        for c in CONFIGS:
            x = a.get(c[0])
            if not x:
                cells += ['-', '-']
                continue
            cells.append('%s / %s' % (fmt(x['exact_inv_corr']), fmt(x['exact_inv_overlap'], '%.1f')))
            cells.append('%s / %s' % (fmt(x['exact_time_corr']), fmt(x['exact_time_overlap'], '%.1f')))
        r = rp.get(n)
        cells.append('%s / %s' % (fmt(r['corr']), fmt(r['overlap'], '%.1f')) if r else '-')
        L.append('| %s | ' % n + ' | '.join(cells) + ' |')
    sr = res.get('same_run', {})
    if sr:
        L += ['', '## 2b. Samples against the exact time of the same run (--prof-exact-time)', '',
              'Every activation of the sampled run itself timed (lean exact tree, fenced clock reads',
              'where the samples\' view changes): correlation / overlap % (mean over runs; min corr),',
              'samples per run and run length (s).', '',
              '| benchmark | ' + ' | '.join('%s corr / overlap %% (min) | samples, s' % c[0] for c in SAME) + ' |',
              '|---|' + '---|' * (2 * len(SAME))]
        for n, m in sr.items():
            cells = []
            for c in SAME:
                x = m.get(c[0])
                if not x:
                    cells += ['-', '-']
                    continue
                cells.append('%s / %s (%s)' % (fmt(x['corr']), fmt(x['overlap'], '%.1f'), fmt(x['corr_min'])))
                cells.append('%s, %s' % (fmt(x['samples'], '%.0f'), fmt(x['duration_s'], '%.1f')))
            L.append('| %s | ' % n + ' | '.join(cells) + ' |')
    secs = [('overhead', 'a', 'b', OPTS.reps), ('overhead_focus', 'c', 'd', None)]
    for key, sa, sb, reps in secs:
        L += overhead_tables(res.get(key, {}), sa, sb, reps)
    bd = res.get('breakdown', {})
    if bd:
        L += ['', '## 3e. The async profiler\'s own cost at 1 kHz, in process (perf record -e cpu-clock -F 20000)', '',
              'Percent of the run\'s CPU samples: libsampo + somprof code on the VM thread, the profiler\'s',
              'threads (manager; all their code), the same under the empty handler, and the difference:',
              'what the profiler adds beyond the signal itself (whose cost, kernel delivery and VM exits,',
              'is the floor of tables 3b/3d).', '',
              '| benchmark | VM thread | threads | empty: VM thread | empty: threads | added (points) |',
              '|---|---|---|---|---|---|']
        for n, x in bd.items():
            L.append('| %s | %.2f | %.2f | %.2f | %.2f | %+.2f |' % (n, x['vm'], x['threads'], x['empty_vm'],
                                                                x['empty_threads'], x['extra']))
        ex = sorted(x['extra'] for x in bd.values())
        L.append('| **median** | | | | | %+.2f |' % statistics.median(ex))
    L += tables_rest(res, acc)
    return '\n'.join(L) + '\n'


def overhead_tables(ov, sa, sb, reps):
    L = []
    ovh_cols = [c for c in OVH[1:] if any('cpu:' + c[0] in o for o in ov.values())]
    for what, title in (('wall', 'wall time'), ('cpu', 'CPU time (user+sys, all threads)')):
        if not ov:
            break
        n_rounds = reps or len(next(iter(ov.values()))['cpu_runs']['none'])
        L += ['', '## 3%s. Overhead: %% %s over the unprofiled run (median of %d interleaved rounds)'
              % (sa if what == 'wall' else sb, title, n_rounds), '',
              '| benchmark | base s | noise % | ' + ' | '.join(c[0] for c in ovh_cols) + ' |',
              '|---|---|---|' + '---|' * len(ovh_cols)]
        for n, o in ov.items():
            L.append('| %s | %s | %s | ' % (n, fmt(o.get('base_wall_s' if what == 'wall' else 'base_s'), '%.2f'),
                                           fmt(o.get(what + '_noise'), '%.1f')) +
                     ' | '.join(fmt(o.get(what + ':' + c[0]), '%+.1f') for c in ovh_cols) + ' |')
        cols = {c[0]: sorted(o[what + ':' + c[0]] for o in ov.values() if what + ':' + c[0] in o)
                for c in ovh_cols}
        L.append('| **median** | | %s | ' % fmt(statistics.median([o[what + '_noise'] for o in ov.values()
                                                                  if what + '_noise' in o] or [0]), '%.1f') +
                 ' | '.join(fmt(statistics.median(v) if v else None, '%+.1f') for v in cols.values()) + ' |')
        L.append('| quartiles | | | ' + ' | '.join('%+.1f..%+.1f' % (v[len(v) // 4], v[(3 * len(v)) // 4])
                                                 if v else '-' for v in cols.values()) + ' |')
    return L


def tables_rest(res, acc):
    L = []
    L += ['', '## 4. Self-tuning (first tuned run of each benchmark)', '',
          '| benchmark | mode | initial interval ms | final interval ms | rate changes | samples |',
          '|---|---|---|---|---|---|']
    for n, a in acc.items():
        for c in ('async-tuned', 'coop-tuned'):
            x = a.get(c)
            if not x:
                continue
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
        L += ['', '## 5. VM-state split, sampled vs exact in the same run (1 kHz), percent (mean of '
              'the runs; max diff: largest |sampled - exact| of each run)', '',
              '| benchmark | mode | interp s/e | compiled s/e | primitive s/e | gc s/e | compiling s/e | max diff pp |',
              '|---|---|---|---|---|---|---|---|']
        for n, m in st.items():
            for mode, x in m.items():
                s, e = x['sampled'], x['exact']
                L.append('| %s | %s | %s | %s | %s | %s | %s | %s |' % (
                    n, mode, *['%.1f / %.1f' % (s.get(k, 0), e.get(k, 0))
                               for k in ('interpreting', 'compiled', 'primitive', 'gc', 'compiling')],
                    ', '.join('%.2f' % d for d in x.get('maxdiffs', [x['maxdiff']]))))
    nm = res.get('names', {})
    if nm:
        L += ['', '## 1n. Samples naming SOM methods (percent of the sample weight whose every frame is '
              'a named SOM method, mean over the runs (the worst run); VM: the VM threads\' samples; all: '
              'the JIT compiler thread\'s too, named by the method it compiles; VM threads: their share)', '',
              '| benchmark | ' + ' | '.join('%s VM named %% (min) | all named %% (min) | VM threads %%' % c
                                             for c in sorted({c for m in nm.values() for c in m})) + ' |',
              '|---|' + '---|---|---|' * len({c for m in nm.values() for c in m})]
        for n, m in nm.items():
            cells = []
            for c in sorted({c for m in nm.values() for c in m}):
                x = m.get(c)
                cells += ['%s (%s)' % (fmt(x['named_pct'], '%.2f'), fmt(x['named_min_pct'], '%.2f')),
                          '%s (%s)' % (fmt(x.get('all_named_pct'), '%.2f'),
                                       fmt(x.get('all_named_min_pct'), '%.2f')),
                          fmt(x['vm_pct'], '%.1f')] if x else ['-', '-', '-']
            L.append('| %s | ' % n + ' | '.join(cells) + ' |')
    th = res.get('threads', {})
    if th:
        L += ['', '## 6. Threads (async 1 kHz; overhead on wall time; accuracy vs the 1-thread run)', '',
              '| benchmark | threads | base wall s | overhead % | corr vs 1 thread | overlap % |', '|---|---|---|---|---|---|']
        for n, m in th.items():
            for t, x in m.items():
                L.append('| %s | %s | %.2f | %+.1f | %s | %s |' % (n, t, x['wall_base'], x['overhead'],
                                                             fmt(x['corr_vs_1thread']), fmt(x['overlap_vs_1thread'], '%.1f')))
    return L


def main():
    global OPTS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--build', default=os.path.join(ROOT, 'build', 'release'))
    ap.add_argument('--awfy', default='/work/somref/Examples/AreWeFastYet')
    ap.add_argument('--runs', type=int, default=10)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument('--jobs', type=int, default=2, help='parallel accuracy runs (not overhead)')
    ap.add_argument('--only', help='comma-separated benchmark names')
    ap.add_argument('--configs', help='accuracy: comma-separated configurations (async-1k, async-tuned,'
                    ' coop-1k, coop-tuned, exact); default all')
    ap.add_argument('--samples', type=int, default=6000, help='accuracy: samples per run (sizing)')
    ap.add_argument('--samples-for', help='accuracy: per-benchmark targets, e.g. DeltaBlue=12000')
    ap.add_argument('--tuned-runs', type=int, default=None, help='accuracy: runs of the tuned '
                    'configurations (default --runs)')
    ap.add_argument('--skip', default='',
                    help='comma-separated sections: accuracy,names,same,repro,overhead,breakdown,'
                    'states,tuning,threads')
    ap.add_argument('--same-runs', type=int, default=2, help='2b: runs per configuration')
    ap.add_argument('--states-runs', type=int, default=2, help='5: runs per benchmark and mode')
    ap.add_argument('--ovh', help='overhead: comma-separated configurations (default all)')
    ap.add_argument('--quick', action='store_true', help='3 runs, 1 rep, our benchmarks only')
    ap.add_argument('--reuse', action='store_true',
                    help='keep profiles already in OUT/prof and results of skipped sections')
    ap.add_argument('--out', default=os.path.join(ROOT, 'build', 'eval'))
    ap.add_argument('--som-arg', action='append',
                    help='an argument given to every som run, before the others (repeatable), '
                    'e.g. --som-arg=--jit=off; recorded in results.json')
    OPTS = ap.parse_args()
    if OPTS.quick:
        OPTS.runs, OPTS.reps, OPTS.awfy, OPTS.samples = 3, 1, None, 1000
    if OPTS.tuned_runs is None:
        OPTS.tuned_runs = OPTS.runs
    if not os.path.exists(som_bin()) or not os.path.exists(sampo_bin()):
        sys.exit('eval.py: no som/sampo under %s (build it first)' % OPTS.build)
    os.makedirs(OPTS.out, exist_ok=True)
    bs = benches()
    res = {}
    if OPTS.reuse and os.path.exists(path('results.json')):
        res = json.load(open(path('results.json')))
    os.makedirs(path('prof'), exist_ok=True)
    skip = OPTS.skip.split(',')
    res['som_args'] = OPTS.som_arg or []
    for name, fn in (('accuracy', accuracy), ('names', names), ('same', same_run), ('repro', exact_repro),
                     ('overhead', overhead), ('breakdown', breakdown), ('states', states),
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
