//! A measured sample is never lost: [`JournaledStore`] wraps any [`Store`] and, when the store
//! refuses a sample (a write lock held by another process or a backup, a full disk, an I/O
//! error), retries with backoff; if the store still refuses, the sample is appended (fsynced) to a
//! journal file beside the store, and retried again at every later write of the run and at its
//! end. What is still journaled when the run ends stays in the file, and the next open of the
//! store for writing ([`super::open`]) replays it ([`replay`]).
//!
//! Exactly once: every journaled sample carries a unique key in its facts (`journal_key`); a
//! replay skips a sample whose key the run already holds, so a crash between storing a replayed
//! sample and rewriting the journal cannot store it twice.
//!
//! The journal is JSON lines (one [`Entry`] a line), guarded by an `flock` on `<journal>.lock`
//! so that several runs sharing a store share its journal. This module must never drop an entry
//! it has not seen stored.

use super::{NewSample, RunId, SampleId, Store, StoreError, StoredProfile};
use crate::model::{RunInfo, RunStatus, SampleRecord};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The facts key that marks a journaled sample.
pub const KEY_FACT: &str = "journal_key";

/// The journal of the store at `db`: `<db>.journal`.
pub fn path_beside(db: &Path) -> PathBuf {
    let mut p = db.as_os_str().to_owned();
    p.push(".journal");
    PathBuf::from(p)
}

/// One journaled sample.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    /// Unique key (pid, process start time, sequence), also in `sample.facts.extra`.
    pub key: String,
    /// The run it belongs to.
    pub run: RunId,
    /// The sample, whole.
    pub sample: NewSample,
    /// Its CPU profile, when one was taken.
    pub profile: Option<(String, Vec<u8>)>,
}

/// What a replay did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Replayed {
    /// Samples stored from the journal now.
    pub stored: usize,
    /// Entries skipped because the store already held them (an earlier replay was interrupted).
    pub already: usize,
    /// Entries that could not be stored (their run is gone, or the store refused); they stay.
    pub kept: usize,
}

impl Replayed {
    /// A line for the user, if anything happened.
    pub fn message(&self, journal: &Path) -> Option<String> {
        if self.stored + self.already + self.kept == 0 {
            return None;
        }
        Some(format!(
            "replayed {} journaled sample(s) from {} into the store ({} already there, {} kept for later)",
            self.stored,
            journal.display(),
            self.already,
            self.kept
        ))
    }
}

fn io_err(path: &Path, what: &str, e: std::io::Error) -> StoreError {
    StoreError::Backend(format!("journal {}: {what}: {e}", path.display()))
}

/// The journal's lock (an flock on `<journal>.lock`), held until the value is dropped.
fn lock(path: &Path) -> Result<crate::workload::fdtable::FlockedFile, StoreError> {
    let mut l = path.as_os_str().to_owned();
    l.push(".lock");
    let open = || {
        fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(PathBuf::from(&l))
            .map_err(|e| io_err(path, "lock", e))
    };
    crate::workload::fdtable::flocked(open, |e| io_err(path, "lock", e.into()))
}

fn read_entries(path: &Path) -> Result<Vec<Entry>, StoreError> {
    let text = match crate::plan::input::read_to_string(path) {
        Ok(t) => t,
        Err(crate::plan::input::InputError::Io { error: source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            return Ok(Vec::new());
        }
        Err(e) => return Err(StoreError::Backend(format!("journal: {e}"))),
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).map_err(|e| {
                StoreError::Corrupt(format!(
                    "journal {}: {e}; keep the file and report it",
                    path.display()
                ))
            })
        })
        .collect()
}

/// Replace the journal with `entries` (removed when none), atomically.
fn write_entries(path: &Path, entries: &[Entry]) -> Result<(), StoreError> {
    if entries.is_empty() {
        return match fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_err(path, "remove", e)),
            _ => Ok(()),
        };
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let write = || -> std::io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        for e in entries {
            f.write_all(serde_json::to_string(e)?.as_bytes())?;
            f.write_all(b"\n")?;
        }
        f.sync_all()?;
        fs::rename(&tmp, path)
    };
    write().map_err(|e| io_err(path, "rewrite", e))
}

