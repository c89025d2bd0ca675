//! What the HTML report shows beyond the judged metrics, read from the store: each run's medians
//! (a metric's history over the newest [`HISTORY_RUNS`] runs), the CPU profiles of the tests
//! that get flame graphs, fs_mark's per-iteration rows (`fsmark_iterations` attachments) and
//! fio's lat/slat/clat/bw/iops logs (`fio_log:` attachments, reduced to points by the fio wing).
//!
//! Why a file of its own: raw results can be large, so which samples' attachments and profiles
//! are read is a decision worth one place, and it is `report::gather`'s: it names what it wants
//! in a [`Wanted`], this file reads exactly that. A profile, a row set or a log that cannot be
//! read is returned as its error text (the report leaves it out, says so, and stands).
//!
//! It must never decide what the report shows, nor format anything.

use super::ReadError;
use crate::fio::engine::FIO_LOG_ATTACHMENT;
use crate::fio::logs::{self, FioLogKind, FioLogPoint, LogLine};
use crate::fsmark::{FSMARK_ITERATIONS, IterationResult};
use crate::model::{RunId, RunInfo, RunStatus, SampleRecord, SampleStatus};
use crate::probe::profile::Profile;
use crate::store::{RunFilter, Store};
use std::collections::HashMap;

/// At most this many of the newest runs make a metric's history.
pub const HISTORY_RUNS: usize = 500;

/// What to read for a report of the samples `base` (empty for a single selection) and `cur`.
pub struct Wanted<'a> {
    /// The baseline's samples that pass the filters.
    pub base: &'a [SampleRecord],
    /// The current side's samples that pass the filters.
    pub cur: &'a [SampleRecord],
    /// The runs of both sides: kept in the history even while still running.
    pub side_runs: Vec<RunId>,
    /// (configuration, test, metric) whose per-run medians to read, each once.
    pub medians: Vec<(String, String, String)>,
    /// (configuration as named in the report, test) whose profiles to read, per side.
    pub profiles: Vec<(String, String)>,
    /// (configuration as named in the report, test) that have a section in the report: only
    /// those samples' fs_mark rows and fio logs are read.
    pub sections: &'a [(String, String)],
    /// A sample's configuration as the report names it.
    pub name: &'a dyn Fn(&str) -> String,
}

/// One run's median of a wanted metric.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Median {
    /// The run.
    pub run: RunId,
    /// The median of the metric's values in the run's successful samples of the test.
    pub median: f64,
    /// How many values the median is of.
    pub n: usize,
}

/// Which sample of the [`Wanted`] sides something was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleAt {
    /// Of the baseline (else of the current side).
    pub base: bool,
    /// Index into that side's samples.
    pub index: usize,
}

/// The fs_mark rows of one sample: `Ok(None)` when it kept none.
pub struct SampleIterations {
    /// The sample.
    pub at: SampleAt,
    /// Its rows, or why they cannot be read.
    pub rows: Result<Option<Vec<IterationResult>>, String>,
}

/// One direction of one fio log file, reduced to points.
pub struct LogSeries {
    /// fio's ddir: 0 read, 1 write, 2 trim.
    pub ddir: u8,
    /// Log lines behind the points.
    pub lines: u64,
    /// Whether the stored log was cut at the attachment size limit.
    pub cut: bool,
    /// In time order.
    pub points: Vec<FioLogPoint>,
}

/// One fio log file a sample kept, or why it cannot be read.
pub struct LogFile {
    /// The file name (`x_clat.1.log`).
    pub file: String,
    /// What its values are.
    pub kind: FioLogKind,
    /// Per direction with lines (read, write, trim order).
    pub series: Result<Vec<LogSeries>, String>,
}

/// The fio logs of one sample, or why its attachments cannot be read.
pub struct SampleLogs {
    /// The sample.
    pub at: SampleAt,
    /// Its log files in attachment order.
    pub files: Result<Vec<LogFile>, String>,
}

