/* SPDX-License-Identifier: MIT */
/*
 * profile_io.c - encoder and decoder of the on-disk profile format (docs/profile-format.md).
 *
 * Layout: a 20-byte header (magic, major, minor, flags, section count) and then sections,
 * each a 16-byte header (tag, CRC-32 of payload, payload length) plus payload.  Inside
 * payloads every integer is ULEB128 (signed ones zigzag-encoded first).
 *
 * Decoder invariants: every read is bounds-checked against the current section end; every
 * count is checked against the bytes left (each element needs >= 1 byte) before allocating;
 * every id is range-checked before use.  Errors name the absolute offset.
 */
#include "profile_io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "ccjson.h"

/* ====================================================================================== */
/* byte buffer                                                                            */
/* ====================================================================================== */

void sp_buf_init(SpBuf *b) {
    memset(b, 0, sizeof *b);
}

void sp_buf_fini(SpBuf *b) {
    free(b->data);
    sp_buf_init(b);
}

void sp_buf_put(SpBuf *b, const void *data, size_t len) {
    if (b->oom || !len) return;
    if (b->len + len > b->cap) {
        size_t ncap = b->cap ? b->cap : 1024;
        while (ncap < b->len + len)
            ncap *= 2;
        uint8_t *n = realloc(b->data, ncap);
        if (!n) {
            b->oom = 1;
            return;
        }
        b->data = n, b->cap = ncap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

void sp_buf_u8(SpBuf *b, uint8_t v) {
    sp_buf_put(b, &v, 1);
}

void sp_buf_le16(SpBuf *b, uint16_t v) {
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    sp_buf_put(b, x, 2);
}

void sp_buf_le32(SpBuf *b, uint32_t v) {
    uint8_t x[4];
    for (int i = 0; i < 4; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    sp_buf_put(b, x, 4);
}

void sp_buf_le64(SpBuf *b, uint64_t v) {
    uint8_t x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    sp_buf_put(b, x, 8);
}

void sp_buf_uleb(SpBuf *b, uint64_t v) {
    uint8_t x[10];
    int n = 0;
    do {
        x[n] = v & 0x7f;
        v >>= 7;
        if (v) x[n] |= 0x80;
        n++;
    } while (v);
    sp_buf_put(b, x, (size_t)n);
}

void sp_buf_sleb(SpBuf *b, int64_t v) {
    sp_buf_uleb(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void sp_buf_printf(SpBuf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof tmp) {
        sp_buf_put(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sp_buf_put(b, big, (size_t)n);
    free(big);
}

/* ====================================================================================== */
/* encoder                                                                                */
/* ====================================================================================== */

/* Canonical section order; the decoder requires known sections in this order. */
enum {
    SEC_STRS,
    SEC_FRMS,
    SEC_THRD,
    SEC_SMPL,
    SEC_MAPS,
    SEC_SYMS,
    SEC_META,
    SEC_EVNT,
    SEC_CCMP,
    SEC_LINS, /* since 1.1, written only when the samples have lines */
    SEC_COUNT
};
static const char sec_tags[SEC_COUNT][5] = {"STRS", "FRMS", "THRD", "SMPL", "MAPS",
                                            "SYMS", "META", "EVNT", "CCMP", "LINS"};

static void enc_strs(const SpProfile *p, SpBuf *b) {
    sp_buf_uleb(b, p->strs.n - 1); /* id 0 ("") is implicit */
    for (uint32_t i = 1; i < p->strs.n; i++) {
        sp_buf_uleb(b, p->strs.slen[i]);
        sp_buf_put(b, p->strs.buf + p->strs.off[i], p->strs.slen[i]);
    }
}

static void enc_frames(const SpProfile *p, SpBuf *b) {
    sp_buf_uleb(b, p->nframes);
    for (uint32_t i = 0; i < p->nframes; i++) {
        const SpFrame *f = &p->frames[i];
        sp_buf_uleb(b, f->kind);
        sp_buf_uleb(b, f->name);
        sp_buf_uleb(b, f->module);
        sp_buf_uleb(b, f->file);
        sp_buf_uleb(b, f->line);
        sp_buf_uleb(b, f->addr);
        sp_buf_uleb(b, f->size);
    }
}

static void enc_threads(const SpProfile *p, SpBuf *b) {
    sp_buf_uleb(b, p->nthreads);
    for (uint32_t i = 0; i < p->nthreads; i++) {
        sp_buf_uleb(b, p->threads[i].tid);
        sp_buf_uleb(b, p->threads[i].name);
    }
}

static void enc_samples(const SpProfile *p, SpBuf *b) {
    uint64_t prev = 0;
    sp_buf_uleb(b, p->nsamples);
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const SpSample *s = &p->samples[i];
        const uint32_t *st = sp_sample_stack(p, s);
        sp_buf_uleb(b, s->thread);
        sp_buf_uleb(b, s->state);
        sp_buf_sleb(b, (int64_t)(s->time_ns - prev));
        prev = s->time_ns;
        sp_buf_uleb(b, s->pc);
        sp_buf_uleb(b, s->weight);
        sp_buf_uleb(b, s->depth);
        for (uint32_t d = 0; d < s->depth; d++)
            sp_buf_uleb(b, st[d]);
    }
}

static void enc_maps_syms(const SpProfile *p, SpBuf *b, int syms) {
    if (!syms) {
        sp_buf_uleb(b, p->nmappings);
        for (uint32_t i = 0; i < p->nmappings; i++) {
            const SpMapping *m = &p->mappings[i];
            sp_buf_uleb(b, m->start);
            sp_buf_uleb(b, m->end - m->start);
            sp_buf_uleb(b, m->offset);
            sp_buf_uleb(b, m->path);
            sp_buf_uleb(b, m->build_id);
        }
        return;
    }
    sp_buf_uleb(b, p->nsymbols);
    for (uint32_t i = 0; i < p->nsymbols; i++) {
        const SpSymbol *s = &p->symbols[i];
        sp_buf_uleb(b, s->addr);
        sp_buf_uleb(b, s->size);
        sp_buf_uleb(b, s->name);
        sp_buf_uleb(b, s->mapping == SP_NONE ? 0 : (uint64_t)s->mapping + 1);
    }
}

static void enc_meta_events(const SpProfile *p, SpBuf *b, int events) {
    if (!events) {
        sp_buf_uleb(b, p->nmeta);
        for (uint32_t i = 0; i < p->nmeta; i++) {
            sp_buf_uleb(b, p->meta[i].key);
            sp_buf_uleb(b, p->meta[i].value);
        }
        return;
    }
    sp_buf_uleb(b, p->nevents);
    for (uint32_t i = 0; i < p->nevents; i++) {
        const SpEvent *e = &p->events[i];
        sp_buf_uleb(b, e->time_ns);
        sp_buf_uleb(b, e->kind);
        sp_buf_uleb(b, e->text);
        sp_buf_sleb(b, e->a);
        sp_buf_sleb(b, e->b);
    }
}

static void enc_ccmap(const SpProfile *p, SpBuf *b) {
    const SpCcMap *c = &p->cc;
    sp_buf_uleb(b, c->present ? 1 : 0);
    if (!c->present) return;
    sp_buf_uleb(b, c->nmethods);
    for (uint32_t i = 0; i < c->nmethods; i++) {
        const SpCcMethod *m = &c->methods[i];
        sp_buf_uleb(b, m->frame);
        sp_buf_uleb(b, m->self);
        sp_buf_uleb(b, m->total);
        sp_buf_uleb(b, m->self_ns);
        sp_buf_uleb(b, m->total_ns);
    }
    sp_buf_uleb(b, c->nedges);
    for (uint32_t i = 0; i < c->nedges; i++) {
        const SpCcEdge *e = &c->edges[i];
        sp_buf_uleb(b, e->caller);
        sp_buf_uleb(b, e->callsite);
        sp_buf_uleb(b, e->callee);
        sp_buf_uleb(b, e->count);
    }
    sp_buf_uleb(b, c->nnodes);
    for (uint32_t i = 0; i < c->nnodes; i++) {
        const SpCcNode *n = &c->nodes[i];
        sp_buf_uleb(b, n->parent == SP_NONE ? 0 : (uint64_t)n->parent + 1);
        sp_buf_uleb(b, n->frame);
        sp_buf_uleb(b, n->callsite);
        sp_buf_uleb(b, n->self);
        sp_buf_uleb(b, n->total);
        sp_buf_uleb(b, n->time_ns);
    }
}

/* One line per stack entry of every sample, in SMPL order. */
static void enc_lines(const SpProfile *p, SpBuf *b) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < p->nsamples; i++)
        n += p->samples[i].depth;
    sp_buf_uleb(b, n);
    for (uint32_t i = 0; i < p->nsamples; i++)
        for (uint32_t d = 0; d < p->samples[i].depth; d++)
            sp_buf_uleb(b, sp_sample_line(p, &p->samples[i], d));
}

static void enc_section(const SpProfile *p, int sec, SpBuf *payload) {
    switch (sec) {
    case SEC_STRS:
        enc_strs(p, payload);
        break;
    case SEC_FRMS:
        enc_frames(p, payload);
        break;
    case SEC_THRD:
        enc_threads(p, payload);
        break;
    case SEC_SMPL:
        enc_samples(p, payload);
        break;
    case SEC_MAPS:
        enc_maps_syms(p, payload, 0);
        break;
    case SEC_SYMS:
        enc_maps_syms(p, payload, 1);
        break;
    case SEC_META:
        enc_meta_events(p, payload, 0);
        break;
    case SEC_EVNT:
        enc_meta_events(p, payload, 1);
        break;
    case SEC_CCMP:
        enc_ccmap(p, payload);
        break;
    default:
        enc_lines(p, payload);
        break;
    }
}

int sp_profile_encode(const SpProfile *p, SpBuf *out) {
    SpBuf payload;
    sp_buf_init(&payload);
    sp_buf_put(out, SP_FORMAT_MAGIC, 8);
    sp_buf_le16(out, SP_FORMAT_MAJOR);
    sp_buf_le16(out, SP_FORMAT_MINOR);
    sp_buf_le32(out, p->flavour == SP_FLAVOUR_EXACT ? 1u : 0u);
    int nsec = p->stack_lines ? SEC_COUNT : SEC_LINS;
    sp_buf_le32(out, (uint32_t)nsec);
    for (int sec = 0; sec < nsec; sec++) {
        payload.len = 0;
        enc_section(p, sec, &payload);
        sp_buf_put(out, sec_tags[sec], 4);
        uLong crc = crc32(0L, Z_NULL, 0);
        if (payload.len) crc = crc32_z(crc, payload.data, payload.len);
        sp_buf_le32(out, (uint32_t)crc);
        sp_buf_le64(out, payload.len);
        sp_buf_put(out, payload.data, payload.len);
        if (payload.oom) out->oom = 1;
    }
    sp_buf_fini(&payload);
    return out->oom ? -1 : 0;
}

/* ---- safe output ------------------------------------------------------------------------
 * The user names where a profile goes; whatever is there must survive as the user meant it.
 * A symlink is followed (the link stays, its target gets the profile), a FIFO, terminal or
 * device is written in place (renaming onto it would replace /dev/full with a regular file),
 * and only a regular file (or a new one) is replaced through "TARGET.tmp.PID" + rename, so a
 * reader never sees half a profile.  Every write and the close are checked: ENOSPC is an
 * error, not a profile that silently never reached the disk. */

/* Follows symlinks from path; writes the final name (which may not exist yet) into out. */
static int out_resolve(const char *path, char *out, size_t len) {
    if (snprintf(out, len, "%s", path) >= (int)len) return errno = ENAMETOOLONG, -1;
    for (int hops = 0; hops < 40; hops++) {
        struct stat st;
        if (lstat(out, &st) || !S_ISLNK(st.st_mode)) return 0;
        char link[PATH_MAX], joined[PATH_MAX];
        ssize_t n = readlink(out, link, sizeof link - 1);
        if (n < 0) return -1;
        link[n] = 0;
        const char *slash = strrchr(out, '/');
        int w = link[0] == '/' || !slash
                    ? snprintf(joined, sizeof joined, "%s", link)
                    : snprintf(joined, sizeof joined, "%.*s/%s", (int)(slash - out), out, link);
        if (w < 0 || (size_t)w >= sizeof joined || (size_t)w >= len)
            return errno = ENAMETOOLONG, -1;
        memcpy(out, joined, (size_t)w + 1);
    }
    return errno = ELOOP, -1;
}

static int out_write_all(int fd, const uint8_t *data, size_t len) {
    while (len) {
        ssize_t w = write(fd, data, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w == 0 ? (errno = EIO, -1) : -1;
        data += w, len -= (size_t)w;
    }
    return 0;
}

int sp_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen) {
    char target[PATH_MAX], tmp[PATH_MAX + 32];
    char dummy[1];
    if (!err) err = dummy, errlen = sizeof dummy;
    struct stat st;
    if (out_resolve(path, target, sizeof target)) {
        snprintf(err, errlen, "%s: cannot resolve: %s", path, strerror(errno));
        return -1;
    }
    int exists = stat(target, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(EISDIR));
        return -1;
    }
    if (exists && !S_ISREG(st.st_mode)) { /* FIFO, terminal, device: write in place */
        int fd = open(target, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || out_write_all(fd, data, len) || close(fd)) {
            int e = errno;
            if (fd >= 0) close(fd);
            snprintf(err, errlen, "%s: write failed: %s", path, strerror(e));
            return -1;
        }
        return 0;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", target, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0666);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        return -1;
    }
    if (exists) fchmod(fd, st.st_mode & 07777); /* replacing keeps the file's permissions */
    int bad = out_write_all(fd, data, len);
    int e = errno;
    if (close(fd) && !bad) bad = 1, e = errno;
    if (!bad && rename(tmp, target)) bad = 1, e = errno;
    if (bad) {
        unlink(tmp);
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(e));
        return -1;
    }
    return 0;
}

int sp_profile_write(const SpProfile *p, const char *path, char *err, size_t errlen) {
    SpBuf b;
    int rc = -1;
    sp_buf_init(&b);
    if (sp_profile_encode(p, &b)) {
        if (err) snprintf(err, errlen, "%s: out of memory while encoding", path);
        goto out;
    }
    rc = sp_write_file(path, b.data, b.len, err, errlen);
out:
    sp_buf_fini(&b);
    return rc;
}

/* ====================================================================================== */
/* decoder                                                                                */
/* ====================================================================================== */

typedef struct {
    const uint8_t *base; /* whole image, for absolute offsets */
    size_t pos, end;     /* current position and end of the current section */
    const char *sec;     /* tag of the current section, for messages */
    char *err;
    size_t errlen;
    int failed;
} Rd;

static int rd_fail(Rd *r, const char *expected, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int rd_fail(Rd *r, const char *expected, const char *fmt, ...) {
    char got[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(got, sizeof got, fmt, ap);
    va_end(ap);
    if (!r->failed && r->err)
        snprintf(r->err, r->errlen, "offset 0x%zx%s%s%s: expected %s, got %s", r->pos,
                 r->sec ? " (section " : "", r->sec ? r->sec : "", r->sec ? ")" : "", expected,
                 got);
    r->failed = 1;
    return -1;
}

static int rd_uleb(Rd *r, uint64_t *v, const char *what) {
    uint64_t x = 0;
    *v = 0; /* defined even on failure (callers bail out, but compilers cannot see that) */
    size_t p = r->pos;
    for (int shift = 0; shift < 70; shift += 7) {
        if (p >= r->end) return rd_fail(r, what, "end of section");
        uint8_t byte = r->base[p++];
        if (shift == 63 && (byte & 0x7e))
            return rd_fail(r, what, "a ULEB128 value wider than 64 bits");
        x |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            r->pos = p;
            *v = x;
            return 0;
        }
    }
    return rd_fail(r, what, "a ULEB128 value longer than 10 bytes");
}

static int rd_sleb(Rd *r, int64_t *v, const char *what) {
    uint64_t u;
    *v = 0;
    if (rd_uleb(r, &u, what)) return -1;
    *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return 0;
}

/* Reads a uleb that must be < limit (an id or enum). */
static int rd_id(Rd *r, uint32_t *v, uint64_t limit, const char *what) {
    size_t at = r->pos;
    uint64_t x;
    *v = 0;
    if (rd_uleb(r, &x, what)) return -1;
    if (x >= limit) {
        r->pos = at;
        char exp[96];
        snprintf(exp, sizeof exp, "%s < %llu", what, (unsigned long long)limit);
        return rd_fail(r, exp, "%llu", (unsigned long long)x);
    }
    *v = (uint32_t)x;
    return 0;
}

/* Reads an element count; each element takes at least min_bytes, so it cannot exceed
 * what is left in the section (this bounds every allocation by the input size). */
static int rd_count(Rd *r, uint32_t *n, size_t min_bytes, const char *what) {
    size_t at = r->pos;
    uint64_t x;
    *n = 0;
    if (rd_uleb(r, &x, what)) return -1;
    if (x > (r->end - r->pos) / min_bytes || x > UINT32_MAX / 4) {
        r->pos = at;
        char exp[96];
        snprintf(exp, sizeof exp, "%s <= %zu (bytes left in section)", what,
                 (r->end - r->pos) / min_bytes);
        return rd_fail(r, exp, "%llu", (unsigned long long)x);
    }
    *n = (uint32_t)x;
    return 0;
}

static int rd_oom(Rd *r) {
    return rd_fail(r, "memory for the profile", "out of memory");
}

static int dec_strs(Rd *r, SpProfile *p) {
    uint32_t n;
    if (rd_count(r, &n, 1, "string count")) return -1;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t len;
        size_t at = r->pos;
        if (rd_uleb(r, &len, "string length")) return -1;
        if (len > r->end - r->pos) {
            r->pos = at;
            return rd_fail(r, "string length within section", "%llu bytes, %zu left",
                           (unsigned long long)len, r->end - r->pos);
        }
        const char *s = (const char *)r->base + r->pos;
        if (memchr(s, 0, len))
            return rd_fail(r, "string without NUL bytes", "a NUL byte in string %u", i + 1);
        uint32_t id = sp_intern_n(p, s, len);
        if (id == SP_NONE) return rd_oom(r);
        if (id != i + 1)
            return rd_fail(r, "distinct strings", "string %u duplicates string %u", i + 1, id);
        r->pos += len;
    }
    return 0;
}

static int dec_frames(Rd *r, SpProfile *p) {
    uint32_t n, ns = p->strs.n;
    if (rd_count(r, &n, 7, "frame count")) return -1;
    for (uint32_t i = 0; i < n; i++) {
        SpFrame f;
        uint64_t addr, size;
        if (rd_id(r, &f.kind, SP_FRAME_KIND_COUNT, "frame kind") ||
            rd_id(r, &f.name, ns, "string id") || rd_id(r, &f.module, ns, "string id") ||
            rd_id(r, &f.file, ns, "string id") || rd_id(r, &f.line, UINT32_MAX, "line") ||
            rd_uleb(r, &addr, "frame address") || rd_uleb(r, &size, "frame size"))
            return -1;
        f.addr = addr, f.size = size;
        uint32_t id = sp_frame_add(p, &f);
        if (id == SP_NONE) return rd_oom(r);
        if (id != i) return rd_fail(r, "distinct frames", "frame %u duplicates frame %u", i, id);
    }
    return 0;
}

static int dec_threads(Rd *r, SpProfile *p) {
    uint32_t n;
    if (rd_count(r, &n, 2, "thread count")) return -1;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t tid;
        uint32_t name;
        if (rd_uleb(r, &tid, "thread id") || rd_id(r, &name, p->strs.n, "string id")) return -1;
        if (sp_thread_add(p, tid, NULL) == SP_NONE) return rd_oom(r);
        p->threads[i].name = name;
    }
    return 0;
}

