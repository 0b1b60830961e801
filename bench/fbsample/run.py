#!/usr/bin/env python3
"""Sampled type feedback, measured (docs/evaluation.md, section K).

Runs the programs of bench/fbsample with --jit-feedback-sampling=on and =off side by side
(ABBA order within each round, so neither setting always runs first) and prints markdown
tables of ratios.  Steady state = the fastest iteration of the second half of a run; a
setting's figure is the median over the rounds.

  run.py --som SOM steady   [--runs 5] [--iterations 40]   polluted/unpolluted, on vs off
  run.py --som SOM alternate [--runs 5]                     the deopt-loop program, totals
  run.py --som SOM study --param t1 --values 5,10,20,50,100 [--runs 20]
        outliers (runs > 10% slower than the median run) and latency per parameter value
  run.py --som SOM awfy --awfy-dir DIR [--runs 5]           AWFY steady state, on vs off
  run.py --som SOM quick [--runs 5]      the polluted programs, sampled recompilation in two
        steps (SOM_JIT_QUICK_RECOMPILE=1, the default) vs one: latency, when the full-level
        version arrives, steady state
  run.py --som SOM instructions --awfy-dir DIR [--scale 10]
        instructions executed (valgrind --tool=callgrind), on vs off, with --jit=eager: the
        unpolluted programs and AWFY; the whole run and its steady second iteration.  Where
        timing cannot resolve 1%, the instruction count can (it repeats to a few hundred
        instructions in a billion); see cmd_instructions
  run.py --som SOM interleave --awfy-dir DIR [--quads 12] [--block-ms 250] [--aa]
        the observations' run-time cost with the compiled code held fixed: one process per
        program (AWFY and the unpolluted programs) switches feedback sampling off and on
        between blocks of iterations (Interleave.som); on/off per quad, median and its ~95%
        interval; --aa adds the on/on control.  With --flags=--jit=eager the code is complete
        after the first iteration (with --jit=on, compilations and recompilations go on for
        seconds into the blocks: Richards' blocks spread 237-420 ms with it, 245-290 eager)

Every run also passes --jit-stats; the latency columns come from its "sampled feedback" line
(phase = first observation of the narrower kinds -> recompiled code installed).
"""
import argparse
import math
import os
import random
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = ["FbField", "FbRsa", "FbShared", "FbMega"]
SIZE = 0  # --size: the programs' size argument (0: their default)
ITER = re.compile(r"^\S+: iteration (\d+) (\d+)us$", re.M)
HARNESS = re.compile(r"^\w+: iterations=1 runtime: (\d+)\s*us\s*$", re.M)
FBSLOTS = re.compile(r"sampled feedback: (\d+) versions with (\d+) slots")
FBFULL = re.compile(r"quick first: (\d+) replaced at full level \(median ([\d.]+) ms")
FBLINE = re.compile(r"recompiled (\d+) \(latency median ([\d.]+) ms, max ([\d.]+) ms; "
                    r"detection median ([\d.]+) ms\), deopts after them (\d+), loops (\d+)")


# AWFY: the inner iterations of bench/awfy-compare (verifiable; ~0.5-2 s interpreted)
AWFY = [("Bounce", 800), ("CD", 100), ("DeltaBlue", 10000), ("Havlak", 150), ("Json", 40),
        ("List", 1500), ("Mandelbrot", 500), ("NBody", 250000), ("Permute", 600),
        ("Queens", 800), ("Richards", 10), ("Sieve", 800), ("Storage", 800), ("Towers", 300)]


def awfy_classpath(d):
    return ":".join([d, os.path.join(d, "Core")] + [
        os.path.join(d, x) for x in ("CD", "DeltaBlue", "Havlak", "Json", "NBody", "Richards")])


