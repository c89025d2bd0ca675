//! The records that cross room boundaries: a metric with its unit and direction, a stored
//! histogram, the facts of a target, the environment of a run, and the statuses of runs and
//! samples.
//!
//! Why a module of its own: workloads produce these, the store keeps them, compare and report read
//! them. None of those rooms may depend on another's internals, so the hand-off types live here.
//! This module must never do I/O or hold behaviour beyond conversions and validation.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// Which way is better for a metric. Declared by the workload that produces the metric; never
/// guessed from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// More is better (throughput, IOPS, files per second).
    HigherIsBetter,
    /// Less is better (latency, elapsed time, write amplification).
    LowerIsBetter,
    /// Shown, never judged (counts, file-system use).
    Neutral,
}

impl Direction {
    /// The stable name used at rest (store, JSON, CSV).
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::HigherIsBetter => "higher_is_better",
            Direction::LowerIsBetter => "lower_is_better",
            Direction::Neutral => "neutral",
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Direction {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "higher_is_better" => Ok(Direction::HigherIsBetter),
            "lower_is_better" => Ok(Direction::LowerIsBetter),
            "neutral" => Ok(Direction::Neutral),
            other => Err(ModelError::UnknownDirection(other.to_string())),
        }
    }
}

/// The unit of a metric's value, explicit at rest. Conversions between units are not done
/// implicitly anywhere: a metric keeps the unit its workload measured in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Unit {
    /// A plain count (files, operations, context switches).
    #[serde(rename = "count")]
    Count,
    /// Files per second.
    #[serde(rename = "files/s")]
    FilesPerSec,
    /// Operations (I/Os) per second.
    #[serde(rename = "ops/s")]
    OpsPerSec,
    /// Nanoseconds.
    #[serde(rename = "ns")]
    Nanoseconds,
    /// Microseconds.
    #[serde(rename = "us")]
    Microseconds,
    /// Milliseconds.
    #[serde(rename = "ms")]
    Milliseconds,
    /// Seconds.
    #[serde(rename = "s")]
    Seconds,
    /// Bytes.
    #[serde(rename = "B")]
    Bytes,
    /// Kibibytes (1024 bytes), as fio's `io_kbytes`.
    #[serde(rename = "KiB")]
    KiB,
    /// Bytes per second.
    #[serde(rename = "B/s")]
    BytesPerSec,
    /// Kibibytes per second, as fio's `bw`.
    #[serde(rename = "KiB/s")]
    KiBPerSec,
    /// Decimal megabytes (10^6 bytes) per second, as dbench and dd print.
    #[serde(rename = "MB/s")]
    MBPerSec,
    /// Percent.
    #[serde(rename = "%")]
    Percent,
    /// A dimensionless ratio (write amplification).
    #[serde(rename = "ratio")]
    Ratio,
}

impl Unit {
    /// Every unit, for parsing and documentation.
    pub const ALL: [Unit; 14] = [
        Unit::Count,
        Unit::FilesPerSec,
        Unit::OpsPerSec,
        Unit::Nanoseconds,
        Unit::Microseconds,
        Unit::Milliseconds,
        Unit::Seconds,
        Unit::Bytes,
        Unit::KiB,
        Unit::BytesPerSec,
        Unit::KiBPerSec,
        Unit::MBPerSec,
        Unit::Percent,
        Unit::Ratio,
    ];

    /// The stable symbol used at rest and in tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "count",
            Unit::FilesPerSec => "files/s",
            Unit::OpsPerSec => "ops/s",
            Unit::Nanoseconds => "ns",
            Unit::Microseconds => "us",
            Unit::Milliseconds => "ms",
            Unit::Seconds => "s",
            Unit::Bytes => "B",
            Unit::KiB => "KiB",
            Unit::BytesPerSec => "B/s",
            Unit::KiBPerSec => "KiB/s",
            Unit::MBPerSec => "MB/s",
            Unit::Percent => "%",
            Unit::Ratio => "ratio",
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Unit {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Unit::ALL
            .iter()
            .copied()
            .find(|u| u.as_str() == s)
            .ok_or_else(|| ModelError::UnknownUnit(s.to_string()))
    }
}