static int dec_samples(Rd *r, SpProfile *p) {
    uint32_t n, stack_cap = 0, *stack = NULL;
    uint64_t t = 0;
    int rc = -1;
    if (rd_count(r, &n, 6, "sample count")) return -1;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t thread, state, depth;
        int64_t dt;
        uint64_t pc, weight;
        if (rd_id(r, &thread, p->nthreads, "thread index") ||
            rd_id(r, &state, SP_VM_STATE_COUNT, "vm state") || rd_sleb(r, &dt, "time delta") ||
            rd_uleb(r, &pc, "pc") || rd_uleb(r, &weight, "weight") ||
            rd_count(r, &depth, 1, "stack depth"))
            goto out;
        if (depth > stack_cap) {
            uint32_t *ns = realloc(stack, depth * sizeof *stack);
            if (!ns) {
                rd_oom(r);
                goto out;
            }
            stack = ns, stack_cap = depth;
        }
        for (uint32_t d = 0; d < depth; d++)
            if (rd_id(r, &stack[d], p->nframes, "frame id")) goto out;
        t += (uint64_t)dt;
        if (sp_sample_add(p, thread, t, stack, depth, pc, weight, state)) {
            rd_oom(r);
            goto out;
        }
    }
    rc = 0;
out:
    free(stack);
    return rc;
}

