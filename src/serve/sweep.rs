//! The alert sweep: what becomes an alert. Every change point of a headline metric's history per
//! machine and configuration (the same E-divisive rule as `fsdelta history`, over the newest
//! [`SWEEP_RUNS`] ended runs of the machine), and every regressed metric of a fleet job whose
//! comparison with its baseline said REGRESSED. Each is written once ([`NewAlert::key`]); an
//! alert found again keeps its triage.
//!
//! Why here: raising an alert is deciding what a lab must look at, which is the server's job;
//! finding the change is `compare`'s and keeping it the store's. This module must never write
//! anything but alerts, and never judge a job other than by `compare::judge`.

use crate::compare::{self, changepoint::Options, verdict::MetricClass, verdict::Verdict};
use crate::model::{MetricKind, RunId, RunInfo, RunStatus};
use crate::store::{NewAlert, RunFilter, Store, StoreError};
use std::collections::BTreeMap;

/// How many of a machine's newest ended runs the sweep reads per history.
pub const SWEEP_RUNS: usize = 200;

/// How many of the newest finished fleet jobs the sweep reads.
pub const SWEEP_JOBS: usize = 200;

/// The ended runs of each machine (host name), newest [`SWEEP_RUNS`], oldest first.
pub fn runs_by_machine(store: &dyn Store) -> Result<BTreeMap<String, Vec<RunInfo>>, StoreError> {
    let mut by: BTreeMap<String, Vec<RunInfo>> = BTreeMap::new();
    for r in store.runs(&RunFilter::default())? {
        if r.status == RunStatus::Running {
            continue;
        }
        let v = by.entry(r.environment.host.clone()).or_default();
        if v.len() < SWEEP_RUNS {
            v.push(r);
        }
    }
    for v in by.values_mut() {
        v.reverse();
    }
    Ok(by)
}

/// Every value of a (test, metric) over every run ([`Store::metric_points`]: one query), read
/// once per sweep for all machines.
pub type PointCache = BTreeMap<(String, String), Vec<crate::model::MetricPoint>>;

/// The change-point alerts of one machine's runs (oldest first): headline metrics of its
/// newest run, each history's change points. The values come from [`Store::metric_points`]
/// (one query per test and metric, shared by the machines through `cache`), not from every
/// sample of every run.
pub fn change_point_alerts(
    store: &dyn Store,
    machine: &str,
    runs: &[RunInfo],
    cache: &mut PointCache,
) -> Result<Vec<NewAlert>, StoreError> {
    let Some(newest) = runs.last() else {
        return Ok(Vec::new());
    };
    let mut kinds: BTreeMap<(String, String, String), (MetricKind, String)> = BTreeMap::new();
    for s in store.sample_metrics(&[newest.id])? {
        for m in s.sample.metrics.iter().filter(|m| m.headline) {
            kinds.insert(
                (
                    s.sample.config.clone(),
                    s.sample.test.clone(),
                    m.name.clone(),
                ),
                (m.kind, m.unit.to_string()),
            );
        }
    }
    let order: BTreeMap<RunId, usize> = runs.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
    let mut out = Vec::new();
    for (k, (kind, unit)) in &kinds {
        let (config, test, metric) = k;
        let key = (test.clone(), metric.clone());
        if !cache.contains_key(&key) {
            let points = store.metric_points(test, metric)?;
            cache.insert(key.clone(), points);
        }
        let mut values: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
        for p in &cache[&key] {
            if p.config == *config
                && let Some(&i) = order.get(&p.run_id)
            {
                values.entry(i).or_default().push(p.metric.value);
            }
        }
        let points: Vec<(RunId, f64)> = values
            .iter()
            .filter_map(|(&i, v)| crate::model::median(v).map(|m| (runs[i].id, m)))
            .collect();
        let series: Vec<f64> = points.iter().map(|p| p.1).collect();
        let (cps, _) =
            compare::history::detect(&series, &Options::for_class(MetricClass::of(*kind)));
        for cp in cps {
            let (before, after) = (points[cp.index - 1].0, points[cp.index].0);
            out.push(NewAlert {
                key: format!("cp:{machine}:{config}:{test}:{metric}:{after}"),
                kind: crate::store::AlertKind::ChangePoint,
                machine: machine.to_string(),
                config: config.clone(),
                test: test.clone(),
                metric: metric.clone(),
                size: cp.ratio.map_or(0.0, |r| r - 1.0),
                unit: unit.clone(),
                detected_at: runs[order[&after]].started_at,
                before_run: before,
                after_run: after,
            });
        }
    }
    Ok(out)
}

