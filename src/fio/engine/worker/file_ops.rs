//! The file engines (filecreate, filestat, filedelete): each "I/O" is one timed operation on a
//! whole file.
//!
//! Why it exists: fio's fileoperations engines. What it must never do: touch file data.

use super::CloneSetup;
use super::errors::io_err;
use super::timing::{Clock, close_window, tick};
use crate::fio::engine::clock::TimeSource;
use crate::fio::engine::ops::{self, Caps, FileCall, Op};
use crate::fio::engine::stats::{READ, ThreadStats, WRITE};
use crate::workload::WorkloadError;
use std::os::fd::OwnedFd;

/// fio's file engines: each file's creation (filecreate: open with O_CREAT), stat(2)
/// (filestat) or unlink(2) (filedelete) is one timed "I/O", recorded as clat; the file's bytes
/// are counted as fio's fake I/O, none are moved.
pub(super) fn run_file_op<T: TimeSource>(
    setup: &CloneSetup<'_>,
    clk: T,
) -> Result<ThreadStats, WorkloadError> {
    let job = setup.job;
    let ops = ops::of(job.ioengine);
    let call = match ops.op {
        Op::File(call) => call,
        Op::Sync(_) | Op::Queue(_) => FileCall::Create,
    };
    let ddir = if job.rw.reads() { READ } else { WRITE };
    let bs = job.bs[ddir].0.max(1);
    let mut st = ThreadStats {
        ioprio: job.ioprio().unwrap_or(0),
        ..ThreadStats::default()
    };
    let mut clock = Clock::start(setup, clk.now());
    let mut ru0 = crate::fio::engine::stats::Rusage::thread();
    let limit = (job.openfiles.unwrap_or(u32::MAX).max(1) as usize).min(setup.plan.files.len());
    let mut open: std::collections::VecDeque<OwnedFd> =
        std::collections::VecDeque::with_capacity(limit);
    let mut passes = 0u32;
    'outer: loop {
        for f in &setup.plan.files {
            if setup.cancel.is_cancelled() {
                return Err(WorkloadError::Cancelled);
            }
            // Ended by another job (exitall, exit_what): it reports what it did, as the block
            // loops do.
            if setup.exit.is_some_and(|e| e.terminated()) {
                break 'outer;
            }
            if open.len() >= limit {
                open.pop_front();
            }
            let t0 = clk.now();
            match call {
                FileCall::Stat => {
                    rustix::fs::stat(&f.path).map_err(|e| io_err("stat", &f.path, e))?;
                }
                FileCall::Delete => {
                    rustix::fs::unlink(&f.path).map_err(|e| io_err("unlink", &f.path, e))?;
                }
                FileCall::Create => {
                    let fd = rustix::fs::open(
                        &f.path,
                        rustix::fs::OFlags::CREATE
                            | rustix::fs::OFlags::RDWR
                            | rustix::fs::OFlags::CLOEXEC,
                        rustix::fs::Mode::from_raw_mode(0o600),
                    )
                    .map_err(|e| io_err("open", &f.path, e))?;
                    open.push_back(fd);
                }
            }
            let t1 = clk.now();
            st.dir[ddir].clat.record((t1 - t0).0);
            st.lat_buckets.mark((t1 - t0).0);
            st.dir[ddir].io_bytes += f.size;
            st.dir[ddir].total_ios += f.size.div_ceil(bs).max(1);
            st.depth_counts[0] += 1;
            st.submit_counts[1] += 1;
            st.complete_counts[1] += 1;
            tick(
                job,
                setup.status,
                setup.exit,
                &mut st,
                &mut clock,
                &mut ru0,
                t1,
                clk,
                || {},
            );
            if clock.out_of_time(t1) {
                break 'outer;
            }
        }
        passes += 1;
        if !(job.time_based || passes < job.loops) {
            break;
        }
    }
    drop(open);
    if clock.ramping {
        st.forget_ramp();
    }
    close_window(job, &mut st, &clock, &ru0, clk.now());
    if job.unlink && !ops.has(Caps::REMOVES_FILES) {
        for f in &setup.plan.files {
            std::fs::remove_file(&f.path).map_err(|e| io_err("unlink", &f.path, e))?;
        }
    }
    Ok(st)
}
