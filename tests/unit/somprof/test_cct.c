/* SPDX-License-Identifier: MIT */
/*
 * test_cct.c - calling-context tree of somprof: full and partial (visited-mark) samples,
 * the Rotor Figure 2 shapes, and the CC-Map section / JSON dump built from a tree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cct.h"
#include "output.h"
#include "profile_io.h"

static const char A[] = "A", B[] = "B", C[] = "C", D[] = "D", E[] = "E", F[] = "F";

/* Adds a sample given youngest first; positions are i*10+1 for frame i's send. */
static uint32_t add(SpcTree *t, const char *const *m, uint32_t n, uint32_t start, uint32_t *ctx) {
    uint32_t pos[16];
    for (uint32_t i = 0; i < n; i++)
        pos[i] = i * 10 + 1;
    return spc_add_sample(t, (const void *const *)m, pos, n, start, 1, ctx);
}

static void path_names(const SpcTree *t, uint32_t ctx, char *buf, size_t len) {
    uint32_t p[32], d = spc_path(t, ctx, p, 32);
    buf[0] = 0;
    for (uint32_t i = d; i-- > 0;) {
        strncat(buf, (const char *)t->n[p[i]].method, len - strlen(buf) - 1);
        if (i) strncat(buf, ";", len - strlen(buf) - 1);
    }
}

static void test_figure2_full(void **state) {
    (void)state;
    SpcTree t;
    assert_int_equal(spc_init(&t), 0);
    const char *s1[] = {D, C, B, A}, *s2[] = {F, C, B, E};
    uint32_t l1 = add(&t, s1, 4, SPC_NONE, NULL), l2 = add(&t, s2, 4, SPC_NONE, NULL);
    uint32_t l1b = add(&t, s1, 4, SPC_NONE, NULL);
    char buf[128];
    path_names(&t, l1, buf, sizeof buf);
    assert_string_equal(buf, "A;B;C;D");
    path_names(&t, l2, buf, sizeof buf);
    assert_string_equal(buf, "E;B;C;F");
    assert_int_equal(l1, l1b);
    assert_int_equal(t.n[l1].count, 2);
    assert_int_equal(t.len, 9); /* root + 4 + 4: B and C exist once per context */
    spc_fini(&t);
}

static void test_partial_sample_continues_context(void **state) {
    (void)state;
    SpcTree t;
    assert_int_equal(spc_init(&t), 0);
    uint32_t ctx[8];
    const char *full[] = {C, B, A};
    add(&t, full, 3, SPC_NONE, ctx);
    uint32_t c_ctx = ctx[0], b_ctx = ctx[1];
    /* later sample: D was called from the still-visited C; the walk stopped at C */
    const char *part[] = {D, C};
    uint32_t leaf = add(&t, part, 2, c_ctx, ctx);
    char buf[128];
    path_names(&t, leaf, buf, sizeof buf);
    assert_string_equal(buf, "A;B;C;D");
    assert_int_equal(ctx[1], c_ctx);
    assert_int_equal(t.n[leaf].parent, c_ctx);
    assert_int_equal(t.n[leaf].callsite, 11); /* C's position in the partial sample */
    /* a partial sample that stops at the visited top frame repeats its context */
    const char *top[] = {B};
    assert_int_equal(add(&t, top, 1, b_ctx, NULL), b_ctx);
    assert_int_equal(t.n[b_ctx].count, 1);
    spc_fini(&t);
}

static void test_partial_with_stale_context_roots(void **state) {
    (void)state;
    SpcTree t;
    assert_int_equal(spc_init(&t), 0);
    uint32_t ctx[4];
    const char *full[] = {B, A};
    add(&t, full, 2, SPC_NONE, ctx);
    /* the start context names another method: treated as a full sample, not mis-attached */
    const char *part[] = {D, C};
    uint32_t leaf = add(&t, part, 2, ctx[0], NULL);
    char buf[64];
    path_names(&t, leaf, buf, sizeof buf);
    assert_string_equal(buf, "C;D");
    assert_int_equal(spc_add_sample(&t, NULL, NULL, 0, SPC_NONE, 1, NULL), SPC_NONE);
    spc_fini(&t);
}

static void test_many_children_rehash(void **state) {
    (void)state;
    SpcTree t;
    assert_int_equal(spc_init(&t), 0);
    static char names[3000][8];
    for (int i = 0; i < 3000; i++) {
        snprintf(names[i], sizeof names[i], "m%d", i);
        assert_int_not_equal(spc_child(&t, SPC_ROOT, names[i], (uint32_t)i), SPC_NONE);
    }
    for (int i = 0; i < 3000; i++)
        assert_int_equal(spc_child(&t, SPC_ROOT, names[i], (uint32_t)i), i + 1);
    assert_int_equal(t.len, 3001);
    spc_fini(&t);
}

