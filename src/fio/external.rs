//! fio 3.33 as a driver: [`parse`] reads its JSON output (`--output-format=json` or `json+`),
//! [`ExternalFio`] runs the real binary on a job file in the target directory.
//!
//! Why: fio is the reference I/O benchmark; reading its JSON into the native engine's metric
//! names (`read_iops`, `write_clat_ns_p99`, `usr_cpu`, `elapsed`, ...) with the native engine's
//! arithmetic lets the two engines' runs, and imported fio results, compare. Both feed the one
//! metric catalogue, [`crate::fio::metrics`], which holds every rule (directions, rates, kinds,
//! headline); this module only merges the reported jobs with fio's group_reporting rules (bytes
//! and I/Os summed, the longest runtime, latency means weighted by their counts, CPU time over
//! the summed job runtimes) into the catalogue's summary.
//!
//! Percentiles cannot be averaged. With `json+` output fio prints each job's completion-latency
//! histogram (`clat_ns.bins`, in the same log-linear layout as the native engine's); those are
//! merged and read with fio's percentile rule, so `*_clat_ns_p50`/`p99` of several jobs are
//! exactly what fio's group_reporting would print, and the histograms are kept. With plain
//! `json`, a single reported job's own percentiles are used; for several jobs without bins the
//! percentiles are absent, never estimated. The runner always asks for `json+`.
//!
//! What this module must never do: read fio's human-readable output, or accept a JSON value of
//! the wrong type as zero: a present field with the wrong type is an error naming its path.

use crate::fio::metrics;
use crate::model::{HistogramRecord, Unit};
use crate::probe::histogram::{self, Histogram};
use crate::workload::external::{FIO, ParseError, run_child, unreadable};
use crate::workload::{Measurements, RunContext, Workload, WorkloadError};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;

const TOOL: &str = "fio";

/// count, min, max and mean of one latency (`slat_ns`, `clat_ns`, `lat_ns`), with fio's
/// percentiles and, from `json+`, its histogram.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioLatency {
    /// `N`.
    pub n: u64,
    /// `min`, ns.
    pub min: u64,
    /// `max`, ns.
    pub max: u64,
    /// `mean`, ns.
    pub mean: f64,
    /// `percentile`: (percent, ns) in the order printed.
    pub percentiles: Vec<(f64, u64)>,
    /// `bins` (json+): (bucket value in ns, count), the bucket values being fio's
    /// `plat_idx_to_val` midpoints.
    pub bins: Option<Vec<(u64, u64)>>,
}

impl FioLatency {
    /// The percentile fio printed for `p` percent, if it printed one.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        self.percentiles
            .iter()
            .find(|(q, _)| (q - p).abs() < 1e-9)
            .map(|(_, v)| *v)
    }
}

/// One direction (`read`, `write`) of a reported job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioDirection {
    /// `io_bytes`.
    pub io_bytes: u64,
    /// `total_ios`.
    pub total_ios: u64,
    /// `runtime`, ms.
    pub runtime_ms: u64,
    /// `slat_ns`.
    pub slat: FioLatency,
    /// `clat_ns`.
    pub clat: FioLatency,
    /// `lat_ns`.
    pub lat: FioLatency,
}

/// One entry of `jobs`: a job clone, or with group_reporting a whole group.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioJob {
    /// `jobname`.
    pub name: String,
    /// `groupid`.
    pub groupid: u64,
    /// `error` (0 when the job succeeded).
    pub error: i64,
    /// `elapsed`, whole seconds.
    pub elapsed_s: u64,
    /// `job options`, as printed (strings).
    pub options: BTreeMap<String, String>,
    /// `read`.
    pub read: FioDirection,
    /// `write`.
    pub write: FioDirection,
    /// `trim`.
    pub trim: FioDirection,
    /// `job_runtime`, ms.
    pub job_runtime_ms: u64,
    /// `usr_cpu`, percent of job_runtime.
    pub usr_cpu: f64,
    /// `sys_cpu`, percent of job_runtime.
    pub sys_cpu: f64,
    /// The direction objects (`read`, `write`, `trim`) the entry lacks; fio 3.33 always prints
    /// them all, so a lack means a cut or edited document (an importer must not read it as no
    /// I/O).
    pub absent: Vec<&'static str>,
}

