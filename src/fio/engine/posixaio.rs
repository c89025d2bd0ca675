//! fio's `posixaio` engine: POSIX AIO (aio_read / aio_write, aio_error / aio_return,
//! aio_suspend) through the C library, behind the same [`AsyncBackend`] as io_uring and libaio.
//!
//! Why it exists: job files written for portability use ioengine=posixaio, and glibc's POSIX
//! AIO (user-space threads doing pread/pwrite) behaves and costs differently from the kernel's
//! AIO; running it natively measures what fio measures. As fio's engines/posixaio.c: an I/O is
//! handed to the C library when it is queued (submit has nothing left to do), and reaping scans
//! the I/Os in flight with aio_error, waiting in aio_suspend while fewer than `min` are done.
//! What it must never do: move or reuse a control block while the C library owns it (the
//! blocks live in one allocation made at construction, indexed by slot), or allocate in the
//! timed loop.

use super::aio::AsyncBackend;
use std::io;
use std::os::fd::RawFd;

/// The control blocks of `depth` slots and the slots in flight, in queue order.
pub struct PosixAio {
    cbs: Box<[libc::aiocb]>,
    /// Slots handed to the C library and not yet reaped, oldest first.
    flight: Vec<usize>,
    /// Slots whose aio_read/aio_write call itself failed: (slot, -errno), reaped next.
    failed: Vec<(usize, i64)>,
    /// aio_suspend's list (pointers into `cbs`), rebuilt before each wait.
    waits: Vec<*const libc::aiocb>,
}

impl PosixAio {
    /// Control blocks for `depth` I/Os in flight.
    pub fn new(depth: usize) -> PosixAio {
        let depth = depth.max(1);
        // SAFETY: aiocb is a plain C struct; all zeroes is its documented initial state.
        let cbs = (0..depth)
            .map(|_| unsafe { std::mem::zeroed::<libc::aiocb>() })
            .collect::<Vec<_>>()
            .into_boxed_slice();
        PosixAio {
            cbs,
            flight: Vec::with_capacity(depth),
            failed: Vec::with_capacity(depth),
            waits: Vec::with_capacity(depth),
        }
    }
}

impl AsyncBackend for PosixAio {
    unsafe fn queue(
        &mut self,
        slot: usize,
        write: bool,
        _file: usize,
        fd: RawFd,
        ptr: *mut u8,
        len: usize,
        offset: u64,
        _ioprio: u16,
    ) {
        let cb = &mut self.cbs[slot];
        // SAFETY: as in new; the slot is not in flight (the caller reaped it before reuse).
        *cb = unsafe { std::mem::zeroed() };
        cb.aio_fildes = fd;
        cb.aio_buf = ptr.cast();
        cb.aio_nbytes = len;
        cb.aio_offset = offset as libc::off_t;
        cb.aio_sigevent.sigev_notify = libc::SIGEV_NONE;
        // SAFETY: the block stays in place (a slot of the boxed slice) and, by the caller's
        // contract, the buffer and fd stay valid until the slot is reaped.
        let r = unsafe {
            if write {
                libc::aio_write(cb)
            } else {
                libc::aio_read(cb)
            }
        };
        if r != 0 {
            // fio: the error is the I/O's (td_verror "xfer"), completed at queue time.
            let e = io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
            self.failed.push((slot, -(e as i64)));
        } else {
            self.flight.push(slot);
        }
    }

    fn submit(&mut self) -> io::Result<()> {
        // Handed over at queue time, as fio's posixaio queue does.
        Ok(())
    }

