//! Where results are kept: the [`Store`] trait and its backends.
//!
//! Why a room of its own: every number fsdelta measures is kept with its unit, direction and the
//! facts of where it was measured, in a store that several fsdelta processes can write at once.
//! SQLite is the embedded default; PostgreSQL (for fleets) implements the same trait, so no
//! backend type may leak out of this module (the fleet's queue, which only exists on PostgreSQL,
//! is the one other room that talks to the PostgreSQL connection). This room must never compute statistics.
//!
//! Which backend a location names is decided in one place, [`Backend::of`] (by the URL scheme;
//! a path is SQLite), and every way of opening a store matches on it once. Wrappers that change
//! a few methods (the run's journal, test stores) pass the rest through with `forward_store!`
//! (`forward.rs`).
//!
//! Opening a store for writing replays what earlier runs journaled for it ([`journal`]), and
//! refuses a location that cannot keep a sample (`:memory:`, a device, a directory, a read-only
//! filesystem) saying what to name instead.

pub mod alerts;
#[cfg(test)]
pub(crate) mod conformance;
pub mod copy;
pub(crate) mod forward;
pub mod journal;
pub mod memory;
pub mod pgconn;
pub mod postgres;
pub mod selector;
pub mod sqlite;

pub use alerts::{Alert, AlertFilter, AlertId, AlertKind, AlertState, NewAlert, Triage};
pub use selector::Selector;

use crate::model::{MetricPoint, RunStatus};
pub use crate::model::{NewRun, NewSample, RunId, RunInfo, SampleId, SampleRecord, StoredProfile};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One run's median of a metric: what [`Store::run_medians`] visits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunMedian<'a> {
    pub run: RunId,
    pub config: &'a str,
    pub test: &'a str,
    pub metric: &'a str,
    /// The median of the metric's values in the run's successful samples of this test.
    pub median: f64,
    /// How many values (repetitions) the median is of.
    pub n: usize,
}

/// Filter for listing runs.
#[derive(Clone, Debug, Default)]
pub struct RunFilter {
    /// Only runs with exactly this label.
    pub label: Option<String>,
    /// At most this many (newest first).
    pub limit: Option<usize>,
}

/// Errors of the store room.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be opened.
    #[error("cannot open the result store {location}: {message}")]
    Open {
        /// Path or URL.
        location: String,
        /// What went wrong and how to fix it.
        message: String,
    },
    /// The database was written by a newer fsdelta.
    #[error(
        "the result store {location} has schema version {found}, newer than this fsdelta understands ({supported}); upgrade fsdelta or use another --db"
    )]
    TooNew {
        /// Path or URL.
        location: String,
        /// Version in the file.
        found: i64,
        /// Newest version we know.
        supported: i64,
    },
    /// A selector matched nothing.
    #[error("no run matches '{0}' (see `fsdelta list`)")]
    NoMatch(String),
    /// A malformed selector.
    #[error(
        "cannot read run selector '{0}': use a run id (42), latest, latest~N or label:TEXT, optionally followed by ,host:NAME"
    )]
    BadSelector(String),
    /// A backend error.
    #[error("result store: {0}")]
    Backend(String),
    /// A value at rest this version cannot read.
    #[error("result store holds a value this fsdelta cannot read: {0}")]
    Corrupt(String),
    /// Not available in this build.
    #[error("{0}")]
    Unsupported(String),
    /// A copied run whose UUID the store already holds (another copy got there first).
    #[error(
        "the result store already holds a run with UUID {0}; it was copied here before, nothing to do"
    )]
    UuidTaken(String),
}

/// A sample as it travels between stores ([`Store::import_run`]): the sample with its
/// attachments, and its CPU profile if one was recorded.
#[derive(Clone, Debug)]
pub struct SampleCopy {
    /// The sample, its metrics, histograms and attachments.
    pub sample: NewSample,
    /// Its CPU profile.
    pub profile: Option<StoredProfile>,
}

