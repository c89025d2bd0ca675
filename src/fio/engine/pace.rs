//! Pacing of a clone's I/O against the other clones: fio's flow control (flow.c).
//!
//! Why a module of its own: the run loops only ask "may the next I/O go?"; the shared
//! counters and the arithmetic that answers stay here, away from the loops' clock readings.
//!
//! Flow control (fio 3.33): every clone of a job with `flow=W` belongs to the group
//! `flow_id`; the group counts the I/Os its members issued (starting at 1) and sums their
//! weights. A member whose share of the group's I/Os exceeds its share of the weights,
//! `mine / group > W / total`, is held back (after sleeping `flow_sleep`) and asks again; a
//! member that leaves takes its I/Os and its weight out of the group.

use crate::fio::jobfile::JobSpec;
use std::sync::atomic::{AtomicU64, Ordering};

/// One flow group: I/Os issued by its members (from 1, as fio) and the sum of their weights.
#[derive(Debug)]
pub struct FlowGroup {
    id: u32,
    counter: AtomicU64,
    total_weight: AtomicU64,
}

/// The flow groups of a run: weights of every clone of every job are added before anything
/// runs (fio adds them when it sets the jobs up).
#[derive(Debug, Default)]
pub struct Flows(Vec<FlowGroup>);

impl Flows {
    /// The groups of these jobs.
    pub fn of(jobs: &[JobSpec]) -> Flows {
        let mut groups: Vec<FlowGroup> = Vec::new();
        for j in jobs.iter().filter(|j| j.flow > 0) {
            let add = j.flow as u64 * j.numjobs as u64;
            match groups.iter().find(|g| g.id == j.flow_id) {
                Some(g) => {
                    g.total_weight.fetch_add(add, Ordering::Relaxed);
                }
                None => groups.push(FlowGroup {
                    id: j.flow_id,
                    counter: AtomicU64::new(1),
                    total_weight: AtomicU64::new(add),
                }),
            }
        }
        Flows(groups)
    }

    /// The group of a job with flow control, None without.
    pub fn group_of(&self, job: &JobSpec) -> Option<&FlowGroup> {
        if job.flow == 0 {
            return None;
        }
        self.0.iter().find(|g| g.id == job.flow_id)
    }
}

/// A clone's membership in its flow group.
#[derive(Debug)]
pub struct FlowMember<'a> {
    group: &'a FlowGroup,
    weight: u64,
    mine: u64,
}

