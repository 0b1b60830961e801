#!/usr/bin/env bash
# End-to-end test of the sampo subcommands on synthetic profiles written by gen_profile:
# report content, byte-exact collapsed output, `go tool pprof -top` reading our pprof,
# speedscope JSON validity, flame/hist SVG content (and rendering when rsvg-convert exists),
# compare numbers against values computed by hand, and clear errors on corrupt input.
# usage: tools_test.sh SAMPO GEN_PROFILE WORKDIR
set -uo pipefail
SAMPO=$1 GEN=$2 W=$3
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { # check NAME COMMAND...
    local name=$1; shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}
has() { grep -qF -- "$2" "$1" || { echo "  '$2' not in $1:"; head -50 "$1"; return 1; }; }

$GEN split split.prof && $GEN shifted shifted.prof && $GEN som som.prof && $GEN exact exact.prof ||
    { echo "FAIL gen_profile"; exit 1; }

# --- report
$SAMPO report split.prof >report.txt; check "report exit status" test $? -eq 0
check "report flat hot"     has report.txt " 45.00%  45.00%  50.00%        450        500  hot (splitprog)"
check "report flat warm"    has report.txt " 30.00%  75.00%  30.00%        300        300  warm (splitprog)"
check "report trigger"      has report.txt "# trigger          timer_create"
check "report dropped"      has report.txt "# samples_dropped  3"
check "report tree"         has report.txt " 50.00%  45.00%     hot"
check "report edges"        has report.txt " 50.00%        500  main -> hot"
check "report threads"      has report.txt " 50.00%        500       4002  worker"
check "report rate change"  has report.txt "interval 1000000 ns -> 1250000 ns (1000.0 Hz -> 800.0 Hz)"
$SAMPO report som.prof >som.txt
check "report vm states"    has som.txt " 60.00%        240   61.00%      610000000   -1.00  interpreting"
check "report vm gc"        has som.txt " 10.00%         40   10.00%      100000000   +0.00  gc"
$SAMPO report exact.prof >exact.txt
check "report exact"        has exact.txt "exact (invocation counts)"
check "report exact time"   has exact.txt "## time-weighted view"

# --- per-thread view (--thread TID): thread 4002 ran every odd sample, no memcpy
$SAMPO report --thread 4002 split.prof >t2.txt
check "report --thread" has t2.txt " 50.00%  50.00%  50.00%        250        250  hot (splitprog)"
$SAMPO export --collapsed --thread 4001 split.prof >t1.collapsed
check "collapsed --thread" has t1.collapsed "__libc_start_main;main;hot;memcpy 56325225"
$SAMPO flame --thread 4002 split.prof -o t2.svg; check "flame --thread" has t2.svg "total 500 samples"
$SAMPO report --thread 999 split.prof 2>err.txt; check "unknown thread exit 1" test $? -eq 1
check "unknown thread message" has err.txt "no thread with tid 999"

# --- collapsed (byte-exact): nanoseconds, each sample weighted by the interval in force
# (the rate change halfway), so the total is pprof's cpu total below (1188.25 ms)
$SAMPO export --collapsed split.prof >split.collapsed
printf '%s\n' "__libc_start_main;main;cool 250000000" "__libc_start_main;main;hot 506927025" \
    "__libc_start_main;main;hot;memcpy 56325225" "__libc_start_main;main;warm 375000000" \
    >expect.collapsed
check "collapsed exact bytes" cmp split.collapsed expect.collapsed
$SAMPO export --collapsed som.prof -o som.collapsed
check "collapsed fig2 ABCD" has som.collapsed "A>>run;B>>step;C>>inner;D>>leaf 240"
check "collapsed fig2 EBCF" has som.collapsed "E>>go;B>>step;C>>inner;F>>leaf 120"
$SAMPO export --collapsed exact.prof >exact.collapsed
check "collapsed exact invocations" has exact.collapsed "Main>>run;Caller>>loop;Caller>>m 1000"

# --- pprof read by the real consumer
$SAMPO export --pprof split.prof -o split.pb.gz; check "pprof export" test -s split.pb.gz
check "pprof is gzip" bash -c "head -c2 split.pb.gz | od -An -tx1 | grep -q '1f 8b'"
if command -v go >/dev/null; then
    export GOCACHE=$W/gocache GOPATH=$W/gopath HOME=${HOME:-$W}
    go tool pprof -top -sample_index=samples split.pb.gz >pprof.txt 2>&1
    check "go tool pprof exit" test $? -eq 0
    check "go pprof hot"  grep -qE '45\.00%.*50\.00%  hot$' pprof.txt
    check "go pprof warm" grep -qE '30\.00%.*30\.00%  warm$' pprof.txt
    check "go pprof type" has pprof.txt "Type: samples"
    # cpu time follows the rate change at 250 ms: 250 x 1.003 ms (997 Hz delivered) + 750 x 1.25 ms
    go tool pprof -top split.pb.gz >pprof-cpu.txt 2>&1
    check "go pprof cpu follows rate change" has pprof-cpu.txt "Total samples = 1188.25ms (118.83%)"
    $SAMPO export --pprof exact.prof -o exact.pb.gz
    go tool pprof -top exact.pb.gz >pprof-exact.txt 2>&1
    check "go pprof exact" grep -qE '^ +1000 +98\.91%.*Caller>>m$' pprof-exact.txt
    go tool pprof -top -sample_index=time exact.pb.gz >pprof-exact-time.txt 2>&1
    check "go pprof exact own time" grep -qE '^ +4000us 80\.00%.*Caller>>m$' pprof-exact-time.txt
