//! Copying runs from one store to another (`fsdelta sync`): a developer's laptop runs join the
//! lab's history, or a lab's runs come home to a laptop.
//!
//! Why a module of its own: the copy is only [`Store`] calls (list, read, one
//! [`Store::import_run`] per run), so it works between any two backends, and the command line
//! only parses and prints.
//!
//! Invariants:
//! - A run is known by its UUID (schema 6), the same in every store it is copied to; a run
//!   whose UUID the destination holds is skipped, so syncing twice copies nothing, and syncing
//!   both ways between two stores leaves both holding the same runs.
//! - A run is copied whole (samples, metrics, histograms, attachments, profiles) in one
//!   transaction of the destination, or not at all; a failure keeps the runs copied before it,
//!   and syncing again copies the rest.
//! - A run still `running` in the source is not copied: its samples are not all there yet, and
//!   once a run is copied it is never looked at again, so a copy taken now would stay short
//!   forever. It is reported, and a later sync copies it once it has ended (a run whose fsdelta
//!   died is marked `aborted` by `fsdelta cleanup` or the next `run` on its machine).
//! - Runs are copied oldest first, so their new ids in the destination follow their order in
//!   the source.

use super::{RunFilter, SampleCopy, Store, StoreError};
use crate::model::{RunId, RunInfo, RunStatus};

/// One run copied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopiedRun {
    /// Its id in the source.
    pub source: RunId,
    /// Its new id in the destination.
    pub destination: RunId,
    /// Its UUID (the same on both sides).
    pub uuid: String,
    /// Its label.
    pub label: String,
    /// How many samples came with it.
    pub samples: usize,
}

/// What a sync did.
#[derive(Clone, Debug, Default)]
pub struct CopyReport {
    /// The runs copied, oldest first.
    pub copied: Vec<CopiedRun>,
    /// How many runs of the source the destination already held.
    pub already: usize,
    /// The runs still `running` in the source, not copied.
    pub running: Vec<RunInfo>,
}

impl CopyReport {
    /// Samples copied, over all copied runs.
    pub fn samples(&self) -> usize {
        self.copied.iter().map(|c| c.samples).sum()
    }
}

/// Why a sync stopped. Runs copied before the error stay copied.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// The source could not be read.
    #[error("cannot read the source store: {0}")]
    Source(StoreError),
    /// A source run without a UUID (a store that keeps none).
    #[error(
        "run {0} of the source has no UUID, so the destination cannot tell whether it holds it already; open the source for writing once (`fsdelta cleanup --db SOURCE` is enough) to give its runs UUIDs, then sync again"
    )]
    NoUuid(RunId),
    /// The destination could not be read.
    #[error("cannot read the destination store: {0}")]
    Destination(StoreError),
    /// A run could not be written to the destination.
    #[error(
        "cannot copy run {run} (UUID {uuid}) into the destination: {error}; nothing of that run was written, the {copied} run(s) copied before it are kept, and syncing again copies the rest"
    )]
    Copy {
        /// The run's id in the source.
        run: RunId,
        /// Its UUID.
        uuid: String,
        /// Runs copied before it.
        copied: usize,
        /// What the destination said.
        error: StoreError,
    },
}

/// Copy every run of `from` that `to` does not hold (by UUID) and that has ended, with all
/// its samples, oldest first; each run in one transaction of `to`.
pub fn copy_runs(from: &dyn Store, to: &mut dyn Store) -> Result<CopyReport, CopyError> {
    let mut runs = from
        .runs(&RunFilter::default())
        .map_err(CopyError::Source)?;
    runs.reverse();
    let mut report = CopyReport::default();
    for run in runs {
        let uuid = from
            .run_uuid(run.id)
            .map_err(CopyError::Source)?
            .ok_or(CopyError::NoUuid(run.id))?;
        if to
            .run_by_uuid(&uuid)
            .map_err(CopyError::Destination)?
            .is_some()
        {
            report.already += 1;
            continue;
        }
        if run.status == RunStatus::Running {
            report.running.push(run);
            continue;
        }
        let samples = read_whole(from, run.id).map_err(CopyError::Source)?;
        match to.import_run(&uuid, &run, &samples) {
            Ok(id) => report.copied.push(CopiedRun {
                source: run.id,
                destination: id,
                uuid,
                label: run.label,
                samples: samples.len(),
            }),
            // Another sync copied it between our look and our write.
            Err(StoreError::UuidTaken(_)) => report.already += 1,
            Err(error) => {
                return Err(CopyError::Copy {
                    run: run.id,
                    uuid,
                    copied: report.copied.len(),
                    error,
                });
            }
        }
    }
    Ok(report)
}

