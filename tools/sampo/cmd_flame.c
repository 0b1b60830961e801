/*
 * cmd_flame.c - `sampo flame FILE [-o out.svg]`: flame graph SVG (src/analysis/flame.h).
 */
#include "cmds.h"

#include <getopt.h>
#include <stdio.h>

#include "flame.h"

static const char flame_usage[] =
    "usage: sampo flame [--title TEXT] [--width PX] [--thread TID] FILE [-o OUT.svg]\n"
    "  Flame graph of the calling contexts (root at the bottom, width = inclusive weight).\n"
    "  -o OUT    output file (default: standard output)\n";

int cmd_flame(int argc, char **argv) {
    static const struct option opts[] = {
        {"output", required_argument, 0, 'o'}, {"title", required_argument, 0, 't'},
        {"width", required_argument, 0, 'w'},  {"thread", required_argument, 0, 'T'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
    SpFlameOpts o;
    const char *outpath = NULL;
    uint64_t v;
    const char *thread = NULL;
    int c;
    sp_flame_opts_default(&o);
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:t:w:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            outpath = optarg;
            break;
        case 't':
            o.title = optarg;
            break;
        case 'w':
            if (sampo_parse_u64(optarg, &v) || v < 100 || v > 100000) {
                fprintf(stderr, "sampo flame: expected a width in 100..100000, got '%s'\n", optarg);
                return 2;
            }
            o.width = (unsigned)v;
            break;
        case 'T':
            thread = optarg;
            break;
        case 'h':
            fputs(flame_usage, stdout);
            return 0;
        default:
            fputs(flame_usage, stderr);
            return 2;
        }
    }
    if (optind != argc - 1) {
        fputs(flame_usage, stderr);
        return 2;
    }
    SpProfile *p = sampo_load_thread(argv[optind], thread);
    if (!p) return 1;
    SpBuf out;
    sp_buf_init(&out);
    int rc = sp_flame_svg(p, &o, &out);
    if (rc)
        fprintf(stderr, "sampo flame: out of memory\n");
    else
        rc = sampo_write_out(outpath, &out);
    sp_buf_fini(&out);
    sp_profile_free(p);
    return rc ? 1 : 0;
}
