//! Who keeps a filesystem or a block device busy: every process (fsdelta itself included) whose
//! working directory, root, open files or mapped files are under a mount point, that has a block
//! device open, or that holds a file of a filesystem no longer in its mount tree (a lazily
//! detached mount, whose superblock lives on until that file is closed).
//!
//! Why a module: an unmount that fails with EBUSY, or a device that mkfs cannot open exclusively,
//! must name the real holder ("pid 4242 (sleep): cwd /var/tmp/x/mnt/fsdelta-work"), not guess.
//! This module only reads /proc; it must never signal, kill or change anything.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// One process's hold on a mount or device.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Holder {
    /// The process.
    pub pid: u32,
    /// Its command name (/proc/PID/comm).
    pub comm: String,
    /// How it holds it: `cwd PATH`, `root PATH`, `fd N PATH`, `mapped PATH`, `fd N (the device)`.
    pub how: String,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let me = if self.pid == std::process::id() {
            " = fsdelta itself"
        } else {
            ""
        };
        write!(f, "pid {} ({}{me}): {}", self.pid, self.comm, self.how)
    }
}

/// The holders as one phrase for an error message ("nothing visible" when there are none),
/// at most `max` of them.
pub fn describe(holders: &[Holder], max: usize) -> String {
    if holders.is_empty() {
        return "no process has a file, directory or mapping under it".into();
    }
    let mut parts: Vec<String> = holders.iter().take(max).map(|h| h.to_string()).collect();
    if holders.len() > max {
        parts.push(format!("and {} more", holders.len() - max));
    }
    parts.join("; ")
}

/// Whether `link` (a /proc symlink target) names `mnt` or something under it. Deleted files
/// keep their path with " (deleted)" appended.
pub fn is_under(link: &str, mnt: &Path) -> bool {
    let link = link.strip_suffix(" (deleted)").unwrap_or(link);
    Path::new(link).starts_with(mnt)
}

/// The file paths of a /proc/PID/maps text (the sixth column, when it is a path) under `mnt`.
pub fn mapped_under(maps: &str, mnt: &Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in maps.lines() {
        let Some(path) = line.splitn(6, ' ').nth(5).map(str::trim_start) else {
            continue;
        };
        if path.starts_with('/') && is_under(path, mnt) && !out.iter().any(|p| p == path) {
            out.push(path.to_string());
        }
    }
    out
}

fn pids() -> Vec<u32> {
    let mut v: Vec<u32> = fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

fn comm(pid: u32) -> String {
    fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// One open descriptor as /proc shows it.
struct Fd {
    /// How a holder names it: `fd N`, or `fd N of thread TID` when it is in a thread's own
    /// table.
    label: String,
    /// Its /proc symlink (to stat what it opens).
    proc_path: String,
    /// The symlink's target.
    target: String,
}

/// Whether thread `tid` of `pid` uses the same descriptor table as `pid` (kcmp(2)
/// KCMP_FILES); when the kernel cannot tell (no CONFIG_KCMP, a seccomp profile), it is taken
/// as not sharing, so its table is read, and [`fds`] drops what the main table has too.
fn shares_table(pid: u32, tid: u32) -> bool {
    const KCMP_FILES: libc::c_long = 2;
    // SAFETY: kcmp only compares two tasks' kernel objects; it reads no memory of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_kcmp,
            pid as libc::c_long,
            tid as libc::c_long,
            KCMP_FILES,
            0 as libc::c_long,
            0 as libc::c_long,
        )
    };
    r == 0
}

/// The fds of `pid`: its main thread's table, then the tables of threads that have their own
/// (after unshare(CLONE_FILES), as fsdelta's fio job threads do, so a job's files show up
/// only under /proc/PID/task/TID/fd).
fn fds(pid: u32) -> Vec<Fd> {
    let mut tables = vec![(None, format!("/proc/{pid}/fd"))];
    if let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) {
        let mut tids: Vec<u32> = tasks
            .flatten()
            .filter_map(|t| t.file_name().to_str()?.parse().ok())
            .filter(|&t| t != pid && !shares_table(pid, t))
            .collect();
        tids.sort_unstable();
        tables.extend(
            tids.into_iter()
                .map(|t| (Some(t), format!("/proc/{pid}/task/{t}/fd"))),
        );
    }
    let mut v = Vec::new();
    // (number, target) of the main table: a thread's entry that is the same descriptor is
    // the same holder (a thread sharing the table when kcmp could not tell, or a copy).
    let mut main: BTreeSet<(u64, String)> = BTreeSet::new();
    for (tid, dir) in tables {
        let Ok(d) = fs::read_dir(&dir) else {
            continue;
        };
        let mut table: Vec<(u64, Fd)> = d
            .flatten()
            .filter_map(|e| {
                let n = e.file_name().to_str()?.to_string();
                let target = fs::read_link(e.path()).ok()?.to_string_lossy().into_owned();
                let key = n.parse::<u64>().unwrap_or(u64::MAX);
                if tid.is_some() && main.contains(&(key, target.clone())) {
                    return None;
                }
                let label = match tid {
                    None => format!("fd {n}"),
                    Some(t) => format!("fd {n} of thread {t}"),
                };
                let proc_path = format!("{dir}/{n}");
                Some((
                    key,
                    Fd {
                        label,
                        proc_path,
                        target,
                    },
                ))
            })
            .collect();
        table.sort_by_key(|(k, _)| *k);
        if tid.is_none() {
            main = table.iter().map(|(k, f)| (*k, f.target.clone())).collect();
        }
        v.extend(table.into_iter().map(|(_, f)| f));
    }
    v
}

