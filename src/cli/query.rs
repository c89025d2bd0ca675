//! `list`, `show`, `compare`, `history` and `export`: wire `read` (the store, read-only) to
//! `compare` (the verdicts) to `report` (the rendering, through the one format catalogue
//! `report::format`), and write what comes back.
//!
//! This edge must never read the store itself, judge, or pick a renderer: it opens the store,
//! hands it to `read`, and passes values on.

use super::{CompareArgs, DbArg, EXIT_BISECT_SKIP, EXIT_ERROR, EXIT_OK, EXIT_REGRESSION};
use crate::compare::{
    self, Criteria,
    judge::{self, Judged},
    verdict::Verdict,
};
use crate::model::{RunInfo, SampleRecord};
use crate::read::{self, Filter, Sides};
use crate::report;
use crate::report::compare::CompareDoc;
use crate::report::format::{Doc, Format};
use crate::store::{self, Store};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

/// Every command here only reads: the store is opened read-only (nothing created or migrated).
fn open(db: &DbArg) -> Result<Box<dyn Store>> {
    Ok(store::open_read_only(&db.location())?)
}

/// Runs a selector names, each with its samples (`read::runs`).
pub(crate) fn load(store: &dyn Store, sel: &str) -> Result<Vec<(RunInfo, Vec<SampleRecord>)>> {
    Ok(read::runs(store, sel)?)
}

/// Split `SEL@CONFIG` into the selector and the configuration (`read::split_config`).
pub(crate) fn split_config(sel: &str) -> (&str, Option<&str>) {
    read::split_config(sel)
}

pub(crate) fn write_stdout(s: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to standard output"),
    }
}

/// `fsdelta list`.
pub fn list(db: &DbArg, label: Option<String>, limit: usize) -> Result<i32> {
    let store = open(db)?;
    let runs = read::list(store.as_ref(), label.clone(), limit)?;
    if runs.is_empty()
        && let Some(l) = &label
    {
        eprintln!(
            "no run has the label '{l}' in {} (see `fsdelta list` for the labels there are)",
            db.location()
        );
        return Ok(EXIT_OK);
    }
    if runs.is_empty() {
        eprintln!(
            "no runs in {} yet; start one with `fsdelta run`",
            db.location()
        );
        return Ok(EXIT_OK);
    }
    let guests = read::guest_kernels(store.as_ref(), &runs)?;
    write_stdout(&report::text::run_list(&runs, &guests))?;
    Ok(EXIT_OK)
}

/// `fsdelta show SEL`.
/// `raw`: also print each sample's raw results (only the tests named, when any are).
pub fn show(db: &DbArg, sel: &str, raw: Option<&[String]>) -> Result<i32> {
    let store = open(db)?;
    let runs = read::runs_config(store.as_ref(), sel)?;
    let mut out = String::new();
    for (r, samples) in &runs {
        out.push_str(&report::text::run_header(r));
        let guests = report::export::guest_kernels(samples);
        if !guests.is_empty() {
            out.push_str(&format!(
                "kernel under test (guest): {}\n",
                guests.join(", ")
            ));
        }
    }
    let all: Vec<&SampleRecord> = runs.iter().flat_map(|(_, s)| s.iter()).collect();
    out.push_str(&report::text::targets(&all));
    out.push_str(&report::text::workloads(&all));
    out.push_str(&report::summary::sample_order(&all));
    out.push_str(&emulated_note(&all));
    out.push('\n');
    out.push_str(&report::text::run_summary(&compare::series(&all)));
    let failed = report::text::failures(&all);
    if !failed.is_empty() {
        out.push('\n');
        out.push_str(&failed);
    }
    if let Some(tests) = raw {
        for (s, atts) in read::raw_results(store.as_ref(), &all, tests)? {
            out.push('\n');
            out.push_str(&report::text::raw_results(s, &atts));
        }
    }
    write_stdout(&out)?;
    Ok(EXIT_OK)
}

