//! The run itself: a [`RunSpec`] (tests built into workloads, where to run them, how often and in
//! which order, what to attach), a store, a cancel token and an [`Observer`] in; a
//! [`RunResult`] out. `fsdelta run` and a fleet agent call [`run`]; inside a guest kernel in a
//! virtual machine, `fsdelta guest-run` calls [`guest::run`], which runs one repetition's tests
//! through the same sample step. None of them has a loop of its own: every sample loop is here.
//!
//! The loop ([`run`]) goes repetition by repetition; within a repetition the configurations
//! (and, for `random`, the tests) take the positions [`Order::schedule`] gives, so that drift of
//! the machine and position effects spread over every configuration. The sample step
//! (`sample::run_sample`) measures one test once on one [`site::Site`]; the store write
//! (`sample::store_sample`) keeps it whole or not at all, as soon as it finishes.
//!
//! Invariants: a finished sample is stored before the next starts; an interrupted run keeps its
//! finished samples and ends `aborted`; every site is torn down on every path (success, error,
//! cancel); a run is never left `running` behind an error of its own; a sample the store does not
//! take is journaled (`store::journal`, [`run_with`]) and the observer hears at once that the
//! store is unreachable, then where the sample went. What it must never do:
//! print, parse flags, open a store by URL, or decide exit codes (the CLI edge does).

pub mod confident;
pub mod guest;
pub mod observer;
pub mod order;
pub mod profile;
pub mod sample;
pub mod site;

pub use observer::{Event, Observer, Recorder, Silent};
pub use order::Order;
pub use profile::ProfileMode;
pub use site::Site;

use crate::compare::{self, verdict::Margins};
use crate::model::{Environment, NewRun, NewSample, RunId, RunStatus, SampleRecord, SampleStatus};
use crate::plan::config::ConfigFile;
use crate::probe::clock::Nanos;
use crate::site::{SiteError, StateFile, scratch::ScratchSite};
use crate::store::{RunFilter, Selector, Store, StoreError};
use crate::workload::{CancelToken, Measurements, Workload};
use chrono::Utc;
use std::path::PathBuf;

/// One test of a plan, its workload built and checked.
pub struct PlannedTest {
    /// The test's name in the suite.
    pub name: String,
    /// The workload with its options bound.
    pub workload: Box<dyn Workload>,
    /// The command line or options that reproduce it, stored with every sample.
    pub description: String,
    /// Tracepoints counted during each of its samples (`event:GROUP:NAME` metrics).
    pub events: Vec<crate::probe::events::Tracepoint>,
}

impl PlannedTest {
    /// Build `t`'s workload (the real tool when `external_all` or the test says so) and resolve
    /// its tracepoints: the run's `events` list and `filters` plus the test's own.
    pub fn build(
        t: &crate::plan::suite::TestSpec,
        external_all: bool,
        events: Option<&str>,
        filters: &[String],
    ) -> Result<PlannedTest, String> {
        let (workload, description) =
            crate::engines::build_test(&t.engine, t.external || external_all)
                .map_err(|e| e.to_string())?;
        let events = crate::probe::events::for_test(events, filters, &t.events)
            .map_err(|e| e.to_string())?;
        Ok(PlannedTest {
            name: t.name.clone(),
            workload,
            description,
            events,
        })
    }
}

/// Where a plan's samples run.
pub enum Sites {
    /// A scratch directory created inside this directory, removed at the end.
    Scratch(PathBuf),
    /// Every configuration of a config file; `state` records what is created.
    Configs {
        /// The parsed config file.
        file: ConfigFile,
        /// The leftover-state file.
        state: StateFile,
    },
}

/// With what the run is compared when it ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Baseline {
    /// Nothing.
    None,
    /// The latest earlier complete run of the same suite and configurations, for information.
    LastComparable,
    /// These runs (a selector); the comparison gates the exit code.
    Runs(String),
}

/// `--until-confident`: add repetitions of unresolved tests up to `max_repeat`.
#[derive(Clone, Debug)]
pub struct UntilConfident {
    /// Most repetitions of a test.
    pub max_repeat: u32,
    /// The margins that decide "resolved".
    pub margins: Margins,
    /// Configurations of this run compared with each other (base, current): each pair's two
    /// sides run until the verdict between them is resolved, not each on its own (see
    /// `confident`). Empty: each configuration against `--baseline`, else on its own.
    pub pairs: Vec<(String, String)>,
    /// `--repeat-disturbed`: leave samples measured under disturbance out of the decision and
    /// repeat their test (see `confident`).
    pub repeat_disturbed: bool,
    /// Where the starting repetitions came from when a calibration planned them (recorded in
    /// every sample's facts as `until_confident_start`).
    pub planned_from: Option<String>,
}

