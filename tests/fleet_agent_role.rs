//! The least-privilege agent role of docs/fleet.md, exactly as printed, against the real server
//! (FSDELTA_TEST_PG, an administrator URL; skipped with a reason without it, or failing under
//! FSDELTA_REQUIRE_ALL=1). The database is owned by an ordinary (non-superuser) owner role, as
//! in a lab; agents log in under one shared agent role. Every statement an agent must not be
//! able to run is refused by PostgreSQL itself, and an agent still completes a job end to end.

mod common;

use assert_cmd::Command;
use fsdelta::model::RunStatus;
use fsdelta::queue::{Agent, Beat, JobState, Outcome, Queue};
use fsdelta::store::Store;
use fsdelta::store::postgres::{PgStore, PgTarget, ScratchDatabase};
use predicates::prelude::*;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use common::TINY_FILES100 as TINY;

/// The SQL the tests grant with: it must be docs/fleet.md's block, byte for byte.
const AGENT_ROLE_SQL: &str = include_str!("fleet/agent-role.sql");

/// A scratch database owned by a fresh non-superuser owner role, and docs/fleet.md's agent
/// role granted on it. Database first, then both roles, are dropped on drop (also after a failed
/// assertion).
struct Fleet {
    admin_url: String,
    db: Option<ScratchDatabase>,
    owner_role: String,
    agent_role: String,
    /// The owner's URL (it creates the schema and submits).
    owner_url: String,
    /// The agent role's URL (every agent machine logs in with it).
    agent_url: String,
    /// Roles a test made besides those two, dropped with them.
    extra_roles: Vec<String>,
}

impl Fleet {
    fn new() -> Option<Fleet> {
        static N: AtomicU32 = AtomicU32::new(0);
        let admin_url = std::env::var("FSDELTA_TEST_PG")
            .ok()
            .filter(|u| !u.is_empty());
        if !common::require(
            admin_url.is_some(),
            "FSDELTA_TEST_PG (a PostgreSQL administrator URL)",
        ) {
            return None;
        }
        let admin_url = admin_url.unwrap();
        assert!(
            admin_url.starts_with("postgres://postgres@"),
            "the test URL must name user postgres: {admin_url}"
        );
        let n = N.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let owner_role = format!("fsdelta_owner_{pid}_{n}");
        let agent_role = format!("fsdelta_agent_{pid}_{n}");
        let db = ScratchDatabase::create(&admin_url).unwrap();
        let mut fleet = Fleet {
            owner_url: db.url.replacen(
                "postgres://postgres@",
                &format!("postgres://{owner_role}@"),
                1,
            ),
            agent_url: db.url.replacen(
                "postgres://postgres@",
                &format!("postgres://{agent_role}@"),
                1,
            ),
            admin_url,
            db: Some(db),
            owner_role,
            agent_role: String::new(),
            extra_roles: Vec::new(),
        };
        let name = fleet.db().name.clone();
        connect(&fleet.admin_url)
            .batch_execute(&format!(
                "CREATE ROLE {0} LOGIN; ALTER DATABASE {name} OWNER TO {0};",
                fleet.owner_role
            ))
            .unwrap();
        fleet.agent_role = agent_role;
        Some(fleet)
    }

    fn db(&self) -> &ScratchDatabase {
        self.db.as_ref().unwrap()
    }

    /// Run docs/fleet.md's SQL (as the administrator: it creates a role) on this database, for
    /// this test's agent role.
    fn grant_agent_role(&self) {
        let sql = AGENT_ROLE_SQL
            .replace("fsdelta_agent", &self.agent_role)
            .replace("DATABASE fsdelta", &format!("DATABASE {}", self.db().name));
        connect(&self.db().url).batch_execute(&sql).unwrap();
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        drop(self.db.take());
        if let Ok(mut c) = PgTarget::parse(&self.admin_url).and_then(|t| t.connect()) {
            for role in self
                .extra_roles
                .iter()
                .chain([&self.agent_role, &self.owner_role])
            {
                if !role.is_empty() {
                    let _ = c.batch_execute(&format!("DROP ROLE IF EXISTS {role}"));
                }
            }
        }
    }
}