/// The label of emulated (TCG) guest samples, once, when any of `samples` has it.
fn emulated_note(samples: &[&SampleRecord]) -> String {
    samples
        .iter()
        .find_map(|s| s.sample.facts.extra.get("emulated"))
        .map(|label| format!("NOTE: guest samples {label}\n"))
        .unwrap_or_default()
}

/// The sides of a comparison, filtered by the criteria's tests and configurations.
fn sides(store: &dyn Store, base: &str, cur: &str, opts: &Criteria) -> Result<Sides> {
    let filter = Filter {
        tests: &opts.tests,
        configs: &opts.configs,
    };
    Ok(read::sides(store, base, cur, &filter)?)
}

/// Judge every paired metric of two selections (headline and secondary families under
/// Benjamini-Hochberg); shared by `compare`, `run --baseline`, a fleet agent and `report`:
/// the sides' descriptions and the judged rows, with what the current side's machine detects
/// beside each unresolved headline ([`detectable`]).
pub fn judge(
    store: &dyn Store,
    base: &str,
    cur: &str,
    opts: &Criteria,
) -> Result<(String, String, Vec<Judged>)> {
    let sides = sides(store, base, cur, opts)?;
    let opts = &with_drift(store, &sides, opts);
    let mut rows = judge::judge(&sides, opts)?;
    detectable(store, &sides, &mut rows, opts);
    Ok((sides.base.description, sides.cur.description, rows))
}

/// `criteria` with the drift between runs that the current side's machine's calibration
/// measured ([`compare::power::drift_table`] of `read::calibration::chains`), which the
/// verdict counts where the sides are different runs; unchanged when the criteria already
/// carry one, the side has no run, or the machine no calibration (a store that cannot say is
/// the same as none: the verdict is then the within-run one, as before calibrations existed).
pub fn with_drift(store: &dyn Store, sides: &Sides, criteria: &Criteria) -> Criteria {
    let mut out = criteria.clone();
    if out.drift.is_empty()
        && let Some(run) = sides.cur.runs.first()
        && let Ok(drifts) = super::calibrate::drifts_of(store, &run.environment.host)
    {
        out.drift = drifts;
    }
    out
}

/// Render a judged comparison in the chosen format (no "what differs" block: `run --baseline`
/// and the report show the sides their own way).
pub fn render_comparison(
    base: &str,
    cur: &str,
    rows: &[Judged],
    opts: &CompareArgs,
) -> Result<String> {
    render(base, cur, rows, opts, None)
}

/// Whether the rows put two configurations side by side (`SEL@A SEL@B`): their keys carry
/// "A vs B" (`compare::pair`).
fn across(rows: &[Judged]) -> bool {
    !rows.is_empty() && rows.iter().all(|j| j.key.config.contains(" vs "))
}

fn render(
    base: &str,
    cur: &str,
    rows: &[Judged],
    opts: &CompareArgs,
    context: Option<&compare::context::Context>,
) -> Result<String> {
    let summary = judge::summary(rows);
    let doc = CompareDoc {
        baseline: base,
        current: cur,
        rows,
        summary: &summary,
        all: opts.all,
        context,
        across: across(rows),
    };
    Ok(report::format::render(opts.format, &Doc::Comparison(&doc))?)
}

/// The exit code a judged comparison maps to: 1 when a gating metric (a headline metric, or
/// any with `--gate all`) regressed; with `bisect`, 125 when none regressed but a gating metric
/// is inconclusive.
pub fn exit_code(rows: &[Judged], bisect: bool) -> i32 {
    let any = |v: Verdict| {
        rows.iter()
            .any(|j| j.comparison.gates && j.comparison.verdict == v)
    };
    if any(Verdict::Regressed) {
        EXIT_REGRESSION
    } else if bisect && any(Verdict::Inconclusive) {
        EXIT_BISECT_SKIP
    } else {
        EXIT_OK
    }
}

