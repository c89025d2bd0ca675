//! The store conformance tests: the same behaviour asked of every backend, through
//! `&mut dyn Store` only. Each test runs twice, on SQLite (a temporary file) and on PostgreSQL
//! (a scratch database created through `FSDELTA_TEST_PG`, an administrator URL such as
//! `postgres://postgres@%2Ftmp%2Fpg/postgres`). Without that variable the PostgreSQL half is
//! skipped with a message, unless `FSDELTA_REQUIRE_ALL=1`, where it fails. The tests of copying
//! runs between stores (`store::copy`) run on every pair of memory, SQLite and PostgreSQL.

use super::postgres::{PgStore, ScratchDatabase};
use super::sqlite::SqliteStore;
use super::{NewRun, NewSample, RunFilter, Selector, Store, StoreError, StoredProfile};
use crate::model::{
    Direction, Environment, HistogramRecord, Metric, MetricKind, RunId, RunStatus, SampleStatus,
    SiteFacts, Unit,
};
use chrono::{Duration as ChronoDuration, Utc};
use std::collections::BTreeMap;

/// Something that opens connections to one fresh store.
pub(crate) trait Backend: Sync {
    /// A new connection to the same store.
    fn open(&self) -> Box<dyn Store>;
}

struct Sqlite(tempfile::TempDir);

impl Backend for Sqlite {
    fn open(&self) -> Box<dyn Store> {
        Box::new(SqliteStore::open(&self.0.path().join("r.sqlite")).unwrap())
    }
}

pub(crate) struct Pg(pub(crate) ScratchDatabase);

impl Backend for Pg {
    fn open(&self) -> Box<dyn Store> {
        Box::new(PgStore::open(&self.0.url).unwrap())
    }
}

fn sqlite() -> Sqlite {
    Sqlite(tempfile::tempdir().unwrap())
}

/// The administrator URL of the test server, or None (after printing why) when there is none.
pub(crate) fn test_pg_url() -> Option<String> {
    match std::env::var("FSDELTA_TEST_PG") {
        Ok(u) if !u.is_empty() => Some(u),
        _ => {
            if std::env::var("FSDELTA_REQUIRE_ALL").as_deref() == Ok("1") {
                panic!(
                    "FSDELTA_REQUIRE_ALL=1 but FSDELTA_TEST_PG is not set (a PostgreSQL URL; .ci/run starts a server)"
                );
            }
            eprintln!("SKIPPED: PostgreSQL half: set FSDELTA_TEST_PG to an administrator URL");
            None
        }
    }
}

/// A scratch PostgreSQL database, or None when no test server is configured.
pub(crate) fn pg() -> Option<Pg> {
    test_pg_url().map(|u| Pg(ScratchDatabase::create(&u).unwrap()))
}

fn new_run(label: &str, host: &str) -> NewRun {
    NewRun {
        label: label.into(),
        suite: "quick".into(),
        started_at: Utc::now(),
        fsdelta_version: "0.1.0".into(),
        environment: Environment {
            host: host.into(),
            kernel_release: "6.18.0".into(),
            machine_id: "0123456789abcdef".into(),
            ..Environment::default()
        },
    }
}

fn sample(test: &str, rep: u32, value: f64) -> NewSample {
    NewSample {
        config: "scratch".into(),
        test: test.into(),
        repetition: rep,
        sequence: rep + 10,
        facts: SiteFacts {
            fs_type: "ext4".into(),
            path: "/tmp/x".into(),
            device: "/dev/vda".into(),
            mount_options: "rw,relatime".into(),
            mkfs_options: Some("-O ^has_journal".into()),
            extra: BTreeMap::from([("mount_point".to_string(), "/".to_string())]),
        },
        status: SampleStatus::Ok,
        error: None,
        // Distinct start times: a store may use them to recognise a retried write.
        started_at: Utc::now() + ChronoDuration::microseconds(rep as i64),
        duration_s: 1.5,
        workload: "fs_mark -s 0 -n 10".into(),
        metrics: vec![
            // Not in name order: the store must keep the order given.
            Metric::new(
                "files_per_sec",
                value,
                Unit::FilesPerSec,
                Direction::HigherIsBetter,
            )
            .headline(),
            Metric::new(
                "create_lat_ns_p99",
                900.0,
                Unit::Nanoseconds,
                Direction::LowerIsBetter,
            )
            .kind(MetricKind::Tail),
            Metric::new(
                "app_overhead_us",
                12.25,
                Unit::Microseconds,
                Direction::LowerIsBetter,
            ),
            Metric::new("bytes_used", 4096.0, Unit::Bytes, Direction::Neutral),
        ],
        histograms: vec![HistogramRecord {
            name: "create_lat_ns".into(),
            unit: Unit::Nanoseconds,
            layout: "fio-loglinear-6x29".into(),
            count: 3,
            min: 10,
            max: 9_000_000_000,
            sum: u64::MAX as u128 + 7,
            buckets: vec![(10, 1), (500, 2)],
        }],
        attachments: Vec::new(),
    }
}