/// Everything read from one fio JSON document.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioOutput {
    /// `fio version` (`fio-3.33`).
    pub version: String,
    /// `timestamp_ms`: when fio wrote the results, ms since the epoch.
    pub timestamp_ms: Option<u64>,
    /// `global options`.
    pub global_options: BTreeMap<String, String>,
    /// `jobs`, in order.
    pub jobs: Vec<FioJob>,
    /// Line of the opening `{` in the text given to [`parse`] (1-based).
    pub json_line: usize,
}

/// A JSON path for error messages.
#[derive(Clone)]
struct At(String);

impl At {
    fn key(&self, k: &str) -> At {
        At(format!("{}.{k}", self.0))
    }
    fn index(&self, i: usize) -> At {
        At(format!("{}[{i}]", self.0))
    }
}

struct Reader {
    line: usize,
}

impl Reader {
    fn err(&self, at: &At, what: &str) -> ParseError {
        ParseError::new(TOOL, self.line, format!("{}: {what}", at.0))
    }

    fn object<'v>(&self, v: &'v Value, at: &At) -> Result<&'v Map<String, Value>, ParseError> {
        v.as_object()
            .ok_or_else(|| self.err(at, "expected an object"))
    }

    fn field<'v>(
        &self,
        o: &'v Map<String, Value>,
        at: &At,
        k: &str,
    ) -> Result<&'v Value, ParseError> {
        o.get(k).ok_or_else(|| self.err(&at.key(k), "missing"))
    }

    /// An unsigned integer; fio prints some as floats with a zero fraction in other modes.
    fn u64_of(&self, v: &Value, at: &At) -> Result<u64, ParseError> {
        if let Some(u) = v.as_u64() {
            return Ok(u);
        }
        match v.as_f64() {
            Some(f) if f >= 0.0 && f.fract() == 0.0 && f < 1.8e19 => Ok(f as u64),
            _ => Err(self.err(at, &format!("expected a whole number >= 0, found {v}"))),
        }
    }

    fn u64_field(&self, o: &Map<String, Value>, at: &At, k: &str) -> Result<u64, ParseError> {
        self.u64_of(self.field(o, at, k)?, &at.key(k))
    }

    fn f64_field(&self, o: &Map<String, Value>, at: &At, k: &str) -> Result<f64, ParseError> {
        let v = self.field(o, at, k)?;
        v.as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .ok_or_else(|| self.err(&at.key(k), &format!("expected a number >= 0, found {v}")))
    }

    fn options(
        &self,
        o: &Map<String, Value>,
        at: &At,
        k: &str,
    ) -> Result<BTreeMap<String, String>, ParseError> {
        let Some(v) = o.get(k) else {
            return Ok(BTreeMap::new());
        };
        let at = at.key(k);
        let mut out = BTreeMap::new();
        for (key, val) in self.object(v, &at)? {
            let s = match val {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return Err(self.err(&at.key(key), "expected a string")),
            };
            out.insert(key.clone(), s);
        }
        Ok(out)
    }

    fn latency(&self, v: &Value, at: &At) -> Result<FioLatency, ParseError> {
        let o = self.object(v, at)?;
        let mut l = FioLatency {
            n: self.u64_field(o, at, "N")?,
            min: self.u64_field(o, at, "min")?,
            max: self.u64_field(o, at, "max")?,
            mean: self.f64_field(o, at, "mean")?,
            percentiles: Vec::new(),
            bins: None,
        };
        if l.n > 0 && l.min > l.max {
            return Err(self.err(at, &format!("min {} is above max {}", l.min, l.max)));
        }
        if let Some(p) = o.get("percentile") {
            let pat = at.key("percentile");
            for (k, v) in self.object(p, &pat)? {
                let q: f64 = k
                    .parse()
                    .ok()
                    .filter(|q: &f64| *q > 0.0 && *q <= 100.0)
                    .ok_or_else(|| self.err(&pat, &format!("'{k}' is not a percentage")))?;
                l.percentiles.push((q, self.u64_of(v, &pat.key(k))?));
            }
        }
        if let Some(b) = o.get("bins") {
            let bat = at.key("bins");
            let mut bins = Vec::new();
            let mut total = 0u64;
            for (k, v) in self.object(b, &bat)? {
                let value: u64 = k
                    .parse()
                    .map_err(|_| self.err(&bat, &format!("bucket '{k}' is not a whole number")))?;
                let c = self.u64_of(v, &bat.key(k))?;
                total = total.saturating_add(c);
                bins.push((value, c));
            }
            if total != l.n {
                return Err(self.err(
                    &bat,
                    &format!("the buckets hold {total} values but N is {}", l.n),
                ));
            }
            l.bins = Some(bins);
        }
        Ok(l)
    }

    fn direction(
        &self,
        o: &Map<String, Value>,
        at: &At,
        k: &str,
    ) -> Result<FioDirection, ParseError> {
        let Some(v) = o.get(k) else {
            return Ok(FioDirection::default());
        };
        let at = at.key(k);
        let d = self.object(v, &at)?;
        let lat = |name: &str| -> Result<FioLatency, ParseError> {
            match d.get(name) {
                Some(v) => self.latency(v, &at.key(name)),
                None => Ok(FioLatency::default()),
            }
        };
        Ok(FioDirection {
            io_bytes: self.u64_field(d, &at, "io_bytes")?,
            total_ios: self.u64_field(d, &at, "total_ios")?,
            runtime_ms: self.u64_field(d, &at, "runtime")?,
            slat: lat("slat_ns")?,
            clat: lat("clat_ns")?,
            lat: lat("lat_ns")?,
        })
    }

    fn job(&self, v: &Value, at: &At) -> Result<FioJob, ParseError> {
        let o = self.object(v, at)?;
        let name = self
            .field(o, at, "jobname")?
            .as_str()
            .ok_or_else(|| self.err(&at.key("jobname"), "expected a string"))?
            .to_string();
        let error = self
            .field(o, at, "error")?
            .as_i64()
            .ok_or_else(|| self.err(&at.key("error"), "expected a whole number"))?;
        Ok(FioJob {
            name,
            groupid: self.u64_field(o, at, "groupid")?,
            error,
            elapsed_s: match o.get("elapsed") {
                Some(v) => self.u64_of(v, &at.key("elapsed"))?,
                None => 0,
            },
            options: self.options(o, at, "job options")?,
            read: self.direction(o, at, "read")?,
            write: self.direction(o, at, "write")?,
            trim: self.direction(o, at, "trim")?,
            job_runtime_ms: self.u64_field(o, at, "job_runtime")?,
            usr_cpu: self.f64_field(o, at, "usr_cpu")?,
            sys_cpu: self.f64_field(o, at, "sys_cpu")?,
            absent: metrics::DIRECTIONS
                .into_iter()
                .filter(|d| !o.contains_key(*d))
                .collect(),
        })
    }
}

