#!/usr/bin/env python3
"""Draws a parameter study of run.py (its markdown table, from a file) as an SVG: one panel
per program, the parameter's values on the x axis, bars for outlier runs (left axis) and a
line for the median detection-to-installed latency (right axis).  Standard library only.

  plot.py study-t1.md "T1" docs/img/fb-t1.svg
"""
import sys


def rows(path):
    out = []
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 8 or not cells[0] or not cells[0][0].isdigit():
            continue
        k = 7 if len(cells) >= 9 else 6  # with or without the deopt-loop column
        lat = float(cells[k]) if cells[k] != "-" else None
        out.append((cells[0], cells[1], int(cells[2]), int(cells[4]), int(cells[5]), lat))
    return out


def main():
    src, label, dst = sys.argv[1:4]
    data = rows(src)
    progs = []
    for r in data:
        if r[1] not in progs:
            progs.append(r[1])
    pw, ph, m = 260, 200, 50
    w, h = m + len(progs) * (pw + m), ph + 2 * m + 20
    maxlat = max([r[5] for r in data if r[5] is not None] + [1.0])
    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (w, h),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="16" font-size="13">Sampled type feedback: outliers (bars, runs &gt;10%% '
           'slower than the median) and latency (line, ms) vs %s</text>' % (m, label)]
    for pi, prog in enumerate(progs):
        x0, y0 = m + pi * (pw + m), m
        pr = [r for r in data if r[1] == prog]
        n = max(r[2] for r in pr)
        svg.append('<text x="%d" y="%d">%s</text>' % (x0, y0 - 8, prog))
        svg.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#888"/>'
                   % (x0, y0, pw, ph))
        bw = pw / len(pr)
        pts = []
        for i, r in enumerate(pr):
            bh = ph * (r[3] + r[4]) / n
            svg.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#d62728" '
                       'opacity="0.7"/>' % (x0 + i * bw + bw * 0.2, y0 + ph - bh, bw * 0.6, bh))
            svg.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>'
                       % (x0 + i * bw + bw / 2, y0 + ph + 14, r[0]))
            if r[5] is not None:
                pts.append("%.1f,%.1f" % (x0 + i * bw + bw / 2, y0 + ph - ph * r[5] / maxlat))
        if pts:
            svg.append('<polyline points="%s" fill="none" stroke="#1f77b4" stroke-width="2"/>'
                       % " ".join(pts))
        svg.append('<text x="%d" y="%d" fill="#d62728">outliers + not recompiled / %d runs</text>'
                   % (x0, y0 + ph + 30, n))
        svg.append('<text x="%d" y="%d" fill="#1f77b4">latency, top = %.0f ms</text>'
                   % (x0, y0 + ph + 44, maxlat))
    svg.append("</svg>")
    open(dst, "w").write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
