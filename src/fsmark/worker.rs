//! One worker, one iteration: fs_mark's `do_run()`.
//!
//! Why a module of its own: this is the hot loop, and the hot loop has rules that the rest of
//! the engine does not: no allocation (every buffer is sized before the start gate), no
//! logging, no locks, the clock read with `Nanos::now()` (CLOCK_MONOTONIC) right around each
//! timed call (the calls of one file follow each other, so one reading ends a call and starts
//! the next: four readings per `-s 0` file, not six, and histograms are filled after the
//! file's close), and a cancel/abort check once per file. It must never leave files behind when
//! the run does not keep them, whether it ends normally, fails or is cancelled.
//!
//! Sequence per file (fs_mark's order): the epoch second (derived from the monotonic reading
//! that ended the previous close, see `EpochClock`); pick the subdirectory; mkdir it
//! (untimed, EEXIST ignored, every file: it counts in app overhead as in fs_mark); make the name;
//! timed open(O_CREAT|O_RDWR|O_TRUNC, 0666); timed write()s of `-w` bytes from a zeroed buffer,
//! the last one short (`-s 0` still makes one write of 0 bytes); with -S 1 a timed fsync();
//! timed close(). After the loop: -S 2/4/6 timed sync(); -S 2 reopen+fsync+close of the first
//! file, -S 3/4 of every file in reverse order, -S 5/6 in order, each timed as one fsync (as
//! fs_mark counts it). Then the loop clock stops; unless keeping, timed unlink of every file.

use super::names::{NameGen, SubdirChooser, subdir_name};
use super::options::{FsMarkOptions, PostFsync};
use super::result::{Op, OpHistograms, WorkerIteration};
use super::sys::Syscalls;
use crate::probe::clock::Nanos;
use crate::workload::{CancelToken, WorkloadError};
use std::ffi::{CStr, OsStr};
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

/// What every worker of an iteration shares.
pub struct Shared<'a> {
    /// The options.
    pub opts: &'a FsMarkOptions,
    /// A zero-filled buffer of `-w` bytes.
    pub buf: &'a [u8],
    /// Stop request from outside.
    pub cancel: &'a CancelToken,
    /// Set by the first worker that fails, so the others stop promptly.
    pub abort: &'a AtomicBool,
    /// Starts every worker's loop together.
    pub gate: &'a StartGate,
}

/// Starts every worker's loop at once, like a barrier, but the engine holds the key: it opens
/// the gate when all workers are ready, or at once (with `abort` set) when it could not start
/// them all, so a failed thread spawn can never leave the others waiting forever.
#[derive(Debug, Default)]
pub struct StartGate {
    /// (workers ready, gate open)
    state: Mutex<(usize, bool)>,
    cv: Condvar,
}

impl StartGate {
    fn lock(&self) -> MutexGuard<'_, (usize, bool)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A worker is ready; wait until the gate opens.
    pub fn arrive_and_wait(&self) {
        let mut g = self.lock();
        g.0 += 1;
        self.cv.notify_all();
        while !g.1 {
            g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Open the gate once `workers` have arrived.
    pub fn open_when_ready(&self, workers: usize) {
        let mut g = self.lock();
        while g.0 < workers {
            g = self.cv.wait(g).unwrap_or_else(|p| p.into_inner());
        }
        g.1 = true;
        self.cv.notify_all();
    }

    /// Open the gate now.
    pub fn open_now(&self) {
        self.lock().1 = true;
        self.cv.notify_all();
    }
}

/// Why a worker did not finish its iteration.
#[derive(Debug)]
pub enum Stop {
    /// The cancel token fired.
    Cancelled,
    /// Another worker failed.
    Aborted,
    /// This worker failed.
    Failed(WorkloadError),
}

/// A path buffer `DIR/[SUB/]NAME\0` that is rewritten in place: the subdirectory part when it
/// changes, the name part for every file. Its capacity is fixed at construction.
struct PathBuffer {
    buf: Vec<u8>,
    dir_len: usize,
    /// Index of the byte ending the directory to mkdir (a `/`, or the `/` after DIR).
    mkdir_end: usize,
    name_off: usize,
    name_len: usize,
    sub: Option<u32>,
}

impl PathBuffer {
    fn new(dir: &[u8], name_len: usize) -> Self {
        let mut buf = Vec::with_capacity(dir.len() + 1 + 8 + 1 + name_len + 1);
        buf.extend_from_slice(dir);
        let mut p = PathBuffer {
            buf,
            dir_len: dir.len(),
            mkdir_end: 0,
            name_off: 0,
            name_len,
            sub: Some(u32::MAX),
        };
        p.set_sub(None);
        p
    }

    /// Point the buffer at subdirectory `sub` (or none). Never reallocates.
    #[inline]
    fn set_sub(&mut self, sub: Option<u32>) {
        if self.sub == sub {
            return;
        }
        self.sub = sub;
        self.buf.truncate(self.dir_len);
        self.buf.push(b'/');
        match sub {
            Some(n) => {
                let mut hex = [0u8; 8];
                let l = subdir_name(n, &mut hex);
                self.buf.extend_from_slice(&hex[..l]);
                self.mkdir_end = self.buf.len();
                self.buf.push(b'/');
            }
            None => self.mkdir_end = self.dir_len,
        }
        self.name_off = self.buf.len();
        self.buf.resize(self.name_off + self.name_len, b'_');
        self.buf.push(0);
    }

    #[inline]
    fn name_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.name_off..self.name_off + self.name_len]
    }

