#!/usr/bin/env bash
# Load benchmark of `fsdelta serve` (issue 40): CLIENTS concurrent clients for SECONDS seconds
# on loopback over the dashboard's pages (home, a history, the alerts inbox, an alert, a
# compare, a run, runs, machines, jobs), against a store of the scale benchmarks. Prints per
# page and overall: requests, errors (any status but 200, or a failed connection), p50, p95
# and p99 latency; and the server's resident memory (VmRSS) at start, peak and end.
# Goal (issue 40): p95 under 150 ms, no errors, memory bounded.
#
# Usage: benches/serve-load.sh STORE [STORE...]
#   STORE is a SQLite file or a postgres:// URL, or one of:
#     sqlite-scale   build the 2.3-million-row SQLite store (benches/store-sqlite-scale.sh with
#                    KEEP_WORK) in a temporary directory first
#     pg-scale       fill a scratch PostgreSQL database as benches/store-pg-scale.sh does
#                    (RUNS x TESTS x REPS x METRICS, default 10 million metric rows) through
#                    $FSDELTA_TEST_PG, dropped at the end
#   FSDELTA_BIN=target/release/fsdelta CLIENTS=20 DURATION=30 (seconds)
#   SWEEP_WAIT=1800 (seconds the first alert sweep may take before the clock starts)
# Needs python3 (the load clients: threads of http.client, no package), psql for pg-scale.
# The server runs with a token (so the alert sweep runs once before the clock starts).
set -euo pipefail
cd "$(dirname "$0")/.."

B=${FSDELTA_BIN:-target/release/fsdelta}
CLIENTS=${CLIENTS:-20}
DURATION=${DURATION:-30}
[ -x "$B" ] || { echo "build first: cargo build --release (or set FSDELTA_BIN)" >&2; exit 2; }
[ $# -ge 1 ] || { sed -n 2,19p "$0" >&2; exit 2; }
command -v python3 >/dev/null || { echo "needs python3" >&2; exit 2; }

WORK=$(mktemp -d)
PGDB=""
SERVER=""
cleanup() {
    [ -z "$SERVER" ] || { kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; }
    [ -z "$PGDB" ] || psql -qX "$FSDELTA_TEST_PG" -c "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)" >/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
export FSDELTA_STATE_FILE="$WORK/state.json"
head -c 24 /dev/urandom | base64 > "$WORK/token"
chmod 600 "$WORK/token"

pg_scale() {
    local admin=${FSDELTA_TEST_PG:?pg-scale needs FSDELTA_TEST_PG (an administrator URL)}
    local runs=${RUNS:-1000} tests=${TESTS:-10} reps=${REPS:-10} metrics=${METRICS:-100}
    PGDB=fsdelta_serve_bench_$$
    local base=${admin%%\?*}
    local url="${base%/*}/$PGDB"
    psql -qX "$admin" -c "CREATE DATABASE $PGDB" >/dev/null
    FSDELTA_DB="$url" "$B" cleanup >/dev/null
    psql -qX "$url" >/dev/null <<SQL
INSERT INTO runs (label, suite, started_at, finished_at, status, host, kernel, fsdelta_version, environment)
SELECT 'v' || (g % 50), 'bench', now() - (($runs - g) || ' minutes')::interval,
       now() - (($runs - g) || ' minutes')::interval + interval '50 seconds',
       'complete', 'box' || (g % 50 % 4), '6.18.0', '0.1.0',
       json_build_object('host', 'box' || (g % 50 % 4), 'kernel_release', '6.18.0',
           'kernel_version', '', 'cmdline', '', 'cpu_model', 'bench', 'cores', 2,
           'memory_bytes', 1073741824)::text
FROM generate_series(1, $runs) g;
INSERT INTO samples (run_id, config, test, repetition, fs_type, path, device, mount_options,
                     facts, status, started_at, duration_s, workload, sequence)
SELECT r.id, 'scratch', 't' || t, rep, 'ext4', '/x', '/dev/x', 'rw', '{}', 'ok',
       r.started_at, 1.0, 'bench', t * $reps + rep
FROM runs r, generate_series(0, $tests - 1) t, generate_series(1, $reps) rep
ORDER BY r.id, t, rep;
INSERT INTO metrics (sample_id, position, name, value, unit, direction, kind, headline)
SELECT s.id, m, 'm' || m, 1000 + 50 * random(), 'ops/s', 'higher_is_better', 'throughput', m = 0
FROM samples s, generate_series(0, $metrics - 1) m
ORDER BY s.id, m;
ANALYZE;
SQL
    echo "$url"
}

sqlite_scale() {
    KEEP_WORK="$WORK/sqlite" FSDELTA_BIN="$B" benches/store-sqlite-scale.sh >&2
    echo "$WORK/sqlite/scale.sqlite"
}

for STORE in "$@"; do
    case "$STORE" in
        pg-scale) DB=$(pg_scale) ;;
        sqlite-scale) DB=$(sqlite_scale) ;;
        *) DB=$STORE ;;
    esac
    # Schema up to date (a writing command), as a lab's store is after any run.
    FSDELTA_DB="$DB" "$B" cleanup >/dev/null
    "$B" serve --db "$DB" --listen 127.0.0.1:0 --token-file "$WORK/token" > "$WORK/serve.out" 2> "$WORK/serve.err" &
    SERVER=$!
    for _ in $(seq 300); do grep -q 'http://' "$WORK/serve.out" 2>/dev/null && break; sleep 0.1; done
    ADDR=$(sed -n 's|.*http://\([^/]*\)/.*|\1|p' "$WORK/serve.out" | head -1)
    [ -n "$ADDR" ] || { cat "$WORK/serve.err" >&2; exit 1; }
    echo "== $(sed -n 's/^fsdelta serve: //p' "$WORK/serve.out" | head -1)"
    # The pages are found from the alerts the first sweep raises: wait for its end (the server
    # says so), however long the store makes it (SWEEP_WAIT seconds at most).
    for _ in $(seq $((${SWEEP_WAIT:-1800} * 10))); do
        grep -q 'first alert sweep' "$WORK/serve.out" && break
        kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/serve.err" >&2; exit 1; }
        sleep 0.1
    done
    grep 'first alert sweep' "$WORK/serve.out" || { echo "the first alert sweep did not end in ${SWEEP_WAIT:-1800} s" >&2; cat "$WORK/serve.err" >&2; exit 1; }
    python3 - "$ADDR" "$SERVER" "$CLIENTS" "$DURATION" <<'PY'
