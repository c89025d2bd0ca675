//! One step's answer: does the candidate measure like the good end, like the bad end, or is it
//! unclear? Judged with `compare`'s own per-metric verdicts (statistics.md), the candidate's
//! samples against the good and the bad side's samples measured interleaved with it.
//!
//! Why here and not in compare: the three-way answer and the error rate given to the noisy
//! bisection are the bisection's reading of two verdicts; this module must never judge a metric
//! itself (no test of its own), only combine `compare::verdict::compare`'s.

use crate::compare::verdict::{self, Comparison, Margins, MetricClass, Verdict};
use crate::model::Direction;
use serde::{Deserialize, Serialize};

/// A step's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Worse than the good side and not better than the bad one: the culprit is at or before it.
    LikeBad,
    /// Better than the bad side and not worse than the good one: the culprit is after it.
    LikeGood,
    /// Neither (the repetitions could not tell).
    Unclear,
}

impl Class {
    /// The word shown in tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::LikeBad => "bad",
            Class::LikeGood => "good",
            Class::Unclear => "unclear",
        }
    }
}

/// Smallest error rate a clear answer is given: a p-value of 1e-6 from three runs a side does
/// not make the lab's noise model true (drift, a burst of load), so no single answer may rule
/// a commit out. Chosen with the simulation (`bisect::simulation`).
pub const MIN_ERROR: f64 = 0.02;
/// Largest error rate of a clear answer.
pub const MAX_ERROR: f64 = 0.2;

/// The answer with the two comparisons it came from.
#[derive(Clone, Debug)]
pub struct Judged {
    /// The answer.
    pub class: Class,
    /// The chance the answer is wrong, given to the Bayesian update: the decisive comparison's
    /// one-sided p-value, kept within [`MIN_ERROR`]..[`MAX_ERROR`]. 0.5 for an unclear answer.
    pub error: f64,
    /// Candidate against the good side.
    pub vs_good: Comparison,
    /// Candidate against the bad side.
    pub vs_bad: Comparison,
}

/// Classify `cand` against `good` and `bad` (values of the followed metric).
pub fn classify(
    good: &[f64],
    cand: &[f64],
    bad: &[f64],
    direction: Direction,
    class: MetricClass,
    margins: &Margins,
) -> Judged {
    let vs_good = verdict::compare(good, cand, direction, class, margins);
    let vs_bad = verdict::compare(bad, cand, direction, class, margins);
    let one_sided = |c: &Comparison| {
        c.p_value
            .map_or(MAX_ERROR, |p| (p / 2.0).clamp(MIN_ERROR, MAX_ERROR))
    };
    let (class, error) = match (vs_good.verdict, vs_bad.verdict) {
        (Verdict::Regressed, v) if v != Verdict::Improved => (Class::LikeBad, one_sided(&vs_good)),
        (v, Verdict::Improved) if v != Verdict::Regressed => (Class::LikeGood, one_sided(&vs_bad)),
        _ => (Class::Unclear, 0.5),
    };
    Judged {
        class,
        error,
        vs_good,
        vs_bad,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn around(center: f64, spread: &[f64]) -> Vec<f64> {
        spread.iter().map(|s| center * (1.0 + s)).collect()
    }

    #[test]
    fn clear_cases_are_classified_and_overlap_is_unclear() {
        let m = Margins::default();
        let noise = [-0.02, 0.0, 0.015, -0.01, 0.02];
        let good = around(100.0, &noise);
        let bad = around(125.0, &noise);
        let (d, c) = (Direction::LowerIsBetter, MetricClass::Throughput);
        let j = classify(&good, &around(101.0, &noise), &bad, d, c, &m);
        assert_eq!(j.class, Class::LikeGood);
        assert!(j.error >= MIN_ERROR && j.error <= MAX_ERROR);
        assert_eq!(
            classify(&good, &around(124.0, &noise), &bad, d, c, &m).class,
            Class::LikeBad
        );
        // Halfway, and noisy: neither side claims it.
        let wild = [-0.3, 0.25, 0.0, 0.2, -0.25];
        assert_eq!(
            classify(&good, &around(112.0, &wild), &bad, d, c, &m).class,
            Class::Unclear
        );
        // Higher is better: a drop is bad.
        let j = classify(
            &bad,
            &around(99.0, &noise),
            &good,
            Direction::HigherIsBetter,
            c,
            &m,
        );
        assert_eq!(j.class, Class::LikeBad, "{:?}", j.vs_good);
    }
}
