//! `fsdelta agent`: a lab machine's worker. Registers the machine and its classes, then takes
//! jobs from the fleet's queue one at a time: claim the oldest it may run, build the plan from the
//! job's suite and configuration texts, run it with the same run engine as `fsdelta run`
//! ([`runner::run`]), store the run in the fleet database, compare with the job's baseline, and
//! record the outcome; every one of those writes carries the agent's secret claim token, the
//! only thing that lets it act on that job and its run when machines share one database role
//! (see `crate::queue`). While a job runs a heartbeat thread keeps its lease and stops the sample
//! like Ctrl-C when the job is cancelled (or was taken away). Between jobs it sleeps on
//! LISTEN/NOTIFY; before each claim it reaps jobs of agents that went silent.
//!
//! SIGINT/SIGTERM stop the running sample, mark the partial run aborted and give the job back to
//! the queue for another agent. This file must never loop over samples: that is the runner's.

use super::{DbArg, EXIT_INTERRUPTED, EXIT_OK, MarginArgs, query};
use crate::compare::verdict::Verdict;
use crate::model::{NewRun, RunId, RunStatus};
use crate::plan::{config, suite, suitefile};
use crate::queue::{Agent, Beat, CANCEL_CHANNEL, CHANNEL, ClaimedJob, JobId, Outcome, Queue};
use crate::runner::{self, Baseline, Event, Observer, Order, PlannedTest, RunSpec, Sites};
use crate::site::{StateFile, env};
use crate::store::postgres::PgStore;
use crate::store::{Store, StoreError};
use crate::workload::CancelToken;
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// Options of `fsdelta agent`.
#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Classes of this machine (repeatable or comma-separated): jobs submitted with --class or
    /// --every-class of one of them may run here.
    #[arg(long = "class", value_name = "CLASS", value_delimiter = ',')]
    pub classes: Vec<String>,
    /// Agent name, unique in the fleet (default: the host name).
    #[arg(long)]
    pub name: Option<String>,
    /// Run at most one job (if one is queued) and exit.
    #[arg(long)]
    pub once: bool,
    /// Exit after this many jobs.
    #[arg(long, value_name = "N")]
    pub max_jobs: Option<u64>,
    /// Seconds between heartbeats while a job runs; a job whose agent is silent for four of
    /// them is requeued by any agent.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub heartbeat: f64,
    /// Jobs without a configuration run in a scratch directory inside DIR (default: the current
    /// directory).
    #[arg(long, value_name = "DIR")]
    pub target: Option<PathBuf>,
    /// Keep the page cache between samples (by default, as root, it is dropped before each).
    #[arg(long)]
    pub no_drop_caches: bool,
    /// Only a line per job, not per sample.
    #[arg(short, long)]
    pub quiet: bool,
    /// The canary run before each job: a suite file (default: a built-in fs_mark canary of a
    /// few seconds in the --target directory). When it moves beyond what this machine detects
    /// against the machine's own earlier canaries, the machine is marked unhealthy and takes
    /// no job until `fsdelta machines clear NAME`.
    #[arg(long, value_name = "SUITE_FILE", conflicts_with = "no_canary")]
    pub canary: Option<PathBuf>,
    /// Repetitions of each canary test.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub canary_runs: u32,
    /// Run no canary: this machine's drift goes unnoticed.
    #[arg(long)]
    pub no_canary: bool,
    #[command(flatten)]
    pub db: DbArg,
}

/// The built-in canary: small files created, written and closed, and a few with fsync, by
/// fs_mark: a few seconds on a disk, under a second on tmpfs.
const DEFAULT_CANARY: &str = r#"
name = "canary"
[[test]]
name = "canary-files"
workload = "fsmark"
args = "-s 4096 -n 1000 -t 1 -S 0"
[[test]]
name = "canary-fsync"
workload = "fsmark"
args = "-s 4096 -n 100 -t 1 -S 1"
"#;

