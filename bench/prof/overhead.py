#!/usr/bin/env python3
"""bench/prof/overhead.py - libsampo's overhead and accuracy, measured side by side in one run.

For each rate R it runs the same fixed amount of work (xz -6 on a generated 8 MB text, or
the prof_workload split loop) under: no profiler; libsampo's preload with an EMPTY handler
(same trigger: the signal-delivery floor); libsampo; gperftools' CPU profiler (libprofiler,
CPUPROFILE_FREQUENCY=R).  Configurations are interleaved round by round; the CPU
time (user+sys of the child) minus the unprofiled run of the same round is averaged, with
95% bootstrap intervals over rounds, so machine noise hits all of them alike and shows.  Then it
compares libsampo's flat profile with `perf record -e cpu-clock:u -F R` of the same program
(Pearson correlation of per-function self shares and the overlap sum(min(a, b))).

usage: overhead.py --build BUILD_DIR [--rates 250,1000] [--rounds 5] [--program xz|split]
Prints a Markdown report (paste into docs/performance.md, section "## libsampo").
"""
import argparse, math, os, random, re, resource, shutil, statistics, struct, subprocess, sys
import tempfile, time

GPERF = "/usr/lib/x86_64-linux-gnu/libprofiler.so"


def run(cmd, env_extra, stdin=None):
    env = dict(os.environ)
    env.update(env_extra)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run(cmd, env=env, stdin=stdin, stdout=subprocess.DEVNULL, check=True)
    wall = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return cpu, wall


def make_input(path, mb):
    rnd = random.Random(42)
    words = ["%s%d" % (w, i) for i in range(400) for w in ("alpha", "beta", "gamma", "delta")]
    with open(path, "w") as f:
        n = 0
        while n < mb * 1024 * 1024:
            line = " ".join(rnd.choice(words) for _ in range(12)) + "\n"
            f.write(line)
            n += len(line)


