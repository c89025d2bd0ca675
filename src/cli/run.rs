//! `fsdelta run`: the main job. Sets up the targets (a scratch directory, or every configuration
//! of a config file), runs every test `-n` times repetition-major (for each repetition, every
//! configuration, every test, so that slow drift of the machine spreads over all of them), stores
//! every sample as it finishes, prints the summary, and compares with a baseline.
//!
//! Faults never lose what was measured: a failing sample is stored as failed with its error and
//! the run goes on; SIGINT/SIGTERM abandon the current sample, keep the finished ones, mark the
//! run aborted and undo every mount, loop device and scratch directory (exit 130).

use super::progress::Progress;
use super::{CompareArgs, CompareFormat, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, RunArgs, query};
use crate::compare::{
    self, stats,
    verdict::{self, Margins, MetricClass},
};
use crate::model::{Metric, RunStatus, SampleStatus, TargetFacts};
use crate::plan::{config, suite};
use crate::probe::clock::Nanos;
use crate::probe::system;
use crate::report;
use crate::store::{self, NewRun, NewSample, RunFilter, RunId, SampleRecord, Store};
use crate::target::{self, StateFile, Target, blockstat, env, scratch::ScratchDir};
use crate::workload::{self, CancelToken, Measurements, ProgressSink, RunContext, Workload};
use anyhow::{Context, Result};
use chrono::Utc;
use std::path::PathBuf;

/// Store a sample; when the store refuses it as measured (a non-finite metric, say), store it as
/// failed with the reason so that the run still shows what happened.
fn store_sample(
    store: &mut dyn Store,
    run: RunId,
    mut sample: NewSample,
) -> Result<(store::SampleId, NewSample)> {
    match store.add_sample(run, &sample) {
        Ok(id) => Ok((id, sample)),
        Err(e) if sample.status == SampleStatus::Ok => {
            sample.status = SampleStatus::Failed;
            sample.error = Some(format!("not stored as measured: {e}"));
            sample.metrics.clear();
            sample.histograms.clear();
            let id = store
                .add_sample(run, &sample)
                .context("storing a failed sample")?;
            Ok((id, sample))
        }
        Err(e) => Err(e).context("storing a sample"),
    }
}

/// Where the samples of this run happen.
enum Targets {
    /// A scratch directory (the default, or inside `--target`).
    Scratch(ScratchDir),
    /// The configurations of a config file.
    Matrix(Vec<Target>),
}

impl Targets {
    fn names(&self) -> Vec<String> {
        match self {
            Targets::Scratch(_) => vec!["scratch".into()],
            Targets::Matrix(ts) => ts.iter().map(|t| t.config().name.clone()).collect(),
        }
    }

    /// Undo everything (mounts, loop devices, images, scratch); the first error is returned.
    fn teardown(self) -> Result<()> {
        match self {
            Targets::Scratch(s) => {
                drop(s);
                Ok(())
            }
            Targets::Matrix(ts) => {
                let mut first = None;
                for t in ts {
                    let name = t.config().name.clone();
                    if let Err(e) = t.teardown()
                        && first.is_none()
                    {
                        first = Some(anyhow::Error::from(e).context(format!(
                            "tearing down config '{name}' (`fsdelta cleanup` retries)"
                        )));
                    }
                }
                first.map_or(Ok(()), Err)
            }
        }
    }
}

/// What one sample produced, before it is stored.
struct Outcome {
    facts: TargetFacts,
    result: Result<Measurements, String>,
    cancelled: bool,
    /// The workload cannot run on this target (the reason); nothing was measured or stored.
    skipped: Option<String>,
}

