#!/usr/bin/env bash
# same-output.sh: proof that two fsdelta builds print the same bytes (issue 34: "outputs byte for
# byte the same on the quick suite, a fio job file set and a compare").
#
# Usage (as root: the store's configuration run mounts a tmpfs):
#   benches/same-output.sh BEFORE_BIN AFTER_BIN
#
# Every case runs BEFORE_BIN, then AFTER_BIN, with the same arguments, in the same fresh working
# directory, under the same environment (HOME, XDG_*, FSDELTA_STATE_FILE inside the work
# directory; LC_ALL=C, TZ=UTC, COLUMNS=100; FSDELTA_DB and RUST_BACKTRACE unset), with stdin
# from /dev/null, and compares standard output, standard error, the exit code and, where the
# case says so, the files the command left behind. A case compares either the exact bytes or,
# where the numbers are measurements, the bytes with every digit run masked (`N`): then the
# structure, names, units and order must still be the same (fio's normal format and a run's
# table also drop what the size of a number decides: padding, decimals, nsec/usec/msec; see
# filter() below). Any difference is printed as a unified diff, and the script exits 1 after
# the last case (0: all the same, 2: it could not run, or a case did not run as meant with
# BEFORE_BIN: the harness checks the exit codes of its key cases, see expect()).
#
#   a. reads of one fixed store: the store is made ONCE, by BEFORE_BIN (two quick-suite runs
#      with different labels, the second counting a tracepoint; a run of a small suite file on a
#      tmpfs and a plain-directory configuration with hooks and profiles; an imported fio JSON),
#      then every read command runs with both binaries on a fresh copy of it at one path: list,
#      show (--raw, --test), compare (text, markdown, json; --test, --config, --metric, --all,
#      --gate all, --bisect, three sides, SEL@CONFIG, --profile), history (text, json,
#      --label-glob), export (json, csv, -o), report -o (one and two sides, filters), profile
#      (--flamegraph), sync into a new store, and their errors. Each case also records whether
#      the command changed the store's file and how many bytes it left in SQLite's -wal, which
#      must agree too; read cases that wrote anything are listed at the end.
#   b. the fio job file set: every job file under tests/data and fio's own examples
#      (/usr/share/doc/fio/examples, Debian package fio-examples, when installed) through
#      `fsdelta fio --parse-only`, `--showcmd`, and `--readonly --parse-only` (exact bytes);
#      tests/data's small job files run for real in json, json+ and terse (digits masked) with
#      the names and sizes of the files they leave; a null-engine and a psync job whose counts
#      are fixed (io_bytes, total_ios, job options: exact) and their masked normal output;
#      command-line errors.
#   c. the quick suite run by each binary into its own new store at the same path (digits,
#      padding and the unstable marker `*` masked), and `list` of it; a fs_mark and a dbench
#      run, masked;
#      every subcommand's
#      --help (the list read from BEFORE_BIN's --help), `fsdelta help`, --version, completions,
#      man, fsmark/dbench/fio usage, and errors for bad input (unknown suite, bad config and
#      suite files, missing files, bad flags).
#
# Environment:
#   SAME_OUTPUT_STORE=FILE  keep the store of (a) there: made by BEFORE_BIN when FILE does not
#                           exist, reused as it is when it does (so a later check reads the same
#                           store; the file is never written by the read cases)
#   SAME_OUTPUT_REPEAT=N    repetitions of each quick-suite run that makes the store (default 2)
#   SAME_OUTPUT_RUN_REPEAT=N  repetitions of the quick suite in (c) (default 2)
#   SAME_OUTPUT_PARTS="a b c" the parts to run (default all three)
#   SAME_OUTPUT_KEEP=1      keep the work directory (both sides' outputs) and say where
#   SAME_OUTPUT_DIR=DIR     make the work directory inside DIR (default /tmp)
#   FIO_EXAMPLES=DIR        fio's examples (default /usr/share/doc/fio/examples)
#
# It needs no network. On the 2-core development VM at load average 6 to 9 it took 12 minutes
# with the store made (most of it the four quick-suite runs), 8 with SAME_OUTPUT_STORE reused
# (about 520 cases).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
die() { echo "same-output: $*" >&2; exit 2; }
case "${1:-}" in -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;; esac
[ $# -eq 2 ] || die "usage: benches/same-output.sh BEFORE_BIN AFTER_BIN"
BEFORE="$(realpath "$1")" || die "$1: not found"
AFTER="$(realpath "$2")" || die "$2: not found"
[ -x "$BEFORE" ] || die "$BEFORE is not an executable"
[ -x "$AFTER" ] || die "$AFTER is not an executable"
[ "$(id -u)" = 0 ] || die "run as root (the store's configuration run mounts a tmpfs; runs drop caches)"
command -v jq >/dev/null || die "jq is needed (apt-get install jq)"
REPEAT="${SAME_OUTPUT_REPEAT:-2}"
RUN_REPEAT="${SAME_OUTPUT_RUN_REPEAT:-2}"
PARTS="${SAME_OUTPUT_PARTS:-a b c}"
FIO_EXAMPLES="${FIO_EXAMPLES:-/usr/share/doc/fio/examples}"

WORK="$(mktemp -d "${SAME_OUTPUT_DIR:-/tmp}/fsdelta-same.XXXXXX")"
cleanup() {
    set +e
    # A configuration run that was killed may leave its tmpfs mounted under the work directory.
    grep -o " $WORK/[^ ]*" /proc/self/mounts | sort -r | while read -r m; do umount "$m"; done
    if [ "${SAME_OUTPUT_KEEP:-0}" = 1 ]; then
        echo "same-output: kept $WORK (out/before, out/after: every case's .out .err .rc .files)" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

OUT="$WORK/out"          # OUT/{before,after}/CASE.{out,err,rc,files}
CWD="$WORK/cwd"          # every command runs here, emptied before each
STORE="$WORK/store/results.sqlite"   # the copy of the fixed store a read case sees
RUNDB="$WORK/rundb/results.sqlite"   # where the runs of (c) store their samples
mkdir -p "$OUT/before" "$OUT/after" "$WORK/store" "$WORK/rundb" "$WORK/home" "$WORK/input"

# One environment for both sides: nothing of the caller's (a FSDELTA_DB, a terminal width, a
# locale) may reach one side and not the other.
ENV=(env -i
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    HOME="$WORK/home" XDG_DATA_HOME="$WORK/home/data" XDG_STATE_HOME="$WORK/home/state"
    XDG_CACHE_HOME="$WORK/home/cache" FSDELTA_STATE_FILE="$WORK/home/state/leftovers.json"
    LC_ALL=C TZ=UTC COLUMNS=100 USER=root LOGNAME=root)

FAILED=()
WROTE=()     # read cases whose BEFORE or AFTER run changed the store (none should)
CASES=0

# The bytes of a case's outputs after its filter: exact (as printed), mask (every digit run is
# N), run (a run's table: mask, a number's decimals (as many as its size calls for), the `*` a
# run puts on an unstable metric and the footnote that explains it (both follow the noise), and
# the padding of the columns),
# normal (fio's normal format, whose layout follows the numbers: mask, then a number's k/M
# suffix, the unit of a latency (nsec, usec, msec) or a byte rate, the padding, and how many
# `lat (usec)   :` bucket lines there are (a line per five non-empty buckets) are left out, and
# so are the `bw (`/`iops :` lines, which a job shorter than fio's 500 ms averaging window may
# lack; the percentile lines are joined into one, as fio puts three or four on a line by their
# width), timed (normal, keeping the bw and iops lines: for jobs that run a fixed time),
# jsonplus (mask, and json+'s latency `bins`, whose number follows the latencies, as one line),
# json (a JSON document whose numbers are all 0 and whose histograms' `buckets` are empty, then
# masked: its keys, their order and its strings).
filter() { # MODE < text
    case "$1" in
        exact) cat ;;
        mask) sed -E 's/[0-9]+/N/g' ;;
        normal)
            sed -E 's/[0-9]+/N/g; s/[kKMGT]i?B/XB/g; s/N(\.N)?[kMGT]?/N/g; s/[num]sec/Tsec/g; s/ +/ /g; s/([=[]) /\1/g' \
                | awk -v timed="${2:-0}" '
                    function flush() { if (pct != "") print " | " pct; pct = "" }
                    /^ \| / { p = substr($0, 4); sub(/,$/, "", p); pct = (pct == "" ? p : pct ", " p); next }
                    { flush() }
                    /^ lat \(Tsec\) : / { if (!inlat) print " lat (Tsec) : buckets"; inlat = 1; next }
                    { inlat = 0 }
                    /^ (bw \(|iops :)/ && !timed { next }
                    { print }
                    END { flush() }' ;;
        jsonplus)
            filter mask | awk '/^ *"N" : N,?$/ { if (!inb) print "  (bins)"; inb = 1; next } { inb = 0; print }' ;;
        timed) filter normal 1 ;;
        run) sed -E 's/[0-9]+/N/g; s/N(\.N)+/N/g; s/(^| )\*( |$)/\1\2/g; s/ +/ /g; /unstable \(CV > N %\)/d' ;;
        json)
            jq 'walk(if type == "number" then 0 elif type == "object" and has("buckets") then .buckets = [] else . end)' \
                | filter mask ;;
        *) die "unknown filter $1" ;;
    esac
}

