/* SPDX-License-Identifier: MIT */
/*
 * test_export.c - byte-exact tests of the exporters on fixed profiles: collapsed and
 * speedscope spelled out by hand, pprof against pinned bytes (tests/e2e/interop checks
 * every field with go tool pprof), units, UTF-8 cuts, demangling, gzip round trip, and golden files
 * (tests/unit/analysis/golden, reviewed by eye as PNG) for the report and the SVG writers.
 * SAMPO_UPDATE_GOLDEN=1 rewrites the golden files.
 */
#define _GNU_SOURCE /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "export.h"
#include "fixture.h"
#include "flame.h"
#include "hist.h"
#include "pprof.h"
#include "profile.h"
#include "profile_io.h"
#include "report.h"
#include "timeline.h"

#ifndef GOLDEN_DIR
#error "GOLDEN_DIR must be defined by the build"
#endif

static void assert_buf_str(const SpBuf *b, const char *expect) {
    size_t n = strlen(expect);
    if (b->len != n || memcmp(b->data, expect, n) != 0)
        fail_msg("got:\n%.*s\nexpected:\n%s", (int)b->len, (const char *)b->data, expect);
}

static void test_collapsed(void **state) {
    (void)state;
    SpProfile *p = fixture_new();
    SpBuf b;
    sp_buf_init(&b);
    assert_int_equal(sp_export_collapsed(p, &b), 0);
    /* nanoseconds: the fixture's interval is 1 ms, then 2 ms after its rate change */
    assert_buf_str(&b, "main;work 2000000\nmain;work;leaf_a 3000000\nmain;work;leaf_b 3000000\n");
    sp_buf_fini(&b);
    sp_profile_free(p);
}

static void test_collapsed_unnamed_and_semicolon(void **state) {
    (void)state;
    SpProfile *p = sp_profile_new(SP_FLAVOUR_SAMPLED);
    uint32_t a = sp_frame_addv(p, SP_FRAME_NATIVE, "", "/lib/libx.so", 0xabc, 0, NULL, 0);
    uint32_t b = sp_frame_addv(p, SP_FRAME_VM_METHOD, "Foo>>a;b", NULL, 0, 0, NULL, 0);
    uint32_t t = sp_thread_add(p, 1, NULL), st[] = {a, b};
    sp_sample_add(p, t, 0, st, 2, 0, 7, SP_VM_NONE);
    SpBuf o;
    sp_buf_init(&o);
    assert_int_equal(sp_export_collapsed(p, &o), 0);
    assert_buf_str(&o, "Foo>>a%3Bb;0xabc [libx.so] 7000000\n"); /* ';' escaped, 7 x 1 ms */
    sp_buf_fini(&o);
    sp_profile_free(p);
}

static void test_collapsed_merges_callsites(void **state) {
    (void)state;
    SpProfile *p = sp_profile_new(SP_FLAVOUR_EXACT);
    uint32_t m = sp_frame_addv(p, SP_FRAME_VM_METHOD, "M>>run", NULL, 0, 0, NULL, 0);
    uint32_t k = sp_frame_addv(p, SP_FRAME_VM_METHOD, "K>>m", NULL, 0, 0, NULL, 0);
    uint32_t root = sp_cc_node_add(p, SP_NONE, m, 0, 1, 1006, 0);
    sp_cc_node_add(p, root, k, 3, 1000, 1000, 0); /* two call sites, one name path */
    sp_cc_node_add(p, root, k, 9, 5, 5, 0);
    SpBuf b;
    sp_buf_init(&b);
    assert_int_equal(sp_export_collapsed(p, &b), 0);
    assert_buf_str(&b, "M>>run 1\nM>>run;K>>m 1005\n");
    sp_buf_fini(&b);
    sp_profile_free(p);
}

