//! The pure two-sample statistics behind every verdict (`docs/statistics.md`):
//! location and spread, the modified z-score outlier check, Welch's t, the exact Mann-Whitney U
//! distribution, the Hodges-Lehmann shift with its exact interval, and Benjamini-Hochberg.
//!
//! Why a module of its own: these functions are the arithmetic that decides whether a user is told
//! "regressed"; each one is small, written by hand and unit-tested against reference values
//! (scipy, brute-force enumeration, worked examples), so a reader can trust it without reading the
//! verdict logic. Only the Student t distribution comes from `statrs`.
//!
//! What it must never do: I/O of any kind, logging, randomness, or deciding a verdict (that is
//! `verdict.rs`). Inputs are plain `f64` slices of finite values; a function returns `None` when
//! its result is undefined (too few values, zero spread where it divides) rather than a NaN.

pub use crate::model::median;
use crate::model::median_of_sorted;
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::cmp::Ordering;

/// Arithmetic mean. `None` for an empty slice.
pub fn mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    Some(xs.iter().sum::<f64>() / xs.len() as f64)
}

/// Sample variance (divisor n - 1). `None` with fewer than two values.
pub fn variance(xs: &[f64]) -> Option<f64> {
    if xs.len() < 2 {
        return None;
    }
    let m = mean(xs)?;
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    Some(ss / (xs.len() - 1) as f64)
}

/// Sample standard deviation (divisor n - 1). `None` with fewer than two values.
pub fn std_dev(xs: &[f64]) -> Option<f64> {
    variance(xs).map(f64::sqrt)
}

/// Median absolute deviation from the median, unscaled (no 1.4826 factor: the modified z-score
/// carries its own 0.6745). `None` for an empty slice.
pub fn mad(xs: &[f64]) -> Option<f64> {
    let med = median(xs)?;
    let dev: Vec<f64> = xs.iter().map(|x| (x - med).abs()).collect();
    median(&dev)
}

/// Coefficient of variation: sample standard deviation over the mean. `None` with fewer than two
/// values or a zero mean.
pub fn cv(xs: &[f64]) -> Option<f64> {
    let m = mean(xs)?;
    let s = std_dev(xs)?;
    if m == 0.0 { None } else { Some(s / m.abs()) }
}

/// Ranks 1..=n of the values in input order, ties given the mean of the ranks they span
/// (scipy `rankdata(method="average")`).
pub fn ranks(xs: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..xs.len()).collect();
    order.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
    let mut out = vec![0.0; xs.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && xs[order[j + 1]] == xs[order[i]] {
            j += 1;
        }
        // sorted positions i..=j share ranks i+1..=j+1
        for &o in &order[i..=j] {
            out[o] = (i + j + 2) as f64 / 2.0;
        }
        i = j + 1;
    }
    out
}

/// Threshold of the modified z-score above which a value is an outlier (Iglewicz and Hoaglin).
pub const OUTLIER_Z: f64 = 3.5;

/// Modified z-scores 0.6745 |x - median| / MAD of every value, in input order. `None` when the
/// slice is empty or the MAD is 0 (more than half the values equal: no check is possible).
pub fn modified_z_scores(xs: &[f64]) -> Option<Vec<f64>> {
    let med = median(xs)?;
    let mad = mad(xs)?;
    if mad == 0.0 {
        return None;
    }
    Some(xs.iter().map(|x| 0.6745 * (x - med).abs() / mad).collect())
}

/// Indices of the values whose modified z-score exceeds [`OUTLIER_Z`]. Empty when the MAD is 0.
pub fn outliers(xs: &[f64]) -> Vec<usize> {
    match modified_z_scores(xs) {
        Some(z) => z
            .iter()
            .enumerate()
            .filter(|(_, z)| **z > OUTLIER_Z)
            .map(|(i, _)| i)
            .collect(),
        None => Vec::new(),
    }
}

/// Quantile of Student's t distribution with `df` degrees of freedom (`0 < p < 1`, `df > 0`).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    student_t(df).inverse_cdf(p)
}

/// Two-sided p-value of a t statistic: P(|T| >= |t|) with `df` degrees of freedom.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    (2.0 * student_t(df).sf(t.abs())).min(1.0)
}

fn student_t(df: f64) -> StudentsT {
    // Invariant: callers pass a finite df > 0; location 0 and scale 1 are always valid.
    StudentsT::new(0.0, 1.0, df).expect("Student t with finite df > 0")
}

