//! Change points in a history of runs: E-divisive means with Student's t significance, as in
//! Apache Otava (formerly DataStax Hunter, Fleming et al. 2023,
//! <https://doi.org/10.1145/3578244.3583719>), and as `docs/statistics.md` asks: window
//! 50, step 25, a first pass at 10x the p-value that finds weak points, a merge pass that re-tests
//! them at p = 0.001 and drops changes below a magnitude floor; detection on ranks for tail metrics.
//!
//! Why a module of its own: `fsdelta history` and the nightly job ask "when did this metric
//! move?", a different question from the two-sample verdict; the algorithm has its own state
//! (windows, weak points) and its own tests on synthetic series.
//!
//! What it must never do: I/O, logging, randomness (significance is a deterministic t test, not a
//! permutation test), or judging direction: a change point says where and how much, the caller
//! says whether that is worse.
//!
//! Deliberate differences from Otava 0.x `analysis.py` (none changes results on clean steps):
//! - the t test uses sample variances (divisor n - 1); Otava passes population standard
//!   deviations to scipy's `ttest_ind_from_stats`, which makes its p-values slightly smaller;
//! - after the merge step drops a point, both neighbours are re-tested; Otava re-tests the right
//!   neighbour and the point after it, leaving the left neighbour's statistics stale;
//! - the candidate maximises Q only over valid splits; Otava's `argmax` also sees the zero-filled
//!   invalid cells, which matters only when every valid Q is negative.

use super::stats;
use super::verdict::{DEFAULT_EPS, MetricClass};
use serde::{Deserialize, Serialize};

/// Default sliding window, in points (Otava's default).
pub const DEFAULT_WINDOW: usize = 50;
/// Default significance of a change point: 0.001 (statistics.md: 3-6 % of stationary 60-point
/// series get a false change point, against 35-42 % at 0.01).
pub const DEFAULT_MAX_P: f64 = 0.001;
/// Default magnitude floor: a change point whose segments differ by this fraction or less is
/// dropped even when significant (the smallest change worth reporting, 2 %).
pub const DEFAULT_MIN_MAGNITUDE: f64 = DEFAULT_EPS;

/// What the detection runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scale {
    /// The values themselves (throughput, means). Segments are compared by their means.
    Values,
    /// The ranks of the values in the whole series (p99, max: spikes stop dominating). Segments
    /// are compared by their medians on raw values.
    Ranks,
}

/// Parameters of the detection.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Options {
    /// Sliding window length in points; the step is half of it. At least 2.
    pub window: usize,
    /// Significance a change point must reach in the final (merge) pass. The first pass uses 10x
    /// this value (2x from 0.05, as Otava).
    pub max_p: f64,
    /// Magnitude floor as a fraction: max(|after/before - 1|, |before/after - 1|) of the segment
    /// centres must exceed it.
    pub min_magnitude: f64,
    /// Values or ranks.
    pub scale: Scale,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            window: DEFAULT_WINDOW,
            max_p: DEFAULT_MAX_P,
            min_magnitude: DEFAULT_MIN_MAGNITUDE,
            scale: Scale::Values,
        }
    }
}

impl Options {
    /// The defaults, on ranks for tail and max metrics (statistics.md).
    pub fn for_class(class: MetricClass) -> Self {
        Options {
            scale: match class {
                MetricClass::Throughput => Scale::Values,
                MetricClass::Tail | MetricClass::Max => Scale::Ranks,
            },
            ..Options::default()
        }
    }
}

/// A change in the series, described by the segments on either side of it (between its
/// neighbouring change points).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChangePoint {
    /// Index of the first point after the change.
    pub index: usize,
    /// Two-sided p-value of Student's t test between the two segments (on ranks with
    /// [`Scale::Ranks`]).
    pub p_value: f64,
    /// Number of points in the segment before.
    pub n_before: usize,
    /// Number of points in the segment after.
    pub n_after: usize,
    /// Mean of the raw values before.
    pub mean_before: f64,
    /// Mean of the raw values after.
    pub mean_after: f64,
    /// Median of the raw values before.
    pub median_before: f64,
    /// Median of the raw values after.
    pub median_after: f64,
    /// after / before of the segment centres (means with [`Scale::Values`], medians with
    /// [`Scale::Ranks`]); `None` when the centre before is 0.
    pub ratio: Option<f64>,
    /// max(|after/before - 1|, |before/after - 1|), a term counting as 0 where it divides by 0:
    /// what the magnitude floor is compared with.
    pub magnitude: f64,
}

