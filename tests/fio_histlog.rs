//! Histogram logs (write_hist_log, log_hist_msec, log_hist_coarseness) under `fsdelta fio` and
//! real fio 3.33 on the same time-based job: the same file names (one per clone), the same
//! columns per line (`msec, ddir, bs` and 1856 >> coarseness bins), the same number of lines
//! give or take one, per direction a line about every log_hist_msec; and fio's own
//! `fio-histo-log-pctiles.py` (shipped gzipped in Debian's fio package) reads ours and counts
//! the I/Os our bins hold.
//!
//! Needs /usr/bin/fio; skips otherwise, saying why, unless FSDELTA_REQUIRE_ALL=1. The script
//! part needs python3 and the script as well (it uses Python's standard library only); the
//! `fiologparser_hist.py` part (also Debian's) a Python with numpy and pandas, `python3` or the
//! one FSDELTA_TEST_PYTHON names; each part is skipped with a printed reason without them.

mod common;

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const RUNTIME_MS: u64 = 1000;
const HIST_MS: u64 = 100;
const SCRIPT: &str = "/usr/share/doc/fio/fio-histo-log-pctiles.py.gz";
const PARSER: &str = "/usr/share/doc/fio/fiologparser_hist.py.gz";

use common::FioLogs as Logs;

/// The checks both tools' logs must pass.
fn check(who: &str, job: &str, logs: &Logs, cols: usize) {
    // Two directions, a line per window each.
    let windows = RUNTIME_MS / HIST_MS;
    for (name, lines) in logs {
        assert!(
            (2 * (windows - 2)..=2 * windows).contains(&(lines.len() as u64)),
            "{who} {job}: {name} has {} lines, want about {}",
            lines.len(),
            2 * (windows - 1)
        );
        // Per direction: window k starts k * log_hist_msec after the first (fio keeps the
        // drift), so line k is at (k + 1) * log_hist_msec or later, times rise, and the last
        // is within the runtime.
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
            seen[d] += 1;
            assert!(
                l[0] >= seen[d] * HIST_MS && l[0] > last[d] && l[0] <= RUNTIME_MS + HIST_MS,
                "{who} {name}: line {} of ddir {d} at {} (the last at {})",
                seen[d],
                l[0],
                last[d]
            );
            last[d] = l[0];
        }
        assert!(
            seen.iter().all(|&n| n >= windows - 2),
            "{who} {name}: {seen:?}"
        );
    }
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
        // The same files, with as many lines give or take one.
        let (ours_dir, ours, theirs_dir, theirs) = common::logs_of_both(&job);
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            ["h_clat_hist.1.log", "h_clat_hist.2.log"],
            "{job}"
        );
        check("fsdelta", &job, &ours, cols);
        check("fio", &job, &theirs, cols);
        if cols != 3 + 1856 {
            continue;
        }
        let held =
            |name: &str| -> u64 { ours[name].iter().map(|l| l[3..].iter().sum::<u64>()).sum() };
        let name = "h_clat_hist.1.log";
        match script(SCRIPT, ours_dir.path(), "") {
            Err(what) => {
                eprintln!("SKIPPED (the fio-histo-log-pctiles.py part): this test needs {what}")
            }
            Ok(py) => {
                let o = Command::new(python())
                    .current_dir(ours_dir.path())
                    .arg(&py)
                    .args(["--log-hist-msec", &HIST_MS.to_string(), name])
                    .output()
                    .unwrap();
                let out = String::from_utf8_lossy(&o.stdout);
                assert!(o.status.success() && !out.contains("ERROR"), "{out}");
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
                eprintln!("SKIPPED (the fiologparser_hist.py part): this test needs {what}")
            }
            Ok(py) => {
                // It reads ours as it reads fio's: as many 250 ms rows (give or take one), each
                // with samples, over the same columns.
                let parse = |dir: &Path| {
                    let o = Command::new(python())
                        .current_dir(dir)
                        .arg(&py)
                        .args(["--interval", "250", name])
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
                    (out, rows)
                };
                let (out, ours_rows) = parse(ours_dir.path());
                let (fio_out, fio_rows) = parse(theirs_dir.path());
                assert!(!ours_rows.is_empty(), "{out}");
                assert!(
                    ours_rows.len().abs_diff(fio_rows.len()) <= 1,
                    "ours:\n{out}\nfio's:\n{fio_out}"
                );
                for r in &ours_rows {
                    assert_eq!(r.len(), fio_rows[0].len(), "{out}");
                    assert!(r[1].parse::<f64>().unwrap() > 0.0, "{out}");
                }
            }
        }
    }
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
