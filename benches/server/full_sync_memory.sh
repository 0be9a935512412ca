#!/bin/bash
# A primary's memory through a diskless full sync to two replicas (BENCHMARKS.md, "Memory during
# a full sync"): 200,000 keys of 1,000 bytes, two replicas of the same binary that load with
# `key-load-delay 5` (so that the transfer lasts), the primary's peak RSS (VmHWM) before and
# after both replicas have every key. Servers run in a temporary directory.
#
#   benches/server/full_sync_memory.sh <server binary> <port>   (uses port .. port+2)
BIN=$1; P=$2
D=$(mktemp -d)
mkdir -p $D/p $D/r1 $D/r2
$BIN --port $P --dir $D/p --save "" --repl-diskless-sync yes --repl-diskless-sync-delay 1 --enable-debug-command yes --rdbcompression no > /dev/null 2>&1 &
sleep 0.5
redis-cli -p $P debug populate 200000 k 1000 > /dev/null
PID=$(redis-cli -p $P info server | tr -d "\r" | awk -F: "/^process_id/{print \$2}")
before=$(grep VmHWM /proc/$PID/status | awk '{print $2}')
for i in 1 2; do
  $BIN --port $((P+i)) --dir $D/r$i --save "" --repl-diskless-load swapdb --key-load-delay 5 --replicaof "127.0.0.1 $P" > /dev/null 2>&1 &
done
for i in $(seq 1 300); do
  a=$(redis-cli -p $((P+1)) dbsize 2>/dev/null); b=$(redis-cli -p $((P+2)) dbsize 2>/dev/null)
  [ "$a" = "200000" ] && [ "$b" = "200000" ] && break
  sleep 0.2
done
after=$(grep VmHWM /proc/$PID/status | awk '{print $2}')
echo "$(basename $BIN) dataset_peak_kB=$before sync_peak_kB=$after replicas=$a,$b"
for i in 0 1 2; do redis-cli -p $((P+i)) shutdown nosave > /dev/null 2>&1; done
rm -rf $D
