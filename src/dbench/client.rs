//! One dbench client: the mapping of loadfile operations onto local system calls (dbench 4.00's
//! `fileio` backend), with its file-handle table, its rewritten paths and its per-class latency
//! statistics.
//!
//! Why a module of its own: this is the timed loop. Everything a client needs (path buffers, the
//! directory-read buffer, the zero-filled write buffer, the read buffer, the handle table) is
//! allocated once when the client is built, so replaying an operation allocates nothing, except
//! `Deltree`, which walks a directory tree and runs once per pass, the fresh histograms of the
//! one statistics reset at the end of warmup, and the text of a reported status mismatch. This module must never print: a status mismatch that dbench prints and
//! carries on from is handed to the run's notice callback; one that dbench treats as fatal is
//! returned as an error.

use super::loadfile::{Handle, Line, OP_CLASSES, Op, PathTemplate};
use crate::probe::clock::Nanos;
use crate::probe::histogram::Histogram;
use crate::workload::WorkloadError;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{self as rfs, AtFlags, Mode, OFlags, RawDir, Timespec, Timestamps};
use rustix::io::Errno;
use std::ffi::CStr;
use std::io;
use std::mem::MaybeUninit;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// dbench's per-client handle table size.
pub const MAX_FILES: usize = 200;

/// Behaviour switches of the file backend (dbench's -s, -S, -F, --no-resolve).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackendFlags {
    /// `-s`: open files with O_SYNC.
    pub sync_open: bool,
    /// `-S`: fdatasync the parent directory after unlink, rename and rmdir.
    pub sync_dirs: bool,
    /// `-F`: fsync after every WriteX.
    pub fsync_writes: bool,
    /// `--no-resolve`: skip the case-insensitive directory scan when a name does not exist.
    pub no_resolve: bool,
}

/// Count, total and maximum latency of one operation class, with the histogram behind them.
#[derive(Clone, Debug, Default)]
pub struct OpStats {
    /// Operations completed.
    pub count: u64,
    /// Sum of their latencies.
    pub total: Nanos,
    /// The largest latency.
    pub max: Nanos,
    /// Every latency, in nanoseconds.
    pub hist: Histogram,
}

impl OpStats {
    #[inline]
    fn record(&mut self, d: Nanos) {
        self.count += 1;
        self.total += d;
        if d > self.max {
            self.max = d;
        }
        self.hist.record(d.0);
    }

    /// Add another client's statistics.
    pub fn merge(&mut self, other: &OpStats) {
        self.count += other.count;
        self.total += other.total;
        self.max = self.max.max(other.max);
        self.hist.merge(&other.hist);
    }
}

/// What the ticker reads from a running client; written only by the client's own thread.
/// Cache-line aligned so that two clients never write to the same line.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct ClientShared {
    /// Bytes read and written (requested sizes, as dbench counts).
    pub bytes: AtomicU64,
    /// dbench's line counter: loadfile lines processed, over all passes.
    pub lines: AtomicU64,
    /// When the current (or last) operation started, in `Nanos`.
    pub op_start: AtomicU64,
    /// Largest operation latency since the ticker last read it, in nanoseconds.
    pub max_latency: AtomicU64,
    /// Set once the client finished its cleanup.
    pub finished: std::sync::atomic::AtomicBool,
}

struct Slot {
    handle: Option<Handle>,
    fd: Option<OwnedFd>,
    /// NUL-terminated name the file was opened with (for SET_FILE_INFORMATION's utime).
    name: Vec<u8>,
}

/// Why an operation stopped the run (dbench exits with status 1 in these cases).
fn fatal(line: &Line, op: &'static str, path: &[u8], what: String) -> WorkloadError {
    WorkloadError::io(
        op,
        PathBuf::from(String::from_utf8_lossy(trim_nul(path)).into_owned()),
        io::Error::other(format!(
            "{what} (loadfile line {}, expected {}); dbench stops here too: fix the loadfile \
             or the directory it runs in",
            line.lineno, line.status.text
        )),
    )
}

fn trim_nul(p: &[u8]) -> &[u8] {
    p.strip_suffix(&[0]).unwrap_or(p)
}

fn errno_text(e: Errno) -> String {
    io::Error::from_raw_os_error(e.raw_os_error()).to_string()
}

