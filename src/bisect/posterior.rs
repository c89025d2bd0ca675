//! The probability that each candidate is the culprit (the first bad commit), updated after
//! every step's answer as in noisy binary search (Jan Kara's `git bisect --confidence`,
//! "Bayesian bisection"): an answer that may be wrong with chance `error` multiplies the
//! candidates it agrees with by `1 - error` and the others by `error`, so one wrong answer lowers
//! probabilities instead of discarding half the range for good.
//!
//! Pure arithmetic on a [`Graph`]; it must never choose how to measure.

use super::classify::Class;
use super::graph::Graph;

/// Flat probabilities over `n` candidates.
pub fn flat(n: usize) -> Vec<f64> {
    vec![1.0 / n as f64; n]
}

fn normalize(p: &mut [f64]) {
    let s: f64 = p.iter().sum();
    if s > 0.0 {
        p.iter_mut().for_each(|x| *x /= s);
    }
}

/// Update `p` with the answer `class` at candidate `step`, wrong with chance `error`. An
/// unclear answer changes nothing.
pub fn update(p: &mut [f64], graph: &Graph, step: usize, class: Class, error: f64) {
    let bad = match class {
        Class::LikeBad => true,
        Class::LikeGood => false,
        Class::Unclear => return,
    };
    for (c, x) in p.iter_mut().enumerate() {
        // Culprit c makes `step` bad exactly when `step` contains it.
        *x *= if graph.contains(step, c) == bad {
            1.0 - error
        } else {
            error
        };
    }
    normalize(p);
}

/// Evidence against `culprit` itself (its confirmation failed): its probability times `factor`.
pub fn discount(p: &mut [f64], culprit: usize, factor: f64) {
    p[culprit] *= factor;
    normalize(p);
}

/// The most probable candidate and its probability.
pub fn top(p: &[f64]) -> (usize, f64) {
    p.iter()
        .copied()
        .enumerate()
        .fold((0, f64::MIN), |b, (i, x)| if x > b.1 { (i, x) } else { b })
}

/// The fewest candidates holding at least `confidence` of the probability: on a line the
/// shortest run of consecutive commits (ties: the most probable), elsewhere the most probable
/// ones. Returned oldest first, with the mass they hold.
pub fn smallest_range(p: &[f64], graph: &Graph, confidence: f64) -> (Vec<usize>, f64) {
    let n = p.len();
    if graph.is_line() {
        let mut best: Option<(usize, usize, f64)> = None;
        let mut j = 0;
        let mut sum = 0.0;
        for i in 0..n {
            while j < n && sum < confidence - 1e-12 {
                sum += p[j];
                j += 1;
            }
            if sum >= confidence - 1e-12 {
                let better = best
                    .is_none_or(|(bi, bj, bs)| j - i < bj - bi || (j - i == bj - bi && sum > bs));
                if better {
                    best = Some((i, j, sum));
                }
            }
            sum -= p[i];
        }
        let (i, j, s) = best.unwrap_or((0, n, 1.0));
        return ((i..j).collect(), s);
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| p[b].total_cmp(&p[a]));
    let mut chosen = Vec::new();
    let mut sum = 0.0;
    for i in order {
        if sum >= confidence - 1e-12 {
            break;
        }
        sum += p[i];
        chosen.push(i);
    }
    chosen.sort_unstable();
    (chosen, sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consistent_answers_concentrate_and_one_wrong_answer_is_survived() {
        let g = Graph::line(16);
        let mut p = flat(16);
        // Culprit c5: c7 bad, c3 good, c5 bad, c4 good.
        for (s, c) in [
            (7, Class::LikeBad),
            (3, Class::LikeGood),
            (5, Class::LikeBad),
            (4, Class::LikeGood),
        ] {
            update(&mut p, &g, s, c, 0.02);
        }
        let (i, x) = top(&p);
        assert_eq!(i, 5);
        assert!(x > 0.9, "{x}");
        // A wrong answer (c5 good) leaves c5 possible, not excluded.
        update(&mut p, &g, 5, Class::LikeGood, 0.02);
        assert!(p[5] > 0.1, "{}", p[5]);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        // Unclear changes nothing.
        let before = p.clone();
        update(&mut p, &g, 9, Class::Unclear, 0.5);
        assert_eq!(p, before);
    }

    #[test]
    fn the_smallest_range_is_contiguous_on_a_line() {
        let g = Graph::line(6);
        let p = [0.01, 0.02, 0.45, 0.02, 0.48, 0.02];
        let (r, s) = smallest_range(&p, &g, 0.95);
        assert_eq!(r, vec![2, 3, 4]);
        assert!((s - 0.95).abs() < 1e-9);
        assert_eq!(top(&p), (4, 0.48));
    }
}
