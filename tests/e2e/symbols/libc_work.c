/* SPDX-License-Identifier: MIT */
/*
 * libc_work.c - spends its time inside libc's internal functions (qsort's merge sort,
 * memmove's CPU-specific variant, malloc's internals), which only libc's separate debug
 * file (libc6-dbg) names.  usage: libc_work [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 60;
    static char src[1 << 20], dst[1 << 20];
    enum { N = 200000 };
    int *v = malloc(N * sizeof *v);
    void *keep[256] = {0};
    unsigned long sum = 0;
    if (!v) return 1;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < 128; i++) {
            memmove(dst, src + i, sizeof src - 128);
            sum += (unsigned char)dst[i];
        }
        for (int i = 0; i < N; i++)
            v[i] = (int)(((unsigned)i * 2654435761u + (unsigned)r) % 1000003u);
        qsort(v, N, sizeof *v, cmp_int);
        for (int i = 0; i < 200000; i++) { /* varied sizes: bins, splits, consolidation */
            int k = i & 255;
            free(keep[k]);
            keep[k] = malloc(16 + (size_t)((i * 7919) % 4000));
        }
    }
    for (int k = 0; k < 256; k++)
        free(keep[k]);
    printf("%lu %d\n", sum, v[N / 2]);
    free(v);
    return 0;
}
