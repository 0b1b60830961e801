#!/usr/bin/env python3
"""What the JIT costs: peak RSS and total time of every Are-We-Fast-Yet benchmark with and
without the JIT, and the compile latency the JIT reports (`som --jit-stats`, on stderr at
exit), as one Markdown table (python3 standard library only).

Each benchmark runs `som [mode flags] [--jit-stats] -cp <AWFY dirs> Harness.som <B> <n>
<inner>` (the command of bench/awfy-compare/run.py, imported from there) --reps times per
mode; peak RSS (ru_maxrss) and user+sys CPU come from wait4 of that very process (like
/usr/bin/time -v's "Maximum resident set size"), and the median over the repetitions is
reported. --jit-stats is added to the runs of every mode except "off".

The --jit-stats lines are read loosely, so the exact wording may change: a number after
"compiled" (methods compiled), after "median" and "p95" with a unit (ns/us/ms/s) on a line
that mentions "compil" (compile latency), after "total" on such a line (total compile time),
a number before/after "bytes" on a line that mentions "code" (code size), after "deopt"
(deoptimizations) and after "invalidat" (invalidations). The raw lines go to the JSON and,
with --raw, below the table, so a misreading is visible.

Examples:
  bench/awfy-compare/jitcost.py --som build/release/tools/som/som --reps 3 --out cost.md
  bench/awfy-compare/jitcost.py --som SOM --modes off,on,eager --only Richards,Bounce --raw
"""
import argparse
import importlib.util
import json
import os
import re
import shlex
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location('awfy_run', os.path.join(HERE, 'run.py'))
awfy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(awfy)

UNIT = {'ns': 1e-6, 'us': 1e-3, 'µs': 1e-3, 'ms': 1.0, 's': 1000.0}
NUM_UNIT = r'([0-9]+(?:\.[0-9]+)?)\s*(ns|us|µs|ms|s)\b'


def parse_stats(lines):
    """Reads --jit-stats lines; answers a dict (values in ms / counts / bytes), keys absent
    when not found."""
    st = {}
    for line in lines:
        low = line.lower()
        if 'compiled' not in st:
            m = re.search(r'compiled\D{0,30}?(\d+)', low) or re.search(r'(\d+)\s+methods?\s+compiled', low)
            if m:
                st['compiled'] = int(m.group(1))
        if 'latency' in low:  # queued -> installed (wall): after the word "latency"
            lat = low[low.index('latency'):]
            for key in ('median', 'p95'):
                m = re.search(key + r'\D{0,12}?' + NUM_UNIT, lat)
                if m and 'lat_' + key not in st:
                    st['lat_' + key] = float(m.group(1)) * UNIT[m.group(2)]
        if 'compil' in low:
            for key in ('median', 'p95'):
                m = re.search(key + r'\D{0,12}?' + NUM_UNIT, low)
                if m and key not in st:
                    st[key] = float(m.group(1)) * UNIT[m.group(2)]
            m = re.search(r'total\D{0,12}?' + NUM_UNIT, low)
            if m and 'total' not in st:
                st['total'] = float(m.group(1)) * UNIT[m.group(2)]
        if 'code' in low and 'code_bytes' not in st:
            m = re.search(r'(\d+)\s*bytes', low) or re.search(r'bytes\D{0,12}?(\d+)', low)
            if m:
                st['code_bytes'] = int(m.group(1))
        if 'deopts' not in st:
            m = re.search(r'deopt\w*\D{0,12}?(\d+)', low)
            if m:
                st['deopts'] = int(m.group(1))
        if 'invalidations' not in st:
            m = re.search(r'invalidat\w*\D{0,12}?(\d+)', low)
            if m:
                st['invalidations'] = int(m.group(1))
    return st


def run_mode(opts, bench, inner, label, flags):
    runs = []
    for _ in range(opts.reps):
        cmd = awfy.impl_command('som:' + label, opts, bench, opts.n, inner)
        argv = cmd[0]
        try:
            r = awfy.run_measured(argv, None, opts.timeout)
        except Exception as exc:  # timeout or exec failure
            return {'error': str(exc)[:70], 'argv': argv}
        out = r['out'].decode('utf-8', 'replace')
        err = r['err'].decode('utf-8', 'replace')
        if r['rc'] != 0 or 'ERROR' in out:
            why = next((l for l in (out + '\n' + err).splitlines() if 'rror' in l),
                       'exit %d' % r['rc'])
            return {'error': why.strip()[:70], 'argv': argv}
        stats_lines = [l for l in err.splitlines() if l.strip()]
        runs.append({'maxrss_kib': r['maxrss_kib'], 'cpu_s': r['cpu'], 'wall_s': r['wall'],
                     'stats': parse_stats(stats_lines), 'stats_lines': stats_lines})
    med = {k: statistics.median(x[k] for x in runs) for k in ('maxrss_kib', 'cpu_s', 'wall_s')}
    stats = {}
    for key in ('compiled', 'median', 'p95', 'lat_median', 'lat_p95', 'total', 'code_bytes',
                'deopts', 'invalidations'):
        vals = [x['stats'][key] for x in runs if key in x['stats']]
        if vals:
            stats[key] = statistics.median(vals)
    return dict(med, stats=stats, runs=runs, argv=argv)


def fmt(v, f='%.1f'):
    return '-' if v is None else f % v


