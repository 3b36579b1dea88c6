#!/usr/bin/env bash
# Start one real test server on 127.0.0.1, on a free port, and print its
# environment as shell `export` lines on stdout (diagnostics go to stderr).
#
#   eval "$(tests/servers/start.sh rgw|dynalite|s3rver|azurite [STATE_DIR])"
#   ...
#   tests/servers/stop.sh "$BATON_RGW_STATE"   # or BATON_{DYNALITE,S3RVER,AZURITE}_STATE
#
# STATE_DIR (default: a new mktemp dir under ${TMPDIR:-/tmp}/baton-servers) holds
# the logs, the data, `pids` (role pid binary, one per line: what stop.sh may
# kill) and `env` (the export lines again).
#
# Knobs: BATON_SERVERS_START_TIMEOUT  seconds per start-up stage (default 60)
#        BATON_SERVERS_PORT_TRIES     attempts on a port collision (default 5)
#        BATON_AZURITE_DEBUG=1        Azurite writes its debug log (with each
#                                     Shared Key string-to-sign) to log/azurite-debug.log
#        BATON_AZURITE_ARGS           more azurite-blob options, split on blanks
#                                     (e.g. --skipApiVersionCheck for a newer SDK, --loose)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=${TMPDIR:-/tmp}/baton-servers
TIMEOUT=${BATON_SERVERS_START_TIMEOUT:-60}
TRIES=${BATON_SERVERS_PORT_TRIES:-5}
KIND=${1:-}
t0=$(date +%s%N)
log() { local ms=$(( ($(date +%s%N) - t0) / 1000000 )); printf 'start.sh %s: [%d.%01ds] %s\n' "$KIND" $((ms / 1000)) $((ms % 1000 / 100)) "$*" >&2; }
die() { echo "start.sh $KIND: $*" >&2; exit 1; }

case "$KIND" in
  rgw)      need=(ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool curl) ;;
  dynalite|s3rver|azurite) need=(node curl)
            for f in dynalite/cli.js s3rver/bin/s3rver.js azurite/dist/src/blob/main.js; do
              [ -f "$HERE/node_modules/$f" ] || die "npm packages missing: run tests/servers/install.sh $KIND"
            done ;;
  *) echo "usage: start.sh rgw|dynalite|s3rver|azurite [STATE_DIR]" >&2; exit 2 ;;
esac
for b in "${need[@]}"; do
  command -v "$b" >/dev/null || die "missing '$b': run tests/servers/install.sh $KIND"
done
command -v python3 >/dev/null || command -v node >/dev/null || die "need python3 or node to pick a free port"

# ---- state dir -------------------------------------------------------------
if [ -n "${2:-}" ]; then
  D=$2
  # stop.sh deletes the state dir: only accept a new/empty dir or one of ours.
  if [ -d "$D" ] && [ -n "$(ls -A "$D")" ] && [ ! -f "$D/.baton-servers" ]; then
    die "$D is not empty and was not made by start.sh; give a new or empty directory"
  fi
  mkdir -p "$D"
else
  mkdir -p "$ROOT"
  D=$(mktemp -d "$ROOT/$KIND.XXXXXX")
fi
D=$(cd "$D" && pwd -P)
[ ! -e "$D/pids" ] || die "$D/pids exists: stop that server first (tests/servers/stop.sh $D)"
# Marker: stop.sh only removes directories carrying it.
echo "$KIND" >"$D/.baton-servers"
# Held while starting so that a concurrent `stop.sh all` leaves this dir alone.
# (Every server is started with 9>&- so none of them inherits the lock.)
exec 9>"$D/.starting"
flock -n 9 || die "$D is being started by someone else"
: >"$D/pids"
mkdir -p "$D/log"

# ---- helpers ---------------------------------------------------------------
free_port() { # a port nobody listens on right now (the kernel's choice for port 0)
  if command -v python3 >/dev/null; then
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
  else
    node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
  fi
}

# True if PID has a listening TCP socket on exactly 127.0.0.1:PORT. Proves that
# what answers on the port is our process (not whoever won a port race).
owns_port() { # port pid
  local hex inode
  hex=$(printf '0100007F:%04X' "$1")
  inode=$(awk -v a="$hex" '$2 == a && $4 == "0A" { print $10; exit }' /proc/net/tcp)
  [ -n "$inode" ] && [ "$inode" != 0 ] || return 1
  find "/proc/$2/fd" -lname "socket:\[$inode\]" 2>/dev/null | grep -q .
}