fn append(path: &Path, entry: &Entry) -> Result<(), StoreError> {
    let _l = lock(path)?;
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| io_err(path, "open", e))?;
    let mut line = serde_json::to_string(entry).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    line.push('\n');
    f.write_all(line.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| io_err(path, "append", e))
}

/// Remove the entries with these keys (stored meanwhile), keeping every other process's.
fn remove_keys(path: &Path, keys: &[String]) -> Result<(), StoreError> {
    let _l = lock(path)?;
    let left: Vec<Entry> = read_entries(path)?
        .into_iter()
        .filter(|e| !keys.contains(&e.key))
        .collect();
    write_entries(path, &left)
}

fn holds_key(store: &dyn Store, run: RunId, key: &str) -> Result<bool, StoreError> {
    Ok(store
        .samples(run)?
        .iter()
        .any(|s| s.sample.facts.extra.get(KEY_FACT).map(String::as_str) == Some(key)))
}

fn store_entry(store: &mut dyn Store, e: &Entry) -> Result<bool, StoreError> {
    if holds_key(store, e.run, &e.key)? {
        return Ok(false);
    }
    let id = store.add_sample(e.run, &e.sample)?;
    if let Some((format, data)) = &e.profile {
        let p = StoredProfile {
            format: format.clone(),
            data: data.clone(),
        };
        // The sample is stored; a profile the store refuses is not worth a duplicate sample.
        let _ = store.add_profile(id, &p);
    }
    Ok(true)
}

/// Store every sample journaled at `path` into `store`, exactly once, and remove what was
/// stored from the journal.
pub fn replay(store: &mut dyn Store, path: &Path) -> Result<Replayed, StoreError> {
    if fs::symlink_metadata(path).is_err() {
        return Ok(Replayed::default());
    }
    let _l = lock(path)?;
    let mut report = Replayed::default();
    let mut kept = Vec::new();
    for e in read_entries(path)? {
        match store_entry(store, &e) {
            Ok(true) => report.stored += 1,
            Ok(false) => report.already += 1,
            Err(_) => {
                report.kept += 1;
                kept.push(e);
            }
        }
    }
    write_entries(path, &kept)?;
    Ok(report)
}

/// A [`Store`] that never loses a sample (see the module docs). Wrap the run's store in it; the
/// run loop needs nothing else. [`JournaledStore::journaled`] says how many samples are only in
/// the journal, for the run's summary.
pub struct JournaledStore<'a> {
    inner: Box<dyn Store + 'a>,
    journal: PathBuf,
    patience: Duration,
    pending: Vec<Entry>,
    seq: u64,
}

/// Whether an error may go away by waiting (a lock, a full disk, I/O), as opposed to a sample the
/// store will never take (a non-finite value, an unknown run).
fn transient(e: &StoreError) -> bool {
    matches!(e, StoreError::Backend(m) if !m.contains("not a finite number"))
        || matches!(e, StoreError::Open { .. })
}

