//! Suite files (`fsdelta run --suite FILE.toml`): a user's own list of tests, each naming its
//! workload and options.
//!
//! ```toml
//! name = "mine"                      # optional; default: the file name without .toml
//! # ondisk = false                    # optional; default true: measure what each sample left
//!                                     # on disk (space, compression, extents, fs counters)
//!
//! [margins]                          # optional verdict margins in percent (statistics.md)
//! eps = 2
//! delta = 5
//! delta_tail = 10
//! delta_max = 20
//!
//! [[test]]
//! name = "applaunch"
//! workload = "command"              # fsmark | fio | dbench | stream | copy | untar | command
//! # engine = "external"             # fsmark, fio, dbench: run the real tool, read its output
//! # events = ["ext4:ext4_da_write_begin", "btrfs:*"]   # any test: tracepoints counted
//! command = "./launch-bench --app camera"
//! timeout = 120                     # seconds, command only
//! [[test.metric]]
//! name = "launch_ms"
//! regex = 'launch took (\d+) ms'    # or json = "results.launch_ms"
//! unit = "ms"
//! direction = "lower"               # lower | higher | neutral
//! # required = true                # without it a missing metric is only a warning
//!
//! [[test]]
//! name = "tiny"
//! workload = "fsmark"
//! args = "-s 4096 -n 200 -t 1 -S 0"
//!
//! [[test]]
//! name = "rr"
//! workload = "fio"
//! job = """
//! rw=randread
//! bs=4k
//! size=64m
//! """
//! # sweep = { iodepth = [1, 4, 16] }   # fio only: one test a point, rr[iodepth=1] ...,
//! #                                   # a response curve (also bs, numjobs, rate_iops)
//! ```
//!
//! Pure: the CLI edge reads the file and hands in its text; this module must never touch the
//! filesystem. Unknown keys are errors naming the key, the test and how to fix it, because a
//! silently ignored option would publish a number measured differently from what the file says.

use super::raw::{Loose, unknown_key};
use super::suite::{CommandMetricSpec, CopyPath, EngineSpec, Suite, SuiteMargins, TestSpec};
use serde::Deserialize;
use serde::de::IntoDeserializer;
use toml::de::{DeTable, DeValue};

/// A suite file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct SuiteFileError {
    /// The file as named by the user.
    pub file: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

const WORKLOADS: &str = "fsmark, fio, dbench, stream, copy, untar, command";

/// The keys of the file's top level (the fields of [`RawSuite`]).
const TOP_KEYS: [&str; 5] = ["name", "test", "margins", "ondisk", "ondisk_remount"];
/// The keys of [margins] (the fields of [`RawMargins`]).
const MARGIN_KEYS: [&str; 4] = ["eps", "delta", "delta_tail", "delta_max"];
/// The keys every test takes, whatever its workload.
const COMMON_KEYS: [&str; 5] = ["name", "workload", "description", "engine", "events"];
/// The keys of a [[test.metric]] (the fields of [`RawMetric`]).
const METRIC_KEYS: [&str; 6] = ["name", "regex", "json", "unit", "direction", "required"];

/// The keys a workload takes besides [`COMMON_KEYS`]; empty for an unknown workload. Together
/// they are the fields of [`RawTest`].
fn keys_of(workload: &str) -> &'static [&'static str] {
    match workload {
        "fsmark" => &["args"],
        "fio" => &["job", "sweep"],
        "dbench" => &["clients", "time", "warmup", "loadfile"],
        "stream" => &[
            "size",
            "block_size",
            "direct",
            "fsync",
            "compressibility",
            "source",
        ],
        "copy" => &["size", "method", "compressibility", "source"],
        "untar" => &["files", "seed", "tarball"],
        "command" => &["command", "metric", "timeout"],
        _ => &[],
    }
}

/// The file's top level as read. Tables and lists ([margins], the tests, a test's metrics and
/// events) are read entry by entry from their place in the file, each into its raw struct, so
/// that every value keeps what it was written as (a date read through a whole-table value
/// would turn into a string).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    name: Option<Loose<String>>,
    ondisk: Option<Loose<bool>>,
    ondisk_remount: Option<Loose<bool>>,
    #[serde(rename = "margins")]
    _margins: Option<serde::de::IgnoredAny>,
    #[serde(rename = "test")]
    _test: Option<serde::de::IgnoredAny>,
}

/// [margins] as read (percentages).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMargins {
    eps: Option<Loose<f64>>,
    delta: Option<Loose<f64>>,
    delta_tail: Option<Loose<f64>>,
    delta_max: Option<Loose<f64>>,
}

/// What every test is checked for first, so that every later message names the test.
#[derive(Deserialize)]
struct RawHead {
    name: Option<Loose<String>>,
    workload: Option<Loose<String>>,
}

/// One [[test]] as read: the keys of every workload; which of them a test may use is checked
/// against [`keys_of`] before it is read into this.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTest {
    #[serde(rename = "name")]
    _name: toml::Value,
    #[serde(rename = "workload")]
    _workload: toml::Value,
    description: Option<Loose<String>>,
    engine: Option<Loose<String>>,
    #[serde(rename = "events")]
    _events: Option<serde::de::IgnoredAny>,
    args: Option<Loose<String>>,
    job: Option<Loose<String>>,
    #[serde(rename = "sweep")]
    _sweep: Option<serde::de::IgnoredAny>,
    clients: Option<Loose<u64>>,
    time: Option<Loose<u64>>,
    warmup: Option<Loose<u64>>,
    loadfile: Option<Loose<String>>,
    size: Option<toml::Value>,
    block_size: Option<toml::Value>,
    direct: Option<Loose<bool>>,
    fsync: Option<Loose<bool>>,
    compressibility: Option<Loose<f64>>,
    source: Option<Loose<String>>,
    method: Option<Loose<String>>,
    files: Option<Loose<u64>>,
    seed: Option<Loose<u64>>,
    tarball: Option<Loose<String>>,
    command: Option<Loose<String>>,
    #[serde(rename = "metric")]
    _metric: Option<serde::de::IgnoredAny>,
    timeout: Option<Loose<f64>>,
}

/// One [[test.metric]] as read. A name, pattern, unit or direction that is not a string counts
/// as missing.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetric {
    name: Option<Loose<String>>,
    regex: Option<Loose<String>>,
    json: Option<Loose<String>>,
    unit: Option<Loose<String>>,
    direction: Option<Loose<String>>,
    required: Option<Loose<bool>>,
}