/// Why a job's run was asked to stop.
const STOP_NONE: u8 = 0;
const STOP_SIGNAL: u8 = 1;
const STOP_CANCELLED: u8 = 2;
const STOP_LOST: u8 = 3;

/// The agent's observer: a line per sample on standard error.
struct Log {
    job: JobId,
    quiet: bool,
}

impl Observer for Log {
    fn event(&self, e: Event) {
        let line = match e {
            Event::RunStarted { run_id, label, .. } => {
                format!("job {}: run {run_id} ({label}) started", self.job)
            }
            _ if self.quiet => return,
            Event::SampleEnded { of, sample } => format!(
                "job {}: {}/{} rep {}/{of}: {:.1} s, {}",
                self.job,
                sample.config,
                sample.test,
                sample.repetition,
                sample.duration_s,
                crate::report::text::headline(&sample)
            ),
            Event::SampleFailed { of, sample } => format!(
                "job {}: {}/{} rep {}/{of}: FAILED: {}",
                self.job,
                sample.config,
                sample.test,
                sample.repetition,
                sample.error.as_deref().unwrap_or("")
            ),
            Event::Skipped {
                config, test, why, ..
            } => format!("job {}: {config}/{test}: SKIPPED: {why}", self.job),
            Event::Warning(w) => format!("job {}: warning: {w}", self.job),
            _ => return,
        };
        eprintln!("fsdelta agent: {line}");
    }
}

/// The fleet store, seen through the job: it writes under the agent's claim token
/// ([`PgStore::act_for_claim`]), so the run it creates is recorded on the job by the database in
/// the same transaction (if this agent dies the reaper marks that run aborted), and remembers
/// that run.
struct JobStore<'a> {
    inner: &'a mut PgStore,
    run: Option<RunId>,
}

impl Store for JobStore<'_> {
    fn create_run(&mut self, run: &NewRun) -> Result<RunId, StoreError> {
        let id = self.inner.create_run(run)?;
        self.run = Some(id);
        Ok(id)
    }
    crate::store::forward::forward_store!(inner: add_sample, finish_run, runs, run, samples,
        add_profile, profile, select, run_uuid, run_by_uuid, import_run);
}

/// Build the plan of a job from its texts, as `fsdelta run` would from the same files.
fn plan_of(
    job: &ClaimedJob,
    args: &AgentArgs,
    environment: &crate::model::Environment,
) -> Result<(RunSpec, crate::plan::suite::SuiteMargins)> {
    let suite = match &job.suite_text {
        Some(text) => suitefile::parse(text, &job.suite_name)
            .with_context(|| format!("suite file {} of job {}", job.suite_name, job.id))?,
        None => suite::builtin_scaled(&job.suite_name, 1.0, environment.memory_bytes >> 20)?,
    };
    let tests = suite
        .select(&job.tests)?
        .into_iter()
        .map(|t| {
            PlannedTest::build(&t, false, None, &[])
                .map_err(|e| anyhow::anyhow!("test {}: {e}", t.name))
        })
        .collect::<Result<Vec<_>>>()?;
    let targets = match &job.config_text {
        Some(text) => {
            let name = job.config_name.clone().unwrap_or_else(|| "config".into());
            let file = config::parse(text, &name)
                .with_context(|| format!("config file {name} of job {}", job.id))?;
            // Never build a kernel a job names (see `queue::kernel_build_refusal`), whatever
            // wrote the job: `TREE@COMMIT` strings are judged by this machine's own disk.
            if let Some(why) = crate::queue::kernel_build_refusal(&file, &|p| {
                crate::kbuild::KernelRef::of_arg(p).is_some()
            }) {
                anyhow::bail!("config file {name} of job {}: {why}", job.id);
            }
            Sites::Configs {
                file,
                state: StateFile::default_location(),
            }
        }
        None => Sites::Scratch(match &args.target {
            Some(p) => p.clone(),
            None => std::env::current_dir().context("reading the current directory")?,
        }),
    };
    Ok((
        RunSpec {
            label: job.label.clone(),
            suite: suite.name.clone(),
            tests,
            targets,
            repeat: job.repeat,
            order: Order::Rotate,
            until_confident: None,
            drop_caches: !args.no_drop_caches,
            ondisk: suite.ondisk,
            ondisk_remount: suite.ondisk_remount,
            profile: None,
            profile_scope: Default::default(),
            baseline: Baseline::None,
            environment: environment.clone(),
        },
        suite.margins,
    ))
}

