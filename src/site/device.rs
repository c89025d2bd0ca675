//! Block devices as /sys describes them: the facts a reader of the numbers needs (model, size,
//! rotational flag, I/O scheduler) and the safety refusals that stand between a config and mkfs.
//!
//! Why a module: the invariant "never mkfs a mounted device, or one holding a mounted partition,
//! or the device under `/` or the scratch location" must be checked against the running system
//! right before every format, in one place. This module must never format, mount or write to a
//! device; it only reads /sys and /proc, and opens the device read-only with `O_EXCL` to hold it.
//!
//! What counts as "in use": mounted in this or any other mount namespace (the mountinfo of every
//! process, one per namespace), active as swap (/proc/swaps), stacked on (LVM, RAID, dm-crypt),
//! or held open exclusively (our own `O_EXCL` open fails with EBUSY; the processes that have it
//! open are named from /proc/*/fd). [`check_can_format`] returns a [`DeviceHold`]: the device
//! stays open with `O_EXCL` from before the checks until [`DeviceHold::release`] right before
//! mkfs is spawned, so nothing can claim it in between.
//!
//! Devices hidden in options ([`devices_in_options`]): a block device named inside mkfs or mount
//! options (positional, `logdev=`, `rtdev=`, `device=`, `-d name=...`, a symlink to a device, or
//! any path under /dev) is refused unless it is the configuration's own device, which passes every
//! check above. A device named by number (ext4's `journal_dev=1795`) is resolved through /sys
//! and refused the same way; a number that names no device here is refused too, asking for the
//! /dev path. A read-only device (`/sys/class/block/X/ro`) is refused before mkfs, saying so.
//!
//! A config may only name a block device with `destroy = true` (checked in `plan::config`), so a
//! filesystem signature on it is not a reason to refuse: the config said to destroy it.

use super::SiteError;
use rustix::fd::OwnedFd;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A view of a sysfs tree (`/sys`, or a fake one in tests).
#[derive(Clone, Debug)]
pub struct Sysfs {
    root: PathBuf,
}

impl Default for Sysfs {
    fn default() -> Self {
        Sysfs::at("/sys")
    }
}

impl Sysfs {
    /// The tree at `root`.
    pub fn at(root: impl Into<PathBuf>) -> Sysfs {
        Sysfs { root: root.into() }
    }

    fn class(&self, name: &str) -> PathBuf {
        self.root.join("class/block").join(name)
    }

    fn read(&self, path: PathBuf) -> Option<String> {
        fs::read_to_string(path).ok().map(|s| s.trim().to_string())
    }

    /// The kernel name (`sda1`, `loop3`, `dm-0`) of device `major:minor`.
    pub fn name_of(&self, major: u32, minor: u32) -> Option<String> {
        let link = fs::read_link(self.root.join(format!("dev/block/{major}:{minor}"))).ok()?;
        Some(link.file_name()?.to_str()?.to_string())
    }

    /// Whether the kernel marks `name` read-only (`/sys/class/block/NAME/ro` is 1: a loop
    /// device attached with `losetup -r`, a write-protected disk, `blockdev --setro`).
    pub fn read_only(&self, name: &str) -> bool {
        self.read(self.class(name).join("ro")).as_deref() == Some("1")
    }

    /// Whether `name` is a partition.
    pub fn is_partition(&self, name: &str) -> bool {
        self.class(name).join("partition").exists()
    }

    /// The whole disk of a partition (itself for a disk).
    pub fn disk_of(&self, name: &str) -> String {
        if !self.is_partition(name) {
            return name.to_string();
        }
        fs::canonicalize(self.class(name))
            .ok()
            .and_then(|p| Some(p.parent()?.file_name()?.to_str()?.to_string()))
            .unwrap_or_else(|| name.to_string())
    }

    /// The partitions of a disk.
    pub fn partitions(&self, disk: &str) -> Vec<String> {
        let Ok(entries) = fs::read_dir(self.class(disk)) else {
            return Vec::new();
        };
        let mut parts: Vec<String> = entries
            .flatten()
            .filter(|e| e.path().join("partition").exists())
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect();
        parts.sort();
        parts
    }

    fn list(&self, name: &str, what: &str) -> Vec<String> {
        let Ok(entries) = fs::read_dir(self.class(name).join(what)) else {
            return Vec::new();
        };
        let mut v: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect();
        v.sort();
        v
    }

