#!/usr/bin/env bash
# The long stress run of libsampo: 64 threads at 5 kHz for 30 s (CI runs the same test for
# 5 s).  Pass one or more build directories (e.g. build/asan build/tsan); each must have
# built tests/unit/prof/test_prof_stress.
#   bench/prof/stress.sh build/release build/asan build/tsan
set -euo pipefail
secs=${SECS:-30}
[ $# -gt 0 ] || set -- build/release
for b in "$@"; do
    exe=$b/tests/unit/prof/test_prof_stress
    [ -x "$exe" ] || { echo "$exe: not built"; exit 1; }
    echo "== $b"
    TSAN_OPTIONS=report_signal_unsafe=0 "$exe" "$secs" 64 | grep -E 'stress:|PASSED|FAILED'
done