/// Compare a finished run with the job's baseline: a short verdict for the jobs list.
fn verdict(
    store: &dyn Store,
    baseline: &str,
    run: RunId,
    margins: &crate::compare::verdict::Margins,
) -> Result<String> {
    let criteria = crate::compare::Criteria {
        margins: *margins,
        ..crate::compare::Criteria::default()
    };
    let (_, _, rows) = query::judge(store, baseline, &run.to_string(), &criteria)?;
    let n = |v: Verdict| rows.iter().filter(|j| j.comparison.verdict == v).count();
    let head = if n(Verdict::Regressed) > 0 {
        "REGRESSED"
    } else {
        "no regression"
    };
    Ok(format!(
        "{head} vs {baseline}: {} regressed, {} improved, {} unchanged, {} inconclusive",
        n(Verdict::Regressed),
        n(Verdict::Improved),
        n(Verdict::Unchanged),
        n(Verdict::Inconclusive)
    ))
}

/// Open a connection, retrying with backoff for up to two minutes: the database may be
/// restarting just when a job starts.
fn open_retrying<T, E: std::fmt::Display>(mut f: impl FnMut() -> Result<T, E>) -> Result<T, E> {
    let started = Instant::now();
    let mut backoff = Duration::from_millis(100);
    loop {
        match f() {
            Ok(v) => return Ok(v),
            Err(e) if started.elapsed() >= Duration::from_secs(120) => return Err(e),
            Err(_) => {
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(1));
            }
        }
    }
}

/// How the heartbeat thread and the job's run talk: the agent's signal token, the run's cancel
/// token, why the run was stopped, and "the run has ended".
struct Flags {
    signal: CancelToken,
    cancel: CancelToken,
    stop: Arc<AtomicU8>,
    done: Arc<std::sync::atomic::AtomicBool>,
}

/// Keep the job's lease while it runs: heartbeat every `every`, and stop the run (through
/// `cancel`, with the reason in `stop`) when the job is cancelled, taken away, or the agent is
/// signalled. Ends when `done` is set.
fn heartbeat_thread(
    url: String,
    agent: Agent,
    job: JobId,
    every: Duration,
    flags: Flags,
) -> std::thread::JoinHandle<()> {
    let Flags {
        signal,
        cancel,
        stop,
        done,
    } = flags;
    std::thread::spawn(move || {
        let mut q = match open_retrying(|| Queue::connect(&url)) {
            Ok(q) => q,
            Err(e) => {
                eprintln!("fsdelta agent: job {job}: heartbeat connection failed: {e}");
                return;
            }
        };
        let _ = q.listen(CANCEL_CHANNEL);
        let mut next = Instant::now() + every;
        while !done.load(Ordering::Relaxed) {
            if signal.is_cancelled() {
                stop.store(STOP_SIGNAL, Ordering::Relaxed);
                cancel.cancel();
                return;
            }
            // Sleep on the connection: a cancel notification wakes us at once; the short slice
            // only bounds how soon a signal or the end of the job is seen.
            let woke = q.wait(Duration::from_millis(200)).unwrap_or_default();
            let for_us = woke.iter().any(|p| p == &job.to_string());
            if for_us || Instant::now() >= next {
                next = Instant::now() + every;
                match q.heartbeat(&agent, job) {
                    Ok(Beat::Ok) => {}
                    Ok(Beat::CancelRequested) => {
                        stop.store(STOP_CANCELLED, Ordering::Relaxed);
                        cancel.cancel();
                        return;
                    }
                    Ok(Beat::Lost) => {
                        stop.store(STOP_LOST, Ordering::Relaxed);
                        cancel.cancel();
                        return;
                    }
                    Err(e) => eprintln!("fsdelta agent: job {job}: heartbeat: {e}"),
                }
            }
        }
    })
}

