//! Histogram logs (write_hist_log, log_hist_msec, log_hist_coarseness) under `fsdelta fio` and
//! real fio 3.33 on the same time-based job: the same file names (one per clone), the same
//! columns per line (`msec, ddir, bs` and 1856 >> coarseness bins), lines as fio's
//! add_clat_sample writes them; and fio's own `fio-histo-log-pctiles.py` (shipped gzipped in
//! Debian's fio package) reads ours and counts the I/Os our bins hold.
//!
//! What the lines must be whatever the load (issue 33: this test once counted lines per second,
//! and a busy machine does not keep that count, fio's own logs included): per direction, line k
//! is written at a completion once k windows of log_hist_msec have passed since the first
//! completion (fio's hist_last moves on by log_hist_msec a line, keeping the drift), so line k
//! is at k * log_hist_msec or later; after a stall the lines of the windows missed follow one
//! another at once, so times only never go back; each line holds the completion that wrote it;
//! no line is later than the tool's process lived. How many lines a run gets is the
//! scheduler's business and is not checked.
//!
//! Needs /usr/bin/fio; skips otherwise, saying why, unless FSDELTA_REQUIRE_ALL=1. The script
//! part needs python3 and the script as well (it uses Python's standard library only); the
//! `fiologparser_hist.py` part (also Debian's) a Python with numpy and pandas, `python3` or the
//! one FSDELTA_TEST_PYTHON names; each part is skipped with a printed reason without them (a
//! failure under FSDELTA_REQUIRE_ALL=1: .ci/run installs python3-numpy and python3-pandas).

mod common;

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const RUNTIME_MS: u64 = 1000;
const HIST_MS: u64 = 100;
const SCRIPT: &str = "/usr/share/doc/fio/fio-histo-log-pctiles.py.gz";
const PARSER: &str = "/usr/share/doc/fio/fiologparser_hist.py.gz";

use common::FioLogs as Logs;

/// The checks both tools' logs must pass whatever the timing.
fn check(who: &str, job: &str, logs: &Logs, cols: usize, lived_ms: u64) {
    let mut dirs = [false; 2];
    for (name, lines) in logs {
        // The clone read and wrote for RUNTIME_MS: at least one window closed.
        assert!(!lines.is_empty(), "{who} {job}: {name} is empty");
        // Per direction: line k is at k * log_hist_msec or later, times never go back, and
        // none is later than the process lived.
        let mut seen = [0u64; 2];
        let mut last = [0u64; 2];
        for l in lines {
            assert_eq!(l.len(), cols, "{who} {name}: {:?}", &l[..3]);
            let d = l[1] as usize;
            assert!(d < 2, "{who} {name}: {:?}", &l[..3]);
            assert_eq!(l[2], 4096, "{who} {name}: {:?}", &l[..3]);
            assert!(
                l[3..].iter().sum::<u64>() > 0,
                "{who} {name}: {:?}",
                &l[..3]
            );
            dirs[d] = true;
            seen[d] += 1;
            assert!(
                l[0] >= seen[d] * HIST_MS && l[0] >= last[d] && l[0] <= lived_ms,
                "{who} {name}: line {} of ddir {d} at {} (the last at {}; the process lived \
                 {lived_ms} ms)",
                seen[d],
                l[0],
                last[d]
            );
            last[d] = l[0];
        }
    }
    assert_eq!(dirs, [true, true], "{who} {job}: both directions logged");
}

