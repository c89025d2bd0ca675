#!/usr/bin/env bash
# aa-rate.sh: the real A/A false-alarm rate of `compare` on this machine (issue 38), and whether
# a disturbance is named. Phase 1 runs PAIRS A/A comparisons: two runs of the same suite
# (default the quick suite, -n 3) on the same target, back to back, then `compare` of the second
# against the first; it prints how many exit 1 (a headline flagged where nothing changed; goal:
# at most 5 %) and how many exit 2 (an error or a side lacking samples). Phase 2 does the same
# with a background writer (an O_DIRECT dd loop on the filesystem that holds the target,
# started under the name `bgwriter`) running during the second run of each pair only: every
# such comparison must carry compare's "measured under disturbance" warning, naming the writer;
# the script prints how many exit 1 and how many carry the warning.
#
# Usage (as root for a loop-image target; a directory target needs none):
#   benches/aa-rate.sh [--pairs N] [--writer-pairs M] [-n R] [--target DIR | --config FILE]
#                      [--test NAME ...] [--logs DIR] [--bin PATH]
# Defaults: 10 pairs, 3 writer pairs, -n 3, the quick suite in a directory under /var/tmp
# (the same disk the writer writes to), the debug build target/debug/fsdelta, a fresh store in
# the logs directory. --test NAME (repeatable) narrows the suite: with `--test smallfiles
# --test copy --test untar` a pair (two runs at -n 3 and a compare) took 3 to 3.5 minutes on the
# 2-core development VM shared with 7 busy helpers (10 pairs and 3 writer pairs: 39 minutes);
# the whole quick suite (no --test) with a release build (--bin target/release/fsdelta) took
# 11 to 12 minutes a pair there (load 13 to 15), a run beside the writer the longer one.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PAIRS=10
WPAIRS=3
N=3
TARGET=""
CONFIG=""
LOGS=""
BIN="$ROOT/target/debug/fsdelta"
SEL=()
die() { echo "aa-rate: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --pairs) PAIRS="$2"; shift 2 ;;
        --writer-pairs) WPAIRS="$2"; shift 2 ;;
        -n) N="$2"; shift 2 ;;
        --target) TARGET="$2"; shift 2 ;;
        --config) CONFIG="$2"; shift 2 ;;
        --test) SEL+=(--test "$2"); shift 2 ;;
        --logs) LOGS="$2"; shift 2 ;;
        --bin) BIN="$2"; shift 2 ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) die "unknown argument: $1" ;;
    esac
done
[ -x "$BIN" ] || die "$BIN is not an executable: cargo build first, or give --bin"
[ -z "$TARGET" ] || [ -z "$CONFIG" ] || die "give --target or --config, not both"
LOGS="${LOGS:-$(mktemp -d /var/tmp/fsdelta-aa-rate.XXXXXX)}"
mkdir -p "$LOGS"
export FSDELTA_DB="$LOGS/aa.sqlite"
if [ -z "$TARGET" ] && [ -z "$CONFIG" ]; then
    TARGET="$LOGS/target"
    mkdir -p "$TARGET"
fi
if [ -n "$CONFIG" ]; then WHERE=(--config "$CONFIG"); else WHERE=(--target "$TARGET"); fi
# The writer writes beside the store and the target (the same filesystem, the same disk).
WDIR="$LOGS"
WPID=""
stop_writer() {
    if [ -n "$WPID" ]; then
        # The dd it is running (its child, by parent pid), read before the loop is killed.
        local kids
        kids=$(ps -o pid= --ppid "$WPID" || true)
        kill "$WPID" 2>/dev/null || true
        wait "$WPID" 2>/dev/null || true
        for k in $kids; do kill -KILL "$k" 2>/dev/null || true; done
        WPID=""
    fi
    rm -f "$WDIR/bgwriter.data"
}
trap stop_writer EXIT
start_writer() {
    ln -sf /bin/sh "$WDIR/bgwriter"
    "$WDIR/bgwriter" -c "i=0; while [ \$i -lt 2000 ]; do i=\$((i+1)); \
        dd if=/dev/zero of='$WDIR/bgwriter.data' bs=1M count=64 oflag=direct status=none || exit 1; done" &
    WPID=$!
}

run() { # label
    "$BIN" run --quiet --suite quick -n "$N" --label "$1" "${WHERE[@]}" "${SEL[@]}" \
        >"$LOGS/run-$1.txt" 2>&1 || echo "aa-rate: run $1 ended $? (see $LOGS/run-$1.txt)" >&2
}

compare() { # a b -> exit code
    local rc=0
    "$BIN" compare "label:$1" "label:$2" >"$LOGS/compare-$1-$2.txt" 2>&1 || rc=$?
    echo "$rc"
}

echo "aa-rate: logs and store in $LOGS; $PAIRS A/A pairs, then $WPAIRS with a background writer; -n $N ${SEL[*]:-}"
ones=0; twos=0; warned_quiet=0
for i in $(seq 1 "$PAIRS"); do
    run "aa$i-a"; run "aa$i-b"
    rc=$(compare "aa$i-a" "aa$i-b")
    w=no
    if tr -s ' \n' ' ' <"$LOGS/compare-aa$i-a-aa$i-b.txt" | grep -q "measured under disturbance"; then
        w=yes; warned_quiet=$((warned_quiet + 1))
    fi
    [ "$rc" = 1 ] && ones=$((ones + 1))
    [ "$rc" = 2 ] && twos=$((twos + 1))
    echo "pair $i: exit $rc, disturbance warning: $w ($(date -u +%H:%M:%S))"
done
if [ "$PAIRS" -gt 0 ]; then
    echo "A/A: $ones of $PAIRS comparisons exit 1 ($(awk "BEGIN{printf \"%.0f\", 100*$ones/$PAIRS}") %; goal <= 5 %), $twos exit 2; $warned_quiet carry a disturbance warning"
fi
wones=0; wtwos=0; warned=0; named=0
for i in $(seq 1 "$WPAIRS"); do
    run "w$i-a"
    start_writer
    sleep 2
    run "w$i-b"
    stop_writer
    rc=$(compare "w$i-a" "w$i-b")
    f="$LOGS/compare-w$i-a-w$i-b.txt"
    w=no; nm=no
    if tr -s ' \n' ' ' <"$f" | grep -q "current side: [0-9]* of [0-9]* samples measured under disturbance"; then
        w=yes; warned=$((warned + 1))
        # Named when it is among the heaviest three of the first disturbed sample shown.
        if grep -q "bgwriter\[" "$f"; then nm=yes; named=$((named + 1)); fi
    fi
    [ "$rc" = 1 ] && wones=$((wones + 1))
    [ "$rc" = 2 ] && wtwos=$((wtwos + 1))
    echo "writer pair $i: exit $rc, disturbance warning: $w, naming bgwriter: $nm ($(date -u +%H:%M:%S))"
done
if [ "$WPAIRS" -gt 0 ]; then
    echo "with a background writer: $wones of $WPAIRS comparisons exit 1, $wtwos exit 2; $warned of $WPAIRS carry the disturbance warning (goal: all), $named name bgwriter in it"
fi