/// What kind of number a metric is, declared by the workload that produces it (never guessed
/// from its name): it picks the verdict's "unchanged" band, whether the rank method is
/// preferred, and how history looks for change points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricKind {
    /// A rate: throughput, IOPS, files per second.
    Throughput,
    /// A mean or a whole time: mean latency, elapsed seconds, per-operation averages.
    Mean,
    /// A tail percentile (p90 and up).
    Tail,
    /// A maximum.
    Max,
    /// A count of things (files, operations, events).
    Count,
    /// A share of a resource (CPU share, percent used).
    Share,
}

impl MetricKind {
    /// Every kind, in a stable order.
    pub const ALL: [MetricKind; 6] = [
        MetricKind::Throughput,
        MetricKind::Mean,
        MetricKind::Tail,
        MetricKind::Max,
        MetricKind::Count,
        MetricKind::Share,
    ];

    /// The stable name used at rest (store, JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Throughput => "throughput",
            MetricKind::Mean => "mean",
            MetricKind::Tail => "tail",
            MetricKind::Max => "max",
            MetricKind::Count => "count",
            MetricKind::Share => "share",
        }
    }

    /// The kind a metric has when its workload declares only its direction: a rate when higher
    /// is better, a mean when lower is better, a count when neutral. Tails, maxima and shares
    /// are declared with [`Metric::kind`].
    pub fn default_for(direction: Direction) -> MetricKind {
        match direction {
            Direction::HigherIsBetter => MetricKind::Throughput,
            Direction::LowerIsBetter => MetricKind::Mean,
            Direction::Neutral => MetricKind::Count,
        }
    }
}

impl fmt::Display for MetricKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for MetricKind {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        MetricKind::ALL
            .iter()
            .copied()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| ModelError::UnknownKind(s.to_string()))
    }
}

/// One measured number, with what it means.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// Name as the tools users know it (`files_per_sec`, `write_clat_ns_p99`).
    pub name: String,
    /// The measured value, in `unit`.
    pub value: f64,
    /// The unit of `value`.
    pub unit: Unit,
    /// Which way is better.
    pub direction: Direction,
    /// What kind of number it is, as its workload declared.
    #[serde(default = "MetricKind::unknown")]
    pub kind: MetricKind,
    /// One of the workload's headline metrics: the numbers a comparison gates on.
    #[serde(default)]
    pub headline: bool,
}

impl MetricKind {
    /// Placeholder for records written before kinds were declared; replaced on load by
    /// [`Metric::legacy_kind`].
    fn unknown() -> MetricKind {
        MetricKind::Throughput
    }
}

impl Metric {
    /// A metric; `name` is taken as given; its kind follows its direction
    /// ([`MetricKind::default_for`]) until declared otherwise with [`Metric::kind`].
    pub fn new(name: impl Into<String>, value: f64, unit: Unit, direction: Direction) -> Self {
        Metric {
            name: name.into(),
            value,
            unit,
            direction,
            kind: MetricKind::default_for(direction),
            headline: false,
        }
    }

    /// Declare the metric's kind.
    pub fn kind(mut self, kind: MetricKind) -> Self {
        self.kind = kind;
        self
    }

    /// Declare the metric a headline metric of its workload.
    pub fn headline(mut self) -> Self {
        self.headline = true;
        self
    }

    /// The kind of a metric stored before workloads declared kinds (schema version 2 and
    /// older): read from the name as fio, fs_mark and dbench spell them (a `max` word is a
    /// maximum, `p90`..`p99.99` a tail), else from the direction. Only the store's loading of
    /// old rows uses this.
    pub fn legacy_kind(name: &str, direction: Direction) -> MetricKind {
        let lower = name.to_ascii_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
            .collect();
        if words.contains(&"max") {
            return MetricKind::Max;
        }
        let is_tail = |w: &&str| {
            w.strip_prefix('p').is_some_and(|rest| {
                rest.starts_with('9')
                    && rest
                        .parse::<f64>()
                        .is_ok_and(|q| (90.0..100.0).contains(&q))
            })
        };
        if words.iter().any(is_tail) {
            MetricKind::Tail
        } else {
            MetricKind::default_for(direction)
        }
    }
}

