//! The fio metric catalogue: the one place that says which metrics a fio run has, their names
//! (fio's JSON field names, `read_iops`, `write_clat_ns_p99`, ...), units, directions, kinds and
//! headline role, and the arithmetic from fio's numbers to them (bytes/s and IOPS from bytes,
//! I/Os and milliseconds).
//!
//! Why: the native engine (`crate::fio::engine`), the real-fio driver and `fsdelta import
//! fio-json` (`crate::fio::external`, `crate::fio::import`) must give the same metrics for the
//! same numbers, or a comparison of a native run with a real-fio run compares two definitions.
//! Each of them reduces what it has to a plain [`RunSummary`] (per direction: bytes, I/Os,
//! runtime and three latency summaries; CPU shares; elapsed time) and [`measurements`] does the
//! rest. This module must never read fio's output or the engine's stats itself, and must never
//! estimate a number its summary does not hold (an unknown percentile is absent, not guessed).
//!
//! The rules, and whose they are (fio 3.33's `stat.c`: `add_ddir_status_json`,
//! `add_ddir_lat_json`, `sum_thread_stats`, `show_thread_status_normal`):
//!
//! - **Directions**: a direction (`read`, `write`, `trim`) has metrics when a job's `rw` does it
//!   ([`Reported::of`]: fio's `td_read`/`td_write`/`td_trim`). fio's JSON prints every
//!   direction, and a group_reporting entry prints only its first job's options, so from fio's
//!   JSON a direction with I/Os is reported too (as fio's normal output shows the directions
//!   with bytes). The one consequence left: a write job's verify reads, which both count as
//!   reads, give `read_*` metrics from the real fio and none from the native engine (its rule,
//!   kept so its stored metrics stay as they were). Before this catalogue the external driver
//!   took `rw=trim`/`randtrim` as reading and writing and never reported trims.
//! - **Rates**: fio's: `bw_bytes = 1000 * io_bytes / runtime_ms` in whole bytes/s, `iops =
//!   1000.0 * total_ios / runtime_ms`, both 0 without runtime, `io_kbytes = io_bytes >> 10`
//!   ([`rates`]). fio computes in 64 bits; here the product is 128-bit, the same number
//!   wherever fio's does not wrap (the native engine's 64-bit product wrapped past 18 PB).
//! - **Merging** (group_reporting, or a run's jobs): fio's `sum_thread_stats`: bytes and I/Os
//!   summed, the longest runtime, latency counts summed, means weighted by counts, the smallest
//!   min and largest max, histograms merged; CPU time over the summed job runtimes.
//! - **Latency**: `clat_ns_p50`/`p99` from the completion-latency histogram with fio's
//!   percentile rule; without a histogram, the percentile fio printed for a single entry; with
//!   several entries and no histogram, absent. A direction without completions gives 0, as fio
//!   prints 0 for the min, max and mean of no samples (fio prints no percentile then; the
//!   external driver left them out, the native engine gave 0: 0 is kept).
//! - **Kinds and headline**: `*_max` a maximum, `*_p99` a tail, else the direction's default;
//!   each direction's `iops` and `clat_ns_p99` are the headline (the native rule matched names
//!   by suffix, the external one by short name: the same set). CPU shares are shown, never
//!   judged (neutral, `Share`); `elapsed` is in seconds, lower is better.
//! - **Histograms**: a direction's `clat_ns` when its source has one (the native engine always,
//!   even empty; fio only with `json+` and samples), `lat_ns` and `slat_ns` when they hold
//!   values, then `sync_lat_ns` when the source has it (only the native engine does).

use crate::model::{Direction, HistogramRecord, Metric, MetricKind, Unit};
use crate::probe::histogram::Histogram;
use crate::workload::Measurements;

/// fio's directions, in its order, with the names its JSON uses.
pub const DIRECTIONS: [&str; 3] = ["read", "write", "trim"];

/// fio's derived numbers for one direction: (bw_bytes, bw KiB/s, iops), all 0 without runtime.
/// fio prints `bw_bytes` as a 64-bit integer; the metric is [`bytes_per_sec`].
pub fn rates(io_bytes: u64, total_ios: u64, runtime_ms: u64) -> (u64, u64, f64) {
    if runtime_ms == 0 {
        return (0, 0, 0.0);
    }
    let bw_bytes = bytes_per_sec(io_bytes, runtime_ms).min(u64::MAX as u128) as u64;
    (bw_bytes, bw_bytes / 1024, iops(total_ios, runtime_ms))
}

/// fio's `bw_bytes`: `1000 * io_bytes / runtime_ms`, whole bytes/s, 0 without runtime.
pub fn bytes_per_sec(io_bytes: u64, runtime_ms: u64) -> u128 {
    if runtime_ms == 0 {
        0
    } else {
        io_bytes as u128 * 1000 / runtime_ms as u128
    }
}

