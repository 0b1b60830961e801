/* SPDX-License-Identifier: MIT */
/*
 * test_prof_misc.c - smaller engine parts: the raw PC ring and its histogram, the u64 map,
 * symbol lookup for this binary and for JIT ranges (with the perf map), the guarded
 * frame-pointer walk on bad chains, and configuration from the environment.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "pchist.h"
#include "sampo.h"
#include "symbols.h"
#include "u64map.h"

static void test_pc_ring_pay_as_you_go(void **state) {
    (void)state;
    ProfPcRing r;
    assert_int_equal(prof_pcring_init(&r, 4), 0);
    for (uint64_t pc = 100; pc < 110; pc++)
        prof_pcring_add(&r, pc); /* keeps 106..109 */
    uint64_t bins[4], lo = 0, hi = 0;
    assert_int_equal(prof_pcring_hist(&r, 0, 0, bins, 4, &lo, &hi), 4);
    assert_int_equal(lo, 106);
    assert_int_equal(hi, 110);
    for (int i = 0; i < 4; i++)
        assert_int_equal(bins[i], 1);
    assert_int_equal(prof_pcring_hist(&r, 100, 108, bins, 2, NULL, NULL), 2); /* 106, 107 */
    assert_int_equal(bins[0], 0);
    assert_int_equal(bins[1], 2);
    prof_pcring_fini(&r);
}

static void test_u64map(void **state) {
    (void)state;
    ProfU64Map m = {0};
    uint64_t v;
    for (uint64_t k = 1; k <= 10000; k++)
        assert_int_equal(prof_u64map_put(&m, k * 7919, k), 0);
    for (uint64_t k = 1; k <= 10000; k++) {
        assert_true(prof_u64map_get(&m, k * 7919, &v));
        assert_int_equal(v, k);
    }
    assert_false(prof_u64map_get(&m, 3, &v));
    prof_u64map_put(&m, 7919, 42);
    prof_u64map_get(&m, 7919, &v);
    assert_int_equal(v, 42);
    assert_int_equal(prof_u64map_put(&m, 0, 1), -1); /* key 0 reserved */
    prof_u64map_fini(&m);
}

__attribute__((noinline)) int prof_test_known_function(int x) {
    return x * 3 + 1;
}

static void test_symbols_self_and_jit(void **state) {
    (void)state;
    ProfSymbols *s = prof_symbols_new();
    assert_non_null(s);
    ProfSym sym;
    uint64_t addr = (uint64_t)(uintptr_t)&prof_test_known_function + 2;
    assert_int_equal(prof_symbols_lookup(s, addr, &sym), 1);
    assert_string_equal(sym.name, "prof_test_known_function");
    assert_int_equal(sym.start, (uint64_t)(uintptr_t)&prof_test_known_function);
    assert_non_null(strstr(sym.module, "test_prof_misc"));
    /* libc is found too (dynsym at least) */
    assert_int_equal(prof_symbols_lookup(s, (uint64_t)(uintptr_t)&getpid, &sym), 1);
    /* JIT range */
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    unlink(path);
    assert_int_equal(prof_symbols_jit_add(s, 0x10000000, 0x100, "jit_hot_loop", 1), 0);
    assert_int_equal(prof_symbols_lookup(s, 0x10000080, &sym), 1);
    assert_string_equal(sym.name, "jit_hot_loop");
    assert_true(sym.jit);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[128] = "";
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    unlink(path);
    assert_string_equal(line, "10000000 100 jit_hot_loop\n");
    assert_int_equal(prof_symbols_jit_remove(s, 0x10000000), 0);
    assert_int_equal(prof_symbols_lookup(s, 0x10000080, &sym), 0);
    assert_int_equal(prof_symbols_jit_remove(s, 0x10000000), -1);
    prof_symbols_free(s);
}

/* A library loaded after the symbol tables were built is found on the next miss. */
static void test_symbols_after_dlopen(void **state) {
    (void)state;
    ProfSymbols *s = prof_symbols_new();
    void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        prof_symbols_free(s);
        skip();
    }
    void *fn = dlsym(h, "deflateInit2_");
    assert_non_null(fn);
    ProfSym sym;
    assert_int_equal(prof_symbols_lookup(s, (uint64_t)(uintptr_t)fn, &sym), 1);
    assert_string_equal(sym.name, "deflateInit2_");
    assert_non_null(strstr(sym.module, "libz"));
    prof_symbols_free(s);
    dlclose(h);
}

