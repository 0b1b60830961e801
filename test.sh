#!/usr/bin/env bash
# Runs every test: the dev build (-Werror) with all suites, the JIT's execution modes on the
# same build (stage jit, time-boxed), the release build with the unit suites, then the SOM and
# unit suites (with the JIT's eager and deopt-stress share) under ASan+UBSan, the profiler
# suites (and the JIT with several VM threads) under TSan, and time-boxed fuzzing.
# Prints the progress of each stage (tests done / total), one "N passed, N failed" line with
# the stage's time per stage, and a total; exit status 0 iff all pass.
set -uo pipefail
cd "$(dirname "$0")"
bash scripts/deps.sh || { echo "dependency installation failed"; exit 1; }
JOBS=$(nproc 2>/dev/null || echo 2)
total_pass=0; total_fail=0; failed_stages=""

stage() { # stage NAME PRESET CTEST-ARGS...   (STAGE_BUDGET=S: stop starting tests after S s)
    local name=$1 preset=$2; shift 2
    local t0=$SECONDS budget=${STAGE_BUDGET:-} stop=()
    echo "=== stage $name (preset $preset) ==="
    if ! cmake --preset "$preset" >"build-$name.log" 2>&1 ||
       ! cmake --build --preset "$preset" -j "$JOBS" >>"build-$name.log" 2>&1; then
        tail -n 60 "build-$name.log"
        echo "stage $name: BUILD FAILED ($((SECONDS - t0)) s)"
        total_fail=$((total_fail + 1)); failed_stages="$failed_stages $name"; return
    fi
    echo "stage $name: built in $((SECONDS - t0)) s"
    local out t1=$SECONDS log="build-$name-tests.log" planned
    # time box: ctest starts no test after the stop time; tests it did not run count as failed
    if [ -n "$budget" ]; then
        stop=(--stop-time "$(date -d "+$budget sec" +%H:%M:%S)")
        planned=$(ctest --test-dir "build/$preset" -N "$@" | sed -nE 's/^Total Tests: ([0-9]+)/\1/p')
    fi
    # progress as it comes: ctest's "N/M Test #k: name ... Passed" lines (tests done / total)
    # with the stage's elapsed time; the whole output goes to build-NAME-tests.log
    : >"$log"
    ctest --test-dir "build/$preset" --output-on-failure -j "$JOBS" "${stop[@]}" "$@" 2>&1 |
        while IFS= read -r l; do
            printf '%s\n' "$l" >>"$log"
            [[ $l =~ ^\ *[0-9]+/[0-9]+\ Test\ +# ]] &&
                printf '[%s %4d s] %s\n' "$name" $((SECONDS - t1)) "${l# }"
        done
    out=$(cat "$log")
    # each failed test's own output (ctest prints it after the test's "***Failed" line): its
    # failure lines and its last lines, so a failure in CI can be read from the CI's output
    echo "$out" | awk '
        function flush(  i, s) {
            if (!name) return
            print "--- output of failed test " name " (failure lines, then its last 20 lines) ---"
            for (i = 1; i <= n && k < 40; i++)
                if (buf[i] ~ /FAIL|ERROR|[Ff]ailure|not ok|[Aa]ssert|[Ee]rror:|Sanitizer|fault/)
                    { print "  " buf[i]; k++ }
            s = n > 20 ? n - 20 + 1 : 1
            for (i = s; i <= n; i++) print "  | " buf[i]
            name = ""; n = 0; k = 0
        }
        /^ *[0-9]+\/[0-9]+ Test +#/ { flush(); if ($0 ~ /\*\*\*|Failed|Timeout|Exception/) name = $4; next }
        /^ *Start +[0-9]+:/ || /tests passed, / { flush(); next }
        name { buf[++n] = $0 }
        END { flush() }'
    echo "$out" | grep -vE '^ *[0-9]+/[0-9]+ Test +#|^ *Start +[0-9]+:' | tail -n 40
    local summary pass fail
    summary=$(echo "$out" | grep -E '[0-9]+% tests passed' | tail -n 1)
    if [ -z "$summary" ]; then
        if echo "$out" | grep -q 'No tests were found'; then echo "stage $name: no tests"; return; fi
        echo "stage $name: ctest did not report"; total_fail=$((total_fail + 1))
        failed_stages="$failed_stages $name"; return
    fi
    fail=$(echo "$summary" | sed -E 's/.*tests failed out of ([0-9]+).*/X/;s/.*, ([0-9]+) tests failed out of ([0-9]+)/\1/')
    all=$(echo "$summary" | sed -E 's/.* out of ([0-9]+)$/\1/')
    fail=$(echo "$summary" | sed -E 's/.*passed, ([0-9]+) tests? failed.*/\1/')
    pass=$((all - fail))
    if [ -n "$budget" ] && [ "${planned:-0}" -gt "$all" ]; then
        echo "stage $name: time box of $budget s reached: $((planned - all)) of $planned tests not run"
        fail=$((fail + planned - all))
    fi
    echo "stage $name: $pass passed, $fail failed (tests $((SECONDS - t1)) s, stage $((SECONDS - t0)) s)"
    total_pass=$((total_pass + pass)); total_fail=$((total_fail + fail))
    [ "$fail" -eq 0 ] || failed_stages="$failed_stages $name"
}

stage dev dev -LE '^jit$'
# The JIT in every execution mode on the dev build (no rebuild): tests/jit's programs with
# --jit=off/on/eager, eager + --jit-deopt-stress (3 seeds) and --gc-stress + eager, tests/som
# with --jit=off/eager/eager+stress, and --jit-stats sanity checks (tests/jit/CMakeLists.txt).
STAGE_BUDGET=${SAMPO_JIT_BUDGET:-1200} stage jit dev -L '^jit$'
stage release release -L unit   # the build demo.sh makes (-O2 -Werror warns differently)
stage asan asan -L 'unit|som'
TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp ${TSAN_OPTIONS:-}" stage tsan tsan -L 'tsan'
if [ "${SAMPO_SKIP_FUZZ:-0}" != 1 ]; then
    stage fuzz fuzz -L 'fuzz'
fi

echo "=== total: $total_pass passed, $total_fail failed, $SECONDS s ==="
[ -z "$failed_stages" ] || { echo "failed stages:$failed_stages"; exit 1; }
