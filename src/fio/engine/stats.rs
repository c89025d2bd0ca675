//! What one fio job clone measured, in fio's terms: per direction bytes, I/O count, runtime and
//! slat / clat / lat histograms; sync latencies; the latency distribution buckets; CPU from
//! rusage.
//!
//! Why it exists: the worker records into these in its hot loop, the orchestrator merges them
//! for group_reporting, and `fio::output` renders them; one plain set of types keeps those three
//! apart. Recording must never allocate (histograms allocate their buckets once, at creation).

use crate::probe::histogram::Histogram;

/// Read or write (fio's `DDIR_READ`, `DDIR_WRITE`).
pub const READ: usize = 0;
/// Write direction index.
pub const WRITE: usize = 1;
/// Trim direction index (fio's `DDIR_TRIM`).
pub const TRIM: usize = 2;
/// Directions with statistics: read, write, trim.
pub const DIRS: usize = 3;

/// One direction's results.
#[derive(Clone, Debug, Default)]
pub struct DirStats {
    /// Bytes transferred after ramp_time.
    pub io_bytes: u64,
    /// I/Os completed after ramp_time (fio's `total_ios`).
    pub total_ios: u64,
    /// Time the job ran with I/O in this direction, in ms (fio's rounding up); 0 if no I/O.
    pub runtime_ms: u64,
    /// Submission latency (async engines only).
    pub slat: Histogram,
    /// Completion latency.
    pub clat: Histogram,
    /// Total latency (slat + clat).
    pub lat: Histogram,
    /// Bandwidth samples, KiB/s, one per 500 ms with I/O (fio's bw_avg_time default).
    pub bw_samples: RunningStat,
    /// IOPS samples, one per 500 ms with I/O (fio's iops_avg_time default).
    pub iops_samples: RunningStat,
    /// Latencies per I/O priority (fio's clat_prio): empty unless the clone gave this
    /// direction's I/Os more than one priority (cmdprio), or a reported group merged clones of
    /// different priorities.
    pub prios: Vec<PrioStat>,
}

/// One priority's latencies in a direction (fio's clat_prio_stat): clat, or lat when the job
/// has lat_percentiles=1.
#[derive(Clone, Debug, Default)]
pub struct PrioStat {
    /// The kernel's priority value (class << 13 | level).
    pub ioprio: u32,
    /// The latencies of the I/Os issued with it.
    pub lat: Histogram,
}

impl PrioStat {
    /// An empty entry for `ioprio`.
    pub fn new(ioprio: u32) -> PrioStat {
        PrioStat {
            ioprio,
            lat: Histogram::new(),
        }
    }
}

/// fio's clat_prio_stat_add_samples: `h` counted under `ioprio`, appended when new.
fn add_prio_samples(dst: &mut Vec<PrioStat>, ioprio: u32, h: &Histogram) {
    if h.count() == 0 {
        return;
    }
    match dst.iter_mut().find(|p| p.ioprio == ioprio) {
        Some(p) => p.lat.merge(h),
        None => {
            let mut p = PrioStat::new(ioprio);
            p.lat.merge(h);
            dst.push(p);
        }
    }
}

impl DirStats {
    /// Add another clone's stats (fio's sum_thread_stats: sums, and the longest runtime).
    pub fn merge(&mut self, o: &DirStats) {
        self.io_bytes += o.io_bytes;
        self.total_ios += o.total_ios;
        self.runtime_ms = self.runtime_ms.max(o.runtime_ms);
        self.slat.merge(&o.slat);
        self.clat.merge(&o.clat);
        self.lat.merge(&o.lat);
        self.bw_samples.merge(&o.bw_samples);
        self.iops_samples.merge(&o.iops_samples);
    }
}

/// Count, min, max, mean and sample standard deviation of a series, without keeping it
/// (fio's `io_stat` for bandwidth and IOPS samples: Welford's running mean and S).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunningStat {
    /// Samples.
    pub n: u64,
    /// Smallest sample.
    pub min: u64,
    /// Largest sample.
    pub max: u64,
    mean: f64,
    s: f64,
}

