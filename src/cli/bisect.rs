//! `fsdelta bisect`: from "the bad commit is slower than the good one" to the commit that did it,
//! on any git repository whose build the tests then run on the host (`--repo DIR --build CMD`;
//! a command test runs `"$FSDELTA_BISECT_TREE/prog"`).
//!
//! The loop is `bisect::advance`; this edge is its [`Lab`]: it exports each commit's tree with
//! `git archive` into fsdelta's cache (never the user's checkout), runs the build command there,
//! and measures with `fsdelta run` itself (one child process per repetition a side, so each
//! step's repetitions interleave with the good and the bad end's and every one is a stored run
//! labelled `bisect/NAME/COMMIT`). The state is saved after every step (`bisect::state`), so
//! Ctrl-C keeps it and `bisect resume | log | report | list` work. This file must never judge
//! a step itself: the verdicts are `bisect::classify`'s and `compare`'s.

use super::{CompareArgs, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EngineChoice, MarginArgs, query};
use crate::bisect::state::{self, Dir};
use crate::bisect::{
    self, BisectError, Built, Followed, Lab, Measured, Outcome, Phase, Settings, Side, State,
    StepKind, StepVerdict, git,
};
use crate::compare::verdict::MetricClass;
use crate::model::SampleStatus;
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `fsdelta bisect` and its subcommands.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BisectArgs {
    /// `resume`, `log`, `report`, `list`; without one, start a bisection.
    #[command(subcommand)]
    pub action: Option<Action>,
    /// How to start one.
    #[command(flatten)]
    pub start: StartArgs,
}

/// What to do with an existing bisection.
#[derive(Debug, Subcommand)]
pub enum Action {
    /// Continue a stopped bisection (the newest unless NAME).
    Resume {
        /// The bisection.
        name: Option<String>,
    },
    /// Print a bisection's log: every step and the output of its builds and runs.
    Log {
        /// The bisection.
        name: Option<String>,
    },
    /// Show a bisection: its steps, the culprit, the comparison of culprit^ and culprit.
    Report {
        /// The bisection.
        name: Option<String>,
    },
    /// List the bisections, newest first.
    List,
}

/// `fsdelta bisect --repo DIR --build CMD --good G --bad B`.
#[derive(Debug, Clone, Args)]
pub struct StartArgs {
    /// The git repository to bisect (only read: commits are exported with `git archive`).
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Shell command that builds a commit, run in the commit's exported tree (its path also in
    /// $FSDELTA_BISECT_TREE); exit status non-zero: the commit is skipped.
    #[arg(long, value_name = "CMD")]
    pub build: Option<String>,
    /// The repository is a kernel tree: each commit is built with `kbuild` (cached) and measured
    /// in the guests of --config's configurations, booted with that kernel (`run --kernel`).
    #[arg(long, conflicts_with = "build")]
    pub kernel: bool,
    /// With --kernel: the .config to build with (default: tinyconfig plus what a guest needs).
    #[arg(long, value_name = "FILE", requires = "kernel")]
    pub kernel_config: Option<PathBuf>,
    /// A commit that measures well.
    #[arg(long, value_name = "REV")]
    pub good: Option<String>,
    /// A later commit that measures worse.
    #[arg(long, value_name = "REV")]
    pub bad: Option<String>,
    /// The bisection's name (default: the repository's directory name and the ends' hashes).
    #[arg(long)]
    pub name: Option<String>,
    /// The metric to follow (default: the test's headline metric).
    #[arg(long, value_name = "NAME")]
    pub metric: Option<String>,
    /// Stop when one commit holds this probability, percent.
    #[arg(long, value_name = "PCT", default_value_t = 95.0)]
    pub confidence: f64,
    /// Repetitions a side each step starts with.
    #[arg(short = 'n', long = "repeat", default_value_t = 3)]
    pub repeat: u32,
    /// Most repetitions a side an unclear step gets (doubling up to it).
    #[arg(long, value_name = "N", default_value_t = 12)]
    pub max_reps: u32,
    /// Most bisection steps (default: twice plain bisection's, plus 8).
    #[arg(long, value_name = "N")]
    pub max_steps: Option<usize>,
    /// Also measure the bad commit with the culprit reverted: it must measure like good.
    #[arg(long)]
    pub revert: bool,
    /// Suite: a built-in suite or a suite file (as `run --suite`).
    #[arg(long, default_value = "quick")]
    pub suite: String,
    /// The test to follow (as `run --test`; one test).
    #[arg(long = "test", value_name = "NAME")]
    pub tests: Vec<String>,
    /// Scale of a built-in suite (as `run --scale`).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Where the tests run (as `run --target`).
    #[arg(long, value_name = "DIR")]
    pub target: Option<PathBuf>,
    /// Configuration file (as `run --config`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Engine (as `run --engine`).
    #[arg(long, value_enum, default_value_t = EngineChoice::Native)]
    pub engine: EngineChoice,
    /// Do not drop caches before each sample (as `run --no-drop-caches`).
    #[arg(long)]
    pub no_drop_caches: bool,
    #[command(flatten)]
    pub margins: MarginArgs,
    #[command(flatten)]
    pub db: super::DbArg,
}

