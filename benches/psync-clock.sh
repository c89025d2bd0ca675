#!/usr/bin/env bash
# psync-clock.sh: what the clock costs a psync job (issue 17 item 1). One 4 KiB random-read job
# from a page-cached file, run side by side by
#   bare      a bare pread loop (the system call alone: no clock, no stats; fio-vs-peer.sh's)
#   baretsc   the same loop timing each pread with two TSC readings into a 1,024-bucket
#             histogram: the ceiling of any loop that measures each I/O's latency as fio does
#   cgt       fsdelta fio with clocksource=clock_gettime (two clock_gettime calls per I/O)
#   cpu       fsdelta fio with clocksource=cpu (the calibrated TSC; fio's default where the
#             TSC is invariant)
#   reduce    fsdelta fio with gtod_reduce=1 (no latency measured; the clock read once every
#             64 I/Os, as fio's ts_cache): the engine's cost without timing, against `bare`
#   fio       fio 3.33 (its default clock)
# in rounds whose order rotates (each tool takes every position), the file read once, untimed,
# before every run; prints per-round IOPS and the median of the per-round ratios to the bare
# loop with the middle half of the rounds' ratios (how far one round is from the next on this
# machine), and the clock each fsdelta run reports in its JSON (`clocksource`,
# `clocksource_drift_ppm`). Beside IOPS it prints I/Os per CPU second of the whole process
# (user + system, bash's `time`): on a machine shared with other work a run's wall-clock IOPS
# depend on how much CPU it got, its I/Os per CPU second much less, so that ratio is the
# steadier one.
#
# A benchmark, not a test: on a shared machine per-run IOPS swing; read the medians of ratios.
#
# Usage: benches/psync-clock.sh [--rounds N] [--runtime SECONDS] [--size SIZE] [--dir DIR]
#        [--pin CPU]   (run every tool on that CPU alone, taskset -c: less placement noise)
# Environment: FIO (default /usr/bin/fio), FSDELTA (default target/release/fsdelta, built if
# missing).
set -euo pipefail

ROUNDS=8
RUNTIME=3
SIZE=256m
DIR=""
PIN=()
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) ROUNDS="$2"; shift 2 ;;
        --runtime) RUNTIME="$2"; shift 2 ;;
        --size) SIZE="$2"; shift 2 ;;
        --dir) DIR="$2"; shift 2 ;;
        --pin) PIN=(taskset -c "$2"); shift 2 ;;
        -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
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
# The bare loop plus what timing each I/O costs at the least: two TSC readings around the call
# and one histogram increment (x86_64; elsewhere the case is left out).
if [ "$(uname -m)" = x86_64 ]; then
    awk '
        /let mut x: u64/ { print; print "    let mut hist = vec![0u64; 1024];"; next }
        /f.read_at\(/ {
            print "            let t0 = unsafe { core::arch::x86_64::_rdtsc() };"
            print
            print "            let t1 = unsafe { core::arch::x86_64::_rdtsc() };"
            print "            hist[((t1.wrapping_sub(t0)) >> 6).min(1023) as usize] += 1;"
            next
        }
        /println!/ { print "    eprintln!(\"{}\", hist.iter().sum::<u64>());"; print; next }
        { print }
    ' "$WORK/bare.rs" > "$WORK/baretsc.rs"
    rustc -O -o "$WORK/baretsc" "$WORK/baretsc.rs"
fi

job() { # CLOCKSOURCE-LINE
    printf '[psync-clock]\nfilename=%s\nrw=randread\nbs=4k\nsize=%s\ninvalidate=0\nioengine=psync\ntime_based\nruntime=%s\n%s' \
        "$FILE" "$SIZE" "$RUNTIME" "$1"
}
job "" > "$WORK/fio.fio"
job $'clocksource=clock_gettime\n' > "$WORK/cgt.fio"
job $'clocksource=cpu\n' > "$WORK/cpu.fio"
job $'gtod_reduce=1\n' > "$WORK/reduce.fio"

# Lay the file out once (fio writes it), then warm it.
"$FIO" --output-format=json "$WORK/fio.fio" > /dev/null

run() { # TOOL -> "iops ios_per_cpu_s [clocksource drift_ppm]"
    local cpu out json TIMEFORMAT='%U %S'
    cat "$FILE" > /dev/null
    # Only the tool is timed (user + system of it and its children), not jq.
    case "$1" in
        bare|baretsc)
              cpu="$( { time "${PIN[@]}" "$WORK/$1" "$FILE" "$RUNTIME" > "$WORK/out" 2>/dev/null; } 2>&1 )"
              out="$(awk -v t="$RUNTIME" '{print $1, $1 * t}' "$WORK/out")" ;;
        fio) cpu="$( { time "${PIN[@]}" "$FIO" --output-format=json "$WORK/fio.fio" > "$WORK/out"; } 2>&1 )"
             json="$(cat "$WORK/out")"
             out="$(printf '%s' "${json#"${json%%\{*}"}" | jq -r '.jobs[0].read | "\(.iops) \(.total_ios)"')" ;;
        *) cpu="$( { time "${PIN[@]}" "$FSDELTA" fio --output-format=json "$WORK/$1.fio" > "$WORK/out" 2>/dev/null; } 2>&1 )"
           json="$(cat "$WORK/out")"
           out="$(printf '%s' "${json#"${json%%\{*}"}" \
               | jq -r '.jobs[0] | "\(.read.iops) \(.read.total_ios) \(.clocksource) \(.clocksource_drift_ppm)"')" ;;
    esac
    read -r iops ios rest <<< "$out"
    awk -v i="$iops" -v n="$ios" -v c="$cpu" -v r="$rest" \
        'BEGIN {split(c, t, " "); printf "%s %.0f %s\n", i, n / (t[1] + t[2]), r}'
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# The middle half of the values: "Q1-Q3" (nearest-rank quartiles).
quartiles() { sort -g | awk '{a[NR]=$1} END {q1=int((NR+3)/4); q3=int((3*NR+3)/4); printf "%.3f-%.3f", a[q1], a[q3]}'; }

