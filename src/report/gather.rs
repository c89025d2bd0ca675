//! Everything the HTML report shows, assembled from what `read` gathered and `compare` judged:
//! both sides' runs and target facts, the judged metrics, each metric's history with its change
//! points (over the newest [`HISTORY_RUNS`] runs), latency percentile curves from the stored
//! histograms, flame graphs of the profiled tests, fs_mark's per-iteration rows and fio's logs.
//! The result is a [`ReportInput`] for the pure renderer [`crate::report::html::render`].
//!
//! Why a file of its own: the renderer never assembles and the command line never decides what
//! a report holds. The steps: [`compared_metrics`] or [`single_metrics`] list the metrics;
//! [`Request::new`] names what else to read for them (which medians, which tests' profiles,
//! which sections' attachments), which the edge hands to `read::extras::read`; [`comparison`]
//! or [`single`] assemble the input from the values read. This file never sees a store, and it
//! must never format HTML itself.

use crate::compare::changepoint::{self, Options};
use crate::compare::judge::Judged;
use crate::compare::verdict::{self, MetricClass};
use crate::compare::{self, SeriesKey};
use crate::model::{RunId, RunInfo, SampleRecord, SampleStatus, SiteFacts, Unit};
use crate::probe::histogram::Histogram;
use crate::read::extras::{Extras, Median, Wanted};
pub use crate::read::{Side, extras::HISTORY_RUNS};
use crate::report::html::{
    ConfigFacts, Curve, History, HistoryPoint, MIN_HISTORY, MetricInput, PercentileCurves,
    ReportInput, Role, SideInput, WorkloadLines,
};
use crate::report::{self};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

/// Why a report cannot be gathered.
#[derive(Debug, thiserror::Error)]
pub enum GatherError {
    /// Nothing matches the filters.
    #[error("{0}")]
    Nothing(String),
}

/// How a sample's configuration is named in the report: as stored, or `A vs B` when two
/// configurations are put side by side (SEL@A vs SEL@B), as `compare` names the pair.
pub struct Naming {
    across: Option<String>,
    /// The current side's configuration, whose history an `A vs B` row shows.
    cur_config: Option<String>,
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
            cur_config: c.samples.first().map(|s| s.sample.config.clone()),
        }
    }

    /// The naming of a single selection: configurations as stored.
    pub fn single() -> Naming {
        Naming {
            across: None,
            cur_config: None,
        }
    }

    /// A configuration as the report names it.
    pub fn name(&self, config: &str) -> String {
        self.across.clone().unwrap_or_else(|| config.to_string())
    }

    /// The configuration whose history a row shows: an `A vs B` row's is the current side's.
    fn history_config(&self, key: &SeriesKey) -> String {
        match (&self.across, &self.cur_config) {
            (Some(_), Some(c)) => c.clone(),
            _ => key.config.clone(),
        }
    }
}

/// The metrics of a comparison: its judged rows.
pub fn compared_metrics(rows: Vec<Judged>) -> Vec<MetricInput> {
    rows.into_iter()
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
        .collect()
}

/// The metrics of one selection `l` (called `sel`), limited to `only_metrics` when that is not
/// empty.
pub fn single_metrics(
    sel: &str,
    l: &Side,
    only_metrics: &[String],
) -> Result<Vec<MetricInput>, GatherError> {
    if l.samples.is_empty() {
        return Err(GatherError::Nothing(format!(
            "nothing to report: {sel} has no matching samples; check --test/--config against `fsdelta show {sel}`"
        )));
    }
    let refs: Vec<&SampleRecord> = l.samples.iter().collect();
    let metrics: Vec<MetricInput> = compare::series(&refs)
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
    Ok(metrics)
}

/// What a report of `metrics` needs read beyond its sides' samples.
pub struct Request {
    /// (history configuration, test, metric) -> the metrics that show that history.
    histories: BTreeMap<(String, String, String), Vec<usize>>,
    /// (configuration as named, test) whose profiles make flame graphs.
    profiles: Vec<(String, String)>,
    /// (configuration as named, test) that have a section.
    sections: Vec<(String, String)>,
    /// Flame graphs with one root per program (the default) or per thread (`--per-thread`).
    pub threads: report::profile::Threads,
}