/// Welch's unequal-variance t test of `y` against `x`, with the interval of the difference of
/// means. The verdict passes logs, so `d` is then a log ratio.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    /// mean(y) - mean(x).
    pub d: f64,
    /// Standard error of `d`: sqrt(var x / m + var y / n).
    pub se: f64,
    /// Welch-Satterthwaite degrees of freedom (`f64::INFINITY` when `se` is 0).
    pub df: f64,
    /// t statistic d / se (0 when `se` is 0 and `d` is 0, infinite when only `se` is 0).
    pub t: f64,
    /// Two-sided p-value. With `se` 0: 1 if `d` is 0, else 0 (both sides are constant).
    pub p: f64,
    /// Lower end of the interval d - t(1 - alpha/2, df) * se.
    pub lo: f64,
    /// Upper end of the interval d + t(1 - alpha/2, df) * se.
    pub hi: f64,
}

/// Welch's t test of `y` against `x` at the given two-sided `confidence` (0.95 for a 95 %
/// interval). `None` unless both sides have at least two values.
///
/// When both sides have zero spread the difference is known exactly: the interval is `[d, d]`.
pub fn welch(x: &[f64], y: &[f64], confidence: f64) -> Option<Welch> {
    welch_between(x, y, confidence, Between::NONE)
}

/// A variance of the difference of means that the sides' own repetitions cannot show: the
/// spread of run means between runs of the same thing on one machine (a random-effects term),
/// estimated elsewhere with `df` degrees of freedom. [`Between::NONE`] adds nothing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Between {
    /// The variance added to var x / m + var y / n.
    pub var: f64,
    /// Degrees of freedom of its estimate (for Satterthwaite's approximation).
    pub df: f64,
}

impl Between {
    /// No term: plain Welch.
    pub const NONE: Between = Between {
        var: 0.0,
        df: f64::INFINITY,
    };
}

/// [`welch`] with a between-run variance added to the difference's: se^2 = var x / m + var y /
/// n + `between.var`, and Satterthwaite's degrees of freedom over the three terms (the third
/// with `between.df`), so an estimate of the term from few runs widens the interval as its own
/// uncertainty demands; the interval and p are never tighter than Welch's without the term
/// (Satterthwaite's approximation alone can make them so). With [`Between::NONE`] it is exactly
/// [`welch`].
pub fn welch_between(x: &[f64], y: &[f64], confidence: f64, between: Between) -> Option<Welch> {
    let (m, n) = (x.len() as f64, y.len() as f64);
    let (mx, my) = (mean(x)?, mean(y)?);
    let (vx, vy) = (variance(x)?, variance(y)?);
    let d = my - mx;
    let (ax, ay) = (vx / m, vy / n);
    let az = if between.var.is_finite() && between.var > 0.0 {
        between.var
    } else {
        0.0
    };
    let se = (ax + ay + az).sqrt();
    if se == 0.0 {
        let (t, p) = if d == 0.0 {
            (0.0, 1.0)
        } else {
            (d.signum() * f64::INFINITY, 0.0)
        };
        return Some(Welch {
            d,
            se,
            df: f64::INFINITY,
            t,
            p,
            lo: d,
            hi: d,
        });
    }
    let z_df = if az > 0.0 {
        az * az / between.df.max(1.0)
    } else {
        0.0
    };
    let df = (ax + ay + az).powi(2) / (ax * ax / (m - 1.0) + ay * ay / (n - 1.0) + z_df);
    let t = d / se;
    let q = t_quantile(0.5 + confidence / 2.0, df);
    let mut out = Welch {
        d,
        se,
        df,
        t,
        p: t_two_sided_p(t, df),
        lo: d - q * se,
        hi: d + q * se,
    };
    // Satterthwaite's df can exceed Welch's when a well-known term joins two ill-matched sides
    // (few values, very different spreads), and then the interval could come out narrower
    // than without the term: a variance added must never do that, so the interval and p are
    // never tighter than Welch's own.
    if az > 0.0 && ax + ay > 0.0 {
        let se0 = (ax + ay).sqrt();
        let df0 = (ax + ay).powi(2) / (ax * ax / (m - 1.0) + ay * ay / (n - 1.0));
        let q0 = t_quantile(0.5 + confidence / 2.0, df0);
        out.lo = out.lo.min(d - q0 * se0);
        out.hi = out.hi.max(d + q0 * se0);
        out.p = out.p.max(t_two_sided_p(d / se0, df0));
    }
    Some(out)
}

