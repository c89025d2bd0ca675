//! CPU profiles judged across the repetitions (issue 39 item 6): each symbol's self share in
//! every stored profile of a side is one value per repetition, and the baseline's values are
//! compared with the current's by [`verdict::compare`], the rule every metric goes through, then
//! controlled for false discoveries by [`verdict::control_fdr`] over every symbol tested in the
//! whole comparison. A symbol is named only when its change is beyond the repetitions' own spread,
//! and the judgement says how many symbols were tested.
//!
//! Why here: pooling two sides' profiles and listing the largest changes names whatever moved by
//! chance (a symbol at 3 % in one repetition and 0 in the others looks like +0.6 % pooled); the
//! verdict on a symbol is a verdict like a metric's, so it belongs beside them. It must never read
//! the store, render text, or judge a profile by anything but the shares of its repetitions.
//!
//! Zeros: a symbol absent from a profile has no log, and the verdict works on logs. A profile of
//! N samples cannot tell a share below one sample from 0, so an absent symbol counts as half a
//! sample of that profile (half the smallest stack's weight, perf's fixed period), a share that
//! depends on the profile's length and on nothing else, never on a unit.

use super::verdict::{self, Comparison, Margins, MetricClass, Role, Verdict};
use crate::model::Direction;
use crate::probe::profile::Profile;
use std::collections::{BTreeMap, BTreeSet};

/// Fewest percent of self share (mean over a side's profiles, on either side) a symbol needs to
/// be tested: below it a symbol explains nothing, and testing hundreds of them only makes the
/// false-discovery control stricter for the ones that matter.
pub const MIN_TESTED_PCT: f64 = 0.5;

/// Fewest percentage points of change a symbol needs to be named, besides its verdict (the
/// verdict's eps is relative: 0.60 % -> 0.63 % is +5 % but explains nothing).
pub const MIN_NAMED_POINTS: f64 = 0.5;

/// The suffix inferno's perf collapser gives kernel frames.
const KERNEL_SUFFIX: &str = "_[k]";

/// One tested symbol.
#[derive(Clone, Debug)]
pub struct SymbolVerdict {
    /// Function name, without the kernel suffix.
    pub symbol: String,
    /// A kernel function.
    pub kernel: bool,
    /// Mean self share over the baseline's profiles, percent (absent counts as 0).
    pub base_pct: f64,
    /// Mean self share over the current profiles, percent (absent counts as 0).
    pub cur_pct: f64,
    /// The verdict on its shares, repetition by repetition; regressed means the share grew,
    /// improved that it shrank (a share has no better direction of its own).
    pub comparison: Comparison,
}

impl SymbolVerdict {
    /// Change of the mean self share, percentage points.
    pub fn delta(&self) -> f64 {
        self.cur_pct - self.base_pct
    }

    /// Whether the symbol is named: its share grew or shrank beyond the repetitions' spread
    /// (after the false-discovery control) by at least [`MIN_NAMED_POINTS`].
    pub fn named(&self) -> bool {
        matches!(
            self.comparison.verdict,
            Verdict::Regressed | Verdict::Improved
        ) && self.delta().abs() >= MIN_NAMED_POINTS
    }
}

/// One test's profiles judged.
#[derive(Clone, Debug, Default)]
pub struct ProfileVerdicts {
    /// Baseline profiles with samples.
    pub base_n: usize,
    /// Current profiles with samples.
    pub cur_n: usize,
    /// Distinct leaf symbols seen on either side.
    pub seen: usize,
    /// The symbols tested (mean share of at least [`MIN_TESTED_PCT`] on a side), largest
    /// absolute change first.
    pub tested: Vec<SymbolVerdict>,
}

impl ProfileVerdicts {
    /// The named symbols, largest absolute change first.
    pub fn named(&self) -> impl Iterator<Item = &SymbolVerdict> {
        self.tested.iter().filter(|s| s.named())
    }

    /// Whether both sides had the two profiles a verdict needs.
    pub fn judgeable(&self) -> bool {
        self.base_n >= 2 && self.cur_n >= 2
    }
}

