//! The report's response curves: for each swept test (`sweep = { iodepth = [...] }`), p99
//! completion latency against throughput (IOPS; bandwidth for a bs sweep), one line per side
//! through the points in sweep order, each point with its 95 % intervals as whiskers
//! (throughput across, p99 up and down), its
//! swept value beside it, each side's knee ringed and the point where the curves part marked.
//!
//! Like the rest of the renderer it only draws what `compare::curve` computed: every position
//! is a side's center or an end of its interval, never a default.

use super::ReportInput;
use crate::compare::curve::{Curve, Estimate, SidePoint};
use crate::model::Unit;
use crate::report::svg::{Log10, Svg, esc, log_ticks};
use std::fmt::Write;

use super::charts::{Area, axis_value, grid_and_axes, side_legend, time_label};

/// The "Response curves" section (nothing when the report has no swept test).
pub(super) fn section(out: &mut String, input: &ReportInput) {
    if input.response_curves.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<section id=\"curves\"><h2>Response curves</h2><p class=\"note\">p99 completion latency \
         against throughput (IOPS; bandwidth for a block-size sweep), log scales, one point per \
         swept value; whiskers are each side's 95 % interval (geometric mean, t on logs). The \
         ring marks a side's knee: the first point where p99 grew faster than throughput, by \
         more than 10 % (docs/comparing.md). The dashed line marks where the curves part: the \
         first point whose throughput or p99 verdict is regressed or improved, the curve's \
         points judged as one false-discovery family.</p>"
    );
    out.push_str("<div class=\"grid\">");
    for c in &input.response_curves {
        let _ = write!(
            out,
            "<figure class=\"card\">{}<figcaption>{}</figcaption></figure>",
            chart(c, input),
            esc(&c.sentence())
        );
    }
    out.push_str("</div></section>\n");
}

/// Each side's points (center and interval ends) that have both coordinates.
fn drawn(points: &[(&str, &SidePoint)]) -> Vec<(usize, Estimate, Estimate)> {
    points
        .iter()
        .enumerate()
        .filter_map(|(i, (_, s))| Some((i, s.throughput?, s.p99?)))
        .filter(|(_, t, l)| t.center > 0.0 && l.center > 0.0)
        .collect()
}

/// The chart's size and its plot area's margins.
const AREA: Area = Area {
    w: 548.0,
    h: 320.0,
    l: 70.0,
    r: 16.0,
    t: 40.0,
    b: 44.0,
};

/// A side as drawn: its points (index, throughput, p99), line, dot and whisker classes, knee
/// and name.
type DrawnSide<'a> = (
    Vec<(usize, Estimate, Estimate)>,
    &'a str,
    &'a str,
    &'a str,
    Option<usize>,
    &'a str,
);

