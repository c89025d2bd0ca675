//! fio job files: the ini text (and fio's `--name=x --rw=...` command-line form) parsed into
//! typed job specifications.
//!
//! Why it exists: users bring the job files they already run under fio 3.33; the native engine
//! must run exactly what such a file says. The work is split as fio splits it: [`lexer`] reads
//! the syntax (sections, `[global]`, `;`/`#` comments, bare flags, `include`, `${VAR}`, fio's
//! keywords), [`expr`] reads values (base-1024 sizes, times, arithmetic), [`options`] is the one
//! table of options (name, aliases, kind, range, default, engines, setter) and this module
//! applies `[global]` inheritance and the checks that involve several options, giving a
//! [`JobSpec`] whose units are types ([`Bytes`], [`Duration`]).
//!
//! What it must never do: ignore an option. An option it does not know, or a value it cannot
//! honour, is a [`JobFileError`] naming the option, its file and line (and, for an unknown option,
//! listing the supported ones): a job that silently ran differently from its file would publish a
//! wrong number. It never writes anything. It reads only through the [`Sources`] the caller
//! hands in: job and `include` files (a regular file below a size limit, see
//! [`lexer::read_job_source`]), environment variables and `$mb_memory`; [`SystemSources`] is
//! the real system, tests hand in their own.
//!
//! Deliberate differences from fio, each an error rather than a guess: an unknown size suffix
//! (fio multiplies by 1), value ranges such as `bs=4k-16k` (ranges are bsrange=), and options fio has that this engine
//! does not implement. An unset `${VAR}` expands to nothing as in fio, with a warning.

pub mod cmdprio;
pub mod confine;
pub mod expr;
pub mod lexer;
pub mod numa;
pub mod options;
pub mod pattern;
pub mod split;

pub use expr::{SizeValue, parse_size, parse_time};
pub use lexer::{
    MAX_JOB_FILE, Sources, SystemSources, mark_file_boundary, parse_cmdline, parse_ini,
    read_job_source,
};
pub use split::BsSplitEntry;

use std::fmt;
use std::time::Duration;

/// A byte count. Sizes in job files are base 1024 (`4k` = 4096), as fio's default `kb_base`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}B", self.0)
    }
}

/// `size=`: an absolute byte count, or a percentage of the existing files' size (fio's `size=N%`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeSpec {
    /// Bytes per job clone, split across its files.
    Bytes(Bytes),
    /// Percent (1..=100) of each existing file's size.
    Percent(u32),
}

/// `filesize=`: one size, or a range `low:high` (fio's `low-high` too) from which each file's
/// size is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeRange {
    /// Smallest.
    pub low: Bytes,
    /// Largest.
    pub high: Bytes,
}

impl SizeRange {
    /// A single size.
    pub fn fixed(b: Bytes) -> SizeRange {
        SizeRange { low: b, high: b }
    }
}

/// `rw=`: direction and order of the I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwMode {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
    /// Sequential mixed reads and writes (`rw`, `readwrite`).
    ReadWrite,
    /// Random mixed reads and writes.
    RandRw,
    /// Sequential trims (discard, hole punching).
    Trim,
    /// Random trims.
    RandTrim,
    /// Sequential: each block trimmed, then written.
    TrimWrite,
    /// Random: each drawn block trimmed, then written.
    RandTrimWrite,
}

impl RwMode {
    /// The name fio prints.
    pub fn as_str(self) -> &'static str {
        match self {
            RwMode::Read => "read",
            RwMode::Write => "write",
            RwMode::RandRead => "randread",
            RwMode::RandWrite => "randwrite",
            RwMode::ReadWrite => "rw",
            RwMode::RandRw => "randrw",
            RwMode::Trim => "trim",
            RwMode::RandTrim => "randtrim",
            RwMode::TrimWrite => "trimwrite",
            RwMode::RandTrimWrite => "randtrimwrite",
        }
    }
    /// Whether offsets are random.
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwMode::RandRead
                | RwMode::RandWrite
                | RwMode::RandRw
                | RwMode::RandTrim
                | RwMode::RandTrimWrite
        )
    }
    /// Whether the job reads.
    pub fn reads(self) -> bool {
        matches!(
            self,
            RwMode::Read | RwMode::RandRead | RwMode::ReadWrite | RwMode::RandRw
        )
    }
    /// Whether the job writes.
    pub fn writes(self) -> bool {
        !matches!(
            self,
            RwMode::Read | RwMode::RandRead | RwMode::Trim | RwMode::RandTrim
        )
    }
    /// Whether the job trims (fio's td_trim).
    pub fn trims(self) -> bool {
        matches!(
            self,
            RwMode::Trim | RwMode::RandTrim | RwMode::TrimWrite | RwMode::RandTrimWrite
        )
    }
    /// Whether each trim is followed by a write of its block (fio's td_trimwrite).
    pub fn trim_then_write(self) -> bool {
        matches!(self, RwMode::TrimWrite | RwMode::RandTrimWrite)
    }
}

/// `ioengine=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoEngine {
    /// pread/pwrite.
    Psync,
    /// lseek + read/write.
    Sync,
    /// preadv/pwritev.
    Pvsync,
    /// io_uring, with `iodepth` I/Os in flight.
    IoUring,
    /// Linux native AIO (fio's libaio), by direct system calls.
    Libaio,
    /// fio's filecreate: each "I/O" is the timed creation of one file.
    FileCreate,
    /// fio's filestat: each "I/O" is the timed stat(2) of one laid-out file.
    FileStat,
    /// fio's filedelete: each "I/O" is the timed unlink(2) of one laid-out file.
    FileDelete,
    /// fio's null: every I/O completes at once; no file is touched.
    Null,
    /// fio's falloc: a write is fallocate(2) of its range, a read fallocate(KEEP_SIZE).
    Falloc,
    /// fio's ftruncate: a write is ftruncate(2) to its offset.
    Ftruncate,
    /// preadv2/pwritev2 (RWF_HIPRI with hipri=1).
    Pvsync2,
    /// POSIX AIO through the C library (aio_read/aio_write, aio_suspend).
    Posixaio,
    /// lseek + readv/writev, contiguous I/Os gathered into one vector (fio's vsync).
    Vsync,
    /// memcpy to and from the file mapped with mmap(2) (fio's mmap).
    Mmap,
    /// splice(2) through a pipe (fio's splice): file to pipe to buffer, buffer to pipe to file.
    Splice,
}

impl IoEngine {
    /// The name fio prints.
    pub fn as_str(self) -> &'static str {
        match self {
            IoEngine::Psync => "psync",
            IoEngine::Sync => "sync",
            IoEngine::Pvsync => "pvsync",
            IoEngine::IoUring => "io_uring",
            IoEngine::Libaio => "libaio",
            IoEngine::FileCreate => "filecreate",
            IoEngine::FileStat => "filestat",
            IoEngine::FileDelete => "filedelete",
            IoEngine::Null => "null",
            IoEngine::Falloc => "falloc",
            IoEngine::Ftruncate => "ftruncate",
            IoEngine::Pvsync2 => "pvsync2",
            IoEngine::Posixaio => "posixaio",
            IoEngine::Vsync => "vsync",
            IoEngine::Mmap => "mmap",
            IoEngine::Splice => "splice",
        }
    }
    /// Whether each "I/O" is an operation on a whole file (create, stat, delete).
    pub fn is_file_op(self) -> bool {
        matches!(
            self,
            IoEngine::FileCreate | IoEngine::FileStat | IoEngine::FileDelete
        )
    }
    /// Whether the engine moves no data to a disk (fio reports no disk_util for it).
    pub fn is_diskless(self) -> bool {
        matches!(self, IoEngine::FileCreate | IoEngine::Null)
    }
    /// Whether the engine completes each I/O inside its system call (no slat, iodepth 1).
    pub fn is_sync(self) -> bool {
        !matches!(
            self,
            IoEngine::IoUring | IoEngine::Libaio | IoEngine::Posixaio | IoEngine::Vsync
        )
    }
}

/// `fadvise_hint=`: the advice fio gives each file when it opens it (posix_fadvise).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FadviseHint {
    /// 0: none.
    None,
    /// 1 (default): POSIX_FADV_RANDOM for a random job, SEQUENTIAL otherwise.
    Workload,
    /// POSIX_FADV_SEQUENTIAL.
    Sequential,
    /// POSIX_FADV_RANDOM.
    Random,
}

/// `sync=`: the synchronous-I/O open flag of the job's files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncIo {
    /// none / 0 (default).
    None,
    /// sync / 1: O_SYNC.
    Sync,
    /// dsync: O_DSYNC.
    Dsync,
}

/// `fallocate=`: how files are preallocated at layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallocate {
    /// No preallocation.
    None,
    /// fallocate(2) mode 0, falling back to none where unsupported (fio's Linux default).
    Native,
    /// posix_fallocate(3).
    Posix,
    /// fallocate(2) with FALLOC_FL_KEEP_SIZE.
    Keep,
    /// ftruncate(2) to the size.
    Truncate,
}

/// `verify=`: fio's checksum (or check) per verify interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VerifyKind {
    /// The header only (and the pattern, with verify_pattern=).
    Meta,
    /// MD5.
    Md5,
    /// fio's crc64.
    Crc64,
    /// fio's crc32 (MSB-first 0x04C11DB7, no inversion).
    Crc32,
    /// CRC-32C.
    Crc32c,
    /// CRC-32C (fio's hardware-assisted name; the same sums).
    Crc32cIntel,
    /// fio's crc16 (CRC-16/ARC).
    Crc16,
    /// fio's crc7 (CRC-7/MMC).
    Crc7,
    /// fio's sha256.
    Sha256,
    /// fio's sha512 (its input buffer, not a digest: see the verify module).
    Sha512,
    /// SHA3-224.
    Sha3_224,
    /// SHA3-256.
    Sha3_256,
    /// SHA3-384.
    Sha3_384,
    /// SHA3-512.
    Sha3_512,
    /// XXH32.
    Xxhash,
    /// SHA-1.
    Sha1,
    /// The verify_pattern= bytes after the header (verify_pattern= without verify=).
    Pattern,
    /// The verify_pattern= bytes alone, no header (fio's verify=pattern).
    PatternNoHdr,
    /// Nothing written or checked; the written blocks are still read back (fio's verify=null).
    Null,
}

/// fio's error classes (td_error.h's error_type_bit): which list of ignore_error= an error
/// is looked up in, and which bit of continue_on_error= lets it continue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    /// A failed read.
    Read = 0,
    /// A failed write, trim or sync.
    Write = 1,
    /// EILSEQ, a failed verify, whatever the direction.
    Verify = 2,
}

impl ErrorClass {
    /// fio's td_error_type: EILSEQ is a verify error; otherwise a read's is a read error and
    /// every other direction's a write error.
    pub fn of(is_read: bool, errno: i32) -> ErrorClass {
        if errno == libc::EILSEQ {
            ErrorClass::Verify
        } else if is_read {
            ErrorClass::Read
        } else {
            ErrorClass::Write
        }
    }
}

impl JobSpec {
    /// fio's td_non_fatal_error: the job continues on `errno` of `class` (counted as an
    /// error) when continue_on_error= takes the class and its ignore_error= list (by default
    /// EIO and EILSEQ) names the errno.
    pub fn error_continues(&self, class: ErrorClass, errno: i32) -> bool {
        if self.continue_on_error & (1 << class as u32) == 0 {
            return false;
        }
        match &self.ignore_error[class as usize] {
            Some(list) => list.contains(&errno),
            None => errno == libc::EIO || errno == libc::EILSEQ,
        }
    }

    /// Whether continue_on_error= takes `class` (fio then counts even a fatal error of it
    /// that its synchronous engines return).
    pub fn continues_class(&self, class: ErrorClass) -> bool {
        self.continue_on_error & (1 << class as u32) != 0
    }
}

/// `dedupe_mode=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DedupeMode {
    /// A dedupe repeats the previous unique buffer.
    Repeat,
    /// A dedupe regenerates one of a working set of unique buffers.
    WorkingSet,
}

/// `random_generator=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RandomGenerator {
    /// fio's 32-bit taus88 (default).
    Tausworthe,
    /// fio's 64-bit taus258.
    Tausworthe64,
    /// A maximal-length LFSR: every block once per pass without a map.
    Lfsr,
}

/// `random_distribution=`: how random offsets are drawn.
#[derive(Clone, Debug, PartialEq)]
pub enum RandomDistribution {
    /// Uniform (fio's default).
    Random,
    /// fio's zipf with exponent theta; center (0..=1) moves the hot spot.
    Zipf {
        /// Exponent (not 1).
        theta: f64,
        /// Where the hottest block sits, as a fraction of the file; None = random.
        center: Option<f64>,
    },
    /// fio's pareto with power h (0 < h < 1).
    Pareto {
        /// Power.
        h: f64,
        /// As for zipf.
        center: Option<f64>,
    },
    /// fio's zoned: `zoned:A/S:A/S...`, A percent of the I/Os go to the next S percent of
    /// the region. Stored as fio's zone_state_index: for each draw v in 1..=100, the region's
    /// percent range [start, end) of entry v-1.
    Zoned {
        /// (start, end) percent per draw.
        index: Box<[(u8, u8); 100]>,
    },
    /// fio's normal (gauss): `normal:DEV[:CENTER]`, DEV the deviation in percent of the
    /// file (0 = none: the mean of fio's 12 uniform draws).
    Normal {
        /// Deviation, percent, 0..100.
        dev: f64,
        /// As for zipf.
        center: Option<f64>,
    },
    /// fio's zoned_abs: `zoned_abs:A/SIZE:A/SIZE...`, A percent of the I/Os go to the next
    /// SIZE bytes. Stored as fio's zone_state_index: for each draw v in 1..=100, the byte range
    /// [start, end) of entry v-1.
    ZonedAbs {
        /// (start, end) bytes per draw.
        index: Box<[(u64, u64); 100]>,
    },
}

/// `file_service_type=`: which file the next I/O goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileService {
    /// Cycle through the files, `n` I/Os each.
    RoundRobin(u32),
    /// Finish one file, then the next.
    Sequential,
    /// A random file every `n` I/Os.
    Random(u32),
}

