//! The clock of a fio job's timestamps: fio's `clocksource=` (gettimeofday, clock_gettime, cpu).
//!
//! Why it exists: a 4 KiB read from the page cache takes about a microsecond, and timing it needs
//! two clock readings; with `clock_gettime` those cost several percent of the I/O rate. fio's
//! answer is `clocksource=cpu`: the TSC, calibrated against `CLOCK_MONOTONIC`, where it is
//! invariant. As fio, the default is `cpu` where the TSC is invariant and calibrates, else
//! `clock_gettime`; an explicit `clocksource=cpu` on a machine without an invariant TSC falls back
//! to `clock_gettime` with a warning (fio would use the TSC anyway and only warn). A TSC clock is
//! checked against `CLOCK_MONOTONIC` again at the end of the job: its drift is reported (JSON
//! `clocksource_drift_ppm`) and a drift above [`MAX_DRIFT_PPM`] fails the job.
//!
//! The worker's loops are generic over [`TimeSource`], so the clock is chosen once per clone
//! and costs no branch per reading. What it must never do: mix readings of two sources within a
//! job (every timestamp of a clone, ramp and runtime included, comes from one source).

use crate::probe::clock::{self, ClockSource, Nanos, TscScale};

/// The largest end-of-job distance, in ppm of the time since calibration, between the TSC clock
/// and `CLOCK_MONOTONIC` that still counts as a clock (0.1 %).
pub const MAX_DRIFT_PPM: f64 = 1_000.0;

/// A clock a timed loop reads.
pub trait TimeSource: Copy {
    /// Now, in nanoseconds (of `CLOCK_MONOTONIC` except for gettimeofday's wall clock).
    fn now(&self) -> Nanos;
}

/// `clock_gettime(CLOCK_MONOTONIC)`.
#[derive(Clone, Copy, Debug)]
pub struct Monotonic;

impl TimeSource for Monotonic {
    #[inline]
    fn now(&self) -> Nanos {
        Nanos::now()
    }
}

/// `gettimeofday`: microseconds of the wall clock, as fio's `clocksource=gettimeofday`.
#[derive(Clone, Copy, Debug)]
pub struct TimeOfDay;

impl TimeSource for TimeOfDay {
    #[inline]
    fn now(&self) -> Nanos {
        let mut tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        };
        // SAFETY: tv is a valid timeval; a null timezone is allowed.
        unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
        Nanos(tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1_000)
    }
}

/// The calibrated TSC (fio's `clocksource=cpu`).
#[derive(Clone, Copy, Debug)]
pub struct Tsc(pub TscScale);

impl TimeSource for Tsc {
    #[inline]
    fn now(&self) -> Nanos {
        #[cfg(target_arch = "x86_64")]
        {
            self.0.to_nanos(clock::rdtsc())
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Nanos::now()
        }
    }
}

/// When an I/O loop reads the clock. A job that measures latency reads it when each I/O starts
/// (and is issued) and when it completes: [`IoClock::start`] and [`IoClock::end`] are the clock.
/// A job that measures nothing per I/O (fio's `gtod_reduce(td)`: no lat, clat, slat or
/// bandwidth samples, and no log, rate or latency target that needs a timestamp) reads it only
/// at [`IoClock::end`] (after each I/O in the synchronous loop, after each batch of
/// completions in the asynchronous one), for the runtime checks, and with `gtod_reduce=1`
/// only once [`GTOD_REDUCE_EVERY`] I/Os were issued since the last reading: fio's `ts_cache`
/// (`ts_cache_mask = 63`, refreshed every 64 submissions), "about 0.4 % of the gettimeofday
/// calls", at the price of a runtime that may run that many I/Os long. While ramp_time runs
/// every `end` reads the clock (fio's `ramp_time_over` reads it at each completion). Between
/// readings the last one stands for now.
#[derive(Clone, Copy, Debug)]
pub struct IoClock {
    timed: bool,
    every: u32,
    left: u32,
    last: Nanos,
}

