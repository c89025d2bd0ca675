//! `fsdelta calibrate`: how noisy is this machine, and so what can it detect? Runs the selected
//! suite `--runs` times (default 3) with the same setup, one after the other (each stored as a
//! run labelled `calibrate`, so the machine's noise keeps a history: `fsdelta history
//! --label-glob calibrate ...`), then prints, per headline metric, its noise (the pooled
//! within-run CV of the first and last runs), its drift between runs (`compare::power::
//! BetweenRuns` over the machine's calibration runs, which `compare` counts), the smallest
//! change the verdict rules would detect at 80 % power comparing two runs of 3, 5, 10 and 20
//! repetitions (`compare::power`), and whether the A/A comparison of the last run against the
//! first flagged anything (it should not).
//!
//! It must never judge anything itself: the numbers come from `compare::power` and
//! `compare::verdict`; and it runs through `fsdelta run`'s own path, so a calibration measures
//! exactly what a run measures.

use super::{Cli, Command, DbArg, EXIT_INTERRUPTED, EXIT_OK};
use crate::compare::power::{self, BetweenRuns, Noise};
use crate::compare::verdict::{self, Margins, MetricClass, Verdict};
use crate::compare::{Drifts, SeriesKey};
use crate::model::{Direction, RunId, SampleRecord, SampleStatus};
use crate::store::RunFilter;
use anyhow::{Context, Result, bail};
use clap::{Args, Parser};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The most runs one `calibrate` makes (`--runs`): what `compare` reads of a machine's
/// calibrations ([`crate::read::calibration::MAX_RUNS`]).
pub const MAX_RUNS: u32 = crate::read::calibration::MAX_RUNS as u32;

/// The label of calibration runs.
pub const LABEL: &str = crate::read::calibration::LABEL;

/// Options of `fsdelta calibrate`: `run`'s selection options.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Suite: a built-in name (quick, fsperf) or a suite file.
    #[arg(long, default_value = "quick")]
    pub suite: String,
    /// Scale the built-in suite's sizes.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Run in a scratch directory inside DIR.
    #[arg(long, value_name = "DIR")]
    pub target: Option<PathBuf>,
    /// Only these tests (repeatable).
    #[arg(long = "test", value_name = "NAME")]
    pub tests: Vec<String>,
    /// Repetitions of each test in each run.
    #[arg(short = 'n', long = "repeat", default_value_t = 5)]
    pub repeat: u32,
    /// Runs of the selection, one after the other (2 to 20). Each consecutive pair sharpens the
    /// estimate of the drift between runs that `compare` counts.
    #[arg(long, default_value_t = 3, value_name = "K")]
    pub runs: u32,
    /// Configurations to run on (a config file, as `run --config`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Keep the page cache between samples.
    #[arg(long)]
    pub no_drop_caches: bool,
    /// Only the table, not the runs' progress.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub db: DbArg,
}

/// One headline metric's noise and what it lets this machine detect.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// Configuration.
    pub config: String,
    /// Test.
    pub test: String,
    /// Metric.
    pub metric: String,
    /// Its band.
    pub class: MetricClass,
    /// Pooled within-run noise, if the values allow one.
    pub noise: Option<Noise>,
    /// How far its runs' means move between runs (all of the machine's calibrations of one
    /// setup: [`power::drift_table`]), if estimated.
    pub drift: Option<BetweenRuns>,
    /// Detectable change at 3, 5, 10 and 20 runs a side, comparing two runs (the drift counted).
    pub detectable: Vec<(usize, Option<f64>)>,
    /// The A/A verdict of run B against run A.
    pub aa: Verdict,
}

