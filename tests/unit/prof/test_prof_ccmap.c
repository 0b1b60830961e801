/* SPDX-License-Identifier: MIT */
/*
 * test_prof_ccmap.c - CC-Map updates and queries: the Rotor paper's Figure 2 shapes
 * (A->B->C->D vs E->B->C->F), partial samples continuing from a visited frame's context,
 * recursion (folded into the context its recursive call opened), the bound on contexts,
 * pruning and snapshots.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ccmap.h"
#include "sampo.h"

enum { A = 1, B, C, D, E, F };

/* Adds a sample given outermost-first (easier to read); pos[i] = call site in frame i. */
static void add(ProfCCMap *m, int n, const uint64_t *outer_first, const uint64_t *pos_outer,
                uint32_t start, uint32_t *ctx) {
    uint64_t meth[16], pos[16];
    for (int i = 0; i < n; i++) {
        meth[i] = outer_first[n - 1 - i];
        pos[i] = pos_outer ? pos_outer[n - 1 - i] : 0;
    }
    assert_int_equal(prof_ccmap_add(m, meth, pos, (uint32_t)n, 1, start, ctx), 0);
}

static ProfCCMap *figure2(uint64_t pos_cd, uint64_t pos_cf) {
    ProfCCMap *m = prof_ccmap_new();
    add(m, 4, (uint64_t[]){A, B, C, D}, (uint64_t[]){10, 20, pos_cd, 0}, CC_NONE, NULL);
    add(m, 4, (uint64_t[]){E, B, C, F}, (uint64_t[]){11, 20, pos_cf, 0}, CC_NONE, NULL);
    return m;
}

static void test_figure2_general_nodes(void **state) {
    (void)state;
    ProfCCMap *m = figure2(30, 31);
    SampoMethodStat s;
    assert_int_equal(sampo_ccmap_method(m, B, &s), 0);
    assert_int_equal(s.total, 2);
    assert_int_equal(s.self, 0);
    sampo_ccmap_method(m, D, &s);
    assert_int_equal(s.self, 1);
    sampo_ccmap_method(m, F, &s);
    assert_int_equal(s.self, 1);
    SampoEdgeStat e[8];
    size_t ne = sampo_ccmap_hot_edges(m, e, 8);
    assert_int_equal(ne, 5); /* A->B, E->B, B->C, C->D, C->F */
    assert_int_equal(e[0].caller, B);
    assert_int_equal(e[0].callee, C);
    assert_int_equal(e[0].count, 2);
    assert_int_equal(e[0].pos, 20);
    SampoMethodStat hot[8];
    size_t nh = sampo_ccmap_hot_methods(m, 1, hot, 8);
    assert_int_equal(nh, 6);
    assert_int_equal(hot[0].total, 2);
    assert_int_equal(hot[1].total, 2);
    assert_int_equal(sampo_ccmap_total(m), 2);
    prof_ccmap_free(m);
}

static void test_figure2_contexts(void **state) {
    (void)state;
    ProfCCMap *m = figure2(30, 31);
    uint32_t ctx[8];
    /* B->C happened in two contexts (under A and under E) */
    assert_int_equal(sampo_ccmap_edge_contexts(m, B, 20, C, ctx, 8), 2);
    assert_int_equal(sampo_ccmap_edge_contexts(m, C, 30, D, ctx, 8), 1);
    /* walk D's context up: C, B, A */
    SampoCtxInfo in;
    assert_int_equal(sampo_ccmap_ctx_info(m, ctx[0], &in), 0);
    assert_int_equal(in.method, D);
    assert_int_equal(in.depth, 3);
    uint64_t chain[4] = {0};
    uint32_t c = ctx[0];
    for (int i = 0; i < 4; i++) {
        sampo_ccmap_ctx_info(m, c, &in);
        chain[i] = in.method;
        c = in.parent;
    }
    assert_int_equal(c, SAMPO_CTX_NONE);
    assert_int_equal(chain[1], C);
    assert_int_equal(chain[2], B);
    assert_int_equal(chain[3], A);
    /* walk down from the roots: A and E, each with one child B */
    uint32_t roots[4], kids[4];
    assert_int_equal(sampo_ccmap_roots(m, roots, 4), 2);
    assert_int_equal(sampo_ccmap_ctx_children(m, roots[0], kids, 4), 1);
    sampo_ccmap_ctx_info(m, kids[0], &in);
    assert_int_equal(in.method, B);
    assert_int_equal(in.total, 1);
    prof_ccmap_free(m);
}

