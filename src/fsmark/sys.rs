//! The system calls a worker makes, behind a trait.
//!
//! Why: the engine must make exactly fs_mark's calls in exactly fs_mark's order, and the only way
//! to test that (and to test failure handling, such as ENOSPC at the 5th write) without strace or
//! a full disk is to put a recording or fault-injecting backend in place of the real one. The
//! worker is generic over [`Syscalls`], so the real backend is monomorphized and costs nothing.
//!
//! The real backend calls libc directly with NUL-terminated byte paths: no allocation, no
//! path conversion, one system call per method. It must never retry, buffer or log.

use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;

/// The calls of fs_mark's worker. Errors are the OS error (`errno`).
pub trait Syscalls: Send {
    /// mkdir(path, mode); EEXIST is returned as an error like any other.
    fn mkdir(&mut self, path: &CStr, mode: u32) -> io::Result<()>;
    /// open(path, flags, mode).
    fn open(&mut self, path: &CStr, flags: i32, mode: u32) -> io::Result<RawFd>;
    /// write(fd, buf); returns the bytes written.
    fn write(&mut self, fd: RawFd, buf: &[u8]) -> io::Result<usize>;
    /// fsync(fd).
    fn fsync(&mut self, fd: RawFd) -> io::Result<()>;
    /// close(fd).
    fn close(&mut self, fd: RawFd) -> io::Result<()>;
    /// sync().
    fn sync(&mut self);
    /// unlink(path).
    fn unlink(&mut self, path: &CStr) -> io::Result<()>;
}

/// The real system calls.
#[derive(Clone, Copy, Debug, Default)]
pub struct Libc;

#[inline]
fn check(ret: libc::c_int) -> io::Result<()> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl Syscalls for Libc {
    #[inline]
    fn mkdir(&mut self, path: &CStr, mode: u32) -> io::Result<()> {
        // SAFETY: `path` is a valid NUL-terminated string for the duration of the call.
        check(unsafe { libc::mkdir(path.as_ptr(), mode as libc::mode_t) })
    }

    #[inline]
    fn open(&mut self, path: &CStr, flags: i32, mode: u32) -> io::Result<RawFd> {
        // SAFETY: `path` is a valid NUL-terminated string; the mode argument is read by the
        // kernel only with O_CREAT and is a plain integer either way.
        let fd = unsafe { libc::open(path.as_ptr(), flags, mode as libc::c_uint) };
        if fd == -1 {
            Err(io::Error::last_os_error())
        } else {
            Ok(fd)
        }
    }

    #[inline]
    fn write(&mut self, fd: RawFd, buf: &[u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }

    #[inline]
    fn fsync(&mut self, fd: RawFd) -> io::Result<()> {
        // SAFETY: fsync on any integer is memory safe; a bad fd is reported as EBADF.
        check(unsafe { libc::fsync(fd) })
    }

    #[inline]
    fn close(&mut self, fd: RawFd) -> io::Result<()> {
        // SAFETY: the worker owns `fd` (returned by its own open) and never uses it again.
        check(unsafe { libc::close(fd) })
    }

    #[inline]
    fn sync(&mut self) {
        // SAFETY: sync() takes no arguments and cannot fail.
        unsafe { libc::sync() }
    }

    #[inline]
    fn unlink(&mut self, path: &CStr) -> io::Result<()> {
        // SAFETY: `path` is a valid NUL-terminated string for the duration of the call.
        check(unsafe { libc::unlink(path.as_ptr()) })
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! Backends for tests: one that records every call made through it, one that fails a chosen
    //! call.
    use super::*;
    use std::sync::{Arc, Mutex};

    /// One recorded call: its name and, for path calls, the last path component.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Call {
        /// mkdir, open_create, open_read, write, fsync, close, sync, unlink.
        pub op: &'static str,
        /// The file name (last path component) for path calls, else the fd's file name.
        pub name: String,
        /// Bytes for write.
        pub len: usize,
    }

    /// Records calls into a shared log (one per worker), then forwards them to `Libc`.
    pub struct Recording {
        pub log: Arc<Mutex<Vec<Call>>>,
        fds: Vec<(RawFd, String)>,
        /// Fail the call with this index (0-based, over calls through this backend) with errno.
        pub fail_at: Option<(usize, i32)>,
        calls: usize,
    }

    impl Recording {
        pub fn new(log: Arc<Mutex<Vec<Call>>>) -> Self {
            Recording {
                log,
                fds: Vec::new(),
                fail_at: None,
                calls: 0,
            }
        }

        fn leaf(path: &CStr) -> String {
            let s = path.to_string_lossy();
            s.rsplit('/').next().unwrap_or_default().to_string()
        }

        fn fd_name(&self, fd: RawFd) -> String {
            self.fds
                .iter()
                .rev()
                .find(|(f, _)| *f == fd)
                .map(|(_, n)| n.clone())
                .unwrap_or_default()
        }

        fn record(&mut self, op: &'static str, name: String, len: usize) -> io::Result<()> {
            self.log.lock().unwrap().push(Call { op, name, len });
            let i = self.calls;
            self.calls += 1;
            match self.fail_at {
                Some((at, errno)) if at == i => Err(io::Error::from_raw_os_error(errno)),
                _ => Ok(()),
            }
        }
    }

    impl Syscalls for Recording {
        fn mkdir(&mut self, path: &CStr, mode: u32) -> io::Result<()> {
            self.record("mkdir", Self::leaf(path), 0)?;
            Libc.mkdir(path, mode)
        }
        fn open(&mut self, path: &CStr, flags: i32, mode: u32) -> io::Result<RawFd> {
            let op = if flags & libc::O_CREAT != 0 {
                "open_create"
            } else {
                "open_read"
            };
            self.record(op, Self::leaf(path), 0)?;
            let fd = Libc.open(path, flags, mode)?;
            self.fds.push((fd, Self::leaf(path)));
            Ok(fd)
        }
        fn write(&mut self, fd: RawFd, buf: &[u8]) -> io::Result<usize> {
            self.record("write", self.fd_name(fd), buf.len())?;
            Libc.write(fd, buf)
        }
        fn fsync(&mut self, fd: RawFd) -> io::Result<()> {
            self.record("fsync", self.fd_name(fd), 0)?;
            Libc.fsync(fd)
        }
        fn close(&mut self, fd: RawFd) -> io::Result<()> {
            let r = self.record("close", self.fd_name(fd), 0);
            // Close for real even when the failure is injected, so no fd leaks.
            let real = Libc.close(fd);
            r.and(real)
        }
        fn sync(&mut self) {
            let _ = self.record("sync", String::new(), 0);
            Libc.sync()
        }
        fn unlink(&mut self, path: &CStr) -> io::Result<()> {
            self.record("unlink", Self::leaf(path), 0)?;
            Libc.unlink(path)
        }
    }
}
