//! The files of a fio job clone: names, sizes, untimed layout, opening with the job's flags,
//! page-cache invalidation and O_DIRECT alignment.
//!
//! Why it exists: fio lays files out before the timed section (read jobs write their files
//! first; write jobs only create and preallocate), so that layout never pollutes a number. This
//! module does that setup and the checks that must fail before any I/O (a misaligned O_DIRECT
//! job, a filesystem that rejects O_DIRECT). It must never run inside the timed loop except for
//! `open_for_io` (openfiles rotation, create_on_open), which the worker times where fio does.

use super::ops::{self, Caps};
use super::rand;
use crate::fio::jobfile::{Fallocate, JobSpec, SizeRange, SizeSpec};
use crate::workload::WorkloadError;
use rustix::fs::{Mode, OFlags};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Serialises layout: clones that share a file (filename=) must not lay it out at once.
static LAYOUT_LOCK: Mutex<()> = Mutex::new(());

/// Size of the writes that lay a file out (untimed, so larger than fio's bs-sized writes).
const LAYOUT_CHUNK: usize = 1 << 20;

/// One file a clone does I/O on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilePlan {
    /// Where.
    pub path: PathBuf,
    /// Bytes of the file's I/O region (fio's io_size of the file).
    pub size: u64,
    /// Where the region starts (fio's file_offset: offset= plus offset_increment per clone).
    pub offset: u64,
    /// The name fio gives the file (`directory/name` as written): it seeds zipf and pareto.
    pub fio_name: String,
}

/// The clone's files and the bytes one pass of the job moves (fio's io_size).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClonePlan {
    /// Files, in fio's order.
    pub files: Vec<FilePlan>,
    /// Bytes per pass (loop), over all files.
    pub pass_bytes: u64,
}

fn invalid(msg: String) -> WorkloadError {
    WorkloadError::InvalidOptions(msg)
}