/// A result store. Implementations must let several processes write at once, write a sample in
/// one transaction (all of it or nothing), and never expose backend types.
pub trait Store: Send {
    /// Record a run that starts now, with status `running`.
    fn create_run(&mut self, run: &NewRun) -> Result<RunId, StoreError>;
    /// Store one sample with its metrics and histograms, atomically.
    fn add_sample(&mut self, run: RunId, sample: &NewSample) -> Result<SampleId, StoreError>;
    /// End a run with its final status.
    fn finish_run(
        &mut self,
        run: RunId,
        status: RunStatus,
        finished_at: DateTime<Utc>,
    ) -> Result<(), StoreError>;
    /// Runs, newest first.
    fn runs(&self, filter: &RunFilter) -> Result<Vec<RunInfo>, StoreError>;
    /// One run.
    fn run(&self, id: RunId) -> Result<Option<RunInfo>, StoreError>;
    /// Every sample of a run, in the order stored, with metrics and histograms.
    fn samples(&self, run: RunId) -> Result<Vec<SampleRecord>, StoreError>;
    /// [`Store::samples`] of each of `runs`, in the order asked (a run asked twice is answered
    /// twice), for `compare` and `show` of a selection of many runs. Backends where each query
    /// is a round trip (PostgreSQL) answer it with one query a table for all the runs; this
    /// default, which SQLite and the in-memory store use (no round trips), reads run by run.
    fn samples_of_runs(&self, runs: &[RunId]) -> Result<Vec<Vec<SampleRecord>>, StoreError> {
        runs.iter().map(|&r| self.samples(r)).collect()
    }
    /// Keep the CPU profile of a stored sample (one per sample).
    fn add_profile(&mut self, sample: SampleId, profile: &StoredProfile) -> Result<(), StoreError>;
    /// The CPU profile of a sample, if one was recorded.
    fn profile(&self, sample: SampleId) -> Result<Option<StoredProfile>, StoreError>;

    /// Every value of `metric` in the successful samples of `test`, over every run, in run
    /// order then sample order. Backends answer it with one query; this default reads every
    /// sample of every run.
    fn metric_points(&self, test: &str, metric: &str) -> Result<Vec<MetricPoint>, StoreError> {
        let mut runs = self.runs(&RunFilter::default())?;
        runs.reverse();
        let mut out = Vec::new();
        for r in runs {
            for s in self.samples(r.id)? {
                if s.sample.test != test || s.sample.status != crate::model::SampleStatus::Ok {
                    continue;
                }
                if let Some(m) = s.sample.metrics.iter().find(|m| m.name == metric) {
                    out.push(MetricPoint {
                        run_id: r.id,
                        config: s.sample.config.clone(),
                        metric: m.clone(),
                    });
                }
            }
        }
        Ok(out)
    }

    /// The raw results stored with a sample ([`NewSample::attachments`]), by name; empty for
    /// a sample that has none or a store that keeps none. [`Store::samples`] leaves them out.
    fn attachments(&self, _sample: SampleId) -> Result<Vec<crate::model::Attachment>, StoreError> {
        Ok(Vec::new())
    }

    /// The successful samples of `runs` with their metrics only (no facts, histograms or
    /// profiles), in run order then sample order: what a report's histories over hundreds of
    /// runs read. Backends answer it with one query; this default reads every sample.
    fn sample_metrics(&self, runs: &[RunId]) -> Result<Vec<SampleRecord>, StoreError> {
        let mut ids = runs.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let mut out = Vec::new();
        for r in ids {
            for s in self.samples(r)? {
                if s.sample.status == crate::model::SampleStatus::Ok {
                    out.push(SampleRecord::metrics_only(
                        s.id,
                        s.run_id,
                        s.sample.config,
                        s.sample.test,
                        s.sample.repetition,
                        s.sample.sequence,
                        s.sample.metrics,
                    ));
                }
            }
        }
        Ok(out)
    }

