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
    rate_sleep, think,
};
use super::verify_io::{VerifyCtx, backlog_next, pass_over, unlog, verify_failed};
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

/// The queueing loop (fio's do_io with an asynchronous engine): free slots are filled from the
/// planner (syncs, verify_backlog reads and trims on the way), then completions are reaped and
/// accounted, until the passes are done, the job is ended or a cancel comes. Ok(true): a
/// fill_device job filled the device.
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
    let target = crate::fio::engine::pace::LatencyTarget::new(job, depth as u32, clk.now().0);
    let times = io_clock(job, logs, p, target.is_some(), true, clk.now());
    let mut q = Queue {
        setup,
        verify_reads: vctx.is_some() && !job.rw.writes(),
        p,
        bufs,
        policy,
        content,
        vctx,
        st,
        clock,
        ru0,
        logs,
        clk,
        dir0,
        engine_op,
        slots: (0..depth).map(|_| None).collect(),
        free: (0..depth).rev().collect(),
        inflight: 0,
        pass_over: false,
        stop: false,
        stashed: None,
        stash_owes_sync: false,
        think_count: 0,
        target,
        times,
        late: None,
        quiesce: false,
        last_ddir: WRITE,
        batch: match job.iodepth_batch as usize {
            0 => depth,
            b => b.min(depth),
        },
        unsubmitted: Vec::with_capacity(depth),
    };
    loop {
        if setup.exit.is_some_and(|e| e.terminated()) {
            q.stop = true;
        }
        if setup.cancel.is_cancelled() {
            // Let the kernel finish what it holds before the buffers go away.
            while q.inflight > 0 {
                let n = backend
                    .reap(1, depth, &mut |_, _| {})
                    .map_err(|e| io_err(engine_op, dir0, e))?;
                q.inflight -= n;
            }
            return Err(WorkloadError::Cancelled);
        }
        if let Some(done) = q.fill(backend)? {
            return Ok(done);
        }
        if q.pass_over && q.inflight > 0 && q.p.replay.is_some() {
            q.abandon_replayed(backend)?;
        }
        if q.inflight == 0 {
            match q.idle()? {
                Some(done) => return Ok(done),
                None => continue,
            }
        }
        if let Some(done) = q.reap(backend)? {
            return Ok(done);
        }
    }
}

/// The queueing loop's state (fio's io_u queue of one clone): what the loop works on, the
/// slots in flight and the decisions carried from one turn to the next.
struct Queue<'r, 's, 'a, 'p, T> {
    setup: &'s CloneSetup<'a>,
    p: &'r mut Planner<'p>,
    bufs: &'r mut [AlignedBuf],
    policy: BufferPolicy,
    content: &'r mut Content,
    vctx: &'r mut Option<VerifyCtx>,
    st: &'r mut ThreadStats,
    clock: &'r mut Clock,
    ru0: &'r mut crate::fio::engine::stats::Rusage,
    logs: &'r mut IoLogs,
    clk: T,
    dir0: &'s Path,
    /// The call fio names when submitting or reaping fails.
    engine_op: &'static str,
    /// A read-only verify job checks every read it completes.
    verify_reads: bool,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    inflight: usize,
    pass_over: bool,
    stop: bool,
    /// An I/O taken from the planner while a sync was owed and I/O was in flight.
    stashed: Option<Io>,
    /// The stashed I/O was drawn when a sync was owed (fio decides before it draws): the
    /// sync comes first once the queue has drained.
    stash_owes_sync: bool,
    think_count: u64,
    target: Option<crate::fio::engine::pace::LatencyTarget>,
    times: crate::fio::engine::clock::IoClock,
    late: Option<u64>,
    /// A rated job waits with nothing in flight (fio's io_u_quiesce before the rate's sleep).
    quiesce: bool,
    /// fio's last_ddir, for verify_backlog's rounds.
    last_ddir: usize,
    /// fio's iodepth_batch_submit as its fixup_options makes it (0 or more than iodepth:
    /// iodepth): this many queued I/Os are submitted in one call.
    batch: usize,
    /// The slots queued and not yet submitted (fio's io_u_queued); empty whenever `fill`
    /// has returned, so nothing waits for a completion that was never submitted.
    unsubmitted: Vec<usize>,
}

