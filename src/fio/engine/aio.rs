//! The kernel interfaces of the asynchronous engines: io_uring (the io-uring crate) and Linux
//! native AIO (libaio's system calls io_setup / io_submit / io_getevents, called directly, so no
//! C library is needed).
//!
//! Why it exists: the worker's asynchronous loop is one piece of code (fio's semantics for slat,
//! clat, depth and reaping); only queueing, submitting and reaping differ per engine, and those
//! differences live here behind [`AsyncBackend`], with io_uring's ring options (registerfiles,
//! fixedbufs, sqthread_poll). Nothing here may allocate after construction and registration:
//! every trait method runs in the timed loop.

use crate::fio::jobfile::UringOptions;
use std::io;
use std::os::fd::RawFd;

/// One asynchronous engine's queue. Slots are `0..depth`; a slot's buffer must stay valid, and
/// its file open, until its completion has been reaped.
pub trait AsyncBackend {
    /// Queue a read (`write == false`) or write of `len` bytes at `offset` for `slot`, with
    /// the I/O priority value `ioprio` (class << 13 | level): io_uring puts it in the
    /// submission entry as it is (0 is the ring's default), libaio sets it with
    /// IOCB_FLAG_IOPRIO unless it is 0 (then the submitting thread's priority applies).
    ///
    /// # Safety
    /// `ptr..ptr+len` must stay valid (and not be touched) until the slot's completion is
    /// reaped, and `fd` (the job's file number `file`) must stay open until then.
    #[allow(clippy::too_many_arguments)]
    unsafe fn queue(
        &mut self,
        slot: usize,
        write: bool,
        file: usize,
        fd: RawFd,
        ptr: *mut u8,
        len: usize,
        offset: u64,
        ioprio: u16,
    );
    /// Submit everything queued.
    fn submit(&mut self) -> io::Result<()>;
    /// Wait for at least `min` completions (0: do not wait), then hand up to `max` of the
    /// available ones to `done(slot, result)` (`result` is bytes transferred or a negative
    /// errno); the others stay queued for the next call (fio's iodepth_batch_complete_min/max).
    /// Returns how many were reaped.
    fn reap(
        &mut self,
        min: usize,
        max: usize,
        done: &mut dyn FnMut(usize, i64),
    ) -> io::Result<usize>;
}

/// io_uring through the io-uring crate.
pub struct Uring {
    ring: io_uring::IoUring,
    /// registerfiles: the descriptors registered, by the job's file number (the SQE carries
    /// the number and IOSQE_FIXED_FILE).
    files: Option<Box<[RawFd]>>,
    /// fixedbufs: slot `i`'s buffer is registered buffer `i` (READ_FIXED / WRITE_FIXED).
    fixedbufs: bool,
    /// sqthread_poll: the kernel's SQ thread submits and nobody waits in io_uring_enter.
    sqpoll: bool,
    /// hipri: IORING_SETUP_IOPOLL; completions appear only when polled for.
    iopoll: bool,
}

