#!/usr/bin/env bash
# End-to-end tests of native symbols under `sampo record` (see CMakeLists.txt).
#   libc:      libc_work's time in libc internals is named from libc6-dbg (77 if missing)
#   debuglink: a stripped sym_prog gets its names back from its own debug file, found by
#              .gnu_debuglink (next to it, in .debug/, under the debug root), by build-id and
#              from .gnu_debugdata, in that order of preference (debugdata, build-id, link);
#              a debug file with a wrong CRC or a wrong build-id is refused (and said so)
#   plt:       samples in a PLT entry are charged to "plt_target_fn@plt"
#   stable:    unknown code is "[unknown] sym_prog+0xVADDR", VADDR the function's start (from
#              .eh_frame), the same names in two runs
#   cxx:       C++ names demangled (cxx_prog.cpp, built here with c++; 77 without one)
# usage: symbols_test.sh PART SAMPO PRELOAD LIBC_WORK SYM_PROG PLT_PROG WORKDIR
set -uo pipefail
PART=$1 W=$7
SAMPO=$(realpath "$2") PRELOAD=$(realpath "$3") LIBC_WORK=$(realpath "$4") SYM_PROG=$(realpath "$5")
PLT_PROG=$(realpath "$6")
HERE=$(cd "$(dirname "$0")" && pwd)
for f in "$SAMPO" "$PRELOAD" "$LIBC_WORK" "$SYM_PROG" "$PLT_PROG"; do
    [ -f "$f" ] || { echo "FAIL: $f missing"; exit 1; }
done
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
export SAMPO_PRELOAD=$PRELOAD SAMPO_DEBUG_ROOT=$W/no-root
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
# record NAME CMD...: profile NAME.prof, report NAME.txt, flat profile NAME.flat
record() {
    local n=$1; shift
    "$SAMPO" record -q -F 1000 -o "$n.prof" -- "$@" >/dev/null || echo "  ($n: exit $?)"
    "$SAMPO" report --limit 0 "$n.prof" >"$n.txt" && python3 "$HERE/flat.py" "$n.txt" >"$n.flat"
}
# self FLAT REGEX: samples of functions whose name matches REGEX
self() { awk -F'\t' -v re="$2" '$2 ~ re {s += $1} END {print s + 0}' "$1"; }
total() { awk -F'\t' '{s += $1} END {print s + 0}' "$1"; }
meta() { sed -n "s/^# $2 *//p" "$1"; }
# at_least FLAT REGEX PERCENT: those functions have at least PERCENT% of all samples
at_least() {
    local s t; s=$(self "$1" "$2") t=$(total "$1")
    [ "$t" -gt 0 ] && [ $((100 * s)) -ge $(($3 * t)) ] || {
        echo "  $2: $s of $t samples in $1:"; head -12 "$1"; return 1; }
}
has() { grep -qF -- "$2" "$1" || { echo "  '$2' not in $1"; return 1; }; }

case $PART in
libc)
    libc=$(ldd "$LIBC_WORK" | awk '/libc\.so/ {print $3}')
    id=$(readelf -n "$libc" | awk '/Build ID/ {print $3}')
    dbg=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
    [ -r "$dbg" ] || { echo "skipped: $dbg missing (libc6-dbg not installed)"; exit 77; }
    unset SAMPO_DEBUG_ROOT
    record libc "$LIBC_WORK" 40
    check "libc's symbols from its build-id debug file" has libc.txt "libc.so.6:build-id"
    check "qsort's merge sort named (msort_with_tmp, static in libc)" \
        at_least libc.flat '^msort_with_tmp' 5
    check "memmove's variant named (__memmove_*)" at_least libc.flat '^__memmove_' 5
    check "malloc internals named (_int_malloc/_int_free)" at_least libc.flat '^_int_(malloc|free)' 1
    check "at most 2% of the samples unknown" python3 - libc.flat <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
unk = sum(int(r[0]) for r in rows if r[1].startswith("[unknown"))
tot = sum(int(r[0]) for r in rows)
print("  unknown %d of %d" % (unk, tot))
assert tot > 0 and unk * 50 <= tot
PY
    "$SAMPO" export --collapsed libc.prof -o libc.collapsed
    check "names reach the collapsed export" grep -q 'msort_with_tmp' libc.collapsed
    "$SAMPO" flame libc.prof -o libc.svg
    check "names reach the flame graph" grep -q '__memmove_' libc.svg
    ;;
