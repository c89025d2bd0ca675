//! Existing fio results into the store: `fsdelta import fio-json FILE --label TEXT`.
//!
//! Why: filesystem developers have years of fio JSON files; importing them as samples, with the
//! native engine's metric names, lets `fsdelta compare` and `history` treat them like runs made
//! by fsdelta. This module is a pure conversion (text in, samples out): it must never touch the
//! store or the filesystem, and must never invent a number the JSON does not hold: a job that
//! does a direction whose `read`/`write` object is missing is refused, not read as 0 IOPS.

use super::external::{FioJob, FioOutput, measurements_of, parse, rw_directions};
use crate::model::NewSample;
use crate::model::{HistogramRecord, Metric, SampleStatus, SiteFacts};
use crate::workload::external::ParseError;
use chrono::{DateTime, TimeZone, Utc};
use std::collections::BTreeMap;

/// One sample read from a fio JSON document: one entry of its `jobs` array (a job clone, or
/// with group_reporting a whole reporting group).
#[derive(Clone, Debug, PartialEq)]
pub struct ImportedSample {
    /// Test name: the job's name. fio reports each clone of a `numjobs=N` job without
    /// group_reporting under the same name; those become `name.0`, `name.1`, ... (fio's clone
    /// numbering, as in its file names `name.1.0`).
    pub test: String,
    /// The command line that reproduces the job: `fio` with the global options first (before
    /// the first `--name`, fio takes them as global), then `--name=JOB` and the job's options.
    /// fio's JSON omits options given as bare flags (`group_reporting`), so they are absent here.
    pub workload: String,
    /// The job's metrics, named and computed as the native engine's.
    pub metrics: Vec<Metric>,
    /// Latency histograms, when the JSON came from `--output-format=json+`.
    pub histograms: Vec<HistogramRecord>,
    /// fio's `error` for the job; a non-zero error makes the sample failed.
    pub error: i64,
    /// When the job started: fio's `timestamp_ms` (when it wrote the results) minus the job's
    /// `elapsed`, when the JSON holds a timestamp.
    pub started_at: Option<DateTime<Utc>>,
    /// The job's `elapsed`, whole seconds.
    pub duration_s: f64,
    /// The fio version that wrote the JSON (`fio-3.33`).
    pub fio_version: String,
}

impl ImportedSample {
    /// The sample to store, with the configuration name and target facts the importer knows
    /// (fio's JSON says nothing about the filesystem). Without a timestamp in the JSON,
    /// `fallback_start` is used.
    pub fn into_new_sample(
        self,
        config: &str,
        repetition: u32,
        facts: SiteFacts,
        fallback_start: DateTime<Utc>,
    ) -> NewSample {
        let failed = self.error != 0;
        NewSample {
            config: config.to_string(),
            test: self.test,
            repetition,
            sequence: 0,
            facts,
            status: if failed {
                SampleStatus::Failed
            } else {
                SampleStatus::Ok
            },
            error: failed.then(|| format!("fio reported error {} for this job", self.error)),
            started_at: self.started_at.unwrap_or(fallback_start),
            duration_s: self.duration_s,
            workload: self.workload,
            metrics: self.metrics,
            histograms: self.histograms,
            attachments: Vec::new(),
        }
    }
}

/// Read a fio JSON document (text before the first `{` skipped) into one sample per entry of
/// `jobs`.
pub fn import_fio_json(text: &str) -> Result<Vec<ImportedSample>, ParseError> {
    let out = parse(text)?;
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for j in &out.jobs {
        *seen.entry(j.name.as_str()).or_default() += 1;
    }
    let mut clone_no: BTreeMap<&str, usize> = BTreeMap::new();
    let mut samples = Vec::with_capacity(out.jobs.len());
    for (i, j) in out.jobs.iter().enumerate() {
        // A direction the job does whose object is missing would be stored as 0 IOPS.
        let reported = rw_directions(j, &out.global_options);
        if let Some(d) = super::metrics::DIRECTIONS
            .into_iter()
            .zip(reported.0)
            .find(|(d, used)| *used && j.absent.contains(d))
            .map(|(d, _)| d)
        {
            return Err(ParseError::new(
                "fio",
                out.json_line,
                format!(
                    "jobs[{i}] (job '{}') does {d}s but has no `{d}` object: the document is cut \
                     or edited (fio 3.33 always prints `read` and `write`), and its {d} numbers \
                     would be stored as 0; import fio's complete --output-format=json output",
                    j.name
                ),
            ));
        }
        let test = if seen[j.name.as_str()] > 1 {
            let k = clone_no.entry(j.name.as_str()).or_default();
            let t = format!("{}.{k}", j.name);
            *k += 1;
            t
        } else {
            j.name.clone()
        };
        let m = measurements_of(&[j], &out.global_options);
        samples.push(ImportedSample {
            test,
            workload: command_line(&out, j),
            metrics: m.metrics,
            histograms: m.histograms,
            error: j.error,
            started_at: out.timestamp_ms.and_then(|ms| {
                let start = ms.checked_sub(j.elapsed_s.saturating_mul(1000))?;
                Utc.timestamp_millis_opt(i64::try_from(start).ok()?)
                    .single()
            }),
            duration_s: j.elapsed_s as f64,
            fio_version: out.version.clone(),
        });
    }
    Ok(samples)
}

/// `fio --global=... --name=JOB --opt=...`, values quoted for a POSIX shell when needed.
fn command_line(out: &FioOutput, j: &FioJob) -> String {
    let mut s = String::from("fio");
    let mut opt = |k: &str, v: &str| {
        s.push(' ');
        let word = if v.is_empty() {
            format!("--{k}")
        } else {
            format!("--{k}={v}")
        };
        s.push_str(&shell_word(&word));
    };
    for (k, v) in &out.global_options {
        opt(k, v);
    }
    opt("name", &j.name);
    for (k, v) in &j.options {
        opt(k, v);
    }
    s
}

fn shell_word(w: &str) -> String {
    let plain = w
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_=.,:/+%@^".contains(c));
    if plain && !w.is_empty() {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_without_the_object_of_its_direction_is_refused() {
        let e = r#"{"min":0,"max":0,"mean":0.0,"stddev":0.0,"N":0}"#;
        let dir = format!(
            r#"{{"io_bytes":4096,"total_ios":1,"runtime":1,"slat_ns":{e},"clat_ns":{e},"lat_ns":{e}}}"#
        );
        let doc = |rw: &str, objects: &str| {
            format!(
                r#"{{"fio version":"fio-3.33","global options":{{}},"jobs":[{{"jobname":"j","groupid":0,"error":0,"job options":{{"rw":"{rw}"}},{objects}"job_runtime":1,"usr_cpu":0.0,"sys_cpu":0.0}}]}}"#
            )
        };
        let read_only = format!(r#""read":{dir},"#);
        let write_only = format!(r#""write":{dir},"#);
        let err = import_fio_json(&doc("write", &read_only))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("job 'j'") && err.contains("no `write` object"),
            "{err}"
        );
        let err = import_fio_json(&doc("randrw", &write_only))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no `read` object"), "{err}");
        // A write job with both objects, and a read job without `write`, are fine.
        let both = format!(r#""read":{dir},"write":{dir},"#);
        assert!(import_fio_json(&doc("write", &both)).is_ok());
        assert!(import_fio_json(&doc("read", &read_only)).is_ok());
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("--bs=4k"), "--bs=4k");
        assert_eq!(shell_word("--name=a b"), "'--name=a b'");
        assert_eq!(shell_word("--x=it's"), r"'--x=it'\''s'");
    }
}
