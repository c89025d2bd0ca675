//! What the engine measured, and fs_mark's arithmetic on it.
//!
//! Why a module of its own: fs_mark's numbers have definitions people rely on (Files/sec is the
//! SUM of per-worker rates, App Overhead the SUM of per-worker overheads, Count is cumulative)
//! and those definitions are easy to get subtly wrong; here they are pure functions over plain
//! records, tested with made-up inputs. Beside them sit the honest numbers fs_mark lacks
//! (files / wall time, latency percentiles from nanosecond histograms). This module must never
//! do I/O or read a clock.

use super::metrics::{self, rate};
use crate::model::{HistogramRecord, Metric, Unit};
use crate::probe::clock::Nanos;
use crate::probe::histogram::Histogram;
use crate::workload::Measurements;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// A timed operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// open(O_CREAT|O_RDWR|O_TRUNC, 0666).
    Create,
    /// One write() call.
    Write,
    /// fsync() in the loop (-S 1), or reopen+fsync+close after it (-S 2..6), as fs_mark counts it.
    Fsync,
    /// sync() after the loop (-S 2, 4, 6).
    Sync,
    /// close().
    Close,
    /// unlink() after the timed section (when files are not kept).
    Unlink,
}

impl Op {
    /// Every operation, in fs_mark's column order.
    pub const ALL: [Op; 6] = [
        Op::Create,
        Op::Write,
        Op::Fsync,
        Op::Sync,
        Op::Close,
        Op::Unlink,
    ];

    /// Name used in metric names (`create_lat_ns_p99`).
    pub fn name(self) -> &'static str {
        match self {
            Op::Create => "create",
            Op::Write => "write",
            Op::Fsync => "fsync",
            Op::Sync => "sync",
            Op::Close => "close",
            Op::Unlink => "unlink",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// Whether fs_mark counts this operation's time as file-writing time (everything but unlink,
    /// which happens after the loop clock stops).
    pub fn in_loop(self) -> bool {
        self != Op::Unlink
    }
}

/// One latency histogram (nanoseconds) per operation.
#[derive(Clone, Debug, Default)]
pub struct OpHistograms {
    hists: [Histogram; 6],
}

impl OpHistograms {
    /// Empty histograms (allocates all buckets here, never while recording).
    pub fn new() -> Self {
        Self::default()
    }

    /// Record one latency. No allocation.
    #[inline]
    pub fn record(&mut self, op: Op, ns: Nanos) {
        self.hists[op.index()].record(ns.0);
    }

    /// The histogram of `op`.
    pub fn get(&self, op: Op) -> &Histogram {
        &self.hists[op.index()]
    }

    /// Add every value of `other`.
    pub fn merge(&mut self, other: &OpHistograms) {
        for (a, b) in self.hists.iter_mut().zip(other.hists.iter()) {
            a.merge(b);
        }
    }

    /// Total nanoseconds of the calls fs_mark subtracts from loop time to get app overhead:
    /// creat + write + fsync + sync + close.
    pub fn file_ops_ns(&self) -> u64 {
        Op::ALL
            .iter()
            .filter(|op| op.in_loop())
            .map(|op| self.get(*op).sum() as u64)
            .sum()
    }

    /// Summaries of the operations that happened, keyed by operation.
    pub fn stats(&self) -> BTreeMap<Op, OpStats> {
        Op::ALL
            .iter()
            .filter_map(|op| OpStats::from_histogram(self.get(*op)).map(|s| (*op, s)))
            .collect()
    }
}

/// Latency summary of one operation, in nanoseconds. Percentiles follow fio's rule (bucket
/// midpoints, at most 0.78 % off); count, min, max, mean and total are exact.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpStats {
    /// Calls timed.
    pub count: u64,
    /// Fastest call.
    pub min_ns: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Slowest call.
    pub max_ns: u64,
    /// Sum of all calls.
    pub total_ns: u64,
}

impl OpStats {
    /// Summary of `h`, or `None` when nothing was recorded.
    pub fn from_histogram(h: &Histogram) -> Option<OpStats> {
        if h.count() == 0 {
            return None;
        }
        let p = h.percentiles(&[50.0, 99.0]);
        Some(OpStats {
            count: h.count(),
            min_ns: h.min(),
            mean_ns: h.mean(),
            p50_ns: p[0].unwrap_or(0),
            p99_ns: p[1].unwrap_or(0),
            max_ns: h.max(),
            total_ns: h.sum() as u64,
        })
    }
}

