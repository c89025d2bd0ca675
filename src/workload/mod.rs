//! What I/O is done: the `Workload` trait and the native engines.
//!
//! Why a room of its own: engines only drive I/O and push what they measured into a
//! [`Measurements`] value; they never print to the terminal and never touch the store, so the same
//! engine serves `fsdelta run`, `fsdelta fsmark` and the tests. A workload must never allocate,
//! log or take locks inside its timed loop, and must stop promptly when its [`CancelToken`] fires.
//!
//! A suite's test works only inside its run directory (the target): [`build`] and
//! [`external::build`] refuse, through [`check_inside_target`], any path in its options that is
//! absolute or climbs out with `..`, before anything runs, so that no sample is stored under
//! the target's filesystem and device when it ran elsewhere. The standalone `fsdelta fio` and
//! `fsdelta fsmark` build their engines directly and keep the tools' own path semantics.

pub mod command;
pub mod copy;
pub mod dbench;
pub mod external;
pub mod fdtable;
pub mod fio;
pub mod fsmark;
pub mod null;
pub mod stream;
pub mod untar;

use crate::model::{HistogramRecord, Metric};
use crate::plan::suite::{CopyPath, EngineSpec};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Shared flag that asks a running workload to stop (SIGINT, SIGTERM).
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// A token that shares `flag` (as registered with a signal handler).
    pub fn from_flag(flag: Arc<AtomicBool>) -> Self {
        CancelToken(flag)
    }

    /// Ask the workload to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether stopping was asked. One relaxed load: cheap enough for hot loops.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// The underlying flag (for signal registration).
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.0.clone()
    }
}

/// Events a workload emits so the CLI edge can draw progress. Implementations must be cheap and
/// must not block.
pub trait ProgressSink: Sync {
    /// Fraction of the workload done, 0.0 ..= 1.0.
    fn fraction(&self, _done: f64) {}
    /// A short phase name ("iteration 2/3", "unlink").
    fn phase(&self, _what: &str) {}
    /// Something the user should know that does not fail the sample (a metric missing from a
    /// command's output).
    fn warning(&self, _what: &str) {}
    /// A line the peer tool prints while it runs, for a front end that shows the peer's own
    /// output (fio's "Laying out IO file" lines); a suite run ignores it.
    fn peer_line(&self, _line: &str) {}
    /// A note the peer writes to its standard output as it happens, whatever its output
    /// format and never into an output file (fio's start-up note of a clone); a suite run
    /// ignores it.
    fn peer_note(&self, _line: &str) {}
}

/// A progress sink that ignores everything.
pub struct NoProgress;
impl ProgressSink for NoProgress {}

/// Everything a workload needs to run once.
pub struct RunContext<'a> {
    /// The directory the workload runs in (it may create anything beneath it).
    pub dir: &'a Path,
    /// Stop request.
    pub cancel: &'a CancelToken,
    /// Progress events.
    pub progress: &'a dyn ProgressSink,
}

/// What one execution of a workload measured.
#[derive(Clone, Debug, Default)]
pub struct Measurements {
    /// Every metric, each with unit and direction.
    pub metrics: Vec<Metric>,
    /// Histograms behind percentile metrics.
    pub histograms: Vec<HistogramRecord>,
    /// File data the workload wrote (logical bytes), when it knows; the run divides the device's
    /// written bytes by it to get write amplification.
    pub logical_bytes_written: Option<u64>,
    /// Raw results to keep with the sample (a command's output, fs_mark's per-iteration rows).
    pub attachments: Vec<crate::model::Attachment>,
    /// Facts of how the workload measured (the fio engine's `clocksource`), stored in the
    /// sample's facts beside the target's.
    pub facts: std::collections::BTreeMap<String, String>,
}

/// Why a workload did not produce measurements.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A system call failed; `op` and `path` say which and where.
    #[error("{op} {path}: {source}{hint}", path = path.display(), hint = io_hint(source))]
    Io {
        /// The operation (open, write, fsync, mkdir, ...).
        op: &'static str,
        /// The path it was applied to.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// Stopped by a cancel request.
    #[error("cancelled")]
    Cancelled,
    /// Options that cannot run.
    #[error("{0}")]
    InvalidOptions(String),
}

