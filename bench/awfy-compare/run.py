#!/usr/bin/env python3
"""Side-by-side Are-We-Fast-Yet comparison: our `som` against the C++ (and,
if available, Lua 5.4 and LuaJIT) versions of the same benchmarks, at the
same inner iteration counts, on this machine.

Why: the speed target for `som` is stated relative to the C++ versions of
AWFY (SOM++ runs AWFY at a geometric mean of ~70x C++, Lua 5.4 at ~30x). We
cannot run SOM++ here, so we measure C++ (and Lua 5.4) locally and express
our interpreter as a multiple of C++ ("som/C++"); the target is <= ~35x.

Nothing here is built or downloaded: the C++ harness binary and the Lua
benchmark directory are local, NOT part of the repository (see
docs/performance.md, section "AWFY: som vs C++ and Lua 5.4"). Whatever is
missing is skipped and reported as such.

Every implementation runs `<harness> <Benchmark> <outer> <inner>` and prints
one line `<Benchmark>: iterations=1 runtime: <N>us` per outer iteration; the
first --warmup iterations are dropped and the median (or --stat min) of the
rest is reported in milliseconds per outer iteration (--stat cpu: process
CPU time / outer iterations instead, for loaded machines).

Examples:
  bench/awfy-compare/run.py --som build/release/tools/som/som \\
      --cpp /work/calib/cpp/harness --lua-dir /work/calib/lua
  AWFY_CPP=/work/calib/cpp/harness bench/awfy-compare/run.py -n 4 --only Bounce,List
  bench/awfy-compare/run.py ... --inner Richards=20 --json out.json

JIT modes (issue 12): --jit-modes off,on runs `som` once per mode, as columns "som:off"
(--jit=off) and "som:on" (--jit=on); --som-variant LABEL=FLAGS adds any other column (e.g.
--som-variant "eager=--jit=eager"); --som-flags FLAGS are added to every som run. Ratios
are printed against C++ and against som:off. Besides the steady state (per-iteration
times from each harness's own output, after --warmup iterations), every run's total process
time is measured (wall clock and user+sys CPU, from wait4 of that process: start-up,
compilation and warm-up included) and the same ratios are printed from it; --sizes standard
uses AWFY's standard inner iterations (rebench.conf: DeltaBlue 12000, Richards 100, ...).

--awfy DIR (a checkout of the are-we-fast-yet repository) supplies C++ and Lua: the C++
harness is compiled (g++ -O2 -ffp-contract=off -std=c++17, $CXX overrides g++) into
--scratch DIR (default /tmp/awfy-cpp-O2; rebuilt only when a source is newer) and
DIR/benchmarks/Lua is the Lua directory. Without --awfy-dir, the SOM sources are taken from
/work/ext/SOM/Examples/AreWeFastYet when it exists, else DIR/benchmarks/SOM.

The full JIT comparison (docs/evaluation.md, section J):
  bench/awfy-compare/run.py --som build/release/tools/som/som --awfy /work/ext/are-we-fast-yet \
      --jit-modes off,on --sizes standard -n 10 --warmup 4 --json awfy-jit.json

Environment defaults: SOM (som binary), AWFY_SOM_DIR (directory holding
Harness.som and Core/, CD/, ...), SOM_CORELIB_DIR (optional extra class path
entry appended after the AWFY directories), AWFY_CPP (C++ harness binary),
AWFY_LUA_DIR (directory holding harness.lua), LUA (Lua interpreter, default
lua5.4), LUAJIT (default luajit). With --lua-dir, LuaJIT runs the same Lua
sources twice when it is installed: `luajit -joff` (its interpreter only,
column "LJint") and `luajit` (trace compiler on, column "LJ"); --no-luajit
leaves both out. Only the python3 standard library is used.
"""
import argparse
import glob
import json
import math
import os
import re
import selectors
import shlex
import shutil
import statistics
import subprocess
import sys
import time

