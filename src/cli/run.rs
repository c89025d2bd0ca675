//! `fsdelta run`: the main job. Sets up the scratch target, runs every test of the suite `-n`
//! times (repetition-major, so slow drift of the machine spreads over all tests), stores every
//! sample as it finishes, and prints the summary.
//!
//! Faults never lose what was measured: a failing sample is stored as failed with its error and
//! the run goes on; SIGINT/SIGTERM abandon the current sample, keep the finished ones, mark the
//! run aborted and remove the scratch directory (exit 130).

use super::{EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, RunArgs};
use crate::compare;
use crate::model::{RunStatus, SampleStatus};
use crate::plan::suite;
use crate::probe::clock::Nanos;
use crate::probe::system;
use crate::report;
use crate::store::{self, NewRun, NewSample, RunId, SampleRecord, Store};
use crate::target::{env, scratch::ScratchDir};
use crate::workload::{self, CancelToken, ProgressSink, RunContext, WorkloadError};
use anyhow::{Context, Result};
use chrono::Utc;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Install SIGINT/SIGTERM handlers that set a flag; a second signal exits at once.
fn install_signals() -> Result<CancelToken> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, EXIT_INTERRUPTED, flag.clone())
            .context("installing signal handlers")?;
        signal_hook::flag::register(sig, flag.clone()).context("installing signal handlers")?;
    }
    Ok(CancelToken::from_flag(flag))
}

/// Progress output: a bar on a terminal, a line per sample otherwise, nothing with --quiet.
enum Progress {
    Bar(ProgressBar),
    Lines,
    Quiet,
}

struct BarSink<'a>(&'a ProgressBar);

impl ProgressSink for BarSink<'_> {
    fn phase(&self, what: &str) {
        self.0.set_message(what.to_string());
    }
}

impl Progress {
    fn new(quiet: bool, total: u64) -> Progress {
        if quiet {
            Progress::Quiet
        } else if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:.bold} [{bar:20}] {pos}/{len} {elapsed_precise} {msg}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
            Progress::Bar(bar)
        } else {
            Progress::Lines
        }
    }

    fn start(&self, test: &str, rep: u32, reps: u32) {
        if let Progress::Bar(b) = self {
            b.set_prefix(format!("{test} rep {rep}/{reps}"));
            b.set_message("");
        }
    }

    fn done(&self, line: &str) {
        match self {
            Progress::Bar(b) => {
                b.println(line);
                b.inc(1);
            }
            Progress::Lines => eprintln!("{line}"),
            Progress::Quiet => {}
        }
    }

    fn finish(&self) {
        if let Progress::Bar(b) = self {
            b.finish_and_clear();
        }
    }
}

/// Store a sample; when the store refuses it as measured (a non-finite metric, say), store it as
/// failed with the reason so that the run still shows what happened.
fn store_sample(store: &mut dyn Store, run: RunId, mut sample: NewSample) -> Result<NewSample> {
    match store.add_sample(run, &sample) {
        Ok(_) => Ok(sample),
        Err(e) if sample.status == SampleStatus::Ok => {
            sample.status = SampleStatus::Failed;
            sample.error = Some(format!("not stored as measured: {e}"));
            sample.metrics.clear();
            sample.histograms.clear();
            store
                .add_sample(run, &sample)
                .context("storing a failed sample")?;
            Ok(sample)
        }
        Err(e) => Err(e).context("storing a sample"),
    }
}