def gperf_samples(path):
    """Sum of sample counts in a gperftools CPU profile (binary header + records)."""
    try:
        data = open(path, "rb").read()
    except OSError:
        return 0
    w = struct.unpack("<%dQ" % (len(data) // 8), data[: len(data) // 8 * 8])
    i, total = 5, 0  # header: 0, 3, 0, period, 0
    while i + 1 < len(w):
        count, depth = w[i], w[i + 1]
        if count == 0 and depth == 1:
            break
        total += count
        i += 2 + depth
    return total


def sampo_flat(check, prof):
    out = subprocess.run([check, prof, "--flat", "--min-samples", "0"], capture_output=True,
                         text=True).stdout
    shares, samples = {}, 0
    for line in out.splitlines():
        m = re.match(r"samples (\d+)", line)
        if m:
            samples = int(m.group(1))
        if line.startswith("flat\t"):
            _, pct, name, module, rel = (line.split("\t") + ["", ""])[:5]
            # stripped code: compare per 4 KiB page of the object (perf shows addresses)
            key = name if not name.startswith("[unknown") else "%s:%x" % (
                os.path.basename(os.path.realpath(module)), int(rel or "0", 16) >> 12)
            shares[key] = shares.get(key, 0) + float(pct)
    return shares, samples


def perf_flat(perf_data):
    out = subprocess.run(["perf", "report", "-i", perf_data, "--stdio", "--no-children",
                          "--sort", "dso,sym", "-q"], capture_output=True, text=True).stdout
    shares = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[.\]\s+(.*\S)", line)
        if not m:
            continue
        pct, dso, sym = float(m.group(1)), m.group(2), m.group(3)
        key = sym if not sym.startswith("0x") else "%s:%x" % (os.path.basename(dso),
                                                              int(sym, 16) >> 12)
        shares[key] = shares.get(key, 0) + pct
    return shares


def agreement(a, b):
    keys = sorted(set(a) | set(b))
    x = [a.get(k, 0.0) for k in keys]
    y = [b.get(k, 0.0) for k in keys]
    sa, sb = sum(x) or 1, sum(y) or 1
    overlap = sum(min(p / sa, q / sb) for p, q in zip(x, y)) * 100
    mx, my = statistics.mean(x), statistics.mean(y)
    cov = sum((p - mx) * (q - my) for p, q in zip(x, y))
    vx = math.sqrt(sum((p - mx) ** 2 for p in x))
    vy = math.sqrt(sum((q - my) ** 2 for q in y))
    return (cov / (vx * vy) if vx and vy else 0.0), overlap, len(keys)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--rates", default="250,1000")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--program", default="xz", choices=["xz", "split"])
    ap.add_argument("--no-extras", action="store_true",
                    help="only the fixed rates (no default-rate and self-tuned runs, no perf)")
    args = ap.parse_args()
    pre = os.path.join(args.build, "src/prof/libsampo_preload.so")
    check = os.path.join(args.build, "tests/e2e/prof/prof_check")
    work = os.path.join(args.build, "tests/e2e/prof/prof_workload")
    tmp = tempfile.mkdtemp(prefix="sampo-bench-")
    if args.program == "xz":
        inp = os.path.join(tmp, "input.txt")
        make_input(inp, 3)
        cmd = ["xz", "-6", "-T1", "-c", inp]
        desc = "`xz -6 -T1 -c` of a 3 MB generated text"
    else:
        cmd = [work, "split", "2"]
        desc = "`prof_workload split 2` (2 s of CPU, 50/30/20 split)"
    rates = [int(r) for r in args.rates.split(",")]
    common = {"SAMPO_COST_NS": "40000"}  # fixed-rate configs: no start-up cost measurement
    configs = [("none", {})]
    for r in rates:
        configs += [
            ("floor@%d" % r, dict(common, LD_PRELOAD=pre, SAMPO_HZ=str(r), SAMPO_EMPTY_HANDLER="1",
                                  SAMPO_OUT=os.path.join(tmp, "floor.prof"))),
            ("sampo@%d" % r, dict(common, LD_PRELOAD=pre, SAMPO_HZ=str(r),
                                  SAMPO_OUT=os.path.join(tmp, "s%d.prof" % r))),
        ]
        if r <= 250:  # setitimer(ITIMER_PROF) delivers at most one signal per tick
            configs.append(("gperf@%d" % r, dict(LD_PRELOAD=GPERF,
                                                 CPUPROFILE=os.path.join(tmp, "g%d.prof" % r),
                                                 CPUPROFILE_FREQUENCY=str(r))))
    # the default (rate from the measured cost and the 1% budget) and the self-tuner; the
    # measured cost is cached, so measure it once before the timed rounds
    extras = [] if args.no_extras else ["sampo-default", "sampo-tuned"]
    if extras:
        configs.append(("sampo-default", dict(LD_PRELOAD=pre,
                                              SAMPO_OUT=os.path.join(tmp, "d.prof"))))
        configs.append(("sampo-tuned", dict(LD_PRELOAD=pre, SAMPO_TUNE="1",
                                            SAMPO_OUT=os.path.join(tmp, "tuned.prof"))))
    run(cmd, {})  # warm the page cache
    run(cmd, dict(configs[-1][1]))  # the cost measurement, cached for an hour
    cpu = {n: [] for n, _ in configs}
    wall = {n: [] for n, _ in configs}
    delivered = {}
    load0 = open("/proc/loadavg").read().split()[0]
    for rnd in range(args.rounds):
        for name, env in configs:
            c, w = run(cmd, env)
            cpu[name].append(c)
            wall[name].append(w)
            if name.startswith("sampo"):
                _, n = sampo_flat(check, env["SAMPO_OUT"])
                delivered.setdefault(name, []).append(n / c)
            if name.startswith("gperf"):
                delivered.setdefault(name, []).append(gperf_samples(env["CPUPROFILE"]) / c)
    # Overhead of a config = its CPU time minus that of "none" in the same round (paired), so
    # slow phases of the machine hit both sides; mean over rounds with a 95% bootstrap interval.
    rng = random.Random(7)
    R = args.rounds
    diffs = {n: [cpu[n][i] - cpu["none"][i] for i in range(R)] for n, _ in configs}
    base = statistics.mean(cpu["none"])
    boots = [[rng.randrange(R) for _ in range(R)] for _ in range(2000)]

    def ci(f):
        vals = sorted(f(b) for b in boots)
        return vals[50], vals[1949]

    def mean_of(name, idx):
        return sum(diffs[name][i] for i in idx) / len(idx)

    def pct(name, idx):
        return mean_of(name, idx) / (sum(cpu["none"][i] for i in idx) / len(idx)) * 100

    print("## libsampo overhead and agreement (generated by bench/prof/overhead.py)\n")
    print("Program: %s; %d interleaved rounds; overhead = child CPU time (user+sys) minus that "
          "of the unprofiled run in the same round, mean over rounds, [95%% bootstrap "
          "interval];" % (desc, R))
    print("machine: %s, %d CPUs, load average %s at start, %s at end.\n" %
          (os.uname().release, os.cpu_count(), load0, open("/proc/loadavg").read().split()[0]))
    print("| config | CPU s (mean) | overhead % [95% CI] | wall overhead % | delivered Hz/CPU-s |")
    print("|---|---|---|---|---|")
    allr = list(range(R))
    for name, _ in configs:
        lo, hi = ci(lambda b: pct(name, b))
        wov = (statistics.mean(wall[name]) / statistics.mean(wall["none"]) - 1) * 100
        d = statistics.median(delivered[name]) if name in delivered else float("nan")
        print("| %s | %.3f | %+.2f [%+.2f, %+.2f] | %+.2f | %s |" % (
            name, statistics.mean(cpu[name]), pct(name, allr), lo, hi, wov,
            "-" if math.isnan(d) else "%.0f" % d))
    print()
    for r in rates:
        fl, sa = "floor@%d" % r, "sampo@%d" % r
        ds = statistics.median(delivered[sa])
        n_sig = ds * statistics.mean(cpu[sa])  # signals per run (the floor gets as many)
        cf = mean_of(fl, allr) / n_sig * 1e6
        cs = mean_of(sa, allr) / n_sig * 1e6
        xlo, xhi = ci(lambda b: (mean_of(sa, b) - mean_of(fl, b)) / n_sig * 1e6)
        line = ("- %d Hz (delivered %.0f): per signal, floor %.1f us, libsampo %.1f us; libsampo "
                "over the floor %+.1f us [%+.1f, %+.1f] = %+.0f%% of the floor" %
                (r, ds, cf, cs, cs - cf, xlo, xhi, (cs - cf) / cf * 100 if cf > 0 else float("nan")))
        gp = "gperf@%d" % r
        if gp in diffs:
            glo, ghi = ci(lambda b: (mean_of(sa, b) - mean_of(gp, b)) / base * 100)
            line += ("; libsampo - gperftools %+.2f pp [%+.2f, %+.2f] (gperftools delivered %.0f)"
                     % ((mean_of(sa, allr) - mean_of(gp, allr)) / base * 100, glo, ghi,
                        statistics.median(delivered[gp])))
        print(line)
    for name in extras:
        print("- %s: %.0f Hz delivered, overhead %+.2f%% (budget 1%%)" % (
            name, statistics.median(delivered[name]), pct(name, allr)))
    # agreement with perf
    if shutil.which("perf") and not args.no_extras:
        print("\nAgreement with `perf record -e cpu-clock:u` (flat self shares per function):\n")
        print("| rate | Pearson r | overlap | functions |")
        print("|---|---|---|---|")
        for r in rates:
            pdata = os.path.join(tmp, "perf%d.data" % r)
            subprocess.run(["perf", "record", "-q", "-e", "cpu-clock:u", "-F", str(r), "-o",
                            pdata, "--"] + cmd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True)
            ours, _ = sampo_flat(check, os.path.join(tmp, "s%d.prof" % r))
            theirs = perf_flat(pdata)
            rr, ov, k = agreement(ours, theirs)
            print("| %d Hz | %.4f | %.1f%% | %d |" % (r, rr, ov, k))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