impl Uring {
    /// A ring for `depth` I/Os in flight, set up as fio 3.33 does: completion queue as deep as
    /// the submission queue, COOP_TASKRUN, SINGLE_ISSUER + DEFER_TASKRUN (the worker thread is
    /// the only user and reaps itself), each dropped in fio's order where the kernel refuses it;
    /// with `opts.sqthread_poll` SQPOLL (the kernel's default idle time, as fio) and, with
    /// `sqthread_poll_cpu`, SQ_AFF; with `opts.iopoll` (hipri) IOPOLL. Buffers and files are registered after, by
    /// [`Uring::register_buffers`] and [`Uring::register_files`].
    pub fn new(depth: usize, opts: &UringOptions) -> io::Result<Uring> {
        let entries = depth.next_power_of_two() as u32;
        let attempts: [(bool, bool, bool); 4] = [
            (true, true, true),
            (true, true, false),
            (true, false, false),
            (false, false, false),
        ];
        let mut last = None;
        for (cqsize, coop, defer) in attempts {
            let mut b = io_uring::IoUring::builder();
            if opts.iopoll {
                b.setup_iopoll();
            }
            if opts.sqthread_poll {
                b.setup_sqpoll(0);
                if let Some(cpu) = opts.sqthread_poll_cpu {
                    b.setup_sqpoll_cpu(cpu);
                }
            }
            if cqsize {
                b.setup_cqsize(entries);
            }
            if coop {
                b.setup_coop_taskrun();
            }
            if defer {
                b.setup_single_issuer().setup_defer_taskrun();
            }
            match b.build(entries) {
                Ok(ring) => {
                    return Ok(Uring {
                        ring,
                        files: None,
                        fixedbufs: false,
                        sqpoll: opts.sqthread_poll,
                        iopoll: opts.iopoll,
                    });
                }
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EINVAL)))
    }

    /// fixedbufs: IORING_REGISTER_BUFFERS the slots' buffers, buffer `i` for slot `i`.
    ///
    /// # Safety
    /// Each `ptr..ptr+len` must stay valid until the ring is dropped, and every later
    /// [`AsyncBackend::queue`] of slot `i` must pass a range inside buffer `i`.
    pub unsafe fn register_buffers(&mut self, bufs: &[(*mut u8, usize)]) -> io::Result<()> {
        let iovecs: Vec<libc::iovec> = bufs
            .iter()
            .map(|&(ptr, len)| libc::iovec {
                iov_base: ptr.cast(),
                iov_len: len,
            })
            .collect();
        // SAFETY: the caller keeps the buffers alive as long as the ring.
        unsafe { self.ring.submitter().register_buffers(&iovecs)? };
        self.fixedbufs = true;
        Ok(())
    }

    /// registerfiles: IORING_REGISTER_FILES the job's files, file number `i` as index `i`.
    pub fn register_files(&mut self, fds: &[RawFd]) -> io::Result<()> {
        self.ring.submitter().register_files(fds)?;
        self.files = Some(fds.into());
        Ok(())
    }
}

impl AsyncBackend for Uring {
    unsafe fn queue(
        &mut self,
        slot: usize,
        write: bool,
        file: usize,
        fd: RawFd,
        ptr: *mut u8,
        len: usize,
        offset: u64,
        ioprio: u16,
    ) {
        use io_uring::{opcode, types};
        if let Some(files) = self.files.as_mut() {
            if files[file] != fd {
                // The file was opened again under another descriptor: update its entry (fio
                // keeps its registered descriptors open instead; this never runs in fio's
                // case, where openfiles equals the number of files).
                if self
                    .ring
                    .submitter()
                    .register_files_update(file as u32, &[fd])
                    .is_ok()
                {
                    files[file] = fd;
                }
            }
        }
        // One SQE for each (file target, buffer kind, direction): the crate's opcode types
        // take the target's type as a parameter, so each combination is written out.
        macro_rules! sqe {
            ($target:expr) => {
                match (self.fixedbufs, write) {
                    (true, true) => opcode::WriteFixed::new($target, ptr, len as u32, slot as u16)
                        .offset(offset)
                        .ioprio(ioprio)
                        .build(),
                    (true, false) => opcode::ReadFixed::new($target, ptr, len as u32, slot as u16)
                        .offset(offset)
                        .ioprio(ioprio)
                        .build(),
                    (false, true) => opcode::Write::new($target, ptr, len as u32)
                        .offset(offset)
                        .ioprio(ioprio)
                        .build(),
                    (false, false) => opcode::Read::new($target, ptr, len as u32)
                        .offset(offset)
                        .ioprio(ioprio)
                        .build(),
                }
            };
        }
        let entry = if self.files.is_some() {
            sqe!(types::Fixed(file as u32))
        } else {
            sqe!(types::Fd(fd))
        }
        .user_data(slot as u64);
        loop {
            // SAFETY: the caller guarantees the buffer and fd outlive the I/O.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return;
            }
            // Without sqthread_poll the kernel consumes every SQE in io_uring_enter, and at
            // most `depth` slots exist: the ring always has room. The SQ thread publishes
            // its ring head only after a whole batch, whose I/Os may already have completed
            // (and their slots been reused): wait for it, as fio's FIO_Q_BUSY retry.
            assert!(self.sqpoll, "the ring holds iodepth entries");
            std::hint::spin_loop();
        }
    }

    fn submit(&mut self) -> io::Result<()> {
        // With sqthread_poll the crate enters only when the SQ thread sleeps
        // (IORING_SQ_NEED_WAKEUP, then with IORING_ENTER_SQ_WAKEUP), as fio's commit.
        self.ring.submit().map(|_| ())
    }

    fn reap(
        &mut self,
        min: usize,
        max: usize,
        done: &mut dyn FnMut(usize, i64),
    ) -> io::Result<usize> {
        if min == 0 && self.iopoll && !self.sqpoll && self.ring.completion().is_empty() {
            // fio's fio_ioring_getevents enters with GETEVENTS even when it needs none: on an
            // IOPOLL ring that is what polls the device for completions.
            self.ring.submit()?;
        }
        if min > 0 && self.ring.completion().len() < min {
            if self.sqpoll {
                // fio's fio_ioring_getevents with sqthread_poll: no io_uring_enter, the
                // completion ring is polled until enough have arrived.
                while self.ring.completion().len() < min {
                    std::hint::spin_loop();
                }
            } else {
                self.ring.submit_and_wait(min)?;
            }
        }
        let mut n = 0;
        let mut cq = self.ring.completion();
        while n < max.max(1) {
            let Some(cqe) = cq.next() else { break };
            n += 1;
            done(cqe.user_data() as usize, cqe.result() as i64);
        }
        cq.sync();
        Ok(n)
    }
}

