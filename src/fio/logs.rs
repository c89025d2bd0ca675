//! fio's lat/slat/clat/bw/iops logs as the HTML report draws them: parsed as fio 3.33 writes
//! them, and reduced to a few hundred points per sample and direction for a chart.
//!
//! Why a file of its own: a per-I/O log holds a line per I/O, so how lines become points is a
//! decision worth one place, next to the engine that writes the logs. A log of at most
//! [`MAX_POINTS`] lines is drawn line by line; a longer one, or a per-I/O iops log (each line
//! `1`), as time buckets of equal width: the mean of each bucket's values, for the iops log the
//! I/Os per second in it. Which samples' logs are read is `read::extras`' (only the native fio
//! engine's successful samples, [`is_fio`]); the charts are `report`'s. This file must never
//! read the store nor format HTML, and never change a value it draws: a point is a line, or a
//! bucket's mean or rate with its count, minimum and maximum beside it. Histogram logs
//! (write_hist_log) are kept but not drawn.

use crate::model::{SampleRecord, SampleStatus};

/// The most points a series is drawn with.
pub const MAX_POINTS: usize = 240;

/// The narrowest bucket a per-I/O iops log is counted in: a rate over fewer I/Os is mostly
/// the scheduler's noise (fio's own iops_avg_time is 500 ms).
pub const IOPS_BUCKET_MS: u64 = 50;

/// The note `Attachment::text_gz` ends a cut text with.
const CUT_NOTE: &str = "[fsdelta: ";

/// What a fio log's values are, from its file name (`PREFIX_KIND.N.log`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FioLogKind {
    /// Total latency (`_lat`), nanoseconds.
    Lat,
    /// Submission latency (`_slat`), nanoseconds.
    Slat,
    /// Completion latency (`_clat`), nanoseconds.
    Clat,
    /// Bandwidth (`_bw`), KiB/s.
    Bw,
    /// I/Os per second (`_iops`).
    Iops,
}

impl FioLogKind {
    /// fio's name of the log (the file name's KIND).
    pub fn name(self) -> &'static str {
        match self {
            FioLogKind::Lat => "lat",
            FioLogKind::Slat => "slat",
            FioLogKind::Clat => "clat",
            FioLogKind::Bw => "bw",
            FioLogKind::Iops => "iops",
        }
    }

    /// Whether the values are latencies in nanoseconds.
    pub fn is_latency(self) -> bool {
        matches!(self, FioLogKind::Lat | FioLogKind::Slat | FioLogKind::Clat)
    }
}

/// One point of a log series: a log line, or the lines of one time bucket.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FioLogPoint {
    /// First ms the point covers (the line's time when it stands for one line).
    pub from_ms: u64,
    /// Last ms it covers.
    pub to_ms: u64,
    /// The value drawn: the lines' mean, or for a per-I/O iops log the I/Os per second over
    /// the bucket.
    pub value: f64,
    /// Lines it stands for.
    pub n: u64,
    /// Their smallest value.
    pub min: u64,
    /// Their largest value.
    pub max: u64,
}

/// One line of a fio log: `msec, value, ddir, bs, [offset,] prio`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// Milliseconds since the job started.
    pub ms: u64,
    /// The value (ns, KiB/s or I/Os).
    pub value: u64,
    /// 0 read, 1 write, 2 trim.
    pub ddir: u8,
    /// The I/O's size; 0 in an averaged (log_avg_msec) line.
    pub bs: u64,
}

/// A parsed log: its lines, and whether the stored text was cut at the attachment limit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParsedLog {
    /// In file order.
    pub lines: Vec<LogLine>,
    /// The text ended with fsdelta's note that the rest was not kept.
    pub cut: bool,
}

/// Why a log cannot be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LogError {
    /// A line that is not fio's log format.
    #[error(
        "line {line} is not a fio log line (want `msec, value, ddir, bs, [offset,] prio`): {text:?}"
    )]
    Line {
        /// 1-based.
        line: usize,
        /// The line, cut to 80 characters.
        text: String,
    },
}

