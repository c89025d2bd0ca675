//! I/O priorities under `fsdelta fio` and real fio 3.33 on the same jobs (issue 14): prio /
//! prioclass, cmdprio_percentage and cmdprio_bssplit with libaio and io_uring, log_prio. The
//! same I/Os (offset by offset, from the logs with log_offset=1) must get the same priority,
//! the log files must have fio's names, and the JSON fio's keys (the per-priority `prios`
//! entries included) with the same sample counts per priority.
//!
//! Needs /usr/bin/fio and root (the real-time class needs CAP_SYS_NICE); skips otherwise,
//! saying why, unless FSDELTA_REQUIRE_ALL=1.

mod common;

use serde_json::Value;
use std::path::Path;

/// Per job and direction: (prioclass, prio, N) of each `prios` entry.
fn prios(v: &Value) -> Vec<Vec<(u64, u64, u64)>> {
    let mut out = Vec::new();
    for job in v["jobs"].as_array().unwrap() {
        for d in ["read", "write"] {
            let list = job[d]["prios"].as_array().cloned().unwrap_or_default();
            out.push(
                list.iter()
                    .map(|p| {
                        let lat = if p["clat_ns"].is_null() {
                            &p["lat_ns"]
                        } else {
                            &p["clat_ns"]
                        };
                        (
                            p["prioclass"].as_u64().unwrap(),
                            p["prio"].as_u64().unwrap(),
                            lat["N"].as_u64().unwrap(),
                        )
                    })
                    .collect(),
            );
        }
    }
    out
}

/// Every log file in `dir` with its lines reduced to (ddir, bs, offset, prio), sorted (the
/// completion order may differ at depth > 1; the set of I/Os and their priorities may not).
fn logs(dir: &Path) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    names.sort();
    for n in names {
        let text = std::fs::read_to_string(dir.join(&n)).unwrap();
        let mut lines: Vec<String> = text
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(", ").collect();
                f[2..].join(", ")
            })
            .collect();
        lines.sort();
        out.push((n, lines));
    }
    out
}

/// `job` under fsdelta and fio: (our JSON, fio's JSON, our directory, and the two
/// directories, kept until dropped).
fn run_both(
    job: &str,
) -> (
    Value,
    Value,
    std::path::PathBuf,
    tempfile::TempDir,
    tempfile::TempDir,
) {
    let (ours, o, theirs, f) = common::run_ours_and_fio(job);
    let p = ours.path().to_path_buf();
    (
        common::json_of(&o.stdout),
        common::json_of(&f.stdout),
        p,
        ours,
        theirs,
    )
}

fn can_run() -> bool {
    common::require_fio() && common::require(common::is_root(), "root (the real-time I/O class)")
}

#[test]
fn prioritized_ios_logs_and_json_equal_real_fios() {
    if !can_run() {
        return;
    }
    let jobs = [
        // fio's examples/cmdprio-percentage.fio, small.
        "[global]\nfilename=f.dat\nsize=2m\nwrite_lat_log=prio-run.log\nlog_prio=1\nlog_offset=1\n\
         [randread]\nrw=randread\nbs=16k\nioengine=libaio\niodepth=8\nprioclass=3\n\
         cmdprio_percentage=20\ncmdprio_class=1\n",
        // Per direction, io_uring, no log_prio (the column is 1 for real-time, else 0).
        "[m]\nfilename=m.dat\nsize=2m\nrw=randrw\nioengine=io_uring\niodepth=4\n\
         cmdprio_percentage=30,60\ncmdprio_class=1,3\ncmdprio=2,5\nwrite_lat_log=m\nlog_offset=1\n",
        // cmdprio_bssplit with explicit and implicit entries, the job's own priority set.
        "[b]\nfilename=b.dat\nsize=2m\nrw=randrw\nioengine=libaio\niodepth=4\nprioclass=2\nprio=7\n\
         cmdprio_bssplit=4k/25/1/1:4k/40/3/0:4k/10,4k/50\ncmdprio=3\nwrite_lat_log=b\nlog_prio=1\n\
         log_offset=1\n",
        // prio alone, psync: every I/O carries it; one priority, no prios entries.
        "[s]\nfilename=s.dat\nsize=256k\nrw=randwrite\nprioclass=1\nprio=2\nwrite_lat_log=s\n\
         log_prio=1\nlog_offset=1\n",
        // Two jobs of different priorities in one reported group: prios per priority. (Both
        // name the same options: fio's group entry shows its last job's options, ours the
        // first's.)
        "[global]\nsize=512k\nrw=randread\ngroup_reporting\n[g1]\nfilename=g1.dat\nprioclass=2\n\
         prio=1\n[g2]\nfilename=g2.dat\nprioclass=3\nprio=0\n",
    ];
    for job in jobs {
        let (ours, fio, dir_ours, _o, theirs) = run_both(job);
        common::assert_keys_as_fios(job, &common::key_set(&ours), &common::key_set(&fio));
        assert_eq!(prios(&ours), prios(&fio), "{job}");
        assert_eq!(logs(&dir_ours), logs(theirs.path()), "{job}");
    }
}

