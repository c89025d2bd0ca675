//! fio's `io_submit_mode=offload` (rate-submit.c on workqueue.c): the job's thread only plans,
//! paces and queues; `iodepth` submission workers, each with the job's engine at depth 1, do
//! the I/O, so a rated job submits on time whatever the device's completion time.
//!
//! As fio 3.33: the job's thread takes a free buffer (of `iodepth`; it waits for one to come
//! back when all are out), stamps the I/O's start, and hands it to the first idle worker from
//! where the last one went idle (else the one given work longest ago, fio's
//! get_submit_worker); the rate counts the I/O as issued when it is queued. A worker stamps
//! issue just before (sync engines) or just after (async engines) the system call and
//! completion when it returns or is reaped, so lat includes the time queued, and slat (async
//! engines) too. Every worker keeps its own latencies, merged into the job's at its end (fio's
//! sum_thread_stats); bytes and I/Os done are published at once for the bandwidth samples and
//! the minimum-rate check. A pass ends by waiting for every buffer to come back (fio's
//! workqueue_flush).
//!
//! What it must never do: close a file or drop a buffer while a worker may use it (the job's
//! thread keeps every file open and gets every buffer back before it returns), or run an
//! option it does not honour here (parse-time checks refuse ramp_time, verify, logs,
//! latency_target, flow, fsync=, max_latency, continue_on_error, openfiles rotation, the
//! io_uring ring options and the engines without positional I/O).

use super::super::aio::{AsyncBackend, NativeAio, Uring};
use super::super::clock::TimeSource;
use super::super::stats::{READ, Rusage, ThreadStats, WRITE};
use super::buffers::{BufferPolicy, Content, scramble};
use super::errors::io_err;
use super::planner::{Io, Planner, ensure_open};
use super::sync_loop::direct_hint;
use super::timing::{Clock, after_tick, check_min_rate, next_pass, rate_sleep, think};
use super::{AlignedBuf, CloneSetup};
use crate::fio::engine::ops::{self, Op, QueueKind, SyncCall};
use crate::probe::clock::Nanos;
use crate::workload::WorkloadError;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;

/// One queued I/O.
struct Work {
    io: Io,
    fd: RawFd,
    buf: AlignedBuf,
    start: Nanos,
    /// The priority the engine puts on the I/O (cmdprio's, io_uring's job priority; 0: the
    /// submitting thread's applies) and its index among the direction's per-priority stats.
    prio: u16,
    prio_index: u16,
}

/// A buffer back from a worker, with the error of its I/O if it failed.
struct Back {
    buf: AlignedBuf,
    failed: Option<(usize, std::io::Error)>,
}

/// What the workers publish as they complete.
#[derive(Default)]
struct Done {
    bytes: [AtomicU64; 2],
    ios: [AtomicU64; 2],
}

/// A worker's end: its stats and the CPU it used.
struct WorkerOut {
    stats: ThreadStats,
    rusage: Rusage,
}

/// fio's get_submit_worker over the workers' idle flags: the first idle one from
/// `next_free`, wrapping; else the one with the oldest work (lowest seq).
fn pick(idle: &[AtomicBool], seq: &[u64], next_free: &AtomicUsize) -> usize {
    let n = idle.len();
    let next = next_free.load(Ordering::Acquire).min(n - 1);
    let found = (next..n)
        .chain(0..next)
        .find(|&i| idle[i].load(Ordering::Acquire));
    let w = found.unwrap_or_else(|| (0..n).min_by_key(|&i| seq[i]).unwrap_or(0));
    if w == next {
        next_free.store(if w + 1 < n { w + 1 } else { 0 }, Ordering::Release);
    }
    w
}