# Run one side of a case: SIDE NAME FILTER FILES STOREMODE -- ARGS... (FILES: none, names,
# content, count: what to keep of the files left in the working directory (count: how many files
# and bytes, for random names); STOREMODE: store (a fresh
# copy of the fixed store at $STORE, and whether the command changed it) or none).
run_side() {
    local side=$1 name=$2 files=$4 storemode=$5 bin rc=0 o
    [ "$6" = -- ] || die "run_side $name: missing --"
    shift 6
    if [ "$side" = before ]; then bin="$BEFORE"; else bin="$AFTER"; fi
    o="$OUT/$side/$name"
    rm -rf "$CWD" && mkdir -p "$CWD"
    if [ "$storemode" = store ]; then
        rm -f "$STORE"*
        cp "$FIXED_STORE" "$STORE"
    fi
    # The binary is called by its path; argv[0] is `fsdelta` on both sides.
    (cd "$CWD" && exec "${ENV[@]}" bash -c 'exec -a fsdelta "$0" "$@"' "$bin" "$@") \
        >"$o.out" 2>"$o.err" </dev/null || rc=$?
    echo "exit $rc" >"$o.rc"
    if [ "$storemode" = store ]; then
        # SQLite in WAL mode leaves an empty -wal (and its -shm index) after a read; a write
        # changes the file or fills the -wal.
        local st="db unchanged" wal=0
        cmp -s "$STORE" "$FIXED_STORE" || st="db CHANGED"
        [ -f "$STORE-wal" ] && wal="$(stat -c %s "$STORE-wal")"
        echo "store: $st, wal $wal bytes" >>"$o.rc"
        if [ "$st" != "db unchanged" ] || [ "$wal" != 0 ]; then WROTE+=("$name"); fi
    fi
    : >"$o.files"
    if [ "$files" = count ]; then
        # fs_mark's file names are random: how many files and bytes.
        echo "$(find "$CWD" -type f | wc -l) files, $(find "$CWD" -type f -printf '%s\n' | awk '{t += $1} END {print t + 0}') bytes" >"$o.files"
    elif [ "$files" != none ]; then
        (cd "$CWD" && find . -mindepth 1 | LC_ALL=C sort) | while read -r f; do
            if [ -d "$CWD/$f" ]; then
                echo "== $f/" >>"$o.files"
            else
                echo "== $f $(stat -c %s "$CWD/$f") bytes" >>"$o.files"
                if [ "$files" = content ]; then cat "$CWD/$f" >>"$o.files"; echo >>"$o.files"; fi
            fi
        done
    fi
}

