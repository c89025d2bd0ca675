//! A worker thread's own file-descriptor table, as a forked process has.
//!
//! Why this exists: fio, fs_mark and dbench run each job, worker or client in a process of its
//! own; we run them in threads. Every system call that takes a descriptor (pread, pwrite,
//! fsync, ...) looks it up with the kernel's `fdget`, which takes and drops a reference on the
//! open file (two atomic operations on a shared cache line) whenever the descriptor table is
//! shared with another thread, and skips both when the caller is alone with its table; every
//! open and close takes the table's lock against the other threads. A job thread therefore
//! paid for something the peer's process never does: on a page-cached 4 KiB psync read (about
//! 0.7 µs) `fdget` and `fput` took 3 % of the samples in our job thread and 1 % in a bare
//! single-threaded pread loop (perf, `benches/psync-clock.sh`). A thread that calls
//! `unshare(CLONE_FILES)` gets a private copy of the table and the cheap path back; what it
//! measures is the same system call on the same open file.
//!
//! What it must never do: close a descriptor of the process's shared table. [`PrivateFdTable`]
//! closes, when dropped, every descriptor above the standard three *in the private copy* (so no
//! copied descriptor, such as a pipe's write end another thread closed meanwhile, stays open
//! past the job), and only when `unshare` succeeded; when it did not, the thread goes on with
//! the shared table and nothing is closed. Descriptors the thread opens live only in its
//! table: it must not hand one to another thread, and a thread pool that serves every thread
//! (glibc's POSIX AIO helpers) must not be used from it; the caller decides (`enter(false)`).

/// The calling thread's private descriptor table, for as long as this value lives; see the
/// module docs. Create it before the thread opens anything it owns, drop it after everything
/// the thread opened has been closed.
#[must_use = "the table is given back (its copies closed) when this is dropped"]
pub struct PrivateFdTable {
    private: bool,
    // The table belongs to the thread that unshared it: the guard must be dropped there.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl PrivateFdTable {
    /// Give the calling thread a private copy of the descriptor table when `wanted`. If the
    /// kernel refuses (it should not: `CLONE_FILES` needs no privilege), the thread keeps the
    /// shared table, which is slower but measures the same I/O.
    pub fn enter(wanted: bool) -> Self {
        let private = wanted && {
            // Not while a test holds a file that must really close (no_fd_table_copies).
            // (A thread that holds that itself copies nothing else meanwhile.)
            let _no_holder_in_between = (NO_COPIES_DEPTH.get() == 0)
                .then(|| FD_TABLE_COPIES.read().unwrap_or_else(|p| p.into_inner()));
            // SAFETY: unshare(2) with CLONE_FILES only changes which table the calling thread
            // uses; every descriptor it had stays valid in the copy.
            unsafe { libc::unshare(libc::CLONE_FILES) == 0 }
        };
        PrivateFdTable {
            private,
            _not_send: std::marker::PhantomData,
        }
    }

    /// Whether the thread is on a private table.
    pub fn is_private(&self) -> bool {
        self.private
    }
}

static FD_TABLE_COPIES: std::sync::RwLock<()> = std::sync::RwLock::new(());

thread_local! {
    /// How many [`NoCopies`] this thread holds (they nest: the write lock is taken once).
    static NO_COPIES_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// While it lives, no thread copies the process's descriptor table; see
/// [`no_fd_table_copies`].
pub struct NoCopies {
    _guard: Option<std::sync::RwLockWriteGuard<'static, ()>>,
}

impl Drop for NoCopies {
    fn drop(&mut self) {
        NO_COPIES_DEPTH.set(NO_COPIES_DEPTH.get() - 1);
    }
}

/// A file held under an `flock`, with no thread copying the descriptor table meanwhile: a copy
/// would keep the open file, and with it the lock, held until that thread is done. Dropping it
/// closes the file (releasing the lock), then lets copies happen again.
pub struct FlockedFile {
    _file: std::fs::File,
    _no_copies: NoCopies,
}

/// Open a lock file with `open` and take its exclusive `flock`, so that no other thread copies
/// the descriptor table while it is held ([`FlockedFile`]). `open` and the flock's error go
/// back to the caller as `E`.
///
/// While another process holds the lock this waits with copies allowed (the file closed,
/// opened and tried again every 5 ms: a copy of a file opened once would share its lock), so
/// a job thread of this process never waits for another process's lock to start.
pub fn flocked<E>(
    mut open: impl FnMut() -> Result<std::fs::File, E>,
    lock_err: impl FnOnce(rustix::io::Errno) -> E,
) -> Result<FlockedFile, E> {
    use rustix::fs::{FlockOperation, flock};
    loop {
        let no_copies = no_fd_table_copies();
        let file = open()?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {
                return Ok(FlockedFile {
                    _file: file,
                    _no_copies: no_copies,
                });
            }
            Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR) => {
                drop(file);
                drop(no_copies);
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) => return Err(lock_err(e)),
        }
    }
}

/// While the guard lives no thread copies the process's descriptor table
/// ([`PrivateFdTable::enter`]), so a descriptor opened and closed under it has no copy in
/// another thread's table that keeps its file open (a test that holds a file on a mount, then
/// unmounts, while engine tests run beside it).
/// Guards nest within a thread (a state-file lock taken under a test's guard).
pub fn no_fd_table_copies() -> NoCopies {
    let depth = NO_COPIES_DEPTH.get();
    let guard = (depth == 0).then(|| FD_TABLE_COPIES.write().unwrap_or_else(|p| p.into_inner()));
    NO_COPIES_DEPTH.set(depth + 1);
    NoCopies { _guard: guard }
}

