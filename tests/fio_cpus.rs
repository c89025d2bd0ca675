//! End-to-end tests of cpumask=, cpus_allowed=, cpus_allowed_policy= and verify_async_cpus=
//! under `fsdelta fio`: the job's threads run on the CPUs named (seen from outside, in
//! /proc/PID/task/*/status while the job runs), split gives each clone one CPU of the set as
//! fio's fio_cpus_split, the counts equal fio 3.33's, and a CPU the machine lacks is refused
//! with fio's words.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Start `fsdelta fio JOB` in `dir` and collect the Cpus_allowed_list of its threads until it
/// exits; also its exit status.
fn affinities(dir: &Path, job: &str) -> (BTreeSet<String>, bool) {
    std::fs::write(dir.join("job.fio"), job).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fsdelta"))
        .current_dir(dir)
        .args(["fio", "--output-format=json", "job.fio"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = BTreeSet::new();
    let until = Instant::now() + Duration::from_secs(300);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("fsdelta fio did not end within 300 s (a hang guard)");
        }
        if let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", child.id())) {
            for t in tasks.flatten() {
                if let Ok(s) = std::fs::read_to_string(t.path().join("status")) {
                    if let Some(l) = s.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")) {
                        seen.insert(l.trim().to_string());
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (seen, status.success())
}

/// The jobs run for 2 s (time_based), so every clone's thread is there to be seen many times
/// over; the main thread keeps the whole machine.
#[test]
fn the_jobs_threads_run_on_the_cpus_named() {
    if !common::require(
        cpus() >= 2,
        "at least 2 CPUs (to tell a pinned thread apart)",
    ) {
        return;
    }
    let last = cpus() - 1;
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let base = "[j]\nioengine=null\nrw=read\nbs=4k\nsize=1m\ntime_based\nruntime=2\n";
    let (seen, ok) = affinities(d.path(), &format!("{base}cpus_allowed={last}\n"));
    assert!(ok);
    assert!(seen.contains(&last.to_string()), "{seen:?}");
    let (seen, ok) = affinities(d.path(), &format!("{base}cpumask=1\n"));
    assert!(ok);
    assert!(seen.contains("0"), "{seen:?}");
    assert!(!seen.contains(&last.to_string()), "{seen:?}");
    // split: clone 1 on CPU 0, clone 2 on CPU 1 (fio's (thread_number - 1) % 2).
    let (seen, ok) = affinities(
        d.path(),
        &format!("{base}numjobs=2\ncpus_allowed=0-1\ncpus_allowed_policy=split\n"),
    );
    assert!(ok);
    assert!(seen.contains("0") && seen.contains("1"), "{seen:?}");
}

#[test]
fn cpu_jobs_count_as_fio_and_missing_cpus_are_refused() {
    if !common::require(
        Path::new("/usr/bin/fio").exists(),
        "fio 3.33 (/usr/bin/fio) to compare with",
    ) {
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for extra in [
        "cpus_allowed=0\n",
        "cpumask=1\nnumjobs=3\n",
        "cpus_allowed=0\ncpus_allowed_policy=split\nnumjobs=3\n",
        "rw=randwrite\nverify=crc32c\nverify_async=2\nverify_async_cpus=0\n",
    ] {
        let job = format!("[j]\nioengine=psync\nrw=randread\nbs=64k\nsize=2m\nfilename=f\n{extra}");
        let fio = common::run_real_fio(d.path(), &job);
        let ours = common::run_fsdelta_fio(d.path(), &job);
        let n = fio["jobs"].as_array().unwrap().len();
        assert_eq!(ours["jobs"].as_array().unwrap().len(), n, "{job}");
        for i in 0..n {
            assert_eq!(
                common::fio_counts(&ours, i),
                common::fio_counts(&fio, i),
                "{job}"
            );
        }
    }
    let huge = 4096;
    for (opt, cpu) in [
        (format!("cpus_allowed={huge}"), huge),
        (format!("verify_async_cpus=0,{huge}"), huge),
    ] {
        let job = format!("[j]\nioengine=null\nsize=64k\n{opt}\n");
        std::fs::write(d.path().join("bad.fio"), &job).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_fsdelta"))
            .current_dir(d.path())
            .args(["fio", "bad.fio"])
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{job}");
        assert!(
            e.contains(&format!("CPU {cpu} too large (max=")) && e.contains("bad.fio:4"),
            "{e}"
        );
    }
}
