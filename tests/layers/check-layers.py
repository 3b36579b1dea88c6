#!/usr/bin/env python3
"""The house's one rule, checked from the #include lines: arrows only point down.

Each folder under include/baton/ is a layer (its detail/ and impl/ belong to it).
A header may include headers of its own layer and of the layers listed for it
below, never one above or beside it. The headers at the top (baton.hpp, the
per-store headers that name each recipe on that store, src.hpp and its parts
in src/) may include anything.

Usage: check-layers.py <include dir>. Exits 1 listing every include that points
the wrong way (or a quoted include, which would hide one)."""
import pathlib
import re
import sys

ALLOWED = {
    'core': {'core'},
    'http': {'core', 'http'},
    'aws': {'core', 'http', 'aws'},
    'azure': {'core', 'http', 'azure'},
    'store': {'core', 'store'},
    'backend': {'core', 'http', 'aws', 'azure', 'store', 'backend'},
    'recipe': {'core', 'store', 'recipe'},
    'sim': {'core', 'store', 'sim'},
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')

root = pathlib.Path(sys.argv[1]) / 'baton'
problems = []
checked = 0
for path in sorted(root.rglob('*.[hi]pp')):
    rel = path.relative_to(root)
    if len(rel.parts) == 1 or rel.parts[0] == 'src':
        continue  # the top: umbrella and convenience headers, and src.hpp's parts
    layer = rel.parts[0]
    if layer not in ALLOWED:
        problems.append(f'{rel}: folder {layer!r} is not a known layer (add it to {__file__})')
        continue
    for number, line in enumerate(path.read_text().splitlines(), 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        quote, target = m.groups()
        if quote == '"':
            problems.append(f'{rel}:{number}: quoted include "{target}" (use <baton/...>)')
            continue
        if not target.startswith('baton/'):
            continue  # the standard library, Boost, OpenSSL
        checked += 1
        parts = target.split('/')
        if len(parts) < 3:
            problems.append(f'{rel}:{number}: includes the top-level {target} (points up)')
            continue
        if parts[1] not in ALLOWED[layer] and '/'.join(parts[1:]) not in ALLOWED[layer]:
            problems.append(f'{rel}:{number}: layer {layer!r} includes {target} (layer {parts[1]!r})')

for p in problems:
    print(p)
print(f'{checked} includes checked, {len(problems)} pointing the wrong way')
sys.exit(1 if problems else 0)
