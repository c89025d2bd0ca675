//! The `stream` workload: dd done natively. A sequential write of one file with a block size,
//! optionally O_DIRECT, with an fsync at the end (dd's `conv=fsync`); then a sequential read of it
//! after dropping caches (cold) and once more without (warm). Rates are decimal MB/s, as dd
//! prints them.
//!
//! Why: the f2fs decompression measurement and many mailing-list numbers are `dd` after
//! `echo 3 > /proc/sys/vm/drop_caches`, three runs each. Timing follows dd (workloads.md): the
//! clock starts after the file is open and stops after the fsync and close. Dropping caches
//! needs root; without it the file's own pages are evicted with POSIX_FADV_DONTNEED instead, and
//! `caches_dropped` = 0 says so (metadata and other files stay cached then). This module must
//! never allocate inside its I/O loops and never leave its file behind.
//!
//! With `source` (issue 16: `dd if=vmlinux of=/mnt/f`) the data written is a user's file, read
//! block by block inside the timed write as dd reads its `if=`; the source is read once,
//! untimed, beforehand so that its own disk is not what is measured. The source is only ever
//! opened read-only.

use super::copy::fill_compressible;
use super::{Measurements, RunContext, Workload, WorkloadError};
use crate::model::{Direction, Metric, Unit};
use crate::probe::clock::Nanos;
use rustix::fs::{self as rfs, Advice, AtFlags, Mode, OFlags, StatxFlags};
use std::path::{Path, PathBuf};

/// Options of the stream workload.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamOptions {
    /// Bytes to write and read back.
    pub size: u64,
    /// Bytes per write and read call (dd's `bs`).
    pub block_size: usize,
    /// O_DIRECT for both the write and the reads (dd's `oflag=direct` / `iflag=direct`).
    pub direct: bool,
    /// fsync before close, inside the timed write (dd's `conv=fsync`).
    pub fsync: bool,
    /// Drop the page cache before the cold read when running as root.
    pub drop_caches: bool,
    /// 0.0 (random) ..= 1.0 (zeros, as `if=/dev/zero`); see [`fill_compressible`].
    pub compressibility: f64,
    /// A user's file to write instead of generated data (dd's `if=`); its size is the size.
    pub source: Option<PathBuf>,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            size: 256 << 20,
            block_size: 1 << 20,
            direct: false,
            fsync: true,
            drop_caches: true,
            compressibility: 0.5,
            source: None,
        }
    }
}

/// The stream workload.
#[derive(Clone, Debug)]
pub struct Stream {
    opts: StreamOptions,
}

impl Stream {
    /// Check the options.
    pub fn new(mut opts: StreamOptions) -> Result<Stream, WorkloadError> {
        if let Some(src) = &opts.source {
            opts.size = super::copy::source_size("stream", src)?;
        }
        if opts.size == 0 || opts.block_size == 0 {
            return Err(WorkloadError::InvalidOptions(
                "stream: size and block size must be more than 0".into(),
            ));
        }
        if opts.block_size > 256 << 20 {
            return Err(WorkloadError::InvalidOptions(
                "stream: block size must be at most 256 MiB".into(),
            ));
        }
        if opts.direct && opts.size % opts.block_size as u64 != 0 {
            return Err(WorkloadError::InvalidOptions(format!(
                "stream: with O_DIRECT the size ({}) must be a multiple of the block size ({})",
                opts.size, opts.block_size
            )));
        }
        if !(0.0..=1.0).contains(&opts.compressibility) {
            return Err(WorkloadError::InvalidOptions(
                "stream: compressibility must be between 0.0 (random) and 1.0 (zeros)".into(),
            ));
        }
        Ok(Stream { opts })
    }

    /// The options.
    pub fn options(&self) -> &StreamOptions {
        &self.opts
    }
}

/// A buffer of `len` bytes whose address is a multiple of `align` (for O_DIRECT), carved out of
/// an over-sized Vec so no unsafe allocation is needed.
struct AlignedBuf {
    storage: Vec<u8>,
    offset: usize,
    len: usize,
}

