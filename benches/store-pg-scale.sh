#!/usr/bin/env bash
# Scale benchmark of the PostgreSQL store and the fleet queue.
#
# Fills a scratch database with RUNS runs x TESTS tests x REPS repetitions x METRICS metrics
# (default 1,000 x 10 x 10 x 100 = 10 million metric rows, 100,000 samples), then times
# `fsdelta list`, `fsdelta compare` (two labels of 20 runs each) and `fsdelta history` (one
# metric over every run), and one agent's claim-run-store cycle overhead: JOBS jobs of a
# workload that does nothing (`true`), run by one agent; overhead = wall time per job minus the
# stored sample time. The goals (issue 15): each query under 1 s, the cycle under 50 ms.
#
# Usage: benches/store-pg-scale.sh [ADMIN_URL]   (default: $FSDELTA_TEST_PG)
#   FSDELTA_BIN=target/release/fsdelta RUNS=1000 TESTS=10 REPS=10 METRICS=100 JOBS=20
#   KEEP_DB=NAME fills database NAME (created if missing, refused if it has runs) and keeps it,
#   to load or profile a command on it (benches/serve-load.sh); the agent cycle is left out.
# Needs psql (Debian postgresql-client). The scratch database is dropped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

ADMIN=${1:-${FSDELTA_TEST_PG:?give an administrator URL, e.g. postgres://postgres@%2Ftmp%2Fpg/postgres}}
B=${FSDELTA_BIN:-target/release/fsdelta}
RUNS=${RUNS:-1000}
TESTS=${TESTS:-10}
REPS=${REPS:-10}
METRICS=${METRICS:-100}
JOBS=${JOBS:-20}
[ -x "$B" ] || { echo "build first: cargo build --release (or set FSDELTA_BIN)" >&2; exit 2; }

DB=${KEEP_DB:-fsdelta_bench_$$}
BASE=${ADMIN%%\?*}
URL="${BASE%/*}/$DB"
WORK=$(mktemp -d)
if [ -n "${KEEP_DB:-}" ]; then
    [ -n "$(psql -qXtA "$ADMIN" -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" ] ||
        psql -qX "$ADMIN" -c "CREATE DATABASE $DB" >/dev/null
    trap 'rm -rf "$WORK"' EXIT
else
    psql -qX "$ADMIN" -c "CREATE DATABASE $DB" >/dev/null
    trap 'psql -qX "$ADMIN" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null; rm -rf "$WORK"' EXIT
fi
export FSDELTA_DB="$URL" FSDELTA_STATE_FILE="$WORK/state.json"

secs() { date +%s.%N; }
timed() { # label, command...
    local t0 t1
    t0=$(secs)
    "${@:2}" >/dev/null || true # compare exits 1 on a regression
    t1=$(secs)
    printf '%-10s %8.3f s\n' "$1" "$(echo "$t1 - $t0" | bc)"
}

"$B" cleanup >/dev/null # a writing command creates the schema (read-only ones never do)
if [ -n "${KEEP_DB:-}" ] && [ "$(psql -qXtA "$URL" -c 'SELECT count(*) FROM runs')" != 0 ]; then
    echo "database $DB already has runs: drop it or name another" >&2; exit 2
fi
t0=$(secs)
psql -qX "$URL" >/dev/null <<SQL
INSERT INTO runs (label, suite, started_at, finished_at, status, host, kernel, fsdelta_version, environment)
SELECT 'v' || (g % 50), 'bench', now() - (($RUNS - g) || ' minutes')::interval,
       now() - (($RUNS - g) || ' minutes')::interval + interval '50 seconds',
       'complete', 'box' || (g % 50 % 4), '6.18.0', '0.1.0',
       json_build_object('host', 'box' || (g % 50 % 4), 'kernel_release', '6.18.0',
           'kernel_version', '', 'cmdline', '', 'cpu_model', 'bench', 'cores', 2,
           'memory_bytes', 1073741824)::text
FROM generate_series(1, $RUNS) g;
INSERT INTO samples (run_id, config, test, repetition, fs_type, path, device, mount_options,
                     facts, status, started_at, duration_s, workload, sequence)
SELECT r.id, 'scratch', 't' || t, rep, 'ext4', '/x', '/dev/x', 'rw', '{}', 'ok',
       r.started_at, 1.0, 'bench', t * $REPS + rep
FROM runs r, generate_series(0, $TESTS - 1) t, generate_series(1, $REPS) rep
ORDER BY r.id, t, rep;
INSERT INTO metrics (sample_id, position, name, value, unit, direction, kind, headline)
SELECT s.id, m, 'm' || m, 1000 + 50 * random(), 'ops/s', 'higher_is_better', 'throughput', m = 0
FROM samples s, generate_series(0, $METRICS - 1) m
ORDER BY s.id, m; -- as fsdelta writes them: a sample's metrics in one statement, side by side
ANALYZE;
SQL
t1=$(secs)
rows=$(psql -qXtA "$URL" -c "SELECT count(*) FROM metrics")
printf 'filled %s metric rows (%s runs) in %.0f s\n' "$rows" "$RUNS" "$(echo "$t1 - $t0" | bc)"

timed list "$B" list --limit 20
timed compare "$B" compare label:v1 label:v2
timed history "$B" history --test t0 --metric m0

if [ -n "${KEEP_DB:-}" ]; then
    echo "kept: $URL (agent cycle left out)"; exit 0
fi

# One agent's cycle: JOBS jobs of a workload that does nothing.
cat > "$WORK/noop.toml" <<'TOML'
name = "noop"
[[test]]
name = "true"
workload = "command"
command = "true"
TOML
for _ in $(seq "$JOBS"); do
    "$B" submit --suite "$WORK/noop.toml" --label noop -n 1 >/dev/null 2>&1
done
t0=$(secs)
"$B" agent --quiet --no-drop-caches --max-jobs "$JOBS" --target "$WORK" 2>/dev/null
t1=$(secs)
work=$(psql -qXtA "$URL" -c "SELECT sum(s.duration_s) FROM samples s JOIN runs r ON r.id = s.run_id WHERE r.label = 'noop'")
done_jobs=$(psql -qXtA "$URL" -c "SELECT count(*) FROM jobs WHERE state = 'done'")
printf 'agent      %d jobs in %.3f s (workload %.3f s): %.1f ms overhead per job\n' \
    "$done_jobs" "$(echo "$t1 - $t0" | bc)" "$work" \
    "$(echo "($t1 - $t0 - $work) * 1000 / $done_jobs" | bc -l)"
