//! fs_mark 3.3's command line: its getopt string `vhkFr:S:N:D:d:l:L:n:p:s:t:w:`, its defaults,
//! its limits and its cross-option rules, plus our `--json`.
//!
//! Why a module of its own: the options are the contract with everyone who already has an
//! fs_mark command line in a script; parsing them is pure and tested flag by flag. This module
//! must never touch the filesystem (the log file and the directories are only named here).
//!
//! Deliberate differences from fs_mark, all of them refusals of input fs_mark would misread:
//! numbers must be whole integers (fs_mark's `atoi` reads `-n 10k` as 10 and `-S x` as 0);
//! `-n 0`, `-w 0`, `-p 0`, negative sizes, counts and iterations, `-r` larger than `-p`,
//! `-N` without `-D` and stray operands are usage errors (fs_mark crashes, loops forever or
//! silently ignores them); at most 64 `-d` (fs_mark's check lets a 65th overflow its table);
//! `-d` paths may be up to 999 bytes (Debian's build rejects 40 and more); `-h` exits 0.

use serde::Serialize;
use std::fmt;
use std::path::PathBuf;

/// Most workers (and directories), as fs_mark's `MAX_THREADS`.
pub const MAX_THREADS: u32 = 64;
/// Largest write() size, as fs_mark's `MAX_IO_BUFFER_SIZE`.
pub const MAX_IO_SIZE: u32 = 1024 * 1024;
/// Most files per worker per iteration, as fs_mark's `MAX_FILES`.
pub const MAX_FILES: u32 = 1_000_000;
/// Longest file name, as fs_mark's `FILENAME_SIZE`.
pub const MAX_NAME_LEN: u32 = 128;
/// A `-d` path must be shorter than this, as upstream fs_mark's `MAX_NAME_PATH`.
pub const MAX_DIR_PATH: usize = 1000;
/// Largest file size: fs_mark keeps it in a C `int` while writing.
pub const MAX_FILE_SIZE: u64 = i32::MAX as u64;
/// Seconds a worker stays in one subdirectory under the time-hash policy.
pub const SECS_PER_SUBDIR: u64 = 180;

/// fs_mark's defaults.
pub const DEFAULT_FILE_SIZE: u64 = 50 * 1024;
/// Default write() size.
pub const DEFAULT_IO_SIZE: u32 = 16 * 1024;
/// Default files per worker per iteration.
pub const DEFAULT_FILES: u32 = 1000;
/// Default file-name length.
pub const DEFAULT_NAME_LEN: u32 = 40;
/// Default random characters at the end of a name.
pub const DEFAULT_RAND_LEN: u32 = 24;
/// fs_mark's default log file (appended to, relative to the current directory).
pub const DEFAULT_LOG_FILE: &str = "./fs_log.txt";

/// `-S`: when data is made durable. The numbers are fs_mark's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncMethod {
    /// 0: no sync() and no fsync().
    None,
    /// 1: fsync(fd) before each close, inside the loop (the default).
    PerFile,
    /// 2: after the loop, sync() then open+fsync+close of the first file.
    SyncThenFirstFile,
    /// 3: after the loop, open+fsync+close of every file, in reverse creation order.
    PostReverse,
    /// 4: after the loop, sync() then as 3.
    SyncPostReverse,
    /// 5: after the loop, open+fsync+close of every file, in creation order.
    Post,
    /// 6: after the loop, sync() then as 5.
    SyncPost,
}

impl SyncMethod {
    /// From fs_mark's number.
    pub fn from_number(n: i64) -> Option<SyncMethod> {
        Some(match n {
            0 => SyncMethod::None,
            1 => SyncMethod::PerFile,
            2 => SyncMethod::SyncThenFirstFile,
            3 => SyncMethod::PostReverse,
            4 => SyncMethod::SyncPostReverse,
            5 => SyncMethod::Post,
            6 => SyncMethod::SyncPost,
            _ => return None,
        })
    }

    /// fs_mark's number.
    pub fn number(self) -> u32 {
        match self {
            SyncMethod::None => 0,
            SyncMethod::PerFile => 1,
            SyncMethod::SyncThenFirstFile => 2,
            SyncMethod::PostReverse => 3,
            SyncMethod::SyncPostReverse => 4,
            SyncMethod::Post => 5,
            SyncMethod::SyncPost => 6,
        }
    }

    /// fsync() before each close, inside the loop.
    pub fn fsync_in_loop(self) -> bool {
        self == SyncMethod::PerFile
    }

    /// sync() once after the loop.
    pub fn sync_after_loop(self) -> bool {
        matches!(
            self,
            SyncMethod::SyncThenFirstFile | SyncMethod::SyncPostReverse | SyncMethod::SyncPost
        )
    }

