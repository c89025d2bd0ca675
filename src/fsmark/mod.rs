//! The fs_mark wing: fs_mark 3.3 in one home. The native engine (this module, [`options`],
//! [`names`], [`worker`](self), [`result`]), its output and log format ([`output`]), the
//! driver and parser of the real fs_mark ([`external`]), and the one metric catalogue both feed
//! ([`metrics`]). The wing meets the run loop only
//! through `crate::workload::Workload`; it never imports the fio or dbench wings.
//!
//! The native fs_mark-compatible engine: fs_mark 3.3's options, file layout, system-call
//! sequence and arithmetic, measured with nanosecond histograms.
//!
//! Why native: fsdelta must run anywhere without fs_mark installed, keep every latency (fs_mark
//! keeps min/avg/max in microseconds), and stop cleanly on Ctrl-C; yet a filesystem developer's
//! `fs_mark -s 0 -n 10000 -t 2 -S 0 -D 16 -N 256` must mean the same thing here. The semantics
//! are those of `docs/workloads.md`; the deliberate differences are:
//!
//! - workers are threads of one process started together by a start gate (fs_mark forks a process
//!   per worker and iteration); each thread unshares its file-descriptor table so the kernel
//!   path of open/write/close is that of fs_mark's single-threaded processes;
//! - system calls are timed with CLOCK_MONOTONIC in nanoseconds (fs_mark: gettimeofday, us);
//!   Files/sec and App Overhead are computed from those times with fs_mark's formulas;
//! - the `-v` Min/Avg/Max columns are over every call of the iteration (fs_mark averages the
//!   per-worker averages and never fills the SYNC min/max);
//! - `-F` ends cleanly (exit 0) when the free-space check fails; fs_mark exits 1 there;
//! - a cancel stops every worker within one file and removes the files of a non-keeping run.
//!
//! This engine never prints and never writes a log: it returns [`FsMarkResult`] and hands each
//! iteration's row (and a `-F` stop) to the caller's [`IterationSink`] as soon as it is known;
//! `fsdelta fsmark` renders them to the terminal and to fs_mark's log file (`-l`) with
//! [`output`]. Data flows one way: the engine knows nothing of the report.

pub mod external;
pub mod metrics;
pub mod names;
pub mod options;
pub mod output;
pub mod result;
pub mod sys;
mod worker;

pub use options::{DirPolicy, FsMarkOptions, PostFsync, SyncMethod, UsageError};
pub use result::{
    FSMARK_ITERATIONS, FillStop, FsMarkResult, IterationResult, Op, OpHistograms, OpStats,
    WorkerIteration, WorkerStats,
};

use crate::probe::clock::Nanos;
use crate::workload::{Measurements, RunContext, Workload, WorkloadError};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use sys::{Libc, Syscalls};
use worker::{Shared, StartGate, Stop};

/// The fs_mark engine with its options bound.
#[derive(Clone, Debug)]
pub struct FsMark {
    /// What to run.
    pub options: FsMarkOptions,
}

impl FsMark {
    /// The engine for `options`.
    pub fn new(options: FsMarkOptions) -> Self {
        FsMark { options }
    }

    /// Run in `ctx.dir`, handing each row to `sink` as soon as its iteration ends (so a
    /// terminal can show fs_mark's table as it grows).
    pub fn run_with(
        &self,
        ctx: &RunContext<'_>,
        sink: &mut dyn IterationSink,
    ) -> Result<FsMarkResult, WorkloadError> {
        run_engine(&self.options, ctx, &|_| Libc, sink)
    }
}

/// Receives what the engine learns between iterations (never inside the timed loop). An error
/// stops the run (a log file that cannot be written, say).
pub trait IterationSink {
    /// An iteration ended with this row.
    fn row(&mut self, row: &IterationResult) -> Result<(), WorkloadError>;
    /// `-F`: the run stopped because the filesystem is full.
    fn fill_stopped(&mut self, _stop: &FillStop) -> Result<(), WorkloadError> {
        Ok(())
    }
}

/// A sink that keeps nothing.
pub struct NoRows;

impl IterationSink for NoRows {
    fn row(&mut self, _row: &IterationResult) -> Result<(), WorkloadError> {
        Ok(())
    }
}