/// Every sample of `run` with everything kept beside it: attachments and profile.
fn read_whole(from: &dyn Store, run: RunId) -> Result<Vec<SampleCopy>, StoreError> {
    from.samples(run)?
        .into_iter()
        .map(|rec| {
            let mut sample = rec.sample;
            sample.attachments = from.attachments(rec.id)?;
            Ok(SampleCopy {
                sample,
                profile: from.profile(rec.id)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        Direction, Environment, Metric, NewRun, NewSample, SampleStatus, SiteFacts, Unit,
    };
    use crate::store::memory::{FailAfter, MemoryStore};
    use chrono::Utc;

    fn run(store: &mut dyn Store, label: &str, samples: u32, end: Option<RunStatus>) -> RunId {
        let id = store
            .create_run(&NewRun {
                label: label.into(),
                suite: "quick".into(),
                started_at: Utc::now(),
                fsdelta_version: "0.1.0".into(),
                environment: Environment {
                    host: "laptop".into(),
                    ..Environment::default()
                },
            })
            .unwrap();
        for rep in 1..=samples {
            store
                .add_sample(
                    id,
                    &NewSample {
                        config: "scratch".into(),
                        test: "t".into(),
                        repetition: rep,
                        sequence: rep,
                        facts: SiteFacts::default(),
                        status: SampleStatus::Ok,
                        error: None,
                        started_at: Utc::now(),
                        duration_s: 1.0,
                        workload: "w".into(),
                        metrics: vec![Metric::new(
                            "iops",
                            rep as f64,
                            Unit::OpsPerSec,
                            Direction::HigherIsBetter,
                        )],
                        histograms: vec![],
                        attachments: vec![],
                    },
                )
                .unwrap();
        }
        if let Some(status) = end {
            store.finish_run(id, status, Utc::now()).unwrap();
        }
        id
    }

    #[test]
    fn runs_are_copied_oldest_first_and_once() {
        let mut from = MemoryStore::new();
        run(&mut from, "old", 2, Some(RunStatus::Complete));
        run(&mut from, "new", 1, Some(RunStatus::Aborted));
        let mut to = MemoryStore::new();
        let r = copy_runs(&from, &mut to).unwrap();
        let labels: Vec<&str> = r.copied.iter().map(|c| c.label.as_str()).collect();
        assert_eq!(labels, ["old", "new"]);
        assert_eq!(r.samples(), 3);
        assert_eq!((r.already, r.running.len()), (0, 0));
        let again = copy_runs(&from, &mut to).unwrap();
        assert!(again.copied.is_empty());
        assert_eq!(again.already, 2);
    }

    #[test]
    fn a_running_run_waits_until_it_has_ended() {
        let mut from = MemoryStore::new();
        let live = run(&mut from, "live", 1, None);
        let mut to = MemoryStore::new();
        let r = copy_runs(&from, &mut to).unwrap();
        assert!(r.copied.is_empty());
        assert_eq!(r.running[0].id, live);
        from.finish_run(live, RunStatus::Complete, Utc::now())
            .unwrap();
        let r = copy_runs(&from, &mut to).unwrap();
        assert_eq!(r.copied.len(), 1);
        assert_eq!(r.samples(), 1);
    }

    #[test]
    fn a_refused_run_keeps_the_runs_before_it_and_says_how_to_go_on() {
        let mut from = MemoryStore::new();
        run(&mut from, "a", 2, Some(RunStatus::Complete));
        run(&mut from, "b", 2, Some(RunStatus::Complete));
        let mut to = FailAfter::new(MemoryStore::new(), 3);
        let e = copy_runs(&from, &mut to).unwrap_err();
        assert!(
            matches!(
                e,
                CopyError::Copy {
                    run: 2,
                    copied: 1,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().contains("syncing again copies the rest"),
            "{e}"
        );
        let held = to.inner.runs(&RunFilter::default()).unwrap();
        assert_eq!(held.len(), 1, "run b written not at all");
        assert_eq!(held[0].label, "a");
        let mut rest = to.inner;
        let r = copy_runs(&from, &mut rest).unwrap();
        assert_eq!((r.copied.len(), r.already), (1, 1));
    }
}