    /// Devices stacked on `name` (device-mapper, md).
    pub fn holders(&self, name: &str) -> Vec<String> {
        self.list(name, "holders")
    }

    /// Devices `name` is stacked on.
    pub fn slaves(&self, name: &str) -> Vec<String> {
        self.list(name, "slaves")
    }

    /// Every device under `name`: itself, what it is stacked on (recursively), and for a
    /// partition its disk is NOT included (other partitions of the disk may be formatted).
    fn underlying(&self, name: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![name.to_string()];
        while let Some(n) = todo.pop() {
            if seen.insert(n.clone()) {
                todo.extend(self.slaves(&n));
            }
        }
        seen
    }

    /// Facts of device `name` for a sample: `device_name`, `device_model`, `device_size_bytes`,
    /// `device_rotational`, `device_scheduler` (the queue ones are read from the whole disk).
    pub fn facts(&self, name: &str) -> BTreeMap<String, String> {
        let disk = self.disk_of(name);
        let mut f = BTreeMap::new();
        f.insert("device_name".to_string(), name.to_string());
        let model = ["device/model", "device/name"]
            .iter()
            .find_map(|p| self.read(self.class(&disk).join(p)))
            .filter(|s| !s.is_empty());
        let model = match (model, self.read(self.class(&disk).join("device/vendor"))) {
            (Some(m), Some(v)) if !v.is_empty() && !v.starts_with("0x") => format!("{v} {m}"),
            (Some(m), _) => m,
            (None, _) if disk.starts_with("loop") => "loop".to_string(),
            (None, _) if disk.starts_with("zram") => "zram".to_string(),
            (None, Some(v)) => format!("vendor {v}"),
            (None, None) => String::new(),
        };
        f.insert("device_model".into(), model);
        if let Some(sectors) = self
            .read(self.class(name).join("size"))
            .and_then(|s| s.parse::<u64>().ok())
        {
            f.insert("device_size_bytes".into(), (sectors * 512).to_string());
        }
        if let Some(r) = self.read(self.class(&disk).join("queue/rotational")) {
            f.insert("device_rotational".into(), r);
        }
        if let Some(s) = self.read(self.class(&disk).join("queue/scheduler")) {
            f.insert("device_scheduler".into(), active_scheduler(&s));
        }
        f
    }
}

/// The bracketed entry of /sys/block/X/queue/scheduler (`none [mq-deadline] kyber` ->
/// `mq-deadline`); the whole text when nothing is bracketed (`none`).
pub fn active_scheduler(text: &str) -> String {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
        .unwrap_or(text.trim())
        .to_string()
}

/// A mount as far as device safety is concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountedDevice {
    /// The kernel name of the device the mount uses (`sda1`, `dm-0`, `loop3`).
    pub name: String,
    /// Where it is mounted.
    pub target: String,
    /// A process of the mount namespace the mount is in, when that is not ours.
    pub namespace_pid: Option<u32>,
}

impl MountedDevice {
    fn place(&self) -> String {
        match self.namespace_pid {
            None => self.target.clone(),
            Some(pid) => format!("{} in the mount namespace of pid {pid}", self.target),
        }
    }
}

/// The devices behind every mount of this process's namespace, from /proc/self/mountinfo (the
/// `major:minor` of each filesystem) and the mounted source path (btrfs reports an anonymous
/// device number in mountinfo).
pub fn mounted_devices(sys: &Sysfs) -> Vec<MountedDevice> {
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    parse_mountinfo(sys, &text, None)
}

/// The devices behind every mount of every mount namespace: ours, then one process of each other
/// namespace (found through /proc/PID/ns/mnt).
pub fn mounted_devices_everywhere(sys: &Sysfs) -> Vec<MountedDevice> {
    let mut out = mounted_devices(sys);
    let mut seen = BTreeSet::new();
    if let Ok(ours) = fs::read_link("/proc/self/ns/mnt") {
        seen.insert(ours);
    }
    let Ok(procs) = fs::read_dir("/proc") else {
        return out;
    };
    let mut pids: Vec<u32> = procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    for pid in pids {
        let Ok(ns) = fs::read_link(format!("/proc/{pid}/ns/mnt")) else {
            continue;
        };
        if !seen.insert(ns) {
            continue;
        }
        if let Ok(text) = fs::read_to_string(format!("/proc/{pid}/mountinfo")) {
            out.extend(parse_mountinfo(sys, &text, Some(pid)));
        }
    }
    out
}

