//! fs_mark 3.3 as a driver: [`parse`] reads its text output, [`ExternalFsMark`] runs the real
//! binary in the target directory.
//!
//! Why: fs_mark's table is what mailing-list numbers quote; reading it into the native engine's
//! metric names (`files_per_sec`, `app_overhead_us`, ...) lets a run of the real tool compare
//! with a run of the native engine. The parser must never guess: a metric fs_mark does not print
//! is absent. fs_mark prints no latency percentiles and no per-iteration wall time, so
//! `<op>_lat_ns_p50`/`p99` and `files_per_sec_wall` never come from here. With `-v`, fs_mark
//! prints each system call's Min/Avg/Max in whole microseconds; from those come
//! `<op>_lat_ns_mean` (the mean of the iterations' Avg: fs_mark's Avg is the mean of the
//! workers' truncated averages, equal to the true mean when workers do the same number of calls)
//! and `<op>_lat_ns_max` (the largest Max), both at fs_mark's microsecond resolution. An
//! operation whose columns are all zero did not happen (fs_mark prints `0 0 0`) and has no
//! metric; fs_mark records no Min/Max for the after-loop fsync/sync of `-S 2..6` (it prints
//! `0 Avg 0`), so those have a mean and no max. With `-F`, fs_mark ends its table with
//! `Insufficient free space in DIR to create N new files, exiting` and exits 1: that is the
//! run's normal end, kept in [`FsMarkOutput::fill_stopped`].

use crate::fsmark::metrics;
use crate::fsmark::{FSMARK_ITERATIONS, FsMarkOptions, IterationResult};
use crate::model::{Attachment, Metric};
use crate::workload::external::{FS_MARK, ParseError, numbered_lines, run_child, unreadable};
use crate::workload::{Measurements, RunContext, Workload, WorkloadError};
use std::path::{Path, PathBuf};

const TOOL: &str = "fs_mark";

/// The system calls of fs_mark's `-v` columns, in its column order, with the native engine's
/// operation names.
pub const VERBOSE_OPS: [(&str, &str); 6] = [
    ("CREAT", "create"),
    ("WRITE", "write"),
    ("FSYNC", "fsync"),
    ("SYNC", "sync"),
    ("CLOSE", "close"),
    ("UNLINK", "unlink"),
];

/// One system call's `-v` columns, in microseconds as printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyscallTimes {
    /// Min column.
    pub min_us: u64,
    /// Avg column.
    pub avg_us: u64,
    /// Max column.
    pub max_us: u64,
}

/// One row of fs_mark's table: one iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct FsMarkRow {
    /// Line of the row in the output (1-based).
    pub line: usize,
    /// FSUse%.
    pub fs_use_pct: u32,
    /// Count: files created so far (cumulative over iterations).
    pub count: u64,
    /// Size: bytes per file.
    pub size: u64,
    /// Files/sec: the sum of the workers' rates.
    pub files_per_sec: f64,
    /// App Overhead: the sum over workers, microseconds.
    pub app_overhead_us: u64,
    /// With `-v`: CREAT, WRITE, FSYNC, SYNC, CLOSE, UNLINK (see [`VERBOSE_OPS`]).
    pub syscalls: Option<[SyscallTimes; 6]>,
}

/// Everything read from one fs_mark output.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct FsMarkOutput {
    /// The command line fs_mark echoes (`fs_mark -d a -s 4096 ...`), words single-spaced.
    pub command_line: Option<String>,
    /// `3.3`.
    pub version: Option<String>,
    /// Worker processes.
    pub threads: Option<u32>,
    /// The sync method line's text (`INBAND FSYNC: fsync() per file in write loop.`).
    pub sync_method: Option<String>,
    /// Whether the table has the `-v` columns.
    pub verbose: bool,
    /// One row per iteration, in order.
    pub rows: Vec<FsMarkRow>,
    /// With `-F`: the line fs_mark ended with (`Insufficient free space in DIR to create N new
    /// files, exiting`).
    pub fill_stopped: Option<String>,
}

