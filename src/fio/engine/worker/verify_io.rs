//! Verify I/O: the reads that check what the job wrote (verify=, do_verify, verify_backlog),
//! after the write pass or between writes, synchronous or queued, and fio's verify error path.
//!
//! Why it exists: verify is its own phase in fio (do_verify) and interleaves with writes through
//! the backlog. What it must never do: change what a block holds, or allocate per block.

use super::errors::{AfterError, io_err};
use super::planner::{Io, Planner, ensure_open};
use super::timing::{Clock, next_pass};
use super::{AlignedBuf, CloneSetup};
use crate::fio::engine::clock::TimeSource;
use crate::fio::engine::ops::Caps;
use crate::fio::engine::rand::{self, Taus};
use crate::fio::engine::stats::{READ, ThreadStats, WRITE};
use crate::fio::engine::verify;
use crate::fio::jobfile::{RandomGenerator, VerifyKind};
use crate::probe::clock::Nanos;
use crate::workload::WorkloadError;

/// A verify job's checker and fio's verify_state generator (the seeds of random content).
pub(super) struct VerifyCtx {
    pub(super) v: verify::Verifier,
    pub(super) rand: Taus,
    pub(super) compress: u32,
}

impl VerifyCtx {
    pub(super) fn of(
        setup: &CloneSetup<'_>,
        seeds: &[u64; rand::NR_SEEDS],
    ) -> Result<Option<VerifyCtx>, WorkloadError> {
        let job = setup.job;
        if !job.verify {
            return Ok(None);
        }
        // fio's fixup_options: the interval defaults to the smallest write size, is at most
        // that (or the smallest read size of a job that reads) and divides the smallest and
        // the largest write size (else it is their gcd).
        let (w, wmax, r) = (job.min_bs(WRITE), job.max_bs(WRITE), job.min_bs(READ));
        let mut interval = job.verify_interval.map_or(w, |b| b.0);
        if interval > w {
            interval = w;
        } else if job.rw.reads() && interval > r {
            interval = r;
        }
        if interval == 0 || w % interval != 0 || wmax % interval != 0 {
            interval = gcd(w, wmax);
        }
        let hs = verify::hdr_size(job.verify_kind) as u64;
        if interval <= hs {
            return Err(WorkloadError::InvalidOptions(format!(
                "job '{}': verify interval {interval} is too small for the {hs}-byte header of this verify= (raise bs= or verify_interval=)",
                job.name
            )));
        }
        if job.verify_kind == VerifyKind::Sha512 && interval < hs + verify::SHA512_MIN_DATA as u64 {
            // fio's sha512 keeps 128 bytes of its input buffer: with less data after the
            // header some of them are never written, and fio compares them with garbage.
            return Err(WorkloadError::InvalidOptions(format!(
                "job '{}': verify=sha512 needs at least {} bytes of data after its {hs}-byte header, the interval is {interval} (raise bs= or verify_interval= to {} or more)",
                job.name,
                verify::SHA512_MIN_DATA,
                hs + verify::SHA512_MIN_DATA as u64
            )));
        }
        if job.verify_offset.0 > 0 && job.verify_offset.0 < hs {
            // fio accepts it and swaps overlapping ranges (its memswp), which garbles the
            // header it then fails to verify: refused instead.
            return Err(WorkloadError::InvalidOptions(format!(
                "job '{}': verify_offset={} is inside the {hs}-byte header of this verify= (fio 3.33 accepts it and then fails its own verify); give verify_offset={hs} or more",
                job.name, job.verify_offset.0
            )));
        }
        if job.verify_offset.0 > 0 && job.verify_offset.0 + hs > interval {
            return Err(WorkloadError::InvalidOptions(format!(
                "job '{}': verify_offset={} puts the {hs}-byte header past the {interval}-byte interval",
                job.name, job.verify_offset.0
            )));
        }
        let use64 = job.random_generator == RandomGenerator::Tausworthe64;
        Ok(Some(VerifyCtx {
            v: verify::Verifier {
                kind: job.verify_kind,
                interval: interval as usize,
                pattern: job.verify_pattern.clone(),
                header_at: job.verify_offset.0 as usize,
                thread: setup.thread_number as u16,
                // fio's verify_header: not with verify_only (the writes were another run's).
                check_numberio: job.rw.writes() && !job.time_based && !job.verify_only,
                dump: job.verify_dump,
                fatal: job.verify_fatal,
            },
            rand: Taus::new(seeds[rand::SEED_VERIFY], use64),
            compress: job
                .buffer_compress_percentage
                .filter(|&p| p < 100)
                .unwrap_or(0),
        }))
    }

