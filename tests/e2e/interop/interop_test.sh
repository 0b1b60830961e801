#!/usr/bin/env bash
# Interop of sampo's exports with their real consumers (issue 14):
#   - go tool pprof (Debian golang-go) -raw/-top/-list/-diff_base/-disasm: sample types and
#     units, period, totals, time_nanos, comments, build IDs, per-PC locations, native and
#     SOM source lines, tid/pid/thread labels, no panic on SOM profiles;
#   - upstream pprof, built offline from the copy Debian's golang-go vendors (Go's own
#     `go tool pprof` cannot disassemble non-Go PIE binaries), for -disasm and -http;
#   - speedscope's JSON schema (npm speedscope 1.25, node_modules next to this script or
#     $SPEEDSCOPE_SCHEMA) for every speedscope export;
#   - a 2 kB UTF-8 name with ';', '%' and '"' through report, collapsed, speedscope, pprof
#     and the flame SVG and HTML (in Chromium); C++/Rust demangling; a thread renamed after
#     registration; collapsed and report --lines.
# usage: interop_test.sh SAMPO GEN_NAMES RENAME_PROG PRELOAD|"" SOM|"" SRCDIR WORKDIR
set -uo pipefail
SAMPO=$1 GEN=$2 PROG=$3 PRELOAD=$4 SOM=$5 SRC=$6 W=$7
HERE=$(cd "$(dirname "$0")" && pwd)
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
has() { grep -qF -- "$2" "$1" || { echo "  '$2' not in $1:"; head -40 "$1"; return 1; }; }
skip() { echo "SKIP $*"; }

export GOCACHE=$(dirname "$W")/gocache GOPATH=$(dirname "$W")/gopath HOME=${HOME:-$W} GOFLAGS=-mod=mod GOPROXY=off
HAVE_GO=0
command -v go >/dev/null && HAVE_GO=1
GP() { go tool pprof "$@"; }

# upstream pprof from Debian's vendored copy (offline); "" when it cannot be built
UP=""
build_upstream_pprof() {
    local v; v=$(go env GOROOT 2>/dev/null)/src/cmd/vendor/github.com
    [ -d "$v/google/pprof" ] && [ -d "$v/ianlancetaylor/demangle" ] || return 1
    mkdir -p up && cp -r "$v/google/pprof" up/pprof && cp -r "$v/ianlancetaylor/demangle" up/demangle &&
        printf 'module github.com/google/pprof\ngo 1.17\nrequire github.com/ianlancetaylor/demangle v0.0.0\nreplace github.com/ianlancetaylor/demangle => ../demangle\n' >up/pprof/go.mod &&
        printf 'module github.com/ianlancetaylor/demangle\ngo 1.12\n' >up/demangle/go.mod &&
        mkdir -p up/pprof/cmd/upprof &&
        printf 'package main\n\nimport (\n\t"fmt"\n\t"os"\n\n\t"github.com/google/pprof/driver"\n)\n\nfunc main() {\n\tif err := driver.PProf(&driver.Options{}); err != nil {\n\t\tfmt.Fprintln(os.Stderr, err)\n\t\tos.Exit(2)\n\t}\n}\n' >up/pprof/cmd/upprof/main.go &&
        (cd up/pprof && go build -o "$W/upprof" ./cmd/upprof) && UP=$W/upprof
}
[ $HAVE_GO = 1 ] && { build_upstream_pprof || skip "upstream pprof (vendored source not found)"; }

# speedscope schema: $SPEEDSCOPE_SCHEMA, else the npm package installed next to this script
SCHEMA=${SPEEDSCOPE_SCHEMA:-$HERE/node_modules/speedscope/dist/release/file-format-schema.json}
validate_speedscope() { # FILE
    python3 - "$1" "$SCHEMA" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1], encoding="utf-8"))
import jsonschema
schema = json.load(open(sys.argv[2]))
jsonschema.validate(doc, schema)
EOF
}
HAVE_SCHEMA=0
if [ -f "$SCHEMA" ] && python3 -c 'import jsonschema' 2>/dev/null; then HAVE_SCHEMA=1; else
    skip "speedscope schema validation (npm ci --prefix tests/e2e/interop; python3-jsonschema)"; fi
