#!/usr/bin/env bash
# Runs the STANDARD SOM conformance suites against a som binary, with our built-in core
# library ("ours") and with the standard one ("std"):
#   (a) TestSuite/TestHarness                      (SPEC 13.1)
#   (b) TestSuite/BasicInterpreterTests table      (SPEC 13.2, via tests/conformance/BasicInterpreterDriver.som)
#   (c) every Are-We-Fast-Yet benchmark            (SPEC 13.4: exit 0 and no ERROR: line)
#   (d) IntegrationTests                           (SPEC 13.3, via tests/conformance/run_integration.py)
# The suites are not in this repository: they are read from $SOMREF (default /work/somref),
# which must hold Smalltalk/, TestSuite/, Examples/AreWeFastYet/ and IntegrationTests/.
# Without it the script says so and exits 0 (CI cannot download them).
#
# Usage: scripts/conformance.sh [SOM_BIN]      (default: the first som found in build/*)
# Environment: SOMREF, PARTS="testsuite basic awfy integration", LIBS="ours std",
#              CONFORMANCE_LOG_DIR (default: a temporary directory; logs are kept there).
# Prints a summary table; exit status 0 iff every part passed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SOMREF=${SOMREF:-/work/somref}
PARTS=${PARTS:-testsuite basic awfy integration}
LIBS=${LIBS:-ours std}

SOM=${1:-}
if [ -z "$SOM" ]; then
    for cand in build/dev/tools/som/som build/release/tools/som/som build/tools/som/som; do
        if [ -x "$ROOT/$cand" ]; then SOM="$ROOT/$cand"; break; fi
    done
fi
if [ -z "$SOM" ] || [ ! -x "$SOM" ]; then
    echo "conformance: no som binary (pass its path as the first argument)" >&2
    exit 2
fi
SOM=$(cd "$(dirname "$SOM")" && pwd)/$(basename "$SOM")
if [ ! -d "$SOMREF" ]; then
    echo "conformance: $SOMREF not found (set SOMREF to a SOM checkout); nothing to run"
    exit 0
fi
SOMREF=$(cd "$SOMREF" && pwd)
LOGS=${CONFORMANCE_LOG_DIR:-$(mktemp -d /tmp/som-conformance.XXXXXX)}
mkdir -p "$LOGS"
EMPTY=$(mktemp -d /tmp/som-empty-cp.XXXXXX)
trap 'rmdir "$EMPTY" 2>/dev/null' EXIT

ROWS=()
FAILED=0
row() { # row PART LIB STATUS DETAIL
    ROWS+=("$(printf '%-22s %-5s %-5s %s' "$1" "$2" "$3" "$4")")
    [ "$3" = PASS ] || [ "$3" = SKIP ] || FAILED=1
}
libcp() { # libcp LIB -> class-path prefix selecting the core library
    if [ "$1" = std ]; then echo "$SOMREF/Smalltalk:"; else echo ""; fi
}

part_testsuite() {
    local lib=$1 log="$LOGS/testsuite-$1.log" rc total ok
    if [ ! -f "$SOMREF/TestSuite/TestHarness.som" ]; then row TestSuite "$lib" SKIP "no TestSuite"; return; fi
    timeout 600 "$SOM" -cp "$(libcp "$lib")$SOMREF/TestSuite" TestHarness >"$log" 2>&1
    rc=$?
    total=$(grep -E '^Total number of tests:' "$log" | grep -oE '[0-9]+' | tail -n1)
    ok=$(grep -E '^Number of successful tests:' "$log" | grep -oE '[0-9]+' | tail -n1)
    if [ $rc -eq 0 ] && [ -n "$ok" ] && [ "$ok" = "$total" ]; then
        row TestSuite "$lib" PASS "$ok/$total tests"
    else
        row TestSuite "$lib" FAIL "exit $rc, ${ok:-?}/${total:-?} tests (log: $log)"
    fi
}

