//! `list`, `show`, `compare` and `export`: read the store, hand records to `compare` and
//! `report`, write what they return.

use super::{
    CompareArgs, CompareFormat, DbArg, EXIT_BISECT_SKIP, EXIT_OK, EXIT_REGRESSION, ExportFormat,
    HistoryFormat,
};
use crate::compare::{
    self,
    verdict::{self, Margins, MetricClass, Verdict},
};
use crate::report;
use crate::report::compare::{CompareDoc, Judged};
use crate::store::{self, RunFilter, RunInfo, SampleRecord, Selector, Store};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

fn open(db: &DbArg) -> Result<Box<dyn Store>> {
    Ok(store::open(&db.location())?)
}

/// Runs a selector names, each with its samples.
pub(crate) fn load(store: &dyn Store, sel: &str) -> Result<Vec<(RunInfo, Vec<SampleRecord>)>> {
    let sel: Selector = sel.parse()?;
    let runs = store.select(&sel)?;
    runs.into_iter()
        .map(|r| {
            let samples = store.samples(r.id)?;
            Ok((r, samples))
        })
        .collect()
}

pub(crate) fn describe(sel: &str, runs: &[(RunInfo, Vec<SampleRecord>)]) -> String {
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
    out.push_str(&report::summary::sample_order(&all));
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

/// Split `SEL@CONFIG` into the selector and the configuration (the last `@` counts).
pub(crate) fn split_config(sel: &str) -> (&str, Option<&str>) {
    match sel.rsplit_once('@') {
        Some((s, c)) if !s.is_empty() && !c.is_empty() => (s, Some(c)),
        _ => (sel, None),
    }
}

/// Judge every paired metric of two selections; shared by `compare` and `run --baseline`.
pub fn judge(
    store: &dyn Store,
    base: &str,
    cur: &str,
    opts: &CompareArgs,
) -> Result<(String, String, Vec<Judged>)> {
    let (base_sel, base_cfg) = split_config(base);
    let (cur_sel, cur_cfg) = split_config(cur);
    let b = load(store, base_sel)?;
    let c = load(store, cur_sel)?;
    fn keep(opts: &CompareArgs, cfg: Option<&str>, s: &SampleRecord) -> bool {
        (opts.tests.is_empty() || opts.tests.contains(&s.sample.test))
            && (opts.configs.is_empty() || opts.configs.contains(&s.sample.config))
            && cfg.is_none_or(|c| s.sample.config == c)
    }
    let bs: Vec<&SampleRecord> = b
        .iter()
        .flat_map(|(_, s)| s.iter())
        .filter(|s| keep(opts, base_cfg, s))
        .collect();
    let cs: Vec<&SampleRecord> = c
        .iter()
        .flat_map(|(_, s)| s.iter())
        .filter(|s| keep(opts, cur_cfg, s))
        .collect();
    if bs.is_empty() || cs.is_empty() {
        anyhow::bail!(
            "nothing to compare: {base} has {} matching samples and {cur} has {}; check --test/--config and SEL@CONFIG against `fsdelta show`",
            bs.len(),
            cs.len()
        );
    }
    let across = base_cfg.is_some() || cur_cfg.is_some();
    let across = across && base_cfg != cur_cfg;
    let margins: Margins = opts.margins.margins();
    for (name, v) in [
        ("--eps", margins.eps),
        ("--delta", margins.delta_throughput),
        ("--delta-tail", margins.delta_tail),
        ("--delta-max", margins.delta_max),
    ] {
        if !(v.is_finite() && v > 0.0 && v < 10.0) {
            anyhow::bail!(
                "{name} must be a percentage between 0 and 1000, not {}",
                v * 100.0
            );
        }
    }
    let rows = compare::pair(&compare::series(&bs), &compare::series(&cs), across)
        .into_iter()
        .filter(|p| opts.metrics.is_empty() || opts.metrics.contains(&p.key.metric))
        .filter(|p| !p.base.is_empty() && !p.cur.is_empty())
        .map(|p| {
            let class = MetricClass::of(p.kind);
            let comparison = verdict::compare(&p.base, &p.cur, p.direction, class, &margins);
            Judged {
                key: p.key.clone(),
                unit: p.unit,
                kind: p.kind,
                headline: p.headline,
                baseline_values: p.base.clone(),
                current_values: p.cur.clone(),
                comparison,
            }
        })
        .collect::<Vec<_>>();
    if rows.is_empty() {
        anyhow::bail!("no metric is present on both sides; check --metric against `fsdelta show`");
    }
    Ok((describe(base, &b), describe(cur, &c), rows))
}

/// Render a judged comparison in the chosen format.
pub fn render_comparison(
    base: &str,
    cur: &str,
    rows: &[Judged],
    opts: &CompareArgs,
) -> Result<String> {
    let comparisons: Vec<_> = rows.iter().map(|j| j.comparison.clone()).collect();
    let summary = verdict::summarize(&comparisons);
    let doc = CompareDoc {
        baseline: base,
        current: cur,
        rows,
        summary: &summary,
        all: opts.all,
    };
    Ok(match opts.format {
        CompareFormat::Text => report::compare::text(&doc),
        CompareFormat::Markdown => report::compare::markdown(&doc),
        CompareFormat::Json => report::compare::json(&doc)?,
    })
}

/// The exit code a judged comparison maps to.
pub fn exit_code(rows: &[Judged], bisect: bool) -> i32 {
    let any = |v: Verdict| rows.iter().any(|j| j.comparison.verdict == v);
    if any(Verdict::Regressed) {
        EXIT_REGRESSION
    } else if bisect && any(Verdict::Inconclusive) {
        EXIT_BISECT_SKIP
    } else {
        EXIT_OK
    }
}

/// Refuse a side of `compare` that pools runs of different machines (unless `--pool-hosts`):
/// numbers from two machines are not repetitions of one measurement.
pub fn one_host_per_side(db: &DbArg, base: &str, cur: &str) -> Result<()> {
    let store = open(db)?;
    for sel in [base, cur] {
        let parsed: Selector = split_config(sel).0.parse()?;
        let mut hosts: Vec<String> = store
            .select(&parsed)?
            .into_iter()
            .map(|r| r.environment.host)
            .collect();
        hosts.sort();
        hosts.dedup();
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

/// `fsdelta compare BASE CUR`.
pub fn compare(db: &DbArg, base: &str, cur: &str, opts: &CompareArgs) -> Result<i32> {
    let store = open(db)?;
    let (bd, cd, rows) = judge(store.as_ref(), base, cur, opts)?;
    write_stdout(&render_comparison(&bd, &cd, &rows, opts)?)?;
    Ok(exit_code(&rows, opts.bisect))
}

/// `fsdelta history`.
pub fn history(
    db: &DbArg,
    test: &str,
    metric: &str,
    config: Option<&str>,
    label_glob: Option<&str>,
    format: HistoryFormat,
) -> Result<i32> {
    let store = open(db)?;
    // One query for the series (not every sample of every run), then one record per value.
    let points = store.metric_points(test, metric)?;
    let mut runs = store.runs(&RunFilter::default())?;
    runs.reverse();
    let mut loaded = Vec::new();
    let mut configs: Vec<String> = Vec::new();
    for r in runs {
        if r.status == crate::model::RunStatus::Running {
            continue;
        }
        if label_glob.is_some_and(|g| !compare::history::glob_match(g, &r.label)) {
            continue;
        }
        let samples: Vec<SampleRecord> = points
            .iter()
            .filter(|p| p.run_id == r.id)
            .map(|p| SampleRecord::of_point(p, test))
            .collect();
        for s in &samples {
            if !configs.contains(&s.sample.config) {
                configs.push(s.sample.config.clone());
            }
        }
        loaded.push((r, samples));
    }
    if configs.is_empty() {
        anyhow::bail!(
            "no stored run of test '{test}' has metric '{metric}'; `fsdelta list` and `fsdelta show latest` list the runs and metrics"
        );
    }
    if config.is_none() && configs.len() > 1 {
        anyhow::bail!(
            "test '{test}' ran on several configurations ({}); choose one with --config",
            configs.join(", ")
        );
    }
    let h = compare::history::build(&loaded, test, metric, config);
    if h.points.is_empty() {
        anyhow::bail!(
            "no stored run of test '{test}' has metric '{metric}'{}; `fsdelta show latest` lists the metrics",
            config.map(|c| format!(" on {c}")).unwrap_or_default()
        );
    }
    let text = match format {
        HistoryFormat::Text => report::history::text(&h),
        HistoryFormat::Json => {
            let mut s = serde_json::to_string_pretty(&serde_json::json!({
                "schema_version": report::export::EXPORT_SCHEMA_VERSION,
                "history": h,
            }))?;
            s.push('\n');
            s
        }
    };
    write_stdout(&text)?;
    Ok(EXIT_OK)
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
