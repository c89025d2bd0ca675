//! Noise-aware bisection: from "the bad end is slower than the good end" to "this commit did it",
//! with the comparison statistics deciding each step and a probability kept for every candidate.
//!
//! Why a room: the loop (measure the ends, choose a commit, build it, measure it interleaved
//! with both ends, classify, update, stop, confirm) is the same whatever is bisected (a user's
//! program built by a command, a kernel booted in a guest) and whatever measures (the real
//! `fsdelta run` of the CLI, or the seeded simulation). The loop (this file) talks to a [`Lab`]
//! that builds and measures; it must never run git, build or measure itself, and never print.
//! [`git`] reads the repository for the CLI's lab, [`state`] keeps the state between processes.
//!
//! State: everything the loop knows is in [`State`] (serde), handed to the caller after every
//! step so that it is saved before the next build starts: an interrupted bisection resumes
//! from the last finished step.

pub mod classify;
pub mod git;
pub mod graph;
pub mod posterior;
#[cfg(test)]
mod simulation;
pub mod state;

use crate::compare::verdict::{self, Margins, MetricClass, Verdict};
use crate::model::Direction;
use classify::Class;
use graph::Graph;
use serde::{Deserialize, Serialize};

/// Errors of the bisection loop.
#[derive(Debug, thiserror::Error)]
pub enum BisectError {
    /// The user interrupted; the state up to the last finished step is kept.
    #[error("interrupted; the bisection's state is kept: `fsdelta bisect resume` continues it")]
    Interrupted,
    /// The lab could not build or measure for a reason that is not the commit's (I/O, git,
    /// the store).
    #[error("{0}")]
    Lab(String),
    /// The candidate list is unusable.
    #[error(transparent)]
    Graph(#[from] graph::GraphError),
}

/// What bisecting looks at: one metric of one test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Followed {
    /// Test name.
    pub test: String,
    /// Metric name.
    pub metric: String,
    /// Which way is better.
    pub direction: Direction,
    /// Its class (chooses the unchanged band and the method).
    pub class: MetricClass,
}

/// A thing to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The good end.
    Good,
    /// The bad end.
    Bad,
    /// A candidate (index into the graph).
    Commit(usize),
    /// The bad end with the culprit (index) reverted.
    Revert(usize),
}

/// A build's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Built {
    /// Ready to measure.
    Ok,
    /// Failed (compile error, a revert that conflicts): the commit is skipped; the reason.
    Failed(String),
}

/// One measurement's outcome.
#[derive(Clone, Debug, PartialEq)]
pub enum Measured {
    /// The followed metric's values, one per repetition.
    Values(Vec<f64>),
    /// The measurement failed on this side (boot failure, a failing test): skipped; the reason.
    Failed(String),
}

/// What builds and measures. The real one runs git, the build command and `fsdelta run`; the
/// simulation draws numbers.
pub trait Lab {
    /// Make `side` measurable (build it). `Err` stops the bisection (state kept).
    fn build(&mut self, side: Side) -> Result<Built, BisectError>;
    /// Measure `side` once with `reps` repetitions.
    fn measure(&mut self, side: Side, reps: u32) -> Result<Measured, BisectError>;
}

/// How the bisection decides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Stop when one commit holds at least this probability (0.95).
    pub confidence: f64,
    /// Repetitions a side a step starts with.
    pub first_reps: u32,
    /// Most repetitions a side of an unclear step gets (it doubles up to this).
    pub max_reps: u32,
    /// Most steps before the bisection names the smallest range it can.
    pub max_steps: usize,
    /// Verdict margins.
    pub margins: Margins,
    /// Whether to confirm the culprit with the bad end with it reverted.
    pub revert: bool,
}