/// Everything a run needs, resolved.
pub struct RunSpec {
    /// Label of the run.
    pub label: String,
    /// Suite name.
    pub suite: String,
    /// The tests, in suite order.
    pub tests: Vec<PlannedTest>,
    /// Where they run.
    pub targets: Sites,
    /// Repetitions of every test on every configuration.
    pub repeat: u32,
    /// Order of configurations and tests within a repetition.
    pub order: Order,
    /// Keep adding repetitions until the headline is resolved.
    pub until_confident: Option<UntilConfident>,
    /// Drop the page cache before each sample (as root).
    pub drop_caches: bool,
    /// Measure what each sample left on disk (the suite's `ondisk` key).
    pub ondisk: bool,
    /// Measure fragmentation again after each sample's unmount and mount (the suite's
    /// `ondisk_remount` key).
    pub ondisk_remount: bool,
    /// CPU profiles.
    pub profile: Option<ProfileMode>,
    /// Whose CPU time the profiles keep.
    pub profile_scope: crate::probe::profile::ProfileScope,
    /// The closing comparison.
    pub baseline: Baseline,
    /// The machine.
    pub environment: Environment,
}

/// A test that could not run on a configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// Configuration.
    pub config: String,
    /// Test.
    pub test: String,
    /// Why.
    pub why: String,
}

/// The closing comparison the run asks for: the CLI (or agent) judges and shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Closing {
    /// The baseline runs (a selector).
    pub baseline: String,
    /// Whether its verdict decides the exit code (`--baseline`), or is for information.
    pub gating: bool,
}

/// What a run did.
#[derive(Debug)]
pub struct RunResult {
    /// The run's id.
    pub run_id: RunId,
    /// Its label.
    pub label: String,
    /// How it ended.
    pub status: RunStatus,
    /// Every stored sample, in the order stored.
    pub samples: Vec<NewSample>,
    /// Tests that could not run, once per (configuration, test, reason).
    pub skipped: Vec<Skipped>,
    /// Why tearing down a target failed (`fsdelta cleanup` retries).
    pub teardown_error: Option<String>,
    /// The comparison to show, if any.
    pub closing: Option<Closing>,
    /// Wall time of the run, from setting up its targets to tearing them down, seconds.
    pub wall_s: f64,
    /// Where the samples the store did not take went (journals, or printed as journal lines),
    /// when there are any: the caller's last word on the run.
    pub unsaved: Option<String>,
}

impl RunResult {
    /// Stored samples that failed.
    pub fn failed(&self) -> usize {
        self.samples
            .iter()
            .filter(|s| s.status == SampleStatus::Failed)
            .count()
    }

    /// Seconds the workloads themselves ran: every stored sample's duration less its
    /// `overhead_s` (a guest's boot is outside every sample).
    pub fn workload_s(&self) -> f64 {
        self.samples
            .iter()
            .filter(|s| s.status == SampleStatus::Ok)
            .map(|s| {
                let overhead = s
                    .metrics
                    .iter()
                    .find(|m| m.name == "overhead_s")
                    .map_or(0.0, |m| m.value);
                (s.duration_s - overhead).max(0.0)
            })
            .sum()
    }

    /// The stored samples as records of this run (for summaries).
    pub fn records(&self) -> Vec<SampleRecord> {
        self.samples
            .iter()
            .cloned()
            .map(|sample| SampleRecord {
                id: 0,
                run_id: self.run_id,
                sample,
            })
            .collect()
    }
}

/// Why a run could not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The plan cannot run (no test, no repetition).
    #[error("{0}")]
    Plan(String),
    /// A target cannot be set up.
    #[error(transparent)]
    Target(#[from] SiteError),
    /// The store refused something.
    #[error("{what}: {source}")]
    Store {
        /// What was being done.
        what: String,
        /// The store's error.
        source: StoreError,
    },
    /// Profiling failed.
    #[error("{0}")]
    Profile(String),
    /// The run had started and stopped on an error; its finished samples are stored, or in a
    /// journal ([`RunError::Unsaved`] says which).
    #[error("run {run_id} stopped; its finished samples are kept: {source}")]
    Stopped {
        /// The run.
        run_id: RunId,
        /// Why.
        source: Box<RunError>,
    },
    /// The run stopped on an error and some of its samples are not in the store: where each
    /// went.
    #[error("{error}; {summary}")]
    Unsaved {
        /// Why the run stopped.
        error: Box<RunError>,
        /// Where the samples the store did not take are.
        summary: String,
    },
}

