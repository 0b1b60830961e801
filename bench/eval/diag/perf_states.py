#!/usr/bin/env python3
"""The sampled VM-state split of a profiled som run against perf's view of the same run.

The exact split (--prof-states) times every state transition with a fenced clock read;
where transitions come every few tens of ns (Json, Richards) those reads take 50-70% of the
run, so its runs are not the program a sampler profiles without it.  This script takes a
reference that does not touch the program: `perf record -e cpu-clock -g` (the kernel's
timer interrupt, frame-pointer call chains) of the same `som --prof=MODE` run.  Each perf
sample of the VM thread is classified by its innermost frame that decides a state:

  - a function of the profiler itself (spc_, spx_, spr_, somprof_, sp_): its own cost, kept apart;
  - a function of the collector (gc.c, not the allocator): gc;
  - a primitive (any function defined in src/vm/prim_*.c): primitive;
  - the interpreter (interp_run...): interpreting;
  - compiled code (a `Class>>selector` symbol of the perf map) or the JIT's runtime
    (jit_rt_...): compiled;
  - anything else (libc without frame pointers, the kernel with a broken user stack): other.

The functions of prim_*.c and gc.c are read from the build's object files (nm).  perf's
boundary differs from the VM's by the few instructions between a state store and the call
(the VM counts the call and the return handling as primitive, perf as the caller), which
makes perf's primitive share lower by ~1 point per ~50 ns between primitive calls; compare
samplers with each other against the same reference.

  perf_states.py --build build/release --awfy AWFY_DIR [--modes coop,async]
      [--jit off] [--hz 1000] [--perf-hz 4000] [--rounds 1] [--env NAME=VALUE ...]
      [--label L=NAME=VALUE] BENCH:INNER...

--label adds a coop variant with an environment setting (e.g. own=SOMPROF_COOP_WINDOW_NS=8000).
Prints one row per run: perf's split, the profile's split (without the compiling state:
the compiler thread), and their difference in the primitive share.  Standard library only;
needs perf and nm.
"""
import argparse
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

STATES = ('primitive', 'interpreting', 'compiled', 'gc')
PROF_PREFIXES = ('spc_', 'spx_', 'spr_', 'somprof_', 'sp_')
AWFY_CP = ('Core', 'CD', 'DeltaBlue', 'Havlak', 'Json', 'NBody', 'Richards', '.')
NOT_GC = {'gc_alloc', 'gc_try_alloc', 'gc_init', 'gc_fini', 'gc_oom'}


def functions(objs):
    out = set()
    for o in objs:
        p = subprocess.run(['nm', o], capture_output=True, text=True, check=True)
        for line in p.stdout.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in 'Tt':
                out.add(f[2])
    return out


def classify(stack, prims, gcs):
    for sym in stack:
        s = sym.split('+')[0]
        if s.startswith(PROF_PREFIXES):
            return 'profiler'
        if s in gcs:
            return 'gc'
        if s in prims:
            return 'primitive'
        if s.startswith('interp_run'):
            return 'interpreting'
        if '>>' in s or s.startswith('jit_rt'):
            return 'compiled'
    return 'other'


def perf_split(data, prims, gcs):
    """perf script's samples of the busiest thread (the VM thread): state -> count."""
    p = subprocess.run(['perf', 'script', '-i', data, '-F', 'tid,ip,sym'], capture_output=True,
                       text=True)
    samples, stack, tid = [], [], None
    for line in p.stdout.splitlines() + ['']:
        if not line.strip():
            if tid is not None:
                samples.append((tid, stack))
            stack, tid = [], None
        elif not line.startswith((' ', '\t')):
            tid = line.split()[0]
        else:
            f = line.split()
            stack.append(f[1] if len(f) > 1 else '?')
    if not samples:
        return collections.Counter()
    vm = collections.Counter(t for t, _ in samples).most_common(1)[0][0]
    return collections.Counter(classify(s, prims, gcs) for t, s in samples if t == vm)


def own_split(sampo, prof):
    out = subprocess.run([sampo, 'report', '--states', prof], capture_output=True,
                         text=True).stdout
    v = {}
    for line in out.splitlines():
        m = re.match(r'^\s*([0-9.]+)%\s+(\d+)\s+([a-z]+)', line)
        if m:
            v[m.group(3)] = int(m.group(2))
    return v