fn round_trip(b: &dyn Backend) {
    let mut s = b.open();
    let run = s.create_run(&new_run("base", "h1")).unwrap();
    let info = s.run(run).unwrap().unwrap();
    assert_eq!(info.status, RunStatus::Running);
    assert_eq!(info.environment.machine_id, "0123456789abcdef");
    let a = sample("emptyfiles", 1, 1000.5);
    let mut failed = sample("emptyfiles", 2, 1.0);
    failed.status = SampleStatus::Failed;
    failed.error = Some("no space left on device".into());
    failed.metrics.clear();
    failed.histograms.clear();
    failed.facts.mkfs_options = None;
    s.add_sample(run, &a).unwrap();
    s.add_sample(run, &failed).unwrap();
    let end = Utc::now();
    s.finish_run(run, RunStatus::Failed, end).unwrap();

    let info = s.run(run).unwrap().unwrap();
    assert_eq!(info.status, RunStatus::Failed);
    assert_eq!(info.sample_count, 2);
    assert_eq!(
        info.finished_at.unwrap().timestamp_micros(),
        end.timestamp_micros()
    );
    let back = s.samples(run).unwrap();
    assert_eq!(back.len(), 2);
    assert_eq!(back[0].run_id, run);
    assert_eq!(back[0].sample.metrics, a.metrics);
    assert_eq!(back[0].sample.histograms, a.histograms);
    assert_eq!(back[0].sample.facts, a.facts);
    assert_eq!(back[0].sample.workload, a.workload);
    assert_eq!(back[0].sample.sequence, a.sequence);
    assert_eq!(
        back[0].sample.started_at.timestamp_micros(),
        a.started_at.timestamp_micros()
    );
    assert_eq!(back[1].sample.status, SampleStatus::Failed);
    assert_eq!(
        back[1].sample.error.as_deref(),
        Some("no space left on device")
    );
    assert_eq!(back[1].sample.facts.mkfs_options, None);
    assert!(back[1].sample.metrics.is_empty());
    // Another connection sees the same.
    let other = b.open();
    assert_eq!(other.samples(run).unwrap().len(), 2);
}

fn selectors_resolve(b: &dyn Backend) {
    let mut s = b.open();
    let a = s.create_run(&new_run("v1", "nvme-box")).unwrap();
    s.finish_run(a, RunStatus::Complete, Utc::now()).unwrap();
    let b2 = s.create_run(&new_run("v2", "sata-box")).unwrap();
    s.finish_run(b2, RunStatus::Complete, Utc::now()).unwrap();
    let c = s.create_run(&new_run("v1", "sata-box")).unwrap();
    s.finish_run(c, RunStatus::Aborted, Utc::now()).unwrap();
    let _running = s.create_run(&new_run("v3", "nvme-box")).unwrap();

    let ids = |sel: &str| -> Vec<i64> {
        s.select(&sel.parse::<Selector>().unwrap())
            .unwrap()
            .iter()
            .map(|r| r.id)
            .collect()
    };
    assert_eq!(ids("latest"), vec![c]);
    assert_eq!(ids("latest~1"), vec![b2]);
    assert_eq!(ids("label:v1"), vec![c, a]);
    assert_eq!(ids("label:v1,host:nvme-box"), vec![a]);
    assert_eq!(ids("label:v1,host:sata-box"), vec![c]);
    assert_eq!(ids("latest,host:nvme-box"), vec![a]);
    assert_eq!(ids("latest~1,host:sata-box"), vec![b2]);
    assert_eq!(ids(&b2.to_string()), vec![b2]);
    assert!(matches!(
        s.select(&format!("{b2},host:nvme-box").parse().unwrap()),
        Err(StoreError::NoMatch(_))
    ));
    assert!(matches!(
        s.select(&"label:v2,host:nvme-box".parse().unwrap()),
        Err(StoreError::NoMatch(_))
    ));
    assert!(matches!(
        s.select(&Selector::Latest(5)),
        Err(StoreError::NoMatch(_))
    ));
    let limited = s
        .runs(&RunFilter {
            label: None,
            limit: Some(2),
        })
        .unwrap();
    assert_eq!(limited.len(), 2);
    let v1 = s
        .runs(&RunFilter {
            label: Some("v1".into()),
            limit: None,
        })
        .unwrap();
    assert_eq!(v1.iter().map(|r| r.id).collect::<Vec<_>>(), vec![c, a]);
}

fn a_sample_is_all_or_nothing(b: &dyn Backend) {
    let mut s = b.open();
    let run = s.create_run(&new_run("x", "h")).unwrap();
    let mut bad = sample("t", 1, f64::NAN);
    let e = s.add_sample(run, &bad).unwrap_err();
    assert!(e.to_string().contains("files_per_sec"), "{e}");
    bad.metrics[0].value = 1.0;
    bad.metrics.push(bad.metrics[0].clone());
    assert!(s.add_sample(run, &bad).is_err());
    assert!(s.samples(run).unwrap().is_empty());
    // The store still works after a failed transaction.
    s.add_sample(run, &sample("t", 2, 2.0)).unwrap();
    assert_eq!(s.samples(run).unwrap().len(), 1);
}

fn unknown_ids_are_no_match(b: &dyn Backend) {
    let mut s = b.open();
    assert!(matches!(
        s.add_sample(424242, &sample("t", 1, 1.0)),
        Err(StoreError::NoMatch(_))
    ));
    assert!(matches!(
        s.finish_run(424242, RunStatus::Complete, Utc::now()),
        Err(StoreError::NoMatch(_))
    ));
    assert!(s.run(424242).unwrap().is_none());
    assert!(s.samples(424242).unwrap().is_empty());
}

fn profiles_once_per_sample(b: &dyn Backend) {
    let mut s = b.open();
    let run = s.create_run(&new_run("x", "h")).unwrap();
    let a = s.add_sample(run, &sample("t", 1, 1.0)).unwrap();
    let c = s.add_sample(run, &sample("t", 2, 1.0)).unwrap();
    let p = StoredProfile {
        format: "folded-gz-v1".into(),
        data: vec![0, 1, 2, 255],
    };
    s.add_profile(a, &p).unwrap();
    assert_eq!(s.profile(a).unwrap(), Some(p.clone()));
    assert_eq!(s.profile(c).unwrap(), None);
    let e = s.add_profile(a, &p).unwrap_err();
    assert!(e.to_string().contains("already has a profile"), "{e}");
    assert!(matches!(
        s.add_profile(9_999_999, &p),
        Err(StoreError::NoMatch(_))
    ));
}

fn reopening_keeps_data(b: &dyn Backend) {
    let id = {
        let mut s = b.open();
        s.create_run(&new_run("x", "h")).unwrap()
    };
    let s = b.open();
    assert_eq!(s.run(id).unwrap().unwrap().label, "x");
}