/// The mounts of one mountinfo text.
pub fn parse_mountinfo(sys: &Sysfs, text: &str, namespace_pid: Option<u32>) -> Vec<MountedDevice> {
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let Some(dash) = f.iter().position(|x| *x == "-") else {
            continue;
        };
        let (Some(devnum), Some(target), Some(source)) = (f.get(2), f.get(4), f.get(dash + 2))
        else {
            continue;
        };
        let target = super::env::parse_mounts(&format!("x {target} x x"))
            .pop()
            .map(|m| m.target)
            .unwrap_or_else(|| target.to_string());
        if let Some((a, b)) = devnum.split_once(':')
            && let (Ok(a), Ok(b)) = (a.parse(), b.parse())
            && let Some(name) = sys.name_of(a, b)
        {
            out.push(MountedDevice {
                name,
                target: target.clone(),
                namespace_pid,
            });
        }
        if source.starts_with('/')
            && let Some((a, b)) = block_devnum(Path::new(source))
            && let Some(name) = sys.name_of(a, b)
        {
            out.push(MountedDevice {
                name,
                target,
                namespace_pid,
            });
        }
    }
    out
}

/// `major:minor` of a block device node.
pub fn block_devnum(path: &Path) -> Option<(u32, u32)> {
    let m = fs::metadata(path).ok()?;
    if !m.file_type().is_block_device() {
        return None;
    }
    use std::os::unix::fs::MetadataExt;
    let rdev = m.rdev();
    Some((rustix::fs::major(rdev), rustix::fs::minor(rdev)))
}

/// Why formatting device `name` must be refused, if it must: it (or one of its partitions) is
/// mounted, directly or under a device-mapper / md device, or something is stacked on it.
/// `/` and the scratch location are mounts, so the device holding them is covered.
pub fn refusal(sys: &Sysfs, name: &str, mounts: &[MountedDevice]) -> Option<String> {
    let mut ours = vec![name.to_string()];
    if !sys.is_partition(name) {
        ours.extend(sys.partitions(name));
    }
    for m in mounts {
        let under = sys.underlying(&m.name);
        if let Some(hit) = ours.iter().find(|d| under.contains(*d)) {
            let what = if hit == name {
                "is mounted".to_string()
            } else {
                format!("holds partition {hit}, which is mounted")
            };
            let via = if m.name != *hit {
                format!(" (through {})", m.name)
            } else {
                String::new()
            };
            return Some(format!(
                "{what} at {}{via}: unmount it first, or name another device",
                m.place()
            ));
        }
    }
    for d in &ours {
        let holders = sys.holders(d);
        if !holders.is_empty() {
            return Some(format!(
                "{d} is in use by {} (LVM, RAID or dm-crypt): tear that down first, or name another device",
                holders.join(", ")
            ));
        }
    }
    None
}

/// A device checked by [`check_can_format`], held open with `O_EXCL` so that nothing can mount
/// or claim it before mkfs starts.
#[derive(Debug)]
pub struct DeviceHold {
    /// The kernel name (`loop3`, `sdb`).
    pub name: String,
    fd: Option<OwnedFd>,
}

impl DeviceHold {
    /// Let go of the device: call right before spawning mkfs (which opens it `O_EXCL` itself).
    pub fn release(mut self) {
        self.fd.take();
    }
}

/// The active swap areas of /proc/swaps: (path, major:minor when it is a block device).
pub fn swap_devices() -> Vec<(String, Option<(u32, u32)>)> {
    let text = fs::read_to_string("/proc/swaps").unwrap_or_default();
    parse_swaps(&text)
        .into_iter()
        .map(|p| {
            let n = block_devnum(Path::new(&p));
            (p, n)
        })
        .collect()
}

/// The paths of /proc/swaps (header skipped, `\040` escapes undone).
pub fn parse_swaps(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|p| super::env::parse_mounts(&format!("{p} x x x")).pop())
        .map(|m| m.source)
        .collect()
}

/// The processes other than this one that have block device `major:minor` open, with their
/// command names, from /proc/*/fd.
pub fn processes_holding(devnum: (u32, u32)) -> Vec<(u32, String)> {
    use std::os::unix::fs::MetadataExt;
    let me = std::process::id();
    let mut out = Vec::new();
    let Ok(procs) = fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(fds) = fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            fs::metadata(fd.path()).is_ok_and(|m| {
                m.file_type().is_block_device()
                    && (rustix::fs::major(m.rdev()), rustix::fs::minor(m.rdev())) == devnum
            })
        });
        if holds {
            let comm = fs::read_to_string(p.path().join("comm")).unwrap_or_default();
            out.push((pid, comm.trim().to_string()));
        }
    }
    out.sort();
    out
}