debuglink)
    cp "$SYM_PROG" sym_prog.full
    objcopy --only-keep-debug sym_prog.full sym_prog.debug
    objcopy --strip-all --add-gnu-debuglink=sym_prog.debug sym_prog.full sym_prog
    check "the binary is stripped (no .symtab)" bash -c "! readelf -S sym_prog | grep -q '\.symtab'"
    check "it has a .gnu_debuglink" bash -c "readelf -S sym_prog | grep -q gnu_debuglink"
    id=$(readelf -n sym_prog | awk '/Build ID/ {print $3}')
    mkdir -p d1 d2/.debug d3 root3/"$W"/d3 root4/.build-id/"${id:0:2}" d4 d5 d6 \
        root6/.build-id/"${id:0:2}" d7
    for d in d1 d2 d3 d4 d5 d6 d7; do cp sym_prog "$d/"; done
    cp sym_prog.debug d1/                                   # next to the object
    cp sym_prog.debug d2/.debug/                            # its .debug/
    cp sym_prog.debug root3/"$W"/d3/                        # debug root + its directory
    cp sym_prog.debug root4/.build-id/"${id:0:2}/${id:2}.debug" # by build-id
    cp sym_prog.debug d5/ && printf 'x' >>d5/sym_prog.debug # still ELF, wrong CRC
    objcopy --only-keep-debug "$LIBC_WORK" root6/.build-id/"${id:0:2}/${id:2}.debug" # wrong id
    for case in "d1 debuglink" "d2 debuglink" "d3 debuglink root3" "d4 build-id root4"; do
        set -- $case
        SAMPO_DEBUG_ROOT=$W/${3:-no-root} record "$1" "$W/$1/sym_prog" 100
        check "$1: names from the $2 file" has "$1.txt" "sym_prog:$2"
        check "$1: sym_alpha_spin named (>= 40%)" at_least "$1.flat" '^sym_alpha_spin$' 40
        check "$1: sym_beta_spin named (>= 15%)" at_least "$1.flat" '^sym_beta_spin$' 15
    done
    record d5 "$W/d5/sym_prog" 100
    check "d5: wrong CRC refused" has d5.txt "debuginfo_refused 1"
    check "d5: the reason names the CRC" bash -c "grep -q 'debuginfo_refused_why.*d5/sym_prog.debug: CRC 0x.*wants 0x' d5.txt"
    check "d5: names fall back to object+offset" at_least d5.flat '^\[unknown\] sym_prog\+0x' 60
    check "d5: no sym_alpha_spin" test "$(self d5.flat '^sym_alpha_spin$')" = 0
    SAMPO_DEBUG_ROOT=$W/root6 record d6 "$W/d6/sym_prog" 100
    check "d6: a debug file with another build-id refused" has d6.txt "debuginfo_refused 1"
    check "d6: the reason names the build-id" bash -c "grep -q 'debuginfo_refused_why.*build-id' d6.txt"
    check "d6: no sym_alpha_spin" test "$(self d6.flat '^sym_alpha_spin$')" = 0
    # MiniDebugInfo: .symtab in an xz-compressed ELF inside the object (comes before the files)
    objcopy --strip-debug --remove-section=.comment sym_prog.debug mini && xz -f mini
    mkdir -p d8 && objcopy --add-section .gnu_debugdata=mini.xz sym_prog d8/sym_prog
    cp sym_prog.debug d8/
    record d8 "$W/d8/sym_prog" 100
    check "d8: names from .gnu_debugdata, before the debuglink file" has d8.txt "sym_prog:gnu_debugdata"
    check "d8: sym_alpha_spin named (>= 40%)" at_least d8.flat '^sym_alpha_spin$' 40
    # build-id comes before .gnu_debuglink
    mkdir -p d9 && cp sym_prog sym_prog.debug d9/
    SAMPO_DEBUG_ROOT=$W/root4 record d9 "$W/d9/sym_prog" 100
    check "d9: build-id before debuglink" has d9.txt "sym_prog:build-id"
    record d7 "$W/d7/sym_prog" 100
    check "d7: no debug file: nothing refused" bash -c "! grep -q debuginfo_refused d7.txt"
    check "d7: no debug file: object+offset" at_least d7.flat '^\[unknown\] sym_prog\+0x' 60
    ;;