/// What a batch of completions left to do after it.
#[derive(Default)]
struct Batch {
    /// The first failed or short I/O not counted by io_failed, and its result.
    err: Option<(Io, i64)>,
    /// An I/O error continue_on_error does not continue on ended the job (st.error).
    ended: bool,
    /// When the batch completed (fio reads the clock once per batch).
    t: Nanos,
}

/// The next I/O to queue, or what the filling loop does instead.
enum Next {
    Queue(Io, Option<u16>),
    /// Stop filling for now (the queue must drain, or the pass is over).
    Break,
    /// Go round the filling loop again.
    Again,
    /// The loop ends with this result.
    Return(bool),
}

impl<T: TimeSource> Queue<'_, '_, '_, '_, T> {
    /// Fill the free slots (fio's io_u_queued side of do_io), then submit what a partial
    /// batch left queued: fio commits it when the queue is full and it waits for a
    /// completion (td_io_getevents), or quiesces. Some(result): the loop ends.
    fn fill(&mut self, backend: &mut dyn AsyncBackend) -> Result<Option<bool>, WorkloadError> {
        let r = self.fill_slots(backend)?;
        self.commit(backend)?;
        Ok(r)
    }

    /// Submit the queued I/Os in one call (fio's td_io_commit and the engine's commit): the
    /// issue time is read once after it, every I/O's slat is taken from it, the submission
    /// counts one call of that many I/Os, and the depth distribution counts them at the
    /// depth they make (io_u_mark_depth(td, io_u_queued)).
    fn commit(&mut self, backend: &mut dyn AsyncBackend) -> Result<(), WorkloadError> {
        if self.unsubmitted.is_empty() {
            return Ok(());
        }
        backend
            .submit()
            .map_err(|e| io_err(self.engine_op, self.dir0, e))?;
        let issue = self.times.start(self.clk);
        let n = self.unsubmitted.len();
        let st = &mut *self.st;
        st.submit_counts[ThreadStats::batch_index(n)] += 1;
        st.depth_counts[ThreadStats::depth_index(self.inflight as u32)] += n as u64;
        for si in self.unsubmitted.drain(..) {
            self.times.issued();
            let slot = self.slots[si].as_mut().expect("a queued slot");
            slot.issue = issue;
            if !self.setup.job.disable_slat {
                let io = slot.io;
                st.dir[io.ddir].slat.record((issue - slot.start).0);
                if self.logs.active() {
                    self.logs.submitted(
                        io.ddir,
                        io.len,
                        io.offset,
                        issue - self.clock.measured_from,
                        (issue - slot.start).0,
                        slot.prio,
                    );
                }
            }
        }
        Ok(())
    }

    /// Queue I/Os into the free slots until none is left or something ends the filling.
    fn fill_slots(
        &mut self,
        backend: &mut dyn AsyncBackend,
    ) -> Result<Option<bool>, WorkloadError> {
        while !self.stop
            && !self.pass_over
            && !self.free.is_empty()
            && self
                .target
                .as_ref()
                .is_none_or(|l| self.inflight < l.depth())
        {
            let (io, verify_tag) = match self.next()? {
                Next::Queue(io, tag) => (io, tag),
                Next::Break => break,
                Next::Again => continue,
                Next::Return(done) => return Ok(Some(done)),
            };
            // fio clears last_was_sync when a read, write or trim completes; with several in
            // flight when that happens depends on timing (fio's sync count at iodepth 8 varies
            // from run to run), so here it is cleared when the I/O is queued: at iodepth 1
            // the same, and deeper a sync every N writes, with syncs before the reads that
            // follow until the next write, as at iodepth 1.
            self.p.last_was_sync = false;
            if io.ddir == TRIM {
                self.trim_now(&io);
                continue;
            }
            self.queue(backend, io, verify_tag)?;
            if (self.p.open_limit as usize) < self.p.files.len() {
                // An openfiles rotation may close a file: no I/O may be in flight then.
                break;
            }
        }
        Ok(None)
    }

