/* SPDX-License-Identifier: MIT */
/*
 * gen_names.c - writes a synthetic sampled profile whose frame names stress every export:
 * a 2 kB UTF-8 name (multi-byte characters right at the old 511-byte cut) containing ';',
 * '%' and a quote, a C++ and a Rust legacy mangled name, and a rate change halfway.
 * usage: gen_names OUT.prof  (prints the long name on stdout)
 *        gen_names --shifted OUT.prof: the same frames, 60% of the samples in the C++ one
 *        gen_names --roundtrip OUT.prof: a small profile with a known value in every field
 *        the pprof exporter writes (checked against `go tool pprof -raw`, roundtrip.raw)
 */
#include <stdio.h>
#include <string.h>

#include "profile.h"
#include "profile_io.h"

static int roundtrip(const char *out) {
    SpProfile *p = sp_profile_new(SP_FLAVOUR_SAMPLED);
    sp_mapping_add(p, 0x400000, 0x401000, 0x1000, "/bin/rt",
                   "abcdef0123456789abcdef0123456789abcdef01");
    uint32_t mn = sp_frame_addv(p, SP_FRAME_NATIVE, "main", "/bin/rt", 0x400100, 0x100, "rt.c", 10);
    uint32_t lf =
        sp_frame_addv(p, SP_FRAME_NATIVE, "_Z4leafv", "/bin/rt", 0x400200, 0x40, "rt.c", 20);
    uint32_t km = sp_frame_addv(p, SP_FRAME_VM_METHOD, "K>>m", NULL, 0, 0, "K.som", 3);
    uint32_t t = sp_thread_add(p, 9, "w");
    uint32_t s1[] = {lf, mn}, s2[] = {km, mn};
    sp_sample_add(p, t, 10, s1, 2, 0x400210, 1, SP_VM_NONE);
    sp_sample_add(p, t, 20, s2, 2, 0x7000, 2, SP_VM_INTERPRETING);
    uint32_t l3[] = {5, 0}; /* K>>m sampled on line 5: a location of its own with Line.line */
    sp_sample_add(p, t, 30, s2, 2, 0x7000, 1, SP_VM_INTERPRETING);
    sp_sample_set_lines(p, l3);
    sp_meta_set(p, "mode", "wall");
    sp_meta_set(p, "trigger", "timer");
    sp_meta_set(p, "command", "rt a b");
    sp_meta_setu(p, "requested_hz", 500);
    sp_meta_setu(p, "interval_initial_ns", 2000000);
    sp_meta_setu(p, "dropped", 3);
    sp_meta_setu(p, "pid", 77);
    sp_meta_setu(p, "duration_ns", 5000000);
    sp_meta_setu(p, "start_unix_ns", 1700000000123456789ull);
    char err[256];
    int rc = sp_profile_write(p, out, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    sp_profile_free(p);
    return rc ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--roundtrip") == 0) return roundtrip(argv[2]);
    int shift = argc == 3 && strcmp(argv[1], "--shifted") == 0; /* the diff's "new" side */
    if (shift) argv++, argc--;
    if (argc != 2) return 2;
    char longname[2100];
    size_t n = 0;
    n += (size_t)snprintf(longname, sizeof longname, "Längst>>");
    while (n < 2000) { /* 'Ω' (2 bytes) and '€' (3 bytes): no prefix cut is on a boundary */
        memcpy(longname + n, n % 5 ? "\xce\xa9" : "\xe2\x82\xac", n % 5 ? 2 : 3);
        n += n % 5 ? 2 : 3;
    }
    n += (size_t)snprintf(longname + n, sizeof longname - n, ";semi%%pct\"q");
    SpProfile *p = sp_profile_new(SP_FLAVOUR_SAMPLED);
    uint32_t root = sp_frame_addv(p, SP_FRAME_NATIVE, "main", "/bin/prog", 0x1000, 0x100, NULL, 0);
    uint32_t cxx = sp_frame_addv(p, SP_FRAME_NATIVE, "_ZN5outer5inner4workEi", "/bin/prog", 0x1100,
                                 0x100, NULL, 0);
    uint32_t rust = sp_frame_addv(p, SP_FRAME_NATIVE, "_ZN4core3fmt5write17h0123456789abcdefE",
                                  "/bin/prog", 0x1200, 0x100, NULL, 0);
    uint32_t lng = sp_frame_addv(p, SP_FRAME_VM_METHOD, longname, NULL, 0, 0, "Long.som", 3);
    uint32_t t = sp_thread_add(p, 4242, "names");
    sp_mapping_add(p, 0x1000, 0x2000, 0, "/bin/prog", "0123456789abcdef0123456789abcdef01234567");
    sp_meta_set(p, "mode", "cpu");
    sp_meta_setu(p, "interval_initial_ns", 1000000);
    sp_event_add(p, 50, SP_EVENT_RATE_CHANGE, 1000000, 4000000, "tune");
    for (int i = 0; i < 100; i++) {
        int k = shift ? (i % 10 < 6 ? 0 : i % 10 < 8 ? 1 : 2) : i % 3; /* cxx 60% when shifted */
        uint32_t st[2] = {k == 0 ? cxx : k == 1 ? rust : lng, root};
        sp_sample_add(p, t, (uint64_t)i, st, 2, 0x1100 + (uint64_t)(i % 3) * 0x100 + 8, 1,
                      SP_VM_NONE);
    }
    char err[256];
    int rc = sp_profile_write(p, argv[1], err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    printf("%s\n", longname);
    sp_profile_free(p);
    return rc ? 1 : 0;
}