/// A client's state.
pub struct Client<'a> {
    /// 0-based client id.
    pub id: u32,
    cname: String,
    root: Vec<u8>,
    flags: BackendFlags,
    files: Vec<Slot>,
    path_a: Vec<u8>,
    path_b: Vec<u8>,
    dirbuf: Vec<MaybeUninit<u8>>,
    zeros: Vec<u8>,
    rbuf: Vec<u8>,
    /// Per-class statistics, indexed by [`OpClass::index`](super::loadfile::OpClass::index).
    pub stats: Vec<OpStats>,
    /// What the ticker reads.
    pub shared: &'a ClientShared,
    notice: &'a (dyn Fn(u32, &str) + Sync),
}

impl<'a> Client<'a> {
    /// A client working under `root` (the run directory) with I/O buffers of `max_io` bytes.
    pub fn new(
        id: u32,
        root: &std::path::Path,
        flags: BackendFlags,
        max_io: usize,
        shared: &'a ClientShared,
        notice: &'a (dyn Fn(u32, &str) + Sync),
    ) -> Self {
        use std::os::unix::ffi::OsStrExt;
        let mut root = root.as_os_str().as_bytes().to_vec();
        while root.len() > 1 && root.ends_with(b"/") {
            root.pop();
        }
        let files = (0..MAX_FILES)
            .map(|_| Slot {
                handle: None,
                fd: None,
                name: Vec::with_capacity(256),
            })
            .collect();
        Client {
            id,
            cname: format!("client{id}"),
            root,
            flags,
            files,
            path_a: Vec::with_capacity(512),
            path_b: Vec::with_capacity(512),
            dirbuf: vec![MaybeUninit::uninit(); 32 * 1024],
            zeros: vec![0; max_io.max(1)],
            rbuf: vec![0; max_io.max(1)],
            stats: (0..OP_CLASSES).map(|_| OpStats::default()).collect(),
            shared,
            notice,
        }
    }

    /// Forget every statistic (the end of warmup).
    pub fn reset_stats(&mut self) {
        for s in &mut self.stats {
            *s = OpStats::default();
        }
    }

    /// Run one loadfile line, timing it under its class. `Sleep` sleeps untimed.
    #[inline]
    pub fn run_line(&mut self, line: &Line) -> Result<(), WorkloadError> {
        let Some(class) = line.op.class() else {
            if let Op::Sleep { usec } = line.op {
                std::thread::sleep(std::time::Duration::from_micros(usec));
            }
            return Ok(());
        };
        let t0 = Nanos::now();
        self.shared.op_start.store(t0.0, Ordering::Relaxed);
        let r = self.execute(line);
        let d = t0.elapsed();
        self.shared.max_latency.fetch_max(d.0, Ordering::Relaxed);
        self.stats[class.index()].record(d);
        r
    }

    fn notice(&self, msg: &str) {
        (self.notice)(self.id, msg);
    }

    /// Build `root + template` with `client1` rewritten, NUL-terminated, into `buf`.
    fn build(root: &[u8], cname: &str, t: &PathTemplate, buf: &mut Vec<u8>) {
        buf.clear();
        buf.extend_from_slice(root);
        let mut first = true;
        for piece in t.0.split("client1") {
            if !first {
                buf.extend_from_slice(cname.as_bytes());
            }
            first = false;
            buf.extend_from_slice(piece.as_bytes());
        }
        buf.push(0);
    }

    fn path_a(&mut self, t: &PathTemplate) -> &CStr {
        Self::build(&self.root, &self.cname, t, &mut self.path_a);
        CStr::from_bytes_with_nul(&self.path_a).unwrap_or(c"")
    }

    fn slot(&self, line: &Line, handle: Handle) -> Result<usize, WorkloadError> {
        self.files
            .iter()
            .position(|s| s.handle == Some(handle))
            .ok_or_else(|| {
                WorkloadError::InvalidOptions(format!(
                    "loadfile line {}: handle {handle} was not opened (or its NTCreateX \
                     failed); dbench stops here too: fix the loadfile",
                    line.lineno
                ))
            })
    }