/* Exact-mode shape: counts are invocations, times inclusive; recursion counted once. */
static void test_ccmap_section_and_dump(void **state) {
    (void)state;
    SpcTree t;
    assert_int_equal(spc_init(&t), 0);
    uint32_t a = spc_child(&t, SPC_ROOT, A, 0);
    uint32_t b1 = spc_child(&t, a, B, 3), b2 = spc_child(&t, b1, B, 7); /* B recursing */
    uint32_t c = spc_child(&t, a, C, 5);
    t.n[a].count = 1, t.n[b1].count = 2, t.n[b2].count = 4, t.n[c].count = 10;
    t.n[a].total_ns = 1000, t.n[a].child_ns = 900;
    t.n[b1].total_ns = 600, t.n[b1].child_ns = 200, t.n[b2].total_ns = 200;
    t.n[c].total_ns = 300;
    t.n[a].self_ns = 100, t.n[b1].self_ns = 400, t.n[b2].self_ns = 200, t.n[c].self_ns = 300;
    SpProfile *p = sp_profile_new(SP_FLAVOUR_EXACT);
    assert_non_null(p);
    assert_int_equal(spo_ccmap_from_tree(p, &t, true), 0);
    assert_int_equal(p->cc.nnodes, 4);
    uint64_t bself = 0, btotal = 0, bself_ns = 0, btotal_ns = 0;
    for (uint32_t i = 0; i < p->cc.nmethods; i++)
        if (!strcmp(sp_str(p, p->frames[p->cc.methods[i].frame].name), "B")) {
            bself = p->cc.methods[i].self, btotal = p->cc.methods[i].total;
            bself_ns = p->cc.methods[i].self_ns, btotal_ns = p->cc.methods[i].total_ns;
        }
    assert_int_equal(bself, 6);
    assert_int_equal(btotal, 6); /* the recursive call is inside the outer one */
    assert_int_equal(bself_ns, 600);
    assert_int_equal(btotal_ns, 600);
    int seen_rec = 0;
    for (uint32_t i = 0; i < p->cc.nedges; i++) {
        const SpCcEdge *e = &p->cc.edges[i];
        if (e->caller == e->callee) {
            assert_int_equal(e->callsite, 7);
            assert_int_equal(e->count, 4);
            seen_rec = 1;
        }
    }
    assert_true(seen_rec);
    char path[] = "/tmp/somprof_test_dump_XXXXXX", err[256];
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(spo_write_dump(p, path, err, sizeof err), 0);
    FILE *f = fopen(path, "r");
    char text[4096] = {0};
    assert_true(fread(text, 1, sizeof text - 1, f) > 0);
    fclose(f);
    unlink(path);
    assert_non_null(strstr(text, "\"format\": \"sampo-ccmap\""));
    assert_non_null(strstr(text, "\"flavour\": \"exact\""));
    assert_non_null(strstr(
        text, "{\"parent\": -1, \"method\": 0, \"callsite\": 0, \"self\": 1, \"total\": 17"));
    sp_profile_free(p);
    spc_fini(&t);
}

/* Recursion folds: A calls B at 1, B calls B at 2 a thousand times deep: B's recursive call
 * re-enters the context it opened, so the tree has root, A, A;B, A;B;B (the first recursive
 * call's own context) and no more; the calls stay counted. */
static void test_recursion_folds(void **state) {
    (void)state;
    SpcTree t;
    assert_int_equal(spc_init(&t), 0);
    int merged;
    uint32_t a = spc_enter(&t, SPC_ROOT, A, 0, &merged);
    uint32_t b = spc_enter(&t, a, B, 1, &merged);
    uint32_t ctx = b, first = SPC_NONE;
    for (int i = 0; i < 1000; i++) {
        ctx = spc_enter(&t, ctx, B, 2, &merged);
        assert_int_equal(merged, 0);
        if (i == 0) first = ctx;
        assert_int_equal(ctx, first);
    }
    assert_int_equal(t.len, 4);
    assert_int_equal(t.folded, 999);
    /* a different call site of the same method is its own context, folded in turn */
    uint32_t c = spc_enter(&t, first, B, 3, &merged);
    assert_int_not_equal(c, first);
    assert_int_equal(spc_enter(&t, c, B, 2, &merged), first);
    /* the same bci in another caller is another call: no fold (A at 2 -> B vs B at 2 -> B) */
    uint32_t a2 = spc_enter(&t, b, A, 7, &merged);
    assert_int_not_equal(spc_enter(&t, a2, B, 2, &merged), first);
    /* samples fold the same way: a 200-deep stack of B under A */
    const char *m[200];
    uint32_t pos[200], out[200];
    for (int i = 0; i < 199; i++)
        m[i] = B, pos[i] = 2; /* pos[i]: where frame i runs, the call site of frame i-1 */
    m[199] = A, pos[199] = 1;
    uint32_t len = t.len;
    uint32_t leaf = spc_add_sample(&t, (const void *const *)m, pos, 200, SPC_NONE, 1, out);
    assert_int_equal(leaf, first);
    assert_int_equal(t.len, len);
    spc_fini(&t);
}

/* A bounded tree: once max_nodes is reached, new calls merge into their caller, counted. */
static void test_bound_merges_into_caller(void **state) {
    (void)state;
    SpcTree t;
    assert_int_equal(spc_init(&t), 0);
    t.max_nodes = 3;
    int merged;
    uint32_t a = spc_enter(&t, SPC_ROOT, A, 0, &merged);
    uint32_t b = spc_enter(&t, a, B, 1, &merged);
    assert_int_equal(merged, 0);
    assert_int_equal(spc_enter(&t, b, C, 1, &merged), b);
    assert_int_equal(merged, 1);
    assert_int_equal(spc_enter(&t, a, D, 2, &merged), a);
    assert_int_equal(t.merged, 2);
    assert_int_equal(t.len, 3);
    assert_int_equal(spc_enter(&t, a, B, 1, &merged), b); /* existing contexts still found */
    assert_int_equal(merged, 0);
    spc_fini(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_figure2_full),
        cmocka_unit_test(test_partial_sample_continues_context),
        cmocka_unit_test(test_partial_with_stale_context_roots),
        cmocka_unit_test(test_many_children_rehash),
        cmocka_unit_test(test_ccmap_section_and_dump),
        cmocka_unit_test(test_recursion_folds),
        cmocka_unit_test(test_bound_merges_into_caller),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
