//! fsdelta's own mount namespace: `run` and `agent` move into a new mount namespace before they
//! mount anything, and make every mount in it a slave of the machine's (`/` rslave), so that the
//! mounts fsdelta makes (the configurations' filesystems, tracefs for `--events`) exist only
//! there, with the workloads that run inside them.
//!
//! Why: a process elsewhere on the machine that calls `unshare -m` (a container runtime, a
//! sandboxed build, a browser) copies every mount of the namespace it leaves. When fsdelta's
//! mounts were in the machine's namespace, such a copy pinned them: the superblock and the loop
//! device stayed busy after fsdelta's unmount, and every later sample of that configuration
//! failed ("is mounted ... in the mount namespace of pid N"). In a namespace of fsdelta's own,
//! nothing outside can see, copy or pin them; and when fsdelta dies (kill -9), its namespace dies
//! with it and the kernel detaches its mounts (unless a process the workload left behind still
//! lives in it: `fsdelta cleanup` names that process, see `crate::site::state`).
//!
//! Slave rather than private: mounts the machine makes later (a disk the user mounts while a run
//! goes on) still appear inside, so the checks that refuse a device in use keep seeing the
//! machine; nothing made inside propagates out.
//!
//! Must never be entered by a process that already runs threads: `unshare(CLONE_NEWNS)` implies
//! `CLONE_FS`, which the kernel refuses in a multi-threaded process (EINVAL), and a namespace
//! entered by one thread only would leave the others' mounts elsewhere. [`enter_own`] checks and
//! says so. Loop devices are not namespaced: a busy one is still replaced as before.

use std::fs;
use std::path::Path;

/// Why fsdelta could not move into a mount namespace of its own.
#[derive(Debug, thiserror::Error)]
pub enum NamespaceError {
    /// The process already runs threads (a bug in the caller: enter first).
    #[error(
        "cannot enter a mount namespace of fsdelta's own: {0} threads already run (it must be entered before any thread starts)"
    )]
    Threaded(usize),
    /// unshare or the propagation change failed.
    #[error(
        "cannot enter a mount namespace of fsdelta's own: {op}: {source} (run as root, or where unshare(CLONE_NEWNS) is allowed)"
    )]
    Sys {
        /// Which call.
        op: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Where this process's mounts live after [`enter_own`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    /// In a new mount namespace of its own (its id).
    Own(u64),
    /// In the namespace it started in: unshare is not permitted (not root, no CAP_SYS_ADMIN).
    /// Such a process cannot mount either, so it has no mount to protect.
    NotPermitted,
}

/// The id of a process's mount namespace (the inode number `readlink /proc/PID/ns/mnt` shows as
/// `mnt:[ID]`); `None` when the process is gone or unreadable.
pub fn mount_namespace_of(pid: u32) -> Option<u64> {
    parse_ns_link(&fs::read_link(format!("/proc/{pid}/ns/mnt")).ok()?)
}

/// This process's mount namespace.
pub fn current_mount_namespace() -> Option<u64> {
    parse_ns_link(&fs::read_link("/proc/self/ns/mnt").ok()?)
}

fn parse_ns_link(link: &Path) -> Option<u64> {
    link.to_str()?
        .strip_prefix("mnt:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// The processes that live in mount namespace `ns`, lowest pid first (empty when it is gone:
/// a mount namespace lives exactly as long as a process, or a bind mount of its ns file, holds
/// it).
pub fn processes_in(ns: u64) -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&pid| mount_namespace_of(pid) == Some(ns))
        .collect();
    pids.sort_unstable();
    pids
}

/// The number of threads of this process.
fn threads() -> usize {
    fs::read_dir("/proc/self/task").map_or(1, |d| d.count())
}

/// Move this process (single-threaded, see the module docs) into a new mount namespace whose
/// mounts are slaves of the ones it leaves. Not permitted (EPERM) is not an error: such a process
/// cannot mount anything either ([`Isolation::NotPermitted`]).
pub fn enter_own() -> Result<Isolation, NamespaceError> {
    let n = threads();
    if n > 1 {
        return Err(NamespaceError::Threaded(n));
    }
    // SAFETY: a plain system call with a constant flag; the process is single-threaded (checked
    // above), so no other thread shares the fs_struct that CLONE_NEWNS unshares.
    if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EPERM) {
            return Ok(Isolation::NotPermitted);
        }
        return Err(NamespaceError::Sys {
            op: "unshare(CLONE_NEWNS)",
            source: e,
        });
    }
    use rustix::mount::MountPropagationFlags as P;
    rustix::mount::mount_change("/", P::DOWNSTREAM | P::REC).map_err(|e| NamespaceError::Sys {
        op: "making / rslave",
        source: e.into(),
    })?;
    Ok(Isolation::Own(current_mount_namespace().unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_links_are_parsed() {
        assert_eq!(
            parse_ns_link(Path::new("mnt:[4026531841]")),
            Some(4026531841)
        );
        assert_eq!(parse_ns_link(Path::new("net:[4026531841]")), None);
        assert_eq!(parse_ns_link(Path::new("mnt:[x]")), None);
        let me = current_mount_namespace().expect("this process has a mount namespace");
        assert_eq!(mount_namespace_of(std::process::id()), Some(me));
        assert!(processes_in(me).contains(&std::process::id()));
    }

    #[test]
    fn a_threaded_process_is_refused_before_any_system_call() {
        // A second thread that lives until the call returned.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || rx.recv());
        let before = current_mount_namespace();
        let r = enter_own();
        drop(tx);
        let _ = other.join();
        match r {
            Err(NamespaceError::Threaded(n)) => assert!(n > 1),
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert_eq!(current_mount_namespace(), before);
    }
}