/// Parse a size with an optional base-1024 suffix (k, m, g, t), as fio writes them.
fn size(v: &toml::Value) -> Result<u64, String> {
    match v {
        toml::Value::Integer(i) if *i > 0 => Ok(*i as u64),
        toml::Value::String(s) => {
            let s = s.trim().to_ascii_lowercase();
            let (num, mult) = match s.chars().last() {
                Some('k') => (&s[..s.len() - 1], 1u64 << 10),
                Some('m') => (&s[..s.len() - 1], 1 << 20),
                Some('g') => (&s[..s.len() - 1], 1 << 30),
                Some('t') => (&s[..s.len() - 1], 1 << 40),
                _ => (s.as_str(), 1),
            };
            num.trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .map(|n| n * mult)
                .ok_or_else(|| format!("'{s}' is not a size (a number with k, m, g or t)"))
        }
        other => Err(format!(
            "{other} is not a size (a number, or a string like \"64m\")"
        )),
    }
}

/// Parse suite-file text; `file` names it in messages and gives the default suite name.
pub fn parse(text: &str, file: &str) -> Result<Suite, SuiteFileError> {
    let err = |message: String| SuiteFileError {
        file: file.to_string(),
        message,
    };
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| err(format!("not valid TOML: {e}")))?;
    if let Some((k, _)) = unknown_key(table.iter().map(|(k, v)| (k.as_str(), v)), &TOP_KEYS) {
        return Err(err(format!(
            "unknown top-level key '{k}' (a suite file has `name`, `ondisk`, [margins] and [[test]] tables)"
        )));
    }
    // Read again with the places kept, so that a value read as a string is one as written
    // (a date is not).
    let doc = DeTable::parse(text).map_err(|e| err(format!("not valid TOML: {e}")))?;
    let raw =
        RawSuite::deserialize(doc.clone().into_deserializer()).map_err(|e| err(e.to_string()))?;
    let margins = match doc.get_ref().get("margins") {
        None => SuiteMargins::default(),
        Some(m) => margins(m).map_err(err)?,
    };
    let name = match raw.name.as_ref().map(Loose::get) {
        Some(Ok(s)) if !s.is_empty() => s.clone(),
        Some(_) => return Err(err("`name` must be a non-empty string".into())),
        None => std::path::Path::new(file)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "suite".into()),
    };
    let tests = match doc.get_ref().get("test").map(|t| t.get_ref()) {
        Some(DeValue::Array(a)) if !a.is_empty() => a,
        _ => {
            return Err(err(
                "no [[test]] table: add at least one test with a name and a workload".into(),
            ));
        }
    };
    let ondisk = boolean(&raw.ondisk, "ondisk", true).map_err(err)?;
    let ondisk_remount = boolean(&raw.ondisk_remount, "ondisk_remount", false).map_err(err)?;
    let mut out: Vec<TestSpec> = Vec::new();
    for (i, t) in tests.iter().enumerate() {
        let specs = test(t, i, &out).map_err(err)?;
        out.extend(specs);
    }
    Ok(Suite {
        name,
        tests: out,
        margins,
        ondisk,
        ondisk_remount,
    })
}

/// [margins], checked: each a percentage above 0 (and below 1000).
fn margins(m: &Spanned<DeValue<'_>>) -> Result<SuiteMargins, String> {
    let DeValue::Table(table) = m.get_ref() else {
        return Err("`margins` must be a [margins] table".into());
    };
    if let Some((k, _)) = unknown_key(keys(table), &MARGIN_KEYS) {
        return Err(format!(
            "unknown margin '{k}' (eps, delta, delta_tail, delta_max, in percent)"
        ));
    }
    let raw = RawMargins::deserialize(m.clone().into_deserializer()).map_err(|e| e.to_string())?;
    let pct = |k: &str, v: &Option<Loose<f64>>| -> Result<Option<f64>, String> {
        let Some(v) = v else { return Ok(None) };
        let pct = *v
            .get()
            .map_err(|other| format!("margins.{k} must be a percentage, not {other}"))?;
        if !(pct > 0.0 && pct < 1000.0) {
            return Err(format!(
                "margins.{k} must be a percentage above 0, not {pct}"
            ));
        }
        Ok(Some(pct))
    };
    Ok(SuiteMargins {
        eps: pct("eps", &raw.eps)?,
        delta: pct("delta", &raw.delta)?,
        delta_tail: pct("delta_tail", &raw.delta_tail)?,
        delta_max: pct("delta_max", &raw.delta_max)?,
    })
}

/// Test number `i` (from 0) of the file, checked against the tests before it (`earlier`): one
/// test, or with `sweep` one a point of its curve ([`crate::plan::suite::sweep`]). Messages
/// are without the file (the caller adds it).
fn test(
    t: &toml::Spanned<DeValue<'_>>,
    i: usize,
    earlier: &[TestSpec],
) -> Result<Vec<TestSpec>, String> {
    let DeValue::Table(table) = t.get_ref() else {
        return Err(format!("test #{} is not a table", i + 1));
    };
    let head = RawHead::deserialize(t.clone().into_deserializer()).map_err(|e| e.to_string())?;
    let tname = match head.name.as_ref().map(Loose::get) {
        Some(Ok(s)) if !s.is_empty() => s.clone(),
        _ => return Err(format!("test #{} has no `name`", i + 1)),
    };
    let terr = |m: String| format!("test '{tname}': {m}");
    if earlier
        .iter()
        .any(|o| o.name == tname || o.name.starts_with(&format!("{tname}[")))
    {
        return Err(terr(
            "a second test with this name; names must be unique".into(),
        ));
    }
    if !tname
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(terr(
            "use letters, digits, '-', '_' and '.' in test names".into(),
        ));
    }
    let Some(Ok(workload)) = head.workload.as_ref().map(Loose::get) else {
        return Err(terr(format!("missing `workload`: one of {WORKLOADS}")));
    };
    let allowed = keys_of(workload);
    if allowed.is_empty() {
        return Err(terr(format!(
            "unknown workload '{workload}': use one of {WORKLOADS}"
        )));
    }
    let known: Vec<&str> = COMMON_KEYS.iter().chain(allowed).copied().collect();
    if let Some((k, _)) = unknown_key(keys(table), &known) {
        return Err(terr(format!(
            "unknown key '{k}' for workload {workload} (it takes: {})",
            allowed.join(", ")
        )));
    }
    let raw =
        RawTest::deserialize(t.clone().into_deserializer()).map_err(|e| terr(e.to_string()))?;
    let external = match string(&raw.engine, "engine").map_err(terr)?.as_deref() {
        None | Some("native") => false,
        Some("external") if ["fsmark", "fio", "dbench"].contains(&workload.as_str()) => true,
        Some("external") => {
            return Err(terr(format!(
                "engine = \"external\" needs a workload the real tools run (fsmark, fio, dbench), not {workload}"
            )));
        }
        Some(other) => {
            return Err(terr(format!(
                "unknown engine '{other}': use native (fsdelta's own) or external (the real tool)"
            )));
        }
    };
    let engine = engine(&raw, table, workload, &tname).map_err(terr)?;
    let events = events(table.get("events")).map_err(terr)?;
    let spec = TestSpec {
        name: tname.clone(),
        description: string(&raw.description, "description")
            .map_err(terr)?
            .unwrap_or_else(|| format!("{workload} test")),
        engine,
        external,
        events,
    };
    match table.get("sweep") {
        None => Ok(vec![spec]),
        Some(v) => {
            let (key, values) = sweep(v).map_err(terr)?;
            crate::plan::suite::sweep(&spec, &key, &values).map_err(terr)
        }
    }
}