# pprof's web UI (-http) on FILE: every view answers, none with a server error or a panic
web_ui_ok() { # FILE
    python3 - "$UP" "$1" <<'EOF'
import socket, subprocess, sys, time, urllib.error, urllib.request
s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
p = subprocess.Popen([sys.argv[1], "-http=127.0.0.1:%d" % port, "-no_browser", sys.argv[2]],
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
codes = {}
try:
    for view in ["ui/top", "ui/flamegraph", "ui/peek?f=.", "ui/source?f=.", "ui/disasm?f=."]:
        for _ in range(100):
            try:
                codes[view] = urllib.request.urlopen("http://127.0.0.1:%d/%s" % (port, view),
                                                     timeout=60).status
                break
            except urllib.error.HTTPError as e:
                codes[view] = e.code
                break
            except OSError:
                if p.poll() is not None:
                    break
                time.sleep(0.2)
finally:
    p.kill()
log = p.communicate()[0].decode(errors="replace")
print(codes)
assert "panic" not in log, log[-2000:]
assert codes.get("ui/top") == 200 and all(c < 500 for c in codes.values()), codes
EOF
}

speedscope_ok() { # NAME FILE
    if [ $HAVE_SCHEMA = 1 ]; then check "$1: speedscope schema" validate_speedscope "$2"; fi
}

# ---------------------------------------------------------------------------------------
# 1. Synthetic profile: a 2 kB UTF-8 name, mangled names, a rate change (1 ms -> 4 ms)
$GEN names.prof >longname.txt || { echo "FAIL gen_names"; exit 1; }
LONG=$(cat longname.txt)
check "long name is > 2000 bytes" test "$(printf %s "$LONG" | wc -c)" -gt 2000

$SAMPO report names.prof >names-report.txt; check "report exit" test $? -eq 0
check "report: whole long name" has names-report.txt "$LONG"
check "report: C++ demangled" has names-report.txt "outer::inner::work(int)"
check "report: Rust demangled (no hash)" grep -qE ' core::fmt::write$' names-report.txt

$SAMPO export --collapsed names.prof -o names.collapsed
check "collapsed: ';' '%' escaped, name whole, 250 ms total" python3 - names.collapsed "$LONG" <<'EOF'
import sys, urllib.parse
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
long = sys.argv[2]
total = 0
found = False
for ln in lines:
    path, w = ln.rsplit(" ", 1)
    total += int(w)
    frames = [urllib.parse.unquote(f) for f in path.split(";")]
    found |= frames[-1] == long
    assert len(frames) == 2, ln[:80]
assert found, "long name not found"
assert total == 250_000_000, total
assert any(l.startswith("main;outer::inner::work(int) ") for l in lines)
EOF

$SAMPO export --speedscope names.prof -o names.speedscope.json
speedscope_ok "names" names.speedscope.json
check "speedscope: long name, unit, 250 ms" python3 - names.speedscope.json "$LONG" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
names = [f["name"] for f in d["shared"]["frames"]]
assert sys.argv[2] in names
assert "outer::inner::work(int)" in names and "core::fmt::write" in names, names
p = d["profiles"][0]
assert p["unit"] == "nanoseconds" and sum(p["weights"]) == 250_000_000 == p["endValue"]
EOF

$SAMPO flame names.prof -o names.svg
check "flame: SVG parses, title has the whole long name" python3 - names.svg "$LONG" <<'EOF'
import sys, xml.dom.minidom as m
doc = m.parse(sys.argv[1])
titles = [t.firstChild.data for t in doc.getElementsByTagName("title") if t.firstChild]
assert any(t.startswith(sys.argv[2] + " (") for t in titles), titles[:3]
EOF

$SAMPO export --pprof names.prof -o names.pb.gz
if [ $HAVE_GO = 1 ]; then
    GP -raw names.pb.gz >names-raw.txt 2>&1; check "pprof -raw exit" test $? -eq 0
    check "pprof: whole long name" has names-raw.txt "$LONG"
    check "pprof: demangled name, mangled system_name" \
        has names-raw.txt "outer::inner::work(int) :0 s=0(_ZN5outer5inner4workEi)"
    check "pprof: Rust system_name kept" has names-raw.txt "(_ZN4core3fmt5write17h0123456789abcdefE)"
    check "pprof: sample types" has names-raw.txt "samples/count cpu/nanoseconds"
    check "pprof: build ID" has names-raw.txt "/bin/prog 0123456789abcdef0123456789abcdef01234567"
    # every field the exporter writes, as the real tool reads it back (byte-exact)
    $GEN --roundtrip rt.prof && $SAMPO export --pprof rt.prof -o rt.pb.gz
    TZ=UTC GP -raw rt.pb.gz >rt.raw 2>&1
    check "pprof round trip: every field (roundtrip.raw)" diff -u "$HERE/roundtrip.raw" rt.raw
    GP -top names.pb.gz >names-top.txt 2>&1
    check "pprof: cpu total follows the rate change (250 ms)" has names-top.txt "of 250ms total"
    check "pprof: comment" has names-top.txt "rate: requested"
else
    skip "go tool pprof (golang-go not installed)"
fi

# ---------------------------------------------------------------------------------------
# 1b. The interactive flame graph in a real browser (Debian's chromium + npm playwright-core)
$GEN --shifted names2.prof >/dev/null
$SAMPO flame --html -t names names.prof -o names.html; check "flame --html exit" test $? -eq 0
$SAMPO flame --diff names.prof -t diff names2.prof -o diff.html; check "flame --diff exit" test $? -eq 0
check "flame html: no external references" bash -c "! grep -qiE '(src|href)=|https?://' names.html diff.html"
$SAMPO flame --diff names.prof 2>/dev/null; check "flame --diff without NEW: usage error" test $? -eq 2
if [ $HAVE_GO = 1 ]; then # the same comparison in pprof: the C++ frame grew by 65 ms
    $SAMPO export --pprof names2.prof -o names2.pb.gz
    GP -top -diff_base=names.pb.gz names2.pb.gz >diff-top.txt 2>&1
    check "pprof -diff_base" grep -qE '^ +65ms 26\.00% .* outer::inner::work\(int\)$' diff-top.txt
fi
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}
if command -v node >/dev/null && [ -n "$CHROMIUM" ] && [ -d "$HERE/node_modules/playwright-core" ]; then
    mkdir -p screenshots
    node "$HERE/flame_browser_test.js" "$CHROMIUM" names.html diff.html screenshots >browser.txt 2>&1
    check "flame html in Chromium (browser.txt, screenshots/)" test $? -eq 0
    sed 's/^/    /' browser.txt
