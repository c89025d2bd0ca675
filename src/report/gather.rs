//! Everything the HTML report shows, gathered from the store: both sides' runs and target facts,
//! the judged metrics, each metric's history with its change points (over the newest
//! [`HISTORY_RUNS`] runs), latency percentile curves from the stored histograms, and flame
//! graphs of the profiled tests. The result is a [`ReportInput`] for the pure renderer
//! [`crate::report::html::render`].
//!
//! Why a file of its own: the renderer never reads the store, and the command line never
//! gathers. This file reads the store and calls the rooms that judge (`compare`) and read
//! histograms (`probe::histogram`); it must never format HTML itself.

use crate::compare::changepoint::{self, Options};
use crate::compare::verdict::{self, MetricClass};
use crate::compare::{self, SeriesKey};
use crate::model::{RunId, RunInfo, RunStatus, SampleRecord, SampleStatus, SiteFacts, Unit};
use crate::probe::histogram::Histogram;
use crate::report::html::{
    ConfigFacts, Curve, History, HistoryPoint, MIN_HISTORY, MetricInput, PercentileCurves,
    ReportInput, Role, SideInput, WorkloadLines,
};
use crate::report::{self, compare::Judged};
use crate::store::{RunFilter, Store, StoreError};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

/// At most this many of the newest runs make a metric's history.
pub const HISTORY_RUNS: usize = 500;

/// Why a report cannot be gathered.
#[derive(Debug, thiserror::Error)]
pub enum GatherError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Nothing matches the filters.
    #[error("{0}")]
    Nothing(String),
}

/// One side of a report: how its selection is described, its runs, and its samples that pass
/// the filters.
pub struct Side {
    /// `latest (run 4, label x)`.
    pub description: String,
    /// Its runs.
    pub runs: Vec<RunInfo>,
    /// Its samples that pass the filters.
    pub samples: Vec<SampleRecord>,
}

/// How a sample's configuration is named in the report: as stored, or `A vs B` when two
/// configurations are put side by side (SEL@A vs SEL@B), as `compare` names the pair.
pub struct Naming {
    across: Option<String>,
}

impl Naming {
    /// The naming of a comparison of `b` and `c` whose selectors took the configurations
    /// `bc` and `cc` (`SEL@CONFIG`).
    pub fn new(bc: Option<&str>, cc: Option<&str>, b: &Side, c: &Side) -> Naming {
        let configs = |l: &Side| -> BTreeSet<String> {
            l.samples.iter().map(|s| s.sample.config.clone()).collect()
        };
        let (bs, cs) = (configs(b), configs(c));
        let across = (bc.is_some() || cc.is_some()) && bc != cc && bs.len() == 1 && cs.len() == 1;
        Naming {
            across: across.then(|| {
                format!(
                    "{} vs {}",
                    bs.iter().next().map_or("", |s| s.as_str()),
                    cs.iter().next().map_or("", |s| s.as_str())
                )
            }),
        }
    }

    fn name(&self, config: &str) -> String {
        self.across.clone().unwrap_or_else(|| config.to_string())
    }
}

