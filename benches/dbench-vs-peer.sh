#!/usr/bin/env bash
# dbench 4.00 against `fsdelta dbench`: same loadfile, same clients, same time, same filesystem,
# alternating (ABBA order per pair of rounds, so drift of the machine hits both alike).
# Prints the median throughput of each, their ratio (fsdelta / dbench), and per-operation median
# average-latency ratios, as a markdown table.
#
# Usage: benches/dbench-vs-peer.sh [-D DIR] [-c LOADFILE] [-t SECS] [-n ROUNDS] [NPROCS]
#   defaults: -D ./dbench-vs-peer.tmp  -c /usr/share/dbench/client.txt  -t 10  -n 6  NPROCS 2
# Environment: FSDELTA=path to the fsdelta binary (default target/release/fsdelta, built if
# missing), DBENCH=path to dbench (default dbench from PATH), KEEP_LOGS=DIR to keep every run's
# output there.
# This is a benchmark, not a test: it needs dbench installed (apt-get install dbench).
set -euo pipefail

dir=./dbench-vs-peer.tmp
loadfile=/usr/share/dbench/client.txt
secs=10
rounds=6
while getopts "D:c:t:n:h" o; do
    case $o in
        D) dir=$OPTARG ;;
        c) loadfile=$OPTARG ;;
        t) secs=$OPTARG ;;
        n) rounds=$OPTARG ;;
        *) sed -n '2,12p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
nprocs=${1:-2}

root=$(cd "$(dirname "$0")/.." && pwd)
fsdelta=${FSDELTA:-$root/target/release/fsdelta}
dbench=${DBENCH:-$(command -v dbench || true)}
if [ -z "$dbench" ]; then
    echo "dbench not found: apt-get install dbench (or set DBENCH=)" >&2
    exit 2
fi
if [ ! -r "$loadfile" ]; then
    echo "loadfile $loadfile not readable (-c FILE)" >&2
    exit 2
fi
if [ ! -x "$fsdelta" ]; then
    (cd "$root" && cargo build --release --quiet)
fi
mkdir -p "$dir"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() { # tool round
    local log=$out/$1.$2
    rm -rf "${dir:?}/clients"
    sync
    if [ "$1" = dbench ]; then
        (cd "$dir" && "$dbench" -c "$loadfile" -D . -t "$secs" "$nprocs") >"$log" 2>&1
    else
        "$fsdelta" dbench -c "$loadfile" -D "$dir" -t "$secs" "$nprocs" >"$log" 2>&1
    fi
    grep -q '^Throughput ' "$log" || { echo "$1 round $2 failed:" >&2; tail -5 "$log" >&2; exit 1; }
    [ -z "${KEEP_LOGS:-}" ] || cp "$log" "$KEEP_LOGS/$1.$2.log"
}

for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) -eq 1 ]; then run dbench "$r"; run fsdelta "$r"; else run fsdelta "$r"; run dbench "$r"; fi
    printf 'round %d: dbench %s  fsdelta %s MB/s\n' "$r" \
        "$(awk '/^Throughput/{print $2}' "$out/dbench.$r")" \
        "$(awk '/^Throughput/{print $2}' "$out/fsdelta.$r")" >&2
done
rm -rf "${dir:?}/clients"

median() { sort -g | awk '{v[NR]=$1} END{ if (NR == 0) exit; if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2 }'; }
tp() { cat "$out/$1".* | awk '/^Throughput/{print $2}' | median; }
avg() { cat "$out/$1".* | awk -v op="$2" '$1==op && NF==4 {print $3}' | median; }

d=$(tp dbench)
f=$(tp fsdelta)
echo "| dbench 4.00, $nprocs clients, $secs s, $(basename "$loadfile"), $rounds rounds | dbench | fsdelta | fsdelta / dbench |"
echo "|---|---|---|---|"
printf '| median throughput (MB/s) | %s | %s | %.3f |\n' "$d" "$f" "$(echo "$f $d" | awk '{print $1/$2}')"
for op in NTCreateX Close Rename Unlink Deltree Mkdir Qpathinfo Qfileinfo Qfsinfo Sfileinfo Find WriteX ReadX LockX UnlockX Flush; do
    a=$(avg dbench "$op"); b=$(avg fsdelta "$op")
    [ -n "$a" ] && [ -n "$b" ] || continue
    printf '| %s median AvgLat (ms) | %s | %s | %s |\n' "$op" "$a" "$b" \
        "$(echo "$b $a" | awk '{ if ($2 > 0) printf "%.2f", $1/$2; else print "-" }')"
done
