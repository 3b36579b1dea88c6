#!/usr/bin/env bash
# What including baton costs a user's translation unit: for each top header, a unit that only
# includes it and a unit that runs one lease acquire and release on that store, each compiled
# header-only and with BATON_SEPARATE_COMPILATION (the unit alone: <baton/src.hpp> is compiled
# once and reported apart). Prints user CPU seconds and peak compiler memory per unit, and the
# ratio to a unit that only includes Asio's io_context, the floor any Asio program pays.
#
#   bench/compile_cost.sh [--cxx clang++] [--flags "-O0"] [--rounds N] [--against DIR] [--only NAME]
#
# --against DIR compiles the same units against a second tree (its include/ directory) too,
# alternating the two in every round, and prints both with their ratio: before and after, in one
# run. Each figure is the median of --rounds (default 3) compiles. Needs GNU time (/usr/bin/time).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cxx=clang++
flags="-O0"
rounds=3
against=
only=
while [ $# -gt 0 ]; do
  case "$1" in
    --cxx) cxx=$2; shift 2 ;;
    --flags) flags=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --against) against=$(cd "$2" && pwd); shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "compile_cost.sh: unknown argument $1" >&2; exit 64 ;;
  esac
done
[ -x /usr/bin/time ] || { echo "compile_cost.sh: needs GNU time (apt-get install time)" >&2; exit 64; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The units. A lease unit constructs its store with settings that need no server (nothing runs).
unit() { # name text
  printf '%s\n' "$2" > "$work/$1.cpp"
}
unit asio '#include <boost/asio/io_context.hpp>
int main() { boost::asio::io_context ioc; ioc.run(); }'
lease_main() { # include, store construction, lease type
  printf '#include <%s>\nint main() {\n    boost::asio::io_context ioc;\n    auto ex = ioc.get_executor();\n%s\n    %s lease(ex, store, {.key = "k"});\n    lease.async_acquire([&](baton::error_code, baton::lease_grant) { lease.async_release([](baton::error_code) {}); });\n    ioc.run();\n}\n' "$1" "$2" "$3"
}
mem_store='    baton::memory_backend store(ex);'
file_store='    baton::file_backend_params fp;
    fp.root = "/tmp/baton-compile-cost";
    baton::file_backend store(ex, fp);'
s3_store='    baton::s3_backend_params sp;
    sp.bucket = "b";
    sp.region = "us-east-1";
    baton::s3_backend store(ex, sp);'
ddb_store='    baton::dynamodb_backend_params dp;
    dp.table = "t";
    dp.region = "us-east-1";
    baton::dynamodb_backend store(ex, dp);'
commit_store='    baton::s3_backend_params sp;
    sp.bucket = "b";
    sp.region = "us-east-1";
    baton::dynamodb_backend_params dp;
    dp.table = "t";
    dp.region = "us-east-1";
    baton::s3_dynamodb_commit store(baton::s3_backend(ex, sp), baton::dynamodb_backend(ex, dp));'
for h in memory file s3 dynamodb commit_protocol baton; do
  unit "include-$h" "#include <baton/$h.hpp>
int main() {}"
done
unit lease-memory "$(lease_main baton/memory.hpp "$mem_store" baton::memory_lease)"
unit lease-file "$(lease_main baton/file.hpp "$file_store" baton::file_lease)"
unit lease-s3 "$(lease_main baton/s3.hpp "$s3_store" baton::s3_lease)"
unit lease-dynamodb "$(lease_main baton/dynamodb.hpp "$ddb_store" baton::dynamodb_lease)"
unit lease-commit_protocol "$(lease_main baton/commit_protocol.hpp "$commit_store" baton::s3_dynamodb_lease)"
unit lease-baton "$(lease_main baton/baton.hpp "$ddb_store" baton::dynamodb_lease)"
unit src '#define BATON_SEPARATE_COMPILATION
#include <baton/src.hpp>'

# One compile: "user_seconds peak_kib", or "failed".
compile_once() { # tree unit mode
  local inc="$1/include" extra=
  [ "$3" = separate ] && extra=-DBATON_SEPARATE_COMPILATION
  if /usr/bin/time -f "%U %M" -o "$work/t" "$cxx" -std=c++20 $flags $extra -I"$inc" -c "$work/$2.cpp" -o "$work/$2.o" \
       >"$work/log" 2>&1; then
    cat "$work/t"
  else
    echo "compile_cost.sh: $2 ($3, $1) does not compile:" >&2
    head -5 "$work/log" >&2
    echo failed
  fi
}
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

trees=("$here")
[ -n "$against" ] && trees+=("$against")
units=(asio include-memory include-file include-s3 include-dynamodb include-commit_protocol include-baton
       lease-memory lease-file lease-s3 lease-dynamodb lease-commit_protocol lease-baton)
declare -A user mem
for r in $(seq 1 "$rounds"); do
  for u in "${units[@]}" src; do
    [ -n "$only" ] && [ "$u" != asio ] && [[ "$u" != *"$only"* ]] && continue
    for mode in header-only separate; do
      [ "$u" = asio ] && [ "$mode" = separate ] && continue
      [ "$u" = src ] && [ "$mode" = header-only ] && continue
      # Alternate the trees' order every round, so that neither always runs on a warmer cache.
      order=("${trees[@]}")
      if [ ${#trees[@]} -eq 2 ] && [ $((r % 2)) -eq 0 ]; then order=("${trees[1]}" "${trees[0]}"); fi
      for t in "${order[@]}"; do
        read -r us kib < <(compile_once "$t" "$u" "$mode" | awk '{ print $1, ($2 == "" ? 0 : $2) }')
        user["$t|$u|$mode"]+="$us "
        mem["$t|$u|$mode"]+="$kib "
      done
    done
  done
done

fig() { # tree unit mode -> "seconds megabytes"
  local k="$1|$2|$3" s m
  s=$(tr ' ' '\n' <<<"${user[$k]:-}" | grep -v '^$' | median)
  m=$(tr ' ' '\n' <<<"${mem[$k]:-}" | grep -v '^$' | median)
  echo "$s $((${m%.*} / 1024))"
}
echo "$cxx $flags, -std=c++20; user CPU seconds and peak MB, median of $rounds; x asio = the ratio to a unit that only includes Asio's io_context"
read -r base _ < <(fig "$here" asio header-only)
if [ -z "$against" ]; then
  printf '%-26s %-12s %8s %8s %8s\n' unit mode seconds MB "x asio"
else
  read -r base_old _ < <(fig "$against" asio header-only)
  printf '%-26s %-12s %8s %8s %8s   %8s %8s %8s   %7s\n' unit mode "s (this)" MB "x asio" "s (other)" MB "x asio" "this/other"
fi
for u in "${units[@]}" src; do
  for mode in header-only separate; do
    [ -n "${user["$here|$u|$mode"]:-}" ] || continue
    read -r s m < <(fig "$here" "$u" "$mode")
    if [ -z "$against" ]; then
      printf '%-26s %-12s %8s %8s %8.2f\n' "$u" "$mode" "$s" "$m" "$(awk -v a="$s" -v b="$base" 'BEGIN { print a / b }')"
    else
      read -r so mo < <(fig "$against" "$u" "$mode")
      printf '%-26s %-12s %8s %8s %8.2f   %8s %8s %8.2f   %7.2f\n' "$u" "$mode" "$s" "$m" \
        "$(awk -v a="$s" -v b="$base" 'BEGIN { print a / b }')" "$so" "$mo" \
        "$(awk -v a="$so" -v b="$base_old" 'BEGIN { print a / b }')" "$(awk -v a="$s" -v b="$so" 'BEGIN { print (b > 0) ? a / b : 0 }')"
    fi
  done
done
