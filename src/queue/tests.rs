//! Queue tests on a scratch PostgreSQL database (`FSDELTA_TEST_PG`; skipped without it unless
//! `FSDELTA_REQUIRE_ALL=1`).

use super::*;
use crate::store::Store;
use crate::store::postgres::ScratchDatabase;

fn scratch() -> Option<ScratchDatabase> {
    crate::store::conformance::test_pg_url().map(|u| ScratchDatabase::create(&u).unwrap())
}

fn agent(name: &str, classes: &[&str]) -> Agent {
    Agent {
        name: name.into(),
        host: format!("{name}-host"),
        machine_id: "m".into(),
        classes: classes.iter().map(|c| c.to_string()).collect(),
        environment: "{}".into(),
        token: Agent::new_token(),
    }
}

fn job(label: &str, placement: Placement) -> NewJob {
    NewJob {
        label: label.into(),
        suite_name: "quick".into(),
        suite_text: None,
        config_name: None,
        config_text: None,
        tests: vec!["emptyfiles".into()],
        repeat: 1,
        placement,
        baseline: None,
        max_attempts: 2,
    }
}

const LEASE: Duration = Duration::from_secs(60);

#[test]
fn jobs_are_claimed_oldest_first_by_class_and_host() {
    let Some(db) = scratch() else { return };
    let mut q = Queue::open(&db.url).unwrap();
    let nvme = agent("nvme-box", &["nvme"]);
    let hdd = agent("hdd-box", &["hdd"]);
    q.register(&nvme, "0").unwrap();
    q.register(&hdd, "0").unwrap();
    let a = q.submit(&job("a", Placement::Class("hdd".into()))).unwrap()[0];
    let b = q.submit(&job("b", Placement::Any)).unwrap()[0];
    let c = q
        .submit(&job("c", Placement::Host("nvme-box".into())))
        .unwrap()[0];
    let d = q
        .submit(&job("d", Placement::Host("hdd-box-host".into())))
        .unwrap()[0];
    let got = q.claim(&nvme, LEASE).unwrap().unwrap();
    assert_eq!((got.id, got.label.as_str(), got.attempt), (b, "b", 1));
    assert_eq!(got.tests, vec!["emptyfiles".to_string()]);
    // The same agent claiming again (a retried claim) gets its running job back.
    assert_eq!(q.claim(&nvme, LEASE).unwrap().unwrap().id, b);
    let other_nvme = agent("nvme-2", &["nvme"]);
    assert!(q.claim(&other_nvme, LEASE).unwrap().is_none());
    let mut nvme_next = nvme.clone();
    nvme_next.token = Agent::new_token();
    assert_eq!(q.claim(&nvme_next, LEASE).unwrap().unwrap().id, c);
    assert_eq!(q.claim(&hdd, LEASE).unwrap().unwrap().id, a);
    let mut hdd2 = hdd.clone();
    hdd2.token = Agent::new_token();
    assert_eq!(q.claim(&hdd2, LEASE).unwrap().unwrap().id, d);
    let states: Vec<JobState> = q.list(&[], 10).unwrap().iter().map(|j| j.state).collect();
    assert!(states.iter().all(|s| *s == JobState::Running), "{states:?}");
}

