/* SPDX-License-Identifier: MIT */
/*
 * test_threads.c - several VMs in parallel threads of one process (no global
 * mutable state in the VM): each thread runs its own program and the
 * results are checked after the threads are joined. Also runs under TSan
 * (ctest label `tsan`), which reports any shared mutable state.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmtest.h"

enum { NTHREADS = 4 };

typedef struct Job {
    int n;       /* input of the program */
    bool stress; /* run with GC stress */
    char *dir;
    int status;
    char *out;
    char *err;
    uint64_t collections;
    size_t verify_errors;
} Job;

static const char prog[] =
    "Work = (\n"
    "  fib: n = ( n < 2 ifTrue: [ ^n ]. ^(self fib: n - 1) + (self fib: n - 2) )\n"
    "  run: args = ( | n list s |\n"
    "    n := (args at: 2) asInteger.\n"
    "    (self fib: n) println.\n"
    "    list := Array new: n.\n"
    "    1 to: n do: [:i | list at: i put: 'x' + i asString ].\n"
    "    s := 0. list do: [:e | s := s + e length ]. s println.\n"
    "    (2 raisedTo: n) println ) )\n";

/* Runs the program in a VM owned by this thread; no cmocka calls here. */
static void *worker(void *arg) {
    Job *j = arg;
    char e[512], nbuf[16];
    SomOptions o = {0};
    o.gc_stress = j->stress;
    SomVM *vm = som_vm_new(&o, j->dir, e, sizeof e);
    if (!vm) {
        j->status = -1;
        return NULL;
    }
    size_t ol = 0, el = 0;
    FILE *out = open_memstream(&j->out, &ol);
    FILE *err = open_memstream(&j->err, &el);
    vm->out = out;
    vm->err = err;
    snprintf(nbuf, sizeof nbuf, "%d", j->n);
    char *argv[] = {"Work", nbuf};
    j->status = som_vm_run(vm, 2, argv);
    j->collections = vm->heap.stats.collections;
    gc_collect(vm);
    j->verify_errors = gc_verify(vm);
    som_vm_free(vm);
    fclose(out);
    fclose(err);
    return NULL;
}

static long fib(int n) {
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static void expected_output(int n, char *buf, size_t len) {
    long chars = 0;
    for (int i = 1; i <= n; i++)
        chars += 1 + snprintf(NULL, 0, "%d", i);
    snprintf(buf, len, "%ld\n%ld\n%llu\n", fib(n), chars, 1ULL << n);
}

static void run_jobs(Job *jobs, int n) {
    pthread_t t[NTHREADS];
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker, &jobs[i]), 0);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < n; i++) {
        char want[256];
        expected_output(jobs[i].n, want, sizeof want);
        if (jobs[i].status != 0 || strcmp(jobs[i].out, want) != 0)
            fail_msg("thread %d (n=%d): status %d, out `%s`, err `%s`, want `%s`", i, jobs[i].n,
                     jobs[i].status, jobs[i].out ? jobs[i].out : "", jobs[i].err ? jobs[i].err : "",
                     want);
        assert_int_equal(jobs[i].verify_errors, 0);
        if (jobs[i].stress && jobs[i].collections < 20)
            fail_msg("thread %d: only %llu collections under GC stress", i,
                     (unsigned long long)jobs[i].collections);
        free(jobs[i].out);
        free(jobs[i].err);
    }
}

static void test_parallel_vms(void **state) {
    (void)state;
    char *dir = vt_tempdir();
    vt_write_class(dir, "Work", prog);
    Job jobs[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        jobs[i] = (Job){.n = 16 + i, .dir = dir};
    run_jobs(jobs, NTHREADS);
    vt_rmdir(dir);
    free(dir);
}

/* GC stress in some threads while the others allocate normally. */
static void test_parallel_vms_with_gc_stress(void **state) {
    (void)state;
    char *dir = vt_tempdir();
    vt_write_class(dir, "Work", prog);
    Job jobs[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        jobs[i] = (Job){.n = 10 + i, .stress = i % 2 == 0, .dir = dir};
    run_jobs(jobs, NTHREADS);
    vt_rmdir(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parallel_vms),
        cmocka_unit_test(test_parallel_vms_with_gc_stress),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
