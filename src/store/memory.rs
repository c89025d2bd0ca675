//! Stores for tests: [`MemoryStore`] keeps everything in memory with the same semantics as the
//! SQLite store (a sample is stored whole or not at all, non-finite metrics refused, runs
//! `running` until finished, newest first, a UUID per run), and [`FailAfter`] wraps any store and refuses every
//! sample write after the first N, so that the run engine's fault paths are tested without a
//! real disk filling up.
//!
//! Never used by the command line for real results: nothing here is durable.

use super::forward::forward_store;
use super::{RunFilter, SampleCopy, Store, StoreError};
use crate::model::{
    NewRun, NewSample, RunId, RunInfo, RunStatus, SampleId, SampleRecord, StoredProfile,
};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// Everything in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    runs: Vec<RunInfo>,
    /// The UUID of each run, by position in `runs`.
    uuids: Vec<String>,
    samples: Vec<SampleRecord>,
    profiles: BTreeMap<SampleId, StoredProfile>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }
}

impl Store for MemoryStore {
    fn create_run(&mut self, run: &NewRun) -> Result<RunId, StoreError> {
        let id = self.runs.len() as RunId + 1;
        self.runs.push(RunInfo {
            id,
            label: run.label.clone(),
            suite: run.suite.clone(),
            started_at: run.started_at,
            finished_at: None,
            status: RunStatus::Running,
            fsdelta_version: run.fsdelta_version.clone(),
            environment: run.environment.clone(),
            sample_count: 0,
        });
        self.uuids.push(super::new_run_uuid());
        Ok(id)
    }

    fn add_sample(&mut self, run: RunId, sample: &NewSample) -> Result<SampleId, StoreError> {
        check_finite(sample)?;
        let info = self
            .runs
            .iter_mut()
            .find(|r| r.id == run)
            .ok_or_else(|| StoreError::NoMatch(run.to_string()))?;
        info.sample_count += 1;
        let id = self.samples.len() as SampleId + 1;
        self.samples.push(SampleRecord {
            id,
            run_id: run,
            sample: sample.clone(),
        });
        Ok(id)
    }

    fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        finished_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let info = self
            .runs
            .iter_mut()
            .find(|r| r.id == run)
            .ok_or_else(|| StoreError::NoMatch(run.to_string()))?;
        info.status = status;
        info.finished_at = Some(finished_at);
        Ok(())
    }

    fn runs(&self, filter: &RunFilter) -> Result<Vec<RunInfo>, StoreError> {
        Ok(self
            .runs
            .iter()
            .rev()
            .filter(|r| filter.label.as_ref().is_none_or(|l| &r.label == l))
            .take(filter.limit.unwrap_or(usize::MAX))
            .cloned()
            .collect())
    }

    fn run(&self, id: RunId) -> Result<Option<RunInfo>, StoreError> {
        Ok(self.runs.iter().find(|r| r.id == id).cloned())
    }

    fn samples(&self, run: RunId) -> Result<Vec<SampleRecord>, StoreError> {
        Ok(self
            .samples
            .iter()
            .filter(|s| s.run_id == run)
            .map(|s| {
                let mut s = s.clone();
                s.sample.attachments.clear();
                s
            })
            .collect())
    }

    fn attachments(&self, sample: SampleId) -> Result<Vec<crate::model::Attachment>, StoreError> {
        let mut a = self
            .samples
            .iter()
            .find(|s| s.id == sample)
            .map(|s| s.sample.attachments.clone())
            .unwrap_or_default();
        a.sort_by(|x, y| x.name.cmp(&y.name));
        Ok(a)
    }

    fn add_profile(&mut self, sample: SampleId, profile: &StoredProfile) -> Result<(), StoreError> {
        if !self.samples.iter().any(|s| s.id == sample) {
            return Err(StoreError::NoMatch(format!(
                "{sample} (sample id for a profile)"
            )));
        }
        if self.profiles.contains_key(&sample) {
            return Err(StoreError::Backend(format!(
                "sample {sample} already has a profile"
            )));
        }
        self.profiles.insert(sample, profile.clone());
        Ok(())
    }

    fn profile(&self, sample: SampleId) -> Result<Option<StoredProfile>, StoreError> {
        Ok(self.profiles.get(&sample).cloned())
    }

    fn run_uuid(&self, id: RunId) -> Result<Option<String>, StoreError> {
        Ok(self
            .runs
            .iter()
            .position(|r| r.id == id)
            .map(|i| self.uuids[i].clone()))
    }

    fn run_by_uuid(&self, uuid: &str) -> Result<Option<RunInfo>, StoreError> {
        Ok(self
            .uuids
            .iter()
            .position(|u| u == uuid)
            .map(|i| self.runs[i].clone()))
    }

    fn import_run(
        &mut self,
        uuid: &str,
        run: &RunInfo,
        samples: &[SampleCopy],
    ) -> Result<RunId, StoreError> {
        if self.uuids.iter().any(|u| u == uuid) {
            return Err(StoreError::UuidTaken(uuid.to_string()));
        }
        for s in samples {
            check_finite(&s.sample)?;
            let x = &s.sample;
            for (what, mut names) in [
                (
                    "metrics",
                    x.metrics.iter().map(|m| &*m.name).collect::<Vec<_>>(),
                ),
                (
                    "histograms",
                    x.histograms.iter().map(|h| &*h.name).collect(),
                ),
                (
                    "attachments",
                    x.attachments.iter().map(|a| &*a.name).collect(),
                ),
            ] {
                names.sort_unstable();
                if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
                    return Err(StoreError::Backend(format!(
                        "test '{}': two {what} named '{}'",
                        x.test, w[0]
                    )));
                }
            }
        }
        let id = self.runs.len() as RunId + 1;
        self.runs.push(RunInfo {
            id,
            sample_count: samples.len() as u64,
            ..run.clone()
        });
        self.uuids.push(uuid.to_string());
        for s in samples {
            let sid = self.samples.len() as SampleId + 1;
            self.samples.push(SampleRecord {
                id: sid,
                run_id: id,
                sample: s.sample.clone(),
            });
            if let Some(p) = &s.profile {
                self.profiles.insert(sid, p.clone());
            }
        }
        Ok(id)
    }
}

fn check_finite(sample: &NewSample) -> Result<(), StoreError> {
    match sample.metrics.iter().find(|m| !m.value.is_finite()) {
        Some(m) => Err(StoreError::Backend(format!(
            "metric '{}' of test '{}' is {} (not a finite number); the sample is not stored as measured",
            m.name, sample.test, m.value
        ))),
        None => Ok(()),
    }
}

/// A store that refuses every sample write after the first `ok` (a disk that fills, a lock
/// held forever); everything else passes through.
pub struct FailAfter<S: Store> {
    /// The wrapped store (read it back after the run).
    pub inner: S,
    ok: usize,
    written: usize,
}

impl<S: Store> FailAfter<S> {
    /// Let `ok` sample writes through, then refuse.
    pub fn new(inner: S, ok: usize) -> FailAfter<S> {
        FailAfter {
            inner,
            ok,
            written: 0,
        }
    }
}

impl<S: Store> Store for FailAfter<S> {
    forward_store!(inner: create_run, finish_run, runs, run, samples, add_profile, profile, run_uuid,
        run_by_uuid);
    fn add_sample(&mut self, run: RunId, sample: &NewSample) -> Result<SampleId, StoreError> {
        if self.written >= self.ok {
            return Err(StoreError::Backend(
                "database or disk is full (injected after {} samples)"
                    .replace("{}", &self.ok.to_string()),
            ));
        }
        self.written += 1;
        self.inner.add_sample(run, sample)
    }
    /// Counts every sample of the run as a write: refused whole when it would pass the limit.
    fn import_run(
        &mut self,
        uuid: &str,
        run: &RunInfo,
        samples: &[SampleCopy],
    ) -> Result<RunId, StoreError> {
        if self.written + samples.len() > self.ok {
            return Err(StoreError::Backend(format!(
                "database or disk is full (injected after {} samples)",
                self.ok
            )));
        }
        let id = self.inner.import_run(uuid, run, samples)?;
        self.written += samples.len();
        Ok(id)
    }
}
