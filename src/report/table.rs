//! The one-table form of a comparison (`compare --format table`, and `--format markdown`): one
//! table for the whole comparison, whatever the number of sides, as a developer pastes it into
//! a mail: a row per test and metric, a column per side with its center, the diff against the
//! baseline and the verdict as a one-character mark with a legend; reasons in numbered
//! footnotes, so no cell grows a sentence. Text fits 80 columns (sides that do not fit continue
//! in a second table with the same rows); names are never clipped (a column widens, or the test
//! becomes a heading line).
//!
//! Pure functions from judged rows (`compare::judge`) to `String`, like the other renderers of
//! `report::compare`; they must never compute statistics, read the store, or clip a test,
//! metric or configuration name into something ambiguous.

use crate::compare::SeriesKey;
use crate::compare::judge::Judged;
use crate::compare::verdict::{Center, Role, Summary, Verdict};
use crate::report::compare::{
    CompareDoc, ManyDoc, context_warnings, curve_lines, median_note, pct, summary_lines, value,
    wrap_hanging,
};
use std::fmt::Write;

/// The widest a text table may be.
const COLUMNS: usize = 80;

/// One side of the table besides the baseline.
struct TableSide<'a> {
    description: &'a str,
    rows: &'a [Judged],
}

/// A comparison of the baseline with one or more sides, as the table shows it.
struct TableDoc<'a> {
    baseline: &'a str,
    sides: Vec<TableSide<'a>>,
    summary: &'a Summary,
    all: bool,
    /// Configurations side by side (`SEL@A SEL@B`): rows pair by test and metric only.
    across: bool,
    /// Warnings of every pairing (background load, samples a side lacks), each once.
    warnings: Vec<String>,
    /// What differs between the sides ("what: baseline X, current Y"), each once: listed by the
    /// markdown form, which is posted where the reader has nothing else to go by.
    differences: Vec<String>,
    /// Where the response curves of swept tests part, one sentence a curve (and side).
    curves: Vec<String>,
}

/// A context's differences as lines, appended to `out` unless already there.
fn difference_lines(ctx: &crate::compare::context::Context, out: &mut Vec<String>) {
    for d in &ctx.differences {
        let l = format!("{}: baseline {}, current {}", d.what, d.baseline, d.current);
        if !out.contains(&l) {
            out.push(l);
        }
    }
}

impl<'a> TableDoc<'a> {
    fn of_pair(d: &'a CompareDoc<'a>) -> TableDoc<'a> {
        TableDoc {
            baseline: d.baseline,
            sides: vec![TableSide {
                description: d.current,
                rows: d.rows,
            }],
            summary: d.summary,
            all: d.all,
            across: d.across,
            warnings: d.context.map(context_warnings).unwrap_or_default(),
            differences: {
                let mut v = Vec::new();
                if let Some(c) = d.context {
                    difference_lines(c, &mut v);
                }
                v
            },
            curves: curve_lines(d.rows),
        }
    }

    fn of_many(d: &'a ManyDoc<'a>) -> TableDoc<'a> {
        let mut warnings: Vec<String> = Vec::new();
        let mut differences: Vec<String> = Vec::new();
        for s in d.sides {
            for w in context_warnings(s.context) {
                if !warnings.contains(&w) {
                    warnings.push(w);
                }
            }
            difference_lines(s.context, &mut differences);
        }
        let many = d.sides.len() > 1;
        let curves = d
            .sides
            .iter()
            .enumerate()
            .flat_map(|(i, s)| {
                curve_lines(s.rows).into_iter().map(move |l| {
                    if many {
                        format!("side {}, {l}", i + 1)
                    } else {
                        l
                    }
                })
            })
            .collect();
        TableDoc {
            baseline: d.baseline,
            sides: d
                .sides
                .iter()
                .map(|s| TableSide {
                    description: s.description,
                    rows: s.rows,
                })
                .collect(),
            summary: d.summary,
            all: d.all,
            across: d.across,
            warnings,
            differences,
            curves,
        }
    }
}

/// One row of the table: its key, and its judged row against the baseline on every side.
struct Row<'a> {
    /// What the first column shows: the test, with its configuration when the rows span
    /// several configurations and the sides are not configurations themselves.
    test: String,
    metric: &'a str,
    headline: bool,
    median: bool,
    per: Vec<Option<&'a Judged>>,
}

