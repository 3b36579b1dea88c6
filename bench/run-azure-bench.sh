#!/usr/bin/env bash
# baton's lease cycle on Azure Blob Storage (Azurite) side by side with the same
# cycle hand-rolled with the official SDK, @azure/storage-blob, on the SAME
# Azurite instance, in one run (see bench/README.md, docs/benchmarks.md).
#
#   bench/run-azure-bench.sh            # ~2 min: 5 rounds, medians and ratios
#
# Starts Azurite through tests/servers/with-servers.sh (stopped by PID
# afterwards), installs the SDK harness (npm ci in bench/azure, when the pinned
# version is not there), builds bench/store_bench if needed, then runs
# round-robin REPS times, the order alternating from round to round:
#   store_bench azure-cycle                      baton_azure_lease: acquire + release
#   node azure/sdk_cycle.js --release delete     upload If-None-Match:* + delete If-Match
#   node azure/sdk_cycle.js --release marker     upload If-Match + upload If-Match (baton's shape)
# Each prints one JSON line; the end of the output is a table of medians (with
# the range) and the ratios baton / SDK, of the medians and per round.
#
# The SDK (12.32.0, the last release for Node.js 20) sends x-ms-version
# 2026-04-06, which Azurite 3.35.0 refuses (400 InvalidHeaderValue): Azurite
# runs with --skipApiVersionCheck, so that both clients run as shipped (baton
# sends 2021-12-02, which Azurite accepts either way). Strict mode stays on.
#
# Knobs (environment): BUILD (build dir, default build-bench), REPS=5, N=1500
# (measured cycles per run), WARMUP=300 (cycles before measuring, both sides:
# baton's probe and first acquire, the SDK's JIT), PIN=0 (1: Azurite on CPU 0,
# the clients on CPU 1), OUT (directory for raw.jsonl; default a new
# /tmp/baton-azure-bench.XXXXXX).
# Needs: node (20+), npm, python3.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$HERE/.." && pwd -P)
BUILD=${BUILD:-$REPO/build-bench}
case "$BUILD" in /*) ;; *) BUILD=$REPO/$BUILD ;; esac
BENCH=$BUILD/bench/store_bench
SDK=$HERE/azure
REPS=${REPS:-5} N=${N:-1500} WARMUP=${WARMUP:-300} PIN=${PIN:-0}
export REPS N WARMUP PIN BENCH SDK

if [ "${1:-}" != --inner ]; then
  command -v python3 >/dev/null && command -v node >/dev/null && command -v npm >/dev/null ||
    { echo "run-azure-bench.sh: needs node, npm and python3" >&2; exit 2; }
  # The SDK harness: the version pinned in bench/azure/package-lock.json, in bench/azure/node_modules.
  want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["packages"]["node_modules/@azure/storage-blob"]["version"])' "$SDK/package-lock.json")
  have=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$SDK/node_modules/@azure/storage-blob/package.json" 2>/dev/null || true)
  if [ "$want" != "$have" ]; then
    echo "# npm ci in bench/azure (@azure/storage-blob $want)" >&2
    (cd "$SDK" && npm ci --no-audit --no-fund >/dev/null)
  fi
  # store_bench, optimised: a new build dir is configured for release; an existing one is checked.
  if [ ! -f "$BUILD/build.ninja" ]; then
    meson setup "$BUILD" "$REPO" --buildtype=release -Dbenchmarks=true >/dev/null
  fi
  opts=$(meson introspect "$BUILD" --buildoptions | python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["buildtype"], o["benchmarks"])')
  if [ "$opts" != "release True" ]; then
    echo "run-azure-bench.sh: $BUILD has buildtype/benchmarks '$opts'; want 'release True':" >&2
    echo "  meson configure $BUILD --buildtype=release -Dbenchmarks=true, or BUILD=another-dir" >&2
    exit 2
  fi
  ninja -C "$BUILD" -j1 bench/store_bench >/dev/null
  OUT=${OUT:-$(mktemp -d /tmp/baton-azure-bench.XXXXXX)}
  mkdir -p "$OUT"
  export OUT
  export BATON_AZURITE_ARGS="${BATON_AZURITE_ARGS:+$BATON_AZURITE_ARGS }--skipApiVersionCheck"
  exec timeout --signal=TERM 600 "$REPO/tests/servers/with-servers.sh" azurite -- "$HERE/run-azure-bench.sh" --inner
fi

# ---- inside with-servers.sh: BATON_AZURITE_* and AZURE_STORAGE_CONNECTION_STRING are set ----
RAW=$OUT/raw.jsonl
: >"$RAW"
t_start=$(date +%s)

load() { echo "# load: $(uptime | sed 's/.*load average/load average/') | top other CPU users: $(ps -eo pcpu=,comm= --sort=-pcpu | head -3 | awk '{printf "%s %s%%; ", $2, $1}')"; }

CLIENT_PIN=()
if [ "$PIN" = 1 ]; then
  apid=$(awk '$1 == "azurite" { print $2 }' "$BATON_AZURITE_STATE/pids")
  taskset -a -p -c 0 "$apid" >/dev/null
  CLIENT_PIN=(taskset -c 1)
  echo "# pinned: Azurite (pid $apid, all threads) on CPU 0; clients on CPU 1"
else
  echo "# not pinned (PIN=1 pins Azurite to CPU 0 and the clients to CPU 1)"
fi

# run REP CMD...: one measurement; its JSON line is tagged and kept.
run() {
  local rep=$1; shift
  local line
  if ! line=$(timeout 120 "$@" 2>"$OUT/last.err" | grep '^{' | tail -n 1) || [ -z "$line" ]; then
    echo "FAILED: $*" >&2; tail -n 5 "$OUT/last.err" >&2; return 0
  fi
  line="{\"fig\":\"5\",\"rep\":$rep,${line#\{}"
  echo "$line" | tee -a "$RAW"
}

azurite_version=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$REPO/tests/servers/node_modules/azurite/package.json")
sdk_version=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$SDK/node_modules/@azure/storage-blob/package.json")
echo "# baton Azure benchmark; $(date -u +%FT%TZ); git $(git -C "$REPO" rev-parse --short HEAD); node $(node --version); $(nproc) CPUs"
echo "# Azurite $azurite_version ($BATON_AZURITE_ENDPOINT, $BATON_AZURITE_ARGS); @azure/storage-blob $sdk_version; REPS=$REPS N=$N WARMUP=$WARMUP"
P=("${CLIENT_PIN[@]}")
baton() { run "$1" "${P[@]}" "$BENCH" azure-cycle --n "$N" --warmup "$WARMUP"; }
sdk() { run "$1" "${P[@]}" node "$SDK/sdk_cycle.js" --release "$2" --n "$N" --warmup "$WARMUP"; }
for rep in $(seq 1 "$REPS"); do
  load
  if [ $((rep % 2)) = 1 ]; then
    baton "$rep"; sdk "$rep" delete; sdk "$rep" marker
  else
    sdk "$rep" marker; sdk "$rep" delete; baton "$rep"
  fi
done
load
echo "# measured in $(( $(date +%s) - t_start )) s; raw lines: $RAW"
python3 - "$RAW" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
groups = {}
for r in rows: groups.setdefault((r["harness"], r["variant"]), []).append(r)
med = lambda g, f: st.median([r[f] for r in g])
print()
print("| harness | variant | runs | ops/s median (range) | p50 ms | p99 ms | client CPU µs/op | req/cycle | notes |")
print("|---|---|---|---|---|---|---|---|---|")
for k, g in groups.items():
    ops = [r["ops_per_s"] for r in g]
    notes = ["PUT %.2f, DELETE %.2f, GET %.2f per cycle" % tuple(med(g, f) / med(g, "n") for f in ("put", "delete", "get")),
             "record %d B" % med(g, "record_bytes"), "connections %d" % max(r["connections_opened"] for r in g)]
    if "client_allocs_per_op" in g[0]: notes.append("allocations/cycle %.0f" % med(g, "client_allocs_per_op"))
    print("| %s | %s | %d | %.0f (%.0f-%.0f) | %.3f | %.3f | %.1f | %.2f | %s |" % (k[0], k[1], len(g), st.median(ops), min(ops), max(ops),
          med(g, "p50_ms"), med(g, "p99_ms"), med(g, "client_cpu_us_per_op"), med(g, "requests_per_cycle"), "; ".join(notes)))
def ratio(label, a, b, field, fmt="%.2f"):
    ga, gb = groups.get(a), groups.get(b)
    if not ga or not gb: return
    per = {}
    for r in ga: per.setdefault(r["rep"], [None, None])[0] = r[field]
    for r in gb: per.setdefault(r["rep"], [None, None])[1] = r[field]
    pr = [x / y for _, (x, y) in sorted(per.items()) if x and y]
    print("| %s | %.2f | %s |" % (label, med(ga, field) / med(gb, field), ", ".join("%.2f" % x for x in pr)))
lease = ("baton_azure_lease", "cycle")
print()
print("| ratio | of medians | per round |")
print("|---|---|---|")
for v in ("delete", "marker"):
    ratio("baton / SDK (%s), ops/s (higher: baton faster)" % v, lease, ("azure_sdk_js", v), "ops_per_s")
    ratio("baton / SDK (%s), client CPU per cycle (lower: baton cheaper)" % v, lease, ("azure_sdk_js", v), "client_cpu_us_per_op")
    ratio("baton / SDK (%s), requests per cycle" % v, lease, ("azure_sdk_js", v), "requests_per_cycle")
PY
