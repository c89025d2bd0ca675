#!/usr/bin/env bash
# alternate.sh: nothing got slower (issue 34). Runs benches/psync-clock.sh and
# benches/fsmark-vs-peer.sh with a BEFORE and an AFTER build of fsdelta, alternated in one
# session (round 1: before, after; round 2: before, after; ...), and prints each script's
# headline per round and side, the medians, the spread of the rounds, and after / before:
#   psync   the `cpu` row of psync-clock.sh: fsdelta fio (clocksource=cpu, a psync 4k random
#           read of a page-cached file) IOPS / the bare pread loop's, median of its rounds; beside
#           it the same ratio of I/Os per CPU second, and gtod_reduce=1's IOPS ratio
#   fsmark  the bare-loop case of fsmark-vs-peer.sh (CASES=bare: tmpfs, -s 0 -n 20000 -t 1 -S 0):
#           `fsdelta fsmark` Files/sec / the bare create loop's, median of its rounds; beside it
#           the real fs_mark's ratio to the same loop
# Measured on a quiet machine before issue 34: psync 0.885 of the bare loop, fs_mark 0.90.
# A change is within the noise when after / before lies inside the rounds' spread (the min-max
# of each side's rounds, printed); the scripts' own per-run logs are kept and their directory
# printed.
#
# Usage (as root: fsmark-vs-peer.sh mounts a tmpfs and a loop device):
#   benches/alternate.sh [--rounds N] [--psync-rounds R] [--runtime S] [--fsmark-rounds R]
#                        [--only psync|fsmark] [--logs DIR] BEFORE_BIN AFTER_BIN
# Defaults: 3 alternated rounds; in each, psync-clock.sh --rounds 4 --runtime 2 and
# fsmark-vs-peer.sh 3 (about 40 s and 25 s per script and side on the 2-core development VM:
# 7 minutes in all, measured at load average 6 to 9). More rounds narrow the medians (e.g.
# --rounds 5 --psync-rounds 8 on a quiet machine). BEFORE_BIN and AFTER_BIN may also come from
# the environment (BEFORE, AFTER). FIO and FS_MARK are passed on to the scripts.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
ROUNDS=3
PSYNC_ROUNDS=4
RUNTIME=2
FSMARK_ROUNDS=3
ONLY="psync fsmark"
LOGS=""
ARGS=()
die() { echo "alternate: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS="$2"; shift 2 ;;
        --psync-rounds) PSYNC_ROUNDS="$2"; shift 2 ;;
        --runtime) RUNTIME="$2"; shift 2 ;;
        --fsmark-rounds) FSMARK_ROUNDS="$2"; shift 2 ;;
        --only) ONLY="$2"; shift 2 ;;
        --logs) LOGS="$2"; shift 2 ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        -*) die "unknown argument: $1" ;;
        *) ARGS+=("$1"); shift ;;
    esac
done
[ ${#ARGS[@]} -eq 0 ] || [ ${#ARGS[@]} -eq 2 ] || die "give BEFORE_BIN and AFTER_BIN (or neither, with BEFORE and AFTER set)"
BEFORE="${ARGS[0]:-${BEFORE:-}}"
AFTER="${ARGS[1]:-${AFTER:-}}"
[ -n "$BEFORE" ] && [ -n "$AFTER" ] || die "usage: benches/alternate.sh [options] BEFORE_BIN AFTER_BIN"
BEFORE="$(realpath "$BEFORE")"
AFTER="$(realpath "$AFTER")"
[ -x "$BEFORE" ] || die "$BEFORE is not an executable"
[ -x "$AFTER" ] || die "$AFTER is not an executable"
for s in $ONLY; do
    case "$s" in psync | fsmark) ;; *) die "--only: psync or fsmark, not $s" ;; esac
done
[ "$(id -u)" = 0 ] || [[ " $ONLY " != *" fsmark "* ]] || die "run as root (fsmark-vs-peer.sh mounts a tmpfs and a loop device)"
if [ -z "$LOGS" ]; then
    LOGS="$(mktemp -d /tmp/fsdelta-alternate.XXXXXX)"
else
    mkdir -p "$LOGS"
fi