# check NAME FILTER FILES STOREMODE -- ARGS...: run both sides and compare what they printed.
check() {
    local name=$1 mode=$2 files=$3 storemode=$4 k diffs=""
    [ "$5" = -- ] || die "check $name: missing --"
    CASES=$((CASES + 1))
    run_side before "$@"
    run_side after "$@"
    for k in out err rc files; do
        if ! cmp -s <(filter "$mode" <"$OUT/before/$name.$k") <(filter "$mode" <"$OUT/after/$name.$k"); then
            diffs+=" $k"
        fi
    done
    if [ -n "$diffs" ]; then
        FAILED+=("$name")
        shift 5
        echo "DIFFERENT: $name ($mode):$diffs  [fsdelta $*]"
        for k in $diffs; do
            diff -u --label "before/$name.$k" --label "after/$name.$k" \
                <(filter "$mode" <"$OUT/before/$name.$k") <(filter "$mode" <"$OUT/after/$name.$k") \
                | head -n 60 || true
        done
    else
        echo "same: $name ($mode, $(head -1 "$OUT/before/$name.rc"))"
    fi
}

# expect NAME CODE...: the harness's own check that a case ran as meant (a case that fails the
# same way on both sides proves nothing): BEFORE_BIN's exit code must be one of CODE.
expect() {
    local name=$1 rc
    shift
    rc="$(head -1 "$OUT/before/$name.rc" | cut -d' ' -f2)"
    for c in "$@"; do [ "$rc" = "$c" ] && return 0; done
    head -n 5 "$OUT/before/$name.err" >&2
    die "case $name exited $rc with the BEFORE binary, expected $*: the case is wrong, not the build"
}

