/* SPDX-License-Identifier: MIT */
/*
 * plt_prog.c - calls plt_target_fn (in libsym_plt_lib.so) through its PLT entry in a tight
 * loop, so that samples land in the stub: it must be named "plt_target_fn@plt".
 * usage: plt_prog [MILLIONS]
 */
#include <stdio.h>
#include <stdlib.h>

int plt_target_fn(int x);

int main(int argc, char **argv) {
    long m = argc > 1 ? atol(argv[1]) : 300;
    int x = 0;
    for (long i = 0; i < m * 1000000; i++)
        x = plt_target_fn(x);
    printf("%d\n", x);
    return 0;
}