/// Run one test once on the i-th target.
#[allow(clippy::too_many_arguments)]
fn one_sample(
    targets: &mut Targets,
    i: usize,
    name: &str,
    w: &dyn Workload,
    cancel: &CancelToken,
    sink: &dyn ProgressSink,
    drop_caches: bool,
    mut profiler: Option<&mut super::profile::RunProfiler>,
) -> Outcome {
    let fail = |facts: TargetFacts, e: String| Outcome {
        facts,
        result: Err(e),
        cancelled: false,
        skipped: None,
    };
    let skip = |facts: TargetFacts, why: String| Outcome {
        facts,
        result: Err(why.clone()),
        cancelled: false,
        skipped: Some(why),
    };
    match targets {
        Targets::Scratch(scratch) => {
            let dir = match scratch.fresh_subdir(name) {
                Ok(d) => d,
                Err(e) => return fail(env::facts_for(scratch.path()), e.to_string()),
            };
            let mut facts = env::facts_for(&dir);
            facts.extra.insert("config".into(), "scratch".into());
            if let Some(why) = w.skip_reason(&dir) {
                let _ = scratch.discard_subdir(&dir);
                return skip(facts, why);
            }
            let dropped = drop_caches && blockstat::drop_caches().unwrap_or(false);
            facts
                .extra
                .insert("caches_dropped".into(), dropped.to_string());
            if let Some(p) = profiler.as_deref_mut() {
                p.start();
            }
            let counters = system::Snapshot::take();
            let peaks = system::PeakSampler::start();
            let r = w.run(&RunContext {
                dir: &dir,
                cancel,
                progress: sink,
            });
            if let Some(p) = profiler {
                p.stop();
            }
            let _ = scratch.discard_subdir(&dir);
            match r {
                Ok(mut m) => {
                    m.metrics.extend(counters.metrics_since());
                    m.metrics.extend(peaks.finish());
                    Outcome {
                        facts,
                        result: Ok(m),
                        cancelled: false,
                        skipped: None,
                    }
                }
                Err(workload::WorkloadError::Cancelled) => Outcome {
                    facts,
                    result: Err("cancelled".into()),
                    cancelled: true,
                    skipped: None,
                },
                Err(e) => fail(facts, e.to_string()),
            }
        }
        Targets::Matrix(ts) => {
            let t = &mut ts[i];
            let prepared = match t.prepare() {
                Ok(p) => p,
                Err(e) => return fail(TargetFacts::default(), e.to_string()),
            };
            let mut facts = prepared.facts;
            if let Some(why) = w.skip_reason(&prepared.dir) {
                return skip(facts, why);
            }
            if let Err(e) = t.before_sample() {
                return fail(facts, e.to_string());
            }
            let dropped = drop_caches && blockstat::drop_caches().unwrap_or(false);
            facts
                .extra
                .insert("caches_dropped".into(), dropped.to_string());
            let before = t.counters().ok().flatten();
            if let Some(p) = profiler.as_deref_mut() {
                p.start();
            }
            let counters = system::Snapshot::take();
            let peaks = system::PeakSampler::start();
            let r = w.run(&RunContext {
                dir: &prepared.dir,
                cancel,
                progress: sink,
            });
            if let Some(p) = profiler {
                p.stop();
            }
            let mut cpu = counters.metrics_since();
            cpu.extend(peaks.finish());
            let after_hook = t.after_sample();
            let mut m = match r {
                Ok(m) => m,
                Err(workload::WorkloadError::Cancelled) => {
                    return Outcome {
                        facts,
                        result: Err("cancelled".into()),
                        cancelled: true,
                        skipped: None,
                    };
                }
                Err(e) => return fail(facts, e.to_string()),
            };
            if let Err(e) = after_hook {
                return fail(facts, e.to_string());
            }
            m.metrics.extend(cpu);
            // Unmount (timed) before reading the device counters, so that writeback of what
            // the workload left dirty counts in the device's bytes written.
            match t.finish_sample() {
                Ok(timings) => m.metrics.extend(timings),
                Err(e) => return fail(facts, format!("after the workload: {e}")),
            }
            if let (Some(b), Ok(Some(a))) = (before, t.counters()) {
                let d = b.delta(&a);
                m.metrics.extend(d.metrics());
                if let Some(wa) = m
                    .logical_bytes_written
                    .and_then(|l| d.write_amplification(l))
                {
                    m.metrics.push(wa);
                }
            }
            Outcome {
                facts,
                result: Ok(m),
                cancelled: false,
                skipped: None,
            }
        }
    }
}

fn headline(metrics: &[Metric]) -> String {
    metrics
        .first()
        .map(|m| format!("{} {} {}", m.name, report::text::fmt_value(m.value), m.unit))
        .unwrap_or_default()
}