    /// fio's populate_verify_io_u: random content from the verify generator (or the pattern),
    /// then the headers. `numberio` is the write's number.
    #[inline]
    pub(super) fn stamp(&mut self, data: &mut [u8], offset: u64, numberio: u64) {
        if self.v.kind == VerifyKind::Null {
            // fio's populate_verify_io_u: verify=null leaves the write buffer alone.
            return;
        }
        let rand_seed = if self.v.pattern.is_none() {
            let s = rand::next_seed(&mut self.rand);
            rand::fio_fill_percentage(data, s, self.compress, data.len(), &[]);
            s
        } else {
            0
        };
        let now = Nanos::now().0;
        let st = verify::Stamp {
            rand_seed,
            numberio: numberio as u16,
            time_sec: (now / 1_000_000_000) as u32,
            time_nsec: (now % 1_000_000_000) as u32,
        };
        self.v.populate(data, offset, st);
    }

    /// Check a block read at `offset` of file `fi`; the error is fio's message (and, with
    /// verify_dump, the names of the dumped files).
    pub(super) fn check(
        &self,
        setup: &CloneSetup<'_>,
        fi: usize,
        data: &mut [u8],
        offset: u64,
        numberio: Option<u16>,
    ) -> Result<(), WorkloadError> {
        let name = &setup.plan.files[fi].fio_name;
        let numberio = numberio.filter(|_| self.v.check_numberio);
        let res = self.v.check(data, offset, numberio, name);
        self.settle(setup, fi, res)
    }

    /// A check's outcome as the job sees it: failures fio prints without failing the I/O
    /// ([`verify::Failure::lost`]) are printed here (and dumped) and the I/O passes.
    pub(super) fn settle(
        &self,
        setup: &CloneSetup<'_>,
        fi: usize,
        res: Result<(), Vec<verify::Failure>>,
    ) -> Result<(), WorkloadError> {
        match res {
            Ok(()) => Ok(()),
            Err(fs) if fs.iter().all(|f| f.lost) => {
                if let WorkloadError::Io { source, .. } = self.report(setup, fi, &fs) {
                    eprintln!("{source}");
                }
                Ok(())
            }
            Err(fs) => Err(self.report(setup, fi, &fs)),
        }
    }