impl RunningStat {
    /// Add a sample (fio's add_stat).
    pub fn add(&mut self, v: u64) {
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        let f = v as f64;
        let delta = f - self.mean;
        if delta != 0.0 {
            self.mean += delta / (self.n as f64 + 1.0);
            self.s += delta * (f - self.mean);
        }
        self.n += 1;
    }
    /// Add another clone's series as fio's group_reporting does for bandwidth and IOPS
    /// (sum_stat with pure_sum): the group moved the sum of its clones' rates, so min, max,
    /// mean and S are summed, not pooled.
    pub fn merge(&mut self, o: &RunningStat) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *o;
            return;
        }
        self.min += o.min;
        self.max += o.max;
        self.n += o.n;
        self.mean += o.mean;
        self.s += o.s;
    }
    /// Mean, 0 without samples.
    pub fn mean(&self) -> f64 {
        if self.n == 0 { 0.0 } else { self.mean }
    }
    /// Sample standard deviation (fio's sqrt(S / (n - 1))), 0 with fewer than two samples.
    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        (self.s / (self.n as f64 - 1.0)).max(0.0).sqrt()
    }
}

/// Takes fio's periodic bandwidth / IOPS samples from running byte and I/O counts.
#[derive(Clone, Copy, Debug)]
pub struct Sampler {
    last: crate::probe::clock::Nanos,
    bytes: [u64; DIRS],
    ios: [u64; DIRS],
}

/// fio's default bw_avg_time / iops_avg_time.
pub const SAMPLE_INTERVAL_NS: u64 = 500_000_000;

impl Sampler {
    /// Start sampling at `now` (also after ramp_time's reset).
    pub fn new(now: crate::probe::clock::Nanos) -> Sampler {
        Sampler {
            last: now,
            bytes: [0; DIRS],
            ios: [0; DIRS],
        }
    }

    /// Take samples if an interval has passed. Cheap when it has not: one subtraction.
    #[inline]
    pub fn tick(&mut self, now: crate::probe::clock::Nanos, dirs: &mut [DirStats; DIRS]) {
        let spent_ns = (now - self.last).0;
        if spent_ns < SAMPLE_INTERVAL_NS {
            return;
        }
        let spent_ms = spent_ns / 1_000_000;
        for (i, d) in dirs.iter_mut().enumerate() {
            let db = d.io_bytes - self.bytes[i];
            let di = d.total_ios - self.ios[i];
            if db == 0 {
                continue;
            }
            d.bw_samples.add(db * 1000 / spent_ms / 1024);
            d.iops_samples.add(di * 1000 / spent_ms);
            self.bytes[i] = d.io_bytes;
            self.ios[i] = d.total_ios;
        }
        self.last = now;
    }
}

/// fio's `io_u_lat_n/u/m`: how many I/Os had a clat in each range (nanoseconds, microseconds,
/// milliseconds). Range bounds are fio's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatBuckets {
    /// < 2, 4, 10, 20, 50, 100, 250, 500, 750, 1000 ns.
    pub ns: [u64; 10],
    /// < 2, 4, 10, 20, 50, 100, 250, 500, 750, 1000 us.
    pub us: [u64; 10],
    /// < 2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000 ms, and >= 2000 ms.
    pub ms: [u64; 12],
}

/// fio's bucket bounds, shared by the three scales.
pub const LAT_BOUNDS: [u64; 11] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];

impl LatBuckets {
    /// Count one completion latency (fio's `io_u_mark_latency`).
    #[inline]
    pub fn mark(&mut self, nsec: u64) {
        #[inline]
        fn idx(v: u64, n: usize) -> usize {
            let mut i = 0;
            while i < n - 1 && v >= LAT_BOUNDS[i] {
                i += 1;
            }
            i
        }
        if nsec < 1000 {
            self.ns[idx(nsec, 10)] += 1;
        } else if nsec < 1_000_000 {
            self.us[idx(nsec / 1000, 10)] += 1;
        } else {
            self.ms[idx(nsec / 1_000_000, 12)] += 1;
        }
    }