    fn fd(&self, i: usize) -> rustix::fd::BorrowedFd<'_> {
        match &self.files[i].fd {
            Some(fd) => fd.as_fd(),
            None => unreachable!("a slot with a handle has an fd"),
        }
    }

    /// dbench's `resolve_name`: stat the name; when it does not exist, scan its directory for a
    /// case-insensitive match, as Samba's name resolution does.
    fn resolve(&mut self, which_b: bool) {
        let buf = if which_b {
            &mut self.path_b
        } else {
            &mut self.path_a
        };
        let Ok(c) = CStr::from_bytes_with_nul(buf) else {
            return;
        };
        if rfs::stat(c).is_ok() || self.flags.no_resolve {
            return;
        }
        let Some(slash) = buf.iter().rposition(|&b| b == b'/') else {
            return;
        };
        let name_len = buf.len() - 1 - (slash + 1);
        buf[slash] = 0;
        let dir = CStr::from_bytes_until_nul(&buf[..=slash])
            .ok()
            .and_then(|d| {
                rfs::open(
                    d,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .ok()
            });
        buf[slash] = b'/';
        let Some(dir) = dir else { return };
        let name = &buf[slash + 1..slash + 1 + name_len];
        let mut raw = RawDir::new(&dir, &mut self.dirbuf);
        while let Some(Ok(entry)) = raw.next() {
            if entry.file_name().to_bytes().eq_ignore_ascii_case(name) {
                break;
            }
        }
    }

    fn sync_parent(&mut self, which_b: bool) {
        let buf = if which_b {
            &mut self.path_b
        } else {
            &mut self.path_a
        };
        let Some(slash) = buf.iter().rposition(|&b| b == b'/') else {
            return;
        };
        buf[slash] = 0;
        let r = CStr::from_bytes_until_nul(&buf[..=slash])
            .map_err(|_| Errno::INVAL)
            .and_then(|d| rfs::open(d, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()))
            .and_then(|fd| rfs::fdatasync(&fd));
        buf[slash] = b'/';
        if let Err(e) = r {
            let msg = format!(
                "sync of the directory of {} failed: {}",
                String::from_utf8_lossy(trim_nul(buf)),
                errno_text(e)
            );
            self.notice(&msg);
        }
    }

    fn expect(
        &self,
        line: &Line,
        op: &'static str,
        r: Result<(), Errno>,
        path: &[u8],
    ) -> Result<(), WorkloadError> {
        match (r, line.status.success) {
            (Ok(()), true) | (Err(_), false) => Ok(()),
            (Ok(()), false) => Err(fatal(line, op, path, "succeeded".into())),
            (Err(e), true) => Err(fatal(line, op, path, errno_text(e))),
        }
    }

    fn execute(&mut self, line: &Line) -> Result<(), WorkloadError> {
        match &line.op {
            Op::NtCreateX {
                path,
                create_options,
                disposition,
                handle,
            } => self.nt_create(line, path, *create_options, *disposition, *handle),
            Op::Close { handle } => {
                let i = self.slot(line, *handle)?;
                self.files[i].handle = None;
                drop(self.files[i].fd.take());
                Ok(())
            }
            Op::Rename { from, to } => self.rename(line, from, to),
            Op::Unlink { path, .. } => {
                self.path_a(path);
                self.resolve(false);
                let r = rfs::unlink(CStr::from_bytes_with_nul(&self.path_a).unwrap_or(c""));
                self.expect(line, "unlink", r, &self.path_a)?;
                if self.flags.sync_dirs {
                    self.sync_parent(false);
                }
                Ok(())
            }
            Op::Rmdir { path } => {
                self.path_a(path);
                self.resolve(false);
                let r = rfs::rmdir(CStr::from_bytes_with_nul(&self.path_a).unwrap_or(c""));
                self.expect(line, "rmdir", r, &self.path_a)?;
                if self.flags.sync_dirs {
                    self.sync_parent(false);
                }
                Ok(())
            }
            Op::Mkdir { path } => {
                self.path_a(path);
                self.resolve(false);
                let _ = rfs::mkdir(
                    CStr::from_bytes_with_nul(&self.path_a).unwrap_or(c""),
                    Mode::from_raw_mode(0o777),
                );
                Ok(())
            }
            Op::Deltree { path } => {
                self.path_a(path);
                let mut p = trim_nul(&self.path_a).to_vec();
                self.deltree(&mut p);
                Ok(())
            }
            Op::QueryPathInformation { path, .. } => {
                self.path_a(path);
                self.resolve(false);
                Ok(())
            }
            Op::QueryFileInformation { handle, .. } => {
                let i = self.slot(line, *handle)?;
                let _ = rfs::fstat(self.fd(i));
                Ok(())
            }
            Op::QueryFsInformation { .. } => {
                self.path_b.clear();
                self.path_b.extend_from_slice(&self.root);
                self.path_b.push(0);
                let _ = rfs::statvfs(CStr::from_bytes_with_nul(&self.path_b).unwrap_or(c"."));
                Ok(())
            }
            Op::SetFileInformation { handle, .. } => self.set_file_information(line, *handle),
            Op::FindFirst {
                pattern, max_count, ..
            } => self.find_first(pattern, *max_count),
            Op::WriteX {
                handle,
                offset,
                size,
                ret,
            } => self.write_x(line, *handle, *offset, *size, *ret),
            Op::ReadX {
                handle,
                offset,
                size,
                ret,
            } => self.read_x(line, *handle, *offset, *size, *ret),
            Op::LockX {
                handle,
                offset,
                len,
            } => {
                let i = self.slot(line, *handle)?;
                byte_range_lock(self.fd(i), libc::F_WRLCK, *offset, *len);
                Ok(())
            }
            Op::UnlockX {
                handle,
                offset,
                len,
            } => {
                let i = self.slot(line, *handle)?;
                byte_range_lock(self.fd(i), libc::F_UNLCK, *offset, *len);
                Ok(())
            }
            Op::Flush { handle } => {
                let i = self.slot(line, *handle)?;
                let _ = rfs::fsync(self.fd(i));
                Ok(())
            }
            Op::Sleep { .. } => Ok(()),
        }
    }

    /// RENAME: rename(2) after name resolution, then the parent's sync with `-S`.
    fn rename(
        &mut self,
        line: &Line,
        from: &PathTemplate,
        to: &PathTemplate,
    ) -> Result<(), WorkloadError> {
        self.path_a(from);
        Self::build(&self.root, &self.cname, to, &mut self.path_b);
        self.resolve(false);
        self.resolve(true);
        let r = match (
            CStr::from_bytes_with_nul(&self.path_a),
            CStr::from_bytes_with_nul(&self.path_b),
        ) {
            (Ok(a), Ok(b)) => rfs::rename(a, b),
            _ => Err(Errno::INVAL),
        };
        self.expect(line, "rename", r, &self.path_a)?;
        if self.flags.sync_dirs {
            self.sync_parent(true);
        }
        Ok(())
    }

    /// SET_FILE_INFORMATION: dbench's fileio backend moves the times back (atime 10 s, mtime 12 s).
    fn set_file_information(&mut self, line: &Line, handle: Handle) -> Result<(), WorkloadError> {
        let i = self.slot(line, handle)?;
        if let Ok(st) = rfs::fstat(self.fd(i)) {
            let times = Timestamps {
                last_access: Timespec {
                    tv_sec: st.st_atime - 10,
                    tv_nsec: 0,
                },
                last_modification: Timespec {
                    tv_sec: st.st_mtime - 12,
                    tv_nsec: 0,
                },
            };
            if let Ok(name) = CStr::from_bytes_with_nul(&self.files[i].name) {
                let _ = rfs::utimensat(rfs::CWD, name, &times, AtFlags::empty());
            }
        }
        Ok(())
    }

    /// FIND_FIRST: with a wildcard, read up to `max_count` entries of the directory.
    fn find_first(&mut self, pattern: &PathTemplate, max_count: i64) -> Result<(), WorkloadError> {
        self.path_a(pattern);
        self.resolve(false);
        let has_wild = self.path_a.iter().any(|b| b"<>*?\"".contains(b));
        if !has_wild {
            return Ok(());
        }
        let Some(slash) = self.path_a.iter().rposition(|&b| b == b'/') else {
            return Ok(());
        };
        self.path_a[slash] = 0;
        let dir = CStr::from_bytes_until_nul(&self.path_a[..=slash])
            .ok()
            .and_then(|d| {
                rfs::open(
                    d,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .ok()
            });
        self.path_a[slash] = b'/';
        if let Some(dir) = dir {
            let mut left = max_count;
            let mut raw = RawDir::new(&dir, &mut self.dirbuf);
            while left != 0 {
                match raw.next() {
                    Some(Ok(_)) => left -= 1,
                    _ => break,
                }
            }
        }
        Ok(())
    }

    /// WRITEX: pwrite of zeros, `ret` bytes expected (anything else is fatal); fsync with `-F`.
    fn write_x(
        &mut self,
        line: &Line,
        handle: Handle,
        offset: u64,
        size: usize,
        ret: i64,
    ) -> Result<(), WorkloadError> {
        let i = self.slot(line, handle)?;
        let n = rfs_pwrite(self.fd(i), &self.zeros[..size], offset);
        match n {
            Err(e) => {
                return Err(fatal(
                    line,
                    "write",
                    &self.files[i].name,
                    format!("write on handle {handle} failed: {}", errno_text(e)),
                ));
            }
            Ok(n) if n as i64 != ret => {
                return Err(fatal(
                    line,
                    "write",
                    &self.files[i].name,
                    format!("wrote {n} bytes, expected to write {ret} on handle {handle}"),
                ));
            }
            Ok(_) => {}
        }
        if self.flags.fsync_writes {
            let _ = rfs::fsync(self.fd(i));
        }
        self.shared.bytes.fetch_add(size as u64, Ordering::Relaxed);
        Ok(())
    }

    /// READX: pread, `ret` bytes expected (anything else is a notice, as dbench).
    fn read_x(
        &mut self,
        line: &Line,
        handle: Handle,
        offset: u64,
        size: usize,
        ret: i64,
    ) -> Result<(), WorkloadError> {
        let i = self.slot(line, handle)?;
        let fd = match &self.files[i].fd {
            Some(fd) => fd.as_fd(),
            None => unreachable!("a slot with a handle has an fd"),
        };
        let r = rustix::io::pread(fd, &mut self.rbuf[..size], offset);
        if !matches!(r, Ok(n) if n as i64 == ret) {
            let msg = format!(
                "[{}] read failed on handle {handle} ({})",
                line.lineno,
                match r {
                    Ok(n) => format!("read {n} bytes, expected {ret}"),
                    Err(e) => errno_text(e),
                }
            );
            self.notice(&msg);
        }
        self.shared.bytes.fetch_add(size as u64, Ordering::Relaxed);
        Ok(())
    }

    fn nt_create(
        &mut self,
        line: &Line,
        path: &PathTemplate,
        create_options: u32,
        disposition: u32,
        handle: Handle,
    ) -> Result<(), WorkloadError> {
        self.path_a(path);
        self.resolve(false);
        let mut flags = OFlags::RDWR | OFlags::CLOEXEC;
        if self.flags.sync_open {
            flags |= OFlags::SYNC;
        }
        match disposition {
            2 => flags |= OFlags::CREATE,
            4 | 5 => flags |= OFlags::CREATE | OFlags::TRUNC,
            _ => {}
        }
        let name = CStr::from_bytes_with_nul(&self.path_a).unwrap_or(c"");
        if create_options & 0x1 != 0 {
            let _ = rfs::mkdir(name, Mode::from_raw_mode(0o700));
            flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        }
        let mode = Mode::from_raw_mode(0o600);
        let mut r = rfs::open(name, flags, mode);
        if matches!(r, Err(Errno::ISDIR)) {
            r = rfs::open(
                name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                mode,
            );
        }
        let fd = match r {
            Err(e) => {
                if line.status.success {
                    let msg = format!(
                        "[{}] open {} failed for handle {handle} ({})",
                        line.lineno,
                        String::from_utf8_lossy(trim_nul(&self.path_a)),
                        errno_text(e)
                    );
                    self.notice(&msg);
                }
                return Ok(());
            }
            Ok(fd) => fd,
        };
        if !line.status.success {
            let msg = format!(
                "[{}] open {} succeeded for handle {handle}",
                line.lineno,
                String::from_utf8_lossy(trim_nul(&self.path_a))
            );
            self.notice(&msg);
            return Ok(());
        }
        let Some(i) = self.files.iter().position(|s| s.handle.is_none()) else {
            return Err(fatal(
                line,
                "open",
                &self.path_a,
                format!("file table full ({MAX_FILES} handles open)"),
            ));
        };
        let _ = rfs::fstat(&fd);
        let slot = &mut self.files[i];
        slot.handle = Some(handle);
        slot.fd = Some(fd);
        slot.name.clear();
        slot.name.extend_from_slice(&self.path_a);
        Ok(())
    }

    /// dbench's `Deltree`: unlink every non-directory below `dir`, recursing into directories;
    /// directories themselves stay.
    fn deltree(&mut self, dir: &mut Vec<u8>) {
        let mut names: Vec<Vec<u8>> = Vec::new();
        {
            dir.push(0);
            let fd = CStr::from_bytes_with_nul(dir).ok().and_then(|d| {
                rfs::open(
                    d,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .ok()
            });
            dir.pop();
            let Some(fd) = fd else { return };
            let mut raw = RawDir::new(&fd, &mut self.dirbuf);
            while let Some(Ok(e)) = raw.next() {
                let n = e.file_name().to_bytes();
                if n != b"." && n != b".." {
                    names.push(n.to_vec());
                }
            }
        }
        for n in names {
            let len = dir.len();
            dir.push(b'/');
            dir.extend_from_slice(&n);
            dir.push(0);
            let c = CStr::from_bytes_with_nul(dir).unwrap_or(c"");
            match rfs::stat(c) {
                Ok(st) if rfs::FileType::from_raw_mode(st.st_mode).is_dir() => {
                    dir.pop();
                    self.deltree(dir);
                }
                Ok(_) => {
                    if let Err(e) = rfs::unlink(c) {
                        let msg = format!(
                            "unlink '{}' failed - {}",
                            String::from_utf8_lossy(trim_nul(dir)),
                            errno_text(e)
                        );
                        self.notice(&msg);
                    }
                }
                Err(_) => {}
            }
            dir.truncate(len);
        }
    }

    /// dbench's cleanup: Deltree of the client's own directory, then rmdir of `clients`
    /// (which fails while any client's directories remain, as in dbench).
    pub fn cleanup(&mut self) {
        for s in &mut self.files {
            s.handle = None;
            s.fd = None;
        }
        let mut p = self.root.clone();
        p.extend_from_slice(format!("/clients/client{}", self.id).as_bytes());
        self.deltree(&mut p);
        let mut c = self.root.clone();
        c.extend_from_slice(b"/clients\0");
        if let Ok(c) = CStr::from_bytes_with_nul(&c) {
            let _ = rfs::rmdir(c);
        }
    }
}

fn rfs_pwrite(fd: rustix::fd::BorrowedFd<'_>, buf: &[u8], off: u64) -> Result<usize, Errno> {
    rustix::io::pwrite(fd, buf, off)
}

/// fcntl(F_SETLKW) on a byte range, as dbench's LockX/UnlockX; the result is ignored as in
/// dbench.
fn byte_range_lock(fd: rustix::fd::BorrowedFd<'_>, kind: libc::c_int, offset: u64, len: u64) {
    use rustix::fd::AsRawFd;
    // SAFETY: `flock` is plain old data; zeroed is a valid value for every field.
    let mut lk: libc::flock = unsafe { std::mem::zeroed() };
    lk.l_type = kind as libc::c_short;
    lk.l_whence = libc::SEEK_SET as libc::c_short;
    lk.l_start = offset as libc::off_t;
    lk.l_len = len as libc::off_t;
    // SAFETY: the fd is open for the borrow's lifetime and `lk` is a valid flock.
    unsafe {
        libc::fcntl(fd.as_raw_fd(), libc::F_SETLKW, &lk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dbench::loadfile::{OpClass, parse};
    use std::sync::Mutex;

    /// Run a loadfile's lines with one client (id 3) in a fresh directory; return the first
    /// error, the notices, the client's bytes and its per-class counts.
    fn run(
        text: &str,
        flags: BackendFlags,
        dir: &std::path::Path,
    ) -> (Result<(), WorkloadError>, Vec<String>, u64, Vec<u64>) {
        let lf = parse("t", text).unwrap();
        let shared = ClientShared::default();
        let notices = Mutex::new(Vec::new());
        let notice = |_: u32, m: &str| notices.lock().unwrap().push(m.to_string());
        let mut c = Client::new(3, dir, flags, lf.max_io, &shared, &notice);
        let mut r = Ok(());
        for l in &lf.lines {
            r = c.run_line(l);
            if r.is_err() {
                break;
            }
        }
        let counts = c.stats.iter().map(|s| s.count).collect();
        drop(c);
        let bytes = shared.bytes.load(Ordering::Relaxed);
        (r, notices.into_inner().unwrap(), bytes, counts)
    }

    const SETUP: &str = "Mkdir \"\\clients\" NT_STATUS_OK\n\
                         NTCreateX \"\\clients\\client1\" 0x1 0x2 1 NT_STATUS_OK\n\
                         Close 1 NT_STATUS_OK\n";

    #[test]
    fn create_write_read_and_paths_are_rewritten_per_client() {
        let d = tempfile::tempdir().unwrap();
        let text = format!(
            "{SETUP}NTCreateX \"\\clients\\client1\\f.doc\" 0x40 0x5 7 NT_STATUS_OK\n\
             WriteX 7 0 10000 10000 NT_STATUS_OK\n\
             WriteX 7 65534 1 1 NT_STATUS_OK\n\
             ReadX 7 0 4096 4096 NT_STATUS_OK\n\
             QUERY_FILE_INFORMATION 7 1004 NT_STATUS_OK\n\
             SET_FILE_INFORMATION 7 1004 NT_STATUS_OK\n\
             LockX 7 0 10 NT_STATUS_OK\n\
             UnlockX 7 0 10 NT_STATUS_OK\n\
             Flush 7 NT_STATUS_OK\n\
             Close 7 NT_STATUS_OK\n\
             QUERY_FS_INFORMATION 1 NT_STATUS_OK\n\
             Sleep 10 NT_STATUS_OK\n"
        );
        let before = std::time::SystemTime::now();
        let (r, notices, bytes, counts) = run(&text, BackendFlags::default(), d.path());
        let after = std::time::SystemTime::now();
        r.unwrap();
        assert!(notices.is_empty(), "{notices:?}");
        let f = d.path().join("clients/client3/f.doc");
        let md = std::fs::metadata(&f).unwrap();
        assert_eq!(md.len(), 65535, "pwrite of zeros at the loadfile's offsets");
        assert!(!d.path().join("clients/client1").exists());
        assert_eq!(
            bytes,
            10000 + 1 + 4096,
            "requested sizes of reads and writes"
        );
        // SET_FILE_INFORMATION moves mtime back by 12 s, as dbench does: 12 s before some
        // moment of the run (the bounds are the run's own start and end, so a slow run widens
        // them, never breaks them; 1 s for timestamp granularity).
        let twelve = std::time::Duration::from_secs(12);
        let second = std::time::Duration::from_secs(1);
        let mtime = md.modified().unwrap();
        assert!(
            mtime + twelve + second >= before && mtime + twelve <= after + second,
            "mtime {mtime:?} is not 12 s before the run ({before:?} .. {after:?})"
        );
        assert_eq!(counts[OpClass::WriteX.index()], 2);
        assert_eq!(counts[OpClass::NtCreateX.index()], 2);
        assert_eq!(counts.iter().sum::<u64>(), 14, "Sleep is not counted");
    }

    #[test]
    fn expected_failures_and_fatal_mismatches() {
        let d = tempfile::tempdir().unwrap();
        // A failure that is expected is fine; open of a missing file that should succeed is
        // reported and the run goes on (dbench prints it); rename mismatch is fatal.
        let text = format!(
            "{SETUP}NTCreateX \"\\clients\\client1\\nope\" 0x40 0x1 9 NT_STATUS_OBJECT_NAME_NOT_FOUND\n\
             Unlink \"\\clients\\client1\\nope\" 0x6 NT_STATUS_OBJECT_NAME_NOT_FOUND\n\
             NTCreateX \"\\clients\\client1\\gone\" 0x40 0x1 10 NT_STATUS_OK\n\
             QUERY_PATH_INFORMATION \"\\clients\\client1\\gone\" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND\n\
             Rename \"\\clients\\client1\\gone\" \"\\clients\\client1\\x\" NT_STATUS_OK\n\
             Close 1 NT_STATUS_OK\n"
        );
        let (r, notices, _, _) = run(&text, BackendFlags::default(), d.path());
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(notices[0].contains("open") && notices[0].contains("failed for handle 10"));
        let e = r.unwrap_err().to_string();
        assert!(e.starts_with("rename "), "{e}");
        assert!(
            e.contains("loadfile line 8") && e.contains("NT_STATUS_OK"),
            "{e}"
        );
    }

    #[test]
    fn unlink_that_should_fail_but_succeeds_is_fatal() {
        let d = tempfile::tempdir().unwrap();
        let text = format!(
            "{SETUP}NTCreateX \"\\clients\\client1\\f\" 0x40 0x2 5 NT_STATUS_OK\n\
             Close 5 NT_STATUS_OK\n\
             Unlink \"\\clients\\client1\\f\" 0x6 NT_STATUS_OBJECT_NAME_NOT_FOUND\n"
        );
        let (r, _, _, _) = run(&text, BackendFlags::default(), d.path());
        let e = r.unwrap_err().to_string();
        assert!(e.contains("succeeded") && e.contains("line 6"), "{e}");
    }

    #[test]
    fn unknown_handle_is_fatal_and_short_write_is_not_silent() {
        let d = tempfile::tempdir().unwrap();
        let (r, _, _, _) = run(
            &format!("{SETUP}ReadX 77 0 10 10 NT_STATUS_OK\n"),
            BackendFlags::default(),
            d.path(),
        );
        assert!(
            r.unwrap_err()
                .to_string()
                .contains("handle 77 was not opened")
        );
        let (r, notices, bytes, _) = run(
            &format!(
                "{SETUP}NTCreateX \"\\clients\\client1\\f\" 0x40 0x5 5 NT_STATUS_OK\n\
                 ReadX 5 0 100 100 NT_STATUS_OK\n"
            ),
            BackendFlags::default(),
            d.path(),
        );
        r.unwrap();
        assert_eq!(bytes, 100, "a short read still counts its requested size");
        assert!(
            notices[0].contains("read failed on handle 5"),
            "{notices:?}"
        );
    }

    #[test]
    fn directories_rename_deltree_and_find() {
        let d = tempfile::tempdir().unwrap();
        let text = format!(
            "{SETUP}Mkdir \"\\clients\\client1\\sub\" NT_STATUS_OK\n\
             NTCreateX \"\\clients\\client1\\sub\\a\" 0x40 0x2 5 NT_STATUS_OK\n\
             Close 5 NT_STATUS_OK\n\
             Rename \"\\clients\\client1\\sub\\a\" \"\\clients\\client1\\sub\\b\" NT_STATUS_OK\n\
             FIND_FIRST \"\\clients\\client1\\sub\\*\" 260 1366 0 NT_STATUS_OK\n\
             NTCreateX \"\\clients\\client1\\top\" 0x40 0x2 6 NT_STATUS_OK\n\
             Close 6 NT_STATUS_OK\n\
             Rmdir \"\\clients\\client1\\sub\" NT_STATUS_DIRECTORY_NOT_EMPTY\n\
             Deltree \"\\clients\\client1\" NT_STATUS_OK\n\
             Rmdir \"\\clients\\client1\\sub\" NT_STATUS_OK\n"
        );
        let (r, notices, _, _) = run(
            &text,
            BackendFlags {
                sync_dirs: true,
                sync_open: true,
                fsync_writes: true,
                no_resolve: false,
            },
            d.path(),
        );
        r.unwrap();
        assert!(notices.is_empty(), "{notices:?}");
        let c = d.path().join("clients/client3");
        assert!(c.is_dir(), "Deltree leaves directories");
        assert!(!c.join("top").exists() && !c.join("sub").exists());
    }

    #[test]
    fn file_table_holds_two_hundred_handles() {
        let d = tempfile::tempdir().unwrap();
        let mut text = String::from(SETUP);
        for h in 0..=MAX_FILES {
            text.push_str(&format!(
                "NTCreateX \"\\clients\\client1\\f{h}\" 0x40 0x2 {} NT_STATUS_OK\n",
                h + 100
            ));
        }
        let (r, _, _, _) = run(&text, BackendFlags::default(), d.path());
        assert!(r.unwrap_err().to_string().contains("file table full"));
    }
}