    /// Per run, configuration, test and metric of the successful samples of `runs`: the
    /// median of the metric's values and how many there are, one call of `visit` each, in run order (within a run, in
    /// any order). What a report's histories over hundreds of runs draw: SQLite keeps these
    /// medians in a table written with each sample (schema 8), so the history of 500 runs
    /// reads one row a run and metric instead of every repetition's. This default computes
    /// them from [`Store::sample_metrics`], with [`medians_of`].
    fn run_medians(
        &self,
        runs: &[RunId],
        visit: &mut dyn FnMut(RunMedian<'_>),
    ) -> Result<(), StoreError> {
        let samples = self.sample_metrics(runs)?;
        let mut at = 0;
        while at < samples.len() {
            let run = samples[at].run_id;
            let end = at + samples[at..].partition_point(|s| s.run_id == run);
            let rows = samples[at..end].iter().flat_map(|s| {
                s.sample.metrics.iter().map(|m| {
                    (
                        s.sample.config.as_str(),
                        s.sample.test.as_str(),
                        m.name.as_str(),
                        m.value,
                    )
                })
            });
            for ((config, test, metric), (median, n)) in medians_of(rows) {
                visit(RunMedian {
                    run,
                    config,
                    test,
                    metric,
                    median,
                    n,
                });
            }
            at = end;
        }
        Ok(())
    }

    /// The UUID of a run (schema 6): the same in every store the run is copied to. `None` for
    /// a run this store does not hold, and for stores that keep no UUIDs.
    fn run_uuid(&self, _id: RunId) -> Result<Option<String>, StoreError> {
        Ok(None)
    }

    /// The run whose UUID is `uuid`, if this store holds it.
    fn run_by_uuid(&self, uuid: &str) -> Result<Option<RunInfo>, StoreError>;

    /// Write a run copied from another store, and all its samples, in one transaction (all of
    /// it or nothing). The run keeps its `uuid`, label, suite, start and end times, status,
    /// fsdelta version and environment (host, machine id, kernel); it gets a new id here, and
    /// no owner (the process that made it ran elsewhere, so no `cleanup` here may abort it).
    /// `run.id` and `run.sample_count` are ignored. Samples keep their order, metrics,
    /// histograms, attachments and profile. A UUID the store already holds is
    /// [`StoreError::UuidTaken`] and writes nothing.
    fn import_run(
        &mut self,
        uuid: &str,
        run: &RunInfo,
        samples: &[SampleCopy],
    ) -> Result<RunId, StoreError>;

    /// Mark `running` runs whose owning process is gone as `aborted` and return their ids (for
    /// `run` and `cleanup` to say so). Backends that record no owner abort nothing.
    fn abort_orphaned_runs(&mut self) -> Result<Vec<RunId>, StoreError> {
        Ok(Vec::new())
    }

    /// Where samples this store refuses are journaled ([`journal::JournaledStore`]); `None` for
    /// stores that need no journal (in-memory, or already journaled).
    fn journal_path(&self) -> Option<PathBuf> {
        None
    }

    /// Keep an alert (`alerts`, issue 40) unless the store already holds one with its key;
    /// `Some(id)` when it is new, `None` when it was raised before (its triage untouched).
    /// Stores that keep no alerts (in-memory, wrappers) refuse.
    fn add_alert(&mut self, _alert: &NewAlert) -> Result<Option<AlertId>, StoreError> {
        Err(no_alerts())
    }

    /// The alerts `filter` selects: untriaged (`new`) first, then oldest first (by when the
    /// change was measured, then id).
    fn alerts(&self, _filter: &AlertFilter) -> Result<Vec<Alert>, StoreError> {
        Err(no_alerts())
    }

    /// One alert, if the store holds it.
    fn alert(&self, _id: AlertId) -> Result<Option<Alert>, StoreError> {
        Err(no_alerts())
    }

    /// Triage an alert: its state, note, who and when (the last decision wins). `false` when
    /// no alert has this id. A note or who over the bounds of [`alerts::check_triage`] is
    /// refused before anything is written.
    fn triage_alert(&mut self, _id: AlertId, _triage: &Triage) -> Result<bool, StoreError> {
        Err(no_alerts())
    }

    /// The runs a selector names. `latest` and `latest~N` count runs that have ended (any
    /// status but `running`), newest first; `label:TEXT` returns every run with that label; a
    /// `,host:NAME` qualifier keeps only the runs made on that machine (its host name), and
    /// `latest~N,host:NAME` counts that machine's runs only.
    fn select(&self, sel: &Selector) -> Result<Vec<RunInfo>, StoreError> {
        let (base, host) = match sel {
            Selector::OnHost { sel, host } => (sel.as_ref(), Some(host.as_str())),
            s => (s, None),
        };
        let on_host = |r: &RunInfo| host.is_none_or(|h| r.environment.host == h);
        let found = match base {
            Selector::Id(id) => self.run(*id)?.into_iter().filter(on_host).collect(),
            Selector::Latest(n) => self
                .runs(&RunFilter::default())?
                .into_iter()
                .filter(|r| r.status != RunStatus::Running && on_host(r))
                .nth(*n as usize)
                .into_iter()
                .collect(),
            Selector::Label(label) => self
                .runs(&RunFilter {
                    label: Some(label.clone()),
                    limit: None,
                })?
                .into_iter()
                .filter(on_host)
                .collect::<Vec<_>>(),
            Selector::OnHost { .. } => return Err(StoreError::BadSelector(sel.to_string())),
        };
        if found.is_empty() {
            return Err(StoreError::NoMatch(sel.to_string()));
        }
        Ok(found)
    }
}

/// Why a store without an alerts table refuses alert calls.
fn no_alerts() -> StoreError {
    StoreError::Unsupported(
        "this store keeps no alerts (only SQLite and PostgreSQL stores do); name one with --db"
            .into(),
    )
}

/// The median ([`crate::model::median`]) and count of each (configuration, test,
/// metric)'s values among `rows`, keyed in name order: the one definition of a run's medians,
/// for every backend's [`Store::run_medians`] and SQLite's table of them.
pub(crate) fn medians_of<'a>(
    rows: impl IntoIterator<Item = (&'a str, &'a str, &'a str, f64)>,
) -> BTreeMap<(&'a str, &'a str, &'a str), (f64, usize)> {
    let mut values: BTreeMap<(&str, &str, &str), Vec<f64>> = BTreeMap::new();
    for (config, test, metric, value) in rows {
        values
            .entry((config, test, metric))
            .or_default()
            .push(value);
    }
    values
        .into_iter()
        .filter_map(|(k, v)| crate::model::median(&v).map(|m| (k, (m, v.len()))))
        .collect()
}

/// A new random (version 4) UUID for a run, in its usual text form.
pub(crate) fn new_run_uuid() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Where the store lives when neither `--db` nor `FSDELTA_DB` says:
/// `$XDG_DATA_HOME/fsdelta/results.sqlite`, else `~/.local/share/fsdelta/results.sqlite`; `None`
/// when neither variable is set (never a store in whatever the current directory is).
pub fn default_location() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| Path::new(&h).join(".local/share"))
        })?;
    Some(base.join("fsdelta").join("results.sqlite"))
}