    /// Which files are reopened and fsync()ed after the loop.
    pub fn post_fsync(self) -> PostFsync {
        match self {
            SyncMethod::SyncThenFirstFile => PostFsync::FirstFile,
            SyncMethod::PostReverse | SyncMethod::SyncPostReverse => PostFsync::Reverse,
            SyncMethod::Post | SyncMethod::SyncPost => PostFsync::InOrder,
            SyncMethod::None | SyncMethod::PerFile => PostFsync::Nothing,
        }
    }

    /// fs_mark's description, printed in the header.
    pub fn description(self) -> &'static str {
        match self {
            SyncMethod::None => "NO SYNC: Test does not issue sync() or fsync() calls.",
            SyncMethod::PerFile => "INBAND FSYNC: fsync() per file in write loop.",
            SyncMethod::SyncThenFirstFile => {
                "SYSTEM SYNC/SINGLE FSYNC: Issue sync() after main write loop and 1 file fsync() per subdirectory."
            }
            SyncMethod::PostReverse => {
                "POST REVERSE: Reopen and fsync() each file in reverse order after main write loop."
            }
            SyncMethod::SyncPostReverse => {
                "SYNC POST REVERSE: Issue sync() and then reopen and fsync() each file in reverse order after main write loop."
            }
            SyncMethod::Post => {
                "POST: Reopen and fsync() each file in order after main write loop."
            }
            SyncMethod::SyncPost => {
                "SYNC POST: Issue sync() and then reopen and fsync() each file in order after main write loop."
            }
        }
    }
}

/// The reopen-and-fsync phase after the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostFsync {
    /// None.
    Nothing,
    /// Only the first file created.
    FirstFile,
    /// Every file, last created first.
    Reverse,
    /// Every file, in creation order.
    InOrder,
}

/// Where files go beneath a worker's directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "policy")]
pub enum DirPolicy {
    /// All files in the worker's directory.
    NoSubdirs,
    /// `-D N -N M`: M files in a subdirectory, then the next (wrapping).
    RoundRobin {
        /// Subdirectories.
        subdirs: u32,
        /// Files per subdirectory before moving on (0: stay in the first one).
        files_per_subdir: u32,
    },
    /// `-D N` alone: move to the next subdirectory every 180 s.
    TimeHash {
        /// Subdirectories.
        subdirs: u32,
        /// Seconds per subdirectory.
        secs_per_subdir: u64,
    },
}

impl DirPolicy {
    /// Number of subdirectories (0 without -D).
    pub fn subdirs(self) -> u32 {
        match self {
            DirPolicy::NoSubdirs => 0,
            DirPolicy::RoundRobin { subdirs, .. } | DirPolicy::TimeHash { subdirs, .. } => subdirs,
        }
    }
}

/// Every fs_mark option, validated. Fields are public so a suite can build options in code;
/// [`FsMarkOptions::parse`] is the way from a command line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FsMarkOptions {
    /// `-d`: test directories, in order. Relative ones are resolved against the run directory;
    /// none means the run directory itself.
    #[serde(serialize_with = "lossy_paths")]
    pub dirs: Vec<PathBuf>,
    /// `-t`, after fs_mark's adjustment (raised to the number of directories, a multiple of it).
    pub threads: u32,
    /// `-n`: files per worker per iteration.
    pub files: u32,
    /// `-s`: bytes per file.
    pub file_size: u64,
    /// `-w`: bytes per write().
    pub io_size: u32,
    /// `-D` / `-N`.
    pub dir_policy: DirPolicy,
    /// `-L` as given (`None`: one iteration; `Some(0)` also runs once, as fs_mark).
    pub loops: Option<u32>,
    /// `-k`, or implied by `-L` / `-F`: keep files after each iteration.
    pub keep: bool,
    /// `-F`: iterate until free space < file_size * files.
    pub fill: bool,
    /// `-S`.
    pub sync: SyncMethod,
    /// `-p`: file-name length.
    pub name_len: u32,
    /// `-r`: random characters at the end of a name.
    pub rand_len: u32,
    /// `-l`: log file appended to, as fs_mark's; `None` writes no log (the suite runner's
    /// choice). [`FsMarkOptions::parse`] defaults it to `./fs_log.txt`. A relative path is
    /// relative to the process's current directory, as in fs_mark (not to the run directory).
    #[serde(serialize_with = "lossy_path")]
    pub log_file: Option<PathBuf>,
    /// `-v`: per-system-call Min/Avg/Max columns.
    pub verbose: bool,
    /// `--json`: print the full measurements as JSON instead of fs_mark's table.
    pub json: bool,
    /// The arguments as typed (after the program name), echoed in the header; empty when the
    /// options were built in code.
    pub argv: Vec<String>,
}

/// Paths as text, so that serializing never fails on a non-UTF-8 name.
fn lossy_paths<S: serde::Serializer>(v: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|p| p.to_string_lossy()))
}

