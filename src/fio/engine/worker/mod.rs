//! One fio job clone: the timed loop, for the synchronous engines (psync, sync, pvsync,
//! pvsync2, mmap, falloc, ftruncate, null), the queueing ones (io_uring, libaio, posixaio,
//! vsync) and the file engines (filecreate, filestat, filedelete).
//!
//! Why it exists: this is where fio's semantics become I/O. Per I/O, as fio defines them:
//! `start` is taken when the I/O is prepared, `issue` just before the system call (sync engines)
//! or just after the `io_uring_enter` / `io_submit` that submits it alone (async engines, fio's
//! default iodepth_batch_submit=1); completion is read when the call
//! returns or the completion is reaped. clat = completion - issue, lat = completion - start,
//! slat = issue - start (async engines only). Stats reset when ramp_time ends; fsync=/fdatasync=
//! latencies go to the sync stats; end_fsync runs inside the runtime but outside every latency
//! stat. A rated job (rate=, rate_iops=) asks `rate` before each I/O and, when ahead, drains
//! what is in flight and sleeps (fio's rate_ddir); a clone ended by another (exitall) stops
//! issuing, completes what is in flight and reports; io_submit_mode=offload runs in `offload`.
//! A failed I/O or verify goes fio's error path (io_failed, verify_failed): continue_on_error
//! counts the errors it continues on, any other ends the job with its stats and fio's error.
//! What it must never do: allocate, log or lock inside the loop (buffers, maps and
//! histograms are made before the clock starts; zonemode=zbd alone takes its file's zone lock
//! per I/O, as fio does, see zbd.rs; only a failed I/O prints fio's line, off the hot path;
//! write_iolog= writes its line per I/O into an 8 KiB buffer, as fio's does), or
//! keep running after a cancel request.
//!
//! Where each part lives, along fio's own seams: this module sets a clone up (CPU and NUMA
//! placement, priority, buffers, files, cmdprio) and picks the loop from the engine's entry in
//! the engine table (`super::ops`: fio's ioengine_ops), then finishes the clone; `planner` is
//! fio's get_io_u (direction, file, offset, length); `sync_loop` and `async_loop` are do_io for
//! the FIO_SYNCIO and the queueing engines, `offload` for io_submit_mode=offload, `file_ops`
//! for the file engines; `verify_io` reads back and checks (verify phase, backlog, async
//! checkers); `timing` is what happens between I/Os (ticks, windows, passes, thinktime, rate,
//! latency target); `errors` is fio's error path and text; `buffers` fills write buffers. The
//! loops ask the engine table for capabilities (`Caps`), never for an engine by name.

use self::async_loop::{run_async, uring_for};
use self::buffers::{BufferPolicy, Content};
use self::errors::io_err;
use self::file_ops::run_file_op;
use self::planner::{Io, Planner, close_file, ensure_open};
use self::sync_loop::{run_sync, sync_lat_is_clat};
use self::timing::{Clock, close_window};
use self::verify_io::{VerifyCtx, run_dry};
use super::aio::{AsyncBackend, NativeAio};
use super::clock::{ClockUse, JobClock, MAX_DRIFT_PPM, Monotonic, TimeOfDay, TimeSource, Tsc};
use super::files::ClonePlan;
use super::iolog::IoLogs;
use super::ops::{self, Caps, Op, QueueKind};
use super::rand::{self, Taus};
use super::stats::ThreadStats;
use crate::fio::jobfile::JobSpec;
use crate::workload::{CancelToken, WorkloadError};

mod async_loop;
mod buffers;
mod errors;
mod file_ops;
mod offload;
mod planner;
mod sync_loop;
mod timing;
mod verify_io;

/// A buffer aligned for O_DIRECT, made without unsafe code: an over-sized vector and an offset.
pub struct AlignedBuf {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// `len` bytes aligned to `align` (a power of two).
    pub fn new(len: usize, align: usize) -> AlignedBuf {
        let storage = vec![0u8; len + align];
        let start = storage.as_ptr().align_offset(align);
        AlignedBuf {
            storage,
            start,
            len,
        }
    }
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }
    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

