#!/usr/bin/env bash
# End-to-end check of the jitdump (SAMPO_JITDUMP=1): runs JITDEMO under
# `perf record -k 1` (CLOCK_MONOTONIC, the clock of the dump's timestamps), lets
# `perf inject --jit` turn jit-PID.dump into jitted-PID-N.so, and checks that `perf report`
# names the JIT code from that object (the /tmp/perf-PID.map is removed first, so the name
# cannot come from there).  jitdemo exits without sampo's symbol table being freed, so the
# dump has no JIT_CODE_CLOSE record: this also checks that perf accepts its absence.
# Exit 77 (ctest SKIP_RETURN_CODE) where perf is missing or perf_event_open is refused.
# Env: JITDEMO (the prof_jitdemo binary).
set -euo pipefail
dir=$(mktemp -d)
pid=
cleanup() {
    rm -rf "$dir"
    if [ -n "$pid" ]; then rm -f "/tmp/perf-$pid.map"; fi
}
trap cleanup EXIT
skip() {
    echo "SKIP: $*"
    exit 77
}

command -v perf >/dev/null || skip "perf is not installed"
# perf inject writes jitted-*.so next to the dump and perf keeps a build-id cache in
# ~/.debug: both stay inside $dir
export HOME=$dir JITDUMPDIR=$dir SAMPO_JITDUMP=1 SAMPO_COST_NS=40000
unset SAMPO_JITDUMP_DIR
if ! perf record -q -k 1 -e cpu-clock:u -o "$dir/probe.data" -- true >"$dir/probe.log" 2>&1; then
    cat "$dir/probe.log"
    skip "perf record -k 1 -e cpu-clock:u is refused here (perf_event_paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo '?'), seccomp or no perf events)"
fi

perf record -q -k 1 -e cpu-clock:u -o "$dir/perf.data" -- "$JITDEMO" "$dir/prof" \
    >"$dir/record.log" 2>&1 || { cat "$dir/record.log"; exit 1; }
if grep -q "x86-64 only" "$dir/record.log"; then skip "jitdemo runs on x86-64 only"; fi
dump=$(find "$dir/.debug/jit" -name 'jit-*.dump')
echo "jitdump: $dump ($(stat -c %s "$dump") bytes)"
[ "$(echo "$dump" | wc -l)" = 1 ]
pid=$(basename "$dump" .dump)
pid=${pid#jit-}
rm -f "/tmp/perf-$pid.map"

perf inject --jit -i "$dir/perf.data" -o "$dir/perf.jit.data"
ls "$(dirname "$dump")"
perf report -i "$dir/perf.jit.data" --stdio --sort dso,sym 2>/dev/null >"$dir/report"
grep -v '^#' "$dir/report" | grep -v '^$' | head -n 5
# the JIT loop is nearly all of jitdemo's user time; ask for at least half
awk -v so="jitted-$pid-" '$2 ~ "^" so && $4 == "jit_spin_loop" { sub("%", "", $1); if ($1 + 0 >= 50) ok = 1 }
    END { exit !ok }' "$dir/report" || { echo "FAIL: no jitted-$pid-*.so jit_spin_loop line >= 50%"; exit 1; }
echo "ok: perf report names jit_spin_loop in jitted-$pid-*.so"
