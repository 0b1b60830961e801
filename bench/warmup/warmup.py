#!/usr/bin/env python3
"""Warm-up curves: the time of every harness iteration of each Are-We-Fast-Yet benchmark,
som with the JIT against the interpreter (or any som flag sets), written as SVG plots
(python3 standard library only; the SVG is written by hand) plus JSON and a Markdown table.

Each run is `som [mode flags] -cp <AWFY dirs> Harness.som <Benchmark> <n> <inner>`, the
same command bench/awfy-compare/run.py uses (it is imported from there); the harness prints
one `<Benchmark>: iterations=1 runtime: <N>us` line per iteration, which is the curve.

Output in --out DIR:
  warmup.svg          all benchmarks, one panel each (4 columns), for docs/evaluation.md
  <Benchmark>.svg     one benchmark, larger
  warmup.json         the raw per-iteration times and the commands
  warmup.md           per benchmark and mode: first iteration, steady state (median of the
                      last half), iterations until within 10% of the steady state, and the
                      speed-up of the steady state over the first mode

Examples:
  bench/warmup/warmup.py --som build/release/tools/som/som --modes off,on -n 30 --out /tmp/wu
  bench/warmup/warmup.py --from-json /tmp/wu/warmup.json --out /tmp/wu     # replot only
  bench/warmup/warmup.py --som SOM --variant interp= --variant jit=--jit=eager --only Bounce

--modes off,on means the flag sets --jit=off and --jit=on (labels "off" and "on");
--variant LABEL=FLAGS adds any other flag set; --som-flags FLAGS go to every run.
"""
import argparse
import importlib.util
import json
import math
import os
import shlex
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    'awfy_run', os.path.join(os.path.dirname(HERE), 'awfy-compare', 'run.py'))
awfy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(awfy)

# one colour per mode, in order (first: the baseline, grey)
COLOURS = ['#7f7f7f', '#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e']


def nice_ticks(hi, count=5):
    """Round tick values from 0 to at least hi."""
    if hi <= 0:
        return [0, 1]
    raw = hi / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    ticks = [0]
    while ticks[-1] < hi:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def fmt_tick(v):
    if v == int(v):
        return '%d' % v
    return ('%.2f' % v).rstrip('0').rstrip('.')


def esc(text):
    return (str(text).replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')
            .replace('"', '&quot;'))


def log_ticks(lo, hi):
    """1-2-5 ticks covering [lo, hi] (lo > 0) for a logarithmic axis."""
    e = math.floor(math.log10(lo))
    ticks = []
    while True:
        for m in (1, 2, 5):
            t = m * 10 ** e
            if t >= lo / 2.0001 or (not ticks and t * 2 > lo):
                ticks.append(t)
            if t >= hi:
                return [v for v in ticks if v <= t][-12:]
        e += 1


def panel(x0, y0, w, h, title, series, small, log_y=False):
    """SVG elements of one plot at (x0, y0), size w x h. series: [(label, colour, [ms])]."""
    out = []
    left, right, top, bottom = (44, 8, 20, 28) if small else (60, 16, 30, 40)
    pw, ph = w - left - right, h - top - bottom
    fs = 10 if small else 12
    n = max((len(s[2]) for s in series), default=1)
    hi = max((v for s in series for v in s[2]), default=1.0)
    lo = min((v for s in series for v in s[2] if v > 0), default=hi / 10)
    xmax = max(n, 2)
    if log_y:
        yt = log_ticks(lo, hi)
        ymin, ymax = math.log10(yt[0]), math.log10(yt[-1])
        if ymax <= ymin:
            ymax = ymin + 1
    else:
        yt = nice_ticks(hi)
        ymin, ymax = 0, yt[-1]

    def px(i):  # iteration i (1-based)
        return x0 + left + (i - 1) * pw / (xmax - 1)

    def py(v):
        if log_y:
            v = math.log10(max(v, 10 ** ymin))
        return y0 + top + ph - (v - ymin) * ph / (ymax - ymin)
    out.append('<text x="%.1f" y="%.1f" font-size="%d" font-weight="bold">%s</text>'
               % (x0 + left, y0 + top - 6, fs + 1, esc(title)))
    out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" '
               'stroke="#000" stroke-width="0.8"/>' % (x0 + left, y0 + top, pw, ph))
    for t in yt:
        y = py(t)
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd" '
                   'stroke-width="0.6"/>' % (x0 + left, y, x0 + left + pw, y))
        out.append('<text x="%.1f" y="%.1f" font-size="%d" text-anchor="end">%s</text>'
                   % (x0 + left - 4, y + fs / 3, fs, fmt_tick(t)))
    xt = sorted(set([1] + [k for k in nice_ticks(xmax, 5)[1:] if k <= xmax] + [xmax]))
    for t in xt:
        if t != int(t):
            continue
        x = px(t)
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000" '
                   'stroke-width="0.8"/>' % (x, y0 + top + ph, x, y0 + top + ph + 3))
        out.append('<text x="%.1f" y="%.1f" font-size="%d" text-anchor="middle">%d</text>'
                   % (x, y0 + top + ph + 3 + fs, fs, t))
    out.append('<text x="%.1f" y="%.1f" font-size="%d" text-anchor="middle">iteration</text>'
               % (x0 + left + pw / 2, y0 + h - 4, fs))
    out.append('<text x="%.1f" y="%.1f" font-size="%d" text-anchor="middle" '
               'transform="rotate(-90 %.1f %.1f)">ms%s</text>'
               % (x0 + 10, y0 + top + ph / 2, fs, x0 + 10, y0 + top + ph / 2,
                  ' (log)' if log_y else ''))
    for k, (label, colour, values) in enumerate(series):
        if not values:
            continue
        pts = ' '.join('%.1f,%.1f' % (px(i + 1), py(v)) for i, v in enumerate(values))
        out.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="%.1f"/>'
                   % (pts, colour, 1.2 if small else 1.8))
        for i, v in enumerate(values):
            out.append('<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s"/>'
                       % (px(i + 1), py(v), 1.3 if small else 2.2, colour))
        lx = x0 + left + pw - (70 if small else 110)
        ly = y0 + top + 12 + k * (fs + 3)
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" '
                   'stroke-width="2"/>' % (lx, ly - fs / 3, lx + 14, ly - fs / 3, colour))
        out.append('<text x="%.1f" y="%.1f" font-size="%d">%s</text>'
                   % (lx + 18, ly, fs, esc(label)))
    return out


