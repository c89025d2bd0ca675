//! fio's error path and its text: the line fio prints for a failed I/O, the full-device rules of
//! fill_device, and continue_on_error's decision (io_failed).
//!
//! Why it exists: both loops fail the same way, byte for byte as fio. What it must never do: run
//! on the hot path of an I/O that succeeded.

use super::CloneSetup;
use super::planner::Io;
use crate::fio::engine::stats::{READ, ThreadStats, WRITE};
use crate::fio::jobfile::JobSpec;
use crate::workload::WorkloadError;
use std::path::Path;

pub(super) fn io_err(op: &'static str, path: &Path, e: impl Into<std::io::Error>) -> WorkloadError {
    WorkloadError::io(op, path, e.into())
}

/// fio's io_ddir_name: what an I/O of direction `ddir` is called in errors.
pub(super) fn ddir_name(ddir: usize) -> &'static str {
    match ddir {
        READ => "read",
        WRITE => "write",
        _ => "trim",
    }
}

/// fio's io_u_log_error line on stderr: `fio: io_u error on file F: TEXT: DDIR offset=O,
/// buflen=L`.
#[cold]
pub(super) fn log_io_error(
    setup: &CloneSetup<'_>,
    ddir: usize,
    file: usize,
    offset: u64,
    len: usize,
    errno: i32,
) {
    eprintln!("{}", io_error_line(setup, ddir, file, offset, len, errno));
}

/// The text of fio's io_u_log_error line.
pub(super) fn io_error_line(
    setup: &CloneSetup<'_>,
    ddir: usize,
    file: usize,
    offset: u64,
    len: usize,
    errno: i32,
) -> String {
    format!(
        "fio: io_u error on file {}: {}: {} offset={offset}, buflen={len}",
        setup.plan.files[file].fio_name,
        crate::fio::text::errno_text(errno),
        ddir_name(ddir),
    )
}

/// fio's line for a write of a fill_device job that failed (`res` < 0) or came back short
/// (the rest, requeued, fails with ENOSPC).
#[cold]
pub(super) fn log_full_device(setup: &CloneSetup<'_>, io: &Io, res: i64) {
    if res < 0 {
        log_io_error(setup, io.ddir, io.file, io.offset, io.len, -res as i32);
    } else {
        let done = res as usize;
        log_io_error(
            setup,
            io.ddir,
            io.file,
            io.offset + done as u64,
            io.len - done,
            libc::ENOSPC,
        );
    }
}

/// Whether a failed I/O is fill_device's end: a write's ENOSPC or EDQUOT that
/// continue_on_error does not continue on (fio's break_on_this_error asks td_non_fatal_error
/// first).
pub(super) fn fills_device(job: &JobSpec, ddir: usize, e: rustix::io::Errno) -> bool {
    use crate::fio::jobfile::ErrorClass;
    job.fill_device
        && ddir == WRITE
        && (e == rustix::io::Errno::NOSPC || e == rustix::io::Errno::DQUOT)
        && !job.error_continues(ErrorClass::Write, e.raw_os_error())
}

/// The I/Os fio counts for a write that hit a full device (fill_device), without bytes: one
/// for a failed write (`res` < 0), two for a short one (it and the rest, requeued, failing).
pub(super) fn full_device_ios(res: i64) -> u64 {
    if res > 0 { 2 } else { 1 }
}

/// How fio's engine returned a failed I/O, which decides what fio prints, where its verror
/// points and whether a fatal error is counted.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum FailedVia {
    /// A read or write of a sync engine (engines/sync.c's fio_io_end: io_u_log_error, then
    /// td_verror "xfer"; break_on_this_error counts a fatal error of a continued class).
    SyncXfer,
    /// Completed at queue time without the engine's log (a trim, the falloc and ftruncate
    /// engines: td_io_queue's td_verror; counted as SyncXfer).
    Queue,
    /// Reaped from an async engine (io_completed: io_u_log_error; a fatal error is not
    /// counted).
    Reaped,
}

/// What the job does after a failed I/O: go on (the error was continued and counted), or end
/// with its stats and `st.error` set.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[must_use]
pub(super) enum AfterError {
    Continue,
    End,
}

/// fio's path of a failed I/O (io_u_log_error, td_verror, td_non_fatal_error,
/// update_error_count, break_on_this_error): print fio's line unless the error is continued
/// without error_dump, keep the job's first verror, count a continued error (and a fatal one
/// of a continued class a sync engine returned), and on a fatal error set the job's error: the
/// job ends with its stats, the others go on, fio exits 1. The I/O counts in total_ios (fio
/// counts it when queued), never in io_bytes or the latencies: the caller's. Off the hot
/// path: only failed I/Os come here.
#[cold]
pub(super) fn io_failed(
    setup: &CloneSetup<'_>,
    st: &mut ThreadStats,
    io: &Io,
    e: rustix::io::Errno,
    via: FailedVia,
) -> AfterError {
    use crate::fio::jobfile::ErrorClass;
    let job = setup.job;
    if via == FailedVia::SyncXfer
        && e == rustix::io::Errno::INVAL
        && job.direct
        && st.dir[io.ddir].total_ios == 1
    {
        // fio's td_io_queue, when the first I/O of the direction came back EINVAL.
        eprintln!(
            "fio: first direct IO errored. File system may not support direct IO, or iomem_align= is bad, or invalid block size. Try setting direct=0."
        );
    }
    let errno = e.raw_os_error();
    let class = ErrorClass::of(io.ddir == READ, errno);
    let continued = job.error_continues(class, errno);
    if via != FailedVia::Queue && (!continued || job.error_dump) {
        log_io_error(setup, io.ddir, io.file, io.offset, io.len, errno);
        st.errors.set_verror(errno, ("io_u.c:1876", "io_u error"));
    }
    match via {
        FailedVia::SyncXfer => st.errors.set_verror(errno, ("engines/sync.c:126", "xfer")),
        FailedVia::Queue => st
            .errors
            .set_verror(errno, ("ioengines.c:399", "td_io_queue")),
        FailedVia::Reaped => {}
    }
    if continued {
        st.errors.count(errno);
        return AfterError::Continue;
    }
    if via != FailedVia::Reaped && job.continues_class(class) {
        st.errors.count(errno);
    }
    // fio's __td_verror: the job keeps its first fatal error (another in the same batch of
    // completions does not replace it).
    if st.error.is_none() {
        st.error = Some(crate::fio::engine::stats::JobError {
            errno,
            verror: st.errors.verror.clone().unwrap_or_default(),
            message: io_error_line(setup, io.ddir, io.file, io.offset, io.len, errno),
            told: true,
        });
    }
    AfterError::End
}