/// One stretch of the series between change points.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// First index.
    pub start: usize,
    /// One past the last index.
    pub end: usize,
    /// Mean of the values.
    pub mean: f64,
    /// Median of the values.
    pub median: f64,
}

/// Finds the change points of `series` (one value per run set, in time order), sorted by index.
/// Returns none for a series with fewer than 3 points or with a non-finite value.
///
/// 1. Split: slide a window of `window` points by `window / 2` (or to the last point found);
///    in each, E-divisive means picks the split that maximises Q and keeps it while Student's t
///    between the two sides reaches 10x `max_p`, recursing into the pieces.
/// 2. Merge: re-test every weak point against its neighbouring points over the whole series;
///    repeatedly drop the point with the largest p-value while it is not below `max_p`, then the
///    point with the smallest magnitude while it is not above `min_magnitude`.
pub fn change_points(series: &[f64], options: &Options) -> Vec<ChangePoint> {
    if series.len() < 3 || series.iter().any(|v| !v.is_finite()) {
        return Vec::new();
    }
    let tested = match options.scale {
        Scale::Values => series.to_vec(),
        Scale::Ranks => stats::ranks(series),
    };
    let first_p = if options.max_p < 0.05 {
        options.max_p * 10.0
    } else if options.max_p < 0.5 {
        options.max_p * 2.0
    } else {
        options.max_p
    };

    // 1. split
    let window = options.window.max(2);
    let step = window / 2;
    let mut weak: Vec<usize> = Vec::new();
    let mut start = 0;
    while start < series.len() {
        let end = (start + window).min(series.len());
        let found = e_divisive(&tested[start..end], first_p);
        let last = found.last().map_or(0, |i| i + start);
        for i in found {
            if !weak.contains(&(i + start)) {
                weak.push(i + start);
            }
        }
        start = last.max(start + step);
    }
    weak.sort_unstable();

    // 2. merge
    let mut points: Vec<ChangePoint> = (0..weak.len())
        .map(|j| describe(series, &tested, &weak, j, options.scale))
        .collect();
    while !points.is_empty() {
        let mut weakest = first_max_by(&points, |c| c.p_value);
        if points[weakest].p_value < options.max_p {
            weakest = first_max_by(&points, |c| -c.magnitude);
            if points[weakest].magnitude > options.min_magnitude {
                break;
            }
        }
        points.remove(weakest);
        weak.remove(weakest);
        for j in [weakest.wrapping_sub(1), weakest] {
            if j < points.len() {
                points[j] = describe(series, &tested, &weak, j, options.scale);
            }
        }
    }
    points
}

/// The segments of `series` between the given change points (which must be sorted by index).
pub fn segments(series: &[f64], points: &[ChangePoint]) -> Vec<Segment> {
    let mut bounds = vec![0];
    bounds.extend(points.iter().map(|c| c.index));
    bounds.push(series.len());
    bounds
        .windows(2)
        .filter(|b| b[0] < b[1])
        .map(|b| {
            let part = &series[b[0]..b[1]];
            Segment {
                start: b[0],
                end: b[1],
                mean: stats::mean(part).unwrap_or(f64::NAN),
                median: stats::median(part).unwrap_or(f64::NAN),
            }
        })
        .collect()
}

/// Index of the first element with the largest key.
fn first_max_by(points: &[ChangePoint], key: impl Fn(&ChangePoint) -> f64) -> usize {
    let mut best = 0;
    for (i, c) in points.iter().enumerate() {
        if key(c) > key(&points[best]) {
            best = i;
        }
    }
    best
}