impl Fleet {
    /// A login role made with `how` (e.g. "IN ROLE owner"), and its URL.
    fn role(&mut self, name: &str, how: &str) -> String {
        let role = format!("{}_{name}", self.owner_role);
        connect(&self.admin_url)
            .batch_execute(&format!("CREATE ROLE {role} LOGIN {how}"))
            .unwrap();
        self.extra_roles.push(role.clone());
        self.db()
            .url
            .replacen("postgres://postgres@", &format!("postgres://{role}@"), 1)
    }
}

fn connect(url: &str) -> postgres::Client {
    PgTarget::parse(url).unwrap().connect().unwrap()
}

/// The server's own message for a refused statement (panics if it was not refused).
fn refused(c: &mut postgres::Client, sql: &str) -> String {
    match c.batch_execute(sql) {
        Ok(()) => panic!("an agent role could run: {sql}"),
        Err(e) => e
            .as_db_error()
            .map(|d| d.message().to_string())
            .unwrap_or_else(|| e.to_string()),
    }
}

fn fsdelta(url: &str, work: &Path) -> Command {
    let mut c = Command::cargo_bin("fsdelta").unwrap();
    c.env("FSDELTA_DB", url)
        .env("FSDELTA_STATE_FILE", work.join("state.json"))
        .current_dir(work);
    c
}

/// The ```sql block of the section "A fleet in five commands" of docs/fleet.md (the manual's
/// fleet page; the README only links to it).
fn documented_agent_sql() -> String {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/fleet.md")).unwrap();
    let section = page
        .split("\n## A fleet in five commands\n")
        .nth(1)
        .expect("docs/fleet.md has a section \"A fleet in five commands\"");
    let section = section.split("\n## ").next().unwrap();
    let block = section
        .split("\n```sql\n")
        .nth(1)
        .expect("the fleet section has a ```sql block");
    block
        .split("\n```\n")
        .next()
        .expect("the ```sql block ends")
        .to_string()
        + "\n"
}

#[test]
fn the_tested_agent_role_sql_is_the_fleet_pages_byte_for_byte() {
    assert_eq!(
        documented_agent_sql(),
        AGENT_ROLE_SQL,
        "tests/fleet/agent-role.sql must be the ```sql block of \"A fleet in five commands\" \
         in docs/fleet.md, byte for byte"
    );
}

