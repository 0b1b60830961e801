#!/usr/bin/env python3
"""End-to-end tests of `som --prof*` (async, coop, exact) on SOM programs of known shape.

usage: somprof_test.py SOM SAMPO WORKDIR [test-name...]
Each test prints PASS/FAIL; exit status 1 if any failed.  Each test stands alone (CMake
registers one ctest entry per test, each with its own WORKDIR).  Sampled shares are checked
with a margin derived from the number of samples (binomial: Z standard deviations) plus the
method's known systematic error, and sampled runs go on with a larger workload until they hold
enough samples, so the verdict does not depend on the machine's speed or load.  Exact counts
are checked against hand-computed numbers.  SAMPO_SANITIZE (set by CMake) names the sanitizer
the binaries were built with: accuracy checks whose truth is timing across cores are not made
there (the functional parts still are)."""
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOM, SAMPO, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(WORK, exist_ok=True)
PREFIX = "System>>boot;System>>initialize:"
SANITIZE = os.environ.get("SAMPO_SANITIZE", "")
Z = 4.5  # standard deviations: a correct sampler fails one check in ~150000


def margin(p, n, systematic=0.0):
    """Allowed deviation of a share p measured from n samples."""
    return Z * math.sqrt(max(p * (1 - p), 0.01) / max(n, 1)) + systematic