/// Everything a report needs beyond its sides' samples.
pub struct Extras {
    /// The runs of the history, oldest first.
    pub history_runs: Vec<RunInfo>,
    /// Per [`Wanted::medians`] key, its medians in run order.
    pub medians: Vec<Vec<Median>>,
    /// Per [`Wanted::profiles`] key, the pooled profile of each side (baseline, current).
    pub profiles: Vec<(Option<Profile>, Option<Profile>)>,
    /// fs_mark rows of the sections' successful fs_mark samples, baseline first.
    pub iterations: Vec<SampleIterations>,
    /// fio logs of the sections' successful native fio samples, baseline first.
    pub fio_logs: Vec<SampleLogs>,
}

/// Read what `wanted` names.
pub fn read(store: &dyn Store, wanted: &Wanted<'_>) -> Result<Extras, ReadError> {
    let (history_runs, medians) = medians(store, &wanted.medians, &wanted.side_runs)?;
    let profiles = wanted
        .profiles
        .iter()
        .map(|(config, test)| {
            let pooled = |samples: &[SampleRecord]| {
                pooled_profile(
                    store,
                    samples.iter().filter(|s| {
                        (wanted.name)(&s.sample.config) == *config && s.sample.test == *test
                    }),
                )
            };
            (pooled(wanted.base), pooled(wanted.cur))
        })
        .collect();
    Ok(Extras {
        history_runs,
        medians,
        profiles,
        iterations: sampled(wanted, is_fsmark)
            .map(|(at, s)| SampleIterations {
                at,
                rows: iteration_rows(store, s),
            })
            .collect(),
        fio_logs: sampled(wanted, logs::is_fio)
            .map(|(at, s)| SampleLogs {
                at,
                files: fio_logs(store, s),
            })
            .collect(),
    })
}

/// The samples of both sides (baseline first) that `pick` accepts and that have a section.
fn sampled<'a>(
    wanted: &'a Wanted<'a>,
    pick: fn(&SampleRecord) -> bool,
) -> impl Iterator<Item = (SampleAt, &'a SampleRecord)> + 'a {
    [(wanted.base, true), (wanted.cur, false)]
        .into_iter()
        .flat_map(|(samples, base)| {
            samples
                .iter()
                .enumerate()
                .map(move |(index, s)| (SampleAt { base, index }, s))
        })
        .filter(move |(_, s)| pick(s))
        .filter(|(_, s)| {
            let config = (wanted.name)(&s.sample.config);
            wanted
                .sections
                .iter()
                .any(|(c, t)| *c == config && *t == s.sample.test)
        })
}

/// Per key (configuration, test, metric), one median per run that has it, over the newest
/// [`HISTORY_RUNS`] runs that have ended (and the runs of `side_runs` though they run), in run
/// order; and those runs.
fn medians(
    store: &dyn Store,
    keys: &[(String, String, String)],
    side_runs: &[RunId],
) -> Result<(Vec<RunInfo>, Vec<Vec<Median>>), ReadError> {
    let mut runs: Vec<RunInfo> = store.runs(&RunFilter {
        label: None,
        limit: Some(HISTORY_RUNS),
    })?;
    runs.retain(|r| r.status != RunStatus::Running || side_runs.contains(&r.id));
    runs.sort_by_key(|r| r.id);
    // config -> test -> metric -> index into `keys`: looked up with the borrowed names of a
    // row, so no string is made per row (a run's medians: 468 rows a run of the quick suite).
    let mut lookup: HashMap<&str, HashMap<&str, HashMap<&str, usize>>> = HashMap::new();
    for (i, (config, test, metric)) in keys.iter().enumerate() {
        lookup
            .entry(config.as_str())
            .or_default()
            .entry(test.as_str())
            .or_default()
            .insert(metric.as_str(), i);
    }
    let mut out: Vec<Vec<Median>> = vec![Vec::new(); keys.len()];
    let ids: Vec<RunId> = runs.iter().map(|r| r.id).collect();
    // One row per run, configuration, test and metric, in run order: each run's median of
    // its repetitions, as the store keeps it.
    store.run_medians(&ids, &mut |m| {
        let Some(&k) = lookup
            .get(m.config)
            .and_then(|t| t.get(m.test))
            .and_then(|t| t.get(m.metric))
        else {
            return;
        };
        out[k].push(Median {
            run: m.run,
            median: m.median,
            n: m.n,
        });
    })?;
    Ok((runs, out))
}

/// The profiles of `samples` merged; `None` when none has a readable, non-empty one (profiles
/// that cannot be read are left out).
fn pooled_profile<'a>(
    store: &dyn Store,
    samples: impl Iterator<Item = &'a SampleRecord>,
) -> Option<Profile> {
    let mut p: Option<Profile> = None;
    for s in samples {
        if let Ok(Some(stored)) = store.profile(s.id)
            && let Ok(one) = Profile::decode(&stored)
        {
            match &mut p {
                Some(p) => p.merge(&one),
                None => p = Some(one),
            }
        }
    }
    p.filter(|p| !p.is_empty())
}

