#!/usr/bin/env bash
# Runs the STANDARD SOM conformance suites and real programs against a som binary, with our
# built-in core library ("ours") and with the standard one ("std"):
#   testsuite    TestSuite/TestHarness, whole and one suite at a time        (docs/testing.md)
#   basic        TestSuite/BasicInterpreterTests, the table in docs/testing.md, through
#                tests/conformance/BasicInterpreterDriver.som                 (docs/testing.md)
#   awfy         every Are-We-Fast-Yet benchmark in Examples/AreWeFastYet, result verified
#                (exit 0, no ERROR: line)                                     (docs/testing.md)
#   examples     every benchmark in Examples/Benchmarks (BenchmarkHarness.som Name 1 1; 1 2
#                for PageRank) and
#                Examples/Hello.som: exit 0, no ERROR
#   integration  IntegrationTests, via tests/conformance/run_integration.py  (docs/testing.md)
#   somsom       SomSom (a SOM interpreter written in SOM) runs its own test suite
#                (SomSom/tests/SomSomTests.som: 116 tests, exit 0)
#   somsuite     our own tests/som suite with each core library (cross-checks that our tests
#                encode the standard library's behaviour, not our core-lib's)
#
# Usage: scripts/conformance.sh SOM_REPO [SOM_BIN]
#   SOM_REPO  a checkout of the public SOM repository, which holds Smalltalk/, TestSuite/,
#             IntegrationTests/, Examples/AreWeFastYet/ and SomSom/ (not part of this
#             repository):  git clone --depth 1 https://github.com/SOM-st/SOM
#   SOM_BIN   the som binary (default: the first som found in build/*)
# Without SOM_REPO, or when it does not exist, the script says how to get it and exits 0
# (CI has no network to fetch it).
#
# Environment: PARTS="testsuite basic awfy examples integration somsom somsuite" (a subset),
#   LIBS="ours std", VMARGS or SOM_FLAGS (extra VM options, several allowed, e.g.
#   VMARGS=--gc-stress or SOM_FLAGS="--jit=eager --jit-deopt-stress=3"),
#   JIT_MODES="off on eager stress1 gc-eager ..." (runs everything once per mode, the modes'
#   flags from tests/jit/run_jit_tests.py --list-modes, before VMARGS; one summary per mode,
#   logs in CONFORMANCE_LOG_DIR/<mode>),
#   TIMEOUT_SCALE (multiplies every timeout; default 1, 3 with --jit=eager, 20 when VMARGS
#   has --gc-stress),
#   AWFY_SOM (optional: the are-we-fast-yet repository's benchmarks/SOM directory; its
#   benchmarks run as a further awfy row), AWFY_GCSTRESS_SKIP (benchmarks not run under
#   --gc-stress; default Havlak), EXAMPLES_GCSTRESS_SKIP (likewise; default All Polymorphism),
#   CONFORMANCE_LOG_DIR (default: a temp dir).
# tests/conformance/known-failures.txt lists allowed failures as `[lib:]part/name reason`
# (parts: testsuite/<Suite> or testsuite/full, basic/<Class>>><selector>, awfy/<Benchmark>,
# examples/<Benchmark>, integration/<test>, somsom/full, somsuite/<dir>/<test>).
# Prints a summary table; exit status 0 iff nothing failed outside the known-failures list.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PARTS=${PARTS:-testsuite basic awfy examples integration somsom somsuite}
LIBS=${LIBS:-ours std}
KNOWN="$ROOT/tests/conformance/known-failures.txt"

usage() {
    cat <<EOF
usage: scripts/conformance.sh SOM_REPO [SOM_BIN]
  SOM_REPO is a checkout of the public SOM repository (Smalltalk/, TestSuite/,
  IntegrationTests/, Examples/AreWeFastYet/, SomSom/); get it with
    git clone --depth 1 https://github.com/SOM-st/SOM
EOF
}

REPO=${1:-}
if [ -z "$REPO" ] || [ "$REPO" = -h ] || [ "$REPO" = --help ]; then
    usage
    echo "conformance: no SOM repository given; nothing to run"
    exit 0
fi
if [ ! -d "$REPO" ]; then
    usage
    echo "conformance: $REPO not found; nothing to run"
    exit 0