    /// The job's error for the failures of a block of file `fi`: fio's messages (and, with
    /// verify_dump, the dumps, written here).
    pub(super) fn report(
        &self,
        setup: &CloneSetup<'_>,
        fi: usize,
        fs: &[verify::Failure],
    ) -> WorkloadError {
        let path = &setup.plan.files[fi].path;
        let mut m = String::new();
        for f in fs {
            if !m.is_empty() {
                m.push('\n');
            }
            m.push_str(&f.message);
            if self.v.dump {
                m.push_str(&verify::dump(path, f));
            }
        }
        WorkloadError::Io {
            op: "verify",
            path: path.clone(),
            source: std::io::Error::other(m),
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// A verify read done: where, how long its piece is, the logged write's number, how long it
/// took, bytes read.
pub(super) struct VerifyRead {
    pub(super) off: u64,
    pub(super) len: usize,
    pub(super) numberio: u16,
    pub(super) took: u64,
    pub(super) done: usize,
}

/// Read the piece logged at `at` (from the region's start) of file `fi` into the front of
/// `buf`, its own length of it (None when no piece is logged there: nothing is read). Issued
/// with pread whatever the engine (fio uses the job's engine: latencies differ, counts do
/// not). The piece leaves the log.
pub(super) fn read_logged<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    buf: &mut [u8],
    clk: T,
    fi: usize,
    at: u64,
) -> Result<Option<VerifyRead>, WorkloadError> {
    let Some(piece) = p.files[fi].written.take(at) else {
        return Ok(None);
    };
    let len = piece.len as usize;
    let data = &mut buf[..len];
    ensure_open(p, setup, fi)?;
    let fd = p.files[fi].fd.as_ref().expect("opened");
    let off = p.files[fi].base + at;
    if let Some(l) = &p.wlog {
        l.io(fi, READ, off, len as u64);
    }
    let t0 = clk.now();
    let mut done = 0usize;
    while done < data.len() {
        let n = rustix::io::pread(fd, &mut data[done..], off + done as u64)
            .map_err(|e| io_err("read (verify)", &setup.plan.files[fi].path, e))?;
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(Some(VerifyRead {
        off,
        len,
        numberio: piece.numberio,
        took: (clk.now() - t0).0,
        done,
    }))
}

/// Count a verify read as one of the job's reads; a short one is then the job's error.
pub(super) fn count_verify_read(
    setup: &CloneSetup<'_>,
    st: &mut ThreadStats,
    fi: usize,
    r: &VerifyRead,
) -> Result<(), WorkloadError> {
    let job = setup.job;
    let bs = r.len as u64;
    let d = &mut st.dir[READ];
    if !job.disable_clat {
        d.clat.record(r.took);
        st.lat_buckets.mark(r.took);
    }
    if !job.disable_lat {
        d.lat.record(r.took);
    }
    d.io_bytes += bs;
    d.total_ios += 1;
    st.depth_counts[0] += 1;
    st.submit_counts[1] += 1;
    st.complete_counts[1] += 1;
    if (r.done as u64) < bs {
        return Err(io_err(
            "read (verify)",
            &setup.plan.files[fi].path,
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("short read at offset {}", r.off + r.done as u64),
            ),
        ));
    }
    Ok(())
}

/// Read the piece logged at `at` of file `fi` back and verify it against its logged write
/// (fio's verify read: counted as one of the job's reads).
#[allow(clippy::too_many_arguments)]
pub(super) fn verify_block<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    buf: &mut AlignedBuf,
    st: &mut ThreadStats,
    clk: T,
    vc: &VerifyCtx,
    fi: usize,
    at: u64,
) -> Result<AfterError, WorkloadError> {
    let buf = buf.as_mut_slice();
    let Some(r) = read_logged(setup, p, buf, clk, fi, at)? else {
        return Ok(AfterError::Continue);
    };
    count_verify_read(setup, st, fi, &r)?;
    match vc.check(setup, fi, &mut buf[..r.len], r.off, Some(r.numberio)) {
        Ok(()) => Ok(AfterError::Continue),
        Err(e) => Ok(verify_failed(setup, st, &e, p.ops.has(Caps::SYNCIO))),
    }
}

/// fio's verify phase, after every pass of a write job: read every logged block back in
/// offset order (fio's io_hist_tree; random writes with a random map fio checks in issue
/// order, the same blocks) and check its headers and checksums; the reads count as the job's
/// reads, as in fio. A job stopped by its runtime (or by filling the device) is not verified,
/// as fio's is not. With verify_async=N the checks run on N threads (verify_phase_async).
pub(super) fn verify_phase<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    buf: &mut AlignedBuf,
    st: &mut ThreadStats,
    clk: T,
    vc: &VerifyCtx,
) -> Result<AfterError, WorkloadError> {
    if p.ops.has(Caps::FAKEIO) {
        return Ok(AfterError::Continue);
    }
    if setup.job.verify_async > 0 {
        return verify_phase_async(setup, p, st, clk, vc);
    }
    for fi in 0..p.files.len() {
        while let Some(piece) = p.files[fi].written.next_from(0) {
            if setup.cancel.is_cancelled() {
                return Err(WorkloadError::Cancelled);
            }
            if verify_block(setup, p, buf, st, clk, vc, fi, piece.offset)? == AfterError::End {
                return Ok(AfterError::End);
            }
        }
    }
    Ok(AfterError::Continue)
}

