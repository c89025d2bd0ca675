//! Disturbances (issue 38 item 2): what other processes did to the machine while a sample ran,
//! read from the kernel's per-process accounting. Three things move a filesystem benchmark
//! without showing in CPU load: another process's I/O (it shares the disk, the page cache and
//! the writeback throttling), a page-cache drop done by someone else (the workload rereads from
//! the disk), and memory pressure (reclaim stalls). And one thing made the CPU warning wrong: the
//! filesystem's own kernel threads (writeback, kworkers, btrfs/ext4/xfs workers, compression,
//! jbd2, loop) were counted as "other processes", so every btrfs compress-force sample reported
//! about 90 % of the CPUs busy elsewhere.
//!
//! One scan of /proc before the sample and one after ([`Scan::take`]) gives:
//! - the storage bytes (`read_bytes` + `write_bytes` - `cancelled_write_bytes` of /proc/PID/io)
//!   of every user process outside fsdelta's own process tree, with the heaviest named
//!   (`dd[4242] 210 MiB`): the I/O of others. A process born during the sample counts whole; one
//!   that ended during it counts on its parent, which reaped it (less what it had done before
//!   the sample); unreadable ones (not root) are left out.
//!   That accounting is per process, not per device: a writer on another disk counts there;
//! - the CPU time of kernel threads (kthreadd and its children), counted as the workload's,
//!   as the profile's default scope does (`crate::probe::profile::ProfileScope`);
//! - `drop_pagecache` of /proc/vmstat: page-cache drops during the sample less fsdelta's own
//!   (the runner's before the first reading; the `stream` workload's between its write and its
//!   cold read, counted by `crate::probe::blockstat::own_drops`);
//! - the `some` total of /proc/pressure/memory: time tasks stalled on memory (the workload's
//!   own reclaim included: recorded, never judged a disturbance on its own).
//!
//! And [`DeviceProbe`], around the workload too: others' I/O on the target's block devices (the
//! device holding the sample's directory and, for a loop image, the device holding the image):
//! the devices' counters less fsdelta's own I/O there (its cgroup v2's io.stat when it runs in
//! a cgroup of its own with the io controller, else its process tree's storage bytes, the loop
//! device's traffic and all of a loop device it attached), at most other processes' I/O
//! anywhere; named are the other processes with a file open on those devices. A writer on
//! another device is not the target's disturbance.
//!
//! Must never fail a sample or write anything (it creates and moves no cgroup): a file that
//! cannot be read leaves its metric out.

use crate::model::{Direction, Metric, MetricKind, Unit};
use crate::probe::blockstat::BlockStat;
use std::collections::{HashMap, HashSet};
use std::fs;

/// Metric: bytes other processes read and wrote on storage during the sample.
pub const OTHERS_IO_METRIC: &str = "others_io_bytes";
/// Metric: CPU seconds of kernel threads during the sample (the workload's).
pub const KTHREAD_CPU_METRIC: &str = "kthread_cpu_s";
/// Metric: page-cache drops during the sample by someone else (fsdelta's own are not counted).
pub const CACHE_DROPS_METRIC: &str = "others_cache_drops";
/// Metric: milliseconds some task stalled on memory during the sample (PSI).
pub const PSI_MEMORY_METRIC: &str = "psi_memory_some_ms";
/// The fact naming a sample's disturbance (absent when there was none).
pub const FACT: &str = "disturbance";

/// Others' I/O below this many bytes is background chatter (journald, a shell history).
pub const OTHERS_IO_MIN_BYTES: f64 = 16.0 * 1048576.0;
/// ... and below this many bytes a second of the sample too.
pub const OTHERS_IO_MIN_RATE: f64 = 2.0 * 1048576.0;
/// The metric of other processes' CPU share (`crate::probe::system`).
pub const BG_CPU_METRIC: &str = "bg_cpu_pct";
/// Other processes' CPU share (percent of all CPUs) from which a sample is disturbed.
pub const BG_CPU_DISTURBED_PCT: f64 = 50.0;

/// What one process looked like at a scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proc {
    /// Its command name (`comm`).
    pub comm: String,
    /// Parent pid.
    pub ppid: u32,
    /// Start time in clock ticks since boot (tells a reused pid apart).
    pub start: u64,
    /// user + system clock ticks (the whole thread group).
    pub cpu_ticks: u64,
}

/// Parse /proc/PID/stat: (pid, process).
pub fn parse_stat(text: &str) -> Option<(u32, Proc)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let comm = text[open + 1..close].to_string();
    // Fields after the command: state(3) ppid(4) ... utime(14) stime(15) ... starttime(22).
    let f: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let at = |i: usize| f.get(i - 3).and_then(|v| v.parse::<u64>().ok());
    Some((
        pid,
        Proc {
            comm,
            ppid: at(4)? as u32,
            start: at(22)?,
            cpu_ticks: at(14)? + at(15)?,
        },
    ))
}

/// Storage bytes a process read and wrote (/proc/PID/io, or a cgroup's io.stat line).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Io {
    /// Bytes read from storage.
    pub read: u64,
    /// Bytes written to storage (less the writes cancelled by truncation).
    pub write: u64,
}

impl Io {
    /// Read plus written.
    pub fn total(self) -> u64 {
        self.read + self.write
    }

    /// The change from `self` to `end`, saturating at zero.
    pub fn since(self, end: Io) -> Io {
        Io {
            read: end.read.saturating_sub(self.read),
            write: end.write.saturating_sub(self.write),
        }
    }

    fn add(&mut self, o: Io) {
        self.read += o.read;
        self.write += o.write;
    }
}