/// Everything a clone needs, fixed before the clock starts.
pub struct CloneSetup<'a> {
    /// The job.
    pub job: &'a JobSpec,
    /// The clone's files.
    pub plan: ClonePlan,
    /// 1-based over all clones in file order (fio's thread_number, which seeds generators).
    pub thread_number: u64,
    /// Memory alignment of buffers.
    pub mem_align: usize,
    /// Stop request.
    pub cancel: &'a CancelToken,
    /// The flow group of the job (flow=), None without flow control.
    pub flow: Option<&'a super::pace::FlowGroup>,
    /// Where the clone publishes its progress for steady-state detection (ss_dur=).
    pub progress: Option<&'a super::steady::Progress>,
    /// Where the clone answers the --status-interval monitor's requests for its stats.
    pub status: Option<&'a super::status::Slot>,
    /// Every clone's initial write-buffer generator (fio's buf_state), by thread number - 1:
    /// dedupe_global builds its working set from them.
    pub buf_starts: &'a [Taus],
    /// The clone's end request from other clones (exitall) and its run state.
    pub exit: Option<&'a super::rate::Exit>,
    /// The run's emulated zones (zonemode=zbd), None without.
    pub zbd: Option<&'a super::zbd::Registry>,
}

/// The CPUs a clone runs on (cpumask= / cpus_allowed=): the whole set, or with
/// cpus_allowed_policy=split the one fio's fio_cpus_split picks, the set's
/// (thread_number - 1) % size-th CPU.
fn job_cpus(job: &JobSpec, thread_number: u64) -> Option<Vec<usize>> {
    let cpus = job.cpumask.as_ref()?;
    if job.cpus_split {
        let i = ((thread_number.max(1) - 1) % cpus.len() as u64) as usize;
        return Some(vec![cpus[i]]);
    }
    Some(cpus.clone())
}

/// Run one clone after layout; returns its stats.
pub fn run_clone(setup: &CloneSetup<'_>) -> Result<ThreadStats, WorkloadError> {
    // The clone's descriptors in a table of its own, as a fio job process has (the kernel's
    // cheap fdget path on every I/O); dropped last, after every file the clone opened is
    // closed. Not for posixaio: glibc's helper threads serve every thread of the process and
    // must see the descriptors in the shared table.
    let _fds = crate::os::fdtable::PrivateFdTable::enter(
        !ops::of(setup.job.ioengine).has(Caps::SHARED_FDTABLE),
    );
    // The job's clock (the TSC is calibrated here, once per process, before the clock starts);
    // the warning of a refused clocksource=cpu is the caller's to show.
    let (jc, _) = JobClock::choose(setup.job.clocksource);
    // fio's thread_main: cpumask= / cpus_allowed= first, then the NUMA placement (before the
    // buffers are allocated), then prio=/prioclass= on the job's thread before the engine
    // starts.
    if let Some(cpus) = job_cpus(setup.job, setup.thread_number) {
        super::numa::set_affinity(&cpus).map_err(|e| {
            WorkloadError::InvalidOptions(format!(
                "job '{}': sched_setaffinity to CPUs {cpus:?} failed: {e} (fio: cpu_set_affinity; the CPUs must be ones this process may use, see taskset -p $$)",
                setup.job.name
            ))
        })?;
    }
    super::numa::apply(setup.job).map_err(|e| WorkloadError::InvalidOptions(e.to_string()))?;
    // fio's backend sets prio=/prioclass= on the job's thread before the engine starts.
    if let Some(v) = setup.job.ioprio() {
        super::prio::set_thread_ioprio(v).map_err(|e| {
            WorkloadError::InvalidOptions(format!(
                "job '{}': ioprio_set(class {}, level {}) failed: {e} (the real-time class, prioclass=1, needs root or CAP_SYS_NICE; use prioclass=2 or 3)",
                setup.job.name,
                v >> 13,
                v & 7
            ))
        })?;
    }
    let mut st = match jc {
        JobClock::TimeOfDay => run_clone_on(setup, TimeOfDay),
        JobClock::Monotonic => run_clone_on(setup, Monotonic),
        JobClock::Tsc(s) => run_clone_on(setup, Tsc(s)),
    }?;
    // The end check of the calibrated clock (fio's clocksource=cpu checks it likewise).
    let drift_ppm = jc.drift_ppm();
    if drift_ppm > MAX_DRIFT_PPM {
        return Err(WorkloadError::InvalidOptions(format!(
            "the TSC clock drifted {drift_ppm:.0} ppm from CLOCK_MONOTONIC during job '{}', so \
             its latencies cannot be trusted; rerun with clocksource=clock_gettime",
            setup.job.name
        )));
    }
    st.clock = ClockUse {
        source: Some(jc.source()),
        drift_ppm,
    };
    st.finish_errors();
    Ok(st)
}