/// A test's `sweep = { KEY = [V1, V2, ...] }`: one of the keys a curve is drawn over, with at
/// least two distinct values, each a whole number or a fio size (`"4k"`).
fn sweep(v: &Spanned<DeValue<'_>>) -> Result<(String, Vec<String>), String> {
    let keys = crate::plan::suite::SWEEP_KEYS.join(", ");
    let how = format!(
        "`sweep` takes one of {keys} with a list of values, like sweep = {{ iodepth = [1, 4, 16] }}"
    );
    let toml::Value::Table(table) = written(v)? else {
        return Err(how);
    };
    let mut entries = table.into_iter();
    let (Some((key, list)), None) = (entries.next(), entries.next()) else {
        return Err(format!("{how}; a test sweeps one parameter"));
    };
    if !crate::plan::suite::SWEEP_KEYS.contains(&key.as_str()) {
        return Err(format!("cannot sweep '{key}': {how}"));
    }
    let toml::Value::Array(items) = list else {
        return Err(format!("sweep.{key} must be a list of values, not {list}"));
    };
    let mut values: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let value = match &item {
            toml::Value::Integer(n) if *n > 0 => n.to_string(),
            toml::Value::String(s)
                if !s.is_empty()
                    && s.chars().next().is_some_and(|c| c.is_ascii_digit())
                    && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') =>
            {
                s.clone()
            }
            other => {
                return Err(format!(
                    "sweep.{key}: {other} is not a value to sweep (a whole number above 0, or a size like \"4k\")"
                ));
            }
        };
        if values.contains(&value) {
            return Err(format!("sweep.{key} lists {value} twice"));
        }
        values.push(value);
    }
    if values.len() < 2 {
        return Err(format!(
            "sweep.{key} needs at least two values to draw a curve (one value: set it in the job)"
        ));
    }
    Ok((key, values))
}

/// A string key.
fn string(v: &Option<Loose<String>>, k: &str) -> Result<Option<String>, String> {
    match v.as_ref().map(Loose::get) {
        None => Ok(None),
        Some(Ok(s)) => Ok(Some(s.clone())),
        Some(Err(other)) => Err(format!("`{k}` must be a string, not {other}")),
    }
}

/// A whole-number key.
fn whole(v: &Option<Loose<u64>>, k: &str) -> Result<Option<u64>, String> {
    match v.as_ref().map(Loose::get) {
        None => Ok(None),
        Some(Ok(n)) => Ok(Some(*n)),
        Some(Err(other)) => Err(format!("`{k}` must be a whole number, not {other}")),
    }
}

/// A true-or-false key.
fn boolean(v: &Option<Loose<bool>>, k: &str, default: bool) -> Result<bool, String> {
    match v.as_ref().map(Loose::get) {
        None => Ok(default),
        Some(Ok(b)) => Ok(*b),
        Some(Err(other)) => Err(format!("`{k}` must be true or false, not {other}")),
    }
}

/// A fraction from 0 to 1.
fn fraction(v: &Option<Loose<f64>>, k: &str, default: f64) -> Result<f64, String> {
    match v.as_ref().map(|l| (l.get(), &l.written)) {
        None => Ok(default),
        Some((Ok(f), _)) if (0.0..=1.0).contains(f) => Ok(*f),
        Some((_, written)) => Err(format!("`{k}` must be between 0 and 1, not {written}")),
    }
}

/// A size key ([`size`]).
fn size_key(v: &Option<toml::Value>, k: &str, default: u64) -> Result<u64, String> {
    v.as_ref()
        .map(|v| size(v).map_err(|m| format!("`{k}`: {m}")))
        .unwrap_or(Ok(default))
}

/// A user's file for copy and stream: it sets the data and the size.
fn source(raw: &RawTest) -> Result<Option<std::path::PathBuf>, String> {
    let Some(p) = string(&raw.source, "source")? else {
        return Ok(None);
    };
    for (k, given) in [
        ("size", raw.size.is_some()),
        ("compressibility", raw.compressibility.is_some()),
    ] {
        if given {
            return Err(format!(
                "`source` and `{k}` together: the file sets the size and the data; remove `{k}`"
            ));
        }
    }
    Ok(Some(p.into()))
}