    fn reap(
        &mut self,
        min: usize,
        max: usize,
        done: &mut dyn FnMut(usize, i64),
    ) -> io::Result<usize> {
        let max = max.max(1);
        let mut n = 0usize;
        while n < max {
            let Some((slot, res)) = self.failed.pop() else {
                break;
            };
            done(slot, res);
            n += 1;
        }
        loop {
            // fio's getevents: every I/O in flight that is no longer EINPROGRESS is done.
            let mut i = 0;
            while i < self.flight.len() && n < max {
                let slot = self.flight[i];
                let cb = &mut self.cbs[slot];
                // SAFETY: the block was handed to aio_read/aio_write and not yet returned.
                let err = unsafe { libc::aio_error(cb) };
                if err == libc::EINPROGRESS {
                    i += 1;
                    continue;
                }
                let res = if err == 0 {
                    // SAFETY: the operation has completed; aio_return collects it once.
                    unsafe { libc::aio_return(cb) as i64 }
                } else {
                    // SAFETY: as above; collecting the status frees the C library's record.
                    unsafe { libc::aio_return(cb) };
                    -(err.max(1) as i64)
                };
                self.flight.remove(i);
                done(slot, res);
                n += 1;
            }
            if n >= min || n >= max || self.flight.is_empty() {
                return Ok(n);
            }
            self.waits.clear();
            self.waits.extend(
                self.flight
                    .iter()
                    .map(|&s| &self.cbs[s] as *const libc::aiocb),
            );
            // SAFETY: every pointer is a block in flight, alive in `cbs`; no timeout.
            let r = unsafe {
                libc::aio_suspend(
                    self.waits.as_ptr(),
                    self.waits.len() as libc::c_int,
                    std::ptr::null(),
                )
            };
            if r != 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EINTR) && e.raw_os_error() != Some(libc::EAGAIN) {
                    return Err(e);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// Writes then reads through the C library land where they say and report their lengths,
    /// and a read past the end reports 0 bytes, as pread would.
    #[test]
    fn reads_and_writes_complete_with_their_lengths() {
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(dir.path().join("a"))
            .unwrap();
        let mut aio = PosixAio::new(4);
        let mut bufs: Vec<Vec<u8>> = (0..4).map(|i| vec![b'a' + i as u8; 4096]).collect();
        for (s, b) in bufs.iter_mut().enumerate() {
            // SAFETY: the buffers and the file outlive the reaps below.
            unsafe {
                aio.queue(
                    s,
                    true,
                    0,
                    f.as_raw_fd(),
                    b.as_mut_ptr(),
                    4096,
                    s as u64 * 4096,
                    0,
                )
            };
        }
        let mut got = Vec::new();
        while got.len() < 4 {
            aio.reap(1, 4, &mut |s, r| got.push((s, r))).unwrap();
        }
        got.sort();
        assert_eq!(got, [(0, 4096), (1, 4096), (2, 4096), (3, 4096)]);
        let data = std::fs::read(dir.path().join("a")).unwrap();
        assert_eq!(data.len(), 4 * 4096);
        assert!(data[4096..8192].iter().all(|&c| c == b'b'));
        let mut rd = vec![0u8; 4096];
        // SAFETY: as above.
        unsafe {
            aio.queue(
                0,
                false,
                0,
                f.as_raw_fd(),
                rd.as_mut_ptr(),
                4096,
                3 * 4096,
                0,
            )
        };
        let mut back = Vec::new();
        aio.reap(1, 1, &mut |s, r| back.push((s, r))).unwrap();
        assert_eq!(back, [(0, 4096)]);
        assert!(rd.iter().all(|&c| c == b'd'));
        // SAFETY: as above.
        unsafe {
            aio.queue(
                1,
                false,
                0,
                f.as_raw_fd(),
                rd.as_mut_ptr(),
                4096,
                8 * 4096,
                0,
            )
        };
        back.clear();
        aio.reap(1, 1, &mut |s, r| back.push((s, r))).unwrap();
        assert_eq!(back, [(1, 0)]);
    }

    /// A bad descriptor is the I/O's error (-EBADF), reaped like a completion.
    #[test]
    fn a_failed_request_is_reaped_with_its_errno() {
        let mut aio = PosixAio::new(1);
        let mut b = vec![0u8; 512];
        // SAFETY: the buffer outlives the reap; fd -1 is never valid.
        unsafe { aio.queue(0, false, 0, -1, b.as_mut_ptr(), 512, 0, 0) };
        let mut got = Vec::new();
        aio.reap(1, 1, &mut |s, r| got.push((s, r))).unwrap();
        assert_eq!(got, [(0, -(libc::EBADF as i64))]);
    }
}
