#!/usr/bin/env python3
"""Runs annotated SOM test programs (tests/jit, tests/som, or any directory in the format of
tests/som/run_tests.py) in the execution modes of the JIT, and compares stdout, stderr and
exit status with the annotations, which hold what the interpreter does (python3 stdlib only).

Modes (MODES below is the one table of them; ctest passes only mode names):

  interp      no flag at all: the build's default (the interpreter before the JIT exists,
              --jit=on after)
  off         --jit=off
  on          --jit=on                    (profile-driven: compiles what gets hot)
  eager       --jit=eager                 (compiles every method at its first call)
  stressN     --jit=eager --jit-deopt-stress=N   (guards fail at random, seed N)
  gc-eager    --gc-stress --jit=eager     (tests marked "skip-gc-stress" are skipped)
  gc-stressN  --gc-stress --jit=eager --jit-deopt-stress=N

Further VM options come from --som-flags="..." and the environment variable SOM_FLAGS
(shell-quoted strings), after the mode's flags. --require-stderr-match RE adds a regular
expression every run's stderr must match (e.g. with --som-flags=--jit-stats, that the JIT
reported compiled methods); the expected exit status of each test is kept.

Known failures: tests/jit/known-failures.txt (or --known-failures FILE), lines `MODE-GLOB NAME REASON`, NAME relative
to tests/ (jit/recursion, som/nlr/nlr_basic), MODE-GLOB an fnmatch pattern (stress*, *);
tests under tests/som also honour tests/som/known-failures.txt in every mode. A listed test
that fails is reported as a known failure; one that passes is noted.

Usage:
  run_jit_tests.py --som BIN [--mode M]... [--stress-seeds A-B] [--som-flags="..."] [--jobs N]
                   [--timeout-scale X] [-v] [paths...]
  run_jit_tests.py --list-modes | --mode-flags MODE
Default paths: tests/jit; default modes: off on eager stress1 stress2 stress3 gc-eager.
Exit status 0 iff no test failed in any mode.
"""
import argparse
import concurrent.futures
import fnmatch
import os
import re
import shlex
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TESTS, 'som'))
import run_tests  # noqa: E402  (tests/som/run_tests.py: annotations, checks, one run)

DEFAULT_MODES = ['off', 'on', 'eager', 'stress1', 'stress2', 'stress3', 'gc-eager']

# mode -> (VM flags, timeout factor). The factors leave room for compilation (eager compiles
# every method called, with LLVM) and for --gc-stress (a collection at every allocation).
MODES = {
    'interp': ([], 1),
    'off': (['--jit=off'], 1),
    'on': (['--jit=on'], 2),
    'eager': (['--jit=eager'], 3),
    'gc-eager': (['--gc-stress', '--jit=eager'], 8),
}
STRESS_RE = re.compile(r'^(gc-)?stress(\d+)$')


def mode_flags(mode):
    """Answers (flags, timeout factor) of a mode name, or None if unknown."""
    if mode in MODES:
        return MODES[mode]
    m = STRESS_RE.match(mode)
    if not m:
        return None
    flags = ['--jit=eager', '--jit-deopt-stress=%s' % m.group(2)]
    if m.group(1):
        return ['--gc-stress'] + flags, 8
    return flags, 3


def test_name(path):
    """The name of a test: its path relative to tests/, without .som."""
    rel = os.path.relpath(path, TESTS)
    return rel[:-4] if rel.endswith('.som') else rel


def load_known(path, no_known):
    """Answers a list of (mode glob, name, reason)."""
    known = []
    if no_known:
        return known
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith('#'):
                    continue
                parts = line.split(None, 2)
                if len(parts) < 2:
                    continue
                name = parts[1][:-4] if parts[1].endswith('.som') else parts[1]
                known.append((parts[0], name, parts[2] if len(parts) > 2 else ''))
    for name, reason in run_tests.load_known_failures(
            os.path.join(TESTS, 'som', 'known-failures.txt')).items():
        known.append(('*', 'som/' + name, reason))
    return known


def known_reason(known, mode, name):
    for glob, kname, reason in known:
        if kname == name and fnmatch.fnmatchcase(mode, glob):
            return reason
    return None


def install_stderr_requirement(patterns):
    """Makes every parsed spec also require PATTERNS on stderr, keeping its exit status."""
    if not patterns:
        return
    original = run_tests.parse_spec

    def parse_spec(path):
        spec = original(path)
        spec.exit = run_tests.expected_exit(spec)
        spec.stderr_re = spec.stderr_re + list(patterns)
        return spec
    run_tests.parse_spec = parse_spec