/// Read fio 3.33's JSON output. Text before the first line that starts with `{` (fio's notes
/// and warnings) is skipped, and so is text after the document. Syntax errors carry the line in
/// `text`; errors in the document's content name the JSON path (`jobs[1].read.io_bytes`) and the
/// line of its opening `{`.
pub fn parse(text: &str) -> Result<FioOutput, ParseError> {
    let (offset, line) = json_start(text).ok_or_else(|| {
        let first = text.lines().map(str::trim).find(|l| !l.is_empty());
        match first {
            Some(l) => ParseError::new(TOOL, 1, format!("no JSON document; fio said: {l}")),
            None => ParseError::new(TOOL, 0, "no JSON document (empty output)"),
        }
    })?;
    let doc = &text[offset..];
    let mut stream = serde_json::Deserializer::from_str(doc).into_iter::<Value>();
    let value = match stream.next() {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            // serde_json counts a line after a final newline; an error there is at the end.
            let last = text.lines().count().max(1);
            return Err(ParseError::new(
                TOOL,
                (line + e.line().saturating_sub(1)).min(last),
                format!("invalid JSON: {e}"),
            ));
        }
        None => return Err(ParseError::new(TOOL, line, "no JSON document")),
    };
    let r = Reader { line };
    let root = At("$".into());
    let o = r.object(&value, &root)?;
    let version = r
        .field(o, &root, "fio version")?
        .as_str()
        .ok_or_else(|| r.err(&root.key("fio version"), "expected a string"))?
        .to_string();
    let timestamp_ms = match o.get("timestamp_ms") {
        Some(v) => Some(r.u64_of(v, &root.key("timestamp_ms"))?),
        None => None,
    };
    let jat = root.key("jobs");
    let jobs = r
        .field(o, &root, "jobs")?
        .as_array()
        .ok_or_else(|| r.err(&jat, "expected an array"))?
        .iter()
        .enumerate()
        .filter(|(_, j)| !is_placeholder(j))
        .map(|(i, j)| r.job(j, &jat.index(i)))
        .collect::<Result<Vec<_>, _>>()?;
    if jobs.is_empty() {
        return Err(r.err(&jat, "no jobs"));
    }
    Ok(FioOutput {
        version,
        timestamp_ms,
        global_options: r.options(o, &root, "global options")?,
        jobs,
        json_line: line,
    })
}