static int dec_maps(Rd *r, SpProfile *p) {
    uint32_t n;
    if (rd_count(r, &n, 5, "mapping count")) return -1;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t start, len, off;
        uint32_t path, bid;
        if (rd_uleb(r, &start, "mapping start") || rd_uleb(r, &len, "mapping length") ||
            rd_uleb(r, &off, "mapping offset") || rd_id(r, &path, p->strs.n, "string id") ||
            rd_id(r, &bid, p->strs.n, "string id"))
            return -1;
        if (start + len < start)
            return rd_fail(r, "mapping inside the 64-bit address space", "start+length overflow");
        if (sp_mapping_add(p, start, start + len, off, NULL, NULL)) return rd_oom(r);
        p->mappings[i].path = path, p->mappings[i].build_id = bid;
    }
    return 0;
}

static int dec_syms(Rd *r, SpProfile *p) {
    uint32_t n;
    if (rd_count(r, &n, 4, "symbol count")) return -1;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t addr, size;
        uint32_t name, map;
        if (rd_uleb(r, &addr, "symbol address") || rd_uleb(r, &size, "symbol size") ||
            rd_id(r, &name, p->strs.n, "string id") ||
            rd_id(r, &map, (uint64_t)p->nmappings + 1, "mapping index + 1"))
            return -1;
        if (sp_symbol_add(p, addr, size, NULL, map ? map - 1 : SP_NONE)) return rd_oom(r);
        p->symbols[i].name = name;
    }
    return 0;
}