def run(som, prog, iters, polluted, flags, cp=HERE, args=None, timeout=600, env=None):
    cmd = [som, "--jit-stats"] + flags + ["-cp", cp]
    if args is None:
        cmd += [os.path.join(HERE, prog + ".som"), str(iters), str(polluted)]
        if SIZE:
            cmd.append(str(SIZE))
    else:
        cmd += args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                       env=dict(os.environ, **env) if env else None)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stderr[-2000:]))
    times = [int(us) for _, us in ITER.findall(p.stdout)]
    if not times:
        times = [int(us) for us in HARNESS.findall(p.stdout)]
    m = FBLINE.search(p.stderr)
    fb = None
    if m:
        fb = dict(recompiled=int(m.group(1)), latency=float(m.group(2)),
                  latmax=float(m.group(3)), detect=float(m.group(4)),
                  deopts=int(m.group(5)), loops=int(m.group(6)))
        ms = FBSLOTS.search(p.stderr)
        fb["slots"] = int(ms.group(2)) if ms else 0
        mf = FBFULL.search(p.stderr)
        fb["full"], fb["full_latency"] = (int(mf.group(1)), float(mf.group(2))) if mf else (0, 0)
    return times, fb


def steady(times):
    """The fastest iteration of the second half: the machine's transient slowdowns (30-50%
    here) only ever add time, a missed recompilation shows as a slow run all the same."""
    half = times[len(times) // 2:]
    return min(half) if half else float("nan")


def abba(n):
    """Round r's order: on first in even rounds, off first in odd ones."""
    for r in range(n):
        yield ("on", "off") if r % 2 == 0 else ("off", "on")


def flags_for(setting, extra):
    return ["--jit-feedback-sampling=" + setting] + extra


def cmd_steady(a, extra):
    print("| Program | polluted | on: steady (ms) | off: steady (ms) | speedup off/on | "
          "A/A: off runs 1,3,5.. / 2,4,6.. | on/off fastest | A/A fastest | "
          "sampled recompilations (on) | latency median (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for prog in PROGRAMS:
        for pol in (1, 0):
            res = {"on": [], "off": []}
            recs, lats = [], []
            for order in abba(a.runs):
                for s in order:
                    t, fb = run(a.som, prog, a.iterations, pol, flags_for(s, extra))
                    res[s].append(steady(t))
                    if s == "on" and fb:
                        recs.append(fb["recompiled"])
                        if fb["recompiled"]:
                            lats.append(fb["latency"])
            on, off = statistics.median(res["on"]), statistics.median(res["off"])
            aa = statistics.median(res["off"][0::2]) / statistics.median(res["off"][1::2])
            fr = min(res["on"]) / min(res["off"])
            faa = min(res["off"][0::2]) / min(res["off"][1::2])
            print("| %s | %s | %.3f | %.3f | %.2fx | %.2f | %.3f | %.3f | %s | %s |" % (
                prog, "yes" if pol else "no", on / 1000, off / 1000, off / on, aa, fr, faa,
                "/".join(str(r) for r in recs),
                "%.1f" % statistics.median(lats) if lats else "-"))
            sys.stdout.flush()


def cmd_quick(a, extra):
    """Latency per run = the median over its sampled recompilations; a row gives the median
    over the runs (and the largest run median)."""
    print("| Program | two steps: latency median (max) ms | full level after (ms) | "
          "one step: latency median (max) ms | steady two / one (ms) |")
    print("|---|---|---|---|---|")
    for prog in PROGRAMS:
        lat = {"1": [], "0": []}
        full, st = [], {"1": [], "0": []}
        for order in abba(a.runs):
            for q in ("1", "0") if order[0] == "on" else ("0", "1"):
                t, fb = run(a.som, prog, a.iterations, 1, flags_for("on", extra),
                            env={"SOM_JIT_QUICK_RECOMPILE": q})
                st[q].append(steady(t))
                if fb and fb["recompiled"]:
                    lat[q].append(fb["latency"])
                    if q == "1" and fb["full"]:
                        full.append(fb["full_latency"])

        def cell(v):
            return "%.1f (%.1f)" % (statistics.median(v), max(v)) if v else "-"
        print("| %s | %s | %s | %s | %.3f / %.3f |" % (
            prog, cell(lat["1"]), "%.1f" % statistics.median(full) if full else "-",
            cell(lat["0"]), statistics.median(st["1"]) / 1000, statistics.median(st["0"]) / 1000))
        sys.stdout.flush()


def cmd_alternate(a, extra):
    print("| Setting | total (ms), median of %d | per run (ms) | loops | sampled recompilations |"
          % a.runs)
    print("|---|---|---|---|---|")
    modes = [("off", ["--jit-feedback-sampling=off"])] + [
        ("on, " + l, ["--jit-feedback-sampling=on", "--jit-deopt-loop=" + l])
        for l in ("cooldown", "threshold", "none")]
    res = {name: [] for name, _ in modes}
    info = {name: [] for name, _ in modes}
    for r in range(a.runs):
        order = modes if r % 2 == 0 else list(reversed(modes))
        for name, fl in order:
            t, fb = run(a.som, a.programs or "FbAlternate", a.iterations, 0, fl + extra)
            res[name].append(sum(t) / 1000)
            info[name].append(fb)
    base = statistics.median(res["off"])
    for name, _ in modes:
        med = statistics.median(res[name])
        fbs = [f for f in info[name] if f]
        print("| %s | %.1f (%+.1f%%) | %s | %s | %s |" % (
            name, med, 100 * (med / base - 1), " ".join("%.0f" % x for x in res[name]),
            "/".join(str(f["loops"]) for f in fbs) or "-",
            "/".join(str(f["recompiled"]) for f in fbs) or "-"))


def cmd_study(a, extra):
    vals = a.values.split(",")
    print("| %s | Program | runs | median steady (ms) | outliers (>10%% slower) | "
          "not recompiled | deopt loops per run | latency median (ms) | detection median (ms) |"
          % a.param)
    print("|---|---|---|---|---|---|---|---|---|")
    for prog in (a.programs.split(",") if a.programs else PROGRAMS):
        for v in vals:
            fl = ["--jit-feedback-sampling=on"] + extra
            if a.param == "hz":
                env_fl = fl
                os.environ["SOM_JIT_HZ"] = v
            else:
                env_fl = fl + ["--jit-" + a.param.replace("_", "-") + "=" + v]
            st, lat, det, norec, loops = [], [], [], 0, []
            for _ in range(a.runs):
                t, fb = run(a.som, prog, a.iterations, 1, env_fl)
                st.append(steady(t))
                loops.append(str(fb["loops"]) if fb else "-")
                if fb and fb["recompiled"]:
                    lat.append(fb["latency"])
                    det.append(fb["detect"])
                else:
                    norec += 1
            os.environ.pop("SOM_JIT_HZ", None)
            med = statistics.median(st)
            out = sum(1 for x in st if x > 1.1 * med)
            print("| %s | %s | %d | %.3f | %d | %d | %s | %s | %s |" % (
                v, prog, a.runs, med / 1000, out, norec, "/".join(loops),
                "%.1f" % statistics.median(lat) if lat else "-",
                "%.1f" % statistics.median(det) if det else "-"))
            sys.stdout.flush()


def cmd_awfy(a, extra):
    d = a.awfy_dir
    cp = awfy_classpath(d)
    # besides the median over the rounds of each run's steady state, the fastest steady state
    # of all rounds: the machine's slowdowns only ever add time, so over many runs the minimum
    # is the steadiest figure for a cost that would be paid in every run
    print("| Benchmark | on: steady (ms) | off: steady (ms) | on/off | A/A: off runs 1,3,.. / "
          "2,4,.. | on: fastest (ms) | off: fastest (ms) | on/off fastest | A/A fastest | "
          "slots (on) | sampled recompilations (on) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ratios, fratios = [], []
    for name, inner in AWFY:
        if a.only and name not in a.only.split(","):
            continue
        res = {"on": [], "off": []}
        recs, slots = [], []
        for order in abba(a.runs):
            for s in order:
                t, fb = run(a.som, name, 0, 0, flags_for(s, extra), cp=cp,
                            args=[os.path.join(d, "Harness.som"), name, str(a.iterations),
                                  str(inner)])
                res[s].append(steady(t))
                if s == "on" and fb:
                    recs.append(str(fb["recompiled"]))
                    slots.append(str(fb["slots"]))
        on, off = statistics.median(res["on"]), statistics.median(res["off"])
        aa = statistics.median(res["off"][0::2]) / statistics.median(res["off"][1::2])
        fon, foff = min(res["on"]), min(res["off"])
        faa = min(res["off"][0::2]) / min(res["off"][1::2])
        ratios.append(on / off)
        fratios.append(fon / foff)
        print("| %s | %.2f | %.2f | %.3f | %.3f | %.2f | %.2f | %.3f | %.3f | %s | %s |" % (
            name, on / 1000, off / 1000, on / off, aa, fon / 1000, foff / 1000, fon / foff, faa,
            "/".join(slots), "/".join(recs)))
        sys.stdout.flush()
    print("\ngeometric mean on/off: %.4f (median of the runs), %.4f (fastest)" % (
        statistics.geometric_mean(ratios), statistics.geometric_mean(fratios)))


# interleave: AWFY inner iterations that keep one iteration of compiled code near 50-150 ms
INTERLEAVE_INNER = {"Havlak": 15, "Storage": 200}
BLOCK = re.compile(r"^block \d+ (on|off) (\d+)$", re.M)


def median_ci(xs):
    """The median and a distribution-free ~95% interval for it (order statistics: the
    k-th smallest and largest, k the largest with P(Binomial(n, 1/2) < k) <= 2.5%)."""
    xs = sorted(xs)
    n = len(xs)
    k, acc = 0, 0.0
    while True:  # acc = P(B < k+1)
        acc += math.comb(n, k) / 2 ** n
        if acc > 0.025:
            break
        k += 1
    lo, hi = (xs[k - 1], xs[n - k]) if k >= 1 else (xs[0], xs[-1])
    return statistics.median(xs), lo, hi


def interleaved(a, extra, kind, name, arg, cp, mode):
    """Quad ratios on/off (or on/on with mode aa) of one Interleave.som run."""
    cmd = [a.som] + extra + ["-cp", cp, os.path.join(HERE, "Interleave.som"), kind, name,
                             str(arg), str(a.warmup), str(a.quads), str(a.block_ms), mode]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), p.stdout[-1000:], p.stderr[-2000:]))
    blocks = [int(us) for _, us in BLOCK.findall(p.stdout)]
    if a.raw:
        with open(os.path.join(a.raw, "%s-%s.txt" % (name, mode)), "w") as f:
            f.write(p.stdout)
    # a quad's first and fourth block have one setting, its second and third the other
    # (Interleave.som: on off off on, then off on on off, ...); with aa both are on, and
    # the ratio is first+fourth over second+third all the same
    ratios, on, off = [], [], []  # with aa: the blocks in the on resp. off positions
    for q in range(len(blocks) // 4):
        b = blocks[4 * q:4 * q + 4]
        outer, inner = b[0] + b[3], b[1] + b[2]
        on_outer = q % 2 == 0
        ratios.append(outer / inner if on_outer else inner / outer)
        (on if on_outer else off).extend([b[0], b[3]])
        (off if on_outer else on).extend([b[1], b[2]])
    return ratios, (on, off), statistics.median(blocks) / 1000


def quartile_ratio(on, off, reps=2000):
    """The lower quartile of the on blocks over that of the off blocks, with a bootstrap
    ~95% interval: the machine's slowdowns (a few blocks in ten, 10-40% here) only ever add
    time, so the fast quarter of each setting is what a cost paid in every block shifts."""
    def q1(xs):
        return statistics.quantiles(xs, n=4)[0]
    rng = random.Random(1)
    boot = sorted(q1(rng.choices(on, k=len(on))) / q1(rng.choices(off, k=len(off)))
                  for _ in range(reps))
    return q1(on) / q1(off), boot[int(0.025 * reps)], boot[int(0.975 * reps) - 1]


def cmd_interleave(a, extra):
    """The run-time cost of the observations with the compiled code held fixed: one process
    per program switches feedback sampling off and on between blocks (Interleave.som); per
    quad, on time / off time; the median over the quads with its ~95% interval."""
    d = a.awfy_dir
    progs = [("awfy", n, INTERLEAVE_INNER.get(n, i)) for n, i in AWFY]
    progs += [("fb", n, 0) for n in PROGRAMS]
    if a.only:
        progs = [p for p in progs if p[1] in a.only.split(",")]
    if a.raw:
        os.makedirs(a.raw, exist_ok=True)
    aa_col = (" A/A: quad median [95%] | A/A: lower quartiles [95%] |" if a.aa else "")
    print("| Program | block (ms, median) | quads | on/off: quad median [95%% interval] | "
          "on/off: lower quartiles [95%% interval] |%s" % aa_col)
    print("|---|---|---|---|---|%s" % ("---|---|" if a.aa else ""))
    meds, qs = [], []
    for kind, name, arg in progs:
        cp = awfy_classpath(d) if kind == "awfy" else HERE
        r, (on, off), blk = interleaved(a, extra, kind, name, arg, cp, "ab")
        m = median_ci(r)
        q = quartile_ratio(on, off)
        meds.append(m[0])
        qs.append(q[0])
        row = "| %s%s | %.0f | %d | %.4f [%.4f, %.4f] | %.4f [%.4f, %.4f] |" % (
            (name, "" if kind == "awfy" else " (unpolluted)", blk, len(r)) + m + q)
        if a.aa:
            r2, (x, y), _ = interleaved(a, extra, kind, name, arg, cp, "aa")
            row += " %.4f [%.4f, %.4f] | %.4f [%.4f, %.4f] |" % (median_ci(r2) + quartile_ratio(x, y))
        print(row)
        sys.stdout.flush()
    print("\ngeometric mean on/off: %.4f (quad medians), %.4f (lower quartiles)" % (
        statistics.geometric_mean(meds), statistics.geometric_mean(qs)))


OBS = re.compile(r"sampled feedback: (\d+) versions with (\d+) slots, (\d+) observations")
IR = re.compile(r"Collected : (\d+)")


def callgrind(cmd):
    """(instructions executed, --jit-stats' (slots, observations)) of cmd under callgrind."""
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                        "--smc-check=all"] + cmd, capture_output=True, text=True, timeout=3600)
    m = IR.search(p.stderr)
    if p.returncode != 0 or not m:
        print("failed: %s\n%s" % (" ".join(cmd), p.stderr[-2000:]), file=sys.stderr)
        return None
    o = OBS.search(p.stderr)
    return int(m.group(1)), (int(o.group(2)), int(o.group(3))) if o else (0, 0)


