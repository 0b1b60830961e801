#!/usr/bin/env python3
"""Runner for the SOM-level test suite in tests/som (python3 stdlib only).

A test is a .som class file that contains at least one expectation annotation
(helper classes contain none). Annotations are SOM comments, read in file order:

  "expect: TEXT"          next stdout line is exactly TEXT (one space after the
                          colon is dropped; the rest is literal; "expect:" = empty line)
  "expect-exit: N"        exit status N (default 0; 1 with expect-error or
                          expect-stderr); "nonzero" = any status != 0; "any" = any status
                          (a crash by signal or a timeout still fails)
  "expect-error: TEXT"    after the expect lines stdout shows an empty line and
                          "ERROR: TEXT" (the Object>>error: path) and the exit status is 1
  "expect-stderr: TEXT"   stderr contains TEXT (several allowed, all must occur)
  "expect-stderr-match: RE"  stderr matches the Python regular expression RE (re.search)
  "args: A B C"           extra program arguments after the class file
  "vm-args: A B"          extra VM options for this test (after the --vm-arg ones)
  "main: NAME"            start the VM with NAME (a bare class name) instead of the file path
  "classpath: d1:d2"      directories (relative to the test's directory) put first on -cp
  "timeout: SECONDS"      per-test timeout (default --timeout)
  "skip-gc-stress"        skipped when --gc-stress is among the VM arguments
  "stdout-prefix"         the expect lines need only be a prefix of stdout
  "expect-diagnostic"     the VM reported an error: non-empty stderr or an "ERROR:" stdout line
                          (for failures whose reporting path docs/language.md leaves open, e.g. stack overflow)

stdout must equal the expected lines exactly (no extra lines). A test killed by
a signal or a timeout always fails. Tests listed in known-failures.txt (path
relative to tests/som, then the reason) are run but reported as "known failure".

Usage: run_tests.py --som BIN [--vm-arg X]... [--som-flags "X Y"] [--jobs N] [--timeout S]
                    [paths...]

Extra VM options come from --vm-arg (one option each), --som-flags (a shell-quoted string of
options, e.g. --som-flags="--jit=eager --jit-deopt-stress=7") and the environment variable
SOM_FLAGS (same form); they are passed in that order, before each test's own "vm-args:".
"""
import argparse
import concurrent.futures
import difflib
import os
import re
import shlex
import signal
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ANNOT_RE = re.compile(
    r'"(expect|expect-exit|expect-error|expect-stderr|expect-stderr-match|args|classpath|'
    r'timeout|skip-gc-stress|main|vm-args|stdout-prefix|expect-diagnostic)(:[^"]*)?"')
IS_TEST_RE = re.compile(r'"expect(-exit|-error|-stderr|-stderr-match)?:|"expect-diagnostic"')


class Spec:
    def __init__(self):
        self.stdout = []
        self.exit = None
        self.error = None
        self.stderr = []
        self.stderr_re = []
        self.args = []
        self.vm_args = []
        self.classpath = []
        self.timeout = None
        self.skip_gc_stress = False
        self.main = None
        self.stdout_prefix = False
        self.diagnostic = False


def value_of(raw):
    """Text after the colon, minus one separating space."""
    if raw is None:
        return ''
    text = raw[1:]
    return text[1:] if text.startswith(' ') else text


def parse_spec(path):
    with open(path, 'rb') as f:
        src = f.read().decode('utf-8', 'surrogateescape')
    spec = Spec()
    for m in ANNOT_RE.finditer(src):
        kind, val = m.group(1), value_of(m.group(2))
        if kind == 'expect':
            spec.stdout.append(val)
        elif kind == 'expect-exit':
            spec.exit = val.strip()
        elif kind == 'expect-error':
            spec.error = val
        elif kind == 'expect-stderr':
            spec.stderr.append(val)
        elif kind == 'expect-stderr-match':
            spec.stderr_re.append(val)
        elif kind == 'vm-args':
            spec.vm_args = val.split()
        elif kind == 'args':
            spec.args = val.split()
        elif kind == 'classpath':
            spec.classpath = [d for d in val.strip().split(':') if d]
        elif kind == 'timeout':
            spec.timeout = float(val)
        elif kind == 'stdout-prefix':
            spec.stdout_prefix = True
        elif kind == 'expect-diagnostic':
            spec.diagnostic = True
        elif kind == 'main':
            spec.main = val.strip()
        elif kind == 'skip-gc-stress':
            spec.skip_gc_stress = True
    return spec


def find_tests(paths):
    found = []
    for p in paths:
        p = os.path.abspath(p)
        if os.path.isfile(p):
            found.append(p)
            continue
        for root, dirs, files in os.walk(p):
            dirs.sort()
            for name in sorted(files):
                if not name.endswith('.som'):
                    continue
                full = os.path.join(root, name)
                with open(full, 'rb') as f:
                    if IS_TEST_RE.search(f.read().decode('utf-8', 'surrogateescape')):
                        found.append(full)
    return found


def test_name(path):
    rel = os.path.relpath(path, HERE)
    return rel[:-4] if rel.endswith('.som') else rel


def load_known_failures(path):
    known = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith('#'):
                    continue
                parts = line.split(None, 1)
                name = parts[0][:-4] if parts[0].endswith('.som') else parts[0]
                known[name] = parts[1] if len(parts) > 1 else ''
    return known


def split_lines(data):
    text = data.decode('utf-8', 'replace')
    lines = text.split('\n')
    if lines and lines[-1] == '':
        lines.pop()
    return lines


def expected_exit(spec):
    if spec.exit is not None:
        return spec.exit
    if spec.error is not None or spec.stderr or spec.stderr_re:
        return '1'
    if spec.diagnostic:
        return 'nonzero'
    return '0'