/// One curve's chart.
pub(super) fn chart(c: &Curve, input: &ReportInput) -> String {
    let Area { w, h, l, r, t, b } = AREA;
    let two = input.baseline.is_some();
    let base: Vec<(&str, &SidePoint)> = c
        .points
        .iter()
        .map(|p| (p.value.as_str(), &p.baseline))
        .collect();
    let cur: Vec<(&str, &SidePoint)> = c
        .points
        .iter()
        .map(|p| (p.value.as_str(), &p.current))
        .collect();
    let sides: [DrawnSide<'_>; 2] = [
        (
            drawn(&base),
            "cb",
            "dot-b",
            "wb",
            c.knee_baseline,
            "baseline",
        ),
        (
            drawn(&cur),
            "cc",
            "dot-c",
            "wc",
            c.knee_current,
            if two { "current" } else { "runs" },
        ),
    ];
    let mut s = AREA.titled(
        "card chart curve",
        &format!(
            "response curve of {} ({}) over {}",
            c.test, c.direction, c.param
        ),
        &format!("{} {} over {} ({})", c.test, c.direction, c.param, c.config),
    );
    let all: Vec<&(usize, Estimate, Estimate)> = sides.iter().flat_map(|s| s.0.iter()).collect();
    if all.is_empty() {
        return AREA.no_values(s);
    }
    let span = |f: &dyn Fn(&Estimate) -> [f64; 3],
                pick: &dyn Fn(&(usize, Estimate, Estimate)) -> Estimate| {
        let vals: Vec<f64> = all
            .iter()
            .flat_map(|p| f(&pick(p)))
            .filter(|v| *v > 0.0 && v.is_finite())
            .collect();
        let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo / 1.25, hi * 1.25)
    };
    let ends = |e: &Estimate| [e.center, e.lo.unwrap_or(e.center), e.hi.unwrap_or(e.center)];
    let (xlo, xhi) = span(&ends, &|p| p.1);
    let (ylo, yhi) = span(&ends, &|p| p.2);
    let x = Log10::new(xlo, xhi, l, w - r);
    let y = Log10::new(ylo, yhi, h - b, t);
    axes(&mut s, c, (&x, xlo, xhi), (&y, ylo, yhi));
    // Where the curves part: a dashed vertical line at the current side's point.
    if let Some(i) = c.parts_at
        && let Some((_, tp, _)) = sides[1].0.iter().find(|(k, ..)| *k == i)
    {
        let px = x.map(tp.center);
        s.line(px, t, px, h - b, "part");
        s.text(
            px + 3.0,
            t + 10.0,
            "start",
            "small",
            &format!("part at {}", c.label(i)),
        );
    }
    legend(&mut s, &sides, input);
    for (pts, line, dot, whisk, knee, _) in &sides {
        if pts.is_empty() {
            continue;
        }
        let xy: Vec<(f64, f64)> = pts
            .iter()
            .map(|(_, tp, lp)| (x.map(tp.center), y.map(lp.center)))
            .collect();
        s.polyline(&xy, line);
        for ((i, tp, lp), (px, py)) in pts.iter().zip(&xy) {
            if let (Some(lo), Some(hi)) = (tp.lo, tp.hi) {
                s.line(x.map(lo), *py, x.map(hi), *py, whisk);
            }
            if let (Some(lo), Some(hi)) = (lp.lo, lp.hi) {
                s.line(*px, y.map(lo), *px, y.map(hi), whisk);
            }
            s.open_tip(&format!(
                "{}: {} {}, p99 {}",
                c.label(*i),
                axis_value(tp.center),
                throughput_name(c),
                time_label(lp.center, Unit::Nanoseconds)
            ));
            s.circle(*px, *py, 3.5, dot);
            s.close();
            s.text(px + 5.0, py - 5.0, "start", "small", &c.points[*i].value);
            if *knee == Some(*i) {
                s.circle(*px, *py, 8.0, "knee");
                s.text(px - 10.0, py + 16.0, "end", "small", "knee");
            }
        }
    }
    s.finish()
}

/// The grid, the ticks and the axis titles of a chart whose axes are `x` over `xlo..xhi` and
/// `y` over `ylo..yhi`.
fn axes(
    s: &mut Svg,
    c: &Curve,
    (x, xlo, xhi): (&Log10, f64, f64),
    (y, ylo, yhi): (&Log10, f64, f64),
) {
    let yticks: Vec<(f64, String)> = log_ticks(ylo, yhi)
        .into_iter()
        .map(|tv| (y.map(tv), time_label(tv, Unit::Nanoseconds)))
        .collect();
    let xticks: Vec<(f64, String)> = log_ticks(xlo, xhi)
        .into_iter()
        .map(|tv| (x.map(tv), axis_value(tv)))
        .collect();
    let xtitle = format!("{} {}, log scale", c.direction, throughput_name(c));
    grid_and_axes(
        s,
        AREA,
        &yticks,
        &xticks,
        (&xtitle, "p99 latency, log scale"),
    );
}

/// The legend: a line and the labels of each side drawn.
fn legend(s: &mut Svg, sides: &[DrawnSide<'_>; 2], input: &ReportInput) {
    let two = input.baseline.is_some();
    let shown: Vec<(&str, &str)> = sides
        .iter()
        .filter(|(pts, .., name)| !pts.is_empty() && (two || *name != "baseline"))
        .map(|(_, line, .., name)| (*line, *name))
        .collect();
    side_legend(s, AREA.w - AREA.r - 250.0, &shown, input);
}

/// What the x axis is: IOPS, or bytes a second for a block-size sweep.
fn throughput_name(c: &Curve) -> &'static str {
    if c.throughput == "bw_bytes" {
        "B/s"
    } else {
        "IOPS"
    }
}