/// The outcome of a job whose run ended (not interrupted): its verdict against the job's
/// baseline, and what went wrong (failed samples, the comparison, the teardown).
fn ended(
    fleet: &dyn Store,
    baseline: Option<&str>,
    r: &runner::RunResult,
    margins: &crate::compare::verdict::Margins,
) -> Outcome {
    let (verdict, cmp_err) = match baseline {
        Some(b) => match verdict(fleet, b, r.run_id, margins) {
            Ok(v) => (Some(v), None),
            Err(e) => (None, Some(format!("comparing with {b}: {e:#}"))),
        },
        None => (None, None),
    };
    let mut errors: Vec<String> = Vec::new();
    if r.failed() > 0 {
        errors.push(format!(
            "{} of {} sample(s) failed (fsdelta show {})",
            r.failed(),
            r.samples.len(),
            r.run_id
        ));
    }
    errors.extend(cmp_err);
    errors.extend(r.teardown_error.clone());
    Outcome::Done {
        run_id: r.run_id,
        verdict,
        error: (!errors.is_empty()).then(|| errors.join("; ")),
    }
}

/// How the agent's log tells a job's outcome.
fn outcome_line(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Done {
            run_id, verdict, ..
        } => format!(
            "done, run {run_id}{}",
            verdict
                .as_deref()
                .map(|v| format!(": {v}"))
                .unwrap_or_default()
        ),
        Outcome::Failed { error, .. } => format!("failed: {error}"),
        Outcome::Aborted { run_id } => format!(
            "cancelled; run {} aborted",
            run_id.map(|r| r.to_string()).unwrap_or_default()
        ),
    }
}

/// Run one claimed job to its end; returns whether the agent was signalled to stop.
fn run_job(
    q: &mut Queue,
    fleet: &mut PgStore,
    agent: &Agent,
    job: ClaimedJob,
    args: &AgentArgs,
    environment: &crate::model::Environment,
    signal: &CancelToken,
) -> Result<bool> {
    let url = args.db.location();
    let lease_every = Duration::from_secs_f64(args.heartbeat);
    eprintln!(
        "fsdelta agent: job {}: claimed (attempt {}): suite {}, label {}, {} repetition(s)",
        job.id, job.attempt, job.suite_name, job.label, job.repeat
    );
    let (plan, margins) = match plan_of(&job, args, environment) {
        Ok(p) => p,
        Err(e) => {
            let error = format!("{e:#}");
            eprintln!("fsdelta agent: job {}: failed: {error}", job.id);
            q.finish(
                agent,
                job.id,
                &Outcome::Failed {
                    run_id: None,
                    error,
                },
            )?;
            return Ok(false);
        }
    };
    let margins = MarginArgs {
        eps: None,
        delta: None,
        delta_tail: None,
        delta_max: None,
        gate: super::GateChoice::Headline,
    }
    .resolve(&margins);
    let cancel = CancelToken::new();
    let stop = Arc::new(AtomicU8::new(STOP_NONE));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let beat = heartbeat_thread(
        url.clone(),
        agent.clone(),
        job.id,
        lease_every,
        Flags {
            signal: signal.clone(),
            cancel: cancel.clone(),
            stop: stop.clone(),
            done: done.clone(),
        },
    );
    let (result, run) = {
        let mut store = JobStore {
            inner: &mut *fleet,
            run: None,
        };
        let observer = Log {
            job: job.id,
            quiet: args.quiet,
        };
        // A sample the fleet database cannot take within the bounded wait (FSDELTA_STORE_WAIT)
        // is journaled on this machine, as `fsdelta run` does, rather than held for minutes.
        let journals = Some(crate::store::journals_for(&url));
        let r = runner::run_with(&plan, &mut store, &cancel, &observer, journals);
        (r, store.run)
    };
    // The heartbeat thread sees this within its 200 ms slice and ends on its own; not waiting
    // for it keeps the cycle short (a late heartbeat of an ended job finds it no longer running
    // and changes nothing).
    done.store(true, Ordering::Relaxed);
    drop(beat);
    let reason = stop.load(Ordering::Relaxed);
    if reason == STOP_LOST {
        eprintln!(
            "fsdelta agent: job {}: taken away from this agent (its lease ran out); not finishing it",
            job.id
        );
        return Ok(false);
    }
    let outcome = match result {
        Ok(r) if r.status == RunStatus::Aborted => {
            if reason == STOP_CANCELLED {
                Outcome::Aborted {
                    run_id: Some(r.run_id),
                }
            } else {
                q.release(agent, job.id, "its agent was stopped (signal)")?;
                eprintln!(
                    "fsdelta agent: job {}: stopped by a signal; run {} aborted, job given back to the queue",
                    job.id, r.run_id
                );
                return Ok(true);
            }
        }
        Ok(r) => ended(&*fleet, job.baseline.as_deref(), &r, &margins),
        Err(e) => Outcome::Failed {
            run_id: run,
            error: e.to_string(),
        },
    };
    let line = outcome_line(&outcome);
    if !q.finish(agent, job.id, &outcome)? {
        eprintln!(
            "fsdelta agent: job {}: was requeued meanwhile; its outcome here ({line}) is not recorded",
            job.id
        );
    } else {
        eprintln!("fsdelta agent: job {}: {line}", job.id);
    }
    Ok(false)
}

