//! The compact table printed at the end of `fsdelta run`: per configuration and test, only the
//! headline metrics (median, CV, n), with a mark on unstable ones and on tests with a sample
//! measured under disturbance (each such sample named below the table, with what disturbed it),
//! in 80 columns. Everything else a run measured is in `fsdelta show`.
//!
//! A renderer: series in, text out; it never reads the store.

use crate::compare::{Series, stats};
use crate::model::{SampleRecord, SampleStatus};
use crate::probe::disturbance;
use crate::report::text::fmt_value;
use std::collections::BTreeSet;
use std::fmt::Write;

/// A headline whose coefficient of variation is above this is marked unstable.
pub const UNSTABLE_CV: f64 = 0.10;

/// The compact summary of `series` (a run's samples grouped by `compare::series`): one line per
/// headline metric; a test without a declared headline shows its first metric.
pub fn compact(series: &[Series]) -> String {
    compact_marked(series, &BTreeSet::new())
}

/// [`compact`], with a `!` on the rows of the (configuration, test) pairs in `disturbed`: a
/// sample of theirs was measured under disturbance.
pub fn compact_marked(series: &[Series], disturbed: &BTreeSet<(String, String)>) -> String {
    let mut rows: Vec<&Series> = Vec::new();
    let mut seen_blocks: Vec<(&str, &str)> = Vec::new();
    for s in series {
        let block = (s.key.config.as_str(), s.key.test.as_str());
        if seen_blocks.contains(&block) {
            continue;
        }
        seen_blocks.push(block);
        let heads: Vec<&Series> = series
            .iter()
            .filter(|x| (x.key.config.as_str(), x.key.test.as_str()) == block && x.headline)
            .collect();
        if heads.is_empty() {
            // The test's own first number (a command test's elapsed_s), not one fsdelta
            // records beside every sample.
            rows.push(
                series
                    .iter()
                    .find(|x| {
                        (x.key.config.as_str(), x.key.test.as_str()) == block
                            && !crate::compare::verdict::fsdelta_own(&x.key.metric)
                    })
                    .unwrap_or(s),
            );
        } else {
            rows.extend(heads);
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    // Names are never clipped (two kernels' configurations `ext4-6.1.0-47-amd64` and
    // `ext4-6.1.0-50-amd64` must stay apart): the columns widen to the longest name, and when
    // that would pass 80 columns, test and configuration become a heading line of their rows.
    let w =
        |f: &dyn Fn(&Series) -> usize, min: usize| rows.iter().map(|s| f(s)).fold(min, usize::max);
    let tw = w(&|s| s.key.test.chars().count(), 14);
    let cw = w(&|s| s.key.config.chars().count(), 12);
    let mw = w(&|s| s.key.metric.chars().count(), 19);
    let uw = w(&|s| s.unit.as_str().chars().count(), 8);
    let columns = 2 + tw + 1 + cw + 1 + mw + 1 + 10 + 1 + uw + 1 + 6 + 1 + 3;
    let headings = columns > 80;
    let mut out = String::new();
    if headings {
        let _ = writeln!(
            out,
            "  {:<mw$} {:>10} {:<uw$} {:>6} {:>3}",
            "test (config): headline", "median", "unit", "CV", "n"
        );
    } else {
        let _ = writeln!(
            out,
            "  {:<tw$} {:<cw$} {:<mw$} {:>10} {:<uw$} {:>6} {:>3}",
            "test", "config", "headline", "median", "unit", "CV", "n"
        );
    }
    let mut unstable = 0;
    let mut block: Option<(&str, &str)> = None;
    for s in rows {
        let cv = stats::cv(&s.values);
        // A disturbed row's `!` wins over `*`: its spread has a named cause.
        let mark = if disturbed.contains(&(s.key.config.clone(), s.key.test.clone())) {
            '!'
        } else if cv.is_some_and(|c| c > UNSTABLE_CV) {
            unstable += 1;
            '*'
        } else {
            ' '
        };
        let numbers = format!(
            "{:>10} {:<uw$} {:>6} {:>3}",
            stats::median(&s.values).map_or("-".into(), fmt_value),
            s.unit.as_str(),
            cv.map_or("-".into(), |c| format!("{:.1}%", 100.0 * c)),
            s.n(),
        );
        if headings {
            let b = (s.key.test.as_str(), s.key.config.as_str());
            if block != Some(b) {
                let _ = writeln!(out, "  {} ({}):", b.0, b.1);
                block = Some(b);
            }
            let _ = writeln!(out, "{mark}   {:<mw$} {numbers}", s.key.metric);
        } else {
            let _ = writeln!(
                out,
                "{mark} {:<tw$} {:<cw$} {:<mw$} {numbers}",
                s.key.test, s.key.config, s.key.metric,
            );
        }
    }
    if unstable > 0 {
        let _ = writeln!(
            out,
            "* unstable (CV > {:.0} %): add repetitions (-n) or quiet the machine first",
            100.0 * UNSTABLE_CV
        );
    }
    out
}

/// The successful samples of `records` measured under disturbance (fact
/// `crate::probe::disturbance::FACT`): ((configuration, test), `test (config) #rep: why`).
fn disturbed(records: &[&SampleRecord]) -> Vec<((String, String), String)> {
    records
        .iter()
        .filter(|r| r.sample.status == SampleStatus::Ok)
        .filter_map(|r| {
            let why = r.sample.facts.extra.get(disturbance::FACT)?;
            let s = &r.sample;
            Some((
                (s.config.clone(), s.test.clone()),
                format!("{} ({}) #{}: {why}", s.test, s.config, s.repetition),
            ))
        })
        .collect()
}

/// What `fsdelta run` prints when it ends: the compact table of `records`, the failed samples
/// with their errors, and the `skipped` lines.
pub fn run_end(records: &[SampleRecord], skipped: &[String]) -> String {
    let refs: Vec<&SampleRecord> = records.iter().collect();
    let d = disturbed(&refs);
    let marked: BTreeSet<(String, String)> = d.iter().map(|x| x.0.clone()).collect();
    let mut out = compact_marked(&crate::compare::series(&refs), &marked);
    if !d.is_empty() {
        let _ = writeln!(
            out,
            "! measured under disturbance ({} sample{}; compare them with care or run again):",
            d.len(),
            if d.len() == 1 { "" } else { "s" }
        );
        for (_, line) in &d {
            out.push_str(&crate::report::compare::wrap_hanging(line, 2, 4));
        }
    }
    let failed = crate::report::text::failures(&refs);
    if !failed.is_empty() {
        out.push('\n');
        out.push_str(&failed);
    }
    if !skipped.is_empty() {
        out.push('\n');
        for s in skipped {
            out.push_str(s);
            out.push('\n');
        }
    }
    out
}

/// The order the samples ran in (their stored sequence numbers), wrapped at 80 columns:
/// `order rotate: 1 a/t#1  2 b/t#1  3 b/t#2 ...`. Empty when no sample has a sequence number
/// (runs stored before positions were recorded).
pub fn sample_order(samples: &[&SampleRecord]) -> String {
    let mut v: Vec<&SampleRecord> = samples
        .iter()
        .copied()
        .filter(|s| s.sample.sequence > 0)
        .collect();
    if v.is_empty() {
        return String::new();
    }
    v.sort_by_key(|s| (s.run_id, s.sample.sequence));
    let orders: Vec<&str> = {
        let mut o: Vec<&str> = v
            .iter()
            .filter_map(|s| s.sample.facts.extra.get("order").map(String::as_str))
            .collect();
        o.sort();
        o.dedup();
        o
    };
    let mut out = format!(
        "order {}:",
        if orders.is_empty() {
            "?".to_string()
        } else {
            orders.join(", ")
        }
    );
    let mut line_len = out.len();
    for s in v {
        let item = format!(
            " {} {}/{}#{}",
            s.sample.sequence, s.sample.config, s.sample.test, s.sample.repetition
        );
        if line_len + item.len() > 80 {
            out.push('\n');
            out.push(' ');
            line_len = 1;
        }
        line_len += item.len();
        out.push_str(&item);
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::SeriesKey;
    use crate::model::{Direction, MetricKind, Unit};

    fn series(test: &str, metric: &str, headline: bool, values: &[f64]) -> Series {
        Series {
            key: SeriesKey {
                config: "scratch".into(),
                test: test.into(),
                metric: metric.into(),
            },
            unit: Unit::FilesPerSec,
            direction: Direction::HigherIsBetter,
            kind: MetricKind::Throughput,
            headline,
            values: values.to_vec(),
            order: 0,
        }
    }

    #[test]
    fn names_are_never_clipped_into_ambiguity() {
        let mut s = Vec::new();
        for config in ["ext4-6.1.0-47-amd64", "ext4-6.1.0-50-amd64"] {
            let mut x = series("bufferedrandwrite", "write_iops", true, &[100.0, 101.0]);
            x.key.config = config.into();
            s.push(x);
        }
        let text = compact(&s);
        assert!(!text.contains('~'), "{text}");
        for config in ["ext4-6.1.0-47-amd64", "ext4-6.1.0-50-amd64"] {
            assert!(text.contains(config), "{text}");
        }
        assert!(text.contains("bufferedrandwrite"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        // Longer still: test and configuration become headings, the rows keep 80 columns.
        let mut x = series(
            "a-test-with-a-very-long-name-indeed",
            "write_iops",
            true,
            &[1.0],
        );
        x.key.config = "btrfs-compress-force-zstd-15-on-6.1.0-50-amd64".into();
        let text = compact(&[x]);
        assert!(
            text.contains("  a-test-with-a-very-long-name-indeed (btrfs-compress-force-zstd-15-on-6.1.0-50-amd64):"),
            "{text}"
        );
        assert!(
            text.lines()
                .filter(|l| !l.ends_with(':'))
                .all(|l| l.chars().count() <= 80),
            "{text}"
        );
    }

    fn record(test: &str, rep: u32, value: f64, why: Option<&str>) -> SampleRecord {
        let mut m = crate::model::Metric::new(
            "files_per_sec",
            value,
            Unit::FilesPerSec,
            Direction::HigherIsBetter,
        );
        m.headline = true;
        let mut facts = crate::model::SiteFacts::default();
        if let Some(w) = why {
            facts.extra.insert(disturbance::FACT.into(), w.into());
        }
        SampleRecord {
            id: 1,
            run_id: 1,
            sample: crate::model::NewSample {
                config: "ext4".into(),
                test: test.into(),
                repetition: rep,
                sequence: 0,
                facts,
                status: SampleStatus::Ok,
                error: None,
                started_at: chrono::Utc::now(),
                duration_s: 1.0,
                workload: String::new(),
                metrics: vec![m],
                histograms: vec![],
                attachments: Vec::new(),
            },
        }
    }

    #[test]
    fn a_sample_measured_under_disturbance_is_marked_and_named() {
        let why = "other processes' I/O 210 MiB (dd[4242] 200 MiB)";
        let records = [
            record("copy", 1, 100.0, None),
            record("copy", 2, 13.0, Some(why)),
            record("emptyfiles", 1, 100.0, None),
            record("emptyfiles", 2, 101.0, None),
        ];
        let text = run_end(&records, &[]);
        let copy = text.lines().find(|l| l.contains(" copy ")).unwrap();
        assert!(copy.starts_with('!'), "{text}");
        let empty = text.lines().find(|l| l.contains("emptyfiles")).unwrap();
        assert!(empty.starts_with(' '), "{text}");
        assert!(
            text.contains(
                "! measured under disturbance (1 sample; compare them with care or run again):\n  \
                 copy (ext4) #2: other processes' I/O 210 MiB (dd[4242] 200 MiB)\n"
            ),
            "{text}"
        );
        // Its CV is far above 10 %, but the `!` says why: no `*` legend without a `*` row.
        assert!(!text.contains("unstable"), "{text}");
        let quiet = run_end(&records[2..], &[]);
        assert!(!quiet.contains('!'), "{quiet}");
    }

    #[test]
    fn only_headlines_are_shown_and_unstable_ones_are_marked() {
        let s = [
            series("emptyfiles", "files_per_sec", true, &[100.0, 102.0, 98.0]),
            series("emptyfiles", "app_overhead_us", false, &[1.0, 2.0, 3.0]),
            series("bigdir", "files_per_sec", true, &[100.0, 150.0, 60.0]),
            series("cmd", "elapsed_s", false, &[1.0, 1.0]),
        ];
        let text = compact(&s);
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        assert!(!text.contains("app_overhead_us"), "{text}");
        assert!(
            text.contains("elapsed_s"),
            "a test without a headline shows its first metric"
        );
        let big = text.lines().find(|l| l.contains("bigdir")).unwrap();
        assert!(big.starts_with('*'), "{text}");
        let empty = text.lines().find(|l| l.contains("emptyfiles")).unwrap();
        assert!(empty.starts_with(' ') && empty.contains("2.0%"), "{text}");
        assert!(text.contains("unstable (CV > 10 %)"), "{text}");
    }
}