/// /proc/PID/io: `read_bytes`, and `write_bytes` less `cancelled_write_bytes`.
pub fn parse_io_split(text: &str) -> Option<Io> {
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some(Io {
        read: get("read_bytes:")?,
        write: get("write_bytes:")?.saturating_sub(get("cancelled_write_bytes:").unwrap_or(0)),
    })
}

/// Storage bytes of /proc/PID/io: read_bytes + write_bytes - cancelled_write_bytes.
pub fn parse_io(text: &str) -> Option<u64> {
    parse_io_split(text).map(Io::total)
}

/// `drop_pagecache` of /proc/vmstat (kernels since 4.15).
pub fn parse_drops(vmstat: &str) -> Option<u64> {
    vmstat
        .lines()
        .find_map(|l| l.strip_prefix("drop_pagecache "))
        .and_then(|v| v.trim().parse().ok())
}

/// The `some` line's `total=` (microseconds) of a /proc/pressure file.
pub fn parse_psi_some(text: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with("some "))?
        .split_whitespace()
        .find_map(|w| w.strip_prefix("total="))?
        .parse()
        .ok()
}

/// The pids of `root` and every process descending from it, from a pid -> ppid map.
pub fn tree(root: u32, procs: &HashMap<u32, Proc>) -> HashSet<u32> {
    let mut inside = HashSet::from([root]);
    loop {
        let before = inside.len();
        for (pid, p) in procs {
            if inside.contains(&p.ppid) {
                inside.insert(*pid);
            }
        }
        if inside.len() == before {
            return inside;
        }
    }
}

/// Whether a process is a kernel thread: kthreadd (pid 2) or one of its children.
pub fn is_kthread(pid: u32, p: &Proc) -> bool {
    pid == 2 || p.ppid == 2
}

/// One reading of the machine's processes and counters.
#[derive(Clone, Debug, Default)]
pub struct Scan {
    /// Every process seen (kernel threads included).
    pub procs: HashMap<u32, Proc>,
    /// Storage bytes of each user process outside fsdelta's tree that could be read.
    pub io: HashMap<u32, Io>,
    /// Storage bytes of fsdelta's own tree (this process, which holds what its reaped
    /// children did, and its living descendants).
    pub own: Io,
    /// `drop_pagecache`.
    pub drops: Option<u64>,
    /// This process's own drops so far (`crate::probe::blockstat::own_drops`).
    pub own_drops: u64,
    /// PSI memory `some` total, microseconds.
    pub psi_memory_us: Option<u64>,
    /// How long reading all of this took.
    pub took: std::time::Duration,
}

impl Scan {
    /// Read /proc now. fsdelta's tree is this process and its descendants.
    pub fn take() -> Scan {
        let t = std::time::Instant::now();
        let mut procs = HashMap::new();
        if let Ok(dir) = fs::read_dir("/proc") {
            for e in dir.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                    continue;
                };
                if let Some((_, p)) = fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|t| parse_stat(&t))
                {
                    procs.insert(pid, p);
                }
            }
        }
        let mine = tree(std::process::id(), &procs);
        let mut own = Io::default();
        let mut io = HashMap::new();
        for (pid, p) in &procs {
            if is_kthread(*pid, p) {
                continue;
            }
            let Some(b) = fs::read_to_string(format!("/proc/{pid}/io"))
                .ok()
                .and_then(|t| parse_io_split(&t))
            else {
                continue;
            };
            if mine.contains(pid) {
                own.add(b);
            } else {
                io.insert(*pid, b);
            }
        }
        Scan {
            procs,
            io,
            own,
            own_drops: crate::probe::blockstat::own_drops(),
            drops: fs::read_to_string("/proc/vmstat")
                .ok()
                .and_then(|t| parse_drops(&t)),
            psi_memory_us: fs::read_to_string("/proc/pressure/memory")
                .ok()
                .and_then(|t| parse_psi_some(&t)),
            took: t.elapsed(),
        }
    }

    /// Clock ticks kernel threads used between `self` and `end` (a thread born in between
    /// counts whole).
    pub fn kthread_ticks(&self, end: &Scan) -> u64 {
        end.procs
            .iter()
            .filter(|(pid, p)| is_kthread(**pid, p))
            .map(|(pid, p)| {
                let before = self
                    .procs
                    .get(pid)
                    .filter(|q| q.start == p.start)
                    .map_or(0, |q| q.cpu_ticks);
                p.cpu_ticks.saturating_sub(before)
            })
            .sum()
    }

    /// Storage bytes of each other process between `self` and `end`, heaviest first:
    /// (`comm[pid]`, bytes); processes that did none are left out.
    pub fn others_io(&self, end: &Scan) -> Vec<(String, u64)> {
        self.others_io_split(end)
            .into_iter()
            .map(|(_, n, b)| (n, b.total()))
            .collect()
    }

    /// Storage bytes of each other process between `self` and `end`, read and write apart,
    /// heaviest first: (pid, `comm[pid]`, bytes); processes that did none are left out.
    ///
    /// A process's count includes the children it reaped, whole: a child that did its I/O
    /// before the sample and was reaped during it would make its parent's count jump. So the
    /// count a process that ended during the sample had at the first reading is taken off its
    /// parent's (or, when the parent is gone too, init's, which reaps orphans).
    pub fn others_io_split(&self, end: &Scan) -> Vec<(u32, String, Io)> {
        let alive = |pid: &u32| {
            end.procs
                .get(pid)
                .zip(self.procs.get(pid))
                .is_some_and(|(a, b)| a.start == b.start)
        };
        let mut before_reaped: HashMap<u32, Io> = HashMap::new();
        for (pid, b) in &self.io {
            if alive(pid) {
                continue;
            }
            let parent = self.procs.get(pid).map_or(1, |p| p.ppid);
            let reaper = if alive(&parent) { parent } else { 1 };
            before_reaped.entry(reaper).or_default().add(*b);
        }
        let mut v: Vec<(u32, String, Io)> = end
            .io
            .iter()
            .filter_map(|(pid, b)| {
                let p = end.procs.get(pid)?;
                let before = if alive(pid) {
                    self.io.get(pid).copied()?
                } else {
                    Io::default()
                };
                let mut gone = before;
                gone.add(before_reaped.get(pid).copied().unwrap_or_default());
                let d = gone.since(*b);
                (d.total() > 0).then(|| (*pid, format!("{}[{pid}]", p.comm), d))
            })
            .collect();
        v.sort_by(|a, b| b.2.total().cmp(&a.2.total()).then(a.1.cmp(&b.1)));
        v
    }

    /// The metrics of what happened between `self` and `end` (`hz`: clock ticks a second).
    pub fn metrics(&self, end: &Scan, hz: f64) -> Vec<Metric> {
        let neutral = |name: &str, v: f64, unit: Unit| {
            Metric::new(name, v, unit, Direction::Neutral).kind(MetricKind::Mean)
        };
        let mut out = vec![neutral(
            OTHERS_IO_METRIC,
            self.others_io(end).iter().map(|x| x.1).sum::<u64>() as f64,
            Unit::Bytes,
        )];
        if hz > 0.0 {
            out.push(neutral(
                KTHREAD_CPU_METRIC,
                self.kthread_ticks(end) as f64 / hz,
                Unit::Seconds,
            ));
        }
        if let (Some(a), Some(b)) = (self.drops, end.drops) {
            let own = end.own_drops.saturating_sub(self.own_drops);
            out.push(neutral(
                CACHE_DROPS_METRIC,
                b.saturating_sub(a).saturating_sub(own) as f64,
                Unit::Count,
            ));
        }
        if let (Some(a), Some(b)) = (self.psi_memory_us, end.psi_memory_us) {
            out.push(neutral(
                PSI_MEMORY_METRIC,
                b.saturating_sub(a) as f64 / 1000.0,
                Unit::Milliseconds,
            ));
        }
        out
    }
}