else
    skip "browser test (needs node, chromium, npm ci --prefix tests/e2e/interop)"
fi

# ---------------------------------------------------------------------------------------
# 2. A native program under sampo record: renamed threads, units, build IDs, PCs, totals
if [ -n "$PRELOAD" ] && [ -f "$PRELOAD" ]; then
    export SAMPO_PRELOAD=$PRELOAD
    $SAMPO record -q -F 1000 -o r.prof -- "$PROG" 0.5 >spin.txt; check "record exit" test $? -eq 0
    $SAMPO report r.prof >r-report.txt
    check "renamed worker reported by its last name" grep -qE ' late-worker +spin' r-report.txt
    check "renamed main reported by its last name" grep -qE ' late-main +spin' r-report.txt
    $SAMPO export --speedscope r.prof -o r.speedscope.json; speedscope_ok "native" r.speedscope.json
    $SAMPO export --collapsed --lines r.prof -o r-lines.collapsed
    check "collapsed --lines: native leaf name:line (DWARF)" grep -qE ';spin:3[0-6] [0-9]+$' r-lines.collapsed
    $SAMPO report --lines r.prof >r-lines-report.txt
    check "report --lines: native file:line" grep -qE '  /\S*rename_prog\.c:3[0-6]  spin$' r-lines-report.txt
    check "speedscope thread names" grep -q '"late-worker (tid ' r.speedscope.json
    check "speedscope: native function file and line (DWARF)" python3 - r.speedscope.json <<'EOF2'