impl<'a> JournaledStore<'a> {
    /// Wrap `inner` (a `Box<dyn Store>`, or `Box::new(&mut dyn Store)` for a borrowed one),
    /// journaling at `journal` (normally [`path_beside`] the store), retrying a refused write
    /// for up to `patience` before journaling it.
    pub fn new(
        inner: Box<dyn Store + 'a>,
        journal: PathBuf,
        patience: Duration,
    ) -> JournaledStore<'a> {
        JournaledStore {
            inner,
            journal,
            patience,
            pending: Vec::new(),
            seq: 0,
        }
    }

    /// The journal file.
    pub fn journal_path(&self) -> &Path {
        &self.journal
    }

    /// How many samples of this process are only in the journal now.
    pub fn journaled(&self) -> usize {
        self.pending.len()
    }

    /// A line for the run's summary when samples are only in the journal.
    pub fn summary(&self) -> Option<String> {
        (!self.pending.is_empty()).then(|| {
            format!(
                "{} sample(s) could not be written to the store and are kept in {}; the next fsdelta that opens the store for writing stores them",
                self.pending.len(),
                self.journal.display()
            )
        })
    }

    /// Retry `f` with backoff (50 ms doubling to 2 s) while it fails transiently, for `patience`.
    fn patiently<T>(
        &mut self,
        patience: Duration,
        mut f: impl FnMut(&mut dyn Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let start = Instant::now();
        let mut wait = Duration::from_millis(50);
        loop {
            match f(self.inner.as_mut()) {
                Err(e) if transient(&e) && start.elapsed() + wait <= patience => {
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(Duration::from_secs(2));
                }
                r => return r,
            }
        }
    }

    /// Try to store the pending samples (once each, or patiently at the end of a run).
    fn flush(&mut self, patience: Duration) {
        let mut stored = Vec::new();
        let pending = std::mem::take(&mut self.pending);
        let mut left = Vec::new();
        for e in pending {
            if !left.is_empty() {
                left.push(e);
                continue;
            }
            match self.patiently(patience, |s| store_entry(s, &e)) {
                Ok(_) => stored.push(e.key.clone()),
                Err(_) => left.push(e),
            }
        }
        self.pending = left;
        if !stored.is_empty() {
            // If the journal cannot be rewritten, the keys make a later replay skip them.
            let _ = remove_keys(&self.journal, &stored);
        }
    }
}

/// A borrowed store is a store (so a run loop handed `&mut dyn Store` can wrap it).
impl Store for &mut dyn Store {
    fn create_run(&mut self, run: &crate::model::NewRun) -> Result<RunId, StoreError> {
        (**self).create_run(run)
    }
    fn add_sample(&mut self, run: RunId, sample: &NewSample) -> Result<SampleId, StoreError> {
        (**self).add_sample(run, sample)
    }
    fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        finished_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        (**self).finish_run(run, status, finished_at)
    }
    fn runs(&self, filter: &super::RunFilter) -> Result<Vec<RunInfo>, StoreError> {
        (**self).runs(filter)
    }
    fn run(&self, id: RunId) -> Result<Option<RunInfo>, StoreError> {
        (**self).run(id)
    }
    fn samples(&self, run: RunId) -> Result<Vec<SampleRecord>, StoreError> {
        (**self).samples(run)
    }
    fn add_profile(&mut self, sample: SampleId, profile: &StoredProfile) -> Result<(), StoreError> {
        (**self).add_profile(sample, profile)
    }
    fn profile(&self, sample: SampleId) -> Result<Option<StoredProfile>, StoreError> {
        (**self).profile(sample)
    }
    fn attachments(&self, sample: SampleId) -> Result<Vec<crate::model::Attachment>, StoreError> {
        (**self).attachments(sample)
    }
    fn abort_orphaned_runs(&mut self) -> Result<Vec<RunId>, StoreError> {
        (**self).abort_orphaned_runs()
    }
    fn journal_path(&self) -> Option<PathBuf> {
        (**self).journal_path()
    }
    fn run_uuid(&self, id: RunId) -> Result<Option<String>, StoreError> {
        (**self).run_uuid(id)
    }
    fn run_by_uuid(&self, uuid: &str) -> Result<Option<RunInfo>, StoreError> {
        (**self).run_by_uuid(uuid)
    }
    fn import_run(
        &mut self,
        uuid: &str,
        run: &RunInfo,
        samples: &[super::SampleCopy],
    ) -> Result<RunId, StoreError> {
        (**self).import_run(uuid, run, samples)
    }
}