impl WorkloadError {
    /// An I/O error on a path.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        WorkloadError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// A hint that says how to fix the commonest I/O failures.
fn io_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => {
            " (the target filesystem is full: free space or choose a larger target)"
        }
        Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => {
            " (the target is not writable: choose another with --target, or fix its permissions)"
        }
        Some(libc::EDQUOT) => " (disk quota exceeded on the target)",
        Some(libc::EMFILE) | Some(libc::ENFILE) => " (too many open files: raise `ulimit -n`)",
        _ => "",
    }
}

/// A runnable workload: an engine with its options bound.
pub trait Workload: Send + Sync {
    /// The engine's name (`fsmark`, `fio`).
    fn engine(&self) -> &'static str;
    /// Why this workload cannot run in `dir` (for example O_DIRECT on tmpfs), checked before
    /// each sample; `None` when it can.
    fn skip_reason(&self, _dir: &Path) -> Option<String> {
        None
    }
    /// Run once in `ctx.dir`, returning what was measured.
    fn run(&self, ctx: &RunContext<'_>) -> Result<Measurements, WorkloadError>;
    /// The suite engine options this workload was built from and whether it runs the real
    /// tool, so that it can be built again elsewhere (inside a guest kernel, `crate::vm`);
    /// `None` unless built by [`build_test`].
    fn spec(&self) -> Option<(&EngineSpec, bool)> {
        None
    }
    /// Whether the workload may run on a read-only filesystem (erofs): it reads files that are
    /// there and writes nothing to its directory. A command test says yes (a command that
    /// writes fails on its own); native engines that create files say no.
    fn reads_only(&self) -> bool {
        false
    }
}

/// A workload that remembers the suite options it was built from (see [`Workload::spec`]).
struct Specified {
    spec: EngineSpec,
    external: bool,
    inner: Box<dyn Workload>,
}

impl Workload for Specified {
    fn engine(&self) -> &'static str {
        self.inner.engine()
    }
    fn skip_reason(&self, dir: &Path) -> Option<String> {
        self.inner.skip_reason(dir)
    }
    fn run(&self, ctx: &RunContext<'_>) -> Result<Measurements, WorkloadError> {
        if let Some(m) = symlink_outside_target(&self.spec, ctx.dir) {
            return Err(WorkloadError::InvalidOptions(m));
        }
        self.inner.run(ctx)
    }
    fn spec(&self) -> Option<(&EngineSpec, bool)> {
        Some((&self.spec, self.external))
    }
    fn reads_only(&self) -> bool {
        self.inner.reads_only()
    }
}

/// Whether a test can run the real tool instead of the native engine.
pub fn has_external(spec: &EngineSpec) -> bool {
    matches!(
        spec,
        EngineSpec::FsMark { .. } | EngineSpec::Fio { .. } | EngineSpec::Dbench { .. }
    )
}

/// Build a suite's test: the real tool when `external` (and the test has one), else the native
/// engine; with the command line that reproduces it, stored with every sample.
pub fn build_test(
    spec: &EngineSpec,
    external: bool,
) -> Result<(Box<dyn Workload>, String), WorkloadError> {
    let specified = |inner, external| -> Box<dyn Workload> {
        Box::new(Specified {
            spec: spec.clone(),
            external,
            inner,
        })
    };
    if external && has_external(spec) {
        let w = self::external::build(spec)?;
        let d = self::external::describe(spec).unwrap_or_else(|| describe(spec));
        Ok((
            specified(w, true),
            format!("{d} (the real tool, output parsed)"),
        ))
    } else {
        Ok((specified(build(spec)?, false), describe(spec)))
    }
}

