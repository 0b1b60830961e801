#!/usr/bin/env bash
# The profile reader on inputs without an end or a size (issue 16, item 12): /dev/zero, pipes
# of zeros after a valid header, a huge sparse file of zeros, a section length far beyond the
# file.  Each must end quickly with "expected ..." and a non-zero status, within a time bound
# (timeout) and, in builds without a sanitizer, a memory bound (ulimit -v).  A valid profile
# read through a pipe still works.
# usage: reader_stream_test.sh SAMPO GEN_PROFILE WORKDIR SANITIZE
set -uo pipefail
SAMPO=$1 GEN=$2 W=$3 SAN=${4:-}
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1
fails=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fails=$((fails + 1)); }
LIMIT=""
if [ -z "$SAN" ]; then LIMIT="ulimit -v 400000;"; fi # 400 MB of address space

# expect_fail NAME WANT COMMAND: fails (not by a signal, not by the timeout) saying WANT
expect_fail() {
    local name=$1 want=$2 cmd=$3
    bash -c "$LIMIT timeout 20 $cmd" >out.txt 2>err.txt
    local rc=$?
    if [ $rc -eq 1 ] && grep -qF -- "$want" err.txt; then ok "$name"; else
        bad "$name (status $rc)"; head -5 err.txt; fi
}

$GEN split split.prof || { echo "FAIL gen_profile"; exit 1; }
head -c 20 split.prof >header.bin
# a valid header whose first section claims 1 TiB
python3 -c "
import struct
d = bytearray(open('split.prof','rb').read())
d[28:36] = struct.pack('<Q', 1 << 40)
open('hugelen.prof','wb').write(bytes(d))"
truncate -s 2G zeros.bin 2>/dev/null || bad "sparse file"

expect_fail "/dev/zero"            'expected magic "SAMPOPRF"' "$SAMPO report /dev/zero"
expect_fail "pipe of zeros"        'expected magic "SAMPOPRF"' "cat /dev/zero | $SAMPO report /dev/stdin"
expect_fail "2 GB file of zeros"   'expected magic "SAMPOPRF"' "$SAMPO report zeros.bin"
expect_fail "section beyond file"  'expected section length within file' "$SAMPO report hugelen.prof"
expect_fail "header, then zeros"   'expected' "cat header.bin /dev/zero | $SAMPO report /dev/stdin"
# no size to check the length against: read until the 1 GiB cap or the memory limit
expect_fail "huge length, then zeros" 'sampo: /dev/stdin: ' "cat hugelen.prof /dev/zero | $SAMPO report /dev/stdin"
expect_fail "/dev/null"            'expected a 20-byte header' "$SAMPO report /dev/null"
expect_fail "a directory"          'Is a directory' "$SAMPO report ."

# a valid profile through a pipe and from a file give the same report
$SAMPO report split.prof >file.txt 2>&1
cat split.prof | $SAMPO report /dev/stdin >pipe.txt 2>&1
if [ $? -eq 0 ] && cmp -s file.txt pipe.txt; then ok "profile through a pipe"; else
    bad "profile through a pipe"; diff file.txt pipe.txt | head; fi

echo "$fails failed"
[ $fails -eq 0 ]
