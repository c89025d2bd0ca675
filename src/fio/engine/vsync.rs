//! fio's `vsync` engine: lseek then readv / writev, with the I/Os that follow each other in one
//! file and direction gathered into one vector, up to `iodepth` of them (fio 3.33's
//! engines/sync.c, fio_vsyncio_*), behind the same [`AsyncBackend`] as io_uring and libaio.
//!
//! Why it exists: job files name ioengine=vsync, and what it measures (one system call for a
//! run of contiguous blocks, the latency of the whole vector for each of them) is its own.
//! As fio's: an I/O that does not continue the gathered run (another file, direction or
//! offset), or one past `iodepth`, first commits the run (fio's FIO_Q_BUSY, then commit);
//! submit commits what is gathered; every I/O of a committed run completes at once, a short
//! transfer handing each I/O its part of the bytes in order (fio_vsyncio_end) and an error
//! failing all of them. What it must never do: allocate after construction (every method runs
//! in the timed loop), or touch a buffer after its completion was handed up.
//!
//! Note: fsdelta's queueing loop submits every I/O on its own (fio's iodepth_batch_submit=1,
//! the only value it takes), so a run holds one I/O when submitted and vsync does one readv or
//! writev per I/O, as fio's own loop does with its default batch; the gathering of contiguous
//! I/Os is kept for fio's semantics and tested here, and takes effect only if the loop queues
//! several I/Os before a submit.

use super::aio::AsyncBackend;
use std::io;
use std::os::fd::RawFd;

/// The gathered run and the completions not yet reaped.
pub struct Vsync {
    /// Slots of the gathered run, in file order, and their lengths.
    run: Vec<(usize, usize)>,
    /// The run's vector (one entry per slot of `run`).
    iov: Vec<libc::iovec>,
    /// The run's file, direction, start offset and end (fio's last_file, last_ddir,
    /// last_offset: they outlive a commit, so a block that continues a committed run is
    /// gathered as a continuation).
    fd: RawFd,
    write: bool,
    start: u64,
    end: Option<u64>,
    /// Completed (slot, result), oldest first; `head` is the next to reap.
    done: Vec<(usize, i64)>,
    head: usize,
    depth: usize,
}

impl Vsync {
    /// A run of at most `depth` I/Os.
    pub fn new(depth: usize) -> Vsync {
        let depth = depth.max(1);
        Vsync {
            run: Vec::with_capacity(depth),
            iov: Vec::with_capacity(depth),
            fd: -1,
            write: false,
            start: 0,
            end: None,
            done: Vec::with_capacity(depth * 2),
            head: 0,
            depth,
        }
    }

    /// fio's fio_vsyncio_commit and fio_vsyncio_end: one lseek and one readv / writev for the
    /// run; each I/O's result is its share of the bytes moved, or the call's errno.
    fn commit(&mut self) {
        if self.run.is_empty() {
            return;
        }
        // Drop what was reaped (a shift within the allocation: no I/O is in flight twice, so
        // what is left and what this run adds fit in `depth`).
        self.done.drain(..self.head);
        self.head = 0;
        // SAFETY: lseek on a descriptor the caller keeps open (queue's contract).
        let moved =
            if unsafe { libc::lseek(self.fd, self.start as libc::off_t, libc::SEEK_SET) } == -1 {
                -1
            } else {
                // SAFETY: every iovec points at a slot's buffer that stays valid until reaped.
                unsafe {
                    if self.write {
                        libc::writev(self.fd, self.iov.as_ptr(), self.iov.len() as libc::c_int)
                    } else {
                        libc::readv(self.fd, self.iov.as_ptr(), self.iov.len() as libc::c_int)
                    }
                }
            };
        if moved < 0 {
            let e = io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
            for &(slot, _) in &self.run {
                self.done.push((slot, -(e as i64)));
            }
        } else {
            let mut left = moved as usize;
            for &(slot, len) in &self.run {
                let this = left.min(len);
                left -= this;
                self.done.push((slot, this as i64));
            }
        }
        self.run.clear();
        self.iov.clear();
    }
}

