//! The option table: every fio option this engine honours, one row each, as fio's options.c.
//!
//! Why it exists: the parser, `--help`, the list of supported options in an error and the
//! command-line splitting (which options never take the next word) all read this one table, so
//! adding an option is adding a row. A row names the option, its aliases, the kind of value
//! (which fixes how the text is read and range-checked), the default as fio documents it, its
//! category, the engines it applies to, and the setter that stores the typed value into a
//! [`JobSpec`]. What it must never do: accept an option it cannot honour, or store a value
//! without the row's range check.

use super::expr::{self, SizeValue, parse_size, parse_time_unit};
use super::{
    Bytes, DedupeMode, ErrorClass, FadviseHint, Fallocate, FileService, IoEngine, JobFileError,
    JobSpec, RandomDistribution, RandomGenerator, RawOption, RwMode, RwSequencer, SizeRange,
    SizeSpec, SteadyKind, SteadyState, SyncIo, VerifyKind, ZoneMode, err,
};
use std::time::Duration;

/// How an option's value is read.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// 0/1 (also true/false, yes/no, on/off); a bare name means 1.
    Bool,
    /// fio's set-only option (FIO_OPT_STR_SET): a bare name means 1 and it never takes the
    /// next command-line word as its value.
    Flag,
    /// A whole number (size suffixes and arithmetic allowed) in `min..=max`.
    Int {
        /// Smallest accepted.
        min: u64,
        /// Largest accepted.
        max: u64,
    },
    /// A byte count, base 1024; no percentage, no range.
    Size,
    /// A time; a bare number is `default_us` microseconds.
    Time {
        /// Unit of a bare number, in microseconds.
        default_us: u64,
    },
    /// One of these words.
    Choice(&'static [&'static str]),
    /// Free text, read by the setter.
    Text,
}

/// Where an option belongs (fio's categories, for `--help`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    /// Job description and grouping.
    General,
    /// Files and their layout.
    File,
    /// What I/O is issued.
    Io,
    /// The engine and its settings.
    Engine,
    /// Timing of the job.
    Time,
    /// Write-buffer contents.
    Buffer,
    /// Statistics and reporting.
    Stat,
}

impl Category {
    /// Name shown in `--help`.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::General => "general",
            Category::File => "files",
            Category::Io => "I/O",
            Category::Engine => "engine",
            Category::Time => "timing",
            Category::Buffer => "buffers",
            Category::Stat => "statistics",
        }
    }
}

/// A value read as the row's [`Kind`] says.
#[derive(Clone, Copy, Debug)]
pub enum Val<'a> {
    /// Bool and Flag.
    Bool(bool),
    /// Int.
    Int(u64),
    /// Size.
    Size(Bytes),
    /// Time.
    Time(Duration),
    /// Choice and Text (the text as written, trimmed).
    Text(&'a str),
}

impl Val<'_> {
    fn b(&self) -> bool {
        matches!(self, Val::Bool(true))
    }
    fn n(&self) -> u64 {
        match self {
            Val::Int(n) => *n,
            _ => 0,
        }
    }
    fn size(&self) -> Bytes {
        match self {
            Val::Size(b) => *b,
            _ => Bytes(0),
        }
    }
    fn time(&self) -> Duration {
        match self {
            Val::Time(t) => *t,
            _ => Duration::ZERO,
        }
    }
    fn s(&self) -> &str {
        match self {
            Val::Text(s) => s,
            _ => "",
        }
    }
}

/// Stores a typed value into a job; errors name the option's origin.
pub type Setter = fn(&mut JobSpec, Val<'_>, &RawOption) -> Result<(), JobFileError>;

/// One row of the table.
pub struct OptDef {
    /// Canonical name (fio's).
    pub name: &'static str,
    /// Other names fio accepts for it.
    pub aliases: &'static [&'static str],
    /// How the value is read.
    pub kind: Kind,
    /// fio's default, as text (for `--help`).
    pub default: &'static str,
    /// Category.
    pub category: Category,
    /// Engines the option applies to (empty: every engine). Set with another engine, it is an
    /// error, as in fio (whose engine options exist only once the engine is loaded).
    pub engines: &'static [IoEngine],
    /// One line of help.
    pub help: &'static str,
    /// Stores the value.
    pub set: Setter,
}

const U32: u64 = u32::MAX as u64;
const SEC: u64 = 1_000_000;
const URING_AIO: &[IoEngine] = &[IoEngine::IoUring, IoEngine::Libaio];
#[allow(dead_code)]
const URING: &[IoEngine] = &[IoEngine::IoUring];

macro_rules! opt {
    ($name:expr, [$($alias:expr),*], $kind:expr, $default:expr, $cat:ident, $help:expr, $set:expr) => {
        OptDef {
            name: $name,
            aliases: &[$($alias),*],
            kind: $kind,
            default: $default,
            category: Category::$cat,
            engines: &[],
            help: $help,
            set: $set,
        }
    };
    ($name:expr, [$($alias:expr),*], $kind:expr, $default:expr, $cat:ident, engines $eng:expr, $help:expr, $set:expr) => {
        OptDef {
            name: $name,
            aliases: &[$($alias),*],
            kind: $kind,
            default: $default,
            category: Category::$cat,
            engines: $eng,
            help: $help,
            set: $set,
        }
    };
}

const RW_CHOICES: &[&str] = &[
    "read",
    "write",
    "randread",
    "randwrite",
    "rw",
    "readwrite",
    "randrw",
    "trim",
    "randtrim",
    "trimwrite",
    "randtrimwrite",
];
const ENGINES: &[&str] = &[
    "psync",
    "sync",
    "pvsync",
    "io_uring",
    "libaio",
    "filecreate",
    "filestat",
    "filedelete",
    "null",
    "falloc",
    "ftruncate",
    "pvsync2",
    "posixaio",
    "vsync",
    "mmap",
];

