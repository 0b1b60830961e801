/* SPDX-License-Identifier: MIT */
/*
 * test_prof_jitdump.c - perf's jitdump file (src/prof/jitdump.c) and its wiring in the JIT
 * registration of symbols.c: header and record bytes checked byte-exact (timestamps only
 * checked for order and clock), the executable mapping perf looks for, unreadable and
 * oversized ranges, failures that must not break registration, concurrent registration, a
 * forked child's own dump.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jitdump.h"
#include "symbols.h"

#if defined(__x86_64__)
#define EXPECT_MACH 62u /* EM_X86_64 */
#elif defined(__aarch64__)
#define EXPECT_MACH 183u /* EM_AARCH64 */
#endif

static const uint8_t code_a[] = {0x48, 0x89, 0xf9, 0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3};
static const uint8_t code_b[] = {0x55, 0x48, 0x89, 0xe5, 0x31, 0xc0, 0x5d, 0xc3,
                                 0x90, 0x90, 0x0f, 0x1f, 0x44, 0x00, 0x00};

typedef struct Buf {
    uint8_t *p;
    size_t n;
} Buf;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t get32(const Buf *b, size_t off) {
    uint32_t v;
    assert_true(off + 4 <= b->n);
    memcpy(&v, b->p + off, 4);
    return v;
}

static uint64_t get64(const Buf *b, size_t off) {
    uint64_t v;
    assert_true(off + 8 <= b->n);
    memcpy(&v, b->p + off, 8);
    return v;
}

static Buf slurp(const char *path) {
    Buf b = {NULL, 0};
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b.n = (size_t)n;
    b.p = malloc(b.n + 1);
    assert_non_null(b.p);
    assert_int_equal(fread(b.p, 1, b.n, f), b.n);
    fclose(f);
    return b;
}

static char *make_tmpdir(void) {
    char *d = strdup("/tmp/sampo-jitdump-test.XXXXXX");
    assert_non_null(d);
    assert_non_null(mkdtemp(d));
    return d;
}

