//! Renderers of a comparison with verdicts: 80-column text for mailing lists, markdown, and JSON
//! carrying intervals and p-values.
//!
//! Pure functions from [`Judged`] rows (compare's, `compare::judge`) to `String`, chosen through
//! the catalogue `report::format`; they must never compute statistics themselves (that is
//! `compare::verdict`) nor read the store.

use crate::compare::SeriesKey;
use crate::compare::context::Context;
use crate::compare::judge::Judged;
use crate::compare::verdict::{self, Center, Comparison, Method, Role, Summary, Verdict};
use crate::report::text::{clip, fmt_value};
use serde::Serialize;
use std::fmt::Write;

/// Header and the rows to show.
pub struct CompareDoc<'a> {
    /// Description of the baseline selection.
    pub baseline: &'a str,
    /// Description of the current selection.
    pub current: &'a str,
    /// Every judged metric (the renderers filter by `all`).
    pub rows: &'a [Judged],
    /// Counts over every judged metric.
    pub summary: &'a Summary,
    /// List every metric, secondary unchanged, inconclusive and neutral ones too.
    pub all: bool,
    /// What differs between the sides, printed first (`None`: not shown, as after `run`).
    pub context: Option<&'a Context>,
    /// Two configurations side by side (`SEL@A SEL@B`): rows pair by test and metric.
    pub across: bool,
}

/// Whether a row is listed: every row with `all`; else the headline metrics, the metrics
/// that changed (regressed or improved), the kernel event counts (`event:GROUP:NAME`, asked
/// for with `--events`: listed with their difference, never judged), and the judged on-disk
/// metrics (`verdict::on_disk` with a direction: space and write amplification, compression,
/// extents per file), the "on disk" block, whatever their verdict.
fn shown(j: &Judged, all: bool) -> bool {
    all || j.comparison.role == Role::Headline
        || matches!(j.comparison.verdict, Verdict::Regressed | Verdict::Improved)
        || is_event_count(&j.key.metric)
        || (verdict::on_disk(&j.key.metric) && j.comparison.verdict != Verdict::NotJudged)
}

/// Whether a metric is a kernel event count of `run --events`.
pub fn is_event_count(metric: &str) -> bool {
    metric.starts_with("event:")
}

fn mark(v: Verdict) -> &'static str {
    match v {
        Verdict::Regressed => "REGRESSED",
        Verdict::Improved => "improved",
        Verdict::Unchanged => "unchanged",
        Verdict::Inconclusive => "?",
        Verdict::NotJudged => "",
    }
}

/// A one-character verdict for the many-sided table.
fn short_mark(v: Verdict) -> &'static str {
    match v {
        Verdict::Regressed => "R",
        Verdict::Improved => "i",
        Verdict::Unchanged => "=",
        Verdict::Inconclusive => "?",
        Verdict::NotJudged => "",
    }
}

pub(crate) fn pct(v: Option<f64>) -> String {
    v.map(|v| format!("{}%", short_pct(v)))
        .unwrap_or_else(|| "-".into())
}

/// A percentage in at most 7 characters: one decimal below 1000, none below 100000, then
/// e-notation (intervals of very noisy metrics reach +1e11 %).
fn short_pct(v: f64) -> String {
    let a = v.abs();
    if a < 1000.0 {
        format!("{v:+.1}")
    } else if a < 100_000.0 {
        format!("{v:+.0}")
    } else {
        format!("{v:+.0e}")
    }
}

pub(crate) fn value(v: Option<f64>) -> String {
    v.map(fmt_value).unwrap_or_else(|| "-".into())
}

fn interval(c: &Comparison) -> String {
    match (c.diff_lo_pct, c.diff_hi_pct) {
        _ if c.interval_bounded() == Some(false) => "too few runs".into(),
        (Some(lo), Some(hi)) => format!("[{},{}]", short_pct(lo), short_pct(hi)),
        _ => String::new(),
    }
}

fn counts(c: &verdict::Counts) -> String {
    format!(
        "{} regressed, {} improved, {} unchanged, {} inconclusive",
        c.regressed, c.improved, c.unchanged, c.inconclusive
    )
}

/// The summary line: per family, the counts, how they were controlled and whether they gate;
/// then the runs a side the headline still needs.
pub fn summary_line(s: &Summary) -> String {
    summary_lines(s).join(" ")
}

