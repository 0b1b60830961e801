/* SPDX-License-Identifier: MIT */
/*
 * test_prof_ring.c - the SPSC ring: order, bounded capacity with counted overflow,
 * wrap-around, and a two-thread producer/consumer run (also run under TSan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>

#include "ring.h"

static void test_fifo_and_overflow(void **state) {
    (void)state;
    ProfRing r;
    assert_int_equal(prof_ring_init(&r, 5), 0); /* rounded up to 8 */
    assert_null(prof_ring_pop(&r));
    for (uintptr_t i = 1; i <= 8; i++)
        assert_int_equal(prof_ring_push(&r, (void *)i), 0);
    assert_int_equal(prof_ring_push(&r, (void *)9), -1);
    assert_int_equal(atomic_load(&r.overflow), 1);
    assert_int_equal(prof_ring_count(&r), 8);
    for (uintptr_t i = 1; i <= 8; i++)
        assert_ptr_equal(prof_ring_pop(&r), (void *)i);
    assert_null(prof_ring_pop(&r));
    prof_ring_fini(&r);
}

static void test_wraparound(void **state) {
    (void)state;
    ProfRing r;
    prof_ring_init(&r, 4);
    uintptr_t next_in = 1, next_out = 1;
    for (int round = 0; round < 1000; round++) {
        for (int k = 0; k < 3; k++)
            assert_int_equal(prof_ring_push(&r, (void *)next_in++), 0);
        for (int k = 0; k < 3; k++)
            assert_ptr_equal(prof_ring_pop(&r), (void *)next_out++);
    }
    assert_int_equal(atomic_load(&r.overflow), 0);
    prof_ring_fini(&r);
}

#define N_ITEMS 200000

static void *producer(void *arg) {
    ProfRing *r = arg;
    for (uintptr_t i = 1; i <= N_ITEMS;)
        if (!prof_ring_push(r, (void *)i)) i++;
    return NULL;
}

static void test_two_threads(void **state) {
    (void)state;
    ProfRing r;
    prof_ring_init(&r, 64);
    pthread_t t;
    pthread_create(&t, NULL, producer, &r);
    uintptr_t expect = 1;
    while (expect <= N_ITEMS) {
        void *p = prof_ring_pop(&r);
        if (!p) continue;
        assert_ptr_equal(p, (void *)expect);
        expect++;
    }
    pthread_join(t, NULL);
    assert_null(prof_ring_pop(&r));
    prof_ring_fini(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_and_overflow),
        cmocka_unit_test(test_wraparound),
        cmocka_unit_test(test_two_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