import http.client, re, sys, threading, time

addr, pid, clients, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
host, port = addr.rsplit(":", 1)

def get(path, timeout=120):
    c = http.client.HTTPConnection(host, int(port), timeout=timeout)
    t0 = time.monotonic()
    try:
        c.request("GET", path)
        r = c.getresponse()
        body = r.read()
        return r.status, body.decode("utf-8", "replace"), time.monotonic() - t0
    except OSError:
        return 0, "", time.monotonic() - t0
    finally:
        c.close()

def rss_kib():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

# The first alert sweep has ended (the script waited for its line): discover the pages to load.
st, body, _ = get("/alerts")
st, home, _ = get("/")
def first(pattern, text):
    m = re.search(pattern, text)
    return m.group(1).replace("&amp;", "&") if m else None
history = first(r'class="history-link" href="([^"]+)"', home)
alert = first(r'class="alert-link" href="([^"]+)"', body)
run = first(r'href="(/run/\d+)"', home)
pages = {"home": "/", "alerts": "/alerts", "runs": "/runs", "machines": "/machines", "jobs": "/jobs",
         "compare": "/compare?sel=latest~1&sel=latest"}
if history: pages["history"] = history
if alert: pages["alert"] = alert
if run: pages["run"] = run
# Warm each page once (first-use costs are not load).
for p in pages.values():
    get(p)
print(f"pages: {', '.join(f'{k} {v}' for k, v in pages.items())}")

names = list(pages)
lat = {k: [] for k in names}
errors = {k: 0 for k in names}
lock = threading.Lock()
stop = time.monotonic() + seconds
rss0, peak = rss_kib(), rss_kib()

def client(i):
    n = i
    while time.monotonic() < stop:
        k = names[n % len(names)]
        n += 1
        st, _, dt = get(pages[k])
        with lock:
            lat[k].append(dt)
            if st != 200:
                errors[k] += 1

threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
for t in threads: t.start()
while any(t.is_alive() for t in threads):
    peak = max(peak, rss_kib())
    time.sleep(0.2)
rss1 = rss_kib()

def q(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] * 1000 if v else float("nan")

print(f"{clients} clients, {seconds:.0f} s")
print(f"{'page':<10} {'requests':>8} {'errors':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
allv = []
for k in names:
    allv += lat[k]
    print(f"{k:<10} {len(lat[k]):>8} {errors[k]:>6} {q(lat[k], .5):>8.1f} {q(lat[k], .95):>8.1f} {q(lat[k], .99):>8.1f}")
print(f"{'all':<10} {len(allv):>8} {sum(errors.values()):>6} {q(allv, .5):>8.1f} {q(allv, .95):>8.1f} {q(allv, .99):>8.1f}")
print(f"server RSS: {rss0 / 1024:.1f} MiB at start, {peak / 1024:.1f} MiB peak, {rss1 / 1024:.1f} MiB at end")
PY
    kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=""
    if [ -n "$PGDB" ]; then
        psql -qX "$FSDELTA_TEST_PG" -c "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)" >/dev/null; PGDB=""
    fi
done