fn concurrent_writers_lose_nothing(b: &dyn Backend) {
    let run = b.open().create_run(&new_run("x", "h")).unwrap();
    std::thread::scope(|scope| {
        for t in 0..4 {
            scope.spawn(move || {
                let mut s = b.open();
                for i in 0..25 {
                    s.add_sample(run, &sample(&format!("t{t}"), i, i as f64 + 1.0))
                        .unwrap();
                }
            });
        }
    });
    let back = b.open().samples(run).unwrap();
    assert_eq!(back.len(), 100);
    assert!(back.iter().all(|s| s.sample.metrics.len() == 4));
}

fn metric_points_are_one_test_and_metric_of_ok_samples_in_run_order(b: &dyn Backend) {
    let mut s = b.open();
    let a = s.create_run(&new_run("a", "h")).unwrap();
    s.add_sample(a, &sample("emptyfiles", 1, 10.0)).unwrap();
    s.add_sample(a, &sample("smallfiles", 1, 20.0)).unwrap();
    let mut failed = sample("emptyfiles", 3, 99.0);
    failed.status = SampleStatus::Failed;
    s.add_sample(a, &failed).unwrap();
    s.add_sample(a, &sample("emptyfiles", 2, 11.0)).unwrap();
    let c = s.create_run(&new_run("c", "h")).unwrap();
    s.add_sample(c, &sample("emptyfiles", 1, 12.0)).unwrap();
    let p = s.metric_points("emptyfiles", "files_per_sec").unwrap();
    let got: Vec<(i64, f64)> = p.iter().map(|p| (p.run_id, p.metric.value)).collect();
    assert_eq!(got, vec![(a, 10.0), (a, 11.0), (c, 12.0)]);
    assert!(p.iter().all(|p| p.config == "scratch" && p.metric.headline));
    assert_eq!(p[0].metric.unit, Unit::FilesPerSec);
}

/// `sample_metrics` of some runs is what `samples` gives of them, ok samples only, with facts,
/// histograms and times left out, in run order then sample order; other runs are not read.
fn sample_metrics_are_the_ok_samples_of_the_runs_asked(b: &dyn Backend) {
    let mut s = b.open();
    let a = s.create_run(&new_run("a", "h")).unwrap();
    s.add_sample(a, &sample("emptyfiles", 1, 10.0)).unwrap();
    let mut failed = sample("emptyfiles", 2, 99.0);
    failed.status = SampleStatus::Failed;
    s.add_sample(a, &failed).unwrap();
    s.add_sample(a, &sample("smallfiles", 1, 20.0)).unwrap();
    let skipped = s.create_run(&new_run("skipped", "h")).unwrap();
    s.add_sample(skipped, &sample("emptyfiles", 1, 50.0))
        .unwrap();
    let c = s.create_run(&new_run("c", "h")).unwrap();
    s.add_sample(c, &sample("emptyfiles", 1, 12.0)).unwrap();
    // Asked out of order and twice: answered once each, in run order.
    let got = s.sample_metrics(&[c, a, c]).unwrap();
    let mut want = Vec::new();
    for r in [a, c] {
        for rec in s.samples(r).unwrap() {
            if rec.sample.status == SampleStatus::Ok {
                want.push(rec);
            }
        }
    }
    assert_eq!(got.len(), 3);
    for (g, w) in got.iter().zip(&want) {
        assert_eq!((g.id, g.run_id), (w.id, w.run_id));
        assert_eq!(
            (&g.sample.config, &g.sample.test, g.sample.repetition),
            (&w.sample.config, &w.sample.test, w.sample.repetition)
        );
        assert_eq!(g.sample.sequence, w.sample.sequence);
        assert_eq!(
            g.sample.metrics, w.sample.metrics,
            "same metrics, same order"
        );
        assert!(g.sample.histograms.is_empty());
    }
    assert!(s.sample_metrics(&[]).unwrap().is_empty());
    // run_medians: per run, configuration, test and metric, the median and count of the
    // successful samples' values (the failed repetition's 99 left out), in run order.
    s.add_sample(a, &sample("emptyfiles", 3, 14.0)).unwrap();
    let mut seen = Vec::new();
    s.run_medians(&[c, a, c, skipped], &mut |m| {
        seen.push((
            m.run,
            m.config.to_string(),
            m.test.to_string(),
            m.metric.to_string(),
            m.median,
            m.n,
        ))
    })
    .unwrap();
    let mut want = Vec::new();
    for r in [a, skipped, c] {
        let recs = s.sample_metrics(&[r]).unwrap();
        let rows = recs.iter().flat_map(|g| {
            g.sample.metrics.iter().map(|m| {
                (
                    g.sample.config.as_str(),
                    g.sample.test.as_str(),
                    m.name.as_str(),
                    m.value,
                )
            })
        });
        for ((config, test, metric), (median, n)) in super::medians_of(rows) {
            want.push((r, config.into(), test.into(), metric.into(), median, n));
        }
    }
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "{seen:?}");
    let sorted = |mut v: Vec<(RunId, String, String, String, f64, usize)>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v
    };
    assert_eq!(sorted(seen.clone()), sorted(want));
    // The two emptyfiles repetitions of `a` that succeeded: one median of both, n = 2.
    let ef: Vec<_> = seen
        .iter()
        .filter(|r| r.0 == a && r.2 == "emptyfiles")
        .collect();
    assert!(!ef.is_empty());
    assert!(ef.iter().all(|r| r.5 == 2), "{ef:?}");
    assert!(
        ef.iter().any(|r| r.3 == "files_per_sec" && r.4 == 12.0),
        "median of 10 and 14: {ef:?}"
    );
    let mut none = 0;
    s.run_medians(&[], &mut |_| none += 1).unwrap();
    assert_eq!(none, 0);
}