def cmd_instructions(a, extra):
    """Sampling's cost in instructions.  --jit=eager compiles every method at its first call,
    synchronously, so a run is deterministic but for what the samples do: both settings
    compile the same methods with the same feedback, and only the slots' observations (armed
    by samples) and a sampled recompilation differ.  Each program runs 1 and 2 iterations:
    the second iteration alone (the difference) is the steady state, all compiled.  Under
    valgrind the program runs 50-300x slower while the JIT session still samples at its
    wall-clock rate (50 Hz), so a run takes 50-300x more samples per instruction than it
    would natively: what sampling costs here is an upper bound."""
    d = a.awfy_dir
    cp = awfy_classpath(d)
    # inner iterations / --scale; CD, Mandelbrot and NBody verify their result only at some
    # counts (CD 10; the other two keep theirs, and take longer)
    jobs = [(p + " (unpolluted)", [os.path.join(HERE, p + ".som")], HERE, lambda it: [str(it), "0"])
            for p in PROGRAMS]
    for name, inner in AWFY:
        n = {"CD": 10, "Mandelbrot": inner, "NBody": inner}.get(name, max(1, inner // a.scale))
        jobs.append((name, [os.path.join(d, "Harness.som"), name], cp,
                     lambda it, n=n: [str(it), str(n)]))
    print("| program | on: instructions, 2 iterations | off | on/off | steady iteration on/off | "
          "A/A: off/off, whole | A/A steady | slots (on) | observations (on) |")
    print("|---|---|---|---|---|---|---|---|---|")
    from concurrent.futures import ThreadPoolExecutor
    ratios, sratios = [], []
    for label, args, path, tail in jobs:
        if a.only and label.split()[0] not in a.only.split(","):
            continue
        # off twice: how far two runs of one setting differ (the samples' timing)
        cmds = [[a.som, "--jit-stats", "--jit=eager", "--jit-feedback-sampling=" + s] + extra +
                ["-cp", path] + args + tail(it) for s in ("on", "off", "off") for it in (1, 2)]
        with ThreadPoolExecutor(2) as ex:
            got = list(ex.map(callgrind, cmds))
        if None in got:
            print("| %s | failed (see the errors) | | | | | | | |" % label)
            continue
        (on1, _), (on2, fb), (off1, _), (off2, _), (aa1, _), (aa2, _) = got
        r, sr = on2 / off2, (on2 - on1) / (off2 - off1)
        ratios.append(r)
        sratios.append(sr)
        print("| %s | %d | %d | %.5f | %.5f | %.5f | %.5f | %d | %d |" % (
            label, on2, off2, r, sr, aa2 / off2, (aa2 - aa1) / (off2 - off1), fb[0], fb[1]))
        sys.stdout.flush()
    if ratios:
        print("\ngeometric mean on/off: %.5f (whole runs), %.5f (steady iterations); largest "
              "%.5f, %.5f" % (statistics.geometric_mean(ratios), statistics.geometric_mean(sratios),
                             max(ratios), max(sratios)))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--som", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=40)
    ap.add_argument("--param", default="t1")
    ap.add_argument("--values", default="5,10,20,50,100")
    ap.add_argument("--awfy-dir", help="SOM's Examples/AreWeFastYet")
    ap.add_argument("--only", help="AWFY benchmarks, comma-separated")
    ap.add_argument("--flags", default="", help="more som flags for every run")
    ap.add_argument("--programs", help="study: programs, comma-separated (default the three)")
    ap.add_argument("--size", type=int, default=0, help="the programs' size (default theirs)")
    ap.add_argument("--scale", type=int, default=10,
                    help="instructions: AWFY inner iterations divided by this (default 10)")
    ap.add_argument("--quads", type=int, default=12,
                    help="interleave: quads of blocks (on off off on / off on on off)")
    ap.add_argument("--warmup", type=int, default=15, help="interleave: warm-up iterations")
    ap.add_argument("--block-ms", type=int, default=250, help="interleave: block length")
    ap.add_argument("--raw", help="interleave: a directory for each run's output")
    ap.add_argument("--aa", action="store_true",
                    help="interleave: also the A/A control (sampling on in every block)")
    ap.add_argument("what", choices=["steady", "alternate", "study", "awfy", "quick",
                                     "instructions", "interleave"])
    a = ap.parse_args()
    global SIZE
    SIZE = a.size
    extra = a.flags.split()
    if a.what in ("awfy", "instructions", "interleave") and not a.awfy_dir:
        sys.exit(a.what + " needs --awfy-dir")
    {"steady": cmd_steady, "alternate": cmd_alternate, "study": cmd_study,
     "awfy": cmd_awfy, "quick": cmd_quick, "instructions": cmd_instructions,
     "interleave": cmd_interleave}[a.what](a, extra)


if __name__ == "__main__":
    main()