#[test]
fn the_documented_agent_role_cannot_change_what_a_job_runs_nor_others_runs_yet_completes_a_job() {
    let Some(fleet) = Fleet::new() else { return };
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("tiny.toml"), TINY).unwrap();
    // The owner creates the schema by submitting; then docs/fleet.md's grants.
    fsdelta(&fleet.owner_url, work.path())
        .args(["submit", "--suite", "tiny.toml", "--label", "lp", "-n", "1"])
        .assert()
        .success()
        .stdout("1\n");
    fleet.grant_agent_role();
    let mut rogue = connect(&fleet.agent_url);
    // What a job runs is fixed at submit.
    for sql in [
        "UPDATE jobs SET suite_text = 'name = \"x\"\n[[test]]\nname = \"t\"\nworkload = \"command\"\n\
         command = \"id > /tmp/pwned\"' WHERE id = 1",
        "UPDATE jobs SET config_text = 'x' WHERE id = 1",
        "UPDATE jobs SET suite_name = 'quick', tests = '{}', repeat = 9 WHERE id = 1",
        "UPDATE jobs SET state = 'done', verdict = 'no regression (forged)' WHERE id = 1",
        "UPDATE jobs SET cancel_requested = true",
        "DELETE FROM jobs",
        "INSERT INTO jobs (label, suite_name, repeat) VALUES ('x', 'quick', 1)",
        "DELETE FROM runs",
        "DELETE FROM samples",
        "TRUNCATE runs CASCADE",
        "UPDATE runs SET label = 'x'",
        "ALTER TABLE runs ADD COLUMN x INT",
        "DROP TABLE metrics",
        // Ids are the database's to choose: a planted id would make another machine's next
        // insert collide.
        "INSERT INTO runs (id, label, suite, started_at, status, host, kernel, fsdelta_version,
             environment) VALUES (1000, 'x', 'x', now(), 'running', 'h', 'k', '0', '{}')",
        "INSERT INTO samples (id, run_id, config, test, repetition, fs_type, path, device,
             mount_options, facts, status, started_at, duration_s, workload)
         VALUES (1000, 1, 'c', 't', 1, 'ext4', '/', 'd', '', '{}', 'ok', now(), 1, 'w')",
    ] {
        let m = refused(&mut rogue, sql);
        assert!(
            m.contains("permission denied") || m.contains("must be owner"),
            "{sql}: {m}"
        );
    }
    // An agent under the role still completes the job: claim, run, store samples, finish.
    fsdelta(&fleet.agent_url, work.path())
        .args(["agent", "--no-drop-caches", "--heartbeat", "1", "--once"])
        .assert()
        .success()
        .stderr(predicate::str::contains("job 1: done, run 1"));
    let mut owner = connect(&fleet.owner_url);
    let row = owner
        .query_one(
            "SELECT j.state, j.suite_text, r.status, (SELECT count(*) FROM samples s WHERE s.run_id = r.id)
             FROM jobs j JOIN runs r ON r.id = j.run_id WHERE j.id = 1",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, &str>(0), "done");
    assert_eq!(row.get::<_, Option<&str>>(1), Some(TINY));
    assert_eq!(row.get::<_, &str>(2), "complete");
    assert_eq!(row.get::<_, i64>(3), 1);
    // Another agent (the same role, another machine) cannot mark that finished run aborted,
    // nor add a sample to it.
    let m = refused(
        &mut rogue,
        "UPDATE runs SET status = 'aborted', finished_at = now() WHERE id = 1",
    );
    assert!(m.contains("row-level security"), "{m}");
    let m = refused(
        &mut rogue,
        "INSERT INTO samples (run_id, config, test, repetition, fs_type, path, device,
             mount_options, facts, status, started_at, duration_s, workload)
         VALUES (1, 'c', 'files100', 2, 'ext4', '/', 'd', '', '{}', 'ok', now(), 1, 'w')",
    );
    assert!(m.contains("row-level security"), "{m}");
    let status: String = owner
        .query_one("SELECT status FROM runs WHERE id = 1", &[])
        .unwrap()
        .get(0);
    assert_eq!(status, "complete");
}

fn new_run(label: &str) -> fsdelta::model::NewRun {
    fsdelta::model::NewRun {
        label: label.into(),
        suite: "tiny".into(),
        started_at: chrono::Utc::now(),
        fsdelta_version: "0".into(),
        environment: fsdelta::model::Environment {
            host: label.into(),
            ..Default::default()
        },
    }
}

fn new_sample(rep: u32) -> fsdelta::model::NewSample {
    fsdelta::model::NewSample {
        config: "scratch".into(),
        test: "files100".into(),
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
            100.0,
            fsdelta::model::Unit::FilesPerSec,
            fsdelta::model::Direction::HigherIsBetter,
        )],
        histograms: vec![],
        attachments: vec![],
    }
}

fn machine(name: &str) -> Agent {
    Agent {
        name: name.into(),
        host: name.into(),
        machine_id: "m".into(),
        classes: vec![],
        environment: "{}".into(),
        token: Agent::new_token(),
    }
}

/// The message of a refused statement run with parameters.
fn refused_with(
    c: &mut postgres::Client,
    sql: &str,
    params: &[&(dyn postgres::types::ToSql + Sync)],
) -> String {
    match c.execute(sql, params) {
        Ok(n) => panic!("an agent role could run ({n} rows): {sql}"),
        Err(e) => e
            .as_db_error()
            .map(|d| d.message().to_string())
            .unwrap_or_else(|| e.to_string()),
    }
}

