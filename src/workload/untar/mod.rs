//! The `untar` workload: extract a source-tree tarball into the target, then `sync(2)`, timing
//! both separately (`elapsed_s`, `sync_s`, and `files_per_sec` of the extraction).
//!
//! Why: fsperf's `untarfirefox` and "untar a kernel tree" are how filesystem developers measure
//! small-file creation at scale. The tarball is generated ([`generate`]) once per
//! `(files, seed, generator version)` and cached under `$XDG_CACHE_HOME/fsdelta/` (untimed), or is
//! the user's own (`TarballSource::Path`, the `--tarball` option). The tarball is uncompressed so
//! the measurement is filesystem work, not gzip CPU time.
//!
//! Extraction does what GNU `tar -xf` does per entry for directories and regular files (mkdir;
//! create, write, close; set the mtime; permissions from the archive), reading the archive
//! through a 1 MiB buffer and copying file data through one reused 1 MiB buffer; other entry
//! types (symlinks, hard links) go through the `tar` crate's checked `unpack_in`. Entries whose
//! path is absolute or climbs out with `..` are refused. This module must never write outside
//! the target's extraction directory and never leave the extracted tree behind.

pub mod generate;

use super::{Measurements, RunContext, Workload, WorkloadError};
use crate::model::{Direction, Metric, Unit};
use crate::probe::clock::Nanos;
use rustix::fs::{self as rfs, Mode, OFlags, Timespec, Timestamps};
use std::io::{BufReader, Read};
use std::path::{Component, Path, PathBuf};

/// Where the tarball comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TarballSource {
    /// fsdelta's generated source tree of about `files` files.
    Generated {
        /// Regular files in the tree (a Linux kernel tree has ~80 000; the Firefox source of
        /// fsperf's untarfirefox a few hundred thousand).
        files: u64,
        /// Generator seed.
        seed: u64,
    },
    /// The user's own uncompressed tarball (`--tarball PATH`).
    Path(PathBuf),
}

/// Options of the untar workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UntarOptions {
    /// The tarball.
    pub source: TarballSource,
    /// Where generated tarballs are cached; `None`: `$XDG_CACHE_HOME/fsdelta`
    /// (`~/.cache/fsdelta`).
    pub cache_dir: Option<PathBuf>,
}

impl Default for UntarOptions {
    fn default() -> Self {
        UntarOptions {
            source: TarballSource::Generated {
                files: 5000,
                seed: 1,
            },
            cache_dir: None,
        }
    }
}

/// The default cache directory: `$XDG_CACHE_HOME/fsdelta`, else `$HOME/.cache/fsdelta`, else
/// the system temporary directory.
pub fn default_cache_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("fsdelta");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(h).join(".cache").join("fsdelta");
    }
    std::env::temp_dir().join("fsdelta")
}

/// The path of the cached tarball for `(files, seed)`, generating it first when missing. The
/// file is written under a temporary name and renamed, so a crash never leaves a torn tarball.
pub fn cached_tarball(files: u64, seed: u64, cache_dir: &Path) -> Result<PathBuf, WorkloadError> {
    let path = cache_dir.join(format!(
        "untar-v{}-{files}files-seed{seed}.tar",
        generate::GENERATOR_VERSION
    ));
    if path.is_file() {
        return Ok(path);
    }
    std::fs::create_dir_all(cache_dir).map_err(|e| WorkloadError::io("mkdir", cache_dir, e))?;
    let tmp = cache_dir.join(format!(".untar-{}-{}.tar.tmp", std::process::id(), seed));
    let f = std::fs::File::create(&tmp).map_err(|e| WorkloadError::io("create", &tmp, e))?;
    let w = std::io::BufWriter::with_capacity(1 << 20, f);
    let r = generate::generate_tarball(files, seed, w)
        .map_err(|e| WorkloadError::io("write", &tmp, e))
        .and_then(|_| {
            std::fs::rename(&tmp, &path).map_err(|e| WorkloadError::io("rename", &tmp, e))
        });
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r.map(|()| path)
}

/// The untar workload.
#[derive(Clone, Debug)]
pub struct Untar {
    opts: UntarOptions,
}

impl Untar {
    /// Check the options (a user tarball must exist).
    pub fn new(opts: UntarOptions) -> Result<Untar, WorkloadError> {
        match &opts.source {
            TarballSource::Generated { files, .. } if *files == 0 => {
                return Err(WorkloadError::InvalidOptions(
                    "untar: the generated tree needs at least 1 file".into(),
                ));
            }
            TarballSource::Path(p) if !p.is_file() => {
                return Err(WorkloadError::InvalidOptions(format!(
                    "untar: tarball {} does not exist; give an existing uncompressed .tar with \
                     --tarball, or leave it out to use the generated tree",
                    p.display()
                )));
            }
            _ => {}
        }
        Ok(Untar { opts })
    }

