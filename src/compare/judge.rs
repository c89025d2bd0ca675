//! The judged comparison of two sides: every metric present on both, with its verdict
//! ([`Judged`]), then the false discovery control per family (headline, secondary) that decides
//! which verdicts stand and which gate the exit code.
//!
//! Why a file of its own: `compare`, `run --baseline`, a fleet agent, `compare --profile` and
//! the HTML report all judge the same way; this is the one place that turns the sides `read`
//! gathered into rows. Like the rest of `compare` it must never do I/O nor format output.

use super::context::{self, Context, SideData};
use super::verdict::{self, Comparison, Gate, Margins, Methods, MetricClass};
use super::{Criteria, SeriesKey};
use crate::model::{MetricKind, SampleRecord, Unit};
use crate::read::Sides;
use serde::Serialize;

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
    let rows = super::pair(&super::series(&bs), &super::series(&cs), sides.across)
        .into_iter()
        .filter(|p| opts.metrics.is_empty() || opts.metrics.contains(&p.key.metric))
        .filter(|p| !p.base.is_empty() && !p.cur.is_empty())
        .map(|p| {
            let class = MetricClass::of(p.kind);
            let comparison =
                verdict::compare_with(&p.base, &p.cur, p.direction, class, &margins, methods);
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