/// The leaf frame of a folded stack (kernel suffix kept); the root is the process name, and a
/// stack perf could not walk counts as `[unknown]`.
fn leaf(stack: &str) -> &str {
    stack
        .split_once(';')
        .and_then(|(_, below)| below.split(';').rfind(|f| !f.is_empty()))
        .unwrap_or("[unknown]")
}

/// Self share of each leaf frame, percent of the profile's samples.
pub fn self_shares(p: &Profile) -> BTreeMap<String, f64> {
    let total = p.total();
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    if total == 0 {
        return out;
    }
    for (stack, &n) in &p.stacks {
        *out.entry(leaf(stack).to_string()).or_default() += 100.0 * n as f64 / total as f64;
    }
    out
}

/// Half of one sample of `p`, in percent of its samples: the share an absent symbol counts as.
fn half_sample_pct(p: &Profile) -> f64 {
    let one = p
        .stacks
        .values()
        .copied()
        .filter(|&n| n > 0)
        .min()
        .unwrap_or(1);
    50.0 * one as f64 / p.total().max(1) as f64
}

/// Judges the profiles of several tests of one comparison: `tests` holds, per test, the
/// baseline's and the current side's profiles, one per repetition (empty profiles are left out).
/// Every symbol tested in any test is one family for [`verdict::control_fdr`], as every
/// secondary metric of a comparison is. The result is in the order of `tests`.
pub fn judge(tests: &[(Vec<Profile>, Vec<Profile>)], margins: &Margins) -> Vec<ProfileVerdicts> {
    let mut out: Vec<ProfileVerdicts> = tests.iter().map(|(b, c)| one(b, c, margins)).collect();
    let mut family: Vec<&mut Comparison> = out
        .iter_mut()
        .flat_map(|v| v.tested.iter_mut().map(|s| &mut s.comparison))
        .collect();
    verdict::control_fdr(&mut family, Role::Secondary);
    for v in &mut out {
        v.tested.sort_by(|a, b| {
            b.delta()
                .abs()
                .total_cmp(&a.delta().abs())
                .then(a.symbol.cmp(&b.symbol))
        });
    }
    out
}

