//! A measured sample is never lost: [`JournaledStore`] wraps any [`Store`] and, when the store
//! refuses a sample for a reason that may pass (a write lock held by another process or a
//! backup, a full disk, an I/O error, a PostgreSQL server that is down), retries with backoff
//! for a bounded wait (`FSDELTA_STORE_WAIT`, [`DEFAULT_WAIT`]), saying at the first failure that
//! the store is unreachable, how many samples are held and that it keeps trying (a notice
//! callback the runner connects to its observer). If the store still refuses, the sample is
//! appended (fsynced) to a journal: the one beside the store (`<store>.journal`), else one in
//! the state directory (beside the leftover-state file, [`state_journal`]: the only journal of a
//! PostgreSQL store, and the fallback when the store's own filesystem is full), else, when no
//! journal can be written, the sample is given to the notice callback as one journal line to
//! save by hand. It is retried again at every later write of the run and at its end; what is
//! still journaled when the run ends stays in the file, and the next open of the store for
//! writing ([`super::open`]) replays it ([`replay`]).
//!
//! A sample the store can never take (a constraint violation: a metric name given twice, a
//! non-finite value, a run that is gone) is not transient: it is an error to the caller, which
//! stores the sample as failed; a journaled one is stored as failed by the replay, or set aside
//! in `<journal>.refused` when even that is refused. Nothing is retried forever.
//!
//! Exactly once: every journaled sample carries a unique key in its facts (`journal_key`); a
//! replay skips a sample whose key the run already holds, so a crash between storing a replayed
//! sample and rewriting the journal cannot store it twice. A write retried after a failure that
//! may have happened after the store committed (a lost connection) first looks for the sample
//! in its run (same configuration, test, repetition and sequence).
//!
//! The journal is JSON lines (one [`Entry`] a line), guarded by an `flock` on `<journal>.lock`
//! so that several runs sharing a store share its journal. The journal, its lock and its
//! temporary are opened through [`crate::os::files`]: no symlink is followed, a file another
//! user owns or can write is refused (never replayed: in a sticky directory such as /tmp
//! another user could plant one), new files are 0600, and a rewrite is a temporary renamed
//! over it. This module must never drop an entry it has not seen stored, and never replay a
//! journal it does not own.

use super::forward::forward_store;
use super::{NewSample, RunId, SampleId, Store, StoreError, StoredProfile};
use crate::model::{RunStatus, SampleStatus};
use crate::os::files::{self, Access, FileError};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The facts key that marks a journaled sample.
pub const KEY_FACT: &str = "journal_key";

/// How long a refused store write is retried before the sample is journaled, when
/// `FSDELTA_STORE_WAIT` does not say.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(60);

/// The environment variable that sets the bounded wait, in seconds.
pub const WAIT_VAR: &str = "FSDELTA_STORE_WAIT";

/// The bounded wait from `FSDELTA_STORE_WAIT` (seconds, 0 journals at the first refusal), else
/// [`DEFAULT_WAIT`].
pub fn wait_from_env() -> Result<Duration, String> {
    match std::env::var(WAIT_VAR) {
        Err(_) => Ok(DEFAULT_WAIT),
        Ok(v) if v.trim().is_empty() => Ok(DEFAULT_WAIT),
        Ok(v) => v
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && (0.0..=86_400.0).contains(s))
            .map(Duration::from_secs_f64)
            .ok_or_else(|| {
                format!(
                    "{WAIT_VAR}='{v}' is not a number of seconds from 0 to 86400 (how long a run waits for an unreachable store before journaling its samples); unset it for the default of {} s",
                    DEFAULT_WAIT.as_secs()
                )
            }),
    }
}

/// `12 s`, `0.2 s`: a wait for a message.
fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 10.0 || s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// The journal of the store at `db`: `<db>.journal`.
pub fn path_beside(db: &Path) -> PathBuf {
    files::sibling(db, ".journal")
}

/// The directory of the state-directory journals: the leftover-state file's
/// (`$XDG_STATE_HOME/fsdelta/`, else `~/.local/state/fsdelta/`, see
/// `crate::os::state::locate`), `None` when there is none.
pub fn state_dir() -> Option<PathBuf> {
    let state = crate::os::state::default_path().ok()?;
    state.parent().map(Path::to_path_buf)
}

/// A stable 64-bit FNV-1a hash, for a journal's file name.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The state-directory journal of the store named `store` (a SQLite file's absolute path, or a
/// PostgreSQL database as `PgStore::shown` prints it): `journal-<hash>.jsonl` in
/// [`state_dir`]. `None` when there is no state directory.
pub fn state_journal(store: &str) -> Option<PathBuf> {
    Some(state_dir()?.join(format!("journal-{:016x}.jsonl", fnv(store))))
}

