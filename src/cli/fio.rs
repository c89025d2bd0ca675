//! `fsdelta fio`: the native fio-compatible engine on its own.
//!
//! Why it exists: users bring job files they run under fio 3.33 and get fio's output (normal,
//! JSON, json+ or terse) without fio installed. This edge only splits the arguments, reads job
//! files, wires SIGINT to the cancel token, runs the engine and prints what `fio::output`
//! renders; it never measures or formats numbers itself. Exit codes: 0 ok, 2 error (bad job, I/O failure),
//! 130 interrupted.

use crate::fio::engine::{EtaReport, FioRun, FioWorkload, StatusReport};
use crate::fio::jobfile::{self, JobFileError, RawSection, SystemSources};
use crate::workload::{RunContext, WorkloadError};

const USAGE: &str = "\
usage: fsdelta fio [--output-format=normal|json|json+|terse[,...]] [--minimal] [--terse-version=2|3|4|5]
                   [--output=FILE] [--parse-only] [--status-interval=TIME]
                   [--section=NAME]... [--readonly] [--showcmd] [--eta=never|auto|always]
                   [--alloc-size=KB] [--opt=value ...] [JOBFILE...] [--name=JOB --opt=value ...]

Runs fio job files with fsdelta's native fio 3.33-compatible engine (threads, never processes).
Job options may also be given on the command line as fio does: options before the first
--name=x are defaults for every job (a job file's own options override them, as in fio);
--name=x starts a command-line job, which runs before the job files' jobs. Files are created
relative to the current directory unless directory= or an absolute filename= says otherwise.
A job without size= covers the whole of its existing files or block devices.

fio's own flags: --section=NAME runs only that section (repeatable); --readonly refuses every
job that would write; --showcmd prints each job file as a command line and runs nothing;
--parse-only validates the jobs and runs nothing; --eta=always prints fio's ETA line
(\"Jobs: 1 (f=1): [r(1)][50.0%][r=15.6MiB/s][r=4002 IOPS][eta 00m:03s]\", each ended by a
carriage return) on stdout every second while the jobs run, --eta=auto (the default) only when
stdout is a terminal, --eta=never never, and none when stdout gets only JSON or terse;
--output-format takes a comma-separated list (normal, json, json+, terse),
printed in fio's order (terse, json, normal); json+ is the JSON with each latency's bins;
--minimal is --output-format=terse; --terse-version=2|3|4|5 picks fio's terse line format
(3, fio's default; 2 and 4 add the trim block, 5 also the bw and iops sample fields);
--status-interval=TIME (fio's time suffixes, seconds by default, at least 1ms) prints every
job's cumulative stats that often while the jobs run, in every chosen format (a full JSON
document, terse lines, or the normal block per report), then the final report.

Where it differs from fio 3.33, on purpose:
  - jobs run as threads (thread is accepted; processes are never forked);
  - an unknown option, an unknown size or time suffix, or a value range (bs=4k-16k) is an
    error naming file and line, never ignored or guessed; an unset ${VAR} expands to nothing
    with a warning (fio 3.33 expands it silently);
  - write buffers hold fsdelta's own pseudo-random bytes (same compressibility rules, not
    fio's exact bytes); layout writes 1 MiB at a time;
  - io_uring and libaio drain in-flight I/O before an fsync=/fdatasync= sync and before an
    openfiles rotation (fio queues the sync in the ring);
  - rw=rw with loops > 1 may split reads and writes slightly differently after a file wraps;
  - usr_cpu/sys_cpu count from the start of the timed phase (layout excluded); disk_util
    covers the whole run (layout included);
  - a job below rate_min prints fio's \"fio: pid=..., err=5/...\" line on stderr (fio: stdout);
    a Poisson rate below one block per second is an error (fio divides by zero);
    io_submit_mode=offload refuses ramp_time, verify, logs, latency_target, flow, fsync=,
    max_latency and openfiles rotation;
  - --alloc-size=KB is accepted and changes nothing (it sizes fio's shared memory for job
    processes; there are none here);
  - --status-interval: a job answers at its next I/O; one that does not answer within an
    interval (a long thinktime, a verify pass) is reported with its last answer.

Supported job options:";

/// How to print results, in the order fio prints them (terse, json, normal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum OutputFormat {
    /// fio's terse (`--minimal`) lines, terse version 3.
    Terse,
    /// fio's --output-format=json.
    Json,
    /// fio's --output-format=json+: the JSON with latency `bins` (printed once, in json's place).
    JsonPlus,
    /// fio's text summary.
    Normal,
}

/// The parsed command line.
#[derive(Debug, PartialEq)]
pub struct FioArgs {
    /// Job files in order.
    pub job_files: Vec<String>,
    /// Command-line job options (fio's `--name=x --rw=...` form).
    pub job_args: Vec<String>,
    /// Output formats, in the order fio prints them.
    pub formats: Vec<OutputFormat>,
    /// Write output here instead of stdout.
    pub output: Option<String>,
    /// -h / --help.
    pub help: bool,
    /// --parse-only: validate the jobs, run nothing (as fio's --parse-only).
    pub parse_only: bool,
    /// --section=NAME: run only these sections.
    pub sections: Vec<String>,
    /// --readonly: refuse jobs that write.
    pub readonly: bool,
    /// --showcmd: print job files as command lines.
    pub showcmd: bool,
    /// --terse-version: the terse lines' format (fio's default 3).
    pub terse_version: crate::fio::output::TerseVersion,
    /// --status-interval: print the stats so far this often while the jobs run.
    pub status_interval: Option<std::time::Duration>,
    /// --eta: when fio's ETA line is printed.
    pub eta: Eta,
}

/// fio's --eta.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eta {
    /// Never.
    Never,
    /// When stdout is a terminal (fio's default).
    Auto,
    /// Always, a terminal or not.
    Always,
}