/// What a bisection needs besides the loop's state; saved with it.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Job {
    repo: PathBuf,
    build: Option<String>,
    /// Kernel axis: the .config text (`None`: kbuild's default) when `Some(kernel)` is set.
    #[serde(default)]
    kernel: Option<KernelAxis>,
    good: String,
    bad: String,
    good_rev: String,
    bad_rev: String,
    /// `fsdelta run` arguments every measurement shares.
    run_args: Vec<String>,
    db: String,
    metric: Option<String>,
    followed: Option<Followed>,
    /// The followed configuration (as the samples name it).
    config: Option<String>,
    /// Where the trees are exported.
    trees: PathBuf,
}

/// The kernel axis of a job.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct KernelAxis {
    /// The .config to build with; `None`: kbuild's default.
    config: Option<String>,
}

/// The saved file: the job and the loop's state.
#[derive(Debug, Serialize, Deserialize)]
struct Saved {
    job: Job,
    state: State,
}

#[derive(Serialize)]
struct SavedRef<'a> {
    job: &'a Job,
    state: &'a State,
}

/// `fsdelta bisect`.
pub fn main(args: BisectArgs) -> Result<i32> {
    let root = state::root()?;
    match args.action {
        None => start(args.start, &root),
        Some(Action::Resume { name }) => resume(&open(&root, name)?),
        Some(Action::Log { name }) => {
            let dir = open(&root, name)?;
            let text = std::fs::read_to_string(dir.log_path()).unwrap_or_default();
            print!("{text}");
            Ok(EXIT_OK)
        }
        Some(Action::Report { name }) => {
            let dir = open(&root, name)?;
            let saved: Saved = dir.load()?;
            print!("{}", report(&dir, &saved)?);
            Ok(EXIT_OK)
        }
        Some(Action::List) => {
            for name in state::list(&root) {
                let dir = Dir::open(&root, &name)?;
                let line = match dir.load::<Saved>() {
                    Ok(s) => format!("{name}  {}", status_word(&s.state)),
                    Err(e) => format!("{name}  unreadable: {e}"),
                };
                println!("{line}");
            }
            Ok(EXIT_OK)
        }
    }
}

fn open(root: &Path, name: Option<String>) -> Result<Dir> {
    let name = match name {
        Some(n) => n,
        None => state::list(root).into_iter().next().context(
            "no bisection yet: start one with `fsdelta bisect --repo DIR --good G --bad B`",
        )?,
    };
    Ok(Dir::open(root, &name)?)
}

fn status_word(s: &State) -> String {
    match (&s.phase, &s.outcome) {
        (Phase::Done, Some(Outcome::Culprit { .. })) => "done: culprit found".into(),
        (Phase::Done, Some(Outcome::Range { commits, .. })) => {
            format!("done: {} commits left", commits.len())
        }
        (Phase::Done, Some(Outcome::NoRegression(_))) => "done: no regression".into(),
        _ => format!("stopped after {} steps (resume continues)", s.steps.len()),
    }
}

/// The `fsdelta run` arguments the start arguments give every measurement.
fn run_args(a: &StartArgs, db: &str) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "run".into(),
        "--quiet".into(),
        "--suite".into(),
        a.suite.clone(),
        "--scale".into(),
        a.scale.to_string(),
        "--engine".into(),
        a.engine
            .to_possible_value()
            .map(|p| p.get_name().to_string())
            .unwrap_or_else(|| "native".into()),
        "--db".into(),
        db.to_string(),
    ];
    for t in &a.tests {
        v.extend(["--test".into(), t.clone()]);
    }
    if let Some(t) = &a.target {
        v.extend(["--target".into(), t.display().to_string()]);
    }
    if let Some(c) = &a.config {
        v.extend(["--config".into(), c.display().to_string()]);
    }
    if a.no_drop_caches {
        v.push("--no-drop-caches".into());
    }
    let m = &a.margins;
    for (flag, value) in [
        ("--eps", m.eps),
        ("--delta", m.delta),
        ("--delta-tail", m.delta_tail),
        ("--delta-max", m.delta_max),
    ] {
        if let Some(x) = value {
            v.extend([flag.to_string(), x.to_string()]);
        }
    }
    v
}

