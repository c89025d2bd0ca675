//! The `copy` workload: `time (cp FILE /mnt && sync)` done natively. A source file of chosen
//! size and compressibility is generated (untimed) outside the target, copied into the target
//! with a read/write loop or with copy_file_range, and then `sync(2)` runs; the copy and the sync
//! are timed separately.
//!
//! Why: btrfs compression-workspace and similar patches were measured with `cp vmlinux /mnt &&
//! sync`; coreutils >= 9 may take copy_file_range (or reflink) and make the copy a near-free CoW,
//! so this workload chooses its copy path and records which one ran (`copy_file_range_used`).
//! This module also holds the data generator of chosen compressibility that `stream` shares. It
//! must never leave its source or destination file behind, and never allocate in the copy loop.
//!
//! With `source` (issue 16: `cp vmlinux /mnt && sync` under `compress-force`) the user's own
//! file is copied instead of generated data. That file is only ever opened read-only and is
//! never removed; only the copy in the target is.

use super::{Measurements, RunContext, Workload, WorkloadError};
use crate::model::{Direction, Metric, Unit};
use crate::probe::clock::Nanos;
use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rustix::fs::{self as rfs, Mode, OFlags};
use rustix::io::Errno;
use std::path::{Path, PathBuf};

/// Fill `buf` with data that compresses to about `1 - compressibility` of its size: in every
/// 4 KiB run, the first `(1 - compressibility)` part is seeded random bytes and the rest zeros.
/// `compressibility` is clamped to 0.0 (random, incompressible) ..= 1.0 (all zeros).
pub fn fill_compressible(buf: &mut [u8], compressibility: f64, seed: u64) {
    let c = compressibility.clamp(0.0, 1.0);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    for chunk in buf.chunks_mut(4096) {
        let random = ((1.0 - c) * chunk.len() as f64).round() as usize;
        rng.fill_bytes(&mut chunk[..random]);
        chunk[random..].fill(0);
    }
}

/// How the bytes are moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyMethod {
    /// read(2)/write(2) through a user buffer, as cp without reflink/copy offload.
    ReadWrite,
    /// copy_file_range(2) only; an error if the kernel refuses it for these two files.
    CopyFileRange,
    /// copy_file_range(2), falling back to read/write when the kernel refuses it (EXDEV,
    /// EOPNOTSUPP, EINVAL, ENOSYS), as coreutils 9 does.
    Auto,
}

/// Options of the copy workload.
#[derive(Clone, Debug, PartialEq)]
pub struct CopyOptions {
    /// Source file size in bytes.
    pub size: u64,
    /// 0.0 (random) ..= 1.0 (zeros); see [`fill_compressible`].
    pub compressibility: f64,
    /// The copy path.
    pub method: CopyMethod,
    /// Buffer size of the read/write loop (and chunk of copy_file_range).
    pub block_size: usize,
    /// Directory the source file is generated in; `None`: the system temporary directory (a
    /// different filesystem from the target in most setups, as `cp vmlinux /mnt` is).
    pub source_dir: Option<PathBuf>,
    /// Seed of the generated data.
    pub seed: u64,
    /// A user's file to copy instead of generated data; its size is the size.
    pub source: Option<PathBuf>,
}

/// The size of a user's source file for `workload` (`copy`, `stream`): it must be a non-empty
/// regular file (not a device, FIFO or directory, which could be endless or be written).
pub(crate) fn source_size(workload: &str, path: &Path) -> Result<u64, WorkloadError> {
    let md = std::fs::metadata(path).map_err(|e| {
        WorkloadError::InvalidOptions(format!(
            "{workload}: source {}: {e}; give an existing regular file, or leave source out to \
             use generated data",
            path.display()
        ))
    })?;
    if !md.is_file() {
        return Err(WorkloadError::InvalidOptions(format!(
            "{workload}: source {} is not a regular file; give a regular file (a device, FIFO \
             or directory is refused)",
            path.display()
        )));
    }
    if md.len() == 0 {
        return Err(WorkloadError::InvalidOptions(format!(
            "{workload}: source {} is empty; give a file with data in it",
            path.display()
        )));
    }
    Ok(md.len())
}

