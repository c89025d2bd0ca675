//! `fsdelta fsmark`: the fs_mark-compatible engine on its own, with fs_mark's command line and
//! output, so scripts written for fs_mark read ours.
//!
//! Why here: this is the terminal edge. It parses, wires SIGINT/SIGTERM to the engine's cancel
//! token, prints the header before the run and each row as its iteration ends (or the JSON
//! document at the end), and maps outcomes to exit codes: 0 done, 2 usage or run error, 130
//! interrupted. It must never measure or format a table itself (`fsmark::output` does).

use crate::fsmark::output as render;
use crate::fsmark::{FillStop, FsMark, FsMarkOptions, IterationResult, IterationSink, UsageError};
use crate::workload::{NoProgress, RunContext, WorkloadError};
use std::io::Write;
use std::path::{Path, PathBuf};

/// fs_mark's log file (`-l`): opened (append, create) before the run, the header written then,
/// each row appended as its iteration ends, as fs_mark does.
struct LogFile {
    path: PathBuf,
    file: std::fs::File,
}

impl LogFile {
    fn open(path: &Path) -> Result<LogFile, WorkloadError> {
        // Never through a symlink or into another user's file (a log in a shared directory).
        let file = crate::os::files::open_append_output(path)
            .map_err(|e| WorkloadError::InvalidOptions(format!("-l log file: {e}")))?;
        Ok(LogFile {
            path: path.to_path_buf(),
            file,
        })
    }

    fn write(&mut self, text: &str) -> Result<(), WorkloadError> {
        self.file
            .write_all(text.as_bytes())
            .map_err(|e| WorkloadError::io("write log file", &self.path, e))
    }
}

/// Where the rows go: standard output (unless `--json`) and the log file.
struct Rows<'a, W: Write> {
    out: &'a mut W,
    log: Option<LogFile>,
    verbose: bool,
    json: bool,
}

impl<W: Write> IterationSink for Rows<'_, W> {
    fn row(&mut self, row: &IterationResult) -> Result<(), WorkloadError> {
        let text = render::row(row, self.verbose);
        if !self.json {
            let _ = self.out.write_all(text.as_bytes());
            let _ = self.out.flush();
        }
        match self.log.as_mut() {
            Some(l) => l.write(&text),
            None => Ok(()),
        }
    }

    fn fill_stopped(&mut self, stop: &FillStop) -> Result<(), WorkloadError> {
        match self.log.as_mut() {
            Some(l) => l.write(&render::fill_stopped(stop)),
            None => Ok(()),
        }
    }
}

/// Run `fsdelta fsmark ARGS`; returns the exit code.
pub fn main(args: &[String]) -> i32 {
    let opts = match FsMarkOptions::parse(args).and_then(|o| {
        if o.dirs.is_empty() {
            Err(UsageError::no_directory())
        } else {
            Ok(o)
        }
    }) {
        Ok(o) => o,
        Err(e) if e.is_help() => {
            print!("{e}");
            return 0;
        }
        Err(e) => {
            eprint!("{e}");
            return 2;
        }
    };

    // The first SIGINT/SIGTERM asks the engine to stop (it removes its files and we exit 130);
    // a second one, while it is stopping, ends the process at once.
    let cancel = match super::install_signals() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("fsdelta fsmark: cannot handle SIGINT/SIGTERM: {e}");
            return 2;
        }
    };

    let started = chrono::Local::now().naive_local();
    let mut out = std::io::stdout().lock();
    if !opts.json {
        let _ =
            out.write_all(render::header(&opts, started, render::HeaderTarget::Stdout).as_bytes());
        let _ = out.flush();
    }
    let ctx = RunContext {
        dir: Path::new("."),
        cancel: &cancel,
        progress: &NoProgress,
    };
    let log = match opts.log_file.as_deref().map(LogFile::open).transpose() {
        Ok(mut l) => {
            if let Some(l) = l.as_mut()
                && let Err(e) = l.write(&render::header(
                    &opts,
                    started,
                    render::HeaderTarget::LogFile,
                ))
            {
                eprintln!("fsdelta fsmark: {e}");
                return 2;
            }
            l
        }
        Err(e) => {
            eprintln!("fsdelta fsmark: {e}");
            return 2;
        }
    };
    let engine = FsMark::new(opts);
    let json = engine.options.json;
    let mut rows = Rows {
        out: &mut out,
        log,
        verbose: engine.options.verbose,
        json,
    };
    let result = engine.run_with(&ctx, &mut rows);
    match result {
        Ok(res) => {
            if json {
                let _ = out.write_all(render::json(&engine.options, started, &res).as_bytes());
            } else if let Some(stop) = &res.fill_stopped {
                let _ = out.write_all(render::fill_stopped(stop).as_bytes());
            }
            let _ = out.flush();
            0
        }
        Err(WorkloadError::Cancelled) => {
            let _ = out.flush();
            eprintln!("fsdelta fsmark: interrupted");
            130
        }
        Err(e) => {
            let _ = out.flush();
            if cancel.is_cancelled() {
                eprintln!("fsdelta fsmark: interrupted ({e})");
                return 130;
            }
            eprintln!("fsdelta fsmark: {e}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::CancelToken;

    #[test]
    fn log_file_gets_fs_marks_header_and_rows_appended() {
        let tmp = tempfile::tempdir().unwrap();
        let log = tmp.path().join("fs_log.txt");
        std::fs::write(&log, "earlier run\n").unwrap();
        let args: Vec<String> = "-d t -s 0 -n 5 -S 0 -L 2"
            .split_whitespace()
            .map(String::from)
            .collect();
        let opts = FsMarkOptions::parse(&args).unwrap();
        let mut l = LogFile::open(&log).unwrap();
        let now = chrono::Local::now().naive_local();
        l.write(&render::header(&opts, now, render::HeaderTarget::LogFile))
            .unwrap();
        let mut out = Vec::new();
        let mut rows = Rows {
            out: &mut out,
            log: Some(l),
            verbose: false,
            json: false,
        };
        let ctx = RunContext {
            dir: tmp.path(),
            cancel: &CancelToken::new(),
            progress: &NoProgress,
        };
        FsMark::new(opts).run_with(&ctx, &mut rows).unwrap();
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(
            text.starts_with("earlier run\n\n#  fs_mark  -d  t  -s  0 "),
            "{text}"
        );
        assert!(text.contains("#\nFSUse%        Count"), "{text}");
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .collect();
        assert_eq!(lines.len(), 4, "{text}"); // earlier run, header, 2 rows
        assert!(lines[2].split_whitespace().nth(1) == Some("5"));
        assert!(lines[3].split_whitespace().nth(1) == Some("10"));
        let printed = String::from_utf8(out).unwrap();
        assert_eq!(printed.lines().count(), 2, "{printed}");
    }
}
