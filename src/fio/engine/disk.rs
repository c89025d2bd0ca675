//! fio's `disk_util`: the block-device counters of the devices holding a run's files, read from
//! /sys/dev/block/MAJ:MIN/stat before and after the run.
//!
//! Why it exists: fio reports, per device, the I/Os, merges, ticks and utilisation the kernel
//! saw while the jobs ran, and readers of fio's output look there to tell page-cache numbers
//! from device numbers. It must never fail a run: a file on a filesystem without a block device
//! (tmpfs) or an unreadable counter simply yields no entry, as fio prints none. Counters are
//! device-wide: other work on the same device is counted too, as in fio.

use crate::probe::clock::Nanos;
use std::path::{Path, PathBuf};

/// The fields of /sys/block/DEV/stat that fio reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counters {
    read_ios: u64,
    read_merges: u64,
    read_ticks: u64,
    write_ios: u64,
    write_merges: u64,
    write_ticks: u64,
    io_ticks: u64,
    time_in_queue: u64,
}

fn parse_stat(text: &str) -> Option<Counters> {
    let f: Vec<u64> = text
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<Vec<u64>>>()?;
    if f.len() < 11 {
        return None;
    }
    Some(Counters {
        read_ios: f[0],
        read_merges: f[1],
        read_ticks: f[3],
        write_ios: f[4],
        write_merges: f[5],
        write_ticks: f[7],
        io_ticks: f[9],
        time_in_queue: f[10],
    })
}

/// One device's counts over the run, as fio's JSON `disk_util` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct DiskUtil {
    /// Device name (`vda`, `loop0`); a partition is reported as its whole disk, as fio does.
    pub name: String,
    /// Reads completed.
    pub read_ios: u64,
    /// Writes completed.
    pub write_ios: u64,
    /// Reads merged.
    pub read_merges: u64,
    /// Writes merged.
    pub write_merges: u64,
    /// Time spent reading, ms.
    pub read_ticks: u64,
    /// Time spent writing, ms.
    pub write_ticks: u64,
    /// Weighted time in queue, ms.
    pub in_queue: u64,
    /// Percent of the run the device was busy.
    pub util: f64,
}

/// Counters taken at the start of a run, for the devices of its directories.
pub struct DiskWatch {
    devices: Vec<(String, PathBuf, Counters)>,
    t0: Nanos,
}

/// The sysfs directory of the whole disk holding `path` (its nearest existing ancestor).
fn device_dir(path: &Path) -> Option<(String, PathBuf)> {
    let mut p = path;
    let st = loop {
        match rustix::fs::stat(p) {
            Ok(st) => break st,
            Err(_) => p = p.parent()?,
        }
    };
    let (maj, min) = (rustix::fs::major(st.st_dev), rustix::fs::minor(st.st_dev));
    let mut dir = std::fs::canonicalize(format!("/sys/dev/block/{maj}:{min}")).ok()?;
    if dir.join("partition").exists() {
        dir = dir.parent()?.to_path_buf();
    }
    let name = dir.file_name()?.to_string_lossy().into_owned();
    Some((name, dir.join("stat")))
}

impl DiskWatch {
    /// Start watching the devices holding `paths` (duplicates and device-less paths dropped).
    pub fn start<'a>(paths: impl IntoIterator<Item = &'a Path>) -> DiskWatch {
        let mut devices: Vec<(String, PathBuf, Counters)> = Vec::new();
        for p in paths {
            let Some((name, stat)) = device_dir(p) else {
                continue;
            };
            if devices.iter().any(|(n, _, _)| *n == name) {
                continue;
            }
            if let Some(c) = std::fs::read_to_string(&stat)
                .ok()
                .as_deref()
                .and_then(parse_stat)
            {
                devices.push((name, stat, c));
            }
        }
        DiskWatch {
            devices,
            t0: Nanos::now(),
        }
    }

    /// The counts since `start`.
    pub fn finish(self) -> Vec<DiskUtil> {
        self.peek()
    }

    /// The counts since `start`, the watch going on (--status-interval's reports).
    pub fn peek(&self) -> Vec<DiskUtil> {
        let ms = ((Nanos::now() - self.t0).0 / 1_000_000).max(1);
        self.devices
            .iter()
            .filter_map(|(name, stat, a)| {
                let b = parse_stat(&std::fs::read_to_string(stat).ok()?)?;
                Some(DiskUtil {
                    name: name.clone(),
                    read_ios: b.read_ios.saturating_sub(a.read_ios),
                    write_ios: b.write_ios.saturating_sub(a.write_ios),
                    read_merges: b.read_merges.saturating_sub(a.read_merges),
                    write_merges: b.write_merges.saturating_sub(a.write_merges),
                    read_ticks: b.read_ticks.saturating_sub(a.read_ticks),
                    write_ticks: b.write_ticks.saturating_sub(a.write_ticks),
                    in_queue: b.time_in_queue.saturating_sub(a.time_in_queue),
                    util: (100.0 * b.io_ticks.saturating_sub(a.io_ticks) as f64 / ms as f64)
                        .min(100.0),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_stat_line_parses() {
        let c = parse_stat(
            " 3032311   660269 272736101  2345091  7457976   885620 359653142  5180953        0   569812  7776915   682479      231 132964088   136827  1877797   114043",
        )
        .unwrap();
        assert_eq!(c.read_ios, 3032311);
        assert_eq!(c.read_merges, 660269);
        assert_eq!(c.read_ticks, 2345091);
        assert_eq!(c.write_ios, 7457976);
        assert_eq!(c.write_merges, 885620);
        assert_eq!(c.write_ticks, 5180953);
        assert_eq!(c.io_ticks, 569812);
        assert_eq!(c.time_in_queue, 7776915);
        assert!(parse_stat("1 2 3").is_none());
        assert!(parse_stat("a b c d e f g h i j k").is_none());
    }

    #[test]
    fn a_watch_never_fails_and_counts_from_zero() {
        let dir = tempfile::tempdir().unwrap();
        let w = DiskWatch::start([
            dir.path(),
            Path::new("/nonexistent/x/y"),
            Path::new("/proc"),
        ]);
        let u = w.finish();
        // Whatever devices exist here, each appears once with sane numbers.
        let mut names: Vec<&str> = u.iter().map(|d| d.name.as_str()).collect();
        names.dedup();
        assert_eq!(names.len(), u.len());
        assert!(u.iter().all(|d| (0.0..=100.0).contains(&d.util)));
    }
}