# ---------------------------------------------------------------------------------------------
# Inputs: a small suite file and a configuration file (tmpfs and a plain directory, no device).
IN="$WORK/input"
cat >"$IN/small.toml" <<'EOF'
name = "small"

[margins]
eps = 2
delta = 5

[[test]]
name = "cmd"
workload = "command"
command = "echo 'took 12 ms'; echo 'to stderr' >&2"
[[test.metric]]
name = "took_ms"
regex = 'took (\d+) ms'
unit = "ms"
direction = "lower"

[[test]]
name = "tiny"
workload = "fsmark"
args = "-s 4096 -n 200 -t 1 -S 0 -L 2"

[[test]]
name = "rr"
workload = "fio"
job = """
rw=randrw
bs=4k
size=8m
write_lat_log=lat
log_avg_msec=100
"""

[[test]]
name = "db"
workload = "dbench"
clients = 1
time = 2

[[test]]
name = "st"
workload = "stream"
size = "16m"

[[test]]
name = "cp"
workload = "copy"
size = "16m"

[[test]]
name = "ut"
workload = "untar"
files = 200
EOF
mkdir -p "$WORK/dirconf"
cat >"$IN/conf.toml" <<EOF
scratch = "$WORK/scratch"

[[config]]
name = "ram"
fs = "tmpfs"
size = "512M"
fresh = "run"
before = "true"
after = "true"

[[config]]
name = "here"
fs = "dir"
path = "$WORK/dirconf"
EOF
printf '[[config]]\nname = "x"\nfs = "ext4"\ncolour = "blue"\n' >"$IN/bad-conf.toml"
printf '[[test]]\nname = "x"\nworkload = "fio"\nflavour = 1\n' >"$IN/bad-suite.toml"
printf '[j]\nrw=read\nno_such_option=1\n' >"$IN/bad.fio"
: >"$IN/empty.fio"

# ---------------------------------------------------------------------------------------------
# (a) the fixed store, made once by BEFORE_BIN.
make_store() { # FILE
    local db=$1 t="$WORK/store-target"
    mkdir -p "$t"
    echo "making the store with $BEFORE (quick suite twice at -n $REPEAT, a small suite on two configurations, an import)" >&2
    run_make() { (cd "$t" && "${ENV[@]}" "$BEFORE" "$@" --db "$db") >"$WORK/make.log" 2>&1 \
        || { cat "$WORK/make.log" >&2; die "making the store failed: fsdelta $*"; }; }
    run_make run --target "$t" -n "$REPEAT" --label base -q
    run_make run --target "$t" -n "$REPEAT" --label cur -q --events writeback:writeback_start
    run_make run --config "$IN/conf.toml" --suite "$IN/small.toml" -n 2 --label cfg -q \
        --profile=optional
    run_make import fio-json "$ROOT/tests/data/external/fio_randrw.json" --label imported
}

