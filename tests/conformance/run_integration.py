#!/usr/bin/env python3
"""Runs the standard SOM IntegrationTests (IntegrationTests/Tests/**/*.som) as docs/testing.md describes.

The tests are not part of this repository: --som-repo names a checkout of the public SOM
repository (git clone --depth 1 https://github.com/SOM-st/SOM), which holds IntegrationTests/,
Smalltalk/ and Examples/AreWeFastYet/.

A test is a .som file whose first comment contains "VM:". Its header gives optional
custom_classpath / case_sensitive options and the expected stdout / stderr lines.
Each test runs as `$VM -cp $CLASSPATH core-lib/IntegrationTests/Tests/<name>.som`
through a shell, from a scratch directory in which core-lib links to the SOM
repository (load_file.som reads core-lib/IntegrationTests/Tests/hello_world1.som).
--lib std uses CLASSPATH=core-lib/Smalltalk; --lib ours uses an empty directory so the
VM's built-in core library is used. @NAME components of custom_classpath are replaced
by environment variables: AWFY (the AWFY Core directory) and CLASSPATH.

Matching (docs/testing.md): expected lines are stripped, empty ones dropped, and
lower-cased unless case_sensitive is True; the actual stream is split at newlines and
walked once with a pointer into the expected lines. stdout and stderr are matched
independently and both must match. The exit status is not checked.

known-failures.txt (next to this script, shared with scripts/conformance.sh): one entry per
line, `[lib:]integration/<name> reason` (lib = ours or std); other parts' entries are
ignored here. A listed test that fails is reported as "known failure", one that passes as
"fixed" (not an error). Exit status 1 iff an unlisted test failed.
"""
import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# The 96 tests that the reference C++ VM's expectations do not classify as unspecified or
# unsupported (docs/testing.md): the practical core of the suite.
CORE_TESTS = set("""
basic_arrays binary_super/test block_1 block_2 block_3 block_4 block_5 block_6
block_7 block_8 block_9 block_10 block_11 block_12 bool1 bool2 bool3 bool4
bool5 call1 class_load/test class_methods_fields class_names class_superclass
double10 empty_block empty_method error errorprint errorprintln escaped1
escaped2 escaped3 exit_int fast_integer_comparisons fib fromstring fullgc
hashcode hashcode2 hello_world1 hello_world2 inst_var_at inst_var_at_put
inst_var_at_put_superclass/test instance_fields instance_var_in_block
instance_vars1 instance_vars_subclass/test int1 int2 int3 int6 int7 int18
int32 is_digits is_whitespace keyword_super/test lexical_super/test load_file
metaclasses method1 method2 method_holder methods obj1
objects_evaluate_to_themselves perform perform_in_superclass
perform_in_superclass_with_args perform_witharguments positive_infinity
remainder str_escapes string_equal_nonstring substring_err super_var symbol1
system1 system_global_unset_global ticks unassigned_inst_var unassigned_var
unknown_global_lookup unknown_method unknown_method_with_args
unknown_method_with_cache vars_in_nested_blocks vector_awfy vector_awfy2
vector_awfy_capacity vector_core_atput_err vector_core_err while1 while2
""".split())


def first_comment(text):
    parts = text.split('"')
    return parts[1] if len(parts) > 2 else None


def block_lines(text):
    return [line.strip() for line in text.split('\n') if line.strip()]


def parse_header(path):
    """Returns a dict with stdout, stderr, custom_classpath, case_sensitive, or None."""
    with open(path, encoding='utf-8', errors='surrogateescape') as f:
        comment = first_comment(f.read())
    if comment is None or 'VM:' not in comment:
        return None
    test = {'stdout': [], 'stderr': [], 'custom_classpath': None, 'case_sensitive': False,
            'status': None}
    # Options precede the stdout/stderr blocks.
    cut = len(comment)
    for key in ('stdout:', 'stderr:'):
        if key in comment:
            cut = min(cut, comment.index(key))
    for line in comment[:cut].split('\n'):
        line = line.strip()
        if line.startswith('custom_classpath:'):
            test['custom_classpath'] = line.split(':', 1)[1].strip()
        elif line.startswith('case_sensitive:'):
            test['case_sensitive'] = line.split(':', 1)[1].strip().lower() == 'true'
        elif line.startswith('status:'):
            test['status'] = line.split(':', 1)[1].strip()
    if 'stdout:' in comment:
        out = comment.split('stdout:', 1)[1]
        if 'stderr:' in out:
            out = out[:out.index('stderr:')]
        test['stdout'] = block_lines(out)
    if 'stderr:' in comment:
        err = comment.split('stderr:', 1)[1]
        if 'stdout:' in err:
            err = err[:err.index('stdout:')]
        test['stderr'] = block_lines(err)
    if not test['case_sensitive']:
        test['stdout'] = [s.lower() for s in test['stdout']]
        test['stderr'] = [s.lower() for s in test['stderr']]
    return test


def star_match(expected, actual):
    """`pre***post`: pre occurs in the line and the rest of the line is a prefix of post."""
    pre, post = expected.split('***', 1)
    start = actual.find(pre)
    while start >= 0:
        rest = actual[start + len(pre):]
        if post.startswith(rest):
            return True
        start = actual.find(pre, start + 1)
    return False


def stream_matches(expected, actual_text):
    actual_lines = actual_text.split('\n')
    i = 0
    for line in actual_lines:
        if i >= len(expected):
            break
        exp = expected[i]
        if exp == '...':
            i += 1
        elif '***' in exp:
            if star_match(exp, line):
                i += 1
        elif line.strip() == exp:
            i += 1
        elif '...' in exp and all(frag in line for frag in exp.split('...')):
            i += 1
    return i == len(expected)