static int dec_meta(Rd *r, SpProfile *p) {
    uint32_t n;
    if (rd_count(r, &n, 2, "metadata count")) return -1;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k, v;
        if (rd_id(r, &k, p->strs.n, "string id") || rd_id(r, &v, p->strs.n, "string id")) return -1;
        if (sp_meta_set(p, sp_str(p, k), sp_str(p, v))) return rd_oom(r);
    }
    return 0;
}

static int dec_events(Rd *r, SpProfile *p) {
    uint32_t n;
    if (rd_count(r, &n, 5, "event count")) return -1;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t t;
        uint32_t kind, text;
        int64_t a, b;
        if (rd_uleb(r, &t, "event time") || rd_id(r, &kind, SP_EVENT_KIND_COUNT, "event kind") ||
            rd_id(r, &text, p->strs.n, "string id") || rd_sleb(r, &a, "event argument a") ||
            rd_sleb(r, &b, "event argument b"))
            return -1;
        if (sp_event_add(p, t, kind, a, b, NULL)) return rd_oom(r);
        p->events[i].text = text;
    }
    return 0;
}

static int dec_cc_methods_edges(Rd *r, SpProfile *p) {
    uint32_t n;
    if (rd_count(r, &n, 5, "CC-Map method count")) return -1;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t f;
        uint64_t v[4];
        if (rd_id(r, &f, p->nframes, "frame id") || rd_uleb(r, &v[0], "self") ||
            rd_uleb(r, &v[1], "total") || rd_uleb(r, &v[2], "self_ns") ||
            rd_uleb(r, &v[3], "total_ns"))
            return -1;
        if (sp_cc_method_add(p, f, v[0], v[1], v[2], v[3])) return rd_oom(r);
    }
    if (rd_count(r, &n, 4, "CC-Map edge count")) return -1;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t caller, site, callee;
        uint64_t count;
        if (rd_id(r, &caller, p->nframes, "frame id") || rd_id(r, &site, UINT32_MAX, "call site") ||
            rd_id(r, &callee, p->nframes, "frame id") || rd_uleb(r, &count, "edge count"))
            return -1;
        if (sp_cc_edge_add(p, caller, site, callee, count)) return rd_oom(r);
    }
    return 0;
}