impl Default for CopyOptions {
    fn default() -> Self {
        CopyOptions {
            size: 64 << 20,
            compressibility: 0.5,
            method: CopyMethod::ReadWrite,
            block_size: 1 << 20,
            source_dir: None,
            seed: 1,
            source: None,
        }
    }
}

/// The copy workload.
#[derive(Clone, Debug)]
pub struct Copy {
    opts: CopyOptions,
}

impl Copy {
    /// Check the options.
    pub fn new(mut opts: CopyOptions) -> Result<Copy, WorkloadError> {
        if let Some(src) = &opts.source {
            opts.size = source_size("copy", src)?;
        }
        if opts.size == 0 {
            return Err(WorkloadError::InvalidOptions(
                "copy: size must be more than 0 bytes".into(),
            ));
        }
        if opts.block_size == 0 || opts.block_size > 256 << 20 {
            return Err(WorkloadError::InvalidOptions(
                "copy: block size must be between 1 byte and 256 MiB".into(),
            ));
        }
        if !(0.0..=1.0).contains(&opts.compressibility) {
            return Err(WorkloadError::InvalidOptions(
                "copy: compressibility must be between 0.0 (random) and 1.0 (zeros)".into(),
            ));
        }
        Ok(Copy { opts })
    }

    /// The options.
    pub fn options(&self) -> &CopyOptions {
        &self.opts
    }
}

