/* SPDX-License-Identifier: MIT */
/*
 * test_prof_stress.c - 64 threads at the highest rate asked for (5 kHz, clamped by the
 * machine), native stacks and VM shadow frames, threads starting and ending while sampled.
 * Checks: no crash, every captured sample processed (captured == samples), drops counted.
 *   test_prof_stress [SECONDS=5] [THREADS=64] [BUFFER_KIB]     (bench/prof/stress.sh runs 30 s)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sampo.h"

static double secs = 5;
static int nthreads = 64;
static uint32_t buffer_kib;
static atomic_int stop_flag;
static __thread volatile uint64_t sink; /* per thread: no race */

static __attribute__((noinline)) void burn(int n) {
    uint64_t x = sink;
    for (int i = 0; i < n; i++)
        x = x * 6364136223846793005ull + 1;
    sink = x;
}

static __attribute__((noinline)) void recurse(int d) {
    if (d)
        recurse(d - 1);
    else
        burn(5000);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* id >= 1000: short-lived thread (about 20 ms) */
static void *worker(void *arg) {
    intptr_t id = (intptr_t)arg;
    double end = id >= 1000 ? now_s() + 0.02 : 1e300;
    sampo_thread_register("stress");
    SampoVmFrame *volatile top = NULL;
    SampoVmFrame outer = {NULL, (uint64_t)(100 + id % 4), 1, 0};
    if (id % 2) {
        top = &outer;
        sampo_vm_set_frame_chain(&top);
    }
    while (!atomic_load(&stop_flag) && now_s() < end) {
        SampoVmFrame inner = {top, (uint64_t)(200 + id % 3), 0, 0};
        atomic_signal_fence(memory_order_seq_cst);
        if (id % 2) top = &inner;
        recurse((int)(id % 20));
        if (id % 2) top = &outer;
        atomic_signal_fence(memory_order_seq_cst);
        sampo_vm_set_state((SampoVmState)(id % 7));
    }
    sampo_vm_set_frame_chain(NULL);
    sampo_thread_unregister();
    return NULL;
}

/* Short-lived threads: registration and unregistration while sampling. */
static void *churn(void *arg) {
    (void)arg;
    while (!atomic_load(&stop_flag)) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, (void *)(intptr_t)1001) == 0) pthread_join(t, NULL);
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void test_stress(void **state) {
    (void)state;
    SampoConfig c;
    sampo_config_default(&c);
    c.hz = 5000;
    c.cost_ns = 40000;
    c.tune = 0;
    if (buffer_kib) c.buffer_kib = buffer_kib;
    assert_int_equal(sampo_start(&c), 0);
    pthread_t *t = calloc((size_t)nthreads, sizeof *t);
    for (int i = 0; i < nthreads; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i), 0);
    pthread_t ch;
    pthread_create(&ch, NULL, churn, NULL);
    struct timespec ts = {(time_t)secs, (long)((secs - (time_t)secs) * 1e9)};
    nanosleep(&ts, NULL);
    atomic_store(&stop_flag, 1);
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    pthread_join(ch, NULL);
    free(t);
    assert_int_equal(sampo_stop(), 0);
    SampoStats st;
    sampo_get_stats(&st);
    printf("stress: %.0f s, %d threads: %llu samples (%.0f/s), %llu dropped, %llu walk "
           "errors, %llu partial, %llu orphans, %u threads seen, trigger %s\n",
           secs, nthreads, (unsigned long long)st.samples, st.samples / secs,
           (unsigned long long)st.dropped, (unsigned long long)st.walk_errors,
           (unsigned long long)st.partial, (unsigned long long)st.orphans, st.threads,
           sampo_trigger_name(st.trigger));
    assert_true(st.samples > 0);
    assert_int_equal(st.captured, st.samples);
    SampoCCMap *m = sampo_ccmap_snapshot(0);
    assert_non_null(m);
    /* every processed sample is in the map, with its weight (skipped periods included) */
    assert_int_equal(sampo_ccmap_total(m), st.weight);
    assert_true(st.weight >= st.samples && st.weight <= 255 * st.samples);
    sampo_ccmap_free(m);
}

int main(int argc, char **argv) {
    if (argc > 1) secs = atof(argv[1]);
    if (argc > 2) nthreads = atoi(argv[2]);
    if (argc > 3) buffer_kib = (uint32_t)atoi(argv[3]);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_stress)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
