#!/bin/sh
# The kernel end-to-end of issue 37, too long for CI: a kernel tree from Debian's linux-source
# package, a few commits on top, one of which adds a delay to ext4's file creation; `fsdelta
# bisect --kernel` finds it, booting each commit's kernel in a QEMU guest (TCG where KVM cannot
# boot it: every sample says so). Prints the times of the first build, an incremental build, a
# step and the whole bisection, read from kbuild's cache and the bisection's log. A kernel built
# before (by an earlier run of this script, or `fsdelta run --kernel linux@COMMIT` with the same
# FSDELTA_CACHE_DIR) is taken from the cache; its build time is still listed.
#
# Usage (root): benches/bisect-kernel.sh [WORKDIR]   (default /var/tmp/fsdelta-bisect-kernel)
# Needs: linux-source-6.1 (installed here if missing), build-essential bc bison flex libelf-dev,
# qemu-system-x86, busybox-static, git; FSDELTA (default: target/release/fsdelta).
# Cleans up: the work directory is kept (the tree and the cache make a second run fast); the
# bisection's trees and guests are fsdelta's to remove, as always.
set -eu

WORK=${1:-/var/tmp/fsdelta-bisect-kernel}
FSDELTA=${FSDELTA:-$(pwd)/target/release/fsdelta}
COMMITS=${COMMITS:-8}          # commits after the good one
CULPRIT=${CULPRIT:-5}          # the one that adds the delay (1-based)
GOOD=${GOOD:-main~$COMMITS}    # the good end (GOOD=main~4 BAD=main~2: a shorter bisection of the same tree)
BAD=${BAD:-main}               # the bad end
NAME=${NAME:-kernel-bench}
[ -x "$FSDELTA" ] || { echo "build fsdelta first: cargo build --release (or set FSDELTA)" >&2; exit 2; }

if ! ls /usr/src/linux-source-6.1.tar.xz >/dev/null 2>&1; then
    apt-get install -y linux-source-6.1 bc bison flex libelf-dev >/dev/null
fi
mkdir -p "$WORK"
cd "$WORK"
export FSDELTA_CACHE_DIR="$WORK/cache" FSDELTA_DB="$WORK/results.sqlite" \
       FSDELTA_STATE_FILE="$WORK/state/leftovers.json"
export GIT_AUTHOR_NAME="Bench" GIT_AUTHOR_EMAIL="bench@example.org" \
       GIT_COMMITTER_NAME="Bench" GIT_COMMITTER_EMAIL="bench@example.org"

if [ ! -d linux/.git ]; then
    rm -rf linux
    tar -xf /usr/src/linux-source-6.1.tar.xz
    mv linux-source-6.1 linux
    # Debian's package ignores its whole top level (/* in .gitignore): drop that block.
    sed -i '/^# Debian packaging/,$d' linux/.gitignore
    git -C linux init -q -b main
    git -C linux add -A
    git -C linux commit -qm "linux-source-6.1 as packaged"
    i=1
    while [ "$i" -le "$COMMITS" ]; do
        if [ "$i" -eq "$CULPRIT" ]; then
            # 200 microseconds of busy waiting in every ext4 file creation.
            sed -i 's/^static int ext4_create(struct user_namespace \*mnt_userns, struct inode \*dir,/#include <linux\/delay.h>\n&/' linux/fs/ext4/namei.c
            perl -0pi -e 's/(static int ext4_create\([^{]*\{\n)/$1\tudelay(200);\n/' linux/fs/ext4/namei.c
            git -C linux commit -qam "ext4: wait a little in ext4_create"
        else
            echo "/* bench change $i */" >> linux/fs/ext4/ext4_jbd2.c
            git -C linux commit -qam "ext4: comment $i"
        fi
        i=$((i + 1))
    done
fi
grep -q 'udelay(200)' linux/fs/ext4/namei.c || { echo "the culprit commit did not apply its delay" >&2; exit 2; }

cat > suite.toml <<'TOML'
name = "create"
[[test]]
name = "create"
workload = "fsmark"
args = "-s 0 -n 2000 -t 1 -S 0"
TOML
cat > guest.toml <<'TOML'
[[config]]
name = "ext4"
fs = "ext4"
device = "loop:1G"
kernel = "host"
TOML

start=$(date +%s)
"$FSDELTA" bisect --name "$NAME" --repo linux --kernel --good "$GOOD" --bad "$BAD" \
    --config guest.toml --suite suite.toml --test create || true
end=$(date +%s)

LOG="$WORK/state/bisect/$NAME/log.txt"
echo
echo "== times (from kbuild's cache $WORK/cache and $LOG) =="
# Every kernel build of the tree, oldest first: the first compiles everything, the others only
# what changed since the commit before (one worktree, one O= directory per config).
n=0
for b in $(ls -tr "$WORK"/cache/kbuild/built/*/built.json 2>/dev/null); do
    n=$((n + 1))
    commit=$(sed -n 's/.*"commit": "\([0-9a-f]\{12\}\).*/\1/p' "$b")
    secs=$(sed -n 's/.*"build_s": \([0-9]*\).*/\1/p' "$b")
    if [ "$n" -eq 1 ]; then kind="first build"; else kind="incremental build"; fi
    echo "$kind: $commit $secs s"
done
# A step: from the line before it (the ends, or the step before) to its own line.
grep -E '^\[[^]]*\] (ends|step|confirm|revert) [0-9]+:' "$LOG" | sed 's/^\[\([^]]*\)\] \([a-z]* [0-9]*\):.*/\1 \2/' | {
    prev=$(sed -n 's/^\[\([^]]*\)\] bisection .*/\1/p' "$LOG" | head -1)
    while read -r at what n; do
        [ -n "$prev" ] && echo "$what $n: $(( $(date -d "$at" +%s) - $(date -d "$prev" +%s) )) s (builds, boots, runs)"
        prev=$at
    done
}
echo "whole bisection: $((end - start)) s (this invocation; a resumed one: see the log's first and last lines)"
"$FSDELTA" bisect report "$NAME" | head -30
