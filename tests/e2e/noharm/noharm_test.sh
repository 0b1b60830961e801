#!/usr/bin/env bash
# "Do no harm" end-to-end suite (issue 16): each scenario of noharm_prog runs plain, under
# `sampo record` and under LD_PRELOAD=libsampo_preload.so; stdout, exit status and every file
# it writes must be the same byte for byte (stderr too, minus the profiler's own lines), and
# the profile is checked: samples present, losses counted, warnings where a conflict cannot
# be avoided.  The output cases check where and how the profile is written.
# usage: noharm_test.sh SAMPO PRELOAD PROG WORKDIR CASE
# The binaries are arguments, so the same suite can be run against an older build.
set -uo pipefail
SAMPO=$(realpath "$1") PRELOAD=$(realpath "$2") PROG=$(realpath "$3") W=$4 CASE=$5
HZ=1000
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }
has() { grep -qF -- "$2" "$1" || { echo "  '$2' not in $1:"; head -20 "$1"; return 1; }; }
export SAMPO_PRELOAD=$PRELOAD
unset SAMPO_OUT SAMPO_HZ SAMPO_TRIGGER LD_PRELOAD

# run WAY DIR ARGS...: runs the program in DIR (created) the given way; leaves out/err/status
# next to DIR; the profile (if any) is DIR/prof.
run() {
    local way=$1 dir=$2; shift 2
    mkdir -p "$dir"
    case $way in
    plain) (cd "$dir" && "$PROG" "$@" >../$dir.out 2>../$dir.err); echo $? >$dir.status ;;
    record) (cd "$dir" && "$SAMPO" record -q -F $HZ -o prof -- "$PROG" "$@" >../$dir.out \
                2>../$dir.err); echo $? >$dir.status ;;
    preload) (cd "$dir" && LD_PRELOAD=$PRELOAD SAMPO_HZ=$HZ SAMPO_OUT=prof "$PROG" "$@" \
                >../$dir.out 2>../$dir.err); echo $? >$dir.status ;;
    esac
}

# same A B: the two runs behaved the same (status, stdout, filtered stderr, files).
same() {
    local a=$1 b=$2 r=0
    cmp -s $a.status $b.status || { echo "  status $(cat $a.status) vs $(cat $b.status)"; r=1; }
    cmp -s $a.out $b.out || { echo "  stdout differs:"; diff $a.out $b.out | head; r=1; }
    grep -v '^sampo\|^\[ sampo' $a.err >$a.err.f; grep -v '^sampo\|^\[ sampo' $b.err >$b.err.f
    cmp -s $a.err.f $b.err.f || { echo "  stderr differs:"; diff $a.err.f $b.err.f | head; r=1; }
    local fa fb
    fa=$(cd $a && find . -path './prof*' -prune -o -print | sort)
    fb=$(cd $b && find . -path './prof*' -prune -o -print | sort)
    [ "$fa" = "$fb" ] || { echo "  files differ: [$fa] vs [$fb]"; r=1; }
    for f in $fa; do
        [ -f "$a/$f" ] && ! cmp -s "$a/$f" "$b/$f" && { echo "  $f differs"; r=1; }
    done
    return $r
}

# meta FILE KEY: a metadata value of a profile (empty if unreadable)
meta() { "$SAMPO" report --limit 0 "$1" 2>/dev/null | sed -n "s/^# $2  *//p" | head -1; }
# samples_at_least PROFILE N: N is for a perf trigger at 1 kHz; where perf events are refused
# (perf_event_paranoid, containers) the engine falls back to the tick-driven CPU timer, which
# cannot go faster than the tick (250 Hz): a quarter of N then.
samples_at_least() {
    local n want=$2 trig; n=$(meta "$1" samples); trig=$(meta "$1" trigger)
    [ -n "$trig" ] && [ "${trig#perf}" = "$trig" ] && want=$((want / 4))
    [ -n "$n" ] && [ "$n" -ge "$want" ] || { echo "  $1: samples '${n}', want >= $want"; return 1; }
}
is_perf() { local trig; trig=$(meta "$1" trigger); [ "${trig#perf}" != "$trig" ]; }
# (the report goes to a file first: grep -q would stop reading early, and under pipefail the
# report's SIGPIPE would fail the check)
in_profile() {
    "$SAMPO" report --limit 0 "$1" >"$1.report" 2>&1
    grep -q "$2" "$1.report" || { echo "  $2 not in $1"; return 1; }
}

