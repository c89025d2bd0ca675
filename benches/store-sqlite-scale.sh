#!/usr/bin/env bash
# Scale benchmark of the embedded SQLite store (issue 17 item 5).
#
# Builds a store of RUNS runs x TESTS tests x REPS repetitions (default 1,000 x 12 x 5 = 60,000
# samples) from one real seed run: a tiny fio job (metrics and latency histograms, as fio tests
# store them) and a tiny fs_mark job, measured by this fsdelta on a scratch directory. Every
# stored sample is a copy of one of the two seed samples with its metric values scaled by a
# deterministic factor (no randomness: the same store on every machine), so rows have the real
# shapes, units and histogram layouts. Then prints the wall time and peak resident memory
# (GNU time's %M) of `list`, `show`, `compare`, `history`, `report` and `export`.
# Goal (issue 17): each under 0.5 s and 100 MB, growing with the runs selected, not the store.
#
# Usage: benches/store-sqlite-scale.sh        (FSDELTA_BIN=target/release/fsdelta RUNS TESTS REPS;
#        KEEP_WORK=DIR builds the store in DIR and keeps it, to profile a command on it)
# Needs sqlite3 (Debian package sqlite3) and GNU time (/usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."

B=${FSDELTA_BIN:-target/release/fsdelta}
RUNS=${RUNS:-1000}
TESTS=${TESTS:-12}
REPS=${REPS:-5}
[ -x "$B" ] || { echo "build first: cargo build --release (or set FSDELTA_BIN)" >&2; exit 2; }
command -v sqlite3 >/dev/null || { echo "needs sqlite3: apt-get install sqlite3" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs GNU time: apt-get install time" >&2; exit 2; }

WORK=${KEEP_WORK:-$(mktemp -d)}; mkdir -p "$WORK"
[ -n "${KEEP_WORK:-}" ] || trap 'rm -rf "$WORK"' EXIT
DB="$WORK/scale.sqlite"
export FSDELTA_STATE_FILE="$WORK/state.json"

cat > "$WORK/seed.toml" <<'TOML'
name = "seed"
[[test]]
name = "rr"
workload = "fio"
job = """
rw=randread
bs=4k
size=8m
"""
[[test]]
name = "files"
workload = "fsmark"
args = "-s 4096 -n 100 -t 1 -S 0"
TOML
mkdir -p "$WORK/scratch"
"$B" run --db "$DB" --suite "$WORK/seed.toml" -n 1 --label seed --target "$WORK/scratch" \
    --no-drop-caches >/dev/null 2>"$WORK/seed.log" || { cat "$WORK/seed.log" >&2; exit 1; }

t0=$(date +%s.%N)
sqlite3 "$DB" >/dev/null <<SQL
PRAGMA journal_mode = WAL;
PRAGMA synchronous = OFF;
BEGIN;
CREATE TEMP TABLE seed AS
    SELECT id, ROW_NUMBER() OVER (ORDER BY id) - 1 AS k FROM samples WHERE run_id = 1;
CREATE TEMP TABLE g AS
    WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < $RUNS) SELECT n FROM c;
INSERT INTO runs (label, suite, started_at, finished_at, status, host, kernel, fsdelta_version,
                  environment, uuid)
SELECT 'v' || (n % 50), r.suite,
       strftime('%Y-%m-%dT%H:%M:%SZ', '2026-01-01', '+' || n || ' hours'),
       strftime('%Y-%m-%dT%H:%M:%SZ', '2026-01-01', '+' || n || ' hours', '+50 seconds'),
       'complete', r.host, r.kernel, r.fsdelta_version, r.environment,
       printf('00000000-0000-4000-8000-%012d', n)
FROM g, runs r WHERE r.id = 1;
CREATE TEMP TABLE m (new_id INTEGER PRIMARY KEY, seed_id INTEGER, f REAL);
WITH RECURSIVE t(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM t WHERE i < $TESTS - 1),
     rep(j) AS (SELECT 1 UNION ALL SELECT j + 1 FROM rep WHERE j < $REPS)
