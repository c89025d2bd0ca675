//! fio's lat/slat/clat/bw/iops logs for the HTML report: the series `read::extras` read (each
//! log parsed and reduced to points by the fio wing, `crate::fio::logs`) grouped into one chart
//! per log file of a section.
//!
//! Why a file of its own: which series belong to which chart, in which order, and what happens
//! to a log that cannot be read (left out, said on stderr; so is a log without lines) is one
//! decision. It is part of gathering (it never reads the store, never formats HTML);
//! `report::gather` calls it.

use crate::model::SampleRecord;
use crate::read::extras::SampleLogs;
use crate::report::html::{FioLogChart, FioLogSeries, MetricInput, Role};
use crate::report::iterations::in_report;

/// Per (configuration as named by `name`, test) with a metric in `metrics`, a chart per log
/// file the samples of `base` and `cur` kept (as `read` read them), in the order of the
/// report's sections, then by file name; each chart's series baseline before current, by run,
/// repetition and direction. A log that cannot be read is left out with a message on stderr
/// (the rest of the report stands); so is a log without lines.
pub fn charts(
    read: &[SampleLogs],
    base: &[SampleRecord],
    cur: &[SampleRecord],
    name: &dyn Fn(&str) -> String,
    metrics: &[MetricInput],
) -> Vec<FioLogChart> {
    let mut out: Vec<FioLogChart> = Vec::new();
    for r in read {
        let Some((s, role, config)) = in_report(&r.at, base, cur, name, metrics) else {
            continue;
        };
        let files = match &r.files {
            Ok(f) => f,
            Err(e) => {
                eprintln!(
                    "fsdelta: leaving the fio logs of sample {} out of the report: {e}",
                    s.id
                );
                continue;
            }
        };
        for f in files {
            let series = match &f.series {
                Ok(series) => series,
                Err(e) => {
                    eprintln!(
                        "fsdelta: leaving fio log {} of sample {} out of the report: {e}",
                        f.file, s.id
                    );
                    continue;
                }
            };
            let i = match out
                .iter()
                .position(|c| c.config == config && c.test == s.sample.test && c.file == f.file)
            {
                Some(i) => i,
                None => {
                    out.push(FioLogChart {
                        config: config.clone(),
                        test: s.sample.test.clone(),
                        file: f.file.clone(),
                        kind: f.kind,
                        series: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            for one in series {
                out[i].series.push(FioLogSeries {
                    role,
                    run_id: s.run_id,
                    repetition: s.sample.repetition,
                    sample_id: s.id,
                    ddir: one.ddir,
                    lines: one.lines,
                    cut: one.cut,
                    points: one.points.clone(),
                });
            }
        }
    }
    // An empty log (a synchronous engine's slat) has nothing to draw.
    out.retain(|c| !c.series.is_empty());
    for c in &mut out {
        c.series.sort_by_key(|s| {
            (
                s.role != Role::Baseline,
                s.run_id,
                s.repetition,
                s.sample_id,
                s.ddir,
            )
        });
    }
    let order = |c: &FioLogChart| {
        (
            metrics
                .iter()
                .position(|m| m.key.config == c.config && m.key.test == c.test)
                .unwrap_or(usize::MAX),
            c.file.clone(),
        )
    };
    out.sort_by_key(order);
    out
}
