//! fs_mark 3.3's output format, byte for byte, and the `--json` document.
//!
//! Why a module of its own: scripts in the wild parse fs_mark's header and table, so the strings
//! here are copied from fs_mark's `print_run_info()` / `print_iteration_stats()` (including its
//! two-space argv echo with a trailing space, its `%6s %12s %12s %12s %16s` header and
//! `%6u %12u %12u %12.1f %16llu` rows) and checked against the real binary in
//! `tests/fsmark_cli.rs`. Every function is pure: it returns the text and never writes it,
//! measures or reads a clock (the start time is passed in).

use crate::fsmark::{DirPolicy, FillStop, FsMarkOptions, FsMarkResult, IterationResult, Op};
use chrono::NaiveDateTime;
use serde::Serialize;
use std::fmt::Write;

/// The version fs_mark prints; our engine implements its semantics.
pub const FS_MARK_VERSION: &str = "3.3";

/// Version of the `--json` document.
pub const JSON_SCHEMA_VERSION: u32 = 1;

/// Where a header goes: fs_mark writes one extra `#` before the table header in its log file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderTarget {
    /// The terminal.
    Stdout,
    /// The `-l` log file.
    LogFile,
}

/// C's `ctime()` without the newline: `Wed Dec  2 09:37:47 2026`.
pub fn ctime(t: NaiveDateTime) -> String {
    t.format("%a %b %e %H:%M:%S %Y").to_string()
}

/// fs_mark's run information and table header, starting with its empty line.
pub fn header(opts: &FsMarkOptions, started: NaiveDateTime, target: HeaderTarget) -> String {
    let mut s = String::from("\n# ");
    for a in std::iter::once("fs_mark".to_string()).chain(opts.echo_args()) {
        let _ = write!(s, " {a} ");
    }
    s.push('\n');
    let _ = writeln!(
        s,
        "#\tVersion {FS_MARK_VERSION}, {} thread(s) starting at {}",
        opts.threads,
        ctime(started)
    );
    let _ = writeln!(s, "#\tSync method: {}", opts.sync.description());
    match opts.dir_policy {
        DirPolicy::NoSubdirs => s.push_str("#\tDirectories:  no subdirectories used\n"),
        DirPolicy::RoundRobin {
            subdirs,
            files_per_subdir,
        } => {
            let _ = writeln!(
                s,
                "#\tDirectories:  Round Robin between directories across {subdirs} subdirectories with {files_per_subdir} files per subdirectory."
            );
        }
        DirPolicy::TimeHash {
            subdirs,
            secs_per_subdir,
        } => {
            let _ = writeln!(
                s,
                "#\tDirectories:  Time based hash between directories across {subdirs} subdirectories with {secs_per_subdir} seconds per subdirectory."
            );
        }
    }
    let _ = writeln!(
        s,
        "#\tFile names: {} bytes long, ({} initial bytes of time stamp with {} random bytes at end of name)",
        opts.name_len,
        opts.seq_len(),
        opts.rand_len
    );
    let _ = writeln!(
        s,
        "#\tFiles info: size {} bytes, written with an IO size of {} bytes per write",
        opts.file_size, opts.io_size
    );
    s.push_str(
        "#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls.\n",
    );
    if target == HeaderTarget::LogFile {
        s.push('#');
    }
    s.push_str(&table_header(opts.verbose));
    s
}

/// The table header (with the line that precedes it in fs_mark).
pub fn table_header(verbose: bool) -> String {
    if verbose {
        format!(
            "#\tAll system call times are reported in microseconds.\n\n{:>6} {:>12} {:>12} {:>12} {:>16} {:>26} {:>26} {:>26} {:>26} {:>26} {:>26}\n",
            "FSUse%",
            "Count",
            "Size",
            "Files/sec",
            "App Overhead",
            "CREAT (Min/Avg/Max)",
            "WRITE (Min/Avg/Max)",
            "FSYNC (Min/Avg/Max)",
            "SYNC (Min/Avg/Max)",
            "CLOSE (Min/Avg/Max)",
            "UNLINK (Min/Avg/Max)"
        )
    } else {
        format!(
            "\n{:>6} {:>12} {:>12} {:>12} {:>16}\n",
            "FSUse%", "Count", "Size", "Files/sec", "App Overhead"
        )
    }
}