    /// The options.
    pub fn options(&self) -> &UntarOptions {
        &self.opts
    }

    /// Make sure the tarball exists (generating it into the cache if needed) and return its
    /// path. `run` calls this untimed; a suite runner may call it ahead of time.
    pub fn prepare(&self) -> Result<PathBuf, WorkloadError> {
        match &self.opts.source {
            TarballSource::Path(p) => Ok(p.clone()),
            TarballSource::Generated { files, seed } => {
                let dir = self
                    .opts
                    .cache_dir
                    .clone()
                    .unwrap_or_else(default_cache_dir);
                cached_tarball(*files, *seed, &dir)
            }
        }
    }
}

/// Whether `p` stays inside the extraction directory.
fn is_safe(p: &Path) -> bool {
    p.components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// Extract `tarball` into `dst`; returns (regular files, bytes).
fn extract(tarball: &Path, dst: &Path, ctx: &RunContext<'_>) -> Result<(u64, u64), WorkloadError> {
    let f = std::fs::File::open(tarball).map_err(|e| WorkloadError::io("open", tarball, e))?;
    let mut ar = tar::Archive::new(BufReader::with_capacity(1 << 20, f));
    let mut buf = vec![0u8; 1 << 20];
    let mut target = PathBuf::with_capacity(4096);
    let mut files = 0u64;
    let mut bytes = 0u64;
    let bad = |e: std::io::Error| WorkloadError::io("read", tarball, e);
    for entry in ar.entries().map_err(bad)? {
        if ctx.cancel.is_cancelled() {
            return Err(WorkloadError::Cancelled);
        }
        let mut entry = entry.map_err(bad)?;
        let kind = entry.header().entry_type();
        let mode = entry.header().mode().unwrap_or(0o644) & 0o7777;
        let mtime = entry.header().mtime().unwrap_or(0) as i64;
        {
            let rel = entry.path().map_err(bad)?;
            if !is_safe(&rel) {
                return Err(WorkloadError::io(
                    "untar",
                    rel.into_owned(),
                    std::io::Error::other(
                        "absolute path or '..' in the tarball; fsdelta refuses to write outside \
                         the target",
                    ),
                ));
            }
            target.clear();
            target.push(dst);
            target.push(&rel);
        }
        if kind.is_dir() {
            match rfs::mkdir(&target, Mode::from_raw_mode(mode | 0o700)) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(WorkloadError::io("mkdir", &target, e.into())),
            }
        } else if kind.is_file() {
            let fd = rfs::open(
                &target,
                OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC,
                Mode::from_raw_mode(mode),
            )
            .or_else(|e| {
                // GNU tar creates missing parent directories of a file entry.
                if e != rustix::io::Errno::NOENT {
                    return Err(e);
                }
                if let Some(parent) = target.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                rfs::open(
                    &target,
                    OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC,
                    Mode::from_raw_mode(mode),
                )
            })
            .map_err(|e| WorkloadError::io("create", &target, e.into()))?;
            loop {
                let n = entry.read(&mut buf).map_err(bad)?;
                if n == 0 {
                    break;
                }
                super::copy::write_all(&fd, &buf[..n])
                    .map_err(|e| WorkloadError::io("write", &target, e.into()))?;
                bytes += n as u64;
            }
            let t = Timespec {
                tv_sec: mtime,
                tv_nsec: 0,
            };
            let _ = rfs::futimens(
                &fd,
                &Timestamps {
                    last_access: t,
                    last_modification: t,
                },
            );
            files += 1;
        } else {
            entry.set_preserve_mtime(true);
            entry
                .unpack_in(dst)
                .map_err(|e| WorkloadError::io("untar", &target, e))?;
        }
    }
    Ok((files, bytes))
}

