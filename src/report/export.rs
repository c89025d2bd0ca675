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
    /// The kernels the run's guests booted (`run --kernel`): the kernels under test, where
    /// `environment.kernel_release` is the host's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    guest_kernels: Vec<&'a str>,
    samples: &'a [SampleRecord],
}

/// The kernel a sample ran on: its guest's (`vm_kernel`), else the run's host kernel.
pub fn sample_kernel<'a>(run: &'a RunInfo, s: &'a SampleRecord) -> &'a str {
    s.sample
        .facts
        .extra
        .get("vm_kernel")
        .map_or(run.environment.kernel_release.as_str(), String::as_str)
}

/// The distinct guest kernels of `samples`, in order of first appearance.
pub fn guest_kernels(samples: &[SampleRecord]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for s in samples {
        if let Some(k) = s.sample.facts.extra.get("vm_kernel")
            && !out.contains(&k.as_str())
        {
            out.push(k);
        }
    }
    out
}

/// JSON export of runs with their samples, metrics and histograms.
pub fn json(runs: &[(RunInfo, Vec<SampleRecord>)]) -> Result<String, serde_json::Error> {
    let doc = ExportDoc {
        schema_version: EXPORT_SCHEMA_VERSION,
        fsdelta_version: env!("CARGO_PKG_VERSION"),
        runs: runs
            .iter()
            .map(|(run, samples)| ExportRun {
                run,
                guest_kernels: guest_kernels(samples),
                samples,
            })
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

/// CSV export: one row per metric value, with the run and sample it belongs to. `kernel` is the
/// kernel the sample ran on (a guest's under `run --kernel`), `host_kernel` the host's.
pub fn csv(runs: &[(RunInfo, Vec<SampleRecord>)]) -> String {
    let mut out = String::from(
        "run_id,label,suite,kernel,config,test,repetition,sample_status,fs_type,mount_options,metric,value,unit,direction,sequence,kind,headline,host_kernel\n",
    );
    for (run, samples) in runs {
        for s in samples {
            let sm = &s.sample;
            for m in &sm.metrics {
                let fields = [
                    run.id.to_string(),
                    run.label.clone(),
                    run.suite.clone(),
                    sample_kernel(run, s).to_string(),
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
                    run.environment.kernel_release.clone(),
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
    fn a_guest_sample_exports_the_guest_kernel_and_the_host_one_beside_it() {
        use crate::model::{
            Direction, Environment, Metric, NewSample, RunStatus, SampleStatus, SiteFacts, Unit,
        };
        let run = RunInfo {
            id: 3,
            label: "k".into(),
            suite: "s".into(),
            started_at: chrono::Utc::now(),
            finished_at: None,
            status: RunStatus::Complete,
            fsdelta_version: "0.1.0".into(),
            environment: Environment {
                kernel_release: "6.12.0-host".into(),
                ..Environment::default()
            },
            sample_count: 1,
        };
        let mut facts = SiteFacts::default();
        facts
            .extra
            .insert("vm_kernel".into(), "6.1.0-47-amd64".into());
        let sample = SampleRecord {
            id: 1,
            run_id: 3,
            sample: NewSample {
                config: "ext4-47".into(),
                test: "t".into(),
                repetition: 1,
                sequence: 1,
                facts,
                status: SampleStatus::Ok,
                error: None,
                started_at: chrono::Utc::now(),
                duration_s: 1.0,
                workload: String::new(),
                metrics: vec![Metric::new(
                    "m",
                    1.0,
                    Unit::Seconds,
                    Direction::LowerIsBetter,
                )],
                histograms: vec![],
                attachments: Vec::new(),
            },
        };
        let runs = [(run, vec![sample])];
        let c = csv(&runs);
        let row = c.lines().nth(1).unwrap();
        assert!(row.starts_with("3,k,s,6.1.0-47-amd64,ext4-47,"), "{c}");
        assert!(row.ends_with(",6.12.0-host"), "{c}");
        let j: serde_json::Value = serde_json::from_str(&json(&runs).unwrap()).unwrap();
        assert_eq!(j["runs"][0]["guest_kernels"][0], "6.1.0-47-amd64");
        assert_eq!(j["runs"][0]["environment"]["kernel_release"], "6.12.0-host");
    }

    #[test]
    fn empty_export_has_a_schema_version() {
        let j: serde_json::Value = serde_json::from_str(&json(&[]).unwrap()).unwrap();
        assert_eq!(j["schema_version"], 1);
        assert!(j["runs"].as_array().unwrap().is_empty());
        assert!(csv(&[]).starts_with("run_id,"));
    }
}
