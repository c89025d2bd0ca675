//! Renderers of a comparison with verdicts: 80-column text for mailing lists, markdown, and JSON
//! carrying intervals and p-values.
//!
//! Pure functions from [`Judged`] rows to `String`; they must never compute statistics themselves
//! (that is `compare::verdict`) nor read the store.

use crate::compare::SeriesKey;
use crate::compare::verdict::{Comparison, Summary, Verdict};
use crate::model::{MetricKind, Unit};
use crate::report::text::{clip, fmt_value};
use serde::Serialize;
use std::fmt::Write;

/// One metric with its verdict, ready to render.
#[derive(Clone, Debug, Serialize)]
pub struct Judged {
    /// Configuration, test, metric.
    #[serde(flatten)]
    pub key: SeriesKey,
    /// Unit of the values.
    pub unit: Unit,
    /// What kind of number, as the workload declared.
    pub kind: MetricKind,
    /// A headline metric of its workload.
    pub headline: bool,
    /// Baseline values.
    pub baseline_values: Vec<f64>,
    /// Current values.
    pub current_values: Vec<f64>,
    /// The statistics.
    #[serde(flatten)]
    pub comparison: Comparison,
}

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
    /// List unchanged and not-judged metrics too.
    pub all: bool,
}

fn shown(j: &Judged, all: bool) -> bool {
    all || !matches!(
        j.comparison.verdict,
        Verdict::Unchanged | Verdict::NotJudged
    )
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

fn pct(v: Option<f64>) -> String {
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

fn cv(v: Option<f64>) -> String {
    v.map(|v| format!("{:.1}%", 100.0 * v))
        .unwrap_or_else(|| "-".into())
}

fn interval(c: &Comparison) -> String {
    match (c.diff_lo_pct, c.diff_hi_pct) {
        (Some(lo), Some(hi)) => format!("[{},{}]", short_pct(lo), short_pct(hi)),
        _ => String::new(),
    }
}

/// The summary line: counts, and how many false flags chance alone would give.
pub fn summary_line(s: &Summary) -> String {
    format!(
        "{} regressed, {} improved, {} unchanged, {} inconclusive; about {:.0} false flag{} expected among {} metrics",
        s.regressed,
        s.improved,
        s.unchanged,
        s.inconclusive,
        s.expected_false_flags,
        if s.expected_false_flags.round() == 1.0 {
            ""
        } else {
            "s"
        },
        s.regressed + s.improved + s.unchanged + s.inconclusive
    )
}

/// Wrap `text` at 80 columns with `indent` spaces on every line.
fn wrap(text: &str, indent: usize) -> String {
    let mut out = String::new();
    let mut line = " ".repeat(indent);
    for word in text.split_whitespace() {
        if line.len() + word.len() + 1 > 80 && !line.trim().is_empty() {
            out.push_str(line.trim_end());
            out.push('\n');
            line = " ".repeat(indent);
        }
        line.push_str(word);
        line.push(' ');
    }
    if !line.trim().is_empty() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// 80-column text: one block per test (metric, baseline median, current median, diff, 95 %
/// interval, verdict), reasons under inconclusive rows, and the summary line.
pub fn text(doc: &CompareDoc<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "baseline: {}", doc.baseline);
    let _ = writeln!(out, "current:  {}", doc.current);
    let mut block: Option<(&str, &str)> = None;
    for j in doc.rows.iter().filter(|j| shown(j, doc.all)) {
        let b = (j.key.config.as_str(), j.key.test.as_str());
        if block != Some(b) {
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "{} ({}), medians of {} vs {} runs",
                j.key.test, j.key.config, j.comparison.baseline.n, j.comparison.current.n
            );
            let _ = writeln!(
                out,
                "  {:<22} {:>10} {:>10} {:>7} {:<13} verdict",
                "metric", "baseline", "current", "diff", "95% interval"
            );
            block = Some(b);
        }
        let c = &j.comparison;
        let _ = writeln!(
            out,
            "  {:<22} {:>10} {:>10} {:>7} {:<13} {}",
            clip(&j.key.metric, 22),
            c.baseline
                .median
                .map(fmt_value)
                .unwrap_or_else(|| "-".into()),
            c.current
                .median
                .map(fmt_value)
                .unwrap_or_else(|| "-".into()),
            pct(c.diff_pct),
            interval(c),
            mark(c.verdict)
        );
        if c.verdict == Verdict::Inconclusive && !c.reason.is_empty() {
            // The reason already says how many runs a side would resolve the band.
            out.push_str(&wrap(&c.reason, 4));
        }
    }
    let _ = writeln!(out);
    out.push_str(&wrap(&summary_line(doc.summary), 0));
    if !doc.all {
        let hidden = doc.rows.iter().filter(|j| !shown(j, false)).count();
        if hidden > 0 {
            let _ = writeln!(
                out,
                "({hidden} unchanged or neutral metrics not listed; --all lists them)"
            );
        }
    }
    out
}

/// Markdown: the same content as [`text`], one table per test.
pub fn markdown(doc: &CompareDoc<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "**baseline:** {}  ", doc.baseline);
    let _ = writeln!(out, "**current:** {}", doc.current);
    let mut block: Option<(&str, &str)> = None;
    for j in doc.rows.iter().filter(|j| shown(j, doc.all)) {
        let b = (j.key.config.as_str(), j.key.test.as_str());
        if block != Some(b) {
            let _ = writeln!(out);
            let _ = writeln!(out, "### {} ({})", j.key.test, j.key.config);
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "| metric | unit | baseline | current | diff | 95% interval | n | CV | verdict |"
            );
            let _ = writeln!(out, "|---|---|---:|---:|---:|---|---|---|---|");
            block = Some(b);
        }
        let c = &j.comparison;
        let verdict = match c.verdict {
            Verdict::Inconclusive => format!("inconclusive: {}", c.reason.replace('|', "/")),
            v => v.as_str().replace('_', " "),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} vs {} | {} / {} | {} |",
            j.key.metric,
            j.unit,
            c.baseline
                .median
                .map(fmt_value)
                .unwrap_or_else(|| "-".into()),
            c.current
                .median
                .map(fmt_value)
                .unwrap_or_else(|| "-".into()),
            pct(c.diff_pct),
            interval(c),
            c.baseline.n,
            c.current.n,
            cv(c.baseline.cv),
            cv(c.current.cv),
            verdict
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "{}", summary_line(doc.summary));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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

#[derive(Serialize)]
struct JsonDoc<'a> {
    schema_version: u32,
    baseline: &'a str,
    current: &'a str,
    summary: &'a Summary,
    metrics: Vec<&'a Judged>,
}

/// JSON: every row (filtered as the text is), with intervals, p-values, methods and reasons.
pub fn json(doc: &CompareDoc<'_>) -> Result<String, serde_json::Error> {
    let d = JsonDoc {
        schema_version: crate::report::export::EXPORT_SCHEMA_VERSION,
        baseline: doc.baseline,
        current: doc.current,
        summary: doc.summary,
        metrics: doc.rows.iter().filter(|j| shown(j, doc.all)).collect(),
    };
    let mut s = serde_json::to_string_pretty(&d)?;
    s.push('\n');
    Ok(s)
}