fi
REPO=$(cd "$REPO" && pwd)
if [ ! -d "$REPO/Smalltalk" ] || [ ! -d "$REPO/TestSuite" ]; then
    echo "conformance: $REPO is not a SOM repository checkout (no Smalltalk/ or TestSuite/)" >&2
    exit 2
fi

SOM=${2:-}
if [ -z "$SOM" ]; then
    for cand in build/release/tools/som/som build/dev/tools/som/som build/tools/som/som; do
        if [ -x "$ROOT/$cand" ]; then SOM="$ROOT/$cand"; break; fi
    done
fi
if [ -z "$SOM" ] || [ ! -x "$SOM" ]; then
    echo "conformance: no som binary (pass its path as the second argument)" >&2
    exit 2
fi
SOM=$(cd "$(dirname "$SOM")" && pwd)/$(basename "$SOM")
VMARGS=${VMARGS:-${SOM_FLAGS:-}}
unset SOM_FLAGS # run_tests.py would read it again

# JIT_MODES: this script once per mode, with the mode's flags before VMARGS.
if [ -n "${JIT_MODES:-}" ]; then
    LOGROOT=${CONFORMANCE_LOG_DIR:-$(mktemp -d /tmp/som-conformance.XXXXXX)}
    summary=() rc_all=0
    for mode in $JIT_MODES; do
        flags=$(python3 "$ROOT/tests/jit/run_jit_tests.py" --mode-flags "$mode") || exit 2
        echo "=== mode $mode: $flags ${VMARGS} ==="
        JIT_MODES='' VMARGS="$flags${VMARGS:+ $VMARGS}" \
            CONFORMANCE_LOG_DIR="$LOGROOT/$mode" bash "$0" "$REPO" "$SOM"
        rc=$?
        summary+=("$(printf '%-10s %s' "$mode" "$([ $rc -eq 0 ] && echo PASS || echo "FAIL (exit $rc)")")")
        [ $rc -eq 0 ] || rc_all=1
    done
    echo
    echo "modes (logs in $LOGROOT):"
    printf '%s\n' "${summary[@]}"
    exit $rc_all
fi

if [ -z "${TIMEOUT_SCALE:-}" ]; then
    case " ${VMARGS:-} " in
        *" --gc-stress "*) TIMEOUT_SCALE=20 ;;
        *" --jit=eager "*) TIMEOUT_SCALE=3 ;;
        *) TIMEOUT_SCALE=1 ;;
    esac
fi
LOGS=${CONFORMANCE_LOG_DIR:-$(mktemp -d /tmp/som-conformance.XXXXXX)}
mkdir -p "$LOGS"