def check(spec, rc, out, err):
    """Returns a list of problem descriptions (empty = pass)."""
    problems = []
    if rc < 0:
        try:
            signame = signal.Signals(-rc).name
        except ValueError:
            signame = str(-rc)
        problems.append('killed by signal %s' % signame)
    want_exit = expected_exit(spec)
    if want_exit == 'any':
        pass
    elif want_exit == 'nonzero':
        if rc == 0:
            problems.append('exit status 0, expected non-zero')
    elif str(rc) != want_exit:
        problems.append('exit status %d, expected %s' % (rc, want_exit))
    want_out = list(spec.stdout)
    if spec.error is not None:
        want_out += ['', 'ERROR: ' + spec.error]
    got_out = split_lines(out)
    if spec.stdout_prefix:
        got_cmp = got_out[:len(want_out)]
    else:
        got_cmp = got_out
    if got_cmp != want_out:
        diff = difflib.unified_diff(want_out, got_out, 'expected stdout', 'actual stdout',
                                    lineterm='', n=2)
        problems.append('stdout differs:\n' + '\n'.join('    ' + l for l in list(diff)[:60]))
    err_text = err.decode('utf-8', 'replace')
    if spec.diagnostic and not err_text.strip() and not any(
            l.startswith('ERROR:') for l in got_out[len(spec.stdout):]):
        problems.append('no error report (stderr empty and no ERROR: line on stdout)')
    for s in spec.stderr:
        if s not in err_text:
            problems.append('stderr lacks %r' % s)
    for r in spec.stderr_re:
        if not re.search(r, err_text):
            problems.append('stderr does not match /%s/' % r)
    if problems and err_text.strip() and not (spec.stderr or spec.stderr_re):
        tail = err_text.strip().splitlines()[-8:]
        problems.append('stderr was:\n' + '\n'.join('    ' + l for l in tail))
    elif problems and (spec.stderr or spec.stderr_re):
        tail = err_text.strip().splitlines()[-8:]
        problems.append('stderr was:\n' + '\n'.join('    ' + l for l in tail))
    return problems


def run_one(path, opts):
    spec = parse_spec(path)
    if spec.skip_gc_stress and '--gc-stress' in opts.vm_arg:
        return 'skip', []
    tdir = os.path.dirname(path)
    cp = [os.path.join(tdir, d) for d in spec.classpath] + [tdir]
    cmd = [opts.som] + opts.vm_arg + spec.vm_args + ['-cp', ':'.join(cp), spec.main or path] + spec.args
    timeout = (spec.timeout or opts.timeout) * opts.timeout_scale
    try:
        proc = subprocess.run(cmd, cwd=tdir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 'fail', ['timed out after %gs' % timeout]
    except OSError as e:
        return 'fail', ['cannot run %s: %s' % (opts.som, e)]
    problems = check(spec, proc.returncode, proc.stdout, proc.stderr)
    return ('fail' if problems else 'pass'), problems


def main():
    ap = argparse.ArgumentParser(description='Run the annotated SOM test files.')
    ap.add_argument('--som', required=True, help='path to the som binary')
    ap.add_argument('--vm-arg', action='append', default=[], help='extra VM option (repeatable)')
    ap.add_argument('--som-flags', default='',
                    help='extra VM options as one shell-quoted string (also env SOM_FLAGS)')
    ap.add_argument('--jobs', '-j', type=int, default=os.cpu_count() or 1)
    ap.add_argument('--timeout', type=float, default=30.0, help='default per-test timeout (s)')
    ap.add_argument('--timeout-scale', type=float, default=1.0,
                    help='multiply every timeout (e.g. under --gc-stress or ASan)')
    ap.add_argument('--known-failures', default=os.path.join(HERE, 'known-failures.txt'))
    ap.add_argument('--no-known-failures', action='store_true',
                    help='treat listed known failures as ordinary tests')
    ap.add_argument('-v', '--verbose', action='store_true', help='also list passing tests')
    ap.add_argument('paths', nargs='*')
    opts = ap.parse_args()
    opts.som = os.path.abspath(opts.som) if os.sep in opts.som else opts.som
    # Arguments like "--vm-arg=--gc-stress" arrive fine; "--vm-arg --gc-stress" too.
    opts.vm_arg += shlex.split(opts.som_flags) + shlex.split(os.environ.get('SOM_FLAGS', ''))

    tests = find_tests(opts.paths or [HERE])
    if not tests:
        print('no tests found')
        return 1
    known = {} if opts.no_known_failures else load_known_failures(opts.known_failures)
    counts = {'pass': 0, 'fail': 0, 'known': 0, 'skip': 0}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        futures = [(t, pool.submit(run_one, t, opts)) for t in tests]
        for path, fut in futures:
            name = test_name(path)
            status, problems = fut.result()
            if name in known:
                if status == 'fail':
                    counts['known'] += 1
                    print('known failure: %s (%s)' % (name, known[name]))
                    continue
                if status == 'pass':
                    print('note: %s is listed as a known failure but passes' % name)
            counts[status] += 1
            if status == 'fail':
                print('FAIL %s: %s' % (name, '\n  '.join(problems)))
            elif opts.verbose:
                print('%s %s' % ('ok  ' if status == 'pass' else 'skip', name))
    extra = []
    if counts['known']:
        extra.append('%d known failures' % counts['known'])
    if counts['skip']:
        extra.append('%d skipped' % counts['skip'])
    print('%d passed, %d failed%s' % (counts['pass'], counts['fail'],
                                      ' (%s)' % ', '.join(extra) if extra else ''))
    return 1 if counts['fail'] else 0


if __name__ == '__main__':
    sys.exit(main())
