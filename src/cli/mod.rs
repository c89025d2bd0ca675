//! The command-line edge: clap definitions, dispatch, and the mapping of errors to exit codes
//! (0 ok / no regression, 1 regression, 2 error, 130 interrupted).
//!
//! Why a room of its own: only this edge prints to the terminal and turns typed errors into
//! messages. It must never measure, run SQL or format tables itself; it calls the rooms that do.

pub mod agent;
pub mod bisect;
pub mod calibrate;
pub mod cleanup;
pub mod dbench;
pub mod doctor;
pub mod fio;
pub mod fsmark;
pub mod guest;
pub mod import;
pub mod jobs;
pub mod kernels;
pub mod machines;
pub mod profile;
pub mod progress;
pub mod query;
pub mod report;
pub mod run;
pub mod serve;
pub mod submit;
pub mod sync;

use crate::report::format::{DocKind, Format};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Exit code: success, nothing regressed.
pub const EXIT_OK: i32 = 0;
/// Exit code: a regression was found.
pub const EXIT_REGRESSION: i32 = 1;
/// Exit code: an error (bad input, failed samples, store trouble).
pub const EXIT_ERROR: i32 = 2;
/// Exit code of `compare --bisect` when the verdict is inconclusive (git bisect's "skip").
pub const EXIT_BISECT_SKIP: i32 = 125;
/// Exit code: interrupted by SIGINT or SIGTERM.
pub const EXIT_INTERRUPTED: i32 = 130;

const AFTER_HELP: &str = "\
Examples:
  fsdelta run                          run the quick suite in a scratch directory here
  fsdelta run --label patched -n 5     five repetitions, labelled
  fsdelta compare latest~1 latest      did the last run change anything?
  fsdelta fsmark -d /mnt/t -s 0 -n 1000 -t 2

Results go to $XDG_DATA_HOME/fsdelta/results.sqlite unless --db or FSDELTA_DB says otherwise.
Exit codes: 0 ok, 1 regression found, 2 error, 130 interrupted.";

/// fsdelta: measure filesystem performance, keep every number, tell which differences are real.
#[derive(Debug, Parser)]
#[command(name = "fsdelta", version, about, long_about = None, after_help = AFTER_HELP)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Where the result store is.
#[derive(Debug, Clone, Args)]
pub struct DbArg {
    /// Result store: a SQLite file path (default $XDG_DATA_HOME/fsdelta/results.sqlite) or a
    /// postgres://USER@HOST/DB URL (passwords from PGPASSWORD or ~/.pgpass, never in the URL).
    #[arg(long, env = "FSDELTA_DB", value_name = "PATH|URL")]
    pub db: Option<String>,
}

impl DbArg {
    /// The location to open. Empty when there is no default (no HOME, no XDG_DATA_HOME):
    /// opening it then fails with a message asking for --db.
    pub fn location(&self) -> String {
        self.db.clone().unwrap_or_else(|| {
            crate::store::default_location()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
    }
}

/// A `--format` value of a command that renders `kind`: the names and help of the formats the
/// catalogue (`report::format`) lists for it, read back with `Format::from_name`.
fn format_arg(kind: DocKind) -> impl clap::builder::TypedValueParser<Value = Format> {
    let values: Vec<clap::builder::PossibleValue> = crate::report::format::formats(kind)
        .iter()
        .map(|(f, help)| clap::builder::PossibleValue::new(f.name()).help(*help))
        .collect();
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(values).map(|name: String| {
        Format::from_name(&name).expect("clap accepts only the catalogue's names")
    })
}

/// Options of `fsdelta compare` (and of `run --baseline`).
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Output format.
    #[arg(long, value_parser = format_arg(DocKind::Comparison), default_value_t = Format::Text)]
    pub format: Format,
    /// Only these tests (repeatable).
    #[arg(long = "test", value_name = "NAME")]
    pub tests: Vec<String>,
    /// Only these configurations (repeatable).
    #[arg(long = "config", value_name = "NAME")]
    pub configs: Vec<String>,
    /// Only these metrics (repeatable); with --bisect, the metrics whose verdict decides.
    #[arg(long = "metric", value_name = "NAME")]
    pub metrics: Vec<String>,
    /// List every metric, unchanged and neutral ones too.
    #[arg(long)]
    pub all: bool,
    /// Exit with git bisect run codes: 0 good, 1 bad (a gating metric regressed), 125 skip (a
    /// gating metric inconclusive).
    #[arg(long)]
    pub bisect: bool,
    #[command(flatten)]
    pub margins: MarginArgs,
}

impl CompareArgs {
    /// What the comparison looks at and how it judges, resolved (no suite file here: typed
    /// margins, else the defaults).
    pub fn criteria(&self) -> crate::compare::Criteria {
        crate::compare::Criteria {
            tests: self.tests.clone(),
            configs: self.configs.clone(),
            metrics: self.metrics.clone(),
            margins: self.margins.margins(),
            gate: self.margins.gate.gate(),
            drift: Default::default(),
        }
    }