/// The name a SQLite store at `db` has in [`state_journal`]: its absolute path.
pub fn sqlite_name(db: &Path) -> String {
    fs::canonicalize(db)
        .or_else(|_| std::path::absolute(db))
        .unwrap_or_else(|_| db.to_path_buf())
        .display()
        .to_string()
}

/// One journaled sample.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    /// Unique key (pid, process start time, sequence), also in `sample.facts.extra`.
    pub key: String,
    /// The run it belongs to.
    pub run: RunId,
    /// The store it belongs to (a path or a PostgreSQL database), for a reader.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub store: String,
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
    /// Entries that could not be stored now (the store refused for a reason that may pass);
    /// they stay.
    pub kept: usize,
    /// Entries the store can never take as measured, stored as failed samples with the reason.
    pub failed: usize,
    /// Entries the store refused even as failed samples (their run is gone), moved to
    /// `<journal>.refused` and no longer replayed.
    pub set_aside: usize,
    /// Why a journal was not replayed at all (not ours, a symlink): what is wrong, how to fix.
    pub refused: Option<String>,
}

impl Replayed {
    fn add(&mut self, o: Replayed) {
        self.stored += o.stored;
        self.already += o.already;
        self.kept += o.kept;
        self.failed += o.failed;
        self.set_aside += o.set_aside;
        self.refused = match (self.refused.take(), o.refused) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
    }

    /// A line for the user, if anything happened.
    pub fn message(&self, journal: &Path) -> Option<String> {
        let mut parts = Vec::new();
        if self.stored + self.already + self.kept + self.failed + self.set_aside > 0 {
            let mut m = format!(
                "replayed {} journaled sample(s) from {} into the store ({} already there, {} kept for later)",
                self.stored,
                journal.display(),
                self.already,
                self.kept
            );
            if self.failed > 0 {
                m.push_str(&format!(
                    "; {} the store can never take as measured were stored as failed samples with the reason (see `fsdelta show`)",
                    self.failed
                ));
            }
            if self.set_aside > 0 {
                m.push_str(&format!(
                    "; {} the store refused even as failed samples were moved to {} and are not replayed again",
                    self.set_aside,
                    files::sibling(journal, ".refused").display()
                ));
            }
            parts.push(m);
        }
        if let Some(r) = &self.refused {
            parts.push(format!("a journal was not replayed: {r}"));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

fn file_err(path: &Path, what: &str, e: FileError) -> StoreError {
    StoreError::Backend(format!("journal {}: {what}: {e}", path.display()))
}

fn io_err(path: &Path, what: &str, e: std::io::Error) -> StoreError {
    StoreError::Backend(format!("journal {}: {what}: {e}", path.display()))
}

/// Why a journal file at `path` must not be used (a symlink, another owner, open modes), if it
/// exists and is not ours.
fn untrusted(path: &Path) -> Option<String> {
    for p in [path.to_path_buf(), files::sibling(path, ".lock")] {
        match fs::symlink_metadata(&p) {
            Ok(m) => {
                if let Err(e) = files::check_own_file(&p, &m) {
                    return Some(e.to_string());
                }
            }
            Err(_) => continue,
        }
    }
    None
}

/// The journal's lock (an flock on `<journal>.lock`, 0600, ours), held until the value is
/// dropped.
fn lock(path: &Path) -> Result<crate::os::fdtable::FlockedFile, StoreError> {
    let l = files::sibling(path, ".lock");
    crate::os::fdtable::flocked(
        || files::open(&l, Access::ReadWrite).map_err(|e| file_err(path, "lock", e)),
        |e| io_err(path, "lock", e.into()),
    )
}

fn read_entries(path: &Path) -> Result<Vec<Entry>, StoreError> {
    let mut f = match files::open(path, Access::Read) {
        Ok(f) => f,
        Err(FileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Vec::new());
        }
        Err(e) => return Err(file_err(path, "read", e)),
    };
    let mut text = String::new();
    f.read_to_string(&mut text)
        .map_err(|e| io_err(path, "read", e))?;
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

fn line_of(entry: &Entry) -> Result<String, StoreError> {
    let mut line = serde_json::to_string(entry).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    line.push('\n');
    Ok(line)
}

/// Replace the journal with `entries` (removed when none), atomically (a temporary renamed
/// over it; a symlink is replaced, never followed).
fn write_entries(path: &Path, entries: &[Entry]) -> Result<(), StoreError> {
    if entries.is_empty() {
        return match fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_err(path, "remove", e)),
            _ => Ok(()),
        };
    }
    let mut text = String::new();
    for e in entries {
        text.push_str(&line_of(e)?);
    }
    files::replace(path, text.as_bytes()).map_err(|e| file_err(path, "rewrite", e))
}

/// Append `entry` to the file at `path` (created 0600, never through a symlink), fsynced.
fn append_to(path: &Path, entry: &Entry) -> Result<(), StoreError> {
    let line = line_of(entry)?;
    let mut f = files::open(path, Access::Append).map_err(|e| file_err(path, "open", e))?;
    f.write_all(line.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| io_err(path, "append", e))
}

fn append(path: &Path, entry: &Entry) -> Result<(), StoreError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.exists()
    {
        // Only the state directory is ever created here (a store's own directory exists).
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| io_err(path, "create its directory", e))?;
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        files::check_dir(dir).map_err(|e| file_err(path, "its directory", e))?;
    }
    let _l = lock(path)?;
    append_to(path, entry)
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

