//! End-to-end tests of profiles (issue 8): `run --profile` with real perf, `fsdelta profile`,
//! `compare --profile` on a store with synthetic profiles, and what happens without perf.

mod common;

use chrono::Utc;
use common::{fsdelta, require};
use fsdelta::model::{Direction, Environment, Metric, RunStatus, SampleStatus, SiteFacts, Unit};
use fsdelta::probe::profile::{PERF_ENV, Profile};
use fsdelta::store::sqlite::SqliteStore;
use fsdelta::store::{NewRun, NewSample, Store};
use predicates::prelude::*;
use std::path::Path;

/// Whether perf can record the whole system here; prints why not.
fn perf_usable() -> bool {
    let r = fsdelta::probe::profile::check();
    let why = match &r {
        Ok(()) => String::new(),
        Err(e) => format!("perf recording the whole system ({e})"),
    };
    require(r.is_ok(), &why)
}

/// Profiles stored for the samples of the latest run, by repetition.
fn stored_profiles(db: &Path) -> Vec<(u32, Option<Profile>)> {
    let s = SqliteStore::open(db).unwrap();
    let run = s.runs(&Default::default()).unwrap()[0].id;
    s.samples(run)
        .unwrap()
        .iter()
        .map(|r| {
            let p = s
                .profile(r.id)
                .unwrap()
                .map(|p| Profile::decode(&p).unwrap());
            (r.sample.repetition, p)
        })
        .collect()
}

/// `run --test emptyfiles -n <n> <flags> --target <target>` on the database `db`.
fn run_emptyfiles(db: &Path, n: &str, flags: &[&str], target: &Path) -> assert_cmd::Command {
    let mut c = fsdelta(db);
    c.args(["run", "--test", "emptyfiles", "-n", n])
        .args(flags)
        .arg("--target")
        .arg(target);
    c
}

