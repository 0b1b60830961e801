/* SPDX-License-Identifier: MIT */
/*
 * test_symbols.c - debuginfo.c and the naming in symbols.c: the .gnu_debuglink CRC, the
 * lookup order on libc (its build-id file, its .gnu_debuglink file under a debug root, a
 * build-id file of the wrong object refused, .dynsym last), perf's alias choice, PLT
 * entries, .eh_frame function ranges, stable names for unnamed code, and ELF files with no
 * symbols or no sections at all (no crash, no qsort(NULL, 0)), and copies of this binary
 * with bytes flipped (no out-of-bounds read).  The libc parts need
 * libc6-dbg and are skipped without it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debuginfo.h"
#include "symbols.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static int find_libc_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, "/libc.so.6")) {
        snprintf(arg, 4096, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

/* Path of the libc this test runs with. */
static const char *libc_path(void) {
    static char path[4096];
    if (!path[0]) dl_iterate_phdr(find_libc_cb, path);
    return path;
}

static const ProfSymEnt *by_name(const ProfSymTab *t, const char *name) {
    for (uint32_t i = 0; i < t->n; i++)
        if (!strcmp(prof_symtab_name(t, &t->syms[i]), name)) return &t->syms[i];
    return NULL;
}

/* Loads libc from the system debug root; skips the test if libc6-dbg is not there. */
static void load_libc_or_skip(ProfSymTab *t) {
    assert_int_equal(prof_symtab_load(t, libc_path(), NULL), 0);
    if (t->source != PROF_SYMSRC_BUILD_ID) {
        prof_symtab_fini(t);
        skip(); /* libc6-dbg not installed */
    }
}

static char tmpdir[64];

static void mkdirs(const char *path) {
    char buf[4096];
    size_t n = strlen(path);
    assert_true(n < sizeof buf);
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(buf, 0755);
            *p = '/';
        }
    mkdir(buf, 0755);
}

