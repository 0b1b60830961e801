/* SPDX-License-Identifier: MIT */
/*
 * gen_profile.c - writes synthetic profiles through the analysis API, for the sampo e2e
 * tests (used until/besides real `sampo record` runs).
 *
 *   gen_profile split OUT   native program: main -> {hot 50%, warm 30%, cool 20%} over two
 *                           threads, 1000 samples, mappings + symbols for two objects far
 *                           apart (the program and a "libc"), a rate change, 3 dropped.
 *   gen_profile som OUT     VM profile: Class>>selector frames, VM states, Figure-2 shapes
 *                           A->B->C->D and E->B->C->F.
 *   gen_profile exact OUT   exact flavour: only a CC-Map with invocation counts and times.
 *   gen_profile shifted OUT like split but 40/40/20 (for compare).
 *   gen_profile small OUT   like split with 20 samples (fuzz seed).
 *   gen_profile big OUT N   N samples, 64 threads, depth 8..39, 2000 functions (timing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "profile_io.h"

static SpProfile *gen_split(unsigned hot, unsigned warm, unsigned cool) {
    SpProfile *p = sp_profile_new(SP_FLAVOUR_SAMPLED);
    const uint64_t exe = 0x555555554000ull, lib = 0x7ffff7d80000ull;
    sp_mapping_add(p, exe + 0x1000, exe + 0x3000, 0x1000, "/usr/bin/splitprog", "");
    sp_mapping_add(p, lib, lib + 0x180000, 0x28000, "/usr/lib/x86_64-linux-gnu/libc.so.6", "");
    struct {
        const char *name;
        uint64_t addr, size;
        uint32_t map;
    } fn[] = {{"main", exe + 0x1100, 0x80, 0},     {"hot", exe + 0x1200, 0x200, 0},
              {"warm", exe + 0x1400, 0x100, 0},    {"cool", exe + 0x1500, 0x100, 0},
              {"memcpy", lib + 0x9a000, 0x400, 1}, {"__libc_start_main", lib + 0x2a000, 0x100, 1}};
    uint32_t f[6];
    for (int i = 0; i < 6; i++) {
        f[i] = sp_frame_addv(p, SP_FRAME_NATIVE, fn[i].name, fn[i].map ? "libc.so.6" : "splitprog",
                             fn[i].addr, fn[i].size, NULL, 0);
        sp_symbol_add(p, fn[i].addr, fn[i].size, fn[i].name, fn[i].map);
    }
    uint32_t t[2] = {sp_thread_add(p, 4001, "main"), sp_thread_add(p, 4002, "worker")};
    unsigned total = hot + warm + cool;
    for (unsigned i = 0; i < total; i++) {
        unsigned which = i < hot ? 1 : i < hot + warm ? 2 : 3;
        uint32_t st[4], d = 0;
        uint64_t pc = fn[which].addr + (i * 37) % fn[which].size;
        if (which == 1 && i % 10 == 0) { /* 10% of hot's samples are in memcpy called by it */
            st[d++] = f[4];
            pc = fn[4].addr + (i * 13) % fn[4].size;
        }
        st[d++] = f[which];
        st[d++] = f[0];
        st[d++] = f[5];
        sp_sample_add(p, t[i % 2], 1000000ull * i, st, d, pc, 1, SP_VM_NONE);
    }
    sp_meta_set(p, "command", "splitprog --test");
    sp_meta_set(p, "trigger", "timer_create (fallback: perf-hw unsupported, perf-sw EACCES)");
    sp_meta_set(p, "mode", "cpu");
    sp_meta_setu(p, "requested_hz", 1000);
    sp_meta_setu(p, "delivered_hz", 997);
    sp_meta_setu(p, "samples_dropped", 3);
    sp_meta_setu(p, "duration_ns", 1000000000ull);
    sp_event_add(p, 250000000, SP_EVENT_RATE_CHANGE, 1000000, 1250000, "repetition 17.2% > 15%");
    sp_event_add(p, 600000000, SP_EVENT_DROPPED, 3, 0, NULL);
    return p;
}

/* n samples over 64 threads, stacks of depth 8..39 drawn from 2000 functions (for timing). */
static SpProfile *gen_big(unsigned n) {
    SpProfile *p = sp_profile_new(SP_FLAVOUR_SAMPLED);
    uint32_t f[2000], st[40], t[64];
    char name[32];
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof name, "fn_%d", i);
        f[i] = sp_frame_addv(p, SP_FRAME_NATIVE, name, "big", 0x400000 + 64ull * i, 64, NULL, 0);
        sp_symbol_add(p, 0x400000 + 64ull * i, 64, name, SP_NONE);
    }
    for (int i = 0; i < 64; i++)
        t[i] = sp_thread_add(p, 1000 + i, "w");
    uint64_t x = 88172645463325252ull;
    for (unsigned s = 0; s < n; s++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint32_t d = 8 + (uint32_t)(x % 32);
        for (uint32_t k = 0; k < d; k++) /* a few hot paths: frame depends on depth and x */
            st[d - 1 - k] = f[(k * 37 + (x >> (k % 8)) % (k < 4 ? 3 : 50)) % 2000];
        sp_sample_add(p, t[s % 64], s * 200000ull, st, d,
                      0x400000 + 64ull * (st[0] % 2000) + s % 64, 1, SP_VM_NONE);
    }
    return p;
}