/// The store backends, chosen by the scheme of the location (`--db`, `FSDELTA_DB`, `sync
/// --from/--to`, the fleet's `--db`). This is the one place that decides which backend a
/// location names; each way of opening a store ([`open`], [`open_for_run`], [`open_read_only`],
/// [`open_fleet`], [`journals_for`]) has one `match` over it. A new backend is a variant here,
/// its schemes in [`Backend::SCHEMES`], an arm in each of those, and the conformance suite
/// (`conformance.rs`) run against it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A SQLite file: every location no scheme below claims is a path.
    Sqlite,
    /// A PostgreSQL database (the fleet's): a `postgres://` or `postgresql://` URL.
    Postgres,
}

impl Backend {
    /// The URL schemes that name a backend other than SQLite.
    pub const SCHEMES: [(&'static str, Backend); 2] = [
        ("postgres://", Backend::Postgres),
        ("postgresql://", Backend::Postgres),
    ];

    /// The backend `location` names.
    pub fn of(location: &str) -> Backend {
        Self::SCHEMES
            .iter()
            .find(|(scheme, _)| location.starts_with(scheme))
            .map_or(Backend::Sqlite, |&(_, backend)| backend)
    }
}

fn check_location(location: &str) -> Result<(), StoreError> {
    if location.is_empty() {
        return Err(StoreError::Open {
            location: "(none)".into(),
            message: "no store location: neither HOME nor XDG_DATA_HOME is set; name the store with --db PATH or FSDELTA_DB".into(),
        });
    }
    Ok(())
}

/// Open the store at `location` for writing: a path to a SQLite file (created with its parent
/// directory), or a `postgres://` URL. Samples journaled by an earlier run whose store refused
/// them ([`journal`]: beside a SQLite store, and in the state directory for either kind) are
/// replayed into it, exactly once; the replay's report is returned by [`open_for_run`] (this
/// function prints nothing and keeps the count).
pub fn open(location: &str) -> Result<Box<dyn Store>, StoreError> {
    open_writer(location, None).map(|(s, _)| s)
}

/// [`open`] and the replay's report, for `cleanup`.
pub fn open_replaying(location: &str) -> Result<(Box<dyn Store>, journal::Replayed), StoreError> {
    open_writer(location, None)
}

/// How long one call of a run's PostgreSQL store retries a lost connection: short, because the
/// run's [`journal::JournaledStore`] is the one place that waits (saying so) and journals.
pub const RUN_RECONNECT_WINDOW: std::time::Duration = std::time::Duration::from_secs(4);

/// [`open`] for a run, also returning what was replayed from the journals. A PostgreSQL store
/// retries a lost connection for [`RUN_RECONNECT_WINDOW`] a call (not [`pgconn::RETRY_FOR`]):
/// the run's [`journal::JournaledStore`] waits, says so, and journals.
pub fn open_for_run(location: &str) -> Result<(Box<dyn Store>, journal::Replayed), StoreError> {
    open_writer(location, Some(RUN_RECONNECT_WINDOW))
}

/// Where a run's samples go when the store at `location` refuses them
/// ([`journal::JournaledStore`]): beside a SQLite store, then in the state directory; for a
/// PostgreSQL store, in the state directory.
pub fn journals_for(location: &str) -> journal::Journals {
    if Backend::of(location) == Backend::Postgres {
        let shown = pgconn::PgTarget::parse(location)
            .map(|t| format!("postgres {}", t.shown))
            .unwrap_or_else(|_| pgconn::redact(location));
        return journal::Journals {
            primary: journal::state_journal(&shown).unwrap_or_default(),
            fallback: None,
            store: shown,
        };
    }
    let db = Path::new(location);
    let name = journal::sqlite_name(db);
    journal::Journals {
        primary: journal::path_beside(db),
        fallback: journal::state_journal(&name),
        store: name,
    }
}

fn open_writer(
    location: &str,
    reconnect: Option<std::time::Duration>,
) -> Result<(Box<dyn Store>, journal::Replayed), StoreError> {
    check_location(location)?;
    // After the store is opened (a new SQLite file exists, so its name is its canonical path).
    let paths = || {
        let journals = journals_for(location);
        let mut paths = vec![journals.primary];
        paths.extend(journals.fallback);
        paths.retain(|p| !p.as_os_str().is_empty());
        paths
    };
    let mut store: Box<dyn Store> = match Backend::of(location) {
        Backend::Postgres => {
            let mut pg = postgres::PgStore::open(location)?;
            if let Some(w) = reconnect {
                pg.set_retry_for(w);
            }
            Box::new(pg)
        }
        Backend::Sqlite => {
            check_sqlite_location(location)?;
            Box::new(sqlite::SqliteStore::open(Path::new(location))?)
        }
    };
    let replayed = journal::replay_all(store.as_mut(), &paths())?;
    Ok((store, replayed))
}

/// `--db` values that cannot be a SQLite store, refused with what to do instead.
fn check_sqlite_location(location: &str) -> Result<(), StoreError> {
    let refuse = |message: String| {
        Err(StoreError::Open {
            location: location.to_string(),
            message,
        })
    };
    if location == ":memory:" || location.starts_with("file::memory:") {
        return refuse(
            "an in-memory database keeps nothing after fsdelta exits, so a run's samples would be lost; name a file (--db results.sqlite) or a postgres:// URL".into(),
        );
    }
    let p = Path::new(location);
    if let Ok(m) = std::fs::metadata(p) {
        if m.is_dir() {
            return refuse("is a directory; name a file in it (--db DIR/results.sqlite)".into());
        }
        if !m.is_file() {
            return refuse(
                "is not a regular file (a device, a FIFO or a socket such as /dev/null): a store must be a file; name a file (--db results.sqlite)".into(),
            );
        }
    }
    // The directory the file is (or will be) in: a read-only filesystem cannot hold a store.
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut existing = Some(dir);
    while let Some(d) = existing {
        if d.exists() {
            break;
        }
        existing = d.parent().filter(|x| !x.as_os_str().is_empty());
    }
    if let Some(d) = existing.or(Some(Path::new(".")))
        && let Ok(st) = rustix::fs::statvfs(d)
        && st.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY)
    {
        return refuse(format!(
            "{} is on a read-only filesystem, where a store cannot be written (nor its journal); name a store on a writable filesystem with --db PATH, or remount it read-write",
            d.display()
        ));
    }
    Ok(())
}