/// The pairing key of a row: test and metric when configurations are the sides, else the
/// configuration too.
fn row_key(k: &SeriesKey, across: bool) -> (&str, &str, &str) {
    (
        if across { "" } else { k.config.as_str() },
        k.test.as_str(),
        k.metric.as_str(),
    )
}

/// Whether a judged row is listed: `all`, or a headline metric (the table stays one compact
/// table; the on-disk metrics are the text form's "on disk" block); a test with no listed row
/// (only secondary metrics were selected with `--metric`) lists all of its rows.
fn rows<'a>(doc: &TableDoc<'a>) -> Vec<Row<'a>> {
    let mut keys: Vec<(&'a str, &'a str, &'a str)> = Vec::new();
    for s in &doc.sides {
        for j in s.rows.iter() {
            let k = row_key(&j.key, doc.across);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    // Tests stay together, in the order they were first seen.
    let mut order: Vec<(&str, &str)> = Vec::new();
    for k in &keys {
        if !order.contains(&(k.0, k.1)) {
            order.push((k.0, k.1));
        }
    }
    keys.sort_by_key(|k| order.iter().position(|o| *o == (k.0, k.1)));
    let configs: std::collections::BTreeSet<&str> = keys.iter().map(|k| k.0).collect();
    let mut out: Vec<Row<'a>> = keys
        .into_iter()
        .map(|k| {
            let per: Vec<Option<&Judged>> = doc
                .sides
                .iter()
                .map(|s| s.rows.iter().find(|j| row_key(&j.key, doc.across) == k))
                .collect();
            let first = per.iter().flatten().next().copied();
            Row {
                test: if configs.len() > 1 {
                    format!("{} ({})", k.1, k.0)
                } else {
                    k.1.to_string()
                },
                metric: k.2,
                headline: first.is_some_and(|j| j.comparison.role == Role::Headline),
                median: per
                    .iter()
                    .flatten()
                    .any(|j| j.comparison.center == Center::Median),
                per,
            }
        })
        .collect();
    if !doc.all {
        let listed: std::collections::BTreeSet<String> = out
            .iter()
            .filter(|r| r.headline)
            .map(|r| r.test.clone())
            .collect();
        out.retain(|r| r.headline || !listed.contains(&r.test));
    }
    out
}

/// The short name of each side (baseline first) for the column heads: what differs between
/// their selectors (`ordered`, `journal` for `latest@ordered latest@journal`), else the
/// selectors; letters when a name would not fit a column or two would be the same.
fn side_names(descriptions: &[&str]) -> Vec<String> {
    let sels: Vec<&str> = descriptions
        .iter()
        .map(|d| d.split(" (run").next().unwrap_or(d))
        .collect();
    let split: Vec<(&str, &str)> = sels
        .iter()
        .map(|s| s.split_once('@').unwrap_or((s, "")))
        .collect();
    let same_runs = split.iter().all(|(r, _)| *r == split[0].0);
    let names: Vec<String> = if same_runs && split.iter().all(|(_, c)| !c.is_empty()) {
        split.iter().map(|(_, c)| c.to_string()).collect()
    } else {
        sels.iter().map(|s| s.to_string()).collect()
    };
    let distinct = names
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len()
        == names.len();
    if distinct && names.iter().all(|n| n.chars().count() <= 12) {
        names
    } else {
        (0..names.len())
            .map(|i| ((b'A' + (i % 26) as u8) as char).to_string())
            .collect()
    }
}

/// The marks and footnotes: per row and side, the verdict's one character, with the number of
/// its footnote when the verdict has a reason worth reading (inconclusive) or the machine's
/// calibration says what it detects there (unchanged or inconclusive headline); equal notes
/// share one footnote.
fn marks(rows: &[Row<'_>], notes: &mut Vec<String>) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| {
            r.per
                .iter()
                .map(|j| {
                    let Some(j) = j else {
                        return String::new();
                    };
                    let c = &j.comparison;
                    let m = match c.verdict {
                        Verdict::Regressed => "R",
                        Verdict::Improved => "i",
                        Verdict::Unchanged => "=",
                        Verdict::Inconclusive => "?",
                        Verdict::NotJudged => "",
                    };
                    let reason = (c.verdict == Verdict::Inconclusive && !c.reason.is_empty())
                        .then_some(c.reason.as_str());
                    let note = match (reason, &c.detects) {
                        (Some(r), Some(d)) => format!("{r}; {d}"),
                        (Some(r), None) => r.to_string(),
                        (None, Some(d)) => d.clone(),
                        (None, None) => return m.to_string(),
                    };
                    let n = match notes.iter().position(|x| *x == note) {
                        Some(i) => i + 1,
                        None => {
                            notes.push(note);
                            notes.len()
                        }
                    };
                    format!("{m}{n}")
                })
                .collect()
        })
        .collect()
}

/// The metric as listed: `(name)` for a secondary metric, `*` when its centers are medians.
fn metric_cell(r: &Row<'_>) -> String {
    let star = if r.median { "*" } else { "" };
    if r.headline {
        format!("{}{star}", r.metric)
    } else {
        format!("({}){star}", r.metric)
    }
}

fn width(cells: impl Iterator<Item = usize>, at_least: usize) -> usize {
    cells.fold(at_least, usize::max)
}

/// The baseline's center of a row (the same on every side's pairing).
fn base_center(r: &Row<'_>) -> String {
    value(
        r.per
            .iter()
            .flatten()
            .find_map(|j| j.comparison.baseline.center),
    )
}

/// The legend and the numbered reasons, shared by text and markdown.
fn legend(doc: &TableDoc<'_>, rows: &[Row<'_>]) -> Vec<String> {
    let mut out = vec![
        "R regressed, i improved, = unchanged, ? inconclusive (a number: its note says why, or \
         what this machine detects there); \
         the diff is against the baseline's column."
            .to_string(),
    ];
    if rows.iter().any(|r| !r.headline) {
        out.push("(metric): secondary, does not set the exit code.".into());
    }
    let with_rows: Vec<&Judged> = rows
        .iter()
        .flat_map(|r| r.per.iter().flatten())
        .copied()
        .collect();
    if let Some(n) = median_note(&with_rows) {
        out.push(n.to_string());
    } else {
        out.push("Centers are geometric means.".into());
    }
    if !doc.all {
        let hidden = doc
            .sides
            .iter()
            .flat_map(|s| s.rows.iter())
            .filter(|j| {
                j.comparison.role == Role::Secondary
                    && matches!(j.comparison.verdict, Verdict::Regressed | Verdict::Improved)
            })
            .count();
        if hidden > 0 {
            out.push(format!(
                "{hidden} secondary metric verdict{} changed and not listed (--all lists every metric, --format text each test's block with its on disk metrics).",
                if hidden == 1 { "" } else { "s" }
            ));
        }
    }
    out
}

