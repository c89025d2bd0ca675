//! A metric's history over runs: one point per run (the median of its repetitions, with n and
//! spread), change points by E-divisive means (`changepoint`), and the segments between them.
//!
//! Pure: the CLI edge hands in the stored runs; this module must never read the store.

use super::changepoint::{self, ChangePoint, Options, Segment};
use super::stats;
use super::verdict::MetricClass;
use crate::model::MetricKind;
use crate::model::{RunInfo, SampleRecord};
use crate::model::{SampleStatus, Unit};
use serde::Serialize;

/// One run's value of the metric.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// The run.
    pub run_id: i64,
    /// Its label.
    pub label: String,
    /// When it started (RFC 3339).
    pub started_at: String,
    /// Repetitions that measured the metric.
    pub n: usize,
    /// Median of the repetitions.
    pub median: f64,
    /// Smallest repetition.
    pub min: f64,
    /// Largest repetition.
    pub max: f64,
    /// Coefficient of variation of the repetitions (None with one).
    pub cv: Option<f64>,
}

/// A metric's history with its change points.
#[derive(Clone, Debug, Serialize)]
pub struct History {
    /// Test name.
    pub test: String,
    /// Metric name.
    pub metric: String,
    /// Configuration, when one was chosen.
    pub config: Option<String>,
    /// Unit.
    pub unit: Option<Unit>,
    /// Points in run order.
    pub points: Vec<Point>,
    /// Change points (indices into `points`).
    pub change_points: Vec<ChangePoint>,
    /// Segments between change points.
    pub segments: Vec<Segment>,
    /// Whether detection ran on ranks (tail metrics).
    pub on_ranks: bool,
    /// Why change points were not sought (see [`detect`]); `None` when they were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// Why [`detect`] skips a series with a median that is not positive.
pub const ZERO_MEDIAN: &str = "a run's median is 0 (or negative): change points are sought \
    only in series of positive medians, since a change from or to 0 has no ratio; read the \
    values above";

/// Change points of a history series, with the rule for zeros: a series in which any point is
/// 0 or negative is skipped (no change points, and the reason), since a segment centre of 0
/// gives "-100 %" ratios and zero-variance p-values of 0 that say nothing. The absolute rule
/// (differences instead of ratios) was not chosen: such metrics are counts of rare events
/// (major faults, errors) whose level is better read from the values themselves.
pub fn detect(series: &[f64], options: &Options) -> (Vec<ChangePoint>, Option<String>) {
    if series.iter().any(|v| *v <= 0.0) {
        return (Vec::new(), Some(ZERO_MEDIAN.to_string()));
    }
    (changepoint::change_points(series, options), None)
}

/// Match a label against a glob with `*` (any run of characters) and `?` (one character).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Why a history cannot be built; the messages say where to look.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HistoryError {
    /// No run has the metric at all.
    #[error(
        "no stored run of test '{test}' has metric '{metric}'; `fsdelta list` and `fsdelta show latest` list the runs and metrics"
    )]
    NoRun {
        /// The test.
        test: String,
        /// The metric.
        metric: String,
    },
    /// The test ran on several configurations and none was chosen.
    #[error("test '{test}' ran on several configurations ({configs}); choose one with --config")]
    Configs {
        /// The test.
        test: String,
        /// Its configurations, comma-separated.
        configs: String,
    },
    /// No run has the metric on the chosen configuration.
    #[error(
        "no stored run of test '{test}' has metric '{metric}'{on}; `fsdelta show latest` lists the metrics"
    )]
    NoPoint {
        /// The test.
        test: String,
        /// The metric.
        metric: String,
        /// ` on CONFIG`, or empty.
        on: String,
    },
}

/// The history `fsdelta history` shows: of the runs `read::metric_history` gave (ended runs,
/// oldest first, each with its values of `metric`), those whose label matches `label_glob`,
/// on `config` (needed when the test ran on several).
pub fn of_runs(
    runs: Vec<(RunInfo, Vec<SampleRecord>)>,
    test: &str,
    metric: &str,
    config: Option<&str>,
    label_glob: Option<&str>,
) -> Result<History, HistoryError> {
    let loaded: Vec<(RunInfo, Vec<SampleRecord>)> = runs
        .into_iter()
        .filter(|(r, _)| label_glob.is_none_or(|g| glob_match(g, &r.label)))
        .collect();
    let mut configs: Vec<String> = Vec::new();
    for s in loaded.iter().flat_map(|(_, s)| s) {
        if !configs.contains(&s.sample.config) {
            configs.push(s.sample.config.clone());
        }
    }
    if configs.is_empty() {
        return Err(HistoryError::NoRun {
            test: test.to_string(),
            metric: metric.to_string(),
        });
    }
    if config.is_none() && configs.len() > 1 {
        return Err(HistoryError::Configs {
            test: test.to_string(),
            configs: configs.join(", "),
        });
    }
    let h = build(&loaded, test, metric, config);
    if h.points.is_empty() {
        return Err(HistoryError::NoPoint {
            test: test.to_string(),
            metric: metric.to_string(),
            on: config.map(|c| format!(" on {c}")).unwrap_or_default(),
        });
    }
    Ok(h)
}

