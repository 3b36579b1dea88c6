#!/usr/bin/env bash
# Builds tests/consumer as a separate Meson project that gets baton through a
# wrap ([provide] baton = baton_dep), then runs it. Usage: run.sh SRC_ROOT WORK_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
work=$2
rm -rf "$work"
mkdir -p "$work/subprojects"
cp "$src/tests/consumer/meson.build" "$work/"
# The same program the CMake, pkg-config and Conan consumers build (packaging/conan/test_package).
mkdir -p "$work/src"
cp "$src/packaging/conan/test_package/test_package.cpp" "$work/src/main.cpp"
# The wrap points at a checkout in subprojects/baton, as a vendored copy would be.
ln -s "$src" "$work/subprojects/baton"
cat > "$work/subprojects/baton.wrap" <<'WRAP'
[wrap-file]
directory = baton

[provide]
baton = baton_dep
WRAP
meson setup "$work/build" "$work" >"$work/setup.log" 2>&1 || { cat "$work/setup.log"; exit 1; }
ninja -C "$work/build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
"$work/build/consumer"