/// Statistics of the `j`-th of the sorted change points `indices`, between its neighbours.
fn describe(
    series: &[f64],
    tested: &[f64],
    indices: &[usize],
    j: usize,
    scale: Scale,
) -> ChangePoint {
    let index = indices[j];
    let lo = if j == 0 { 0 } else { indices[j - 1] };
    let hi = indices.get(j + 1).copied().unwrap_or(series.len());
    let (before, after) = (&series[lo..index], &series[index..hi]);
    let p_value = student_t_p(&tested[lo..index], &tested[index..hi]);
    let mean_before = stats::mean(before).unwrap_or(f64::NAN);
    let mean_after = stats::mean(after).unwrap_or(f64::NAN);
    let median_before = stats::median(before).unwrap_or(f64::NAN);
    let median_after = stats::median(after).unwrap_or(f64::NAN);
    let (b, a) = match scale {
        Scale::Values => (mean_before, mean_after),
        Scale::Ranks => (median_before, median_after),
    };
    let forward = if b != 0.0 { a / b - 1.0 } else { 0.0 };
    let backward = if a != 0.0 { b / a - 1.0 } else { 0.0 };
    ChangePoint {
        index,
        p_value,
        n_before: before.len(),
        n_after: after.len(),
        mean_before,
        mean_after,
        median_before,
        median_after,
        ratio: (b != 0.0).then(|| a / b),
        magnitude: forward.abs().max(backward.abs()),
    }
}

/// Two-sided p-value of Student's pooled-variance t test between `left` and `right` (scipy
/// `ttest_ind(equal_var=True)`). 1 when there are only two points in all; with zero pooled
/// variance, 0 if the means differ and 1 if not.
fn student_t_p(left: &[f64], right: &[f64]) -> f64 {
    let (n1, n2) = (left.len(), right.len());
    if n1 == 0 || n2 == 0 || n1 + n2 <= 2 {
        return 1.0;
    }
    let (m1, m2) = (
        stats::mean(left).unwrap_or(0.0),
        stats::mean(right).unwrap_or(0.0),
    );
    let ss = |xs: &[f64], m: f64| xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>();
    let df = (n1 + n2 - 2) as f64;
    let pooled = (ss(left, m1) + ss(right, m2)) / df;
    let se = (pooled * (1.0 / n1 as f64 + 1.0 / n2 as f64)).sqrt();
    if se == 0.0 {
        return if m1 == m2 { 1.0 } else { 0.0 };
    }
    stats::t_two_sided_p((m2 - m1) / se, df)
}

/// E-divisive means on one window: change points (window-relative, sorted) found by repeatedly
/// splitting the piece with the largest Q while the split is significant at `max_p`.
fn e_divisive(w: &[f64], max_p: f64) -> Vec<usize> {
    let q = QTable::new(w);
    let mut points: Vec<usize> = Vec::new();
    loop {
        let mut bounds = vec![0];
        bounds.extend(&points);
        bounds.push(w.len());
        let mut best: Option<(usize, usize, usize, f64)> = None; // (start, tau, end, q)
        for b in bounds.windows(2) {
            if b[1] - b[0] < 2 {
                continue;
            }
            if let Some((tau, qhat)) = q.best_split(b[0], b[1]) {
                if best.is_none_or(|(_, _, _, bq)| qhat > bq) {
                    best = Some((b[0], tau, b[1], qhat));
                }
            }
        }
        let Some((s, tau, e, _)) = best else { break };
        if student_t_p(&w[s..tau], &w[tau..e]) <= max_p {
            let at = points.partition_point(|&p| p < tau);
            points.insert(at, tau);
        } else {
            break;
        }
    }
    points
}

/// Column prefix sums of the distance matrix of one window: `prefix[c][r]` is
/// `sum_{i < r} |w_i - w_c|`, so any block sum of distances to point c costs O(1).
struct QTable {
    prefix: Vec<Vec<f64>>,
}

impl QTable {
    fn new(w: &[f64]) -> Self {
        let prefix = w
            .iter()
            .map(|&c| {
                let mut row = Vec::with_capacity(w.len() + 1);
                let mut acc = 0.0;
                row.push(acc);
                for &v in w {
                    acc += (v - c).abs();
                    row.push(acc);
                }
                row
            })
            .collect();
        QTable { prefix }
    }

    /// Sum of |w_i - w_c| over i in [a, b).
    fn dist(&self, c: usize, a: usize, b: usize) -> f64 {
        self.prefix[c][b] - self.prefix[c][a]
    }