static void rm_tree(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* Expected bytes, built field by field like the spec lists them. */
static uint8_t *emit32(uint8_t *p, uint32_t v) {
    memcpy(p, &v, 4);
    return p + 4;
}

static uint8_t *emit64(uint8_t *p, uint64_t v) {
    memcpy(p, &v, 8);
    return p + 8;
}

static uint8_t *emit_load(uint8_t *p, uint64_t ts, uint32_t tid, const void *code, uint64_t size,
                          uint64_t index, const char *name) {
    size_t nlen = strlen(name) + 1;
    p = emit32(p, 0);
    p = emit32(p, (uint32_t)(56 + nlen + size));
    p = emit64(p, ts);
    p = emit32(p, (uint32_t)getpid());
    p = emit32(p, tid);
    p = emit64(p, (uint64_t)(uintptr_t)code);
    p = emit64(p, (uint64_t)(uintptr_t)code);
    p = emit64(p, size);
    p = emit64(p, index);
    memcpy(p, name, nlen);
    memcpy(p + nlen, code, size);
    return p + nlen + size;
}

static void test_two_ranges_byte_exact(void **state) {
    (void)state;
    char *dir = make_tmpdir(), err[256] = "";
    uint64_t t0 = now_ns();
    ProfJitdump *j = prof_jitdump_open(dir, err, sizeof err);
    assert_non_null(j);
    char want_path[512];
    snprintf(want_path, sizeof want_path, "%s/jit-%d.dump", dir, (int)getpid());
    assert_string_equal(prof_jitdump_path(j), want_path);
    assert_int_equal(prof_jitdump_load(j, (uintptr_t)code_a, sizeof code_a, "jit_loop_a"), 0);
    assert_int_equal(prof_jitdump_load(j, (uintptr_t)code_b, sizeof code_b, "b"), 0);
    ProfJitdumpStats st = prof_jitdump_stats(j);
    assert_int_equal(st.loads, 2);
    assert_int_equal(st.unreadable + st.truncated + st.errors, 0);
    assert_int_equal(prof_jitdump_close(j), 0);
    uint64_t t1 = now_ns();

    Buf b = slurp(want_path);
    size_t r1 = 40, r2 = r1 + 56 + 11 + sizeof code_a, r3 = r2 + 56 + 2 + sizeof code_b;
    assert_int_equal(b.n, r3 + 16);
    /* timestamps: CLOCK_MONOTONIC, in creation order */
    uint64_t ts0 = get64(&b, 24), ts1 = get64(&b, r1 + 8), ts2 = get64(&b, r2 + 8),
             ts3 = get64(&b, r3 + 8);
    assert_true(t0 <= ts0 && ts0 <= ts1 && ts1 <= ts2 && ts2 <= ts3 && ts3 <= t1);

    uint8_t *want = calloc(1, b.n), *p = want;
    assert_non_null(want);
    p = emit32(p, 0x4A695444u); /* "JiTD" */
    p = emit32(p, 1);
    p = emit32(p, 40);
#ifdef EXPECT_MACH
    p = emit32(p, EXPECT_MACH);
#else
    p = emit32(p, get32(&b, 12));
#endif
    p = emit32(p, 0);
    p = emit32(p, (uint32_t)getpid());
    p = emit64(p, ts0);
    p = emit64(p, 0);
    p = emit_load(p, ts1, (uint32_t)gettid(), code_a, sizeof code_a, 0, "jit_loop_a");
    p = emit_load(p, ts2, (uint32_t)gettid(), code_b, sizeof code_b, 1, "b");
    p = emit32(p, 3); /* JIT_CODE_CLOSE */
    p = emit32(p, 16);
    p = emit64(p, ts3);
    assert_int_equal((size_t)(p - want), b.n);
    assert_memory_equal(b.p, want, b.n);
    free(want);
    free(b.p);
    rm_tree(dir);
    free(dir);
}

/* perf inject --jit finds the dump through an executable mapping of it. */
static void test_mapped_executable(void **state) {
    (void)state;
    char *dir = make_tmpdir();
    ProfJitdump *j = prof_jitdump_open(dir, NULL, 0);
    assert_non_null(j);
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[1024];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, prof_jitdump_path(j))) {
            char perms[8] = "";
            assert_int_equal(sscanf(line, "%*s %7s", perms), 1);
            assert_string_equal(perms, "r-xp");
            found++;
        }
    fclose(f);
    assert_int_equal(found, 1);
    assert_int_equal(prof_jitdump_close(j), 0);
    rm_tree(dir);
    free(dir);
}

/* A range whose second page is gone is written with zeros there, never faulting. */
static void test_unreadable_page_zeros(void **state) {
    (void)state;
    char *dir = make_tmpdir();
    /* the dump's own page is mapped first, so it cannot land in the hole made below */
    ProfJitdump *j = prof_jitdump_open(dir, NULL, 0);
    assert_non_null(j);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    memset(m, 0xab, page);
    assert_int_equal(munmap(m + page, page), 0);
    assert_int_equal(prof_jitdump_load(j, (uintptr_t)m + page - 8, 16, "edge"), 0);
    ProfJitdumpStats st = prof_jitdump_stats(j);
    assert_int_equal(st.loads, 1);
    assert_int_equal(st.unreadable, 1);
    char path[512];
    snprintf(path, sizeof path, "%s", prof_jitdump_path(j));
    assert_int_equal(prof_jitdump_close(j), 0);
    Buf b = slurp(path);
    size_t code = 40 + 56 + 5;
    assert_int_equal(b.n, code + 16 + 16);
    assert_int_equal(get64(&b, 40 + 40), 16); /* code_size */
    for (size_t i = 0; i < 16; i++)
        assert_int_equal(b.p[code + i], i < 8 ? 0xab : 0);
    assert_int_equal(get32(&b, code + 16), 3);
    free(b.p);
    munmap(m, page);
    rm_tree(dir);
    free(dir);
}

/* Ranges above the cap keep their first PROF_JITDUMP_MAX_CODE bytes. */
static void test_oversized_range_truncated(void **state) {
    (void)state;
    char *dir = make_tmpdir();
    size_t n = PROF_JITDUMP_MAX_CODE + 4096;
    uint8_t *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    ProfJitdump *j = prof_jitdump_open(dir, NULL, 0);
    assert_non_null(j);
    assert_int_equal(prof_jitdump_load(j, (uintptr_t)m, n, "big"), 0);
    assert_int_equal(prof_jitdump_stats(j).truncated, 1);
    char path[512];
    snprintf(path, sizeof path, "%s", prof_jitdump_path(j));
    assert_int_equal(prof_jitdump_close(j), 0);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal((uint64_t)sb.st_size, 40 + 56 + 4 + PROF_JITDUMP_MAX_CODE + 16);
    munmap(m, n);
    rm_tree(dir);
    free(dir);
}