# Benchmark -> inner iterations. Chosen so that one outer iteration of `som`
# takes roughly 0.5-2 s on a 2-core VM. Mandelbrot, NBody, CD and Havlak only
# verify their result for particular counts (docs/testing.md), so they keep a
# verifiable one even if it is slower or faster than that.
INNER = {
    'Bounce': 800,
    'CD': 100,
    'DeltaBlue': 10000,
    'Havlak': 150,
    'Json': 40,
    'List': 1500,
    'Mandelbrot': 500,
    'NBody': 250000,
    'Permute': 600,
    'Queens': 800,
    'Richards': 10,
    'Sieve': 800,
    'Storage': 800,
    'Towers': 300,
}
# AWFY's standard inner iterations (are-we-fast-yet rebench.conf), all verifiable.
STANDARD = {
    'Bounce': 1500,
    'CD': 250,
    'DeltaBlue': 12000,
    'Havlak': 1500,
    'Json': 100,
    'List': 1500,
    'Mandelbrot': 500,
    'NBody': 250000,
    'Permute': 1000,
    'Queens': 1000,
    'Richards': 100,
    'Sieve': 3000,
    'Storage': 1000,
    'Towers': 600,
}
AWFY_DIRS = ['Core', 'CD', 'DeltaBlue', 'Havlak', 'Json', 'NBody', 'Richards']
CPP_SOURCES = ['src/harness.cpp', 'src/deltablue.cpp', 'src/memory/object_tracker.cpp',
               'src/richards.cpp']
LINE_RE = re.compile(r'^(\w+): iterations=1 runtime: ([0-9.]+)\s*us\s*$')
BASE_IMPLS = ('cpp', 'lua', 'ljint', 'lj')
IMPLS = BASE_IMPLS + ('som',)  # set_impls() replaces 'som' by the som variants
# column headings
LABEL = {'cpp': 'C++', 'lua': 'Lua', 'ljint': 'LJint', 'lj': 'LJ', 'som': 'som'}
# som variant -> extra VM flags ('som' alone: no variant flags)
SOM_VARIANTS = {'som': []}


def set_impls(variants):
    """variants: list of (label, flags); answers nothing, updates IMPLS/LABEL/SOM_VARIANTS."""
    global IMPLS
    SOM_VARIANTS.clear()
    if not variants:
        variants = [('som', [])]
    names = []
    for label, flags in variants:
        name = label if label == 'som' else 'som:' + label
        SOM_VARIANTS[name] = flags
        LABEL[name] = name
        names.append(name)
    IMPLS = BASE_IMPLS + tuple(names)


def is_som(impl):
    return impl in SOM_VARIANTS


def default_som():
    if os.environ.get('SOM'):
        return os.environ['SOM']
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for cand in ('build/release/tools/som/som', 'build/tools/som/som',
                 'build/dev/tools/som/som'):
        path = os.path.join(root, cand)
        if os.access(path, os.X_OK):
            return path
    return None


def impl_command(impl, opts, bench, outer, inner):
    """Returns (argv, cwd) for one run, or None if `impl` is not configured."""
    if impl == 'cpp':
        if not opts.cpp:
            return None
        return [opts.cpp, bench, str(outer), str(inner)], None
    if impl == 'lua':
        if not opts.lua_dir:
            return None
        return [opts.lua, 'harness.lua', bench, str(outer), str(inner)], opts.lua_dir
    if impl in ('ljint', 'lj'):
        if not opts.lua_dir or not opts.luajit:
            return None
        flags = ['-joff'] if impl == 'ljint' else []
        return ([opts.luajit] + flags + ['harness.lua', bench, str(outer), str(inner)],
                opts.lua_dir)
    if not opts.som or not is_som(impl):
        return None
    cp = [os.path.join(opts.awfy_dir, d) for d in AWFY_DIRS]
    if opts.corelib:
        cp.append(opts.corelib)
    argv = ([opts.som] + SOM_VARIANTS[impl] + opts.som_flags +
            ['-cp', ':'.join(cp), os.path.join(opts.awfy_dir, 'Harness.som'),
             bench, str(outer), str(inner)])
    return argv, None


