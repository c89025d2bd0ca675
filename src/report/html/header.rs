//! The report's header: who the sides are, what differs between them (first, in a box: mount
//! options before anything else), and the full setup of both sides with the differing rows
//! highlighted.
//!
//! Nothing here is inferred: a fact is shown as the store recorded it, and two sides differ only
//! when their recorded values differ.

use super::{ConfigFacts, ReportInput, SideInput};
use crate::model::RunInfo;
use crate::model::SiteFacts;
use crate::report::svg::esc;
use std::collections::BTreeSet;
use std::fmt::Write;

/// Distinct values, sorted, empty strings kept as they are.
fn distinct(values: impl Iterator<Item = String>) -> Vec<String> {
    values.collect::<BTreeSet<_>>().into_iter().collect()
}

/// Values joined for display; `(none)` when there is nothing or only empty text.
fn show(v: &[String]) -> String {
    if v.iter().all(|s| s.is_empty()) {
        "(none)".into()
    } else {
        v.join(" | ")
    }
}

fn dates(s: &SideInput) -> String {
    let mut d: Vec<String> = s
        .runs
        .iter()
        .map(|r| r.started_at.format("%Y-%m-%d %H:%M UTC").to_string())
        .collect();
    d.sort();
    match (d.first(), d.last()) {
        (Some(a), Some(b)) if a != b => format!("{a} to {b}"),
        (Some(a), _) => a.clone(),
        _ => "-".into(),
    }
}

fn run_field(s: &SideInput, f: fn(&RunInfo) -> String) -> Vec<String> {
    distinct(s.runs.iter().map(f))
}

/// The line under the title: each side's selector, runs and dates.
pub(super) fn sides_line(out: &mut String, input: &ReportInput) {
    out.push_str("<p class=\"sides\">");
    if let Some(b) = &input.baseline {
        let _ = write!(
            out,
            "<b>baseline</b> {} &middot; {}<br>",
            esc(&b.description),
            esc(&dates(b))
        );
        out.push_str("<b>current</b> ");
    } else {
        out.push_str("<b>runs</b> ");
    }
    let _ = writeln!(
        out,
        "{} &middot; {}</p>",
        esc(&input.current.description),
        esc(&dates(&input.current))
    );
}