/// The name fio gives file `i` of clone `clone` when the job names none (filename_format,
/// fio's make_filename: `$jobname`, `$jobnum` and `$filenum` replaced wherever they occur,
/// `$clientuid` empty outside client/server mode, any other `$` text kept as written).
fn generated_name(job: &JobSpec, clone: u32, i: usize) -> String {
    let Some(fmt) = &job.filename_format else {
        return format!("{}.{}.{}", job.name, clone, i);
    };
    let mut out = String::with_capacity(fmt.len() + job.name.len());
    let mut rest = fmt.as_str();
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let fields: [(&str, String); 4] = [
            ("$jobname", job.name.clone()),
            ("$clientuid", String::new()),
            ("$jobnum", clone.to_string()),
            ("$filenum", i.to_string()),
        ];
        match fields.iter().find(|(k, _)| rest.starts_with(k)) {
            Some((k, v)) => {
                out.push_str(v);
                rest = &rest[k.len()..];
            }
            None => {
                out.push('$');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where each file's region starts: offset= (bytes, or a percentage of the existing file
/// rounded down to the block size, as fio aligns it) plus offset_increment= per clone, or the
/// end of the file with file_append.
fn region_offsets(
    job: &JobSpec,
    clone: u32,
    paths: &[PathBuf],
    min_bs_all: u64,
) -> Result<Vec<u64>, WorkloadError> {
    let mut offsets = Vec::with_capacity(paths.len());
    for path in paths {
        // fio's setup_files: file_append puts a regular file's region at its end (a file
        // not there yet is empty), in place of offset= and offset_increment=.
        if job.file_append {
            match std::fs::metadata(path) {
                Ok(m) if m.is_file() => {
                    offsets.push(m.len());
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    offsets.push(0);
                    continue;
                }
                _ => {}
            }
        }
        let base_off = match job.offset {
            SizeSpec::Bytes(b) => b.0,
            SizeSpec::Percent(0) => 0,
            SizeSpec::Percent(p) => {
                let len = existing_size(path).map_err(|e| {
                    invalid(format!(
                        "job '{}': offset={p}% needs the size of {}, but {e}",
                        job.name,
                        path.display()
                    ))
                })?;
                len * p as u64 / 100 / min_bs_all * min_bs_all
            }
        };
        offsets.push(base_off + job.offset_increment.0 * clone as u64);
    }
    Ok(offsets)
}

/// Each file's region size and the bytes of a pass: size= (bytes shared out, or a percentage
/// of the existing files), filesize=, a file engine's none, fill_device's more than the free
/// space, or the whole of each existing file or device past its offset.
fn region_sizes(
    job: &JobSpec,
    base: &Path,
    paths: &[PathBuf],
    offsets: &[u64],
    seeds: &[u64; 21],
    min_bs_all: u64,
) -> Result<(Vec<u64>, u64), WorkloadError> {
    let nfiles = paths.len();
    let n = nfiles as u64;
    let sized = match (job.size, job.filesize) {
        (Some(SizeSpec::Percent(p)), Some(_)) => {
            return Err(invalid(format!(
                "job '{}': size={p}% together with filesize= is ambiguous; give one of them",
                job.name
            )));
        }
        (Some(SizeSpec::Percent(p)), None) => {
            let mut sizes = Vec::with_capacity(nfiles);
            for path in paths {
                let len = std::fs::metadata(path)
                    .map_err(|e| {
                        invalid(format!(
                            "job '{}': size={p}% needs existing files, and {} cannot be read: {e}",
                            job.name,
                            path.display()
                        ))
                    })?
                    .len();
                sizes.push(len * p as u64 / 100);
            }
            let total = sizes.iter().sum();
            (sizes, total)
        }
        (Some(SizeSpec::Bytes(total)), Some(fs)) => (file_sizes(job, fs, nfiles, seeds), total.0),
        (Some(SizeSpec::Bytes(total)), None) => (vec![total.0 / n; nfiles], total.0 / n * n),
        (None, Some(fs)) => {
            let sizes = file_sizes(job, fs, nfiles, seeds);
            let total = sizes.iter().sum();
            (sizes, total)
        }
        (None, None) if ops::of(job.ioengine).has(Caps::FILEOP) => (vec![0; nfiles], 0),
        (None, None) if job.fill_device => {
            // fio: fill_device without size= writes until ENOSPC (its size is "unlimited"): the
            // region is more than the free space of the filesystem holding each file (an
            // eighth more, and a block), so the job ends at ENOSPC as fio's does.
            let mut sizes = Vec::with_capacity(nfiles);
            for path in paths {
                let dir = path.parent().unwrap_or(base);
                let vfs = rustix::fs::statvfs(dir).map_err(|e| io_err("statvfs", dir, e))?;
                let free = vfs.f_bavail * vfs.f_frsize;
                let region = free + free / 8 + min_bs_all;
                sizes.push(region / min_bs_all * min_bs_all);
            }
            let total = sizes.iter().sum();
            (sizes, total)
        }
        (None, None) => {
            // fio: without size=, the job covers the whole of each existing file or device.
            let mut sizes = Vec::with_capacity(nfiles);
            for (path, off) in paths.iter().zip(offsets) {
                let len = existing_size(path).map_err(|e| {
                    invalid(format!(
                        "job '{}': no size given, so the size of {} is needed, but {e} (set size= or filesize=)",
                        job.name,
                        path.display()
                    ))
                })?;
                if len <= *off {
                    return Err(invalid(format!(
                        "job '{}': offset {off} is at or beyond the end of {} ({len} bytes)",
                        job.name,
                        path.display()
                    )));
                }
                sizes.push(len - off);
            }
            let total = sizes.iter().sum();
            (sizes, total)
        }
    };
    Ok(sized)
}

/// Name and size the files of clone `clone` of `job`, with `base` the directory relative
/// paths are resolved against. `size=N%` reads the existing files' sizes.
pub fn plan_clone(
    job: &JobSpec,
    clone: u32,
    base: &Path,
    seeds: &[u64; 21],
) -> Result<ClonePlan, WorkloadError> {
    if job.replay.is_some() {
        return Ok(plan_replay(job, base));
    }
    let resolve = |p: &str| -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            base.join(p)
        }
    };
    let dirs: Vec<PathBuf> = if job.directory.is_empty() {
        vec![base.to_path_buf()]
    } else {
        job.directory.iter().map(|d| resolve(d)).collect()
    };
    let nfiles = if job.filename.is_empty() {
        job.nrfiles as usize
    } else {
        job.filename.len()
    };
    let paths: Vec<PathBuf> = (0..nfiles)
        .map(|i| {
            let dir = &dirs[i % dirs.len()];
            if job.filename.is_empty() {
                dir.join(generated_name(job, clone, i))
            } else {
                let f = Path::new(&job.filename[i]);
                if f.is_absolute() {
                    f.to_path_buf()
                } else {
                    dir.join(f)
                }
            }
        })
        .collect();
    let fio_names: Vec<String> = (0..nfiles)
        .map(|i| {
            let name = if job.filename.is_empty() {
                generated_name(job, clone, i)
            } else {
                job.filename[i].clone()
            };
            match job.directory.get(i % job.directory.len().max(1)) {
                Some(d) if !name.starts_with('/') => format!("{d}/{name}"),
                _ => name,
            }
        })
        .collect();
    // offset=: bytes, or a percentage of the existing file (rounded down to the block size,
    // as fio aligns it); offset_increment moves each clone further.
    let min_bs_all = job.min_bs(0).min(job.min_bs(1)).max(1);
    let offsets = region_offsets(job, clone, &paths, min_bs_all)?;
    let (sizes, pass_bytes) = region_sizes(job, base, &paths, &offsets, seeds, min_bs_all)?;
    let ranged = job.filesize.is_some_and(|r| r.low != r.high);
    if !ops::of(job.ioengine).has(Caps::FILEOP) {
        for (path, size) in paths.iter().zip(&sizes) {
            if ranged && *size == 0 {
                // fio ignores a file whose drawn size rounds down to nothing.
                continue;
            }
            let min_bs = job.min_bs(0).min(job.min_bs(1));
            if *size < min_bs {
                return Err(invalid(format!(
                    "job '{}': file {} would hold {size} bytes, less than one block of {min_bs} (raise size= or lower nrfiles=)",
                    job.name,
                    path.display()
                )));
            }
        }
    }
    // io_size= (io_limit) replaces the bytes of a pass; a pass larger than the region wraps.
    let pass_bytes = job.io_size.map(|b| b.0).unwrap_or(pass_bytes);
    Ok(ClonePlan {
        files: paths
            .into_iter()
            .zip(sizes)
            .zip(offsets)
            .zip(fio_names)
            .map(|(((path, size), offset), fio_name)| FilePlan {
                path,
                size,
                offset,
                fio_name,
            })
            .collect(),
        pass_bytes,
    })
}

/// A replaying clone's files (read_iolog=): the log's, as the job names them (relative under
/// directory= or the run directory), from offset 0 with their size as they are (fio lays no
/// replayed file out); a pass is the log's bytes.
fn plan_replay(job: &JobSpec, base: &Path) -> ClonePlan {
    let files = job
        .filename
        .iter()
        .map(|name| {
            let dir = job
                .directory
                .first()
                .map_or(base.to_path_buf(), |d| base.join(d));
            let path = if Path::new(name).is_absolute() {
                PathBuf::from(name)
            } else {
                dir.join(name)
            };
            let fio_name = match job.directory.first() {
                Some(d) if !name.starts_with('/') => format!("{d}/{name}"),
                _ => name.clone(),
            };
            FilePlan {
                size: std::fs::metadata(&path).map_or(0, |m| m.len()),
                path,
                offset: 0,
                fio_name,
            }
        })
        .collect();
    let pass_bytes = match job.size {
        Some(crate::fio::jobfile::SizeSpec::Bytes(b)) => b.0,
        _ => 0,
    };
    ClonePlan { files, pass_bytes }
}

/// The size of the block device open as `fd` (BLKGETSIZE64).
pub fn blkdev_size(fd: std::os::fd::BorrowedFd<'_>) -> std::io::Result<u64> {
    let mut size: u64 = 0;
    // BLKGETSIZE64 = _IOR(0x12, 114, size_t)
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    // SAFETY: the ioctl writes one u64 into `size`, which outlives the call.
    let r = unsafe {
        libc::ioctl(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            BLKGETSIZE64 as _,
            &mut size as *mut u64,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(size)
}

/// The size of an existing regular file, or of a block device (BLKGETSIZE64), as fio reads it
/// when a job gives no size.
pub fn existing_size(path: &Path) -> Result<u64, String> {
    use std::os::unix::fs::FileTypeExt;
    let md = std::fs::metadata(path).map_err(|e| format!("it cannot be read: {e}"))?;
    if md.file_type().is_block_device() {
        let f = std::fs::File::open(path).map_err(|e| format!("it cannot be opened: {e}"))?;
        return blkdev_size(std::os::fd::AsFd::as_fd(&f))
            .map_err(|e| format!("BLKGETSIZE64 failed: {e}"));
    }
    if !md.is_file() {
        return Err("it is neither a regular file nor a block device".to_string());
    }
    if md.len() == 0 {
        return Err("it is empty".to_string());
    }
    Ok(md.len())
}

/// Each file's size: the fixed filesize, or one drawn from the range as fio's
/// get_rand_file_size (uniform in `low..high`, rounded down to the smallest block size).
fn file_sizes(job: &JobSpec, fs: SizeRange, n: usize, seeds: &[u64; 21]) -> Vec<u64> {
    if fs.low == fs.high {
        return vec![fs.low.0; n];
    }
    let use64 = job.random_generator == crate::fio::jobfile::RandomGenerator::Tausworthe64;
    let mut r = rand::Taus::new(seeds[rand::SEED_FILE_SIZE], use64);
    let min_bs = match (job.rw.reads(), job.rw.writes()) {
        (true, false) => job.min_bs(0),
        (false, true) => job.min_bs(1),
        _ => job.min_bs(0).min(job.min_bs(1)),
    };
    (0..n)
        .map(|_| {
            let s = fs.low.0 + r.scaled(fs.high.0 - fs.low.0);
            s - s % min_bs
        })
        .collect()
}

/// The O_DIRECT alignment of `path` (a regular file or a device; ext4 reports none for a
/// directory): (offset/length, memory), from statx STATX_DIOALIGN, else 4096 for both.
pub fn dio_alignment(dir: &Path) -> (u64, usize) {
    let st = rustix::fs::statx(
        rustix::fs::CWD,
        dir,
        rustix::fs::AtFlags::empty(),
        rustix::fs::StatxFlags::DIOALIGN,
    );
    match st {
        Ok(s)
            if s.stx_mask & rustix::fs::StatxFlags::DIOALIGN.bits() != 0
                && s.stx_dio_offset_align > 0 =>
        {
            (
                s.stx_dio_offset_align as u64,
                (s.stx_dio_mem_align as usize).max(8),
            )
        }
        _ => (4096, 4096),
    }
}

/// [`dio_alignment`] of a new regular file in `dir` (a directory reports none on ext4): an
/// empty probe file, removed at once; the directory's own answer if it cannot be made.
pub fn dio_alignment_in(dir: &Path) -> (u64, usize) {
    let probe = dir.join(format!(".fsdelta-dio-probe.{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let a = dio_alignment(&probe);
            let _ = std::fs::remove_file(&probe);
            a
        }
        Err(_) => dio_alignment(dir),
    }
}

/// Check that an O_DIRECT job's block sizes and file sizes are multiples of `align`.
pub fn check_direct_alignment(
    job: &JobSpec,
    plan: &ClonePlan,
    align: u64,
) -> Result<(), WorkloadError> {
    for (i, which) in ["read", "write"].iter().enumerate() {
        let used = if i == 0 {
            job.rw.reads()
        } else {
            job.rw.writes()
        };
        if !used {
            continue;
        }
        if job.blocksize_unaligned && job.bssplit[i].is_empty() && !job.fixed_bs(i) {
            return Err(invalid(format!(
                "job '{}': direct=1 with bs_unaligned and a bsrange draws {which} sizes of any byte count, which O_DIRECT refuses (drop bs_unaligned or direct=1)",
                job.name
            )));
        }
        // The sizes an I/O can have: rounded to the smallest (without bs_unaligned), each is a
        // multiple of it or the largest; with bs_unaligned, each split entry.
        let sizes = if job.blocksize_unaligned {
            job.bs_candidates(i)
        } else {
            vec![job.min_bs(i), job.max_bs(i)]
        };
        if let Some(bad) = sizes.iter().find(|b| *b % align != 0) {
            let what = if job.fixed_bs(i) {
                format!("the {which} bs is {bad} bytes")
            } else {
                format!("the {which} block sizes include {bad} bytes")
            };
            return Err(invalid(format!(
                "job '{}': direct=1 needs block sizes that are multiples of the device's {align}-byte O_DIRECT alignment, but {what} (use bs={}k or a multiple, or direct=0)",
                job.name,
                align.div_ceil(1024).max(4)
            )));
        }
        if job.ba(i) % align != 0 {
            return Err(invalid(format!(
                "job '{}': direct=1 needs offsets that are multiples of the device's {align}-byte O_DIRECT alignment, but the {which} blockalign is {} bytes (raise blockalign= or use direct=0)",
                job.name,
                job.ba(i)
            )));
        }
    }
    for f in &plan.files {
        if f.offset % align != 0 {
            return Err(invalid(format!(
                "job '{}': direct=1 needs offsets that are multiples of {align} bytes, but {} starts at {} (adjust offset=/offset_increment=)",
                job.name,
                f.path.display(),
                f.offset
            )));
        }
        if f.size % align != 0 {
            return Err(invalid(format!(
                "job '{}': direct=1 needs file sizes that are multiples of {align} bytes, but {} would be {} bytes (adjust size=/filesize=)",
                job.name,
                f.path.display(),
                f.size
            )));
        }
    }
    Ok(())
}

fn io_err(op: &'static str, path: &Path, e: impl Into<std::io::Error>) -> WorkloadError {
    WorkloadError::io(op, path, e.into())
}

/// Preallocate as `fallocate=` says (fio falls back silently where native is unsupported; so
/// do we for `native`, the default, and report an error for an explicit mode).
fn preallocate(job: &JobSpec, fd: &OwnedFd, f: &FilePlan) -> Result<(), WorkloadError> {
    use rustix::fs::FallocateFlags;
    let res = match job.fallocate {
        Fallocate::None => return Ok(()),
        Fallocate::Native => {
            let _ = rustix::fs::fallocate(fd, FallocateFlags::empty(), 0, f.offset + f.size);
            return Ok(());
        }
        Fallocate::Keep => {
            rustix::fs::fallocate(fd, FallocateFlags::KEEP_SIZE, 0, f.offset + f.size)
        }
        Fallocate::Truncate => rustix::fs::ftruncate(fd, f.offset + f.size),
        Fallocate::Posix => {
            rustix::fs::fallocate(fd, FallocateFlags::empty(), 0, f.offset + f.size)
        }
    };
    res.map_err(|e| io_err("fallocate", &f.path, e))
}

/// Lay out one clone's files, untimed: a file that already holds `size` bytes is left alone; a
/// job that reads gets its files written in full (random data, as fio); a write-only job gets
/// them created and preallocated. A file written out is then fsynced (fio's create_fsync).
///
/// With `read_only` (fio's `--readonly`) nothing is written: a file that would need laying out
/// is fio's "refusing extend of file due to read-only", an error here (fio goes on to fail the
/// job's open or reads).
///
/// Returns the files it created or extended and the bytes they cover (offset + size each),
/// for fio's "Laying out IO file" line.
pub fn layout(
    job: &JobSpec,
    plan: &ClonePlan,
    seed: u64,
    read_only: bool,
) -> Result<LaidOut, WorkloadError> {
    let mut laid = LaidOut::default();
    let engine = ops::of(job.ioengine);
    if engine.has(Caps::CREATES_FILES) || engine.has(Caps::FAKEIO) || job.replay.is_some() {
        // filecreate creates the files as its I/O; null touches no file; a replay
        // (read_iolog=) lays nothing out, as fio's setup_files skips it.
        return Ok(laid);
    }
    let _guard = LAYOUT_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let mut buf: Vec<u8> = Vec::new();
    let mut seed = seed;
    for f in &plan.files {
        if let Some(parent) = f.path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_err("mkdir", parent, e))?;
        }
        let md = std::fs::metadata(&f.path).ok();
        if md.as_ref().is_some_and(|m| {
            use std::os::unix::fs::FileTypeExt;
            // A device is never laid out (nor truncated): it holds what it holds.
            m.file_type().is_block_device() || m.file_type().is_char_device()
        }) {
            continue;
        }
        let existing = md.map(|m| m.len());
        let want = f.offset + f.size;
        if existing.is_some_and(|len| len >= want) {
            continue;
        }
        if read_only {
            let what = match existing {
                Some(len) => format!("holds {len} bytes where the job needs {want}"),
                None => "does not exist".to_string(),
            };
            return Err(WorkloadError::InvalidOptions(format!(
                "refusing extend of file due to read-only (as fio): {} {what}, and --readonly lays out no file; create it first (run the job once without --readonly) or drop --readonly",
                f.path.display()
            )));
        }
        if f.size == 0 {
            // A drawn size of nothing: fio still creates the (empty) file of a write job.
            if job.rw.writes() {
                std::fs::File::create(&f.path).map_err(|e| io_err("create", &f.path, e))?;
            }
            continue;
        }
        // A trim job's files are written in full first, as fio lays them out, and so are an
        // mmap job's (fio's FIO_NOEXTEND: its writes cannot grow the file).
        let full = job.rw.reads() || job.rw.trims() || engine.has(Caps::NOEXTEND);
        if !full && job.create_on_open {
            // fio: create_on_open leaves creation to the job's open().
            continue;
        }
        laid.files += 1;
        laid.bytes += want;
        let mut flags = OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC;
        if full {
            flags |= OFlags::TRUNC;
        }
        let fd = rustix::fs::open(&f.path, flags, Mode::from_raw_mode(0o644))
            .map_err(|e| io_err("open", &f.path, e))?;
        preallocate(job, &fd, f)?;
        if full {
            rustix::fs::ftruncate(&fd, want).map_err(|e| io_err("ftruncate", &f.path, e))?;
            // A pattern starts anew every max_bs, as fio's layout writes: whole blocks a chunk.
            let chunk = match job.buffer_pattern {
                Some(_) => {
                    let bs = job.max_bs(1).max(1) as usize;
                    (LAYOUT_CHUNK / bs).max(1) * bs
                }
                None => LAYOUT_CHUNK,
            };
            if buf.len() < chunk {
                buf = vec![0u8; chunk];
            }
            let mut left = want;
            let mut off = 0u64;
            while left > 0 {
                let n = (left as usize).min(chunk);
                fill_like_job(job, &mut buf[..n], &mut seed);
                let mut done = 0;
                while done < n {
                    let w = rustix::io::pwrite(&fd, &buf[done..n], off + done as u64)
                        .map_err(|e| io_err("write (layout)", &f.path, e))?;
                    if w == 0 {
                        return Err(io_err(
                            "write (layout)",
                            &f.path,
                            std::io::Error::from_raw_os_error(libc::ENOSPC),
                        ));
                    }
                    done += w;
                }
                off += n as u64;
                left -= n as u64;
            }
        }
        // fio's extend_file: only a file it wrote out (new_layout) is fsynced, with
        // create_fsync=1 (the default); a write job's created file is not.
        if full && job.create_fsync {
            rustix::fs::fsync(&fd).map_err(|e| io_err("fsync (layout)", &f.path, e))?;
        }
    }
    Ok(laid)
}

/// What [`layout`] laid out: files created or extended, and the bytes they cover.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaidOut {
    /// Files.
    pub files: u32,
    /// Their offset + size, summed.
    pub bytes: u64,
}