/// fio 3.33 prints an empty entry (no `jobname`, `groupid` 4294967295, no I/O) after a group
/// whose later jobs are merged into an earlier one by group_reporting; it is not a job.
fn is_placeholder(j: &Value) -> bool {
    let no_io = |d: &str| {
        j.get(d)
            .and_then(|d| d.get("io_bytes"))
            .and_then(Value::as_u64)
            .is_none_or(|b| b == 0)
    };
    j.get("jobname").is_none()
        && j.get("groupid").and_then(Value::as_u64) == Some(u32::MAX as u64)
        && no_io("read")
        && no_io("write")
}

/// Byte offset and 1-based line of the first line whose first non-blank character is `{`.
fn json_start(text: &str) -> Option<(usize, usize)> {
    let mut offset = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        let trimmed = l.trim_start();
        if trimmed.starts_with('{') {
            return Some((offset + (l.len() - trimmed.len()), i + 1));
        }
        offset += l.len();
    }
    None
}

/// Which directions a job reports: those its `rw` does (job, then global options, default
/// `read`) by the metric catalogue's rule ([`metrics::Reported`]), and those with I/Os: with
/// group_reporting, fio prints the options of a group's first job only, so a group of a reader
/// and a writer shows one `rw`.
pub(crate) fn rw_directions(job: &FioJob, global: &BTreeMap<String, String>) -> metrics::Reported {
    let rw = job
        .options
        .get("rw")
        .or_else(|| job.options.get("readwrite"))
        .or_else(|| global.get("rw"))
        .or_else(|| global.get("readwrite"))
        .map(String::as_str)
        .unwrap_or("read");
    let by_rw = metrics::Reported::of(metrics::rw_mode_named(rw));
    let with_io = job.directions().map(|d| d.total_ios > 0);
    metrics::Reported([0, 1, 2].map(|i| by_rw.0[i] || with_io[i]))
}

impl FioJob {
    /// `read`, `write`, `trim`, in [`metrics::DIRECTIONS`] order.
    pub fn directions(&self) -> [&FioDirection; 3] {
        [&self.read, &self.write, &self.trim]
    }
}

/// A latency merged over entries (fio's sum_thread_stats: counts summed, means weighted by
/// counts, the smallest min and largest max, json+ bins merged into one histogram).
struct MergedLatency {
    n: u64,
    min: u64,
    max: u64,
    mean: f64,
    /// The percentiles fio printed, when there was one entry with values.
    printed: Option<(Option<u64>, Option<u64>)>,
    histogram: Option<Histogram>,
}

impl MergedLatency {
    fn summary(&self) -> metrics::LatencySummary<'_> {
        let (p50, p99) = match &self.histogram {
            Some(h) => metrics::p50_p99(h),
            None => self.printed.unwrap_or((None, None)),
        };
        metrics::LatencySummary {
            count: self.n,
            min: self.min,
            max: self.max,
            mean: self.mean,
            p50,
            p99,
            histogram: self.histogram.as_ref(),
        }
    }
}

