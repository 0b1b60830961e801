/* SPDX-License-Identifier: MIT */
/*
 * cmd_compare.c - `sampo compare A B`: Pearson correlation of per-method counters,
 * Arnold-Ryder overlap of the context trees, and the biggest per-method differences.
 */
#include "cmds.h"

#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "compare.h"
#include "report.h"

static const char compare_usage[] =
    "usage: sampo compare [--limit N] [--time] [--focus RE] [--ignore RE] A B\n"
    "  Pearson correlation of per-method self and total counters (methods matched by name),\n"
    "  overlap of the calling context trees (sum over contexts of min of normalized weights),\n"
    "  and the N biggest differences in self share (only real ones: a change that rounds to\n"
    "  0.00 percentage points is not listed).\n"
    "  -l, --limit N   differences listed (default 10, 0 = all)\n"
    "  --time          compare profiles that carry times (exact mode) by time, not invocations\n"
    "  --focus RE      in both profiles, keep only samples with a frame matching RE (POSIX\n"
    "                  extended regex), as sampo report --focus\n"
    "  --ignore RE     in both profiles, drop samples with a frame matching RE (for example\n"
    "                  '\\[jit compile\\]': the JIT compiler thread's samples)\n"
    "  -h, --help      this text\n";

/* Applies --focus/--ignore to p (loaded from path); false after saying why not. */
static bool compare_filter(SpProfile *p, const char *path, const char *focus, const char *ignore) {
    char err[512];
    int rc = sp_profile_filter_frames(p, focus, ignore, err, sizeof err);
    if (rc == -2) fprintf(stderr, "sampo compare: %s: %s\n", path, err);
    if (rc == -1) fprintf(stderr, "sampo compare: out of memory\n");
    return rc == 0;
}

int cmd_compare(int argc, char **argv) {
    enum { O_FOCUS = 256, O_IGNORE };
    static const struct option opts[] = {{"limit", required_argument, 0, 'l'},
                                         {"time", no_argument, 0, 't'},
                                         {"focus", required_argument, 0, O_FOCUS},
                                         {"ignore", required_argument, 0, O_IGNORE},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    uint64_t limit = 10;
    const char *focus = NULL, *ignore = NULL;
    int c, tw = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "l:h", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
            if (sampo_parse_u64(optarg, &limit)) {
                fprintf(stderr, "sampo compare: expected a count, got '%s'\n", optarg);
                return 2;
            }
            break;
        case 't':
            tw = 1;
            break;
        case O_FOCUS:
            focus = optarg;
            break;
        case O_IGNORE:
            ignore = optarg;
            break;
        case 'h':
            fputs(compare_usage, stdout);
            return 0;
        default:
            fputs(compare_usage, stderr);
            return 2;
        }
    }
    if (optind != argc - 2) {
        fputs(compare_usage, stderr);
        return 2;
    }
    SpProfile *a = sampo_load(argv[optind]), *b = a ? sampo_load(argv[optind + 1]) : NULL;
    SpCompare r;
    int rc = 1;
    if (!a || !b) goto out;
    if (!compare_filter(a, argv[optind], focus, ignore) ||
        !compare_filter(b, argv[optind + 1], focus, ignore)) {
        rc = 2;
        goto out;
    }
    if (sp_compare_ex(a, b, tw, &r)) {
        fprintf(stderr, "sampo compare: out of memory\n");
        goto out;
    }
    printf("weights:            %s\n", tw ? "time where recorded (--time), else counts" : "counts");
    printf("methods:            %zu (union)\n", r.nmethods);
    printf("correlation(self):  %.4f\n", r.corr_self);
    printf("correlation(total): %.4f\n", r.corr_total);
    printf("overlap:            %.2f%%\n", 100.0 * r.overlap);
    size_t shown = 0, real = 0;
    for (size_t i = 0; i < r.ndiffs; i++) /* what prints as +0.00 / -0.00 is no difference */
        real += fabs(r.diffs[i].pct_b - r.diffs[i].pct_a) >= 0.005;
    if (!real) {
        printf("\nno differences in self share (every method within 0.005 percentage points)\n");
    } else {
        printf(
            "\nbiggest differences in self share (%zu of %zu methods differ):\n%8s %8s %8s  %s\n",
            real, r.nmethods, "A%", "B%", "B-A", "name");
        for (size_t i = 0; i < r.ndiffs && (!limit || shown < limit); i++) {
            double d = r.diffs[i].pct_b - r.diffs[i].pct_a;
            if (fabs(d) < 0.005) continue;
            printf("%7.2f%% %7.2f%% %+7.2f  %s\n", r.diffs[i].pct_a, r.diffs[i].pct_b, d,
                   r.diffs[i].name);
            shown++;
        }
        if (shown < real) printf("... %zu more\n", real - shown);
    }
    sp_compare_fini(&r);
    rc = 0;
out:
    sp_profile_free(a);
    sp_profile_free(b);
    return rc;
}