/// The job's loop in offload mode. Returns the CPU its workers used (fio counts a job's
/// threads in its usage).
// Over 150 lines: the workers' scope and the per-I/O loop that feeds them share the channels,
// the free buffers and the outstanding count; the loop's steps are named calls, the rest is
// its exits, and the scope cannot be split from the loop it keeps alive.
#[allow(clippy::too_many_arguments)]
pub(super) fn run<T: TimeSource + Send>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    bufs: Vec<AlignedBuf>,
    policy: BufferPolicy,
    content: &mut Content,
    st: &mut ThreadStats,
    clock: &mut Clock,
    ru0: &mut Rusage,
    clk: T,
) -> Result<Rusage, WorkloadError> {
    let job = setup.job;
    let n = bufs.len().max(1);
    let idle: Vec<AtomicBool> = (0..n).map(|_| AtomicBool::new(true)).collect();
    let next_free = AtomicUsize::new(0);
    let done = Done::default();
    // The per-priority stats each worker keeps (the job's, set up with cmdprio).
    let prios: [Vec<u32>; 3] = st
        .dir
        .each_ref()
        .map(|d| d.prios.iter().map(|p| p.ioprio).collect());
    // Bounded channels (preallocated): nothing is allocated per I/O; at most n buffers exist.
    let (back_tx, back_rx) = mpsc::sync_channel::<Back>(n);
    let dir0 = setup
        .plan
        .files
        .first()
        .map(|f| f.path.clone())
        .unwrap_or_default();
    std::thread::scope(|s| -> Result<Rusage, WorkloadError> {
        let mut senders = Vec::with_capacity(n);
        let mut handles = Vec::with_capacity(n);
        for wi in 0..n {
            let (tx, rx) = mpsc::sync_channel::<Work>(n);
            senders.push(tx);
            let back = back_tx.clone();
            let (idle, next_free, done, dir0, prios) = (&idle, &next_free, &done, &dir0, &prios);
            // Spawned by the job's thread after its ioprio_set (prio= / prioclass=): a new
            // thread starts with its creator's I/O priority (the kernel's copy_io), as fio's
            // workqueue threads do.
            let h = std::thread::Builder::new()
                .name(format!("fio-{}-sw{wi}", job.name))
                .spawn_scoped(s, move || {
                    worker(setup, wi, rx, back, idle, next_free, done, dir0, prios, clk)
                })
                .map_err(|e| io_err("spawn a submission worker", dir0, e))?;
            handles.push(h);
        }
        drop(back_tx);
        let mut free = bufs;
        let mut out = 0usize;
        let mut seq = vec![0u64; n];
        let mut work_seq = 0u64;
        let mut think_count = 0u64;
        let mut failed: Option<(usize, std::io::Error)> = None;
        let take_back = |b: Back,
                         free: &mut Vec<AlignedBuf>,
                         out: &mut usize,
                         failed: &mut Option<(usize, std::io::Error)>| {
            *out -= 1;
            if let Some(f) = b.failed {
                failed.get_or_insert(f);
            }
            free.push(b.buf);
        };
        let mut result: Result<(), WorkloadError> = Ok(());
        'run: loop {
            if setup.cancel.is_cancelled() {
                result = Err(WorkloadError::Cancelled);
                break;
            }
            if setup.exit.is_some_and(|e| e.terminated()) {
                break;
            }
            while let Some(us) = p.rate_wait(clk) {
                if !rate_sleep(setup, p, clock, us, clk) {
                    break 'run;
                }
            }
            let Some(io) = p.next_io() else {
                // The pass ends when everything queued is back (fio's workqueue_flush).
                while out > 0 {
                    let b = back_rx.recv().expect("a worker holds a buffer");
                    take_back(b, &mut free, &mut out, &mut failed);
                }
                publish(st, &done);
                match next_pass(setup, p, clock, clk.now()) {
                    Ok(true) => continue,
                    Ok(false) => break,
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            };
            if let Err(e) = ensure_open(p, setup, io.file) {
                result = Err(e);
                break;
            }
            p.log_issue(&io);
            let buf = match free.pop() {
                Some(b) => b,
                None => {
                    let b = back_rx.recv().expect("a worker holds a buffer");
                    take_back(b, &mut free, &mut out, &mut failed);
                    free.pop().expect("a buffer came back")
                }
            };
            if failed.is_some() {
                free.push(buf);
                break;
            }
            out += 1;
            let to = Handoff {
                idle: &idle,
                seq: &mut seq,
                next_free: &next_free,
                work_seq: &mut work_seq,
                senders: &senders,
            };
            if !hand_off(setup, p, st, policy, content, io, buf, to, clk) {
                out -= 1;
                break;
            }
            think_count += 1;
            let thought = think(job, think_count);
            if let Some(r) = &mut p.rate {
                r.thought(io.ddir, thought);
            }
            while let Ok(b) = back_rx.try_recv() {
                take_back(b, &mut free, &mut out, &mut failed);
            }
            publish(st, &done);
            let now = clk.now();
            if !after_tick(p, st, clock, ru0, now, clk) {
                break;
            }
            if check_min_rate(p, st, clock, now) {
                break;
            }
        }
        // Every buffer back before anything is dropped or closed.
        while out > 0 {
            let b = back_rx.recv().expect("a worker holds a buffer");
            take_back(b, &mut free, &mut out, &mut failed);
        }
        publish(st, &done);
        drop(senders);
        join_workers(setup, st, handles, result, failed)
    })
}