fn store_err(what: &str) -> impl FnOnce(StoreError) -> RunError + '_ {
    move |source| RunError::Store {
        what: what.to_string(),
        source,
    }
}

/// Build the sites of `targets`, every one checked before any is used (so a missing mkfs
/// program or a refused device fails the run before its first sample).
fn sites(targets: &Sites) -> Result<Vec<Site>, RunError> {
    Ok(match targets {
        // Recorded in the state file (so `cleanup` removes it after a kill -9) when there is a
        // usable one; a plain run must still work where there is none.
        Sites::Scratch(parent) => {
            let state = StateFile::default_location();
            vec![Site::Scratch(match state.check() {
                Ok(()) => ScratchSite::create_recorded(parent, &state)?,
                Err(_) => ScratchSite::create_in(parent)?,
            })]
        }
        Sites::Configs { file, state } => {
            let mut sites = Vec::new();
            for c in &file.configs {
                let in_config = |message: String| SiteError::Config {
                    name: c.name.clone(),
                    line: c.line,
                    error: Box::new(SiteError::Unusable {
                        path: c.name.clone(),
                        message,
                    }),
                };
                // A configuration with a kernel runs in a guest of that kernel (crate::vm).
                if c.vm.is_some() {
                    let me = std::env::current_exe()
                        .map_err(|e| in_config(format!("finding fsdelta's own binary: {e}")))?;
                    let v = crate::vm::VmSite::new(c, &file.scratch, state.clone(), &me)
                        .map_err(|e| in_config(e.to_string()))?;
                    sites.push(Site::Vm(Box::new(v)));
                    continue;
                }
                let t = crate::site::ConfiguredSite::new(c, &file.scratch, state.clone()).map_err(
                    |e| SiteError::Config {
                        name: c.name.clone(),
                        line: c.line,
                        error: Box::new(e),
                    },
                )?;
                sites.push(Site::Configured(Box::new(t)));
            }
            sites
        }
    })
}

/// Undo every site; the first error is returned, naming its configuration.
fn teardown(sites: Vec<Site>) -> Option<String> {
    let mut first = None;
    for s in sites {
        let name = s.name().to_string();
        if let Err(e) = s.teardown()
            && first.is_none()
        {
            first = Some(format!(
                "tearing down config '{name}' (`fsdelta cleanup` retries): {e}"
            ));
        }
    }
    first
}

/// The run loop's state between samples.
struct Loop<'a> {
    plan: &'a RunSpec,
    store: &'a mut dyn Store,
    cancel: &'a CancelToken,
    observer: &'a dyn Observer,
    sites: Vec<Site>,
    profiler: Option<profile::RunProfiler>,
    /// Open event counters, one set per distinct list of tracepoints.
    counters: Vec<crate::probe::events::Counters>,
    /// Per test, the index of its counters in `counters`.
    events: Vec<Option<usize>>,
    run_id: RunId,
    stored: Vec<NewSample>,
    skipped: Vec<Skipped>,
    sequence: u32,
}

