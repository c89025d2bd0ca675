//! mount(2) and umount(2) for the filesystems fsdelta makes: the config's comma-separated
//! options split into the kernel's flags (`noatime`, `ro`, ...) and the filesystem's own data
//! (`compress-force=zstd`), as mount(8) does, and a guard that unmounts on drop.
//!
//! A busy unmount between samples ([`Mounted::try_unmount`]) is retried briefly and then left
//! mounted, with the holders named ([`super::holders`]): never detached lazily there, because a
//! detached filesystem lives on until its last user goes and keeps its device claimed, so every
//! following mkfs on it fails with EBUSY (issue 13 item 10). Only the final drop detaches.
//!
//! Why by hand: no dependency on util-linux's parsing, and the unmount can be timed alone
//! (fsperf's umount timing). Must never unmount anything but the mount its guard made and the
//! mounts below its mount point (made there by a configuration's hooks: fsdelta's mount points
//! live in its own scratch directories, so nothing else mounts inside them), which go first.

use super::SiteError;
use super::state::{Record, Resource, StateFile};
use rustix::io::Errno;
use rustix::mount::{MountFlags, UnmountFlags};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Split mount options into the kernel's flags and the filesystem's data string.
pub fn split_options(options: &str) -> (MountFlags, String) {
    let mut flags = MountFlags::empty();
    let mut data: Vec<&str> = Vec::new();
    for opt in options.split(',').filter(|o| !o.is_empty()) {
        let (set, clear) = match opt {
            "ro" => (MountFlags::RDONLY, MountFlags::empty()),
            "rw" => (MountFlags::empty(), MountFlags::RDONLY),
            "nosuid" => (MountFlags::NOSUID, MountFlags::empty()),
            "suid" => (MountFlags::empty(), MountFlags::NOSUID),
            "nodev" => (MountFlags::NODEV, MountFlags::empty()),
            "dev" => (MountFlags::empty(), MountFlags::NODEV),
            "noexec" => (MountFlags::NOEXEC, MountFlags::empty()),
            "exec" => (MountFlags::empty(), MountFlags::NOEXEC),
            "sync" => (MountFlags::SYNCHRONOUS, MountFlags::empty()),
            "async" => (MountFlags::empty(), MountFlags::SYNCHRONOUS),
            "dirsync" => (MountFlags::DIRSYNC, MountFlags::empty()),
            "noatime" => (MountFlags::NOATIME, MountFlags::empty()),
            "atime" => (MountFlags::empty(), MountFlags::NOATIME),
            "nodiratime" => (MountFlags::NODIRATIME, MountFlags::empty()),
            "diratime" => (MountFlags::empty(), MountFlags::NODIRATIME),
            "relatime" => (MountFlags::RELATIME, MountFlags::empty()),
            "norelatime" => (MountFlags::empty(), MountFlags::RELATIME),
            "strictatime" => (MountFlags::STRICTATIME, MountFlags::empty()),
            "lazytime" => (MountFlags::LAZYTIME, MountFlags::empty()),
            "nolazytime" => (MountFlags::empty(), MountFlags::LAZYTIME),
            "nosymfollow" => (MountFlags::NOSYMFOLLOW, MountFlags::empty()),
            "defaults" => (MountFlags::empty(), MountFlags::empty()),
            other => {
                data.push(other);
                continue;
            }
        };
        flags.remove(clear);
        flags.insert(set);
    }
    (flags, data.join(","))
}

/// Mount `source` of type `fs_type` at `target` with `options`. The error says how to fix it.
pub fn mount(source: &str, target: &Path, fs_type: &str, options: &str) -> Result<(), SiteError> {
    let (flags, data) = split_options(options);
    let data = CString::new(data).map_err(|_| SiteError::Unusable {
        path: target.display().to_string(),
        message: "mount options contain a NUL byte".into(),
    })?;
    rustix::mount::mount(source, target, fs_type, flags, data.as_c_str()).map_err(|e| {
        let hint = match e {
            // EINVAL is also the kernel's answer when it finds no filesystem of this type at
            // the start of the device (mkfs put it elsewhere, or made none): without options,
            // blaming them would send the user the wrong way.
            Errno::INVAL if options.trim().is_empty() => format!(
                "; the kernel found no {fs_type} filesystem it can mount on {source} (no mount options were given, so it is not them): check the config's mkfs options (dmesg says what the kernel found)"
            ),
            Errno::INVAL => format!(
                "; the kernel refused the {fs_type} filesystem on {source} or the options '{options}': check their spelling, and the config's mkfs options (dmesg says which)"
            ),
            Errno::PERM | Errno::ACCESS => "; mounting needs root".to_string(),
            Errno::NODEV => format!("; this kernel has no {fs_type} (modprobe {fs_type})"),
            Errno::BUSY => "; already mounted or in use".to_string(),
            _ => String::new(),
        };
        SiteError::Unusable {
            path: target.display().to_string(),
            message: format!("mount -t {fs_type} -o '{options}' {source}: {e}{hint}"),
        }
    })
}

