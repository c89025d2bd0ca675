//! The run engine's invariants, driven without the binary: events, what is stored, statuses,
//! order, teardown on every path.

use super::*;
use crate::model::{Direction, Environment, Metric, Unit};
use crate::plan::suite::EngineSpec;
use crate::store::memory::{FailAfter, MemoryStore};
use crate::store::sqlite::SqliteStore;
use crate::workload::null::Null;

fn planned(name: &str, w: Box<dyn Workload>) -> PlannedTest {
    PlannedTest {
        name: name.into(),
        workload: w,
        description: format!("{name} (test)"),
        events: Vec::new(),
    }
}

fn plan(tests: Vec<PlannedTest>, targets: Sites, repeat: u32) -> RunSpec {
    RunSpec {
        label: "t".into(),
        suite: "unit".into(),
        tests,
        targets,
        repeat,
        order: Order::Rotate,
        until_confident: None,
        drop_caches: false,
        ondisk: true,
        ondisk_remount: false,
        profile: None,
        profile_scope: Default::default(),
        baseline: Baseline::LastComparable,
        environment: Environment::default(),
    }
}

/// Two `dir` configurations in fresh empty directories under `root`.
fn two_dirs(root: &std::path::Path) -> Sites {
    for d in ["a", "b"] {
        std::fs::create_dir(root.join(d)).unwrap();
    }
    let text = format!(
        "scratch = \"{r}/scratch\"\n[[config]]\nname = \"a\"\nfs = \"dir\"\npath = \"{r}/a\"\n[[config]]\nname = \"b\"\nfs = \"dir\"\npath = \"{r}/b\"\n",
        r = root.display()
    );
    Sites::Configs {
        file: crate::plan::config::parse(&text, "t.toml").unwrap(),
        state: StateFile::new(root.join("state.json")),
    }
}

fn leftovers(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("fsdelta-scratch"))
        .collect()
}

#[test]
fn a_tiny_fs_mark_run_stores_every_sample_and_tells_each_step() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("r.sqlite")).unwrap();
    let args = "-s 0 -n 20 -t 1 -S 0 -L 1"
        .split_whitespace()
        .map(String::from)
        .collect();
    let w = crate::engines::build(&EngineSpec::FsMark { args }).unwrap();
    let p = plan(
        vec![planned("tiny", w)],
        Sites::Scratch(dir.path().to_path_buf()),
        2,
    );
    let rec = Recorder::default();
    let r = run(&p, &mut store, &CancelToken::new(), &rec).unwrap();
    assert_eq!(r.status, RunStatus::Complete);
    assert_eq!(r.samples.len(), 2);
    assert!(r.closing.is_none(), "no earlier run to compare with");
    let back = store.samples(r.run_id).unwrap();
    assert_eq!(back.len(), 2);
    let seq: Vec<u32> = back.iter().map(|s| s.sample.sequence).collect();
    assert_eq!(seq, [1, 2]);
    let head = back[0].sample.metrics.iter().find(|m| m.headline).unwrap();
    assert_eq!(head.name, "files_per_sec");
    assert!(head.value > 0.0);
    assert_eq!(back[0].sample.facts.extra["config"], "scratch");
    let overhead = back[0]
        .sample
        .metrics
        .iter()
        .find(|m| m.name == "overhead_s")
        .unwrap();
    assert!(overhead.value >= 0.0 && overhead.value < back[0].sample.duration_s);
    assert!(r.workload_s() > 0.0 && r.workload_s() <= r.wall_s);
    assert_eq!(
        store.run(r.run_id).unwrap().unwrap().status,
        RunStatus::Complete
    );
    let kinds: Vec<&str> = rec
        .events()
        .iter()
        .filter(|e| !matches!(e, Event::Phase { .. }))
        .map(|e| match e {
            Event::RunStarted { .. } => "run",
            Event::SampleStarted { .. } => "start",
            Event::SampleEnded { .. } => "end",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["run", "start", "end", "start", "end"]);
    assert!(
        leftovers(dir.path()).is_empty(),
        "the scratch directory is removed"
    );
    // A second run of the same suite is compared with the first, for information.
    let r2 = run(&p, &mut store, &CancelToken::new(), &Silent).unwrap();
    assert_eq!(
        r2.closing,
        Some(Closing {
            baseline: r.run_id.to_string(),
            gating: false
        })
    );
}