def run(args, check=True, timeout=120, env=None):
    e = dict(os.environ, **env) if env else None
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=e)
    if check and p.returncode != 0:
        raise AssertionError("%s: exit %d\n%s%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
    return p


def som(*args, **kw):
    # These tests check the profiler against ground truth that assumes a steady cost per
    # call (Fig2's 3:1 split, Hot's 75%); the JIT changes a method's cost in mid-run, so
    # they run interpreted. Profiling compiled code is tested in tests/e2e/jit.
    if not any(a.startswith("--jit") for a in args):
        args = ("--jit=off",) + tuple(args)
    return run([SOM] + list(args), **kw)


def collapsed(prof):
    """Stack -> weight.  Collapsed exports of sampled profiles are time-weighted (ns, see
    docs/profile-format.md); the checks here count samples (their margins are binomial), so
    a sampled profile's weights are turned back into samples by its interval."""
    interval = 0
    rep = run([SAMPO, "report", prof]).stdout
    if "# sampo profile: sampled" in rep:
        for line in rep.splitlines():
            if line.startswith("# interval_ns "):
                interval = int(line.split()[2])
    out = {}
    for line in run([SAMPO, "export", "--collapsed", prof]).stdout.splitlines():
        stack, _, n = line.rpartition(" ")
        w = int(n)
        if interval > 0:
            w = max(1, int(round(w / interval)))
        out[stack] = out.get(stack, 0) + w
    return out


def report_meta(prof):
    meta = {}
    for line in run([SAMPO, "report", prof]).stdout.splitlines():
        if line.startswith("# ") and len(line.split()) >= 3:
            meta[line.split()[1]] = line.split()[2]
    return meta


def share(stacks, leaf_in, among):
    """Weight of stacks containing frame `leaf_in` divided by those containing any of `among`."""
    w = {m: sum(n for s, n in stacks.items() if m in s.split(";")) for m in among}
    tot = sum(w.values())
    return w[leaf_in] / tot if tot else 0.0


def prog(name):
    return os.path.join(HERE, name)


# ---- exact mode: hand-computed counts ------------------------------------------------------

FIG2_EXACT_N = 600  # long enough that one preemption (wall-clock time view) cannot swing it


def fig2_exact():
    """The exact profile of Fig2 (written once per work directory)."""
    out = os.path.join(WORK, "fig2_exact.prof")
    if not os.path.exists(out):
        som("--prof=exact", "--prof-out", out, prog("Fig2.som"), str(FIG2_EXACT_N))
    return out


def test_exact_fig2():
    n = FIG2_EXACT_N
    out = fig2_exact()
    st = collapsed(out)
    base = PREFIX + ";Fig2>>run:"
    want = {
        base + ";Fig2>>a:": 1, base + ";Fig2>>a:;Fig2>>b:": n,
        base + ";Fig2>>a:;Fig2>>b:;Fig2>>c:": n, base + ";Fig2>>a:;Fig2>>b:;Fig2>>c:;Fig2>>d": 3 * n,
        base + ";Fig2>>a:;Fig2>>b:;Fig2>>c:;Fig2>>d;Fig2>>work": 3 * n,
        base + ";Fig2>>e:;Fig2>>b:;Fig2>>c:;Fig2>>f": n,
        base + ";Fig2>>e:;Fig2>>b:;Fig2>>c:;Fig2>>f;Fig2>>work": n,
    }
    for k, v in want.items():
        assert st.get(k) == v, "%s: want %d, got %s" % (k, v, st.get(k))
    assert not any("Fig2>>e:" in s and "Fig2>>d" in s for s in st), "d seen under e"
    assert not any("Fig2>>a:" in s and "Fig2>>f" in s for s in st), "f seen under a"
    assert os.path.exists(out + ".time"), "no time-weighted profile"
    tw = collapsed(out + ".time")
    sd = share(tw, "Fig2>>d", ["Fig2>>d", "Fig2>>f"])
    assert 0.6 < sd < 0.9, "time-weighted d share %.2f, want ~0.75" % sd


def test_exact_lean():
    out = os.path.join(WORK, "fig2_lean.prof")
    som("--prof=exact", "--prof-lean", "--prof-out", out, prog("Fig2.som"), "50")
    st = collapsed(out)
    base = PREFIX + ";Fig2>>run:"
    assert st.get(base + ";Fig2>>a:;Fig2>>b:;Fig2>>c:;Fig2>>d") == 150
    assert st.get(base + ";Fig2>>e:;Fig2>>b:;Fig2>>c:;Fig2>>f;Fig2>>work") == 50
    assert not any(s.endswith("System>>printString:") for s in st), "lean mode counted a primitive"
    full = collapsed(fig2_exact())
    assert any(s.endswith("System>>printString:") for s in full), "full exact mode lacks primitives"


def test_exact_recursion_nlr():
    out, dump = os.path.join(WORK, "fib.prof"), os.path.join(WORK, "fib.json")
    p = som("--prof=exact", "--prof-out", out, "--prof-dump", dump, prog("Fib.som"))
    assert p.stdout.split() == ["610", "done"], p.stdout
    d = json.load(open(dump))
    assert d["format"] == "sampo-ccmap" and d["flavour"] == "exact"
    m = {x["name"]: x for x in d["methods"]}
    assert m["Fib>>fib:"]["self"] == 1973, m["Fib>>fib:"]
    assert m["Fib>>find:in: [block L5]"]["self"] == 70
    assert m["Fib>>find:in:"]["self"] == 7 and m["Fib>>leaf"]["self"] == 7
    st = collapsed(out)
    # after 7 non-local returns the context stack is still right: leaf hangs off run
    assert st.get(PREFIX + ";Fib>>run;Fib>>leaf") == 7, [s for s in st if "leaf" in s]
    assert st.get(PREFIX + ";Fib>>run;Fib>>find:in:;Array>>do:;Fib>>find:in: [block L5]") == 70
    # edges carry call sites: fib: calls itself from two bytecode positions
    fid = m["Fib>>fib:"]["id"]
    sites = {e["callsite"] for e in d["edges"] if e["caller"] == fid and e["callee"] == fid}
    assert len(sites) == 2, sites
    # the dump is reloadable by the sampo tools
    r = run([SAMPO, "report", dump]).stdout
    assert "Fib>>fib:" in r


# ---- sampled modes -------------------------------------------------------------------------

def sampled(args, size, out, min_samples, among=None, env=None):
    """Runs som ARGS... --prof-out OUT PROG SIZE (args ends with the program), doubling SIZE
    until the profile holds min_samples samples (of stacks containing a frame of `among`, if
    given): a sample floor is met by running long enough, whatever the machine's speed."""
    for _ in range(8):
        som(*(args[:-1] + ["--prof-out", out, args[-1], str(size)]), env=env)
        st = collapsed(out)
        got = sum(n for s, n in st.items()
                  if among is None or any(m in s.split(";") for m in among))
        if got >= min_samples:
            return st
        size *= 2
    raise AssertionError("%s: %d samples after 8 runs, want %d" % (out, got, min_samples))


def check_fig2_sampled(mode, hz="2000", n=2000):
    out = os.path.join(WORK, "fig2_%s.prof" % mode)
    st = sampled(["--prof=%s" % mode, "--prof-hz", hz, prog("Fig2.som")], n, out, 800,
                 among=["Fig2>>d", "Fig2>>f"])
    fig = {s: c for s, c in st.items() if "Fig2>>" in s}
    for s in fig:
        assert s.startswith(PREFIX + ";Fig2>>run:"), "context not complete: " + s
        f = s.split(";")
        assert not ("Fig2>>d" in f and "Fig2>>e:" in f), "d under e: " + s
        assert not ("Fig2>>f" in f and "Fig2>>a:" in f), "f under a: " + s
    sd = share(fig, "Fig2>>d", ["Fig2>>d", "Fig2>>f"])
    nd = sum(n for s, n in fig.items() if {"Fig2>>d", "Fig2>>f"} & set(s.split(";")))
    tol = margin(0.75, nd, 0.03)
    assert abs(sd - 0.75) < tol, "%s: d share %.3f of %d, want 0.75 +- %.3f" % (mode, sd, nd, tol)
    # every sampled context exists in the exact calling-context tree
    exs = set(collapsed(fig2_exact()))
    for s in fig:
        assert s in exs, "sampled context not in the exact tree: " + s
    return out


def fig2_retry(mode):
    """A share is a statistic of one run: on a loaded machine (CI's sanitizer stages beside
    other work) one run in many lands outside the band (seen: coop 0.832, async 0.640 under
    ASan at load average 6+).  A second, independent run must then be inside it; a profiler
    that is biased fails both."""
    try:
        return check_fig2_sampled(mode)
    except AssertionError as e:
        sys.stderr.write("fig2 %s: first run outside the band (%s); running again\n" % (mode, e))
        return check_fig2_sampled(mode)


def test_async_fig2():
    out = fig2_retry("async")
    meta = report_meta(out)
    assert int(meta.get("partial", "0")) > 0, "no partial (visited-mark) samples"
    assert meta.get("orphans") == "0", "orphan partial samples: %s" % meta.get("orphans")


def test_coop_fig2():
    fig2_retry("coop")


def check_hot(mode):
    out = os.path.join(WORK, "hot_%s.prof" % mode)
    dump = os.path.join(WORK, "hot_%s.json" % mode)
    st = sampled(["--prof=%s" % mode, "--prof-hz", "2000", "--prof-dump", dump, prog("Hot.som")],
                 4000, out, 1000, among=["Hot>>hot", "Hot>>cold"])
    sh = share(st, "Hot>>hot", ["Hot>>hot", "Hot>>cold"])
    n = sum(c for s, c in st.items() if {"Hot>>hot", "Hot>>cold"} & set(s.split(";")))
    tol = margin(0.75, n, 0.03)
    assert abs(sh - 0.75) < tol, "%s: hot share %.3f of %d, want 0.75 +- %.3f" % (mode, sh, n, tol)
    d = json.load(open(dump))
    names = [m["name"] for m in d["methods"]]
    assert "Hot>>unit" in names and "Hot>>hot" in names, names
    unit = [m for m in d["methods"] if m["name"] == "Hot>>unit"][0]
    assert unit["self"] >= 0.8 * sum(m["self"] for m in d["methods"]), "unit is not the hot method"
    assert any(e["callsite"] > 0 for e in d["edges"]), "no call-site positions in the dump"
    run([SAMPO, "report", dump])


def hot_retry(mode):
    """As fig2_retry: a second, independent run before a share outside its band fails."""
    try:
        check_hot(mode)
    except AssertionError as e:
        sys.stderr.write("hot %s: first run outside the band (%s); running again\n" % (mode, e))
        check_hot(mode)


def test_async_hot():
    hot_retry("async")


def test_coop_hot():
    hot_retry("coop")


def leaf_share(stacks, leaf):
    """Weight of the stacks ending in `leaf` over the weight of all stacks."""
    tot = sum(stacks.values())
    return sum(n for s, n in stacks.items() if s.split(";")[-1] == leaf) / tot if tot else 0.0


def test_coop_safepoint_bias():
    """Tiny.som: a loop of arithmetic calls a small method once per iteration.  A coop
    sample is charged to the stretch its flag arrived in, so the small method gets about its
    share of the time, as in async; charged to the next method entered (the classic safe-point
    bias), it got most of the samples."""
    sh = {}
    for mode in ("async", "coop"):
        out = os.path.join(WORK, "tiny_%s.prof" % mode)
        som("--prof=%s" % mode, "--prof-hz", "2000", "--prof-out", out, prog("Tiny.som"),
            "10000000")
        sh[mode] = leaf_share(collapsed(out), "Tiny>>tiny:")
    assert 0.02 < sh["async"] < 0.6, sh
    # measured: async 0.04-0.06, coop 0.03 (charged to the next entry: 0.71-0.91)
    assert abs(sh["coop"] - sh["async"]) < 0.05, sh


def test_coop_small_activations():
    """Grow.som: tiny blocks and methods called from loops.  A flag reaches the VM thread
    0.2-0.5 us after the tick, often after such an activation has returned, so the stretch
    where it is seen (the default rule) need not be the one it arrived in: in some runs the
    copying block got 2-7% of the samples instead of its ~17%.  SOMPROF_COOP_CHARGE=marker
    charges the activation the marking thread saw on top (while it is still on the stack, or
    as a callee of the frame below) and matches async.  The marking thread's view comes from
    another core and is itself off in some runs on these machines (docs/evaluation.md,
    table 1m), so the marker run gets three tries."""
    names = ("Grow>>append: [block L11]", "Array>>doIndexes:", "Grow>>append:")

    def shares(mode, charge, tag):
        out = os.path.join(WORK, "grow_%s_%s.prof" % (mode, tag))
        som("--prof=%s" % mode, "--prof-hz", "2000", "--prof-out", out, prog("Grow.som"),
            "80000", env={"SOMPROF_COOP_CHARGE": charge} if charge else None)
        if charge:
            assert report_meta(out).get("coop_charge") == charge, report_meta(out)
        st = collapsed(out)
        return {m: leaf_share(st, m) for m in names}

    ref = shares("async", None, "ref")
    assert ref[names[0]] > 0.08, ref
    tries = []
    for i in range(3):
        sh = shares("coop", "marker", "marker%d" % i)
        tries.append(sh)
        if SANITIZE:
            # a sanitizer slows the VM thread and the marking thread by different factors:
            # the cross-core timing this rule depends on is not the product's; only the
            # rule's bookkeeping (checked above and below) is
            break
        if all(abs(sh[m] - ref[m]) < 0.06 for m in names):
            break
    else:
        raise AssertionError("marker rule never matched async: %s vs %s" % (tries, ref))
    # the stretch rule must still account for every sample (its bias here is a property of
    # the machine's cross-core timing, not asserted)
    assert sum(shares("coop", "stretch", "stretch").values()) > 0.5
    p = som("--prof=coop", prog("Tiny.som"), "10", check=False,
            env={"SOMPROF_COOP_CHARGE": "nearest"})
    assert p.returncode != 0 and "SOMPROF_COOP_CHARGE: expected stretch or marker" in p.stderr, (
        p.returncode, p.stderr)


def test_report_and_states():
    p = som("--prof", "--prof-hz", "1000", "--prof-report", "--prof-states", prog("Hot.som"), "400")
    assert "flat profile" in p.stderr and "Hot>>unit" in p.stderr, p.stderr[:2000]
    assert "somprof: sampled states:" in p.stderr and "somprof: exact states:" in p.stderr


def parse_states(err, what):
    line = next(l for l in err.splitlines() if l.startswith("somprof: %s states:" % what))
    return {k: float(v.rstrip("%")) for k, v in (x.split("=") for x in line.split()[3:])}


def report_states(prof):
    """The sampled VM-state split of a profile (`sampo report --states`), percent."""
    out = run([SAMPO, "report", "--states", prof]).stdout
    return {l.split()[2]: float(l.split()[0].rstrip("%")) for l in out.splitlines()
            if l.strip().endswith(("interpreting", "primitive", "gc"))}


def test_states_agree():
    """The sampled VM-state split and the exact one of the same run: Strs spends about a
    quarter to a third of its time in primitives (string and array primitives, timed).
    ~1500 samples: one standard deviation of the primitive share is ~1.1 points, so 4.5
    points is 4 of them.  Coop's tick takes the state at an instant the VM thread draws on
    its own clock; with the marking thread's view instead (SOMPROF_COOP_WINDOW_NS=0) the
    primitive share was off by up to 13 points on these machines, varying from run to run
    (docs/evaluation.md, section 5), so the same bound holds for both modes."""
    for mode in ("async", "coop"):
        p = som("--prof=%s" % mode, "--prof-hz", "1000", "--prof-states", prog("Strs.som"),
                "16000")
        s, e = parse_states(p.stderr, "sampled"), parse_states(p.stderr, "exact")
        assert e["primitive"] > 10 and e["interpreting"] > 30, (mode, e)
        for k in ("interpreting", "primitive", "gc"):
            assert abs(s[k] - e[k]) < 4.5, (mode, k, s, e)


def test_states_kernel_time():
    """Kernel time is the program's time too: Faults spends most of its run in the page faults
    of fresh 40 MB arrays (system time), in the primitive Array new: and in the collector that
    unmaps them.  The async trigger counts the thread's kernel time (SampoConfig.count_kernel),
    so a sample lands where the time went; user time alone put the faults' periods on the
    next user-mode sample (primitive 85% sampled against 74% exact; Sieve with the JIT, 10%
    against 31% once).  Where perf_event_paranoid refuses kernel counting the profile says so
    and the check is skipped."""
    out = os.path.join(WORK, "faults.prof")
    p = som("--prof=async", "--prof-hz", "1000", "--prof-states", "--prof-out", out,
            prog("Faults.som"), "30")
    meta = report_meta(out)
    if meta.get("kernel_time") == "refused":
        print("SKIP states_kernel_time: the kernel refused counting kernel time")
        return
    s, e = parse_states(p.stderr, "sampled"), parse_states(p.stderr, "exact")
    assert e["primitive"] > 30, e
    for k in ("interpreting", "primitive", "gc"):
        assert abs(s[k] - e[k]) < 4.5, (k, s, e)


def test_gc_charged_to_allocations():
    """A collection an allocation needed is charged to the allocations of its cycle, by bytes
    (somprof's allocation samples), not to the one that found the budget spent: in GcSpread
    `bulk:` allocates nearly all the bytes and the tiny allocation of `trigger` starts every
    collection.  Charged to the trigger (SOMPROF_GC_SPREAD=0) its ~10 ms collections were 26%
    of the samples, all on `trigger`; charged by bytes they go to `bulk:`.  A collection that
    `System fullGC` starts stays its caller's (`clear`).  Async interpreted and compiled, and
    coop (which charges a collection's ticks at the safe point after it)."""
    for mode, jit in (("async", "--jit=off"), ("async", "--jit=eager"), ("coop", "--jit=off")):
        leaf = {}
        for spread in ("1", "0"):
            out = os.path.join(WORK, "gcspread_%s_%s_%s.prof" % (mode, jit[6:], spread))
            p = som(jit, "--prof=" + mode, "--prof-hz", "1000", "--prof-out", out,
                    prog("GcSpread.som"), "20", env={"SOMPROF_GC_SPREAD": spread})
            assert p.stdout.split() == ["20"], p.stdout
            meta = report_meta(out)
            st = collapsed(out)
            total = sum(st.values())
            assert total > 300, (mode, jit, total)
            leaf[spread] = {m: sum(n for k, n in st.items() if k.split(";")[-1] == m) / total
                            for m in ("GcSpread>>bulk:", "GcSpread>>trigger", "GcSpread>>clear")}
            if spread == "1":
                assert meta.get("gc_attribution") == "allocations", meta
                assert int(meta.get("gc_samples_spread", 0)) > 50, meta
                assert int(meta.get("gc_alloc_samples", 0)) > 20, meta
            else:
                assert meta.get("gc_attribution") == "trigger", meta
        on, off = leaf["1"], leaf["0"]
        where = (mode, jit, on, off)
        assert off["GcSpread>>trigger"] > 0.10, where  # the lottery's winner
        assert on["GcSpread>>trigger"] < 0.03, where
        assert on["GcSpread>>bulk:"] > off["GcSpread>>bulk:"] + 0.08, where
        assert on["GcSpread>>clear"] > 0.01 and off["GcSpread>>clear"] > 0.01, where


def test_states_keep_fast_paths():
    """--prof-states times primitives' calls, but Array>>at:, at:put: (and String>>=) keep the
    interpreter's fast paths, which count as interpreting with or without it: Arr.som does
    nothing else, so both splits show (almost) no primitive time.  With the fast paths off
    (before stop 34) its exact split said 47% primitive and the run took 13 times as long.
    The full exact mode still sees every such access as a primitive context."""
    for mode in ("async", "coop"):
        p = som("--prof=%s" % mode, "--prof-hz", "1000", "--prof-states", prog("Arr.som"),
                "20000")
        assert p.stdout.split() == ["200030000000"], p.stdout
        s, e = parse_states(p.stderr, "sampled"), parse_states(p.stderr, "exact")
        assert e["primitive"] < 2 and e["interpreting"] > 95, (mode, e)
        assert s["primitive"] < 3 and s["interpreting"] > 90, (mode, s)
    out = os.path.join(WORK, "arr_exact.prof")
    som("--prof=exact", "--prof-out", out, prog("Arr.som"), "20")
    st = collapsed(out)
    assert any(k.endswith("Array>>at:") for k in st) and any(
        k.endswith("Array>>at:put:") for k in st), sorted(st)[:10]


def coop_async_states(name, n, env, bound):
    """Strs or Dense profiled by async and by coop (with `env`) in separate runs: the coop
    profile's metadata; the two splits must agree within `bound` points (~1500 samples
    each: the difference's standard deviation is ~1.6 points of the primitive share)."""
    sp = {}
    for mode in ("async", "coop"):
        out = os.path.join(WORK, "%s_states_%s.prof" % (name.lower(), mode))
        som("--prof=%s" % mode, "--prof-hz", "1000", "--prof-out", out, prog(name + ".som"),
            str(n), env=env if mode == "coop" else None)
        sp[mode] = report_states(out)
    assert sp["async"].get("primitive", 0) > 8, (name, sp)
    for k in ("interpreting", "primitive"):
        assert abs(sp["coop"].get(k, 0) - sp["async"].get(k, 0)) < bound, (name, k, sp)
    return report_meta(os.path.join(WORK, "%s_states_coop.prof" % name.lower()))


def test_coop_states_without_exact():
    """Without --prof-states coop keeps the marking thread's view of a tick's state: no wait,
    and its split must match async's.  Strs has string primitives of tens of us, Dense a
    Double primitive every few tens of ns.  SOMPROF_COOP_WINDOW_NS asks for the VM thread's
    own instant there too: it labels a tick at the first place past its instant where the
    state may change, counting most places before it off.  Its checks cost time that the
    instant skips, calibrated on a stand-in; a sanitizer makes the checks in the running VM
    far dearer than on the stand-in (ASan: 7 points more primitive), so there only a lost or
    swapped state is caught."""
    bound = 15 if SANITIZE else 6.5
    for name, n in (("Strs", 16000), ("Dense", 1500)):
        m = coop_async_states(name, n, None, bound)
        assert "state_waits" not in m and int(m.get("samples", 0)) > 500, m
    window = {"SOMPROF_COOP_WINDOW_NS": "8000"}
    # a tick whose instant a count of places passed draws a new one rather than guess (few
    # take the state at hand); Strs's long string primitives keep most places checked
    m = coop_async_states("Strs", 16000, window, bound)
    waits, samples = int(m.get("state_waits", 0)), int(m.get("samples", 0))
    # (a tick that comes while an earlier one's instant is ahead, or that finds the thread
    # descheduled, waits for none: many on a loaded machine)
    assert waits > samples // 5, m
    assert int(m.get("state_waits_unresolved", 0)) <= waits // 50, m
    assert int(m.get("state_instants_redrawn", 0)) <= waits // 5, m
    # Dense: the waits count most places off instead of reading the clock at each
    m = coop_async_states("Dense", 1500, window, bound)
    waits = int(m.get("state_waits", 0))
    assert waits > int(m.get("samples", 0)) // 5, m
    assert int(m.get("state_checks_skipped", 0)) > 10 * waits, m
    assert int(m.get("state_instants_redrawn", 0)) <= waits // 10, m
    p = som("--prof=coop", prog("Tiny.som"), "10", check=False,
            env={"SOMPROF_COOP_WINDOW_NS": "8us"})
    assert p.returncode != 0 and "SOMPROF_COOP_WINDOW_NS: expected 0 to 1000000" in p.stderr, (
        p.returncode, p.stderr)


def test_exact_time_same_run():
    """--prof-exact-time: the async samples against the exact time of the very same run
    (Fig2: work's 3:1 split by context; names and contexts must match exactly)."""
    out = os.path.join(WORK, "fig2_same.prof")
    som("--prof", "--prof-hz", "1000", "--prof-exact-time", "--prof-out", out,
        prog("Fig2.som"), "2000")
    meta = report_meta(out + ".time")
    assert meta.get("som_profiler_mode") == "exact-time-same-run", meta
    t = collapsed(out + ".time")
    a = share(t, "Fig2>>a:", ["Fig2>>a:", "Fig2>>e:"])
    # exact times (no sampling error); a sanitizer adds a per-call cost of its own to the
    # timed spans, which skews the 3:1 work split toward 2:1, but a lost or swapped context
    # (0.5, 0.25) is still caught
    tol = 0.15 if SANITIZE else 0.05
    assert abs(a - 0.75) < tol, (a, tol)
    c = run([SAMPO, "compare", out, out + ".time"]).stdout
    val = {l.split(":")[0]: float(l.split()[1].rstrip("%")) for l in c.splitlines()
           if l.startswith(("correlation(self)", "overlap"))}
    assert val["correlation(self)"] > 0.98 and val["overlap"] > 90, c
    p = som("--prof=coop", "--prof-exact-time", prog("Hot.som"), "10", check=False)
    assert p.returncode == 2 and "--prof-exact-time" in p.stderr, p.stderr


def test_system_primitives():
    p = som(prog("Prims.som"))
    assert p.stdout.split() == ["false"] * 5, p.stdout
    for mode in ("async", "coop"):
        out = os.path.join(WORK, "prims_%s.prof" % mode)
        p = som("--prof=%s" % mode, "--prof-out", out, prog("Prims.som"))
        assert p.stdout.split() == ["true"] * 5, (mode, p.stdout)


def test_paused_profile_feeds_jit():
    """With the JIT on, the async session's samples are the JIT controller's eyes: a paused
    profile (--prof-paused, System profilerStop) keeps them flowing to the controller, out of
    the profile.  Before, the controller saw no sample while paused and decided from
    counters alone (a benchmark's warm-up behind --prof-paused compiled other code)."""
    out = os.path.join(WORK, "paused_jit.prof")
    p = som("--jit=on", "--prof=async", "--prof-hz", "1000", "--prof-paused", "--prof-out", out,
            prog("Hot.som"), "20000", env={"SOM_JIT_TRACE": "1"})
    decided = [l for l in p.stderr.splitlines()
               if l.startswith("jit-trace: compile") and "(samples)" in l]
    meta = report_meta(out)
    assert meta.get("samples") == "0", meta
    assert int(meta.get("paused_samples", "0")) > 0, meta
    if "jit-trace" not in p.stderr:
        return  # a build without the JIT's backend: nothing else to check
    assert decided, "no decision from samples while paused:\n" + p.stderr[-2000:]


def test_threads_stress():
    for mode in ("async", "coop"):
        out = os.path.join(WORK, "threads_%s.prof" % mode)
        p = som("--threads", "4", "--prof=%s" % mode, "--prof-hz", "5000", "--prof-out", out,
                prog("Fig2.som"), "400")
        assert p.stdout.count("done") == 4, p.stdout  # threads' lines may interleave
        st = collapsed(out)
        for s in st:
            if "Fig2>>" in s:
                assert s.startswith(PREFIX + ";Fig2>>run:"), "lost frames: " + s
        r = run([SAMPO, "report", out]).stdout
        for t in range(4):
            assert "som-%d" % t in r, "thread som-%d missing from the report (%s)" % (t, mode)


def test_gc_stress():
    for mode in ("async", "coop", "exact"):
        out = os.path.join(WORK, "gcs_%s.prof" % mode)
        p = som("--gc-stress", "--prof=%s" % mode, "--prof-hz", "5000", "--prof-out", out,
                prog("Fib.som"))
        assert p.stdout.split() == ["610", "done"], p.stdout


def test_async_late_names():
    """libsampo never learns the names (worst case of the naming race): the glue's fix-up at
    finish must still name every frame."""
    out = os.path.join(WORK, "late.prof")
    run([SOM, "--jit=off", "--prof", "--prof-hz", "2000", "--prof-out", out, prog("Fig2.som"), "800"],
        env={"SOMPROF_LATE_NAMES": "1"})
    st = collapsed(out)
    assert not any("method@" in s for s in st), [s for s in st if "method@" in s][:3]
    assert any(s.endswith("Fig2>>e:;Fig2>>b:;Fig2>>c:;Fig2>>f;Fig2>>work") for s in st)


def test_hist_labels():
    out, svg = os.path.join(WORK, "hist.prof"), os.path.join(WORK, "hist.svg")
    som("--prof", "--prof-hz", "2000", "--prof-out", out, prog("Hot.som"), "800")
    run([SAMPO, "hist", out, "-o", svg])
    text = open(svg).read()
    assert "bc:" in text, "no bytecode-handler label in the PC histogram"


def test_flame_and_pprof():
    out = os.path.join(WORK, "fig2_async.prof")
    if not os.path.exists(out):
        fig2_retry("async")
    svg = os.path.join(WORK, "flame.svg")
    run([SAMPO, "flame", out, "-o", svg])
    assert "Fig2&gt;&gt;work" in open(svg).read() or "Fig2>>work" in open(svg).read()


def test_bad_options():
    p = som("--prof=bogus", prog("Hot.som"), check=False)
    assert p.returncode == 2 and "expected async, coop or exact" in p.stderr, p.stderr
    p = som("--prof-hz", "x", prog("Hot.som"), check=False)
    assert p.returncode == 2 and "--prof-hz" in p.stderr, p.stderr


TESTS = [t for n, t in sorted(globals().items()) if n.startswith("test_")]
ORDER = ["test_exact_fig2"]  # the sampled checks compare against its tree


def main():
    names = sys.argv[4:]
    tests = sorted(TESTS, key=lambda t: (t.__name__ not in ORDER, t.__name__))
    if names:
        tests = [t for t in tests if t.__name__ in names or t.__name__[5:] in names]
    failed = 0
    for t in tests:
        try:
            t()
            print("PASS", t.__name__)
        except Exception as e:  # report and go on
            failed += 1
            print("FAIL", t.__name__, "-", e)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