static void test_speedscope(void **state) {
    (void)state;
    SpProfile *p = fixture_new();
    SpBuf b;
    sp_buf_init(&b);
    assert_int_equal(sp_export_speedscope(p, &b), 0);
    assert_buf_str(
        &b, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
            "\"exporter\":\"sampo\",\"name\":\"sampo profile\",\"activeProfileIndex\":0,"
            "\"shared\":{\"frames\":[{\"name\":\"main\",\"file\":\"app.c\",\"line\":10},"
            "{\"name\":\"work\"},{\"name\":\"leaf_a\"},{\"name\":\"leaf_b\"}]},\"profiles\":["
            "{\"type\":\"sampled\",\"name\":\"main (tid 100)\",\"unit\":\"nanoseconds\","
            "\"startValue\":0,\"samples\":[[0,1,2],[0,1,2],[0,1,2],[0,1]],"
            "\"weights\":[1000000,1000000,1000000,2000000],\"endValue\":5000000},"
            "{\"type\":\"sampled\",\"name\":\"worker (tid 101)\",\"unit\":\"nanoseconds\","
            "\"startValue\":0,\"samples\":[[0,1,3],[0,1,3]],\"weights\":[1000000,2000000],"
            "\"endValue\":3000000}]}\n");
    sp_buf_fini(&b);
    sp_profile_free(p);
}

/* UTF-8 prefixes never end inside a character. */
static void test_utf8_prefix(void **state) {
    (void)state;
    const char *s = "a\xce\xa9\xe2\x82\xac"; /* a, Omega (2 bytes), Euro (3 bytes) */
    assert_int_equal(sp_utf8_prefix(s, 0), 0);
    assert_int_equal(sp_utf8_prefix(s, 1), 1);
    assert_int_equal(sp_utf8_prefix(s, 2), 1); /* not half an Omega */
    assert_int_equal(sp_utf8_prefix(s, 3), 3);
    assert_int_equal(sp_utf8_prefix(s, 4), 3);
    assert_int_equal(sp_utf8_prefix(s, 5), 3);
    assert_int_equal(sp_utf8_prefix(s, 6), 6);
    assert_int_equal(sp_utf8_prefix(s, 100), 6);
}

/* Units: exact -> calls, META unit nanoseconds -> time, else samples; wall from META mode. */
static void test_units(void **state) {
    (void)state;
    SpProfile *p = sp_profile_new(SP_FLAVOUR_SAMPLED);
    assert_int_equal(sp_weight_unit(p), SP_UNIT_SAMPLES);
    assert_string_equal(sp_time_kind(p), "cpu");
    assert_int_equal(sp_interval_ns(p), 1000000); /* unknown: 1 ms */
    sp_meta_set(p, "mode", "wall");
    sp_meta_setu(p, "requested_hz", 250);
    assert_string_equal(sp_time_kind(p), "wall");
    assert_int_equal(sp_interval_ns(p), 4000000);
    sp_meta_set(p, "unit", "nanoseconds of self time");
    assert_int_equal(sp_weight_unit(p), SP_UNIT_NANOS);
    assert_string_equal(sp_unit_type(SP_UNIT_NANOS), "time");
    sp_meta_set(p, "unit", "invocations");
    assert_int_equal(sp_weight_unit(p), SP_UNIT_CALLS);
    sp_profile_free(p);
    p = sp_profile_new(SP_FLAVOUR_EXACT);
    assert_int_equal(sp_weight_unit(p), SP_UNIT_CALLS);
    sp_profile_free(p);
}

/* A .time profile: speedscope in nanoseconds, pprof's only value type time/nanoseconds. */
static void test_time_profile_units(void **state) {
    (void)state;
    SpProfile *p = sp_profile_new(SP_FLAVOUR_SAMPLED);
    uint32_t f = sp_frame_addv(p, SP_FRAME_VM_METHOD, "A>>b", NULL, 0, 0, NULL, 0);
    uint32_t t = sp_thread_add(p, 1, "vm");
    sp_meta_set(p, "unit", "nanoseconds of self time");
    sp_sample_add(p, t, 0, &f, 1, 0, 123456789, SP_VM_INTERPRETING);
    SpBuf b;
    sp_buf_init(&b);
    assert_int_equal(sp_export_speedscope(p, &b), 0);
    sp_buf_u8(&b, 0);
    assert_non_null(strstr((const char *)b.data, "\"unit\":\"nanoseconds\""));
    assert_non_null(strstr((const char *)b.data, "\"weights\":[123456789]"));
    b.len = 0;
    assert_int_equal(sp_export_collapsed(p, &b), 0);
    assert_buf_str(&b, "A>>b 123456789\n"); /* not multiplied by an interval */
    b.len = 0;
    assert_int_equal(sp_pprof_encode(p, &b), 0);
    /* the string table holds "time" and "nanoseconds" but neither "samples" nor "cpu" */
    assert_non_null(memmem(b.data, b.len, "\x04time", 5));
    assert_non_null(memmem(b.data, b.len, "\x0bnanoseconds", 12));
    assert_null(memmem(b.data, b.len, "\x07samples", 8));
    assert_null(memmem(b.data, b.len, "\x03cpu", 4));
    sp_buf_fini(&b);
    sp_profile_free(p);
}