/// Absolute form of a path the user gave (the child runs may start elsewhere).
fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("resolving {}", p.display()))
}

fn start(mut a: StartArgs, root: &Path) -> Result<i32> {
    let (Some(repo), Some(good_rev), Some(bad_rev)) =
        (a.repo.clone(), a.good.clone(), a.bad.clone())
    else {
        bail!(
            "a bisection needs --repo DIR, --good REV and --bad REV (or `fsdelta bisect resume`)"
        );
    };
    if !(50.0..100.0).contains(&a.confidence) {
        bail!(
            "--confidence {} is not a percentage between 50 and 100",
            a.confidence
        );
    }
    if a.repeat < 2 || a.max_reps < a.repeat {
        bail!("--repeat must be at least 2 and --max-reps at least --repeat");
    }
    a.target = a.target.as_deref().map(absolute).transpose()?;
    a.config = a.config.as_deref().map(absolute).transpose()?;
    if a.suite.ends_with(".toml") || Path::new(&a.suite).is_file() {
        a.suite = absolute(Path::new(&a.suite))?.display().to_string();
    }
    let repo = absolute(&repo)?;
    let good = git::resolve(&repo, &good_rev)?;
    let bad = git::resolve(&repo, &bad_rev)?;
    let commits = git::candidates(&repo, &good, &bad)?;
    let name = a.name.clone().unwrap_or_else(|| {
        let base = repo
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "repo".into());
        format!("{base}-{}-{}", &good[..8], &bad[..8])
    });
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        bail!("--name {name:?}: a bisection's name is one path component (no '/', not hidden)");
    }
    if Dir::open(root, &name).is_ok() {
        bail!(
            "a bisection named {name} exists: `fsdelta bisect resume {name}` continues it, `fsdelta bisect report {name}` shows it; or give another --name"
        );
    }
    let mut settings = Settings::for_candidates(commits.len());
    settings.confidence = a.confidence / 100.0;
    settings.first_reps = a.repeat;
    settings.max_reps = a.max_reps;
    settings.margins = a.margins.margins();
    settings.revert = a.revert;
    if let Some(m) = a.max_steps {
        settings.max_steps = m;
    }
    let n = commits.len();
    let state = State::new(commits, settings)?;
    let db = a.db.location();
    let db = if db.contains("://") {
        db
    } else {
        absolute(Path::new(&db))?.display().to_string()
    };
    if a.kernel && a.config.is_none() {
        bail!(
            "--kernel measures in guests: give --config FILE with the configuration(s) to boot each commit's kernel in (see docs/kernels.md)"
        );
    }
    let kernel = if a.kernel {
        let config = match &a.kernel_config {
            Some(p) => Some(
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?,
            ),
            None => None,
        };
        Some(KernelAxis { config })
    } else {
        None
    };
    let job = Job {
        repo,
        kernel,
        build: a.build.clone(),
        good,
        bad,
        good_rev,
        bad_rev,
        run_args: run_args(&a, &db),
        db,
        metric: a.metric.clone(),
        followed: None,
        config: None,
        trees: crate::vm::cache_dir().join("bisect").join(&name),
    };
    let dir = Dir::create(root, &name)?;
    dir.save(&SavedRef {
        job: &job,
        state: &state,
    })?;
    let head = format!(
        "bisection {name}: {n} candidate commits between {} ({}) and {} ({})",
        job.good_rev,
        &job.good[..12],
        job.bad_rev,
        &job.bad[..12]
    );
    eprintln!("fsdelta: {head}");
    dir.log(&head)?;
    resume(&dir)
}