    /// Add another set.
    pub fn merge(&mut self, o: &LatBuckets) {
        for (a, b) in self.ns.iter_mut().zip(o.ns) {
            *a += b;
        }
        for (a, b) in self.us.iter_mut().zip(o.us) {
            *a += b;
        }
        for (a, b) in self.ms.iter_mut().zip(o.ms) {
            *a += b;
        }
    }

    /// Total counted.
    pub fn total(&self) -> u64 {
        self.ns.iter().chain(&self.us).chain(&self.ms).sum()
    }
}

/// CPU and scheduling counters from getrusage(RUSAGE_THREAD).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rusage {
    /// User time, microseconds.
    pub utime_us: u64,
    /// System time, microseconds.
    pub stime_us: u64,
    /// Voluntary + involuntary context switches.
    pub ctx: u64,
    /// Major faults.
    pub majf: u64,
    /// Minor faults.
    pub minf: u64,
}

impl Rusage {
    /// This thread's usage now.
    pub fn thread() -> Rusage {
        let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage writes a full `rusage` into the pointer; RUSAGE_THREAD is valid on
        // Linux and the call cannot fail with a valid pointer.
        let ru = unsafe {
            libc::getrusage(libc::RUSAGE_THREAD, ru.as_mut_ptr());
            ru.assume_init()
        };
        let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
        Rusage {
            utime_us: us(ru.ru_utime),
            stime_us: us(ru.ru_stime),
            ctx: (ru.ru_nvcsw + ru.ru_nivcsw) as u64,
            majf: ru.ru_majflt as u64,
            minf: ru.ru_minflt as u64,
        }
    }

    /// `self - earlier`, saturating.
    pub fn since(&self, earlier: &Rusage) -> Rusage {
        Rusage {
            utime_us: self.utime_us.saturating_sub(earlier.utime_us),
            stime_us: self.stime_us.saturating_sub(earlier.stime_us),
            ctx: self.ctx.saturating_sub(earlier.ctx),
            majf: self.majf.saturating_sub(earlier.majf),
            minf: self.minf.saturating_sub(earlier.minf),
        }
    }

    /// Add another thread's usage.
    pub fn add(&mut self, o: &Rusage) {
        self.utime_us += o.utime_us;
        self.stime_us += o.stime_us;
        self.ctx += o.ctx;
        self.majf += o.majf;
        self.minf += o.minf;
    }
}

/// Everything one clone (or, merged, one reported group of clones) measured.
#[derive(Clone, Debug, Default)]
pub struct ThreadStats {
    /// Read, write and trim.
    pub dir: [DirStats; DIRS],
    /// fsync / fdatasync latencies (fio's "sync" block; end_fsync is not counted).
    pub sync: Histogram,
    /// fsync calls (fio's sync `total_ios` counts fsync, not fdatasync).
    pub fsync_ios: u64,
    /// fdatasync calls (fio 3.33 counts them in total_io_u[DDIR_DATASYNC], past the array's
    /// end, and so prints them as the read direction's short I/Os).
    pub datasync_ios: u64,
    /// clat distribution buckets over both directions.
    pub lat_buckets: LatBuckets,
    /// CPU used after ramp_time.
    pub rusage: Rusage,
    /// fio's `total_run_time`: ms from the end of ramp_time (or start) to the end of the job.
    pub job_runtime_ms: u64,
    /// I/Os completed per iodepth level (1, 2, 4, 8, 16, 32, >=64), fio's `iodepth_level` input.
    pub depth_counts: [u64; 7],
    /// Submit calls by I/Os submitted (0, 1-4, 5-8, 9-16, 17-32, 33-64, >64): fio's io_u_submit.
    pub submit_counts: [u64; 7],
    /// Reap calls by I/Os completed, same ranges: fio's io_u_complete.
    pub complete_counts: [u64; 7],
    /// Thread id of the (first) worker, fio's `pid` for a job run as a thread.
    pub tid: i32,
    /// The depth latency_target settled on (fio's latency_depth); None without the option.
    pub latency_depth: Option<u32>,
    /// The clock the latencies were read from (fsdelta's JSON `clocksource`).
    pub clock: super::clock::ClockUse,
    /// The clone's own I/O priority value (fio's td->ioprio: prio=/prioclass=, else 0).
    pub ioprio: u32,
    /// Zones reset (zonemode=zbd; fio's nr_zone_resets, shown after the write line).
    pub zone_resets: u64,
    /// Why the job ended in error while its stats stand (fio's td->error: a missed rate_min,
    /// an I/O error continue_on_error does not continue on).
    pub error: Option<JobError>,
    /// The errors continue_on_error counted, and the one the job reports.
    pub errors: ErrorCount,
}