def svg(width, height, body, title):
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
            'viewBox="0 0 %d %d" font-family="sans-serif">\n<title>%s</title>\n'
            '<rect width="100%%" height="100%%" fill="#fff"/>\n%s\n</svg>\n'
            % (width, height, width, height, esc(title), '\n'.join(body)))


def series_of(data, bench):
    modes = data['modes']
    out = []
    for k, mode in enumerate(modes):
        res = data['results'].get(bench, {}).get(mode['label'], {})
        ms = [t / 1000.0 for t in res.get('times', [])]
        out.append((mode['label'], COLOURS[k % len(COLOURS)], ms))
    return out


def write_plots(data, out_dir, log_y=False):
    benches = [b for b in data['benchmarks'] if b in data['results']]
    files = []
    for b in benches:
        path = os.path.join(out_dir, '%s.svg' % b)
        with open(path, 'w') as f:
            f.write(svg(640, 360, panel(0, 0, 640, 360, '%s (inner %s)'
                                        % (b, data['inner'].get(b, '?')),
                                        series_of(data, b), False, log_y),
                        '%s: time per iteration' % b))
        files.append(path)
    cols, pw, ph = 4, 300, 200
    rows = max(1, math.ceil(len(benches) / cols))
    body = []
    for k, b in enumerate(benches):
        body += panel((k % cols) * pw, (k // cols) * ph, pw, ph, b, series_of(data, b), True,
                      log_y)
    path = os.path.join(out_dir, 'warmup.svg')
    with open(path, 'w') as f:
        f.write(svg(cols * pw, rows * ph, body,
                    'AWFY warm-up: ms per harness iteration, %s'
                    % ' vs '.join(m['label'] for m in data['modes'])))
    files.append(path)
    return files


def steady(ms):
    """Median of the last half of the iterations."""
    return statistics.median(ms[len(ms) // 2:]) if ms else None


def warm_at(ms, st):
    """First iteration from which every later iteration is within 10% of st."""
    for i in range(len(ms)):
        if all(v <= st * 1.10 for v in ms[i:]):
            return i + 1
    return None


def write_table(data, out_dir):
    modes = [m['label'] for m in data['modes']]
    lines = ['| benchmark | mode | first ms | steady ms | warm at | steady speed-up vs %s |'
             % modes[0], '|---|---|---:|---:|---:|---:|']
    for b in data['benchmarks']:
        base = None
        for mode in modes:
            res = data['results'].get(b, {}).get(mode, {})
            ms = [t / 1000.0 for t in res.get('times', [])]
            if not ms:
                lines.append('| %s | %s | %s | | | |' % (b, mode, res.get('error', 'not run')))
                continue
            st = steady(ms)
            if base is None:
                base = st
            lines.append('| %s | %s | %.1f | %.1f | %s | %.2fx |'
                         % (b, mode, ms[0], st, warm_at(ms, st) or '-', base / st))
    path = os.path.join(out_dir, 'warmup.md')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return path


def measure(opts):
    modes = [{'label': m, 'flags': ['--jit=%s' % m]} for m in opts.modes] + opts.variants
    awfy.set_impls([(m['label'], m['flags']) for m in modes])
    data = {'benchmarks': opts.only, 'modes': modes, 'n': opts.n, 'inner': {},
            'som': opts.som, 'som_flags': opts.som_flags, 'awfy_dir': opts.awfy_dir,
            'results': {}, 'load_start': os.getloadavg(), 'started': time.time()}
    for b in opts.only:
        inner = opts.inner.get(b, opts.sizes[b])
        data['inner'][b] = inner
        row = {}
        for m in modes:
            impl = 'som:' + m['label']
            argv, _ = awfy.impl_command(impl, opts, b, opts.n, inner)
            res = awfy.run_one(impl, opts, b, inner)
            res['argv'] = argv
            row[m['label']] = res
            print('%-10s %-8s %s' % (b, m['label'], ' '.join('%.1f' % (t / 1000.0)
                                                              for t in res['times'])
                                     if 'times' in res else res.get('error')), flush=True)
        data['results'][b] = row
    data['load_end'] = os.getloadavg()
    return data


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split('\n\n', 1)[1])
    ap.add_argument('--som', default=awfy.default_som(), help='som binary (env SOM)')
    ap.add_argument('--awfy-dir', default=os.environ.get('AWFY_SOM_DIR',
                                                         '/work/ext/SOM/Examples/AreWeFastYet'),
                    help='directory with Harness.som and Core/ CD/ ...')
    ap.add_argument('--corelib', default=None, help='extra class path entry after AWFY dirs')
    ap.add_argument('--modes', default='off,on',
                    help='JIT modes, one curve each (default off,on; "" for none)')
    ap.add_argument('--variant', action='append', default=[], metavar='LABEL=FLAGS',
                    help='a further curve: som run with FLAGS (repeatable)')
    ap.add_argument('--som-flags', default=os.environ.get('SOM_FLAGS', ''),
                    help='extra VM options for every run (env SOM_FLAGS)')
    ap.add_argument('-n', type=int, default=30, help='harness iterations per run (default 30)')
    ap.add_argument('--sizes', choices=['calibrated', 'standard'], default='calibrated')
    ap.add_argument('--inner', action='append', help='Name=N inner iterations (repeatable)')
    ap.add_argument('--only', help='comma-separated benchmarks (default: all 14)')
    ap.add_argument('--timeout', type=int, default=1800, help='seconds per process')
    ap.add_argument('--skip', action='append', default=[], help='som:MODE:Benchmark to skip')
    ap.add_argument('--out', default='warmup-out', help='output directory')
    ap.add_argument('-v', '--verbose', action='store_true', help='print the commands')
    ap.add_argument('--from-json', help='replot a warmup.json instead of measuring')
    ap.add_argument('--log-y', action='store_true',
                    help='logarithmic time axis (when the curves differ by large factors)')
    opts = ap.parse_args(argv)
    os.makedirs(opts.out, exist_ok=True)
    if opts.from_json:
        with open(opts.from_json) as f:
            data = json.load(f)
    else:
        opts.modes = [m for m in opts.modes.split(',') if m]
        variants = []
        for item in opts.variant:
            label, eq, flags = item.partition('=')
            if not eq or not label:
                raise SystemExit('--variant expects LABEL=FLAGS, got %r' % item)
            variants.append({'label': label, 'flags': shlex.split(flags)})
        opts.variants = variants
        if not opts.modes and not variants:
            raise SystemExit('nothing to measure: no --modes and no --variant')
        opts.som_flags = shlex.split(opts.som_flags)
        opts.sizes = awfy.STANDARD if opts.sizes == 'standard' else awfy.INNER
        opts.inner = awfy.parse_inner(opts.inner)
        opts.only = opts.only.split(',') if opts.only else sorted(awfy.INNER)
        for b in opts.only:
            if b not in awfy.INNER:
                raise SystemExit('unknown benchmark %r' % b)
        if not opts.som or not os.access(opts.som, os.X_OK):
            raise SystemExit('no som binary (--som)')
        if not os.path.exists(os.path.join(opts.awfy_dir, 'Harness.som')):
            raise SystemExit('no Harness.som in %s (--awfy-dir)' % opts.awfy_dir)
        data = measure(opts)
        with open(os.path.join(opts.out, 'warmup.json'), 'w') as f:
            json.dump(data, f, indent=1)
    files = write_plots(data, opts.out, opts.log_y)
    files.append(write_table(data, opts.out))
    print('wrote %s' % ', '.join(files))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
