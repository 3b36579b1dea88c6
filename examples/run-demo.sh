#!/usr/bin/env bash
# Builds and runs the demo: three candidates on the embedded memory store.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/install-deps
[ -d build-demo ] || meson setup build-demo -Dtests=false -Dbenchmarks=false >/dev/null
ninja -C build-demo examples/baton_demo >/dev/null
exec build-demo/examples/baton_demo
