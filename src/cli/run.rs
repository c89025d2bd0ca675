//! `fsdelta run`: maps the arguments onto a [`runner::RunSpec`], chooses how progress is shown,
//! calls [`runner::run`], and renders its result (summary, failures, skipped tests, the closing
//! comparison) with the exit code: 0 ok, 1 a regression against `--baseline`, 2 failed samples
//! or an error, 130 interrupted.
//!
//! The run loop, the sample step and the store write live in `runner`; this file must never
//! loop over samples.

use super::progress::{Progress, View};
use super::{CompareArgs, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, OrderChoice, RunArgs, query};
use crate::compare;
use crate::model::RunStatus;
use crate::plan::{config, suite};
use crate::report;
use crate::runner::{self, Baseline, PlannedTest, RunSpec, Sites};
use crate::site::{StateFile, env};
use crate::store;
use anyhow::{Context, Result};

/// Read the suite: a suite file (`.toml` or an existing path) or a built-in suite.
fn suite_of(args: &RunArgs, ram_mib: u64) -> Result<suite::Suite> {
    let path = std::path::Path::new(&args.suite);
    if args.suite.ends_with(".toml") || path.is_file() {
        let text = crate::os::input::read_to_string(path).context("reading the suite file")?;
        Ok(crate::plan::suitefile::parse(&text, &args.suite)?)
    } else {
        Ok(suite::builtin_scaled(&args.suite, args.scale, ram_mib)?)
    }
}

/// `fsdelta run`.
pub fn main(args: RunArgs) -> Result<i32> {
    check_args(&args)?;
    // Before any thread starts: leftovers in the machine's namespace are undone there, then the
    // run's mounts go into a namespace of its own.
    recover_and_isolate("fsdelta")?;
    let Planned {
        plan,
        margins,
        ab_pairs,
        config_names,
        tracefs: _tracefs,
        repeat_note,
    } = planned(&args)?;
    if let Some(note) = &repeat_note
        && !args.quiet
    {
        eprintln!("fsdelta: --until-confident: {note}");
    }
    let location = args.db.location();
    let (mut store, replayed) = store::open_for_run(&location)?;
    let journals = store::journals_for(&location);
    if let Some(m) = replayed.message(&journals.primary) {
        eprintln!("fsdelta: {m}");
    }
    let cancel = super::install_run_signals().context("installing signal handlers")?;
    let rows: Vec<(String, String)> = config_names
        .iter()
        .flat_map(|c| plan.tests.iter().map(move |t| (c.clone(), t.name.clone())))
        .collect();
    let view = View {
        progress: Progress::new(args.quiet, &rows, plan.repeat),
        quiet: args.quiet,
        location,
    };
    let result = runner::run_with(&plan, store.as_mut(), &cancel, &view, Some(journals));
    view.progress.finish();
    let result = result?;
    if let Some(code) = tell_the_end(&result, args.quiet) {
        return Ok(code);
    }
    let run_id = result.run_id;
    let mut compare_code = match &result.closing {
        Some(c) => closing(
            store.as_ref(),
            &c.baseline,
            &run_id.to_string(),
            c.gating,
            &args,
            &margins,
        )?,
        None => EXIT_OK,
    };
    for (a, b) in &ab_pairs {
        let (base, cur) = (format!("{run_id}@{a}"), format!("{run_id}@{b}"));
        compare_code =
            compare_code.max(closing(store.as_ref(), &base, &cur, true, &args, &margins)?);
    }
    // The last word: where each sample the store did not take went.
    if let Some(u) = &result.unsaved {
        eprintln!("fsdelta: {u}");
    }
    // An error outranks a regression: exit 2 when samples failed, else what the comparison says.
    Ok(if result.status == RunStatus::Failed {
        EXIT_ERROR
    } else {
        compare_code
    })
}

/// Flags that cannot go together, refused before anything is read.
fn check_args(args: &RunArgs) -> Result<()> {
    if args.repeat == 0 {
        return Err(crate::plan::PlanError::NoRepetitions.into());
    }
    if args.config.is_some() && args.target.is_some() {
        anyhow::bail!(
            "--config and --target both name where to run; use one (a `dir` configuration in the config file runs in an existing directory)"
        );
    }
    if args.seed.is_some() && args.order != OrderChoice::Random {
        anyhow::bail!("--seed goes with --order random");
    }
    Ok(())
}

/// The run the arguments ask for, with what the CLI needs around it.
struct Planned {
    plan: RunSpec,
    /// The resolved margins (flags, else the suite file, else the defaults).
    margins: compare::verdict::Margins,
    /// `--kernel A --kernel B`: the configurations compared pairwise at the end.
    ab_pairs: Vec<(String, String)>,
    /// The configurations' names, for the progress rows.
    config_names: Vec<String>,
    /// tracefs, when `--events` or a test's `events` needed it mounted: recorded in the state
    /// file, unmounted when the run ends (this guard's drop).
    tracefs: Option<crate::site::mount::Mounted>,
    /// `--until-confident`: where its starting repetitions come from ([`starting_repeat`]).
    repeat_note: Option<String>,
}

