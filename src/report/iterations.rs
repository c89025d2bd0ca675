//! fs_mark's per-iteration rows for the HTML report: read from the `fsmark_iterations`
//! attachment of each successful fs_mark sample the report covers, and nothing else.
//!
//! Why a file of its own: raw results can be large, so which samples' attachments are read is a
//! decision worth one place: only samples of the sides' selected runs, only tests that have a
//! section in the report, only fs_mark samples (their workload line starts with `fs_mark`). It
//! is part of gathering (it reads the store, never formats HTML); `report::gather` calls it.

use crate::fsmark::{FSMARK_ITERATIONS, IterationResult};
use crate::model::{SampleRecord, SampleStatus};
use crate::report::html::{IterationTables, MetricInput, Role, SampleIterations};
use crate::store::Store;

/// Whether a sample may hold fs_mark rows: a successful fs_mark sample.
fn is_fsmark(s: &SampleRecord) -> bool {
    s.sample.status == SampleStatus::Ok
        && (s.sample.workload == "fs_mark" || s.sample.workload.starts_with("fs_mark "))
}

/// Per (configuration as named by `name`, test) with a metric in `metrics`, the rows of every
/// sample of `base` and `cur` that kept them, in the order of the report's sections and then
/// baseline before current, by run and repetition. A sample whose rows cannot be read is left
/// out with a message on stderr (the rest of the report stands).
pub fn tables(
    store: &dyn Store,
    base: &[SampleRecord],
    cur: &[SampleRecord],
    name: &dyn Fn(&str) -> String,
    metrics: &[MetricInput],
) -> Vec<IterationTables> {
    let mut out: Vec<IterationTables> = Vec::new();
    for (samples, role) in [(base, Role::Baseline), (cur, Role::Current)] {
        for s in samples.iter().filter(|s| is_fsmark(s)) {
            let config = name(&s.sample.config);
            if !metrics
                .iter()
                .any(|m| m.key.config == config && m.key.test == s.sample.test)
            {
                continue;
            }
            let rows = match read_rows(store, s) {
                Ok(Some(rows)) if !rows.is_empty() => rows,
                Ok(_) => continue,
                Err(e) => {
                    eprintln!(
                        "fsdelta: leaving the fs_mark rows of sample {} out of the report: {e}",
                        s.id
                    );
                    continue;
                }
            };
            let i = match out
                .iter()
                .position(|t| t.config == config && t.test == s.sample.test)
            {
                Some(i) => i,
                None => {
                    out.push(IterationTables {
                        config,
                        test: s.sample.test.clone(),
                        samples: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            out[i].samples.push(SampleIterations {
                role,
                run_id: s.run_id,
                repetition: s.sample.repetition,
                sample_id: s.id,
                rows,
            });
        }
    }
    for t in &mut out {
        t.samples.sort_by_key(|s| {
            (
                s.role != Role::Baseline,
                s.run_id,
                s.repetition,
                s.sample_id,
            )
        });
    }
    let order = |t: &IterationTables| {
        metrics
            .iter()
            .position(|m| m.key.config == t.config && m.key.test == t.test)
            .unwrap_or(usize::MAX)
    };
    out.sort_by_key(order);
    out
}

/// The rows kept with one sample, `None` when it kept none.
fn read_rows(store: &dyn Store, s: &SampleRecord) -> Result<Option<Vec<IterationResult>>, String> {
    let atts = store.attachments(s.id).map_err(|e| e.to_string())?;
    let Some(a) = atts.iter().find(|a| a.name == FSMARK_ITERATIONS) else {
        return Ok(None);
    };
    let text = a.text()?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| format!("{FSMARK_ITERATIONS} is not valid: {e}"))
}
