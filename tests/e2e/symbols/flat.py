#!/usr/bin/env python3
"""Prints the flat profile of `sampo report --limit 0` output as "SELF<TAB>NAME<TAB>OBJECT"
lines (OBJECT: the file name in parentheses, "" if none).  usage: flat.py REPORT.txt"""
import re
import sys

text = open(sys.argv[1]).read()
flat = text.split("## flat profile")[1].split("\n\n")[0].splitlines()[2:]
for line in flat:
    m = re.match(r"\s*[\d.]+%\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+\d+\s+(.*?)(?: \(([^()]*)\))?$", line)
    if m:
        print("%s\t%s\t%s" % (m.group(1), m.group(2), m.group(3) or ""))
