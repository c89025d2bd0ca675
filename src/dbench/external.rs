//! dbench 4.00 as a driver: [`parse`] reads its output (progress ticks, final table, Throughput
//! line), [`ExternalDbench`] runs the real binary on the target directory.
//!
//! Why: fsperf's `dbench60` and many published numbers come from the real dbench; reading its
//! output into the native engine's names (`throughput_mb_s`, `max_latency_ms`, `<op>_count`,
//! `<op>_avg_ms`, `<op>_max_ms`, with `<op>` the table label in lower case exactly as
//! [`OpClass::metric_stem`]) makes the two engines' runs compare. dbench prints no latency
//! histogram, so the external runs carry no `<op>_lat_ns` histograms. The parser must never
//! accept a table row it cannot name: an unknown operation label is an error, not a new metric.

use crate::dbench::BUILTIN_LOADFILE;
use crate::dbench::loadfile::OpClass;
use crate::dbench::metrics;
use crate::model::Metric;
use crate::workload::external::{DBENCH, ParseError, numbered_lines, run_child, unreadable};
use crate::workload::{Measurements, RunContext, Workload, WorkloadError};
use std::path::PathBuf;

const TOOL: &str = "dbench";

/// Which phase a progress tick belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// `warmup`.
    Warmup,
    /// `execute`.
    Execute,
}

/// One 1 s progress line: `   2    184222   196.57 MB/sec  execute   9 sec  latency 14.776 ms`.
#[derive(Clone, Debug, PartialEq)]
pub struct DbenchTick {
    /// Line in the output (1-based).
    pub line: usize,
    /// Clients running.
    pub clients: u32,
    /// Loadfile lines processed.
    pub lines: u64,
    /// Decimal MB/s so far.
    pub mb_s: f64,
    /// Warmup or execute.
    pub phase: Phase,
    /// Seconds.
    pub t_s: u32,
    /// Latency dbench printed for the tick, ms.
    pub latency_ms: f64,
}

/// One row of the final table.
#[derive(Clone, Debug, PartialEq)]
pub struct DbenchOp {
    /// The operation class.
    pub class: OpClass,
    /// Count.
    pub count: u64,
    /// AvgLat, ms.
    pub avg_ms: f64,
    /// MaxLat, ms.
    pub max_ms: f64,
}

/// Everything read from one dbench output.
#[derive(Clone, Debug, PartialEq)]
pub struct DbenchOutput {
    /// `4.00`, from the banner, when present.
    pub version: Option<String>,
    /// The loadfile named on the `Running for N seconds with load '...'` line.
    pub loadfile: Option<String>,
    /// Progress ticks (warmup and execute), in order.
    pub ticks: Vec<DbenchTick>,
    /// The final table's rows (dbench omits operations with count 0).
    pub ops: Vec<DbenchOp>,
    /// The Throughput line's MB/s.
    pub throughput_mb_s: f64,
    /// Clients on the Throughput line.
    pub clients: u32,
    /// Processes on the Throughput line.
    pub procs: u32,
    /// `max_latency=` on the Throughput line, ms.
    pub max_latency_ms: f64,
    /// The Throughput line says `(sync open)` (dbench's `-s`).
    pub sync_open: bool,
    /// The Throughput line says `(sync dirs)` (dbench's `-S`).
    pub sync_dirs: bool,
}

fn num<T: std::str::FromStr>(n: usize, word: Option<&str>, what: &str) -> Result<T, ParseError> {
    let w = word.ok_or_else(|| ParseError::new(TOOL, n, format!("missing {what}")))?;
    w.parse::<T>()
        .map_err(|_| ParseError::new(TOOL, n, format!("{what} should be a number, found '{w}'")))
}

fn float(n: usize, word: Option<&str>, what: &str) -> Result<f64, ParseError> {
    let v: f64 = num(n, word, what)?;
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        Err(ParseError::new(
            TOOL,
            n,
            format!("{what} should be a non-negative number, found {v}"),
        ))
    }
}

fn expect_word(n: usize, word: Option<&str>, want: &str) -> Result<(), ParseError> {
    match word {
        Some(w) if w == want => Ok(()),
        Some(w) => Err(ParseError::new(
            TOOL,
            n,
            format!("expected '{want}', found '{w}'"),
        )),
        None => Err(ParseError::new(TOOL, n, format!("expected '{want}'"))),
    }
}

