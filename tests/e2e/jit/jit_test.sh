#!/usr/bin/env bash
# End-to-end tests of `som --jit*`.  Usage: jit_test.sh SOM WORKDIR CASE [SAMPO]
# Cases that need the real compiler exit 77 (ctest's SKIP_RETURN_CODE) while the JIT is not
# built in ("the JIT is not built yet"), so they pass only where it truly works.
set -uo pipefail
som=$(realpath "$1") work=$2 case_=$3
sampo=${4:+$(realpath "$4")}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
prog=$here/JitLoop.som
expected=$'1010000\n6765\n6'
jitprof=$here/JitProf.som
jitprof_out=10069901072227 # JitProf.som 400000

fail() { echo "FAIL: $*" >&2; exit 1; }

# run ARGS...: stdout in out, stderr in err, status in rc
run() { "$som" "$@" >out 2>err; rc=$?; }

# state NAME LINE: the percentage of state NAME in a "somprof: ... states:" line
state() { sed -n "s/.* $1=\([0-9.]*\)%.*/\1/p" <<<"$2"; }

# samples FILE: the profile's total weight in samples (coop: a late flag's sample weighs the
# ticks it stands for)
samples() { "$sampo" report "$1" | sed -n 's/^# sampo profile: .*total weight \([0-9]*\) (samples).*/\1/p'; }

need_sampo() { [ -n "$sampo" ] || { echo "SKIP: no sampo given"; exit 77; }; }

need_compiler() {
    run --jit=eager "$prog"
    if grep -q "not built yet" err; then echo "SKIP: the JIT is not built yet"; exit 77; fi
}

case $case_ in
cli_errors)
    run --jit=fast "$prog"
    [ $rc = 2 ] || fail "--jit=fast: status $rc"
    [ "$(cat err)" = "som: --jit: expected on, off or eager, got 'fast'" ] || fail "$(cat err)"
    [ ! -s out ] || fail "output despite the error"
    run --jit= "$prog"
    [ $rc = 2 ] && grep -q "expected on, off or eager, got ''" err || fail "--jit=: $rc $(cat err)"
    for bad in 0 -3 x 12x; do
        run --jit-deopt-stress=$bad "$prog"
        [ $rc = 2 ] || fail "--jit-deopt-stress=$bad: status $rc"
        grep -q "^som: --jit-deopt-stress: expected a positive seed, got '$bad'$" err ||
            fail "--jit-deopt-stress=$bad: $(cat err)"
    done
    run --jit-stat "$prog"
    [ $rc = 2 ] && grep -q "unknown option '--jit-stat'" err || fail "--jit-stat: $rc"
    SOM_JIT_THRESHOLD=many run --jit=on "$prog"
    [ $rc = 2 ] && [ ! -s out ] || fail "bad SOM_JIT_THRESHOLD: status $rc"
    [ "$(cat err)" = "som: SOM_JIT_THRESHOLD: expected a number between 1 and 1e+09, got 'many'" ] ||
        fail "bad SOM_JIT_THRESHOLD not reported: $(cat err)"
    SOM_JIT_THRESHOLD=many run --jit=off "$prog" # the JIT's tunables do not matter then
    [ $rc = 0 ] || fail "SOM_JIT_THRESHOLD with --jit=off: status $rc"
    ;;
help)
    run --help
    [ $rc = 0 ] || fail "--help: status $rc"
    for flag in "--jit=MODE" "--jit-deopt-stress" "--jit-stats" "--jit-dump" "prof=exact the JIT"; do
        grep -q -- "$flag" out || fail "--help does not mention $flag"
    done ;;
modes)
    # every mode runs the program right, compiler or not
    for args in "--jit=off" "--jit=on" "" "--jit=eager" "--jit=eager --jit-deopt-stress=7" \
        "--jit=on --jit-stats --threads 2" "--prof=exact --jit=eager"; do
        # shellcheck disable=SC2086
        run $args "$prog"
        [ $rc = 0 ] || fail "som $args: status $rc: $(cat err)"
        if [[ $args == *threads* ]]; then
            # the two VMs' output interleaves: `println` is `print` and then `printNewline`
            # (the core library's), so one VM's line can fall between the other's text and
            # its newline; the output must be an interleaving of two copies of the expected
            printf '%s\n' "$expected" >expect1
            python3 -c '