/// With io_submit_mode=offload the job's thread chooses each I/O's priority (the same draws,
/// in the same order) and its submission workers issue it: the sample counts per priority
/// equal fio's inline run of the job (fio 3.33's own offload hangs at the end of size-bound
/// jobs here, so its inline run is the reference).
#[test]
fn offloaded_submission_keeps_each_ios_priority() {
    if !can_run() {
        return;
    }
    let jobs = [
        "[randread]\nfilename=f.dat\nsize=2m\nrw=randread\nbs=16k\nioengine=libaio\niodepth=8\n\
         prioclass=3\ncmdprio_percentage=20\ncmdprio_class=1\n",
        "[m]\nfilename=m.dat\nsize=2m\nrw=randrw\nioengine=io_uring\niodepth=4\n\
         cmdprio_percentage=30,60\ncmdprio_class=1,3\ncmdprio=2,5\n",
        "[b]\nfilename=b.dat\nsize=2m\nrw=randrw\nioengine=libaio\niodepth=4\nprioclass=2\nprio=7\n\
         cmdprio_bssplit=4k/25/1/1:4k/40/3/0:4k/10,4k/50\ncmdprio=3\n",
    ];
    for job in jobs {
        let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let fio = common::run_real_fio(d.path(), job);
        let ours = common::run_fsdelta_fio(d.path(), &format!("{job}io_submit_mode=offload\n"));
        assert_eq!(prios(&ours), prios(&fio), "{job}");
        assert_eq!(
            common::fio_counts(&ours, 0),
            common::fio_counts(&fio, 0),
            "{job}"
        );
    }
}

/// prio= / prioclass= with offload: the submission workers run at the job's priority (they
/// are started by the job's thread after its ioprio_set, and a new thread keeps its creator's
/// I/O priority), read here with ioprio_get on each worker thread while the job runs.
#[test]
fn offload_workers_run_at_the_jobs_priority() {
    if !common::require(
        common::is_root(),
        "root (to read other threads' I/O priority)",
    ) {
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(
        d.path().join("job.fio"),
        "[pw]\nfilename=p.dat\nsize=1m\nrw=randread\nioengine=psync\niodepth=2\n\
         io_submit_mode=offload\nprioclass=3\nprio=0\ntime_based\nruntime=3\n",
    )
    .unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_fsdelta"))
        .args(["fio", "--output-format=json", "job.fio"])
        .current_dir(d.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let task_dir = format!("/proc/{}/task", child.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut seen = Vec::new();
    while seen.len() < 2 && std::time::Instant::now() < deadline {
        for t in std::fs::read_dir(&task_dir).into_iter().flatten().flatten() {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if comm.trim_end().starts_with("fio-pw-sw") {
                let tid: i32 = t.file_name().to_string_lossy().parse().unwrap();
                // SAFETY: ioprio_get(IOPRIO_WHO_PROCESS = 1, tid) only reads.
                let v = unsafe { libc::syscall(libc::SYS_ioprio_get, 1, tid) };
                if v >= 0 && !seen.iter().any(|&(t, _)| t == tid) {
                    seen.push((tid, v));
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(seen.len(), 2, "two submission workers seen: {seen:?}");
    // class 3 (idle) << 13 | level 0
    assert!(seen.iter().all(|&(_, v)| v == 3 << 13), "{seen:?}");
}