impl<'a> FlowMember<'a> {
    /// Membership of a clone of `job` in `group`.
    pub fn new(group: &'a FlowGroup, job: &JobSpec) -> FlowMember<'a> {
        FlowMember {
            group,
            weight: job.flow as u64,
            mine: 0,
        }
    }

    /// fio's flow_threshold_exceeded: true when this member is ahead of its share (the caller
    /// sleeps flow_sleep and asks again); otherwise the I/O about to go is counted.
    pub fn held_back(&mut self) -> bool {
        let group = self.group.counter.load(Ordering::Relaxed).max(1);
        let total = self.group.total_weight.load(Ordering::Relaxed).max(1);
        if self.mine as f64 / group as f64 > self.weight as f64 / total as f64 {
            return true;
        }
        self.group.counter.fetch_add(1, Ordering::Relaxed);
        self.mine += 1;
        false
    }
}

impl Drop for FlowMember<'_> {
    fn drop(&mut self) {
        self.group.counter.fetch_sub(self.mine, Ordering::Relaxed);
        self.group
            .total_weight
            .fetch_sub(self.weight, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(flow: u32, numjobs: u32) -> JobSpec {
        JobSpec {
            flow,
            numjobs,
            ..JobSpec::default()
        }
    }

    #[test]
    fn weights_of_every_clone_are_summed_per_group() {
        let mut b = job(3, 2);
        b.flow_id = 7;
        let jobs = [job(1, 1), b, job(0, 4)];
        let f = Flows::of(&jobs);
        assert_eq!(f.0.len(), 2);
        assert_eq!(
            f.group_of(&jobs[0])
                .unwrap()
                .total_weight
                .load(Ordering::Relaxed),
            1
        );
        assert_eq!(
            f.group_of(&jobs[1])
                .unwrap()
                .total_weight
                .load(Ordering::Relaxed),
            6
        );
        assert!(f.group_of(&jobs[2]).is_none());
    }

    /// Two members of weights 1 and 3 taking turns: the heavier issues three I/Os for each
    /// of the lighter's, as fio's flow example (flow=1 and flow=8) intends.
    #[test]
    fn members_issue_in_proportion_to_their_weights() {
        let jobs = [job(1, 1), job(3, 1)];
        let flows = Flows::of(&jobs);
        let g = flows.group_of(&jobs[0]).unwrap();
        let mut a = FlowMember::new(g, &jobs[0]);
        let mut b = FlowMember::new(g, &jobs[1]);
        let (mut na, mut nb) = (0u64, 0u64);
        for _ in 0..4000 {
            if !a.held_back() {
                na += 1;
            }
            if !b.held_back() {
                nb += 1;
            }
        }
        let ratio = nb as f64 / na as f64;
        assert!((2.9..=3.1).contains(&ratio), "{na} {nb}");
        drop(a);
        // The one left alone is never held back.
        assert!((0..100).all(|_| !b.held_back()));
        drop(b);
        assert_eq!(g.counter.load(Ordering::Relaxed), 1);
        assert_eq!(g.total_weight.load(Ordering::Relaxed), 0);
    }
}

/// What the latency-target check asks of the loop after a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatencyStep {
    /// Go on (maybe at another depth).
    Continue,
    /// The depth is found: reset the stats and run one more window at it (fio's final run).
    FinalRun,
    /// The final window is over: the job ends.
    Done,
}

/// fio's latency_target (io_u.c lat_target_*): the job starts at depth 1 and, every
/// latency_window, doubles (or bisects towards the last failing depth) when at least
/// latency_percentile percent of the window's I/Os completed within latency_target, and bisects
/// down otherwise; when the depth stops changing it runs one more window with fresh stats and
/// ends (unless latency_run). With latency_percentile=100 one late I/O ramps the depth down at
/// once, and at depth 1 it is fatal.
#[derive(Debug)]
pub struct LatencyTarget {
    target_ns: u64,
    window_ns: u64,
    percentile: f64,
    run: bool,
    iodepth: u32,
    qd: u32,
    qd_high: u32,
    qd_low: u32,
    stable_count: u32,
    end_run: bool,
    failed: u64,
    window_start: u64,
    ios_at_start: u64,
}

impl LatencyTarget {
    /// For a job with latency_target set; `now_ns` starts the first window.
    pub fn new(job: &JobSpec, iodepth: u32, now_ns: u64) -> Option<LatencyTarget> {
        let target = job.latency_target?;
        Some(LatencyTarget {
            target_ns: target.as_nanos() as u64,
            window_ns: job.latency_window.as_nanos() as u64,
            percentile: job.latency_percentile,
            run: job.latency_run,
            iodepth: iodepth.max(1),
            qd: 1,
            qd_high: iodepth.max(1),
            qd_low: 1,
            stable_count: 0,
            end_run: false,
            failed: 0,
            window_start: now_ns,
            ios_at_start: 0,
        })
    }

    /// The depth the job may use now.
    #[inline]
    pub fn depth(&self) -> usize {
        self.qd as usize
    }

    fn new_cycle(&mut self, now_ns: u64, ios: u64) {
        self.window_start = now_ns;
        self.ios_at_start = ios;
        self.failed = 0;
    }

    /// fio's __lat_target_failed: false when already at depth 1.
    fn ramp_down(&mut self, now_ns: u64, ios: u64) -> bool {
        if self.qd == 1 {
            return false;
        }
        self.qd_high = self.qd;
        if self.qd == self.qd_low {
            self.qd_low -= 1;
        }
        self.qd = (self.qd + self.qd_low) / 2;
        self.stable_count = 0;
        self.new_cycle(now_ns, ios);
        true
    }

    /// A completed I/O of total latency `lat_ns` (`ios` completed so far). Err(()) when the
    /// target is missed at depth 1 with latency_percentile=100 (fio's lat_fatal).
    #[inline]
    pub fn completed(&mut self, lat_ns: u64, now_ns: u64, ios: u64) -> Result<(), u64> {
        if lat_ns <= self.target_ns {
            return Ok(());
        }
        if self.percentile == 100.0 {
            if !self.ramp_down(now_ns, ios) {
                return Err(self.target_ns);
            }
        } else {
            self.failed += 1;
        }
        Ok(())
    }

