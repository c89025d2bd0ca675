//! `fsdelta fsmark`: the fs_mark-compatible engine on its own, with fs_mark's command line and
//! output, so scripts written for fs_mark read ours.
//!
//! Why here: this is the terminal edge. It parses, wires SIGINT/SIGTERM to the engine's cancel
//! token, prints the header before the run and each row as its iteration ends (or the JSON
//! document at the end), and maps outcomes to exit codes: 0 done, 2 usage or run error, 130
//! interrupted. It must never measure or format a table itself (`report::fsmark` does).

use crate::report::fsmark as render;
use crate::workload::fsmark::{FsMark, FsMarkOptions, UsageError};
use crate::workload::{NoProgress, RunContext, WorkloadError};
use std::io::Write;
use std::path::Path;

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
    let engine = FsMark::new(opts);
    let verbose = engine.options.verbose;
    let json = engine.options.json;
    let result = engine.run_with(&ctx, &mut |row| {
        if !json {
            let _ = out.write_all(render::row(row, verbose).as_bytes());
            let _ = out.flush();
        }
    });
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