impl AsyncBackend for Vsync {
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
        let continues = self.end == Some(offset) && self.fd == fd && self.write == write;
        if !continues || self.run.len() == self.depth {
            // fio: FIO_Q_BUSY while I/Os are gathered; the run is committed, then this one
            // is queued again and starts a new run.
            self.commit();
        }
        if self.run.is_empty() {
            self.fd = fd;
            self.write = write;
            self.start = offset;
        }
        self.run.push((slot, len));
        self.iov.push(libc::iovec {
            iov_base: ptr.cast(),
            iov_len: len,
        });
        self.end = Some(offset + len as u64);
    }

    fn submit(&mut self) -> io::Result<()> {
        self.commit();
        Ok(())
    }

    fn reap(
        &mut self,
        min: usize,
        max: usize,
        done: &mut dyn FnMut(usize, i64),
    ) -> io::Result<usize> {
        if min > 0 && self.head == self.done.len() {
            // Nothing completed but a gathered run: it completes when committed.
            self.commit();
        }
        let mut n = 0;
        while n < max.max(1) && self.head < self.done.len() {
            let (slot, res) = self.done[self.head];
            self.head += 1;
            done(slot, res);
            n += 1;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    fn file() -> (tempfile::TempDir, std::fs::File) {
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(dir.path().join("a"))
            .unwrap();
        (dir, f)
    }

    /// Contiguous writes are one writev (they complete together, when submitted); a block
    /// elsewhere commits the run first; the bytes land where each I/O says.
    #[test]
    fn contiguous_blocks_gather_and_a_jump_commits_the_run() {
        let (dir, f) = file();
        let fd = f.as_raw_fd();
        let mut v = Vsync::new(4);
        let mut bufs: Vec<Vec<u8>> = (0..4).map(|i| vec![b'a' + i as u8; 512]).collect();
        let offsets = [0u64, 512, 1024, 8192];
        let mut got = Vec::new();
        for (s, b) in bufs.iter_mut().enumerate() {
            // SAFETY: the buffers and the file outlive the reaps below.
            unsafe { v.queue(s, true, 0, fd, b.as_mut_ptr(), 512, offsets[s], 0) };
            if s == 2 {
                // gathered, not yet written
                assert_eq!(v.reap(0, 4, &mut |s, r| got.push((s, r))).unwrap(), 0);
                assert_eq!(std::fs::metadata(dir.path().join("a")).unwrap().len(), 0);
            }
        }
        // the jump to 8192 committed the first three
        v.reap(0, 8, &mut |s, r| got.push((s, r))).unwrap();
        assert_eq!(got, [(0, 512), (1, 512), (2, 512)]);
        v.submit().unwrap();
        v.reap(1, 8, &mut |s, r| got.push((s, r))).unwrap();
        assert_eq!(got[3], (3, 512));
        let data = std::fs::read(dir.path().join("a")).unwrap();
        assert_eq!(data.len(), 8192 + 512);
        assert!(data[512..1024].iter().all(|&c| c == b'b'));
        assert!(data[8192..].iter().all(|&c| c == b'd'));
    }

    /// A run is at most `depth` I/Os; a read that ends early gives each I/O its share in
    /// order (the last gets 0), and a bad descriptor fails every I/O of the run.
    #[test]
    fn depth_short_reads_and_errors_as_fio() {
        let (_dir, f) = file();
        std::fs::write(_dir.path().join("a"), vec![1u8; 768]).unwrap();
        let fd = f.as_raw_fd();
        let mut v = Vsync::new(2);
        let mut bufs: Vec<Vec<u8>> = (0..3).map(|_| vec![0u8; 512]).collect();
        for (s, b) in bufs.iter_mut().enumerate() {
            // SAFETY: as above.
            unsafe { v.queue(s, false, 0, fd, b.as_mut_ptr(), 512, s as u64 * 512, 0) };
        }
        let mut got = Vec::new();
        v.reap(0, 8, &mut |s, r| got.push((s, r))).unwrap();
        assert_eq!(got, [(0, 512), (1, 256)], "the third started a new run");
        v.reap(1, 8, &mut |s, r| got.push((s, r))).unwrap();
        assert_eq!(got[2], (2, 0));
        let mut b = vec![0u8; 64];
        let mut c = vec![0u8; 64];
        // SAFETY: as above; fd -1 is never valid.
        unsafe {
            v.queue(0, false, 0, -1, b.as_mut_ptr(), 64, 0, 0);
            v.queue(1, false, 0, -1, c.as_mut_ptr(), 64, 64, 0);
        }
        got.clear();
        v.submit().unwrap();
        v.reap(1, 8, &mut |s, r| got.push((s, r))).unwrap();
        let ebadf = -(libc::EBADF as i64);
        assert_eq!(got, [(0, ebadf), (1, ebadf)]);
    }
}
