/* SPDX-License-Identifier: MIT */
/*
 * test_compare.c - Pearson correlation and Arnold-Ryder overlap on hand-computed cases,
 * including the Rotor paper's Figure 2 shapes (A->B->C->D vs E->B->C->F).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "compare.h"
#include "profile.h"

static void test_pearson(void **state) {
    (void)state;
    double a[] = {1, 2, 3}, b[] = {2, 4, 6}, c[] = {3, 2, 1}, d[] = {1, 0, 0}, e[] = {0, 1, 0};
    assert_float_equal(sp_pearson(a, b, 3), 1.0, 1e-12);
    assert_float_equal(sp_pearson(a, c, 3), -1.0, 1e-12);
    assert_float_equal(sp_pearson(d, e, 3), -0.5, 1e-12); /* sxy=-3/9, sxx=syy=6/9 */
    double k[] = {5, 5}, z[] = {1, 2};
    assert_float_equal(sp_pearson(k, k, 2), 1.0, 0); /* identical constants */
    assert_float_equal(sp_pearson(k, z, 2), 0.0, 0); /* zero variance */
    assert_float_equal(sp_pearson(a, b, 0), 0.0, 0);
    /* x = 1..4, y = 1,3,2,4: sxy = 4, sxx = syy = 5 -> 0.8 */
    double x[] = {1, 2, 3, 4}, y[] = {1, 3, 2, 4};
    assert_float_equal(sp_pearson(x, y, 4), 0.8, 1e-12);
}

/* Adds `weight` samples of the stack given root first by names. */
static void add_path(SpProfile *p, const char *const *root_first, int n, uint64_t weight) {
    uint32_t st[16];
    for (int i = 0; i < n; i++)
        st[n - 1 - i] = sp_frame_addv(p, SP_FRAME_VM_METHOD, root_first[i], NULL, 0, 0, NULL, 0);
    uint32_t t = p->nthreads ? 0 : sp_thread_add(p, 1, NULL);
    assert_int_equal(sp_sample_add(p, t, 0, st, (uint32_t)n, 0, weight, SP_VM_INTERPRETING), 0);
}

static const char *const ABCD[] = {"A", "B", "C", "D"}, *const EBCF[] = {"E", "B", "C", "F"};

static void test_overlap_figure2(void **state) {
    (void)state;
    SpProfile *a = sp_profile_new(SP_FLAVOUR_SAMPLED), *b = sp_profile_new(SP_FLAVOUR_SAMPLED);
    add_path(a, ABCD, 4, 3);
    add_path(a, EBCF, 4, 1);
    add_path(b, EBCF, 4, 1); /* different frame ids in b: matching is by name */
    add_path(b, ABCD, 4, 1);
    double ov;
    assert_int_equal(sp_overlap(a, b, &ov), 0);
    assert_float_equal(ov, 0.75, 1e-12); /* min(.75,.5) + min(.25,.5) */
    assert_int_equal(sp_overlap(a, a, &ov), 0);
    assert_float_equal(ov, 1.0, 1e-12);
    SpCompare r;
    assert_int_equal(sp_compare(a, b, &r), 0);
    assert_int_equal(r.nmethods, 6);
    /* self: A..F = [0,0,0,3,0,1] vs [0,0,0,1,0,1] (D and F leaves) */
    double x[] = {0, 0, 0, 3, 0, 1}, y[] = {0, 0, 0, 1, 0, 1};
    assert_float_equal(r.corr_self, sp_pearson(x, y, 6), 1e-12);
    assert_string_equal(r.diffs[0].name, "D");
    assert_float_equal(r.diffs[0].pct_a, 75.0, 1e-9);
    assert_float_equal(r.diffs[0].pct_b, 50.0, 1e-9);
    sp_compare_fini(&r);
    sp_profile_free(a);
    sp_profile_free(b);
}

static void test_overlap_context_sensitive(void **state) {
    (void)state;
    /* Same leaf method, different callers: method counters agree, contexts do not. */
    SpProfile *a = sp_profile_new(SP_FLAVOUR_SAMPLED), *b = sp_profile_new(SP_FLAVOUR_SAMPLED);
    const char *const xl[] = {"X", "L"}, *const yl[] = {"Y", "L"};
    add_path(a, xl, 2, 5);
    add_path(b, yl, 2, 5);
    double ov;
    assert_int_equal(sp_overlap(a, b, &ov), 0);
    assert_float_equal(ov, 0.0, 0);
    sp_profile_free(a);
    sp_profile_free(b);
}