/// [`summary_line`] as sentences, one a line in the text output.
pub fn summary_lines(s: &Summary) -> Vec<String> {
    let mut out = Vec::new();
    let (h, sec) = (s.headline.judged(), s.secondary.judged());
    out.push(format!(
        "headline: {} of {h} metric{} (Benjamini-Hochberg q = {} across them; they set the exit code).",
        counts(&s.headline),
        if h == 1 { "" } else { "s" },
        verdict::FDR_Q
    ));
    if sec > 0 {
        out.push(format!(
            "secondary: {} of {sec} (their own q = {}; {}).",
            counts(&s.secondary),
            verdict::FDR_Q,
            if s.secondary_gates {
                "gating too, --gate all"
            } else {
                "shown, not gating"
            }
        ));
    }
    let judged = h + sec;
    if judged > 0 {
        out.push(format!(
            "At p < 0.05 each, about {:.0} of the {judged} judged metrics would be flagged by chance alone; q-values keep that from deciding.",
            s.expected_false_flags
        ));
    }
    if let Some(need) = s.headline_runs_needed {
        let have = s.headline_min_runs.unwrap_or(0);
        if need > have {
            out.push(format!(
                "The inconclusive headline metrics need {} runs a side (this comparison has {have}).",
                verdict::runs_phrase(need)
            ));
        }
    }
    if s.headline_min_runs
        .is_some_and(|n| n < verdict::TWO_RUN_LIMIT)
    {
        out.push(format!(
            "With 2 runs a side, a change must also be {} times the spread within a side to count (docs/statistics.md).",
            verdict::TWO_RUN_SEPARATION
        ));
    }
    out
}

/// Wrap `text` at 80 columns with `indent` spaces on every line.
fn wrap(text: &str, indent: usize) -> String {
    wrap_hanging(text, indent, indent)
}