impl Settings {
    /// The defaults for `n` candidates: 95 %, 3 repetitions doubling up to 12, and steps up
    /// to twice what plain bisection needs plus 8.
    pub fn for_candidates(n: usize) -> Settings {
        Settings {
            confidence: 0.95,
            first_reps: 3,
            max_reps: 12,
            max_steps: 2 * (n.max(2) as f64).log2().ceil() as usize + 8,
            margins: Margins::default(),
            revert: false,
        }
    }
}

/// What a step was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// The two ends against each other.
    Ends,
    /// A bisection step.
    Bisect,
    /// The culprit against its parent.
    Confirm,
    /// The bad end with the culprit reverted, against both ends.
    Revert,
}

/// What a step found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepVerdict {
    /// A three-way answer.
    Class(Class),
    /// The build or the measurement failed: skipped, with the reason.
    Skipped(String),
    /// A comparison's verdict (ends, confirmation).
    Compared(Verdict),
}

impl StepVerdict {
    /// The word shown in tables.
    pub fn word(&self) -> String {
        match self {
            StepVerdict::Class(c) => c.as_str().to_string(),
            StepVerdict::Skipped(_) => "skip".into(),
            StepVerdict::Compared(v) => v.as_str().to_string(),
        }
    }
}

/// One step of the log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// What kind.
    pub kind: StepKind,
    /// The measured side (the candidate, the culprit, the revert; the bad end for [`StepKind::Ends`]).
    pub side: Side,
    /// Repetitions a side.
    pub reps: u32,
    /// The side's center (geometric mean of the followed metric), when measured.
    pub center: Option<f64>,
    /// Its diff against the good side (against the parent for a confirmation), percent.
    pub diff_pct: Option<f64>,
    /// The answer.
    pub verdict: StepVerdict,
    /// The chance the answer is wrong, as given to the update.
    pub error: Option<f64>,
    /// The most probable culprit after the step, and its probability.
    pub top: (usize, f64),
}

/// Where the bisection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// The ends are to be measured.
    Ends,
    /// Choosing and measuring commits.
    Bisecting,
    /// Confirming the top candidate.
    Confirming,
    /// Reverting the confirmed culprit from the bad end.
    Reverting,
    /// Finished: see [`State::outcome`].
    Done,
}

/// How a bisection ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The ends do not show a regression: nothing to bisect; why.
    NoRegression(String),
    /// One commit, its probability, the confirmation's verdict and diff, and the revert's
    /// answer (with `--revert`).
    Culprit {
        /// Candidate index.
        index: usize,
        /// Its probability.
        probability: f64,
        /// Parent against culprit, fresh repetitions.
        confirmed: Verdict,
        /// The confirmation's diff, percent.
        diff_pct: Option<f64>,
        /// With `--revert`: how the reverted bad end measured.
        revert: Option<StepVerdict>,
    },
    /// The smallest range the evidence names (candidate indices, oldest first), its probability
    /// and why no single commit could be named.
    Range {
        /// Candidates.
        commits: Vec<usize>,
        /// Their probability.
        probability: f64,
        /// Why.
        why: String,
    },
}

/// Everything the loop knows (saved after every step).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// The candidates with their parents, oldest first (the graph is rebuilt from it).
    pub commits: Vec<(String, Vec<String>)>,
    /// The followed metric, once the ends chose it (the CLI sets it).
    pub followed: Option<Followed>,
    /// How it decides.
    pub settings: Settings,
    /// The probability of each candidate being the culprit.
    pub probabilities: Vec<f64>,
    /// Candidates that cannot be chosen again (skipped, or unclear at the most repetitions).
    pub excluded: Vec<bool>,
    /// Candidates whose build or measurement failed (`git bisect skip`).
    pub skipped: Vec<bool>,
    /// Confirmations that failed (each discounts its candidate).
    pub failed_confirmations: u32,
    /// The steps so far.
    pub steps: Vec<Step>,
    /// Where it is.
    pub phase: Phase,
    /// How it ended, once [`Phase::Done`].
    pub outcome: Option<Outcome>,
}