    fn success(&mut self, now_ns: u64, ios: u64) -> LatencyStep {
        let qd = self.qd;
        self.qd_low = self.qd;
        if self.qd + 1 == self.qd_high {
            self.stable_count += 1;
            if self.stable_count >= 3 {
                self.qd_high += 1;
                self.stable_count = 0;
            }
        }
        if self.qd_high != self.iodepth {
            self.qd = (self.qd + self.qd_high) / 2;
        } else {
            self.qd *= 2;
        }
        self.qd = self.qd.min(self.iodepth);
        let mut step = LatencyStep::Continue;
        if !self.run && self.qd == qd {
            if self.end_run {
                step = LatencyStep::Done;
            } else {
                self.end_run = true;
                step = LatencyStep::FinalRun;
            }
        }
        self.new_cycle(
            now_ns,
            if step == LatencyStep::FinalRun {
                0
            } else {
                ios
            },
        );
        step
    }

    /// fio's lat_target_check, after an I/O: at the end of a window, judge it.
    #[inline]
    pub fn check(&mut self, now_ns: u64, ios: u64) -> LatencyStep {
        if now_ns.saturating_sub(self.window_start) < self.window_ns {
            return LatencyStep::Continue;
        }
        let n = ios.saturating_sub(self.ios_at_start);
        let ok = if n == 0 {
            100.0
        } else {
            (n - self.failed.min(n)) as f64 / n as f64 * 100.0
        };
        if ok >= self.percentile {
            self.success(now_ns, ios)
        } else {
            self.ramp_down(now_ns, ios);
            LatencyStep::Continue
        }
    }
}

#[cfg(test)]
mod latency_tests {
    use super::*;
    use std::time::Duration;

    fn lt(iodepth: u32, pct: f64) -> LatencyTarget {
        let job = JobSpec {
            latency_target: Some(Duration::from_micros(500)),
            latency_window: Duration::from_millis(10),
            latency_percentile: pct,
            ..JobSpec::default()
        };
        LatencyTarget::new(&job, iodepth, 0).unwrap()
    }

    /// Depths as fio's ramp: 1, 2, 4, 8, 16 while every window meets the target; at the
    /// iodepth it stays, runs a final window (stats reset), then ends.
    #[test]
    fn ramps_up_doubling_then_runs_a_final_window() {
        let mut l = lt(16, 99.9);
        let mut depths = vec![l.depth()];
        let mut t = 0;
        let mut ios = 0;
        let mut steps = Vec::new();
        for _ in 0..7 {
            t += 10_000_000;
            ios += 100;
            let s = l.check(t, ios);
            steps.push(s);
            depths.push(l.depth());
        }
        assert_eq!(depths, vec![1, 2, 4, 8, 16, 16, 16, 16]);
        assert_eq!(steps[4], LatencyStep::FinalRun);
        assert_eq!(steps[5], LatencyStep::Done);
    }

    /// A window with too many late I/Os bisects down towards the last good depth.
    #[test]
    fn late_windows_ramp_down() {
        let mut l = lt(16, 90.0);
        for t in 1..=3 {
            l.check(t * 10_000_000, t * 100);
        }
        assert_eq!(l.depth(), 8);
        for _ in 0..50 {
            l.completed(1_000_000, 30_000_001, 300).unwrap();
        }
        assert_eq!(l.check(40_000_000, 400), LatencyStep::Continue);
        // (8 + low 4) / 2
        assert_eq!(l.depth(), 6);
        // Windows not yet over change nothing.
        assert_eq!(l.check(40_000_001, 401), LatencyStep::Continue);
        assert_eq!(l.depth(), 6);
    }

    /// With latency_percentile=100 a late I/O at depth 1 is fatal, as fio's lat_fatal.
    #[test]
    fn a_late_io_at_depth_one_is_fatal_at_100_percent() {
        let mut l = lt(4, 100.0);
        assert_eq!(l.completed(400_000, 1, 1), Ok(()));
        assert_eq!(l.completed(600_000, 2, 2), Err(500_000));
    }
}