/// Largest total sample size m + n for which the Mann-Whitney distribution is computed exactly
/// (counts are exact `u128`; C(120, 60) < 2^127). Beyond it the rank methods return `None` and
/// the verdict falls back to Welch, which is accurate at such sizes.
pub const MW_EXACT_MAX: usize = 120;

/// Exact null distribution of the Mann-Whitney U statistic without ties: element `u` is the
/// number of the C(m + n, m) equally likely orderings whose U equals `u`, for `u` in `0..=m*n`.
/// `None` when m or n is 0 or m + n exceeds [`MW_EXACT_MAX`].
///
/// Computed as the coefficients of the Gaussian binomial coefficient
/// `[m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i)`, one exact polynomial
/// multiplication and division per factor.
pub fn u_distribution(m: usize, n: usize) -> Option<Vec<u128>> {
    if m == 0 || n == 0 || m + n > MW_EXACT_MAX {
        return None;
    }
    let len = m * n + 1;
    let mut c = vec![0i128; len];
    c[0] = 1;
    for i in 1..=m {
        // multiply by (1 - q^(n+i)), highest degree first so each term reads the old value
        let a = n + i;
        for k in (a..len).rev() {
            c[k] -= c[k - a];
        }
        // divide exactly by (1 - q^i): c'[k] = c[k] + c'[k - i]
        for k in i..len {
            c[k] += c[k - i];
        }
    }
    Some(
        c.into_iter()
            .map(|v| u128::try_from(v).expect("Gaussian binomial coefficients are >= 0"))
            .collect(),
    )
}

/// Result of the exact two-sided Mann-Whitney U test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MannWhitney {
    /// U of the first sample `x`: pairs with x > y, plus one half for each tie (scipy's `U1`).
    pub u: f64,
    /// Exact two-sided p-value: min(1, 2 * min(P(U <= u), P(U >= u))) under the permutation
    /// distribution (conditional on the tie pattern when there are ties).
    pub p: f64,
    /// Whether the pooled sample had ties (the p-value then comes from the mid-rank permutation
    /// distribution instead of the tabulated U distribution).
    pub ties: bool,
}

/// Exact two-sided Mann-Whitney U test of `x` against `y`. `None` when a side is empty or
/// m + n exceeds [`MW_EXACT_MAX`].
///
/// Ties: values are given mid-ranks and the p-value is exact under the permutation distribution
/// of the mid-rank sum, counted by dynamic programming over the pooled sample (scipy's
/// `permutation_test` with every permutation gives the same number). Without ties this equals
/// the classic exact test (scipy `mannwhitneyu(method="exact")`).
pub fn mann_whitney(x: &[f64], y: &[f64]) -> Option<MannWhitney> {
    let (m, n) = (x.len(), y.len());
    if m == 0 || n == 0 || m + n > MW_EXACT_MAX {
        return None;
    }
    let u = u_statistic(x, y);
    let ties = {
        let mut all: Vec<f64> = x.iter().chain(y).copied().collect();
        all.sort_by(f64::total_cmp);
        all.windows(2).any(|w| w[0] == w[1])
    };
    let (lower, upper, total) = if !ties {
        let dist = u_distribution(m, n)?;
        // no ties: u is an integer
        let k = u as usize;
        let total: u128 = dist.iter().sum();
        let lower: u128 = dist[..=k].iter().sum();
        let upper: u128 = dist[k..].iter().sum();
        (lower, upper, total)
    } else {
        midrank_sum_tails(&doubled_midranks(x, y), m)
    };
    let p = (2.0 * lower.min(upper) as f64 / total as f64).min(1.0);
    Some(MannWhitney { u, p, ties })
}

