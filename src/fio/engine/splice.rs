//! fio's splice engine (engines/splice.c): a read splices the file's range into a pipe and
//! reads it out of the pipe into the buffer, a write vmsplices the buffer into the pipe and
//! splices the pipe into the file, 64 KiB (fio's SPLICE_DEF_SIZE) at a time.
//!
//! Why it exists: `ioengine=splice` job files (issue 41) measure this path of the kernel, not
//! pread/pwrite. One deviation: fio 3.33 first tries to vmsplice the pipe into the buffer's
//! pages (vmsplice to user space, which kernels since 2.6.31 refuse with EBADF, after which
//! fio falls back for good to read(2) from the pipe, `fio_splice_read_old`); fsdelta always
//! reads from the pipe, fio's fallback. What it must never do: leave bytes in the pipe after a
//! call (the next I/O would read them): every byte spliced in is read or spliced out.

use rustix::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// fio's SPLICE_DEF_SIZE: the most one splice call moves.
const SPLICE_DEF_SIZE: usize = 64 * 1024;

/// A pipe for a file's splice I/O: (read end, write end), close-on-exec.
pub fn pipe() -> rustix::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`, which we then own.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    if r < 0 {
        return Err(rustix::io::Errno::from_raw_os_error(errno()));
    }
    // SAFETY: both descriptors were just made by pipe2 and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn check(r: isize) -> rustix::io::Result<usize> {
    if r < 0 {
        Err(rustix::io::Errno::from_raw_os_error(errno()))
    } else {
        Ok(r as usize)
    }
}

/// One I/O through the pipe (`pr` its read end, `pw` its write end): the bytes moved, fewer
/// at the end of the file for a read, as fio's `fio_splice_read_old` and `fio_splice_write`.
pub fn transfer(
    fd: BorrowedFd<'_>,
    pr: BorrowedFd<'_>,
    pw: BorrowedFd<'_>,
    read: bool,
    buf: &mut [u8],
    offset: u64,
) -> rustix::io::Result<usize> {
    if read {
        read_via_pipe(fd, pr, pw, buf, offset)
    } else {
        write_via_pipe(fd, pr, pw, buf, offset)
    }
}

fn read_via_pipe(
    fd: BorrowedFd<'_>,
    pr: BorrowedFd<'_>,
    pw: BorrowedFd<'_>,
    buf: &mut [u8],
    offset: u64,
) -> rustix::io::Result<usize> {
    let mut off = offset as libc::loff_t;
    let mut done = 0usize;
    while done < buf.len() {
        let this = (buf.len() - done).min(SPLICE_DEF_SIZE);
        // SAFETY: splice(2) between two descriptors we hold, with `off` ours to update.
        let r = unsafe {
            libc::splice(
                fd.as_raw_fd(),
                &mut off,
                pw.as_raw_fd(),
                std::ptr::null_mut(),
                this,
                libc::SPLICE_F_MORE,
            )
        };
        let mut n = match check(r) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e == rustix::io::Errno::AGAIN || e == rustix::io::Errno::NODATA => {
                continue;
            }
            Err(e) => return Err(e),
        };
        while n > 0 {
            let got = rustix::io::read(pr, &mut buf[done..done + n])?;
            if got == 0 {
                return Err(rustix::io::Errno::IO);
            }
            n -= got;
            done += got;
        }
    }
    Ok(done)
}

fn write_via_pipe(
    fd: BorrowedFd<'_>,
    pr: BorrowedFd<'_>,
    pw: BorrowedFd<'_>,
    buf: &[u8],
    offset: u64,
) -> rustix::io::Result<usize> {
    let mut off = offset as libc::loff_t;
    let mut done = 0usize;
    while done < buf.len() {
        let iov = libc::iovec {
            iov_base: buf[done..].as_ptr() as *mut libc::c_void,
            iov_len: (buf.len() - done).min(SPLICE_DEF_SIZE),
        };
        // SAFETY: vmsplice(2) reads the iovec's bytes (a live slice of `buf`) into our pipe;
        // without SPLICE_F_GIFT the pages stay ours.
        let mut n = check(unsafe { libc::vmsplice(pw.as_raw_fd(), &iov, 1, 0) })?;
        done += n;
        while n > 0 {
            // SAFETY: splice(2) from our pipe into the job's file at `off`, which it updates.
            let r = unsafe {
                libc::splice(
                    pr.as_raw_fd(),
                    std::ptr::null_mut(),
                    fd.as_raw_fd(),
                    &mut off,
                    n,
                    0,
                )
            };
            let moved = check(r)?;
            if moved == 0 {
                return Err(rustix::io::Errno::IO);
            }
            n -= moved;
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fd::AsFd;

    /// A write through the pipe lands at its offset; a read through it returns those bytes,
    /// more than one pipe-load (64 KiB) long, and a read past the end returns what is there.
    #[test]
    fn bytes_go_through_the_pipe_both_ways() {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(dir.path().join("f"))
            .unwrap();
        let (pr, pw) = pipe().unwrap();
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut w = data.clone();
        let n = transfer(file.as_fd(), pr.as_fd(), pw.as_fd(), false, &mut w, 4096).unwrap();
        assert_eq!(n, data.len());
        let mut back = vec![0u8; data.len()];
        let n = transfer(file.as_fd(), pr.as_fd(), pw.as_fd(), true, &mut back, 4096).unwrap();
        assert_eq!(n, data.len());
        assert_eq!(back, data);
        let mut tail = vec![0u8; 8192];
        let end = 4096 + data.len() as u64 - 100;
        let n = transfer(file.as_fd(), pr.as_fd(), pw.as_fd(), true, &mut tail, end).unwrap();
        assert_eq!(n, 100);
        assert_eq!(&tail[..100], &data[data.len() - 100..]);
    }
}
