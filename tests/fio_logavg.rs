//! Averaged logs (log_avg_msec, log_max_value) under `fsdelta fio` and real fio 3.33 on the
//! same time-based job (issue 14): the same log files, fio's columns (`msec, value, ddir, 0,
//! [0,] 0`), and windows as fio's add_log_sample closes them.
//!
//! What the windows must be whatever the load (issue 33: this test once counted windows per
//! second, and a busy machine does not keep that count, fio's own logs included): a line closes
//! a window of log_avg_msec that starts at the previous line's time rounded down to a multiple
//! of log_avg_msec (fio's avg_last), so each line but the last lies in a later window than the
//! one before it (at most one line per window; the helper-sampled bw and iops logs may close a
//! window LOG_MSEC_SLACK = 1 ms early); the last line may also be the close at the end of the
//! job (finalize_logs), in the same window as the one before; times never go back; and no line
//! is later than the tool's own process lived. How many windows a run gets, and how far apart
//! they fall, is the scheduler's business and is not checked.
//!
//! Needs /usr/bin/fio; skips otherwise, saying why, unless FSDELTA_REQUIRE_ALL=1.

mod common;

const RUNTIME_MS: u64 = 1000;
const AVG_MS: u64 = 100;
/// fio's LOG_MSEC_SLACK (stat.c): the helper thread may close a bw/iops window this early.
const SLACK_MS: u64 = 1;

/// The checks both tools' logs must pass whatever the timing: columns, fio's window rule,
/// times within the run.
fn check(who: &str, job: &str, logs: &common::FioLogs, cols: usize, lived_ms: u64) {
    assert!(!logs.is_empty(), "{who} {job}: no logs");
    for (name, lines) in logs {
        if name.contains("_slat.") {
            // A synchronous engine measures no submission latency.
            assert!(lines.is_empty(), "{who} {name}: {lines:?}");
            continue;
        }
        // The job read for RUNTIME_MS: its samples end up in at least one closed window.
        assert!(!lines.is_empty(), "{who} {job}: {name} is empty");
        let rates = name.contains("_bw.") || name.contains("_iops.");
        for l in lines {
            assert_eq!(l.len(), cols, "{who} {name}: {l:?}");
            // Reads only; bs, offset and prio are 0 in an averaged line.
            assert_eq!(l[2], 0, "{who} {name}: {l:?}");
            assert!(l[3..].iter().all(|&v| v == 0), "{who} {name}: {l:?}");
            // Every latency is positive; a rate over a long stall may round down to 0.
            assert!(rates || l[1] > 0, "{who} {name}: {l:?}");
            assert!(
                l[0] <= lived_ms,
                "{who} {name}: a line at {} ms, the process lived {lived_ms} ms",
                l[0]
            );
        }
        assert!(
            lines.iter().any(|l| l[1] > 0),
            "{who} {name}: every value 0: {lines:?}"
        );
        let times: Vec<u64> = lines.iter().map(|l| l[0]).collect();
        for (k, w) in times.windows(2).enumerate() {
            let (prev, t) = (w[0], w[1]);
            assert!(
                t >= prev,
                "{who} {name}: line {} at {t} after {prev}",
                k + 1
            );
            let last = k + 2 == times.len();
            // The window the previous line opened ends at the next multiple of AVG_MS.
            let window_end = (prev / AVG_MS + 1) * AVG_MS;
            assert!(
                last || t + SLACK_MS >= window_end,
                "{who} {name}: line {} at {t} ms closes the window that the line at {prev} ms \
                 opened, which lasts until {window_end} ms: {times:?}",
                k + 1
            );
        }
        // Hence at most one line per window, give or take the close at the end.
        let t_last = *times.last().unwrap();
        assert!(
            times.len() as u64 <= (t_last + SLACK_MS) / AVG_MS + 2,
            "{who} {name}: {} lines up to {t_last} ms: {times:?}",
            times.len()
        );
    }
}

#[test]
fn averaged_logs_have_fios_names_windows_and_columns() {
    if !common::require_fio() {
        return;
    }
    let base = format!(
        "[j]\nrw=randread\nsize=8m\ntime_based\nruntime={RUNTIME_MS}ms\nlog_avg_msec={AVG_MS}\n\
         write_lat_log=x\nwrite_bw_log=x\nwrite_iops_log=x\n"
    );
    for (extra, cols) in [("", 5), ("log_offset=1\nlog_max_value=1\n", 6)] {
        let job = format!("{base}{extra}");
        let (_d, ours, lived) =
            common::run_for_logs_timed(env!("CARGO_BIN_EXE_fsdelta"), &["fio"], &job);
        let (_e, theirs, fio_lived) = common::run_for_logs_timed("fio", &[], &job);
        // The same files.
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            theirs.keys().collect::<Vec<_>>(),
            "{job}"
        );
        assert_eq!(
            ours.keys().collect::<Vec<_>>(),
            [
                "x_bw.1.log",
                "x_clat.1.log",
                "x_iops.1.log",
                "x_lat.1.log",
                "x_slat.1.log"
            ],
            "{job}"
        );
        check("fsdelta", &job, &ours, cols, lived);
        check("fio", &job, &theirs, cols, fio_lived);
    }
}

/// The window rule itself: it takes lines as a stall leaves them (a line late in its window at
/// 290 ms, the next 10 ms later at 300, which the count-per-second version of this test
/// refused) and refuses lines that break it: two in one window, a time going back, a line
/// after the process ended.
#[test]
fn the_window_rule_accepts_late_lines_and_refuses_two_in_one_window() {
    let logs = |times: &[u64]| -> common::FioLogs {
        [(
            "x_lat.1.log".to_string(),
            times.iter().map(|&t| vec![t, 5, 0, 0, 0]).collect(),
        )]
        .into()
    };
    let ok =
        |times: &[u64]| std::panic::catch_unwind(|| check("t", "", &logs(times), 5, 2000)).is_ok();
    // Late (290), then the next window at 300; the last line is the close at the end.
    assert!(ok(&[100, 290, 300, 400, 1000, 1001]));
    // A bw/iops window closed LOG_MSEC_SLACK early.
    assert!(ok(&[100, 199, 300]));
    // Two lines in the window 200..300; a time going back; a line after the process ended.
    assert!(!ok(&[100, 200, 250, 300]));
    assert!(!ok(&[100, 300, 200, 400]));
    assert!(!ok(&[100, 200, 2001]));
}