/// Where the offload loop hands its I/Os to the submission workers.
struct Handoff<'h> {
    idle: &'h [AtomicBool],
    seq: &'h mut [u64],
    next_free: &'h AtomicUsize,
    work_seq: &'h mut u64,
    senders: &'h [mpsc::SyncSender<Work>],
}

/// Prepare `io` in `buf` (the write buffer filled and scrambled, start read, the priority
/// drawn as the inline loop's engines draw it) and hand it to the idlest worker. Whether it
/// was taken (a worker that is gone ends the loop).
#[allow(clippy::too_many_arguments)]
#[inline]
fn hand_off<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    st: &ThreadStats,
    policy: BufferPolicy,
    content: &mut Content,
    io: Io,
    mut buf: AlignedBuf,
    to: Handoff<'_>,
    clk: T,
) -> bool {
    let job = setup.job;
    let data = &mut buf.as_mut_slice()[..io.len];
    if io.ddir == WRITE && policy.refill {
        content.fill(job, data);
    }
    let start = clk.now();
    if io.ddir == WRITE && policy.scramble {
        scramble(data, io.offset, start);
    }
    let fd = match &p.files[io.file].fd {
        Some(fd) => fd.as_raw_fd(),
        // The null engine opens nothing.
        None => -1,
    };
    // As the inline loop's engines.
    let super::IoPrio {
        index: prio_index,
        engine: prio,
        ..
    } = super::io_priority(p, &io, st.ioprio);
    let w = pick(to.idle, to.seq, to.next_free);
    *to.work_seq += 1;
    to.seq[w] = *to.work_seq;
    to.idle[w].store(false, Ordering::Release);
    let work = Work {
        io,
        fd,
        buf,
        start,
        prio,
        prio_index,
    };
    to.senders[w].send(work).is_ok()
}

/// The end of the offload loop: every worker joined and its stats merged (fio counts a
/// job's threads in its usage); then the loop's error, a worker's, or the first failed I/O
/// (with the O_DIRECT hint), in that order. The workers' CPU use.
fn join_workers(
    setup: &CloneSetup<'_>,
    st: &mut ThreadStats,
    handles: Vec<std::thread::ScopedJoinHandle<'_, Result<WorkerOut, WorkloadError>>>,
    result: Result<(), WorkloadError>,
    failed: Option<(usize, std::io::Error)>,
) -> Result<Rusage, WorkloadError> {
    let mut rusage = Rusage::default();
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(w)) => {
                merge(st, &w.stats);
                rusage.add(&w.rusage);
            }
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {
                first_err.get_or_insert(WorkloadError::InvalidOptions(
                    "a fio submission worker panicked".to_string(),
                ));
            }
        }
    }
    result?;
    if let Some(e) = first_err {
        return Err(e);
    }
    if let Some((fi, e)) = failed {
        let hint = e
            .raw_os_error()
            .map(|c| direct_hint(setup.job, rustix::io::Errno::from_raw_os_error(c)))
            .unwrap_or_default();
        return Err(WorkloadError::Io {
            op: "I/O (offloaded)",
            path: setup.plan.files[fi].path.clone(),
            source: std::io::Error::other(format!("{e}{hint}")),
        });
    }
    Ok(rusage)
}

