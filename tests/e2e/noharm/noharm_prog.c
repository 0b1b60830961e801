/* SPDX-License-Identifier: MIT */
/*
 * noharm_prog.c - native programs that play games a profiler must survive without changing
 * what they do (docs/design/profiler.md, "What the profiler promises the program").  One
 * binary, one scenario per argument; each prints only deterministic text, writes only
 * deterministic files, and exits with a fixed status, so a run under `sampo record` or
 * LD_PRELOAD=libsampo_preload.so can be compared byte for byte with a plain run.
 *
 *   fdreuse      close fds >= 3, fopen a file (gets fd 3), write to it, exit without fclose
 *   closeloop    close 3..65535 in a loop, then burn 400 ms of CPU
 *   closefrom    closefrom(3), then burn
 *   closerange   close_range(3, ~0U, 0), then burn
 *   sigprof      own SIGPROF handler + setitimer(ITIMER_PROF) at 100 Hz while burning
 *   rtsig        own handler on SIGRTMAX (the profiler's default), 50 sigqueue + 50 raise
 *   signals      SIGUSR1 handler, 100 raise()s, SIGALRM interrupting a pause()
 *   exec         burn 200 ms, then execl itself with "exec2" (no fork), which burns 200 ms
 *   chdir        chdir into ./sub, burn, write a file there
 *   threads      1000 threads of 0.5 ms CPU each, one after the other
 *   sigint       burn 300 ms, then kill(getpid(), SIGINT) with SIGINT at SIG_DFL
 *   spin         burn until killed (for a signal from outside)
 *   abort        write a file, then abort()
 *   exit3        burn 300 ms in burn_before_exit, then _exit(3) (atexit handlers skipped)
 *   sysexit      burn 50 ms, then the exit_group system call directly (no library code runs)
 *   forkexit     a fork child and a vfork child end with _exit; then the parent checks that
 *                no profile exists yet (its own is written at its exit) and burns 200 ms
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double cpu_thread_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double cpu_process_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Burns ms of the calling thread's CPU time. */
__attribute__((noinline)) static void burn(double ms) {
    double end = cpu_thread_ms() + ms;
    while (cpu_thread_ms() < end)
        for (int i = 0; i < 1000; i++)
            sink += (unsigned long)i * 2654435761u;
}

__attribute__((noinline)) static void burn_before_exec(void) {
    burn(200);
}

__attribute__((noinline)) static void burn_after_exec(void) {
    burn(200);
}

static int do_fdreuse(void) {
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    FILE *f = fopen("fdreuse.txt", "w");
    if (!f) return perror("fopen"), 1;
    printf("file got fd %d\n", fileno(f));
    burn(300);
    for (int i = 0; i < 1000; i++)
        fprintf(f, "line %d of the program's own data\n", i);
    return 0; /* no fclose: exit() flushes it after the atexit handlers */
}

static int do_close(const char *how) {
    if (!strcmp(how, "closeloop"))
        for (int fd = 3; fd < 65536; fd++)
            close(fd);
    else if (!strcmp(how, "closefrom"))
        closefrom(3);
    else
        syscall(SYS_close_range, 3u, ~0u, 0);
    burn(400);
    FILE *f = fopen("after-close.txt", "w");
    if (!f) return perror("fopen"), 1;
    fputs("written after closing every fd\n", f);
    fclose(f);
    puts("closed and burned");
    return 0;
}

static volatile sig_atomic_t prof_calls, prof_foreign;

static void on_sigprof(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)uc;
    prof_calls++;
    if (si->si_code != SI_KERNEL) prof_foreign++; /* ITIMER_PROF's signals come from the kernel */
}

static int do_sigprof(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags = SA_RESTART | SA_SIGINFO;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = {{0, 10000}, {0, 10000}};
    setitimer(ITIMER_PROF, &it, NULL);
    double t0 = cpu_process_ms();
    burn(600);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    double expect = (cpu_process_ms() - t0) / 10.0;
    /* ITIMER_PROF: at most one call per 10 ms of the process's CPU time (fewer on a loaded
     * machine: CPU timers expire at ticks that find the process running), every one of them
     * from the kernel's timer: the profiler must neither add calls nor steal the timer */
    int ok = prof_calls >= 1 && prof_calls <= expect * 1.5 + 3 && !prof_foreign;
    printf("SIGPROF handler calls %s\n",
           ok ? "all from its own timer" : "NOT all from its own timer");
    if (!ok)
        fprintf(stderr, "calls %d (%d not from the timer), at most about %.0f\n", (int)prof_calls,
                (int)prof_foreign, expect);
    return ok ? 0 : 1;
}

static volatile sig_atomic_t rt_calls;

static void on_rt(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)si, (void)uc;
    rt_calls++; /* every call: a profiler signal passed on here would show in the count */
}

