#!/usr/bin/env python3
"""Self-test of run_jit_tests.py (no VM needed): each mode passes its flags, extra flags
from --som-flags and SOM_FLAGS follow them, wrong output in one mode fails the run, known
failures match by mode glob, --require-stderr-match applies to every run and keeps the
expected exit status, gc modes skip "skip-gc-stress" tests, unknown modes are refused."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, 'run_jit_tests.py')

# A stand-in VM: appends its arguments (up to -cp) to $FAKE_LOG, prints $FAKE_OUT, or
# $FAKE_OUT_<flag> when that flag is given (its non-word characters as _, e.g.
# FAKE_OUT___jit_deopt_stress_2 for --jit-deopt-stress=2), to stdout,
# $FAKE_ERR to stderr, and exits with $FAKE_RC.
FAKE_VM = r'''#!/usr/bin/env python3
import os, re, sys
args = sys.argv[1:sys.argv.index('-cp')]
with open(os.environ['FAKE_LOG'], 'a') as f:
    f.write(' '.join(args) + '\n')
out = os.environ.get('FAKE_OUT', '')
for a in args:
    out = os.environ.get('FAKE_OUT_' + re.sub(r'\W', '_', a), out)
sys.stdout.write(out.replace('|', '\n'))
sys.stderr.write(os.environ.get('FAKE_ERR', ''))
sys.exit(int(os.environ.get('FAKE_RC', '0')))
'''


class JitRunner(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='jit-selftest-')
        self.vm = os.path.join(self.dir, 'fakesom')
        with open(self.vm, 'w') as f:
            f.write(FAKE_VM)
        os.chmod(self.vm, 0o755)
        self.log = os.path.join(self.dir, 'log')
        self.test = os.path.join(self.dir, 'case.som')
        self.write('case = ( run = ( ) )\n"expect: a"\n"expect: b"\n')

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, src):
        with open(self.test, 'w') as f:
            f.write(src)

    def run_runner(self, args, **env):
        full = dict(os.environ, FAKE_LOG=self.log, FAKE_OUT='a|b|')
        full.pop('SOM_FLAGS', None)
        full.update(env)
        if os.path.exists(self.log):
            os.remove(self.log)
        proc = subprocess.run([sys.executable, RUNNER, '--som', self.vm, '--jobs', '1'] + args
                              + [self.test], env=full, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
        calls = []
        if os.path.exists(self.log):
            with open(self.log) as f:
                calls = [line.rstrip('\n') for line in f]
        return proc.returncode, proc.stdout.decode(), calls

    def test_mode_flags(self):
        rc, out, calls = self.run_runner(['--mode', 'off,on,eager,stress7,gc-eager,gc-stress2,interp'])
        self.assertEqual(rc, 0, out)
        self.assertEqual(calls, ['--jit=off', '--jit=on', '--jit=eager',
                                 '--jit=eager --jit-deopt-stress=7', '--gc-stress --jit=eager',
                                 '--gc-stress --jit=eager --jit-deopt-stress=2', ''])
        self.assertIn('7 modes, all passed', out)

    def test_default_modes(self):
        rc, out, calls = self.run_runner([])
        self.assertEqual(rc, 0, out)
        self.assertEqual(len(calls), 7)
        self.assertEqual(calls[3], '--jit=eager --jit-deopt-stress=1')

    def test_extra_flags_follow_mode_flags(self):
        rc, out, calls = self.run_runner(['--mode', 'eager', '--som-flags=--jit-stats -g'],
                                         SOM_FLAGS='--threads 2')
        self.assertEqual(rc, 0, out)
        self.assertEqual(calls, ['--jit=eager --jit-stats -g --threads 2'])

    def test_failure_in_one_mode_fails(self):
        rc, out, _ = self.run_runner(['--mode', 'off,stress2'],
                                     FAKE_OUT___jit_deopt_stress_2='a|c|')
        self.assertEqual(rc, 1, out)
        self.assertIn('FAIL [stress2]', out)
        self.assertNotIn('FAIL [off]', out)
        rc, out, _ = self.run_runner(['--mode', 'eager'], FAKE_RC='3')
        self.assertEqual(rc, 1, out)

    def test_known_failures_by_mode_glob(self):
        known = os.path.join(self.dir, 'known.txt')
        name = os.path.relpath(self.test, os.path.dirname(HERE))[:-4]
        with open(known, 'w') as f:
            f.write('# comment\nstress* %s selftest entry\n' % name)
        args = ['--known-failures', known]
        rc, out, _ = self.run_runner(args + ['--mode', 'stress4'],
                                     FAKE_OUT___jit_deopt_stress_4='wrong|')
        self.assertEqual(rc, 0, out)
        self.assertIn('known failure [stress4]', out)
        rc, out, _ = self.run_runner(args + ['--mode', 'eager'], FAKE_OUT='wrong|')
        self.assertEqual(rc, 1, out)
        rc, out, _ = self.run_runner(args + ['--mode', 'stress1'])
        self.assertEqual(rc, 0, out)
        self.assertIn('is listed as a known failure but passes', out)

    def test_require_stderr_match(self):
        args = ['--mode', 'eager', '--require-stderr-match', r'compiled\D*[1-9]']
        rc, out, _ = self.run_runner(args, FAKE_ERR='jit: methods compiled: 12\n')
        self.assertEqual(rc, 0, out)
        rc, out, _ = self.run_runner(args, FAKE_ERR='jit: methods compiled: 0\n')
        self.assertEqual(rc, 1, out)
        # the expected exit status stays the test's own (0 here), not 1 as for
        # an "expect-stderr-match:" annotation
        rc, out, _ = self.run_runner(args, FAKE_ERR='compiled 3', FAKE_RC='1')
        self.assertEqual(rc, 1, out)

    def test_gc_modes_skip_marked_tests(self):
        self.write('case = ( run = ( ) )\n"skip-gc-stress"\n"expect: a"\n"expect: b"\n')
        rc, out, calls = self.run_runner(['--mode', 'gc-eager,eager'])
        self.assertEqual(rc, 0, out)
        self.assertEqual(calls, ['--jit=eager'])
        self.assertIn('1 skipped', out)

    def test_stress_seeds(self):
        rc, out, calls = self.run_runner(['--stress-seeds', '4-6'])
        self.assertEqual(rc, 0, out)
        self.assertEqual(calls, ['--jit=eager --jit-deopt-stress=%d' % k for k in (4, 5, 6)])

    def test_unknown_mode(self):
        rc, out, _ = self.run_runner(['--mode', 'turbo'])
        self.assertNotEqual(rc, 0, out)
        self.assertIn('unknown mode', out)


if __name__ == '__main__':
    unittest.main()