import json, sys
fr = [f for f in json.load(open(sys.argv[1]))["shared"]["frames"] if f["name"] == "spin"]
src = fr[0].get("file", "") if fr else ""
# the line of spin's definition, read from the source (a header line added above moves it)
want = next(i for i, l in enumerate(open(src), 1) if "static void spin(void)" in l) if src else 0
assert src.endswith("/rename_prog.c") and fr[0].get("line") == want, (fr, want)
EOF2
    $SAMPO export --pprof r.prof -o r.pb.gz
    if [ $HAVE_GO = 1 ]; then
        GP -raw r.pb.gz >r-raw.txt 2>&1
        check "pprof: samples/count cpu/nanoseconds" has r-raw.txt "samples/count cpu/nanoseconds"
        check "pprof: period type" has r-raw.txt "PeriodType: cpu nanoseconds"
        check "pprof: time_nanos" grep -qE '^Time: 2[0-9]{3}-' r-raw.txt
        check "pprof: duration" grep -qE '^Duration: ' r-raw.txt
        check "pprof: comment trigger" grep -qE '^Comment: trigger: ' r-raw.txt
        check "pprof: comment command" has r-raw.txt "Comment: command: $PROG 0.5"
        check "pprof: comment dropped" grep -qE '^Comment: dropped samples: [0-9]+' r-raw.txt
        check "pprof: thread label (last name)" has r-raw.txt "thread:[late-worker]"
        check "pprof: numeric tid and pid labels" grep -qE 'pid:\[[0-9]+\] tid:\[[0-9]+\]' r-raw.txt
        bid=$(readelf -n "$PROG" | sed -n 's/.*Build ID: //p')
        check "pprof: program's build ID in its mapping" grep -qE " $PROG $bid \[FN\]" r-raw.txt
        $SAMPO export --pprof --no-lines r.prof -o r-nolines.pb.gz
        GP -raw r-nolines.pb.gz >r-nolines.txt 2>&1
        check "pprof --no-lines: no line flags" grep -qE " $PROG $bid \[FN\]\$" r-nolines.txt
        check "pprof: libc mapping has a build ID" grep -qE 'libc\.so\.6 [0-9a-f]{40}' r-raw.txt
        check "pprof: mapping has lines and inlines" grep -qE " $PROG $bid \[FN\]\[FL\]\[LN\]\[IN\]" r-raw.txt
        check "pprof: inlined mix expanded under spin's call site" python3 - r-raw.txt <<'EOF'
import re, sys
txt = open(sys.argv[1]).read().split("Locations\n")[1].split("Mappings\n")[0]
assert re.search(r" M=1 mix \S*rename_prog\.c:\d+ s=0\n\s+spin \S*rename_prog\.c:\d+", txt), txt[:800]
EOF
        nspin=$(sed -n '/^Locations/,/^Mappings/p' r-raw.txt | grep -cE ' M=1 (spin|mix) ')
        check "pprof: one location per sampled PC in spin ($nspin)" test "$nspin" -gt 2
        GP -top -focus=spin -sample_index=cpu r.pb.gz >r-top.txt 2>&1
        truth=$(cat spin.txt)
        got=$(sed -n 's/.*accounting for \([0-9.]*\)\(m\?s\),.*/\1 \2/p' r-top.txt | head -1)
        rep=$(sed -n 's/^# weight *cpu, \([0-9.]*\) ms.*/\1/p' r-report.txt)
        all=$(GP -top -sample_index=cpu r.pb.gz 2>&1 | sed -n 's/.* of \([0-9.]*\)\(m\?s\) total.*/\1 \2/p' | head -1)
        check "pprof: cpu total = sampo's time-weighted total ($all vs $rep ms)" python3 -c "
v, u = '$all'.split(); v = float(v) * (1 if u == 'ms' else 1e3)
assert abs(v - float('$rep')) < 0.5, (v, '$rep')"
        # sampling keeps each thread's schedule on its CPU clock (the handler's time and
        # dropped overflows included), so the total is the CPU time within a sample or two
        # per thread: 2% of 1 s at 1 kHz is 20 samples (it was 1-5% short before)
        check "pprof: spin cpu total within 2% of the measured CPU time ($got vs $truth ns)" \
            python3 -c "
v, u = '$got'.split(); v = float(v) * (1e6 if u == 'ms' else 1e9)
t = float('$truth'); assert abs(v - t) <= 0.02 * t, (v, t)"
        $SAMPO record -q -F 500 --mode wall -o w.prof -- "$PROG" 0.2 >/dev/null
        $SAMPO export --pprof w.prof -o w.pb.gz
        GP -raw w.pb.gz >w-raw.txt 2>&1
        check "pprof: wall profile labelled wall" has w-raw.txt "samples/count wall/nanoseconds"
        check "pprof: wall period type" has w-raw.txt "PeriodType: wall nanoseconds"
        $SAMPO report w.prof >w-report.txt; check "report: wall weight" has w-report.txt "# weight           wall,"
        if [ -n "$UP" ]; then
            # -show: pprof computes a file's load base from the first address it is asked
            # about, in map order; an address of another object first (libc, vdso) makes it
            # report "no matches" (gperftools' profiles too): keep only spin's nodes
            "$UP" -disasm=spin -show='^spin$' r.pb.gz >r-disasm.txt 2>&1
            check "upstream pprof -disasm exit" test $? -eq 0
            check "pprof -disasm: routine" has r-disasm.txt "ROUTINE ======================== spin"
            check "pprof -disasm: samples on several instructions" \
                test "$(grep -cE '^ +[0-9.]+m?s +' r-disasm.txt)" -gt 2
            check "upstream pprof -http views on the native profile" web_ui_ok r.pb.gz
        fi
        # Go's own pprof lists from the lines in the profile (no object reading). The compiler
        # decides whether the loop line holds instructions itself (flat) or only mix's
        # inlined ones (cum): spin's call line must carry cum samples
        GP -list='^spin$' r.pb.gz >r-list.txt 2>&1
        check "go tool pprof -list: spin's source with samples on its loop" \
            grep -qE '^ +(\.|[0-9.]+m?s) +[0-9.]+m?s +[0-9]+: +g_sink \+= mix\(i\);' r-list.txt
    fi