/// What one worker measured in one iteration (before aggregation).
#[derive(Clone, Debug)]
pub struct WorkerIteration {
    /// Files created.
    pub files: u64,
    /// When its loop clock started (after the start gate opened).
    pub start: Nanos,
    /// When its loop clock stopped: after the last close and the -S 2..6 phase, before unlinks.
    pub loop_end: Nanos,
    /// Per-operation latencies.
    pub ops: OpHistograms,
}

impl WorkerIteration {
    /// fs_mark's `loop_usecs`, in nanoseconds.
    pub fn loop_ns(&self) -> u64 {
        (self.loop_end - self.start).0
    }

    /// fs_mark's app overhead: loop time minus the file-writing calls.
    pub fn app_overhead_ns(&self) -> u64 {
        self.loop_ns().saturating_sub(self.ops.file_ops_ns())
    }

    /// fs_mark's per-worker rate: files / loop seconds.
    pub fn files_per_sec(&self) -> f64 {
        rate(self.files, self.loop_ns())
    }
}

/// One worker's numbers in an iteration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerStats {
    /// Worker index (0-based; worker i uses directory i mod number of directories).
    pub worker: u32,
    /// Files created.
    pub files: u64,
    /// Loop time (ns).
    pub loop_ns: u64,
    /// files / loop seconds.
    pub files_per_sec: f64,
    /// Loop time not spent in file-writing calls (ns).
    pub app_overhead_ns: u64,
}

/// One row of fs_mark's table, with the honest numbers beside it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterationResult {
    /// 1-based iteration number.
    pub iteration: u32,
    /// Files created in this iteration (all workers).
    pub files: u64,
    /// fs_mark's Count: files created so far, cumulative over iterations.
    pub count: u64,
    /// fs_mark's Size: -s.
    pub size: u64,
    /// fs_mark's FSUse%: int(100 * (f_blocks - f_bavail) / f_blocks) of the first directory,
    /// after the iteration.
    pub fs_use_pct: u32,
    /// fs_mark's Files/sec: the SUM of per-worker rates (overstates throughput when workers do
    /// not overlap).
    pub files_per_sec: f64,
    /// fs_mark's App Overhead: the sum over workers of whole microseconds, as printed.
    pub app_overhead_us: u64,
    /// The same sum in nanoseconds (not truncated per worker). `None` for rows read from the
    /// real fs_mark, which prints only whole microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_overhead_ns: Option<u64>,
    /// Wall time from the first worker's start to the last worker's loop end (ns). `None` for
    /// rows read from the real fs_mark, which does not print it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_ns: Option<u64>,
    /// Honest rate: files / wall seconds. `None` when the wall time is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_per_sec_wall: Option<f64>,
    /// Per worker; empty (and left out of the JSON) for rows read from the real fs_mark, which
    /// prints no per-worker numbers. The native engine always has at least one worker.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<WorkerStats>,
    /// Latency summary of each operation that happened in this iteration; empty for rows read
    /// from the real fs_mark (its `-v` Min/Avg/Max are not a latency summary).
    #[serde(default)]
    pub ops: BTreeMap<Op, OpStats>,
}

/// fs_mark's per-iteration arithmetic over the workers' measurements. Returns the row and the
/// workers' histograms merged.
pub fn aggregate(
    iteration: u32,
    workers: &[WorkerIteration],
    previous_count: u64,
    size: u64,
    fs_use_pct: u32,
) -> (IterationResult, OpHistograms) {
    let mut merged = OpHistograms::new();
    let mut files = 0;
    let mut files_per_sec = 0.0;
    let mut app_overhead_us = 0;
    let mut app_overhead_ns = 0;
    let mut first_start: Option<Nanos> = None;
    let mut last_end = Nanos::ZERO;
    let mut stats = Vec::with_capacity(workers.len());
    for (i, w) in workers.iter().enumerate() {
        merged.merge(&w.ops);
        files += w.files;
        files_per_sec += w.files_per_sec();
        app_overhead_us += w.app_overhead_ns() / 1_000;
        app_overhead_ns += w.app_overhead_ns();
        first_start = Some(first_start.map_or(w.start, |s| s.min(w.start)));
        last_end = last_end.max(w.loop_end);
        stats.push(WorkerStats {
            worker: i as u32,
            files: w.files,
            loop_ns: w.loop_ns(),
            files_per_sec: w.files_per_sec(),
            app_overhead_ns: w.app_overhead_ns(),
        });
    }
    let wall_ns = (last_end - first_start.unwrap_or(last_end)).0;
    let row = IterationResult {
        iteration,
        files,
        count: previous_count + files,
        size,
        fs_use_pct,
        files_per_sec,
        app_overhead_us,
        app_overhead_ns: Some(app_overhead_ns),
        wall_ns: Some(wall_ns),
        files_per_sec_wall: Some(rate(files, wall_ns)),
        workers: stats,
        ops: merged.stats(),
    };
    (row, merged)
}