# three CASE ARGS...: plain vs record vs preload
three() {
    run plain plain "$@"
    run record record "$@"
    run preload preload "$@"
    check "$CASE: record behaves as plain" same plain record
    check "$CASE: preload behaves as plain" same plain preload
}

case $CASE in
fdreuse)
    three fdreuse
    check "fdreuse: the program's file is complete" test "$(wc -l <plain/fdreuse.txt)" -eq 1000
    check "fdreuse: record profile" samples_at_least record/prof 1
    check "fdreuse: preload profile" samples_at_least preload/prof 1
    ;;
closeloop | closefrom | closerange)
    three $CASE
    # 400 ms of CPU at 1 kHz: 400 samples; a trigger lost for good gave a quarter of that
    for w in record preload; do
        check "$CASE: $w keeps sampling" samples_at_least $w/prof 200
        lost=$(meta $w/prof trigger_lost)
        if is_perf $w/prof; then
            check "$CASE: $w counts the lost trigger" test "${lost:-0}" -ge 1
        fi
    done
    ;;
sigprof)
    three sigprof
    check "sigprof: program's handler saw only its own timer" has plain.out "all from its own timer"
    check "sigprof: record profile has samples" samples_at_least record/prof 200
    check "sigprof: preload profile has samples" samples_at_least preload/prof 200
    ;;
rtsig)
    three rtsig
    check "rtsig: program got its 100 signals" has plain.out "handler calls: 100"
    for w in record preload; do
        check "rtsig: $w warns about the shared signal" has $w.err "warning: the program installs a handler for signal"
        check "rtsig: $w profile has samples" samples_at_least $w/prof 20
    done
    ;;
signals)
    three signals
    check "signals: handlers ran" has plain.out "SIGUSR1 calls 100, handler still ours 1"
    ;;
exec)
    three exec "$PROG"
    for w in record preload; do
        check "exec: $w pre-exec part written" in_profile $w/prof.pre-exec-1 burn_before_exec
        check "exec: $w post-exec part written" in_profile $w/prof burn_after_exec
    done
    ;;
chdir)
    three chdir
    for w in record preload; do
        check "chdir: $w profile where -o said (before chdir)" samples_at_least $w/prof 50
        check "chdir: $w nothing written in the new directory" test ! -e $w/sub/prof
    done
    ;;
threads)
    three threads
    # 1000 threads x 0.5 ms = 0.5 s of CPU at 1 kHz: ~500 samples, nearly all in the threads
    # (a tick-driven timer sees a thread only when a tick finds it running: not checked then)
    for w in record preload; do
        if is_perf $w/prof; then
            check "threads: $w samples short threads in proportion" samples_at_least $w/prof 150
            check "threads: $w samples are in short_thread" in_profile $w/prof short_thread
        else
            echo "skip threads: $w: no perf events here (trigger $(meta $w/prof trigger))"
        fi
    done
    # at the default rate the tick-driven CPU timer samples; a one-shot perf event draws each
    # thread's first phase, so short threads still get their share (0.5 s / 4 ms = 125)
    if is_perf preload/prof; then
        mkdir -p dflt
        (cd dflt && LD_PRELOAD=$PRELOAD SAMPO_OUT=prof "$PROG" threads >/dev/null 2>&1)
        check "threads: default rate samples short threads" samples_at_least dflt/prof 160
    fi
    ;;