/// The baseline selector of a job's verdict line (`REGRESSED vs SEL: ...`), when it regressed.
pub fn regressed_baseline(verdict: &str) -> Option<&str> {
    let rest = verdict.strip_prefix("REGRESSED vs ")?;
    let end = rest.rfind(": ")?;
    Some(&rest[..end])
}

/// The alerts of a job that regressed against `baseline`: one per regressed metric of the
/// comparison of its run with the baseline (judged again, as the agent did).
pub fn regressed_alerts(
    store: &dyn Store,
    job: i64,
    run: RunId,
    baseline: &str,
) -> Result<Vec<NewAlert>, crate::read::ReadError> {
    let filter = crate::read::Filter::default();
    let sides = crate::read::sides(store, baseline, &run.to_string(), &filter)?;
    let Ok(rows) = compare::judge::judge(&sides, &compare::Criteria::default()) else {
        return Ok(Vec::new());
    };
    let before = sides.base.runs.first().map_or(run, |r| r.id);
    let (machine, at) = sides
        .cur
        .runs
        .first()
        .map(|r| (r.environment.host.clone(), r.started_at))
        .unwrap_or_default();
    Ok(rows
        .iter()
        .filter(|j| j.comparison.verdict == Verdict::Regressed)
        .map(|j| NewAlert {
            key: format!("job:{job}:{}:{}:{}", j.key.config, j.key.test, j.key.metric),
            kind: crate::store::AlertKind::Regressed,
            machine: machine.clone(),
            config: j.key.config.clone(),
            test: j.key.test.clone(),
            metric: j.key.metric.clone(),
            size: j.comparison.diff_pct.map_or(0.0, |p| p / 100.0),
            unit: j.unit.to_string(),
            detected_at: at,
            before_run: before,
            after_run: run,
        })
        .collect())
}

/// Every alert the store's runs (and, on PostgreSQL, the fleet's finished jobs) raise now.
pub fn find(store: &dyn Store, location: &str) -> Result<Vec<NewAlert>, StoreError> {
    let mut out = Vec::new();
    let mut cache = PointCache::new();
    for (machine, runs) in runs_by_machine(store)? {
        out.extend(change_point_alerts(store, &machine, &runs, &mut cache)?);
    }
    if crate::store::Backend::of(location) == crate::store::Backend::Postgres {
        let jobs = crate::queue::Queue::connect(location)
            .and_then(|mut q| q.list(&[crate::queue::JobState::Done], SWEEP_JOBS));
        // A store without the queue's tables has no jobs to raise alerts from.
        for j in jobs.unwrap_or_default() {
            let (Some(run), Some(base)) =
                (j.run_id, j.verdict.as_deref().and_then(regressed_baseline))
            else {
                continue;
            };
            match regressed_alerts(store, j.id, run, base) {
                Ok(a) => out.extend(a),
                Err(crate::read::ReadError::Store(e)) if crate::serve::pool::is_away(&e) => {
                    return Err(e);
                }
                // A baseline that no longer resolves raises nothing.
                Err(_) => {}
            }
        }
    }
    Ok(out)
}