fn lossy_path<S: serde::Serializer>(v: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(p) => s.serialize_some(&p.to_string_lossy()),
        None => s.serialize_none(),
    }
}

impl Default for FsMarkOptions {
    /// fs_mark's defaults, no `-d` (the run directory), no log file.
    fn default() -> Self {
        FsMarkOptions {
            dirs: Vec::new(),
            threads: 1,
            files: DEFAULT_FILES,
            file_size: DEFAULT_FILE_SIZE,
            io_size: DEFAULT_IO_SIZE,
            dir_policy: DirPolicy::NoSubdirs,
            loops: None,
            keep: false,
            fill: false,
            sync: SyncMethod::PerFile,
            name_len: DEFAULT_NAME_LEN,
            rand_len: DEFAULT_RAND_LEN,
            log_file: None,
            verbose: false,
            json: false,
            argv: Vec::new(),
        }
    }
}

impl FsMarkOptions {
    /// Why these options would work outside the directory a suite's test runs in: a `-d` or
    /// `-l` path that is absolute or climbs out with `..` (the message names the option, the
    /// path and the fix); `None` when every path stays inside. The standalone `fsdelta fsmark`
    /// keeps fs_mark's own meaning of its paths and does not ask.
    pub fn outside_target(&self) -> Option<String> {
        use crate::workload::leaves_target;
        let fix = "a suite's test runs in the target directory and its samples are stored with \
                   the target's filesystem and device, so every path it names must stay inside: \
                   use a path relative to the target (-d sub), without a leading / and without \
                   '..' climbing out";
        let bad_dir = self
            .dirs
            .iter()
            .find(|d| leaves_target(d))
            .map(|d| ("-d", d));
        let bad_log = self
            .log_file
            .as_ref()
            .filter(|l| leaves_target(l))
            .map(|l| ("-l", l));
        bad_dir.or(bad_log).map(|(opt, path)| {
            format!(
                "fs_mark option {opt} {} leaves the target directory: {fix}",
                path.display()
            )
        })
    }
}

/// A command line fs_mark would refuse (or `-h`). Its `Display` is fs_mark-style: the reason on
/// one line, then the usage text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageError {
    /// Why, or `None` for `-h` / `--help`.
    pub reason: Option<String>,
}

impl UsageError {
    fn new(reason: impl Into<String>) -> Self {
        UsageError {
            reason: Some(reason.into()),
        }
    }

    /// fs_mark's rule for its own command line: at least one `-d`. (Inside a suite no `-d`
    /// means the run directory.)
    pub fn no_directory() -> Self {
        UsageError::new("Must specify at least one directory with -d switch")
    }

    /// Whether this is a request for help rather than an error.
    pub fn is_help(&self) -> bool {
        self.reason.is_none()
    }

    /// The usage text alone.
    pub fn usage() -> &'static str {
        USAGE
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(r) = &self.reason {
            writeln!(f, "{r}")?;
        }
        f.write_str(USAGE)
    }
}

impl std::error::Error for UsageError {}

const USAGE: &str = "Usage: fsdelta fsmark (fs_mark 3.3 compatible)
\t-h <print usage and exit>
\t-k <keep files after each iteration>
\t-F <run until FS full>
\t-v <verbose: per system call Min/Avg/Max columns, in microseconds>
\t-S Sync Method (0:No Sync, 1:fsyncBeforeClose, 2:sync/1_fsync, 3:PostReverseFsync, 4:syncPostReverseFsync, 5:PostFsync, 6:syncPostFsync)
\t[-D number (of subdirectories)]
\t[-N number (of files in each subdirectory in Round Robin mode)]
\t[-d dir1 ... -d dirN]
\t[-l log_file_name]
\t[-L number (of iterations)]
\t[-n number (of files per iteration)]
\t[-p number (of total bytes file names)]
\t[-r number (of random bytes in file names)]
\t[-s byte_count (size in bytes of each file)]
\t[-t number (of total threads)]
\t[-w number (of bytes per write() syscall)]
\t[--json (print the full measurements as JSON instead of the table)]
Workers are threads of one process, started together (fs_mark forks one process per worker);
each system call is timed with CLOCK_MONOTONIC in nanoseconds (fs_mark: gettimeofday, in
microseconds). Output, Files/sec and App Overhead follow fs_mark's definitions.
";

/// A number as fs_mark reads it, but refusing what `atoi` would silently misread.
fn number(opt: char, v: &str) -> Result<i64, UsageError> {
    v.trim()
        .parse::<i64>()
        .map_err(|_| UsageError::new(format!("-{opt}: '{v}' is not a whole number")))
}

fn non_negative(opt: char, v: &str, what: &str) -> Result<u64, UsageError> {
    let n = number(opt, v)?;
    u64::try_from(n)
        .map_err(|_| UsageError::new(format!("-{opt}: {what} must not be negative (got {n})")))
}