#[test]
fn concurrent_claims_never_give_one_job_twice() {
    let Some(db) = scratch() else { return };
    let mut q = Queue::open(&db.url).unwrap();
    for i in 0..60 {
        q.submit(&job(&format!("j{i}"), Placement::Any)).unwrap();
    }
    let claimed: Vec<Vec<JobId>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|t| {
                let url = db.url.clone();
                s.spawn(move || {
                    let mut q = Queue::open(&url).unwrap();
                    let mut mine = Vec::new();
                    loop {
                        let a = agent(&format!("a{t}-{}", mine.len()), &[]);
                        match q.claim(&a, LEASE).unwrap() {
                            Some(j) => {
                                assert!(
                                    q.finish(
                                        &a,
                                        j.id,
                                        &Outcome::Failed {
                                            run_id: None,
                                            error: "test".into()
                                        }
                                    )
                                    .unwrap()
                                );
                                mine.push(j.id)
                            }
                            None => return mine,
                        }
                    }
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<JobId> = claimed.into_iter().flatten().collect();
    assert_eq!(all.len(), 60);
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 60, "a job was claimed twice");
}

#[test]
fn a_silent_agent_s_job_is_requeued_its_run_aborted_then_failed_after_the_last_attempt() {
    let Some(db) = scratch() else { return };
    let mut q = Queue::open(&db.url).unwrap();
    let mut store = crate::store::postgres::PgStore::open(&db.url).unwrap();
    let id = q.submit(&job("x", Placement::Any)).unwrap()[0];
    let live = q.submit(&job("live", Placement::Any)).unwrap()[0];
    let lost = agent("lost", &[]);
    // Leases: 1 ms for the agent that goes silent, an hour for the one that does not (so what
    // is reaped does not depend on how busy the machine is).
    let short = Duration::from_millis(1);
    assert_eq!(q.claim(&lost, short).unwrap().unwrap().id, id);
    assert_eq!(
        q.claim(&agent("live", &[]), Duration::from_secs(3600))
            .unwrap()
            .unwrap()
            .id,
        live
    );
    // The run created under the claim token is recorded on the job by the database.
    store.act_for_claim(Some(lost.token.clone()));
    let run = store
        .create_run(&crate::model::NewRun {
            label: "x".into(),
            suite: "quick".into(),
            started_at: Utc::now(),
            fsdelta_version: "0".into(),
            environment: Default::default(),
        })
        .unwrap();
    assert_eq!(q.job(id).unwrap().run_id, Some(run));
    std::thread::sleep(Duration::from_millis(20));
    // The job within its lease is not reaped; the other is.
    let reaped = q.reap().unwrap();
    assert_eq!(
        reaped,
        vec![Reaped {
            id,
            state: JobState::Queued,
            agent: Some("lost".into()),
            run_id: Some(run)
        }]
    );
    assert_eq!(
        store.run(run).unwrap().unwrap().status,
        crate::model::RunStatus::Aborted
    );
    // The lost agent can neither heartbeat nor finish it any more.
    assert_eq!(q.heartbeat(&lost, id).unwrap(), Beat::Lost);
    assert!(
        !q.finish(
            &lost,
            id,
            &Outcome::Done {
                run_id: run,
                verdict: None,
                error: None
            }
        )
        .unwrap()
    );
    // Second (last) attempt goes silent too: failed.
    let second = agent("second", &[]);
    let j = q.claim(&second, short).unwrap().unwrap();
    assert_eq!((j.id, j.attempt), (id, 2));
    assert_eq!(q.heartbeat(&second, id).unwrap(), Beat::Ok);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(q.reap().unwrap()[0].state, JobState::Failed);
    let info = q.job(id).unwrap();
    assert_eq!(info.state, JobState::Failed);
    assert!(
        info.history.contains("attempt 1 on lost"),
        "{}",
        info.history
    );
    assert!(
        info.history.contains(&format!("run {run} aborted")),
        "{}",
        info.history
    );
    assert!(info.error.unwrap().contains("2 attempts"));
}

#[test]
fn cancel_dequeues_a_queued_job_and_asks_a_running_one_to_stop() {
    let Some(db) = scratch() else { return };
    let mut q = Queue::open(&db.url).unwrap();
    let a = q.submit(&job("a", Placement::Any)).unwrap()[0];
    let b = q.submit(&job("b", Placement::Any)).unwrap()[0];
    let ag = agent("ag", &[]);
    assert_eq!(q.claim(&ag, LEASE).unwrap().unwrap().id, a);
    assert_eq!(q.cancel(b).unwrap(), Cancelled::Dequeued);
    assert_eq!(q.cancel(a).unwrap(), Cancelled::Stopping);
    assert_eq!(q.heartbeat(&ag, a).unwrap(), Beat::CancelRequested);
    assert!(
        q.finish(&ag, a, &Outcome::Aborted { run_id: None })
            .unwrap()
    );
    assert_eq!(q.job(a).unwrap().state, JobState::Aborted);
    assert_eq!(q.job(b).unwrap().state, JobState::Cancelled);
    assert!(q.claim(&agent("z", &[]), LEASE).unwrap().is_none());
    assert!(matches!(q.cancel(a), Err(QueueError::Invalid(_))));
    assert!(matches!(q.cancel(9999), Err(QueueError::NoSuchJob(9999))));
}

#[test]
fn every_class_makes_one_job_per_registered_agent_of_the_class() {
    let Some(db) = scratch() else { return };
    let mut q = Queue::open(&db.url).unwrap();
    assert!(matches!(
        q.submit(&job("x", Placement::EveryClass("nvme".into()))),
        Err(QueueError::Invalid(_))
    ));
    for (n, c) in [("n1", "nvme"), ("n2", "nvme"), ("h1", "hdd")] {
        q.register(&agent(n, &[c]), "0").unwrap();
    }
    let ids = q
        .submit(&job("x", Placement::EveryClass("nvme".into())))
        .unwrap();
    assert_eq!(ids.len(), 2);
    let hosts: Vec<Option<String>> = q
        .list(&[], 10)
        .unwrap()
        .into_iter()
        .map(|j| j.host)
        .collect();
    assert_eq!(hosts, vec![Some("n2".into()), Some("n1".into())]);
    assert!(q.claim(&agent("h1", &["hdd"]), LEASE).unwrap().is_none());
    assert_eq!(
        q.claim(&agent("n1", &["nvme"]), LEASE).unwrap().unwrap().id,
        ids[0]
    );
}

#[test]
fn a_waiting_agent_is_woken_by_a_submit_without_polling() {
    let Some(db) = scratch() else { return };
    let mut waiter = Queue::open(&db.url).unwrap();
    waiter.listen(CHANNEL).unwrap();
    let url = db.url.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        Queue::open(&url)
            .unwrap()
            .submit(&job("x", Placement::Any))
            .unwrap()[0]
    });
    let started = Instant::now();
    let got = waiter.wait(Duration::from_secs(60)).unwrap();
    let id = t.join().unwrap();
    assert_eq!(got, vec![id.to_string()]);
    assert!(started.elapsed() < Duration::from_secs(60));
    // Nothing pending: a short wait times out empty.
    assert!(waiter.wait(Duration::from_millis(50)).unwrap().is_empty());
}