/// How many I/Os a `gtod_reduce=1` job does per clock reading (fio's `ts_cache_mask + 1`).
pub const GTOD_REDUCE_EVERY: u32 = 64;

impl IoClock {
    /// A loop's clock from `now`: `timed` when something is measured per I/O; untimed, it
    /// reads at an `end` after each I/O issued, or after [`GTOD_REDUCE_EVERY`] of them with
    /// `gtod_reduce`.
    pub fn new(timed: bool, gtod_reduce: bool, now: Nanos) -> IoClock {
        let every = if gtod_reduce { GTOD_REDUCE_EVERY } else { 1 };
        IoClock {
            timed,
            every,
            left: every,
            last: now,
        }
    }

    /// An I/O's start: the clock when timed, else the last reading.
    #[inline]
    pub fn start<T: TimeSource>(&self, clk: T) -> Nanos {
        if self.timed { clk.now() } else { self.last }
    }

    /// One I/O issued (counted towards the next reading when untimed).
    #[inline]
    pub fn issued(&mut self) {
        if !self.timed {
            self.left = self.left.saturating_sub(1);
        }
    }

    /// An I/O's (or a batch's) end: the clock when timed; untimed, a fresh reading once
    /// enough I/Os were issued since the last one, or whenever `fresh` (ramp_time running),
    /// else the last reading.
    #[inline]
    pub fn end<T: TimeSource>(&mut self, clk: T, fresh: bool) -> Nanos {
        if self.timed {
            return clk.now();
        }
        if self.left == 0 {
            self.left = self.every;
            self.last = clk.now();
        } else if fresh {
            self.last = clk.now();
        }
        self.last
    }
}

/// The clock a job runs on, decided before its clock starts.
#[derive(Clone, Copy, Debug)]
pub enum JobClock {
    /// gettimeofday.
    TimeOfDay,
    /// CLOCK_MONOTONIC.
    Monotonic,
    /// The calibrated TSC.
    Tsc(TscScale),
}

impl JobClock {
    /// The clock for `requested` (None: fio's default), and a warning when the request could
    /// not be honoured. Calibrates the TSC (once per process, about 25 ms) when it may be used.
    pub fn choose(requested: Option<ClockSource>) -> (JobClock, Option<String>) {
        match requested {
            Some(ClockSource::Gettimeofday) => (JobClock::TimeOfDay, None),
            Some(ClockSource::ClockGettime) => (JobClock::Monotonic, None),
            None => match clock::tsc_calibration() {
                Ok(s) => (JobClock::Tsc(s), None),
                Err(_) => (JobClock::Monotonic, None),
            },
            Some(ClockSource::Cpu) => match clock::tsc_calibration() {
                Ok(s) => (JobClock::Tsc(s), None),
                Err(why) => (
                    JobClock::Monotonic,
                    Some(format!(
                        "clocksource=cpu: {why}; using clocksource=clock_gettime"
                    )),
                ),
            },
        }
    }

    /// The source, by fio's name.
    pub fn source(&self) -> ClockSource {
        match self {
            JobClock::TimeOfDay => ClockSource::Gettimeofday,
            JobClock::Monotonic => ClockSource::ClockGettime,
            JobClock::Tsc(_) => ClockSource::Cpu,
        }
    }

    /// The end-of-job check: how far the clock is from `CLOCK_MONOTONIC` now, in ppm of the
    /// time since calibration (0 for the system clocks).
    pub fn drift_ppm(&self) -> f64 {
        match self {
            #[cfg(target_arch = "x86_64")]
            JobClock::Tsc(s) => {
                // A bracketed pair: the check measures the clocks, not the cost of reading
                // them or a preemption between the readings.
                let (t, m) = clock::tsc_mono_pair();
                clock::tsc_drift_ppm(s, t, m)
            }
            _ => 0.0,
        }
    }
}