impl Request {
    /// For a comparison of `base` with `cur` (`base` empty for a single selection): every
    /// metric's history; flame graphs of every test of a single selection, of a comparison
    /// only the tests with a regressed or improved metric; attachments of the tests that have
    /// a section.
    pub fn new(
        metrics: &[MetricInput],
        base: &[SampleRecord],
        cur: &[SampleRecord],
        naming: &Naming,
    ) -> Request {
        let mut histories: BTreeMap<_, Vec<usize>> = BTreeMap::new();
        let mut sections: Vec<(String, String)> = Vec::new();
        for (i, metric) in metrics.iter().enumerate() {
            let k = (
                naming.history_config(&metric.key),
                metric.key.test.clone(),
                metric.key.metric.clone(),
            );
            histories.entry(k).or_default().push(i);
            let section = (metric.key.config.clone(), metric.key.test.clone());
            if !sections.contains(&section) {
                sections.push(section);
            }
        }
        Request {
            histories,
            profiles: profiled(metrics, base, cur, naming),
            sections,
            threads: report::profile::Threads::Merged,
        }
    }

    /// What `read::extras::read` reads for it; `name` names a configuration as `naming` does.
    pub fn wanted<'a>(
        &'a self,
        b: &'a Side,
        c: &'a Side,
        name: &'a dyn Fn(&str) -> String,
    ) -> Wanted<'a> {
        Wanted {
            base: &b.samples,
            cur: &c.samples,
            side_runs: b.runs.iter().chain(&c.runs).map(|r| r.id).collect(),
            medians: self.histories.keys().cloned().collect(),
            profiles: self.profiles.clone(),
            sections: &self.sections,
            name,
        }
    }
}