/// Bytes for a reader: `210 MiB`, `3.4 GiB`, `512 KiB`.
pub fn human_bytes(b: f64) -> String {
    let mib = b / 1048576.0;
    if mib >= 1024.0 {
        format!("{:.1} GiB", mib / 1024.0)
    } else if mib >= 1.0 {
        format!("{mib:.0} MiB")
    } else {
        format!("{:.0} KiB", b / 1024.0)
    }
}

/// The disturbance of a sample that ran `wall_s` seconds, from its metrics and the heaviest
/// other processes' I/O (`top`): `None` when there was none, else what it was, for the sample's
/// [`FACT`] (`other processes' I/O on vda, loop3 210 MiB (dd[4242] 200 MiB, ...)`).
///
/// Where the target's devices were measured ([`OTHERS_DEVICE_READ_METRIC`] and
/// [`OTHERS_DEVICE_WRITE_METRIC`] among `metrics`, `devices` naming them), others' I/O is
/// theirs on those devices and `top` the processes seen using them ([`DeviceReport::named`]);
/// else it is their I/O anywhere ([`OTHERS_IO_METRIC`], `top` as [`Scan::others_io`] gives).
pub fn judge(
    metrics: &[Metric],
    top: &[(String, u64)],
    devices: Option<&str>,
    wall_s: f64,
) -> Option<String> {
    let get = |n: &str| metrics.iter().find(|m| m.name == n).map(|m| m.value);
    let mut parts = Vec::new();
    let (io, on) = match (
        devices,
        get(OTHERS_DEVICE_READ_METRIC),
        get(OTHERS_DEVICE_WRITE_METRIC),
    ) {
        (Some(d), Some(r), Some(w)) => (Some(r + w), format!(" on {d}")),
        _ => (get(OTHERS_IO_METRIC), String::new()),
    };
    if let Some(io) = io
        && io >= OTHERS_IO_MIN_BYTES
        && io >= OTHERS_IO_MIN_RATE * wall_s
    {
        let names: Vec<String> = top
            .iter()
            .take(3)
            .map(|(n, b)| format!("{n} {}", human_bytes(*b as f64)))
            .collect();
        let names = if names.is_empty() {
            "none named: no other process had a file on it open".to_string()
        } else {
            names.join(", ")
        };
        parts.push(format!(
            "other processes' I/O{on} {} ({names})",
            human_bytes(io)
        ));
    }
    if let Some(d) = get(CACHE_DROPS_METRIC)
        && d >= 1.0
    {
        parts.push(format!(
            "page cache dropped {d:.0} time(s) by another process"
        ));
    }
    if let Some(bg) = get(BG_CPU_METRIC)
        && bg >= BG_CPU_DISTURBED_PCT
    {
        // Not "other processes used N % of the CPUs": that is compare's warning when the
        // sides' shares differ, which stands on its own.
        parts.push(format!("others' CPU share {bg:.0} %"));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Metric: bytes other processes read from the target's block devices during the sample.
pub const OTHERS_DEVICE_READ_METRIC: &str = "others_device_read_bytes";
/// Metric: bytes other processes wrote to the target's block devices during the sample.
pub const OTHERS_DEVICE_WRITE_METRIC: &str = "others_device_write_bytes";
/// Metric: milliseconds the per-device attribution took in the sample (its two readings of
/// /proc, the devices' counters and the cgroup's).
pub const PROBE_MS_METRIC: &str = "disturbance_probe_ms";
/// Fact: how fsdelta's own I/O on the devices was told apart from others'.
pub const ATTRIBUTION_FACT: &str = "disturbance_attribution";

/// [`ATTRIBUTION_FACT`] where no device of the target could be read.
const NO_DEVICE: &str =
    "per-process accounting, machine-wide (the target has no block device to read)";

/// A block device the target's I/O reaches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetDevice {
    /// Kernel name (`loop3`, `vda1`).
    pub name: String,
    /// `major:minor`.
    pub devnum: (u32, u32),
    /// The index (in the same list) of a loop device whose I/O lands on this one: the
    /// backing device of the target's loop image. All of that loop device's traffic is the
    /// workload's when fsdelta attached it ([`TargetDevice::owned`]).
    pub carries: Option<usize>,
    /// fsdelta attached this device for the target (a loop image it made): nothing else
    /// mounts it, so all of its I/O is the workload's, whatever per-process accounting sees
    /// (the filesystem's journal, metadata and writeback are not the processes').
    pub owned: bool,
}

impl TargetDevice {
    /// The device `name`, its number read from /sys/class/block/NAME/dev.
    pub fn named(name: &str, carries: Option<usize>, owned: bool) -> Option<TargetDevice> {
        let t = fs::read_to_string(format!("/sys/class/block/{name}/dev")).ok()?;
        let (a, b) = t.trim().split_once(':')?;
        Some(TargetDevice {
            name: name.to_string(),
            devnum: (a.parse().ok()?, b.parse().ok()?),
            carries,
            owned,
        })
    }
}

/// io.stat of a cgroup v2: `MAJ:MIN rbytes=.. wbytes=.. rios=.. wios=.. dbytes=.. dios=..` a
/// line per device.
pub fn parse_io_stat(text: &str) -> HashMap<(u32, u32), Io> {
    let mut out = HashMap::new();
    for l in text.lines() {
        let mut w = l.split_whitespace();
        let Some((a, b)) = w.next().and_then(|d| d.split_once(':')) else {
            continue;
        };
        let (Ok(a), Ok(b)) = (a.parse(), b.parse()) else {
            continue;
        };
        let mut io = Io::default();
        for kv in w {
            match kv.split_once('=') {
                Some(("rbytes", v)) => io.read = v.parse().unwrap_or(0),
                Some(("wbytes", v)) => io.write = v.parse().unwrap_or(0),
                _ => {}
            }
        }
        out.insert((a, b), io);
    }
    out
}

/// The cgroup v2 path of a process from its /proc/PID/cgroup (the `0::` line).
pub fn parse_cgroup_v2(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(|p| p.trim().to_string())
}

/// Where cgroup2 is mounted, from /proc/self/mountinfo (`... - cgroup2 cgroup2 rw`).
pub fn parse_cgroup2_mount(mountinfo: &str) -> Option<String> {
    mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split_whitespace().next()? == "cgroup2")
            .then(|| left.split_whitespace().nth(4).map(str::to_string))?
    })
}