static void test_monomorphic_sites(void **state) {
    (void)state;
    uint64_t t[4];
    ProfCCMap *m = figure2(30, 31); /* D and F called from different sites of C */
    assert_int_equal(sampo_ccmap_site_targets(m, C, 30, t, 4), 1);
    assert_int_equal(t[0], D);
    assert_int_equal(sampo_ccmap_site_targets(m, C, 31, t, 4), 1);
    prof_ccmap_free(m);
    m = figure2(30, 30); /* same site: polymorphic */
    assert_int_equal(sampo_ccmap_site_targets(m, C, 30, t, 4), 2);
    assert_int_equal(sampo_ccmap_site_targets(m, C, 99, t, 4), 0);
    prof_ccmap_free(m);
}

/* A partial sample [D, C*] continuing from C's recorded context must give exactly the map
 * that the full sample A->B->C->D gives. */
static void test_partial_equals_full(void **state) {
    (void)state;
    ProfCCMap *full = prof_ccmap_new(), *part = prof_ccmap_new();
    uint64_t abc[] = {A, B, C}, abcd[] = {A, B, C, D}, pos[] = {1, 2, 3, 4};
    add(full, 3, abc, pos, CC_NONE, NULL);
    add(full, 4, abcd, pos, CC_NONE, NULL);
    uint32_t ctx[3];
    add(part, 3, abc, pos, CC_NONE, ctx); /* ctx leaf first: ctx[0] is C */
    add(part, 2, (uint64_t[]){C, D}, (uint64_t[]){3, 4}, ctx[0], NULL);
    for (uint64_t id = A; id <= D; id++) {
        SampoMethodStat x, y;
        sampo_ccmap_method(full, id, &x);
        sampo_ccmap_method(part, id, &y);
        assert_int_equal(x.self, y.self);
        assert_int_equal(x.total, y.total);
    }
    assert_int_equal(full->nx, part->nx);
    for (uint32_t i = 0; i < full->nx; i++) {
        SampoCtxInfo x, y;
        sampo_ccmap_ctx_info(full, i, &x);
        sampo_ccmap_ctx_info(part, i, &y);
        assert_int_equal(x.method, y.method);
        assert_int_equal(x.parent, y.parent);
        assert_int_equal(x.self, y.self);
        assert_int_equal(x.total, y.total);
    }
    SampoEdgeStat e1[8], e2[8];
    assert_int_equal(sampo_ccmap_hot_edges(full, e1, 8), sampo_ccmap_hot_edges(part, e2, 8));
    assert_int_equal(e1[0].count, e2[0].count);
    prof_ccmap_free(full);
    prof_ccmap_free(part);
}

static void test_partial_bad_context(void **state) {
    (void)state;
    ProfCCMap *m = prof_ccmap_new();
    uint32_t ctx[2];
    add(m, 2, (uint64_t[]){A, B}, NULL, CC_NONE, ctx);
    uint64_t meth[] = {D, C}, pos[] = {0, 0};
    /* C is not the method of ctx[0] (B): rejected, nothing counted */
    assert_int_equal(prof_ccmap_add(m, meth, pos, 2, 1, ctx[0], NULL), SAMPO_EINVAL);
    assert_int_equal(prof_ccmap_add(m, meth, pos, 2, 1, 12345, NULL), SAMPO_EINVAL);
    assert_int_equal(sampo_ccmap_total(m), 1);
    prof_ccmap_free(m);
}

static void test_recursion_counted_once(void **state) {
    (void)state;
    ProfCCMap *m = prof_ccmap_new();
    add(m, 4, (uint64_t[]){A, B, B, B}, (uint64_t[]){1, 2, 2, 0}, CC_NONE, NULL);
    SampoMethodStat s;
    sampo_ccmap_method(m, B, &s);
    assert_int_equal(s.total, 1);
    assert_int_equal(s.self, 1);
    SampoEdgeStat e[4];
    assert_int_equal(sampo_ccmap_hot_edges(m, e, 4), 2); /* A->B, B->B */
    assert_int_equal(e[0].count, 1);
    assert_int_equal(e[1].count, 1);
    prof_ccmap_free(m);
}

