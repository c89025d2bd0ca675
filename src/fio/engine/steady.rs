//! fio's steady-state detection (steadystate.c): ss=, ss_dur=, ss_ramp=.
//!
//! Why it exists: a job (or, with group_reporting, its group) stops as soon as its IOPS or
//! bandwidth has been steady for ss_dur seconds. A monitor samples every clone's progress once
//! a second (fio's helper thread does the same); the clones only publish their counters and
//! obey the stop flag. Criteria as fio 3.33: `iops`/`bw` stop when the largest deviation of the
//! window's per-second values from their mean is below the limit (a percent of the mean with
//! `%`); `iops_slope`/`bw_slope` when the least-squares slope of the window is (in percent of
//! the mean with `%`). Sampling starts one second after ss_ramp.

use crate::fio::jobfile::{SteadyKind, SteadyState};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What a clone publishes and obeys.
#[derive(Debug, Default)]
pub struct Progress {
    ios: AtomicU64,
    bytes: AtomicU64,
    stop: AtomicBool,
}

impl Progress {
    /// Publish the clone's completed I/Os and bytes (after ramp).
    #[inline]
    pub fn publish(&self, ios: u64, bytes: u64) {
        self.ios.store(ios, Ordering::Relaxed);
        self.bytes.store(bytes, Ordering::Relaxed);
    }

    /// The published totals (I/Os, bytes).
    pub fn totals(&self) -> (u64, u64) {
        (
            self.ios.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }

    /// Steady state attained: the clone is to stop.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether steady state was attained: the clone stops.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// The window of one job (or group) under watch.
#[derive(Debug)]
pub struct Window {
    ss: SteadyState,
    dur: usize,
    iops: Vec<f64>,
    bw: Vec<f64>,
    prev: (u64, u64),
}

impl Window {
    /// A window of `dur_s` one-second samples (at least 1).
    pub fn new(ss: SteadyState, dur_s: u64) -> Window {
        Window {
            ss,
            dur: dur_s.max(1) as usize,
            iops: Vec::new(),
            bw: Vec::new(),
            prev: (0, 0),
        }
    }

    /// A check during ss_ramp: only the totals are taken (fio's prev_iops/prev_bytes).
    pub fn skip(&mut self, ios: u64, bytes: u64) {
        self.prev = (ios, bytes);
    }

    /// One sample: totals now (I/Os, bytes) over `elapsed_ms` since the last; true when
    /// steady state is attained.
    pub fn sample(&mut self, ios: u64, bytes: u64, elapsed_ms: u64) -> bool {
        let ms = elapsed_ms.max(1) as f64;
        self.iops
            .push(1000.0 * ios.saturating_sub(self.prev.0) as f64 / ms);
        self.bw
            .push(1000.0 * bytes.saturating_sub(self.prev.1) as f64 / ms);
        self.prev = (ios, bytes);
        if self.iops.len() > self.dur {
            self.iops.remove(0);
            self.bw.remove(0);
        }
        if self.iops.len() < self.dur {
            return false;
        }
        let ys = match self.ss.kind {
            SteadyKind::Iops | SteadyKind::IopsSlope => &self.iops,
            SteadyKind::Bw | SteadyKind::BwSlope => &self.bw,
        };
        criterion_met(self.ss, ys)
    }
}

/// fio's steadystate_deviation / steadystate_slope over a full window.
pub fn criterion_met(ss: SteadyState, ys: &[f64]) -> bool {
    let n = ys.len() as f64;
    let mean = ys.iter().sum::<f64>() / n;
    let value = match ss.kind {
        SteadyKind::Iops | SteadyKind::Bw => {
            ys.iter().map(|y| (y - mean).abs()).fold(0.0, f64::max)
        }
        SteadyKind::IopsSlope | SteadyKind::BwSlope => {
            let sum_x: f64 = (0..ys.len()).map(|i| i as f64).sum();
            let sum_x_sq: f64 = (0..ys.len()).map(|i| (i * i) as f64).sum();
            let sum_y: f64 = ys.iter().sum();
            let sum_xy: f64 = ys.iter().enumerate().map(|(i, y)| i as f64 * y).sum();
            let den = sum_x_sq - sum_x * sum_x / n;
            if den == 0.0 {
                0.0
            } else {
                ((sum_xy - sum_x * sum_y / n) / den).abs()
            }
        }
    };
    let criterion = if ss.percent {
        if mean == 0.0 {
            return false;
        }
        100.0 * value / mean
    } else {
        value
    };
    criterion < ss.limit
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ss(kind: SteadyKind, limit: f64) -> SteadyState {
        SteadyState {
            kind,
            limit,
            percent: true,
        }
    }

    #[test]
    fn deviation_within_the_limit_is_steady() {
        let s = ss(SteadyKind::Iops, 10.0);
        assert!(criterion_met(s, &[100.0, 105.0, 95.0]));
        assert!(!criterion_met(s, &[100.0, 130.0, 70.0]));
    }

    #[test]
    fn slope_within_the_limit_is_steady() {
        let s = ss(SteadyKind::BwSlope, 1.0);
        assert!(criterion_met(s, &[1000.0, 1001.0, 1002.0]));
        assert!(!criterion_met(s, &[1000.0, 1100.0, 1200.0]));
    }

    /// The window fills before anything is judged; rates are per second of the interval.
    #[test]
    fn window_judges_only_when_full() {
        let mut w = Window::new(ss(SteadyKind::Iops, 5.0), 3);
        assert!(!w.sample(1000, 4_096_000, 1000));
        assert!(!w.sample(2000, 8_192_000, 1000));
        assert!(w.sample(3010, 12_300_000, 1000));
        assert_eq!(w.iops, vec![1000.0, 1000.0, 1010.0]);
    }
}
