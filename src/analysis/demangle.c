/* SPDX-License-Identifier: MIT */
/*
 * demangle.c - see demangle.h.  The demangler is found once: in the process (a C++
 * program, or the sampo tool linked with libstdc++), else in libstdc++.so.6 opened with
 * RTLD_LOCAL; the handle is kept for the life of the process.
 */
#include "demangle.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef char *(*CxaDemangle)(const char *mangled, char *buf, size_t *len, int *status);

static CxaDemangle dm_fn;
static pthread_once_t dm_once = PTHREAD_ONCE_INIT;

static void dm_find(void) {
    void *f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!f) {
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        f = h ? dlsym(h, "__cxa_demangle") : NULL;
    }
    /* ISO C forbids object <-> function pointer casts; POSIX dlsym requires them to work */
    memcpy(&dm_fn, &f, sizeof dm_fn);
}

char *sp_demangle(const char *name) {
    if (!name || name[0] != '_' || name[1] != 'Z') return NULL;
    pthread_once(&dm_once, dm_find);
    if (!dm_fn) return NULL;
    /* a "@plt" or "@@VERSION" suffix is not part of the mangling: kept as perf keeps it */
    size_t base = strcspn(name, "@");
    char *mangled = strndup(name, base);
    if (!mangled) return NULL;
    int status = -1;
    char *d = dm_fn(mangled, NULL, NULL, &status);
    free(mangled);
    if (status != 0 || !d) {
        free(d);
        return NULL;
    }
    if (name[base]) {
        char *full = malloc(strlen(d) + strlen(name + base) + 1);
        if (full) strcat(strcpy(full, d), name + base);
        free(d);
        d = full;
        if (!d) return NULL;
    }
    /* Rust legacy symbols end in "::h" + 16 hex digits of hash; rustc-demangle hides it */
    size_t n = name[base] ? 0 : strlen(d);
    if (n > 19 && strncmp(d + n - 19, "::h", 3) == 0 &&
        strspn(d + n - 16, "0123456789abcdef") == 16)
        d[n - 19] = 0;
    return d;
}