/// Refuse a suite test whose options name a path outside the directory it runs in (the
/// target): an fs_mark `-d`/`-l`, a fio job's files, directories, logs or job names, an
/// external dbench loadfile's paths. One check per tool, made by [`build`] and
/// [`external::build`] before anything runs, so that a sample is never stored under the
/// target's filesystem and device when it ran elsewhere. The standalone `fsdelta fio` and
/// `fsdelta fsmark` build their workloads without it: there the user named the paths.
pub fn check_inside_target(spec: &EngineSpec, external: bool) -> Result<(), WorkloadError> {
    let refuse = |m: String| Err(WorkloadError::InvalidOptions(m));
    match spec {
        EngineSpec::FsMark { args } => {
            // The external driver adds `-d .` when none is given; the options parse the same.
            let mut args = args.clone();
            if !args.iter().any(|a| a.starts_with("-d")) {
                args.extend(["-d".to_string(), ".".to_string()]);
            }
            match fsmark::FsMarkOptions::parse(&args) {
                Ok(o) => match o.outside_target() {
                    Some(m) => refuse(m),
                    None => Ok(()),
                },
                // Bad options are reported by the engine's own parse, with its wording.
                Err(_) => Ok(()),
            }
        }
        EngineSpec::Fio { job } => {
            let sections = crate::plan::jobfile::parse_ini(
                job,
                "suite job",
                &crate::plan::jobfile::SystemSources,
            )
            .map_err(|e| WorkloadError::InvalidOptions(format!("fio job: {e}")))?;
            crate::plan::jobfile::confine::check_inside_target(&sections)
                .map_err(|e| WorkloadError::InvalidOptions(format!("fio job: {e}")))
        }
        EngineSpec::Dbench {
            loadfile: Some(p), ..
        } if external => match self::external::dbench::loadfile_outside_target(p) {
            Some(m) => refuse(m),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Why a suite test's paths, each inside `dir` by its text ([`check_inside_target`]), would
/// still lead outside it through a symlink already in `dir` (an erofs image's tree, a link
/// left by an earlier command): the message names the path, where it leads and the target.
/// Checked right before each sample; `None` when every path the test names stays inside.
pub fn symlink_outside_target(spec: &EngineSpec, dir: &Path) -> Option<String> {
    let paths: Vec<String> = match spec {
        EngineSpec::Fio { job } => {
            crate::plan::jobfile::parse_ini(job, "suite job", &crate::plan::jobfile::SystemSources)
                .map(|s| crate::plan::jobfile::confine::named_paths(&s))
                .unwrap_or_default()
        }
        EngineSpec::FsMark { args } => fsmark::FsMarkOptions::parse(args)
            .map(|o| {
                o.dirs
                    .iter()
                    .map(|d| d.to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let root = std::fs::canonicalize(dir).ok()?;
    for p in paths {
        let full = dir.join(&p);
        let Some(existing) = full.ancestors().find(|a| a.symlink_metadata().is_ok()) else {
            continue;
        };
        match std::fs::canonicalize(existing) {
            Ok(real) if real.starts_with(&root) => {}
            Ok(real) => {
                return Some(format!(
                    "'{p}' leads through a symlink to {}, outside the target directory {}; the sample would measure another filesystem under this one's facts: remove the link from the target or name another path",
                    real.display(),
                    dir.display()
                ));
            }
            Err(e) => {
                return Some(format!(
                    "'{p}' leads through {} in the target directory {}, which cannot be resolved ({e}; a dangling symlink would make the tool create a file wherever it points): remove the link or name another path",
                    existing.display(),
                    dir.display()
                ));
            }
        }
    }
    None
}

/// Build the workload a suite's test describes, checking its options (and that its paths stay
/// inside the target, [`check_inside_target`]).
pub fn build(spec: &EngineSpec) -> Result<Box<dyn Workload>, WorkloadError> {
    check_inside_target(spec, false)?;
    match spec {
        EngineSpec::FsMark { args } => {
            let mut options = fsmark::FsMarkOptions::parse(args)
                .map_err(|e| WorkloadError::InvalidOptions(format!("fs_mark options: {e}")))?;
            // Inside a suite, results go to the store, not to fs_mark's log file.
            options.log_file = None;
            Ok(Box::new(fsmark::FsMark { options }))
        }
        EngineSpec::Fio { job } => {
            let w = fio::FioWorkload::from_job_text(
                job,
                "suite job",
                &crate::plan::jobfile::SystemSources,
            )
            .map_err(|e| WorkloadError::InvalidOptions(format!("fio job: {e}")))?;
            Ok(Box::new(FioTest(w)))
        }
        EngineSpec::Dbench {
            clients,
            seconds,
            warmup_s,
            loadfile,
        } => Ok(Box::new(dbench::Dbench::new(dbench::DbenchOptions {
            nprocs: *clients,
            time_limit_s: *seconds,
            warmup_s: *warmup_s,
            loadfile: match loadfile {
                Some(p) => dbench::LoadfileSource::Path(p.clone()),
                None => dbench::LoadfileSource::Builtin,
            },
            ..dbench::DbenchOptions::default()
        })?)),
        EngineSpec::Stream {
            size,
            block_size,
            direct,
            fsync,
            compressibility,
            source,
        } => Ok(Box::new(stream::Stream::new(stream::StreamOptions {
            size: *size,
            block_size: *block_size as usize,
            direct: *direct,
            fsync: *fsync,
            drop_caches: true,
            compressibility: *compressibility,
            source: source.clone(),
        })?)),
        EngineSpec::Copy {
            size,
            method,
            compressibility,
            source,
        } => Ok(Box::new(copy::Copy::new(copy::CopyOptions {
            size: *size,
            compressibility: *compressibility,
            source: source.clone(),
            method: match method {
                CopyPath::ReadWrite => copy::CopyMethod::ReadWrite,
                CopyPath::CopyFileRange => copy::CopyMethod::CopyFileRange,
                CopyPath::Auto => copy::CopyMethod::Auto,
            },
            ..copy::CopyOptions::default()
        })?)),
        EngineSpec::Untar {
            files,
            seed,
            tarball,
        } => Ok(Box::new(untar::Untar::new(untar::UntarOptions {
            source: match tarball {
                Some(p) => untar::TarballSource::Path(p.clone()),
                None => untar::TarballSource::Generated {
                    files: *files,
                    seed: *seed,
                },
            },
            cache_dir: None,
        })?)),
        EngineSpec::Command {
            command,
            metrics,
            timeout_s,
        } => {
            let metrics = metrics
                .iter()
                .map(|m| {
                    command::CommandMetric::parse(
                        &m.name,
                        m.regex.as_deref(),
                        m.json.as_deref(),
                        &m.unit,
                        &m.direction,
                    )
                    .map(|c| c.required(m.required))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Box::new(command::CommandWorkload::new(
                command::CommandOptions {
                    command: command.clone(),
                    metrics,
                    timeout: timeout_s.map(std::time::Duration::from_secs_f64),
                },
            )?))
        }
    }
}

/// A fio job inside a suite: skipped, with the reason, where the target rejects O_DIRECT.
struct FioTest(fio::FioWorkload);

impl Workload for FioTest {
    fn engine(&self) -> &'static str {
        "fio"
    }
    fn skip_reason(&self, dir: &Path) -> Option<String> {
        if self.0.needs_direct() {
            fio::files::probe_direct(dir).err()
        } else {
            None
        }
    }
    fn run(&self, ctx: &RunContext<'_>) -> Result<Measurements, WorkloadError> {
        self.0.run(ctx)
    }
    fn reads_only(&self) -> bool {
        self.0.reads_only()
    }
}

/// The command line that reproduces a test with the peer tool, stored with every sample.
pub fn describe(spec: &EngineSpec) -> String {
    match spec {
        EngineSpec::FsMark { args } => format!("fs_mark {}", args.join(" ")),
        EngineSpec::Fio { job } => {
            // The command-line form of the job file: `fio --name=x --rw=... ...`.
            let mut out = String::from("fio");
            for line in job.lines().map(str::trim).filter(|l| !l.is_empty()) {
                if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                    out.push_str(&format!(" --name={name}"));
                } else if !line.starts_with(';') && !line.starts_with('#') {
                    out.push_str(&format!(" --{line}"));
                }
            }
            out
        }
        EngineSpec::Dbench {
            clients,
            seconds,
            warmup_s,
            loadfile,
        } => format!(
            "dbench -t {seconds}{}{} {clients}",
            warmup_s
                .map(|w| format!(" --warmup {w}"))
                .unwrap_or_default(),
            loadfile
                .as_ref()
                .map(|p| format!(" -c {}", p.display()))
                .unwrap_or_else(|| " -c <fsdelta's loadfile>".into())
        ),
        EngineSpec::Stream {
            size,
            block_size,
            direct,
            fsync,
            compressibility,
            source,
        } => format!(
            "stream: dd-like write of {} in {block_size}-byte blocks{}{}, then cold and warm reads",
            match source {
                Some(p) => format!("the file {}", p.display()),
                None => format!(
                    "{size} bytes, data {:.0} % compressible,",
                    compressibility * 100.0
                ),
            },
            if *direct { ", O_DIRECT" } else { "" },
            if *fsync { ", fsync" } else { "" },
        ),
        EngineSpec::Copy {
            size,
            method,
            compressibility,
            source,
        } => format!(
            "copy: {}, with {}, then sync",
            match source {
                Some(p) => format!("cp {} into the target", p.display()),
                None => format!(
                    "{size} bytes, {:.0} % compressible",
                    compressibility * 100.0
                ),
            },
            match method {
                CopyPath::ReadWrite => "read/write",
                CopyPath::CopyFileRange => "copy_file_range",
                CopyPath::Auto => "copy_file_range or read/write",
            }
        ),
        EngineSpec::Untar {
            files,
            seed,
            tarball,
        } => match tarball {
            Some(p) => format!("untar: tar -xf {} && sync", p.display()),
            None => format!(
                "untar: generated source tree of {files} files (seed {seed}), extract && sync"
            ),
        },
        EngineSpec::Command { command, .. } => format!("command: sh -c {command:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_test_of_every_built_in_suite_builds() {
        use crate::plan::suite::{BUILTIN_SUITES, builtin_scaled};
        for name in BUILTIN_SUITES {
            for scale in [1.0, 0.01] {
                let suite = builtin_scaled(name, scale, 24576).unwrap();
                for t in &suite.tests {
                    if let Err(e) = build(&t.engine) {
                        panic!("{name} (scale {scale}) test {}: {e}", t.name);
                    }
                    assert!(!describe(&t.engine).is_empty());
                }
            }
        }
    }

    #[test]
    fn io_errors_say_how_to_fix_a_full_disk() {
        let e = WorkloadError::io(
            "write",
            "/mnt/x",
            io::Error::from_raw_os_error(libc::ENOSPC),
        );
        let s = e.to_string();
        assert!(s.contains("write /mnt/x"), "{s}");
        assert!(s.contains("filesystem is full"), "{s}");
    }

    #[test]
    fn a_symlink_in_the_target_that_leads_out_is_refused_at_run_time() {
        let t = tempfile::tempdir().unwrap();
        let target = t.path().join("t");
        std::fs::create_dir_all(target.join("real")).unwrap();
        std::fs::create_dir(t.path().join("outside")).unwrap();
        std::os::unix::fs::symlink(t.path().join("outside"), target.join("out")).unwrap();
        std::os::unix::fs::symlink("/nonexistent/x", target.join("dangling")).unwrap();
        let fio = |job: &str| EngineSpec::Fio {
            job: format!("[w]\n{job}\n"),
        };
        let m = symlink_outside_target(&fio("directory=out"), &target).unwrap();
        assert!(m.contains("'out' leads through a symlink to"), "{m}");
        assert!(m.contains(&target.display().to_string()), "{m}");
        let m = symlink_outside_target(&fio("directory=real\nfilename=../out/f"), &target);
        assert!(m.is_some());
        let m = symlink_outside_target(&fio("filename=dangling"), &target).unwrap();
        assert!(m.contains("cannot be resolved"), "{m}");
        let fm = EngineSpec::FsMark {
            args: vec!["-d".into(), "out/sub".into()],
        };
        assert!(symlink_outside_target(&fm, &target).is_some());
        // Paths that stay inside, existing or not, pass.
        assert!(symlink_outside_target(&fio("directory=real\nfilename=f:g/h"), &target).is_none());
        let fm = EngineSpec::FsMark {
            args: vec!["-d".into(), "real".into(), "-d".into(), "new".into()],
        };
        assert!(symlink_outside_target(&fm, &target).is_none());
    }

    #[test]
    fn cancel_token_is_shared() {
        let t = CancelToken::new();
        let u = t.clone();
        assert!(!u.is_cancelled());
        t.cancel();
        assert!(u.is_cancelled());
    }
}
