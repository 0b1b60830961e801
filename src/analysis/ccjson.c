/* SPDX-License-Identifier: MIT */
/*
 * ccjson.c - CC-Map JSON dump reader (see ccjson.h).
 *
 * Two steps: a small JSON parser builds a flat DOM (values in one array, children linked by
 * index, unescaped strings in one buffer), then the schema walker turns it into a profile.
 * The parser recurses at most JP_MAX_DEPTH levels.
 */
#include "ccjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_io.h"

#define JP_MAX_DEPTH 64
#define JP_NONE UINT32_MAX

enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

typedef struct {
    uint8_t type;
    uint8_t is_uint; /* number is a non-negative integer that fits in u, exactly */
    uint8_t is_neg1; /* number is exactly -1 (the "no parent" marker) */
    uint32_t key;    /* offset of the member name in strs (objects' children), or JP_NONE */
    uint32_t str;    /* offset of the string value in strs */
    uint64_t u;
    uint32_t first, next; /* children (arrays/objects) and next sibling */
    size_t pos;           /* byte offset in the input, for messages */
} JVal;

typedef struct {
    const char *s;
    size_t len, pos;
    JVal *v;
    uint32_t n, cap;
    SpBuf strs; /* NUL-terminated unescaped strings */
    char *err;
    size_t errlen;
    int failed;
    /* methods: the frame of each entry of "methods" (edges and nodes name entries by the
     * frame ids they get in order: fbase + index); a repeated name/file/line shares the
     * first entry's frame */
    uint32_t *fmap, nfmap, fbase;
} JParser;