def shares(counts, keys):
    n = sum(counts.get(k, 0) for k in keys)
    return {k: 100.0 * counts.get(k, 0) / n if n else 0.0 for k in keys}, n


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--build', required=True)
    ap.add_argument('--awfy', required=True, help='SOM-st/SOM Examples/AreWeFastYet')
    ap.add_argument('--modes', default='coop,async')
    ap.add_argument('--label', action='append', default=[],
                    help='LABEL=NAME=VALUE: also coop with that environment setting')
    ap.add_argument('--jit', default='off')
    ap.add_argument('--hz', type=int, default=1000)
    ap.add_argument('--perf-hz', type=int, default=4000)
    ap.add_argument('--rounds', type=int, default=1)
    ap.add_argument('bench', nargs='+', help='NAME:INNER')
    a = ap.parse_args()
    som = os.path.join(a.build, 'tools', 'som', 'som')
    sampo = os.path.join(a.build, 'tools', 'sampo', 'sampo')
    objs = glob.glob(os.path.join(a.build, 'src', 'vm', 'CMakeFiles', '*', '*.c.o'))
    prim_objs = [o for o in objs if os.path.basename(o).startswith('prim_')]
    gc_objs = [o for o in objs if os.path.basename(o) == 'gc.c.o']
    if not (os.access(som, os.X_OK) and os.access(sampo, os.X_OK) and prim_objs and gc_objs):
        sys.exit('perf_states.py: no som, sampo or src/vm objects under %s (build it first)'
                 % a.build)
    prims, gcs = functions(prim_objs), functions(gc_objs) - NOT_GC
    variants = [(m, m, {}) for m in a.modes.split(',') if m]
    for lab in a.label:
        name, _, kv = lab.partition('=')
        k, _, v = kv.partition('=')
        variants.append((name, 'coop', {k: v}))
    cp = ':'.join(os.path.join(a.awfy, d) for d in AWFY_CP)
    keys = STATES + ('other',)
    print('| benchmark | sampler | perf: prim / interp / compiled / gc / other % | '
          'profile: prim / interp / compiled / gc % | prim diff | profiler % |')
    print('|---|---|---|---|---|---|')
    tmp = tempfile.mkdtemp(prefix='perf_states.')
    for _ in range(a.rounds):
        for spec in a.bench:
            name, _, inner = spec.partition(':')
            for label, mode, env in variants:
                data, prof = os.path.join(tmp, 'perf.data'), os.path.join(tmp, 'run.prof')
                e = dict(os.environ, SAMPO_PERF_MAP='1', **env)
                cmd = ['perf', 'record', '-q', '-e', 'cpu-clock', '-F', str(a.perf_hz), '-g',
                       '-o', data, '--', som, '--jit=' + a.jit, '--prof=' + mode, '--prof-hz',
                       str(a.hz), '--prof-out', prof, '-cp', cp,
                       os.path.join(a.awfy, 'Harness.som'), name, '1', inner]
                r = subprocess.run(cmd, capture_output=True, text=True, env=e)
                if r.returncode != 0:
                    sys.exit('perf_states.py: %s failed:\n%s' % (' '.join(cmd), r.stderr[-2000:]))
                pc = perf_split(data, prims, gcs)
                ps, n = shares(pc, keys)
                os_, _ = shares(own_split(sampo, prof), STATES)
                prof_share = 100.0 * pc.get('profiler', 0) / max(1, n + pc.get('profiler', 0))
                # perf's shares without `other`, so that both sum to the same states
                pn, _ = shares(pc, STATES)
                print('| %s | %s | %s / %.1f | %s | %+.1f | %.1f |' % (
                    name, label, ' / '.join('%.1f' % ps[k] for k in STATES), ps['other'],
                    ' / '.join('%.1f' % os_[k] for k in STATES),
                    os_['primitive'] - pn['primitive'], prof_share), flush=True)
    for f in glob.glob(os.path.join(tmp, '*')):
        os.remove(f)
    os.rmdir(tmp)


if __name__ == '__main__':
    main()
