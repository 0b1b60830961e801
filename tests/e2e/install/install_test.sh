#!/usr/bin/env bash
# install_test.sh BUILD_DIR WORK_DIR - `cmake --install BUILD_DIR --prefix WORK_DIR/prefix`,
# then uses only the installed files: som runs a program, sampo record profiles a native
# program with the installed preload library, sampo report reads the profile, a C program
# builds against sampo.pc and runs, and man finds sampo-report(1).
set -euo pipefail
build=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
prefix=$work/prefix
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >install.log 2>&1 || { cat install.log; fail "cmake --install"; }
for f in bin/som bin/sampo lib/libsampo_preload.so include/sampo.h share/man/man1/sampo-report.1 \
    share/man/man1/som.1 share/sampo/core-lib/Object.som share/doc/sampo/LICENSE; do
    [ -e "$prefix/$f" ] || fail "not installed: $f"
done
pc=$(find "$prefix" -name sampo.pc | head -1)
[ -n "$pc" ] || fail "sampo.pc not installed"
libdir=$(dirname "$(dirname "$pc")")
ls "$libdir"/libsampo.so* >/dev/null 2>&1 || fail "libsampo.so not installed in $libdir"
[ -e "$libdir/libsampo.a" ] || fail "libsampo.a not installed in $libdir"

# som from the prefix, core library built in
printf 'Hello = ( run = ( (3 + 4) println ) )\n' >Hello.som
out=$("$prefix/bin/som" Hello.som) || fail "installed som failed"
[ "$out" = 7 ] || fail "installed som printed '$out', expected 7"
# the JIT's backend module, loaded from the prefix (bin/../lib/som/)
[ -e "$prefix/lib/som/libsomjit_llvm.so" ] || fail "not installed: lib/som/libsomjit_llvm.so"
out=$("$prefix/bin/som" --jit=eager --jit-stats Hello.som 2>jit.txt) || fail "installed som --jit=eager failed"
[ "$out" = 7 ] || fail "installed som --jit=eager printed '$out', expected 7"
grep -Eq '^jit: methods compiled [1-9]' jit.txt || fail "installed som compiled nothing: $(cat jit.txt)"
grep -qx "jit: backend $prefix/bin/../lib/som/libsomjit_llvm.so" jit.txt ||
    fail "installed som loaded another backend: $(grep backend jit.txt)"
# ... and with the installed core-lib sources instead of the built-in copy
out=$(SOM_CORELIB="$prefix/share/sampo/core-lib" "$prefix/bin/som" Hello.som) ||
    fail "som with SOM_CORELIB=installed core-lib failed"
[ "$out" = 7 ] || fail "som with the installed core-lib printed '$out'"

# sampo record: the preload library is found relative to the installed sampo
unset SAMPO_PRELOAD
"$prefix/bin/sampo" record -q -F 1000 -o rec.prof -- \
    bash -c 'echo "$LD_PRELOAD" >preload.txt; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' ||
    fail "installed sampo record failed"
grep -qx "$prefix/bin/../lib/libsampo_preload.so" preload.txt ||
    fail "sampo record preloaded '$(cat preload.txt)', not the installed library"
[ -s rec.prof ] || fail "no profile written"
"$prefix/bin/sampo" report rec.prof >report.txt || fail "installed sampo report failed"
grep -q '^## flat profile' report.txt || fail "report has no flat profile"

# a program built against libsampo with pkg-config
cat >use.c <<'C'
#include <sampo.h>
#include <stdio.h>
int main(void) {
    SampoConfig c;
    sampo_config_default(&c);
    printf("%s\n", sampo_running() ? "running" : "idle");
    return 0;
}
C
export PKG_CONFIG_PATH=$libdir/pkgconfig
flags=$(pkg-config --cflags --libs sampo) || fail "pkg-config sampo"
cc -o use use.c $flags || fail "cc use.c $flags"
# ... and statically: libsampo.a + libsampo_analysis.a + the private libraries from sampo.pc
sflags=$(pkg-config --static --libs sampo | sed 's/-lsampo /-l:libsampo.a /; s/-lsampo_analysis /-l:libsampo_analysis.a /') ||
    fail "pkg-config --static sampo"
cc -o use_static use.c $(pkg-config --cflags sampo) $sflags || fail "cc use.c $sflags"
out=$(./use_static) || fail "the statically linked program failed"
[ "$out" = idle ] || fail "the statically linked program printed '$out'"
ldd ./use_static | grep -q libsampo && fail "use_static still needs libsampo.so"
out=$(LD_LIBRARY_PATH=$libdir ./use) || fail "the pkg-config-built program failed"
[ "$out" = idle ] || fail "the pkg-config-built program printed '$out'"
# the shared library exports the API only
if nm -D --defined-only "$libdir/libsampo.so" | awk '$2 ~ /[TDB]/ {print $3}' | grep -v '^sampo_' | grep -q .; then
    fail "libsampo.so exports non-sampo_ symbols: $(nm -D --defined-only "$libdir/libsampo.so" | grep -v ' sampo_' | head -3)"
fi

# man pages
page=$(MANPATH=$prefix/share/man man -w sampo-report) || fail "man -w sampo-report"
[ "$page" = "$prefix/share/man/man1/sampo-report.1" ] ||
    [ "$page" = "$prefix/share/man/man1/sampo-report.1.gz" ] || fail "man -w found '$page'"
echo "install test: ok"