/// Continue the bisection in `dir` until it ends (or is interrupted).
fn resume(dir: &Dir) -> Result<i32> {
    let Saved { mut job, mut state } = dir.load()?;
    let cancel = super::install_run_signals().context("installing signal handlers")?;
    let name = dir.name();
    let mut lab = CliLab {
        job: job.clone(),
        name: name.clone(),
        dir: dir.clone(),
        cancel,
        built: Vec::new(),
        images: std::collections::HashMap::new(),
        told_tcg: false,
        state_commits: state.commits.iter().map(|(c, _)| c.clone()).collect(),
    };
    if state.phase != Phase::Done && job.followed.is_none() {
        match follow(&mut lab) {
            Ok((f, config)) => {
                job.followed = Some(f);
                job.config = Some(config);
                lab.job = job.clone();
                dir.save(&SavedRef {
                    job: &job,
                    state: &state,
                })?;
            }
            Err(BisectError::Interrupted) => return interrupted(&name),
            // A command the signal killed (git archive, a build) fails without saying why.
            Err(_) if lab.interrupted() => return interrupted(&name),
            Err(e) => return Err(e.into()),
        }
    }
    let followed = job.followed.clone();
    if let Some(f) = &followed {
        let mut shown = state.steps.len();
        let result = bisect::advance(&mut state, f, &mut lab, &mut |s| {
            if s.steps.len() > shown
                && let Some(step) = s.steps.last()
            {
                shown = s.steps.len();
                let line = step_line(&job, s, s.steps.len(), step);
                eprintln!("fsdelta: {line}");
                dir.log(&line)
                    .map_err(|e| BisectError::Lab(e.to_string()))?;
            }
            dir.save(&SavedRef {
                job: &job,
                state: s,
            })
            .map_err(|e| BisectError::Lab(e.to_string()))
        });
        match result {
            Ok(()) => {}
            Err(BisectError::Interrupted) => return interrupted(&name),
            Err(_) if lab.interrupted() => return interrupted(&name),
            Err(e) => {
                let _ = dir.log(&format!("stopped: {e}"));
                return Err(anyhow::Error::from(e).context(format!(
                    "bisection {name} stopped; its state is kept (`fsdelta bisect resume {name}` continues it)"
                )));
            }
        }
    }
    lab.clean_trees();
    let saved = Saved { job, state };
    let text = report(dir, &saved)?;
    print!("{text}");
    Ok(match &saved.state.outcome {
        Some(Outcome::Culprit { .. }) => EXIT_OK,
        Some(Outcome::NoRegression(_)) => EXIT_ERROR,
        _ => super::EXIT_BISECT_SKIP,
    })
}

fn interrupted(name: &str) -> Result<i32> {
    eprintln!(
        "fsdelta: bisection {name} interrupted; its state and every finished run are kept: `fsdelta bisect resume {name}` continues it"
    );
    Ok(EXIT_INTERRUPTED)
}

