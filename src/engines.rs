//! The catalogue of engines: which `Workload` a suite's test becomes. One table for every
//! engine, native or external: a test's [`EngineSpec`] (from `plan`) goes in, a boxed
//! [`Workload`] and the command line that reproduces it with the peer tool come out.
//!
//! Why a room of its own: the wings (`crate::fio`, `crate::fsmark`, `crate::dbench`) and the
//! simple engines of `crate::workload` all implement the one `Workload` trait; choosing among
//! them needs to know every engine, so it lives above them (the wings never import each other
//! or this room, and `workload` never imports a wing). Adding an engine means a variant of
//! `EngineSpec` and one arm in [`build`], [`describe`] and, when a real tool exists,
//! [`build_external`] (docs/extending.md).
//!
//! A suite's test works only inside its run directory (the target): [`build`] and
//! [`build_external`] refuse, through [`check_inside_target`], any path in its options that is
//! absolute or climbs out with `..`, before anything runs, so that no sample is stored under
//! the target's filesystem and device when it ran elsewhere. The standalone `fsdelta fio` and
//! `fsdelta fsmark` build their engines directly and keep the tools' own path semantics.
//!
//! This room must never run I/O itself or print: it only builds.

use crate::dbench::{self, external::ExternalDbench};
use crate::fio::{self, external::ExternalFio};
use crate::fsmark::{self, external::ExternalFsMark};
use crate::plan::suite::{CopyPath, EngineSpec};
use crate::workload::{
    Measurements, RunContext, Workload, WorkloadError, command, copy, stream, untar,
};
use std::path::Path;

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
        let w = build_external(spec)?;
        let d = describe_external(spec).unwrap_or_else(|| describe(spec));
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
/// [`build_external`] before anything runs, so that a sample is never stored under the
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
            let sections = crate::fio::jobfile::parse_ini(
                job,
                "suite job",
                &crate::fio::jobfile::SystemSources,
            )
            .map_err(|e| WorkloadError::InvalidOptions(format!("fio job: {e}")))?;
            crate::fio::jobfile::confine::check_inside_target(&sections)
                .map_err(|e| WorkloadError::InvalidOptions(format!("fio job: {e}")))
        }
        EngineSpec::Dbench {
            loadfile: Some(p), ..
        } if external => match dbench::external::loadfile_outside_target(p) {
            Some(m) => refuse(m),
            None => Ok(()),
        },
        // No variant is left to a catch-all: a new engine must say here whether its options
        // name paths (docs/extending.md).
        EngineSpec::Dbench { .. }
        | EngineSpec::Stream { .. }
        | EngineSpec::Copy { .. }
        | EngineSpec::Untar { .. }
        | EngineSpec::Command { .. } => Ok(()),
    }
}

/// Why a suite test's paths, each inside `dir` by its text ([`check_inside_target`]), would
/// still lead outside it through a symlink already in `dir` (an erofs image's tree, a link
/// left by an earlier command): the message names the path, where it leads and the target.
/// Checked right before each sample; `None` when every path the test names stays inside.
pub fn symlink_outside_target(spec: &EngineSpec, dir: &Path) -> Option<String> {
    let paths: Vec<String> = match spec {
        EngineSpec::Fio { job } => {
            crate::fio::jobfile::parse_ini(job, "suite job", &crate::fio::jobfile::SystemSources)
                .map(|s| crate::fio::jobfile::confine::named_paths(&s))
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
        // The file names of these are generated inside the target, or not paths at all.
        EngineSpec::Dbench { .. }
        | EngineSpec::Stream { .. }
        | EngineSpec::Copy { .. }
        | EngineSpec::Untar { .. }
        | EngineSpec::Command { .. } => Vec::new(),
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
            let w = fio::engine::FioWorkload::from_job_text(
                job,
                "suite job",
                &crate::fio::jobfile::SystemSources,
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
struct FioTest(fio::engine::FioWorkload);

impl Workload for FioTest {
    fn engine(&self) -> &'static str {
        "fio"
    }
    fn skip_reason(&self, dir: &Path) -> Option<String> {
        if self.0.needs_direct() {
            fio::engine::files::probe_direct(dir).err()
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

/// The external driver of a suite test (`engine = "external"`, `--engine external`): fs_mark,
/// fio and dbench tests run the real tool; other workloads have no external driver.
pub fn build_external(spec: &EngineSpec) -> Result<Box<dyn Workload>, WorkloadError> {
    check_inside_target(spec, true)?;
    match spec {
        EngineSpec::FsMark { args } => Ok(Box::new(ExternalFsMark::new(args)?)),
        EngineSpec::Fio { job } => Ok(Box::new(ExternalFio::new(job)?)),
        EngineSpec::Dbench {
            clients,
            seconds,
            warmup_s,
            loadfile,
        } => {
            if warmup_s.is_some() {
                return Err(WorkloadError::InvalidOptions(
                    "dbench 4.00 has no warmup option (it always warms up for t/5): remove `warmup` from the test, or use the native engine".into(),
                ));
            }
            Ok(Box::new(ExternalDbench::new(
                *clients,
                *seconds,
                loadfile.clone(),
            )?))
        }
        other => Err(WorkloadError::InvalidOptions(format!(
            "no external driver for this workload ({}): only fs_mark, fio and dbench tests can run with engine = \"external\"",
            describe(other)
        ))),
    }
}

/// The command line an external test runs, for the sample's workload description (the
/// target directory appears as `<target>` for dbench's `-D`); `None` for workloads without an
/// external driver or with invalid options.
pub fn describe_external(spec: &EngineSpec) -> Option<String> {
    Some(match spec {
        EngineSpec::FsMark { args } => ExternalFsMark::new(args).ok()?.command_line(),
        EngineSpec::Fio { job } => ExternalFio::new(job).ok()?.command_line(),
        EngineSpec::Dbench {
            clients,
            seconds,
            loadfile,
            ..
        } => ExternalDbench::new(*clients, *seconds, loadfile.clone())
            .ok()?
            .command_line(),
        EngineSpec::Stream { .. }
        | EngineSpec::Copy { .. }
        | EngineSpec::Untar { .. }
        | EngineSpec::Command { .. } => return None,
    })
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
    fn build_gives_drivers_for_the_three_tools_only() {
        let fs = EngineSpec::FsMark {
            args: vec!["-n".into(), "10".into()],
        };
        assert_eq!(build_external(&fs).unwrap().engine(), "fs_mark (external)");
        assert_eq!(
            describe_external(&fs).as_deref(),
            Some("fs_mark -n 10 -d .")
        );
        let fio = EngineSpec::Fio {
            job: "[w]\nrw=write\n".into(),
        };
        assert_eq!(build_external(&fio).unwrap().engine(), "fio (external)");
        let db = EngineSpec::Dbench {
            clients: 2,
            seconds: 10,
            warmup_s: None,
            loadfile: None,
        };
        assert_eq!(build_external(&db).unwrap().engine(), "dbench (external)");
        let warm = EngineSpec::Dbench {
            clients: 2,
            seconds: 10,
            warmup_s: Some(2),
            loadfile: None,
        };
        let e = build_external(&warm).err().unwrap().to_string();
        assert!(e.contains("no warmup option"), "{e}");
        let cmd = EngineSpec::Command {
            command: "true".into(),
            metrics: vec![],
            timeout_s: None,
        };
        let e = build_external(&cmd).err().unwrap().to_string();
        assert!(e.contains("no external driver"), "{e}");
        assert_eq!(describe_external(&cmd), None);
    }
}