/// The kind of log a file name (`PREFIX_KIND.N.log` or `PREFIX_KIND.log`) names; `None` for a
/// histogram log or another file.
pub fn kind_of(file: &str) -> Option<FioLogKind> {
    let stem = file.strip_suffix(".log")?;
    let stem = match stem.rsplit_once('.') {
        Some((s, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => s,
        _ => stem,
    };
    if stem.ends_with("_clat_hist") {
        return None;
    }
    [
        ("_slat", FioLogKind::Slat),
        ("_clat", FioLogKind::Clat),
        ("_lat", FioLogKind::Lat),
        ("_bw", FioLogKind::Bw),
        ("_iops", FioLogKind::Iops),
    ]
    .into_iter()
    .find(|(suffix, _)| stem.ends_with(suffix))
    .map(|(_, k)| k)
}

/// Parse a log as fio 3.33 writes it (iolog.c's flush_samples): 5 columns, or 6 with
/// log_offset=1, the last (prio) decimal or `0x` hex. Blank lines are skipped. A log cut at the
/// attachment limit (`Attachment::text_gz` ends it with a note) is marked cut, and its last,
/// partial line dropped.
pub fn parse_log(text: &str) -> Result<ParsedLog, LogError> {
    let mut out = ParsedLog::default();
    let text = match text.rfind(&format!("\n{CUT_NOTE}")) {
        Some(i) => {
            out.cut = true;
            let kept = &text[..i];
            // The cut falls anywhere: keep whole lines only.
            match kept.rfind('\n') {
                _ if kept.ends_with('\n') => kept,
                Some(j) => &kept[..=j],
                None => "",
            }
        }
        None => text,
    };
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if l.is_empty() {
            continue;
        }
        let bad = || LogError::Line {
            line: i + 1,
            text: l.chars().take(80).collect(),
        };
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        if !(5..=6).contains(&f.len()) {
            return Err(bad());
        }
        let num = |s: &str| s.parse::<u64>().map_err(|_| bad());
        let prio = f[f.len() - 1];
        let prio_ok = match prio.strip_prefix("0x") {
            Some(h) => u32::from_str_radix(h, 16).is_ok(),
            None => prio.parse::<u32>().is_ok(),
        };
        if !prio_ok || (f.len() == 6 && num(f[4]).is_err()) {
            return Err(bad());
        }
        let ddir = num(f[2])?;
        if ddir > 2 {
            return Err(bad());
        }
        out.lines.push(LogLine {
            ms: num(f[0])?,
            value: num(f[1])?,
            ddir: ddir as u8,
            bs: num(f[3])?,
        });
    }
    Ok(out)
}

/// One direction's lines as points: each line when there are at most `max` and the log is not a
/// per-I/O iops log, else at most `max` buckets of equal width over the lines' time (for a
/// per-I/O iops log at least [`IOPS_BUCKET_MS`] wide).
pub fn points(kind: FioLogKind, lines: &[LogLine], max: usize) -> Vec<FioLogPoint> {
    let per_io_iops = kind == FioLogKind::Iops && lines.iter().any(|l| l.bs > 0);
    if lines.is_empty() || max == 0 {
        return Vec::new();
    }
    if lines.len() <= max && !per_io_iops {
        return lines
            .iter()
            .map(|l| FioLogPoint {
                from_ms: l.ms,
                to_ms: l.ms,
                value: l.value as f64,
                n: 1,
                min: l.value,
                max: l.value,
            })
            .collect();
    }
    let t0 = lines.iter().map(|l| l.ms).min().unwrap_or(0);
    let t1 = lines.iter().map(|l| l.ms).max().unwrap_or(0);
    let width =
        (t1 - t0 + 1)
            .div_ceil(max as u64)
            .max(if per_io_iops { IOPS_BUCKET_MS } else { 1 });
    let buckets = ((t1 - t0) / width + 1) as usize;
    // (count, sum, min, max) per bucket.
    let mut acc = vec![(0u64, 0u128, u64::MAX, 0u64); buckets];
    for l in lines {
        let a = &mut acc[((l.ms - t0) / width) as usize];
        a.0 += 1;
        a.1 += u128::from(l.value);
        a.2 = a.2.min(l.value);
        a.3 = a.3.max(l.value);
    }
    acc.iter()
        .enumerate()
        .filter(|(_, a)| a.0 > 0)
        .map(|(i, &(n, sum, lo, hi))| {
            let from_ms = t0 + i as u64 * width;
            let to_ms = (from_ms + width - 1).min(t1);
            let value = if per_io_iops {
                // I/Os in the bucket over the milliseconds it spans.
                sum as f64 * 1000.0 / (to_ms - from_ms + 1) as f64
            } else {
                sum as f64 / n as f64
            };
            FioLogPoint {
                from_ms,
                to_ms,
                value,
                n,
                min: lo,
                max: hi,
            }
        })
        .collect()
}

/// Whether a sample may hold fio logs: a successful sample of the native fio engine.
pub fn is_fio(s: &SampleRecord) -> bool {
    s.sample.status == SampleStatus::Ok
        && (s.sample.workload == "fio" || s.sample.workload.starts_with("fio "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines fio 3.33 wrote, captured from `fio --name=j --rw=randrw --size=8m --time_based
    /// --runtime=1s --write_lat_log=x --write_bw_log=x --write_iops_log=x` (x_clat.1.log,
    /// x_bw.1.log and x_iops.1.log), with `--log_offset=1 --log_prio=1` (x_clat.1.log) and
    /// with `--write_bw_log=x --log_avg_msec=100` (x_bw.1.log).
    const CLAT: &str = "0, 219076, 0, 4096, 0\n0, 66048, 0, 4096, 0\n0, 56724, 0, 4096, 0\n";
    const BW: &str = "0, 18696, 0, 4096, 0\n0, 62015, 0, 4096, 0\n0, 72209, 0, 4096, 0\n";
    const IOPS: &str = "0, 1, 0, 4096, 0\n0, 1, 0, 4096, 0\n0, 1, 0, 4096, 0\n";
    const OFFSET_PRIO: &str = "7, 151235, 0, 4096, 503808, 0x0000\n\
                               7, 76364, 0, 4096, 6209536, 0x0000\n\
                               7, 65087, 0, 4096, 7069696, 0x0000\n";
    const AVERAGED: &str =
        "146, 57917, 0, 0, 0\n146, 61068, 1, 0, 0\n300, 61584, 0, 0, 0\n300, 60987, 1, 0, 0\n";

    #[test]
    fn fios_lines_parse() {
        let p = parse_log(CLAT).unwrap();
        assert!(!p.cut);
        assert_eq!(
            p.lines[0],
            LogLine {
                ms: 0,
                value: 219076,
                ddir: 0,
                bs: 4096
            }
        );
        assert_eq!(parse_log(BW).unwrap().lines[2].value, 72209);
        assert!(parse_log(IOPS).unwrap().lines.iter().all(|l| l.value == 1));
        let p = parse_log(OFFSET_PRIO).unwrap();
        assert_eq!((p.lines[1].ms, p.lines[1].value), (7, 76364));
        let p = parse_log(AVERAGED).unwrap();
        assert_eq!(p.lines[1].ddir, 1);
        assert_eq!(p.lines[3].bs, 0);
        let p = parse_log(&format!(
            "{CLAT}\n[fsdelta: 123 more bytes of fio_log:x_clat.1.log were not kept]\n"
        ))
        .unwrap();
        assert!(p.cut && p.lines.len() == 3);
        // Cut in the middle of a line: that line is dropped.
        let p = parse_log(&format!(
            "{CLAT}12, 45\n[fsdelta: 123 more bytes of fio_log:x_clat.1.log were not kept]\n"
        ))
        .unwrap();
        assert!(p.cut && p.lines.len() == 3);
        assert_eq!(parse_log("").unwrap(), ParsedLog::default());
        for bad in [
            "1, 2, 3\n",
            "1, 2, 0, 4096, 0, 0, 0\n",
            "1, x, 0, 4096, 0\n",
            "1, 2, 3, 4096, 0\n",
            "1, 2, 0, 4096, 0xZZ\n",
            "-1, 2, 0, 4096, 0\n",
        ] {
            assert!(
                matches!(parse_log(bad), Err(LogError::Line { line: 1, .. })),
                "{bad}"
            );
        }
    }

    /// A per-I/O log longer than an attachment keeps: stored and read back, it is marked cut
    /// and holds the whole lines that were kept.
    #[test]
    fn a_log_cut_by_its_attachment_keeps_its_whole_lines() {
        let line = "1234, 219076, 0, 4096, 0\n";
        let text = line.repeat(60_000);
        let a = crate::model::Attachment::text_gz("fio_log:x_clat.1.log", text.as_bytes());
        let p = parse_log(&a.text().unwrap()).unwrap();
        assert!(p.cut);
        assert_eq!(
            p.lines.len(),
            crate::model::ATTACHMENT_TEXT_LIMIT / line.len()
        );
        assert!(p.lines.iter().all(|l| l.value == 219076 && l.ms == 1234));
        assert!(!parse_log(line).unwrap().cut);
    }

    #[test]
    fn file_names_say_the_kind() {
        assert_eq!(kind_of("x_clat.1.log"), Some(FioLogKind::Clat));
        assert_eq!(kind_of("x_slat.12.log"), Some(FioLogKind::Slat));
        assert_eq!(kind_of("job_lat.log"), Some(FioLogKind::Lat));
        assert_eq!(kind_of("a_b_bw.3.log"), Some(FioLogKind::Bw));
        assert_eq!(kind_of("x_iops.1.log"), Some(FioLogKind::Iops));
        assert_eq!(kind_of("x_clat_hist.1.log"), None);
        assert_eq!(kind_of("x_clat.1.txt"), None);
        assert_eq!(kind_of("plain.log"), None);
    }

    #[test]
    fn short_logs_are_drawn_line_by_line_and_long_ones_in_buckets() {
        let p = parse_log(AVERAGED).unwrap();
        let reads: Vec<LogLine> = p.lines.iter().filter(|l| l.ddir == 0).copied().collect();
        let pts = points(FioLogKind::Bw, &reads, MAX_POINTS);
        assert_eq!(
            pts.iter().map(|p| (p.from_ms, p.value)).collect::<Vec<_>>(),
            [(146, 57917.0), (300, 61584.0)]
        );
        // 1000 lines over 0..=999 ms in 10 buckets of 100 ms: each bucket's mean and range.
        let lines: Vec<LogLine> = (0..1000)
            .map(|i| LogLine {
                ms: i,
                value: i % 100,
                ddir: 0,
                bs: 4096,
            })
            .collect();
        let pts = points(FioLogKind::Clat, &lines, 10);
        assert_eq!(pts.len(), 10);
        for (i, p) in pts.iter().enumerate() {
            assert_eq!((p.from_ms, p.to_ms), (i as u64 * 100, i as u64 * 100 + 99));
            assert_eq!((p.n, p.min, p.max), (100, 0, 99));
            assert_eq!(p.value, 49.5);
        }
        // A per-I/O iops log (each line 1): I/Os per second, even when short, over buckets
        // of at least 50 ms (the last one as long as the lines go).
        let iops: Vec<LogLine> = [0, 0, 1, 3, 3, 3, 70, 149, 149]
            .iter()
            .map(|&ms| LogLine {
                ms,
                value: 1,
                ddir: 1,
                bs: 4096,
            })
            .collect();
        let pts = points(FioLogKind::Iops, &iops, 240);
        assert_eq!(
            pts.iter()
                .map(|p| (p.from_ms, p.to_ms, p.n, p.value))
                .collect::<Vec<_>>(),
            [(0, 49, 6, 120.0), (50, 99, 1, 20.0), (100, 149, 2, 40.0)]
        );
    }

    /// Real lines, lightly fuzzed with a seeded generator: a log of valid lines always parses
    /// into as many lines, and its buckets hold every line; a damaged field is an error naming
    /// its line, never a panic.
    #[test]
    fn fuzzed_logs_parse_or_fail_by_line() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(0xf10_1065);
        let real: Vec<&str> = [CLAT, BW, IOPS, OFFSET_PRIO, AVERAGED]
            .iter()
            .flat_map(|t| t.lines())
            .collect();
        for round in 0..300 {
            let n = rng.random_range(1..400);
            let mut text = String::new();
            let mut ms = 0u64;
            let mut damaged = None;
            for i in 0..n {
                let mut f: Vec<String> = real[rng.random_range(0..real.len())]
                    .trim()
                    .split(", ")
                    .map(String::from)
                    .collect();
                ms += rng.random_range(0..3);
                f[0] = ms.to_string();
                f[1] = rng.random_range(0..u64::MAX / 4).to_string();
                if damaged.is_none() && rng.random_ratio(1, 200) {
                    let k = rng.random_range(0..f.len());
                    f[k] = ["", "x", "-3", "1.5", "0xq"][rng.random_range(0..5)].into();
                    damaged = Some(i + 1);
                }
                text.push_str(&f.join(", "));
                text.push('\n');
            }
            match (parse_log(&text), damaged) {
                (Ok(p), None) => {
                    assert_eq!(p.lines.len(), n, "round {round}");
                    for kind in [FioLogKind::Clat, FioLogKind::Iops] {
                        let pts = points(kind, &p.lines, 50);
                        assert!(pts.len() <= 50);
                        assert_eq!(pts.iter().map(|p| p.n).sum::<u64>(), n as u64);
                    }
                }
                (Err(LogError::Line { line, .. }), Some(d)) => assert_eq!(line, d, "round {round}"),
                (r, d) => panic!("round {round}: {r:?} with damage at {d:?}:\n{text}"),
            }
        }
    }
}
