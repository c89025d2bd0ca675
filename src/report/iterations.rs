//! fs_mark's per-iteration rows for the HTML report: the `fsmark_iterations` rows that
//! `read::extras` read for each successful fs_mark sample of the report's sections, grouped into
//! one table per section.
//!
//! Why a file of its own: which rows belong to which section, in which order, and what happens
//! to a sample whose rows cannot be read (left out, said on stderr) is one decision. It is part
//! of gathering (it never reads the store, never formats HTML); `report::gather` calls it.

use crate::model::SampleRecord;
use crate::read::extras::{SampleAt, SampleIterations as ReadRows};
use crate::report::html::{IterationTables, MetricInput, Role, SampleIterations};

/// The sample `at` points to, its side, and its configuration as `name` shows it, when the
/// report has a section for its (configuration, test) among `metrics`; `None` otherwise. Shared
/// by the fs_mark tables and the fio log charts, which place what `read` read the same way.
pub(crate) fn in_report<'a>(
    at: &SampleAt,
    base: &'a [SampleRecord],
    cur: &'a [SampleRecord],
    name: &dyn Fn(&str) -> String,
    metrics: &[MetricInput],
) -> Option<(&'a SampleRecord, Role, String)> {
    let (s, role) = if at.base {
        (&base[at.index], Role::Baseline)
    } else {
        (&cur[at.index], Role::Current)
    };
    let config = name(&s.sample.config);
    metrics
        .iter()
        .any(|m| m.key.config == config && m.key.test == s.sample.test)
        .then_some((s, role, config))
}

/// Per (configuration as named by `name`, test) with a metric in `metrics`, the rows `read`
/// read for the samples of `base` and `cur` that kept them, in the order of the report's
/// sections and then baseline before current, by run and repetition. A sample whose rows cannot
/// be read is left out with a message on stderr (the rest of the report stands).
pub fn tables(
    read: &[ReadRows],
    base: &[SampleRecord],
    cur: &[SampleRecord],
    name: &dyn Fn(&str) -> String,
    metrics: &[MetricInput],
) -> Vec<IterationTables> {
    let mut out: Vec<IterationTables> = Vec::new();
    for r in read {
        let Some((s, role, config)) = in_report(&r.at, base, cur, name, metrics) else {
            continue;
        };
        let rows = match &r.rows {
            Ok(Some(rows)) if !rows.is_empty() => rows.clone(),
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