else
    echo "skip go tool pprof (go not installed)"
fi

# --- speedscope
$SAMPO export --speedscope som.prof -o som.speedscope.json
check "speedscope json" python3 -c '
import json,sys
d=json.load(open("som.speedscope.json"))
p=d["profiles"][0]
assert d["shared"]["frames"][0]["name"]=="A>>run"
assert p["unit"]=="nanoseconds", p["unit"]
assert len(p["samples"])==400 and sum(p["weights"])==400000000 and p["endValue"]==400000000
assert p["samples"][0]==[0,1,2,3], p["samples"][0]'

# --- flame graph
$SAMPO flame split.prof -o flame.svg; check "flame exit" test $? -eq 0
check "flame hot title"   has flame.svg "<title>hot (500, 50.00%)</title>"
check "flame root title"  has flame.svg "<title>__libc_start_main (1000, 100.00%)</title>"
check "flame xml valid" python3 -c 'import xml.dom.minidom as m; m.parse("flame.svg")'
$SAMPO flame som.prof -o som-flame.svg
check "flame escapes >>" has som-flame.svg "<title>A&gt;&gt;run (280, 70.00%)</title>"

# --- histogram
$SAMPO hist split.prof -o hist.svg; check "hist exit" test $? -eq 0
check "hist labels hot"     has hist.svg ">  hot  45.0%<"
check "hist labels warm"    has hist.svg ">  warm  30.0%<"
check "hist labels memcpy"  has hist.svg ">  memcpy  5.0%<"
check "hist two segments"   has hist.svg ">libc.so.6<"
check "hist xml valid" python3 -c 'import xml.dom.minidom as m; m.parse("hist.svg")'
$SAMPO hist split.prof --symbol memcpy -o hist-memcpy.svg
check "hist symbol zoom"    has hist-memcpy.svg "PC histogram: 50 samples"
$SAMPO hist split.prof --range 0x555555555400-0x555555555600 -o hist-range.svg
check "hist range zoom"     has hist-range.svg "PC histogram: 500 samples"
$SAMPO hist split.prof --symbol nosuch -o x.svg 2>err.txt; check "hist unknown symbol fails" test $? -eq 1
check "hist unknown symbol msg" has err.txt "unknown symbol 'nosuch'"
if command -v rsvg-convert >/dev/null; then
    check "flame renders" rsvg-convert flame.svg -o flame.png
    check "hist renders" rsvg-convert hist.svg -o hist.png
fi

# --- timeline
$SAMPO timeline split.prof -o tl.svg; check "timeline exit" test $? -eq 0
check "timeline threads legend" has tl.svg "tid 4002 worker"
check "timeline xml valid" python3 -c 'import xml.dom.minidom as m; m.parse("tl.svg")'
check "timeline interval steps at 250 ms" python3 -c '
import re
pts = re.search(r"stroke=\"#c00\" stroke-width=\"2\" points=\"([^\"]*)\"", open("tl.svg").read()).group(1).split()
assert len(pts) == 4, pts   # start, step (2 points), end
x0 = float(pts[0].split(",")[0]); x1 = float(pts[1].split(",")[0]); xe = float(pts[3].split(",")[0])
assert abs((x1 - x0) / (xe - x0) - 0.25) < 0.01, (x0, x1, xe)'
$SAMPO timeline exact.prof -o x.svg 2>err.txt; check "timeline without samples fails" test $? -eq 1
if command -v rsvg-convert >/dev/null; then check "timeline renders" rsvg-convert tl.svg -o tl.png; fi

