#!/usr/bin/env python3
"""Sums test cases over meson test logs: doctest's own counts where a test
printed them, else one case per meson test. Prints 'N passed, N failed'."""
import json, re, sys

passed = failed = skipped = 0
summary = re.compile(r"\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|\s*(\d+) skipped")
for path in sys.argv[1:]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        continue
    for line in lines:
        if not line.strip():
            continue
        t = json.loads(line)
        out = t.get("stdout", "") or ""
        m = summary.findall(out)
        if m:
            _, p, f, s = (int(x) for x in m[-1])
            passed += p
            failed += f
            if t.get("result") not in ("OK", "EXPECTEDFAIL") and f == 0:
                failed += 1  # crashed or timed out after doctest's summary
        elif t.get("result") == "SKIP":
            skipped += 1
        elif t.get("result") in ("OK", "EXPECTEDFAIL"):
            passed += 1
        else:
            failed += 1
line = f"{passed} passed, {failed} failed"
if skipped:
    line += f", {skipped} skipped"
print(line)