/// Every row, kept (for tests and callers that want the table afterwards).
impl IterationSink for Vec<IterationResult> {
    fn row(&mut self, row: &IterationResult) -> Result<(), WorkloadError> {
        self.push(row.clone());
        Ok(())
    }
}

impl Workload for FsMark {
    fn engine(&self) -> &'static str {
        "fsmark"
    }

    fn run(&self, ctx: &RunContext<'_>) -> Result<Measurements, WorkloadError> {
        let result = self.run_with(ctx, &mut NoRows)?;
        let mut m = result.to_measurements();
        m.logical_bytes_written = Some(result.total_files() * self.options.file_size);
        Ok(m)
    }
}

/// Options built in code bypass the parser; refuse the ones that cannot run.
fn validate(o: &FsMarkOptions) -> Result<(), WorkloadError> {
    let bad = |m: String| Err(WorkloadError::InvalidOptions(m));
    let ndirs = o.dirs.len().max(1) as u32;
    if o.dirs.len() > options::MAX_THREADS as usize {
        return bad(format!("at most {} directories", options::MAX_THREADS));
    }
    if o.threads == 0 || o.threads > options::MAX_THREADS || o.threads % ndirs != 0 {
        return bad(format!(
            "threads ({}) must be 1 to {} and a multiple of the number of directories ({ndirs})",
            o.threads,
            options::MAX_THREADS
        ));
    }
    if o.files == 0 || o.files > options::MAX_FILES {
        return bad(format!(
            "files per worker must be 1 to {}",
            options::MAX_FILES
        ));
    }
    if o.io_size == 0 || o.io_size > options::MAX_IO_SIZE {
        return bad(format!("write size must be 1 to {}", options::MAX_IO_SIZE));
    }
    if o.name_len == 0 || o.name_len > options::MAX_NAME_LEN || o.rand_len > o.name_len {
        return bad(format!(
            "name length ({}) must be 1 to {} and at least the random part ({})",
            o.name_len,
            options::MAX_NAME_LEN,
            o.rand_len
        ));
    }
    if o.file_size > options::MAX_FILE_SIZE {
        return bad(format!(
            "file size must be at most {}",
            options::MAX_FILE_SIZE
        ));
    }
    if let DirPolicy::RoundRobin { subdirs, .. } | DirPolicy::TimeHash { subdirs, .. } =
        o.dir_policy
    {
        if subdirs < 2 {
            return bad("subdirectories (-D) must be at least 2".into());
        }
    }
    Ok(())
}

/// The directories, resolved against the run directory: worker i uses `dirs[i % len]`.
fn resolve_dirs(o: &FsMarkOptions, run_dir: &Path) -> Vec<PathBuf> {
    if o.dirs.is_empty() {
        return vec![run_dir.to_path_buf()];
    }
    o.dirs
        .iter()
        .map(|d| {
            if d.is_absolute() {
                d.clone()
            } else {
                run_dir.join(d)
            }
        })
        .collect()
}

/// mkdir(dir, 0777), EEXIST ignored, as fs_mark's `setup()`.
fn make_dir(dir: &Path) -> Result<(), WorkloadError> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o777).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(WorkloadError::io("mkdir", dir, e)),
    }
}

fn statfs(dir: &Path) -> Result<rustix::fs::StatFs, WorkloadError> {
    rustix::fs::statfs(dir).map_err(|e| WorkloadError::io("statfs", dir, e.into()))
}

/// fs_mark's `check_space()`: free bytes (f_bavail * f_bsize) must cover `-s` x `-n`.
fn enough_space(dir: &Path, o: &FsMarkOptions) -> Result<bool, WorkloadError> {
    let s = statfs(dir)?;
    let free = s.f_bavail.saturating_mul(s.f_bsize as u64);
    Ok(free >= o.bytes_per_iteration())
}