/// The kernel's `struct iocb` (linux/aio_abi.h), little-endian layout.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Iocb {
    aio_data: u64,
    aio_key: u32,
    aio_rw_flags: i32,
    aio_lio_opcode: u16,
    aio_reqprio: i16,
    aio_fildes: u32,
    aio_buf: u64,
    aio_nbytes: u64,
    aio_offset: i64,
    aio_reserved2: u64,
    aio_flags: u32,
    aio_resfd: u32,
}

/// The kernel's `struct io_event`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct IoEvent {
    data: u64,
    obj: u64,
    res: i64,
    res2: i64,
}

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;
/// aio_reqprio holds the I/O's priority (linux/aio_abi.h).
const IOCB_FLAG_IOPRIO: u32 = 1 << 1;

/// Linux native AIO (fio's libaio engine) by direct system calls.
pub struct NativeAio {
    ctx: libc::c_ulong,
    iocbs: Box<[Iocb]>,
    pending: Vec<*mut Iocb>,
    events: Box<[IoEvent]>,
}

impl NativeAio {
    /// An AIO context for `depth` I/Os in flight.
    pub fn new(depth: usize) -> io::Result<NativeAio> {
        let mut ctx: libc::c_ulong = 0;
        // SAFETY: io_setup writes the new context id into `ctx`.
        let r = unsafe { libc::syscall(libc::SYS_io_setup, depth as libc::c_long, &mut ctx) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(NativeAio {
            ctx,
            iocbs: vec![Iocb::default(); depth].into_boxed_slice(),
            pending: Vec::with_capacity(depth),
            events: vec![IoEvent::default(); depth].into_boxed_slice(),
        })
    }
}

impl Drop for NativeAio {
    fn drop(&mut self) {
        // SAFETY: destroying our own context; the kernel waits for (or cancels) what it holds.
        unsafe {
            libc::syscall(libc::SYS_io_destroy, self.ctx);
        }
    }
}

impl AsyncBackend for NativeAio {
    unsafe fn queue(
        &mut self,
        slot: usize,
        write: bool,
        _file: usize,
        fd: RawFd,
        ptr: *mut u8,
        len: usize,
        offset: u64,
        ioprio: u16,
    ) {
        let cb = &mut self.iocbs[slot];
        *cb = Iocb {
            aio_data: slot as u64,
            aio_lio_opcode: if write {
                IOCB_CMD_PWRITE
            } else {
                IOCB_CMD_PREAD
            },
            aio_fildes: fd as u32,
            aio_buf: ptr as u64,
            aio_nbytes: len as u64,
            aio_offset: offset as i64,
            aio_reqprio: ioprio as i16,
            aio_flags: if ioprio != 0 { IOCB_FLAG_IOPRIO } else { 0 },
            ..Iocb::default()
        };
        self.pending.push(cb as *mut Iocb);
    }

