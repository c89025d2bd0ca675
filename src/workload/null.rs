//! The null workload: no I/O, a fixed headline metric, and scripted faults, so that the run
//! engine is tested without a filesystem doing anything (fio's null engine plays this part for
//! fio). Never part of a suite.

use super::{CancelToken, Measurements, RunContext, Workload, WorkloadError};
use crate::model::{Direction, Metric, Unit};
use std::sync::atomic::{AtomicU32, Ordering};

/// What the n-th call (from 1) does.
#[derive(Clone, Debug, Default)]
pub struct Null {
    /// Calls that fail with an error.
    pub fail_on: Vec<u32>,
    /// On this call, cancel this token and return cancelled (a Ctrl-C mid-sample).
    pub cancel_on: Option<(u32, CancelToken)>,
    calls: std::sync::Arc<AtomicU32>,
}

impl Null {
    /// A null workload that always succeeds.
    pub fn new() -> Null {
        Null::default()
    }

    /// Fail on these calls.
    pub fn failing_on(calls: &[u32]) -> Null {
        Null {
            fail_on: calls.to_vec(),
            ..Null::default()
        }
    }

    /// Cancel `token` on call `call`.
    pub fn cancelling_on(call: u32, token: CancelToken) -> Null {
        Null {
            cancel_on: Some((call, token)),
            ..Null::default()
        }
    }

    /// How many times it ran (shared by clones).
    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::Relaxed)
    }
}

impl Workload for Null {
    fn engine(&self) -> &'static str {
        "null"
    }

    fn run(&self, ctx: &RunContext<'_>) -> Result<Measurements, WorkloadError> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some((k, token)) = &self.cancel_on
            && *k == n
        {
            token.cancel();
            return Err(WorkloadError::Cancelled);
        }
        if self.fail_on.contains(&n) {
            return Err(WorkloadError::InvalidOptions(format!(
                "null workload: scripted failure of call {n}"
            )));
        }
        ctx.progress.phase("null");
        Ok(Measurements {
            metrics: vec![
                Metric::new(
                    "ops_per_sec",
                    1000.0 + n as f64,
                    Unit::OpsPerSec,
                    Direction::HigherIsBetter,
                )
                .headline(),
            ],
            ..Measurements::default()
        })
    }
}
