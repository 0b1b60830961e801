/* SPDX-License-Identifier: MIT */
/*
 * flame.h - flame graph as SVG, rendered from the calling context tree (root at the bottom,
 * children sorted by name, width proportional to inclusive weight), with a <title> tooltip
 * per frame.  Deterministic output.  Not thread-safe per profile.
 */
#ifndef SAMPO_ANALYSIS_FLAME_H
#define SAMPO_ANALYSIS_FLAME_H

#include "profile.h"
#include "profile_io.h"

typedef struct {
    unsigned width;      /* image width in px (default 1200) */
    const char *title;   /* heading (default "Flame Graph") */
    double min_width_px; /* frames narrower than this are omitted (default 0.1) */
    int reverse;         /* icicle graph: roots at the top, growing downwards */
    int colors;          /* SP_FLAME_COLORS_* */
} SpFlameOpts;

enum {
    SP_FLAME_COLORS_NAME = 0, /* warm colours hashed from the frame name (default) */
    SP_FLAME_COLORS_MODULE,   /* one hue per module (object file / VM image) */
    SP_FLAME_COLORS_STATE,    /* by the VM state the frame's samples were taken in */
};

void sp_flame_opts_default(SpFlameOpts *o);
int sp_flame_svg(SpProfile *p, const SpFlameOpts *o, SpBuf *out);

#endif
