//! Which changes are real: grouping the samples of a run set by (configuration, test, metric),
//! pairing two run sets, and (statistics.md) verdicts.
//!
//! Why a room of its own: comparison is pure arithmetic on stored records; it must never do I/O of
//! any kind, so that it can be tested exhaustively and reused by `compare`, `run --baseline` and
//! `report`. It takes what `read` gathered (never a store) and owns the judged rows
//! ([`judge::Judged`]) that `report` renders.

pub mod changepoint;
pub mod context;
pub mod curve;
pub mod history;
pub mod judge;
pub mod many;
pub mod power;
pub mod profile;
pub mod stats;
pub mod verdict;

#[cfg(test)]
mod simulation;

use crate::model::SampleRecord;
use crate::model::{Direction, MetricKind, SampleStatus, Unit};
use serde::Serialize;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::collections::hash_map::Entry;

/// What a comparison looks at and how it judges, resolved once from the command line, a suite
/// file or a fleet job: no caller's argument types reach the comparison.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Criteria {
    /// Only these tests (all when empty).
    pub tests: Vec<String>,
    /// Only these configurations (all when empty).
    pub configs: Vec<String>,
    /// Only these metrics (all when empty).
    pub metrics: Vec<String>,
    /// The verdict margins, as fractions.
    pub margins: verdict::Margins,
    /// Which verdicts set the exit code.
    pub gate: verdict::Gate,
    /// The current side's machine's drift between runs per (configuration, test, metric), from
    /// its calibration (`fsdelta calibrate`): counted in the verdict of a metric whose sides are
    /// different runs ([`verdict::compare_between`]). Empty: none counted.
    pub drift: Drifts,
}

/// The drift between runs of a machine per (configuration, test, metric).
pub type Drifts = BTreeMap<SeriesKey, power::BetweenRuns>;

/// Key of a metric series: configuration, test, metric name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SeriesKey {
    /// Configuration name.
    pub config: String,
    /// Test name.
    pub test: String,
    /// Metric name.
    pub metric: String,
}

/// Every value of one metric over the successful samples of a run set.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    /// What it is.
    pub key: SeriesKey,
    /// Unit of the values.
    pub unit: Unit,
    /// Which way is better.
    pub direction: Direction,
    /// What kind of number, as the workload declared.
    pub kind: MetricKind,
    /// A headline metric of its workload.
    pub headline: bool,
    /// Values in sample order.
    pub values: Vec<f64>,
    /// Position of the metric in its workload's output (for stable display order).
    pub order: usize,
}

impl Series {
    /// Number of values.
    pub fn n(&self) -> usize {
        self.values.len()
    }

    /// Arithmetic mean.
    pub fn mean(&self) -> f64 {
        if self.values.is_empty() {
            return f64::NAN;
        }
        self.values.iter().sum::<f64>() / self.values.len() as f64
    }

    /// Smallest value.
    pub fn min(&self) -> f64 {
        self.values.iter().copied().fold(f64::INFINITY, f64::min)
    }

