//! The leftover-state file: a record of every mount, loop device, file and directory fsdelta is
//! about to create, so that after a kill -9 the next `fsdelta` start ([`recover_leftovers`]) or
//! `fsdelta cleanup` can undo them.
//!
//! Where it lives: `$FSDELTA_STATE_FILE` when set (it must be absolute), else
//! `$XDG_STATE_HOME/fsdelta/leftovers.json`, else `$HOME/.local/state/fsdelta/leftovers.json`,
//! else, for root only, `/var/lib/fsdelta/leftovers.json`; anyone else without HOME is refused
//! (never a world-writable fallback such as /var/tmp, where another user could plant entries that
//! root's recovery would act on). It is one place per user, not per scratch directory, because the
//! next start does not know which config file the killed run used. Writers take an exclusive
//! `flock` on `leftovers.json.lock` and replace the file atomically (write to an `O_EXCL`
//! temporary, fsync, rename), so concurrent runs share it safely.
//!
//! The file is an instruction to unmount and delete, so it is trusted only when it cannot have been
//! written by someone else: its directory must be owned by the current user (or root) and writable
//! by no one else (a sticky shared directory such as /tmp is refused too), every directory above it
//! must be owned by the current user or root and writable by others only when sticky, the file and
//! the lock must be owned by the current user and not writable by group or others, and every open
//! uses `O_NOFOLLOW` (a planted symlink is refused, never followed). A refused place is said so
//! even when the file does not exist yet (never "nothing to do"). The file-level checks are
//! `crate::os::files`'s, shared with every other file fsdelta writes or replays.
//!
//! Protocol: an entry is written BEFORE its resource is created and cleared AFTER it is undone.
//! Each entry names its owner (pid and process start time); recovery skips entries whose owner
//! still lives, so a second fsdelta never tears down a running one.
//!
//! Must never undo anything the file does not name, nor anything that no longer matches what was
//! recorded: a mount point must still hold a mount from the recorded source, a loop device must
//! still be backed by the recorded image, a directory is only removed when empty (`rmdir`), and a
//! file only when it is a regular file no loop device still uses. Even then, recovery only acts
//! inside the scratch roots fsdelta itself records (a configuration's `<scratch>/<name>.<pid>`
//! directory, a plain run's `fsdelta-scratch-<pid>-<n>` directory): files, directories and mount
//! points under such a root, and loop devices whose backing file lies under one. Anything else is
//! reported and left alone.
//!
//! Stale entries: a dead owner's entry whose resource is gone or is now someone else's (its loop
//! device detached, or attached by someone else to another file; its image, directory or mount
//! gone) is dropped with one line saying why, wherever it lies: dropping an entry touches
//! nothing, and keeping it would repeat the same warning at every start. Mounts are made in
//! fsdelta's own mount namespace (`crate::os::namespace`), recorded with it: from outside (a
//! `fsdelta cleanup` in the machine's namespace) such a mount is invisible; it is stale once no
//! process lives in that namespace any more (the kernel detached its mounts with it), and while
//! one does (a process the workload left running), cleanup names it and keeps the entry.

use super::SiteError;
use super::loopdev;
use super::mount;
use crate::os::files;
use crate::os::process::Owner;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How to get out of a refused state-file location.
const STATE_FIX: &str =
    "set FSDELTA_STATE_FILE to an absolute path in a directory only you can write";

/// Something fsdelta creates and must undo.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Resource {
    /// A mount at `target` of `source` (a device path, or `fsdelta-NAME` for a tmpfs).
    Mount {
        /// The mount point (absolute, canonical).
        target: PathBuf,
        /// The mounted source as /proc/self/mounts shows it.
        source: String,
        /// The mount namespace it was made in (`crate::os::namespace`): `run` and `agent` mount
        /// in a namespace of their own, which a later `fsdelta cleanup` cannot see into. Absent
        /// in entries of older versions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<u64>,
    },
    /// A loop device attached to an image.
    Loop {
        /// `/dev/loopN`.
        device: PathBuf,
        /// The image it is backed by (absolute, canonical).
        backing_file: PathBuf,
    },
    /// A regular file fsdelta created (a loop image, a log).
    File {
        /// The file.
        path: PathBuf,
    },
    /// A directory fsdelta created; removed only when empty.
    Dir {
        /// The directory.
        path: PathBuf,
    },
    /// A plain run's scratch directory (`fsdelta-scratch-<pid>-<n>`), removed with everything in
    /// it: fsdelta made all of it.
    ScratchTree {
        /// The directory.
        path: PathBuf,
    },
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::Mount { target, source, .. } => {
                write!(f, "mount of {source} at {}", target.display())
            }
            Resource::Loop {
                device,
                backing_file,
            } => write!(
                f,
                "loop device {} (image {})",
                device.display(),
                backing_file.display()
            ),
            Resource::File { path } => write!(f, "file {}", path.display()),
            Resource::Dir { path } => write!(f, "directory {}", path.display()),
            Resource::ScratchTree { path } => {
                write!(f, "scratch directory {}", path.display())
            }
        }
    }
}