plt)
    check "plt_prog has a PLT" bash -c "readelf -S '$PLT_PROG' | grep -qE '\.plt(\.sec)? '"
    record plt "$PLT_PROG" 300
    # the stub is one jump against the function's body: its share of the samples depends on
    # the machine (0-5% seen here, 0 in some runs on an idle machine), so no share is asserted;
    # what must hold is that a sample in it is never left unnamed or charged to _init (below).
    # The @plt name itself is checked without sampling in tests/unit (symbols: PLT entries).
    check "no sample in sym_plt_prog left unnamed" test "$(self plt.flat '^\[unknown\] sym_plt_prog')" = 0
    check "plt_target_fn itself named" at_least plt.flat '^plt_target_fn$' 3
    check "nothing charged to _init" test "$(self plt.flat '^_init$')" = 0
    ;;
stable)
    cp "$SYM_PROG" sym_prog.full && objcopy --strip-all sym_prog.full sym_prog
    record run1 "$W/sym_prog" 100
    record run2 "$W/sym_prog" 100
    check "unknown code named [unknown] sym_prog+0x..." at_least run1.flat '^\[unknown\] sym_prog\+0x[0-9a-f]+$' 60
    text=$(readelf -SW sym_prog | awk '$2 == ".text" {print $4, $6}')
    fns=$(nm sym_prog.full | sed -nE 's/^0*([0-9a-f]+) . sym_(alpha|beta)_spin$/[unknown] sym_prog+0x\1/p')
    check "one name per unnamed function: its start (from .eh_frame)" python3 - run1.flat "$fns" <<'PY'
import sys
want = set(sys.argv[2].splitlines())
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
got = sum(int(r[0]) for r in rows if r[1] in want)
tot = sum(int(r[0]) for r in rows)
print("  %d of %d samples under %s" % (got, tot, sorted(want)))
assert len(want) == 2 and tot > 0 and got >= 0.95 * tot
PY
    check "the same names in both runs, offsets inside .text" python3 - run1.flat run2.flat $text <<'PY'
import sys
def unknown(path):
    d = {}
    for l in open(path):
        n, name, obj = l.rstrip("\n").split("\t")
        if name.startswith("[unknown] sym_prog+0x"):
            d[name] = d.get(name, 0) + int(n)
    return d
a, b = unknown(sys.argv[1]), unknown(sys.argv[2])
lo = int(sys.argv[3], 16); hi = lo + int(sys.argv[4], 16)
for name in list(a) + list(b):
    off = int(name.split("+")[1], 16)
    assert lo <= off < hi, (name, hex(lo), hex(hi))
shared = set(a) & set(b)
for d in (a, b):  # the names of the same code must not depend on the load address
    frac = sum(d[k] for k in shared) / max(1, sum(d.values()))
    print("  %.1f%% of the unknown samples under names seen in both runs" % (100 * frac))
    assert frac >= 0.9
PY
    ;;
cxx)
    command -v c++ >/dev/null || { echo "skipped: no c++ compiler"; exit 77; }
    c++ -O1 -fno-omit-frame-pointer -o cxx_prog "$HERE/cxx_prog.cpp" || exit 1
    record cxx "$W/cxx_prog" 100
    check "member function demangled (>= 40%)" \
        at_least cxx.flat '^sampo_test::Spinner::spin\(unsigned long\)$' 40
    check "function template demangled (>= 15%)" \
        at_least cxx.flat '^unsigned long sampo_test::twice<unsigned long>\(unsigned long\)$' 15
    check "no mangled names left" test "$(self cxx.flat '^_Z')" = 0
    ;;
*)
    echo "usage: symbols_test.sh libc|debuglink|plt|stable|cxx SAMPO PRELOAD LIBC_WORK SYM_PROG PLT_PROG WORKDIR"
    exit 2
    ;;
esac
echo "$fails failed"
[ "$fails" -eq 0 ]