    #[inline]
    fn file(&self) -> &CStr {
        CStr::from_bytes_until_nul(&self.buf).expect("path buffer is NUL-terminated")
    }

    /// mkdir of the file's directory: the path is cut at `mkdir_end` for the call.
    #[inline]
    fn mkdir<S: Syscalls>(&mut self, sys: &mut S) -> io::Result<()> {
        let saved = self.buf[self.mkdir_end];
        self.buf[self.mkdir_end] = 0;
        let r = {
            let dir = CStr::from_bytes_until_nul(&self.buf).expect("cut at mkdir_end");
            sys.mkdir(dir, 0o777)
        };
        self.buf[self.mkdir_end] = saved;
        r
    }

    fn file_path(&self) -> PathBuf {
        PathBuf::from(OsStr::from_bytes(self.file().to_bytes()))
    }

    fn dir_path(&self) -> PathBuf {
        PathBuf::from(OsStr::from_bytes(&self.buf[..self.mkdir_end]))
    }
}

/// `State::subs` entry of a file without a subdirectory.
const NO_SUBDIR: u32 = u32::MAX;

/// Everything a worker allocates before the start gate.
struct State {
    path: PathBuffer,
    /// Name of file i at `i * name_len`.
    names: Vec<u8>,
    /// Subdirectory of file i, or `NO_SUBDIR`.
    subs: Vec<u32>,
    name_len: usize,
    created: usize,
    ops: OpHistograms,
}

impl State {
    /// Point the path buffer at file `i` (already created).
    #[inline]
    fn load(&mut self, i: usize) {
        let sub = self.subs[i];
        self.path.set_sub((sub != NO_SUBDIR).then_some(sub));
        let n = self.name_len;
        let (names, path) = (&self.names, &mut self.path);
        path.name_mut().copy_from_slice(&names[i * n..(i + 1) * n]);
    }
}

fn fail(op: &'static str, path: PathBuf, e: io::Error) -> Stop {
    Stop::Failed(WorkloadError::io(op, path, e))
}

/// The epoch second, for names and the time hash (fs_mark's gettimeofday per file).
#[inline]
fn epoch_sec() -> u64 {
    rustix::time::clock_gettime(rustix::time::ClockId::Realtime).tv_sec as u64
}

/// The realtime clock derived from the monotonic one: fs_mark reads gettimeofday at the top of
/// every file for the name's second and the time hash; we read `CLOCK_REALTIME` once, before
/// the loop, and turn the monotonic reading that ended the previous file's close into epoch
/// seconds (one clock read per file fewer; the second is the same unless the wall clock is
/// stepped during the run, which only the names would see).
#[derive(Clone, Copy)]
struct EpochClock {
    /// Realtime minus monotonic, in nanoseconds.
    offset: u64,
}

impl EpochClock {
    fn new() -> Self {
        let rt = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
        let mono = Nanos::now();
        let rt = rt.tv_sec as u64 * 1_000_000_000 + rt.tv_nsec as u64;
        EpochClock {
            offset: rt.saturating_sub(mono.0),
        }
    }

    #[inline]
    fn sec(self, mono: Nanos) -> u64 {
        (mono.0 + self.offset) / 1_000_000_000
    }
}