/// Read dbench 4.00's output (stdout). The final table and the Throughput line are required;
/// the banner and ticks are read when present. Lines dbench prints about preparing clients, and
/// status-mismatch notices from clients, are skipped.
pub fn parse(text: &str) -> Result<DbenchOutput, ParseError> {
    let mut out = DbenchOutput {
        version: None,
        loadfile: None,
        ticks: Vec::new(),
        ops: Vec::new(),
        throughput_mb_s: 0.0,
        clients: 0,
        procs: 0,
        max_latency_ms: 0.0,
        sync_open: false,
        sync_dirs: false,
    };
    let mut table_started = false;
    let mut throughput_seen = false;
    let mut last_error_line: Option<(usize, &str)> = None;
    for (n, line) in numbered_lines(text) {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let words: Vec<&str> = t.split_whitespace().collect();
        if throughput_seen {
            return Err(ParseError::new(
                TOOL,
                n,
                format!("unexpected text after the Throughput line: '{t}'"),
            ));
        }
        if let Some(v) = t.strip_prefix("dbench version ") {
            out.version = v.split_whitespace().next().map(str::to_string);
        } else if t.starts_with("Running for ") {
            out.loadfile = t
                .split_once("with load '")
                .and_then(|(_, r)| r.rsplit_once('\''))
                .map(|(l, _)| l.to_string());
        } else if words.first() == Some(&"Operation") {
            let want = ["Operation", "Count", "AvgLat", "MaxLat"];
            if words != want {
                return Err(ParseError::new(
                    TOOL,
                    n,
                    format!(
                        "expected the table header 'Operation Count AvgLat MaxLat', found '{t}'"
                    ),
                ));
            }
            if table_started {
                return Err(ParseError::new(TOOL, n, "a second final table"));
            }
            table_started = true;
        } else if t.chars().all(|c| c == '-') {
            if !table_started {
                return Err(ParseError::new(
                    TOOL,
                    n,
                    "a table rule before the table header",
                ));
            }
        } else if words.first() == Some(&"Throughput") {
            if !table_started {
                return Err(ParseError::new(
                    TOOL,
                    n,
                    "the Throughput line came before the final table",
                ));
            }
            read_throughput(n, &words, &mut out)?;
            throughput_seen = true;
        } else if table_started {
            let op = read_row(n, &words, t, &out.ops)?;
            out.ops.push(op);
        } else if words.len() >= 2 && words[1].chars().all(|c| c.is_ascii_digit()) {
            out.ticks.push(read_tick(n, &words, t)?);
        } else if words.get(1) == Some(&"cleanup") {
            // "   2  cleanup   3 sec": clients still removing their files.
        } else if t.contains("prepared for launch") || t == "releasing clients" {
            // Start-up lines: no numbers.
        } else if t.starts_with("dbench:") || t.starts_with("ERROR") || t.starts_with("[") {
            // Fatal errors ("dbench: error opening ...") and client notices.
            last_error_line = Some((n, t));
        }
        // Anything else before the table (client notices of other shapes) is not a number
        // dbench measured, and is skipped.
    }
    if !table_started {
        return Err(match last_error_line {
            Some((n, t)) => ParseError::new(TOOL, n, format!("no final table; dbench said: {t}")),
            None => ParseError::new(TOOL, 0, "no final table (did dbench finish?)"),
        });
    }
    if !throughput_seen {
        return Err(ParseError::new(
            TOOL,
            0,
            "no Throughput line after the final table",
        ));
    }
    Ok(out)
}