/// Most failed confirmations before the bisection gives a range instead of a culprit.
const MAX_CONFIRMATIONS: u32 = 2;
/// How much a failed confirmation lowers its candidate.
const FAILED_CONFIRMATION: f64 = 0.1;

impl State {
    /// A new bisection of `commits` (oldest first, with parents; the last is the bad end).
    pub fn new(
        commits: Vec<(String, Vec<String>)>,
        settings: Settings,
    ) -> Result<State, BisectError> {
        let n = Graph::new(&commits)?.len();
        Ok(State {
            commits,
            followed: None,
            settings,
            probabilities: posterior::flat(n),
            excluded: vec![false; n],
            skipped: vec![false; n],
            failed_confirmations: 0,
            steps: Vec::new(),
            phase: Phase::Ends,
            outcome: None,
        })
    }

    /// The candidate graph.
    pub fn graph(&self) -> Result<Graph, BisectError> {
        Ok(Graph::new(&self.commits)?)
    }

    /// Bisection steps taken (skipped builds included; the ends and confirmations not).
    pub fn bisect_steps(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| s.kind == StepKind::Bisect)
            .count()
    }
}

/// The samples of one interleaved measurement: the good side, the measured one, the bad side
/// (the parent in place of the good side for a confirmation).
struct Trio {
    base: Vec<f64>,
    cand: Vec<f64>,
    bad: Vec<f64>,
}

/// Measure `base`, `cand` and (when given) `bad` interleaved, one repetition each per round
/// with the order rotated every round, until `reps` a side. `Err(reason)` inside `Ok` when a
/// measurement of `cand` failed.
fn interleaved(
    lab: &mut dyn Lab,
    base: Side,
    cand: Side,
    bad: Option<Side>,
    trio: &mut Trio,
    reps: u32,
) -> Result<Result<(), String>, BisectError> {
    let mut sides = vec![base, cand];
    sides.extend(bad);
    while (trio.cand.len() as u32) < reps {
        let round = trio.cand.len();
        for k in 0..sides.len() {
            let side = sides[(k + round) % sides.len()];
            let values = match lab.measure(side, 1)? {
                Measured::Values(v) => v,
                Measured::Failed(why) if side == cand => return Ok(Err(why)),
                Measured::Failed(why) => {
                    return Err(BisectError::Lab(format!(
                        "measuring the {} failed: {why}",
                        side_name(side)
                    )));
                }
            };
            let into = if side == base {
                &mut trio.base
            } else if side == cand {
                &mut trio.cand
            } else {
                &mut trio.bad
            };
            into.extend(values);
        }
    }
    Ok(Ok(()))
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Good => "good end",
        Side::Bad => "bad end",
        Side::Commit(_) => "candidate",
        Side::Revert(_) => "reverted bad end",
    }
}

/// The next repetition count of an unclear step: doubled, at most `max`.
fn more(reps: u32, max: u32) -> u32 {
    (reps * 2).min(max)
}

