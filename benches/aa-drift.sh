#!/usr/bin/env bash
# aa-drift.sh: does counting the machine's drift between runs keep `compare` from calling two
# runs of the same thing changed (issue 38)? Out of sample, on the stores of two aa-rate.sh
# sessions on one machine: the A/A runs of one session (CAL) stand for the machine's
# calibration (relabelled `calibrate`; its writer pairs dropped), the other session's A/A pairs
# (EVAL) are copied beside them and compared, once as they were (no calibration in their own
# store) and once with the calibration present, which `compare` counts. Prints, per pair, the
# exit code and the headline metrics called regressed or improved, then the totals.
#
# With --halves DIR, one session stands for both, as a calibration made the same day would:
# pairs 1 to P/2 calibrate and pairs P/2+1 to P are compared, then the other way round.
#
# Usage: benches/aa-drift.sh --cal DIR --eval DIR [--bin PATH] [--work DIR]
#        benches/aa-drift.sh --halves DIR [--bin PATH] [--work DIR]
#   DIR: an aa-rate.sh --logs directory (its aa.sqlite, runs labelled aaN-a/aaN-b, wN-a/wN-b)
# Defaults: the debug build target/debug/fsdelta, a fresh work directory under /var/tmp.
# Nothing is written to the CAL or EVAL stores: both are copied.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/target/debug/fsdelta"
CAL=""
EVAL=""
HALVES=""
WORK=""
die() { echo "aa-drift: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --cal) CAL="$2"; shift 2 ;;
        --eval) EVAL="$2"; shift 2 ;;
        --halves) HALVES="$2"; CAL="$2"; EVAL="$2"; shift 2 ;;
        --bin) BIN="$2"; shift 2 ;;
        --work) WORK="$2"; shift 2 ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) die "unknown argument: $1" ;;
    esac
done
[ -x "$BIN" ] || die "$BIN is not an executable: cargo build first, or give --bin"
[ -f "$CAL/aa.sqlite" ] || die "--cal $CAL has no aa.sqlite (an aa-rate.sh --logs directory)"
[ -f "$EVAL/aa.sqlite" ] || die "--eval $EVAL has no aa.sqlite (an aa-rate.sh --logs directory)"
command -v sqlite3 >/dev/null || die "sqlite3 is needed (apt-get install sqlite3)"
WORK="${WORK:-$(mktemp -d /var/tmp/fsdelta-aa-drift.XXXXXX)}"
mkdir -p "$WORK"
pairs=$(sqlite3 "$EVAL/aa.sqlite" "SELECT count(*) FROM runs WHERE label LIKE 'aa%-a'")
flagged() { # file -> "n: metric verdict, ..." of headline rows called changed
    python3 - "$1" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
rows = [m for m in doc["metrics"] if m.get("role") == "headline" and m["verdict"] in ("regressed", "improved")]
print(len(rows), "; ".join(f'{m["test"]} {m["metric"]} {m["verdict"]} {m["diff_pct"]:+.1f} %' for m in rows))
PY
}
tot=(0 0); any=(0 0); ones=(0 0); judged=0
# evaluate SEQ...: compare each pair in PLAIN (no calibration) and WITH (calibration present)
evaluate() {
    for i in "$@"; do
        line="pair $i:"
        k=0
        for db in "$PLAIN" "$WITH"; do
            f="$WORK/compare-$i-$k.json"
            rc=0
            FSDELTA_DB="$db" "$BIN" compare --format json "label:aa$i-a" "label:aa$i-b" >"$f" 2>/dev/null || rc=$?
            read -r n rest < <(flagged "$f")
            tot[k]=$(( ${tot[k]} + n ))
            [ "$n" -gt 0 ] && any[k]=$(( ${any[k]} + 1 ))
            [ "$rc" -eq 1 ] && ones[k]=$(( ${ones[k]} + 1 ))
            name=$([ $k -eq 0 ] && echo "without" || echo "with")
            line="$line $name: exit $rc, $n changed${rest:+ ($rest)};"
            k=$((k + 1))
        done
        judged=$((judged + 1))
        echo "$line"
    done
}
PLAIN="$WORK/plain.sqlite"
WITH="$WORK/with-calibration.sqlite"
# stores CAL_PAIRS: PLAIN is EVAL's store without its writer pairs; WITH is the same with the
# calibration pairs CAL_PAIRS of CAL relabelled `calibrate` (and, from another session, EVAL's
# pairs copied beside them)
stores() {
    rm -f "$PLAIN" "$WITH"
    cp "$EVAL/aa.sqlite" "$PLAIN"
    sqlite3 "$PLAIN" "DELETE FROM runs WHERE label LIKE 'w%';"
    cp "$CAL/aa.sqlite" "$WITH"
    sqlite3 "$WITH" "DELETE FROM runs WHERE label LIKE 'w%';"
    local where=""
    for i in "$@"; do where="$where OR label IN ('aa$i-a', 'aa$i-b')"; done
    sqlite3 "$WITH" "UPDATE runs SET label = 'calibrate' WHERE 0 $where;"
    if [ -z "$HALVES" ]; then
        "$BIN" sync --from "$PLAIN" --to "$WITH" >/dev/null 2>&1
    fi
}
if [ -n "$HALVES" ]; then
    half=$((pairs / 2))
    echo "calibration: pairs 1-$half; compared: pairs $((half + 1))-$pairs"
    stores $(seq 1 "$half")
    evaluate $(seq $((half + 1)) "$pairs")
    echo "calibration: pairs $((half + 1))-$pairs; compared: pairs 1-$half"
    stores $(seq $((half + 1)) "$pairs")
    evaluate $(seq 1 "$half")
    what="the other half of $CAL"
else
    stores $(seq 1 "$(sqlite3 "$CAL/aa.sqlite" "SELECT count(*) FROM runs WHERE label LIKE 'aa%-a'")")
    evaluate $(seq 1 "$pairs")
    what="$CAL"
fi
echo "without the drift: ${any[0]} of $judged A/A comparisons call a headline metric changed (${tot[0]} metrics), ${ones[0]} exit 1"
echo "with the drift of $what counted: ${any[1]} of $judged (${tot[1]} metrics), ${ones[1]} exit 1"
echo "work directory: $WORK"
