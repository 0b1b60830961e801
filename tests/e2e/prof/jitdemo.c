/* SPDX-License-Identifier: MIT */
/*
 * jitdemo.c - a tiny "JIT": copies a counting loop into fresh executable memory, registers
 * it with sampo_jit_register() (which appends it to /tmp/perf-PID.map) and runs it for
 * about a second under libsampo.  run_e2e.sh checks that our profile and `perf report`
 * (reading the perf map) both name the code "jit_spin_loop".
 *   jitdemo OUT_PROFILE
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "sampo.h"

int main(int argc, char **argv) {
    if (argc < 2) return 2;
#if defined(__x86_64__)
    /* mov rcx, rdi; 1: dec rcx; jnz 1b; ret */
    static const uint8_t code[] = {0x48, 0x89, 0xf9, 0x48, 0xff, 0xc9, 0x75, 0xfb, 0xc3};
#else
    printf("jitdemo: x86-64 only, skipped\n");
    return 0;
#endif
    printf("pid %d\n", (int)getpid()); /* its /tmp/perf-PID.map is the caller's to remove */
    fflush(stdout);
    uint8_t *mem =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return 1;
    memcpy(mem, code, sizeof code);
    void (*fn)(uint64_t) = (void (*)(uint64_t))(uintptr_t)mem;
    SampoConfig c;
    sampo_config_default(&c);
    c.hz = 1000;
    c.cost_ns = 40000;
    c.out_path = argv[1];
    if (sampo_jit_register((uint64_t)(uintptr_t)mem, sizeof code, "jit_spin_loop")) return 1;
    if (sampo_start(&c)) return 1;
    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    do {
        fn(1000000);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    } while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 1000000000L);
    return sampo_stop() ? 1 : 0;
}
