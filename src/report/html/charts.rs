//! The report's charts, each one SVG string: the per-test diff chart (bar = diff %, whisker = 95 %
//! interval, colour and marker shape = verdict, repetitions as dots), the spread chart of a
//! single-selection report, latency percentile curves, history sparklines with change points,
//! fs_mark's iterations and fio's logs over time.
//!
//! Like the rest of the renderer it only draws what it is given: every position comes from a
//! stored value or a statistic computed by `compare`, never from a default or a placeholder.

use super::{
    Curve, FioLogChart, IterationTables, MetricInput, PercentileCurves, ReportInput, Role, look,
    pct,
};
use crate::compare::changepoint::Scale;
use crate::compare::verdict::Verdict;
use crate::model::{Direction, Unit};
use crate::report::svg::{
    Linear, Log10, Shape, Svg, log_ticks, nice_ticks, num, pct_label, ratio_ln, ratio_ticks,
};
use crate::report::text::fmt_value;

/// Height of one metric row.
const ROW: f64 = 28.0;
/// Space above the rows (column titles and the top axis).
const TOP: f64 = 46.0;
/// Space above the rows of the spread chart (column titles only).
const SPREAD_TOP: f64 = 24.0;
/// Space below the rows (bottom axis and its title).
const BOTTOM: f64 = 44.0;
/// Right edge of the metric names.
const NAME_END: f64 = 236.0;
/// The diff panel.
const DIFF_X0: f64 = 248.0;
const DIFF_X1: f64 = 628.0;
/// Start of the verdict column.
const VERDICT_X: f64 = 644.0;
/// The repetitions panel of the diff chart: min label ends at REP_X0 - 6, max label starts at
/// REP_X1 + 6.
const REP_X0: f64 = 846.0;
const REP_X1: f64 = 990.0;
/// Width of the diff chart.
const WIDTH: f64 = 1140.0;
/// Widest axis: the log ratio of +1000 % / -90.9 %.
const MAX_HALF: f64 = 2.397_895_272_798_371; // ln 11
/// Narrowest axis: the log ratio of +10 % / -9.1 %.
const MIN_HALF: f64 = 0.095_310_179_804_324_87; // ln 1.1

fn arrow(d: Direction) -> &'static str {
    match d {
        Direction::HigherIsBetter => " \u{2191}",
        Direction::LowerIsBetter => " \u{2193}",
        Direction::Neutral => "",
    }
}

fn direction_words(d: Direction) -> &'static str {
    match d {
        Direction::HigherIsBetter => "higher is better",
        Direction::LowerIsBetter => "lower is better",
        Direction::Neutral => "neutral, not judged",
    }
}

/// At most `w` characters, an ellipsis ending a clipped string.
pub(super) fn clip(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(w - 1).collect();
        t.push('\u{2026}');
        t
    }
}

fn median(v: &[f64]) -> Option<f64> {
    crate::compare::stats::median(v)
}

