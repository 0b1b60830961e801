/* SPDX-License-Identifier: MIT */
/*
 * jitdump.c - perf's jitdump file for registered JIT code (see jitdump.h).
 *
 * Written from the format description in perf's jitdump-specification.txt.  The code bytes
 * are written with write(2) straight from the registered range: the kernel reports an
 * unreadable page as EFAULT (or a short count) instead of faulting, and that page's bytes
 * are written as zeros, so the record keeps the size it announced.
 */
#include "jitdump.h"
#include "engine.h" /* prof_now_ns: CLOCK_MONOTONIC, the clock of perf record -k 1 */

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#define JD_ELF_MACH EM_X86_64
#elif defined(__i386__)
#define JD_ELF_MACH EM_386
#elif defined(__aarch64__)
#define JD_ELF_MACH EM_AARCH64
#elif defined(__arm__)
#define JD_ELF_MACH EM_ARM
#elif defined(__riscv)
#define JD_ELF_MACH EM_RISCV
#elif defined(__powerpc64__)
#define JD_ELF_MACH EM_PPC64
#elif defined(__s390x__)
#define JD_ELF_MACH EM_S390
#else
#define JD_ELF_MACH EM_NONE
#endif

struct ProfJitdump {
    pthread_mutex_t lock;
    int fd;
    int pid;
    int broken; /* a write failed or the dump was closed: no more records */
    void *map;  /* the PROT_EXEC mapping perf looks for; kept until close */
    size_t maplen;
    uint64_t next_index;
    ProfJitdumpStats st;
    char path[];
};

static void jd_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static uint8_t *jd_put32(uint8_t *p, uint32_t v) {
    memcpy(p, &v, 4);
    return p + 4;
}

static uint8_t *jd_put64(uint8_t *p, uint64_t v) {
    memcpy(p, &v, 8);
    return p + 8;
}

/* Writes all n bytes of our own buffer (retries short writes and EINTR). */
static int jd_write_all(int fd, const void *buf, size_t n) {
    const uint8_t *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w, n -= (size_t)w;
    }
    return 0;
}

static int jd_write_zeros(int fd, size_t n) {
    static const uint8_t zeros[4096];
    while (n) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        if (jd_write_all(fd, zeros, k)) return -1;
        n -= k;
    }
    return 0;
}

/* Writes n bytes from the process's own memory at addr; unreadable pages become zeros and
 * set *unreadable.  -1 only when the file write itself failed. */
static int jd_write_code(int fd, uint64_t addr, size_t n, int *unreadable) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    while (n) {
        ssize_t w = write(fd, (const void *)(uintptr_t)addr, n);
        if (w < 0 && errno == EINTR) continue;
        if (w > 0) {
            addr += (uint64_t)w, n -= (size_t)w;
            continue;
        }
        if (w == 0 || errno != EFAULT) return -1;
        size_t k = page - (size_t)(addr % page); /* the rest of the faulting page */
        if (k > n) k = n;
        if (jd_write_zeros(fd, k)) return -1;
        *unreadable = 1;
        addr += k, n -= k;
    }
    return 0;
}

static int jd_write_header(int fd, int pid) {
    uint8_t h[PROF_JITDUMP_HEADER_SIZE], *p = h;
    p = jd_put32(p, PROF_JITDUMP_MAGIC);
    p = jd_put32(p, PROF_JITDUMP_VERSION);
    p = jd_put32(p, PROF_JITDUMP_HEADER_SIZE);
    p = jd_put32(p, JD_ELF_MACH);
    p = jd_put32(p, 0);
    p = jd_put32(p, (uint32_t)pid);
    p = jd_put64(p, prof_now_ns());
    jd_put64(p, 0); /* flags: timestamps are CLOCK_MONOTONIC, not an arch clock */
    return jd_write_all(fd, h, sizeof h);
}

