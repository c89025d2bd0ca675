//! The candidate commits of a bisection as a graph: every commit reachable from the bad end and
//! not from the good one (`git rev-list good..bad`), oldest first, with which candidates each
//! one contains (itself and its ancestors among the candidates).
//!
//! Why a graph and not a list: a history with merges has no "middle"; a commit is bad exactly
//! when the culprit is one of its ancestors, so the step that halves the candidates is the one
//! whose ancestor set is closest to half, as `git bisect` takes it. This module only answers
//! questions about the graph; it must never run git or hold probabilities.

/// A set of candidates, one bit each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    /// Whether candidate `i` is in the set.
    pub fn has(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }
    fn union(&mut self, other: &Bits) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }
}

/// The candidates, oldest first (every parent before its children).
#[derive(Clone, Debug)]
pub struct Graph {
    /// The commits' names (hashes), oldest first; the last is the bad end.
    pub commits: Vec<String>,
    /// For each candidate, the candidates it contains (itself and its ancestors).
    contains: Vec<Bits>,
    /// Whether the history is a line (every candidate contains exactly those before it).
    linear: bool,
}

/// A history the bisection cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    /// No commit between the ends.
    #[error(
        "there is no commit between the good and the bad end: is the good one an ancestor of the bad one?"
    )]
    Empty,
    /// A parent listed after its child.
    #[error("the commit list is not in topological order ({0} comes before its parent)")]
    Order(String),
}

/// Below this probability (or above one less it) of holding the culprit, a commit's answer is
/// taken as known and it is not measured (see [`Graph::choose`]).
pub const CERTAIN: f64 = 0.01;

impl Graph {
    /// A graph from `(commit, parents)` pairs, oldest first (`git rev-list --topo-order
    /// --reverse --parents good..bad`); parents outside the list (the good side) are ignored.
    pub fn new(list: &[(String, Vec<String>)]) -> Result<Graph, GraphError> {
        if list.is_empty() {
            return Err(GraphError::Empty);
        }
        let n = list.len();
        let index: std::collections::HashMap<&str, usize> = list
            .iter()
            .enumerate()
            .map(|(i, (c, _))| (c.as_str(), i))
            .collect();
        let mut contains: Vec<Bits> = Vec::with_capacity(n);
        let mut linear = true;
        for (i, (c, parents)) in list.iter().enumerate() {
            let mut b = Bits::new(n);
            b.set(i);
            let inside: Vec<usize> = parents
                .iter()
                .filter_map(|p| index.get(p.as_str()).copied())
                .collect();
            for &p in &inside {
                if p >= i {
                    return Err(GraphError::Order(c.clone()));
                }
                let parent = contains[p].clone();
                b.union(&parent);
            }
            linear &= if i == 0 {
                inside.is_empty()
            } else {
                inside == [i - 1]
            };
            contains.push(b);
        }
        Ok(Graph {
            commits: list.iter().map(|(c, _)| c.clone()).collect(),
            contains,
            linear,
        })
    }

    /// A line of `n` commits named `c0`..: the simulation's history.
    pub fn line(n: usize) -> Graph {
        let list: Vec<(String, Vec<String>)> = (0..n)
            .map(|i| {
                let parents = if i == 0 {
                    vec![]
                } else {
                    vec![format!("c{}", i - 1)]
                };
                (format!("c{i}"), parents)
            })
            .collect();
        Graph::new(&list).expect("a line is in order")
    }

    /// Whether the history is a line.
    pub fn is_line(&self) -> bool {
        self.linear
    }

    /// Number of candidates.
    pub fn len(&self) -> usize {
        self.commits.len()
    }

    /// Never: a graph has at least one candidate.
    pub fn is_empty(&self) -> bool {
        self.commits.is_empty()
    }

    /// Whether candidate `step` contains candidate `culprit` (is bad if `culprit` is the culprit).
    pub fn contains(&self, step: usize, culprit: usize) -> bool {
        if self.linear {
            culprit <= step
        } else {
            self.contains[step].has(culprit)
        }
    }

    /// The probability mass `step` contains: the chance it measures bad.
    pub fn mass(&self, step: usize, p: &[f64]) -> f64 {
        if self.linear {
            p[..=step].iter().sum()
        } else {
            (0..self.len())
                .filter(|&c| self.contains[step].has(c))
                .map(|c| p[c])
                .sum()
        }
    }