/// The Throughput line: `Throughput 196.566 MB/sec  2 clients  2 procs  max_latency=24.159 ms`,
/// into `out`.
fn read_throughput(n: usize, words: &[&str], out: &mut DbenchOutput) -> Result<(), ParseError> {
    let mut w = words.iter().copied();
    w.next();
    out.throughput_mb_s = float(n, w.next(), "throughput")?;
    expect_word(n, w.next(), "MB/sec")?;
    let mut next = w.next();
    // dbench adds " (sync open)" for -s and " (sync dirs)" for -S.
    for (flag, field) in [("open)", &mut out.sync_open), ("dirs)", &mut out.sync_dirs)] {
        let mut look = w.clone();
        if next == Some("(sync") && look.next() == Some(flag) {
            *field = true;
            w = look;
            next = w.next();
        }
    }
    out.clients = num(n, next, "clients")?;
    expect_word(n, w.next(), "clients")?;
    out.procs = num(n, w.next(), "procs")?;
    expect_word(n, w.next(), "procs")?;
    let ml = w
        .next()
        .and_then(|x| x.strip_prefix("max_latency="))
        .ok_or_else(|| ParseError::new(TOOL, n, "expected 'max_latency=<ms>'"))?;
    out.max_latency_ms = float(n, Some(ml), "max_latency")?;
    expect_word(n, w.next(), "ms")?;
    if let Some(extra) = w.next() {
        return Err(ParseError::new(
            TOOL,
            n,
            format!("unexpected '{extra}' at the end of the Throughput line"),
        ));
    }
    Ok(())
}

/// A row of the final table: `NTCreateX      72584     0.065    14.194`, after the rows `seen`.
fn read_row(n: usize, words: &[&str], t: &str, seen: &[DbenchOp]) -> Result<DbenchOp, ParseError> {
    if words.len() != 4 {
        return Err(ParseError::new(
            TOOL,
            n,
            format!("expected a table row 'Operation Count AvgLat MaxLat', found '{t}'"),
        ));
    }
    let class = OpClass::from_label(words[0]).ok_or_else(|| {
        ParseError::new(
            TOOL,
            n,
            format!("unknown operation '{}' in the final table", words[0]),
        )
    })?;
    if seen.iter().any(|o| o.class == class) {
        return Err(ParseError::new(
            TOOL,
            n,
            format!("operation '{}' appears twice", words[0]),
        ));
    }
    Ok(DbenchOp {
        class,
        count: num(n, Some(words[1]), "Count")?,
        avg_ms: float(n, Some(words[2]), "AvgLat")?,
        max_ms: float(n, Some(words[3]), "MaxLat")?,
    })
}

fn read_tick(n: usize, words: &[&str], t: &str) -> Result<DbenchTick, ParseError> {
    // "%4d  %8d  %7.2f MB/sec  {warmup|execute} %3.0f sec  latency %.03f ms"
    if words.len() != 10 {
        return Err(ParseError::new(
            TOOL,
            n,
            format!(
                "expected a progress line 'CLIENTS LINES RATE MB/sec PHASE T sec latency L ms', found '{t}'"
            ),
        ));
    }
    let phase = match words[4] {
        "warmup" => Phase::Warmup,
        "execute" => Phase::Execute,
        other => {
            return Err(ParseError::new(
                TOOL,
                n,
                format!("expected 'warmup' or 'execute', found '{other}'"),
            ));
        }
    };
    expect_word(n, Some(words[3]), "MB/sec")?;
    expect_word(n, Some(words[6]), "sec")?;
    expect_word(n, Some(words[7]), "latency")?;
    expect_word(n, Some(words[9]), "ms")?;
    Ok(DbenchTick {
        line: n,
        clients: num(n, Some(words[0]), "clients")?,
        lines: num(n, Some(words[1]), "lines")?,
        mb_s: float(n, Some(words[2]), "MB/sec")?,
        phase,
        t_s: num(n, Some(words[5]), "seconds")?,
        latency_ms: float(n, Some(words[8]), "latency")?,
    })
}

impl DbenchOutput {
    /// The metrics of the output, by the catalogue ([`metrics`]) as the native engine's
    /// (`DbenchReport::measurements`): `throughput_mb_s`, `max_latency_ms`, and for every
    /// operation in the table `<op>_count`, `<op>_avg_ms`, `<op>_max_ms`.
    pub fn metrics(&self) -> Vec<Metric> {
        metrics::measurements(&metrics::Summary {
            throughput_mb_s: self.throughput_mb_s,
            max_latency_ms: self.max_latency_ms,
            // The native engine lists classes in table order; so does dbench.
            ops: self
                .ops
                .iter()
                .map(|op| metrics::OpLine {
                    class: op.class,
                    count: op.count,
                    avg_ms: op.avg_ms,
                    max_ms: op.max_ms,
                    histogram: None,
                })
                .collect(),
        })
        .metrics
    }
}