static int dec_ccmap(Rd *r, SpProfile *p) {
    uint32_t present, n;
    if (rd_id(r, &present, 2, "CC-Map presence flag (0 or 1)")) return -1;
    if (!present) return 0;
    p->cc.present = 1;
    if (dec_cc_methods_edges(r, p) || rd_count(r, &n, 6, "CC-Map node count")) return -1;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t parent, frame, site;
        uint64_t self, total, tns;
        if (rd_id(r, &parent, (uint64_t)i + 1, "parent node index + 1 (parents come first)") ||
            rd_id(r, &frame, p->nframes, "frame id") || rd_id(r, &site, UINT32_MAX, "call site") ||
            rd_uleb(r, &self, "node self") || rd_uleb(r, &total, "node total") ||
            rd_uleb(r, &tns, "node time_ns"))
            return -1;
        if (sp_cc_node_add(p, parent ? parent - 1 : SP_NONE, frame, site, self, total, tns) ==
            SP_NONE)
            return rd_oom(r);
    }
    return 0;
}

static int dec_lines(Rd *r, SpProfile *p) {
    uint32_t n;
    if (rd_count(r, &n, 1, "line count")) return -1;
    if (n != p->nstack)
        return rd_fail(r, "one line per stack entry", "%u lines for %u entries", n, p->nstack);
    uint32_t *lines = malloc(((size_t)n + 1) * sizeof *lines);
    if (!lines) return rd_oom(r);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t v;
        if (rd_uleb(r, &v, "line")) {
            free(lines);
            return -1;
        }
        if (v > UINT32_MAX) {
            free(lines);
            return rd_fail(r, "a line below 2^32", "%llu", (unsigned long long)v);
        }
        lines[i] = (uint32_t)v;
    }
    free(p->stack_lines);
    p->stack_lines = lines, p->cap_lines = n + 1;
    return 0;
}