static void test_open_failure_reported(void **state) {
    (void)state;
    char err[256] = "";
    assert_null(prof_jitdump_open("/nonexistent-sampo-dir/x", err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent-sampo-dir/x/jit-"));
    /* through symbols.c: registration and lookup still work, the failure is counted */
    setenv("SAMPO_JITDUMP", "1", 1);
    setenv("SAMPO_JITDUMP_DIR", "/proc/sampo-no-such-dir", 1);
    ProfSymbols *s = prof_symbols_new();
    assert_non_null(s);
    assert_int_equal(prof_symbols_jit_add(s, (uintptr_t)code_a, sizeof code_a, "still_ok", 0), 0);
    ProfSym sym;
    assert_int_equal(prof_symbols_lookup(s, (uintptr_t)code_a + 2, &sym), 1);
    assert_string_equal(sym.name, "still_ok");
    uint64_t failures = 0;
    assert_null(prof_symbols_jitdump(s, &failures));
    assert_int_equal(failures, 1);
    prof_symbols_free(s);
    unsetenv("SAMPO_JITDUMP_DIR");
    unsetenv("SAMPO_JITDUMP");
}

/* Walks a whole dump: header, then records up to the end; returns the LOAD count and checks
 * code_index runs 0, 1, 2... and the file ends with JIT_CODE_CLOSE. */
static uint64_t walk_dump(const Buf *b, char names[][32], size_t maxnames) {
    assert_int_equal(get32(b, 0), 0x4A695444u);
    size_t off = get32(b, 8);
    uint64_t loads = 0, last_id = 99;
    while (off < b->n) {
        uint32_t id = get32(b, off), size = get32(b, off + 4);
        assert_true(size >= 16 && off + size <= b->n);
        if (id == 0) {
            assert_int_equal(get64(b, off + 48), loads); /* code_index */
            if (loads < maxnames) snprintf(names[loads], 32, "%s", (const char *)b->p + off + 56);
            loads++;
        }
        last_id = id;
        off += size;
    }
    assert_int_equal(off, b->n);
    assert_int_equal(last_id, 3);
    return loads;
}

static void test_symbols_wiring(void **state) {
    (void)state;
    char *dir = make_tmpdir();
    setenv("SAMPO_JITDUMP", "1", 1);
    setenv("SAMPO_JITDUMP_DIR", dir, 1);
    ProfSymbols *s = prof_symbols_new();
    assert_non_null(s);
    assert_int_equal(prof_symbols_jit_add(s, (uintptr_t)code_a, sizeof code_a, "first", 0), 0);
    assert_int_equal(prof_symbols_jit_add(s, (uintptr_t)code_b, sizeof code_b, "second", 0), 0);
    uint64_t failures = 9;
    const char *p = prof_symbols_jitdump(s, &failures);
    assert_non_null(p);
    assert_int_equal(failures, 0);
    char path[512];
    snprintf(path, sizeof path, "%s", p);
    prof_symbols_free(s); /* writes JIT_CODE_CLOSE */
    Buf b = slurp(path);
    char names[4][32];
    assert_int_equal(walk_dump(&b, names, 4), 2);
    assert_string_equal(names[0], "first");
    assert_string_equal(names[1], "second");
    assert_memory_equal(b.p + 40 + 56 + 6, code_a, sizeof code_a);
    free(b.p);
    unsetenv("SAMPO_JITDUMP_DIR");
    unsetenv("SAMPO_JITDUMP");
    rm_tree(dir);
    free(dir);
}

static void test_default_dir(void **state) {
    (void)state;
    char *base = make_tmpdir(), out[1024], err[256] = "", want[600];
    unsetenv("SAMPO_JITDUMP_DIR");
    setenv("JITDUMPDIR", base, 1);
    assert_int_equal(prof_jitdump_default_dir(out, sizeof out, err, sizeof err), 0);
    snprintf(want, sizeof want, "%s/.debug/jit/sampo-jit-", base);
    assert_memory_equal(out, want, strlen(want));
    struct stat sb;
    assert_int_equal(stat(out, &sb), 0);
    assert_true(S_ISDIR(sb.st_mode));
    assert_int_equal(prof_jitdump_default_dir(out, 16, err, sizeof err), -1); /* too long */
    unsetenv("JITDUMPDIR");
    rm_tree(base);
    free(base);
}

enum { NTHREADS = 4, PER_THREAD = 50 };

typedef struct Reg {
    ProfSymbols *s;
    int t;
} Reg;

static void *reg_thread(void *arg) {
    Reg *r = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d_f%d", r->t, i);
        prof_symbols_jit_add(r->s, (uintptr_t)code_b, sizeof code_b, name, 0);
    }
    return NULL;
}

static void test_concurrent_registration(void **state) {
    (void)state;
    char *dir = make_tmpdir();
    setenv("SAMPO_JITDUMP", "1", 1);
    setenv("SAMPO_JITDUMP_DIR", dir, 1);
    ProfSymbols *s = prof_symbols_new();
    assert_non_null(s);
    pthread_t th[NTHREADS];
    Reg r[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        r[t] = (Reg){s, t};
        assert_int_equal(pthread_create(&th[t], NULL, reg_thread, &r[t]), 0);
    }
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);
    char path[512];
    snprintf(path, sizeof path, "%s", prof_symbols_jitdump(s, NULL));
    prof_symbols_free(s);
    Buf b = slurp(path);
    assert_int_equal(walk_dump(&b, NULL, 0), NTHREADS * PER_THREAD);
    free(b.p);
    unsetenv("SAMPO_JITDUMP_DIR");
    unsetenv("SAMPO_JITDUMP");
    rm_tree(dir);
    free(dir);
}

