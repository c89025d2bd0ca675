//! fio's `--status-interval`: while the jobs run, the cumulative stats of every job in each
//! chosen format (a full JSON document per report, then the final one; the normal block per
//! report after one header; terse lines per job per report), as fio 3.33 prints them. How
//! many reports fit in a run is the clock's business: the tests count at least one before the
//! final and check that every number only grows, never an exact count. The JSON key sets are
//! compared with Debian's fio on the same job.

mod common;

use assert_cmd::Command;
use std::path::Path;

/// Two rate-limited time_based jobs of 1 s; a report every 250 ms.
const JOB: &str = "\
[global]
size=1m
bs=4k
thread
time_based
runtime=1
[w]
rw=write
rate_iops=400
[r]
rw=randread
rate_iops=200
";

fn run(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("job.fio"), JOB).unwrap();
    let out = Command::cargo_bin("fsdelta")
        .unwrap()
        .arg("fio")
        .args(args)
        .arg("job.fio")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The JSON documents of a stream of them.
fn documents(text: &str) -> Vec<serde_json::Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<serde_json::Value>()
        .map(|d| d.unwrap())
        .collect()
}

/// Every key path of a document (array members by their first element; percentile and bin
/// keys, which depend on the numbers, left out).
fn key_paths(v: &serde_json::Value, at: &str, out: &mut std::collections::BTreeSet<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                if k.starts_with(|c: char| c.is_ascii_digit()) {
                    continue;
                }
                let p = format!("{at}/{k}");
                out.insert(p.clone());
                key_paths(x, &p, out);
            }
        }
        serde_json::Value::Array(a) => {
            if let Some(x) = a.first() {
                key_paths(x, &format!("{at}[]"), out);
            }
        }
        _ => {}
    }
}

fn keys(v: &serde_json::Value) -> std::collections::BTreeSet<String> {
    let mut s = std::collections::BTreeSet::new();
    key_paths(v, "", &mut s);
    s
}

fn num(v: &serde_json::Value, path: &[&str]) -> u64 {
    path.iter()
        .fold(v, |v, k| &v[k])
        .as_u64()
        .unwrap_or_else(|| panic!("{path:?} in {v}"))
}

#[test]
fn json_reports_are_full_documents_with_cumulative_numbers() {
    let docs = documents(&run(&["--output-format=json", "--status-interval=250ms"]));
    // At least one report before the final document (a 1 s run, a report every 250 ms).
    assert!(docs.len() >= 2, "{} documents", docs.len());
    let last = docs.last().unwrap();
    for d in &docs {
        assert_eq!(keys(d), keys(last), "every report is a full document");
        assert_eq!(d["jobs"].as_array().unwrap().len(), 2);
    }
    for (job, dir) in [(0, "write"), (1, "read")] {
        let series: Vec<(u64, u64, u64, u64)> = docs
            .iter()
            .map(|d| {
                let j = &d["jobs"][job];
                (
                    num(j, &[dir, "io_bytes"]),
                    num(j, &[dir, "total_ios"]),
                    num(j, &[dir, "clat_ns", "N"]),
                    num(j, &["job_runtime"]),
                )
            })
            .collect();
        for w in series.windows(2) {
            assert!(
                w[0].0 <= w[1].0 && w[0].1 <= w[1].1 && w[0].2 <= w[1].2 && w[0].3 <= w[1].3,
                "job {job}: numbers must only grow: {series:?}"
            );
        }
        // A report's counts agree with each other (io_bytes = total_ios blocks, one clat
        // each); the final one has I/O in it, never more than 1 s at the job's rate.
        for (bytes, ios, n, _) in &series {
            assert_eq!(*bytes, ios * 4096, "{series:?}");
            assert_eq!(n, ios, "{series:?}");
        }
        let rate = if job == 0 { 400 } else { 200 };
        let total = series.last().unwrap().1;
        assert!(total > 0 && total <= rate, "{series:?}");
    }
    // Each report is stamped with its own time.
    let stamps: Vec<u64> = docs.iter().map(|d| num(d, &["timestamp_ms"])).collect();
    assert!(stamps.windows(2).all(|w| w[0] <= w[1]), "{stamps:?}");
}

#[test]
fn json_reports_have_fios_keys() {
    if !common::require(Path::new("/usr/bin/fio").exists(), "/usr/bin/fio") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("job.fio"), JOB).unwrap();
    let theirs = std::process::Command::new("/usr/bin/fio")
        .args(["--output-format=json", "--status-interval=250ms", "job.fio"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(theirs.status.success(), "{theirs:?}");
    let theirs = documents(&String::from_utf8(theirs.stdout).unwrap());
    let ours = documents(&run(&["--output-format=json", "--status-interval=250ms"]));
    assert!(theirs.len() >= 2 && ours.len() >= 2);
    // fsdelta's JSON names the clock each job used (documented extra keys).
    let extra = ["/jobs[]/clocksource", "/jobs[]/clocksource_drift_ppm"];
    for (t, o) in [
        (&theirs[0], &ours[0]),
        (theirs.last().unwrap(), ours.last().unwrap()),
    ] {
        let mut o = keys(o);
        for k in extra {
            o.remove(k);
        }
        assert_eq!(keys(t), o, "key paths: fio's then ours");
    }
}

#[test]
fn normal_reports_follow_one_header() {
    let text = run(&["--status-interval=250ms"]);
    assert_eq!(text.matches("Starting 2 threads").count(), 1, "{text}");
    assert!(text.starts_with("w: (g=0): rw=write"), "{text}");
    let reports = text.matches("Run status group 0 (all jobs):").count();
    assert!(reports >= 2, "{text}");
    // Each report: a blank line, then every job's block.
    assert_eq!(text.matches("\n\nw: (groupid=0, jobs=1)").count(), reports);
    assert_eq!(text.matches("\nr: (groupid=0, jobs=1)").count(), reports);
}

#[test]
fn terse_reports_are_a_line_per_job_each() {
    let text = run(&["--minimal", "--terse-version=5", "--status-interval=250ms"]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 4 && lines.len() % 2 == 0, "{text}");
    for pair in lines.chunks(2) {
        assert!(
            pair[0].starts_with("5;") && pair[0].contains(";w;"),
            "{text}"
        );
        assert!(pair[1].contains(";r;"), "{text}");
    }
    // The write job's write io KiB (after the header and the read block of 47 fields).
    let w_kib: Vec<u64> = lines
        .iter()
        .step_by(2)
        .map(|l| l.split(';').nth(5 + 47).unwrap().parse().unwrap())
        .collect();
    assert!(w_kib.windows(2).all(|w| w[0] <= w[1]), "{w_kib:?}");
    let total = *w_kib.last().unwrap();
    assert!(total > 0 && total <= 400 * 4, "{w_kib:?}");
}

#[test]
fn a_status_interval_below_a_millisecond_is_refused_as_by_fio() {
    for bad in ["0", "500us", "soon"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("job.fio"), JOB).unwrap();
        let out = Command::cargo_bin("fsdelta")
            .unwrap()
            .args(["fio", &format!("--status-interval={bad}"), "job.fio"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--status-interval"),
            "{out:?}"
        );
    }
}
