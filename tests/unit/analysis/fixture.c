/* SPDX-License-Identifier: MIT */
/*
 * fixture.c - the fixed profile used by the analysis unit tests (see fixture.h).
 */
#include "fixture.h"

SpProfile *fixture_new(void) {
    SpProfile *p = sp_profile_new(SP_FLAVOUR_SAMPLED);
    if (!p) return NULL;
    uint32_t m = sp_frame_addv(p, SP_FRAME_NATIVE, "main", "/bin/app", 0x1000, 0x100, "app.c", 10);
    uint32_t w = sp_frame_addv(p, SP_FRAME_NATIVE, "work", "/bin/app", 0x1100, 0x100, NULL, 0);
    uint32_t a = sp_frame_addv(p, SP_FRAME_NATIVE, "leaf_a", "/bin/app", 0x1200, 0x80, NULL, 0);
    uint32_t b = sp_frame_addv(p, SP_FRAME_NATIVE, "leaf_b", "/bin/app", 0x1280, 0x80, NULL, 0);
    uint32_t t0 = sp_thread_add(p, 100, "main");
    uint32_t t1 = sp_thread_add(p, 101, "worker");
    uint32_t sa[] = {a, w, m}, sb[] = {b, w, m}, sw[] = {w, m};
    /* thread 0: 3 x leaf_a, 1 x work; thread 1: 2 x leaf_b */
    sp_sample_add(p, t0, 1000000, sa, 3, 0x1210, 1, SP_VM_NONE);
    sp_sample_add(p, t0, 2000000, sa, 3, 0x1220, 1, SP_VM_NONE);
    sp_sample_add(p, t1, 2500000, sb, 3, 0x1290, 1, SP_VM_NONE);
    sp_sample_add(p, t0, 3000000, sa, 3, 0x1210, 1, SP_VM_NONE);
    sp_sample_add(p, t0, 4000000, sw, 2, 0x1150, 1, SP_VM_NONE);
    sp_sample_add(p, t1, 4500000, sb, 3, 0x12a0, 1, SP_VM_NONE);
    sp_mapping_add(p, 0x1000, 0x2000, 0, "/bin/app", "");
    sp_symbol_add(p, 0x1000, 0x100, "main", 0);
    sp_symbol_add(p, 0x1100, 0x100, "work", 0);
    sp_symbol_add(p, 0x1200, 0x80, "leaf_a", 0);
    sp_symbol_add(p, 0x1280, 0x80, "leaf_b", 0);
    sp_meta_set(p, "trigger", "timer_create");
    sp_meta_setu(p, "requested_hz", 1000);
    sp_event_add(p, 3500000, SP_EVENT_RATE_CHANGE, 1000000, 2000000, "repetition 0.5%");
    return p;
}
