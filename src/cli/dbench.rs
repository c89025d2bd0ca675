//! `fsdelta dbench [dbench flags] NPROCS`: the dbench-compatible engine on its own, with dbench
//! 4.00's flags and output.
//!
//! Why flags by hand: dbench's users type popt-style flags (`-t 60`, `-t60`, `--timelimit=60`,
//! `--clients-per-process 4`); `dbench::options` parses exactly those (and holds the `--help`
//! text), and this edge maps the arguments through it. It must never measure, format or give an
//! option a meaning: the engine measures, `dbench::output` renders, `dbench::options` parses;
//! this file wires SIGINT/SIGTERM to the cancel token and writes.

use crate::dbench::options::{HELP, parse_args};
use crate::dbench::output as render;
use crate::dbench::{DEBIAN_CLIENT_TXT, Dbench, DbenchObserver, LoadfileSource, Tick};
use crate::workload::{NoProgress, RunContext, WorkloadError};
use std::io::Write;
use std::sync::Arc;

/// Prints ticks and notices as dbench does.
struct Printer;

impl DbenchObserver for Printer {
    fn tick(&self, tick: &Tick) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(render::render_tick(tick).as_bytes());
        let _ = out.flush();
    }

    fn notice(&self, _client: u32, message: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{message}");
    }
}

/// Run `fsdelta dbench ARGS`; returns the exit code.
pub fn main(args: &[String]) -> i32 {
    let parsed = match parse_args(args) {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{HELP}");
            return 0;
        }
        Err(e) => {
            eprintln!("fsdelta dbench: {e}");
            return 2;
        }
    };
    if !parsed.dir.is_dir() {
        eprintln!(
            "fsdelta dbench: -D {}: not a directory; create it or name an existing one",
            parsed.dir.display()
        );
        return 2;
    }
    let loadfile_name = match &parsed.opts.loadfile {
        LoadfileSource::Builtin => crate::dbench::BUILTIN_LOADFILE_NAME.to_string(),
        LoadfileSource::Path(p) => p.display().to_string(),
    };
    let engine = match Dbench::new(parsed.opts.clone()) {
        Ok(e) => e.with_observer(Arc::new(Printer)),
        Err(e) => {
            eprintln!("fsdelta dbench: {e}");
            if matches!(&parsed.opts.loadfile, LoadfileSource::Path(p) if p.as_os_str() == DEBIAN_CLIENT_TXT)
            {
                eprintln!("(Debian's package `dbench` installs {DEBIAN_CLIENT_TXT})");
            }
            return 2;
        }
    };
    let cancel = match super::install_signals() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("fsdelta dbench: cannot handle SIGINT/SIGTERM: {e}");
            return 2;
        }
    };
    print!(
        "{}",
        render::render_start(env!("CARGO_PKG_VERSION"), &parsed.opts, &loadfile_name)
    );
    let _ = std::io::stdout().flush();
    let ctx = RunContext {
        dir: &parsed.dir,
        cancel: &cancel,
        progress: &NoProgress,
    };
    match engine.run_report(&ctx) {
        Ok(report) => {
            print!(
                "{}{}",
                render::render_table(&report),
                render::render_throughput(&report)
            );
            0
        }
        Err(WorkloadError::Cancelled) => {
            eprintln!("fsdelta dbench: interrupted; the clients' files were cleaned up");
            130
        }
        Err(e) => {
            eprintln!("fsdelta dbench: {e}");
            2
        }
    }
}