/// The engine of a test of `workload` (one of [`keys_of`]'s), named `tname`.
fn engine(
    raw: &RawTest,
    table: &DeTable<'_>,
    workload: &str,
    tname: &str,
) -> Result<EngineSpec, String> {
    Ok(match workload {
        "fsmark" => EngineSpec::FsMark {
            args: string(&raw.args, "args")?
                .ok_or_else(|| "missing `args` (fs_mark's flags, without -d)".to_string())?
                .split_whitespace()
                .map(String::from)
                .collect(),
        },
        "fio" => {
            let job = string(&raw.job, "job")?.ok_or_else(|| {
                "missing `job` (the job's options, one key=value a line)".to_string()
            })?;
            let job = if job.trim_start().starts_with('[') {
                job
            } else {
                format!("[{tname}]\n{job}")
            };
            EngineSpec::Fio { job }
        }
        "dbench" => EngineSpec::Dbench {
            clients: whole(&raw.clients, "clients")?.unwrap_or(2) as u32,
            seconds: whole(&raw.time, "time")?.unwrap_or(10) as u32,
            warmup_s: whole(&raw.warmup, "warmup")?.map(|w| w as u32),
            loadfile: string(&raw.loadfile, "loadfile")?.map(Into::into),
        },
        "stream" => EngineSpec::Stream {
            size: size_key(&raw.size, "size", 256 << 20)?,
            block_size: size_key(&raw.block_size, "block_size", 1 << 20)?,
            direct: boolean(&raw.direct, "direct", false)?,
            fsync: boolean(&raw.fsync, "fsync", true)?,
            compressibility: fraction(&raw.compressibility, "compressibility", 0.5)?,
            source: source(raw)?,
        },
        "copy" => EngineSpec::Copy {
            size: size_key(&raw.size, "size", 256 << 20)?,
            method: match string(&raw.method, "method")?.as_deref() {
                None | Some("readwrite") => CopyPath::ReadWrite,
                Some("copy_file_range") => CopyPath::CopyFileRange,
                Some("auto") => CopyPath::Auto,
                Some(other) => {
                    return Err(format!(
                        "unknown copy method '{other}': use readwrite, copy_file_range or auto"
                    ));
                }
            },
            compressibility: fraction(&raw.compressibility, "compressibility", 0.5)?,
            source: source(raw)?,
        },
        "untar" => EngineSpec::Untar {
            files: whole(&raw.files, "files")?.unwrap_or(3000),
            seed: whole(&raw.seed, "seed")?.unwrap_or(1),
            tarball: string(&raw.tarball, "tarball")?.map(Into::into),
        },
        "command" => command(raw, table.get("metric"))?,
        // keys_of knows every workload this match builds; a name in one and not the other is
        // refused as unknown rather than a panic.
        other => {
            return Err(format!(
                "unknown workload '{other}': use one of {WORKLOADS}"
            ));
        }
    })
}

/// A `command` test: the command line, its metrics and its timeout.
fn command(
    raw: &RawTest,
    metric_list: Option<&Spanned<DeValue<'_>>>,
) -> Result<EngineSpec, String> {
    let command =
        string(&raw.command, "command")?.ok_or("missing `command` (a shell command line)")?;
    let mut metrics = Vec::new();
    if let Some(v) = metric_list {
        let tables = "`metric` must be [[test.metric]] tables";
        let DeValue::Array(items) = v.get_ref() else {
            return Err(tables.into());
        };
        for m in items.iter() {
            metrics.push(metric(m).ok_or(tables)??);
        }
    }
    let timeout_s = match raw.timeout.as_ref().map(|l| (l.get(), &l.written)) {
        None => None,
        Some((Ok(s), _)) if *s > 0.0 => Some(*s),
        Some((_, other)) => return Err(format!("`timeout` must be seconds, not {other}")),
    };
    Ok(EngineSpec::Command {
        command,
        metrics,
        timeout_s,
    })
}

/// One [[test.metric]]; `None` when it is not a table.
fn metric(m: &Spanned<DeValue<'_>>) -> Option<Result<CommandMetricSpec, String>> {
    let DeValue::Table(table) = m.get_ref() else {
        return None;
    };
    if let Some((k, _)) = unknown_key(keys(table), &METRIC_KEYS) {
        return Some(Err(format!(
            "unknown metric key '{k}' (a metric has name, regex or json, unit, direction, required)"
        )));
    }
    let raw = match RawMetric::deserialize(m.clone().into_deserializer()) {
        Ok(raw) => raw,
        Err(e) => return Some(Err(e.to_string())),
    };
    let get = |v: &Option<Loose<String>>| v.as_ref().and_then(|l| l.fit.clone());
    Some((|| {
        let name = get(&raw.name).ok_or("a metric has no `name`")?;
        // A sample holds a metric name once: one fsdelta records itself would make the store
        // refuse every sample of this test.
        if let Some(why) = crate::model::reserved_metric(&name) {
            return Err(format!("metric {why}"));
        }
        Ok(CommandMetricSpec {
            name,
            regex: get(&raw.regex),
            json: get(&raw.json),
            unit: get(&raw.unit).ok_or("a metric has no `unit` (ms, s, MB/s, count, ...)")?,
            direction: get(&raw.direction)
                .ok_or("a metric has no `direction` (lower, higher or neutral)")?,
            required: match raw.required.as_ref().map(Loose::get) {
                None => false,
                Some(Ok(b)) => *b,
                Some(Err(_)) => return Err("a metric's `required` must be true or false".into()),
            },
        })
    })())
}

/// The tracepoints a test counts, each list checked for its syntax.
fn events(v: Option<&Spanned<DeValue<'_>>>) -> Result<Vec<String>, String> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let DeValue::Array(items) = v.get_ref() else {
        let other = written(v)?;
        return Err(format!(
            "`events` must be a list like [\"btrfs:*\", \"kmem:kmalloc\"], not {other}"
        ));
    };
    let mut events = Vec::with_capacity(items.len());
    for e in items.iter() {
        let e = Loose::<String>::deserialize(e.clone().into_deserializer())
            .map_err(|e| e.to_string())?;
        events.push(e.get().cloned().map_err(|other| {
            format!("`events` must be strings like \"ext4:ext4_da_write_begin\", not {other}")
        })?);
    }
    for e in &events {
        crate::plan::events::parse_list(e).map_err(|x| x.to_string())?;
    }
    Ok(events)
}

/// A value as written (for a message).
fn written(v: &Spanned<DeValue<'_>>) -> Result<toml::Value, String> {
    toml::Value::deserialize(v.clone().into_deserializer()).map_err(|e| e.to_string())
}

/// The keys of a table, for [`unknown_key`].
fn keys<'t>(table: &'t DeTable<'_>) -> impl Iterator<Item = (&'t str, ())> {
    table.keys().map(|k| (k.get_ref().as_ref(), ()))
}

type Spanned<T> = toml::Spanned<T>;

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
name = "mine"

[[test]]
name = "applaunch"
workload = "command"
command = "./launch-bench --app camera"
[[test.metric]]
name = "launch_ms"
regex = 'launch took (\d+) ms'
unit = "ms"
direction = "lower"

[[test]]
name = "tiny"
workload = "fsmark"
args = "-s 4096 -n 200 -t 1 -S 0"