/// fio's io_uring engine options that change how the ring is set up (engines/io_uring.c).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UringOptions {
    /// `registerfiles`: IORING_REGISTER_FILES the job's files; SQEs carry IOSQE_FIXED_FILE
    /// and the file's index.
    pub registerfiles: bool,
    /// `fixedbufs`: IORING_REGISTER_BUFFERS the I/O buffers; reads and writes are
    /// IORING_OP_READ_FIXED / WRITE_FIXED with the buffer's index.
    pub fixedbufs: bool,
    /// `sqthread_poll`: IORING_SETUP_SQPOLL, a kernel thread submits (implies registerfiles,
    /// as fio forces it).
    pub sqthread_poll: bool,
    /// `sqthread_poll_cpu`: IORING_SETUP_SQ_AFF, the SQ thread's CPU (with sqthread_poll).
    pub sqthread_poll_cpu: Option<u32>,
    /// `hipri`: IORING_SETUP_IOPOLL, completions are polled for (fio's io_uring hipri). Only
    /// files whose driver polls (O_DIRECT on a block device with poll queues) accept I/O on
    /// such a ring; others fail each I/O with EOPNOTSUPP, as under fio.
    pub iopoll: bool,
}

impl UringOptions {
    /// Whether files are registered: asked for, or forced by sqthread_poll (fio's init).
    pub fn registers_files(&self) -> bool {
        self.registerfiles || self.sqthread_poll
    }

    /// Whether any option is set.
    pub fn in_use(&self) -> bool {
        self.registerfiles
            || self.fixedbufs
            || self.sqthread_poll
            || self.sqthread_poll_cpu.is_some()
    }
}

/// The options fio 3.33 lets be written in zones (`offset=1z`): the count of zones each was
/// given as (fio's `*_nz`; 0 = not in zones).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZoneUnits {
    /// size=Nz.
    pub size: u32,
    /// io_size=Nz.
    pub io_size: u32,
    /// offset=Nz.
    pub offset: u32,
    /// offset_increment=Nz.
    pub offset_increment: u32,
    /// zoneskip=Nz.
    pub zoneskip: u32,
}

impl JobSpec {
    /// fio's zbd_recalc_options_with_zone_granularity: a value given in zones becomes that many
    /// zones of the job's zone size (zonesize= with zonemode=strided or zbd, whose zones over a
    /// regular file or a non-zoned device are zonesize). Without a zone size, or for `0z`, the
    /// value stays as the `z` left it (size and io_size not given, offset and the rest 0), as
    /// in fio.
    pub fn resolve_zone_units(&mut self) {
        let zone = match self.zonemode {
            Some(ZoneMode::Strided | ZoneMode::Zbd) => self.zonesize,
            _ => 0,
        };
        if zone == 0 {
            return;
        }
        let z = self.zone_units;
        let bytes = |n: u32| Bytes(u64::from(n) * zone);
        if z.size > 0 {
            self.size = Some(SizeSpec::Bytes(bytes(z.size)));
        }
        if z.io_size > 0 {
            self.io_size = Some(bytes(z.io_size));
        }
        if z.offset > 0 {
            self.offset = SizeSpec::Bytes(bytes(z.offset));
        }
        if z.offset_increment > 0 {
            self.offset_increment = bytes(z.offset_increment);
        }
        if z.zoneskip > 0 {
            self.zoneskip = bytes(z.zoneskip).0;
        }
    }
}

/// One job (before `numjobs` cloning), every option typed and validated.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    /// Job name (section name, or `name=`).
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// Direction and order.
    pub rw: RwMode,
    /// Percent of mixed I/O that reads.
    pub rwmixread: u32,
    /// Block size for reads and writes.
    pub bs: [Bytes; 2],
    /// Total per clone (split across `nrfiles`), or a percentage of existing files.
    pub size: Option<SizeSpec>,
    /// Size of each file (overrides size / nrfiles); a range draws each file's size.
    pub filesize: Option<SizeRange>,
    /// Files per clone.
    pub nrfiles: u32,
    /// filename_format=: how files without filename= are named (fio's default
    /// `$jobname.$jobnum.$filenum`).
    pub filename_format: Option<String>,
    /// Explicit file names (`:` list); empty = `$job.$clone.$file`.
    pub filename: Vec<String>,
    /// Directories (`:` list); files are spread across them round robin.
    pub directory: Vec<String>,
    /// Clones, each a thread.
    pub numjobs: u32,
    /// Engine.
    pub ioengine: IoEngine,
    /// I/Os in flight (async engines).
    pub iodepth: u32,
    /// iodepth_batch (iodepth_batch_submit): I/Os submitted at once (fio's default 1; 0 or
    /// more than iodepth: iodepth). Validated: only what makes 1 with a queueing engine.
    pub iodepth_batch: u32,
    /// iodepth_low: reap down to this depth when the queue is full (0: iodepth). Validated:
    /// only what makes iodepth with a queueing engine.
    pub iodepth_low: u32,
    /// fadvise_hint: the posix_fadvise advice given when a file is opened.
    pub fadvise_hint: FadviseHint,
    /// create_fsync: fsync each file after laying it out (fio's default 1).
    pub create_fsync: bool,
    /// sync=: O_SYNC / O_DSYNC on the job's files.
    pub sync_io: SyncIo,
    /// O_DIRECT.
    pub direct: bool,
    /// atomic=1: fio 3.33's "atomic direct I/O". Its fixup_options sets O_DIRECT whatever
    /// direct= or buffered= said, and its file open adds O_ATOMIC (040000000), a flag Linux
    /// has never had and ignores; so the job runs as direct=1, which [`build_jobs`] makes it.
    pub atomic: bool,
    /// fsync every N writes (0 = never).
    pub fsync: u32,
    /// fdatasync every N writes (0 = never).
    pub fdatasync: u32,
    /// fsync each file at the end (in the runtime, not in latency stats).
    pub end_fsync: bool,
    /// Repeat the workload until `runtime` has passed.
    pub time_based: bool,
    /// Limit (or, with time_based, length) of the measured run.
    pub runtime: Option<Duration>,
    /// Run this long before measuring; stats reset after it.
    pub ramp_time: Duration,
    /// Wait this long before starting the job.
    pub startdelay: Duration,
    /// Drop the files' page cache before the job (fadvise DONTNEED).
    pub invalidate: bool,
    /// Preallocation at layout.
    pub fallocate: Fallocate,
    /// Create files when first opened rather than at layout.
    pub create_on_open: bool,
    /// Delete the files when the job ends.
    pub unlink: bool,
    /// unlink_each_loop=: the files are deleted before every loop after the first (fio's
    /// thread_main), and the loop's writes create them anew.
    pub unlink_each_loop: bool,
    /// file_append=: I/O starts at the end of an existing regular file (fio: its offset is
    /// the file's size, in place of offset= and offset_increment=).
    pub file_append: bool,
    /// fsync a file when it is closed (inside the runtime, outside the latency stats).
    pub fsync_on_close: bool,
    /// Block sizes drawn from a bsrange or bssplit are not rounded down to the smallest one.
    pub blocksize_unaligned: bool,
    /// bsrange= / bssplit=: the smallest and largest block size per direction (read, write,
    /// trim), set by whichever of them came last (fio's min_bs / max_bs); None: bs= gives both.
    pub bs_minmax: [Option<(Bytes, Bytes)>; 3],
    /// bssplit=: per direction (read, write, trim) the block sizes and their percentages,
    /// sorted as fio sorts them; empty: no split for that direction.
    pub bssplit: [Vec<BsSplitEntry>; 3],
    /// blockalign= (ba) per direction (read, write, trim): the unit of random offsets; None:
    /// the smallest block size.
    pub blockalign: [Option<Bytes>; 3],
    /// bs_is_seq_rand: the read block size settings apply to sequential I/O and the write
    /// ones to random I/O, whatever the direction.
    pub bs_is_seq_rand: bool,
    /// Repetitions of the workload.
    pub loops: u32,
    /// Seed the generators repeatably.
    pub randrepeat: bool,
    /// Seed every generator repeatably (fio's allrandrepeat).
    pub allrandrepeat: bool,
    /// Explicit seed.
    pub randseed: Option<u64>,
    /// No random map: random blocks may repeat within a pass.
    pub norandommap: bool,
    /// Offset generator.
    pub random_generator: RandomGenerator,
    /// File selection.
    pub file_service_type: FileService,
    /// Files kept open at once (None = all).
    pub openfiles: Option<u32>,
    /// Report the group as one job.
    pub group_reporting: bool,
    /// Wait for the previous jobs to finish (implies new_group).
    pub stonewall: bool,
    /// Start a new reporting group.
    pub new_group: bool,
    /// Accepted for compatibility: workers are always threads.
    pub thread: bool,
    /// Write buffers of zeros.
    pub zero_buffers: bool,
    /// buffer_pattern=: write buffers (and the layout) filled with these bytes, repeated.
    pub buffer_pattern: Option<Vec<u8>>,
    /// Refill write buffers with new data before every write; None = not set (fio then
    /// refills when buffer_compress_percentage is set).
    pub refill_buffers: Option<bool>,
    /// Scramble a few bytes of each 512-byte block per write (fio default on).
    pub scramble_buffers: bool,
    /// Percent of each chunk of written data that compresses (zeros).
    pub buffer_compress_percentage: Option<u32>,
    /// Chunk for buffer_compress_percentage.
    pub buffer_compress_chunk: Bytes,
    /// Percentiles reported (ascending, at most 20).
    pub percentile_list: Vec<f64>,
    /// Report percentiles of lat (total latency) too.
    pub lat_percentiles: bool,
    /// Report percentiles of clat (default on).
    pub clat_percentiles: bool,
    /// Report percentiles of slat (fio's slat_percentiles, default off; only the queueing
    /// engines measure slat).
    pub slat_percentiles: bool,
    /// The options set in the job's own section, as written (fio's "job options").
    pub job_options: Vec<(String, String)>,
    /// No latency measurement at all (fio's gtod_reduce sets the four disable_* below).
    pub gtod_reduce: bool,
    /// Do not measure lat.
    pub disable_lat: bool,
    /// Do not measure clat.
    pub disable_clat: bool,
    /// Do not measure slat.
    pub disable_slat: bool,
    /// Do not sample bandwidth and IOPS.
    pub disable_bw: bool,
    /// fio's `clocksource=`: the clock of the job's timestamps; None is fio's default (the TSC
    /// where it is invariant, else clock_gettime).
    pub clocksource: Option<crate::probe::clock::ClockSource>,
    /// RWF_HIPRI (pvsync2) / IORING_SETUP_IOPOLL (io_uring): polled completions.
    pub hipri: bool,
    /// io_uring's registerfiles, fixedbufs, sqthread_poll and sqthread_poll_cpu.
    pub uring: UringOptions,
    /// Start only after the job of this name has finished (fio's wait_for).
    pub wait_for: Option<String>,
    /// Offset of the I/O region in each file (bytes, or percent of the file).
    pub offset: SizeSpec,
    /// Added to `offset` per clone (`offset + offset_increment * clone`).
    pub offset_increment: Bytes,
    /// Bytes of I/O per pass instead of the region's size (fio's io_size / io_limit).
    pub io_size: Option<Bytes>,
    /// Stop after this many I/Os (0 = no limit).
    pub number_ios: u64,
    /// Pause this long after every `thinktime_blocks` I/Os.
    pub thinktime: Duration,
    /// Of `thinktime`, this much is spent spinning rather than sleeping.
    pub thinktime_spin: Duration,
    /// I/Os between think times.
    pub thinktime_blocks: u32,
    /// Bandwidth cap per direction (read, write, trim) in bytes/s; 0 = none (fio's rate).
    pub rate: [u64; 3],
    /// Minimum bandwidth per direction over rate_cycle; below it the job fails (rate_min).
    pub rate_min: [u64; 3],
    /// I/O cap per direction, per second (rate_iops).
    pub rate_iops: [u64; 3],
    /// Minimum IOPS per direction over rate_cycle (rate_iops_min).
    pub rate_iops_min: [u64; 3],
    /// Window of the minimum-rate check, ms (rate_cycle).
    pub rate_cycle_ms: u64,
    /// rate_process=poisson: exponentially distributed gaps (else linear).
    pub rate_poisson: bool,
    /// The rate counts thinktime as time the job could have issued I/O in.
    pub rate_ignore_thinktime: bool,
    /// io_submit_mode=offload: the job's thread only queues; iodepth workers do the I/O.
    pub io_submit_offload: bool,
    /// exitall: when a job ends, end the jobs `exit_what` names (fio: one job with it sets it
    /// for every job).
    pub exitall: bool,
    /// What a job's end ends under exitall.
    pub exit_what: ExitWhat,
    /// Offset modifier of a sequential rw= (fio's ddir_seq_add): `rw=read:8k` leaves an 8 KiB
    /// hole after each I/O, `rw=read:-8k` steps back 8 KiB from the end of each I/O (backwards
    /// I/O, wrapping to the end of the region); 0 when absent.
    pub rw_modifier: i64,
    /// I/Os per new random offset of a random rw= (fio's ddir_seq_nr): `rw=randread:8` draws
    /// a random offset for the first I/O and then every 8th; the I/Os between follow
    /// `rw_sequencer`. 1 (every I/O random) when absent.
    pub rw_seq_nr: u32,
    /// rw_sequencer=: where the I/Os between two random offsets of `rw=rand...:N` go.
    pub rw_sequencer: RwSequencer,
    /// cpumask= / cpus_allowed=: the CPUs the job's threads may run on (sorted, none twice).
    pub cpumask: Option<Vec<usize>>,
    /// cpus_allowed_policy=split: each clone runs on one CPU of `cpumask`, by thread number.
    pub cpus_split: bool,
    /// verify_async_cpus=: the CPUs of the verify_async threads.
    pub verify_cpumask: Option<Vec<usize>>,
    /// numa_cpu_nodes=: the job's threads run on the CPUs of these nodes.
    pub numa_cpu_nodes: Option<numa::NodeList>,
    /// numa_mem_policy=: the memory policy of the job's threads.
    pub numa_mem_policy: Option<numa::MemPolicy>,
    /// Report this job (fio's stats=1, the default).
    pub stats: bool,
    /// How random offsets are drawn.
    pub random_distribution: RandomDistribution,
    /// Stamp written blocks with a crc32c header (fio's verify=crc32c).
    pub verify: bool,
    /// Read the written blocks back and check them after the writes (default on).
    pub do_verify: bool,
    /// Bytes covered by one verify header (default: the block size).
    pub verify_interval: Option<Bytes>,
    /// The checksum or check of verify= (meaningful when `verify`).
    pub verify_kind: VerifyKind,
    /// verify= was given (verify_pattern= then does not choose verify=pattern).
    pub verify_set: bool,
    /// verify_pattern=: the bytes written and expected after each header.
    pub verify_pattern: Option<pattern::Pattern>,
    /// verify_offset=: the header is swapped with the bytes this far into the interval.
    pub verify_offset: Bytes,
    /// verify_backlog=: after this many writes, verify the logged ones (0 = at the end).
    pub verify_backlog: u64,
    /// experimental_verify=1: fio regenerates the written offsets instead of logging them;
    /// accepted where that reads the same blocks as the logged verify (`check_trims_and_verify`).
    pub experimental_verify: bool,
    /// verify_backlog_batch=: blocks verified per backlog round (0 = verify_backlog).
    pub verify_backlog_batch: u64,
    /// verify_dump=: write the received and expected bytes of a failed block.
    pub verify_dump: bool,
    /// verify_only: a write job plans and logs its writes without issuing them, then reads
    /// back and verifies what an earlier run of the same job wrote (fio's do_dry_run).
    pub verify_only: bool,
    /// verify_async=: threads that check the verify phase's blocks (0: the job's own).
    pub verify_async: u32,
    /// verify_fatal=: stop at the first failed interval of a block (otherwise, as fio, every
    /// failed interval of the block is reported; either way the job fails).
    pub verify_fatal: bool,
    /// fill_device=: write until the filesystem is full (ENOSPC ends the job, not an error).
    pub fill_device: bool,
    /// continue_on_error= (and every non-empty ignore_error= list): the error classes
    /// ([`ErrorClass`] bits) whose listed errnos are counted and do not end the job.
    pub continue_on_error: u32,
    /// ignore_error=READ,WRITE,VERIFY: the errnos each class continues on; None is fio's
    /// default, EIO and EILSEQ.
    pub ignore_error: [Option<Vec<i32>>; 3],
    /// error_dump=: print every error, also the continued ones (fio: only the fatal ones
    /// otherwise).
    pub error_dump: bool,
    /// create_serialize=.
    pub create_serialize: bool,
    /// dedupe_percentage=: percent of write buffers that repeat an earlier one.
    pub dedupe_percentage: u32,
    /// dedupe_mode=.
    pub dedupe_mode: DedupeMode,
    /// dedupe_global=: the working set is shared with the other dedupe_global jobs.
    pub dedupe_global: bool,
    /// dedupe_working_set_percentage=: percent of size that is the working set.
    pub dedupe_working_set_percentage: u32,
    /// Completions to wait for at once (fio's iodepth_batch_complete_min, default 1).
    pub iodepth_batch_complete_min: u32,
    /// Completions taken at once at most (fio's iodepth_batch_complete_max; 0 = the min).
    pub iodepth_batch_complete_max: u32,
    /// Flow control group (fio's flow_id).
    pub flow_id: u32,
    /// Weight in the flow group (fio's flow; 0 = no flow control): the job's share of the
    /// group's I/Os is held at flow / (sum of the group's weights).
    pub flow: u32,
    /// Sleep this long when held back by flow control (fio's flow_sleep, microseconds).
    pub flow_sleep: Duration,
    /// write_lat_log: file name prefix ("" = the job name); None = no lat/slat/clat logs.
    pub lat_log: Option<String>,
    /// write_bw_log: as `lat_log`, for the bandwidth log.
    pub bw_log: Option<String>,
    /// write_iolog=FILE: each clone appends its I/O pattern there (fio's iolog version 3).
    pub write_iolog: Option<String>,
    /// read_iolog=FILE: the I/O pattern to replay (fio's iolog version 2 or 3).
    pub read_iolog: Option<String>,
    /// read_iolog_chunked=1: fio reads the log in parts as it goes (the same I/Os).
    pub read_iolog_chunked: bool,
    /// replay_no_stall=1: replay without the log's waits.
    pub replay_no_stall: bool,
    /// replay_redirect=FILE: every replayed I/O goes to this one file.
    pub replay_redirect: Option<String>,
    /// replay_time_scale=PERCENT: the log's waits scaled by 100 / this (fio's default 100).
    pub replay_time_scale: u64,
    /// replay_align=N: replayed offsets rounded down to a multiple of N (a power of 2).
    pub replay_align: u64,
    /// replay_scale=N: replayed offsets divided by N (fio's default 1).
    pub replay_scale: u64,
    /// The replay read from read_iolog= when the job runs ([`crate::fio::engine::replay`]).
    pub replay: Option<crate::fio::engine::replay::Replay>,
    /// verify_state_save=1 given: each clone writes fio's local-NAME-N-verify.state at its end
    /// (fio's default 1 writes it unasked; fsdelta only when the job file says so).
    pub verify_state_save: bool,
    /// verify_state_load=1: each clone reads its state file first and stops verifying reads at
    /// a write the saved run may not have completed.
    pub verify_state_load: bool,
    /// Where the verify state files go and are read from (fio's --aux-path); None: the
    /// current directory. A run sets it to its directory.
    pub aux_path: Option<String>,
    /// write_iops_log: as `lat_log`, for the IOPS log.
    pub iops_log: Option<String>,
    /// write_hist_log: as `lat_log`, for the clat histogram log PREFIX_clat_hist.N.log.
    pub hist_log: Option<String>,
    /// One histogram line per this many ms and direction (log_hist_msec; 0: none).
    pub log_hist_msec: u64,
    /// Histogram lines merge 2^this neighbouring buckets (log_hist_coarseness, 0..=6).
    pub log_hist_coarseness: u32,
    /// Log lines carry the I/O's offset (fio's log_offset).
    pub log_offset: bool,
    /// log_unix_epoch: log times are Unix-epoch milliseconds (fio's alternate_epoch, taken
    /// when the job's measured time starts), not milliseconds since then.
    pub log_unix_epoch: bool,
    /// One log line per this many ms and direction, the window's average (log_avg_msec; 0: per I/O).
    pub log_avg_msec: u64,
    /// Averaged log lines carry the window's maximum instead (log_max_value).
    pub log_max: bool,
    /// Log file names carry the thread number (fio's per_job_logs, default on).
    pub per_job_logs: bool,
    /// Log lines carry the I/O's full priority value, not 1/0 for real-time or not (log_prio).
    pub log_prio: bool,
    /// prio= (the job's priority level, 0..=7); None: not given.
    pub prio: Option<u32>,
    /// prioclass= (the job's priority class, 0..=3); None: not given.
    pub prioclass: Option<u32>,
    /// The libaio / io_uring per-command priority options (cmdprio_*).
    pub cmdprio: cmdprio::CmdPrioOptions,
    /// Values given in zones (fio's `Nz`, FIO_OPT_STR_VAL_ZONE): size, io_size, offset,
    /// offset_increment, zoneskip; made bytes by [`JobSpec::resolve_zone_units`].
    pub zone_units: ZoneUnits,
    /// zonemode= as written (None: not given, which is fio's default none).
    pub zonemode: Option<ZoneMode>,
    /// zonesize= (0 = not given).
    pub zonesize: u64,
    /// zonerange= (0 = zonesize).
    pub zonerange: u64,
    /// zoneskip=.
    pub zoneskip: u64,
    /// zonemode=zbd: read_beyond_wp= (reads may go past a zone's write pointer).
    pub read_beyond_wp: bool,
    /// zonemode=zbd: max_open_zones= per file, shared by all jobs (0 = no limit).
    pub max_open_zones: u32,
    /// zonemode=zbd: job_max_open_zones= per clone (0 = no limit).
    pub job_max_open_zones: u32,
    /// zonemode=zbd: zone_reset_threshold= (fraction of the region with data).
    pub zone_reset_threshold: f64,
    /// zonemode=zbd: zone_reset_frequency= (fraction of writes that reset their zone past
    /// the threshold; 0 = never).
    pub zone_reset_frequency: f64,
    /// fio's latency_target: find the largest depth whose I/Os complete within this.
    pub latency_target: Option<Duration>,
    /// max_latency= per direction (read, write, trim), in ns; 0: none. An I/O whose latency
    /// exceeds it ends the job with ETIMEDOUT (fio's lat_fatal).
    pub max_latency: [u64; 3],
    /// Window over which latency_target is judged.
    pub latency_window: Duration,
    /// Percent of a window's I/Os that must meet latency_target.
    pub latency_percentile: f64,
    /// Keep adjusting the depth instead of ending when it is found (fio's latency_run).
    pub latency_run: bool,
    /// Steady-state criterion (ss=; fio's default iops_slope:0.01%), used when ss_dur > 0.
    pub ss: SteadyState,
    /// Window of steady state (ss_dur; 0 = no detection).
    pub ss_dur: Duration,
    /// Time before steady-state samples are taken (ss_ramp).
    pub ss_ramp: Duration,
}

