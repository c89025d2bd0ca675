#!/usr/bin/env bash
# psync-clock.sh: what the clock costs a psync job (issue 17 item 1). One 4 KiB random-read job
# from a page-cached file, run side by side by
#   bare      a bare pread loop (the system call alone: no clock, no stats; fio-vs-peer.sh's)
#   cgt       fsdelta fio with clocksource=clock_gettime (two clock_gettime calls per I/O)
#   cpu       fsdelta fio with clocksource=cpu (the calibrated TSC; fio's default where the
#             TSC is invariant)
#   fio       fio 3.33 (its default clock)
# in rounds whose order rotates (each tool takes every position), the file read once, untimed,
# before every run; prints per-round IOPS and the median of the per-round ratios to the bare
# loop, and the clock each fsdelta run reports in its JSON (`clocksource`,
# `clocksource_drift_ppm`).
#
# A benchmark, not a test: on a shared machine per-run IOPS swing; read the medians of ratios.
#
# Usage: benches/psync-clock.sh [--rounds N] [--runtime SECONDS] [--size SIZE] [--dir DIR]
# Environment: FIO (default /usr/bin/fio), FSDELTA (default target/release/fsdelta, built if
# missing).
set -euo pipefail

ROUNDS=8
RUNTIME=3
SIZE=256m
DIR=""
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS="$2"; shift 2 ;;
        --runtime) RUNTIME="$2"; shift 2 ;;
        --size) SIZE="$2"; shift 2 ;;
        --dir) DIR="$2"; shift 2 ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done
FIO="${FIO:-/usr/bin/fio}"
FSDELTA="${FSDELTA:-$ROOT/target/release/fsdelta}"
[ -x "$FIO" ] || { echo "fio not found at $FIO (apt-get install fio)" >&2; exit 2; }
command -v jq >/dev/null || { echo "jq is needed (apt-get install jq)" >&2; exit 2; }
if [ ! -x "$FSDELTA" ]; then
    (cd "$ROOT" && cargo build --release --bin fsdelta)
fi

WORK="$(mktemp -d /tmp/fsdelta-psync-clock.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT INT TERM
BASE="${DIR:-$WORK}"
FILE="$BASE/psync-clock.dat"

# The bare loop of fio-vs-peer.sh, unchanged: pread of 4 KiB at random block offsets.
sed -n '/^cat > "\$WORK\/bare.rs" <<.EOF.$/,/^EOF$/p' "$ROOT/benches/fio-vs-peer.sh" \
    | sed '1d;$d' > "$WORK/bare.rs"
[ -s "$WORK/bare.rs" ] || { echo "bare loop not found in benches/fio-vs-peer.sh" >&2; exit 2; }
rustc -O -o "$WORK/bare" "$WORK/bare.rs"

job() { # CLOCKSOURCE-LINE
    printf '[psync-clock]\nfilename=%s\nrw=randread\nbs=4k\nsize=%s\ninvalidate=0\nioengine=psync\ntime_based\nruntime=%s\n%s' \
        "$FILE" "$SIZE" "$RUNTIME" "$1"
}
job "" > "$WORK/fio.fio"
job $'clocksource=clock_gettime\n' > "$WORK/cgt.fio"
job $'clocksource=cpu\n' > "$WORK/cpu.fio"

# Lay the file out once (fio writes it), then warm it.
"$FIO" --output-format=json "$WORK/fio.fio" > /dev/null

run() { # TOOL -> "iops [clocksource drift_ppm]"
    local json
    cat "$FILE" > /dev/null
    case "$1" in
        bare) "$WORK/bare" "$FILE" "$RUNTIME" ;;
        fio) json="$("$FIO" --output-format=json "$WORK/fio.fio")"
             printf '%s' "${json#"${json%%\{*}"}" | jq -r '.jobs[0].read.iops' ;;
        *) json="$("$FSDELTA" fio --output-format=json "$WORK/$1.fio")"
           printf '%s' "${json#"${json%%\{*}"}" \
               | jq -r '.jobs[0] | "\(.read.iops) \(.clocksource) \(.clocksource_drift_ppm)"' ;;
    esac
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

TOOLS=(bare cgt cpu fio)
declare -A IOPS RATIO
for r in $(seq 1 "$ROUNDS"); do
    # Rotate the order by one position per round.
    order=()
    for k in 0 1 2 3; do order+=("${TOOLS[$(((k + r) % 4))]}"); done
    declare -A got=()
    for t in "${order[@]}"; do
        read -r iops src drift < <(run "$t")
        got[$t]="$iops"
        echo "round $r $t: iops=$iops${src:+ clocksource=$src drift_ppm=$drift}" >&2
    done
    for t in "${TOOLS[@]}"; do
        IOPS[$t]+="${got[$t]} "
        RATIO[$t]+="$(awk -v a="${got[$t]}" -v b="${got[bare]}" 'BEGIN {print a/b}') "
    done
    unset got
done

echo
echo "psync 4k randread, page-cached $SIZE file, ${RUNTIME} s per run, $ROUNDS rounds (rotating order)"
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1 /proc/loadavg)"
echo
echo "| run | median IOPS | median of per-round ratios to the bare loop |"
echo "|---|---:|---:|"
for t in "${TOOLS[@]}"; do
    mi="$(printf '%s\n' ${IOPS[$t]} | median)"
    mr="$(printf '%s\n' ${RATIO[$t]} | median)"
    printf '| %s | %.0f | %.3f |\n' "$t" "$mi" "$mr"
done