/// One recorded resource.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Unique within the file.
    pub id: u64,
    /// Who created it.
    pub owner: Owner,
    /// What it is.
    #[serde(flatten)]
    pub resource: Resource,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Document {
    version: u32,
    entries: Vec<Entry>,
}

/// The state file at one path. Cheap to clone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateFile {
    path: PathBuf,
    /// Why no usable location could be chosen (see [`StateFile::locate`]); every use fails with it.
    refused: Option<(String, String)>,
}

/// An entry this process wrote; [`Record::clear`] removes it once its resource is undone.
#[derive(Debug)]
pub struct Record {
    state: StateFile,
    id: u64,
}

impl Record {
    /// Remove the entry (its resource was undone or never came to exist).
    pub fn clear(self) -> Result<(), SiteError> {
        self.state.clear(self.id)
    }
}

impl StateFile {
    /// The state file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> StateFile {
        StateFile {
            path: path.into(),
            refused: None,
        }
    }

    /// The state file of this process's environment (see [`StateFile::locate`]). When no usable
    /// location exists, the returned value fails every use (and [`StateFile::check`]) with why.
    pub fn default_location() -> StateFile {
        match StateFile::try_default() {
            Ok(s) => s,
            Err(SiteError::State { path, message }) => StateFile {
                path: PathBuf::new(),
                refused: Some((path, message)),
            },
            Err(e) => StateFile {
                path: PathBuf::new(),
                refused: Some(("(none)".into(), e.to_string())),
            },
        }
    }

    /// The state file of this process's environment, or why there is none.
    pub fn try_default() -> Result<StateFile, SiteError> {
        crate::os::state::default_path()
            .map(StateFile::new)
            .map_err(|e| SiteError::State {
                path: e.path,
                message: e.message,
            })
    }

    /// The first of `$FSDELTA_STATE_FILE` (which must be absolute),
    /// `$XDG_STATE_HOME/fsdelta/leftovers.json` (when absolute, as the XDG spec requires),
    /// `$HOME/.local/state/fsdelta/leftovers.json`, and for root `/var/lib/fsdelta/leftovers.json`
    /// (the rule is `crate::os::state::locate`'s, shared with the store's journals).
    pub fn locate(
        override_path: Option<&std::ffi::OsStr>,
        xdg_state_home: Option<&std::ffi::OsStr>,
        home: Option<&std::ffi::OsStr>,
        is_root: bool,
    ) -> Result<PathBuf, SiteError> {
        crate::os::state::locate(override_path, xdg_state_home, home, is_root).map_err(|e| {
            SiteError::State {
                path: e.path,
                message: e.message,
            }
        })
    }

    /// Fail now if this state file cannot be used (no usable location; a directory on its way
    /// that another user owns or can write, see [`StateFile::check_dirs`]; a state or lock file
    /// owned by someone else or writable by others; a symlink). Creates nothing.
    pub fn check(&self) -> Result<(), SiteError> {
        if let Some((_, why)) = &self.refused {
            return Err(self.err(why.clone()));
        }
        if let Some(dir) = self.existing_dir() {
            self.check_dirs(&dir)?;
        }
        for p in [self.path.clone(), self.lock_path()] {
            match fs::symlink_metadata(&p) {
                Ok(m) => self.check_meta(&p, &m)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(self.err(format!("cannot inspect {}: {e}", p.display()))),
            }
        }
        Ok(())
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write an entry for `resource`, owned by this process. Call BEFORE creating it.
    pub fn record(&self, resource: Resource) -> Result<Record, SiteError> {
        let owner = Owner::current();
        let mut id = 0;
        self.update(|doc| {
            id = doc.entries.iter().map(|e| e.id).max().unwrap_or(0) + 1;
            doc.entries.push(Entry {
                id,
                owner,
                resource,
            });
        })?;
        Ok(Record {
            state: self.clone(),
            id,
        })
    }

    /// Remove the entry `id` (no error when it is already gone).
    pub fn clear(&self, id: u64) -> Result<(), SiteError> {
        self.update(|doc| doc.entries.retain(|e| e.id != id))
    }

    /// Every entry; none when the file does not exist (its place is checked all the same, so
    /// that a state file nobody could trust is said so, not taken for "nothing to do").
    pub fn entries(&self) -> Result<Vec<Entry>, SiteError> {
        self.check()?;
        if fs::symlink_metadata(&self.path).is_err() {
            return Ok(Vec::new());
        }
        let _lock = self.lock()?;
        Ok(self.read()?.entries)
    }

    fn err(&self, message: String) -> SiteError {
        if let Some((path, _)) = &self.refused {
            return SiteError::State {
                path: path.clone(),
                message,
            };
        }
        SiteError::State {
            path: self.path.display().to_string(),
            message,
        }
    }

    fn lock_path(&self) -> PathBuf {
        let mut p = self.path.clone().into_os_string();
        p.push(".lock");
        PathBuf::from(p)
    }

    fn existing_dir(&self) -> Option<PathBuf> {
        self.path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .filter(|d| d.exists())
    }

    /// The state file's directory must be a real directory owned by us (or root) and writable
    /// by no one else, sticky or not: a shared directory is never the state's home, as anyone
    /// could create the state file or its lock there before us. Every directory above it, as
    /// written and as resolved, must pass [`files::check_dir`] (owned by us or root, writable by
    /// others only when sticky), or its owner could move the state's directory away and put one
    /// of their own in its place.
    fn check_dirs(&self, dir: &Path) -> Result<(), SiteError> {
        use std::os::unix::fs::MetadataExt;
        let refuse = |e: files::FileError| self.err(format!("{e}; {STATE_FIX}"));
        files::check_dir(dir).map_err(refuse)?;
        if files::is_shared_dir(dir) {
            let m = fs::symlink_metadata(dir)
                .map_err(|e| self.err(format!("cannot inspect {}: {e}", dir.display())))?;
            return Err(self.err(format!(
                "directory {} is shared (owner uid {}, mode {:o}: writable by others); another \
                 user could plant entries or the lock there; {STATE_FIX}",
                dir.display(),
                m.uid(),
                m.mode() & 0o7777
            )));
        }
        let resolved = fs::canonicalize(dir)
            .map_err(|e| self.err(format!("cannot resolve {}: {e}", dir.display())))?;
        for up in dir.ancestors().skip(1).chain(resolved.ancestors().skip(1)) {
            if up.as_os_str().is_empty() {
                continue;
            }
            match fs::symlink_metadata(up) {
                // A symlink on the way is followed (the resolved path is checked too); its own
                // directory is one of the directories checked.
                Ok(m) if m.file_type().is_symlink() => {}
                _ => files::check_dir(up).map_err(refuse)?,
            }
        }
        Ok(())
    }

    /// A state or lock file must be a regular file owned by us and writable by no one else.
    fn check_meta(&self, p: &Path, m: &fs::Metadata) -> Result<(), SiteError> {
        files::check_own_file(p, m)
            .map_err(|e| self.err(format!("{e}; or set FSDELTA_STATE_FILE elsewhere")))
    }

    /// The state's lock (an flock on its lock file), held until the value is dropped.
    fn lock(&self) -> Result<crate::os::fdtable::FlockedFile, SiteError> {
        use std::os::unix::fs::DirBuilderExt;
        if let Some((_, why)) = &self.refused {
            return Err(self.err(why.clone()));
        }
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| {
                    self.err(format!(
                        "cannot create {}: {e}; set FSDELTA_STATE_FILE to a writable path",
                        dir.display()
                    ))
                })?;
            self.check_dirs(dir)?;
        }
        let lock_path = self.lock_path();
        let open = || {
            files::open(&lock_path, files::Access::ReadWrite).map_err(|e| {
                self.err(format!(
                    "the lock file {e}; set FSDELTA_STATE_FILE to a writable path of yours"
                ))
            })
        };
        crate::os::fdtable::flocked(open, |e| self.err(format!("cannot lock: {e}")))
    }

    fn read(&self) -> Result<Document, SiteError> {
        use std::io::Read;
        let text = match files::open(&self.path, files::Access::Read) {
            Ok(mut f) => {
                let mut text = String::new();
                f.read_to_string(&mut text)
                    .map_err(|e| self.err(format!("cannot read: {e}")))?;
                text
            }
            Err(files::FileError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                return Ok(Document::default());
            }
            Err(e) => return Err(self.err(format!("{e}; or set FSDELTA_STATE_FILE elsewhere"))),
        };
        if text.trim().is_empty() {
            return Ok(Document::default());
        }
        serde_json::from_str(&text).map_err(|e| {
            self.err(format!(
                "unreadable ({e}); check what it names by hand (mounts, loop devices), then delete it"
            ))
        })
    }

    fn update(&self, f: impl FnOnce(&mut Document)) -> Result<(), SiteError> {
        let _lock = self.lock()?;
        let mut doc = self.read()?;
        doc.version = 1;
        f(&mut doc);
        let mut text = serde_json::to_string_pretty(&doc)
            .map_err(|e| self.err(format!("cannot write: {e}")))?;
        text.push('\n');
        // An O_EXCL temporary beside it, fsynced and renamed over it; one left by a crash (we
        // hold the lock, so no live writer owns it) is unlinked, never followed.
        files::replace(&self.path, text.as_bytes())
            .map_err(|e| self.err(format!("cannot write: {e}; is the disk full?")))
    }
}

