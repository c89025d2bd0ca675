//! Nanosecond time from `CLOCK_MONOTONIC`, as a type.
//!
//! Why: fs_mark times with gettimeofday (microseconds, and it jumps with NTP); we read
//! `clock_gettime(CLOCK_MONOTONIC)` so that latencies are nanoseconds and never go backwards.
//! Must never allocate: it is called around every timed system call.
//!
//! [`tsc_calibration`] is the raw material of fio's `clocksource=cpu` (the fio engine's clock,
//! `fio::engine::clock`): where the TSC is invariant (`constant_tsc` and `nonstop_tsc` in
//! /proc/cpuinfo, else CPUID, x86_64) a rate calibrated once against `CLOCK_MONOTONIC`, whose
//! readings are `CLOCK_MONOTONIC` nanoseconds; [`tsc_drift_ppm`] compares the two clocks again
//! (at the end of a job) so that a drifting TSC is noticed, not trusted. A TSC reading must
//! never be compared across processes: its origin is this process's calibration.

use serde::{Deserialize, Serialize};
use std::ops::{Add, AddAssign, Sub};

/// A duration or point on the monotonic clock, in nanoseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Nanos(pub u64);

impl Nanos {
    /// Zero nanoseconds.
    pub const ZERO: Nanos = Nanos(0);

    /// Now, on `CLOCK_MONOTONIC`.
    #[inline]
    pub fn now() -> Nanos {
        let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        Nanos(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }

    /// Time elapsed since `self` (saturating at zero).
    #[inline]
    pub fn elapsed(self) -> Nanos {
        Nanos::now() - self
    }

    /// As seconds.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// As whole microseconds (truncated), the unit fs_mark reports in.
    pub fn as_micros(self) -> u64 {
        self.0 / 1_000
    }
}

/// A clock for per-I/O timestamps: fio's `clocksource=` values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClockSource {
    /// `gettimeofday` (fio's `clocksource=gettimeofday`): microseconds, wall clock.
    Gettimeofday,
    /// `clock_gettime(CLOCK_MONOTONIC)` (fio's `clocksource=clock_gettime`).
    #[default]
    ClockGettime,
    /// Calibrated `rdtsc` (fio's `clocksource=cpu`).
    Cpu,
}

impl ClockSource {
    /// fio's name for this clock source.
    pub fn fio_name(self) -> &'static str {
        match self {
            ClockSource::Gettimeofday => "gettimeofday",
            ClockSource::ClockGettime => "clock_gettime",
            ClockSource::Cpu => "cpu",
        }
    }

    /// The source fio names `name`.
    pub fn from_fio_name(name: &str) -> Option<ClockSource> {
        [
            ClockSource::Gettimeofday,
            ClockSource::ClockGettime,
            ClockSource::Cpu,
        ]
        .into_iter()
        .find(|c| c.fio_name() == name)
    }
}

/// Fixed-point shift of [`TscScale::mult`].
const TSC_SHIFT: u32 = 32;

/// A TSC calibration: `ns = mono0 + ((tsc - tsc0) * mult) >> TSC_SHIFT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TscScale {
    /// TSC reading at the calibration origin.
    pub tsc0: u64,
    /// CLOCK_MONOTONIC nanoseconds at the calibration origin.
    pub mono0: u64,
    /// Nanoseconds per tick, shifted left by 32.
    pub mult: u64,
}

impl TscScale {
    /// The scale from two simultaneous (tsc, monotonic ns) pairs; `None` if they do not advance.
    pub fn from_pairs(a: (u64, u64), b: (u64, u64)) -> Option<TscScale> {
        let dt = b.0.checked_sub(a.0).filter(|d| *d > 0)?;
        let dn = b.1.checked_sub(a.1).filter(|d| *d > 0)?;
        let mult = ((dn as u128) << TSC_SHIFT) / dt as u128;
        Some(TscScale {
            tsc0: a.0,
            mono0: a.1,
            mult: u64::try_from(mult).ok()?,
        })
    }