/// The canary's suite: the --canary file or the built-in one.
fn canary_suite(args: &AgentArgs) -> Result<crate::plan::suite::Suite> {
    match &args.canary {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("reading the canary suite {}", p.display()))?;
            Ok(suitefile::parse(&text, &p.display().to_string())?)
        }
        None => Ok(suitefile::parse(DEFAULT_CANARY, "(built-in canary)")?),
    }
}

/// Run the canary here (in the --target directory, results kept in memory only: a canary is
/// not a run of the fleet) and return its headline metrics: key `test/metric` to values.
fn run_canary(
    args: &AgentArgs,
    environment: &crate::model::Environment,
    signal: &CancelToken,
) -> Result<std::collections::BTreeMap<String, CanaryValues>> {
    let suite = canary_suite(args)?;
    let tests = suite
        .tests
        .iter()
        .map(|t| {
            PlannedTest::build(t, false, None, &[])
                .map_err(|e| anyhow::anyhow!("canary test {}: {e}", t.name))
        })
        .collect::<Result<Vec<_>>>()?;
    let plan = RunSpec {
        label: "canary".into(),
        suite: suite.name.clone(),
        tests,
        targets: Sites::Scratch(match &args.target {
            Some(p) => p.clone(),
            None => std::env::current_dir().context("reading the current directory")?,
        }),
        repeat: args.canary_runs.max(1),
        order: Order::Rotate,
        until_confident: None,
        drop_caches: !args.no_drop_caches,
        ondisk: suite.ondisk,
        ondisk_remount: suite.ondisk_remount,
        profile: None,
        profile_scope: Default::default(),
        baseline: Baseline::None,
        environment: environment.clone(),
    };
    let mut store = crate::store::memory::MemoryStore::new();
    let r = runner::run(&plan, &mut store, signal, &runner::Silent)
        .map_err(|e| anyhow::anyhow!("the canary could not run: {e}"))?;
    if r.failed() > 0 {
        let why: Vec<String> = r.samples.iter().filter_map(|s| s.error.clone()).collect();
        anyhow::bail!("the canary failed: {}", why.join("; "));
    }
    let mut out: std::collections::BTreeMap<String, CanaryValues> = Default::default();
    for s in &r.samples {
        let declared = s.metrics.iter().any(|m| m.headline);
        for m in s.metrics.iter().filter(|m| {
            (m.headline || !declared) && m.direction != crate::model::Direction::Neutral
        }) {
            let e = out
                .entry(format!("{}/{}", s.test, m.name))
                .or_insert_with(|| CanaryValues {
                    higher_is_better: m.direction == crate::model::Direction::HigherIsBetter,
                    class: crate::compare::verdict::MetricClass::of(m.kind),
                    values: Vec::new(),
                });
            e.values.push(m.value);
        }
    }
    if out.is_empty() {
        anyhow::bail!("the canary measured no headline metric");
    }
    Ok(out)
}

