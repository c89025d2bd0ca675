//! The fleet commands through the real binary, on a scratch database of the test server named
//! by FSDELTA_TEST_PG (an administrator URL; .ci/run starts a server). Without it the tests are
//! skipped with a reason, or fail under FSDELTA_REQUIRE_ALL=1.

mod common;

use assert_cmd::Command;
use fsdelta::queue::{JobState, Queue};
use predicates::prelude::*;
use std::path::Path;
use std::time::{Duration, Instant};

use common::TINY_FILES100 as TINY;

use common::{fleet_cmd, fleet_scratch};

fn agent(url: &str, work: &Path, extra: &[&str]) -> Command {
    let mut c = fleet_cmd(url, work);
    // No canary: these tests are about jobs; tests/fleet_canary.rs tests the canary.
    c.args([
        "agent",
        "--no-drop-caches",
        "--no-canary",
        "--heartbeat",
        "1",
    ])
    .args(extra);
    c
}

/// `submit --suite <suite> --label <label> -n <n>` in `work`.
fn submit(url: &str, work: &Path, suite: &str, label: &str, n: &str) -> Command {
    let mut c = fleet_cmd(url, work);
    c.args(["submit", "--suite", suite, "--label", label, "-n", n]);
    c
}

#[test]
fn submit_run_by_an_agent_and_find_the_run_by_host() {
    let Some(db) = fleet_scratch() else { return };
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("tiny.toml"), TINY).unwrap();
    let url = db.url.as_str();
    submit(url, work.path(), "tiny.toml", "base", "2")
        .assert()
        .success()
        .stdout("1\n");
    submit(url, work.path(), "tiny.toml", "cur", "2")
        .args(["--baseline", "label:base", "--class", "nvme"])
        .assert()
        .success()
        .stdout("2\n");
    fleet_cmd(url, work.path())
        .arg("jobs")
        .assert()
        .success()
        .stdout(predicate::str::contains("queued").and(predicate::str::contains("class:nvme")));
    // An agent without the class runs only the first job.
    agent(
        url,
        work.path(),
        &["--name", "plain", "--max-jobs", "5", "--once"],
    )
    .assert()
    .success()
    .stderr(predicate::str::contains("job 1: done, run 1"));
    agent(
        url,
        work.path(),
        &["--name", "fast", "--class", "nvme", "--once"],
    )
    .assert()
    .success()
    // A verdict is kept (which one depends on the noise of two tiny runs).
    .stderr(
        predicate::str::is_match(
            r"job 2: done, run 2: (REGRESSED|no regression) vs label:base: \d+ regressed",
        )
        .unwrap(),
    );
    // Nothing left: --once exits at once.
    agent(
        url,
        work.path(),
        &["--name", "fast", "--class", "nvme", "--once"],
    )
    .assert()
    .success();
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    fleet_cmd(url, work.path())
        .arg("jobs")
        .assert()
        .success()
        .stdout(
            predicate::str::contains("done      fast")
                .and(predicate::str::contains("done      plain"))
                .and(predicate::str::contains("vs label:base")),
        );
    fleet_cmd(url, work.path())
        .arg("list")
        .assert()
        .success()
        .stdout(predicate::str::contains("host").and(predicate::str::contains(host.as_str())));
    fleet_cmd(url, work.path())
        .args(["show", &format!("label:cur,host:{host}")])
        .assert()
        .success()
        .stdout(predicate::str::contains("run 2"));
    fleet_cmd(url, work.path())
        .args(["show", "label:cur,host:no-such-box"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "no run matches 'label:cur,host:no-such-box'",
        ));
    // The runs record the machine.
    let store = fsdelta::store::open(url).unwrap();
    let env = store.run(1).unwrap().unwrap().environment;
    assert_eq!(env.host, host);
    if let Ok(id) = std::fs::read_to_string("/etc/machine-id") {
        assert_eq!(env.machine_id, id.trim());
    }
}