impl LaidOut {
    /// fio's setup_files line for job `name`, or None when nothing was laid out.
    pub fn fio_line(&self, name: &str) -> Option<String> {
        let many = self.files > 1;
        (self.files > 0).then(|| {
            format!(
                "{name}: Laying out IO file{} ({} file{} / {}{}MiB)",
                if many { "s" } else { "" },
                self.files,
                if many { "s" } else { "" },
                if many { "total " } else { "" },
                self.bytes >> 20
            )
        })
    }
}

/// Fill a buffer as the job's write buffers are filled (zeros, compressible, or random).
pub fn fill_like_job(job: &JobSpec, buf: &mut [u8], seed: &mut u64) {
    match job.buffer_compress_percentage {
        // fio's fixup_options: 100 % is zero_buffers, below the pattern if there is one.
        Some(100) if job.buffer_pattern.is_none() => buf.fill(0),
        Some(p) if p > 0 && p < 100 => rand::fill_compressible(
            buf,
            p,
            job.buffer_compress_chunk.0 as usize,
            seed,
            job.buffer_pattern.as_deref().unwrap_or_default(),
        ),
        // fio's fill_io_buffer: the pattern before zero_buffers.
        _ if job.buffer_pattern.is_some() => {
            // fio's fill_buffer_pattern: the pattern repeated over each write buffer of
            // max_bs (the layout writes max_bs at a time, each filled anew).
            let p = job.buffer_pattern.as_deref().unwrap_or_default();
            let period = job.max_bs(1).max(1) as usize;
            for block in buf.chunks_mut(period) {
                for (dst, src) in block.iter_mut().zip(p.iter().cycle()) {
                    *dst = *src;
                }
            }
        }
        _ if job.zero_buffers => buf.fill(0),
        _ => rand::fill_random(buf, seed),
    }
}