    /// The next I/O for a free slot: flow control and the rate first, then an owed sync, a
    /// verify_backlog read, the stashed I/O or the planner's next.
    fn next(&mut self) -> Result<Next, WorkloadError> {
        let (setup, clk) = (self.setup, self.clk);
        let job = setup.job;
        if self.stashed.is_none() && self.p.held_back() {
            // fio's flow control quiesces (reaps everything in flight), then sleeps.
            if self.inflight == 0 {
                std::thread::sleep(job.flow_sleep);
                if self.clock.out_of_time(clk.now()) {
                    return Ok(Next::Return(false));
                }
                return Ok(Next::Again);
            }
            return Ok(Next::Break);
        }
        if self.stashed.is_none() {
            if let Some(us) = self.p.rate_wait(clk) {
                if self.inflight > 0 {
                    self.quiesce = true;
                    return Ok(Next::Break);
                }
                if !rate_sleep(setup, self.p, self.clock, us, clk) {
                    self.stop = true;
                    return Ok(Next::Break);
                }
                return Ok(Next::Again);
            }
        }
        let sync_owed = self.stash_owes_sync || (self.stashed.is_none() && self.p.sync_due());
        // fio's verify_backlog (check_get_verify): a logged block read back and checked on
        // completion, queued as any read; not while a sync is owed.
        let mut verify_tag = None;
        let backlog = if self.vctx.is_some()
            && job.verify_backlog > 0
            && self.stashed.is_none()
            && !sync_owed
        {
            match self.backlog_read() {
                Some(Some((io, tag))) => {
                    verify_tag = Some(tag);
                    Some(io)
                }
                // Unlogged since (its write failed): nothing to read.
                Some(None) => return Ok(Next::Again),
                None => None,
            }
        } else {
            None
        };
        let io = match self.stashed.take().or(backlog) {
            Some(io) => io,
            None => match self.p.next_io() {
                Some(io) => io,
                None => {
                    // read_iolog=: the syncs the log ends with, at once, as fio's libaio runs
                    // a sync at queue time.
                    if let Some(f) = self.p.replay_trailing_sync() {
                        ensure_open(self.p, setup, f)?;
                        timed_sync(setup, self.p, self.st, f, clk)?;
                        self.p.replay_synced();
                    }
                    self.pass_over = true;
                    return Ok(Next::Break);
                }
            },
        };
        self.stash_owes_sync = false;
        // verify_state_load=1: a verifying read of a write the saved run may not have
        // completed ends the job (fio's verify_state_should_stop).
        if self.verify_reads
            && io.ddir == READ
            && self.p.vstate_stops(&io, self.st.dir[READ].total_ios)
        {
            self.stop = true;
            return Ok(Next::Break);
        }
        ensure_open(self.p, setup, io.file)?;
        if sync_owed {
            // read_iolog=: the log's sync is fio's sync io_u, which libaio's engine runs at
            // queue time (do_io_u_sync) with the writes before it still in flight; fio
            // drains nothing for it, and neither does the replay.
            if self.inflight > 0 && self.p.replay.is_none() {
                // The owed sync must follow the writes it covers: drain first.
                self.stashed = Some(io);
                self.stash_owes_sync = true;
                return Ok(Next::Break);
            }
            timed_sync(setup, self.p, self.st, io.file, clk)?;
        }
        Ok(Next::Queue(io, verify_tag))
    }

    /// verify_backlog's next read: None when no round is due, Some(None) when the block
    /// chosen was unlogged since, else the read and its logged write's numberio.
    fn backlog_read(&mut self) -> Option<Option<(Io, u16)>> {
        let p = &mut *self.p;
        // The pieces whose writes are in flight (a piece is one write).
        let busy: Vec<(usize, u64)> = self
            .slots
            .iter()
            .flatten()
            .filter(|s| s.io.ddir == WRITE)
            .map(|s| (s.io.file, s.io.offset - p.files[s.io.file].base))
            .collect();
        let (fi, at) = backlog_next(p, self.last_ddir, |fi, at| busy.contains(&(fi, at)))?;
        let Some(piece) = p.files[fi].written.take(at) else {
            return Some(None);
        };
        Some(Some((
            Io {
                ddir: READ,
                file: fi,
                offset: p.files[fi].base + at,
                len: piece.len as usize,
            },
            piece.numberio,
        )))
    }