/// One table row: `%6u %12u %12u %12.1f %16llu`, and with `-v` the Min/Avg/Max microseconds of
/// each call (`%8llu` each; 0 for calls that did not happen, as fs_mark prints them).
pub fn row(it: &IterationResult, verbose: bool) -> String {
    let mut s = format!(
        "{:>6} {:>12} {:>12} {:>12.1} {:>16}",
        it.fs_use_pct, it.count, it.size, it.files_per_sec, it.app_overhead_us
    );
    if verbose {
        for op in Op::ALL {
            let (min, avg, max) = it.ops.get(&op).map_or((0, 0, 0), |o| {
                (
                    o.min_ns / 1000,
                    (o.mean_ns / 1000.0) as u64,
                    o.max_ns / 1000,
                )
            });
            let _ = write!(s, " {min:>8} {avg:>8} {max:>8}");
        }
    }
    s.push('\n');
    s
}

/// fs_mark's message when its free-space check stops a run.
pub fn fill_stopped(stop: &FillStop) -> String {
    format!(
        "Insufficient free space in {} to create {} new files, exiting\n",
        stop.dir.display(),
        stop.files
    )
}

#[derive(Serialize)]
struct JsonDoc<'a> {
    schema_version: u32,
    engine: &'static str,
    fsdelta_version: &'static str,
    fs_mark_version: &'static str,
    command_line: &'a str,
    started: String,
    options: &'a FsMarkOptions,
    threads: u32,
    iterations: &'a [IterationResult],
    fill_stopped: Option<&'a FillStop>,
    elapsed_s: f64,
    ops: std::collections::BTreeMap<Op, crate::fsmark::OpStats>,
    metrics: Vec<crate::model::Metric>,
    histograms: Vec<crate::model::HistogramRecord>,
}

