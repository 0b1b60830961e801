#!/bin/sh
# Checks that the core library behaves as recorded in behaviour.expected (the
# output is the same with Sampo's core-lib and with the standard library).
# usage: core-lib/tests/check.sh [path/to/som] [CLASSPATH | builtin]
#   no 2nd argument: checks this directory's library (via SOM_CORELIB);
#   builtin:         checks the copy built into the som binary;
#   CLASSPATH:       checks the library found there, e.g. a standard Smalltalk/.
# Exit status 0 when the output matches.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
som=${1:-"$here/../../build/tools/som/som"}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if [ $# -ge 2 ] && [ "$2" = builtin ]; then
    env -u SOM_CORELIB "$som" "$here/CoreLibBehaviour.som" >"$out" 2>&1 || true
elif [ $# -ge 2 ]; then
    "$som" -cp "$2" "$here/CoreLibBehaviour.som" >"$out" 2>&1 || true
else
    SOM_CORELIB="$here/.." "$som" "$here/CoreLibBehaviour.som" >"$out" 2>&1 || true
fi
if diff -u "$here/behaviour.expected" "$out"; then
    echo "core-lib behaviour: OK"
else
    echo "core-lib behaviour: MISMATCH (diff above: expected vs actual)" >&2
    exit 1
fi