fn merge_latency(parts: &[&FioLatency]) -> MergedLatency {
    let used: Vec<&&FioLatency> = parts.iter().filter(|l| l.n > 0).collect();
    let n: u64 = used.iter().map(|l| l.n).fold(0, u64::saturating_add);
    let mean = if n == 0 {
        0.0
    } else {
        // Weights summing to 1 keep the mean finite whatever the printed means.
        used.iter()
            .map(|l| l.mean * (l.n as f64 / n as f64))
            .sum::<f64>()
    };
    let min = used.iter().map(|l| l.min).min().unwrap_or(0);
    let max = used.iter().map(|l| l.max).max().unwrap_or(0);
    let histogram = if !used.is_empty() && used.iter().all(|l| l.bins.is_some()) {
        let mut buckets: BTreeMap<u32, u64> = BTreeMap::new();
        for l in &used {
            for (value, count) in l.bins.as_deref().unwrap_or_default() {
                let e = buckets
                    .entry(histogram::value_to_index(*value) as u32)
                    .or_default();
                *e = e.saturating_add(*count);
            }
        }
        let rec = HistogramRecord {
            name: String::new(),
            unit: Unit::Nanoseconds,
            layout: histogram::LAYOUT.to_string(),
            count: n,
            min,
            max,
            sum: (mean * n as f64).round() as u128,
            buckets: buckets.into_iter().filter(|(_, c)| *c > 0).collect(),
        };
        Histogram::from_record(&rec).ok()
    } else {
        None
    };
    let printed = match used.as_slice() {
        [one] => Some((one.percentile(50.0), one.percentile(99.0))),
        _ => None,
    };
    MergedLatency {
        n,
        min,
        max,
        mean,
        printed,
        histogram,
    }
}

/// One direction merged over entries: sums, the longest runtime, merged latencies.
struct MergedDirection {
    io_bytes: u64,
    total_ios: u64,
    runtime_ms: u64,
    slat: MergedLatency,
    clat: MergedLatency,
    lat: MergedLatency,
}

impl MergedDirection {
    fn of(dirs: &[&FioDirection]) -> MergedDirection {
        let merge = |f: fn(&FioDirection) -> &FioLatency| {
            merge_latency(&dirs.iter().map(|d| f(d)).collect::<Vec<_>>())
        };
        MergedDirection {
            io_bytes: dirs.iter().map(|d| d.io_bytes).fold(0, u64::saturating_add),
            total_ios: dirs
                .iter()
                .map(|d| d.total_ios)
                .fold(0, u64::saturating_add),
            runtime_ms: dirs.iter().map(|d| d.runtime_ms).max().unwrap_or(0),
            slat: merge(|d| &d.slat),
            clat: merge(|d| &d.clat),
            lat: merge(|d| &d.lat),
        }
    }

    fn summary(&self) -> metrics::DirSummary<'_> {
        metrics::DirSummary {
            io_bytes: self.io_bytes,
            total_ios: self.total_ios,
            runtime_ms: self.runtime_ms,
            slat: self.slat.summary(),
            clat: self.clat.summary(),
            lat: self.lat.summary(),
        }
    }
}

/// The metrics and histograms of `jobs` merged, by the metric catalogue ([`metrics`]); the
/// directions are those the jobs' `rw` do. CPU shares are the job-runtime-weighted means of
/// fio's (fio's own CPU time over the summed runtimes, from the shares it prints). `elapsed` is
/// the longest job's `elapsed` (whole seconds, as fio prints it).
pub fn measurements_of(jobs: &[&FioJob], global: &BTreeMap<String, String>) -> Measurements {
    let mut reported = [false; 3];
    for j in jobs {
        let r = rw_directions(j, global);
        for (a, b) in reported.iter_mut().zip(r.0) {
            *a |= b;
        }
    }
    let merged: Vec<Option<MergedDirection>> = (0..3)
        .map(|di| {
            reported[di].then(|| {
                let dirs: Vec<&FioDirection> = jobs.iter().map(|j| j.directions()[di]).collect();
                MergedDirection::of(&dirs)
            })
        })
        .collect();
    let runtime: u64 = jobs
        .iter()
        .map(|j| j.job_runtime_ms)
        .fold(0, u64::saturating_add);
    let cpu = |f: fn(&FioJob) -> f64| {
        if runtime == 0 {
            0.0
        } else {
            jobs.iter()
                .map(|j| f(j) * (j.job_runtime_ms as f64 / runtime as f64))
                .sum::<f64>()
        }
    };
    let summary = metrics::RunSummary {
        dirs: [0, 1, 2].map(|di| merged[di].as_ref().map(MergedDirection::summary)),
        usr_cpu: cpu(|j| j.usr_cpu),
        sys_cpu: cpu(|j| j.sys_cpu),
        elapsed_s: jobs.iter().map(|j| j.elapsed_s).max().unwrap_or(0) as f64,
        sync: None,
    };
    metrics::measurements(&summary)
}