sigint)
    three sigint
    check "sigint: dies of SIGINT" test "$(cat plain.status)" -eq 130
    for w in record preload; do check "sigint: $w profile flushed" samples_at_least $w/prof 50; done
    ;;
sigterm)
    # SIGTERM from outside: to the program, to `sampo record`, to the preloaded program
    for w in plain record preload; do
        mkdir -p $w
        case $w in
        plain) (cd $w && exec "$PROG" spin) & ;;
        record) (cd $w && exec "$SAMPO" record -q -F $HZ -o prof -- "$PROG" spin) & ;;
        preload) (cd $w && LD_PRELOAD=$PRELOAD SAMPO_HZ=$HZ SAMPO_OUT=prof exec "$PROG" spin) & ;;
        esac
        pid=$!
        # wait for 300 ms of the program's CPU time, however loaded the machine is
        for _ in $(seq 100); do
            sleep 0.1
            c=$(pgrep -f "$PROG spin" -P $pid 2>/dev/null | head -1)
            [ -n "$c" ] || c=$pid
            t=$(awk '{print $14 + $15}' /proc/$c/stat 2>/dev/null || echo 0)
            [ "${t:-0}" -ge 30 ] && break
        done
        kill -TERM $pid
        # a profiler that swallows SIGTERM must not hang the suite: 30 s, then KILL
        for _ in $(seq 300); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
        if kill -0 $pid 2>/dev/null; then
            echo "  $w: still running 30 s after SIGTERM"
            kill -KILL $pid $c 2>/dev/null
        fi
        wait $pid
        echo $? >$w.status
    done
    check "sigterm: plain dies of SIGTERM" test "$(cat plain.status)" -eq 143
    check "sigterm: record exit status as plain" cmp -s plain.status record.status
    check "sigterm: preload exit status as plain" cmp -s plain.status preload.status
    for w in record preload; do check "sigterm: $w profile flushed" samples_at_least $w/prof 20; done
    ;;
abort)
    three abort
    check "abort: dies of SIGABRT" test "$(cat plain.status)" -eq 134
    ;;
output)
    # FIFO: written in place, read by a reader; symlink: the target gets the profile
    mkfifo fifo
    timeout 60 cat fifo >from-fifo.prof &
    reader=$!
    "$SAMPO" record -q -F $HZ -o fifo -- "$PROG" closefrom >/dev/null 2>fifo.err
    check "output: record to a FIFO exits 0" test $? -eq 0
    wait $reader
    check "output: the FIFO is still a FIFO" test -p fifo
    check "output: the FIFO's reader got the profile" samples_at_least from-fifo.prof 1
    echo old >target.prof && ln -s target.prof link.prof
    "$SAMPO" record -q -F $HZ -o link.prof -- "$PROG" closefrom >/dev/null 2>link.err
    check "output: the symlink stays a symlink" test -L link.prof
    check "output: the symlink's target gets the profile" samples_at_least target.prof 1
    # a device that fails every write: /dev/full, or (root) a private copy of it, so an old
    # build that renames onto it cannot replace the machine's
    full=/dev/full
    [ "$(id -u)" = 0 ] && mknod full c 1 7 && full=$W/full
    "$SAMPO" record -q -F $HZ -o $full -- "$PROG" closefrom >/dev/null 2>full.err
    st=$?
    check "output: the device is still a device" test -c $full
    check "output: ENOSPC is reported" has full.err "No space left on device"
    check "output: sampo record says the profile was not written" has full.err "sampo record: error: the profile was not written: $full"
    check "output: a write error makes record exit 1" test $st -eq 1
    # the program's own failure status is kept
    "$SAMPO" record -q -F $HZ -o $full -- sh -c 'exit 5' >/dev/null 2>full5.err
    check "output: write error keeps the program's status 5" test $? -eq 5
    check "output: ... and is reported" has full5.err "sampo record: error: the profile was not written"
    # a program that ends by the exit system call itself: no profile, said clearly, status 1
    "$SAMPO" record -q -F $HZ -o none.prof -- "$PROG" sysexit >/dev/null 2>none.err
    check "output: no profile at all makes record exit 1" test $? -eq 1
    check "output: no profile at all is said" has none.err "no profile was written to none.prof"
    ;;
