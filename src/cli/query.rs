//! `list`, `show`, `compare` and `export`: read the store, hand records to `compare` and
//! `report`, write what they return.

use super::{CompareFormat, DbArg, EXIT_OK, ExportFormat};
use crate::compare;
use crate::report;
use crate::store::{self, RunFilter, RunInfo, SampleRecord, Selector, Store};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

fn open(db: &DbArg) -> Result<Box<dyn Store>> {
    Ok(store::open(&db.location())?)
}

/// Runs a selector names, each with its samples.
fn load(store: &dyn Store, sel: &str) -> Result<Vec<(RunInfo, Vec<SampleRecord>)>> {
    let sel: Selector = sel.parse()?;
    let runs = store.select(&sel)?;
    runs.into_iter()
        .map(|r| {
            let samples = store.samples(r.id)?;
            Ok((r, samples))
        })
        .collect()
}

fn describe(sel: &str, runs: &[(RunInfo, Vec<SampleRecord>)]) -> String {
    let ids: Vec<String> = runs.iter().map(|(r, _)| r.id.to_string()).collect();
    let labels: Vec<&str> = {
        let mut l: Vec<&str> = runs.iter().map(|(r, _)| r.label.as_str()).collect();
        l.dedup();
        l
    };
    format!(
        "{sel} (run{} {}, label {})",
        if ids.len() > 1 { "s" } else { "" },
        ids.join(","),
        labels.join(",")
    )
}

fn write_stdout(s: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to standard output"),
    }
}

/// `fsdelta list`.
pub fn list(db: &DbArg, label: Option<String>, limit: usize) -> Result<i32> {
    let store = open(db)?;
    let runs = store.runs(&RunFilter {
        label,
        limit: Some(limit),
    })?;
    if runs.is_empty() {
        eprintln!(
            "no runs in {} yet; start one with `fsdelta run`",
            db.location()
        );
        return Ok(EXIT_OK);
    }
    write_stdout(&report::text::run_list(&runs))?;
    Ok(EXIT_OK)
}

/// `fsdelta show SEL`.
pub fn show(db: &DbArg, sel: &str) -> Result<i32> {
    let store = open(db)?;
    let runs = load(store.as_ref(), sel)?;
    let mut out = String::new();
    for (r, _) in &runs {
        out.push_str(&report::text::run_header(r));
    }
    let all: Vec<&SampleRecord> = runs.iter().flat_map(|(_, s)| s.iter()).collect();
    out.push_str(&report::text::targets(&all));
    out.push_str(&report::text::workloads(&all));
    out.push('\n');
    out.push_str(&report::text::run_summary(&compare::series(&all)));
    let failed = report::text::failures(&all);
    if !failed.is_empty() {
        out.push('\n');
        out.push_str(&failed);
    }
    write_stdout(&out)?;
    Ok(EXIT_OK)
}

/// `fsdelta compare BASE CUR`.
pub fn compare(
    db: &DbArg,
    base: &str,
    cur: &str,
    format: CompareFormat,
    tests: &[String],
    configs: &[String],
) -> Result<i32> {
    let store = open(db)?;
    let b = load(store.as_ref(), base)?;
    let c = load(store.as_ref(), cur)?;
    let keep = |s: &&SampleRecord| {
        (tests.is_empty() || tests.contains(&s.sample.test))
            && (configs.is_empty() || configs.contains(&s.sample.config))
    };
    let bs: Vec<&SampleRecord> = b.iter().flat_map(|(_, s)| s.iter()).filter(keep).collect();
    let cs: Vec<&SampleRecord> = c.iter().flat_map(|(_, s)| s.iter()).filter(keep).collect();
    if bs.is_empty() || cs.is_empty() {
        anyhow::bail!(
            "nothing to compare: {} has {} matching samples and {} has {}; check --test/--config against `fsdelta show`",
            base,
            bs.len(),
            cur,
            cs.len()
        );
    }
    let pairs = compare::pair(&compare::series(&bs), &compare::series(&cs), false);
    let (bd, cd) = (describe(base, &b), describe(cur, &c));
    let text = match format {
        CompareFormat::Text => report::text::compare_table(&bd, &cd, &pairs),
        CompareFormat::Json => {
            let doc = serde_json::json!({
                "schema_version": report::export::EXPORT_SCHEMA_VERSION,
                "baseline": bd,
                "current": cd,
                "metrics": pairs.iter().map(|p| serde_json::json!({
                    "config": p.key.config,
                    "test": p.key.test,
                    "metric": p.key.metric,
                    "unit": p.unit,
                    "direction": p.direction,
                    "baseline": p.base,
                    "current": p.cur,
                    "baseline_mean": finite(p.base_mean()),
                    "current_mean": finite(p.cur_mean()),
                    "diff_pct": finite(p.diff_pct()),
                })).collect::<Vec<_>>(),
            });
            format!("{}\n", serde_json::to_string_pretty(&doc)?)
        }
    };
    write_stdout(&text)?;
    Ok(EXIT_OK)
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

/// `fsdelta export SEL`.
pub fn export(db: &DbArg, sel: &str, format: ExportFormat, output: Option<&Path>) -> Result<i32> {
    let store = open(db)?;
    let runs = load(store.as_ref(), sel)?;
    let text = match format {
        ExportFormat::Json => report::export::json(&runs)?,
        ExportFormat::Csv => report::export::csv(&runs),
    };
    match output {
        Some(p) => std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?,
        None => write_stdout(&text)?,
    }
    Ok(EXIT_OK)
}