/// Exact permutation tails of the doubled mid-rank sum of the first `m` items of `ranks2` (the
/// pooled sample, first sample first): `(P(S <= s), P(S >= s), total)` as counts over the
/// C(N, m) equally likely choices of which items form the first sample.
fn midrank_sum_tails(ranks2: &[u64], m: usize) -> (u128, u128, u128) {
    let observed: u64 = ranks2[..m].iter().sum();
    let max_sum: u64 = {
        let mut r = ranks2.to_vec();
        r.sort_unstable();
        r[r.len() - m..].iter().sum()
    };
    let width = max_sum as usize + 1;
    // dp[k * width + s]: ways to choose k items with doubled-rank sum s
    let mut dp = vec![0u128; (m + 1) * width];
    dp[0] = 1;
    for (item, &r) in ranks2.iter().enumerate() {
        let r = r as usize;
        for k in (1..=m.min(item + 1)).rev() {
            for s in r..width {
                let add = dp[(k - 1) * width + s - r];
                if add != 0 {
                    dp[k * width + s] += add;
                }
            }
        }
    }
    let row = &dp[m * width..];
    let obs = observed as usize;
    let total: u128 = row.iter().sum();
    let lower: u128 = row[..=obs].iter().sum();
    let upper: u128 = row[obs..].iter().sum();
    (lower, upper, total)
}

/// U of `x` against `y`: the number of pairs with x > y, plus one half per tie.
fn u_statistic(x: &[f64], y: &[f64]) -> f64 {
    let mut u = 0.0;
    for &a in x {
        for &b in y {
            u += match a.partial_cmp(&b) {
                Some(Ordering::Greater) => 1.0,
                Some(Ordering::Equal) => 0.5,
                _ => 0.0,
            };
        }
    }
    u
}

/// Twice the mid-ranks (so they are integers) of `x` followed by `y` in the pooled sample, in
/// input order.
fn doubled_midranks(x: &[f64], y: &[f64]) -> Vec<u64> {
    let all: Vec<f64> = x.iter().chain(y).copied().collect();
    ranks(&all).into_iter().map(|r| (2.0 * r) as u64).collect()
}

/// Hodges-Lehmann estimate of the shift of `y` against `x`, with its exact distribution-free
/// confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HodgesLehmann {
    /// Median of the m * n pairwise differences y_j - x_i.
    pub shift: f64,
    /// The k-th smallest pairwise difference.
    pub lo: f64,
    /// The k-th largest pairwise difference.
    pub hi: f64,
    /// The order statistic used (1-based).
    pub k: usize,
    /// Coverage the interval actually has without ties: 1 - 2 P(U <= k - 1). At least the
    /// requested confidence unless k had to be raised to 1 (tiny samples, e.g. 2 against 2).
    pub achieved_confidence: f64,
}

/// Hodges-Lehmann shift of `y` against `x` and its interval at two-sided `confidence`. `None`
/// when a side is empty or m + n exceeds [`MW_EXACT_MAX`].
///
/// k is the smallest q with P(U <= q) >= (1 - confidence) / 2 under the exact U distribution,
/// raised to 1 if 0 (R's `wilcox.test(conf.int = TRUE, exact = TRUE)`); the interval is
/// [D(k), D(mn + 1 - k)] of the sorted differences. Ties: the critical value comes from the
/// no-tie distribution, as is conventional; ties only make equal differences, which the order
/// statistics handle as they are.
pub fn hodges_lehmann(x: &[f64], y: &[f64], confidence: f64) -> Option<HodgesLehmann> {
    let (m, n) = (x.len(), y.len());
    let dist = u_distribution(m, n)?;
    let total: u128 = dist.iter().sum();
    let half_alpha = (1.0 - confidence) / 2.0;
    let mut cum: u128 = 0;
    let mut q = 0;
    for (u, c) in dist.iter().enumerate() {
        cum += c;
        if cum as f64 / total as f64 >= half_alpha {
            q = u;
            break;
        }
    }
    let k = q.max(1);
    let below: u128 = dist[..k].iter().sum();
    let achieved_confidence = 1.0 - 2.0 * below as f64 / total as f64;
    let mut diffs: Vec<f64> = Vec::with_capacity(m * n);
    for &b in y {
        for &a in x {
            diffs.push(b - a);
        }
    }
    diffs.sort_by(f64::total_cmp);
    Some(HodgesLehmann {
        shift: median_of_sorted(&diffs),
        lo: diffs[k - 1],
        hi: diffs[m * n - k],
        k,
        achieved_confidence,
    })
}

/// Benjamini-Hochberg adjusted p-values (false discovery rate), in input order:
/// p_(i) * k / i, made monotone from the largest down, capped at 1 (scipy
/// `false_discovery_control(method="bh")`).
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let k = p.len();
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![0.0; k];
    let mut running = 1.0f64;
    for (rank0, &i) in order.iter().enumerate().rev() {
        let v = p[i] * k as f64 / (rank0 + 1) as f64;
        running = running.min(v);
        adjusted[i] = running;
    }
    adjusted
}