/// Build the history of (`test`, `metric`, `config`) from runs in time order, each with its
/// samples. Runs without the metric are skipped.
pub fn build(
    runs: &[(RunInfo, Vec<SampleRecord>)],
    test: &str,
    metric: &str,
    config: Option<&str>,
) -> History {
    let mut unit = None;
    let mut kind = None;
    let mut points = Vec::new();
    for (run, samples) in runs {
        let values: Vec<f64> = samples
            .iter()
            .filter(|s| s.sample.status == SampleStatus::Ok && s.sample.test == test)
            .filter(|s| config.is_none_or(|c| s.sample.config == c))
            .flat_map(|s| s.sample.metrics.iter())
            .filter(|m| m.name == metric)
            .map(|m| {
                unit.get_or_insert(m.unit);
                kind.get_or_insert(m.kind);
                m.value
            })
            .collect();
        let Some(median) = stats::median(&values) else {
            continue;
        };
        points.push(Point {
            run_id: run.id,
            label: run.label.clone(),
            started_at: run.started_at.to_rfc3339(),
            n: values.len(),
            median,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            cv: stats::cv(&values),
        });
    }
    let series: Vec<f64> = points.iter().map(|p| p.median).collect();
    let options = Options::for_class(MetricClass::of(kind.unwrap_or(MetricKind::Throughput)));
    let on_ranks = matches!(options.scale, changepoint::Scale::Ranks);
    let (change_points, skipped) = detect(&series, &options);
    let segments = changepoint::segments(&series, &change_points);
    History {
        test: test.into(),
        metric: metric.into(),
        config: config.map(String::from),
        unit,
        points,
        change_points,
        segments,
        on_ranks,
        skipped,
    }
}

/// Test fixture of the comparisons' tests: run `run_id`'s ok samples of test `test` on
/// configuration `scratch`, one a value (repetitions 1, 2, ...), each with one higher-is-better
/// metric `rate` in `unit`.
#[cfg(test)]
pub(super) fn rate_samples(
    run_id: i64,
    test: &str,
    unit: Unit,
    values: &[f64],
) -> Vec<SampleRecord> {
    use crate::model::{Direction, Metric, NewSample, SiteFacts};
    values
        .iter()
        .enumerate()
        .map(|(i, v)| SampleRecord {
            id: i as i64 + 1,
            run_id,
            sample: NewSample {
                config: "scratch".into(),
                test: test.into(),
                repetition: i as u32 + 1,
                sequence: i as u32,
                facts: SiteFacts::default(),
                status: SampleStatus::Ok,
                error: None,
                started_at: chrono::Utc::now(),
                duration_s: 1.0,
                workload: String::new(),
                metrics: vec![Metric::new("rate", *v, unit, Direction::HigherIsBetter)],
                histograms: vec![],
                attachments: Vec::new(),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Environment, RunStatus};

    #[test]
    fn globs_match_like_a_shell() {
        assert!(glob_match("6.18*", "6.18-rc1"));
        assert!(glob_match("*rc?", "6.18-rc1"));
        assert!(!glob_match("*rc?", "6.18-rc10"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("a", "b"));
    }

    fn run(id: i64, values: &[f64]) -> (RunInfo, Vec<SampleRecord>) {
        let info = RunInfo {
            id,
            label: format!("r{id}"),
            suite: "quick".into(),
            started_at: chrono::Utc::now(),
            finished_at: None,
            status: RunStatus::Complete,
            fsdelta_version: "0".into(),
            environment: Environment::default(),
            sample_count: values.len() as u64,
        };
        (info, rate_samples(id, "t", Unit::OpsPerSec, values))
    }

    #[test]
    fn a_step_in_the_history_is_found_where_it_happened() {
        // 30 runs at ~100, then 30 at ~90, three repetitions each with small deterministic noise.
        let runs: Vec<_> = (0..60)
            .map(|i| {
                let level = if i < 30 { 100.0 } else { 90.0 };
                let wobble = ((i * 7919) % 13) as f64 / 13.0 - 0.5;
                run(
                    i + 1,
                    &[level + wobble, level + 0.5 * wobble, level - wobble],
                )
            })
            .collect();
        let h = build(&runs, "t", "rate", None);
        assert_eq!(h.points.len(), 60);
        assert_eq!(h.points[0].n, 3);
        assert_eq!(h.change_points.len(), 1, "{:?}", h.change_points);
        assert!((h.change_points[0].index as i64 - 30).abs() <= 3);
        assert_eq!(h.segments.len(), 2);
        assert!(h.segments[1].median < h.segments[0].median);
    }

    #[test]
    fn runs_without_the_metric_are_skipped() {
        let runs = vec![run(1, &[1.0]), run(2, &[])];
        let h = build(&runs, "t", "rate", None);
        assert_eq!(h.points.len(), 1);
        assert!(h.change_points.is_empty());
    }

    #[test]
    fn a_series_with_a_zero_median_has_no_change_points_and_says_why() {
        let mut series = vec![0.0; 10];
        series.extend(vec![3.0; 10]);
        series.extend(vec![0.0; 10]);
        let (cps, why) = detect(&series, &Options::default());
        assert!(cps.is_empty());
        assert_eq!(why.as_deref(), Some(ZERO_MEDIAN));
        let series: Vec<f64> = (0..20)
            .map(|i| if i < 10 { 100.0 } else { 150.0 })
            .collect();
        let (cps, why) = detect(&series, &Options::default());
        assert_eq!(cps.len(), 1);
        assert!(why.is_none());
    }
}
