/* SPDX-License-Identifier: MIT */
/*
 * util.c - helpers shared by the sampo subcommands (see cmds.h).
 */
#include "cmds.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

SpProfile *sampo_load(const char *path) {
    SpProfile *p = NULL;
    char err[SP_ERR_MAX + 4096];
    if (sp_profile_read(path, &p, err, sizeof err)) {
        fprintf(stderr, "sampo: %s\n", err);
        return NULL;
    }
    if (sp_profile_demangle(p) < 0) { /* C++/Rust names in every output; pprof keeps both */
        fprintf(stderr, "sampo: %s: out of memory\n", path);
        sp_profile_free(p);
        return NULL;
    }
    return p;
}

int sampo_write_out(const char *path, const SpBuf *buf) {
    int to_stdout = !path || strcmp(path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "sampo: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t w = buf->len ? fwrite(buf->data, 1, buf->len, f) : 0;
    int bad = w != buf->len;
    bad |= to_stdout ? fflush(f) != 0 : fclose(f) != 0;
    if (bad) {
        fprintf(stderr, "sampo: %s: write failed: %s\n", to_stdout ? "stdout" : path,
                strerror(errno));
        return -1;
    }
    return 0;
}

const char *sampo_file_arg(int argc, char **argv, int optind, const char *usage) {
    if (optind >= argc) {
        if (access(SAMPO_DEFAULT_FILE, F_OK) == 0) return SAMPO_DEFAULT_FILE;
        if (access(SAMPO_SOM_FILE, F_OK) == 0) return SAMPO_SOM_FILE;
        fprintf(stderr,
                "%s: no FILE given and no " SAMPO_DEFAULT_FILE " in the current directory (the "
                "file sampo record writes by default; som --prof writes " SAMPO_SOM_FILE ")\n",
                argv[0]);
        fputs(usage, stderr);
        return NULL;
    }
    if (optind == argc - 1) return argv[optind];
    fprintf(stderr, "%s: expected one FILE, got %d operands\n", argv[0], argc - optind);
    fputs(usage, stderr);
    return NULL;
}

int sampo_parse_u64(const char *s, uint64_t *v) {
    char *end;
    if (!s || !*s || *s == '-') return -1;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || *end) return -1;
    *v = x;
    return 0;
}

int sampo_select_thread(SpProfile *p, const char *tid_text) {
    uint64_t tid;
    if (sampo_parse_u64(tid_text, &tid)) {
        fprintf(stderr, "sampo: expected --thread TID (a number), got '%s'\n", tid_text);
        return -1;
    }
    uint32_t t = sp_thread_find(p, tid);
    if (t == SP_NONE) {
        fprintf(stderr,
                "sampo: no thread with tid %llu in the profile (see the per-thread view "
                "of sampo report)\n",
                (unsigned long long)tid);
        return -1;
    }
    sp_profile_keep_thread(p, t);
    return 0;
}

SpProfile *sampo_load_thread(const char *path, const char *thread) {
    SpProfile *p = sampo_load(path);
    if (p && thread && sampo_select_thread(p, thread)) {
        sp_profile_free(p);
        return NULL;
    }
    return p;
}