/// The sides' names and what each column is, one a line: `journal = latest@journal (run 3,
/// label x)`.
fn side_lines(doc: &TableDoc<'_>, names: &[String]) -> Vec<String> {
    let descs: Vec<&str> = std::iter::once(doc.baseline)
        .chain(doc.sides.iter().map(|s| s.description))
        .collect();
    let w = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    descs
        .iter()
        .zip(names)
        .enumerate()
        .map(|(i, (d, n))| format!("{n:<w$} = {d}{}", if i == 0 { " (baseline)" } else { "" }))
        .collect()
}

/// 80-column text: the sides' names, warnings, then one table (a second one only for sides
/// that do not fit 80 columns), the legend, the footnotes and the summary.
pub fn text_pair(d: &CompareDoc<'_>) -> String {
    text(&TableDoc::of_pair(d))
}

/// [`text_pair`] for three or more sides.
pub fn text_many(d: &ManyDoc<'_>) -> String {
    text(&TableDoc::of_many(d))
}

/// Markdown of a comparison of two sides: the same one table, reasons as footnotes.
pub fn markdown_pair(d: &CompareDoc<'_>) -> String {
    markdown(&TableDoc::of_pair(d))
}

/// [`markdown_pair`] for three or more sides.
pub fn markdown_many(d: &ManyDoc<'_>) -> String {
    markdown(&TableDoc::of_many(d))
}

