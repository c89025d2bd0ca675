#!/usr/bin/env bash
# stress-tests.sh: the test suite under CPU and I/O load (issue 33: a test that fails because
# the machine is busy is a defect). Starts
#   stress-ng --cpu 2 --io 2 --hdd 1 --hdd-bytes 256M --temp-path DIR
# (DIR a fresh temporary directory, removed at the end), runs `cargo test ARGS` under it ROUNDS
# times, and prints per round the `test result:` line of every test binary and the tests that
# failed. stress-ng is stopped whatever happens: at the end, on a failure of this script and on
# Ctrl-C. The tests are built before the load starts, so the load falls on the tests alone.
#
# Usage: benches/stress-tests.sh [--rounds N] [--dir PARENT] [--keep-logs] [CARGO TEST ARGS...]
#   --rounds N    rounds (default 2)
#   --dir PARENT  where the stress directory is made (default: $TMPDIR or /var/tmp, the disk
#                 the tests write to)
#   --keep-logs   keep each round's full `cargo test` output (printed path); by default they
#                 are kept only when a round failed
#   everything else goes to `cargo test` as it is, e.g.
#   benches/stress-tests.sh --test fio_histlog --test verdicts_cli
#   benches/stress-tests.sh --rounds 1 --lib store::journal -- --test-threads 1
# Exit status: 0 when every round passed, 1 when a round failed, 2 on a usage or setup error.
# Environment: as for `cargo test` (FSDELTA_REQUIRE_ALL, FSDELTA_TEST_PG, ...: see .ci/run).
set -euo pipefail

ROUNDS=2
PARENT="${TMPDIR:-/var/tmp}"
KEEP=0
ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds)
            [ $# -ge 2 ] || { echo "stress-tests.sh: --rounds needs a number" >&2; exit 2; }
            ROUNDS="$2"; shift 2 ;;
        --dir)
            [ $# -ge 2 ] || { echo "stress-tests.sh: --dir needs a directory" >&2; exit 2; }
            PARENT="$2"; shift 2 ;;
        --keep-logs) KEEP=1; shift ;;
        --) ARGS+=("$@"); break ;;
        *) ARGS+=("$1"); shift ;;
    esac
done
case "$ROUNDS" in
    '' | *[!0-9]* | 0)
        echo "stress-tests.sh: --rounds takes a whole number of 1 or more, not '$ROUNDS'" >&2
        exit 2 ;;
esac
if ! command -v stress-ng >/dev/null; then
    echo "stress-tests.sh: stress-ng is not installed (Debian: apt-get install stress-ng)" >&2
    exit 2
fi
if [ ! -d "$PARENT" ]; then
    echo "stress-tests.sh: --dir $PARENT is not a directory; name an existing one" >&2
    exit 2
fi
cd "$(dirname "$0")/.."

# The arguments before `--` are cargo's (they choose the tests to build); the rest go to the
# test binaries.
# --no-fail-fast: every binary runs, so a round lists all its failures, not the first.
ARGS=(--no-fail-fast "${ARGS[@]+"${ARGS[@]}"}")
CARGO_ARGS=()
for a in "${ARGS[@]+"${ARGS[@]}"}"; do
    [ "$a" = "--" ] && break
    CARGO_ARGS+=("$a")
done

STRESS_DIR=""
LOG_DIR=""
STRESS_PGID=""
stop_stress() {
    if [ -n "$STRESS_PGID" ]; then
        # stress-ng runs in a process group of its own: its workers go with it.
        kill -TERM -- "-$STRESS_PGID" 2>/dev/null || true
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 -- "-$STRESS_PGID" 2>/dev/null || break
            sleep 0.5
        done
        kill -KILL -- "-$STRESS_PGID" 2>/dev/null || true
        wait "$STRESS_PID" 2>/dev/null || true
        STRESS_PGID=""
    fi
    if [ -n "$STRESS_DIR" ]; then
        rm -rf -- "$STRESS_DIR"
        STRESS_DIR=""
    fi
}
trap stop_stress EXIT
trap 'echo "stress-tests.sh: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM

LOG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/fsdelta-stress-logs.XXXXXX")
echo "== building the tests (no load yet): cargo test --no-run ${CARGO_ARGS[*]-}"
if ! cargo test --no-run "${CARGO_ARGS[@]+"${CARGO_ARGS[@]}"}" >"$LOG_DIR/build.log" 2>&1; then
    tail -n 30 "$LOG_DIR/build.log" >&2
    echo "stress-tests.sh: the tests do not build (above; all of it in $LOG_DIR/build.log)" >&2
    exit 2
fi

STRESS_DIR=$(mktemp -d "$PARENT/fsdelta-stress.XXXXXX")
setsid stress-ng --cpu 2 --io 2 --hdd 1 --hdd-bytes 256M --temp-path "$STRESS_DIR" \
    --quiet >"$LOG_DIR/stress-ng.log" 2>&1 &
STRESS_PID=$!
sleep 1
STRESS_PGID=$(ps -o pgid= -p "$STRESS_PID" | tr -d ' ')
if [ -z "$STRESS_PGID" ] || ! kill -0 "$STRESS_PID" 2>/dev/null; then
    echo "stress-tests.sh: stress-ng did not start:" >&2
    cat "$LOG_DIR/stress-ng.log" >&2
    exit 2
fi
echo "== stress-ng running (process group $STRESS_PGID, files in $STRESS_DIR)"

failed_rounds=0
for round in $(seq 1 "$ROUNDS"); do
    log="$LOG_DIR/round-$round.log"
    echo "== round $round of $ROUNDS ($(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg)): cargo test ${ARGS[*]-}"
    start=$SECONDS
    rc=0
    cargo test "${ARGS[@]+"${ARGS[@]}"}" >"$log" 2>&1 || rc=$?
    # Each binary's name and its result line.
    awk '/^ *Running /{bin = ($2 == "unittests") ? $3 : $2} /^ *Doc-tests /{bin="doc-tests " $2}
         /^test result:/{printf "  %-40s %s\n", bin, $0}' "$log"
    # The failed tests (cargo prints `---- NAME stdout ----` for each), each with the first
    # lines of what it printed.
    fails=$(sed -n 's/^---- \(.*\) stdout ----$/\1/p' "$log" | sort -u)
    if [ "$rc" -ne 0 ]; then
        failed_rounds=$((failed_rounds + 1))
        echo "  FAILED round $round (cargo test exit $rc, $((SECONDS - start)) s):"
        if [ -n "$fails" ]; then
            while IFS= read -r t; do
                echo "    $t"
                # Where it panicked and the last lines of its message (an assertion's
                # message often starts with a long job text).
                awk -v t="---- $t stdout ----" '
                    $0 == t { p = 1; n = 0; next }
                    p && /^(---- |failures:$|stack backtrace:|note: )/ { p = 0 }
                    p && /panicked at/ { print "      " substr($0, 1, 200); next }
                    p && NF { m[++n] = $0 }
                    END { for (i = (n > 3 ? n - 2 : 1); i <= n; i++) print "      " substr(m[i], 1, 200) }' "$log"
            done <<<"$fails"
        else
            # A build or harness error: no test named.
            grep -E '^(error|thread .* panicked)' "$log" | head -n 10 | sed 's/^/    /'
        fi
        echo "  full output: $log"
    else
        echo "  ok round $round ($((SECONDS - start)) s)"
        [ "$KEEP" = 1 ] && echo "  full output: $log" || rm -f -- "$log"
    fi
done

stop_stress
if [ "$failed_rounds" -gt 0 ]; then
    echo "== $failed_rounds of $ROUNDS rounds failed under load (logs in $LOG_DIR)"
    exit 1
fi
[ "$KEEP" = 1 ] || rm -rf -- "$LOG_DIR"
echo "== all $ROUNDS rounds passed under load"