/// A job's error that fio reports beside its stats (`err= 5 (file:..., func=..., ...)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobError {
    /// errno (fio's `error` in JSON).
    pub errno: i32,
    /// fio's td->verror: `file:FILE:LINE, func=F, error=TEXT` of the first error set, or
    /// empty when none set it (a continued error of an async engine without error_dump).
    pub verror: String,
    /// What failed, in fio's words (without the job name): for the sample's error and, unless
    /// `told`, the stderr line before fio's `fio: pid=...` one.
    pub message: String,
    /// The message was printed when the error happened (fio's io_u and verify lines), or fio
    /// prints none: the end of the run prints only the `fio: pid=...` line.
    pub told: bool,
}

impl JobError {
    /// The error `errno` fio sets at `site` (file:line, function).
    pub fn at(errno: i32, site: (&str, &str), message: String) -> JobError {
        JobError {
            errno,
            verror: verror(errno, site),
            message,
            told: false,
        }
    }
}

/// fio's td_verror text: `file:FILE:LINE, func=F, error=strerror`.
pub fn verror(errno: i32, site: (&str, &str)) -> String {
    format!(
        "file:{}, func={}, error={}",
        site.0,
        site.1,
        crate::fio::text::errno_text(errno)
    )
}

/// fio's error count (td_error.c's update_error_count) and what the job reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorCount {
    /// Errors counted (fio's total_err_count; JSON total_err).
    pub total: u64,
    /// errno of the first counted (fio's first_error); 0 when none.
    pub first: i32,
    /// fio's td->verror of the first error, set once, when no error was counted yet (see
    /// [`JobError::verror`]).
    pub verror: Option<String>,
    /// The error the job reports (JSON `error`, `err=` of the normal output) and its verror:
    /// fio's ts->error, the job's fatal error, else with continue_on_error its first error
    /// (the job then exits 0). Set by [`ThreadStats::finish_errors`].
    pub reported: Option<(i32, String)>,
}

impl ErrorCount {
    /// One more error counted (fio's update_error_count).
    pub fn count(&mut self, errno: i32) {
        self.total += 1;
        if self.total == 1 {
            self.first = errno;
        }
    }

    /// fio's __td_verror: the text is kept only for the first error of the job.
    pub fn set_verror(&mut self, errno: i32, site: (&str, &str)) {
        if self.first == 0 && self.verror.is_none() {
            self.verror = Some(verror(errno, site));
        }
    }
}

impl ThreadStats {
    /// At the end of a clone: the error it reports (fio's ts->error and ts->verror), its fatal
    /// error, else the first counted one.
    pub fn finish_errors(&mut self) {
        self.errors.reported = match &self.error {
            Some(e) => Some((e.errno, e.verror.clone())),
            None if self.errors.first != 0 => Some((
                self.errors.first,
                self.errors.verror.clone().unwrap_or_default(),
            )),
            None => None,
        };
    }