ROWS=()
FAILED=0
row() { # row PART LIB STATUS DETAIL
    ROWS+=("$(printf '%-22s %-5s %-6s %s' "$1" "$2" "$3" "$4")")
    [ "$3" = PASS ] || [ "$3" = SKIP ] || FAILED=1
}
libcp() { # libcp LIB -> class-path prefix selecting the core library
    case "$1" in
        std) echo "$REPO/Smalltalk:" ;;
        *) echo "" ;;
    esac
}
t() { echo $(($1 * TIMEOUT_SCALE)); } # scaled timeout in seconds
known() { # known LIB PART/NAME -> status 0 if listed in known-failures.txt for LIB
    [ -f "$KNOWN" ] || return 1
    awk -v lib="$1" -v name="$2" '
        /^[ \t]*(#|$)/ { next }
        { n = $1; if (index(n, ":") > 0 && index(n, ":") < index(n, "/")) {
              split(n, p, ":"); if (p[1] != lib) next; n = substr(n, length(p[1]) + 2) }
          if (n == name) { found = 1; exit } }
        END { exit found ? 0 : 1 }' "$KNOWN"
}
verdict() { # verdict PART LIB PASS FAIL KNOWN-LIST FAIL-LIST UNIT
    local detail="$3/$(($3 + $4)) $7"
    [ -n "$5" ] && detail="$detail; known failures:$5"
    [ -n "$6" ] && detail="$detail; FAILED:$6"
    if [ -n "$6" ]; then row "$1" "$2" FAIL "$detail"; else row "$1" "$2" PASS "$detail"; fi
}
# harness_counts LOG -> "ok total" from a TestHarness summary (empty fields if absent)
harness_counts() {
    local total ok
    total=$(grep -E '^Total number of tests:' "$1" | grep -oE '[0-9]+' | tail -n1)
    ok=$(grep -E '^Number of successful tests:' "$1" | grep -oE '[0-9]+' | tail -n1)
    echo "${ok:-?} ${total:-?}"
}

part_testsuite() {
    local lib=$1 log="$LOGS/testsuite-$1.log" rc ok total tf name pass=0 fail=0 kn="" fl=""
    (cd "$REPO" && timeout "$(t 600)" "$SOM" ${VMARGS:-} -cp "$(libcp "$lib")TestSuite" TestHarness) \
        >"$log" 2>&1
    rc=$?
    read -r ok total <<<"$(harness_counts "$log")"
    if [ $rc -eq 0 ] && [ "$ok" = "$total" ]; then
        row "TestSuite (full)" "$lib" PASS "$ok/$total tests"
    elif known "$lib" testsuite/full; then
        row "TestSuite (full)" "$lib" PASS "known failure: exit $rc, $ok/$total tests"
    else
        row "TestSuite (full)" "$lib" FAIL "exit $rc, $ok/$total tests (log: $log)"
    fi
    # ... and every suite on its own (single-suite mode), so one failing suite does not hide
    # the others.
    for tf in "$REPO"/TestSuite/*Test.som; do
        name=$(basename "$tf" .som)
        if (cd "$REPO" && timeout "$(t 300)" "$SOM" ${VMARGS:-} -cp "$(libcp "$lib")TestSuite" \
               TestHarness "$name") >"$LOGS/testsuite-$lib-$name.log" 2>&1; then
            pass=$((pass + 1))
        elif known "$lib" "testsuite/$name"; then kn="$kn $name"
        else fail=$((fail + 1)); fl="$fl $name"; fi
    done
    verdict "TestSuite (per suite)" "$lib" $pass $((fail + $(echo $kn | wc -w))) "$kn" "$fl" suites
}

part_basic() {
    local lib=$1 log="$LOGS/basic-$1.log" dir="$REPO/TestSuite/BasicInterpreterTests"
    local table="$ROOT/tests/conformance/basic-interpreter-tests.txt" pass=0 fail=0 kn="" fl=""
    if [ ! -d "$dir" ]; then row BasicInterpreterTests "$lib" FAIL "no $dir"; return; fi
    : >"$log"
    while read -r cls sel _; do
        case "$cls" in '' | '#'*) continue ;; esac
        if timeout "$(t 120)" "$SOM" ${VMARGS:-} -cp "$(libcp "$lib")$dir:$ROOT/tests/conformance" \
               BasicInterpreterDriver "$table" "$cls>>$sel" >>"$log" 2>&1; then
            pass=$((pass + 1))
        else
            echo "FAILED: $cls>>$sel" >>"$log"
            if known "$lib" "basic/$cls>>$sel"; then kn="$kn $cls>>$sel"
            else fail=$((fail + 1)); fl="$fl $cls>>$sel"; fi
        fi
    done <"$table"
    verdict BasicInterpreterTests "$lib" $pass $((fail + $(echo $kn | wc -w))) "$kn" "$fl" rows
}

# Benchmark and the smallest inner-iteration count for which it verifies its result (docs/testing.md).
AWFY_BENCHMARKS="Bounce:1 CD:2 DeltaBlue:1 Havlak:1 Json:1 List:1 Mandelbrot:1 NBody:1
                 Permute:1 Queens:1 Richards:1 Sieve:1 Storage:1 Towers:1"

# Under --gc-stress (a full collection at every allocation) Havlak is out of reach: one inner
# iteration allocates ~1 GB with ~7 MB live, hours of collections. AWFY_GCSTRESS_SKIP overrides.
AWFY_GCSTRESS_SKIP=${AWFY_GCSTRESS_SKIP-Havlak}

awfy_dir() { # awfy_dir LABEL DIR LIB
    local label=$1 a=$2 lib=$3 pass=0 fail=0 kn="" fl="" sk="" b name inner log rc cp
    if [ ! -f "$a/Harness.som" ]; then row "$label" "$lib" FAIL "no $a/Harness.som"; return; fi
    # AWFY's Core (its own Vector, Dictionary, Set, ...) must come before the core library.
    cp="$a/Core:$a/CD:$a/DeltaBlue:$a/Havlak:$a/Json:$a/NBody:$a/Richards"
    [ "$lib" != ours ] && cp="$cp:$(libcp "$lib")"
    for b in $AWFY_BENCHMARKS; do
        name=${b%%:*}; inner=${b##*:}; log="$LOGS/$label-$lib-$name.log"
        case " ${VMARGS:-} " in *" --gc-stress "*)
            case " $AWFY_GCSTRESS_SKIP " in *" $name "*) sk="$sk $name"; continue ;; esac ;;
        esac
        timeout "$(t 600)" "$SOM" ${VMARGS:-} -cp "$cp" "$a/Harness.som" "$name" 1 "$inner" >"$log" 2>&1
        rc=$?
        if [ $rc -eq 0 ] && ! grep -q 'ERROR:' "$log" && grep -q 'Total Runtime\|runtime:' "$log"; then
            pass=$((pass + 1))
        elif known "$lib" "awfy/$name"; then kn="$kn $name"
        else fail=$((fail + 1)); fl="$fl $name(exit $rc)"; fi
    done
    verdict "$label" "$lib" $pass $((fail + $(echo $kn | wc -w))) "$kn" "$fl" \
        "benchmarks verified${sk:+ (not run under --gc-stress:$sk)}"
}

part_awfy() {
    awfy_dir AWFY "$REPO/Examples/AreWeFastYet" "$1"
    if [ -n "${AWFY_SOM:-}" ]; then awfy_dir "AWFY (awfy repo)" "$AWFY_SOM" "$1"; fi
}

# Examples/Benchmarks: every Benchmark subclass through BenchmarkHarness.som, 1 iteration of 1.
EXAMPLES_GCSTRESS_SKIP=${EXAMPLES_GCSTRESS_SKIP-All Polymorphism}
part_examples() {
    local lib=$1 b="Examples/Benchmarks" pass=0 fail=0 kn="" fl="" sk="" f name log rc cp inner
    if [ ! -f "$REPO/$b/BenchmarkHarness.som" ]; then row Examples "$lib" FAIL "no $b"; return; fi
    cp="$b:$b/Richards:$b/DeltaBlue:$b/NBody:$b/Json:$b/GraphSearch:$b/LanguageFeatures"
    cp="$cp:$b/LanguageFeatures/DoesNotUnderstand:$b/Interpreter:$b/Polymorphism:$b/TestSuite"
    # SomInit instantiates SomSom's classes
    cp="$cp:SomSom/src/compiler:SomSom/src/interpreter:SomSom/src/primitives:SomSom/src/vm"
    cp="$cp:SomSom/src/vmobjects"
    for f in $(cd "$REPO" && grep -lE '^[A-Za-z0-9]+ = (Benchmark|Sort) ' -r "$b" | sort); do
        name=$(basename "$f" .som); log="$LOGS/examples-$lib-$name.log"
        case "$name" in TestCommon | TestGCCommon) continue ;; esac # helpers, not benchmarks
        case " ${VMARGS:-} " in *" --gc-stress "*)
            case " $EXAMPLES_GCSTRESS_SKIP " in *" $name "*) sk="$sk $name"; continue ;; esac ;;
        esac
        inner=1
        [ "$name" = PageRank ] && inner=2 # refuses fewer than 2 inner iterations
        (cd "$REPO" && timeout "$(t 300)" "$SOM" ${VMARGS:-} -cp "$(libcp "$lib")$cp" \
            "$b/BenchmarkHarness.som" "$name" 1 $inner) >"$log" 2>&1
        rc=$?
        if [ $rc -eq 0 ] && ! grep -q 'ERROR' "$log"; then pass=$((pass + 1))
        elif known "$lib" "examples/$name"; then kn="$kn $name"
        else fail=$((fail + 1)); fl="$fl $name(exit $rc)"; fi
    done
    (cd "$REPO" && timeout "$(t 60)" "$SOM" ${VMARGS:-} -cp "$(libcp "$lib")." Examples/Hello.som) \
        >"$LOGS/examples-$lib-Hello.log" 2>&1
    if [ $? -eq 0 ] && grep -q 'Hello' "$LOGS/examples-$lib-Hello.log"; then pass=$((pass + 1))
    else fail=$((fail + 1)); fl="$fl Hello"; fi
    verdict Examples "$lib" $pass $((fail + $(echo $kn | wc -w))) "$kn" "$fl" \
        "programs${sk:+ (not run under --gc-stress:$sk)}"
}

part_integration() {
    local lib=$1 log="$LOGS/integration-$1.log" rc summary
    if [ ! -d "$REPO/IntegrationTests/Tests" ]; then row IntegrationTests "$lib" FAIL "no IntegrationTests"; return; fi
    python3 "$ROOT/tests/conformance/run_integration.py" --som "$SOM" --som-repo "$REPO" \
        --lib "$lib" --timeout "$(t 60)" ${VMARGS:+"--vm-args=$VMARGS"} >"$log" 2>&1
    rc=$?
    summary=$(tail -n 1 "$log")
    if [ $rc -eq 0 ]; then row IntegrationTests "$lib" PASS "$summary"
    else row IntegrationTests "$lib" FAIL "$summary (log: $log)"; fi
}

part_somsom() {
    local lib=$1 log="$LOGS/somsom-$1.log" rc ok total s="SomSom/src" start secs
    if [ ! -f "$REPO/SomSom/tests/SomSomTests.som" ]; then row SomSom "$lib" FAIL "no SomSom/"; return; fi
    # From the repository's root: SomSom's own tests put Smalltalk and TestSuite/... on the
    # class path of the VM it interprets, relative to the working directory.
    start=$(date +%s)
    (cd "$REPO" && timeout "$(t 600)" "$SOM" ${VMARGS:-} -cp \
        "$(libcp "$lib")TestSuite:$s/compiler:$s/interpreter:$s/primitives:$s/vm:$s/vmobjects" \
        SomSom/tests/SomSomTests.som) >"$log" 2>&1
    rc=$?
    secs=$(($(date +%s) - start))
    read -r ok total <<<"$(harness_counts "$log")"
    if [ $rc -eq 0 ] && [ "$ok" = "$total" ]; then
        row SomSom "$lib" PASS "$ok/$total tests (${secs}s)"
    elif known "$lib" somsom/full; then
        row SomSom "$lib" PASS "known failure: exit $rc, $ok/$total tests"
    else
        row SomSom "$lib" FAIL "exit $rc, $ok/$total tests, $(grep -m1 ERROR: "$log") (log: $log)"
    fi
}

part_somsuite() {
    local lib=$1 log="$LOGS/somsuite-$1.log" kf="$LOGS/somsuite-known-$1.txt" rc
    # Known failures for this library, in run_tests.py's format (path reason).
    awk -v lib="$lib" '
        /^[ \t]*(#|$)/ { next }
        { n = $1; if (index(n, ":") > 0 && index(n, ":") < index(n, "/")) {
              split(n, p, ":"); if (p[1] != lib) next; n = substr(n, length(p[1]) + 2) }
          if (substr(n, 1, 9) == "somsuite/") { $1 = substr(n, 10); print } }' "$KNOWN" >"$kf"
    if [ "$lib" = ours ]; then
        python3 "$ROOT/tests/som/run_tests.py" --som "$SOM" "--som-flags=${VMARGS:-}" \
            --timeout-scale "$TIMEOUT_SCALE" --known-failures "$kf" >"$log" 2>&1
    else # SOM_CORELIB replaces the built-in core library
        SOM_CORELIB="$REPO/Smalltalk" python3 "$ROOT/tests/som/run_tests.py" --som "$SOM" \
            "--som-flags=${VMARGS:-}" --timeout-scale "$TIMEOUT_SCALE" \
            --known-failures "$kf" >"$log" 2>&1
    fi
    rc=$?
    if [ $rc -eq 0 ]; then row "tests/som" "$lib" PASS "$(tail -n 1 "$log")"
    else row "tests/som" "$lib" FAIL "$(tail -n 1 "$log") (log: $log)"; fi
}

echo "som:      $SOM ${VMARGS:-}"
echo "SOM repo: $REPO ($(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout'))"
echo "logs:     $LOGS"
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
