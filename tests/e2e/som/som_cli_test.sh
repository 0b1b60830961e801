#!/usr/bin/env bash
# The `som` command line a new user meets (issue 15): `som --prof` without --prof-out or
# --prof-report writes som.sampo (som-PID.sampo with --threads) and says so on stderr; a
# missing main file is named on stderr (status 2); a runtime error prints the SOM traceback
# (Class>>selector (file:line) per activation) on stderr in every JIT mode.
# usage: som_cli_test.sh SOM WORKDIR [SAMPO]   (SAMPO, when given, must read the profiles)
set -uo pipefail
SOM=$1 W=$2 SAMPO=${3:-}
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { # check NAME COMMAND...
    local name=$1; shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}
has() { grep -qF -- "$2" "$1" || { echo "  '$2' not in $1:"; head -40 "$1"; return 1; }; }
hasnt() { ! grep -qF -- "$2" "$1" || { echo "  '$2' unexpectedly in $1:"; head -40 "$1"; return 1; }; }
status() { # status WANT COMMAND... (stdout to out.txt, stderr to err.txt)
    local want=$1; shift
    "$@" >out.txt 2>err.txt
    local got=$?
    [ "$got" -eq "$want" ] || { echo "  exit $got, want $want: $*"; cat err.txt; return 1; }
}
empty() { [ ! -s "$1" ] || { echo "  $1 not empty:"; head -20 "$1"; return 1; }; }

cat >Loop.som <<'SOM'
Loop = (
    run: args = ( | n | n := 0. 1 to: 200000 do: [:i | n := n + (self f: i) ]. n println )
    f: i = ( ^i % 7 )
)
SOM

# --- 1. the default profile file
mkdir -p d1 && cd d1
check "--prof alone runs" status 0 "$SOM" --prof ../Loop.som
check "--prof alone: stdout unchanged" has out.txt "599997"
check "--prof alone writes som.sampo" test -s som.sampo
check "--prof alone says so" has err.txt "som: profile written to som.sampo"
if [ -n "$SAMPO" ]; then
    check "som.sampo is a profile" status 0 "$SAMPO" report --flat som.sampo
    check "som.sampo names the method" has out.txt "Loop>>f:"
fi
rm -f som.sampo
check "--prof=exact alone runs" status 0 "$SOM" --prof=exact ../Loop.som
check "--prof=exact writes som.sampo and .time" test -s som.sampo -a -s som.sampo.time
check "--prof=exact says both" has err.txt "som.sampo and som.sampo.time"
rm -f som.sampo*
check "--prof-out given" status 0 "$SOM" --prof --prof-out given.sampo ../Loop.som
check "--prof-out: no som.sampo" test ! -e som.sampo -a -s given.sampo
check "--prof-out: no default message" hasnt err.txt "profile written"
check "--prof-report" status 0 "$SOM" --prof --prof-report ../Loop.som
check "--prof-report: no som.sampo" test ! -e som.sampo
check "--prof-report: report on stderr" has err.txt "flat profile"
check "--threads 2 --prof" status 0 "$SOM" --threads 2 --prof ../Loop.som
pidfile=$(ls som-*.sampo 2>/dev/null | head -1)
check "--threads: som-PID.sampo written" test -n "$pidfile" -a ! -e som.sampo
check "--threads: says which" has err.txt "som: profile written to $pidfile"
check "no --prof: nothing written" status 0 "$SOM" ../Loop.som
check "no --prof: stderr empty" empty err.txt
cd ..
mkdir ro && chmod 555 ro && cd ro
if [ ! -w . ]; then
    check "unwritable cwd: refused before the run" status 2 "$SOM" --prof ../Loop.som
    check "unwritable cwd: names som.sampo" has err.txt "som.sampo"
    check "unwritable cwd: program not run" empty out.txt
fi
cd .. && chmod 755 ro

# --- 2. errors that say where
check "missing main file: status 2" status 2 "$SOM" nosuch.som
check "missing main file: message" has err.txt "som: nosuch.som: No such file or directory"
check "missing main file: stdout empty" empty out.txt
check "missing main path: status 2" status 2 "$SOM" no/such/dir/Prog.som
check "missing main path: message" has err.txt "som: no/such/dir/Prog.som: No such file or directory"
mkdir -p cpdir && sed 's/^Loop = /Found = /' Loop.som >cpdir/Found.som
check "File.som found on -cp" status 0 "$SOM" -cp cpdir Found.som
check "bare missing class: status 1" status 1 "$SOM" NoSuchMainClass
check "bare missing class: message" has out.txt "ERROR: Tried loading 'NoSuchMainClass' as a class, but failed."
cat >Oops.som <<'SOM'
Oops = (
    run = ( self deeper: 10 )
    deeper: n = (
        n = 0 ifTrue: [ ^nil foo ].
        ^self deeper: n - 1
    )
)
SOM
for jit in on off eager; do
    check "dnu --jit=$jit: status 1" status 1 "$SOM" --jit=$jit Oops.som
    check "dnu --jit=$jit: message on stdout" has out.txt "ERROR: Method foo not found in class Nil"
    check "dnu --jit=$jit: trace header" has err.txt "Traceback (innermost first):"
    check "dnu --jit=$jit: innermost frame" bash -c "sed -n 2p err.txt | grep -qx '  at Oops>>deeper: (\./Oops.som:4)'"
    check "dnu --jit=$jit: recursion frames" bash -c "[ \$(grep -c '^  at Oops>>deeper: (\./Oops.som:5)\$' err.txt) -eq 10 ]"
    check "dnu --jit=$jit: run frame" has err.txt "  at Oops>>run (./Oops.som:2)"
    check "dnu --jit=$jit: no core-lib plumbing" hasnt err.txt "doesNotUnderstand"
done

echo "$fails failed"
[ "$fails" -eq 0 ]