int sp_ccjson_sniff(const char *data, size_t len) {
    for (size_t i = 0; i < len; i++) {
        if (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') continue;
        return data[i] == '{';
    }
    return 0;
}

/* "LINE:COL: expected X, got Y" at byte offset pos. */
static int jp_fail(JParser *j, size_t pos, const char *expected, const char *got) {
    if (j->failed) return -1;
    unsigned line = 1, col = 1;
    for (size_t i = 0; i < pos && i < j->len; i++, col++)
        if (j->s[i] == '\n') line++, col = 0;
    char g[48];
    if (got)
        snprintf(g, sizeof g, "%s", got);
    else if (pos >= j->len)
        snprintf(g, sizeof g, "end of input");
    else if ((unsigned char)j->s[pos] >= 0x20 && (unsigned char)j->s[pos] < 0x7f)
        snprintf(g, sizeof g, "'%c'", j->s[pos]);
    else
        snprintf(g, sizeof g, "byte 0x%02x", (unsigned char)j->s[pos]);
    if (j->err) snprintf(j->err, j->errlen, "%u:%u: expected %s, got %s", line, col, expected, g);
    j->failed = 1;
    return -1;
}

static void jp_ws(JParser *j) {
    while (j->pos < j->len && strchr(" \t\r\n", j->s[j->pos]) && j->s[j->pos])
        j->pos++;
}

static uint32_t jp_new(JParser *j, uint8_t type) {
    if (j->n == j->cap) {
        uint32_t nc = j->cap ? j->cap * 2 : 256;
        JVal *nv = nc > j->cap ? realloc(j->v, nc * sizeof *nv) : NULL;
        if (!nv) {
            jp_fail(j, j->pos, "memory", "out of memory");
            return JP_NONE;
        }
        j->v = nv, j->cap = nc;
    }
    j->v[j->n] =
        (JVal){.type = type, .key = JP_NONE, .first = JP_NONE, .next = JP_NONE, .pos = j->pos};
    return j->n++;
}

static void jp_utf8(SpBuf *b, unsigned cp) {
    if (cp < 0x80) {
        sp_buf_u8(b, (uint8_t)cp);
    } else if (cp < 0x800) {
        sp_buf_u8(b, (uint8_t)(0xc0 | cp >> 6));
        sp_buf_u8(b, (uint8_t)(0x80 | (cp & 0x3f)));
    } else {
        sp_buf_u8(b, (uint8_t)(0xe0 | cp >> 12));
        sp_buf_u8(b, (uint8_t)(0x80 | ((cp >> 6) & 0x3f)));
        sp_buf_u8(b, (uint8_t)(0x80 | (cp & 0x3f)));
    }
}

/* Parses a string at j->pos (on the quote); appends it NUL-terminated to strs. */
static int jp_string(JParser *j, uint32_t *off) {
    if (j->pos >= j->len || j->s[j->pos] != '"') return jp_fail(j, j->pos, "a string", NULL);
    j->pos++;
    *off = (uint32_t)j->strs.len;
    while (j->pos < j->len && j->s[j->pos] != '"') {
        unsigned char c = (unsigned char)j->s[j->pos];
        if (c < 0x20) return jp_fail(j, j->pos, "a string character", NULL);
        if (c == 0) return jp_fail(j, j->pos, "a string character", "a NUL byte");
        if (c != '\\') {
            sp_buf_u8(&j->strs, c);
            j->pos++;
            continue;
        }
        if (j->pos + 1 >= j->len) return jp_fail(j, j->pos + 1, "an escape character", NULL);
        char e = j->s[j->pos + 1];
        const char *simple = strchr("\"\\/bfnrt", e);
        if (simple && e) {
            static const char repl[] = "\"\\/\b\f\n\r\t";
            sp_buf_u8(&j->strs, (uint8_t)repl[simple - "\"\\/bfnrt"]);
            j->pos += 2;
            continue;
        }
        unsigned cp = 0;
        if (e != 'u' || j->pos + 6 > j->len)
            return jp_fail(j, j->pos + 1, "an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)",
                           NULL);
        for (int k = 2; k < 6; k++) {
            char h = j->s[j->pos + k];
            int d = h >= '0' && h <= '9'   ? h - '0'
                    : h >= 'a' && h <= 'f' ? h - 'a' + 10
                    : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                           : -1;
            if (d < 0) return jp_fail(j, j->pos + k, "a hex digit", NULL);
            cp = cp * 16 + (unsigned)d;
        }
        if (cp == 0) return jp_fail(j, j->pos, "a string character", "\\u0000");
        jp_utf8(&j->strs, cp);
        j->pos += 6;
    }
    if (j->pos >= j->len) return jp_fail(j, j->pos, "'\"' closing the string", NULL);
    j->pos++;
    sp_buf_u8(&j->strs, 0);
    return j->strs.oom ? jp_fail(j, j->pos, "memory", "out of memory") : 0;
}

static int jp_number(JParser *j, JVal *v) {
    size_t start = j->pos;
    int neg = j->pos < j->len && j->s[j->pos] == '-';
    if (neg) j->pos++;
    uint64_t u = 0;
    int digits = 0, exact = 1;
    while (j->pos < j->len && j->s[j->pos] >= '0' && j->s[j->pos] <= '9') {
        unsigned d = (unsigned)(j->s[j->pos++] - '0');
        if (u > (UINT64_MAX - d) / 10) exact = 0;
        u = u * 10 + d;
        digits++;
    }
    if (!digits) return jp_fail(j, j->pos, "a value", NULL);
    while (j->pos < j->len && strchr(".eE+-0123456789", j->s[j->pos]) && j->s[j->pos]) {
        exact = 0; /* fractions and exponents are accepted but are not counters */
        j->pos++;
    }
    v->type = J_NUM;
    v->is_uint = !neg && exact;
    v->is_neg1 = neg && exact && u == 1;
    v->u = u;
    v->pos = start;
    return 0;
}

static uint32_t jp_value(JParser *j, int depth);

/* Parses the members/elements of an object or array whose opening bracket is consumed. */
static int jp_children(JParser *j, uint32_t parent, int is_obj, int depth) {
    char close = is_obj ? '}' : ']';
    uint32_t last = JP_NONE;
    jp_ws(j);
    if (j->pos < j->len && j->s[j->pos] == close) {
        j->pos++;
        return 0;
    }
    for (;;) {
        uint32_t key = JP_NONE;
        jp_ws(j);
        if (is_obj) {
            if (jp_string(j, &key)) return -1;
            jp_ws(j);
            if (j->pos >= j->len || j->s[j->pos] != ':')
                return jp_fail(j, j->pos, "':' after the member name", NULL);
            j->pos++;
        }
        uint32_t c = jp_value(j, depth + 1);
        if (c == JP_NONE) return -1;
        j->v[c].key = key;
        if (last == JP_NONE)
            j->v[parent].first = c;
        else
            j->v[last].next = c;
        last = c;
        jp_ws(j);
        if (j->pos < j->len && j->s[j->pos] == ',') {
            j->pos++;
            continue;
        }
        if (j->pos < j->len && j->s[j->pos] == close) {
            j->pos++;
            return 0;
        }
        return jp_fail(j, j->pos, is_obj ? "',' or '}'" : "',' or ']'", NULL);
    }
}

static uint32_t jp_value(JParser *j, int depth) {
    jp_ws(j);
    if (depth > JP_MAX_DEPTH) {
        jp_fail(j, j->pos, "nesting depth <= 64", "deeper nesting");
        return JP_NONE;
    }
    if (j->pos >= j->len) {
        jp_fail(j, j->pos, "a value", NULL);
        return JP_NONE;
    }
    char c = j->s[j->pos];
    static const char *const words[] = {"null", "true", "false"};
    for (int w = 0; w < 3; w++) {
        size_t wl = strlen(words[w]);
        if (j->len - j->pos >= wl && !memcmp(j->s + j->pos, words[w], wl)) {
            uint32_t v = jp_new(j, w ? J_BOOL : J_NULL);
            j->pos += wl;
            return v;
        }
    }
    uint32_t v = jp_new(j, c == '{' ? J_OBJ : c == '[' ? J_ARR : c == '"' ? J_STR : J_NUM);
    if (v == JP_NONE) return JP_NONE;
    int rc;
    if (c == '{' || c == '[') {
        j->pos++;
        rc = jp_children(j, v, c == '{', depth);
    } else if (c == '"') {
        uint32_t off;
        rc = jp_string(j, &off);
        j->v[v].str = off;
    } else {
        JVal tmp = j->v[v];
        rc = jp_number(j, &tmp);
        j->v[v] = tmp;
    }
    return rc ? JP_NONE : v;
}

/* ====================================================================================== */
/* schema                                                                                 */
/* ====================================================================================== */

static const char *jstr(const JParser *j, uint32_t off) {
    return (const char *)j->strs.data + off;
}

static uint32_t jget(const JParser *j, uint32_t obj, const char *key) {
    for (uint32_t c = j->v[obj].first; c != JP_NONE; c = j->v[c].next)
        if (!strcmp(jstr(j, j->v[c].key), key)) return c;
    return JP_NONE;
}

static const char *jtype_name(uint8_t t) {
    static const char *const n[] = {"null",     "a boolean", "a number",
                                    "a string", "an array",  "an object"};
    return n[t];
}

/* Reads member key of obj as a counter < limit; optional members default to 0. */
static int jcount(JParser *j, uint32_t obj, const char *key, int required, uint64_t limit,
                  uint64_t *out) {
    uint32_t c = jget(j, obj, key);
    char exp[96];
    *out = 0;
    if (c == JP_NONE) {
        if (!required) return 0;
        snprintf(exp, sizeof exp, "member \"%s\"", key);
        return jp_fail(j, j->v[obj].pos, exp, "an object without it");
    }
    if (j->v[c].type != J_NUM || !j->v[c].is_uint || j->v[c].u >= limit) {
        if (limit == 0)
            snprintf(exp, sizeof exp, "\"%s\" to refer to an entry, but there are none", key);
        else
            snprintf(exp, sizeof exp, "\"%s\" as an integer in 0..%llu", key,
                     (unsigned long long)(limit - 1));
        return jp_fail(j, j->v[c].pos, exp,
                       j->v[c].type == J_NUM ? "another number" : jtype_name(j->v[c].type));
    }
    *out = j->v[c].u;
    return 0;
}

static int jarray(JParser *j, uint32_t root, const char *key, uint32_t *arr) {
    *arr = jget(j, root, key);
    if (*arr != JP_NONE && j->v[*arr].type != J_ARR) {
        char exp[64];
        snprintf(exp, sizeof exp, "\"%s\" as an array", key);
        return jp_fail(j, j->v[*arr].pos, exp, jtype_name(j->v[*arr].type));
    }
    return 0;
}

static int jelem_obj(JParser *j, uint32_t c) {
    return j->v[c].type == J_OBJ ? 0
                                 : jp_fail(j, j->v[c].pos, "an object", jtype_name(j->v[c].type));
}

static int cj_methods(JParser *j, uint32_t root, SpProfile *p) {
    uint32_t arr;
    if (jarray(j, root, "methods", &arr)) return -1;
    for (uint32_t c = arr == JP_NONE ? JP_NONE : j->v[arr].first; c != JP_NONE; c = j->v[c].next) {
        uint64_t line, v[4];
        if (jelem_obj(j, c)) return -1;
        uint32_t name = jget(j, c, "name"), file = jget(j, c, "file");
        if (name == JP_NONE || j->v[name].type != J_STR)
            return jp_fail(j, name == JP_NONE ? j->v[c].pos : j->v[name].pos,
                           "member \"name\" as a string",
                           name == JP_NONE ? "none" : "another type");
        if (file != JP_NONE && j->v[file].type != J_STR)
            return jp_fail(j, j->v[file].pos, "\"file\" as a string", jtype_name(j->v[file].type));
        if (jcount(j, c, "line", 0, UINT32_MAX, &line) ||
            jcount(j, c, "self", 1, UINT64_MAX, &v[0]) ||
            jcount(j, c, "total", 1, UINT64_MAX, &v[1]) ||
            jcount(j, c, "self_ns", 0, UINT64_MAX, &v[2]) ||
            jcount(j, c, "total_ns", 0, UINT64_MAX, &v[3]))
            return -1;
        if (!j->nfmap) j->fbase = p->nframes;
        uint32_t before = p->nframes;
        uint32_t f =
            sp_frame_addv(p, SP_FRAME_VM_METHOD, jstr(j, j->v[name].str), NULL, 0, 0,
                          file == JP_NONE ? NULL : jstr(j, j->v[file].str), (uint32_t)line);
        uint32_t *m = realloc(j->fmap, (j->nfmap + 1) * sizeof *m);
        if (f == SP_NONE || !m) return jp_fail(j, j->v[c].pos, "memory", "out of memory");
        j->fmap = m;
        j->fmap[j->nfmap++] = f;
        if (f != before) { /* the same method twice (a writer that named it twice): one */
            SpCcMethod *e = NULL;
            for (uint32_t k = 0; k < p->cc.nmethods && !e; k++)
                if (p->cc.methods[k].frame == f) e = &p->cc.methods[k];
            if (e) {
                e->self += v[0], e->total += v[1], e->self_ns += v[2], e->total_ns += v[3];
                continue;
            }
        }
        if (sp_cc_method_add(p, f, v[0], v[1], v[2], v[3]))
            return jp_fail(j, j->v[c].pos, "memory", "out of memory");
    }
    p->cc.present = 1;
    return 0;
}

/* One past the highest frame id an edge or node may name. */
static uint64_t cj_nref(const JParser *j, const SpProfile *p) {
    return j->nfmap && j->fbase + j->nfmap > p->nframes ? j->fbase + j->nfmap : p->nframes;
}

/* The frame of the entry that got frame id x in order (fmap), or x itself. */
static uint64_t cj_frame(const JParser *j, uint64_t x) {
    return x >= j->fbase && x - j->fbase < j->nfmap ? j->fmap[x - j->fbase] : x;
}

static int cj_edges(JParser *j, uint32_t root, SpProfile *p) {
    uint32_t arr;
    if (jarray(j, root, "edges", &arr)) return -1;
    for (uint32_t c = arr == JP_NONE ? JP_NONE : j->v[arr].first; c != JP_NONE; c = j->v[c].next) {
        uint64_t caller, callee, site, count;
        if (jelem_obj(j, c) || jcount(j, c, "caller", 1, cj_nref(j, p), &caller) ||
            jcount(j, c, "callee", 1, cj_nref(j, p), &callee) ||
            jcount(j, c, "callsite", 0, UINT32_MAX, &site) ||
            jcount(j, c, "count", 1, UINT64_MAX, &count))
            return -1;
        caller = cj_frame(j, caller), callee = cj_frame(j, callee);
        if (sp_cc_edge_add(p, (uint32_t)caller, (uint32_t)site, (uint32_t)callee, count))
            return jp_fail(j, j->v[c].pos, "memory", "out of memory");
    }
    return 0;
}

static int cj_nodes(JParser *j, uint32_t root, SpProfile *p) {
    uint32_t arr;
    if (jarray(j, root, "nodes", &arr)) return -1;
    for (uint32_t c = arr == JP_NONE ? JP_NONE : j->v[arr].first; c != JP_NONE; c = j->v[c].next) {
        uint64_t parent = SP_NONE, method, site, self, total, tns;
        if (jelem_obj(j, c)) return -1;
        uint32_t pv = jget(j, c, "parent");
        if (pv == JP_NONE || !j->v[pv].is_neg1) {
            if (jcount(j, c, "parent", 1, p->cc.nnodes, &parent)) return -1;
        }
        if (jcount(j, c, "method", 1, cj_nref(j, p), &method) ||
            jcount(j, c, "callsite", 0, UINT32_MAX, &site) ||
            jcount(j, c, "self", 1, UINT64_MAX, &self) ||
            jcount(j, c, "total", 1, UINT64_MAX, &total) ||
            jcount(j, c, "time_ns", 0, UINT64_MAX, &tns))
            return -1;
        method = cj_frame(j, method);
        if (sp_cc_node_add(p, (uint32_t)parent, (uint32_t)method, (uint32_t)site, self, total,
                           tns) == SP_NONE)
            return jp_fail(j, j->v[c].pos, "memory", "out of memory");
    }
    return 0;
}

static int cj_header(JParser *j, uint32_t root, SpProfile **p) {
    if (j->v[root].type != J_OBJ)
        return jp_fail(j, j->v[root].pos, "an object at the top level",
                       jtype_name(j->v[root].type));
    uint32_t fmt = jget(j, root, "format"), fl = jget(j, root, "flavour");
    uint64_t version;
    if (fmt == JP_NONE || j->v[fmt].type != J_STR || strcmp(jstr(j, j->v[fmt].str), "sampo-ccmap"))
        return jp_fail(j, fmt == JP_NONE ? j->v[root].pos : j->v[fmt].pos,
                       "\"format\": \"sampo-ccmap\"",
                       fmt == JP_NONE ? "no format member" : "another value");
    if (jcount(j, root, "version", 1, UINT64_MAX, &version)) return -1;
    if (version != 1)
        return jp_fail(j, j->v[jget(j, root, "version")].pos, "version 1", "another version");
    int exact = 0;
    if (fl != JP_NONE) {
        const char *f = j->v[fl].type == J_STR ? jstr(j, j->v[fl].str) : "";
        if (strcmp(f, "exact") && strcmp(f, "sampled"))
            return jp_fail(j, j->v[fl].pos, "\"flavour\": \"sampled\" or \"exact\"",
                           "another value");
        exact = !strcmp(f, "exact");
    }
    *p = sp_profile_new(exact ? SP_FLAVOUR_EXACT : SP_FLAVOUR_SAMPLED);
    return *p ? 0 : jp_fail(j, 0, "memory", "out of memory");
}

static int cj_meta(JParser *j, uint32_t root, SpProfile *p) {
    uint32_t m = jget(j, root, "meta");
    if (m == JP_NONE) return 0;
    if (j->v[m].type != J_OBJ)
        return jp_fail(j, j->v[m].pos, "\"meta\" as an object", jtype_name(j->v[m].type));
    for (uint32_t c = j->v[m].first; c != JP_NONE; c = j->v[c].next) {
        char num[32];
        const char *val = num;
        if (j->v[c].type == J_STR)
            val = jstr(j, j->v[c].str);
        else if (j->v[c].type == J_NUM && j->v[c].is_uint)
            snprintf(num, sizeof num, "%llu", (unsigned long long)j->v[c].u);
        else
            return jp_fail(j, j->v[c].pos, "a string or unsigned integer metadata value",
                           jtype_name(j->v[c].type));
        if (sp_meta_set(p, jstr(j, j->v[c].key), val))
            return jp_fail(j, j->v[c].pos, "memory", "out of memory");
    }
    return 0;
}

int sp_ccjson_decode(const char *data, size_t len, SpProfile **out, char *err, size_t errlen) {
    JParser j = {.s = data, .len = len, .err = err, .errlen = errlen};
    SpProfile *p = NULL;
    sp_buf_init(&j.strs);
    *out = NULL;
    uint32_t root = jp_value(&j, 0);
    if (root == JP_NONE) goto fail;
    jp_ws(&j);
    if (j.pos != len) {
        jp_fail(&j, j.pos, "end of input after the top-level object", NULL);
        goto fail;
    }
    if (cj_header(&j, root, &p) || cj_meta(&j, root, p) || cj_methods(&j, root, p) ||
        cj_edges(&j, root, p) || cj_nodes(&j, root, p))
        goto fail;
    free(j.v);
    free(j.fmap);
    sp_buf_fini(&j.strs);
    *out = p;
    return 0;
fail:
    free(j.v);
    free(j.fmap);
    sp_buf_fini(&j.strs);
    sp_profile_free(p);
    return -1;
}
