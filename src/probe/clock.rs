//! Nanosecond time from `CLOCK_MONOTONIC`, as a type.
//!
//! Why: fs_mark times with gettimeofday (microseconds, and it jumps with NTP); we read
//! `clock_gettime(CLOCK_MONOTONIC)` so that latencies are nanoseconds and never go backwards.
//! Must never allocate: it is called around every timed system call.

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
}