/// Wrap `text` at 80 columns: `first` spaces before the first line, `rest` before the others.
pub(crate) fn wrap_hanging(text: &str, first: usize, rest: usize) -> String {
    let mut out = String::new();
    let mut line = " ".repeat(first);
    let mut empty = true;
    for word in text.split_whitespace() {
        if line.len() + word.len() + 1 > 80 && !empty {
            out.push_str(line.trim_end());
            out.push('\n');
            line = " ".repeat(rest);
        }
        line.push_str(word);
        line.push(' ');
        empty = false;
    }
    if !empty {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The lines of the "what differs" block (without its title), shared by text and markdown.
fn context_lines(ctx: &Context) -> Vec<String> {
    let mut out = Vec::new();
    for w in &ctx.warnings {
        out.push(format!("WARNING {w}"));
    }
    for d in &ctx.differences {
        out.push(format!(
            "{}: baseline {}, current {}",
            d.what, d.baseline, d.current
        ));
    }
    if !ctx.only_baseline.is_empty() {
        out.push(format!(
            "only on the baseline side (not compared): {}",
            ctx.only_baseline.join(", ")
        ));
    }
    if !ctx.only_current.is_empty() {
        out.push(format!(
            "only on the current side (not compared): {}",
            ctx.only_current.join(", ")
        ));
    }
    if !ctx.one_sided_metrics.is_empty() {
        const SHOWN: usize = 6;
        let n = ctx.one_sided_metrics.len();
        let mut l: Vec<&str> = ctx
            .one_sided_metrics
            .iter()
            .take(SHOWN)
            .map(String::as_str)
            .collect();
        let more = format!("and {} more", n - SHOWN.min(n));
        if n > SHOWN {
            l.push(&more);
        }
        out.push(format!(
            "{n} metric{} on one side only (not compared): {}",
            if n == 1 { "" } else { "s" },
            l.join(", ")
        ));
    }
    if ctx.warnings.is_empty() && ctx.differences.is_empty() {
        out.push(
            "nothing recorded differs: kernel, fsdelta version, host, filesystem, mkfs and \
             mount options, engine, hooks and workloads are the same"
                .into(),
        );
    }
    let (b, c) = (ctx.baseline_load, ctx.current_load);
    let share = |v: Option<f64>| v.map_or("not recorded".to_string(), |v| format!("{v:.0} %"));
    if b.bg_cpu_pct.is_some() || c.bg_cpu_pct.is_some() {
        out.push(format!(
            "background: other processes used {} of the CPUs on the baseline side, {} on the current side",
            share(b.bg_cpu_pct),
            share(c.bg_cpu_pct)
        ));
    }
    out
}

/// The warnings of a "what differs" block (background load, samples a side lacks), for the
/// one-table form, which leaves the rest of the block to `--format text`.
pub(crate) fn context_warnings(ctx: &Context) -> Vec<String> {
    ctx.warnings.clone()
}

fn text_context(out: &mut String, ctx: &Context) {
    let _ = writeln!(out);
    let _ = writeln!(out, "What differs between the sides");
    for l in context_lines(ctx) {
        out.push_str(&wrap_hanging(&l, 2, 4));
    }
}

/// The footnote of a block whose rows show medians (`*`), if any.
pub(crate) fn median_note(rows: &[&Judged]) -> Option<&'static str> {
    let hl = rows
        .iter()
        .any(|j| j.comparison.method == Some(Method::HodgesLehmann));
    let median = rows
        .iter()
        .any(|j| j.comparison.center == Center::Median && j.comparison.method.is_none());
    match (hl, median) {
        (false, false) => None,
        (true, false) => Some("* medians; the diff is the Hodges-Lehmann shift"),
        (true, true) => Some(
            "* medians; the diff is the Hodges-Lehmann shift, or with values <= 0 the ratio of the medians",
        ),
        (false, true) => Some("* medians (values <= 0: no log scale); the diff is their ratio"),
    }
}

/// Rows of `rows` grouped by (configuration, test), in order, keeping only those `keep` says.
fn blocks(rows: &[Judged], keep: impl Fn(&Judged) -> bool) -> Vec<Vec<&Judged>> {
    let mut out: Vec<Vec<&Judged>> = Vec::new();
    for j in rows.iter().filter(|j| keep(j)) {
        match out.last_mut() {
            Some(b) if b[0].key.config == j.key.config && b[0].key.test == j.key.test => b.push(j),
            _ => out.push(vec![j]),
        }
    }
    out
}

/// The metric name as listed: `*` marks a row whose centers are medians.
fn metric_name(j: &Judged, w: usize) -> String {
    if j.comparison.center == Center::Median {
        format!("{}*", clip(&j.key.metric, w - 1))
    } else {
        clip(&j.key.metric, w)
    }
}

/// 80-column text: the sides, what differs between them, then one block per test (metric, the
/// center of each side, diff, 95 % interval, verdict), headline metrics first, secondary ones
/// under their own heading, then what the samples left on disk ("on disk"), reasons under
/// inconclusive rows, and the summary.
pub fn text(doc: &CompareDoc<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "baseline: {}", doc.baseline);
    let _ = writeln!(out, "current:  {}", doc.current);
    if let Some(ctx) = doc.context {
        text_context(&mut out, ctx);
    }
    for block in blocks(doc.rows, |j| shown(j, doc.all)) {
        let j0 = block[0];
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{} ({}), {} vs {} runs, geometric means",
            j0.key.test, j0.key.config, j0.comparison.baseline.n, j0.comparison.current.n,
        );
        let _ = writeln!(
            out,
            "  {:<22} {:>10} {:>10} {:>7} {:<13} verdict",
            "metric", "baseline", "current", "diff", "95% interval"
        );
        let (head, rest): (Vec<&Judged>, Vec<&Judged>) = block
            .iter()
            .partition(|j| j.comparison.role == Role::Headline);
        let (disk, sec): (Vec<&Judged>, Vec<&Judged>) = rest
            .into_iter()
            .partition(|j| verdict::on_disk(&j.key.metric));
        for (i, part) in [head, sec, disk].into_iter().enumerate() {
            if i == 1 && !part.is_empty() {
                let _ = writeln!(out, "  secondary metrics (do not set the exit code):");
            }
            if i == 2 && !part.is_empty() {
                let _ = writeln!(
                    out,
                    "  on disk (secondary, judged the same way; docs/metrics.md):"
                );
            }
            for j in part {
                let c = &j.comparison;
                let _ = writeln!(
                    out,
                    "  {:<22} {:>10} {:>10} {:>7} {:<13} {}",
                    metric_name(j, 22),
                    value(c.baseline.center),
                    value(c.current.center),
                    pct(c.diff_pct),
                    interval(c),
                    mark(c.verdict)
                );
                if c.verdict == Verdict::Inconclusive && !c.reason.is_empty() {
                    // The reason already says how many runs a side would resolve the band.
                    out.push_str(&wrap(&c.reason, 4));
                }
                if let Some(d) = &c.detects {
                    out.push_str(&wrap(d, 4));
                }
            }
        }
        if let Some(note) = median_note(&block) {
            out.push_str(&wrap(note, 2));
        }
    }
    let curves = curve_lines(doc.rows);
    if !curves.is_empty() {
        let _ = writeln!(out);
        for l in curves {
            out.push_str(&wrap_hanging(&l, 0, 2));
        }
    }
    let _ = writeln!(out);
    for l in summary_lines(doc.summary) {
        out.push_str(&wrap(&l, 0));
    }
    if !doc.all {
        let hidden = doc.rows.iter().filter(|j| !shown(j, false)).count();
        if hidden > 0 {
            let _ = writeln!(
                out,
                "({hidden} secondary metrics that did not change not listed; --all lists them)"
            );
        }
    }
    out
}