/// What ss= judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SteadyKind {
    /// Largest deviation of IOPS from the window's mean.
    Iops,
    /// Slope of IOPS over the window.
    IopsSlope,
    /// Largest deviation of bandwidth from the window's mean.
    Bw,
    /// Slope of bandwidth over the window.
    BwSlope,
}

/// ss=KIND:LIMIT[%].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteadyState {
    /// What is judged.
    pub kind: SteadyKind,
    /// Below this, steady.
    pub limit: f64,
    /// The limit is a percent of the window's mean.
    pub percent: bool,
}

/// rw_sequencer=: the offset of an I/O of `rw=rand...:N` that gets no new random offset
/// (fio's rw_seq).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwSequencer {
    /// Where the last I/O of the direction ended (fio's default): runs of N sequential I/Os.
    Sequential,
    /// Where the last I/O of the direction started: each random offset is used N times.
    Identical,
}

/// exit_what=: what the end of a job ends when exitall is on (fio's TERMINATE_*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitWhat {
    /// The jobs of its reporting group (fio's default).
    Group,
    /// Every job running now (not those still to start after a stonewall).
    Stonewall,
    /// Every job, also those not started yet.
    All,
}

impl JobSpec {
    /// Whether the job paces or checks its rate (fio's should_check_rate).
    pub fn checks_rate(&self) -> bool {
        (0..3).any(|d| {
            self.rate[d] > 0
                || self.rate_min[d] > 0
                || self.rate_iops[d] > 0
                || self.rate_iops_min[d] > 0
        })
    }
}

/// zonemode=.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneMode {
    /// No zones.
    None,
    /// fio's strided zones.
    Strided,
    /// fio's zoned block device mode, with zones emulated over a regular file or a
    /// non-zoned block device (see fio::engine::zbd).
    Zbd,
}

impl JobSpec {
    /// fio's zonemode=strided: I/O stays in a
    /// zone of `zonerange` bytes until `zonesize` bytes were done there, then moves on by
    /// zonerange + zoneskip, wrapping to the start of the file. As in fio, strided zones apply
    /// to a job with one open file only (with more the mode is none).
    pub fn strided_zones(&self) -> Option<StridedZones> {
        let strided = self.zonemode == Some(ZoneMode::Strided);
        let open_files = self
            .openfiles
            .unwrap_or(self.nrfiles.max(self.filename.len() as u32));
        (strided && self.zonesize > 0 && open_files <= 1).then_some(StridedZones {
            size: self.zonesize,
            range: if self.zonerange == 0 {
                self.zonesize
            } else {
                self.zonerange
            },
            skip: self.zoneskip,
        })
    }
}

/// zonemode=strided settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StridedZones {
    /// Bytes of I/O per zone (zonesize).
    pub size: u64,
    /// Extent of a zone (zonerange; default zonesize).
    pub range: u64,
    /// Gap between zones (zoneskip).
    pub skip: u64,
}

impl JobSpec {
    /// fio's min_bs of direction `d` (0 read, 1 write, 2 trim; trim's bs= is the write one).
    pub fn min_bs(&self, d: usize) -> u64 {
        self.bs_minmax[d].map_or(self.bs[d.min(1)].0, |(lo, _)| lo.0)
    }

    /// fio's max_bs of direction `d`.
    pub fn max_bs(&self, d: usize) -> u64 {
        self.bs_minmax[d].map_or(self.bs[d.min(1)].0, |(_, hi)| hi.0)
    }

    /// The largest block size of any direction (buffers are this long).
    pub fn max_bs_any(&self) -> u64 {
        (0..3).map(|d| self.max_bs(d)).max().unwrap_or(4096)
    }

    /// fio's rw_min_bs: the smallest block size of any direction (random maps count in it).
    pub fn rw_min_bs(&self) -> u64 {
        (0..3).map(|d| self.min_bs(d)).min().unwrap_or(4096).max(1)
    }

    /// fio's ba of direction `d`: blockalign= for random jobs, else the smallest block size.
    pub fn ba(&self, d: usize) -> u64 {
        match self.blockalign[d] {
            Some(b) if self.rw.is_random() => b.0,
            _ => self.min_bs(d),
        }
    }

    /// Whether every I/O of direction `d` has the same size.
    pub fn fixed_bs(&self, d: usize) -> bool {
        self.min_bs(d) == self.max_bs(d)
    }

    /// Every block size an I/O of direction `d` can have, as far as they can be listed: the
    /// split's sizes (capped at max_bs), or min and max of a range.
    pub fn bs_candidates(&self, d: usize) -> Vec<u64> {
        let (lo, hi) = (self.min_bs(d), self.max_bs(d));
        let mut v = vec![lo, hi];
        v.extend(self.bssplit[d].iter().map(|e| e.bs.0.min(hi)));
        v.sort_unstable();
        v.dedup();
        v
    }
}