else
    skip "sampo record (no preload library)"
fi

# ---------------------------------------------------------------------------------------
# 3. SOM profiles: sampled, the exact-time view (.time) and exact call counts
if [ -n "$SOM" ] && [ -x "$SOM" ]; then
    DEMO=$SRC/examples/Demo.som
    $SOM --prof --prof-hz 1000 --prof-exact-time --prof-out s.sampo "$DEMO" 24 >/dev/null 2>&1
    $SOM --prof=exact --prof-out e.sampo "$DEMO" 20 >e-out.txt 2>&1
    for f in s.sampo s.sampo.time e.sampo; do
        $SAMPO export --speedscope $f -o $f.json; speedscope_ok "som $f" $f.json
        $SAMPO export --pprof $f -o $f.pb.gz
    done
    check "speedscope .time unit" grep -q '"unit":"nanoseconds"' s.sampo.time.json
    # SOM source lines: the method's file and definition line on its frame, the sampled
    # bytecode's line per sample (fib is all on line 5 of Demo.som; run: calls it on 33)
    check "speedscope: SOM frame file and line" python3 - s.sampo.json "$DEMO" <<'EOF2'
import json, sys
frames = json.load(open(sys.argv[1]))["shared"]["frames"]
fr = [f for f in frames if f["name"] == "Demo>>fib:"]
assert len(fr) == 1 and fr[0].get("file") == sys.argv[2] and fr[0].get("line") == 5, fr
import re
som = [f["name"] for f in frames if re.match(r"[A-Za-z]\w*( class)?>>", f["name"])]
assert len(som) == len(set(som)), "a SOM method twice (with and without its file)"
EOF2
    for f in s.sampo.time e.sampo; do # the VM's own views: the same files and lines
        check "speedscope $f: SOM frame file and line" python3 - $f.json "$DEMO" <<'EOF2'
import json, sys
fr = [f for f in json.load(open(sys.argv[1]))["shared"]["frames"] if f["name"] == "Demo>>fib:"]
assert len(fr) == 1 and fr[0].get("file") == sys.argv[2] and fr[0].get("line") == 5, fr
EOF2
    done
    $SAMPO export --collapsed --lines s.sampo -o s-lines.collapsed
    check "collapsed --lines: SOM name:line" grep -qE '(^|;)Demo>>run::33;Demo>>fib::5(;| )' s-lines.collapsed
    $SAMPO export --collapsed s.sampo -o s.collapsed
    check "collapsed without --lines: bare names" bash -c "! grep -q 'fib::5' s.collapsed"
    $SAMPO report --lines s.sampo >s-lines-report.txt
    check "report --lines: Demo.som:5 Demo>>fib:" grep -qE "^ +[0-9.]+% +[0-9]+  $DEMO:5  Demo>>fib:\$" s-lines-report.txt
    $SAMPO report s.sampo.time >t-report.txt
    check "report: .time in nanoseconds" grep -qE 'total weight [0-9]+ \(nanoseconds\)' t-report.txt
    tns=$(sed -n 's/.*total weight \([0-9]*\) (nanoseconds).*/\1/p' t-report.txt)
    if [ $HAVE_GO = 1 ]; then
        GP -raw s.sampo.time.pb.gz >t-raw.txt 2>&1
        check "pprof .time: time/nanoseconds" has t-raw.txt "PeriodType: time nanoseconds"
        sum=$(awk '/^Samples:/{s=1;next} /^Locations/{s=0} s && /:/{split($0,a,":"); v+=a[1]} END{printf "%.0f", v}' t-raw.txt)
        check "pprof .time total = the profile's own total ($sum vs $tns ns)" test "$sum" = "$tns"
        GP -top s.sampo.time.pb.gz >t-top.txt 2>&1; check "pprof .time type" has t-top.txt "Type: time"
        # the .time total against the run's CPU time as the same run's samples measure it
        # (JIT off: one VM thread): two clocks, the exact one read at every transition and
        # the sampling schedule on the thread's CPU clock (see trig_scheduled in
        # src/prof/trigger.c). Both take descheduled stretches out and count system time,
        # so they agree within a few samples: 0.1-1.3% of fib 30's ~690 ms idle, 2.1% once
        # in CI beside the other tests (14.5 ms, failing the 2% bound then in force). The
        # difference is a few to ~15 ms whatever the run's length, so the run is fib 31
        # (~1.1 s: 0.4-0.9% idle) and the bound 2.5%. A unit error is 1000x or more; the old
        # per-sample loss of perf-sw sampling was 1-5%.
        ctot() { GP -top "$@" 2>&1 | sed -n 's/.* of \([0-9.]*\)\(ms\|s\|us\) total.*/\1 \2/p' | head -1; }
        $SOM --prof --prof-hz 1000 --prof-exact-time --jit=off --prof-out c.sampo "$DEMO" 31 >/dev/null 2>&1
        $SAMPO export --pprof c.sampo -o c.pb.gz && $SAMPO export --pprof c.sampo.time -o ct.pb.gz
        cs=$(ctot -sample_index=cpu -tagfocus=thread=som c.pb.gz) ct=$(ctot ct.pb.gz)
        check "pprof .time total = the run's sampled CPU time within 2.5% ($ct vs $cs)" \
            python3 -c "