fn parse_formats(v: &str) -> Result<Vec<OutputFormat>, String> {
    let mut out = Vec::new();
    for f in v.split(',') {
        let f = match f.trim() {
            "normal" => OutputFormat::Normal,
            "json" => OutputFormat::Json,
            "json+" => OutputFormat::JsonPlus,
            "terse" | "minimal" | "csv" => OutputFormat::Terse,
            other => {
                return Err(format!(
                    "--output-format={other} is not supported (use normal, json, json+, terse or a list such as json,normal)"
                ));
            }
        };
        if !out.contains(&f) {
            out.push(f);
        }
    }
    // fio prints its formats in a fixed order whatever the list's: terse, json, normal; json+
    // is json with bins, one document.
    if out.contains(&OutputFormat::JsonPlus) {
        out.retain(|f| *f != OutputFormat::Json);
    }
    out.sort();
    Ok(out)
}

/// Split `fsdelta fio` arguments into our own flags, job files and job options.
pub fn parse_args(args: &[String]) -> Result<FioArgs, String> {
    let mut a = FioArgs {
        job_files: Vec::new(),
        job_args: Vec::new(),
        formats: vec![OutputFormat::Normal],
        output: None,
        help: false,
        parse_only: false,
        sections: Vec::new(),
        readonly: false,
        showcmd: false,
        terse_version: crate::fio::output::TerseVersion::DEFAULT,
        status_interval: None,
        eta: Eta::Auto,
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (arg.as_str(), None),
        };
        let take_value = |i: &mut usize| -> Result<String, String> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            *i += 1;
            args.get(*i)
                .cloned()
                .ok_or_else(|| format!("{key} needs a value"))
        };
        match key {
            "-h" | "--help" => a.help = true,
            "--parse-only" => a.parse_only = true,
            "--readonly" => a.readonly = true,
            "--showcmd" => a.showcmd = true,
            "--output-format" => a.formats = parse_formats(&take_value(&mut i)?)?,
            "--minimal" => a.formats = vec![OutputFormat::Terse],
            "--terse-version" => {
                let v = take_value(&mut i)?;
                a.terse_version = v
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .and_then(crate::fio::output::TerseVersion::new)
                    .ok_or_else(|| {
                        format!("--terse-version={v}: bad terse version (fio knows 2, 3, 4 and 5)")
                    })?;
            }
            "--status-interval" => {
                let v = take_value(&mut i)?;
                let t = jobfile::expr::parse_time(&v)
                    .map_err(|e| format!("--status-interval={v}: {e}"))?;
                // fio keeps whole milliseconds and refuses less than one.
                if t.as_micros() < 1000 {
                    return Err(format!(
                        "--status-interval={v}: status interval too small (at least 1ms, as fio)"
                    ));
                }
                a.status_interval = Some(std::time::Duration::from_millis(t.as_millis() as u64));
            }
            "--output" => a.output = Some(take_value(&mut i)?),
            "--section" => a.sections.push(take_value(&mut i)?),
            "--eta" => {
                let v = take_value(&mut i)?;
                a.eta = match v.as_str() {
                    "never" => Eta::Never,
                    "auto" => Eta::Auto,
                    "always" => Eta::Always,
                    _ => return Err(format!("--eta={v}: use never, auto or always")),
                };
            }
            // fio's shared-memory pool size for its job processes (fsperf passes it): workers
            // here are threads, so there is no pool to size. Accepted, and said in --help.
            "--alloc-size" => {
                take_value(&mut i)?;
            }
            k if k.starts_with("--") => {
                a.job_args.push(arg.clone());
                // `--bs 4k`: keep the value with its option.
                if inline.is_none() {
                    if let Some(next) = args.get(i + 1).filter(|n| !n.starts_with("--")) {
                        if !jobfile::options::is_set_only(&k[2..])
                            && !std::path::Path::new(next).is_file()
                        {
                            a.job_args.push(next.clone());
                            i += 1;
                        }
                    }
                }
            }
            k if k.starts_with('-') && k.len() > 1 => {
                return Err(format!("unknown flag '{k}'"));
            }
            _ => a.job_files.push(arg.clone()),
        }
        i += 1;
    }
    Ok(a)
}