    /// The options of a comparison a run or an agent shows when it ends: text, headline and
    /// changed metrics of `tests` (all when empty), with already resolved `margins`.
    pub fn closing(tests: Vec<String>, margins: &crate::compare::verdict::Margins) -> CompareArgs {
        CompareArgs {
            format: Format::Text,
            tests,
            configs: vec![],
            metrics: vec![],
            all: false,
            bisect: false,
            margins: MarginArgs {
                eps: Some(100.0 * margins.eps),
                delta: Some(100.0 * margins.delta_throughput),
                delta_tail: Some(100.0 * margins.delta_tail),
                delta_max: Some(100.0 * margins.delta_max),
                gate: GateChoice::Headline,
            },
        }
    }
}

/// Which engine runs the fio, fs_mark and dbench tests.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum EngineChoice {
    /// fsdelta's own engines (no external tool needed).
    Native,
    /// The real fio, fs_mark and dbench, their output parsed into the same metric names.
    External,
}

/// `run --order`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum OrderChoice {
    /// Rotate the configurations by one position every repetition.
    Rotate,
    /// Shuffle configurations and tests every repetition (seeded, recorded).
    Random,
    /// File and suite order every repetition.
    Fixed,
}

impl OrderChoice {
    /// The runner's order; `random` without `--seed` takes its seed from the clock (recorded
    /// with every sample, so the run can be repeated in the same order).
    pub fn resolve(self, seed: Option<u64>) -> crate::runner::Order {
        use crate::runner::Order;
        match self {
            OrderChoice::Rotate => Order::Rotate,
            OrderChoice::Fixed => Order::Fixed,
            OrderChoice::Random => Order::Random {
                seed: seed.unwrap_or_else(|| {
                    chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0) as u64
                }),
            },
        }
    }
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a suite and store every sample. Example: fsdelta run --label 6.18-rc1 -n 5
    Run(RunArgs),
    /// Put a job on the fleet's queue (PostgreSQL), with the full text of its suite and config.
    /// Example: fsdelta submit --db postgres://lab@db/fsdelta --label 6.18-rc1 --class nvme -n 5
    Submit(submit::SubmitArgs),
    /// Serve the store's dashboard, alerts inbox and comparisons over HTTP (docs/serve.md).
    /// Example: fsdelta serve --db postgres://lab@db/fsdelta --token-file ~/.fsdelta-token
    Serve(serve::ServeArgs),
    /// Take jobs from the fleet's queue and run them here, as `fsdelta run` would. Example:
    /// fsdelta agent --db postgres://lab@db/fsdelta --class nvme
    Agent(agent::AgentArgs),
    /// Find the commit that made a test slower, with repetitions and a probability per commit.
    /// Example: fsdelta bisect --repo ~/src/prog --build make --good v1 --bad v2 --suite s.toml
    Bisect(bisect::BisectArgs),
    /// The fleet's queue: list jobs, `jobs cancel ID`, `jobs reap`. Example: fsdelta jobs --state running
    Jobs(jobs::JobsArgs),
    /// What a quiet benchmark machine should change here, with the command for each; --apply
    /// changes it (recorded), --revert undoes it. Example: fsdelta doctor
    Doctor(doctor::DoctorArgs),
    /// Run the suite 3 times (--runs K) as A/A, keep the runs (label calibrate) and print per
    /// headline metric its noise, its drift between runs (which compare counts) and the smallest
    /// change this machine detects with 3, 5, 10, 20 runs a side. Example:
    /// fsdelta calibrate --test smallfiles -n 5
    Calibrate(calibrate::CalibrateArgs),
    /// The fleet's machines and their health; `machines clear NAME` lets an unhealthy one take
    /// jobs again. Example: fsdelta machines
    Machines(machines::MachinesArgs),
    /// List stored runs, newest first. Example: fsdelta list --limit 10
    List {
        /// Only runs with this label.
        #[arg(long)]
        label: Option<String>,
        /// At most this many runs.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[command(flatten)]
        db: DbArg,
    },
    /// Show one run (or a pooled selection): environment, targets, every metric. Example:
    /// fsdelta show latest
    Show {
        /// Runs: an id, latest, latest~N or label:TEXT.
        sel: String,
        /// Also print the raw results kept with each sample: fs_mark's per-iteration table, a
        /// command test's stdout and stderr. `--output` is the same flag.
        #[arg(long, visible_alias = "output")]
        raw: bool,
        /// With --raw: only this test's samples (repeatable).
        #[arg(long = "test", requires = "raw")]
        tests: Vec<String>,
        #[command(flatten)]
        db: DbArg,
    },
    /// Compare two run selections metric by metric, with a verdict each (regressed, improved,
    /// unchanged, inconclusive). Exit 1 when a headline metric regressed (--gate all: any).
    /// With 3 or more selections the first is the baseline of every other. Example:
    /// fsdelta compare label:6.17 label:6.18-rc1 --test smallfiles
    Compare {
        /// Baseline runs: an id, latest, latest~N or label:TEXT (pooled); SEL@CONFIG takes one
        /// configuration, to put two configurations side by side.
        base: String,
        /// Current runs, same forms.
        cur: String,
        /// More current sides, each compared with the baseline (a table with one diff and
        /// verdict column per side).
        more: Vec<String>,
        #[command(flatten)]
        opts: CompareArgs,
        /// Under the verdicts, for each regressed or improved test, the symbols whose CPU share
        /// changed most and a hint (profiles recorded with `run --profile`).
        #[arg(long)]
        profile: bool,
        /// Let one side pool runs made on different machines (by default refused: they are
        /// not repetitions of one measurement).
        #[arg(long)]
        pool_hosts: bool,
        #[command(flatten)]
        db: DbArg,
    },
    /// Top symbols of the CPU profiles that `run --profile` recorded, by self and total share,
    /// kernel [k] and user [.], like perf top. Example: fsdelta profile latest --test emptyfiles
    Profile(profile::ProfileArgs),
    /// A metric's history over runs (median of each run's repetitions) with its change points.
    /// Example: fsdelta history --test smallfiles --metric files_per_sec
    History {
        /// The test.
        #[arg(long)]
        test: String,
        /// The metric.
        #[arg(long)]
        metric: String,
        /// The configuration (required when the test ran on several).
        #[arg(long)]
        config: Option<String>,
        /// Only runs whose label matches this glob (`*`, `?`).
        #[arg(long, value_name = "PAT")]
        label_glob: Option<String>,
        /// Output format.
        #[arg(long, value_parser = format_arg(DocKind::History), default_value_t = Format::Text)]
        format: Format,
        #[command(flatten)]
        db: DbArg,
    },
    /// Write one self-contained HTML report (inline SVG charts, no network): what differs
    /// between the sides, verdicts, diff charts, latency percentiles, history. Example:
    /// fsdelta report latest~1 latest -o report.html
    Report {
        /// Baseline runs (an id, latest, latest~N or label:TEXT; SEL@CONFIG takes one
        /// configuration), or the only runs of a single-selection report.
        base: String,
        /// Current runs, same forms; leave out for a report of one selection.
        cur: Option<String>,
        #[command(flatten)]
        args: report::ReportArgs,
        #[command(flatten)]
        db: DbArg,
    },
    /// Import results that a tool already produced. Example:
    /// fsdelta import fio-json results.json --label 6.17
    Import {
        /// What is imported.
        #[command(subcommand)]
        what: ImportKind,
    },
    /// Copy the runs another store lacks (known by their UUID), with their samples, metrics,
    /// histograms, profiles and attachments; runs still running are left for a later sync.
    /// Example: fsdelta sync --from results.sqlite --to postgres://lab@db/fsdelta
    Sync(sync::SyncArgs),
    /// Export every stored number of a selection. Example: fsdelta export latest --format csv
    Export {
        /// Runs: an id, latest, latest~N or label:TEXT.
        sel: String,
        /// Output format.
        #[arg(long, value_parser = format_arg(DocKind::Runs), default_value_t = Format::Json)]
        format: Format,
        /// Write to this file instead of standard output.
        #[arg(short, long)]
        output: Option<PathBuf>,
        #[command(flatten)]
        db: DbArg,
    },
    /// Print a shell completion script. Example: fsdelta completions bash > /etc/bash_completion.d/fsdelta
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) generated from these definitions. Example: fsdelta man | man -l -
    Man,
    /// List the kernels fsdelta can boot in a guest for a configuration's kernel = "PATH": the
    /// host's, those used before, cached Debian packages. Example: fsdelta kernels
    Kernels,
    /// The guest side of a configuration with a kernel (started by the guest's /init).
    #[command(hide = true)]
    GuestRun {
        /// The job file.
        job: PathBuf,
        /// Where the samples go (the guest's second serial port).
        out: PathBuf,
    },
    /// Undo mounts, loop devices and images that a killed fsdelta left behind (recorded in its
    /// state file). Example: fsdelta cleanup
    Cleanup,
    /// The native fs_mark-compatible engine on its own: takes fs_mark 3.3's flags and prints its
    /// output format (workers are threads, not processes). Example: fsdelta fsmark -d /mnt/t -s 0 -n 1000
    #[command(disable_help_flag = true)]
    Fsmark {
        /// fs_mark's own flags (see `fsdelta fsmark -h`), plus --json.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The native fio-compatible engine on its own: runs fio job files (or fio's --name=...
    /// command-line jobs) and prints fio's normal or JSON output. Example:
    /// fsdelta fio job.fio --output-format=json
    #[command(disable_help_flag = true)]
    Fio {
        /// Job files, --output-format=normal|json, --output=FILE, and fio's --name=... options.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The native dbench-compatible engine on its own: takes dbench 4.00's flags and prints its
    /// output format (clients are threads). Example: fsdelta dbench -D /mnt/t -t 60 4
    #[command(disable_help_flag = true)]
    Dbench {
        /// dbench's own flags and NPROCS (see `fsdelta dbench -h`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// What `fsdelta import` reads.
#[derive(Debug, Subcommand)]
pub enum ImportKind {
    /// fio's `--output-format=json` (or json+): one sample per job (per group with
    /// group_reporting), named and computed as the native fio engine's metrics.
    FioJson {
        /// The JSON file.
        file: PathBuf,
        /// Label of the new run.
        #[arg(long)]
        label: String,
        /// Configuration name to file the samples under.
        #[arg(long, default_value = "imported")]
        config: String,
        #[command(flatten)]
        db: DbArg,
    },
}

/// Options of `fsdelta run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Suite: built-in quick (minutes) or fsperf (fsperf's tests, hours at scale 1), or a suite
    /// file FILE.toml of your own tests.
    #[arg(long, default_value = "quick")]
    pub suite: String,
    /// Shrink the fsperf suite's sizes and times by this factor (0 < SCALE <= 1) for small
    /// machines; recorded in the run's suite name.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Run in a scratch directory created inside DIR (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub target: Option<PathBuf>,
    /// Only this test (repeatable).
    #[arg(long = "test", value_name = "NAME")]
    pub tests: Vec<String>,
    /// Repetitions of every test.
    #[arg(short = 'n', long = "repeat", default_value_t = 3)]
    pub repeat: u32,
    /// Label of the run (default: the kernel release).
    #[arg(long)]
    pub label: Option<String>,
    /// Configuration file (TOML): loop images, devices, mkfs and mount options; every test runs
    /// on every configuration. See examples/.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Only this configuration of --config (repeatable; run in the order given). Two names
    /// compare the second with the first at the end (exit 1 on a regression), and with
    /// --until-confident repeat until that comparison is resolved (an A/A: unchanged).
    #[arg(long = "config-name", value_name = "NAME", requires = "config")]
    pub config_names: Vec<String>,
    /// Run every configuration (or, without --config, ext4 on a 2 GiB loop image) once per
    /// kernel, each in a QEMU guest of that kernel (`host` runs on this machine), and compare
    /// the first kernel with each other at the end, exit 1 on a regression (repeatable; a
    /// bzImage, vmlinux, build tree or linux-image .deb; see `fsdelta kernels`; or TREE@COMMIT,
    /// a commit of a kernel git tree, built first and cached: /src/linux@v6.17).
    #[arg(long = "kernel", value_name = "KERNEL")]
    pub kernels: Vec<PathBuf>,
    /// Keep the page cache between samples (by default, as root, it is dropped before each).
    #[arg(long)]
    pub no_drop_caches: bool,
    /// Compare with these runs when the run ends and exit like `compare` (1 on a regression).
    #[arg(long, value_name = "SEL")]
    pub baseline: Option<String>,
    /// Record a CPU profile (perf record -e cpu-clock -a -g, Debian package linux-perf) of each
    /// sample: always (the default), first (first repetition only), or optional (go on without
    /// profiles when perf cannot record). See `fsdelta profile` and `compare --profile`.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "always"
    )]
    pub profile: Option<profile::ProfileMode>,
    /// Whose CPU time a profile keeps: workload+kthreads (the workload's process and children,
    /// and kernel threads), workload, or system (everything, idle included). perf records the
    /// whole machine; the scope is applied from perf's task records when it is folded.
    #[arg(
        long,
        value_enum,
        value_name = "SCOPE",
        default_value = "workload+kthreads"
    )]
    pub profile_scope: profile::ProfileScopeArg,
    /// Count kernel tracepoints during each sample, on every CPU, only while the workload
    /// runs (comma-separated GROUP:NAME, a glob in the name: 'btrfs:*,kmem:kmalloc'); stored
    /// as neutral metrics event:GROUP:NAME. Needs root or kernel.perf_event_paranoid=-1.
    #[arg(long, value_name = "LIST")]
    pub events: Option<String>,
    /// A tracefs filter on one counted event, GROUP:NAME:EXPRESSION (repeatable), e.g.
    /// 'ext4:ext4_da_write_begin:dev == 7340032' (fields: tracefs events/GROUP/NAME/format).
    #[arg(long = "events-filter", value_name = "FILTER")]
    pub events_filter: Vec<String>,
    /// Engine of the fio, fs_mark and dbench tests: native, or external (the real tools,
    /// installed from Debian's fio, fsmark and dbench packages); other tests stay native.
    #[arg(long, value_enum, default_value_t = EngineChoice::Native)]
    pub engine: EngineChoice,
    /// After -n repetitions, keep adding repetitions of each test until its headline metric is
    /// resolved (with --baseline: a verdict other than inconclusive; without: the 95 % interval
    /// of its mean inside the unchanged band), up to --max-repeat. Starts with more than -n
    /// when the machine's newest calibration (`fsdelta calibrate`) plans more.
    #[arg(long)]
    pub until_confident: bool,
    /// Most repetitions with --until-confident (at least 1).
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_repeat: u32,
    /// With --until-confident: leave a sample measured under disturbance (others' I/O, a
    /// page-cache drop, other processes' CPU) out of the decision and repeat its test, instead
    /// of keeping it (said in its `disturbance` fact).
    #[arg(long, requires = "until_confident")]
    pub repeat_disturbed: bool,
    /// Order of configurations (and, for random, of tests) within each repetition: rotate
    /// (every configuration takes every position in turn), random (shuffled with --seed,
    /// recorded), or fixed (file order, as before).
    #[arg(long, value_enum, default_value_t = OrderChoice::Rotate)]
    pub order: OrderChoice,
    /// Seed of --order random (default: taken from the clock and recorded with every sample).
    #[arg(long)]
    pub seed: Option<u64>,
    /// No progress output.
    #[arg(short, long)]
    pub quiet: bool,
    #[command(flatten)]
    pub compare: MarginArgs,
    #[command(flatten)]
    pub db: DbArg,
}