/// Read fs_mark 3.3's output (stdout). The header (`#` lines) is optional; the table header
/// (`FSUse%  Count ...`) and at least one row are required. A message fs_mark prints instead of
/// a table (`fs_mark: ... directory pathname too long`) is the error.
pub fn parse(text: &str) -> Result<FsMarkOutput, ParseError> {
    let mut out = FsMarkOutput::default();
    let mut in_table = false;
    let mut columns = 0usize;
    let mut first_stray: Option<(usize, &str)> = None;
    for (n, line) in numbered_lines(text) {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(h) = t.strip_prefix('#') {
            if in_table {
                return Err(ParseError::new(
                    TOOL,
                    n,
                    format!("a header line after the table started: '{t}'"),
                ));
            }
            read_header(h.trim(), &mut out);
            continue;
        }
        if t.starts_with("FSUse%") {
            if in_table {
                return Err(ParseError::new(TOOL, n, "a second table header"));
            }
            let words: Vec<&str> = t.split_whitespace().collect();
            let plain = ["FSUse%", "Count", "Size", "Files/sec", "App", "Overhead"];
            if words.len() < plain.len() || words[..plain.len()] != plain {
                return Err(ParseError::new(
                    TOOL,
                    n,
                    format!(
                        "expected the table header 'FSUse% Count Size Files/sec App Overhead', found '{t}'"
                    ),
                ));
            }
            let rest = &words[plain.len()..];
            if rest.is_empty() {
                columns = 5;
            } else {
                let expected: Vec<String> = VERBOSE_OPS
                    .iter()
                    .flat_map(|(c, _)| [c.to_string(), "(Min/Avg/Max)".to_string()])
                    .collect();
                if rest != expected.iter().map(String::as_str).collect::<Vec<_>>() {
                    return Err(ParseError::new(
                        TOOL,
                        n,
                        format!(
                            "unexpected -v columns after 'App Overhead': '{}'",
                            rest.join(" ")
                        ),
                    ));
                }
                out.verbose = true;
                columns = 5 + 3 * VERBOSE_OPS.len();
            }
            in_table = true;
            continue;
        }
        if !in_table {
            first_stray.get_or_insert((n, t));
            continue;
        }
        if let Some(fill) = out.fill_stopped.as_ref() {
            return Err(ParseError::new(
                TOOL,
                n,
                format!("unexpected text after '{fill}': '{t}'"),
            ));
        }
        if t.starts_with("Insufficient free space in ") {
            // -F: fs_mark stops when the next iteration would not fit.
            out.fill_stopped = Some(t.to_string());
            continue;
        }
        out.rows.push(read_row(n, t, columns)?);
    }
    if !in_table {
        return Err(match first_stray {
            Some((n, t)) => ParseError::new(TOOL, n, format!("no result table; fs_mark said: {t}")),
            None => ParseError::new(TOOL, 0, "no result table (empty output)"),
        });
    }
    if out.rows.is_empty() {
        return Err(ParseError::new(TOOL, 0, "the result table has no rows"));
    }
    for w in out.rows.windows(2) {
        if w[1].count < w[0].count {
            return Err(ParseError::new(
                TOOL,
                w[1].line,
                format!(
                    "Count went down from {} to {} (fs_mark's Count is cumulative)",
                    w[0].count, w[1].count
                ),
            ));
        }
    }
    Ok(out)
}

fn read_header(h: &str, out: &mut FsMarkOutput) {
    if h.starts_with("fs_mark") {
        out.command_line = Some(h.split_whitespace().collect::<Vec<_>>().join(" "));
    } else if let Some(v) = h.strip_prefix("Version ") {
        // "3.3, 2 thread(s) starting at ..."
        let mut parts = v.splitn(2, ',');
        out.version = parts.next().map(|s| s.trim().to_string());
        out.threads = parts
            .next()
            .and_then(|r| r.split_whitespace().next())
            .and_then(|s| s.parse().ok());
    } else if let Some(s) = h.strip_prefix("Sync method:") {
        out.sync_method = Some(s.trim().to_string());
    }
}