def run_measured(argv, cwd, timeout):
    """Runs argv (cwd, timeout s); answers a dict with rc, out, err (bytes), wall (s), cpu
    (user+sys s) and maxrss_kib of exactly this process (os.wait4), or raises
    subprocess.TimeoutExpired."""
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    chunks = {proc.stdout: [], proc.stderr: []}
    sel = selectors.DefaultSelector()
    for f in chunks:
        sel.register(f, selectors.EVENT_READ)
    deadline = t0 + timeout
    while sel.get_map():
        left = deadline - time.monotonic()
        if left <= 0:
            proc.kill()
            os.wait4(proc.pid, 0)
            proc.returncode = -9
            raise subprocess.TimeoutExpired(argv, timeout)
        for key, _ in sel.select(min(left, 1.0)):
            data = os.read(key.fd, 65536)
            if data:
                chunks[key.fileobj].append(data)
            else:
                sel.unregister(key.fileobj)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stdout.close()
    proc.stderr.close()
    return {'rc': proc.returncode, 'out': b''.join(chunks[proc.stdout]),
            'err': b''.join(chunks[proc.stderr]), 'wall': wall,
            'cpu': ru.ru_utime + ru.ru_stime, 'maxrss_kib': ru.ru_maxrss}


def run_one(impl, opts, bench, inner):
    """Runs one implementation; returns dict(times=[us...]) or dict(error=str)."""
    if '%s:%s' % (impl, bench) in opts.skip:
        return {'error': 'skipped (--skip %s:%s)' % (impl, bench)}
    cmd = impl_command(impl, opts, bench, opts.n, inner)
    if cmd is None:
        return None
    argv, cwd = cmd
    if opts.verbose:
        print('  $ %s%s' % (' '.join(argv), ' (in %s)' % cwd if cwd else ''), file=sys.stderr)
    try:
        run = run_measured(argv, cwd, opts.timeout)
    except subprocess.TimeoutExpired:
        return {'error': 'timeout after %ds' % opts.timeout}
    except OSError as exc:
        return {'error': str(exc)}
    out = run['out'].decode('utf-8', 'replace')
    err = run['err'].decode('utf-8', 'replace')
    times = []
    for line in out.splitlines():
        m = LINE_RE.match(line.strip())
        if m and m.group(1) == bench:
            times.append(float(m.group(2)))
    # failed verification shows on stdout (or as an exit status); stderr is not scanned, so
    # statistics such as --jit-stats cannot be mistaken for errors
    bad = [l for l in out.splitlines()
           if 'ERROR' in l or 'rror' in l or 'failed' in l or 'No verification' in l]
    if run['rc'] != 0 or bad or len(times) != opts.n:
        errs = [l for l in err.splitlines() if l.strip()]
        why = (bad[0] if bad else errs[0] if errs
               else 'exit %d, %d timings' % (run['rc'], len(times))).strip()
        return {'error': why[:70]}
    return {'times': times, 'cpu_us_per_iter': run['cpu'] * 1e6 / len(times),
            'total_wall_s': run['wall'], 'total_cpu_s': run['cpu'],
            'maxrss_kib': run['maxrss_kib'],
            'stderr_tail': [l for l in err.splitlines() if l.strip()][-40:]}


def summarize(res, opts):
    if opts.stat == 'cpu':
        return res['cpu_us_per_iter'] / 1000.0
    times = res['times']
    kept = times[opts.warmup:] if len(times) > opts.warmup else times
    value = min(kept) if opts.stat == 'min' else statistics.median(kept)
    return value / 1000.0  # ms per outer iteration