/// Which metric (and configuration) to follow: one warm-up run of the good end, then `--metric`
/// or the followed test's one headline metric.
fn follow(lab: &mut CliLab) -> Result<(Followed, String), BisectError> {
    if let Built::Failed(why) = lab.build(Side::Good)? {
        return Err(BisectError::Lab(format!(
            "the good end does not build: {why}"
        )));
    }
    let label = lab.label(Side::Good, "warmup");
    let samples = match lab.run(Side::Good, 1, &label)? {
        Ok(s) => s,
        Err(why) => {
            return Err(BisectError::Lab(format!(
                "the good end's first run failed: {why}"
            )));
        }
    };
    let tests: std::collections::BTreeSet<&str> =
        samples.iter().map(|s| s.sample.test.as_str()).collect();
    if tests.len() != 1 {
        return Err(BisectError::Lab(format!(
            "a bisection follows one test; the selection ran {} ({}): pick one with --test NAME",
            tests.len(),
            tests.into_iter().collect::<Vec<_>>().join(", ")
        )));
    }
    let s = &samples[0].sample;
    let configs: std::collections::BTreeSet<&str> =
        samples.iter().map(|s| s.sample.config.as_str()).collect();
    if configs.len() != 1 {
        return Err(BisectError::Lab(
            "a bisection follows one configuration; the configuration file has several: keep one"
                .into(),
        ));
    }
    let judged: Vec<&crate::model::Metric> = s
        .metrics
        .iter()
        .filter(|m| m.direction != crate::model::Direction::Neutral)
        .collect();
    let metric = match &lab.job.metric {
        Some(name) => judged
            .iter()
            .find(|m| &m.name == name)
            .copied()
            .ok_or_else(|| {
                BisectError::Lab(format!(
                    "test {} has no judged metric {name}; it has: {}",
                    s.test,
                    judged
                        .iter()
                        .map(|m| m.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?,
        None => {
            let headline: Vec<_> = judged.iter().filter(|m| m.headline).copied().collect();
            match headline.as_slice() {
                [one] => *one,
                _ => {
                    return Err(BisectError::Lab(format!(
                        "test {} has {} headline metrics ({}): choose the one to follow with --metric NAME",
                        s.test,
                        headline.len(),
                        headline
                            .iter()
                            .map(|m| m.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
            }
        }
    };
    Ok((
        Followed {
            test: s.test.clone(),
            metric: metric.name.clone(),
            direction: metric.direction,
            class: MetricClass::of(metric.kind),
        },
        s.config.clone(),
    ))
}

/// The lab of the real world: git archive, the build command, `fsdelta run`.
struct CliLab {
    job: Job,
    name: String,
    dir: Dir,
    cancel: crate::workload::CancelToken,
    /// Candidate trees built, oldest first (the two newest are kept: a confirmation measures a
    /// commit and its parent interleaved).
    built: Vec<PathBuf>,
    /// Kernel axis: the image built for each commit (this process's builds; a resumed bisection
    /// takes them from kbuild's cache again).
    images: std::collections::HashMap<String, PathBuf>,
    state_commits: Vec<String>,
    /// Whether the terminal was told that the guests run emulated.
    told_tcg: bool,
}

impl CliLab {
    fn commit(&self, side: Side) -> String {
        match side {
            Side::Good => self.job.good.clone(),
            Side::Bad | Side::Revert(_) => self.job.bad.clone(),
            Side::Commit(i) => self.state_commits[i].clone(),
        }
    }

    fn tree(&self, side: Side) -> PathBuf {
        match side {
            Side::Revert(i) => self.job.trees.join(format!(
                "{}-revert-{}",
                &self.job.bad[..12],
                &self.state_commits[i][..12]
            )),
            _ => self.job.trees.join(&self.commit(side)[..12]),
        }
    }

    /// The run label of a side: `bisect/NAME/COMMIT` (`.../BAD-revert-CULPRIT`), `extra` appended.
    fn label(&self, side: Side, extra: &str) -> String {
        let tree = self.tree(side);
        let leaf = tree.file_name().unwrap_or_default().to_string_lossy();
        let mut l = format!("bisect/{}/{leaf}", self.name);
        if !extra.is_empty() {
            l.push('/');
            l.push_str(extra);
        }
        l
    }

    fn interrupted(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Run `fsdelta run` on `side`'s tree: the samples of the new run, or why it failed.
    fn run(
        &mut self,
        side: Side,
        reps: u32,
        label: &str,
    ) -> Result<Result<Vec<crate::model::SampleRecord>, String>, BisectError> {
        let tree = self.tree(side);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.log_path())
            .map_err(|e| BisectError::Lab(format!("opening the log: {e}")))?;
        let exe = std::env::current_exe()
            .map_err(|e| BisectError::Lab(format!("finding fsdelta's own path: {e}")))?;
        let mut cmd = Command::new(exe);
        cmd.args(&self.job.run_args);
        if self.job.kernel.is_some() {
            let image = self.images.get(&self.image_key(side)).ok_or_else(|| {
                BisectError::Lab(format!("no kernel built for {}", self.commit(side)))
            })?;
            cmd.arg("--kernel").arg(image);
        }
        let status = cmd
            .args(["-n", &reps.to_string(), "--label", label])
            .env("FSDELTA_BISECT_TREE", &tree)
            .stdin(Stdio::null())
            .stdout(
                log.try_clone()
                    .map_err(|e| BisectError::Lab(e.to_string()))?,
            )
            .stderr(log)
            .status()
            .map_err(|e| BisectError::Lab(format!("starting fsdelta run: {e}")))?;
        if self.interrupted() || status.code() == Some(EXIT_INTERRUPTED) {
            return Err(BisectError::Interrupted);
        }
        if status.code() == Some(EXIT_ERROR) {
            return Ok(Err(format!(
                "fsdelta run (label {label}) failed; see `fsdelta bisect log {}`",
                self.name
            )));
        }
        let store = crate::store::open_read_only(&self.job.db)
            .map_err(|e| BisectError::Lab(e.to_string()))?;
        let runs = store
            .runs(&crate::store::RunFilter {
                label: Some(label.to_string()),
                limit: Some(1),
            })
            .map_err(|e| BisectError::Lab(e.to_string()))?;
        let run = runs.first().ok_or_else(|| {
            BisectError::Lab(format!("fsdelta run stored no run labelled {label}"))
        })?;
        let samples = store
            .samples(run.id)
            .map_err(|e| BisectError::Lab(e.to_string()))?;
        Ok(Ok(samples
            .into_iter()
            .filter(|s| s.sample.status == SampleStatus::Ok)
            .collect()))
    }

    /// Remove the exported trees (the cache keeps nothing of a finished bisection).
    fn clean_trees(&self) {
        let _ = std::fs::remove_dir_all(&self.job.trees);
    }

    /// The build log's first line that says "error" (a compiler's first complaint), else its
    /// last line.
    fn error_line(path: &Path) -> String {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        text.lines()
            .find(|l| l.to_ascii_lowercase().contains("error"))
            .or_else(|| text.lines().rfind(|l| !l.trim().is_empty()))
            .unwrap_or("")
            .trim()
            .to_string()
    }
}

impl CliLab {
    /// Whether `side` is built (in this process, or its tree is still exported).
    fn ready(&self, side: Side) -> bool {
        if self.job.kernel.is_some() {
            self.images.contains_key(&self.image_key(side))
        } else {
            self.tree(side).with_extension("built").is_file()
        }
    }

    /// The kernel axis: which built image measures `side` (the bad end with a culprit reverted
    /// is an image of its own).
    fn image_key(&self, side: Side) -> String {
        match side {
            Side::Revert(i) => format!("{}-revert-{}", self.job.bad, self.state_commits[i]),
            _ => self.commit(side),
        }
    }

    /// The kernel axis: build the side's commit with kbuild (cached), showing its progress; for
    /// `--revert`, the bad end with the culprit reverted in kbuild's own worktree.
    fn build_kernel(&mut self, side: Side, axis: &KernelAxis) -> Result<Built, BisectError> {
        let commit = self.commit(side);
        let key = self.image_key(side);
        let revert = match side {
            Side::Revert(i) => Some(self.state_commits[i].clone()),
            _ => None,
        };
        if let Some(r) = &revert {
            eprintln!(
                "fsdelta: building {} with {} reverted",
                &commit[..12],
                &r[..12]
            );
        }
        let req = crate::kbuild::Request {
            kernel: crate::kbuild::KernelRef {
                tree: self.job.repo.clone(),
                commit: commit.clone(),
            },
            config: axis.config.clone(),
            jobs: 0,
            revert,
        };
        let short = commit[..12].to_string();
        let mut progress =
            super::kernels::BuildProgress::stderr(format!("fsdelta: kernel {short}"));
        let result = crate::kbuild::build(&req, &mut |p| progress.show(p));
        progress.end();
        if self.interrupted() {
            return Err(BisectError::Interrupted);
        }
        match result {
            Ok(b) => {
                let how = if b.cached { "from the cache" } else { "built" };
                // The image is all `run --kernel` is given: its modules (a .config with
                // CONFIG_MODULES=y) are installed beside it, where the guest looks.
                let modules = b
                    .modules
                    .as_ref()
                    .map(|m| format!(", modules {}", m.display()))
                    .unwrap_or_default();
                let _ = self.dir.log(&format!(
                    "kernel {short}: {how}, {} ({:.0} s){modules}, log {}",
                    b.image.display(),
                    b.build_s,
                    b.log.display()
                ));
                self.images.insert(key, b.image);
                Ok(Built::Ok)
            }
            Err(e @ crate::kbuild::KbuildError::Failed { .. }) => {
                let _ = self.dir.log(&format!("build failed: {e}"));
                Ok(Built::Failed(e.to_string()))
            }
            Err(e) => Err(BisectError::Lab(e.to_string())),
        }
    }
}

impl Lab for CliLab {
    fn build(&mut self, side: Side) -> Result<Built, BisectError> {
        if let Some(axis) = self.job.kernel.clone() {
            if self.ready(side) {
                return Ok(Built::Ok);
            }
            return self.build_kernel(side, &axis);
        }
        let tree = self.tree(side);
        let done = tree.with_extension("built");
        if done.is_file() && tree.is_dir() {
            return Ok(Built::Ok);
        }
        if self.interrupted() {
            return Err(BisectError::Interrupted);
        }
        let commit = self.commit(side);
        let revert = match side {
            Side::Revert(i) => Some(self.state_commits[i].clone()),
            _ => None,
        };
        let what = match &revert {
            Some(c) => format!("{} with {} reverted", &commit[..12], &c[..12]),
            None => commit[..12].to_string(),
        };
        eprintln!("fsdelta: building {what}");
        if let Err(e) = git::export(&self.job.repo, &commit, &tree, revert.as_deref()) {
            if self.interrupted() {
                return Err(BisectError::Interrupted);
            }
            if revert.is_some() {
                return Ok(Built::Failed(e.message));
            }
            return Err(BisectError::Lab(e.to_string()));
        }
        if let Some(cmd) = &self.job.build {
            let log_path = tree.with_extension("build.log");
            let log = std::fs::File::create(&log_path)
                .map_err(|e| BisectError::Lab(format!("creating {}: {e}", log_path.display())))?;
            let status = Command::new("sh")
                .args(["-c", cmd])
                .current_dir(&tree)
                .env("FSDELTA_BISECT_TREE", &tree)
                .stdin(Stdio::null())
                .stdout(
                    log.try_clone()
                        .map_err(|e| BisectError::Lab(e.to_string()))?,
                )
                .stderr(log)
                .status()
                .map_err(|e| BisectError::Lab(format!("running the build command: {e}")))?;
            if self.interrupted() {
                return Err(BisectError::Interrupted);
            }
            if !status.success() {
                let why = format!(
                    "{what}: `{cmd}` exited with {status}: {}; log {}",
                    Self::error_line(&log_path),
                    log_path.display()
                );
                let _ = self.dir.log(&format!("build failed: {why}"));
                return Ok(Built::Failed(why));
            }
        }
        std::fs::write(&done, b"")
            .map_err(|e| BisectError::Lab(format!("writing {}: {e}", done.display())))?;
        if matches!(side, Side::Commit(_)) {
            self.built.retain(|t| t != &tree);
            self.built.push(tree);
            while self.built.len() > 2 {
                let old = self.built.remove(0);
                let _ = std::fs::remove_dir_all(&old);
                let _ = std::fs::remove_file(old.with_extension("built"));
            }
        }
        Ok(Built::Ok)
    }

    fn measure(&mut self, side: Side, reps: u32) -> Result<Measured, BisectError> {
        // A tree removed meanwhile (an older commit measured again) is exported again.
        if !self.ready(side)
            && let Built::Failed(why) = self.build(side)?
        {
            return Ok(Measured::Failed(why));
        }
        let label = self.label(side, "");
        let samples = match self.run(side, reps, &label)? {
            Ok(s) => s,
            Err(why) => return Ok(Measured::Failed(why)),
        };
        let emulated = samples
            .iter()
            .any(|s| s.sample.facts.extra.get("vm_accel").map(String::as_str) == Some("tcg"));
        if emulated {
            let note = format!(
                "{label}: the guest ran under TCG emulation (KVM could not boot it): a relative comparison of CPU paths only"
            );
            if !self.told_tcg {
                eprintln!("fsdelta: {note}");
                self.told_tcg = true;
            }
            let _ = self.dir.log(&note);
        }
        let Some(f) = &self.job.followed else {
            return Err(BisectError::Lab("no followed metric chosen".into()));
        };
        // One configuration per run (checked on the warm-up run); its name is not compared:
        // `run --kernel` names the copy after the kernel, which differs from commit to commit.
        let values: Vec<f64> = samples
            .iter()
            .filter(|s| s.sample.test == f.test)
            .filter_map(|s| s.sample.metrics.iter().find(|m| m.name == f.metric))
            .map(|m| m.value)
            .collect();
        if values.is_empty() {
            return Ok(Measured::Failed(format!(
                "run {label} has no {} of test {}",
                f.metric, f.test
            )));
        }
        Ok(Measured::Values(values))
    }
}

fn short(job: &Job, s: &State, side: Side) -> String {
    match side {
        Side::Good => format!("{} (good)", &job.good[..12]),
        Side::Bad => format!("{} (bad)", &job.bad[..12]),
        Side::Commit(i) => s.commits[i].0[..12].to_string(),
        Side::Revert(i) => format!("bad - {}", &s.commits[i].0[..12]),
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |d| format!("{d:+.1} %"))
}

/// One line per step, as printed while it runs and kept in the log.
fn step_line(job: &Job, s: &State, k: usize, step: &bisect::Step) -> String {
    let kind = match step.kind {
        StepKind::Ends => "ends",
        StepKind::Bisect => "step",
        StepKind::Confirm => "confirm",
        StepKind::Revert => "revert",
    };
    let (top, p) = step.top;
    if let StepVerdict::Skipped(why) = &step.verdict {
        return format!("{kind} {k}: {} skipped: {why}", short(job, s, step.side));
    }
    let against = if step.kind == StepKind::Confirm {
        "against its parent"
    } else {
        "against good"
    };
    format!(
        "{kind} {k}: {} {}, {} runs a side, {} {against}; most probable culprit {} at {:.1} %",
        short(job, s, step.side),
        step.verdict.word(),
        step.reps,
        pct(step.diff_pct),
        &s.commits[top].0[..12],
        100.0 * p
    )
}

/// The table of steps.
fn steps_table(job: &Job, s: &State) -> String {
    let mut rows = vec![[
        "#".to_string(),
        "step".into(),
        "commit".into(),
        "runs".into(),
        "center".into(),
        "change".into(),
        "verdict".into(),
        "top P".into(),
    ]];
    for (k, st) in s.steps.iter().enumerate() {
        let kind = match st.kind {
            StepKind::Ends => "ends",
            StepKind::Bisect => "bisect",
            StepKind::Confirm => "confirm",
            StepKind::Revert => "revert",
        };
        rows.push([
            (k + 1).to_string(),
            kind.into(),
            short(job, s, st.side),
            if st.reps == 0 {
                "-".into()
            } else {
                st.reps.to_string()
            },
            st.center.map_or("-".into(), |c| format!("{c:.4}")),
            pct(st.diff_pct),
            st.verdict.word(),
            format!("{:.1} %", 100.0 * st.top.1),
        ]);
    }
    let widths: Vec<usize> = (0..8)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The whole account: outcome, culprit, steps, and compare of culprit^ vs culprit.
fn report(dir: &Dir, saved: &Saved) -> Result<String> {
    let (job, s) = (&saved.job, &saved.state);
    let mut out = format!(
        "bisection {}: {} between {} and {} ({} candidates)\n",
        dir.name(),
        job.followed
            .as_ref()
            .map_or("(no metric yet)".into(), |f| format!(
                "{} of test {}",
                f.metric, f.test
            )),
        job.good_rev,
        job.bad_rev,
        s.commits.len()
    );
    match &s.outcome {
        None => out.push_str(&format!(
            "not finished ({} steps so far): `fsdelta bisect resume {}` continues it\n",
            s.steps.len(),
            dir.name()
        )),
        Some(Outcome::NoRegression(why)) => out.push_str(&format!("no regression: {why}\n")),
        Some(Outcome::Range {
            commits,
            probability,
            why,
        }) => {
            out.push_str(&format!(
                "no single commit: {why}; the change is in one of these {} commits ({:.1} %):\n",
                commits.len(),
                100.0 * probability
            ));
            for &c in commits {
                let (subject, _) = git::describe(&job.repo, &s.commits[c].0).unwrap_or_default();
                out.push_str(&format!("  {}  {subject}\n", &s.commits[c].0[..12]));
            }
        }
        Some(Outcome::Culprit {
            index,
            probability,
            confirmed,
            diff_pct,
            revert,
        }) => {
            let hash = &s.commits[*index].0;
            let (subject, author) = git::describe(&job.repo, hash).unwrap_or_default();
            out.push_str(&format!(
                "culprit: {hash}\n  subject: {subject}\n  author:  {author}\n  probability {:.1} %; against its parent with fresh runs: {confirmed} ({})\n",
                100.0 * probability,
                pct(*diff_pct)
            ));
            match revert {
                Some(StepVerdict::Skipped(why)) => out.push_str(&format!(
                    "  the bad end with it reverted could not be measured: {why}\n"
                )),
                Some(r) => out.push_str(&format!(
                    "  the bad end with it reverted measures: {}\n",
                    r.word()
                )),
                None => {}
            }
        }
    }
    out.push('\n');
    out.push_str(&steps_table(job, s));
    if let Some(Outcome::Culprit { index, .. }) = &s.outcome {
        out.push_str(&culprit_compare(job, s, *index, &dir.name()));
    }
    Ok(out)
}

/// The configuration of the newest run a `label:L` selector names (a bisection's runs have one).
fn config_of(store: &dyn crate::store::Store, sel: &str) -> Option<String> {
    let label = sel.strip_prefix("label:")?;
    let run = store
        .runs(&crate::store::RunFilter {
            label: Some(label.to_string()),
            limit: Some(1),
        })
        .ok()?
        .into_iter()
        .next()?;
    let samples = store.samples(run.id).ok()?;
    samples.first().map(|s| s.sample.config.clone())
}

/// `compare` of the culprit's parent and the culprit (every stored run of each), in the text
/// format fit for a mail.
fn culprit_compare(job: &Job, s: &State, index: usize, name: &str) -> String {
    let parent = s.commits[index]
        .1
        .first()
        .cloned()
        .unwrap_or_else(|| job.good.clone());
    let base = format!("label:bisect/{name}/{}", &parent[..12]);
    let cur = format!("label:bisect/{name}/{}", &s.commits[index].0[..12]);
    let Some(f) = &job.followed else {
        return String::new();
    };
    let opts = CompareArgs::closing(vec![f.test.clone()], &s.settings.margins);
    let criteria = crate::compare::Criteria {
        tests: vec![f.test.clone()],
        margins: s.settings.margins,
        ..crate::compare::Criteria::default()
    };
    let mut shown = (base.clone(), cur.clone());
    let judged = crate::store::open_read_only(&job.db)
        .map_err(anyhow::Error::from)
        .and_then(|store| {
            // A kernel bisection's runs name their configuration after the commit's kernel
            // (`run --kernel`), so the two labels share no configuration name: compare them
            // configuration against configuration (`LABEL@CONFIG`), as `compare` does for two
            // differently named configurations.
            let (b, c) = (
                config_of(store.as_ref(), &base),
                config_of(store.as_ref(), &cur),
            );
            if let (Some(b), Some(c)) = (b, c)
                && b != c
            {
                shown = (format!("{base}@{b}"), format!("{cur}@{c}"));
            }
            query::judge(store.as_ref(), &shown.0, &shown.1, &criteria)
        })
        .and_then(|(b, c, rows)| query::render_comparison(&b, &c, &rows, &opts));
    let (base, cur) = shown;
    match judged {
        Ok(text) => format!("\nculprit^ against culprit (fsdelta compare {base} {cur}):\n{text}"),
        Err(e) => format!("\n(compare {base} {cur}: {e})\n"),
    }
}
