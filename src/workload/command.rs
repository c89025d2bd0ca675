//! The `command` workload: any user command as a test (an app-launch benchmark, a database
//! load), run with `sh -c` in the target directory. It yields the numbers the test declares, each
//! pulled out of the command's output by a regex or a JSON path and stored with its declared unit
//! and direction, in the declared order (so the first is the test's headline), and then always
//! `elapsed_s` (wall time from spawn to exit).
//!
//! Why: filesystem developers measure with their own programs too; a suite entry
//! (`workload = "command"`, `command = ...`, `[[test.metric]] name/regex/unit/direction`) turns any
//! of them into samples that compare like the native engines'. A non-zero exit, a signal, a
//! timeout or a declared `required = true` metric missing from the output is a failed sample whose
//! error keeps the command's stderr and the start of its stdout. A metric not marked required that
//! does not match (dd printing `GB/s` where the regex expects `MB/s`) is recorded as missing: a
//! warning (the runner's Observer `Warning` event) names it with an excerpt of stdout, and the
//! sample keeps the metrics that matched. This module must never run the command anywhere but the target directory,
//! and must never leave its process group running (a cancel or timeout kills the whole group).
//!
//! Write amplification: the run divides the target device's written bytes by the data the
//! workload wrote. For a command that is what its processes caused to be stored, read from the
//! shell's /proc/PID/io once it has exited and before it is reaped (then it carries the counts of
//! every descendant it reaped): `write_bytes` (page-cache pages dirtied, direct writes) less
//! `cancelled_write_bytes` (dirty pages truncated before writeback). Not write(2)'s byte count
//! (`wchar`), which counts /dev/null, pipes and sockets too: `dd ... of=/dev/null` beside a copy
//! into the target halved the ratio. Why this count and not another: the kernel has no per-target
//! count of logical bytes written that works for every filesystem, and tracing each write(2) to
//! see where it goes would slow the command being timed; the task I/O counters are exact for
//! writes to the target, cost nothing, and count only writes that reach storage. What they also
//! count is a write to another disk-backed filesystem (a log in /var/tmp): write it to the
//! target, a tmpfs or /dev/null. A page rewritten while still dirty counts once, as the device
//! writes it once. Below 1 MiB the count is reported as 0, which leaves the ratio out.

use super::{Measurements, RunContext, Workload, WorkloadError};
use crate::model::{Attachment, Direction, Metric, Unit};
use crate::probe::clock::Nanos;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command as Process, Stdio};
use std::time::Duration;

/// How a metric's value is found in the command's output.
#[derive(Clone, Debug)]
pub enum Extract {
    /// The first capture group (or the whole match when there is none) of the first match,
    /// searched in stdout and then in stderr.
    Regex(regex::Regex),
    /// A path into stdout parsed as JSON: `$.jobs[0].read.iops`, `jobs.0.read.iops`. Text before
    /// the first `{` or `[` is skipped (as fio prints notes before its JSON).
    JsonPath(String),
}

/// A number the command reports.
#[derive(Clone, Debug)]
pub struct CommandMetric {
    /// Metric name (`launch_ms`).
    pub name: String,
    /// Where the value is.
    pub extract: Extract,
    /// Its unit.
    pub unit: Unit,
    /// Which way is better.
    pub direction: Direction,
    /// When true, a sample whose output lacks it fails; otherwise it is recorded as missing (a
    /// warning naming it, with an excerpt of stdout) and the sample keeps the metrics that matched.
    pub required: bool,
}

impl CommandMetric {
    /// A metric from the suite file's strings: `unit` as in [`Unit`] (`ms`, `s`, `MB/s`, ...),
    /// `direction` `lower` | `higher` | `neutral` (or the stored names). Exactly one of `regex`
    /// and `json` must be given.
    pub fn parse(
        name: &str,
        regex: Option<&str>,
        json: Option<&str>,
        unit: &str,
        direction: &str,
    ) -> Result<CommandMetric, WorkloadError> {
        let bad = |m: String| WorkloadError::InvalidOptions(format!("metric '{name}': {m}"));
        let extract = match (regex, json) {
            (Some(r), None) => {
                Extract::Regex(regex::Regex::new(r).map_err(|e| bad(format!("bad regex: {e}")))?)
            }
            (None, Some(j)) => {
                parse_json_path(j).map_err(bad)?;
                Extract::JsonPath(j.to_string())
            }
            _ => return Err(bad("give exactly one of `regex` and `json`".into())),
        };
        let unit: Unit = unit.parse().map_err(|_| {
            let all: Vec<&str> = Unit::ALL.iter().map(|u| u.as_str()).collect();
            bad(format!("unknown unit '{unit}' (one of {})", all.join(", ")))
        })?;
        let direction = match direction {
            "lower" | "lower_is_better" => Direction::LowerIsBetter,
            "higher" | "higher_is_better" => Direction::HigherIsBetter,
            "neutral" => Direction::Neutral,
            other => {
                return Err(bad(format!(
                    "direction '{other}' must be lower, higher or neutral"
                )));
            }
        };
        Ok(CommandMetric {
            name: name.to_string(),
            extract,
            unit,
            direction,
            required: false,
        })
    }