/* A forked child that registers code writes its own jit-CHILDPID.dump, starting with the
 * ranges it inherited; the parent's dump is left alone. */
static void test_fork_child_own_dump(void **state) {
    (void)state;
    char *dir = make_tmpdir();
    setenv("SAMPO_JITDUMP", "1", 1);
    setenv("SAMPO_JITDUMP_DIR", dir, 1);
    ProfSymbols *s = prof_symbols_new();
    assert_non_null(s);
    assert_int_equal(prof_symbols_jit_add(s, (uintptr_t)code_a, sizeof code_a, "inherited", 0), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        int bad = prof_symbols_jit_add(s, (uintptr_t)code_b, sizeof code_b, "childs", 0) != 0;
        const char *p = prof_symbols_jitdump(s, NULL);
        char want[512];
        snprintf(want, sizeof want, "%s/jit-%d.dump", dir, (int)getpid());
        bad |= !p || strcmp(p, want) != 0;
        prof_symbols_free(s);
        _exit(bad);
    }
    int st = -1;
    assert_int_equal(waitpid(child, &st, 0), child);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char path[512];
    snprintf(path, sizeof path, "%s/jit-%d.dump", dir, (int)child);
    Buf b = slurp(path);
    char names[4][32];
    assert_int_equal(walk_dump(&b, names, 4), 2);
    assert_string_equal(names[0], "inherited");
    assert_string_equal(names[1], "childs");
    free(b.p);
    snprintf(path, sizeof path, "%s", prof_symbols_jitdump(s, NULL));
    prof_symbols_free(s);
    b = slurp(path);
    assert_int_equal(walk_dump(&b, names, 4), 1); /* only the parent's own range */
    assert_int_equal(get32(&b, 4 * 4 + 4), (uint32_t)getpid());
    free(b.p);
    unsetenv("SAMPO_JITDUMP_DIR");
    unsetenv("SAMPO_JITDUMP");
    rm_tree(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_ranges_byte_exact),
        cmocka_unit_test(test_mapped_executable),
        cmocka_unit_test(test_unreadable_page_zeros),
        cmocka_unit_test(test_oversized_range_truncated),
        cmocka_unit_test(test_open_failure_reported),
        cmocka_unit_test(test_symbols_wiring),
        cmocka_unit_test(test_default_dir),
        cmocka_unit_test(test_concurrent_registration),
        cmocka_unit_test(test_fork_child_own_dump),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