def table(data):
    modes = [m['label'] for m in data['modes']]
    base = modes[0]
    head = ['benchmark', 'inner']
    for m in modes:
        head += ['RSS %s MiB' % m]
    head += ['RSS %s/%s' % (m, base) for m in modes[1:]]
    for m in modes:
        head += ['CPU %s s' % m]
    for m in modes[1:]:
        head += ['%s: compiled' % m, '%s: compile median ms' % m, '%s: p95 ms' % m,
                 '%s: latency median ms' % m, '%s: latency p95 ms' % m,
                 '%s: compile total ms' % m, '%s: code KiB' % m, '%s: deopts' % m]
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '|'.join(['---'] + ['---:'] * (len(head) - 1))
             + '|']
    for b in data['benchmarks']:
        row = data['results'][b]

        def get(m, k):
            return row.get(m, {}).get(k)
        cells = [b, str(data['inner'][b])]
        cells += [fmt(get(m, 'maxrss_kib') / 1024.0) if get(m, 'maxrss_kib') else
                  row.get(m, {}).get('error', '-') for m in modes]
        for m in modes[1:]:
            a, z = get(m, 'maxrss_kib'), get(base, 'maxrss_kib')
            cells.append(fmt(a / z, '%.2fx') if a and z else '-')
        cells += [fmt(get(m, 'cpu_s'), '%.2f') for m in modes]
        for m in modes[1:]:
            st = row.get(m, {}).get('stats', {})
            cells += [fmt(st.get('compiled'), '%d'), fmt(st.get('median'), '%.2f'),
                      fmt(st.get('p95'), '%.2f'), fmt(st.get('lat_median'), '%.2f'),
                      fmt(st.get('lat_p95'), '%.2f'), fmt(st.get('total'), '%.1f'),
                      fmt(st['code_bytes'] / 1024.0 if 'code_bytes' in st else None),
                      fmt(st.get('deopts'), '%d')]
        lines.append('| ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines) + '\n'


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split('\n\n', 1)[1])
    ap.add_argument('--som', default=awfy.default_som(), help='som binary (env SOM)')
    ap.add_argument('--awfy-dir', default=os.environ.get('AWFY_SOM_DIR',
                                                         '/work/ext/SOM/Examples/AreWeFastYet'))
    ap.add_argument('--corelib', default=None)
    ap.add_argument('--modes', default='off,on', help='JIT modes; the first is the baseline')
    ap.add_argument('--stats-flag', default='--jit-stats',
                    help='flag added to every mode but off (default --jit-stats; "" for none)')
    ap.add_argument('--som-flags', default=os.environ.get('SOM_FLAGS', ''))
    ap.add_argument('-n', type=int, default=10, help='harness iterations per run (default 10)')
    ap.add_argument('--reps', type=int, default=3, help='runs per mode (median; default 3)')
    ap.add_argument('--sizes', choices=['calibrated', 'standard'], default='standard')
    ap.add_argument('--inner', action='append', help='Name=N inner iterations (repeatable)')
    ap.add_argument('--only', help='comma-separated benchmarks (default: all 14)')
    ap.add_argument('--timeout', type=int, default=1800)
    ap.add_argument('--out', help='write the Markdown table here too')
    ap.add_argument('--json', help='write the raw results here')
    ap.add_argument('--raw', action='store_true', help='print the --jit-stats lines too')
    opts = ap.parse_args(argv)
    labels = [m for m in opts.modes.split(',') if m]
    modes = []
    for m in labels:
        flags = ['--jit=%s' % m]
        if m != 'off' and opts.stats_flag:
            flags.append(opts.stats_flag)
        modes.append({'label': m, 'flags': flags})
    awfy.set_impls([(m['label'], m['flags']) for m in modes])
    opts.som_flags = shlex.split(opts.som_flags)
    opts.sizes = awfy.STANDARD if opts.sizes == 'standard' else awfy.INNER
    opts.inner = awfy.parse_inner(opts.inner)
    opts.only = opts.only.split(',') if opts.only else sorted(awfy.INNER)
    opts.skip, opts.verbose = [], False
    if not opts.som or not os.access(opts.som, os.X_OK):
        raise SystemExit('no som binary (--som)')
    data = {'benchmarks': opts.only, 'modes': modes, 'n': opts.n, 'reps': opts.reps,
            'inner': {}, 'results': {}, 'som': opts.som, 'load_start': os.getloadavg()}
    for b in opts.only:
        if b not in awfy.INNER:
            raise SystemExit('unknown benchmark %r' % b)
        inner = opts.inner.get(b, opts.sizes[b])
        data['inner'][b] = inner
        data['results'][b] = {}
        for m in modes:
            res = run_mode(opts, b, inner, m['label'], m['flags'])
            data['results'][b][m['label']] = res
            print('%-10s %-6s %s' % (b, m['label'], res.get('error') or
                                     'rss %.1f MiB, cpu %.2f s, %s'
                                     % (res['maxrss_kib'] / 1024.0, res['cpu_s'],
                                        res['stats'])), file=sys.stderr, flush=True)
    data['load_end'] = os.getloadavg()
    text = table(data)
    print(text)
    if opts.raw:
        for b in opts.only:
            for m in modes[1:]:
                runs = data['results'][b][m['label']].get('runs') or [{}]
                print('%s %s --jit-stats: %s' % (b, m['label'],
                                                 ' / '.join(runs[0].get('stats_lines', []))))
    if opts.out:
        with open(opts.out, 'w') as f:
            f.write(text)
    if opts.json:
        with open(opts.json, 'w') as f:
            json.dump(data, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