/// The metrics fsdelta itself records for a sample, whatever its workload: the machine around
/// it (`crate::probe::system`), the device's counters (`crate::probe::blockstat`), the timed
/// unmount and mount, the step's overhead, a guest's boot, a command test's own `elapsed_s`.
/// A sample holds each name once, so a command test may not declare one of these
/// ([`reserved_metric`]).
pub const RESERVED_METRICS: &[&str] = &[
    "elapsed_s",
    "overhead_s",
    "mount_s",
    "umount_s",
    "vm_boot_s",
    "write_amplification",
    "dev_read_iops",
    "dev_write_iops",
    "dev_read_kbytes",
    "dev_write_kbytes",
    "sys_user_pct",
    "sys_system_pct",
    "sys_iowait_pct",
    "sys_irq_pct",
    "sys_softirq_pct",
    "sys_idle_pct",
    "bg_cpu_pct",
    "loadavg_1m_start",
    "proc_user_s",
    "proc_system_s",
    "proc_ctx_voluntary",
    "proc_ctx_involuntary",
    "proc_minor_faults",
    "proc_major_faults",
    "vm_pgpgin",
    "vm_pgpgout",
    "vm_pgfault",
    "vm_pgmajfault",
    "dirty_peak_kib",
    "writeback_peak_kib",
    "others_io_bytes",
    "kthread_cpu_s",
    "others_cache_drops",
    "psi_memory_some_ms",
    "others_device_read_bytes",
    "others_device_write_bytes",
    "disturbance_probe_ms",
];

/// The metrics of what a sample left on disk (`crate::probe::ondisk`): space, compression,
/// fragmentation and the filesystem's own counters, recorded on filesystems fsdelta formats
/// unless the suite turns them off. Reserved like [`RESERVED_METRICS`]; with the device
/// counters and `write_amplification` they are `compare`'s "on disk" group.
pub const ONDISK_METRICS: &[&str] = &[
    "fs_used_bytes_before",
    "fs_used_bytes_after",
    "workload_write_bytes",
    "space_amplification",
    "space_data_bytes",
    "space_metadata_bytes",
    "space_system_bytes",
    "compress_ratio",
    "compress_disk_bytes",
    "compress_logical_bytes",
    "mapped_files",
    "extents_per_file_p50",
    "extents_per_file_p95",
    "extents_per_file_max",
    "fragmented_files_pct",
    "btrfs_commits",
    "btrfs_commit_avg_ms",
    "btrfs_commit_max_ms",
    "btrfs_free_space_extents",
    "btrfs_block_groups",
    "free_space_extents",
    "free_space_extent_avg_kib",
    "ext4_lifetime_write_kbytes",
    "ext4_errors",
    "xfs_log_writes",
    "xfs_log_blocks",
    "xfs_log_forces",
    "xfs_trans_sync",
    "xfs_trans_async",
    "xfs_extent_allocs",
    "xfs_extent_frees",
    "f2fs_lifetime_write_kbytes",
    "f2fs_cp_foreground_calls",
    "f2fs_cp_background_calls",
    "f2fs_gc_foreground_calls",
    "f2fs_gc_background_calls",
    "f2fs_moved_blocks_foreground",
    "f2fs_moved_blocks_background",
    "f2fs_compr_written_blocks",
    "f2fs_compr_saved_blocks",
    "f2fs_compr_new_inodes",
    "f2fs_free_segments",
    "f2fs_dirty_segments",
    "ondisk_s",
    // Measured again after an unmount and a mount (a suite's `ondisk_remount = true`).
    "mapped_files_remounted",
    "extents_per_file_p50_remounted",
    "extents_per_file_p95_remounted",
    "extents_per_file_max_remounted",
    "fragmented_files_pct_remounted",
    "btrfs_free_space_extents_remounted",
    "btrfs_block_groups_remounted",
    "free_space_extents_remounted",
    "free_space_extent_avg_kib_remounted",
    "ondisk_remounted_s",
];