#[test]
fn the_queue_refuses_a_sqlite_path() {
    let e = Queue::open("/tmp/r.sqlite").err().unwrap().to_string();
    assert!(e.contains("PostgreSQL"), "{e}");
}

#[test]
fn a_version_1_queue_is_migrated_with_its_running_job_s_claim_and_run() {
    let Some(db) = scratch() else { return };
    // A fleet database as the previous release left it: queue_version 1, one job running on
    // an agent that has since gone silent, with its run.
    let mut store = crate::store::postgres::PgStore::open(&db.url).unwrap();
    let run = store
        .create_run(&crate::model::NewRun {
            label: "old".into(),
            suite: "quick".into(),
            started_at: Utc::now(),
            fsdelta_version: "0".into(),
            environment: Default::default(),
        })
        .unwrap();
    let target = PgTarget::parse(&db.url).unwrap();
    let mut c = target.connect().unwrap();
    pg::migrate_track(&mut c, &target.shown, "queue_version", &MIGRATIONS[..1]).unwrap();
    let id: JobId = c
        .query_one(
            "INSERT INTO jobs (label, suite_name, repeat, state, agent, token, attempts,
                 claimed_at, heartbeat_at, lease_s, run_id)
             VALUES ('old', 'quick', 1, 'running', 'gone', 'gone:1:2', 1,
                 now() - interval '1 hour', now() - interval '1 hour', 20, $1)
             RETURNING id",
            &[&run],
        )
        .unwrap()
        .get(0);
    let mut q = Queue::open(&db.url).unwrap();
    let version: String = c
        .query_one(
            "SELECT value FROM fsdelta_meta WHERE key = 'queue_version'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(version, MIGRATIONS.len().to_string());
    // The token left the readable table for the claims table.
    let has_token: bool = c
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM information_schema.columns
                            WHERE table_name = 'jobs' AND column_name = 'token')",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(!has_token);
    let claims: Vec<(i64, String)> = c
        .query("SELECT job_id, token FROM job_claims", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(claims, vec![(id, "gone:1:2".to_string())]);
    // The migrated job is reaped like any other: requeued, its run aborted, its claim gone.
    assert_eq!(
        q.reap().unwrap(),
        vec![Reaped {
            id,
            state: JobState::Queued,
            agent: Some("gone".into()),
            run_id: Some(run)
        }]
    );
    assert_eq!(
        store.run(run).unwrap().unwrap().status,
        crate::model::RunStatus::Aborted
    );
    let left: i64 = c
        .query_one("SELECT count(*) FROM job_claims", &[])
        .unwrap()
        .get(0);
    assert_eq!(left, 0);
    // And the next agent claims it.
    assert_eq!(q.claim(&agent("next", &[]), LEASE).unwrap().unwrap().id, id);
}