/// What a recovery did, for the user to read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// What was undone ("unmounted ...", "detached ...", "removed ...").
    pub undone: Vec<String>,
    /// Entries cleared because their resource no longer exists or no longer matches, each with
    /// why ("... : it now backs /srv/other.img, not this image").
    pub stale: Vec<String>,
    /// Entries left alone because the process that made them still runs.
    pub live: Vec<String>,
    /// What could not be undone, with why; these entries stay in the file.
    pub failed: Vec<String>,
}

impl RecoveryReport {
    /// Whether there is nothing to tell: nothing undone, stale or failed. Entries of running
    /// fsdelta processes are not leftovers (a plain run records its scratch directory), so they
    /// alone do not make a report.
    pub fn is_empty(&self) -> bool {
        self.undone.is_empty() && self.stale.is_empty() && self.failed.is_empty()
    }
}

impl fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.undone {
            writeln!(f, "{s}")?;
        }
        for s in &self.stale {
            writeln!(f, "dropped a stale entry: {s}")?;
        }
        for s in &self.live {
            writeln!(f, "still in use by a running fsdelta: {s}")?;
        }
        for s in &self.failed {
            writeln!(f, "could not undo: {s}")?;
        }
        Ok(())
    }
}

/// Undo the leftovers named in the default state file (see the module docs). Call at every
/// fsdelta start; cheap when there is nothing to do, and creates no file then.
pub fn recover_leftovers() -> Result<RecoveryReport, SiteError> {
    recover(&StateFile::default_location())
}

