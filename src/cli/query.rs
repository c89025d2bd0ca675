//! `list`, `show`, `compare` and `export`: read the store, hand records to `compare` and
//! `report`, write what they return.

use super::{
    CompareArgs, CompareFormat, DbArg, EXIT_BISECT_SKIP, EXIT_OK, EXIT_REGRESSION, ExportFormat,
    HistoryFormat,
};
use crate::compare::{
    self, Criteria,
    context::Context as SidesContext,
    verdict::{self, Margins, Methods, MetricClass, Verdict},
};
use crate::model::SampleStatus;
use crate::report;
use crate::report::compare::{CompareDoc, Judged};
use crate::store::{self, RunFilter, RunInfo, SampleRecord, Selector, Store};
use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;

/// Every command here only reads: the store is opened read-only (nothing created or migrated).
fn open(db: &DbArg) -> Result<Box<dyn Store>> {
    Ok(store::open_read_only(&db.location())?)
}

/// Runs a selector names, each with its samples.
pub(crate) fn load(store: &dyn Store, sel: &str) -> Result<Vec<(RunInfo, Vec<SampleRecord>)>> {
    let sel: Selector = sel.parse()?;
    let runs = store.select(&sel)?;
    let ids: Vec<_> = runs.iter().map(|r| r.id).collect();
    let samples = store.samples_of_runs(&ids)?;
    Ok(runs.into_iter().zip(samples).collect())
}

/// [`load`] for `SEL` or `SEL@CONFIG` (only that configuration's samples), as `compare` takes.
pub(crate) fn load_config(
    store: &dyn Store,
    sel: &str,
) -> Result<Vec<(RunInfo, Vec<SampleRecord>)>> {
    let (s, cfg) = split_config(sel);
    let mut runs = load(store, s)?;
    if let Some(cfg) = cfg {
        for (_, samples) in &mut runs {
            samples.retain(|x| x.sample.config == cfg);
        }
        if runs.iter().all(|(_, s)| s.is_empty()) {
            anyhow::bail!(
                "no sample of configuration '{cfg}' in '{s}' (SEL@CONFIG names a configuration of the run; see `fsdelta show {s}`)"
            );
        }
    }
    Ok(runs)
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
        label: label.clone(),
        limit: Some(limit),
    })?;
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
    write_stdout(&report::text::run_list(&runs))?;
    Ok(EXIT_OK)
}

