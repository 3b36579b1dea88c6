#!/usr/bin/env python3
"""The slowest compile units of the given build dirs, from ninja's own log
(.ninja_log: start and end in ms, per output). Prints 'seconds  dir: output'."""
import os, sys

rows = []
for d in sys.argv[1:]:
    try:
        lines = open(os.path.join(d, ".ninja_log")).read().splitlines()
    except OSError:
        continue
    latest = {}
    for line in lines[1:]:
        parts = line.split("\t")
        if len(parts) < 4 or not parts[3].endswith(".o"):
            continue
        latest[parts[3]] = (int(parts[1]) - int(parts[0])) / 1000.0  # the last build of each output
    rows += [(secs, d, out) for out, secs in latest.items()]
for secs, d, out in sorted(rows, reverse=True)[:10]:
    print(f"{secs:7.1f}s  {d}: {out}")