/* Demangling: C++, Rust legacy (hash dropped), a @plt suffix kept, C names untouched; the
 * pprof system name stays the recorded one. */
static void test_demangle(void **state) {
    (void)state;
    SpProfile *p = sp_profile_new(SP_FLAVOUR_SAMPLED);
    uint32_t a = sp_frame_addv(p, SP_FRAME_NATIVE, "_ZN2ns1fEi", "x", 0x10, 1, NULL, 0);
    uint32_t b = sp_frame_addv(p, SP_FRAME_NATIVE, "_ZN4core3fmt5write17h0123456789abcdefE", "x",
                               0x20, 1, NULL, 0);
    uint32_t c = sp_frame_addv(p, SP_FRAME_NATIVE, "_Z3foov@plt", "x", 0x30, 1, NULL, 0);
    uint32_t d = sp_frame_addv(p, SP_FRAME_NATIVE, "main", "x", 0x40, 1, NULL, 0);
    int n = sp_profile_demangle(p);
    if (n == 0) skip(); /* no C++ runtime in this process or on this system */
    assert_int_equal(n, 3);
    assert_string_equal(sp_str(p, p->frames[a].name), "ns::f(int)");
    assert_string_equal(sp_str(p, p->frames[b].name), "core::fmt::write");
    assert_string_equal(sp_str(p, p->frames[c].name), "foo()@plt");
    assert_string_equal(sp_str(p, p->frames[d].name), "main");
    assert_string_equal(sp_str(p, sp_frame_system_name(p, a)), "_ZN2ns1fEi");
    assert_string_equal(sp_str(p, sp_frame_system_name(p, d)), "main");
    /* frames are still found by their (new) identity */
    assert_int_equal(sp_frame_addv(p, SP_FRAME_NATIVE, "ns::f(int)", "x", 0x10, 1, NULL, 0), a);
    sp_profile_free(p);
}

static void test_json_escape(void **state) {
    (void)state;
    SpBuf b;
    sp_buf_init(&b);
    sp_json_string(&b, "a\"b\\c\n\x01");
    assert_buf_str(&b, "\"a\\\"b\\\\c\\u000a\\u0001\"");
    b.len = 0;
    sp_xml_text(&b, "<a&b>\"");
    assert_buf_str(&b, "&lt;a&amp;b&gt;&quot;");
    sp_buf_fini(&b);
}

/* The message for the one-sample profile below, as `go tool pprof -raw` reads it
 * (tests/e2e/interop checks every field against the real tool; these bytes pin the encoding):
 * value types samples/count + cpu/nanoseconds, one sample [1, 1000000] at location 2 (the
 * sampled PC 0x12 inside f, which starts at 0x10), label tid=7, period 1 ms, two comments. */
