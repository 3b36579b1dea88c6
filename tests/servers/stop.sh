#!/usr/bin/env bash
# Stop servers started by start.sh and remove their state dirs.
#
#   tests/servers/stop.sh STATE_DIR...   stop those (e.g. "$BATON_RGW_STATE")
#   tests/servers/stop.sh all            every state dir under ${TMPDIR:-/tmp}/baton-servers
#                                        (also cleans leftovers of crashed runs)
#
# Kills ONLY the PIDs recorded in STATE_DIR/pids, and only while
# /proc/PID/cmdline still shows the recorded binary and the state dir (guard
# against PID reuse). Never kills by process name. TERM, then KILL after
# BATON_SERVERS_STOP_GRACE seconds (default 3). The state dir is removed only
# if it carries start.sh's marker, and kept (pids renamed to pids.stopped)
# when BATON_SERVERS_KEEP=1.
set -uo pipefail

ROOT=${TMPDIR:-/tmp}/baton-servers
GRACE=${BATON_SERVERS_STOP_GRACE:-3}

# is_ours PID BIN DIR: PID runs BIN (an argument equal to BIN or ending in
# /BIN) and some argument mentions DIR.
is_ours() {
  local pid=$1 bin=$2 dir=$3 arg has_bin=0 has_dir=0
  [ -r "/proc/$pid/cmdline" ] || return 1
  while IFS= read -r -d '' arg; do
    case "$arg" in "$bin"|*/"$bin") has_bin=1 ;; esac
    case "$arg" in *"$dir"*) has_dir=1 ;; esac
  done <"/proc/$pid/cmdline"
  [ $has_bin = 1 ] && [ $has_dir = 1 ]
}

alive() { # pid: exists and is not a zombie
  local st; st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  st=${st##*) }; [ -n "$st" ] && [ "${st%% *}" != Z ]
}

stop_dir() { # dir
  local D
  D=$(cd "$1" 2>/dev/null && pwd -P) || { echo "stop.sh: no such state dir '$1'" >&2; return 1; }
  if [ ! -f "$D/.baton-servers" ]; then
    echo "stop.sh: $D was not made by start.sh (no .baton-servers marker); not touching it" >&2
    return 1
  fi
  local ours=() role pid bin
  if [ -f "$D/pids" ]; then
    while read -r role pid bin; do
      [[ "${pid:-}" =~ ^[0-9]+$ ]] || continue
      if is_ours "$pid" "$bin" "$D"; then
        ours+=("$pid")
      elif alive "$pid"; then
        echo "stop.sh: pid $pid ($role) no longer runs $bin for $D; leaving it alone" >&2
      fi
    done <"$D/pids"
  fi
  local p alive_=() i
  if [ ${#ours[@]} -gt 0 ]; then
    kill -TERM "${ours[@]}" 2>/dev/null
    for (( i = 0; i < GRACE * 10; i++ )); do
      alive_=(); for p in "${ours[@]}"; do alive "$p" && alive_+=("$p"); done
      [ ${#alive_[@]} -eq 0 ] && break
      sleep 0.1
    done
    alive_=(); for p in "${ours[@]}"; do alive "$p" && alive_+=("$p"); done
    if [ ${#alive_[@]} -gt 0 ]; then
      echo "stop.sh: KILL after ${GRACE}s grace (radosgw needs ~5s to exit on TERM): ${alive_[*]}" >&2
      # Re-check right before KILL: only what is still ours.
      for p in "${alive_[@]}"; do
        read -r role _ bin < <(grep "^[^ ]* $p " "$D/pids")
        is_ours "$p" "$bin" "$D" && kill -KILL "$p" 2>/dev/null
      done
      for (( i = 0; i < 50; i++ )); do
        local still=0; for p in "${alive_[@]}"; do alive "$p" && still=1; done
        [ $still = 0 ] && break; sleep 0.1
      done
    fi
  fi
  [ -f "$D/pids" ] && mv -f "$D/pids" "$D/pids.stopped"
  if [ "${BATON_SERVERS_KEEP:-0}" = 1 ]; then
    echo "stop.sh: stopped ${#ours[@]} process(es); kept $D" >&2
  else
    case "$D" in /|"") ;; *) rm -rf -- "$D" ;; esac
    echo "stop.sh: stopped ${#ours[@]} process(es); removed $D" >&2
  fi
}

[ $# -gt 0 ] || { echo "usage: stop.sh STATE_DIR... | stop.sh all" >&2; exit 2; }
rc=0
if [ "$1" = all ] && [ $# = 1 ]; then
  shopt -s nullglob
  for d in "$ROOT"/*/; do
    d=${d%/}
    [ -f "$d/.baton-servers" ] || continue
    # A start.sh still running holds this lock: leave its dir alone.
    if [ -e "$d/.starting" ] && ! flock -n "$d/.starting" true 2>/dev/null; then
      echo "stop.sh: $d is being started right now; skipped" >&2
      continue
    fi
    BATON_SERVERS_KEEP=0 stop_dir "$d" || rc=1
  done
else
  for d in "$@"; do stop_dir "$d" || rc=1; done
fi
exit $rc