static int dec_payload(Rd *r, SpProfile *p, int sec) {
    switch (sec) {
    case SEC_STRS:
        return dec_strs(r, p);
    case SEC_FRMS:
        return dec_frames(r, p);
    case SEC_THRD:
        return dec_threads(r, p);
    case SEC_SMPL:
        return dec_samples(r, p);
    case SEC_MAPS:
        return dec_maps(r, p);
    case SEC_SYMS:
        return dec_syms(r, p);
    case SEC_META:
        return dec_meta(r, p);
    case SEC_EVNT:
        return dec_events(r, p);
    case SEC_CCMP:
        return dec_ccmap(r, p);
    default:
        return dec_lines(r, p);
    }
}

static uint32_t le32(const uint8_t *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void tag_text(const uint8_t *t, char out[20]) {
    int printable = 1;
    for (int i = 0; i < 4; i++)
        printable &= t[i] >= 0x20 && t[i] < 0x7f;
    if (printable)
        snprintf(out, 20, "'%c%c%c%c'", t[0], t[1], t[2], t[3]);
    else
        snprintf(out, 20, "0x%08x", le32(t));
}

/* Parses one section header + payload at r->pos; *next_sec is the next expected section. */
static int dec_section(Rd *r, SpProfile *p, size_t len, int *next_sec) {
    const uint8_t *h = r->base + r->pos;
    if (len - r->pos < 16)
        return rd_fail(r, "a 16-byte section header", "%zu bytes left", len - r->pos);
    uint64_t plen = (uint64_t)le32(h + 8) | (uint64_t)le32(h + 12) << 32;
    if (plen > len - r->pos - 16)
        return rd_fail(r, "section length within file", "%llu bytes, %zu left",
                       (unsigned long long)plen, len - r->pos - 16);
    int sec = -1;
    for (int i = 0; i < SEC_COUNT; i++)
        if (memcmp(h, sec_tags[i], 4) == 0) sec = i;
    char tt[20];
    tag_text(h, tt);
    if (sec >= 0 && sec != *next_sec) {
        char exp[64];
        snprintf(exp, sizeof exp, "section '%s'",
                 *next_sec < SEC_COUNT ? sec_tags[*next_sec] : "(none: all seen)");
        return rd_fail(r, exp, "%s out of order", tt);
    }
    uint32_t crc = (uint32_t)crc32_z(crc32(0L, Z_NULL, 0), h + 16, (size_t)plen);
    if (crc != le32(h + 4))
        return rd_fail(r, "matching CRC-32", "0x%08x in header, 0x%08x computed over %s",
                       le32(h + 4), crc, tt);
    r->pos += 16;
    if (sec < 0) { /* unknown section from a newer minor version: skip */
        r->pos += plen;
        return 0;
    }
    r->end = r->pos + plen;
    r->sec = sec_tags[sec];
    if (dec_payload(r, p, sec)) return -1;
    if (r->pos != r->end)
        return rd_fail(r, "end of section", "%zu trailing bytes", r->end - r->pos);
    r->sec = NULL;
    r->end = len;
    *next_sec = sec + 1;
    return 0;
}

static int dec_header(Rd *r, size_t len, SpProfile **p, uint32_t *nsec) {
    const uint8_t *d = r->base;
    *nsec = 0;
    if (len < 20) return rd_fail(r, "a 20-byte header", "a file of %zu bytes", len);
    if (memcmp(d, SP_FORMAT_MAGIC, 8) != 0)
        return rd_fail(r, "magic \"SAMPOPRF\"", "something else (not a sampo profile)");
    r->pos = 8;
    unsigned major = (unsigned)d[8] | (unsigned)d[9] << 8;
    if (major != SP_FORMAT_MAJOR) return rd_fail(r, "format major version 1", "version %u", major);
    r->pos = 12;
    uint32_t flags = le32(d + 12);
    if (flags & ~1u) return rd_fail(r, "flags with only bit 0 (exact) defined", "0x%08x", flags);
    r->pos = 16;
    *nsec = le32(d + 16);
    if (*nsec > (len - 20) / 16)
        return rd_fail(r, "a section count that fits in the file", "%u", *nsec);
    r->pos = 20;
    *p = sp_profile_new(flags & 1 ? SP_FLAVOUR_EXACT : SP_FLAVOUR_SAMPLED);
    return *p ? 0 : rd_oom(r);
}

int sp_profile_decode(const uint8_t *data, size_t len, SpProfile **out, char *err, size_t errlen) {
    Rd r = {.base = data, .pos = 0, .end = len, .err = err, .errlen = errlen};
    SpProfile *p = NULL;
    uint32_t nsec;
    int next = SEC_STRS;
    *out = NULL;
    if (err && errlen) err[0] = 0;
    if (dec_header(&r, len, &p, &nsec)) goto fail;
    for (uint32_t i = 0; i < nsec; i++)
        if (dec_section(&r, p, len, &next)) goto fail;
    if (next < SEC_META) {
        char exp[64];
        snprintf(exp, sizeof exp, "section '%s'", sec_tags[next]);
        rd_fail(&r, exp, "end of the section list");
        goto fail;
    }
    if (r.pos != len) {
        rd_fail(&r, "end of file", "%zu trailing bytes", len - r.pos);
        goto fail;
    }
    *out = p;
    return 0;
fail:
    sp_profile_free(p);
    return -1;
}

int sp_read_file(const char *path, uint8_t **data, size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    SpBuf b;
    uint8_t chunk[65536];
    size_t n;
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    sp_buf_init(&b);
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        sp_buf_put(&b, chunk, n);
    int bad = ferror(f);
    fclose(f);
    if (bad || b.oom) {
        snprintf(err, errlen, "%s: %s", path, bad ? "read error" : "out of memory");
        sp_buf_fini(&b);
        return -1;
    }
    *data = b.data;
    *len = b.len;
    return 0;
}

/* ---- reading a profile as a stream ------------------------------------------------
 * The input may be a pipe, a device (/dev/zero never ends) or a huge file: it is read
 * only as far as its own structure says. The first bytes decide the kind (magic or
 * '{'); anything else stops after them. A binary profile is read header by header,
 * each section's length checked against the file's size where it has one, so a bad
 * length or a wrong magic costs one read, and memory grows only with the bytes that
 * really arrive. The decoder then checks everything as before. */

/* An input without a size (pipe, device) is read up to this many bytes. */
#define SP_STREAM_MAX ((uint64_t)1 << 30)

/* Appends up to want bytes from f to b; answers the number appended (short at EOF or at
 * SP_STREAM_MAX). */
static size_t rd_stream(FILE *f, SpBuf *b, uint64_t want) {
    uint8_t chunk[65536];
    size_t got = 0;
    if (b->len >= SP_STREAM_MAX) return 0;
    if (want > SP_STREAM_MAX - b->len) want = SP_STREAM_MAX - b->len;
    while (want > 0 && !b->oom) {
        size_t n = fread(chunk, 1, want < sizeof chunk ? (size_t)want : sizeof chunk, f);
        if (n == 0) break;
        sp_buf_put(b, chunk, n);
        got += n;
        want -= n;
    }
    return got;
}

/* The sections of a binary profile whose 20-byte header is in b; size: the file's size
 * (0 = unknown, not a regular file).  A length beyond the file is reported here, as the
 * decoder would (it never sees the bytes); -1 then, with the message in err. */
static int rd_stream_sections(FILE *f, SpBuf *b, uint64_t size, char *err, size_t errlen) {
    uint32_t nsec = le32(b->data + 16);
    for (uint32_t i = 0; i < nsec && !b->oom; i++) {
        size_t at = b->len;
        if (rd_stream(f, b, 16) < 16) return 0;
        uint64_t plen = (uint64_t)le32(b->data + at + 8) | (uint64_t)le32(b->data + at + 12) << 32;
        if (size && (b->len > size || plen > size - b->len)) {
            snprintf(err, errlen,
                     "offset 0x%zx: expected section length within file, got %llu bytes, %llu "
                     "left",
                     at, (unsigned long long)plen,
                     (unsigned long long)(size > b->len ? size - b->len : 0));
            return -1;
        }
        if (rd_stream(f, b, plen) < plen) return 0;
    }
    rd_stream(f, b, 1); /* a trailing byte, if any, for the decoder's "trailing bytes" */
    return 0;
}

/* Reads the bytes of the profile at path into b (see above). */
static int rd_profile_bytes(const char *path, SpBuf *b, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    uint64_t size = 0;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        snprintf(err, errlen, "%s: %s", path, strerror(EISDIR));
        return -1;
    }
    if (S_ISREG(st.st_mode)) size = (uint64_t)st.st_size;
    size_t first = rd_stream(f, b, 20);
    if (first == 20 && memcmp(b->data, SP_FORMAT_MAGIC, 8) == 0) {
        char why[SP_ERR_MAX];
        if (rd_stream_sections(f, b, size, why, sizeof why)) {
            fclose(f);
            snprintf(err, errlen, "%s: %s", path, why);
            return -1;
        }
    } else if (first == 20) {
        rd_stream(f, b, 65536 - 20); /* room for the whitespace before a JSON '{' */
        if (sp_ccjson_sniff((const char *)b->data, b->len))
            rd_stream(f, b, UINT64_MAX); /* a JSON dump is parsed as a whole */
    }
    int bad = ferror(f);
    fclose(f);
    if (bad || b->oom) {
        snprintf(err, errlen, "%s: %s", path, bad ? "read error" : "out of memory");
        return -1;
    }
    if (b->len >= SP_STREAM_MAX) {
        snprintf(err, errlen, "%s: expected a profile of less than %llu MiB, got more", path,
                 (unsigned long long)(SP_STREAM_MAX >> 20));
        return -1;
    }
    return 0;
}

int sp_profile_read(const char *path, SpProfile **out, char *err, size_t errlen) {
    uint8_t *data = NULL;
    size_t len = 0;
    char inner[SP_ERR_MAX];
    SpBuf b;
    *out = NULL;
    sp_buf_init(&b);
    if (rd_profile_bytes(path, &b, err, errlen)) {
        sp_buf_fini(&b);
        return -1;
    }
    data = b.data, len = b.len;
    int rc = sp_ccjson_sniff((const char *)data, len)
                 ? sp_ccjson_decode((const char *)data, len, out, inner, sizeof inner)
                 : sp_profile_decode(data, len, out, inner, sizeof inner);
    if (rc) snprintf(err, errlen, "%s: %s", path, inner);
    free(data);
    return rc;
}
