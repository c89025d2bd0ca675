//! The queueing engines' loop (io_uring, libaio, posixaio, vsync): iodepth I/Os in flight,
//! submitted and reaped through an [`AsyncBackend`].
//!
//! Why it exists: fio's io_u queue for the asynchronous engines, slat measured. What it must never
//! do: allocate, log or lock per I/O, or keep issuing after a cancel or an exitall.

use super::buffers::{BufferPolicy, Content, scramble};
use super::errors::{
    AfterError, FailedVia, fills_device, full_device_ios, io_err, io_failed, log_full_device,
    log_io_error,
};
use super::planner::{Io, Planner, ensure_open};
use super::sync_loop::{timed_sync, trim_range};
use super::timing::{
    Clock, after_tick, check_min_rate, io_clock, latency_fatal, latency_step, max_latency_exceeded,
    next_pass, rate_sleep, think,
};
use super::verify_io::{VerifyCtx, backlog_next, unlog, verify_failed, verify_phase};
use super::{AlignedBuf, CloneSetup, IoPrio, io_priority, record_prio};
use crate::fio::engine::aio::{AsyncBackend, Uring};
use crate::fio::engine::clock::TimeSource;
use crate::fio::engine::iolog::{Completion, IoLogs};
use crate::fio::engine::ops::{Op, QueueKind};
use crate::fio::engine::stats::{READ, TRIM, ThreadStats, WRITE};
use crate::probe::clock::Nanos;
use crate::workload::WorkloadError;
use std::os::fd::{AsFd, AsRawFd};
use std::path::Path;

/// The io_uring ring of a clone, set up as fio's fio_ioring_post_init: the ring (sqthread_poll),
/// then fixedbufs' buffers (a refusal is fio's `io_queue_init` error: the kernel pins them
/// against RLIMIT_MEMLOCK), then registerfiles' files, every one opened first (fio's
/// fio_ioring_register_files), sqthread_poll implying registerfiles.
pub(super) fn uring_for(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    bufs: &mut [AlignedBuf],
    dir0: &Path,
) -> Result<Uring, WorkloadError> {
    let opts = &setup.job.uring;
    let mut ring = Uring::new(bufs.len(), opts).map_err(|e| io_err("io_uring_setup", dir0, e))?;
    if opts.fixedbufs {
        let regions: Vec<(*mut u8, usize)> = bufs
            .iter_mut()
            .map(|b| {
                let s = b.as_mut_slice();
                (s.as_mut_ptr(), s.len())
            })
            .collect();
        // SAFETY: the buffers outlive the ring (both live until the clone's loop returns, the
        // ring dropped first), and slot i only ever uses buffer i.
        unsafe { ring.register_buffers(&regions) }.map_err(|e| {
            let hint = if e.raw_os_error() == Some(libc::ENOMEM) {
                " (fixedbufs pins iodepth x bs of buffers against RLIMIT_MEMLOCK: raise `ulimit -l`, or lower iodepth / bs, or drop fixedbufs)"
            } else {
                ""
            };
            WorkloadError::io(
                "io_queue_init",
                dir0,
                std::io::Error::new(e.kind(), format!("{e}{hint}")),
            )
        })?;
    }
    if opts.registers_files() {
        for fi in 0..p.files.len() {
            ensure_open(p, setup, fi)?;
        }
        let fds: Vec<std::os::fd::RawFd> = p
            .files
            .iter()
            .map(|f| f.fd.as_ref().expect("opened above").as_raw_fd())
            .collect();
        ring.register_files(&fds)
            .map_err(|e| io_err("ioring_register_files", dir0, e))?;
    }
    Ok(ring)
}