/// One canary metric as recorded in the queue (JSON).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct CanaryValues {
    higher_is_better: bool,
    class: crate::compare::verdict::MetricClass,
    values: Vec<f64>,
}

/// Run the canary, judge it against this machine's history and record it. Returns `false`
/// when the machine is now unhealthy (it must not claim).
fn canary_check(
    q: &mut Queue,
    agent: &Agent,
    args: &AgentArgs,
    environment: &crate::model::Environment,
    signal: &CancelToken,
) -> Result<bool> {
    use crate::compare::power::{self, CanaryMetric, Drift};
    let now = match run_canary(args, environment, signal) {
        Ok(v) => v,
        Err(e) if signal.is_cancelled() => return Err(e),
        Err(e) => {
            let reason = format!("{e:#}");
            q.record_canary(agent, false, &reason, "{}")?;
            eprintln!(
                "fsdelta agent: {} marked unhealthy: {reason}; it takes no jobs until `fsdelta machines clear {}`",
                agent.name, agent.name
            );
            return Ok(false);
        }
    };
    let history: Vec<std::collections::BTreeMap<String, CanaryValues>> = q
        .canary_history(&agent.name, power::MAX_CANARY_HISTORY)?
        .iter()
        .filter_map(|c| serde_json::from_str(&c.metrics).ok())
        .collect();
    let metrics: Vec<CanaryMetric> = now
        .iter()
        .map(|(key, v)| CanaryMetric {
            key: key.clone(),
            direction: if v.higher_is_better {
                crate::model::Direction::HigherIsBetter
            } else {
                crate::model::Direction::LowerIsBetter
            },
            class: v.class,
            history: history
                .iter()
                .filter_map(|h| h.get(key).map(|x| x.values.clone()))
                .collect(),
            current: v.values.clone(),
        })
        .collect();
    let drift = power::drift(&metrics, &Default::default());
    let healthy = !matches!(drift, Drift::Moved(_));
    let reason = drift.reason();
    q.record_canary(agent, healthy, &reason, &serde_json::to_string(&now)?)?;
    if healthy {
        if !args.quiet {
            eprintln!("fsdelta agent: {}: {reason}", agent.name);
        }
    } else {
        eprintln!(
            "fsdelta agent: {} marked unhealthy: {reason}; it takes no jobs until `fsdelta machines clear {}`",
            agent.name, agent.name
        );
    }
    Ok(healthy)
}

/// Whether this machine may claim: not marked unhealthy (said once per mark), and, when a job
/// is waiting for it and canaries are on, its canary is steady.
fn may_claim(
    q: &mut Queue,
    agent: &Agent,
    args: &AgentArgs,
    environment: &crate::model::Environment,
    signal: &CancelToken,
    told: &mut Option<String>,
) -> Result<bool> {
    if let Some(h) = q.health(&agent.name)?.filter(|h| !h.healthy) {
        if told.as_deref() != Some(h.reason.as_str()) {
            eprintln!(
                "fsdelta agent: {} is unhealthy since {}: {}; it takes no jobs until `fsdelta machines clear {}`",
                agent.name,
                h.since.format("%Y-%m-%d %H:%M:%S UTC"),
                h.reason,
                agent.name
            );
            *told = Some(h.reason);
        }
        return Ok(false);
    }
    *told = None;
    if args.no_canary || !q.claimable(agent)? {
        return Ok(true);
    }
    canary_check(q, agent, args, environment, signal)
}