impl AlignedBuf {
    fn new(len: usize, align: usize) -> Self {
        let storage = vec![0u8; len + align];
        let addr = storage.as_ptr() as usize;
        let offset = (align - addr % align) % align;
        AlignedBuf {
            storage,
            offset,
            len,
        }
    }
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.offset..self.offset + self.len]
    }
    fn as_ref(&self) -> &[u8] {
        &self.storage[self.offset..self.offset + self.len]
    }
}

/// O_DIRECT alignment of the filesystem holding `dir`: (memory, offset) from statx
/// STATX_DIOALIGN, else 4096. Errors when the filesystem says it has no O_DIRECT.
fn dio_alignment(dir: &Path) -> Result<(usize, usize), WorkloadError> {
    match rfs::statx(rfs::CWD, dir, AtFlags::empty(), StatxFlags::DIOALIGN) {
        Ok(st) if st.stx_mask & StatxFlags::DIOALIGN.bits() != 0 => {
            if st.stx_dio_offset_align == 0 {
                return Err(WorkloadError::InvalidOptions(format!(
                    "stream: the filesystem of {} does not support O_DIRECT; run without \
                     direct, or choose another target",
                    dir.display()
                )));
            }
            Ok((
                st.stx_dio_mem_align.max(1) as usize,
                st.stx_dio_offset_align as usize,
            ))
        }
        _ => Ok((4096, 4096)),
    }
}

/// Removes a file when dropped.
struct RemoveOnDrop<'a>(&'a Path);
impl Drop for RemoveOnDrop<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.0);
    }
}

/// `sync; echo 3 > /proc/sys/vm/drop_caches` when root; otherwise (or when that fails) evict
/// this file's pages with POSIX_FADV_DONTNEED. Returns whether the global drop happened.
fn drop_caches(path: &Path, allowed: bool) -> bool {
    // Through the probe's drop, which counts it as fsdelta's own (not a disturbance).
    if allowed && crate::probe::blockstat::drop_caches().unwrap_or(false) {
        return true;
    }
    if let Ok(fd) = rfs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()) {
        let _ = rfs::fdatasync(&fd);
        let _ = rfs::fadvise(&fd, 0, None, Advice::DontNeed);
    }
    false
}

/// Read until `buf` is full or the file ends; the number of bytes read.
fn read_full(
    fd: &rustix::fd::OwnedFd,
    buf: &mut [u8],
    path: &Path,
) -> Result<usize, WorkloadError> {
    let mut got = 0;
    while got < buf.len() {
        let n = rustix::io::read(fd, &mut buf[got..])
            .map_err(|e| WorkloadError::io("read", path, e.into()))?;
        if n == 0 {
            break;
        }
        got += n;
    }
    Ok(got)
}

fn rate(bytes: u64, t: Nanos) -> f64 {
    let s = t.as_secs_f64();
    if s <= 0.0 {
        0.0
    } else {
        bytes as f64 / s / 1e6
    }
}

impl Stream {
    fn read_pass(
        &self,
        path: &Path,
        buf: &mut AlignedBuf,
        ctx: &RunContext<'_>,
    ) -> Result<Nanos, WorkloadError> {
        let mut flags = OFlags::RDONLY | OFlags::CLOEXEC;
        if self.opts.direct {
            flags |= OFlags::DIRECT;
        }
        let fd = rfs::open(path, flags, Mode::empty())
            .map_err(|e| WorkloadError::io("open", path, e.into()))?;
        let t0 = Nanos::now();
        let mut total = 0u64;
        loop {
            if ctx.cancel.is_cancelled() {
                return Err(WorkloadError::Cancelled);
            }
            let n = rustix::io::read(&fd, buf.as_mut())
                .map_err(|e| WorkloadError::io("read", path, e.into()))?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        drop(fd);
        let t = t0.elapsed();
        if total != self.opts.size {
            return Err(WorkloadError::io(
                "read",
                path,
                std::io::Error::other(format!("read {total} bytes of {}", self.opts.size)),
            ));
        }
        Ok(t)
    }
}

impl Workload for Stream {
    fn engine(&self) -> &'static str {
        "stream"
    }