/// Why `name` cannot be a command test's metric, if it cannot: one fsdelta records for every
/// sample ([`RESERVED_METRICS`], [`ONDISK_METRICS`]), or an event count (`event:GROUP:NAME`).
/// Whether a test selector `name` (`--test NAME`) picks the test `test`: the same name, or a
/// point of the curve a suite's `sweep` made of it (`qd` picks `qd[iodepth=4]`).
pub fn test_selects(name: &str, test: &str) -> bool {
    test == name
        || test
            .strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('[') && rest.ends_with(']'))
}

pub fn reserved_metric(name: &str) -> Option<String> {
    if RESERVED_METRICS.contains(&name) || ONDISK_METRICS.contains(&name) {
        return Some(format!(
            "'{name}' is a metric fsdelta records for every sample itself; rename yours (for example 'cmd_{name}')"
        ));
    }
    if name.starts_with("event:") {
        return Some(format!(
            "'{name}' is the name of an event count (event:GROUP:NAME, from `events`); rename yours (for example '{}')",
            name.replace(':', "_")
        ));
    }
    None
}

/// A latency (or other) histogram kept beside the percentiles read from it, so that samples can be
/// merged and re-read later. Buckets are sparse `(index, count)` pairs in the named layout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HistogramRecord {
    /// What was recorded, e.g. `create_lat_ns`.
    pub name: String,
    /// Unit of the recorded values.
    pub unit: Unit,
    /// Bucket layout identifier, e.g. `fio-loglinear-6x29`.
    pub layout: String,
    /// Number of recorded values.
    pub count: u64,
    /// Smallest recorded value (exact).
    pub min: u64,
    /// Largest recorded value (exact).
    pub max: u64,
    /// Sum of recorded values (exact).
    pub sum: u128,
    /// Non-empty buckets as `(index, count)`.
    pub buckets: Vec<(u32, u64)>,
}

/// Facts about where a sample ran, recorded with the sample so a reader knows what was measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SiteFacts {
    /// Filesystem type as the kernel reports it (`ext4`, `tmpfs`, `btrfs`).
    pub fs_type: String,
    /// The directory the workload ran in.
    pub path: String,
    /// The mounted source (device) holding `path`.
    pub device: String,
    /// Mount options actually in force, from /proc/self/mounts.
    pub mount_options: String,
    /// mkfs options used, when fsdelta formatted the filesystem.
    pub mkfs_options: Option<String>,
    /// Anything else a reader needs (device model, scheduler, ...).
    #[serde(default)]
    pub extra: BTreeMap<String, String>,
}