/// How long a device that is busy with no visible user (a filesystem the kernel is still
/// releasing after its unmount) is waited for, with backoff, before it is refused naming what
/// holds it.
pub const RELEASE_WAIT: Duration = Duration::from_secs(2);

/// Check, right before mkfs, that `device` may be formatted: it is a block device, not mounted
/// in any mount namespace, not active as swap, holds no mounted partition, carries no stacked
/// device, is not held open exclusively by anyone, and is not under `/` or `scratch`. The device
/// is opened `O_EXCL` before the checks and stays held by the returned [`DeviceHold`].
///
/// A device that is exclusively busy while no mount, swap, stacked device or process explains it
/// is still being released by the kernel (the last unmount of its filesystem has not finished):
/// it is waited for up to [`RELEASE_WAIT`] with backoff, then refused naming the holders
/// ([`busy_reason`]).
pub fn check_can_format(device: &Path, scratch: &Path) -> Result<DeviceHold, SiteError> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(10);
    loop {
        match check_once(device, scratch) {
            Err(Check::Releasing { .. }) if start.elapsed() < RELEASE_WAIT => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(250));
            }
            Err(Check::Releasing { name, devnum }) => {
                return Err(SiteError::Busy {
                    device: device.display().to_string(),
                    message: format!(
                        "refusing to format {}: {}",
                        device.display(),
                        busy_reason(&name, devnum)
                    ),
                });
            }
            Err(Check::Held { .. }) if start.elapsed() < RELEASE_WAIT => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(250));
            }
            Err(Check::Held { reason }) => {
                return Err(SiteError::Busy {
                    device: device.display().to_string(),
                    message: format!("refusing to format {}: {reason}", device.display()),
                });
            }
            Err(Check::Refused(e)) => return Err(e),
            Ok(h) => return Ok(h),
        }
    }
}

enum Check {
    Refused(SiteError),
    /// Busy with no visible user: waited for, then refused with [`busy_reason`].
    Releasing {
        name: String,
        devnum: (u32, u32),
    },
    /// Held open exclusively by processes (named in `reason`): waited for too, since a
    /// short-lived opener (udev's blkid) lets go by itself, then refused.
    Held {
        reason: String,
    },
}

fn check_once(device: &Path, scratch: &Path) -> Result<DeviceHold, Check> {
    let refuse = |reason: String| {
        Check::Refused(SiteError::Refused {
            device: device.display().to_string(),
            reason,
        })
    };
    let meta = fs::metadata(device).map_err(|e| refuse(format!("{e}; check the device path")))?;
    if !meta.file_type().is_block_device() {
        return Err(refuse(
            "is not a block device: name a disk or partition such as /dev/sdb, or use device = \"loop:SIZE\""
                .into(),
        ));
    }
    let sys = Sysfs::default();
    let (major, minor) = block_devnum(device).ok_or_else(|| refuse("unreadable".into()))?;
    let name = sys
        .name_of(major, minor)
        .ok_or_else(|| refuse(format!("/sys knows no block device {major}:{minor}")))?;
    if sys.read_only(&name) {
        return Err(refuse(format!(
            "is read-only (/sys/class/block/{name}/ro is 1: a loop device attached with \
             `losetup -r`, a write-protected disk, or `blockdev --setro`), so mkfs cannot write \
             to it: make it writable (`blockdev --setrw {0}`, or attach the loop device without \
             -r) or name another device",
            device.display()
        )));
    }
    // Hold first, then check: from here on nobody else can claim the device.
    use rustix::fs::{Mode, OFlags};
    let held = rustix::fs::open(
        device,
        OFlags::RDONLY | OFlags::EXCL | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    );
    let busy = matches!(held, Err(rustix::io::Errno::BUSY));
    // Any other failure to hold it is reported after the checks, which explain more.
    let (fd, open_error) = match held {
        Ok(fd) => (Some(fd), None),
        Err(e) => (None, Some(e)),
    };
    let mounts = mounted_devices_everywhere(&sys);
    if let Some(reason) = refusal(&sys, &name, &mounts) {
        return Err(refuse(reason));
    }
    let mut ours = vec![name.clone()];
    if !sys.is_partition(&name) {
        ours.extend(sys.partitions(&name));
    }
    for (path, devnum) in swap_devices() {
        if let Some((a, b)) = devnum
            && let Some(n) = sys.name_of(a, b)
            && ours.contains(&n)
        {
            let what = if n == name {
                "is in use as swap".to_string()
            } else {
                format!("holds partition {n}, which is in use as swap")
            };
            return Err(refuse(format!(
                "{what} ({path}): swapoff {path} first, or name another device"
            )));
        }
    }
    for (what, path) in [("/", Path::new("/")), ("the scratch location", scratch)] {
        if let Some((a, b)) = holding_device(path)
            && let Some(holder) = sys.name_of(a, b)
        {
            let under = sys.underlying(&holder);
            if under.contains(&name) || under.iter().any(|u| sys.disk_of(u) == name) {
                return Err(refuse(format!(
                    "holds {what} ({}): name another device",
                    path.display()
                )));
            }
        }
    }
    if busy {
        let holders = processes_holding((major, minor));
        if !holders.is_empty() {
            let who: Vec<String> = holders
                .iter()
                .map(|(pid, comm)| format!("pid {pid} ({comm})"))
                .collect();
            return Err(Check::Held {
                reason: format!(
                    "is held open exclusively; open by {} (waited {}s): stop {} first, or name another device",
                    who.join(", "),
                    RELEASE_WAIT.as_secs(),
                    if who.len() == 1 { "it" } else { "them" }
                ),
            });
        }
        return Err(Check::Releasing {
            name,
            devnum: (major, minor),
        });
    }
    if let Some(e) = open_error.filter(|_| !busy) {
        return Err(refuse(format!(
            "cannot open it exclusively: {e}; fsdelta holds the device from its checks until mkfs"
        )));
    }
    Ok(DeviceHold { name, fd })
}

