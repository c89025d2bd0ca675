//! The synchronous engines' loop (psync, sync, pvsync, pvsync2, mmap, falloc, ftruncate,
//! null): one I/O at a time, completed inside its system call.
//!
//! Why it exists: fio's do_io for FIO_SYNCIO engines, with lat equal to clat. What it must never
//! do: allocate, log or lock per I/O, or keep issuing after a cancel or an exitall.

use super::buffers::{BufferPolicy, Content, scramble};
use super::errors::{
    AfterError, FailedVia, ddir_name, fills_device, full_device_ios, io_err, io_failed,
    log_io_error,
};
use super::planner::{FileState, Io, Planner, ensure_open};
use super::timing::{
    Clock, after_tick, check_min_rate, io_clock, latency_fatal, latency_step, max_latency_exceeded,
    rate_sleep, think,
};
use super::verify_io::{VerifyCtx, backlog_next, pass_over, unlog, verify_block, verify_failed};
use super::{AlignedBuf, CloneSetup};
use crate::fio::engine::clock::TimeSource;
use crate::fio::engine::iolog::{Completion, IoLogs};
use crate::fio::engine::ops::{Caps, EngineOps, SyncCall};
use crate::fio::engine::stats::{READ, TRIM, ThreadStats, WRITE};
use crate::fio::jobfile::JobSpec;
use crate::workload::WorkloadError;
use std::os::fd::{AsFd, BorrowedFd};

#[inline]
pub(super) fn do_sync_io(
    job: &JobSpec,
    ops: &EngineOps,
    f: &mut FileState,
    ddir: usize,
    buf: &mut [u8],
    offset: u64,
) -> rustix::io::Result<usize> {
    let call = ops.sync_call();
    if call == SyncCall::Nothing {
        // fio's null engine: the I/O completes at once and moves nothing.
        return Ok(buf.len());
    }
    let fd = f.fd.as_ref().expect("file opened before I/O").as_fd();
    if ddir == TRIM {
        // The falloc engine punches a hole (fio's engines/falloc.c); every other engine
        // discards a device's range or punches a file's.
        let blkdev = f.blkdev && !ops.has(Caps::TRIM_PUNCHES);
        trim_range(fd, blkdev, offset, buf.len() as u64)?;
        return Ok(buf.len());
    }
    match call {
        SyncCall::SeekThenTransfer => {
            if f.fd_pos != offset {
                rustix::fs::seek(fd, rustix::fs::SeekFrom::Start(offset))?;
            }
            let n = if ddir == READ {
                rustix::io::read(fd, buf)?
            } else {
                rustix::io::write(fd, buf)?
            };
            f.fd_pos = offset + n as u64;
            Ok(n)
        }
        SyncCall::Vectored => {
            if ddir == READ {
                rustix::io::preadv(fd, &mut [std::io::IoSliceMut::new(buf)], offset)
            } else {
                rustix::io::pwritev(fd, &[std::io::IoSlice::new(buf)], offset)
            }
        }
        SyncCall::Vectored2 => {
            let flags = if job.hipri {
                rustix::io::ReadWriteFlags::HIPRI
            } else {
                rustix::io::ReadWriteFlags::empty()
            };
            if ddir == READ {
                rustix::io::preadv2(fd, &mut [std::io::IoSliceMut::new(buf)], offset, flags)
            } else {
                rustix::io::pwritev2(fd, &[std::io::IoSlice::new(buf)], offset, flags)
            }
        }
        SyncCall::Fallocate => {
            // fio's falloc engine: a write allocates its range, a read allocates it without
            // changing the file size (FALLOC_FL_KEEP_SIZE).
            let mode = if ddir == READ {
                rustix::fs::FallocateFlags::KEEP_SIZE
            } else {
                rustix::fs::FallocateFlags::empty()
            };
            rustix::fs::fallocate(fd, mode, offset, buf.len() as u64)?;
            Ok(buf.len())
        }
        SyncCall::Mapped => {
            let m = f.mapping.as_ref().expect("mapped before the I/O");
            if ddir == READ {
                m.read(offset, buf);
            } else {
                m.write(offset, buf);
            }
            if job.direct {
                m.drop_pages(offset, buf.len())?;
            }
            Ok(buf.len())
        }
        SyncCall::Truncate => {
            // fio's ftruncate engine: a write truncates the file to its offset; nothing else
            // is an I/O it can do.
            if ddir != WRITE {
                return Err(rustix::io::Errno::INVAL);
            }
            rustix::fs::ftruncate(fd, offset)?;
            Ok(buf.len())
        }
        SyncCall::Splice => {
            if f.pipe.is_none() {
                f.pipe = Some(crate::fio::engine::splice::pipe()?);
            }
            let (r, w) = f.pipe.as_ref().expect("made above");
            crate::fio::engine::splice::transfer(
                fd,
                r.as_fd(),
                w.as_fd(),
                ddir == READ,
                buf,
                offset,
            )
        }
        SyncCall::Positional | SyncCall::Nothing => {
            if ddir == READ {
                rustix::io::pread(fd, buf, offset)
            } else {
                rustix::io::pwrite(fd, buf, offset)
            }
        }
    }
}

