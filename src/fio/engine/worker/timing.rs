//! What happens between I/Os, on the clone's clock: ramp and measured windows, ticks, passes,
//! thinktime, rate sleeps and the latency target (latency_target / max_latency).
//!
//! Why it exists: the sync, async and offload loops share these steps. What it must never do:
//! read the clock more often than fio's gtod_reduce rules allow, or allocate.

use super::CloneSetup;
use super::buffers::BufferPolicy;
use super::errors::ddir_name;
use super::planner::{Io, Planner, close_file};
use super::sync_loop::sync_lat_is_clat;
use crate::fio::engine::clock::{ClockUse, JobClock, TimeSource};
use crate::fio::engine::files::{self};
use crate::fio::engine::iolog::IoLogs;
use crate::fio::engine::ops::{self, Caps};
use crate::fio::engine::stats::{ThreadStats, WRITE};
use crate::fio::jobfile::JobSpec;
use crate::probe::clock::Nanos;
use crate::workload::WorkloadError;

/// Timing phase of a clone: ramp, then measured.
/// The Unix time in milliseconds (CLOCK_REALTIME, as fio's set_epoch_time).
pub(super) fn unix_ms_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub(super) struct Clock {
    pub(super) sampler: crate::fio::engine::stats::Sampler,
    pub(super) started: Nanos,
    pub(super) measured_from: Nanos,
    /// The Unix time (ms) when measured_from was last set (fio's alternate_epoch, reset
    /// with td->epoch), for log_unix_epoch.
    pub(super) measured_from_unix_ms: u64,
    pub(super) ramping: bool,
    pub(super) ramp: u64,
    pub(super) runtime: Option<u64>,
}

impl Clock {
    /// The clone's clock, started at `now`: the clone is in its ramp_time (not yet running
    /// for exit_what=stonewall), or running.
    pub(super) fn start(setup: &CloneSetup<'_>, now: Nanos) -> Clock {
        let clock = Clock::new(setup.job, now);
        if let Some(e) = setup.exit {
            e.set_phase(if clock.ramping {
                crate::fio::engine::status::Phase::Ramp
            } else {
                crate::fio::engine::status::Phase::Running
            });
        }
        clock
    }

    pub(super) fn new(job: &JobSpec, now: Nanos) -> Clock {
        Clock {
            sampler: crate::fio::engine::stats::Sampler::new(now),
            started: now,
            measured_from: now,
            measured_from_unix_ms: unix_ms_now(),
            ramping: !job.ramp_time.is_zero(),
            ramp: job.ramp_time.as_nanos() as u64,
            runtime: job.runtime.map(|d| d.as_nanos() as u64),
        }
    }

    /// Whether ramp_time ended at `now` (the caller opens a new window then: [`fresh_window`]).
    #[inline]
    pub(super) fn ramp_ends(&mut self, now: Nanos) -> bool {
        if self.ramping && (now - self.started).0 >= self.ramp {
            self.ramping = false;
            return true;
        }
        false
    }

    /// Measure from `now`: the runtime, the bandwidth samples and log_unix_epoch's epoch.
    pub(super) fn measure_from(&mut self, now: Nanos) {
        self.measured_from = now;
        self.measured_from_unix_ms = unix_ms_now();
        self.sampler = crate::fio::engine::stats::Sampler::new(now);
    }

    #[inline]
    pub(super) fn out_of_time(&self, now: Nanos) -> bool {
        !self.ramping
            && self
                .runtime
                .is_some_and(|r| (now - self.measured_from).0 >= r)
    }
}

/// What the loop does after an I/O or a check: go on, or stop.
#[inline]
pub(super) fn after_tick<T: TimeSource>(
    p: &mut Planner<'_>,
    st: &mut ThreadStats,
    clock: &mut Clock,
    ru0: &mut crate::fio::engine::stats::Rusage,
    now: Nanos,
    clk: T,
) -> bool {
    let (job, status, exit) = (p.job, p.status, p.exit);
    tick(job, status, exit, st, clock, ru0, now, clk, || {
        p.ramp_reset();
        if let Some(r) = &mut p.rate {
            r.reset(now);
        }
    });
    if let Some(pr) = p.progress {
        pr.publish(
            st.dir.iter().map(|d| d.total_ios).sum::<u64>(),
            st.dir.iter().map(|d| d.io_bytes).sum::<u64>(),
        );
        if pr.stopped() {
            return false;
        }
    }
    !clock.out_of_time(now)
}