exit3)
    three exit3
    check "exit3: exits 3" test "$(cat plain.status)" -eq 3
    for w in record preload; do
        check "exit3: $w profile written at _exit" samples_at_least $w/prof 50
        check "exit3: $w profile has the burn" in_profile $w/prof burn_before_exit
    done
    ;;
forkexit)
    three forkexit
    check "forkexit: the parent ran to its end" has plain.out "children gone"
    for w in record preload; do
        check "forkexit: $w profile is the parent's" in_profile $w/prof do_forkexit
        check "forkexit: $w no per-process profile from the children" \
            test -z "$(cd $w && ls prof.* 2>/dev/null | grep -v report)"
    done
    ;;
dash)
    # dash ends with _exit: `sh -c` under sampo record lost its profile before
    if ! command -v dash >/dev/null; then echo "skip dash: no dash here"; echo "0 failure(s)"; exit 0; fi
    loop='i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo $i'
    mkdir -p plain && (cd plain && dash -c "$loop" >../plain.out 2>../plain.err); echo $? >plain.status
    for w in record preload; do
        mkdir -p $w
        case $w in
        record) (cd $w && "$SAMPO" record -q -F $HZ -o prof -- dash -c "$loop" >../$w.out 2>../$w.err); echo $? >$w.status ;;
        preload) (cd $w && LD_PRELOAD=$PRELOAD SAMPO_HZ=$HZ SAMPO_OUT=prof dash -c "$loop" >../$w.out 2>../$w.err); echo $? >$w.status ;;
        esac
        check "dash: $w output as plain" cmp -s plain.out $w.out
        check "dash: $w exit status 0" test "$(cat $w.status)" -eq 0
        check "dash: $w profile written" samples_at_least $w/prof 20
    done
    ;;
badopts)
    # every option and the output path are checked before the program starts
    for args in "-o /missing/dir/x.prof" "--trigger bogus" "--tune 5" "-F 200000"; do
        rm -f before-abort.txt
        # shellcheck disable=SC2086
        "$SAMPO" record -q $args -- "$PROG" abort >/dev/null 2>err.txt
        st=$?
        check "badopts: '$args' fails" test $st -ne 0 -a $st -ne 134
        check "badopts: '$args' does not run the program" test ! -e before-abort.txt
    done
    "$SAMPO" record -q -o /missing/dir/x.prof -- "$PROG" abort 2>err.txt
    check "badopts: the path is named" has err.txt "/missing/dir/x.prof"
    check "badopts: with the reason" has err.txt "No such file or directory"
    "$SAMPO" record -q --trigger bogus -- true 2>err.txt
    check "badopts: bad trigger named" has err.txt "got 'bogus'"
    # perf-hw is missing in most VMs: then refused before the run, with the reason
    "$SAMPO" record -q --trigger perf-hw -o hw.prof -- "$PROG" abort >/dev/null 2>err.txt
    st=$?
    if [ $st -ne 134 ]; then
        check "badopts: unavailable perf-hw refused before the run" test ! -e before-abort.txt
        check "badopts: unavailable perf-hw says why" has err.txt "perf-hw: "
    fi
    # the library says why too (LD_PRELOAD without sampo record)
    LD_PRELOAD=$PRELOAD SAMPO_OUT=/missing/dir/y.prof "$PROG" signals >/dev/null 2>err.txt
    check "badopts: preload names the path and reason" has err.txt "/missing/dir/y.prof: No such file or directory"
    ;;
*)
    echo "unknown case $CASE"; exit 2 ;;
esac
echo "$fails failure(s)"
[ $fails -eq 0 ]