/// `samples_of_runs` answers each run asked, in the order asked (twice when asked twice),
/// exactly as `samples` does run by run.
fn samples_of_runs_are_samples_run_by_run(b: &dyn Backend) {
    let mut s = b.open();
    let a = s.create_run(&new_run("a", "h")).unwrap();
    s.add_sample(a, &sample("emptyfiles", 1, 10.0)).unwrap();
    let mut failed = sample("emptyfiles", 2, 99.0);
    failed.status = SampleStatus::Failed;
    s.add_sample(a, &failed).unwrap();
    s.add_sample(a, &sample("smallfiles", 1, 20.0)).unwrap();
    let empty = s.create_run(&new_run("empty", "h")).unwrap();
    let c = s.create_run(&new_run("c", "h")).unwrap();
    s.add_sample(c, &sample("emptyfiles", 1, 12.0)).unwrap();
    s.add_sample(c, &sample("emptyfiles", 2, 13.0)).unwrap();
    let asked = [c, empty, a, c];
    let got = s.samples_of_runs(&asked).unwrap();
    assert_eq!(got.len(), asked.len());
    for (r, g) in asked.iter().zip(&got) {
        let want = s.samples(*r).unwrap();
        assert_eq!(format!("{g:?}"), format!("{want:?}"), "run {r}");
    }
    assert_eq!(got[0].len(), 2);
    assert!(got[1].is_empty());
    assert_eq!(got[2].len(), 3);
    assert_eq!(got[2][0].sample.metrics.len(), 4, "every metric, in order");
    assert!(s.samples_of_runs(&[]).unwrap().is_empty());
}

/// Attachments are stored with their sample (all or nothing, in its transaction), read back by
/// sample, byte for byte, and left out of `samples`.
fn attachments_are_kept_with_their_sample(b: &dyn Backend) {
    use crate::model::Attachment;
    let mut s = b.open();
    let r = s.create_run(&new_run("a", "h")).unwrap();
    let mut with = sample("cmd", 1, 10.0);
    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    with.attachments = vec![
        Attachment {
            name: "stdout".into(),
            format: "text-gz".into(),
            data: bytes.clone(),
        },
        Attachment {
            name: "stderr".into(),
            format: "text-gz".into(),
            data: Vec::new(),
        },
    ];
    let id = s.add_sample(r, &with).unwrap();
    let plain = s.add_sample(r, &sample("cmd", 2, 11.0)).unwrap();
    drop(s);
    let s = b.open();
    let got = s.attachments(id).unwrap();
    let names: Vec<&str> = got.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["stderr", "stdout"], "by name");
    assert_eq!(got[1].data, bytes);
    assert_eq!(got[1].format, "text-gz");
    assert!(got[0].data.is_empty());
    assert!(s.attachments(plain).unwrap().is_empty());
    assert!(s.attachments(id + 1000).unwrap().is_empty());
    assert!(
        s.samples(r)
            .unwrap()
            .iter()
            .all(|x| x.sample.attachments.is_empty())
    );
}

/// Every new run gets its own version-4 UUID, kept across reopening; unknown runs have none.
fn runs_carry_distinct_uuids(b: &dyn Backend) {
    let mut s = b.open();
    let a = s.create_run(&new_run("a", "h")).unwrap();
    let c = s.create_run(&new_run("c", "h")).unwrap();
    let ua = s.run_uuid(a).unwrap().expect("a run has a UUID");
    let uc = s.run_uuid(c).unwrap().expect("a run has a UUID");
    assert_ne!(ua, uc);
    for u in [&ua, &uc] {
        let parts: Vec<&str> = u.split('-').collect();
        let lens: Vec<usize> = parts.iter().map(|p| p.len()).collect();
        assert_eq!(lens, vec![8, 4, 4, 4, 12], "{u}");
        assert!(parts[2].starts_with('4'), "{u}");
        assert!("89ab".contains(&parts[3][..1]), "{u}");
        assert!(
            u.chars()
                .all(|ch| ch == '-' || ch.is_ascii_hexdigit() && !ch.is_ascii_uppercase())
        );
    }
    drop(s);
    let s = b.open();
    assert_eq!(s.run_uuid(a).unwrap(), Some(ua));
    assert_eq!(s.run_uuid(c + 1000).unwrap(), None);
}

fn an_alert(key: &str, machine: &str, test: &str, at_s: i64) -> super::NewAlert {
    super::NewAlert {
        key: key.into(),
        kind: super::AlertKind::ChangePoint,
        machine: machine.into(),
        config: "ext4".into(),
        test: test.into(),
        metric: "write_iops".into(),
        size: -0.25,
        unit: "IOPS".into(),
        detected_at: micros(
            chrono::DateTime::<Utc>::from_timestamp(1_700_000_000 + at_s, 0).unwrap(),
        ),
        before_run: 3,
        after_run: 4,
    }
}