/// The block loops' clock (fio's gtod_reduce(td) and fio_fill_issue_time): untimed when
/// nothing is measured per I/O (lat, clat, bandwidth, and slat where the loop records it)
/// and no log, latency target or rate needs a timestamp; then read at completions only,
/// once per 64 I/Os with gtod_reduce=1 (its ts_cache).
pub(super) fn io_clock(
    job: &JobSpec,
    logs: &IoLogs,
    p: &Planner<'_>,
    latency_target: bool,
    records_slat: bool,
    now: Nanos,
) -> crate::fio::engine::clock::IoClock {
    let measured = !(job.disable_lat
        && job.disable_clat
        && job.disable_bw
        && (job.disable_slat || !records_slat));
    let timed = measured || logs.active() || latency_target || p.rate.is_some();
    crate::fio::engine::clock::IoClock::new(timed, job.gtod_reduce, now)
}

/// The bookkeeping after every I/O that the block loops and the file-engine loop share: the
/// end of ramp_time (a fresh window; `on_ramp_end` resets the loop's own state, and the clone
/// counts as running for exit_what=stonewall and the status board), a bandwidth sample, a
/// status report that was asked for (at a fresh reading of `clk`: `now` may be a gtod_reduce
/// job's last reading).
#[allow(clippy::too_many_arguments)]
#[inline]
pub(super) fn tick<T: TimeSource>(
    job: &JobSpec,
    status: Option<&crate::fio::engine::status::Slot>,
    exit: Option<&crate::fio::engine::rate::Exit>,
    st: &mut ThreadStats,
    clock: &mut Clock,
    ru0: &mut crate::fio::engine::stats::Rusage,
    now: Nanos,
    clk: T,
    on_ramp_end: impl FnOnce(),
) {
    if clock.ramp_ends(now) {
        fresh_window(st, ru0, clock, now);
        on_ramp_end();
        if let Some(s) = status {
            s.ramp_ended();
        }
        if let Some(e) = exit {
            e.set_phase(crate::fio::engine::status::Phase::Running);
        }
    }
    if !job.disable_bw {
        clock.sampler.tick(now, &mut st.dir);
    }
    if let Some(slot) = status.filter(|s| s.wanted()) {
        slot.answer(running_stats(job, st, clock, ru0, clk.now()), Nanos::now());
    }
}

/// A new measuring window from `now` (fio's reset_all_stats: ramp_time's end, a
/// latency_target's final run): fresh stats and CPU counts, the clock measuring from `now`.
#[cold]
pub(super) fn fresh_window(
    st: &mut ThreadStats,
    ru0: &mut crate::fio::engine::stats::Rusage,
    clock: &mut Clock,
    now: Nanos,
) {
    st.reset();
    *ru0 = crate::fio::engine::stats::Rusage::thread();
    clock.measure_from(now);
}

/// Close the measuring window at `now` (at the end, or for a status report): each direction
/// that did something has run for the window, the job for the window, the CPU counts since
/// `ru0`, and the thread's id.
pub(super) fn close_window(
    job: &JobSpec,
    st: &mut ThreadStats,
    clock: &Clock,
    ru0: &crate::fio::engine::stats::Rusage,
    now: Nanos,
) {
    let elapsed = now - clock.measured_from;
    let file_op = ops::of(job.ioengine).has(Caps::FILEOP);
    for (ddir, d) in st.dir.iter_mut().enumerate() {
        // A file engine's "I/O" may move no bytes: it counts by operations. fio's
        // update_runtime: verify_only's writes, never issued, take no time.
        let ran = if file_op {
            d.total_ios > 0
        } else {
            d.io_bytes > 0 && !(ddir == WRITE && job.verify_only)
        };
        if ran {
            d.runtime_ms = elapsed.0.div_ceil(1_000_000);
        }
    }
    st.job_runtime_ms = elapsed.0 / 1_000_000;
    st.rusage = crate::fio::engine::stats::Rusage::thread().since(ru0);
    // SAFETY: gettid(2) takes no arguments and cannot fail.
    st.tid = unsafe { libc::gettid() };
}

/// The clone's stats as `--status-interval` reports them at `now` (fio's
/// `__show_running_run_stats`): every direction that moved bytes has run until now, the CPU
/// counts until now, and the sync loop's lat is its clat (as at the end).
#[cold]
pub(super) fn running_stats(
    job: &JobSpec,
    st: &ThreadStats,
    clock: &Clock,
    ru0: &crate::fio::engine::stats::Rusage,
    now: Nanos,
) -> ThreadStats {
    let mut snap = st.clone();
    let ops = ops::of(job.ioengine);
    if ops.has(Caps::SYNCIO) && !job.io_submit_offload && !ops.has(Caps::FILEOP) {
        let same = sync_lat_is_clat(job, BufferPolicy::of(job));
        for (d, same) in snap.dir.iter_mut().zip(same) {
            if same {
                d.lat = d.clat.clone();
            }
        }
    }
    close_window(job, &mut snap, clock, ru0, now);
    // The job's clock (chosen, and the TSC calibrated, before the clone started: this only
    // reads the decision) and its drift so far.
    let (jc, _) = JobClock::choose(job.clocksource);
    snap.clock = ClockUse {
        source: Some(jc.source()),
        drift_ppm: jc.drift_ppm(),
    };
    // A report while the job runs shows its error as the final one does.
    snap.finish_errors();
    snap
}