/// The exit code of a comparison whose sides lack samples (`lacking`): a regression stands
/// (1: it was measured on the samples there are); otherwise 2, as the run that lost them ended
/// (docs/comparing.md), or with `bisect` 125 (skip: this commit cannot be judged); and it says
/// why on standard error.
fn with_missing(code: i32, lacking: bool, bisect: bool) -> i32 {
    if !lacking || code == EXIT_REGRESSION {
        return code;
    }
    eprintln!(
        "fsdelta compare: a side lacks samples (WARNING above): exit {}; the verdicts shown rest \
         on the samples that succeeded",
        if bisect { EXIT_BISECT_SKIP } else { EXIT_ERROR }
    );
    if bisect { EXIT_BISECT_SKIP } else { EXIT_ERROR }
}

/// Refuse a side of `compare` that pools runs of different machines (unless `--pool-hosts`):
/// numbers from two machines are not repetitions of one measurement.
pub fn one_host_per_side(db: &DbArg, base: &str, cur: &str) -> Result<()> {
    let store = open(db)?;
    for sel in [base, cur] {
        let hosts = read::hosts(store.as_ref(), sel)?;
        if hosts.len() > 1 {
            anyhow::bail!(
                "{sel} pools runs of {} machines ({}): their numbers are not repetitions of one \
                 measurement. Select one machine with {sel},host:NAME (see `fsdelta list`), or \
                 pass --pool-hosts to pool them anyway",
                hosts.len(),
                hosts.join(", ")
            );
        }
    }
    Ok(())
}

/// `fsdelta compare BASE CUR [CUR2 ...]`.
pub fn compare(
    db: &DbArg,
    base: &str,
    cur: &str,
    more: &[String],
    opts: &CompareArgs,
) -> Result<i32> {
    let store = open(db)?;
    if !more.is_empty() {
        return compare_many(store.as_ref(), base, cur, more, opts);
    }
    let criteria = opts.criteria();
    let sides = sides(store.as_ref(), base, cur, &criteria)?;
    let criteria = with_drift(store.as_ref(), &sides, &criteria);
    let mut rows = judge::judge(&sides, &criteria)?;
    detectable(store.as_ref(), &sides, &mut rows, &criteria);
    let ctx = judge::context_of(&sides);
    let all: Vec<&SampleRecord> = sides
        .base
        .samples
        .iter()
        .chain(&sides.cur.samples)
        .collect();
    // Text and markdown say it first; JSON carries it in each sample's facts.
    let mut out = if opts.format == Format::Json {
        String::new()
    } else {
        emulated_note(&all)
    };
    out.push_str(&render(
        &sides.base.description,
        &sides.cur.description,
        &rows,
        opts,
        Some(&ctx),
    )?);
    write_stdout(&out)?;
    let lacking = ctx.baseline_missing.any() || ctx.current_missing.any();
    Ok(with_missing(
        exit_code(&rows, opts.bisect),
        lacking,
        opts.bisect,
    ))
}

/// Beside each unchanged or inconclusive headline row, what the current side's machine detects
/// there, from its newest calibration (`cli::calibrate::annotate`; nothing without one), the
/// drift the criteria carry ([`with_drift`]) counted where the verdict counted it.
fn detectable(store: &dyn Store, sides: &Sides, rows: &mut [Judged], criteria: &Criteria) {
    if let Some(run) = sides.cur.runs.first() {
        super::calibrate::annotate(
            store,
            rows,
            &run.environment.host,
            &criteria.drift,
            &criteria.margins,
        );
    }
}

