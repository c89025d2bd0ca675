//! Block devices as /sys describes them: the facts a reader of the numbers needs (model, size,
//! rotational flag, I/O scheduler) and the safety refusals that stand between a config and mkfs.
//!
//! Why a module: the invariant "never mkfs a mounted device, or one holding a mounted partition,
//! or the device under `/` or the scratch location" must be checked against the running system
//! right before every format, in one place. This module must never format, mount or write to a
//! device; it only reads /sys and /proc.
//!
//! A config may only name a block device with `destroy = true` (checked in `plan::config`), so a
//! filesystem signature on it is not a reason to refuse: the config said to destroy it.

use super::TargetError;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

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
}

/// The devices behind every mount of this process's namespace, from /proc/self/mountinfo (the
/// `major:minor` of each filesystem) and the mounted source path (btrfs reports an anonymous
/// device number in mountinfo).
pub fn mounted_devices(sys: &Sysfs) -> Vec<MountedDevice> {
    let text = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
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
            });
        }
        if source.starts_with('/')
            && let Some((a, b)) = block_devnum(Path::new(source))
            && let Some(name) = sys.name_of(a, b)
        {
            out.push(MountedDevice { name, target });
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
                m.target
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

/// Check, right before mkfs, that `device` may be formatted: it is a block device, not mounted,
/// holds no mounted partition, carries no stacked device, and is not under `/` or `scratch`.
pub fn check_can_format(device: &Path, scratch: &Path) -> Result<String, TargetError> {
    let refuse = |reason: String| TargetError::Refused {
        device: device.display().to_string(),
        reason,
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
    let mounts = mounted_devices(&sys);
    if let Some(reason) = refusal(&sys, &name, &mounts) {
        return Err(refuse(reason));
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
    Ok(name)
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
            super::super::skip_test("/ is not on a block device here");
            return;
        };
        let node = PathBuf::from(format!("/dev/{name}"));
        if !node.exists() {
            super::super::skip_test(&format!("no device node {}", node.display()));
            return;
        }
        let e = check_can_format(&node, Path::new("/tmp")).unwrap_err();
        let s = e.to_string();
        assert!(s.contains("is mounted at /") || s.contains("holds"), "{s}");
    }
}