# --- compare (hand-computed: overlap = .2+.36+.04+.3 = 0.90)
$SAMPO compare split.prof split.prof >same.txt
check "compare self identical" has same.txt "correlation(self):  1.0000"
check "compare overlap identical" has same.txt "overlap:            100.00%"
$SAMPO compare split.prof shifted.prof >cmp.txt
expect=$(python3 -c '
import math
a=[0,450,300,200,50,0]; b=[0,360,400,200,40,0]
ma=sum(a)/6; mb=sum(b)/6
c=sum((x-ma)*(y-mb) for x,y in zip(a,b))/math.sqrt(sum((x-ma)**2 for x in a)*sum((y-mb)**2 for y in b))
print("%.4f"%c)')
check "compare pearson" has cmp.txt "correlation(self):  $expect"
check "compare overlap" has cmp.txt "overlap:            90.00%"
check "compare top diff" bash -c "sed -n 10p cmp.txt | grep -qE '45.00% +36.00% +-9.00  hot'"
# --ignore / --focus select samples in both first: without warm, 450+50+200 of 700 against
# 360+40+200 of 600 -> .6 + .0667 + .2857 = 95.24%; hot's samples alone (hot 9/10, memcpy 1/10 in
# both) agree exactly
$SAMPO compare --ignore '^warm$' split.prof shifted.prof >cmp-ign.txt
check "compare --ignore overlap" has cmp-ign.txt "overlap:            95.24%"
$SAMPO compare --focus '^hot$' split.prof shifted.prof >cmp-foc.txt
check "compare --focus overlap" has cmp-foc.txt "overlap:            100.00%"
$SAMPO compare --ignore '(' split.prof shifted.prof 2>err.txt; check "compare bad regex fails" test $? -eq 2
check "compare bad regex msg" has err.txt "sampo compare: split.prof:"

# --- CC-Map JSON dump (as `som --prof-dump` will write it): read by every tool
cat >dump.json <<'JSON'
{"format": "sampo-ccmap", "version": 1, "flavour": "sampled",
 "methods": [{"name": "A>>run", "self": 0, "total": 360}, {"name": "B>>step", "self": 0, "total": 360},
             {"name": "C>>inner", "self": 0, "total": 360}, {"name": "D>>leaf", "self": 240, "total": 240},
             {"name": "E>>go", "self": 0, "total": 120}, {"name": "F>>leaf", "self": 120, "total": 120}],
 "nodes": [{"parent": -1, "method": 0, "self": 0, "total": 240},
           {"parent": 0, "method": 1, "self": 0, "total": 240},
           {"parent": 1, "method": 2, "self": 0, "total": 240},
           {"parent": 2, "method": 3, "self": 240, "total": 240},
           {"parent": -1, "method": 4, "self": 0, "total": 120},
           {"parent": 4, "method": 1, "self": 0, "total": 120},
           {"parent": 5, "method": 2, "self": 0, "total": 120},
           {"parent": 6, "method": 5, "self": 120, "total": 120}]}
JSON
$SAMPO report dump.json >dump.txt; check "json dump report" has dump.txt " 66.67%  66.67%  66.67%        240        240  D>>leaf"
$SAMPO flame dump.json -o dump.svg; check "json dump flame" has dump.svg "<title>E&gt;&gt;go (120, 33.33%)</title>"
# som.prof has the same two contexts at 240/120 plus 40 GC samples: overlap = 240/360... by hand:
# A: ABCD .6667, EBCF .3333; B: ABCD .6, EBCF .3, A;Object>>printString;gc_mark .1 -> .6 + .3 = 90%
$SAMPO compare dump.json som.prof >dump-cmp.txt; check "json dump compare" has dump-cmp.txt "overlap:            90.00%"
# exact dump with times: --time compares by self time (A 4 ns of 10, B 6 ns) -> overlap with
# the count-weighted view of the same dump's tree differs as computed by hand
cat >timed.json <<'JSON'
{"format": "sampo-ccmap", "version": 1, "flavour": "exact",
 "methods": [{"name": "M", "self": 1, "total": 1001, "self_ns": 4, "total_ns": 10},
             {"name": "K", "self": 1000, "total": 1000, "self_ns": 6, "total_ns": 6}],
 "nodes": [{"parent": -1, "method": 0, "self": 1, "total": 1001, "time_ns": 10},
           {"parent": 0, "method": 1, "self": 1000, "total": 1000, "time_ns": 6}]}
JSON
cat >even.json <<'JSON'
{"format": "sampo-ccmap", "version": 1,
 "methods": [{"name": "M", "self": 1, "total": 2}, {"name": "K", "self": 1, "total": 1}],
 "nodes": [{"parent": -1, "method": 0, "self": 1, "total": 2},
           {"parent": 0, "method": 1, "self": 1, "total": 1}]}
JSON
$SAMPO compare --time timed.json even.json >tw.txt
check "compare --time overlap" has tw.txt "overlap:            90.00%"
$SAMPO compare timed.json even.json >cw.txt
check "compare counts overlap" has cw.txt "overlap:            50.10%"
echo '{"format": "sampo-ccmap", "version": 1, "methods": [{"name": 3}]}' >bad.json
$SAMPO report bad.json 2>err.txt; check "json dump error exit" test $? -eq 1
check "json dump error message" has err.txt 'sampo: bad.json: 1:62: expected member "name" as a string, got another type'

# --- errors
head -c 100 split.prof >trunc.prof
$SAMPO report trunc.prof 2>err.txt; check "truncated file exit 1" test $? -eq 1
check "truncated file message" grep -qE '^sampo: trunc.prof: offset 0x[0-9a-f]+.*expected' err.txt
$SAMPO report nonexist.prof 2>err.txt; check "missing file message" has err.txt "nonexist.prof: No such file"
$SAMPO export split.prof 2>/dev/null; check "export needs a format" test $? -eq 2
$SAMPO bogus 2>/dev/null; check "unknown command" test $? -eq 2
for c in record report export flame hist compare timeline; do
    $SAMPO $c --help >help.txt; check "$c --help" has help.txt "usage: sampo $c"
done

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