    fn submit(&mut self) -> io::Result<()> {
        let mut done = 0usize;
        while done < self.pending.len() {
            // SAFETY: `pending[done..]` are pointers to live iocbs in `self.iocbs`.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_submit,
                    self.ctx,
                    (self.pending.len() - done) as libc::c_long,
                    self.pending.as_mut_ptr().add(done),
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EAGAIN) || e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(e);
            }
            done += r as usize;
        }
        self.pending.clear();
        Ok(())
    }

    fn reap(
        &mut self,
        min: usize,
        max: usize,
        done: &mut dyn FnMut(usize, i64),
    ) -> io::Result<usize> {
        let max = max.clamp(min.max(1), self.events.len());
        let mut zero = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let timeout: *mut libc::timespec = if min > 0 {
            std::ptr::null_mut()
        } else {
            &mut zero
        };
        loop {
            // SAFETY: `events` has room for `len` events; a null timeout waits, a zero one
            // returns at once.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_io_getevents,
                    self.ctx,
                    min as libc::c_long,
                    max as libc::c_long,
                    self.events.as_mut_ptr(),
                    timeout,
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(e);
            }
            for ev in &self.events[..r as usize] {
                done(ev.data as usize, ev.res);
            }
            return Ok(r as usize);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn the_abi_structs_have_the_kernels_sizes() {
        assert_eq!(std::mem::size_of::<Iocb>(), 64);
        assert_eq!(std::mem::size_of::<IoEvent>(), 32);
    }

    fn round_trip(b: &mut dyn AsyncBackend) {
        let dir = tempfile::tempdir().unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(dir.path().join("x"))
            .unwrap();
        let mut w = vec![7u8; 8192];
        let mut r = vec![0u8; 8192];
        // SAFETY: both buffers outlive the reaps below.
        unsafe { b.queue(0, true, 0, f.as_raw_fd(), w.as_mut_ptr(), 8192, 4096, 0) };
        b.submit().unwrap();
        let mut got = Vec::new();
        while got.is_empty() {
            b.reap(1, 64, &mut |s, res| got.push((s, res))).unwrap();
        }
        assert_eq!(got, vec![(0, 8192)]);
        // SAFETY: as above.
        unsafe {
            b.queue(
                1,
                false,
                0,
                f.as_raw_fd(),
                r.as_mut_ptr(),
                8192,
                4096,
                0x6000,
            )
        };
        b.submit().unwrap();
        got.clear();
        while got.is_empty() {
            b.reap(1, 64, &mut |s, res| got.push((s, res))).unwrap();
        }
        assert_eq!(got, vec![(1, 8192)]);
        assert_eq!(r, w);
    }

    #[test]
    fn native_aio_writes_and_reads_back() {
        match NativeAio::new(4) {
            Ok(mut a) => round_trip(&mut a),
            Err(e) => eprintln!("skipping: io_setup unavailable here: {e}"),
        }
    }

    #[test]
    fn io_uring_writes_and_reads_back() {
        match Uring::new(4, &UringOptions::default()) {
            Ok(mut u) => round_trip(&mut u),
            Err(e) => eprintln!("skipping: io_uring unavailable here: {e}"),
        }
    }
}