/// Deterministic synthetic measurements for the tests of this room (verdicts, change points).
#[cfg(test)]
pub(crate) mod synthetic {
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    /// A seeded generator of lognormal noise.
    pub(crate) struct Noise(Xoshiro256PlusPlus);

    impl Noise {
        pub(crate) fn new(seed: u64) -> Self {
            Noise(Xoshiro256PlusPlus::seed_from_u64(seed))
        }

        /// A standard normal draw (Box-Muller).
        pub(crate) fn normal(&mut self) -> f64 {
            let u1: f64 = 1.0 - self.0.random::<f64>(); // (0, 1]
            let u2: f64 = self.0.random::<f64>();
            (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        }

        /// A uniform draw in [0, 1).
        pub(crate) fn uniform(&mut self) -> f64 {
            self.0.random::<f64>()
        }

        /// `n` lognormal values with the given median and coefficient of variation.
        pub(crate) fn lognormal(&mut self, n: usize, median: f64, cv: f64) -> Vec<f64> {
            let sigma = (cv * cv).ln_1p().sqrt();
            (0..n)
                .map(|_| median * (sigma * self.normal()).exp())
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300) || (a - b).abs() <= tol
    }

    macro_rules! assert_close {
        ($a:expr, $b:expr, $tol:expr) => {
            let (a, b) = ($a, $b);
            assert!(close(a, b, $tol), "{} = {a}, expected {b}", stringify!($a));
        };
    }