[[test]]
name = "rr"
workload = "fio"
job = """
rw=randread
bs=4k
size=64m
"""

[[test]]
name = "s"
workload = "stream"
size = "64m"
direct = true
"#;

    #[test]
    fn the_issue_example_parses() {
        let s = parse(EXAMPLE, "x.toml").unwrap();
        assert_eq!(s.name, "mine");
        assert_eq!(s.margins, SuiteMargins::default());
        let m = parse(
            &format!("[margins]\neps = 1\ndelta_max = 30.5\n{}", &EXAMPLE[16..]),
            "x.toml",
        )
        .unwrap();
        assert_eq!(m.margins.eps, Some(1.0));
        assert_eq!(m.margins.delta_max, Some(30.5));
        assert_eq!(s.tests.len(), 4);
        let EngineSpec::Command { metrics, .. } = &s.tests[0].engine else {
            panic!()
        };
        assert_eq!(metrics[0].regex.as_deref(), Some(r"launch took (\d+) ms"));
        let EngineSpec::Fio { job } = &s.tests[2].engine else {
            panic!()
        };
        assert!(job.starts_with("[rr]\n"));
        let EngineSpec::Stream { size, direct, .. } = &s.tests[3].engine else {
            panic!()
        };
        assert_eq!((*size, *direct), (64 << 20, true));
    }

    #[test]
    fn a_swept_test_is_one_test_a_point_with_the_value_in_every_section() {
        let text = "[[test]]\nname = 'rr'\nworkload = 'fio'\njob = '''\nrw=randread\nsize=16m\n'''\nsweep = { iodepth = [1, 4, 16] }\n\n[[test]]\nname = 'two'\nworkload = 'fio'\njob = '''\n[global]\nrw=read\n[a]\nsize=1m\n[b]\nsize=2m\n'''\nsweep = { bs = ['4k', '64k'] }\n";
        let s = parse(text, "s.toml").unwrap();
        let names: Vec<_> = s.tests.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "rr[iodepth=1]",
                "rr[iodepth=4]",
                "rr[iodepth=16]",
                "two[bs=4k]",
                "two[bs=64k]"
            ]
        );
        let job = |i: usize| match &s.tests[i].engine {
            EngineSpec::Fio { job } => job.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(job(1), "[rr]\niodepth=4\nrw=randread\nsize=16m\n");
        assert_eq!(
            job(4),
            "[global]\nbs=64k\nrw=read\n[a]\nbs=64k\nsize=1m\n[b]\nbs=64k\nsize=2m\n"
        );
        assert!(s.tests[2].description.ends_with("(iodepth=16)"));
        // `--test rr` picks the whole curve
        let picked = s.select(&["rr".into()]).unwrap();
        assert_eq!(picked.len(), 3);
        assert_eq!(s.select(&["two[bs=4k]".into()]).unwrap().len(), 1);
        assert!(s.select(&["r".into()]).is_err());
    }

    #[test]
    fn a_sweep_that_cannot_be_drawn_is_refused_with_the_fix() {
        let t = |sweep: &str, job: &str| {
            parse(
                &format!("[[test]]\nname='rr'\nworkload='fio'\njob='{job}'\nsweep = {sweep}\n"),
                "s.toml",
            )
            .unwrap_err()
            .to_string()
        };
        for (sweep, job, want) in [
            ("{ size = [1, 2] }", "rw=read", "cannot sweep 'size'"),
            (
                "{ iodepth = [1, 2], bs = [1, 2] }",
                "rw=read",
                "a test sweeps one parameter",
            ),
            ("{ iodepth = [4] }", "rw=read", "at least two values"),
            ("{ iodepth = [4, 4] }", "rw=read", "lists 4 twice"),
            (
                "{ iodepth = [1, -2] }",
                "rw=read",
                "-2 is not a value to sweep",
            ),
            (
                "{ bs = ['4k', '1k;x'] }",
                "rw=read",
                "is not a value to sweep",
            ),
            ("{ iodepth = 4 }", "rw=read", "sweep.iodepth must be a list"),
            (
                "[1, 2]",
                "rw=read",
                "`sweep` takes one of iodepth, bs, numjobs, rate_iops",
            ),
            (
                "{ bs = [1, 2] }",
                "blocksize=4k",
                "the job sets `blocksize=4k` itself",
            ),
        ] {
            let e = t(sweep, job);
            assert!(e.contains(want), "{sweep}: {e}");
            assert!(e.starts_with("s.toml: test 'rr': "), "{e}");
        }
        let e = parse(
            "[[test]]\nname='rr'\nworkload='fsmark'\nargs='-s 0'\nsweep = { iodepth = [1, 2] }\n",
            "s.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("unknown key 'sweep' for workload fsmark"), "{e}");
        let e = parse(
            "[[test]]\nname='rr'\nworkload='fio'\njob='rw=read'\nsweep = { iodepth = [1, 2] }\n[[test]]\nname='rr'\nworkload='fio'\njob='rw=read'\n",
            "s.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("a second test with this name"), "{e}");
    }

    #[test]
    fn ondisk_is_on_unless_the_suite_turns_it_off() {
        assert!(parse(EXAMPLE, "x.toml").unwrap().ondisk);
        let off = format!("ondisk = false\n{EXAMPLE}");
        assert!(!parse(&off, "x.toml").unwrap().ondisk);
        let bad = format!("ondisk = \"no\"\n{EXAMPLE}");
        let e = parse(&bad, "x.toml").unwrap_err().to_string();
        assert!(e.contains("`ondisk` must be true or false"), "{e}");
        assert!(crate::plan::suite::builtin("quick").unwrap().ondisk);
        assert!(!parse(EXAMPLE, "x.toml").unwrap().ondisk_remount);
        let again = format!("ondisk_remount = true\n{EXAMPLE}");
        assert!(parse(&again, "x.toml").unwrap().ondisk_remount);
    }

    #[test]
    fn a_metric_may_be_required() {
        let t = |req: &str| {
            parse(
                &format!(
                    "[[test]]\nname='a'\nworkload='command'\ncommand='true'\n[[test.metric]]\nname='m'\nregex='(1)'\nunit='ms'\ndirection='lower'\n{req}"
                ),
                "s.toml",
            )
        };
        let required = |s: Suite| match &s.tests[0].engine {
            EngineSpec::Command { metrics, .. } => metrics[0].required,
            _ => panic!(),
        };
        assert!(!required(t("").unwrap()));
        assert!(required(t("required = true").unwrap()));
        let e = t("required = 'yes'").unwrap_err().to_string();
        assert!(e.contains("`required` must be true or false"), "{e}");
    }

    #[test]
    fn a_metric_named_like_one_fsdelta_records_is_refused_naming_test_metric_and_rename() {
        for name in [
            "sys_idle_pct",
            "overhead_s",
            "dev_write_iops",
            "event:block:rq_issue",
        ] {
            let e = parse(
                &format!(
                    "[[test]]\nname='probe'\nworkload='command'\ncommand='true'\n[[test.metric]]\nname='{name}'\nregex='(1)'\nunit='count'\ndirection='neutral'\n"
                ),
                "s.toml",
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("test 'probe'")
                    && e.contains(&format!("'{name}'"))
                    && e.contains("rename"),
                "{e}"
            );
        }
    }

    #[test]
    fn copy_and_stream_take_a_users_source_file_instead_of_size() {
        let s = parse(
            "[[test]]\nname='cp'\nworkload='copy'\nsource='/boot/vmlinux'\nmethod='auto'\n\
             [[test]]\nname='dd'\nworkload='stream'\nsource='big.bin'\nblock_size='1m'\n",
            "s.toml",
        )
        .unwrap();
        let EngineSpec::Copy { source, .. } = &s.tests[0].engine else {
            panic!("copy")
        };
        assert_eq!(
            source.as_deref(),
            Some(std::path::Path::new("/boot/vmlinux"))
        );
        let EngineSpec::Stream { source, .. } = &s.tests[1].engine else {
            panic!("stream")
        };
        assert_eq!(source.as_deref(), Some(std::path::Path::new("big.bin")));
        let e = parse(
            "[[test]]\nname='cp'\nworkload='copy'\nsource='/x'\nsize='1g'\n",
            "s.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("`source` and `size`") && e.contains("remove `size`"),
            "{e}"
        );
    }

    #[test]
    fn mistakes_are_named() {
        let e = |t: &str| parse(t, "s.toml").unwrap_err().to_string();
        assert!(e("").contains("no [[test]]"));
        assert!(e("[[test]]\nname='a'\n").contains("missing `workload`"));
        assert!(e("[[test]]\nname='a'\nworkload='bonnie'\n").contains("unknown workload 'bonnie'"));
        assert!(
            e("[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\nbs=4\n")
                .contains("unknown key 'bs' for workload fsmark")
        );
        assert!(
            e("[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\n[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\n")
                .contains("second test")
        );
        assert!(e("[[test]]\nname='a'\nworkload='stream'\nsize='lots'\n").contains("not a size"));
        assert!(e("oops = 1\n").contains("unknown top-level key"));
        assert!(
            e("[[test]]\nname='a'\nworkload='stream'\nengine='external'\n")
                .contains("needs a workload the real tools run")
        );
        let ext = parse(
            "[[test]]\nname='a'\nworkload='fio'\nengine='external'\njob='rw=read'\n",
            "x.toml",
        )
        .unwrap();
        assert!(ext.tests[0].external);
        assert!(
            e("[margins]\nepsilon = 1\n[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\n")
                .contains("unknown margin 'epsilon'")
        );
        assert!(e("[[test]\n").contains("not valid TOML"));
    }

    #[test]
    fn events_per_test() {
        let ok = parse(
            "[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\nevents=['ext4:ext4_da_write_begin', 'btrfs:*,kmem:kmalloc']\n",
            "x.toml",
        )
        .unwrap();
        assert_eq!(
            ok.tests[0].events,
            ["ext4:ext4_da_write_begin", "btrfs:*,kmem:kmalloc"]
        );
        let e = |t: &str| parse(t, "x.toml").unwrap_err().to_string();
        let base = "[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\n";
        assert!(e(&format!("{base}events='kmem:kmalloc'\n")).contains("must be a list"));
        assert!(e(&format!("{base}events=[1]\n")).contains("must be strings"));
        let bad = e(&format!("{base}events=['kmalloc']\n"));
        assert!(
            bad.contains("test 'a': bad event 'kmalloc': no ':'"),
            "{bad}"
        );
    }

    /// One bad input per message `parse` can give, with the whole message (the golden table
    /// recorded on the hand-walking parser before the serde rewrite: the text is output).
    const SUITE_MESSAGES: &[(&str, &str)] = &[
        (
            "[[test]\n",
            "s.toml: not valid TOML: TOML parse error at line 1, column 8\n  |\n1 | [[test]\n  |        ^\nunclosed array table, expected `]`\n",
        ),
        (
            "oops = 1\n",
            "s.toml: unknown top-level key 'oops' (a suite file has `name`, `ondisk`, [margins] and [[test]] tables)",
        ),
        (
            "margins = 1\n[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\n",
            "s.toml: `margins` must be a [margins] table",
        ),
        (
            "[margins]\neps = 'x'\n[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\n",
            "s.toml: margins.eps must be a percentage, not \"x\"",
        ),
        (
            "[margins]\neps = 0\n[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\n",
            "s.toml: margins.eps must be a percentage above 0, not 0",
        ),
        (
            "[margins]\ndelta = 1000.5\n[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\n",
            "s.toml: margins.delta must be a percentage above 0, not 1000.5",
        ),
        (
            "[margins]\nepsilon = 1\n[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\n",
            "s.toml: unknown margin 'epsilon' (eps, delta, delta_tail, delta_max, in percent)",
        ),
        (
            "name = ''\n[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\n",
            "s.toml: `name` must be a non-empty string",
        ),
        (
            "name = 3\n[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\n",
            "s.toml: `name` must be a non-empty string",
        ),
        (
            "",
            "s.toml: no [[test]] table: add at least one test with a name and a workload",
        ),
        (
            "test = []\n",
            "s.toml: no [[test]] table: add at least one test with a name and a workload",
        ),
        (
            "test = 'x'\n",
            "s.toml: no [[test]] table: add at least one test with a name and a workload",
        ),
        ("test = [1]\n", "s.toml: test #1 is not a table"),
        (
            "[[test]]\nworkload='fsmark'\n",
            "s.toml: test #1 has no `name`",
        ),
        (
            "[[test]]\nname=''\nworkload='fsmark'\n",
            "s.toml: test #1 has no `name`",
        ),
        (
            "[[test]]\nname=1\nworkload='fsmark'\n",
            "s.toml: test #1 has no `name`",
        ),
        (
            "[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\n[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\n",
            "s.toml: test 'a': a second test with this name; names must be unique",
        ),
        (
            "[[test]]\nname='a b'\nworkload='fsmark'\n",
            "s.toml: test 'a b': use letters, digits, '-', '_' and '.' in test names",
        ),
        (
            "[[test]]\nname='a'\n",
            "s.toml: test 'a': missing `workload`: one of fsmark, fio, dbench, stream, copy, untar, command",
        ),
        (
            "[[test]]\nname='a'\nworkload=1\n",
            "s.toml: test 'a': missing `workload`: one of fsmark, fio, dbench, stream, copy, untar, command",
        ),
        (
            "[[test]]\nname='a'\nworkload='bonnie'\n",
            "s.toml: test 'a': unknown workload 'bonnie': use one of fsmark, fio, dbench, stream, copy, untar, command",
        ),
        (
            "[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\nbs=4\n",
            "s.toml: test 'a': unknown key 'bs' for workload fsmark (it takes: args)",
        ),
        (
            "[[test]]\nname='a'\nworkload='stream'\nargs='-s 0'\n",
            "s.toml: test 'a': unknown key 'args' for workload stream (it takes: size, block_size, direct, fsync, compressibility, source)",
        ),
        (
            "[[test]]\nname='a'\nworkload='command'\nbogus=1\ncommand='x'\n",
            "s.toml: test 'a': unknown key 'bogus' for workload command (it takes: command, metric, timeout)",
        ),
        (
            "[[test]]\nname='a'\nworkload='fsmark'\nargs=1\n",
            "s.toml: test 'a': `args` must be a string, not 1",
        ),
        (
            "[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\ndescription=['x']\n",
            "s.toml: test 'a': `description` must be a string, not [\"x\"]",
        ),
        (
            "[[test]]\nname='a'\nworkload='dbench'\nclients=-1\n",
            "s.toml: test 'a': `clients` must be a whole number, not -1",
        ),
        (
            "[[test]]\nname='a'\nworkload='dbench'\ntime='10'\n",
            "s.toml: test 'a': `time` must be a whole number, not \"10\"",
        ),
        (
            "[[test]]\nname='a'\nworkload='dbench'\nwarmup=1.5\n",
            "s.toml: test 'a': `warmup` must be a whole number, not 1.5",
        ),
        (
            "[[test]]\nname='a'\nworkload='dbench'\nloadfile=1\n",
            "s.toml: test 'a': `loadfile` must be a string, not 1",
        ),
        (
            "[[test]]\nname='a'\nworkload='stream'\ndirect='yes'\n",
            "s.toml: test 'a': `direct` must be true or false, not \"yes\"",
        ),
        (
            "[[test]]\nname='a'\nworkload='stream'\nfsync=1\n",
            "s.toml: test 'a': `fsync` must be true or false, not 1",
        ),
        (
            "[[test]]\nname='a'\nworkload='stream'\ncompressibility=1.5\n",
            "s.toml: test 'a': `compressibility` must be between 0 and 1, not 1.5",
        ),
        (
            "[[test]]\nname='a'\nworkload='copy'\ncompressibility=2\n",
            "s.toml: test 'a': `compressibility` must be between 0 and 1, not 2",
        ),
        (
            "[[test]]\nname='a'\nworkload='copy'\ncompressibility='half'\n",
            "s.toml: test 'a': `compressibility` must be between 0 and 1, not \"half\"",
        ),
        (
            "[[test]]\nname='a'\nworkload='stream'\nsize='lots'\n",
            "s.toml: test 'a': `size`: 'lots' is not a size (a number with k, m, g or t)",
        ),
        (
            "[[test]]\nname='a'\nworkload='stream'\nsize='0k'\n",
            "s.toml: test 'a': `size`: '0k' is not a size (a number with k, m, g or t)",
        ),
        (
            "[[test]]\nname='a'\nworkload='stream'\nblock_size=0\n",
            "s.toml: test 'a': `block_size`: 0 is not a size (a number, or a string like \"64m\")",
        ),
        (
            "[[test]]\nname='a'\nworkload='copy'\nsize=1.5\n",
            "s.toml: test 'a': `size`: 1.5 is not a size (a number, or a string like \"64m\")",
        ),
        (
            "[[test]]\nname='a'\nworkload='stream'\nsource=1\n",
            "s.toml: test 'a': `source` must be a string, not 1",
        ),
        (
            "[[test]]\nname='a'\nworkload='stream'\nsource='f'\nsize='1m'\n",
            "s.toml: test 'a': `source` and `size` together: the file sets the size and the data; remove `size`",
        ),
        (
            "[[test]]\nname='a'\nworkload='copy'\nsource='f'\ncompressibility=0.5\n",
            "s.toml: test 'a': `source` and `compressibility` together: the file sets the size and the data; remove `compressibility`",
        ),
        (
            "[[test]]\nname='a'\nworkload='stream'\nengine='external'\n",
            "s.toml: test 'a': engine = \"external\" needs a workload the real tools run (fsmark, fio, dbench), not stream",
        ),
        (
            "[[test]]\nname='a'\nworkload='fio'\nengine='fast'\njob='rw=read'\n",
            "s.toml: test 'a': unknown engine 'fast': use native (fsdelta's own) or external (the real tool)",
        ),
        (
            "[[test]]\nname='a'\nworkload='fio'\nengine=1\njob='rw=read'\n",
            "s.toml: test 'a': `engine` must be a string, not 1",
        ),
        (
            "[[test]]\nname='a'\nworkload='fsmark'\n",
            "s.toml: test 'a': missing `args` (fs_mark's flags, without -d)",
        ),
        (
            "[[test]]\nname='a'\nworkload='fio'\n",
            "s.toml: test 'a': missing `job` (the job's options, one key=value a line)",
        ),
        (
            "[[test]]\nname='a'\nworkload='copy'\nmethod='splice'\n",
            "s.toml: test 'a': unknown copy method 'splice': use readwrite, copy_file_range or auto",
        ),
        (
            "[[test]]\nname='a'\nworkload='copy'\nmethod=1\n",
            "s.toml: test 'a': `method` must be a string, not 1",
        ),
        (
            "[[test]]\nname='a'\nworkload='untar'\nfiles=-3\n",
            "s.toml: test 'a': `files` must be a whole number, not -3",
        ),
        (
            "[[test]]\nname='a'\nworkload='untar'\nseed='s'\n",
            "s.toml: test 'a': `seed` must be a whole number, not \"s\"",
        ),
        (
            "[[test]]\nname='a'\nworkload='untar'\ntarball=true\n",
            "s.toml: test 'a': `tarball` must be a string, not true",
        ),
        (
            "[[test]]\nname='a'\nworkload='command'\n",
            "s.toml: test 'a': missing `command` (a shell command line)",
        ),
        (
            "[[test]]\nname='a'\nworkload='command'\ncommand='x'\nmetric=1\n",
            "s.toml: test 'a': `metric` must be [[test.metric]] tables",
        ),
        (
            "[[test]]\nname='a'\nworkload='command'\ncommand='x'\nmetric=[1]\n",
            "s.toml: test 'a': `metric` must be [[test.metric]] tables",
        ),
        (
            "[[test]]\nname='a'\nworkload='command'\ncommand='x'\n[[test.metric]]\nname='m'\nunit='ms'\ndirection='lower'\nregexp='(1)'\n",
            "s.toml: test 'a': unknown metric key 'regexp' (a metric has name, regex or json, unit, direction, required)",
        ),
        (
            "[[test]]\nname='a'\nworkload='command'\ncommand='x'\n[[test.metric]]\nunit='ms'\ndirection='lower'\n",
            "s.toml: test 'a': a metric has no `name`",
        ),
        (
            "[[test]]\nname='a'\nworkload='command'\ncommand='x'\n[[test.metric]]\nname=1\nunit='ms'\ndirection='lower'\n",
            "s.toml: test 'a': a metric has no `name`",
        ),
        (
            "[[test]]\nname='a'\nworkload='command'\ncommand='x'\n[[test.metric]]\nname='sys_idle_pct'\nunit='ms'\ndirection='lower'\n",
            "s.toml: test 'a': metric 'sys_idle_pct' is a metric fsdelta records for every sample itself; rename yours (for example 'cmd_sys_idle_pct')",
        ),
        (
            "[[test]]\nname='a'\nworkload='command'\ncommand='x'\n[[test.metric]]\nname='m'\ndirection='lower'\n",
            "s.toml: test 'a': a metric has no `unit` (ms, s, MB/s, count, ...)",
        ),
        (
            "[[test]]\nname='a'\nworkload='command'\ncommand='x'\n[[test.metric]]\nname='m'\nunit='ms'\n",
            "s.toml: test 'a': a metric has no `direction` (lower, higher or neutral)",
        ),
        (
            "[[test]]\nname='a'\nworkload='command'\ncommand='x'\n[[test.metric]]\nname='m'\nunit='ms'\ndirection='lower'\nrequired='yes'\n",
            "s.toml: test 'a': a metric's `required` must be true or false",
        ),
        (
            "[[test]]\nname='a'\nworkload='command'\ncommand='x'\ntimeout=0\n",
            "s.toml: test 'a': `timeout` must be seconds, not 0",
        ),
        (
            "[[test]]\nname='a'\nworkload='command'\ncommand='x'\ntimeout='1m'\n",
            "s.toml: test 'a': `timeout` must be seconds, not \"1m\"",
        ),
        (
            "[[test]]\nname='a'\nworkload='command'\ncommand='x'\ntimeout=-0.5\n",
            "s.toml: test 'a': `timeout` must be seconds, not -0.5",
        ),
        (
            "[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\nevents=[1]\n",
            "s.toml: test 'a': `events` must be strings like \"ext4:ext4_da_write_begin\", not 1",
        ),
        (
            "[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\nevents='kmem:kmalloc'\n",
            "s.toml: test 'a': `events` must be a list like [\"btrfs:*\", \"kmem:kmalloc\"], not \"kmem:kmalloc\"",
        ),
        (
            "[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\nevents=['kmalloc']\n",
            "s.toml: test 'a': bad event 'kmalloc': no ':' between group and name (write GROUP:NAME, e.g. ext4:ext4_da_write_begin or btrfs:*, separated by commas)",
        ),
        (
            "[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\nevents=['a:b', 'x:y:z']\n",
            "s.toml: test 'a': bad event 'x:y:z': more than one ':' (filters go in --events-filter) (write GROUP:NAME, e.g. ext4:ext4_da_write_begin or btrfs:*, separated by commas)",
        ),
        (
            "[[test]]\nname='a'\nworkload='stream'\nsize=1979-05-27\n",
            "s.toml: test 'a': `size`: 1979-05-27 is not a size (a number, or a string like \"64m\")",
        ),
        (
            "[[test]]\nname='a'\nworkload='fsmark'\nargs=1979-05-27\n",
            "s.toml: test 'a': `args` must be a string, not 1979-05-27",
        ),
        (
            "[margins]\neps=1979-05-27\n[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\n",
            "s.toml: margins.eps must be a percentage, not 1979-05-27",
        ),
        (
            "[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\nevents=[1979-05-27]\n",
            "s.toml: test 'a': `events` must be strings like \"ext4:ext4_da_write_begin\", not 1979-05-27",
        ),
        (
            "[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\nevents=['x:y:z', 1]\n",
            "s.toml: test 'a': `events` must be strings like \"ext4:ext4_da_write_begin\", not 1",
        ),
        (
            "[[test]]\nname='a'\nworkload='command'\ncommand='x'\n[[test.metric]]\nname=1979-05-27\nunit='ms'\ndirection='lower'\n",
            "s.toml: test 'a': a metric has no `name`",
        ),
        (
            "name=1979-05-27\n[[test]]\nname='a'\nworkload='fsmark'\nargs='-s 0'\n",
            "s.toml: `name` must be a non-empty string",
        ),
        (
            "[[test]]\nname='a'\nworkload='command'\ncommand='x'\ntimeout=1979-05-27\n",
            "s.toml: test 'a': `timeout` must be seconds, not 1979-05-27",
        ),
    ];

    #[test]
    fn every_message_keeps_its_text() {
        let mut bad = Vec::new();
        for (input, want) in SUITE_MESSAGES {
            let got = match parse(input, "s.toml") {
                Ok(_) => "(parsed)".to_string(),
                Err(e) => e.to_string(),
            };
            if got != *want {
                bad.push(format!("        ({input:?}, {got:?}),"));
            }
        }
        assert!(bad.is_empty(), "messages differ:\n{}", bad.join("\n"));
    }
}