/// Every process holding something under the mount point `mnt`: cwd, root, open fds and file
/// mappings (the paths /proc shows are those of the reader's mount tree, so `mnt` must be the
/// path as mounted, canonical).
pub fn of_mount(mnt: &Path) -> Vec<Holder> {
    let mut out = Vec::new();
    for pid in pids() {
        let mut push = |how: String| {
            out.push(Holder {
                pid,
                comm: comm(pid),
                how,
            })
        };
        for what in ["cwd", "root"] {
            if let Ok(t) = fs::read_link(format!("/proc/{pid}/{what}")) {
                let t = t.to_string_lossy();
                // Everything is under a root of "/": only a root inside the mount counts.
                if is_under(&t, mnt) {
                    push(format!("{what} {t}"));
                }
            }
        }
        for fd in fds(pid) {
            if is_under(&fd.target, mnt) {
                push(format!("{} {}", fd.label, fd.target));
            }
        }
        if let Ok(maps) = fs::read_to_string(format!("/proc/{pid}/maps")) {
            for p in mapped_under(&maps, mnt) {
                push(format!("mapped {p}"));
            }
        }
    }
    out
}

/// Every other process with the block device `major:minor` open. fsdelta's own fds are left out:
/// the loop device it attached stays open (not exclusively) for the whole run, which never makes
/// the device busy.
pub fn of_device(devnum: (u32, u32)) -> Vec<Holder> {
    let mut out = Vec::new();
    let me = std::process::id();
    for pid in pids().into_iter().filter(|&p| p != me) {
        for fd in fds(pid) {
            let Ok(m) = fs::metadata(&fd.proc_path) else {
                continue;
            };
            if m.file_type().is_block_device()
                && (rustix::fs::major(m.rdev()), rustix::fs::minor(m.rdev())) == devnum
            {
                out.push(Holder {
                    pid,
                    comm: comm(pid),
                    how: format!("{} (the device itself)", fd.label),
                });
            }
        }
    }
    out
}

/// The mount ids of a /proc/PID/mountinfo text (its first column).
pub fn mount_ids(mountinfo: &str) -> BTreeSet<u64> {
    mountinfo
        .lines()
        .filter_map(|l| l.split(' ').next()?.parse().ok())
        .collect()
}

fn mnt_id_of(path: &str) -> Option<u64> {
    use rustix::fs::{AtFlags, StatxFlags, statx};
    let s = statx(rustix::fs::CWD, path, AtFlags::empty(), StatxFlags::MNT_ID).ok()?;
    (s.stx_mask & StatxFlags::MNT_ID.bits() != 0).then_some(s.stx_mnt_id)
}

/// Every process with its cwd, root or an open fd on a mount that is in no mount tree at all:
/// a lazily detached mount (`umount -l`), which keeps its filesystem, and so its device, alive
/// until the last such file is closed. Anonymous files (pipes, sockets, anon inodes) are not
/// counted.
///
/// A mount id is unique machine-wide, so "in no tree" is "in no process's mountinfo". A
/// process's own tree is not enough: a process that entered a mount namespace of its own (every
/// `fsdelta run` does) keeps the files it opened before, whose mounts are in the namespace it
/// left, not in its own; they are alive, not detached, and must not be named as holders.
pub fn of_detached_mounts() -> Vec<Holder> {
    let procs = pids();
    let live = live_mount_ids(&procs);
    if live.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<(u64, Holder)> = Vec::new();
    for &pid in &procs {
        let mut candidates: Vec<(String, String, String)> = ["cwd", "root"]
            .iter()
            .filter_map(|w| {
                let p = format!("/proc/{pid}/{w}");
                let t = fs::read_link(&p).ok()?.to_string_lossy().into_owned();
                Some((w.to_string(), p, t))
            })
            .collect();
        for fd in fds(pid) {
            if fd.target.starts_with('/') {
                candidates.push((fd.label, fd.proc_path, fd.target));
            }
        }
        for (what, proc_path, target) in candidates {
            if let Some(id) = mnt_id_of(&proc_path)
                && !live.contains(&id)
            {
                let how = format!("{what} {target} on a detached (lazily unmounted) filesystem");
                out.push((
                    id,
                    Holder {
                        pid,
                        comm: comm(pid),
                        how,
                    },
                ));
            }
        }
    }
    if out.is_empty() {
        return Vec::new();
    }
    // A mount made while the fds were read is not detached: read the trees once more.
    let live = live_mount_ids(&pids());
    out.into_iter()
        .filter(|(id, _)| !live.contains(id))
        .map(|(_, h)| h)
        .collect()
}

