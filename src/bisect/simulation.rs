//! The seeded simulation of issue 37: does the noisy bisection find a planted regression among
//! 16, 128 and 1,024 commits measured with lognormal noise (CV 2-10 %), with and without build
//! failures, and in how many steps, beside plain bisection at a fixed 3 runs a step (each step
//! judged as `fsdelta compare --bisect` judges: regressed bad, inconclusive skip, else good)?
//!
//! The loop simulated is the real one ([`super::advance`]) with a [`Lab`] that draws numbers:
//! every decision (choice, escalation, update, confirmation) is the code users run.
//! Goal (asserted): a 10 % regression at CV 3 % found in at least 95 % of bisections, with a
//! median of at most log2(N) + 3 steps.

use super::{BisectError, Built, Followed, Lab, Measured, Outcome, Settings, Side, State, advance};
use crate::compare::stats::synthetic::Noise;
use crate::compare::verdict::{self, MetricClass, Verdict};
use crate::model::Direction;

/// A lab of numbers: commits from `culprit` on are `1 + effect` times slower.
struct SimLab {
    noise: Noise,
    culprit: usize,
    effect: f64,
    cv: f64,
    unbuildable: Vec<bool>,
    measurements: usize,
}

impl SimLab {
    fn value(&mut self, bad: bool) -> f64 {
        let median = if bad {
            100.0 * (1.0 + self.effect)
        } else {
            100.0
        };
        self.noise.lognormal(1, median, self.cv)[0]
    }
}

impl Lab for SimLab {
    fn build(&mut self, side: Side) -> Result<Built, BisectError> {
        Ok(match side {
            Side::Commit(i) if self.unbuildable[i] => Built::Failed("simulated".into()),
            _ => Built::Ok,
        })
    }

    fn measure(&mut self, side: Side, reps: u32) -> Result<Measured, BisectError> {
        self.measurements += reps as usize;
        let bad = match side {
            Side::Good | Side::Revert(_) => false,
            Side::Bad => true,
            Side::Commit(i) => i >= self.culprit,
        };
        Ok(Measured::Values(
            (0..reps).map(|_| self.value(bad)).collect(),
        ))
    }
}

fn followed() -> Followed {
    Followed {
        test: "t".into(),
        metric: "elapsed_s".into(),
        direction: Direction::LowerIsBetter,
        class: MetricClass::Throughput,
    }
}

/// One world: `n` commits (the last the bad end), the culprit, which commits do not build.
fn world(noise: &mut Noise, n: usize, failures: f64) -> (usize, Vec<bool>) {
    let culprit = ((noise.uniform() * n as f64) as usize).min(n - 1);
    let unbuildable = (0..n)
        .map(|i| i != culprit && i != n - 1 && noise.uniform() < failures)
        .collect();
    (culprit, unbuildable)
}

/// Whether an outcome names the culprit: exactly, or as a range whose other commits all failed
/// to build (the best any bisection can say, as git bisect's "could be any of").
fn found(outcome: &Option<Outcome>, culprit: usize, unbuildable: &[bool]) -> bool {
    match outcome {
        Some(Outcome::Culprit { index, .. }) => *index == culprit,
        Some(Outcome::Range { commits, .. }) => {
            commits.contains(&culprit) && commits.iter().all(|&c| c == culprit || unbuildable[c])
        }
        _ => false,
    }
}

/// The noisy bisection once: (found, bisection steps, measurements a side summed).
fn noisy(seed: u64, n: usize, effect: f64, cv: f64, failures: f64) -> (bool, usize, usize) {
    let mut noise = Noise::new(seed);
    let (culprit, unbuildable) = world(&mut noise, n, failures);
    let mut lab = SimLab {
        noise,
        culprit,
        effect,
        cv,
        unbuildable: unbuildable.clone(),
        measurements: 0,
    };
    let graph = super::graph::Graph::line(n);
    let mut state = State::new(
        graph
            .commits
            .iter()
            .enumerate()
            .map(|(i, c)| {
                (
                    c.clone(),
                    if i == 0 {
                        vec![]
                    } else {
                        vec![format!("c{}", i - 1)]
                    },
                )
            })
            .collect(),
        Settings::for_candidates(n),
    )
    .unwrap();
    advance(&mut state, &followed(), &mut lab, &mut |_| Ok(())).unwrap();
    (
        found(&state.outcome, culprit, &unbuildable),
        state.bisect_steps(),
        lab.measurements,
    )
}

