#!/usr/bin/env python3
"""Prints every public header under include/ (not in a detail/ or impl/ folder), one per line,
relative to include/: the standalone-header test compiles each of them alone. src.hpp and its
parts (src/) are left out: they exist to be compiled in separate-compilation mode only (and say
so with an #error)."""
import pathlib
import sys

root = pathlib.Path(sys.argv[1])
for path in sorted(root.rglob('*.hpp')):
    rel = path.relative_to(root)
    if not {'detail', 'impl', 'src'} & set(rel.parts[:-1]) and rel.as_posix() != 'baton/src.hpp':
        print(rel.as_posix())