/// fio's path of a failed verify (EILSEQ returned by verify_io_u, in io_completed): fio's
/// verify messages are printed; a continued error is counted;
/// a fatal one ends the job with fio's verror (io_u_sync_complete or io_u_queued_complete),
/// and on a sync engine break_on_this_error then counts errno 1 (the -1 io_u_sync_complete
/// returned) if continue_on_error takes reads, as fio 3.33 does.
#[cold]
pub(super) fn verify_failed(
    setup: &CloneSetup<'_>,
    st: &mut ThreadStats,
    e: &WorkloadError,
    sync: bool,
) -> AfterError {
    use crate::fio::jobfile::ErrorClass;
    let job = setup.job;
    let message = match e {
        WorkloadError::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    };
    eprintln!("{message}");
    let errno = libc::EILSEQ;
    if job.error_continues(ErrorClass::Verify, errno) {
        st.errors.count(errno);
        return AfterError::Continue;
    }
    let site = if sync {
        ("io_u.c:2152", "io_u_sync_complete")
    } else {
        ("io_u.c:2190", "io_u_queued_complete")
    };
    st.errors.set_verror(errno, site);
    if sync && job.continues_class(ErrorClass::Read) {
        st.errors.count(1);
        if job.error_continues(ErrorClass::Read, 1) {
            return AfterError::Continue;
        }
    }
    if st.error.is_none() {
        st.error = Some(crate::fio::engine::stats::JobError {
            errno,
            verror: st.errors.verror.clone().unwrap_or_default(),
            message,
            told: true,
        });
    }
    AfterError::End
}

/// What became of the verify read numbered `seq` of a phase.
pub(super) enum Checked {
    /// Read whole and checked (the failures, if any).
    Done(VerifyRead, Result<(), Vec<verify::Failure>>),
    /// Read short: counted, then the job's error.
    Short(VerifyRead),
    /// The read failed: not counted, the job's error.
    Failed(WorkloadError),
}

