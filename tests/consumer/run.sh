#!/usr/bin/env bash
# Builds tests/consumer as a separate Meson project that gets baton through a
# wrap ([provide] baton = baton_dep), then runs it: header-only, and again with
# -Dbaton:separate_compilation=true (baton_dep then links baton's compiled parts).
# Usage: run.sh SRC_ROOT WORK_DIR
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
build() { # dir meson-options...
  local dir=$work/$1
  shift
  meson setup "$dir" "$work" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; exit 1; }
  ninja -C "$dir" >"$dir.build.log" 2>&1 || { cat "$dir.build.log"; exit 1; }
  "$dir/consumer" | tee "$dir.out"
}
build build
build build-separate -Dbaton:separate_compilation=true
# The second program was compiled in that mode, against baton's library.
grep -q "(separate compilation)" "$work/build-separate.out" && [ -f "$work/build-separate/subprojects/baton/libbaton_src.a" ] ||
  { echo "run.sh: -Dbaton:separate_compilation=true did not give the separately compiled program" >&2; exit 1; }