fn read_row(n: usize, t: &str, columns: usize) -> Result<FsMarkRow, ParseError> {
    let words: Vec<&str> = t.split_whitespace().collect();
    if words.len() != columns {
        return Err(ParseError::new(
            TOOL,
            n,
            format!(
                "expected a table row of {columns} columns, found {} in '{t}'",
                words.len()
            ),
        ));
    }
    let int = |i: usize, what: &str| -> Result<u64, ParseError> {
        words[i].parse::<u64>().map_err(|_| {
            ParseError::new(
                TOOL,
                n,
                format!(
                    "column {} ({what}) should be a whole number, found '{}'",
                    i + 1,
                    words[i]
                ),
            )
        })
    };
    let fs_use_pct = int(0, "FSUse%")?;
    let fs_use_pct = u32::try_from(fs_use_pct)
        .ok()
        .filter(|p| *p <= 100)
        .ok_or_else(|| {
            ParseError::new(TOOL, n, format!("FSUse% {fs_use_pct} is not a percentage"))
        })?;
    let files_per_sec = words[3]
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| {
            ParseError::new(
                TOOL,
                n,
                format!(
                    "column 4 (Files/sec) should be a number, found '{}'",
                    words[3]
                ),
            )
        })?;
    let syscalls = if columns > 5 {
        let mut s = [SyscallTimes::default(); 6];
        for (k, (name, _)) in VERBOSE_OPS.iter().enumerate() {
            let c = 5 + 3 * k;
            s[k] = SyscallTimes {
                min_us: int(c, &format!("{name} Min"))?,
                avg_us: int(c + 1, &format!("{name} Avg"))?,
                max_us: int(c + 2, &format!("{name} Max"))?,
            };
        }
        Some(s)
    } else {
        None
    };
    Ok(FsMarkRow {
        line: n,
        fs_use_pct,
        count: int(1, "Count")?,
        size: int(2, "Size")?,
        files_per_sec,
        app_overhead_us: int(4, "App Overhead")?,
        syscalls,
    })
}

impl FsMarkOutput {
    /// Files created over all iterations (the last row's cumulative Count).
    pub fn files(&self) -> u64 {
        self.rows.last().map_or(0, |r| r.count)
    }

    /// The table's rows in the native engine's row type, for the `fsmark_iterations`
    /// attachment: the printed columns, the iteration index and the files of each loop (the
    /// difference of the cumulative Counts). What fs_mark does not print is absent: the wall
    /// time and the rate over it, App Overhead in nanoseconds, the per-worker numbers and the
    /// latency summaries (`-v`'s Min/Avg/Max give the `<op>_lat_ns_*` metrics instead).
    pub fn iterations(&self) -> Vec<IterationResult> {
        let mut previous = 0;
        self.rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let files = r.count.saturating_sub(previous);
                previous = r.count;
                IterationResult {
                    iteration: u32::try_from(i + 1).unwrap_or(u32::MAX),
                    files,
                    count: r.count,
                    size: r.size,
                    fs_use_pct: r.fs_use_pct,
                    files_per_sec: r.files_per_sec,
                    app_overhead_us: r.app_overhead_us,
                    app_overhead_ns: None,
                    wall_ns: None,
                    files_per_sec_wall: None,
                    workers: Vec::new(),
                    ops: Default::default(),
                }
            })
            .collect()
    }

    /// What the metric catalogue needs of the table ([`crate::fsmark::metrics`]), with the
    /// run's wall time when the caller measured it: Files/sec and App Overhead of each row, the
    /// last Count and FSUse%, and with `-v` each operation's `<op>_lat_ns_mean` /
    /// `<op>_lat_ns_max` (see the module docs). fs_mark prints no percentile and no wall time.
    pub fn summary(&self, elapsed_s: Option<f64>) -> metrics::Summary {
        // A sum in f64: a u64 sum of printed values could overflow.
        let overhead_us: f64 = self.rows.iter().map(|r| r.app_overhead_us as f64).sum();
        let mut ops = Vec::new();
        if self.verbose {
            for (k, (_, op)) in VERBOSE_OPS.iter().enumerate() {
                let times: Vec<SyscallTimes> = self
                    .rows
                    .iter()
                    .filter_map(|r| r.syscalls.map(|s| s[k]))
                    .collect();
                let happened = times.iter().any(|t| t.avg_us > 0 || t.max_us > 0);
                if !happened {
                    continue;
                }
                let k = times.len() as f64;
                let mean_us = times.iter().map(|t| t.avg_us as f64 / k).sum::<f64>();
                let max_us = times.iter().map(|t| t.max_us).max().unwrap_or(0);
                ops.push(metrics::OpLatency {
                    name: op,
                    p50_ns: None,
                    p99_ns: None,
                    max_ns: (max_us > 0).then_some(max_us as f64 * 1e3),
                    mean_ns: mean_us * 1e3,
                });
            }
        }
        metrics::Summary {
            files_per_sec: self.rows.iter().map(|r| r.files_per_sec).collect(),
            files: self.files(),
            app_overhead_us: overhead_us,
            timed_wall_ns: None,
            elapsed_s,
            fs_use_pct: self.rows.last().map_or(0.0, |r| r.fs_use_pct as f64),
            ops,
        }
    }

    /// The metrics fs_mark's table gives, by the catalogue, without `elapsed_s` (the
    /// runner's, not the table's).
    pub fn metrics(&self) -> Vec<Metric> {
        metrics::metrics(&self.summary(None))
    }
}