/// Open a file for the job's I/O. `O_DIRECT` rejected by the filesystem is reported with the
/// way out.
pub fn open_for_io(job: &JobSpec, path: &Path) -> Result<OwnedFd, WorkloadError> {
    let mut flags = OFlags::CLOEXEC;
    flags |= if job.rw.writes() || job.rw.trims() {
        OFlags::RDWR | OFlags::CREATE
    } else {
        OFlags::RDONLY
    };
    if job.direct {
        flags |= OFlags::DIRECT;
    }
    // fio's sync=: the job's files are opened with O_SYNC or O_DSYNC.
    flags |= match job.sync_io {
        crate::fio::jobfile::SyncIo::None => OFlags::empty(),
        crate::fio::jobfile::SyncIo::Sync => OFlags::SYNC,
        // rustix 1.1's OFlags::DSYNC is O_SYNC: the kernel's O_DSYNC bit itself.
        crate::fio::jobfile::SyncIo::Dsync => OFlags::from_bits_retain(libc::O_DSYNC as _),
    };
    rustix::fs::open(path, flags, Mode::from_raw_mode(0o644)).map_err(|e| {
        if job.direct && e == rustix::io::Errno::INVAL {
            invalid(format!(
                "job '{}': the filesystem holding {} rejects O_DIRECT (tmpfs does); use direct=0 or another target",
                job.name,
                path.display()
            ))
        } else {
            io_err("open", path, e)
        }
    })
}

