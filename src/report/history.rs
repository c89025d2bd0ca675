//! `fsdelta history` output: one line per run (median of its repetitions, n, spread) with change
//! points marked, then the segments and the ratio between neighbouring segments. 80 columns.
//!
//! Pure: renders a [`History`] as text or JSON; must never compute statistics or read the store.

use crate::compare::history::History;
use crate::report::text::fmt_value;
use std::fmt::Write;

/// JSON rendering: the history under the export's `schema_version`.
pub fn json(h: &History) -> Result<String, serde_json::Error> {
    let mut s = serde_json::to_string_pretty(&serde_json::json!({
        "schema_version": crate::report::export::EXPORT_SCHEMA_VERSION,
        "history": h,
    }))?;
    s.push('\n');
    Ok(s)
}

/// Text rendering.
pub fn text(h: &History) -> String {
    let mut out = String::new();
    let unit = h.unit.map(|u| u.as_str()).unwrap_or("");
    let _ = writeln!(
        out,
        "{} / {}{}: {} runs, medians of their repetitions ({unit})",
        h.test,
        h.metric,
        h.config
            .as_deref()
            .map(|c| format!(" on {c}"))
            .unwrap_or_default(),
        h.points.len()
    );
    let _ = writeln!(
        out,
        "{:>6}  {:<16}  {:<14} {:>3} {:>11} {:>11} {:>7}",
        "run", "started (UTC)", "label", "n", "median", "range", "cv"
    );
    for (i, p) in h.points.iter().enumerate() {
        if let Some(cp) = h.change_points.iter().find(|c| c.index == i) {
            let _ = writeln!(
                out,
                "  ---- change point: {}{} (p = {:.2e})",
                cp.ratio
                    .map(|r| format!("{:+.1} %", 100.0 * (r - 1.0)))
                    .unwrap_or_else(|| "from 0".into()),
                if h.on_ranks {
                    ", detected on ranks"
                } else {
                    ""
                },
                cp.p_value
            );
        }
        let started = p
            .started_at
            .get(..16)
            .unwrap_or(&p.started_at)
            .replace('T', " ");
        let label: String = p.label.chars().take(14).collect();
        let _ = writeln!(
            out,
            "{:>6}  {:<16}  {:<14} {:>3} {:>11} {:>11} {:>7}",
            p.run_id,
            started,
            label,
            p.n,
            fmt_value(p.median),
            fmt_value(p.max - p.min),
            p.cv.map(|c| format!("{:.1}%", 100.0 * c))
                .unwrap_or_else(|| "-".into())
        );
    }
    if h.points.len() < 3 {
        let _ = writeln!(out, "\n(change points need at least 3 runs)");
        return out;
    }
    let _ = writeln!(out);
    if let Some(why) = &h.skipped {
        let _ = writeln!(out, "no change points: {why}");
        return out;
    }
    if h.change_points.is_empty() {
        let _ = writeln!(out, "no change point (E-divisive means, p < 0.001)");
    }
    for (k, s) in h.segments.iter().enumerate() {
        let first = &h.points[s.start];
        let last = &h.points[s.end - 1];
        let ratio = if k == 0 {
            String::new()
        } else {
            let prev = h.segments[k - 1].median;
            if prev != 0.0 {
                format!("  {:+.1} % vs previous", 100.0 * (s.median / prev - 1.0))
            } else {
                String::new()
            }
        };
        let _ = writeln!(
            out,
            "segment runs {}..{} ({} runs): median {} {unit}{ratio}",
            first.run_id,
            last.run_id,
            s.end - s.start,
            fmt_value(s.median)
        );
    }
    out
}
