//! `fsdelta submit`: put a job on the fleet's queue, with the full text of its suite and
//! configuration (the agent's machine need not have the files). The texts are parsed here first,
//! so a typo fails at once instead of on a lab machine at night; an agent parses them again and
//! fails the job with the parse error if they still do not read.

use super::{DbArg, EXIT_OK};
use crate::plan::{config, suite, suitefile};
use crate::queue::{NewJob, Placement, Queue};
use anyhow::{Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};

/// Options of `fsdelta submit`.
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// Suite: a built-in name (quick, fsperf) or a suite file FILE.toml, sent as text.
    #[arg(long, default_value = "quick")]
    pub suite: String,
    /// Configuration file (TOML), sent as text; without it the agent runs in a scratch
    /// directory.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Label of the run the job makes.
    #[arg(long)]
    pub label: String,
    /// Repetitions of every test.
    #[arg(short = 'n', long = "repeat", default_value_t = 3)]
    pub repeat: u32,
    /// Only this test (repeatable).
    #[arg(long = "test", value_name = "NAME")]
    pub tests: Vec<String>,
    /// Only agents of this class may run it.
    #[arg(long, value_name = "CLASS", group = "placement")]
    pub class: Option<String>,
    /// Only the agent of this name (or on the machine of this host name) may run it.
    #[arg(long, value_name = "NAME", group = "placement")]
    pub host: Option<String>,
    /// One job for every agent of this class that has registered.
    #[arg(long, value_name = "CLASS", group = "placement")]
    pub every_class: Option<String>,
    /// Compare the job's run with these runs when it ends and keep the verdict.
    #[arg(long, value_name = "SEL")]
    pub baseline: Option<String>,
    /// Attempts before a job whose agents keep vanishing is failed.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub max_attempts: u32,
    #[command(flatten)]
    pub db: DbArg,
}

/// `fsdelta submit`.
pub fn main(args: &SubmitArgs) -> Result<i32> {
    let path = Path::new(&args.suite);
    let (suite_name, suite_text) = if args.suite.ends_with(".toml") || path.is_file() {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading suite file {}", path.display()))?;
        let s = suitefile::parse(&text, &args.suite)?;
        s.select(&args.tests)?;
        (
            path.file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| args.suite.clone()),
            Some(text),
        )
    } else {
        suite::builtin(&args.suite)?.select(&args.tests)?;
        (args.suite.clone(), None)
    };
    let (config_name, config_text) = match &args.config {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("reading config file {}", p.display()))?;
            config::parse(&text, &p.display().to_string())?;
            (
                Some(
                    p.file_name()
                        .map(|f| f.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                ),
                Some(text),
            )
        }
        None => (None, None),
    };
    let placement = match (&args.class, &args.host, &args.every_class) {
        (Some(c), _, _) => Placement::Class(c.clone()),
        (_, Some(h), _) => Placement::Host(h.clone()),
        (_, _, Some(c)) => Placement::EveryClass(c.clone()),
        _ => Placement::Any,
    };
    if let Some(b) = &args.baseline {
        let (sel, _) = super::query::split_config(b);
        sel.parse::<crate::store::Selector>()?;
    }
    let mut q = Queue::open(&args.db.location())?;
    let ids = q.submit(&NewJob {
        label: args.label.clone(),
        suite_name,
        suite_text,
        config_name,
        config_text,
        tests: args.tests.clone(),
        repeat: args.repeat,
        placement,
        baseline: args.baseline.clone(),
        max_attempts: args.max_attempts,
    })?;
    for id in &ids {
        println!("{id}");
    }
    eprintln!(
        "fsdelta: submitted job{} {}; `fsdelta jobs` shows the queue",
        if ids.len() > 1 { "s" } else { "" },
        ids.iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(EXIT_OK)
}
