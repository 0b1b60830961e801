/* SPDX-License-Identifier: MIT */
/*
 * replay_main.c - runs the fuzz target over files given on the command line (the seed
 * corpus), so non-fuzz builds (dev, ASan) exercise the same code without libFuzzer.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "profile_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        uint8_t *d = NULL;
        size_t n = 0;
        char err[SP_ERR_MAX + 4096];
        if (sp_read_file(argv[i], &d, &n, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        LLVMFuzzerTestOneInput(d, n);
        free(d);
    }
    printf("replayed %d inputs\n", argc - 1);
    return 0;
}
