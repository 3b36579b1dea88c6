#!/usr/bin/env bash
# A long robustness soak by hand: rounds of run.py on each store, a new seed each round, the four
# stores at once, for N minutes each; then the figures summed per store: rounds (histories
# checked), operations, unknown outcomes, faults injected by kind, violations.
#
#   tests/robustness/soak.sh --minutes N [--build DIR] [--stores "file dynamodb s3 composed"] [--first-seed S]
#
# Needs the servers' variables (run it under tests/servers/with-servers.sh rgw dynalite s3rver, or
# after eval "$(tests/servers/start.sh ...)"); DIR (default build-ci) holds the robustness programs.
# A failing round keeps its files (the path is in its log) and the soak goes on.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
minutes=30 build=build-ci stores="file dynamodb s3 composed" first=1000
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) minutes=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --stores) stores=$2; shift 2 ;;
    --first-seed) first=$2; shift 2 ;;
    *) echo "usage: soak.sh --minutes N [--build DIR] [--stores LIST] [--first-seed S]" >&2; exit 64 ;;
  esac
done
traffic=$build/tests/robustness/baton_traffic checker=$build/tests/robustness/baton_history_check
[ -x "$traffic" ] && [ -x "$checker" ] || { echo "soak.sh: build $traffic and $checker first" >&2; exit 64; }
out=$(mktemp -d "${TMPDIR:-/tmp}/baton-soak.XXXXXX")
echo "soak: $minutes min per store ($stores), logs in $out"
for store in $stores; do
  (
    end=$(($(date +%s) + minutes * 60)) seed=$first
    while [ "$(date +%s)" -lt "$end" ]; do
      python3 "$here/run.py" "$traffic" "$checker" "$store" --seed "$seed" >"$out/$store-$seed.log" 2>&1
      seed=$((seed + 1))
    done
  ) &
done
wait
python3 - "$out" $stores <<'PY'
import collections, glob, json, sys
out, stores = sys.argv[1], sys.argv[2:]
bad = 0
for store in stores:
    rounds = passed = ops = unknown = violations = 0
    network, process = collections.Counter(), collections.Counter()
    failed = []
    for path in sorted(glob.glob("%s/%s-*.log" % (out, store))):
        text = open(path).read()
        rounds += 1
        if text.rstrip().endswith("1 passed, 0 failed"):
            passed += 1
        else:
            failed.append(path)
        for line in text.splitlines():
            if line.startswith("figures "):
                f = json.loads(line[8:])
                ops += f["operations"]; unknown += f["unknown"]; violations += f["violations"]
                network.update(f["network"]); process.update(f["process"])
    bad += len(failed)
    print("%-9s rounds %d (passed %d), operations %d, unknown outcomes %d, violations %d" %
          (store, rounds, passed, ops, unknown, violations))
    print("          network faults: %s" % (", ".join("%s %d" % kv for kv in sorted(network.items()) if kv[0] != "pass") or "none"))
    print("          requests passed untouched: %d; process faults: %s" % (
        network.get("pass", 0), ", ".join("%s %d" % kv for kv in sorted(process.items()))))
    for path in failed:
        print("          FAILED: " + path)
sys.exit(1 if bad else 0)
PY
