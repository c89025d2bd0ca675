//! Stores for tests: [`MemoryStore`] keeps everything in memory with the same semantics as the
//! SQLite store (a sample is stored whole or not at all, non-finite metrics refused, runs
//! `running` until finished, newest first), and [`FailAfter`] wraps any store and refuses every
//! sample write after the first N, so that the run engine's fault paths are tested without a
//! real disk filling up.
//!
//! Never used by the command line for real results: nothing here is durable.

use super::{RunFilter, Store, StoreError};
use crate::model::{
    NewRun, NewSample, RunId, RunInfo, RunStatus, SampleId, SampleRecord, StoredProfile,
};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

/// Everything in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    runs: Vec<RunInfo>,
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
        Ok(id)
    }

    fn add_sample(&mut self, run: RunId, sample: &NewSample) -> Result<SampleId, StoreError> {
        if let Some(m) = sample.metrics.iter().find(|m| !m.value.is_finite()) {
            return Err(StoreError::Backend(format!(
                "metric '{}' of test '{}' is {} (not a finite number); the sample is not stored as measured",
                m.name, sample.test, m.value
            )));
        }
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
    fn create_run(&mut self, run: &NewRun) -> Result<RunId, StoreError> {
        self.inner.create_run(run)
    }
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
    fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        finished_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        self.inner.finish_run(run, status, finished_at)
    }
    fn runs(&self, filter: &RunFilter) -> Result<Vec<RunInfo>, StoreError> {
        self.inner.runs(filter)
    }
    fn run(&self, id: RunId) -> Result<Option<RunInfo>, StoreError> {
        self.inner.run(id)
    }
    fn samples(&self, run: RunId) -> Result<Vec<SampleRecord>, StoreError> {
        self.inner.samples(run)
    }
    fn add_profile(&mut self, sample: SampleId, profile: &StoredProfile) -> Result<(), StoreError> {
        self.inner.add_profile(sample, profile)
    }
    fn profile(&self, sample: SampleId) -> Result<Option<StoredProfile>, StoreError> {
        self.inner.profile(sample)
    }
}