fn at_least_one(opt: char, v: &str, what: &str) -> Result<u64, UsageError> {
    let n = number(opt, v)?;
    if n < 1 {
        return Err(UsageError::new(format!(
            "-{opt}: {what} must be at least 1 (got {n})"
        )));
    }
    Ok(n as u64)
}

impl FsMarkOptions {
    /// Parse fs_mark's flags (without the program name) with getopt's rules: flags may be
    /// clustered (`-vk`), values attached (`-L5`) or separate (`-L 5`), a value may start with
    /// `-`, `--` ends the options. `--json` and `--help` are ours.
    pub fn parse(args: &[String]) -> Result<FsMarkOptions, UsageError> {
        let mut o = FsMarkOptions {
            log_file: Some(PathBuf::from(DEFAULT_LOG_FILE)),
            argv: args.to_vec(),
            ..FsMarkOptions::default()
        };
        let mut threads: i64 = 1;
        let mut subdirs: u32 = 0;
        let mut per_subdir: Option<u32> = None;

        let mut i = 0;
        while i < args.len() {
            let arg = args[i].as_str();
            i += 1;
            if arg == "--" {
                if let Some(extra) = args.get(i) {
                    return Err(UsageError::new(format!("unexpected argument '{extra}'")));
                }
                break;
            }
            if arg == "--json" {
                o.json = true;
                continue;
            }
            if arg == "--help" {
                return Err(UsageError { reason: None });
            }
            if arg.starts_with("--") {
                return Err(UsageError::new(format!(
                    "fsdelta fsmark: unrecognized option '{arg}'"
                )));
            }
            if !arg.starts_with('-') || arg == "-" {
                return Err(UsageError::new(format!(
                    "unexpected argument '{arg}' (fs_mark takes only options; directories go with -d)"
                )));
            }
            let cluster = &arg[1..];
            for (pos, c) in cluster.char_indices() {
                match c {
                    'v' => o.verbose = true,
                    'h' => return Err(UsageError { reason: None }),
                    'k' => o.keep = true,
                    'F' => {
                        o.keep = true;
                        o.fill = true;
                    }
                    'r' | 'S' | 'N' | 'D' | 'd' | 'l' | 'L' | 'n' | 'p' | 's' | 't' | 'w' => {
                        let rest = &cluster[pos + c.len_utf8()..];
                        let value = if !rest.is_empty() {
                            rest.to_string()
                        } else if let Some(v) = args.get(i) {
                            i += 1;
                            v.clone()
                        } else {
                            return Err(UsageError::new(format!(
                                "fsdelta fsmark: option requires an argument -- '{c}'"
                            )));
                        };
                        o.apply(c, &value, &mut threads, &mut subdirs, &mut per_subdir)?;
                        break;
                    }
                    other => {
                        return Err(UsageError::new(format!(
                            "fsdelta fsmark: invalid option -- '{other}'"
                        )));
                    }
                }
            }
        }

        if subdirs == 0 && per_subdir.is_some() {
            return Err(UsageError::new(
                "Must specify more than 1 subdirectory with -D switch for -N num_per_subdir to make sense",
            ));
        }
        o.dir_policy = match (subdirs, per_subdir) {
            (0, _) => DirPolicy::NoSubdirs,
            (d, Some(n)) => DirPolicy::RoundRobin {
                subdirs: d,
                files_per_subdir: n,
            },
            (d, None) => DirPolicy::TimeHash {
                subdirs: d,
                secs_per_subdir: SECS_PER_SUBDIR,
            },
        };
        if o.rand_len > o.name_len {
            return Err(UsageError::new(format!(
                "Random bytes in file names (-r {}) cannot exceed the name length (-p {})",
                o.rand_len, o.name_len
            )));
        }
        // One worker per directory at least; more must divide evenly between them.
        let ndirs = o.dirs.len().max(1) as i64;
        if ndirs > threads {
            threads = ndirs;
        } else if threads % ndirs != 0 {
            return Err(UsageError::new(format!(
                "Threads ({threads}) must be an even multiple the number of directories ({ndirs}) and at most {MAX_THREADS}"
            )));
        }
        o.threads = threads as u32;
        Ok(o)
    }

    /// Options for a suite test from an fs_mark command line such as
    /// `fs_mark -s 0 -n 10000 -t 2 -S 0 -D 16 -N 256` (the leading `fs_mark` is optional, words
    /// are split on white space). No `-d` means the run directory; no log file is written
    /// unless `-l` is given.
    pub fn from_command_line(line: &str) -> Result<FsMarkOptions, UsageError> {
        let mut words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        if words
            .first()
            .is_some_and(|w| w == "fs_mark" || w.ends_with("/fs_mark"))
        {
            words.remove(0);
        }
        let explicit_log = words.iter().any(|w| w.starts_with("-l"));
        let mut o = FsMarkOptions::parse(&words)?;
        if !explicit_log {
            o.log_file = None;
        }
        Ok(o)
    }