#[test]
fn two_machines_sharing_the_agent_role_cannot_touch_each_others_jobs_or_runs() {
    let Some(fleet) = Fleet::new() else { return };
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("tiny.toml"), TINY).unwrap();
    for label in ["a", "b"] {
        fsdelta(&fleet.owner_url, work.path())
            .args([
                "submit",
                "--suite",
                "tiny.toml",
                "--label",
                label,
                "-n",
                "1",
            ])
            .assert()
            .success();
    }
    fleet.grant_agent_role();
    let lease = Duration::from_secs(3600);
    // Machine A claims job 1, creates its run under its claim and stores a sample.
    let a = machine("box-a");
    let mut qa = Queue::open(&fleet.agent_url).unwrap();
    qa.register(&a, "0").unwrap();
    let job_a = qa.claim(&a, lease).unwrap().unwrap();
    assert_eq!(job_a.id, 1);
    assert_eq!(job_a.suite_text.as_deref(), Some(TINY));
    let mut sa = PgStore::open(&fleet.agent_url).unwrap();
    // Without its token an agent role cannot even create a run.
    let e = sa.create_run(&new_run("box-a")).unwrap_err().to_string();
    assert!(e.contains("row-level security"), "{e}");
    sa.act_for_claim(Some(a.token.clone()));
    let run_a = sa.create_run(&new_run("box-a")).unwrap();
    sa.add_sample(run_a, &new_sample(1)).unwrap();
    // Machine B, same role, claims job 2 and makes its own run.
    let b = machine("box-b");
    let mut qb = Queue::open(&fleet.agent_url).unwrap();
    let job_b = qb.claim(&b, lease).unwrap().unwrap();
    assert_eq!(job_b.id, 2);
    let mut sb = PgStore::open(&fleet.agent_url).unwrap();
    sb.act_for_claim(Some(b.token.clone()));
    let run_b = sb.create_run(&new_run("box-b")).unwrap();
    // B's store cannot add a sample to A's run, nor end it.
    let e = sb
        .add_sample(run_a, &new_sample(2))
        .unwrap_err()
        .to_string();
    assert!(e.contains("row-level security"), "{e}");
    let e = sb
        .finish_run(run_a, RunStatus::Aborted, chrono::Utc::now())
        .unwrap_err()
        .to_string();
    assert!(e.contains("row-level security"), "{e}");
    // Nor heartbeat, release or finish A's job (with its own token or a made-up one), nor
    // claim it a second time.
    let mut b_as_a = a.clone();
    b_as_a.token = b.token.clone();
    assert_eq!(qb.heartbeat(&b_as_a, 1).unwrap(), Beat::Lost);
    assert!(!qb.release(&b_as_a, 1, "mine now").unwrap());
    let forged = Outcome::Done {
        run_id: run_b,
        verdict: Some("no regression (forged)".into()),
        error: None,
    };
    assert!(!qb.finish(&b_as_a, 1, &forged).unwrap());
    let mut guess = a.clone();
    guess.token = Agent::new_token();
    assert!(!qb.finish(&guess, 1, &forged).unwrap());
    assert!(qb.claim(&machine("box-c"), lease).unwrap().is_none());
    // B cannot finish its own job naming A's run as its result.
    let e = qb
        .finish(
            &b,
            2,
            &Outcome::Done {
                run_id: run_a,
                verdict: None,
                error: None,
            },
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("not created under this claim token"), "{e}");
    // Raw SQL on B's connection: the same refusals come from PostgreSQL, and the tokens cannot
    // be read. A temporary table cannot stand in for the claims table inside the functions or
    // the policies (their search_path puts pg_temp last).
    let mut rogue = connect(&fleet.agent_url);
    for sql in [
        "SELECT * FROM job_claims",
        "SELECT * FROM run_claims",
        "UPDATE jobs SET suite_text = 'x' WHERE id = 2",
        "DELETE FROM runs",
    ] {
        let m = refused(&mut rogue, sql);
        assert!(m.contains("permission denied"), "{sql}: {m}");
    }
    let fake = Agent::new_token();
    rogue
        .batch_execute(
            "CREATE TEMP TABLE run_claims (run_id BIGINT, token TEXT);
             CREATE TEMP TABLE job_claims (job_id BIGINT, token TEXT);",
        )
        .unwrap();
    rogue
        .execute(
            "INSERT INTO pg_temp.run_claims VALUES ($1, $2)",
            &[&run_a, &fake],
        )
        .unwrap();
    rogue
        .execute("INSERT INTO pg_temp.job_claims VALUES (1, $1)", &[&fake])
        .unwrap();
    rogue
        .execute(
            "SELECT set_config('fsdelta.claim_token', $1, false)",
            &[&fake],
        )
        .unwrap();
    let m = refused_with(
        &mut rogue,
        "INSERT INTO samples (run_id, config, test, repetition, fs_type, path, device,
             mount_options, facts, status, started_at, duration_s, workload)
         VALUES ($1, 'c', 'files100', 9, 'ext4', '/', 'd', '', '{}', 'ok', now(), 1, 'w')",
        &[&run_a],
    );
    assert!(m.contains("row-level security"), "{m}");
    let m = refused_with(
        &mut rogue,
        "UPDATE runs SET status = 'aborted' WHERE id = $1",
        &[&run_a],
    );
    assert!(m.contains("row-level security"), "{m}");
    let m = refused_with(
        &mut rogue,
        "SELECT fsdelta_finish(1, $1, 'done', NULL, 'forged', NULL)",
        &[&fake],
    );
    assert!(m.contains("not held by this claim token"), "{m}");
    let m = refused_with(
        &mut rogue,
        "SELECT fsdelta_finish(1, 'guess', 'done', 1, 'forged', NULL)",
        &[],
    );
    assert!(m.contains("64 lowercase hex digits"), "{m}");
    drop(rogue);
    // A finishes its own job end to end: heartbeat, end its run, done with its verdict.
    assert_eq!(qa.heartbeat(&a, 1).unwrap(), Beat::Ok);
    sa.finish_run(run_a, RunStatus::Complete, chrono::Utc::now())
        .unwrap();
    assert!(
        qa.finish(
            &a,
            1,
            &Outcome::Done {
                run_id: run_a,
                verdict: Some("no regression".into()),
                error: None,
            },
        )
        .unwrap()
    );
    // A finished run cannot be changed any more, even by its creator.
    let e = sa
        .finish_run(run_a, RunStatus::Aborted, chrono::Utc::now())
        .unwrap_err()
        .to_string();
    assert!(e.contains("row-level security"), "{e}");
    let info = qa.job(1).unwrap();
    assert_eq!(
        (info.state, info.run_id, info.verdict.as_deref()),
        (JobState::Done, Some(run_a), Some("no regression"))
    );
    let stored = sa.samples(run_a).unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(sa.run(run_a).unwrap().unwrap().status, RunStatus::Complete);
    // B goes silent: its lease is made short by claiming again after a release, and any agent
    // (here A) reaps it under the agent role; B's run is aborted, the job queued again.
    assert!(qb.release(&b, 2, "test: short lease next").unwrap());
    let b2 = machine("box-b");
    assert_eq!(
        qb.claim(&b2, Duration::from_millis(1)).unwrap().unwrap().id,
        2
    );
    sb.act_for_claim(Some(b2.token.clone()));
    let run_b2 = sb.create_run(&new_run("box-b")).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let reaped = qa.reap().unwrap();
    assert_eq!(reaped.len(), 1, "{reaped:?}");
    assert_eq!(
        (reaped[0].id, reaped[0].state, reaped[0].run_id),
        (2, JobState::Queued, Some(run_b2))
    );
    assert_eq!(sa.run(run_b2).unwrap().unwrap().status, RunStatus::Aborted);
    // The reaped agent can no longer add to its run.
    let e = sb
        .add_sample(run_b2, &new_sample(1))
        .unwrap_err()
        .to_string();
    assert!(e.contains("row-level security"), "{e}");
    // `fsdelta agent` under the role runs the requeued job end to end.
    fsdelta(&fleet.agent_url, work.path())
        .args(["agent", "--no-drop-caches", "--heartbeat", "1", "--once"])
        .assert()
        .success()
        .stderr(predicate::str::contains("job 2: done, run"));
    let info = qa.job(2).unwrap();
    assert_eq!(info.state, JobState::Done);
    let run = info.run_id.unwrap();
    assert_eq!(sa.samples(run).unwrap().len(), 1);
    assert_eq!(sa.run(run).unwrap().unwrap().status, RunStatus::Complete);
}

