/* SPDX-License-Identifier: MIT */
/*
 * split_prog.c - a C program with a known CPU split for `sampo record` end-to-end tests:
 * hot/warm/cool burn 50/30/20 percent of the work in a loop; a second thread runs an equal
 * busy loop; exits with status 3 so exit-status propagation is checked too.  Each thread's
 * measured CPU time is written to CPUFILE ("main SECONDS\nworker SECONDS\n") so tests can
 * compare the profile's per-thread split with the truth on a loaded machine.
 * usage: split_prog [milliseconds of work, default 1500] [CPUFILE]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) static void burn(uint64_t n) {
    uint64_t x = sink;
    for (uint64_t i = 0; i < n; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink = x;
}

__attribute__((noinline)) void hot(uint64_t n) {
    burn(n * 5);
}
__attribute__((noinline)) void warm(uint64_t n) {
    burn(n * 3);
}
__attribute__((noinline)) void cool(uint64_t n) {
    burn(n * 2);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double g_seconds;
static double g_cpu[2];

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg) {
    double end = now_s() + g_seconds;
    while (now_s() < end)
        for (int i = 0; i < 20; i++) {
            hot(20000);
            warm(20000);
            cool(20000);
        }
    g_cpu[arg != NULL] = thread_cpu_s();
    return NULL;
}

int main(int argc, char **argv) {
    g_seconds = (argc > 1 ? atof(argv[1]) : 1500) / 1000.0;
    pthread_t t;
    static int is_worker = 1;
    pthread_create(&t, NULL, worker, &is_worker);
    worker(NULL);
    pthread_join(t, NULL);
    if (argc > 2) {
        FILE *f = fopen(argv[2], "w");
        if (f) {
            fprintf(f, "main %.6f\nworker %.6f\n", g_cpu[0], g_cpu[1]);
            fclose(f);
        }
    }
    return 3;
}