/// One sweep of the server: find with a read-only session, write the new ones with the
/// writable one; how many were new.
pub fn sweep_app(app: &super::App) -> Result<usize, StoreError> {
    let ro = app.pool.get()?;
    let found = find(ro.as_ref(), &app.location)?;
    app.pool.put(ro);
    app.with_writer(|w| {
        let mut n = 0;
        for a in &found {
            if w.add_alert(a)?.is_some() {
                n += 1;
            }
        }
        Ok(n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Direction, Environment, Metric, NewRun, NewSample, SiteFacts, Unit};
    use crate::store::memory::MemoryStore;
    use chrono::{Duration, TimeZone, Utc};

    /// 12 runs of `m1` (and 12 of `m2`, flat): `files_per_sec` 1000 then 700 from run 7 on.
    fn store() -> MemoryStore {
        let mut s = MemoryStore::new();
        let t0 = Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap();
        for host in ["m1", "m2"] {
            for i in 0..12i64 {
                let run = s
                    .create_run(&NewRun {
                        label: format!("r{i}"),
                        suite: "quick".into(),
                        started_at: t0 + Duration::hours(i),
                        fsdelta_version: "0.1.0".into(),
                        environment: Environment {
                            host: host.into(),
                            ..Environment::default()
                        },
                    })
                    .unwrap();
                let level = if host == "m1" && i >= 6 {
                    700.0
                } else {
                    1000.0
                };
                for rep in 0..3u32 {
                    let v = level + [0.0, 6.0, -5.0][rep as usize] + (i % 3) as f64;
                    let sample = NewSample {
                        config: "ext4".into(),
                        test: "smallfiles".into(),
                        repetition: rep,
                        sequence: rep,
                        facts: SiteFacts::default(),
                        status: crate::model::SampleStatus::Ok,
                        error: None,
                        started_at: t0,
                        duration_s: 1.0,
                        workload: "w".into(),
                        metrics: vec![
                            Metric::new(
                                "files_per_sec",
                                v,
                                Unit::FilesPerSec,
                                Direction::HigherIsBetter,
                            )
                            .headline(),
                            Metric::new("other", v, Unit::FilesPerSec, Direction::HigherIsBetter),
                        ],
                        histograms: Vec::new(),
                        attachments: Vec::new(),
                    };
                    s.add_sample(run, &sample).unwrap();
                }
                s.finish_run(
                    run,
                    RunStatus::Complete,
                    t0 + Duration::hours(i) + Duration::minutes(1),
                )
                .unwrap();
            }
        }
        s
    }

    #[test]
    fn a_change_of_a_headline_metric_is_one_alert_of_its_machine() {
        let s = store();
        let found = find(&s, "results.sqlite").unwrap();
        assert_eq!(found.len(), 1, "{found:#?}");
        let a = &found[0];
        assert_eq!(
            (a.machine.as_str(), a.metric.as_str()),
            ("m1", "files_per_sec")
        );
        assert_eq!((a.before_run, a.after_run), (6, 7));
        assert!((a.size + 0.3).abs() < 0.01, "{}", a.size);
        assert_eq!(a.key, "cp:m1:ext4:smallfiles:files_per_sec:7");
        // Found again, it is the same alert.
        assert_eq!(find(&s, "results.sqlite").unwrap(), found);
    }

    #[test]
    fn a_regressed_job_raises_one_alert_per_regressed_metric() {
        let s = store();
        let a = regressed_alerts(&s, 5, 12, "1").unwrap();
        let metrics: Vec<&str> = a.iter().map(|x| x.metric.as_str()).collect();
        assert_eq!(metrics, vec!["files_per_sec", "other"], "{a:#?}");
        assert!(
            a.iter()
                .all(|x| x.kind == crate::store::AlertKind::Regressed
                    && x.before_run == 1
                    && x.after_run == 12
                    && x.machine == "m1"
                    && x.size < -0.25)
        );
        assert_eq!(a[0].key, "job:5:ext4:smallfiles:files_per_sec");
        // No regression, no alert.
        assert!(regressed_alerts(&s, 6, 11, "10").unwrap().is_empty());
    }

    #[test]
    fn the_baseline_of_a_regressed_verdict_is_read_back() {
        assert_eq!(
            regressed_baseline(
                "REGRESSED vs label:base,host:m1: 2 regressed, 0 improved, 5 unchanged, 0 inconclusive"
            ),
            Some("label:base,host:m1")
        );
        assert_eq!(
            regressed_baseline("no regression vs latest: 0 regressed, 1 improved"),
            None
        );
    }
}
