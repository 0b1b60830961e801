/* SPDX-License-Identifier: MIT */
/*
 * test_ccjson.c - the CC-Map JSON dump reader: a valid dump (Figure 2 shapes, escapes,
 * optional members) and rejections with "LINE:COL: expected X, got Y".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ccjson.h"
#include "profile.h"

static const char dump[] =
    "{\"format\": \"sampo-ccmap\", \"version\": 1, \"flavour\": \"exact\",\n"
    " \"meta\": {\"command\": \"som x\", \"threads\": 2, \"ignored\": \"a\\\"b\"},\n"
    " \"methods\": [{\"name\": \"A>>run\", \"file\": \"F.som\", \"line\": 3, \"self\": 1, "
    "\"total\": 4},\n"
    "             {\"name\": \"B>>x\\u00e9\\n\", \"self\": 3, \"total\": 3, \"self_ns\": 7}],\n"
    " \"edges\": [{\"caller\": 0, \"callsite\": 5, \"callee\": 1, \"count\": 3}],\n"
    " \"nodes\": [{\"parent\": -1, \"method\": 0, \"self\": 1, \"total\": 4},\n"
    "           {\"parent\": 0, \"method\": 1, \"callsite\": 5, \"self\": 3, \"total\": 3,"
    " \"time_ns\": 9}]}\n";

static void test_valid(void **state) {
    (void)state;
    SpProfile *p;
    char err[256];
    assert_true(sp_ccjson_sniff(dump, sizeof dump - 1));
    assert_false(sp_ccjson_sniff("SAMPOPRF", 8));
    assert_int_equal(sp_ccjson_decode(dump, sizeof dump - 1, &p, err, sizeof err), 0);
    assert_int_equal(p->flavour, SP_FLAVOUR_EXACT);
    assert_int_equal(p->nframes, 2);
    assert_int_equal(p->frames[0].kind, SP_FRAME_VM_METHOD);
    assert_string_equal(sp_str(p, p->frames[0].file), "F.som");
    assert_int_equal(p->frames[0].line, 3);
    assert_string_equal(sp_str(p, p->frames[1].name), "B>>x\xc3\xa9\n");
    assert_string_equal(sp_meta_get(p, "threads"), "2");
    assert_string_equal(sp_meta_get(p, "ignored"), "a\"b");
    assert_true(p->cc.present);
    assert_int_equal(p->cc.nmethods, 2);
    assert_int_equal(p->cc.methods[1].self_ns, 7);
    assert_int_equal(p->cc.nedges, 1);
    assert_int_equal(p->cc.edges[0].callsite, 5);
    assert_int_equal(p->cc.nnodes, 2);
    assert_int_equal(p->cc.nodes[0].parent, SP_NONE);
    assert_int_equal(p->cc.nodes[1].parent, 0);
    assert_int_equal(p->cc.nodes[1].time_ns, 9);
    sp_profile_free(p);
}

/* A writer that named one method twice (two entries with the same name, file and line): one
 * method with the counts of both; edges and nodes naming the second entry name the first, and
 * the entry after them keeps its own frame. */
static void test_duplicate_method(void **state) {
    (void)state;
    static const char dup[] =
        "{\"format\": \"sampo-ccmap\", \"version\": 1, \"flavour\": \"sampled\",\n"
        " \"methods\": [{\"name\": \"A>>run\", \"self\": 1, \"total\": 9},\n"
        "  {\"name\": \"H>>unit\", \"file\": \"H.som\", \"line\": 4, \"self\": 3, \"total\": 3},\n"
        "  {\"name\": \"H>>unit\", \"file\": \"H.som\", \"line\": 4, \"self\": 2, \"total\": 2},\n"
        "  {\"name\": \"H>>cold\", \"self\": 1, \"total\": 1}],\n"
        " \"edges\": [{\"caller\": 0, \"callsite\": 5, \"callee\": 2, \"count\": 2},\n"
        "            {\"caller\": 0, \"callsite\": 7, \"callee\": 3, \"count\": 1}],\n"
        " \"nodes\": [{\"parent\": -1, \"method\": 0, \"self\": 1, \"total\": 9},\n"
        "           {\"parent\": 0, \"method\": 2, \"callsite\": 5, \"self\": 2, \"total\": 2},\n"
        "           {\"parent\": 0, \"method\": 3, \"callsite\": 7, \"self\": 1, \"total\": 1}]}\n";
    SpProfile *p;
    char err[256];
    int rc = sp_ccjson_decode(dup, sizeof dup - 1, &p, err, sizeof err);
    if (rc) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(p->nframes, 3);
    assert_int_equal(p->cc.nmethods, 3);
    assert_int_equal(p->cc.methods[1].frame, 1);
    assert_int_equal(p->cc.methods[1].self, 5);
    assert_int_equal(p->cc.methods[1].total, 5);
    assert_int_equal(p->cc.edges[0].callee, 1);
    assert_int_equal(p->cc.edges[1].callee, 2);
    assert_string_equal(sp_str(p, p->frames[2].name), "H>>cold");
    assert_int_equal(p->cc.nodes[1].frame, 1);
    assert_int_equal(p->cc.nodes[2].frame, 2);
    sp_profile_free(p);
}

static void expect(const char *text, const char *msg) {
    SpProfile *p = (SpProfile *)1;
    char err[256];
    assert_int_equal(sp_ccjson_decode(text, strlen(text), &p, err, sizeof err), -1);
    assert_null(p);
    if (strcmp(err, msg)) fail_msg("got '%s', expected '%s'", err, msg);
}

static void test_errors(void **state) {
    (void)state;
    expect("", "1:1: expected a value, got end of input");
    expect("{\"a\" 1}", "1:6: expected ':' after the member name, got '1'");
    expect("{\"a\": [1, 2}", "1:12: expected ',' or ']', got '}'");
    expect("{\"a\": \"x\\q\"}",
           "1:10: expected an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX), got 'q'");
    expect("{\"format\": \"other\"}",
           "1:12: expected \"format\": \"sampo-ccmap\", got another value");
    expect("{\"format\": \"sampo-ccmap\"}",
           "1:1: expected member \"version\", got an object without it");
    expect("{\"format\": \"sampo-ccmap\", \"version\": 2}",
           "1:38: expected version 1, got another version");
    expect("{\"format\": \"sampo-ccmap\", \"version\": 1,\n \"methods\": [{\"self\": 1}]}",
           "2:14: expected member \"name\" as a string, got none");
    expect(
        "{\"format\": \"sampo-ccmap\", \"version\": 1, \"methods\": [],\n"
        " \"edges\": [{\"caller\": 0, \"callee\": 0, \"count\": 1}]}",
        "2:23: expected \"caller\" to refer to an entry, but there are none, got another number");
    expect(
        "{\"format\": \"sampo-ccmap\", \"version\": 1, \"methods\": [{\"name\": \"a\", "
        "\"self\": 0, \"total\": 0}],\n \"nodes\": [{\"parent\": 0, \"method\": 0, \"self\": 1, "
        "\"total\": 1}]}",
        "2:23: expected \"parent\" to refer to an entry, but there are none, got another number");
    expect("{\"format\": \"sampo-ccmap\", \"version\": 1} x",
           "1:41: expected end of input after the top-level object, got 'x'");
    char deep[200];
    memset(deep, '[', sizeof deep);
    deep[sizeof deep - 1] = 0;
    expect(deep, "1:66: expected nesting depth <= 64, got deeper nesting");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_duplicate_method),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
