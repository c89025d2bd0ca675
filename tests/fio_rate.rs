//! fio's rate limits and exits under `fsdelta fio`, on small fixed jobs: a rated job follows
//! fio's schedule (I/O k of a direction may go k * bs / rate seconds after the start, none after
//! the runtime), so no I/O of a direction completes before its turn (seen in the per-I/O clat
//! log) and a direction moves at most rate * runtime, one more at the boundary; exitall ends
//! the other jobs of the group; a job below rate_min ends with fio's error. Where /usr/bin/fio
//! is installed, the same checks hold for it.
//!
//! What a busy machine may do (issue 33): hold a job back, so that it moves less than its rate
//! allows (hole punches under I/O load did 79 of 100 a direction). That is not checked: a rate
//! is a ceiling, and the tests check that it is never passed, I/O by I/O.

mod common;

use std::process::Command;

/// (jobname, read ios, write ios, error) per reported job.
fn jobs(out: &[u8]) -> Vec<(String, u64, u64, u64)> {
    let v = common::json_of(out);
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap().to_string(),
                j["read"]["total_ios"].as_u64().unwrap(),
                j["write"]["total_ios"].as_u64().unwrap(),
                j["error"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Fails the test, with the tool's stderr, unless it exited 0.
fn succeeded(tool: &str, out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{tool}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn have_fio() -> bool {
    Command::new("fio").arg("--version").output().is_ok()
}

/// Both tools (fio where installed) on `job`; each result checked by `check`.
fn both(job: &str, check: &dyn Fn(&str, &std::process::Output)) {
    let tools: &[&str] = if have_fio() {
        &["fsdelta", "fio"]
    } else {
        common::require(false, "fio 3.33 (/usr/bin/fio) to compare with");
        &["fsdelta"]
    };
    for tool in tools {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        check(tool, &common::tool_json(tool, dir.path(), job));
    }
}

/// Both tools (fio where installed) on `job` with a per-I/O clat log (`write_lat_log=p`); for
/// each tool and each `(ddir, I/Os a second, most)`: the direction moved between 1 and `most`
/// I/Os, and its k-th (from 0) completed no earlier than its turn in the schedule, k / rate
/// seconds after the start (the log's times are milliseconds since the job's clock started,
/// which is no later than its I/O's start).
fn paced(job: &str, dirs: &[(u64, u64, u64)]) {
    let tools: &[&str] = if have_fio() {
        &["fsdelta", "fio"]
    } else {
        common::require(false, "fio 3.33 (/usr/bin/fio) to compare with");
        &["fsdelta"]
    };
    paced_by(tools, job, dirs);
}

/// `paced` with these tools.
fn paced_by(tools: &[&str], job: &str, dirs: &[(u64, u64, u64)]) {
    let job = format!("{job}write_lat_log=p\n");
    for tool in tools {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let out = common::tool_json(tool, dir.path(), &job);
        succeeded(tool, &out);
        let log = std::fs::read_to_string(dir.path().join("p_clat.1.log")).unwrap();
        for &(ddir, per_s, most) in dirs {
            let mut times: Vec<u64> = log
                .lines()
                .map(|l| {
                    l.split(", ")
                        .map(|f| f.parse::<u64>().unwrap())
                        .collect::<Vec<_>>()
                })
                .filter(|f| f[2] == ddir)
                .map(|f| f[0])
                .collect();
            times.sort_unstable();
            assert!(
                (1..=most).contains(&(times.len() as u64)),
                "{tool}: ddir {ddir}: {} I/Os, at most {most}\n{job}",
                times.len()
            );
            for (k, &t) in times.iter().enumerate() {
                let turn = k as u64 * 1000 / per_s;
                assert!(
                    t >= turn,
                    "{tool}: ddir {ddir}: I/O {k} completed at {t} ms, its turn is at {turn} ms\n{job}"
                );
            }
        }
    }
}

/// 256 KiB/s of 4 KiB reads for 2 s: I/O k goes at k * 15.625 ms or later, so at most 128 I/Os
/// (0 ..= 127; the next would go at exactly 2 s, past the runtime), one more at the boundary.
#[test]
fn a_linear_rate_moves_rate_times_runtime() {
    let job = "[r]\nrw=read\nbs=4k\nsize=4m\nrate=256k\ntime_based\nruntime=2\n";
    // 64 reads a second: at most 128, one more at the boundary.
    paced(job, &[(0, 64, 256 * 1024 * 2 / 4096 + 1)]);
}

/// rate_iops in offload mode (libaio, 8 submission workers), each direction of a mixed job
/// paced on its own: at most 100 reads and 100 writes a second for 2 s, one more at the
/// boundary (fio 3.33 did 200 and 200 on a quiet machine). Offload keeps no per-I/O log, so
/// the counts are the evidence.
/// Ours only: fio 3.33's offload hangs at the end of some jobs (seen here with size-bound
/// ones), and this test must not hang with it.
#[test]
fn rate_iops_with_offloaded_submission_holds_per_direction() {
    let job = "[o]\nrw=randrw\nbs=4k\nsize=4m\nioengine=libaio\niodepth=8\nio_submit_mode=offload\nrate_iops=100\ntime_based\nruntime=2\n";
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = common::tool_json("fsdelta", dir.path(), job);
    succeeded("fsdelta", &out);
    let j = jobs(&out.stdout);
    for (what, n) in [("reads", j[0].1), ("writes", j[0].2)] {
        assert!((1..=201).contains(&n), "{n} {what}, at most 200 + 1");
    }
}

/// exitall (default exit_what=group): when the quick job (4 MiB) ends, the rated one of its
/// group ends instead of reading 16 MiB at 4 KiB/s; exit_what=all also ends the job after the
/// stonewall, which never starts. The rated job gets one I/O in if it starts before the quick
/// one ends (fio: 1 on a quiet machine), none if the quick one is faster than its start (seen
/// under CI load, in either tool): at most 1 is the property, the exact figure is the
/// scheduler's.
#[test]
fn exitall_ends_the_group_and_exit_what_all_everything() {
    let job = "[global]\nrw=read\nbs=4k\n[a]\nsize=4m\nexitall\n[b]\nsize=16m\nrate=4k\n";
    both(job, &|tool, out| {
        assert!(out.status.success(), "{tool}");
        let j = jobs(&out.stdout);
        assert_eq!(j[0].1, 1024, "{tool}: {j:?}");
        assert!(j[1].1 <= 1, "{tool}: {j:?}");
    });
    let job = "[global]\nrw=read\nbs=4k\nsize=64k\n[a]\nexitall\nexit_what=all\n[b]\nrate=4k\n[c]\nstonewall\n";
    both(job, &|tool, out| {
        assert!(out.status.success(), "{tool}");
        let n: Vec<u64> = jobs(&out.stdout).iter().map(|j| j.1).collect();
        assert_eq!((n.len(), n[0], n[2]), (3, 16, 0), "{tool}: {n:?}");
        assert!(n[1] <= 1, "{tool}: {n:?}");
    });
}

/// exitall ends a file-engine job as any other: a filecreate job with 30 s to go stops when
/// the quick null job of its group ends (fsdelta's file-engine loop once did not look, and ran
/// its whole runtime). Its runtime, not a wall clock, is the evidence.
#[test]
fn exitall_ends_a_file_engine_job_too() {
    let job = "[a]\nioengine=null\nsize=64k\nexitall\n\
               [c]\nioengine=filecreate\nnrfiles=64\nfilesize=4k\nopenfiles=1\ntime_based\nruntime=30\n";
    both(job, &|tool, out| {
        succeeded(tool, out);
        let v = common::json_of(&out.stdout);
        let c = &v["jobs"][1];
        assert_eq!(c["jobname"], "c", "{tool}");
        let ms = c["job_runtime"].as_u64().unwrap();
        assert!(
            ms < 20_000,
            "{tool}: job c ran {ms} ms, exitall did not end it"
        );
    });
}

/// Two reads 1.5 s apart fall below rate_min=8k over the cycle after the 2 s settling: the job
/// ends after its third read with fio's message (the rate it got, whatever the load, below
/// 4 KiB per 1.5 s) and error 5; the other job goes on; exit 1.
#[test]
fn a_job_below_rate_min_ends_with_fios_error() {
    let job =
        "[m]\nrw=read\nbs=4k\nsize=1m\nthinktime=1500ms\nratemin=8k\n[n]\nrw=read\nsize=256k\n";
    both(job, &|tool, out| {
        assert_eq!(out.status.code(), Some(1), "{tool}");
        let err = String::from_utf8_lossy(&out.stderr);
        // The rate over the cycle: one 4 KiB read in at least the 1.5 s think time, so at
        // most 2730 B/s (fio: 2730 on a quiet machine; a busy one stretches the cycle and
        // lowers it), never 0.
        let got: u64 = err
            .split("m: rate_min=8192B/s not met, got ")
            .nth(1)
            .and_then(|r| r.split("B/s").next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{tool}: no rate_min message: {err}"));
        assert!((1..=4096 * 1000 / 1500).contains(&got), "{tool}: {err}");
        // fio prints this line on stdout, before its JSON; fsdelta on stderr.
        let all = format!("{err}{}", String::from_utf8_lossy(&out.stdout));
        assert!(
            all.contains("func=check_min_rate, error=Input/output error"),
            "{tool}: {all}"
        );
        let j = jobs(&out.stdout);
        assert_eq!(
            (j[0].1, j[0].3, j[1].1, j[1].3),
            (3, 5, 64, 0),
            "{tool}: {j:?}"
        );
    });
}

/// Size-bound offload jobs end after exactly their size, for a sync engine (psync: positional
/// I/O in each worker) and an async one with a rate (libaio, as fixed-rate-submission.fio); lat
/// includes the time an I/O waited for its worker, so it is never below clat.
#[test]
fn size_bound_offload_jobs_move_their_size() {
    for job in [
        "[s]\nrw=write\nbs=4k\nsize=1m\nioengine=psync\niodepth=4\nio_submit_mode=offload\n",
        "[a]\nrw=read\nbs=4k\nsize=1m\nioengine=libaio\niodepth=32\nio_submit_mode=offload\nrate_iops=2000\n",
    ] {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let out = common::tool_json("fsdelta", dir.path(), job);
        assert!(
            out.status.success(),
            "{job}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let j = jobs(&out.stdout);
        assert_eq!(j[0].1 + j[0].2, 256, "{job}");
        let text = String::from_utf8_lossy(&out.stdout);
        let v: serde_json::Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
        let d = if job.contains("write") {
            "write"
        } else {
            "read"
        };
        let io = &v["jobs"][0][d];
        assert!(
            io["lat_ns"]["mean"].as_f64().unwrap() >= io["clat_ns"]["mean"].as_f64().unwrap(),
            "{job}: {io}"
        );
    }
}

/// Trims are paced on their own direction (fio's third rate value, `rate=,,T`; and with
/// trimwrite, trims and writes each at their own rate_iops): 256 KiB/s of 4 KiB hole punches
/// for 2 s is at most 128 trims (and no write); 50 + 50 a second for 2 s at most 100 of each;
/// one more at the boundary, none before its turn.
#[test]
fn trims_are_paced_by_their_own_rate() {
    paced(
        "[t]\nrw=randtrim\nbs=4k\nsize=4m\nioengine=falloc\nrate=,,256k\ntime_based\nruntime=2\n",
        &[(2, 64, 129)],
    );
    paced(
        "[t]\nrw=randtrimwrite\nbs=4k\nsize=4m\nioengine=falloc\nrate_iops=,50,50\ntime_based\nruntime=2\n",
        &[(1, 50, 101), (2, 50, 101)],
    );
}
