//! What a sample left on disk: the space it used (statfs, and btrfs's data / metadata / system
//! split), how well the files it wrote compressed (btrfs, read from the file-extent items as
//! compsize reads them; f2fs, from each file's count of blocks compression saved; erofs images,
//! from each file's `st_blocks`), how fragmented those files came out (FIEMAP extent counts),
//! the filesystem's own counters over the sample (btrfs `commit_stats`, xfs `stats`, ext4's
//! `lifetime_write_kbytes` and `errors_count`, f2fs's sysfs counters) and free-space
//! fragmentation (btrfs free space tree, FS_IOC_GETFSMAP on ext4 and xfs, f2fs's dirty
//! segments); optionally the fragmentation again after an unmount and a mount ([`remounted`]).
//!
//! Why here: these are observations of the filesystem a workload ran on, made the same way for
//! every workload and on the host as in a kernel guest (only statfs, syncfs, a few ioctls, FIEMAP
//! and sysfs files: nothing a guest's initramfs lacks). The sample step takes a [`Before`] before
//! the workload and calls [`Before::after`] after it, before the unmount.
//!
//! Must never write: it opens files read-only, reads sysfs and asks the kernel for maps. The
//! one side effect is `syncfs` on the sample's filesystem (what the unmount right after would do
//! anyway), so that delayed allocation and btrfs compression have happened before the maps are
//! read. A metric a filesystem does not expose is absent, with the reason in [`Report::absent`],
//! never zero. Directions are declared only where the meaning is fixed (more space per byte
//! written, more extents per file: worse; a better compression ratio: better); counters are
//! neutral.

use crate::model::{Direction, Metric, MetricKind, Unit};
use std::collections::HashSet;
use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

// The names of every metric this module records are reserved in `crate::model::ONDISK_METRICS`
// (one list: a metric added here is added there).

/// The filesystem's own counters at one moment (those of its type; all `None` elsewhere).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FsCounters {
    /// btrfs `/sys/fs/btrfs/FSID/commit_stats`.
    pub btrfs: Option<CommitStats>,
    /// ext4 `/sys/fs/ext4/DEV/{lifetime_write_kbytes,errors_count}`.
    pub ext4: Option<Ext4Counters>,
    /// xfs `/sys/fs/xfs/DEV/stats/stats`.
    pub xfs: Option<XfsStats>,
    /// f2fs `/sys/fs/f2fs/DEV/*`: each of [`F2FS_COUNTERS`] and [`F2FS_LEVELS`] that is
    /// readable, by its sysfs name.
    pub f2fs: Option<Vec<(&'static str, u64)>>,
}

/// f2fs's counters fsdelta keeps, as deltas over the sample: (file in /sys/fs/f2fs/DEV, metric,
/// unit). Kernel 6.1 has them all (the `cp_`, `gc_` and `moved_` ones with CONFIG_F2FS_STAT_FS,
/// the `compr_` ones with CONFIG_F2FS_FS_COMPRESSION); one a kernel lacks is absent, with its
/// file named in `ondisk_absent`.
pub const F2FS_COUNTERS: [(&str, &str, Unit); 10] = [
    (
        "lifetime_write_kbytes",
        "f2fs_lifetime_write_kbytes",
        Unit::KiB,
    ),
    (
        "cp_foreground_calls",
        "f2fs_cp_foreground_calls",
        Unit::Count,
    ),
    (
        "cp_background_calls",
        "f2fs_cp_background_calls",
        Unit::Count,
    ),
    (
        "gc_foreground_calls",
        "f2fs_gc_foreground_calls",
        Unit::Count,
    ),
    (
        "gc_background_calls",
        "f2fs_gc_background_calls",
        Unit::Count,
    ),
    (
        "moved_blocks_foreground",
        "f2fs_moved_blocks_foreground",
        Unit::Count,
    ),
    (
        "moved_blocks_background",
        "f2fs_moved_blocks_background",
        Unit::Count,
    ),
    (
        "compr_written_block",
        "f2fs_compr_written_blocks",
        Unit::Count,
    ),
    ("compr_saved_block", "f2fs_compr_saved_blocks", Unit::Count),
    ("compr_new_inode", "f2fs_compr_new_inodes", Unit::Count),
];

/// f2fs's levels fsdelta keeps as they are after the sample (segments are f2fs's unit of
/// free space: a dirty segment holds valid and invalid blocks, f2fs's free-space fragmentation).
pub const F2FS_LEVELS: [(&str, &str); 2] = [
    ("free_segments", "f2fs_free_segments"),
    ("dirty_segments", "f2fs_dirty_segments"),
];

/// btrfs's transaction commit statistics (kernel 6.0 and later), since the mount.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// Transactions committed.
    pub commits: u64,
    /// The longest commit, in milliseconds.
    pub max_commit_ms: u64,
    /// Milliseconds spent in commits.
    pub total_commit_ms: u64,
}

impl CommitStats {
    /// Parse `commit_stats` (`commits 12`, `max_commit_ms 30`, ... one a line).
    pub fn parse(text: &str) -> Option<CommitStats> {
        let field = |name: &str| {
            text.lines().find_map(|l| {
                let (k, v) = l.split_once(char::is_whitespace)?;
                (k == name).then(|| v.trim().parse::<u64>().ok())?
            })
        };
        Some(CommitStats {
            commits: field("commits")?,
            max_commit_ms: field("max_commit_ms")?,
            total_commit_ms: field("total_commit_ms")?,
        })
    }
}

/// ext4's lifetime counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ext4Counters {
    /// KiB written to the filesystem's device over its life.
    pub lifetime_write_kbytes: u64,
    /// Errors recorded in the superblock.
    pub errors_count: u64,
}

/// The xfs statistics fsdelta keeps (counts since the mount).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XfsStats {
    /// `log` field 1: log buffer writes.
    pub log_writes: u64,
    /// `log` field 2: log blocks (512 bytes) written.
    pub log_blocks: u64,
    /// `log` field 4: log forces.
    pub log_forces: u64,
    /// `trans` field 1: synchronous transactions.
    pub trans_sync: u64,
    /// `trans` field 2: asynchronous transactions.
    pub trans_async: u64,
    /// `extent_alloc` field 1: extents allocated.
    pub extent_allocs: u64,
    /// `extent_alloc` field 3: extents freed.
    pub extent_frees: u64,
}

impl XfsStats {
    /// Parse `/sys/fs/xfs/DEV/stats/stats` (`log 2 9 0 2 2`, `trans 0 6 0`, ...).
    pub fn parse(text: &str) -> Option<XfsStats> {
        let line = |name: &str| -> Option<Vec<u64>> {
            text.lines().find_map(|l| {
                let mut w = l.split_whitespace();
                (w.next()? == name).then(|| w.map(|x| x.parse().ok()).collect())?
            })
        };
        let (log, trans, ext) = (line("log")?, line("trans")?, line("extent_alloc")?);
        Some(XfsStats {
            log_writes: *log.first()?,
            log_blocks: *log.get(1)?,
            log_forces: *log.get(3)?,
            trans_sync: *trans.first()?,
            trans_async: *trans.get(1)?,
            extent_allocs: *ext.first()?,
            extent_frees: *ext.get(2)?,
        })
    }
}

/// What is known before the workload.
#[derive(Clone, Debug)]
pub struct Before {
    dir: PathBuf,
    fs_type: String,
    /// The device's kernel name (`loop3`, `vdb`), which names its sysfs directories.
    device: String,
    used: Result<u64, String>,
    counters: FsCounters,
    took: Duration,
}