/// Mount option tokens of a list of option strings.
fn tokens(v: &[String]) -> BTreeSet<String> {
    v.iter()
        .flat_map(|s| s.split(','))
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// The options of `mine`, with the tokens missing from `other` wrapped in `tag` (del or ins).
fn marked_options(mine: &[String], other: &[String], tag: &str) -> String {
    let theirs = tokens(other);
    let parts: Vec<String> = mine
        .iter()
        .map(|s| {
            s.split(',')
                .filter(|t| !t.is_empty())
                .map(|t| {
                    if theirs.contains(t) {
                        esc(t)
                    } else {
                        format!("<{tag}>{}</{tag}>", esc(t))
                    }
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    if parts.iter().all(|p| p.is_empty()) {
        "(none)".into()
    } else {
        parts.join(" | ")
    }
}

/// One fact of a configuration on both sides.
struct Fact {
    what: String,
    /// Lower comes first in the differences box.
    priority: u8,
    base: Vec<String>,
    cur: Vec<String>,
}

fn config_facts(c: &ConfigFacts) -> Vec<Fact> {
    let side = |v: &[SiteFacts], f: &dyn Fn(&SiteFacts) -> String| distinct(v.iter().map(f));
    let mut facts = vec![
        Fact {
            what: "mount options".into(),
            priority: 0,
            base: side(&c.baseline, &|f| f.mount_options.clone()),
            cur: side(&c.current, &|f| f.mount_options.clone()),
        },
        Fact {
            what: "mkfs options".into(),
            priority: 1,
            base: side(&c.baseline, &mkfs),
            cur: side(&c.current, &mkfs),
        },
        Fact {
            what: "filesystem".into(),
            priority: 1,
            base: side(&c.baseline, &|f| f.fs_type.clone()),
            cur: side(&c.current, &|f| f.fs_type.clone()),
        },
        Fact {
            what: "device".into(),
            priority: 4,
            base: side(&c.baseline, &|f| f.device.clone()),
            cur: side(&c.current, &|f| f.device.clone()),
        },
    ];
    let keys: BTreeSet<&String> = c
        .baseline
        .iter()
        .chain(&c.current)
        .flat_map(|f| f.extra.keys())
        .filter(|k| !crate::compare::context::volatile_fact(k))
        .collect();
    for k in keys {
        let get = |f: &SiteFacts| f.extra.get(k).cloned().unwrap_or_default();
        facts.push(Fact {
            what: extra_name(k),
            priority: 4,
            base: side(&c.baseline, &get),
            cur: side(&c.current, &get),
        });
    }
    facts
}

fn mkfs(f: &SiteFacts) -> String {
    f.mkfs_options
        .clone()
        .unwrap_or_else(|| "(not formatted by fsdelta)".into())
}

/// A readable name for an `extra` fact; unknown keys are shown with spaces for underscores.
fn extra_name(k: &str) -> String {
    match k {
        "mount_point" => "mount point".into(),
        "hook_before" => "before hook".into(),
        "hook_after" => "after hook".into(),
        "caches_dropped" => "page cache dropped".into(),
        "scheduler" => "I/O scheduler".into(),
        other => other.replace('_', " "),
    }
}

/// One fact of a run: its name, whether a difference between the sides is worth flagging (a
/// label or a date always differs), its priority in the differences box, and how to read it.
type RunRow = (&'static str, bool, u8, fn(&RunInfo) -> String);

/// The facts of a run shown in the setup.
fn run_rows() -> Vec<RunRow> {
    vec![
        ("runs", false, 9, |r| r.id.to_string()),
        ("label", false, 9, |r| r.label.clone()),
        ("status", false, 9, |r| r.status.as_str().to_string()),
        ("kernel release", true, 3, |r| {
            r.environment.kernel_release.clone()
        }),
        ("kernel version", true, 3, |r| {
            r.environment.kernel_version.clone()
        }),
        ("kernel command line", true, 3, |r| {
            r.environment.cmdline.clone()
        }),
        ("host", true, 5, |r| r.environment.host.clone()),
        ("CPU", true, 5, |r| r.environment.cpu_model.clone()),
        ("cores", true, 5, |r| r.environment.cores.to_string()),
        ("memory", true, 5, |r| {
            format!(
                "{:.1} GiB",
                r.environment.memory_bytes as f64 / (1u64 << 30) as f64
            )
        }),
        ("fsdelta version", true, 5, |r| r.fsdelta_version.clone()),
    ]
}

/// The box of differences between the sides, most important first; or a note that nothing
/// recorded differs.
pub(super) fn differences(out: &mut String, input: &ReportInput) {
    let Some(base) = &input.baseline else { return };
    let mut items: Vec<(u8, String)> = input
        .machine_warnings
        .iter()
        .map(|w| (0, format!("<b>the machine</b>: {}", esc(w))))
        .collect();
    for c in &input.configs {
        if c.baseline.is_empty() || c.current.is_empty() {
            items.push((
                2,
                format!(
                    "configuration <code>{}</code> is only on the {} side",
                    esc(&c.name),
                    if c.baseline.is_empty() {
                        "current"
                    } else {
                        "baseline"
                    }
                ),
            ));
            continue;
        }
        for f in config_facts(c) {
            if f.base == f.cur {
                continue;
            }
            let detail = if f.what == "mount options" {
                let (b, cu) = (tokens(&f.base), tokens(&f.cur));
                let removed: Vec<String> = b.difference(&cu).map(|t| esc(t)).collect();
                let added: Vec<String> = cu.difference(&b).map(|t| esc(t)).collect();
                let mut d = String::new();
                if !removed.is_empty() {
                    let _ = write!(d, " removed <del>{}</del>", removed.join("</del> <del>"));
                }
                if !added.is_empty() {
                    let _ = write!(d, " added <ins>{}</ins>", added.join("</ins> <ins>"));
                }
                d
            } else {
                String::new()
            };
            items.push((
                f.priority,
                format!(
                    "<b>{}</b> of configuration <code>{}</code>:{}{}baseline <code>{}</code>, current <code>{}</code>{}",
                    esc(&f.what),
                    esc(&c.name),
                    detail,
                    if detail.is_empty() { " " } else { " (" },
                    esc(&show(&f.base)),
                    esc(&show(&f.cur)),
                    if detail.is_empty() { "" } else { ")" }
                ),
            ));
        }
    }
    for w in &input.workloads {
        if w.baseline != w.current && !w.baseline.is_empty() && !w.current.is_empty() {
            items.push((
                2,
                format!(
                    "<b>workload</b> of test <code>{}</code> on <code>{}</code>: baseline <code>{}</code>, current <code>{}</code>",
                    esc(&w.test),
                    esc(&w.config),
                    esc(&show(&w.baseline)),
                    esc(&show(&w.current))
                ),
            ));
        }
    }
    for (what, flag, priority, f) in run_rows() {
        let (b, c) = (run_field(base, f), run_field(&input.current, f));
        if flag && b != c {
            items.push((
                priority,
                format!(
                    "<b>{}</b>: baseline <code>{}</code>, current <code>{}</code>",
                    esc(what),
                    esc(&show(&b)),
                    esc(&show(&c))
                ),
            ));
        }
    }
    items.sort_by_key(|(p, _)| *p);
    if items.is_empty() {
        out.push_str(
            "<div class=\"same\" id=\"differences\">Nothing recorded differs between the sides: \
             same mount and mkfs options, filesystem, device, workload, kernel and machine.</div>\n",
        );
        return;
    }
    let _ = write!(
        out,
        "<div class=\"diffbox\" id=\"differences\"><h2>What differs between the sides ({})</h2><ol>",
        items.len()
    );
    for (_, html) in items {
        let _ = write!(out, "<li>{html}</li>");
    }
    out.push_str("</ol></div>\n");
}

/// The setup of both sides: the runs' machine and kernel, and per configuration the target
/// facts; rows that differ are highlighted and marked.
/// With `full` false, the header's digest: label, start, host, kernel, and per configuration
/// filesystem, mkfs options, mount options and device; with `full` true, everything recorded.
pub(super) fn setup(out: &mut String, input: &ReportInput, full: bool) {
    let two = input.baseline.is_some();
    if full {
        out.push_str("<section id=\"setup\"><h2>Setup</h2>");
    } else {
        out.push_str("<section id=\"digest\">");
    }
    out.push_str("<table class=\"setup\"><thead><tr><th></th>");
    if two {
        out.push_str("<th>baseline</th><th>current</th>");
    } else {
        out.push_str("<th>runs</th>");
    }
    out.push_str("</tr></thead><tbody>\n");
    let started = |r: &RunInfo| r.started_at.format("%Y-%m-%d %H:%M:%S UTC").to_string();
    let mut rows = run_rows();
    rows.insert(2, ("started", false, 9, started));
    const DIGEST: [&str; 4] = ["label", "started", "host", "kernel release"];
    rows.retain(|(what, ..)| full || DIGEST.contains(what));
    for (what, flag, _, f) in rows {
        let c = run_field(&input.current, f);
        match &input.baseline {
            Some(b) => {
                let bv = run_field(b, f);
                row(
                    out,
                    what,
                    flag && bv != c,
                    &esc(&show(&bv)),
                    &esc(&show(&c)),
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "<tr><th>{}</th><td>{}</td></tr>",
                    esc(what),
                    esc(&show(&c))
                );
            }
        }
    }
    for c in &input.configs {
        let _ = writeln!(
            out,
            "<tr><th colspan=\"{}\" class=\"cfg\">configuration <code>{}</code></th></tr>",
            if two { 3 } else { 2 },
            esc(&c.name)
        );
        for f in config_facts(c) {
            if !full && f.priority > 1 && f.what != "device" {
                continue;
            }
            if two {
                let (b, cu) = if f.what == "mount options" {
                    (
                        marked_options(&f.base, &f.cur, "del"),
                        marked_options(&f.cur, &f.base, "ins"),
                    )
                } else {
                    (esc(&show(&f.base)), esc(&show(&f.cur)))
                };
                let differs = f.base != f.cur && !c.baseline.is_empty() && !c.current.is_empty();
                row(out, &f.what, differs, &b, &cu);
            } else {
                let _ = writeln!(
                    out,
                    "<tr><th>{}</th><td>{}</td></tr>",
                    esc(&f.what),
                    esc(&show(&f.cur))
                );
            }
        }
    }
    out.push_str("</tbody></table></section>\n");
}

fn row(out: &mut String, what: &str, differs: bool, base_html: &str, cur_html: &str) {
    let _ = writeln!(
        out,
        "<tr{}><th>{}{}</th><td>{}</td><td>{}</td></tr>",
        if differs { " class=\"changed\"" } else { "" },
        esc(what),
        if differs {
            " <span class=\"mark\">&ne; differs</span>"
        } else {
            ""
        },
        base_html,
        cur_html
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_mount_options_are_marked_token_by_token() {
        let b = vec!["rw,relatime,discard".to_string()];
        let c = vec!["rw,noatime,discard".to_string()];
        assert_eq!(
            marked_options(&b, &c, "del"),
            "rw,<del>relatime</del>,discard"
        );
        assert_eq!(
            marked_options(&c, &b, "ins"),
            "rw,<ins>noatime</ins>,discard"
        );
        assert_eq!(marked_options(&[String::new()], &b, "ins"), "(none)");
    }

    #[test]
    fn distinct_values_are_sorted_and_shown_joined() {
        let v = distinct(["b", "a", "b"].iter().map(|s| s.to_string()));
        assert_eq!(v, ["a", "b"]);
        assert_eq!(show(&v), "a | b");
        assert_eq!(show(&[]), "(none)");
    }
}