pub(super) fn direct_hint(job: &JobSpec, e: rustix::io::Errno) -> String {
    if job.direct && e == rustix::io::Errno::INVAL {
        " (O_DIRECT I/O rejected: check that bs and sizes are multiples of the device's logical block size)".to_string()
    } else {
        String::new()
    }
}

/// ioengine=mmap: map the I/O's part of its file before the clock starts (fio's
/// fio_mmapio_prep runs before the I/O is timed).
pub(super) fn mmap_prep(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    io: &Io,
) -> Result<(), WorkloadError> {
    let job = setup.job;
    let plan = &setup.plan.files[io.file];
    let spec = crate::fio::engine::mmap::MapSpec {
        write: job.rw.writes() && !job.verify_only,
        read: job.rw.reads() || job.verify || job.verify_only,
        // fio's fio_madvise_file: no advice with fadvise_hint=0, else by the job's
        // randomness (fadvise_hint=random|sequential change only the descriptor's advice).
        hint: job.fadvise_hint != crate::fio::jobfile::FadviseHint::None,
        random: job.rw.is_random(),
        base: plan.offset,
        region: plan.size,
        nrfiles: setup.plan.files.len() as u64,
    };
    let f = &mut p.files[io.file];
    let fd = f.fd.as_ref().expect("opened before the I/O").as_fd();
    crate::fio::engine::mmap::Mapping::prep(&mut f.mapping, fd, io.offset, io.len, &spec)
        .map(|_| ())
        .map_err(|e| io_err("mmap", &plan.path, e))
}

/// One fsync (fsync=) or fdatasync (fdatasync=) of file `fi`, recorded in the sync stats.
pub(super) fn timed_sync<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &Planner<'_>,
    st: &mut ThreadStats,
    fi: usize,
    clk: T,
) -> Result<(), WorkloadError> {
    // read_iolog=: the log's syncs before this I/O, of their own file when that is open, of
    // their own kind, as many as the log has in a row.
    match p.replay.as_ref().and_then(|r| r.sync) {
        Some((f, data, n)) => {
            let f = if p.files[f].fd.is_some() || p.ops.has(Caps::FAKEIO) {
                f
            } else {
                fi
            };
            for _ in 0..n {
                one_sync(setup, p, st, f, data, clk)?;
            }
            Ok(())
        }
        None => one_sync(setup, p, st, fi, setup.job.fsync == 0, clk),
    }
}