#[test]
fn a_member_of_the_owners_role_writes_runs_freely_and_another_role_only_under_a_claim() {
    let Some(mut fleet) = Fleet::new() else {
        return;
    };
    // The owner creates the queue (as `fsdelta submit` or `fsdelta jobs` would).
    fsdelta::queue::Queue::open(&fleet.owner_url).unwrap();
    fleet.grant_agent_role();
    // A lab member in the owner's group runs `fsdelta run` against the fleet as before.
    let owner = fleet.owner_role.clone();
    let member_url = fleet.role("member", &format!("IN ROLE {owner}"));
    let mut m = PgStore::open(&member_url).unwrap();
    let run = m.create_run(&new_run("laptop")).unwrap();
    m.add_sample(run, &new_sample(1)).unwrap();
    m.finish_run(run, RunStatus::Complete, chrono::Utc::now())
        .unwrap();
    assert_eq!(m.samples(run).unwrap().len(), 1);
    // A role outside it with table-wide grants is still held to its claims.
    let outsider_url = fleet.role("outsider", "");
    connect(&fleet.db().url)
        .batch_execute(&format!(
            "GRANT USAGE ON SCHEMA public TO {0}_outsider;
             GRANT SELECT ON fsdelta_meta TO {0}_outsider;
             GRANT SELECT, INSERT, UPDATE ON runs, samples TO {0}_outsider;",
            owner
        ))
        .unwrap();
    let mut o = PgStore::open(&outsider_url).unwrap();
    let e = o.create_run(&new_run("x")).unwrap_err().to_string();
    assert!(e.contains("row-level security"), "{e}");
    let e = o
        .finish_run(run, RunStatus::Aborted, chrono::Utc::now())
        .unwrap_err()
        .to_string();
    assert!(e.contains("row-level security"), "{e}");
}

