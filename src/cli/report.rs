//! `fsdelta report BASE CUR -o FILE.html` and `fsdelta report SEL -o FILE.html`: read the
//! sides (`read`), judge them as `compare` does, let `report::gather` say what else the report
//! needs, read that (`read::extras`), assemble and render it (`report::format`, HTML), and
//! write the file atomically.
//!
//! This edge only parses, wires and writes: reading lives in `read`, assembling in
//! `report::gather`.

use super::query::{judge, render_comparison};
use super::{CompareArgs, DbArg, EXIT_OK, MarginArgs};
use crate::read::{self, Filter, Side, split_config};
use crate::report::format::{Doc, Format};
use crate::report::{
    self,
    gather::{self, Naming, Request},
};
use crate::store::{self, Store};
use anyhow::{Context, Result};
use clap::Args;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

pub use crate::read::extras::HISTORY_RUNS;

/// Options of `fsdelta report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Write the report to this file (one self-contained HTML file).
    #[arg(short, long, value_name = "FILE.html")]
    pub output: PathBuf,
    /// Only these tests (repeatable).
    #[arg(long = "test", value_name = "NAME")]
    pub tests: Vec<String>,
    /// Only these configurations (repeatable).
    #[arg(long = "config", value_name = "NAME")]
    pub configs: Vec<String>,
    /// Only these metrics (repeatable).
    #[arg(long = "metric", value_name = "NAME")]
    pub metrics: Vec<String>,
    /// List every metric in the text table, unchanged and neutral ones too (the charts always
    /// show every metric).
    #[arg(long)]
    pub all: bool,
    /// Flame graphs with one root per thread (`fsmark-0` .. `fsmark-15`) instead of one per
    /// program (the default: a program's threads merged, the stored stacks unchanged).
    #[arg(long)]
    pub per_thread: bool,
    #[command(flatten)]
    pub margins: MarginArgs,
}

/// The flame graphs' roots `--per-thread` asks for.
pub(crate) fn threads(per_thread: bool) -> crate::report::profile::Threads {
    if per_thread {
        crate::report::profile::Threads::PerThread
    } else {
        crate::report::profile::Threads::Merged
    }
}

impl ReportArgs {
    fn compare_args(&self) -> CompareArgs {
        CompareArgs {
            format: Format::Text,
            tests: self.tests.clone(),
            configs: self.configs.clone(),
            metrics: self.metrics.clone(),
            all: self.all,
            bisect: false,
            margins: self.margins.clone(),
        }
    }
}

/// `fsdelta report`.
pub fn main(db: &DbArg, base: &str, cur: Option<&str>, args: &ReportArgs) -> Result<i32> {
    // A refused -o (a symlink, another user's file, a directory) is said before any work.
    crate::os::files::probe_output(&args.output).context("writing the report (-o)")?;
    let store = store::open_read_only(&db.location())?;
    let input = match cur {
        Some(cur) => {
            let opts = args.compare_args();
            let (bd, cd, rows) = judge(store.as_ref(), base, cur, &opts.criteria())?;
            let text_table = render_comparison(&bd, &cd, &rows, &opts)?;
            let b = load_side(store.as_ref(), base, args)?;
            let c = load_side(store.as_ref(), cur, args)?;
            let naming = Naming::new(split_config(base).1, split_config(cur).1, &b, &c);
            let metrics = gather::compared_metrics(rows);
            let mut request = Request::new(&metrics, &b.samples, &c.samples, &naming);
            request.threads = threads(args.per_thread);
            let name = |c: &str| naming.name(c);
            let extras = read::extras::read(store.as_ref(), &request.wanted(&b, &c, &name))?;
            gather::comparison(b, c, &naming, metrics, &request, extras, text_table)
        }
        None => {
            let l = load_side(store.as_ref(), base, args)?;
            let metrics = gather::single_metrics(base, &l, &args.metrics)?;
            let naming = Naming::single();
            let mut request = Request::new(&metrics, &[], &l.samples, &naming);
            request.threads = threads(args.per_thread);
            let none = Side {
                description: String::new(),
                runs: Vec::new(),
                samples: Vec::new(),
            };
            let name = |c: &str| c.to_string();
            let extras = read::extras::read(store.as_ref(), &request.wanted(&none, &l, &name))?;
            gather::single(l, metrics, &request, extras)
        }
    };
    let html = report::format::render(Format::Html, &Doc::Report(&input))?;
    write_atomically(&args.output, html.as_bytes())?;
    let tests: BTreeSet<(&str, &str)> = input
        .metrics
        .iter()
        .map(|m| (m.key.config.as_str(), m.key.test.as_str()))
        .collect();
    println!(
        "wrote {}: {} metrics of {} test{}{}",
        args.output.display(),
        input.metrics.len(),
        tests.len(),
        if tests.len() == 1 { "" } else { "s" },
        input
            .summary
            .as_ref()
            .map(|s| format!("; {}", report::compare::summary_line(s)))
            .unwrap_or_default()
    );
    Ok(EXIT_OK)
}

/// Write through a temporary file in the same directory, so a reader never sees half a report;
/// never through a symlink, never into another user's file (`os::files::write_output`).
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::os::files::write_output(path, bytes).with_context(|| "writing the report (-o)")?;
    Ok(())
}

/// One side: its runs, and its samples that pass the filters.
fn load_side(store: &dyn Store, sel: &str, args: &ReportArgs) -> Result<Side> {
    let filter = Filter {
        tests: &args.tests,
        configs: &args.configs,
    };
    Ok(read::side(store, sel, &filter)?)
}