part_a() {
    echo "== (a) reads of one fixed store"
    if [ -n "${SAME_OUTPUT_STORE:-}" ]; then
        FIXED_STORE="$(realpath -m "$SAME_OUTPUT_STORE")"
        if [ -e "$FIXED_STORE" ]; then
            echo "(reusing the store $FIXED_STORE)"
        else
            make_store "$FIXED_STORE"
        fi
    else
        FIXED_STORE="$WORK/fixed.sqlite"
        make_store "$FIXED_STORE"
    fi
    local r=(--db "$STORE")
    check list exact none store -- list "${r[@]}"
    check list-limit exact none store -- list --limit 2 "${r[@]}"
    check list-label exact none store -- list --label base "${r[@]}"
    check list-label-none exact none store -- list --label nosuch "${r[@]}"
    check show-latest exact none store -- show latest "${r[@]}"
    check show-1 exact none store -- show 1 "${r[@]}"
    check show-label exact none store -- show label:cur "${r[@]}"
    check show-cfg-raw exact none store -- show label:cfg --raw "${r[@]}"
    check show-cfg-raw-test exact none store -- show label:cfg --output --test cmd --test tiny "${r[@]}"
    check show-base-raw exact none store -- show label:base --raw --test smallfiles "${r[@]}"
    check show-imported exact none store -- show label:imported "${r[@]}"
    check show-bad-sel exact none store -- show nosuch "${r[@]}"
    check show-missing-run exact none store -- show 999 "${r[@]}"
    local fmt
    for fmt in text markdown json; do
        check "compare-$fmt" exact none store -- compare label:base label:cur --format "$fmt" "${r[@]}"
        check "compare-$fmt-all" exact none store -- compare label:base label:cur --all --format "$fmt" "${r[@]}"
        check "compare-$fmt-test" exact none store -- compare label:base label:cur --test smallfiles --test randread --format "$fmt" "${r[@]}"
        check "compare-$fmt-config" exact none store -- compare label:cfg@ram label:cfg@here --format "$fmt" "${r[@]}"
        check "compare-$fmt-three" exact none store -- compare 1 2 label:cur --format "$fmt" "${r[@]}"
    done
    check compare-latest exact none store -- compare latest~1 latest "${r[@]}"
    check compare-latest-n exact none store -- compare latest~3 latest~2 --test seqwrite "${r[@]}"
    check compare-cfg-filter exact none store -- compare label:cfg label:cfg --config ram "${r[@]}"
    check compare-metric exact none store -- compare label:base label:cur --metric files_per_sec --all "${r[@]}"
    check compare-gate-all exact none store -- compare label:base label:cur --gate all --eps 1 --delta 3 --delta-tail 7 --delta-max 15 "${r[@]}"
    check compare-bisect exact none store -- compare label:base label:cur --bisect --metric files_per_sec "${r[@]}"
    check compare-profile exact none store -- compare label:cfg@ram label:cfg@here --profile "${r[@]}"
    check compare-pool-hosts exact none store -- compare label:base label:cur --pool-hosts --test dbench "${r[@]}"
    check compare-imported exact none store -- compare label:imported label:imported "${r[@]}"
    check compare-bad-sel exact none store -- compare label:nosuch latest "${r[@]}"
    check compare-bad-config exact none store -- compare latest@nosuch latest "${r[@]}"
    check history exact none store -- history --test smallfiles --metric files_per_sec "${r[@]}"
    check history-json exact none store -- history --test randread --metric read_iops --format json "${r[@]}"
    check history-glob exact none store -- history --test seqwrite --metric write_bw_bytes --label-glob 'b*' "${r[@]}"
    check history-config exact none store -- history --test tiny --metric files_per_sec --config here "${r[@]}"
    check history-needs-config exact none store -- history --test tiny --metric files_per_sec "${r[@]}"
    check history-bad-metric exact none store -- history --test smallfiles --metric nosuch "${r[@]}"
    check export-json exact none store -- export latest "${r[@]}"
    check export-csv exact none store -- export label:base --format csv "${r[@]}"
    check export-cfg-json exact none store -- export label:cfg --format json "${r[@]}"
    check export-file exact content store -- export 2 --format csv -o x.csv "${r[@]}"
    check report-two exact content store -- report label:base label:cur -o x.html "${r[@]}"
    check report-one exact content store -- report latest -o y.html "${r[@]}"
    check report-cfg exact content store -- report label:cfg@ram label:cfg@here -o z.html "${r[@]}"
    check report-filtered exact content store -- report label:base label:cur --test smallfiles --metric files_per_sec --all -o f.html "${r[@]}"
    check report-imported exact content store -- report label:imported -o i.html "${r[@]}"
    check report-bad-sel exact content store -- report label:nosuch -o n.html "${r[@]}"
    local t
    for t in cmd tiny rr; do
        check "profile-$t" exact none store -- profile label:cfg --test "$t" "${r[@]}"
    done
    check profile-config exact content store -- profile label:cfg --test tiny --config ram --limit 5 --flamegraph fg.svg "${r[@]}"
    check profile-none exact none store -- profile label:base --test smallfiles "${r[@]}"
    check sync exact names store -- sync --from "$STORE" --to copy.sqlite
    check jobs-sqlite exact none store -- jobs "${r[@]}"
    check missing-store exact none none -- list --db "$WORK/no/such/dir/x.sqlite"
    # The harness's own checks: the store holds what the cases expect.
    local c
    for c in list show-latest show-cfg-raw compare-text-config compare-json-three history \
        history-config export-json export-csv report-two report-cfg sync; do
        expect "$c" 0
    done
    # Profiles are in the store when perf could record them (run --profile=optional).
    if command -v perf >/dev/null; then expect profile-tiny 0; fi
    expect compare-text 0 1
    expect show-bad-sel 2
}