/// The agent role the manual printed before queue version 2 (it granted UPDATE on jobs).
const OLD_AGENT_ROLE_SQL: &str = "
CREATE ROLE fsdelta_agent LOGIN;
GRANT CONNECT ON DATABASE fsdelta TO fsdelta_agent;
GRANT USAGE ON SCHEMA public TO fsdelta_agent;
GRANT SELECT ON fsdelta_meta, runs, samples, metrics, histograms, profiles, attachments, machines,
    jobs TO fsdelta_agent;
GRANT INSERT ON runs, samples, metrics, histograms, profiles, attachments TO fsdelta_agent;
GRANT UPDATE (status, finished_at) ON runs TO fsdelta_agent;
GRANT INSERT, UPDATE ON machines TO fsdelta_agent;
GRANT UPDATE ON jobs TO fsdelta_agent;
";

#[test]
fn an_agent_under_the_old_grants_is_told_which_grants_it_needs_and_runs_nothing() {
    let Some(fleet) = Fleet::new() else { return };
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("tiny.toml"), TINY).unwrap();
    fsdelta(&fleet.owner_url, work.path())
        .args(["submit", "--suite", "tiny.toml", "--label", "lp", "-n", "1"])
        .assert()
        .success();
    let sql = OLD_AGENT_ROLE_SQL
        .replace("fsdelta_agent", &fleet.agent_role)
        .replace("DATABASE fsdelta", &format!("DATABASE {}", fleet.db().name));
    connect(&fleet.db().url).batch_execute(&sql).unwrap();
    // Even with its old UPDATE grant on jobs it cannot change what a job runs; nor can the
    // owner.
    for url in [&fleet.agent_url, &fleet.owner_url] {
        let mut c = connect(url);
        for sql in [
            "UPDATE jobs SET suite_text = 'name = \"x\"' WHERE id = 1",
            "UPDATE jobs SET config_text = 'x', config_name = 'x.toml' WHERE id = 1",
            "UPDATE jobs SET tests = '{x}' WHERE id = 1",
            "UPDATE jobs SET host = 'elsewhere' WHERE id = 1",
        ] {
            let m = refused(&mut c, sql);
            assert!(m.contains("fixed when it is submitted"), "{sql}: {m}");
        }
    }
    fsdelta(&fleet.agent_url, work.path())
        .args(["agent", "--no-drop-caches", "--heartbeat", "1", "--once"])
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("permission denied for function fsdelta_")
                .and(predicate::str::contains("A fleet in five commands")),
        );
    let state: String = connect(&fleet.owner_url)
        .query_one("SELECT state FROM jobs WHERE id = 1", &[])
        .unwrap()
        .get(0);
    assert_eq!(state, "queued");
}