impl Drop for PrivateFdTable {
    fn drop(&mut self) {
        if self.private {
            // SAFETY: the table is this thread's own copy (unshare succeeded in this thread,
            // and the guard cannot move to another); closing its descriptors above 2 leaves
            // every other thread's untouched. close_range(2) exists since Linux 5.9; on an
            // older kernel the copies are closed by the thread's exit instead.
            unsafe {
                libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

    fn pipe() -> (OwnedFd, OwnedFd) {
        let mut fds = [0i32; 2];
        // SAFETY: pipe2 writes two new descriptors into `fds`, which we then own.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: both descriptors were just created and are owned by nobody else.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    /// The (device, inode) a descriptor number names in the calling thread's table, or None
    /// when the number is closed there.
    fn names(fd: RawFd) -> Option<(u64, u64)> {
        // SAFETY: fstat fills a zeroed stat buffer, whatever the number.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
    }

    /// Whether this process may unshare its descriptor table (a seccomp profile may refuse);
    /// if not, the test is skipped (a failure under FSDELTA_REQUIRE_ALL=1).
    pub(crate) fn unshare_allowed() -> bool {
        let ok = std::thread::spawn(|| PrivateFdTable::enter(true).is_private())
            .join()
            .unwrap();
        if !ok {
            crate::os::skip_test("unshare(CLONE_FILES) is refused here (a seccomp profile?)");
        }
        ok
    }

    // Only the thread that unshared can change its private table, so what these tests see
    // there does not depend on what other tests' threads do meanwhile.

    #[test]
    fn the_guard_closes_the_copies_in_the_private_table_and_nothing_shared() {
        if !unshare_allowed() {
            return;
        }
        let (r, w) = pipe();
        let (r_raw, pipe_id) = (r.as_raw_fd(), names(r.as_raw_fd()).unwrap());
        let (in_copy, after_drop) = std::thread::scope(|s| {
            s.spawn(|| {
                let g = PrivateFdTable::enter(true);
                assert!(g.is_private(), "unshare(CLONE_FILES) failed");
                let in_copy = names(r_raw);
                drop(g);
                (in_copy, names(r_raw))
            })
            .join()
            .unwrap()
        });
        assert_eq!(in_copy, Some(pipe_id), "the copy has what the table had");
        assert_eq!(after_drop, None, "the guard closed the copy in its thread");
        assert_eq!(names(r_raw), Some(pipe_id), "the shared table keeps it");
        // And the pipe works: nothing of it was closed for the process.
        // SAFETY: writes one byte from a live buffer.
        assert_eq!(
            unsafe { libc::write(w.as_raw_fd(), b"x".as_ptr().cast(), 1) },
            1
        );
    }

    #[test]
    fn a_descriptor_opened_on_the_private_table_is_the_threads_alone() {
        if !unshare_allowed() {
            return;
        }
        let (seen_tx, seen_rx) = std::sync::mpsc::channel();
        let (checked_tx, checked_rx) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|s| {
            s.spawn(move || {
                let g = PrivateFdTable::enter(true);
                assert!(g.is_private(), "unshare(CLONE_FILES) failed");
                // The pipe stays open until the shared table has been looked at.
                let (r, w) = pipe();
                seen_tx
                    .send((r.as_raw_fd(), names(r.as_raw_fd()).unwrap()))
                    .unwrap();
                checked_rx.recv().unwrap();
                drop((r, w));
                drop(g);
            });
            let (fd, id) = seen_rx.recv().unwrap();
            // The number is closed in the shared table, or names another file (one another
            // test opened meanwhile): never the thread's pipe.
            assert_ne!(names(fd), Some(id));
            checked_tx.send(()).unwrap();
        });
    }

    #[test]
    fn guards_nest_in_a_thread_and_an_flock_is_held_until_dropped() {
        if !unshare_allowed() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let open = || std::fs::File::create(&path);
        let try_lock = || {
            let f = std::fs::File::open(&path).unwrap();
            rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive)
        };
        // A test's guard, then a lock taken under it (the state file's), in one thread.
        let outer = no_fd_table_copies();
        let held = flocked(open, std::io::Error::from).unwrap();
        assert_eq!(try_lock(), Err(rustix::io::Errno::WOULDBLOCK));
        drop(held);
        assert_eq!(try_lock(), Ok(()));
        // The thread that excludes copies may take a private table itself (no deadlock on
        // its own lock). Nothing of this thread is open now: the guard's drop closes the
        // private table's descriptors above 2.
        let own = PrivateFdTable::enter(true);
        assert!(own.is_private());
        drop(own);
        drop(outer);
        assert_eq!(NO_COPIES_DEPTH.get(), 0);
    }

    #[test]
    fn not_wanted_leaves_the_shared_table_alone() {
        let (r, _w) = pipe();
        let (r_raw, pipe_id) = (r.as_raw_fd(), names(r.as_raw_fd()).unwrap());
        let after = std::thread::scope(|s| {
            s.spawn(|| {
                let g = PrivateFdTable::enter(false);
                assert!(!g.is_private());
                drop(g);
                names(r_raw)
            })
            .join()
            .unwrap()
        });
        assert_eq!(after, Some(pipe_id), "nothing was closed");
    }
}