/// [`run_clone`] on the clock `clk`: every timestamp of the clone comes from it.
fn run_clone_on<T: TimeSource + Send>(
    setup: &CloneSetup<'_>,
    clk: T,
) -> Result<ThreadStats, WorkloadError> {
    let job = setup.job;
    let ops = ops::of(job.ioengine);
    if ops.has(Caps::FILEOP) {
        return run_file_op(setup, clk);
    }
    let mut p = Planner::new(setup)?;
    // Offload: one buffer per submission worker, iodepth of them whatever the engine.
    let depth = if ops.has(Caps::SYNCIO) && !job.io_submit_offload {
        1
    } else {
        job.iodepth as usize
    };
    let buf_len = job.max_bs_any() as usize;
    let mut bufs: Vec<AlignedBuf> = (0..depth)
        .map(|_| AlignedBuf::new(buf_len, setup.mem_align))
        .collect();
    let seeds = rand::job_seeds(job, setup.thread_number);
    let mut content = Content::of(setup, &seeds);
    for b in &mut bufs {
        content.fill(job, b.as_mut_slice());
    }
    content.restart();
    let mut vctx = VerifyCtx::of(setup, &seeds)?;
    let policy = BufferPolicy::of(job);
    // Files open before the clock starts (as fio's setup), up to openfiles.
    if !job.create_on_open {
        for fi in 0..p.files.len().min(p.open_limit as usize) {
            ensure_open(&mut p, setup, fi)?;
        }
    }
    let mut st = ThreadStats {
        ioprio: job.ioprio().unwrap_or(0),
        ..ThreadStats::default()
    };
    if ops.has(Caps::CMDPRIO) {
        if let Some((c, values)) = super::prio::CmdPrio::new(job, p.seeds[rand::SEED_PRIO]) {
            p.cmdprio = Some(c);
            for (d, v) in st.dir.iter_mut().zip(values) {
                d.prios = v.into_iter().map(super::stats::PrioStat::new).collect();
            }
        }
    }
    let expected_ios = if job.time_based {
        1 << 16
    } else {
        setup.plan.pass_bytes / job.rw_min_bs() * job.loops as u64
    };
    let mut logs = IoLogs::for_clone(job, setup.thread_number, expected_ios);
    let mut clock = Clock::start(setup, clk.now());
    if let Some(r) = &mut p.rate {
        r.reset(clock.started);
    }
    let mut ru0 = super::stats::Rusage::thread();
    let mut workers_ru = super::stats::Rusage::default();
    let run = Loop {
        setup,
        p: &mut p,
        bufs: &mut bufs,
        policy,
        content: &mut content,
        vctx: &mut vctx,
        st: &mut st,
        clock: &mut clock,
        ru0: &mut ru0,
        logs: &mut logs,
    };
    // Ok(true): fill_device filled the device (fio then ends the job without a verify pass).
    run.run(depth, &mut workers_ru, clk)?;
    finish_clone(setup, p, policy, st, clock, ru0, workers_ru, logs, clk)
}

/// What a clone's loop works on, made before the clock starts.
struct Loop<'s, 'a, 'p> {
    setup: &'s CloneSetup<'a>,
    p: &'s mut Planner<'p>,
    bufs: &'s mut Vec<AlignedBuf>,
    policy: BufferPolicy,
    content: &'s mut Content,
    vctx: &'s mut Option<VerifyCtx>,
    st: &'s mut ThreadStats,
    clock: &'s mut Clock,
    ru0: &'s mut super::stats::Rusage,
    logs: &'s mut IoLogs,
}