pub(super) struct Slot {
    pub(super) io: Io,
    pub(super) start: Nanos,
    pub(super) issue: Nanos,
    /// The priority the I/O was issued with (fio's io_u->ioprio) and its index in the
    /// direction's per-priority stats (io_u->clat_prio_index).
    pub(super) prio: u32,
    pub(super) prio_index: u16,
    /// A verify_backlog read: the numberio its block's logged write had.
    pub(super) verify: Option<u16>,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn run_async<T: TimeSource>(
    setup: &CloneSetup<'_>,
    backend: &mut dyn AsyncBackend,
    p: &mut Planner<'_>,
    bufs: &mut [AlignedBuf],
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
    let depth = bufs.len();
    let verify_reads = vctx.is_some() && !job.rw.writes();
    let dir0 = setup
        .plan
        .files
        .first()
        .map(|f| f.path.as_path())
        .unwrap_or(Path::new("."));
    let engine_op = match p.ops.op {
        Op::Queue(kind) => kind.reap_call(),
        Op::Sync(_) | Op::File(_) => QueueKind::IoUring.reap_call(),
    };
    let mut slots: Vec<Option<Slot>> = (0..depth).map(|_| None).collect();
    let mut free: Vec<usize> = (0..depth).rev().collect();
    let mut inflight = 0usize;
    let mut pass_over = false;
    let mut stop = false;
    // An I/O taken from the planner while a sync was owed and I/O was in flight.
    let mut stashed: Option<Io> = None;
    // The stashed I/O was drawn when a sync was owed (fio decides before it draws): the
    // sync comes first once the queue has drained.
    let mut stash_owes_sync = false;
    let mut think_count = 0u64;
    let mut target = crate::fio::engine::pace::LatencyTarget::new(job, depth as u32, clk.now().0);
    let mut times = io_clock(job, logs, p, target.is_some(), true, clk.now());
    let mut late: Option<u64> = None;
    // A rated job waits with nothing in flight (fio's io_u_quiesce before the rate's sleep).
    let mut quiesce = false;
    // fio's last_ddir, for verify_backlog's rounds.
    let mut last_ddir = WRITE;
    loop {
        if setup.exit.is_some_and(|e| e.terminated()) {
            stop = true;
        }
        if setup.cancel.is_cancelled() {
            // Let the kernel finish what it holds before the buffers go away.
            while inflight > 0 {
                let n = backend
                    .reap(1, depth, &mut |_, _| {})
                    .map_err(|e| io_err(engine_op, dir0, e))?;
                inflight -= n;
            }
            return Err(WorkloadError::Cancelled);
        }
        // Fill free slots.
        while !stop
            && !pass_over
            && !free.is_empty()
            && target.as_ref().is_none_or(|l| inflight < l.depth())
        {
            if stashed.is_none() && p.held_back() {
                // fio's flow control quiesces (reaps everything in flight), then sleeps.
                if inflight == 0 {
                    std::thread::sleep(job.flow_sleep);
                    if clock.out_of_time(clk.now()) {
                        return Ok(false);
                    }
                    continue;
                }
                break;
            }
            if stashed.is_none() {
                if let Some(us) = p.rate_wait(clk) {
                    if inflight > 0 {
                        quiesce = true;
                        break;
                    }
                    if !rate_sleep(setup, p, clock, us, clk) {
                        stop = true;
                        break;
                    }
                    continue;
                }
            }
            let sync_owed = stash_owes_sync || (stashed.is_none() && p.sync_due());
            // fio's verify_backlog (check_get_verify): a logged block read back and checked
            // on completion, queued as any read; not while a sync is owed.
            let mut verify_tag = None;
            let backlog =
                if vctx.is_some() && job.verify_backlog > 0 && stashed.is_none() && !sync_owed {
                    let bs = job.bs[WRITE].0;
                    // The blocks whose writes are in flight (a verify block is one write's bs).
                    let busy: Vec<(usize, u64)> = slots
                        .iter()
                        .flatten()
                        .filter(|s| s.io.ddir == WRITE)
                        .map(|s| (s.io.file, (s.io.offset - p.files[s.io.file].base) / bs))
                        .collect();
                    match backlog_next(p, last_ddir, |fi, b| busy.contains(&(fi, b))) {
                        Some((fi, b)) => {
                            let logged = std::mem::take(&mut p.files[fi].written[b as usize]);
                            if logged == 0 {
                                // Unlogged since (its write failed): nothing to read.
                                continue;
                            }
                            verify_tag = Some(logged as u16);
                            Some(Io {
                                ddir: READ,
                                file: fi,
                                offset: p.files[fi].base + b * bs,
                                len: bs as usize,
                            })
                        }
                        None => None,
                    }
                } else {
                    None
                };
            let io = match stashed.take().or(backlog) {
                Some(io) => io,
                None => match p.next_io() {
                    Some(io) => io,
                    None => {
                        pass_over = true;
                        break;
                    }
                },
            };
            stash_owes_sync = false;
            ensure_open(p, setup, io.file)?;
            if sync_owed {
                if inflight > 0 {
                    // The owed sync must follow the writes it covers: drain first.
                    stashed = Some(io);
                    stash_owes_sync = true;
                    break;
                }
                timed_sync(setup, p, st, io.file, clk)?;
            }
            // fio clears last_was_sync when a read, write or trim completes; with several in
            // flight when that happens depends on timing (fio's sync count at iodepth 8 varies
            // from run to run), so here it is cleared when the I/O is queued: at iodepth 1
            // the same, and deeper a sync every N writes, with syncs before the reads that
            // follow until the next write, as at iodepth 1.
            p.last_was_sync = false;
            if io.ddir == TRIM {
                // fio's libaio and io_uring engines trim at queue time (do_io_u_trim), the
                // I/O complete when the call returns, beside what is in flight.
                let start = clk.now();
                let f = &p.files[io.file];
                let fd = f.fd.as_ref().expect("open").as_fd();
                if let Err(e) = trim_range(fd, f.blkdev, io.offset, io.len as u64) {
                    // Completed at queue time, as fio's: counted, no bytes, no latency.
                    st.dir[TRIM].total_ios += 1;
                    if io_failed(setup, st, &io, e, FailedVia::Queue) == AfterError::End {
                        stop = true;
                    }
                    continue;
                }
                let end = clk.now();
                let d = &mut st.dir[TRIM];
                let lat = (end - start).0;
                if !job.disable_clat {
                    d.clat.record(lat);
                    st.lat_buckets.mark(lat);
                }
                if !job.disable_lat {
                    d.lat.record(lat);
                }
                d.io_bytes += io.len as u64;
                d.total_ios += 1;
                if logs.active() {
                    logs.completed(Completion {
                        ddir: TRIM,
                        bs: io.len,
                        offset: io.offset,
                        at: end - clock.measured_from,
                        lat,
                        clat: lat,
                        prio: st.ioprio,
                    });
                }
                st.submit_counts[ThreadStats::batch_index(1)] += 1;
                st.complete_counts[ThreadStats::batch_index(1)] += 1;
                st.depth_counts[ThreadStats::depth_index(inflight as u32 + 1)] += 1;
                think_count += 1;
                think(job, think_count);
                if !after_tick(p, st, clock, ru0, end, clk) {
                    stop = true;
                }
                continue;
            }
            let si = free.pop().expect("a free slot");
            let data = &mut bufs[si].as_mut_slice()[..io.len];
            if io.ddir == WRITE && policy.refill {
                content.fill(job, data);
            }
            if io.ddir == WRITE {
                if let Some(vc) = vctx.as_mut() {
                    vc.stamp(data, io.offset, p.issues[WRITE] - 1);
                }
            }
            let start = times.start(clk);
            if io.ddir == WRITE && policy.scramble {
                scramble(data, io.offset, start);
            }
            let fd = p.files[io.file].fd.as_ref().expect("open").as_raw_fd();
            let IoPrio {
                prio,
                index: prio_index,
                engine: sqe_prio,
            } = io_priority(p, &io, st.ioprio);
            // SAFETY: the buffer belongs to slot `si`, which stays out of the free list (and
            // the buffers stay alive) until its completion is reaped; files are closed only
            // with no I/O in flight (openfiles rotation drains, below).
            unsafe {
                backend.queue(
                    si,
                    io.ddir == WRITE,
                    io.file,
                    fd,
                    data.as_mut_ptr(),
                    io.len,
                    io.offset,
                    sqe_prio,
                );
            }
            // fio's default iodepth_batch_submit=1: every I/O is submitted on its own, and
            // its issue time is read right after that submission (slat = issue - start).
            backend.submit().map_err(|e| io_err(engine_op, dir0, e))?;
            let issue = times.start(clk);
            times.issued();
            st.submit_counts[ThreadStats::batch_index(1)] += 1;
            if !job.disable_slat {
                st.dir[io.ddir].slat.record((issue - start).0);
                if logs.active() {
                    logs.submitted(
                        io.ddir,
                        io.len,
                        io.offset,
                        issue - clock.measured_from,
                        (issue - start).0,
                        prio,
                    );
                }
            }
            slots[si] = Some(Slot {
                io,
                start,
                issue,
                prio,
                prio_index,
                verify: verify_tag,
            });
            last_ddir = io.ddir;
            inflight += 1;
            think_count += 1;
            let thought = think(job, think_count);
            if let Some(r) = &mut p.rate {
                r.thought(io.ddir, thought);
            }
            st.depth_counts[ThreadStats::depth_index(inflight as u32)] += 1;
            if (p.open_limit as usize) < p.files.len() {
                // An openfiles rotation may close a file: no I/O may be in flight then.
                break;
            }
        }
        if inflight == 0 {
            if stop {
                return Ok(false);
            }
            if stashed.is_some() {
                continue;
            }
            if pass_over {
                pass_over = false;
                // Nothing in flight: the pass is verified before the next starts (fio).
                if let Some(vc) = vctx.as_ref().filter(|_| job.do_verify && job.rw.writes()) {
                    if verify_phase(setup, p, &mut bufs[0], st, clk, vc)? == AfterError::End {
                        return Ok(false);
                    }
                }
                if next_pass(setup, p, clock, clk.now())? {
                    continue;
                }
                return Ok(false);
            }
            continue;
        }
        let mut err: Option<(Io, i64)> = None;
        // An I/O error continue_on_error does not continue on ended the job (st.error).
        let mut ended = false;
        let vref = vctx.as_ref();
        let mut t = Nanos::ZERO;
        // The queue is full (or nothing is left to issue): wait for at least one completion
        // and take every one available, as fio's wait_for_completions.
        // fio's wait_for_completions: wait for iodepth_batch_complete_min (at least one when
        // nothing else can be done) and take at most iodepth_batch_complete_max (by default
        // the min, 1), so the queue is refilled after every completion and stays full.
        let min_evts = if quiesce {
            inflight
        } else {
            (job.iodepth_batch_complete_min as usize).clamp(1, inflight)
        };
        let measured_from = clock.measured_from;
        // fio accounts no completion in ramp_time (should_account): no max_latency either.
        let ramping = clock.ramping;
        let max_evts = (job.iodepth_batch_complete_max as usize).max(min_evts);
        let reaped = backend
            .reap(min_evts, max_evts, &mut |si, res| {
                if t == Nanos::ZERO {
                    // fio reads the clock once per batch of completions.
                    t = times.end(clk, ramping);
                }
                let s = slots[si].take().expect("completion of a slot in flight");
                free.push(si);
                if res < 0
                    && !fills_device(
                        job,
                        s.io.ddir,
                        rustix::io::Errno::from_raw_os_error(-res as i32),
                    )
                {
                    // fio's io_completed: the failed I/O counts (it was queued), moves no
                    // bytes, records no latency, leaves the verify log; continued, the job
                    // goes on.
                    st.dir[s.io.ddir].total_ios += 1;
                    if s.io.ddir == WRITE {
                        unlog(p, &s.io);
                    }
                    let e = rustix::io::Errno::from_raw_os_error(-res as i32);
                    if io_failed(setup, st, &s.io, e, FailedVia::Reaped) == AfterError::End {
                        ended = true;
                    }
                    return;
                }
                if res < 0 || res as usize != s.io.len {
                    if job.fill_device && s.io.ddir == WRITE {
                        st.dir[WRITE].total_ios += full_device_ios(res);
                        log_full_device(setup, &s.io, res);
                    }
                    err.get_or_insert((s.io, res));
                    return;
                }
                let mut bad = None;
                if (s.verify.is_some() || (verify_reads && s.io.ddir == READ)) && !ended {
                    if let Some(vc) = vref {
                        let data = &mut bufs[si].as_mut_slice()[..s.io.len];
                        bad = vc
                            .check(setup, s.io.file, data, s.io.offset, s.verify)
                            .err();
                    }
                }
                let d = &mut st.dir[s.io.ddir];
                let clat = (t - s.issue).0;
                let lat = (t - s.start).0;
                if !job.disable_clat {
                    d.clat.record(clat);
                    st.lat_buckets.mark(clat);
                }
                if !job.disable_lat {
                    d.lat.record(lat);
                }
                record_prio(d, job, s.prio_index, lat, clat);
                d.io_bytes += s.io.len as u64;
                d.total_ios += 1;
                if !job.disable_lat && !ramping && max_latency_exceeded(setup, st, &s.io, lat) {
                    ended = true;
                }
                // fio accounts the read, then verifies it (its end_io).
                if let Some(e) = bad {
                    if verify_failed(setup, st, &e, false) == AfterError::End {
                        ended = true;
                    }
                }
                if let Some(l) = &mut target {
                    let ios = st.dir.iter().map(|d| d.total_ios).sum::<u64>();
                    if let Err(max) = l.completed((t - s.start).0, t.0, ios) {
                        late.get_or_insert(max);
                    }
                }
                if logs.active() {
                    logs.completed(Completion {
                        ddir: s.io.ddir,
                        bs: s.io.len,
                        offset: s.io.offset,
                        at: t - measured_from,
                        lat,
                        clat,
                        prio: s.prio,
                    });
                }
            })
            .map_err(|e| io_err(engine_op, dir0, e))?;
        inflight -= reaped;
        if inflight == 0 {
            quiesce = false;
        }
        st.complete_counts[ThreadStats::batch_index(reaped)] += 1;
        let full = err.filter(|&(io, res)| {
            job.fill_device
                && io.ddir == WRITE
                && (res >= 0 || res == -(libc::ENOSPC as i64) || res == -(libc::EDQUOT as i64))
        });
        if full.is_some() || ended {
            // fill_device: the device is full; or a fatal error ended the job: what is in
            // flight completes (counted as fio counts it), the job ends.
            if let Some((io, _)) = full {
                unlog(p, &io);
            }
            let filled = full.is_some();
            while inflight > 0 {
                let n = backend
                    .reap(1, depth, &mut |si, res| {
                        let s = slots[si].take().expect("completion of a slot in flight");
                        let d = &mut st.dir[s.io.ddir];
                        if res >= 0 && res as usize == s.io.len {
                            d.io_bytes += s.io.len as u64;
                            d.total_ios += 1;
                        } else {
                            d.total_ios += full_device_ios(res);
                            if filled && s.io.ddir == WRITE {
                                log_full_device(setup, &s.io, res);
                            } else if res < 0 {
                                // After a fatal error fio's io_completed still logs each
                                // failed I/O it reaps.
                                let errno = -res as i32;
                                let class =
                                    crate::fio::jobfile::ErrorClass::of(s.io.ddir == READ, errno);
                                if !job.error_continues(class, errno) || job.error_dump {
                                    log_io_error(
                                        setup,
                                        s.io.ddir,
                                        s.io.file,
                                        s.io.offset,
                                        s.io.len,
                                        errno,
                                    );
                                }
                            }
                        }
                    })
                    .map_err(|e| io_err(engine_op, dir0, e))?;
                inflight -= n;
            }
            return Ok(true);
        }
        // A failed I/O went through io_failed (or ended a fill_device job): what is left is a
        // short transfer.
        if let Some((io, _)) = err {
            let path = &setup.plan.files[io.file].path;
            return Err(io_err(
                "asynchronous I/O",
                path,
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "short transfer"),
            ));
        }
        if let Some(max) = late {
            return Err(latency_fatal(setup, max));
        }
        if !after_tick(p, st, clock, ru0, t, clk) {
            stop = true;
        }
        if let Some(l) = &mut target {
            if latency_step(l, p, st, clock, ru0, t) {
                stop = true;
            }
        }
        if check_min_rate(p, st, clock, t) {
            stop = true;
        }
    }
}