/// Read and parse every job source into raw sections, in fio's order: the command line's
/// defaults (options before the first --name), its jobs, then the job files (a second file
/// starts with a stonewall, as in fio). Warnings (an unset ${VAR}) stay with their sections.
pub fn load_sections(a: &FioArgs) -> Result<Vec<RawSection>, String> {
    let mut sections: Vec<RawSection> = Vec::new();
    if !a.job_args.is_empty() {
        let mut s =
            jobfile::parse_cmdline(&a.job_args, &SystemSources).map_err(|e| e.to_string())?;
        sections.append(&mut s);
    }
    let cmdline_jobs = sections.iter().any(|x| !x.is_global());
    for (n, f) in a.job_files.iter().enumerate() {
        let text = jobfile::read_job_source(std::path::Path::new(f))?;
        let mut s = jobfile::parse_ini(&text, f, &SystemSources).map_err(|e| e.to_string())?;
        if n > 0 || cmdline_jobs {
            jobfile::mark_file_boundary(&mut s);
        }
        sections.append(&mut s);
    }
    if !a.sections.is_empty() {
        for want in &a.sections {
            if !sections.iter().any(|s| &s.name == want && !s.is_global()) {
                return Err(format!("--section={want}: no job section has that name"));
            }
        }
        sections.retain(|s| s.is_global() || a.sections.contains(&s.name));
    }
    Ok(sections)
}

/// fio's --showcmd for one job file's sections: `fio `, then per section `--name=NAME ` (not
/// for [global]) and its options as fio lists them (canonical names, values as parsed, fio's
/// order): `--key=value ` or, for a bare flag, `--key ` (`--description="..." ` quoted), and a
/// newline. Each option is checked as a run would (an unknown option is an error naming it).
pub fn showcmd(sections: &[RawSection]) -> Result<String, JobFileError> {
    let mut out = String::new();
    for (n, s) in sections.iter().enumerate() {
        if n == 0 {
            out.push_str("fio ");
        }
        if !s.is_global() {
            out.push_str(&format!("--name={} ", s.name));
        }
        for o in jobfile::options::listing_order(&s.options, true) {
            jobfile::options::apply(&mut jobfile::JobSpec::default(), o)?;
            let name = jobfile::options::shown_name(&o.key);
            let q = if name == "description" { "\"" } else { "" };
            match &o.value {
                Some(v) => out.push_str(&format!("--{name}={q}{v}{q} ")),
                None => out.push_str(&format!("--{name} ")),
            }
        }
    }
    out.push('\n');
    Ok(out)
}

