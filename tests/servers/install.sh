#!/usr/bin/env bash
# Install the real test servers when they are missing; quick no-op otherwise.
#
#   tests/servers/install.sh [rgw|dynalite|s3rver|azurite|all]...     (default: all)
#
#   rgw       Debian packages ceph-mon ceph-osd radosgw ceph-common (+ curl)
#   dynalite  npm dynalite@4.0.0 \   pinned by package.json + package-lock.json,
#   s3rver    npm s3rver@3.7.1    >  installed together with `npm ci` into
#   azurite   npm azurite@3.35.0 /   tests/servers/node_modules
#
# apt-get update runs only when an install fails without it. Needs root (or
# password-less sudo) only if Debian packages are actually missing.
# All output goes to stderr.
set -euo pipefail
exec 1>&2

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=${TMPDIR:-/tmp}/baton-servers

want_apt=0 want_npm=0
[ $# -gt 0 ] || set -- all
for s in "$@"; do
  case "$s" in
    rgw) want_apt=1 ;;
    dynalite|s3rver|azurite) want_npm=1 ;;
    all) want_apt=1; want_npm=1 ;;
    *) echo "install.sh: unknown server '$s' (rgw|dynalite|s3rver|azurite|all)"; exit 2 ;;
  esac
done

# Serialise concurrent installs (several test runs may call us at once).
mkdir -p "$ROOT"
exec 9>"$ROOT/.install.lock"
if ! flock -w 600 9; then echo "install.sh: could not lock $ROOT/.install.lock"; exit 1; fi

installed() { [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]; }

apt_install() { # packages...
  local missing=() p
  for p in "$@"; do installed "$p" || missing+=("$p"); done
  [ ${#missing[@]} -gt 0 ] || return 0
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo=(sudo -n)
    else echo "install.sh: need root to install: ${missing[*]}"; return 1; fi
  fi
  echo "install.sh: apt-get install ${missing[*]}"
  local t0=$SECONDS
  local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o Dpkg::Use-Pty=0)
  if ! "${apt[@]}" install --no-install-recommends "${missing[@]}"; then
    echo "install.sh: install failed; running apt-get update and retrying"
    "${apt[@]}" update
    "${apt[@]}" install --no-install-recommends "${missing[@]}"
  fi
  echo "install.sh: apt done in $(( SECONDS - t0 ))s"
}

pkgs=()
command -v curl >/dev/null || pkgs+=(curl)
if [ $want_apt = 1 ]; then pkgs+=(ceph-mon ceph-osd radosgw ceph-common); fi
if [ $want_npm = 1 ]; then
  command -v node >/dev/null || pkgs+=(nodejs)
  command -v npm >/dev/null || pkgs+=(npm)
fi
if ! command -v python3 >/dev/null && ! command -v node >/dev/null; then pkgs+=(python3); fi
[ ${#pkgs[@]} -eq 0 ] || apt_install "${pkgs[@]}"

if [ $want_npm = 1 ]; then
  NM=$HERE/node_modules
  lock_sum=$(sha256sum "$HERE/package-lock.json" | cut -d' ' -f1)
  if [ -f "$NM/dynalite/cli.js" ] && [ -f "$NM/s3rver/bin/s3rver.js" ] &&
     [ -f "$NM/azurite/dist/src/blob/main.js" ] &&
     [ "$(cat "$NM/.baton-lock-sha256" 2>/dev/null)" = "$lock_sum" ]; then
    : # up to date
  else
    echo "install.sh: npm ci in $HERE"
    t0=$SECONDS
    # --ignore-scripts: the only install script is classic-level's, which ships prebuilt binaries.
    (cd "$HERE" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=warn)
    echo "$lock_sum" >"$NM/.baton-lock-sha256"
    echo "install.sh: npm done in $(( SECONDS - t0 ))s"
  fi
fi