#[test]
fn a_job_with_a_bad_suite_fails_with_the_parse_error_and_does_not_block_the_queue() {
    let Some(db) = fleet_scratch() else { return };
    let work = tempfile::tempdir().unwrap();
    let mut q = Queue::open(&db.url).unwrap();
    let job = |label: &str, text: &str| common::suite_job(label, "s.toml", text.into());
    let bad = q
        .submit(&job(
            "bad",
            "[[test]]\nname = \"x\"\nworkload = \"fsmark\"\nbogus = 1\n",
        ))
        .unwrap()[0];
    let good = q.submit(&job("good", TINY)).unwrap()[0];
    agent(&db.url, work.path(), &["--max-jobs", "2"])
        .assert()
        .success();
    let b = q.job(bad).unwrap();
    assert_eq!(b.state, JobState::Failed);
    assert!(
        b.error.as_deref().unwrap().contains("bogus"),
        "{:?}",
        b.error
    );
    assert_eq!(q.job(good).unwrap().state, JobState::Done);
    // submit itself refuses a bad suite file before it reaches the queue.
    std::fs::write(work.path().join("bad.toml"), "[[test]]\nname = 1\n").unwrap();
    fleet_cmd(&db.url, work.path())
        .args(["submit", "--suite", "bad.toml", "--label", "x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.toml"));
    assert_eq!(q.list(&[], 10).unwrap().len(), 2);
}