/// fs_mark's FSUse%, computed in single precision as fs_mark does.
pub fn fs_use_pct(f_blocks: u64, f_bavail: u64) -> u32 {
    if f_blocks == 0 {
        return 0;
    }
    let used = f_blocks.saturating_sub(f_bavail) as f32;
    (100.0 * (used / f_blocks as f32)) as u32
}

/// Why a `-F` run stopped: fs_mark's free-space check failed before an iteration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FillStop {
    /// The directory checked.
    pub dir: PathBuf,
    /// Files a worker would have created.
    pub files: u32,
}

/// The name of the attachment that keeps fs_mark's per-iteration rows with a sample.
pub const FSMARK_ITERATIONS: &str = "fsmark_iterations";

/// Everything one run of the engine measured.
#[derive(Clone, Debug)]
pub struct FsMarkResult {
    /// The canonical command line (`FsMarkOptions::command_line`).
    pub command_line: String,
    /// Workers.
    pub threads: u32,
    /// One row per iteration, in order.
    pub iterations: Vec<IterationResult>,
    /// Set when `-F` stopped because the filesystem was (nearly) full.
    pub fill_stopped: Option<FillStop>,
    /// Wall time of the whole run, unlinks and checks included (ns).
    pub elapsed_ns: u64,
    /// Latencies over every iteration and worker.
    pub ops: OpHistograms,
}

impl FsMarkResult {
    /// Files created over all iterations.
    pub fn total_files(&self) -> u64 {
        self.iterations.iter().map(|i| i.files).sum()
    }

    /// Sum of the iterations' timed wall times (ns).
    pub fn timed_wall_ns(&self) -> u64 {
        self.iterations.iter().filter_map(|i| i.wall_ns).sum()
    }

    /// Latency summary of each operation that happened, over the whole run.
    pub fn op_stats(&self) -> BTreeMap<Op, OpStats> {
        self.ops.stats()
    }

    /// What the metric catalogue needs of this run ([`crate::fsmark::metrics`]).
    pub fn summary(&self) -> metrics::Summary {
        let overhead_ns: u64 = self
            .iterations
            .iter()
            .filter_map(|i| i.app_overhead_ns)
            .sum();
        metrics::Summary {
            files_per_sec: self.iterations.iter().map(|i| i.files_per_sec).collect(),
            files: self.total_files(),
            app_overhead_us: overhead_ns as f64 / 1e3,
            timed_wall_ns: Some(self.timed_wall_ns()),
            elapsed_s: Some(self.elapsed_ns as f64 / 1e9),
            fs_use_pct: self.iterations.last().map_or(0.0, |i| i.fs_use_pct as f64),
            ops: self
                .op_stats()
                .into_iter()
                .map(|(op, s)| metrics::OpLatency {
                    name: op.name(),
                    p50_ns: Some(s.p50_ns),
                    p99_ns: Some(s.p99_ns),
                    max_ns: Some(s.max_ns as f64),
                    mean_ns: s.mean_ns,
                })
                .collect(),
        }
    }

    /// The sample-level metrics, by the catalogue. Names, units and directions are a contract
    /// with the store.
    pub fn metrics(&self) -> Vec<Metric> {
        metrics::metrics(&self.summary())
    }

    /// The histograms behind the latency metrics (`<op>_lat_ns`), for operations that happened.
    pub fn histogram_records(&self) -> Vec<HistogramRecord> {
        Op::ALL
            .iter()
            .filter(|op| self.ops.get(**op).count() > 0)
            .map(|op| {
                self.ops
                    .get(*op)
                    .to_record(&format!("{}_lat_ns", op.name()), Unit::Nanoseconds)
            })
            .collect()
    }