/// How long an unmount that fails with EBUSY is retried (a short-lived opener such as udev's
/// blkid, or a process that is exiting), with backoff from 10 ms to 200 ms between tries.
pub const UNMOUNT_WAIT: Duration = Duration::from_secs(2);

/// Unmount `target`, retrying for up to [`UNMOUNT_WAIT`] on EBUSY. Returns how long the
/// successful umount(2) call took. Never detaches lazily: a busy mount stays mounted.
pub fn unmount_patiently(target: &Path) -> Result<Duration, Errno> {
    unmount_below(target)?;
    let began = Instant::now();
    let mut pause = Duration::from_millis(10);
    loop {
        let start = Instant::now();
        match rustix::mount::unmount(target, UnmountFlags::empty()) {
            Ok(()) => return Ok(start.elapsed()),
            Err(Errno::BUSY) if began.elapsed() < UNMOUNT_WAIT => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(200));
            }
            Err(e) => return Err(e),
        }
    }
}

/// The mount points strictly below `target` (a hook's mounts), deepest first.
pub fn mounts_below(target: &Path) -> Vec<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mut below: Vec<PathBuf> = super::env::parse_mounts(&text)
        .into_iter()
        .map(|m| PathBuf::from(m.target))
        .filter(|t| t != target && t.starts_with(target))
        .collect();
    below.sort_by_key(|t| std::cmp::Reverse(t.components().count()));
    below.dedup();
    below
}