/// The table. Order: fio's (general first), which is also the order of `--help`.
pub static OPTIONS: &[OptDef] = &[
    opt!(
        "name",
        [],
        Kind::Text,
        "section name",
        General,
        "job name (in [global] it names nothing: jobs keep their section names, as in fio)",
        |j, v, o| {
            if v.s().is_empty() {
                return err(&o.origin, "option 'name' needs a value");
            }
            j.name = v.s().to_string();
            Ok(())
        }
    ),
    opt!(
        "description",
        [],
        Kind::Text,
        "",
        General,
        "free text shown with the job",
        |j, v, _| {
            j.description = Some(v.s().to_string());
            Ok(())
        }
    ),
    opt!(
        "rw",
        ["readwrite"],
        Kind::Text,
        "read",
        Io,
        "read, write, randread, randwrite, rw (readwrite), randrw",
        set_rw
    ),
    opt!(
        "cpumask",
        [],
        Kind::Text,
        "",
        General,
        "the CPUs the job may run on, as a bit mask (bit N: CPU N)",
        |j, v, o| {
            let t = v.s().trim();
            let mask = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                Some(h) => u64::from_str_radix(h, 16),
                None => t.parse::<u64>(),
            }
            .or_else(|_| {
                err(
                    &o.origin,
                    format!("option 'cpumask={t}': not a number (a bit mask: 3 is CPUs 0 and 1)"),
                )
            })?;
            let cpus: Vec<usize> = (0..64).filter(|i| mask & (1u64 << i) != 0).collect();
            j.cpumask = Some(cpu_set(cpus, "cpumask", t, o)?);
            Ok(())
        }
    ),
    opt!(
        "cpus_allowed",
        [],
        Kind::Text,
        "",
        General,
        "the CPUs the job may run on: a list of N and N-M (0-1,3)",
        |j, v, o| {
            j.cpumask = Some(cpu_list(v.s(), "cpus_allowed", o)?);
            Ok(())
        }
    ),
    opt!(
        "lockfile",
        [],
        Kind::Choice(&["none"]),
        "none",
        File,
        "file locking between jobs: none (fio's default; exclusive and readwrite are not supported)",
        |_, _, _| Ok(())
    ),
    opt!(
        "cpus_allowed_policy",
        [],
        Kind::Choice(&["shared", "split"]),
        "shared",
        General,
        "shared: every clone may use every CPU of the set; split: each clone one CPU of it",
        |j, v, _| {
            j.cpus_split = v.s() == "split";
            Ok(())
        }
    ),
    opt!(
        "numa_cpu_nodes",
        [],
        Kind::Text,
        "",
        General,
        "run the job's threads on the CPUs of these NUMA nodes (0, 0-1, 0,2, all, !N, +N)",
        |j, v, o| {
            j.numa_cpu_nodes = Some(
                super::numa::NodeList::parse(v.s(), &o.origin)
                    .or_else(|e| err(&o.origin, format!("option 'numa_cpu_nodes': {e}")))?,
            );
            Ok(())
        }
    ),
    opt!(
        "numa_mem_policy",
        [],
        Kind::Text,
        "",
        General,
        "memory policy of the job's threads: default, prefer:N, bind:NODES, interleave[:NODES], local",
        |j, v, o| {
            j.numa_mem_policy = Some(
                super::numa::MemPolicy::parse(v.s(), &o.origin)
                    .or_else(|e| err(&o.origin, format!("option 'numa_mem_policy': {e}")))?,
            );
            Ok(())
        }
    ),
    opt!(
        "rw_sequencer",
        [],
        Kind::Choice(&["sequential", "identical"]),
        "sequential",
        Io,
        "I/Os of rw=rand...:N between two random offsets: sequential (after the last) or identical (the last again)",
        |j, v, _| {
            j.rw_sequencer = match v.s() {
                "identical" => RwSequencer::Identical,
                _ => RwSequencer::Sequential,
            };
            Ok(())
        }
    ),
    opt!(
        "rwmixread",
        [],
        Kind::Int { min: 0, max: 100 },
        "50",
        Io,
        "percent of mixed I/O that reads",
        |j, v, _| {
            j.rwmixread = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "rwmixwrite",
        [],
        Kind::Int { min: 0, max: 100 },
        "50",
        Io,
        "percent of mixed I/O that writes",
        |j, v, _| {
            j.rwmixread = 100 - v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "bs",
        ["blocksize"],
        Kind::Text,
        "4k",
        Io,
        "block size: bs=N, or bs=READ,WRITE[,TRIM]",
        set_bs
    ),
    opt!(
        "bsrange",
        ["blocksize_range"],
        Kind::Text,
        "bs",
        Io,
        "block sizes drawn from LOW-HIGH (multiples of LOW), per direction READ,WRITE",
        set_bsrange
    ),
    opt!(
        "bssplit",
        [],
        Kind::Text,
        "",
        Io,
        "block sizes by share: SIZE/PERCENT:SIZE/PERCENT..., per direction READ,WRITE[,TRIM]",
        set_bssplit
    ),
    opt!(
        "ba",
        ["blockalign"],
        Kind::Text,
        "min bs",
        Io,
        "alignment of random offsets, per direction READ,WRITE (turns off the random map)",
        set_blockalign
    ),
    opt!(
        "bs_is_seq_rand",
        [],
        Kind::Bool,
        "0",
        Io,
        "the READ,WRITE block sizes apply to sequential,random I/O instead",
        |j, v, _| {
            j.bs_is_seq_rand = v.b();
            Ok(())
        }
    ),
    opt!(
        "size",
        [],
        Kind::Text,
        "size of the files",
        File,
        "bytes per job clone (split across its files), or N% of the existing files",
        set_size
    ),
    opt!(
        "filesize",
        [],
        Kind::Text,
        "size/nrfiles",
        File,
        "size of each file; LOW:HIGH (or LOW-HIGH) draws each file's size",
        set_filesize
    ),
    opt!(
        "nrfiles",
        ["nr_files"],
        Kind::Int { min: 1, max: U32 },
        "1",
        File,
        "files per job clone",
        |j, v, _| {
            j.nrfiles = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "filename_format",
        [],
        Kind::Text,
        "$jobname.$jobnum.$filenum",
        File,
        "names of files without filename=: $jobname, $jobnum (clone), $filenum, $clientuid (empty)",
        |j, v, o| {
            if v.s().is_empty() {
                return err(
                    &o.origin,
                    "option 'filename_format' needs a value (fio's default: $jobname.$jobnum.$filenum)",
                );
            }
            j.filename_format = Some(v.s().to_string());
            Ok(())
        }
    ),
    opt!(
        "filename",
        [],
        Kind::Text,
        "$jobname.$jobnum.$filenum",
        File,
        "file names, ':'-separated",
        |j, v, o| {
            j.filename = colon_list(v.s(), o, "filename")?;
            Ok(())
        }
    ),
    opt!(
        "directory",
        [],
        Kind::Text,
        ".",
        File,
        "directories, ':'-separated (files are spread across them)",
        |j, v, o| {
            j.directory = colon_list(v.s(), o, "directory")?;
            Ok(())
        }
    ),
    opt!(
        "numjobs",
        [],
        Kind::Int { min: 1, max: 4096 },
        "1",
        General,
        "clones of the job, each a thread",
        |j, v, _| {
            j.numjobs = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "ioengine",
        [],
        Kind::Choice(ENGINES),
        "psync",
        Engine,
        "how I/O is issued",
        set_engine
    ),
    opt!(
        "iodepth",
        [],
        Kind::Int { min: 1, max: 65536 },
        "1",
        Engine,
        "I/Os kept in flight (asynchronous engines)",
        |j, v, _| {
            j.iodepth = v.n() as u32;
            Ok(())
        }
    ),
    opt!("direct", [], Kind::Bool, "0", Io, "O_DIRECT", |j, v, _| {
        j.direct = v.b();
        Ok(())
    }),
    opt!(
        "buffered",
        [],
        Kind::Bool,
        "1",
        Io,
        "the opposite of direct",
        |j, v, _| {
            j.direct = !v.b();
            Ok(())
        }
    ),
    opt!(
        "fsync",
        [],
        Kind::Int { min: 0, max: U32 },
        "0",
        Io,
        "fsync every N writes",
        |j, v, _| {
            j.fsync = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "fdatasync",
        [],
        Kind::Int { min: 0, max: U32 },
        "0",
        Io,
        "fdatasync every N writes",
        |j, v, _| {
            j.fdatasync = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "end_fsync",
        [],
        Kind::Bool,
        "0",
        Io,
        "fsync the files when the job ends",
        |j, v, _| {
            j.end_fsync = v.b();
            Ok(())
        }
    ),
    opt!(
        "fsync_on_close",
        [],
        Kind::Bool,
        "0",
        Io,
        "fsync a file when it is closed",
        |j, v, _| {
            j.fsync_on_close = v.b();
            Ok(())
        }
    ),
    opt!(
        "time_based",
        [],
        Kind::Flag,
        "0",
        Time,
        "repeat the workload until runtime",
        |j, v, _| {
            j.time_based = v.b();
            Ok(())
        }
    ),
    opt!(
        "runtime",
        ["timeout"],
        Kind::Time { default_us: SEC },
        "0 (no limit)",
        Time,
        "limit (or, with time_based, length) of the run",
        |j, v, _| {
            let t = v.time();
            j.runtime = if t.is_zero() { None } else { Some(t) };
            Ok(())
        }
    ),
    opt!(
        "ramp_time",
        [],
        Kind::Time { default_us: SEC },
        "0",
        Time,
        "run this long before measuring",
        |j, v, _| {
            j.ramp_time = v.time();
            Ok(())
        }
    ),
    opt!(
        "clocksource",
        [],
        Kind::Choice(&["gettimeofday", "clock_gettime", "cpu"]),
        "cpu where the TSC is invariant, else clock_gettime",
        Time,
        "clock of the timestamps (cpu: the calibrated TSC)",
        |j, v, _| {
            j.clocksource = crate::probe::clock::ClockSource::from_fio_name(v.s());
            Ok(())
        }
    ),
    opt!(
        "startdelay",
        [],
        Kind::Time { default_us: SEC },
        "0",
        Time,
        "wait this long before starting the job",
        |j, v, _| {
            j.startdelay = v.time();
            Ok(())
        }
    ),
    opt!(
        "invalidate",
        [],
        Kind::Bool,
        "1",
        File,
        "drop the files' page cache before the job",
        |j, v, _| {
            j.invalidate = v.b();
            Ok(())
        }
    ),
    opt!(
        "fallocate",
        [],
        Kind::Choice(&["none", "native", "posix", "keep", "truncate", "0", "1"]),
        "native",
        File,
        "preallocation at layout",
        |j, v, _| {
            j.fallocate = match v.s() {
                "none" | "0" => Fallocate::None,
                "native" => Fallocate::Native,
                "posix" | "1" => Fallocate::Posix,
                "keep" => Fallocate::Keep,
                _ => Fallocate::Truncate,
            };
            Ok(())
        }
    ),
    opt!(
        "create_on_open",
        [],
        Kind::Bool,
        "0",
        File,
        "create files when first opened, not at layout",
        |j, v, _| {
            j.create_on_open = v.b();
            Ok(())
        }
    ),
    opt!(
        "unlink_each_loop",
        [],
        Kind::Bool,
        "0",
        File,
        "delete the files before every loop after the first (the loop's writes create them anew)",
        |j, v, _| {
            j.unlink_each_loop = v.b();
            Ok(())
        }
    ),
    opt!(
        "file_append",
        [],
        Kind::Bool,
        "0",
        File,
        "I/O after the end of the file: the offset is the existing file's size (regular files)",
        |j, v, _| {
            j.file_append = v.b();
            Ok(())
        }
    ),
    opt!(
        "unlink",
        [],
        Kind::Bool,
        "0",
        File,
        "delete the files when the job ends",
        |j, v, _| {
            j.unlink = v.b();
            Ok(())
        }
    ),
    opt!(
        "blocksize_unaligned",
        ["bs_unaligned"],
        Kind::Flag,
        "0",
        Io,
        "do not round block sizes from bsrange/bssplit down to a multiple of the smallest",
        |j, v, _| {
            j.blocksize_unaligned = v.b();
            Ok(())
        }
    ),
    opt!(
        "loops",
        [],
        Kind::Int { min: 1, max: U32 },
        "1",
        General,
        "repetitions of the workload",
        |j, v, _| {
            j.loops = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "randrepeat",
        [],
        Kind::Bool,
        "1",
        Io,
        "seed the generators repeatably",
        |j, v, _| {
            j.randrepeat = v.b();
            Ok(())
        }
    ),
    opt!(
        "allrandrepeat",
        [],
        Kind::Bool,
        "0",
        Io,
        "seed every generator repeatably",
        |j, v, _| {
            j.allrandrepeat = v.b();
            Ok(())
        }
    ),
    opt!(
        "randseed",
        [],
        Kind::Int {
            min: 0,
            max: u64::MAX
        },
        "0x89",
        Io,
        "explicit seed",
        |j, v, _| {
            j.randseed = Some(v.n());
            Ok(())
        }
    ),
    opt!(
        "norandommap",
        [],
        Kind::Flag,
        "0",
        Io,
        "no random map: random blocks may repeat within a pass",
        |j, v, _| {
            j.norandommap = v.b();
            Ok(())
        }
    ),
    opt!(
        "random_generator",
        [],
        Kind::Choice(&["tausworthe", "tausworthe64", "lfsr"]),
        "tausworthe",
        Io,
        "offset generator",
        |j, v, _| {
            j.random_generator = match v.s() {
                "tausworthe" => RandomGenerator::Tausworthe,
                "tausworthe64" => RandomGenerator::Tausworthe64,
                _ => RandomGenerator::Lfsr,
            };
            Ok(())
        }
    ),
    opt!(
        "file_service_type",
        [],
        Kind::Text,
        "roundrobin",
        File,
        "roundrobin[:N], random[:N], sequential",
        set_file_service
    ),
    opt!(
        "openfiles",
        [],
        Kind::Int { min: 1, max: U32 },
        "nrfiles",
        File,
        "files kept open at once",
        |j, v, _| {
            j.openfiles = Some(v.n() as u32);
            Ok(())
        }
    ),
    opt!(
        "group_reporting",
        [],
        Kind::Flag,
        "0",
        Stat,
        "report each group as one job",
        |j, v, _| {
            j.group_reporting = v.b();
            Ok(())
        }
    ),
    opt!(
        "stonewall",
        ["wait_for_previous"],
        Kind::Flag,
        "0",
        General,
        "wait for the previous jobs to finish (starts a new group)",
        |j, v, _| {
            j.stonewall = v.b();
            Ok(())
        }
    ),
    opt!(
        "new_group",
        [],
        Kind::Flag,
        "0",
        Stat,
        "start a new reporting group",
        |j, v, _| {
            j.new_group = v.b();
            Ok(())
        }
    ),
    opt!(
        "thread",
        [],
        Kind::Flag,
        "0",
        General,
        "accepted: workers are always threads",
        |j, v, _| {
            j.thread = v.b();
            Ok(())
        }
    ),
    opt!(
        "zero_buffers",
        [],
        Kind::Flag,
        "0",
        Buffer,
        "write buffers of zeros",
        |j, v, _| {
            j.zero_buffers = v.b();
            Ok(())
        }
    ),
    opt!(
        "buffer_pattern",
        [],
        Kind::Text,
        "",
        Buffer,
        "write buffers filled with a pattern: 0xHEX, decimal, \"string\" (no %o)",
        |j, v, o| {
            let p = match super::pattern::parse(v.s()) {
                Ok(p) => p,
                Err(e) => return err(&o.origin, format!("option 'buffer_pattern': {e}")),
            };
            if !p.offsets_at.is_empty() {
                return err(
                    &o.origin,
                    "option 'buffer_pattern': %o is not allowed here (fio 3.33 fills no formats into buffer_pattern; use it in verify_pattern)",
                );
            }
            // fio's str_buffer_pattern_cb: the pattern turns scrambling and zero buffers off.
            j.buffer_pattern = Some(p.bytes);
            j.scramble_buffers = false;
            j.zero_buffers = false;
            Ok(())
        }
    ),
    opt!(
        "refill_buffers",
        [],
        Kind::Flag,
        "0",
        Buffer,
        "refill write buffers before every write",
        |j, v, _| {
            j.refill_buffers = Some(v.b());
            Ok(())
        }
    ),
    opt!(
        "scramble_buffers",
        [],
        Kind::Bool,
        "1",
        Buffer,
        "stamp each 512-byte block of a write",
        |j, v, _| {
            j.scramble_buffers = v.b();
            Ok(())
        }
    ),
    opt!(
        "buffer_compress_percentage",
        [],
        Kind::Int { min: 0, max: 100 },
        "0",
        Buffer,
        "percent of written data that compresses",
        |j, v, _| {
            j.buffer_compress_percentage = Some(v.n() as u32);
            Ok(())
        }
    ),
    opt!(
        "dedupe_percentage",
        [],
        Kind::Int { min: 0, max: 100 },
        "0",
        Buffer,
        "percent of write buffers that repeat an earlier one (fio's generator)",
        |j, v, _| {
            j.dedupe_percentage = v.n() as u32;
            // fio's str_dedupe_cb: dedupe refills the buffers (a later refill_buffers= wins).
            j.refill_buffers = Some(true);
            Ok(())
        }
    ),
    opt!(
        "dedupe_mode",
        [],
        Kind::Choice(&["repeat", "working_set"]),
        "repeat",
        Buffer,
        "a dedupe repeats the last unique buffer, or one of a working set",
        |j, v, _| {
            j.dedupe_mode = if v.s() == "working_set" {
                DedupeMode::WorkingSet
            } else {
                DedupeMode::Repeat
            };
            Ok(())
        }
    ),
    opt!(
        "dedupe_working_set_percentage",
        [],
        Kind::Int { min: 0, max: 100 },
        "5",
        Buffer,
        "percent of size that is the dedupe working set",
        |j, v, _| {
            j.dedupe_working_set_percentage = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "dedupe_global",
        [],
        Kind::Bool,
        "0",
        Buffer,
        "share the dedupe working set with the other dedupe_global jobs",
        |j, v, _| {
            j.dedupe_global = v.b();
            Ok(())
        }
    ),
    opt!(
        "buffer_compress_chunk",
        [],
        Kind::Size,
        "512",
        Buffer,
        "chunk for buffer_compress_percentage",
        |j, v, o| {
            if v.size().0 == 0 {
                return err(
                    &o.origin,
                    "option 'buffer_compress_chunk' must be greater than 0",
                );
            }
            j.buffer_compress_chunk = v.size();
            Ok(())
        }
    ),
    opt!(
        "percentile_list",
        [],
        Kind::Text,
        "1:5:10:...:99.99",
        Stat,
        "percentiles reported, ':'-separated",
        set_percentile_list
    ),
    opt!(
        "lat_percentiles",
        [],
        Kind::Bool,
        "0",
        Stat,
        "percentiles of lat too",
        |j, v, _| {
            j.lat_percentiles = v.b();
            Ok(())
        }
    ),
    opt!(
        "clat_percentiles",
        [],
        Kind::Bool,
        "1",
        Stat,
        "percentiles of clat",
        |j, v, _| {
            j.clat_percentiles = v.b();
            Ok(())
        }
    ),
    opt!(
        "gtod_reduce",
        [],
        Kind::Bool,
        "0",
        Stat,
        "measure no latency at all (sets disable_lat, disable_clat, disable_slat, disable_bw)",
        |j, v, _| {
            j.gtod_reduce = v.b();
            if v.b() {
                j.disable_lat = true;
                j.disable_clat = true;
                j.disable_slat = true;
                j.disable_bw = true;
            }
            Ok(())
        }
    ),
    opt!(
        "disable_lat",
        [],
        Kind::Bool,
        "0",
        Stat,
        "do not measure lat",
        |j, v, _| {
            j.disable_lat = v.b();
            Ok(())
        }
    ),
    opt!(
        "disable_clat",
        [],
        Kind::Bool,
        "0",
        Stat,
        "do not measure clat",
        |j, v, _| {
            j.disable_clat = v.b();
            Ok(())
        }
    ),
    opt!(
        "disable_slat",
        [],
        Kind::Bool,
        "0",
        Stat,
        "do not measure slat",
        |j, v, _| {
            j.disable_slat = v.b();
            Ok(())
        }
    ),
    opt!(
        "disable_bw_measurement",
        ["disable_bw"],
        Kind::Bool,
        "0",
        Stat,
        "do not sample bandwidth and IOPS",
        |j, v, _| {
            j.disable_bw = v.b();
            Ok(())
        }
    ),
    opt!(
        "stats",
        [],
        Kind::Bool,
        "1",
        Stat,
        "report this job (0: run it, report nothing)",
        |j, v, _| {
            j.stats = v.b();
            Ok(())
        }
    ),
    opt!(
        "hipri",
        [],
        Kind::Flag,
        "0",
        Engine,
        engines & [IoEngine::Pvsync2, IoEngine::IoUring],
        "polled completions (pvsync2: RWF_HIPRI; io_uring: IORING_SETUP_IOPOLL, EOPNOTSUPP unless the file's driver polls)",
        |j, v, _| {
            j.hipri = v.b();
            j.uring.iopoll = v.b();
            Ok(())
        }
    ),
    opt!(
        "registerfiles",
        [],
        Kind::Flag,
        "0",
        Engine,
        engines URING,
        "register the job's files with the ring (IORING_REGISTER_FILES, IOSQE_FIXED_FILE)",
        |j, v, _| {
            j.uring.registerfiles = v.b();
            Ok(())
        }
    ),
    opt!(
        "fixedbufs",
        [],
        Kind::Flag,
        "0",
        Engine,
        engines URING,
        "register the I/O buffers with the ring (IORING_REGISTER_BUFFERS, READ_FIXED/WRITE_FIXED)",
        |j, v, _| {
            j.uring.fixedbufs = v.b();
            Ok(())
        }
    ),
    opt!(
        "sqthread_poll",
        [],
        Kind::Flag,
        "0",
        Engine,
        engines URING,
        "a kernel thread polls the submission queue (IORING_SETUP_SQPOLL; implies registerfiles)",
        |j, v, _| {
            j.uring.sqthread_poll = v.b();
            Ok(())
        }
    ),
    opt!(
        "sqthread_poll_cpu",
        [],
        Kind::Int { min: 0, max: U32 },
        "",
        Engine,
        engines URING,
        "the CPU of sqthread_poll's kernel thread (IORING_SETUP_SQ_AFF)",
        |j, v, _| {
            j.uring.sqthread_poll_cpu = Some(v.n() as u32);
            Ok(())
        }
    ),
    opt!(
        "wait_for",
        [],
        Kind::Text,
        "",
        General,
        "start only after the job of this name has finished",
        |j, v, o| {
            if v.s().is_empty() {
                return err(&o.origin, "option 'wait_for' needs a job name");
            }
            j.wait_for = Some(v.s().to_string());
            Ok(())
        }
    ),
    opt!(
        "offset",
        [],
        Kind::Text,
        "0",
        Io,
        "start of the I/O region in each file (bytes, N% of the file, or Nz: N zones)",
        |j, v, o| {
            if let Some(n) = zone_count(v.s(), o)? {
                j.offset = SizeSpec::Bytes(Bytes(0));
                j.zone_units.offset = n;
                return Ok(());
            }
            j.offset = match parse_size(v.s()) {
                Ok(SizeValue::Bytes(b)) => SizeSpec::Bytes(b),
                Ok(SizeValue::Percent(p)) if p <= 100 => SizeSpec::Percent(p as u32),
                Ok(SizeValue::Percent(p)) => {
                    return err(
                        &o.origin,
                        format!("option 'offset': {p}% is not in 0..=100"),
                    );
                }
                Err(e) => return err(&o.origin, format!("option 'offset': {e}")),
            };
            Ok(())
        }
    ),
    opt!(
        "offset_increment",
        [],
        Kind::Text,
        "0",
        Io,
        "added to offset for each clone (clone n starts at offset + n * increment; Nz: N zones)",
        |j, v, o| {
            if let Some(n) = zone_count(v.s(), o)? {
                j.offset_increment = Bytes(0);
                j.zone_units.offset_increment = n;
                return Ok(());
            }
            j.offset_increment = size_value(o, value_of(o)?)?;
            Ok(())
        }
    ),
    opt!(
        "io_size",
        ["io_limit"],
        Kind::Text,
        "size",
        Io,
        "bytes of I/O per pass, when not the region's size (Nz: N zones)",
        |j, v, o| {
            if let Some(n) = zone_count(v.s(), o)? {
                j.io_size = None;
                j.zone_units.io_size = n;
                return Ok(());
            }
            let b = size_value(o, value_of(o)?)?;
            if b.0 == 0 {
                return err(&o.origin, "option 'io_size' must be greater than 0");
            }
            j.io_size = Some(b);
            Ok(())
        }
    ),
    opt!(
        "number_ios",
        [],
        Kind::Int {
            min: 0,
            max: u64::MAX
        },
        "0",
        Io,
        "stop after this many I/Os (0: no limit)",
        |j, v, _| {
            j.number_ios = v.n();
            Ok(())
        }
    ),
    opt!(
        "thinktime",
        [],
        Kind::Time { default_us: 1 },
        "0",
        Time,
        "pause after every thinktime_blocks I/Os (bare number: microseconds)",
        |j, v, _| {
            j.thinktime = v.time();
            Ok(())
        }
    ),
    opt!(
        "thinktime_spin",
        [],
        Kind::Time { default_us: 1 },
        "0",
        Time,
        "of thinktime, spin this long instead of sleeping",
        |j, v, _| {
            j.thinktime_spin = v.time();
            Ok(())
        }
    ),
    opt!(
        "thinktime_blocks",
        [],
        Kind::Int { min: 1, max: U32 },
        "1",
        Time,
        "I/Os between think times",
        |j, v, _| {
            j.thinktime_blocks = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "rate",
        [],
        Kind::Text,
        "0",
        Io,
        "bandwidth cap in bytes/s: rate=N (every direction) or rate=READ,WRITE,TRIM",
        |j, v, o| set_per_ddir(&mut j.rate, v, o)
    ),
    opt!(
        "rate_min",
        ["ratemin"],
        Kind::Text,
        "0",
        Io,
        "the job fails when its bandwidth over rate_cycle falls below this (bytes/s per direction)",
        |j, v, o| set_per_ddir(&mut j.rate_min, v, o)
    ),
    opt!(
        "rate_iops",
        [],
        Kind::Text,
        "0",
        Io,
        "I/O cap per second: rate_iops=N or rate_iops=READ,WRITE,TRIM",
        |j, v, o| set_per_ddir(&mut j.rate_iops, v, o)
    ),
    opt!(
        "rate_iops_min",
        [],
        Kind::Text,
        "0",
        Io,
        "the job fails when its IOPS over rate_cycle fall below this (per direction)",
        |j, v, o| set_per_ddir(&mut j.rate_iops_min, v, o)
    ),
    opt!(
        "rate_cycle",
        ["ratecycle"],
        Kind::Int { min: 0, max: U32 },
        "1000",
        Io,
        "window (ms) over which rate_min / rate_iops_min are judged",
        |j, v, _| {
            j.rate_cycle_ms = v.n();
            Ok(())
        }
    ),
    opt!(
        "rate_process",
        [],
        Kind::Choice(&["linear", "poisson"]),
        "linear",
        Io,
        "linear: evenly spaced I/Os; poisson: exponential gaps with the same mean (fio's generator)",
        |j, v, _| {
            j.rate_poisson = v.s() == "poisson";
            Ok(())
        }
    ),
    opt!(
        "rate_ignore_thinktime",
        [],
        Kind::Bool,
        "0",
        Io,
        "the rate counts thinktime as time the job could have issued I/O in (it catches up after)",
        |j, v, _| {
            j.rate_ignore_thinktime = v.b();
            Ok(())
        }
    ),
    opt!(
        "iodepth_batch_complete_min",
        ["iodepth_batch_complete"],
        Kind::Int { min: 0, max: 65536 },
        "1",
        Engine,
        "completions waited for at once (io_uring, libaio, posixaio, vsync; the other engines complete each I/O in its call, so it changes nothing, as in fio)",
        |j, v, _| {
            j.iodepth_batch_complete_min = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "iodepth_batch_complete_max",
        [],
        Kind::Int { min: 0, max: 65536 },
        "iodepth_batch_complete_min",
        Engine,
        "completions taken at once at most",
        |j, v, _| {
            j.iodepth_batch_complete_max = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "prio",
        [],
        Kind::Int { min: 0, max: 7 },
        "",
        General,
        "the job's I/O priority level (0 highest), set on its thread with ioprio_set",
        |j, v, _| {
            j.prio = Some(v.n() as u32);
            Ok(())
        }
    ),
    opt!(
        "prioclass",
        [],
        Kind::Int { min: 0, max: 3 },
        "",
        General,
        "the job's I/O priority class: 1 real-time, 2 best-effort, 3 idle (0: best-effort)",
        |j, v, _| {
            j.prioclass = Some(v.n() as u32);
            Ok(())
        }
    ),
    opt!(
        "cmdprio_percentage",
        [],
        Kind::Text,
        "0",
        Engine,
        engines URING_AIO,
        "percent of I/Os (N, or READ,WRITE) issued with the cmdprio_class/cmdprio priority",
        |j, v, o| set_cmdprio(&mut j.cmdprio.percentage, v, o, 0, 100)
    ),
    opt!(
        "cmdprio_class",
        [],
        Kind::Text,
        "1 (real-time)",
        Engine,
        engines URING_AIO,
        "priority class (N, or READ,WRITE) of cmdprio_percentage's and cmdprio_bssplit's I/Os",
        |j, v, o| set_cmdprio(&mut j.cmdprio.class, v, o, 1, 3)
    ),
    opt!(
        "cmdprio",
        [],
        Kind::Text,
        "0",
        Engine,
        engines URING_AIO,
        "priority level (N, or READ,WRITE) of cmdprio_percentage's and cmdprio_bssplit's I/Os",
        |j, v, o| set_cmdprio(&mut j.cmdprio.level, v, o, 0, 7)
    ),
    opt!(
        "cmdprio_bssplit",
        [],
        Kind::Text,
        "",
        Engine,
        engines URING_AIO,
        "per block size, percent of I/Os given a priority: bs/perc[/class/level]:... (READ,WRITE lists)",
        |j, v, o| {
            j.cmdprio.bssplit = if v.s().is_empty() {
                None
            } else {
                Some(
                    super::cmdprio::parse_bssplit(v.s())
                        .or_else(|e| err(&o.origin, format!("option 'cmdprio_bssplit': {e}")))?,
                )
            };
            Ok(())
        }
    ),
    opt!(
        "log_prio",
        [],
        Kind::Bool,
        "0",
        Stat,
        "log lines carry the I/O's priority value (0x2000 ...) instead of 1 for real-time, else 0",
        |j, v, _| {
            j.log_prio = v.b();
            Ok(())
        }
    ),
    opt!(
        "random_distribution",
        [],
        Kind::Text,
        "random",
        Io,
        "random, zipf[:THETA[:CENTER]], pareto[:H[:CENTER]] (fio's generators; with norandommap)",
        set_random_distribution
    ),
    opt!(
        "verify",
        [],
        Kind::Choice(&[
            "0",
            "none",
            "md5",
            "crc64",
            "crc32",
            "crc32c-intel",
            "crc32c",
            "crc16",
            "crc7",
            "sha1",
            "sha256",
            "sha512",
            "sha3-224",
            "sha3-256",
            "sha3-384",
            "sha3-512",
            "xxhash",
            "meta",
            "pattern",
            "null"
        ]),
        "none",
        Io,
        "stamp each written block with fio's verify header and this checksum; check it when read",
        |j, v, _| {
            j.verify_set = true;
            let kind = match v.s() {
                "md5" => VerifyKind::Md5,
                "crc64" => VerifyKind::Crc64,
                "crc32" => VerifyKind::Crc32,
                "crc32c" => VerifyKind::Crc32c,
                "crc32c-intel" => VerifyKind::Crc32cIntel,
                "crc16" => VerifyKind::Crc16,
                "crc7" => VerifyKind::Crc7,
                "sha256" => VerifyKind::Sha256,
                "sha512" => VerifyKind::Sha512,
                "sha3-224" => VerifyKind::Sha3_224,
                "sha3-256" => VerifyKind::Sha3_256,
                "sha3-384" => VerifyKind::Sha3_384,
                "sha3-512" => VerifyKind::Sha3_512,
                "sha1" => VerifyKind::Sha1,
                "xxhash" => VerifyKind::Xxhash,
                "meta" => VerifyKind::Meta,
                "pattern" => VerifyKind::PatternNoHdr,
                "null" => VerifyKind::Null,
                _ => {
                    j.verify = false;
                    return Ok(());
                }
            };
            j.verify = true;
            j.verify_kind = kind;
            Ok(())
        }
    ),
    opt!(
        "do_verify",
        [],
        Kind::Bool,
        "1",
        Io,
        "with verify=, read the written blocks back after the writes",
        |j, v, _| {
            j.do_verify = v.b();
            Ok(())
        }
    ),
    opt!(
        "verify_interval",
        [],
        Kind::Size,
        "bs",
        Io,
        "bytes covered by one verify header",
        |j, v, o| {
            if v.size().0 <= 40 {
                return err(
                    &o.origin,
                    "option 'verify_interval' must be larger than fio's 40-byte verify header",
                );
            }
            j.verify_interval = Some(v.size());
            Ok(())
        }
    ),
    opt!(
        "verify_pattern",
        [],
        Kind::Text,
        "",
        Io,
        "bytes after each verify header: 0xHEX, decimal, \"string\", %o (offset)",
        |j, v, o| {
            let p = match super::pattern::parse(v.s()) {
                Ok(p) => p,
                Err(e) => return err(&o.origin, format!("option 'verify_pattern': {e}")),
            };
            j.verify_pattern = Some(p);
            if !j.verify_set {
                j.verify = true;
                j.verify_kind = VerifyKind::Pattern;
            }
            Ok(())
        }
    ),
    opt!(
        "verify_offset",
        [],
        Kind::Size,
        "0",
        Io,
        "swap the verify header with the bytes this far into the interval",
        |j, v, o| {
            // fio's minval: the size of its verify header.
            if v.size().0 < 40 {
                return err(
                    &o.origin,
                    format!(
                        "option 'verify_offset': min value out of range: {} (40 min), as fio refuses it; give 40 or more",
                        v.size().0
                    ),
                );
            }
            j.verify_offset = v.size();
            Ok(())
        }
    ),
    opt!(
        "verify_backlog",
        [],
        Kind::Int {
            min: 0,
            max: u64::MAX
        },
        "0",
        Io,
        "after this many writes, read back and verify the logged ones",
        |j, v, _| {
            j.verify_backlog = v.n();
            Ok(())
        }
    ),
    opt!(
        "verify_backlog_batch",
        [],
        Kind::Int {
            min: 0,
            max: u64::MAX
        },
        "verify_backlog",
        Io,
        "blocks verified per verify_backlog round",
        |j, v, _| {
            j.verify_backlog_batch = v.n();
            Ok(())
        }
    ),
    opt!(
        "verify_dump",
        [],
        Kind::Bool,
        "0",
        Io,
        "on a verify failure write FILE.OFFSET.received and .expected",
        |j, v, _| {
            j.verify_dump = v.b();
            Ok(())
        }
    ),
    opt!(
        "verify_fatal",
        [],
        Kind::Bool,
        "0",
        Io,
        "report only a block's first failed interval (the job fails either way)",
        |j, v, _| {
            j.verify_fatal = v.b();
            Ok(())
        }
    ),
    opt!(
        "verify_only",
        [],
        Kind::Flag,
        "0",
        Time,
        "do not write: read back and verify what an earlier run of this write job wrote",
        |j, v, _| {
            j.verify_only = v.b();
            Ok(())
        }
    ),
    opt!(
        "verify_async",
        [],
        Kind::Int { min: 0, max: U32 },
        "0",
        Io,
        "check the verify phase's blocks on this many threads (same results as without)",
        |j, v, _| {
            j.verify_async = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "verify_async_cpus",
        [],
        Kind::Text,
        "",
        Io,
        "the CPUs of the verify_async threads: a list of N and N-M, as cpus_allowed",
        |j, v, o| {
            j.verify_cpumask = Some(cpu_list(v.s(), "verify_async_cpus", o)?);
            Ok(())
        }
    ),
    opt!(
        "verify_state_save",
        [],
        Kind::Bool,
        "1",
        Io,
        "0 only: no verify state file is written (fsdelta writes none)",
        |_, v, o| {
            if v.b() {
                return err(
                    &o.origin,
                    "option 'verify_state_save=1' is not supported: fsdelta saves no verify state; set verify_state_save=0",
                );
            }
            Ok(())
        }
    ),
    opt!(
        "fill_device",
        ["fill_fs"],
        Kind::Bool,
        "0",
        Io,
        "write until ENOSPC (without size=, the filesystem's free space)",
        |j, v, _| {
            j.fill_device = v.b();
            Ok(())
        }
    ),
    opt!(
        "create_serialize",
        [],
        Kind::Bool,
        "1",
        File,
        "lay files out one clone at a time (0: in parallel); layout is untimed",
        |j, v, _| {
            j.create_serialize = v.b();
            Ok(())
        }
    ),
    opt!(
        "flow_id",
        [],
        Kind::Int { min: 0, max: U32 },
        "0",
        Io,
        "flow control group of the job",
        |j, v, _| {
            j.flow_id = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "flow",
        [],
        Kind::Int { min: 0, max: 1000 },
        "0",
        Io,
        "weight in the flow group: the job's share of the group's I/Os is flow / (sum of the weights)",
        |j, v, _| {
            j.flow = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "flow_sleep",
        [],
        Kind::Time { default_us: 1 },
        "0",
        Io,
        "sleep this long (bare number: microseconds) when held back by flow control",
        |j, v, _| {
            j.flow_sleep = v.time();
            Ok(())
        }
    ),
    opt!(
        "write_lat_log",
        [],
        Kind::Text,
        "",
        Stat,
        "per-I/O lat, slat and clat logs PREFIX_lat.N.log ... (no value: the job name)",
        |j, v, _| {
            j.lat_log = Some(v.s().to_string());
            Ok(())
        }
    ),
    opt!(
        "write_bw_log",
        [],
        Kind::Text,
        "",
        Stat,
        "per-I/O bandwidth log PREFIX_bw.N.log (no value: the job name)",
        |j, v, _| {
            j.bw_log = Some(v.s().to_string());
            Ok(())
        }
    ),
    opt!(
        "write_iops_log",
        [],
        Kind::Text,
        "",
        Stat,
        "per-I/O IOPS log PREFIX_iops.N.log (no value: the job name)",
        |j, v, _| {
            j.iops_log = Some(v.s().to_string());
            Ok(())
        }
    ),
    opt!(
        "write_hist_log",
        [],
        Kind::Text,
        "",
        Stat,
        "clat histogram log PREFIX_clat_hist.N.log, one line per log_hist_msec and direction (no value: the job name)",
        |j, v, _| {
            j.hist_log = Some(v.s().to_string());
            Ok(())
        }
    ),
    opt!(
        "log_hist_msec",
        [],
        Kind::Int { min: 0, max: U32 },
        "0",
        Stat,
        "write_hist_log writes the clat histogram of the last N ms, per direction, every N ms (0: no lines)",
        |j, v, _| {
            j.log_hist_msec = v.n();
            Ok(())
        }
    ),
    opt!(
        "log_hist_coarseness",
        [],
        Kind::Int { min: 0, max: 6 },
        "0",
        Stat,
        "histogram log lines merge 2^N neighbouring buckets: 1856 >> N bins (0..6)",
        |j, v, _| {
            j.log_hist_coarseness = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "log_offset",
        [],
        Kind::Bool,
        "0",
        Stat,
        "log lines carry the I/O's offset",
        |j, v, _| {
            j.log_offset = v.b();
            Ok(())
        }
    ),
    opt!(
        "per_job_logs",
        [],
        Kind::Bool,
        "1",
        Stat,
        "log file names carry the clone's thread number",
        |j, v, _| {
            j.per_job_logs = v.b();
            Ok(())
        }
    ),
    opt!(
        "log_avg_msec",
        [],
        Kind::Int { min: 0, max: U32 },
        "0",
        Stat,
        "log one line per N ms and direction, the window's average (0: one line per I/O)",
        |j, v, _| {
            j.log_avg_msec = v.n();
            Ok(())
        }
    ),
    opt!(
        "log_max_value",
        [],
        Kind::Bool,
        "0",
        Stat,
        "averaged log lines carry the window's maximum instead of its average",
        |j, v, _| {
            j.log_max = v.b();
            Ok(())
        }
    ),
    opt!(
        "zonemode",
        [],
        Kind::Choice(&["none", "strided", "zbd"]),
        "none (strided with zonesize=)",
        Io,
        "none, strided (zones of zonerange bytes, zonesize bytes of I/O each, zoneskip between) or zbd (zones of zonesize emulated over a regular file or non-zoned device, written at their write pointers)",
        |j, v, _| {
            j.zonemode = match v.s() {
                "none" => Some(ZoneMode::None),
                "strided" => Some(ZoneMode::Strided),
                _ => Some(ZoneMode::Zbd),
            };
            Ok(())
        }
    ),
    opt!(
        "zonesize",
        [],
        Kind::Size,
        "0",
        Io,
        "bytes of I/O done in a zone before moving to the next",
        |j, v, _| {
            j.zonesize = v.size().0;
            Ok(())
        }
    ),
    opt!(
        "zonerange",
        [],
        Kind::Size,
        "zonesize",
        Io,
        "extent of a zone",
        |j, v, _| {
            j.zonerange = v.size().0;
            Ok(())
        }
    ),
    opt!(
        "zoneskip",
        [],
        Kind::Text,
        "0",
        Io,
        "bytes skipped between zones (Nz: N zones)",
        |j, v, o| {
            if let Some(n) = zone_count(v.s(), o)? {
                j.zoneskip = 0;
                j.zone_units.zoneskip = n;
                return Ok(());
            }
            j.zoneskip = size_value(o, value_of(o)?)?.0;
            Ok(())
        }
    ),
    opt!(
        "read_beyond_wp",
        [],
        Kind::Bool,
        "0",
        Io,
        "zonemode=zbd: reads may go past a zone's write pointer",
        |j, v, _| {
            j.read_beyond_wp = v.b();
            Ok(())
        }
    ),
    opt!(
        "max_open_zones",
        [],
        Kind::Int { min: 0, max: 4096 },
        "0",
        Io,
        "zonemode=zbd: zones open for writing at once per file, over all jobs (0 = no limit)",
        |j, v, _| {
            j.max_open_zones = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "job_max_open_zones",
        [],
        Kind::Int { min: 0, max: 4096 },
        "0",
        Io,
        "zonemode=zbd: zones one job clone keeps open at once (0 = no limit)",
        |j, v, _| {
            j.job_max_open_zones = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "zone_reset_threshold",
        [],
        Kind::Text,
        "0",
        Io,
        "zonemode=zbd: fraction (0..1) of the region holding data above which writes reset zones",
        |j, v, o| {
            j.zone_reset_threshold = unit_fraction(v.s(), o)?;
            Ok(())
        }
    ),
    opt!(
        "zone_reset_frequency",
        [],
        Kind::Text,
        "0",
        Io,
        "zonemode=zbd: past the threshold, one write in 1/F resets its zone first (0 = never)",
        |j, v, o| {
            j.zone_reset_frequency = unit_fraction(v.s(), o)?;
            Ok(())
        }
    ),
    opt!(
        "max_latency",
        [],
        Kind::Text,
        "0",
        Io,
        "end the job with ETIMEDOUT when an I/O's latency exceeds this (per direction; bare number: microseconds)",
        |j, v, o| set_per_ddir_with(&mut j.max_latency, v, o, |p| {
            let t = time_value(
                &RawOption {
                    value: Some(p.to_string()),
                    ..o.clone()
                },
                1,
            )?;
            Ok(t.as_nanos() as u64)
        })
    ),
    opt!(
        "latency_target",
        [],
        Kind::Time { default_us: 1 },
        "0",
        Io,
        "find the largest depth (up to iodepth) whose I/Os complete within this (bare number: microseconds)",
        |j, v, _| {
            j.latency_target = Some(v.time()).filter(|t| !t.is_zero());
            Ok(())
        }
    ),
    opt!(
        "latency_window",
        [],
        Kind::Time { default_us: 1 },
        "0",
        Io,
        "window over which latency_target is judged (bare number: microseconds)",
        |j, v, _| {
            j.latency_window = v.time();
            Ok(())
        }
    ),
    opt!(
        "latency_percentile",
        [],
        Kind::Text,
        "100",
        Io,
        "percent of a window's I/Os that must meet latency_target",
        |j, v, o| {
            match v.s().parse::<f64>() {
                Ok(p) if p > 0.0 && p <= 100.0 => {
                    j.latency_percentile = p;
                    Ok(())
                }
                _ => err(
                    &o.origin,
                    format!(
                        "option 'latency_percentile': '{}' is not a percentage in (0, 100]",
                        v.s()
                    ),
                ),
            }
        }
    ),
    opt!(
        "latency_run",
        [],
        Kind::Bool,
        "0",
        Io,
        "keep adjusting the depth for the whole run",
        |j, v, _| {
            j.latency_run = v.b();
            Ok(())
        }
    ),
    opt!(
        "steadystate",
        ["ss"],
        Kind::Text,
        "iops_slope:0.01%",
        Time,
        "steady-state criterion iops|iops_slope|bw|bw_slope:LIMIT[%] (with ss_dur)",
        set_steadystate
    ),
    opt!(
        "steadystate_duration",
        ["ss_dur"],
        Kind::Time { default_us: SEC },
        "0",
        Time,
        "stop once steady for this long (bare number: seconds; 0: no detection)",
        |j, v, _| {
            j.ss_dur = v.time();
            Ok(())
        }
    ),
    opt!(
        "steadystate_ramp_time",
        ["ss_ramp"],
        Kind::Time { default_us: SEC },
        "0",
        Time,
        "time before steady-state samples are taken (bare number: seconds)",
        |j, v, _| {
            j.ss_ramp = v.time();
            Ok(())
        }
    ),
    opt!(
        "io_submit_mode",
        [],
        Kind::Choice(&["inline", "offload"]),
        "inline",
        Engine,
        "inline: the job's thread submits and reaps; offload: it only queues, iodepth submission workers do the I/O (fio's workqueue)",
        |j, v, _| {
            j.io_submit_offload = v.s() == "offload";
            Ok(())
        }
    ),
    opt!(
        "exitall",
        [],
        Kind::Flag,
        "0",
        General,
        "when a job ends, end the jobs exit_what names (fio: set in any job, it holds for all)",
        |j, v, _| {
            j.exitall = v.b();
            Ok(())
        }
    ),
    opt!(
        "exit_what",
        [],
        Kind::Choice(&["group", "stonewall", "all"]),
        "group",
        General,
        "with exitall, what this job's end ends: its reporting group, every running job, or every job",
        |j, v, _| {
            j.exit_what = match v.s() {
                "stonewall" => super::ExitWhat::Stonewall,
                "all" => super::ExitWhat::All,
                _ => super::ExitWhat::Group,
            };
            Ok(())
        }
    ),
    opt!(
        "continue_on_error",
        [],
        Kind::Choice(&["none", "read", "write", "io", "verify", "all", "0", "1"]),
        "none",
        General,
        "error classes that do not end the job (none, read, write, io, verify, all): their errnos in ignore_error= are counted and the job goes on",
        |j, v, _| {
            j.continue_on_error = match v.s() {
                "read" => 1 << ErrorClass::Read as u32,
                "write" => 1 << ErrorClass::Write as u32,
                "io" => (1 << ErrorClass::Read as u32) | (1 << ErrorClass::Write as u32),
                "verify" => 1 << ErrorClass::Verify as u32,
                // fio's ERROR_TYPE_ANY.
                "all" | "1" => 0xffff,
                _ => 0,
            };
            Ok(())
        }
    ),
    opt!(
        "ignore_error",
        [],
        Kind::Text,
        "EIO:EILSEQ per class",
        General,
        "errnos continued on, per class READ,WRITE,VERIFY: ':'-separated names (EPERM..ERANGE) or numbers; a non-empty list turns its class on in continue_on_error",
        |j, v, o| {
            let lists = parse_ignore_error(v.s())
                .or_else(|m| err(&o.origin, format!("ignore_error={}: {m}", v.s())))?;
            for (class, list) in lists.into_iter().enumerate() {
                if let Some(list) = list {
                    j.continue_on_error |= 1 << class;
                    j.ignore_error[class] = Some(list);
                }
            }
            Ok(())
        }
    ),
    opt!(
        "error_dump",
        [],
        Kind::Bool,
        "0",
        General,
        "print every I/O error, also those continue_on_error counts and goes on after",
        |j, v, _| {
            j.error_dump = v.b();
            Ok(())
        }
    ),
    opt!(
        "threads",
        [],
        Kind::Int { min: 0, max: U32 },
        "",
        General,
        "fio's tiobench profile option: outside --profile=tiobench it changes nothing, as in fio",
        |_, _, _| Ok(())
    ),
    // fio options accepted with fio's default value only, where that value is what this
    // engine does; any other value is an error naming what is not supported (a row each, so
    // `--help` and the listing know them).
    opt!(
        "kb_base",
        [],
        Kind::Text,
        "1024",
        Stat,
        "units of the output: 1024 only (fio's default; kb_base=1000, SI units, is not supported)",
        |_, v, o| fio_default_only(
            o,
            v.s(),
            &["1024"],
            "the output is printed in base 1024 units"
        )
    ),
    opt!(
        "unit_base",
        [],
        Kind::Text,
        "0",
        Stat,
        "bandwidth units of the output: 0 (auto) or 8, bytes (1, bits, is not supported)",
        |_, v, o| fio_default_only(o, v.s(), &["0", "8"], "bandwidth is printed in bytes")
    ),
    opt!(
        "significant_figures",
        [],
        Kind::Int { min: 1, max: 10 },
        "4",
        Stat,
        "significant figures of the normal output: 4 only (fio's default)",
        |_, v, o| fio_default_only(o, &v.n().to_string(), &["4"], "the normal output has 4")
    ),
    opt!(
        "bwavgtime",
        [],
        Kind::Int { min: 0, max: U32 },
        "500",
        Stat,
        "bandwidth sampling period, ms: 500 only (fio's default)",
        |_, v, o| fio_default_only(
            o,
            &v.n().to_string(),
            &["500"],
            "bandwidth is sampled every 500 ms"
        )
    ),
    opt!(
        "iopsavgtime",
        [],
        Kind::Int { min: 0, max: U32 },
        "500",
        Stat,
        "IOPS sampling period, ms: 500 only (fio's default)",
        |_, v, o| fio_default_only(
            o,
            &v.n().to_string(),
            &["500"],
            "IOPS are sampled every 500 ms"
        )
    ),
    opt!(
        "disk_util",
        [],
        Kind::Bool,
        "1",
        Stat,
        "disk utilisation statistics: 1 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), true, "disk statistics are always reported")
    ),
    opt!(
        "unified_rw_reporting",
        [],
        Kind::Text,
        "none",
        Stat,
        "per-direction statistics: none (or 0) only (fio's default; mixed and both are not supported)",
        |_, v, o| fio_default_only(
            o,
            v.s(),
            &["none", "0"],
            "statistics are reported per direction"
        )
    ),
    opt!(
        "log_unix_epoch",
        [],
        Kind::Bool,
        "0",
        Stat,
        "log times as Unix-epoch milliseconds (else since the job started)",
        |j, v, _| {
            j.log_unix_epoch = v.b();
            Ok(())
        }
    ),
    opt!(
        "log_alternate_epoch",
        [],
        Kind::Bool,
        "0",
        Stat,
        "log times since another clock's epoch: 0 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), false, "log times are since the job started")
    ),
    opt!(
        "allow_file_create",
        [],
        Kind::Bool,
        "1",
        File,
        "files the job needs may be created: 1 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), true, "missing files are created")
    ),
    opt!(
        "create_only",
        [],
        Kind::Bool,
        "0",
        File,
        "lay the files out and do no I/O: 0 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), false, "the job's I/O runs after the layout")
    ),
    opt!(
        "pre_read",
        [],
        Kind::Bool,
        "0",
        File,
        "read the files into the page cache before the job: 0 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), false, "files are not read in beforehand")
    ),
    opt!(
        "overwrite",
        [],
        Kind::Bool,
        "0",
        File,
        "lay a written file out in full first: 0 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), false, "files are laid out as fio's default does")
    ),
    opt!(
        "exitall_on_error",
        [],
        Kind::Flag,
        "0",
        General,
        "end every job when one fails: 0 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), false, "a failing job ends only itself")
    ),
    opt!(
        "serialize_overlap",
        [],
        Kind::Bool,
        "0",
        Io,
        "keep overlapping I/Os from being in flight together: 0 only (fio's default)",
        |_, v, o| fio_bool_only(
            o,
            v.b(),
            false,
            "in-flight I/Os are not checked for overlap"
        )
    ),
    opt!(
        "thinktime_blocks_type",
        [],
        Kind::Text,
        "complete",
        Time,
        "what thinktime_blocks counts: complete only (fio's default; issue is not supported)",
        |_, v, o| fio_default_only(
            o,
            v.s(),
            &["complete"],
            "thinktime_blocks counts completed I/Os"
        )
    ),
    opt!(
        "thinktime_iotime",
        [],
        Kind::Time { default_us: SEC },
        "0",
        Time,
        "I/O time between thinktimes: 0 only (fio's default)",
        |_, v, o| fio_default_only(
            o,
            if v.time().is_zero() { "0" } else { "not 0" },
            &["0"],
            "thinktime follows thinktime_blocks"
        )
    ),
    opt!(
        "softrandommap",
        [],
        Kind::Bool,
        "0",
        Io,
        "go on without the random map when it cannot be had: 0 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), false, "the random map is always allocated")
    ),
    opt!(
        "write_barrier",
        [],
        Kind::Int { min: 0, max: U32 },
        "0",
        Io,
        "make every Nth write a barrier write: 0 only (fio's default)",
        |_, v, o| fio_default_only(o, &v.n().to_string(), &["0"], "no write is a barrier")
    ),
    opt!(
        "mem",
        ["iomem"],
        Kind::Text,
        "malloc",
        Buffer,
        "where I/O buffers come from: malloc only (fio's default: the heap)",
        |_, v, o| fio_default_only(o, v.s(), &["malloc"], "buffers are heap memory")
    ),
    opt!(
        "experimental_verify",
        [],
        Kind::Bool,
        "0",
        Io,
        "verify by replaying the written offsets: 0 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), false, "verify reads back the logged writes")
    ),
    opt!(
        "verify_state_load",
        [],
        Kind::Bool,
        "0",
        Io,
        "load a saved verify state: 0 only (fio's default)",
        |_, v, o| fio_bool_only(o, v.b(), false, "no verify state is loaded")
    ),
    opt!(
        "trim_percentage",
        [],
        Kind::Int { min: 0, max: 100 },
        "0",
        Io,
        "percent of verified blocks trimmed: 0 only (fio's default)",
        |_, v, o| fio_default_only(
            o,
            &v.n().to_string(),
            &["0"],
            "verified blocks are not trimmed"
        )
    ),
    opt!(
        "iodepth_batch",
        ["iodepth_batch_submit"],
        Kind::Int { min: 0, max: 65536 },
        "1",
        Engine,
        "I/Os submitted at once: 1 (fio's default), or any value that fio makes 1 (iodepth=1); the synchronous engines complete each I/O in its call",
        |j, v, _| {
            j.iodepth_batch = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "iodepth_low",
        [],
        Kind::Int { min: 0, max: 65536 },
        "iodepth",
        Engine,
        "refill the queue when it drains to this depth: iodepth (fio's default; 0 or more is iodepth too)",
        |j, v, _| {
            j.iodepth_low = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "fadvise_hint",
        [],
        Kind::Choice(&["0", "1", "random", "sequential"]),
        "1",
        File,
        "posix_fadvise of each file: 0 none, 1 RANDOM or SEQUENTIAL as the job, random, sequential",
        |j, v, _| {
            j.fadvise_hint = match v.s() {
                "0" => FadviseHint::None,
                "random" => FadviseHint::Random,
                "sequential" => FadviseHint::Sequential,
                _ => FadviseHint::Workload,
            };
            Ok(())
        }
    ),
    opt!(
        "create_fsync",
        [],
        Kind::Bool,
        "1",
        File,
        "fsync a file after laying it out",
        |j, v, _| {
            j.create_fsync = v.b();
            Ok(())
        }
    ),
    opt!(
        "sync",
        [],
        Kind::Choice(&["none", "0", "sync", "1", "dsync"]),
        "none",
        Io,
        "open the job's files with O_SYNC (sync, 1) or O_DSYNC (dsync)",
        |j, v, _| {
            j.sync_io = match v.s() {
                "sync" | "1" => SyncIo::Sync,
                "dsync" => SyncIo::Dsync,
                _ => SyncIo::None,
            };
            Ok(())
        }
    ),
];

/// The errno names fio 3.33's ignore_error= knows (options.c's str2error): EPERM is 1 and each
/// next name the next errno, to ERANGE, 34.
const ERRNO_NAMES: [&str; 34] = [
    "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF", "ECHILD",
    "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV",
    "ENOTDIR", "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC",
    "ESPIPE", "EROFS", "EMLINK", "EPIPE", "EDOM", "ERANGE",
];

/// fio's str_ignore_error_cb: up to three ','-separated lists (READ, WRITE, VERIFY), each of
/// ':'-separated errnos, a name starting with 'E' or a number (C's atoi, sign dropped). A
/// list ends at its first empty entry; an empty list is None (that class keeps what it had).
/// Errors are fio's words.
pub fn parse_ignore_error(text: &str) -> Result<[Option<Vec<i32>>; 3], String> {
    let mut out: [Option<Vec<i32>>; 3] = [None, None, None];
    for (class, list) in text.split(',').enumerate() {
        if class >= out.len() {
            return Err(
                "Illegal error type (give at most three lists: READ,WRITE,VERIFY)".to_string(),
            );
        }
        let mut errnos = Vec::new();
        for name in list.split(':') {
            if name.is_empty() {
                break;
            }
            let errno = if name.starts_with('E') {
                ERRNO_NAMES
                    .iter()
                    .position(|n| *n == name)
                    .map_or(0, |i| i as i32 + 1)
            } else {
                atoi(name).unsigned_abs() as i32
            };
            if errno == 0 {
                return Err(format!(
                    "Unknown error {name}, please use number value (fio names only EPERM to ERANGE, errnos 1 to 34: give others as numbers, e.g. 84 for EILSEQ)"
                ));
            }
            errnos.push(errno);
        }
        if !errnos.is_empty() {
            out[class] = Some(errnos);
        }
    }
    Ok(out)
}

/// C's atoi: leading blanks, an optional sign, the digits up to the first other character
/// (0 when there are none).
fn atoi(s: &str) -> i64 {
    let t = s.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let n = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |n, d| {
            n.saturating_mul(10).saturating_add((d - b'0') as i64)
        });
    if neg { -n } else { n }
}

/// The row of `key` (canonical name or alias).
pub fn lookup(key: &str) -> Option<&'static OptDef> {
    OPTIONS
        .iter()
        .find(|o| o.name == key || o.aliases.contains(&key))
}

/// fio's parse priority of an option (`.prio` in its options.c): a job file's options are
/// parsed, and listed in `job options` and `--showcmd`, highest first (a stable sort).
pub fn fio_prio(def: &OptDef) -> i32 {
    match def.name {
        "lockfile" | "cpus_allowed_policy" | "kb_base" | "unit_base" => 1,
        "filename" | "filename_format" => -1,
        _ => 0,
    }
}

/// Whether the option is one of fio's engine options (an engine's own table, `io_ops->options`,
/// parsed after the general ones once the engine is loaded). The table's `engines` restriction
/// is kept for exactly these: fio's general options apply to every engine.
pub fn is_engine_option(def: &OptDef) -> bool {
    !def.engines.is_empty()
}

/// An option as fio lists it in `job options`, `global options` and `--showcmd`: the row's
/// canonical name (not the alias written) and the value as parsed (after `${VAR}` and bc).
/// A key the table does not know keeps its spelling.
pub fn shown_name(key: &str) -> &str {
    lookup(key).map_or(key, |d| d.name)
}

/// A section's options in fio's listing order: as written on the command line; from a job
/// file, fio's `sort_options` order (priority, highest first) with its engine options after
/// the general ones, as fio's two passes of `fio_options_parse` add them.
pub fn listing_order(opts: &[RawOption], job_file: bool) -> Vec<&RawOption> {
    let mut v: Vec<&RawOption> = opts.iter().collect();
    if job_file {
        v.sort_by_key(|o| match lookup(&o.key) {
            Some(d) => (is_engine_option(d), -fio_prio(d)),
            None => (false, 0),
        });
    }
    v
}

/// Whether `key` is a set-only option (never takes the next command-line word).
pub fn is_set_only(key: &str) -> bool {
    lookup(key).is_some_and(|o| matches!(o.kind, Kind::Flag))
}

/// Canonical names of every option, in table order.
pub fn supported_names() -> Vec<&'static str> {
    OPTIONS.iter().map(|o| o.name).collect()
}

/// One line per option for `--help`: name (aliases), default, help.
pub fn help_text() -> String {
    let mut out = String::new();
    for cat in [
        Category::General,
        Category::Io,
        Category::File,
        Category::Engine,
        Category::Time,
        Category::Buffer,
        Category::Stat,
    ] {
        out.push_str(&format!("\n  {}:\n", cat.as_str()));
        for o in OPTIONS.iter().filter(|o| o.category == cat) {
            let mut name = o.name.to_string();
            if !o.aliases.is_empty() {
                name.push_str(&format!(" ({})", o.aliases.join(", ")));
            }
            let mut line = format!("    {name:<34} {}", o.help);
            if !o.default.is_empty() {
                line.push_str(&format!(" [default {}]", o.default));
            }
            if !o.engines.is_empty() {
                let e: Vec<&str> = o.engines.iter().map(|e| e.as_str()).collect();
                line.push_str(&format!(" [{} only]", e.join(", ")));
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

fn value_of(opt: &RawOption) -> Result<&str, JobFileError> {
    match &opt.value {
        Some(v) if !v.is_empty() => Ok(v.as_str()),
        _ => err(&opt.origin, format!("option '{}' needs a value", opt.key)),
    }
}

fn parse_bool(opt: &RawOption) -> Result<bool, JobFileError> {
    let Some(v) = &opt.value else {
        return Ok(true);
    };
    match v.to_ascii_lowercase().as_str() {
        "" | "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => err(
            &opt.origin,
            format!("option '{}': '{v}' is not a boolean (use 0 or 1)", opt.key),
        ),
    }
}

fn parse_int(opt: &RawOption, min: u64, max: u64) -> Result<u64, JobFileError> {
    let v = value_of(opt)?;
    match expr::parse_number(v) {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        Ok(n) => err(
            &opt.origin,
            format!("option '{}': {n} is out of range {min}..={max}", opt.key),
        ),
        Err(e) if e.contains("must be positive") => {
            err(&opt.origin, format!("option '{}': {e}", opt.key))
        }
        Err(_) => err(
            &opt.origin,
            format!("option '{}': '{v}' is not a whole number", opt.key),
        ),
    }
}

/// A byte count: no percentage, no range.
pub(super) fn size_value(opt: &RawOption, v: &str) -> Result<Bytes, JobFileError> {
    let t = v.trim();
    if !t.starts_with('(') && !t.starts_with('-') && (t.contains('-') || t.contains(':')) {
        return err(
            &opt.origin,
            format!(
                "option '{}': ranges such as '{v}' are not supported",
                opt.key
            ),
        );
    }
    match parse_size(t) {
        Ok(SizeValue::Bytes(b)) => Ok(b),
        Ok(SizeValue::Percent(_)) => err(
            &opt.origin,
            format!("option '{}' does not take a percentage", opt.key),
        ),
        Err(e) => err(&opt.origin, format!("option '{}': {e}", opt.key)),
    }
}

fn time_value(opt: &RawOption, default_us: u64) -> Result<Duration, JobFileError> {
    let v = value_of(opt)?;
    let t = v.trim();
    if !t.starts_with('(') && !t.starts_with('-') && t.contains('-') {
        return err(
            &opt.origin,
            format!(
                "option '{}': ranges such as '{v}' are not supported",
                opt.key
            ),
        );
    }
    parse_time_unit(t, default_us)
        .or_else(|e| err(&opt.origin, format!("option '{}': {e}", opt.key)))
}

fn choice_err<T>(opt: &RawOption, v: &str, choices: &str) -> Result<T, JobFileError> {
    err(
        &opt.origin,
        format!(
            "option '{}': '{v}' is not supported (choose one of: {choices})",
            opt.key
        ),
    )
}

/// A row accepting fio's default only: `v` must be one of `accepted`; otherwise an error naming
/// the option and value, and `what` this engine does instead.
fn fio_default_only(
    o: &RawOption,
    v: &str,
    accepted: &[&str],
    what: &str,
) -> Result<(), JobFileError> {
    if accepted.contains(&v.trim()) {
        return Ok(());
    }
    err(
        &o.origin,
        format!(
            "option '{}={}' is not supported by fsdelta's fio engine ({what}; accepted: {})",
            o.key,
            o.value.as_deref().unwrap_or("1"),
            accepted.join(", ")
        ),
    )
}

/// [`fio_default_only`] for a boolean row: only `accepted`.
fn fio_bool_only(o: &RawOption, v: bool, accepted: bool, what: &str) -> Result<(), JobFileError> {
    let shown = if v { "1" } else { "0" };
    fio_default_only(o, shown, &[if accepted { "1" } else { "0" }], what)
}

/// The error for an option that is not in the table.
pub fn unsupported(opt: &RawOption) -> JobFileError {
    JobFileError {
        origin: opt.origin.clone(),
        message: format!(
            "option '{}' is not supported by fsdelta's fio engine; supported options: {}",
            opt.key,
            supported_names().join(", ")
        ),
    }
}

/// Read `opt` as its row says and store it into `job`; returns the row.
pub fn apply(job: &mut JobSpec, opt: &RawOption) -> Result<&'static OptDef, JobFileError> {
    let Some(def) = lookup(&opt.key) else {
        return Err(unsupported(opt));
    };
    let val = match def.kind {
        Kind::Bool | Kind::Flag => Val::Bool(parse_bool(opt)?),
        Kind::Int { min, max } => Val::Int(parse_int(opt, min, max)?),
        Kind::Size => Val::Size(size_value(opt, value_of(opt)?)?),
        Kind::Time { default_us } => Val::Time(time_value(opt, default_us)?),
        Kind::Choice(choices) => {
            let v = value_of(opt)?;
            if !choices.contains(&v) {
                return choice_err(opt, v, &choices.join(", "));
            }
            Val::Text(v)
        }
        Kind::Text => Val::Text(opt.value.as_deref().map(str::trim).unwrap_or_default()),
    };
    (def.set)(job, val, opt)?;
    Ok(def)
}

/// The CPUs this machine has configured (fio's cpus_configured, sysconf(_SC_NPROCESSORS_CONF)).
fn cpus_configured() -> usize {
    // SAFETY: sysconf reads a system value and has no other effect.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    n.max(1) as usize
}

/// A CPU set as fio checks it (str_cpumask_cb, set_cpus_allowed): a CPU past the machine's is
/// fio's "CPU N too large (max=M)"; an empty set, which fio accepts and then fails the job
/// with EINVAL from sched_setaffinity, is refused here.
fn cpu_set(
    mut cpus: Vec<usize>,
    option: &str,
    value: &str,
    o: &RawOption,
) -> Result<Vec<usize>, JobFileError> {
    let max = cpus_configured();
    if let Some(&c) = cpus.iter().find(|&&c| c >= max) {
        return err(
            &o.origin,
            format!(
                "option '{option}={value}': CPU {c} too large (max={}) (fio: \"failed parsing {option}={value}\"; this machine has CPUs 0-{})",
                max - 1,
                max - 1
            ),
        );
    }
    cpus.sort_unstable();
    cpus.dedup();
    if cpus.is_empty() {
        return err(
            &o.origin,
            format!(
                "option '{option}={value}': selects no CPU (fio would fail the job with EINVAL from sched_setaffinity); name at least one CPU"
            ),
        );
    }
    Ok(cpus)
}

/// fio's CPU list (set_cpus_allowed): comma-separated N or N-M.
fn cpu_list(v: &str, option: &str, o: &RawOption) -> Result<Vec<usize>, JobFileError> {
    let bad = |part: &str| {
        err(
            &o.origin,
            format!("option '{option}={v}': '{part}' is not a CPU or a range N-M (example: 0-1,3)"),
        )
    };
    let mut cpus = Vec::new();
    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) else {
            return bad(part);
        };
        if b < a {
            return bad(part);
        }
        cpus.extend(a..=b.min(a + 65536));
    }
    cpu_set(cpus, option, v, o)
}

fn colon_list(v: &str, o: &RawOption, what: &str) -> Result<Vec<String>, JobFileError> {
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let list: Vec<String> = v.split(':').map(str::to_string).collect();
    if list.iter().any(String::is_empty) {
        return err(
            &o.origin,
            format!("option '{what}': empty name in ':' list"),
        );
    }
    Ok(list)
}

fn set_rw(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let whole = v.s();
    if whole.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let (v, modifier) = match whole.split_once(':') {
        Some((m, n)) => (m, Some(n.trim())),
        None => (whole, None),
    };
    // fio's str_rw_cb: every rw= starts from no modifier.
    j.rw_modifier = 0;
    j.rw_seq_nr = 1;
    if let Some(n) = modifier {
        if v.starts_with("rand") {
            // fio 3.33 reads the count with atoi: "8k" is 8 there and 8192 in later fio, and
            // 0 or garbage silently makes every I/O sequential; only a plain count is taken.
            j.rw_seq_nr = match n.parse::<u32>() {
                Ok(c) if c > 0 && n.bytes().all(|b| b.is_ascii_digit()) => c,
                _ => {
                    return err(
                        &o.origin,
                        format!(
                            "option 'rw': '{whole}': '{n}' is not a count of I/Os per random offset; write a whole number from 1 to {} (e.g. '{v}:8')",
                            u32::MAX
                        ),
                    );
                }
            };
            return set_rw_mode(j, v, o);
        }
        let (neg, digits) = match n.strip_prefix('-') {
            Some(d) => (true, d.trim()),
            None => (false, n),
        };
        let b = match parse_size(digits) {
            Ok(SizeValue::Bytes(b)) if b.0 <= i64::MAX as u64 => b.0 as i64,
            _ => {
                return err(
                    &o.origin,
                    format!("option 'rw': '{whole}': '{n}' is not a size"),
                );
            }
        };
        j.rw_modifier = if neg { -b } else { b };
    }
    set_rw_mode(j, v, o)
}

/// The direction part of rw= (before any ':' modifier).
fn set_rw_mode(j: &mut JobSpec, v: &str, o: &RawOption) -> Result<(), JobFileError> {
    j.rw = match v {
        "read" => RwMode::Read,
        "write" => RwMode::Write,
        "randread" => RwMode::RandRead,
        "randwrite" => RwMode::RandWrite,
        "rw" | "readwrite" => RwMode::ReadWrite,
        "randrw" => RwMode::RandRw,
        "trim" => RwMode::Trim,
        "randtrim" => RwMode::RandTrim,
        "trimwrite" => RwMode::TrimWrite,
        "randtrimwrite" => RwMode::RandTrimWrite,
        _ => {
            return choice_err(
                o,
                v,
                &format!(
                    "{}, each with an optional ':SIZE' hole after every I/O (sequential) or ':N' I/Os per random offset (random)",
                    RW_CHOICES.join(", ")
                ),
            );
        }
    };
    Ok(())
}

/// fio's per-direction value (rate=, rate_iops=, ...): `N` sets every direction,
/// `R,W` sets read and write and trim takes W, `R,W,T` each; an empty part leaves its
/// direction unset (0), as fio's parser.
fn set_per_ddir(out: &mut [u64; 3], v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    set_per_ddir_with(out, v, o, |p| Ok(size_value(o, p)?.0))
}

/// A per-direction option (`N` for all three, `R,W,T` each; an empty part leaves that
/// direction, and the last value given also sets the directions after it), each part read by
/// `value`.
fn set_per_ddir_with(
    out: &mut [u64; 3],
    v: Val<'_>,
    o: &RawOption,
    value: impl Fn(&str) -> Result<u64, JobFileError>,
) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() > 3 {
        return err(
            &o.origin,
            format!(
                "option '{}': '{v}': at most three values (READ,WRITE,TRIM)",
                o.key
            ),
        );
    }
    let mut last = 0;
    for (i, p) in parts.iter().enumerate() {
        if p.trim().is_empty() {
            continue;
        }
        last = value(p)?;
        out[i] = last;
    }
    if !parts[parts.len() - 1].trim().is_empty() {
        for x in out.iter_mut().skip(parts.len()) {
            *x = last;
        }
    }
    Ok(())
}

fn set_engine(j: &mut JobSpec, v: Val<'_>, _o: &RawOption) -> Result<(), JobFileError> {
    j.ioengine = match v.s() {
        "psync" => IoEngine::Psync,
        "sync" => IoEngine::Sync,
        "pvsync" => IoEngine::Pvsync,
        "io_uring" => IoEngine::IoUring,
        "libaio" => IoEngine::Libaio,
        "filestat" => IoEngine::FileStat,
        "filedelete" => IoEngine::FileDelete,
        "null" => IoEngine::Null,
        "falloc" => IoEngine::Falloc,
        "ftruncate" => IoEngine::Ftruncate,
        "pvsync2" => IoEngine::Pvsync2,
        "posixaio" => IoEngine::Posixaio,
        "vsync" => IoEngine::Vsync,
        "mmap" => IoEngine::Mmap,
        _ => IoEngine::FileCreate,
    };
    Ok(())
}

/// A per-direction cmdprio_* number (fio's two-offset FIO_OPT_INT).
fn set_cmdprio(
    dst: &mut [u32; 2],
    v: Val<'_>,
    o: &RawOption,
    min: u64,
    max: u64,
) -> Result<(), JobFileError> {
    let vals = super::cmdprio::parse_per_dir(v.s(), min, max)
        .or_else(|e| err(&o.origin, format!("option '{}': {e}", o.key)))?;
    for (d, x) in dst.iter_mut().zip(vals) {
        if let Some(x) = x {
            *d = x;
        }
    }
    Ok(())
}

fn set_bs(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() > 3 {
        return err(
            &o.origin,
            format!("option 'bs': '{v}': at most three sizes (bs=READ,WRITE,TRIM)"),
        );
    }
    for (i, p) in parts.iter().enumerate() {
        if p.trim().is_empty() {
            continue;
        }
        let b = size_value(o, p)?;
        if b.0 == 0 {
            return err(&o.origin, "option 'bs' must be greater than 0");
        }
        if i == 2 {
            // The trim size (bs=R,W,T); without it trims take the write size (bs[1]).
            j.bs_minmax[2] = Some((b, b));
            continue;
        }
        j.bs[i] = b;
        if parts.len() == 1 {
            j.bs[1] = b;
        }
    }
    Ok(())
}

/// `bsrange=LOW-HIGH[,LOW-HIGH[,LOW-HIGH]]` (or `LOW:HIGH`) as fio's FIO_OPT_RANGE: one range
/// for all directions, or read then write (trim takes the write one); the ends are swapped
/// when LOW > HIGH; an empty part keeps that direction as it was.
fn set_bsrange(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let parts: Vec<&str> = v.split(',').collect();
    for (i, p) in parts.iter().enumerate().take(3) {
        if p.trim().is_empty() && parts.len() > 1 {
            continue;
        }
        let Some((lo, hi)) = p.split_once(['-', ':']) else {
            return err(
                &o.origin,
                format!(
                    "option '{}': '{p}' is not a range LOW-HIGH (e.g. 4k-16k)",
                    o.key
                ),
            );
        };
        let (mut lo, mut hi) = (size_value(o, lo)?, size_value(o, hi)?);
        if lo > hi {
            std::mem::swap(&mut lo, &mut hi);
        }
        if lo.0 == 0 {
            return err(
                &o.origin,
                format!("option '{}' must be greater than 0", o.key),
            );
        }
        let last = i == parts.len().min(3) - 1;
        for d in i..if last { 3 } else { i + 1 } {
            j.bs_minmax[d] = Some((lo, hi));
        }
    }
    Ok(())
}

/// `bssplit=SIZE/PERC:...[,WRITE[,TRIM]]` (fio's str_bssplit_cb): each direction with entries
/// gets them, and its smallest and largest size become its min and max block size.
fn set_bssplit(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let dirs = super::split::per_direction(v);
    let mut parsed = Vec::with_capacity(3);
    for text in dirs {
        let (entries, dropped) = super::split::bssplit_dir(text)
            .or_else(|why| err(&o.origin, format!("option 'bssplit': '{v}': {why}")))?;
        if dropped {
            return err(
                &o.origin,
                format!(
                    "option 'bssplit': '{v}': more than {} entries in a direction",
                    super::split::SPLIT_MAX
                ),
            );
        }
        parsed.push(entries);
    }
    for (d, entries) in parsed.into_iter().enumerate() {
        if entries.is_empty() {
            continue;
        }
        let lo = entries.iter().map(|e| e.bs).min().unwrap_or(Bytes(4096));
        let hi = entries.iter().map(|e| e.bs).max().unwrap_or(Bytes(4096));
        j.bs_minmax[d] = Some((lo, hi));
        j.bssplit[d] = entries;
    }
    Ok(())
}

/// `ba=N[,N[,N]]` (blockalign): read, write, trim; one value is all three, two give trim the
/// write one (fio's FIO_OPT_ULL with three offsets).
fn set_blockalign(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let parts: Vec<&str> = v.split(',').collect();
    for (i, p) in parts.iter().enumerate().take(3) {
        if p.trim().is_empty() {
            continue;
        }
        let b = size_value(o, p)?;
        if b.0 == 0 {
            return err(
                &o.origin,
                format!("option '{}': min value out of range: 0 (1 min)", o.key),
            );
        }
        let last = i == parts.len().min(3) - 1;
        for d in i..if last { 3 } else { i + 1 } {
            j.blockalign[d] = Some(b);
        }
    }
    Ok(())
}

fn set_random_distribution(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let v = v.s();
    let mut parts = v.split(':');
    let kind = parts.next().unwrap_or("");
    let mut num = |default: f64| -> Result<Option<f64>, JobFileError> {
        match parts.next() {
            None => Ok(Some(default).filter(|d| !d.is_nan())),
            Some(t) => t.trim().parse::<f64>().map(Some).or_else(|_| {
                err(
                    &o.origin,
                    format!("option 'random_distribution': '{t}' in '{v}' is not a number"),
                )
            }),
        }
    };
    let center_ok = |c: Option<f64>| -> Result<Option<f64>, JobFileError> {
        match c {
            Some(c) if !(0.0..=1.0).contains(&c) => err(
                &o.origin,
                "option 'random_distribution': the center must be in 0..=1",
            ),
            c => Ok(c),
        }
    };
    j.random_distribution = match kind {
        "random" => RandomDistribution::Random,
        "zipf" => {
            let theta = num(1.1)?.unwrap_or(1.1);
            if theta == 1.0 || theta <= 0.0 {
                return err(
                    &o.origin,
                    "option 'random_distribution': zipf theta must be positive and not 1.0",
                );
            }
            let center = center_ok(num(f64::NAN)?)?;
            RandomDistribution::Zipf { theta, center }
        }
        "pareto" => {
            let h = num(0.2)?.unwrap_or(0.2);
            if h <= 0.0 || h >= 1.0 {
                return err(
                    &o.origin,
                    "option 'random_distribution': pareto input must be in (0, 1)",
                );
            }
            let center = center_ok(num(f64::NAN)?)?;
            RandomDistribution::Pareto { h, center }
        }
        "normal" => {
            // fio's default deviation for normal is 0.0
            let dev = num(0.0)?.unwrap_or(0.0);
            if !(0.0..100.0).contains(&dev) {
                return err(
                    &o.origin,
                    "option 'random_distribution': normal deviation out of range (0 <= input < 100.0)",
                );
            }
            let center = center_ok(num(f64::NAN)?)?;
            RandomDistribution::Normal { dev, center }
        }
        "zoned" => RandomDistribution::Zoned {
            index: Box::new(zoned_index(v, o)?),
        },
        "zoned_abs" => RandomDistribution::ZonedAbs {
            index: Box::new(zoned_abs_index(v, o)?),
        },
        _ => {
            return choice_err(
                o,
                v,
                "random, zipf[:THETA[:CENTER]], pareto[:H[:CENTER]], normal[:DEV[:CENTER]], zoned:A/S[:A/S...], zoned_abs:A/SIZE[:A/SIZE...]",
            );
        }
    };
    Ok(())
}

/// A fraction in 0..=1 (fio's FIO_OPT_FLOAT_LIST with minfp 0, maxfp 1).
fn unit_fraction(v: &str, o: &RawOption) -> Result<f64, JobFileError> {
    match v.trim().parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => err(
            &o.origin,
            format!("option '{}': '{v}' is not a number from 0 to 1", o.key),
        ),
    }
}

/// An error in the zone split `v` of random_distribution.
fn zone_split_err<T>(v: &str, o: &RawOption, why: &str) -> Result<T, JobFileError> {
    err(
        &o.origin,
        format!("option 'random_distribution': '{v}': {why}"),
    )
}

/// The entries after `KIND:` of a zoned / zoned_abs split: not empty, one split for every
/// direction (`,` lists are refused).
fn zone_split_spec<'v>(
    v: &'v str,
    o: &RawOption,
    kind: &str,
    entry: &str,
    example: &str,
) -> Result<&'v str, JobFileError> {
    let spec = v
        .strip_prefix(kind)
        .and_then(|r| r.strip_prefix(':'))
        .unwrap_or("");
    if spec.is_empty() {
        return zone_split_err(
            v,
            o,
            &format!("{kind} needs {entry} entries, e.g. {kind}:{example}"),
        );
    }
    if spec.contains(',') {
        return zone_split_err(
            v,
            o,
            &format!("per-direction {kind} splits (',') are not supported"),
        );
    }
    Ok(spec)
}

/// fio's zone_split_ddir and __td_zone_gen_index for `zoned:A/S:A/S...` (one split for every
/// direction): access percentages must add up to 100, a missing size percentage gets an equal
/// part of what the others leave.
fn zoned_index(v: &str, o: &RawOption) -> Result<[(u8, u8); 100], JobFileError> {
    let bad = |why: &str| zone_split_err(v, o, why);
    let spec = zone_split_spec(v, o, "zoned", "ACCESS%/SIZE%", "60/10:30/20:10/70")?;
    let mut entries: Vec<(u32, Option<u32>)> = Vec::new();
    for part in spec.split(':') {
        let (a, s) = part.split_once('/').unwrap_or((part, ""));
        let num = |t: &str| t.trim().trim_end_matches('%').parse::<u32>().ok();
        let Some(a) = num(a).filter(|a| *a <= 100) else {
            return bad(&format!("'{part}' is not ACCESS%/SIZE%"));
        };
        let s = if s.trim().is_empty() {
            None
        } else {
            match num(s).filter(|s| *s <= 100) {
                Some(s) => Some(s),
                None => return bad(&format!("'{part}' is not ACCESS%/SIZE%")),
            }
        };
        entries.push((a, s));
    }
    let access: u32 = entries.iter().map(|e| e.0).sum();
    let sized: u32 = entries.iter().filter_map(|e| e.1).sum();
    if access > 100 || sized > 100 {
        return bad("percentages add to more than 100%");
    }
    if access < 100 {
        return bad(&format!("access percentages add up to {access}, not 100"));
    }
    let missing = entries.iter().filter(|e| e.1.is_none()).count() as u32;
    let mut index = [(0u8, 0u8); 100];
    let (mut aprev, mut sprev) = (0usize, 0u32);
    for (a, s) in entries {
        let s = s.unwrap_or_else(|| (100 - sized) / missing.max(1));
        for slot in index.iter_mut().skip(aprev).take(a as usize) {
            *slot = (sprev as u8, (sprev + s) as u8);
        }
        aprev += a as usize;
        sprev += s;
    }
    Ok(index)
}

/// fio's zone_split_ddir with `absolute` and __td_zone_gen_index for
/// `zoned_abs:A/SIZE:A/SIZE...` (one split for every direction): access percentages must add
/// up to 100; a missing size is 0 bytes, as in fio.
fn zoned_abs_index(v: &str, o: &RawOption) -> Result<[(u64, u64); 100], JobFileError> {
    let bad = |why: &str| zone_split_err(v, o, why);
    let spec = zone_split_spec(v, o, "zoned_abs", "ACCESS%/SIZE", "60/1g:40/9g")?;
    let mut entries: Vec<(u32, u64)> = Vec::new();
    // fio's split_parse_ddir stops at the first empty entry.
    for part in spec.split(':').take_while(|p| !p.is_empty()) {
        let (a, s) = match part.split_once('/') {
            Some((a, s)) => (a, Some(s)),
            None => (part, None),
        };
        let a = match a.trim().trim_end_matches('%').parse::<u32>() {
            Ok(a) if a <= 100 => a,
            _ => return bad(&format!("'{part}': '{a}' is not an access percentage")),
        };
        let size = match s {
            None => 0,
            Some(s) => match parse_size(s) {
                Ok(SizeValue::Bytes(b)) => b.0,
                _ => return bad(&format!("'{part}': '{s}' is not a size in bytes")),
            },
        };
        entries.push((a, size));
    }
    let access: u32 = entries.iter().map(|e| e.0).sum();
    if access > 100 {
        return bad("percentages add to more than 100%");
    }
    if access < 100 {
        return bad(&format!("access percentages add up to {access}, not 100"));
    }
    let mut index = [(0u64, 0u64); 100];
    let (mut aprev, mut sprev) = (0usize, 0u64);
    for (a, size) in entries {
        let a = a as usize;
        for slot in index.iter_mut().skip(aprev).take(a) {
            *slot = (sprev, sprev + size);
        }
        aprev += a;
        sprev += size;
    }
    Ok(index)
}

fn set_steadystate(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let v = v.s();
    let (kind, limit) = v.split_once(':').unwrap_or((v, ""));
    let kind = match kind {
        "iops" => SteadyKind::Iops,
        "iops_slope" => SteadyKind::IopsSlope,
        "bw" => SteadyKind::Bw,
        "bw_slope" => SteadyKind::BwSlope,
        _ => return choice_err(o, v, "iops, iops_slope, bw, bw_slope, each :LIMIT[%]"),
    };
    let (num, percent) = match limit.strip_suffix('%') {
        Some(n) => (n, true),
        None => (limit, false),
    };
    let Ok(limit) = num.trim().parse::<f64>() else {
        return err(
            &o.origin,
            format!("option '{}': '{v}' needs a limit, e.g. iops:10%", o.key),
        );
    };
    if limit < 0.0 {
        return err(
            &o.origin,
            format!("option '{}': the limit must be >= 0", o.key),
        );
    }
    j.ss = SteadyState {
        kind,
        limit,
        percent,
    };
    Ok(())
}

/// fio's FIO_OPT_STR_VAL_ZONE: a value ending in `z` is a count of zones (strtoul's digits
/// right before the `z`, kept as a 32-bit count as fio's cast); other text before it is fio's
/// "unexpected zone value". `None`: not a zone value.
pub(super) fn zone_count(v: &str, o: &RawOption) -> Result<Option<u32>, JobFileError> {
    let t = v.trim();
    let Some(num) = t.strip_suffix('z') else {
        return Ok(None);
    };
    match num.parse::<u64>() {
        Ok(n) if !num.starts_with('+') => Ok(Some(n as u32)),
        _ => err(
            &o.origin,
            format!(
                "option '{}': unexpected zone value '{t}' (N z: N zones of zonesize)",
                o.key
            ),
        ),
    }
}

fn set_size(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    if let Some(n) = zone_count(v, o)? {
        // fio's str_size_cb: size 0 (not given) until the zones are counted.
        j.size = None;
        j.zone_units.size = n;
        return Ok(());
    }
    j.size = Some(match parse_size(v) {
        Ok(SizeValue::Bytes(b)) => SizeSpec::Bytes(b),
        Ok(SizeValue::Percent(p)) if (1..=100).contains(&p) => SizeSpec::Percent(p as u32),
        Ok(SizeValue::Percent(p)) => {
            return err(&o.origin, format!("option 'size': {p}% is not in 1..=100"));
        }
        Err(e) => return err(&o.origin, format!("option 'size': {e}")),
    });
    Ok(())
}

fn set_filesize(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let range = match v.split_once([':', '-']).filter(|(lo, _)| !lo.is_empty()) {
        Some((lo, hi)) => {
            let (low, high) = (size_value(o, lo)?, size_value(o, hi)?);
            if low > high {
                return err(
                    &o.origin,
                    format!("option 'filesize': range '{v}' runs backwards"),
                );
            }
            SizeRange { low, high }
        }
        None => SizeRange::fixed(size_value(o, v)?),
    };
    if range.low.0 == 0 {
        return err(
            &o.origin,
            "option 'filesize' must be at least 1 byte, as in fio (for empty files use ioengine=filecreate: it creates the files empty whatever their filesize, e.g. filesize=4k as fsperf's emptyfiles500k)",
        );
    }
    j.filesize = Some(range);
    Ok(())
}

fn set_file_service(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let (kind, n) = match v.split_once(':') {
        Some((k, n)) => match n.parse::<u32>() {
            Ok(n) if n > 0 => (k, n),
            _ => {
                return err(
                    &o.origin,
                    format!("option 'file_service_type': bad count in '{v}'"),
                );
            }
        },
        None => (v, 1),
    };
    j.file_service_type = match kind {
        "roundrobin" => FileService::RoundRobin(n),
        "random" => FileService::Random(n),
        "sequential" if n == 1 => FileService::Sequential,
        _ => return choice_err(o, v, "roundrobin[:N], random[:N], sequential"),
    };
    Ok(())
}

fn set_percentile_list(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let mut list = Vec::new();
    for p in v.split(':') {
        match p.trim().parse::<f64>() {
            Ok(f) if f > 0.0 && f <= 100.0 => list.push(f),
            _ => {
                return err(
                    &o.origin,
                    format!("option 'percentile_list': '{p}' is not a percentile in (0, 100]"),
                );
            }
        }
    }
    if list.len() > 20 {
        return err(&o.origin, "option 'percentile_list': at most 20 entries");
    }
    // fio sorts the list.
    list.sort_by(f64::total_cmp);
    j.percentile_list = list;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for o in OPTIONS {
            for n in std::iter::once(&o.name).chain(o.aliases.iter()) {
                assert!(seen.insert(*n), "duplicate option name {n}");
            }
        }
    }

    #[test]
    fn steadystate_options_parse_as_fios() {
        let j = crate::fio::jobfile::parse_job_text(
            "[s]\nss=bw_slope:1%\nss_dur=30\nss_ramp=5s\n",
            "t.fio",
            &crate::fio::jobfile::SystemSources,
        )
        .unwrap()
        .jobs
        .remove(0);
        assert_eq!(j.ss.kind, SteadyKind::BwSlope);
        assert!(j.ss.percent && j.ss.limit == 1.0);
        assert_eq!(j.ss_dur, Duration::from_secs(30));
        assert_eq!(j.ss_ramp, Duration::from_secs(5));
        for bad in ["[s]\nss=lat:1%\n", "[s]\nss=iops\n"] {
            assert!(
                crate::fio::jobfile::parse_job_text(
                    bad,
                    "t.fio",
                    &crate::fio::jobfile::SystemSources
                )
                .is_err(),
                "{bad}"
            );
        }
    }

    /// continue_on_error=, ignore_error= and error_dump= as fio 3.33's options.c reads them.
    #[test]
    fn cpu_options_parse_as_fios() {
        use crate::fio::jobfile::{SystemSources, parse_job_text};
        let job = |text: &str| {
            parse_job_text(&format!("[c]\n{text}"), "t.fio", &SystemSources)
                .map(|mut s| s.jobs.remove(0))
                .map_err(|e| e.to_string())
        };
        let j = job("").unwrap();
        assert_eq!(
            (j.cpumask, j.cpus_split, j.verify_cpumask),
            (None, false, None)
        );
        let j = job("cpus_allowed=0,0-0\ncpus_allowed_policy=split\n").unwrap();
        assert_eq!((j.cpumask, j.cpus_split), (Some(vec![0]), true));
        assert_eq!(job("cpumask=0x1\n").unwrap().cpumask, Some(vec![0]));
        assert_eq!(job("cpumask=1\n").unwrap().cpumask, Some(vec![0]));
        assert_eq!(
            job("verify_async_cpus=0\n").unwrap().verify_cpumask,
            Some(vec![0])
        );
        // fio's words for a CPU past the machine's; the rest refused with what to write.
        let e = job("cpus_allowed=0,4096\n").unwrap_err();
        assert!(
            e.contains("t.fio:2") && e.contains("CPU 4096 too large (max="),
            "{e}"
        );
        let e = job("cpumask=0x8000000000000000\n").unwrap_err();
        assert!(e.contains("CPU 63 too large"), "{e}");
        for (text, want) in [
            ("cpumask=0\n", "selects no CPU"),
            ("cpumask=z\n", "not a number"),
            ("cpus_allowed=1-0\n", "'1-0' is not a CPU or a range"),
            ("cpus_allowed=a\n", "'a' is not a CPU"),
            ("cpus_allowed=\n", "selects no CPU"),
            ("cpus_allowed_policy=spread\n", "choose one of"),
        ] {
            let e = job(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn error_options_parse_as_fios() {
        use crate::fio::jobfile::{ErrorClass, SystemSources, parse_job_text};
        let job = |text: &str| {
            parse_job_text(&format!("[e]\n{text}"), "t.fio", &SystemSources)
                .map(|mut s| s.jobs.remove(0))
        };
        let j = job("").unwrap();
        assert_eq!(j.continue_on_error, 0);
        assert!(!j.error_dump);
        // Without ignore_error= a continued class goes on after EIO and EILSEQ only.
        let j = job("continue_on_error=io\n").unwrap();
        assert!(j.error_continues(ErrorClass::Read, libc::EIO));
        assert!(j.error_continues(ErrorClass::Write, libc::EILSEQ));
        assert!(!j.error_continues(ErrorClass::Write, libc::ENOSPC));
        assert!(!j.error_continues(ErrorClass::Verify, libc::EILSEQ));
        for (word, mask) in [
            ("none", 0),
            ("0", 0),
            ("read", 1),
            ("write", 2),
            ("io", 3),
            ("verify", 4),
            ("all", 0xffff),
            ("1", 0xffff),
        ] {
            let j = job(&format!("continue_on_error={word}\n")).unwrap();
            assert_eq!(j.continue_on_error, mask, "{word}");
        }
        assert!(job("continue_on_error=sometimes\n").is_err());
        // The enospc-pressure example: the WRITE list alone, which also turns writes on.
        let j = job("ignore_error=,ENOSPC\nerror_dump=0\n").unwrap();
        assert_eq!(j.continue_on_error, 2);
        assert_eq!(j.ignore_error, [None, Some(vec![libc::ENOSPC]), None]);
        assert!(j.error_continues(ErrorClass::Write, libc::ENOSPC));
        assert!(!j.error_continues(ErrorClass::Write, libc::EIO));
        assert!(!j.error_continues(ErrorClass::Read, libc::EIO));
        // Names and numbers (sign dropped, as atoi's), three lists; a list ends at an empty
        // entry; continue_on_error= after it sets the classes anew.
        let j = job("ignore_error=EIO:5:-28,ENOSPC::EIO,84\n").unwrap();
        assert_eq!(
            j.ignore_error,
            [
                Some(vec![libc::EIO, 5, libc::ENOSPC]),
                Some(vec![libc::ENOSPC]),
                Some(vec![libc::EILSEQ])
            ]
        );
        assert_eq!(j.continue_on_error, 7);
        let j = job("ignore_error=EIO\ncontinue_on_error=write\nerror_dump\n").unwrap();
        assert_eq!(j.continue_on_error, 2);
        assert!(j.error_dump);
        assert!(!j.error_continues(ErrorClass::Read, libc::EIO));
        // fio's errors: a name it does not know (EILSEQ included: give 84), a word, a fourth
        // list.
        for (bad, says) in [
            (
                "ignore_error=EFOO",
                "Unknown error EFOO, please use number value",
            ),
            (
                "ignore_error=,EILSEQ",
                "Unknown error EILSEQ, please use number value",
            ),
            (
                "ignore_error=abc",
                "Unknown error abc, please use number value",
            ),
            ("ignore_error=,,,EIO", "Illegal error type"),
        ] {
            let e = job(&format!("{bad}\n")).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("t.fio:2"), "{bad}: {e}");
        }
        // Where fsdelta does not continue: refused, naming the option.
        for bad in [
            "continue_on_error=all\nioengine=filecreate\n",
            "ignore_error=EIO\nio_submit_mode=offload\n",
        ] {
            let e = job(bad).unwrap_err().to_string();
            assert!(e.contains("continue_on_error / ignore_error"), "{bad}: {e}");
        }
    }

    /// fio's zone_state_index for the rand-zones example's split.
    #[test]
    fn zoned_split_index_is_fios() {
        let o = RawOption {
            key: "random_distribution".into(),
            value: None,
            origin: super::super::Origin {
                file: "t".into(),
                line: 1,
            },
        };
        let idx = zoned_index("zoned:50/5:30/15:20/", &o).unwrap();
        assert!(idx[..50].iter().all(|e| *e == (0, 5)));
        assert!(idx[50..80].iter().all(|e| *e == (5, 20)));
        assert!(idx[80..].iter().all(|e| *e == (20, 100)));
        assert!(zoned_index("zoned:60/10:50/10", &o).is_err());
        assert!(zoned_index("zoned:", &o).is_err());
        // zoned_abs: byte ranges, a missing size is 0 bytes, as fio's.
        let idx = zoned_abs_index("zoned_abs:60/1m:30/2m:10", &o).unwrap();
        assert!(idx[..60].iter().all(|e| *e == (0, 1 << 20)));
        assert!(idx[60..90].iter().all(|e| *e == (1 << 20, 3 << 20)));
        assert!(idx[90..].iter().all(|e| *e == (3 << 20, 3 << 20)));
        assert!(zoned_abs_index("zoned_abs:50/1m:40/1m", &o).is_err());
        assert!(zoned_abs_index("zoned_abs:50/1m,50/1m", &o).is_err());
        assert!(zoned_abs_index("zoned_abs:", &o).is_err());
    }

    #[test]
    fn help_lists_every_option() {
        let h = help_text();
        for o in OPTIONS {
            assert!(h.contains(o.name), "{}", o.name);
        }
    }

    #[test]
    fn unused_engine_lists_are_valid() {
        // Engine-limited rows name engines the table knows.
        for o in OPTIONS {
            for e in o.engines {
                assert!(ENGINES.contains(&e.as_str()), "{}: {}", o.name, e.as_str());
            }
        }
        let _ = URING_AIO;
    }

    /// The `engines` restriction is for fio's engine options only (an engine's own table in
    /// fio 3.33's engines/*.c): fio's general options are accepted with every engine, and
    /// `job options` lists engine options after the general ones.
    #[test]
    fn engine_limited_rows_are_fios_engine_options() {
        let limited: Vec<&str> = OPTIONS
            .iter()
            .filter(|o| is_engine_option(o))
            .map(|o| o.name)
            .collect();
        assert_eq!(
            limited,
            [
                "hipri",
                "registerfiles",
                "fixedbufs",
                "sqthread_poll",
                "sqthread_poll_cpu",
                "cmdprio_percentage",
                "cmdprio_class",
                "cmdprio",
                "cmdprio_bssplit",
            ]
        );
        // The order fio parses (and lists) a job file's options in.
        let opts: Vec<RawOption> = ["filename", "hipri", "bs", "kb_base_unknown", "lockfile"]
            .iter()
            .map(|k| RawOption {
                key: k.to_string(),
                value: Some("1".into()),
                origin: super::super::Origin {
                    file: "t.fio".into(),
                    line: 1,
                },
            })
            .collect();
        let keys = |v: Vec<&RawOption>| v.iter().map(|o| o.key.clone()).collect::<Vec<_>>();
        assert_eq!(
            keys(listing_order(&opts, true)),
            ["lockfile", "bs", "kb_base_unknown", "filename", "hipri"]
        );
        assert_eq!(
            keys(listing_order(&opts, false)),
            ["filename", "hipri", "bs", "kb_base_unknown", "lockfile"]
        );
    }
}