static const uint8_t pprof_golden[] = {
    0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x0a, 0x04, 0x08, 0x03, 0x10, 0x04, 0x12, 0x0f, 0x0a, 0x01,
    0x02, 0x12, 0x04, 0x01, 0xc0, 0x84, 0x3d, 0x1a, 0x04, 0x08, 0x05, 0x18, 0x07, 0x22, 0x08, 0x08,
    0x01, 0x18, 0x10, 0x22, 0x02, 0x08, 0x01, 0x22, 0x08, 0x08, 0x02, 0x18, 0x12, 0x22, 0x02, 0x08,
    0x01, 0x2a, 0x08, 0x08, 0x01, 0x10, 0x06, 0x18, 0x06, 0x20, 0x00, 0x5a, 0x04, 0x08, 0x03, 0x10,
    0x04, 0x60, 0xc0, 0x84, 0x3d, 0x68, 0x07, 0x68, 0x08, 0x32, 0x00, 0x32, 0x07, 0x73, 0x61, 0x6d,
    0x70, 0x6c, 0x65, 0x73, 0x32, 0x05, 0x63, 0x6f, 0x75, 0x6e, 0x74, 0x32, 0x03, 0x63, 0x70, 0x75,
    0x32, 0x0b, 0x6e, 0x61, 0x6e, 0x6f, 0x73, 0x65, 0x63, 0x6f, 0x6e, 0x64, 0x73, 0x32, 0x03, 0x74,
    0x69, 0x64, 0x32, 0x01, 0x66, 0x32, 0x5b, 0x73, 0x61, 0x6d, 0x70, 0x6f, 0x20, 0x77, 0x65, 0x69,
    0x67, 0x68, 0x74, 0x73, 0x3a, 0x20, 0x73, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x73, 0x3b, 0x20, 0x74,
    0x68, 0x65, 0x20, 0x73, 0x65, 0x63, 0x6f, 0x6e, 0x64, 0x20, 0x76, 0x61, 0x6c, 0x75, 0x65, 0x20,
    0x69, 0x73, 0x20, 0x65, 0x61, 0x63, 0x68, 0x20, 0x73, 0x61, 0x6d, 0x70, 0x6c, 0x65, 0x27, 0x73,
    0x20, 0x69, 0x6e, 0x74, 0x65, 0x72, 0x76, 0x61, 0x6c, 0x20, 0x69, 0x6e, 0x20, 0x66, 0x6f, 0x72,
    0x63, 0x65, 0x20, 0x28, 0x74, 0x69, 0x6d, 0x65, 0x2d, 0x77, 0x65, 0x69, 0x67, 0x68, 0x74, 0x65,
    0x64, 0x29, 0x32, 0x3e, 0x72, 0x61, 0x74, 0x65, 0x3a, 0x20, 0x72, 0x65, 0x71, 0x75, 0x65, 0x73,
    0x74, 0x65, 0x64, 0x20, 0x3f, 0x20, 0x48, 0x7a, 0x2c, 0x20, 0x64, 0x65, 0x6c, 0x69, 0x76, 0x65,
    0x72, 0x65, 0x64, 0x20, 0x3f, 0x2c, 0x20, 0x69, 0x6e, 0x69, 0x74, 0x69, 0x61, 0x6c, 0x20, 0x69,
    0x6e, 0x74, 0x65, 0x72, 0x76, 0x61, 0x6c, 0x20, 0x31, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x20,
    0x6e, 0x73,
};

static void test_pprof_bytes(void **state) {
    (void)state;
    SpProfile *p = sp_profile_new(SP_FLAVOUR_SAMPLED);
    uint32_t f = sp_frame_addv(p, SP_FRAME_NATIVE, "f", NULL, 0x10, 4, NULL, 0);
    uint32_t t = sp_thread_add(p, 7, NULL);
    sp_sample_add(p, t, 5, &f, 1, 0x12, 1, SP_VM_NONE);
    SpBuf b;
    sp_buf_init(&b);
    assert_int_equal(sp_pprof_encode(p, &b), 0);
    assert_int_equal(b.len, sizeof pprof_golden);
    assert_memory_equal(b.data, pprof_golden, sizeof pprof_golden);
    /* the gzip wrapper inflates back to the same message */
    SpBuf z;
    sp_buf_init(&z);
    assert_int_equal(sp_gzip(b.data, b.len, &z), 0);
    assert_int_equal(z.data[0], 0x1f);
    assert_int_equal(z.data[1], 0x8b);
    uint8_t back[1024];
    z_stream s;
    memset(&s, 0, sizeof s);
    assert_int_equal(inflateInit2(&s, 16 + 15), Z_OK);
    s.next_in = z.data, s.avail_in = (uInt)z.len, s.next_out = back, s.avail_out = sizeof back;
    assert_int_equal(inflate(&s, Z_FINISH), Z_STREAM_END);
    assert_int_equal(s.total_out, b.len);
    assert_memory_equal(back, b.data, b.len);
    inflateEnd(&s);
    sp_buf_fini(&z);
    sp_buf_fini(&b);
    sp_profile_free(p);
}