fn geomean(v: &[f64]) -> Option<f64> {
    (!v.is_empty() && v.iter().all(|x| *x > 0.0))
        .then(|| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

/// Run the bisection from where `state` is until it is done, calling `saved` after every step
/// (the caller writes the state there). `followed` says how the metric is judged.
pub fn advance(
    state: &mut State,
    followed: &Followed,
    lab: &mut dyn Lab,
    saved: &mut dyn FnMut(&State) -> Result<(), BisectError>,
) -> Result<(), BisectError> {
    let graph = state.graph()?;
    loop {
        match state.phase {
            Phase::Ends => ends(state, followed, lab)?,
            Phase::Bisecting => bisect_step(state, &graph, followed, lab)?,
            Phase::Confirming => confirm(state, &graph, followed, lab)?,
            Phase::Reverting => revert(state, followed, lab)?,
            Phase::Done => return Ok(()),
        }
        saved(state)?;
    }
}

/// Compare the ends, adding repetitions while the comparison is inconclusive.
fn ends(state: &mut State, f: &Followed, lab: &mut dyn Lab) -> Result<(), BisectError> {
    let s = state.settings.clone();
    let mut trio = Trio {
        base: vec![],
        cand: vec![],
        bad: vec![],
    };
    let mut reps = s.first_reps;
    let c = loop {
        if let Err(why) = interleaved(lab, Side::Good, Side::Bad, None, &mut trio, reps)? {
            return Err(BisectError::Lab(format!(
                "measuring the bad end failed: {why}"
            )));
        }
        let c = verdict::compare(&trio.base, &trio.cand, f.direction, f.class, &s.margins);
        if c.verdict != Verdict::Inconclusive || reps >= s.max_reps {
            break c;
        }
        reps = more(reps, s.max_reps);
    };
    state.steps.push(Step {
        kind: StepKind::Ends,
        side: Side::Bad,
        reps,
        center: geomean(&trio.cand),
        diff_pct: c.diff_pct,
        verdict: StepVerdict::Compared(c.verdict),
        error: None,
        top: posterior::top(&state.probabilities),
    });
    if c.verdict == Verdict::Regressed {
        state.phase = Phase::Bisecting;
    } else {
        let diff = c.diff_pct.map_or("?".into(), |d| format!("{d:+.1} %"));
        state.outcome = Some(Outcome::NoRegression(format!(
            "the bad end against the good end, {reps} runs a side interleaved: {} ({diff}; {}); nothing to bisect{}",
            c.verdict,
            c.reason,
            if c.verdict == Verdict::Inconclusive {
                format!(" at up to {} runs a side (raise --max-reps)", s.max_reps)
            } else {
                String::new()
            }
        )));
        state.phase = Phase::Done;
    }
    Ok(())
}

/// Stop with the smallest range the evidence names.
fn give_range(state: &mut State, graph: &Graph, why: String) {
    let (commits, probability) =
        posterior::smallest_range(&state.probabilities, graph, state.settings.confidence);
    state.outcome = Some(Outcome::Range {
        commits,
        probability,
        why,
    });
    state.phase = Phase::Done;
}

/// One bisection step: choose, build, measure, classify, update.
fn bisect_step(
    state: &mut State,
    graph: &Graph,
    f: &Followed,
    lab: &mut dyn Lab,
) -> Result<(), BisectError> {
    let s = state.settings.clone();
    let (_, p) = posterior::top(&state.probabilities);
    if p >= s.confidence {
        state.phase = Phase::Confirming;
        return Ok(());
    }
    if state.bisect_steps() >= s.max_steps {
        give_range(
            state,
            graph,
            format!("{} steps taken (the limit)", s.max_steps),
        );
        return Ok(());
    }
    let Some(i) = graph.choose(&state.probabilities, &state.excluded) else {
        give_range(
            state,
            graph,
            "every commit that could tell them apart was skipped or stayed unclear".into(),
        );
        return Ok(());
    };
    let side = Side::Commit(i);
    let mut step = Step {
        kind: StepKind::Bisect,
        side,
        reps: 0,
        center: None,
        diff_pct: None,
        verdict: StepVerdict::Skipped(String::new()),
        error: None,
        top: (0, 0.0),
    };
    if let Built::Failed(why) = lab.build(side)? {
        state.excluded[i] = true;
        state.skipped[i] = true;
        step.verdict = StepVerdict::Skipped(format!("build failed: {why}"));
        step.top = posterior::top(&state.probabilities);
        state.steps.push(step);
        return Ok(());
    }
    let mut trio = Trio {
        base: vec![],
        cand: vec![],
        bad: vec![],
    };
    let mut reps = s.first_reps;
    let judged = loop {
        if let Err(why) = interleaved(lab, Side::Good, side, Some(Side::Bad), &mut trio, reps)? {
            state.excluded[i] = true;
            state.skipped[i] = true;
            step.verdict = StepVerdict::Skipped(format!("measurement failed: {why}"));
            step.top = posterior::top(&state.probabilities);
            state.steps.push(step);
            return Ok(());
        }
        let j = classify::classify(
            &trio.base,
            &trio.cand,
            &trio.bad,
            f.direction,
            f.class,
            &s.margins,
        );
        if j.class != Class::Unclear || reps >= s.max_reps {
            break j;
        }
        reps = more(reps, s.max_reps);
    };
    if judged.class == Class::Unclear {
        state.excluded[i] = true;
    } else {
        posterior::update(
            &mut state.probabilities,
            graph,
            i,
            judged.class,
            judged.error,
        );
    }
    step.reps = reps;
    step.center = geomean(&trio.cand);
    step.diff_pct = judged.vs_good.diff_pct;
    step.verdict = StepVerdict::Class(judged.class);
    step.error = (judged.class != Class::Unclear).then_some(judged.error);
    step.top = posterior::top(&state.probabilities);
    state.steps.push(step);
    Ok(())
}

/// The side just before candidate `i`: its first parent among the candidates, else the good end.
fn parent_side(state: &State, i: usize) -> Side {
    let parents = &state.commits[i].1;
    parents
        .first()
        .and_then(|p| state.commits.iter().position(|(c, _)| c == p))
        .map_or(Side::Good, Side::Commit)
}

/// The top candidate against its parent with fresh repetitions: regressed confirms it.
fn confirm(
    state: &mut State,
    graph: &Graph,
    f: &Followed,
    lab: &mut dyn Lab,
) -> Result<(), BisectError> {
    let s = state.settings.clone();
    let (i, p) = posterior::top(&state.probabilities);
    if let Built::Failed(why) = lab.build(Side::Commit(i))? {
        state.skipped[i] = true;
        state.excluded[i] = true;
        give_range(
            state,
            graph,
            format!("the culprit did not build for its confirmation: {why}"),
        );
        return Ok(());
    }
    // The nearest ancestor that builds (git bisect's "could be any of" when some did not).
    let mut unbuilt = Vec::new();
    let mut parent = parent_side(state, i);
    while let Side::Commit(k) = parent {
        if !state.skipped[k] {
            match lab.build(parent)? {
                Built::Ok => break,
                Built::Failed(_) => {
                    state.skipped[k] = true;
                    state.excluded[k] = true;
                }
            }
        }
        unbuilt.push(k);
        parent = parent_side(state, k);
    }
    let mut trio = Trio {
        base: vec![],
        cand: vec![],
        bad: vec![],
    };
    let mut reps = s.first_reps.max(s.max_reps / 2);
    let c = loop {
        if let Err(why) = interleaved(lab, parent, Side::Commit(i), None, &mut trio, reps)? {
            give_range(
                state,
                graph,
                format!("the culprit's confirmation failed to measure: {why}"),
            );
            return Ok(());
        }
        let c = verdict::compare(&trio.base, &trio.cand, f.direction, f.class, &s.margins);
        if c.verdict != Verdict::Inconclusive || reps >= s.max_reps {
            break c;
        }
        reps = more(reps, s.max_reps);
    };
    state.steps.push(Step {
        kind: StepKind::Confirm,
        side: Side::Commit(i),
        reps,
        center: geomean(&trio.cand),
        diff_pct: c.diff_pct,
        verdict: StepVerdict::Compared(c.verdict),
        error: None,
        top: (i, p),
    });
    if c.verdict == Verdict::Regressed && !unbuilt.is_empty() {
        unbuilt.reverse();
        unbuilt.push(i);
        let probability = unbuilt.iter().map(|&k| state.probabilities[k]).sum();
        state.outcome = Some(Outcome::Range {
            commits: unbuilt,
            probability,
            why: "the commits before the last one did not build; the change is in one of them"
                .into(),
        });
        state.phase = Phase::Done;
        return Ok(());
    }
    if c.verdict == Verdict::Regressed {
        state.outcome = Some(Outcome::Culprit {
            index: i,
            probability: p,
            confirmed: c.verdict,
            diff_pct: c.diff_pct,
            revert: None,
        });
        state.phase = if s.revert {
            Phase::Reverting
        } else {
            Phase::Done
        };
        return Ok(());
    }
    state.failed_confirmations += 1;
    if state.failed_confirmations >= MAX_CONFIRMATIONS {
        give_range(
            state,
            graph,
            format!(
                "{MAX_CONFIRMATIONS} culprits did not confirm against their parents (last: {})",
                c.verdict
            ),
        );
        return Ok(());
    }
    posterior::discount(&mut state.probabilities, i, FAILED_CONFIRMATION);
    state.phase = Phase::Bisecting;
    Ok(())
}

/// The bad end with the culprit reverted must measure like the good end.
fn revert(state: &mut State, f: &Followed, lab: &mut dyn Lab) -> Result<(), BisectError> {
    let s = state.settings.clone();
    let Some(Outcome::Culprit { index, .. }) = state.outcome.clone() else {
        state.phase = Phase::Done;
        return Ok(());
    };
    let side = Side::Revert(index);
    let verdict = match lab.build(side)? {
        Built::Failed(why) => StepVerdict::Skipped(format!("the revert did not build: {why}")),
        Built::Ok => {
            let mut trio = Trio {
                base: vec![],
                cand: vec![],
                bad: vec![],
            };
            let mut reps = s.first_reps;
            loop {
                if let Err(why) =
                    interleaved(lab, Side::Good, side, Some(Side::Bad), &mut trio, reps)?
                {
                    break StepVerdict::Skipped(format!("measuring the revert failed: {why}"));
                }
                let j = classify::classify(
                    &trio.base,
                    &trio.cand,
                    &trio.bad,
                    f.direction,
                    f.class,
                    &s.margins,
                );
                if j.class != Class::Unclear || reps >= s.max_reps {
                    state.steps.push(Step {
                        kind: StepKind::Revert,
                        side,
                        reps,
                        center: geomean(&trio.cand),
                        diff_pct: j.vs_good.diff_pct,
                        verdict: StepVerdict::Class(j.class),
                        error: None,
                        top: posterior::top(&state.probabilities),
                    });
                    break StepVerdict::Class(j.class);
                }
                reps = more(reps, s.max_reps);
            }
        }
    };
    if let Some(Outcome::Culprit { revert, .. }) = &mut state.outcome {
        *revert = Some(verdict);
    }
    state.phase = Phase::Done;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lab without randomness: commits from `culprit` on measure `factor` times the good
    /// value, every value with a small fixed jitter; `unbuildable` commits fail to build.
    struct Fixed {
        culprit: usize,
        factor: f64,
        unbuildable: Vec<usize>,
        k: usize,
    }

    impl Lab for Fixed {
        fn build(&mut self, side: Side) -> Result<Built, BisectError> {
            Ok(match side {
                Side::Commit(i) if self.unbuildable.contains(&i) => Built::Failed("no".into()),
                _ => Built::Ok,
            })
        }
        fn measure(&mut self, side: Side, reps: u32) -> Result<Measured, BisectError> {
            let bad = match side {
                Side::Good | Side::Revert(_) => false,
                Side::Bad => true,
                Side::Commit(i) => i >= self.culprit,
            };
            let jitter = [0.0, 0.01, -0.01, 0.005, -0.005];
            let v = (0..reps)
                .map(|_| {
                    self.k += 1;
                    100.0 * if bad { self.factor } else { 1.0 } * (1.0 + jitter[self.k % 5])
                })
                .collect();
            Ok(Measured::Values(v))
        }
    }

    fn line(n: usize) -> Vec<(String, Vec<String>)> {
        (0..n)
            .map(|i| {
                let p = if i == 0 {
                    vec![]
                } else {
                    vec![format!("c{}", i - 1)]
                };
                (format!("c{i}"), p)
            })
            .collect()
    }

    fn followed() -> Followed {
        Followed {
            test: "t".into(),
            metric: "m".into(),
            direction: Direction::LowerIsBetter,
            class: MetricClass::Throughput,
        }
    }

    fn lab(culprit: usize, factor: f64, unbuildable: Vec<usize>) -> Fixed {
        Fixed {
            culprit,
            factor,
            unbuildable,
            k: 0,
        }
    }

    #[test]
    fn no_regression_between_the_ends_stops_there() {
        let mut s = State::new(line(8), Settings::for_candidates(8)).unwrap();
        advance(&mut s, &followed(), &mut lab(3, 1.0, vec![]), &mut |_| {
            Ok(())
        })
        .unwrap();
        assert!(
            matches!(s.outcome, Some(Outcome::NoRegression(_))),
            "{:?}",
            s.outcome
        );
        assert_eq!(s.steps.len(), 1);
    }

    #[test]
    fn a_clear_regression_is_found_confirmed_and_reverted() {
        let mut settings = Settings::for_candidates(16);
        settings.revert = true;
        let mut s = State::new(line(16), settings).unwrap();
        advance(&mut s, &followed(), &mut lab(11, 1.25, vec![]), &mut |_| {
            Ok(())
        })
        .unwrap();
        let Some(Outcome::Culprit {
            index,
            confirmed,
            revert,
            ..
        }) = &s.outcome
        else {
            panic!("{:?}", s.outcome);
        };
        assert_eq!(*index, 11);
        assert_eq!(*confirmed, Verdict::Regressed);
        assert_eq!(*revert, Some(StepVerdict::Class(Class::LikeGood)));
        assert!(s.bisect_steps() <= 4 + 3, "{} steps", s.bisect_steps());
    }

    #[test]
    fn an_unbuildable_parent_gives_the_culprit_with_it() {
        // The culprit's parent never builds: the answer is a range of both, as git bisect's.
        let mut s = State::new(line(16), Settings::for_candidates(16)).unwrap();
        advance(&mut s, &followed(), &mut lab(6, 1.25, vec![5]), &mut |_| {
            Ok(())
        })
        .unwrap();
        assert!(
            matches!(&s.outcome, Some(Outcome::Range { commits, .. }) if commits == &vec![5, 6]),
            "{:?}",
            s.outcome
        );
    }

    #[test]
    fn an_interrupted_state_resumes_to_the_same_culprit() {
        let mut s = State::new(line(32), Settings::for_candidates(32)).unwrap();
        let mut l = lab(20, 1.25, vec![15]);
        let stop = advance(&mut s, &followed(), &mut l, &mut |st| {
            if st.steps.len() >= 3 {
                Err(BisectError::Interrupted)
            } else {
                Ok(())
            }
        });
        assert!(matches!(stop, Err(BisectError::Interrupted)));
        assert!(s.skipped[15], "the first step's commit does not build");
        let text = serde_json::to_string(&s).unwrap();
        let mut back: State = serde_json::from_str(&text).unwrap();
        // serde_json reads a float back within an ulp: the state is the same up to that.
        assert_eq!(
            (back.steps.len(), back.phase, &back.skipped),
            (s.steps.len(), s.phase, &s.skipped)
        );
        for (a, b) in back.probabilities.iter().zip(&s.probabilities) {
            assert!((a - b).abs() < 1e-12);
        }
        advance(&mut back, &followed(), &mut l, &mut |_| Ok(())).unwrap();
        assert!(
            matches!(back.outcome, Some(Outcome::Culprit { index: 20, .. })),
            "{:?}",
            back.outcome
        );
    }
}