/// fs_mark's Debian build rejects `-d` paths of this many bytes or more.
pub const MAX_DIR_BYTES: usize = 40;

/// The real fs_mark, run in the target directory with the user's arguments.
///
/// Relative `-d` directories are relative to the target directory (the child runs there, which
/// also keeps them under fs_mark's 40-byte limit); without `-d`, `-d .` (the target directory
/// itself, as the native engine). fs_mark's log (`-l`, default `fs_log.txt` in the target) is
/// removed after the run unless `-l` was given. `elapsed_s` is the wall time from spawning
/// fs_mark to its exit (the native engine's is its whole run, unlinks included, likewise).
#[derive(Clone, Debug)]
pub struct ExternalFsMark {
    args: Vec<String>,
    explicit_log: bool,
    binary: Option<PathBuf>,
}

impl ExternalFsMark {
    /// fs_mark's arguments, without the program name (`["-s", "0", "-n", "1000", "-S", "0"]`).
    /// They are checked with the native engine's parser of the same grammar, so a typo is an
    /// error now rather than a failed sample later.
    pub fn new(args: &[String]) -> Result<ExternalFsMark, WorkloadError> {
        let mut checked: Vec<String> = args.to_vec();
        let has_dir = args.iter().any(|a| a.starts_with("-d"));
        if !has_dir {
            checked.extend(["-d".to_string(), ".".to_string()]);
        }
        FsMarkOptions::parse(&checked)
            .map_err(|e| WorkloadError::InvalidOptions(format!("fs_mark options: {e}")))?;
        for d in dir_args(args) {
            if !dir_fits(Path::new(d)) {
                return Err(WorkloadError::InvalidOptions(format!(
                    "fs_mark options: -d {d}: directory pathname too long: the real fs_mark (Debian 3.3) rejects paths of {MAX_DIR_BYTES} bytes or more; give a relative path (relative to the target directory)"
                )));
            }
        }
        if args.iter().any(|a| a == "-h") {
            return Err(WorkloadError::InvalidOptions(
                "fs_mark options: -h prints usage and runs nothing".into(),
            ));
        }
        Ok(ExternalFsMark {
            explicit_log: args.iter().any(|a| a.starts_with("-l")),
            args: checked,
            binary: None,
        })
    }

    /// Run this binary instead of `fs_mark` from `PATH`.
    pub fn with_binary(mut self, path: impl Into<PathBuf>) -> Self {
        self.binary = Some(path.into());
        self
    }

    /// The arguments passed to fs_mark (with `-d .` added when none was given).
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// The command line run in the target directory, for the sample's workload description.
    pub fn command_line(&self) -> String {
        format!("fs_mark {}", self.args.join(" "))
    }
}

