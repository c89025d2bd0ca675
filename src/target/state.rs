//! The leftover-state file: a record of every mount, loop device, file and directory fsdelta is
//! about to create, so that after a kill -9 the next `fsdelta` start ([`recover_leftovers`]) or
//! `fsdelta cleanup` can undo them.
//!
//! Where it lives: `$FSDELTA_STATE_FILE` when set, else `$XDG_STATE_HOME/fsdelta/leftovers.json`,
//! else `$HOME/.local/state/fsdelta/leftovers.json`, else `/var/tmp/fsdelta-state/leftovers.json`.
//! It is one place per user, not per scratch directory, because the next start does not know which
//! config file the killed run used. Writers take an exclusive `flock` on `leftovers.json.lock`
//! and replace the file atomically (write, fsync, rename), so concurrent runs share it safely.
//!
//! Protocol: an entry is written BEFORE its resource is created and cleared AFTER it is undone.
//! Each entry names its owner (pid and process start time); recovery skips entries whose owner
//! still lives, so a second fsdelta never tears down a running one.
//!
//! Must never undo anything the file does not name, nor anything that no longer matches what was
//! recorded: a mount point must still hold a mount from the recorded source, a loop device must
//! still be backed by the recorded image, a directory is only removed when empty (`rmdir`), and a
//! file only when it is a regular file no loop device still uses.

use super::TargetError;
use super::loopdev;
use super::mount;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

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
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::Mount { target, source } => {
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
        }
    }
}

/// The process that created an entry: a pid alone could be reused, so its start time (clock
/// ticks since boot, field 22 of /proc/PID/stat) comes with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Process id.
    pub pid: u32,
    /// Start time in clock ticks since boot.
    pub start_time: u64,
}

impl Owner {
    /// This process.
    pub fn current() -> Owner {
        let pid = std::process::id();
        Owner {
            pid,
            start_time: start_time_of(pid).unwrap_or(0),
        }
    }

    /// Whether this process still runs.
    pub fn is_alive(&self) -> bool {
        start_time_of(self.pid) == Some(self.start_time)
    }
}

fn start_time_of(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_time(&stat)
}

/// Field 22 of /proc/PID/stat; the command name (field 2) may hold spaces and parentheses, so
/// count from the last ')'.
fn parse_start_time(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
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
}

/// An entry this process wrote; [`Record::clear`] removes it once its resource is undone.
#[derive(Debug)]
pub struct Record {
    state: StateFile,
    id: u64,
}

impl Record {
    /// Remove the entry (its resource was undone or never came to exist).
    pub fn clear(self) -> Result<(), TargetError> {
        self.state.clear(self.id)
    }
}

impl StateFile {
    /// The state file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> StateFile {
        StateFile { path: path.into() }
    }

    /// The state file at [`default_path`](StateFile::default_path).
    pub fn default_location() -> StateFile {
        StateFile::new(StateFile::default_path())
    }

    /// `$FSDELTA_STATE_FILE`, `$XDG_STATE_HOME/fsdelta/leftovers.json`,
    /// `$HOME/.local/state/fsdelta/leftovers.json` or `/var/tmp/fsdelta-state/leftovers.json`,
    /// the first whose variable is set and absolute.
    pub fn default_path() -> PathBuf {
        let var = |k: &str| {
            std::env::var_os(k)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        if let Some(p) = var("FSDELTA_STATE_FILE") {
            return p;
        }
        if let Some(p) = var("XDG_STATE_HOME") {
            return p.join("fsdelta/leftovers.json");
        }
        if let Some(p) = var("HOME") {
            return p.join(".local/state/fsdelta/leftovers.json");
        }
        PathBuf::from("/var/tmp/fsdelta-state/leftovers.json")
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write an entry for `resource`, owned by this process. Call BEFORE creating it.
    pub fn record(&self, resource: Resource) -> Result<Record, TargetError> {
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
    pub fn clear(&self, id: u64) -> Result<(), TargetError> {
        self.update(|doc| doc.entries.retain(|e| e.id != id))
    }

    /// Every entry; none when the file does not exist.
    pub fn entries(&self) -> Result<Vec<Entry>, TargetError> {
        if !self.path.exists() {
            return Ok(Vec::new());
        }
        let _lock = self.lock()?;
        Ok(self.read()?.entries)
    }

    fn err(&self, message: String) -> TargetError {
        TargetError::State {
            path: self.path.display().to_string(),
            message,
        }
    }

    fn lock(&self) -> Result<fs::File, TargetError> {
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir).map_err(|e| {
                self.err(format!(
                    "cannot create {}: {e}; set FSDELTA_STATE_FILE to a writable path",
                    dir.display()
                ))
            })?;
        }
        let mut lock_path = self.path.clone().into_os_string();
        lock_path.push(".lock");
        let f = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| {
                self.err(format!(
                    "cannot open the lock file: {e}; set FSDELTA_STATE_FILE to a writable path"
                ))
            })?;
        rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| self.err(format!("cannot lock: {e}")))?;
        Ok(f)
    }

    fn read(&self) -> Result<Document, TargetError> {
        match fs::read_to_string(&self.path) {
            Ok(text) if text.trim().is_empty() => Ok(Document::default()),
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                self.err(format!(
                    "unreadable ({e}); check what it names by hand (mounts, loop devices), then delete it"
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Document::default()),
            Err(e) => Err(self.err(format!("cannot read: {e}"))),
        }
    }

    fn update(&self, f: impl FnOnce(&mut Document)) -> Result<(), TargetError> {
        let _lock = self.lock()?;
        let mut doc = self.read()?;
        doc.version = 1;
        f(&mut doc);
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let write = || -> std::io::Result<()> {
            let mut file = fs::File::create(&tmp)?;
            file.write_all(serde_json::to_string_pretty(&doc)?.as_bytes())?;
            file.write_all(b"\n")?;
            file.sync_all()?;
            fs::rename(&tmp, &self.path)?;
            if let Some(dir) = self.path.parent() {
                fs::File::open(dir)?.sync_all()?;
            }
            Ok(())
        };
        write().map_err(|e| self.err(format!("cannot write: {e}; is the disk full?")))
    }
}