/// What the on-disk measurement found: metrics, and for each metric that is absent, why.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The metrics measured.
    pub metrics: Vec<Metric>,
    /// `(metric or group, reason)` for each metric not measured.
    pub absent: Vec<(String, String)>,
    /// How long the `syncfs` before the maps took (writeback the unmount would otherwise do).
    pub sync: Duration,
    /// Facts of how it measured (`ondisk_extents_sampled`), for the sample's facts.
    pub facts: Vec<(String, String)>,
}

impl Report {
    /// The absent metrics as one fact's text (`name: reason; name: reason`).
    pub fn absent_text(&self) -> String {
        self.absent
            .iter()
            .map(|(n, why)| format!("{n}: {why}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

fn used_bytes(dir: &Path) -> Result<u64, String> {
    let s = rustix::fs::statvfs(dir).map_err(|e| format!("statfs {}: {e}", dir.display()))?;
    Ok(s.f_blocks.saturating_sub(s.f_bfree) * s.f_frsize)
}

/// The kernel name of a device path (`/dev/loop3` -> `loop3`, `/dev/mapper/x` -> `dm-0`).
fn kernel_name(device: &str) -> String {
    let p = fs::canonicalize(device).unwrap_or_else(|_| PathBuf::from(device));
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The btrfs sysfs directory (`/sys/fs/btrfs/FSID`) of the filesystem on `device`.
fn btrfs_sysfs(device: &str) -> Option<PathBuf> {
    fs::read_dir("/sys/fs/btrfs")
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("devices").join(device).exists())
}

fn read_counters(fs_type: &str, device: &str) -> FsCounters {
    let mut c = FsCounters::default();
    match fs_type {
        "btrfs" => {
            c.btrfs = btrfs_sysfs(device)
                .and_then(|d| fs::read_to_string(d.join("commit_stats")).ok())
                .and_then(|t| CommitStats::parse(&t));
        }
        "ext4" => {
            let at = |f: &str| {
                fs::read_to_string(format!("/sys/fs/ext4/{device}/{f}"))
                    .ok()
                    .and_then(|t| t.trim().parse::<u64>().ok())
            };
            if let (Some(w), Some(e)) = (at("lifetime_write_kbytes"), at("errors_count")) {
                c.ext4 = Some(Ext4Counters {
                    lifetime_write_kbytes: w,
                    errors_count: e,
                });
            }
        }
        "xfs" => {
            c.xfs = fs::read_to_string(format!("/sys/fs/xfs/{device}/stats/stats"))
                .ok()
                .and_then(|t| XfsStats::parse(&t));
        }
        "f2fs" => {
            let dir = PathBuf::from(format!("/sys/fs/f2fs/{device}"));
            let names = F2FS_COUNTERS
                .iter()
                .map(|c| c.0)
                .chain(F2FS_LEVELS.iter().map(|l| l.0));
            let read: Vec<(&'static str, u64)> = names
                .filter_map(|n| {
                    let v = fs::read_to_string(dir.join(n)).ok()?;
                    Some((n, v.trim().parse().ok()?))
                })
                .collect();
            c.f2fs = (!read.is_empty()).then_some(read);
        }
        _ => {}
    }
    c
}

impl Before {
    /// Read the space used and the filesystem's counters of `dir` (on a filesystem of
    /// `fs_type` on `device`, a path such as `/dev/loop3`).
    pub fn take(dir: &Path, fs_type: &str, device: &str) -> Before {
        let t0 = Instant::now();
        let device = kernel_name(device);
        let counters = read_counters(fs_type, &device);
        Before {
            dir: dir.to_path_buf(),
            fs_type: fs_type.to_string(),
            used: used_bytes(dir),
            counters,
            device,
            took: t0.elapsed(),
        }
    }

    /// After the workload: write back what it left dirty (`syncfs`), then measure.
    /// `workload_bytes` is what the workload wrote (its own count, or what it passed to
    /// write(2)); without it there is no `space_amplification`.
    pub fn after(&self, workload_bytes: Option<u64>) -> Report {
        let mut r = Report::default();
        let t0 = Instant::now();
        match fs::File::open(&self.dir).map(|f| rustix::fs::syncfs(&f)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => r.absent.push(("syncfs".into(), e.to_string())),
            Err(e) => r.absent.push(("syncfs".into(), e.to_string())),
        }
        r.sync = t0.elapsed();
        let t1 = Instant::now();
        let tree = walk(&self.dir);
        self.space(workload_bytes, !tree.files.is_empty(), &mut r);
        fragmentation(&tree, &mut r);
        if self.fs_type == "btrfs" {
            btrfs_space(&self.dir, &mut r);
            compression(&self.dir, &tree, &mut r);
            free_space(&self.dir, &mut r);
        } else {
            if matches!(self.fs_type.as_str(), "ext4" | "xfs") {
                fsmap_free_space(&self.dir, &mut r);
            }
            let why = format!(
                "{} has no per-type space report fsdelta reads",
                self.fs_type
            );
            r.absent.push(("space_data_bytes".into(), why));
            match self.fs_type.as_str() {
                "erofs" => erofs_compression(&tree, &mut r),
                "f2fs" => f2fs_compression(&tree, &mut r),
                other => r.absent.push((
                    "compress_ratio".into(),
                    format!(
                        "{other} does not compress file data (btrfs with compress or \
                         compress-force, f2fs with compression and erofs images do)"
                    ),
                )),
            }
        }
        self.counter_deltas(&mut r);
        r.metrics.push(
            Metric::new(
                "ondisk_s",
                (self.took + t1.elapsed()).as_secs_f64(),
                Unit::Seconds,
                Direction::Neutral,
            )
            .kind(MetricKind::Mean),
        );
        r
    }

    /// `left_files`: the workload left files in its directory; a workload that removed what it
    /// wrote (copy, stream, untar, fs_mark without -k) has no space amplification to show.
    fn space(&self, workload_bytes: Option<u64>, left_files: bool, r: &mut Report) {
        let before = match &self.used {
            Ok(b) => *b,
            Err(e) => {
                r.absent.push(("fs_used_bytes".into(), e.clone()));
                return;
            }
        };
        let after = match used_bytes(&self.dir) {
            Ok(a) => a,
            Err(e) => {
                r.absent.push(("fs_used_bytes".into(), e));
                return;
            }
        };
        let bytes = |n: &str, v: u64| Metric::new(n, v as f64, Unit::Bytes, Direction::Neutral);
        r.metrics.push(bytes("fs_used_bytes_before", before));
        r.metrics.push(bytes("fs_used_bytes_after", after));
        match workload_bytes.filter(|&w| w > 0) {
            Some(_) if !left_files => r.absent.push((
                "space_amplification".into(),
                "the workload removed the files it wrote before it returned".into(),
            )),
            Some(w) => {
                r.metrics.push(bytes("workload_write_bytes", w));
                r.metrics.push(
                    Metric::new(
                        "space_amplification",
                        after.saturating_sub(before) as f64 / w as f64,
                        Unit::Ratio,
                        Direction::LowerIsBetter,
                    )
                    .kind(MetricKind::Mean),
                );
            }
            None => r.absent.push((
                "space_amplification".into(),
                "the workload's bytes written are not known (or zero)".into(),
            )),
        }
    }

    fn counter_deltas(&self, r: &mut Report) {
        let now = read_counters(&self.fs_type, &self.device);
        let count = |n: &str, v: u64| Metric::new(n, v as f64, Unit::Count, Direction::Neutral);
        match (&self.counters.btrfs, &now.btrfs) {
            (Some(a), Some(b)) => {
                let commits = b.commits.saturating_sub(a.commits);
                r.metrics.push(count("btrfs_commits", commits));
                if commits > 0 {
                    let ms = b.total_commit_ms.saturating_sub(a.total_commit_ms);
                    r.metrics.push(
                        Metric::new(
                            "btrfs_commit_avg_ms",
                            ms as f64 / commits as f64,
                            Unit::Milliseconds,
                            Direction::Neutral,
                        )
                        .kind(MetricKind::Mean),
                    );
                }
                // The kernel keeps the maximum since the mount: it is this sample's only when
                // it rose during the sample.
                if b.max_commit_ms > a.max_commit_ms {
                    r.metrics.push(
                        Metric::new(
                            "btrfs_commit_max_ms",
                            b.max_commit_ms as f64,
                            Unit::Milliseconds,
                            Direction::Neutral,
                        )
                        .kind(MetricKind::Max),
                    );
                } else {
                    r.absent.push((
                        "btrfs_commit_max_ms".into(),
                        "no commit of this sample was longer than the longest since the mount"
                            .into(),
                    ));
                }
            }
            _ if self.fs_type == "btrfs" => r.absent.push((
                "btrfs_commits".into(),
                format!(
                    "no readable /sys/fs/btrfs/FSID/commit_stats for {} (kernel 6.0 or later has it)",
                    self.device
                ),
            )),
            _ => {}
        }
        match (&self.counters.ext4, &now.ext4) {
            (Some(a), Some(b)) => {
                r.metrics.push(Metric::new(
                    "ext4_lifetime_write_kbytes",
                    b.lifetime_write_kbytes
                        .saturating_sub(a.lifetime_write_kbytes) as f64,
                    Unit::KiB,
                    Direction::Neutral,
                ));
                r.metrics.push(
                    Metric::new(
                        "ext4_errors",
                        b.errors_count.saturating_sub(a.errors_count) as f64,
                        Unit::Count,
                        Direction::LowerIsBetter,
                    )
                    .kind(MetricKind::Count),
                );
            }
            _ if self.fs_type == "ext4" => r.absent.push((
                "ext4_lifetime_write_kbytes".into(),
                format!("no readable /sys/fs/ext4/{}", self.device),
            )),
            _ => {}
        }
        match (&self.counters.xfs, &now.xfs) {
            (Some(a), Some(b)) => {
                let d = |x: u64, y: u64| y.saturating_sub(x);
                for (n, v) in [
                    ("xfs_log_writes", d(a.log_writes, b.log_writes)),
                    ("xfs_log_blocks", d(a.log_blocks, b.log_blocks)),
                    ("xfs_log_forces", d(a.log_forces, b.log_forces)),
                    ("xfs_trans_sync", d(a.trans_sync, b.trans_sync)),
                    ("xfs_trans_async", d(a.trans_async, b.trans_async)),
                    ("xfs_extent_allocs", d(a.extent_allocs, b.extent_allocs)),
                    ("xfs_extent_frees", d(a.extent_frees, b.extent_frees)),
                ] {
                    r.metrics.push(count(n, v));
                }
            }
            _ if self.fs_type == "xfs" => r.absent.push((
                "xfs_log_writes".into(),
                format!("no readable /sys/fs/xfs/{}/stats/stats", self.device),
            )),
            _ => {}
        }
        if self.fs_type == "f2fs" {
            f2fs_deltas(
                &self.device,
                self.counters.f2fs.as_deref(),
                now.f2fs.as_deref(),
                r,
            );
        }
    }
}

/// The f2fs counters' deltas over the sample and its levels after it; each one unreadable
/// before or after is absent, named by its sysfs file.
fn f2fs_deltas(
    device: &str,
    before: Option<&[(&'static str, u64)]>,
    after: Option<&[(&'static str, u64)]>,
    r: &mut Report,
) {
    let (Some(before), Some(after)) = (before, after) else {
        r.absent.push((
            "f2fs_lifetime_write_kbytes".into(),
            format!("no readable /sys/fs/f2fs/{device}"),
        ));
        return;
    };
    let at = |list: &[(&str, u64)], n: &str| list.iter().find(|x| x.0 == n).map(|x| x.1);
    let mut missing = Vec::new();
    for (file, metric, unit) in F2FS_COUNTERS {
        match (at(before, file), at(after, file)) {
            (Some(a), Some(b)) => r.metrics.push(Metric::new(
                metric,
                b.saturating_sub(a) as f64,
                unit,
                Direction::Neutral,
            )),
            _ => missing.push(file),
        }
    }
    for (file, metric) in F2FS_LEVELS {
        match at(after, file) {
            Some(v) => r.metrics.push(Metric::new(
                metric,
                v as f64,
                Unit::Count,
                Direction::Neutral,
            )),
            None => missing.push(file),
        }
    }
    if !missing.is_empty() {
        r.absent.push((
            "f2fs".into(),
            format!(
                "no readable /sys/fs/f2fs/{device}/{{{}}} (this kernel's f2fs lacks them)",
                missing.join(",")
            ),
        ));
    }
}

/// The suffix of the metrics measured again after an unmount and a mount ([`remounted`]).
pub const REMOUNTED: &str = "_remounted";

/// Fragmentation measured again after the filesystem was unmounted and mounted again (the
/// suite's `ondisk_remount = true`), as fsperf's fragmentation tests do: what the allocator
/// decided is then read from the disk, not from what it still held in memory (xfs frees a
/// removed file's extents in the background, ext4 and btrfs may have preallocations that the
/// unmount gives back). Extents per file (FIEMAP of the files under `dir`) and free-space
/// fragmentation (btrfs free space tree, GETFSMAP on ext4 and xfs), each metric named with
/// [`REMOUNTED`] after it (`extents_per_file_p95_remounted`), and the time it took
/// (`ondisk_remounted_s`). Reads only, as [`Before::after`].
pub fn remounted(dir: &Path, fs_type: &str) -> Report {
    let t0 = Instant::now();
    let mut r = Report::default();
    fragmentation(&walk(dir), &mut r);
    match fs_type {
        "btrfs" => free_space(dir, &mut r),
        "ext4" | "xfs" => fsmap_free_space(dir, &mut r),
        _ => {}
    }
    for m in &mut r.metrics {
        m.name.push_str(REMOUNTED);
    }
    for (name, _) in &mut r.absent {
        name.push_str(REMOUNTED);
    }
    for (name, _) in &mut r.facts {
        name.push_str(REMOUNTED);
    }
    r.metrics.push(
        Metric::new(
            "ondisk_remounted_s",
            t0.elapsed().as_secs_f64(),
            Unit::Seconds,
            Direction::Neutral,
        )
        .kind(MetricKind::Mean),
    );
    r
}

/// A regular file the workload left: its directory (an index into [`Tree::dirs`]), its name
/// and its inode number.
struct File {
    dir: usize,
    name: std::ffi::OsString,
    ino: u64,
}

/// The regular files under a directory.
struct Tree {
    dirs: Vec<PathBuf>,
    files: Vec<File>,
}

impl Tree {
    fn path(&self, f: &File) -> PathBuf {
        self.dirs[f.dir].join(&f.name)
    }
}

/// The regular files under `dir`, on `dir`'s filesystem, in a stable order. Entries are typed
/// from the directory itself (d_type); only directories are stat'ed, to stay off other mounts
/// and btrfs subvolumes.
fn walk(dir: &Path) -> Tree {
    use std::os::unix::fs::DirEntryExt;
    let mut tree = Tree {
        dirs: Vec::new(),
        files: Vec::new(),
    };
    let Ok(root) = fs::symlink_metadata(dir) else {
        return tree;
    };
    tree.dirs.push(dir.to_path_buf());
    let mut todo = vec![0usize];
    while let Some(d) = todo.pop() {
        let Ok(entries) = fs::read_dir(&tree.dirs[d]) else {
            continue;
        };
        let mut entries: Vec<_> = entries
            .flatten()
            .filter_map(|e| Some((e.file_name(), e.file_type().ok()?, e.ino())))
            .collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (name, t, ino) in entries {
            if t.is_dir() {
                let path = tree.dirs[d].join(&name);
                if fs::symlink_metadata(&path).is_ok_and(|m| m.dev() == root.dev()) {
                    tree.dirs.push(path);
                    todo.push(tree.dirs.len() - 1);
                }
            } else if t.is_file() {
                tree.files.push(File { dir: d, name, ino });
            }
        }
    }
    tree
}

/// `struct fiemap`'s head (linux/fiemap.h), with no room for extents: the kernel then only
/// counts them.
#[repr(C)]
#[derive(Default)]
struct FiemapHead {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
}

/// FS_IOC_FIEMAP = _IOWR('f', 11, struct fiemap).
const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;

/// How many extents `f` has (FIEMAP with no extent buffer: the kernel only counts).
fn extent_count(f: &fs::File) -> std::io::Result<u32> {
    let mut h = FiemapHead {
        fm_length: u64::MAX,
        ..Default::default()
    };
    // SAFETY: FS_IOC_FIEMAP reads and writes a struct fiemap; with fm_extent_count = 0 the kernel
    // touches only its 32-byte head, which `h` is, alive and writable for the call.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_FIEMAP as _, &mut h as *mut FiemapHead) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(h.fm_mapped_extents)
}

/// The nearest-rank percentile `q` (0..=100) of sorted, non-empty `v`.
fn nearest_rank(v: &[u32], q: f64) -> u32 {
    let rank = ((q / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// The metrics of a list of extent counts (one per file).
pub fn fragmentation_metrics(counts: &[u32]) -> Vec<Metric> {
    if counts.is_empty() {
        return Vec::new();
    }
    let mut v = counts.to_vec();
    v.sort_unstable();
    let more = v.iter().filter(|&&c| c > 1).count();
    let lower = |n: &str, x: f64, unit: Unit, kind: MetricKind| {
        Metric::new(n, x, unit, Direction::LowerIsBetter).kind(kind)
    };
    vec![
        Metric::new(
            "mapped_files",
            v.len() as f64,
            Unit::Count,
            Direction::Neutral,
        ),
        lower(
            "extents_per_file_p50",
            nearest_rank(&v, 50.0) as f64,
            Unit::Count,
            MetricKind::Mean,
        ),
        lower(
            "extents_per_file_p95",
            nearest_rank(&v, 95.0) as f64,
            Unit::Count,
            MetricKind::Tail,
        ),
        lower(
            "extents_per_file_max",
            v[v.len() - 1] as f64,
            Unit::Count,
            MetricKind::Max,
        ),
        lower(
            "fragmented_files_pct",
            100.0 * more as f64 / v.len() as f64,
            Unit::Percent,
            MetricKind::Share,
        ),
    ]
}

/// The most files whose extents are counted (an open and an ioctl each): beyond it, an evenly
/// spaced sample of this many (every k-th in the walk's order), said in the facts. It bounds
/// the cost of a tree of many files; p50 and p95 of 1000 files are close to the whole's, and
/// `extents_per_file_max` is then the sample's maximum.
pub const MAX_MAPPED: usize = 1000;

fn fragmentation(tree: &Tree, r: &mut Report) {
    let files = &tree.files;
    let stride = files.len().div_ceil(MAX_MAPPED).max(1);
    let mut counts = Vec::with_capacity(files.len().min(MAX_MAPPED));
    let mut refused = None;
    for f in files.iter().step_by(stride) {
        let path = tree.path(f);
        match fs::File::open(&path).and_then(|h| extent_count(&h)) {
            Ok(0) => {}
            Ok(n) => counts.push(n),
            Err(e) => {
                refused.get_or_insert_with(|| format!("FIEMAP on {}: {e}", path.display()));
            }
        }
    }
    if stride > 1 {
        r.facts.push((
            "ondisk_extents_sampled".into(),
            format!(
                "{} of {} files (one in {stride})",
                files.len().div_ceil(stride),
                files.len()
            ),
        ));
    }
    if counts.is_empty() {
        let why = refused.unwrap_or_else(|| "the workload left no file with data".into());
        r.absent.push(("extents_per_file".into(), why));
    } else {
        r.metrics.extend(fragmentation_metrics(&counts));
    }
}

/// struct btrfs_ioctl_space_args' head; the kernel fills `total_spaces` when `space_slots` is
/// 0, else up to `space_slots` [`SpaceInfo`] after the head.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct SpaceArgs {
    space_slots: u64,
    total_spaces: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct SpaceInfo {
    flags: u64,
    total_bytes: u64,
    used_bytes: u64,
}

/// BTRFS_IOC_SPACE_INFO = _IOWR(0x94, 20, struct btrfs_ioctl_space_args).
const BTRFS_IOC_SPACE_INFO: libc::c_ulong = 0xC010_9414;
const BTRFS_BLOCK_GROUP_DATA: u64 = 1;
const BTRFS_BLOCK_GROUP_SYSTEM: u64 = 2;
const BTRFS_BLOCK_GROUP_METADATA: u64 = 4;
const BTRFS_SPACE_INFO_GLOBAL_RSV: u64 = 1 << 49;

/// Room for this many space infos (a filesystem has a handful: data, metadata, system, the
/// global reserve, mixed groups).
const SPACE_SLOTS: usize = 16;

#[repr(C)]
struct SpaceBuf {
    head: SpaceArgs,
    infos: [SpaceInfo; SPACE_SLOTS],
}

/// Bytes used by data, metadata and system block groups, as `btrfs filesystem df` shows them.
fn btrfs_space_used(dir: &Path) -> Result<[u64; 3], String> {
    let f = fs::File::open(dir).map_err(|e| format!("open {}: {e}", dir.display()))?;
    let mut b = SpaceBuf {
        head: SpaceArgs {
            space_slots: SPACE_SLOTS as u64,
            total_spaces: 0,
        },
        infos: [SpaceInfo::default(); SPACE_SLOTS],
    };
    // SAFETY: BTRFS_IOC_SPACE_INFO writes at most `space_slots` infos after the 16-byte head;
    // `b` has exactly that room and lives across the call.
    let rc = unsafe {
        libc::ioctl(
            f.as_raw_fd(),
            BTRFS_IOC_SPACE_INFO as _,
            &mut b as *mut SpaceBuf,
        )
    };
    if rc < 0 {
        return Err(format!(
            "BTRFS_IOC_SPACE_INFO: {}",
            std::io::Error::last_os_error()
        ));
    }
    let n = (b.head.total_spaces as usize).min(SPACE_SLOTS);
    let mut used = [0u64; 3];
    for i in &b.infos[..n] {
        if i.flags & BTRFS_SPACE_INFO_GLOBAL_RSV != 0 {
            continue;
        }
        for (slot, bit) in [
            BTRFS_BLOCK_GROUP_DATA,
            BTRFS_BLOCK_GROUP_METADATA,
            BTRFS_BLOCK_GROUP_SYSTEM,
        ]
        .into_iter()
        .enumerate()
        {
            if i.flags & bit != 0 {
                used[slot] += i.used_bytes;
            }
        }
    }
    Ok(used)
}

fn btrfs_space(dir: &Path, r: &mut Report) {
    match btrfs_space_used(dir) {
        Ok([data, meta, system]) => {
            for (n, v) in [
                ("space_data_bytes", data),
                ("space_metadata_bytes", meta),
                ("space_system_bytes", system),
            ] {
                r.metrics
                    .push(Metric::new(n, v as f64, Unit::Bytes, Direction::Neutral));
            }
        }
        Err(e) => r.absent.push(("space_data_bytes".into(), e)),
    }
}

/// struct btrfs_ioctl_search_key (104 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct SearchKey {
    tree_id: u64,
    min_objectid: u64,
    max_objectid: u64,
    min_offset: u64,
    max_offset: u64,
    min_transid: u64,
    max_transid: u64,
    min_type: u32,
    max_type: u32,
    nr_items: u32,
    unused: u32,
    unused1: u64,
    unused2: u64,
    unused3: u64,
    unused4: u64,
}

const SEARCH_BUF: usize = 4096 - std::mem::size_of::<SearchKey>();

/// struct btrfs_ioctl_search_args (4096 bytes).
#[repr(C)]
struct SearchArgs {
    key: SearchKey,
    buf: [u8; SEARCH_BUF],
}

/// BTRFS_IOC_TREE_SEARCH = _IOWR(0x94, 17, struct btrfs_ioctl_search_args).
const BTRFS_IOC_TREE_SEARCH: libc::c_ulong = 0xD000_9411;
const BTRFS_EXTENT_DATA_KEY: u32 = 108;
/// struct btrfs_ioctl_search_header: transid, objectid, offset (u64), type, len (u32).
const SEARCH_HEADER: usize = 32;
/// The fixed part of struct btrfs_file_extent_item before an inline extent's data.
const INLINE_HEAD: usize = 21;
/// A regular or preallocated extent item's size.
const EXTENT_ITEM: usize = 53;

/// One file extent as btrfs stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileExtent {
    /// Where the extent is on disk (0 for inline data; shared extents share it).
    pub disk_bytenr: u64,
    /// Bytes on disk (compressed size for a compressed extent).
    pub disk_bytes: u64,
    /// Bytes once decompressed.
    pub logical_bytes: u64,
}

/// Read one EXTENT_DATA item: inline data, a regular extent, or nothing (a hole or a
/// preallocated extent, which hold no data the workload wrote).
pub fn parse_file_extent(item: &[u8]) -> Option<FileExtent> {
    let u64_at = |o: usize| Some(u64::from_le_bytes(item.get(o..o + 8)?.try_into().ok()?));
    let ram_bytes = u64_at(8)?;
    match *item.get(20)? {
        0 => Some(FileExtent {
            disk_bytenr: 0,
            disk_bytes: (item.len() - INLINE_HEAD) as u64,
            logical_bytes: ram_bytes,
        }),
        1 if item.len() >= EXTENT_ITEM => {
            let disk_bytenr = u64_at(21)?;
            (disk_bytenr != 0).then_some(FileExtent {
                disk_bytenr,
                disk_bytes: u64_at(29)?,
                logical_bytes: ram_bytes,
            })
        }
        _ => None,
    }
}

/// The key after `(objectid, type, offset)` in btrfs's key order, `None` after the last.
fn next_key(objectid: u64, kind: u32, offset: u64) -> Option<(u64, u32, u64)> {
    if offset < u64::MAX {
        Some((objectid, kind, offset + 1))
    } else if kind < 255 {
        Some((objectid, kind + 1, 0))
    } else if objectid < u64::MAX {
        Some((objectid + 1, 0, 0))
    } else {
        None
    }
}

/// Every item of `key`'s range (BTRFS_IOC_TREE_SEARCH on `dir`, a buffer of items per call),
/// given to `visit` with its objectid, type and offset; the range is one span of keys in btrfs's
/// order, walked on after the last key of each call. Needs CAP_SYS_ADMIN.
fn tree_search(
    dir: &fs::File,
    key: SearchKey,
    mut visit: impl FnMut((u64, u32, u64), &[u8]),
) -> std::io::Result<()> {
    let hi = key.max_objectid;
    let mut args = SearchArgs {
        key,
        buf: [0; SEARCH_BUF],
    };
    loop {
        args.key.nr_items = u32::MAX;
        // SAFETY: BTRFS_IOC_TREE_SEARCH reads and writes a 4096-byte btrfs_ioctl_search_args,
        // which `args` is (#[repr(C)], key then buffer), alive and writable for the call.
        let rc = unsafe {
            libc::ioctl(
                dir.as_raw_fd(),
                BTRFS_IOC_TREE_SEARCH as _,
                &mut args as *mut SearchArgs,
            )
        };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = args.key.nr_items;
        if n == 0 {
            return Ok(());
        }
        let mut at = 0usize;
        let mut last = (0u64, 0u32, 0u64);
        for _ in 0..n {
            let Some(h) = args.buf.get(at..at + SEARCH_HEADER) else {
                break;
            };
            let word = |o: usize| u64::from_le_bytes(h[o..o + 8].try_into().unwrap_or_default());
            let half = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().unwrap_or_default());
            let len = half(28) as usize;
            last = (word(8), half(24), word(16));
            at += SEARCH_HEADER;
            if let Some(item) = args.buf.get(at..at + len) {
                visit(last, item);
            }
            at += len;
        }
        match next_key(last.0, last.1, last.2) {
            Some((o, t, f)) if o <= hi => {
                args.key.min_objectid = o;
                args.key.min_type = t;
                args.key.min_offset = f;
            }
            _ => return Ok(()),
        }
    }
}

/// Every file extent of the inodes `inos` (BTRFS_IOC_TREE_SEARCH in the subvolume of `dir`,
/// over the keys from the smallest inode's extents to the largest's, as compsize walks a
/// subvolume; a few files' items per call, no file opened). Needs CAP_SYS_ADMIN.
fn btrfs_extents(dir: &fs::File, inos: &HashSet<u64>) -> std::io::Result<Vec<FileExtent>> {
    let mut out = Vec::new();
    let (Some(&lo), Some(&hi)) = (inos.iter().min(), inos.iter().max()) else {
        return Ok(out);
    };
    let key = SearchKey {
        tree_id: 0,
        min_objectid: lo,
        max_objectid: hi,
        min_type: BTRFS_EXTENT_DATA_KEY,
        max_type: BTRFS_EXTENT_DATA_KEY,
        max_offset: u64::MAX,
        max_transid: u64::MAX,
        ..Default::default()
    };
    tree_search(dir, key, |(objectid, kind, _), item| {
        if kind == BTRFS_EXTENT_DATA_KEY
            && inos.contains(&objectid)
            && let Some(e) = parse_file_extent(item)
        {
            out.push(e);
        }
    })?;
    Ok(out)
}

/// The free space tree's id (BTRFS_FREE_SPACE_TREE_OBJECTID).
const BTRFS_FREE_SPACE_TREE: u64 = 10;
/// BTRFS_FREE_SPACE_INFO_KEY: one item per block group, keyed (start, 198, length).
const BTRFS_FREE_SPACE_INFO_KEY: u32 = 198;

/// The free space extents of a btrfs filesystem and its block groups: the `extent_count` of
/// every block group's FREE_SPACE_INFO item (struct btrfs_free_space_info: le32 extent_count,
/// le32 flags) in the free space tree, one tree search of one item per block group. An error
/// (ENOENT) when the filesystem has no free space tree (mkfs.btrfs before 5.15, `space_cache=v1`).
fn btrfs_free_space(dir: &fs::File) -> std::io::Result<(u64, u64)> {
    let key = SearchKey {
        tree_id: BTRFS_FREE_SPACE_TREE,
        min_objectid: 0,
        max_objectid: u64::MAX,
        min_type: BTRFS_FREE_SPACE_INFO_KEY,
        max_type: BTRFS_FREE_SPACE_INFO_KEY,
        max_offset: u64::MAX,
        max_transid: u64::MAX,
        ..Default::default()
    };
    let (mut extents, mut groups) = (0u64, 0u64);
    tree_search(dir, key, |(_, kind, _), item| {
        if kind == BTRFS_FREE_SPACE_INFO_KEY
            && let Some(c) = item.get(0..4)
        {
            extents += u64::from(u32::from_le_bytes(c.try_into().unwrap_or_default()));
            groups += 1;
        }
    })?;
    Ok((extents, groups))
}

/// `btrfs_free_space_extents` and `btrfs_block_groups` after the sample.
fn free_space(dir: &Path, r: &mut Report) {
    match fs::File::open(dir).and_then(|d| btrfs_free_space(&d)) {
        Ok((_, 0)) => r.absent.push((
            "btrfs_free_space_extents".into(),
            "the filesystem has no free space tree (space_cache=v1)".into(),
        )),
        Ok((extents, groups)) => {
            let count = |n: &str, v: u64| Metric::new(n, v as f64, Unit::Count, Direction::Neutral);
            r.metrics.push(count("btrfs_free_space_extents", extents));
            r.metrics.push(count("btrfs_block_groups", groups));
        }
        Err(e) => r.absent.push((
            "btrfs_free_space_extents".into(),
            format!(
                "BTRFS_IOC_TREE_SEARCH of the free space tree in {}: {e} (it needs root and a \
                 free space tree, space_cache=v2)",
                dir.display()
            ),
        )),
    }
}

/// FS_IOC_GETFSMAP: `_IOWR('X', 59, struct fsmap_head)`, the head being 192 bytes.
const FS_IOC_GETFSMAP: u64 = 0xC0C0_583B;
/// Records asked for per call.
const FSMAP_RECS: usize = 128;
/// `fmr_flags`: the owner is a special one (free space, metadata), not an inode.
const FMR_OF_SPECIAL_OWNER: u32 = 0x10;
/// `fmr_flags`: the last record of the filesystem.
const FMR_OF_LAST: u32 = 0x20;
/// `fmr_owner` of free space (`FMR_OWNER(0, 1)`).
const FMR_OWN_FREE: u64 = 1;

/// struct fsmap (include/uapi/linux/fsmap.h): one mapping of physical space, 64 bytes.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FsmapRec {
    device: u32,
    flags: u32,
    physical: u64,
    owner: u64,
    offset: u64,
    length: u64,
    reserved: [u64; 3],
}

/// struct fsmap_head with room for [`FSMAP_RECS`] records after it.
#[repr(C)]
struct FsmapHead {
    iflags: u32,
    oflags: u32,
    count: u32,
    entries: u32,
    reserved: [u64; 6],
    keys: [FsmapRec; 2],
    recs: [FsmapRec; FSMAP_RECS],
}

/// The free extents of the filesystem of `dir` and their total bytes, from FS_IOC_GETFSMAP
/// (ext4 and xfs: what `xfs_spaceman -c 'freesp -s'` counts as "total free extents"): every
/// record owned by free space, walked from the first key to the last record. Needs
/// CAP_SYS_ADMIN. ext4 answers from its block bitmaps, xfs from its free-space btrees: after the
/// workload those are in memory (the allocator used them), so the walk costs a few calls.
pub fn fsmap_free(dir: &fs::File) -> std::io::Result<(u64, u64)> {
    let mut head = Box::new(FsmapHead {
        iflags: 0,
        oflags: 0,
        count: FSMAP_RECS as u32,
        entries: 0,
        reserved: [0; 6],
        keys: [FsmapRec::default(); 2],
        recs: [FsmapRec::default(); FSMAP_RECS],
    });
    head.keys[1] = FsmapRec {
        device: u32::MAX,
        flags: u32::MAX,
        physical: u64::MAX,
        owner: u64::MAX,
        offset: u64::MAX,
        length: 0,
        reserved: [0; 3],
    };
    let (mut extents, mut bytes) = (0u64, 0u64);
    // Records come in (device, physical) order; one at or before the furthest seen is a repeat
    // (a walk the kernel began again), never counted twice, and a call with nothing new ends it.
    let mut furthest: Option<(u32, u64)> = None;
    loop {
        head.count = FSMAP_RECS as u32;
        // SAFETY: FS_IOC_GETFSMAP reads the head and its two keys and writes at most `count`
        // records after them; `head` is #[repr(C)] with room for FSMAP_RECS records, alive and
        // writable for the call.
        let rc = unsafe {
            libc::ioctl(
                dir.as_raw_fd(),
                FS_IOC_GETFSMAP as _,
                &mut *head as *mut FsmapHead,
            )
        };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let n = (head.entries as usize).min(FSMAP_RECS);
        if n == 0 {
            return Ok((extents, bytes));
        }
        let mut new = false;
        for rec in &head.recs[..n] {
            let at = (rec.device, rec.physical);
            if furthest.is_some_and(|f| at <= f) {
                continue;
            }
            furthest = Some(at);
            new = true;
            if rec.flags & FMR_OF_SPECIAL_OWNER != 0 && rec.owner == FMR_OWN_FREE {
                extents += 1;
                bytes += rec.length;
            }
        }
        let last = head.recs[n - 1];
        if last.flags & FMR_OF_LAST != 0 || !new {
            return Ok((extents, bytes));
        }
        // The next call starts after the last record (fsmap_advance).
        head.keys[0] = last;
    }
}

/// `free_space_extents` and `free_space_extent_avg_kib` of ext4 and xfs after the sample.
fn fsmap_free_space(dir: &Path, r: &mut Report) {
    match fs::File::open(dir).and_then(|d| fsmap_free(&d)) {
        Ok((0, _)) => r.absent.push((
            "free_space_extents".into(),
            "FS_IOC_GETFSMAP reported no free space".into(),
        )),
        Ok((extents, bytes)) => {
            r.metrics.push(Metric::new(
                "free_space_extents",
                extents as f64,
                Unit::Count,
                Direction::Neutral,
            ));
            r.metrics.push(Metric::new(
                "free_space_extent_avg_kib",
                bytes as f64 / extents as f64 / 1024.0,
                Unit::KiB,
                Direction::Neutral,
            ));
        }
        Err(e) => r.absent.push((
            "free_space_extents".into(),
            format!(
                "FS_IOC_GETFSMAP on {}: {e} (it needs root and a kernel with GETFSMAP for the \
                 filesystem)",
                dir.display()
            ),
        )),
    }
}

/// On-disk and logical bytes of a set of extents, each shared extent counted once (compsize's
/// "Disk Usage" and "Uncompressed").
pub fn compression_totals(extents: &[FileExtent]) -> (u64, u64) {
    let mut seen = HashSet::new();
    let (mut disk, mut logical) = (0u64, 0u64);
    for e in extents {
        if e.disk_bytenr != 0 && !seen.insert(e.disk_bytenr) {
            continue;
        }
        disk += e.disk_bytes;
        logical += e.logical_bytes;
    }
    (disk, logical)
}

fn compression(dir: &Path, tree: &Tree, r: &mut Report) {
    let inos: HashSet<u64> = tree.files.iter().map(|f| f.ino).collect();
    let extents = match fs::File::open(dir).and_then(|d| btrfs_extents(&d, &inos)) {
        Ok(e) => e,
        Err(e) => {
            r.absent.push((
                "compress_ratio".into(),
                format!(
                    "BTRFS_IOC_TREE_SEARCH in {}: {e} (it needs root)",
                    dir.display()
                ),
            ));
            return;
        }
    };
    let (disk, logical) = compression_totals(&extents);
    push_compression(disk, logical, r);
}

/// `compress_ratio` and its two sums, or why it is absent (no data on disk).
fn push_compression(disk: u64, logical: u64, r: &mut Report) {
    if disk == 0 {
        r.absent.push((
            "compress_ratio".into(),
            "the workload left no file data on disk".into(),
        ));
        return;
    }
    let bytes = |n: &str, v: u64| Metric::new(n, v as f64, Unit::Bytes, Direction::Neutral);
    r.metrics.push(bytes("compress_disk_bytes", disk));
    r.metrics.push(bytes("compress_logical_bytes", logical));
    r.metrics.push(
        Metric::new(
            "compress_ratio",
            logical as f64 / disk as f64,
            Unit::Ratio,
            Direction::HigherIsBetter,
        )
        .kind(MetricKind::Mean),
    );
}

/// `size` rounded up to whole blocks of `block` bytes.
fn in_blocks(size: u64, block: u64) -> u64 {
    size.div_ceil(block.max(1)) * block.max(1)
}

/// On-disk and logical bytes of an erofs file from its `stat`: erofs reports a compressed
/// file's `st_blocks` from the inode's count of compressed blocks (what mkfs.erofs wrote), an
/// uncompressed file's as its size in whole blocks. Its FIEMAP does not help: a compressed
/// extent comes with its logical length only, without FIEMAP_EXTENT_ENCODED nor a physical
/// length (kernel 6.18).
pub fn erofs_file_bytes(size: u64, st_blocks: u64, block: u64) -> (u64, u64) {
    (st_blocks * 512, in_blocks(size, block))
}

/// `compress_ratio` of an erofs image: the files under the sample's directory (every one; a
/// stat each), as [`erofs_file_bytes`] counts them.
fn erofs_compression(tree: &Tree, r: &mut Report) {
    let (mut disk, mut logical) = (0u64, 0u64);
    for f in &tree.files {
        let path = tree.path(f);
        match fs::symlink_metadata(&path) {
            Ok(m) => {
                let (d, l) = erofs_file_bytes(m.size(), m.blocks(), m.blksize());
                disk += d;
                logical += l;
            }
            Err(e) => {
                r.absent.push((
                    "compress_ratio".into(),
                    format!("stat {}: {e}", path.display()),
                ));
                return;
            }
        }
    }
    push_compression(disk, logical, r);
}

/// F2FS_IOC_GET_COMPRESS_BLOCKS = _IOR(0xf5, 17, __u64): the blocks compression saved in a
/// file (its `i_compr_blocks`; kernel 5.8 and later).
const F2FS_IOC_GET_COMPRESS_BLOCKS: libc::c_ulong = 0x8008_F511;

/// The blocks compression saved in the f2fs file `f`: 0 for a file f2fs does not compress
/// (EINVAL), an error when the filesystem has no compression (EOPNOTSUPP).
fn f2fs_saved_blocks(f: &fs::File) -> std::io::Result<u64> {
    let mut blocks = 0u64;
    // SAFETY: F2FS_IOC_GET_COMPRESS_BLOCKS writes one u64 to the pointer; `blocks` is one,
    // alive and writable for the call.
    let rc = unsafe {
        libc::ioctl(
            f.as_raw_fd(),
            F2FS_IOC_GET_COMPRESS_BLOCKS as _,
            &mut blocks as *mut u64,
        )
    };
    if rc < 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EINVAL) => Ok(0),
            _ => Err(e),
        };
    }
    Ok(blocks)
}

/// On-disk and logical bytes of an f2fs file: its size in whole blocks, less the blocks
/// compression saved. f2fs keeps a compressed cluster's saved blocks reserved (counted in
/// `st_blocks` and statfs until F2FS_IOC_RELEASE_COMPRESS_BLOCKS), so `st_blocks` does not show
/// the compression; the inode's own count of saved blocks does.
pub fn f2fs_file_bytes(size: u64, saved_blocks: u64, block: u64) -> (u64, u64) {
    let logical = in_blocks(size, block);
    (logical.saturating_sub(saved_blocks * block), logical)
}

/// `compress_ratio` of f2fs: every file under the sample's directory (an open and an ioctl
/// each), as [`f2fs_file_bytes`] counts it. Absent on an f2fs formatted without compression.
fn f2fs_compression(tree: &Tree, r: &mut Report) {
    let (mut disk, mut logical) = (0u64, 0u64);
    for f in &tree.files {
        let path = tree.path(f);
        let got = fs::File::open(&path).and_then(|h| {
            let m = h.metadata()?;
            Ok((m.size(), f2fs_saved_blocks(&h)?, m.blksize()))
        });
        match got {
            Ok((size, saved, block)) => {
                let (d, l) = f2fs_file_bytes(size, saved, block);
                disk += d;
                logical += l;
            }
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                r.absent.push((
                    "compress_ratio".into(),
                    "this f2fs has no compression (mkfs.f2fs -O extra_attr,compression, and \
                     a kernel with CONFIG_F2FS_FS_COMPRESSION)"
                        .into(),
                ));
                return;
            }
            Err(e) => {
                r.absent.push((
                    "compress_ratio".into(),
                    format!("F2FS_IOC_GET_COMPRESS_BLOCKS on {}: {e}", path.display()),
                ));
                return;
            }
        }
    }
    push_compression(disk, logical, r);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured from /sys/fs/btrfs/FSID/commit_stats (kernel 6.18) after one `sync`.
    const COMMIT_STATS: &str =
        "commits 1\ncur_commit_ms 0\nlast_commit_ms 3\nmax_commit_ms 3\ntotal_commit_ms 3\n";

    /// Captured from /sys/fs/xfs/loop1/stats/stats (kernel 6.18) after an 8 MiB write.
    const XFS_STATS: &str = "extent_alloc 1 4080 1 2032\nabt 0 0 0 0\nblk_map 0 11 1 2 1 15 0\nbmbt 0 0 0 0\ndir 1 1 0 0\ntrans 0 6 0\nig 2 0 0 2 0 0 0\nlog 2 9 0 2 2\npush_ail 6 0 3 0 0 0 0 0 0 0\nxstrat 1 0\nrw 8 0\nattr 1 0 0 0\nicluster 0 0 0\nvnodes 2 0 0 0 0 0 0 0\nbuf 40 27 16 15 0 24 0 0 24\nxpc 16711680 8388608 0\ndefer_relog 0\ndebug 0\n";

    #[test]
    fn commit_stats_parse_from_the_kernels_text() {
        let s = CommitStats::parse(COMMIT_STATS).unwrap();
        assert_eq!(
            s,
            CommitStats {
                commits: 1,
                max_commit_ms: 3,
                total_commit_ms: 3
            }
        );
        assert!(CommitStats::parse("commits x\n").is_none());
        assert!(CommitStats::parse("").is_none());
    }

    #[test]
    fn xfs_stats_parse_from_the_kernels_text() {
        let s = XfsStats::parse(XFS_STATS).unwrap();
        assert_eq!(s.log_writes, 2);
        assert_eq!(s.log_blocks, 9);
        assert_eq!(s.log_forces, 2);
        assert_eq!(s.trans_sync, 0);
        assert_eq!(s.trans_async, 6);
        assert_eq!(s.extent_allocs, 1);
        assert_eq!(s.extent_frees, 1);
        assert!(XfsStats::parse("log 1 2\n").is_none());
    }

    #[test]
    fn fragmentation_uses_nearest_rank_and_counts_split_files() {
        let m =
            fragmentation_metrics(&[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 9, 40]);
        let v = |n: &str| m.iter().find(|m| m.name == n).unwrap().value;
        assert_eq!(v("mapped_files"), 20.0);
        assert_eq!(v("extents_per_file_p50"), 1.0);
        assert_eq!(v("extents_per_file_p95"), 9.0);
        assert_eq!(v("extents_per_file_max"), 40.0);
        assert_eq!(v("fragmented_files_pct"), 10.0);
        assert!(fragmentation_metrics(&[]).is_empty());
    }

    fn item(kind: u8, ram: u64, bytenr: u64, disk: u64) -> Vec<u8> {
        let mut b = vec![0u8; EXTENT_ITEM];
        b[8..16].copy_from_slice(&ram.to_le_bytes());
        b[16] = 3; // zstd
        b[20] = kind;
        b[21..29].copy_from_slice(&bytenr.to_le_bytes());
        b[29..37].copy_from_slice(&disk.to_le_bytes());
        b
    }

    #[test]
    fn file_extents_are_read_as_btrfs_lays_them_out_and_shared_ones_count_once() {
        let e = parse_file_extent(&item(1, 131072, 4096 * 100, 8192)).unwrap();
        assert_eq!(e.disk_bytes, 8192);
        assert_eq!(e.logical_bytes, 131072);
        assert!(parse_file_extent(&item(1, 4096, 0, 0)).is_none(), "a hole");
        assert!(
            parse_file_extent(&item(2, 4096, 8192, 4096)).is_none(),
            "prealloc"
        );
        let mut inline = vec![0u8; INLINE_HEAD + 100];
        inline[8..16].copy_from_slice(&300u64.to_le_bytes());
        let i = parse_file_extent(&inline).unwrap();
        assert_eq!((i.disk_bytes, i.logical_bytes), (100, 300));
        let (disk, logical) = compression_totals(&[e, e, i]);
        assert_eq!((disk, logical), (8292, 131372));
    }

    #[test]
    fn erofs_counts_a_compressed_file_by_its_blocks_on_disk() {
        // Captured on kernel 6.18 (mkfs.erofs 1.5): a 248894-byte text file, `stat -c %b` 160
        // in an image built with -zlz4hc (20 physical clusters of 4 KiB, as its FIEMAP shows)
        // and 488 in one built without.
        assert_eq!(erofs_file_bytes(248894, 160, 4096), (81920, 249856));
        assert_eq!(erofs_file_bytes(248894, 488, 4096), (249856, 249856));
        assert_eq!(erofs_file_bytes(0, 0, 4096), (0, 0));
    }

    #[test]
    fn f2fs_counts_a_file_by_its_blocks_less_those_compression_saved() {
        assert_eq!(f2fs_file_bytes(65536, 12, 4096), (16384, 65536));
        assert_eq!(f2fs_file_bytes(5000, 0, 4096), (8192, 8192));
        assert_eq!(
            f2fs_file_bytes(4096, 9, 4096),
            (0, 4096),
            "never below zero"
        );
    }

    #[test]
    fn f2fs_counters_are_deltas_and_levels_with_the_missing_ones_named() {
        let before = [("lifetime_write_kbytes", 100), ("compr_saved_block", 4)];
        let after = [
            ("lifetime_write_kbytes", 612),
            ("compr_saved_block", 40),
            ("dirty_segments", 7),
        ];
        let mut r = Report::default();
        f2fs_deltas("vda", Some(&before), Some(&after), &mut r);
        let v = |n: &str| r.metrics.iter().find(|m| m.name == n).map(|m| m.value);
        assert_eq!(v("f2fs_lifetime_write_kbytes"), Some(512.0));
        assert_eq!(v("f2fs_compr_saved_blocks"), Some(36.0));
        assert_eq!(v("f2fs_dirty_segments"), Some(7.0));
        assert_eq!(v("f2fs_free_segments"), None);
        assert_eq!(v("f2fs_cp_foreground_calls"), None);
        let (_, why) = &r.absent[0];
        assert!(
            why.contains("/sys/fs/f2fs/vda/{cp_foreground_calls,")
                && why.contains("free_segments}"),
            "{why}"
        );
        let mut r = Report::default();
        f2fs_deltas("vda", None, Some(&after), &mut r);
        assert!(r.metrics.is_empty());
        assert_eq!(r.absent[0].1, "no readable /sys/fs/f2fs/vda");
    }

    #[test]
    fn the_metrics_after_a_remount_carry_the_suffix() {
        let t = tempfile::tempdir().unwrap();
        fs::write(t.path().join("a"), b"1").unwrap();
        let r = remounted(t.path(), "tmpfs");
        let names: Vec<&str> = r.metrics.iter().map(|m| m.name.as_str()).collect();
        assert!(names.contains(&"ondisk_remounted_s"), "{names:?}");
        assert!(
            names
                .iter()
                .all(|n| n.ends_with(REMOUNTED) || *n == "ondisk_remounted_s"),
            "{names:?}"
        );
        for n in &names {
            assert!(crate::model::ONDISK_METRICS.contains(n), "{n} not reserved");
        }
    }

    #[test]
    fn the_search_goes_on_after_the_last_key_in_btrfs_key_order() {
        assert_eq!(next_key(257, 108, 4096), Some((257, 108, 4097)));
        assert_eq!(next_key(257, 108, u64::MAX), Some((257, 109, 0)));
        assert_eq!(next_key(257, 255, u64::MAX), Some((258, 0, 0)));
        assert_eq!(next_key(u64::MAX, 255, u64::MAX), None);
    }

    #[test]
    fn the_walk_finds_regular_files_in_every_directory_in_name_order() {
        let t = tempfile::tempdir().unwrap();
        fs::create_dir_all(t.path().join("b/c")).unwrap();
        fs::write(t.path().join("b/c/z"), b"1").unwrap();
        fs::write(t.path().join("b/y"), b"1").unwrap();
        fs::write(t.path().join("a"), b"").unwrap();
        std::os::unix::fs::symlink("a", t.path().join("l")).unwrap();
        let tree = walk(t.path());
        let names: Vec<PathBuf> = tree
            .files
            .iter()
            .map(|f| tree.path(f).strip_prefix(t.path()).unwrap().to_path_buf())
            .collect();
        assert_eq!(names, ["a", "b/y", "b/c/z"].map(PathBuf::from));
        assert!(walk(&t.path().join("none")).files.is_empty());
    }
}
