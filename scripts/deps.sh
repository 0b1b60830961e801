#!/usr/bin/env bash
# Installs the Debian 12 packages the build, the tests and the benchmarks need.
set -euo pipefail
PKGS="build-essential cmake clang libclang-rt-14-dev libgmp-dev libcmocka-dev zlib1g-dev
      libelf-dev libdw-dev python3 golang-go libgoogle-perftools-dev linux-perf
      librsvg2-bin hyperfine lua5.4 luajit libc6-dbg liblzma-dev xz-utils pkg-config man-db
      llvm-19-dev chromium python3-jsonschema"
missing=""
for p in $PKGS; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