ms = lambda v, u: float(v) * {'us': 1e-3, 'ms': 1, 's': 1e3}[u]
t, s = ms(*'$ct'.split()), ms(*'$cs'.split())
assert s > 100 and abs(t - s) <= 0.025 * t, (t, s)"
        GP -raw e.sampo.pb.gz >e-raw.txt 2>&1; check "pprof exact: calls/count" has e-raw.txt "calls/count"
        # exact counts are the program's own: Demo prints how many calls nfib made
        nfib() { sed -n 's/^nfib([0-9]*) = \([0-9]*\) calls.*/\1/p' "$1"; }
        $SOM --prof=exact --prof-out e24.sampo "$DEMO" 24 >e24-out.txt 2>&1
        $SAMPO export --pprof e24.sampo -o e24.pb.gz
        n20=$(nfib e-out.txt) n24=$(nfib e24-out.txt)
        GP -top e24.pb.gz >e24-top.txt 2>&1
        check "pprof -top exact: Demo>>fib: calls = the program's count ($n24)" \
            grep -qE "^ +$n24 +[0-9.]+% .* Demo>>fib:\$" e24-top.txt
        GP -top -diff_base=e.sampo.pb.gz e24.pb.gz >e-diff.txt 2>&1
        check "pprof -diff_base exact: Demo>>fib: grew by $n24 - $n20 calls" \
            grep -qE "^ +$((n24 - n20)) +[0-9.]+% .* Demo>>fib:\$" e-diff.txt
        GP -raw s.sampo.pb.gz >s-raw.txt 2>&1
        check "pprof som: samples + cpu" has s-raw.txt "samples/count cpu/nanoseconds"
        check "pprof som: method location without mapping, non-canonical address, line" \
            grep -qE "^ +[0-9]+: 0x8000000000000[0-9a-f]{3} Demo>>fib: $DEMO:5 s=5\$" s-raw.txt
        GP -list='^Demo>>fib:$' s.sampo.pb.gz >s-list.txt 2>&1
        check "go tool pprof -list: a SOM method's source with its samples" \
            grep -qE '^ +[0-9.]+m?s +[0-9.]+m?s +5: +fib: n = \( \^ n < 2' s-list.txt
        # Go's own pprof panicked here on address-0 locations (a TLS symbol of som sits at 0)
        for f in s.sampo s.sampo.time e.sampo; do
            GP -disasm=. $f.pb.gz >gd.txt 2>&1
            check "go tool pprof -disasm=. on som $f: no panic" bash -c "! grep -q panic gd.txt"
        done
        if [ -n "$UP" ]; then
            for f in s.sampo s.sampo.time e.sampo; do
                "$UP" -disasm=. $f.pb.gz >d.txt 2>&1
                check "upstream pprof -disasm=. on som $f: no panic" bash -c "! grep -q panic d.txt"
                check "upstream pprof -http views on som $f (incl. /ui/disasm)" web_ui_ok $f.pb.gz
            done
        fi
    fi
else
    skip "som profiles (no som binary)"
fi

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