/// The real dbench: `dbench -D <target> -t SECONDS -c LOADFILE CLIENTS`.
///
/// Without a loadfile, fsdelta's own loadfile (the native engine's default) is written to a
/// temporary file and replayed, so that the same test means the same load for both engines;
/// pass `Some("/usr/share/dbench/client.txt")` for dbench's stock load.
#[derive(Clone, Debug)]
pub struct ExternalDbench {
    clients: u32,
    seconds: u32,
    loadfile: Option<PathBuf>,
    binary: Option<PathBuf>,
}

impl ExternalDbench {
    /// `clients` (dbench's NPROCS) for `seconds` (`-t`), replaying `loadfile` (`-c`).
    pub fn new(
        clients: u32,
        seconds: u32,
        loadfile: Option<PathBuf>,
    ) -> Result<ExternalDbench, WorkloadError> {
        if clients == 0 {
            return Err(WorkloadError::InvalidOptions(
                "dbench needs at least one client".into(),
            ));
        }
        if seconds == 0 {
            return Err(WorkloadError::InvalidOptions(
                "dbench needs a time limit (-t) of at least 1 second".into(),
            ));
        }
        if let Some(p) = &loadfile
            && !p.is_file()
        {
            return Err(WorkloadError::InvalidOptions(format!(
                "dbench loadfile {} does not exist (Debian's dbench installs /usr/share/dbench/client.txt)",
                p.display()
            )));
        }
        Ok(ExternalDbench {
            clients,
            seconds,
            loadfile,
            binary: None,
        })
    }

    /// Run this binary instead of `dbench` from `PATH`.
    pub fn with_binary(mut self, path: impl Into<PathBuf>) -> Self {
        self.binary = Some(path.into());
        self
    }

    /// The command line (`-D` is the target directory), for the sample's workload
    /// description.
    pub fn command_line(&self) -> String {
        format!(
            "dbench -D <target> -t {} -c {} {}",
            self.seconds,
            self.loadfile
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "<fsdelta's loadfile>".into()),
            self.clients
        )
    }
}

/// Why the real dbench replaying `loadfile` would work outside the target: a path in it with a
/// `..` component (dbench 4.00 joins each path to the client's directory under `-D` and does
/// not stop `\\..\\..\\x` from climbing out; the native engine refuses such a loadfile when it
/// parses it). The message names the loadfile, the line and the path; `None` when every path
/// stays inside. A suite's external dbench test asks before anything runs.
pub fn loadfile_outside_target(loadfile: &std::path::Path) -> Option<String> {
    let text = match crate::os::input::read_to_string(loadfile) {
        Ok(t) => t,
        Err(e) => return Some(format!("dbench loadfile: {e}")),
    };
    for (n, line) in text.lines().enumerate() {
        for token in line.split_whitespace() {
            let path = token.trim_matches('"');
            if path.split(['\\', '/']).any(|c| c == "..") {
                return Some(format!(
                    "dbench loadfile {} line {}: path {path} climbs out of the client's \
                     directory with '..', so the real dbench would work outside the target \
                     directory its samples are stored with: remove the '..' components",
                    loadfile.display(),
                    n + 1
                ));
            }
        }
    }
    None
}