/// The bytes and I/Os the workers completed, into the job's stats (for its samples and the
/// minimum-rate check; the end merge sets them again, exactly).
fn publish(st: &mut ThreadStats, done: &Done) {
    for d in [READ, WRITE] {
        st.dir[d].io_bytes = done.bytes[d].load(Ordering::Acquire);
        st.dir[d].total_ios = done.ios[d].load(Ordering::Acquire);
    }
}

/// fio's sum_thread_stats of a worker into its job: latencies and I/O-unit counts (bytes and
/// I/Os are the published totals already).
fn merge(st: &mut ThreadStats, w: &ThreadStats) {
    for d in [READ, WRITE] {
        let t = &mut st.dir[d];
        t.slat.merge(&w.dir[d].slat);
        t.clat.merge(&w.dir[d].clat);
        t.lat.merge(&w.dir[d].lat);
        for (a, b) in t.prios.iter_mut().zip(&w.dir[d].prios) {
            a.lat.merge(&b.lat);
        }
    }
    st.lat_buckets.merge(&w.lat_buckets);
    for (a, b) in st.depth_counts.iter_mut().zip(w.depth_counts) {
        *a += b;
    }
    for (a, b) in st.submit_counts.iter_mut().zip(w.submit_counts) {
        *a += b;
    }
    for (a, b) in st.complete_counts.iter_mut().zip(w.complete_counts) {
        *a += b;
    }
}

/// One submission worker: the job's engine at depth 1 (fio's io_workqueue_fn with the
/// worker's iodepth=1: queue, then wait for the completion).
#[allow(clippy::too_many_arguments)]
fn worker<T: TimeSource>(
    setup: &CloneSetup<'_>,
    wi: usize,
    rx: mpsc::Receiver<Work>,
    back: mpsc::SyncSender<Back>,
    idle: &[AtomicBool],
    next_free: &AtomicUsize,
    done: &Done,
    dir0: &std::path::Path,
    prios: &[Vec<u32>; 3],
    clk: T,
) -> Result<WorkerOut, WorkloadError> {
    let job = setup.job;
    let ru0 = Rusage::thread();
    let engine = ops::of(job.ioengine);
    // The call a worker without a backend makes (fio's sync engines under offload).
    let call = engine.sync_call();
    let mut backend: Option<Box<dyn AsyncBackend>> = match engine.op {
        Op::Queue(QueueKind::Libaio) => Some(Box::new(
            NativeAio::new(1).map_err(|e| io_err("io_setup", dir0, e))?,
        )),
        Op::Queue(QueueKind::IoUring) => Some(Box::new(
            Uring::new(1, &job.uring).map_err(|e| io_err("io_uring_setup", dir0, e))?,
        )),
        _ => None,
    };
    let mut st = ThreadStats {
        ioprio: job.ioprio().unwrap_or(0),
        ..ThreadStats::default()
    };
    for (d, v) in st.dir.iter_mut().zip(prios) {
        d.prios = v
            .iter()
            .map(|&p| super::super::stats::PrioStat::new(p))
            .collect();
    }
    loop {
        let mut w = match rx.try_recv() {
            Ok(w) => w,
            Err(mpsc::TryRecvError::Disconnected) => break,
            Err(mpsc::TryRecvError::Empty) => {
                idle[wi].store(true, Ordering::Release);
                next_free.store(wi, Ordering::Release);
                match rx.recv() {
                    Ok(w) => {
                        idle[wi].store(false, Ordering::Release);
                        w
                    }
                    Err(_) => break,
                }
            }
        };
        let io = w.io;
        let data = &mut w.buf.as_mut_slice()[..io.len];
        let (issue, end, res) = match &mut backend {
            Some(b) => {
                // SAFETY: the buffer is this worker's until it is sent back, after the
                // completion below is reaped; the job's thread keeps the file open until every
                // buffer is back.
                unsafe {
                    b.queue(
                        0,
                        io.ddir == WRITE,
                        // registerfiles is refused with offload at parse: no file numbers.
                        0,
                        w.fd,
                        data.as_mut_ptr(),
                        io.len,
                        io.offset,
                        w.prio,
                    );
                }
                let submitted = b.submit();
                let issue = clk.now();
                let mut res = 0i64;
                let mut end = issue;
                let reaped = submitted.and_then(|()| {
                    b.reap(1, 1, &mut |_, r| {
                        end = clk.now();
                        res = r;
                    })
                });
                let res = match reaped {
                    Err(e) => Err(e),
                    Ok(_) if res < 0 => Err(std::io::Error::from_raw_os_error(-res as i32)),
                    Ok(_) => Ok(res as usize),
                };
                (issue, end, res)
            }
            None => {
                let issue = clk.now();
                let res = positional(call, w.fd, io.ddir, data, io.offset);
                (issue, clk.now(), res)
            }
        };
        let failed = match res {
            Ok(n) if n == io.len => None,
            Ok(_) => Some(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("short transfer at offset {}", io.offset),
            )),
            Err(e) => Some(e),
        };
        if failed.is_none() {
            let d = &mut st.dir[io.ddir];
            let clat = (end - issue).0;
            if !job.disable_clat {
                d.clat.record(clat);
                st.lat_buckets.mark(clat);
            }
            if !job.disable_lat {
                d.lat.record((end - w.start).0);
            }
            if backend.is_some() && !job.disable_slat {
                d.slat.record((issue - w.start).0);
            }
            super::record_prio(d, job, w.prio_index, (end - w.start).0, clat);
            d.io_bytes += io.len as u64;
            d.total_ios += 1;
            st.depth_counts[ThreadStats::depth_index(1)] += 1;
            st.submit_counts[ThreadStats::batch_index(1)] += 1;
            st.complete_counts[ThreadStats::batch_index(1)] += 1;
            done.bytes[io.ddir].fetch_add(io.len as u64, Ordering::AcqRel);
            done.ios[io.ddir].fetch_add(1, Ordering::AcqRel);
        }
        if back
            .send(Back {
                buf: w.buf,
                failed: failed.map(|e| (io.file, e)),
            })
            .is_err()
        {
            break;
        }
    }
    Ok(WorkerOut {
        stats: st,
        rusage: Rusage::thread().since(&ru0),
    })
}