/// Alerts (issue 40): kept once per key, listed untriaged first then oldest first, filtered,
/// triaged with a note, who and when that the next connection reads back; a bad triage is
/// refused before anything is written.
fn alerts_are_kept_once_and_triaged(b: &dyn Backend) {
    use super::{AlertFilter, AlertState, Triage};
    let mut s = b.open();
    assert!(s.alerts(&AlertFilter::default()).unwrap().is_empty());
    let late = s
        .add_alert(&an_alert("k-late", "m1", "seq", 300))
        .unwrap()
        .unwrap();
    let early = s
        .add_alert(&an_alert("k-early", "m2", "rand", 100))
        .unwrap()
        .unwrap();
    let mid = s
        .add_alert(&an_alert("k-mid", "m1", "rand", 200))
        .unwrap()
        .unwrap();
    // The same change found again is the same alert.
    assert_eq!(
        s.add_alert(&an_alert("k-mid", "m1", "rand", 999)).unwrap(),
        None
    );
    let ids = |s: &dyn super::Store, f: &AlertFilter| -> Vec<i64> {
        s.alerts(f).unwrap().iter().map(|a| a.id).collect()
    };
    assert_eq!(
        ids(s.as_ref(), &AlertFilter::default()),
        vec![early, mid, late]
    );
    let at = micros(Utc::now());
    let t = Triage {
        state: AlertState::Acknowledged,
        note: "<script>alert(1)</script> looking".into(),
        who: "ana".into(),
        at,
    };
    assert!(s.triage_alert(early, &t).unwrap());
    assert!(!s.triage_alert(early + 1000, &t).unwrap());
    drop(s);
    let mut s = b.open();
    // Untriaged first, then the triaged, each oldest first.
    assert_eq!(
        ids(s.as_ref(), &AlertFilter::default()),
        vec![mid, late, early]
    );
    let a = s.alert(early).unwrap().unwrap();
    assert_eq!(a.state, AlertState::Acknowledged);
    assert_eq!(a.note, t.note);
    assert_eq!(a.who, "ana");
    assert_eq!(a.triaged_at, Some(at));
    assert_eq!(a.alert, an_alert("k-early", "m2", "rand", 100));
    assert_eq!(s.alert(early + 1000).unwrap(), None);
    let only = |machine: Option<&str>, test: Option<&str>, state: Option<AlertState>| AlertFilter {
        machine: machine.map(String::from),
        test: test.map(String::from),
        state,
        limit: None,
    };
    assert_eq!(
        ids(s.as_ref(), &only(Some("m1"), None, None)),
        vec![mid, late]
    );
    assert_eq!(
        ids(s.as_ref(), &only(None, Some("rand"), None)),
        vec![mid, early]
    );
    assert_eq!(
        ids(s.as_ref(), &only(None, None, Some(AlertState::New))),
        vec![mid, late]
    );
    let one = AlertFilter {
        limit: Some(1),
        ..AlertFilter::default()
    };
    assert_eq!(ids(s.as_ref(), &one), vec![mid]);
    let long = Triage {
        note: "x".repeat(super::alerts::MAX_NOTE + 1),
        ..t.clone()
    };
    assert!(s.triage_alert(mid, &long).is_err());
    assert_eq!(s.alert(mid).unwrap().unwrap().state, AlertState::New);
    let nan = super::NewAlert {
        size: f64::NAN,
        ..an_alert("k-nan", "m1", "seq", 1)
    };
    assert!(s.add_alert(&nan).is_err());
    assert_eq!(s.alerts(&AlertFilter::default()).unwrap().len(), 3);
}

macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn sqlite() {
                    super::$name(&super::sqlite());
                }
                #[test]
                fn postgres() {
                    if let Some(b) = super::pg() {
                        super::$name(&b);
                    }
                }
            }
        )*
    };
}

on_both_backends!(
    round_trip,
    selectors_resolve,
    a_sample_is_all_or_nothing,
    unknown_ids_are_no_match,
    profiles_once_per_sample,
    reopening_keeps_data,
    concurrent_writers_lose_nothing,
    metric_points_are_one_test_and_metric_of_ok_samples_in_run_order,
    runs_carry_distinct_uuids,
    sample_metrics_are_the_ok_samples_of_the_runs_asked,
    samples_of_runs_are_samples_run_by_run,
    attachments_are_kept_with_their_sample,
    alerts_are_kept_once_and_triaged,
);

// ---- Copying runs between stores (`store::copy`), on every pair of backends: memory,
// SQLite and PostgreSQL, as source and as destination.

/// A fresh store of one kind, with what keeps it alive (a temporary directory, a scratch
/// database); None when the kind is PostgreSQL and no test server is configured.
fn fresh(kind: &str) -> Option<(Box<dyn Store>, Box<dyn std::any::Any>)> {
    match kind {
        "memory" => Some((Box::new(super::memory::MemoryStore::new()), Box::new(()))),
        "sqlite" => {
            let b = sqlite();
            Some((b.open(), Box::new(b)))
        }
        "postgres" => pg().map(|b| (b.open(), Box::new(b) as Box<dyn std::any::Any>)),
        other => unreachable!("{other}"),
    }
}

/// A time every store keeps exactly (PostgreSQL and SQLite keep microseconds).
fn micros(t: chrono::DateTime<Utc>) -> chrono::DateTime<Utc> {
    chrono::DateTime::from_timestamp_micros(t.timestamp_micros()).unwrap()
}

/// A run with samples that carry everything a store keeps: metrics of every kind, histograms,
/// attachments, a profile, a failed sample; ended with `end` (or left running).
fn full_run(s: &mut dyn Store, label: &str, host: &str, end: Option<RunStatus>) -> super::RunId {
    use crate::model::{Attachment, DiskInfo};
    let mut r = new_run(label, host);
    r.started_at = micros(r.started_at);
    r.environment.cores = 8;
    r.environment.memory_bytes = 16 << 30;
    r.environment.cpu_model = "Test CPU @ 3 GHz".into();
    r.environment.disks = vec![DiskInfo {
        name: "nvme0n1".into(),
        model: "Fast".into(),
        size_bytes: 1 << 40,
        rotational: false,
    }];
    let run = s.create_run(&r).unwrap();
    for rep in 1..=3 {
        let mut x = sample("smallfiles", rep, 1000.0 + rep as f64 / 3.0);
        x.started_at = micros(x.started_at);
        x.attachments = vec![
            Attachment {
                name: "stdout".into(),
                format: "text-gz".into(),
                data: (0..=255u8).cycle().skip(rep as usize).take(5000).collect(),
            },
            Attachment {
                name: "stderr".into(),
                format: "text-gz".into(),
                data: Vec::new(),
            },
        ];
        let id = s.add_sample(run, &x).unwrap();
        if rep != 2 {
            s.add_profile(
                id,
                &StoredProfile {
                    format: "folded-gz-v1".into(),
                    data: vec![rep as u8, 0, 255],
                },
            )
            .unwrap();
        }
    }
    let mut failed = sample("bigdir", 1, 1.0);
    failed.started_at = micros(failed.started_at);
    failed.status = SampleStatus::Failed;
    failed.error = Some("no space left on device".into());
    failed.metrics.clear();
    failed.facts.mkfs_options = None;
    s.add_sample(run, &failed).unwrap();
    if let Some(status) = end {
        s.finish_run(run, status, micros(Utc::now())).unwrap();
    }
    run
}