/// The rows of a calibration from the samples of its two runs: every headline metric (all
/// judged metrics of a test that declares none), family = their number.
pub fn rows(
    a: &[SampleRecord],
    b: &[SampleRecord],
    drifts: &Drifts,
    margins: &Margins,
) -> Vec<Row> {
    type Key = (String, String, String);
    let mut series: BTreeMap<Key, (Direction, MetricClass, Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let mut declared: std::collections::BTreeSet<(String, String)> = Default::default();
    for s in a.iter().chain(b) {
        if s.sample.metrics.iter().any(|m| m.headline) {
            declared.insert((s.sample.config.clone(), s.sample.test.clone()));
        }
    }
    for (side, samples) in [(0, a), (1, b)] {
        for s in samples
            .iter()
            .filter(|s| s.sample.status == SampleStatus::Ok)
        {
            let group = (s.sample.config.clone(), s.sample.test.clone());
            for m in &s.sample.metrics {
                if m.direction == Direction::Neutral || (!m.headline && declared.contains(&group)) {
                    continue;
                }
                let e = series
                    .entry((group.0.clone(), group.1.clone(), m.name.clone()))
                    .or_insert_with(|| (m.direction, MetricClass::of(m.kind), vec![], vec![]));
                if side == 0 { &mut e.2 } else { &mut e.3 }.push(m.value);
            }
        }
    }
    let family = series.len();
    let mut out: Vec<Row> = Vec::with_capacity(family);
    let mut cs: Vec<verdict::Comparison> = Vec::with_capacity(family);
    for ((config, test, metric), (dir, class, va, vb)) in &series {
        let noise = Noise::pooled(&[va.as_slice(), vb.as_slice()]);
        let drift = drifts
            .get(&SeriesKey {
                config: config.clone(),
                test: test.clone(),
                metric: metric.clone(),
            })
            .copied();
        let detectable = match noise {
            Some(n) => power::table_between(n, drift, *class, family, margins),
            None => power::RUNS_SHOWN.iter().map(|&r| (r, None)).collect(),
        };
        cs.push(verdict::compare(va, vb, *dir, *class, margins));
        out.push(Row {
            config: config.clone(),
            test: test.clone(),
            metric: metric.clone(),
            class: *class,
            noise,
            drift,
            detectable,
            aa: Verdict::Inconclusive,
        });
    }
    {
        let mut items: Vec<verdict::Judging<'_>> = cs
            .iter_mut()
            .zip(&out)
            .map(|(c, r)| verdict::Judging {
                group: (r.config.as_str(), r.test.as_str()),
                metric: r.metric.as_str(),
                headline: true,
                comparison: c,
            })
            .collect();
        verdict::judge_family(&mut items, verdict::Gate::Headline);
    }
    for (r, c) in out.iter_mut().zip(&cs) {
        r.aa = c.verdict;
    }
    out
}

/// The table `calibrate` prints.
pub fn render(rows: &[Row], host: &str, runs: &[RunId], repeat: u32) -> String {
    let which = match runs {
        [a, b] => format!("runs {a} and {b}"),
        [a, .., b] => format!("runs {a} to {b}"),
        _ => format!("runs {runs:?}"),
    };
    let mut out = format!(
        "Noise of {host} ({which}, {repeat} repetitions each, labelled {LABEL}); the smallest change the verdict rules detect at 80 % power comparing two runs, judged as one family of {} headline metrics:\n\n",
        rows.len()
    );
    let w = |f: fn(&Row) -> &str| rows.iter().map(|r| f(r).len()).max().unwrap_or(0);
    let (wc, wt, wm) = (
        w(|r| &r.config).max(6),
        w(|r| &r.test).max(4),
        w(|r| &r.metric).max(6),
    );
    out.push_str(&format!(
        "{:<wc$}  {:<wt$}  {:<wm$}  {:>7}  {:>7}  {:>9} {:>9} {:>9} {:>9}  A/A\n",
        "config", "test", "metric", "CV", "drift", "3 a side", "5 a side", "10 a side", "20 a side"
    ));
    for r in rows {
        let cv = r
            .noise
            .map(|n| format!("{:.1} %", 100.0 * n.cv()))
            .unwrap_or_else(|| "-".into());
        let drift = r
            .drift
            .map(|d| format!("{:.1} %", d.pct()))
            .unwrap_or_else(|| "-".into());
        let d: Vec<String> = r
            .detectable
            .iter()
            .map(|(_, e)| power::fmt_effect(*e))
            .collect();
        out.push_str(&format!(
            "{:<wc$}  {:<wt$}  {:<wm$}  {:>7}  {:>7}  {:>9} {:>9} {:>9} {:>9}  {}\n",
            r.config,
            r.test,
            r.metric,
            cv,
            drift,
            d.first().map(String::as_str).unwrap_or("-"),
            d.get(1).map(String::as_str).unwrap_or("-"),
            d.get(2).map(String::as_str).unwrap_or("-"),
            d.get(3).map(String::as_str).unwrap_or("-"),
            r.aa
        ));
    }
    let pairs = rows
        .iter()
        .filter_map(|r| r.drift.map(|d| d.pairs))
        .max()
        .unwrap_or(0);
    out.push_str(&format!(
        "\nCV: the noise within a run. drift: how far a run's mean moves between runs beyond \
         that (from {pairs} pair{} of consecutive calibration runs of this setup on {host}); \
         `compare` counts it when the sides are different runs, so no number of repetitions \
         detects much less than 4 times it: interleave the sides in one run \
         (`run --order rotate`) to compare below it{}.\n",
        if pairs == 1 { "" } else { "s" },
        if pairs < 5 {
            "; with fewer than 5 pairs it is a rough estimate, and the detectable changes above \
             are large for it (`calibrate --runs K` adds K - 1 pairs)"
        } else {
            ""
        }
    ));
    let flagged: Vec<String> = rows
        .iter()
        .filter(|r| matches!(r.aa, Verdict::Regressed | Verdict::Improved))
        .map(|r| format!("{} {} ({})", r.test, r.metric, r.aa))
        .collect();
    if flagged.is_empty() {
        out.push_str("\nA/A: no headline metric flagged between the two runs, as it should be.\n");
    } else {
        out.push_str(&format!(
            "\nA/A: {} flagged between two runs of the same thing: {}. Results here move between runs more than within one; more repetitions will not fix that (see `fsdelta doctor`, and docs/noise.md).\n",
            flagged.len(),
            flagged.join(", ")
        ));
    }
    out
}

/// The newest calibration of a machine, for `compare` (the detectable change beside an
/// unchanged or inconclusive headline) and `run --until-confident` (repetitions planned from
/// it).
#[derive(Clone, Debug)]
pub struct Calibration {
    /// Its two runs.
    pub runs: (RunId, RunId),
    /// Its rows, by (configuration, test, metric).
    pub rows: BTreeMap<(String, String, String), Row>,
}

impl Calibration {
    /// The newest calibration stored for `host` (its two newest runs labelled [`LABEL`] made
    /// there), or `None` when it has fewer than two; `drifts` is the machine's drift between
    /// runs ([`drifts_of`], which a comparison has already read).
    pub fn newest(
        store: &dyn crate::store::Store,
        host: &str,
        drifts: &Drifts,
    ) -> Result<Option<Calibration>> {
        let mut runs: Vec<RunId> = store
            .runs(&RunFilter {
                label: Some(LABEL.into()),
                limit: None,
            })?
            .into_iter()
            .filter(|r| r.environment.host == host)
            .map(|r| r.id)
            .take(2)
            .collect();
        if runs.len() < 2 {
            return Ok(None);
        }
        runs.reverse();
        let (a, b) = (store.samples(runs[0])?, store.samples(runs[1])?);
        let rows = rows(&a, &b, drifts, &Margins::default())
            .into_iter()
            .map(|r| ((r.config.clone(), r.test.clone(), r.metric.clone()), r))
            .collect();
        Ok(Some(Calibration {
            runs: (runs[0], runs[1]),
            rows,
        }))
    }

    /// "with 5 runs a side this machine detects changes of 7.5 % or more here" for a metric
    /// compared with `runs` runs a side in a family of `family` headline metrics, its drift
    /// between runs counted when `between_runs` (the sides are different runs); `None` when
    /// the calibration did not measure it.
    #[allow(clippy::too_many_arguments)]
    pub fn phrase(
        &self,
        config: &str,
        test: &str,
        metric: &str,
        runs: usize,
        family: usize,
        between_runs: bool,
        margins: &Margins,
    ) -> Option<String> {
        let row = self
            .rows
            .get(&(config.to_string(), test.to_string(), metric.to_string()))?;
        let drift = row.drift.filter(|_| between_runs);
        let e =
            power::detectable_effect_between(row.noise?, drift, runs, row.class, family, margins);
        Some(power::detects_phrase(runs, e))
    }

    /// The runs a side `run --until-confident` should plan: the most any calibrated headline
    /// metric needs to resolve its unchanged band (`margins`), at most `max`; `None` when no
    /// metric was calibrated.
    pub fn plan_runs(&self, margins: &Margins, max: usize) -> Option<usize> {
        let family = self.rows.len();
        self.rows
            .values()
            .filter_map(|r| {
                let noise = r.noise?;
                let delta = margins.delta(r.class);
                // Where the drift alone puts the band out of reach, repetitions beyond what
                // the noise within a run needs buy nothing: plan those.
                let need = power::runs_for_between(noise, r.drift, delta, r.class, family, margins)
                    .or_else(|| power::runs_for(noise, delta, r.class, family, margins))
                    .unwrap_or(max);
                Some(need.min(max))
            })
            .max()
    }
}

/// Beside each unchanged or inconclusive headline metric of a comparison, what this machine
/// detects there with the comparison's runs a side (the fewer of the two sides), from the
/// newest calibration of `host`: set as the verdict's `detects` ("with 5 runs a side this
/// machine detects changes of 7.5 % or more here"), which the renderers print beside the
/// verdict. Two configurations side by side ("A vs B") take the current one's (B's)
/// calibration. Nothing when `host` has no calibration or the store cannot say. `drifts` is
/// the host's drift the comparison counted (its criteria's). Returns the calibration's runs
/// when it annotated a row.
pub fn annotate(
    store: &dyn crate::store::Store,
    rows: &mut [crate::compare::judge::Judged],
    host: &str,
    drifts: &Drifts,
    margins: &Margins,
) -> Option<(RunId, RunId)> {
    let cal = Calibration::newest(store, host, drifts).ok()??;
    let family = rows
        .iter()
        .filter(|r| r.comparison.role == verdict::Role::Headline)
        .count();
    let mut any = false;
    for r in rows.iter_mut().filter(|r| {
        r.comparison.role == verdict::Role::Headline
            && matches!(
                r.comparison.verdict,
                Verdict::Unchanged | Verdict::Inconclusive
            )
    }) {
        let n = r.baseline_values.len().min(r.current_values.len());
        let config = match r.key.config.split_once(" vs ") {
            Some((_, cur)) => cur,
            None => r.key.config.as_str(),
        };
        let between = r.comparison.drift_pct.is_some();
        r.comparison.detects = cal.phrase(
            config,
            &r.key.test,
            &r.key.metric,
            n,
            family,
            between,
            margins,
        );
        any |= r.comparison.detects.is_some();
    }
    any.then_some(cal.runs)
}

/// The drift between runs that `host`'s calibration runs measured, per metric
/// ([`power::drift_table`] of [`crate::read::calibration::chains`]); empty without any.
pub fn drifts_of(store: &dyn crate::store::Store, host: &str) -> Result<Drifts> {
    Ok(power::drift_table(&crate::read::calibration::chains(
        store, host,
    )?))
}

/// The repetitions `run --until-confident` should start with on `host`: what its newest
/// calibration plans ([`Calibration::plan_runs`]), at most `max`; `None` without a calibration
/// (or a store to read it from).
pub fn planned_repeat(
    location: &str,
    host: &str,
    margins: &Margins,
    max: u32,
) -> Option<(u32, (RunId, RunId))> {
    let store = crate::store::open_read_only(location).ok()?;
    let drifts = drifts_of(store.as_ref(), host).ok()?;
    let cal = Calibration::newest(store.as_ref(), host, &drifts).ok()??;
    let n = cal.plan_runs(margins, max as usize)?;
    Some((u32::try_from(n).ok()?, cal.runs))
}

/// `run`'s arguments for one of the two calibration runs.
fn run_args(args: &CalibrateArgs) -> Result<super::RunArgs> {
    let mut argv: Vec<String> = vec![
        "fsdelta".into(),
        "run".into(),
        "--label".into(),
        LABEL.into(),
        "--suite".into(),
        args.suite.clone(),
        "--scale".into(),
        args.scale.to_string(),
        "-n".into(),
        args.repeat.to_string(),
        "--db".into(),
        args.db.location(),
    ];
    for t in &args.tests {
        argv.extend(["--test".into(), t.clone()]);
    }
    if let Some(t) = &args.target {
        argv.extend(["--target".into(), t.display().to_string()]);
    }
    if let Some(c) = &args.config {
        argv.extend(["--config".into(), c.display().to_string()]);
    }
    if args.no_drop_caches {
        argv.push("--no-drop-caches".into());
    }
    if args.quiet {
        argv.push("--quiet".into());
    }
    match Cli::try_parse_from(argv)
        .context("building the calibration's run")?
        .command
    {
        Command::Run(r) => Ok(r),
        _ => bail!("building the calibration's run: not a run"),
    }
}

/// The newest run labelled [`LABEL`].
fn newest(location: &str) -> Result<Option<crate::model::RunInfo>> {
    let store = crate::store::open_read_only(location)?;
    Ok(store
        .runs(&RunFilter {
            label: Some(LABEL.into()),
            limit: Some(1),
        })?
        .into_iter()
        .next())
}

/// `fsdelta calibrate`.
pub fn main(args: &CalibrateArgs) -> Result<i32> {
    if args.repeat < 2 {
        bail!(
            "calibrate needs at least 2 repetitions a run (-n 2) to see the noise; 5 is the default"
        );
    }
    let location = args.db.location();
    if !(2..=MAX_RUNS).contains(&args.runs) {
        bail!(
            "calibrate --runs {} is out of range: give 2 to {MAX_RUNS} runs (each consecutive \
             pair estimates the drift between runs once more)",
            args.runs
        );
    }
    let mut ids: Vec<RunId> = Vec::new();
    for k in 1..=args.runs {
        if !args.quiet {
            eprintln!("fsdelta calibrate: run {k} of {}", args.runs);
        }
        let code = super::run::main(run_args(args)?)?;
        if code == EXIT_INTERRUPTED {
            return Ok(code);
        }
        let run = newest(&location)?.context("the calibration run was not stored")?;
        if ids.last() == Some(&run.id) {
            bail!("the calibration run was not stored");
        }
        ids.push(run.id);
    }
    let store = crate::store::open_read_only(&location)?;
    let (first, last) = (ids[0], ids[ids.len() - 1]);
    let a = store.samples(first)?;
    let b = store.samples(last)?;
    let host = store
        .run(first)?
        .map(|r| r.environment.host)
        .unwrap_or_default();
    let rows = rows(
        &a,
        &b,
        &drifts_of(store.as_ref(), &host)?,
        &Margins::default(),
    );
    if rows.is_empty() {
        bail!("the calibration runs have no successful headline metric to size");
    }
    super::query::write_stdout(&render(&rows, &host, &ids, args.repeat))?;
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cv: f64) -> Row {
        Row {
            config: "scratch".into(),
            test: "smallfiles".into(),
            metric: "files_per_sec".into(),
            class: MetricClass::Throughput,
            noise: Some(Noise::of_cv(cv)),
            drift: None,
            detectable: vec![],
            aa: Verdict::Unchanged,
        }
    }

    #[test]
    fn a_calibration_phrases_what_compare_prints_and_plans_repetitions() {
        let m = Margins::default();
        let r = row(0.05);
        let cal = Calibration {
            runs: (1, 2),
            rows: BTreeMap::from([((r.config.clone(), r.test.clone(), r.metric.clone()), r)]),
        };
        let e = power::detectable_effect(Noise::of_cv(0.05), 5, MetricClass::Throughput, 1, &m);
        assert_eq!(
            cal.phrase("scratch", "smallfiles", "files_per_sec", 5, 1, true, &m)
                .unwrap(),
            format!(
                "with 5 runs a side this machine detects changes of {} or more here",
                power::fmt_effect(e)
            )
        );
        assert_eq!(
            cal.phrase("scratch", "bigdir", "files_per_sec", 5, 1, true, &m),
            None
        );
        // CV 5 % against the 5 % band: runs_for's answer, capped by --max-repeat
        let need = power::runs_for(Noise::of_cv(0.05), 0.05, MetricClass::Throughput, 1, &m);
        assert!(need.is_some_and(|n| n > 10), "{need:?}");
        assert_eq!(cal.plan_runs(&m, 50), need);
        assert_eq!(cal.plan_runs(&m, 10), Some(10));
    }

    #[test]
    fn the_table_names_the_runs_and_a_flagged_a_a_metric() {
        let mut r = row(0.03);
        r.detectable = power::table(
            Noise::of_cv(0.03),
            MetricClass::Throughput,
            1,
            &Margins::default(),
        );
        r.aa = Verdict::Regressed;
        let text = render(&[r], "lab3", &[7, 8], 5);
        assert!(
            text.starts_with("Noise of lab3 (runs 7 and 8, 5 repetitions each"),
            "{text}"
        );
        assert!(text.contains("3.0 %"), "{text}");
        assert!(text.contains("A/A: 1 flagged between two runs of the same thing: smallfiles files_per_sec (regressed)"), "{text}");
    }

    fn stored(
        store: &mut dyn crate::store::Store,
        host: &str,
        label: &str,
        values: &[f64],
    ) -> RunId {
        use crate::model::{Environment, Metric, NewRun, NewSample, SiteFacts, Unit};
        let run = store
            .create_run(&NewRun {
                label: label.into(),
                suite: "s".into(),
                started_at: chrono::Utc::now(),
                fsdelta_version: "t".into(),
                environment: Environment {
                    host: host.into(),
                    ..Environment::default()
                },
            })
            .unwrap();
        for (i, v) in values.iter().enumerate() {
            let mut m = Metric::new(
                "files_per_sec",
                *v,
                Unit::FilesPerSec,
                Direction::HigherIsBetter,
            );
            m.headline = true;
            store
                .add_sample(
                    run,
                    &NewSample {
                        config: "scratch".into(),
                        test: "smallfiles".into(),
                        repetition: i as u32 + 1,
                        sequence: i as u32 + 1,
                        facts: SiteFacts::default(),
                        status: SampleStatus::Ok,
                        error: None,
                        started_at: chrono::Utc::now(),
                        duration_s: 1.0,
                        workload: "w".into(),
                        metrics: vec![m],
                        histograms: vec![],
                        attachments: vec![],
                    },
                )
                .unwrap();
        }
        run
    }

    #[test]
    fn compare_rows_are_annotated_from_the_hosts_newest_calibration() {
        let mut store = crate::store::memory::MemoryStore::new();
        let v = [1000.0, 1020.0, 1040.0, 1010.0, 1030.0];
        let a = stored(&mut store, "lab3", LABEL, &v);
        let b = stored(&mut store, "lab3", LABEL, &v);
        // another machine's calibration and a run of another label are not this one's
        stored(&mut store, "lab4", LABEL, &[1.0, 9.0, 1.0]);
        stored(&mut store, "lab3", "other", &[1.0, 9.0, 1.0]);
        let none = Drifts::new();
        let cal = Calibration::newest(&store, "lab3", &none).unwrap().unwrap();
        assert_eq!(cal.runs, (a, b));
        let m = Margins::default();
        let mut c = verdict::compare(
            &v,
            &v,
            Direction::HigherIsBetter,
            MetricClass::Throughput,
            &m,
        );
        c.role = verdict::Role::Headline;
        let mut rows = vec![crate::compare::judge::Judged {
            key: crate::compare::SeriesKey {
                config: "scratch".into(),
                test: "smallfiles".into(),
                metric: "files_per_sec".into(),
            },
            unit: crate::model::Unit::FilesPerSec,
            kind: crate::model::MetricKind::Throughput,
            headline: true,
            baseline_values: v.to_vec(),
            current_values: v.to_vec(),
            comparison: c,
        }];
        assert_eq!(annotate(&store, &mut rows, "lab3", &none, &m), Some((a, b)));
        let noise = Noise::pooled(&[&v, &v]).unwrap();
        let e = power::detectable_effect(noise, 5, MetricClass::Throughput, 1, &m);
        assert_eq!(
            rows[0].comparison.detects.as_deref(),
            Some(power::detects_phrase(5, e).as_str())
        );
        // no calibration on that host: nothing said
        rows[0].comparison.detects = None;
        assert_eq!(annotate(&store, &mut rows, "lab9", &none, &m), None);
        assert_eq!(rows[0].comparison.detects, None);
        // two configurations side by side take the current one's calibration
        rows[0].key.config = "other vs scratch".into();
        assert_eq!(annotate(&store, &mut rows, "lab3", &none, &m), Some((a, b)));
        assert!(rows[0].comparison.detects.is_some());
    }
}
