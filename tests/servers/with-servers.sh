#!/usr/bin/env bash
# Run a command with real test servers up, then stop them (also on failure,
# Ctrl-C or TERM). Exits with the command's status.
#
#   tests/servers/with-servers.sh rgw dynalite s3rver azurite -- CMD ARGS...
#
# Installs what is missing (install.sh), starts each server in its own state
# dir (start.sh) and exports its variables to CMD (see README.md).
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
servers=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  case "$1" in
    rgw|dynalite|s3rver|azurite) servers+=("$1") ;;
    *) echo "with-servers.sh: unknown server '$1' (rgw|dynalite|s3rver|azurite)" >&2; exit 2 ;;
  esac
  shift
done
if [ $# -lt 2 ] || [ ${#servers[@]} -eq 0 ]; then
  echo "usage: with-servers.sh rgw|dynalite|s3rver|azurite... -- CMD ARGS..." >&2; exit 2
fi
shift # --

dirs=()
child=
# shellcheck disable=SC2317  # called from the EXIT trap
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
    kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null
  fi
  [ ${#dirs[@]} -eq 0 ] || "$HERE/stop.sh" "${dirs[@]}"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$HERE/install.sh" "${servers[@]}" || { echo "with-servers.sh: install failed" >&2; exit 1; }

root=${TMPDIR:-/tmp}/baton-servers
mkdir -p "$root"
for s in "${servers[@]}"; do
  # Make the dir here so that cleanup knows it even if start.sh is interrupted.
  d=$(mktemp -d "$root/$s.XXXXXX") || exit 1
  dirs+=("$d")
  out=$("$HERE/start.sh" "$s" "$d") || { echo "with-servers.sh: could not start $s" >&2; exit 1; }
  eval "$out"
done

# CMD runs as a background job (stdin passed through) so that a signal to this
# script is handled at once: it is forwarded as TERM, then servers are stopped.
"$@" <&0 &
child=$!
wait "$child"
status=$?
child=
exit $status