#[test]
fn a_store_that_refuses_samples_stops_the_run_failed_and_keeps_what_it_stored() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = FailAfter::new(MemoryStore::new(), 2);
    let p = plan(
        vec![planned("null", Box::new(Null::new()))],
        Sites::Scratch(dir.path().to_path_buf()),
        5,
    );
    let e = run(&p, &mut store, &CancelToken::new(), &Silent).unwrap_err();
    assert!(matches!(e, RunError::Stopped { run_id: 1, .. }), "{e}");
    assert!(e.to_string().contains("finished samples are kept"), "{e}");
    assert!(e.to_string().contains("disk is full"), "{e}");
    let info = store.inner.run(1).unwrap().unwrap();
    assert_eq!(info.status, RunStatus::Failed);
    assert_eq!(store.inner.samples(1).unwrap().len(), 2);
    assert!(
        leftovers(dir.path()).is_empty(),
        "torn down after the error"
    );
}

#[test]
fn a_cancel_mid_run_ends_aborted_with_the_finished_samples_and_tears_down() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancelToken::new();
    let w = Null::cancelling_on(3, cancel.clone());
    let p = plan(
        vec![planned("null", Box::new(w))],
        Sites::Scratch(dir.path().to_path_buf()),
        5,
    );
    let mut store = MemoryStore::new();
    let r = run(&p, &mut store, &cancel, &Silent).unwrap();
    assert_eq!(r.status, RunStatus::Aborted);
    assert_eq!(r.samples.len(), 2);
    assert!(r.closing.is_none());
    assert_eq!(
        store.run(r.run_id).unwrap().unwrap().status,
        RunStatus::Aborted
    );
    assert_eq!(store.samples(r.run_id).unwrap().len(), 2);
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn a_failing_sample_is_stored_as_failed_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let w = Null::failing_on(&[2]);
    let p = plan(
        vec![planned("null", Box::new(w))],
        Sites::Scratch(dir.path().to_path_buf()),
        3,
    );
    let mut store = MemoryStore::new();
    let rec = Recorder::default();
    let r = run(&p, &mut store, &CancelToken::new(), &rec).unwrap();
    assert_eq!(r.status, RunStatus::Failed);
    assert_eq!(r.failed(), 1);
    let back = store.samples(r.run_id).unwrap();
    assert_eq!(back.len(), 3);
    assert_eq!(back[1].sample.status, SampleStatus::Failed);
    assert!(
        back[1]
            .sample
            .error
            .as_deref()
            .unwrap()
            .contains("scripted failure"),
        "{:?}",
        back[1].sample.error
    );
    assert!(back[1].sample.metrics.is_empty());
    assert!(
        rec.events()
            .iter()
            .any(|e| matches!(e, Event::SampleFailed { .. }))
    );
}

#[test]
fn a_non_finite_metric_is_stored_as_a_failed_sample_with_the_reason() {
    struct Nan;
    impl Workload for Nan {
        fn engine(&self) -> &'static str {
            "nan"
        }
        fn run(
            &self,
            _: &crate::workload::RunContext<'_>,
        ) -> Result<Measurements, crate::workload::WorkloadError> {
            Ok(Measurements {
                metrics: vec![crate::model::Metric::new(
                    "x",
                    f64::NAN,
                    crate::model::Unit::Count,
                    crate::model::Direction::Neutral,
                )],
                ..Measurements::default()
            })
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        vec![planned("nan", Box::new(Nan))],
        Sites::Scratch(dir.path().to_path_buf()),
        1,
    );
    let mut store = MemoryStore::new();
    let r = run(&p, &mut store, &CancelToken::new(), &Silent).unwrap();
    let back = store.samples(r.run_id).unwrap();
    assert_eq!(back[0].sample.status, SampleStatus::Failed);
    assert!(
        back[0]
            .sample
            .error
            .as_deref()
            .unwrap()
            .contains("not stored as measured")
    );
}

