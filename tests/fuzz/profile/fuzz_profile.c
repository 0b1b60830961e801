/* SPDX-License-Identifier: MIT */
/*
 * fuzz_profile.c - libFuzzer target for the profile reader: any byte string must either be
 * rejected with an "offset 0x..." message or decode into a profile that every consumer
 * (CC-Map derivation, report, exporters, SVG writers, compare) handles without crashing.
 * Inputs starting with '{' go to the CC-Map JSON reader instead.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "ccjson.h"
#include "compare.h"
#include "export.h"
#include "flame.h"
#include "hist.h"
#include "pprof.h"
#include "profile.h"
#include "profile_io.h"
#include "report.h"
#include "timeline.h"

static void fuzz_consumers(SpProfile *p) {
    SpBuf b;
    SpReportOpts ro;
    SpFlameOpts fo;
    SpHistOpts ho;
    char err[256];
    sp_report_opts_default(&ro);
    sp_flame_opts_default(&fo);
    sp_hist_opts_default(&ho);
    sp_buf_init(&b);
    sp_report(p, &ro, &b);
    b.len = 0;
    ro.lines = 1; /* the source-line view (section LINS) */
    sp_report(p, &ro, &b);
    b.len = 0;
    sp_export_collapsed(p, &b);
    b.len = 0;
    sp_export_collapsed_lines(p, &b, NULL, NULL);
    b.len = 0;
    sp_export_speedscope(p, &b);
    b.len = 0;
    sp_pprof_encode(p, &b);
    b.len = 0;
    sp_flame_svg(p, &fo, &b);
    b.len = 0;
    sp_hist_svg(p, &ho, &b, err, sizeof err);
    b.len = 0;
    SpTimelineOpts to;
    sp_timeline_opts_default(&to);
    sp_timeline_svg(p, &to, &b, err, sizeof err);
    b.len = 0;
    sp_profile_encode(p, &b); /* a decoded profile re-encodes */
    sp_buf_fini(&b);
    double ov;
    sp_overlap(p, p, &ov);
    sp_overlap_ex(p, p, 1, &ov);
    sp_ccmap_compute(p); /* and the derived CC-Map from its samples */
}

/* Rewrites each section's CRC so that mutations reach the payload parsers (otherwise the
 * CRC check rejects nearly every mutated input). */
static void fuzz_fix_crcs(uint8_t *d, size_t n) {
    size_t pos = 20;
    while (pos + 16 <= n) {
        uint64_t len = 0;
        for (int i = 0; i < 8; i++)
            len |= (uint64_t)d[pos + 8 + i] << (8 * i);
        if (len > n - pos - 16) return;
        uLong crc = crc32_z(crc32(0L, Z_NULL, 0), d + pos + 16, (size_t)len);
        for (int i = 0; i < 4; i++)
            d[pos + 4 + i] = (uint8_t)(crc >> (8 * i));
        pos += 16 + (size_t)len;
    }
}

static void fuzz_one(const uint8_t *data, size_t size) {
    SpProfile *p = NULL;
    char err[SP_ERR_MAX];
    if (sp_profile_decode(data, size, &p, err, sizeof err) != 0) {
        if (strncmp(err, "offset 0x", 9) != 0) abort(); /* every rejection names its offset */
        return;
    }
    fuzz_consumers(p);
    sp_profile_free(p);
}

static void fuzz_json(const uint8_t *data, size_t size) {
    SpProfile *p = NULL;
    char err[SP_ERR_MAX];
    if (sp_ccjson_decode((const char *)data, size, &p, err, sizeof err) != 0) {
        if (!strstr(err, ": expected ")) abort(); /* every rejection says what was expected */
        return;
    }
    fuzz_consumers(p);
    sp_profile_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (sp_ccjson_sniff((const char *)data, size)) {
        fuzz_json(data, size);
        return 0;
    }
    fuzz_one(data, size);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return 0;
    memcpy(copy, data, size);
    fuzz_fix_crcs(copy, size);
    fuzz_one(copy, size);
    free(copy);
    return 0;
}
