#!/usr/bin/env bash
# The `som` command line a new user meets (issue 15): `som --prof` without --prof-out or
# --prof-report writes som.sampo (som-PID.sampo with --threads) and says so on stderr; a
# missing main file is named on stderr (status 2); a runtime error prints the SOM traceback
# (Class>>selector (file:line) per activation) on stderr in every JIT mode; every option is
# validated (status 2, a message naming the option and what it expected); sampo annotate shows
# a SOM method's source with the calls per line and sampo report its call sites with lines.
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
    check "som.sampo is a profile" status 0 "$SAMPO" report --summary som.sampo
    check "som.sampo is som's" has out.txt "som_profiler_mode async"
    check "sampo report without FILE reads som.sampo" status 0 "$SAMPO" report --summary
    check "... the same profile" has out.txt "som_profiler_mode async"
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

# --- 3. every option validated: status 2, a message naming the option and what it expected,
# and the program not run
bad_option() { # bad_option MESSAGE ARGS...
    local msg=$1; shift
    check "$* refused" status 2 "$SOM" "$@" Loop.som
    check "$*: message" has err.txt "$msg"
    check "$*: not run" empty out.txt
}
bad_option "som: -H: expected a size like 64M, got 'bogus'" -H bogus
bad_option "som: -H: expected a size like 64M, got 'bogus'" -Hbogus
bad_option "som: -H: expected a size like 64M, got '0'" -H0
bad_option "som: -H: expected a size like 64M, got '12Q'" -H 12Q
bad_option "som: -H: expected a size like 64M, got '-1M'" -H -1M
bad_option "som: --threads: expected a number between 1 and 256, got 'x'" --threads x
bad_option "som: --threads: expected a number between 1 and 256, got '0'" --threads=0
bad_option "som: --threads: expected a number between 1 and 256, got '257'" --threads 257
bad_option "som: --prof-hz: expected a number between 1 and 100000, got '10k'" --prof-hz 10k
bad_option "som: --prof-out: expected a file name for the profile, got ''" --prof-out=
bad_option "som: --prof-out: expected a file name for the profile, got 'Loop.som' (a SOM source file; not overwritten)" --prof-out Loop.som
bad_option "som: --prof: expected async, coop or exact, got 'fast'" --prof=fast
bad_option "som: --jit: expected on, off or eager, got 'maybe'" --jit=maybe
bad_option "som: --jit-deopt-stress: expected a positive seed, got 'x'" --jit-deopt-stress=x
bad_option "som: --gc-stress=N: expected a number between 1 and 1000000, got '0'" --gc-stress=0
bad_option "som: --gc-stress=N: expected a number between 1 and 1000000, got 'x'" --gc-stress=x
bad_option "som: --gc-stress=N: expected a number between 1 and 1000000, got ''" --gc-stress=
bad_option "som: unknown option '--bogus' (som --help lists the options)" --bogus
bad_option "som: unknown option '--prof-outx' (som --help lists the options)" --prof-outx f
bad_option "som: unknown option '-x' (som --help lists the options)" -x
check "-H at the end: status 2" status 2 "$SOM" -H
check "-H at the end: message" has err.txt "som: -H needs an argument: a size like 64M"
check "--threads at the end: message" status 2 "$SOM" --threads
check "--threads at the end: says what" has err.txt "som: --threads needs an argument: a number between 1 and 256"
check "-cp at the end" status 2 "$SOM" -cp
check "-cp at the end: says what" has err.txt "som: -cp needs an argument: directories separated by ':'"
check "source intact after --prof-out Loop.som" has Loop.som "Loop = ("
for good in -H64M -H64MB "-H 1.5G" -H=512k -H10 "--threads=2" "--classpath=cpdir" "--prof-hz=500 --prof-out=p.sampo" "--gc-stress=50"; do
    # shellcheck disable=SC2086
    check "$good accepted" status 0 "$SOM" $good Loop.som
    check "$good: program ran" has out.txt "599997"
done
check "-- ends the options" status 2 "$SOM" -- -Odd.som
check "--: the name is the main file" has err.txt "som: -Odd.som: No such file or directory"
check "--help exits 0" status 0 "$SOM" --help
check "--help on stdout" has out.txt "usage: som"
check "--version" status 0 "$SOM" --version
check "--version says som" has out.txt "som "

# --- 4. sampo annotate and report's call sites on a SOM profile (exact mode: counts are
# deterministic)
if [ -n "$SAMPO" ]; then
    mkdir -p ann && cd ann
    cat >Ann.som <<'SOM'