impl FioOutput {
    /// The native engine's metrics over every reported job merged, as `measurements()` does.
    pub fn measurements(&self) -> Measurements {
        let jobs: Vec<&FioJob> = self.jobs.iter().collect();
        measurements_of(&jobs, &self.global_options)
    }

    /// Jobs that reported an error, as `name: error N`.
    pub fn errors(&self) -> Vec<String> {
        self.jobs
            .iter()
            .filter(|j| j.error != 0)
            .map(|j| format!("{}: error {}", j.name, j.error))
            .collect()
    }
}

/// The real fio on a job file: `fio --output-format=json+ -` with the job text on stdin, run in
/// the target directory (relative `directory=`/`filename=` resolve there, as for the native
/// engine). A `[global]` section with `thread` is put before the job text, so that jobs are
/// threads as in the native engine (fio's own default forks a process per job); fio's line
/// numbers in job-file errors are therefore two more than the user's.
#[derive(Clone, Debug)]
pub struct ExternalFio {
    job: String,
    binary: Option<PathBuf>,
}

impl ExternalFio {
    /// A job file's text (`[global]` and job sections, as for the native engine).
    pub fn new(job_text: &str) -> Result<ExternalFio, WorkloadError> {
        let has_job = job_text
            .lines()
            .map(str::trim)
            .any(|l| l.starts_with('[') && l.ends_with(']') && l != "[global]" && l.len() > 2);
        if !has_job {
            return Err(WorkloadError::InvalidOptions(
                "fio job: no job section (a `[name]` line other than `[global]`)".into(),
            ));
        }
        Ok(ExternalFio {
            job: job_text.to_string(),
            binary: None,
        })
    }

    /// Run this binary instead of `fio` from `PATH`.
    pub fn with_binary(mut self, path: impl Into<PathBuf>) -> Self {
        self.binary = Some(path.into());
        self
    }

    /// The job text fio reads: the user's, after a `[global]` section with `thread`.
    pub fn job_text(&self) -> String {
        format!("[global]\nthread\n{}", self.job)
    }

    /// A shell command that reproduces the run in the target directory, for the sample's
    /// workload description.
    pub fn command_line(&self) -> String {
        let job = self.job_text();
        let nl = if job.ends_with('\n') { "" } else { "\n" };
        format!("fio --output-format=json+ - <<'EOF'\n{job}{nl}EOF")
    }
}

