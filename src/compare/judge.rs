//! The judged comparison of two sides: every metric present on both, with its verdict
//! ([`Judged`]), then the false discovery control per family (headline, secondary) that decides
//! which verdicts stand and which gate the exit code.
//!
//! Why a file of its own: `compare`, `run --baseline`, a fleet agent, `compare --profile` and
//! the HTML report all judge the same way; this is the one place that turns the sides `read`
//! gathered into rows. Like the rest of `compare` it must never do I/O nor format output.

use super::context::{self, Context, SideData};
use super::verdict::{self, Comparison, Gate, Margins, Methods, MetricClass, RunDrift};
use super::{Criteria, SeriesKey};
use crate::model::{MetricKind, RunId, SampleRecord, SampleStatus, Unit};
use crate::read::Sides;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};

/// One metric with its verdict, ready to render.
#[derive(Clone, Debug, Serialize)]
pub struct Judged {
    /// Configuration, test, metric.
    #[serde(flatten)]
    pub key: SeriesKey,
    /// Unit of the values.
    pub unit: Unit,
    /// What kind of number, as the workload declared.
    pub kind: MetricKind,
    /// A headline metric of its workload.
    pub headline: bool,
    /// Baseline values.
    pub baseline_values: Vec<f64>,
    /// Current values.
    pub current_values: Vec<f64>,
    /// The statistics.
    #[serde(flatten)]
    pub comparison: Comparison,
}

/// Why two sides cannot be judged.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum JudgeError {
    /// A margin outside (0, 1000 %).
    #[error("{name} must be a percentage between 0 and 1000, not {percent}")]
    Margin {
        /// The option (`--eps`).
        name: &'static str,
        /// What it was, in percent.
        percent: f64,
    },
    /// No metric is on both sides.
    #[error("no metric is present on both sides; check --metric against `fsdelta show`")]
    NothingPaired,
}

fn check_margins(margins: &Margins) -> Result<(), JudgeError> {
    for (name, v) in [
        ("--eps", margins.eps),
        ("--delta", margins.delta_throughput),
        ("--delta-tail", margins.delta_tail),
        ("--delta-max", margins.delta_max),
    ] {
        if !(v.is_finite() && v > 0.0 && v < 10.0) {
            return Err(JudgeError::Margin {
                name,
                percent: v * 100.0,
            });
        }
    }
    Ok(())
}

/// Per-metric verdicts of one pairing (no false discovery control yet: see [`control`]).
pub fn rows(sides: &Sides, opts: &Criteria, methods: Methods) -> Result<Vec<Judged>, JudgeError> {
    let margins: Margins = opts.margins;
    check_margins(&margins)?;
    let bs: Vec<&SampleRecord> = sides.base.samples.iter().collect();
    let cs: Vec<&SampleRecord> = sides.cur.samples.iter().collect();
    let (base_runs, cur_runs) = (runs_of(&bs), runs_of(&cs));
    let rows = super::pair(&super::series(&bs), &super::series(&cs), sides.across)
        .into_iter()
        .filter(|p| opts.metrics.is_empty() || opts.metrics.contains(&p.key.metric))
        .filter(|p| !p.base.is_empty() && !p.cur.is_empty())
        .map(|p| {
            let class = MetricClass::of(p.kind);
            let drift = run_drift(opts, &p.key, &base_runs, &cur_runs, sides.across);
            let comparison = verdict::compare_between(
                &p.base,
                &p.cur,
                p.direction,
                class,
                &margins,
                methods,
                drift,
            );
            Judged {
                key: p.key.clone(),
                unit: p.unit,
                kind: p.kind,
                headline: p.headline,
                baseline_values: p.base.clone(),
                current_values: p.cur.clone(),
                comparison,
            }
        })
        .collect::<Vec<_>>();
    if rows.is_empty() {
        return Err(JudgeError::NothingPaired);
    }
    Ok(rows)
}

/// The distinct runs of each (configuration, test) among successful samples.
type RunsOf<'a> = HashMap<(&'a str, &'a str), BTreeSet<RunId>>;

fn runs_of<'a>(samples: &[&'a SampleRecord]) -> RunsOf<'a> {
    let mut out: RunsOf<'a> = HashMap::new();
    for s in samples
        .iter()
        .filter(|s| s.sample.status == SampleStatus::Ok)
    {
        out.entry((s.sample.config.as_str(), s.sample.test.as_str()))
            .or_default()
            .insert(s.run_id);
    }
    out
}

/// The drift to count in a metric's verdict: the one `opts` holds for it (two configurations
/// side by side take the current one's, as its key names it last), when its two sides are made
/// of different runs. A run on both sides (two configurations of one run, interleaved) shares
/// the machine's drift between them, so nothing is added.
fn run_drift(
    opts: &Criteria,
    key: &SeriesKey,
    base: &RunsOf<'_>,
    cur: &RunsOf<'_>,
    across: bool,
) -> Option<RunDrift> {
    if opts.drift.is_empty() {
        return None;
    }
    let (bconf, cconf) = match key.config.split_once(" vs ") {
        Some((b, c)) if across => (b, c),
        _ => (key.config.as_str(), key.config.as_str()),
    };
    let lookup = SeriesKey {
        config: cconf.to_string(),
        test: key.test.clone(),
        metric: key.metric.clone(),
    };
    let drift = *opts.drift.get(&lookup)?;
    let b = base.get(&(bconf, key.test.as_str()))?;
    let c = cur.get(&(cconf, key.test.as_str()))?;
    if !b.is_disjoint(c) {
        return None;
    }
    Some(RunDrift {
        drift,
        base_runs: b.len(),
        cur_runs: c.len(),
    })
}