/// Map the arguments onto a [`RunSpec`]: the suite, its tests built (so a bad option fails
/// fast), where they run, how often and in which order, the closing comparison.
fn planned(args: &RunArgs) -> Result<Planned> {
    let environment = env::environment();
    let suite = suite_of(args, environment.memory_bytes >> 20)?;
    let margins = args.compare.resolve(&suite.margins);
    let (tests, tracefs) = planned_tests(args, &suite)?;
    let (targets, ab_pairs) = sites_of(args)?;
    let config_names: Vec<String> = match &targets {
        Sites::Scratch(_) => vec!["scratch".into()],
        Sites::Configs { file, .. } => file.configs.iter().map(|c| c.name.clone()).collect(),
    };
    let (repeat, repeat_note) = starting_repeat(args, &environment.host, &margins);
    let plan = RunSpec {
        label: args
            .label
            .clone()
            .unwrap_or_else(|| environment.kernel_release.clone()),
        suite: suite.name.clone(),
        tests,
        targets,
        repeat,
        order: args.order.resolve(args.seed),
        until_confident: args.until_confident.then_some(runner::UntilConfident {
            max_repeat: args.max_repeat,
            margins,
            // Configurations compared with each other run until their verdict is resolved.
            pairs: ab_pairs.clone(),
            repeat_disturbed: args.repeat_disturbed,
            planned_from: repeat_note.clone(),
        }),
        drop_caches: !args.no_drop_caches,
        ondisk: suite.ondisk,
        ondisk_remount: suite.ondisk_remount,
        profile: args.profile.map(Into::into),
        profile_scope: args.profile_scope.into(),
        baseline: match &args.baseline {
            Some(b) => Baseline::Runs(b.clone()),
            None if !ab_pairs.is_empty() => Baseline::None,
            None => Baseline::LastComparable,
        },
        environment,
    };
    Ok(Planned {
        plan,
        margins,
        ab_pairs,
        config_names,
        tracefs,
        repeat_note,
    })
}

/// `--until-confident`'s starting repetitions: what the newest calibration of `host` in the
/// store plans for the run's margins (`calibrate::planned_repeat`, at most `--max-repeat`)
/// when that is more than `-n`, else `-n`; with the sentence that says which and why. `-n`
/// and no sentence without `--until-confident`.
fn starting_repeat(
    args: &RunArgs,
    host: &str,
    margins: &compare::verdict::Margins,
) -> (u32, Option<String>) {
    if !args.until_confident {
        return (args.repeat, None);
    }
    let planned =
        super::calibrate::planned_repeat(&args.db.location(), host, margins, args.max_repeat);
    repeat_from(args.repeat, planned)
}

/// [`starting_repeat`]'s choice from `-n` and the calibration's plan (its runs a side and its
/// two runs).
fn repeat_from(
    n: u32,
    planned: Option<(u32, (crate::model::RunId, crate::model::RunId))>,
) -> (u32, Option<String>) {
    match planned {
        Some((p, (a, b))) if p > n => (
            p,
            Some(format!(
                "starting with {p} repetitions a test, not -n {n}: the calibration of this machine (runs {a} and {b}) plans {p} a side to resolve its noisiest headline metric within the margins"
            )),
        ),
        Some((p, (a, b))) => (
            n,
            Some(format!(
                "starting with -n {n} repetitions a test; the calibration of this machine (runs {a} and {b}) plans {p} a side"
            )),
        ),
        None => (
            n,
            Some(format!(
                "starting with -n {n} repetitions a test: no calibration of this machine in the store (`fsdelta calibrate` makes one, and the start is then planned from it)"
            )),
        ),
    }
}

