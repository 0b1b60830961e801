#!/usr/bin/env bash
# Installs dependencies, builds everything (release) and runs the demo: a SOM program on
# the som VM, the same program profiled by the embedded profiler (report + flame graph),
# and som itself profiled as a native program with `sampo record`.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc 2>/dev/null || echo 2)"
SOM=build/release/tools/som/som
SAMPO=build/release/tools/sampo/sampo
echo "=== som examples/Demo.som"
"$SOM" examples/Demo.som
echo
echo "=== som --prof --prof-hz 1000 examples/Demo.som 32   (SOM methods, sampled)"
"$SOM" --prof --prof-hz 1000 --prof-out build/demo-som.sampo examples/Demo.som 32 >/dev/null
"$SAMPO" report build/demo-som.sampo | sed -n '/## flat profile/,/^$/p' | head -n 12
"$SAMPO" flame build/demo-som.sampo -o build/demo-som-flame.svg
echo "flame graph: build/demo-som-flame.svg"
echo
echo "=== sampo record -F 1000 -- som examples/Demo.som 32   (the VM as a native program)"
"$SAMPO" record -F 1000 -o build/demo-native.sampo -- "$SOM" examples/Demo.som 32 >/dev/null
"$SAMPO" report build/demo-native.sampo | sed -n '/## flat profile/,/^$/p' | head -n 12