/// Whether the filesystem holding `dir` accepts O_DIRECT: Ok, or the reason it does not (for
/// a suite to skip a direct=1 test with a stated reason, as on tmpfs).
pub fn probe_direct(dir: &Path) -> Result<(), String> {
    let path = dir.join(format!(".fsdelta-odirect-probe-{}", std::process::id()));
    let res = rustix::fs::open(
        &path,
        OFlags::CREATE | OFlags::RDWR | OFlags::DIRECT | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    );
    let _ = std::fs::remove_file(&path);
    match res {
        Ok(_) => Ok(()),
        Err(e) if e == rustix::io::Errno::INVAL => Err(format!(
            "the filesystem holding {} rejects O_DIRECT",
            dir.display()
        )),
        Err(e) => Err(format!("cannot probe O_DIRECT in {}: {e}", dir.display())),
    }
}

/// fio's `fadvise_hint` (td_io_open_file): with 1, the default, POSIX_FADV_RANDOM for random
/// jobs, SEQUENTIAL otherwise; `random` / `sequential` that advice; 0 none; over the file's I/O
/// range. Advice only: like fio, a failure is not an error.
pub fn access_hint(fd: impl AsFd, job: &JobSpec, len: u64) {
    use crate::fio::jobfile::FadviseHint;
    let advice = match job.fadvise_hint {
        FadviseHint::None => return,
        FadviseHint::Random => rustix::fs::Advice::Random,
        FadviseHint::Sequential => rustix::fs::Advice::Sequential,
        FadviseHint::Workload if job.rw.is_random() => rustix::fs::Advice::Random,
        FadviseHint::Workload => rustix::fs::Advice::Sequential,
    };
    let _ = rustix::fs::fadvise(fd, 0, std::num::NonZeroU64::new(len), advice);
}

