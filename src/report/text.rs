//! Plain-text renderers: the run summary, `list`, `show` and `compare` tables, each at most 80
//! columns wide so they paste into a mailing-list post unchanged.
//!
//! Pure functions from records to `String`; they must never read the store or the clock.

use crate::compare::{Paired, Series};
use crate::model::{Direction, SampleStatus};
use crate::model::{RunInfo, SampleRecord};
use std::fmt::Write;

/// Width of the metric-name column.
const NAME_W: usize = 26;

/// A number in at most 11 characters with about 4 significant digits: integers as integers,
/// small values with enough decimals, huge ones in e-notation.
pub fn fmt_value(v: f64) -> String {
    if v.is_nan() {
        return "-".into();
    }
    let a = v.abs();
    if a == 0.0 {
        "0".to_string()
    } else if a >= 1e11 {
        format!("{v:.3e}")
    } else if a >= 1000.0 || (v.fract() == 0.0 && a >= 1.0) {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.001 {
        format!("{v:.4}")
    } else {
        format!("{v:.3e}")
    }
}

/// The headline of a stored sample for progress ("files_per_sec 1234 files/s"): its first
/// declared headline metric, else its first metric.
pub fn headline(s: &crate::model::NewSample) -> String {
    s.metrics
        .iter()
        .find(|m| m.headline)
        .or_else(|| s.metrics.first())
        .map(|m| format!("{} {} {}", m.name, fmt_value(m.value), m.unit))
        .unwrap_or_default()
}

fn fmt_pct(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else {
        format!("{v:+.1}%")
    }
}

/// `s` cut to `w` characters, the last replaced by `~` when cut.
pub fn clip(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(w - 1).collect();
        t.push('~');
        t
    }
}

/// The table printed when a run ends (and `show`'s): per configuration and test, every metric's
/// mean, min and max over the repetitions; what the samples left on disk
/// (`compare::verdict::on_disk`) under its own "on disk" heading after the test's own metrics.
pub fn run_summary(series: &[Series]) -> String {
    let mut blocks: Vec<Vec<&Series>> = Vec::new();
    for s in series {
        match blocks.last_mut() {
            Some(b) if b[0].key.config == s.key.config && b[0].key.test == s.key.test => b.push(s),
            _ => blocks.push(vec![s]),
        }
    }
    let mut out = String::new();
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "{} ({})", block[0].key.test, block[0].key.config);
        let _ = writeln!(
            out,
            "  {:<w$} {:>11} {:>11} {:>11} {:<7} {:>2}",
            "metric",
            "mean",
            "min",
            "max",
            "unit",
            "n",
            w = NAME_W - 2
        );
        let (disk, own): (Vec<&Series>, Vec<&Series>) = block
            .iter()
            .partition(|s| crate::compare::verdict::on_disk(&s.key.metric));
        for (j, part) in [own, disk].into_iter().enumerate() {
            if j == 1 && !part.is_empty() {
                let _ = writeln!(out, "  on disk:");
            }
            for s in part {
                let _ = writeln!(
                    out,
                    "  {:<w$} {:>11} {:>11} {:>11} {:<7} {:>2}",
                    clip(&s.key.metric, NAME_W - 2),
                    fmt_value(s.mean()),
                    fmt_value(s.min()),
                    fmt_value(s.max()),
                    clip(s.unit.as_str(), 7),
                    s.n(),
                    w = NAME_W - 2
                );
            }
        }
    }
    out
}

/// Failed samples, one line each with the error.
pub fn failures(samples: &[&SampleRecord]) -> String {
    let mut out = String::new();
    for s in samples
        .iter()
        .filter(|s| s.sample.status == SampleStatus::Failed)
    {
        let _ = writeln!(
            out,
            "FAILED {} ({}) repetition {}: {}",
            s.sample.test,
            s.sample.config,
            s.sample.repetition,
            s.sample.error.as_deref().unwrap_or("no error text")
        );
    }
    out
}