/// The full measurements as one JSON document (`"schema_version": 1`): options, every iteration
/// row with its per-worker and per-operation numbers, whole-run latency summaries, the
/// sample-level metrics with units and directions, and the histograms behind them.
pub fn json(opts: &FsMarkOptions, started: NaiveDateTime, result: &FsMarkResult) -> String {
    let doc = JsonDoc {
        schema_version: JSON_SCHEMA_VERSION,
        engine: "fsmark",
        fsdelta_version: env!("CARGO_PKG_VERSION"),
        fs_mark_version: FS_MARK_VERSION,
        command_line: &result.command_line,
        started: started.format("%Y-%m-%dT%H:%M:%S").to_string(),
        options: opts,
        threads: result.threads,
        iterations: &result.iterations,
        fill_stopped: result.fill_stopped.as_ref(),
        elapsed_s: result.elapsed_ns as f64 / 1e9,
        ops: result.op_stats(),
        metrics: result.metrics(),
        histograms: result.histogram_records(),
    };
    let mut s = serde_json::to_string_pretty(&doc)
        .expect("the fs_mark JSON document has only string keys and finite numbers");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsmark::{OpHistograms, WorkerIteration, result::aggregate};
    use crate::probe::clock::Nanos;

    fn opts(args: &str) -> FsMarkOptions {
        let a: Vec<String> = args.split_whitespace().map(str::to_string).collect();
        FsMarkOptions::parse(&a).unwrap()
    }

    fn start() -> NaiveDateTime {
        NaiveDateTime::parse_from_str("2026-12-02 09:37:47", "%Y-%m-%d %H:%M:%S").unwrap()
    }

    #[test]
    fn ctime_pads_the_day_with_a_space() {
        assert_eq!(ctime(start()), "Wed Dec  2 09:37:47 2026");
        let t = NaiveDateTime::parse_from_str("2026-11-12 19:07:03", "%Y-%m-%d %H:%M:%S").unwrap();
        assert_eq!(ctime(t), "Thu Nov 12 19:07:03 2026");
    }

    #[test]
    fn header_matches_fs_marks_real_output() {
        // Captured from /usr/bin/fs_mark (Debian 3.3-3), argv[0] written as fs_mark.
        let expected = "
#  fs_mark  -d  /tmp/fsm/a  -s  4096  -n  200  -L  3  -t  2 
#\tVersion 3.3, 2 thread(s) starting at Wed Dec  2 09:37:47 2026
#\tSync method: INBAND FSYNC: fsync() per file in write loop.
#\tDirectories:  no subdirectories used
#\tFile names: 40 bytes long, (16 initial bytes of time stamp with 24 random bytes at end of name)
#\tFiles info: size 4096 bytes, written with an IO size of 16384 bytes per write
#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls.

FSUse%        Count         Size    Files/sec     App Overhead
";
        let o = opts("-d /tmp/fsm/a -s 4096 -n 200 -L 3 -t 2");
        assert_eq!(header(&o, start(), HeaderTarget::Stdout), expected);
        // The log file has a '#' where the terminal has an empty line.
        let log = header(&o, start(), HeaderTarget::LogFile);
        assert!(
            log.ends_with(
                "system calls.\n#\nFSUse%        Count         Size    Files/sec     App Overhead\n"
            ),
            "{log}"
        );
    }

    #[test]
    fn verbose_header_matches_fs_mark() {
        let o = opts("-v -d /tmp/fsmtest/b -s 0 -n 100 -D 4 -N 10");
        let h = header(&o, start(), HeaderTarget::Stdout);
        assert!(h.contains("#\tDirectories:  Round Robin between directories across 4 subdirectories with 10 files per subdirectory.\n"));
        assert!(h.ends_with("#\tAll system call times are reported in microseconds.\n\nFSUse%        Count         Size    Files/sec     App Overhead        CREAT (Min/Avg/Max)        WRITE (Min/Avg/Max)        FSYNC (Min/Avg/Max)         SYNC (Min/Avg/Max)        CLOSE (Min/Avg/Max)       UNLINK (Min/Avg/Max)\n"), "{h}");
        let log = header(&o, start(), HeaderTarget::LogFile);
        assert!(log.contains("\n##\tAll system call times"), "{log}");
    }

    #[test]
    fn every_sync_method_and_directory_policy_has_fs_marks_text() {
        let lines = [
            "NO SYNC: Test does not issue sync() or fsync() calls.",
            "INBAND FSYNC: fsync() per file in write loop.",
            "SYSTEM SYNC/SINGLE FSYNC: Issue sync() after main write loop and 1 file fsync() per subdirectory.",
            "POST REVERSE: Reopen and fsync() each file in reverse order after main write loop.",
            "SYNC POST REVERSE: Issue sync() and then reopen and fsync() each file in reverse order after main write loop.",
            "POST: Reopen and fsync() each file in order after main write loop.",
            "SYNC POST: Issue sync() and then reopen and fsync() each file in order after main write loop.",
        ];
        for (n, text) in lines.iter().enumerate() {
            let h = header(&opts(&format!("-S {n}")), start(), HeaderTarget::Stdout);
            assert!(
                h.contains(&format!("#\tSync method: {text}\n")),
                "-S {n}: {h}"
            );
        }
        let h = header(&opts("-D 16"), start(), HeaderTarget::Stdout);
        assert!(h.contains("#\tDirectories:  Time based hash between directories across 16 subdirectories with 180 seconds per subdirectory.\n"), "{h}");
        let h = header(
            &opts("-D 16 -N 256 -p 30 -r 10 -s 0 -w 512"),
            start(),
            HeaderTarget::Stdout,
        );
        assert!(h.contains("#\tDirectories:  Round Robin between directories across 16 subdirectories with 256 files per subdirectory.\n"));
        assert!(h.contains("#\tFile names: 30 bytes long, (20 initial bytes of time stamp with 10 random bytes at end of name)\n"));
        assert!(h.contains(
            "#\tFiles info: size 0 bytes, written with an IO size of 512 bytes per write\n"
        ));
    }

    #[test]
    fn header_of_options_built_in_code_echoes_the_canonical_command() {
        let o = FsMarkOptions {
            files: 10,
            file_size: 0,
            ..FsMarkOptions::default()
        };
        let h = header(&o, start(), HeaderTarget::Stdout);
        assert!(
            h.starts_with("\n#  fs_mark  -s  0  -n  10  -t  1  -S  1 \n"),
            "{h}"
        );
    }

    fn sample_row() -> IterationResult {
        let mut ops = OpHistograms::new();
        ops.record(Op::Create, Nanos(61_000));
        ops.record(Op::Create, Nanos(227_900));
        ops.record(Op::Close, Nanos(3_000));
        let w = WorkerIteration {
            files: 400,
            start: Nanos(0),
            loop_end: Nanos(128_300_000),
            ops,
        };
        aggregate(1, &[w], 0, 4096, 68).0
    }

    #[test]
    fn rows_use_fs_marks_widths() {
        let r = sample_row();
        let line = row(&r, false);
        // 400 / 0.1283 s = 3117.69 files/s; overhead 128300 - 291.9 us = 128008 us.
        assert_eq!(
            line,
            "    68          400         4096       3117.7           128008\n"
        );
        let v = row(&r, true);
        let cols: Vec<&str> = v.split_whitespace().collect();
        assert_eq!(cols.len(), 5 + 18);
        assert_eq!(&cols[5..8], &["61", "144", "227"]);
        assert_eq!(&cols[8..11], &["0", "0", "0"], "no write happened");
        assert_eq!(&cols[17..20], &["3", "3", "3"]);
        assert!(v.starts_with(line.trim_end()));
        assert!(
            v.contains(" 3117.7           128008       61      144      227        0"),
            "{v}"
        );
    }

    #[test]
    fn fill_message_is_fs_marks() {
        let m = fill_stopped(&FillStop {
            dir: "/mnt/t".into(),
            files: 1000,
        });
        assert_eq!(
            m,
            "Insufficient free space in /mnt/t to create 1000 new files, exiting\n"
        );
    }

    #[test]
    fn json_document_carries_everything() {
        let r = sample_row();
        let mut ops = OpHistograms::new();
        ops.record(Op::Create, Nanos(61_000));
        let res = FsMarkResult {
            command_line: "fs_mark -s 4096".into(),
            threads: 1,
            iterations: vec![r],
            fill_stopped: None,
            elapsed_ns: 2_000_000_000,
            ops,
        };
        let o = opts("-d /x -s 4096 --json");
        let text = json(&o, start(), &res);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["engine"], "fsmark");
        assert_eq!(v["command_line"], "fs_mark -s 4096");
        assert_eq!(v["options"]["dirs"][0], "/x");
        assert_eq!(v["options"]["sync"], "per_file");
        assert_eq!(v["iterations"][0]["count"], 400);
        assert_eq!(v["iterations"][0]["ops"]["create"]["count"], 2);
        assert_eq!(v["ops"]["create"]["max_ns"], 61_000);
        assert_eq!(v["elapsed_s"], 2.0);
        let names: Vec<&str> = v["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"files_per_sec") && names.contains(&"create_lat_ns_p99"));
        assert_eq!(v["metrics"][0]["unit"], "files/s");
        assert_eq!(v["metrics"][0]["direction"], "higher_is_better");
        assert_eq!(v["histograms"][0]["name"], "create_lat_ns");
        assert_eq!(v["histograms"][0]["layout"], "fio-loglinear-6x29");
    }
}
