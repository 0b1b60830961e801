/* SPDX-License-Identifier: MIT */
/*
 * cmd_flame.c - `sampo flame [FILE] [-o out.svg]`: flame graph SVG (src/analysis/flame.h).
 */
#include "cmds.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "flamehtml.h"

static const char flame_usage[] =
    "usage: sampo flame [options] [FILE] [-o OUT.svg]\n"
    "       sampo flame --html [options] [FILE] [-o OUT.html]\n"
    "       sampo flame --diff BASE [options] NEW [-o OUT.html]\n"
    "  Flame graph of the calling contexts (root at the bottom, width = inclusive weight,\n"
    "  siblings sorted by name).  FILE defaults to " SAMPO_DEFAULT_FILE ".\n"
    "  -o, --output OUT     output file (default: standard output)\n"
    "  -t, --title TEXT     heading (default \"Flame Graph\")\n"
    "  -w, --width PX       image width, 100..100000 (default 1200)\n"
    "  --min-width PX       omit frames narrower than PX pixels (default 0.1)\n"
    "  --reverse            icicle graph: roots at the top, callees below\n"
    "  --colors SCHEME      name (default: warm colours by frame name), module (one hue per\n"
    "                       object file or VM image) or state (by VM state: interpreting,\n"
    "                       primitive, native, gc, ...)\n"
    "  --thread TID         only the samples of one thread (OS thread id)\n"
    "  --html               an interactive page instead of the SVG (zoom, search, hover;\n"
    "                       self-contained, no network)\n"
    "  --diff BASE          the differential page (implies --html): widths from FILE, red\n"
    "                       where a frame's share grew since BASE, blue where it shrank\n"
    "  -h, --help           this text\n";

int cmd_flame(int argc, char **argv) {
    enum { O_MINW = 256, O_REVERSE, O_COLORS, O_HTML, O_DIFF };
    static const struct option opts[] = {{"output", required_argument, 0, 'o'},
                                         {"title", required_argument, 0, 't'},
                                         {"width", required_argument, 0, 'w'},
                                         {"min-width", required_argument, 0, O_MINW},
                                         {"reverse", no_argument, 0, O_REVERSE},
                                         {"colors", required_argument, 0, O_COLORS},
                                         {"thread", required_argument, 0, 'T'},
                                         {"html", no_argument, 0, O_HTML},
                                         {"diff", required_argument, 0, O_DIFF},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    SpFlameOpts o;
    const char *outpath = NULL;
    uint64_t v;
    const char *thread = NULL, *base_path = NULL;
    char *end;
    int c, html = 0;
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
        case O_MINW:
            o.min_width_px = strtod(optarg, &end);
            if (end == optarg || *end || !(o.min_width_px >= 0 && o.min_width_px <= 100000)) {
                fprintf(stderr, "sampo flame: expected --min-width PX in 0..100000, got '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case O_REVERSE:
            o.reverse = 1;
            break;
        case O_COLORS:
            if (!strcmp(optarg, "name"))
                o.colors = SP_FLAME_COLORS_NAME;
            else if (!strcmp(optarg, "module"))
                o.colors = SP_FLAME_COLORS_MODULE;
            else if (!strcmp(optarg, "state"))
                o.colors = SP_FLAME_COLORS_STATE;
            else {
                fprintf(stderr, "sampo flame: expected --colors name, module or state, got '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case 'T':
            thread = optarg;
            break;
        case O_HTML:
            html = 1;
            break;
        case O_DIFF:
            base_path = optarg;
            html = 1;
            break;
        case 'h':
            fputs(flame_usage, stdout);
            return 0;
        default:
            fputs(flame_usage, stderr);
            return 2;
        }
    }
    const char *path = sampo_file_arg(argc, argv, optind, flame_usage);
    if (!path) return 2;
    SpProfile *p = sampo_load_thread(path, thread);
    if (!p) return 1;
    SpProfile *base = NULL;
    if (base_path && !(base = sampo_load_thread(base_path, thread))) {
        sp_profile_free(p);
        return 1;
    }
    SpBuf out;
    sp_buf_init(&out);
    int rc = html ? sp_flame_html(p, base, &o, &out) : sp_flame_svg(p, &o, &out);
    sp_profile_free(base);
    if (rc)
        fprintf(stderr, "sampo flame: out of memory\n");
    else
        rc = sampo_write_out(outpath, &out);
    sp_buf_fini(&out);
    sp_profile_free(p);
    return rc ? 1 : 0;
}