/// The report of a comparison: `rows` are the judged metrics of `b` against `c`, `text_table`
/// the text `compare` prints for them.
pub fn comparison(
    store: &dyn Store,
    b: Side,
    c: Side,
    naming: &Naming,
    rows: Vec<Judged>,
    text_table: String,
) -> Result<ReportInput, GatherError> {
    let comparisons: Vec<_> = rows.iter().map(|j| j.comparison.clone()).collect();
    let summary = verdict::summarize(&comparisons);
    let machine_warnings = {
        let bs: Vec<&SampleRecord> = b.samples.iter().collect();
        let cs: Vec<&SampleRecord> = c.samples.iter().collect();
        let side = |runs, samples| compare::context::SideData { runs, samples };
        compare::context::context(
            &side(&b.runs, &bs),
            &side(&c.runs, &cs),
            naming.across.is_some(),
        )
        .warnings
    };
    // The history of `A vs B` rows is the current configuration's.
    let cur_config = |key: &SeriesKey| -> String {
        if naming.across.is_some() {
            c.samples
                .first()
                .map_or(key.config.clone(), |s| s.sample.config.clone())
        } else {
            key.config.clone()
        }
    };
    let mut metrics: Vec<MetricInput> = rows
        .into_iter()
        .map(|j: Judged| MetricInput {
            direction: j.comparison.direction,
            kind: j.kind,
            headline: j.headline,
            key: j.key,
            unit: j.unit,
            baseline_values: j.baseline_values,
            current_values: j.current_values,
            comparison: Some(j.comparison),
            history: None,
        })
        .collect();
    let ids = |l: &Side| -> Vec<RunId> { l.runs.iter().map(|r| r.id).collect() };
    attach_histories(store, &mut metrics, &ids(&b), &ids(&c), cur_config)?;
    Ok(ReportInput {
        generator: generator(),
        configs: configs(Some(&b.samples), &c.samples, naming),
        workloads: workloads(Some(&b.samples), &c.samples, naming),
        curves: curves(Some(&b.samples), &c.samples, naming, &metrics),
        flamegraphs: flamegraphs(store, &b.samples, &c.samples, naming, &metrics),
        iterations: report::iterations::tables(
            store,
            &b.samples,
            &c.samples,
            &|c| naming.name(c),
            &metrics,
        ),
        fio_logs: crate::fio::logs::charts(
            store,
            &b.samples,
            &c.samples,
            &|c| naming.name(c),
            &metrics,
        ),
        baseline: Some(SideInput {
            description: b.description,
            runs: b.runs,
        }),
        current: SideInput {
            description: c.description,
            runs: c.runs,
        },
        metrics,
        summary: Some(summary),
        text_table,
        machine_warnings,
    })
}

/// The report of one selection `l` (called `sel`), its metrics limited to `only_metrics` when
/// that is not empty.
pub fn single(
    store: &dyn Store,
    sel: &str,
    l: Side,
    only_metrics: &[String],
) -> Result<ReportInput, GatherError> {
    if l.samples.is_empty() {
        return Err(GatherError::Nothing(format!(
            "nothing to report: {sel} has no matching samples; check --test/--config against `fsdelta show {sel}`"
        )));
    }
    let refs: Vec<&SampleRecord> = l.samples.iter().collect();
    let series = compare::series(&refs);
    let mut metrics: Vec<MetricInput> = series
        .iter()
        .filter(|s| only_metrics.is_empty() || only_metrics.contains(&s.key.metric))
        .map(|s| MetricInput {
            key: s.key.clone(),
            unit: s.unit,
            direction: s.direction,
            kind: s.kind,
            headline: s.headline,
            baseline_values: Vec::new(),
            current_values: s.values.clone(),
            comparison: None,
            history: None,
        })
        .collect();
    if metrics.is_empty() {
        return Err(GatherError::Nothing(format!(
            "no metric of {sel} matches --metric; see `fsdelta show {sel}`"
        )));
    }
    let mut text_table = String::new();
    for r in &l.runs {
        text_table.push_str(&report::text::run_header(r));
    }
    text_table.push_str(&report::text::targets(&refs));
    text_table.push_str(&report::text::workloads(&refs));
    text_table.push('\n');
    text_table.push_str(&report::text::run_summary(&series));
    let ids: Vec<RunId> = l.runs.iter().map(|r| r.id).collect();
    attach_histories(store, &mut metrics, &[], &ids, |k| k.config.clone())?;
    let naming = Naming { across: None };
    Ok(ReportInput {
        generator: generator(),
        configs: configs(None, &l.samples, &naming),
        workloads: workloads(None, &l.samples, &naming),
        curves: curves(None, &l.samples, &naming, &metrics),
        baseline: None,
        current: SideInput {
            description: l.description,
            runs: l.runs,
        },
        flamegraphs: flamegraphs(store, &[], &l.samples, &naming, &metrics),
        iterations: report::iterations::tables(store, &[], &l.samples, &|c| c.into(), &metrics),
        fio_logs: crate::fio::logs::charts(store, &[], &l.samples, &|c| c.into(), &metrics),
        metrics,
        summary: None,
        text_table,
        machine_warnings: Vec::new(),
    })
}