/// Everything a store holds of one run but its ids (as JSON text: a histogram's sum is a
/// `u128`, which a `serde_json::Value` cannot hold), to compare two stores' copies.
fn everything(s: &dyn Store, run: super::RunId) -> String {
    let mut info = s.run(run).unwrap().unwrap();
    info.id = 0;
    let samples: Vec<_> = s
        .samples(run)
        .unwrap()
        .into_iter()
        .map(|rec| {
            let attachments = s.attachments(rec.id).unwrap();
            let profile = s.profile(rec.id).unwrap().map(|p| (p.format, p.data));
            (rec.sample, attachments, profile)
        })
        .collect();
    serde_json::to_string_pretty(&(s.run_uuid(run).unwrap(), info, samples)).unwrap()
}

/// Runs that ended are copied with every metric, histogram, attachment and profile equal;
/// copying again copies nothing; copying back copies only what the source lacked.
fn sync_copies_what_is_missing_once_and_whole(from: &mut dyn Store, to: &mut dyn Store) {
    use super::copy::copy_runs;
    let a = full_run(from, "laptop-a", "laptop", Some(RunStatus::Complete));
    let b = full_run(from, "laptop-b", "laptop", Some(RunStatus::Failed));
    let lab = full_run(to, "lab", "lab-nvme", Some(RunStatus::Complete));
    let r = copy_runs(&*from, to).unwrap();
    assert_eq!(r.copied.len(), 2);
    assert_eq!(r.samples(), 8);
    assert_eq!((r.already, r.running.len()), (0, 0));
    assert_eq!(r.copied[0].source, a, "oldest first");
    assert!(r.copied[0].destination < r.copied[1].destination);
    for c in &r.copied {
        assert_eq!(
            to.run_uuid(c.destination).unwrap().as_deref(),
            Some(&*c.uuid)
        );
        assert_eq!(
            everything(&*from, c.source),
            everything(&*to, c.destination),
            "run {} arrived equal",
            c.source
        );
        assert_eq!(to.run(c.destination).unwrap().unwrap().sample_count, 4);
    }
    let held = to.run_by_uuid(&r.copied[1].uuid).unwrap().unwrap();
    assert_eq!(held.id, r.copied[1].destination);
    assert_eq!(held.status, RunStatus::Failed);
    assert_eq!(held.environment.host, "laptop");
    assert!(
        to.run_by_uuid("00000000-0000-4000-8000-000000000000")
            .unwrap()
            .is_none()
    );
    // The copied runs are runs like others: selectors find them.
    let by_label = to.select(&"label:laptop-b".parse().unwrap()).unwrap();
    assert_eq!(by_label[0].id, r.copied[1].destination);

    // Twice copies nothing.
    let again = copy_runs(&*from, to).unwrap();
    assert!(again.copied.is_empty());
    assert_eq!(again.already, 2);
    assert_eq!(to.runs(&RunFilter::default()).unwrap().len(), 3);
    // Back: only the destination's own run travels.
    let back = copy_runs(&*to, from).unwrap();
    assert_eq!(back.copied.len(), 1);
    assert_eq!(back.copied[0].source, lab);
    assert_eq!(back.already, 2);
    assert_eq!(
        everything(&*to, lab),
        everything(&*from, back.copied[0].destination)
    );
    assert!(copy_runs(&*from, to).unwrap().copied.is_empty());
    let _ = b;
}

/// A run still `running` in the source is not copied (its samples are not all there, and a
/// copied run is never looked at again); once it has ended, the next sync copies it whole.
fn sync_leaves_a_running_run_for_later(from: &mut dyn Store, to: &mut dyn Store) {
    use super::copy::copy_runs;
    let live = full_run(from, "live", "laptop", None);
    let r = copy_runs(&*from, to).unwrap();
    assert!(r.copied.is_empty());
    assert_eq!(r.running.len(), 1);
    assert_eq!(r.running[0].id, live);
    assert!(to.runs(&RunFilter::default()).unwrap().is_empty());
    from.finish_run(live, RunStatus::Aborted, micros(Utc::now()))
        .unwrap();
    let r = copy_runs(&*from, to).unwrap();
    assert_eq!(r.copied.len(), 1);
    assert!(r.running.is_empty());
    assert_eq!(
        everything(&*from, live),
        everything(&*to, r.copied[0].destination)
    );
    assert_eq!(
        to.run(r.copied[0].destination).unwrap().unwrap().status,
        RunStatus::Aborted
    );
}

/// `import_run` writes a run and all its samples or nothing: a sample the store refuses, or a
/// UUID it already holds, leaves no trace, and the store goes on working.
fn import_run_is_all_or_nothing(from: &mut dyn Store, to: &mut dyn Store) {
    use super::SampleCopy;
    let a = full_run(from, "a", "laptop", Some(RunStatus::Complete));
    let uuid = from.run_uuid(a).unwrap().unwrap();
    let info = from.run(a).unwrap().unwrap();
    let good: Vec<SampleCopy> = from
        .samples(a)
        .unwrap()
        .into_iter()
        .map(|r| SampleCopy {
            sample: r.sample,
            profile: None,
        })
        .collect();
    let mut bad = good.clone();
    bad[2].sample.metrics[0].value = f64::INFINITY;
    let e = to.import_run(&uuid, &info, &bad).unwrap_err();
    assert!(e.to_string().contains("not a finite number"), "{e}");
    let mut dup = good.clone();
    let m = dup[1].sample.metrics[0].clone();
    dup[1].sample.metrics.push(m);
    assert!(to.import_run(&uuid, &info, &dup).is_err());
    assert!(to.run_by_uuid(&uuid).unwrap().is_none());
    assert!(to.runs(&RunFilter::default()).unwrap().is_empty());
    let id = to.import_run(&uuid, &info, &good).unwrap();
    assert_eq!(to.samples(id).unwrap().len(), good.len());
    let e = to.import_run(&uuid, &info, &good).unwrap_err();
    assert!(
        matches!(e, StoreError::UuidTaken(ref u) if *u == uuid),
        "{e}"
    );
    assert_eq!(to.runs(&RunFilter::default()).unwrap().len(), 1);
}