/// One non-baseline side of a comparison of 3 or more sides.
pub struct SideRows<'a> {
    /// Description of the side's selection.
    pub description: &'a str,
    /// Its rows against the baseline.
    pub rows: &'a [Judged],
    /// What differs between the baseline and this side.
    pub context: &'a Context,
}

/// The non-baseline sides of a judged many-sided comparison, for a [`ManyDoc`].
pub fn side_rows(many: &crate::compare::many::Many) -> Vec<SideRows<'_>> {
    (0..many.sides.len())
        .map(|i| SideRows {
            description: &many.sides[i].description,
            rows: many.rows_of(i),
            context: &many.sides[i].context,
        })
        .collect()
}

/// A comparison of 3 or more sides: the first is the baseline of every other.
pub struct ManyDoc<'a> {
    /// Description of the baseline selection.
    pub baseline: &'a str,
    /// The other sides in order.
    pub sides: &'a [SideRows<'a>],
    /// Counts over every row of every side.
    pub summary: &'a Summary,
    /// List every metric.
    pub all: bool,
    /// Configurations side by side (`SEL@A SEL@B SEL@C`): rows pair by test and metric, so
    /// differently named configurations share one row.
    pub across: bool,
}

/// The metrics of a many-sided table in order: (configuration, test, metric), each with its row
/// in every side (if any); a metric is listed when some side lists it.
fn many_keys<'a>(doc: &'a ManyDoc<'a>) -> Vec<(&'a SeriesKey, Vec<Option<&'a Judged>>)> {
    // Configurations side by side pair by test and metric: "a vs b" and "a vs c" share a row.
    let same = |a: &SeriesKey, b: &SeriesKey| {
        a.test == b.test && a.metric == b.metric && (doc.across || a.config == b.config)
    };
    let mut keys: Vec<&SeriesKey> = Vec::new();
    for s in doc.sides {
        for j in s.rows.iter().filter(|j| shown(j, doc.all)) {
            if !keys.iter().any(|k| same(k, &j.key)) {
                keys.push(&j.key);
            }
        }
    }
    // keep tests together, in first-seen order
    let group = |k: &'a SeriesKey| {
        if doc.across {
            ("", k.test.as_str())
        } else {
            (k.config.as_str(), k.test.as_str())
        }
    };
    let mut order: Vec<(&str, &str)> = Vec::new();
    for k in &keys {
        if !order.contains(&group(k)) {
            order.push(group(k));
        }
    }
    keys.sort_by_key(|k| order.iter().position(|o| *o == group(k)));
    keys.into_iter()
        .map(|k| {
            let per: Vec<Option<&Judged>> = doc
                .sides
                .iter()
                .map(|s| s.rows.iter().find(|j| same(&j.key, k)))
                .collect();
            (k, per)
        })
        .collect()
}

fn many_base(per: &[Option<&Judged>]) -> Option<f64> {
    per.iter()
        .flatten()
        .find_map(|j| j.comparison.baseline.center)
}