def find_tests(tests_dir):
    found = []
    for root, dirs, files in os.walk(tests_dir):
        dirs.sort()
        for name in sorted(files):
            if name.endswith('.som'):
                path = os.path.join(root, name)
                header = parse_header(path)
                if header is not None:
                    rel = os.path.relpath(path, tests_dir)[:-4]
                    found.append((rel, header))
    return found


def load_known(path, lib):
    known = {}
    if not os.path.exists(path):
        return known
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            parts = line.split(None, 1)
            name, reason = parts[0], parts[1] if len(parts) > 1 else ''
            colon, slash = name.find(':'), name.find('/')
            if 0 <= colon < slash:
                which, name = name.split(':', 1)
                if which != lib:
                    continue
            if name.startswith('integration/'):
                known[name[len('integration/'):]] = reason
    return known


def run_test(name, header, opts, scratch, env):
    classpath = env['CLASSPATH']
    if header['custom_classpath']:
        parts = []
        for comp in header['custom_classpath'].split(':'):
            parts.append(env.get(comp[1:], '') if comp.startswith('@') else comp)
        classpath = ':'.join(parts)
    test_path = 'core-lib/IntegrationTests/Tests/%s.som' % name
    command = '%s %s -cp %s %s' % (opts.som, opts.vm_args, classpath, test_path)
    try:
        proc = subprocess.run(command, shell=True, cwd=scratch, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=opts.timeout)
        out = proc.stdout.decode('utf-8', 'replace')
        err = proc.stderr.decode('utf-8', 'replace')
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        return False, 'timed out after %gs' % opts.timeout, command
    if not header['case_sensitive']:
        out, err = out.lower(), err.lower()
    ok_out = stream_matches(header['stdout'], out)
    ok_err = stream_matches(header['stderr'], err)
    if ok_out and ok_err:
        return True, '', command
    detail = []
    if not ok_out:
        detail.append('stdout expected %r, got %r' % (header['stdout'], out[:400]))
    if not ok_err:
        detail.append('stderr expected %r, got %r' % (header['stderr'], err[:400]))
    detail.append('exit status %d' % rc)
    return False, '; '.join(detail), command


def main():
    ap = argparse.ArgumentParser(description='Run the standard SOM IntegrationTests.')
    ap.add_argument('--som', required=True)
    ap.add_argument('--som-repo', '--somref', dest='somref', required=True,
                    help='checkout of https://github.com/SOM-st/SOM')
    ap.add_argument('--lib', choices=['ours', 'std'], default='std')
    ap.add_argument('--known-failures', default=os.path.join(HERE, 'known-failures.txt'))
    ap.add_argument('--vm-args', default='', help='extra VM options, e.g. --gc-stress')
    ap.add_argument('--timeout', type=float, default=60.0)
    ap.add_argument('--jobs', '-j', type=int, default=os.cpu_count() or 1)
    ap.add_argument('-v', '--verbose', action='store_true')
    ap.add_argument('names', nargs='*', help='only these tests (e.g. int1 binary_super/test)')
    opts = ap.parse_args()
    opts.som = os.path.abspath(opts.som)
    somref = os.path.abspath(opts.somref)
    tests_dir = os.path.join(somref, 'IntegrationTests', 'Tests')
    if not os.path.isdir(tests_dir):
        print('no IntegrationTests in %s' % somref)
        return 2

    scratch = tempfile.mkdtemp(prefix='som-integration-')
    try:
        os.symlink(somref, os.path.join(scratch, 'core-lib'))
        os.mkdir(os.path.join(scratch, 'empty'))
        env = dict(os.environ)
        env['CLASSPATH'] = {'std': 'core-lib/Smalltalk',
                            'ours': 'empty'}[opts.lib]
        env['AWFY'] = 'core-lib/Examples/AreWeFastYet/Core'
        tests = find_tests(tests_dir)
        if opts.names:
            tests = [t for t in tests if t[0] in opts.names]
        known = load_known(opts.known_failures, opts.lib)
        counts = {'pass': 0, 'fail': 0, 'known': 0, 'fixed': 0}
        core_total = sum(1 for n, _ in tests if n in CORE_TESTS)
        core_pass = 0
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
            futures = [(n, pool.submit(run_test, n, h, opts, scratch, env)) for n, h in tests]
            for name, fut in futures:
                ok, detail, command = fut.result()
                if ok and name in CORE_TESTS:
                    core_pass += 1
                if name in known:
                    if ok:
                        counts['fixed'] += 1
                        print('fixed (listed as known failure): %s' % name)
                    else:
                        counts['known'] += 1
                        if opts.verbose:
                            print('known failure: %s (%s)' % (name, known[name]))
                    continue
                if ok:
                    counts['pass'] += 1
                    if opts.verbose:
                        print('ok   %s' % name)
                else:
                    counts['fail'] += 1
                    print('FAIL %s: %s\n     command: %s' % (name, detail, command))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print('%d/%d pass; %d passed, %d failed (%d known failures, %d listed but passing) [lib %s; '
          'core list: %d/%d pass]'
          % (counts['pass'] + counts['fixed'], len(tests), counts['pass'], counts['fail'],
             counts['known'], counts['fixed'], opts.lib, core_pass, core_total))
    return 1 if counts['fail'] else 0


if __name__ == '__main__':
    sys.exit(main())
