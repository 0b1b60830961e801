#!/usr/bin/env bash
# Installs dependencies, builds everything (release) and runs the demo:
# a SOM program on the som VM, then the same program profiled with sampo.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc 2>/dev/null || echo 2)"
SOM=build/release/tools/som/som
SAMPO=build/release/tools/sampo/sampo
echo "=== som examples/Demo.som"
"$SOM" examples/Demo.som
if [ -x "$SAMPO" ]; then
    echo "=== sampo record -- som examples/Demo.som"
    "$SAMPO" record -o build/demo.sampo -- "$SOM" examples/Demo.som >/dev/null
    "$SAMPO" report build/demo.sampo | head -n 40
fi