impl Default for JobSpec {
    // Over 150 lines: one struct literal, a line per option's fio default.
    fn default() -> Self {
        JobSpec {
            name: String::new(),
            description: None,
            rw: RwMode::Read,
            rwmixread: 50,
            bs: [Bytes(4096); 2],
            size: None,
            filesize: None,
            nrfiles: 1,
            filename_format: None,
            filename: Vec::new(),
            directory: Vec::new(),
            numjobs: 1,
            ioengine: IoEngine::Psync,
            iodepth: 1,
            iodepth_batch: 1,
            iodepth_low: 0,
            max_latency: [0; 3],
            fadvise_hint: FadviseHint::Workload,
            create_fsync: true,
            sync_io: SyncIo::None,
            direct: false,
            atomic: false,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            time_based: false,
            runtime: None,
            ramp_time: Duration::ZERO,
            startdelay: Duration::ZERO,
            invalidate: true,
            fallocate: Fallocate::Native,
            create_on_open: false,
            unlink: false,
            file_append: false,
            unlink_each_loop: false,
            fsync_on_close: false,
            blocksize_unaligned: false,
            bs_minmax: [None; 3],
            bssplit: [Vec::new(), Vec::new(), Vec::new()],
            blockalign: [None; 3],
            bs_is_seq_rand: false,
            loops: 1,
            randrepeat: true,
            allrandrepeat: false,
            randseed: None,
            norandommap: false,
            random_generator: RandomGenerator::Tausworthe,
            file_service_type: FileService::RoundRobin(1),
            openfiles: None,
            group_reporting: false,
            stonewall: false,
            new_group: false,
            thread: false,
            zero_buffers: false,
            buffer_pattern: None,
            refill_buffers: None,
            scramble_buffers: true,
            buffer_compress_percentage: None,
            buffer_compress_chunk: Bytes(512),
            percentile_list: crate::probe::histogram::FIO_DEFAULT_PERCENTILES.to_vec(),
            lat_percentiles: false,
            clat_percentiles: true,
            slat_percentiles: false,
            job_options: Vec::new(),
            gtod_reduce: false,
            disable_lat: false,
            disable_clat: false,
            disable_slat: false,
            disable_bw: false,
            clocksource: None,
            hipri: false,
            uring: UringOptions::default(),
            wait_for: None,
            offset: SizeSpec::Bytes(Bytes(0)),
            offset_increment: Bytes(0),
            io_size: None,
            number_ios: 0,
            thinktime: Duration::ZERO,
            thinktime_spin: Duration::ZERO,
            thinktime_blocks: 1,
            rate: [0; 3],
            rate_min: [0; 3],
            rate_iops: [0; 3],
            rate_iops_min: [0; 3],
            rate_cycle_ms: 1000,
            rate_poisson: false,
            rate_ignore_thinktime: false,
            io_submit_offload: false,
            exitall: false,
            exit_what: ExitWhat::Group,
            rw_modifier: 0,
            rw_seq_nr: 1,
            rw_sequencer: RwSequencer::Sequential,
            cpumask: None,
            cpus_split: false,
            verify_cpumask: None,
            numa_cpu_nodes: None,
            numa_mem_policy: None,
            stats: true,
            random_distribution: RandomDistribution::Random,
            verify: false,
            do_verify: true,
            verify_interval: None,
            verify_kind: VerifyKind::Crc32c,
            verify_set: false,
            verify_pattern: None,
            verify_offset: Bytes(0),
            verify_backlog: 0,
            experimental_verify: false,
            verify_backlog_batch: 0,
            verify_dump: false,
            verify_fatal: false,
            verify_only: false,
            verify_async: 0,
            fill_device: false,
            continue_on_error: 0,
            ignore_error: [None, None, None],
            error_dump: false,
            create_serialize: true,
            dedupe_percentage: 0,
            dedupe_mode: DedupeMode::Repeat,
            dedupe_global: false,
            dedupe_working_set_percentage: 5,
            iodepth_batch_complete_min: 1,
            iodepth_batch_complete_max: 0,
            flow_id: 0,
            flow: 0,
            flow_sleep: Duration::ZERO,
            lat_log: None,
            bw_log: None,
            write_iolog: None,
            read_iolog: None,
            read_iolog_chunked: false,
            replay_no_stall: false,
            replay_redirect: None,
            replay_time_scale: 100,
            replay_align: 0,
            replay_scale: 1,
            replay: None,
            verify_state_save: false,
            verify_state_load: false,
            aux_path: None,
            hist_log: None,
            log_hist_msec: 0,
            log_hist_coarseness: 0,
            iops_log: None,
            log_offset: false,
            log_unix_epoch: false,
            log_avg_msec: 0,
            log_max: false,
            per_job_logs: true,
            log_prio: false,
            prio: None,
            prioclass: None,
            cmdprio: cmdprio::CmdPrioOptions::default(),
            zone_units: ZoneUnits::default(),
            zonemode: None,
            zonesize: 0,
            zonerange: 0,
            zoneskip: 0,
            read_beyond_wp: false,
            max_open_zones: 0,
            job_max_open_zones: 0,
            zone_reset_threshold: 0.0,
            zone_reset_frequency: 0.0,
            latency_target: None,
            latency_window: Duration::ZERO,
            latency_percentile: 100.0,
            latency_run: false,
            ss: SteadyState {
                kind: SteadyKind::IopsSlope,
                limit: 0.01,
                percent: true,
            },
            ss_dur: Duration::ZERO,
            ss_ramp: Duration::ZERO,
        }
    }
}

/// Every parsed job plus the `[global]` options as written (fio's "global options").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JobSet {
    /// Jobs in file order.
    pub jobs: Vec<JobSpec>,
    /// Options of `[global]` sections (and command-line options before the first `--name`).
    pub global_options: Vec<(String, String)>,
    /// Warnings for the user (fio prints such lines and runs the job anyway).
    pub warnings: Vec<String>,
    /// fio's `--readonly`: no job writes or trims (refused before the run), and no file is
    /// created or extended to lay it out.
    pub read_only: bool,
}

/// Where an option was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// Job file name, or `command line`.
    pub file: String,
    /// 1-based line (or argument position on the command line).
    pub line: usize,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A job file that cannot run as written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct JobFileError {
    /// Where.
    pub origin: Origin,
    /// What, and how to fix it.
    pub message: String,
}

pub(crate) fn err<T>(origin: &Origin, message: impl Into<String>) -> Result<T, JobFileError> {
    Err(JobFileError {
        origin: origin.clone(),
        message: message.into(),
    })
}

/// One `key[=value]` line as written.
#[derive(Clone, Debug, PartialEq)]
pub struct RawOption {
    /// Option name.
    pub key: String,
    /// Value (None for a bare flag).
    pub value: Option<String>,
    /// Where it was written.
    pub origin: Origin,
}

/// One `[section]` with its options, before validation.
#[derive(Clone, Debug, PartialEq)]
pub struct RawSection {
    /// Section name.
    pub name: String,
    /// Where the header was.
    pub origin: Origin,
    /// Options in order.
    pub options: Vec<RawOption>,
    /// First job section of a second or later job file (fio separates files by a stonewall).
    pub file_boundary: bool,
    /// Warnings met while reading the section (an unset `${VAR}`), for the caller to print.
    pub warnings: Vec<String>,
}

impl RawSection {
    /// Whether this is a `[global]` section.
    pub fn is_global(&self) -> bool {
        self.name == "global"
    }

    /// Whether the section came from fio's command-line job form (`--name=...`).
    pub fn from_command_line(&self) -> bool {
        self.origin.file == lexer::COMMAND_LINE
    }
}

/// Checks that involve several options. A job that can never run (size=0, a size below one
/// block) is refused here, so `--parse-only` refuses it too.
/// zonemode=zbd: what fio 3.33 refuses (init_zone_info, zbd_setup_files) and what this engine
/// does not emulate (zoneskip, verify), each an error saying how to fix the job.
fn zbd_check(job: &JobSpec, origin: &Origin) -> Result<(), JobFileError> {
    let name = &job.name;
    let refuse = |m: String| err(origin, format!("job '{name}': zonemode=zbd {m}"));
    if job.zonesize == 0 {
        return refuse("needs zonesize= for a regular file or block device (as in fio)".into());
    }
    if job.zonesize < 512 {
        return refuse("needs zonesize= of at least 512 bytes (as in fio)".into());
    }
    if job.job_max_open_zones > 0 && job.max_open_zones == 0 {
        return refuse(
            "with job_max_open_zones= needs max_open_zones= too (as in fio: 'job_max_open_zones' cannot be used without a global open zones limit)".into(),
        );
    }
    if job.zoneskip > 0 {
        return refuse("with zoneskip= is not supported; remove zoneskip".into());
    }
    if job.verify {
        return refuse("with verify= is not supported; remove verify or zonemode".into());
    }
    let bs = if job.rw.writes() { job.bs[1].0 } else { 0 };
    if bs > job.zonesize {
        return refuse(format!(
            "writes of bs={bs} do not fit a zone of zonesize={} (fio: I/O buflen exceeds zone size); lower bs or raise zonesize",
            job.zonesize
        ));
    }
    Ok(())
}

/// Refuse the job's options that cannot run, each with the error that says why and what to do
/// instead, checked in this order (the first refusal is the one reported).
fn validate(job: &JobSpec, origin: &Origin) -> Result<(), JobFileError> {
    check_buffers_and_rate_kinds(job, origin)?;
    check_engine_limits(job, origin)?;
    check_offload(job, origin)?;
    check_rates_and_size(job, origin)?;
    check_zones_and_distribution(job, origin)?;
    check_trims_and_verify(job, origin)?;
    check_files_and_logs(job, origin)?;
    // iodepth > 1 with a sync engine is accepted, as fio does; the engine runs at depth 1 and
    // the report says so.
    Ok(())
}

/// A job's options that fsdelta refuses: unlink_each_loop, buffer contents and the rate's units (fio's fixup_options).
fn check_buffers_and_rate_kinds(job: &JobSpec, origin: &Origin) -> Result<(), JobFileError> {
    if job.unlink_each_loop && (!job.rw.writes() || job.rw.reads()) {
        return err(
            origin,
            format!(
                "job '{}': unlink_each_loop with rw={} is not supported: the files are deleted before the next loop, which then reads short (fio 3.33 fails such a job with EIO or reads nothing); use it with a job that only writes",
                job.name,
                job.rw.as_str()
            ),
        );
    }
    // fio's fixup_options.
    let sum = |v: &[u64; 3]| v.iter().sum::<u64>();
    if (sum(&job.rate) > 0 && sum(&job.rate_iops) > 0)
        || (sum(&job.rate_min) > 0 && sum(&job.rate_iops_min) > 0)
    {
        return err(
            origin,
            format!(
                "job '{}': rate and rate_iops are mutually exclusive (as in fio): give the cap in bytes/s or in I/Os per second",
                job.name
            ),
        );
    }
    Ok(())
}

/// A job's options that fsdelta refuses: What the engine cannot do: max_latency and continue_on_error with the file engines, mmap's limits.
fn check_engine_limits(job: &JobSpec, origin: &Origin) -> Result<(), JobFileError> {
    if job.max_latency.iter().any(|&m| m > 0) && job.ioengine.is_file_op() {
        return err(
            origin,
            format!(
                "job '{}': max_latency with ioengine={} is not supported (fsdelta checks it for the read, write and trim engines); drop it or use another engine",
                job.name,
                job.ioengine.as_str()
            ),
        );
    }
    if job.continue_on_error != 0 && job.ioengine.is_file_op() {
        return err(
            origin,
            format!(
                "job '{}': continue_on_error / ignore_error with ioengine={} is not supported (fsdelta continues after the errors of the read, write and trim engines only); drop them or use another engine",
                job.name,
                job.ioengine.as_str()
            ),
        );
    }
    if job.ioengine == IoEngine::Mmap && job.fill_device {
        return err(
            origin,
            format!(
                "job '{}': fill_device with ioengine=mmap is not supported (a write to a mapping on a full filesystem is SIGBUS, which would end every job's report); use a write engine such as psync",
                job.name
            ),
        );
    }
    // fio's fio_mmapio_init: msync works on whole pages.
    if job.ioengine == IoEngine::Mmap
        && (0..3).any(|d| job.min_bs(d) % 4096 != 0)
        && (job.direct || job.fsync > 0 || job.fdatasync > 0)
    {
        return err(
            origin,
            format!(
                "job '{}': mmap options dictate a minimum block size of 4096 bytes (as fio: with direct=1, fsync= or fdatasync= every block size must be whole pages)",
                job.name
            ),
        );
    }
    Ok(())
}

/// A job's options that fsdelta refuses: io_submit_mode=offload: the engines and options it runs.
fn check_offload(job: &JobSpec, origin: &Origin) -> Result<(), JobFileError> {
    if job.io_submit_offload {
        let nfiles = job.nrfiles.max(job.filename.len() as u32);
        let unsupported = if !job.ramp_time.is_zero() {
            Some("ramp_time")
        } else if job.verify {
            Some("verify")
        } else if job.lat_log.is_some()
            || job.bw_log.is_some()
            || job.iops_log.is_some()
            || job.hist_log.is_some()
        {
            Some("write_lat_log / write_bw_log / write_iops_log / write_hist_log")
        } else if job.latency_target.is_some() {
            Some("latency_target")
        } else if job.flow > 0 {
            Some("flow")
        } else if job.fsync > 0 || job.fdatasync > 0 {
            Some("fsync= / fdatasync=")
        } else if job.openfiles.is_some_and(|o| o < nfiles) {
            Some("openfiles below the number of files")
        } else if job.continue_on_error != 0 {
            Some("continue_on_error / ignore_error")
        } else if job.max_latency.iter().any(|&m| m > 0) {
            Some("max_latency")
        } else if job.uring.in_use() {
            Some("registerfiles / fixedbufs / sqthread_poll / sqthread_poll_cpu")
        } else if !matches!(
            job.ioengine,
            IoEngine::Psync
                | IoEngine::Pvsync
                | IoEngine::Pvsync2
                | IoEngine::Libaio
                | IoEngine::IoUring
                | IoEngine::Null
        ) {
            Some(job.ioengine.as_str())
        } else {
            None
        };
        if let Some(what) = unsupported {
            return err(
                origin,
                format!(
                    "job '{}': io_submit_mode=offload with {what} is not supported (offload runs psync, pvsync, pvsync2, libaio, io_uring and null jobs without those); use io_submit_mode=inline",
                    job.name
                ),
            );
        }
    }
    Ok(())
}

