#!/usr/bin/env bash
# Installs baton with `meson install` into a scratch prefix, then builds and runs
# Conan's test_package sources (packaging/conan/test_package) against that tree
# as users outside Meson would: with CMake (find_package(baton CONFIG REQUIRED),
# target baton::baton) and with pkg-config (baton.pc), each header-only and with
# BATON_SEPARATE_COMPILATION (baton_src.cpp then compiles baton's compiled parts).
# Usage: installed.sh SRC_ROOT WORK_DIR
set -euo pipefail
src=$(cd "$1" && pwd)
work=$2
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
app=$src/packaging/conan/test_package

run() { # log command...: runs quietly, shows the log when it fails
  local log=$work/$1
  shift
  "$@" >"$log" 2>&1 || { cat "$log"; echo "installed.sh: failed: $*" >&2; exit 1; }
}

run install.log bash -c "meson setup '$work/baton-build' '$src' --prefix='$prefix' -Dtests=false -Dexamples=false \
  -Dbenchmarks=false && meson install -C '$work/baton-build'"

# Only the installed tree may serve: the source tree's headers are not on any path below. Every
# header of the source tree is installed, at the same path (the program below includes only some).
missing=$(comm -23 <(cd "$src/include" && find baton -type f | sort) <(cd "$prefix/include" && find baton -type f | sort))
[ -z "$missing" ] || { echo "installed.sh: not installed: $missing" >&2; exit 1; }

# CMake: the package files under share/cmake/baton, found through CMAKE_PREFIX_PATH; header-only,
# then with the compiled parts in one unit of the program (BATON_SEPARATE_COMPILATION).
for mode in OFF ON; do
  run cmake-configure-$mode.log cmake -S "$app" -B "$work/cmake-$mode" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
    -DBATON_SEPARATE_COMPILATION=$mode
  run cmake-build-$mode.log cmake --build "$work/cmake-$mode"
  "$work/cmake-$mode/test_package"
done

# pkg-config: baton.pc wherever Meson put it (lib/<triplet>/pkgconfig on Debian).
pc=$(find "$prefix" -name baton.pc | head -1)
[ -n "$pc" ] || { echo "installed.sh: baton.pc not installed" >&2; exit 1; }
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs baton)
run pkg-config-build.log bash -c "${CXX:-c++} -std=c++20 '$app/test_package.cpp' '$app/baton_src.cpp' \
  -o '$work/pc_test_package' $flags"
"$work/pc_test_package"
# Separately compiled, a unit at a time: the program's own unit must only refer to baton's
# compiled parts (the signing key's derivation), which baton_src.cpp defines.
cxx=${CXX:-c++}
cflags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags baton)
libs=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --libs baton)
run pkg-config-build-separate.log bash -c "$cxx -std=c++20 -DBATON_SEPARATE_COMPILATION $cflags -c '$app/test_package.cpp' \
  -o '$work/pc_main.o' && $cxx -std=c++20 -DBATON_SEPARATE_COMPILATION $cflags -c '$app/baton_src.cpp' -o '$work/pc_src.o' &&
  $cxx '$work/pc_main.o' '$work/pc_src.o' -o '$work/pc_test_package_separate' $libs"
nm -C "$work/pc_main.o" >"$work/pc_main.nm"
nm -C "$work/pc_src.o" >"$work/pc_src.nm"
grep -q " U baton::aws::derive_signing_key" "$work/pc_main.nm" && grep -q " T baton::aws::derive_signing_key" "$work/pc_src.nm" ||
  { echo "installed.sh: separately compiled, the program's unit still defines baton's compiled parts" >&2; exit 1; }
"$work/pc_test_package_separate"
echo "installed.sh: CMake and pkg-config consumers built and ran against $prefix, header-only and separately compiled"