    /// The monotonic nanoseconds of a TSC reading.
    #[inline]
    pub fn to_nanos(&self, tsc: u64) -> Nanos {
        let d = tsc.wrapping_sub(self.tsc0) as u128;
        Nanos(self.mono0 + ((d * self.mult as u128) >> TSC_SHIFT) as u64)
    }
}

/// Whether /proc/cpuinfo text says the TSC is invariant (rate constant, not stopped in idle).
pub fn tsc_invariant(cpuinfo: &str) -> bool {
    cpuinfo.lines().filter(|l| l.starts_with("flags")).all(|l| {
        let mut f = l.split_whitespace();
        let flags: Vec<&str> = f.by_ref().collect();
        flags.contains(&"constant_tsc") && flags.contains(&"nonstop_tsc")
    }) && cpuinfo.lines().any(|l| l.starts_with("flags"))
}

/// Whether CPUID says the TSC is invariant (leaf 0x8000_0007, EDX bit 8): the source fio reads.
#[cfg(target_arch = "x86_64")]
pub fn cpuid_invariant_tsc() -> bool {
    let max = core::arch::x86_64::__cpuid(0x8000_0000).eax;
    max >= 0x8000_0007 && core::arch::x86_64::__cpuid(0x8000_0007).edx & (1 << 8) != 0
}

/// The TSC now.
#[cfg(target_arch = "x86_64")]
#[inline]
pub fn rdtsc() -> u64 {
    // SAFETY: rdtsc has no memory effects; every x86_64 CPU implements it.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// A simultaneous (TSC, `CLOCK_MONOTONIC` ns) pair: the monotonic reading bracketed by two TSC
/// readings, the tightest of a few tries, so that a preemption between the readings (a loaded
/// machine) does not pass for a clock difference. The TSC value is the bracket's midpoint.
#[cfg(target_arch = "x86_64")]
pub fn tsc_mono_pair() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..16 {
        let a = rdtsc();
        let m = Nanos::now().0;
        let b = rdtsc();
        let width = b.wrapping_sub(a);
        if width < best.0 {
            best = (width, a + width / 2, m);
        }
    }
    (best.1, best.2)
}

#[cfg(target_arch = "x86_64")]
fn calibrate() -> Result<TscScale, String> {
    // The kernel's view first (it drops constant_tsc/nonstop_tsc when it found the TSC
    // unreliable); CPUID where /proc/cpuinfo cannot be read.
    let invariant = match std::fs::read_to_string("/proc/cpuinfo") {
        Ok(info) => tsc_invariant(&info),
        Err(_) => cpuid_invariant_tsc(),
    };
    if !invariant {
        return Err(
            "the TSC is not invariant (no constant_tsc and nonstop_tsc in /proc/cpuinfo)".into(),
        );
    }
    let a = tsc_mono_pair();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let b = tsc_mono_pair();
    let scale = TscScale::from_pairs(a, b).ok_or("the TSC does not advance")?;
    // A second short check: the scale must predict the monotonic clock within 0.1 %.
    std::thread::sleep(std::time::Duration::from_millis(5));
    let (t, m) = tsc_mono_pair();
    let err = (scale.to_nanos(t).0 as i128 - m as i128).unsigned_abs();
    if err * 1000 > (m - a.1) as u128 {
        return Err(format!(
            "the calibrated TSC missed CLOCK_MONOTONIC by {err} ns over {} ns",
            m - a.1
        ));
    }
    Ok(scale)
}

#[cfg(not(target_arch = "x86_64"))]
fn calibrate() -> Result<TscScale, String> {
    Err("no TSC clock on this architecture".into())
}

static TSC: std::sync::OnceLock<Result<TscScale, String>> = std::sync::OnceLock::new();

/// The TSC calibrated against `CLOCK_MONOTONIC` (about 25 ms, once per process), or why it
/// cannot be used as a clock. Call it before a timed phase so that the calibration is not
/// inside the measurement.
pub fn tsc_calibration() -> Result<TscScale, &'static str> {
    match TSC.get_or_init(calibrate) {
        Ok(s) => Ok(*s),
        Err(e) => Err(e.as_str()),
    }
}