/// Why `name` (`major:minor`) is busy although no mount, swap area or stacked device uses it and
/// no process holds it exclusively: the processes holding files of a lazily detached filesystem
/// (which keeps its device claimed until they close them), and those with the device open.
pub fn busy_reason(name: &str, devnum: (u32, u32)) -> String {
    let mut holders = super::holders::of_detached_mounts();
    holders.extend(super::holders::of_device(devnum));
    let who = if holders.is_empty() {
        "no process visible in /proc holds it".to_string()
    } else {
        format!("held by {}", super::holders::describe(&holders, 6))
    };
    format!(
        "is busy (claimed exclusively) although no mount, swap area or stacked device uses it; \
         waited {}s; {who}: a filesystem on it is still alive after its unmount (a lazy unmount \
         whose last user has not gone, or a mount in a namespace that has since gone): stop the \
         holder, or check `grep {name} /proc/*/mountinfo` and `dmesg`",
        RELEASE_WAIT.as_secs()
    )
}

/// The block devices (or paths under /dev) named inside mkfs options or mount options:
/// positional arguments, `key=value` parts of comma-separated option values (`logdev=`,
/// `rtdev=`, `device=`, `name=` of xfs `-d`), and symlinks that resolve to a block device.
pub fn devices_in_options(mkfs: &[String], mount: &str) -> Vec<String> {
    let mut candidates: Vec<&str> = Vec::new();
    for token in mkfs
        .iter()
        .map(String::as_str)
        .chain(std::iter::once(mount))
    {
        candidates.push(token);
        for part in token.split(',') {
            candidates.push(part);
            if let Some((_, v)) = part.split_once('=') {
                candidates.push(v);
            }
        }
    }
    let mut out: Vec<String> = Vec::new();
    for c in candidates {
        let c = c.trim();
        if c.is_empty() {
            continue;
        }
        let flagged = c.starts_with("/dev/")
            || fs::metadata(c).is_ok_and(|m| m.file_type().is_block_device());
        if flagged && !out.iter().any(|o| o == c) {
            out.push(c.to_string());
        }
    }
    out
}

/// Options that name a block device by its number rather than its path: ext2/3/4's
/// `journal_dev=` (the kernel's `new_encode_dev` of major:minor, as `stat -c %Hr:%Lr` shows).
const NUMBER_OPTIONS: &[&str] = &["journal_dev"];

/// A number as the kernel's `kstrtouint(s, 0)` reads it: `0x` hex, a leading `0` octal, else
/// decimal.
fn c_number(s: &str) -> Option<u32> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u32::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