/// The runs of `fsdelta list`, one a line. `guest_kernels[i]` are the kernels run `i`'s guests
/// booted (`run --kernel`), shown as its kernel instead of the host's: the kernel under test.
/// Never clipped into ambiguity: the last column holds the whole kernel release.
pub fn run_list(runs: &[RunInfo], guest_kernels: &[Vec<String>]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>5}  {:<16} {:<8} {:<9} {:<16} {:>7}  {:<12} kernel",
        "id", "started (UTC)", "suite", "status", "label", "samples", "host"
    );
    for (i, r) in runs.iter().enumerate() {
        let kernel = match guest_kernels.get(i) {
            Some(g) if !g.is_empty() => format!("{} (guest)", g.join(", ")),
            _ => r.environment.kernel_release.clone(),
        };
        let _ = writeln!(
            out,
            "{:>5}  {:<16} {:<8} {:<9} {:<16} {:>7}  {:<12} {}",
            r.id,
            r.started_at.format("%Y-%m-%d %H:%M"),
            clip(&r.suite, 8),
            r.status.as_str(),
            clip(&r.label, 16),
            r.sample_count,
            clip(&r.environment.host, 12),
            kernel
        );
    }
    out
}

/// Header lines describing a run.
pub fn run_header(r: &RunInfo) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "run {}  label {}  suite {}  status {}",
        r.id,
        r.label,
        r.suite,
        r.status.as_str()
    );
    let _ = writeln!(
        out,
        "started {}{}",
        r.started_at.format("%Y-%m-%d %H:%M:%S UTC"),
        r.finished_at
            .map(|f| format!("  finished {}", f.format("%Y-%m-%d %H:%M:%S UTC")))
            .unwrap_or_default()
    );
    let e = &r.environment;
    let _ = writeln!(
        out,
        "host {}  kernel {}  fsdelta {}",
        e.host, e.kernel_release, r.fsdelta_version
    );
    let _ = writeln!(
        out,
        "cpu {} ({} cores)  memory {:.1} GiB",
        clip(&e.cpu_model, 48),
        e.cores,
        e.memory_bytes as f64 / (1u64 << 30) as f64
    );
    out
}

/// Where the samples of a run ran: one line per distinct (configuration, fs, device, options).
pub fn targets(samples: &[&SampleRecord]) -> String {
    let mut seen = Vec::new();
    let mut out = String::new();
    for s in samples {
        let f = &s.sample.facts;
        let mut line = format!(
            "config {}: {} on {} ({}){}",
            s.sample.config,
            f.fs_type,
            f.device,
            f.mount_options,
            f.mkfs_options
                .as_deref()
                .map(|m| format!(" mkfs {m}"))
                .unwrap_or_default()
        );
        for (k, what) in [("hook_before", "before"), ("hook_after", "after")] {
            if let Some(cmd) = f.extra.get(k) {
                let _ = write!(line, "\n  {what}: {cmd}");
            }
        }
        if !seen.contains(&line) {
            let _ = writeln!(out, "{line}");
            seen.push(line);
        }
    }
    out
}

/// The workload command line of every test, so each number is traceable to how it was measured.
pub fn workloads(samples: &[&SampleRecord]) -> String {
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut out = String::new();
    for s in samples {
        let k = (s.sample.test.clone(), s.sample.workload.clone());
        if !seen.contains(&k) {
            let _ = writeln!(out, "test {}: {}", k.0, k.1);
            seen.push(k);
        }
    }
    out
}

/// `fsdelta compare` before verdicts: per test, baseline mean, current mean and diff %, as
/// fsperf prints them; a `!` marks a change in the bad direction. With `only_changed` false,
/// every metric is listed.
pub fn compare_table(base_label: &str, cur_label: &str, pairs: &[Paired]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "baseline: {base_label}");
    let _ = writeln!(out, "current:  {cur_label}");
    let mut current: Option<(&str, &str)> = None;
    for p in pairs {
        let block = (p.key.config.as_str(), p.key.test.as_str());
        if current != Some(block) {
            let _ = writeln!(out);
            let _ = writeln!(out, "{} ({})", p.key.test, p.key.config);
            let _ = writeln!(
                out,
                "  {:<w$} {:>12} {:>12} {:>9}   {:<7}",
                "metric",
                "baseline",
                "current",
                "diff",
                "unit",
                w = NAME_W - 2
            );
            current = Some(block);
        }
        let mark = match (p.direction, p.is_worse()) {
            (Direction::Neutral, _) => " ",
            (_, Some(true)) => "!",
            _ => " ",
        };
        let _ = writeln!(
            out,
            "  {:<w$} {:>12} {:>12} {:>9} {} {:<7}",
            clip(&p.key.metric, NAME_W - 2),
            fmt_value(p.base_mean()),
            fmt_value(p.cur_mean()),
            fmt_pct(p.diff_pct()),
            mark,
            clip(p.unit.as_str(), 7),
            w = NAME_W - 2
        );
    }
    out
}