fn text(doc: &TableDoc<'_>) -> String {
    let rows = rows(doc);
    let descs: Vec<&str> = std::iter::once(doc.baseline)
        .chain(doc.sides.iter().map(|s| s.description))
        .collect();
    let names = side_names(&descs);
    let mut notes = Vec::new();
    let marks = marks(&rows, &mut notes);
    let mut out = String::new();
    for l in side_lines(doc, &names) {
        out.push_str(&wrap_hanging(&l, 0, 4));
    }
    for w in &doc.warnings {
        out.push_str(&wrap_hanging(&format!("WARNING {w}"), 0, 4));
    }
    let tw = width(rows.iter().map(|r| r.test.chars().count()), 4);
    let mw = width(rows.iter().map(|r| metric_cell(r).chars().count()), 6);
    let centers: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.per
                .iter()
                .map(|j| j.map_or("-".into(), |j| value(j.comparison.current.center)))
                .collect()
        })
        .collect();
    let diffs: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.per
                .iter()
                .map(|j| j.map_or("-".into(), |j| pct(j.comparison.diff_pct)))
                .collect()
        })
        .collect();
    let bw = width(
        rows.iter()
            .map(|r| base_center(r).len())
            .chain([names[0].chars().count()]),
        8,
    );
    // Per side: center, diff, mark widths.
    let sw: Vec<(usize, usize, usize)> = (0..doc.sides.len())
        .map(|s| {
            (
                width(
                    centers
                        .iter()
                        .map(|c| c[s].len())
                        .chain([names[s + 1].chars().count()]),
                    8,
                ),
                width(diffs.iter().map(|d| d[s].len()), 4),
                width(marks.iter().map(|m| m[s].len()), 1),
            )
        })
        .collect();
    // The test as a column when it leaves room for a side, else as a heading line.
    let side0 = sw.first().map_or(0, |(c, d, m)| c + d + m + 3);
    let test_column = 2 + tw + 1 + mw + 1 + bw + side0 <= COLUMNS;
    let lead = if test_column { 2 + tw + 1 } else { 4 };
    let mut chunks: Vec<std::ops::Range<usize>> = Vec::new();
    let mut start = 0;
    while start < sw.len() {
        let mut used = lead + mw + 1 + bw;
        let mut end = start;
        while end < sw.len() {
            let (c, d, m) = sw[end];
            if end > start && used + c + d + m + 3 > COLUMNS {
                break;
            }
            used += c + d + m + 3;
            end += 1;
        }
        chunks.push(start..end);
        start = end;
    }
    for chunk in chunks {
        out.push('\n');
        let mut head = if test_column {
            format!("  {:<tw$} ", "test")
        } else {
            " ".repeat(lead)
        };
        let _ = write!(head, "{:<mw$} {:>bw$}", "metric", names[0]);
        for s in chunk.clone() {
            let (c, d, m) = sw[s];
            let _ = write!(head, " {:>c$} {:>d$} {:<m$}", names[s + 1], "diff", "");
        }
        let _ = writeln!(out, "{}", head.trim_end());
        let mut last_test: Option<&str> = None;
        for (i, r) in rows.iter().enumerate() {
            let first = last_test != Some(r.test.as_str());
            last_test = Some(r.test.as_str());
            let mut line = if test_column {
                format!("  {:<tw$} ", if first { r.test.as_str() } else { "" })
            } else {
                if first {
                    let _ = writeln!(out, "  {}", r.test);
                }
                " ".repeat(lead)
            };
            let _ = write!(line, "{:<mw$} {:>bw$}", metric_cell(r), base_center(r));
            for s in chunk.clone() {
                let (c, d, m) = sw[s];
                let _ = write!(
                    line,
                    " {:>c$} {:>d$} {:<m$}",
                    centers[i][s], diffs[i][s], marks[i][s]
                );
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    out.push('\n');
    for l in &doc.curves {
        out.push_str(&wrap_hanging(l, 0, 2));
    }
    for l in legend(doc, &rows) {
        out.push_str(&wrap_hanging(&l, 0, 2));
    }
    for (i, n) in notes.iter().enumerate() {
        out.push_str(&wrap_hanging(&format!("{}: {n}", i + 1), 0, 3));
    }
    for l in summary_lines(doc.summary) {
        out.push_str(&wrap_hanging(&l, 0, 0));
    }
    out
}

fn markdown(doc: &TableDoc<'_>) -> String {
    let rows = rows(doc);
    let descs: Vec<&str> = std::iter::once(doc.baseline)
        .chain(doc.sides.iter().map(|s| s.description))
        .collect();
    let names = side_names(&descs);
    let mut notes = Vec::new();
    let marks = marks(&rows, &mut notes);
    let cell = |s: &str| s.replace('|', "\\|");
    let mut out = String::new();
    for l in side_lines(doc, &names) {
        let _ = writeln!(out, "- {}", cell(&l));
    }
    for w in &doc.warnings {
        let _ = writeln!(out, "- **WARNING** {}", cell(w));
    }
    for d in &doc.differences {
        let _ = writeln!(out, "- {}", cell(d));
    }
    out.push('\n');
    let mut head = format!("| test | metric | {} |", cell(&names[0]));
    let mut rule = String::from("|---|---|---:|");
    for n in &names[1..] {
        let _ = write!(head, " {} | diff | |", cell(n));
        rule.push_str("---:|---:|---|");
    }
    let _ = writeln!(out, "{head}");
    let _ = writeln!(out, "{rule}");
    let mut last_test: Option<&str> = None;
    for (i, r) in rows.iter().enumerate() {
        let first = last_test != Some(r.test.as_str());
        last_test = Some(r.test.as_str());
        let mut line = format!(
            "| {} | {} | {} |",
            if first { cell(&r.test) } else { String::new() },
            cell(&metric_cell(r)).replace('*', "\\*"),
            base_center(r)
        );
        for (s, j) in r.per.iter().enumerate() {
            let m = &marks[i][s];
            // A footnote reference: `?` then `[^N]`.
            let m = match m.char_indices().nth(1) {
                Some((at, _)) => format!("{}[^{}]", &m[..at], &m[at..]),
                None => m.clone(),
            };
            match j {
                Some(j) => {
                    let _ = write!(
                        line,
                        " {} | {} | {} |",
                        value(j.comparison.current.center),
                        pct(j.comparison.diff_pct),
                        m
                    );
                }
                None => line.push_str(" - | - | |"),
            }
        }
        let _ = writeln!(out, "{line}");
    }
    out.push('\n');
    for l in &doc.curves {
        let _ = writeln!(out, "- {}", cell(l));
    }
    if !doc.curves.is_empty() {
        out.push('\n');
    }
    for l in legend(doc, &rows) {
        let _ = writeln!(out, "{}  ", l.replace('*', "\\*"));
    }
    out.push('\n');
    for l in summary_lines(doc.summary) {
        let _ = writeln!(out, "{l}  ");
    }
    if !notes.is_empty() {
        out.push('\n');
        for (i, n) in notes.iter().enumerate() {
            let _ = writeln!(out, "[^{}]: {}", i + 1, cell(n));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::context::Context;
    use crate::compare::verdict::{self, Margins, MetricClass};
    use crate::model::{Direction, MetricKind, Unit};
    use crate::report::compare::SideRows;

    fn judged(config: &str, test: &str, metric: &str, b: &[f64], c: &[f64], head: bool) -> Judged {
        let mut comparison = verdict::compare(
            b,
            c,
            Direction::LowerIsBetter,
            MetricClass::Throughput,
            &Margins::default(),
        );
        comparison.role = if head {
            Role::Headline
        } else {
            Role::Secondary
        };
        Judged {
            key: SeriesKey {
                config: config.into(),
                test: test.into(),
                metric: metric.into(),
            },
            unit: Unit::Seconds,
            kind: MetricKind::Mean,
            headline: head,
            baseline_values: b.to_vec(),
            current_values: c.to_vec(),
            comparison,
        }
    }

    fn side(config: &str, slower: f64) -> Vec<Judged> {
        let base = [1.00, 1.01, 0.99, 1.00];
        let cur: Vec<f64> = base.iter().map(|v| v * slower).collect();
        let cfg = format!("lzo vs {config}");
        vec![
            judged(
                &cfg,
                "decompress-read-large",
                "elapsed_s",
                &base,
                &cur,
                true,
            ),
            judged(&cfg, "decompress-read-large", "mount_s", &base, &cur, false),
            judged(
                &cfg,
                "decompress-read-small",
                "elapsed_s",
                &base,
                &[0.5, 1.9, 1.0, 1.4],
                true,
            ),
        ]
    }

    #[test]
    fn three_differently_named_configurations_give_one_table_with_a_column_per_side() {
        let (zstd, zlib) = (side("zstd", 1.30), side("zlib", 1.0));
        let ctx = Context::default();
        let sides = [
            SideRows {
                description: "latest@zstd (run 4, label c)",
                rows: &zstd,
                context: &ctx,
            },
            SideRows {
                description: "latest@zlib (run 4, label c)",
                rows: &zlib,
                context: &ctx,
            },
        ];
        let all: Vec<Judged> = zstd.iter().chain(&zlib).cloned().collect();
        let summary =
            verdict::summarize(&all.iter().map(|j| j.comparison.clone()).collect::<Vec<_>>());
        let doc = ManyDoc {
            baseline: "latest@lzo (run 4, label c)",
            sides: &sides,
            summary: &summary,
            all: false,
            across: true,
        };
        let t = text_many(&doc);
        // One header line naming every side, once.
        let heads: Vec<&str> = t
            .lines()
            .filter(|l| l.trim_start().starts_with("test "))
            .collect();
        assert_eq!(heads.len(), 1, "{t}");
        for name in ["lzo", "zstd", "zlib"] {
            assert!(heads[0].contains(name), "{t}");
        }
        // A row per test and headline metric, the long test names whole; mount_s not listed.
        let row = t
            .lines()
            .find(|l| l.contains("decompress-read-large"))
            .unwrap();
        assert!(
            row.contains("elapsed_s") && row.matches('%').count() == 2,
            "{t}"
        );
        assert!(row.contains("+30.0%") && row.contains(" R"), "{row}");
        assert!(!t.contains("mount_s") && !t.contains('~'), "{t}");
        assert!(
            t.contains("lzo = latest@lzo (run 4, label c) (baseline)"),
            "{t}"
        );
        // The noisy test's reason is a numbered note, not a cell.
        let noisy = t
            .lines()
            .find(|l| l.contains("decompress-read-small"))
            .unwrap();
        assert!(noisy.contains("?1"), "{t}");
        assert!(t.lines().any(|l| l.starts_with("1: ")), "{t}");
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        // Markdown: the same one table, the reason a footnote.
        let m = markdown_many(&doc);
        assert_eq!(m.matches("| test | metric |").count(), 1, "{m}");
        assert!(m.contains("| lzo | zstd | diff | | zlib | diff | |"), "{m}");
        assert!(m.contains("?[^1]") && m.contains("\n[^1]: "), "{m}");
        assert!(m.lines().all(|l| l.len() < 200), "{m}");
    }

    #[test]
    fn the_table_keeps_to_the_headline_and_the_detectable_change_is_a_note() {
        let base = [1.00, 1.01, 0.99, 1.00];
        let less: Vec<f64> = base.iter().map(|v| v * 0.3).collect();
        let more: Vec<f64> = base.iter().map(|v| v * 1.3).collect();
        let mut rows = vec![
            judged("c", "copy", "elapsed_s", &base, &base, true),
            judged("c", "copy", "mount_s", &base, &more, false),
            judged("c", "copy", "compress_disk_bytes", &base, &less, false),
            judged("c", "copy", "space_amplification", &base, &base, false),
        ];
        let phrase = "with 4 runs a side this machine detects changes of 3.1 % or more here";
        rows[0].comparison.detects = Some(phrase.into());
        let summary = verdict::summarize(
            &rows
                .iter()
                .map(|j| j.comparison.clone())
                .collect::<Vec<_>>(),
        );
        let doc = CompareDoc {
            baseline: "latest@a (run 1, label x)",
            current: "latest@b (run 1, label x)",
            rows: &rows,
            summary: &summary,
            all: false,
            context: None,
            across: false,
        };
        let t = text_pair(&doc);
        let row = |m: &str| t.lines().find(|l| l.contains(m));
        // secondary metrics, on-disk ones too, are counted when they changed, not listed
        for m in ["compress_disk_bytes", "space_amplification", "mount_s"] {
            assert!(row(m).is_none(), "{m}: {t}");
        }
        assert!(t.contains("2 secondary metric verdicts changed"), "{t}");
        // the headline's detectable change is its note
        let head = row("elapsed_s").unwrap();
        assert!(head.trim_end().ends_with("=1"), "{head}");
        let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(&format!("1: {phrase}")), "{t}");
        assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
        let m = markdown_pair(&doc);
        assert!(m.contains(&format!("[^1]: {phrase}")), "{m}");
    }

    #[test]
    fn side_names_are_the_configurations_else_the_selectors_else_letters() {
        assert_eq!(
            side_names(&["latest@a (run 1, label x)", "latest@b (run 1, label x)"]),
            ["a", "b"]
        );
        assert_eq!(
            side_names(&[
                "label:6.17 (runs 1,2, label 6.17)",
                "label:6.18 (run 3, label 6.18)"
            ]),
            ["label:6.17", "label:6.18"]
        );
        assert_eq!(
            side_names(&[
                "label:ext4-6.1.0-47 (run 1, label x)",
                "label:ext4-6.1.0-50 (run 2, label y)"
            ]),
            ["A", "B"]
        );
    }
}