/// The verify phase with verify_async=N (fio's verify_async offload threads): this thread
/// reads the logged blocks in the same order as the synchronous phase and N threads check
/// them. The outcome is the synchronous one, read for read: results are taken in read order,
/// each read is counted when its turn comes, and the first failed read or check ends the
/// phase with that error; reads issued ahead of it are not counted (fio's own offload goes on
/// reading after a failure; fsdelta keeps the counts and errors of verify_async=0).
pub(super) fn verify_phase_async<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    st: &mut ThreadStats,
    clk: T,
    vc: &VerifyCtx,
) -> Result<AfterError, WorkloadError> {
    use std::collections::BTreeMap;
    use std::sync::{Mutex, mpsc};
    let bs = setup.job.max_bs(WRITE) as usize;
    let threads = setup.job.verify_async as usize;
    let names: Vec<&str> = setup
        .plan
        .files
        .iter()
        .map(|f| f.fio_name.as_str())
        .collect();
    let v = &vc.v;
    let (work_tx, work_rx) = mpsc::channel::<Work>();
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::scope(|s| {
        // verify_async_cpus=: each checker pins itself first and says whether it could.
        let vcpus = setup.job.verify_cpumask.as_deref();
        let (pin_tx, pin_rx) = mpsc::channel::<std::io::Result<()>>();
        for _ in 0..threads {
            let (rx, tx, names, pin_tx) = (&work_rx, done_tx.clone(), &names, pin_tx.clone());
            s.spawn(move || checker(v, vcpus, rx, tx, names, pin_tx));
        }
        drop(pin_tx);
        // Each checker sends once, first: take exactly one answer from each.
        if let Some(e) = pin_rx.iter().take(threads).find_map(Result::err) {
            drop(work_tx);
            return Err(WorkloadError::InvalidOptions(format!(
                "job '{}': sched_setaffinity of a verify_async thread to CPUs {:?} failed: {e} (fio: \"verify thread affinity\"; the CPUs must be ones this process may use, see taskset -p $$)",
                setup.job.name,
                vcpus.unwrap_or_default()
            )));
        }
        drop(done_tx);
        let mut free: Vec<AlignedBuf> = (0..2 * threads)
            .map(|_| AlignedBuf::new(bs, setup.mem_align))
            .collect();
        // Reads by number, their files, and what became of them.
        let mut reads: BTreeMap<usize, (usize, VerifyRead)> = BTreeMap::new();
        let mut outcomes: BTreeMap<usize, (usize, Checked)> = BTreeMap::new();
        let (mut issued, mut committed) = (0usize, 0usize);
        let mut in_flight = 0usize;
        let mut end: Option<Result<AfterError, WorkloadError>> = None;
        // Take the outcomes that are next in read order: count, and stop at an error that
        // ends the job (a failed check continue_on_error continues on is counted, as in the
        // synchronous phase).
        let sync = p.ops.has(Caps::SYNCIO);
        let commit = |outcomes: &mut BTreeMap<usize, (usize, Checked)>,
                      committed: &mut usize,
                      st: &mut ThreadStats| {
            commit_checked(setup, vc, sync, outcomes, committed, st)
        };
        // The logged pieces in the synchronous phase's order: by file, then by offset.
        let mut fi = 0usize;
        loop {
            let piece = loop {
                if fi == p.files.len() {
                    break None;
                }
                match p.files[fi].written.next_from(0) {
                    Some(piece) => break Some(piece),
                    None => fi += 1,
                }
            };
            let Some(piece) = piece else { break };
            if setup.cancel.is_cancelled() {
                end = Some(Err(WorkloadError::Cancelled));
                break;
            }
            // Take the checks done; wait for one when every buffer is out.
            loop {
                let got = if free.is_empty() {
                    Some(done_rx.recv().expect("checkers hold the channel"))
                } else {
                    done_rx.try_recv().ok()
                };
                let Some((seq, res, buf)) = got else { break };
                in_flight -= 1;
                free.push(buf);
                let (rfi, r) = reads.remove(&seq).expect("read before checked");
                outcomes.insert(seq, (rfi, Checked::Done(r, res)));
            }
            if let Some(e) = commit(&mut outcomes, &mut committed, st) {
                end = Some(e);
                break;
            }
            let mut buf = free.pop().expect("a free buffer");
            let seq = issued;
            match read_logged(setup, p, buf.as_mut_slice(), clk, fi, piece.offset) {
                Ok(None) => free.push(buf),
                Ok(Some(r)) if r.done < r.len => {
                    issued += 1;
                    free.push(buf);
                    outcomes.insert(seq, (fi, Checked::Short(r)));
                    break;
                }
                Ok(Some(r)) => {
                    issued += 1;
                    let numberio = Some(r.numberio).filter(|_| v.check_numberio);
                    work_tx
                        .send((seq, r.off, r.len, numberio, fi, buf))
                        .expect("checkers wait for work");
                    reads.insert(seq, (fi, r));
                    in_flight += 1;
                }
                Err(e) => {
                    issued += 1;
                    free.push(buf);
                    outcomes.insert(seq, (fi, Checked::Failed(e)));
                    break;
                }
            }
        }
        drop(work_tx);
        if end.is_none() {
            // Every read issued: take the rest of the checks, in read order.
            while in_flight > 0 {
                let (seq, res, _buf) = done_rx.recv().expect("checkers hold the channel");
                in_flight -= 1;
                let (rfi, r) = reads.remove(&seq).expect("read before checked");
                outcomes.insert(seq, (rfi, Checked::Done(r, res)));
            }
            if let Some(e) = commit(&mut outcomes, &mut committed, st) {
                end = Some(e);
            }
            debug_assert!(end.is_some() || committed == issued);
        }
        end.unwrap_or(Ok(AfterError::Continue))
    })
}

