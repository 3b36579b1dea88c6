#!/usr/bin/env bash
# Failover and handoff: how long a lease stays without a holder when its holder releases it,
# crashes or freezes, and an election without a leader when the leader crashes; baton on
# dynalite and Ceph RGW next to dynamodb-lock-client on the SAME dynalite, in one run (see
# bench/README.md, docs/benchmarks.md, and docs/lease.md for what the figures mean).
#
#   bench/run-failover-bench.sh        # ~16 min: 50 runs per cell, the columns concurrently
#
# Scenarios: (a) handoff: the holder releases, a waiting contender (another process) takes it;
# (b) crash: the holder is SIGKILLed; (c) freeze: the holder is SIGSTOPped; (d) election: the
# leader is SIGKILLed and a standby campaigning (and following the leader) is elected.
# Columns (COLUMNS, comma-separated):
#   baton-ddb              dynamodb_lease on dynalite                (a) (b) (c) (d)
#   baton-s3               s3_lease on Ceph RGW                      (a) (b) (c) (d)
#   baton-ddb-skew1        dynamodb_lease with max_clock_rate_skew 1     (b) (c)
#   lockclient             dynamodb-lock-client FailOpen             (a) (b) (c)
#   lockclient-failclosed  dynamodb-lock-client FailClosed           (a)  (no lease: a crashed
#                          holder's lock is never taken over)
# baton's participants are bench/failover_bench processes; the lock client's are
# bench/failover/lockclient.js processes, at leaseDurationMs = TTL and heartbeatPeriodMs =
# TTL/3 (baton's renew interval) and, for FailClosed, acquirePeriodMs = POLL. The driver
# (bench/failover/driver.py) prints the raw lines' path, then a table per scenario and column
# (median, p99, max, min in ms; the bound docs/lease.md states, whether the maximum over all
# runs keeps it, and whether the runs over it keep it with their own requests' latency added,
# which the bound leaves out) and the ratios baton / lock client.
#
# Knobs (environment): RUNS=50 (per cell), TTL_MS=2000, POLL_MS=100, SKEW=2 (baton's
# max_clock_rate_skew), COLUMNS (default all five), SERIAL=0 (1: one column after the other,
# about three times as long), BUILD (build dir, default build-bench), OUT (directory for
# raw.jsonl; default a new /tmp/baton-failover-bench.XXXXXX).
# Needs: node (20+), npm, python3. The lock client (dynamodb-lock-client and aws-sdk, the
# versions pinned in bench/failover/package-lock.json) is installed by `npm ci` into
# bench/failover/node_modules when it is not there.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$HERE/.." && pwd -P)
BUILD=${BUILD:-$REPO/build-bench}
case "$BUILD" in /*) ;; *) BUILD=$REPO/$BUILD ;; esac
BENCH=$BUILD/bench/failover_bench
PEER=$HERE/failover
RUNS=${RUNS:-50} TTL_MS=${TTL_MS:-2000} POLL_MS=${POLL_MS:-100} SKEW=${SKEW:-2} SERIAL=${SERIAL:-0}
COLUMNS=${COLUMNS:-baton-ddb,baton-s3,baton-ddb-skew1,lockclient,lockclient-failclosed}
export RUNS TTL_MS POLL_MS SKEW SERIAL COLUMNS BENCH PEER

if [ "${1:-}" != --inner ]; then
  command -v python3 >/dev/null && command -v node >/dev/null && command -v npm >/dev/null ||
    { echo "run-failover-bench.sh: needs node, npm and python3" >&2; exit 2; }
  # The peer: the versions pinned in bench/failover/package-lock.json, in bench/failover/node_modules.
  want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["packages"]["node_modules/dynamodb-lock-client"]["version"])' "$PEER/package-lock.json")
  have=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$PEER/node_modules/dynamodb-lock-client/package.json" 2>/dev/null || true)
  if [ "$want" != "$have" ]; then
    echo "# npm ci in bench/failover (dynamodb-lock-client $want)" >&2
    (cd "$PEER" && npm ci --no-audit --no-fund >/dev/null)
  fi
  # failover_bench, optimised: a new build dir is configured for release; an existing one is checked.
  if [ ! -f "$BUILD/build.ninja" ]; then
    meson setup "$BUILD" "$REPO" --buildtype=release -Dbenchmarks=true -Dtests=false >/dev/null
  fi
  opts=$(meson introspect "$BUILD" --buildoptions | python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["buildtype"], o["benchmarks"])')
  if [ "$opts" != "release True" ]; then
    echo "run-failover-bench.sh: $BUILD has buildtype/benchmarks '$opts'; want 'release True':" >&2
    echo "  meson configure $BUILD --buildtype=release -Dbenchmarks=true, or BUILD=another-dir" >&2
    exit 2
  fi
  ninja -C "$BUILD" -j1 bench/failover_bench >/dev/null
  OUT=${OUT:-$(mktemp -d /tmp/baton-failover-bench.XXXXXX)}
  mkdir -p "$OUT"
  export OUT
  # Servers up, the run, and a margin: 50 runs of the longest column take about 16 minutes.
  exec timeout --signal=TERM $((600 + RUNS * 60)) "$REPO/tests/servers/with-servers.sh" rgw dynalite -- "$HERE/run-failover-bench.sh" --inner
fi

# ---- inside with-servers.sh: BATON_DYNAMODB_* and BATON_S3_* are set -------------------
echo "# baton failover benchmark; $(date -u +%FT%TZ); git $(git -C "$REPO" rev-parse --short HEAD); node $(node --version); $(nproc) CPUs"
echo "# dynalite $BATON_DYNAMODB_ENDPOINT, RGW $BATON_S3_ENDPOINT; RUNS=$RUNS TTL_MS=$TTL_MS POLL_MS=$POLL_MS SKEW=$SKEW SERIAL=$SERIAL"
echo "# dynamodb-lock-client $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$PEER/node_modules/dynamodb-lock-client/package.json"), aws-sdk $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$PEER/node_modules/aws-sdk/package.json")"
"$BENCH" setup --store ddb >/dev/null
"$BENCH" setup --store s3 >/dev/null
serial=()
[ "$SERIAL" = 1 ] && serial=(--serial)
exec python3 "$PEER/driver.py" --runs "$RUNS" --ttl-ms "$TTL_MS" --poll-ms "$POLL_MS" --skew "$SKEW" \
  --columns "$COLUMNS" --bench "$BENCH" --node-dir "$PEER" --out "$OUT" "${serial[@]}"