/// One positional read or write of the sync engines offload supports (psync, pvsync,
/// pvsync2; null moves nothing).
fn positional(
    call: SyncCall,
    fd: RawFd,
    ddir: usize,
    buf: &mut [u8],
    offset: u64,
) -> std::io::Result<usize> {
    if call == SyncCall::Nothing {
        return Ok(buf.len());
    }
    // SAFETY: the job's thread keeps the file open until every queued I/O is back.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let mut doneb = 0usize;
    while doneb < buf.len() {
        let off = offset + doneb as u64;
        let n = match (call, ddir == READ) {
            (SyncCall::Vectored | SyncCall::Vectored2, true) => {
                rustix::io::preadv(fd, &mut [std::io::IoSliceMut::new(&mut buf[doneb..])], off)
            }
            (SyncCall::Vectored | SyncCall::Vectored2, false) => {
                rustix::io::pwritev(fd, &[std::io::IoSlice::new(&buf[doneb..])], off)
            }
            (_, true) => rustix::io::pread(fd, &mut buf[doneb..], off),
            (_, false) => rustix::io::pwrite(fd, &buf[doneb..], off),
        }?;
        if n == 0 {
            break;
        }
        doneb += n;
    }
    Ok(doneb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_goes_to_the_first_idle_worker_else_the_oldest() {
        let idle: Vec<AtomicBool> = (0..3).map(|_| AtomicBool::new(true)).collect();
        let next = AtomicUsize::new(0);
        let mut seq = [0u64; 3];
        assert_eq!(pick(&idle, &seq, &next), 0);
        idle[0].store(false, Ordering::Relaxed);
        seq[0] = 1;
        assert_eq!(pick(&idle, &seq, &next), 1);
        idle[1].store(false, Ordering::Relaxed);
        seq[1] = 2;
        idle[2].store(false, Ordering::Relaxed);
        seq[2] = 3;
        // None idle: the one given work longest ago.
        assert_eq!(pick(&idle, &seq, &next), 0);
    }
}