/// A job's options that fsdelta refuses: The minimum rates against the rates, and a size= that can never run.
fn check_rates_and_size(job: &JobSpec, origin: &Origin) -> Result<(), JobFileError> {
    for d in 0..3 {
        if (job.rate[d] > 0 && job.rate[d] < job.rate_min[d])
            || (job.rate_iops[d] > 0 && job.rate_iops[d] < job.rate_iops_min[d])
        {
            return err(
                origin,
                format!(
                    "job '{}': the minimum rate exceeds the rate, ddir {d} (fio's check): lower rate_min / rate_iops_min or raise the rate",
                    job.name
                ),
            );
        }
    }
    if let Some(SizeSpec::Bytes(b)) = job.size {
        if b.0 == 0 {
            return err(
                origin,
                format!(
                    "job '{}': size=0 can never run (give a size, or leave size= out to use the whole existing file or device)",
                    job.name
                ),
            );
        }
        let used: Vec<u64> = [
            (job.rw.reads(), job.min_bs(0)),
            (job.rw.writes(), job.min_bs(1)),
        ]
        .iter()
        .filter(|(u, _)| *u)
        .map(|(_, b)| *b)
        .collect();
        let min_bs = used.iter().copied().min().unwrap_or(job.bs[0].0);
        if !job.ioengine.is_file_op() && b.0 < min_bs {
            return err(
                origin,
                format!(
                    "job '{}': size={} is smaller than one block (bs={}), so the job can never do I/O",
                    job.name, b.0, min_bs
                ),
            );
        }
    }
    Ok(())
}

/// A job's options that fsdelta refuses: zonemode= and zonesize=, and the random distributions with their generators and map.
fn check_zones_and_distribution(job: &JobSpec, origin: &Origin) -> Result<(), JobFileError> {
    if job.zonemode == Some(ZoneMode::Zbd) {
        zbd_check(job, origin)?;
    }
    if job.zonemode.is_none_or(|m| m == ZoneMode::None) && job.zonesize > 0 {
        return err(
            origin,
            format!(
                "job '{}': zonesize= needs zonemode=strided (zonemode=none, the default, and zonesize are not compatible, as in fio)",
                job.name
            ),
        );
    }
    if job.zonemode == Some(ZoneMode::Strided) && job.zonesize == 0 {
        return err(
            origin,
            format!(
                "job '{}': zonemode=strided needs zonesize= (as in fio)",
                job.name
            ),
        );
    }
    if matches!(
        job.random_distribution,
        RandomDistribution::Zoned { .. } | RandomDistribution::ZonedAbs { .. }
    ) && job.random_generator == RandomGenerator::Lfsr
    {
        return err(
            origin,
            format!(
                "job '{}': random_distribution=zoned or zoned_abs with random_generator=lfsr is not supported (use random_generator=tausworthe)",
                job.name
            ),
        );
    }
    if job.random_distribution != RandomDistribution::Random
        && job.rw.is_random()
        && !job.norandommap
    {
        return err(
            origin,
            format!(
                "job '{}': random_distribution other than random is supported with norandommap only (add norandommap)",
                job.name
            ),
        );
    }
    Ok(())
}

/// A job's options that fsdelta refuses: Trims, verify_only, verify=pattern and dedupe's working set.
fn check_trims_and_verify(job: &JobSpec, origin: &Origin) -> Result<(), JobFileError> {
    // fio's experimental_verify replays the offset generator from its seed instead of reading
    // the log of writes: the same blocks and counts while no block is written twice before its
    // verify (fio 3.33, randwrite 1 MiB: 256 writes and 256 reads either way). With
    // norandommap a block written twice fails fio's own check ("bad header numberio"); with
    // loops > 1 fio verifies only the last loop (256 reads, 1792 writes for 8 loops, against
    // 2048 and 2048 logged); with verify_backlog it interleaves otherwise.
    if job.experimental_verify && job.verify {
        let why = if job.norandommap && job.rw.is_random() {
            Some("norandommap (fio re-reads every write and fails on a block written twice)")
        } else if job.loops > 1 {
            Some("loops > 1 (fio verifies only the last loop's writes)")
        } else if job.verify_backlog > 0 {
            Some("verify_backlog")
        } else {
            None
        };
        if let Some(why) = why {
            return err(
                origin,
                format!(
                    "job '{}': experimental_verify=1 with {why} is not supported (fsdelta verifies the logged writes, which there differ from fio's replay): set experimental_verify=0",
                    job.name
                ),
            );
        }
    }
    if job.rw.trims() {
        // Trims are issued by the I/O engines (punch or discard) and falloc.
        // Not splice: fio 3.33's splice engine counts do_io_u_trim's 0 as a short trim and
        // fails the job (err=5, EIO).
        let engine_trims = matches!(
            job.ioengine,
            IoEngine::Psync
                | IoEngine::Sync
                | IoEngine::Pvsync
                | IoEngine::Pvsync2
                | IoEngine::Libaio
                | IoEngine::IoUring
                | IoEngine::Falloc
                | IoEngine::Null
        );
        if !engine_trims {
            return err(
                origin,
                format!(
                    "job '{}': rw={} with ioengine={} is not supported; trims run with ioengine=psync, sync, pvsync, pvsync2, libaio, io_uring, falloc or null",
                    job.name,
                    job.rw.as_str(),
                    job.ioengine.as_str()
                ),
            );
        }
        if job.verify {
            return err(
                origin,
                format!(
                    "job '{}': verify with rw={} is not supported (verify a write job)",
                    job.name,
                    job.rw.as_str()
                ),
            );
        }
    }
    if job.verify_only && job.verify && job.rw.writes() && job.time_based {
        return err(
            origin,
            format!(
                "job '{}': verify_only with time_based is not supported (fio 3.33's dry run of a time_based job never ends); drop time_based",
                job.name
            ),
        );
    }
    if job.verify
        && matches!(
            job.verify_kind,
            VerifyKind::Pattern | VerifyKind::PatternNoHdr
        )
        && job.verify_pattern.is_none()
    {
        return err(
            origin,
            format!("job '{}': verify=pattern needs verify_pattern=", job.name),
        );
    }
    if job.dedupe_percentage > 0 && job.dedupe_mode == DedupeMode::WorkingSet {
        if job.size.is_none() {
            return err(
                origin,
                format!(
                    "job '{}': dedupe_mode=working_set needs size= (fio: pregenerated dedupe working set requires size to be set)",
                    job.name
                ),
            );
        }
        if job.dedupe_working_set_percentage + job.dedupe_percentage > 100 {
            return err(
                origin,
                format!(
                    "job '{}': dedupe_percentage={} cannot be reached with {}% of size reserved to the working set (lower one of them)",
                    job.name, job.dedupe_percentage, job.dedupe_working_set_percentage
                ),
            );
        }
    }
    Ok(())
}

/// A job's options that fsdelta refuses: Files (registered, named, counted), buffer and sync options that contradict, cmdprio and log_unix_epoch.
fn check_files_and_logs(job: &JobSpec, origin: &Origin) -> Result<(), JobFileError> {
    if job.ioengine == IoEngine::IoUring && job.uring.registers_files() {
        let nfiles = job.nrfiles.max(job.filename.len() as u32);
        if job.openfiles.is_some_and(|o| o != nfiles) {
            // fio's fio_ioring_init: every file is registered (so open) for the whole job.
            return err(
                origin,
                format!(
                    "job '{}': io_uring registered files require nr_files to be identical to open_files (registerfiles / sqthread_poll with openfiles={} of {nfiles} files): drop openfiles= or registerfiles / sqthread_poll",
                    job.name,
                    job.openfiles.unwrap_or(nfiles)
                ),
            );
        }
    }
    if job.filename.len() > 1 && job.nrfiles > 1 && job.nrfiles as usize != job.filename.len() {
        return err(
            origin,
            format!(
                "job '{}': nrfiles={} disagrees with {} names in filename=",
                job.name,
                job.nrfiles,
                job.filename.len()
            ),
        );
    }
    if job.filename.len() == 1 && job.nrfiles > 1 {
        return err(
            origin,
            format!(
                "job '{}': nrfiles={} with a single filename= (name every file: filename=a:b:c)",
                job.name, job.nrfiles
            ),
        );
    }
    if job.zero_buffers && job.buffer_compress_percentage.is_some() {
        return err(
            origin,
            format!(
                "job '{}': zero_buffers and buffer_compress_percentage contradict each other",
                job.name
            ),
        );
    }
    if job.fsync > 0 && job.fdatasync > 0 {
        return err(
            origin,
            format!("job '{}': set fsync= or fdatasync=, not both", job.name),
        );
    }
    job.cmdprio
        .check([job.rw.reads(), job.rw.writes()])
        .or_else(|e| err(origin, format!("job '{}': {e}", job.name)))?;
    if job.log_unix_epoch && job.latency_target.is_some() {
        // The latency target's final run restarts the measured time: fio stamps the lines
        // before it with the old epoch; ours are stamped with one epoch when written.
        return err(
            origin,
            format!(
                "job '{}': log_unix_epoch=1 with latency_target is not supported (use log_unix_epoch=0)",
                job.name
            ),
        );
    }
    Ok(())
}

/// iodepth_batch and iodepth_low as fio's fixup_options makes them (0 or more than iodepth:
/// iodepth): this engine refills the queue as each completion frees a slot, which is fio's
/// iodepth_low=iodepth, and submits iodepth_batch queued I/Os in one call with libaio and
/// io_uring (not offloaded), each on its own with the other engines (fio's iodepth_batch=1).
/// Other values are refused for the engines that queue (io_uring, libaio, posixaio, vsync,
/// and null, which queues in fio); the synchronous engines complete each I/O in its call,
/// where neither changes anything.
fn queue_options_check(
    job: &JobSpec,
    globals: &[RawOption],
    section: &RawSection,
) -> Result<(), JobFileError> {
    if job.ioengine.is_sync() && job.ioengine != IoEngine::Null {
        return Ok(());
    }
    let effective = |v: u32| {
        if v == 0 || v > job.iodepth {
            job.iodepth
        } else {
            v
        }
    };
    let origin_of = |names: &[&str]| {
        globals
            .iter()
            .chain(&section.options)
            .rfind(|o| names.contains(&o.key.as_str()))
            .map_or(section.origin.clone(), |o| o.origin.clone())
    };
    let batch = effective(job.iodepth_batch);
    // libaio and io_uring submit a batch in one call (io_submit, io_uring_enter), as fio's
    // commit does; the others submit each I/O as it is queued.
    let batches =
        matches!(job.ioengine, IoEngine::Libaio | IoEngine::IoUring) && !job.io_submit_offload;
    if batch != 1 && !batches {
        return err(
            &origin_of(&["iodepth_batch", "iodepth_batch_submit"]),
            format!(
                "job '{}': iodepth_batch={} with iodepth={} submits {batch} I/Os at once, which fsdelta's fio engine does with ioengine=libaio or io_uring only (not offloaded); with ioengine={} it submits each I/O on its own: drop iodepth_batch (fio's default 1)",
                job.name,
                job.iodepth_batch,
                job.iodepth,
                job.ioengine.as_str()
            ),
        );
    }
    let low = effective(job.iodepth_low);
    if low != job.iodepth {
        return err(
            &origin_of(&["iodepth_low"]),
            format!(
                "job '{}': iodepth_low={} below iodepth={} is not supported by fsdelta's fio engine (it refills the queue as each I/O completes: fio's default iodepth_low=iodepth)",
                job.name, job.iodepth_low, job.iodepth
            ),
        );
    }
    Ok(())
}