/* Bad frame-pointer chains end the walk with a flag instead of a crash. */
static void test_guarded_walk(void **state) {
    (void)state;
    uint64_t stack[64] = {0}, out[16];
    uintptr_t lo = (uintptr_t)stack, hi = (uintptr_t)(stack + 64);
    uint8_t flags = 0;
    /* frame at stack[4] -> stack[8] -> outside the bounds: the end of the chain */
    stack[4] = (uintptr_t)&stack[8], stack[5] = 0x401000;
    stack[8] = 0xdead0000, stack[9] = 0x402000;
    uint32_t n = prof_walk_native(0x400000, lo, (uintptr_t)&stack[4], lo, hi, out, 16, &flags);
    assert_int_equal(n, 3);
    assert_int_equal(out[1], 0x401000);
    assert_int_equal(out[2], 0x402000);
    assert_false(flags & REC_WALK_ERR);
    /* a bad first frame pointer is an error */
    flags = 0;
    assert_int_equal(prof_walk_native(1, lo, 0xdead0000, lo, hi, out, 16, &flags), 1);
    assert_true(flags & REC_WALK_ERR);
    /* a loop (next <= fp) stops; right at the first frame it is an error */
    flags = 0;
    stack[8] = (uintptr_t)&stack[4];
    n = prof_walk_native(0x400000, lo, (uintptr_t)&stack[4], lo, hi, out, 16, &flags);
    assert_int_equal(n, 3);
    flags = 0;
    stack[4] = (uintptr_t)&stack[4];
    n = prof_walk_native(0x400000, lo, (uintptr_t)&stack[4], lo, hi, out, 16, &flags);
    assert_int_equal(n, 2);
    assert_true(flags & REC_WALK_ERR);
    stack[4] = (uintptr_t)&stack[8];
    /* misaligned fp, sp outside the stack */
    flags = 0;
    assert_int_equal(prof_walk_native(1, lo, (uintptr_t)&stack[4] + 3, lo, hi, out, 16, &flags), 1);
    assert_true(flags & REC_WALK_ERR);
    flags = 0;
    assert_int_equal(prof_walk_native(1, hi + 64, (uintptr_t)&stack[4], lo, hi, out, 16, &flags),
                     1);
    /* depth limit */
    flags = 0;
    stack[8] = (uintptr_t)&stack[12], stack[12] = 0, stack[13] = 0x403000;
    assert_int_equal(prof_walk_native(1, lo, (uintptr_t)&stack[4], lo, hi, out, 2, &flags), 2);
    assert_true(flags & REC_TRUNC);
}

static void test_config_env(void **state) {
    (void)state;
    SampoConfig c;
    char err[128];
    sampo_config_default(&c);
    setenv("SAMPO_HZ", "997", 1);
    setenv("SAMPO_MODE", "wall", 1);
    setenv("SAMPO_TUNE", "freeze", 1);
    setenv("SAMPO_BURST", "5", 1);
    assert_int_equal(sampo_config_from_env(&c, err, sizeof err), SAMPO_OK);
    assert_int_equal(c.hz, 997);
    assert_int_equal(c.mode, SAMPO_MODE_WALL);
    assert_true(c.tune && c.tune_freeze);
    assert_int_equal(c.burst, 5);
    assert_int_equal(c.burst_gap, 45);
    setenv("SAMPO_HZ", "fast", 1);
    assert_int_equal(sampo_config_from_env(&c, err, sizeof err), SAMPO_EINVAL);
    assert_string_equal(err, "SAMPO_HZ: expected a number in [0, 100000], got 'fast'");
    unsetenv("SAMPO_HZ");
    setenv("SAMPO_TRIGGER", "pmu", 1);
    assert_int_equal(sampo_config_from_env(&c, err, sizeof err), SAMPO_EINVAL);
    unsetenv("SAMPO_TRIGGER");
    unsetenv("SAMPO_MODE");
    unsetenv("SAMPO_TUNE");
    unsetenv("SAMPO_BURST");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pc_ring_pay_as_you_go), cmocka_unit_test(test_u64map),
        cmocka_unit_test(test_symbols_self_and_jit),  cmocka_unit_test(test_symbols_after_dlopen),
        cmocka_unit_test(test_guarded_walk),          cmocka_unit_test(test_config_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