    /// Add another clone (fio's group_reporting).
    pub fn merge(&mut self, o: &ThreadStats) {
        self.zone_resets += o.zone_resets;
        for d in 0..DIRS {
            self.dir[d].merge(&o.dir[d]);
        }
        self.sync.merge(&o.sync);
        self.fsync_ios += o.fsync_ios;
        self.datasync_ios += o.datasync_ios;
        self.clock.merge(&o.clock);
        if self.tid == 0 {
            self.tid = o.tid;
        }
        if self.latency_depth.is_none() {
            self.latency_depth = o.latency_depth;
        }
        if self.error.is_none() {
            self.error = o.error.clone();
        }
        // fio's sum_thread_stats: the counts add up, first_error is the last clone's, the
        // reported error the first clone's that has one.
        self.errors.total += o.errors.total;
        self.errors.first = o.errors.first;
        if self.errors.reported.is_none() {
            self.errors.reported = o.errors.reported.clone();
        }
        self.lat_buckets.merge(&o.lat_buckets);
        self.rusage.add(&o.rusage);
        self.job_runtime_ms += o.job_runtime_ms;
        for (a, b) in self.depth_counts.iter_mut().zip(o.depth_counts) {
            *a += b;
        }
        for (a, b) in self.submit_counts.iter_mut().zip(o.submit_counts) {
            *a += b;
        }
        for (a, b) in self.complete_counts.iter_mut().zip(o.complete_counts) {
            *a += b;
        }
    }

    /// Fresh stats for a new measuring window (fio's reset_all_stats: ramp_time's end, a
    /// latency_target final run): the per-priority entries and the priority stay, emptied.
    pub fn reset(&mut self) {
        let mut fresh = ThreadStats {
            ioprio: self.ioprio,
            ..ThreadStats::default()
        };
        for (f, d) in fresh.dir.iter_mut().zip(&self.dir) {
            f.prios = d.prios.iter().map(|p| PrioStat::new(p.ioprio)).collect();
        }
        *self = fresh;
    }

    /// A job that ended inside its ramp_time: fio accounts no completion then (its
    /// should_account), so the latencies, latency buckets and bandwidth samples are empty,
    /// while the bytes, I/O counts, depths and runtime stand as counted.
    pub fn forget_ramp(&mut self) {
        for d in &mut self.dir {
            d.slat = Histogram::default();
            d.clat = Histogram::default();
            d.lat = Histogram::default();
            d.bw_samples = RunningStat::default();
            d.iops_samples = RunningStat::default();
            for p in &mut d.prios {
                *p = PrioStat::new(p.ioprio);
            }
        }
        self.sync = Histogram::default();
        self.lat_buckets = LatBuckets::default();
    }

    /// fio's sum_clat_prio_stats: add clone `src`'s per-priority latencies to a reported
    /// entry that keeps them. A clone with one priority adds its clat (lat with
    /// `src_lat_percentiles`) under its own priority; one with several adds each (copied as
    /// they are into an entry that has none yet, empty ones included, as fio's memcpy).
    pub fn add_prios(&mut self, src: &ThreadStats, src_lat_percentiles: bool) {
        for (dst, s) in self.dir.iter_mut().zip(&src.dir) {
            if s.prios.is_empty() {
                let h = if src_lat_percentiles { &s.lat } else { &s.clat };
                add_prio_samples(&mut dst.prios, src.ioprio, h);
            } else if dst.prios.is_empty() {
                dst.prios = s.prios.clone();
            } else {
                for p in &s.prios {
                    add_prio_samples(&mut dst.prios, p.ioprio, &p.lat);
                }
            }
        }
    }

    /// Index into `submit_counts` / `complete_counts` for a batch of `n` I/Os.
    #[inline]
    pub fn batch_index(n: usize) -> usize {
        match n {
            0 => 0,
            1..=4 => 1,
            5..=8 => 2,
            9..=16 => 3,
            17..=32 => 4,
            33..=64 => 5,
            _ => 6,
        }
    }