/// `fsdelta run`.
pub fn main(args: RunArgs) -> Result<i32> {
    if args.repeat == 0 {
        return Err(crate::plan::PlanError::NoRepetitions.into());
    }
    if args.config.is_some() && args.target.is_some() {
        anyhow::bail!(
            "--config and --target both name where to run; use one (a `dir` configuration in the config file runs in an existing directory)"
        );
    }
    let environment = env::environment();
    let ram_mib = environment.memory_bytes >> 20;
    let suite_path = std::path::Path::new(&args.suite);
    let suite = if args.suite.ends_with(".toml") || suite_path.is_file() {
        let text = std::fs::read_to_string(suite_path)
            .with_context(|| format!("reading suite file {}", suite_path.display()))?;
        crate::plan::suitefile::parse(&text, &args.suite)?
    } else {
        suite::builtin_scaled(&args.suite, args.scale, ram_mib)?
    };
    let tests = suite.select(&args.tests)?;
    // Margins: the command line wins; a suite file's [margins] replace the defaults.
    let mut args = args;
    {
        let d = super::MarginArgs::defaults();
        let m = &mut args.compare;
        let sm = suite.margins;
        if m.eps == d.eps {
            m.eps = sm.eps.unwrap_or(m.eps);
        }
        if m.delta == d.delta {
            m.delta = sm.delta.unwrap_or(m.delta);
        }
        if m.delta_tail == d.delta_tail {
            m.delta_tail = sm.delta_tail.unwrap_or(m.delta_tail);
        }
        if m.delta_max == d.delta_max {
            m.delta_max = sm.delta_max.unwrap_or(m.delta_max);
        }
    }
    // Build every workload before anything runs, so a bad option fails fast.
    let external_all = args.engine == super::EngineChoice::External;
    let workloads = tests
        .iter()
        .map(|t| {
            workload::build_test(&t.engine, t.external || external_all)
                .map(|(w, d)| (t, w, d))
                .map_err(|e| anyhow::anyhow!("test {}: {e}", t.name))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut profiler = super::profile::RunProfiler::new(args.profile)?;

    // Undo what a killed fsdelta left behind before creating anything new.
    match target::recover_leftovers() {
        Ok(report) if !report.is_empty() => {
            eprintln!("fsdelta: leftovers from an earlier run:\n{report}")
        }
        Ok(_) => {}
        Err(e) => eprintln!("fsdelta: warning: could not check for leftovers: {e}"),
    }

    let mut store = store::open(&args.db.location())?;
    let targets = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading config file {}", path.display()))?;
            let file = config::parse(&text, &path.display().to_string())?;
            Targets::Matrix(target::targets(&file, &StateFile::default_location())?)
        }
        None => {
            let parent: PathBuf = match &args.target {
                Some(p) => p.clone(),
                None => std::env::current_dir().context("reading the current directory")?,
            };
            Targets::Scratch(ScratchDir::create_in(&parent)?)
        }
    };
    let cancel = super::install_signals().context("installing signal handlers")?;
    let names = targets.names();

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
            "fsdelta run {run_id} ({label}): suite {}, {} test(s) x {} configuration(s) x {} repetition(s); results in {}",
            suite.name,
            workloads.len(),
            names.len(),
            args.repeat,
            args.db.location()
        );
    }

    let rows: Vec<(String, String)> = names
        .iter()
        .flat_map(|c| {
            workloads
                .iter()
                .map(move |(t, _, _)| (c.clone(), t.name.clone()))
        })
        .collect();
    let progress = Progress::new(args.quiet, &rows, args.repeat);
    let mut targets = targets;
    let mut stored: Vec<NewSample> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    let mut aborted = false;
    // Everything that can fail after the run was created goes through this closure, so that the
    // run is never left `running` behind an error.
    let baseline_series = match (&args.baseline, args.until_confident) {
        (Some(b), true) => baseline_values(store.as_ref(), b)?,
        _ => Vec::new(),
    };
    let margins = args.compare.margins();
    let mut body = || -> Result<()> {
        // One sample of one test on the i-th configuration: None when the run was interrupted,
        // Some(None) when the test was skipped, else the stored sample.
        let mut one = |i: usize,
                       config_name: &String,
                       test: &suite::TestSpec,
                       w: &dyn Workload,
                       desc: &str,
                       rep: u32,
                       of: u32|
         -> Result<Option<Option<NewSample>>> {
            if cancel.is_cancelled() {
                return Ok(None);
            }
            let what = format!("{config_name}/{} rep {rep}/{of}", test.name);
            progress.start(config_name, &test.name, rep, of);
            let started_at = Utc::now();
            let t0 = Nanos::now();
            let sink = progress.sink(config_name, &test.name);
            let out = one_sample(
                &mut targets,
                i,
                &format!("{}-{rep}", test.name),
                w,
                &cancel,
                &sink,
                !args.no_drop_caches,
                profiler.as_mut().filter(|p| p.wants(rep)),
            );
            if out.cancelled {
                return Ok(None);
            }
            if let Some(why) = out.skipped {
                progress.done(
                    config_name,
                    &test.name,
                    &format!("{what}: SKIPPED: {why}"),
                    "skipped",
                );
                skipped.push(format!("SKIPPED {} ({config_name}): {why}", test.name));
                return Ok(Some(None));
            }
            let duration_s = t0.elapsed().as_secs_f64();
            let (status, error, m) = match out.result {
                Ok(m) => (SampleStatus::Ok, None, m),
                Err(e) => (SampleStatus::Failed, Some(e), Measurements::default()),
            };
            let (sample_id, sample) = store_sample(
                store.as_mut(),
                run_id,
                NewSample {
                    config: config_name.clone(),
                    test: test.name.clone(),
                    repetition: rep,
                    facts: out.facts,
                    status,
                    error,
                    started_at,
                    duration_s,
                    workload: desc.to_string(),
                    metrics: m.metrics,
                    histograms: m.histograms,
                },
            )?;
            if let Some(p) = profiler.as_mut() {
                p.store(store.as_mut(), sample_id)?;
            }
            let (line, head) = match sample.status {
                SampleStatus::Ok => {
                    let head = headline(&sample.metrics);
                    (format!("{what}: {duration_s:.1} s, {head}"), head)
                }
                SampleStatus::Failed => (
                    format!("{what}: FAILED: {}", sample.error.as_deref().unwrap_or("")),
                    "FAILED (see the end)".to_string(),
                ),
            };
            progress.done(config_name, &test.name, &line, &head);
            Ok(Some(Some(sample)))
        };
        for rep in 1..=args.repeat {
            for (i, config_name) in names.iter().enumerate() {
                for (test, w, d) in &workloads {
                    match one(i, config_name, test, w.as_ref(), d, rep, args.repeat)? {
                        None => {
                            aborted = true;
                            return Ok(());
                        }
                        Some(s) => stored.extend(s),
                    }
                }
            }
        }
        if !args.until_confident {
            return Ok(());
        }
        // --until-confident: more repetitions of the tests whose headline metric is not yet
        // resolved, up to --max-repeat, interleaved as above.
        for rep in args.repeat + 1..=args.max_repeat {
            let mut pending = Vec::new();
            for (i, config_name) in names.iter().enumerate() {
                for (test, w, d) in &workloads {
                    if !confident(&stored, &baseline_series, config_name, &test.name, &margins) {
                        pending.push((i, config_name, *test, w, d));
                    }
                }
            }
            if pending.is_empty() {
                break;
            }
            for (i, config_name, test, w, d) in pending {
                match one(i, config_name, test, w.as_ref(), d, rep, args.max_repeat)? {
                    None => {
                        aborted = true;
                        return Ok(());
                    }
                    Some(s) => stored.extend(s),
                }
            }
        }
        Ok(())
    };
    let body_result = body();
    progress.finish();
    let teardown = targets.teardown();
    if let Err(e) = body_result {
        let _ = store.finish_run(run_id, RunStatus::Failed, Utc::now());
        return Err(e.context(format!(
            "run {run_id} stopped; its finished samples are kept"
        )));
    }

    let any_failed = stored.iter().any(|s| s.status == SampleStatus::Failed);
    let status = if aborted {
        RunStatus::Aborted
    } else if any_failed || teardown.is_err() {
        RunStatus::Failed
    } else {
        RunStatus::Complete
    };
    store.finish_run(run_id, status, Utc::now())?;
    if let Err(e) = &teardown {
        eprintln!("fsdelta: {e:#}");
    }

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
    skipped.dedup();
    if !skipped.is_empty() {
        out.push('\n');
        for s in &skipped {
            out.push_str(s);
            out.push('\n');
        }
    }
    print!("{out}");

    let failed_n = records
        .iter()
        .filter(|r| r.sample.status == SampleStatus::Failed)
        .count();
    match status {
        RunStatus::Aborted => {
            eprintln!(
                "fsdelta: run {run_id} interrupted; {} finished sample(s) kept, run marked aborted",
                records.len()
            );
            return Ok(EXIT_INTERRUPTED);
        }
        RunStatus::Failed => {
            eprintln!(
                "fsdelta: run {run_id} finished with {failed_n} failed sample(s) of {}; see above, or `fsdelta show {run_id}`",
                records.len()
            );
        }
        _ => {
            if !args.quiet {
                eprintln!("fsdelta: run {run_id} complete; `fsdelta show {run_id}` shows it again");
            }
        }
    }
    let base_code = if status == RunStatus::Failed {
        EXIT_ERROR
    } else {
        EXIT_OK
    };
    let compare_code = compare_after_run(store.as_ref(), run_id, &suite.name, &names, &args)?;
    // An error outranks a regression: exit 2 when samples failed, else what the comparison says.
    Ok(if base_code != EXIT_OK {
        base_code
    } else {
        compare_code
    })
}