/// Open the store at `location` for reading only (`list`, `show`, `compare`, `history`,
/// `report`, `export`, `profile`): nothing is created, migrated or written, and a missing file is
/// an error rather than a new empty store.
pub fn open_read_only(location: &str) -> Result<Box<dyn Store>, StoreError> {
    check_location(location)?;
    if location == ":memory:" || location.starts_with("file::memory:") {
        return Err(StoreError::Open {
            location: location.to_string(),
            message: "an in-memory database holds nothing fsdelta stored (it lives only as long as one fsdelta); name the store's file (--db results.sqlite) or a postgres:// URL".into(),
        });
    }
    Ok(match Backend::of(location) {
        Backend::Postgres => Box::new(postgres::PgStore::open_read_only(location)?),
        Backend::Sqlite => Box::new(sqlite::SqliteStore::open_read_only(Path::new(location))?),
    })
}

/// Open the fleet's store (the job queue keeps its jobs beside the runs): PostgreSQL only, its
/// schema brought up to date. The queue and the agent hold it as a [`postgres::PgStore`]
/// (claims, leases); they refuse another backend first, with their own words.
pub fn open_fleet(location: &str) -> Result<postgres::PgStore, StoreError> {
    match Backend::of(location) {
        Backend::Postgres => postgres::PgStore::open(location),
        Backend::Sqlite => Err(StoreError::Unsupported(format!(
            "the job queue needs a PostgreSQL database (--db postgres://USER@HOST/DB), not '{location}'"
        ))),
    }
}