static void test_pb_varint(void **state) {
    (void)state;
    SpBuf b;
    sp_buf_init(&b);
    pb_varint(&b, 300);
    pb_field_varint(&b, 12, 1);
    pb_field_bytes(&b, 6, "hi", 2);
    sp_buf_uleb(&b, UINT64_MAX);
    const uint8_t expect[] = {0xac, 0x02, 0x60, 0x01, 0x32, 0x02, 'h',  'i',  0xff,
                              0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    assert_int_equal(b.len, sizeof expect);
    assert_memory_equal(b.data, expect, sizeof expect);
    sp_buf_fini(&b);
}

/* Compares out with GOLDEN_DIR/name (or rewrites it under SAMPO_UPDATE_GOLDEN=1). */
static void golden(const SpBuf *out, const char *name) {
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/%s", GOLDEN_DIR, name);
    const char *upd = getenv("SAMPO_UPDATE_GOLDEN");
    if (upd && *upd == '1') {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        fwrite(out->data, 1, out->len, f);
        fclose(f);
        return;
    }
    uint8_t *d;
    size_t n;
    if (sp_read_file(path, &d, &n, err, sizeof err)) fail_msg("%s", err);
    if (n != out->len || memcmp(d, out->data, n) != 0)
        fail_msg("%s differs from the golden file (%zu vs %zu bytes)", name, out->len, n);
    free(d);
}

static void test_golden_report(void **state) {
    (void)state;
    SpProfile *p = fixture_new();
    SpReportOpts o;
    SpBuf b;
    sp_report_opts_default(&o);
    sp_buf_init(&b);
    assert_int_equal(sp_report(p, &o, &b), 0);
    golden(&b, "fixture-report.txt");
    sp_buf_fini(&b);
    sp_profile_free(p);
}

static void test_golden_flame(void **state) {
    (void)state;
    SpProfile *p = fixture_new();
    SpFlameOpts o;
    SpBuf b;
    sp_flame_opts_default(&o);
    sp_buf_init(&b);
    assert_int_equal(sp_flame_svg(p, &o, &b), 0);
    golden(&b, "fixture-flame.svg");
    sp_buf_fini(&b);
    sp_profile_free(p);
}

static void test_golden_hist(void **state) {
    (void)state;
    SpProfile *p = fixture_new();
    SpHistOpts o;
    SpBuf b;
    char err[256];
    sp_hist_opts_default(&o);
    o.bins = 32;
    sp_buf_init(&b);
    assert_int_equal(sp_hist_svg(p, &o, &b, err, sizeof err), 0);
    golden(&b, "fixture-hist.svg");
    /* legend shares equal the flat profile's self shares (exact per symbol, not per bin) */
    sp_buf_u8(&b, 0);
    assert_non_null(strstr((char *)b.data, "</tspan>  leaf_a  50.0%<"));
    assert_non_null(strstr((char *)b.data, "</tspan>  work  16.7%<"));
    assert_non_null(strstr((char *)b.data, "</tspan>  leaf_b  33.3%<"));
    b.len = 0;
    o.symbol = "nope";
    assert_int_equal(sp_hist_svg(p, &o, &b, err, sizeof err), -2);
    assert_string_equal(err, "unknown symbol 'nope' (no symbol or sized frame has that name)");
    sp_buf_fini(&b);
    sp_profile_free(p);
}

static void test_golden_timeline(void **state) {
    (void)state;
    SpProfile *p = fixture_new();
    SpTimelineOpts o;
    SpBuf b;
    char err[256];
    sp_timeline_opts_default(&o);
    o.buckets = 10;
    sp_buf_init(&b);
    assert_int_equal(sp_timeline_svg(p, &o, &b, err, sizeof err), 0);
    golden(&b, "fixture-timeline.svg");
    sp_buf_fini(&b);
    sp_profile_free(p);
    SpProfile *e = sp_profile_new(SP_FLAVOUR_EXACT);
    /* som --prof=exact stores one sample per context, weight = invocations, time 0 */
    uint32_t fr = sp_frame_addv(e, SP_FRAME_NATIVE, "fib", NULL, 0, 0, NULL, 0);
    uint32_t th = sp_thread_add(e, 1, "main");
    assert_int_equal(sp_sample_add(e, th, 0, &fr, 1, 0, 22158, SP_VM_INTERPRETING), 0);
    sp_buf_init(&b);
    assert_int_equal(sp_timeline_svg(e, &o, &b, err, sizeof err), -2);
    assert_string_equal(err, "an exact profile counts invocations per calling context and has "
                             "no samples over time, so there is no timeline to draw (use sampo "
                             "report or sampo flame)");
    sp_buf_fini(&b);
    sp_profile_free(e);
    SpProfile *s = sp_profile_new(SP_FLAVOUR_SAMPLED);
    sp_buf_init(&b);
    assert_int_equal(sp_timeline_svg(s, &o, &b, err, sizeof err), -2);
    assert_string_equal(err, "the profile has no samples and no events to plot");
    sp_buf_fini(&b);
    sp_profile_free(s);
}

/* main -> fib -> fib -> ... (depth 40) -> leaf, plus main -> a -> b -> a -> b (indirect). */
static SpProfile *recursive_profile(void) {
    SpProfile *p = sp_profile_new(SP_FLAVOUR_SAMPLED);
    uint32_t m = sp_frame_addv(p, SP_FRAME_NATIVE, "main", "/bin/app", 0, 0, NULL, 0);
    uint32_t f = sp_frame_addv(p, SP_FRAME_NATIVE, "fib", "/bin/app", 0, 0, NULL, 0);
    uint32_t l = sp_frame_addv(p, SP_FRAME_NATIVE, "leaf", "/lib/libm.so", 0, 0, NULL, 0);
    uint32_t a = sp_frame_addv(p, SP_FRAME_NATIVE, "ping", "/bin/app", 0, 0, NULL, 0);
    uint32_t b = sp_frame_addv(p, SP_FRAME_NATIVE, "pong", "/bin/app", 0, 0, NULL, 0);
    uint32_t t = sp_thread_add(p, 1, "main"), st[64];
    for (uint32_t d = 1; d <= 40; d++) { /* leaf, fib x d, main */
        uint32_t n = 0;
        st[n++] = l;
        for (uint32_t k = 0; k < d; k++)
            st[n++] = f;
        st[n++] = m;
        assert_int_equal(sp_sample_add(p, t, d, st, n, 0, 1, SP_VM_INTERPRETING), 0);
        assert_int_equal(sp_sample_add(p, t, d, st + 1, n - 1, 0, 1, SP_VM_GC), 0);
    }
    uint32_t s2[] = {b, a, b, a, m};
    for (int i = 0; i < 20; i++)
        assert_int_equal(sp_sample_add(p, t, 100, s2, 5, 0, 1, SP_VM_PRIMITIVE), 0);
    return p;
}

static char *report_text(SpProfile *p, const SpReportOpts *o) {
    SpBuf b;
    sp_buf_init(&b);
    assert_int_equal(sp_report(p, o, &b), 0);
    sp_buf_u8(&b, 0);
    return (char *)b.data; /* the caller frees */
}

static int count_lines_with(const char *text, const char *needle) {
    int n = 0;
    for (const char *s = text; (s = strstr(s, needle)); s++)
        n++;
    return n;
}

static void test_report_recursion_folded(void **state) {
    (void)state;
    SpProfile *p = recursive_profile();
    SpReportOpts o;
    sp_report_opts_default(&o);
    o.sections = SP_REPORT_TREE;
    o.tree_min = 0;
    char *t = report_text(p, &o);
    /* one fib line (marked), not 40 nested ones; ping and pong once each */
    assert_int_equal(count_lines_with(t, " fib"), 1);
    assert_non_null(strstr(t, "  fib (recursive, folded)\n"));
    assert_int_equal(count_lines_with(t, " ping"), 1);
    assert_int_equal(count_lines_with(t, " pong (recursive, folded)"), 1);
    /* fib keeps its weight: 80 of 100 samples inclusive, 40 self (the GC samples) */
    assert_non_null(strstr(t, " 80.00%  40.00%   fib (recursive, folded)\n"));
    assert_non_null(strstr(t, " 40.00%  40.00%     leaf\n"));
    assert_null(strstr(t, "## flat"));
    assert_null(strstr(t, "## top call edges"));
    free(t);
    sp_profile_free(p);
}

static void test_report_sort_min_sections(void **state) {
    (void)state;
    SpProfile *p = recursive_profile();
    SpReportOpts o;
    sp_report_opts_default(&o);
    o.sections = SP_REPORT_FLAT;
    char *t = report_text(p, &o);
    /* by self: fib 40, leaf 40, pong 20 (main 0 self) */
    assert_non_null(strstr(t, "by self"));
    assert_true(strstr(t, "  pong") < strstr(t, "  main"));
    free(t);
    o.sort_total = 1;
    t = report_text(p, &o);
    assert_non_null(strstr(t, "by total"));
    assert_true(strstr(t, "  main") < strstr(t, "  fib"));
    assert_true(strstr(t, "  fib") < strstr(t, "  pong"));
    assert_null(strstr(t, "## call tree"));
    free(t);
    o.sort_total = 0;
    o.min_pct = 30; /* fib and leaf (40%) stay, pong (20%) and main (0%) go */
    t = report_text(p, &o);
    assert_non_null(strstr(t, "  fib"));
    assert_null(strstr(t, "  pong"));
    assert_non_null(strstr(t, "... 3 more"));
    free(t);
    sp_profile_free(p);
}

static void test_report_focus_ignore(void **state) {
    (void)state;
    char err[256];
    SpProfile *p = recursive_profile();
    assert_int_equal(sp_profile_filter_frames(p, "^p[io]ng$", NULL, err, sizeof err), 0);
    assert_int_equal(p->nsamples, 20);
    sp_profile_free(p);
    p = recursive_profile();
    assert_int_equal(sp_profile_filter_frames(p, "fib", "^leaf$", err, sizeof err), 0);
    assert_int_equal(p->nsamples, 40); /* the GC samples: fib without leaf */
    SpReportOpts o;
    sp_report_opts_default(&o);
    o.sections = SP_REPORT_FLAT;
    char *t = report_text(p, &o);
    assert_non_null(strstr(t, "## flat profile (40 samples"));
    assert_null(strstr(t, "leaf"));
    free(t);
    assert_int_equal(sp_profile_filter_frames(p, "(", NULL, err, sizeof err), -2);
    assert_non_null(strstr(err, "--focus '('"));
    sp_profile_free(p);
    SpProfile *e = sp_profile_new(SP_FLAVOUR_EXACT);
    assert_int_equal(sp_profile_filter_frames(e, "x", NULL, err, sizeof err), -2);
    assert_non_null(strstr(err, "has none"));
    sp_profile_free(e);
}

static void test_flame_options(void **state) {
    (void)state;
    SpProfile *p = recursive_profile();
    SpFlameOpts o;
    SpBuf b;
    sp_flame_opts_default(&o);
    o.colors = SP_FLAME_COLORS_STATE;
    o.title = "T<1>";
    sp_buf_init(&b);
    assert_int_equal(sp_flame_svg(p, &o, &b), 0);
    sp_buf_u8(&b, 0);
    const char *s = (const char *)b.data;
    assert_non_null(strstr(s, ">T&lt;1&gt;</text>"));
    assert_non_null(strstr(s, "leaf [interpreting]"));
    assert_non_null(strstr(s, "pong [primitive]"));
    /* fib's self samples are the GC ones */
    assert_non_null(strstr(s, "fib [gc]"));
    /* normal: main (root) is the lowest row; reverse: the highest (smallest y) */
    const char *r = strstr(strstr(s, "<title>main"), "y=\"");
    double y_normal = atof(r + 3);
    sp_buf_fini(&b);
    o.reverse = 1;
    o.colors = SP_FLAME_COLORS_MODULE;
    sp_buf_init(&b);
    assert_int_equal(sp_flame_svg(p, &o, &b), 0);
    sp_buf_u8(&b, 0);
    s = (const char *)b.data;
    r = strstr(strstr(s, "<title>main"), "y=\"");
    double y_rev = atof(r + 3);
    assert_true(y_rev < y_normal);
    assert_non_null(strstr(s, "leaf [libm.so]"));
    assert_non_null(strstr(s, "main [app]"));
    int all = count_lines_with(s, "<rect x=");
    sp_buf_fini(&b);
    o.min_width_px = 500; /* only frames wider than 500 px of 1200: main, fib, leaf */
    sp_buf_init(&b);
    assert_int_equal(sp_flame_svg(p, &o, &b), 0);
    sp_buf_u8(&b, 0);
    int wide = count_lines_with((const char *)b.data, "<rect x=");
    assert_true(wide < all);
    assert_null(strstr((const char *)b.data, "<title>pong"));
    sp_buf_fini(&b);
    sp_profile_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collapsed),
        cmocka_unit_test(test_report_recursion_folded),
        cmocka_unit_test(test_report_sort_min_sections),
        cmocka_unit_test(test_report_focus_ignore),
        cmocka_unit_test(test_flame_options),
        cmocka_unit_test(test_collapsed_unnamed_and_semicolon),
        cmocka_unit_test(test_collapsed_merges_callsites),
        cmocka_unit_test(test_speedscope),
        cmocka_unit_test(test_json_escape),
        cmocka_unit_test(test_utf8_prefix),
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_time_profile_units),
        cmocka_unit_test(test_demangle),
        cmocka_unit_test(test_pprof_bytes),
        cmocka_unit_test(test_pb_varint),
        cmocka_unit_test(test_golden_report),
        cmocka_unit_test(test_golden_flame),
        cmocka_unit_test(test_golden_hist),
        cmocka_unit_test(test_golden_timeline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
