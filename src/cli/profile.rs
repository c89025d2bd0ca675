//! Profiles at the command-line edge: `fsdelta profile SEL --test NAME` (top symbols),
//! `fsdelta compare ... --profile` (symbol deltas and a hint under the verdicts), and the
//! `--profile` flag of `fsdelta run` (the runner records the profiles).
//!
//! Why a file of its own: the run loop and `compare` must stay readable, so everything that
//! profiling adds to them lives here behind a few calls. Like the rest of `cli`, it must never
//! analyse a profile itself (that is `report::profile`) nor drive perf (that is
//! `probe::profile`).

use super::{CompareArgs, DbArg, EXIT_OK, query};
use crate::compare::judge::Judged;
use crate::compare::verdict::Verdict;
use crate::probe::profile::Profile;
use crate::read::extras::profiles as pooled;
use crate::report;
use crate::report::format::Format;
use crate::store::{self, Store};
use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use std::fmt::Write;
use std::path::PathBuf;

/// Which samples `run --profile` records.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ProfileMode {
    /// Every sample; the run stops with an error when perf cannot record.
    Always,
    /// The first repetition of each test only; the run stops when perf cannot record.
    First,
    /// Every sample when perf can record; without perf or permission the run goes on without
    /// profiles.
    Optional,
}

impl From<ProfileMode> for crate::runner::ProfileMode {
    fn from(m: ProfileMode) -> Self {
        match m {
            ProfileMode::Always => crate::runner::ProfileMode::Always,
            ProfileMode::First => crate::runner::ProfileMode::First,
            ProfileMode::Optional => crate::runner::ProfileMode::Optional,
        }
    }
}

/// Whose CPU time `run --profile` keeps.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ProfileScopeArg {
    /// The workload's process, its children, and kernel threads (kworker, flush, btrfs-*).
    #[value(name = "workload+kthreads")]
    WorkloadKthreads,
    /// The workload's process and its children only.
    Workload,
    /// The whole machine, as `perf record -a` gives it.
    System,
}

impl From<ProfileScopeArg> for crate::probe::profile::ProfileScope {
    fn from(m: ProfileScopeArg) -> Self {
        use crate::probe::profile::ProfileScope as S;
        match m {
            ProfileScopeArg::WorkloadKthreads => S::WorkloadKthreads,
            ProfileScopeArg::Workload => S::Workload,
            ProfileScopeArg::System => S::System,
        }
    }
}

/// Options of `fsdelta profile`.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Runs: an id, latest, latest~N or label:TEXT (their profiles are pooled).
    pub sel: String,
    /// The test whose profiles to show.
    #[arg(long = "test", value_name = "NAME")]
    pub test: String,
    /// Only this configuration (default: every configuration, each on its own).
    #[arg(long = "config", value_name = "NAME")]
    pub config: Option<String>,
    /// How many symbols to list.
    #[arg(long, default_value_t = 25)]
    pub limit: usize,
    /// Also write a flame graph (SVG) of the pooled profiles to FILE.
    #[arg(long, value_name = "FILE")]
    pub flamegraph: Option<PathBuf>,
    /// The flame graph with one root per thread (default: a program's threads merged).
    #[arg(long)]
    pub per_thread: bool,
    #[command(flatten)]
    pub db: DbArg,
}

