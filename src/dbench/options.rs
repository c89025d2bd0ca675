//! dbench 4.00's options in one home: [`DbenchOptions`] (a run's options, named after dbench's
//! flags, and the checks every run passes), and [`parse_args`], dbench's popt-style command
//! line (`-t 60`, `-t60`, `--timelimit=60`, `--clients-per-process 4`, bundled `-sSF`) with
//! its `--help` text ([`HELP`]).
//!
//! Why here: an option's meaning belongs to the wing, as fs_mark's `options` and fio's job
//! file table do; `fsdelta dbench` (`crate::cli::dbench`) only maps its arguments through
//! [`parse_args`] and prints, and suites build [`DbenchOptions`] directly. This module must
//! never run, print or touch the filesystem; its messages say what to type instead.

use crate::dbench::client::BackendFlags;
use crate::workload::WorkloadError;
use std::path::PathBuf;

/// Which loadfile to replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadfileSource {
    /// fsdelta's own loadfile ([`crate::dbench::BUILTIN_LOADFILE`]).
    Builtin,
    /// A loadfile on disk (dbench's `-c`), e.g. [`crate::dbench::DEBIAN_CLIENT_TXT`].
    Path(PathBuf),
}

/// Options of a dbench run, named after dbench's flags.
#[derive(Clone, Debug, PartialEq)]
pub struct DbenchOptions {
    /// NPROCS: client threads.
    pub nprocs: u32,
    /// `--clients-per-process`: clients each thread replays in turn (default 1).
    pub clients_per_process: u32,
    /// `-t`: seconds of the timed (execute) phase (dbench's default is 600).
    pub time_limit_s: u32,
    /// `--warmup`: warmup seconds; `None` means dbench's t/5.
    pub warmup_s: Option<u32>,
    /// `-c`: the loadfile.
    pub loadfile: LoadfileSource,
    /// `-s`, `-S`, `-F`, `--no-resolve`.
    pub flags: BackendFlags,
    /// `--skip-cleanup`: leave the clients' files behind.
    pub skip_cleanup: bool,
}

impl Default for DbenchOptions {
    fn default() -> Self {
        DbenchOptions {
            nprocs: 2,
            clients_per_process: 1,
            time_limit_s: 10,
            warmup_s: None,
            loadfile: LoadfileSource::Builtin,
            flags: BackendFlags::default(),
            skip_cleanup: false,
        }
    }
}

impl DbenchOptions {
    /// The warmup in seconds: `--warmup`, else t/5 (integer division, as dbench).
    pub fn warmup(&self) -> u32 {
        self.warmup_s.unwrap_or(self.time_limit_s / 5)
    }

    /// Total clients.
    pub fn clients(&self) -> u32 {
        self.nprocs * self.clients_per_process
    }

    /// Refuse options no run can have (the checks of [`crate::dbench::Dbench::new`]).
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.nprocs < 1 {
            return Err(WorkloadError::InvalidOptions(
                "NPROCS must be at least 1 (dbench [options] NPROCS)".into(),
            ));
        }
        if self.clients_per_process < 1 {
            return Err(WorkloadError::InvalidOptions(
                "--clients-per-process must be at least 1".into(),
            ));
        }
        if self.clients() > 4096 {
            return Err(WorkloadError::InvalidOptions(format!(
                "{} clients is more than 4096; use fewer clients",
                self.clients()
            )));
        }
        Ok(())
    }
}

/// `fsdelta dbench --help`.
pub const HELP: &str = "\
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

/// A parsed `fsdelta dbench` command line.
#[derive(Debug, PartialEq)]
pub struct Args {
    /// The run's options.
    pub opts: DbenchOptions,
    /// `-D`: the directory to run in.
    pub dir: PathBuf,
}

fn parse_num(flag: &str, v: &str) -> Result<u32, String> {
    v.parse::<u32>()
        .map_err(|_| format!("{flag} needs a whole number, not '{v}'"))
}

/// Parse dbench's flags. `Ok(None)` means help was asked for.
pub fn parse_args(args: &[String]) -> Result<Option<Args>, String> {
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