/// A file removed when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl Workload for ExternalDbench {
    fn engine(&self) -> &'static str {
        "dbench (external)"
    }

    fn run(&self, ctx: &RunContext<'_>) -> Result<Measurements, WorkloadError> {
        let bin = DBENCH.locate(self.binary.as_deref())?;
        ctx.progress.phase("dbench (external)");
        let mut _builtin = None;
        let loadfile = match &self.loadfile {
            Some(p) => p.clone(),
            None => {
                use std::sync::atomic::{AtomicU64, Ordering};
                static SEQ: AtomicU64 = AtomicU64::new(0);
                let p = std::env::temp_dir().join(format!(
                    "fsdelta-loadfile-{}-{}.txt",
                    std::process::id(),
                    SEQ.fetch_add(1, Ordering::Relaxed)
                ));
                std::fs::write(&p, BUILTIN_LOADFILE)
                    .map_err(|e| WorkloadError::io("write", &p, e))?;
                _builtin = Some(TempFile(p.clone()));
                p
            }
        };
        let mut cmd = std::process::Command::new(bin);
        cmd.arg("-D")
            .arg(ctx.dir)
            .arg("-t")
            .arg(self.seconds.to_string())
            .arg("-c")
            .arg(&loadfile)
            .arg(self.clients.to_string());
        let out = run_child(DBENCH, cmd, ctx.dir, None, ctx)?.succeeded()?;
        let parsed = parse(&out.stdout).map_err(|e| unreadable(e, &out))?;
        Ok(Measurements {
            metrics: parsed.metrics(),
            histograms: Vec::new(),
            logical_bytes_written: None,
            attachments: out.attachments(),
            facts: Default::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "dbench version 4.00 - Copyright Andrew Tridgell 1999-2004

Running for 10 seconds with load '/usr/share/dbench/client.txt' and minimum warmup 2 secs
2 of 2 processes prepared for launch   0 sec
releasing clients
   2      1000    50.00 MB/sec  warmup   1 sec  latency 3.500 ms
   2    184222   196.57 MB/sec  execute   9 sec  latency 14.776 ms
   2  cleanup  10 sec

 Operation      Count    AvgLat    MaxLat
 ----------------------------------------
 NTCreateX      72584     0.065    14.194
 Close          53257     0.002     8.480
 Flush           5097     1.663    16.875

Throughput 196.566 MB/sec  2 clients  2 procs  max_latency=24.159 ms
";

    #[test]
    fn reads_ticks_table_and_throughput() {
        let p = parse(OUT).unwrap();
        assert_eq!(p.version.as_deref(), Some("4.00"));
        assert_eq!(p.loadfile.as_deref(), Some("/usr/share/dbench/client.txt"));
        assert_eq!(p.ticks.len(), 2);
        assert_eq!(p.ticks[0].phase, Phase::Warmup);
        assert_eq!(p.ticks[1].lines, 184222);
        assert_eq!(p.ticks[1].latency_ms, 14.776);
        assert_eq!(p.ticks[1].t_s, 9);
        assert_eq!(p.ops.len(), 3);
        assert_eq!(p.ops[0].class, OpClass::NtCreateX);
        assert_eq!((p.clients, p.procs), (2, 2));
        assert_eq!(p.throughput_mb_s, 196.566);
        assert_eq!(p.max_latency_ms, 24.159);
        let names: Vec<String> = p.metrics().into_iter().map(|m| m.name).collect();
        assert_eq!(
            names,
            [
                "throughput_mb_s",
                "max_latency_ms",
                "ntcreatex_count",
                "ntcreatex_avg_ms",
                "ntcreatex_max_ms",
                "close_count",
                "close_avg_ms",
                "close_max_ms",
                "flush_count",
                "flush_avg_ms",
                "flush_max_ms"
            ]
        );
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse(&OUT.replace("Flush           5097", "Frobnicate      5097")).unwrap_err();
        assert_eq!(e.line, 14, "{e}");
        assert!(e.message.contains("unknown operation 'Frobnicate'"), "{e}");
        let e = parse(&OUT.replace("max_latency=24.159", "max_latency=x")).unwrap_err();
        assert_eq!(e.line, 16, "{e}");
        let e =
            parse(&OUT.replace("196.57 MB/sec  execute", "196.57 MB/sec  running")).unwrap_err();
        assert_eq!(e.line, 7, "{e}");
        let cut: String = OUT.lines().take(12).collect::<Vec<_>>().join("\n");
        let e = parse(&cut).unwrap_err();
        assert!(e.message.contains("no Throughput line"), "{e}");
        let e =
            parse("dbench version 4.00\n\ndbench: error opening '/x': No such file or directory\n")
                .unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("error opening"), "{e}");
        let e = parse(&format!("{OUT}trailing\n")).unwrap_err();
        assert!(e.message.contains("after the Throughput line"), "{e}");
    }

    #[test]
    fn new_rejects_what_dbench_cannot_run() {
        assert!(ExternalDbench::new(0, 10, None).is_err());
        assert!(ExternalDbench::new(1, 0, None).is_err());
        assert_eq!(
            ExternalDbench::new(2, 60, None).unwrap().command_line(),
            "dbench -D <target> -t 60 -c <fsdelta's loadfile> 2"
        );
        let e = ExternalDbench::new(1, 1, Some("/nonexistent/client.txt".into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/client.txt"), "{e}");
    }
}