/// Undo the leftovers of dead owners named in `state`: mounts first (deepest first), then loop
/// devices, then files, then directories (deepest first).
pub fn recover(state: &StateFile) -> Result<RecoveryReport, SiteError> {
    let mut report = RecoveryReport::default();
    let mut dead = Vec::new();
    let entries = state.entries()?;
    let roots = scratch_roots(&entries);
    for e in entries {
        // A dead owner's entry whose resource is gone or now someone else's is dropped whatever
        // its place: dropping an entry undoes nothing.
        if !e.owner.is_alive()
            && let Some(why) = stale(&e.resource)
        {
            report.stale.push(format!("{}: {why}", e.resource));
            state.clear(e.id)?;
            continue;
        }
        // A dead owner's mount (tracefs, say) in a namespace a leftover process holds: name
        // that process, wherever the mount lies (nothing is done).
        if let Resource::Mount {
            target,
            source,
            namespace: Some(ns),
        } = &e.resource
            && !e.owner.is_alive()
            && Some(*ns) != crate::os::namespace::current_mount_namespace()
            && !mounted_here(target, source)
        {
            let holders = holders_once_exits_end(*ns);
            if holders.is_empty() {
                report
                    .stale
                    .push(format!("{}: {GONE_WITH_NAMESPACE}", e.resource));
                state.clear(e.id)?;
            } else {
                report
                    .failed
                    .push(format!("{}: {}", e.resource, held_elsewhere(*ns, &holders)));
            }
            continue;
        }
        if !inside_roots(&e.resource, &roots) {
            report.failed.push(format!(
                "{}: not inside a scratch directory fsdelta recorded; left alone (check it by hand, then remove the entry from {})",
                e.resource,
                state.path().display()
            ));
            continue;
        }
        if e.owner.is_alive() {
            report
                .live
                .push(format!("{} (pid {})", e.resource, e.owner.pid));
        } else {
            dead.push(e);
        }
    }
    let rank = |r: &Resource| match r {
        Resource::Mount { .. } => 0,
        Resource::Loop { .. } => 1,
        Resource::File { .. } => 2,
        Resource::Dir { .. } => 3,
        Resource::ScratchTree { .. } => 4,
    };
    let depth = |r: &Resource| match r {
        Resource::Mount { target: p, .. } | Resource::Dir { path: p } => p.components().count(),
        _ => 0,
    };
    dead.sort_by(|a, b| {
        rank(&a.resource)
            .cmp(&rank(&b.resource))
            .then(depth(&b.resource).cmp(&depth(&a.resource)))
    });
    for e in dead {
        match undo(&e.resource) {
            Ok(Undo::Done(what)) => {
                report.undone.push(what);
                state.clear(e.id)?;
            }
            Ok(Undo::Stale(why)) => {
                report.stale.push(format!("{}: {why}", e.resource));
                state.clear(e.id)?;
            }
            Err(why) => report.failed.push(format!("{}: {why}", e.resource)),
        }
    }
    Ok(report)
}

/// The scratch roots the file records: a configuration's `<scratch>/<name>.<pid>` directory and
/// a plain run's `fsdelta-scratch-<pid>-<n>` directory, named after the pid that owns the entry.
fn scratch_roots(entries: &[Entry]) -> Vec<PathBuf> {
    entries
        .iter()
        .filter_map(|e| {
            let (path, ok) = match &e.resource {
                Resource::Dir { path } => (
                    path,
                    name_of(path).is_some_and(|n| {
                        n.rsplit_once('.').is_some_and(|(stem, pid)| {
                            !stem.is_empty() && pid == e.owner.pid.to_string()
                        })
                    }),
                ),
                Resource::ScratchTree { path } => (path, is_scratch_tree_name(path, e.owner.pid)),
                _ => return None,
            };
            (ok && is_plain_absolute(path)).then(|| path.clone())
        })
        .collect()
}