/// Run one iteration of one worker in `dir`. Always arrives at the start gate exactly once.
pub fn run<S: Syscalls>(
    sys: &mut S,
    sh: &Shared<'_>,
    dir: &Path,
    seed: u64,
) -> Result<WorkerIteration, Stop> {
    let opts = sh.opts;
    let n = opts.files as usize;
    let name_len = opts.name_len as usize;
    // Prepare before the gate: after it, nothing allocates except to report an error. The
    // tables are filled with non-zero bytes so their pages are touched here (a zeroed
    // allocation would fault them in during the timed loop).
    let setup = (|| {
        let bytes = dir.as_os_str().as_bytes();
        if bytes.contains(&0) {
            return Err(Stop::Failed(WorkloadError::InvalidOptions(format!(
                "directory {} contains a NUL byte",
                dir.display()
            ))));
        }
        Ok(State {
            path: PathBuffer::new(bytes, name_len),
            names: vec![b'_'; n * name_len],
            subs: vec![NO_SUBDIR; n],
            name_len,
            created: 0,
            ops: OpHistograms::new(),
        })
    })();
    let mut names = NameGen::new(opts.seq_len() as usize, opts.rand_len as usize, seed);
    let mut chooser = SubdirChooser::new(opts.dir_policy, epoch_sec());
    if setup.is_err() {
        sh.abort.store(true, Ordering::Relaxed);
    }
    sh.gate.arrive_and_wait();
    let mut st = setup?;

    let start = Nanos::now();
    let outcome = timed_section(sys, sh, &mut st, &mut names, &mut chooser);
    let loop_end = Nanos::now();

    match outcome {
        Ok(()) if !opts.keep => {
            unlink_all(sys, &mut st, true).map_err(|(p, e)| fail("unlink", p, e))?;
        }
        Ok(()) => {}
        Err(stop) => {
            if let Stop::Failed(_) = stop {
                sh.abort.store(true, Ordering::Relaxed);
            }
            if !opts.keep {
                let _ = unlink_all(sys, &mut st, false);
            }
            return Err(stop);
        }
    }
    Ok(WorkerIteration {
        files: st.created as u64,
        start,
        loop_end,
        ops: st.ops,
    })
}

#[inline]
fn should_stop(sh: &Shared<'_>) -> Option<Stop> {
    if sh.cancel.is_cancelled() {
        Some(Stop::Cancelled)
    } else if sh.abort.load(Ordering::Relaxed) {
        Some(Stop::Aborted)
    } else {
        None
    }
}

