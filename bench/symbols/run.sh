#!/usr/bin/env bash
# perf vs sampo on a CPython workload: per-function self-sample shares, Pearson r.
# Records N runs with `perf record -e cpu-clock:u` and N with `sampo record`, at the same rate,
# alternating (perf, sampo, sampo, perf, ...), then prints r for perf-perf, sampo-sampo and
# sampo-perf pairs (min / median / max) with correlate.py, over all functions and over named
# functions only.  Reuses the profiles already in WORKDIR (delete them to record anew).
# usage: bench/symbols/run.sh SAMPO_BIN PRELOAD_SO [N=4] [ROUNDS=300] [HZ=1000] [WORKDIR]
# Uses Debian's /usr/bin/python3 explicitly (a pyenv shim may shadow python3 on PATH).
set -euo pipefail
SAMPO=$(realpath "$1") PRELOAD=$(realpath "$2") N=${3:-4} ROUNDS=${4:-300} HZ=${5:-1000}
W=${6:-$(mktemp -d /tmp/sampo-symbols.XXXXXX)}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
mkdir -p "$W"
for i in $(seq 1 "$N"); do
    [ -s "$W/perf$i.data" ] && [ -s "$W/sampo$i.prof" ] && continue
    rec_perf() { perf record -q -e cpu-clock:u -F "$HZ" -o "$W/perf$i.data" -- \
        "$PY" "$HERE/cpython_workload.py" "$ROUNDS" >/dev/null 2>&1; }
    rec_sampo() { SAMPO_PRELOAD=$PRELOAD "$SAMPO" record -q -F "$HZ" -o "$W/sampo$i.prof" -- \
        "$PY" "$HERE/cpython_workload.py" "$ROUNDS" >/dev/null; }
    if [ $((i % 2)) = 1 ]; then rec_perf; rec_sampo; else rec_sampo; rec_perf; fi
done
pairs() { # kind a-prefix b-prefix a-ext b-ext column
    local rs=()
    for i in $(seq 1 "$N"); do
        for j in $(seq 1 "$N"); do
            [ "$2" = "$3" ] && [ "$j" -le "$i" ] && continue
            rs+=("$("$PY" "$HERE/correlate.py" "$SAMPO" "$W/$2$i.$4" "$W/$3$j.$5" | cut -d' ' -f"$6")")
        done
    done
    printf '%s\n' "${rs[@]}" | sort -n | awk -v k="$1" '{a[NR]=$1} END {
        printf "%-12s pairs %2d  min %.4f  median %.4f  max %.4f\n", k, NR, a[1],
               (NR % 2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2), a[NR]}'
}
for col in 1 2; do
    [ $col = 1 ] && echo "r over all functions (unknown code keyed by object):"
    [ $col = 2 ] && echo "r over named functions only:"
    pairs perf-perf perf perf data data $col
    pairs sampo-sampo sampo sampo prof prof $col
    pairs sampo-perf sampo perf prof data $col
done
echo "profiles in $W"