/// Text of a many-sided comparison: per test a table with the baseline's center and, for every
/// other side, its center, diff and a one-letter verdict (2 sides a table, so it stays in 80
/// columns); the centers are geometric means (Welch on logs for every pairing).
pub fn many_text(doc: &ManyDoc<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "baseline:  {}", doc.baseline);
    for (i, s) in doc.sides.iter().enumerate() {
        let _ = writeln!(out, "side {}:    {}", i + 1, s.description);
    }
    for (i, s) in doc.sides.iter().enumerate() {
        let lines = context_lines(s.context);
        if lines.len() == 1 && s.context.differences.is_empty() && s.context.warnings.is_empty() {
            continue;
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "What differs between the baseline and side {}", i + 1);
        for l in lines {
            out.push_str(&wrap_hanging(&l, 2, 4));
        }
    }
    let keys = many_keys(doc);
    for chunk_start in (0..doc.sides.len()).step_by(2) {
        let chunk = chunk_start..(chunk_start + 2).min(doc.sides.len());
        let mut block: Option<(&str, &str)> = None;
        for (k, per) in &keys {
            let b = (
                if doc.across { "" } else { k.config.as_str() },
                k.test.as_str(),
            );
            if block != Some(b) {
                let _ = writeln!(out);
                if doc.across {
                    let _ = writeln!(out, "{}, geometric means", k.test);
                } else {
                    let _ = writeln!(out, "{} ({}), geometric means", k.test, k.config);
                }
                let mut h = format!("  {:<18} {:>9}", "metric", "baseline");
                for i in chunk.clone() {
                    let _ = write!(h, " {:>9} {:>7}  ", format!("side {}", i + 1), "diff");
                }
                let _ = writeln!(out, "{}", h.trim_end());
                block = Some(b);
            }
            let mut line = format!("  {:<18} {:>9}", clip(&k.metric, 18), value(many_base(per)));
            for j in &per[chunk.clone()] {
                match j {
                    Some(j) => {
                        let c = &j.comparison;
                        let _ = write!(
                            line,
                            " {:>9} {:>7} {:<1} ",
                            value(c.current.center),
                            pct(c.diff_pct),
                            short_mark(c.verdict)
                        );
                    }
                    None => {
                        let _ = write!(line, " {:>9} {:>7}   ", "-", "-");
                    }
                }
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Verdicts: R regressed, i improved, = unchanged, ? inconclusive."
    );
    for l in many_detects(doc) {
        out.push_str(&wrap_hanging(&l, 0, 2));
    }
    for (i, s) in doc.sides.iter().enumerate() {
        for l in curve_lines(s.rows) {
            out.push_str(&wrap_hanging(&format!("side {}, {l}", i + 1), 0, 2));
        }
    }
    for l in summary_lines(doc.summary) {
        out.push_str(&wrap(&l, 0));
    }
    out
}

/// "side 1, seqwrite bw_mbps: with 3 runs a side this machine detects ...": what each side's
/// machine detects beside its unchanged or inconclusive headline rows (`Comparison::detects`).
fn many_detects(doc: &ManyDoc<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for (i, s) in doc.sides.iter().enumerate() {
        for j in s.rows.iter().filter(|j| shown(j, doc.all)) {
            if let Some(d) = &j.comparison.detects {
                out.push(format!(
                    "side {}, {} {}: {d}",
                    i + 1,
                    j.key.test,
                    j.key.metric
                ));
            }
        }
    }
    out
}

#[derive(Serialize)]
struct ManyJsonSide<'a> {
    current: &'a str,
    context: &'a Context,
    metrics: Vec<&'a Judged>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    curves: Vec<JsonCurve>,
}

#[derive(Serialize)]
struct ManyJson<'a> {
    schema_version: u32,
    baseline: &'a str,
    summary: &'a Summary,
    sides: Vec<ManyJsonSide<'a>>,
}

/// JSON of a many-sided comparison: per side its rows, as [`json`] gives them.
pub fn many_json(doc: &ManyDoc<'_>) -> Result<String, serde_json::Error> {
    let d = ManyJson {
        schema_version: crate::report::export::EXPORT_SCHEMA_VERSION,
        baseline: doc.baseline,
        summary: doc.summary,
        sides: doc
            .sides
            .iter()
            .map(|s| ManyJsonSide {
                current: s.description,
                context: s.context,
                metrics: s.rows.iter().filter(|j| shown(j, doc.all)).collect(),
                curves: json_curves(s.rows),
            })
            .collect(),
    };
    let mut s = serde_json::to_string_pretty(&d)?;
    s.push('\n');
    Ok(s)
}

#[derive(Serialize)]
struct JsonDoc<'a> {
    schema_version: u32,
    baseline: &'a str,
    current: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    context: Option<&'a Context>,
    summary: &'a Summary,
    metrics: Vec<&'a Judged>,
    /// The response curves of swept tests (`compare::curve`), each with the sentence the text
    /// shows.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    curves: Vec<JsonCurve>,
}

/// A response curve in the JSON output.
#[derive(Serialize)]
struct JsonCurve {
    #[serde(flatten)]
    curve: crate::compare::curve::Curve,
    /// [`crate::compare::curve::Curve::sentence`].
    summary: String,
}

