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
# CASES to run a subset (e.g. CASES="tmpfs-s0"; "bare" is the one-thread tmpfs case against
# the bare create loop, run by default after the table).
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

# The bare create loop (the limit, issue 17 item 2): the system calls fs_mark and fsdelta make
# per file with -s 0 -S 0 (mkdir of the directory, EEXIST; open(O_CREAT|O_RDWR|O_TRUNC); a write
# of 0 bytes; close), 40-character names (16 hex + 24 random, as fs_mark's default) made before
# the clock starts, nothing timed per file, one thread. Prints a row shaped like fs_mark's.
cat >"$WORK/bare.c" <<'EOF'
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc != 3) return 2;
    const char *dir = argv[1];
    long n = atol(argv[2]);
    size_t dl = strlen(dir);
    char *paths = malloc((size_t)n * (dl + 42));
    unsigned long x = 0x9e3779b97f4a7c15UL;
    const char *abc = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    for (long i = 0; i < n; i++) {
        char *p = paths + i * (dl + 42);
        memcpy(p, dir, dl);
        p[dl] = '/';
        snprintf(p + dl + 1, 17, "%016lx", (unsigned long)time(NULL));
        for (int j = 0; j < 24; j++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            p[dl + 17 + j] = abc[x % 36];
        }
        p[dl + 41] = 0;
    }
    char buf[1] = {0};
    mkdir(dir, 0777);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) {
        if (mkdir(dir, 0777) != 0 && errno != EEXIST) { perror("mkdir"); return 1; }
        int fd = open(paths + i * (dl + 42), O_CREAT | O_RDWR | O_TRUNC, 0666);
        if (fd < 0) { perror("open"); return 1; }
        if (write(fd, buf, 0) != 0) { perror("write"); return 1; }
        if (close(fd) != 0) { perror("close"); return 1; }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    for (long i = 0; i < n; i++) unlink(paths + i * (dl + 42));
    printf("%8d %10ld %10d %16.1f %12d\n", 0, n, 0, n / s, 0);
    return 0;
}
EOF
cc -O2 -o "$WORK/bare" "$WORK/bare.c"

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
    if [ "$tool" = bare ]; then
        # shellcheck disable=SC2086
        out=$("$WORK/bare" "$dir" "$(echo "$flags" | awk '{for (i=1;i<NF;i++) if ($i=="-n") print $(i+1)}')"; times >"$WORK/times")
    elif [ "$tool" = theirs ]; then
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
# Against the bare loop: one thread on tmpfs, rotating the order of the three.
BARE_CASES=("tmpfs-s0-t1|$WORK/tmpfs|-s 0 -n 20000 -t 1 -S 0")
if [ -z "${CASES:-}" ] || [[ " $CASES " == *" bare "* ]]; then
    printf '\n%-15s %-31s %11s %11s %11s %9s %9s %9s %9s\n' case flags "bare f/s" "fsdelta f/s" "fs_mark f/s" "ours/bare" "peer/bare" "fsdelta c" "bare c"
    for c in "${BARE_CASES[@]}"; do
        IFS='|' read -r name mnt flags <<<"$c"
        : >"$WORK/bare.out"; : >"$WORK/ours"; : >"$WORK/theirs"; : >"$WORK/ratios"
        for r in $(seq 1 "$ROUNDS"); do
            case $((r % 3)) in
                1) order="bare ours theirs" ;;
                2) order="ours theirs bare" ;;
                *) order="theirs bare ours" ;;
            esac
            for tool in $order; do
                f=$WORK/$tool; [ "$tool" = bare ] && f=$WORK/bare.out
                run "$tool" "$mnt/t" "$flags" >>"$f"
            done
            b=$(tail -1 "$WORK/bare.out"); o=$(tail -1 "$WORK/ours"); t=$(tail -1 "$WORK/theirs")
            echo "$b $o $t" | awk '{printf "%.4f %.4f\n", $5/$1, $9/$1}' >>"$WORK/ratios"
        done
        printf '%-15s %-31s %11.1f %11.1f %11.1f %9.3f %9.3f %9.2f %9.2f\n' "$name" "$flags" \
            "$(cut -d' ' -f1 "$WORK/bare.out" | median)" "$(cut -d' ' -f1 "$WORK/ours" | median)" \
            "$(cut -d' ' -f1 "$WORK/theirs" | median)" \
            "$(cut -d' ' -f1 "$WORK/ratios" | median)" "$(cut -d' ' -f2 "$WORK/ratios" | median)" \
            "$(cut -d' ' -f4 "$WORK/ours" | median)" "$(cut -d' ' -f4 "$WORK/bare.out" | median)"
    done
    echo "# bare: the same system calls per file with nothing timed (bare.c in this script); ratios: median over rounds."
fi
echo "# f/s: Files/sec as fs_mark defines it (sum of per-worker rates); us: App Overhead per file;"
echo "# s: wall time of the whole command (start-up, timed loop, unlinks, exit);"
echo "# c: CPU time (user + system, all workers) of the whole command per file, in us."
echo "# ratio: median over rounds of ours/theirs (Files/sec: > 1 is better; overhead: < 1 is better)."