/// Verdict margins, in percent. Each is `None` unless typed, so that a typed value wins over
/// a suite file's `[margins]` even when it equals the default (resolved once, in
/// [`MarginArgs::resolve`]).
#[derive(Debug, Clone, Args)]
pub struct MarginArgs {
    /// Smallest change worth reporting, percent [default: 2].
    #[arg(long, value_name = "PCT")]
    pub eps: Option<f64>,
    /// "Unchanged" band for throughput and mean metrics, percent [default: 5].
    #[arg(long, value_name = "PCT")]
    pub delta: Option<f64>,
    /// "Unchanged" band for tail percentiles (p90 and up), percent [default: 10].
    #[arg(long, value_name = "PCT")]
    pub delta_tail: Option<f64>,
    /// "Unchanged" band for maxima, percent [default: 20].
    #[arg(long, value_name = "PCT")]
    pub delta_max: Option<f64>,
    /// Which verdicts set the exit code: the workloads' headline metrics (Benjamini-Hochberg
    /// q = 0.05 across the comparison), or all judged metrics (headline and secondary).
    #[arg(long, value_enum, value_name = "WHICH", default_value_t = GateChoice::Headline)]
    pub gate: GateChoice,
}

/// `--gate`: which metrics' verdicts set the exit code.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum GateChoice {
    /// The workloads' headline metrics.
    Headline,
    /// Every judged metric.
    All,
}

