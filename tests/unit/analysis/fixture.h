/* SPDX-License-Identifier: MIT */
/*
 * fixture.h - a small fixed profile shared by the analysis unit tests: three native
 * functions main -> work -> {leaf_a, leaf_b}, two threads, a mapping, symbols, metadata,
 * one rate-change event.  Every exporter's golden output is computed from this profile.
 */
#ifndef SAMPO_TEST_ANALYSIS_FIXTURE_H
#define SAMPO_TEST_ANALYSIS_FIXTURE_H

#include "profile.h"

/* Builds the fixture; returns NULL on ENOMEM. Frames: 0 main, 1 work, 2 leaf_a, 3 leaf_b. */
SpProfile *fixture_new(void);

#endif