/// 3 or more sides: every other side against the first, Welch on logs throughout (one center
/// per side), one false-discovery family per role across all pairings.
fn compare_many(
    store: &dyn Store,
    base: &str,
    cur: &str,
    more: &[String],
    opts: &CompareArgs,
) -> Result<i32> {
    let criteria = opts.criteria();
    let sides = std::iter::once(cur)
        .chain(more.iter().map(String::as_str))
        .map(|c| sides(store, base, c, &criteria));
    // Each machine's drift read once, for its sides' verdicts and what it detects.
    let drifts: std::cell::RefCell<std::collections::BTreeMap<String, compare::Drifts>> =
        Default::default();
    let drift_of = |host: &str| {
        drifts
            .borrow_mut()
            .entry(host.to_string())
            .or_insert_with(|| super::calibrate::drifts_of(store, host).unwrap_or_default())
            .clone()
    };
    let mut many = compare::many::judge(sides, &criteria, |s| {
        s.cur
            .runs
            .first()
            .map(|r| drift_of(&r.environment.host))
            .unwrap_or_default()
    })?;
    // What each side's machine detects, once the verdicts are final (after the FDR control).
    for i in 0..many.sides.len() {
        if let Some(h) = many.sides[i].host.clone() {
            let d = drift_of(&h);
            super::calibrate::annotate(store, many.rows_of_mut(i), &h, &d, &criteria.margins);
        }
    }
    let code = exit_code(&many.rows, opts.bisect);
    let sides = report::compare::side_rows(&many);
    let summary = many.summary();
    let doc = report::compare::ManyDoc {
        baseline: &many.baseline,
        sides: &sides,
        summary: &summary,
        all: opts.all,
        across: many.across,
    };
    write_stdout(&report::format::render(
        opts.format,
        &Doc::Comparisons(&doc),
    )?)?;
    Ok(with_missing(code, many.lacking(), opts.bisect))
}

/// `fsdelta history`.
pub fn history(
    db: &DbArg,
    test: &str,
    metric: &str,
    config: Option<&str>,
    label_glob: Option<&str>,
    format: Format,
) -> Result<i32> {
    let store = open(db)?;
    let runs = read::metric_history(store.as_ref(), test, metric)?;
    let h = compare::history::of_runs(runs, test, metric, config, label_glob)?;
    write_stdout(&report::format::render(format, &Doc::History(&h))?)?;
    Ok(EXIT_OK)
}

/// `fsdelta export SEL`.
pub fn export(db: &DbArg, sel: &str, format: Format, output: Option<&Path>) -> Result<i32> {
    if let Some(p) = output {
        // A refused -o (a symlink, another user's file, a directory) is said before any work.
        crate::os::files::probe_output(p).context("writing the export (-o)")?;
    }
    let store = open(db)?;
    let runs = read::runs_config(store.as_ref(), sel)?;
    let text = report::format::render(format, &Doc::Runs(&runs))?;
    match output {
        // Never through a symlink, never into another user's file, never half written.
        Some(p) => crate::os::files::write_output(p, text.as_bytes())
            .with_context(|| "writing the export (-o)")?,
        None => write_stdout(&text)?,
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::guest_sample as guest;

    #[test]
    fn emulated_guest_samples_get_the_note() {
        let tcg = guest("tcg");
        let note = emulated_note(&[&guest("kvm"), &tcg]);
        assert!(
            note.starts_with("NOTE: guest samples emulated: relative comparison"),
            "{note}"
        );
        assert!(emulated_note(&[&guest("kvm")]).is_empty());
    }

    #[test]
    fn a_side_that_lacks_samples_exits_2_unless_a_regression_stands() {
        assert_eq!(with_missing(EXIT_OK, false, false), EXIT_OK);
        assert_eq!(with_missing(EXIT_OK, true, false), EXIT_ERROR);
        assert_eq!(with_missing(EXIT_OK, true, true), EXIT_BISECT_SKIP);
        assert_eq!(with_missing(EXIT_BISECT_SKIP, true, true), EXIT_BISECT_SKIP);
        assert_eq!(with_missing(EXIT_REGRESSION, true, false), EXIT_REGRESSION);
    }
}
