//! The history chart of the history page: per run, the median with the spread of its
//! repetitions (min to max), the segments between change points at their centres, change
//! points as vertical rules (flagged, or marked expected when an alert says so) and alert
//! markers, drawn with the report's SVG writer (`report::svg`).
//!
//! Click-through without inline script: each point is a group of class `pt run-ID` and each
//! change a group of class `cp cpi-INDEX`; the server's script (`app.js`) turns a click into
//! the run's page or the change's comparison. Every label goes through the writer's escaping.
//! This module must never compute statistics (the history comes computed).

use crate::compare::history::History;
use crate::report::svg::{Linear, Svg, nice_ticks};

/// Width of the chart's drawing in SVG units (it scales to the page's width).
const W: f64 = 1100.0;
/// Height.
const H: f64 = 360.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 20.0;
const BOTTOM: f64 = 40.0;

/// How a change point is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mark {
    /// A change nobody said was expected.
    Flagged,
    /// A change an alert marked expected: drawn, not flagged.
    Expected,
}

/// The chart of `h`; `marks[i]` says how change point `i` is drawn; `alerts` are the indices of
/// points that carry an alert (a triangle above them).
pub fn history_svg(h: &History, marks: &[Mark], alerts: &[usize]) -> String {
    let n = h.points.len();
    let lo = h.points.iter().map(|p| p.min).fold(f64::INFINITY, f64::min);
    let hi = h
        .points
        .iter()
        .map(|p| p.max)
        .fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if lo.is_finite() && hi.is_finite() && hi > lo {
        let pad = (hi - lo) * 0.08;
        (lo - pad, hi + pad)
    } else {
        let v = if lo.is_finite() { lo } else { 0.0 };
        (v - 1.0, v + 1.0)
    };
    let x = Linear::new(0.0, (n.max(2) - 1) as f64, LEFT + 10.0, W - RIGHT - 10.0);
    let y = Linear::new(lo, hi, H - BOTTOM, TOP);
    let unit = h.unit.map(|u| u.to_string()).unwrap_or_default();
    let mut s = Svg::new(
        W,
        H,
        "history",
        &format!("history of {} {} ({unit})", h.test, h.metric),
    );
    for t in nice_ticks(lo, hi, 6) {
        s.line(LEFT, y.map(t), W - RIGHT, y.map(t), "grid");
        s.text(
            LEFT - 6.0,
            y.map(t) + 4.0,
            "end",
            "tick",
            &crate::report::text::fmt_value(t),
        );
    }
    s.line(LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM, "axis");
    s.text(
        LEFT,
        H - 10.0,
        "start",
        "tick",
        &format!("{n} runs, oldest left; {unit}"),
    );
    for seg in &h.segments {
        if seg.end == 0 || seg.start >= n {
            continue;
        }
        let c = if h.on_ranks { seg.median } else { seg.mean };
        s.line(
            x.map(seg.start as f64) - 4.0,
            y.map(c),
            x.map((seg.end - 1) as f64) + 4.0,
            y.map(c),
            "segment",
        );
    }
    for (i, cp) in h.change_points.iter().enumerate() {
        let expected = marks.get(i) == Some(&Mark::Expected);
        s.open_group(&format!(
            "cp cpi-{i}{}",
            if expected { " expected" } else { "" }
        ));
        s.open_tip(&format!(
            "change at run {}: {} ({}), p = {:.2e}; click to compare the segments",
            h.points[cp.index].run_id,
            cp.ratio
                .map(|r| super::pages::pct(r - 1.0))
                .unwrap_or_else(|| "?".into()),
            if expected { "expected" } else { "flagged" },
            cp.p_value
        ));
        let cx = (x.map(cp.index as f64 - 1.0) + x.map(cp.index as f64)) / 2.0;
        s.line(cx, TOP, cx, H - BOTTOM, "cp-rule");
        // The transparent target on top, so a click anywhere on the rule lands on it.
        s.rect(cx - 5.0, TOP, 10.0, H - BOTTOM - TOP, "cp-hit");
        s.close();
        s.close();
    }
    for (i, p) in h.points.iter().enumerate() {
        let px = x.map(i as f64);
        s.open_group(&format!("pt run-{}", p.run_id));
        s.open_tip(&format!(
            "run {} ({}), {}: median {} {unit} of {} (min {}, max {}); click to open the run",
            p.run_id,
            p.label,
            p.started_at.get(..16).unwrap_or(&p.started_at),
            crate::report::text::fmt_value(p.median),
            p.n,
            crate::report::text::fmt_value(p.min),
            crate::report::text::fmt_value(p.max)
        ));
        if p.max > p.min {
            s.line(px, y.map(p.min), px, y.map(p.max), "spread");
        }
        s.circle(px, y.map(p.median), 3.5, "median");
        if alerts.contains(&i) {
            s.marker(
                crate::report::svg::Shape::Triangle,
                px,
                TOP + 6.0,
                5.0,
                "alert-mark",
            );
        }
        s.rect(px - 6.0, TOP, 12.0, H - BOTTOM - TOP, "pt-hit");
        s.close();
        s.close();
    }
    s.finish()
}
