#!/usr/bin/env bash
# Installs baton with `meson install` into a scratch prefix, then builds and runs
# Conan's test_package sources (packaging/conan/test_package) against that tree
# twice, as users outside Meson would: with CMake (find_package(baton CONFIG
# REQUIRED), target baton::baton) and with pkg-config (baton.pc).
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

# CMake: the package files under share/cmake/baton, found through CMAKE_PREFIX_PATH.
run cmake-configure.log cmake -S "$app" -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$prefix"
run cmake-build.log cmake --build "$work/cmake"
"$work/cmake/test_package"

# pkg-config: baton.pc wherever Meson put it (lib/<triplet>/pkgconfig on Debian).
pc=$(find "$prefix" -name baton.pc | head -1)
[ -n "$pc" ] || { echo "installed.sh: baton.pc not installed" >&2; exit 1; }
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs baton)
run pkg-config-build.log bash -c "${CXX:-c++} -std=c++20 '$app/test_package.cpp' -o '$work/pc_test_package' $flags"
"$work/pc_test_package"
echo "installed.sh: CMake and pkg-config consumers built and ran against $prefix"
