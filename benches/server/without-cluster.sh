#!/bin/sh
# embedis-server without the cluster arguments: compare.py's --baseline beside
# `--server-args "--cluster-enabled yes"`, so that one run measures cluster mode against plain
# embedis (and redis-server). `exec` keeps the PID, whose CPU time compare.py reads.
# The binary: $EMBEDIS_BINARY, else target/release/embedis-server of this checkout.
binary="${EMBEDIS_BINARY:-$(dirname "$0")/../../target/release/embedis-server}"
args=""
skip=0
for a in "$@"; do
  if [ $skip = 1 ]; then skip=0; continue; fi
  case "$a" in --cluster-enabled|--cluster-port) skip=1; continue;; esac
  args="$args $a"
done
# shellcheck disable=SC2086  # the arguments are words without spaces (ports, paths, yes/no)
exec "$binary" $args
