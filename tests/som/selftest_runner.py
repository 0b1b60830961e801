#!/usr/bin/env python3
"""Self-test of the test runners (no VM needed): run_tests.py must reject wrong output, wrong
exit status, crashes and missing diagnostics, and accept exactly matching runs; the
IntegrationTests matcher (tests/conformance/run_integration.py) must follow docs/testing.md."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, '..', 'conformance'))
import run_tests  # noqa: E402
import run_integration  # noqa: E402

# A stand-in VM: prints $FAKE_OUT to stdout, $FAKE_ERR to stderr, exits with $FAKE_RC
# (a negative value kills itself with that signal).
FAKE_VM = r'''#!/usr/bin/env python3
import os, sys, signal
sys.stdout.write(os.environ.get('FAKE_OUT', '').replace('|', '\n'))
sys.stderr.write(os.environ.get('FAKE_ERR', ''))
sys.stdout.flush(); sys.stderr.flush()
rc = int(os.environ.get('FAKE_RC', '0'))
if rc < 0:
    os.kill(os.getpid(), -rc)
sys.exit(rc)
'''


class RunnerVerdicts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix='som-selftest-')
        cls.vm = os.path.join(cls.dir, 'fakesom')
        with open(cls.vm, 'w') as f:
            f.write(FAKE_VM)
        os.chmod(cls.vm, 0o755)

    def verdict(self, test_src, out='', err='', rc=0, vm_args=()):
        path = os.path.join(self.dir, 'case.som')
        with open(path, 'w') as f:
            f.write(test_src)
        env = dict(os.environ, FAKE_OUT=out, FAKE_ERR=err, FAKE_RC=str(rc))
        cmd = [sys.executable, os.path.join(HERE, 'run_tests.py'), '--som', self.vm,
               '--no-known-failures'] + ['--vm-arg=' + a for a in vm_args] + [path]
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        text = proc.stdout.decode()
        if '1 passed, 0 failed' in text or '0 passed, 0 failed (1 skipped)' in text:
            self.assertEqual(proc.returncode, 0, text)
            return 'skip' if 'skipped' in text else 'pass'
        self.assertEqual(proc.returncode, 1, text)
        return 'fail'

    def test_exact_stdout(self):
        src = 'T = ( run = ( ) )\n"expect: a"\n"expect: b"\n'
        self.assertEqual(self.verdict(src, out='a|b|'), 'pass')
        self.assertEqual(self.verdict(src, out='a|'), 'fail')
        self.assertEqual(self.verdict(src, out='a|b|c|'), 'fail')
        self.assertEqual(self.verdict(src, out='b|a|'), 'fail')
        self.assertEqual(self.verdict(src, out='a|b|', rc=1), 'fail')

    def test_empty_expect_line(self):
        src = 'T = ( )\n"expect: "\n"expect: x"\n'
        self.assertEqual(self.verdict(src, out='|x|'), 'pass')
        self.assertEqual(self.verdict(src, out='x|'), 'fail')

    def test_expect_error(self):
        src = 'T = ( )\n"expect: before"\n"expect-error: boom"\n'
        self.assertEqual(self.verdict(src, out='before||ERROR: boom|', rc=1), 'pass')
        self.assertEqual(self.verdict(src, out='before||ERROR: boom|', rc=0), 'fail')
        self.assertEqual(self.verdict(src, out='before|ERROR: boom|', rc=1), 'fail')
        self.assertEqual(self.verdict(src, out='before||ERROR: other|', rc=1), 'fail')

    def test_exit_and_stderr(self):
        src = 'T = ( )\n"expect-exit: 42"\n'
        self.assertEqual(self.verdict(src, rc=42), 'pass')
        self.assertEqual(self.verdict(src, rc=1), 'fail')
        src = 'T = ( )\n"expect-stderr-match: T\\.som:3:\\d+:"\n'
        self.assertEqual(self.verdict(src, err='x/T.som:3:7: expected', rc=1), 'pass')
        self.assertEqual(self.verdict(src, err='x/T.som:4:7: expected', rc=1), 'fail')
        self.assertEqual(self.verdict(src, err='', rc=1), 'fail')

    def test_crash_never_passes(self):
        src = 'T = ( )\n"expect-exit: nonzero"\n"stdout-prefix"\n"expect-diagnostic"\n'
        self.assertEqual(self.verdict(src, err='stack overflow', rc=1), 'pass')
        self.assertEqual(self.verdict(src, out='|ERROR: deep|', rc=1), 'pass')
        self.assertEqual(self.verdict(src, rc=1), 'fail')
        self.assertEqual(self.verdict(src, err='x', rc=-11), 'fail')
        self.assertEqual(self.verdict(src, err='x', rc=0), 'fail')

    def test_skip_gc_stress(self):
        src = 'T = ( )\n"skip-gc-stress"\n"expect: a"\n'
        self.assertEqual(self.verdict(src, out='zzz', vm_args=['--gc-stress']), 'skip')
        self.assertEqual(self.verdict(src, out='zzz'), 'fail')

    def test_annotation_parsing(self):
        path = os.path.join(self.dir, 'parse.som')
        with open(path, 'w') as f:
            f.write('"args: a -b"\n"main: Foo"\n"classpath: x:y"\nT = ( )\n"expect:  two spaces"\n')
        spec = run_tests.parse_spec(path)
        self.assertEqual(spec.args, ['a', '-b'])
        self.assertEqual(spec.main, 'Foo')
        self.assertEqual(spec.classpath, ['x', 'y'])
        self.assertEqual(spec.stdout, [' two spaces'])


class IntegrationMatching(unittest.TestCase):
    m = staticmethod(run_integration.stream_matches)

    def test_order_and_interleaving(self):
        self.assertTrue(self.m(['a', 'b'], 'x\na\ny\nb\n'))
        self.assertFalse(self.m(['a', 'b'], 'b\na\n'))
        self.assertTrue(self.m([], 'anything'))

    def test_ellipsis_line_consumes_a_line(self):
        self.assertFalse(self.m(['...', 'division by zero.'], 'division by zero.\n'))
        self.assertTrue(self.m(['...', 'division by zero.'], 'traceback\ndivision by zero.\n'))

    def test_fragments_and_stars(self):
        self.assertTrue(self.m(['foo...bar'], 'xx foo 1 bar\n'))
        self.assertTrue(self.m(['1.0***0000001'], '1.000\n'))
        self.assertTrue(self.m(['1.0***0000001'], '1.00000001\n'))
        self.assertFalse(self.m(['1.0***0000001'], '1.00000011\n'))


if __name__ == '__main__':
    unittest.main(verbosity=1)