impl Workload for ExternalFsMark {
    fn engine(&self) -> &'static str {
        "fs_mark (external)"
    }

    fn run(&self, ctx: &RunContext<'_>) -> Result<Measurements, WorkloadError> {
        let bin = FS_MARK.locate(self.binary.as_deref())?;
        ctx.progress.phase("fs_mark (external)");
        let mut cmd = std::process::Command::new(bin);
        cmd.args(&self.args);
        let log = ctx.dir.join("fs_log.txt");
        let had_log = log.exists();
        let result = run_child(FS_MARK, cmd, ctx.dir, None, ctx);
        if !self.explicit_log && !had_log {
            let _ = std::fs::remove_file(&log);
        }
        let out = result?;
        // With -F, fs_mark ends by exiting 1 after "Insufficient free space ...": the run
        // filled the filesystem, as asked; every other failure is a failure.
        let filled = !out.status.success()
            && out.status.code() == Some(1)
            && parse(&out.stdout).is_ok_and(|p| p.fill_stopped.is_some());
        let out = if filled { out } else { out.succeeded()? };
        let parsed = parse(&out.stdout).map_err(|e| unreadable(e, &out))?;
        let metrics = metrics::metrics(&parsed.summary(Some(out.wall.as_secs_f64())));
        // fs_mark's table, one row per -L loop, kept as the native engine keeps its rows;
        // then what fs_mark printed, as it printed it.
        let mut attachments = vec![Attachment {
            name: FSMARK_ITERATIONS.into(),
            format: "json".into(),
            data: serde_json::to_vec(&parsed.iterations()).unwrap_or_default(),
        }];
        attachments.extend(out.attachments());
        Ok(Measurements {
            metrics,
            histograms: Vec::new(),
            logical_bytes_written: None,
            attachments,
            facts: Default::default(),
        })
    }
}

/// The values of `-d DIR` and `-dDIR` in fs_mark's arguments.
fn dir_args(args: &[String]) -> Vec<&str> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "-d" {
            if let Some(v) = it.next() {
                out.push(v.as_str());
            }
        } else if let Some(v) = a.strip_prefix("-d") {
            out.push(v);
        }
    }
    out
}

