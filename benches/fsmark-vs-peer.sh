#!/usr/bin/env bash
# fsmark-vs-peer.sh: the real fs_mark against `fsdelta fsmark`, same flags, same filesystem.
#
# Usage (as root: it mounts a tmpfs and a loop-mounted ext4):
#   cargo build --release && sudo benches/fsmark-vs-peer.sh [ROUNDS]
#
# For every case it alternates the two tools (fs_mark first in odd rounds, fsdelta first in
# even ones), ROUNDS times (default 5), each run in a fresh directory after a sync, and prints
# the medians of Files/sec and of App Overhead per file (us) for each tool, the median of the
# per-round ratios ours/theirs, and the median wall time and CPU time per file of each whole
# command (CPU time is the steadiest figure on a busy machine: preemption does not inflate it). Files/sec > 1 and overhead < 1 mean fsdelta is the faster
# harness. Every mount, loop device and file it creates is removed on exit, error or Ctrl-C.
#
# Environment: FS_MARK (default /usr/bin/fs_mark), FSDELTA (default target/release/fsdelta),
# CASES to run a subset (e.g. CASES="tmpfs-s0").
set -euo pipefail

ROUNDS=${1:-${ROUNDS:-5}}
FS_MARK=${FS_MARK:-/usr/bin/fs_mark}
FSDELTA=${FSDELTA:-$(cd "$(dirname "$0")/.." && pwd)/target/release/fsdelta}

die() { echo "fsmark-vs-peer: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "run as root (mounts a tmpfs and a loop device)"
[ -x "$FS_MARK" ] || die "$FS_MARK not found (apt-get install fsmark)"
[ -x "$FSDELTA" ] || die "$FSDELTA not found (cargo build --release)"
command -v mkfs.ext4 >/dev/null || die "mkfs.ext4 not found"

# Debian's fs_mark rejects -d paths of 40 bytes or more: keep the work directory short.
WORK=$(mktemp -d /tmp/fsmb.XXXXXX)
LOOP=""
cleanup() {
    set +e
    for m in "$WORK/ext4" "$WORK/tmpfs"; do
        mountpoint -q "$m" && umount "$m"
    done
    [ -n "$LOOP" ] && losetup -d "$LOOP"
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$WORK/tmpfs" "$WORK/ext4"
mount -t tmpfs -o size=2g fsmb-tmpfs "$WORK/tmpfs"
truncate -s 2G "$WORK/ext4.img"
LOOP=$(losetup -f --show "$WORK/ext4.img")
mkfs.ext4 -q -F "$LOOP"
mount "$LOOP" "$WORK/ext4"

# name  mountpoint  flags
ALL_CASES=(
    "tmpfs-s0|$WORK/tmpfs|-s 0 -n 20000 -t 2 -S 0"
    "tmpfs-s4096-S1|$WORK/tmpfs|-s 4096 -n 10000 -t 2 -S 1"
    "ext4-s0|$WORK/ext4|-s 0 -n 10000 -t 2 -S 0"
    "ext4-s4096-S1|$WORK/ext4|-s 4096 -n 2000 -t 2 -S 1"
)

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

# CPU seconds (user + system) of the children of the subshell that wrote `times` into $1.
cpu_of() { sed -n 2p "$1" | awk '{t=0; for (i=1;i<=2;i++) {split($i,a,/[ms]/); t+=a[1]*60+a[2]} print t}'; }

# run TOOL DIR FLAGS -> "files_per_sec overhead_us_per_file elapsed_s cpu_us_per_file"
run() {
    local tool=$1 dir=$2 flags=$3 out t0 t1
    rm -rf "$dir"
    sync
    t0=$(date +%s%N)
    if [ "$tool" = theirs ]; then
        # shellcheck disable=SC2086
        out=$("$FS_MARK" -d "$dir" $flags -l "$WORK/fs_mark.log"; times >"$WORK/times")
    else
        # shellcheck disable=SC2086
        out=$("$FSDELTA" fsmark -d "$dir" $flags -l "$WORK/fsdelta.log"; times >"$WORK/times")
    fi
    t1=$(date +%s%N)
    rm -rf "$dir"
    # The single table row: FSUse% Count Size Files/sec AppOverhead
    echo "$out" | awk -v ns=$((t1 - t0)) -v cpu="$(cpu_of "$WORK/times")" \
        '/^ *[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9]+$/ {printf "%s %.4f %.4f %.4f\n", $4, $5/$2, ns/1e9, cpu*1e6/$2}' | tail -1
}

echo "# fsmark-vs-peer: $ROUNDS rounds, $(nproc) CPUs, kernel $(uname -r)"
echo "# fs_mark: $FS_MARK ($(dpkg-query -W -f='${Version}' fsmark 2>/dev/null || echo unknown))"
echo "# fsdelta: $FSDELTA ($("$FSDELTA" --version))"
printf '%-15s %-31s %11s %11s %6s %10s %10s %6s %9s %9s %9s %9s\n' case flags "fs_mark f/s" "fsdelta f/s" ratio "fs_mark us" "fsdelta us" ratio "fs_mark s" "fsdelta s" "fs_mark c" "fsdelta c"
for c in "${ALL_CASES[@]}"; do
    IFS='|' read -r name mnt flags <<<"$c"
    if [ -n "${CASES:-}" ] && [[ " $CASES " != *" $name "* ]]; then continue; fi
    : >"$WORK/theirs" ; : >"$WORK/ours" ; : >"$WORK/ratios"
    for r in $(seq 1 "$ROUNDS"); do
        if [ $((r % 2)) = 1 ]; then order="theirs ours"; else order="ours theirs"; fi
        for tool in $order; do
            run "$tool" "$mnt/t" "$flags" >>"$WORK/$tool"
        done
        t=$(tail -1 "$WORK/theirs"); o=$(tail -1 "$WORK/ours")
        echo "$t $o" | awk '{printf "%.4f %.4f\n", $5/$1, ($2>0 ? $6/$2 : 0)}' >>"$WORK/ratios"
    done
    printf '%-15s %-31s %11.1f %11.1f %6.3f %10.3f %10.3f %6.3f %9.3f %9.3f %9.2f %9.2f\n' "$name" "$flags" \
        "$(cut -d' ' -f1 "$WORK/theirs" | median)" "$(cut -d' ' -f1 "$WORK/ours" | median)" \
        "$(cut -d' ' -f1 "$WORK/ratios" | median)" \
        "$(cut -d' ' -f2 "$WORK/theirs" | median)" "$(cut -d' ' -f2 "$WORK/ours" | median)" \
        "$(cut -d' ' -f2 "$WORK/ratios" | median)" \
        "$(cut -d' ' -f3 "$WORK/theirs" | median)" "$(cut -d' ' -f3 "$WORK/ours" | median)" \
        "$(cut -d' ' -f4 "$WORK/theirs" | median)" "$(cut -d' ' -f4 "$WORK/ours" | median)"
done
echo "# f/s: Files/sec as fs_mark defines it (sum of per-worker rates); us: App Overhead per file;"
echo "# s: wall time of the whole command (start-up, timed loop, unlinks, exit);"
echo "# c: CPU time (user + system, all workers) of the whole command per file, in us."
echo "# ratio: median over rounds of ours/theirs (Files/sec: > 1 is better; overhead: < 1 is better)."
