/* SPDX-License-Identifier: MIT */
/*
 * prof_check.c - reads a profile written by libsampo (through src/analysis) and checks it.
 *
 *   prof_check FILE [--tol PTS] [--min-samples N] [--thread-split] [--depth-min N]
 *                   [--meta KEY=VALUE] [--max-meta KEY=N] [NAME=PCT ...]
 * NAME=PCT: the share of samples whose stack contains NAME (inclusive, so a helper below a
 * function still counts for it) must be PCT +- tol (default 5) points.
 * --z Z: the tolerance of the NAME=PCT checks after it grows by Z standard deviations of a
 * share PCT measured from this profile's number of samples (binomial), so --tol is the
 * method's systematic error only and the check holds however many samples a run got.
 * --thread-split: the two busiest threads must split their samples 50/50 +- tol (grown by
 * --z given before it, as for NAME=PCT).
 * --depth-min N: some sample must have at least N frames.
 * Prints a small table either way; exit status 1 on a failed check.
 */
#include "profile.h"
#include "profile_io.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double share(const SpProfile *p, const char *name, uint64_t total) {
    uint64_t hit = 0;
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const SpSample *s = &p->samples[i];
        const uint32_t *st = sp_sample_stack(p, s);
        for (uint32_t d = 0; d < s->depth; d++)
            if (!strcmp(sp_str(p, p->frames[st[d]].name), name)) {
                hit += s->weight;
                break;
            }
    }
    return total ? 100.0 * (double)hit / (double)total : 0;
}

static int thread_split(const SpProfile *p, double tol, double z) {
    uint64_t *per = calloc(p->nthreads + 1, sizeof *per);
    for (uint32_t i = 0; i < p->nsamples; i++)
        per[p->samples[i].thread] += p->samples[i].weight;
    uint64_t a = 0, b = 0;
    for (uint32_t i = 0; i < p->nthreads; i++) {
        if (per[i] > a)
            b = a, a = per[i];
        else if (per[i] > b)
            b = per[i];
    }
    free(per);
    double pa = a + b ? 100.0 * (double)a / (double)(a + b) : 0;
    if (a + b) tol += z * 100 * sqrt(0.25 / (double)(a + b));
    printf("thread split: %.1f%% / %.1f%% (%llu, %llu samples; want 50 +- %.1f)\n", pa, 100 - pa,
           (unsigned long long)a, (unsigned long long)b, tol);
    return pa - 50 <= tol ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    SpProfile *p = NULL;
    char err[256];
    if (sp_profile_read(argv[1], &p, err, sizeof err)) {
        fprintf(stderr, "prof_check: %s\n", err);
        return 1;
    }
    double tol = 5, z = 0;
    uint64_t total = sp_total_weight(p), min_samples = 50;
    int fail = 0;
    printf("samples %llu, threads %u, trigger %s, mode %s\n", (unsigned long long)total,
           p->nthreads, sp_meta_get(p, "trigger") ? sp_meta_get(p, "trigger") : "?",
           sp_meta_get(p, "mode") ? sp_meta_get(p, "mode") : "?");
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--tol") && i + 1 < argc) {
            tol = atof(argv[++i]);
        } else if (!strcmp(a, "--z") && i + 1 < argc) {
            z = atof(argv[++i]);
        } else if (!strcmp(a, "--min-samples") && i + 1 < argc) {
            min_samples = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(a, "--thread-split")) {
            fail |= thread_split(p, tol, z);
        } else if (!strcmp(a, "--flat")) {
            /* self share per leaf function name: "pct<TAB>name" lines */
            uint64_t *self = calloc(p->nframes + 1, sizeof *self);
            for (uint32_t k = 0; k < p->nsamples; k++)
                if (p->samples[k].depth)
                    self[sp_sample_stack(p, &p->samples[k])[0]] += p->samples[k].weight;
            for (uint32_t f = 0; f < p->nframes; f++) {
                if (!self[f]) continue;
                const SpFrame *fr = &p->frames[f];
                uint32_t mi = sp_mapping_find(p, fr->addr); /* object-relative address */
                uint64_t rel =
                    mi == SP_NONE ? 0 : fr->addr - p->mappings[mi].start + p->mappings[mi].offset;
                printf("flat\t%.4f\t%s\t%s\t%llx\n", 100.0 * (double)self[f] / (double)total,
                       sp_str(p, fr->name), sp_str(p, fr->module), (unsigned long long)rel);
            }
            free(self);
        } else if (!strcmp(a, "--dump") && i + 1 < argc) {
            uint32_t n = (uint32_t)atoi(argv[++i]);
            for (uint32_t k = 0; k < p->nsamples && k < n; k++) {
                const SpSample *s = &p->samples[k];
                const uint32_t *st = sp_sample_stack(p, s);
                printf("sample %u t%u pc=%llx:", k, s->thread, (unsigned long long)s->pc);
                for (uint32_t d = 0; d < s->depth; d++)
                    printf(" %s", sp_str(p, p->frames[st[d]].name));
                printf("\n");
            }
        } else if (!strcmp(a, "--depth-min") && i + 1 < argc) {
            uint32_t want = (uint32_t)atoi(argv[++i]), best = 0;
            for (uint32_t k = 0; k < p->nsamples; k++)
                if (p->samples[k].depth > best) best = p->samples[k].depth;
            printf("max depth %u (want >= %u)\n", best, want);
            fail |= best < want;
        } else if (!strcmp(a, "--meta") && i + 1 < argc) {
            char kv[256];
            snprintf(kv, sizeof kv, "%s", argv[++i]);
            char *eq = strchr(kv, '=');
            if (!eq) return 2;
            *eq = 0;
            const char *v = sp_meta_get(p, kv);
            printf("meta %s = %s (want %s)\n", kv, v ? v : "(none)", eq + 1);
            fail |= !v || strcmp(v, eq + 1);
        } else if (!strcmp(a, "--max-meta") && i + 1 < argc) {
            char kv[256];
            snprintf(kv, sizeof kv, "%s", argv[++i]);
            char *eq = strchr(kv, '=');
            if (!eq) return 2;
            *eq = 0;
            const char *v = sp_meta_get(p, kv);
            printf("meta %s = %s (want <= %s)\n", kv, v ? v : "(none)", eq + 1);
            fail |= !v || strtoull(v, NULL, 10) > strtoull(eq + 1, NULL, 10);
        } else if (strchr(a, '=')) {
            char name[256];
            snprintf(name, sizeof name, "%s", a);
            char *eq = strchr(name, '=');
            *eq = 0;
            double want = atof(eq + 1), got = share(p, name, total), q = want / 100;
            double t = tol + (total ? z * 100 * sqrt(q * (1 - q) / (double)total) : 0);
            int bad = got < want - t || got > want + t;
            printf("%-20s %6.1f%% (want %.1f +- %.1f)%s\n", name, got, want, t,
                   bad ? "  FAIL" : "");
            fail |= bad;
        }
    }
    if (total < min_samples) {
        printf("too few samples: %llu < %llu\n", (unsigned long long)total,
               (unsigned long long)min_samples);
        fail = 1;
    }
    sp_profile_free(p);
    return fail;
}