/// The pooled profile of the samples of `runs` that ran `test` on a configuration `keep`
/// accepts, and how many samples had one (`fsdelta profile`, `compare --profile`). Unlike the
/// report's, a profile that cannot be read is an error here: the command is about it.
pub fn profiles(
    store: &dyn Store,
    runs: &[(RunInfo, Vec<SampleRecord>)],
    test: &str,
    keep: impl Fn(&str) -> bool,
) -> Result<(Profile, usize), ProfileError> {
    let mut p = Profile::default();
    let mut n = 0;
    for s in runs.iter().flat_map(|(_, s)| s.iter()) {
        if s.sample.test != test || !keep(&s.sample.config) {
            continue;
        }
        if let Some(stored) = store.profile(s.id)? {
            let one = Profile::decode(&stored).map_err(|e| ProfileError::Decode {
                sample: s.id,
                run: s.run_id,
                source: e,
            })?;
            p.merge(&one);
            n += 1;
        }
    }
    Ok((p, n))
}

/// Why stored profiles cannot be pooled.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// A stored profile does not decode.
    #[error("profile of sample {sample} (run {run})")]
    Decode {
        /// The sample.
        sample: i64,
        /// Its run.
        run: i64,
        /// Why.
        source: crate::probe::profile::ProfileError,
    },
}

/// Whether a sample may hold fs_mark rows: a successful fs_mark sample.
fn is_fsmark(s: &SampleRecord) -> bool {
    s.sample.status == SampleStatus::Ok
        && (s.sample.workload == "fs_mark" || s.sample.workload.starts_with("fs_mark "))
}

/// The rows kept with one sample, `None` when it kept none.
fn iteration_rows(
    store: &dyn Store,
    s: &SampleRecord,
) -> Result<Option<Vec<IterationResult>>, String> {
    let atts = store.attachments(s.id).map_err(|e| e.to_string())?;
    let Some(a) = atts.iter().find(|a| a.name == FSMARK_ITERATIONS) else {
        return Ok(None);
    };
    let text = a.text()?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| format!("{FSMARK_ITERATIONS} is not valid: {e}"))
}