#[test]
fn an_agent_role_that_finds_the_queue_schema_behind_is_told_to_migrate_it_as_the_owner() {
    let Some(fleet) = Fleet::new() else { return };
    fsdelta::queue::Queue::open(&fleet.owner_url).unwrap();
    fleet.grant_agent_role();
    // As if the owner's fsdelta were older than the agent's.
    connect(&fleet.owner_url)
        .batch_execute("UPDATE fsdelta_meta SET value = '1' WHERE key = 'queue_version'")
        .unwrap();
    let work = tempfile::tempdir().unwrap();
    fsdelta(&fleet.agent_url, work.path())
        .args(["agent", "--no-drop-caches", "--heartbeat", "1", "--once"])
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("queue_version 1")
                .and(predicate::str::contains("once as the database's owner")),
        );
}

/// Issue 38: the agent role records canaries and can mark a machine unhealthy, but nothing it
/// may run puts an unhealthy machine back to work: no write on `machine_health` or `canaries`,
/// `fsdelta_canary` never marks a machine healthy, an unhealthy name claims nothing, and
/// `fsdelta machines clear` under the agent role is refused; the owner clears it.
#[test]
fn the_agent_role_cannot_clear_an_unhealthy_machine_only_the_owner_can() {
    let Some(fleet) = Fleet::new() else { return };
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("tiny.toml"), TINY).unwrap();
    fsdelta(&fleet.owner_url, work.path())
        .args(["submit", "--suite", "tiny.toml", "--label", "x", "-n", "1"])
        .assert()
        .success();
    fleet.grant_agent_role();
    let (a, b) = (machine("sick"), machine("other"));
    let mut q = Queue::open(&fleet.agent_url).unwrap();
    q.register(&a, "test").unwrap();
    q.register(&b, "test").unwrap();
    q.record_canary(&a, true, "learning", "{}").unwrap();
    q.record_canary(&a, false, "canary moved: t/m -50.0 %", "{}")
        .unwrap();
    // an unhealthy machine claims nothing, though a job waits for it
    assert!(q.claimable(&a).unwrap());
    assert!(q.claim(&a, Duration::from_secs(30)).unwrap().is_none());
    // a healthy canary does not clear the mark, nor change its reason
    q.record_canary(&a, true, "canary steady", "{}").unwrap();
    let h = q.health("sick").unwrap().unwrap();
    assert!(!h.healthy && h.reason.starts_with("canary moved"), "{h:?}");
    let mut c = connect(&fleet.agent_url);
    for sql in [
        "UPDATE machine_health SET healthy = true WHERE name = 'sick'",
        "DELETE FROM machine_health WHERE name = 'sick'",
        "INSERT INTO machine_health (name, healthy, reason) VALUES ('other', true, 'x')",
        "UPDATE canaries SET healthy = true",
        "DELETE FROM canaries",
    ] {
        let msg = refused(&mut c, sql);
        assert!(msg.contains("permission denied"), "{sql}: {msg}");
    }
    // renaming the machine away from its mark is refused by the key (its UPDATE on machines is
    // for registering)
    let msg = refused(
        &mut c,
        "UPDATE machines SET name = 'sick2' WHERE name = 'sick'",
    );
    assert!(msg.contains("machine_health"), "{msg}");
    fsdelta(&fleet.agent_url, work.path())
        .args(["machines", "clear", "sick"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("permission denied"));
    assert!(!q.health("sick").unwrap().unwrap().healthy);
    // the other machine is untouched and still works
    assert!(q.health("other").unwrap().is_none());
    // the owner clears it; it claims the job
    fsdelta(&fleet.owner_url, work.path())
        .args(["machines", "clear", "sick", "--note", "checked"])
        .assert()
        .success()
        .stdout("sick cleared: it takes jobs again\n");
    let h = q.health("sick").unwrap().unwrap();
    assert!(h.healthy && h.reason.contains("checked"), "{h:?}");
    assert!(q.claim(&a, Duration::from_secs(30)).unwrap().is_some());
}