static SpProfile *gen_som(void) {
    SpProfile *p = sp_profile_new(SP_FLAVOUR_SAMPLED);
    const char *names[] = {"A>>run", "B>>step", "C>>inner",           "D>>leaf",
                           "E>>go",  "F>>leaf", "Object>>printString"};
    uint32_t f[7];
    for (int i = 0; i < 7; i++)
        f[i] = sp_frame_addv(p, SP_FRAME_VM_METHOD, names[i], "som", 0, 0, "Fig2.som", 10 + i);
    uint32_t gc = sp_frame_addv(p, SP_FRAME_VM_LABEL, "gc_mark", "som", 0x401000, 0x100, NULL, 0);
    uint32_t t = sp_thread_add(p, 1, "som main");
    uint32_t abcd[] = {f[3], f[2], f[1], f[0]}, ebcf[] = {f[5], f[2], f[1], f[4]};
    uint32_t gcst[] = {gc, f[6], f[0]};
    for (unsigned i = 0; i < 400; i++) {
        if (i % 10 < 6)
            sp_sample_add(p, t, i * 1000000ull, abcd, 4, 0x402000 + i % 64, 1, SP_VM_INTERPRETING);
        else if (i % 10 < 9)
            sp_sample_add(p, t, i * 1000000ull, ebcf, 4, 0x402100 + i % 64, 1, SP_VM_PRIMITIVE);
        else
            sp_sample_add(p, t, i * 1000000ull, gcst, 3, 0x401010 + i % 32, 1, SP_VM_GC);
    }
    sp_meta_set(p, "trigger", "timer_create");
    sp_meta_setu(p, "requested_hz", 1000);
    sp_meta_setu(p, "state_ns.interpreting", 610000000); /* exact split from transitions */
    sp_meta_setu(p, "state_ns.primitive", 290000000);
    sp_meta_setu(p, "state_ns.gc", 100000000);
    return p;
}

static SpProfile *gen_exact(void) {
    SpProfile *p = sp_profile_new(SP_FLAVOUR_EXACT);
    uint32_t m = sp_frame_addv(p, SP_FRAME_VM_METHOD, "Main>>run", "som", 0, 0, NULL, 0);
    uint32_t c = sp_frame_addv(p, SP_FRAME_VM_METHOD, "Caller>>loop", "som", 0, 0, NULL, 0);
    uint32_t k = sp_frame_addv(p, SP_FRAME_VM_METHOD, "Caller>>m", "som", 0, 0, NULL, 0);
    uint32_t n0 = sp_cc_node_add(p, SP_NONE, m, 0, 1, 1012, 5000000);
    uint32_t n1 = sp_cc_node_add(p, n0, c, 3, 10, 1010, 4900000);
    sp_cc_node_add(p, n1, k, 7, 1000, 1000, 4000000);
    sp_cc_method_add(p, m, 1, 1012, 100000, 5000000);
    sp_cc_method_add(p, c, 10, 1010, 900000, 4900000);
    sp_cc_method_add(p, k, 1000, 1000, 4000000, 4000000);
    sp_cc_edge_add(p, m, 3, c, 10);
    sp_cc_edge_add(p, c, 7, k, 1000);
    sp_meta_set(p, "mode", "exact");
    return p;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "big")) {
        SpProfile *p = gen_big((unsigned)strtoul(argv[3], NULL, 10));
        char err[SP_ERR_MAX];
        int rc = sp_profile_write(p, argv[2], err, sizeof err);
        sp_profile_free(p);
        return rc ? 1 : 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: gen_profile split|shifted|small|som|exact OUT\n");
        return 2;
    }
    SpProfile *p = !strcmp(argv[1], "split")     ? gen_split(500, 300, 200)
                   : !strcmp(argv[1], "small")   ? gen_split(10, 6, 4)
                   : !strcmp(argv[1], "shifted") ? gen_split(400, 400, 200)
                   : !strcmp(argv[1], "som")     ? gen_som()
                   : !strcmp(argv[1], "exact")   ? gen_exact()
                                                 : NULL;
    if (!p) {
        fprintf(stderr, "gen_profile: unknown kind '%s'\n", argv[1]);
        return 2;
    }
    char err[SP_ERR_MAX];
    int rc = sp_profile_write(p, argv[2], err, sizeof err);
    if (rc) fprintf(stderr, "gen_profile: %s\n", err);
    sp_profile_free(p);
    return rc ? 1 : 0;
}