    fn apply(
        &mut self,
        opt: char,
        v: &str,
        threads: &mut i64,
        subdirs: &mut u32,
        per_subdir: &mut Option<u32>,
    ) -> Result<(), UsageError> {
        match opt {
            'D' => {
                let n = number(opt, v)?;
                if n < 2 {
                    return Err(UsageError::new(
                        "Number of subdirs needs to be greater than 1",
                    ));
                }
                *subdirs = u32::try_from(n)
                    .map_err(|_| UsageError::new(format!("-D: {n} subdirectories is too many")))?;
            }
            'd' => {
                if self.dirs.len() >= MAX_THREADS as usize {
                    return Err(UsageError::new(format!(
                        "Max number of threads (and directories) is {MAX_THREADS}"
                    )));
                }
                if v.len() >= MAX_DIR_PATH {
                    return Err(UsageError::new(format!(
                        "fs_mark: {v} directory pathname too long (must be less than {MAX_DIR_PATH} bytes)"
                    )));
                }
                if v.is_empty() {
                    return Err(UsageError::new("-d: the directory name is empty"));
                }
                self.dirs.push(PathBuf::from(v));
            }
            'l' => self.log_file = Some(PathBuf::from(v)),
            'L' => {
                // fs_mark with -L 0 runs no iteration and reports nothing: refuse it.
                let n = at_least_one(opt, v, "the number of iterations")?;
                self.loops = Some(
                    u32::try_from(n)
                        .map_err(|_| UsageError::new(format!("-L: {n} iterations is too many")))?,
                );
                self.keep = true;
            }
            'n' => {
                let n = at_least_one(opt, v, "the number of files")?;
                if n > MAX_FILES as u64 {
                    return Err(UsageError::new(format!("Max files is {MAX_FILES}")));
                }
                self.files = n as u32;
            }
            'N' => {
                let n = non_negative(opt, v, "files per subdirectory")?;
                *per_subdir = Some(u32::try_from(n).map_err(|_| {
                    UsageError::new(format!("-N: {n} files per subdirectory is too many"))
                })?);
            }
            'p' => {
                let n = at_least_one(opt, v, "the file-name length")?;
                if n > MAX_NAME_LEN as u64 {
                    return Err(UsageError::new(format!(
                        "Max filename size is {MAX_NAME_LEN}"
                    )));
                }
                self.name_len = n as u32;
            }
            'r' => {
                let n = non_negative(opt, v, "random bytes in file names")?;
                if n > MAX_NAME_LEN as u64 {
                    return Err(UsageError::new(format!(
                        "Max filename size is {MAX_NAME_LEN}"
                    )));
                }
                self.rand_len = n as u32;
            }
            's' => {
                let n = non_negative(opt, v, "the file size")?;
                if n > MAX_FILE_SIZE {
                    return Err(UsageError::new(format!("Max file size is {MAX_FILE_SIZE}")));
                }
                self.file_size = n;
            }
            'S' => {
                let n = number(opt, v)?;
                self.sync = SyncMethod::from_number(n).ok_or_else(|| {
                    UsageError::new(format!("Sync method (-S) must be 0 to 6 (got {n})"))
                })?;
            }
            't' => {
                // No worker (-t 0) or a negative count measures nothing: refuse it.
                let n = at_least_one(opt, v, "the number of threads")? as i64;
                if n > MAX_THREADS as i64 {
                    return Err(UsageError::new(format!("Max threads is {MAX_THREADS}")));
                }
                *threads = n;
            }
            'w' => {
                let n = at_least_one(opt, v, "the write size")?;
                if n > MAX_IO_SIZE as u64 {
                    return Err(UsageError::new(format!(
                        "MAX IO buffer size is {MAX_IO_SIZE}"
                    )));
                }
                self.io_size = n as u32;
            }
            _ => unreachable!("apply() is only called for options that take a value"),
        }
        Ok(())
    }

    /// Iterations to run (fs_mark runs at least one; `-F` runs until the space check stops it).
    pub fn iterations(&self) -> u32 {
        self.loops.unwrap_or(0).max(1)
    }

    /// Length of the time-stamp part of a name.
    pub fn seq_len(&self) -> u32 {
        self.name_len - self.rand_len
    }

    /// Bytes an iteration needs per worker (fs_mark's free-space check): `-s` times `-n`.
    pub fn bytes_per_iteration(&self) -> u64 {
        self.file_size * self.files as u64
    }