/// The I/O of fsdelta's own cgroup v2 per device, when fsdelta's cgroup has the io controller
/// and holds nothing but fsdelta's tree (`mine`): then it counts the workload's I/O exactly,
/// the writeback of its dirty pages included (cgroup v2 charges writeback to the cgroup that
/// dirtied the pages). Else why not, for the sample's facts.
fn own_cgroup_io(mine: &HashSet<u32>) -> Result<CgroupIo, String> {
    let path = fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|t| parse_cgroup_v2(&t))
        .ok_or("fsdelta is in no cgroup v2")?;
    let mount = fs::read_to_string("/proc/self/mountinfo")
        .ok()
        .and_then(|t| parse_cgroup2_mount(&t))
        .ok_or("no cgroup2 filesystem is mounted")?;
    let dir = std::path::Path::new(&mount).join(path.trim_start_matches('/'));
    let stat = fs::read_to_string(dir.join("io.stat")).map_err(|_| {
        "fsdelta's cgroup has no io.stat: the io controller is not enabled for it (cgroup v1's \
         blkio holds it, or the parent's cgroup.subtree_control lacks io)"
            .to_string()
    })?;
    let procs = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    if procs
        .split_whitespace()
        .filter_map(|p| p.parse::<u32>().ok())
        .any(|p| !mine.contains(&p))
    {
        return Err(
            "fsdelta's cgroup holds other processes too (run fsdelta in a cgroup of \
                    its own: systemd-run --scope -p IOAccounting=yes fsdelta run ...)"
                .to_string(),
        );
    }
    Ok((
        "cgroup io.stat (fsdelta's own cgroup v2)".to_string(),
        parse_io_stat(&stat),
    ))
}

/// Whether `pid` has a file open on one of `devnums` (a file on the device's filesystem, or
/// the device itself).
fn has_open_on(pid: u32, devnums: &HashSet<(u32, u32)>) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    dir.flatten().any(|e| {
        fs::metadata(e.path()).is_ok_and(|m| {
            let d = if m.file_type().is_block_device() {
                m.rdev()
            } else {
                m.dev()
            };
            devnums.contains(&(rustix::fs::major(d), rustix::fs::minor(d)))
        })
    })
}

/// How fsdelta's cgroup was read (for [`ATTRIBUTION_FACT`]) and its I/O per device.
type CgroupIo = (String, HashMap<(u32, u32), Io>);

/// A cgroup's I/O per device at the start and at the end of a sample.
type CgroupPair<'a> = (&'a HashMap<(u32, u32), Io>, &'a HashMap<(u32, u32), Io>);