/// A job naming a kernel to build, written into the queue table with SQL (as an old or hostile
/// submitter would, past `fsdelta submit`'s and `Queue::submit`'s checks): the agent refuses it
/// before anything runs, in both forms (`kernel = { tree, commit }`, and `kernel =
/// "TREE@COMMIT"`, which only the agent can tell from an image path, by its own disk), fails
/// the job with the reason, builds nothing (the tree's Makefile and merge script would leave a
/// mark; kbuild's cache stays empty), and goes on to the next job.
#[test]
fn an_agent_refuses_a_queued_job_that_names_a_kernel_build_and_keeps_serving() {
    let Some(db) = fleet_scratch() else { return };
    if !common::require(
        std::process::Command::new("git")
            .arg("--version")
            .output()
            .is_ok(),
        "git",
    ) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let mark = work.path().join("built");
    // A kernel tree whose every make target and kconfig script would leave the mark.
    let tree = work.path().join("linux");
    std::fs::create_dir_all(tree.join("scripts/kconfig")).unwrap();
    common::git::git(&tree, &["init", "-q", "-b", "main"]);
    let leave_mark = format!("echo \"$0 $*\" >> {}\n", mark.display());
    std::fs::write(
        tree.join("Makefile"),
        format!("%:\n\t@echo make $@ >> {}\n", mark.display()),
    )
    .unwrap();
    std::fs::write(tree.join("scripts/kconfig/merge_config.sh"), &leave_mark).unwrap();
    common::git::git(&tree, &["add", "-A"]);
    common::git::git(&tree, &["commit", "-qm", "base"]);
    let mut q = Queue::open(&db.url).unwrap();
    let config = |kernel: String| {
        format!(
            "[[config]]\nname = \"built\"\nfs = \"ext4\"\ndevice = \"loop:64M\"\nkernel = {kernel}\n"
        )
    };
    let forms = [
        config(format!(
            "{{ tree = \"{}\", commit = \"main\" }}",
            tree.display()
        )),
        config(format!("\"{}@main\"", tree.display())),
    ];
    let mut c = fsdelta::store::postgres::PgTarget::parse(&db.url)
        .unwrap()
        .connect()
        .unwrap();
    let mut refused = Vec::new();
    for text in &forms {
        let id: i64 = c
            .query_one(
                "INSERT INTO jobs (label, suite_name, suite_text, config_name, config_text, repeat)
                 VALUES ('kernel', 'tiny.toml', $1, 'kernel.toml', $2, 1) RETURNING id",
                &[&TINY, text],
            )
            .unwrap()
            .get(0);
        refused.push(id);
    }
    let after = q
        .submit(&common::suite_job("after", "tiny.toml", TINY.into()))
        .unwrap()[0];
    let out = agent(&db.url, work.path(), &["--max-jobs", "3"])
        .env("FSDELTA_CACHE_DIR", work.path().join("cache"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    for id in refused {
        let j = q.job(id).unwrap();
        assert_eq!(j.state, JobState::Failed, "job {id}: {stderr}");
        let why = j.error.unwrap_or_default();
        assert!(
            why.contains(&format!(
                "config file kernel.toml of job {id}: config 'built' names a kernel to build from a git tree"
            )) && why.contains("a fleet job never makes an agent build a kernel"),
            "job {id}: {why}"
        );
        assert_eq!(j.run_id, None, "job {id} started a run");
        assert!(
            stderr.contains(&format!("job {id}: failed: config file kernel.toml")),
            "{stderr}"
        );
    }
    assert_eq!(q.job(after).unwrap().state, JobState::Done, "{stderr}");
    assert!(
        !mark.exists(),
        "the tree's build ran: {}",
        std::fs::read_to_string(&mark).unwrap_or_default()
    );
    assert!(
        !work.path().join("cache/kbuild").exists(),
        "kbuild made a worktree or a build"
    );
    assert_eq!(
        common::git::git(&tree, &["worktree", "list"])
            .lines()
            .count(),
        1
    );
}

#[test]
fn cancelling_a_running_job_stops_its_sample_and_marks_it_aborted() {
    let Some(db) = fleet_scratch() else { return };
    let work = tempfile::tempdir().unwrap();
    let suite = work.path().join("slow.toml");
    std::fs::write(
        &suite,
        "[[test]]\nname = \"wait\"\nworkload = \"command\"\ncommand = \"sleep 120\"\ntimeout = 300\n",
    )
    .unwrap();
    let url = db.url.as_str();
    submit(url, work.path(), "slow.toml", "slow", "1")
        .assert()
        .success();
    submit(url, work.path(), "slow.toml", "never", "1")
        .assert()
        .success();
    // The queued one is dequeued.
    fleet_cmd(url, work.path())
        .args(["jobs", "cancel", "2"])
        .assert()
        .success()
        .stdout(predicate::str::contains("will not run"));
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("fsdelta"))
        .args([
            "agent",
            "--no-drop-caches",
            "--heartbeat",
            "1",
            "--once",
            "--quiet",
        ])
        .env("FSDELTA_DB", url)
        .env("FSDELTA_STATE_FILE", work.path().join("state.json"))
        .current_dir(work.path())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut q = Queue::open(url).unwrap();
    let t = Instant::now();
    while q.job(1).unwrap().run_id.is_none() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the job never started"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let t = Instant::now();
    fleet_cmd(url, work.path())
        .args(["jobs", "cancel", "1"])
        .assert()
        .success()
        .stdout(predicate::str::contains("asked to stop"));
    let st = child.wait().unwrap();
    assert!(st.success(), "{st:?}");
    // Stopped long before the 120 s sleep would have ended.
    assert!(t.elapsed() < Duration::from_secs(60));
    let j = q.job(1).unwrap();
    assert_eq!(j.state, JobState::Aborted);
    let store = fsdelta::store::open(url).unwrap();
    assert_eq!(
        store.run(j.run_id.unwrap()).unwrap().unwrap().status,
        fsdelta::model::RunStatus::Aborted
    );
    fleet_cmd(url, work.path())
        .args(["jobs", "--state", "aborted"])
        .assert()
        .success()
        .stdout(predicate::str::contains("aborted").and(predicate::str::contains("slow")));
    fleet_cmd(url, work.path())
        .args(["jobs", "cancel", "1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("already ended"));
}

#[test]
fn every_class_submits_one_job_per_registered_agent() {
    let Some(db) = fleet_scratch() else { return };
    let work = tempfile::tempdir().unwrap();
    let url = db.url.as_str();
    let submit_every_nvme = || {
        let mut c = fleet_cmd(url, work.path());
        c.args([
            "submit",
            "--label",
            "x",
            "--every-class",
            "nvme",
            "--test",
            "emptyfiles",
        ]);
        c
    };
    submit_every_nvme()
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no agent of class 'nvme'"));
    for name in ["n1", "n2"] {
        agent(
            url,
            work.path(),
            &["--name", name, "--class", "nvme", "--once"],
        )
        .assert()
        .success();
    }
    submit_every_nvme().assert().success().stdout("1\n2\n");
    fleet_cmd(url, work.path())
        .arg("jobs")
        .assert()
        .success()
        .stdout(predicate::str::contains("host:n1").and(predicate::str::contains("host:n2")));
}

#[test]
fn a_password_in_the_url_is_refused_and_unreachable_servers_are_named() {
    let work = tempfile::tempdir().unwrap();
    fleet_cmd("postgres://lab:hunter2@db.example/fsdelta", work.path())
        .arg("list")
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("PGPASSWORD").and(predicate::str::contains("hunter2").not()),
        );
    fleet_cmd(
        "postgres://lab@127.0.0.1:1/fsdelta?sslmode=disable",
        work.path(),
    )
    .arg("list")
    .assert()
    .code(2)
    .stderr(
        predicate::str::contains("host 127.0.0.1 port 1").and(predicate::str::contains("refused")),
    );
    // The queue needs PostgreSQL.
    fleet_cmd(
        &work.path().join("r.sqlite").display().to_string(),
        work.path(),
    )
    .args(["agent", "--once"])
    .assert()
    .code(2)
    .stderr(predicate::str::contains("needs a PostgreSQL database"));
}

/// docs/fleet.md's least-privilege SQL, verbatim: an agent role that acts on jobs only through
/// fsdelta's token-checked functions and writes only its own claims' runs, and cannot delete or
/// alter runs; `fsdelta agent` works under it (tests/fleet_agent_role.rs tries every refusal).
const AGENT_ROLE_SQL: &str = include_str!("fleet/agent-role.sql");

#[test]
fn an_agent_works_under_the_least_privilege_role_which_cannot_delete_or_alter_runs() {
    let Some(db) = fleet_scratch() else { return };
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("tiny.toml"), TINY).unwrap();
    let role = format!("fsdelta_agent_{}", std::process::id());
    // The owner creates the schema and submits.
    fleet_cmd(&db.url, work.path())
        .args(["submit", "--suite", "tiny.toml", "--label", "lp", "-n", "1"])
        .assert()
        .success();
    let admin_sql = AGENT_ROLE_SQL
        .replace("fsdelta_agent", &role)
        .replace("DATABASE fsdelta", &format!("DATABASE {}", db.name));
    let owner = fsdelta::store::postgres::PgTarget::parse(&db.url).unwrap();
    owner.connect().unwrap().batch_execute(&admin_sql).unwrap();
    let agent_url = db
        .url
        .replacen("postgres://postgres@", &format!("postgres://{role}@"), 1);
    assert_ne!(agent_url, db.url, "the test URL must name user postgres");
    agent(&agent_url, work.path(), &["--once"])
        .assert()
        .success()
        .stderr(predicate::str::contains("job 1: done, run 1"));
    let mut c = fsdelta::store::postgres::PgTarget::parse(&agent_url)
        .unwrap()
        .connect()
        .unwrap();
    for forbidden in [
        "DELETE FROM runs",
        "UPDATE runs SET label = 'x'",
        "ALTER TABLE runs ADD COLUMN x INT",
        "DELETE FROM samples",
        "DROP TABLE metrics",
        "INSERT INTO jobs (label, suite_name, repeat) VALUES ('x', 'quick', 1)",
    ] {
        let e = c.batch_execute(forbidden).unwrap_err();
        let m = e
            .as_db_error()
            .map(|d| d.message().to_string())
            .unwrap_or_else(|| e.to_string());
        assert!(
            m.contains("permission denied") || m.contains("must be owner"),
            "{forbidden}: {m}"
        );
    }
    drop(c);
    let admin_url = std::env::var("FSDELTA_TEST_PG").unwrap();
    drop(db);
    fsdelta::store::postgres::PgTarget::parse(&admin_url)
        .unwrap()
        .connect()
        .unwrap()
        .batch_execute(&format!("DROP ROLE {role}"))
        .unwrap();
}

#[test]
fn compare_refuses_to_pool_two_machines_into_one_side_unless_asked() {
    let Some(db) = fleet_scratch() else { return };
    let work = tempfile::tempdir().unwrap();
    let mut s = fsdelta::store::open(&db.url).unwrap();
    for (label, host, v) in [
        ("a", "box1", 100.0),
        ("a", "box2", 200.0),
        ("b", "box1", 101.0),
    ] {
        let run = s
            .create_run(&fsdelta::model::NewRun {
                label: label.into(),
                suite: "quick".into(),
                started_at: chrono::Utc::now(),
                fsdelta_version: "0".into(),
                environment: fsdelta::model::Environment {
                    host: host.into(),
                    ..Default::default()
                },
            })
            .unwrap();
        for rep in 1..=3 {
            s.add_sample(
                run,
                &fsdelta::model::NewSample {
                    config: "scratch".into(),
                    test: "t".into(),
                    repetition: rep,
                    sequence: rep,
                    facts: Default::default(),
                    status: fsdelta::model::SampleStatus::Ok,
                    error: None,
                    started_at: chrono::Utc::now(),
                    duration_s: 1.0,
                    workload: "w".into(),
                    metrics: vec![fsdelta::model::Metric::new(
                        "files_per_sec",
                        v + rep as f64,
                        fsdelta::model::Unit::FilesPerSec,
                        fsdelta::model::Direction::HigherIsBetter,
                    )],
                    histograms: vec![],
                    attachments: Vec::new(),
                },
            )
            .unwrap();
        }
        s.finish_run(run, fsdelta::model::RunStatus::Complete, chrono::Utc::now())
            .unwrap();
    }
    fleet_cmd(&db.url, work.path())
        .args(["compare", "label:a", "label:b"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("label:a pools runs of 2 machines (box1, box2)")
                .and(predicate::str::contains("--pool-hosts")),
        );
    fleet_cmd(&db.url, work.path())
        .args(["compare", "label:a,host:box1", "label:b"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "label:a,host:box1 (run 1, label a)",
        ));
    fleet_cmd(&db.url, work.path())
        .args(["compare", "label:a", "label:b", "--pool-hosts"])
        .assert()
        .stdout(predicate::str::contains("label:a (runs 2,1, label a)"));
}

#[test]
fn read_only_commands_create_nothing_in_a_new_database_and_cleanup_creates_the_schema() {
    let Some(db) = fleet_scratch() else { return };
    let work = tempfile::tempdir().unwrap();
    let tables = || -> i64 {
        fsdelta::store::postgres::PgTarget::parse(&db.url)
            .unwrap()
            .connect()
            .unwrap()
            .query_one(
                "SELECT count(*) FROM information_schema.tables
                 WHERE table_schema NOT IN ('pg_catalog', 'information_schema')",
                &[],
            )
            .unwrap()
            .get(0)
    };
    for args in [
        &["list"][..],
        &["show", "latest"],
        &["history", "--test", "t", "--metric", "m"],
    ] {
        fleet_cmd(&db.url, work.path())
            .args(args)
            .assert()
            .code(2)
            .stderr(
                predicate::str::contains("no fsdelta results yet")
                    .and(predicate::str::contains("fsdelta cleanup")),
            );
    }
    assert_eq!(tables(), 0, "a read-only command created tables");
    fleet_cmd(&db.url, work.path())
        .arg("cleanup")
        .assert()
        .success();
    assert!(tables() > 0);
    fleet_cmd(&db.url, work.path())
        .arg("list")
        .assert()
        .success();
}