static void test_overlap_exact_tree(void **state) {
    (void)state;
    /* Producer-supplied trees (exact flavour, no samples) are compared as given. */
    SpProfile *a = sp_profile_new(SP_FLAVOUR_EXACT), *b = sp_profile_new(SP_FLAVOUR_SAMPLED);
    uint32_t m = sp_frame_addv(a, SP_FRAME_VM_METHOD, "M", NULL, 0, 0, NULL, 0);
    uint32_t k = sp_frame_addv(a, SP_FRAME_VM_METHOD, "K", NULL, 0, 0, NULL, 0);
    uint32_t n0 = sp_cc_node_add(a, SP_NONE, m, 0, 1, 4, 0);
    sp_cc_node_add(a, n0, k, 0, 3, 3, 0);
    const char *const mk[] = {"M", "K"}, *const mm[] = {"M"};
    add_path(b, mk, 2, 1);
    add_path(b, mm, 1, 1);
    double ov;
    assert_int_equal(sp_overlap(a, b, &ov), 0);
    assert_float_equal(ov, 0.25 + 0.5, 1e-12); /* M: min(.25,.5), M;K: min(.75,.5) */
    sp_profile_free(a);
    sp_profile_free(b);
}

static void test_overlap_time_weighted(void **state) {
    (void)state;
    /* exact: M (1 call, 10 ns inclusive) -> K (1000 calls, 6 ns): self times 4 and 6 */
    SpProfile *a = sp_profile_new(SP_FLAVOUR_EXACT), *b = sp_profile_new(SP_FLAVOUR_SAMPLED);
    uint32_t m = sp_frame_addv(a, SP_FRAME_VM_METHOD, "M", NULL, 0, 0, NULL, 0);
    uint32_t k = sp_frame_addv(a, SP_FRAME_VM_METHOD, "K", NULL, 0, 0, NULL, 0);
    uint32_t n0 = sp_cc_node_add(a, SP_NONE, m, 0, 1, 1001, 10);
    sp_cc_node_add(a, n0, k, 0, 1000, 1000, 6);
    sp_cc_method_add(a, m, 1, 1001, 4, 10);
    sp_cc_method_add(a, k, 1000, 1000, 6, 6);
    const char *const mk[] = {"M", "K"}, *const mm[] = {"M"};
    add_path(b, mk, 2, 1);
    add_path(b, mm, 1, 1);
    assert_true(sp_has_times(a));
    assert_false(sp_has_times(b));
    double ov;
    assert_int_equal(sp_overlap_ex(a, b, 1, &ov), 0);
    assert_float_equal(ov, 0.4 + 0.5, 1e-12);
    assert_int_equal(sp_overlap_ex(a, b, 0, &ov), 0);
    assert_float_equal(ov, 1.0 / 1001 + 0.5, 1e-12);
    SpCompare r;
    assert_int_equal(sp_compare_ex(a, b, 1, &r), 0);
    assert_float_equal(r.corr_self, sp_pearson((double[]){4, 6}, (double[]){1, 1}, 2), 1e-12);
    sp_compare_fini(&r);
    sp_profile_free(a);
    sp_profile_free(b);
}

/* Recursion is folded before paths are matched: a sampled profile with the full recursion
 * (R;F;F;F;F;G) and one from a folded tree (R;F;F;G) agree completely, while an edge that
 * does not repeat (R;F;G vs R;F;F;G) still differs. */
static void test_overlap_folds_recursion(void **state) {
    (void)state;
    static const char *const deep[] = {"R", "F", "F", "F", "F", "G"};
    static const char *const folded[] = {"R", "F", "F", "G"};
    static const char *const flat[] = {"R", "F", "G"};
    SpProfile *a = sp_profile_new(SP_FLAVOUR_SAMPLED), *b = sp_profile_new(SP_FLAVOUR_SAMPLED);
    SpProfile *c = sp_profile_new(SP_FLAVOUR_SAMPLED);
    add_path(a, deep, 6, 2);
    add_path(a, deep, 3, 2); /* R;F;F */
    add_path(b, folded, 4, 1);
    add_path(b, folded, 3, 1);
    add_path(c, flat, 3, 1);
    double ov;
    assert_int_equal(sp_overlap(a, b, &ov), 0);
    assert_float_equal(ov, 1.0, 1e-12);
    assert_int_equal(sp_overlap(b, c, &ov), 0);
    assert_float_equal(ov, 0.0, 1e-12);
    sp_profile_free(a);
    sp_profile_free(b);
    sp_profile_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pearson),
        cmocka_unit_test(test_overlap_figure2),
        cmocka_unit_test(test_overlap_context_sensitive),
        cmocka_unit_test(test_overlap_exact_tree),
        cmocka_unit_test(test_overlap_time_weighted),
        cmocka_unit_test(test_overlap_folds_recursion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