/// Whether another pass should start after one ended. A new pass drops the files' cached
/// pages again when invalidate=1 (fio reopens the files of a new loop, and invalidates a
/// time_based job's file when it wraps).
pub(super) fn next_pass(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    clock: &Clock,
    now: Nanos,
) -> Result<bool, WorkloadError> {
    let more = next_pass_counted(p, clock, now);
    if more && !setup.job.time_based {
        if let Some(r) = &mut p.rate {
            r.new_loop(now, setup.job.randrepeat);
        }
    }
    if more && setup.job.unlink_each_loop && !setup.job.time_based {
        // fio's thread_main: clear_io_state closes the files, unlink_all_files deletes the
        // regular ones; the next loop's open creates them.
        for fi in 0..p.files.len() {
            close_file(p, setup, fi)?;
            let path = &setup.plan.files[fi].path;
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
                std::fs::remove_file(path)
                    .map_err(|e| WorkloadError::io("unlink (unlink_each_loop)", path.clone(), e))?;
            }
        }
    }
    if more && setup.job.invalidate && !setup.job.direct {
        for (fi, f) in p.files.iter().enumerate() {
            if let Some(fd) = &f.fd {
                files::invalidate(fd, &setup.plan.files[fi].path)?;
            }
        }
    }
    Ok(more)
}

pub(super) fn next_pass_counted(p: &mut Planner<'_>, clock: &Clock, now: Nanos) -> bool {
    let job = p.job;
    if job.time_based {
        // A pass that found nothing to do (zonemode=zbd reads of empty zones) comes round
        // again at once, as fio's does, until the runtime is over.
        let idle = p.pass_ios == 0;
        p.wrap();
        let over = clock.out_of_time(now)
            || clock
                .runtime
                .is_some_and(|r| (now - clock.started).0 >= clock.ramp + r);
        return !(idle && over);
    }
    // A pass made during ramp_time counts as one of the job's loops, as fio's keep_running
    // counts it: a size-based job that ends inside its ramp ends there, with no latencies
    // (`forget_ramp`).
    p.passes += 1;
    // A merged pass (the bytes of every loop) that found its files done first goes on in a
    // new loop with the bytes left, as fio's cumulative io_issue_bytes limit does.
    let merged_left = p.merged_loops && p.pass_issued < p.pass_bytes;
    let more = p.passes < job.loops && (!p.merged_loops || merged_left);
    if more {
        let carried = p.pass_issued;
        p.new_loop();
        if merged_left {
            p.pass_issued = carried;
        }
    }
    more
}

/// fio's thinktime: after every `thinktime_blocks` I/Os, spin `thinktime_spin`, then sleep the
/// rest of `thinktime`.
#[inline(always)]
pub(super) fn think(job: &JobSpec, issued: u64) -> u64 {
    if job.thinktime.is_zero() {
        return 0;
    }
    think_some(job, issued)
}

/// [`think`] of a job with a thinktime, out of the I/O loop.
#[inline(never)]
pub(super) fn think_some(job: &JobSpec, issued: u64) -> u64 {
    if issued % job.thinktime_blocks.max(1) as u64 != 0 {
        return 0;
    }
    let t0 = Nanos::now();
    let spin = job.thinktime_spin.min(job.thinktime);
    if !spin.is_zero() {
        let until = Nanos::now() + Nanos::from(spin);
        while Nanos::now() < until {
            std::hint::spin_loop();
        }
    }
    let rest = job.thinktime - spin;
    if !rest.is_zero() {
        std::thread::sleep(rest);
    }
    (Nanos::now() - t0).0 / 1000
}