    /// A canonical fs_mark command line with every option that changes what is measured, so a
    /// stored number can be traced (and rerun with the real fs_mark), e.g.
    /// `fs_mark -s 0 -n 10000 -t 2 -S 0 -D 16 -N 256`. `-s -n -t -S` are always written;
    /// others only when they differ from fs_mark's default; `-l`, `-v` and `--json` only change
    /// the presentation and are left out.
    pub fn command_line(&self) -> String {
        let mut s = String::from("fs_mark");
        for d in &self.dirs {
            s.push_str(&format!(" -d {}", d.display()));
        }
        s.push_str(&format!(
            " -s {} -n {} -t {} -S {}",
            self.file_size,
            self.files,
            self.threads,
            self.sync.number()
        ));
        if self.io_size != DEFAULT_IO_SIZE {
            s.push_str(&format!(" -w {}", self.io_size));
        }
        match self.dir_policy {
            DirPolicy::NoSubdirs => {}
            DirPolicy::TimeHash { subdirs, .. } => s.push_str(&format!(" -D {subdirs}")),
            DirPolicy::RoundRobin {
                subdirs,
                files_per_subdir,
            } => s.push_str(&format!(" -D {subdirs} -N {files_per_subdir}")),
        }
        if let Some(l) = self.loops {
            s.push_str(&format!(" -L {l}"));
        }
        if self.keep && self.loops.is_none() && !self.fill {
            s.push_str(" -k");
        }
        if self.fill {
            s.push_str(" -F");
        }
        if self.name_len != DEFAULT_NAME_LEN {
            s.push_str(&format!(" -p {}", self.name_len));
        }
        if self.rand_len != DEFAULT_RAND_LEN {
            s.push_str(&format!(" -r {}", self.rand_len));
        }
        s
    }