    /// A trim, done at queue time as fio's libaio and io_uring engines do (do_io_u_trim): the
    /// I/O is complete when the call returns, beside what is in flight.
    fn trim_now(&mut self, io: &Io) {
        let (setup, clk) = (self.setup, self.clk);
        let job = setup.job;
        let st = &mut *self.st;
        let start = clk.now();
        let f = &self.p.files[io.file];
        let fd = f.fd.as_ref().expect("open").as_fd();
        if let Err(e) = trim_range(fd, f.blkdev, io.offset, io.len as u64) {
            // Completed at queue time, as fio's: counted, no bytes, no latency.
            st.dir[TRIM].total_ios += 1;
            if io_failed(setup, st, io, e, FailedVia::Queue) == AfterError::End {
                self.stop = true;
            }
            return;
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
        if self.logs.active() {
            self.logs.completed(Completion {
                ddir: TRIM,
                bs: io.len,
                offset: io.offset,
                at: end - self.clock.measured_from,
                lat,
                clat: lat,
                prio: st.ioprio,
            });
        }
        st.submit_counts[ThreadStats::batch_index(1)] += 1;
        st.complete_counts[ThreadStats::batch_index(1)] += 1;
        st.depth_counts[ThreadStats::depth_index(self.inflight as u32 + 1)] += 1;
        self.think_count += 1;
        think(job, self.think_count);
        if !after_tick(self.p, st, self.clock, self.ru0, end, clk) {
            self.stop = true;
        }
    }

    /// Queue `io` in a free slot, and submit the queued ones once they make a batch
    /// (fio's iodepth_batch_submit, by default 1: every I/O on its own); slat is read right
    /// after the submission ([`Self::commit`]).
    fn queue(
        &mut self,
        backend: &mut dyn AsyncBackend,
        io: Io,
        verify_tag: Option<u16>,
    ) -> Result<(), WorkloadError> {
        let (job, clk) = (self.setup.job, self.clk);
        let p = &mut *self.p;
        let st = &mut *self.st;
        let si = self.free.pop().expect("a free slot");
        p.log_issue(&io);
        let data = &mut self.bufs[si].as_mut_slice()[..io.len];
        if io.ddir == WRITE && self.policy.refill {
            self.content.fill(job, data);
        }
        if io.ddir == WRITE {
            if let Some(vc) = self.vctx.as_mut() {
                vc.stamp(data, io.offset, p.issues[WRITE] - 1);
            }
        }
        let start = self.times.start(clk);
        if io.ddir == WRITE && self.policy.scramble {
            scramble(data, io.offset, start);
        }
        let fd = p.files[io.file].fd.as_ref().expect("open").as_raw_fd();
        let IoPrio {
            prio,
            index: prio_index,
            engine: sqe_prio,
        } = io_priority(p, &io, st.ioprio);
        // SAFETY: the buffer belongs to slot `si`, which stays out of the free list (and the
        // buffers stay alive) until its completion is reaped; files are closed only with no
        // I/O in flight (openfiles rotation drains, in fill).
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
        self.slots[si] = Some(Slot {
            io,
            start,
            // Set when it is submitted (commit).
            issue: start,
            prio,
            prio_index,
            verify: verify_tag,
        });
        self.last_ddir = io.ddir;
        self.inflight += 1;
        self.unsubmitted.push(si);
        if self.unsubmitted.len() >= self.batch {
            self.commit(backend)?;
        }
        self.think_count += 1;
        let thought = think(job, self.think_count);
        if let Some(r) = &mut self.p.rate {
            r.thought(io.ddir, thought);
        }
        Ok(())
    }

    /// Nothing in flight after filling: the loop ends (stopped, or the passes are done), goes
    /// round again, or the pass just over is verified and the next starts. Some(result): the
    /// loop ends.
    fn idle(&mut self) -> Result<Option<bool>, WorkloadError> {
        let (setup, clk) = (self.setup, self.clk);
        if self.stop {
            return Ok(Some(false));
        }
        if self.stashed.is_some() || !self.pass_over {
            return Ok(None);
        }
        self.pass_over = false;
        // Nothing in flight: the pass is verified before the next starts (fio).
        if pass_over(
            setup,
            self.p,
            &mut self.bufs[0],
            self.st,
            self.clock,
            self.vctx,
            clk,
        )? {
            return Ok(None);
        }
        Ok(Some(false))
    }

    /// Wait for completions and account them (fio's wait_for_completions and io_completed),
    /// then what the batch decides: the end of a fill_device job or of a failed one, a short
    /// transfer, a missed latency target, the tick. Some(result): the loop ends.
    fn reap(&mut self, backend: &mut dyn AsyncBackend) -> Result<Option<bool>, WorkloadError> {
        let (setup, clk) = (self.setup, self.clk);
        let job = setup.job;
        // The queue is full (or nothing is left to issue): wait for at least one completion
        // and take every one available, as fio's wait_for_completions.
        // fio's wait_for_completions: wait for iodepth_batch_complete_min (at least one when
        // nothing else can be done) and take at most iodepth_batch_complete_max (by default
        // the min, 1), so the queue is refilled after every completion and stays full.
        let min_evts = if self.quiesce {
            self.inflight
        } else {
            (job.iodepth_batch_complete_min as usize).clamp(1, self.inflight)
        };
        let max_evts = (job.iodepth_batch_complete_max as usize).max(min_evts);
        let mut batch = Batch::default();
        let reaped = backend
            .reap(min_evts, max_evts, &mut |si, res| {
                self.completed(&mut batch, si, res)
            })
            .map_err(|e| io_err(self.engine_op, self.dir0, e))?;
        self.inflight -= reaped;
        if self.inflight == 0 {
            self.quiesce = false;
        }
        self.st.complete_counts[ThreadStats::batch_index(reaped)] += 1;
        let full = batch.err.filter(|&(io, res)| {
            job.fill_device
                && io.ddir == WRITE
                && (res >= 0 || res == -(libc::ENOSPC as i64) || res == -(libc::EDQUOT as i64))
        });
        if full.is_some() || batch.ended {
            // fill_device: the device is full; or a fatal error ended the job: what is in
            // flight completes (counted as fio counts it), the job ends.
            if let Some((io, _)) = full {
                unlog(self.p, &io);
            }
            self.drain_after_end(backend, full.is_some())?;
            return Ok(Some(true));
        }
        // A failed I/O went through io_failed (or ended a fill_device job): what is left is a
        // short transfer.
        if let Some((io, _)) = batch.err {
            let path = &setup.plan.files[io.file].path;
            return Err(io_err(
                "asynchronous I/O",
                path,
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "short transfer"),
            ));
        }
        if let Some(max) = self.late {
            return Err(latency_fatal(setup, max));
        }
        let t = batch.t;
        if !after_tick(self.p, self.st, self.clock, self.ru0, t, clk) {
            self.stop = true;
        }
        if let Some(l) = &mut self.target {
            if latency_step(l, self.p, self.st, self.clock, self.ru0, t) {
                self.stop = true;
            }
        }
        if check_min_rate(self.p, self.st, self.clock, t) {
            self.stop = true;
        }
        Ok(None)
    }

