//! Environment capture: the machine (kernel, CPU, memory) and the facts of the filesystem under a
//! path, read from /proc and /sys, never from what was asked for.
//!
//! Must never fail a run: a fact that cannot be read is recorded as empty, not guessed.

use crate::model::{DiskInfo, Environment, SiteFacts};
use std::fs;
use std::path::Path;

/// The machine this process runs on.
pub fn environment() -> Environment {
    let uname = rustix::system::uname();
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
    Environment {
        host: uname.nodename().to_string_lossy().into_owned(),
        kernel_release: uname.release().to_string_lossy().into_owned(),
        kernel_version: uname.version().to_string_lossy().into_owned(),
        cmdline: fs::read_to_string("/proc/cmdline")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        cpu_model: cpu_model(&cpuinfo),
        cores: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(0),
        memory_bytes: mem_total(&meminfo),
        machine_id: fs::read_to_string("/etc/machine-id")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        disks: disks(Path::new("/sys/block")),
    }
}

/// Whole disks under a /sys/block directory, by name; loop, RAM, zram and device-mapper devices
/// are not disks of the machine.
fn disks(sys_block: &Path) -> Vec<DiskInfo> {
    let Ok(dir) = fs::read_dir(sys_block) else {
        return Vec::new();
    };
    let read = |p: std::path::PathBuf| {
        fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let mut out: Vec<DiskInfo> = dir
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if ["loop", "ram", "zram", "dm-", "nbd", "sr", "md"]
                .iter()
                .any(|p| name.starts_with(p))
            {
                return None;
            }
            let p = e.path();
            Some(DiskInfo {
                model: read(p.join("device/model")),
                size_bytes: read(p.join("size")).parse::<u64>().unwrap_or(0) * 512,
                rotational: read(p.join("queue/rotational")) == "1",
                name,
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn cpu_model(cpuinfo: &str) -> String {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default()
}

fn mem_total(meminfo: &str) -> u64 {
    meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

/// One line of /proc/self/mounts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountEntry {
    /// Source device.
    pub source: String,
    /// Mount point.
    pub target: String,
    /// Filesystem type.
    pub fs_type: String,
    /// Options in force.
    pub options: String,
}

/// Parse /proc/self/mounts text (octal escapes such as `\040` decoded).
pub fn parse_mounts(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split(' ');
            Some(MountEntry {
                source: unescape(f.next()?),
                target: unescape(f.next()?),
                fs_type: unescape(f.next()?),
                options: unescape(f.next()?),
            })
        })
        .collect()
}

fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount holding `path`: the entry with the longest mount point that is a prefix of the
/// canonical path (the last such entry when several are stacked).
pub fn mount_of(path: &Path) -> Option<MountEntry> {
    let canon = fs::canonicalize(path).ok()?;
    let text = fs::read_to_string("/proc/self/mounts").ok()?;
    let mut best: Option<MountEntry> = None;
    for m in parse_mounts(&text) {
        if canon.starts_with(&m.target)
            && best
                .as_ref()
                .is_none_or(|b| m.target.len() >= b.target.len())
        {
            best = Some(m);
        }
    }
    best
}

/// Facts of the filesystem under `path`.
pub fn facts_for(path: &Path) -> SiteFacts {
    let mut facts = SiteFacts {
        path: path.display().to_string(),
        ..SiteFacts::default()
    };
    if let Some(m) = mount_of(path) {
        facts.fs_type = m.fs_type;
        facts.device = m.source;
        facts.mount_options = m.options;
        facts.extra.insert("mount_point".into(), m.target);
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_mounts_with_escapes() {
        let text = "/dev/vda / ext4 rw,relatime 0 0\n\
                    tmpfs /tmp/a\\040b tmpfs rw,nosuid,size=1024k 0 0\n";
        let m = parse_mounts(text);
        assert_eq!(m.len(), 2);
        assert_eq!(m[1].target, "/tmp/a b");
        assert_eq!(m[1].options, "rw,nosuid,size=1024k");
        assert_eq!(m[0].fs_type, "ext4");
    }

    #[test]
    fn facts_of_the_root_filesystem_are_read() {
        let f = facts_for(Path::new("/"));
        assert!(!f.fs_type.is_empty());
        assert!(!f.mount_options.is_empty());
    }

    #[test]
    fn disks_are_read_from_sys_block_without_loop_devices() {
        let d = tempfile::tempdir().unwrap();
        for (name, model, size, rot) in [
            ("sda", Some("WDC WD40\n"), "7814037168\n", "1\n"),
            ("nvme0n1", Some("Samsung SSD 980"), "1953525168", "0"),
            ("loop0", None, "100", "0"),
        ] {
            let p = d.path().join(name);
            fs::create_dir_all(p.join("device")).unwrap();
            fs::create_dir_all(p.join("queue")).unwrap();
            if let Some(m) = model {
                fs::write(p.join("device/model"), m).unwrap();
            }
            fs::write(p.join("size"), size).unwrap();
            fs::write(p.join("queue/rotational"), rot).unwrap();
        }
        let got = disks(d.path());
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].name, "nvme0n1");
        assert_eq!(got[0].model, "Samsung SSD 980");
        assert!(!got[0].rotational);
        assert_eq!(got[1].name, "sda");
        assert_eq!(got[1].size_bytes, 7_814_037_168 * 512);
        assert!(got[1].rotational);
        assert_eq!(got[1].model, "WDC WD40");
    }

    #[test]
    fn environment_has_a_kernel_and_memory() {
        let e = environment();
        assert!(!e.kernel_release.is_empty());
        assert!(e.memory_bytes > 0);
        assert!(e.cores > 0);
        if let Ok(id) = fs::read_to_string("/etc/machine-id") {
            assert_eq!(e.machine_id, id.trim());
        }
        let info = "processor\t: 0\nmodel name\t: Some CPU @ 2GHz\n";
        assert_eq!(cpu_model(info), "Some CPU @ 2GHz");
    }
}
