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
//!   The accounting is per process, not per device: a writer on another disk counts too (it
//!   still shares the page cache and the CPUs), which the docs say;
//! - the CPU time of kernel threads (kthreadd and its children), counted as the workload's,
//!   as the profile's default scope does (`crate::probe::profile::ProfileScope`);
//! - `drop_pagecache` of /proc/vmstat: page-cache drops by anyone during the sample (fsdelta's
//!   own drop happens before the first reading);
//! - the `some` total of /proc/pressure/memory: time tasks stalled on memory (the workload's
//!   own reclaim included: recorded, never judged a disturbance on its own).
//!
//! Must never fail a sample or write anything: a file that cannot be read leaves its metric out.

use crate::model::{Direction, Metric, MetricKind, Unit};
use std::collections::{HashMap, HashSet};
use std::fs;

/// Metric: bytes other processes read and wrote on storage during the sample.
pub const OTHERS_IO_METRIC: &str = "others_io_bytes";
/// Metric: CPU seconds of kernel threads during the sample (the workload's).
pub const KTHREAD_CPU_METRIC: &str = "kthread_cpu_s";
/// Metric: page-cache drops during the sample (by someone else: fsdelta drops before it).
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

/// Storage bytes of /proc/PID/io: read_bytes + write_bytes - cancelled_write_bytes.
pub fn parse_io(text: &str) -> Option<u64> {
    let get = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some(
        (get("read_bytes:")? + get("write_bytes:")?)
            .saturating_sub(get("cancelled_write_bytes:").unwrap_or(0)),
    )
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
    pub io: HashMap<u32, u64>,
    /// `drop_pagecache`.
    pub drops: Option<u64>,
    /// PSI memory `some` total, microseconds.
    pub psi_memory_us: Option<u64>,
}

impl Scan {
    /// Read /proc now. fsdelta's tree is this process and its descendants.
    pub fn take() -> Scan {
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
        let io = procs
            .iter()
            .filter(|(pid, p)| !is_kthread(**pid, p) && !mine.contains(pid))
            .filter_map(|(pid, _)| {
                fs::read_to_string(format!("/proc/{pid}/io"))
                    .ok()
                    .and_then(|t| parse_io(&t))
                    .map(|b| (*pid, b))
            })
            .collect();
        Scan {
            procs,
            io,
            drops: fs::read_to_string("/proc/vmstat")
                .ok()
                .and_then(|t| parse_drops(&t)),
            psi_memory_us: fs::read_to_string("/proc/pressure/memory")
                .ok()
                .and_then(|t| parse_psi_some(&t)),
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
    ///
    /// A process's count includes the children it reaped, whole: a child that did its I/O
    /// before the sample and was reaped during it would make its parent's count jump. So the
    /// count a process that ended during the sample had at the first reading is taken off its
    /// parent's (or, when the parent is gone too, init's, which reaps orphans).
    pub fn others_io(&self, end: &Scan) -> Vec<(String, u64)> {
        let alive = |pid: &u32| {
            end.procs
                .get(pid)
                .zip(self.procs.get(pid))
                .is_some_and(|(a, b)| a.start == b.start)
        };
        let mut before_reaped: HashMap<u32, u64> = HashMap::new();
        for (pid, b) in &self.io {
            if alive(pid) {
                continue;
            }
            let parent = self.procs.get(pid).map_or(1, |p| p.ppid);
            let reaper = if alive(&parent) { parent } else { 1 };
            *before_reaped.entry(reaper).or_default() += b;
        }
        let mut v: Vec<(String, u64)> = end
            .io
            .iter()
            .filter_map(|(pid, b)| {
                let p = end.procs.get(pid)?;
                let before = if alive(pid) {
                    self.io.get(pid).copied()?
                } else {
                    0
                };
                let d = b
                    .saturating_sub(before)
                    .saturating_sub(before_reaped.get(pid).copied().unwrap_or(0));
                (d > 0).then(|| (format!("{}[{pid}]", p.comm), d))
            })
            .collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
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
            out.push(neutral(
                CACHE_DROPS_METRIC,
                b.saturating_sub(a) as f64,
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
/// other processes' I/O (`top`, as [`Scan::others_io`] gives): `None` when there was none, else
/// what it was, for the sample's [`FACT`] (`others' I/O 210 MiB (dd[4242] 200 MiB, ...)`).
pub fn judge(metrics: &[Metric], top: &[(String, u64)], wall_s: f64) -> Option<String> {
    let get = |n: &str| metrics.iter().find(|m| m.name == n).map(|m| m.value);
    let mut parts = Vec::new();
    if let Some(io) = get(OTHERS_IO_METRIC)
        && io >= OTHERS_IO_MIN_BYTES
        && io >= OTHERS_IO_MIN_RATE * wall_s
    {
        let names: Vec<String> = top
            .iter()
            .take(3)
            .map(|(n, b)| format!("{n} {}", human_bytes(*b as f64)))
            .collect();
        parts.push(format!(
            "other processes' I/O {} ({})",
            human_bytes(io),
            names.join(", ")
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
        a.io.insert(500, 1 << 20);
        a.io.insert(501, 4096);
        a.drops = Some(4);
        a.psi_memory_us = Some(1000);
        let mut b = a.clone();
        // The kworker used 150 ticks, a btrfs worker born during the sample 50.
        b.procs.get_mut(&90).unwrap().cpu_ticks = 250;
        b.procs
            .insert(91, proc("btrfs-compressed-write", 2, 800, 50));
        b.io.insert(500, 201 << 20);
        // A process born during the sample (pid reused: a new start time) counts whole.
        b.procs.insert(501, proc("cp", 1, 900, 0));
        b.io.insert(501, 30 << 20);
        b.drops = Some(5);
        b.psi_memory_us = Some(26000);
        // A child that wrote 5 GiB before the sample, reaped by its make during it: only what
        // it wrote during the sample (1 MiB) counts on the make.
        a.procs.insert(600, proc("make", 1, 50, 0));
        a.io.insert(600, 7 << 20);
        a.procs.insert(601, proc("cc1", 600, 60, 0));
        a.io.insert(601, 5 << 30);
        b.procs.insert(600, proc("make", 1, 50, 0));
        b.io.insert(600, (7 << 20) + (5 << 30) + (1 << 20));
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
        assert_eq!(v(PSI_MEMORY_METRIC), 25.0);
        assert!(m.iter().all(|x| x.direction == Direction::Neutral));
        let why = judge(&m, &top, 10.0).unwrap();
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
        assert_eq!(judge(&quiet, &top, 200.0), None);
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
            judge(&cpu(60.0), &[], 1.0).as_deref(),
            Some("others' CPU share 60 %")
        );
        assert_eq!(judge(&cpu(49.0), &[], 1.0), None);
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
        let why = judge(&m, &top, 1.0).unwrap();
        assert!(why.contains(&me), "{why}");
    }
}