/// `fsdelta run`.
pub fn main(args: RunArgs) -> Result<i32> {
    if args.repeat == 0 {
        return Err(crate::plan::PlanError::NoRepetitions.into());
    }
    let suite = suite::builtin(&args.suite)?;
    let tests = suite.select(&args.tests)?;
    // Build every workload before anything runs, so a bad option fails fast.
    let workloads = tests
        .iter()
        .map(|t| {
            workload::build(&t.engine)
                .map(|w| (t, w))
                .map_err(|e| anyhow::anyhow!("test {}: {e}", t.name))
        })
        .collect::<Result<Vec<_>>>()?;

    let parent = match &args.target {
        Some(p) => p.clone(),
        None => std::env::current_dir().context("reading the current directory")?,
    };
    let mut store = store::open(&args.db.location())?;
    let scratch = ScratchDir::create_in(&parent)?;
    let cancel = install_signals()?;

    let environment = env::environment();
    let label = args
        .label
        .clone()
        .unwrap_or_else(|| environment.kernel_release.clone());
    let run_id = store.create_run(&NewRun {
        label: label.clone(),
        suite: suite.name.clone(),
        started_at: Utc::now(),
        fsdelta_version: env!("CARGO_PKG_VERSION").to_string(),
        environment,
    })?;
    if !args.quiet {
        eprintln!(
            "fsdelta run {run_id} ({label}): suite {}, {} test(s) x {} repetition(s) in {}; results in {}",
            suite.name,
            workloads.len(),
            args.repeat,
            scratch.path().display(),
            args.db.location()
        );
    }

    let progress = Progress::new(args.quiet, workloads.len() as u64 * args.repeat as u64);
    let mut stored: Vec<NewSample> = Vec::new();
    let mut aborted = false;
    // Everything that can fail after the run was created goes through this closure, so that the
    // run is never left `running` behind an error.
    let mut body = || -> Result<()> {
        'reps: for rep in 1..=args.repeat {
            for (test, w) in &workloads {
                if cancel.is_cancelled() {
                    aborted = true;
                    break 'reps;
                }
                progress.start(&test.name, rep, args.repeat);
                let started_at = Utc::now();
                let t0 = Nanos::now();
                let dir = match scratch.fresh_subdir(&format!("{}-{}", test.name, rep)) {
                    Ok(d) => d,
                    Err(e) => {
                        let sample = store_sample(
                            store.as_mut(),
                            run_id,
                            NewSample {
                                config: "scratch".into(),
                                test: test.name.clone(),
                                repetition: rep,
                                facts: env::facts_for(scratch.path()),
                                status: SampleStatus::Failed,
                                error: Some(e.to_string()),
                                started_at,
                                duration_s: t0.elapsed().as_secs_f64(),
                                workload: workload::describe(&test.engine),
                                metrics: vec![],
                                histograms: vec![],
                            },
                        )?;
                        progress.done(&format!(
                            "{} rep {}/{}: FAILED: {e}",
                            test.name, rep, args.repeat
                        ));
                        stored.push(sample);
                        continue;
                    }
                };
                let facts = env::facts_for(&dir);
                let sink_bar;
                let sink: &dyn ProgressSink = match &progress {
                    Progress::Bar(b) => {
                        sink_bar = BarSink(b);
                        &sink_bar
                    }
                    _ => &workload::NoProgress,
                };
                let counters = system::Snapshot::take();
                let outcome = w.run(&RunContext {
                    dir: &dir,
                    cancel: &cancel,
                    progress: sink,
                });
                let duration_s = t0.elapsed().as_secs_f64();
                let outcome = outcome.map(|mut m| {
                    m.metrics.extend(counters.metrics_since());
                    m
                });
                let _ = scratch.discard_subdir(&dir);
                let (status, error, m) = match outcome {
                    Ok(m) => (SampleStatus::Ok, None, m),
                    Err(WorkloadError::Cancelled) => {
                        aborted = true;
                        break 'reps;
                    }
                    Err(e) => (
                        SampleStatus::Failed,
                        Some(e.to_string()),
                        workload::Measurements::default(),
                    ),
                };
                let sample = store_sample(
                    store.as_mut(),
                    run_id,
                    NewSample {
                        config: "scratch".into(),
                        test: test.name.clone(),
                        repetition: rep,
                        facts,
                        status,
                        error,
                        started_at,
                        duration_s,
                        workload: workload::describe(&test.engine),
                        metrics: m.metrics,
                        histograms: m.histograms,
                    },
                )?;
                let line = match (&sample.status, &sample.error) {
                    (SampleStatus::Ok, _) => {
                        let headline = sample
                            .metrics
                            .first()
                            .map(|m| {
                                format!(
                                    "{} {} {}",
                                    m.name,
                                    report::text::fmt_value(m.value),
                                    m.unit
                                )
                            })
                            .unwrap_or_default();
                        format!(
                            "{} rep {}/{}: {:.1} s, {}",
                            test.name, rep, args.repeat, duration_s, headline
                        )
                    }
                    (_, e) => format!(
                        "{} rep {}/{}: FAILED: {}",
                        test.name,
                        rep,
                        args.repeat,
                        e.as_deref().unwrap_or("")
                    ),
                };
                progress.done(&line);
                stored.push(sample);
            }
        }
        Ok(())
    };
    let body_result = body();
    progress.finish();
    if let Err(e) = body_result {
        let _ = store.finish_run(run_id, RunStatus::Failed, Utc::now());
        return Err(e.context(format!(
            "run {run_id} stopped; its finished samples are kept"
        )));
    }
    drop(scratch);

    let any_failed = stored.iter().any(|s| s.status == SampleStatus::Failed);
    let status = if aborted {
        RunStatus::Aborted
    } else if any_failed {
        RunStatus::Failed
    } else {
        RunStatus::Complete
    };
    store.finish_run(run_id, status, Utc::now())?;

    let records: Vec<SampleRecord> = stored
        .into_iter()
        .map(|sample| SampleRecord {
            id: 0,
            run_id,
            sample,
        })
        .collect();
    let refs: Vec<&SampleRecord> = records.iter().collect();
    let mut out = report::text::run_summary(&compare::series(&refs));
    let failed = report::text::failures(&refs);
    if !failed.is_empty() {
        out.push('\n');
        out.push_str(&failed);
    }
    print!("{out}");
    match status {
        RunStatus::Aborted => {
            eprintln!(
                "fsdelta: run {run_id} interrupted; {} finished sample(s) kept, run marked aborted",
                records.len()
            );
            Ok(EXIT_INTERRUPTED)
        }
        RunStatus::Failed => {
            let n = records
                .iter()
                .filter(|r| r.sample.status == SampleStatus::Failed)
                .count();
            eprintln!(
                "fsdelta: run {run_id} finished with {n} failed sample(s) of {}; see above, or `fsdelta show {run_id}`",
                records.len()
            );
            Ok(EXIT_ERROR)
        }
        _ => {
            if !args.quiet {
                eprintln!("fsdelta: run {run_id} complete; `fsdelta show {run_id}` shows it again");
            }
            Ok(EXIT_OK)
        }
    }
}