/// The response curves among `rows`, each with its sentence, for JSON.
fn json_curves(rows: &[Judged]) -> Vec<JsonCurve> {
    crate::compare::curve::of_judged(rows)
        .into_iter()
        .map(|c| JsonCurve {
            summary: c.sentence(),
            curve: c,
        })
        .collect()
}

/// The sentences of the response curves among `rows` ([`crate::compare::curve`]): where the
/// two sides' curves part and each side's knee, one a curve.
pub(crate) fn curve_lines(rows: &[Judged]) -> Vec<String> {
    crate::compare::curve::of_judged(rows)
        .iter()
        .map(|c| c.sentence())
        .collect()
}

/// JSON: every row (filtered as the text is), with the centers, medians, intervals, p- and
/// q-values, roles, methods and reasons.
pub fn json(doc: &CompareDoc<'_>) -> Result<String, serde_json::Error> {
    let d = JsonDoc {
        schema_version: crate::report::export::EXPORT_SCHEMA_VERSION,
        baseline: doc.baseline,
        current: doc.current,
        context: doc.context,
        summary: doc.summary,
        metrics: doc.rows.iter().filter(|j| shown(j, doc.all)).collect(),
        curves: json_curves(doc.rows),
    };
    let mut s = serde_json::to_string_pretty(&d)?;
    s.push('\n');
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::judge::Judged;
    use crate::compare::verdict::{Margins, MetricClass};
    use crate::model::{Direction, MetricKind, Unit};

    fn row(metric: &str, role: Role, detects: Option<&str>) -> Judged {
        let v = [1.00, 1.01, 0.99, 1.00];
        let mut c = verdict::compare(
            &v,
            &v,
            Direction::LowerIsBetter,
            MetricClass::Throughput,
            &Margins::default(),
        );
        c.role = role;
        c.detects = detects.map(str::to_string);
        Judged {
            key: SeriesKey {
                config: "c".into(),
                test: "copy".into(),
                metric: metric.into(),
            },
            unit: Unit::Seconds,
            kind: MetricKind::Mean,
            headline: role == Role::Headline,
            baseline_values: v.to_vec(),
            current_values: v.to_vec(),
            comparison: c,
        }
    }

    #[test]
    fn the_detectable_change_follows_its_row_and_on_disk_metrics_have_their_block() {
        let phrase = "with 4 runs a side this machine detects changes of 3.1 % or more here";
        let rows = vec![
            row("elapsed_s", Role::Headline, Some(phrase)),
            row("mount_s", Role::Secondary, None),
            row("space_amplification", Role::Secondary, None),
        ];
        let summary = verdict::summarize(
            &rows
                .iter()
                .map(|j| j.comparison.clone())
                .collect::<Vec<_>>(),
        );
        let doc = CompareDoc {
            baseline: "1",
            current: "2",
            rows: &rows,
            summary: &summary,
            all: false,
            context: None,
            across: false,
        };
        let t = text(&doc);
        let lines: Vec<&str> = t.lines().collect();
        let at = lines.iter().position(|l| l.contains("elapsed_s")).unwrap();
        let flat = lines[at + 1..at + 3].join(" ");
        assert!(
            flat.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .contains(phrase),
            "{t}"
        );
        // the unchanged on-disk metric is listed in its block, the unchanged mount_s is not
        let disk = lines.iter().position(|l| l.contains("on disk (")).unwrap();
        assert!(lines[disk + 1].contains("space_amplification"), "{t}");
        assert!(!t.contains("mount_s"), "{t}");
        // 3 or more sides: one line per side and metric under the legend
        let ctx = Context::default();
        let sides = [
            SideRows {
                description: "2",
                rows: &rows,
                context: &ctx,
            },
            SideRows {
                description: "3",
                rows: &rows[1..],
                context: &ctx,
            },
        ];
        let m = many_text(&ManyDoc {
            baseline: "1",
            sides: &sides,
            summary: &summary,
            all: false,
            across: false,
        });
        let flat = m.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains(&format!("side 1, copy elapsed_s: {phrase}")),
            "{m}"
        );
        assert!(!flat.contains("side 2, copy"), "{m}");
    }

    #[test]
    fn huge_percentages_stay_short() {
        assert_eq!(short_pct(-5.25), "-5.2");
        assert_eq!(short_pct(12345.6), "+12346");
        assert_eq!(short_pct(263193267555.5), "+3e11");
        for v in [-100.0, 999.9, 99999.0, 1e15] {
            assert!(short_pct(v).len() <= 7, "{v}");
        }
    }
}
