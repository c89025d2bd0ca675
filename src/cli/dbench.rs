//! `fsdelta dbench [dbench flags] NPROCS`: the dbench-compatible engine on its own, with dbench
//! 4.00's flags and output.
//!
//! Why flags by hand: dbench's users type popt-style flags (`-t 60`, `-t60`, `--timelimit=60`,
//! `--clients-per-process 4`); this edge accepts exactly those and maps them onto
//! [`DbenchOptions`]. It must never measure or format: the engine measures, `dbench::output`
//! renders, this file only parses, wires SIGINT/SIGTERM to the cancel token and writes.

use crate::dbench::output as render;
use crate::dbench::{
    DEBIAN_CLIENT_TXT, Dbench, DbenchObserver, DbenchOptions, LoadfileSource, Tick,
};
use crate::workload::{NoProgress, RunContext, WorkloadError};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

const HELP: &str = "\
fsdelta dbench: replay a dbench 4.00 loadfile with NPROCS clients and print dbench's output.

Usage: fsdelta dbench [OPTIONS] NPROCS

Options (dbench 4.00's):
  -t, --timelimit=SECS          seconds of the timed phase, after warmup (default 600)
  -c, --loadfile=FILE           loadfile (default: fsdelta's own, data/loadfiles/fsdelta-smb.txt;
                                dbench's GPL client.txt is read from /usr/share/dbench/client.txt
                                when you name it)
  -D, --directory=DIR           directory to run in (default .); clients use DIR/clients/client<i>
  -s, --sync                    open files with O_SYNC
  -S, --sync-dir                fdatasync the parent directory after unlink, rename and rmdir
  -F, --fsync                   fsync after every WriteX
      --no-resolve              skip the case-insensitive name resolution scan
      --clients-per-process=N   clients each thread replays in turn (default 1)
      --skip-cleanup            leave the clients' files behind
      --warmup=SECS             warmup seconds (default timelimit/5; dbench 5's flag)
  -h, --help                    this help

Differences from dbench 4.00, on purpose: clients are threads, not processes; the loadfile is
parsed before the run and a line dbench would skip (bad status, unknown operation, wrong
arguments, unquoted path) is an error with its line number; `client1` is rewritten only in the
loadfile's paths, never in -D; latencies come from CLOCK_MONOTONIC; the tick `latency` is the
largest operation latency of the tick. Not supported: -R, -x, -T, --one-byte-write-fix,
--stat-check, --fake-io, --per-client-results, dbench 5 loadfile directives.

Exit status: 0 ok, 2 error, 130 interrupted.
";

/// Parsed command line.
#[derive(Debug, PartialEq)]
struct Args {
    opts: DbenchOptions,
    dir: PathBuf,
}

fn parse_num(flag: &str, v: &str) -> Result<u32, String> {
    v.parse::<u32>()
        .map_err(|_| format!("{flag} needs a whole number, not '{v}'"))
}

/// Parse dbench's flags. `Ok(None)` means help was asked for.
fn parse_args(args: &[String]) -> Result<Option<Args>, String> {
    let mut opts = DbenchOptions {
        time_limit_s: 600,
        ..DbenchOptions::default()
    };
    let mut dir = PathBuf::from(".");
    let mut positional = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        // Bundled boolean short flags, as popt takes them: -sSF.
        if a.len() > 2
            && !a.starts_with("--")
            && a.starts_with('-')
            && a[1..].chars().all(|c| matches!(c, 's' | 'S' | 'F'))
        {
            for c in a[1..].chars() {
                match c {
                    's' => opts.flags.sync_open = true,
                    'S' => opts.flags.sync_dirs = true,
                    _ => opts.flags.fsync_writes = true,
                }
            }
            continue;
        }
        // Split `--name=value`, `-tVALUE`.
        let (name, inline): (&str, Option<&str>) = if let Some(long) = a.strip_prefix("--") {
            match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            }
        } else if a.len() > 2 && a.starts_with('-') && !a[1..2].contains(['s', 'S', 'F', 'h']) {
            (&a[1..2], Some(&a[2..]))
        } else if let Some(short) = a.strip_prefix('-').filter(|s| !s.is_empty()) {
            (short, None)
        } else {
            positional.push(a.to_string());
            continue;
        };
        let mut value = |flag: &str| -> Result<String, String> {
            if let Some(v) = inline {
                return Ok(v.to_string());
            }
            let v = args
                .get(i)
                .ok_or_else(|| format!("{flag} needs a value (see fsdelta dbench --help)"))?;
            i += 1;
            Ok(v.clone())
        };
        match name {
            "h" | "help" | "?" => return Ok(None),
            "t" | "timelimit" => opts.time_limit_s = parse_num("-t", &value("-t")?)?,
            "c" | "loadfile" => opts.loadfile = LoadfileSource::Path(value("-c")?.into()),
            "D" | "directory" => dir = value("-D")?.into(),
            "s" | "sync" => opts.flags.sync_open = true,
            "S" | "sync-dir" => opts.flags.sync_dirs = true,
            "F" | "fsync" => opts.flags.fsync_writes = true,
            "no-resolve" => opts.flags.no_resolve = true,
            "skip-cleanup" => opts.skip_cleanup = true,
            "clients-per-process" => {
                opts.clients_per_process =
                    parse_num("--clients-per-process", &value("--clients-per-process")?)?
            }
            "warmup" => opts.warmup_s = Some(parse_num("--warmup", &value("--warmup")?)?),
            "R" | "target-rate" | "x" | "xattr" | "T" | "tcp-options" | "one-byte-write-fix"
            | "stat-check" | "fake-io" | "per-client-results" => {
                return Err(format!(
                    "dbench's '{a}' is not supported by fsdelta's engine; run the real dbench \
                     for it (see fsdelta dbench --help)"
                ));
            }
            _ => return Err(format!("unknown option '{a}' (see fsdelta dbench --help)")),
        }
    }
    match positional.as_slice() {
        [n] => {
            opts.nprocs = parse_num("NPROCS", n)?;
        }
        [] => return Err("You need to specify NPROCS (fsdelta dbench [OPTIONS] NPROCS)".into()),
        more => {
            return Err(format!(
                "one NPROCS expected, found {}: {} (tbench's server argument is not supported)",
                more.len(),
                more.join(" ")
            ));
        }
    }
    Ok(Some(Args { opts, dir }))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Option<Args>, String> {
        let v: Vec<String> = s.split_whitespace().map(String::from).collect();
        parse_args(&v)
    }

    #[test]
    fn dbench_flags_in_every_popt_spelling() {
        let a = p("-t 60 -c /x/client.txt -D /mnt -s -S -F --no-resolve --skip-cleanup 4")
            .unwrap()
            .unwrap();
        assert_eq!(a.opts.time_limit_s, 60);
        assert_eq!(
            a.opts.loadfile,
            LoadfileSource::Path("/x/client.txt".into())
        );
        assert_eq!(a.dir, PathBuf::from("/mnt"));
        assert!(a.opts.flags.sync_open && a.opts.flags.sync_dirs && a.opts.flags.fsync_writes);
        assert!(a.opts.flags.no_resolve && a.opts.skip_cleanup);
        assert_eq!(a.opts.nprocs, 4);
        assert_eq!(a.opts.warmup(), 12);

        let a = p("-t10 --timelimit=20 --clients-per-process=3 --warmup 0 2")
            .unwrap()
            .unwrap();
        assert_eq!(a.opts.time_limit_s, 20);
        assert_eq!(a.opts.clients_per_process, 3);
        assert_eq!(a.opts.warmup(), 0);
        assert_eq!(a.opts.clients(), 6);
        assert_eq!(a.opts.loadfile, LoadfileSource::Builtin);
        assert_eq!(p("1").unwrap().unwrap().opts.time_limit_s, 600);
        let f = p("-sF 1").unwrap().unwrap().opts.flags;
        assert!(f.sync_open && f.fsync_writes && !f.sync_dirs);
    }

    #[test]
    fn bad_command_lines_say_what_to_do() {
        assert!(p("-t 5").unwrap_err().contains("NPROCS"));
        assert!(p("-t x 2").unwrap_err().contains("whole number"));
        assert!(p("-R 10 2").unwrap_err().contains("not supported"));
        assert!(p("--bogus 2").unwrap_err().contains("unknown option"));
        assert!(p("2 host").unwrap_err().contains("one NPROCS"));
        assert!(p("-t").unwrap_err().contains("needs a value"));
        assert!(p("-h").unwrap().is_none());
    }
}