/// Whether the run already holds this sample (same configuration, test, repetition and
/// sequence): what a write retried after an ambiguous failure looks for first.
fn holds_sample(
    store: &dyn Store,
    run: RunId,
    sample: &NewSample,
) -> Result<Option<SampleId>, StoreError> {
    Ok(store
        .samples(run)?
        .iter()
        .find(|s| {
            s.sample.config == sample.config
                && s.sample.test == sample.test
                && s.sample.repetition == sample.repetition
                && s.sample.sequence == sample.sequence
        })
        .map(|s| s.id))
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

/// The sample as a failed one, with why the store refused it as measured.
fn as_failed(sample: &NewSample, why: &StoreError) -> NewSample {
    let mut s = sample.clone();
    s.status = SampleStatus::Failed;
    s.error = Some(format!("not stored as measured: {why}"));
    s.metrics.clear();
    s.histograms.clear();
    s
}

/// What became of an entry the store refused for good.
enum Settled {
    /// Stored as a failed sample.
    Failed,
    /// Appended to `<journal>.refused`.
    SetAside,
}

/// An entry the store will never take as measured: store it as failed, else set it aside in
/// `<journal>.refused`, so that it is never retried again.
fn settle(
    store: &mut dyn Store,
    journal: &Path,
    e: &Entry,
    why: &StoreError,
) -> Result<Settled, StoreError> {
    if e.sample.status == SampleStatus::Ok {
        let failed = Entry {
            sample: as_failed(&e.sample, why),
            profile: None,
            ..e.clone()
        };
        match store_entry(store, &failed) {
            Ok(_) => return Ok(Settled::Failed),
            Err(e2) if transient(&e2) => return Err(e2),
            Err(_) => {}
        }
    }
    append_to(&files::sibling(journal, ".refused"), e)?;
    Ok(Settled::SetAside)
}

/// Store every sample journaled at `path` into `store`, exactly once, and remove what was
/// stored from the journal. A journal (or lock) that is a symlink, another user's, or writable
/// by others is not read at all: [`Replayed::refused`] says why and how to fix it.
pub fn replay(store: &mut dyn Store, path: &Path) -> Result<Replayed, StoreError> {
    if fs::symlink_metadata(path).is_err() {
        return Ok(Replayed::default());
    }
    if let Some(why) = untrusted(path) {
        return Ok(Replayed {
            refused: Some(why),
            ..Replayed::default()
        });
    }
    let _l = match lock(path) {
        Ok(l) => l,
        Err(e) => {
            return Ok(Replayed {
                refused: Some(e.to_string()),
                ..Replayed::default()
            });
        }
    };
    let entries = match read_entries(path) {
        Ok(e) => e,
        Err(StoreError::Backend(m)) => {
            return Ok(Replayed {
                refused: Some(m),
                ..Replayed::default()
            });
        }
        Err(e) => return Err(e),
    };
    let mut report = Replayed::default();
    let mut kept = Vec::new();
    for e in entries {
        match store_entry(store, &e) {
            Ok(true) => report.stored += 1,
            Ok(false) => report.already += 1,
            Err(err) if transient(&err) => {
                report.kept += 1;
                kept.push(e);
            }
            Err(err) => match settle(store, path, &e, &err) {
                Ok(Settled::Failed) => report.failed += 1,
                Ok(Settled::SetAside) => report.set_aside += 1,
                Err(_) => {
                    report.kept += 1;
                    kept.push(e);
                }
            },
        }
    }
    write_entries(path, &kept)?;
    Ok(report)
}

/// [`replay`] each of `paths` (the journal beside a store and its state-directory journal),
/// adding up what was done.
pub fn replay_all(store: &mut dyn Store, paths: &[PathBuf]) -> Result<Replayed, StoreError> {
    let mut total = Replayed::default();
    for p in paths {
        total.add(replay(store, p)?);
    }
    Ok(total)
}

/// Where a sample the store refused is kept.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kept {
    /// In this journal file.
    Journal(PathBuf),
    /// Nowhere on disk: given to the notice callback as a journal line.
    Printed,
}