#[test]
fn a_profiled_run_stores_stacks_and_profile_lists_kernel_symbols() {
    if !perf_usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.sqlite");
    let perf_tmp = tmp.path().join("perf-tmp");
    std::fs::create_dir(&perf_tmp).unwrap();
    run_emptyfiles(&db, "1", &["--profile"], tmp.path())
        .env("TMPDIR", &perf_tmp)
        .assert()
        .success()
        .stdout(predicate::str::contains("files_per_sec"));
    // perf's data file and FIFOs are gone.
    assert_eq!(std::fs::read_dir(&perf_tmp).unwrap().count(), 0);

    let stored = stored_profiles(&db);
    assert_eq!(stored.len(), 1);
    let p = stored[0]
        .1
        .as_ref()
        .expect("a profile stored with the sample");
    assert!(p.total() > 0);
    assert!(
        p.stacks.keys().any(|s| s.ends_with("_[k]")),
        "no kernel frame in {:?}",
        p.stacks.keys().take(5).collect::<Vec<_>>()
    );

    let svg = tmp.path().join("fg.svg");
    fsdelta(&db)
        .args(["profile", "latest", "--test", "emptyfiles", "--flamegraph"])
        .arg(&svg)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "emptyfiles (scratch), 1 profile of latest",
        ))
        .stdout(predicate::str::is_match(r"(?m)^\s+\d+\.\d% +\d+\.\d%  \[k\]  \S+").unwrap());
    assert!(std::fs::read_to_string(&svg).unwrap().contains("</svg>"));

    // A test without profiles says how to record them.
    fsdelta(&db)
        .args(["profile", "latest", "--test", "bigdir"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no sample of test 'bigdir'"));
}

#[test]
fn profile_first_records_only_the_first_repetition() {
    if !perf_usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.sqlite");
    run_emptyfiles(&db, "2", &["--profile=first", "-q"], tmp.path())
        .assert()
        .success();
    let stored = stored_profiles(&db);
    assert_eq!(stored.len(), 2);
    assert!(stored.iter().any(|(rep, p)| *rep == 1 && p.is_some()));
    assert!(stored.iter().any(|(rep, p)| *rep == 2 && p.is_none()));
}

#[test]
fn without_perf_profile_fails_with_the_package_name_and_optional_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.sqlite");
    run_emptyfiles(&db, "1", &["--profile"], tmp.path())
        .env(PERF_ENV, tmp.path().join("no-such-perf"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("linux-perf"))
        .stderr(predicate::str::contains("--profile=optional"));
    // It failed before creating a run.
    fsdelta(&db)
        .arg("list")
        .assert()
        .success()
        .stderr(predicate::str::contains("no runs"));

    let out = run_emptyfiles(&db, "2", &["--profile=optional"], tmp.path())
        .env(PERF_ENV, tmp.path().join("no-such-perf"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("records no profiles").count(), 1, "{stderr}");
    assert!(stderr.contains("linux-perf"), "{stderr}");
    assert!(stored_profiles(&db).iter().all(|(_, p)| p.is_none()));
}

fn sample(rep: u32, files_per_sec: f64) -> NewSample {
    NewSample {
        config: "scratch".into(),
        test: "emptyfiles".into(),
        repetition: rep,
        sequence: 0,
        facts: SiteFacts {
            fs_type: "btrfs".into(),
            path: "/mnt/t".into(),
            device: "/dev/loop0".into(),
            mount_options: "rw".into(),
            mkfs_options: None,
            extra: Default::default(),
        },
        status: SampleStatus::Ok,
        error: None,
        started_at: Utc::now(),
        duration_s: 1.0,
        workload: "fs_mark -s 0".into(),
        metrics: vec![Metric::new(
            "files_per_sec",
            files_per_sec,
            Unit::FilesPerSec,
            Direction::HigherIsBetter,
        )],
        histograms: vec![],
        attachments: Vec::new(),
    }
}

/// A run of three samples, each with `folded` as its profile.
fn profiled_run(s: &mut SqliteStore, label: &str, files_per_sec: f64, folded: &str) {
    let run = s
        .create_run(&NewRun {
            label: label.into(),
            suite: "quick".into(),
            started_at: Utc::now(),
            fsdelta_version: "0.1.0".into(),
            environment: Environment::default(),
        })
        .unwrap();
    for (rep, jitter) in [(1, 0.0), (2, 1.0), (3, -1.0)] {
        let id = s
            .add_sample(run, &sample(rep, files_per_sec + jitter))
            .unwrap();
        let p = Profile::parse_folded(folded).unwrap();
        s.add_profile(id, &p.encode()).unwrap();
    }
    s.finish_run(run, RunStatus::Complete, Utc::now()).unwrap();
}

#[test]
fn compare_profile_explains_a_regression_with_symbol_deltas_and_a_hint() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.sqlite");
    {
        let mut s = SqliteStore::open(&db).unwrap();
        profiled_run(
            &mut s,
            "6.17",
            1000.0,
            "fs_mark;open_[k];btrfs_create_[k] 700\nswapper;pv_native_safe_halt_[k] 300\n",
        );
        profiled_run(
            &mut s,
            "6.18",
            600.0,
            "fs_mark;open_[k];btrfs_create_[k] 300\n\
             fs_mark;open_[k];btrfs_tree_read_lock_[k];queue_read_lock_slowpath_[k] 286\n\
             fs_mark;open_[k];btrfs_tree_lock_[k];queue_write_lock_slowpath_[k] 114\n\
             swapper;pv_native_safe_halt_[k] 300\n",
        );
    }
    let out = fsdelta(&db)
        .args(["compare", "label:6.17", "label:6.18", "--profile"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("CPU profiles, each symbol's share judged across the repetitions"),
        "{stdout}"
    );
    assert!(
        stdout.contains("emptyfiles (scratch): files_per_sec regressed -40.0 %"),
        "{stdout}"
    );
    assert!(
        stdout.contains("3 baseline and 3 current profiles"),
        "{stdout}"
    );
    assert!(
        stdout.contains("+28.6 %    0.0% ->  28.6%  [k]  queue_read_lock_slowpath"),
        "{stdout}"
    );
    assert!(
        stdout.contains("-40.0 %   70.0% ->  30.0%  [k]  btrfs_create"),
        "{stdout}"
    );
    assert!(stdout.contains("hint: the top gainers"), "{stdout}");
    assert!(stdout.contains("lock slow paths"), "{stdout}");
    assert!(stdout.lines().all(|l| l.chars().count() <= 80), "{stdout}");

    // Without --profile, no profile section; with JSON, a clear refusal.
    fsdelta(&db)
        .args(["compare", "label:6.17", "label:6.18"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("CPU profiles").not());
    fsdelta(&db)
        .args(["compare", "label:6.17", "label:6.18", "--profile"])
        .args(["--format", "json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--format text"));
    fsdelta(&db)
        .args(["compare", "label:6.17", "label:6.18", "--profile"])
        .args(["--format", "markdown"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("| files_per_sec |"))
        .stdout(predicate::str::contains(
            "```\nCPU profiles, each symbol's share judged across the repetitions\n",
        ))
        .stdout(predicate::str::contains("queue_read_lock_slowpath"));

    // The HTML report carries a flame graph per side and a differential one for the changed
    // test, as images (inferno's zoom script does not run in an <img>).
    let html = tmp.path().join("r.html");
    fsdelta(&db)
        .args(["report", "label:6.17", "label:6.18", "-o"])
        .arg(&html)
        .assert()
        .success();
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.contains("<h3>CPU profiles</h3>"));
    assert_eq!(text.matches("data:image/svg+xml;base64,").count(), 3);
    assert!(text.contains("differential flame graph of emptyfiles"));
}

/// The pid of a `perf` child of `parent`, if one runs.
fn perf_child(parent: u32) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // pid (comm) state ppid ...
        let (comm, rest) = stat.split_once(") ")?;
        let ppid: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
        (comm.ends_with("(perf") && ppid == parent).then_some(pid)
    })
}