/// `fsdelta show SEL`.
/// `raw`: also print each sample's raw results (only the tests named, when any are).
pub fn show(db: &DbArg, sel: &str, raw: Option<&[String]>) -> Result<i32> {
    let store = open(db)?;
    let runs = load_config(store.as_ref(), sel)?;
    let mut out = String::new();
    for (r, _) in &runs {
        out.push_str(&report::text::run_header(r));
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
        for s in all
            .iter()
            .filter(|s| s.sample.status == SampleStatus::Ok)
            .filter(|s| tests.is_empty() || tests.contains(&s.sample.test))
        {
            let atts = store.attachments(s.id)?;
            out.push('\n');
            out.push_str(&report::text::raw_results(s, &atts));
        }
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

/// The two sides of a comparison as loaded, filtered by --test, --config and SEL@CONFIG.
pub(crate) struct Sides {
    /// Baseline description (`latest (run 7, label x)`).
    pub base_desc: String,
    /// Current description.
    pub cur_desc: String,
    /// Baseline runs.
    pub base_runs: Vec<RunInfo>,
    /// Current runs.
    pub cur_runs: Vec<RunInfo>,
    /// Baseline samples kept.
    pub base_samples: Vec<SampleRecord>,
    /// Current samples kept.
    pub cur_samples: Vec<SampleRecord>,
    /// Two configurations put side by side (SEL@A vs SEL@B).
    pub across: bool,
}

fn load_sides(store: &dyn Store, base: &str, cur: &str, opts: &Criteria) -> Result<Sides> {
    let (base_sel, base_cfg) = split_config(base);
    let (cur_sel, cur_cfg) = split_config(cur);
    let b = load(store, base_sel)?;
    let c = load(store, cur_sel)?;
    fn keep(opts: &Criteria, cfg: Option<&str>, s: &SampleRecord) -> bool {
        (opts.tests.is_empty() || opts.tests.contains(&s.sample.test))
            && (opts.configs.is_empty() || opts.configs.contains(&s.sample.config))
            && cfg.is_none_or(|c| s.sample.config == c)
    }
    let bs: Vec<SampleRecord> = b
        .iter()
        .flat_map(|(_, s)| s.iter())
        .filter(|s| keep(opts, base_cfg, s))
        .cloned()
        .collect();
    let cs: Vec<SampleRecord> = c
        .iter()
        .flat_map(|(_, s)| s.iter())
        .filter(|s| keep(opts, cur_cfg, s))
        .cloned()
        .collect();
    if bs.is_empty() || cs.is_empty() {
        anyhow::bail!(
            "nothing to compare: {base} has {} matching samples and {cur} has {}; check --test/--config and SEL@CONFIG against `fsdelta show`",
            bs.len(),
            cs.len()
        );
    }
    for (sel, side) in [(base, &bs), (cur, &cs)] {
        one_accelerator(sel, side)?;
    }
    let across = (base_cfg.is_some() || cur_cfg.is_some()) && base_cfg != cur_cfg;
    Ok(Sides {
        base_desc: describe(base, &b),
        cur_desc: describe(cur, &c),
        base_runs: b.into_iter().map(|(r, _)| r).collect(),
        cur_runs: c.into_iter().map(|(r, _)| r).collect(),
        base_samples: bs,
        cur_samples: cs,
        across,
    })
}

/// Refuse a side that pools samples made under different accelerators (TCG emulation and KVM):
/// emulated numbers compare CPU paths only, and are no repetitions of hardware-virtualised ones.
fn one_accelerator(sel: &str, side: &[SampleRecord]) -> Result<()> {
    let mut accels: Vec<&str> = side
        .iter()
        .filter_map(|s| s.sample.facts.extra.get("vm_accel").map(String::as_str))
        .collect();
    accels.sort();
    accels.dedup();
    if accels.len() > 1 {
        anyhow::bail!(
            "{sel} pools guest samples made under {}: emulated (TCG) and hardware-virtualised \
             (KVM) numbers are not repetitions of one measurement; select runs made under one \
             accelerator (`fsdelta show` names each sample's vm_accel)",
            accels.join(" and ")
        );
    }
    Ok(())
}

/// The label of emulated (TCG) guest samples, once, when any of `samples` has it.
fn emulated_note(samples: &[&SampleRecord]) -> String {
    samples
        .iter()
        .find_map(|s| s.sample.facts.extra.get("emulated"))
        .map(|label| format!("NOTE: guest samples {label}\n"))
        .unwrap_or_default()
}

fn check_margins(margins: &Margins) -> Result<()> {
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
    Ok(())
}

/// Per-metric verdicts of one pairing (no false discovery control yet).
fn judge_sides(sides: &Sides, opts: &Criteria, methods: Methods) -> Result<Vec<Judged>> {
    let margins: Margins = opts.margins;
    check_margins(&margins)?;
    let bs: Vec<&SampleRecord> = sides.base_samples.iter().collect();
    let cs: Vec<&SampleRecord> = sides.cur_samples.iter().collect();
    let rows = compare::pair(&compare::series(&bs), &compare::series(&cs), sides.across)
        .into_iter()
        .filter(|p| opts.metrics.is_empty() || opts.metrics.contains(&p.key.metric))
        .filter(|p| !p.base.is_empty() && !p.cur.is_empty())
        .map(|p| {
            let class = MetricClass::of(p.kind);
            let comparison =
                verdict::compare_with(&p.base, &p.cur, p.direction, class, &margins, methods);
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
    Ok(rows)
}

/// Benjamini-Hochberg per family (headline, secondary) over every row of a comparison, and
/// which rows gate the exit code.
fn control(rows: &mut [Judged], opts: &Criteria) {
    let mut items: Vec<verdict::Judging<'_>> = rows
        .iter_mut()
        .map(|j| verdict::Judging {
            group: (j.key.config.as_str(), j.key.test.as_str()),
            headline: j.headline,
            comparison: &mut j.comparison,
        })
        .collect();
    verdict::judge_family(&mut items, opts.gate);
}

/// Judge every paired metric of two selections (headline and secondary families under
/// Benjamini-Hochberg); shared by `compare`, `run --baseline` and `report`.
pub fn judge(
    store: &dyn Store,
    base: &str,
    cur: &str,
    opts: &Criteria,
) -> Result<(String, String, Vec<Judged>)> {
    let sides = load_sides(store, base, cur, opts)?;
    let mut rows = judge_sides(&sides, opts, Methods::Auto)?;
    control(&mut rows, opts);
    Ok((sides.base_desc, sides.cur_desc, rows))
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

fn render(
    base: &str,
    cur: &str,
    rows: &[Judged],
    opts: &CompareArgs,
    context: Option<&SidesContext>,
) -> Result<String> {
    let comparisons: Vec<_> = rows.iter().map(|j| j.comparison.clone()).collect();
    let summary = verdict::summarize(&comparisons);
    let doc = CompareDoc {
        baseline: base,
        current: cur,
        rows,
        summary: &summary,
        all: opts.all,
        context,
    };
    Ok(match opts.format {
        CompareFormat::Text => report::compare::text(&doc),
        CompareFormat::Markdown => report::compare::markdown(&doc),
        CompareFormat::Json => report::compare::json(&doc)?,
    })
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
    let sides = load_sides(store.as_ref(), base, cur, &criteria)?;
    let mut rows = judge_sides(&sides, &criteria, Methods::Auto)?;
    control(&mut rows, &criteria);
    let ctx = context_of(&sides);
    let all: Vec<&SampleRecord> = sides
        .base_samples
        .iter()
        .chain(&sides.cur_samples)
        .collect();
    // Text and markdown say it first; JSON carries it in each sample's facts.
    let mut out = if opts.format == CompareFormat::Json {
        String::new()
    } else {
        emulated_note(&all)
    };
    out.push_str(&render(
        &sides.base_desc,
        &sides.cur_desc,
        &rows,
        opts,
        Some(&ctx),
    )?);
    write_stdout(&out)?;
    Ok(exit_code(&rows, opts.bisect))
}

fn context_of(sides: &Sides) -> SidesContext {
    let bs: Vec<&SampleRecord> = sides.base_samples.iter().collect();
    let cs: Vec<&SampleRecord> = sides.cur_samples.iter().collect();
    compare::context::context(
        &compare::context::SideData {
            runs: &sides.base_runs,
            samples: &bs,
        },
        &compare::context::SideData {
            runs: &sides.cur_runs,
            samples: &cs,
        },
        sides.across,
    )
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
    let mut all: Vec<Judged> = Vec::new();
    let mut spans = Vec::new();
    let mut descs = Vec::new();
    let mut contexts = Vec::new();
    let mut base_desc = String::new();
    for c in std::iter::once(cur).chain(more.iter().map(String::as_str)) {
        let sides = load_sides(store, base, c, &criteria)?;
        let rows = judge_sides(&sides, &criteria, Methods::WelchOnly)?;
        base_desc = sides.base_desc.clone();
        descs.push(sides.cur_desc.clone());
        contexts.push(context_of(&sides));
        spans.push(all.len()..all.len() + rows.len());
        all.extend(rows);
    }
    control(&mut all, &criteria);
    let code = exit_code(&all, opts.bisect);
    let sides: Vec<report::compare::SideRows<'_>> = spans
        .into_iter()
        .zip(&descs)
        .zip(&contexts)
        .map(|((span, d), ctx)| report::compare::SideRows {
            description: d,
            rows: &all[span],
            context: ctx,
        })
        .collect();
    let comparisons: Vec<_> = all.iter().map(|j| j.comparison.clone()).collect();
    let summary = verdict::summarize(&comparisons);
    let doc = report::compare::ManyDoc {
        baseline: &base_desc,
        sides: &sides,
        summary: &summary,
        all: opts.all,
    };
    let out = match opts.format {
        CompareFormat::Text => report::compare::many_text(&doc),
        CompareFormat::Markdown => report::compare::many_markdown(&doc),
        CompareFormat::Json => report::compare::many_json(&doc)?,
    };
    write_stdout(&out)?;
    Ok(code)
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
    if let Some(p) = output {
        // A refused -o (a symlink, another user's file, a directory) is said before any work.
        crate::os::files::probe_output(p).context("writing the export (-o)")?;
    }
    let store = open(db)?;
    let runs = load_config(store.as_ref(), sel)?;
    let text = match format {
        ExportFormat::Json => report::export::json(&runs)?,
        ExportFormat::Csv => report::export::csv(&runs),
    };
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
    use crate::model::{NewSample, SampleStatus, SiteFacts};

    fn guest(accel: &str) -> SampleRecord {
        let mut facts = SiteFacts::default();
        facts.extra.insert("vm_accel".into(), accel.into());
        if accel == "tcg" {
            facts
                .extra
                .insert("emulated".into(), crate::vm::EMULATED_LABEL.into());
        }
        SampleRecord {
            id: 1,
            run_id: 1,
            sample: NewSample {
                config: "k".into(),
                test: "t".into(),
                repetition: 1,
                sequence: 1,
                facts,
                status: SampleStatus::Ok,
                error: None,
                started_at: chrono::Utc::now(),
                duration_s: 1.0,
                workload: String::new(),
                metrics: vec![],
                histograms: vec![],
                attachments: Vec::new(),
            },
        }
    }

    #[test]
    fn a_side_pooling_tcg_and_kvm_samples_is_refused_and_one_accelerator_passes() {
        let e = one_accelerator("label:x", &[guest("tcg"), guest("kvm")]).unwrap_err();
        assert!(e.to_string().contains("kvm and tcg"), "{e}");
        one_accelerator("label:x", &[guest("tcg"), guest("tcg")]).unwrap();
        let tcg = guest("tcg");
        let note = emulated_note(&[&guest("kvm"), &tcg]);
        assert!(
            note.starts_with("NOTE: guest samples emulated: relative comparison"),
            "{note}"
        );
        assert!(emulated_note(&[&guest("kvm")]).is_empty());
    }
}