#[test]
fn rotate_alternates_the_positions_of_two_configurations() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        vec![planned("null", Box::new(Null::new()))],
        two_dirs(dir.path()),
        4,
    );
    let mut store = MemoryStore::new();
    let r = run(&p, &mut store, &CancelToken::new(), &Silent).unwrap();
    assert_eq!(r.status, RunStatus::Complete);
    let mut back = store.samples(r.run_id).unwrap();
    back.sort_by_key(|s| s.sample.sequence);
    let order: Vec<(u32, &str)> = back
        .iter()
        .map(|s| (s.sample.repetition, s.sample.config.as_str()))
        .collect();
    assert_eq!(
        order,
        [
            (1, "a"),
            (1, "b"),
            (2, "b"),
            (2, "a"),
            (3, "a"),
            (3, "b"),
            (4, "b"),
            (4, "a")
        ]
    );
    assert!(
        back.iter()
            .all(|s| s.sample.facts.extra["order"] == "rotate")
    );
}

#[test]
fn a_baseline_that_matches_nothing_fails_before_the_run_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = plan(
        vec![planned("null", Box::new(Null::new()))],
        Sites::Scratch(dir.path().to_path_buf()),
        1,
    );
    p.baseline = Baseline::Runs("9999".into());
    let mut store = MemoryStore::new();
    let e = run(&p, &mut store, &CancelToken::new(), &Silent).unwrap_err();
    assert!(e.to_string().contains("9999"), "{e}");
    assert!(store.runs(&RunFilter::default()).unwrap().is_empty());
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn until_confident_adds_repetitions_only_while_the_headline_is_unresolved() {
    let dir = tempfile::tempdir().unwrap();
    let w = Null::new();
    let calls = w.clone();
    let mut p = plan(
        vec![planned("null", Box::new(w))],
        Sites::Scratch(dir.path().to_path_buf()),
        2,
    );
    p.until_confident = Some(UntilConfident {
        max_repeat: 6,
        margins: Margins::default(),
        pairs: Vec::new(),
        repeat_disturbed: false,
        planned_from: None,
    });
    let mut store = MemoryStore::new();
    let r = run(&p, &mut store, &CancelToken::new(), &Silent).unwrap();
    // The null workload's values differ by 0.1 %: two repetitions resolve it.
    assert_eq!(r.samples.len(), 2);
    assert_eq!(calls.calls(), 2);
}