impl Loop<'_, '_, '_> {
    /// The loop the job's engine runs in (fio's do_io for its ioengine_ops): a dry verify, the
    /// offload workers, the queueing loop or the synchronous one. `depth` buffers are made;
    /// `workers_ru` gets the offload workers' CPU use.
    fn run<T: TimeSource + Send>(
        self,
        depth: usize,
        workers_ru: &mut super::stats::Rusage,
        clk: T,
    ) -> Result<bool, WorkloadError> {
        let Loop {
            setup,
            p,
            bufs,
            policy,
            content,
            vctx,
            st,
            clock,
            ru0,
            logs,
        } = self;
        let job = setup.job;
        match p.ops.op {
            // verify_only on a write job issues no write, whatever the engine: the verify
            // reads are preads, as every engine's verify phase.
            _ if job.verify_only && job.rw.writes() => {
                run_dry(setup, p, &mut bufs[0], &*vctx, st, clock, clk)
            }
            _ if job.io_submit_offload => offload::run(
                setup,
                p,
                std::mem::take(bufs),
                policy,
                content,
                st,
                clock,
                ru0,
                clk,
            )
            .map(|ru| {
                *workers_ru = ru;
                false
            }),
            Op::Queue(kind) => {
                let dir0 = setup
                    .plan
                    .files
                    .first()
                    .map(|f| f.path.clone())
                    .unwrap_or_default();
                let mut backend: Box<dyn AsyncBackend> = match kind {
                    QueueKind::Libaio => {
                        Box::new(NativeAio::new(depth).map_err(|e| io_err("io_setup", &dir0, e))?)
                    }
                    QueueKind::Posixaio => Box::new(super::posixaio::PosixAio::new(depth)),
                    QueueKind::Vsync => Box::new(super::vsync::Vsync::new(depth)),
                    QueueKind::IoUring => Box::new(uring_for(setup, p, bufs, &dir0)?),
                };
                run_async(
                    setup,
                    backend.as_mut(),
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
                )
            }
            Op::Sync(_) | Op::File(_) => run_sync(
                setup,
                p,
                &mut bufs[0],
                policy,
                content,
                vctx,
                st,
                clock,
                ru0,
                logs,
                clk,
            ),
        }
    }
}

/// The clone after its loop (fio's do_io end and thread_main's exit): lat taken from clat
/// where the sync loop did not record it, end_fsync, the runtime closed, the files closed
/// outside runtime and stats, the logs written, unlink=.
#[allow(clippy::too_many_arguments)]
fn finish_clone<T: TimeSource>(
    setup: &CloneSetup<'_>,
    mut p: Planner<'_>,
    policy: BufferPolicy,
    mut st: ThreadStats,
    clock: Clock,
    ru0: super::stats::Rusage,
    workers_ru: super::stats::Rusage,
    mut logs: IoLogs,
    clk: T,
) -> Result<ThreadStats, WorkloadError> {
    let job = setup.job;
    if p.ops.has(Caps::SYNCIO) && !job.io_submit_offload {
        // The sync loop did not record lat where it equals clat: it is clat's distribution.
        let same = sync_lat_is_clat(job, policy);
        for (d, same) in st.dir.iter_mut().zip(same) {
            if same {
                d.lat = d.clat.clone();
            }
        }
    }
    // fio's do_io: a job that ended in error skips end_fsync.
    if job.end_fsync && st.error.is_none() {
        for (fi, f) in p.files.iter().enumerate() {
            if let Some(fd) = &f.fd {
                rustix::fs::fsync(fd)
                    .map_err(|e| io_err("fsync", &setup.plan.files[fi].path, e))?;
            }
        }
    }
    if clock.ramping {
        st.forget_ramp();
    }
    let end = clk.now();
    let elapsed = end - clock.measured_from;
    close_window(job, &mut st, &clock, &ru0, end);
    st.zone_resets = p.zbd.as_ref().map_or(0, |z| z.resets);
    st.rusage.add(&workers_ru);
    // fio closes the files after the runtime is taken: outside runtime and stats.
    for fi in 0..p.files.len() {
        close_file(&mut p, setup, fi)?;
    }
    if job.verify_state_save && job.verify && job.rw.writes() {
        save_verify_state(setup, &p)?;
    }
    drop(p);
    if job.log_unix_epoch {
        logs.set_epoch_ms(clock.measured_from_unix_ms);
    }
    logs.finish(elapsed);
    logs.write()?;
    if job.unlink {
        for f in &setup.plan.files {
            std::fs::remove_file(&f.path).map_err(|e| io_err("unlink", &f.path, e))?;
        }
    }
    Ok(st)
}

/// verify_state_save=1: write fio's `local-NAME-N-verify.state` (super::vstate), synced as
/// fio's O_SYNC write.
fn save_verify_state(setup: &CloneSetup<'_>, p: &Planner<'_>) -> Result<(), WorkloadError> {
    use std::io::Write as _;
    let job = setup.job;
    let saved = super::vstate::Saved {
        depth: job.iodepth.max(1),
        numberio: p.writes_issued,
        completed: p.writes_issued,
        rings: p
            .files
            .iter()
            .map(|f| (f.last_write_comp.clone(), f.last_write_idx))
            .collect(),
    };
    let bytes = super::vstate::encode(&saved, &job.name, setup.thread_number - 1);
    let path = super::vstate::file_name(job.aux_path.as_deref(), &job.name, setup.thread_number);
    let mut f =
        std::fs::File::create(&path).map_err(|e| io_err("open (verify_state_save)", &path, e))?;
    f.write_all(&bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| io_err("write (verify_state_save)", &path, e))
}