/// Which clock a clone's latencies came from, and how far it drifted (JSON and sample facts).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ClockUse {
    /// The source read (None before a clone ran: a merge takes the first clone's).
    pub source: Option<ClockSource>,
    /// End-of-job distance from CLOCK_MONOTONIC, ppm (0 unless the TSC).
    pub drift_ppm: f64,
}

impl ClockUse {
    /// Merge another clone's (group_reporting): the largest drift; the first source.
    pub fn merge(&mut self, o: &ClockUse) {
        self.source = self.source.or(o.source);
        self.drift_ppm = self.drift_ppm.max(o.drift_ppm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::histogram::Histogram;
    use std::cell::Cell;

    /// A TSC that plays back a scripted tick sequence, converted as [`Tsc`] converts.
    #[derive(Clone, Copy)]
    struct ScriptedTsc<'a> {
        scale: TscScale,
        ticks: &'a Cell<u64>,
    }

    impl TimeSource for ScriptedTsc<'_> {
        fn now(&self) -> Nanos {
            self.scale.to_nanos(self.ticks.get())
        }
    }

    fn xorshift(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    /// fio documents its percentile error as about 1/2^(FIO_IO_U_PLAT_BITS+1) = 1/128 of the
    /// value (stat.h): a bucket is reported by its midpoint. Latencies timed by a TSC whose
    /// calibration is off by up to MAX_DRIFT_PPM (the most a job accepts) must give
    /// percentiles within that error (plus the calibration's) of the exact nanosecond
    /// durations, and within two bucket errors (1/64) of the percentiles of the same durations
    /// recorded from CLOCK_MONOTONIC. Deterministic: synthetic ticks, no timing.
    #[test]
    fn tsc_latency_percentiles_stay_within_fios_bucket_error() {
        for (ghz, skew) in [(3.0_f64, 1.0), (2.1, 1.0 + 1e-3), (3.7, 1.0 - 1e-3)] {
            // The scale as calibration would find it, off by `skew`.
            let scale = TscScale::from_pairs(
                (1_000, 5_000_000),
                (1_000 + (ghz * 1e9 * skew) as u64, 5_000_000 + 1_000_000_000),
            )
            .unwrap();
            let ticks = Cell::new(1_000_000_000u64);
            let clk = ScriptedTsc {
                scale,
                ticks: &ticks,
            };
            let (mut mono, mut tsc) = (Histogram::new(), Histogram::new());
            let mut exact = Vec::new();
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            for i in 0..200_000u64 {
                // Mostly page-cache reads (0.3-3 us), some device reads, a tail to 20 ms.
                let r = xorshift(&mut x);
                let d = match i % 100 {
                    0 => 1_000_000 + r % 19_000_000,
                    1..=9 => 20_000 + r % 200_000,
                    _ => 300 + r % 2_700,
                };
                exact.push(d);
                mono.record(d);
                // Idle time between I/Os, then the I/O itself, in ticks.
                ticks.set(ticks.get() + 1 + r % 5_000);
                let start = clk.now();
                ticks.set(ticks.get() + (d as f64 * ghz).round() as u64);
                tsc.record((clk.now() - start).0);
            }
            exact.sort_unstable();
            for p in [1.0, 5.0, 50.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.99] {
                let want = exact
                    [((p / 100.0 * exact.len() as f64).ceil() as usize - 1).min(exact.len() - 1)]
                    as f64;
                let t = tsc.percentile(p).unwrap() as f64;
                let m = mono.percentile(p).unwrap() as f64;
                let err = (t - want).abs() / want;
                assert!(
                    err <= 1.0 / 128.0 + MAX_DRIFT_PPM / 1e6 + 1e-9,
                    "{ghz} GHz skew {skew} p{p}: exact {want} tsc {t} err {err}"
                );
                let err_m = (t - m).abs() / m;
                assert!(
                    err_m <= 1.0 / 64.0,
                    "{ghz} GHz skew {skew} p{p}: monotonic {m} tsc {t} err {err_m}"
                );
            }
        }
    }

    #[test]
    fn explicit_system_clocks_are_honoured_and_named_as_fio_names_them() {
        let (c, w) = JobClock::choose(Some(ClockSource::ClockGettime));
        assert!(matches!(c, JobClock::Monotonic) && w.is_none());
        assert_eq!(c.source().fio_name(), "clock_gettime");
        assert_eq!(c.drift_ppm(), 0.0);
        let (c, _) = JobClock::choose(Some(ClockSource::Gettimeofday));
        assert_eq!(c.source(), ClockSource::Gettimeofday);
        let (a, b) = (TimeOfDay.now(), TimeOfDay.now());
        assert!(b >= a && a.0 % 1_000 == 0);
        // cpu is honoured where the TSC calibrates, else it falls back with a warning.
        let (c, w) = JobClock::choose(Some(ClockSource::Cpu));
        match clock::tsc_calibration() {
            Ok(_) => assert!(matches!(c, JobClock::Tsc(_)) && w.is_none()),
            Err(_) => assert!(matches!(c, JobClock::Monotonic) && w.is_some()),
        }
        for s in ["gettimeofday", "clock_gettime", "cpu"] {
            assert_eq!(ClockSource::from_fio_name(s).unwrap().fio_name(), s);
        }
    }

    /// A clock that counts its readings and advances 1 us per reading.
    #[derive(Clone, Copy)]
    struct Counted<'a>(&'a Cell<u64>);