import sys
a = open(sys.argv[1]).read(); o = open(sys.argv[2]).read(); n = len(a)
if len(o) != 2 * n: sys.exit(1)
ok = [[False] * (n + 1) for _ in range(n + 1)]  # ok[i][j]: o[:i+j] interleaves a[:i], a[:j]
ok[0][0] = True
for i in range(n + 1):
    for j in range(n + 1):
        if (i or j) and not ok[i][j]:
            c = o[i + j - 1]
            ok[i][j] = (i > 0 and ok[i - 1][j] and a[i - 1] == c) or (j > 0 and ok[i][j - 1] and a[j - 1] == c)
sys.exit(0 if ok[n][n] else 1)' expect1 out || fail "som $args: $(cat out)"
        else
            [ "$(cat out)" = "$expected" ] || fail "som $args: $(cat out)"
        fi
        n=$(grep -c "JIT unavailable" err)
        [ "$n" -le 1 ] || fail "som $args: the warning $n times"
    done
    run --jit=off --jit-stats "$prog"
    ! grep -q "^jit:" err || fail "--jit=off printed statistics"
    run "$prog" # the default: no warning when the JIT cannot run, and no statistics
    [ ! -s err ] || fail "default run wrote on stderr: $(cat err)" ;;
stats)
    need_compiler
    run --jit=eager --jit-stats "$prog"
    [ $rc = 0 ] && [ "$(cat out)" = "$expected" ] || fail "eager: $rc $(cat out) $(cat err)"
    n=$(sed -n 's/^jit: methods compiled \([0-9]*\),.*/\1/p' err)
    [ -n "$n" ] && [ "$n" -ge 3 ] || fail "eager compiled '$n' methods: $(cat err)"
    for line in "^jit: compile time total [0-9.]* ms, median [0-9.]* ms, p95 [0-9.]* ms" \
        "^jit: code bytes [1-9][0-9]*, inlined activations" "^jit: deopts [0-9]*"; do
        grep -q "$line" err || fail "no '$line' in: $(cat err)"
    done
    # where the compile time went: LLVM's passes and machine code took some (ms, one decimal)
    ph=$(sed -n 's/^jit: compile CPU by phase: build [0-9.]* ms, optimize [0-9.]* ms, lower [0-9.]* ms, LLVM passes \([0-9.]*\) ms, machine code \([0-9.]*\) ms, link [0-9.]* ms$/\1 \2/p' err)
    [ -n "$ph" ] || fail "no phase line in: $(cat err)"
    awk -v p="$ph" 'BEGIN { split(p, a, " "); exit !(a[1] > 0 && a[2] > 0) }' ||
        fail "LLVM phases not timed: $ph" ;;
stress)
    need_compiler
    run --jit=eager --jit-deopt-stress=3 --jit-stats "$prog"
    [ $rc = 0 ] && [ "$(cat out)" = "$expected" ] || fail "stress: $rc $(cat out) $(cat err)"
    grep -q "^jit: deopts [1-9][0-9]*:.*stress=" err || fail "no stress deopts: $(cat err)" ;;
threads)
    need_compiler
    run --jit=eager --jit-stats --threads 3 "$prog"
    [ $rc = 0 ] || fail "threads: $rc $(cat err)"
    [ "$(grep -c '^jit: methods compiled' err)" = 3 ] || fail "not one block per VM: $(cat err)"
    [ "$(grep -c '^1010000$' out)" = 3 ] || fail "threads output: $(cat out)" ;;
dump)
    need_compiler
    run --jit=eager --jit-dump "$prog"
    [ $rc = 0 ] || fail "dump: $rc"
    grep -q "^=== jit: JitLoop>>add:to: (version 1) ===" err || fail "no IR dump: $(head err)" ;;
