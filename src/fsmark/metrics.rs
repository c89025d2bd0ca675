//! The fs_mark metric catalogue: the one place that says which metrics an fs_mark run has,
//! their names, units, directions, kinds and headline role, and the arithmetic from fs_mark's
//! numbers to them.
//!
//! Why: the native engine ([`crate::fsmark::FsMarkResult`]) and the real fs_mark's table
//! ([`crate::fsmark::external::FsMarkOutput`]) must give the same metrics for the same numbers,
//! or comparing a native run with a run of the real tool compares two definitions. Each reduces
//! what it has to a plain [`Summary`] and [`metrics`] does the rest. This module must never
//! read fs_mark's output or the engine's records itself, and never invents a number a summary
//! lacks (fs_mark prints no percentile and no wall time: those metrics are then absent).
//!
//! The rules (fs_mark 3.3's `fs_mark.c`: Files/sec and App Overhead per iteration, as its table
//! prints them):
//!
//! - `files_per_sec` (headline) and `app_overhead_us`: the mean over iterations of the rows'
//!   Files/sec and App Overhead; `app_overhead_us_per_file`: the summed overhead over the files;
//!   `files`: the files created; `fs_use_pct`: the last row's (a share, neutral).
//! - `files_per_sec_wall` (files over the summed timed wall time) and `elapsed_s`: when known.
//! - `<op>_lat_ns_p50`, `_p99` (a tail), `_max` (a maximum), `_mean`, in that order and in
//!   fs_mark's column order of operations, each when known.
//!
//! The differences between the two definitions before this catalogue, and the rule kept (the
//! native engine's stored metrics are unchanged):
//!
//! - the mean Files/sec was `sum / n` (native) and `sum(v / n)` (external): now `sum / n`, and
//!   `sum(v / n)` only when the sum leaves the finite range (printed values near f64::MAX);
//! - the external driver appended `elapsed_s` last; it now sits where the native engine puts it
//!   (after `app_overhead_us_per_file`);
//! - the external driver gave `<op>_lat_ns_mean` before `<op>_lat_ns_max`; now max, then mean.
//!
//! Both computed App Overhead in microseconds as the same mean and ratio.

use crate::model::{Direction, Metric, MetricKind, Unit};

/// Files over nanoseconds, per second (0 for no time).
pub fn rate(files: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        files as f64 / (ns as f64 / 1e9)
    }
}

/// One system call's latency over the run, in nanoseconds; `None` for what the source lacks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpLatency {
    /// The operation's metric stem (`create`, `write`, `fsync`, `sync`, `close`, `unlink`).
    pub name: &'static str,
    /// The median.
    pub p50_ns: Option<u64>,
    /// The 99th percentile.
    pub p99_ns: Option<u64>,
    /// The slowest call.
    pub max_ns: Option<f64>,
    /// The mean.
    pub mean_ns: f64,
}

/// What [`metrics`] needs of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Each iteration's Files/sec, in order.
    pub files_per_sec: Vec<f64>,
    /// Files created over the run.
    pub files: u64,
    /// App Overhead summed over the iterations, microseconds.
    pub app_overhead_us: f64,
    /// The iterations' timed wall time summed, ns, when known.
    pub timed_wall_ns: Option<u64>,
    /// The run's wall time, seconds, when known.
    pub elapsed_s: Option<f64>,
    /// The last iteration's filesystem use, percent.
    pub fs_use_pct: f64,
    /// Operations that happened, in fs_mark's column order.
    pub ops: Vec<OpLatency>,
}

/// The mean of `values` (0 for none): `sum / n`, or the sum of `v / n` when the sum is not
/// finite.
fn mean(values: &[f64]) -> f64 {
    let n = values.len().max(1) as f64;
    let m = values.iter().sum::<f64>() / n;
    if m.is_finite() {
        m
    } else {
        values.iter().map(|v| v / n).sum()
    }
}

/// The sample-level metrics of a run (see the module docs for every rule).
pub fn metrics(s: &Summary) -> Vec<Metric> {
    use Direction::*;
    let n = s.files_per_sec.len().max(1) as f64;
    let mut m = vec![
        Metric::new(
            "files_per_sec",
            mean(&s.files_per_sec),
            Unit::FilesPerSec,
            HigherIsBetter,
        )
        .headline(),
    ];
    if let Some(ns) = s.timed_wall_ns {
        m.push(Metric::new(
            "files_per_sec_wall",
            rate(s.files, ns),
            Unit::FilesPerSec,
            HigherIsBetter,
        ));
    }
    m.push(Metric::new(
        "app_overhead_us",
        s.app_overhead_us / n,
        Unit::Microseconds,
        LowerIsBetter,
    ));
    m.push(Metric::new(
        "app_overhead_us_per_file",
        if s.files == 0 {
            0.0
        } else {
            s.app_overhead_us / s.files as f64
        },
        Unit::Microseconds,
        LowerIsBetter,
    ));
    if let Some(e) = s.elapsed_s {
        m.push(Metric::new("elapsed_s", e, Unit::Seconds, LowerIsBetter));
    }
    m.push(Metric::new("files", s.files as f64, Unit::Count, Neutral));
    m.push(Metric::new("fs_use_pct", s.fs_use_pct, Unit::Percent, Neutral).kind(MetricKind::Share));
    for op in &s.ops {
        let values = [
            ("p50", op.p50_ns.map(|v| v as f64), MetricKind::Mean),
            ("p99", op.p99_ns.map(|v| v as f64), MetricKind::Tail),
            ("max", op.max_ns, MetricKind::Max),
            ("mean", Some(op.mean_ns), MetricKind::Mean),
        ];
        for (suffix, v, kind) in values {
            if let Some(v) = v {
                m.push(
                    Metric::new(
                        format!("{}_lat_ns_{suffix}", op.name),
                        v,
                        Unit::Nanoseconds,
                        LowerIsBetter,
                    )
                    .kind(kind),
                );
            }
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_numbers_are_absent_and_known_ones_keep_the_native_order() {
        let s = Summary {
            files_per_sec: vec![100.0, 300.0],
            files: 40,
            app_overhead_us: 800.0,
            timed_wall_ns: None,
            elapsed_s: Some(2.5),
            fs_use_pct: 7.0,
            ops: vec![OpLatency {
                name: "create",
                p50_ns: None,
                p99_ns: None,
                max_ns: Some(9000.0),
                mean_ns: 4000.0,
            }],
        };
        let m = metrics(&s);
        let got: Vec<(&str, f64)> = m.iter().map(|x| (x.name.as_str(), x.value)).collect();
        assert_eq!(
            got,
            [
                ("files_per_sec", 200.0),
                ("app_overhead_us", 400.0),
                ("app_overhead_us_per_file", 20.0),
                ("elapsed_s", 2.5),
                ("files", 40.0),
                ("fs_use_pct", 7.0),
                ("create_lat_ns_max", 9000.0),
                ("create_lat_ns_mean", 4000.0),
            ]
        );
        assert!(m[0].headline && m.iter().filter(|x| x.headline).count() == 1);
        assert_eq!(m[6].kind, MetricKind::Max);
    }

    #[test]
    fn a_mean_of_huge_rates_stays_finite() {
        assert_eq!(mean(&[f64::MAX, f64::MAX]), f64::MAX);
        assert_eq!(mean(&[]), 0.0);
        // The native engine's rule where the sum is finite: sum / n.
        assert_eq!(mean(&[0.1, 0.2, 0.3]), (0.1 + 0.2 + 0.3) / 3.0);
    }
}
