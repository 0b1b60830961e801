#!/usr/bin/env bash
# Runs the STANDARD SOM conformance suites against a som binary, with our built-in core
# library ("ours") and with the standard one ("std"):
#   (a) TestSuite/TestHarness                      (SPEC 13.1)
#   (b) TestSuite/BasicInterpreterTests table      (SPEC 13.2, via tests/conformance/BasicInterpreterDriver.som)
#   (c) every Are-We-Fast-Yet benchmark            (SPEC 13.4: exit 0 and no ERROR: line)
#   (d) IntegrationTests                           (SPEC 13.3, via tests/conformance/run_integration.py)
#   (e) our own tests/som suite with each core library (cross-checks that our tests encode the
#       standard library's behaviour, not our core-lib's)
# The suites are not in this repository: they are read from $SOMREF (default /work/somref),
# which must hold Smalltalk/, TestSuite/, Examples/AreWeFastYet/ and IntegrationTests/.
# Without it the script says so and exits 0 (CI cannot download them).
#
# Usage: scripts/conformance.sh [SOM_BIN]      (default: the first som found in build/*)
# Environment: SOMREF, PARTS="testsuite basic awfy integration",
#              LIBS="ours std stdp" (stdp = $SOMREF/patched/Smalltalk over the standard one,
#              only when that directory exists), CONFORMANCE_LOG_DIR (default: a temp dir),
#              VMARGS (extra VM options, e.g. VMARGS=--gc-stress).
# tests/conformance/known-failures.txt lists allowed failures as `[lib:]part/name reason`
# (parts: testsuite/<Suite> or testsuite/full, basic/<Class>>><selector>, awfy/<Benchmark>,
# integration/<test>, somsuite/<dir>/<test>). Files missing from $SOMREF are reported as missing, not as failures.
# Prints a summary table; exit status 0 iff nothing failed outside the known-failures list.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SOMREF=${SOMREF:-/work/somref}
PARTS=${PARTS:-testsuite basic awfy integration somsuite}
KNOWN="$ROOT/tests/conformance/known-failures.txt"

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
if [ -z "${LIBS:-}" ]; then
    LIBS="ours std"
    [ -d "$SOMREF/patched/Smalltalk" ] && LIBS="$LIBS stdp"
fi
LOGS=${CONFORMANCE_LOG_DIR:-$(mktemp -d /tmp/som-conformance.XXXXXX)}
mkdir -p "$LOGS"
EMPTY=$(mktemp -d /tmp/som-empty-cp.XXXXXX)
trap 'rmdir "$EMPTY" 2>/dev/null' EXIT