/// `fsdelta profile SEL --test NAME [--config NAME]`.
pub fn main(args: &ProfileArgs) -> Result<i32> {
    let store = store::open_read_only(&args.db.location())?;
    let runs = query::load(store.as_ref(), &args.sel)?;
    let mut configs: Vec<&str> = runs
        .iter()
        .flat_map(|(_, s)| s.iter())
        .filter(|s| s.sample.test == args.test)
        .map(|s| s.sample.config.as_str())
        .filter(|c| args.config.as_deref().is_none_or(|want| want == *c))
        .collect();
    configs.sort();
    configs.dedup();
    if configs.is_empty() {
        anyhow::bail!(
            "{} has no sample of test '{}'{}; see `fsdelta show {}`",
            args.sel,
            args.test,
            args.config
                .as_deref()
                .map(|c| format!(" on configuration '{c}'"))
                .unwrap_or_default(),
            args.sel
        );
    }
    let mut out = String::new();
    let mut all = Profile::default();
    for config in configs {
        let (p, n) = pooled(store.as_ref(), &runs, &args.test, |c| c == config)?;
        if n == 0 {
            let _ = writeln!(
                out,
                "{} ({config}): no profile stored; record one with `fsdelta run --test {} --profile`\n",
                args.test, args.test
            );
            continue;
        }
        let title = format!(
            "{} ({config}), {n} profile{} of {}",
            args.test,
            if n == 1 { "" } else { "s" },
            args.sel
        );
        out.push_str(&report::profile::top_text(&title, &p, args.limit));
        out.push('\n');
        all.merge(&p);
    }
    if all.is_empty() {
        anyhow::bail!(
            "no profile stored for test '{}' in {}; record them with `fsdelta run --test {} --profile`",
            args.test,
            args.sel,
            args.test
        );
    }
    if let Some(path) = &args.flamegraph {
        let svg = report::profile::flamegraph_svg(
            &all,
            &format!("{} in {}", args.test, args.sel),
            super::report::threads(args.per_thread),
        )
        .context("drawing the flame graph")?;
        crate::os::files::write_output(path, svg.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        let _ = writeln!(out, "flame graph: {}", path.display());
    }
    query::write_stdout(&out)?;
    Ok(EXIT_OK)
}

/// `fsdelta compare BASE CUR --profile`: the comparison, then for each test with profiles on
/// both sides the symbols whose CPU share changed beyond the repetitions' spread (judged as
/// metrics are, by `compare::profile`), with callers and a hint.
pub fn compare(db: &DbArg, base: &str, cur: &str, opts: &CompareArgs) -> Result<i32> {
    if opts.format == Format::Json {
        anyhow::bail!(
            "compare --profile adds a text section; use --format text (the default) or markdown with --profile"
        );
    }
    let store = store::open_read_only(&db.location())?;
    let criteria = opts.criteria();
    let (bd, cd, rows) = query::judge(store.as_ref(), base, cur, &criteria)?;
    let mut out = query::render_comparison(&bd, &cd, &rows, opts)?;
    let section = changed_profiles(store.as_ref(), base, cur, &rows, &criteria.margins)?;
    if opts.format == Format::Markdown {
        // The 80-column section keeps its alignment in a fenced block.
        out.push_str("\n```");
        out.push_str(&section);
        out.push_str("```\n");
    } else {
        out.push_str(&section);
    }
    query::write_stdout(&out)?;
    Ok(query::exit_code(&rows, opts.bisect))
}

/// How many named symbols to show per test.
const DELTAS_SHOWN: usize = 10;

/// The profiles of the samples of `runs` that ran `test` on a configuration `keep` accepts, one
/// per sample that has one.
fn per_sample(
    store: &dyn Store,
    runs: &[(crate::store::RunInfo, Vec<crate::store::SampleRecord>)],
    test: &str,
    keep: impl Fn(&str) -> bool,
) -> Result<Vec<Profile>> {
    let mut out = Vec::new();
    for s in runs.iter().flat_map(|(_, s)| s.iter()) {
        if s.sample.test != test || !keep(&s.sample.config) {
            continue;
        }
        if let Some(stored) = store.profile(s.id)? {
            out.push(Profile::decode(&stored).with_context(|| {
                format!(
                    "profile of sample {} (run {}); `fsdelta compare` without --profile still works",
                    s.id, s.run_id
                )
            })?);
        }
    }
    Ok(out)
}

/// One test of the section: its key, the words of its changed metrics, and its profiles.
struct Explained<'a> {
    config: &'a str,
    test: &'a str,
    verdicts: Vec<String>,
    base: Vec<Profile>,
    cur: Vec<Profile>,
}