def run_mode(mode, tests, opts, known):
    flags, factor = mode_flags(mode)
    ropts = types.SimpleNamespace(
        som=opts.som, vm_arg=flags + opts.extra, timeout=opts.timeout,
        timeout_scale=opts.timeout_scale * factor)
    counts = {'pass': 0, 'fail': 0, 'known': 0, 'skip': 0}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        futures = [(t, pool.submit(run_tests.run_one, t, ropts)) for t in tests]
        for path, fut in futures:
            name = test_name(path)
            status, problems = fut.result()
            reason = known_reason(known, mode, name)
            if reason is not None:
                if status == 'fail':
                    counts['known'] += 1
                    print('known failure [%s] %s (%s)' % (mode, name, reason))
                    continue
                if status == 'pass':
                    print('note: [%s] %s is listed as a known failure but passes' % (mode, name))
            counts[status] += 1
            if status == 'fail':
                print('FAIL [%s] %s: %s' % (mode, name, '\n  '.join(problems)))
            elif opts.verbose:
                print('%s [%s] %s' % ('ok  ' if status == 'pass' else 'skip', mode, name))
    extra = []
    if counts['known']:
        extra.append('%d known failures' % counts['known'])
    if counts['skip']:
        extra.append('%d skipped' % counts['skip'])
    print('mode %-10s %s: %d passed, %d failed%s'
          % (mode, ' '.join(flags + opts.extra) or '(no flags)', counts['pass'], counts['fail'],
             ' (%s)' % ', '.join(extra) if extra else ''))
    return counts


def main(argv):
    ap = argparse.ArgumentParser(
        description=__doc__.split('\n\n')[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split('\n\n', 1)[1])
    ap.add_argument('--som', help='path to the som binary')
    ap.add_argument('--mode', action='append', help='execution mode (repeatable; see above)')
    ap.add_argument('--stress-seeds', metavar='A-B',
                    help='add the modes stressA ... stressB (a deopt-stress soak run)')
    ap.add_argument('--som-flags', default='',
                    help='extra VM options, one shell-quoted string (also env SOM_FLAGS)')
    ap.add_argument('--require-stderr-match', action='append', default=[], metavar='RE',
                    help='every run\'s stderr must match RE (repeatable)')
    ap.add_argument('--jobs', '-j', type=int, default=os.cpu_count() or 1)
    ap.add_argument('--timeout', type=float, default=30.0, help='default per-test timeout (s)')
    ap.add_argument('--timeout-scale', type=float, default=1.0,
                    help='multiplies every timeout (ASan builds), on top of the mode\'s factor')
    ap.add_argument('--known-failures', default=os.path.join(HERE, 'known-failures.txt'),
                    help='MODE-GLOB NAME REASON lines (default tests/jit/known-failures.txt)')
    ap.add_argument('--no-known-failures', action='store_true')
    ap.add_argument('--list-modes', action='store_true', help='print the modes and exit')
    ap.add_argument('--mode-flags', metavar='MODE',
                    help='print the VM flags of MODE (one line) and exit (for shell scripts)')
    ap.add_argument('-v', '--verbose', action='store_true', help='also list passing tests')
    ap.add_argument('paths', nargs='*')
    opts = ap.parse_args(argv)
    if opts.list_modes:
        for mode in list(MODES) + ['stressN', 'gc-stressN']:
            flags, factor = mode_flags(mode.replace('N', '1'))
            print('%-11s %-50s timeout x%d' % (mode, ' '.join(flags).replace('=1', '=N')
                                                if 'N' in mode else ' '.join(flags) or '(none)',
                                                factor))
        return 0
    if opts.mode_flags:
        mf = mode_flags(opts.mode_flags)
        if mf is None:
            print('unknown mode %r' % opts.mode_flags, file=sys.stderr)
            return 2
        print(' '.join(mf[0]))
        return 0
    if not opts.som:
        ap.error('--som is required')
    opts.som = os.path.abspath(opts.som) if os.sep in opts.som else opts.som
    opts.extra = shlex.split(opts.som_flags) + shlex.split(os.environ.get('SOM_FLAGS', ''))
    modes = opts.mode or ([] if opts.stress_seeds else DEFAULT_MODES)
    modes = [m for part in modes for m in part.split(',') if m]
    if opts.stress_seeds:  # a soak run: eager + deopt stress with many seeds
        lo, _, hi = opts.stress_seeds.partition('-')
        if not lo.isdigit() or not (hi or lo).isdigit():
            ap.error('--stress-seeds expects A-B, got %r' % opts.stress_seeds)
        modes += ['stress%d' % k for k in range(int(lo), int(hi or lo) + 1)]
    for m in modes:
        if mode_flags(m) is None:
            ap.error('unknown mode %r (known: %s, stressN, gc-stressN)' % (m, ', '.join(MODES)))
    install_stderr_requirement(opts.require_stderr_match)
    tests = run_tests.find_tests(opts.paths or [HERE])
    if not tests:
        print('no tests found')
        return 1
    known = load_known(opts.known_failures, opts.no_known_failures)
    failed = 0
    for mode in modes:
        failed += run_mode(mode, tests, opts, known)['fail']
    if len(modes) > 1:
        print('%d modes, %s' % (len(modes), 'all passed' if not failed else
                                '%d failures in all' % failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