/// The tests whose profiles make flame graphs: for a comparison only the tests with a regressed
/// or improved metric, for a single selection (no `base`) every test; current side first.
fn profiled(
    metrics: &[MetricInput],
    base: &[SampleRecord],
    cur: &[SampleRecord],
    naming: &Naming,
) -> Vec<(String, String)> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for s in cur.iter().chain(base) {
        let k = (naming.name(&s.sample.config), s.sample.test.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let single = base.is_empty();
    keys.retain(|(config, test)| {
        single
            || metrics.iter().any(|m| {
                m.key.config == *config
                    && m.key.test == *test
                    && m.comparison.as_ref().is_some_and(|c| {
                        matches!(
                            c.verdict,
                            verdict::Verdict::Regressed | verdict::Verdict::Improved
                        )
                    })
            })
    });
    keys
}

/// The report of a comparison: `metrics` are the judged metrics of `b` against `c`
/// ([`compared_metrics`]), `extras` what `read` read for `request`, `text_table` the text
/// `compare` prints for them.
pub fn comparison(
    b: Side,
    c: Side,
    naming: &Naming,
    mut metrics: Vec<MetricInput>,
    request: &Request,
    extras: Extras,
    text_table: String,
) -> ReportInput {
    let judged: Vec<_> = metrics
        .iter()
        .filter_map(|m| m.comparison.clone())
        .collect();
    let summary = verdict::summarize(&judged);
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
    let ids = |l: &Side| -> Vec<RunId> { l.runs.iter().map(|r| r.id).collect() };
    attach_histories(&mut metrics, request, &extras, &ids(&b), &ids(&c));
    let name = |c: &str| naming.name(c);
    ReportInput {
        generator: generator(),
        configs: configs(Some(&b.samples), &c.samples, naming),
        workloads: workloads(Some(&b.samples), &c.samples, naming),
        curves: curves(Some(&b.samples), &c.samples, naming, &metrics),
        flamegraphs: flamegraphs(request, &extras),
        iterations: report::iterations::tables(
            &extras.iterations,
            &b.samples,
            &c.samples,
            &name,
            &metrics,
        ),
        fio_logs: report::fio_logs::charts(
            &extras.fio_logs,
            &b.samples,
            &c.samples,
            &name,
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
        response_curves: response_curves(&metrics),
        metrics,
        summary: Some(summary),
        text_table,
        machine_warnings,
    }
}

/// The report of one selection `l`: `metrics` from [`single_metrics`], `extras` what `read`
/// read for `request`.
pub fn single(
    l: Side,
    mut metrics: Vec<MetricInput>,
    request: &Request,
    extras: Extras,
) -> ReportInput {
    let refs: Vec<&SampleRecord> = l.samples.iter().collect();
    let series = compare::series(&refs);
    let mut text_table = String::new();
    for r in &l.runs {
        text_table.push_str(&report::text::run_header(r));
    }
    text_table.push_str(&report::text::targets(&refs));
    text_table.push_str(&report::text::workloads(&refs));
    text_table.push('\n');
    text_table.push_str(&report::text::run_summary(&series));
    let ids: Vec<RunId> = l.runs.iter().map(|r| r.id).collect();
    attach_histories(&mut metrics, request, &extras, &[], &ids);
    let naming = Naming::single();
    ReportInput {
        generator: generator(),
        configs: configs(None, &l.samples, &naming),
        workloads: workloads(None, &l.samples, &naming),
        curves: curves(None, &l.samples, &naming, &metrics),
        baseline: None,
        flamegraphs: flamegraphs(request, &extras),
        iterations: report::iterations::tables(
            &extras.iterations,
            &[],
            &l.samples,
            &|c| c.into(),
            &metrics,
        ),
        fio_logs: report::fio_logs::charts(
            &extras.fio_logs,
            &[],
            &l.samples,
            &|c| c.into(),
            &metrics,
        ),
        current: SideInput {
            description: l.description,
            runs: l.runs,
        },
        response_curves: response_curves(&metrics),
        metrics,
        summary: None,
        text_table,
        machine_warnings: Vec::new(),
    }
}

/// The response curves of the swept tests among `metrics` (`compare::curve`).
fn response_curves(metrics: &[MetricInput]) -> Vec<compare::curve::Curve> {
    let rows: Vec<compare::curve::Row<'_>> = metrics
        .iter()
        .map(|m| compare::curve::Row {
            key: &m.key,
            baseline: &m.baseline_values,
            current: &m.current_values,
            comparison: m.comparison.as_ref(),
        })
        .collect();
    compare::curve::curves(&rows)
}

/// Flame graphs of the tests the request named whose profiles were read (per side and
/// differential); a test with no profile on either side has none.
fn flamegraphs(request: &Request, extras: &Extras) -> Vec<report::html::FlameGraphs> {
    let mut out = Vec::new();
    for ((config, test), (b, c)) in request.profiles.iter().zip(&extras.profiles) {
        if b.is_none() && c.is_none() {
            continue;
        }
        let title = |side: &str| format!("{test} on {config}: {side}");
        out.push(report::html::FlameGraphs {
            baseline: b.as_ref().and_then(|p| {
                report::profile::flamegraph_svg(p, &title("baseline"), request.threads).ok()
            }),
            current: c.as_ref().and_then(|p| {
                report::profile::flamegraph_svg(p, &title("current"), request.threads).ok()
            }),
            differential: match (b, c) {
                (Some(b), Some(c)) => {
                    report::profile::differential_svg(b, c, &title("differential"), request.threads)
                        .ok()
                }
                _ => None,
            },
            config: config.clone(),
            test: test.clone(),
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

/// Every metric's history: one point per run read that has it (the median of its repetitions),
/// in run order; with at least [`MIN_HISTORY`] points, the change points and segments of
/// `compare::changepoint`.
fn attach_histories(
    metrics: &mut [MetricInput],
    request: &Request,
    extras: &Extras,
    base_ids: &[RunId],
    cur_ids: &[RunId],
) {
    let about: HashMap<RunId, (Rc<str>, Role)> = extras
        .history_runs
        .iter()
        .map(|r: &RunInfo| {
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
    let point = |m: &Median| -> Option<HistoryPoint> {
        let (label, role) = about.get(&m.run)?;
        Some(HistoryPoint {
            run_id: m.run,
            label: label.clone(),
            median: m.median,
            n: m.n,
            role: *role,
        })
    };
    for (indices, medians) in request.histories.values().zip(&extras.medians) {
        if medians.len() < MIN_HISTORY {
            continue;
        }
        let pts: Vec<HistoryPoint> = medians.iter().filter_map(point).collect();
        if pts.len() < MIN_HISTORY {
            continue;
        }
        let values: Vec<f64> = pts.iter().map(|p| p.median).collect();
        for &i in indices {
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
