#!/usr/bin/env python3
"""Async profiling (libsampo's CC-Map) folds recursion and bounds its contexts (issue 16,
item 13): a 40k-deep recursion keeps the profile and the memory small, a program without
recursion keeps its unfolded tree, SAMPO_MAX_CONTEXTS merges frames into their caller and says so, and
the async and exact trees of one recursive program have the same shape.

usage: ccmap_fold_test.py SOM SAMPO WORKDIR SANITIZE [test-name...]
SANITIZE is the build's sanitizer ('' for none): the memory ceiling is checked only without
one.  Each test prints PASS/FAIL; exit status 1 if any failed."""
import os
import re
import subprocess
import sys

SOM, SAMPO, WORK = (os.path.abspath(a) for a in sys.argv[1:4])
SANITIZE = sys.argv[4]
PLAIN = SANITIZE in ("", "OFF", "none")
os.makedirs(WORK, exist_ok=True)


def run(args, timeout=300, env=None):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def src(name, body):
    path = os.path.join(WORK, name + ".som")
    with open(path, "w") as f:
        f.write("%s = (\n%s\n)\n" % (name, body))
    return path


def peak_rss_kb_of(args, timeout=300, env=None):
    """Runs args in a fresh child: (completed process, its peak RSS in KB)."""
    code = ("import resource,subprocess,sys\n"
            "p=subprocess.run(sys.argv[1:],stdout=subprocess.PIPE,stderr=subprocess.PIPE)\n"
            "sys.stderr.buffer.write(p.stderr)\n"
            "print(p.stdout.decode().strip())\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "sys.exit(p.returncode if p.returncode >= 0 else 128 - p.returncode)\n")
    p = run([sys.executable, "-c", code] + args, timeout=timeout, env=env)
    return p, int(p.stdout.split()[-1]) if p.stdout.split() else 0


def meta(report, key):
    m = re.search(r"^# %s\s+(\S+)" % key, report, re.M)
    assert m, "no %s in the report:\n%s" % (key, report[:3000])
    return m.group(1)


def tree(report):
    """The report's call tree as (depth, name) pairs."""
    m = re.search(r"^## call tree.*?\n(.*?)(?:\n\n|\Z)", report, re.S | re.M)
    assert m, report[:3000]
    out = []
    for line in m.group(1).splitlines():
        t = re.match(r"\s*\S+%\s+\S+%( +)(.*)$", line)
        if t:
            out.append(((len(t.group(1)) - 1) // 2, t.group(2).strip()))
    return out


# Each level spins long enough that the 2 kHz samples see it: nearly every sample is partial,
# continuing from a visited activation a few levels up.
DEEP = ("    down: n = ( n = 0 ifTrue: [ ^ 0 ]. self spin. ^ (self down: n - 1) + 1 )\n"
        "    spin = ( | s | s := 0. 1 to: 2000 do: [ :i | s := s + i ]. ^ s )\n"
        "    run: args = ( (self down: (args at: 2) asInteger) println )")


def test_async_deep_recursion_is_folded():
    path = src("Deep", DEEP)
    out = os.path.join(WORK, "deep.prof")
    # before (release build of 18845d6): 306 MB peak, a 28 MB file, 3 s; now 8 MB, 31 KB
    p, kb = peak_rss_kb_of([SOM, "--jit=off", "--prof=async", "--prof-hz", "2000", "--prof-out", out, path,
                            "40000"])
    assert p.returncode == 0 and p.stdout.split()[0] == "40000", p.stderr
    size = os.path.getsize(out)
    assert size < 1000000, "profile of %d bytes" % size
    if PLAIN:
        assert kb < 64 * 1024, "peak RSS %d KB" % kb
    rep = run([SAMPO, "report", out]).stdout
    assert int(meta(rep, "partial")) > 0, rep[:3000]
    assert int(meta(rep, "contexts_folded")) > 1000, rep[:3000]
    assert meta(rep, "contexts_merged") == "0"
    assert meta(rep, "contexts_max") == "262144"
    # down: under run:, its recursive call site under it, spin below: no level per depth
    downs = stack_depths(out, "Deep>>down:")
    assert downs and max(downs) <= 2, downs


def test_bound_merges_into_caller():
    path = src("Deep", DEEP)
    out = os.path.join(WORK, "bound.prof")
    p = run([SOM, "--jit=off", "--prof=async", "--prof-hz", "2000", "--prof-out", out, path, "3000"],
            env={"SAMPO_MAX_CONTEXTS": "4"})
    assert p.returncode == 0, p.stderr
    rep = run([SAMPO, "report", out]).stdout
    assert meta(rep, "contexts_max") == "4"
    assert int(meta(rep, "contexts_merged")) > 0, rep[:3000]
    assert int(meta(rep, "contexts_folded")) == 0, rep[:3000]  # merged before any recursion
    # a bad value is refused (the default bound), the run goes on
    p = run([SOM, "--jit=off", "--prof=async", "--prof-out", out, path, "10"],
            env={"SAMPO_MAX_CONTEXTS": "lots"})
    assert p.returncode == 0, p.stderr
    assert meta(run([SAMPO, "report", out]).stdout, "contexts_max") == "262144"


def test_no_recursion_folds_nothing():
    path = src("Flat", "    a = ( | s | s := 0. 1 to: 50 do: [ :i | s := s + i ]. ^ s )\n"
                       "    b = ( ^ self a + self a )\n"
                       "    c = ( ^ self b + self a )\n"
                       "    run = ( | s | s := 0. 1 to: 20000 do: [ :i | s := s + self c ].\n"
                       "        s println )")
    out = os.path.join(WORK, "flat.prof")
    p = run([SOM, "--jit=off", "--prof=async", "--prof-hz", "2000", "--prof-out", out, path])
    assert p.returncode == 0, p.stderr
    rep = run([SAMPO, "report", out]).stdout
    assert int(meta(rep, "samples") or 0) > 0, rep[:3000]
    assert meta(rep, "contexts_merged") == "0", rep[:3000]
    # (contexts_folded may be > 0: native samples of the compiler's recursion at start-up)
    flat = [(d, n) for d, n in tree(rep) if n.startswith("Flat>>")]
    assert flat and flat[0][1].startswith("Flat>>run"), flat
    top = flat[0][0]
    shape = {(d - top, n.split()[0]) for d, n in flat}
    assert shape == {(0, "Flat>>run"), (1, "Flat>>c"), (2, "Flat>>b"), (3, "Flat>>a"),
                     (2, "Flat>>a")}, flat
    assert len(flat) == 6, flat  # a under b from its two sites, a under c


FIB = ("    fib: n = ( n < 2 ifTrue: [ ^n ]. ^(self fib: n - 1) + (self fib: n - 2) )\n"
       "    run: args = ( (self fib: (args at: 2) asInteger) println )")


def test_async_and_exact_trees_alike():
    path = src("Fib", FIB)
    a, e = os.path.join(WORK, "fib-async.prof"), os.path.join(WORK, "fib-exact.prof")
    p = run([SOM, "--jit=off", "--prof=async", "--prof-hz", "4000", "--prof-out", a, path, "27"])
    assert p.returncode == 0, p.stderr
    p = run([SOM, "--prof=exact", "--prof-out", e, path, "20"])
    assert p.returncode == 0, p.stderr
    fa, fe = fib_stacks(a), fib_stacks(e)
    # `sampo report` folds recursion again for display, so the trees are compared through
    # the collapsed stacks of the contexts: fib: from run:, one context per recursive call
    # site under it, the other site below each - three fib: levels, not one per depth
    assert max(fe) == 3 and len(fe) == 3, fe
    assert fa <= fe and len(fa) >= 2, (fa, fe)


def fib_stacks(prof):
    return stack_depths(prof, "Fib>>fib:")


def stack_depths(prof, frame):
    """The set of nesting depths of frame in the profile's collapsed stacks (sampo report
    folds recursion again for display; the stacks show the contexts as written)."""
    p = run([SAMPO, "export", "--collapsed", prof, "-o", "-"])
    assert p.returncode == 0, p.stderr
    depths = set()
    for line in p.stdout.splitlines():
        n = line.rsplit(" ", 1)[0].split(";").count(frame)
        if n:
            depths.add(n)
    return depths


TESTS = [t for n, t in sorted(globals().items()) if n.startswith("test_")]


def main():
    names = sys.argv[5:]
    failed = 0
    for t in TESTS:
        if names and t.__name__ not in names and t.__name__[5:] not in names:
            continue
        try:
            t()
            print("PASS", t.__name__)
        except Exception as ex:  # report and go on
            failed += 1
            print("FAIL", t.__name__, "-", repr(ex)[:3000])
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
