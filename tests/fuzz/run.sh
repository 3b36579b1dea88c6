#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time on a copy of its seed corpus
# (libFuzzer adds inputs to the corpus folder; the committed seeds stay as they are).
# Usage: run.sh TARGET SEED_CORPUS_DIR SECONDS
set -euo pipefail
target=$1 seeds=$2 seconds=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/baton-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r "$seeds"/. "$work/"
"$target" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$work/crash-" "$work" 2>&1 | tail -12