/// Every baseline value of every (configuration, test, metric), for `--until-confident`.
fn baseline_values(store: &dyn Store, sel: &str) -> Result<Vec<compare::Series>> {
    let runs = store.select(&sel.parse::<store::Selector>()?)?;
    let mut samples = Vec::new();
    for r in runs {
        samples.extend(store.samples(r.id)?);
    }
    let refs: Vec<&SampleRecord> = samples.iter().collect();
    Ok(compare::series(&refs))
}

/// Whether the headline metric (the workload's first) of `test` on `config` is resolved: with a
/// baseline, its verdict is regressed, improved or unchanged; without, the 95 % interval of its
/// mean (on logs) lies inside the metric class's unchanged band.
fn confident(
    stored: &[NewSample],
    baseline: &[compare::Series],
    config: &str,
    test: &str,
    margins: &Margins,
) -> bool {
    let mine: Vec<&NewSample> = stored
        .iter()
        .filter(|s| s.config == config && s.test == test && s.status == SampleStatus::Ok)
        .collect();
    let Some(head) = mine.first().and_then(|s| s.metrics.first()) else {
        // Nothing measured (failed or skipped): more repetitions will not help.
        return true;
    };
    let values: Vec<f64> = mine
        .iter()
        .filter_map(|s| s.metrics.iter().find(|m| m.name == head.name))
        .map(|m| m.value)
        .collect();
    let class = MetricClass::of(head.kind);
    if let Some(b) = baseline
        .iter()
        .find(|b| b.key.config == config && b.key.test == test && b.key.metric == head.name)
    {
        return verdict::compare(&b.values, &values, head.direction, class, margins)
            .verdict
            .is_resolved();
    }
    interval_inside_band(&values, margins.delta(class))
}