/// Build every workload of the selected tests before anything runs, so a bad option fails fast;
/// with tracefs mounted (and recorded) first when an event is asked and it is not there.
fn planned_tests(
    args: &RunArgs,
    suite: &suite::Suite,
) -> Result<(Vec<PlannedTest>, Option<crate::site::mount::Mounted>)> {
    let external_all = args.engine == super::EngineChoice::External;
    // Where the tests will run, for a refusal of a path that leaves it.
    let target = match (&args.target, &args.config) {
        (Some(dir), _) => format!("a scratch directory inside {}", dir.display()),
        (None, Some(_)) => "each configuration's filesystem".to_string(),
        (None, None) => "a scratch directory inside the current directory".to_string(),
    };
    let selected = suite.select(&args.tests)?;
    let tracefs = if args.events.is_some() || selected.iter().any(|t| !t.events.is_empty()) {
        crate::site::mount::ensure_tracefs(&StateFile::default_location())?
    } else {
        None
    };
    let tests = selected
        .into_iter()
        .map(|t| {
            PlannedTest::build(
                &t,
                external_all,
                args.events.as_deref(),
                &args.events_filter,
            )
            .map_err(|e| {
                if e.contains("leaves the target directory") {
                    anyhow::anyhow!("test {}: {e} (the target here: {target})", t.name)
                } else {
                    anyhow::anyhow!("test {}: {e}", t.name)
                }
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((tests, tracefs))
}

/// Where the tests run (a configuration file, the default kernel file, or a scratch directory),
/// and with `--kernel A --kernel B` the configurations to compare pairwise.
fn sites_of(args: &RunArgs) -> Result<(Sites, Vec<(String, String)>)> {
    let file = match &args.config {
        Some(path) => {
            let text = crate::os::input::read_to_string(path).context("reading the config file")?;
            Some(config::parse(&text, &path.display().to_string())?)
        }
        None if !args.kernels.is_empty() => Some(config::default_kernel_file()),
        None => None,
    };
    // --config-name: those configurations, in the order given; two are compared with each other.
    let (file, named_pair) = match file {
        Some(f) if !args.config_names.is_empty() => {
            let picked = pick_configs(f, &args.config_names)?;
            let pair = match &args.config_names[..] {
                [a, b] if args.kernels.is_empty() => Some((a.clone(), b.clone())),
                _ => None,
            };
            (Some(picked), pair)
        }
        f => (f, None),
    };
    // --kernel A --kernel B: every configuration once per kernel, compared pairwise at the end.
    let (file, ab_pairs) = match file {
        Some(f) if !args.kernels.is_empty() => {
            let k = args.kernels.len();
            let with = config::with_kernels(&f, &args.kernels).map_err(anyhow::Error::msg)?;
            let pairs = config::kernel_pairs(&with, k);
            (Some(with), pairs)
        }
        f => (f, named_pair.into_iter().collect()),
    };
    let file = match file {
        Some(mut f) => {
            build_kernels(&mut f, args.config.as_deref(), args.quiet)?;
            Some(f)
        }
        None => None,
    };
    let targets = match file {
        Some(file) => Sites::Configs {
            file,
            state: StateFile::default_location(),
        },
        None => Sites::Scratch(match &args.target {
            Some(p) => p.clone(),
            None => std::env::current_dir().context("reading the current directory")?,
        }),
    };
    Ok((targets, ab_pairs))
}

/// Kernels written as commits of a git tree (`--kernel TREE@COMMIT`, a configuration's `kernel
/// = "TREE@COMMIT"` or `kernel = { tree, commit, config }`) built, or taken from kbuild's cache,
/// before anything runs, each (tree, commit, config) once; their configurations then boot the
/// built image with its modules. The table's relative `tree` and `config` are read from the
/// directory of the configuration file `config_path`.
fn build_kernels(
    file: &mut config::ConfigFile,
    config_path: Option<&std::path::Path>,
    quiet: bool,
) -> Result<()> {
    use std::path::PathBuf;
    let base = config_path
        .and_then(std::path::Path::parent)
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let mut done: std::collections::HashMap<
        (PathBuf, String, Option<PathBuf>),
        crate::kbuild::Built,
    > = Default::default();
    for c in &mut file.configs {
        let Some(vm) = c.vm.as_mut() else { continue };
        let (kernel, kconfig) = match &vm.build {
            Some(b) => (
                crate::kbuild::KernelRef {
                    tree: base.join(&b.tree),
                    commit: b.commit.clone(),
                },
                b.config.as_ref().map(|p| base.join(p)),
            ),
            None => match super::kernels::tree_ref(&vm.kernel)
                .with_context(|| format!("config '{}'", c.name))?
            {
                Some(k) => (k, None),
                None => continue,
            },
        };
        let key = (kernel.tree.clone(), kernel.commit.clone(), kconfig.clone());
        let built = match done.get(&key) {
            Some(b) => b.clone(),
            None => {
                let text = kconfig
                    .as_ref()
                    .map(|p| {
                        crate::os::input::read_to_string(p).with_context(|| {
                            format!(
                                "config '{}': reading the kernel's .config {} (kernel = {{ config = ... }}, relative to the configuration file)",
                                c.name,
                                p.display()
                            )
                        })
                    })
                    .transpose()?;
                let shown = vm.kernel.display().to_string();
                let b = super::kernels::build(kernel, text, &shown, quiet)
                    .with_context(|| format!("config '{}'", c.name))?;
                done.insert(key, b.clone());
                b
            }
        };
        vm.kernel = built.image.clone();
        if vm.modules.is_none() {
            vm.modules = built.modules.clone();
        }
        vm.build = None;
    }
    Ok(())
}

/// The configurations of `file` named `names`, in that order; a name the file lacks, or one
/// given twice, is an error that lists the file's names.
fn pick_configs(mut file: config::ConfigFile, names: &[String]) -> Result<config::ConfigFile> {
    let all: Vec<String> = file.configs.iter().map(|c| c.name.clone()).collect();
    let mut picked = Vec::with_capacity(names.len());
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            anyhow::bail!("--config-name {n} is given twice; name each configuration once");
        }
        let Some(c) = file.configs.iter().position(|c| &c.name == n) else {
            anyhow::bail!(
                "--config-name {n}: the config file has no such configuration; it has: {}",
                all.join(", ")
            );
        };
        picked.push(file.configs[c].clone());
    }
    file.configs = picked;
    Ok(file)
}

/// Undo what a killed fsdelta left behind before creating anything new (printed with the
/// prefix `who`), then move into a mount namespace of fsdelta's own (`os::namespace`), so that
/// no other process can copy or pin the mounts this one makes. Call before any thread starts
/// (`run` and `agent` do, first thing); the recovery runs before the move so that a leftover
/// mount in the machine's namespace is unmounted there, not in a copy.
pub(super) fn recover_and_isolate(who: &str) -> Result<()> {
    match crate::site::recover_leftovers() {
        Ok(report) if !report.is_empty() => {
            eprintln!("{who}: leftovers from an earlier run:\n{report}")
        }
        Ok(_) => {}
        Err(e) => eprintln!("{who}: warning: could not check for leftovers: {e}"),
    }
    crate::os::namespace::enter_own()?;
    Ok(())
}

/// The run's summary and how it ended; `Some(exit code)` when that is the end (interrupted).
fn tell_the_end(result: &runner::RunResult, quiet: bool) -> Option<i32> {
    if let Some(e) = &result.teardown_error {
        eprintln!("fsdelta: {e}");
    }
    let skipped: Vec<String> = result
        .skipped
        .iter()
        .map(|s| format!("SKIPPED {} ({}): {}", s.test, s.config, s.why))
        .collect();
    print!("{}", report::summary::run_end(&result.records(), &skipped));
    let run_id = result.run_id;
    let n = result.samples.len();
    match result.status {
        RunStatus::Aborted => {
            eprintln!(
                "fsdelta: run {run_id} interrupted; {n} finished sample(s) kept, run marked aborted"
            );
            if let Some(u) = &result.unsaved {
                eprintln!("fsdelta: {u}");
            }
            return Some(EXIT_INTERRUPTED);
        }
        RunStatus::Failed => eprintln!(
            "fsdelta: run {run_id} finished with {} failed sample(s) of {n}; see above, or `fsdelta show {run_id}`",
            result.failed()
        ),
        _ if !quiet => {
            let outside = (result.wall_s - result.workload_s()).max(0.0);
            eprintln!(
                "fsdelta: run {run_id} complete in {:.0} s, {outside:.1} s ({:.1} %) outside the workloads (mkfs, mount, cache drops, storing); `fsdelta show {run_id}` shows it again",
                result.wall_s,
                100.0 * outside / result.wall_s.max(1e-9)
            )
        }
        _ => {}
    }
    None
}

/// Show a closing comparison of `base` and `cur`; when `gating` (`--baseline`, `--kernel`)
/// return compare's exit code, else 0.
fn closing(
    store: &dyn store::Store,
    base: &str,
    cur: &str,
    gating: bool,
    args: &RunArgs,
    margins: &compare::verdict::Margins,
) -> Result<i32> {
    // Judged with the run's resolved margins; `opts` only says how to show it.
    let criteria = compare::Criteria {
        tests: args.tests.clone(),
        margins: *margins,
        gate: args.compare.gate.gate(),
        ..compare::Criteria::default()
    };
    let opts = CompareArgs::closing(args.tests.clone(), margins);
    match query::judge(store, base, cur, &criteria) {
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
        Err(e) if gating => Err(e.context(format!("comparing {base} with {cur}"))),
        Err(_) => Ok(EXIT_OK),
    }
}

#[cfg(test)]
mod tests {
    use super::repeat_from;

    #[test]
    fn until_confident_starts_from_the_calibration_when_it_plans_more() {
        let (n, note) = repeat_from(3, Some((8, (4, 5))));
        assert_eq!(n, 8);
        let note = note.unwrap();
        assert!(
            note.contains("starting with 8 repetitions a test, not -n 3")
                && note.contains("runs 4 and 5"),
            "{note}"
        );
        let (n, note) = repeat_from(5, Some((2, (4, 5))));
        assert_eq!(n, 5);
        assert!(note.unwrap().contains("plans 2 a side"));
        let (n, note) = repeat_from(3, None);
        assert_eq!(n, 3);
        assert!(note.unwrap().contains("no calibration of this machine"));
    }
}
