/* SPDX-License-Identifier: MIT */
/*
 * fake_preload.c - a stand-in for libsampo_preload.so that tests `sampo record` alone:
 * at exit it writes, through the analysis API, a one-sample profile to $SAMPO_OUT whose
 * metadata echoes the SAMPO_* variables it saw, so the test can check what record passed.
 */
#include <stdlib.h>
#include <unistd.h>

#include "profile.h"
#include "profile_io.h"

__attribute__((destructor)) static void fake_write(void) {
    const char *out = getenv("SAMPO_OUT");
    if (!out) return;
    static const char *const vars[] = {"SAMPO_HZ",   "SAMPO_MODE",    "SAMPO_TRIGGER",
                                       "SAMPO_TUNE", "SAMPO_VERBOSE", "SAMPO_OUT"};
    SpProfile *p = sp_profile_new(SP_FLAVOUR_SAMPLED);
    if (!p) return;
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        sp_meta_set(p, vars[i], v ? v : "(unset)");
    }
    uint32_t f = sp_frame_addv(p, SP_FRAME_NATIVE, "fake_main", NULL, 0, 0, NULL, 0);
    uint32_t t = sp_thread_add(p, (uint64_t)getpid(), "main");
    sp_sample_add(p, t, 0, &f, 1, 0, 1, SP_VM_NONE);
    sp_profile_write(p, out, NULL, 0);
    sp_profile_free(p);
}