/// The kernel's `new_decode_dev`: major:minor of a device number as `journal_dev=` takes it.
pub fn decode_dev(n: u32) -> (u32, u32) {
    ((n & 0xfff00) >> 8, (n & 0xff) | ((n >> 12) & 0xfff00))
}

/// Devices named by number inside mkfs or mount options ([`NUMBER_OPTIONS`]): each option as
/// written (`journal_dev=1795`) with the major:minor it names, `None` when it is no number the
/// kernel would read.
pub fn device_numbers_in_options(
    mkfs: &[String],
    mount: &str,
) -> Vec<(String, Option<(u32, u32)>)> {
    let mut out = Vec::new();
    for token in mkfs
        .iter()
        .map(String::as_str)
        .chain(std::iter::once(mount))
    {
        for part in token.split(',') {
            if let Some((k, v)) = part.trim().split_once('=')
                && NUMBER_OPTIONS.contains(&k.trim())
            {
                out.push((part.trim().to_string(), c_number(v.trim()).map(decode_dev)));
            }
        }
    }
    out
}

/// Refuse a device named inside mkfs or mount options unless it is `own` (the configuration's
/// device, which is checked by [`check_can_format`]); a device named by number
/// (`journal_dev=1795`) is resolved through /sys and refused the same way.
pub fn check_option_devices(
    own: Option<&Path>,
    mkfs: &[String],
    mount: &str,
) -> Result<(), SiteError> {
    let own_num = own.and_then(block_devnum);
    for d in devices_in_options(mkfs, mount) {
        let num = block_devnum(Path::new(&d));
        if num.is_some() && num == own_num {
            continue;
        }
        let what = if num.is_some() {
            "a block device"
        } else {
            "a path under /dev"
        };
        return Err(SiteError::Refused {
            device: d.clone(),
            reason: format!(
                "it is {what} named inside the mkfs or mount options; fsdelta formats only the device a config names with device = \"...\" and destroy = true: remove it from mkfs = / mount = (an external log or realtime device is not supported)"
            ),
        });
    }
    for (option, num) in device_numbers_in_options(mkfs, mount) {
        if num.is_some() && num == own_num {
            continue;
        }
        let named = num.and_then(|(a, b)| Sysfs::default().name_of(a, b).map(|n| (a, b, n)));
        return Err(SiteError::Refused {
            device: match &named {
                Some((_, _, n)) => format!("/dev/{n}"),
                None => option.clone(),
            },
            reason: match named {
                Some((a, b, _)) => format!(
                    "it is a block device ({a}:{b}) named inside the mkfs or mount options by its number ({option}); fsdelta formats only the device a config names with device = \"...\" and destroy = true: remove {option} from mkfs = / mount = (an external journal device is not supported)"
                ),
                None => format!(
                    "{option} names a device by number, and no block device here has that number{}: fsdelta cannot check a device it cannot find; name the device by its /dev path (and only the config's own device may be named)",
                    num.map(|(a, b)| format!(" ({a}:{b})")).unwrap_or_default()
                ),
            },
        });
    }
    Ok(())
}

/// The device holding `path`: its st_dev, or the mounted source when st_dev is anonymous
/// (btrfs).
/// A path that does not exist yet (a scratch location fsdelta will create) is held by the
/// device of its nearest existing ancestor.
fn holding_device(path: &Path) -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    let path = path.ancestors().find(|p| p.exists())?;
    let dev = fs::metadata(path).ok()?.dev();
    let (a, b) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    if a != 0 {
        return Some((a, b));
    }
    let m = super::env::mount_of(path)?;
    block_devnum(Path::new(&m.source))
}