/// The engine, generic over the system-call backend so tests can record or inject failures.
pub(crate) fn run_engine<S: Syscalls>(
    opts: &FsMarkOptions,
    ctx: &RunContext<'_>,
    make_sys: &(dyn Fn(usize) -> S + Sync),
    sink: &mut dyn IterationSink,
) -> Result<FsMarkResult, WorkloadError> {
    validate(opts)?;
    let began = Nanos::now();
    let dirs = resolve_dirs(opts, ctx.dir);
    let buf = vec![0u8; opts.io_size as usize];
    let threads = opts.threads as usize;
    let mut iterations: Vec<IterationResult> = Vec::new();
    let mut totals = OpHistograms::new();
    let mut fill_stopped = None;
    let mut count = 0u64;
    let seed_base = rustix::time::clock_gettime(rustix::time::ClockId::Realtime).tv_nsec as u64;

    let mut iteration = 0u32;
    while opts.fill || iteration < opts.iterations() {
        if ctx.cancel.is_cancelled() {
            return Err(WorkloadError::Cancelled);
        }
        iteration += 1;
        for d in &dirs {
            make_dir(d)?;
        }
        if let Some(full) = first_full_dir(&dirs, opts)? {
            if opts.fill && iteration > 1 {
                fill_stopped = Some(FillStop {
                    dir: full,
                    files: opts.files,
                });
                break;
            }
            return Err(WorkloadError::io(
                "check free space for -s x -n bytes in",
                full,
                io::Error::from_raw_os_error(libc::ENOSPC),
            ));
        }
        ctx.progress.phase(&if opts.fill {
            format!("iteration {iteration} (filling)")
        } else {
            format!("iteration {iteration}/{}", opts.iterations())
        });

        let abort = AtomicBool::new(false);
        let gate = StartGate::default();
        let shared = Shared {
            opts,
            buf: &buf,
            cancel: ctx.cancel,
            abort: &abort,
            gate: &gate,
        };
        let (outcomes, spawn_error) = std::thread::scope(|s| {
            let mut handles = Vec::with_capacity(threads);
            let mut spawn_error = None;
            for i in 0..threads {
                let shared = &shared;
                let dir = &dirs[i % dirs.len()];
                let seed = seed_base
                    ^ ((iteration as u64) << 32)
                    ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let spawned = std::thread::Builder::new()
                    .name(format!("fsmark-{i}"))
                    .spawn_scoped(s, move || {
                        // A descriptor table of the worker's own, as fs_mark's forked
                        // workers have (see fdtable); given back after its files are closed.
                        let _fds = crate::os::fdtable::PrivateFdTable::enter(true);
                        let mut sys = make_sys(i);
                        worker::run(&mut sys, shared, dir, seed)
                    });
                match spawned {
                    Ok(h) => handles.push(h),
                    Err(e) => {
                        spawn_error = Some(WorkloadError::io("start a worker thread for", dir, e));
                        break;
                    }
                }
            }
            if spawn_error.is_some() {
                abort.store(true, std::sync::atomic::Ordering::Relaxed);
                gate.open_now();
            } else {
                gate.open_when_ready(threads);
            }
            let outcomes: Vec<Result<WorkerIteration, Stop>> = handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect();
            (outcomes, spawn_error)
        });
        if let Some(e) = spawn_error {
            return Err(e);
        }

        let mut workers = Vec::with_capacity(threads);
        let mut failure = None;
        let mut cancelled = false;
        for o in outcomes {
            match o {
                Ok(w) => workers.push(w),
                Err(Stop::Failed(e)) => {
                    failure.get_or_insert(e);
                }
                Err(Stop::Cancelled) => cancelled = true,
                Err(Stop::Aborted) => {}
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        if cancelled || ctx.cancel.is_cancelled() {
            return Err(WorkloadError::Cancelled);
        }

        let st = statfs(&dirs[0])?;
        let pct = result::fs_use_pct(st.f_blocks, st.f_bavail);
        let (row, merged) = result::aggregate(iteration, &workers, count, opts.file_size, pct);
        count = row.count;
        totals.merge(&merged);
        sink.row(&row)?;
        iterations.push(row);
        if !opts.fill {
            ctx.progress
                .fraction(iteration as f64 / opts.iterations() as f64);
        }
    }
    if let Some(stop) = &fill_stopped {
        sink.fill_stopped(stop)?;
    }

    Ok(FsMarkResult {
        command_line: opts.command_line(),
        threads: opts.threads,
        iterations,
        fill_stopped,
        elapsed_ns: began.elapsed().0,
        ops: totals,
    })
}

/// The first directory without room for another iteration, if any.
fn first_full_dir(dirs: &[PathBuf], o: &FsMarkOptions) -> Result<Option<PathBuf>, WorkloadError> {
    for d in dirs {
        if !enough_space(d, o)? {
            return Ok(Some(d.clone()));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests;