/// --showcmd: one line per job file, as fio (the command line's own jobs are not shown).
fn showcmd_files(a: &FioArgs) -> Result<String, String> {
    let mut out = String::new();
    for f in &a.job_files {
        let text = jobfile::read_job_source(std::path::Path::new(f))?;
        let mut s = jobfile::parse_ini(&text, f, &SystemSources).map_err(|e| e.to_string())?;
        if !a.sections.is_empty() {
            s.retain(|x| x.is_global() || a.sections.contains(&x.name));
        }
        out.push_str(&showcmd(&s).map_err(|e| e.to_string())?);
    }
    Ok(out)
}

/// Check before running that `--output` can be written (issue: a run must not be lost because
/// its output file cannot be created afterwards), and that it is not a symlink or another
/// user's file (`os::files::check_output`).
fn check_output(path: &str) -> Result<(), String> {
    use crate::os::files;
    let p = std::path::Path::new(path);
    let fail = |e: files::FileError| format!("--output: cannot be written: {e}");
    files::probe_output(p).map_err(fail)
}

/// One report in the chosen formats, in fio's order (with json,normal: JSON, then the normal
/// report, as fio prints them). What precedes the reports ([`run_header`], the layout lines)
/// is put in place by the caller: before the run when anything is printed during it, else in
/// front of the final report.
fn render(a: &FioArgs, run: &FioRun) -> String {
    let mut text = String::new();
    for f in &a.formats {
        text.push_str(&match f {
            OutputFormat::Terse => crate::fio::output::terse(run, a.terse_version),
            OutputFormat::Json => crate::fio::output::json(run),
            OutputFormat::JsonPlus => crate::fio::output::json_plus(run),
            OutputFormat::Normal => crate::fio::output::normal_block(run),
        });
    }
    text
}

/// What fio prints before the reports, in its order: its job lines (normal format only), then
/// what its jobs printed as they were set up (`held`: files laid out, start-up notes; none
/// when this is printed before the run, as those lines then come as they happen).
fn run_header(a: &FioArgs, set: &jobfile::JobSet, held: &str) -> String {
    let mut text = String::new();
    if a.formats.contains(&OutputFormat::Normal) {
        text.push_str(&crate::fio::output::normal_header(set));
    }
    text.push_str(held);
    text
}

/// Where --status-interval's reports go as they come: stdout or the --output file; the first
/// write error is kept for the exit status.
struct Sink {
    out: Box<dyn std::io::Write + Send>,
    what: String,
    error: Option<String>,
}

impl Sink {
    fn open(path: Option<&str>) -> Result<Sink, String> {
        Ok(match path {
            Some(p) => Sink {
                out: Box::new(
                    crate::os::files::open_output(std::path::Path::new(p))
                        .map_err(|e| format!("--output: {e}"))?,
                ),
                what: format!("write {p}"),
                error: None,
            },
            None => Sink {
                out: Box::new(std::io::stdout()),
                what: "write stdout".into(),
                error: None,
            },
        })
    }

    fn write(&mut self, text: &str) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self
            .out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush())
        {
            self.error = Some(format!("{}: {e}", self.what));
        }
    }
}

/// Write `text` to stdout now; a closed pipe (`fsdelta fio ... | head`) ends nothing here
/// (the run goes on and its exit status stands).
fn out(text: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes()).and_then(|()| o.flush());
}

