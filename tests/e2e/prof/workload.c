/* SPDX-License-Identifier: MIT */
/*
 * workload.c - target programs with a known CPU split for the profiler's end-to-end tests.
 *
 *   workload split SECS      f50/f30/f20 take 50/30/20% of the CPU
 *   workload threads SECS    two threads running the same loop (expect 50/50 per thread)
 *   workload recurse SECS    deep recursion (depth 200) ending in a leaf loop
 *   workload sleeper SECS    one busy thread (busy_main) and one that sleeps 90% (sleepy);
 *                            prints each thread's measured CPU share
 *   workload eintr SECS      nanosleep/poll/usleep loop; prints "eintr N calls M"
 *   workload forkexec SECS   forks, the child execs `workload split SECS`; prints "child ok"
 *   workload many N SECS     N threads spinning (stress)
 * Never profiles itself: it is run under LD_PRELOAD=libsampo_preload.so or linked with it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) static void work(uint64_t n) {
    uint64_t x = sink;
    for (uint64_t i = 0; i < n; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink = x;
}

/* Each round of f50/f30/f20 is scaled by a pseudo-random factor (4..11)/8, the same for
 * the three, so the split stays 5:3:2 but the loop has no fixed period: samples taken at
 * fixed steps of the thread's CPU time (a tick-driven timer, a thread preempted at the
 * scheduler tick on a loaded machine) would otherwise strobe a periodic loop and land on
 * the same few phases of it, giving a split that depends on the machine's load. */
static uint64_t round_scale = 8, rng = 0x9e3779b97f4a7c15ull;

static void next_round(void) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    round_scale = 4 + (rng >> 32) % 8;
}

__attribute__((noinline)) void f50(void) {
    work(50000 * round_scale / 8);
}
__attribute__((noinline)) void f30(void) {
    work(30000 * round_scale / 8);
}
__attribute__((noinline)) void f20(void) {
    work(20000 * round_scale / 8);
}

static void run_split(double secs) {
    double end = cpu_s() + secs; /* CPU time: the machine may be shared */
    while (cpu_s() < end) {
        /* keep the clock syscall rare: on a loaded machine a thread is mostly preempted at
         * a syscall's return, and a sample taken while it waits (thread trigger) lands there */
        for (int i = 0; i < 100; i++) {
            next_round();
            f50();
            f30();
            f20();
        }
    }
}

__attribute__((noinline)) void spin_thread_body(double secs) {
    double end = cpu_s() + secs;
    while (cpu_s() < end)
        work(10000);
}

static void *spin_main(void *arg) {
    spin_thread_body(*(double *)arg);
    return NULL;
}

static void run_threads(int n, double secs) {
    pthread_t *t = calloc((size_t)n, sizeof *t);
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, spin_main, &secs);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    free(t);
}

__attribute__((noinline)) void leaf_loop(void) {
    work(100000);
}

__attribute__((noinline)) int recurse(int depth) {
    if (depth == 0) {
        leaf_loop();
        return 0;
    }
    int r = recurse(depth - 1);
    sink += (uint64_t)r;
    return r + 1;
}

static void run_recurse(double secs) {
    double end = cpu_s() + secs;
    while (cpu_s() < end)
        recurse(200);
}

__attribute__((noinline)) void sleepy_nap(void) {
    struct timespec ts = {0, 9000000};
    nanosleep(&ts, NULL);
}

__attribute__((noinline)) void sleepy_work(void) {
    work(200000);
}

static double sleepy_cpu;

static void *sleepy_main(void *arg) {
    double end = now_s() + *(double *)arg;
    while (now_s() < end) {
        double t0 = now_s();
        sleepy_work(); /* about 1 ms */
        double dt = now_s() - t0;
        struct timespec ts = {0, (long)(dt * 9e9)};
        nanosleep(&ts, NULL);
    }
    sleepy_cpu = cpu_s();
    return NULL;
}

__attribute__((noinline)) void busy_main(double secs) {
    double end = now_s() + secs;
    while (now_s() < end)
        work(10000);
}

/* Prints each thread's CPU share ("truth busy_main=P sleepy_work=Q"): on a shared machine
 * the busy thread gets less than a core and the split moves away from 91/9. */
static void run_sleeper(double secs) {
    pthread_t t;
    double c0 = cpu_s();
    pthread_create(&t, NULL, sleepy_main, &secs);
    busy_main(secs);
    pthread_join(t, NULL);
    double busy = cpu_s() - c0, all = busy + sleepy_cpu;
    printf("truth busy_main=%.1f sleepy_work=%.1f\n", busy / all * 100, sleepy_cpu / all * 100);
}

/* Counts calls that fail with EINTR although nothing in this program sends signals. */
static void run_eintr(double secs) {
    double end = now_s() + secs;
    long eintr = 0, calls = 0;
    while (now_s() < end) {
        struct timespec ts = {0, 2000000};
        if (nanosleep(&ts, NULL) && errno == EINTR) eintr++;
        if (poll(NULL, 0, 2) < 0 && errno == EINTR) eintr++;
        if (usleep(2000) && errno == EINTR) eintr++;
        calls += 3;
        work(20000);
    }
    printf("eintr %ld calls %ld\n", eintr, calls);
}

static int run_forkexec(const char *self, const char *secs) {
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        execl(self, self, "split", secs, (char *)NULL);
        _exit(127);
    }
    run_split(atof(secs));
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
        printf("child failed %d\n", st);
        return 1;
    }
    pid_t p2 = fork(); /* fork without exec */
    if (p2 == 0) {
        run_split(0.1);
        _exit(0);
    }
    waitpid(p2, &st, 0);
    printf("child ok\n");
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: workload split|threads|recurse|sleeper|eintr|forkexec SECS\n");
        return 2;
    }
    const char *m = argv[1];
    double secs = atof(argv[argc - 1]);
    if (!strcmp(m, "split"))
        run_split(secs);
    else if (!strcmp(m, "threads"))
        run_threads(2, secs);
    else if (!strcmp(m, "recurse"))
        run_recurse(secs);
    else if (!strcmp(m, "sleeper"))
        run_sleeper(secs);
    else if (!strcmp(m, "eintr"))
        run_eintr(secs);
    else if (!strcmp(m, "forkexec"))
        return run_forkexec(argv[0], argv[2]);
    else if (!strcmp(m, "many") && argc == 4)
        run_threads(atoi(argv[2]), secs);
    else
        return 2;
    return 0;
}