    /// Index into `depth_counts` for `depth` I/Os in flight (fio's io_u_map layout).
    #[inline]
    pub fn depth_index(depth: u32) -> usize {
        match depth {
            0 | 1 => 0,
            2..=3 => 1,
            4..=7 => 2,
            8..=15 => 3,
            16..=31 => 4,
            32..=63 => 5,
            _ => 6,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio's update_error_count, __td_verror and sum_thread_stats: the count and the first
    /// errno, the verror of the first error only, and in a group the counts summed, the last
    /// clone's first_error, the first clone's reported error.
    #[test]
    fn errors_count_and_merge_as_fios() {
        let mut a = ThreadStats::default();
        a.errors
            .set_verror(libc::ENOSPC, ("engines/sync.c:126", "xfer"));
        a.errors.count(libc::ENOSPC);
        a.errors
            .set_verror(libc::EIO, ("io_u.c:1876", "io_u error"));
        a.errors.count(libc::EIO);
        assert_eq!((a.errors.total, a.errors.first), (2, libc::ENOSPC));
        let first = "file:engines/sync.c:126, func=xfer, error=No space left on device";
        assert_eq!(a.errors.verror.as_deref(), Some(first));
        a.finish_errors();
        assert_eq!(a.errors.reported, Some((libc::ENOSPC, first.to_string())));
        // A fatal error wins over the counted ones (fio's td->error).
        let mut f = a.clone();
        f.error = Some(JobError {
            errno: libc::EIO,
            verror: first.to_string(),
            message: String::new(),
            told: true,
        });
        f.finish_errors();
        assert_eq!(f.errors.reported.as_ref().map(|r| r.0), Some(libc::EIO));
        // Nothing counted: nothing reported.
        let mut b = ThreadStats::default();
        b.finish_errors();
        assert_eq!(b.errors.reported, None);
        let mut g = a.clone();
        g.merge(&b);
        assert_eq!(g.errors.total, 2);
        assert_eq!(g.errors.first, 0);
        assert_eq!(g.errors.reported, a.errors.reported);
        let mut g = b.clone();
        g.merge(&a);
        assert_eq!((g.errors.total, g.errors.first), (2, libc::ENOSPC));
        assert_eq!(g.errors.reported, a.errors.reported);
    }

    #[test]
    fn latency_buckets_follow_fios_ranges() {
        let mut b = LatBuckets::default();
        b.mark(1); // < 2 ns
        b.mark(999); // 750..1000 ns
        b.mark(1_000); // 1 us -> "2" us bucket (< 2)
        b.mark(3_500); // 3.5 us -> "4"
        b.mark(1_500_000); // 1.5 ms -> "2" ms
        b.mark(5_000_000_000); // 5 s -> ">= 2000" ms
        assert_eq!(b.ns[0], 1);
        assert_eq!(b.ns[9], 1);
        assert_eq!(b.us[0], 1);
        assert_eq!(b.us[1], 1);
        assert_eq!(b.ms[0], 1);
        assert_eq!(b.ms[11], 1);
        assert_eq!(b.total(), 6);
    }

    #[test]
    fn merge_sums_and_keeps_the_longest_runtime() {
        let mut a = DirStats {
            io_bytes: 10,
            total_ios: 1,
            runtime_ms: 5,
            ..Default::default()
        };
        a.clat.record(100);
        let mut b = a.clone();
        b.runtime_ms = 9;
        a.merge(&b);
        assert_eq!(
            (a.io_bytes, a.total_ios, a.runtime_ms, a.clat.count()),
            (20, 2, 9, 2)
        );
    }

    #[test]
    fn running_stat_matches_a_direct_computation() {
        let mut r = RunningStat::default();
        for v in [10u64, 20, 30, 40] {
            r.add(v);
        }
        assert_eq!((r.n, r.min, r.max), (4, 10, 40));
        assert!((r.mean() - 25.0).abs() < 1e-9);
        assert!((r.stddev() - 12.909944487358056).abs() < 1e-9);
        let mut e = RunningStat::default();
        e.merge(&r);
        assert_eq!(e, r);
    }

    #[test]
    fn sampler_takes_a_sample_per_interval_with_io() {
        use crate::probe::clock::Nanos;
        let mut s = Sampler::new(Nanos(0));
        let mut dirs: [DirStats; DIRS] = Default::default();
        dirs[1].io_bytes = 1 << 20;
        dirs[1].total_ios = 256;
        s.tick(Nanos(100_000_000), &mut dirs);
        assert_eq!(dirs[1].bw_samples.n, 0);
        s.tick(Nanos(500_000_000), &mut dirs);
        assert_eq!(dirs[1].bw_samples.n, 1);
        assert_eq!(dirs[1].bw_samples.max, 2048); // 1 MiB in 0.5 s = 2048 KiB/s
        assert_eq!(dirs[1].iops_samples.max, 512);
        assert_eq!(dirs[0].bw_samples.n, 0, "no read I/O, no read sample");
    }

    #[test]
    fn prio_stats_merge_as_fios_sum_clat_prio_stats() {
        // A clone with one priority adds its clat under it; one with two adds each.
        let mut single = ThreadStats {
            ioprio: 0x6000,
            ..Default::default()
        };
        single.dir[READ].clat.record(10);
        let mut multi = ThreadStats::default();
        multi.dir[READ].prios = vec![PrioStat::new(0x4000), PrioStat::new(0x2000)];
        multi.dir[READ].prios[1].lat.record(5);
        let mut g = ThreadStats::default();
        g.add_prios(&multi, false);
        assert_eq!(g.dir[READ].prios.len(), 2, "copied, empty entry included");
        g.add_prios(&single, false);
        let got: Vec<(u32, u64)> = g.dir[READ]
            .prios
            .iter()
            .map(|p| (p.ioprio, p.lat.count()))
            .collect();
        assert_eq!(got, vec![(0x4000, 0), (0x2000, 1), (0x6000, 1)]);
        assert!(g.dir[WRITE].prios.is_empty(), "no samples, no entry");
        // A reset keeps the entries, emptied.
        g.ioprio = 7;
        g.reset();
        assert_eq!(g.ioprio, 7);
        assert_eq!(g.dir[READ].prios.len(), 3);
        assert!(g.dir[READ].prios.iter().all(|p| p.lat.count() == 0));
    }

    #[test]
    fn rusage_of_this_thread_grows_with_work() {
        let a = Rusage::thread();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = Rusage::thread();
        assert!(b.since(&a).utime_us + b.since(&a).stime_us > 0);
    }
}

#[cfg(test)]
mod running_stat_tests {
    use super::RunningStat;

    #[test]
    fn welford_matches_the_direct_formulas() {
        let mut r = RunningStat::default();
        for v in [10u64, 20, 30, 40] {
            r.add(v);
        }
        assert_eq!((r.n, r.min, r.max), (4, 10, 40));
        assert!((r.mean() - 25.0).abs() < 1e-9);
        // sample stddev of 10,20,30,40
        assert!((r.stddev() - 12.909944487358056).abs() < 1e-9);
    }

    #[test]
    fn group_merge_sums_rates_as_fio() {
        let mut a = RunningStat::default();
        let mut b = RunningStat::default();
        for v in [100u64, 200] {
            a.add(v);
        }
        for v in [300u64, 500] {
            b.add(v);
        }
        let mut g = RunningStat::default();
        g.merge(&a);
        g.merge(&b);
        assert_eq!((g.min, g.max, g.n), (400, 700, 4));
        assert!((g.mean() - 550.0).abs() < 1e-9);
    }
}