/// One fsync (or fdatasync, `data_only`) of file `fi`, timed and counted.
fn one_sync<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &Planner<'_>,
    st: &mut ThreadStats,
    fi: usize,
    data_only: bool,
    clk: T,
) -> Result<(), WorkloadError> {
    if let Some(l) = &p.wlog {
        l.sync(fi, data_only);
    }
    let t0 = clk.now();
    let r = if p.ops.has(Caps::FAKEIO) {
        // The null engine opens no file: its sync completes at once, as fio's null queue.
        Ok(())
    } else if p.ops.has(Caps::MAPPED) {
        // fio's mmap engine syncs the mapping (msync MS_SYNC), whichever sync was asked;
        // a file not mapped yet has nothing to sync.
        p.files[fi].mapping.as_ref().map_or(Ok(()), |m| m.sync())
    } else if !data_only {
        rustix::fs::fsync(p.files[fi].fd.as_ref().expect("open"))
    } else {
        rustix::fs::fdatasync(p.files[fi].fd.as_ref().expect("open"))
    };
    let t1 = clk.now();
    r.map_err(|e| io_err("fsync", &setup.plan.files[fi].path, e))?;
    st.sync.record((t1 - t0).0);
    if !data_only {
        st.fsync_ios += 1;
    } else {
        st.datasync_ios += 1;
    }
    // fio's td_io_queue counts a sync in the depth levels (io_u_map) as it counts a read or
    // write; ours is issued alone (the queue drained first), at depth 1.
    st.depth_counts[0] += 1;
    Ok(())
}

/// Per direction, whether every lat of the sync loop equals its clat, so that the loop records
/// clat alone and lat is a copy of it at the end: start and issue are one clock reading unless a
/// write buffer is scrambled between them, and both are measured.
pub(super) fn sync_lat_is_clat(job: &JobSpec, policy: BufferPolicy) -> [bool; 3] {
    let both = !job.disable_clat && !job.disable_lat;
    [both, both && !policy.scramble, both]
}

/// A trim of `len` bytes at `offset`: on a block device BLKDISCARD (fio's os_trim), on a
/// regular file a hole punched with fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)
/// (fio 3.33's sync engines fail there with ENOTTY; the falloc engine punches too).
pub(super) fn trim_range(
    fd: BorrowedFd<'_>,
    blkdev: bool,
    offset: u64,
    len: u64,
) -> rustix::io::Result<()> {
    if blkdev {
        // BLKDISCARD = _IO(0x12, 119); the argument is {start, length} in bytes.
        const BLKDISCARD: libc::c_ulong = 0x1277;
        let range: [u64; 2] = [offset, len];
        // SAFETY: the ioctl reads two u64 from `range`, which outlives the call.
        let r = unsafe {
            libc::ioctl(
                std::os::fd::AsRawFd::as_raw_fd(&fd),
                BLKDISCARD as _,
                range.as_ptr(),
            )
        };
        if r != 0 {
            return Err(
                rustix::io::Errno::from_io_error(&std::io::Error::last_os_error())
                    .unwrap_or(rustix::io::Errno::IO),
            );
        }
        return Ok(());
    }
    use rustix::fs::FallocateFlags as F;
    rustix::fs::fallocate(fd, F::PUNCH_HOLE | F::KEEP_SIZE, offset, len)
}