/* Edge count of caller@pos->callee (0 if absent). */
static uint64_t edge(const ProfCCMap *m, uint64_t caller, uint64_t pos, uint64_t callee) {
    SampoEdgeStat e[16];
    size_t n = sampo_ccmap_hot_edges(m, e, 16);
    for (size_t i = 0; i < n; i++)
        if (e[i].caller == caller && e[i].pos == pos && e[i].callee == callee) return e[i].count;
    return 0;
}

static uint64_t mtotal(const ProfCCMap *m, uint64_t id, uint64_t *self) {
    SampoMethodStat s;
    sampo_ccmap_method(m, id, &s);
    if (self) *self = s.self;
    return s.total;
}

/* A->B, then B->B from one site 9 times: three contexts (A, B under A, B under B), the
 * deeper calls re-enter the last one. */
static void test_fold_direct_recursion(void **state) {
    (void)state;
    ProfCCMap *m = prof_ccmap_new();
    uint64_t meth[11] = {A}, pos[11] = {1};
    for (int i = 1; i < 11; i++)
        meth[i] = B, pos[i] = 2;
    uint32_t ctx[11];
    add(m, 11, meth, pos, CC_NONE, ctx);
    add(m, 4, meth, pos, CC_NONE, NULL);
    assert_int_equal(m->nx, 3);
    assert_int_equal(m->folded, 8 + 1);
    assert_int_equal(m->merged, 0);
    /* ctx is leaf first: frames 0..8 (the B's below the second) share one context */
    for (int i = 0; i < 9; i++)
        assert_int_equal(ctx[i], ctx[8]);
    SampoCtxInfo in;
    sampo_ccmap_ctx_info(m, ctx[0], &in);
    assert_int_equal(in.method, B);
    assert_int_equal(in.depth, 2);
    assert_int_equal(in.self, 2);
    assert_int_equal(in.total, 2);
    assert_int_equal(in.parent, ctx[9]);
    /* general nodes as without folding: each sample once per node */
    uint64_t self;
    assert_int_equal(mtotal(m, B, &self), 2);
    assert_int_equal(self, 2);
    assert_int_equal(mtotal(m, A, NULL), 2);
    assert_int_equal(edge(m, A, 1, B), 2);
    assert_int_equal(edge(m, B, 2, B), 2);
    /* another site of the recursion gets its own context, under the first recursive one */
    add(m, 4, (uint64_t[]){A, B, B, B}, (uint64_t[]){1, 2, 3, 0}, CC_NONE, ctx);
    assert_int_equal(m->nx, 4);
    sampo_ccmap_ctx_info(m, ctx[0], &in);
    assert_int_equal(in.depth, 3);
    assert_int_equal(prof_ccmap_ctx_pos(m, ctx[0]), 3);
    prof_ccmap_free(m);
}

/* A->B->C->B->C...: contexts A, B, C, B (under C); C called from the inner B re-enters the
 * C context, and from there B is its existing child. */
static void test_fold_mutual_recursion(void **state) {
    (void)state;
    ProfCCMap *m = prof_ccmap_new();
    uint64_t meth[] = {A, B, C, B, C, B, C, B}, pos[] = {1, 2, 3, 2, 3, 2, 3, 0};
    uint32_t ctx[8];
    add(m, 8, meth, pos, CC_NONE, ctx);
    assert_int_equal(m->nx, 4);
    assert_int_equal(m->folded, 2); /* the C frames 4 and 6 (outermost first) */
    /* leaf first: B frames 0, 2, 4 share the inner B context, C frames 1, 3, 5 the C one */
    assert_int_equal(ctx[0], ctx[2]);
    assert_int_equal(ctx[0], ctx[4]);
    assert_int_equal(ctx[1], ctx[5]);
    assert_true(ctx[6] != ctx[4]); /* the outer B (called by A) keeps its own context */
    SampoCtxInfo in;
    sampo_ccmap_ctx_info(m, ctx[0], &in);
    assert_int_equal(in.method, B);
    assert_int_equal(in.depth, 3);
    assert_int_equal(in.self, 1);
    uint64_t self;
    assert_int_equal(mtotal(m, B, &self), 1);
    assert_int_equal(self, 1);
    assert_int_equal(mtotal(m, C, NULL), 1);
    assert_int_equal(edge(m, A, 1, B), 1);
    assert_int_equal(edge(m, B, 2, C), 1);
    assert_int_equal(edge(m, C, 3, B), 1);
    prof_ccmap_free(m);
}

