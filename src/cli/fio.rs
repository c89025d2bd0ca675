//! `fsdelta fio`: the native fio-compatible engine on its own.
//!
//! Why it exists: users bring job files they run under fio 3.33 and get fio's output (normal or
//! JSON) without fio installed. This edge only splits the arguments, reads job files, wires
//! SIGINT to the cancel token, runs the engine and prints what `report::fio` renders; it never
//! measures or formats numbers itself. Exit codes: 0 ok, 2 error (bad job, I/O failure),
//! 130 interrupted.

use crate::plan::jobfile::{self, JobFileError, RawSection, SystemSources};
use crate::report;
use crate::workload::fio::FioWorkload;
use crate::workload::{NoProgress, RunContext, WorkloadError};

const USAGE: &str = "\
usage: fsdelta fio [JOBFILE...] [--output-format=normal|json] [--output=FILE] [--parse-only]
                   [--alloc-size=KB] [--name=JOB --opt=value ...]

Runs fio job files with fsdelta's native fio 3.33-compatible engine (threads, never processes).
Job options may also be given on the command line as fio does: --name=x starts a job, options
before the first --name apply to every command-line job. Files are created relative to the
current directory unless directory= or an absolute filename= says otherwise.

Where it differs from fio 3.33, on purpose:
  - jobs run as threads (thread is accepted; processes are never forked);
  - an unknown option, an unset ${VAR}, an unknown size or time suffix, or a value range
    (bs=4k-16k) is an error naming file and line, never ignored or guessed;
  - size=N% needs existing files; write buffers hold fsdelta's own pseudo-random bytes
    (same compressibility rules, not fio's exact bytes); layout writes 1 MiB at a time;
  - io_uring and libaio drain in-flight I/O before an fsync=/fdatasync= sync and before an
    openfiles rotation (fio queues the sync in the ring);
  - rw=rw with loops > 1 may split reads and writes slightly differently after a file wraps;
  - usr_cpu/sys_cpu count from the start of the timed phase (layout excluded); disk_util
    covers the whole run (layout included);
  - --alloc-size=KB is accepted and changes nothing (it sizes fio's shared memory for job
    processes; there are none here).

Supported job options: ";

/// How to print results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// fio's text summary.
    Normal,
    /// fio's --output-format=json.
    Json,
}

/// The parsed command line.
#[derive(Debug, PartialEq)]
pub struct FioArgs {
    /// Job files in order.
    pub job_files: Vec<String>,
    /// Command-line job options (fio's `--name=x --rw=...` form).
    pub job_args: Vec<String>,
    /// Output format.
    pub format: OutputFormat,
    /// Write output here instead of stdout.
    pub output: Option<String>,
    /// -h / --help.
    pub help: bool,
    /// --parse-only: validate the jobs, run nothing (as fio's --parse-only).
    pub parse_only: bool,
}

/// Split `fsdelta fio` arguments into our own flags, job files and job options.
pub fn parse_args(args: &[String]) -> Result<FioArgs, String> {
    let mut a = FioArgs {
        job_files: Vec::new(),
        job_args: Vec::new(),
        format: OutputFormat::Normal,
        output: None,
        help: false,
        parse_only: false,
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
            "--output-format" => {
                let v = take_value(&mut i)?;
                a.format = match v.as_str() {
                    "normal" => OutputFormat::Normal,
                    "json" => OutputFormat::Json,
                    other => {
                        return Err(format!(
                            "--output-format={other} is not supported (use normal or json)"
                        ));
                    }
                }
            }
            "--output" => a.output = Some(take_value(&mut i)?),
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
                        let flag_like = is_bare_flag(&k[2..]);
                        if !flag_like && !std::path::Path::new(next).is_file() {
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

fn is_bare_flag(key: &str) -> bool {
    // fio's set-only options (FIO_OPT_STR_SET) never take the next word.
    matches!(
        key,
        "time_based"
            | "thread"
            | "norandommap"
            | "group_reporting"
            | "stonewall"
            | "wait_for_previous"
            | "new_group"
            | "zero_buffers"
            | "refill_buffers"
            | "blocksize_unaligned"
            | "bs_unaligned"
    )
}

/// Read and parse every job source into raw sections (a second file starts with a stonewall,
/// as in fio).
pub fn load_sections(a: &FioArgs) -> Result<Vec<RawSection>, String> {
    let mut sections: Vec<RawSection> = Vec::new();
    for (n, f) in a.job_files.iter().enumerate() {
        let text = std::fs::read_to_string(f).map_err(|e| format!("{f}: {e}"))?;
        let mut s = jobfile::parse_ini(&text, f, &SystemSources).map_err(|e| e.to_string())?;
        if n > 0 {
            jobfile::mark_file_boundary(&mut s);
        }
        sections.append(&mut s);
    }
    if !a.job_args.is_empty() {
        let mut s =
            jobfile::parse_cmdline(&a.job_args, &SystemSources).map_err(|e| e.to_string())?;
        let has_jobs = s.iter().any(|x| x.name != "global");
        if !has_jobs && !a.job_files.is_empty() {
            return Err(format!(
                "command-line job options ({}) need --name=JOB when job files are given: fsdelta does not apply them to the files' jobs",
                a.job_args.join(" ")
            ));
        }
        if !sections.is_empty() {
            jobfile::mark_file_boundary(&mut s);
        }
        sections.append(&mut s);
    }
    Ok(sections)
}

/// Run `fsdelta fio ARGS`; returns the exit code.
pub fn main(args: &[String]) -> i32 {
    let a = match parse_args(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("fsdelta fio: {e}\n(see fsdelta fio --help)");
            return 2;
        }
    };
    if a.help {
        println!("{USAGE}{}", jobfile::SUPPORTED_OPTIONS.join(", "));
        return 0;
    }
    if a.job_files.is_empty() && a.job_args.is_empty() {
        eprintln!("fsdelta fio: no job file and no --name=JOB given\n{USAGE}...");
        return 2;
    }
    let set = match load_sections(&a)
        .and_then(|s| jobfile::build_jobs(&s).map_err(|e: JobFileError| e.to_string()))
    {
        Ok(set) => set,
        Err(e) => {
            eprintln!("fsdelta fio: {e}");
            return 2;
        }
    };
    if a.parse_only {
        return 0;
    }
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
    let workload = FioWorkload::new(set);
    let run = workload.execute(&RunContext {
        dir: &dir,
        cancel: &cancel,
        progress: &NoProgress,
    });
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
    let text = match a.format {
        OutputFormat::Json => report::fio::json(&run),
        OutputFormat::Normal => report::fio::normal(&run),
    };
    match &a.output {
        Some(path) => {
            if let Err(e) = std::fs::write(path, text) {
                eprintln!("fsdelta fio: write {path}: {e}");
                return 2;
            }
        }
        None => print!("{text}"),
    }
    0
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
        assert_eq!(a.format, OutputFormat::Json);
        assert_eq!(a.output.as_deref(), Some("out.json"));
        assert_eq!(a.job_args, v(&["--name=x", "--bs", "8k", "--time_based"]));
        assert!(parse_args(&v(&["--output-format=terse"])).is_err());
        assert!(parse_args(&v(&["-x"])).is_err());
        assert!(parse_args(&v(&["--help"])).unwrap().help);
    }

    #[test]
    fn bare_command_line_options_with_job_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("j.fio");
        std::fs::write(&f, "[j]\nsize=1m\n").unwrap();
        let a = parse_args(&v(&[f.to_str().unwrap(), "--runtime=5"])).unwrap();
        let e = load_sections(&a).unwrap_err();
        assert!(e.contains("need --name"), "{e}");
    }
}