    /// One completion of slot `si` with result `res` (fio's io_completed): a failed I/O goes
    /// fio's error path, a short one is left for the batch, a whole one is accounted, checked
    /// (verify) and logged.
    #[inline]
    fn completed(&mut self, batch: &mut Batch, si: usize, res: i64) {
        let setup = self.setup;
        let job = setup.job;
        // fio accounts no completion in ramp_time (should_account): no max_latency either.
        let ramping = self.clock.ramping;
        if batch.t == Nanos::ZERO {
            // fio reads the clock once per batch of completions.
            batch.t = self.times.end(self.clk, ramping);
        }
        let t = batch.t;
        let st = &mut *self.st;
        let s = self.slots[si]
            .take()
            .expect("completion of a slot in flight");
        self.free.push(si);
        if res < 0
            && !fills_device(
                job,
                s.io.ddir,
                rustix::io::Errno::from_raw_os_error(-res as i32),
            )
        {
            // fio's io_completed: the failed I/O counts (it was queued), moves no bytes,
            // records no latency, leaves the verify log; continued, the job goes on.
            st.dir[s.io.ddir].total_ios += 1;
            if s.io.ddir == WRITE {
                unlog(self.p, &s.io);
            }
            let e = rustix::io::Errno::from_raw_os_error(-res as i32);
            if io_failed(setup, st, &s.io, e, FailedVia::Reaped) == AfterError::End {
                batch.ended = true;
            }
            return;
        }
        if res < 0 || res as usize != s.io.len {
            if job.fill_device && s.io.ddir == WRITE {
                st.dir[WRITE].total_ios += full_device_ios(res);
                log_full_device(setup, &s.io, res);
            }
            batch.err.get_or_insert((s.io, res));
            return;
        }
        let mut bad = None;
        if (s.verify.is_some() || (self.verify_reads && s.io.ddir == READ)) && !batch.ended {
            if let Some(vc) = self.vctx.as_ref() {
                let data = &mut self.bufs[si].as_mut_slice()[..s.io.len];
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
            batch.ended = true;
        }
        // fio accounts the read, then verifies it (its end_io).
        if let Some(e) = bad {
            if verify_failed(setup, st, &e, false) == AfterError::End {
                batch.ended = true;
            }
        }
        if let Some(l) = &mut self.target {
            let ios = st.dir.iter().map(|d| d.total_ios).sum::<u64>();
            if let Err(max) = l.completed((t - s.start).0, t.0, ios) {
                self.late.get_or_insert(max);
            }
        }
        if self.logs.active() {
            self.logs.completed(Completion {
                ddir: s.io.ddir,
                bs: s.io.len,
                offset: s.io.offset,
                at: t - self.clock.measured_from,
                lat,
                clat,
                prio: s.prio,
            });
        }
    }

    /// The job ended (the device filled, `filled`, or a fatal error): what is in flight
    /// completes, counted as fio counts it, each failure logged as fio's io_completed does.
    /// read_iolog=: the log is done with I/Os in flight. fio 3.33's read_iolog_get sets
    /// td->done when its list runs out, and td_io_getevents then reaps nothing: those I/Os
    /// count as issued (total_ios) with no bytes and no latency (t0031, libaio at depth 128:
    /// 217650 writes, the bytes of 217523). They are reaped here, so their buffers are free,
    /// and counted so.
    fn abandon_replayed(&mut self, backend: &mut dyn AsyncBackend) -> Result<(), WorkloadError> {
        let depth = self.slots.len();
        while self.inflight > 0 {
            let n = backend
                .reap(1, depth, &mut |si, _| {
                    let s = self.slots[si]
                        .take()
                        .expect("completion of a slot in flight");
                    self.st.dir[s.io.ddir].total_ios += 1;
                    self.free.push(si);
                })
                .map_err(|e| io_err(self.engine_op, self.dir0, e))?;
            self.inflight -= n;
        }
        Ok(())
    }

    fn drain_after_end(
        &mut self,
        backend: &mut dyn AsyncBackend,
        filled: bool,
    ) -> Result<(), WorkloadError> {
        let setup = self.setup;
        let job = setup.job;
        let depth = self.slots.len();
        while self.inflight > 0 {
            let n = backend
                .reap(1, depth, &mut |si, res| {
                    let s = self.slots[si]
                        .take()
                        .expect("completion of a slot in flight");
                    let d = &mut self.st.dir[s.io.ddir];
                    if res >= 0 && res as usize == s.io.len {
                        d.io_bytes += s.io.len as u64;
                        d.total_ios += 1;
                    } else {
                        d.total_ios += full_device_ios(res);
                        if filled && s.io.ddir == WRITE {
                            log_full_device(setup, &s.io, res);
                        } else if res < 0 {
                            // After a fatal error fio's io_completed still logs each failed
                            // I/O it reaps.
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
                .map_err(|e| io_err(self.engine_op, self.dir0, e))?;
            self.inflight -= n;
        }
        Ok(())
    }
}