/// A section's options as fio lists them (`job options`, `global options`): canonical names,
/// values as parsed, in fio's order (see [`options::listing_order`]); a bare flag's value is
/// empty (fio's JSON leaves it out).
pub fn shown_options(section: &RawSection) -> Vec<(String, String)> {
    options::listing_order(&section.options, !section.from_command_line())
        .into_iter()
        .map(|o| {
            (
                options::shown_name(&o.key).to_string(),
                o.value.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// Validate raw sections (from one or more files, or the command line) into jobs.
pub fn build_jobs(sections: &[RawSection]) -> Result<JobSet, JobFileError> {
    let mut globals: Vec<RawOption> = Vec::new();
    let mut set = JobSet::default();
    for section in sections {
        set.warnings.extend(section.warnings.iter().cloned());
        for opt in &section.options {
            if let Some(n) = options::fio_leading_number(opt) {
                set.warnings.push(format!(
                    "{}: {}={} is read as {}={n}, as fio 3.33 reads it (the text after the number is ignored; fio evaluates no arithmetic there)",
                    opt.origin,
                    opt.key,
                    opt.value.as_deref().unwrap_or_default(),
                    opt.key
                ));
            }
            if options::SOFT_DEPRECATED.contains(&opt.key.as_str()) {
                // fio 3.33's FIO_OPT_SOFT_DEPRECATED: "Option verifysort is deprecated", and
                // nothing else happens (fio prints it to stdout, before a JSON document).
                set.warnings.push(format!(
                    "{}: Option {} is deprecated (fio 3.33 ignores it, and so does fsdelta)",
                    opt.origin, opt.key
                ));
            }
        }
        if section.is_global() {
            for opt in &section.options {
                // Validate now so the error points at the [global] line.
                options::apply(&mut JobSpec::default(), opt)?;
                globals.push(opt.clone());
            }
            set.global_options.extend(shown_options(section));
            continue;
        }
        let mut job = JobSpec {
            name: section.name.clone(),
            ..JobSpec::default()
        };
        let mut limited: Vec<(&'static options::OptDef, &RawOption)> = Vec::new();
        for opt in globals.iter() {
            let name = job.name.clone();
            let def = options::apply(&mut job, opt)?;
            // fio: name= in [global] names no job; each keeps its section name.
            job.name = name;
            if !def.engines.is_empty() {
                limited.push((def, opt));
            }
        }
        for opt in section.options.iter() {
            let def = options::apply(&mut job, opt)?;
            if !def.engines.is_empty() {
                limited.push((def, opt));
            }
        }
        for (def, opt) in limited {
            if !def.engines.contains(&job.ioengine) {
                let e: Vec<&str> = def.engines.iter().map(|e| e.as_str()).collect();
                return err(
                    &opt.origin,
                    format!(
                        "option '{}' applies to ioengine={} only, and job '{}' uses ioengine={}",
                        opt.key,
                        e.join(","),
                        job.name,
                        job.ioengine.as_str()
                    ),
                );
            }
        }
        job.resolve_zone_units();
        if job.atomic {
            // fio's fixup_options: "O_ATOMIC implies O_DIRECT", after every option is read.
            job.direct = true;
        }
        queue_options_check(&job, &globals, section)?;
        if section.file_boundary {
            job.stonewall = true;
        }
        if job.time_based && job.runtime.is_none() {
            // fio says so and runs the job as if time_based were not set.
            set.warnings.push(format!(
                "{}: job '{}': time_based requires a runtime/timeout setting; running it size-based (as fio does)",
                section.origin, job.name
            ));
            job.time_based = false;
        }
        if !job.norandommap && (0..3).any(|d| job.ba(d) != job.min_bs(d)) {
            // fio's fixup_options, word for word (its random map counts in min bs units).
            set.warnings.push(format!(
                "{}: job '{}': blockalign= other than the smallest block size turns off the random map, as in fio (\"Any use of blockalign= turns off randommap\"); add norandommap to say so",
                section.origin, job.name
            ));
            job.norandommap = true;
        }
        if job.norandommap && job.verify && !(0..3).all(|d| job.fixed_bs(d)) {
            // fio's fixup_options (a warning only): writes of several sizes without a random
            // map overlap, and an overlapped write is not read back.
            set.warnings.push(format!(
                "{}: job '{}': norandommap given for variable block sizes, verify limited (as fio says: a write that overlaps earlier ones replaces them in the verify log, and only the newest is read back)",
                section.origin, job.name
            ));
        }
        job.job_options = shown_options(section);
        validate(&job, &section.origin)?;
        if let Some(w) = &job.wait_for {
            // As in fio, the job waited for is one defined before (no wait can be circular).
            if !set.jobs.iter().any(|o| &o.name == w) {
                return err(
                    &section.origin,
                    format!(
                        "job '{}': wait_for={w} names no job defined before it",
                        job.name
                    ),
                );
            }
        }
        set.jobs.push(job);
    }
    if set.jobs.is_empty() {
        let origin = sections
            .first()
            .map(|s| s.origin.clone())
            .unwrap_or(Origin {
                file: "job file".to_string(),
                line: 0,
            });
        return err(
            &origin,
            "no job defined (add a [jobname] section or --name=)",
        );
    }
    Ok(set)
}

/// Parse one job file's text with `sources` (convenience for suites with inline job text).
pub fn parse_job_text(
    text: &str,
    file: &str,
    sources: &dyn Sources,
) -> Result<JobSet, JobFileError> {
    build_jobs(&parse_ini(text, file, sources)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[derive(Default)]
    struct MapSources {
        env: HashMap<String, String>,
        files: HashMap<String, String>,
    }

    impl Sources for MapSources {
        fn env(&self, name: &str) -> Option<String> {
            self.env.get(name).cloned()
        }
        fn include(&self, path: &str, _from: &str) -> Result<(String, String), String> {
            self.files
                .get(path)
                .cloned()
                .map(|t| (path.to_string(), t))
                .ok_or_else(|| format!("{path}: no such file"))
        }
        fn keyword(&self, word: &str) -> Option<u64> {
            match word {
                "$mb_memory" => Some(64),
                "$pagesize" => Some(4096),
                "$ncpus" => Some(2),
                _ => None,
            }
        }
    }

    fn parse(text: &str) -> Result<JobSet, JobFileError> {
        parse_job_text(text, "t.fio", &MapSources::default())
    }

    fn one(text: &str) -> JobSpec {
        let set = parse(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set.jobs.len(), 1);
        set.jobs.into_iter().next().unwrap()
    }

    #[test]
    fn atomic_implies_direct_whatever_buffered_says() {
        // fio's fixup_options runs after every option: the order does not matter.
        for text in [
            "[a]\natomic=1\nbuffered=1\n",
            "[a]\ndirect=0\natomic=1\n",
            "[global]\natomic=1\n[a]\nbuffered=1\n",
        ] {
            let j = one(text);
            assert!(j.atomic && j.direct, "{text}");
        }
        assert!(!one("[a]\natomic=0\n").direct);
    }

    #[test]
    fn io_uring_ring_options_parse() {
        let j =
            one("[j]\nsize=1m\nioengine=io_uring\nfixedbufs\nsqthread_poll\nsqthread_poll_cpu=1\n");
        assert_eq!(
            j.uring,
            UringOptions {
                registerfiles: false,
                fixedbufs: true,
                sqthread_poll: true,
                sqthread_poll_cpu: Some(1),
                iopoll: false,
            }
        );
        assert!(j.uring.registers_files());
        assert!(!one("[j]\nsize=1m\nioengine=io_uring\n").uring.in_use());
        // fio's io_uring hipri: IORING_SETUP_IOPOLL; hipri=0 leaves the ring as it is.
        assert!(one("[j]\nsize=1m\nioengine=io_uring\nhipri\n").uring.iopoll);
        assert!(
            !one("[j]\nsize=1m\nioengine=io_uring\nhipri=0\n")
                .uring
                .iopoll
        );
        // fio's general options, with engines that take no use of them.
        let j = one("[global]\niodepth_batch_complete_min=2\n[j]\nsize=1m\nioengine=psync\n");
        assert_eq!(j.iodepth_batch_complete_min, 2);
    }

    #[test]
    fn fios_file_and_queue_options_parse() {
        let j = one(
            "[j]\nsize=1m\nfadvise_hint=random\ncreate_fsync=0\nsync=dsync\niodepth_batch_submit=4\niodepth_low=2\n",
        );
        assert_eq!(j.fadvise_hint, FadviseHint::Random);
        assert!(!j.create_fsync);
        assert_eq!(j.sync_io, SyncIo::Dsync);
        assert_eq!((j.iodepth_batch, j.iodepth_low), (4, 2));
        // Listed under fio's canonical name.
        assert_eq!(j.job_options[4], ("iodepth_batch".into(), "4".into()));
        let d = one("[j]\nsize=1m\n");
        assert_eq!(
            (d.fadvise_hint, d.create_fsync, d.sync_io),
            (FadviseHint::Workload, true, SyncIo::None)
        );
        assert_eq!(one("[j]\nsize=1m\nsync=1\n").sync_io, SyncIo::Sync);
        assert!(one("[j]\nsize=1m\nlog_unix_epoch=1\n").log_unix_epoch);
        assert!(parse("[j]\nsize=1m\nlog_unix_epoch=1\nlatency_target=10ms\n").is_err());
        assert_eq!(
            one("[j]\nsize=1m\nfadvise_hint=0\n").fadvise_hint,
            FadviseHint::None
        );
        // iodepth_batch / iodepth_low that fio makes 1 / iodepth with a queueing engine.
        one("[j]\nsize=1m\nioengine=libaio\niodepth=4\niodepth_batch=1\niodepth_low=9\n");
        one("[j]\nsize=1m\nioengine=libaio\niodepth=1\niodepth_batch=4\n");
        // Batches of more than one: libaio and io_uring submit them in one call.
        for engine in ["libaio", "io_uring"] {
            let j = one(&format!(
                "[j]\nsize=1m\nioengine={engine}\niodepth=8\niodepth_batch=4\n"
            ));
            assert_eq!(j.iodepth_batch, 4);
        }
        let e = parse("[j]\nsize=1m\nioengine=posixaio\niodepth=8\niodepth_batch=4\n").unwrap_err();
        assert!(e.to_string().contains("libaio or io_uring only"), "{e}");
        for bad in ["iodepth_batch=0", "iodepth_batch=2", "iodepth_low=3"] {
            let e = parse(&format!("[j]\nsize=1m\nioengine=null\niodepth=4\n{bad}\n")).unwrap_err();
            assert_eq!(e.origin.line, 5, "{e}");
        }
    }

    #[test]
    fn zone_values_are_counted_in_zonesize() {
        let j = one(
            "[j]\nzonemode=strided\nsize=2z\nio_size=3z\noffset=1z\noffset_increment=2z\nzoneskip=1z\nzonesize=256k\n",
        );
        assert_eq!(j.size, Some(SizeSpec::Bytes(Bytes(512 << 10))));
        assert_eq!(j.io_size, Some(Bytes(768 << 10)));
        assert_eq!(j.offset, SizeSpec::Bytes(Bytes(256 << 10)));
        assert_eq!(j.offset_increment, Bytes(512 << 10));
        assert_eq!(j.zoneskip, 256 << 10);
        // No zone size: size stays unset (fio's size_nz with zone_size 0).
        assert_eq!(one("[j]\nsize=2z\n").size, None);
        for bad in ["size=1.5z", "offset=z", "io_size=k2z", "bs=1z"] {
            let e = parse(&format!("[j]\nzonemode=strided\nzonesize=1m\n{bad}\n")).unwrap_err();
            assert!(e.message.contains(&bad[..bad.find('=').unwrap()]), "{e}");
        }
    }

    #[test]
    fn sizes_are_base_1024_with_fios_suffixes() {
        let b = |s: &str| match parse_size(s).unwrap() {
            SizeValue::Bytes(b) => b.0,
            SizeValue::Percent(_) => panic!(),
        };
        assert_eq!(b("4096"), 4096);
        assert_eq!(b("4k"), 4096);
        assert_eq!(b("4K"), 4096);
        assert_eq!(b("4kb"), 4096);
        assert_eq!(b("1m"), 1 << 20);
        assert_eq!(b("1M"), 1 << 20);
        assert_eq!(b("2g"), 2 << 30);
        assert_eq!(b("1t"), 1 << 40);
        assert_eq!(b("1p"), 1 << 50);
        assert_eq!(b("512b"), 512);
        assert_eq!(b("1.5k"), 1536);
        // fio's inversion under kb_base=1024: KiB means 1000.
        assert_eq!(b("4KiB"), 4000);
        assert_eq!(b("1MiB"), 1_000_000);
        assert_eq!(parse_size("50%").unwrap(), SizeValue::Percent(50));
        assert!(parse_size("4x").is_err());
        assert!(parse_size("k").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("99999999999999999999").is_err());
        assert!(parse_size("20000000p").is_err());
    }

    #[test]
    fn times_default_to_seconds_and_take_fios_suffixes() {
        assert_eq!(parse_time("10").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_time("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_time("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_time("500msec").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_time("20us").unwrap(), Duration::from_micros(20));
        assert_eq!(parse_time("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_time("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_time("1d").unwrap(), Duration::from_secs(86400));
        assert!(parse_time("1y").is_err());
        assert!(parse_time("ms").is_err());
    }

    #[test]
    fn global_options_are_inherited_and_overridden() {
        let set = parse(
            "[global]\nbs=8k\nsize=1m\nrw=randread\n[a]\n[b]\nbs=16k\n[global]\nnumjobs=3\n[c]\n",
        )
        .unwrap();
        assert_eq!(set.jobs.len(), 3);
        assert_eq!(set.jobs[0].bs, [Bytes(8192); 2]);
        assert_eq!(set.jobs[0].rw, RwMode::RandRead);
        assert_eq!(set.jobs[1].bs, [Bytes(16384); 2]);
        assert_eq!(set.jobs[1].numjobs, 1);
        // a later [global] affects only later jobs, as in fio
        assert_eq!(set.jobs[2].numjobs, 3);
        assert_eq!(set.global_options[0], ("bs".to_string(), "8k".to_string()));
        assert_eq!(
            set.jobs[1].job_options,
            vec![("bs".to_string(), "16k".to_string())]
        );
    }

    #[test]
    fn comments_blank_lines_and_inline_comments_are_skipped() {
        let j = one("; a comment\n# another\n\n[j] ; trailing\nsize=1m # inline\n  bs = 8k  \n");
        assert_eq!(j.size, Some(SizeSpec::Bytes(Bytes(1 << 20))));
        assert_eq!(j.bs, [Bytes(8192); 2]);
        assert_eq!(j.name, "j");
    }

    #[test]
    fn bare_flags_and_boolean_values() {
        let j = one(
            "[j]\nsize=1m\ntime_based\nruntime=5\nend_fsync=1\ninvalidate=0\nnorandommap\nthread\ngroup_reporting=true\n",
        );
        assert!(j.time_based && j.end_fsync && j.norandommap && j.thread && j.group_reporting);
        assert!(!j.invalidate);
        assert_eq!(j.runtime, Some(Duration::from_secs(5)));
        let e = parse("[j]\nsize=1m\nend_fsync=maybe\n").unwrap_err();
        assert_eq!(e.origin.line, 3);
        assert!(e.message.contains("not a boolean"), "{e}");
    }

    #[test]
    fn every_supported_option_parses() {
        let text = "[global]\ndescription=all options\n[j]\nname=renamed\nrw=randrw\nrwmixread=70\n\
            bs=4k,8k\nsize=4m\nfilesize=1m\nnrfiles=4\ndirectory=/a:/b\nnumjobs=2\nioengine=io_uring\n\
            iodepth=32\ndirect=1\nfdatasync=8\nend_fsync=1\ntime_based=1\nruntime=2m\nramp_time=500ms\n\
            startdelay=1\ninvalidate=0\nfallocate=keep\ncreate_on_open=1\nunlink=1\nloops=3\n\
            randrepeat=0\nrandseed=1234\nnorandommap=1\nrandom_generator=lfsr\n\
            file_service_type=random:4\nopenfiles=2\ngroup_reporting=1\nstonewall\nnew_group\nthread\n\
            refill_buffers=1\nscramble_buffers=0\nbuffer_compress_percentage=60\n\
            buffer_compress_chunk=4k\npercentile_list=99.9:50:99\nlat_percentiles=1\nclat_percentiles=0\n";
        let j = one(text);
        assert_eq!(j.name, "renamed");
        assert_eq!(j.description.as_deref(), Some("all options"));
        assert_eq!(j.rw, RwMode::RandRw);
        assert_eq!(j.rwmixread, 70);
        assert_eq!(j.bs, [Bytes(4096), Bytes(8192)]);
        assert_eq!(j.size, Some(SizeSpec::Bytes(Bytes(4 << 20))));
        assert_eq!(j.filesize, Some(SizeRange::fixed(Bytes(1 << 20))));
        assert_eq!(j.nrfiles, 4);
        assert_eq!(j.directory, vec!["/a", "/b"]);
        assert_eq!(j.numjobs, 2);
        assert_eq!(j.ioengine, IoEngine::IoUring);
        assert_eq!(j.iodepth, 32);
        assert!(j.direct);
        assert_eq!(j.fdatasync, 8);
        assert!(j.end_fsync && j.time_based);
        assert_eq!(j.runtime, Some(Duration::from_secs(120)));
        assert_eq!(j.ramp_time, Duration::from_millis(500));
        assert_eq!(j.startdelay, Duration::from_secs(1));
        assert!(!j.invalidate);
        assert_eq!(j.fallocate, Fallocate::Keep);
        assert!(j.create_on_open && j.unlink);
        assert_eq!(j.loops, 3);
        assert!(!j.randrepeat);
        assert_eq!(j.randseed, Some(1234));
        assert!(j.norandommap);
        assert_eq!(j.random_generator, RandomGenerator::Lfsr);
        assert_eq!(j.file_service_type, FileService::Random(4));
        assert_eq!(j.openfiles, Some(2));
        assert!(j.group_reporting && j.stonewall && j.new_group && j.thread);
        assert!(j.refill_buffers == Some(true) && !j.scramble_buffers && !j.zero_buffers);
        assert_eq!(j.buffer_compress_percentage, Some(60));
        assert_eq!(j.buffer_compress_chunk, Bytes(4096));
        assert_eq!(j.percentile_list, vec![50.0, 99.0, 99.9]);
        assert!(j.lat_percentiles && !j.clat_percentiles);
        let k = one(
            "[k]\nsize=1m\nrw=readwrite\nrwmixwrite=30\nbuffered=0\nfsync=4\nzero_buffers\nfilename=x:y\nioengine=pvsync\nfile_service_type=sequential\nfallocate=none\nrandom_generator=tausworthe64\n",
        );
        assert_eq!(k.rw, RwMode::ReadWrite);
        assert_eq!(k.rwmixread, 70);
        assert!(k.direct && k.zero_buffers);
        assert_eq!(k.fsync, 4);
        assert_eq!(k.filename, vec!["x", "y"]);
        assert_eq!(k.ioengine, IoEngine::Pvsync);
        assert_eq!(k.file_service_type, FileService::Sequential);
        assert_eq!(k.fallocate, Fallocate::None);
        assert_eq!(k.random_generator, RandomGenerator::Tausworthe64);
        let f = one("[f]\nioengine=filecreate\nnrfiles=100\nfilesize=4k\nsize=50%\n");
        assert_eq!(f.ioengine, IoEngine::FileCreate);
        assert_eq!(f.size, Some(SizeSpec::Percent(50)));
        let l = one("[l]\nioengine=libaio\nsize=1m\niodepth=8\n");
        assert_eq!(l.ioengine, IoEngine::Libaio);
        assert!(!l.ioengine.is_sync());
        let s = one("[s]\nioengine=sync\nsize=1m\nblocksize=2k\nwait_for_previous\n");
        assert_eq!(s.ioengine, IoEngine::Sync);
        assert_eq!(s.bs, [Bytes(2048); 2]);
        assert!(s.stonewall);
    }

    #[test]
    fn defaults_are_fios() {
        let j = one("[j]\nsize=1m\n");
        assert_eq!(j.rw, RwMode::Read);
        assert_eq!(j.bs, [Bytes(4096); 2]);
        assert_eq!(j.ioengine, IoEngine::Psync);
        assert!(j.invalidate && j.randrepeat && j.scramble_buffers && j.clat_percentiles);
        assert_eq!(j.fallocate, Fallocate::Native);
        assert_eq!(j.percentile_list.len(), 17);
        assert_eq!(j.rwmixread, 50);
    }

    #[test]
    fn block_size_ranges_splits_and_alignment_per_direction() {
        let j = one("[j]\nsize=1m\nbsrange=16k-4k,8k:64k\n");
        assert_eq!(j.bs_minmax[0], Some((Bytes(4096), Bytes(16384))));
        assert_eq!(j.bs_minmax[1], Some((Bytes(8192), Bytes(65536))));
        assert_eq!(j.bs_minmax[2], j.bs_minmax[1]);
        assert_eq!(
            (j.min_bs(0), j.max_bs(1), j.rw_min_bs()),
            (4096, 65536, 4096)
        );
        let j = one("[j]\nsize=1m\nbs=2k\nbssplit=,4k/10:64k/50:32k/40\n");
        assert!(j.bssplit[0].is_empty());
        assert_eq!(j.min_bs(0), 2048);
        assert_eq!((j.min_bs(1), j.max_bs(1)), (4096, 65536));
        assert_eq!(j.bssplit[1][0].perc, 10);
        assert_eq!(j.bssplit[2], j.bssplit[1]);
        assert_eq!(j.max_bs_any(), 65536);
        // blockalign only counts for random jobs, and there it turns off the random map
        let set = parse_job_text(
            "[r]\nsize=1m\nrw=randread\nbssplit=512/50:4k\nblockalign=4k\n[s]\nsize=1m\nba=4k\nbs=512\n",
            "t.fio",
            &MapSources::default(),
        )
        .unwrap();
        assert!(set.jobs[0].norandommap && set.jobs[0].ba(0) == 4096);
        assert_eq!(set.jobs[1].ba(0), 512);
        assert_eq!(set.warnings.len(), 1);
        assert!(set.warnings[0].contains("turns off the random map"));
    }

    #[test]
    fn env_variables_expand_and_undefined_ones_warn_and_expand_to_nothing() {
        let mut src = MapSources::default();
        src.env.insert("SZ".into(), "2m".into());
        src.env.insert("DIR".into(), "/tmp/x".into());
        let set = parse_job_text("[j]\nsize=${SZ}\ndirectory=${DIR}/sub\n", "t.fio", &src).unwrap();
        assert_eq!(set.jobs[0].size, Some(SizeSpec::Bytes(Bytes(2 << 20))));
        assert_eq!(set.jobs[0].directory, vec!["/tmp/x/sub"]);
        assert!(set.warnings.is_empty());
        // fio substitutes an empty string; we do too, and say so.
        let set = parse_job_text("[j]\nsize=1m\ndirectory=/tmp${NOPE}/d\n", "t.fio", &src).unwrap();
        assert_eq!(set.jobs[0].directory, vec!["/tmp/d"]);
        assert_eq!(set.warnings.len(), 1);
        assert!(
            set.warnings[0].contains("'NOPE' is not set") && set.warnings[0].contains("t.fio:3")
        );
        // "${" without a closing brace is kept literally (and then fails as a size)
        assert!(parse_job_text("[j]\nsize=${SZ\n", "t.fio", &src).is_err());
    }

    #[test]
    fn keywords_and_arithmetic_are_evaluated() {
        let j = one("[j]\nsize=5*1024*$mb_memory/8\nbs=$pagesize\nnumjobs=$ncpus\n");
        assert_eq!(j.size, Some(SizeSpec::Bytes(Bytes(5 * 1024 * 64 / 8))));
        assert_eq!(j.bs, [Bytes(4096); 2]);
        assert_eq!(j.numjobs, 2);
        let j = one("[j]\nsize=(1m*2)\nbs=(2*2k)\n");
        assert_eq!(j.size, Some(SizeSpec::Bytes(Bytes(2 << 20))));
        assert_eq!(j.bs, [Bytes(4096); 2]);
    }

    #[test]
    fn global_name_does_not_rename_jobs() {
        let set = parse("[global]\nname=g\nsize=1m\n[a]\n[b]\nname=renamed\n").unwrap();
        assert_eq!(set.jobs[0].name, "a");
        assert_eq!(set.jobs[1].name, "renamed");
    }

    #[test]
    fn bom_is_skipped_and_an_empty_file_is_named() {
        let j = one("\u{feff}[j]\nsize=1m\n");
        assert_eq!(j.name, "j");
        let e = parse("; only a comment\n\n").unwrap_err();
        assert!(e.message.contains("'t.fio' is empty"), "{e}");
    }

    #[test]
    fn time_based_without_runtime_warns_and_runs_size_based() {
        let set = parse("[j]\nsize=1m\ntime_based\n").unwrap();
        assert!(!set.jobs[0].time_based);
        assert!(
            set.warnings[0].contains("time_based requires a runtime"),
            "{:?}",
            set.warnings
        );
    }

    #[test]
    fn includes_are_read_through_sources_with_their_own_line_numbers() {
        let mut src = MapSources::default();
        src.files
            .insert("common.fio".into(), "bs=8k\n; note\nsize=1m\n".into());
        src.files
            .insert("bad.fio".into(), "bs=8k\nfrobnicate=1\n".into());
        src.files.insert("sect.fio".into(), "[x]\n".into());
        let set = parse_job_text("[j]\ninclude common.fio\nrw=write\n", "t.fio", &src).unwrap();
        assert_eq!(set.jobs[0].bs, [Bytes(8192); 2]);
        assert_eq!(set.jobs[0].rw, RwMode::Write);
        let e = parse_job_text("[j]\nsize=1m\ninclude bad.fio\n", "t.fio", &src).unwrap_err();
        assert_eq!(
            e.origin,
            Origin {
                file: "bad.fio".into(),
                line: 2
            }
        );
        let e = parse_job_text("[j]\ninclude missing.fio\n", "t.fio", &src).unwrap_err();
        assert!(e.message.contains("cannot read include"), "{e}");
        let e = parse_job_text("[j]\ninclude sect.fio\n", "t.fio", &src).unwrap_err();
        assert!(e.message.contains("options only"), "{e}");
        src.files
            .insert("loop.fio".into(), "include loop.fio\n".into());
        let e = parse_job_text("[j]\ninclude loop.fio\n", "t.fio", &src).unwrap_err();
        assert!(e.message.contains("nesting"), "{e}");
    }

    #[test]
    fn command_line_form_starts_a_job_at_each_name() {
        let args: Vec<String> = [
            "--size=1m",
            "--bs",
            "8k",
            "--name=a",
            "--rw=randread",
            "--time_based",
            "--runtime=1",
            "--name=b",
            "--rw=write",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let secs = parse_cmdline(&args, &MapSources::default()).unwrap();
        let set = build_jobs(&secs).unwrap();
        assert_eq!(set.jobs.len(), 2);
        assert_eq!(set.jobs[0].name, "a");
        assert_eq!(set.jobs[0].bs, [Bytes(8192); 2]);
        assert!(set.jobs[0].time_based);
        assert_eq!(set.jobs[1].rw, RwMode::Write);
        assert_eq!(set.jobs[1].size, Some(SizeSpec::Bytes(Bytes(1 << 20))));
        let e = build_jobs(
            &parse_cmdline(
                &["--name=a".into(), "--size=1m".into(), "--bogus=1".into()],
                &MapSources::default(),
            )
            .unwrap(),
        )
        .unwrap_err();
        assert_eq!(
            e.origin,
            Origin {
                file: "command line".into(),
                line: 3
            }
        );
        assert!(parse_cmdline(&["size=1m".into()], &MapSources::default()).is_err());
    }

    /// fsperf's fio tests (josefbacik/fsperf tests/*.py), each with the options fsperf's
    /// FioTest adds (program options --output-format, --output and --alloc-size are the CLI's).
    #[test]
    fn fsperfs_fio_command_lines_parse() {
        let common = "--allrandrepeat=1 --randseed=12345 --group_reporting=1 --directory /mnt/test";
        let tests = [
            "--name bufferedappendsync --direct=0 --size=1g --rw=write --fdatasync=1 --ioengine=sync",
            "--name bufferedrandwrite16g --readwrite randwrite --size 16G --ioengine psync --end_fsync 1 --fallocate none",
            "--name dio4kbs16threads --direct=1 --size=1g --rw=randwrite --norandommap --runtime=60 --iodepth=1024 --nrfiles=16 --numjobs=16",
            "--name diorandread --direct=1 --size=1g --rw=randread --runtime=60 --iodepth=1024 --nrfiles=16 --numjobs=16",
            "--name emptyfiles500k --create_on_open=1 --nrfiles=31250 --readwrite=write --ioengine=filecreate --fallocate=none --filesize=4k --openfiles=1",
            "--name randwrite2xram --direct=0 --ioengine=sync --thread --invalidate=1 --runtime=300 --fallocate=none --ramp_time=10 --new_group --rw=randwrite --size=8589934592 --numjobs=4 --bs=4k --fsync_on_close=0 --end_fsync=0",
            "--name=smallfiles100k --nrfiles=100000 --blocksize_unaligned=1 --filesize=10:1m --readwrite=write --fallocate=none --numjobs=4 --create_on_open=1 --openfiles=500",
        ];
        for t in tests {
            let line = format!("{common} {t}");
            let args: Vec<String> = line.split_whitespace().map(str::to_string).collect();
            let set = parse_cmdline(&args, &MapSources::default())
                .and_then(|s| build_jobs(&s))
                .unwrap_or_else(|e| panic!("{t}: {e}"));
            let j = &set.jobs[0];
            assert!(j.allrandrepeat && j.group_reporting, "{t}");
            assert_eq!(j.randseed, Some(12345));
            assert_eq!(j.directory, vec!["/mnt/test"]);
        }
        let small = parse_cmdline(
            &tests[6]
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>(),
            &MapSources::default(),
        )
        .and_then(|s| build_jobs(&s))
        .unwrap();
        assert_eq!(
            small.jobs[0].filesize,
            Some(SizeRange {
                low: Bytes(10),
                high: Bytes(1 << 20)
            })
        );
        assert!(small.jobs[0].blocksize_unaligned);
    }

    #[test]
    fn trim_modes_and_the_trim_block_size() {
        let set = parse_job_text(
            "[t]\nsize=1m\nrw=randtrim\nbs=4k,8k,16k\n[tw]\nsize=1m\nrw=trimwrite\nbs=8k\n",
            "t.fio",
            &MapSources::default(),
        )
        .unwrap();
        let (t, tw) = (&set.jobs[0], &set.jobs[1]);
        assert_eq!(t.rw, RwMode::RandTrim);
        assert!(t.rw.trims() && t.rw.is_random() && !t.rw.reads() && !t.rw.writes());
        assert_eq!((t.min_bs(0), t.min_bs(1), t.min_bs(2)), (4096, 8192, 16384));
        assert!(tw.rw.trims() && tw.rw.writes() && tw.rw.trim_then_write());
        assert_eq!(
            tw.min_bs(2),
            8192,
            "without a third size trims take the write one"
        );
        assert_eq!(tw.rw.as_str(), "trimwrite");
    }

    #[test]
    fn second_job_file_starts_with_a_stonewall() {
        let mut a = parse_ini("[a]\nsize=1m\n", "a.fio", &MapSources::default()).unwrap();
        let mut b = parse_ini("[b]\nsize=1m\n", "b.fio", &MapSources::default()).unwrap();
        mark_file_boundary(&mut b);
        a.append(&mut b);
        let set = build_jobs(&a).unwrap();
        assert!(!set.jobs[0].stonewall);
        assert!(set.jobs[1].stonewall);
    }

    /// Bad job files and the error each must produce (line, and a piece of the message).
    // Over 150 lines: a table of cases, one bad job file and its error per line.
    #[test]
    fn bad_job_files_give_their_errors() {
        let table: &[(&str, usize, &str)] = &[
            (
                "[j]\nsize=1m\nfrobnicate=1\n",
                3,
                "option 'frobnicate' is not supported",
            ),
            (
                "[j]\nsize=1m\ntrim_percentage=5\n",
                3,
                "option 'trim_percentage=5' is not supported by fsdelta's fio engine (verified blocks are not trimmed; accepted: 0)",
            ),
            ("[j]\nsize=1m\ntrim_verify_zero=1\n", 3, "the closest: "),
            (
                "[j]\nsize=1m\nrw=randwrite\nverify=md5\nnorandommap\nexperimental_verify=1\n",
                1,
                "experimental_verify=1 with norandommap (fio re-reads every write",
            ),
            (
                "[j]\nsize=1m\nrw=write\nverify=md5\nloops=8\nexperimental_verify=1\n",
                1,
                "experimental_verify=1 with loops > 1",
            ),
            ("size=1m\n[j]\n", 1, "outside of a [section]"),
            ("[j\nsize=1m\n", 1, "malformed section header"),
            ("[]\n", 1, "empty section name"),
            (
                "[j]\nsize=1m\nrw=randread:8k\n",
                3,
                "is not a count of I/Os",
            ),
            ("[j]\nsize=1m\nrw=randrw:0\n", 3, "is not a count of I/Os"),
            (
                "[j]\nsize=1m\nrw=randread:-2\n",
                3,
                "is not a count of I/Os",
            ),
            ("[j]\nsize=1m\nrw=randread:x\n", 3, "is not a count of I/Os"),
            ("[j]\nsize=1m\nrw_sequencer=backwards\n", 3, "rw_sequencer"),
            ("[j]\nsize=1m\nrw=read:-8x\n", 3, "is not a size"),
            ("[j]\nsize=1m\nzonesize=1m\n", 1, "needs zonemode=strided"),
            (
                "[j]\nsize=1m\nio_submit_mode=offload\nramp_time=1\n",
                1,
                "io_submit_mode=offload with ramp_time is not supported",
            ),
            (
                "[j]\nsize=1m\nrandom_distribution=zoned:50/5:30/15\n",
                3,
                "access percentages add up to 80",
            ),
            (
                "[j]\nsize=1m\nrandom_distribution=zoned:50/5,50/5\n",
                3,
                "per-direction",
            ),
            (
                "[j]\nsize=1m\nrandom_distribution=zoned_abs:50/1m:40/1m\n",
                3,
                "access percentages add up to 90",
            ),
            (
                "[j]\nsize=1m\nrandom_distribution=normal:120\n",
                3,
                "normal deviation out of range",
            ),
            (
                "[j]\nsize=1m\nrandom_distribution=zoned_abs:100/1m\nrandom_generator=lfsr\n",
                1,
                "use random_generator=tausworthe",
            ),
            ("[j]\nsize=1m\nzonemode=strided\n", 1, "needs zonesize="),
            (
                "[j]\nsize=1m\nzonemode=zbd\n",
                1,
                "zonemode=zbd needs zonesize=",
            ),
            (
                "[j]\nsize=1m\nzonemode=zbd\nzonesize=256k\njob_max_open_zones=2\n",
                1,
                "needs max_open_zones=",
            ),
            (
                "[j]\nsize=1m\nrw=write\nzonemode=zbd\nzonesize=64k\nbs=128k\n",
                1,
                "do not fit a zone",
            ),
            (
                "[j]\nsize=1m\nhipri\n",
                3,
                "applies to ioengine=pvsync2,io_uring only",
            ),
            (
                "[j]\nsize=1m\nsqthread_poll\n",
                3,
                "applies to ioengine=io_uring only",
            ),
            (
                "[j]\nsize=1m\nioengine=io_uring\nio_submit_mode=offload\nfixedbufs\n",
                1,
                "io_submit_mode=offload with registerfiles / fixedbufs",
            ),
            (
                "[j]\nsize=1m\nioengine=io_uring\nnrfiles=2\nopenfiles=1\nregisterfiles\n",
                1,
                "registered files require nr_files to be identical to open_files",
            ),
            ("[j]\nsize=1m\nioengine=rdma\n", 3, "choose one of"),
            (
                "[j]\nsize=1m\nioengine=mmap\nbs=512\nfsync=4\n",
                1,
                "minimum block size of 4096",
            ),
            (
                "[j]\nsize=1m\nrw=write\nverify=sha384\n",
                4,
                "choose one of",
            ),
            (
                "[j]\nsize=1m\nrw=write\nverify=crc7\nverify_only\ntime_based\nruntime=1\n",
                1,
                "verify_only with time_based",
            ),
            (
                "[j]\nsize=1m\nverify=crc7\nverify_async=2\nverify_async_cpus=0-\n",
                5,
                "'0-' is not a CPU or a range",
            ),
            (
                "[j]\nsize=1m\nioengine=ftruncate\nrw=randtrim\n",
                1,
                "trims run with ioengine=psync",
            ),
            ("[j]\nsize=1m\nbs=4k,8k,16k,32k\n", 3, "at most three sizes"),
            (
                "[j]\nsize=1m\nrw=randread\nrandom_distribution=zipf:1.2\n",
                1,
                "norandommap only",
            ),
            ("[j]\nsize=1m\nrandom_distribution=zipf:1\n", 3, "not 1.0"),
            ("[a]\nsize=1m\n[b]\nsize=1m\nwait_for=c\n", 3, "wait_for=c"),
            ("[j]\nsize=1m\nbsrange=4k\n", 3, "not a range"),
            (
                "[j]\nsize=1m\nbssplit=4k/80:8k/30:2k\n",
                3,
                "more than 100%",
            ),
            ("[j]\nsize=1m\nbssplit=4k/x:8q\n", 3, "'8q' is not a size"),
            ("[j]\nsize=1m\nba=0\n", 3, "min value out of range"),
            ("[j]\nsize=lots\n", 2, "not a size"),
            ("[j]\nsize=4x\n", 2, "unknown size suffix"),
            ("[j]\nsize=150%\n", 2, "not in 1..=100"),
            ("[j]\nsize=1m\nbs=4k-16k\n", 3, "ranges"),
            ("[j]\nfilesize=1m:4k\n", 2, "runs backwards"),
            ("[j]\nfilesize=0\n", 2, "at least 1 byte"),
            ("[j]\nfilesize=0:4k\n", 2, "at least 1 byte"),
            ("[j]\nsize=1m\nbs=0\n", 3, "greater than 0"),
            ("[j]\nsize=1m\nbs\n", 3, "needs a value"),
            ("[j]\nsize=1m\nrwmixread=101\n", 3, "out of range"),
            ("[j]\nsize=1m\nnumjobs=0\n", 3, "out of range"),
            ("[j]\nsize=1m\nnumjobs=two\n", 3, "not a whole number"),
            ("[j]\nsize=1m\nruntime=10y\n", 3, "unknown time suffix"),
            ("[j]\nsize=1m\nstartdelay=1-5\n", 3, "ranges"),
            ("[j]\nsize=1m\nfallocate=maybe\n", 3, "choose one of"),
            ("[j]\nsize=1m\nrandom_generator=mt\n", 3, "choose one of"),
            ("[j]\nsize=1m\nfile_service_type=zipf:1.2\n", 3, "bad count"),
            (
                "[j]\nsize=1m\nfile_service_type=gauss\n",
                3,
                "choose one of",
            ),
            (
                "[j]\nsize=1m\npercentile_list=50:101\n",
                3,
                "not a percentile",
            ),
            ("[j]\nsize=1m\nfilename=a::b\n", 3, "empty name"),
            ("[j]\nsize=0\n", 1, "size=0 can never run"),
            ("[j]\nsize=2k\nbs=4k\n", 1, "smaller than one block"),
            ("[j]\nsize=-1\n", 2, "must be positive"),
            ("[j]\nsize=1m\nbs=-4k\n", 3, "must be positive"),
            ("[j]\nsize=1m\nnumjobs=-2\n", 3, "must be positive"),
            ("[j]\nsize=1m\nruntime=-5\n", 3, "must be positive"),
            ("[j]\nsize=1m\nfsync=1\nfdatasync=1\n", 1, "not both"),
            (
                "[j]\nsize=1m\nzero_buffers\nbuffer_compress_percentage=50\n",
                1,
                "contradict",
            ),
            ("[j]\nsize=1m\nnrfiles=3\nfilename=a:b\n", 1, "disagrees"),
            (
                "[j]\nsize=1m\nnrfiles=3\nfilename=a\n",
                1,
                "single filename",
            ),
            ("[global]\nsize=1m\n", 1, "no job defined"),
            ("[global]\nbogus=1\n[j]\n", 2, "option 'bogus'"),
            ("[j]\n=5\n", 2, "missing option name"),
            ("[j]\ninclude x.fio\n", 2, "cannot read include"),
        ];
        for (text, line, needle) in table {
            let e = parse(text).expect_err(text);
            assert_eq!(e.origin.line, *line, "{text:?}: {e}");
            assert_eq!(e.origin.file, "t.fio");
            assert!(e.to_string().contains(needle), "{text:?}: {e}");
        }
    }

    proptest::proptest! {
        /// Any text at all parses to jobs or to an error; never a panic.
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
            let _ = parse(&text);
        }

        /// Job-file-shaped text with arbitrary keys and values never panics either.
        #[test]
        fn arbitrary_options_never_panic(
            lines in proptest::collection::vec(("[a-z_]{1,20}", "[ -~]{0,20}"), 0..12)
        ) {
            let mut text = String::from("[j]\n");
            for (k, v) in &lines {
                text.push_str(&format!("{k}={v}\n"));
            }
            let _ = parse(&text);
        }

        /// Sizes scale by their suffix exactly (base 1024), whatever the number.
        #[test]
        fn size_suffixes_multiply_exactly(n in 0u64..1_000_000, i in 0usize..6) {
            let (suffix, mult) = [("", 1u64), ("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30),
                ("K", 1 << 10), ("t", 1 << 40)][i];
            proptest::prop_assert_eq!(
                parse_size(&format!("{n}{suffix}")),
                Ok(SizeValue::Bytes(Bytes(n * mult)))
            );
        }

        /// Times scale by their suffix exactly; a bare number is seconds.
        #[test]
        fn time_suffixes_multiply_exactly(n in 0u64..100_000, i in 0usize..5) {
            let (suffix, us) = [("", 1_000_000u64), ("s", 1_000_000), ("ms", 1_000),
                ("us", 1), ("m", 60_000_000)][i];
            proptest::prop_assert_eq!(
                parse_time(&format!("{n}{suffix}")),
                Ok(Duration::from_micros(n * us))
            );
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        // A deterministic fuzz loop: random byte strings, and random splices of real option
        // lines, must give Ok or Err, never a panic.
        use rand::{Rng, SeedableRng};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let pieces = [
            "[global]\n",
            "[j]\n",
            "size=",
            "4k",
            "bs=",
            "%",
            "${",
            "}",
            "include ",
            "=",
            "\n",
            ";",
            "#",
            "rw=randrw",
            "1.5",
            "-",
            ":",
            "runtime=",
            "ms",
            "percentile_list=",
            "0x",
            "\u{e9}",
        ];
        for _ in 0..20_000 {
            let n = rng.random_range(0..64);
            let text: String = if rng.random_bool(0.5) {
                let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                String::from_utf8_lossy(&bytes).into_owned()
            } else {
                (0..n)
                    .map(|_| pieces[rng.random_range(0..pieces.len())])
                    .collect()
            };
            let _ = parse(&text);
            let args: Vec<String> = text.split('\n').map(|s| format!("--{s}")).collect();
            let _ = parse_cmdline(&args, &MapSources::default()).and_then(|s| build_jobs(&s));
        }
    }
}
