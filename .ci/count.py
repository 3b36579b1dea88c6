#!/usr/bin/env python3
"""Sums test cases over meson test logs: doctest's own counts where a test
printed them (the last summary line: a stress run ends with one over its
distinct cases), else a closing 'N passed, N failed' line (the Python suites
count their rounds so), else one case per meson test. Prints 'N passed, N failed'."""
import json, re, sys

passed = failed = skipped = 0
doctest_summary = re.compile(r"\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed\s*\|\s*(\d+) skipped")
plain_summary = re.compile(r"^(\d+) passed, (\d+) failed$", re.M)
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
        ok = t.get("result") in ("OK", "EXPECTEDFAIL")
        m = doctest_summary.findall(out)
        plain = plain_summary.findall(out)
        if m:
            _, p, f, s = (int(x) for x in m[-1])
        elif plain:
            p, f = (int(x) for x in plain[-1])
        elif t.get("result") == "SKIP":
            skipped += 1
            continue
        else:
            p, f = (1, 0) if ok else (0, 1)
        passed += p
        failed += f
        if not ok and f == 0:
            failed += 1  # crashed or timed out after its summary
line = f"{passed} passed, {failed} failed"
if skipped:
    line += f", {skipped} skipped"
print(line)