/// The synchronous loop (fio's do_io with a FIO_SYNCIO engine): one I/O at a time, prepared,
/// moved by the engine's call and accounted, until the passes are done, the job is ended or a
/// cancel comes. Ok(true): a fill_device job filled the device.
// Over 150 lines: one turn of fio's do_io per I/O in fio's order, every step already a named
// call; what remains are its early exits (return, continue), which a split would turn into a
// state enum checked on every I/O.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_sync<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    buf: &mut AlignedBuf,
    policy: BufferPolicy,
    content: &mut Content,
    vctx: &mut Option<VerifyCtx>,
    st: &mut ThreadStats,
    clock: &mut Clock,
    ru0: &mut crate::fio::engine::stats::Rusage,
    logs: &mut IoLogs,
    clk: T,
) -> Result<bool, WorkloadError> {
    let job = setup.job;
    let mut think_count = 0u64;
    let mut last_ddir = WRITE;
    // A read-only verify job checks every block it reads (fio: verify on a job that does not
    // both read and write).
    let verify_reads = vctx.is_some() && !job.rw.writes();
    let mut target = crate::fio::engine::pace::LatencyTarget::new(job, 1, clk.now().0);
    let lat_is_clat = sync_lat_is_clat(job, policy);
    let ops = p.ops;
    let mapped = ops.has(Caps::MAPPED);
    // The sync loop records no slat.
    let mut times = io_clock(job, logs, p, target.is_some(), false, clk.now());
    loop {
        if setup.cancel.is_cancelled() {
            return Err(WorkloadError::Cancelled);
        }
        if setup.exit.is_some_and(|e| e.terminated()) {
            return Ok(false);
        }
        if p.held_back() {
            std::thread::sleep(job.flow_sleep);
            if clock.out_of_time(clk.now()) {
                return Ok(false);
            }
            continue;
        }
        // fio's check_get_verify: every verify_backlog logged writes, read back
        // verify_backlog_batch (default verify_backlog) of them before the next write.
        if let Some(vc) = vctx.as_ref().filter(|_| job.verify_backlog > 0) {
            match verify_backlogged(setup, p, buf, st, clock, ru0, vc, last_ddir, clk)? {
                Backlogged::None => {}
                Backlogged::Read => {
                    last_ddir = READ;
                    continue;
                }
                Backlogged::End => return Ok(false),
            }
        }
        while let Some(us) = p.rate_wait(clk) {
            if !rate_sleep(setup, p, clock, us, clk) {
                if setup.cancel.is_cancelled() {
                    return Err(WorkloadError::Cancelled);
                }
                return Ok(false);
            }
        }
        let sync_owed = p.sync_due();
        let Some(io) = p.next_io() else {
            if let Some(f) = p.replay_trailing_sync() {
                ensure_open(p, setup, f)?;
                sync_now(setup, p, st, f, clk)?;
                p.replay_synced();
            }
            if pass_over(setup, p, buf, st, clock, vctx, clk)? {
                continue;
            }
            return Ok(false);
        };
        // verify_state_load=1: a verifying read of a write the saved run may not have
        // completed ends the job (fio's verify_state_should_stop).
        if verify_reads && io.ddir == READ && p.vstate_stops(&io, st.dir[READ].total_ios) {
            return Ok(false);
        }
        last_ddir = io.ddir;
        ensure_open(p, setup, io.file)?;
        if sync_owed {
            sync_now(setup, p, st, io.file, clk)?;
        }
        p.log_issue(&io);
        if mapped && io.ddir != TRIM {
            mmap_prep(setup, p, &io)?;
        }
        let data = &mut buf.as_mut_slice()[..io.len];
        if io.ddir == WRITE && policy.refill {
            content.fill(job, data);
        }
        if io.ddir == WRITE {
            if let Some(vc) = vctx.as_mut() {
                vc.stamp(data, io.offset, p.issues[WRITE] - 1);
            }
        }
        times.issued();
        let start = times.start(clk);
        // fio stamps start before the write buffer is scrambled and issue just before the
        // call; for a read nothing happens in between, so one clock reading serves both.
        let issue = if io.ddir == WRITE && policy.scramble {
            scramble(data, io.offset, start);
            times.start(clk)
        } else {
            start
        };
        let moved = transfer(setup, ops, p, st, &io, data)?;
        if let Transfer::Filled = moved {
            return Ok(true);
        }
        // fio's io_completed: any read, write or trim that completes, failed or not.
        p.last_was_sync = false;
        if let Transfer::Failed(e, done) = moved {
            if sync_failed(setup, ops, p, st, clock, ru0, &io, e, done, clk) {
                return Ok(false);
            }
            continue;
        }
        if p.replay_abandons() {
            // fio's null engine at iodepth > 1 holds the log's last I/O queued when
            // read_iolog_get ends the job: issued, never reaped (see abandon_replayed).
            st.dir[io.ddir].total_ios += 1;
            continue;
        }
        let end = times.end(clk, clock.ramping);
        // fio accounts the read, then verifies it (its end_io).
        let bad = match vctx.as_ref().filter(|_| verify_reads && io.ddir == READ) {
            Some(vc) => vc.check(setup, io.file, data, io.offset, None).err(),
            None => None,
        };
        let lat = (end - start).0;
        account_sync(
            job,
            st,
            logs,
            clock,
            &io,
            lat,
            (end - issue).0,
            end,
            lat_is_clat,
        );
        if !job.disable_lat && !clock.ramping && max_latency_exceeded(setup, st, &io, lat) {
            return Ok(false);
        }
        if let Some(e) = bad {
            if verify_failed(setup, st, &e, true) == AfterError::End {
                return Ok(false);
            }
        }
        if after_io(
            setup,
            p,
            st,
            clock,
            ru0,
            &mut target,
            &mut think_count,
            &io,
            lat,
            end,
            clk,
        )? {
            return Ok(false);
        }
    }
}