/* A tree without recursion is the unfolded one: the same method under different callers, a
 * call cycle over methods that is never on one stack, nothing folded. */
static void test_no_recursion_unchanged(void **state) {
    (void)state;
    ProfCCMap *m = figure2(30, 31);
    add(m, 3, (uint64_t[]){A, B, C}, (uint64_t[]){10, 20, 0}, CC_NONE, NULL);
    add(m, 3, (uint64_t[]){A, C, B}, (uint64_t[]){12, 21, 0}, CC_NONE, NULL);
    assert_int_equal(m->nx, 8 + 2); /* A B C D, E B C F, A->C->B */
    assert_int_equal(m->folded, 0);
    assert_int_equal(m->merged, 0);
    uint32_t roots[4], kids[4];
    assert_int_equal(sampo_ccmap_roots(m, roots, 4), 2);
    SampoCtxInfo in;
    for (size_t i = 0; i < 2; i++) {
        sampo_ccmap_ctx_info(m, roots[i], &in);
        assert_int_equal(in.total, in.method == A ? 3 : 1);
    }
    uint32_t a = roots[0];
    sampo_ccmap_ctx_info(m, a, &in);
    if (in.method != A) a = roots[1];
    assert_int_equal(sampo_ccmap_ctx_children(m, a, kids, 4), 2); /* B and C */
    assert_int_equal(mtotal(m, C, NULL), 4);
    assert_int_equal(edge(m, B, 20, C), 3);
    prof_ccmap_free(m);
}

/* At the bound a frame stays in its caller's context: counted, general nodes still exact. */
static void test_bound_merges_into_caller(void **state) {
    (void)state;
    ProfCCMap *m = prof_ccmap_new();
    m->max_ctx = 3;
    uint32_t ctx[5];
    add(m, 5, (uint64_t[]){A, B, C, D, E}, (uint64_t[]){1, 2, 3, 4, 0}, CC_NONE, ctx);
    assert_int_equal(m->nx, 3);
    assert_int_equal(m->merged, 2);
    assert_int_equal(ctx[0], ctx[2]); /* E and D in C's context */
    assert_int_equal(ctx[1], ctx[2]);
    SampoCtxInfo in;
    sampo_ccmap_ctx_info(m, ctx[0], &in);
    assert_int_equal(in.method, C);
    assert_int_equal(in.self, 1);
    uint64_t self;
    assert_int_equal(mtotal(m, E, &self), 1);
    assert_int_equal(self, 1);
    assert_int_equal(mtotal(m, C, &self), 1);
    assert_int_equal(self, 0);
    assert_int_equal(edge(m, C, 3, D), 1);
    assert_int_equal(edge(m, D, 4, E), 1);
    /* known contexts are still reached; only new ones are refused */
    add(m, 2, (uint64_t[]){A, B}, (uint64_t[]){1, 0}, CC_NONE, ctx);
    sampo_ccmap_ctx_info(m, ctx[0], &in);
    assert_int_equal(in.method, B);
    assert_int_equal(m->merged, 2);
    /* the default bound, and the one set for new maps */
    ProfCCMap *d = prof_ccmap_new();
    assert_int_equal(d->max_ctx, PROF_CCMAP_MAX_CTX_DEFAULT);
    prof_ccmap_set_default_max(7);
    ProfCCMap *s = prof_ccmap_new();
    assert_int_equal(s->max_ctx, 7);
    prof_ccmap_set_default_max(0);
    prof_ccmap_free(s);
    prof_ccmap_free(d);
    prof_ccmap_free(m);
}

/* A partial sample continuing from a folded context (deep direct recursion, the async
 * profiler's case) gives the map the full sample gives. */