/// The hover text of a metric row: every number behind what is drawn.
fn row_tip(m: &MetricInput) -> String {
    let mut t = format!(
        "{} ({}, {})",
        m.key.metric,
        m.unit,
        direction_words(m.direction)
    );
    let vals = |v: &[f64]| {
        v.iter()
            .map(|x| fmt_value(*x))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(c) = &m.comparison {
        let center = match c.center {
            crate::compare::verdict::Center::GeometricMean => "geometric mean",
            crate::compare::verdict::Center::Median => "median",
        };
        let side = |name: &str, s: &crate::compare::verdict::Side, v: &[f64]| {
            format!(
                "\n{name}: {center} {}, median {} (n = {}{}): {}",
                s.center.map(fmt_value).unwrap_or_else(|| "-".into()),
                s.median.map(fmt_value).unwrap_or_else(|| "-".into()),
                s.n,
                s.cv.map(|cv| format!(", CV {:.1} %", cv * 100.0))
                    .unwrap_or_default(),
                vals(v)
            )
        };
        t.push_str(&side("baseline", &c.baseline, &m.baseline_values));
        t.push_str(&side("current", &c.current, &m.current_values));
        t.push_str(&format!(
            "\nchange {} {}{}{}",
            pct(c.diff_pct),
            super::interval(c),
            c.method
                .map(|m| format!(" ({})", m.as_str().replace('_', "-")))
                .unwrap_or_default(),
            c.p_value
                .map(|p| format!(", p = {p:.3}"))
                .unwrap_or_default()
        ));
        t.push_str(&format!(
            "\n{}{}{}",
            look(c.verdict).1,
            if c.reason.is_empty() { "" } else { ": " },
            c.reason
        ));
        if c.verdict != Verdict::NotJudged {
            t.push_str(&format!(
                "\nunchanged band \u{b1}{:.0} %, smallest change reported {:.0} %",
                c.delta * 100.0,
                c.eps * 100.0
            ));
        }
    } else {
        t.push_str(&format!(
            "\nmedian {} of {} runs: {}",
            median(&m.current_values)
                .map(fmt_value)
                .unwrap_or_else(|| "-".into()),
            m.current_values.len(),
            vals(&m.current_values)
        ));
    }
    t
}

/// Dots of every repetition of both sides on the metric's own linear scale, with the sides'
/// medians as ticks and the range's ends labelled with the unit.
fn repetitions(s: &mut Svg, m: &MetricInput, cy: f64, x0: f64, x1: f64) {
    let all: Vec<f64> = m
        .baseline_values
        .iter()
        .chain(&m.current_values)
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    if all.is_empty() {
        s.text(x0, cy + 4.0, "start", "small", "no values");
        return;
    }
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sc = Linear::new(lo, hi, x0 + 4.0, x1 - 4.0);
    s.line(x0, cy, x1, cy, "grid-l");
    s.text(x0 - 6.0, cy + 4.0, "end", "small", &fmt_value(lo));
    s.text(
        x1 + 6.0,
        cy + 4.0,
        "start",
        "small",
        &format!("{} {}", fmt_value(hi), m.unit),
    );
    let two = !m.baseline_values.is_empty();
    // Ticks at the centers the diff is computed from (one center: statistics.md); without a
    // comparison, at the median.
    let (bc, cc) = match &m.comparison {
        Some(c) => (c.baseline.center, c.current.center),
        None => (median(&m.baseline_values), median(&m.current_values)),
    };
    // (values, y, dot class, tick class, tick position)
    type Lane<'v> = (&'v [f64], f64, &'static str, &'static str, Option<f64>);
    let lanes: Vec<Lane<'_>> = if two {
        vec![
            (&m.baseline_values, cy - 5.0, "dot-b", "med-b", bc),
            (&m.current_values, cy + 5.0, "dot-c", "med-c", cc),
        ]
    } else {
        vec![(&m.current_values, cy, "dot-c", "med-c", cc)]
    };
    for (values, y, dot, med, center) in lanes {
        if let Some(md) = center.filter(|v| v.is_finite()) {
            let x = sc.map(md);
            s.line(x, y - 5.0, x, y + 5.0, med);
        }
        for v in values.iter().filter(|v| v.is_finite()) {
            s.circle(sc.map(*v), y, 3.2, dot);
        }
    }
}

/// Open a metric row at `top` of a diff or spread chart: its tip (closed by the caller), the
/// area that shows it and the metric's name with its direction; the row's middle.
fn row_start(s: &mut Svg, m: &MetricInput, top: f64) -> f64 {
    let cy = top + ROW / 2.0;
    s.open_tip(&row_tip(m));
    s.rect(0.0, top, WIDTH, ROW, "hit");
    s.text(
        NAME_END,
        cy + 4.0,
        "end",
        "name",
        &format!("{}{}", clip(&m.key.metric, 30), arrow(m.direction)),
    );
    cy
}

/// Column titles and a background stripe per row, the rows starting at `top`.
fn frame(s: &mut Svg, n: usize, top: f64, titles: &[(f64, &str, &str)]) {
    for (x, anchor, t) in titles {
        s.text(*x, 14.0, anchor, "title", t);
    }
    for i in 0..n {
        if i % 2 == 0 {
            s.rect(0.0, top + i as f64 * ROW, WIDTH, ROW, "stripe");
        }
    }
}

/// The diff chart of one test: a row per judged metric. The x axis is the log ratio
/// ln(current / baseline), labelled in percent, so that -50 % and +100 % are equally far from 0
/// and the verdict's symmetric band on logs (statistics.md) is drawn as it is tested.
pub(super) fn diff_chart(test: &str, metrics: &[&MetricInput]) -> String {
    let rows: Vec<&MetricInput> = metrics
        .iter()
        .copied()
        .filter(|m| m.comparison.is_some())
        .collect();
    let h = TOP + rows.len() as f64 * ROW + BOTTOM;
    let mut s = Svg::new(
        WIDTH,
        h,
        "chart diff",
        &format!("change of every metric of {test}, current against baseline"),
    );
    let half = diff_half(&rows);
    let x = Linear::new(-half, half, DIFF_X0, DIFF_X1);
    diff_axis(&mut s, &x, half, rows.len());
    for (i, m) in rows.iter().enumerate() {
        let Some(c) = &m.comparison else { continue };
        diff_row(&mut s, &x, half, m, c, i);
    }
    s.finish()
}

/// The diff chart's half range on the log-ratio axis: everything estimated, within
/// [ln 1.1, ln 11] either side.
fn diff_half(rows: &[&MetricInput]) -> f64 {
    let mut half = MIN_HALF;
    for m in rows {
        let Some(c) = &m.comparison else { continue };
        for v in [c.diff_pct, c.diff_lo_pct, c.diff_hi_pct]
            .into_iter()
            .flatten()
        {
            let l = ratio_ln(v);
            if l.is_finite() {
                half = half.max(l.abs());
            } else {
                half = MAX_HALF;
            }
        }
        if c.verdict != Verdict::NotJudged {
            half = half.max((1.0 + c.delta).ln());
        }
    }
    (half * 1.05).min(MAX_HALF)
}

