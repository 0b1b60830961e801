/* SPDX-License-Identifier: MIT */
/*
 * vmtest.c - helpers for the som VM unit tests (see vmtest.h).
 */
#include "vmtest.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytecode.h"

char *vt_tempdir(void) {
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/somvmtest.XXXXXX", base && *base ? base : "/tmp");
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return strdup(d);
}

void vt_write_class(const char *dir, const char *name, const char *src) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.som", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(src, f);
    fclose(f);
}

void vt_rmdir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

VtRun vt_run(const char *dir, const char *main, const SomOptions *opts) {
    VtRun r = {0};
    char errbuf[1024] = "";
    SomVM *vm = som_vm_new(opts, dir, errbuf, sizeof errbuf);
    if (!vm) fail_msg("som_vm_new: %s", errbuf);
    size_t outlen = 0, errlen = 0;
    FILE *out = open_memstream(&r.out, &outlen);
    FILE *err = open_memstream(&r.err, &errlen);
    assert_non_null(out);
    assert_non_null(err);
    vm->out = out;
    vm->err = err;
    char *argv[] = {(char *)main};
    r.status = som_vm_run(vm, 1, argv);
    som_vm_free(vm);
    fclose(out);
    fclose(err);
    return r;
}

void vt_run_free(VtRun *r) {
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

VtRun vt_run_source(const char *main, const char *src, const SomOptions *opts) {
    char *dir = vt_tempdir();
    vt_write_class(dir, main, src);
    VtRun r = vt_run(dir, main, opts);
    vt_rmdir(dir);
    free(dir);
    return r;
}

static bool is_jump(int op) {
    return op == BC_JUMP || op == BC_JUMP_IF_FALSE || op == BC_JUMP_IF_TRUE ||
           op == BC_JUMP_IF_NIL || op == BC_JUMP_IF_NOT_NIL;
}

char *vt_disasm(const SomMethod *m) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    for (uint32_t pc = 0; pc < m->code_len;) {
        int op = m->code[pc];
        assert_true(op < BC__COUNT);
        const uint8_t *a = m->code + pc + 1;
        fprintf(f, "%s%s", pc ? "; " : "", som_bc_name[op]);
        unsigned n = som_bc_len[op];
        if (is_jump(op) && n == 4)
            fprintf(f, " +%u s%u", a[0] | (a[1] << 8), a[2] | (a[3] << 8));
        else if (is_jump(op))
            fprintf(f, " +%u", a[0] | (a[1] << 8));
        else if (op == BC_JUMP_BACK)
            fprintf(f, " -%u", a[0] | (a[1] << 8));
        else if (op == BC_INC_LOCAL_JLE)
            fprintf(f, " %u %u -%u", a[0], a[1], a[2] | (a[3] << 8));
        else if (n == 1)
            fprintf(f, " %u", a[0]);
        else if (op == BC_PUSH_CTX || op == BC_STORE_CTX)
            fprintf(f, " %u %u", a[0], a[1]);
        else if (n == 2)
            fprintf(f, " %u", a[0] | (a[1] << 8));
        pc += 1 + n;
    }
    fclose(f);
    return buf;
}
