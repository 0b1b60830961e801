/* SPDX-License-Identifier: MIT */
/*
 * load_time.c - how long loading one object's symbols takes (debuginfo.c), per source.
 * usage: symbols_load_time [-n REPEAT] FILE...   prints source, symbols, PLT entries, FDEs,
 * and the best of REPEAT wall-clock times (default 5) per file, .eh_frame (read at the first
 * unnamed address) included.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "debuginfo.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    int repeat = 5, i = 1;
    if (argc > 2 && !strcmp(argv[1], "-n")) repeat = atoi(argv[2]), i = 3;
    if (i >= argc || repeat < 1) {
        fprintf(stderr, "usage: symbols_load_time [-n REPEAT] FILE...\n");
        return 2;
    }
    for (; i < argc; i++) {
        double best = 1e30;
        ProfSymTab t = {0};
        for (int r = 0; r < repeat; r++) {
            prof_symtab_fini(&t);
            double t0 = now_ms();
            uint64_t s, e;
            if (prof_symtab_load(&t, argv[i], NULL)) {
                fprintf(stderr, "symbols_load_time: %s: not a readable ELF file\n", argv[i]);
                return 1;
            }
            prof_symtab_fde(&t, 0, &s, &e); /* what a first unnamed address costs */
            double dt = now_ms() - t0;
            best = dt < best ? dt : best;
        }
        printf("%-60s %-13s %6u symbols %5u plt %6u fde %8.2f ms%s%s\n", argv[i],
               prof_symsrc_name(t.source), t.n, t.nplt, t.nfde, best, t.debug_file ? "  from " : "",
               t.debug_file ? t.debug_file : "");
        prof_symtab_fini(&t);
    }
    return 0;
}