/// The diff chart's column titles, stripes, percent ticks and axis for `n` rows.
fn diff_axis(s: &mut Svg, x: &Linear, half: f64, n: usize) {
    frame(
        s,
        n,
        TOP,
        &[
            (NAME_END, "end", "metric"),
            (
                (DIFF_X0 + DIFF_X1) / 2.0,
                "middle",
                "change of current vs baseline, 95 % interval",
            ),
            (VERDICT_X, "start", "verdict"),
            (
                (REP_X0 + REP_X1) / 2.0,
                "middle",
                "repetitions: \u{25CB} baseline \u{25CF} current",
            ),
        ],
    );
    let y0 = TOP;
    let y1 = TOP + n as f64 * ROW;
    let ticks = ratio_ticks(half, (DIFF_X1 - DIFF_X0) / (2.0 * half), 44.0);
    for t in &ticks {
        let tx = x.map(ratio_ln(*t));
        s.line(tx, y0, tx, y1, if *t == 0.0 { "zero" } else { "grid-l" });
        s.text(tx, y0 - 6.0, "middle", "small", &pct_label(*t));
        s.text(tx, y1 + 14.0, "middle", "small", &pct_label(*t));
    }
    s.line(DIFF_X0, y1, DIFF_X1, y1, "axis");
    s.text(
        (DIFF_X0 + DIFF_X1) / 2.0,
        y1 + 32.0,
        "middle",
        "axt",
        "change (%), log-ratio scale; grey band: \u{b1} \"unchanged\" margin",
    );
}

/// One row of the diff chart (the `i`th): the metric's name, its "unchanged" band, the bar of
/// its change with the interval's whiskers (arrows where clipped), the verdict and the
/// repetitions.
fn diff_row(
    s: &mut Svg,
    x: &Linear,
    half: f64,
    m: &MetricInput,
    c: &crate::compare::verdict::Comparison,
    i: usize,
) {
    let top = TOP + i as f64 * ROW;
    let cy = row_start(s, m, top);
    let (class, word, shape) = look(c.verdict);
    if c.verdict != Verdict::NotJudged {
        let b = (1.0 + c.delta).ln();
        s.rect(
            x.map(-b),
            top + 3.0,
            x.map(b) - x.map(-b),
            ROW - 6.0,
            "band",
        );
    }
    if let Some(d) = c.diff_pct {
        let l = ratio_ln(d).max(-half);
        s.rect(
            x.map(0.0),
            cy - 5.0,
            x.map(l) - x.map(0.0),
            10.0,
            &format!("bar v-{class}"),
        );
        if let (Some(lo), Some(hi)) = (c.diff_lo_pct, c.diff_hi_pct) {
            let (llo, lhi) = (ratio_ln(lo), ratio_ln(hi));
            let (xlo, xhi) = (x.map(llo.max(-half)), x.map(lhi.min(half)));
            s.line(xlo, cy, xhi, cy, "whisk");
            for (end, l, dir) in [(xlo, llo, -1.0), (xhi, lhi, 1.0)] {
                if l.abs() > half || !l.is_finite() {
                    // Clipped: an arrow head pointing off the axis.
                    s.path(
                        &format!(
                            "M{} {}L{} {}L{} {}Z",
                            num(end + dir * 6.0),
                            num(cy),
                            num(end),
                            num(cy - 4.0),
                            num(end),
                            num(cy + 4.0)
                        ),
                        "clip",
                    );
                } else {
                    s.line(end, cy - 5.0, end, cy + 5.0, "whisk");
                }
            }
        }
        if ratio_ln(d).abs() > half {
            // The estimate itself is off the axis: an arrow past the bar's end.
            let (end, dir) = if d > 0.0 {
                (DIFF_X1, 1.0)
            } else {
                (DIFF_X0, -1.0)
            };
            s.path(
                &format!(
                    "M{} {}L{} {}L{} {}Z",
                    num(end + dir * 9.0),
                    num(cy),
                    num(end + dir * 2.0),
                    num(cy - 6.0),
                    num(end + dir * 2.0),
                    num(cy + 6.0)
                ),
                &format!("v-{class}"),
            );
        }
        s.marker(shape, x.map(l), cy, 5.0, &format!("mk v-{class}"));
        s.text(
            VERDICT_X + 12.0,
            cy + 4.0,
            "start",
            "name",
            &format!("{word} {}", pct(Some(d))),
        );
    } else {
        s.text(
            VERDICT_X + 12.0,
            cy + 4.0,
            "start",
            "name",
            &format!("{word} (no estimate)"),
        );
    }
    s.marker(shape, VERDICT_X + 4.0, cy, 4.5, &format!("mk v-{class}"));
    repetitions(s, m, cy, REP_X0, REP_X1);
    s.close();
}