macro_rules! on_every_pair {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                fn pair(from: &str, to: &str) {
                    let (Some((mut a, _ka)), Some((mut b, _kb))) =
                        (super::fresh(from), super::fresh(to))
                    else {
                        return;
                    };
                    super::$name(a.as_mut(), b.as_mut());
                }
                #[test]
                fn memory_to_memory() {
                    pair("memory", "memory");
                }
                #[test]
                fn memory_to_sqlite() {
                    pair("memory", "sqlite");
                }
                #[test]
                fn sqlite_to_memory() {
                    pair("sqlite", "memory");
                }
                #[test]
                fn sqlite_to_sqlite() {
                    pair("sqlite", "sqlite");
                }
                #[test]
                fn sqlite_to_postgres() {
                    pair("sqlite", "postgres");
                }
                #[test]
                fn postgres_to_sqlite() {
                    pair("postgres", "sqlite");
                }
                #[test]
                fn postgres_to_memory() {
                    pair("postgres", "memory");
                }
                #[test]
                fn postgres_to_postgres() {
                    pair("postgres", "postgres");
                }
            }
        )*
    };
}

on_every_pair!(
    sync_copies_what_is_missing_once_and_whole,
    sync_leaves_a_running_run_for_later,
    import_run_is_all_or_nothing,
);

// ---- PostgreSQL only: what SQLite has no counterpart for.

mod postgres_only {
    use super::*;
    use crate::store::postgres::{PgTarget, SCHEMA_VERSION};

    fn admin(db: &ScratchDatabase) -> ::postgres::Client {
        PgTarget::parse(&db.url).unwrap().connect().unwrap()
    }

