//! `fsdelta sync --from STORE --to STORE`: copy the runs the destination lacks (by run UUID)
//! with everything stored with them. The copy itself is `store::copy`; this only opens the two
//! stores (the source read-only), and prints what was done.

use super::EXIT_OK;
use crate::store::{self, copy};
use anyhow::{Context, Result};
use clap::Args;

/// Options of `fsdelta sync`.
#[derive(Debug, Args)]
pub struct SyncArgs {
    /// The store to copy from, only read: a SQLite file path or a postgres://USER@HOST/DB URL
    /// (as --db takes).
    #[arg(long, value_name = "PATH|URL")]
    pub from: String,
    /// The store to copy into (created when a new SQLite path), same forms.
    #[arg(long, value_name = "PATH|URL")]
    pub to: String,
}

/// How a location is shown: a URL without anything secret in it.
fn shown(location: &str) -> String {
    if store::Backend::of(location) == store::Backend::Postgres {
        store::pgconn::redact(location)
    } else {
        location.to_string()
    }
}

/// Whether two locations name the same store (the same URL, or paths of the same file).
fn same_store(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    if [a, b]
        .map(store::Backend::of)
        .contains(&store::Backend::Postgres)
    {
        return false;
    }
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// `fsdelta sync`.
pub fn main(args: &SyncArgs) -> Result<i32> {
    if same_store(&args.from, &args.to) {
        anyhow::bail!(
            "--from and --to name the same store ({}): nothing to copy; name the other store with --to",
            shown(&args.to)
        );
    }
    let from = store::open_read_only(&args.from)
        .with_context(|| format!("opening the source {} (--from)", shown(&args.from)))?;
    let mut to = store::open(&args.to)
        .with_context(|| format!("opening the destination {} (--to)", shown(&args.to)))?;
    let report = copy::copy_runs(from.as_ref(), to.as_mut())?;
    for c in &report.copied {
        eprintln!(
            "copied run {} ({}, {} samples) as run {}",
            c.source, c.label, c.samples, c.destination
        );
    }
    for r in &report.running {
        eprintln!(
            "run {} ({}) is still running in the source: not copied; sync again once it has ended (`fsdelta cleanup` on its machine marks it aborted if its fsdelta died)",
            r.id, r.label
        );
    }
    let runs = report.copied.len();
    println!(
        "copied {runs} run{} ({} samples), skipped {} already present{}",
        if runs == 1 { "" } else { "s" },
        report.samples(),
        report.already,
        if report.running.is_empty() {
            String::new()
        } else {
            format!(", {} still running", report.running.len())
        }
    );
    Ok(EXIT_OK)
}