INSERT INTO samples (run_id, config, test, repetition, fs_type, path, device, mount_options,
                     mkfs_options, facts, status, error, started_at, duration_s, workload, sequence)
SELECT r.id, s.config, s.test || t.i, rep.j, s.fs_type, s.path, s.device, s.mount_options,
       s.mkfs_options, s.facts, s.status, s.error, r.started_at, s.duration_s, s.workload,
       t.i * $REPS + rep.j
FROM runs r, t, rep, seed, samples s
WHERE r.id > 1 AND seed.k = t.i % 2 AND s.id = seed.id
ORDER BY r.id, t.i, rep.j;
INSERT INTO m (new_id, seed_id, f)
SELECT s.id, x.id, 1.0 + ((s.id * 2654435761) % 1000) / 20000.0
FROM samples s JOIN samples x ON x.run_id = 1 AND s.test GLOB x.test || '[0-9]*'
WHERE s.run_id > 1;
INSERT INTO metrics (sample_id, name, value, unit, direction, kind, headline)
SELECT m.new_id, x.name, x.value * m.f, x.unit, x.direction, x.kind, x.headline
FROM m JOIN metrics x ON x.sample_id = m.seed_id;
INSERT INTO histograms (sample_id, name, unit, layout, count, min, max, sum, buckets)
SELECT m.new_id, h.name, h.unit, h.layout, h.count, h.min, h.max, h.sum, h.buckets
FROM m JOIN histograms h ON h.sample_id = m.seed_id;
COMMIT;
ANALYZE;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
t1=$(date +%s.%N)
# Schema 8 keeps each run's medians in run_medians, written with every sample by fsdelta; the
# rows copied above by SQL have none. Let fsdelta's own migration compute them: drop the
# table, mark the file schema 7 and open it with a writing command (this also measures the
# upgrade of a store of this size).
if [ "$(sqlite3 "$DB" 'PRAGMA user_version')" -ge 8 ]; then
    sqlite3 "$DB" 'DROP TABLE run_medians; DROP TABLE IF EXISTS alerts; PRAGMA user_version = 7;'
    /usr/bin/time -f '%e %M' -o "$WORK/time" env FSDELTA_DB="$DB" "$B" cleanup >/dev/null 2>"$WORK/err" ||
        { cat "$WORK/err" >&2; exit 1; }
    read -r secs kb < "$WORK/time"
    printf 'upgrade to schema 8 (medians of every stored run): %s s, %s MB\n' \
        "$secs" "$(( kb / 1024 ))"
fi
read -r runs samples metrics hists < <(sqlite3 -separator ' ' "$DB" \
    "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM samples),
            (SELECT count(*) FROM metrics), (SELECT count(*) FROM histograms)")
printf 'store: %s runs, %s samples, %s metric rows, %s histograms, %s MB (filled in %.0f s)\n' \
    "$runs" "$samples" "$metrics" "$hists" "$(( $(stat -c %s "$DB") / 1000000 ))" \
    "$(echo "$t1 - $t0" | bc)"

measure() { # label, command...
    /usr/bin/time -f '%e %M' -o "$WORK/time" "${@:2}" >/dev/null 2>"$WORK/err" || true
    read -r secs kb < <(tail -n 1 "$WORK/time") # GNU time adds a line when the command fails
    printf '%-9s %6.2f s %6.1f MB   %s\n' "$1" "$secs" "$(echo "$kb / 1024" | bc -l)" "${*:2}"
}
export FSDELTA_DB="$DB"
echo "command    time   peak RSS   (release build; goal: each under 0.5 s and 100 MB)"
measure list "$B" list
measure show "$B" show latest
measure compare "$B" compare label:v1 label:v2
measure history "$B" history --test files1 --metric files_per_sec
measure report "$B" report latest~1 latest -o "$WORK/r.html"
measure export "$B" export latest --format json -o "$WORK/x.json"