impl Store for JournaledStore<'_> {
    fn journal_path(&self) -> Option<PathBuf> {
        None
    }

    fn create_run(&mut self, run: &crate::model::NewRun) -> Result<RunId, StoreError> {
        let p = self.patience;
        self.patiently(p, |s| s.create_run(run))
    }

    fn add_sample(&mut self, run: RunId, sample: &NewSample) -> Result<SampleId, StoreError> {
        if !self.pending.is_empty() {
            self.flush(Duration::ZERO);
        }
        let p = self.patience;
        // Samples queue behind journaled ones, so the store keeps the run's order.
        if self.pending.is_empty() {
            match self.patiently(p, |s| s.add_sample(run, sample)) {
                Ok(id) => return Ok(id),
                Err(e) if !transient(&e) => return Err(e),
                Err(_) => {}
            }
        }
        self.seq += 1;
        let owner = crate::target::state::Owner::current();
        let key = format!("{}-{}-{}", owner.pid, owner.start_time, self.seq);
        let mut sample = sample.clone();
        sample.facts.extra.insert(KEY_FACT.into(), key.clone());
        let entry = Entry {
            key,
            run,
            sample,
            profile: None,
        };
        append(&self.journal, &entry)?;
        self.pending.push(entry);
        // A placeholder id: negative, never a real row; add_profile recognises it.
        Ok(-(self.pending.len() as i64))
    }

    fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        finished_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let p = self.patience;
        self.flush(p);
        self.patiently(p, |s| s.finish_run(run, status, finished_at))
    }

    fn runs(&self, filter: &super::RunFilter) -> Result<Vec<RunInfo>, StoreError> {
        self.inner.runs(filter)
    }

    fn run(&self, id: RunId) -> Result<Option<RunInfo>, StoreError> {
        self.inner.run(id)
    }

    fn samples(&self, run: RunId) -> Result<Vec<SampleRecord>, StoreError> {
        self.inner.samples(run)
    }

    fn add_profile(&mut self, sample: SampleId, profile: &StoredProfile) -> Result<(), StoreError> {
        if sample < 0 {
            let i = (-sample - 1) as usize;
            if let Some(e) = self.pending.get_mut(i) {
                e.profile = Some((profile.format.clone(), profile.data.clone()));
                let (path, entry) = (self.journal.clone(), e.clone());
                let _l = lock(&path)?;
                let all: Vec<Entry> = read_entries(&path)?
                    .into_iter()
                    .map(|x| if x.key == entry.key { entry.clone() } else { x })
                    .collect();
                return write_entries(&path, &all);
            }
        }
        let p = self.patience;
        self.patiently(p, |s| s.add_profile(sample, profile))
    }

    fn profile(&self, sample: SampleId) -> Result<Option<StoredProfile>, StoreError> {
        self.inner.profile(sample)
    }

    fn abort_orphaned_runs(&mut self) -> Result<Vec<RunId>, StoreError> {
        self.inner.abort_orphaned_runs()
    }

    fn run_uuid(&self, id: RunId) -> Result<Option<String>, StoreError> {
        self.inner.run_uuid(id)
    }

    fn run_by_uuid(&self, uuid: &str) -> Result<Option<RunInfo>, StoreError> {
        self.inner.run_by_uuid(uuid)
    }

    /// Not journaled: a copied run is written whole or refused, and the copy can be repeated.
    fn import_run(
        &mut self,
        uuid: &str,
        run: &RunInfo,
        samples: &[super::SampleCopy],
    ) -> Result<RunId, StoreError> {
        self.inner.import_run(uuid, run, samples)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Direction, Environment, Metric, NewRun, SampleStatus, TargetFacts, Unit};
    use crate::store::sqlite::SqliteStore;

    fn new_run() -> NewRun {
        NewRun {
            label: "j".into(),
            suite: "quick".into(),
            started_at: Utc::now(),
            fsdelta_version: "0".into(),
            environment: Environment::default(),
        }
    }

    fn sample(rep: u32) -> NewSample {
        NewSample {
            config: "scratch".into(),
            test: "t".into(),
            repetition: rep,
            facts: TargetFacts::default(),
            status: SampleStatus::Ok,
            error: None,
            started_at: Utc::now(),
            duration_s: 20.0,
            workload: "w".into(),
            sequence: rep,
            metrics: vec![Metric::new(
                "iops",
                rep as f64,
                Unit::Count,
                Direction::HigherIsBetter,
            )],
            histograms: vec![],
            attachments: Vec::new(),
        }
    }

    /// Hold the write lock of `db` from another connection until the returned guard is dropped.
    fn hold_write_lock(db: &Path) -> rusqlite::Connection {
        let c = rusqlite::Connection::open(db).unwrap();
        c.execute_batch("BEGIN IMMEDIATE").unwrap();
        c
    }

    #[test]
    fn a_sample_refused_by_a_locked_store_is_journaled_then_stored_once_when_the_lock_goes() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("r.sqlite");
        let journal = path_beside(&db);
        let inner = SqliteStore::open_with_busy_timeout(&db, Duration::from_millis(20)).unwrap();
        let mut s =
            JournaledStore::new(Box::new(inner), journal.clone(), Duration::from_millis(200));
        let run = s.create_run(&new_run()).unwrap();
        s.add_sample(run, &sample(1)).unwrap();

        let lock = hold_write_lock(&db);
        let id = s.add_sample(run, &sample(2)).unwrap();
        assert!(id < 0, "journaled, not lost");
        assert_eq!(s.journaled(), 1);
        assert!(
            s.summary()
                .unwrap()
                .contains(&journal.display().to_string())
        );
        assert_eq!(read_entries(&journal).unwrap().len(), 1);
        drop(lock);

        // The next write of the run stores the journaled sample first, in order.
        s.add_sample(run, &sample(3)).unwrap();
        assert_eq!(s.journaled(), 0);
        assert!(!journal.exists(), "the journal is removed once stored");
        let reps: Vec<u32> = s
            .samples(run)
            .unwrap()
            .iter()
            .map(|x| x.sample.repetition)
            .collect();
        assert_eq!(reps, vec![1, 2, 3]);
    }

    #[test]
    fn a_journal_left_by_a_run_is_replayed_exactly_once_by_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("r.sqlite");
        let journal = path_beside(&db);
        let run = {
            let inner =
                SqliteStore::open_with_busy_timeout(&db, Duration::from_millis(20)).unwrap();
            let mut s =
                JournaledStore::new(Box::new(inner), journal.clone(), Duration::from_millis(100));
            let run = s.create_run(&new_run()).unwrap();
            let lock = hold_write_lock(&db);
            s.add_sample(run, &sample(1)).unwrap();
            s.add_sample(run, &sample(2)).unwrap();
            assert!(s.finish_run(run, RunStatus::Complete, Utc::now()).is_err());
            assert_eq!(s.journaled(), 2);
            drop(lock);
            run
        };
        // Simulate an interrupted earlier replay: sample 1 is already stored with its key.
        let entries = read_entries(&journal).unwrap();
        {
            let mut st = SqliteStore::open(&db).unwrap();
            st.add_sample(run, &entries[0].sample).unwrap();
        }
        let (store, replayed) = crate::store::open_for_run(db.to_str().unwrap()).unwrap();
        assert_eq!(
            replayed,
            Replayed {
                stored: 1,
                already: 1,
                kept: 0
            }
        );
        assert_eq!(store.samples(run).unwrap().len(), 2);
        drop(store);
        assert!(!journal.exists());
        let (store, replayed) = crate::store::open_for_run(db.to_str().unwrap()).unwrap();
        assert_eq!(replayed, Replayed::default(), "exactly once");
        assert_eq!(store.samples(run).unwrap().len(), 2);
    }

    #[test]
    fn a_sample_the_store_can_never_take_is_an_error_not_a_journal_entry() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("r.sqlite");
        let inner = SqliteStore::open(&db).unwrap();
        let mut s = JournaledStore::new(
            Box::new(inner),
            path_beside(&db),
            Duration::from_millis(100),
        );
        let run = s.create_run(&new_run()).unwrap();
        let mut bad = sample(1);
        bad.metrics[0].value = f64::NAN;
        assert!(s.add_sample(run, &bad).is_err());
        assert!(!path_beside(&db).exists());
    }
}