/// The chart of a single-selection report: each metric's repetitions on its own scale.
pub(super) fn spread_chart(test: &str, metrics: &[&MetricInput]) -> String {
    let h = SPREAD_TOP + metrics.len() as f64 * ROW + 8.0;
    let mut s = Svg::new(
        WIDTH,
        h,
        "chart spread",
        &format!("repetitions of every metric of {test}"),
    );
    let (x0, x1) = (NAME_END + 110.0, NAME_END + 560.0);
    frame(
        &mut s,
        metrics.len(),
        SPREAD_TOP,
        &[
            (NAME_END, "end", "metric"),
            (
                (x0 + x1) / 2.0,
                "middle",
                "repetitions (dots) and their median (tick), own scale per metric",
            ),
            (x1 + 150.0, "start", "median"),
        ],
    );
    for (i, m) in metrics.iter().enumerate() {
        let cy = row_start(&mut s, m, SPREAD_TOP + i as f64 * ROW);
        repetitions(&mut s, m, cy, x0, x1);
        s.text(
            x1 + 150.0,
            cy + 4.0,
            "start",
            "name",
            &format!(
                "{} {} (n = {})",
                median(&m.current_values)
                    .map(fmt_value)
                    .unwrap_or_else(|| "-".into()),
                m.unit,
                m.current_values.len()
            ),
        );
        s.close();
    }
    s.finish()
}

/// A tick label: like the tables' numbers, with k, M and G for ten thousand and more.
pub(super) fn axis_value(v: f64) -> String {
    let a = v.abs();
    let (x, suffix) = if a >= 1e10 {
        (v / 1e9, "G")
    } else if a >= 1e7 {
        (v / 1e6, "M")
    } else if a >= 1e4 {
        (v / 1e3, "k")
    } else {
        return fmt_value(v);
    };
    let s = format!("{x:.1}");
    format!("{}{suffix}", s.trim_end_matches(".0"))
}

/// A latency as a tick label with a readable time unit (`250 ns`, `1 µs`, `20 ms`).
pub(super) fn time_label(v: f64, unit: Unit) -> String {
    let ns = match unit {
        Unit::Nanoseconds => v,
        Unit::Microseconds => v * 1e3,
        Unit::Milliseconds => v * 1e6,
        Unit::Seconds => v * 1e9,
        other => return format!("{} {}", fmt_value(v), other),
    };
    let (x, u) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "\u{b5}s")
    } else {
        (ns, "ns")
    };
    let s = if x >= 100.0 || x.fract() == 0.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{s} {u}")
}