/// After a completed I/O (the rest of fio's do_io turn): thinktime, the latency target's
/// check, the tick, the minimum rate and latency_target's step. Whether the job ends.
#[allow(clippy::too_many_arguments)]
#[inline]
fn after_io<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    st: &mut ThreadStats,
    clock: &mut Clock,
    ru0: &mut crate::fio::engine::stats::Rusage,
    target: &mut Option<crate::fio::engine::pace::LatencyTarget>,
    think_count: &mut u64,
    io: &Io,
    lat: u64,
    end: crate::probe::clock::Nanos,
    clk: T,
) -> Result<bool, WorkloadError> {
    let job = setup.job;
    *think_count += 1;
    let thought = think(job, *think_count);
    if let Some(l) = target.as_mut() {
        let ios = st.dir.iter().map(|d| d.total_ios).sum::<u64>();
        if let Err(max) = l.completed(lat, end.0, ios) {
            return Err(latency_fatal(setup, max));
        }
    }
    if !after_tick(p, st, clock, ru0, end, clk) {
        return Ok(true);
    }
    if p.rate.is_some() {
        let now = if thought > 0 {
            if let Some(r) = &mut p.rate {
                r.thought(io.ddir, thought);
            }
            clk.now()
        } else {
            end
        };
        if check_min_rate(p, st, clock, now) {
            return Ok(true);
        }
    }
    if let Some(l) = target.as_mut() {
        if latency_step(l, p, st, clock, ru0, end) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The sync owed before the next I/O (fsync= / fdatasync=), timed into the sync stats.
#[inline]
fn sync_now<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    st: &mut ThreadStats,
    fi: usize,
    clk: T,
) -> Result<(), WorkloadError> {
    timed_sync(setup, p, st, fi, clk)?;
    p.last_was_sync = true;
    // A synchronous engine has no commit: fio's td_io_queue marks the sync as one I/O
    // submitted and one completed.
    st.submit_counts[1] += 1;
    st.complete_counts[1] += 1;
    Ok(())
}

/// What the verify_backlog step did.
enum Backlogged {
    /// No round due: the loop goes on to the next I/O.
    None,
    /// A logged block was read back and checked.
    Read,
    /// The job ended (a verify failure, or the tick).
    End,
}

/// fio's check_get_verify in the sync loop: read back and check the next logged block when a
/// round is due.
#[allow(clippy::too_many_arguments)]
#[inline]
fn verify_backlogged<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    buf: &mut AlignedBuf,
    st: &mut ThreadStats,
    clock: &mut Clock,
    ru0: &mut crate::fio::engine::stats::Rusage,
    vc: &VerifyCtx,
    last_ddir: usize,
    clk: T,
) -> Result<Backlogged, WorkloadError> {
    let Some((fi, b)) = backlog_next(p, last_ddir, |_, _| false) else {
        return Ok(Backlogged::None);
    };
    let verified = verify_block(setup, p, buf, st, clk, vc, fi, b)?;
    // A read that completes, as any (fio's io_completed).
    p.last_was_sync = false;
    if verified == AfterError::End || !after_tick(p, st, clock, ru0, clk.now(), clk) {
        return Ok(Backlogged::End);
    }
    Ok(Backlogged::Read)
}

/// How one I/O's transfer ended.
enum Transfer {
    /// Every byte moved.
    Done,
    /// fill_device: the device is full and the job ends (fio clears the error).
    Filled,
    /// The engine's call failed after `.1` bytes had moved.
    Failed(rustix::io::Errno, usize),
}

