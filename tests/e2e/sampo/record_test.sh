#!/usr/bin/env bash
# End-to-end test of `sampo record`.
#   fake: with a fake preload library, checks the SAMPO_* environment passed to the command,
#         -o, the exit status (command's, 127 for a missing command) and usage errors.
#   real: with the engine's libsampo_preload.so on split_prog (hot/warm/cool = 50/30/20,
#         two equal threads): the report must land within 5 points of the truth, pprof must
#         be readable by go tool pprof, and the exit status must be the program's.
# usage: record_test.sh fake|real SAMPO PRELOAD SPLIT_PROG WORKDIR
set -uo pipefail
MODE=$1 SAMPO=$2 PRELOAD=$3 PROG=$4 W=$5
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
has() { grep -qF -- "$2" "$1" || { echo "  '$2' not in $1:"; head -40 "$1"; return 1; }; }
export SAMPO_PRELOAD=$PRELOAD

if [ "$MODE" = fake ]; then
    $SAMPO record -F 123 --mode wall --trigger timer --tune freeze -v -o fake.prof -- "$PROG" 10 2>rec.txt
    check "exit status is the command's" test $? -eq 3
    check "record says where it wrote" grep -qE '^\[ sampo record: wrote fake.prof \([0-9]+ bytes\) \]$' rec.txt
    $SAMPO record -q -o q.prof -- "$PROG" 10 2>rec.txt; check "record -q is quiet" test ! -s rec.txt
    $SAMPO record -o none.prof -- sh -c 'exit 0' 2>rec.txt
    check "record: no profile -> exit 1" test $? -eq 1
    check "record says when no profile" has rec.txt "sampo record: error: no profile was written to none.prof"
    $SAMPO report fake.prof >r.txt; check "profile written to -o" test $? -eq 0
    check "SAMPO_HZ passed"      has r.txt "# SAMPO_HZ         123"
    check "SAMPO_MODE passed"    has r.txt "# SAMPO_MODE       wall"
    check "SAMPO_TRIGGER passed" has r.txt "# SAMPO_TRIGGER    timer"
    check "SAMPO_TUNE passed"    has r.txt "# SAMPO_TUNE       freeze"
    check "SAMPO_VERBOSE passed" has r.txt "# SAMPO_VERBOSE    1"
    $SAMPO record -- "$PROG" 10; check "default output sampo.prof" test -s sampo.prof
    $SAMPO record -o k.prof -- sh -c 'kill -TERM $$'; check "killed command -> 128+15" test $? -eq 143
    $SAMPO record -o x.prof -- /nonexistent/cmd 2>err.txt; check "missing command -> 127" test $? -eq 127
    check "missing command message" has err.txt "cannot run '/nonexistent/cmd'"
    $SAMPO record --mode bogus -- true 2>err.txt; check "bad mode -> 2" test $? -eq 2
    check "bad mode message" has err.txt "expected --mode cpu or wall, got 'bogus'"
    SAMPO_PRELOAD=/nonexistent.so $SAMPO record -- true 2>err.txt
    check "missing preload -> 127" test $? -eq 127
else
    $SAMPO record -F 1000 -o split.prof -- "$PROG" 2000 cpu.txt
    check "exit status is the program's" test $? -eq 3
    $SAMPO report --limit 0 split.prof >r.txt; check "report reads engine profile" test $? -eq 0
    # self share of hot/warm/cool relative to their sum (burn() is their only callee)
    check "split 50/30/20 within 5 points" python3 - <<'PY'
import re
tot = {}
for line in open("r.txt"):
    m = re.match(r"\s*[\d.]+%\s+[\d.]+%\s+([\d.]+)%\s+\d+\s+\d+\s+(hot|warm|cool)\b", line)
    if m: tot[m.group(2)] = float(m.group(1))
s = sum(tot.values())
print(tot)
assert len(tot) == 3 and s > 0
for k, want in (("hot", 50), ("warm", 30), ("cool", 20)):
    assert abs(100 * tot[k] / s - want) <= 5, (k, 100 * tot[k] / s)
PY
    # per-thread shares vs the CPU time each thread measured itself (the machine may be loaded)
    check "thread split within 5 points of measured CPU" python3 - <<'PY'
import re
pid = re.search(r"^# pid +(\d+)", open("r.txt").read(), re.M).group(1)
main_share, shares = None, []
for l in open("r.txt").read().split("## per thread")[1].split("\n\n")[0].splitlines()[2:]:
    m = re.match(r"\s*([\d.]+)%\s+\d+\s+(\d+)\s", l)
    if m:
        shares.append(l.strip())
        if m.group(2) == pid: main_share = float(m.group(1))
cpu = dict((k, float(v)) for k, v in (l.split() for l in open("cpu.txt")))
truth = 100 * cpu["main"] / sum(cpu.values())
print("main thread: profile %s%%, measured %.2f%%" % (main_share, truth))
assert main_share is not None and abs(main_share - truth) <= 5, shares
PY
    $SAMPO export --pprof split.prof -o split.pb.gz
    if command -v go >/dev/null; then
        export GOCACHE=$W/gocache HOME=${HOME:-$W}
        go tool pprof -top split.pb.gz >pprof.txt 2>&1; check "go tool pprof reads it" test $? -eq 0
        check "go pprof names hot" grep -qE ' hot$' pprof.txt
    fi
    # annotate: burn() is where every sample stops; the sampled instructions carry them all
    $SAMPO annotate burn split.prof >ann.txt; check "annotate burn" test $? -eq 0
    check "annotate: heading" grep -qE '^## burn   self [0-9]+ \([0-9.]+%\), total [0-9]+ ' ann.txt
    if command -v objdump >/dev/null; then
        check "annotate: objdump disassembly" grep -qE '^ +[0-9a-f]+:  [a-z]' ann.txt
        check "annotate: samples on instructions" grep -qE '^ +[0-9.]+% +[0-9]+ +[0-9a-f]+:  [a-z]' ann.txt
        check "annotate: all samples placed" python3 - <<'PY'
import re
lines = open("ann.txt").read().splitlines()
self_w = int(re.match(r"## burn   self (\d+)", lines[0]).group(1))
placed = sum(int(m.group(1)) for m in (re.match(r" +[\d.]+% +(\d+) +[0-9a-f]+:  ", l) for l in lines) if m)
print(self_w, placed)
assert placed == self_w
PY
    fi
    $SAMPO annotate --objdump '' burn split.prof >ann2.txt
    check "annotate --objdump '': addresses" grep -qE '^ +[0-9.]+% +[0-9]+  0x[0-9a-f]+  burn\+0x[0-9a-f]+$' ann2.txt
    $SAMPO annotate no_such_function_anywhere split.prof 2>err.txt; check "annotate: no such method -> 1" test $? -eq 1
    check "annotate: says so" has err.txt "sampo annotate: no method named or matching 'no_such_function_anywhere'"
    $SAMPO flame split.prof -o flame.svg; check "flame from engine profile" has flame.svg ">hot"
    $SAMPO hist split.prof -o hist.svg; check "hist from engine profile" test $? -eq 0
fi
echo "$fails failure(s)"
[ "$fails" -eq 0 ]
