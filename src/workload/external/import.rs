//! Existing fio results into the store: `fsdelta import fio-json FILE --label TEXT`.
//!
//! Why: filesystem developers have years of fio JSON files; importing them as samples, with the
//! native engine's metric names, lets `fsdelta compare` and `history` treat them like runs made
//! by fsdelta. This module is a pure conversion (text in, samples out): it must never touch the
//! store or the filesystem, and must never invent a number the JSON does not hold.

use super::ParseError;
use super::fio::{FioJob, FioOutput, measurements_of, parse};
use crate::model::NewSample;
use crate::model::{HistogramRecord, Metric, SampleStatus, TargetFacts};
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
        facts: TargetFacts,
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
    for j in &out.jobs {
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
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("--bs=4k"), "--bs=4k");
        assert_eq!(shell_word("--name=a b"), "'--name=a b'");
        assert_eq!(shell_word("--x=it's"), r"'--x=it'\''s'");
    }
}