    /// Largest value.
    pub fn max(&self) -> f64 {
        self.values
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// Sample standard deviation (n - 1); 0 with one value.
    pub fn stddev(&self) -> f64 {
        let n = self.values.len();
        if n < 2 {
            return 0.0;
        }
        let m = self.mean();
        (self.values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (n - 1) as f64).sqrt()
    }
}

/// Group the successful samples' metrics into series, ordered by configuration, test (in the
/// order tests first appear), then the metric's order within its workload. Failed samples are
/// left out: their numbers are not measurements.
pub fn series(samples: &[&SampleRecord]) -> Vec<Series> {
    // Keyed by borrowed names: a key's strings are copied once, when its series starts, not
    // for every metric row (this was most of `compare`'s and `report`'s own time on large
    // stores). The order is the one a sort by (configuration, test order, position, metric
    // name) gives, which is what grouping by the owned key and a stable sort gave before.
    let mut test_order: HashMap<(&str, &str), usize> = HashMap::new();
    let mut index: HashMap<(&str, &str, &str), usize> = HashMap::new();
    let mut out: Vec<(usize, Series)> = Vec::new();
    for s in samples {
        let (config, test) = (s.sample.config.as_str(), s.sample.test.as_str());
        let next = test_order.len();
        let t = *test_order.entry((config, test)).or_insert(next);
        if s.sample.status != SampleStatus::Ok {
            continue;
        }
        for (i, m) in s.sample.metrics.iter().enumerate() {
            match index.entry((config, test, m.name.as_str())) {
                Entry::Occupied(e) => out[*e.get()].1.values.push(m.value),
                Entry::Vacant(e) => {
                    e.insert(out.len());
                    out.push((
                        t,
                        Series {
                            key: SeriesKey {
                                config: config.to_string(),
                                test: test.to_string(),
                                metric: m.name.clone(),
                            },
                            unit: m.unit,
                            direction: m.direction,
                            kind: m.kind,
                            headline: m.headline,
                            values: vec![m.value],
                            order: i,
                        },
                    ));
                }
            }
        }
    }
    out.sort_unstable_by(|(ta, a), (tb, b)| {
        a.key
            .config
            .cmp(&b.key.config)
            .then(ta.cmp(tb))
            .then(a.order.cmp(&b.order))
            .then_with(|| a.key.metric.cmp(&b.key.metric))
    });
    out.into_iter().map(|(_, s)| s).collect()
}

/// One metric of two run sets side by side.
#[derive(Clone, Debug, Serialize)]
pub struct Paired {
    /// Configuration, test, metric (the current side's configuration when comparing across).
    pub key: SeriesKey,
    /// Unit.
    pub unit: Unit,
    /// Direction.
    pub direction: Direction,
    /// Kind, as the workload declared.
    pub kind: MetricKind,
    /// A headline metric of its workload.
    pub headline: bool,
    /// Baseline values (empty when only the current side has the metric).
    pub base: Vec<f64>,
    /// Current values (empty when only the baseline has it).
    pub cur: Vec<f64>,
    /// Position for display order.
    order: (usize, usize),
}

impl Paired {
    /// Mean of the baseline values.
    pub fn base_mean(&self) -> f64 {
        mean(&self.base)
    }
    /// Mean of the current values.
    pub fn cur_mean(&self) -> f64 {
        mean(&self.cur)
    }
    /// Difference of the means in percent of the baseline mean (fsperf's "diff"); NaN when a
    /// side is missing or the baseline mean is 0.
    pub fn diff_pct(&self) -> f64 {
        let b = self.base_mean();
        let c = self.cur_mean();
        if b == 0.0 || b.is_nan() || c.is_nan() {
            f64::NAN
        } else {
            100.0 * (c - b) / b
        }
    }
    /// Whether the change is in the bad direction (for marking); None for neutral metrics or a
    /// missing side.
    pub fn is_worse(&self) -> Option<bool> {
        let d = self.diff_pct();
        if d.is_nan() || d == 0.0 {
            return None;
        }
        match self.direction {
            Direction::HigherIsBetter => Some(d < 0.0),
            Direction::LowerIsBetter => Some(d > 0.0),
            Direction::Neutral => None,
        }
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Pair two run sets by (configuration, test, metric). When `across_configs` is true the
/// configuration is ignored for pairing (two configurations side by side) and the key carries
/// `"<base config> vs <cur config>"`.
pub fn pair(base: &[Series], cur: &[Series], across_configs: bool) -> Vec<Paired> {
    let k = |s: &Series| {
        if across_configs {
            (String::new(), s.key.test.clone(), s.key.metric.clone())
        } else {
            (
                s.key.config.clone(),
                s.key.test.clone(),
                s.key.metric.clone(),
            )
        }
    };
    let mut out: BTreeMap<(String, String, String), Paired> = BTreeMap::new();
    for (i, s) in cur.iter().enumerate() {
        out.insert(
            k(s),
            Paired {
                key: s.key.clone(),
                unit: s.unit,
                direction: s.direction,
                kind: s.kind,
                headline: s.headline,
                base: Vec::new(),
                cur: s.values.clone(),
                order: (i, 0),
            },
        );
    }
    for (i, s) in base.iter().enumerate() {
        match out.get_mut(&k(s)) {
            Some(p) => {
                p.base = s.values.clone();
                if across_configs {
                    p.key.config = format!("{} vs {}", s.key.config, p.key.config);
                }
            }
            None => {
                out.insert(
                    k(s),
                    Paired {
                        key: s.key.clone(),
                        unit: s.unit,
                        direction: s.direction,
                        kind: s.kind,
                        headline: s.headline,
                        base: s.values.clone(),
                        cur: Vec::new(),
                        order: (usize::MAX, i),
                    },
                );
            }
        }
    }
    let mut v: Vec<Paired> = out.into_values().collect();
    v.sort_by_key(|p| p.order);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NewSample;
    use crate::model::{Metric, SiteFacts};

    fn rec(test: &str, status: SampleStatus, metrics: &[(&str, f64)]) -> SampleRecord {
        SampleRecord {
            id: 1,
            run_id: 1,
            sample: NewSample {
                config: "scratch".into(),
                test: test.into(),
                repetition: 1,
                sequence: 0,
                facts: SiteFacts::default(),
                status,
                error: None,
                started_at: chrono::Utc::now(),
                duration_s: 1.0,
                workload: String::new(),
                metrics: metrics
                    .iter()
                    .map(|(n, v)| Metric::new(*n, *v, Unit::FilesPerSec, Direction::HigherIsBetter))
                    .collect(),
                histograms: vec![],
                attachments: Vec::new(),
            },
        }
    }

    #[test]
    fn series_skip_failed_samples_and_keep_workload_order() {
        let a = rec("b", SampleStatus::Ok, &[("z", 1.0), ("a", 2.0)]);
        let b = rec("b", SampleStatus::Ok, &[("z", 3.0), ("a", 4.0)]);
        let c = rec("b", SampleStatus::Failed, &[("z", 100.0)]);
        let d = rec("a", SampleStatus::Ok, &[("x", 5.0)]);
        let s = series(&[&a, &b, &c, &d]);
        let names: Vec<_> = s
            .iter()
            .map(|s| format!("{}/{}", s.key.test, s.key.metric))
            .collect();
        assert_eq!(names, ["b/z", "b/a", "a/x"]);
        assert_eq!(s[0].values, vec![1.0, 3.0]);
        assert_eq!(s[0].mean(), 2.0);
        assert_eq!(s[0].min(), 1.0);
        assert_eq!(s[0].max(), 3.0);
        assert!((s[0].stddev() - std::f64::consts::SQRT_2).abs() < 1e-12);
    }

    #[test]
    fn pairing_computes_fsperf_diffs_and_keeps_one_sided_metrics() {
        let b1 = rec("t", SampleStatus::Ok, &[("rate", 100.0), ("old", 1.0)]);
        let c1 = rec("t", SampleStatus::Ok, &[("rate", 90.0), ("new", 1.0)]);
        let p = pair(&series(&[&b1]), &series(&[&c1]), false);
        assert_eq!(p.len(), 3);
        let rate = p.iter().find(|p| p.key.metric == "rate").unwrap();
        assert!((rate.diff_pct() - -10.0).abs() < 1e-12);
        assert_eq!(rate.is_worse(), Some(true));
        let new = p.iter().find(|p| p.key.metric == "new").unwrap();
        assert!(new.base.is_empty() && new.diff_pct().is_nan());
    }
}