static void test_partial_from_folded_context(void **state) {
    (void)state;
    ProfCCMap *full = prof_ccmap_new(), *part = prof_ccmap_new();
    uint64_t meth[8] = {A}, pos[8] = {1};
    for (int i = 1; i < 8; i++)
        meth[i] = B, pos[i] = 2;
    uint32_t ctx[8];
    add(full, 6, meth, pos, CC_NONE, NULL);
    add(full, 8, meth, pos, CC_NONE, NULL);
    add(part, 6, meth, pos, CC_NONE, ctx);
    add(part, 3, (uint64_t[]){B, B, B}, (uint64_t[]){2, 2, 0}, ctx[0], NULL);
    assert_int_equal(full->nx, part->nx);
    for (uint32_t i = 0; i < full->nx; i++) {
        SampoCtxInfo x, y;
        sampo_ccmap_ctx_info(full, i, &x);
        sampo_ccmap_ctx_info(part, i, &y);
        assert_int_equal(x.method, y.method);
        assert_int_equal(x.self, y.self);
        assert_int_equal(x.total, y.total);
    }
    assert_int_equal(mtotal(full, B, NULL), mtotal(part, B, NULL));
    assert_int_equal(edge(full, B, 2, B), edge(part, B, 2, B));
    assert_int_equal(edge(part, B, 2, B), 2);
    prof_ccmap_free(full);
    prof_ccmap_free(part);
}

static void test_prune_cold(void **state) {
    (void)state;
    ProfCCMap *m = prof_ccmap_new();
    for (int i = 0; i < 99; i++)
        add(m, 2, (uint64_t[]){A, B}, NULL, CC_NONE, NULL);
    add(m, 3, (uint64_t[]){A, C, D}, NULL, CC_NONE, NULL);
    prof_ccmap_set_name(m, B, "B()");
    assert_int_equal(m->nx, 4);
    assert_int_equal(sampo_ccmap_prune(m, 0.05), 2); /* C and D contexts */
    assert_int_equal(m->nx, 2);
    SampoMethodStat s;
    assert_int_equal(sampo_ccmap_method(m, B, &s), 0);
    assert_int_equal(s.self, 99);
    assert_string_equal(s.name, "B()");
    assert_int_equal(sampo_ccmap_method(m, D, &s), SAMPO_ENOTFOUND);
    sampo_ccmap_method(m, A, &s);
    assert_int_equal(s.total, 100);
    assert_int_equal(sampo_ccmap_total(m), 100);
    /* the pruned map keeps accepting samples */
    add(m, 2, (uint64_t[]){A, B}, NULL, CC_NONE, NULL);
    sampo_ccmap_method(m, B, &s);
    assert_int_equal(s.self, 100);
    prof_ccmap_free(m);
}

static void test_clone_is_independent(void **state) {
    (void)state;
    ProfCCMap *m = figure2(30, 31);
    ProfCCMap *c = prof_ccmap_clone(m);
    add(m, 2, (uint64_t[]){A, B}, NULL, CC_NONE, NULL);
    SampoMethodStat s;
    sampo_ccmap_method(c, A, &s);
    assert_int_equal(s.total, 1);
    sampo_ccmap_method(m, A, &s);
    assert_int_equal(s.total, 2);
    add(c, 2, (uint64_t[]){E, F}, NULL, CC_NONE, NULL); /* the clone grows on its own */
    assert_int_equal(sampo_ccmap_total(c), 3);
    prof_ccmap_free(c);
    prof_ccmap_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_figure2_general_nodes),
        cmocka_unit_test(test_figure2_contexts),
        cmocka_unit_test(test_monomorphic_sites),
        cmocka_unit_test(test_partial_equals_full),
        cmocka_unit_test(test_partial_bad_context),
        cmocka_unit_test(test_recursion_counted_once),
        cmocka_unit_test(test_fold_direct_recursion),
        cmocka_unit_test(test_fold_mutual_recursion),
        cmocka_unit_test(test_no_recursion_unchanged),
        cmocka_unit_test(test_bound_merges_into_caller),
        cmocka_unit_test(test_partial_from_folded_context),
        cmocka_unit_test(test_prune_cold),
        cmocka_unit_test(test_clone_is_independent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