/// The machine a run happened on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// Host name.
    pub host: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v`.
    pub kernel_version: String,
    /// /proc/cmdline.
    pub cmdline: String,
    /// CPU model name from /proc/cpuinfo.
    pub cpu_model: String,
    /// Online CPUs.
    pub cores: u32,
    /// MemTotal in bytes.
    pub memory_bytes: u64,
    /// /etc/machine-id: a stable id of this installation, unlike the host name (empty when
    /// unreadable, and in runs recorded before fsdelta kept it).
    #[serde(default)]
    pub machine_id: String,
    /// The machine's disks (whole block devices, not loop, RAM or device-mapper devices).
    #[serde(default)]
    pub disks: Vec<DiskInfo>,
}

/// One disk of the machine, from /sys/block.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskInfo {
    /// Kernel name (`nvme0n1`, `sda`, `vda`).
    pub name: String,
    /// Model as the device reports it (empty for virtual disks that say nothing).
    #[serde(default)]
    pub model: String,
    /// Capacity in bytes.
    pub size_bytes: u64,
    /// Whether the kernel sees a rotating disk (`queue/rotational`).
    pub rotational: bool,
}

/// Life cycle of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Still running (or killed without a chance to say otherwise).
    Running,
    /// Every sample ran and succeeded.
    Complete,
    /// Ran to the end but at least one sample failed.
    Failed,
    /// Interrupted (SIGINT, SIGTERM); finished samples are kept.
    Aborted,
}

impl RunStatus {
    /// Stable name at rest.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Failed => "failed",
            RunStatus::Aborted => "aborted",
        }
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RunStatus {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "running" => Ok(RunStatus::Running),
            "complete" => Ok(RunStatus::Complete),
            "failed" => Ok(RunStatus::Failed),
            "aborted" => Ok(RunStatus::Aborted),
            other => Err(ModelError::UnknownStatus(other.to_string())),
        }
    }
}

/// Outcome of one sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleStatus {
    /// Measured; its metrics are valid.
    Ok,
    /// The workload failed; `error` says why and no metric is trusted.
    Failed,
}

impl SampleStatus {
    /// Stable name at rest.
    pub fn as_str(self) -> &'static str {
        match self {
            SampleStatus::Ok => "ok",
            SampleStatus::Failed => "failed",
        }
    }
}

impl FromStr for SampleStatus {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ok" => Ok(SampleStatus::Ok),
            "failed" => Ok(SampleStatus::Failed),
            other => Err(ModelError::UnknownStatus(other.to_string())),
        }
    }
}

// ---- Run and sample records: written by the runner, kept by the store, read by compare and report.

/// Identifier of a run.
pub type RunId = i64;
/// Identifier of a sample.
pub type SampleId = i64;

/// A run about to start.
#[derive(Clone, Debug)]
pub struct NewRun {
    /// Free text (kernel version, patch name); defaults to the kernel release.
    pub label: String,
    /// Suite name (`quick`).
    pub suite: String,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// fsdelta version.
    pub fsdelta_version: String,
    /// Where it runs.
    pub environment: Environment,
}

/// A stored run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunInfo {
    /// Run id.
    pub id: RunId,
    /// Label.
    pub label: String,
    /// Suite name.
    pub suite: String,
    /// Start time.
    pub started_at: DateTime<Utc>,
    /// End time, once it ended.
    pub finished_at: Option<DateTime<Utc>>,
    /// Status.
    pub status: RunStatus,
    /// fsdelta version that made it.
    pub fsdelta_version: String,
    /// The machine.
    pub environment: Environment,
    /// Number of stored samples.
    pub sample_count: u64,
}

/// A sample to store: one execution of one test on one configuration.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NewSample {
    /// Configuration name (`scratch` for the default scratch directory).
    pub config: String,
    /// Test name.
    pub test: String,
    /// Repetition, from 1.
    pub repetition: u32,
    /// Position of the sample in its run (from 1, in the order samples started; 0 for samples
    /// stored before positions were recorded or imported from elsewhere).
    #[serde(default)]
    pub sequence: u32,
    /// Where it ran.
    pub facts: SiteFacts,
    /// Ok or failed.
    pub status: SampleStatus,
    /// Why it failed.
    pub error: Option<String>,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// Wall time of the sample, seconds.
    pub duration_s: f64,
    /// The workload's command line or options, so that every number is traceable.
    pub workload: String,
    /// Metrics.
    pub metrics: Vec<Metric>,
    /// Histograms.
    pub histograms: Vec<HistogramRecord>,
    /// Raw results kept beside the metrics (a command's stdout and stderr, fs_mark's
    /// per-iteration rows), stored with the sample in its transaction. Read back with
    /// `Store::attachments`, not with the sample (they can be large).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
}

/// A raw result kept with a sample, opaque to the store: a name (`stdout`, `stderr`,
/// `fsmark_iterations`), the format of its bytes (`text-gz`, `json`) and the bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// What it is; unique within a sample.
    pub name: String,
    /// How its bytes are encoded.
    pub format: String,
    /// The bytes.
    pub data: Vec<u8>,
}

/// The most of one text output an attachment keeps; the rest is dropped with a note saying how
/// much was dropped (a command that prints gigabytes must not fill the store).
pub const ATTACHMENT_TEXT_LIMIT: usize = 1 << 20;

impl Attachment {
    /// Text (a command's stdout) kept gzip-compressed as format `text-gz`, cut at
    /// [`ATTACHMENT_TEXT_LIMIT`] bytes with a last line that says how many bytes were not kept.
    pub fn text_gz(name: &str, text: &[u8]) -> Attachment {
        use std::io::Write as _;
        let (kept, dropped) = if text.len() > ATTACHMENT_TEXT_LIMIT {
            (
                &text[..ATTACHMENT_TEXT_LIMIT],
                text.len() - ATTACHMENT_TEXT_LIMIT,
            )
        } else {
            (text, 0)
        };
        let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
        // Writing into a Vec cannot fail.
        let _ = z.write_all(kept);
        if dropped > 0 {
            let _ = write!(
                z,
                "\n[fsdelta: {dropped} more bytes of {name} were not kept]\n"
            );
        }
        Attachment {
            name: name.to_string(),
            format: "text-gz".into(),
            data: z.finish().unwrap_or_default(),
        }
    }

    /// The attachment as text, decoding `text-gz`; `json` and `text` are returned as they are.
    /// An unknown format or corrupt data is an error naming the attachment.
    pub fn text(&self) -> Result<String, String> {
        use std::io::Read as _;
        match self.format.as_str() {
            "text-gz" => {
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(&self.data[..])
                    .read_to_end(&mut out)
                    .map_err(|e| format!("attachment {} is not valid gzip: {e}", self.name))?;
                Ok(String::from_utf8_lossy(&out).into_owned())
            }
            "json" | "text" => Ok(String::from_utf8_lossy(&self.data).into_owned()),
            other => Err(format!(
                "attachment {} has format {other}, which this fsdelta cannot read; use a newer fsdelta",
                self.name
            )),
        }
    }
}

/// A stored sample.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SampleRecord {
    /// Sample id.
    pub id: SampleId,
    /// Its run.
    pub run_id: RunId,
    /// Everything stored.
    #[serde(flatten)]
    pub sample: NewSample,
}

impl SampleRecord {
    /// A successful sample's record holding only its metrics (no facts, histograms, times):
    /// what [`crate::store::Store::sample_metrics`] returns.
    pub fn metrics_only(
        id: SampleId,
        run_id: RunId,
        config: String,
        test: String,
        repetition: u32,
        sequence: u32,
        metrics: Vec<Metric>,
    ) -> SampleRecord {
        SampleRecord {
            id,
            run_id,
            sample: NewSample {
                config,
                test,
                repetition,
                sequence,
                facts: SiteFacts::default(),
                status: SampleStatus::Ok,
                error: None,
                started_at: DateTime::<Utc>::MIN_UTC,
                duration_s: 0.0,
                workload: String::new(),
                metrics,
                histograms: Vec::new(),
                attachments: Vec::new(),
            },
        }
    }

    /// A record holding only the value of `p` (a successful sample of `test` with one metric):
    /// what a history needs of a sample.
    pub fn of_point(p: &MetricPoint, test: &str) -> SampleRecord {
        SampleRecord {
            id: 0,
            run_id: p.run_id,
            sample: NewSample {
                config: p.config.clone(),
                test: test.to_string(),
                repetition: 0,
                sequence: 0,
                facts: SiteFacts::default(),
                status: SampleStatus::Ok,
                error: None,
                started_at: DateTime::<Utc>::MIN_UTC,
                duration_s: 0.0,
                workload: String::new(),
                metrics: vec![p.metric.clone()],
                histograms: Vec::new(),
                attachments: Vec::new(),
            },
        }
    }
}

/// A CPU profile of a sample at rest: its format name and its bytes. The store keeps them
/// opaque; `probe::profile` writes and reads the format (compressed folded stacks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredProfile {
    /// Format name (`folded-gz-v1`).
    pub format: String,
    /// The encoded profile.
    pub data: Vec<u8>,
}

/// One stored value of one metric, with the run and configuration of its sample: what a
/// history reads, without loading whole samples.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricPoint {
    /// The run of the sample.
    pub run_id: RunId,
    /// The sample's configuration.
    pub config: String,
    /// The value with its unit, direction and kind.
    pub metric: Metric,
}

/// A value at rest that this version does not understand.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// Unknown unit symbol.
    #[error("unknown unit '{0}'")]
    UnknownUnit(String),
    /// Unknown metric kind name.
    #[error("unknown metric kind '{0}' (expected throughput, mean, tail, max, count or share)")]
    UnknownKind(String),
    /// Unknown direction name.
    #[error("unknown direction '{0}' (expected higher_is_better, lower_is_better or neutral)")]
    UnknownDirection(String),
    /// Unknown status name.
    #[error("unknown status '{0}'")]
    UnknownStatus(String),
}

/// Median (mean of the two middle values for an even count): the one definition, for the
/// store's run medians and every statistic of `crate::compare`. `None` for an empty slice.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    Some(median_of_sorted(&v))
}

/// Median of an already sorted, non-empty slice.
pub fn median_of_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn every_metric_fsdelta_records_itself_is_reserved() {
        let a = crate::probe::system::Snapshot::take();
        let b = crate::probe::system::Snapshot::take();
        let mut names: Vec<String> = a.delta(&b).into_iter().map(|m| m.name).collect();
        names.extend(
            crate::probe::blockstat::BlockStatDelta::default()
                .metrics()
                .into_iter()
                .map(|m| m.name),
        );
        names.push(
            crate::probe::blockstat::write_amplification(2, 1)
                .unwrap()
                .name,
        );
        assert!(names.len() > 4, "{names:?}");
        for n in names {
            assert!(
                reserved_metric(&n).is_some(),
                "{n} is recorded but not reserved"
            );
        }
        assert!(reserved_metric("sys_idle_pct").unwrap().contains("rename"));
        assert!(reserved_metric("event:block:rq_issue").is_some());
        assert!(reserved_metric("launch_ms").is_none());
    }

    #[test]
    fn a_text_attachment_round_trips_and_a_long_one_says_what_it_dropped() {
        let a = Attachment::text_gz("stdout", b"hello\n");
        assert_eq!(a.format, "text-gz");
        assert_eq!(a.text().unwrap(), "hello\n");
        let long = vec![b'x'; ATTACHMENT_TEXT_LIMIT + 10];
        let t = Attachment::text_gz("stdout", &long).text().unwrap();
        assert!(t.starts_with("xxxx"));
        assert!(
            t.ends_with("[fsdelta: 10 more bytes of stdout were not kept]\n"),
            "{}",
            &t[t.len() - 80..]
        );
        let bad = Attachment {
            name: "x".into(),
            format: "zstd".into(),
            data: vec![],
        };
        assert!(bad.text().unwrap_err().contains("format zstd"));
    }

    use super::*;

    #[test]
    fn units_round_trip_through_their_symbols() {
        for u in Unit::ALL {
            assert_eq!(u.as_str().parse::<Unit>().unwrap(), u);
            let json = serde_json::to_string(&u).unwrap();
            assert_eq!(json, format!("\"{}\"", u.as_str()));
        }
        assert!("furlongs".parse::<Unit>().is_err());
    }

    #[test]
    fn directions_and_statuses_round_trip() {
        for d in [
            Direction::HigherIsBetter,
            Direction::LowerIsBetter,
            Direction::Neutral,
        ] {
            assert_eq!(d.as_str().parse::<Direction>().unwrap(), d);
        }
        for s in [
            RunStatus::Running,
            RunStatus::Complete,
            RunStatus::Failed,
            RunStatus::Aborted,
        ] {
            assert_eq!(s.as_str().parse::<RunStatus>().unwrap(), s);
        }
    }
}