/// fio's `iops`: `1000.0 * total_ios / runtime_ms`, 0 without runtime.
pub fn iops(total_ios: u64, runtime_ms: u64) -> f64 {
    if runtime_ms == 0 {
        0.0
    } else {
        1000.0 * total_ios as f64 / runtime_ms as f64
    }
}

/// Which directions a run reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reported(pub [bool; 3]);

impl Reported {
    /// The directions the jobs' `rw` modes do (fio's td_read / td_write / td_trim).
    pub fn of(modes: impl IntoIterator<Item = crate::fio::jobfile::RwMode>) -> Reported {
        let mut r = [false; 3];
        for m in modes {
            r[0] |= m.reads();
            r[1] |= m.writes();
            r[2] |= m.trims();
        }
        Reported(r)
    }
}

/// fio's `rw` value as printed in its JSON `job options` (`randread`, `rw`, `readwrite`,
/// `randwrite:8`, ...): the mode before any `:` modifier, or `None` for a name this fio
/// version does not know.
pub fn rw_mode_named(text: &str) -> Option<crate::fio::jobfile::RwMode> {
    use crate::fio::jobfile::RwMode::*;
    let mode = text.split(':').next().unwrap_or(text).trim();
    if mode == "readwrite" {
        return Some(ReadWrite);
    }
    [
        Read,
        Write,
        RandRead,
        RandWrite,
        ReadWrite,
        RandRw,
        Trim,
        RandTrim,
        TrimWrite,
        RandTrimWrite,
    ]
    .into_iter()
    .find(|m| m.as_str() == mode)
}

/// The 50th and 99th percentiles of a histogram with fio's rule (`None` when empty).
pub fn p50_p99(h: &Histogram) -> (Option<u64>, Option<u64>) {
    let p = h.percentiles(&[50.0, 99.0]);
    (p[0], p[1])
}

/// One latency (`slat`, `clat`, `lat`) of a direction, over every merged entry.
#[derive(Clone, Copy, Debug, Default)]
pub struct LatencySummary<'h> {
    /// Values.
    pub count: u64,
    /// Smallest, ns (0 without values).
    pub min: u64,
    /// Largest, ns (0 without values).
    pub max: u64,
    /// Mean, ns (0 without values).
    pub mean: f64,
    /// The 50th percentile, when known.
    pub p50: Option<u64>,
    /// The 99th percentile, when known.
    pub p99: Option<u64>,
    /// The histogram behind the numbers, when the source has one.
    pub histogram: Option<&'h Histogram>,
}

impl<'h> LatencySummary<'h> {
    /// Everything from a histogram (fio's percentile rule).
    pub fn of_histogram(h: &'h Histogram) -> LatencySummary<'h> {
        let (p50, p99) = p50_p99(h);
        LatencySummary {
            count: h.count(),
            min: h.min(),
            max: h.max(),
            mean: h.mean(),
            p50,
            p99,
            histogram: Some(h),
        }
    }

    /// A percentile as stored: known, or 0 without values, or absent.
    fn stored(&self, p: Option<u64>) -> Option<u64> {
        p.or((self.count == 0).then_some(0))
    }
}

/// One direction's numbers, merged over the entries reported together.
#[derive(Clone, Copy, Debug, Default)]
pub struct DirSummary<'h> {
    /// Bytes moved.
    pub io_bytes: u64,
    /// I/Os completed.
    pub total_ios: u64,
    /// The longest runtime with I/O in this direction, ms.
    pub runtime_ms: u64,
    /// Submission latency.
    pub slat: LatencySummary<'h>,
    /// Completion latency.
    pub clat: LatencySummary<'h>,
    /// Total latency.
    pub lat: LatencySummary<'h>,
}

/// What [`measurements`] needs of a run: every reported job merged.
#[derive(Clone, Debug, Default)]
pub struct RunSummary<'h> {
    /// `read`, `write`, `trim` ([`DIRECTIONS`]); `None` for a direction not reported.
    pub dirs: [Option<DirSummary<'h>>; 3],
    /// User CPU time over job runtime, percent.
    pub usr_cpu: f64,
    /// System CPU time over job runtime, percent.
    pub sys_cpu: f64,
    /// The run's elapsed time, seconds.
    pub elapsed_s: f64,
    /// The latency of syncs (fsync every N writes), when the source has it.
    pub sync: Option<&'h Histogram>,
}

/// The kind of a fio metric, from its name and direction.
fn kind_of(name: &str, d: Direction) -> MetricKind {
    if name.ends_with("_max") {
        MetricKind::Max
    } else if name.ends_with("_p99") {
        MetricKind::Tail
    } else {
        MetricKind::default_for(d)
    }
}

/// A fio metric, with its kind and headline role.
fn metric(name: String, v: f64, u: Unit, d: Direction, headline: bool) -> Metric {
    let kind = kind_of(&name, d);
    let m = Metric::new(name, v, u, d).kind(kind);
    if headline { m.headline() } else { m }
}