    #[test]
    fn a_database_of_another_application_is_refused_untouched() {
        let Some(Pg(db)) = pg() else { return };
        let mut c = admin(&db);
        c.batch_execute("CREATE TABLE invoices (id INT); INSERT INTO invoices VALUES (1);")
            .unwrap();
        let e = PgStore::open(&db.url).err().unwrap().to_string();
        assert!(
            e.contains("another application") && e.contains("invoices"),
            "{e}"
        );
        assert!(e.contains("createdb"), "{e}");
        let tables: Vec<String> = c
            .query(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public'",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(tables, vec!["invoices".to_string()]);

        // A meta table naming another application is refused too.
        let Some(Pg(db2)) = pg() else { return };
        let mut c2 = admin(&db2);
        c2.batch_execute(
            "CREATE TABLE fsdelta_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO fsdelta_meta VALUES ('application', 'othertool');",
        )
        .unwrap();
        let e = PgStore::open(&db2.url).err().unwrap().to_string();
        assert!(e.contains("othertool"), "{e}");
    }

    #[test]
    fn a_newer_schema_is_refused_with_advice() {
        let Some(b) = pg() else { return };
        drop(b.open());
        let mut c = admin(&b.0);
        c.execute(
            "UPDATE fsdelta_meta SET value = '99' WHERE key = 'store_version'",
            &[],
        )
        .unwrap();
        let e = PgStore::open(&b.0.url).err().unwrap();
        assert!(matches!(e, StoreError::TooNew { found: 99, .. }), "{e}");
        assert!(e.to_string().contains("upgrade fsdelta"));
    }

    #[test]
    fn the_schema_is_the_sqlite_version_and_concurrent_first_opens_migrate_once() {
        let Some(b) = pg() else { return };
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| drop(b.open()));
            }
        });
        let mut c = admin(&b.0);
        let v: String = c
            .query_one(
                "SELECT value FROM fsdelta_meta WHERE key = 'store_version'",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(v, SCHEMA_VERSION.to_string());
    }

    #[test]
    fn a_url_that_cannot_connect_names_host_port_and_the_reason() {
        // Nothing listens on port 1 of localhost.
        let e = PgStore::open("postgres://fsdelta@127.0.0.1:1/db?sslmode=disable")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("host 127.0.0.1 port 1"), "{e}");
        assert!(e.to_lowercase().contains("refused"), "{e}");
        // The server's own reason: a database that does not exist.
        let Some(url) = test_pg_url() else { return };
        let url = crate::store::postgres::replace_dbname(&url, "fsdelta_no_such_db");
        let e = PgStore::open(&url).err().unwrap().to_string();
        assert!(
            e.contains("the server says") && e.contains("fsdelta_no_such_db"),
            "{e}"
        );
        assert!(e.contains("port"), "{e}");
    }

    #[test]
    fn a_lost_connection_is_reopened_and_the_sample_written_once() {
        let Some(b) = pg() else { return };
        let mut s = b.open();
        let run = s.create_run(&new_run("x", "h")).unwrap();
        s.add_sample(run, &sample("t", 1, 1.0)).unwrap();
        // Kill every connection of the store (as a server restart does).
        let mut c = admin(&b.0);
        let n: i64 = c
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                 WHERE datname = current_database() AND pid <> pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0);
        assert!(n >= 1);
        s.add_sample(run, &sample("t", 2, 2.0)).unwrap();
        s.finish_run(run, RunStatus::Complete, Utc::now()).unwrap();
        let back = s.samples(run).unwrap();
        assert_eq!(back.len(), 2);
    }

    /// The tables of a database outside the system schemas, in name order.
    fn user_tables(c: &mut ::postgres::Client) -> Vec<String> {
        c.query(
            "SELECT table_schema || '.' || table_name FROM information_schema.tables
             WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
    }

    fn store_version(c: &mut ::postgres::Client) -> String {
        c.query_one(
            "SELECT value FROM fsdelta_meta WHERE key = 'store_version'",
            &[],
        )
        .unwrap()
        .get(0)
    }

    #[test]
    fn a_read_only_open_of_an_empty_database_creates_nothing_and_names_the_command_that_does() {
        let Some(Pg(db)) = pg() else { return };
        let e = PgStore::open_read_only(&db.url).err().unwrap().to_string();
        assert!(
            e.contains("no fsdelta results yet") && e.contains("fsdelta cleanup"),
            "{e}"
        );
        assert_eq!(user_tables(&mut admin(&db)), Vec::<String>::new());
    }

    #[test]
    fn a_read_only_open_reads_but_refuses_writes_even_after_a_reconnection() {
        let Some(b) = pg() else { return };
        let mut w = b.open();
        let run = w.create_run(&new_run("x", "h")).unwrap();
        w.add_sample(run, &sample("t", 1, 1.0)).unwrap();
        w.finish_run(run, RunStatus::Complete, Utc::now()).unwrap();
        let mut r: Box<dyn Store> = Box::new(PgStore::open_read_only(&b.0.url).unwrap());
        assert_eq!(r.samples(run).unwrap().len(), 1);
        let mut c = admin(&b.0);
        for round in 0..2 {
            let e = r.create_run(&new_run("y", "h")).err().unwrap().to_string();
            assert!(e.contains("read-only transaction"), "{e}");
            let e = r.add_sample(run, &sample("t", 2, 2.0)).err().unwrap();
            assert!(e.to_string().contains("read-only transaction"), "{e}");
            let e = r.finish_run(run, RunStatus::Failed, Utc::now()).err();
            assert!(e.is_some());
            if round == 0 {
                // A new connection must be read-only too.
                c.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                     WHERE datname = current_database() AND pid <> pg_backend_pid()",
                    &[],
                )
                .unwrap();
                assert_eq!(r.runs(&RunFilter::default()).unwrap().len(), 1);
            }
        }
        let n: i64 = c
            .query_one("SELECT count(*) FROM samples", &[])
            .unwrap()
            .get(0);
        assert_eq!(n, 1);
        let status: String = c.query_one("SELECT status FROM runs", &[]).unwrap().get(0);
        assert_eq!(status, "complete");
    }

    #[test]
    fn a_read_only_open_refuses_a_foreign_database_untouched() {
        let Some(Pg(db)) = pg() else { return };
        let mut c = admin(&db);
        c.batch_execute("CREATE TABLE invoices (id INT); INSERT INTO invoices VALUES (1);")
            .unwrap();
        let e = PgStore::open_read_only(&db.url).err().unwrap().to_string();
        assert!(
            e.contains("another application") && e.contains("invoices"),
            "{e}"
        );
        assert_eq!(user_tables(&mut c), vec!["public.invoices".to_string()]);
        c.batch_execute(
            "CREATE TABLE fsdelta_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO fsdelta_meta VALUES ('application', 'othertool');",
        )
        .unwrap();
        let e = PgStore::open_read_only(&db.url).err().unwrap().to_string();
        assert!(e.contains("othertool"), "{e}");
        assert_eq!(
            user_tables(&mut c),
            vec!["public.fsdelta_meta".to_string(), "public.invoices".into()]
        );
        let n: i64 = c
            .query_one("SELECT count(*) FROM fsdelta_meta", &[])
            .unwrap()
            .get(0);
        assert_eq!(n, 1);
    }

    #[test]
    fn a_read_only_open_refuses_an_older_or_newer_schema_without_migrating() {
        let Some(b) = pg() else { return };
        drop(b.open());
        let mut c = admin(&b.0);
        c.execute(
            "UPDATE fsdelta_meta SET value = '6' WHERE key = 'store_version'",
            &[],
        )
        .unwrap();
        let e = PgStore::open_read_only(&b.0.url).err().unwrap().to_string();
        assert!(
            e.contains("version 6") && e.contains("older") && e.contains("fsdelta cleanup"),
            "{e}"
        );
        assert_eq!(store_version(&mut c), "6");
        c.execute(
            "UPDATE fsdelta_meta SET value = '99' WHERE key = 'store_version'",
            &[],
        )
        .unwrap();
        let e = PgStore::open_read_only(&b.0.url).err().unwrap();
        assert!(matches!(e, StoreError::TooNew { found: 99, .. }), "{e}");
        assert_eq!(store_version(&mut c), "99");
    }

    #[test]
    fn a_read_only_open_does_not_wait_for_a_migrating_writer() {
        let Some(b) = pg() else { return };
        drop(b.open());
        let mut c = admin(&b.0);
        c.execute(
            "SELECT pg_advisory_lock($1)",
            &[&crate::store::postgres::MIGRATION_LOCK],
        )
        .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let url = b.0.url.clone();
        std::thread::spawn(move || {
            let r = PgStore::open_read_only(&url).map(|s| s.runs(&RunFilter::default()).is_ok());
            let _ = tx.send(r.is_ok_and(|ok| ok));
        });
        let opened = rx.recv_timeout(std::time::Duration::from_secs(20));
        assert_eq!(
            opened,
            Ok(true),
            "the read-only open waited for the migration lock"
        );
    }

    #[test]
    fn tls_is_used_with_sslmode_require() {
        // FSDELTA_TEST_PG_TLS: a TCP URL of a server with ssl = on (.ci/run starts one).
        let url = match std::env::var("FSDELTA_TEST_PG_TLS") {
            Ok(u) if !u.is_empty() => u,
            _ => {
                if std::env::var("FSDELTA_REQUIRE_ALL").as_deref() == Ok("1") {
                    panic!("FSDELTA_REQUIRE_ALL=1 but FSDELTA_TEST_PG_TLS is not set");
                }
                eprintln!("SKIPPED: set FSDELTA_TEST_PG_TLS to a TCP URL of a server with ssl=on");
                return;
            }
        };
        let db = ScratchDatabase::create(&url).unwrap();
        let url = format!("{}?sslmode=require", db.url.split('?').next().unwrap());
        let mut s = PgStore::open(&url).unwrap();
        s.create_run(&new_run("tls", "h")).unwrap();
        let mut c = PgTarget::parse(&url).unwrap().connect().unwrap();
        let ssl: bool = c
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0);
        assert!(ssl, "sslmode=require must encrypt");
    }
}
