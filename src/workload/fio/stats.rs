//! What one fio job clone measured, in fio's terms: per direction bytes, I/O count, runtime and
//! slat / clat / lat histograms; sync latencies; the latency distribution buckets; CPU from
//! rusage.
//!
//! Why it exists: the worker records into these in its hot loop, the orchestrator merges them
//! for group_reporting, and `report::fio` renders them; one plain set of types keeps those three
//! apart. Recording must never allocate (histograms allocate their buckets once, at creation).

use crate::probe::histogram::Histogram;

/// Read or write (fio's `DDIR_READ`, `DDIR_WRITE`).
pub const READ: usize = 0;
/// Write direction index.
pub const WRITE: usize = 1;

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
    /// Read and write.
    pub dir: [DirStats; 2],
    /// fsync / fdatasync latencies (fio's "sync" block; end_fsync is not counted).
    pub sync: Histogram,
    /// clat distribution buckets over both directions.
    pub lat_buckets: LatBuckets,
    /// CPU used after ramp_time.
    pub rusage: Rusage,
    /// fio's `total_run_time`: ms from the end of ramp_time (or start) to the end of the job.
    pub job_runtime_ms: u64,
    /// I/Os completed per iodepth level (1, 2, 4, 8, 16, 32, >=64), fio's `iodepth_level` input.
    pub depth_counts: [u64; 7],
}

impl ThreadStats {
    /// Add another clone (fio's group_reporting).
    pub fn merge(&mut self, o: &ThreadStats) {
        for d in 0..2 {
            self.dir[d].merge(&o.dir[d]);
        }
        self.sync.merge(&o.sync);
        self.lat_buckets.merge(&o.lat_buckets);
        self.rusage.add(&o.rusage);
        self.job_runtime_ms += o.job_runtime_ms;
        for (a, b) in self.depth_counts.iter_mut().zip(o.depth_counts) {
            *a += b;
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
