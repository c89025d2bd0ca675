//! A machine's calibration runs (`fsdelta calibrate`, label `calibrate`) as chains of
//! consecutive runs of one setup, for the between-run drift that `compare` counts
//! (`compare::drift_table`).
//!
//! Why a file of its own: `compare` and the dashboard both count the drift, and both must read
//! the same runs the same way. What it must never do: judge or estimate anything (that is
//! `compare::power`), or write to the store.

use crate::model::{RunInfo, RunStatus, SampleRecord};
use crate::store::{RunFilter, Store, StoreError};

/// The label of calibration runs.
pub const LABEL: &str = "calibrate";

/// The most calibration runs of a machine read (its newest): enough pairs for a drift estimate
/// with some degrees of freedom, few enough that a machine's state a month ago does not speak
/// for it now.
pub const MAX_RUNS: usize = 20;

/// The newest completed calibration runs of `host` (at most [`MAX_RUNS`]), oldest first, cut
/// into chains of consecutive runs of one setup: a run made under another kernel, another
/// kernel command line or another fsdelta version than the one before it starts a new chain (a
/// difference across such a boundary is a change, not drift). Each run with its samples.
pub fn chains(store: &dyn Store, host: &str) -> Result<Vec<Vec<Vec<SampleRecord>>>, StoreError> {
    let mut runs: Vec<RunInfo> = store
        .runs(&RunFilter {
            label: Some(LABEL.into()),
            limit: None,
        })?
        .into_iter()
        .filter(|r| r.environment.host == host && r.status == RunStatus::Complete)
        .take(MAX_RUNS)
        .collect();
    runs.reverse();
    let mut out: Vec<Vec<Vec<SampleRecord>>> = Vec::new();
    let mut last: Option<&RunInfo> = None;
    for r in &runs {
        let same = last.is_some_and(|l| same_setup(l, r));
        if !same {
            out.push(Vec::new());
        }
        if let Some(chain) = out.last_mut() {
            chain.push(store.samples(r.id)?);
        }
        last = Some(r);
    }
    Ok(out)
}

/// Whether two runs of a machine ran under the same kernel, command line and fsdelta.
fn same_setup(a: &RunInfo, b: &RunInfo) -> bool {
    a.environment.kernel_release == b.environment.kernel_release
        && a.environment.kernel_version == b.environment.kernel_version
        && a.environment.cmdline == b.environment.cmdline
        && a.fsdelta_version == b.fsdelta_version
}