impl GateChoice {
    /// As `compare::verdict::Gate`.
    pub fn gate(self) -> crate::compare::verdict::Gate {
        match self {
            GateChoice::Headline => crate::compare::verdict::Gate::Headline,
            GateChoice::All => crate::compare::verdict::Gate::All,
        }
    }
}

impl MarginArgs {
    /// The margins as fractions, for `compare::verdict`: what was typed, else what the suite
    /// file says, else statistics.md's defaults.
    pub fn resolve(
        &self,
        suite: &crate::plan::suite::SuiteMargins,
    ) -> crate::compare::verdict::Margins {
        use crate::compare::verdict as v;
        let pick = |typed: Option<f64>, from_suite: Option<f64>, default: f64| {
            typed.or(from_suite).map_or(default, |pct| pct / 100.0)
        };
        v::Margins {
            eps: pick(self.eps, suite.eps, v::DEFAULT_EPS),
            delta_throughput: pick(self.delta, suite.delta, v::DEFAULT_DELTA_THROUGHPUT),
            delta_tail: pick(self.delta_tail, suite.delta_tail, v::DEFAULT_DELTA_TAIL),
            delta_max: pick(self.delta_max, suite.delta_max, v::DEFAULT_DELTA_MAX),
        }
    }

    /// The margins with no suite file: typed, else the defaults.
    pub fn margins(&self) -> crate::compare::verdict::Margins {
        self.resolve(&crate::plan::suite::SuiteMargins::default())
    }
}

