//! Averaged logs (log_avg_msec, log_max_value) under `fsdelta fio` and real fio 3.33 on the
//! same time-based job (issue 14): the same log files, one line per window and direction
//! (runtime / log_avg_msec of them, give or take one window for where the run's edges fall),
//! fio's columns (`msec, value, ddir, 0, [0,] 0`), window times rising by about log_avg_msec.
//!
//! Needs /usr/bin/fio; skips otherwise, saying why, unless FSDELTA_REQUIRE_ALL=1.

mod common;

const RUNTIME_MS: u64 = 1000;
const AVG_MS: u64 = 100;

/// The checks both tools' logs must pass: columns, one line per window, rising times.
fn check(who: &str, job: &str, logs: &common::FioLogs, cols: usize) {
    let windows = RUNTIME_MS / AVG_MS;
    for (name, lines) in logs {
        if name.contains("_slat.") {
            // A synchronous engine measures no submission latency.
            assert!(lines.is_empty(), "{who} {name}: {lines:?}");
            continue;
        }
        assert!(
            (windows - 1..=windows + 1).contains(&(lines.len() as u64)),
            "{who} {job}: {name} has {} lines, want {windows} +- 1",
            lines.len()
        );
        let mut last = 0;
        for l in lines {
            assert_eq!(l.len(), cols, "{who} {name}: {l:?}");
            // Reads only; bs, offset and prio are 0 in an averaged line.
            assert_eq!(l[2], 0, "{who} {name}: {l:?}");
            assert!(l[3..].iter().all(|&v| v == 0), "{who} {name}: {l:?}");
            assert!(l[1] > 0, "{who} {name}: {l:?}");
            let step = l[0] - last;
            assert!(
                (AVG_MS - 5..=2 * AVG_MS).contains(&step),
                "{who} {name}: window at {} after {last}",
                l[0]
            );
            last = l[0];
        }
        assert!(last <= RUNTIME_MS + AVG_MS, "{who} {name}: ends at {last}");
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
        // The same files, with as many lines give or take one.
        let (_d, ours, _e, theirs) = common::logs_of_both(&job);
        check("fsdelta", &job, &ours, cols);
        check("fio", &job, &theirs, cols);
    }
}