    impl TimeSource for Counted<'_> {
        fn now(&self) -> Nanos {
            self.0.set(self.0.get() + 1);
            Nanos(self.0.get() * 1_000)
        }
    }

    #[test]
    fn io_clock_reads_per_io_only_what_the_job_measures() {
        let reads = Cell::new(0);
        let clk = Counted(&reads);
        // Timed: two readings per I/O, each fresh.
        let mut c = IoClock::new(true, false, Nanos(0));
        for _ in 0..100 {
            let s = c.start(clk);
            c.issued();
            assert!(c.end(clk, false) > s);
        }
        assert_eq!(reads.get(), 200);
        // Untimed: the end only, once per I/O; the start is the previous end.
        reads.set(0);
        let mut c = IoClock::new(false, false, Nanos(0));
        let mut prev = Nanos(0);
        for _ in 0..100 {
            assert_eq!(c.start(clk), prev);
            c.issued();
            prev = c.end(clk, false);
        }
        assert_eq!(reads.get(), 100);
        // An end with nothing issued since the last reading (a batch that completed I/Os
        // issued before it) reads nothing.
        assert_eq!(c.end(clk, false), prev);
        assert_eq!(reads.get(), 100);
        // gtod_reduce: once every 64 I/Os issued (fio's ts_cache_mask 63), the reading
        // standing for now in between.
        reads.set(0);
        let mut c = IoClock::new(false, true, Nanos(7));
        let ends: Vec<Nanos> = (0..640)
            .map(|_| {
                c.issued();
                c.end(clk, false)
            })
            .collect();
        assert_eq!(reads.get(), 10);
        assert!(ends[..63].iter().all(|&e| e == Nanos(7)));
        assert_eq!(ends[63], Nanos(1_000));
        assert!(ends[64..127].iter().all(|&e| e == Nanos(1_000)));
        // Counted by I/Os, not by ends: 32 I/Os per batch read the clock every 2 batches.
        reads.set(0);
        let mut c = IoClock::new(false, true, Nanos(7));
        for _ in 0..20 {
            (0..32).for_each(|_| c.issued());
            c.end(clk, false);
        }
        assert_eq!(reads.get(), 10);
        // While ramping (fresh) every end reads.
        reads.set(0);
        for _ in 0..5 {
            c.issued();
            c.end(clk, true);
        }
        assert_eq!(reads.get(), 5);
        // Timed, gtod_reduce changes nothing (a log or a rate needs every reading).
        reads.set(0);
        let mut c = IoClock::new(true, true, Nanos(0));
        for _ in 0..10 {
            c.start(clk);
            c.issued();
            c.end(clk, false);
        }
        assert_eq!(reads.get(), 20);
    }
}