    /// The hand-off to the store. The metrics pool the iterations; fs_mark's own table (one row
    /// per `-L` loop, which is what a mailing-list post shows) is kept beside them as the
    /// `fsmark_iterations` attachment (JSON, the rows as `--json` prints them).
    pub fn to_measurements(&self) -> Measurements {
        let rows = serde_json::to_vec(&self.iterations).unwrap_or_default();
        Measurements {
            metrics: self.metrics(),
            histograms: self.histogram_records(),
            logical_bytes_written: None,
            attachments: vec![crate::model::Attachment {
                name: FSMARK_ITERATIONS.into(),
                format: "json".into(),
                data: rows,
            }],
            facts: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Direction;

    fn worker(files: u64, start: u64, end: u64, calls: &[(Op, u64)]) -> WorkerIteration {
        let mut ops = OpHistograms::new();
        for (op, ns) in calls {
            ops.record(*op, Nanos(*ns));
        }
        WorkerIteration {
            files,
            start: Nanos(start),
            loop_end: Nanos(end),
            ops,
        }
    }

    #[test]
    fn per_worker_numbers_follow_fs_mark() {
        // 1 s loop, 0.4 s in file calls, unlink after the loop does not count.
        let w = worker(
            100,
            1_000_000_000,
            2_000_000_000,
            &[
                (Op::Create, 100_000_000),
                (Op::Write, 100_000_000),
                (Op::Fsync, 100_000_000),
                (Op::Sync, 50_000_000),
                (Op::Close, 50_000_000),
                (Op::Unlink, 300_000_000),
            ],
        );
        assert_eq!(w.loop_ns(), 1_000_000_000);
        assert_eq!(w.ops.file_ops_ns(), 400_000_000);
        assert_eq!(w.app_overhead_ns(), 600_000_000);
        assert!((w.files_per_sec() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn files_per_sec_is_the_sum_of_worker_rates_not_files_over_wall() {
        // Two workers that do not overlap: each 100 files in 1 s, one after the other.
        let a = worker(100, 0, 1_000_000_000, &[(Op::Create, 1_000)]);
        let b = worker(100, 1_000_000_000, 2_000_000_000, &[(Op::Create, 3_000)]);
        let (row, merged) = aggregate(2, &[a, b], 500, 4096, 42);
        assert_eq!(row.iteration, 2);
        assert_eq!(row.files, 200);
        assert_eq!(row.count, 700, "Count is cumulative");
        assert_eq!(row.size, 4096);
        assert_eq!(row.fs_use_pct, 42);
        assert!((row.files_per_sec - 200.0).abs() < 1e-9, "sum of 100 + 100");
        assert_eq!(row.wall_ns, Some(2_000_000_000));
        assert!(
            (row.files_per_sec_wall.unwrap() - 100.0).abs() < 1e-9,
            "200 files / 2 s"
        );
        assert_eq!(merged.get(Op::Create).count(), 2);
        let c = &row.ops[&Op::Create];
        assert_eq!(
            (c.count, c.min_ns, c.max_ns, c.total_ns),
            (2, 1_000, 3_000, 4_000)
        );
        assert!(!row.ops.contains_key(&Op::Unlink));
        assert_eq!(row.workers.len(), 2);
        assert_eq!(row.workers[1].worker, 1);
    }

    #[test]
    fn app_overhead_is_summed_in_whole_microseconds_per_worker() {
        let a = worker(1, 0, 1_999, &[]); // 1.999 us -> 1
        let b = worker(1, 0, 2_999, &[]); // 2.999 us -> 2
        let (row, _) = aggregate(1, &[a, b], 0, 0, 0);
        assert_eq!(row.app_overhead_us, 3);
        assert_eq!(row.app_overhead_ns, Some(4_998));
    }

    #[test]
    fn a_native_row_keeps_every_field_in_its_json() {
        // The fields a row read from the real fs_mark leaves out are always there for the
        // native engine, as plain numbers, in the order they always had.
        let (row, _) = aggregate(1, &[worker(1, 0, 2_000, &[(Op::Create, 1_000)])], 0, 0, 0);
        let json = serde_json::to_string(&row).unwrap();
        assert!(
            json.contains(
                r#""app_overhead_us":1,"app_overhead_ns":1000,"wall_ns":2000,"files_per_sec_wall":500000.0,"workers":[{"worker":0,"#
            ),
            "{json}"
        );
        let back: IterationResult = serde_json::from_str(&json).unwrap();
        assert_eq!(back, row);
    }

    #[test]
    fn fs_use_matches_fs_marks_float_arithmetic() {
        assert_eq!(fs_use_pct(1000, 310), 69);
        assert_eq!(fs_use_pct(1000, 1000), 0);
        assert_eq!(fs_use_pct(1000, 0), 100);
        assert_eq!(fs_use_pct(0, 0), 0);
        // 2/3 used -> 66.66 -> 66 (truncated, not rounded)
        assert_eq!(fs_use_pct(3, 1), 66);
    }

    #[test]
    fn sample_metrics_have_the_contracted_names_units_and_values() {
        let (r1, h1) = aggregate(
            1,
            &[worker(
                10,
                0,
                1_000_000_000,
                &[(Op::Create, 2_000), (Op::Close, 500)],
            )],
            0,
            0,
            50,
        );
        let (r2, h2) = aggregate(
            2,
            &[worker(
                10,
                0,
                500_000_000,
                &[(Op::Create, 4_000), (Op::Close, 500)],
            )],
            10,
            0,
            51,
        );
        let mut ops = h1.clone();
        ops.merge(&h2);
        let res = FsMarkResult {
            command_line: "fs_mark -s 0".into(),
            threads: 1,
            iterations: vec![r1, r2],
            fill_stopped: None,
            elapsed_ns: 3_000_000_000,
            ops,
        };
        let m: BTreeMap<String, Metric> = res
            .metrics()
            .into_iter()
            .map(|m| (m.name.clone(), m))
            .collect();
        let v = |n: &str| m[n].value;
        assert!(
            (v("files_per_sec") - 15.0).abs() < 1e-9,
            "mean of 10 and 20"
        );
        assert!((v("files_per_sec_wall") - 20.0 / 1.5).abs() < 1e-9);
        let overhead_ns = (1_000_000_000 - 2_500) + (500_000_000 - 4_500);
        assert!((v("app_overhead_us") - overhead_ns as f64 / 1e3 / 2.0).abs() < 1e-6);
        assert!((v("app_overhead_us_per_file") - overhead_ns as f64 / 1e3 / 20.0).abs() < 1e-6);
        assert_eq!(v("elapsed_s"), 3.0);
        assert_eq!(v("files"), 20.0);
        assert_eq!(v("fs_use_pct"), 51.0);
        assert_eq!(v("create_lat_ns_max"), 4_000.0);
        assert_eq!(v("create_lat_ns_mean"), 3_000.0);
        assert!(m.contains_key("close_lat_ns_p50") && m.contains_key("close_lat_ns_p99"));
        assert!(
            !m.contains_key("write_lat_ns_p50"),
            "ops that did not happen have no metric"
        );
        assert_eq!(m["files_per_sec"].unit, Unit::FilesPerSec);
        assert_eq!(m["files_per_sec"].direction, Direction::HigherIsBetter);
        assert_eq!(m["files_per_sec_wall"].direction, Direction::HigherIsBetter);
        assert_eq!(m["app_overhead_us"].unit, Unit::Microseconds);
        assert_eq!(m["app_overhead_us"].direction, Direction::LowerIsBetter);
        assert_eq!(
            m["app_overhead_us_per_file"].direction,
            Direction::LowerIsBetter
        );
        assert_eq!(m["elapsed_s"].unit, Unit::Seconds);
        assert_eq!(m["files"].direction, Direction::Neutral);
        assert_eq!(m["fs_use_pct"].unit, Unit::Percent);
        assert_eq!(m["create_lat_ns_p99"].unit, Unit::Nanoseconds);
        assert_eq!(m["create_lat_ns_p99"].direction, Direction::LowerIsBetter);
        let hists = res.histogram_records();
        let names: Vec<&str> = hists.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, vec!["create_lat_ns", "close_lat_ns"]);
        assert_eq!(hists[0].count, 2);
        let meas = res.to_measurements();
        assert_eq!(meas.metrics.len(), 7 + 2 * 4);
        assert_eq!(meas.histograms.len(), 2);
    }
}