#[test]
fn a_sample_the_store_refuses_for_good_is_stored_failed_not_journaled_and_the_run_fails() {
    // A metric named twice (as a command test's metric named like one fsdelta records, such
    // as sys_idle_pct, was): the store's constraint refuses it, which waiting cannot change.
    struct Twice;
    impl Workload for Twice {
        fn engine(&self) -> &'static str {
            "twice"
        }
        fn run(
            &self,
            _: &crate::workload::RunContext<'_>,
        ) -> Result<Measurements, crate::workload::WorkloadError> {
            let m = || {
                crate::model::Metric::new(
                    "sys_idle_pct",
                    1.0,
                    crate::model::Unit::Percent,
                    crate::model::Direction::Neutral,
                )
            };
            Ok(Measurements {
                metrics: vec![m(), m()],
                ..Measurements::default()
            })
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let p = plan(
        vec![planned("twice", Box::new(Twice))],
        Sites::Scratch(dir.path().to_path_buf()),
        2,
    );
    let mut store = SqliteStore::open(&db).unwrap();
    let rec = Recorder::default();
    let r = run(&p, &mut store, &CancelToken::new(), &rec).unwrap();
    assert_eq!(r.status, RunStatus::Failed, "not `complete` with 0 samples");
    assert_eq!(r.failed(), 2);
    assert!(r.unsaved.is_none(), "{:?}", r.unsaved);
    let back = store.samples(r.run_id).unwrap();
    assert_eq!(back.len(), 2, "both stored, as failed");
    for s in &back {
        assert_eq!(s.sample.status, SampleStatus::Failed);
        let e = s.sample.error.as_deref().unwrap();
        assert!(
            e.contains("not stored as measured") && e.contains("sys_idle_pct"),
            "{e}"
        );
    }
    assert!(
        !crate::store::journal::path_beside(&db).exists(),
        "nothing left in a journal to be retried forever"
    );
    assert_eq!(
        store.run(r.run_id).unwrap().unwrap().status,
        RunStatus::Failed
    );
}

#[test]
fn a_sample_refused_even_as_failed_is_set_aside_and_the_error_says_where() {
    // A store that refuses every sample for good (here: a run id it does not hold).
    struct Gone(SqliteStore);
    impl Store for Gone {
        fn create_run(&mut self, r: &NewRun) -> Result<RunId, StoreError> {
            self.0.create_run(r).map(|id| id + 1000)
        }
        fn add_sample(&mut self, run: RunId, s: &NewSample) -> Result<i64, StoreError> {
            self.0.add_sample(run, s)
        }
        fn finish_run(
            &mut self,
            run: RunId,
            st: RunStatus,
            at: chrono::DateTime<Utc>,
        ) -> Result<(), StoreError> {
            self.0.finish_run(run - 1000, st, at)
        }
        fn runs(&self, f: &RunFilter) -> Result<Vec<crate::model::RunInfo>, StoreError> {
            self.0.runs(f)
        }
        fn run(&self, id: RunId) -> Result<Option<crate::model::RunInfo>, StoreError> {
            self.0.run(id)
        }
        fn samples(&self, run: RunId) -> Result<Vec<SampleRecord>, StoreError> {
            self.0.samples(run)
        }
        fn add_profile(
            &mut self,
            s: i64,
            p: &crate::model::StoredProfile,
        ) -> Result<(), StoreError> {
            self.0.add_profile(s, p)
        }
        fn profile(&self, s: i64) -> Result<Option<crate::model::StoredProfile>, StoreError> {
            self.0.profile(s)
        }
        fn run_by_uuid(&self, u: &str) -> Result<Option<crate::model::RunInfo>, StoreError> {
            self.0.run_by_uuid(u)
        }
        fn import_run(
            &mut self,
            u: &str,
            r: &crate::model::RunInfo,
            s: &[crate::store::SampleCopy],
        ) -> Result<RunId, StoreError> {
            self.0.import_run(u, r, s)
        }
        fn journal_path(&self) -> Option<std::path::PathBuf> {
            self.0.journal_path()
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.sqlite");
    let p = plan(
        vec![planned("null", Box::new(Null::new()))],
        Sites::Scratch(dir.path().to_path_buf()),
        1,
    );
    let mut store = Gone(SqliteStore::open(&db).unwrap());
    let e = run(&p, &mut store, &CancelToken::new(), &Silent)
        .unwrap_err()
        .to_string();
    let aside = crate::os::files::sibling(&crate::store::journal::path_beside(&db), ".refused");
    assert!(e.contains(&format!("kept in {}", aside.display())), "{e}");
    let text = std::fs::read_to_string(&aside).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.contains("\"test\":\"null\""), "{text}");
    assert!(!crate::store::journal::path_beside(&db).exists());
}

/// A workload whose headline follows the same fixed sequence on each configuration (each keeps
/// its own count), so that two configurations are an A/A with a known spread.
struct Scripted {
    values: Vec<f64>,
    calls: std::sync::Mutex<std::collections::BTreeMap<String, usize>>,
}

impl Workload for Scripted {
    fn engine(&self) -> &'static str {
        "scripted"
    }

    fn run(
        &self,
        ctx: &crate::workload::RunContext<'_>,
    ) -> Result<Measurements, crate::workload::WorkloadError> {
        let side = if ctx.dir.to_string_lossy().contains("/a/") {
            "a"
        } else {
            "b"
        };
        let mut calls = self.calls.lock().unwrap();
        let n = calls.entry(side.into()).or_default();
        let v = self.values[*n % self.values.len()];
        *n += 1;
        Ok(Measurements {
            metrics: vec![
                Metric::new("ops_per_sec", v, Unit::OpsPerSec, Direction::HigherIsBetter)
                    .headline(),
            ],
            ..Measurements::default()
        })
    }
}

/// `--until-confident` with two configurations of the run as a pair (an A/A): the run goes on
/// until the verdict of b against a is resolved, and it is "unchanged". Judged each on its own
/// (no pair), both stop as soon as their own intervals are tight, before the difference is.
fn a_over_b(
    values: &[f64],
    pairs: Vec<(String, String)>,
) -> (usize, crate::compare::verdict::Verdict) {
    let dir = tempfile::tempdir().unwrap();
    let w = Scripted {
        values: values.to_vec(),
        calls: Default::default(),
    };
    let mut p = plan(vec![planned("aa", Box::new(w))], two_dirs(dir.path()), 2);
    p.until_confident = Some(UntilConfident {
        max_repeat: 20,
        margins: Margins::default(),
        pairs,
        repeat_disturbed: false,
        planned_from: None,
    });
    let mut store = MemoryStore::new();
    let r = run(&p, &mut store, &CancelToken::new(), &Silent).unwrap();
    let side = |c: &str| -> Vec<f64> {
        r.samples
            .iter()
            .filter(|s| s.config == c)
            .map(|s| s.metrics[0].value)
            .collect()
    };
    let (a, b) = (side("a"), side("b"));
    assert_eq!(a.len(), b.len());
    let v = crate::compare::verdict::compare(
        &a,
        &b,
        Direction::HigherIsBetter,
        crate::compare::verdict::MetricClass::Throughput,
        &Margins::default(),
    )
    .verdict;
    (a.len(), v)
}

#[test]
fn until_confident_runs_a_pair_of_configurations_until_their_verdict_is_resolved() {
    // The same values on both sides: each side's own interval is inside the band after 4
    // repetitions, the interval of their difference only after 5.
    let values = [103.0, 97.0, 100.0];
    let (n, v) = a_over_b(&values, vec![("a".into(), "b".into())]);
    assert_eq!(v, crate::compare::verdict::Verdict::Unchanged, "after {n}");
    // Each on its own (as before pairs existed), the run stops with the A/A unresolved.
    let (alone, v_alone) = a_over_b(&values, Vec::new());
    assert!(alone < n, "each alone {alone}, pair {n}");
    assert_eq!(
        v_alone,
        crate::compare::verdict::Verdict::Inconclusive,
        "after {alone}"
    );
}

#[test]
fn every_host_sample_records_the_machine_settings_read_as_it_was_prepared() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = MemoryStore::new();
    let p = plan(
        vec![planned("null", Box::new(Null::new()))],
        two_dirs(dir.path()),
        2,
    );
    let r = run(&p, &mut store, &CancelToken::new(), &Silent).unwrap();
    assert_eq!(r.status, RunStatus::Complete);
    let swappiness = std::fs::read_to_string("/proc/sys/vm/swappiness").unwrap();
    let back = store.samples(r.run_id).unwrap();
    assert_eq!(back.len(), 4);
    for s in &back {
        let x = &s.sample.facts.extra;
        assert_eq!(
            x.get("machine.vm.swappiness").map(String::as_str),
            Some(swappiness.trim()),
            "{}: {x:?}",
            s.sample.config
        );
        assert_eq!(
            x.get("machine.kernel.cmdline"),
            crate::probe::hygiene::facts("").get("machine.kernel.cmdline"),
        );
    }
}
