/* SPDX-License-Identifier: MIT */
/*
 * demangle.h - C++ (Itanium ABI, also Rust's legacy `_ZN...17h<hash>E`) name demangling
 * through the C++ runtime's __cxa_demangle, looked up with dlsym at run time (libstdc++ is
 * loaded with dlopen when the process does not have it), so the analysis library stays C.
 * Thread-safe after the first call; not async-signal-safe (it allocates).
 */
#ifndef SAMPO_ANALYSIS_DEMANGLE_H
#define SAMPO_ANALYSIS_DEMANGLE_H

/* Returns the demangled form of a mangled name (owned by the caller, free()), or NULL when
 * name is not mangled, cannot be demangled or no demangler is available. */
char *sp_demangle(const char *name);

#endif