impl Workload for Untar {
    fn engine(&self) -> &'static str {
        "untar"
    }

    fn run(&self, ctx: &RunContext<'_>) -> Result<Measurements, WorkloadError> {
        ctx.progress.phase("prepare tarball");
        let tarball = self.prepare()?;
        let dst = ctx.dir.join("fsdelta-untar");
        if dst.exists() {
            std::fs::remove_dir_all(&dst).map_err(|e| WorkloadError::io("remove", &dst, e))?;
        }
        std::fs::create_dir(&dst).map_err(|e| WorkloadError::io("mkdir", &dst, e))?;
        struct Cleanup<'a>(&'a Path);
        impl Drop for Cleanup<'_> {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(self.0);
            }
        }
        let _cleanup = Cleanup(&dst);

        ctx.progress.phase("extract");
        let t0 = Nanos::now();
        let (files, _bytes) = extract(&tarball, &dst, ctx)?;
        let elapsed = t0.elapsed();
        ctx.progress.phase("sync");
        let t1 = Nanos::now();
        rfs::sync();
        let sync = t1.elapsed();
        ctx.progress.phase("remove tree");

        let secs = elapsed.as_secs_f64();
        let mut m = Measurements::default();
        m.metrics.extend([
            Metric::new("elapsed_s", secs, Unit::Seconds, Direction::LowerIsBetter).headline(),
            Metric::new(
                "sync_s",
                sync.as_secs_f64(),
                Unit::Seconds,
                Direction::LowerIsBetter,
            ),
            Metric::new(
                "files_per_sec",
                if secs > 0.0 { files as f64 / secs } else { 0.0 },
                Unit::FilesPerSec,
                Direction::HigherIsBetter,
            ),
        ]);
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{CancelToken, NoProgress};

    fn ctx_run(w: &Untar, dir: &Path) -> Result<Measurements, WorkloadError> {
        let cancel = CancelToken::new();
        w.run(&RunContext {
            dir,
            cancel: &cancel,
            progress: &NoProgress,
        })
    }

    #[test]
    fn generated_tree_is_cached_extracted_timed_and_removed() {
        let cache = tempfile::tempdir().unwrap();
        let target = tempfile::tempdir().unwrap();
        let w = Untar::new(UntarOptions {
            source: TarballSource::Generated {
                files: 300,
                seed: 9,
            },
            cache_dir: Some(cache.path().to_path_buf()),
        })
        .unwrap();
        let tb = w.prepare().unwrap();
        let first = std::fs::read(&tb).unwrap();
        let m = ctx_run(&w, target.path()).unwrap();
        assert_eq!(
            std::fs::read(&tb).unwrap(),
            first,
            "the cache is reused as is"
        );
        let v = |n: &str| m.metrics.iter().find(|x| x.name == n).unwrap().value;
        assert!(v("elapsed_s") > 0.0 && v("sync_s") >= 0.0);
        let fps = v("files_per_sec");
        assert!(
            (fps * v("elapsed_s") - 300.0).abs() < 1e-6,
            "300 files extracted"
        );
        assert_eq!(std::fs::read_dir(target.path()).unwrap().count(), 0);
    }

    #[test]
    fn extraction_matches_the_archive() {
        let target = tempfile::tempdir().unwrap();
        let tb = target.path().join("t.tar");
        generate::generate_tarball(50, 2, std::fs::File::create(&tb).unwrap()).unwrap();
        let out = target.path().join("x");
        std::fs::create_dir(&out).unwrap();
        let cancel = CancelToken::new();
        let ctx = RunContext {
            dir: target.path(),
            cancel: &cancel,
            progress: &NoProgress,
        };
        let (files, bytes) = extract(&tb, &out, &ctx).unwrap();
        assert_eq!(files, 50);
        let mut ar = tar::Archive::new(std::fs::File::open(&tb).unwrap());
        let mut total = 0;
        for e in ar.entries().unwrap() {
            let mut e = e.unwrap();
            if !e.header().entry_type().is_file() {
                continue;
            }
            let mut want = Vec::new();
            e.read_to_end(&mut want).unwrap();
            let p = out.join(e.path().unwrap());
            assert_eq!(std::fs::read(&p).unwrap(), want, "{}", p.display());
            let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
            assert_eq!(
                mtime
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_secs(),
                1_700_000_000
            );
            total += want.len() as u64;
        }
        assert_eq!(total, bytes);
    }

    #[test]
    fn a_tarball_that_climbs_out_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let tb = d.path().join("evil.tar");
        {
            let mut b = tar::Builder::new(std::fs::File::create(&tb).unwrap());
            let mut h = tar::Header::new_gnu();
            h.set_size(1);
            h.set_mode(0o644);
            // Write the raw name: Builder::append_data refuses '..' itself.
            h.as_gnu_mut().unwrap().name[..9].copy_from_slice(b"../escape");
            h.set_cksum();
            b.append(&h, &b"x"[..]).unwrap();
            b.finish().unwrap();
        }
        let target = d.path().join("t");
        std::fs::create_dir(&target).unwrap();
        let w = Untar::new(UntarOptions {
            source: TarballSource::Path(tb),
            cache_dir: None,
        })
        .unwrap();
        let e = ctx_run(&w, &target).unwrap_err();
        assert!(e.to_string().contains("outside"), "{e}");
        assert!(!d.path().join("escape").exists());
    }

    #[test]
    fn a_missing_user_tarball_says_what_to_do() {
        let e = Untar::new(UntarOptions {
            source: TarballSource::Path("/nonexistent.tar".into()),
            cache_dir: None,
        })
        .unwrap_err();
        assert!(e.to_string().contains("--tarball"), "{e}");
    }
}
