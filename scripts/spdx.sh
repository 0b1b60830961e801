#!/usr/bin/env bash
# The license line every C and C++ source and header of ours starts with (house style: the
# SPDX identifier on line 1, then the file's header comment; LICENSE has the text):
#     /* SPDX-License-Identifier: MIT */
# usage: scripts/spdx.sh [--check] [PATH...]
#   Adds the line to the tracked *.c, *.h and *.cpp files under PATH (default: the whole
#   repository) that lack it; --check only lists them and exits 1 if there are any.
set -euo pipefail
cd "$(dirname "$0")/.."
LINE='/* SPDX-License-Identifier: MIT */'
check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi
missing=0
while IFS= read -r f; do
    [ "$(head -n 1 "$f")" = "$LINE" ] && continue
    missing=$((missing + 1))
    if [ $check = 1 ]; then
        echo "$f: no SPDX line"
    else
        { printf '%s\n' "$LINE"; cat "$f"; } >"$f.spdx" && mv "$f.spdx" "$f"
    fi
done < <(git ls-files -- "${@:-.}" | grep -E '\.(c|h|cpp)$')
if [ $check = 1 ] && [ $missing -gt 0 ]; then
    echo "$missing files without the SPDX line (scripts/spdx.sh adds it)"
    exit 1
fi
[ $check = 1 ] || echo "added the SPDX line to $missing files"