/// Whether `dir` holds a directory with a FIFO in it: a profiled sample's perf data directory.
fn recorder_dir_in(dir: &std::path::Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            std::fs::read_dir(e.path())
                .into_iter()
                .flatten()
                .flatten()
                .any(|f| f.file_type().is_ok_and(|t| t.is_fifo()))
        })
}

/// Whether `pid` is gone or a zombie (dead, waiting to be reaped).
fn dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .split_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

#[test]
fn kill_9_during_a_profiled_sample_leaves_no_perf_and_the_next_run_sweeps_its_data() {
    if !perf_usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.sqlite");
    let perf_tmp = tmp.path().join("perf-tmp");
    std::fs::create_dir(&perf_tmp).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("fsdelta");
    let mut child = std::process::Command::new(&bin)
        .args(["run", "--test", "emptyfiles", "-n", "20", "--profile", "-q"])
        .arg("--target")
        .arg(tmp.path())
        .env("FSDELTA_DB", &db)
        .env("TMPDIR", &perf_tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    // The check at start-up runs perf too, without a data directory; wait for a sample's
    // recorder (a perf child while a data directory, which holds a FIFO pair, is in TMPDIR) and
    // kill fsdelta while it records. A busy machine may take long to get there; nothing here
    // depends on how long.
    let perf = loop {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(300),
            "no sample's perf started in 5 minutes"
        );
        if let Some(p) = perf_child(child.id())
            && recorder_dir_in(&perf_tmp)
        {
            break p;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let t1 = std::time::Instant::now();
    while !dead(perf) {
        assert!(
            t1.elapsed() < std::time::Duration::from_secs(120),
            "perf {perf} outlived fsdelta"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Its data directory stays until the next profiled run sweeps it (unless the sample ended
    // and removed it between the look and the kill: then there is nothing to sweep).
    let left_by_kill = std::fs::read_dir(&perf_tmp).unwrap().count();
    eprintln!("left by the kill: {left_by_kill} entries");
    run_emptyfiles(&db, "1", &["--profile=first", "-q"], tmp.path())
        .env("TMPDIR", &perf_tmp)
        .assert()
        .success();
    let left: Vec<_> = std::fs::read_dir(&perf_tmp).unwrap().flatten().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// A CPU hog under a name of its own, killed when dropped.
struct Hog(std::process::Child);

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_default_profile_scope_leaves_out_a_cpu_hog_beside_the_workload() {
    if !perf_usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // `yes` writing into /dev/null keeps a core busy; its copy's name is its comm in perf.
    let hog_bin = tmp.path().join("fsdhog");
    std::fs::copy("/usr/bin/yes", &hog_bin).unwrap();
    let _hog = Hog(std::process::Command::new(&hog_bin)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap());
    let roots = |scope: &str| {
        let db = tmp.path().join(format!("{scope}.sqlite"));
        let target = tmp.path().join(format!("t-{scope}"));
        std::fs::create_dir(&target).unwrap();
        run_emptyfiles(
            &db,
            "1",
            &["--quiet", "--profile", "--profile-scope", scope],
            &target,
        )
        .assert()
        .success();
        let stored = stored_profiles(&db);
        let p = stored[0].1.clone().expect("a profile");
        let mut r: Vec<String> = p
            .stacks
            .keys()
            .map(|s| s.split(';').next().unwrap().to_string())
            .collect();
        r.sort();
        r.dedup();
        let s = SqliteStore::open(&db).unwrap();
        let run = s.runs(&Default::default()).unwrap()[0].id;
        let facts = s.samples(run).unwrap()[0].sample.facts.extra.clone();
        assert_eq!(facts.get("profile_scope").map(String::as_str), Some(scope));
        r
    };
    let system = roots("system");
    assert!(
        system.iter().any(|c| c == "fsdhog"),
        "the hog ran beside the workload and the system profile saw it: {system:?}"
    );
    let workload = roots("workload+kthreads");
    assert!(
        !workload
            .iter()
            .any(|c| c == "fsdhog" || c == "swapper" || c == "perf"),
        "{workload:?}"
    );
    assert!(
        workload.iter().any(|c| c.starts_with("fsmark-")),
        "the engine's workers are in it: {workload:?}"
    );
}
