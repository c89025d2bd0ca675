//! A comparison of three or more sides: every other side judged against the first (Welch on logs
//! throughout, one center per side), all rows in one false-discovery family per role.
//!
//! Why a file of its own: `fsdelta compare A B C...` and `fsdelta serve`'s compare page judge
//! many sides the same way and must not drift apart; this is the one place that does it. Like
//! the rest of `compare` it must never do I/O nor format output: the sides arrive read, and the
//! callers put the judged rows into `report::compare::ManyDoc`.

use super::context::Context;
use super::judge::{self, JudgeError, Judged};
use super::verdict::{Methods, Summary};
use super::{Criteria, Drifts};
use crate::read::Sides;
use std::ops::Range;

/// One non-baseline side, judged.
#[derive(Debug)]
pub struct ManySide {
    /// Description of the side's selection.
    pub description: String,
    /// The host of its first run (where its machine's calibration is looked up).
    pub host: Option<String>,
    /// What differs between the baseline and this side.
    pub context: Context,
    /// Its rows in [`Many::rows`].
    span: Range<usize>,
}

/// Every side judged against the first, the false discovery control applied across all.
#[derive(Debug)]
pub struct Many {
    /// Description of the baseline selection.
    pub baseline: String,
    /// The other sides in order.
    pub sides: Vec<ManySide>,
    /// Every side's rows, one after the other.
    pub rows: Vec<Judged>,
    /// Every pairing puts configurations side by side (`SEL@A SEL@B SEL@C`).
    pub across: bool,
}

impl Many {
    /// The rows of side `i` (0 is the first after the baseline).
    pub fn rows_of(&self, i: usize) -> &[Judged] {
        &self.rows[self.sides[i].span.clone()]
    }

    /// The rows of side `i`, to annotate (what its machine detects) once the verdicts are final.
    pub fn rows_of_mut(&mut self, i: usize) -> &mut [Judged] {
        let span = self.sides[i].span.clone();
        &mut self.rows[span]
    }

    /// Some side lacks samples the other has (a test failed on one side).
    pub fn lacking(&self) -> bool {
        self.sides
            .iter()
            .any(|s| s.context.baseline_missing.any() || s.context.current_missing.any())
    }

    /// Counts over every row of every side.
    pub fn summary(&self) -> Summary {
        judge::summary(&self.rows)
    }
}

/// Judges each pairing (baseline, side) as `sides` yields it (read one at a time, so one side's
/// samples are in memory at once), then controls false discoveries over all of them. `drift`
/// gives the between-run drift to count for a pairing (its current side's machine's: see
/// [`Criteria::drift`]; `|_| Drifts::new()` for none).
pub fn judge<E: From<JudgeError>>(
    sides: impl IntoIterator<Item = Result<Sides, E>>,
    criteria: &Criteria,
    drift: impl Fn(&Sides) -> Drifts,
) -> Result<Many, E> {
    let mut many = Many {
        baseline: String::new(),
        sides: Vec::new(),
        rows: Vec::new(),
        across: true,
    };
    for pair in sides {
        let pair = pair?;
        let with = Criteria {
            drift: drift(&pair),
            ..criteria.clone()
        };
        let rows = judge::rows(&pair, &with, Methods::WelchOnly)?;
        many.baseline = pair.base.description.clone();
        many.across &= pair.across;
        many.sides.push(ManySide {
            description: pair.cur.description.clone(),
            host: pair.cur.runs.first().map(|r| r.environment.host.clone()),
            context: judge::context_of(&pair),
            span: many.rows.len()..many.rows.len() + rows.len(),
        });
        many.rows.extend(rows);
    }
    judge::control(&mut many.rows, criteria.gate);
    Ok(many)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::history::rate_samples;
    use crate::compare::verdict::Verdict;
    use crate::model::Unit;
    use crate::read::Side;

    fn side(description: &str, values: &[f64]) -> Side {
        let samples = rate_samples(1, "files", Unit::FilesPerSec, values);
        Side {
            description: description.into(),
            runs: Vec::new(),
            samples,
        }
    }

    const BASE: [f64; 5] = [100.0, 101.0, 99.0, 100.5, 99.5];
    const SAME: [f64; 5] = [100.4, 99.0, 101.5, 99.2, 100.6];
    const SLOW: [f64; 5] = [80.0, 81.0, 79.0, 80.5, 79.5];

    fn pair(cur: &str, values: &[f64]) -> Sides {
        Sides {
            base: side("label:a", &BASE),
            cur: side(cur, values),
            across: false,
        }
    }

    #[test]
    fn each_side_keeps_its_rows_and_all_share_one_false_discovery_family() {
        let criteria = Criteria::default();
        let pairs = [pair("label:b", &SAME), pair("label:c", &SLOW)];
        let many = judge(pairs.map(Ok::<_, JudgeError>), &criteria, |_| Drifts::new()).unwrap();
        assert_eq!(many.baseline, "label:a");
        let names: Vec<_> = many.sides.iter().map(|s| s.description.as_str()).collect();
        assert_eq!(names, ["label:b", "label:c"]);
        assert_eq!(many.rows_of(0)[0].current_values, SAME);
        assert_eq!(many.rows_of(1)[0].current_values, SLOW);
        assert_eq!(many.rows_of(1)[0].comparison.verdict, Verdict::Regressed);
        assert!(!many.lacking());
        // One family: the q-values are those of both pairings' rows controlled together, not
        // of each pairing alone.
        let mut together: Vec<Judged> = [pair("label:b", &SAME), pair("label:c", &SLOW)]
            .iter()
            .flat_map(|p| judge::rows(p, &criteria, Methods::WelchOnly).unwrap())
            .collect();
        judge::control(&mut together, criteria.gate);
        let mut alone =
            judge::rows(&pair("label:c", &SLOW), &criteria, Methods::WelchOnly).unwrap();
        judge::control(&mut alone, criteria.gate);
        let q = |rows: &[Judged]| {
            rows.iter()
                .map(|r| r.comparison.q_value)
                .collect::<Vec<_>>()
        };
        assert_eq!(q(&many.rows), q(&together));
        assert_ne!(q(many.rows_of(1)), q(&alone));
    }

    #[test]
    fn a_side_that_cannot_be_read_is_the_error() {
        let sides = [Ok(pair("label:b", &SAME)), Err(JudgeError::NothingPaired)];
        let e = judge(sides, &Criteria::default(), |_| Drifts::new()).unwrap_err();
        assert_eq!(e, JudgeError::NothingPaired);
    }
}