def geomean(values):
    values = [v for v in values if v and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def fmt_ms(v):
    if v is None:
        return '-'
    return '%.3f' % v if v < 10 else '%.1f' % v


def fmt_x(v):
    return '-' if v is None else '%.1fx' % v


def ratio(a, b):
    return a / b if a is not None and b else None


def combine(runs, opts):
    """One result from the rounds of one implementation: the median (--stat min: the
    minimum) of the rounds' steady states, the median of their total times."""
    bad = [r for r in runs if 'times' not in r]
    if bad:
        return bad[0]
    res = dict(runs[-1])
    per_round = [summarize(r, opts) for r in runs]
    res['ms'] = min(per_round) if opts.stat == 'min' else statistics.median(per_round)
    for key in ('cpu_us_per_iter', 'total_wall_s', 'total_cpu_s'):
        res[key] = statistics.median(r[key] for r in runs)
    res['maxrss_kib'] = max(r['maxrss_kib'] for r in runs)
    if len(runs) > 1:
        res['rounds'] = [{k: r[k] for k in ('times', 'total_wall_s', 'total_cpu_s',
                                            'maxrss_kib')} for r in runs]
        res['ms_per_round'] = per_round
    return res


def measure(opts):
    """Runs every implementation --rounds times per benchmark, in ABBA order (round 2 runs
    the implementations in reverse order, round 3 forward again, ...), so a slow phase of
    a shared machine does not always hit the same implementation."""
    results = {}
    for bench in opts.only:
        inner = opts.inner.get(bench, opts.sizes[bench])
        row = {'inner': inner}
        runs = {impl: [] for impl in IMPLS}
        for rnd in range(opts.rounds):
            for impl in (IMPLS if rnd % 2 == 0 else tuple(reversed(IMPLS))):
                res = run_one(impl, opts, bench, inner)
                if res is None:
                    continue
                runs[impl].append(res)
                if opts.verbose:
                    print('  %-10s %-8s round %d: %s' % (
                        bench, impl, rnd + 1,
                        '%.3f ms' % summarize(res, opts) if 'times' in res else res['error']),
                        file=sys.stderr)
        for impl in IMPLS:
            if runs[impl]:
                row[impl] = combine(runs[impl], opts)
        results[bench] = row
    return results


def ms_of(row, impl):
    res = row.get(impl)
    return res.get('ms') if res else None


def present(results):
    """The implementations that have at least one result."""
    return [i for i in IMPLS if any(row.get(i) for row in results.values())]


def ratio_pairs(impls):
    """The (a, b) ratio columns. Without som variants (one som column): som against every
    other implementation, the others against C++ (as before). With variants (--jit-modes,
    --som-variant): every som column against C++, LuaJIT (LJ) and som:off; the others
    against C++."""
    others = [i for i in impls if not is_som(i)]
    soms = [i for i in impls if is_som(i)]
    pairs = []
    for s in soms:
        if soms == ['som'] or 'cpp' not in others:
            pairs += [(s, o) for o in others]
        else:
            pairs += [(s, o) for o in ('cpp', 'lj') if o in others]
        if 'som:off' in soms and s != 'som:off':
            pairs.append((s, 'som:off'))
    if 'cpp' in others:
        pairs += [(o, 'cpp') for o in others if o != 'cpp']
    return pairs


def fmt_ratio(v, name):
    return fmt_x(v) if v is None or v >= 1 or name.endswith('/C++') else '%.2fx' % v


def print_table(results, opts):
    impls = present(results)
    pairs = ratio_pairs(impls)
    names = ['%s/%s' % (LABEL[a], LABEL[b]) for a, b in pairs]
    print('Steady state: ms per outer iteration (%s)'
          % ('process CPU time / iterations' if opts.stat == 'cpu' else
             '%s of the iterations after the first %d, as each harness prints them'
             % (opts.stat, opts.warmup)))
    ratios = table(results, impls, pairs, names, lambda row, i: ms_of(row, i), fmt_ms, 'ms')
    print()
    for name in names:
        g = geomean([v for _, v in ratios[name]])
        print('geomean %-16s %-8s over %d: %s' % (name, '-' if g is None else '%.3fx' % g,
                                                  len(ratios[name]),
                                                  ' '.join(b for b, _ in ratios[name])))
    common = [b for b, row in results.items() if all(ms_of(row, i) is not None for i in impls)]
    if len(impls) > 2 and common and len(common) < len(results):
        for (a, b), name in zip(pairs, names):
            g = geomean([ms_of(results[x], a) / ms_of(results[x], b) for x in common])
            print('geomean %-16s %-8s over the %d benchmarks all %d ran'
                  % (name, '%.3fx' % g, len(common), len(impls)))
    slower = [b for b, row in results.items() for s in impls
              if is_som(s) and s != 'som:off' and ms_of(row, s) and ms_of(row, 'som:off')
              and ms_of(row, s) >= ms_of(row, 'som:off')]
    if 'som:off' in impls:
        print('not faster than som:off in steady state: %s' % (' '.join(slower) or 'none'))

    # total process time: start-up, compilation and warm-up included
    def total_of(row, impl):
        res = row.get(impl)
        return res.get('total_wall_s') if res and 'times' in res else None

    def cpu_of(row, impl):
        res = row.get(impl)
        return res.get('total_cpu_s') if res and 'times' in res else None
    print()
    print('Total process time: wall s of each whole run (%d outer iterations; start-up, '
          'compilation, warm-up included)' % opts.n)
    tw = table(results, impls, pairs, names, total_of, fmt_s, 's')
    print()
    for name in names:
        g = geomean([v for _, v in tw[name]])
        print('geomean %-16s %-8s over %d (total wall)' % (name, '-' if g is None else
                                                        '%.3fx' % g, len(tw[name])))
    for (a, b), name in zip(pairs, names):
        vals = [ratio(cpu_of(r, a), cpu_of(r, b)) for r in results.values()]
        vals = [v for v in vals if v is not None]
        if vals:
            print('geomean %-16s %-8s over %d (total user+sys CPU)'
                  % (name, '%.3fx' % geomean(vals), len(vals)))
    if 'som:off' in impls:
        slower = [b for b, row in results.items() for s in impls
                  if is_som(s) and s != 'som:off' and total_of(row, s)
                  and total_of(row, 'som:off') and total_of(row, s) >= total_of(row, 'som:off')]
        print('not faster than som:off in total wall time: %s' % (' '.join(slower) or 'none'))
    notes = []
    for bench, row in results.items():
        for impl in IMPLS:
            if row.get(impl) and 'error' in row[impl]:
                notes.append('%s/%s: %s' % (bench, impl, row[impl]['error']))
    for n in notes:
        print('note: ' + n)
    return ratios


def fmt_s(v):
    return '-' if v is None else '%.3f' % v if v < 1 else '%.2f' % v


def table(results, impls, pairs, names, value_of, fmt, unit):
    """Prints one table (a column per implementation, then the ratio columns); answers
    {ratio name: [(benchmark, ratio)]}."""
    cols = ['benchmark', 'inner'] + ['%s %s' % (LABEL[i], unit) for i in impls] + names
    rows = []
    ratios = {n: [] for n in names}
    for bench, row in results.items():
        line = [bench, str(row['inner'])] + [fmt(value_of(row, i)) for i in impls]
        for (a, b), name in zip(pairs, names):
            va, vb = value_of(row, a), value_of(row, b)
            v = ratio(va, vb)
            if v is not None:
                ratios[name].append((bench, v))
            line.append(fmt_ratio(v, name))
        rows.append(line)
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    print('  '.join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i])
                    for i, c in enumerate(cols)))
    for r in rows:
        print('  '.join(v.ljust(widths[i]) if i == 0 else v.rjust(widths[i])
                        for i, v in enumerate(r)))
    return ratios