#[test]
fn a_token_that_does_not_hold_the_job_cannot_heartbeat_finish_or_release_it() {
    let Some(db) = scratch() else { return };
    let mut q = Queue::open(&db.url).unwrap();
    let id = q.submit(&job("x", Placement::Any)).unwrap()[0];
    let owner = agent("a", &[]);
    assert_eq!(q.claim(&owner, LEASE).unwrap().unwrap().id, id);
    // Same name, another process (token): nothing.
    let mut other = owner.clone();
    other.token = Agent::new_token();
    assert_eq!(q.heartbeat(&other, id).unwrap(), Beat::Lost);
    assert!(!q.release(&other, id, "x").unwrap());
    let forged = Outcome::Failed {
        run_id: None,
        error: "forged".into(),
    };
    assert!(!q.finish(&other, id, &forged).unwrap());
    assert_eq!(q.job(id).unwrap().state, JobState::Running);
    // A token that is not one fsdelta makes is refused before anything is looked up.
    let mut bad = owner.clone();
    bad.token = "guess".into();
    let e = q.heartbeat(&bad, id).unwrap_err().to_string();
    assert!(e.contains("64 lowercase hex digits"), "{e}");
    // The holder still can.
    assert_eq!(q.heartbeat(&owner, id).unwrap(), Beat::Ok);
    assert!(q.release(&owner, id, "stopping").unwrap());
    assert_eq!(q.job(id).unwrap().state, JobState::Queued);
}

#[test]
fn an_agent_s_token_is_256_random_bits_and_debug_never_shows_it() {
    let a = agent("x", &[]);
    let b = agent("x", &[]);
    assert_eq!(a.token.len(), 64, "{}", a.token.len());
    assert!(
        a.token
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    );
    assert_ne!(a.token, b.token);
    let shown = format!("{a:?}");
    assert!(!shown.contains(&a.token), "{shown}");
    assert!(shown.contains("\"x\""), "{shown}");
}

#[test]
fn a_job_naming_a_kernel_to_build_is_refused_at_submit_and_nothing_is_queued() {
    let table = "[[config]]\nname = \"e4\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\n\
                 kernel = { tree = \"/src/linux\", commit = \"v6.1\" }\n";
    let file = crate::plan::config::parse(table, "lab.toml").unwrap();
    let why = kernel_build_refusal(&file, &|_| false).unwrap();
    assert!(
        why.starts_with("config 'e4' names a kernel to build from a git tree (/src/linux@v6.1)")
            && why.contains("never makes an agent build a kernel")
            && why.contains("kernel = \"/path/boot/bzImage\""),
        "{why}"
    );
    // A kernel string: refused when the caller (the agent, which looks at its own disk) takes
    // it for a commit of a git tree; an image path is not.
    let string = |k: &str| {
        crate::plan::config::parse(
            &format!(
                "[[config]]\nname = \"s\"\nfs = \"ext4\"\ndevice = \"loop:1G\"\nkernel = \"{k}\"\n"
            ),
            "lab.toml",
        )
        .unwrap()
    };
    let tree_ref = |p: &std::path::Path| p.to_string_lossy().ends_with("@v6.1");
    assert!(kernel_build_refusal(&string("/src/linux@v6.1"), &tree_ref).is_some());
    assert_eq!(
        kernel_build_refusal(&string("/boot/vmlinuz-6.1.0-47-amd64"), &tree_ref),
        None
    );

    let Some(db) = scratch() else { return };
    let mut q = Queue::open(&db.url).unwrap();
    let mut j = job("kernel-build", Placement::Any);
    j.config_name = Some("lab.toml".into());
    j.config_text = Some(table.into());
    let err = q.submit(&j).unwrap_err();
    assert!(matches!(&err, QueueError::Invalid(m) if m == &why), "{err}");
    assert!(q.list(&[JobState::Queued], 10).unwrap().is_empty());
    // The same configuration with an image path is queued.
    j.config_text = Some(table.replace(
        "{ tree = \"/src/linux\", commit = \"v6.1\" }",
        "\"/var/lib/fsdelta/kernels/v6.1/boot/bzImage\"",
    ));
    assert_eq!(q.submit(&j).unwrap().len(), 1);
}