/// One test's symbols with their per-symbol verdicts, before the false-discovery control.
fn one(base: &[Profile], cur: &[Profile], margins: &Margins) -> ProfileVerdicts {
    let base: Vec<&Profile> = base.iter().filter(|p| p.total() > 0).collect();
    let cur: Vec<&Profile> = cur.iter().filter(|p| p.total() > 0).collect();
    let shares = |side: &[&Profile]| -> Vec<(BTreeMap<String, f64>, f64)> {
        side.iter()
            .map(|p| (self_shares(p), half_sample_pct(p)))
            .collect()
    };
    let (bs, cs) = (shares(&base), shares(&cur));
    let names: BTreeSet<&String> = bs.iter().chain(&cs).flat_map(|(m, _)| m.keys()).collect();
    let mean = |side: &[(BTreeMap<String, f64>, f64)], f: &str| -> f64 {
        if side.is_empty() {
            return 0.0;
        }
        side.iter()
            .map(|(m, _)| m.get(f).copied().unwrap_or(0.0))
            .sum::<f64>()
            / side.len() as f64
    };
    let values = |side: &[(BTreeMap<String, f64>, f64)], f: &str| -> Vec<f64> {
        side.iter()
            .map(|(m, half)| m.get(f).copied().unwrap_or(*half))
            .collect()
    };
    let tested = names
        .iter()
        .filter_map(|f| {
            let (b, c) = (mean(&bs, f), mean(&cs, f));
            if b.max(c) < MIN_TESTED_PCT {
                return None;
            }
            let (symbol, kernel) = match f.strip_suffix(KERNEL_SUFFIX) {
                Some(s) => (s, true),
                None => (f.as_str(), false),
            };
            Some(SymbolVerdict {
                symbol: symbol.to_string(),
                kernel,
                base_pct: b,
                cur_pct: c,
                comparison: verdict::compare(
                    &values(&bs, f),
                    &values(&cs, f),
                    Direction::LowerIsBetter,
                    MetricClass::Throughput,
                    margins,
                ),
            })
        })
        .collect();
    ProfileVerdicts {
        base_n: base.len(),
        cur_n: cur.len(),
        seen: names.len(),
        tested,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Profile {
        Profile::parse_folded(text).unwrap()
    }

    /// Profiles of `n` repetitions: `work` always, `extra` with the weight `extra(rep)`, and a
    /// little jitter of the idle symbol by repetition (fixed, not random).
    fn side(n: usize, extra: impl Fn(usize) -> u64) -> Vec<Profile> {
        (0..n)
            .map(|r| {
                let jitter = [0, 7, 3, 9, 1, 5, 8, 2][r % 8];
                let e = extra(r);
                let mut t = format!(
                    "prog;work 700\nswapper;idle_[k] {}\nprog;start 1\n",
                    300 + jitter
                );
                if e > 0 {
                    t.push_str(&format!("prog;hog {e}\n"));
                }
                p(&t)
            })
            .collect()
    }

    #[test]
    fn a_symbol_in_every_current_repetition_is_named_and_counted() {
        let v = judge(
            &[(side(5, |_| 0), side(5, |r| 400 + 10 * r as u64))],
            &Margins::default(),
        );
        let v = &v[0];
        assert!(v.judgeable());
        // start, at one sample in 1000, is seen but not tested.
        assert_eq!(v.seen, 4);
        assert_eq!(v.tested.len(), 3);
        let named: Vec<&str> = v.named().map(|s| s.symbol.as_str()).collect();
        // The hog grew; work and idle lost share to it, beyond their spread too.
        assert_eq!(named[0], "hog");
        let hog = v.tested.iter().find(|s| s.symbol == "hog").unwrap();
        assert_eq!(hog.comparison.verdict, Verdict::Regressed);
        assert!(hog.base_pct == 0.0 && hog.cur_pct > 25.0, "{hog:?}");
        assert!(hog.comparison.q_value.unwrap() <= verdict::FDR_Q);
    }

    #[test]
    fn a_symbol_in_one_repetition_only_is_tested_but_not_named() {
        let v = judge(
            &[(side(5, |_| 0), side(5, |r| if r == 0 { 400 } else { 0 }))],
            &Margins::default(),
        );
        let hog = v[0].tested.iter().find(|s| s.symbol == "hog").unwrap();
        // Pooled, it would be a +5.7 point gainer; across the repetitions it is noise.
        assert!(hog.delta() > 5.0, "{hog:?}");
        assert!(!hog.named(), "{hog:?}");
        assert_eq!(v[0].named().count(), 0);
    }

    #[test]
    fn identical_sides_name_nothing_and_one_profile_a_side_judges_nothing() {
        let v = judge(
            &[
                (side(4, |_| 0), side(4, |_| 0)),
                (side(1, |_| 0), side(1, |_| 500)),
            ],
            &Margins::default(),
        );
        assert_eq!(v[0].named().count(), 0);
        assert!(!v[1].judgeable());
        assert_eq!(v[1].named().count(), 0);
        assert!(
            v[1].tested
                .iter()
                .all(|s| s.comparison.verdict == Verdict::Inconclusive)
        );
    }

    #[test]
    fn shares_take_the_leaf_and_keep_kernel_frames_apart() {
        let s = self_shares(&p("a;f;g_[k] 3\na;g 1\nb 4\n"));
        assert_eq!(s.get("g_[k]"), Some(&37.5));
        assert_eq!(s.get("g"), Some(&12.5));
        assert_eq!(s.get("[unknown]"), Some(&50.0));
        // Half of the smallest stack's weight: 1 of 8 samples.
        assert_eq!(half_sample_pct(&p("a;f 7\na;g 1\n")), 6.25);
    }

    #[test]
    fn tiny_symbols_are_not_tested() {
        let base = vec![p("a;f 1000\na;tiny 2\n"), p("a;f 990\na;tiny 3\n")];
        let cur = vec![p("a;f 1000\na;tiny 4\n"), p("a;f 1010\na;tiny 3\n")];
        let v = judge(&[(base, cur)], &Margins::default());
        assert_eq!(v[0].seen, 2);
        assert_eq!(v[0].tested.len(), 1);
        assert_eq!(v[0].tested[0].symbol, "f");
    }
}