fn lock<T>(s: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// Run `fsdelta fio ARGS`; returns the exit code.
pub fn main(args: &[String]) -> i32 {
    match jobs_of(args) {
        Ok((a, set)) => run_jobs(&a, set),
        Err(code) => code,
    }
}

/// Parse the arguments and read the jobs; `Err(exit code)` when nothing is to run (`--help`,
/// `--showcmd`, `--parse-only`, or an error, told on stderr).
fn jobs_of(args: &[String]) -> Result<(FioArgs, jobfile::JobSet), i32> {
    let a = match parse_args(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("fsdelta fio: {e}\n(see fsdelta fio --help)");
            return Err(2);
        }
    };
    if a.help {
        println!("{USAGE}{}", jobfile::options::help_text());
        return Err(0);
    }
    if a.job_files.is_empty() && a.job_args.is_empty() {
        eprintln!("fsdelta fio: no job file and no --name=JOB given\n{USAGE} ...");
        return Err(2);
    }
    let sections = match load_sections(&a) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fsdelta fio: {e}");
            return Err(2);
        }
    };
    if a.showcmd {
        match showcmd_files(&a) {
            Ok(text) => {
                print!("{text}");
                return Err(0);
            }
            Err(e) => {
                eprintln!("fsdelta fio: {e}");
                return Err(2);
            }
        }
    }
    let mut set = match jobfile::build_jobs(&sections) {
        Ok(set) => set,
        Err(e) => {
            let e: JobFileError = e;
            eprintln!("fsdelta fio: {e}");
            return Err(2);
        }
    };
    for w in &set.warnings {
        eprintln!("fsdelta fio: warning: {w}");
    }
    if a.readonly {
        if let Some(j) = set.jobs.iter().find(|j| j.rw.writes() || j.rw.trims()) {
            eprintln!(
                "fsdelta fio: job '{}' has write or trim bit set, but --readonly was given (as fio, nothing runs)",
                j.name
            );
            return Err(2);
        }
        set.read_only = true;
    }
    // fio refuses a node list naming a node the machine lacks when it reads the job file.
    for j in &set.jobs {
        if let Err(e) = crate::fio::engine::numa::check(j) {
            eprintln!("fsdelta fio: {e}");
            return Err(2);
        }
    }
    if a.parse_only {
        return Err(0);
    }
    if let Some(path) = &a.output {
        if let Err(e) = check_output(path) {
            eprintln!("fsdelta fio: {e}");
            return Err(2);
        }
    }
    Ok((a, set))
}

