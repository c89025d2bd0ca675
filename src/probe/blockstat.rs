//! Per-sample device counters from /sys/block/<dev>/stat (a snapshot before, a snapshot after,
//! the delta), the write amplification they allow, and dropping the page cache before a sample.
//!
//! Why here: the counters belong to the device the target made, which only this room knows.
//! Must never judge: the counts are neutral metrics; only write amplification, whose meaning is
//! fixed (device bytes per logical byte), is lower-is-better.
//!
//! The counters are totals over the sample, as fsperf records them (`dev_read_iops` is the number
//! of read I/Os the device completed, not a rate); sectors in this file are always 512 bytes.

use crate::model::{Direction, Metric, Unit};
use std::fs;
use std::io::Write;

/// Errors reading a device's counters or dropping caches (the site room turns them into its
/// own errors with the same text).
#[derive(Debug, thiserror::Error)]
pub enum BlockStatError {
    /// The counters are not there or not in the kernel's format.
    #[error("target {path}: {message}")]
    Unusable {
        /// The file read.
        path: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// An I/O error.
    #[error("{op} {path}: {source}")]
    Io {
        /// The operation.
        op: &'static str,
        /// The path.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// One reading of a device's stat file (the fields fsdelta uses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockStat {
    /// Read I/Os completed.
    pub read_ios: u64,
    /// Sectors (512 bytes) read.
    pub read_sectors: u64,
    /// Write I/Os completed.
    pub write_ios: u64,
    /// Sectors (512 bytes) written.
    pub write_sectors: u64,
    /// Discard I/Os completed (0 on kernels before 4.18).
    pub discard_ios: u64,
    /// Flush requests completed (0 on kernels before 5.5).
    pub flush_ios: u64,
}

/// What happened on the device between two readings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockStatDelta {
    /// Read I/Os.
    pub read_ios: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Write I/Os.
    pub write_ios: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Discard I/Os.
    pub discard_ios: u64,
    /// Flushes.
    pub flush_ios: u64,
}

impl BlockStat {
    /// Read /sys/class/block/<name>/stat (`name` as `loop3`, `nvme0n1`, `sda2`).
    pub fn read(name: &str) -> Result<BlockStat, BlockStatError> {
        let path = format!("/sys/class/block/{name}/stat");
        let text = fs::read_to_string(&path).map_err(|source| BlockStatError::Io {
            op: "read",
            path: path.clone(),
            source,
        })?;
        BlockStat::parse(&text).ok_or_else(|| BlockStatError::Unusable {
            path,
            message: format!("unexpected contents '{}'", text.trim()),
        })
    }

    /// Parse the stat file's text (11, 15 or 17 fields).
    pub fn parse(text: &str) -> Option<BlockStat> {
        let f: Vec<u64> = text
            .split_whitespace()
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        if f.len() < 11 {
            return None;
        }
        let at = |i: usize| f.get(i).copied().unwrap_or(0);
        Some(BlockStat {
            read_ios: at(0),
            read_sectors: at(2),
            write_ios: at(4),
            write_sectors: at(6),
            discard_ios: at(11),
            flush_ios: at(15),
        })
    }

    /// The change from `self` (before) to `after`. Counters never go backwards except when the
    /// device was re-created in between; then the delta saturates at zero.
    pub fn delta(&self, after: &BlockStat) -> BlockStatDelta {
        BlockStatDelta {
            read_ios: after.read_ios.saturating_sub(self.read_ios),
            read_bytes: after.read_sectors.saturating_sub(self.read_sectors) * 512,
            write_ios: after.write_ios.saturating_sub(self.write_ios),
            write_bytes: after.write_sectors.saturating_sub(self.write_sectors) * 512,
            discard_ios: after.discard_ios.saturating_sub(self.discard_ios),
            flush_ios: after.flush_ios.saturating_sub(self.flush_ios),
        }
    }
}

impl BlockStatDelta {
    /// `dev_read_iops`, `dev_write_iops` (I/O counts), `dev_read_kbytes`, `dev_write_kbytes`
    /// (KiB), all neutral.
    pub fn metrics(&self) -> Vec<Metric> {
        vec![
            Metric::new(
                "dev_read_iops",
                self.read_ios as f64,
                Unit::Count,
                Direction::Neutral,
            ),
            Metric::new(
                "dev_write_iops",
                self.write_ios as f64,
                Unit::Count,
                Direction::Neutral,
            ),
            Metric::new(
                "dev_read_kbytes",
                self.read_bytes as f64 / 1024.0,
                Unit::KiB,
                Direction::Neutral,
            ),
            Metric::new(
                "dev_write_kbytes",
                self.write_bytes as f64 / 1024.0,
                Unit::KiB,
                Direction::Neutral,
            ),
        ]
    }

