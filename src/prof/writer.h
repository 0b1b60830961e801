/* SPDX-License-Identifier: MIT */
/*
 * writer.h - serializes the engine's in-memory profile through the analysis library's
 * SpProfile builder (src/analysis/profile.h): metadata, events, mappings, symbols, CC-Map.
 * Normal context only; takes g.data.  Not signal-safe.
 */
#ifndef PROF_WRITER_H
#define PROF_WRITER_H

/* Writes the profile to path ("%p" expands to the pid).  Returns SAMPO_OK or SAMPO_EIO. */
int prof_write_profile(const char *path);

#endif