TOOLS=(bare cgt cpu reduce fio)
[ -x "$WORK/baretsc" ] && TOOLS=(bare baretsc cgt cpu reduce fio)
N=${#TOOLS[@]}
declare -A IOPS RATIO CPUR
for r in $(seq 1 "$ROUNDS"); do
    # Rotate the order by one position per round.
    order=()
    for ((k = 0; k < N; k++)); do order+=("${TOOLS[$(((k + r) % N))]}"); done
    declare -A got=() gotc=()
    for t in "${order[@]}"; do
        read -r iops percpu src drift < <(run "$t")
        got[$t]="$iops"
        gotc[$t]="$percpu"
        echo "round $r $t: iops=$iops ios_per_cpu_s=$percpu${src:+ clocksource=$src drift_ppm=$drift}" >&2
    done
    for t in "${TOOLS[@]}"; do
        IOPS[$t]+="${got[$t]} "
        RATIO[$t]+="$(awk -v a="${got[$t]}" -v b="${got[bare]}" 'BEGIN {print a/b}') "
        CPUR[$t]+="$(awk -v a="${gotc[$t]}" -v b="${gotc[bare]}" 'BEGIN {print a/b}') "
    done
    unset got gotc
done

echo
echo "psync 4k randread, page-cached $SIZE file, ${RUNTIME} s per run, $ROUNDS rounds (rotating order)"
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1 /proc/loadavg)${PIN[*]:+, pinned: ${PIN[*]}}"
echo
echo "| run | median IOPS | IOPS / bare loop (median of rounds) | middle half of rounds | I/Os per CPU s / bare loop's (median of rounds) |"
echo "|---|---:|---:|---:|---:|"
for t in "${TOOLS[@]}"; do
    mi="$(printf '%s\n' ${IOPS[$t]} | median)"
    mr="$(printf '%s\n' ${RATIO[$t]} | median)"
    mq="$(printf '%s\n' ${RATIO[$t]} | quartiles)"
    mc="$(printf '%s\n' ${CPUR[$t]} | median)"
    printf '| %s | %.0f | %.3f | %s | %.3f |\n' "$t" "$mi" "$mr" "$mq" "$mc"
done