static int do_rtsig(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_rt;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGRTMAX, &sa, NULL);
    for (int i = 0; i < 50; i++) {
        union sigval v = {.sival_int = 7};
        sigqueue(getpid(), SIGRTMAX, v);
        burn(2);
        raise(SIGRTMAX);
    }
    printf("own real-time signal handler calls: %d\n", (int)rt_calls);
    return 0;
}

static volatile sig_atomic_t usr1_calls, alrm_calls;

static void on_usr1(int sig) {
    (void)sig;
    usr1_calls++;
}

static void on_alrm(int sig) {
    (void)sig;
    alrm_calls++;
}

static int do_signals(void) {
    signal(SIGUSR1, on_usr1);
    signal(SIGALRM, on_alrm);
    for (int i = 0; i < 100; i++) {
        raise(SIGUSR1);
        burn(1);
    }
    struct sigaction q;
    sigaction(SIGUSR1, NULL, &q);
    alarm(1);
    int r = pause();
    printf("SIGUSR1 calls %d, handler still ours %d, pause -> %d %s, SIGALRM calls %d\n",
           (int)usr1_calls, q.sa_handler == on_usr1, r, strerror(errno), (int)alrm_calls);
    return 0;
}

static int do_exec(const char *self) {
    burn_before_exec();
    puts("before exec");
    fflush(stdout);
    execl(self, self, "exec2", (char *)NULL);
    perror("execl");
    return 1;
}

static int do_exec2(void) {
    burn_after_exec();
    puts("after exec");
    return 0;
}

static int do_chdir(void) {
    mkdir("sub", 0755);
    if (chdir("sub")) return perror("chdir"), 1;
    burn(200);
    FILE *f = fopen("in-sub.txt", "w");
    if (!f) return perror("fopen"), 1;
    fputs("written after chdir\n", f);
    fclose(f);
    puts("changed directory");
    return 0;
}

static void *short_thread(void *arg) {
    (void)arg;
    burn(0.5);
    return NULL;
}

static int do_threads(void) {
    for (int i = 0; i < 1000; i++) {
        pthread_t th;
        if (pthread_create(&th, NULL, short_thread, NULL)) return perror("pthread_create"), 1;
        pthread_join(th, NULL);
    }
    puts("1000 short threads done");
    return 0;
}

static int do_sigint(void) {
    burn(300);
    puts("about to be interrupted");
    fflush(stdout);
    kill(getpid(), SIGINT);
    for (int i = 0; i < 1000; i++) /* the signal kills us long before this ends */
        burn(10);
    return 0;
}

static int do_abort(void) {
    FILE *f = fopen("before-abort.txt", "w");
    if (!f) return perror("fopen"), 1;
    fputs("written before abort\n", f);
    fclose(f);
    burn(100);
    abort();
}

__attribute__((noinline)) static void burn_before_exit(void) {
    burn(300);
}

static int do_exit3(void) {
    burn_before_exit();
    puts("leaving with _exit(3)");
    _exit(3);
}

__attribute__((noinline)) static void burn_in_child(void) {
    burn(100);
}

static int do_forkexit(void) {
    burn(100);
    pid_t c = fork();
    if (c == 0) {
        burn_in_child();
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    c = vfork();
    if (c == 0) _exit(0);
    waitpid(c, &st, 0);
    /* the profiler's output file (set by sampo record or by hand): nobody wrote it yet */
    const char *out = getenv("SAMPO_OUT");
    if (out && access(out, F_OK) == 0) puts("a child wrote the profile");
    burn(200);
    puts("children gone");
    return 0;
}

int main(int argc, char **argv) {
    const char *m = argc > 1 ? argv[1] : "";
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(m, "fdreuse")) return do_fdreuse();
    if (!strcmp(m, "closeloop") || !strcmp(m, "closefrom") || !strcmp(m, "closerange"))
        return do_close(m);
    if (!strcmp(m, "sigprof")) return do_sigprof();
    if (!strcmp(m, "rtsig")) return do_rtsig();
    if (!strcmp(m, "signals")) return do_signals();
    if (!strcmp(m, "exec")) return do_exec(argv[0]);
    if (!strcmp(m, "exec2")) return do_exec2();
    if (!strcmp(m, "chdir")) return do_chdir();
    if (!strcmp(m, "threads")) return do_threads();
    if (!strcmp(m, "sigint")) return do_sigint();
    if (!strcmp(m, "spin")) {
        for (;;)
            burn(10);
    }
    if (!strcmp(m, "abort")) return do_abort();
    if (!strcmp(m, "exit3")) return do_exit3();
    if (!strcmp(m, "forkexit")) return do_forkexit();
    if (!strcmp(m, "sysexit")) {
        burn(50);
        syscall(SYS_exit_group, 0);
    }
    fprintf(stderr, "usage: noharm_prog fdreuse|closeloop|closefrom|closerange|sigprof|rtsig|"
                    "signals|exec|chdir|threads|sigint|spin|abort|exit3|forkexit|sysexit\n");
    return 2;
}