/// The metrics and histograms of a run (see the module docs for every rule).
pub fn measurements(s: &RunSummary<'_>) -> Measurements {
    let mut m = Measurements::default();
    let hb = Direction::HigherIsBetter;
    let lb = Direction::LowerIsBetter;
    let ns = Unit::Nanoseconds;
    for (dname, d) in DIRECTIONS.iter().zip(&s.dirs) {
        let Some(d) = d else { continue };
        let bw_bytes = bytes_per_sec(d.io_bytes, d.runtime_ms);
        let iops = iops(d.total_ios, d.runtime_ms);
        let mut push = |name: &str, v: f64, u: Unit, dir: Direction| {
            let headline = name == "iops" || name == "clat_ns_p99";
            m.metrics
                .push(metric(format!("{dname}_{name}"), v, u, dir, headline));
        };
        push("iops", iops, Unit::OpsPerSec, hb);
        push("bw_bytes", bw_bytes as f64, Unit::BytesPerSec, hb);
        push(
            "io_kbytes",
            (d.io_bytes >> 10) as f64,
            Unit::KiB,
            Direction::Neutral,
        );
        if let Some(p) = d.clat.stored(d.clat.p50) {
            push("clat_ns_p50", p as f64, ns, lb);
        }
        if let Some(p) = d.clat.stored(d.clat.p99) {
            push("clat_ns_p99", p as f64, ns, lb);
        }
        push("clat_ns_mean", d.clat.mean, ns, lb);
        push("clat_ns_max", d.clat.max as f64, ns, lb);
        push("lat_ns_min", d.lat.min as f64, ns, lb);
        push("lat_ns_max", d.lat.max as f64, ns, lb);
        push("lat_ns_mean", d.lat.mean, ns, lb);
        if let Some(h) = d.clat.histogram {
            m.histograms
                .push(h.to_record(&format!("{dname}_clat_ns"), ns));
        }
        for (what, l) in [("lat_ns", &d.lat), ("slat_ns", &d.slat)] {
            if let Some(h) = l.histogram.filter(|h| h.count() > 0) {
                m.histograms
                    .push(h.to_record(&format!("{dname}_{what}"), ns));
            }
        }
    }
    for (name, v) in [("usr_cpu", s.usr_cpu), ("sys_cpu", s.sys_cpu)] {
        m.metrics
            .push(Metric::new(name, v, Unit::Percent, Direction::Neutral).kind(MetricKind::Share));
    }
    m.metrics.push(metric(
        "elapsed".into(),
        s.elapsed_s,
        Unit::Seconds,
        Direction::LowerIsBetter,
        false,
    ));
    if let Some(h) = s.sync.filter(|h| h.count() > 0) {
        let rec: HistogramRecord = h.to_record("sync_lat_ns", ns);
        m.histograms.push(rec);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::jobfile::RwMode;

    #[test]
    fn rates_are_fios_integer_bandwidth_and_float_iops() {
        assert_eq!(rates(4096 * 3, 3, 7), (1_755_428, 1714, 3000.0 / 7.0));
        assert_eq!(rates(1, 1, 0), (0, 0, 0.0));
        // Past 2^64 / 1000 bytes fio's (and the old native) product wraps; this one does not.
        let big = u64::MAX / 10;
        assert_eq!(rates(big, 1, 1000).0, big);
    }

    #[test]
    fn directions_follow_rw_and_trim_is_its_own() {
        assert_eq!(Reported::of([RwMode::Trim]).0, [false, false, true]);
        assert_eq!(Reported::of([RwMode::TrimWrite]).0, [false, true, true]);
        assert_eq!(
            Reported::of([RwMode::Read, RwMode::RandWrite]).0,
            [true, true, false]
        );
        assert_eq!(rw_mode_named("randread:8"), Some(RwMode::RandRead));
        assert_eq!(rw_mode_named("readwrite"), Some(RwMode::ReadWrite));
        assert_eq!(rw_mode_named("randtrimwrite"), Some(RwMode::RandTrimWrite));
        assert_eq!(rw_mode_named("sideways"), None);
    }

    #[test]
    fn a_direction_without_completions_has_zero_percentiles_and_unknown_ones_are_absent() {
        let empty = DirSummary::default();
        let unknown = DirSummary {
            clat: LatencySummary {
                count: 5,
                ..Default::default()
            },
            ..Default::default()
        };
        let s = RunSummary {
            dirs: [Some(empty), Some(unknown), None],
            ..Default::default()
        };
        let m = measurements(&s);
        let names: Vec<&str> = m.metrics.iter().map(|x| x.name.as_str()).collect();
        assert!(names.contains(&"read_clat_ns_p99") && names.contains(&"read_clat_ns_p50"));
        assert!(!names.contains(&"write_clat_ns_p99") && !names.contains(&"write_clat_ns_p50"));
        assert!(!names.iter().any(|n| n.starts_with("trim_")));
        let heads: Vec<&str> = m
            .metrics
            .iter()
            .filter(|x| x.headline)
            .map(|x| x.name.as_str())
            .collect();
        assert_eq!(heads, ["read_iops", "read_clat_ns_p99", "write_iops"]);
    }
}