/// `fsdelta agent`.
pub fn main(args: &AgentArgs) -> Result<i32> {
    // First, before any thread: leftovers undone, then mounts in a namespace of the agent's own.
    super::run::recover_and_isolate("fsdelta agent")?;
    if !(args.heartbeat > 0.0 && args.heartbeat.is_finite()) {
        anyhow::bail!("--heartbeat must be a positive number of seconds");
    }
    let url = args.db.location();
    let environment = env::environment();
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| environment.host.clone());
    let agent = Agent {
        token: Agent::new_token(),
        name,
        host: environment.host.clone(),
        machine_id: environment.machine_id.clone(),
        classes: args.classes.clone(),
        environment: serde_json::to_string(&environment)?,
    };
    let lease = Duration::from_secs_f64(args.heartbeat * 4.0);
    match crate::site::recover_leftovers() {
        Ok(report) if !report.is_empty() => {
            eprintln!("fsdelta agent: leftovers from an earlier run:\n{report}")
        }
        Ok(_) => {}
        Err(e) => eprintln!("fsdelta agent: warning: could not check for leftovers: {e}"),
    }
    let signal = super::install_signals().context("installing signal handlers")?;
    // The database may be down or restarting when the agent starts (a machine booting before
    // the database server): wait for it rather than exit.
    if crate::store::Backend::of(&url) != crate::store::Backend::Postgres {
        anyhow::bail!(
            "the job queue needs a PostgreSQL database (--db postgres://USER@HOST/DB), not '{url}'"
        );
    }
    let target = crate::store::postgres::PgTarget::parse(&url)?;
    let mut tries = 0;
    let (mut q, mut fleet) = loop {
        target.wait_until_reachable(Duration::from_secs(120))?;
        match Queue::open(&url)
            .map_err(anyhow::Error::from)
            .and_then(|q| Ok((q, crate::store::open_fleet(&url)?)))
        {
            Ok(v) => break v,
            Err(_) if tries < 5 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => return Err(e),
        }
    };
    // Every run this agent stores is written under its claim token.
    fleet.act_for_claim(Some(agent.token.clone()));
    // Each call retries a lost connection briefly; the run's journaled store does the waiting,
    // says so within seconds, and journals after the bounded wait.
    fleet.set_retry_for(crate::store::RUN_RECONNECT_WINDOW);
    q.register(&agent, env!("CARGO_PKG_VERSION"))?;
    q.listen(CHANNEL)?;
    eprintln!(
        "fsdelta agent: {} registered (classes: {}) on {}",
        agent.name,
        if agent.classes.is_empty() {
            "none".to_string()
        } else {
            agent.classes.join(",")
        },
        q.shown()
    );
    let mut ran = 0u64;
    // The unhealthy mark last reported, so that it is said once, not once per lease.
    let mut told: Option<String> = None;
    loop {
        if signal.is_cancelled() {
            return Ok(EXIT_INTERRUPTED);
        }
        if args.max_jobs.is_some_and(|m| ran >= m) {
            break;
        }
        {
            for r in q.reap()? {
                eprintln!(
                    "fsdelta agent: job {}: agent {} went silent; job now {}{}",
                    r.id,
                    r.agent.as_deref().unwrap_or("?"),
                    r.state,
                    r.run_id
                        .map(|id| format!(", run {id} marked aborted"))
                        .unwrap_or_default()
                );
            }
        }
        let job = if may_claim(&mut q, &agent, args, &environment, &signal, &mut told)? {
            q.claim(&agent, lease)?
        } else {
            None
        };
        match job {
            Some(job) => {
                ran += 1;
                if run_job(&mut q, &mut fleet, &agent, job, args, &environment, &signal)? {
                    return Ok(EXIT_INTERRUPTED);
                }
                if args.once {
                    break;
                }
            }
            None if args.once => break,
            None => {
                // Sleep until a submit or requeue notifies us; wake at least once per lease to
                // reap for silent agents. The 1 s slices only let a signal end the wait.
                let until = Instant::now() + lease;
                while Instant::now() < until && !signal.is_cancelled() {
                    if !q.wait(Duration::from_secs(1))?.is_empty() {
                        break;
                    }
                }
            }
        }
    }
    Ok(EXIT_OK)
}