static int setup_tmp(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/sampo-symtest.XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmp(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ---- CRC ---------------------------------------------------------------------------------- */

static void test_crc32(void **state) {
    (void)state;
    assert_int_equal(prof_crc32(0, "123456789", 9), 0xcbf43926u); /* the CRC-32 check value */
    assert_int_equal(prof_crc32(0, "", 0), 0);
    uint32_t c = prof_crc32(0, "1234", 4);
    assert_int_equal(prof_crc32(c, "56789", 5), 0xcbf43926u); /* incremental */
    char path[128];
    snprintf(path, sizeof path, "%s/crc", tmpdir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    static unsigned char big[200000]; /* more than one read buffer */
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (unsigned char)(i * 31 + 7);
    assert_int_equal(fwrite(big, 1, sizeof big, f), sizeof big);
    fclose(f);
    uint32_t fc = 0;
    assert_int_equal(prof_crc32_file(path, &fc), 0);
    assert_int_equal(fc, prof_crc32(0, big, sizeof big));
    snprintf(path, sizeof path, "%s/missing", tmpdir);
    assert_int_equal(prof_crc32_file(path, &fc), -1);
}

/* ---- lookup order ------------------------------------------------------------------------- */

/* This test binary has its own .symtab: that comes first. */
__attribute__((noinline)) int symtest_own_function(int x) {
    return x * 7 + 3;
}

static void test_own_symtab(void **state) {
    (void)state;
    ProfSymTab t;
    assert_int_equal(prof_symtab_load(&t, "/proc/self/exe", "/nonexistent"), 0);
    assert_int_equal(t.source, PROF_SYMSRC_SYMTAB);
    assert_null(t.debug_file);
    assert_non_null(by_name(&t, "symtest_own_function"));
    assert_int_equal(strlen(t.build_id), 40);
    for (uint32_t i = 1; i < t.n; i++) /* sorted, one symbol per address */
        assert_true(t.syms[i - 1].addr < t.syms[i].addr);
    prof_symtab_fini(&t);
}

static void test_libc_build_id_then_dynsym(void **state) {
    (void)state;
    ProfSymTab t;
    load_libc_or_skip(&t);
    assert_non_null(t.debug_file);
    assert_non_null(strstr(t.debug_file, "/usr/lib/debug/.build-id/"));
    assert_non_null(strstr(t.debug_file, t.build_id + 2));
    assert_non_null(by_name(&t, "_int_malloc")); /* static: only in the debug file */
    assert_int_equal(t.refused, 0);
    prof_symtab_fini(&t);
    /* no debug root: .dynsym, which lacks static functions */
    assert_int_equal(prof_symtab_load(&t, libc_path(), "/nonexistent"), 0);
    assert_int_equal(t.source, PROF_SYMSRC_DYNSYM);
    assert_null(by_name(&t, "_int_malloc"));
    assert_non_null(by_name(&t, "malloc"));
    prof_symtab_fini(&t);
}

/* Under ROOT: a build-id file that belongs to another object (refused), and libc's real
 * debug file where its .gnu_debuglink says (ROOT + libc's directory), CRC intact. */
static void test_libc_debuglink_after_wrong_build_id(void **state) {
    (void)state;
    ProfSymTab t;
    load_libc_or_skip(&t);
    char real_debug[4096], id[41], path[8192], libdir[4096];
    snprintf(real_debug, sizeof real_debug, "%s", t.debug_file);
    snprintf(id, sizeof id, "%s", t.build_id);
    prof_symtab_fini(&t);
    char root[256];
    snprintf(root, sizeof root, "%s/root", tmpdir);
    snprintf(path, sizeof path, "%s/.build-id/%.2s", root, id);
    mkdirs(path);
    snprintf(path, sizeof path, "%s/.build-id/%.2s/%s.debug", root, id, id + 2);
    assert_int_equal(symlink("/proc/self/exe", path), 0); /* an ELF with another build-id */
    /* .gnu_debuglink's file name is the debug file's own name in Debian's layout */
    const char *link = strrchr(real_debug, '/') + 1;
    char rl[4096];
    assert_non_null(realpath(libc_path(), rl));
    snprintf(libdir, sizeof libdir, "%.*s", (int)(strrchr(rl, '/') - rl), rl);
    snprintf(path, sizeof path, "%s%s", root, libdir);
    mkdirs(path);
    snprintf(path, sizeof path, "%s%s/%s", root, libdir, link);
    assert_int_equal(symlink(real_debug, path), 0);

    assert_int_equal(prof_symtab_load(&t, libc_path(), root), 0);
    assert_int_equal(t.refused, 1);
    assert_non_null(strstr(t.note, "build-id"));
    assert_int_equal(t.source, PROF_SYMSRC_DEBUGLINK);
    assert_string_equal(t.debug_file, path);
    assert_non_null(by_name(&t, "_int_malloc"));
    prof_symtab_fini(&t);
}

/* malloc and __libc_malloc share an address: perf prints "malloc" (fewer underscores). */
static void test_alias_choice(void **state) {
    (void)state;
    ProfSymTab t;
    load_libc_or_skip(&t);
    const ProfSymEnt *m = by_name(&t, "malloc");
    assert_non_null(m);
    assert_null(by_name(&t, "__libc_malloc"));
    assert_ptr_equal(prof_symtab_find(&t, m->addr + 1), m);
    prof_symtab_fini(&t);
}

/* ---- PLT, unwind ranges, names of unnamed code ------------------------------------------- */

static void test_plt_entries(void **state) {
    (void)state;
    ProfSymTab t;
    assert_int_equal(prof_symtab_load(&t, "/proc/self/exe", "/nonexistent"), 0);
    assert_true(t.nplt > 0);
    const ProfSymEnt *e = by_name(&t, "_cmocka_run_group_tests@plt");
    assert_non_null(e);
    assert_true(e->size >= 8 && e->size <= 32);
    assert_int_equal(e->rank, 1); /* marked as a PLT entry */
    assert_ptr_equal(prof_symtab_find(&t, e->addr + 2), e);
    prof_symtab_fini(&t);
}

static void test_eh_frame_ranges(void **state) {
    (void)state;
    ProfSymTab t;
    assert_int_equal(prof_symtab_load(&t, "/proc/self/exe", "/nonexistent"), 0);
    const ProfSymEnt *f = by_name(&t, "symtest_own_function");
    assert_non_null(f);
    uint64_t s, e;
    assert_int_equal(t.nfde, 0); /* read at the first need */
    assert_int_equal(prof_symtab_fde(&t, f->addr + 1, &s, &e), 1);
    assert_true(t.nfde > 10);
    assert_int_equal(s, f->addr);
    assert_true(e > s && e <= f->addr + f->size + 16);
    assert_int_equal(prof_symtab_fde(&t, 1, &s, &e), 0);
    prof_symtab_fini(&t);
}

static void test_unknown_names(void **state) {
    (void)state;
    char buf[128];
    ProfSym s = {.module = "/usr/lib/x86_64-linux-gnu/libc.so.6", .vaddr = 0x27d0a};
    assert_string_equal(prof_symbols_unknown_name(&s, buf, sizeof buf),
                        "[unknown] libc.so.6+0x27d0a");
    ProfSym none = {.start = 0x7f0012345678};
    assert_string_equal(prof_symbols_unknown_name(&none, buf, sizeof buf), "[unknown]");
    /* through ProfSymbols: this binary's own function */
    ProfSymbols *syms = prof_symbols_new();
    assert_non_null(syms);
    ProfSym hit;
    assert_int_equal(prof_symbols_lookup(syms, (uint64_t)(uintptr_t)&symtest_own_function, &hit),
                     1);
    assert_string_equal(hit.name, "symtest_own_function");
    assert_int_equal(hit.plt, 0);
    prof_symbols_free(syms);
}

/* Each mapping carries the build-id read from the object's mapped notes (no file read). */
static void test_mapping_build_ids(void **state) {
    (void)state;
    ProfSymTab t;
    assert_int_equal(prof_symtab_load(&t, libc_path(), "/nonexistent"), 0);
    ProfSymbols *syms = prof_symbols_new();
    assert_non_null(syms);
    const ProfObject *o;
    uint32_t n = prof_symbols_objects(syms, &o), seen = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(o[i].path, libc_path())) {
            assert_non_null(o[i].build_id);
            assert_string_equal(o[i].build_id, t.build_id);
            seen++;
        }
    assert_true(seen > 0);
    prof_symbols_free(syms);
    prof_symtab_fini(&t);
}

/* The vDSO has no file: its symbols are read from memory, as perf reads them. */
static void test_vdso(void **state) {
    (void)state;
    ProfSymbols *syms = prof_symbols_new();
    assert_non_null(syms);
    const ProfObject *o;
    uint32_t n = prof_symbols_objects(syms, &o), found = 0;
    uint64_t lo = 0, hi = 0;
    for (uint32_t i = 0; i < n; i++)
        if (strstr(o[i].path, "vdso")) lo = o[i].lo, hi = o[i].hi;
    if (!lo) {
        prof_symbols_free(syms);
        skip(); /* no vDSO (vdso=0 on the kernel command line) */
    }
    for (uint64_t a = lo; a < hi && !found; a += 4) {
        ProfSym s;
        found = prof_symbols_lookup(syms, a, &s) && !strcmp(s.name, "__vdso_clock_gettime");
    }
    assert_true(found);
    prof_symbols_free(syms);
}

/* ---- bad and empty files ------------------------------------------------------------------ */

static void write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void test_empty_and_bad_files(void **state) {
    (void)state;
    char path[128];
    ProfSymTab t;
    /* a valid ELF header, no sections: no symbols at all (qsort(NULL, 0) was UB) */
    Elf64_Ehdr eh = {
        .e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT, .e_ehsize = sizeof eh};
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64, eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    snprintf(path, sizeof path, "%s/empty.elf", tmpdir);
    write_file(path, &eh, sizeof eh);
    assert_int_equal(prof_symtab_load(&t, path, tmpdir), 0);
    assert_int_equal(t.source, PROF_SYMSRC_NONE);
    assert_int_equal(t.n, 0);
    assert_null(prof_symtab_find(&t, 0x1000));
    uint64_t s, e;
    assert_int_equal(prof_symtab_fde(&t, 0x1000, &s, &e), 0);
    prof_symtab_fini(&t);
    /* section headers pointing past the end of the file */
    eh.e_shoff = 1 << 20, eh.e_shnum = 40, eh.e_shentsize = sizeof(Elf64_Shdr);
    write_file(path, &eh, sizeof eh);
    prof_symtab_load(&t, path, tmpdir); /* any result, no crash */
    prof_symtab_fini(&t);
    snprintf(path, sizeof path, "%s/text", tmpdir);
    write_file(path, "not an ELF file\n", 16);
    assert_int_equal(prof_symtab_load(&t, path, tmpdir), -1);
    prof_symtab_fini(&t);
    assert_int_equal(prof_symtab_load(&t, "/nonexistent/x.so", NULL), -1);
    prof_symtab_fini(&t);
}

/* Copies of this binary with bytes flipped (half of them in .eh_frame, half anywhere):
 * loading and looking up must not read out of bounds (ASan) or crash. */
static void test_mutated_files(void **state) {
    (void)state;
    FILE *f = fopen("/proc/self/exe", "rb");
    assert_non_null(f);
    size_t cap = 1 << 20, len = 0, n;
    unsigned char *img = malloc(cap), *mut;
    while (img && (n = fread(img + len, 1, cap - len, f)) > 0)
        if ((len += n) == cap) img = realloc(img, cap *= 2);
    fclose(f);
    assert_non_null(img);
    mut = malloc(len);
    assert_non_null(mut);
    ProfSymTab t;
    assert_int_equal(prof_symtab_load(&t, "/proc/self/exe", "/nonexistent"), 0);
    uint64_t s, e, lo = 0, hi = 0;
    prof_symtab_fde(&t, 0, &s, &e);
    if (t.nfde) lo = t.fde[0], hi = t.fde[2 * (t.nfde - 1) + 1];
    prof_symtab_fini(&t);
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    size_t eh_off = 0, eh_len = 0; /* .eh_frame's file range, from the section headers */
    if (eh->e_shoff && eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) <= len) {
        const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
        const char *names =
            eh->e_shstrndx < eh->e_shnum ? (const char *)img + sh[eh->e_shstrndx].sh_offset : NULL;
        for (int i = 0; names && i < eh->e_shnum; i++)
            if (!strcmp(names + sh[i].sh_name, ".eh_frame"))
                eh_off = sh[i].sh_offset, eh_len = sh[i].sh_size;
    }
    assert_true(eh_len > 0);
    char path[128];
    snprintf(path, sizeof path, "%s/mutant", tmpdir);
    srand(12345);
    for (int round = 0; round < 300; round++) {
        memcpy(mut, img, len);
        for (int k = 0; k < 16; k++) {
            size_t at = k & 1 ? (size_t)rand() % len : eh_off + (size_t)rand() % eh_len;
            mut[at] = (unsigned char)rand();
        }
        write_file(path, mut, len);
        if (prof_symtab_load(&t, path, tmpdir) == 0) {
            for (uint64_t a = lo; a < hi; a += (hi - lo) / 64 + 1) {
                prof_symtab_find(&t, a);
                prof_symtab_fde(&t, a, &s, &e);
            }
        }
        prof_symtab_fini(&t);
    }
    free(mut);
    free(img);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32),
        cmocka_unit_test(test_own_symtab),
        cmocka_unit_test(test_libc_build_id_then_dynsym),
        cmocka_unit_test(test_libc_debuglink_after_wrong_build_id),
        cmocka_unit_test(test_alias_choice),
        cmocka_unit_test(test_plt_entries),
        cmocka_unit_test(test_eh_frame_ranges),
        cmocka_unit_test(test_unknown_names),
        cmocka_unit_test(test_vdso),
        cmocka_unit_test(test_mapping_build_ids),
        cmocka_unit_test(test_empty_and_bad_files),
        cmocka_unit_test(test_mutated_files),
    };
    return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