alive() { # pid: exists and is not a zombie
  local st; st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  st=${st##*) }; [ -n "$st" ] && [ "${st%% *}" != Z ]
}

# launch ROLE BIN LOG CMD...: run CMD detached (own session, no stdin, output to
# LOG, no lock fd), record "ROLE PID BIN" in pids, leave the pid in $LAUNCHED.
launch() {
  local role=$1 bin=$2 lg=$3; shift 3
  setsid "$@" </dev/null >>"$lg" 2>&1 9>&- &
  LAUNCHED=$!
  echo "$role $LAUNCHED $bin" >>"$D/pids"
}

# Stop one recorded pid (ours, just started) and drop it from pids. TERM
# first: a KILLed radosgw leaves RADOS watches behind that stall the next
# radosgw-admin call for ~30 s.
unlaunch() { # pid
  local i
  kill -TERM "$1" 2>/dev/null || true
  for (( i = 0; i < 100; i++ )); do alive "$1" || break; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  sed -i "/^[^ ]* $1 /d" "$D/pids"
}

LOGS=()
on_fail() {
  local rc=$?
  trap - EXIT INT TERM
  echo "start.sh $KIND: FAILED (state dir $D)" >&2
  local f
  for f in "${LOGS[@]}"; do
    [ -s "$f" ] || continue
    echo "----- tail of $f -----" >&2
    tail -n 25 "$f" >&2
  done
  echo "start.sh $KIND: stopping what was started; logs kept in $D/log (tests/servers/stop.sh $D removes them)" >&2
  BATON_SERVERS_KEEP=1 "$HERE/stop.sh" "$D" >&2 || true
  exit $(( rc ? rc : 1 ))
}
trap 'exit 130' INT
trap 'exit 143' TERM
trap '[ $? = 0 ] || on_fail' EXIT

deadline() { echo $(( $(date +%s) + TIMEOUT )); }
past() { [ "$(date +%s)" -ge "$1" ]; }

EXPORTS=()
export_var() { EXPORTS+=("$(printf 'export %s=%q' "$1" "$2")"); }

# wait_ready PID PORT LOG PROBE...: 0 when PID owns PORT and PROBE succeeds;
# 3 when the process died of a port collision (caller retries on a new port);
# 1 on any other failure or timeout.
wait_ready() {
  local pid=$1 port=$2 lg=$3; shift 3
  local end; end=$(deadline)
  while :; do
    if ! alive "$pid"; then
      if grep -qiE 'EADDRINUSE|address already in use|failed to bind' "$lg"; then return 3; fi
      echo "start.sh $KIND: process $pid exited" >&2; return 1
    fi
    if owns_port "$port" "$pid" && "$@" >/dev/null 2>&1; then return 0; fi
    if past "$end"; then
      if grep -qiE 'EADDRINUSE|address already in use|failed to bind' "$lg"; then return 3; fi
      echo "start.sh $KIND: timed out after ${TIMEOUT}s waiting for 127.0.0.1:$port" >&2; return 1
    fi
    sleep 0.1
  done
}

http_code_is() { # code url [curl args...]
  local want=$1; shift
  [ "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "$@")" = "$want" ]
}

# ---- dynalite --------------------------------------------------------------
start_dynalite() {
  local lg=$D/log/dynalite.log port i rc
  LOGS+=("$lg")
  for (( i = 1; i <= TRIES; i++ )); do
    port=$(free_port)
    # --baton-state is ignored by dynalite; it puts the state dir in the
    # command line so that stop.sh can tell this process is ours.
    launch dynalite dynalite/cli.js "$lg" \
      node "$HERE/node_modules/dynalite/cli.js" --host 127.0.0.1 --port "$port" \
        --createTableMs 0 --deleteTableMs 0 --updateTableMs 0 --baton-state "$D"
    rc=0
    wait_ready "$LAUNCHED" "$port" "$lg" dynamo_up "$port" || rc=$?
    [ $rc = 3 ] || break
    log "port $port taken, retrying"; unlaunch "$LAUNCHED"
  done
  [ $rc = 0 ] || return 1
  log "dynalite (in-memory) on 127.0.0.1:$port, pid $LAUNCHED"
  export_var BATON_DYNAMODB_ENDPOINT "http://127.0.0.1:$port"
  export_var BATON_DYNAMODB_ACCESS_KEY "BATONDYNALITEKEY0000"
  export_var BATON_DYNAMODB_SECRET_KEY "batondynalitesecret000000000000000000000"
  export_var BATON_DYNAMODB_REGION "us-east-1"
  export_var BATON_DYNALITE_STATE "$D"
}
dynamo_up() { # port: ListTables answers with JSON
  curl -sf -m 5 -X POST "http://127.0.0.1:$1/" \
    -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
    -H 'Content-Type: application/x-amz-json-1.0' \
    -H 'X-Amz-Date: 20240101T000000Z' \
    -H 'Authorization: AWS4-HMAC-SHA256 Credential=x/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0' \
    -d '{}' | grep -q '"TableNames"'
}

# ---- s3rver ----------------------------------------------------------------
start_s3rver() {
  local lg=$D/log/s3rver.log port i rc
  LOGS+=("$lg")
  mkdir -p "$D/s3rver-data"
  for (( i = 1; i <= TRIES; i++ )); do
    port=$(free_port)
    launch s3rver s3rver/bin/s3rver.js "$lg" \
      node "$HERE/node_modules/s3rver/bin/s3rver.js" -d "$D/s3rver-data" -a 127.0.0.1 -p "$port" --silent
    rc=0
    wait_ready "$LAUNCHED" "$port" "$lg" http_code_is 200 "http://127.0.0.1:$port/" || rc=$?
    [ $rc = 3 ] || break
    log "port $port taken, retrying"; unlaunch "$LAUNCHED"
  done
  [ $rc = 0 ] || return 1
  log "s3rver on 127.0.0.1:$port, pid $LAUNCHED"
  export_var BATON_S3RVER_ENDPOINT "http://127.0.0.1:$port"
  export_var BATON_S3RVER_ACCESS_KEY "S3RVER"
  export_var BATON_S3RVER_SECRET_KEY "S3RVER"
  export_var BATON_S3RVER_REGION "us-east-1"
  export_var BATON_S3RVER_STATE "$D"
}

# ---- Azurite (Azure Blob Storage emulator) ----------------------------------
# Blob service only, strict mode (the default: the few headers Azurite does
# not implement, such as x-ms-content-crc64, are refused rather than ignored;
# nothing baton sends is among them), API version check on (baton pins an
# x-ms-version Azurite knows; see AZURITE.md), data in memory, no telemetry.
# The well-known development account and key; path-style URLs:
# $BATON_AZURITE_ENDPOINT/<container>/<blob>.
AZURITE_ACCOUNT=devstoreaccount1
AZURITE_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

start_azurite() {
  local lg=$D/log/azurite.log port i rc debug=() extra=()
  LOGS+=("$lg")
  # Azurite refuses --location with --inMemoryPersistence: its workspace is the
  # working directory (it stays empty). Node's --diagnostic-dir puts the state
  # dir in the command line, which stop.sh checks (Azurite refuses unknown options).
  mkdir -p "$D/azurite"
  if [ "${BATON_AZURITE_DEBUG:-0}" = 1 ]; then debug=(--debug "$D/log/azurite-debug.log"); fi
  read -r -a extra <<<"${BATON_AZURITE_ARGS:-}"
  for (( i = 1; i <= TRIES; i++ )); do
    port=$(free_port)
    launch azurite azurite/dist/src/blob/main.js "$lg" \
      env -C "$D/azurite" node --diagnostic-dir="$D/log" \
        "$HERE/node_modules/azurite/dist/src/blob/main.js" --blobHost 127.0.0.1 --blobPort "$port" \
        --inMemoryPersistence --extentMemoryLimit 1024 --silent --disableTelemetry \
        "${debug[@]}" "${extra[@]}"
    rc=0
    wait_ready "$LAUNCHED" "$port" "$lg" azurite_up "$port" || rc=$?
    [ $rc = 3 ] || break
    log "port $port taken, retrying"; unlaunch "$LAUNCHED"
  done
  [ $rc = 0 ] || return 1
  log "azurite blob (in-memory) on 127.0.0.1:$port, pid $LAUNCHED"
  local ep="http://127.0.0.1:$port/$AZURITE_ACCOUNT"
  export_var BATON_AZURITE_ENDPOINT "$ep"
  export_var BATON_AZURITE_ACCOUNT "$AZURITE_ACCOUNT"
  export_var BATON_AZURITE_KEY "$AZURITE_KEY"
  export_var BATON_AZURITE_STATE "$D"
  export_var AZURE_STORAGE_CONNECTION_STRING \
    "DefaultEndpointsProtocol=http;AccountName=$AZURITE_ACCOUNT;AccountKey=$AZURITE_KEY;BlobEndpoint=$ep;"
}
azurite_up() { # port: any answer from Azurite's blob service (an unsigned request gets 403)
  curl -s -m 5 -o /dev/null -D - "http://127.0.0.1:$1/$AZURITE_ACCOUNT?comp=list" | grep -qi '^server: Azurite-Blob/'
}

# ---- Ceph RADOS Gateway ------------------------------------------------------
# Single node: 1 mon, 1 memstore OSD (data in RAM), no mgr, auth none, msgr v1
# only, everything on 127.0.0.1. See /work/shared/servers/ceph-rgw.md.
RGW_ACCESS_KEY=BATONRGWTESTKEY00000
RGW_SECRET_KEY=batonrgwtestsecret0000000000000000000000

write_ceph_conf() { # fsid mon_port
  cat >"$D/ceph.conf" <<EOF
[global]
fsid = $1
mon host = v1:127.0.0.1:$2
public addr = 127.0.0.1
cluster addr = 127.0.0.1
public network = 127.0.0.0/8
ms bind msgr2 = false
ms bind ipv6 = false
ms bind retry count = 2
ms bind retry delay = 1
auth cluster required = none
auth service required = none
auth client required = none
auth allow insecure global id reclaim = true
run dir = $D/run
admin socket = $D/run/\$name.asok
pid file = $D/run/\$name.pid
log file = $D/log/\$name.log
crash dir = $D/crash
keyring = $D/keyring
log to stderr = false
err to stderr = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0

[mon]
mon data = $D/mon/\$name
mon cluster log file = $D/log/cluster.log

[osd]
osd data = $D/osd/\$name
osd objectstore = memstore
memstore device bytes = 2147483648
osd max object name len = 256
osd max object namespace len = 64
osd memory target = 536870912
# Pacific with auth off can send the OSD's start-up CRUSH commands before it
# has the monmap ("wrong fsid", OSD never boots): place the OSD ourselves.
osd crush update on start = false
osd class update on start = false
# Stop fast: the mon may already be gone when the OSD says goodbye.
osd mon shutdown timeout = 0.1

[client]
rgw data = $D/rgw/\$name
rgw dns name = localhost
rgw enable usage log = false
rgw thread pool size = 64
EOF
}

CEPH() { timeout 20 ceph -c "$D/ceph.conf" --connect-timeout 10 "$@"; }
# A monitor that answers "mon stat" may still refuse commands for a few seconds ("EPERM: problem
# getting command descriptions from mon", seen on loaded machines): commands that set the cluster
# up are asked again (each is idempotent), and their last error is shown if they never pass.
CEPH_SETUP() {
  local i out
  for (( i = 1; i <= 30; i++ )); do
    if out=$(CEPH "$@" 2>"$D/log/ceph-setup.err"); then printf '%s' "$out"; return 0; fi
    sleep 0.5
  done
  echo "start.sh rgw: the monitor refused 'ceph $*':" >&2; cat "$D/log/ceph-setup.err" >&2
  return 1
}

start_rgw() {
  local fsid port mon_port i rc mon_pid osd_pid rgw_pid
  fsid=$(cat /proc/sys/kernel/random/uuid)
  mkdir -p "$D/mon" "$D/osd" "$D/rgw" "$D/run" "$D/crash"
  : >"$D/keyring"

  # monitor (its port is in the monmap: a collision means redo mkfs)
  LOGS+=("$D/log/mon.a.log" "$D/log/mon.a.stdout")
  for (( i = 1; i <= TRIES; i++ )); do
    mon_port=$(free_port)
    write_ceph_conf "$fsid" "$mon_port"
    rm -rf "$D/mon/mon.a"
    monmaptool --create --clobber --fsid "$fsid" --addv a "[v1:127.0.0.1:$mon_port]" "$D/monmap" >/dev/null
    ceph-mon -c "$D/ceph.conf" --mkfs -i a --monmap "$D/monmap" >>"$D/log/mon.a.stdout" 2>&1
    launch mon ceph-mon "$D/log/mon.a.stdout" ceph-mon -c "$D/ceph.conf" -i a -f
    mon_pid=$LAUNCHED
    rc=0
    wait_ready "$mon_pid" "$mon_port" "$D/log/mon.a.log" CEPH mon stat || rc=$?
    [ $rc = 3 ] || break
    log "mon port $mon_port taken, retrying"; unlaunch "$mon_pid"; : >"$D/log/mon.a.log"
  done
  [ $rc = 0 ] || return 1
  log "mon up on 127.0.0.1:$mon_port"

  # OSD (memstore); it binds ports Ceph picks itself (ms bind port min/max range)
  local osd_uuid osd_id end
  osd_uuid=$(cat /proc/sys/kernel/random/uuid)
  osd_id=$(CEPH_SETUP osd new "$osd_uuid") || return 1
  LOGS+=("$D/log/osd.$osd_id.log" "$D/log/osd.$osd_id.stdout")
  mkdir -p "$D/osd/osd.$osd_id"
  CEPH_SETUP osd crush add "osd.$osd_id" 1.0 root=default >/dev/null || return 1
  ceph-osd -c "$D/ceph.conf" -i "$osd_id" --mkfs --osd-uuid "$osd_uuid" >>"$D/log/osd.mkfs" 2>&1
  launch osd ceph-osd "$D/log/osd.$osd_id.stdout" ceph-osd -c "$D/ceph.conf" -i "$osd_id" -f
  osd_pid=$LAUNCHED
  end=$(deadline)
  until CEPH osd dump 2>/dev/null | grep -q "^osd.$osd_id up "; do
    alive "$osd_pid" || { echo "start.sh rgw: ceph-osd exited" >&2; return 1; }
    past "$end" && { echo "start.sh rgw: timed out waiting for osd.$osd_id" >&2; return 1; }
    sleep 0.2
  done
  log "osd.$osd_id up"

  # radosgw (S3 port given on the command line, so a collision only restarts it)
  local rlog
  LOGS+=("$D/log/rgw.stdout")
  for (( i = 1; i <= TRIES; i++ )); do
    port=$(free_port)
    rlog=$D/log/rgw.$i.log
    LOGS+=("$rlog")
    launch rgw radosgw "$D/log/rgw.stdout" \
      radosgw -c "$D/ceph.conf" -n client.rgw.baton -f --log-file "$rlog" \
        --rgw-frontends "beast endpoint=127.0.0.1:$port"
    rgw_pid=$LAUNCHED
    rc=0
    wait_ready "$rgw_pid" "$port" "$rlog" http_code_is 200 "http://127.0.0.1:$port/" || rc=$?
    [ $rc = 3 ] || break
    log "rgw port $port taken, retrying"; unlaunch "$rgw_pid"
  done
  [ $rc = 0 ] || return 1
  log "radosgw answering on 127.0.0.1:$port"

  LOGS+=("$D/log/radosgw-admin.err")
  radosgw-admin -c "$D/ceph.conf" -n client.admin user create --uid=baton --display-name="baton tests" \
    --access-key="$RGW_ACCESS_KEY" --secret="$RGW_SECRET_KEY" >"$D/user.json" 2>>"$D/log/radosgw-admin.err"
  log "user 'baton' created"

  export_var BATON_S3_ENDPOINT "http://127.0.0.1:$port"
  export_var BATON_S3_ACCESS_KEY "$RGW_ACCESS_KEY"
  export_var BATON_S3_SECRET_KEY "$RGW_SECRET_KEY"
  export_var BATON_S3_REGION "us-east-1"
  export_var BATON_RGW_STATE "$D"
  export_var BATON_RGW_CEPH_CONF "$D/ceph.conf"
}

"start_$KIND"

printf '%s\n' "${EXPORTS[@]}" >"$D/env"
# Started: release the start lock (stop.sh all may now handle this dir).
exec 9>&-
rm -f "$D/.starting"
trap - EXIT INT TERM
log "ready"
cat "$D/env"