    /// `write_amplification`: device bytes written per byte the workload wrote; `None` when the
    /// workload wrote nothing (the ratio has no meaning).
    pub fn write_amplification(&self, logical_bytes_written: u64) -> Option<Metric> {
        write_amplification(self.write_bytes, logical_bytes_written)
    }
}

/// `write_amplification` = `device_bytes` / `logical_bytes` (lower is better); `None` when
/// `logical_bytes` is zero.
pub fn write_amplification(device_bytes: u64, logical_bytes: u64) -> Option<Metric> {
    (logical_bytes > 0).then(|| {
        Metric::new(
            "write_amplification",
            device_bytes as f64 / logical_bytes as f64,
            Unit::Ratio,
            Direction::LowerIsBetter,
        )
    })
}

/// The page-cache drops this process made ([`drop_caches`]): the disturbance probe counts only
/// others' drops during a sample (the `stream` workload drops the cache between its write and
/// its cold read; that is the workload's, not a disturbance).
static OWN_DROPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many times this process has dropped the page cache (each is one `drop_pagecache` of
/// /proc/vmstat).
pub fn own_drops() -> u64 {
    OWN_DROPS.load(std::sync::atomic::Ordering::SeqCst)
}

/// Write back dirty data (sync), then, when running as root, drop the page cache, dentries and
/// inodes (`3 > /proc/sys/vm/drop_caches`). Returns whether the caches were dropped. Every
/// drop of fsdelta's goes through here, so that [`own_drops`] counts it.
pub fn drop_caches() -> Result<bool, BlockStatError> {
    rustix::fs::sync();
    if !rustix::process::geteuid().is_root() {
        return Ok(false);
    }
    let path = "/proc/sys/vm/drop_caches";
    let io = |source| BlockStatError::Io {
        op: "write 3 to",
        path: path.to_string(),
        source,
    };
    let mut f = fs::OpenOptions::new().write(true).open(path).map_err(io)?;
    // Counted before the write: a sample's end reading may then see one more own drop than
    // the kernel did (a failed write), never an own drop as someone else's.
    OWN_DROPS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    f.write_all(b"3").map_err(io)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "   36367     6225  4673042    26120     6853    18763  3708352    22075        0     8320    48937     5138       54   433112      697      848       44\n";
    const AFTER: &str = "   36377     6225  4673122    26120     6863    18763  3708552    22075        0     8320    48937     5140       54   433112      697      850       44\n";

    #[test]
    fn deltas_count_ios_and_bytes() {
        let a = BlockStat::parse(BEFORE).unwrap();
        let b = BlockStat::parse(AFTER).unwrap();
        let d = a.delta(&b);
        assert_eq!(d.read_ios, 10);
        assert_eq!(d.read_bytes, 80 * 512);
        assert_eq!(d.write_ios, 10);
        assert_eq!(d.write_bytes, 200 * 512);
        assert_eq!(d.discard_ios, 2);
        assert_eq!(d.flush_ios, 2);
        let m = d.metrics();
        let names: Vec<&str> = m.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "dev_read_iops",
                "dev_write_iops",
                "dev_read_kbytes",
                "dev_write_kbytes"
            ]
        );
        assert_eq!(m[3].value, 100.0);
        assert_eq!(m[3].unit, Unit::KiB);
        assert!(m.iter().all(|m| m.direction == Direction::Neutral));
        assert_eq!(b.delta(&a), BlockStatDelta::default(), "saturates");
    }

    #[test]
    fn old_kernels_have_eleven_fields_and_garbage_is_refused() {
        let s = BlockStat::parse("1 0 8 0 2 0 16 0 0 0 0").unwrap();
        assert_eq!(s.write_sectors, 16);
        assert_eq!(s.flush_ios, 0);
        assert!(BlockStat::parse("1 2 3").is_none());
        assert!(BlockStat::parse("a b c d e f g h i j k").is_none());
    }

    #[test]
    fn write_amplification_is_lower_is_better() {
        let m = write_amplification(3 << 20, 1 << 20).unwrap();
        assert_eq!(m.value, 3.0);
        assert_eq!(m.unit, Unit::Ratio);
        assert_eq!(m.direction, Direction::LowerIsBetter);
        assert!(write_amplification(5, 0).is_none());
    }

    #[test]
    fn a_real_device_can_be_read() {
        let Ok(entries) = fs::read_dir("/sys/class/block") else {
            crate::os::skip_test("no /sys/class/block");
            return;
        };
        // Not a loop device: other tests attach and detach those concurrently.
        let name = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|n| !n.starts_with("loop"));
        let Some(name) = name else {
            crate::os::skip_test("no block device");
            return;
        };
        let a = BlockStat::read(&name).unwrap();
        let b = BlockStat::read(&name).unwrap();
        assert!(b.read_ios >= a.read_ios);
        assert!(BlockStat::read("fsdelta-no-such-device").is_err());
    }

    #[test]
    fn dropping_caches_says_whether_it_did() {
        let did = drop_caches().unwrap();
        assert_eq!(did, rustix::process::geteuid().is_root());
    }
}