/// The Python the script parts run.
fn python() -> String {
    std::env::var("FSDELTA_TEST_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// One of fio's gzipped Python tools, unpacked into `dir`, when it is installed and the Python
/// imports `modules`.
fn script(gz_path: &str, dir: &Path, modules: &str) -> Result<PathBuf, String> {
    let gz = std::fs::read(gz_path).map_err(|e| format!("{gz_path} ({e})"))?;
    let ok = Command::new(python())
        .args(["-c", &format!("import sys{modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        return Err(format!(
            "{} with the modules sys{modules} (FSDELTA_TEST_PYTHON names another)",
            python()
        ));
    }
    let mut text = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut text)
        .unwrap();
    let name = Path::new(gz_path).file_stem().unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    Ok(p)
}

#[test]
fn histogram_logs_have_fios_names_lines_and_columns() {
    if !common::require_fio() {
        return;
    }
    let base = format!(
        "[j]\nrw=randrw\nsize=8m\ntime_based\nruntime={RUNTIME_MS}ms\nnumjobs=2\n\
         log_hist_msec={HIST_MS}\nwrite_hist_log=h\n"
    );
    for (extra, cols) in [("log_hist_coarseness=2\n", 3 + 464), ("", 3 + 1856)] {
        let job = format!("{base}{extra}");
        let (ours_dir, ours, lived) =
            common::run_for_logs_timed(env!("CARGO_BIN_EXE_fsdelta"), &["fio"], &job);
        let (theirs_dir, theirs, fio_lived) = common::run_for_logs_timed("fio", &[], &job);
        // The same files.
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            ["h_clat_hist.1.log", "h_clat_hist.2.log"],
            "{job}"
        );
        assert_eq!(
            theirs.keys().collect::<Vec<_>>(),
            ours.keys().collect::<Vec<_>>(),
            "{job}"
        );
        check("fsdelta", &job, &ours, cols, lived);
        check("fio", &job, &theirs, cols, fio_lived);
        if cols != 3 + 1856 {
            continue;
        }
        let held =
            |name: &str| -> u64 { ours[name].iter().map(|l| l[3..].iter().sum::<u64>()).sum() };
        let name = "h_clat_hist.1.log";
        match script(SCRIPT, ours_dir.path(), "") {
            Err(what) => {
                common::require(
                    false,
                    &format!("{what} (for the fio-histo-log-pctiles.py part)"),
                );
            }
            Ok(py) => {
                // The script divides by the time between two lines of a direction; after a
                // stall fio writes the lines of the windows missed in the same millisecond (so
                // do we): give it those merged, their bins summed, no I/O lost.
                let merged = "merged.log";
                std::fs::write(ours_dir.path().join(merged), merge_same_ms(&ours[name])).unwrap();
                let o = Command::new(python())
                    .current_dir(ours_dir.path())
                    .arg(&py)
                    .args(["--log-hist-msec", &HIST_MS.to_string(), merged])
                    .output()
                    .unwrap();
                let out = String::from_utf8_lossy(&o.stdout);
                assert!(
                    o.status.success() && !out.contains("ERROR"),
                    "{out}{}",
                    String::from_utf8_lossy(&o.stderr)
                );
                // Its per-second sample counts add up to the I/Os our bins hold (it spreads
                // each line over the seconds it covers, in floating point).
                let counted = column_sum(&out, "msec-since-start, samples,");
                let held = held(name);
                assert!(
                    (counted - held as f64).abs() <= 1.0 + held as f64 / 1000.0,
                    "the script counted {counted}, our bins hold {held}: {out}"
                );
            }
        }
        match script(PARSER, ours_dir.path(), ", numpy, pandas") {
            Err(what) => {
                common::require(
                    false,
                    &format!("{what} (for the fiologparser_hist.py part)"),
                );
            }
            Ok(py) => {
                // It reads ours as it reads fio's: rows over the same columns, each with
                // samples, at rising multiples of the 250 ms interval, the last the first one
                // at or after the log's last line. (Which intervals in between get a row
                // depends on where a stall left gaps between lines, in either tool.)
                const INTERVAL: u64 = 250;
                let parse = |dir: &Path, logs: &Logs| {
                    let o = Command::new(python())
                        .current_dir(dir)
                        .arg(&py)
                        .args(["--interval", &INTERVAL.to_string(), name])
                        .output()
                        .unwrap();
                    let out = String::from_utf8_lossy(&o.stdout).into_owned();
                    assert!(
                        o.status.success(),
                        "{out}{}",
                        String::from_utf8_lossy(&o.stderr)
                    );
                    let rows: Vec<Vec<String>> = out
                        .lines()
                        .skip_while(|l| !l.starts_with("end-time, samples,"))
                        .skip(1)
                        .filter(|l| !l.trim().is_empty())
                        .map(|l| l.split(',').map(|f| f.trim().to_string()).collect())
                        .collect();
                    assert!(!rows.is_empty(), "{out}");
                    let ends: Vec<u64> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
                    let t_last = logs[name].iter().map(|l| l[0]).max().unwrap();
                    assert!(
                        ends.iter().all(|e| e % INTERVAL == 0)
                            && ends.windows(2).all(|w| w[0] < w[1])
                            && *ends.last().unwrap() == t_last.div_ceil(INTERVAL) * INTERVAL,
                        "rows end at {ends:?}, the log's last line is at {t_last} ms:\n{out}"
                    );
                    for r in &rows {
                        assert!(r[1].parse::<f64>().unwrap() > 0.0, "{out}");
                    }
                    (out, rows)
                };
                let (out, ours_rows) = parse(ours_dir.path(), &ours);
                let (_, fio_rows) = parse(theirs_dir.path(), &theirs);
                for r in &ours_rows {
                    assert_eq!(r.len(), fio_rows[0].len(), "{out}");
                }
            }
        }
    }
}

