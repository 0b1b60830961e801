/* SPDX-License-Identifier: MIT */
/*
 * handler_cost.c - what our SIGPROF handler costs per sample, without the kernel's signal
 * delivery: calls the real handler with a real ucontext from a call chain of a given depth
 * (native only, or with a 10-frame VM shadow chain), against an empty function with the
 * same signature.  Pauses between chunks so the manager drains (no drops while timing).
 *   handler_cost [DEPTH=12] [CALLS=200000]
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "capture.h"
#include "sampo.h"

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) static void empty_handler(int s, siginfo_t *i, void *u) {
    (void)s, (void)i, (void)u;
    __asm__ volatile("" ::: "memory");
}

typedef void (*Handler)(int, siginfo_t *, void *);

static uint64_t calls = 200000;

/* Times `calls` invocations of h in chunks; returns ns per call. */
__attribute__((noinline)) static double time_calls(Handler h) {
    ucontext_t uc;
    getcontext(&uc);
    uint64_t total = 0;
    for (uint64_t done = 0; done < calls; done += 200) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < 200; i++)
            h(SIGPROF, NULL, &uc);
        total += now_ns() - t0;
        SampoStats st;
        if (h != empty_handler) /* let the manager catch up (untimed) */
            do {
                usleep(500);
                sampo_get_stats(&st);
            } while (st.captured - st.samples > 400); /* current batch not yet flushed */
    }
    return (double)total / (double)calls;
}

__attribute__((noinline)) static double at_depth(int d, Handler h) {
    if (d > 0) {
        double r = at_depth(d - 1, h);
        __asm__ volatile("" ::: "memory");
        return r;
    }
    return time_calls(h);
}

int main(int argc, char **argv) {
    int depth = argc > 1 ? atoi(argv[1]) : 12;
    if (argc > 2) calls = strtoull(argv[2], NULL, 10);
    SampoConfig c;
    sampo_config_default(&c);
    c.hz = 1; /* the real trigger stays quiet */
    c.cost_ns = 40000;
    c.jitter = 0;
    c.buffer_kib = 65536;
    if (sampo_start(&c)) return 1;
    double empty = at_depth(depth, empty_handler);
    double native = at_depth(depth, prof_handler);
    SampoVmFrame f[10];
    SampoVmFrame *volatile top = NULL;
    for (int i = 0; i < 10; i++)
        f[i] = (SampoVmFrame){i ? &f[i - 1] : NULL, (uint64_t)100 + i, 1, 0};
    top = &f[9];
    sampo_vm_set_frame_chain(&top);
    double vm = at_depth(depth, prof_handler); /* marks make later walks stop at once */
    for (int i = 0; i < 10; i++)
        f[i].flags = 0;
    sampo_vm_set_frame_chain(NULL);
    sampo_stop();
    SampoStats st;
    sampo_get_stats(&st);
    c.jitter = 0.2; /* every 8th sample re-arms the trigger with a random interval */
    if (sampo_start(&c)) return 1;
    double jit = at_depth(depth, prof_handler);
    sampo_stop();
    printf("with jitter re-arm every 8th sample (%s): %.1f ns (+%.1f ns)\n",
           sampo_trigger_name(st.trigger), jit, jit - empty);
    printf("handler cost at native depth %d: empty %.1f ns, capture %.1f ns (+%.1f ns), "
           "with VM chain %.1f ns (+%.1f ns); %llu samples, %llu dropped\n",
           depth + 4, empty, native, native - empty, vm, vm - empty, (unsigned long long)st.samples,
           (unsigned long long)st.dropped);
    return 0;
}