/// How far a calibrated TSC reading `tsc` taken together with the monotonic reading `mono` is
/// from it, in parts per million of the time since calibration (fio's end-of-run check).
pub fn tsc_drift_ppm(scale: &TscScale, tsc: u64, mono: u64) -> f64 {
    if mono <= scale.mono0 {
        return 0.0;
    }
    let err = (scale.to_nanos(tsc).0 as i128 - mono as i128).unsigned_abs();
    err as f64 * 1e6 / (mono - scale.mono0) as f64
}

impl Sub for Nanos {
    type Output = Nanos;
    #[inline]
    fn sub(self, rhs: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(rhs.0))
    }
}

impl Add for Nanos {
    type Output = Nanos;
    #[inline]
    fn add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0 + rhs.0)
    }
}

impl AddAssign for Nanos {
    #[inline]
    fn add_assign(&mut self, rhs: Nanos) {
        self.0 += rhs.0;
    }
}

impl From<std::time::Duration> for Nanos {
    fn from(d: std::time::Duration) -> Self {
        Nanos(d.as_nanos() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clock_does_not_go_backwards() {
        let a = Nanos::now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = Nanos::now();
        assert!(b > a);
        assert!((b - a).0 >= 2_000_000);
        assert_eq!((a - b), Nanos::ZERO);
    }

    #[test]
    fn invariant_tsc_needs_both_flags_on_every_cpu() {
        let both = "flags\t: fpu tsc constant_tsc nonstop_tsc\n";
        assert!(tsc_invariant(&format!("{both}{both}")));
        assert!(!tsc_invariant("flags\t: fpu constant_tsc\n"));
        assert!(!tsc_invariant(&format!("{both}flags\t: fpu nonstop_tsc\n")));
        assert!(!tsc_invariant("processor : 0\n"));
    }

    #[test]
    fn tsc_scale_converts_ticks_to_nanoseconds() {
        // 2.5 GHz: 2.5 ticks per ns; one second of ticks after the origin.
        let s = TscScale::from_pairs((1_000, 7_000), (2_500_001_000, 1_000_007_000)).unwrap();
        assert_eq!(s.to_nanos(1_000), Nanos(7_000));
        let ns = s.to_nanos(1_000 + 2_500_000_000).0;
        assert!(ns.abs_diff(1_000_007_000) <= 1, "{ns}");
        assert_eq!(TscScale::from_pairs((5, 5), (5, 9)), None);
    }

    /// fio's documented percentile error: 64 buckets per power of two, each reported by its
    /// midpoint (within 1/128 of the true value), so the same durations seen by two clocks may
    /// land one bucket apart: at most 1/64. Latencies read through a TSC scale that
    /// is off by 500 ppm (ten times what calibration accepts) must give percentiles within
    /// that error of the exact CLOCK_MONOTONIC durations. Fed known durations, not timings.
    #[test]
    fn tsc_percentiles_within_fio_bucket_error_of_monotonic() {
        use crate::probe::histogram::Histogram;
        let ghz = 3.0_f64;
        let skew = 1.0005;
        let s = TscScale::from_pairs((0, 0), ((ghz * 1e9 * skew) as u64, 1_000_000_000)).unwrap();
        let (mut mono, mut tsc) = (Histogram::new(), Histogram::new());
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut t_tsc = 1_000_000u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let d = 200 + x % 2_000_000; // 200 ns to 2 ms
            mono.record(d);
            let start = s.to_nanos(t_tsc);
            t_tsc += (d as f64 * ghz) as u64;
            tsc.record((s.to_nanos(t_tsc) - start).0);
        }
        for p in [1.0, 50.0, 90.0, 99.0, 99.9, 99.99] {
            let (a, b) = (mono.percentile(p).unwrap(), tsc.percentile(p).unwrap());
            let err = a.abs_diff(b) as f64 / a as f64;
            assert!(err <= 1.0 / 64.0, "p{p}: monotonic {a} tsc {b} err {err}");
        }
    }
}
