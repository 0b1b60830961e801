/*
 * rename_prog.c - a program whose threads rename themselves after the profiler registered
 * them (pthread_setname_np), for the thread-name test of tests/e2e/interop: a worker names
 * itself "late-worker", burns CPU and exits; then main names itself "late-main" and burns.
 * Prints its own CPU time (user+sys, ns) on stdout for the pprof total check.
 * usage: rename_prog [SECONDS_PER_PHASE]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double g_secs = 0.3;
static volatile unsigned long g_sink;

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(void) {
    double end = cpu_now() + g_secs;
    while (cpu_now() < end)
        for (int i = 0; i < 10000; i++)
            g_sink += (unsigned long)i * 2654435761u;
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
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("%lld\n", (long long)ru.ru_utime.tv_sec * 1000000000LL + ru.ru_utime.tv_usec * 1000LL +
                         ru.ru_stime.tv_sec * 1000000000LL + ru.ru_stime.tv_usec * 1000LL);
    return 0;
}
