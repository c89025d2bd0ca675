//! What I/O is done: the `Workload` trait, the run context and errors every engine shares, and
//! the simple engines (`stream`, `copy`, `untar`, `command`, `null`). The tools' engines are
//! their wings' (`crate::fio`, `crate::fsmark`, `crate::dbench`); choosing an engine for a
//! suite's test is `crate::engines`'.
//!
//! Why a room of its own: engines only drive I/O and push what they measured into a
//! [`Measurements`] value; they never print to the terminal and never touch the store, so the same
//! engine serves `fsdelta run`, `fsdelta fsmark` and the tests. A workload must never allocate,
//! log or take locks inside its timed loop, and must stop promptly when its [`CancelToken`] fires.
//!
//! A suite's test works only inside its run directory (the target): [`leaves_target`] is the
//! one rule of where its paths may go, which `crate::engines::check_inside_target` applies to
//! every engine's options before anything runs. This room never imports a wing.

pub mod command;
pub mod copy;
pub mod external;
pub mod null;
pub mod stream;
pub mod untar;

use crate::model::{HistogramRecord, Metric};
use crate::plan::suite::EngineSpec;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Shared flag that asks a running workload to stop (SIGINT, SIGTERM).
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// A token that shares `flag` (as registered with a signal handler).
    pub fn from_flag(flag: Arc<AtomicBool>) -> Self {
        CancelToken(flag)
    }

    /// Ask the workload to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether stopping was asked. One relaxed load: cheap enough for hot loops.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// The underlying flag (for signal registration).
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.0.clone()
    }
}

/// Events a workload emits so the CLI edge can draw progress. Implementations must be cheap and
/// must not block.
pub trait ProgressSink: Sync {
    /// Fraction of the workload done, 0.0 ..= 1.0.
    fn fraction(&self, _done: f64) {}
    /// A short phase name ("iteration 2/3", "unlink").
    fn phase(&self, _what: &str) {}
    /// Something the user should know that does not fail the sample (a metric missing from a
    /// command's output).
    fn warning(&self, _what: &str) {}
    /// A line the peer tool prints while it runs, for a front end that shows the peer's own
    /// output (fio's "Laying out IO file" lines); a suite run ignores it.
    fn peer_line(&self, _line: &str) {}
    /// A note the peer writes to its standard output as it happens, whatever its output
    /// format and never into an output file (fio's start-up note of a clone); a suite run
    /// ignores it.
    fn peer_note(&self, _line: &str) {}
}

/// A progress sink that ignores everything.
pub struct NoProgress;
impl ProgressSink for NoProgress {}

/// Everything a workload needs to run once.
pub struct RunContext<'a> {
    /// The directory the workload runs in (it may create anything beneath it).
    pub dir: &'a Path,
    /// Stop request.
    pub cancel: &'a CancelToken,
    /// Progress events.
    pub progress: &'a dyn ProgressSink,
}

/// What one execution of a workload measured.
#[derive(Clone, Debug, Default)]
pub struct Measurements {
    /// Every metric, each with unit and direction.
    pub metrics: Vec<Metric>,
    /// Histograms behind percentile metrics.
    pub histograms: Vec<HistogramRecord>,
    /// File data the workload wrote (logical bytes), when it knows; the run divides the device's
    /// written bytes by it to get write amplification.
    pub logical_bytes_written: Option<u64>,
    /// Raw results to keep with the sample (a command's output, fs_mark's per-iteration rows).
    pub attachments: Vec<crate::model::Attachment>,
    /// Facts of how the workload measured (the fio engine's `clocksource`), stored in the
    /// sample's facts beside the target's.
    pub facts: std::collections::BTreeMap<String, String>,
}

/// Why a workload did not produce measurements.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A system call failed; `op` and `path` say which and where.
    #[error("{op} {path}: {source}{hint}", path = path.display(), hint = io_hint(source))]
    Io {
        /// The operation (open, write, fsync, mkdir, ...).
        op: &'static str,
        /// The path it was applied to.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// Stopped by a cancel request.
    #[error("cancelled")]
    Cancelled,
    /// Options that cannot run.
    #[error("{0}")]
    InvalidOptions(String),
}

impl WorkloadError {
    /// An I/O error on a path.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        WorkloadError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// A hint that says how to fix the commonest I/O failures.
fn io_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => {
            " (the target filesystem is full: free space or choose a larger target)"
        }
        Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => {
            " (the target is not writable: choose another with --target, or fix its permissions)"
        }
        Some(libc::EDQUOT) => " (disk quota exceeded on the target)",
        Some(libc::EMFILE) | Some(libc::ENFILE) => " (too many open files: raise `ulimit -n`)",
        _ => "",
    }
}

/// A runnable workload: an engine with its options bound.
pub trait Workload: Send + Sync {
    /// The engine's name (`fsmark`, `fio`).
    fn engine(&self) -> &'static str;
    /// Why this workload cannot run in `dir` (for example O_DIRECT on tmpfs), checked before
    /// each sample; `None` when it can.
    fn skip_reason(&self, _dir: &Path) -> Option<String> {
        None
    }
    /// Run once in `ctx.dir`, returning what was measured.
    fn run(&self, ctx: &RunContext<'_>) -> Result<Measurements, WorkloadError>;
    /// The suite engine options this workload was built from and whether it runs the real
    /// tool, so that it can be built again elsewhere (inside a guest kernel, `crate::vm`);
    /// `None` unless built by [`build_test`].
    fn spec(&self) -> Option<(&EngineSpec, bool)> {
        None
    }
    /// Whether the workload may run on a read-only filesystem (erofs): it reads files that are
    /// there and writes nothing to its directory. A command test says yes (a command that
    /// writes fails on its own); native engines that create files say no.
    fn reads_only(&self) -> bool {
        false
    }
}

/// Whether `path` (relative to the target) leaves it: absolute, or a `..` that climbs above the
/// target at any point (`a/../..`, `../x`). `sub/../x` stays inside.
pub fn leaves_target(path: impl AsRef<Path>) -> bool {
    let p = path.as_ref();
    if p.is_absolute() {
        return true;
    }
    let mut depth: i64 = 0;
    for c in p.components() {
        match c {
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn climbing_is_judged_by_depth() {
        for bad in ["/x", "..", "../x", "a/../..", "a/../../b", "./../x", "//x"] {
            assert!(leaves_target(bad), "{bad}");
        }
        for good in [
            "x",
            "a/b",
            "a/../b",
            "./x",
            ".",
            "",
            "a/b/../../c",
            "x..y",
            "..x",
        ] {
            assert!(!leaves_target(good), "{good}");
        }
    }

    #[test]
    fn io_errors_say_how_to_fix_a_full_disk() {
        let e = WorkloadError::io(
            "write",
            "/mnt/x",
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        let s = e.to_string();
        assert!(s.contains("write /mnt/x"), "{s}");
        assert!(s.contains("filesystem is full"), "{s}");
    }

    #[test]
    fn cancel_token_is_shared() {
        let t = CancelToken::new();
        let u = t.clone();
        assert!(!u.is_cancelled());
        t.cancel();
        assert!(u.is_cancelled());
    }
}