fn name_of(p: &Path) -> Option<&str> {
    p.file_name()?.to_str()
}

/// `fsdelta-scratch-<pid>-<n>` (the name [`super::scratch::ScratchSite`] gives).
fn is_scratch_tree_name(p: &Path, pid: u32) -> bool {
    name_of(p)
        .and_then(|n| n.strip_prefix(&format!("fsdelta-scratch-{pid}-")))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Absolute, with no `.` or `..` component (so `starts_with` means "inside").
fn is_plain_absolute(p: &Path) -> bool {
    use std::path::Component;
    p.is_absolute()
        && p.components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
}

/// Whether recovery may act on `r`: it lies inside (or is) one of the recorded scratch roots.
fn inside_roots(r: &Resource, roots: &[PathBuf]) -> bool {
    let under = |p: &Path| is_plain_absolute(p) && roots.iter().any(|root| p.starts_with(root));
    match r {
        Resource::Mount { target, .. } => under(target),
        Resource::Loop { backing_file, .. } => under(backing_file),
        Resource::File { path } | Resource::Dir { path } | Resource::ScratchTree { path } => {
            under(path)
        }
    }
}

enum Undo {
    Done(String),
    /// Nothing to undo: why.
    Stale(String),
}

/// Why `r` is gone or no longer fsdelta's (read-only: it looks, it never acts), or `None` when
/// it still matches what was recorded or cannot be told from here.
fn stale(r: &Resource) -> Option<String> {
    match r {
        Resource::Mount {
            target,
            source,
            namespace,
        } => {
            let mounts = fs::read_to_string("/proc/self/mounts").ok()?;
            let held = super::env::parse_mounts(&mounts)
                .iter()
                .any(|m| Path::new(&m.target) == target && &m.source == source);
            if held {
                return None;
            }
            match namespace {
                Some(ns) if Some(*ns) != crate::os::namespace::current_mount_namespace() => {
                    // Mounted in a namespace this process cannot see: stale only once no
                    // process holds that namespace any more (then its mounts went with it).
                    crate::os::namespace::processes_in(*ns)
                        .is_empty()
                        .then(|| GONE_WITH_NAMESPACE.to_string())
                }
                _ => Some("no longer mounted".into()),
            }
        }
        Resource::Loop {
            device,
            backing_file,
        } => {
            let Some(n) = loopdev::number_of(device) else {
                return Some(format!("{} is not a loop device", device.display()));
            };
            match loopdev::backing_file(n) {
                None => Some(format!("{} is detached", device.display())),
                Some(b) if b != *backing_file => Some(format!(
                    "{} now backs {}, not this image (someone else's: left alone)",
                    device.display(),
                    b.display()
                )),
                Some(_) => None,
            }
        }
        Resource::File { path } => match fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("it is gone".into()),
            Ok(m) if !m.file_type().is_file() => {
                Some("no longer a regular file (not fsdelta's: left alone)".into())
            }
            _ => None,
        },
        Resource::Dir { path } | Resource::ScratchTree { path } => {
            match fs::symlink_metadata(path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("it is gone".into()),
                Ok(m) if !m.is_dir() => {
                    Some("no longer a directory (not fsdelta's: left alone)".into())
                }
                _ => None,
            }
        }
    }
}

/// Whether `source` is mounted at `target` in this process's mount namespace.
fn mounted_here(target: &Path, source: &str) -> bool {
    fs::read_to_string("/proc/self/mounts").is_ok_and(|m| {
        super::env::parse_mounts(&m)
            .iter()
            .any(|m| Path::new(&m.target) == target && m.source == source)
    })
}

/// Why a mount in mount namespace `ns` (not this process's) cannot be undone from here: the
/// processes that keep that namespace alive, and what to do.
/// Why a dead owner's mount in another namespace is not a leftover any more.
const GONE_WITH_NAMESPACE: &str =
    "no longer mounted: it went away with the mount namespace of the fsdelta that made it";

/// How long recovery waits for the processes still in a dead fsdelta's mount namespace to finish
/// exiting (its children die with it, see `os::child`, but a SIGKILLed mkfs in the middle of
/// its I/O takes a moment): a hang guard, far above the milliseconds that takes.
const EXIT_WAIT: Duration = Duration::from_secs(30);