/// The text of a histogram log with each direction's lines of one millisecond merged into
/// one, their bins summed (times per direction then strictly rise).
fn merge_same_ms(lines: &[Vec<u64>]) -> String {
    let mut out: Vec<Vec<u64>> = Vec::new();
    let mut last: [Option<usize>; 2] = [None, None];
    for l in lines {
        let d = l[1] as usize;
        match last[d] {
            Some(i) if out[i][0] == l[0] => {
                for (sum, v) in out[i][3..].iter_mut().zip(&l[3..]) {
                    *sum += v;
                }
            }
            _ => {
                last[d] = Some(out.len());
                out.push(l.clone());
            }
        }
    }
    out.iter()
        .map(|l| {
            let cols: Vec<String> = l.iter().map(u64::to_string).collect();
            cols.join(", ") + "\n"
        })
        .collect()
}

#[test]
fn merging_keeps_every_io_and_leaves_rising_times() {
    let lines = vec![
        vec![101, 0, 4096, 1, 2],
        vec![101, 1, 4096, 3, 0],
        vec![650, 0, 4096, 1, 1],
        vec![650, 1, 4096, 0, 1],
        vec![650, 0, 4096, 2, 0],
        vec![651, 0, 4096, 0, 5],
    ];
    assert_eq!(
        merge_same_ms(&lines),
        "101, 0, 4096, 1, 2\n101, 1, 4096, 3, 0\n650, 0, 4096, 3, 1\n650, 1, 4096, 0, 1\n\
         651, 0, 4096, 0, 5\n"
    );
}

/// The sum of the second column of the CSV rows after the header line starting `header`.
fn column_sum(out: &str, header: &str) -> f64 {
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with(header))
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert!(!rows.is_empty(), "no rows after {header:?}: {out}");
    rows.iter()
        .map(|r| r.split(',').nth(1).unwrap().trim().parse::<f64>().unwrap())
        .sum()
}

/// Without clat (disable_clat, gtod_reduce) fio 3.33 still writes the file, empty; so do we.
#[test]
fn histogram_logs_without_clat_are_empty_files() {
    if !common::require_fio() {
        return;
    }
    for opt in ["disable_clat=1", "gtod_reduce=1"] {
        let job = format!("[j]\nrw=read\nsize=256k\nwrite_hist_log=h\nlog_hist_msec=1\n{opt}\n");
        let (_d, ours) = common::run_for_logs(env!("CARGO_BIN_EXE_fsdelta"), &["fio"], &job);
        let (_e, theirs) = common::run_for_logs("fio", &[], &job);
        assert_eq!(ours, theirs, "{job}");
        assert_eq!(ours.keys().collect::<Vec<_>>(), ["h_clat_hist.1.log"]);
        assert!(ours["h_clat_hist.1.log"].is_empty());
    }
}