/// Whether the 95 % t interval of the mean of ln(values) lies within +-ln(1 + delta).
fn interval_inside_band(values: &[f64], delta: f64) -> bool {
    if values.len() < 2 || values.iter().any(|v| *v <= 0.0) {
        return values.len() >= 2;
    }
    let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let n = logs.len() as f64;
    let sd = stats::std_dev(&logs).unwrap_or(0.0);
    let half = stats::t_quantile(0.975, n - 1.0) * sd / n.sqrt();
    half <= delta.ln_1p()
}

/// With `--baseline SEL`: compare and return compare's exit code. Without it: compare with the
/// latest earlier complete run of the same suite and configurations, if any, for information
/// only (exit code 0).
fn compare_after_run(
    store: &dyn Store,
    run_id: RunId,
    suite: &str,
    configs: &[String],
    args: &RunArgs,
) -> Result<i32> {
    let opts = CompareArgs {
        format: CompareFormat::Text,
        tests: args.tests.clone(),
        configs: vec![],
        metrics: vec![],
        all: false,
        bisect: false,
        margins: args.compare.clone(),
    };
    let (base, gating) = match &args.baseline {
        Some(b) => (b.clone(), true),
        None => {
            let earlier = store.runs(&RunFilter::default())?.into_iter().find(|r| {
                r.id < run_id && r.status == RunStatus::Complete && r.suite == suite && {
                    let samples = store.samples(r.id).unwrap_or_default();
                    let mut theirs: Vec<&str> =
                        samples.iter().map(|s| s.sample.config.as_str()).collect();
                    theirs.sort();
                    theirs.dedup();
                    let mut ours: Vec<&str> = configs.iter().map(String::as_str).collect();
                    ours.sort();
                    theirs == ours
                }
            });
            match earlier {
                Some(r) => (r.id.to_string(), false),
                None => return Ok(EXIT_OK),
            }
        }
    };
    let result = query::judge(store, &base, &run_id.to_string(), &opts);
    match result {
        Ok((bd, cd, rows)) => {
            println!();
            if !gating {
                println!(
                    "compared with the latest earlier run of this suite (exit code unaffected; --baseline SEL gates on it):"
                );
            }
            print!("{}", query::render_comparison(&bd, &cd, &rows, &opts)?);
            Ok(if gating {
                query::exit_code(&rows, false)
            } else {
                EXIT_OK
            })
        }
        Err(e) if gating => Err(e.context(format!("comparing with --baseline {base}"))),
        Err(_) => Ok(EXIT_OK),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tight_series_is_inside_the_band_and_a_noisy_one_is_not() {
        assert!(interval_inside_band(&[100.0, 101.0, 99.5, 100.2], 0.05));
        assert!(!interval_inside_band(&[100.0, 130.0, 80.0], 0.05));
        assert!(!interval_inside_band(&[100.0], 0.05));
    }
}