/// Move `io`'s bytes with the engine's call, resumed after a short transfer (fio's
/// td_io_queue and its requeue of the rest).
#[inline]
fn transfer(
    setup: &CloneSetup<'_>,
    ops: &EngineOps,
    p: &mut Planner<'_>,
    st: &mut ThreadStats,
    io: &Io,
    data: &mut [u8],
) -> Result<Transfer, WorkloadError> {
    let job = setup.job;
    let f = &mut p.files[io.file];
    let mut done = 0usize;
    while done < io.len {
        match do_sync_io(
            job,
            ops,
            f,
            io.ddir,
            &mut data[done..],
            io.offset + done as u64,
        ) {
            Ok(0) => {
                return Err(io_err(
                    ddir_name(io.ddir),
                    &setup.plan.files[io.file].path,
                    std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!("short transfer at offset {}", io.offset + done as u64),
                    ),
                ));
            }
            Ok(n) => done += n,
            Err(e) if fills_device(job, io.ddir, e) => {
                // fill_device: the device is full, the job ends (fio clears the error, after
                // its engine logged it); the failed write is not logged for verify.
                let at = io.offset + done as u64;
                log_io_error(setup, WRITE, io.file, at, io.len - done, e.raw_os_error());
                unlog(p, io);
                st.dir[WRITE].total_ios += full_device_ios(if done > 0 { 1 } else { -1 });
                return Ok(Transfer::Filled);
            }
            Err(e) => return Ok(Transfer::Failed(e, done)),
        }
    }
    Ok(Transfer::Done)
}

/// A failed synchronous I/O (fio's io_completed on an error): counted in total_ios with a
/// short part before it (requeued), no bytes, no latency, out of the verify log; then fio's
/// error path. Whether the job ends.
#[allow(clippy::too_many_arguments)]
#[cold]
fn sync_failed<T: TimeSource>(
    setup: &CloneSetup<'_>,
    ops: &EngineOps,
    p: &mut Planner<'_>,
    st: &mut ThreadStats,
    clock: &mut Clock,
    ru0: &mut crate::fio::engine::stats::Rusage,
    io: &Io,
    e: rustix::io::Errno,
    done: usize,
    clk: T,
) -> bool {
    if io.ddir == WRITE {
        unlog(p, io);
    }
    st.dir[io.ddir].total_ios += full_device_ios(if done > 0 { 1 } else { -1 });
    st.depth_counts[0] += 1;
    st.submit_counts[1] += 1;
    st.complete_counts[1] += 1;
    let via = if io.ddir == TRIM || ops.has(Caps::QUEUE_ERRORS) {
        FailedVia::Queue
    } else {
        FailedVia::SyncXfer
    };
    io_failed(setup, st, io, e, via) == AfterError::End
        || !after_tick(p, st, clock, ru0, clk.now(), clk)
}

/// Account a completed synchronous I/O (fio's account_io_completion): clat, lat where it
/// differs from clat, bytes, the I/O log, the depth and batch counts.
#[allow(clippy::too_many_arguments)]
#[inline]
fn account_sync(
    job: &JobSpec,
    st: &mut ThreadStats,
    logs: &mut IoLogs,
    clock: &Clock,
    io: &Io,
    lat: u64,
    clat: u64,
    end: crate::probe::clock::Nanos,
    lat_is_clat: [bool; 3],
) {
    let d = &mut st.dir[io.ddir];
    if !job.disable_clat {
        d.clat.record(clat);
        st.lat_buckets.mark(clat);
    }
    if !job.disable_lat && !lat_is_clat[io.ddir] {
        d.lat.record(lat);
    }
    d.io_bytes += io.len as u64;
    d.total_ios += 1;
    if logs.active() {
        logs.completed(Completion {
            ddir: io.ddir,
            bs: io.len,
            offset: io.offset,
            at: end - clock.measured_from,
            lat,
            clat,
            prio: st.ioprio,
        });
    }
    st.depth_counts[0] += 1;
    st.submit_counts[1] += 1;
    st.complete_counts[1] += 1;
}