/// A percentile as a tick label: 50, 90, 99, 99.9, ...
fn percentile_label(q: f64) -> String {
    let p = 100.0 * (1.0 - q);
    let s = format!("{p:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A chart's size and its plot area's margins.
#[derive(Clone, Copy)]
pub(super) struct Area {
    pub w: f64,
    pub h: f64,
    /// Margins: left, right, top, bottom.
    pub l: f64,
    pub r: f64,
    pub t: f64,
    pub b: f64,
}

impl Area {
    /// A chart of this size, of class `class`, labelled `label` for screen readers, with
    /// `title` at its top left.
    pub(super) fn titled(self, class: &str, label: &str, title: &str) -> Svg {
        let mut s = Svg::new(self.w, self.h, class, label);
        s.text(8.0, 16.0, "start", "title", title);
        s
    }

    /// Chart `s`, saying in its middle that it has no values.
    pub(super) fn no_values(self, mut s: Svg) -> String {
        s.text(
            self.w / 2.0,
            self.h / 2.0,
            "middle",
            "name",
            "no values recorded",
        );
        s.finish()
    }
}

/// A chart's grid, ticks, axis lines and axis titles, in this order: at each y tick (its
/// position, its label) a horizontal grid line and the label left of the area; at each x tick
/// a vertical grid line and the label below; the x and the y axis lines; `xtitle` below the
/// area and `ytitle` turned along the left edge.
pub(super) fn grid_and_axes(
    s: &mut Svg,
    a: Area,
    yticks: &[(f64, String)],
    xticks: &[(f64, String)],
    (xtitle, ytitle): (&str, &str),
) {
    let Area { w, h, l, r, t, b } = a;
    for (ty, label) in yticks {
        s.line(l, *ty, w - r, *ty, "grid-l");
        s.text(l - 6.0, ty + 4.0, "end", "small", label);
    }
    for (tx, label) in xticks {
        s.line(*tx, t, *tx, h - b, "grid-l");
        s.text(*tx, h - b + 14.0, "middle", "small", label);
    }
    s.line(l, h - b, w - r, h - b, "axis");
    s.line(l, t, l, h - b, "axis");
    s.text((l + w - r) / 2.0, h - 10.0, "middle", "axt", xtitle);
    s.vtext(14.0, (t + h - b) / 2.0, "axt", ytitle);
}

/// The legend of a chart of the sides, from `x0` along the top: per side (its line's class, its
/// name) a stroke and the name with its runs' labels.
pub(super) fn side_legend(s: &mut Svg, x0: f64, sides: &[(&str, &str)], input: &ReportInput) {
    let mut lx = x0;
    for (line, name) in sides {
        s.line(lx, 26.0, lx + 24.0, 26.0, line);
        let side = if *name == "baseline" {
            input.baseline.as_ref().map(super::side_labels)
        } else {
            Some(super::side_labels(&input.current))
        };
        s.text(
            lx + 28.0,
            30.0,
            "start",
            "small",
            &format!("{name} {}", clip(&side.unwrap_or_default(), 14)),
        );
        lx += 125.0;
    }
}

/// Percentile curves of both sides overlaid: x = log10(1 / (1 - p)), so p50, p90, p99, p99.9 are
/// evenly spaced; y = log10 of the value.
pub(super) fn percentile_chart(c: &PercentileCurves, input: &ReportInput) -> String {
    let (w, h) = (548.0, 300.0);
    let (l, r, t, b) = (70.0, 14.0, 40.0, 44.0);
    let sides: Vec<(&Curve, &str, &str, &str)> = [
        (c.baseline.as_ref(), "cb", "dot-b", "baseline"),
        (
            c.current.as_ref(),
            "cc",
            "dot-c",
            if input.baseline.is_some() {
                "current"
            } else {
                "runs"
            },
        ),
    ]
    .into_iter()
    .filter_map(|(cv, line, dot, name)| cv.map(|cv| (cv, line, dot, name)))
    .filter(|(cv, ..)| cv.count > 0 && !cv.points.is_empty())
    .collect();
    let area = Area { w, h, l, r, t, b };
    let mut s = area.titled(
        "card chart pct",
        &format!("percentiles of {} in {}", c.name, c.test),
        &format!("{} ({})", c.name, c.unit),
    );
    if sides.is_empty() {
        return area.no_values(s);
    }
    let n_max = sides.iter().map(|(cv, ..)| cv.count).max().unwrap_or(1) as f64;
    let xmax = n_max.max(10.0).log10();
    let x = Linear::new(0.0, xmax, l, w - r);
    let pos = |p: f64, count: u64| -> f64 {
        let q = (1.0 - p / 100.0).max(1.0 / count as f64);
        (1.0 / q).log10()
    };
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for (cv, ..) in &sides {
        for (_, v) in &cv.points {
            if *v > 0.0 {
                lo = lo.min(*v);
            }
        }
        hi = hi.max(cv.max);
    }
    if !(lo.is_finite() && hi.is_finite() && hi > 0.0) {
        lo = 1.0;
        hi = hi.max(10.0);
    }
    let (ylo, yhi) = (lo / 1.3, hi * 1.3);
    let y = Log10::new(ylo, yhi, h - b, t);
    let yticks: Vec<(f64, String)> = log_ticks(ylo, yhi)
        .into_iter()
        .map(|tv| (y.map(tv), time_label(tv, c.unit)))
        .collect();
    let mut xticks = Vec::new();
    let mut q: f64 = 0.5;
    while (1.0 / q).log10() <= xmax + 1e-9 {
        xticks.push((x.map((1.0 / q).log10()), percentile_label(q)));
        q = if q == 0.5 { 0.1 } else { q / 10.0 };
    }
    // Time ticks carry their own unit (ns, µs, ms, s); other units go in the title.
    let ytitle = match c.unit {
        Unit::Nanoseconds | Unit::Microseconds | Unit::Milliseconds | Unit::Seconds => {
            "latency, log scale".to_string()
        }
        u => format!("value ({u}), log scale"),
    };
    grid_and_axes(
        &mut s,
        area,
        &yticks,
        &xticks,
        ("percentile (%), log scale of 1/(1 \u{2212} p)", &ytitle),
    );
    let legend: Vec<(&str, &str)> = sides
        .iter()
        .map(|(_, line, _, name)| (*line, *name))
        .collect();
    side_legend(&mut s, w - r - 250.0, &legend, input);
    for (cv, line, dot, name) in &sides {
        let mut pts: Vec<(f64, f64)> = cv
            .points
            .iter()
            .filter(|(_, v)| *v > 0.0)
            .map(|(p, v)| (x.map(pos(*p, cv.count)), y.map(*v)))
            .collect();
        let xm = x.map(pos(100.0, cv.count));
        pts.push((xm, y.map(cv.max)));
        s.polyline(&pts, line);
        for want in [50.0, 90.0, 99.0, 99.9, 99.99, 99.999] {
            if (1.0 - want / 100.0) * (cv.count as f64) < 1.0 {
                break;
            }
            // The stored curve's point at (or just past) this percentile.
            if let Some((p, v)) = cv.points.iter().find(|(p, _)| *p >= want - 1e-9) {
                s.open_tip(&format!(
                    "{name} p{}: {} ({} values)",
                    percentile_label(1.0 - p / 100.0),
                    time_label(*v, c.unit),
                    cv.count
                ));
                s.circle(x.map(pos(*p, cv.count)), y.map(*v), 3.5, dot);
                s.close();
            }
        }
        s.open_tip(&format!("{name} max: {}", time_label(cv.max, c.unit)));
        s.marker(Shape::Square, xm, y.map(cv.max), 3.5, dot);
        s.close();
    }
    s.finish()
}

/// Most runs in a history whose every run gets a dot with a tip (more would overlap).
pub(super) const HISTORY_DOTS: usize = 60;

/// A history sparkline: the run medians in run order, change points as dashed lines, each
/// segment's level as a step, the compared runs ringed (baseline) or filled (current).
pub(super) fn history_chart(m: &MetricInput) -> String {
    let Some(hist) = &m.history else {
        return String::new();
    };
    let (w, h) = (270.0, 104.0);
    let (l, r, t, b) = (58.0, 10.0, 22.0, 26.0);
    let mut s = Svg::new(
        w,
        h,
        "card chart hist",
        &format!("history of {}", m.key.metric),
    );
    s.text(6.0, 14.0, "start", "title", &clip(&m.key.metric, 36));
    let pts: Vec<f64> = hist.points.iter().map(|p| p.median).collect();
    if pts.is_empty() {
        return s.finish();
    }
    let lo = pts.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = pts.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pad = if hi > lo {
        (hi - lo) * 0.08
    } else {
        lo.abs().max(1.0) * 0.05
    };
    let y = Linear::new(lo - pad, hi + pad, h - b, t);
    let n = pts.len();
    let x = Linear::new(0.0, (n.max(2) - 1) as f64, l + 4.0, w - r - 4.0);
    s.line(l, t, l, h - b, "axis");
    s.line(l, h - b, w - r, h - b, "axis");
    let ticks = nice_ticks(lo - pad, hi + pad, 3);
    for tv in &ticks {
        let ty = y.map(*tv);
        s.line(l, ty, w - r, ty, "grid-l");
        s.text(l - 4.0, ty + 4.0, "end", "small", &axis_value(*tv));
    }
    s.text(w - r, 14.0, "end", "small", m.unit.as_str());
    let first = &hist.points[0];
    let last = &hist.points[n - 1];
    s.text(
        l,
        h - b + 13.0,
        "start",
        "small",
        &format!("run {}", first.run_id),
    );
    s.text(
        w - r,
        h - b + 13.0,
        "end",
        "small",
        &format!("run {}", last.run_id),
    );
    s.text(
        (l + w - r) / 2.0,
        h - 3.0,
        "middle",
        "small",
        &format!(
            "{n} runs, {} change point{}",
            hist.change_points.len(),
            if hist.change_points.len() == 1 {
                ""
            } else {
                "s"
            }
        ),
    );
    for seg in &hist.segments {
        let level = match hist.scale {
            Scale::Values => seg.mean,
            Scale::Ranks => seg.median,
        };
        if level.is_finite() {
            let xa = x.map(seg.start as f64 - 0.4);
            let xb = x.map(seg.end as f64 - 0.6);
            s.line(xa, y.map(level), xb, y.map(level), "seg");
        }
    }
    for cp in &hist.change_points {
        let cx = x.map(cp.index as f64 - 0.5);
        s.open_tip(&format!(
            "change point before run {}: {}{}, p = {:.2e}",
            hist.points.get(cp.index).map_or(0, |p| p.run_id),
            match hist.scale {
                Scale::Values => "mean ",
                Scale::Ranks => "median ",
            },
            cp.ratio
                .map(|r| pct(Some((r - 1.0) * 100.0)))
                .unwrap_or_else(|| "from 0".into()),
            cp.p_value
        ));
        s.line(cx, t, cx, h - b, "cp");
        s.rect(cx - 3.0, t, 6.0, h - b - t, "hit");
        s.close();
    }
    let line: Vec<(f64, f64)> = pts
        .iter()
        .enumerate()
        .map(|(i, v)| (x.map(i as f64), y.map(*v)))
        .collect();
    s.polyline(&line, "hl");
    // Past HISTORY_DOTS runs the other runs' dots would overlap (the plot is under 200 px
    // wide) and no one of them could be pointed at: the line carries them, and only the
    // compared runs keep a dot and a tip (a 500-run history of 468 metrics was 31 MB of tips).
    let dots_for_others = n <= HISTORY_DOTS;
    for (i, p) in hist.points.iter().enumerate() {
        let (px, py) = (x.map(i as f64), y.map(p.median));
        let (class, r) = match p.role {
            Role::Baseline => ("dot-b", 3.6),
            Role::Current => ("dot-c", 3.6),
            Role::Other if dots_for_others => ("hp", 2.2),
            Role::Other => continue,
        };
        s.open_tip(&format!(
            "run {} ({}): median {} {} of {} repetition{}",
            p.run_id,
            p.label,
            fmt_value(p.median),
            m.unit,
            p.n,
            if p.n == 1 { "" } else { "s" }
        ));
        s.circle(px, py, r, class);
        s.close();
    }
    s.finish()
}

/// fs_mark's Files/sec by iteration: one line per sample (baseline dashed and dark, current
/// solid and pink in a comparison), a marker per iteration whose tooltip names the sample.
pub(super) fn iterations_chart(t: &IterationTables, two_sides: bool) -> String {
    let (w, h) = (560.0, 200.0);
    let (l, r, top, b) = (64.0, 14.0, 24.0, 38.0);
    let mut s = Svg::new(
        w,
        h,
        "card chart iters",
        &format!(
            "fs_mark files/sec by iteration of {} on {}",
            t.test, t.config
        ),
    );
    s.text(6.0, 14.0, "start", "title", "Files/sec by iteration");
    let values: Vec<f64> = t
        .samples
        .iter()
        .flat_map(|x| x.rows.iter().map(|r| r.files_per_sec))
        .filter(|v| v.is_finite())
        .collect();
    let n = t.samples.iter().map(|x| x.rows.len()).max().unwrap_or(0);
    if values.is_empty() || n == 0 {
        return s.finish();
    }
    let lo = values
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .min(0.0);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let hi = if hi > lo { hi * 1.05 } else { lo + 1.0 };
    let y = Linear::new(lo, hi, h - b, top);
    let x = Linear::new(1.0, n.max(2) as f64, l + 8.0, w - r - 8.0);
    s.line(l, top, l, h - b, "axis");
    s.line(l, h - b, w - r, h - b, "axis");
    for tv in nice_ticks(lo, hi, 4) {
        let ty = y.map(tv);
        s.line(l, ty, w - r, ty, "grid-l");
        s.text(l - 4.0, ty + 4.0, "end", "small", &axis_value(tv));
    }
    for i in 1..=n {
        s.text(
            x.map(i as f64),
            h - b + 13.0,
            "middle",
            "small",
            &i.to_string(),
        );
    }
    s.text(
        (l + w - r) / 2.0,
        h - 6.0,
        "middle",
        "axt",
        "iteration (-L loop)",
    );
    s.vtext(12.0, (top + h - b) / 2.0, "axt", "files/sec");
    for smp in &t.samples {
        let base = two_sides && smp.role == Role::Baseline;
        let (line, dot) = if base {
            ("cb", "dot-b")
        } else {
            ("cc", "dot-c")
        };
        let pts: Vec<(f64, f64)> = smp
            .rows
            .iter()
            .filter(|r| r.files_per_sec.is_finite())
            .map(|r| (x.map(r.iteration as f64), y.map(r.files_per_sec)))
            .collect();
        if pts.len() > 1 {
            s.polyline(&pts, line);
        }
        let side = match (two_sides, base) {
            (false, _) => "",
            (true, true) => "baseline, ",
            (true, false) => "current, ",
        };
        for (r, (px, py)) in smp
            .rows
            .iter()
            .filter(|r| r.files_per_sec.is_finite())
            .zip(&pts)
        {
            s.open_tip(&format!(
                "{side}run {}, repetition {} (sample {}), iteration {}: {:.1} files/sec",
                smp.run_id, smp.repetition, smp.sample_id, r.iteration, r.files_per_sec
            ));
            s.circle(*px, *py, 3.2, dot);
            s.close();
        }
    }
    s.finish()
}

/// fio's direction names, by ddir.
const DDIRS: [&str; 3] = ["read", "write", "trim"];

/// One fio log over the job's time: a line per sample and direction (read pink, write blue,
/// trim orange; a comparison's baseline lines dashed, its reads dark), a marker per point whose
/// tooltip gives the time span, the lines behind it and their mean, minimum and maximum.
pub(super) fn fio_log_chart(c: &FioLogChart, two_sides: bool) -> String {
    let (w, h) = (560.0, 220.0);
    let (l, r, top, b) = (70.0, 14.0, 24.0, 38.0);
    let what = match c.kind {
        super::FioLogKind::Lat => "total latency",
        super::FioLogKind::Slat => "submission latency",
        super::FioLogKind::Clat => "completion latency",
        super::FioLogKind::Bw => "bandwidth, KiB/s",
        super::FioLogKind::Iops => "I/Os per second",
    };
    let mut s = Svg::new(
        w,
        h,
        "card chart fiolog",
        &format!("fio log {} ({what}) of {} on {}", c.file, c.test, c.config),
    );
    s.text(6.0, 14.0, "start", "title", &format!("{} ({what})", c.file));
    let points = || c.series.iter().flat_map(|x| x.points.iter());
    let hi = points().map(|p| p.value).fold(0.0, f64::max);
    let t_hi = points().map(|p| p.to_ms).max().unwrap_or(0) as f64 / 1000.0;
    if points().next().is_none() {
        s.text(w / 2.0, h / 2.0, "middle", "small", "the log has no lines");
        return s.finish();
    }
    let t_hi = if t_hi > 0.0 { t_hi } else { 0.001 };
    let x = Linear::new(0.0, t_hi, l, w - r);
    s.line(l, top, l, h - b, "axis");
    s.line(l, h - b, w - r, h - b, "axis");
    let label = |v: f64| {
        if c.kind.is_latency() {
            time_label(v, Unit::Nanoseconds)
        } else {
            axis_value(v)
        }
    };
    // Latencies span decades (a 10 µs write beside a 1 ms read): a log axis; rates a linear
    // one from 0.
    enum Y {
        Lin(Linear),
        Log(Log10),
    }
    let (y, ticks) = if c.kind.is_latency() {
        let lo = points()
            .map(|p| p.value)
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        let (lo, hi) = if lo.is_finite() && hi > lo {
            (lo / 1.2, hi * 1.2)
        } else {
            (1.0, hi.max(1.0) * 10.0)
        };
        (Y::Log(Log10::new(lo, hi, h - b, top)), log_ticks(lo, hi))
    } else {
        let hi = if hi > 0.0 { hi * 1.05 } else { 1.0 };
        (
            Y::Lin(Linear::new(0.0, hi, h - b, top)),
            nice_ticks(0.0, hi, 4),
        )
    };
    let ymap = |v: f64| match &y {
        Y::Lin(s) => s.map(v),
        Y::Log(s) => s.map(v),
    };
    for tv in ticks {
        let ty = ymap(tv);
        s.line(l, ty, w - r, ty, "grid-l");
        s.text(l - 4.0, ty + 4.0, "end", "small", &label(tv));
    }
    for tv in nice_ticks(0.0, t_hi, 6) {
        // nice_ticks rounds to the step: 0.2, 1.5, 10.
        s.text(x.map(tv), h - b + 13.0, "middle", "small", &format!("{tv}"));
    }
    s.text(
        (l + w - r) / 2.0,
        h - 6.0,
        "middle",
        "axt",
        "seconds since the job started",
    );
    s.vtext(
        12.0,
        (top + h - b) / 2.0,
        "axt",
        if c.kind.is_latency() {
            c.kind.name()
        } else if c.kind == super::FioLogKind::Bw {
            "KiB/s"
        } else {
            "IOPS"
        },
    );
    for x_s in &c.series {
        let base = two_sides && x_s.role == Role::Baseline;
        let (line, dot) = match (x_s.ddir, base) {
            (0, true) => ("cb", "dot-b"),
            (0, false) => ("cc", "dot-c"),
            (1, true) => ("fl-wb", "dot-w"),
            (1, false) => ("fl-w", "dot-w"),
            (_, true) => ("fl-tb", "dot-t"),
            (_, false) => ("fl-t", "dot-t"),
        };
        let pts: Vec<(f64, f64)> = x_s
            .points
            .iter()
            .map(|p| {
                let mid = (p.from_ms + p.to_ms) as f64 / 2000.0;
                (x.map(mid), ymap(p.value))
            })
            .collect();
        if pts.len() > 1 {
            s.polyline(&pts, line);
        }
        let side = match (two_sides, base) {
            (false, _) => "",
            (true, true) => "baseline, ",
            (true, false) => "current, ",
        };
        let dir = DDIRS.get(x_s.ddir as usize).copied().unwrap_or("trim");
        for (p, (px, py)) in x_s.points.iter().zip(&pts) {
            let span = if p.from_ms == p.to_ms {
                format!("{} ms", p.from_ms)
            } else {
                format!("{}..{} ms", p.from_ms, p.to_ms)
            };
            let lines = if p.n == 1 {
                String::new()
            } else {
                format!(
                    " ({} lines, min {}, max {})",
                    p.n,
                    label(p.min as f64),
                    label(p.max as f64)
                )
            };
            s.open_tip(&format!(
                "{side}run {}, repetition {} (sample {}), {dir}, {span}: {}{lines}",
                x_s.run_id,
                x_s.repetition,
                x_s.sample_id,
                label(p.value)
            ));
            s.circle(*px, *py, 2.2, dot);
            s.close();
        }
    }
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_labels_pick_a_readable_unit() {
        assert_eq!(time_label(250.0, Unit::Nanoseconds), "250 ns");
        assert_eq!(time_label(1000.0, Unit::Nanoseconds), "1 \u{b5}s");
        assert_eq!(time_label(2.5e7, Unit::Nanoseconds), "25 ms");
        assert_eq!(time_label(1500.0, Unit::Microseconds), "1.5 ms");
        assert_eq!(time_label(3.0, Unit::Seconds), "3 s");
        assert_eq!(time_label(12.0, Unit::Count), "12 count");
    }

    #[test]
    fn axis_values_are_short() {
        assert_eq!(axis_value(9999.0), "9999");
        assert_eq!(axis_value(20000.0), "20k");
        assert_eq!(axis_value(12_500_000.0), "12.5M");
        assert_eq!(axis_value(-3e10), "-30G");
        assert_eq!(axis_value(0.05), "0.0500");
    }

    #[test]
    fn percentile_labels_count_nines() {
        assert_eq!(percentile_label(0.5), "50");
        assert_eq!(percentile_label(0.01), "99");
        assert_eq!(percentile_label(0.0001), "99.99");
    }
}
