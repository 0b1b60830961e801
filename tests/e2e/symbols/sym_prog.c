/* SPDX-License-Identifier: MIT */
/*
 * sym_prog.c - two static functions with a known CPU split (alpha 2/3, beta 1/3).  The test
 * strips the binary and gives its symbols back through a .gnu_debuglink or build-id debug
 * file.  usage: sym_prog [MILLIONS]
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long sym_alpha_spin(unsigned long n) {
    unsigned long x = 1;
    for (unsigned long i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    return x;
}

__attribute__((noinline)) static unsigned long sym_beta_spin(unsigned long n) {
    unsigned long x = 7;
    for (unsigned long i = 0; i < n; i++)
        x = x * 2862933555777941757ul + 3037000493ul;
    return x;
}

int main(int argc, char **argv) {
    unsigned long m = argc > 1 ? strtoul(argv[1], NULL, 10) : 300;
    for (unsigned long i = 0; i < m; i++) {
        sink += sym_alpha_spin(2000000 + (i & 1)); /* varying: the calls are not hoisted */
        sink += sym_beta_spin(1000000 + (i & 1));
    }
    printf("%lu\n", sink);
    return 0;
}
