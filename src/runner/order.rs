//! The order of samples within a repetition.
//!
//! Why: if configuration b always runs after a, position effects (writeback of a's data, a warm
//! journal, the machine's thermal state) are attributed to b. `rotate` (the default) shifts the
//! configurations by one position every repetition, so over k repetitions of k configurations
//! each takes every position once; `random` shuffles configurations and tests with a recorded
//! seed; `fixed` keeps the file's order. Pure: no clock, no unseeded randomness.

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::fmt;

/// How samples are ordered within each repetition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Configurations rotate by one position per repetition; tests keep suite order.
    Rotate,
    /// Configurations, and tests within each, shuffled per repetition from this seed.
    Random {
        /// The seed (recorded with every sample).
        seed: u64,
    },
    /// Configurations and tests in file and suite order, every repetition.
    Fixed,
}

impl fmt::Display for Order {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Order::Rotate => f.write_str("rotate"),
            Order::Random { seed } => write!(f, "random (seed {seed})"),
            Order::Fixed => f.write_str("fixed"),
        }
    }
}

impl Order {
    /// The (configuration, test) indices of repetition `rep` (from 1), in the order they run:
    /// configuration by configuration, every test of one before the next.
    pub fn schedule(&self, rep: u32, configs: usize, tests: usize) -> Vec<(usize, usize)> {
        let mut cs: Vec<usize> = (0..configs).collect();
        let mut per_config: Vec<Vec<usize>> = vec![(0..tests).collect(); configs];
        match *self {
            Order::Fixed => {}
            Order::Rotate => {
                if configs > 0 {
                    cs.rotate_left((rep.saturating_sub(1) as usize) % configs);
                }
            }
            Order::Random { seed } => {
                // One stream per repetition, so a repetition's order does not depend on how
                // many repetitions came before (until-confident adds some).
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(
                    seed ^ (rep as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                );
                cs.shuffle(&mut rng);
                for ts in &mut per_config {
                    ts.shuffle(&mut rng);
                }
            }
        }
        cs.into_iter()
            .flat_map(|c| per_config[c].clone().into_iter().map(move |t| (c, t)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs_of(o: Order, rep: u32, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = o.schedule(rep, n, 2).into_iter().map(|(c, _)| c).collect();
        v.dedup();
        v
    }

    #[test]
    fn rotate_puts_every_configuration_in_every_position_once_per_cycle() {
        for n in 1..=4 {
            let mut seen = vec![vec![0; n]; n];
            for rep in 1..=n as u32 {
                for (pos, c) in configs_of(Order::Rotate, rep, n).into_iter().enumerate() {
                    seen[c][pos] += 1;
                }
            }
            assert!(seen.iter().flatten().all(|&k| k == 1), "{n}: {seen:?}");
        }
        assert_eq!(configs_of(Order::Rotate, 1, 2), [0, 1]);
        assert_eq!(configs_of(Order::Rotate, 2, 2), [1, 0]);
    }

    #[test]
    fn fixed_keeps_the_order_and_every_schedule_runs_each_pair_once() {
        assert_eq!(
            Order::Fixed.schedule(3, 2, 2),
            [(0, 0), (0, 1), (1, 0), (1, 1)]
        );
        for o in [Order::Fixed, Order::Rotate, Order::Random { seed: 7 }] {
            for rep in 1..5 {
                let mut s = o.schedule(rep, 3, 4);
                s.sort();
                let all: Vec<_> = (0..3).flat_map(|c| (0..4).map(move |t| (c, t))).collect();
                assert_eq!(s, all, "{o} rep {rep}");
            }
        }
    }

    #[test]
    fn random_is_reproducible_from_its_seed_and_differs_between_seeds() {
        let a = Order::Random { seed: 42 };
        assert_eq!(a.schedule(2, 3, 5), a.schedule(2, 3, 5));
        let differs = (1..10)
            .any(|rep| a.schedule(rep, 3, 5) != Order::Random { seed: 43 }.schedule(rep, 3, 5));
        assert!(differs);
        assert_eq!(a.to_string(), "random (seed 42)");
    }
}