/// The kernel name of the block device mounted at the mount holding `path`, when it is one.
pub fn device_name_holding(path: &Path) -> Option<String> {
    let (a, b) = holding_device(path)?;
    Sysfs::default().name_of(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn device_numbers_decode_as_the_kernels() {
        // 1795 = 7:3 (loop3), in decimal, hex and octal; a large minor uses the high bits.
        assert_eq!(decode_dev(1795), (7, 3));
        let d = device_numbers_in_options(&[], "noatime,journal_dev=0x703");
        assert_eq!(d, vec![("journal_dev=0x703".to_string(), Some((7, 3)))]);
        let d = device_numbers_in_options(&["-o".into(), "journal_dev=03403".into()], "");
        assert_eq!(d[0].1, Some((7, 3)));
        assert_eq!(decode_dev((259 << 8) | 0x100 << 12 | 5), (259, 0x105));
        assert_eq!(device_numbers_in_options(&[], "journal_dev=x")[0].1, None);
        assert!(device_numbers_in_options(&[], "journal_path=/dev/x").is_empty());
    }

    #[test]
    fn a_bare_device_number_is_refused_saying_to_name_the_path() {
        let e = check_option_devices(None, &[], "journal_dev=4294967295")
            .unwrap_err()
            .to_string();
        assert!(e.contains("journal_dev=4294967295"), "{e}");
        assert!(e.contains("name the device by its /dev path"), "{e}");
    }

    #[test]
    fn read_only_is_read_from_sys() {
        let (_t, sys) = fake_sys();
        assert!(!sys.read_only("sdb"));
        fs::write(_t.path().join("devices/sdb/ro"), "1\n").unwrap();
        assert!(sys.read_only("sdb"));
    }

    /// A fake /sys: sdb with partitions sdb1, sdb2; sdc with dm-0 stacked on it; loop0.
    fn fake_sys() -> (tempfile::TempDir, Sysfs) {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        let dev = |p: &str| r.join("devices").join(p);
        for (path, devnum) in [
            ("sdb", "8:16"),
            ("sdb/sdb1", "8:17"),
            ("sdb/sdb2", "8:18"),
            ("sdc", "8:32"),
            ("dm-0", "254:0"),
            ("loop0", "7:0"),
        ] {
            let d = dev(path);
            fs::create_dir_all(d.join("holders")).unwrap();
            fs::create_dir_all(d.join("slaves")).unwrap();
            fs::create_dir_all(d.join("queue")).unwrap();
            fs::write(d.join("dev"), format!("{devnum}\n")).unwrap();
            fs::write(d.join("size"), "2048\n").unwrap();
            if path.contains('/') {
                fs::write(d.join("partition"), "1\n").unwrap();
            }
            let name = Path::new(path).file_name().unwrap();
            fs::create_dir_all(r.join("class/block")).unwrap();
            symlink(&d, r.join("class/block").join(name)).unwrap();
            fs::create_dir_all(r.join("dev/block")).unwrap();
            symlink(&d, r.join("dev/block").join(devnum)).unwrap();
        }
        fs::write(dev("sdb/queue/rotational"), "1\n").unwrap();
        fs::write(dev("sdb/queue/scheduler"), "none [mq-deadline] bfq\n").unwrap();
        fs::create_dir_all(dev("sdb/device")).unwrap();
        fs::write(dev("sdb/device/model"), "WDC WD40EFRX   \n").unwrap();
        fs::write(dev("sdb/device/vendor"), "ATA\n").unwrap();
        fs::write(dev("sdc/holders/dm-0"), "").unwrap();
        fs::write(dev("dm-0/slaves/sdc"), "").unwrap();
        let sys = Sysfs::at(r);
        (t, sys)
    }

    fn mounted(name: &str, target: &str) -> MountedDevice {
        MountedDevice {
            name: name.into(),
            target: target.into(),
            namespace_pid: None,
        }
    }

    #[test]
    fn sysfs_names_partitions_and_disks() {
        let (_t, sys) = fake_sys();
        assert_eq!(sys.name_of(8, 17).as_deref(), Some("sdb1"));
        assert!(sys.is_partition("sdb1"));
        assert_eq!(sys.disk_of("sdb1"), "sdb");
        assert_eq!(sys.disk_of("sdb"), "sdb");
        assert_eq!(sys.partitions("sdb"), vec!["sdb1", "sdb2"]);
        assert_eq!(sys.holders("sdc"), vec!["dm-0"]);
    }

    #[test]
    fn facts_come_from_the_whole_disk() {
        let (_t, sys) = fake_sys();
        let f = sys.facts("sdb1");
        assert_eq!(f["device_name"], "sdb1");
        assert_eq!(f["device_model"], "ATA WDC WD40EFRX");
        assert_eq!(f["device_size_bytes"], "1048576");
        assert_eq!(f["device_rotational"], "1");
        assert_eq!(f["device_scheduler"], "mq-deadline");
        assert_eq!(sys.facts("loop0")["device_model"], "loop");
        assert_eq!(active_scheduler("none"), "none");
    }

    #[test]
    fn a_mounted_device_or_partition_is_refused() {
        let (_t, sys) = fake_sys();
        let m = [mounted("sdb1", "/home")];
        let r = refusal(&sys, "sdb", &m).unwrap();
        assert!(r.contains("partition sdb1") && r.contains("/home"), "{r}");
        let r = refusal(&sys, "sdb1", &m).unwrap();
        assert!(r.starts_with("is mounted at /home"), "{r}");
        assert_eq!(
            refusal(&sys, "sdb2", &m),
            None,
            "a sibling partition is fine"
        );
        assert_eq!(refusal(&sys, "loop0", &m), None);
    }

    #[test]
    fn a_device_under_a_mounted_mapper_or_with_holders_is_refused() {
        let (_t, sys) = fake_sys();
        let r = refusal(&sys, "sdc", &[mounted("dm-0", "/")]).unwrap();
        assert!(r.contains("through dm-0"), "{r}");
        let r = refusal(&sys, "sdc", &[]).unwrap();
        assert!(r.contains("in use by dm-0"), "{r}");
    }

    #[test]
    fn devices_hidden_in_mkfs_and_mount_options_are_found_and_refused() {
        let opts = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let d = devices_in_options(&opts(&["-l", "logdev=/dev/loop9,size=64m"]), "");
        assert_eq!(d, vec!["/dev/loop9"]);
        let d = devices_in_options(&opts(&["/dev/loop3"]), "");
        assert_eq!(d, vec!["/dev/loop3"]);
        let d = devices_in_options(&opts(&["-r", "rtdev=/dev/sdz"]), "logdev=/dev/sdy,noatime");
        assert_eq!(d, vec!["/dev/sdz", "/dev/sdy"]);
        let d = devices_in_options(&opts(&["-d", "file,name=/dev/mapper/x"]), "device=/dev/sdq");
        assert_eq!(d, vec!["/dev/mapper/x", "/dev/sdq"]);
        assert!(
            devices_in_options(
                &opts(&["-d", "raid1", "-L", "x", "-n", "64k"]),
                "noatime,compress=zstd"
            )
            .is_empty()
        );
        let e = check_option_devices(None, &opts(&["/dev/loop3"]), "")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/dev/loop3") && e.contains("destroy = true"),
            "{e}"
        );

        // A symlink to a block device outside /dev is found too.
        let Some(node) = ["/dev/loop0", "/dev/loop1", "/dev/sda", "/dev/vda"]
            .into_iter()
            .find(|p| block_devnum(Path::new(p)).is_some())
        else {
            crate::os::skip_test("no block device node to link to");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("innocent");
        symlink(node, &link).unwrap();
        let l = link.display().to_string();
        assert_eq!(devices_in_options(&opts(&[&l]), ""), vec![l.clone()]);
        assert!(check_option_devices(None, &opts(&[&l]), "").is_err());
        // The configuration's own device is not refused here (check_can_format checks it).
        check_option_devices(Some(Path::new(node)), &opts(&[&l]), "").unwrap();
    }

    #[test]
    fn swaps_and_other_namespaces_are_parsed() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/dev/sdb2                               partition\t1048572\t\t0\t\t-2\n/swap\\040file  file 100 0 -3\n";
        assert_eq!(parse_swaps(text), vec!["/dev/sdb2", "/swap file"]);
        let (_t, sys) = fake_sys();
        let info = "36 35 8:17 / /srv rw,relatime shared:1 - ext4 /dev/nonexistent rw\n";
        let m = parse_mountinfo(&sys, info, Some(4242));
        assert_eq!(m.len(), 1);
        let r = refusal(&sys, "sdb", &m).unwrap();
        assert!(r.contains("/srv in the mount namespace of pid 4242"), "{r}");
    }

    #[test]
    fn what_is_not_a_block_device_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, b"").unwrap();
        for p in [file.as_path(), Path::new("/dev/null"), dir.path()] {
            let e = check_can_format(p, dir.path()).unwrap_err();
            assert!(e.to_string().contains("not a block device"), "{e}");
        }
        let e = check_can_format(Path::new("/dev/fsdelta-none"), dir.path()).unwrap_err();
        assert!(e.to_string().contains("refusing"), "{e}");
    }

    #[test]
    fn the_root_device_is_refused_when_there_is_one() {
        let Some(name) = device_name_holding(Path::new("/")) else {
            crate::os::skip_test("/ is not on a block device here");
            return;
        };
        let node = PathBuf::from(format!("/dev/{name}"));
        if !node.exists() {
            crate::os::skip_test(&format!("no device node {}", node.display()));
            return;
        }
        let e = check_can_format(&node, Path::new("/tmp")).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("is mounted at /") || s.contains("holds"), "{s}");
    }
}