/// A verify_async read handed to a checker: its number, offset, length, the numberio to
/// expect, its file and the buffer it was read into.
type Work = (usize, u64, usize, Option<u16>, usize, AlignedBuf);

/// One verify_async checker thread: pinned to verify_async_cpus= first (and says whether it
/// could), then checks the reads it takes until the work channel closes.
fn checker(
    v: &verify::Verifier,
    vcpus: Option<&[usize]>,
    rx: &std::sync::Mutex<std::sync::mpsc::Receiver<Work>>,
    tx: std::sync::mpsc::Sender<(usize, Result<(), Vec<verify::Failure>>, AlignedBuf)>,
    names: &[&str],
    pin_tx: std::sync::mpsc::Sender<std::io::Result<()>>,
) {
    let pinned = vcpus.map_or(Ok(()), crate::fio::engine::numa::set_affinity);
    let ok = pinned.is_ok();
    if pin_tx.send(pinned).is_err() || !ok {
        return;
    }
    loop {
        let next = rx.lock().map(|r| r.recv());
        let Ok(Ok((seq, off, len, numberio, fi, mut buf))) = next else {
            return;
        };
        let r = v.check(&mut buf.as_mut_slice()[..len], off, numberio, names[fi]);
        if tx.send((seq, r, buf)).is_err() {
            return;
        }
    }
}

/// verify_async's outcomes that are next in read order (from `committed` on): counted, and
/// stopped at an error that ends the job (a failed check continue_on_error continues on is
/// counted, as in the synchronous phase). Some: the phase ends with it.
fn commit_checked(
    setup: &CloneSetup<'_>,
    vc: &VerifyCtx,
    sync: bool,
    outcomes: &mut std::collections::BTreeMap<usize, (usize, Checked)>,
    committed: &mut usize,
    st: &mut ThreadStats,
) -> Option<Result<AfterError, WorkloadError>> {
    while let Some((fi, c)) = outcomes.remove(committed) {
        *committed += 1;
        match c {
            Checked::Done(r, res) => {
                if let Err(e) = count_verify_read(setup, st, fi, &r) {
                    return Some(Err(e));
                }
                if let Err(e) = vc.settle(setup, fi, res) {
                    if verify_failed(setup, st, &e, sync) == AfterError::End {
                        return Some(Ok(AfterError::End));
                    }
                }
            }
            Checked::Short(r) => {
                if let Err(e) = count_verify_read(setup, st, fi, &r) {
                    return Some(Err(e));
                }
            }
            Checked::Failed(e) => return Some(Err(e)),
        }
    }
    None
}

