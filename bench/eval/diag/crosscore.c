/* SPDX-License-Identifier: MIT */
/*
 * crosscore.c - does a thread on another core see a thread's state in proportion to time?
 *
 * A diagnostic for docs/evaluation.md, section 5 (not built by CMake; x86-64 Linux):
 *
 *     cc -O2 -pthread bench/eval/diag/crosscore.c -o /tmp/crosscore
 *     LEN=16384 GAP=100 OUTER=6000 /tmp/crosscore 1 0
 *
 * The worker thread (CPU 0) repeats ten windows "state 2" (a memcmp of LEN equal bytes, ~170 ns
 * at 16384 here, like a string primitive of the VM) each followed by "state 1" (a loop of
 * GAP/64 iterations, OUTER/64 after the tenth), and times the windows with fenced TSC reads.
 * The sampling thread (CPU 1) wakes 5000 times at random instants (0.8-1.2 ms apart, as the
 * coop marking thread does) and reads the state.  Printed: the mean state-2 window and the
 * state-2 share by time and by samples.
 * Arguments: KIND (1: memcmp windows; 0: windows that spin on the TSC) and SPIN (1: the
 * sampler spins on the clock instead of sleeping).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

static volatile uint8_t state = 1;
static volatile int stop;
static volatile int sink;
static uint64_t ticks_in[3], windows;
static int kind;
static char *bufa, *bufb;

static uint64_t fenced_tsc(void) {
    _mm_mfence();
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v ? atoi(v) : dflt;
}

static void *worker(void *arg) {
    (void)arg;
    pin(0);
    int len = env_int("LEN", 16384), gap = env_int("GAP", 200), outer = env_int("OUTER", 12000);
    uint64_t t = fenced_tsc();
    while (!stop) {
        for (int j = 0; j < 10; j++) {
            state = 2;
            uint64_t t1 = fenced_tsc();
            ticks_in[1] += t1 - t;
            if (kind)
                sink += memcmp(bufa, bufb, (size_t)len);
            else
                for (uint64_t s = __rdtsc(); __rdtsc() - s < (uint64_t)len / 8;)
                    ;
            state = 1;
            uint64_t t2 = fenced_tsc();
            ticks_in[2] += t2 - t1;
            windows++;
            for (volatile int i = 0; i < (j == 9 ? outer : gap) / 64; i++)
                ;
            t = t2;
        }
    }
    return NULL;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv) {
    kind = argc > 1 ? atoi(argv[1]) : 1;
    int spin = argc > 2 ? atoi(argv[2]) : 0;
    int len = env_int("LEN", 16384);
    bufa = malloc((size_t)len);
    bufb = malloc((size_t)len);
    if (!bufa || !bufb) return 1;
    memset(bufa, 7, (size_t)len);
    memset(bufb, 7, (size_t)len);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL)) return 1;
    pin(1);
    uint64_t seen[3] = {0}, rng = __rdtsc() | 1, next = now_ns();
    uint64_t w0 = now_ns(), k0 = __rdtsc();
    for (int k = 0; k < 5000; k++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        next += 800000 + rng % 400001;
        struct timespec w = {(time_t)(next / 1000000000ull), (long)(next % 1000000000ull)};
        if (spin)
            while (now_ns() < next)
                ;
        else
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &w, NULL);
        seen[state]++;
    }
    double ns_per_tick = (double)(now_ns() - w0) / (double)(__rdtsc() - k0);
    stop = 1;
    pthread_join(t, NULL);
    printf("window %.0f ns: state 2 by time %.2f%%, by samples %.2f%%\n",
           (double)ticks_in[2] * ns_per_tick / (double)windows,
           100.0 * (double)ticks_in[2] / (double)(ticks_in[1] + ticks_in[2]),
           100.0 * (double)seen[2] / (double)(seen[1] + seen[2]));
    return 0;
}
