//! The dbench metric catalogue: the one place that says which metrics a dbench run has, their
//! names, units, directions, kinds and headline role.
//!
//! Why: the native engine ([`crate::dbench::DbenchReport`]) and the real dbench's output
//! ([`crate::dbench::external::DbenchOutput`]) must give the same metrics for the same numbers.
//! Each reduces what it has to a plain [`Summary`] (dbench's final table and Throughput line)
//! and [`measurements`] does the rest. This module must never read dbench's output or the
//! engine's stats itself.
//!
//! The rules (dbench 4.00's final table): `throughput_mb_s` (the headline, higher is better),
//! `max_latency_ms` (a maximum), and for every operation class that ran, in table order,
//! `<op>_count` (neutral), `<op>_avg_ms` and `<op>_max_ms` (a maximum), with `<op>` =
//! [`OpClass::metric_stem`], and its `<op>_lat_ns` histogram when the source has one (only the
//! native engine: dbench prints none). The two definitions this replaces were the same rule;
//! the histograms were the only difference, and remain one of data.

use crate::dbench::loadfile::OpClass;
use crate::model::{Direction, Metric, MetricKind, Unit};
use crate::probe::histogram::Histogram;
use crate::workload::Measurements;

/// One row of the final table.
#[derive(Clone, Copy, Debug)]
pub struct OpLine<'h> {
    /// The operation class.
    pub class: OpClass,
    /// Operations completed.
    pub count: u64,
    /// Mean latency, ms.
    pub avg_ms: f64,
    /// Largest latency, ms.
    pub max_ms: f64,
    /// Every latency, ns, when the source has them.
    pub histogram: Option<&'h Histogram>,
}

/// What [`measurements`] needs of a run.
#[derive(Clone, Debug, Default)]
pub struct Summary<'h> {
    /// The Throughput line's MB/s.
    pub throughput_mb_s: f64,
    /// The Throughput line's `max_latency`, ms.
    pub max_latency_ms: f64,
    /// The table's rows, in table order (rows with count 0 are skipped here).
    pub ops: Vec<OpLine<'h>>,
}

/// The metrics and histograms of a run (see the module docs).
pub fn measurements(s: &Summary<'_>) -> Measurements {
    let mut m = Measurements::default();
    m.metrics.push(
        Metric::new(
            "throughput_mb_s",
            s.throughput_mb_s,
            Unit::MBPerSec,
            Direction::HigherIsBetter,
        )
        .headline(),
    );
    m.metrics.push(
        Metric::new(
            "max_latency_ms",
            s.max_latency_ms,
            Unit::Milliseconds,
            Direction::LowerIsBetter,
        )
        .kind(MetricKind::Max),
    );
    for op in s.ops.iter().filter(|o| o.count > 0) {
        let stem = op.class.metric_stem();
        m.metrics.push(Metric::new(
            format!("{stem}_count"),
            op.count as f64,
            Unit::Count,
            Direction::Neutral,
        ));
        m.metrics.push(Metric::new(
            format!("{stem}_avg_ms"),
            op.avg_ms,
            Unit::Milliseconds,
            Direction::LowerIsBetter,
        ));
        m.metrics.push(
            Metric::new(
                format!("{stem}_max_ms"),
                op.max_ms,
                Unit::Milliseconds,
                Direction::LowerIsBetter,
            )
            .kind(MetricKind::Max),
        );
        if let Some(h) = op.histogram {
            m.histograms
                .push(h.to_record(&format!("{stem}_lat_ns"), Unit::Nanoseconds));
        }
    }
    m
}