/// The priority an asynchronous I/O goes with.
struct IoPrio {
    /// What its stats and logs say (cmdprio's, else the job's).
    prio: u32,
    /// Its index among the direction's per-priority stats.
    index: u16,
    /// What the engine puts on it: cmdprio's; io_uring the job's otherwise (its workers do
    /// not inherit the thread's); libaio and the sync engines none (0: the submitting
    /// thread's applies).
    engine: u16,
}

/// fio's engines with cmdprio: the priority of `io` (cmdprio's draw, made here, in I/O order)
/// for a job whose own priority is `job_prio`.
fn io_priority(p: &mut Planner<'_>, io: &Io, job_prio: u32) -> IoPrio {
    let chosen = p
        .cmdprio
        .as_mut()
        .and_then(|c| c.choose(io.ddir, io.len as u64));
    let (prio, index) = chosen.map_or((job_prio, 0), |c| (c.ioprio, c.index));
    let engine = match chosen {
        Some(c) => c.ioprio,
        None if p.ops.has(Caps::JOB_PRIO_PER_IO) => job_prio,
        None => 0,
    } as u16;
    IoPrio {
        prio,
        index,
        engine,
    }
}

/// fio's per-priority sample of a completed I/O: clat, or lat with lat_percentiles=1.
#[inline]
fn record_prio(d: &mut super::stats::DirStats, job: &JobSpec, index: u16, lat: u64, clat: u64) {
    if let Some(ps) = d.prios.get_mut(index as usize) {
        if job.lat_percentiles && !job.disable_lat {
            ps.lat.record(lat);
        } else if !job.lat_percentiles && !job.disable_clat {
            ps.lat.record(clat);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buffers_are_aligned() {
        for align in [512usize, 4096] {
            let mut b = AlignedBuf::new(8192, align);
            assert_eq!(b.as_slice().as_ptr() as usize % align, 0);
            assert_eq!(b.as_mut_slice().len(), 8192);
        }
    }
}

/// Runs `f` with the first clone's setup of a one-job file and its seed table (no file is
/// opened: the plan points at a directory that does not exist).
#[cfg(test)]
fn with_test_clone<R>(
    text: &str,
    f: impl FnOnce(&CloneSetup<'_>, &[u64; rand::NR_SEEDS]) -> R,
) -> R {
    let set =
        crate::fio::jobfile::parse_job_text(text, "t.fio", &crate::fio::jobfile::SystemSources)
            .unwrap();
    let job = &set.jobs[0];
    let seeds = rand::job_seeds(job, 1);
    let plan =
        super::files::plan_clone(job, 0, std::path::Path::new("/nonexistent"), &seeds).unwrap();
    let cancel = CancelToken::default();
    let setup = CloneSetup {
        job,
        plan,
        thread_number: 1,
        mem_align: 4096,
        cancel: &cancel,
        flow: None,
        progress: None,
        status: None,
        buf_starts: &[],
        exit: None,
        zbd: None,
    };
    f(&setup, &seeds)
}

#[cfg(test)]
mod cpu_tests {
    use super::job_cpus;
    use crate::fio::jobfile::JobSpec;

    /// fio's fio_cpus_split: clone k (thread_number k) gets the set's ((k - 1) % size)-th CPU.
    #[test]
    fn split_gives_each_clone_one_cpu_as_fio() {
        let mut j = JobSpec::default();
        assert_eq!(job_cpus(&j, 1), None);
        j.cpumask = Some(vec![1, 3, 5]);
        assert_eq!(job_cpus(&j, 2), Some(vec![1, 3, 5]));
        j.cpus_split = true;
        let got: Vec<_> = (1..=5).map(|t| job_cpus(&j, t).unwrap()).collect();
        assert_eq!(got, [vec![1], vec![3], vec![5], vec![1], vec![3]]);
    }
}

#[cfg(test)]
mod clock_read_tests {
    use super::*;
    use crate::fio::engine::stats::READ;
    use crate::probe::clock::Nanos;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A clock that counts its readings (1 us apart).
    #[derive(Clone, Copy)]
    struct Counted<'a>(&'a AtomicU64);

    impl TimeSource for Counted<'_> {
        fn now(&self) -> Nanos {
            Nanos((self.0.fetch_add(1, Ordering::Relaxed) + 1) * 1_000)
        }
    }

    /// Readings of the clock by a whole clone of the null engine doing 256 4 KiB reads, and
    /// the I/Os it completed.
    fn reads_of(extra: &str) -> (u64, u64) {
        let text = format!("[j]\nioengine=null\nrw=randread\nbs=4k\nsize=1m\n{extra}");
        with_test_clone(&text, |setup, _| {
            let n = AtomicU64::new(0);
            let st = run_clone_on(setup, Counted(&n)).unwrap();
            (n.load(Ordering::Relaxed), st.dir[READ].total_ios)
        })
    }

    /// fio's ramp_time_over reads the clock at every completion: a gtod_reduce job's ramp
    /// ends at the first I/O past it, not at the next cached reading. On the counting clock
    /// (1 us per reading) a 20 us ramp is over within about 20 of the 256 I/Os and the rest
    /// are counted; read only every 64 I/Os it would outlast the job, which then counts all
    /// 256 as one that ended in its ramp.
    #[test]
    fn a_gtod_reduce_ramp_ends_on_time() {
        let (reads, ios) = reads_of("gtod_reduce=1\nramp_time=20us\n");
        assert!(
            (200..256).contains(&ios),
            "{ios} I/Os counted, {reads} readings"
        );
    }

    /// The asynchronous loop: 256 reads of a 1 MiB file by libaio at iodepth 1 (one
    /// completion per batch). None where io_setup is refused.
    fn async_reads_of(extra: &str) -> Option<(u64, u64)> {
        if let Err(e) = NativeAio::new(1) {
            crate::os::skip_test(&format!("io_setup is refused here: {e}"));
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::File::create(&path)
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
        let text = format!(
            "[j]\nfilename={}\nioengine=libaio\niodepth=1\nrw=randread\nbs=4k\nsize=1m\n{extra}",
            path.display()
        );
        Some(with_test_clone(&text, |setup, _| {
            let n = AtomicU64::new(0);
            let st = run_clone_on(setup, Counted(&n)).unwrap();
            (n.load(Ordering::Relaxed), st.dir[READ].total_ios)
        }))
    }

    /// As the synchronous loop: start, issue and completion timed; with nothing measured
    /// per I/O one reading per batch of completions; with gtod_reduce=1 one per 64.
    #[test]
    fn the_async_loop_reads_the_clock_as_fios_gtod_reduce() {
        let Some((timed, ios)) = async_reads_of("") else {
            return;
        };
        assert_eq!(ios, 256);
        assert!((768..800).contains(&timed), "{timed}");
        let (once, ios) = async_reads_of(
            "disable_lat=1\ndisable_clat=1\ndisable_slat=1\ndisable_bw_measurement=1\n",
        )
        .unwrap();
        assert_eq!(ios, 256);
        assert_eq!(once - 256, timed - 768, "{once} {timed}");
        let (reduced, ios) = async_reads_of("gtod_reduce=1\n").unwrap();
        assert_eq!(ios, 256);
        assert_eq!(reduced - 4, timed - 768, "{reduced} {timed}");
        // slat alone still times every submission.
        let (slat, _) =
            async_reads_of("disable_lat=1\ndisable_clat=1\ndisable_bw_measurement=1\n").unwrap();
        assert_eq!(slat, timed);
    }

    /// A job that measures latency reads the clock around every I/O; one that measures
    /// nothing per I/O reads it once per I/O, and with gtod_reduce=1 once every 64 (fio's
    /// ts_cache).
    #[test]
    fn the_sync_loop_reads_the_clock_as_fios_gtod_reduce() {
        let (timed, ios) = reads_of("");
        assert_eq!(ios, 256);
        assert!((512..540).contains(&timed), "{timed}");
        let (once, ios) = reads_of("disable_lat=1\ndisable_clat=1\ndisable_bw_measurement=1\n");
        assert_eq!(ios, 256);
        assert!((256..284).contains(&once), "{once}");
        let (reduced, ios) = reads_of("gtod_reduce=1\n");
        assert_eq!(ios, 256);
        assert!((4..32).contains(&reduced), "{reduced}");
        // The few readings outside the loop are the same in all three.
        assert_eq!(timed - 512, once - 256);
        assert_eq!(once - 256, reduced - 4);
    }
}
