/* SPDX-License-Identifier: MIT */
/*
 * rename_prog.c - a program whose threads rename themselves after the profiler registered
 * them (pthread_setname_np), for the thread-name test of tests/e2e/interop: a worker names
 * itself "late-worker", burns CPU and exits; then main names itself "late-main" and burns.
 * Prints the CPU time the two spin() calls used (ns, thread CPU clocks) for the pprof
 * total check.
 * usage: rename_prog [SECONDS_PER_PHASE]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double g_secs = 0.3;
static volatile unsigned long g_sink, g_sink2;
static double g_spin_cpu; /* written by the worker before the join, then by main */

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Inlined into spin: its samples carry two source lines (mix, then spin's call site). */
static inline __attribute__((always_inline)) unsigned long mix(int i) {
    return (unsigned long)i * 2654435761u ^ (unsigned long)i >> 3;
}

__attribute__((noinline)) static void spin(void) {
    double start = cpu_now(), end = start + g_secs, now;
    while ((now = cpu_now()) < end)
        for (int i = 0; i < 1000000; i++) { /* the clock read is a syscall: keep it rare */
            g_sink += mix(i);
            g_sink2 ^= g_sink; /* a second dependent load: samples on several instructions
                                * whatever the skid (one hot instruction took 99.8% of them
                                * on some machines) */
        }
    g_spin_cpu += now - start;
}

static void *worker(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "late-worker");
    spin();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) g_secs = atof(argv[1]);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL)) return 2;
    pthread_join(t, NULL);
    pthread_setname_np(pthread_self(), "late-main");
    spin();
    printf("%.0f\n", g_spin_cpu * 1e9);
    return 0;
}
