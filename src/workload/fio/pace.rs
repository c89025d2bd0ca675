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

use crate::plan::jobfile::JobSpec;
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