states)
    # every VM state has its name in the split, "compiled" included (no compiler needed)
    for mode in async coop; do
        run --prof=$mode --prof-states "$prog"
        [ $rc = 0 ] || fail "--prof=$mode --prof-states: status $rc"
        grep -q "^somprof: sampled states: interpreting=.* idle=[0-9.]*% compiled=[0-9.]*%$" err ||
            fail "--prof=$mode: $(cat err)"
        ! grep -q "(null)" err || fail "an unnamed state: $(cat err)"
    done ;;
prof)
    need_compiler
    # compiled code in the profiles: methods named (inlined ones too), state "compiled"
    for mode in async coop; do
        run --jit=eager --prof=$mode --prof-hz 5000 --prof-states --prof-report "$prog"
        [ $rc = 0 ] && [ "$(cat out)" = "$expected" ] || fail "--prof=$mode: $rc $(cat err)"
        grep -q "[A-Za-z]>>[a-z]" err || fail "--prof=$mode: no SOM method named: $(cat err)"
        grep -q "^somprof: sampled states: .* compiled=" err || fail "--prof=$mode: no states"
        # eager mode compiles on the VM thread: LLVM's own frames (no symbols in libLLVM's
        # stripped code) are native, not SOM frames; every SOM frame must be named
        ! grep "\[unknown\]" err | grep -qv "\[unknown\] lib[A-Za-z0-9_.+-]*\.so" ||
            fail "--prof=$mode: [unknown] frames: $(cat err)"
    done ;;
perf_map)
    need_compiler
    SAMPO_PERF_MAP=1 "$som" --jit=eager "$prog" >out 2>err &
    pid=$!
    wait $pid || fail "perf map run: status $?"
    map=/tmp/perf-$pid.map
    [ -f "$map" ] || fail "no $map"
    grep -q "JitLoop>>add:to: \[jit t2 v1\]$" "$map" || { rm -f "$map"; fail "not named: $map"; }
    rm -f "$map"
    run --jit=eager "$prog" # not asked for: no files
    ;;
prof_names)
    # (a) with compiled code: every sample of the VM thread names SOM methods only, and a
    # loop inlined into a compiled caller (JitProf>>area: into step:) is reported as the
    # callee (its positions expanded); with the positions lost its samples go to step:.
    need_compiler; need_sampo
    for mode in async coop; do
        for jit in eager on; do
            f=names-$mode-$jit.prof
            run --jit=$jit --prof=$mode --prof-hz 1000 --prof-out $f "$jitprof" 400000
            [ $rc = 0 ] && [ "$(cat out)" = "$jitprof_out" ] || fail "$mode $jit: $rc $(cat out) $(cat err)"
            "$sampo" export --collapsed $f >stacks || fail "export $f"
            read -r vm bad area step cw cn <<<"$(awk '
                { w = $NF; $NF = ""; sub(/ $/, ""); n = split($0, fr, ";")
                  if (fr[1] != "System>>boot") {
                      cw += w; if (n == 1 && fr[1] ~ />>.* \[jit compile\]$/) cn += w; next }
                  vm += w; ok = 1
                  for (i = 1; i <= n; i++) if (fr[i] !~ />>/ || fr[i] ~ /\[unknown\]|@0x/) ok = 0
                  if (!ok) bad += w
                  if (fr[n] == "JitProf>>area:") area += w
                  if (fr[n] == "JitProf>>step:") step += w }
                END { printf "%d %d %d %d %d %d\n", vm, bad, area, step, cw, cn }' stacks)"
            [ "$vm" -gt 0 ] || fail "$mode $jit: no VM samples"
            # a sample with an unnamed frame is a bug, not noise: none allowed
            [ "$bad" = 0 ] || fail "$mode $jit: $bad of $vm not named: $(awk '!/>>/ || /unknown|@0x/' stacks | head -3)"
            # area: runs 1000 loop iterations per call of step: (most of their time together
            # when compiled); weights are time, in units of the 1 ms interval: area: must beat
            # step: by 3 standard deviations
            n_area=$((area / 1000000)) n_step=$((step / 1000000))
            awk -v a=$n_area -v s=$n_step 'BEGIN { exit !(a > s + 3 * sqrt(a + s) && a >= 30) }' ||
                fail "$mode $jit: inlined area: $n_area samples vs step: $n_step"
            # the compiler thread (async, --jit=on) names the method it compiles; its native
            # stack shows only between jobs (a few samples; ~10% under ASan, which slows the
            # thread's own work between jobs most): at least 3/4 named
            if [ $mode = async ] && [ $jit = on ] && [ $((cw / 1000000)) -ge 10 ]; then
                [ $((cn * 4)) -ge $((cw * 3)) ] ||
                    fail "compiler thread: $cn of $cw named: $(grep -v '^System>>boot' stacks | head -3)"
            fi
        done
    done ;;