def parse_inner(items):
    inner = {}
    for item in items or []:
        for part in item.split(','):
            name, _, value = part.partition('=')
            if name not in INNER or not value.isdigit():
                raise SystemExit('--inner expects Name=N with a known benchmark, got %r' % part)
            inner[name] = int(value)
    return inner


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split('\n\n', 1)[1])
    ap.add_argument('--som', default=default_som(), help='som binary (env SOM)')
    ap.add_argument('--som-flags', default=os.environ.get('SOM_FLAGS', ''),
                    help='extra VM options for every som run, one shell-quoted string '
                    '(env SOM_FLAGS), e.g. --som-flags="--jit-stats"')
    ap.add_argument('--jit-modes', help='comma-separated JIT modes, one som column each: '
                    'off,on (= --jit=off, --jit=on), eager, ...')
    ap.add_argument('--som-variant', action='append', default=[], metavar='LABEL=FLAGS',
                    help='a som column "som:LABEL" run with FLAGS (repeatable)')
    ap.add_argument('--sizes', choices=['calibrated', 'standard'], default='calibrated',
                    help='inner iterations: calibrated (default; ~0.5-2 s per iteration of '
                    'the interpreter) or standard (AWFY rebench.conf)')
    ap.add_argument('--awfy', help='are-we-fast-yet checkout: builds its C++ harness (-O2) '
                    'into --scratch and uses its benchmarks/Lua')
    ap.add_argument('--scratch', default=os.path.join(os.environ.get('TMPDIR', '/tmp'),
                                                      'awfy-cpp-O2'),
                    help='build directory for the C++ harness (with --awfy)')
    ap.add_argument('--awfy-dir', default=os.environ.get('AWFY_SOM_DIR'),
        help='directory with Harness.som and Core/ CD/ ... (env AWFY_SOM_DIR)')
    ap.add_argument('--corelib', default=os.environ.get('SOM_CORELIB_DIR'),
                    help='extra class path entry after the AWFY dirs, e.g. a Smalltalk/ '
                    'core library (default: the core library built into som)')
    ap.add_argument('--cpp', default=os.environ.get('AWFY_CPP'),
                    help='AWFY C++ harness binary (env AWFY_CPP); skipped if unset/missing')
    ap.add_argument('--lua-dir', default=os.environ.get('AWFY_LUA_DIR'),
                    help='directory with the AWFY harness.lua (env AWFY_LUA_DIR)')
    ap.add_argument('--lua', default=os.environ.get('LUA', 'lua5.4'), help='Lua interpreter')
    ap.add_argument('--luajit', default=os.environ.get('LUAJIT', 'luajit'),
                    help='LuaJIT binary, run as `luajit -joff` and `luajit` (default luajit; '
                    'skipped when not installed)')
    ap.add_argument('--no-luajit', action='store_true', help='leave LuaJIT out')
    ap.add_argument('-n', type=int, default=6, help='outer iterations per run (default 6)')
    ap.add_argument('--rounds', type=int, default=1,
                    help='runs per implementation and benchmark, in ABBA order; the median '
                    '(--stat min: minimum) of the rounds is reported (default 1)')
    ap.add_argument('--warmup', type=int, default=2,
                    help='leading iterations to drop before taking the statistic (default 2)')
    ap.add_argument('--stat', choices=['median', 'min', 'cpu'], default='median',
                    help='median (default) or min of the kept wall-clock iterations as '
                    'printed by each harness, or cpu = process user+sys CPU time divided by '
                    'the number of outer iterations (includes start-up and warm-up; less '
                    'sensitive to a loaded machine)')
    ap.add_argument('--only', help='comma-separated benchmark names (default: all 14)')
    ap.add_argument('--inner', action='append', help='Name=N inner iterations (repeatable)')
    ap.add_argument('--skip', action='append', default=[],
                    help='IMPL:Benchmark to leave out, IMPL one of cpp, lua, ljint, lj, som '
                    '(or som:MODE; repeatable), '
                    'e.g. lua:Havlak, which takes ~25 s per iteration in Lua 5.4')
    ap.add_argument('--timeout', type=int, default=600, help='seconds per process')
    ap.add_argument('--json', help='also write the raw results to this file')
    ap.add_argument('-v', '--verbose', action='store_true')
    opts = ap.parse_args(argv)
    opts.som_flags = shlex.split(opts.som_flags)
    variants = []
    for mode in (opts.jit_modes.split(',') if opts.jit_modes else []):
        variants.append((mode, ['--jit=%s' % mode]))
    for item in opts.som_variant:
        label, eq, flags = item.partition('=')
        if not eq or not label:
            raise SystemExit('--som-variant expects LABEL=FLAGS, got %r' % item)
        variants.append((label, shlex.split(flags)))
    set_impls(variants)
    opts.sizes = STANDARD if opts.sizes == 'standard' else INNER
    if opts.awfy:
        opts.cpp = opts.cpp or build_cpp(opts.awfy, opts.scratch)
        if not opts.lua_dir:
            opts.lua_dir = os.path.join(opts.awfy, 'benchmarks', 'Lua')
    if not opts.awfy_dir:
        for cand in ('/work/ext/SOM/Examples/AreWeFastYet', '/work/somref/Examples/AreWeFastYet',
                     os.path.join(opts.awfy or '/nonexistent', 'benchmarks', 'SOM')):
            if os.path.exists(os.path.join(cand, 'Harness.som')):
                opts.awfy_dir = cand
                break
        else:
            opts.awfy_dir = '/work/ext/SOM/Examples/AreWeFastYet'
    opts.inner = parse_inner(opts.inner)
    opts.only = opts.only.split(',') if opts.only else sorted(INNER)
    for b in opts.only:
        if b not in INNER:
            raise SystemExit('unknown benchmark %r (known: %s)' % (b, ', '.join(sorted(INNER))))
    return opts