/// Run the jobs of `set` in the current directory, printing fio's output as it would.
fn run_jobs(a: &FioArgs, set: jobfile::JobSet) -> i32 {
    let cancel = match super::install_signals() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("fsdelta fio: cannot handle SIGINT/SIGTERM: {e}");
            return 2;
        }
    };
    let dir = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("fsdelta fio: current directory: {e}");
            return 2;
        }
    };
    // --status-interval: the output opens now, fio's header lines first (as fio prints them
    // before the jobs start), every report is written as it comes.
    let sink: Option<std::sync::Mutex<Sink>> = match a.status_interval {
        None => None,
        Some(_) => match Sink::open(a.output.as_deref()) {
            Ok(s) => Some(std::sync::Mutex::new(s)),
            Err(e) => {
                eprintln!("fsdelta fio: {e}");
                return 2;
            }
        },
    };
    let eta_on = eta_on(a);
    // With the ETA on stdout, fio's header lines come first there, before the run; with
    // --status-interval they open the reports' sink. Otherwise they come with the report.
    let early = sink.is_some() || (eta_on && a.output.is_none());
    if let Some(sink) = &sink {
        lock(sink).write(&run_header(a, &set, ""));
    } else if early {
        out(&run_header(a, &set, ""));
    }
    let workload = FioWorkload::new(set);
    // Warnings of the run (a refused clocksource=cpu) go to stderr, as fio's; its "Laying out
    // IO file" lines (normal output only) where its header went, as they come.
    let eta_line_open = std::sync::Mutex::new(false);
    let lines = Lines {
        normal: a.formats.contains(&OutputFormat::Normal),
        to_file: a.output.is_some(),
        early,
        sink: sink.as_ref(),
        held: std::sync::Mutex::new(String::new()),
        eta_open: &eta_line_open,
    };
    let ctx = RunContext {
        dir: &dir,
        cancel: &cancel,
        progress: &lines,
    };
    let print_eta = |l: &str| {
        let mut open = lock(&eta_line_open);
        out(l);
        *open = true;
    };
    let eta = eta_on.then_some(EtaReport { print: &print_eta });
    let report = |run: &FioRun| {
        if let Some(sink) = &sink {
            let mut text = render(a, run);
            let mut open = lock(&eta_line_open);
            if a.output.is_none() && std::mem::take(&mut *open) {
                // A report on stdout starts below the ETA line.
                text.insert(0, '\n');
            }
            lock(sink).write(&text);
        }
    };
    let status = a.status_interval.map(|every| StatusReport {
        every,
        report: &report,
    });
    let run = workload.execute_with(&ctx, status.as_ref(), eta.as_ref());
    // fio ends its last ETA line with the newline that otherwise opens the normal report.
    let mut eta_open = *lock(&eta_line_open);
    if eta_open && (run.is_err() || sink.is_some()) {
        // Interrupted, failed, or reports already interleaved: the ETA line ends here.
        out("\n");
        eta_open = false;
    }
    let run = match run {
        Ok(r) => r,
        Err(WorkloadError::Cancelled) => {
            eprintln!("fsdelta fio: interrupted");
            return 130;
        }
        Err(e) => {
            eprintln!("fsdelta fio: {e}");
            return 2;
        }
    };
    finish(a, &run, sink.as_ref(), early, &lines, eta_open)
}

/// Whether fio's ETA line (calc_thread_status) is printed: not when stdout gets only JSON or
/// terse, not with --eta=never, and with auto only on a terminal. It goes to stdout, whatever
/// --output.
fn eta_on(a: &FioArgs) -> bool {
    use std::io::IsTerminal;
    let wanted = match a.eta {
        Eta::Never => false,
        Eta::Auto => std::io::stdout().is_terminal(),
        Eta::Always => true,
    };
    wanted && (a.formats.contains(&OutputFormat::Normal) || a.output.is_some())
}

/// After the run: fio's error lines for jobs that ended in error, then the report (to the
/// --status-interval sink, the --output file or stdout); the exit code.
fn finish(
    a: &FioArgs,
    run: &FioRun,
    sink: Option<&std::sync::Mutex<Sink>>,
    early: bool,
    lines: &Lines<'_>,
    mut eta_open: bool,
) -> i32 {
    // A job that ended in error beside its stats (a missed rate_min, an I/O error not
    // continued on): fio's stderr lines (an I/O error's own was printed when it happened),
    // the report as usual, exit status 1.
    let mut failed = false;
    for r in &run.results {
        if let Some(e) = &r.stats.error {
            failed = true;
            if !e.told {
                eprintln!("{}: {}", r.name, e.message);
            }
            eprintln!("fio: pid={}, err={}/{}", r.stats.tid, e.errno, e.verror);
        }
    }
    if let Some(sink) = sink {
        let mut sink = lock(sink);
        sink.write(&render(a, run));
        if let Some(e) = sink.error.take() {
            eprintln!("fsdelta fio: {e}");
            return 2;
        }
        return if failed { 1 } else { 0 };
    }
    let mut text = String::new();
    if !early {
        text.push_str(&run_header(a, &run.set, &lock(&lines.held)));
    }
    text.push_str(&render(a, run));
    if eta_open && a.output.is_none() && text.starts_with('\n') {
        eta_open = false;
    }
    if eta_open {
        out("\n");
    }
    match &a.output {
        Some(path) => {
            if let Err(e) =
                crate::os::files::write_output(std::path::Path::new(path), text.as_bytes())
            {
                eprintln!("fsdelta fio: --output: {e}");
                return 2;
            }
        }
        None => out(&text),
    }
    if failed { 1 } else { 0 }
}