/// Others' I/O on the target's devices (read and write apart) from each device's counts over
/// the sample (`deltas`, `None` where unreadable: `None` when none could be read), fsdelta's
/// own (`cgroup` where it has one of its own, else `own_tree`, its processes' storage bytes;
/// on a device that carries a loop device, at least that loop's traffic; all of an owned
/// device's) and other processes' storage bytes anywhere (`anywhere`): the devices' counts
/// less fsdelta's, at most `anywhere`.
pub fn others_on_devices(
    devices: &[TargetDevice],
    deltas: &[Option<Io>],
    own_tree: Io,
    cgroup: Option<CgroupPair<'_>>,
    anywhere: Io,
) -> Option<Io> {
    let mut residual = Io::default();
    let mut measured = false;
    for (i, d) in devices.iter().enumerate() {
        let Some(dev) = deltas.get(i).copied().flatten() else {
            continue;
        };
        measured = true;
        if d.owned {
            continue;
        }
        let carried = d
            .carries
            .and_then(|j| deltas.get(j).copied().flatten())
            .unwrap_or_default();
        let own = match cgroup {
            Some((a, b)) => {
                let at =
                    |m: &HashMap<(u32, u32), Io>| m.get(&d.devnum).copied().unwrap_or_default();
                let c = at(a).since(at(b));
                Io {
                    read: c.read.max(carried.read),
                    write: c.write.max(carried.write),
                }
            }
            None => Io {
                read: own_tree.read.max(carried.read),
                write: own_tree.write.max(carried.write),
            },
        };
        residual.add(own.since(dev));
    }
    measured.then(|| Io {
        read: residual.read.min(anywhere.read),
        write: residual.write.min(anywhere.write),
    })
}

/// `pid` and its descendants now (from /proc/PID/task/TID/children), at most 64 processes.
fn family(pid: u32) -> Vec<u32> {
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() && out.len() < 64 {
        let p = out[i];
        if let Ok(tasks) = fs::read_dir(format!("/proc/{p}/task")) {
            for t in tasks.flatten() {
                let kids = fs::read_to_string(t.path().join("children")).unwrap_or_default();
                out.extend(
                    kids.split_whitespace()
                        .filter_map(|k| k.parse::<u32>().ok()),
                );
            }
        }
        i += 1;
    }
    out.truncate(64);
    out
}

/// The per-device attribution of one sample: started before the workload, finished after.
pub struct DeviceProbe {
    devices: Vec<TargetDevice>,
    stats: Vec<Option<BlockStat>>,
    scan: Scan,
    cgroup: Result<CgroupIo, String>,
    spent: std::time::Duration,
}

/// What [`DeviceProbe::finish_from`] found.
#[derive(Clone, Debug, Default)]
pub struct DeviceReport {
    /// [`OTHERS_DEVICE_READ_METRIC`], [`OTHERS_DEVICE_WRITE_METRIC`], [`PROBE_MS_METRIC`]
    /// (none when no device could be read).
    pub metrics: Vec<Metric>,
    /// The devices, for the reader (`vda, loop3`); empty when there were none.
    pub devices: String,
    /// How own I/O was told apart ([`ATTRIBUTION_FACT`]).
    pub attribution: String,
    /// Other processes seen with a file open on the devices at the end of the sample (or whose
    /// living descendants had), with their storage bytes during it, heaviest first.
    pub named: Vec<(String, u64)>,
}

impl DeviceProbe {
    /// Read the devices' counters and fsdelta's cgroup now, with the processes of `scan`, just
    /// taken by the caller: the counters around a sample (`crate::probe::system::Snapshot`)
    /// read /proc once for both. With no device, nothing is read (now or at the finish).
    /// The scan's time counts in [`PROBE_MS_METRIC`] as if the probe had taken it.
    pub fn start_from(devices: Vec<TargetDevice>, scan: Scan) -> DeviceProbe {
        let t = std::time::Instant::now();
        if devices.is_empty() {
            return DeviceProbe {
                devices,
                stats: Vec::new(),
                scan: Scan::default(),
                cgroup: Err(String::new()),
                spent: t.elapsed(),
            };
        }
        let mine = tree(std::process::id(), &scan.procs);
        let cgroup = own_cgroup_io(&mine);
        let stats = devices
            .iter()
            .map(|d| BlockStat::read(&d.name).ok())
            .collect();
        DeviceProbe {
            devices,
            stats,
            spent: scan.took + t.elapsed(),
            scan,
            cgroup,
        }
    }