    fn run(&self, ctx: &RunContext<'_>) -> Result<Measurements, WorkloadError> {
        let o = &self.opts;
        let path = ctx.dir.join("fsdelta-stream.dat");
        let (mem_align, _) = if o.direct {
            dio_alignment(ctx.dir)?
        } else {
            (8, 8)
        };
        if o.direct && o.block_size % mem_align.max(512) != 0 {
            return Err(WorkloadError::InvalidOptions(format!(
                "stream: with O_DIRECT the block size must be a multiple of {} on this \
                 filesystem",
                mem_align.max(512)
            )));
        }
        let mut buf = AlignedBuf::new(o.block_size, mem_align.max(4096));
        let source = match &o.source {
            None => {
                fill_compressible(buf.as_mut(), o.compressibility, 0x5eed);
                None
            }
            Some(src) => {
                ctx.progress.phase("read source");
                let fd = rfs::open(src, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
                    .map_err(|e| WorkloadError::io("open", src, e.into()))?;
                // Untimed: bring the source into the page cache, as a repeated dd finds it.
                while read_full(&fd, buf.as_mut(), src)? > 0 {
                    if ctx.cancel.is_cancelled() {
                        return Err(WorkloadError::Cancelled);
                    }
                }
                Some((fd, src))
            }
        };

        ctx.progress.phase("write");
        let _guard = RemoveOnDrop(&path);
        let mut flags = OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC;
        if o.direct {
            flags |= OFlags::DIRECT;
        }
        let fd = rfs::open(&path, flags, Mode::from_raw_mode(0o644)).map_err(|e| {
            let hint = if o.direct && e == rustix::io::Errno::INVAL {
                " (this filesystem refuses O_DIRECT: run without direct)"
            } else {
                ""
            };
            WorkloadError::io(
                "open",
                &path,
                std::io::Error::other(format!("{}{hint}", std::io::Error::from(e))),
            )
        })?;
        let t0 = Nanos::now();
        let mut left = o.size;
        while left > 0 {
            if ctx.cancel.is_cancelled() {
                return Err(WorkloadError::Cancelled);
            }
            let mut n = buf.len.min(left as usize);
            if let Some((src_fd, src)) = &source {
                if left == o.size {
                    rfs::seek(src_fd, rfs::SeekFrom::Start(0))
                        .map_err(|e| WorkloadError::io("seek", src, e.into()))?;
                }
                n = read_full(src_fd, &mut buf.as_mut()[..n], src)?;
                if n == 0 {
                    return Err(WorkloadError::io(
                        "read",
                        src,
                        std::io::Error::other(format!(
                            "the source shrank below its {} bytes while the test ran",
                            o.size
                        )),
                    ));
                }
            }
            super::copy::write_all(&fd, &buf.as_ref()[..n])
                .map_err(|e| WorkloadError::io("write", &path, e.into()))?;
            left -= n as u64;
        }
        if o.fsync {
            rfs::fsync(&fd).map_err(|e| WorkloadError::io("fsync", &path, e.into()))?;
        }
        drop(fd);
        let t_write = t0.elapsed();
        ctx.progress.phase("drop caches");
        let dropped = drop_caches(&path, o.drop_caches);

        ctx.progress.phase("cold read");
        let t_cold = self.read_pass(&path, &mut buf, ctx)?;
        ctx.progress.phase("warm read");
        let t_warm = self.read_pass(&path, &mut buf, ctx)?;

        let mut m = Measurements::default();
        m.metrics.extend([
            Metric::new(
                "write_mb_s",
                rate(o.size, t_write),
                Unit::MBPerSec,
                Direction::HigherIsBetter,
            )
            .headline(),
            Metric::new(
                "read_cold_mb_s",
                rate(o.size, t_cold),
                Unit::MBPerSec,
                Direction::HigherIsBetter,
            )
            .headline(),
            Metric::new(
                "read_warm_mb_s",
                rate(o.size, t_warm),
                Unit::MBPerSec,
                Direction::HigherIsBetter,
            )
            .headline(),
            Metric::new(
                "caches_dropped",
                if dropped { 1.0 } else { 0.0 },
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

    fn run(opts: StreamOptions) -> Result<Measurements, WorkloadError> {
        let d = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let cancel = CancelToken::new();
        let r = Stream::new(opts)?.run(&RunContext {
            dir: d.path(),
            cancel: &cancel,
            progress: &NoProgress,
        });
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "file left");
        r
    }

    fn value(m: &Measurements, name: &str) -> f64 {
        m.metrics.iter().find(|x| x.name == name).unwrap().value
    }

    #[test]
    fn writes_and_reads_back_cold_and_warm() {
        let m = run(StreamOptions {
            size: 4 << 20,
            block_size: 64 << 10,
            drop_caches: false,
            ..StreamOptions::default()
        })
        .unwrap();
        for n in ["write_mb_s", "read_cold_mb_s", "read_warm_mb_s"] {
            assert!(value(&m, n) > 0.0, "{n}");
        }
        assert_eq!(value(&m, "caches_dropped"), 0.0, "not allowed to drop");
    }

    #[test]
    fn direct_io_with_an_odd_tail_is_refused_and_aligned_direct_io_runs() {
        let e = Stream::new(StreamOptions {
            size: (4 << 20) + 1,
            block_size: 1 << 20,
            direct: true,
            ..StreamOptions::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("multiple of the block size"), "{e}");
        // The worktree's filesystem (ext4/xfs/btrfs here) takes O_DIRECT; a filesystem that
        // refuses it must give the how-to-fix error, never a wrong number.
        match run(StreamOptions {
            size: 2 << 20,
            block_size: 1 << 20,
            direct: true,
            drop_caches: false,
            ..StreamOptions::default()
        }) {
            Ok(m) => assert!(value(&m, "read_cold_mb_s") > 0.0),
            Err(e) => assert!(e.to_string().contains("O_DIRECT"), "{e}"),
        }
    }

    #[test]
    fn a_source_file_is_written_whole_and_left_untouched() {
        let src_dir = tempfile::tempdir().unwrap();
        let src = src_dir.path().join("vmlinux");
        let data: Vec<u8> = (0..(3 << 20) + 12345)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        std::fs::write(&src, &data).unwrap();
        let w = Stream::new(StreamOptions {
            size: 1,
            block_size: 64 << 10,
            drop_caches: false,
            source: Some(src.clone()),
            ..StreamOptions::default()
        })
        .unwrap();
        assert_eq!(
            w.options().size,
            data.len() as u64,
            "the size is the file's"
        );
        let m = run(w.options().clone()).unwrap();
        assert!(value(&m, "write_mb_s") > 0.0);
        assert_eq!(
            std::fs::read(&src).unwrap(),
            data,
            "the source is only read"
        );
        // The read-back checks the byte count: a wrong count is an error, not a number.
        for bad in [src_dir.path().to_path_buf(), src_dir.path().join("missing")] {
            let e = Stream::new(StreamOptions {
                source: Some(bad.clone()),
                ..StreamOptions::default()
            })
            .unwrap_err()
            .to_string();
            assert!(
                e.contains(&bad.display().to_string()) && e.contains("source"),
                "{e}"
            );
        }
    }

    #[test]
    fn aligned_buffers_are_aligned() {
        for align in [512, 4096, 65536] {
            let b = AlignedBuf::new(8192, align);
            assert_eq!(b.as_ref().as_ptr() as usize % align, 0);
            assert_eq!(b.as_ref().len(), 8192);
        }
    }
}