    /// The same metric, required (a sample without it fails) or not.
    pub fn required(mut self, required: bool) -> CommandMetric {
        self.required = required;
        self
    }
}

/// Options of the command workload.
#[derive(Clone, Debug)]
pub struct CommandOptions {
    /// The command line, run as `sh -c COMMAND` in the target directory with `FSDELTA_TARGET`
    /// set to it.
    pub command: String,
    /// Numbers to extract (besides `elapsed_s`).
    pub metrics: Vec<CommandMetric>,
    /// Kill the command (its whole process group) after this long; a failed sample.
    pub timeout: Option<Duration>,
}

/// The command workload.
#[derive(Clone, Debug)]
pub struct CommandWorkload {
    opts: CommandOptions,
}

impl CommandWorkload {
    /// Check the options.
    pub fn new(opts: CommandOptions) -> Result<CommandWorkload, WorkloadError> {
        if opts.command.trim().is_empty() {
            return Err(WorkloadError::InvalidOptions(
                "command: `command` is empty; give the command line to run".into(),
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        for m in &opts.metrics {
            if m.name != "elapsed_s"
                && let Some(why) = crate::model::reserved_metric(&m.name)
            {
                return Err(WorkloadError::InvalidOptions(format!(
                    "command: metric {why}"
                )));
            }
            if m.name == "elapsed_s" || !names.insert(m.name.as_str()) {
                return Err(WorkloadError::InvalidOptions(format!(
                    "command: metric name '{}' is used twice (elapsed_s is always measured)",
                    m.name
                )));
            }
        }
        Ok(CommandWorkload { opts })
    }

    /// The options.
    pub fn options(&self) -> &CommandOptions {
        &self.opts
    }
}

/// One step of a JSON path.
#[derive(Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

fn parse_json_path(p: &str) -> Result<Vec<Step>, String> {
    let body = p.strip_prefix('$').unwrap_or(p);
    let body = body.strip_prefix('.').unwrap_or(body);
    let mut steps = Vec::new();
    for part in body.split('.') {
        if part.is_empty() {
            return Err(format!("JSON path '{p}' has an empty step"));
        }
        let (key, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !key.is_empty() {
            match key.parse::<usize>() {
                Ok(i) => steps.push(Step::Index(i)),
                Err(_) => steps.push(Step::Key(key.to_string())),
            }
        }
        while let Some(r) = rest.strip_prefix('[') {
            let end = r
                .find(']')
                .ok_or_else(|| format!("JSON path '{p}': '[' without ']'"))?;
            let idx = r[..end]
                .parse::<usize>()
                .map_err(|_| format!("JSON path '{p}': '[{}]' is not an index", &r[..end]))?;
            steps.push(Step::Index(idx));
            rest = &r[end + 1..];
        }
        if !rest.is_empty() {
            return Err(format!("JSON path '{p}': unexpected '{rest}'"));
        }
    }
    Ok(steps)
}

fn as_number(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Find a metric's value in the output. Pure: tested without running anything.
fn extract(m: &CommandMetric, stdout: &str, stderr: &str) -> Result<f64, String> {
    match &m.extract {
        Extract::Regex(re) => {
            for text in [stdout, stderr] {
                if let Some(c) = re.captures(text) {
                    let s = c.get(1).or_else(|| c.get(0)).map_or("", |g| g.as_str());
                    return s.trim().replace(',', "").parse::<f64>().map_err(|_| {
                        format!(
                            "regex /{}/ matched '{s}', which is not a number",
                            re.as_str()
                        )
                    });
                }
            }
            Err(format!(
                "regex /{}/ matched nothing in the command's output",
                re.as_str()
            ))
        }
        Extract::JsonPath(p) => {
            let steps = parse_json_path(p)?;
            let start = stdout
                .find(['{', '['])
                .ok_or("stdout holds no JSON object or array")?;
            let mut de = serde_json::Deserializer::from_str(&stdout[start..]);
            let doc: serde_json::Value = serde::Deserialize::deserialize(&mut de)
                .map_err(|e| format!("stdout is not JSON: {e}"))?;
            let mut v = &doc;
            for s in &steps {
                v = match s {
                    Step::Key(k) => v.get(k.as_str()),
                    Step::Index(i) => v.get(*i),
                }
                .ok_or_else(|| format!("JSON path '{p}' not found in the command's output"))?;
            }
            as_number(v).ok_or_else(|| format!("JSON path '{p}' holds {v}, not a number"))
        }
    }
}

/// Keep the end of a long stderr (where the error usually is).
fn tail(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut i = s.len() - max;
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

/// Keep the start of a long stdout (where a report's numbers usually begin).
fn head(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut i = max;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    &s[..i]
}

/// Whether the child `pid` has exited, without reaping it (`waitid` with `WNOWAIT`), so that
/// its /proc/PID/io can still be read. A failed wait counts as exited (the caller's `wait` then
/// reports the error).
fn exited(pid: Option<rustix::process::Pid>) -> bool {
    use rustix::process::{WaitId, WaitIdOptions as O, waitid};
    let Some(pid) = pid else { return true };
    !matches!(
        waitid(WaitId::Pid(pid), O::EXITED | O::NOHANG | O::NOWAIT),
        Ok(None)
    )
}

/// What process `pid` and the descendants it reaped caused to be stored: `write_bytes` (page-cache
/// pages they dirtied, and direct writes) less `cancelled_write_bytes` (dirty pages truncated
/// before writeback) of /proc/PID/io. `None` when unreadable (no task I/O accounting).
fn stored_bytes(pid: u32) -> Option<u64> {
    parse_stored_bytes(&std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?)
}

fn parse_stored_bytes(io: &str) -> Option<u64> {
    let field = |name: &str| -> Option<u64> {
        io.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))?
            .trim()
            .parse()
            .ok()
    };
    Some(field("write_bytes")?.saturating_sub(field("cancelled_write_bytes")?))
}

impl Workload for CommandWorkload {
    fn engine(&self) -> &'static str {
        "command"
    }

    fn reads_only(&self) -> bool {
        // May run on a read-only filesystem: a command that writes fails there on its own.
        true
    }

    fn run(&self, ctx: &RunContext<'_>) -> Result<Measurements, WorkloadError> {
        let o = &self.opts;
        let fail = |what: String| {
            WorkloadError::io(
                "command",
                ctx.dir,
                std::io::Error::other(format!("`{}` {what}", o.command)),
            )
        };
        ctx.progress.phase("command");
        let t0 = Nanos::now();
        let mut child = crate::os::child::dies_with_this_thread(&mut Process::new("/bin/sh"))
            .arg("-c")
            .arg(&o.command)
            .current_dir(ctx.dir)
            .env("FSDELTA_TARGET", ctx.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|e| WorkloadError::io("spawn /bin/sh for", ctx.dir, e))?;
        let pgid = rustix::process::Pid::from_raw(child.id() as i32);
        let read_all = |mut r: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut v = Vec::new();
                let _ = r.read_to_end(&mut v);
                v
            })
        };
        let out_t = read_all(Box::new(child.stdout.take().expect("piped stdout")));
        let err_t = read_all(Box::new(child.stderr.take().expect("piped stderr")));
        let kill_group = || {
            if let Some(p) = pgid {
                let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
            }
        };
        let mut why_killed = None;
        let (status, stored, elapsed) = loop {
            // Exited: read its storage writes while it is a zombie (its own and those of every
            // descendant it reaped), then reap it; the time stops when the exit is seen.
            if exited(pgid) {
                let elapsed = t0.elapsed();
                let stored = pgid.and_then(|p| stored_bytes(p.as_raw_nonzero().get() as u32));
                match child.wait() {
                    Ok(s) => break (s, stored, elapsed),
                    Err(e) => {
                        kill_group();
                        return Err(WorkloadError::io("wait for", ctx.dir, e));
                    }
                }
            }
            if why_killed.is_none() {
                if ctx.cancel.is_cancelled() {
                    why_killed = Some("cancelled");
                    kill_group();
                } else if o.timeout.is_some_and(|t| t0.elapsed() >= Nanos::from(t)) {
                    why_killed = Some("timeout");
                    kill_group();
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        // The group may still hold children that outlived the shell; they must not linger.
        kill_group();
        let stdout = String::from_utf8_lossy(&out_t.join().unwrap_or_default()).into_owned();
        let stderr = String::from_utf8_lossy(&err_t.join().unwrap_or_default()).into_owned();
        let stderr_tail = tail(&stderr, 4000);
        match why_killed {
            Some("cancelled") => return Err(WorkloadError::Cancelled),
            Some(_) => {
                return Err(fail(format!(
                    "ran longer than its timeout of {:?} and was killed; stderr:\n{stderr_tail}",
                    o.timeout.unwrap_or_default()
                )));
            }
            None => {}
        }
        if !status.success() {
            let how = match (
                status.code(),
                std::os::unix::process::ExitStatusExt::signal(&status),
            ) {
                (Some(c), _) => format!("exited with status {c}"),
                (None, Some(s)) => format!("was killed by signal {s}"),
                _ => "failed".into(),
            };
            return Err(fail(format!("{how}; stderr:\n{stderr_tail}")));
        }
        // The user's own numbers come first: the first metric is a test's headline (progress
        // lines, --until-confident).
        let mut m = Measurements::default();
        for cm in &o.metrics {
            match extract(cm, &stdout, &stderr) {
                Ok(v) => m
                    .metrics
                    .push(Metric::new(cm.name.clone(), v, cm.unit, cm.direction).headline()),
                Err(e) if cm.required => {
                    return Err(fail(format!(
                        "succeeded but required metric '{}': {e}; stdout begins:\n{}\nstderr:\n{stderr_tail}",
                        cm.name,
                        head(&stdout, 400)
                    )));
                }
                Err(e) => ctx.progress.warning(&format!(
                    "metric '{}' is missing from this sample: {e}; stdout begins: {:?}",
                    cm.name,
                    head(&stdout, 200)
                )),
            }
        }
        m.metrics.push(Metric::new(
            "elapsed_s",
            elapsed.as_secs_f64(),
            Unit::Seconds,
            Direction::LowerIsBetter,
        ));
        // Below 1 MiB (a log line, a lock file) there is no data worth a ratio: 0 leaves
        // write_amplification out rather than letting the run fall back to every byte the
        // processes passed to write(2), /dev/null and pipes included.
        m.logical_bytes_written = stored.map(|b| if b < 1 << 20 { 0 } else { b });
        // The raw output stays with the sample (`show --output`), so a number can be checked
        // against what the command printed, and a metric added later can be read from it.
        m.attachments
            .push(Attachment::text_gz("stdout", stdout.as_bytes()));
        m.attachments
            .push(Attachment::text_gz("stderr", stderr.as_bytes()));
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{CancelToken, NoProgress};

    fn metric(regex: Option<&str>, json: Option<&str>) -> CommandMetric {
        CommandMetric::parse("m", regex, json, "ms", "lower").unwrap()
    }

    #[test]
    fn regex_takes_the_first_group_or_the_whole_match() {
        let m = metric(Some(r"launch took (\d+) ms"), None);
        assert_eq!(extract(&m, "x\nlaunch took 412 ms\n", ""), Ok(412.0));
        assert!(
            CommandMetric::parse("m", Some(r"[0-9.]+(?= MB/s)"), None, "ms", "lower").is_err(),
            "look-around is not supported by the regex crate and must be a clear error"
        );
        let m = metric(Some(r"\d+\.\d+"), None);
        assert_eq!(
            extract(&m, "speed 3.5 GB", ""),
            Ok(3.5),
            "no group: the whole match"
        );
        let m = metric(Some(r"rate: \S+"), None);
        assert!(
            extract(&m, "rate: fast", "")
                .unwrap_err()
                .contains("not a number")
        );
        let m = metric(Some(r"total=([\d,]+)"), None);
        assert_eq!(
            extract(&m, "", "total=1,234\n"),
            Ok(1234.0),
            "stderr is searched too"
        );
        let m = metric(Some(r"nothing (\d+)"), None);
        assert!(
            extract(&m, "a", "b")
                .unwrap_err()
                .contains("matched nothing")
        );
    }

    #[test]
    fn json_paths_walk_objects_and_arrays() {
        let out = "note: starting\n{\"jobs\":[{\"read\":{\"iops\":1234.5,\"s\":\"7\"}}]}";
        assert_eq!(
            extract(&metric(None, Some("$.jobs[0].read.iops")), out, ""),
            Ok(1234.5)
        );
        assert_eq!(
            extract(&metric(None, Some("jobs.0.read.iops")), out, ""),
            Ok(1234.5)
        );
        assert_eq!(
            extract(&metric(None, Some("jobs[0].read.s")), out, ""),
            Ok(7.0)
        );
        assert!(
            extract(&metric(None, Some("jobs[1].read")), out, "")
                .unwrap_err()
                .contains("not found")
        );
        assert!(
            extract(&metric(None, Some("jobs")), out, "")
                .unwrap_err()
                .contains("not a number")
        );
        assert!(extract(&metric(None, Some("a")), "plain text", "").is_err());
        assert!(CommandMetric::parse("m", None, Some("a..b"), "ms", "lower").is_err());
        assert!(CommandMetric::parse("m", None, Some("a[x]"), "ms", "lower").is_err());
    }

    #[test]
    fn declared_units_and_directions_are_checked() {
        let m = CommandMetric::parse("x", Some("(\\d+)"), None, "MB/s", "higher").unwrap();
        assert_eq!(
            (m.unit, m.direction),
            (Unit::MBPerSec, Direction::HigherIsBetter)
        );
        assert!(
            CommandMetric::parse("x", Some("(\\d+)"), None, "furlong", "higher")
                .unwrap_err()
                .to_string()
                .contains("unknown unit")
        );
        assert!(CommandMetric::parse("x", Some("(\\d+)"), None, "ms", "up").is_err());
        assert!(CommandMetric::parse("x", Some("a"), Some("b"), "ms", "lower").is_err());
    }

    #[test]
    fn a_metric_named_like_one_fsdelta_records_is_refused_before_running() {
        let m =
            CommandMetric::parse("sys_idle_pct", Some("(1)"), None, "count", "neutral").unwrap();
        let e = CommandWorkload::new(CommandOptions {
            command: "true".into(),
            metrics: vec![m],
            timeout: None,
        })
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("'sys_idle_pct'") && e.contains("rename"), "{e}");
    }

    fn run(
        cmd: &str,
        metrics: Vec<CommandMetric>,
        timeout: Option<Duration>,
    ) -> Result<Measurements, WorkloadError> {
        let d = tempfile::tempdir().unwrap();
        let w = CommandWorkload::new(CommandOptions {
            command: cmd.into(),
            metrics,
            timeout,
        })?;
        let cancel = CancelToken::new();
        w.run(&RunContext {
            dir: d.path(),
            cancel: &cancel,
            progress: &NoProgress,
        })
    }

    #[test]
    fn stored_bytes_come_from_proc_pid_io() {
        // Captured (Linux 6.18) from /proc/$$/io of `sh -c 'dd if=/dev/zero of=/var/tmp/x bs=1M
        // count=4; rm /var/tmp/x; cat /proc/$$/io'`: the shell reaped dd and rm, so it carries
        // their counts; the file was deleted before writeback, so its 4 MiB were cancelled.
        let io = "rchar: 4212236\nwchar: 4194398\nsyscr: 32\nsyscw: 7\nread_bytes: 4096\nwrite_bytes: 4206592\ncancelled_write_bytes: 4194304\n";
        assert_eq!(parse_stored_bytes(io), Some(4206592 - 4194304));
        assert_eq!(parse_stored_bytes("rchar: 1\n"), None);
    }

    #[test]
    fn writes_to_dev_null_are_not_data_written() {
        // On a disk-backed filesystem (a tmpfs stores nothing and counts nothing).
        let d = tempfile::tempdir_in("/var/tmp").unwrap();
        let w = CommandWorkload::new(CommandOptions {
            command: "dd if=/dev/zero of=/dev/null bs=1M count=8 2>/dev/null && \
                      dd if=/dev/zero of=f bs=1M count=2 2>/dev/null"
                .into(),
            metrics: vec![],
            timeout: None,
        })
        .unwrap();
        let cancel = CancelToken::new();
        let m = w
            .run(&RunContext {
                dir: d.path(),
                cancel: &cancel,
                progress: &NoProgress,
            })
            .unwrap();
        let b = m.logical_bytes_written.expect("/proc/PID/io is readable");
        assert!((2 << 20..8 << 20).contains(&b), "{b} bytes");
    }

    #[test]
    fn runs_in_the_target_and_extracts_metrics() {
        let m = run(
            r#"test "$PWD" = "$FSDELTA_TARGET" && touch here && echo "launch took 42 ms""#,
            vec![metric(Some(r"took (\d+) ms"), None)],
            None,
        )
        .unwrap();
        // The user's numbers first (the first metric is a test's headline), elapsed_s last.
        let names: Vec<&str> = m.metrics.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["m", "elapsed_s"]);
        assert_eq!(m.metrics[0].value, 42.0);
        assert_eq!(m.metrics[0].unit, Unit::Milliseconds);
        assert!(m.metrics[1].value > 0.0);
    }

    #[test]
    fn stdout_and_stderr_are_kept_with_the_sample() {
        let m = run("echo 'launch took 42 ms'; echo warn >&2", vec![], None).unwrap();
        let get = |n: &str| {
            m.attachments
                .iter()
                .find(|a| a.name == n)
                .unwrap_or_else(|| panic!("no {n} attachment"))
                .text()
                .unwrap()
        };
        assert_eq!(get("stdout"), "launch took 42 ms\n");
        assert_eq!(get("stderr"), "warn\n");
    }

    #[test]
    fn failure_keeps_stderr() {
        let e = run("echo 'disk on fire' >&2; exit 3", vec![], None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("exited with status 3") && e.contains("disk on fire"),
            "{e}"
        );
        let e = run(
            "echo fine",
            vec![metric(Some(r"took (\d+)"), None).required(true)],
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("required metric 'm'")
                && e.contains("matched nothing")
                && e.contains("fine"),
            "{e}"
        );
    }

    /// Records the warnings a workload gives.
    struct Warnings(std::sync::Mutex<Vec<String>>);
    impl crate::workload::ProgressSink for Warnings {
        fn warning(&self, what: &str) {
            self.0.lock().unwrap().push(what.to_string());
        }
    }

    #[test]
    fn a_second_regex_that_misses_keeps_the_first_metric() {
        let d = tempfile::tempdir().unwrap();
        let w = CommandWorkload::new(CommandOptions {
            command: "echo 'copied 512 MB in 2 s, 1.2 GB/s'".into(),
            metrics: vec![
                CommandMetric::parse(
                    "size_mb",
                    Some(r"copied (\d+) MB"),
                    None,
                    "count",
                    "neutral",
                )
                .unwrap(),
                CommandMetric::parse("rate", Some(r"([0-9.]+) MB/s"), None, "MB/s", "higher")
                    .unwrap(),
            ],
            timeout: None,
        })
        .unwrap();
        let cancel = CancelToken::new();
        let sink = Warnings(Default::default());
        let m = w
            .run(&RunContext {
                dir: d.path(),
                cancel: &cancel,
                progress: &sink,
            })
            .unwrap();
        let names: Vec<&str> = m.metrics.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["size_mb", "elapsed_s"]);
        assert_eq!(m.metrics[0].value, 512.0);
        let warned = sink.0.lock().unwrap();
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(
            warned[0].contains("metric 'rate'") && warned[0].contains("1.2 GB/s"),
            "names the metric and shows stdout: {}",
            warned[0]
        );
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let start = std::time::Instant::now();
        let e = run(
            "sleep 300 & sleep 300; wait",
            vec![],
            Some(Duration::from_millis(200)),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("timeout"), "{e}");
        // Had any sleep survived, its pipes would keep the run open for 300 s; a kill of the
        // whole group ends it long before, however busy the machine.
        assert!(
            start.elapsed() < Duration::from_secs(150),
            "the pipes closed: all killed"
        );
    }

    #[test]
    fn empty_commands_and_duplicate_names_are_refused() {
        assert!(run("  ", vec![], None).is_err());
        let dup = vec![metric(Some("(1)"), None), metric(Some("(2)"), None)];
        assert!(
            run("true", dup, None)
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
    }
}