    /// The split tau of `[s, e)` maximising Q(tau, kappa) over s < tau < kappa <= e, with
    /// X = w[s..tau] (n points) and Y = w[tau..kappa] (m points):
    /// Q = 2/(m+n) sum|X-Y| - 2m/((m+n)(n-1)) sum_{i<k}|X_i-X_k| - 2n/((m+n)(m-1)) sum_{j<k}|Y_j-Y_k|
    /// (Matteson and James 2014 with alpha = 1; a within term is 0 for a single point). Ties go
    /// to the smallest tau, then the smallest kappa, as numpy's argmax in Otava.
    fn best_split(&self, s: usize, e: usize) -> Option<(usize, f64)> {
        let mut best: Option<(usize, f64)> = None;
        let mut within_x = 0.0;
        for tau in s + 1..e {
            within_x += self.dist(tau - 1, s, tau - 1);
            let n = (tau - s) as f64;
            let (mut between, mut within_y) = (0.0, 0.0);
            for kappa in tau + 1..=e {
                let newest = kappa - 1;
                between += self.dist(newest, s, tau);
                within_y += self.dist(newest, tau, newest);
                let m = (kappa - tau) as f64;
                let mut q = 2.0 / (m + n) * between;
                if n > 1.0 {
                    q -= 2.0 * m / ((m + n) * (n - 1.0)) * within_x;
                }
                if m > 1.0 {
                    q -= 2.0 * n / ((m + n) * (m - 1.0)) * within_y;
                }
                if best.is_none_or(|(_, b)| q > b) {
                    best = Some((tau, q));
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::synthetic::Noise;

    /// Deterministic pseudo-noise in [-0.5, 0.5), the same formula as the Python that ran Otava.
    fn u(i: usize) -> f64 {
        let v = (i as f64 * 12.9898).sin() * 43758.5453;
        v - v.floor() - 0.5
    }

    /// Piecewise-constant levels `(start, end, level)` times (1 + amp * u(i)).
    fn levels(parts: &[(usize, usize, f64)], amp: f64) -> Vec<f64> {
        parts
            .iter()
            .flat_map(|&(s, e, level)| (s..e).map(move |i| level * (1.0 + amp * u(i))))
            .collect()
    }

    fn indices(points: &[ChangePoint]) -> Vec<usize> {
        points.iter().map(|c| c.index).collect()
    }

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol * b.abs().max(1.0), "{a} != {b}");
    }

    #[test]
    fn q_statistic_matches_brute_force_and_otava() {
        // Python brute force of Q over every (tau, kappa), and Otava's PairDistanceCalculator:
        // CandidateChangePoint(index=4, qhat=8.162962962962961)
        let w = [1.0, 1.2, 0.9, 1.1, 3.0, 3.2, 2.9, 3.1, 3.0];
        let q = QTable::new(&w);
        let (tau, qhat) = q.best_split(0, w.len()).unwrap();
        assert_eq!(tau, 4);
        close(qhat, 8.162962962962961, 1e-12);
        // sub-intervals: brute force gives max Q 0.2 on [0, 4) and on [4, 9)
        close(q.best_split(0, 4).unwrap().1, 0.2, 1e-12);
        close(q.best_split(4, 9).unwrap().1, 0.2, 1e-12);
        assert_eq!(q.best_split(3, 4), None);
    }

    #[test]
    fn student_t_matches_scipy() {
        // scipy: ttest_ind([1, 1.2, .9, 1.1], [3, 3.2, 2.9, 3.1, 3]).pvalue = 4.706874803551705e-08
        close(
            student_t_p(&[1.0, 1.2, 0.9, 1.1], &[3.0, 3.2, 2.9, 3.1, 3.0]),
            4.706874803551705e-08,
            1e-6,
        );
        // scipy: ttest_ind([10, 11.5, 9.8], [12, 12.6]).pvalue = 0.08285553179100491
        close(
            student_t_p(&[10.0, 11.5, 9.8], &[12.0, 12.6]),
            0.08285553179100491,
            1e-9,
        );
        assert_eq!(student_t_p(&[1.0], &[2.0]), 1.0);
        assert_eq!(student_t_p(&[1.0, 1.0], &[2.0, 2.0]), 0.0);
        assert_eq!(student_t_p(&[1.0, 1.0], &[1.0, 1.0]), 1.0);
    }

    #[test]
    fn two_steps_match_otava() {
        // Otava (apache/otava HEAD, compute_change_points(window_len=50, max_pvalue=0.001,
        // min_magnitude=0.02)) on this series: change points [40, 95]. Segment means and p-values:
        // numpy / scipy ttest_ind on the neighbouring segments. (Otava itself reports 109.127 as
        // the mean after 40: it keeps the statistics of a dropped weak point at 89, see module docs.)
        let s = levels(&[(0, 40, 100.0), (40, 95, 110.0), (95, 150, 104.0)], 0.06);
        let cps = change_points(&s, &Options::default());
        assert_eq!(indices(&cps), vec![40, 95]);
        close(cps[0].mean_before, 100.1270997796672, 1e-12);
        close(cps[0].mean_after, 109.3340435166368, 1e-12);
        close(cps[1].mean_after, 104.15975577512738, 1e-12);
        assert_eq!((cps[0].n_before, cps[0].n_after), (40, 55));
        close(
            cps[0].ratio.unwrap(),
            109.3340435166368 / 100.1270997796672,
            1e-12,
        );
        // scipy: 2.744837610106895e-43 and 3.726441405193738e-27
        assert!(cps[0].p_value < 1e-40 && cps[1].p_value < 1e-25, "{cps:?}");
    }

    #[test]
    fn several_steps_match_otava() {
        // Otava: [20, 45, 70]
        let s = levels(
            &[
                (0, 20, 50.0),
                (20, 45, 60.0),
                (45, 70, 50.0),
                (70, 130, 45.0),
            ],
            0.08,
        );
        let cps = change_points(&s, &Options::default());
        assert_eq!(indices(&cps), vec![20, 45, 70]);
        close(cps[1].mean_before, 60.12750106862189, 1e-12);
        close(cps[1].mean_after, 49.42334871983945, 1e-12);
        close(cps[2].mean_after, 44.83017637563215, 1e-12);
    }

    #[test]
    fn the_magnitude_floor_drops_small_significant_steps_as_otava() {
        // a 1.5 % step measured very precisely: Otava finds [60] with min_magnitude 0, none at 0.02
        let s = levels(&[(0, 60, 100.0), (60, 120, 101.5)], 0.01);
        let none = change_points(&s, &Options::default());
        assert!(none.is_empty(), "{none:?}");
        let floorless = Options {
            min_magnitude: 0.0,
            ..Options::default()
        };
        let cps = change_points(&s, &floorless);
        assert_eq!(indices(&cps), vec![60]);
        // scipy ttest_ind of the two halves: 7.278417097439181e-52
        assert!(cps[0].p_value < 1e-45);
        close(cps[0].mean_after, 101.42230138160241, 1e-12);
    }

    fn step_series(noise: &mut Noise, n: usize, at: usize, cv: f64, step: f64) -> Vec<f64> {
        let mut s = noise.lognormal(at, 100.0, cv);
        s.extend(noise.lognormal(n - at, 100.0 * (1.0 + step), cv));
        s
    }

    #[test]
    fn a_ten_percent_step_at_cv_3_is_found_within_three_runs() {
        // statistics.md: detection within ±3 runs at p = 0.001: CV 3 % 1.00, CV 5 % .93
        let mut noise = Noise::new(42);
        let (mut found, mut exactly_one) = (0, 0);
        for _ in 0..100 {
            let s = step_series(&mut noise, 60, 30, 0.03, 0.10);
            let cps = change_points(&s, &Options::default());
            found += usize::from(cps.iter().any(|c| c.index.abs_diff(30) <= 3));
            exactly_one += usize::from(cps.len() == 1);
        }
        assert_eq!(found, 100);
        assert!(exactly_one >= 90, "{exactly_one}"); // measured: 96
        let mut found = 0;
        for _ in 0..200 {
            let s = step_series(&mut noise, 60, 30, 0.05, 0.10);
            let cps = change_points(&s, &Options::default());
            found += usize::from(cps.iter().any(|c| c.index.abs_diff(30) <= 3));
        }
        assert!(found >= 170, "CV 5 %: {found} of 200"); // measured: 187
    }

    #[test]
    fn stationary_series_rarely_get_a_change_point() {
        // issue 5: none in at least 90 % of stationary series; statistics.md: 3-6 % at p = 0.001.
        // Measured with these seeds: 3, 5 and 4 of 200.
        for (seed, cv) in [(1, 0.03), (2, 0.05), (3, 0.10)] {
            let mut noise = Noise::new(seed);
            let mut false_series = 0;
            for _ in 0..200 {
                let s = noise.lognormal(60, 100.0, cv);
                false_series += usize::from(!change_points(&s, &Options::default()).is_empty());
            }
            assert!(false_series <= 20, "cv {cv}: {false_series} of 200");
        }
    }

    /// Lognormal noise at CV 5 % where each point is 1.5x higher with probability 0.1.
    fn spiky(noise: &mut Noise, n: usize, median: f64) -> Vec<f64> {
        let mut v = noise.lognormal(n, median, 0.05);
        for x in &mut v {
            if noise.uniform() < 0.1 {
                *x *= 1.5;
            }
        }
        v
    }

    #[test]
    fn ranks_keep_spiky_series_quiet_and_find_their_steps() {
        // statistics.md: on spiky series, ranks cut false series from 12-18 % to 4-6 % and raise
        // detection of a 10 % step at CV 5 % from .17 to .80
        let ranks = Options::for_class(MetricClass::Tail);
        assert_eq!(ranks.scale, Scale::Ranks);
        let values = Options::default();
        let mut noise = Noise::new(77);
        let (mut false_ranks, mut false_values, mut found_ranks, mut found_values) = (0, 0, 0, 0);
        let near = |cps: &[ChangePoint]| cps.iter().any(|c| c.index.abs_diff(30) <= 3);
        for _ in 0..200 {
            let flat = spiky(&mut noise, 60, 100.0);
            false_ranks += usize::from(!change_points(&flat, &ranks).is_empty());
            false_values += usize::from(!change_points(&flat, &values).is_empty());
            let mut step = spiky(&mut noise, 30, 100.0);
            step.extend(spiky(&mut noise, 30, 110.0));
            found_ranks += usize::from(near(&change_points(&step, &ranks)));
            found_values += usize::from(near(&change_points(&step, &values)));
        }
        // measured with this seed: false series 5 (ranks) and 16 (values) of 200; step found 172
        // (ranks) and 33 (values) of 200
        assert!(false_ranks <= 20, "{false_ranks}");
        assert!(
            false_values > false_ranks,
            "{false_values} vs {false_ranks}"
        );
        assert!(found_ranks >= 140, "{found_ranks}");
        assert!(
            found_ranks > found_values + 40,
            "{found_ranks} vs {found_values}"
        );
    }

    #[test]
    fn rank_change_points_report_raw_medians() {
        let s = levels(&[(0, 30, 1000.0), (30, 60, 1300.0)], 0.05);
        let cps = change_points(&s, &Options::for_class(MetricClass::Max));
        assert_eq!(indices(&cps), vec![30]);
        let c = cps[0];
        assert_eq!(c.median_before, stats::median(&s[..30]).unwrap());
        assert_eq!(c.ratio, Some(c.median_after / c.median_before));
        close(c.magnitude, c.ratio.unwrap() - 1.0, 1e-12);
    }

    #[test]
    fn segments_follow_the_change_points() {
        let s = levels(&[(0, 40, 100.0), (40, 95, 110.0), (95, 150, 104.0)], 0.06);
        let cps = change_points(&s, &Options::default());
        let segs = segments(&s, &cps);
        assert_eq!(
            segs.iter().map(|g| (g.start, g.end)).collect::<Vec<_>>(),
            vec![(0, 40), (40, 95), (95, 150)]
        );
        close(segs[1].mean, 109.3340435166368, 1e-12);
        assert_eq!(segments(&s, &[]).len(), 1);
    }

    #[test]
    fn short_or_broken_series_give_nothing() {
        assert!(change_points(&[], &Options::default()).is_empty());
        assert!(change_points(&[1.0, 2.0], &Options::default()).is_empty());
        let mut s = levels(&[(0, 30, 100.0), (30, 60, 150.0)], 0.02);
        assert_eq!(change_points(&s, &Options::default()).len(), 1);
        s[10] = f64::NAN;
        assert!(change_points(&s, &Options::default()).is_empty());
        // a constant series has no change
        assert!(change_points(&[5.0; 80], &Options::default()).is_empty());
    }
}