/// Plain bisection at 3 runs a step: (found, steps). `skip_unclear`: an inconclusive step is
/// skipped (`compare --bisect`'s exit 125); otherwise it counts as good (a script that fails
/// only on a regression).
fn plain(
    seed: u64,
    n: usize,
    effect: f64,
    cv: f64,
    failures: f64,
    skip_unclear: bool,
) -> (bool, usize) {
    let mut noise = Noise::new(seed);
    let (culprit, unbuildable) = world(&mut noise, n, failures);
    let mut lab = SimLab {
        noise,
        culprit,
        effect,
        cv,
        unbuildable: unbuildable.clone(),
        measurements: 0,
    };
    let margins = verdict::Margins::default();
    // Commits lo+1..=hi are left (lo = -1: the good end); skipped ones stay in the range.
    let (mut lo, mut hi) = (-1_i64, n as i64 - 1);
    let mut skipped = vec![false; n];
    let mut steps = 0;
    loop {
        // git bisect's choice: the middle, else the nearest commit not skipped.
        let mid = (lo + hi) / 2;
        let pick = (0..=(hi - lo))
            .flat_map(|d| [mid - d, mid + d])
            .find(|&c| c > lo && c < hi && !skipped[c as usize]);
        let Some(c) = pick else { break };
        steps += 1;
        let c_u = c as usize;
        if lab.unbuildable[c_u] {
            skipped[c_u] = true;
            continue;
        }
        let Ok(Measured::Values(good)) = lab.measure(Side::Good, 3) else {
            unreachable!()
        };
        let Ok(Measured::Values(cand)) = lab.measure(Side::Commit(c_u), 3) else {
            unreachable!()
        };
        let f = followed();
        match verdict::compare(&good, &cand, f.direction, f.class, &margins).verdict {
            Verdict::Regressed => hi = c,
            Verdict::Inconclusive if skip_unclear => skipped[c_u] = true,
            _ => lo = c,
        }
    }
    let left: Vec<usize> = ((lo + 1) as usize..=hi as usize).collect();
    let ok = left.contains(&culprit) && left.iter().all(|&c| c == culprit || unbuildable[c]);
    (ok, steps)
}

fn median(mut v: Vec<usize>) -> usize {
    v.sort_unstable();
    v[v.len() / 2]
}

struct Row {
    n: usize,
    effect: f64,
    cv: f64,
    failures: f64,
    found: f64,
    steps: usize,
    runs: usize,
    plain_found: f64,
    plain_steps: usize,
    two_way_found: f64,
    two_way_steps: usize,
}

fn row(n: usize, effect: f64, cv: f64, failures: f64, trials: u64) -> Row {
    let mut f = 0;
    let mut steps = Vec::new();
    let mut runs = Vec::new();
    let mut pf = 0;
    let mut psteps = Vec::new();
    let mut tf = 0;
    let mut tsteps = Vec::new();
    for t in 0..trials {
        let seed =
            t * 1_000_003 + n as u64 * 7 + (effect * 1000.0) as u64 * 13 + (cv * 1000.0) as u64;
        let (ok, s, m) = noisy(seed, n, effect, cv, failures);
        f += ok as usize;
        steps.push(s);
        runs.push(m);
        let (pok, ps) = plain(seed, n, effect, cv, failures, true);
        pf += pok as usize;
        psteps.push(ps);
        let (tok, ts) = plain(seed, n, effect, cv, failures, false);
        tf += tok as usize;
        tsteps.push(ts);
    }
    Row {
        n,
        effect,
        cv,
        failures,
        found: f as f64 / trials as f64,
        steps: median(steps),
        runs: median(runs),
        plain_found: pf as f64 / trials as f64,
        plain_steps: median(psteps),
        two_way_found: tf as f64 / trials as f64,
        two_way_steps: median(tsteps),
    }
}

#[test]
fn noisy_bisection_finds_planted_regressions() {
    let mut rows = Vec::new();
    // The goal's cell, with many trials, at every size.
    for n in [16, 128, 1024] {
        rows.push(row(n, 0.10, 0.03, 0.0, 200));
    }
    for n in [16, 128, 1024] {
        for (effect, cv) in [
            (0.05, 0.02),
            (0.05, 0.05),
            (0.10, 0.05),
            (0.10, 0.10),
            (0.20, 0.05),
            (0.20, 0.10),
        ] {
            rows.push(row(n, effect, cv, 0.0, 40));
        }
        rows.push(row(n, 0.10, 0.03, 0.10, 100));
    }
    println!(
        "noisy: this bisection; plain: n = 3 a step, inconclusive skipped (compare --bisect) /"
    );
    println!(
        "inconclusive taken as good; found: the culprit named (or a range of it and unbuildable"
    );
    println!("commits); steps: median bisection steps (ends and confirmation not counted); runs:");
    println!("median repetitions measured in all, every side, ends and confirmation included");
    println!(
        "{:>5} {:>6} {:>4} {:>6} | {:>6} {:>5} {:>5} | {:>11} {:>5} | {:>11} {:>5}",
        "N",
        "effect",
        "CV",
        "nobld",
        "found",
        "steps",
        "runs",
        "plain/skip",
        "steps",
        "plain/good",
        "steps"
    );
    for r in &rows {
        println!(
            "{:>5} {:>5.0}% {:>3.0}% {:>5.0}% | {:>5.1}% {:>5} {:>5} | {:>10.1}% {:>5} | {:>10.1}% {:>5}",
            r.n,
            100.0 * r.effect,
            100.0 * r.cv,
            100.0 * r.failures,
            100.0 * r.found,
            r.steps,
            r.runs,
            100.0 * r.plain_found,
            r.plain_steps,
            100.0 * r.two_way_found,
            r.two_way_steps
        );
    }
    for r in rows
        .iter()
        .filter(|r| r.effect == 0.10 && r.cv == 0.03 && r.failures == 0.0)
    {
        let limit = (r.n as f64).log2() as usize + 3;
        assert!(
            r.found >= 0.95,
            "N = {}: found in {:.1} % (goal >= 95 %)",
            r.n,
            100.0 * r.found
        );
        assert!(
            r.steps <= limit,
            "N = {}: median {} steps (goal <= {limit})",
            r.n,
            r.steps
        );
    }
}