/// Unmount what a hook mounted below `target`, deepest first, each as patiently as `target`
/// itself (a mount stacked twice on one point is unmounted twice).
fn unmount_below(target: &Path) -> Result<(), Errno> {
    for _ in 0..64 {
        let below = mounts_below(target);
        let Some(deepest) = below.first() else {
            return Ok(());
        };
        let began = Instant::now();
        let mut pause = Duration::from_millis(10);
        loop {
            match rustix::mount::unmount(deepest, UnmountFlags::empty()) {
                Ok(()) => break,
                Err(Errno::BUSY) if began.elapsed() < UNMOUNT_WAIT => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(200));
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Detach a busy mount from the tree; the kernel finishes when its last user goes.
pub fn detach_lazily(target: &Path) -> Result<(), Errno> {
    rustix::mount::unmount(target, UnmountFlags::DETACH)
}

/// A mount this process made, recorded in the state file; unmounted on
/// [`unmount`](Mounted::unmount) or drop.
#[derive(Debug)]
pub struct Mounted {
    target: PathBuf,
    source: String,
    record: Option<Record>,
}

impl Mounted {
    /// Record, then mount. On failure the entry is cleared again.
    pub fn mount(
        state: &StateFile,
        source: &str,
        target: &Path,
        fs_type: &str,
        options: &str,
    ) -> Result<(Mounted, Duration), SiteError> {
        let record = state.record(Resource::Mount {
            target: target.to_path_buf(),
            source: source.to_string(),
            namespace: crate::os::namespace::current_mount_namespace(),
        })?;
        let start = Instant::now();
        match mount(source, target, fs_type, options) {
            Ok(()) => Ok((
                Mounted {
                    target: target.to_path_buf(),
                    source: source.to_string(),
                    record: Some(record),
                },
                start.elapsed(),
            )),
            Err(e) => {
                record.clear()?;
                Err(e)
            }
        }
    }

    /// The mount point.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Unmount; returns how long umount(2) took (writeback of dirty data included). A mount that
    /// stays busy is detached lazily (see [`Drop`]): use [`try_unmount`](Mounted::try_unmount)
    /// where the device is formatted again afterwards.
    pub fn unmount(mut self) -> Result<Duration, SiteError> {
        self.try_unmount()
    }

    /// Unmount, retrying for [`UNMOUNT_WAIT`] on EBUSY. On failure the mount stays mounted and
    /// guarded (never detached lazily: a detached filesystem lives on, holding its device, until
    /// its last user goes, and the next mkfs would meet a busy device), and the error names the
    /// processes that hold it. Calling it again retries.
    pub fn try_unmount(&mut self) -> Result<Duration, SiteError> {
        let Some(record) = self.record.take() else {
            return Ok(Duration::ZERO);
        };
        match unmount_patiently(&self.target) {
            Ok(d) => {
                record.clear()?;
                Ok(d)
            }
            Err(e) => {
                self.record = Some(record);
                let holders = if e == Errno::BUSY {
                    format!(
                        "; held by {}",
                        super::holders::describe(&super::holders::of_mount(&self.target), 6)
                    )
                } else {
                    String::new()
                };
                Err(SiteError::Unusable {
                    path: self.target.display().to_string(),
                    message: format!(
                        "umount of {} (retried for {}s): {e}{holders}; stop what holds it (fuser -vm {}); the mount is kept and tried again before the next sample, `fsdelta cleanup` retries after the run",
                        self.source,
                        UNMOUNT_WAIT.as_secs(),
                        self.target.display()
                    ),
                })
            }
        }
    }
}

/// tracefs for `--events`: `None` when its `events` directory is already there (at
/// `/sys/kernel/tracing`, or under debugfs at `/sys/kernel/debug/tracing`), else tracefs mounted
/// at `/sys/kernel/tracing`, recorded in `state` first like every mount fsdelta makes, and
/// unmounted (its entry cleared) when the returned guard is dropped. Hold it for the whole run.
pub fn ensure_tracefs(state: &StateFile) -> Result<Option<Mounted>, SiteError> {
    let target = Path::new(crate::probe::events::TRACEFS);
    if target.join("events").is_dir() || Path::new("/sys/kernel/debug/tracing/events").is_dir() {
        return Ok(None);
    }
    Mounted::mount(state, "nodev", target, "tracefs", "").map(|(m, _)| Some(m))
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if self.try_unmount().is_err() {
            // The final drop only (teardown, error, panic): never leave it in the tree. A
            // detached mount is no longer there for recovery to find, so its entry goes too.
            if detach_lazily(&self.target).is_ok()
                && let Some(r) = self.record.take()
            {
                let _ = r.clear();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_data_are_split_like_mount_8() {
        let (f, d) = split_options("noatime,compress-force=zstd,ro,rw,space_cache=v2");
        assert_eq!(f, MountFlags::NOATIME);
        assert_eq!(d, "compress-force=zstd,space_cache=v2");
        let (f, d) = split_options("");
        assert!(f.is_empty());
        assert_eq!(d, "");
        let (f, d) = split_options("relatime,lazytime,nodev,size=1048576");
        assert_eq!(
            f,
            MountFlags::RELATIME | MountFlags::LAZYTIME | MountFlags::NODEV
        );
        assert_eq!(d, "size=1048576");
    }

    /// Regression test of issue 13 item 10: a busy unmount between samples must not detach the
    /// mount lazily (a detached filesystem lives on, holding its device); it stays mounted and
    /// guarded, the error names the holder, and the next try succeeds once the holder is gone.
    #[test]
    fn a_busy_unmount_keeps_the_mount_names_the_holder_and_succeeds_later() {
        if !rustix::process::geteuid().is_root() {
            crate::os::skip_test("mounting tmpfs needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let mnt = root.join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let state = StateFile::new(root.join("state.json"));
        let (mut m, _) = Mounted::mount(&state, "fsdelta-test", &mnt, "tmpfs", "size=1m").unwrap();
        // fs_mark and dbench tests running beside this one copy the process's fd table into
        // their threads; none may copy `held`, or the mount stays busy after it is dropped.
        let no_copies = crate::os::fdtable::no_fd_table_copies();
        let held = std::fs::File::create(mnt.join("held")).unwrap();
        let e = m.try_unmount().unwrap_err().to_string();
        assert!(
            e.contains("fsdelta itself") && e.contains("/mnt/held"),
            "the holder is named: {e}"
        );
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        assert!(
            mounts.contains(&format!(" {} tmpfs ", mnt.display())),
            "still mounted, not detached"
        );
        assert_eq!(state.entries().unwrap().len(), 1, "still recorded");
        drop(held);
        drop(no_copies);
        m.try_unmount().unwrap();
        assert!(state.entries().unwrap().is_empty());
        drop(m);

        // The final drop detaches a mount that stays busy, and clears its entry; the holder of
        // a file on the detached filesystem is found.
        let (m, _) = Mounted::mount(&state, "fsdelta-test", &mnt, "tmpfs", "size=1m").unwrap();
        let held = std::fs::File::create(mnt.join("held")).unwrap();
        drop(m);
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        assert!(!mounts.contains(&format!(" {} tmpfs ", mnt.display())));
        assert!(state.entries().unwrap().is_empty());
        let found = super::super::holders::of_detached_mounts();
        assert!(
            found
                .iter()
                .any(|h| h.pid == std::process::id() && h.how.contains("detached")),
            "{found:?}"
        );
        drop(held);
    }
}