def build_cpp(awfy, scratch):
    """Compiles AWFY's C++ harness with -O2 into scratch (when missing or older than a
    source); answers the binary's path, or None (saying why)."""
    src = os.path.join(awfy, 'benchmarks', 'C++')
    if not os.path.exists(os.path.join(src, 'src', 'harness.cpp')):
        print('skipping C++: no benchmarks/C++/src/harness.cpp in %s' % awfy)
        return None
    binary = os.path.join(scratch, 'harness-O2')
    sources = [os.path.join(src, f) for f in CPP_SOURCES]
    deps = sources + glob.glob(os.path.join(src, 'src', '**', '*.h'), recursive=True)
    if os.path.exists(binary) and all(os.path.getmtime(d) <= os.path.getmtime(binary)
                                      for d in deps):
        return binary
    os.makedirs(scratch, exist_ok=True)
    cmd = ([os.environ.get('CXX', 'g++'), '-O2', '-ffp-contract=off', '-std=c++17'] + sources +
           ['-o', binary])
    print('building the C++ harness: %s' % ' '.join(cmd))
    proc = subprocess.run(cmd, cwd=src, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        print('skipping C++: the build failed:\n%s' % proc.stdout.decode()[-2000:])
        return None
    return binary


def check_paths(opts):
    """Drops implementations whose files are missing, saying so."""
    if opts.som and not os.access(opts.som, os.X_OK):
        print('skipping som: %s is not executable' % opts.som)
        opts.som = None
    if opts.som and not os.path.exists(os.path.join(opts.awfy_dir, 'Harness.som')):
        print('skipping som: no Harness.som in %s' % opts.awfy_dir)
        opts.som = None
    if opts.cpp and not os.access(opts.cpp, os.X_OK):
        print('skipping C++: %s is not executable' % opts.cpp)
        opts.cpp = None
    if opts.lua_dir and not os.path.exists(os.path.join(opts.lua_dir, 'harness.lua')):
        print('skipping Lua: no harness.lua in %s' % opts.lua_dir)
        opts.lua_dir = None
    if opts.lua_dir and not shutil.which(opts.lua):
        print('skipping Lua: interpreter %s not found' % opts.lua)
        opts.lua_dir = None
    if opts.no_luajit or not opts.lua_dir:
        opts.luajit = None
    elif not shutil.which(opts.luajit):
        print('skipping LuaJIT: %s not found' % opts.luajit)
        opts.luajit = None
    if opts.warmup >= opts.n:
        opts.warmup = max(0, opts.n - 1)


def main(argv):
    opts = parse_args(argv)
    check_paths(opts)
    if not opts.som:
        print('nothing to compare: som is missing')
        return 1
    load0 = os.getloadavg()
    t0 = time.time()
    print('som: %s%s' % (opts.som, ' (+ -cp ...:%s)' % opts.corelib if opts.corelib else ''))
    print('som columns: %s' % ', '.join('%s = %s' % (n, ' '.join(f + opts.som_flags) or
                                                      '(no flags)')
                                         for n, f in SOM_VARIANTS.items()))
    print('AWFY SOM sources: %s; inner iterations: %s'
          % (opts.awfy_dir, 'standard (rebench.conf)' if opts.sizes is STANDARD else
             'calibrated'))
    print('C++: %s' % (opts.cpp or '(skipped)'))
    print('Lua: %s' % ('%s in %s' % (opts.lua, opts.lua_dir) if opts.lua_dir else '(skipped)'))
    print('LuaJIT: %s' % ('%s -joff (LJint) and %s (LJ)' % (opts.luajit, opts.luajit)
                          if opts.luajit else '(skipped)'))
    if opts.stat == 'cpu':
        print('outer iterations %d; process CPU time / iterations, ms per outer iteration'
              % opts.n)
    else:
        print('outer iterations %d, first %d dropped, %s of the rest, ms per outer iteration'
              % (opts.n, opts.warmup, opts.stat))
    if opts.rounds > 1:
        print('%d rounds per implementation in ABBA order; the %s of the rounds'
              % (opts.rounds, 'minimum' if opts.stat == 'min' else 'median'))
    print('load average at start: %.2f %.2f %.2f\n' % load0)
    results = measure(opts)
    print_table(results, opts)
    load1 = os.getloadavg()
    print('\nload average at end: %.2f %.2f %.2f; wall time %.0f s'
          % (load1[0], load1[1], load1[2], time.time() - t0))
    if opts.json:
        with open(opts.json, 'w', encoding='utf-8') as f:
            json.dump({'results': results, 'load_start': load0, 'load_end': load1,
                       'n': opts.n, 'warmup': opts.warmup, 'stat': opts.stat,
                       'rounds': opts.rounds,
                       'som_variants': SOM_VARIANTS, 'som_flags': opts.som_flags,
                       'sizes': 'standard' if opts.sizes is STANDARD else 'calibrated',
                       'cpp': opts.cpp, 'som': opts.som}, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