Ann = (
    run = (
        1 to: 10 do: [:i | self a ].
        self b.
        #(1 2 3) do: [:e | self leaf ]
    )
    a = (
        ^self leaf + 1
    )
    b = ( ^self leaf )
    leaf = ( | x | x := 3. ^x + 1 )
)
SOM
    check "exact profile of Ann" status 0 "$SOM" --prof=exact --prof-out ann.sampo Ann.som
    check "annotate Ann>>run" status 0 "$SAMPO" annotate 'Ann>>run' ann.sampo
    check "annotate: heading" grep -qE '^## Ann>>run   self 1 \([0-9.]+%\), total [0-9]+ \([0-9.]+%\) calls$' out.txt
    check "annotate: file and lines" has out.txt "# ./Ann.som, lines 2-5; per line: the count of the calls made on it"
    check "annotate: line 3 has the 10 calls of a" grep -qE '^ +[0-9.]+% +10 +3      +1 to: 10 do: \[:i \| self a \]\.$' out.txt
    check "annotate: line 4 has the call of b" grep -qE '^ +[0-9.]+% +1 +4      +self b\.$' out.txt
    check "annotate: line 5 has the call of do:" grep -qE '^ +[0-9.]+% +1 +5      +#\(1 2 3\) do:' out.txt
    check "annotate: line 2 has no calls" grep -qE '^ {25}2      run = \($' out.txt
    check "annotate: the closing line" grep -qE '^ {25}6      \)$' out.txt
    check "annotate: a block by its line" status 0 "$SAMPO" annotate 'Ann>>run \[block L5\]' ann.sampo
    check "annotate: the block's leaf calls" grep -qE '^ +[0-9.]+% +3 +5      +#\(1 2 3\) do: \[:e \| self leaf \]$' out.txt
    check "annotate: a block's source ends with the block" bash -c "! grep -qE '^ {25}6      \)$' out.txt"
    check "annotate: regex, several methods" status 0 "$SAMPO" annotate '^Ann>>(a|b)$' ann.sampo
    check "annotate: a" grep -qE '^ +[0-9.]+% +10 +8          \^self leaf \+ 1$' out.txt
    check "annotate: b" grep -qE '^ +[0-9.]+% +1 +10      b = \( \^self leaf \)$' out.txt
    check "annotate: --max 1" status 0 "$SAMPO" annotate --max 1 '^Ann>>(a|b)$' ann.sampo
    check "annotate: --max says more" has out.txt "# 1 more methods match; --max N shows more"
    check "report: tree call site with line" status 0 "$SAMPO" report --tree ann.sampo
    check "report: Ann>>a @ Ann>>run+N (Ann.som:3)" grep -qE ' Ann>>a @ Ann>>run\+[0-9]+ \(Ann\.som:3\)$' out.txt
    check "report: leaf in block (Ann.som:5)" grep -qE ' Ann>>leaf @ Ann>>run \[block L5\]\+[0-9]+ \(Ann\.som:5\)$' out.txt
    check "report: edges with lines" status 0 "$SAMPO" report --edges ann.sampo
    check "report: Ann>>a+N (Ann.som:8) -> Ann>>leaf" grep -qE ' Ann>>a\+[0-9]+ \(Ann\.som:8\) -> Ann>>leaf$' out.txt
    # sampled, recursive, two calls on one line: each sample counts once per line, so the
    # line never weighs more than the method's total
    cat >Rec.som <<'SOM'
Rec = (
    run = ( 1 to: 40 do: [:i | self fib: 20 ] )
    fib: n = ( ^n < 2 ifTrue: [ 1 ] ifFalse: [ (self fib: n - 1) + (self fib: n - 2) ] )
)
SOM
    check "sampled profile of Rec" status 0 "$SOM" --jit=off --prof --prof-hz 2000 --prof-out rec.sampo Rec.som
    check "annotate Rec>>fib:" status 0 "$SAMPO" annotate 'Rec>>fib:' rec.sampo
    check "annotate: recursion counted once per line" awk '
        /^## Rec>>fib:/ { total = $(NF - 2) }
        / 3      fib: n = / { line = ($1 ~ /%$/) ? $2 : 0 }
        END { print "total", total, "line", line; exit !(total != "" && line <= total + 0) }' out.txt
    cd ..
    check "annotate elsewhere: no source" status 0 "$SAMPO" annotate 'Ann>>run' ann/ann.sampo
    check "annotate elsewhere: says so" has out.txt "# no source: the class is not on the class path ."
    check "annotate elsewhere: call sites" grep -qE '^ +[0-9.]+% +10  \+[0-9]+ -> Ann>>a$' out.txt
    check "annotate --classpath" status 0 "$SAMPO" annotate --classpath ann 'Ann>>b' ann/ann.sampo
    check "annotate --classpath: source" has out.txt "# ann/Ann.som, lines 10-10"
    check "report elsewhere: no line, still method+bci" status 0 "$SAMPO" report --tree ann/ann.sampo
    check "report elsewhere: Ann>>a @ Ann>>run+N" grep -qE ' Ann>>a @ Ann>>run\+[0-9]+$' out.txt
    check "annotate: unknown method" status 1 "$SAMPO" annotate 'Nope>>x' ann/ann.sampo
    check "annotate: unknown method message" has err.txt "sampo annotate: no method named or matching 'Nope>>x' in the profile"
    check "annotate: bad regex" status 2 "$SAMPO" annotate 'Ann>>(' ann/ann.sampo
    check "annotate: bad regex message" has err.txt "sampo annotate: METHOD 'Ann>>(':"
    check "annotate: no METHOD" status 2 "$SAMPO" annotate
    check "annotate: no METHOD message" has err.txt "sampo annotate: expected METHOD"
fi

echo "$fails failed"
[ "$fails" -eq 0 ]