/// Flame graphs of every test that has stored profiles: for a comparison only the tests with a
/// regressed or improved metric (per side and differential), for a single selection every
/// profiled test. Profiles that cannot be read are left out (the rest of the report stands).
fn flamegraphs(
    store: &dyn Store,
    base: &[SampleRecord],
    cur: &[SampleRecord],
    naming: &Naming,
    metrics: &[MetricInput],
) -> Vec<report::html::FlameGraphs> {
    use crate::probe::profile::Profile;
    let mut keys: Vec<(String, String)> = Vec::new();
    for s in cur.iter().chain(base) {
        let k = (naming.name(&s.sample.config), s.sample.test.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let merged = |samples: &[SampleRecord], config: &str, test: &str| -> Option<Profile> {
        let mut p: Option<Profile> = None;
        for s in samples
            .iter()
            .filter(|s| naming.name(&s.sample.config) == config && s.sample.test == test)
        {
            if let Ok(Some(stored)) = store.profile(s.id)
                && let Ok(one) = Profile::decode(&stored)
            {
                match &mut p {
                    Some(p) => p.merge(&one),
                    None => p = Some(one),
                }
            }
        }
        p.filter(|p| !p.is_empty())
    };
    let mut out = Vec::new();
    for (config, test) in keys {
        let changed = metrics.iter().any(|m| {
            m.key.config == config
                && m.key.test == test
                && m.comparison.as_ref().is_some_and(|c| {
                    matches!(
                        c.verdict,
                        verdict::Verdict::Regressed | verdict::Verdict::Improved
                    )
                })
        });
        let single = base.is_empty();
        if !single && !changed {
            continue;
        }
        let b = if single {
            None
        } else {
            merged(base, &config, &test)
        };
        let c = merged(cur, &config, &test);
        if b.is_none() && c.is_none() {
            continue;
        }
        let title = |side: &str| format!("{test} on {config}: {side}");
        out.push(report::html::FlameGraphs {
            baseline: b
                .as_ref()
                .and_then(|p| report::profile::flamegraph_svg(p, &title("baseline")).ok()),
            current: c
                .as_ref()
                .and_then(|p| report::profile::flamegraph_svg(p, &title("current")).ok()),
            differential: match (&b, &c) {
                (Some(b), Some(c)) => {
                    report::profile::differential_svg(b, c, &title("differential")).ok()
                }
                _ => None,
            },
            config,
            test,
        });
    }
    out
}

fn generator() -> String {
    format!("fsdelta {}", env!("CARGO_PKG_VERSION"))
}

/// Per configuration (as named in the report), the distinct target facts of each side; the
/// sample's own directory is left out (it differs per repetition and says nothing).
fn configs(
    base: Option<&[SampleRecord]>,
    cur: &[SampleRecord],
    naming: &Naming,
) -> Vec<ConfigFacts> {
    let mut out: Vec<ConfigFacts> = Vec::new();
    let mut add = |s: &SampleRecord, is_base: bool| {
        let name = naming.name(&s.sample.config);
        let facts = SiteFacts {
            path: String::new(),
            ..s.sample.facts.clone()
        };
        let i = match out.iter().position(|c| c.name == name) {
            Some(i) => i,
            None => {
                out.push(ConfigFacts {
                    name,
                    baseline: Vec::new(),
                    current: Vec::new(),
                });
                out.len() - 1
            }
        };
        let list = if is_base {
            &mut out[i].baseline
        } else {
            &mut out[i].current
        };
        if !list.contains(&facts) {
            list.push(facts);
        }
    };
    for s in base.unwrap_or_default() {
        add(s, true);
    }
    for s in cur {
        add(s, false);
    }
    out
}

/// Per configuration and test, the distinct workload command lines of each side.
fn workloads(
    base: Option<&[SampleRecord]>,
    cur: &[SampleRecord],
    naming: &Naming,
) -> Vec<WorkloadLines> {
    let mut out: Vec<WorkloadLines> = Vec::new();
    let sides = [(base.unwrap_or_default(), true), (cur, false)];
    for (samples, is_base) in sides {
        for s in samples {
            let config = naming.name(&s.sample.config);
            let i = match out
                .iter()
                .position(|w| w.config == config && w.test == s.sample.test)
            {
                Some(i) => i,
                None => {
                    out.push(WorkloadLines {
                        config,
                        test: s.sample.test.clone(),
                        baseline: Vec::new(),
                        current: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            let list = if is_base {
                &mut out[i].baseline
            } else {
                &mut out[i].current
            };
            if !list.contains(&s.sample.workload) {
                list.push(s.sample.workload.clone());
            }
        }
    }
    out
}

/// Every metric's history: one point per stored run that has it (the median of its
/// repetitions), in run order, over the newest [`HISTORY_RUNS`] runs that have ended; with at
/// least [`MIN_HISTORY`] points, the change points and segments of `compare::changepoint`.
fn attach_histories(
    store: &dyn Store,
    metrics: &mut [MetricInput],
    base_ids: &[RunId],
    cur_ids: &[RunId],
    history_config: impl Fn(&SeriesKey) -> String,
) -> Result<(), StoreError> {
    let wanted: BTreeMap<(String, String, String), Vec<usize>> = {
        let mut m: BTreeMap<_, Vec<usize>> = BTreeMap::new();
        for (i, metric) in metrics.iter().enumerate() {
            let k = (
                history_config(&metric.key),
                metric.key.test.clone(),
                metric.key.metric.clone(),
            );
            m.entry(k).or_default().push(i);
        }
        m
    };
    let mut runs: Vec<RunInfo> = store.runs(&RunFilter {
        label: None,
        limit: Some(HISTORY_RUNS),
    })?;
    runs.retain(|r| {
        r.status != RunStatus::Running || base_ids.contains(&r.id) || cur_ids.contains(&r.id)
    });
    runs.sort_by_key(|r| r.id);
    let keys: Vec<&(String, String, String)> = wanted.keys().collect();
    // config -> test -> metric -> index into `keys`: looked up with the borrowed names of a
    // row, so no string is made per row (a run's medians: 468 rows a run of the quick suite).
    let mut lookup: HashMap<&str, HashMap<&str, HashMap<&str, usize>>> = HashMap::new();
    for (i, (config, test, metric)) in keys.iter().enumerate() {
        lookup
            .entry(config.as_str())
            .or_default()
            .entry(test.as_str())
            .or_default()
            .insert(metric.as_str(), i);
    }
    let about: HashMap<RunId, (Rc<str>, Role)> = runs
        .iter()
        .map(|r| {
            let role = if cur_ids.contains(&r.id) {
                Role::Current
            } else if base_ids.contains(&r.id) {
                Role::Baseline
            } else {
                Role::Other
            };
            (r.id, (Rc::from(r.label.as_str()), role))
        })
        .collect();
    let mut points: Vec<Vec<HistoryPoint>> = vec![Vec::new(); keys.len()];
    let ids: Vec<RunId> = runs.iter().map(|r| r.id).collect();
    // One row per run, configuration, test and metric, in run order: each run's median of
    // its repetitions, as the store keeps it.
    store.run_medians(&ids, &mut |m| {
        let Some(&k) = lookup
            .get(m.config)
            .and_then(|t| t.get(m.test))
            .and_then(|t| t.get(m.metric))
        else {
            return;
        };
        let Some((label, role)) = about.get(&m.run) else {
            return;
        };
        points[k].push(HistoryPoint {
            run_id: m.run,
            label: label.clone(),
            median: m.median,
            n: m.n,
            role: *role,
        });
    })?;
    let points = keys.iter().zip(points);
    for (key, pts) in points {
        if pts.len() < MIN_HISTORY {
            continue;
        }
        let values: Vec<f64> = pts.iter().map(|p| p.median).collect();
        for &i in &wanted[*key] {
            let class = metrics[i]
                .comparison
                .as_ref()
                .map_or_else(|| MetricClass::of(metrics[i].kind), |c| c.class);
            let options = Options::for_class(class);
            let (change_points, _) = compare::history::detect(&values, &options);
            let segments = changepoint::segments(&values, &change_points);
            metrics[i].history = Some(History {
                points: pts.clone(),
                change_points,
                segments,
                scale: options.scale,
            });
        }
    }
    Ok(())
}

/// Percentiles at which a curve is read: a geometric grid of the tail fraction 1 - p (16 points
/// a decade) from p = 1 %, plus every "nines" percentile, as far as `count` values resolve.
fn percentile_grid(count: u64) -> Vec<f64> {
    let n = count as f64;
    let mut ps: Vec<f64> = Vec::new();
    for k in 0.. {
        let q = 0.99 * 10f64.powf(-(k as f64) / 16.0);
        if q * n < 1.0 {
            break;
        }
        ps.push(100.0 * (1.0 - q));
    }
    let mut q: f64 = 0.5;
    while q * n >= 1.0 {
        ps.push(100.0 * (1.0 - q));
        q = if q == 0.5 { 0.1 } else { q / 10.0 };
    }
    // 100 (1 - 0.99) is 1.0000000000000009: keep nine decimals.
    for p in &mut ps {
        *p = (*p * 1e9).round() / 1e9;
    }
    ps.sort_by(f64::total_cmp);
    ps.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
    ps
}

fn curve(h: &Histogram) -> Curve {
    let ps = percentile_grid(h.count());
    let values = h.percentiles(&ps);
    Curve {
        count: h.count(),
        points: ps
            .iter()
            .zip(values)
            .filter_map(|(p, v)| v.map(|v| (*p, v as f64)))
            .collect(),
        max: h.max() as f64,
    }
}

/// Per configuration, test and histogram, the percentile curve of each side: the histograms of
/// every successful repetition merged. Only for tests that have a metric in the report.
fn curves(
    base: Option<&[SampleRecord]>,
    cur: &[SampleRecord],
    naming: &Naming,
    metrics: &[MetricInput],
) -> Vec<PercentileCurves> {
    type Merged = (
        String,
        String,
        String,
        Unit,
        Option<Histogram>,
        Option<Histogram>,
    );
    let mut merged: Vec<Merged> = Vec::new();
    let sides = [(base.unwrap_or_default(), true), (cur, false)];
    for (samples, is_base) in sides {
        for s in samples
            .iter()
            .filter(|s| s.sample.status == SampleStatus::Ok)
        {
            let config = naming.name(&s.sample.config);
            if !metrics
                .iter()
                .any(|m| m.key.config == config && m.key.test == s.sample.test)
            {
                continue;
            }
            for rec in &s.sample.histograms {
                let h = match Histogram::from_record(rec) {
                    Ok(h) => h,
                    Err(e) => {
                        eprintln!("fsdelta: leaving a histogram out of the report: {e}");
                        continue;
                    }
                };
                let i = match merged
                    .iter()
                    .position(|m| m.0 == config && m.1 == s.sample.test && m.2 == rec.name)
                {
                    Some(i) => i,
                    None => {
                        merged.push((
                            config.clone(),
                            s.sample.test.clone(),
                            rec.name.clone(),
                            rec.unit,
                            None,
                            None,
                        ));
                        merged.len() - 1
                    }
                };
                let slot = if is_base {
                    &mut merged[i].4
                } else {
                    &mut merged[i].5
                };
                match slot {
                    Some(acc) => acc.merge(&h),
                    None => *slot = Some(h),
                }
            }
        }
    }
    // In the order of the report's metrics.
    let order = |m: &Merged| {
        metrics
            .iter()
            .position(|x| x.key.config == m.0 && x.key.test == m.1)
            .unwrap_or(usize::MAX)
    };
    merged.sort_by_key(|m| order(m));
    merged
        .into_iter()
        .map(|(config, test, name, unit, b, c)| PercentileCurves {
            config,
            test,
            name,
            unit,
            baseline: b.as_ref().map(curve),
            current: c.as_ref().map(curve),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_grid_stops_where_the_values_run_out() {
        let g = percentile_grid(1000);
        assert!(g.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(g[0], 1.0);
        for p in [50.0, 90.0, 99.0, 99.9] {
            assert!(g.iter().any(|x| (x - p).abs() < 1e-9), "{p} missing");
        }
        // 1000 values resolve p99.9 (one value beyond it) but not p99.99.
        assert!(*g.last().unwrap() <= 99.9 + 1e-9);
        assert!(percentile_grid(0).is_empty());
    }

    #[test]
    fn curves_read_merged_histograms() {
        let mut h = Histogram::new();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let c = curve(&h);
        assert_eq!(c.count, 1000);
        assert_eq!(c.max, 1_000_000.0);
        let p50 = c.points.iter().find(|(p, _)| *p == 50.0).unwrap().1;
        // fio's buckets are within 1/128 of the value.
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.01, "{p50}");
    }
}