/// Turn SIGINT and SIGTERM into a cancel request for the running workload; a second signal,
/// while it is stopping, ends the process at once with exit code 130. Every command that runs a
/// workload installs it, so Ctrl-C behaves the same everywhere.
pub fn install_signals() -> std::io::Result<crate::workload::CancelToken> {
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, EXIT_INTERRUPTED, flag.clone())?;
        signal_hook::flag::register(sig, flag.clone())?;
    }
    Ok(crate::workload::CancelToken::from_flag(flag))
}

/// The signal handling of `fsdelta run`, which owns mounts, loop devices and a run record: the
/// first and the second SIGINT/SIGTERM only ask the run to stop (GNU `timeout` sends one to
/// the process and one to its group, and both must still lead to unmounting, detaching and an
/// `aborted` run); a third ends the process at once with exit code 130 (`fsdelta cleanup`
/// undoes what is left).
pub fn install_run_signals() -> std::io::Result<crate::workload::CancelToken> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let cancel = Arc::new(AtomicBool::new(false));
    let second = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Handlers run in the order registered: exit if two came before, note a second, cancel.
        signal_hook::flag::register_conditional_shutdown(sig, EXIT_INTERRUPTED, second.clone())?;
        let (c, s) = (cancel.clone(), second.clone());
        // SAFETY: the handler only loads and stores atomics, which is async-signal-safe.
        unsafe {
            signal_hook::low_level::register(sig, move || {
                if c.load(Ordering::SeqCst) {
                    s.store(true, Ordering::SeqCst);
                }
            })?;
        }
        signal_hook::flag::register(sig, cancel.clone())?;
    }
    Ok(crate::workload::CancelToken::from_flag(cancel))
}