    /// The arguments echoed in the header: as typed, or the canonical ones when built in code.
    pub fn echo_args(&self) -> Vec<String> {
        if !self.argv.is_empty() {
            return self.argv.clone();
        }
        self.command_line()
            .split(' ')
            .skip(1)
            .map(str::to_string)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<FsMarkOptions, UsageError> {
        let args: Vec<String> = s.split_whitespace().map(str::to_string).collect();
        FsMarkOptions::parse(&args)
    }

    fn err(s: &str) -> String {
        p(s).expect_err(s).reason.expect("an error, not help")
    }

    #[test]
    fn defaults_are_fs_marks() {
        let o = p("-d /tmp/x").unwrap();
        assert_eq!(o.dirs, vec![PathBuf::from("/tmp/x")]);
        assert_eq!(o.threads, 1);
        assert_eq!(o.files, 1000);
        assert_eq!(o.file_size, 51200);
        assert_eq!(o.io_size, 16384);
        assert_eq!(o.dir_policy, DirPolicy::NoSubdirs);
        assert_eq!(o.loops, None);
        assert_eq!(o.iterations(), 1);
        assert!(!o.keep && !o.fill && !o.verbose && !o.json);
        assert_eq!(o.sync, SyncMethod::PerFile);
        assert_eq!((o.name_len, o.rand_len, o.seq_len()), (40, 24, 16));
        assert_eq!(o.log_file, Some(PathBuf::from("./fs_log.txt")));
    }

    #[test]
    fn every_flag_sets_its_field() {
        let o = p(
            "-v -k -d a -d b -t 4 -n 7 -s 0 -w 512 -D 16 -N 256 -S 3 -p 30 -r 10 -l log.txt --json",
        )
        .unwrap();
        assert!(o.verbose && o.keep && o.json && !o.fill);
        assert_eq!(o.dirs, vec![PathBuf::from("a"), PathBuf::from("b")]);
        assert_eq!(o.threads, 4);
        assert_eq!(o.files, 7);
        assert_eq!(o.file_size, 0);
        assert_eq!(o.io_size, 512);
        assert_eq!(
            o.dir_policy,
            DirPolicy::RoundRobin {
                subdirs: 16,
                files_per_subdir: 256
            }
        );
        assert_eq!(o.sync, SyncMethod::PostReverse);
        assert_eq!((o.name_len, o.rand_len), (30, 10));
        assert_eq!(o.log_file, Some(PathBuf::from("log.txt")));
    }

    #[test]
    fn attached_values_and_clusters_follow_getopt() {
        let o = p("-L5 -vkd/tmp/y -S0 -n10").unwrap();
        assert_eq!(o.loops, Some(5));
        assert_eq!(o.iterations(), 5);
        assert!(o.verbose && o.keep);
        assert_eq!(o.dirs, vec![PathBuf::from("/tmp/y")]);
        assert_eq!(o.sync, SyncMethod::None);
        assert_eq!(o.files, 10);
        // A value may start with '-', as getopt takes the next word whatever it is.
        let o = p("-d -weird").unwrap();
        assert_eq!(o.dirs, vec![PathBuf::from("-weird")]);
        // `--` ends the options.
        assert!(p("-d a --").is_ok());
        assert!(err("-d a -- b").contains("unexpected argument 'b'"));
    }

    #[test]
    fn help_is_not_an_error() {
        assert!(p("-h").unwrap_err().is_help());
        assert!(p("-d a --help").unwrap_err().is_help());
        assert!(p("-vh").unwrap_err().is_help());
        let text = p("-h").unwrap_err().to_string();
        assert!(text.starts_with("Usage: fsdelta fsmark"), "{text}");
        assert!(text.contains("threads"), "{text}");
    }

    #[test]
    fn unknown_flags_and_operands_are_usage_errors() {
        assert_eq!(err("-x"), "fsdelta fsmark: invalid option -- 'x'");
        assert_eq!(err("-P 3"), "fsdelta fsmark: invalid option -- 'P'");
        assert_eq!(
            err("-d"),
            "fsdelta fsmark: option requires an argument -- 'd'"
        );
        assert_eq!(
            err("-d a -n"),
            "fsdelta fsmark: option requires an argument -- 'n'"
        );
        assert!(err("--frobnicate").contains("unrecognized option '--frobnicate'"));
        assert!(err("-d a stray").contains("unexpected argument 'stray'"));
        let shown = p("-x").unwrap_err().to_string();
        assert!(
            shown.starts_with("fsdelta fsmark: invalid option -- 'x'\nUsage: fsdelta fsmark"),
            "{shown}"
        );
    }

    #[test]
    fn numbers_must_be_numbers() {
        assert_eq!(err("-n 10k"), "-n: '10k' is not a whole number");
        assert_eq!(err("-S x"), "-S: 'x' is not a whole number");
        assert!(err("-s -1").contains("must not be negative"));
        assert!(err("-L -1").contains("at least 1"));
        assert!(err("-N -1 -D 2").contains("must not be negative"));
        assert!(err("-r -1").contains("must not be negative"));
        assert!(err("-n 0").contains("at least 1"));
        assert!(err("-w 0").contains("at least 1"));
        assert!(err("-p 0").contains("at least 1"));
    }

    #[test]
    fn limits_match_fs_mark() {
        assert_eq!(err("-t 65"), "Max threads is 64");
        assert!(p("-t 64").is_ok());
        assert_eq!(err("-w 1048577"), "MAX IO buffer size is 1048576");
        assert!(p("-w 1048576").is_ok());
        assert_eq!(err("-n 1000001"), "Max files is 1000000");
        assert!(p("-n 1000000").is_ok());
        assert_eq!(err("-p 129"), "Max filename size is 128");
        assert!(p("-p 128 -r 128").is_ok());
        assert!(err("-s 2147483648").contains("Max file size"));
        assert_eq!(err("-S 7"), "Sync method (-S) must be 0 to 6 (got 7)");
        assert!(err("-S -1").contains("must be 0 to 6"));
        for s in 0..=6 {
            assert_eq!(p(&format!("-S {s}")).unwrap().sync.number(), s);
        }
        let many: String = (0..64).map(|i| format!("-d d{i} ")).collect();
        assert_eq!(p(&many).unwrap().threads, 64);
        assert_eq!(
            err(&format!("{many} -d d64")),
            "Max number of threads (and directories) is 64"
        );
        let long = "x".repeat(MAX_DIR_PATH);
        assert!(err(&format!("-d {long}")).contains("directory pathname too long"));
        assert!(p(&format!("-d {}", &long[1..])).is_ok());
    }

    #[test]
    fn subdirectory_rules() {
        assert_eq!(err("-D 1"), "Number of subdirs needs to be greater than 1");
        assert_eq!(err("-D 0"), "Number of subdirs needs to be greater than 1");
        assert!(err("-N 5").contains("-D switch for -N"));
        assert!(err("-N 0").contains("-D switch for -N"));
        assert_eq!(
            p("-D 4").unwrap().dir_policy,
            DirPolicy::TimeHash {
                subdirs: 4,
                secs_per_subdir: 180
            }
        );
        // -N before or after -D: round robin either way.
        for s in ["-N 3 -D 4", "-D 4 -N 3"] {
            assert_eq!(
                p(s).unwrap().dir_policy,
                DirPolicy::RoundRobin {
                    subdirs: 4,
                    files_per_subdir: 3
                }
            );
        }
    }

    #[test]
    fn no_threads_negative_threads_and_no_iterations_are_refused() {
        for (args, what) in [
            ("-t 0", "threads"),
            ("-t -3", "threads"),
            ("-L 0", "iterations"),
        ] {
            let e = err(args);
            assert!(e.contains(what) && e.contains("at least 1"), "{args}: {e}");
        }
    }

    #[test]
    fn implied_keep() {
        let o = p("-L 1").unwrap();
        assert!(o.keep);
        assert_eq!(o.iterations(), 1);
        let o = p("-F").unwrap();
        assert!(o.keep && o.fill);
        assert!(p("-k").unwrap().keep);
        assert!(!p("-v").unwrap().keep);
    }

    #[test]
    fn random_part_cannot_exceed_the_name() {
        assert!(err("-p 20").contains("cannot exceed the name length"));
        assert!(err("-p 10 -r 11").contains("(-r 11)"));
        let o = p("-p 10 -r 10").unwrap();
        assert_eq!(o.seq_len(), 0);
        assert_eq!(p("-r 0").unwrap().seq_len(), 40);
    }

    #[test]
    fn threads_are_raised_to_and_multiples_of_directories() {
        assert_eq!(p("-d a -d b").unwrap().threads, 2);
        assert_eq!(p("-d a -d b -t 1").unwrap().threads, 2);
        assert!(err("-d a -t 0").contains("at least 1"));
        assert!(err("-d a -t -3").contains("at least 1"));
        assert_eq!(p("-d a -d b -t 6").unwrap().threads, 6);
        assert!(err("-d a -d b -t 3").contains("Threads (3) must be an even multiple"));
        assert_eq!(p("-t 2").unwrap().threads, 2);
    }

    #[test]
    fn command_line_is_canonical_and_reparses_to_the_same_options() {
        let o = p("-s 0 -n 10000 -t 2 -S 0 -D 16 -N 256").unwrap();
        assert_eq!(
            o.command_line(),
            "fs_mark -s 0 -n 10000 -t 2 -S 0 -D 16 -N 256"
        );
        let o = p("-d /a -d /b -w 4096 -L 3 -p 30 -r 5 -v -l x --json").unwrap();
        assert_eq!(
            o.command_line(),
            "fs_mark -d /a -d /b -s 51200 -n 1000 -t 2 -S 1 -w 4096 -L 3 -p 30 -r 5"
        );
        assert_eq!(
            p("-k -F -D 3").unwrap().command_line(),
            "fs_mark -s 51200 -n 1000 -t 1 -S 1 -D 3 -F"
        );
        assert_eq!(
            p("-k").unwrap().command_line(),
            "fs_mark -s 51200 -n 1000 -t 1 -S 1 -k"
        );
        for line in [
            "-s 0 -n 10000 -t 2 -S 0 -D 16 -N 256",
            "-d /a -d /b -w 4096 -L 3 -p 30 -r 5",
            "-k -S 6 -D 2",
            "-F -t 3",
        ] {
            let a = p(line).unwrap();
            let canon = a.command_line();
            let b = p(canon.strip_prefix("fs_mark ").unwrap()).unwrap();
            assert_eq!(b.command_line(), canon);
            assert_eq!(
                (
                    a.dirs,
                    a.threads,
                    a.files,
                    a.file_size,
                    a.io_size,
                    a.dir_policy,
                    a.keep,
                    a.fill,
                    a.sync
                ),
                (
                    b.dirs,
                    b.threads,
                    b.files,
                    b.file_size,
                    b.io_size,
                    b.dir_policy,
                    b.keep,
                    b.fill,
                    b.sync
                )
            );
        }
    }

    #[test]
    fn suite_command_lines_parse_without_a_log_file() {
        let o = FsMarkOptions::from_command_line("fs_mark -s 0 -n 10000 -t 2 -S 0 -D 16 -N 256")
            .unwrap();
        assert_eq!(
            o.command_line(),
            "fs_mark -s 0 -n 10000 -t 2 -S 0 -D 16 -N 256"
        );
        assert!(o.dirs.is_empty() && o.log_file.is_none());
        let o = FsMarkOptions::from_command_line("-s 4096 -n 2000 -t 2 -S 1 -l x.log").unwrap();
        assert_eq!(o.log_file, Some(PathBuf::from("x.log")));
        assert_eq!(
            o.argv,
            vec![
                "-s", "4096", "-n", "2000", "-t", "2", "-S", "1", "-l", "x.log"
            ]
        );
        assert!(FsMarkOptions::from_command_line("fs_mark -S 9").is_err());
    }

    #[test]
    fn echo_args_prefers_what_was_typed() {
        assert_eq!(p("-L5 -s 0").unwrap().echo_args(), vec!["-L5", "-s", "0"]);
        let built = FsMarkOptions::default();
        assert_eq!(
            built.echo_args(),
            vec!["-s", "51200", "-n", "1000", "-t", "1", "-S", "1"]
        );
    }

    #[test]
    fn sync_methods_map_to_fs_marks_bits() {
        use PostFsync::*;
        let expect = [
            (0, false, false, Nothing),
            (1, true, false, Nothing),
            (2, false, true, FirstFile),
            (3, false, false, Reverse),
            (4, false, true, Reverse),
            (5, false, false, InOrder),
            (6, false, true, InOrder),
        ];
        for (n, in_loop, sync, post) in expect {
            let m = SyncMethod::from_number(n).unwrap();
            assert_eq!(
                (m.fsync_in_loop(), m.sync_after_loop(), m.post_fsync()),
                (in_loop, sync, post),
                "-S {n}"
            );
        }
        assert!(SyncMethod::from_number(7).is_none());
    }
}