/// Where the run's lines go: its warnings to stderr, as fio's; its "Laying out IO file" lines
/// (normal output only) where its header went, as they come, or held for the end.
struct Lines<'s> {
    /// Normal output is among the formats.
    normal: bool,
    /// The report goes to an --output file.
    to_file: bool,
    /// The header went out before the run (so do these lines).
    early: bool,
    /// The --status-interval sink, when there is one.
    sink: Option<&'s std::sync::Mutex<Sink>>,
    /// Lines held for the end (the header is printed with the report).
    held: std::sync::Mutex<String>,
    /// An ETA line is on stdout, ended by its carriage return only; held while anything
    /// is written to stdout during the run, so lines never run into each other.
    eta_open: &'s std::sync::Mutex<bool>,
}
impl crate::workload::ProgressSink for Lines<'_> {
    fn warning(&self, what: &str) {
        eprintln!("fsdelta fio: warning: {what}");
    }
    fn peer_line(&self, line: &str) {
        if self.normal {
            self.emit(line);
        }
    }
    fn peer_note(&self, line: &str) {
        // fio 3.33 with --output prints its jobs' start-up notes nowhere (neither the
        // file nor stdout); without, they go where its header goes.
        if !self.to_file {
            self.emit(line);
        }
    }
}
impl Lines<'_> {
    /// A line where fio's header goes (the --output file or stdout), now or held for the
    /// end.
    fn emit(&self, line: &str) {
        let mut line = format!("{line}\n");
        let mut open = lock(self.eta_open);
        if self.early && std::mem::take(&mut *open) {
            // Keep the ETA line whole: the line goes below it.
            line.insert(0, '\n');
        }
        match (self.sink, self.early) {
            (Some(sink), _) => lock(sink).write(&line),
            (None, true) => out(&line),
            (None, false) => lock(&self.held).push_str(&line),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments_split_into_flags_files_and_job_options() {
        let a = parse_args(&v(&[
            "a.fio",
            "--output-format=json",
            "--name=x",
            "--bs",
            "8k",
            "--time_based",
            "--output",
            "out.json",
        ]))
        .unwrap();
        assert_eq!(a.job_files, vec!["a.fio"]);
        assert_eq!(a.formats, vec![OutputFormat::Json]);
        assert_eq!(a.output.as_deref(), Some("out.json"));
        assert_eq!(a.job_args, v(&["--name=x", "--bs", "8k", "--time_based"]));
        assert!(parse_args(&v(&["--output-format=xml"])).is_err());
        assert!(parse_args(&v(&["-x"])).is_err());
        assert!(parse_args(&v(&["--help"])).unwrap().help);
    }

    #[test]
    fn command_line_options_are_defaults_for_the_job_files() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("j.fio");
        std::fs::write(&f, "[j]\nsize=1m\n[k]\nrw=write\n").unwrap();
        let a = parse_args(&v(&["--size=2m", "--runtime=5", f.to_str().unwrap()])).unwrap();
        let set = jobfile::build_jobs(&load_sections(&a).unwrap()).unwrap();
        // the file's own size wins, as in fio; the command line fills what the file leaves out
        assert_eq!(
            set.jobs[0].size,
            Some(jobfile::SizeSpec::Bytes(jobfile::Bytes(1 << 20)))
        );
        assert_eq!(
            set.jobs[1].size,
            Some(jobfile::SizeSpec::Bytes(jobfile::Bytes(2 << 20)))
        );
        assert_eq!(set.jobs[1].runtime, Some(std::time::Duration::from_secs(5)));
        let a = parse_args(&v(&["--section=k", f.to_str().unwrap(), "--size=2m"])).unwrap();
        let set = jobfile::build_jobs(&load_sections(&a).unwrap()).unwrap();
        assert_eq!(set.jobs.len(), 1);
        assert_eq!(set.jobs[0].name, "k");
        let a = parse_args(&v(&["--section=nope", f.to_str().unwrap()])).unwrap();
        assert!(load_sections(&a).unwrap_err().contains("--section=nope"));
    }

    #[test]
    fn output_formats_are_a_list() {
        let a = parse_args(&v(&["--output-format=json,normal"])).unwrap();
        assert_eq!(a.formats, vec![OutputFormat::Json, OutputFormat::Normal]);
        let a = parse_args(&v(&["--output-format=normal,terse,json"])).unwrap();
        assert_eq!(
            a.formats,
            vec![
                OutputFormat::Terse,
                OutputFormat::Json,
                OutputFormat::Normal
            ]
        );
        let a = parse_args(&v(&["--output-format=json+,json,normal"])).unwrap();
        assert_eq!(
            a.formats,
            vec![OutputFormat::JsonPlus, OutputFormat::Normal]
        );
        let a = parse_args(&v(&["--output-format=json", "--minimal"])).unwrap();
        assert_eq!(a.formats, vec![OutputFormat::Terse]);
        for t in 2..=5 {
            let a = parse_args(&v(&[&format!("--terse-version={t}")])).unwrap();
            assert_eq!(
                Some(a.terse_version),
                crate::fio::output::TerseVersion::new(t)
            );
        }
        assert_eq!(
            parse_args(&v(&[])).unwrap().terse_version,
            crate::fio::output::TerseVersion::DEFAULT
        );
        let every = |t: &str| {
            parse_args(&v(&[&format!("--status-interval={t}")])).map(|a| a.status_interval.unwrap())
        };
        assert_eq!(every("2"), Ok(std::time::Duration::from_secs(2)));
        assert_eq!(every("500ms"), Ok(std::time::Duration::from_millis(500)));
        assert_eq!(every("1500us"), Ok(std::time::Duration::from_millis(1)));
        assert!(every("999us").unwrap_err().contains("too small"));
        assert!(every("2x").is_err());
        assert_eq!(parse_args(&v(&[])).unwrap().status_interval, None);
        for bad in ["1", "6", "x"] {
            let e = parse_args(&v(&[&format!("--terse-version={bad}")])).unwrap_err();
            assert!(e.contains("2, 3, 4 and 5"), "{e}");
        }
        assert!(parse_args(&v(&["--eta=sometimes"])).is_err());
        assert!(parse_args(&v(&["--eta=never"])).is_ok());
    }

    #[test]
    fn showcmd_prints_the_command_line_form() {
        let secs = jobfile::parse_ini(
            "[global]\nbs=8k\n[a]\nsize=1m\ntime_based\n",
            "t.fio",
            &SystemSources,
        )
        .unwrap();
        assert_eq!(
            showcmd(&secs).unwrap(),
            "fio --bs=8k --name=a --size=1m --time_based \n"
        );
        // fio's canonical names, its order (lockfile first, filename last, engine options
        // after the rest) and the value as parsed.
        let secs = jobfile::parse_ini(
            "[j]\nfilename=/tmp/x\nioengine=io_uring\nregisterfiles\nreadwrite=read\nblocksize=4k\nnr_files=1\nio_limit=64k\ntimeout=1\nlockfile=none\nsize=4*1024*2*$pagesize/4096\ndescription=a b\n",
            "t.fio",
            &SystemSources,
        )
        .unwrap();
        assert_eq!(
            showcmd(&secs).unwrap(),
            "fio --name=j --lockfile=none --ioengine=io_uring --rw=read --bs=4k --nrfiles=1 --io_size=64k --runtime=1 --size=8192 --description=\"a b\" --filename=/tmp/x --registerfiles \n"
        );
        let bad = jobfile::parse_ini("[j]\nno_such=1\n", "t.fio", &SystemSources).unwrap();
        assert!(showcmd(&bad).unwrap_err().to_string().contains("no_such"));
    }

    #[test]
    fn an_unwritable_output_is_found_before_the_run() {
        assert!(check_output("/no/such/dir/out").is_err());
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out");
        check_output(p.to_str().unwrap()).unwrap();
        assert!(!p.exists(), "the check leaves no file behind");
    }
}
