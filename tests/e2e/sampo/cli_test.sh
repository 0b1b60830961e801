#!/usr/bin/env bash
# The `sampo` command line a new user meets: commands read sampo.prof (what `sampo record`
# writes by default) when no FILE is given, report options (--sort, --top, --min, --focus,
# --ignore, section selectors, recursion folded), flame options, compare without +0.00 rows,
# timeline refusing exact profiles, and getopt errors that name the whole command.
# usage: cli_test.sh SAMPO GEN_PROFILE WORKDIR
set -uo pipefail
SAMPO=$1 GEN=$2 W=$3
rm -rf "$W" && mkdir -p "$W/empty" && cd "$W" || exit 1
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { # check NAME COMMAND...
    local name=$1; shift
    if "$@"; then ok "$name"; else bad "$name"; fi
}
has() { grep -qF -- "$2" "$1" || { echo "  '$2' not in $1:"; head -40 "$1"; return 1; }; }
hasnt() { ! grep -qF -- "$2" "$1" || { echo "  '$2' unexpectedly in $1"; return 1; }; }
status() { # status WANT COMMAND... (stdout to out.txt, stderr to err.txt)
    local want=$1; shift
    "$@" >out.txt 2>err.txt
    local got=$?
    [ "$got" -eq "$want" ] || { echo "  exit $got, want $want: $*"; cat err.txt; return 1; }
}

$GEN split split.prof && $GEN shifted shifted.prof && $GEN som som.prof && $GEN exact exact.prof ||
    { echo "FAIL gen_profile"; exit 1; }

# --- the default file
cp split.prof sampo.prof
$SAMPO report split.prof >named.txt
check "report reads sampo.prof" status 0 $SAMPO report
check "report default = named" cmp -s out.txt named.txt
check "flame reads sampo.prof" status 0 $SAMPO flame -o f.svg
check "flame wrote" has f.svg "<svg"
check "hist reads sampo.prof" status 0 $SAMPO hist -o h.svg
check "export reads sampo.prof" status 0 $SAMPO export --collapsed
check "export output" has out.txt "main;"
check "timeline reads sampo.prof" status 0 $SAMPO timeline -o t.svg
check "no sampo.prof: exit 2" bash -c "cd empty && $SAMPO report 2>../err.txt; [ \$? -eq 2 ]"
check "no sampo.prof: says so" has err.txt "sampo report: no FILE given and no sampo.prof in the current directory"
check "two files refused" status 2 $SAMPO report split.prof shifted.prof
check "two files: message" has err.txt "sampo report: expected one FILE, got 2 operands"
check "flame two files refused" status 2 $SAMPO flame split.prof shifted.prof
check "flame two files: message" has err.txt "sampo flame: expected one FILE, got 2 operands"

# --- getopt errors name the whole command
for c in report export flame hist compare timeline record; do
    check "$c: unknown option exits 2" status 2 $SAMPO $c --bogus-option
    check "$c: unknown option names 'sampo $c'" has err.txt "sampo $c: unrecognized option '--bogus-option'"
done
check "missing argument names the command" status 2 $SAMPO report --top
check "missing argument message" has err.txt "sampo report: option '--top' requires an argument"

# --- report options
check "--flat only" status 0 $SAMPO report --flat split.prof
check "--flat has flat" has out.txt "## flat profile"
check "--flat no tree" hasnt out.txt "## call tree"
check "--flat no summary" hasnt out.txt "# sampo profile"
check "--tree --edges" status 0 $SAMPO report --tree --edges split.prof
check "--tree --edges: tree" has out.txt "## call tree"
check "--tree --edges: edges" has out.txt "## top call edges"
check "--tree --edges: no threads" hasnt out.txt "## per thread"
check "--sort cum" status 0 $SAMPO report --flat --sort cum split.prof
check "--sort cum: inclusive order" bash -c "sed -n 3,4p out.txt | grep -c ' 100.00% ' | grep -qx 2 && sed -n 5p out.txt | grep -q ' hot '"
check "--sort bogus" status 2 $SAMPO report --sort bogus split.prof
check "--sort bogus message" has err.txt "sampo report: expected --sort self or cum, got 'bogus'"
check "--top 1" status 0 $SAMPO report --flat --top 1 split.prof
check "--top 1: one row" test "$(grep -c '%  *[0-9]' out.txt)" -eq 1
check "--top 1: the rest counted" has out.txt "... 5 more"
check "--min 40" status 0 $SAMPO report --flat --min 40 split.prof
check "--min 40: hot only" has out.txt " hot (splitprog)"
check "--min 40: no warm" hasnt out.txt " warm "
check "--min 200 refused" status 2 $SAMPO report --min 200 split.prof
check "--focus warm" status 0 $SAMPO report --flat --focus '^warm$' split.prof
check "--focus: only warm's samples" has out.txt "## flat profile (300 samples"
check "--ignore warm" status 0 $SAMPO report --flat --ignore '^warm$' split.prof
check "--ignore: the others" has out.txt "## flat profile (700 samples"
check "--ignore: warm gone" hasnt out.txt "warm"
check "bad regex exits 2" status 2 $SAMPO report --focus '(' split.prof
check "bad regex message" has err.txt "sampo report: split.prof: --focus '(':"
check "focus on exact refused" status 2 $SAMPO report --focus x exact.prof
check "focus on exact message" has err.txt "exact profile"

# --- compare: only real differences
check "compare same" status 0 $SAMPO compare split.prof split.prof
check "compare same: no rows" hasnt out.txt "+0.00"
check "compare same: says so" has out.txt "no differences in self share"
check "compare shifted" status 0 $SAMPO compare split.prof shifted.prof
check "compare shifted: a difference" has out.txt "-9.00  hot"
check "compare shifted: no zero rows" bash -c "! grep -E '[+-]0\.00  ' out.txt"

# --- timeline on an exact profile
check "timeline exact refused" status 1 $SAMPO timeline exact.prof -o x.svg
check "timeline exact message" has err.txt "sampo timeline: exact.prof: an exact profile"
check "timeline exact: no svg" test ! -s x.svg

# --- flame options
check "flame --reverse --colors state" status 0 $SAMPO flame --reverse --colors state --title 'A&B' som.prof
check "flame title escaped" has out.txt ">A&amp;B</text>"
check "flame state in tooltips" has out.txt "[interpreting]"
check "flame --colors module" status 0 $SAMPO flame --colors module split.prof
check "flame module in tooltips" has out.txt "[libc.so.6]"
check "flame --colors bogus" status 2 $SAMPO flame --colors bogus split.prof
check "flame --colors message" has err.txt "sampo flame: expected --colors name, module or state"
check "flame --min-width" status 0 $SAMPO flame --min-width 300 split.prof
check "flame --min-width drops narrow frames" bash -c "[ \$(grep -c '<rect x=' out.txt) -lt \$($SAMPO flame split.prof | grep -c '<rect x=') ]"

# --- every subcommand has --help
for c in record report export flame hist compare timeline; do
    check "$c --help" status 0 $SAMPO $c --help
    check "$c --help usage" has out.txt "usage: sampo $c"
done

echo "$fails failed"
[ "$fails" -eq 0 ]