ROWS=()
FAILED=0
row() { # row PART LIB STATUS DETAIL
    ROWS+=("$(printf '%-22s %-5s %-6s %s' "$1" "$2" "$3" "$4")")
    [ "$3" = PASS ] || [ "$3" = SKIP ] || FAILED=1
}
libcp() { # libcp LIB -> class-path prefix selecting the core library
    case "$1" in
        std) echo "$SOMREF/Smalltalk:" ;;
        stdp) echo "$SOMREF/patched/Smalltalk:$SOMREF/Smalltalk:" ;;
        *) echo "" ;;
    esac
}
known() { # known LIB PART/NAME -> status 0 if listed in known-failures.txt for LIB
    [ -f "$KNOWN" ] || return 1
    awk -v lib="$1" -v name="$2" '
        /^[ \t]*(#|$)/ { next }
        { n = $1; if (index(n, ":") > 0 && index(n, ":") < index(n, "/")) {
              split(n, p, ":"); if (p[1] != lib) next; n = substr(n, length(p[1]) + 2) }
          if (n == name) { found = 1; exit } }
        END { exit found ? 0 : 1 }' "$KNOWN"
}
verdict() { # verdict PART LIB PASS FAIL KNOWN-LIST FAIL-LIST MISSING-LIST UNIT
    local detail="$3/$(($3 + $4)) $8"
    [ -n "$5" ] && detail="$detail; known failures:$5"
    [ -n "$6" ] && detail="$detail; FAILED:$6"
    [ -n "$7" ] && detail="$detail; missing from SOMREF:$7"
    if [ -n "$6" ]; then row "$1" "$2" FAIL "$detail"; else row "$1" "$2" PASS "$detail"; fi
}

part_testsuite() {
    local lib=$1 log="$LOGS/testsuite-$1.log" rc total ok t name pass=0 fail=0 kn="" fl=""
    if [ ! -f "$SOMREF/TestSuite/TestHarness.som" ]; then row TestSuite "$lib" SKIP "no TestSuite"; return; fi
    # The full harness run (SPEC 13.1) ...
    timeout 600 "$SOM" ${VMARGS:-} -cp "$(libcp "$lib")$SOMREF/TestSuite" TestHarness >"$log" 2>&1
    rc=$?
    total=$(grep -E '^Total number of tests:' "$log" | grep -oE '[0-9]+' | tail -n1)
    ok=$(grep -E '^Number of successful tests:' "$log" | grep -oE '[0-9]+' | tail -n1)
    if [ $rc -eq 0 ] && [ -n "$ok" ] && [ "$ok" = "$total" ]; then
        row "TestSuite (full)" "$lib" PASS "$ok/$total tests"
    elif known "$lib" testsuite/full; then
        row "TestSuite (full)" "$lib" PASS "known failure: exit $rc, $(grep -m1 ERROR: "$log" || echo "${ok:-?}/${total:-?} tests")"
    else
        row "TestSuite (full)" "$lib" FAIL "exit $rc, ${ok:-?}/${total:-?} tests (log: $log)"
    fi
    # ... and every suite present in $SOMREF on its own (single-suite mode), so a suite
    # missing from the snapshot does not hide the others.
    for t in "$SOMREF"/TestSuite/*Test.som; do
        name=$(basename "$t" .som)
        if timeout 300 "$SOM" ${VMARGS:-} -cp "$(libcp "$lib")$SOMREF/TestSuite" TestHarness "$name" \
               >"$LOGS/testsuite-$lib-$name.log" 2>&1; then
            pass=$((pass + 1))
        elif known "$lib" "testsuite/$name"; then kn="$kn $name"
        else fail=$((fail + 1)); fl="$fl $name"; fi
    done
    verdict "TestSuite (per suite)" "$lib" $pass $((fail + $(echo $kn | wc -w))) "$kn" "$fl" "" suites
}

part_basic() {
    local lib=$1 log="$LOGS/basic-$1.log" dir="$SOMREF/TestSuite/BasicInterpreterTests"
    local table="$ROOT/tests/conformance/basic-interpreter-tests.txt" pass=0 fail=0 kn="" fl="" ms=""
    if [ ! -d "$dir" ]; then row BasicInterpreterTests "$lib" SKIP "no $dir"; return; fi
    : >"$log"
    while read -r cls sel _; do
        case "$cls" in ''|'#'*) continue ;; esac
        if [ ! -f "$dir/$cls.som" ]; then ms="$ms $cls>>$sel"; continue; fi
        if timeout 120 "$SOM" ${VMARGS:-} -cp "$(libcp "$lib")$dir:$ROOT/tests/conformance" \
               BasicInterpreterDriver "$table" "$cls>>$sel" >>"$log" 2>&1; then
            pass=$((pass + 1))
        else
            echo "FAILED: $cls>>$sel" >>"$log"
            if known "$lib" "basic/$cls>>$sel"; then kn="$kn $cls>>$sel"
            else fail=$((fail + 1)); fl="$fl $cls>>$sel"; fi
        fi
    done <"$table"
    verdict BasicInterpreterTests "$lib" $pass $((fail + $(echo $kn | wc -w))) "$kn" "$fl" "$ms" rows
}

# Benchmark and the smallest inner-iteration count for which it verifies its result (SPEC 13.4).
AWFY_BENCHMARKS="Bounce:1 CD:2 DeltaBlue:1 Havlak:1 Json:1 List:1 Mandelbrot:1 NBody:1
                 Permute:1 Queens:1 Richards:1 Sieve:1 Storage:1 Towers:1"

part_awfy() {
    local lib=$1 a="$SOMREF/Examples/AreWeFastYet" pass=0 fail=0 kn="" fl="" ms="" b name inner log rc cp
    if [ ! -f "$a/Harness.som" ]; then row AWFY "$lib" SKIP "no $a/Harness.som"; return; fi
    cp="$a/Core:$a/CD:$a/DeltaBlue:$a/Havlak:$a/Json:$a/NBody:$a/Richards"
    [ "$lib" != ours ] && cp="$cp:$(libcp "$lib")"
    for b in $AWFY_BENCHMARKS; do
        name=${b%%:*}; inner=${b##*:}; log="$LOGS/awfy-$lib-$name.log"
        if [ ! -f "$a/$name.som" ] && [ ! -f "$a/$name/$name.som" ]; then ms="$ms $name"; continue; fi
        timeout 600 "$SOM" ${VMARGS:-} -cp "$cp" "$a/Harness.som" "$name" 1 "$inner" >"$log" 2>&1
        rc=$?
        if [ $rc -eq 0 ] && ! grep -q 'ERROR:' "$log" && grep -q 'Total Runtime\|runtime:' "$log"; then
            pass=$((pass + 1))
        elif known "$lib" "awfy/$name"; then kn="$kn $name"
        else fail=$((fail + 1)); fl="$fl $name(exit $rc)"; fi
    done
    verdict AWFY "$lib" $pass $((fail + $(echo $kn | wc -w))) "$kn" "$fl" "$ms" benchmarks
}

part_integration() {
    local lib=$1 log="$LOGS/integration-$1.log" rc summary
    if [ ! -d "$SOMREF/IntegrationTests/Tests" ]; then row IntegrationTests "$lib" SKIP "no IntegrationTests"; return; fi
    python3 "$ROOT/tests/conformance/run_integration.py" --som "$SOM" --somref "$SOMREF" \
        --lib "$lib" ${VMARGS:+"--vm-args=$VMARGS"} >"$log" 2>&1
    rc=$?
    summary=$(tail -n 1 "$log")
    if [ $rc -eq 0 ]; then row IntegrationTests "$lib" PASS "$summary"
    else row IntegrationTests "$lib" FAIL "$summary (log: $log)"; fi
}

part_somsuite() {
    local lib=$1 log="$LOGS/somsuite-$1.log" kf="$LOGS/somsuite-known-$1.txt" lib_dir rc
    lib_dir="$LOGS/corelib-$lib"
    rm -rf "$lib_dir"
    if [ "$lib" != ours ]; then # SOM_CORELIB takes one directory: merge the overlay into a copy
        mkdir -p "$lib_dir"
        cp "$SOMREF"/Smalltalk/*.som "$lib_dir"/
        [ "$lib" = stdp ] && cp "$SOMREF"/patched/Smalltalk/*.som "$lib_dir"/
    fi
    # Known failures for this library, in run_tests.py's format (path reason).
    awk -v lib="$lib" '
        /^[ \t]*(#|$)/ { next }
        { n = $1; if (index(n, ":") > 0 && index(n, ":") < index(n, "/")) {
              split(n, p, ":"); if (p[1] != lib) next; n = substr(n, length(p[1]) + 2) }
          if (substr(n, 1, 9) == "somsuite/") { $1 = substr(n, 10); print } }' "$KNOWN" >"$kf"
    if [ "$lib" = ours ]; then
        python3 "$ROOT/tests/som/run_tests.py" --som "$SOM" ${VMARGS:+"--vm-arg=$VMARGS"} \
            --known-failures "$kf" >"$log" 2>&1
    else
        SOM_CORELIB="$lib_dir" python3 "$ROOT/tests/som/run_tests.py" --som "$SOM" \
            ${VMARGS:+"--vm-arg=$VMARGS"} --known-failures "$kf" >"$log" 2>&1
    fi
    rc=$?
    if [ $rc -eq 0 ]; then row "tests/som" "$lib" PASS "$(tail -n 1 "$log")"
    else row "tests/som" "$lib" FAIL "$(tail -n 1 "$log") (log: $log)"; fi
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
printf '%-22s %-5s %-6s %s\n' PART LIB RESULT DETAIL
printf '%s\n' "${ROWS[@]}"
exit $FAILED