prof_states)
    # (c) the exact VM-state split (transitions) against the sampled one in the same run,
    # compiled code included: --prof-states must not keep compiled code from running.
    # Both samplers: within 4 standard deviations of each share (n samples) plus 1.5 points
    # for the hooks' own distortion (4.5 under a sanitizer, which slows the hooks' code
    # around the clock reads).  Coop takes a tick's state at an instant the VM thread draws
    # itself (with the marking thread's view instead, SOMPROF_COOP_WINDOW_NS=0, it was off
    # by up to ~13 points on these machines, docs/evaluation.md section 5).
    need_compiler; need_sampo
    slack=1.5
    [ -z "${SAMPO_SANITIZE:-}" ] || slack=4.5
    for mode in async coop; do
        for jit in eager on; do
            f=states-$mode-$jit.prof
            run --jit=$jit --prof=$mode --prof-hz 1000 --prof-states --prof-out $f "$jitprof" 400000
            [ $rc = 0 ] && [ "$(cat out)" = "$jitprof_out" ] || fail "$mode $jit: $rc $(cat err)"
            s=$(grep "^somprof: sampled states:" err) e=$(grep "^somprof: exact states:" err)
            [ -n "$s" ] && [ -n "$e" ] || fail "$mode $jit: no splits: $(cat err)"
            n=$(samples $f)
            [ -n "$n" ] && [ "$n" -gt 200 ] || fail "$mode $jit: '$n' samples"
            ec=$(state compiled "$e")
            awk -v e="$ec" 'BEGIN { exit !(e > 20) }' || fail "$mode $jit: exact compiled $ec%: $e"
            for k in interpreting compiled primitive gc compiling; do
                sk=$(state $k "$s") ek=$(state $k "$e")
                awk -v s="$sk" -v e="$ek" -v n="$n" -v x="$slack" 'BEGIN { p = s / 100
                    b = 400 * sqrt((p > 0.01 ? p * (1 - p) : 0.01) / n) + x
                    d = s - e; if (d < 0) d = -d; exit !(d <= b) }' ||
                    fail "$mode $jit: $k sampled $sk% exact $ek% ($n samples): $s / $e"
            done
        done
    done ;;
prof_hist)
    # (e) compiled code in the PC histogram: its ranges are symbols of the profile, so the
    # hottest bins (the inlined loop) are labelled with the compiled method's name
    need_compiler; need_sampo
    run --jit=eager --prof=async --prof-hz 1000 --prof-out hist.prof "$jitprof" 400000
    [ $rc = 0 ] || fail "hist run: $rc $(cat err)"
    "$sampo" hist hist.prof -o hist.svg || fail "sampo hist"
    name=$(grep -o "JitProf\(&gt;&gt;\|>>\)step: \[jit t2 v[0-9]*\]" hist.svg | head -1 | sed 's/&gt;/>/g')
    [ -n "$name" ] || fail "no compiled method in the histogram: $(grep -o '</tspan>[^<]*' hist.svg)"
    ;;
*)
    fail "unknown case $case_" ;;
esac
echo "ok $case_"
