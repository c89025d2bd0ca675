//! `fsdelta serve` keeps what its pages computed while the store has not changed
//! (`serve::cache`): a new run, a run that ends and a sample added to a running run show on the
//! pages once the stamp is read again (at most a second later), and a running run's page is never
//! kept. Each wait is longer than the stamp's period, so what is asserted holds however slow the
//! machine is.

mod serve_common;
use chrono::{Duration, TimeZone, Utc};
use fsdelta::model::RunStatus;
use fsdelta::store::Store;
use fsdelta::store::sqlite::SqliteStore;
use serve_common::*;

/// Longer than `serve::cache::STAMP_EVERY` (1 s): the next request reads the stamp again.
fn past_the_stamp() {
    std::thread::sleep(std::time::Duration::from_millis(1300));
}

fn ok(s: &Server, path: &str) -> String {
    let r = s.get(path);
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    r.body
}

fn new_run(s: &mut dyn Store, hour: i64) -> i64 {
    let t0 = Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap();
    create_run(
        s,
        &format!("later{hour}"),
        t0 + Duration::hours(hour),
        "6.18.0-12",
    )
}

fn add(s: &mut dyn Store, run: i64, rep: u32, value: f64) {
    let at = Utc.with_ymd_and_hms(2026, 11, 2, 0, 0, 0).unwrap();
    s.add_sample(run, &sample_at(rep, value, at)).unwrap();
}

fn samples_shown(run_page: &str) -> usize {
    run_page.matches("files_per_sec</a>").count()
}

#[test]
fn pages_follow_new_runs_ended_runs_and_samples_of_a_running_run() {
    let d = tempfile::tempdir().unwrap();
    let db = d.path().join("r.sqlite");
    fill(&db);
    let s = Server::start(db.to_str().unwrap(), None, d.path());
    let home = ok(&s, "/");
    let history = href_after(&home, "class=\"history-link\"").expect("a history link");
    let cmp = "/compare?sel=latest~1&sel=latest";
    let report = "/compare/report?sel=latest~1&sel=latest";
    // Asked twice: the second answer is the kept one, and the same.
    for _ in 0..2 {
        assert!(ok(&s, &history).contains("<p>12 runs;"));
        assert!(ok(&s, cmp).contains("latest (run 12"));
        assert!(ok(&s, report).contains("latest (run 12"));
        assert_eq!(samples_shown(&ok(&s, "/run/12")), 3);
    }

    // A new run, ended: the history, the comparison and the home page show it.
    let mut w = SqliteStore::open(&db).unwrap();
    let r13 = new_run(&mut w, 12);
    for rep in 0..3 {
        add(&mut w, r13, rep, 400.0 + rep as f64);
    }
    w.finish_run(
        r13,
        RunStatus::Complete,
        Utc.with_ymd_and_hms(2026, 11, 2, 0, 5, 0).unwrap(),
    )
    .unwrap();
    past_the_stamp();
    let h = ok(&s, &history);
    assert!(h.contains("<p>13 runs;"), "{h}");
    assert!(ok(&s, cmp).contains("latest (run 13"));
    assert!(ok(&s, report).contains("latest (run 13"));
    assert!(ok(&s, "/").contains("href=\"/run/13\""));
    assert_eq!(samples_shown(&ok(&s, "/run/12")), 3);

    // A running run: not in the history; its page follows each sample.
    let r14 = new_run(&mut w, 13);
    add(&mut w, r14, 0, 410.0);
    past_the_stamp();
    assert_eq!(samples_shown(&ok(&s, &format!("/run/{r14}"))), 1);
    assert!(ok(&s, &history).contains("<p>13 runs;"));
    add(&mut w, r14, 1, 411.0);
    past_the_stamp();
    assert_eq!(samples_shown(&ok(&s, &format!("/run/{r14}"))), 2);
    // It ends: the history has it.
    w.finish_run(
        r14,
        RunStatus::Complete,
        Utc.with_ymd_and_hms(2026, 11, 2, 1, 5, 0).unwrap(),
    )
    .unwrap();
    past_the_stamp();
    assert!(ok(&s, &history).contains("<p>14 runs;"));
}