# ---------------------------------------------------------------------------------------------
# (b) the fio job file set.
part_b() {
    echo "== (b) fio job files"
    local files=() f n
    while IFS= read -r f; do files+=("$f"); done < <(find "$ROOT/tests/data" -name '*.fio' | LC_ALL=C sort)
    local local_files=${#files[@]}
    if [ -d "$FIO_EXAMPLES" ]; then
        while IFS= read -r f; do files+=("$f"); done < <(find "$FIO_EXAMPLES" -name '*.fio' | LC_ALL=C sort)
    else
        echo "(no $FIO_EXAMPLES: only tests/data's $local_files job files; apt-get install fio-examples)"
    fi
    echo "(${#files[@]} job files)"
    for f in "${files[@]}"; do
        n="$(basename "$(dirname "$f")")-$(basename "$f" .fio)"
        # The job files are read where they are (include= is relative to them).
        check "fio-parse-$n" exact none none -- fio --parse-only "$f"
        check "fio-showcmd-$n" exact none none -- fio --showcmd "$f"
        check "fio-readonly-$n" exact none none -- fio --readonly --parse-only "$f"
        # tests/data's files are all accepted; fio's examples may be refused (other engines).
        case "$f" in "$ROOT"/*) expect "fio-parse-$n" 0; expect "fio-showcmd-$n" 0 ;; esac
    done
    local ok=0
    for f in "$OUT"/before/fio-parse-*.rc; do grep -q '^exit 0$' "$f" && ok=$((ok + 1)); done
    echo "(--parse-only accepts $ok of ${#files[@]} job files)"
    check fio-showcmd-all exact none none -- fio --showcmd "${files[@]:0:$local_files}"
    check fio-parse-section exact none none -- fio --parse-only --section=randrw "$ROOT/tests/data/fio/randrw.fio"
    check fio-parse-cmdline-defaults exact none none -- fio --parse-only --size=1m --runtime=1 "$ROOT/tests/data/fio/randrw.fio"
    # Real runs of the small job files: counts and sizes are fixed, times are masked.
    for f in "${files[@]:0:$local_files}"; do
        n="$(basename "$(dirname "$f")")-$(basename "$f" .fio)"
        cp "$f" "$IN/$n.fio"
        check "fio-run-json-$n" mask names none -- fio --output-format=json "$IN/$n.fio"
        check "fio-run-terse-$n" mask names none -- fio --minimal "$IN/$n.fio"
        expect "fio-run-json-$n" 0
        expect "fio-run-terse-$n" 0
    done
    check fio-run-jsonplus jsonplus names none -- fio --output-format=json+ "$IN/fio-jn.fio"
    check fio-run-terse-v5 mask names none -- fio --minimal --terse-version=5 "$IN/fio-jn.fio"
    # Jobs whose every count is fixed: the counts exactly, the rest masked.
    local null=(--name=nul --ioengine=null --rw=randrw --bs=4k --size=64m --randrepeat=1)
    local ps=(--name=ps --ioengine=psync --rw=randwrite --bs=4k --size=4m --fsync=16 --filename=ps.dat)
    check fio-null-json mask none none -- fio "${null[@]}" --output-format=json
    check fio-null-normal normal none none -- fio "${null[@]}"
    check fio-psync-json mask names none -- fio "${ps[@]}" --output-format=json
    check fio-psync-normal normal names none -- fio "${ps[@]}"
    check fio-run-normal-randrw normal names none -- fio "$IN/fio-randrw.fio"
    check fio-run-normal-json-jn normal names none -- fio --output-format=json,normal "$IN/fio-jn.fio"
    check fio-null-timed timed none none -- fio "${null[@]}" --time_based --runtime=1
    check fio-null-timed-json mask none none -- fio "${null[@]}" --time_based --runtime=1 --output-format=json
    expect fio-run-jsonplus 0
    expect fio-run-terse-v5 0
    expect fio-run-normal-randrw 0
    expect fio-run-normal-json-jn 0
    expect fio-null-timed 0
    expect fio-null-json 0
    expect fio-psync-normal 0
    local side
    for side in before after; do
        for n in fio-null-json fio-psync-json; do
            jq -S '{"global options", jobs: [.jobs[] | {jobname, groupid, error, "job options",
                    read: (.read | {io_bytes, total_ios, short_ios, drop_ios}),
                    write: (.write | {io_bytes, total_ios, short_ios, drop_ios}),
                    sync: (.sync | {total_ios})}]}' "$OUT/$side/$n.out" >"$OUT/$side/$n-counts.json" \
                || die "$side/$n.out is not fio JSON"
        done
    done
    for n in fio-null-json fio-psync-json; do
        CASES=$((CASES + 1))
        if cmp -s "$OUT/before/$n-counts.json" "$OUT/after/$n-counts.json"; then
            echo "same: $n-counts (exact)"
        else
            FAILED+=("$n-counts")
            echo "DIFFERENT: $n-counts (exact)"
            diff -u "$OUT/before/$n-counts.json" "$OUT/after/$n-counts.json" | head -n 60 || true
        fi
    done
    check fio-bad-option exact none none -- fio --parse-only "$IN/bad.fio"
    check fio-empty-file exact none none -- fio --parse-only "$IN/empty.fio"
    check fio-missing-file exact none none -- fio --parse-only "$IN/no-such.fio"
    check fio-no-job exact none none -- fio
    check fio-bad-format exact none none -- fio --output-format=xml "$IN/fio-jn.fio"
    check fio-bad-terse exact none none -- fio --terse-version=9 "$IN/fio-jn.fio"
    check fio-bad-eta exact none none -- fio --eta=sometimes "$IN/fio-jn.fio"
    check fio-bad-interval exact none none -- fio --status-interval=1us "$IN/fio-jn.fio"
    check fio-bad-flag exact none none -- fio -x "$IN/fio-jn.fio"
    check fio-bad-section exact none none -- fio --parse-only --section=nosuch "$IN/fio-jn.fio"
    check fio-cmdhelp exact none none -- fio --cmdhelp
    check fio-enghelp exact none none -- fio --enghelp
    check fio-readonly-write exact none none -- fio --readonly --name=w --rw=write --size=1m
    check fio-bad-value exact none none -- fio --parse-only --name=j --bs=4q
    check fio-negative exact none none -- fio --parse-only --name=j --size=-1
    expect fio-bad-option 2
    expect fio-missing-file 2
}

# ---------------------------------------------------------------------------------------------
# (c) the quick suite, help texts, the engines' usage, errors.
part_c() {
    echo "== (c) the quick suite, help, usage, errors"
    local r=(--db "$RUNDB") sub subs=() nested
    # The quick suite into a new store at one path per side (the scratch directory's name holds
    # the pid: masked with the other digits).
    rm -f "$RUNDB"*
    run_side before quick-run run none none -- run -n "$RUN_REPEAT" --label q "${r[@]}"
    local before_list; before_list="$(cd "$WORK" && "${ENV[@]}" "$BEFORE" list --db "$RUNDB")"
    rm -f "$RUNDB"*
    run_side after quick-run run none none -- run -n "$RUN_REPEAT" --label q "${r[@]}"
    CASES=$((CASES + 1))
    local k diffs=""
    for k in out err rc; do
        cmp -s <(filter run <"$OUT/before/quick-run.$k") <(filter run <"$OUT/after/quick-run.$k") || diffs+=" $k"
    done
    if ! cmp -s <(filter mask <<<"$before_list") \
        <(cd "$WORK" && "${ENV[@]}" "$AFTER" list --db "$RUNDB" | filter mask); then
        diffs+=" list"
    fi
    if [ -n "$diffs" ]; then
        FAILED+=(quick-run)
        echo "DIFFERENT: quick-run (run):$diffs"
        for k in out err rc; do
            diff -u --label "before/quick-run.$k" --label "after/quick-run.$k" \
                <(filter run <"$OUT/before/quick-run.$k") <(filter run <"$OUT/after/quick-run.$k") | head -n 80 || true
        done
    else
        echo "same: quick-run (run, $(cat "$OUT/before/quick-run.rc"))"
    fi
    rm -f "$RUNDB"*

    # Every subcommand's help, as BEFORE_BIN lists them (a command AFTER_BIN lost is a diff).
    while read -r sub; do subs+=("$sub"); done < <("${ENV[@]}" "$BEFORE" --help \
        | awk '/^Commands:/ {on=1; next} /^$/ {on=0} on && /^  [a-z]/ {print $1}')
    [ ${#subs[@]} -gt 10 ] || die "could not read the subcommands from $BEFORE --help"
    check help exact none none -- --help
    check help-short exact none none -- -h
    check version exact none none -- --version
    check no-args exact none none --
    check unknown-command exact none none -- nosuch
    for sub in "${subs[@]}" guest-run; do
        case "$sub" in
            fsmark | dbench | fio) check "help-$sub" exact none none -- "$sub" --help ;;
            help) ;;
            *)
                check "help-$sub" exact none none -- "$sub" --help
                check "help-$sub-short" exact none none -- "$sub" -h
                check "help-cmd-$sub" exact none none -- help "$sub"
                while read -r nested; do
                    check "help-$sub-$nested" exact none none -- "$sub" "$nested" --help
                done < <("${ENV[@]}" "$BEFORE" "$sub" --help \
                    | awk '/^Commands:/ {on=1; next} /^$/ {on=0} on && /^  [a-z]/ && $1 != "help" {print $1}')
                ;;
        esac
    done
    for sub in bash zsh fish elvish powershell; do
        check "completions-$sub" exact none none -- completions "$sub"
    done
    check man exact none none -- man
    check fsmark-h exact none none -- fsmark -h
    check fsmark-no-args exact none none -- fsmark
    check fsmark-bad-flag exact none none -- fsmark -d d -n abc
    check fsmark-bad-size exact none none -- fsmark -d d -s -5 -n 10
    check fsmark-run run count none -- fsmark -d fm -s 1024 -n 50 -t 2 -S 1 -L 2
    check fsmark-run-json json count none -- fsmark -d fm -s 0 -n 50 -t 1 -S 0 --json -k
    expect fsmark-run 0
    expect fsmark-run-json 0
    check dbench-run run names none -- dbench -D . -t 3 1
    expect dbench-run 0
    check dbench-h exact none none -- dbench -h
    check dbench-no-args exact none none -- dbench
    check dbench-bad-time exact none none -- dbench -t x 1
    check dbench-missing-loadfile exact none none -- dbench -c "$IN/no-such.txt" -t 1 1
    check fio-help exact none none -- fio --help
    check fio-h exact none none -- fio -h
    check kernels exact none none -- kernels
    check cleanup exact none none -- cleanup
    # Bad input to run: refused before anything is measured.
    check run-bad-suite exact none none -- run --suite nosuch "${r[@]}"
    check run-missing-suite exact none none -- run --suite "$IN/no-such.toml" "${r[@]}"
    check run-bad-suite-file exact none none -- run --suite "$IN/bad-suite.toml" "${r[@]}"
    check run-missing-config exact none none -- run --config "$IN/no-such.toml" "${r[@]}"
    check run-bad-config exact none none -- run --config "$IN/bad-conf.toml" "${r[@]}"
    check run-bad-test exact none none -- run --test nosuch "${r[@]}"
    check run-bad-scale exact none none -- run --suite fsperf --scale 2 "${r[@]}"
    check run-bad-repeat exact none none -- run -n x "${r[@]}"
    check run-bad-max-repeat exact none none -- run --until-confident --max-repeat 0 "${r[@]}"
    check run-bad-events exact none none -- run --events nosuch:event "${r[@]}"
    check run-bad-profile exact none none -- run --profile=sometimes "${r[@]}"
    check run-bad-engine exact none none -- run --engine foreign "${r[@]}"
    check import-missing exact none none -- import fio-json "$IN/no-such.json" --label x "${r[@]}"
    check import-not-json exact none none -- import fio-json "$IN/bad.fio" --label x "${r[@]}"
    check export-bad-format exact none none -- export latest --format xml "${r[@]}"
    check compare-one-side exact none none -- compare latest "${r[@]}"
    check history-no-metric exact none none -- history --test smallfiles "${r[@]}"
    check report-no-output exact none none -- report latest "${r[@]}"
    rm -f "$RUNDB"*
}

echo "same-output: before $BEFORE"
echo "same-output: after  $AFTER"
for p in $PARTS; do
    case "$p" in
        a) part_a ;;
        b) part_b ;;
        c) part_c ;;
        *) die "unknown part $p (a, b, c)" ;;
    esac
done
echo
if [ ${#WROTE[@]} -gt 0 ]; then
    echo "same-output: these read cases changed the store (out/*/CASE.rc): $(printf '%s\n' "${WROTE[@]}" | sort -u | tr '\n' ' ')"
fi
if [ ${#FAILED[@]} -gt 0 ]; then
    echo "same-output: ${#FAILED[@]} of $CASES cases DIFFER: ${FAILED[*]}"
    exit 1
fi
echo "same-output: all $CASES cases the same"