    /// Read everything again, with the processes of `end`, just taken by the caller (see
    /// [`DeviceProbe::start_from`]): others' I/O on the devices is, read and write apart, the
    /// devices' counts less fsdelta's own there (its cgroup's count where it has one of its
    /// own, else its process tree's storage bytes; on a loop image's backing device, the loop
    /// device's traffic too), and never more than other processes' storage bytes anywhere
    /// (per-process accounting): two upper bounds of the same thing, the lower kept. So a
    /// writer on another device, or the workload's own write amplification the per-process
    /// counts cannot see, does not count as a disturbance here.
    pub fn finish_from(self, end: &Scan) -> DeviceReport {
        if self.devices.is_empty() {
            return DeviceReport {
                attribution: NO_DEVICE.into(),
                ..DeviceReport::default()
            };
        }
        let t = std::time::Instant::now();
        let mine = tree(std::process::id(), &end.procs);
        let cgroup_end = self.cgroup.as_ref().ok().and(own_cgroup_io(&mine).ok());
        let deltas: Vec<Option<Io>> = self
            .devices
            .iter()
            .zip(&self.stats)
            .map(|(d, b)| {
                let a = BlockStat::read(&d.name).ok()?;
                let x = (*b)?.delta(&a);
                Some(Io {
                    read: x.read_bytes,
                    write: x.write_bytes,
                })
            })
            .collect();
        let others = self.scan.others_io_split(end);
        let mut anywhere = Io::default();
        for (_, _, b) in &others {
            anywhere.add(*b);
        }
        let own_tree = self.scan.own.since(end.own);
        let (attribution, cgroup): (String, Option<CgroupPair<'_>>) =
            match (&self.cgroup, &cgroup_end) {
                (Ok((how, a)), Some((_, b))) => (how.clone(), Some((a, b))),
                (Ok((how, _)), None) => (
                    format!("per-process accounting ({how} not readable at the end)"),
                    None,
                ),
                (Err(why), _) => (format!("per-process accounting ({why})"), None),
            };
        let on_devices = others_on_devices(&self.devices, &deltas, own_tree, cgroup, anywhere);
        let measured = on_devices.is_some();
        let devnums: HashSet<(u32, u32)> = self.devices.iter().map(|d| d.devnum).collect();
        let mut named = Vec::new();
        if measured {
            // The heaviest few; a shell running dd after dd has the file open only while a dd
            // runs, so one not seen on the devices is looked at again, briefly.
            let mut pending: Vec<&(u32, String, Io)> = others.iter().take(8).collect();
            for attempt in 0..4 {
                if attempt > 0 {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                pending.retain(|(pid, n, b)| {
                    if family(*pid).iter().any(|p| has_open_on(*p, &devnums)) {
                        named.push((n.clone(), b.total()));
                        return false;
                    }
                    true
                });
                if pending.is_empty() {
                    break;
                }
            }
            named.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        }
        let spent = self.spent + end.took + t.elapsed();
        let mut metrics = Vec::new();
        if measured {
            let neutral = |name: &str, v: f64, unit: Unit| {
                Metric::new(name, v, unit, Direction::Neutral).kind(MetricKind::Mean)
            };
            let o = on_devices.unwrap_or_default();
            metrics.push(neutral(
                OTHERS_DEVICE_READ_METRIC,
                o.read as f64,
                Unit::Bytes,
            ));
            metrics.push(neutral(
                OTHERS_DEVICE_WRITE_METRIC,
                o.write as f64,
                Unit::Bytes,
            ));
            metrics.push(neutral(
                PROBE_MS_METRIC,
                spent.as_secs_f64() * 1000.0,
                Unit::Milliseconds,
            ));
        }
        DeviceReport {
            metrics,
            devices: self
                .devices
                .iter()
                .map(|d| d.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            attribution: if measured {
                attribution
            } else {
                NO_DEVICE.into()
            },
            named,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernels_stat_io_vmstat_and_pressure_files() {
        // /proc/2/stat and a process whose name holds a space and a parenthesis.
        let (pid, p) = parse_stat(
            "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 5 7 0 0 20 0 1 0 31 0 0 \
             18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0",
        )
        .unwrap();
        assert_eq!((pid, p.ppid, p.start, p.cpu_ticks), (2, 0, 31, 12));
        assert!(is_kthread(pid, &p));
        let (pid, p) = parse_stat(
            "4242 (my (odd) dd) R 17 4242 17 0 -1 4194304 95 0 0 0 120 \
             300 0 0 20 0 1 0 88001 1000 100 18446744073709551615",
        )
        .unwrap();
        assert_eq!((pid, p.comm.as_str(), p.ppid), (4242, "my (odd) dd", 17));
        assert_eq!((p.cpu_ticks, p.start), (420, 88001));
        assert!(!is_kthread(pid, &p));
        assert!(parse_stat("garbage").is_none());
        let io = "rchar: 323934931\nwchar: 323929600\nsyscr: 632687\nsyscw: 632675\n\
                  read_bytes: 4096\nwrite_bytes: 323932160\ncancelled_write_bytes: 4096\n";
        assert_eq!(parse_io(io), Some(323932160));
        assert_eq!(parse_io("rchar: 1\n"), None);
        assert_eq!(
            parse_drops("nr_free_pages 5\ndrop_pagecache 3\ndrop_slab 2\n"),
            Some(3)
        );
        let psi = "some avg10=0.04 avg60=0.14 avg300=0.19 total=1274555\n\
                   full avg10=0.00 avg60=0.05 avg300=0.09 total=710782\n";
        assert_eq!(parse_psi_some(psi), Some(1274555));
    }

    fn w(bytes: u64) -> Io {
        Io {
            read: 0,
            write: bytes,
        }
    }

    fn proc(comm: &str, ppid: u32, start: u64, cpu: u64) -> Proc {
        Proc {
            comm: comm.into(),
            ppid,
            start,
            cpu_ticks: cpu,
        }
    }

    #[test]
    fn kernel_threads_count_as_the_workloads_and_others_io_names_the_writer() {
        let mut a = Scan::default();
        a.procs.insert(2, proc("kthreadd", 0, 1, 0));
        a.procs
            .insert(90, proc("kworker/u8:3-btrfs-endio-write", 2, 5, 100));
        a.procs.insert(500, proc("dd", 1, 700, 10));
        a.procs.insert(501, proc("journald", 1, 9, 10));
        a.io.insert(500, w(1 << 20));
        a.io.insert(501, w(4096));
        a.drops = Some(4);
        a.psi_memory_us = Some(1000);
        let mut b = a.clone();
        // The kworker used 150 ticks, a btrfs worker born during the sample 50.
        b.procs.get_mut(&90).unwrap().cpu_ticks = 250;
        b.procs
            .insert(91, proc("btrfs-compressed-write", 2, 800, 50));
        b.io.insert(500, w(201 << 20));
        // A process born during the sample (pid reused: a new start time) counts whole.
        b.procs.insert(501, proc("cp", 1, 900, 0));
        b.io.insert(501, w(30 << 20));
        b.drops = Some(5);
        b.psi_memory_us = Some(26000);
        // A child that wrote 5 GiB before the sample, reaped by its make during it: only what
        // it wrote during the sample (1 MiB) counts on the make.
        a.procs.insert(600, proc("make", 1, 50, 0));
        a.io.insert(600, w(7 << 20));
        a.procs.insert(601, proc("cc1", 600, 60, 0));
        a.io.insert(601, w(5 << 30));
        b.procs.insert(600, proc("make", 1, 50, 0));
        b.io.insert(600, w((7 << 20) + (5 << 30) + (1 << 20)));
        assert_eq!(a.kthread_ticks(&b), 200);
        let top = a.others_io(&b);
        assert_eq!(
            top,
            [
                ("dd[500]".to_string(), 200 << 20),
                ("cp[501]".into(), 30 << 20),
                ("make[600]".into(), 1 << 20)
            ]
        );
        let m = a.metrics(&b, 100.0);
        let v = |n: &str| m.iter().find(|x| x.name == n).unwrap().value;
        assert_eq!(v(OTHERS_IO_METRIC), (231u64 << 20) as f64);
        assert_eq!(v(KTHREAD_CPU_METRIC), 2.0);
        assert_eq!(v(CACHE_DROPS_METRIC), 1.0);
        // A drop of fsdelta's own (the stream workload's, before its cold read) is not one.
        let mut own = b.clone();
        own.drops = Some(6);
        own.own_drops = a.own_drops + 1;
        let m_own = a.metrics(&own, 100.0);
        let drops = m_own.iter().find(|x| x.name == CACHE_DROPS_METRIC).unwrap();
        assert_eq!(drops.value, 1.0, "two drops, one of them fsdelta's");
        assert_eq!(v(PSI_MEMORY_METRIC), 25.0);
        assert!(m.iter().all(|x| x.direction == Direction::Neutral));
        let why = judge(&m, &top, None, 10.0).unwrap();
        assert_eq!(
            why,
            "other processes' I/O 231 MiB (dd[500] 200 MiB, cp[501] 30 MiB, make[600] 1 MiB); \
             page cache dropped 1 time(s) by another process"
        );
        // The same I/O spread over 200 s is 1.2 MiB/s: chatter, not a disturbance.
        let quiet: Vec<Metric> = m
            .iter()
            .filter(|x| x.name != CACHE_DROPS_METRIC)
            .cloned()
            .collect();
        assert_eq!(judge(&quiet, &top, None, 200.0), None);
        // Other processes' CPU from half the machine; not below.
        let cpu = |v: f64| {
            vec![Metric::new(
                BG_CPU_METRIC,
                v,
                Unit::Percent,
                Direction::Neutral,
            )]
        };
        assert_eq!(
            judge(&cpu(60.0), &[], None, 1.0).as_deref(),
            Some("others' CPU share 60 %")
        );
        assert_eq!(judge(&cpu(49.0), &[], None, 1.0), None);
    }

    #[test]
    fn cgroup_files_parse_as_the_kernel_writes_them() {
        // io.stat as Documentation/admin-guide/cgroup-v2.rst shows it, and a device with
        // discards on a newer kernel's line.
        let io = parse_io_stat(
            "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n\
             7:3 rbytes=0 wbytes=4096 rios=0 wios=1 dbytes=8192 dios=1\n\
             garbage\n",
        );
        assert_eq!(
            io.get(&(8, 16)),
            Some(&Io {
                read: 1459200,
                write: 314773504
            })
        );
        assert_eq!(io.get(&(7, 3)).map(|x| x.write), Some(4096));
        assert_eq!(io.len(), 2);
        // /proc/self/cgroup of a hybrid (v1 + v2) machine and of a pure v2 one.
        assert_eq!(
            parse_cgroup_v2("9:name=systemd:/\n4:memory:/process_api/f3\n0::/\n").as_deref(),
            Some("/")
        );
        assert_eq!(
            parse_cgroup_v2("0::/system.slice/fsdelta-agent.service\n").as_deref(),
            Some("/system.slice/fsdelta-agent.service")
        );
        assert_eq!(parse_cgroup_v2("4:memory:/x\n"), None);
        // This machine's mountinfo line (cgroup2 beside v1's controllers).
        let mi = "31 1 0:30 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
                  39 31 0:36 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n\
                  41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(
            parse_cgroup2_mount(mi).as_deref(),
            Some("/sys/fs/cgroup/unified")
        );
        assert_eq!(
            parse_cgroup2_mount("1 0 8:1 / / rw - ext4 /dev/vda1 rw\n"),
            None
        );
    }

    #[test]
    fn io_split_and_since_saturate() {
        let io = "rchar: 1\nwchar: 2\nsyscr: 1\nsyscw: 1\nread_bytes: 8192\n\
                  write_bytes: 12288\ncancelled_write_bytes: 4096\n";
        let a = parse_io_split(io).unwrap();
        assert_eq!(
            a,
            Io {
                read: 8192,
                write: 8192
            }
        );
        let b = Io {
            read: 10000,
            write: 100,
        };
        assert_eq!(
            a.since(b),
            Io {
                read: 1808,
                write: 0
            }
        );
        assert_eq!(a.total(), 16384);
    }

    #[test]
    fn others_on_the_devices_are_the_counts_less_fsdeltas_at_most_others_anywhere() {
        let dev = |name: &str, devnum, carries, owned| TargetDevice {
            name: name.into(),
            devnum,
            carries,
            owned,
        };
        // The target's loop3 (fsdelta's) on vda; the loop's traffic lands on vda.
        let devs = [
            dev("loop3", (7, 3), None, true),
            dev("vda", (254, 0), Some(0), false),
        ];
        let mib = |r: u64, w: u64| Io {
            read: r << 20,
            write: w << 20,
        };
        // The workload wrote 100 MiB through its files (per-process), the filesystem made 130
        // of them on loop3 (journal, metadata); vda saw those 130 plus a writer's 200; other
        // processes wrote 200 + 500 MiB anywhere (500 on another device).
        let deltas = [Some(mib(0, 130)), Some(mib(0, 330))];
        let got = others_on_devices(&devs, &deltas, mib(0, 100), None, mib(0, 700)).unwrap();
        // loop3 is fsdelta's (its 30 MiB of amplification the workload's); vda: 330 less
        // the loop's 130 (more than the processes' 100).
        assert_eq!(got, mib(0, 200));
        // The writer on another device only: vda saw the loop's 130, nothing else.
        let quiet = [Some(mib(0, 130)), Some(mib(0, 130))];
        let got = others_on_devices(&devs, &quiet, mib(0, 100), None, mib(0, 500)).unwrap();
        assert_eq!(got, Io::default());
        // A directory on a disk that is not fsdelta's: the disk's count less the processes'
        // (its journal's 30 MiB cannot be told from others'), at most others' I/O anywhere.
        let disk = [dev("vda", (254, 0), None, false)];
        let got = others_on_devices(&disk, &[Some(mib(0, 130))], mib(0, 100), None, mib(0, 500));
        assert_eq!(got, Some(mib(0, 30)));
        let got = others_on_devices(&disk, &[Some(mib(0, 130))], mib(0, 100), None, mib(0, 4));
        assert_eq!(got, Some(mib(0, 4)));
        // fsdelta's own cgroup: exact per device (writeback included).
        let a = HashMap::from([((7, 3), mib(0, 0)), ((254, 0), mib(1, 0))]);
        let b = HashMap::from([((7, 3), mib(0, 130)), ((254, 0), mib(1, 130))]);
        let got = others_on_devices(&devs, &deltas, mib(0, 100), Some((&a, &b)), mib(0, 700));
        assert_eq!(got, Some(mib(0, 200)));
        // No device readable: nothing measured.
        assert_eq!(
            others_on_devices(&devs, &[None, None], mib(0, 1), None, mib(0, 1)),
            None
        );
    }

    #[test]
    fn the_tree_is_the_root_and_every_descendant() {
        let mut procs = HashMap::new();
        procs.insert(10, proc("fsdelta", 1, 0, 0));
        procs.insert(11, proc("fio", 10, 0, 0));
        procs.insert(12, proc("fio", 11, 0, 0));
        procs.insert(13, proc("dd", 1, 0, 0));
        assert_eq!(tree(10, &procs), HashSet::from([10, 11, 12]));
    }

    #[test]
    fn a_device_probe_from_the_callers_scans_counts_their_time_as_its_own() {
        use std::os::unix::fs::MetadataExt;
        // The block device holding /var/tmp, as the sample's target would have it.
        let d = fs::metadata("/var/tmp").unwrap().dev();
        let (major, minor) = (rustix::fs::major(d), rustix::fs::minor(d));
        let Some(dev) = fs::read_link(format!("/sys/dev/block/{major}:{minor}"))
            .ok()
            .and_then(|p| Some(p.file_name()?.to_str()?.to_string()))
            .and_then(|n| TargetDevice::named(&n, None, false))
        else {
            crate::os::skip_test(&format!("/var/tmp is on no block device ({major}:{minor})"));
            return;
        };
        let name = dev.name.clone();
        let start = Scan::take();
        let probe = DeviceProbe::start_from(vec![dev], start.clone());
        let end = Scan::take();
        let took = (start.took + end.took).as_secs_f64() * 1000.0;
        let report = probe.finish_from(&end);
        assert_eq!(report.devices, name);
        let ms = report
            .metrics
            .iter()
            .find(|m| m.name == PROBE_MS_METRIC)
            .unwrap_or_else(|| panic!("no {PROBE_MS_METRIC}: {report:?}"))
            .value;
        // The two walks of /proc were the caller's: they count in the probe's cost, as they
        // did when the probe took them itself.
        assert!(ms >= took, "{ms} ms against the scans' {took} ms");
        // With no device, the scan given is not looked at and nothing is measured.
        let none = DeviceProbe::start_from(Vec::new(), start).finish_from(&end);
        assert!(none.metrics.is_empty());
        assert_eq!(none.attribution, NO_DEVICE);
    }

    #[test]
    fn a_writer_in_another_process_is_seen_and_named() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: reading another process's /proc/PID/io needs root");
            return;
        }
        // A child of this process is in fsdelta's tree; a grandchild whose parent exits at once
        // is reparented away from it. It runs dd, reaps it (a process's /proc/PID/io includes
        // the children it reaped), then sleeps so that the end scan still sees it.
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let file = dir.path().join("w");
        let start = Scan::take();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "sh -c 'dd if=/dev/zero of={} bs=1M count=64 conv=fsync status=none; \
                 exec sleep 60' >/dev/null 2>&1 & echo $!",
                file.display()
            ))
            .output()
            .unwrap();
        let pid: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        let comm = || std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        for _ in 0..1200 {
            if comm().trim() == "sleep" {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let end = Scan::take();
        // SAFETY: kill has no memory effects; the pid is the writer this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let top = start.others_io(&end);
        let me = format!("sleep[{pid}]");
        let w = top
            .iter()
            .find(|(n, _)| *n == me)
            .unwrap_or_else(|| panic!("{me} not among others: {top:?}"));
        assert!(w.1 >= 64 << 20, "{top:?}");
        let m = start.metrics(&end, 100.0);
        let why = judge(&m, &top, None, 1.0).unwrap();
        assert!(why.contains(&me), "{why}");
    }
}
