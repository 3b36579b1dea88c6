#!/usr/bin/env bash
# baton on real stores, side by side with the peer harnesses in ../shared/peers,
# on the SAME server instances, in one run (see bench/README.md).
#
#   bench/run-store-bench.sh            # ~4 min: 3 rounds, medians and ratios
#
# Starts Ceph RGW and dynalite through tests/servers/with-servers.sh (stopped by
# PID afterwards), builds bench/store_bench if needed, then runs round-robin
# REPS times: figure 1 (DynamoDB acquire+release cycles; 1p: the lease and the
# blocking client paired in one process), figure 2 (8 contending processes),
# figure 3 (S3 cycles on RGW), figure 4 (requests over one keep-alive
# connection); then one short run per extra poll interval (figure 2b). Prints
# the raw JSON lines as they come, then a table of medians and ratios.
#
# Knobs (environment): BUILD (build dir, default build-bench), REPS=3, N=2000 (DynamoDB
# cycles), S3N=1000, SECS=10 (contention), K=8, POLL_MS=25 (baton's poll interval in
# figure 2, the peer's retry interval), SWEEP="5 100 1000" (extra poll intervals,
# 5 s each; empty to skip), YIELD_MS=0 (baton's lease_options::yield_after in figure 2;
# 0 = two poll intervals, -1 = never), PIN=0 (1: dynalite on CPU 0, sequential clients on CPU 1),
# OUT (directory for raw.jsonl; default a new /tmp/baton-store-bench.XXXXXX).
# Needs: node + `npm ci` in ../shared/peers, curl, python3.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$HERE/.." && pwd -P)
PEERS=${PEERS:-$(cd "$REPO/../shared/peers" 2>/dev/null && pwd -P || true)}
BUILD=${BUILD:-$REPO/build-bench}
case "$BUILD" in /*) ;; *) BUILD=$REPO/$BUILD ;; esac
BENCH=$BUILD/bench/store_bench
REPS=${REPS:-3} N=${N:-2000} S3N=${S3N:-1000} SECS=${SECS:-10} K=${K:-8} POLL_MS=${POLL_MS:-25}
SWEEP=${SWEEP-5 100 1000} PIN=${PIN:-0} YIELD_MS=${YIELD_MS:-0}
export REPS N S3N SECS K POLL_MS SWEEP PIN BENCH PEERS YIELD_MS

if [ "${1:-}" != --inner ]; then
  [ -n "$PEERS" ] && [ -d "$PEERS/node_modules/dynamodb-lock-client" ] ||
    { echo "run-store-bench.sh: peers missing: cd ../shared/peers && npm ci" >&2; exit 2; }
  command -v curl >/dev/null && command -v python3 >/dev/null && command -v node >/dev/null ||
    { echo "run-store-bench.sh: needs curl, python3 and node" >&2; exit 2; }
  if [ ! -f "$BUILD/build.ninja" ]; then
    meson setup "$BUILD" "$REPO" --buildtype=release -Dbenchmarks=true -Dexamples=true >/dev/null
  fi
  ninja -C "$BUILD" -j1 bench/store_bench >/dev/null
  OUT=${OUT:-$(mktemp -d /tmp/baton-store-bench.XXXXXX)}
  mkdir -p "$OUT"
  export OUT
  exec timeout --signal=TERM 600 "$REPO/tests/servers/with-servers.sh" rgw dynalite -- "$HERE/run-store-bench.sh" --inner
fi

# ---- inside with-servers.sh: BATON_DYNAMODB_* and BATON_S3_* are set -------------------
RAW=$OUT/raw.jsonl
: >"$RAW"
export DDB_URL=$BATON_DYNAMODB_ENDPOINT # the peers' endpoint: the same dynalite as baton
export S3_URL=$BATON_S3_ENDPOINT         # and the same RGW
t_start=$(date +%s)

load() { echo "# load: $(uptime | sed 's/.*load average/load average/') | top other CPU users: $(ps -eo pcpu=,comm= --sort=-pcpu | head -3 | awk '{printf "%s %s%%; ", $2, $1}')"; }

# The peers' S3 harness signs as S3RVER/S3RVER (s3rver's keys): give RGW a user with them.
radosgw-admin -c "$BATON_RGW_CEPH_CONF" -n client.admin user create --uid=peers --display-name=peers \
  --access-key=S3RVER --secret=S3RVER >/dev/null 2>"$OUT/radosgw-admin.err" ||
  { echo "could not create the RGW user for the peers:" >&2; cat "$OUT/radosgw-admin.err" >&2; exit 1; }

CLIENT_PIN=()
if [ "$PIN" = 1 ]; then
  dpid=$(awk '$1 == "dynalite" { print $2 }' "$BATON_DYNALITE_STATE/pids")
  taskset -a -p -c 0 "$dpid" >/dev/null
  CLIENT_PIN=(taskset -c 1)
  echo "# pinned: dynalite (pid $dpid, all threads) on CPU 0; sequential clients on CPU 1; contention unpinned"
else
  echo "# not pinned (PIN=1 pins dynalite to CPU 0 and the sequential clients to CPU 1)"
fi

# run FIG REP CMD...: one measurement; its JSON line is tagged and kept.
run() {
  local fig=$1 rep=$2; shift 2
  local line
  if ! line=$(cd "$PEERS" && timeout 90 "$@" 2>"$OUT/last.err" | grep '^{' | tail -n 1) || [ -z "$line" ]; then
    echo "FAILED: $*" >&2; tail -n 5 "$OUT/last.err" >&2; return 0
  fi
  line="{\"fig\":\"$fig\",\"rep\":$rep,${line#\{}"
  echo "$line" | tee -a "$RAW"
}

echo "# baton store benchmarks; $(date -u +%FT%TZ); git $(git -C "$REPO" rev-parse --short HEAD); node $(node --version); $(nproc) CPUs"
echo "# dynalite $DDB_URL, RGW $S3_URL; REPS=$REPS N=$N S3N=$S3N SECS=$SECS K=$K POLL_MS=$POLL_MS"
P=("${CLIENT_PIN[@]}")
for rep in $(seq 1 "$REPS"); do
  load
  # Figure 1: acquire+release cycles on one key, dynalite.
  run 1 "$rep" "${P[@]}" "$BENCH" ddb-cycle --n "$N"
  # Figure 1 paired: the lease and the blocking client in one process, alternating blocks.
  run 1p "$rep" "${P[@]}" "$BENCH" ddb-paired --floor signed --blocks 20 --block 200
  run 1p "$rep" "${P[@]}" "$BENCH" ddb-paired --floor unsigned --blocks 20 --block 200
  run 1 "$rep" "${P[@]}" node e_raw_floor.js --variant cycle --n "$N"
  run 1 "$rep" "${P[@]}" "$BENCH" http-ddb --op cycle-unsigned --n "$N" --client beast-sync
  run 1 "$rep" "${P[@]}" "$BENCH" http-ddb --op cycle-signed --n "$N" --client beast-sync
  run 1 "$rep" "${P[@]}" "$BENCH" http-ddb --op cycle-unsigned --n "$N"
  run 1 "$rep" "${P[@]}" node a_lockclient_seq.js --mode failclosed --n "$N"
  run 1 "$rep" "${P[@]}" node b_sdkv3.js --target ddb --n "$N"
  # Figure 2: K processes contending for one key, hold 2 ms.
  run 2 "$rep" "$BENCH" ddb-contend --procs "$K" --seconds "$SECS" --hold-ms 2 --poll-ms "$POLL_MS" --yield-ms "$YIELD_MS"
  run 2 "$rep" node a_lockclient_contention.js --mode failclosed --k "$K" --seconds "$SECS" --hold-ms 2 --retry-ms "$POLL_MS" --procs
  # Figure 3: cycles on Ceph RGW (both clients on the same RGW).
  run 3 "$rep" "${P[@]}" "$BENCH" s3-cycle --n "$S3N"
  run 3 "$rep" "${P[@]}" node b_sdkv3.js --target s3 --n "$S3N"
  # Figure 4: sequential requests over one keep-alive connection.
  run 4 "$rep" "${P[@]}" "$BENCH" http-ddb --op put-unsigned --n "$N"
  run 4 "$rep" "${P[@]}" "$BENCH" http-ddb --op put-unsigned --n "$N" --client beast-sync
  run 4 "$rep" "${P[@]}" ./e_raw_floor_curl.sh "$N"
  run 4 "$rep" "${P[@]}" node e_raw_floor.js --variant put --n "$N"
  run 4 "$rep" "${P[@]}" "$BENCH" http-ddb --op get-signed --n "$N"
  run 4 "$rep" "${P[@]}" "$BENCH" http-ddb --op put-signed --n "$N"
  run 4 "$rep" "$BENCH" http-local --n 20000
  run 4 "$rep" "$BENCH" http-local --n 20000 --client beast-sync
done
for poll in $SWEEP; do
  run 2b 1 "$BENCH" ddb-contend --procs "$K" --seconds 5 --hold-ms 2 --poll-ms "$poll"
done
load
echo "# measured in $(( $(date +%s) - t_start )) s; raw lines: $RAW"
python3 - "$RAW" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def key(r): return (r["fig"], r["harness"], r["variant"])
groups = {}
for r in rows: groups.setdefault(key(r), []).append(r)
med = lambda g, f: st.median([r[f] for r in g if f in r]) if any(f in r for r in g) else None
print()
print("| fig | harness | variant | runs | ops/s median (range) | p50 ms | p99 ms | client CPU µs/op | notes |")
print("|---|---|---|---|---|---|---|---|---|")
for k in sorted(groups, key=lambda k: (k[0], list(groups).index(k))):
    g = groups[k]
    ops = [r["ops_per_s"] for r in g]
    notes = []
    if k[1] == "baton_dynamodb_lease_contention" or k[1] == "a_lockclient_contention":
        if "requests_per_acq" in g[0]:
            notes.append("req/acq %.2f (GetItem %.2f = poll %.2f + after failed put %.2f; PutItem %.2f)" % (
                med(g, "requests_per_acq"), med(g, "wire_get_per_acq"), med(g, "poll_reads_per_acq"),
                med(g, "reads_after_failed_put_per_acq"), med(g, "wire_put_per_acq")))
            notes.append("failed cond puts/acq %.2f" % med(g, "failed_cond_puts_per_acq"))
        else:
            c = [r["ddb_calls"] for r in g]
            acq = [r["acquisitions"] for r in g]
            notes.append("req/acq %.2f" % st.median([(x.get("puts", 0) + x.get("gets", 0) + x.get("deletes", 0)) / a for x, a in zip(c, acq)]))
            notes.append("failed cond puts/acq %.2f" % st.median([x.get("condFail", 0) / a for x, a in zip(c, acq)]))
        if "handovers_per_s" in g[0]: notes.append("handovers to another process %.0f/s" % med(g, "handovers_per_s"))
        notes.append("overlaps %s" % sum(r["overlaps"] for r in g))
        notes.append("served %s of %s" % (",".join(str(r["clients_that_acquired"]) for r in g), g[0]["k"]))
        notes.append("per-client min-max %s-%s" % (min(r["min_per_client"] for r in g), max(r["max_per_client"] for r in g)))
        notes.append("max wait %.0f ms" % max(r["max_wait_ms"] for r in g))
        if "jain" in g[0]: notes.append("Jain %s" % ",".join("%.3f" % r["jain"] for r in g))
    if "requests_per_cycle" in g[0]: notes.append("req/cycle %.2f" % med(g, "requests_per_cycle"))
    if "connections_opened" in g[0]: notes.append("connections %s" % max(r["connections_opened"] for r in g))
    if "new_connections" in g[0]: notes.append("connections %s" % max(r["new_connections"] for r in g))
    cpu = med(g, "client_cpu_us_per_op") if "client_cpu_us_per_op" in g[0] else med(g, "client_cpu_us_per_acq")
    print("| %s | %s | %s | %d | %.0f (%.0f-%.0f) | %.3f | %.3f | %s | %s |" % (k[0], k[1], k[2], len(g), st.median(ops), min(ops), max(ops),
          med(g, "p50_ms"), med(g, "p99_ms"), "-" if cpu is None else "%.1f" % cpu, "; ".join(notes)))
def ratio(label, a, b, field="ops_per_s"):
    ga, gb = groups.get(a), groups.get(b)
    if not ga or not gb: return
    per = {}
    for r in ga: per.setdefault(r["rep"], [None, None])[0] = r.get(field)
    for r in gb: per.setdefault(r["rep"], [None, None])[1] = r.get(field)
    pr = sorted(x / y for x, y in per.values() if x and y)
    if pr: print("| %s | %.2f | %s |" % (label, med(ga, field) / med(gb, field), ", ".join("%.2f" % x for x in pr)))
lease, http = ("1", "baton_dynamodb_lease", "cycle"), ("1", "baton_http_client", "ddb-cycle-unsigned")
unsigned, signed = ("1", "beast_sync_client", "ddb-cycle-unsigned"), ("1", "beast_sync_client", "ddb-cycle-signed")
against_blocking = [("baton dynamodb_lease / C++ blocking Beast cycle (same wire work, unsigned)", lease, unsigned),
                    ("baton dynamodb_lease / C++ blocking Beast, the lease's two requests signed", lease, signed),
                    ("baton http::client cycle / blocking Beast cycle (unsigned)", http, unsigned)]
paired = [(r, k) for k, g in groups.items() if k[0] == "1p" for r in g]
if paired:
    print()
    print("Figure 1 paired (`store_bench ddb-paired`: the lease and the blocking Beast client in one process, in")
    print("alternating blocks of cycles, so both meet the server in the same state). Per round: the median of the")
    print("per-block ratios lease / blocking client, with their quartiles.")
    print()
    print("| floor | throughput ratio (higher is better) | client CPU ratio | user CPU ratio | lease / floor CPU µs per cycle | allocations per cycle |")
    print("|---|---|---|---|---|---|")
    for variant in ("cycle-paired-signed", "cycle-paired-unsigned"):
        g = [r for r, k in paired if k[2] == variant]
        if not g: continue
        rng = lambda f: ", ".join("%.2f (%.2f-%.2f)" % (r[f], r[f + "_q1"], r[f + "_q3"]) for r in g)
        print("| %s | %s | %s | %s | %.1f / %.1f | %.0f / %.0f |" % (variant.split("-")[-1], rng("ratio_ops"), rng("ratio_cpu"),
              rng("ratio_user"), med(g, "client_cpu_us_per_op"), med(g, "floor_cpu_us_per_op"),
              med(g, "client_allocs_per_op"), med(g, "floor_allocs_per_op")))
print()
print("Separate runs, one client after the other (the order of a round moves these by more than the clients differ):")
print()
print("| ratio (client CPU per cycle, lower is better) | of medians | per round |")
print("|---|---|---|")
for label, a, b in against_blocking: ratio(label, a, b, "client_cpu_us_per_op")
print()
print("| ratio (ops/s) | of medians | per round |")
print("|---|---|---|")
ratio("baton dynamodb_lease / raw floor (cycle)", lease, ("1", "e_raw_floor_node", "cycle"))
for label, a, b in against_blocking: ratio(label, a, b)
ratio("baton dynamodb_lease / dynamodb-lock-client FailClosed", ("1", "baton_dynamodb_lease", "cycle"), ("1", "a_lockclient_seq", "failclosed"))
ratio("baton dynamodb_lease / AWS SDK v3 cycle", ("1", "baton_dynamodb_lease", "cycle"), ("1", "b_sdkv3", "ddb"))
for k in groups:
    if k[0] == "2" and k[1] == "baton_dynamodb_lease_contention":
        for p in groups:
            if p[0] == "2" and p[1] == "a_lockclient_contention":
                ratio("contention: baton / dynamodb-lock-client (acq/s)", k, p)
ratio("baton s3_lease / AWS SDK v3 S3 cycle (both on RGW)", ("3", "baton_s3_lease", "cycle"), ("3", "b_sdkv3", "s3"))
ratio("baton http::client / curl (unsigned PutItem, 1 connection)", ("4", "baton_http_client", "ddb-put-unsigned"), ("4", "e_raw_floor_curl", "put"))
ratio("baton http::client / Node http (unsigned PutItem)", ("4", "baton_http_client", "ddb-put-unsigned"), ("4", "e_raw_floor_node", "put"))
ratio("baton http::client / blocking Beast (unsigned PutItem)", ("4", "baton_http_client", "ddb-put-unsigned"), ("4", "beast_sync_client", "ddb-put-unsigned"))
ratio("baton signed PutItem / baton unsigned PutItem", ("4", "baton_http_client", "ddb-put-signed"), ("4", "baton_http_client", "ddb-put-unsigned"))
ratio("baton http::client / blocking Beast (in-process server)", ("4", "baton_http_client", "local"), ("4", "beast_sync_client", "local"))
PY