/// The processes that keep mount namespace `ns` alive, once those already on their way out have
/// gone (waiting at most [`EXIT_WAIT`]); empty when the namespace, and its mounts, went with them.
fn holders_once_exits_end(ns: u64) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let holders = crate::os::namespace::processes_in(ns);
        let dying = holders.iter().all(|&p| crate::os::process::is_exiting(p));
        if holders.is_empty() || !dying || start.elapsed() > EXIT_WAIT {
            return holders;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn held_elsewhere(ns: u64, holders: &[u32]) -> String {
    let who: Vec<String> = holders
        .iter()
        .take(3)
        .map(|p| {
            let comm = fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
            format!("pid {p} ({})", comm.trim())
        })
        .collect();
    format!(
        "still mounted in the mount namespace mnt:[{ns}] of the fsdelta that made it, which {} keeps alive (a process its workload left running?); end it, the mount goes with the namespace, then run fsdelta cleanup again",
        who.join(", ")
    )
}

fn undo(r: &Resource) -> Result<Undo, String> {
    if let Some(why) = stale(r) {
        return Ok(Undo::Stale(why));
    }
    match r {
        Resource::Mount {
            target,
            source,
            namespace,
        } => {
            let mounts = fs::read_to_string("/proc/self/mounts").map_err(|e| e.to_string())?;
            let held = super::env::parse_mounts(&mounts)
                .iter()
                .any(|m| Path::new(&m.target) == target && &m.source == source);
            if !held {
                // Not stale, not here: its namespace still lives (see `stale`).
                let ns = namespace.unwrap_or_default();
                return Err(held_elsewhere(ns, &crate::os::namespace::processes_in(ns)));
            }
            match mount::unmount_patiently(target) {
                Ok(_) => Ok(Undo::Done(format!(
                    "unmounted {source} from {}",
                    target.display()
                ))),
                Err(e) if e == rustix::io::Errno::BUSY => {
                    mount::detach_lazily(target).map_err(|e| e.to_string())?;
                    Ok(Undo::Done(format!(
                        "lazily detached {source} from {} (it was busy; it goes away when its last user does)",
                        target.display()
                    )))
                }
                Err(e) => Err(format!("umount: {e}")),
            }
        }
        Resource::Loop {
            device,
            backing_file,
        } => {
            let Some(n) = loopdev::number_of(device) else {
                return Ok(Undo::Stale(format!(
                    "{} is not a loop device",
                    device.display()
                )));
            };
            loopdev::detach_number(n).map_err(|e| e.to_string())?;
            Ok(Undo::Done(format!(
                "detached {} (image {})",
                device.display(),
                backing_file.display()
            )))
        }
        Resource::File { path } => match fs::symlink_metadata(path) {
            Err(e) => Ok(Undo::Stale(e.to_string())),
            Ok(_) => {
                if let Some(dev) = loopdev::attached_to(path) {
                    return Err(format!("still backs {}; detach it first", dev.display()));
                }
                fs::remove_file(path).map_err(|e| e.to_string())?;
                Ok(Undo::Done(format!("removed {}", path.display())))
            }
        },
        Resource::Dir { path } => match fs::symlink_metadata(path) {
            Err(e) => Ok(Undo::Stale(e.to_string())),
            Ok(_) => {
                fs::remove_dir(path).map_err(|e| {
                    format!("{e} (fsdelta only removes empty directories; look inside)")
                })?;
                Ok(Undo::Done(format!("removed directory {}", path.display())))
            }
        },
        Resource::ScratchTree { path } => match fs::symlink_metadata(path) {
            Err(e) => Ok(Undo::Stale(e.to_string())),
            Ok(_) => {
                fs::remove_dir_all(path).map_err(|e| e.to_string())?;
                Ok(Undo::Done(format!(
                    "removed scratch directory {}",
                    path.display()
                )))
            }
        },
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// Give every entry of `state` a dead owner (as after a kill -9).
    pub(crate) fn make_dead(state: &StateFile) {
        state
            .update(|doc| {
                for e in &mut doc.entries {
                    e.owner.start_time = 1;
                }
            })
            .unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_written_before_and_cleared_after() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateFile::new(dir.path().join("sub/leftovers.json"));
        assert!(state.entries().unwrap().is_empty());
        let a = state
            .record(Resource::Dir {
                path: dir.path().join("a"),
            })
            .unwrap();
        let b = state
            .record(Resource::File {
                path: dir.path().join("b"),
            })
            .unwrap();
        let entries = state.entries().unwrap();
        assert_eq!(entries.len(), 2);
        assert_ne!(entries[0].id, entries[1].id);
        assert_eq!(entries[0].owner, Owner::current());
        a.clear().unwrap();
        assert_eq!(state.entries().unwrap().len(), 1);
        b.clear().unwrap();
        assert!(state.entries().unwrap().is_empty());
    }

    fn write_dead_entries(state: &StateFile, resources: Vec<Resource>) {
        let doc = Document {
            version: 1,
            entries: resources
                .into_iter()
                .enumerate()
                .map(|(i, resource)| Entry {
                    id: i as u64 + 1,
                    owner: Owner {
                        pid: std::process::id(),
                        start_time: 1,
                    },
                    resource,
                })
                .collect(),
        };
        fs::write(state.path(), serde_json::to_string(&doc).unwrap()).unwrap();
    }

    #[test]
    fn recovery_undoes_files_and_empty_dirs_of_dead_owners_only() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateFile::new(dir.path().join("leftovers.json"));
        let root = dir.path().canonicalize().unwrap();
        let d = root.join(format!("cfg.{}", std::process::id()));
        let inner = d.join("inner");
        fs::create_dir_all(&inner).unwrap();
        let f = d.join("image");
        fs::write(&f, b"x").unwrap();
        let full = d.join("full");
        fs::create_dir(&full).unwrap();
        fs::write(full.join("user-data"), b"keep").unwrap();
        write_dead_entries(
            &state,
            vec![
                Resource::Dir { path: d.clone() },
                Resource::File { path: f.clone() },
                Resource::Dir {
                    path: inner.clone(),
                },
                Resource::Dir { path: full.clone() },
                Resource::File {
                    path: d.join("never-made"),
                },
                Resource::Mount {
                    target: d.join("not-mounted"),
                    source: "fsdelta-x".into(),
                    namespace: None,
                },
            ],
        );
        let live = state
            .record(Resource::File {
                path: d.join("live"),
            })
            .unwrap();
        fs::write(d.join("live"), b"x").unwrap();

        let report = recover(&state).unwrap();
        assert!(!f.exists() && !inner.exists(), "{report}");
        assert_eq!(report.undone.len(), 2, "{report}");
        assert_eq!(report.stale.len(), 2, "{report}");
        assert_eq!(report.live.len(), 1, "{report}");
        assert_eq!(report.failed.len(), 2, "{report}");
        assert!(
            full.join("user-data").exists(),
            "never removes what it did not create"
        );
        assert!(d.join("live").exists(), "a live owner's file stays");
        // The failed entries (full, and d which holds it) and the live one stay.
        assert_eq!(state.entries().unwrap().len(), 3);
        live.clear().unwrap();
    }

    #[test]
    fn recovery_only_acts_inside_scratch_roots_fsdelta_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateFile::new(dir.path().join("leftovers.json"));
        let victim_dir = dir.path().join("victim");
        fs::create_dir(&victim_dir).unwrap();
        let victim = victim_dir.join("precious");
        fs::write(&victim, b"keep").unwrap();
        let empty = dir.path().join("empty-but-not-ours");
        fs::create_dir(&empty).unwrap();
        let fake_root = dir.path().join("fake.1"); // pid 1 is not the entry's owner
        fs::create_dir(&fake_root).unwrap();
        write_dead_entries(
            &state,
            vec![
                Resource::File {
                    path: victim.clone(),
                },
                Resource::Dir {
                    path: empty.clone(),
                },
                Resource::Dir {
                    path: fake_root.clone(),
                },
                Resource::File {
                    path: dir.path().join("x.1/../victim/precious"),
                },
                Resource::Loop {
                    device: "/dev/loop0".into(),
                    backing_file: victim.clone(),
                },
                Resource::Mount {
                    target: "/".into(),
                    source: "/dev/fsdelta-no-such-device".into(),
                    namespace: None,
                },
            ],
        );
        let report = recover(&state).unwrap();
        assert!(
            victim.exists() && empty.exists() && fake_root.exists(),
            "{report}"
        );
        assert!(report.undone.is_empty(), "{report}");
        // What still exists outside the roots is refused; entries whose resource is gone or
        // someone else's (the `..` path resolves to nothing, loop0 does not back `victim`, no
        // such device is mounted at /) are dropped, which touches nothing.
        assert_eq!(report.failed.len(), 3, "{report}");
        assert_eq!(report.stale.len(), 3, "{report}");
        assert_eq!(state.entries().unwrap().len(), 3);
        assert!(
            report
                .to_string()
                .contains("not inside a scratch directory"),
            "{report}"
        );
    }

    #[test]
    fn the_location_is_never_a_shared_directory_and_never_relative() {
        let os = |s: &str| Some(std::ffi::OsString::from(s));
        let loc = |o: Option<std::ffi::OsString>,
                   x: Option<std::ffi::OsString>,
                   h: Option<std::ffi::OsString>,
                   root| {
            StateFile::locate(o.as_deref(), x.as_deref(), h.as_deref(), root)
        };
        assert_eq!(
            loc(os("/s/f.json"), os("/x"), os("/h"), false).unwrap(),
            Path::new("/s/f.json")
        );
        let e = loc(os("rel/f.json"), None, os("/h"), false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("relative") && e.contains("FSDELTA_STATE_FILE"),
            "{e}"
        );
        assert_eq!(
            loc(None, os("x-rel"), os("/h"), false).unwrap(),
            Path::new("/h/.local/state/fsdelta/leftovers.json")
        );
        assert_eq!(
            loc(None, None, None, true).unwrap(),
            Path::new("/var/lib/fsdelta/leftovers.json")
        );
        let e = loc(None, None, None, false).unwrap_err().to_string();
        assert!(e.contains("FSDELTA_STATE_FILE"), "{e}");
        assert!(!e.contains("/var/tmp"), "{e}");
        // A refused location fails every use with the reason.
        let s = StateFile {
            path: PathBuf::new(),
            refused: Some(("rel".into(), "FSDELTA_STATE_FILE is a relative path".into())),
        };
        assert!(s.check().is_err() && s.entries().is_err());
        assert!(s.record(Resource::Dir { path: "/x".into() }).is_err());
    }

    #[test]
    fn symlinks_world_writable_dirs_and_planted_temporaries_are_refused() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let dir = tempfile::tempdir().unwrap();
        // A symlinked state file is refused, never followed.
        let target = dir.path().join("elsewhere.json");
        fs::write(&target, b"").unwrap();
        let private = dir.path().join("private");
        fs::create_dir(&private).unwrap();
        symlink(&target, private.join("leftovers.json")).unwrap();
        let state = StateFile::new(private.join("leftovers.json"));
        let e = state
            .record(Resource::Dir { path: "/x".into() })
            .unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        assert!(state.check().is_err());
        assert_eq!(
            fs::read(&target).unwrap(),
            b"",
            "the symlink's target is untouched"
        );

        // A planted temporary (a symlink at leftovers.json.tmp) is unlinked, not written through.
        fs::remove_file(private.join("leftovers.json")).unwrap();
        symlink(&target, private.join("leftovers.json.tmp")).unwrap();
        let r = state.record(Resource::Dir { path: "/x".into() }).unwrap();
        assert_eq!(
            fs::read(&target).unwrap(),
            b"",
            "never written through a symlink"
        );
        assert!(
            fs::symlink_metadata(private.join("leftovers.json"))
                .unwrap()
                .is_file()
        );
        r.clear().unwrap();

        // A directory others can write is refused.
        let shared = dir.path().join("shared");
        fs::create_dir(&shared).unwrap();
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o1777)).unwrap();
        let state = StateFile::new(shared.join("leftovers.json"));
        let e = state
            .entries()
            .and_then(|_| state.record(Resource::Dir { path: "/x".into() }));
        let e = e.unwrap_err().to_string();
        assert!(
            e.contains("writable by others") && e.contains("FSDELTA_STATE_FILE"),
            "{e}"
        );
        assert!(!shared.join("leftovers.json").exists());

        // A state file writable by others is refused.
        let state = StateFile::new(private.join("other.json"));
        fs::write(state.path(), b"").unwrap();
        fs::set_permissions(state.path(), fs::Permissions::from_mode(0o666)).unwrap();
        let e = state.entries().unwrap_err().to_string();
        assert!(e.contains("writable by others"), "{e}");
    }

    #[test]
    fn a_sticky_or_foreign_owned_place_is_refused_even_before_the_file_exists() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let sticky = dir.path().join("sticky");
        fs::create_dir(&sticky).unwrap();
        fs::set_permissions(&sticky, fs::Permissions::from_mode(0o1777)).unwrap();
        let state = StateFile::new(sticky.join("leftovers.json"));
        for e in [state.check().unwrap_err(), state.entries().unwrap_err()] {
            let e = e.to_string();
            assert!(
                e.contains("is shared") && e.contains("FSDELTA_STATE_FILE"),
                "{e}"
            );
        }
        assert!(recover(&state).is_err());
        if !rustix::process::geteuid().is_root() {
            return;
        }
        // A directory of ours inside one another user owns: they could swap it for their own.
        let theirs = dir.path().join("theirs");
        fs::create_dir_all(theirs.join("mine")).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        let state = StateFile::new(theirs.join("mine/leftovers.json"));
        let e = state
            .record(Resource::Dir { path: "/x".into() })
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("owned by uid 65534") && e.contains("FSDELTA_STATE_FILE"),
            "{e}"
        );
        assert!(!theirs.join("mine/leftovers.json").exists());
    }

    #[test]
    fn a_state_file_owned_by_another_user_is_refused() {
        if !rustix::process::geteuid().is_root() {
            crate::os::skip_test("needs root to chown a file to another user");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let state = StateFile::new(dir.path().join("leftovers.json"));
        fs::write(state.path(), b"{\"version\":1,\"entries\":[]}").unwrap();
        std::os::unix::fs::chown(state.path(), Some(65534), Some(65534)).unwrap();
        let e = state.entries().unwrap_err().to_string();
        assert!(
            e.contains("owned by uid 65534") && e.contains("planted"),
            "{e}"
        );
        let e = recover(&state).unwrap_err().to_string();
        assert!(e.contains("owned by uid 65534"), "{e}");
    }

    #[test]
    fn the_default_location_is_absolute_when_there_is_one() {
        // Only read: the environment is shared between test threads.
        if let Ok(s) = StateFile::try_default() {
            assert!(s.path().is_absolute());
            assert!(s.path().to_string_lossy().ends_with(".json"));
        }
    }
}