/// Removes a file when dropped.
struct RemoveOnDrop(PathBuf);
impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Write `size` bytes of generated data to `path` and fsync it (untimed preparation).
fn generate(path: &Path, opts: &CopyOptions, ctx: &RunContext<'_>) -> Result<(), WorkloadError> {
    let fd = rfs::open(
        path,
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map_err(|e| WorkloadError::io("create", path, e.into()))?;
    let mut buf = vec![0u8; opts.block_size.min(opts.size as usize)];
    let mut left = opts.size;
    let mut block = 0u64;
    while left > 0 {
        if ctx.cancel.is_cancelled() {
            return Err(WorkloadError::Cancelled);
        }
        let n = buf.len().min(left as usize);
        fill_compressible(&mut buf[..n], opts.compressibility, opts.seed ^ block);
        write_all(&fd, &buf[..n]).map_err(|e| WorkloadError::io("write", path, e.into()))?;
        left -= n as u64;
        block += 1;
    }
    rfs::fsync(&fd).map_err(|e| WorkloadError::io("fsync", path, e.into()))?;
    Ok(())
}

pub(crate) fn write_all(fd: &impl rustix::fd::AsFd, mut buf: &[u8]) -> Result<(), Errno> {
    while !buf.is_empty() {
        let n = rustix::io::write(fd, buf)?;
        if n == 0 {
            return Err(Errno::NOSPC);
        }
        buf = &buf[n..];
    }
    Ok(())
}

/// Copy with copy_file_range; `Ok(false)` when the kernel refuses it before any byte moved.
fn copy_offload(
    src: &rustix::fd::OwnedFd,
    dst: &rustix::fd::OwnedFd,
    size: u64,
    chunk: usize,
    ctx: &RunContext<'_>,
) -> Result<bool, (Errno, bool)> {
    let mut done = 0u64;
    while done < size {
        if ctx.cancel.is_cancelled() {
            return Err((Errno::INTR, true));
        }
        let want = chunk.max(1 << 20).min((size - done) as usize);
        match rfs::copy_file_range(src, None, dst, None, want) {
            Ok(0) => return Err((Errno::IO, true)),
            Ok(n) => done += n as u64,
            Err(e)
                if done == 0
                    && matches!(
                        e,
                        Errno::XDEV | Errno::OPNOTSUPP | Errno::INVAL | Errno::NOSYS
                    ) =>
            {
                return Ok(false);
            }
            Err(e) => return Err((e, true)),
        }
    }
    Ok(true)
}

fn copy_read_write(
    src: &rustix::fd::OwnedFd,
    dst: &rustix::fd::OwnedFd,
    buf: &mut [u8],
    ctx: &RunContext<'_>,
) -> Result<(), (&'static str, Errno)> {
    loop {
        if ctx.cancel.is_cancelled() {
            return Err(("cancel", Errno::INTR));
        }
        let n = rustix::io::read(src, &mut *buf).map_err(|e| ("read", e))?;
        if n == 0 {
            return Ok(());
        }
        write_all(dst, &buf[..n]).map_err(|e| ("write", e))?;
    }
}

impl Workload for Copy {
    fn engine(&self) -> &'static str {
        "copy"
    }

    fn run(&self, ctx: &RunContext<'_>) -> Result<Measurements, WorkloadError> {
        let o = &self.opts;
        let dst_path = ctx.dir.join("fsdelta-copy.bin");
        let (src_dir, src_path, _src_guard) = match &o.source {
            // The user's file: read, never removed.
            Some(p) => (
                p.parent().unwrap_or(Path::new("/")).to_path_buf(),
                p.clone(),
                None,
            ),
            None => {
                let dir = o.source_dir.clone().unwrap_or_else(std::env::temp_dir);
                let path = dir.join(format!("fsdelta-copy-src-{}.bin", std::process::id()));
                let guard = RemoveOnDrop(path.clone());
                ctx.progress.phase("generate");
                generate(&path, o, ctx)?;
                (dir, path, Some(guard))
            }
        };
        let mut buf = vec![0u8; o.block_size];

        ctx.progress.phase("copy");
        let _dst_guard = RemoveOnDrop(dst_path.clone());
        let t0 = Nanos::now();
        let src = rfs::open(&src_path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| WorkloadError::io("open", &src_path, e.into()))?;
        let dst = rfs::open(
            &dst_path,
            OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| WorkloadError::io("create", &dst_path, e.into()))?;
        let offload = match o.method {
            CopyMethod::ReadWrite => false,
            CopyMethod::CopyFileRange | CopyMethod::Auto => {
                match copy_offload(&src, &dst, o.size, o.block_size, ctx) {
                    Ok(true) => true,
                    Ok(false) if o.method == CopyMethod::Auto => false,
                    Ok(false) => {
                        return Err(WorkloadError::InvalidOptions(format!(
                            "copy: the kernel refuses copy_file_range from {} to {} (a \
                             different filesystem?); use method auto or read-write, or put \
                             the source on the target's filesystem",
                            src_dir.display(),
                            ctx.dir.display()
                        )));
                    }
                    Err((Errno::INTR, _)) if ctx.cancel.is_cancelled() => {
                        return Err(WorkloadError::Cancelled);
                    }
                    Err((e, _)) => {
                        return Err(WorkloadError::io("copy_file_range", &dst_path, e.into()));
                    }
                }
            }
        };
        if !offload {
            copy_read_write(&src, &dst, &mut buf, ctx).map_err(|(op, e)| {
                if op == "cancel" {
                    WorkloadError::Cancelled
                } else {
                    WorkloadError::io(op, &dst_path, e.into())
                }
            })?;
        }
        drop(dst);
        drop(src);
        let copy = t0.elapsed();

        ctx.progress.phase("sync");
        let t1 = Nanos::now();
        rfs::sync();
        let sync = t1.elapsed();

        let copied = std::fs::metadata(&dst_path)
            .map_err(|e| WorkloadError::io("stat", &dst_path, e))?
            .len();
        if copied != o.size {
            return Err(WorkloadError::io(
                "copy",
                &dst_path,
                std::io::Error::other(format!(
                    "copied {copied} bytes of {}; the copy is incomplete",
                    o.size
                )),
            ));
        }
        let mut m = Measurements::default();
        let secs = |n: Nanos| n.as_secs_f64();
        m.metrics.extend([
            Metric::new(
                "copy_s",
                secs(copy),
                Unit::Seconds,
                Direction::LowerIsBetter,
            ),
            Metric::new(
                "sync_s",
                secs(sync),
                Unit::Seconds,
                Direction::LowerIsBetter,
            ),
            Metric::new(
                "total_s",
                secs(copy + sync),
                Unit::Seconds,
                Direction::LowerIsBetter,
            )
            .headline(),
            Metric::new(
                "copy_file_range_used",
                if offload { 1.0 } else { 0.0 },
                Unit::Count,
                Direction::Neutral,
            ),
        ]);
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{CancelToken, NoProgress};

    fn value(m: &Measurements, name: &str) -> f64 {
        m.metrics.iter().find(|x| x.name == name).unwrap().value
    }

    #[test]
    fn compressibility_sets_the_share_of_zeros_and_is_seeded() {
        let mut a = vec![0xffu8; 64 * 1024];
        fill_compressible(&mut a, 0.75, 7);
        let zeros = a.iter().filter(|&&b| b == 0).count() as f64 / a.len() as f64;
        assert!((0.74..0.76).contains(&zeros), "{zeros}");
        let mut b = vec![0u8; 64 * 1024];
        fill_compressible(&mut b, 0.75, 7);
        assert_eq!(a, b);
        fill_compressible(&mut b, 0.75, 8);
        assert_ne!(a, b);
        fill_compressible(&mut b, 1.0, 8);
        assert!(b.iter().all(|&x| x == 0));
    }

    fn run(method: CopyMethod) -> Measurements {
        let target = tempfile::tempdir().unwrap();
        let src = tempfile::tempdir().unwrap();
        let w = Copy::new(CopyOptions {
            size: 3 << 20,
            method,
            block_size: 256 << 10,
            source_dir: Some(src.path().to_path_buf()),
            ..CopyOptions::default()
        })
        .unwrap();
        let cancel = CancelToken::new();
        let m = w
            .run(&RunContext {
                dir: target.path(),
                cancel: &cancel,
                progress: &NoProgress,
            })
            .unwrap();
        assert_eq!(std::fs::read_dir(target.path()).unwrap().count(), 0);
        assert_eq!(std::fs::read_dir(src.path()).unwrap().count(), 0);
        m
    }

    #[test]
    fn read_write_copy_times_copy_and_sync_and_says_its_path() {
        let m = run(CopyMethod::ReadWrite);
        assert_eq!(value(&m, "copy_file_range_used"), 0.0);
        let (c, s, t) = (
            value(&m, "copy_s"),
            value(&m, "sync_s"),
            value(&m, "total_s"),
        );
        assert!(c > 0.0 && s >= 0.0);
        assert!((t - (c + s)).abs() < 1e-6);
    }

    #[test]
    fn auto_uses_copy_file_range_on_one_filesystem() {
        // Both temp dirs are on the same filesystem, where Linux accepts copy_file_range.
        let m = run(CopyMethod::Auto);
        assert_eq!(value(&m, "copy_file_range_used"), 1.0);
    }

    #[test]
    fn a_users_file_is_copied_whole_and_kept() {
        let target = tempfile::tempdir().unwrap();
        let src_dir = tempfile::tempdir().unwrap();
        let src = src_dir.path().join("vmlinux");
        let data: Vec<u8> = (0..(2 << 20) + 4321)
            .map(|i| (i * 13 % 253) as u8)
            .collect();
        std::fs::write(&src, &data).unwrap();
        for method in [CopyMethod::ReadWrite, CopyMethod::Auto] {
            let w = Copy::new(CopyOptions {
                method,
                source: Some(src.clone()),
                ..CopyOptions::default()
            })
            .unwrap();
            assert_eq!(w.options().size, data.len() as u64);
            let cancel = CancelToken::new();
            let m = w
                .run(&RunContext {
                    dir: target.path(),
                    cancel: &cancel,
                    progress: &NoProgress,
                })
                .unwrap();
            assert!(value(&m, "total_s") > 0.0);
            assert_eq!(std::fs::read_dir(target.path()).unwrap().count(), 0);
            assert_eq!(
                std::fs::read(&src).unwrap(),
                data,
                "the source is kept as it was"
            );
        }
        let e = Copy::new(CopyOptions {
            source: Some("/dev/zero".into()),
            ..CopyOptions::default()
        })
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("/dev/zero") && e.contains("not a regular file"),
            "{e}"
        );
        std::fs::write(src_dir.path().join("empty"), b"").unwrap();
        let e = Copy::new(CopyOptions {
            source: Some(src_dir.path().join("empty")),
            ..CopyOptions::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("is empty"), "{e}");
    }

    #[test]
    fn bad_options_are_refused() {
        assert!(
            Copy::new(CopyOptions {
                compressibility: 1.5,
                ..CopyOptions::default()
            })
            .is_err()
        );
        assert!(
            Copy::new(CopyOptions {
                size: 0,
                ..CopyOptions::default()
            })
            .is_err()
        );
    }
}