/// Drop a file's cached pages (fio's invalidate=1: posix_fadvise DONTNEED).
pub fn invalidate(fd: impl AsFd, path: &Path) -> Result<(), WorkloadError> {
    rustix::fs::fadvise(fd, 0, None, rustix::fs::Advice::DontNeed)
        .map_err(|e| io_err("fadvise", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::jobfile::{Bytes, RwMode};

    fn job(text: &str) -> JobSpec {
        crate::fio::jobfile::parse_job_text(text, "t.fio", &crate::fio::jobfile::SystemSources)
            .unwrap()
            .jobs
            .remove(0)
    }

    #[test]
    fn files_are_named_job_clone_file_and_split_size() {
        let j = job("[w]\nsize=4m\nnrfiles=4\nrw=write\n");
        let p = plan_clone(&j, 2, Path::new("/t"), &[0; 21]).unwrap();
        assert_eq!(p.files.len(), 4);
        assert_eq!(p.files[3].path, Path::new("/t/w.2.3"));
        assert!(p.files.iter().all(|f| f.size == 1 << 20));
        assert_eq!(p.pass_bytes, 4 << 20);
    }

    #[test]
    fn filesize_and_directories_round_robin() {
        let j = job("[w]\nfilesize=8k\nnrfiles=3\ndirectory=a:/b\n");
        let p = plan_clone(&j, 0, Path::new("/t"), &[0; 21]).unwrap();
        assert_eq!(p.files[0].path, Path::new("/t/a/w.0.0"));
        assert_eq!(p.files[1].path, Path::new("/b/w.0.1"));
        assert_eq!(p.files[2].path, Path::new("/t/a/w.0.2"));
        assert_eq!(p.pass_bytes, 24 << 10);
        let k = job("[k]\nfilename=x:/abs/y\nsize=8k\n");
        let p = plan_clone(&k, 0, Path::new("/t"), &[0; 21]).unwrap();
        assert_eq!(p.files[0].path, Path::new("/t/x"));
        assert_eq!(p.files[1].path, Path::new("/abs/y"));
        assert_eq!(p.files[0].size, 4096);
    }

    #[test]
    fn a_file_smaller_than_a_block_is_refused() {
        let j = job("[w]\nsize=4k\nnrfiles=2\n");
        let e = plan_clone(&j, 0, Path::new("/t"), &[0; 21]).unwrap_err();
        assert!(e.to_string().contains("less than one block"), "{e}");
    }

    #[test]
    fn direct_alignment_is_checked() {
        let mut j = job("[w]\nsize=1m\nrw=write\ndirect=1\n");
        let p = plan_clone(&j, 0, Path::new("/t"), &[0; 21]).unwrap();
        check_direct_alignment(&j, &p, 4096).unwrap();
        j.bs = [Bytes(1000); 2];
        let e = check_direct_alignment(&j, &p, 4096).unwrap_err();
        assert!(e.to_string().contains("O_DIRECT alignment"), "{e}");
        j.bs = [Bytes(4096); 2];
        j.rw = RwMode::Read;
        let odd = ClonePlan {
            files: vec![FilePlan {
                offset: 0,
                fio_name: String::new(),
                path: "/t/x".into(),
                size: 4096 + 512,
            }],
            pass_bytes: 4608,
        };
        let e = check_direct_alignment(&j, &odd, 4096).unwrap_err();
        assert!(e.to_string().contains("file sizes"), "{e}");
    }

    #[test]
    fn read_jobs_lay_files_out_in_full_and_write_jobs_preallocate() {
        let dir = tempfile::tempdir().unwrap();
        let r = job("[r]\nsize=256k\nrw=read\n");
        let p = plan_clone(&r, 0, dir.path(), &[0; 21]).unwrap();
        let laid = layout(&r, &p, 1, false).unwrap();
        assert_eq!(
            laid.fio_line("r").as_deref(),
            Some("r: Laying out IO file (1 file / 0MiB)")
        );
        // laid out already: nothing to say the second time
        assert_eq!(layout(&r, &p, 1, false).unwrap().fio_line("r"), None);
        let data = std::fs::read(&p.files[0].path).unwrap();
        assert_eq!(data.len(), 256 << 10);
        assert!(data.iter().any(|&b| b != 0));
        let w = job("[w]\nsize=256k\nrw=write\nfallocate=none\n");
        let p = plan_clone(&w, 0, dir.path(), &[0; 21]).unwrap();
        layout(&w, &p, 1, false).unwrap();
        assert_eq!(std::fs::metadata(&p.files[0].path).unwrap().len(), 0);
        let t = job("[t]\nsize=256k\nrw=write\nfallocate=truncate\n");
        let p = plan_clone(&t, 0, dir.path(), &[0; 21]).unwrap();
        layout(&t, &p, 1, false).unwrap();
        assert_eq!(
            std::fs::metadata(&p.files[0].path).unwrap().len(),
            256 << 10
        );
    }

    /// fio 3.33's lines for `[w] rw=write size=8m nrfiles=2` and `[r] rw=read size=4m
    /// offset=1m` in an empty directory.
    #[test]
    fn laying_out_lines_are_fios() {
        let two = LaidOut {
            files: 2,
            bytes: 8 << 20,
        };
        assert_eq!(
            two.fio_line("w").unwrap(),
            "w: Laying out IO files (2 files / total 8MiB)"
        );
        let one = LaidOut {
            files: 1,
            bytes: 5 << 20,
        };
        assert_eq!(
            one.fio_line("r").unwrap(),
            "r: Laying out IO file (1 file / 5MiB)"
        );
    }

    #[test]
    fn o_direct_probe_answers_for_a_real_directory() {
        let dir = tempfile::tempdir().unwrap();
        // Either answer is legitimate (tmpfs rejects O_DIRECT); the probe must leave nothing.
        let r = probe_direct(dir.path());
        if let Err(e) = &r {
            assert!(e.contains("O_DIRECT"), "{e}");
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        assert!(probe_direct(Path::new("/nonexistent/dir")).is_err());
    }

    #[test]
    fn compressible_and_zero_fills_follow_the_job() {
        let mut buf = vec![1u8; 4096];
        let mut seed = 3;
        fill_like_job(&job("[z]\nsize=1m\nzero_buffers\n"), &mut buf, &mut seed);
        assert!(buf.iter().all(|&b| b == 0));
        fill_like_job(
            &job("[c]\nsize=1m\nbuffer_compress_percentage=50\nbuffer_compress_chunk=1k\n"),
            &mut buf,
            &mut seed,
        );
        assert!(buf[512..1024].iter().all(|&b| b == 0));
        assert!(buf[..512].iter().any(|&b| b != 0));
    }
}