/// A rated job's wait before its next I/O (fio's rate_ddir sleep): never past the runtime,
/// cut short by an end request. False when the job must end instead of issuing (out of
/// runtime, ended by another job, or cancelled).
pub(super) fn rate_sleep<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &Planner<'_>,
    clock: &Clock,
    us: u64,
    clk: T,
) -> bool {
    let Some(r) = p.rate.as_ref() else {
        return true;
    };
    let limit = if clock.ramping {
        None
    } else {
        clock.runtime.map(|ns| ns / 1000)
    };
    let now = r.now_us(clk.now());
    let mut us = us;
    if let Some(t) = limit {
        if now + us > t {
            if now > t {
                return false;
            }
            us = t - now;
        }
    }
    let stop = || setup.cancel.is_cancelled() || setup.exit.is_some_and(|e| e.terminated());
    crate::fio::engine::rate::sleep_us(us, &stop);
    let now = r.now_us(clk.now());
    !(limit.is_some_and(|t| now > t) || stop())
}

/// After an I/O of a job with rate_min / rate_iops_min (not while ramping): fio's
/// check_min_rate. True when the job missed its minimum: it ends (after what is in flight) with
/// fio's error, EIO from check_min_rate, beside its stats.
pub(super) fn check_min_rate(
    p: &mut Planner<'_>,
    st: &mut ThreadStats,
    clock: &Clock,
    now: Nanos,
) -> bool {
    if clock.ramping {
        return false;
    }
    let Some(r) = p.rate.as_mut() else {
        return false;
    };
    let bytes = st.dir.each_ref().map(|d| d.io_bytes);
    let blocks = st.dir.each_ref().map(|d| d.total_ios);
    match r.check_min(now, bytes, blocks) {
        Ok(()) => false,
        Err(message) => {
            st.error = Some(crate::fio::engine::stats::JobError::at(
                libc::EIO,
                ("backend.c:1131", "check_min_rate"),
                message,
            ));
            true
        }
    }
}

/// fio's lat_fatal: latency_target missed at depth 1 with latency_percentile=100.
/// max_latency= (fio's lat_fatal from account_io_completion): an I/O whose latency `lat_ns`
/// exceeds its direction's maximum ends the job with ETIMEDOUT beside its stats (the I/O is
/// counted), after fio's stderr line naming it. True when the job must end.
#[inline]
pub(super) fn max_latency_exceeded(
    setup: &CloneSetup<'_>,
    st: &mut ThreadStats,
    io: &Io,
    lat_ns: u64,
) -> bool {
    let max = setup.job.max_latency[io.ddir];
    if max == 0 || lat_ns <= max || !setup.job.stats {
        return false;
    }
    max_latency_fatal(setup, st, io, lat_ns, max);
    true
}

#[cold]
pub(super) fn max_latency_fatal(
    setup: &CloneSetup<'_>,
    st: &mut ThreadStats,
    io: &Io,
    lat_ns: u64,
    max: u64,
) {
    if st.error.is_some() {
        return;
    }
    let message = format!(
        "fio: latency of {lat_ns} nsec exceeds specified max ({max} nsec): {} {} {} {}",
        setup.plan.files[io.file].fio_name,
        ddir_name(io.ddir),
        io.offset,
        io.len
    );
    eprintln!("{message}");
    let mut e = crate::fio::engine::stats::JobError::at(
        libc::ETIMEDOUT,
        ("io_u.c:1432", "max latency exceeded"),
        message,
    );
    e.told = true;
    st.error = Some(e);
}

pub(super) fn latency_fatal(setup: &CloneSetup<'_>, max_ns: u64) -> WorkloadError {
    WorkloadError::InvalidOptions(format!(
        "job '{}': an I/O's latency exceeded latency_target ({} usec) at depth 1 (fio's lat_fatal; lower the target or the latency_percentile)",
        setup.job.name,
        max_ns / 1000
    ))
}

/// After an I/O of a latency_target job (not while ramping): judge the window; true when the
/// job is done. The final window starts with fresh stats, as fio's reset_all_stats.
pub(super) fn latency_step(
    l: &mut crate::fio::engine::pace::LatencyTarget,
    p: &mut Planner<'_>,
    st: &mut ThreadStats,
    clock: &mut Clock,
    ru0: &mut crate::fio::engine::stats::Rusage,
    now: Nanos,
) -> bool {
    st.latency_depth = Some(l.depth() as u32);
    if clock.ramping {
        return false;
    }
    let ios = st.dir.iter().map(|d| d.total_ios).sum::<u64>();
    let done = match l.check(now.0, ios) {
        crate::fio::engine::pace::LatencyStep::Continue => false,
        crate::fio::engine::pace::LatencyStep::FinalRun => {
            fresh_window(st, ru0, clock, now);
            p.ramp_reset();
            false
        }
        crate::fio::engine::pace::LatencyStep::Done => true,
    };
    st.latency_depth = Some(l.depth() as u32);
    done
}