# One script run: SCRIPT SIDE ROUND -> its headline figures on stdout, its whole output in LOGS.
run_one() {
    local script=$1 side=$2 round=$3 bin log
    if [ "$side" = before ]; then bin="$BEFORE"; else bin="$AFTER"; fi
    log="$LOGS/round$round-$script-$side.log"
    echo "# round $round $script $side, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%H:%M:%S)" >"$log"
    case "$script" in
        psync)
            FSDELTA="$bin" "$ROOT/benches/psync-clock.sh" --rounds "$PSYNC_ROUNDS" --runtime "$RUNTIME" >>"$log" 2>&1 \
                || { tail -n 20 "$log" >&2; die "psync-clock.sh failed (log: $log)"; }
            # | cpu | median IOPS | IOPS / bare | middle half | I/Os per CPU s / bare |
            awk -F'|' '
                function t(s) { gsub(/ /, "", s); return s }
                t($2) == "cpu" { cpu = t($4); percpu = t($6) }
                t($2) == "reduce" { reduce = t($4) }
                END { if (cpu == "") exit 1; print cpu, percpu, reduce }' "$log" \
                || die "no cpu row in $log"
            ;;
        fsmark)
            FSDELTA="$bin" CASES=bare "$ROOT/benches/fsmark-vs-peer.sh" "$FSMARK_ROUNDS" >>"$log" 2>&1 \
                || { tail -n 20 "$log" >&2; die "fsmark-vs-peer.sh failed (log: $log)"; }
            # case, 8 flag words, bare f/s, fsdelta f/s, fs_mark f/s, ours/bare, peer/bare, c, c
            awk '$1 == "tmpfs-s0-t1" { ours = $(NF-3); peer = $(NF-2) }
                END { if (ours == "") exit 1; print ours, peer }' "$log" \
                || die "no tmpfs-s0-t1 row in $log"
            ;;
    esac
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.4g\n", (a[NR/2]+a[NR/2+1])/2}'; }
spread() { sort -g | awk '{a[NR]=$1} END {printf "%s-%s", a[1], a[NR]}'; }
# The width of the rounds' range as a share of their median, in percent.
width() { sort -g | awk '{a[NR]=$1} END {m = (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.1f %%", 100*(a[NR]-a[1])/m}'; }

declare -A VAL
echo "alternate: before $BEFORE"
echo "alternate: after  $AFTER"
echo "alternate: $ROUNDS rounds (before, after each), logs in $LOGS"
for r in $(seq 1 "$ROUNDS"); do
    for script in $ONLY; do
        for side in before after; do
            VAL[$script,$side,$r]="$(run_one "$script" "$side" "$r")"
            echo "round $r $script $side: ${VAL[$script,$side,$r]} (load $(cut -d' ' -f1 /proc/loadavg))"
        done
    done
done

echo
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) CPUs, load average now $(cut -d' ' -f1-3 /proc/loadavg)"
for script in $ONLY; do
    echo
    if [ "$script" = psync ]; then
        echo "psync-clock.sh --rounds $PSYNC_ROUNDS --runtime $RUNTIME: fsdelta fio (clocksource=cpu) / bare pread loop"
        cols=("IOPS/bare (headline)" "IOPS per CPU s/bare" "gtod_reduce IOPS/bare")
    else
        echo "fsmark-vs-peer.sh $FSMARK_ROUNDS, CASES=bare (tmpfs -s 0 -n 20000 -t 1 -S 0): Files/sec / bare create loop"
        cols=("fsdelta/bare (headline)" "fs_mark/bare")
    fi
    printf '%-8s %-7s' round side
    for c in "${cols[@]}"; do printf ' %24s' "$c"; done
    echo
    for r in $(seq 1 "$ROUNDS"); do
        for side in before after; do
            printf '%-8s %-7s' "$r" "$side"
            for v in ${VAL[$script,$side,$r]}; do printf ' %24s' "$v"; done
            echo
        done
    done
    for what in median spread width; do
        for side in before after; do
            printf '%-8s %-7s' "$what" "$side"
            for ((i = 1; i <= ${#cols[@]}; i++)); do
                printf ' %24s' "$(for r in $(seq 1 "$ROUNDS"); do echo "${VAL[$script,$side,$r]}" | cut -d' ' -f"$i"; done | "$what")"
            done
            echo
        done
    done
    printf '%-16s' "after/before"
    for ((i = 1; i <= ${#cols[@]}; i++)); do
        b="$(for r in $(seq 1 "$ROUNDS"); do echo "${VAL[$script,before,$r]}" | cut -d' ' -f"$i"; done | median)"
        a="$(for r in $(seq 1 "$ROUNDS"); do echo "${VAL[$script,after,$r]}" | cut -d' ' -f"$i"; done | median)"
        printf ' %24s' "$(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f", a/b}')"
    done
    echo "  (ratio of the medians)"
done
echo
echo "# spread: min-max of the rounds; width: (max - min) / median. A ratio after/before within"
echo "# the spread of the rounds is noise, not a change."