impl Workload for ExternalFio {
    fn engine(&self) -> &'static str {
        "fio (external)"
    }

    fn run(&self, ctx: &RunContext<'_>) -> Result<Measurements, WorkloadError> {
        let bin = FIO.locate(self.binary.as_deref())?;
        ctx.progress.phase("fio (external)");
        let mut cmd = std::process::Command::new(bin);
        cmd.arg("--output-format=json+").arg("-");
        // Jobs run as threads of one fio process, as in the native engine (whose `thread` is
        // always on); fio's forked jobs would each start a session of their own.
        let out = run_child(FIO, cmd, ctx.dir, Some(self.job_text()), ctx)?.succeeded()?;
        let parsed = parse(&out.stdout).map_err(|e| unreadable(e, &out))?;
        let errors = parsed.errors();
        if !errors.is_empty() {
            return Err(WorkloadError::InvalidOptions(format!(
                "fio reported job errors: {}; stderr:\n{}",
                errors.join(", "),
                out.stderr
            )));
        }
        let mut m = parsed.measurements();
        // fio prints whole seconds; the native `elapsed` is the wall time of the whole run,
        // which the runner measures the same way (spawn to exit).
        if let Some(e) = m.metrics.iter_mut().find(|x| x.name == "elapsed") {
            e.value = out.wall.as_secs_f64();
        }
        m.attachments.extend(out.attachments());
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the metric catalogue changed in this driver's metrics (they were defined here
    /// apart from the native engine's until then): each assertion is one change.
    #[test]
    fn the_catalogue_gives_the_native_engines_directions_and_empty_percentiles() {
        // rw=trim: was read_* and write_* (all 0) and no trim_*; now trim_* only, from the
        // `trim` object fio prints.
        let empty = lat(0, 0, 0, 0.0);
        let mut trim: Value = serde_json::from_str(&job("t", "trim", 0, 0, 0, &empty)).unwrap();
        let trimmed: Value = serde_json::json!({
            "io_bytes": 8192, "total_ios": 2, "runtime": 4,
            "slat_ns": {"min": 0, "max": 0, "mean": 0.0, "N": 0},
            "clat_ns": {"min": 10, "max": 30, "mean": 20.0, "N": 2},
            "lat_ns": {"min": 0, "max": 0, "mean": 0.0, "N": 0},
        });
        trim["trim"] = trimmed;
        let trim = trim.to_string();
        let m = parse(&doc(&[trim])).unwrap().measurements();
        let names: Vec<&str> = m.metrics.iter().map(|x| x.name.as_str()).collect();
        assert!(
            names
                .iter()
                .all(|n| !n.starts_with("read_") && !n.starts_with("write_")),
            "{names:?}"
        );
        assert_eq!(get(&m, "trim_iops"), Some(500.0));
        assert_eq!(get(&m, "trim_bw_bytes"), Some(2_048_000.0));
        assert!(
            m.metrics
                .iter()
                .any(|x| x.name == "trim_iops" && x.headline)
        );
        // A direction the job does without a completion: p50/p99 were absent, now 0 (the
        // native engine's, as fio's min/max/mean of no samples).
        let idle = job("w", "write", 0, 0, 0, &empty);
        let m = parse(&doc(&[idle])).unwrap().measurements();
        assert_eq!(get(&m, "write_clat_ns_p50"), Some(0.0));
        assert_eq!(get(&m, "write_clat_ns_p99"), Some(0.0));
        // A write job's verify reads (fio counts them as reads): read_* metrics, as before;
        // the native engine, which knows every job's rw, gives none (the one difference left).
        let verify = job("v", "write", 4096, 1, 1, &lat(1, 5, 5, 5.0)).replace(
            r#""read":{"io_bytes":0,"total_ios":0,"runtime":0"#,
            r#""read":{"io_bytes":4096,"total_ios":1,"runtime":1"#,
        );
        let m = parse(&doc(&[verify])).unwrap().measurements();
        assert_eq!(get(&m, "read_iops"), Some(1000.0));
        // An rw this fio version does not know: the directions with I/Os, as before.
        let odd = job("o", "sideways", 4096, 1, 1, &lat(1, 5, 5, 5.0));
        let m = parse(&doc(&[odd])).unwrap().measurements();
        assert_eq!(get(&m, "write_iops"), Some(1000.0));
        assert!(m.metrics.iter().all(|x| !x.name.starts_with("read_")));
    }

    fn lat(n: u64, min: u64, max: u64, mean: f64) -> String {
        format!(r#"{{"min":{min},"max":{max},"mean":{mean},"stddev":0.0,"N":{n}}}"#)
    }

    fn doc(jobs: &[String]) -> String {
        format!(
            r#"{{"fio version":"fio-3.33","timestamp_ms":1000,"global options":{{"bs":"4k"}},"jobs":[{}]}}"#,
            jobs.join(",")
        )
    }

    fn job(name: &str, rw: &str, io: u64, ios: u64, rt: u64, clat: &str) -> String {
        let empty = lat(0, 0, 0, 0.0);
        format!(
            r#"{{"jobname":"{name}","groupid":0,"error":0,"elapsed":2,"job options":{{"rw":"{rw}"}},
            "read":{{"io_bytes":0,"total_ios":0,"runtime":0,"slat_ns":{empty},"clat_ns":{empty},"lat_ns":{empty}}},
            "write":{{"io_bytes":{io},"total_ios":{ios},"runtime":{rt},"slat_ns":{empty},"clat_ns":{clat},"lat_ns":{clat}}},
            "job_runtime":{rt},"usr_cpu":10.0,"sys_cpu":{sys},"ctx":1}}"#,
            sys = rt as f64 / 10.0
        )
    }

    fn get(m: &Measurements, n: &str) -> Option<f64> {
        m.metrics.iter().find(|x| x.name == n).map(|x| x.value)
    }

    #[test]
    fn several_jobs_merge_with_fios_arithmetic() {
        let a = job(
            "a",
            "write",
            4096 * 100,
            100,
            100,
            &lat(100, 1000, 5000, 2000.0),
        );
        let b = job(
            "b",
            "randwrite",
            4096 * 300,
            300,
            200,
            &lat(300, 500, 9000, 3000.0),
        );
        let p = parse(&format!("note: something\n{}", doc(&[a, b]))).unwrap();
        assert_eq!(p.json_line, 2);
        let m = p.measurements();
        // io summed, runtime the longest.
        assert_eq!(get(&m, "write_iops"), Some(2000.0));
        assert_eq!(
            get(&m, "write_bw_bytes"),
            Some(4096.0 * 400.0 * 1000.0 / 200.0)
        );
        assert_eq!(get(&m, "write_io_kbytes"), Some(1600.0));
        assert_eq!(get(&m, "write_clat_ns_mean"), Some(2750.0));
        assert_eq!(get(&m, "write_clat_ns_max"), Some(9000.0));
        assert_eq!(get(&m, "write_lat_ns_min"), Some(500.0));
        assert_eq!(
            get(&m, "write_clat_ns_p99"),
            None,
            "no bins, two jobs: no percentile"
        );
        // CPU over summed runtimes: sys = (10*100 + 20*200) / 300.
        assert!((get(&m, "sys_cpu").unwrap() - 5000.0 / 300.0).abs() < 1e-9);
        assert_eq!(get(&m, "usr_cpu"), Some(10.0));
        assert_eq!(get(&m, "elapsed"), Some(2.0));
        assert!(m.metrics.iter().all(|x| !x.name.starts_with("read_")));
    }

    #[test]
    fn huge_printed_means_stay_finite() {
        let a = job("a", "write", 1, 1, 1, &lat(1_000_000, 1, 2, 1e308));
        let b = job("b", "write", 1, 1, 1, &lat(1_000_000, 1, 2, 1e308));
        let m = parse(&doc(&[a, b])).unwrap().measurements();
        assert!(
            m.metrics.iter().all(|x| x.value.is_finite()),
            "{:?}",
            m.metrics
        );
        assert_eq!(get(&m, "write_clat_ns_mean"), Some(1e308));
    }

    #[test]
    fn errors_name_the_path_or_the_line() {
        let a = job("a", "write", 1, 1, 1, &lat(1, 1, 1, 1.0));
        let bad = doc(&[a.replace(r#""io_bytes":1,"#, r#""io_bytes":"x","#)]);
        let e = parse(&bad).unwrap_err();
        assert!(e.message.contains("jobs[0].write.io_bytes"), "{e}");
        let e = parse("fio: job file error\n{\n  \"fio version\": ,\n}").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        let e = parse("fio: pid=1, err=2/file:filesetup.c\n").unwrap_err();
        assert!(e.message.contains("no JSON document"), "{e}");
        let e = parse(r#"{"fio version":"fio-3.33","jobs":[]}"#).unwrap_err();
        assert!(e.message.contains("no jobs"), "{e}");
    }

    #[test]
    fn bins_must_add_up_to_n() {
        let clat = r#"{"min":1,"max":2,"mean":1.5,"stddev":0,"N":3,"bins":{"1":1,"2":1}}"#;
        let e = parse(&doc(&[job("a", "write", 1, 1, 1, clat)])).unwrap_err();
        assert!(e.message.contains("hold 2 values but N is 3"), "{e}");
    }

    #[test]
    fn new_wants_a_job_section() {
        assert!(ExternalFio::new("[global]\nbs=4k\n").is_err());
        let w = ExternalFio::new("[w]\nrw=write\n").unwrap();
        assert_eq!(w.job_text(), "[global]\nthread\n[w]\nrw=write\n");
        assert_eq!(
            w.command_line(),
            "fio --output-format=json+ - <<'EOF'\n[global]\nthread\n[w]\nrw=write\nEOF"
        );
    }
}