/// Whether `dir` is short enough for fs_mark's `-d` (Debian's build rejects 40 bytes or more).
pub fn dir_fits(dir: &Path) -> bool {
    dir.as_os_str().len() < MAX_DIR_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: &str = "
#  fs_mark  -d  a  -s  4096  -n  200  -L  3  -t  2 
#\tVersion 3.3, 2 thread(s) starting at Wed Dec  2 11:06:09 2026
#\tSync method: INBAND FSYNC: fsync() per file in write loop.

FSUse%        Count         Size    Files/sec     App Overhead
    73          400         4096       1327.0             1851
    73          800         4096       1172.2            15150
    74         1200         4096        535.0             2379
";

    fn metric(m: &[Metric], name: &str) -> f64 {
        m.iter()
            .find(|x| x.name == name)
            .unwrap_or_else(|| panic!("{name}"))
            .value
    }

    #[test]
    fn the_plain_table_gives_the_native_names() {
        let p = parse(PLAIN).unwrap();
        assert_eq!(
            p.command_line.as_deref(),
            Some("fs_mark -d a -s 4096 -n 200 -L 3 -t 2")
        );
        assert_eq!(p.version.as_deref(), Some("3.3"));
        assert_eq!(p.threads, Some(2));
        assert_eq!(p.rows.len(), 3);
        assert_eq!(p.rows[2].line, 9);
        let m = p.metrics();
        assert!((metric(&m, "files_per_sec") - (1327.0 + 1172.2 + 535.0) / 3.0).abs() < 1e-9);
        assert!((metric(&m, "app_overhead_us") - (1851.0 + 15150.0 + 2379.0) / 3.0).abs() < 1e-9);
        assert!(
            (metric(&m, "app_overhead_us_per_file") - (1851.0 + 15150.0 + 2379.0) / 1200.0).abs()
                < 1e-9
        );
        assert_eq!(metric(&m, "files"), 1200.0);
        assert_eq!(metric(&m, "fs_use_pct"), 74.0);
        assert!(m.iter().all(|x| !x.name.contains("_lat_ns_")));
    }

    #[test]
    fn the_rows_keep_what_fs_mark_printed_and_nothing_else() {
        let rows = parse(PLAIN).unwrap().iterations();
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows.iter()
                .map(|r| (r.iteration, r.files, r.count))
                .collect::<Vec<_>>(),
            [(1, 400, 400), (2, 400, 800), (3, 400, 1200)]
        );
        assert_eq!(rows[1].files_per_sec, 1172.2);
        assert_eq!(rows[1].app_overhead_us, 15150);
        assert_eq!((rows[2].fs_use_pct, rows[2].size), (74, 4096));
        assert!(rows.iter().all(|r| r.wall_ns.is_none()
            && r.files_per_sec_wall.is_none()
            && r.app_overhead_ns.is_none()
            && r.workers.is_empty()
            && r.ops.is_empty()));
        // Absent in the stored JSON, not zero; and the JSON reads back as the same rows.
        let json = serde_json::to_string(&rows).unwrap();
        for absent in [
            "wall_ns",
            "files_per_sec_wall",
            "app_overhead_ns",
            "workers",
        ] {
            assert!(!json.contains(absent), "{absent} in {json}");
        }
        let back: Vec<IterationResult> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, rows);
    }

    #[test]
    fn errors_name_the_line() {
        let bad = PLAIN.replace("1172.2", "fast");
        let e = parse(&bad).unwrap_err();
        assert_eq!(e.line, 8, "{e}");
        assert!(e.message.contains("Files/sec"), "{e}");
        let short = PLAIN.replace(
            "    73          800         4096       1172.2            15150\n",
            "    73          800\n",
        );
        let e = parse(&short).unwrap_err();
        assert_eq!(e.line, 8);
        assert!(e.message.contains("5 columns, found 2"), "{e}");
        let e = parse(
            "fs_mark: a directory pathname too long (must be less than 40 bytes)\nUsage: fs_mark\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 1);
        assert!(e.message.contains("pathname too long"), "{e}");
        assert_eq!(parse("").unwrap_err().line, 0);
        let e =
            parse("FSUse%        Count         Size    Files/sec     App Overhead\n").unwrap_err();
        assert!(e.message.contains("no rows"), "{e}");
        let e = parse(&PLAIN.replace(" 1200 ", "  100 ")).unwrap_err();
        assert!(e.message.contains("cumulative"), "{e}");
        let e = parse(&PLAIN.replace("    73          400", "   273          400")).unwrap_err();
        assert!(e.message.contains("not a percentage"), "{e}");
    }

    /// What the metric catalogue changed in this driver's metrics (defined here apart from
    /// the native engine's until then): the order, now the native engine's. `elapsed_s` was
    /// appended last by the runner and now follows `app_overhead_us_per_file`; an operation's
    /// `_max` came after its `_mean` and now comes before it. The values are unchanged.
    #[test]
    fn the_catalogue_gives_the_native_engines_order() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/external/fsmark_v_2dirs.txt"
        ))
        .unwrap();
        let p = parse(&text).unwrap();
        let m = metrics::metrics(&p.summary(Some(1.5)));
        let names: Vec<&str> = m.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(
            names[..8],
            [
                "files_per_sec",
                "app_overhead_us",
                "app_overhead_us_per_file",
                "elapsed_s",
                "files",
                "fs_use_pct",
                "create_lat_ns_max",
                "create_lat_ns_mean",
            ]
        );
        assert_eq!(metric(&m, "elapsed_s"), 1.5);
        assert_eq!(
            p.metrics(),
            m.iter()
                .filter(|x| x.name != "elapsed_s")
                .cloned()
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn huge_printed_values_neither_overflow_nor_become_infinite() {
        let big = "FSUse%        Count         Size    Files/sec     App Overhead
 1 1 1 1e308 18446744073709551615
 1 2 1 1e308 18446744073709551615
";
        let m = parse(big).unwrap().metrics();
        assert!(m.iter().all(|x| x.value.is_finite()), "{m:?}");
        assert_eq!(metric(&m, "files_per_sec"), 1e308);
    }

    #[test]
    fn new_checks_the_arguments_and_adds_the_target_directory() {
        let w = ExternalFsMark::new(&["-s".into(), "0".into(), "-n".into(), "10".into()]).unwrap();
        assert_eq!(w.args(), ["-s", "0", "-n", "10", "-d", "."]);
        assert_eq!(w.command_line(), "fs_mark -s 0 -n 10 -d .");
        let e = ExternalFsMark::new(&["-q".into()]).unwrap_err().to_string();
        assert!(e.contains("fs_mark options"), "{e}");
        let long = format!("/{}", "x".repeat(45));
        let e = ExternalFsMark::new(&["-d".into(), long])
            .unwrap_err()
            .to_string();
        assert!(e.contains("too long"), "{e}");
        let e = ExternalFsMark::new(&[format!("-d/{}", "z".repeat(39))])
            .unwrap_err()
            .to_string();
        assert!(e.contains("40 bytes"), "{e}");
        assert!(ExternalFsMark::new(&["-d".into(), "short".into()]).is_ok());
        assert!(dir_fits(Path::new("a")));
        assert!(!dir_fits(Path::new(&"y".repeat(40))));
    }
}