struct Pending {
    entry: Entry,
    kept: Kept,
}

/// Where a [`JournaledStore`] keeps what its store refuses, and how it reports.
pub struct Journals {
    /// The first journal tried (beside the store; for PostgreSQL, the state-directory one).
    pub primary: PathBuf,
    /// The journal tried when the first cannot be written (the state-directory one).
    pub fallback: Option<PathBuf>,
    /// The store, as a reader names it (in messages and in each entry).
    pub store: String,
}

/// A notice for the user ("the store is unreachable ..."); the runner turns it into an
/// observer warning.
pub type Notice<'a> = Box<dyn Fn(String) + Send + 'a>;

/// A [`Store`] that never loses a sample (see the module docs). Wrap the run's store in it; the
/// run loop needs nothing else. [`JournaledStore::journaled`] says how many samples are only in
/// the journal, for the run's summary.
pub struct JournaledStore<'a> {
    inner: Box<dyn Store + 'a>,
    journals: Journals,
    patience: Duration,
    pending: Vec<Pending>,
    seq: u64,
    notice: Option<Notice<'a>>,
    /// Samples the store refused for good when they were retried from the journal (stored as
    /// failed, or set aside).
    failed_later: usize,
}

/// Whether an error may go away by waiting (a lock, a full disk, I/O, a lost connection), as
/// opposed to a sample the store will never take (a constraint violation, a non-finite value,
/// an unknown run): only these are retried and journaled.
pub fn transient(e: &StoreError) -> bool {
    const PASSING: &[&str] = &[
        // SQLite
        "database is locked",
        "database table is locked",
        "database is busy",
        "database or disk is full",
        "disk I/O error",
        "unable to open database file",
        "attempt to write a readonly database",
        "No space left on device",
        // PostgreSQL
        "lost the connection to PostgreSQL",
        "connection closed",
        "could not extend file",
        "deadlock detected",
        "could not serialize access",
        "the database system is",
        "too many connections",
        // this journal
        "journal ",
        "still waiting for the store",
    ];
    match e {
        StoreError::Open { .. } => true,
        StoreError::Backend(m) => PASSING.iter().any(|p| m.contains(p)),
        _ => false,
    }
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
        let store = journal.display().to_string();
        let store = store.strip_suffix(".journal").unwrap_or(&store).to_string();
        JournaledStore::with_journals(
            inner,
            Journals {
                primary: journal,
                fallback: None,
                store,
            },
            patience,
        )
    }

    /// Wrap `inner` with a journal and its fallback ([`Journals`]).
    pub fn with_journals(
        inner: Box<dyn Store + 'a>,
        journals: Journals,
        patience: Duration,
    ) -> JournaledStore<'a> {
        JournaledStore {
            inner,
            journals,
            patience,
            pending: Vec::new(),
            seq: 0,
            notice: None,
            failed_later: 0,
        }
    }

    /// Where notices go (the store is unreachable, samples are journaled, a sample that could
    /// be saved nowhere, as a journal line).
    pub fn set_notice(&mut self, notice: Notice<'a>) {
        self.notice = Some(notice);
    }

    fn say(&self, m: String) {
        if let Some(n) = &self.notice {
            n(m);
        }
    }

    /// The first journal.
    pub fn journal_path(&self) -> &Path {
        &self.journals.primary
    }

    /// How many samples of this process are not in the store now (journaled or printed).
    pub fn journaled(&self) -> usize {
        self.pending.len()
    }

    /// Samples the store refused for good when retried from the journal (stored as failed or
    /// set aside): the run cannot be complete.
    pub fn failed_later(&self) -> usize {
        self.failed_later
    }

    /// A line for the run's summary when samples are not in the store: where each went.
    pub fn summary(&self) -> Option<String> {
        if self.pending.is_empty() {
            return None;
        }
        let mut places: Vec<(Kept, usize)> = Vec::new();
        for p in &self.pending {
            match places.iter_mut().find(|(k, _)| *k == p.kept) {
                Some((_, n)) => *n += 1,
                None => places.push((p.kept.clone(), 1)),
            }
        }
        let parts: Vec<String> = places
            .iter()
            .map(|(k, n)| match k {
                Kept::Journal(path) => format!("{n} journaled in {}", path.display()),
                Kept::Printed => format!(
                    "{n} printed above as journal lines (no journal could be written): append them to {} once it can be written",
                    self.journals.primary.display()
                ),
            })
            .collect();
        Some(format!(
            "{} sample(s) could not be written to the store {}: {}; the next fsdelta that opens the store for writing (any run, or `fsdelta cleanup`) stores them",
            self.pending.len(),
            self.journals.store,
            parts.join("; ")
        ))
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

    /// Store `sample`, retrying transient failures for `patience`: the first failure is
    /// announced (the store is unreachable, how many samples are held, that it keeps trying),
    /// and a retry first looks for the sample in its run (an earlier attempt may have been
    /// committed although it failed).
    fn store_waiting(&mut self, run: RunId, sample: &NewSample) -> Result<SampleId, StoreError> {
        let start = Instant::now();
        let mut wait = Duration::from_millis(50);
        let mut announced = false;
        let mut tried = false;
        loop {
            let attempt = if tried {
                match holds_sample(self.inner.as_ref(), run, sample) {
                    Ok(Some(id)) => Ok(id),
                    Ok(None) => self.inner.add_sample(run, sample),
                    Err(e) => Err(e),
                }
            } else {
                self.inner.add_sample(run, sample)
            };
            tried = true;
            let e = match attempt {
                Ok(id) => {
                    if announced {
                        self.say(format!(
                            "the store {} takes writes again: the sample is stored",
                            self.journals.store
                        ));
                    }
                    return Ok(id);
                }
                Err(e) if !transient(&e) => return Err(e),
                Err(e) => e,
            };
            if !announced {
                announced = true;
                self.say(format!(
                    "the store {} is unreachable or refuses writes ({e}); {} sample(s) not yet stored ({} held in memory, {} journaled); fsdelta keeps trying for up to {} ({WAIT_VAR}), then journals them",
                    self.journals.store,
                    self.pending.len() + 1,
                    1,
                    self.pending.len(),
                    secs(self.patience)
                ));
            }
            if start.elapsed() + wait > self.patience {
                return Err(e);
            }
            std::thread::sleep(wait);
            wait = (wait * 2).min(Duration::from_secs(2));
        }
    }

    /// Keep `entry` in the first journal that takes it, else give it to the notice as a journal
    /// line; say where it went.
    fn keep(&mut self, entry: Entry, why: &StoreError) -> Kept {
        let mut failures = Vec::new();
        let mut places = vec![self.journals.primary.clone()];
        places.extend(self.journals.fallback.clone());
        places.retain(|p| !p.as_os_str().is_empty());
        let what = format!(
            "sample {}/{} rep {}",
            entry.sample.config, entry.sample.test, entry.sample.repetition
        );
        for p in places {
            match append(&p, &entry) {
                Ok(()) => {
                    let also = if failures.is_empty() {
                        String::new()
                    } else {
                        format!(" (not in {})", failures.join("; "))
                    };
                    self.say(format!(
                        "the store {} still refuses writes ({why}): {what} is journaled in {}{also}; the next fsdelta that opens the store for writing stores it",
                        self.journals.store,
                        p.display()
                    ));
                    return Kept::Journal(p);
                }
                Err(StoreError::Backend(m)) => failures.push(m),
                Err(e) => failures.push(e.to_string()),
            }
        }
        let line = line_of(&entry).unwrap_or_default();
        self.say(format!(
            "{what} could not be stored ({why}) nor journaled ({}): here it is as one journal line; append the line below to {} (chmod 600) once it can be written, and the next fsdelta that opens the store for writing stores it:\n{}",
            failures.join("; "),
            self.journals.primary.display(),
            line.trim_end()
        ));
        Kept::Printed
    }

    /// Try to store the pending samples (once each, or patiently at the end of a run).
    fn flush(&mut self, patience: Duration) {
        let mut stored: Vec<(PathBuf, String)> = Vec::new();
        let pending = std::mem::take(&mut self.pending);
        let mut left = Vec::new();
        for p in pending {
            if !left.is_empty() {
                left.push(p);
                continue;
            }
            match self.patiently(patience, |s| store_entry(s, &p.entry)) {
                Ok(_) => {
                    if let Kept::Journal(path) = &p.kept {
                        stored.push((path.clone(), p.entry.key.clone()));
                    }
                }
                Err(e) if !transient(&e) => {
                    let j = match &p.kept {
                        Kept::Journal(path) => path.clone(),
                        Kept::Printed => self.journals.primary.clone(),
                    };
                    match settle(self.inner.as_mut(), &j, &p.entry, &e) {
                        Ok(how) => {
                            self.failed_later += 1;
                            let what = match how {
                                Settled::Failed => "stored as a failed sample".to_string(),
                                Settled::SetAside => format!(
                                    "set aside in {}",
                                    files::sibling(&j, ".refused").display()
                                ),
                            };
                            self.say(format!(
                                "the store refuses sample {}/{} rep {} for good ({e}): {what}",
                                p.entry.sample.config,
                                p.entry.sample.test,
                                p.entry.sample.repetition
                            ));
                            if let Kept::Journal(path) = &p.kept {
                                stored.push((path.clone(), p.entry.key.clone()));
                            }
                        }
                        Err(_) => left.push(p),
                    }
                }
                Err(_) => left.push(p),
            }
        }
        self.pending = left;
        let mut paths: Vec<&PathBuf> = stored.iter().map(|(p, _)| p).collect();
        paths.sort();
        paths.dedup();
        for path in paths {
            let keys: Vec<String> = stored
                .iter()
                .filter(|(p, _)| p == path)
                .map(|(_, k)| k.clone())
                .collect();
            // If the journal cannot be rewritten, the keys make a later replay skip them.
            let _ = remove_keys(path, &keys);
        }
    }
}