/// The loop and the post-loop sync phase: everything fs_mark's loop clock covers.
fn timed_section<S: Syscalls>(
    sys: &mut S,
    sh: &Shared<'_>,
    st: &mut State,
    names: &mut NameGen,
    chooser: &mut SubdirChooser,
) -> Result<(), Stop> {
    let opts = sh.opts;
    let size = opts.file_size;
    let io = opts.io_size as u64;
    let fsync_in_loop = opts.sync.fsync_in_loop();
    let epoch = EpochClock::new();
    // The clock reading that ended the previous file (its close), or the loop's start: the
    // "now" of the next file's epoch second.
    let mut now = Nanos::now();
    for i in 0..opts.files as usize {
        if let Some(stop) = should_stop(sh) {
            return Err(stop);
        }
        let sec = epoch.sec(now);
        st.path.set_sub(chooser.next(sec));
        if let Err(e) = st.path.mkdir(sys) {
            if e.raw_os_error() != Some(libc::EEXIST) {
                return Err(fail("mkdir", st.path.dir_path(), e));
            }
        }
        names.fill(sec, st.path.name_mut());
        st.names[i * st.name_len..(i + 1) * st.name_len].copy_from_slice(st.path.name_mut());
        st.subs[i] = st.path.sub.unwrap_or(NO_SUBDIR);

        // The timed calls follow each other, so each one's end is the next one's start: one
        // clock read per call plus one, instead of two per call. Between two of them only the
        // result check runs; histograms are filled after the close (a multi-chunk write records
        // each chunk but the last as it goes, a few ns inside the next chunk's time).
        let t0 = Nanos::now();
        let fd = sys.open(
            st.path.file(),
            libc::O_CREAT | libc::O_RDWR | libc::O_TRUNC,
            0o666,
        );
        let mut t = Nanos::now();
        let create_ns = t - t0;
        let fd = match fd {
            Ok(fd) => fd,
            Err(e) => {
                st.ops.record(Op::Create, create_ns);
                return Err(fail("open", st.path.file_path(), e));
            }
        };
        st.created = i + 1;

        let mut left = size;
        let mut last_write_ns;
        loop {
            let len = left.min(io) as usize;
            let r = sys.write(fd, &sh.buf[..len]);
            let e = Nanos::now();
            last_write_ns = e - t;
            t = e;
            match r {
                Ok(w) if w == len => {}
                Ok(w) => {
                    st.ops.record(Op::Create, create_ns);
                    st.ops.record(Op::Write, last_write_ns);
                    let _ = sys.close(fd);
                    let e = io::Error::other(format!("short write: {w} of {len} bytes"));
                    return Err(fail("write", st.path.file_path(), e));
                }
                Err(e) => {
                    st.ops.record(Op::Create, create_ns);
                    st.ops.record(Op::Write, last_write_ns);
                    let _ = sys.close(fd);
                    return Err(fail("write", st.path.file_path(), e));
                }
            }
            left -= len as u64;
            if left == 0 {
                break;
            }
            st.ops.record(Op::Write, last_write_ns);
        }

        let mut fsync_ns = None;
        if fsync_in_loop {
            let r = sys.fsync(fd);
            let e = Nanos::now();
            let ns = e - t;
            fsync_ns = Some(ns);
            t = e;
            if let Err(err) = r {
                st.ops.record(Op::Create, create_ns);
                st.ops.record(Op::Write, last_write_ns);
                st.ops.record(Op::Fsync, ns);
                let _ = sys.close(fd);
                return Err(fail("fsync", st.path.file_path(), err));
            }
        }

        let r = sys.close(fd);
        now = Nanos::now();
        st.ops.record(Op::Create, create_ns);
        st.ops.record(Op::Write, last_write_ns);
        if let Some(ns) = fsync_ns {
            st.ops.record(Op::Fsync, ns);
        }
        st.ops.record(Op::Close, now - t);
        r.map_err(|e| fail("close", st.path.file_path(), e))?;
    }

    if opts.sync.sync_after_loop() {
        let t = Nanos::now();
        sys.sync();
        st.ops.record(Op::Sync, t.elapsed());
    }
    match opts.sync.post_fsync() {
        PostFsync::Nothing => {}
        PostFsync::FirstFile => reopen_fsync(sys, sh, st, 0)?,
        PostFsync::Reverse => {
            for i in (0..st.created).rev() {
                reopen_fsync(sys, sh, st, i)?;
            }
        }
        PostFsync::InOrder => {
            for i in 0..st.created {
                reopen_fsync(sys, sh, st, i)?;
            }
        }
    }
    Ok(())
}

/// fs_mark's post-loop fsync of one file: open(O_RDONLY), fsync, close, timed together.
#[inline]
fn reopen_fsync<S: Syscalls>(
    sys: &mut S,
    sh: &Shared<'_>,
    st: &mut State,
    i: usize,
) -> Result<(), Stop> {
    if let Some(stop) = should_stop(sh) {
        return Err(stop);
    }
    st.load(i);
    let t = Nanos::now();
    let fd: RawFd = match sys.open(st.path.file(), libc::O_RDONLY, 0o666) {
        Ok(fd) => fd,
        Err(e) => return Err(fail("open", st.path.file_path(), e)),
    };
    let r = sys.fsync(fd);
    let c = sys.close(fd);
    st.ops.record(Op::Fsync, t.elapsed());
    r.map_err(|e| fail("fsync", st.path.file_path(), e))?;
    c.map_err(|e| fail("close", st.path.file_path(), e))
}

/// Unlink every file created so far. Timed when the run is measured; otherwise (cleanup after a
/// failure or cancel) best effort. Always tries every file; returns the first error.
fn unlink_all<S: Syscalls>(
    sys: &mut S,
    st: &mut State,
    timed: bool,
) -> Result<(), (PathBuf, io::Error)> {
    let mut first_err = None;
    for i in 0..st.created {
        st.load(i);
        let t = Nanos::now();
        let r = sys.unlink(st.path.file());
        if timed && first_err.is_none() {
            st.ops.record(Op::Unlink, t.elapsed());
        }
        if let Err(e) = r {
            first_err.get_or_insert((st.path.file_path(), e));
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