/// The raw results kept with one sample (`show --raw`): fs_mark's per-iteration table as fs_mark
/// prints it, a command's stdout and stderr, any other attachment as text. A heading names the
/// sample so the lines can be traced to it.
pub fn raw_results(s: &SampleRecord, atts: &[crate::model::Attachment]) -> String {
    use crate::fsmark::IterationResult;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "== {} on {}, repetition {} (sample {}) ==",
        s.sample.test, s.sample.config, s.sample.repetition, s.id
    );
    if atts.is_empty() {
        out.push_str(
            "(no raw results kept: the workload keeps none, or the sample predates them)\n",
        );
    }
    for a in atts {
        let text = match a.text() {
            Ok(t) => t,
            Err(e) => {
                let _ = writeln!(out, "{e}");
                continue;
            }
        };
        if a.name == crate::fsmark::FSMARK_ITERATIONS {
            match serde_json::from_str::<Vec<IterationResult>>(&text) {
                Ok(rows) => {
                    out.push_str("fs_mark iterations:\n");
                    out.push_str(
                        crate::fsmark::output::table_header(false).trim_start_matches('\n'),
                    );
                    for r in &rows {
                        out.push_str(&crate::fsmark::output::row(r, false));
                    }
                }
                Err(e) => {
                    let _ = writeln!(out, "fs_mark iterations could not be read: {e}");
                }
            }
            continue;
        }
        if text.is_empty() {
            let _ = writeln!(out, "{}: (empty)", a.name);
        } else {
            let _ = writeln!(out, "{}:", a.name);
            out.push_str(&text);
            if !text.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_shows_the_guest_kernel_under_test_whole() {
        use crate::model::{Environment, RunStatus};
        let run = |id: i64| RunInfo {
            id,
            label: "k".into(),
            suite: "quick".into(),
            started_at: chrono::Utc::now(),
            finished_at: None,
            status: RunStatus::Complete,
            fsdelta_version: "0.1.0".into(),
            environment: Environment {
                host: "box".into(),
                kernel_release: "6.12.57+deb13-amd64".into(),
                ..Environment::default()
            },
            sample_count: 4,
        };
        let t = run_list(
            &[run(2), run(1)],
            &[
                vec!["6.1.0-47-amd64".into(), "6.1.0-50-amd64".into()],
                vec![],
            ],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[1].ends_with(" 6.1.0-47-amd64, 6.1.0-50-amd64 (guest)"),
            "{t}"
        );
        assert!(lines[2].ends_with(" 6.12.57+deb13-amd64"), "{t}");
    }

    #[test]
    fn values_are_compact() {
        assert_eq!(fmt_value(0.0), "0");
        assert_eq!(fmt_value(12345.678), "12346");
        assert_eq!(fmt_value(3.0), "3");
        assert_eq!(fmt_value(123.456), "123.5");
        assert_eq!(fmt_value(1.23456), "1.23");
        assert_eq!(fmt_value(0.0123456), "0.0123");
        assert_eq!(fmt_value(f64::NAN), "-");
        assert!(fmt_value(1.5e15).len() <= 11);
        assert!(fmt_value(-1.5e-9).len() <= 11);
    }

    #[test]
    fn targets_show_each_configuration_with_its_hooks() {
        let mut a = SampleRecord::metrics_only(1, 1, "c".into(), "t".into(), 1, 1, Vec::new());
        a.sample.facts.fs_type = "ext4".into();
        a.sample.facts.device = "/dev/loop0".into();
        a.sample.facts.mount_options = "rw".into();
        let mut b = a.clone();
        b.sample.facts.extra.insert(
            "hook_before".into(),
            "echo 3 > /proc/sys/vm/drop_caches".into(),
        );
        b.sample
            .facts
            .extra
            .insert("hook_after".into(), "sync".into());
        let out = targets(&[&a, &b, &b]);
        assert_eq!(
            out,
            "config c: ext4 on /dev/loop0 (rw)\n\
             config c: ext4 on /dev/loop0 (rw)\n  before: echo 3 > /proc/sys/vm/drop_caches\n  after: sync\n"
        );
    }

    #[test]
    fn long_names_are_clipped() {
        assert_eq!(clip("abcdef", 4), "abc~");
        assert_eq!(clip("abc", 4), "abc");
    }
}