/// A borrowed store is a store (so a run loop handed `&mut dyn Store` can wrap it).
impl Store for &mut dyn Store {
    forward_store!(*: create_run, add_sample, finish_run, runs, run, samples, add_profile, profile,
        attachments, abort_orphaned_runs, journal_path, run_uuid, run_by_uuid, import_run);
}

impl Store for JournaledStore<'_> {
    // Reads pass through; so does a copied run (not journaled: it is written whole or refused,
    // and the copy can be repeated).
    forward_store!(inner: runs, run, samples, profile, abort_orphaned_runs, run_uuid, run_by_uuid,
        import_run);

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
        // Samples queue behind journaled ones, so the store keeps the run's order.
        let why = if self.pending.is_empty() {
            match self.store_waiting(run, sample) {
                Ok(id) => return Ok(id),
                Err(e) => e,
            }
        } else {
            StoreError::Backend(format!(
                "{} earlier sample(s) of this run are still waiting for the store",
                self.pending.len()
            ))
        };
        if !transient(&why) {
            if sample.status == SampleStatus::Failed
                && !self.journals.primary.as_os_str().is_empty()
            {
                // Refused even as a failed sample (its caller's last resort): keep it where a
                // reader finds it, never in the journal (it would be refused forever).
                let aside = files::sibling(&self.journals.primary, ".refused");
                let entry = Entry {
                    key: String::new(),
                    run,
                    store: self.journals.store.clone(),
                    sample: sample.clone(),
                    profile: None,
                };
                if append_to(&aside, &entry).is_ok() {
                    return Err(StoreError::Backend(format!(
                        "{why}; the sample (refused even as a failed one) is kept in {}",
                        aside.display()
                    )));
                }
            }
            return Err(why);
        }
        self.seq += 1;
        let owner = crate::os::process::Owner::current();
        let key = format!("{}-{}-{}", owner.pid, owner.start_time, self.seq);
        let mut sample = sample.clone();
        sample.facts.extra.insert(KEY_FACT.into(), key.clone());
        let entry = Entry {
            key,
            run,
            store: self.journals.store.clone(),
            sample,
            profile: None,
        };
        let kept = self.keep(entry.clone(), &why);
        self.pending.push(Pending { entry, kept });
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
        let status = if status == RunStatus::Complete && self.failed_later > 0 {
            RunStatus::Failed
        } else {
            status
        };
        self.patiently(p, |s| s.finish_run(run, status, finished_at))
    }

    fn add_profile(&mut self, sample: SampleId, profile: &StoredProfile) -> Result<(), StoreError> {
        if sample < 0 {
            let i = (-sample - 1) as usize;
            if let Some(p) = self.pending.get_mut(i) {
                p.entry.profile = Some((profile.format.clone(), profile.data.clone()));
                let Kept::Journal(path) = p.kept.clone() else {
                    // Printed already: the profile has nowhere to go.
                    return Ok(());
                };
                let entry = p.entry.clone();
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Direction, Environment, Metric, NewRun, SampleStatus, SiteFacts, Unit};
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
            facts: SiteFacts::default(),
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
                kept: 0,
                ..Replayed::default()
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

    /// A store with one run, and a journal entry of a sample of it written at `journal`.
    fn store_and_entry(db: &Path, journal: &Path) -> (SqliteStore, RunId, String) {
        let mut st = SqliteStore::open(db).unwrap();
        let run = st.create_run(&new_run()).unwrap();
        let mut smp = sample(1);
        smp.facts.extra.insert(KEY_FACT.into(), "k-1-1".into());
        let e = Entry {
            key: "k-1-1".into(),
            run,
            store: String::new(),
            sample: smp,
            profile: None,
        };
        let line = line_of(&e).unwrap();
        fs::write(journal, &line).unwrap();
        (st, run, line)
    }

    fn is_root() -> bool {
        rustix::process::geteuid().is_root()
    }

    #[test]
    fn another_users_journal_in_a_sticky_directory_is_never_replayed() {
        use std::os::unix::fs::PermissionsExt;
        if !is_root() {
            eprintln!("SKIPPED: needs root (to give the journal to another user)");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        fs::create_dir(&shared).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
        let db = shared.join("r.sqlite");
        let journal = path_beside(&db);
        let (mut st, run, line) = store_and_entry(&db, &journal);
        std::os::unix::fs::chown(&journal, Some(65534), Some(65534)).unwrap();
        fs::set_permissions(&journal, fs::Permissions::from_mode(0o644)).unwrap();
        let r = replay(&mut st, &journal).unwrap();
        assert_eq!(r.stored + r.already + r.kept, 0, "{r:?}");
        let why = r.refused.clone().unwrap();
        assert!(
            why.contains("uid 65534") && why.contains("remove it"),
            "{why}"
        );
        assert!(
            r.message(&journal).unwrap().contains("not replayed"),
            "{r:?}"
        );
        assert!(
            st.samples(run).unwrap().is_empty(),
            "the store is unchanged"
        );
        assert_eq!(
            fs::read_to_string(&journal).unwrap(),
            line,
            "left as it was"
        );
    }

    #[test]
    fn a_symlinked_journal_or_lock_is_refused_and_its_target_unchanged() {
        for planted in [".journal", ".journal.lock"] {
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("r.sqlite");
            let journal = path_beside(&db);
            let (mut st, run, line) = store_and_entry(&db, &journal);
            // The victim holds what the journal held; the planted name points at it.
            let victim = dir.path().join("victim");
            fs::write(&victim, &line).unwrap();
            let at = files::sibling(&db, planted);
            let _ = fs::remove_file(&at);
            std::os::unix::fs::symlink(&victim, &at).unwrap();
            let r = replay(&mut st, &journal).unwrap();
            assert_eq!(r.stored, 0, "{planted}: {r:?}");
            assert!(
                r.refused.as_deref().unwrap_or("").contains("symlink"),
                "{planted}: {r:?}"
            );
            assert!(st.samples(run).unwrap().is_empty(), "{planted}");
            assert_eq!(fs::read_to_string(&victim).unwrap(), line, "{planted}");
            assert!(fs::symlink_metadata(&at).unwrap().file_type().is_symlink());
            // Journaling never writes through it either: the sample goes to the fallback.
            let fallback = dir.path().join("state").join("journal-x.jsonl");
            let inner =
                SqliteStore::open_with_busy_timeout(&db, Duration::from_millis(20)).unwrap();
            let lock = hold_write_lock(&db);
            let mut s = JournaledStore::with_journals(
                Box::new(inner),
                Journals {
                    primary: journal.clone(),
                    fallback: Some(fallback.clone()),
                    store: db.display().to_string(),
                },
                Duration::ZERO,
            );
            assert!(s.add_sample(run, &sample(2)).unwrap() < 0);
            drop(lock);
            assert_eq!(fs::read_to_string(&victim).unwrap(), line, "{planted}");
            assert_eq!(read_entries(&fallback).unwrap().len(), 1, "{planted}");
            assert!(
                s.summary()
                    .unwrap()
                    .contains(&fallback.display().to_string())
            );
        }
    }

    #[test]
    fn journal_files_are_private_and_a_rewrite_replaces_a_planted_temporary() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("r.sqlite");
        let journal = path_beside(&db);
        let inner = SqliteStore::open_with_busy_timeout(&db, Duration::from_millis(20)).unwrap();
        let mut s = JournaledStore::new(Box::new(inner), journal.clone(), Duration::ZERO);
        let run = s.create_run(&new_run()).unwrap();
        let lock = hold_write_lock(&db);
        s.add_sample(run, &sample(1)).unwrap();
        for p in [journal.clone(), files::sibling(&journal, ".lock")] {
            assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o600, "{p:?}");
        }
        let victim = dir.path().join("victim");
        fs::write(&victim, "keep").unwrap();
        std::os::unix::fs::symlink(&victim, files::sibling(&journal, ".tmp")).unwrap();
        // The profile of a journaled sample rewrites the journal (temporary + rename).
        s.add_profile(
            -1,
            &StoredProfile {
                format: "f".into(),
                data: vec![1],
            },
        )
        .unwrap();
        drop(lock);
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(
            read_entries(&journal).unwrap()[0]
                .profile
                .as_ref()
                .unwrap()
                .1,
            vec![1]
        );
    }

    #[test]
    fn a_journaled_sample_the_store_refuses_for_good_is_stored_failed_not_kept_forever() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("r.sqlite");
        let journal = path_beside(&db);
        let mut st = SqliteStore::open(&db).unwrap();
        let run = st.create_run(&new_run()).unwrap();
        let mut twice = sample(1);
        twice.metrics.push(twice.metrics[0].clone());
        twice.facts.extra.insert(KEY_FACT.into(), "k-1-1".into());
        let gone = Entry {
            key: "k-1-2".into(),
            run: run + 100,
            store: String::new(),
            sample: sample(2),
            profile: None,
        };
        let e = Entry {
            key: "k-1-1".into(),
            run,
            store: String::new(),
            sample: twice,
            profile: None,
        };
        fs::write(
            &journal,
            format!("{}{}", line_of(&e).unwrap(), line_of(&gone).unwrap()),
        )
        .unwrap();
        let r = replay(&mut st, &journal).unwrap();
        assert_eq!((r.failed, r.set_aside, r.kept), (1, 1, 0), "{r:?}");
        assert!(!journal.exists(), "nothing left to retry forever");
        let back = st.samples(run).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].sample.status, SampleStatus::Failed);
        assert!(back[0].sample.error.as_deref().unwrap().contains("UNIQUE"));
        let aside = files::sibling(&journal, ".refused");
        assert_eq!(read_entries(&aside).unwrap()[0].key, "k-1-2");
        assert!(r.message(&journal).unwrap().contains("stored as failed"));
        // A second replay has nothing to do.
        assert_eq!(replay(&mut st, &journal).unwrap(), Replayed::default());
    }

    /// A store whose first write commits and then reports a lost connection (the reply was
    /// lost): what a PostgreSQL write looks like when the server goes away at its commit.
    struct CommitsThenLoses {
        inner: crate::store::memory::MemoryStore,
        lost: bool,
    }

    impl Store for CommitsThenLoses {
        forward_store!(inner: create_run, finish_run, runs, run, samples, add_profile, profile,
            run_by_uuid, import_run);
        fn add_sample(&mut self, run: RunId, sample: &NewSample) -> Result<SampleId, StoreError> {
            let id = self.inner.add_sample(run, sample)?;
            if !self.lost {
                self.lost = true;
                return Err(StoreError::Backend(
                    "lost the connection to PostgreSQL host h and could not get it back within 4 s"
                        .into(),
                ));
            }
            Ok(id)
        }
    }

    #[test]
    fn a_write_retried_after_a_lost_reply_is_stored_once_and_the_wait_is_announced_first() {
        let dir = tempfile::tempdir().unwrap();
        let store = CommitsThenLoses {
            inner: crate::store::memory::MemoryStore::new(),
            lost: false,
        };
        let mut s = JournaledStore::new(
            Box::new(store),
            dir.path().join("j.journal"),
            Duration::from_secs(3600),
        );
        let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let log = said.clone();
        s.set_notice(Box::new(move |m| log.lock().unwrap().push(m)));
        let run = s.create_run(&new_run()).unwrap();
        let id = s.add_sample(run, &sample(1)).unwrap();
        assert!(id > 0, "stored, not journaled");
        assert_eq!(s.samples(run).unwrap().len(), 1, "written once");
        assert_eq!(s.journaled(), 0);
        let said = said.lock().unwrap();
        assert!(
            said[0].contains("is unreachable") && said[0].contains("1 sample(s) not yet stored"),
            "{said:?}"
        );
        assert!(
            said[0].contains("keeps trying for up to 3600 s"),
            "{said:?}"
        );
    }
}