fn changed_profiles(
    store: &dyn Store,
    base: &str,
    cur: &str,
    rows: &[Judged],
    margins: &crate::compare::verdict::Margins,
) -> Result<String> {
    let (base_sel, base_cfg) = query::split_config(base);
    let (cur_sel, cur_cfg) = query::split_config(cur);
    let across = (base_cfg.is_some() || cur_cfg.is_some()) && base_cfg != cur_cfg;
    let b = query::load(store, base_sel)?;
    let c = query::load(store, cur_sel)?;
    let changed =
        |j: &&Judged| matches!(j.comparison.verdict, Verdict::Regressed | Verdict::Improved);
    // Tests with a changed metric first, then the others, each once.
    let mut tests: Vec<(&str, &str)> = Vec::new();
    for j in rows.iter().filter(changed).chain(rows.iter()) {
        let k = (j.key.config.as_str(), j.key.test.as_str());
        if !tests.contains(&k) {
            tests.push(k);
        }
    }
    let mut shown: Vec<Explained<'_>> = Vec::new();
    for (config, test) in tests {
        let side = |cfg: Option<&str>| -> Option<String> {
            match cfg {
                Some(c) => Some(c.to_string()),
                None if across => None,
                None => Some(config.to_string()),
            }
        };
        let (bc, cc) = (side(base_cfg), side(cur_cfg));
        let bp = per_sample(store, &b, test, |c| bc.as_deref().is_none_or(|w| w == c))?;
        let cp = per_sample(store, &c, test, |c| cc.as_deref().is_none_or(|w| w == c))?;
        let verdicts: Vec<String> = rows
            .iter()
            .filter(changed)
            .filter(|j| j.key.config == config && j.key.test == test)
            .map(|j| {
                format!(
                    "{} {} {}",
                    j.key.metric,
                    match j.comparison.verdict {
                        Verdict::Regressed => "regressed",
                        _ => "improved",
                    },
                    j.comparison
                        .diff_pct
                        .map(|d| format!("{d:+.1} %"))
                        .unwrap_or_default()
                )
            })
            .collect();
        // A test whose metrics did not change and that has no profile has nothing to say.
        if verdicts.is_empty() && (bp.is_empty() || cp.is_empty()) {
            continue;
        }
        shown.push(Explained {
            config,
            test,
            verdicts,
            base: bp,
            cur: cp,
        });
    }
    let judged = crate::compare::profile::judge(
        &shown
            .iter()
            .map(|e| (e.base.clone(), e.cur.clone()))
            .collect::<Vec<_>>(),
        margins,
    );
    let mut out =
        String::from("\nCPU profiles, each symbol's share judged across the repetitions\n");
    if shown.is_empty() {
        out.push_str("  no test has profiles on both sides and no test regressed or improved\n");
        return Ok(out);
    }
    let tested: usize = judged.iter().map(|v| v.tested.len()).sum();
    let named: usize = judged.iter().map(|v| v.named().count()).sum();
    out.push_str(&report::profile::wrap(
        &format!(
            "{tested} symbols tested in {} test{}, {named} named; a symbol is named when its \
             share changed by at least {} points and beyond the spread of the repetitions \
             (Welch on the shares' logs, Benjamini-Hochberg at q <= {} over all symbols tested)",
            shown.len(),
            if shown.len() == 1 { "" } else { "s" },
            crate::compare::profile::MIN_NAMED_POINTS,
            crate::compare::verdict::FDR_Q,
        ),
        2,
    ));
    for (e, v) in shown.iter().zip(&judged) {
        let (bn, cn) = (e.base.len(), e.cur.len());
        let what = if e.verdicts.is_empty() {
            "no metric changed".to_string()
        } else {
            let more = match e.verdicts.len() {
                n if n > 2 => format!(" and {} more", n - 2),
                _ => String::new(),
            };
            format!("{}{more}", e.verdicts[..e.verdicts.len().min(2)].join(", "))
        };
        let _ = writeln!(out, "\n{} ({}): {what}", e.test, e.config);
        if bn == 0 || cn == 0 {
            let _ = writeln!(
                out,
                "  no profile on the {} side ({bn} baseline, {cn} current); record them with `fsdelta run --test {} --profile`",
                if bn == 0 { "baseline" } else { "current" },
                e.test
            );
            continue;
        }
        let pool = |ps: &[Profile]| {
            let mut p = Profile::default();
            ps.iter().for_each(|x| p.merge(x));
            p
        };
        out.push_str(&report::profile::judged_text(
            v,
            &pool(&e.base),
            &pool(&e.cur),
            DELTAS_SHOWN,
        ));
    }
    Ok(out)
}