ProfJitdump *prof_jitdump_open(const char *dir, char *err, size_t errlen) {
    int pid = (int)getpid();
    size_t plen = strlen(dir) + 32;
    ProfJitdump *j = calloc(1, sizeof *j + plen);
    if (!j) {
        jd_err(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(j->path, plen, "%s/jit-%d.dump", dir, pid);
    j->pid = pid;
    j->fd = open(j->path, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0644);
    if (j->fd < 0) {
        jd_err(err, errlen, "cannot create %s: %s", j->path, strerror(errno));
        goto out_free;
    }
    if (jd_write_header(j->fd, pid)) {
        jd_err(err, errlen, "cannot write %s: %s", j->path, strerror(errno));
        goto out_unlink;
    }
    /* The mapping itself is the message: perf record logs executable mmaps, and perf inject
     * --jit recognizes one of a file named jit-PID.dump. */
    j->maplen = (size_t)sysconf(_SC_PAGESIZE);
    j->map = mmap(NULL, j->maplen, PROT_READ | PROT_EXEC, MAP_PRIVATE, j->fd, 0);
    if (j->map == MAP_FAILED) {
        jd_err(err, errlen, "cannot map %s executable (noexec mount?): %s", j->path,
               strerror(errno));
        goto out_unlink;
    }
    pthread_mutex_init(&j->lock, NULL);
    return j;
out_unlink:
    close(j->fd);
    unlink(j->path);
out_free:
    free(j);
    return NULL;
}

/* Writes one LOAD record; called with j->lock held. */
static int jd_load_locked(ProfJitdump *j, uint64_t start, uint64_t size, const char *name) {
    if (size > PROF_JITDUMP_MAX_CODE) {
        size = PROF_JITDUMP_MAX_CODE;
        j->st.truncated++;
    }
    size_t nlen = strlen(name) + 1;
    size_t head = PROF_JITDUMP_LOAD_FIXED + nlen;
    uint8_t *buf = malloc(head), *p = buf;
    if (!buf) return -1;
    p = jd_put32(p, PROF_JITDUMP_CODE_LOAD);
    p = jd_put32(p, (uint32_t)(head + size));
    p = jd_put64(p, prof_now_ns());
    p = jd_put32(p, (uint32_t)j->pid);
    p = jd_put32(p, (uint32_t)gettid());
    p = jd_put64(p, start); /* vma */
    p = jd_put64(p, start); /* code_addr: the code runs where it is */
    p = jd_put64(p, size);
    p = jd_put64(p, j->next_index);
    memcpy(p, name, nlen);
    int unreadable = 0;
    int rc = jd_write_all(j->fd, buf, head);
    if (!rc) rc = jd_write_code(j->fd, start, (size_t)size, &unreadable);
    free(buf);
    if (rc) return -1;
    j->next_index++;
    j->st.loads++;
    j->st.unreadable += (uint64_t)unreadable;
    return 0;
}

int prof_jitdump_load(ProfJitdump *j, uint64_t start, uint64_t size, const char *name) {
    if (!j || !name) return -1;
    pthread_mutex_lock(&j->lock);
    int rc = -1;
    if (!j->broken) {
        rc = jd_load_locked(j, start, size, name);
        if (rc) {
            j->broken = 1;
            j->st.errors++;
        }
    }
    pthread_mutex_unlock(&j->lock);
    return rc;
}

static void jd_release(ProfJitdump *j) {
    munmap(j->map, j->maplen);
    close(j->fd);
    pthread_mutex_destroy(&j->lock);
    free(j);
}

int prof_jitdump_close(ProfJitdump *j) {
    if (!j) return 0;
    pthread_mutex_lock(&j->lock);
    int rc = j->broken ? -1 : 0;
    if (!j->broken) {
        uint8_t r[16], *p = r;
        p = jd_put32(p, PROF_JITDUMP_CODE_CLOSE);
        p = jd_put32(p, sizeof r);
        jd_put64(p, prof_now_ns());
        rc = jd_write_all(j->fd, r, sizeof r);
        j->broken = 1;
    }
    pthread_mutex_unlock(&j->lock);
    jd_release(j);
    return rc;
}

void prof_jitdump_drop(ProfJitdump *j) {
    if (j) jd_release(j);
}

int prof_jitdump_pid(const ProfJitdump *j) {
    return j->pid;
}

const char *prof_jitdump_path(const ProfJitdump *j) {
    return j->path;
}

ProfJitdumpStats prof_jitdump_stats(ProfJitdump *j) {
    pthread_mutex_lock(&j->lock);
    ProfJitdumpStats s = j->st;
    pthread_mutex_unlock(&j->lock);
    return s;
}

/* mkdir that accepts an existing directory. */
static int jd_mkdir(const char *path, char *err, size_t errlen) {
    struct stat st;
    if (mkdir(path, 0755) == 0 || (errno == EEXIST && !stat(path, &st) && S_ISDIR(st.st_mode)))
        return 0;
    jd_err(err, errlen, "cannot create directory %s: %s", path, strerror(errno));
    return -1;
}

int prof_jitdump_default_dir(char *out, size_t outlen, char *err, size_t errlen) {
    const char *own = getenv("SAMPO_JITDUMP_DIR");
    if (own && *own) {
        if ((size_t)snprintf(out, outlen, "%s", own) >= outlen) goto out_long;
        return jd_mkdir(out, err, errlen);
    }
    const char *base = getenv("JITDUMPDIR");
    if (!base || !*base) base = getenv("HOME");
    if (!base || !*base) base = ".";
    time_t now = time(NULL);
    struct tm tm;
    char day[16];
    strftime(day, sizeof day, "%Y%m%d", localtime_r(&now, &tm));
    /* out holds BASE/.debug/jit/sampo-jit-DAY.XXXXXX; its parents are made by cutting it */
    int n = snprintf(out, outlen, "%s/.debug/jit/sampo-jit-%s.XXXXXX", base, day);
    if (n < 0 || (size_t)n >= outlen) goto out_long;
    char *cut = strrchr(out, '/');
    *cut = 0; /* BASE/.debug/jit */
    char *mid = strrchr(out, '/');
    *mid = 0; /* BASE/.debug */
    int rc = jd_mkdir(out, err, errlen);
    *mid = '/';
    if (!rc) rc = jd_mkdir(out, err, errlen);
    *cut = '/';
    if (rc) return -1;
    if (!mkdtemp(out)) {
        jd_err(err, errlen, "cannot create directory %s: %s", out, strerror(errno));
        return -1;
    }
    return 0;
out_long:
    jd_err(err, errlen, "jitdump directory path too long");
    return -1;
}
