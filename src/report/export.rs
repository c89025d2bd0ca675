//! `fsdelta export`: every stored number of the selected runs, as JSON (with a `schema_version`)
//! or CSV (one row per metric value).
//!
//! Pure renderers returning bytes; they must never read the store themselves. The JSON layout is a
//! contract for users' scripts: bump [`EXPORT_SCHEMA_VERSION`] on any incompatible change.

use crate::model::{RunInfo, SampleRecord};
use serde::Serialize;

/// Version of the JSON export layout.
pub const EXPORT_SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct ExportDoc<'a> {
    schema_version: u32,
    fsdelta_version: &'static str,
    runs: Vec<ExportRun<'a>>,
}

#[derive(Serialize)]
struct ExportRun<'a> {
    #[serde(flatten)]
    run: &'a RunInfo,
    samples: &'a [SampleRecord],
}

/// JSON export of runs with their samples, metrics and histograms.
pub fn json(runs: &[(RunInfo, Vec<SampleRecord>)]) -> Result<String, serde_json::Error> {
    let doc = ExportDoc {
        schema_version: EXPORT_SCHEMA_VERSION,
        fsdelta_version: env!("CARGO_PKG_VERSION"),
        runs: runs
            .iter()
            .map(|(run, samples)| ExportRun { run, samples })
            .collect(),
    };
    let mut s = serde_json::to_string_pretty(&doc)?;
    s.push('\n');
    Ok(s)
}

/// Quote a CSV field when it needs it (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV export: one row per metric value, with the run and sample it belongs to.
pub fn csv(runs: &[(RunInfo, Vec<SampleRecord>)]) -> String {
    let mut out = String::from(
        "run_id,label,suite,kernel,config,test,repetition,sample_status,fs_type,mount_options,metric,value,unit,direction,sequence,kind,headline\n",
    );
    for (run, samples) in runs {
        for s in samples {
            let sm = &s.sample;
            for m in &sm.metrics {
                let fields = [
                    run.id.to_string(),
                    run.label.clone(),
                    run.suite.clone(),
                    run.environment.kernel_release.clone(),
                    sm.config.clone(),
                    sm.test.clone(),
                    sm.repetition.to_string(),
                    sm.status.as_str().to_string(),
                    sm.facts.fs_type.clone(),
                    sm.facts.mount_options.clone(),
                    m.name.clone(),
                    format!("{}", m.value),
                    m.unit.as_str().to_string(),
                    m.direction.as_str().to_string(),
                    sm.sequence.to_string(),
                    m.kind.as_str().to_string(),
                    m.headline.to_string(),
                ];
                let row: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
                out.push_str(&row.join(","));
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_when_needed() {
        assert_eq!(csv_field("rw,relatime"), "\"rw,relatime\"");
        assert_eq!(csv_field("a\"b"), "\"a\"\"b\"");
        assert_eq!(csv_field("plain"), "plain");
    }

    #[test]
    fn empty_export_has_a_schema_version() {
        let j: serde_json::Value = serde_json::from_str(&json(&[]).unwrap()).unwrap();
        assert_eq!(j["schema_version"], 1);
        assert!(j["runs"].as_array().unwrap().is_empty());
        assert!(csv(&[]).starts_with("run_id,"));
    }
}