    /// The next commit to measure: of the candidates not `excluded`, the one whose contained
    /// mass is closest to half. With flat probabilities that is `git bisect`'s choice (the
    /// commit that leaves the fewest candidates in the worse case); otherwise the weighted
    /// median. The bad end itself (the last candidate) is never chosen: it is known bad. Nor is
    /// a commit whose answer is all but certain (contained mass below [`CERTAIN`] or above
    /// 1 - [`CERTAIN`]): measuring it tells nothing, and each step may be a kernel build and
    /// boots (a bisection whose informative commits all stayed unclear once measured such
    /// neighbours eleven times over, up to its step limit).
    /// `None` when no candidate is left to choose.
    pub fn choose(&self, p: &[f64], excluded: &[bool]) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        let mut cum = 0.0;
        for i in 0..self.len().saturating_sub(1) {
            let m = if self.linear {
                cum += p[i];
                cum
            } else {
                self.mass(i, p)
            };
            if excluded[i] || !(CERTAIN..=1.0 - CERTAIN).contains(&m) {
                continue;
            }
            let d = (m - 0.5).abs();
            // Ties go to the older commit, as git bisect's do (deterministic either way).
            if best.is_none_or(|(_, bd)| d < bd - 1e-12) {
                best = Some((i, d));
            }
        }
        best.map(|(i, _)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dag(edges: &[(&str, &[&str])]) -> Graph {
        let list: Vec<(String, Vec<String>)> = edges
            .iter()
            .map(|(c, ps)| (c.to_string(), ps.iter().map(|p| p.to_string()).collect()))
            .collect();
        Graph::new(&list).unwrap()
    }

    fn flat_of(n: usize) -> Vec<f64> {
        vec![1.0 / n as f64; n]
    }

    #[test]
    fn flat_probabilities_choose_the_middle_as_git_bisect() {
        let g = Graph::line(16);
        let p = vec![1.0 / 16.0; 16];
        // c7 contains 8 of 16 candidates: exactly half.
        assert_eq!(g.choose(&p, &[false; 16]), Some(7));
        let mut ex = vec![false; 16];
        ex[7] = true;
        let c = g.choose(&p, &ex).unwrap();
        assert!(c == 6 || c == 8, "{c}");
    }

    /// The stuck end of a bisection under load: of three last candidates (c5, c6, c7 at a third
    /// each), c5 and c6 stayed unclear; c4 (known good) and c7 (the bad end's side) have certain
    /// answers, so nothing is chosen and the bisection ends with the range.
    #[test]
    fn a_commit_whose_answer_is_certain_is_not_chosen() {
        let g = Graph::line(9);
        let mut p = vec![0.0; 9];
        p[5] = 1.0 / 3.0;
        p[6] = 1.0 / 3.0;
        p[7] = 1.0 / 3.0;
        let mut ex = vec![false; 9];
        assert_eq!(g.choose(&p, &ex), Some(5));
        ex[5] = true;
        assert_eq!(g.choose(&p, &ex), Some(6));
        ex[6] = true;
        assert_eq!(g.choose(&p, &ex), None, "c4 and c7 would tell nothing");
        // Not quite certain yet (an earlier answer may have been wrong): still chosen.
        p[4] = 0.03;
        p[7] -= 0.03;
        assert_eq!(g.choose(&p, &ex), Some(4));
    }

    #[test]
    fn uneven_probabilities_choose_the_weighted_median() {
        let g = Graph::line(8);
        let mut p = vec![0.01; 8];
        p[1] = 0.93;
        let s: f64 = p.iter().sum();
        p.iter_mut().for_each(|x| *x /= s);
        // Mass of c0 = 0.01, of c1 = 0.94: c1 is closer to half (the weighted median), where
        // flat probabilities would take c3.
        assert_eq!(g.choose(&p, &[false; 8]), Some(1));
        assert_eq!(g.choose(&flat_of(8), &[false; 8]), Some(3));
    }

    #[test]
    fn merges_follow_ancestry() {
        // a - b - d (merge of b and c), a - c; e on top of d.
        let g = dag(&[
            ("a", &["g0"]),
            ("b", &["a"]),
            ("c", &["a"]),
            ("d", &["b", "c"]),
            ("e", &["d"]),
        ]);
        assert!(g.contains(3, 2) && g.contains(3, 1) && g.contains(1, 0));
        assert!(!g.contains(1, 2), "b does not contain c");
        let p = vec![0.2; 5];
        // b and c contain 2 of 5 (0.4), d contains 4 (0.8), a 1 (0.2): b, the older, wins.
        assert_eq!(g.choose(&p, &[false; 5]), Some(1));
        assert!((g.mass(3, &p) - 0.8).abs() < 1e-12);
    }

    #[test]
    fn a_list_out_of_order_is_refused() {
        let list = vec![
            ("b".to_string(), vec!["a".to_string()]),
            ("a".to_string(), vec![]),
        ];
        assert_eq!(
            Graph::new(&list).unwrap_err(),
            GraphError::Order("b".into())
        );
        assert_eq!(Graph::new(&[]).unwrap_err(), GraphError::Empty);
    }
}