/// What a recovery did, for the user to read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// What was undone ("unmounted ...", "detached ...", "removed ...").
    pub undone: Vec<String>,
    /// Entries cleared because their resource no longer exists or no longer matches.
    pub stale: Vec<String>,
    /// Entries left alone because the process that made them still runs.
    pub live: Vec<String>,
    /// What could not be undone, with why; these entries stay in the file.
    pub failed: Vec<String>,
}

impl RecoveryReport {
    /// Whether nothing was found at all.
    pub fn is_empty(&self) -> bool {
        self.undone.is_empty()
            && self.stale.is_empty()
            && self.live.is_empty()
            && self.failed.is_empty()
    }
}

impl fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.undone {
            writeln!(f, "{s}")?;
        }
        for s in &self.stale {
            writeln!(f, "already gone: {s}")?;
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
pub fn recover_leftovers() -> Result<RecoveryReport, TargetError> {
    recover(&StateFile::default_location())
}

/// Undo the leftovers of dead owners named in `state`: mounts first (deepest first), then loop
/// devices, then files, then directories (deepest first).
pub fn recover(state: &StateFile) -> Result<RecoveryReport, TargetError> {
    let mut report = RecoveryReport::default();
    let mut dead = Vec::new();
    for e in state.entries()? {
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
            Ok(Undo::Stale) => {
                report.stale.push(e.resource.to_string());
                state.clear(e.id)?;
            }
            Err(why) => report.failed.push(format!("{}: {why}", e.resource)),
        }
    }
    Ok(report)
}

enum Undo {
    Done(String),
    Stale,
}

fn undo(r: &Resource) -> Result<Undo, String> {
    match r {
        Resource::Mount { target, source } => {
            let mounts = fs::read_to_string("/proc/self/mounts").map_err(|e| e.to_string())?;
            let held = super::env::parse_mounts(&mounts)
                .iter()
                .any(|m| Path::new(&m.target) == target && &m.source == source);
            if !held {
                return Ok(Undo::Stale);
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
                return Ok(Undo::Stale);
            };
            if loopdev::backing_file(n).as_deref() != Some(backing_file.as_path()) {
                return Ok(Undo::Stale);
            }
            loopdev::detach_number(n).map_err(|e| e.to_string())?;
            Ok(Undo::Done(format!(
                "detached {} (image {})",
                device.display(),
                backing_file.display()
            )))
        }
        Resource::File { path } => match fs::symlink_metadata(path) {
            Err(_) => Ok(Undo::Stale),
            Ok(m) if !m.file_type().is_file() => Ok(Undo::Stale),
            Ok(_) => {
                if let Some(dev) = loopdev::attached_to(path) {
                    return Err(format!("still backs {}; detach it first", dev.display()));
                }
                fs::remove_file(path).map_err(|e| e.to_string())?;
                Ok(Undo::Done(format!("removed {}", path.display())))
            }
        },
        Resource::Dir { path } => match fs::symlink_metadata(path) {
            Err(_) => Ok(Undo::Stale),
            Ok(m) if !m.is_dir() => Ok(Undo::Stale),
            Ok(_) => {
                fs::remove_dir(path).map_err(|e| {
                    format!("{e} (fsdelta only removes empty directories; look inside)")
                })?;
                Ok(Undo::Done(format!("removed directory {}", path.display())))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_survives_odd_command_names() {
        let stat =
            "1234 (a b) c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 100";
        assert_eq!(parse_start_time(stat), Some(98765));
        assert!(Owner::current().is_alive());
        assert!(
            !Owner {
                pid: std::process::id(),
                start_time: 1
            }
            .is_alive()
        );
    }

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
        let d = dir.path().join("d");
        let inner = d.join("inner");
        fs::create_dir_all(&inner).unwrap();
        let f = d.join("image");
        fs::write(&f, b"x").unwrap();
        let full = dir.path().join("full");
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
                    path: dir.path().join("never-made"),
                },
                Resource::Mount {
                    target: dir.path().join("not-mounted"),
                    source: "fsdelta-x".into(),
                },
            ],
        );
        let live = state
            .record(Resource::File {
                path: dir.path().join("live"),
            })
            .unwrap();
        fs::write(dir.path().join("live"), b"x").unwrap();

        let report = recover(&state).unwrap();
        assert!(!d.exists() && !f.exists() && !inner.exists(), "{report}");
        assert_eq!(report.undone.len(), 3, "{report}");
        assert_eq!(report.stale.len(), 2, "{report}");
        assert_eq!(report.live.len(), 1, "{report}");
        assert_eq!(report.failed.len(), 1, "{report}");
        assert!(
            full.join("user-data").exists(),
            "never removes what it did not create"
        );
        assert!(dir.path().join("live").exists());
        // The failed entry and the live one stay for a later attempt.
        assert_eq!(state.entries().unwrap().len(), 2);
        live.clear().unwrap();
    }

    #[test]
    fn default_path_prefers_the_override() {
        // Only read: the environment is shared between test threads.
        let p = StateFile::default_path();
        assert!(p.is_absolute());
        assert!(p.to_string_lossy().ends_with(".json"));
    }
}