/// Entry point; returns the process exit code.
pub fn main() -> i32 {
    match parse() {
        Ok(cli) => dispatch(cli),
        Err(code) => code,
    }
}

/// Read the command line; on an error (or `--help`), print it and return the exit code. A
/// PostgreSQL URL in clap's message (an argument it did not expect) is printed without its
/// password.
pub fn parse() -> Result<Cli, i32> {
    Cli::try_parse().map_err(|e| {
        let code = if e.use_stderr() { EXIT_ERROR } else { EXIT_OK };
        if e.use_stderr() {
            eprint!(
                "{}",
                crate::store::pgconn::redact_text(&e.render().to_string())
            );
        } else {
            let _ = e.print();
        }
        code
    })
}

/// Run the command `cli` names and return the exit code; an error is printed once, any
/// PostgreSQL URL in it without its password.
pub fn dispatch(cli: Cli) -> i32 {
    let result = match cli.command {
        Command::Fsmark { args } => return fsmark::main(&args),
        Command::Cleanup => return cleanup::main(),
        Command::Kernels => kernels::main(),
        Command::Bisect(args) => bisect::main(args),
        Command::GuestRun { job, out } => guest::main(&job, &out),
        Command::Fio { args } => return fio::main(&args),
        Command::Dbench { args } => return dbench::main(&args),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "fsdelta", &mut std::io::stdout());
            Ok(EXIT_OK)
        }
        Command::Man => {
            let cmd = <Cli as clap::CommandFactory>::command();
            clap_mangen::Man::new(cmd)
                .render(&mut std::io::stdout())
                .map(|_| EXIT_OK)
                .map_err(anyhow::Error::from)
        }
        Command::Run(args) => run::main(args),
        Command::Submit(args) => submit::main(&args),
        Command::Serve(args) => serve::main(&args),
        Command::Agent(args) => agent::main(&args),
        Command::Jobs(args) => jobs::main(&args),
        Command::Doctor(args) => doctor::main(&args),
        Command::Calibrate(args) => calibrate::main(&args),
        Command::Machines(args) => machines::main(&args),
        Command::List { label, limit, db } => query::list(&db, label, limit),
        Command::Show {
            sel,
            raw,
            tests,
            db,
        } => query::show(&db, &sel, raw.then_some(&tests[..])),
        Command::Compare {
            base,
            cur,
            more,
            opts,
            profile,
            pool_hosts,
            db,
        } => (|| {
            if !pool_hosts {
                query::one_host_per_side(&db, &base, &cur)?;
                for m in &more {
                    query::one_host_per_side(&db, &base, m)?;
                }
            }
            match (profile, more.is_empty()) {
                (true, true) => profile::compare(&db, &base, &cur, &opts),
                (true, false) => Err(anyhow::anyhow!(
                    "compare --profile takes two sides; leave out --profile to compare 3 or more"
                )),
                (false, _) => query::compare(&db, &base, &cur, &more, &opts),
            }
        })(),
        Command::Profile(args) => profile::main(&args),
        Command::History {
            test,
            metric,
            config,
            label_glob,
            format,
            db,
        } => query::history(
            &db,
            &test,
            &metric,
            config.as_deref(),
            label_glob.as_deref(),
            format,
        ),
        Command::Report {
            base,
            cur,
            args,
            db,
        } => report::main(&db, &base, cur.as_deref(), &args),
        Command::Import {
            what:
                ImportKind::FioJson {
                    file,
                    label,
                    config,
                    db,
                },
        } => import::fio_json(&db, &file, &label, &config),
        Command::Sync(args) => sync::main(&args),
        Command::Export {
            sel,
            format,
            output,
            db,
        } => query::export(&db, &sel, format, output.as_deref()),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "fsdelta: {}",
                crate::store::pgconn::redact_text(&format!("{e:#}"))
            );
            EXIT_ERROR
        }
    }
}

#[cfg(test)]
mod margin_tests {
    use super::*;
    use crate::plan::suite::SuiteMargins;

    #[test]
    fn a_typed_margin_wins_over_the_suite_file_even_when_it_equals_the_default() {
        let typed = MarginArgs {
            eps: Some(2.0),
            delta: None,
            delta_tail: None,
            delta_max: None,
            gate: GateChoice::Headline,
        };
        let suite = SuiteMargins {
            eps: Some(5.0),
            delta: Some(7.0),
            ..SuiteMargins::default()
        };
        let m = typed.resolve(&suite);
        assert!((m.eps - 0.02).abs() < 1e-12);
        assert!((m.delta_throughput - 0.07).abs() < 1e-12);
        assert!((m.delta_tail - crate::compare::verdict::DEFAULT_DELTA_TAIL).abs() < 1e-12);
    }
}