impl Loop<'_> {
    /// One sample of test `t` on site `c`, repetition `rep` of `of`. `Ok(false)` when the run
    /// was interrupted.
    fn one(&mut self, c: usize, t: usize, rep: u32, of: u32) -> Result<bool, RunError> {
        if self.cancel.is_cancelled() {
            return Ok(false);
        }
        let test = &self.plan.tests[t];
        let config = self.sites[c].name().to_string();
        self.sequence += 1;
        self.observer.event(Event::SampleStarted {
            config: config.clone(),
            test: test.name.clone(),
            repetition: rep,
            of,
        });
        let started_at = Utc::now();
        let t0 = Nanos::now();
        let profiler = self.profiler.as_mut().filter(|p| p.wants(rep));
        let outcome = sample::run_sample(
            &mut self.sites[c],
            &format!("{}-{rep}", test.name),
            &test.name,
            test.workload.as_ref(),
            sample::Step {
                cancel: self.cancel,
                observer: self.observer,
                drop_caches: self.plan.drop_caches,
                ondisk: self.plan.ondisk,
                ondisk_remount: self.plan.ondisk_remount,
                profiler,
                events: self.events[t].map(|i| &mut self.counters[i]),
            },
        );
        let (mut facts, result) = match outcome {
            sample::Outcome::Cancelled => return Ok(false),
            sample::Outcome::Skipped(why) => {
                self.observer.event(Event::Skipped {
                    config: config.clone(),
                    test: test.name.clone(),
                    repetition: rep,
                    of,
                    why: why.clone(),
                });
                let s = Skipped {
                    config,
                    test: test.name.clone(),
                    why,
                };
                if !self.skipped.contains(&s) {
                    self.skipped.push(s);
                }
                return Ok(true);
            }
            sample::Outcome::Done { facts, result } => (*facts, result),
        };
        facts
            .extra
            .insert("order".into(), self.plan.order.to_string());
        if let Some(p) = self
            .plan
            .until_confident
            .as_ref()
            .and_then(|uc| uc.planned_from.as_ref())
        {
            facts
                .extra
                .insert("until_confident_start".into(), p.clone());
        }
        if let Some(p) = self.profiler.as_ref().filter(|p| p.wants(rep)) {
            facts
                .extra
                .insert("profile_scope".into(), p.scope().name().into());
        }
        // Issue 38 (helper d38): `confident` leaves a disturbed sample out and repeats its test.
        if self
            .plan
            .until_confident
            .as_ref()
            .is_some_and(|uc| uc.repeat_disturbed)
            && let Some(d) = facts.extra.get_mut(crate::probe::disturbance::FACT)
        {
            d.push_str("; --until-confident left it out and repeats the test");
        }
        let duration_s = t0.elapsed().as_secs_f64();
        let (status, error, m) = match result {
            Ok(m) => (SampleStatus::Ok, None, m),
            Err(e) => (SampleStatus::Failed, Some(e), Measurements::default()),
        };
        let (sample_id, sample) = sample::store_sample(
            self.store,
            self.run_id,
            NewSample {
                config,
                test: test.name.clone(),
                repetition: rep,
                sequence: self.sequence,
                facts,
                status,
                error,
                started_at,
                duration_s,
                workload: test.description.clone(),
                metrics: m.metrics,
                histograms: m.histograms,
                attachments: m.attachments,
            },
        )
        .map_err(store_err("storing a sample"))?;
        if let Some(p) = self.profiler.as_mut() {
            p.store(self.store, sample_id, self.observer)?;
        }
        self.stored_one(sample, of);
        Ok(true)
    }

    /// A sample is stored: tell the observer and keep it for the summary.
    fn stored_one(&mut self, sample: NewSample, of: u32) {
        self.observer.event(match sample.status {
            SampleStatus::Ok => Event::SampleEnded {
                of,
                sample: Box::new(sample.clone()),
            },
            SampleStatus::Failed => Event::SampleFailed {
                of,
                sample: Box::new(sample.clone()),
            },
        });
        self.stored.push(sample);
    }

    /// The samples of one repetition in `schedule`'s order; a configuration with a kernel gets
    /// its run of consecutive tests as one boot ([`Loop::guest`]). `Ok(false)` when interrupted.
    fn pass(&mut self, schedule: &[(usize, usize)], rep: u32, of: u32) -> Result<bool, RunError> {
        let mut i = 0;
        while i < schedule.len() {
            let c = schedule[i].0;
            if matches!(self.sites[c], Site::Vm(_)) {
                let mut tests = Vec::new();
                while i < schedule.len() && schedule[i].0 == c {
                    tests.push(schedule[i].1);
                    i += 1;
                }
                if !self.guest(c, &tests, rep, of)? {
                    return Ok(false);
                }
            } else {
                if !self.one(c, schedule[i].1, rep, of)? {
                    return Ok(false);
                }
                i += 1;
            }
        }
        Ok(true)
    }

    /// One boot of the guest of site `c` running tests `ts` as repetition `rep`: every sample
    /// it returns (or a failed one per test when the boot failed) is stored as the host's own.
    /// `Ok(false)` when interrupted (qemu is killed, nothing of the boot is stored).
    fn guest(&mut self, c: usize, ts: &[usize], rep: u32, of: u32) -> Result<bool, RunError> {
        if self.cancel.is_cancelled() {
            return Ok(false);
        }
        let config = self.sites[c].name().to_string();
        let mut specs = Vec::new();
        let mut unsendable = None;
        for &t in ts {
            let test = &self.plan.tests[t];
            match guest_spec(test) {
                Some(spec) => specs.push(spec),
                None => unsendable = Some(test.name.clone()),
            }
        }
        self.observer.event(Event::SampleStarted {
            config: config.clone(),
            test: self.plan.tests[ts[0]].name.clone(),
            repetition: rep,
            of,
        });
        let Site::Vm(vm) = &mut self.sites[c] else {
            unreachable!("guest() is called for Vm sites only")
        };
        let options = crate::vm::RepetitionOptions {
            drop_caches: self.plan.drop_caches,
            // A guest that cannot see the host's perf records none (refused before the run
            // unless --profile=optional).
            profile: self
                .profiler
                .as_ref()
                .filter(|p| p.wants(rep) && vm.host_root().is_ok())
                .map(|p| p.scope()),
            ondisk: self.plan.ondisk,
            ondisk_remount: self.plan.ondisk_remount,
            ..Default::default()
        };
        let result = match unsendable {
            Some(name) => Err(format!(
                "test {name} cannot be sent to a guest: it was not built from a suite test"
            )),
            None => match vm.run_repetition(&specs, rep, &options, self.cancel) {
                Ok(r) => Ok(r),
                Err(crate::vm::VmError::Cancelled) => return Ok(false),
                Err(e) => Err(e.to_string()),
            },
        };
        let started_at = Utc::now();
        let (samples, skipped, mut profiles) = match result {
            Ok(r) => {
                // Said as the host's own samples say them (a declared metric missing).
                for w in r.warnings {
                    self.observer.event(Event::Warning(w));
                }
                (r.samples, r.skipped, r.profiles)
            }
            Err(e) => (
                ts.iter()
                    .map(|&t| NewSample {
                        config: config.clone(),
                        test: self.plan.tests[t].name.clone(),
                        repetition: rep,
                        sequence: 0,
                        facts: Default::default(),
                        status: SampleStatus::Failed,
                        error: Some(e.clone()),
                        started_at,
                        duration_s: 0.0,
                        workload: self.plan.tests[t].description.clone(),
                        metrics: Vec::new(),
                        histograms: Vec::new(),
                        attachments: Vec::new(),
                    })
                    .collect(),
                Vec::new(),
                Vec::new(),
            ),
        };
        for (test, why) in skipped {
            self.observer.event(Event::Skipped {
                config: config.clone(),
                test: test.clone(),
                repetition: rep,
                of,
                why: why.clone(),
            });
            let s = Skipped {
                config: config.clone(),
                test,
                why,
            };
            if !self.skipped.contains(&s) {
                self.skipped.push(s);
            }
        }
        for (k, mut sample) in samples.into_iter().enumerate() {
            if k > 0 {
                self.observer.event(Event::SampleStarted {
                    config: config.clone(),
                    test: sample.test.clone(),
                    repetition: rep,
                    of,
                });
            }
            self.sequence += 1;
            sample.sequence = self.sequence;
            sample.repetition = rep;
            if let Some(t) = self.plan.tests.iter().find(|t| t.name == sample.test) {
                sample.workload = t.description.clone();
            }
            sample
                .facts
                .extra
                .insert("order".into(), self.plan.order.to_string());
            let profile = profiles
                .iter()
                .position(|(test, _)| *test == sample.test)
                .map(|p| profiles.remove(p).1);
            let (id, sample) = sample::store_sample(self.store, self.run_id, sample)
                .map_err(store_err("storing a sample"))?;
            // Folded in the guest as the host folds its own; stored with its sample the same way.
            if let Some(p) = profile {
                self.store
                    .add_profile(id, &p)
                    .map_err(store_err(&format!("storing the profile of sample {id}")))?;
            }
            self.stored_one(sample, of);
        }
        Ok(true)
    }

    /// Every repetition, then (with until-confident) more where the headline is unresolved.
    /// `Ok(false)` when interrupted.
    fn body(&mut self, baseline_series: &[compare::Series]) -> Result<bool, RunError> {
        let plan = self.plan;
        let (n_configs, n_tests) = (self.sites.len(), plan.tests.len());
        for rep in 1..=plan.repeat {
            let schedule = plan.order.schedule(rep, n_configs, n_tests);
            if !self.pass(&schedule, rep, plan.repeat)? {
                return Ok(false);
            }
        }
        let Some(uc) = &plan.until_confident else {
            return Ok(true);
        };
        for rep in plan.repeat + 1..=uc.max_repeat {
            let pending: Vec<(usize, usize)> = plan
                .order
                .schedule(rep, n_configs, n_tests)
                .into_iter()
                .filter(|&(c, t)| {
                    !confident::confident(
                        &self.stored,
                        baseline_series,
                        &uc.pairs,
                        self.sites[c].name(),
                        &plan.tests[t].name,
                        &uc.margins,
                        uc.repeat_disturbed,
                    )
                })
                .collect();
            if pending.is_empty() {
                break;
            }
            if !self.pass(&pending, rep, uc.max_repeat)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Every baseline value of every (configuration, test, metric), for `--until-confident`.
fn baseline_values(store: &dyn Store, sel: &str) -> Result<Vec<compare::Series>, StoreError> {
    let runs = store.select(&sel.parse::<Selector>()?)?;
    let mut samples = Vec::new();
    for r in runs {
        samples.extend(store.samples(r.id)?);
    }
    let refs: Vec<&SampleRecord> = samples.iter().collect();
    Ok(compare::series(&refs))
}

/// The latest earlier complete run of `suite` with exactly the configurations `configs`.
fn last_comparable(
    store: &dyn Store,
    run_id: RunId,
    suite: &str,
    configs: &[String],
) -> Result<Option<RunId>, StoreError> {
    let mut ours: Vec<&str> = configs.iter().map(String::as_str).collect();
    ours.sort();
    ours.dedup();
    for r in store.runs(&RunFilter::default())? {
        if r.id >= run_id || r.status != RunStatus::Complete || r.suite != suite {
            continue;
        }
        let samples = store.samples(r.id)?;
        let mut theirs: Vec<&str> = samples.iter().map(|s| s.sample.config.as_str()).collect();
        theirs.sort();
        theirs.dedup();
        if theirs == ours {
            return Ok(Some(r.id));
        }
    }
    Ok(None)
}

/// Run `plan`: set up its sites, record the run, run every sample in the plan's order, store
/// each as it finishes, tear everything down, and end the run with its status. Runs whose
/// fsdelta died are marked aborted first; samples the store refuses are journaled beside it
/// (`store::journal`), never lost. The journals are those of a store that names one
/// ([`Store::journal_path`], a SQLite store); [`run_with`] names them for any store.
pub fn run(
    plan: &RunSpec,
    store: &mut dyn Store,
    cancel: &CancelToken,
    observer: &dyn Observer,
) -> Result<RunResult, RunError> {
    let journals = store.journal_path().map(|j| {
        let j = j.display().to_string();
        crate::store::journals_for(j.strip_suffix(".journal").unwrap_or(&j))
    });
    run_with(plan, store, cancel, observer, journals)
}

/// [`run`], keeping what the store refuses in `journals` (`store::journals_for` the store's
/// location; `None` keeps nothing). A store that refuses a write is retried for the bounded
/// wait (`FSDELTA_STORE_WAIT`, `store::journal::DEFAULT_WAIT`): the observer hears at the first
/// failure that the store is unreachable, how many samples are held and that the run keeps
/// trying, then where each sample was journaled; [`RunResult::unsaved`] (or the error) says
/// where each unsaved sample went.
pub fn run_with(
    plan: &RunSpec,
    store: &mut dyn Store,
    cancel: &CancelToken,
    observer: &dyn Observer,
    journals: Option<crate::store::journal::Journals>,
) -> Result<RunResult, RunError> {
    let wait = crate::store::journal::wait_from_env().map_err(RunError::Plan)?;
    if let Ok(ids) = store.abort_orphaned_runs() {
        for id in ids {
            observer.event(Event::Warning(format!(
                "run {id} was left running by an fsdelta that is gone: marked aborted"
            )));
        }
    }
    let Some(journals) = journals else {
        return run_stored(plan, store, cancel, observer);
    };
    let mut journaled =
        crate::store::journal::JournaledStore::with_journals(Box::new(store), journals, wait);
    journaled.set_notice(Box::new(move |m| observer.event(Event::Warning(m))));
    let result = run_stored(plan, &mut journaled, cancel, observer);
    let summary = journaled.summary();
    match result {
        Ok(mut r) => {
            if journaled.failed_later() > 0 && r.status == RunStatus::Complete {
                r.status = RunStatus::Failed;
            }
            r.unsaved = summary;
            Ok(r)
        }
        Err(e) => Err(match summary {
            Some(summary) => RunError::Unsaved {
                error: Box::new(e),
                summary,
            },
            None => e,
        }),
    }
}

/// The run once its journals are settled: checked, recorded, looped, torn down, ended.
fn run_stored(
    plan: &RunSpec,
    store: &mut dyn Store,
    cancel: &CancelToken,
    observer: &dyn Observer,
) -> Result<RunResult, RunError> {
    let baseline_series = check(plan, store)?;
    let profiler = profile::RunProfiler::new(plan.profile, plan.profile_scope, observer)?;
    let (counters, events) = open_counters(&plan.tests)?;
    let began = Nanos::now();
    let sites = sites(&plan.targets)?;
    if let Err(e) = check_guests(&sites, plan) {
        let _ = teardown(sites);
        return Err(e);
    }
    warn_about_guests(&sites, plan, observer);
    let names: Vec<String> = sites.iter().map(|s| s.name().to_string()).collect();
    let run_id = match store.create_run(&NewRun {
        label: plan.label.clone(),
        suite: plan.suite.clone(),
        started_at: Utc::now(),
        fsdelta_version: env!("CARGO_PKG_VERSION").to_string(),
        environment: plan.environment.clone(),
    }) {
        Ok(id) => id,
        Err(e) => {
            let _ = teardown(sites);
            return Err(store_err("recording the run")(e));
        }
    };
    observer.event(Event::RunStarted {
        run_id,
        label: plan.label.clone(),
        suite: plan.suite.clone(),
        tests: plan.tests.len(),
        configs: names.clone(),
        repetitions: plan.repeat,
    });
    let mut lp = Loop {
        plan,
        store,
        cancel,
        observer,
        sites,
        profiler,
        counters,
        events,
        run_id,
        stored: Vec::new(),
        skipped: Vec::new(),
        sequence: 0,
    };
    let body = lp.body(&baseline_series);
    let Loop {
        store,
        sites,
        stored,
        skipped,
        ..
    } = lp;
    let teardown_error = teardown(sites);
    let completed = match body {
        Ok(c) => c,
        Err(e) => {
            let _ = store.finish_run(run_id, RunStatus::Failed, Utc::now());
            return Err(RunError::Stopped {
                run_id,
                source: Box::new(e),
            });
        }
    };
    let any_failed = stored.iter().any(|s| s.status == SampleStatus::Failed);
    let status = if !completed {
        RunStatus::Aborted
    } else if any_failed || teardown_error.is_some() {
        RunStatus::Failed
    } else {
        RunStatus::Complete
    };
    store
        .finish_run(run_id, status, Utc::now())
        .map_err(store_err("ending the run"))?;
    let closing = closing(plan, store, run_id, status, &names);
    Ok(RunResult {
        run_id,
        label: plan.label.clone(),
        status,
        samples: stored,
        skipped,
        teardown_error,
        closing,
        wall_s: began.elapsed().as_secs_f64(),
        unsaved: None,
    })
}

/// Everything about `plan` that can fail before the run is recorded: repetitions, tests, the
/// baseline selector (its values, for `--until-confident`), writing tests on read-only
/// filesystems.
fn check(plan: &RunSpec, store: &dyn Store) -> Result<Vec<compare::Series>, RunError> {
    if plan.repeat == 0 {
        return Err(RunError::Plan(
            crate::plan::PlanError::NoRepetitions.to_string(),
        ));
    }
    if plan.tests.is_empty() {
        return Err(RunError::Plan("the plan has no test to run".into()));
    }
    let baseline_series = match (&plan.baseline, &plan.until_confident) {
        (Baseline::Runs(b), Some(_)) => {
            baseline_values(store, b).map_err(store_err("reading the --baseline runs"))?
        }
        (Baseline::Runs(b), None) => {
            let sel: Selector = b
                .parse()
                .map_err(store_err("reading the --baseline selector"))?;
            store.select(&sel).map_err(store_err("--baseline"))?;
            Vec::new()
        }
        _ => Vec::new(),
    };
    // A read-only filesystem (erofs) runs only tests that write nothing: command tests (which
    // fail on their own if they write) and fio jobs that only read existing files.
    if let Sites::Configs { file, .. } = &plan.targets {
        for c in file.configs.iter().filter(|c| c.fs.read_only()) {
            if let Some(t) = plan.tests.iter().find(|t| !t.workload.reads_only()) {
                return Err(RunError::Plan(format!(
                    "config '{}' is fs = \"{}\", which is read-only, and test {} ({}) writes: only command tests and fio jobs that only read files in the image (rw=read or randread, an engine such as psync or io_uring, no verify, no log files) run on it; leave this test out with --test, or give it another configuration file",
                    c.name,
                    c.fs,
                    t.name,
                    t.workload.engine()
                )));
            }
        }
    }
    Ok(baseline_series)
}

/// The tracepoint counters of `tests`, and per test the index of its set: tests with the same
/// tracepoints share one set (descriptors are events x CPUs).
fn open_counters(
    tests: &[PlannedTest],
) -> Result<(Vec<crate::probe::events::Counters>, Vec<Option<usize>>), RunError> {
    let mut counters = Vec::new();
    let mut lists: Vec<&[crate::probe::events::Tracepoint]> = Vec::new();
    let mut events = Vec::new();
    for t in tests {
        events.push(if t.events.is_empty() {
            None
        } else if let Some(i) = lists.iter().position(|l| *l == t.events.as_slice()) {
            Some(i)
        } else {
            counters.push(
                crate::probe::events::Counters::open(&t.events)
                    .map_err(|e| RunError::Plan(format!("test {}: {e}", t.name)))?,
            );
            lists.push(&t.events);
            Some(counters.len() - 1)
        });
    }
    Ok((counters, events))
}

/// The suite test `t` was built from, as a guest's job carries it; `None` when it was not built
/// from one (a workload made in code).
fn guest_spec(t: &PlannedTest) -> Option<crate::plan::suite::TestSpec> {
    let (engine, external) = t.workload.spec()?;
    Some(crate::plan::suite::TestSpec {
        name: t.name.clone(),
        description: String::new(),
        engine: engine.clone(),
        external,
        // Resolved again against the guest's own tracefs (its ids are the guest kernel's);
        // filters name host devices and are not carried.
        events: t
            .events
            .iter()
            .map(|tp| format!("{}:{}", tp.group, tp.name))
            .collect(),
    })
}

/// What cannot run in a configuration's guest, refused before anything boots, naming the
/// configuration and the test: a test whose programs or files the guest cannot see, more tests
/// than one guest has disks for, profiles where the guest cannot see the host's perf.
fn check_guests(sites: &[Site], plan: &RunSpec) -> Result<(), RunError> {
    for s in sites {
        let Site::Vm(v) = s else { continue };
        let name = &v.config().name;
        let mut specs = Vec::new();
        for t in &plan.tests {
            specs.push(guest_spec(t).ok_or_else(|| {
                RunError::Plan(format!(
                    "config '{name}': test {} cannot be sent to a guest: it was not built from a suite test",
                    t.name
                ))
            })?);
        }
        v.check_tests(&specs).map_err(|e| {
            RunError::Plan(format!(
                "config '{name}': {e}; or leave the test out with --test"
            ))
        })?;
        if let (Some(mode), Err(why)) = (plan.profile, v.host_root())
            && mode != ProfileMode::Optional
        {
            return Err(RunError::Plan(format!(
                "config '{name}': --profile in the guest of kernel {} needs the host's perf, which the guest cannot see ({why}): build the kernel with 9p (CONFIG_NET_9P_VIRTIO, CONFIG_9P_FS), or use --profile=optional",
                v.kernel().release
            )));
        }
    }
    Ok(())
}

/// The guests' warnings (each once), and what a guest does not take from the host: tracepoint
/// filters (they name the host's devices), so its counts are of every device.
fn warn_about_guests(sites: &[Site], plan: &RunSpec, observer: &dyn Observer) {
    let mut warned: Vec<&String> = Vec::new();
    for s in sites {
        if let Site::Vm(v) = s {
            for w in v.warnings() {
                if !warned.contains(&w) {
                    warned.push(w);
                    observer.event(Event::Warning(w.clone()));
                }
            }
            if let (Some(ProfileMode::Optional), Err(why)) = (plan.profile, v.host_root()) {
                observer.event(Event::Warning(format!(
                    "--profile=optional: config '{}' records no profiles: its guest cannot see the host's perf ({why})",
                    v.config().name
                )));
            }
        }
    }
    let filtered = plan
        .tests
        .iter()
        .flat_map(|t| &t.events)
        .any(|tp| tp.filter.is_some());
    if filtered && sites.iter().any(|s| matches!(s, Site::Vm(_))) {
        observer.event(Event::Warning(
            "event filters are not applied inside guests (they name the host's devices): the event counts of configurations with a kernel are of every device in the guest".into(),
        ));
    }
}

/// The comparison the ended run asks for (none for an aborted run).
fn closing(
    plan: &RunSpec,
    store: &dyn Store,
    run_id: RunId,
    status: RunStatus,
    names: &[String],
) -> Option<Closing> {
    match (&plan.baseline, status) {
        (_, RunStatus::Aborted) | (Baseline::None, _) => None,
        (Baseline::Runs(b), _) => Some(Closing {
            baseline: b.clone(),
            gating: true,
        }),
        (Baseline::LastComparable, _) => last_comparable(store, run_id, &plan.suite, names)
            .ok()
            .flatten()
            .map(|id| Closing {
                baseline: id.to_string(),
                gating: false,
            }),
    }
}

#[cfg(test)]
mod tests;