part_basic() {
    local lib=$1 log="$LOGS/basic-$1.log" dir="$SOMREF/TestSuite/BasicInterpreterTests"
    local table="$ROOT/tests/conformance/basic-interpreter-tests.txt" pass=0 fail=0 failed=""
    if [ ! -d "$dir" ]; then row BasicInterpreterTests "$lib" SKIP "no $dir"; return; fi
    : >"$log"
    while read -r cls sel _; do
        case "$cls" in ''|'#'*) continue ;; esac
        if timeout 120 "$SOM" -cp "$(libcp "$lib")$dir:$ROOT/tests/conformance" \
               BasicInterpreterDriver "$table" "$cls>>$sel" >>"$log" 2>&1; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1)); failed="$failed $cls>>$sel"
            echo "FAILED: $cls>>$sel" >>"$log"
        fi
    done <"$table"
    if [ $fail -eq 0 ]; then row BasicInterpreterTests "$lib" PASS "$pass/$((pass + fail)) rows"
    else row BasicInterpreterTests "$lib" FAIL "$pass/$((pass + fail)) rows; failed:$failed"; fi
}

# Benchmark and the smallest inner-iteration count for which it verifies its result (SPEC 13.4).
AWFY_BENCHMARKS="Bounce:1 CD:2 DeltaBlue:1 Havlak:1 Json:1 List:1 Mandelbrot:1 NBody:1
                 Permute:1 Queens:1 Richards:1 Sieve:1 Storage:1 Towers:1"

part_awfy() {
    local lib=$1 a="$SOMREF/Examples/AreWeFastYet" pass=0 fail=0 failed="" b name inner log rc cp
    if [ ! -f "$a/Harness.som" ]; then row AWFY "$lib" SKIP "no $a/Harness.som"; return; fi
    cp="$a/Core:$a/CD:$a/DeltaBlue:$a/Havlak:$a/Json:$a/NBody:$a/Richards"
    [ "$lib" = std ] && cp="$cp:$SOMREF/Smalltalk"
    for b in $AWFY_BENCHMARKS; do
        name=${b%%:*}; inner=${b##*:}; log="$LOGS/awfy-$lib-$name.log"
        timeout 600 "$SOM" -cp "$cp" "$a/Harness.som" "$name" 1 "$inner" >"$log" 2>&1
        rc=$?
        if [ $rc -eq 0 ] && ! grep -q 'ERROR:' "$log" && grep -q 'Total Runtime\|runtime:' "$log"; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1)); failed="$failed $name(exit $rc)"
        fi
    done
    if [ $fail -eq 0 ]; then row AWFY "$lib" PASS "$pass/$((pass + fail)) benchmarks"
    else row AWFY "$lib" FAIL "$pass/$((pass + fail)) benchmarks; failed:$failed"; fi
}

part_integration() {
    local lib=$1 log="$LOGS/integration-$1.log" rc summary
    if [ ! -d "$SOMREF/IntegrationTests/Tests" ]; then row IntegrationTests "$lib" SKIP "no IntegrationTests"; return; fi
    python3 "$ROOT/tests/conformance/run_integration.py" --som "$SOM" --somref "$SOMREF" \
        --lib "$lib" >"$log" 2>&1
    rc=$?
    summary=$(tail -n 1 "$log")
    if [ $rc -eq 0 ]; then row IntegrationTests "$lib" PASS "$summary"
    else row IntegrationTests "$lib" FAIL "$summary (log: $log)"; fi
}

echo "som:    $SOM"
echo "somref: $SOMREF"
echo "logs:   $LOGS"
for part in $PARTS; do
    for lib in $LIBS; do
        echo "running $part ($lib core library) ..."
        "part_$part" "$lib"
    done
done

echo
printf '%-22s %-5s %-5s %s\n' PART LIB RESULT DETAIL
printf '%s\n' "${ROWS[@]}"
exit $FAILED