/// Benjamini-Hochberg per family (headline, secondary) over every row of a comparison, and
/// which rows gate the exit code. The points of a swept test (`randread[iodepth=8]`) are
/// families of their own, one a curve and role ([`super::curve::control`]).
pub fn control(rows: &mut [Judged], gate: Gate) {
    let points: Vec<usize> = (0..rows.len())
        .filter(|&i| super::curve::point_of(&rows[i].key.test).is_some())
        .collect();
    if !points.is_empty() {
        super::curve::control(rows, &points, gate);
    }
    let mut items: Vec<verdict::Judging<'_>> = rows
        .iter_mut()
        .filter(|j| super::curve::point_of(&j.key.test).is_none())
        .map(|j| verdict::Judging {
            group: (j.key.config.as_str(), j.key.test.as_str()),
            metric: j.key.metric.as_str(),
            headline: j.headline,
            comparison: &mut j.comparison,
        })
        .collect();
    verdict::judge_family(&mut items, gate);
}

/// Judge every paired metric of two sides (headline and secondary families under
/// Benjamini-Hochberg); shared by `compare`, `run --baseline` and `report`.
pub fn judge(sides: &Sides, opts: &Criteria) -> Result<Vec<Judged>, JudgeError> {
    let mut rows = rows(sides, opts, Methods::Auto)?;
    control(&mut rows, opts.gate);
    Ok(rows)
}

/// What differs between the two sides besides the change under test.
pub fn context_of(sides: &Sides) -> Context {
    let bs: Vec<&SampleRecord> = sides.base.samples.iter().collect();
    let cs: Vec<&SampleRecord> = sides.cur.samples.iter().collect();
    context::context(
        &SideData {
            runs: &sides.base.runs,
            samples: &bs,
        },
        &SideData {
            runs: &sides.cur.runs,
            samples: &cs,
        },
        sides.across,
    )
}

/// The judged rows' comparisons summarized (counts per family, runs a side needed).
pub fn summary(rows: &[Judged]) -> verdict::Summary {
    let comparisons: Vec<_> = rows.iter().map(|j| j.comparison.clone()).collect();
    verdict::summarize(&comparisons)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::power::BetweenRuns;
    use crate::model::{Direction, Metric, NewSample, SiteFacts};
    use crate::read::Side;

    fn sample(run: RunId, config: &str, v: f64) -> SampleRecord {
        SampleRecord {
            id: 1,
            run_id: run,
            sample: NewSample {
                config: config.into(),
                test: "t".into(),
                repetition: 1,
                sequence: 0,
                facts: SiteFacts::default(),
                status: crate::model::SampleStatus::Ok,
                error: None,
                started_at: chrono::Utc::now(),
                duration_s: 1.0,
                workload: String::new(),
                metrics: vec![Metric::new(
                    "m",
                    v,
                    Unit::FilesPerSec,
                    Direction::HigherIsBetter,
                )],
                histograms: vec![],
                attachments: vec![],
            },
        }
    }

    fn side(samples: Vec<SampleRecord>) -> Side {
        Side {
            description: String::new(),
            runs: vec![],
            samples,
        }
    }

    #[test]
    fn a_drift_is_counted_between_different_runs_only() {
        let drift = BetweenRuns {
            sigma_log: 0.05,
            pairs: 4,
            df: 2.0,
        };
        let mut opts = Criteria::default();
        for c in ["a", "b"] {
            opts.drift.insert(
                SeriesKey {
                    config: c.into(),
                    test: "t".into(),
                    metric: "m".into(),
                },
                drift,
            );
        }
        let values = |run, config, base: f64| {
            (0..3)
                .map(|i| sample(run, config, base + i as f64))
                .collect::<Vec<_>>()
        };
        // run 1 against run 2, one configuration: counted, one run a side
        let two = Sides {
            base: side(values(1, "a", 100.0)),
            cur: side(values(2, "a", 120.0)),
            across: false,
        };
        let r = rows(&two, &opts, Methods::Auto).unwrap();
        assert_eq!(r[0].comparison.drift_pct, Some(drift.pct()));
        // two configurations of one run, interleaved: the machine's drift moves both alike
        let one = Sides {
            base: side(values(1, "a", 100.0)),
            cur: side(values(1, "b", 120.0)),
            across: true,
        };
        let r = rows(&one, &opts, Methods::Auto).unwrap();
        assert_eq!(r[0].key.config, "a vs b");
        assert_eq!(r[0].comparison.drift_pct, None);
        assert_eq!(r[0].comparison.verdict, verdict::Verdict::Improved);
        // the same two configurations from different runs: counted (the current one's)
        let apart = Sides {
            base: side(values(1, "a", 100.0)),
            cur: side(values(2, "b", 120.0)),
            across: true,
        };
        let r = rows(&apart, &opts, Methods::Auto).unwrap();
        assert_eq!(r[0].comparison.drift_pct, Some(drift.pct()));
        // no drift known for the metric: nothing counted
        let r = rows(&two, &Criteria::default(), Methods::Auto).unwrap();
        assert_eq!(r[0].comparison.drift_pct, None);
    }

    #[test]
    fn a_margin_outside_the_range_is_named_with_its_option() {
        let m = Margins {
            delta_tail: 12.0,
            ..Margins::default()
        };
        assert_eq!(
            check_margins(&m).unwrap_err().to_string(),
            "--delta-tail must be a percentage between 0 and 1000, not 1200"
        );
        check_margins(&Margins::default()).unwrap();
    }
}