    #[test]
    fn location_and_spread_match_numpy() {
        // numpy: np.var(v, ddof=1) = 4.571428571428571; scipy median_abs_deviation(v) = 0.5;
        // np.std(v, ddof=1) / np.mean(v) = 0.427617987059879
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&v), Some(5.0));
        assert_close!(variance(&v).unwrap(), 4.571428571428571, 1e-14);
        assert_eq!(median(&v), Some(4.5));
        assert_eq!(mad(&v), Some(0.5));
        assert_close!(cv(&v).unwrap(), 0.427617987059879, 1e-13);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
    }

    #[test]
    fn undefined_statistics_are_none() {
        assert_eq!(mean(&[]), None);
        assert_eq!(median(&[]), None);
        assert_eq!(variance(&[1.0]), None);
        assert_eq!(cv(&[1.0]), None);
        assert_eq!(cv(&[-1.0, 1.0]), None);
        assert_eq!(variance(&[3.0, 3.0]), Some(0.0));
    }

    #[test]
    fn ranks_match_scipy_rankdata() {
        // scipy: rankdata([3, 1, 4, 1, 5, 9, 2, 6]) = [4, 1.5, 5, 1.5, 6, 8, 3, 7]
        assert_eq!(
            ranks(&[3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]),
            vec![4.0, 1.5, 5.0, 1.5, 6.0, 8.0, 3.0, 7.0]
        );
        assert!(ranks(&[]).is_empty());
    }

    #[test]
    fn modified_z_score_flags_a_spike_only() {
        // By hand: median 10.1, |x - median| = .1 .1 .2 0 3.9, MAD = .1;
        // z(14) = 0.6745 * 3.9 / 0.1 = 26.3; z(9.9) = 0.6745 * 0.2 / 0.1 = 1.349.
        let v = [10.0, 10.2, 9.9, 10.1, 14.0];
        let z = modified_z_scores(&v).unwrap();
        assert_close!(z[4], 26.3055, 1e-9);
        assert_close!(z[2], 1.349, 1e-9);
        assert_eq!(outliers(&v), vec![4]);
        // 0.6745 * 0.5 / 0.1 = 3.37 is not above 3.5
        assert!(outliers(&[10.0, 10.2, 9.9, 10.1, 10.6]).is_empty());
    }

    #[test]
    fn zero_mad_means_no_outlier_check() {
        assert_eq!(modified_z_scores(&[5.0, 5.0, 5.0, 9.0]), None);
        assert!(outliers(&[5.0, 5.0, 5.0, 900.0]).is_empty());
    }

    #[test]
    fn t_quantiles_and_p_values_match_scipy() {
        // scipy: t.ppf(0.975, 3) = 3.1824463052837078, t.ppf(0.975, 7.5) = 2.333039626864974,
        // 2 * t.sf(2.1, 4.3) = 0.09881140465387347
        assert_close!(t_quantile(0.975, 3.0), 3.1824463052837078, 1e-9);
        assert_close!(t_quantile(0.975, 7.5), 2.333039626864974, 1e-9);
        assert_close!(t_two_sided_p(2.1, 4.3), 0.09881140465387347, 1e-9);
        assert_close!(t_two_sided_p(-2.1, 4.3), 0.09881140465387347, 1e-9);
    }

    #[test]
    fn welch_on_logs_matches_scipy() {
        // scipy 1.17: r = ttest_ind(log(y), log(x), equal_var=False); r.confidence_interval(.95)
        let x = [101.2f64, 98.7, 103.5, 99.9, 100.4].map(f64::ln);
        let y = [104.1f64, 106.3, 102.8, 107.0].map(f64::ln);
        let w = welch(&x, &y, 0.95).unwrap();
        assert_close!(w.d, 0.04189042033087631, 1e-12);
        assert_close!(w.t, 3.439296992492809, 1e-10);
        assert_close!(w.df, 6.4131954359688415, 1e-10);
        assert_close!(w.p, 0.012437518572198058, 1e-8);
        assert_close!(w.lo, 0.012546517329820556, 1e-8);
        assert_close!(w.hi, 0.07123432333193207, 1e-8);
    }

    #[test]
    fn welch_with_two_runs_a_side_matches_scipy() {
        // scipy: ttest_ind([3, 5], [1, 2], equal_var=False): t 2.23606797749979,
        // p 0.19872738893452602, df 1.4705882352941178, CI (-4.418522830071064, 9.418522830071064)
        let w = welch(&[1.0, 2.0], &[3.0, 5.0], 0.95).unwrap();
        assert_close!(w.t, 2.23606797749979, 1e-12);
        assert_close!(w.df, 1.4705882352941178, 1e-12);
        assert_close!(w.p, 0.19872738893452602, 1e-7);
        assert_close!(w.lo, -4.418522830071064, 1e-7);
        assert_close!(w.hi, 9.418522830071064, 1e-7);
    }

    #[test]
    fn a_between_run_variance_adds_to_the_standard_error_and_its_degrees_of_freedom() {
        let (x, y) = ([1.0, 2.0, 3.0], [2.0, 3.0, 4.0]);
        // without a term it is Welch, to the bit
        assert_eq!(
            welch_between(&x, &y, 0.95, Between::NONE),
            welch(&x, &y, 0.95)
        );
        // var x / m = var y / n = 1/3, the term 1 with 1 df: se^2 = 5/3, Satterthwaite's
        // df = (5/3)^2 / ((1/3)^2 / 2 + (1/3)^2 / 2 + 1^2 / 1) = (25/9) / (10/9) = 2.5
        let b = Between { var: 1.0, df: 1.0 };
        let w = welch_between(&x, &y, 0.95, b).unwrap();
        assert_close!(w.se, (5.0f64 / 3.0).sqrt(), 1e-12);
        assert_close!(w.df, 2.5, 1e-12);
        assert_close!(w.t, 1.0 / (5.0f64 / 3.0).sqrt(), 1e-12);
        let q = t_quantile(0.975, 2.5);
        assert_close!(w.lo, 1.0 - q * w.se, 1e-12);
        assert_close!(w.hi, 1.0 + q * w.se, 1e-12);
        assert_close!(w.p, t_two_sided_p(w.t, 2.5), 1e-12);
        // two ill-matched sides (Welch's df 1.47) and a well-known term: Satterthwaite would
        // give 3.24 degrees of freedom and a narrower interval than without the term
        // ([-2.08, 7.08] against [-4.42, 9.42]); the variance added never narrows it
        let (x, y) = ([1.0, 2.0], [3.0, 5.0]);
        let plain = welch(&x, &y, 0.95).unwrap();
        let w = welch_between(&x, &y, 0.95, Between { var: 1.0, df: 2.0 }).unwrap();
        assert_close!(w.se, 1.5, 1e-12);
        assert_close!(w.df, 3.24, 1e-12);
        assert_eq!((w.lo, w.hi, w.p), (plain.lo, plain.hi, plain.p));
        // both sides constant and a term: no longer an exact difference
        let c = welch_between(&[2.0, 2.0], &[3.0, 3.0], 0.95, b).unwrap();
        assert!(c.lo < 1.0 && c.hi > 1.0 && c.p > 0.0, "{c:?}");
    }

    #[test]
    fn welch_needs_two_values_a_side_and_handles_zero_spread() {
        assert_eq!(welch(&[1.0], &[2.0, 3.0], 0.95), None);
        let same = welch(&[2.0, 2.0], &[2.0, 2.0, 2.0], 0.95).unwrap();
        assert_eq!((same.d, same.p, same.lo, same.hi), (0.0, 1.0, 0.0, 0.0));
        let shifted = welch(&[2.0, 2.0], &[3.0, 3.0], 0.95).unwrap();
        assert_eq!(
            (shifted.d, shifted.p, shifted.lo, shifted.hi),
            (1.0, 0.0, 1.0, 1.0)
        );
        // one side constant: df is the other side's n - 1
        let one = welch(&[2.0, 2.0, 2.0], &[3.0, 4.0, 5.0], 0.95).unwrap();
        assert_close!(one.df, 2.0, 1e-12);
    }

    #[test]
    fn u_distribution_matches_brute_force_enumeration() {
        // Python: counts of sum(comb) - m(m-1)/2 over itertools.combinations(range(m+n), m)
        assert_eq!(
            u_distribution(4, 3).unwrap(),
            vec![1, 1, 2, 3, 4, 4, 5, 4, 4, 3, 2, 1, 1]
        );
        assert_eq!(
            u_distribution(5, 5).unwrap(),
            vec![
                1, 1, 2, 3, 5, 7, 9, 11, 14, 16, 18, 19, 20, 20, 19, 18, 16, 14, 11, 9, 7, 5, 3, 2,
                1, 1
            ]
        );
        assert_eq!(u_distribution(1, 1).unwrap(), vec![1, 1]);
        assert_eq!(u_distribution(0, 3), None);
        assert_eq!(u_distribution(61, 60), None);
    }

    #[test]
    fn u_distribution_totals_are_binomial_and_symmetric_up_to_the_exact_limit() {
        // C(120, 60) = 96614908840363322603893139521372656 (exact, Python math.comb)
        let d = u_distribution(60, 60).unwrap();
        assert_eq!(
            d.iter().sum::<u128>(),
            96614908840363322603893139521372656u128
        );
        assert!(d.iter().eq(d.iter().rev()));
        // C(12, 5) = 792
        assert_eq!(u_distribution(5, 7).unwrap().iter().sum::<u128>(), 792);
    }

    #[test]
    fn mann_whitney_exact_without_ties_matches_scipy() {
        // scipy: mannwhitneyu(x, y, method="exact") -> U 3.0, p 0.030303030303030304
        let r = mann_whitney(&[1.1, 2.3, 0.4, 5.6, 3.3, 2.9], &[4.4, 6.1, 7.2, 3.9, 5.0]).unwrap();
        assert_eq!(r.u, 3.0);
        assert!(!r.ties);
        assert_close!(r.p, 0.030303030303030304, 1e-12);
        // scipy: U 3.0, p 0.05555555555555555 (= 2 * 7 / 252)
        let r = mann_whitney(
            &[10.0, 11.0, 12.0, 13.0, 14.0],
            &[12.5, 13.5, 14.5, 15.5, 16.5],
        )
        .unwrap();
        assert_eq!(r.u, 3.0);
        assert_close!(r.p, 0.05555555555555555, 1e-12);
    }

    #[test]
    fn mann_whitney_with_ties_matches_scipy_exact_permutation_test() {
        // scipy: permutation_test((x, y), U statistic, permutation_type="independent",
        // n_resamples=inf, alternative="two-sided") -> p 0.12121212121212122; U1 = 6.0
        let r = mann_whitney(&[1.0, 2.0, 2.0, 3.0, 4.0], &[2.0, 3.0, 3.0, 5.0, 6.0, 6.0]).unwrap();
        assert!(r.ties);
        assert_eq!(r.u, 6.0);
        assert_close!(r.p, 0.12121212121212122, 1e-12);
    }

    #[test]
    fn mann_whitney_edge_cases() {
        // 2 against 2 can never reach p < 0.05: the smallest possible p is 2/6
        let r = mann_whitney(&[1.0, 2.0], &[3.0, 4.0]).unwrap();
        assert_close!(r.p, 1.0 / 3.0, 1e-12);
        // all values identical: one permutation class, p = 1
        let r = mann_whitney(&[5.0; 4], &[5.0; 5]).unwrap();
        assert_eq!((r.u, r.p), (10.0, 1.0));
        assert_eq!(mann_whitney(&[], &[1.0]), None);
        assert_eq!(mann_whitney(&[1.0; 61], &[2.0; 60]), None);
    }

    #[test]
    fn midrank_programme_reproduces_the_u_table_without_ties() {
        // Without ties the doubled mid-ranks are 2, 4, ..., 2N, so the permutation distribution of
        // the rank sum must give exactly the tabulated U tails, for every possible observed U.
        let (m, n) = (4, 5);
        let dist = u_distribution(m, n).unwrap();
        let total: u128 = dist.iter().sum();
        // x takes ranks 1..=m then slides up: observed U of x = 0, 1, ..., m*n
        for shift in 0..=n {
            let mut ranks2: Vec<u64> = (shift + 1..=shift + m).map(|r| 2 * r as u64).collect();
            ranks2.extend(
                (1..=shift)
                    .chain(shift + m + 1..=m + n)
                    .map(|r| 2 * r as u64),
            );
            let u = shift * m;
            let lower: u128 = dist[..=u].iter().sum();
            let upper: u128 = dist[u..].iter().sum();
            assert_eq!(
                midrank_sum_tails(&ranks2, m),
                (lower, upper, total),
                "U = {u}"
            );
        }
    }

    #[test]
    fn hodges_lehmann_matches_the_exact_interval_worked_in_python() {
        // Python (brute-force U distribution, R's wilcox.test rule): k = 3, achieved 1 - 2*4/252
        let h = hodges_lehmann(
            &[10.0, 11.0, 12.0, 13.0, 14.0],
            &[12.5, 13.5, 14.5, 15.5, 16.5],
            0.95,
        )
        .unwrap();
        assert_eq!(h.k, 3);
        assert_eq!((h.shift, h.lo, h.hi), (2.5, -0.5, 5.5));
        assert_close!(h.achieved_confidence, 0.9682539682539683, 1e-12);
        // R's wilcox.test example data (x 10 values, y 5), shift of y against x:
        // median -0.305, k = 9, interval (-0.76, 0.15), achieved 0.9600399600399601
        let x = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46];
        let y = [1.15, 0.88, 0.90, 0.74, 1.21];
        let h = hodges_lehmann(&x, &y, 0.95).unwrap();
        assert_eq!(h.k, 9);
        assert_close!(h.shift, -0.305, 1e-12);
        assert_close!(h.lo, -0.76, 1e-12);
        assert_close!(h.hi, 0.15, 1e-12);
        assert_close!(h.achieved_confidence, 0.9600399600399601, 1e-12);
    }

    #[test]
    fn hodges_lehmann_with_ties_uses_the_no_tie_critical_value() {
        // Python (same rule, brute-force U distribution for m = 5, n = 6): k = 4, median of the
        // 30 differences 2.0, interval (-1.0, 4.0), achieved 0.9696969696969697
        let h = hodges_lehmann(
            &[1.0, 2.0, 2.0, 3.0, 4.0],
            &[2.0, 3.0, 3.0, 5.0, 6.0, 6.0],
            0.95,
        )
        .unwrap();
        assert_eq!((h.k, h.shift, h.lo, h.hi), (4, 2.0, -1.0, 4.0));
        assert_close!(h.achieved_confidence, 0.9696969696969697, 1e-12);
    }

    #[test]
    fn hodges_lehmann_with_two_a_side_takes_the_full_range() {
        // k raised from 0 to 1: the interval is [min, max] of the differences, coverage 1 - 2/6
        let h = hodges_lehmann(&[1.0, 2.0], &[3.0, 4.0], 0.95).unwrap();
        assert_eq!((h.k, h.shift, h.lo, h.hi), (1, 2.0, 1.0, 3.0));
        assert_close!(h.achieved_confidence, 2.0 / 3.0, 1e-12);
    }

    #[test]
    fn benjamini_hochberg_matches_scipy() {
        // scipy: false_discovery_control([0.01, 0.04, 0.03, 0.005, 0.2, 0.5, 0.04])
        let adj = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.005, 0.2, 0.5, 0.04]);
        let want = [0.035, 0.056, 0.056, 0.035, 0.23333333333333336, 0.5, 0.056];
        for (a, w) in adj.iter().zip(want) {
            assert_close!(*a, w, 1e-12);
        }
        assert!(benjamini_hochberg(&[]).is_empty());
        assert_eq!(benjamini_hochberg(&[0.9, 0.95]), vec![0.95, 0.95]);
    }
}