/// The ids of every mount in some process's mount tree, one mountinfo read per namespace
/// (every process of a namespace sees the same tree).
fn live_mount_ids(pids: &[u32]) -> BTreeSet<u64> {
    let mut live = BTreeSet::new();
    let mut namespaces_read: BTreeSet<String> = BTreeSet::new();
    for &pid in pids {
        if let Ok(ns) = fs::read_link(format!("/proc/{pid}/ns/mnt"))
            && !namespaces_read.insert(ns.to_string_lossy().into_owned())
        {
            continue;
        }
        if let Ok(info) = fs::read_to_string(format!("/proc/{pid}/mountinfo")) {
            live.extend(mount_ids(&info));
        }
    }
    live
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn paths_under_a_mount_are_recognised_deleted_or_not() {
        let mnt = Path::new("/var/tmp/x/mnt");
        assert!(is_under("/var/tmp/x/mnt", mnt));
        assert!(is_under("/var/tmp/x/mnt/fsdelta-work/f1 (deleted)", mnt));
        assert!(
            !is_under("/var/tmp/x/mnt2/f", mnt),
            "a sibling is not under it"
        );
        assert!(!is_under("socket:[1234]", mnt));
        let maps = "7f00-7f01 r--p 00000000 00:2f 257 /var/tmp/x/mnt/fsdelta-work/lib.so\n\
                    7f01-7f02 r-xp 00001000 00:2f 257 /var/tmp/x/mnt/fsdelta-work/lib.so\n\
                    7f02-7f03 rw-p 00000000 00:00 0 \n\
                    7ffd-7ffe rw-p 00000000 00:00 0                          [stack]\n\
                    5600-5601 r--p 00000000 fe:01 99 /usr/bin/sleep\n";
        assert_eq!(
            mapped_under(maps, mnt),
            vec!["/var/tmp/x/mnt/fsdelta-work/lib.so"]
        );
        assert_eq!(
            mount_ids("22 1 0:21 / /proc rw - proc proc rw\n29 22 0:5 / /dev rw - devtmpfs x rw\n"),
            [22, 29].into_iter().collect()
        );
    }

    #[test]
    fn a_child_cwd_and_our_own_open_file_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let sub: PathBuf = root.join("work");
        fs::create_dir(&sub).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .current_dir(&sub)
            .spawn()
            .unwrap();
        // Engine tests beside this one give their threads private copies of the descriptor
        // table; none may copy `file` (it would be named as held there too).
        let no_copies = crate::os::fdtable::no_fd_table_copies();
        let file = fs::File::create(root.join("open-file")).unwrap();
        let found = of_mount(&root);
        let _ = child.kill();
        let _ = child.wait();
        let child_hold = found
            .iter()
            .find(|h| h.pid == child.id())
            .unwrap_or_else(|| panic!("{found:?}"));
        assert_eq!(child_hold.how, format!("cwd {}", sub.display()));
        assert!(
            child_hold.to_string().contains("(sleep): cwd"),
            "{child_hold}"
        );
        let ours = found
            .iter()
            .find(|h| h.pid == std::process::id())
            .unwrap_or_else(|| panic!("{found:?}"));
        assert!(ours.how.ends_with("/open-file"), "{ours}");
        assert!(ours.to_string().contains("fsdelta itself"), "{ours}");
        drop(file);
        drop(no_copies);
        let text = describe(&found, 1);
        assert!(text.contains("and 1 more"), "{text}");
        assert!(describe(&[], 3).starts_with("no process"));
    }

    #[test]
    fn a_file_open_in_a_threads_own_table_is_named_with_the_thread() {
        if !crate::os::fdtable::tests::unshare_allowed() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        let (opened_tx, opened_rx) = std::sync::mpsc::channel();
        let (seen_tx, seen_rx) = std::sync::mpsc::channel::<()>();
        let path = root.join("job-file");
        let path = &path;
        std::thread::scope(|s| {
            s.spawn(move || {
                let fds = crate::os::fdtable::PrivateFdTable::enter(true);
                assert!(fds.is_private());
                let f = fs::File::create(path).unwrap();
                // SAFETY: gettid(2) takes no arguments and cannot fail.
                opened_tx.send(unsafe { libc::gettid() }).unwrap();
                seen_rx.recv().unwrap();
                drop(f);
                drop(fds);
            });
            let tid = opened_rx.recv().unwrap();
            let found = of_mount(&root);
            seen_tx.send(()).unwrap();
            let ours: Vec<&Holder> = found
                .iter()
                .filter(|h| h.pid == std::process::id())
                .collect();
            assert_eq!(ours.len(), 1, "{found:?}");
            assert!(
                ours[0].how.contains(&format!(" of thread {tid} "))
                    && ours[0].how.ends_with("/job-file"),
                "{}",
                ours[0]
            );
        });
    }
}