/// The fio log files one sample kept, each parsed and reduced to at most
/// [`logs::MAX_POINTS`] points a direction.
fn fio_logs(store: &dyn Store, s: &SampleRecord) -> Result<Vec<LogFile>, String> {
    let atts = store.attachments(s.id).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for a in &atts {
        let Some(file) = a.name.strip_prefix(FIO_LOG_ATTACHMENT) else {
            continue;
        };
        let Some(kind) = logs::kind_of(file) else {
            continue;
        };
        let series = a
            .text()
            .and_then(|t| logs::parse_log(&t).map_err(|e| e.to_string()))
            .map(|parsed| {
                (0..3u8)
                    .filter_map(|ddir| {
                        let lines: Vec<LogLine> = parsed
                            .lines
                            .iter()
                            .filter(|l| l.ddir == ddir)
                            .copied()
                            .collect();
                        (!lines.is_empty()).then(|| LogSeries {
                            ddir,
                            lines: lines.len() as u64,
                            cut: parsed.cut,
                            points: logs::points(kind, &lines, logs::MAX_POINTS),
                        })
                    })
                    .collect()
            });
        out.push(LogFile {
            file: file.to_string(),
            kind,
            series,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        Attachment, Direction, Environment, Metric, NewRun, NewSample, SiteFacts, Unit,
    };
    use crate::store::memory::MemoryStore;

    fn sample(test: &str, workload: &str, attachments: Vec<Attachment>) -> NewSample {
        NewSample {
            config: "c".into(),
            test: test.into(),
            repetition: 1,
            sequence: 1,
            facts: SiteFacts::default(),
            status: SampleStatus::Ok,
            error: None,
            started_at: chrono::Utc::now(),
            duration_s: 1.0,
            workload: workload.into(),
            metrics: vec![Metric::new(
                "iops",
                100.0,
                Unit::OpsPerSec,
                Direction::HigherIsBetter,
            )],
            histograms: vec![],
            attachments,
        }
    }

    fn text(name: &str, body: &str) -> Attachment {
        Attachment {
            name: name.into(),
            format: "text".into(),
            data: body.as_bytes().to_vec(),
        }
    }

    /// Only the samples of the sections are read, each kind by its own workload; what cannot be
    /// read comes back as its error, for the report to leave out.
    #[test]
    fn only_the_sections_samples_are_read_and_errors_come_back_as_values() {
        let mut store = MemoryStore::new();
        let run = store
            .create_run(&NewRun {
                label: "x".into(),
                suite: "s".into(),
                started_at: chrono::Utc::now(),
                fsdelta_version: "0".into(),
                environment: Environment::default(),
            })
            .unwrap();
        let log = "0, 10, 1, 4096, 0\n1, 20, 1, 4096, 0\n";
        let fio_log = format!("{FIO_LOG_ATTACHMENT}j_clat.1.log");
        for s in [
            sample(
                "a",
                "fs_mark -n 1",
                vec![text(FSMARK_ITERATIONS, "not json")],
            ),
            sample("b", "fio j.fio", vec![text(&fio_log, log)]),
            sample("c", "fio j.fio", vec![text(&fio_log, log)]),
        ] {
            store.add_sample(run, &s).unwrap();
        }
        store
            .finish_run(run, RunStatus::Complete, chrono::Utc::now())
            .unwrap();
        let cur = store.samples(run).unwrap();
        let sections = vec![("c".to_string(), "a".to_string()), ("c".into(), "b".into())];
        let name = |c: &str| c.to_string();
        let wanted = Wanted {
            base: &[],
            cur: &cur,
            side_runs: vec![run],
            medians: vec![("c".into(), "b".into(), "iops".into())],
            profiles: vec![("c".into(), "b".into())],
            sections: &sections,
            name: &name,
        };
        let x = read(&store, &wanted).unwrap();
        assert_eq!(x.history_runs.len(), 1);
        assert_eq!(x.medians.len(), 1);
        assert_eq!(x.medians[0].len(), 1);
        assert_eq!(x.medians[0][0].median, 100.0);
        assert!(x.profiles[0].0.is_none() && x.profiles[0].1.is_none());
        assert_eq!(x.iterations.len(), 1);
        assert_eq!(
            x.iterations[0].at,
            SampleAt {
                base: false,
                index: 0
            }
        );
        let e = x.iterations[0].rows.as_ref().unwrap_err();
        assert!(
            e.starts_with(&format!("{FSMARK_ITERATIONS} is not valid")),
            "{e}"
        );
        // Test c has no section: its log is not read.
        assert_eq!(x.fio_logs.len(), 1);
        assert_eq!(
            x.fio_logs[0].at,
            SampleAt {
                base: false,
                index: 1
            }
        );
        let files = x.fio_logs[0].files.as_ref().unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].kind, FioLogKind::Clat);
        let series = files[0].series.as_ref().unwrap();
        assert_eq!(series.len(), 1);
        assert_eq!((series[0].ddir, series[0].lines), (1, 2));
        assert_eq!(series[0].points.len(), 2);
    }
}