/// fio's do_dry_run, for verify_only on a write job: every write of the pass is planned,
/// logged for verify and counted (fio counts them as done, in no time: they take no runtime
/// and, unlike fio's, which times them from a start never set, record no latency), none is
/// issued, and no fsync either; then the pass is read back and verified as after real writes.
pub(super) fn run_dry<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    buf: &mut AlignedBuf,
    vctx: &Option<VerifyCtx>,
    st: &mut ThreadStats,
    clock: &mut Clock,
    clk: T,
) -> Result<bool, WorkloadError> {
    let job = setup.job;
    loop {
        if setup.cancel.is_cancelled() {
            return Err(WorkloadError::Cancelled);
        }
        if setup.exit.is_some_and(|e| e.terminated()) {
            return Ok(false);
        }
        let Some(io) = p.next_io() else {
            if let Some(vc) = vctx.as_ref().filter(|_| job.do_verify) {
                if verify_phase(setup, p, buf, st, clk, vc)? == AfterError::End {
                    return Ok(false);
                }
            }
            if next_pass(setup, p, clock, clk.now())? {
                continue;
            }
            return Ok(false);
        };
        let d = &mut st.dir[io.ddir];
        d.io_bytes += io.len as u64;
        d.total_ios += 1;
        st.depth_counts[0] += 1;
        st.submit_counts[1] += 1;
        st.complete_counts[1] += 1;
    }
}

/// fio's check_get_verify and get_next_verify: every verify_backlog logged writes (counted
/// when the last I/O was not a read), read back verify_backlog_batch (default
/// verify_backlog) of them, oldest first, before the next I/O; the piece to read (file,
/// offset from the region's start), or None. A round once started goes on at the next call.
/// The oldest logged piece whose write is still in flight (`in_flight`, async engines) is not
/// read yet: nothing is taken this time, as fio's IP_F_IN_FLIGHT check. A read taken uses the
/// io_size= budget (fio's keep_running counts every byte done).
pub(super) fn backlog_next(
    p: &mut Planner<'_>,
    last_ddir: usize,
    in_flight: impl Fn(usize, u64) -> bool,
) -> Option<(usize, u64)> {
    let job = p.job;
    // fio's get_next_verify: writes logged in its io_hist_list (a file with a random map)
    // are read back oldest first; without a random map they are in its io_hist_tree, sorted
    // by file and offset, and the lowest comes first.
    let at = if p.files.iter().all(|f| f.map.is_some()) {
        0
    } else {
        (0..p.backlog.len()).min_by_key(|&i| p.backlog[i])?
    };
    let &(fi, b) = p.backlog.get(at)?;
    if p.verify_batch == 0 {
        if p.backlog.len() as u64 % job.verify_backlog != 0 || last_ddir == READ {
            return None;
        }
        p.verify_batch = if job.verify_backlog_batch > 0 {
            job.verify_backlog_batch
        } else {
            job.verify_backlog
        };
    }
    if in_flight(fi, b) {
        return None;
    }
    p.backlog.remove(at);
    p.verify_batch -= 1;
    if job.io_size.is_some() {
        p.pass_issued += p.files[fi].written.get(b).map_or(0, |x| x.len);
    }
    Some((fi, b))
}

/// Take a write that failed (fill_device's ENOSPC, an error continue_on_error goes on after)
/// out of the verify log.
pub(super) fn unlog(p: &mut Planner<'_>, io: &Io) {
    let f = &mut p.files[io.file];
    if !f.written.is_enabled() {
        return;
    }
    let at = io.offset - f.base;
    f.written.take(at);
    if p.backlog
        .back()
        .is_some_and(|&(fi, bb)| fi == io.file && bb == at)
    {
        p.backlog.pop_back();
    }
}

/// The pass is over (fio's thread_main between passes): every pass (loop, or wrap of a
/// time_based job) of a write job is verified before the next starts, then the next starts.
/// Whether it did (false: the job is done, or a verify failure ended it).
pub(super) fn pass_over<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    buf: &mut AlignedBuf,
    st: &mut ThreadStats,
    clock: &mut Clock,
    vctx: &Option<VerifyCtx>,
    clk: T,
) -> Result<bool, WorkloadError> {
    let job = setup.job;
    if let Some(vc) = vctx.as_ref().filter(|_| job.do_verify && job.rw.writes()) {
        if verify_phase(setup, p, buf, st, clk, vc)? == AfterError::End {
            return Ok(false);
        }
    }
    next_pass(setup, p, clock, clk.now())
}
