//! The engine table: one entry per [`IoEngine`] with its name, its capability flags and the
//! operation its I/O is made of, as fio's `struct ioengine_ops` and `enum fio_ioengine_flags`
//! (ioengines.h) describe each of fio's engines.
//!
//! Why it exists: the clone's loops (worker/) ask "does this engine complete inside its call?",
//! "does it open files?", "which call moves the data?" of this table instead of naming engines,
//! so that adding an engine means adding one entry here (and its call where the loops make
//! calls), not finding every `IoEngine::X` in the loops. The job-file side keeps its own
//! parse-time view (`IoEngine::is_sync` and friends, used to validate a job); the tests below
//! hold the two to the same answers.
//!
//! What it must never do: perform I/O, or be looked up per I/O where a loop can hold the
//! entry (an entry is `&'static`, taken once before the clock starts).

use crate::fio::jobfile::IoEngine;

/// What an engine can and cannot do (our subset of fio's `fio_ioengine_flags`, plus the facts
/// fio leaves in its engines' code that our loops need to know).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps(u32);

impl Caps {
    /// Each I/O completes inside its system call: iodepth 1, no slat, lat equal to clat
    /// (fio's FIO_SYNCIO). vsync, a FIO_SYNCIO engine in fio, gathers I/Os in a queue here,
    /// so it is not one.
    pub const SYNCIO: Caps = Caps(1 << 0);
    /// Moves no data to a disk: no disk_util (fio's FIO_DISKLESSIO).
    pub const DISKLESSIO: Caps = Caps(1 << 1);
    /// Pretends to do I/O: opens no file, lays none out, verifies nothing (fio's FIO_FAKEIO,
    /// the null engine).
    pub const FAKEIO: Caps = Caps(1 << 2);
    /// Each "I/O" is an operation on a whole file (fio's fileoperations engines).
    pub const FILEOP: Caps = Caps(1 << 3);
    /// Its writes cannot grow a file, so the files are laid out in full (fio's FIO_NOEXTEND).
    pub const NOEXTEND: Caps = Caps(1 << 4);
    /// Creates its files as its I/O: nothing is laid out before the job (filecreate).
    pub const CREATES_FILES: Caps = Caps(1 << 5);
    /// Removes its files as its I/O: unlink= finds nothing left to remove (filedelete).
    pub const REMOVES_FILES: Caps = Caps(1 << 6);
    /// Carries a priority per command (cmdprio_*): fio's libaio and io_uring.
    pub const CMDPRIO: Caps = Caps(1 << 7);
    /// Sets the job's priority on every command that cmdprio left alone (io_uring's sqe
    /// ioprio; libaio sets none).
    pub const JOB_PRIO_PER_IO: Caps = Caps(1 << 8);
    /// Needs the process's shared descriptor table: the C library's helper threads do the
    /// I/O (posixaio).
    pub const SHARED_FDTABLE: Caps = Caps(1 << 9);
    /// The file is memory-mapped: mapped before each I/O, synced with msync (mmap).
    pub const MAPPED: Caps = Caps(1 << 10);
    /// Its failed I/O is reported by fio's td_io_queue, not by a data transfer (falloc and
    /// ftruncate, whose "transfer" is the queue call itself).
    pub const QUEUE_ERRORS: Caps = Caps(1 << 11);
    /// A trim punches a hole even on a block device, where the others issue BLKDISCARD
    /// (falloc).
    pub const TRIM_PUNCHES: Caps = Caps(1 << 12);
    /// fio's own FIO_SYNCIO, as fio's engine sets it (for fio's messages, such as the note on
    /// iodepth above 1): [`Caps::SYNCIO`]'s engines but null, and vsync, which queues here.
    pub const FIO_SYNCIO: Caps = Caps(1 << 13);

    const fn with(self, other: Caps) -> Caps {
        Caps(self.0 | other.0)
    }

    /// Whether every flag of `flags` is set.
    #[inline]
    pub const fn has(self, flags: Caps) -> bool {
        self.0 & flags.0 == flags.0
    }
}

/// The call a synchronous engine moves one I/O's data with (fio's `->queue` of a FIO_SYNCIO
/// engine).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncCall {
    /// Nothing: the I/O completes at once (null).
    Nothing,
    /// pread(2) / pwrite(2) (psync).
    Positional,
    /// lseek(2) when the offset moved, then read(2) / write(2) (sync).
    SeekThenTransfer,
    /// preadv(2) / pwritev(2) of one vector (pvsync).
    Vectored,
    /// preadv2(2) / pwritev2(2), RWF_HIPRI with hipri=1 (pvsync2).
    Vectored2,
    /// fallocate(2) of the range; KEEP_SIZE for a read (falloc).
    Fallocate,
    /// memcpy to or from the mapping (mmap).
    Mapped,
    /// ftruncate(2) to the write's offset; anything else is EINVAL (ftruncate).
    Truncate,
    /// splice(2) from the file into a pipe and read(2) from it, or vmsplice(2) into the pipe
    /// and splice(2) to the file (splice).
    Splice,
}

/// The backend a queueing engine submits and reaps through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKind {
    /// io_uring.
    IoUring,
    /// Linux native AIO (io_submit / io_getevents).
    Libaio,
    /// POSIX AIO through the C library.
    Posixaio,
    /// Contiguous I/Os gathered into one readv / writev.
    Vsync,
}

impl QueueKind {
    /// The call fio names when reaping fails (the queueing loop's error text).
    pub fn reap_call(self) -> &'static str {
        match self {
            QueueKind::Libaio => "io_submit/io_getevents",
            QueueKind::Posixaio => "aio_suspend",
            QueueKind::Vsync => "xfer vsync",
            QueueKind::IoUring => "io_uring_enter",
        }
    }
}

/// The operation a file engine times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileCall {
    /// open(2) with O_CREAT (filecreate).
    Create,
    /// stat(2) (filestat).
    Stat,
    /// unlink(2) (filedelete).
    Delete,
}

/// What one I/O of the engine is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A call that completes the I/O (the sync loop).
    Sync(SyncCall),
    /// A command queued to a backend (the queueing loop).
    Queue(QueueKind),
    /// An operation on a whole file (the file loop).
    File(FileCall),
}

/// One engine: fio's `struct ioengine_ops`, reduced to what our loops ask.
#[derive(Debug)]
pub struct EngineOps {
    /// The engine this entry describes.
    pub engine: IoEngine,
    /// The name fio prints (`ioengine=` in a job file).
    pub name: &'static str,
    /// What it can and cannot do.
    pub caps: Caps,
    /// What one I/O is.
    pub op: Op,
}

impl EngineOps {
    /// Whether every flag of `flags` is set.
    #[inline]
    pub fn has(&self, flags: Caps) -> bool {
        self.caps.has(flags)
    }

    /// The synchronous call of the engine; a queueing or file engine's verify and offload
    /// reads are positional (pread / pwrite).
    #[inline]
    pub fn sync_call(&self) -> SyncCall {
        match self.op {
            Op::Sync(c) => c,
            Op::Queue(_) | Op::File(_) => SyncCall::Positional,
        }
    }
}

/// A synchronous engine that fio also flags FIO_SYNCIO.
const SYNC: Caps = Caps::SYNCIO.with(Caps::FIO_SYNCIO);

/// The table, in [`IoEngine`]'s declaration order (an engine's entry is at its discriminant:
/// see [`of`]).
pub static ENGINES: [EngineOps; 16] = [
    EngineOps {
        engine: IoEngine::Psync,
        name: "psync",
        caps: SYNC,
        op: Op::Sync(SyncCall::Positional),
    },
    EngineOps {
        engine: IoEngine::Sync,
        name: "sync",
        caps: SYNC,
        op: Op::Sync(SyncCall::SeekThenTransfer),
    },
    EngineOps {
        engine: IoEngine::Pvsync,
        name: "pvsync",
        caps: SYNC,
        op: Op::Sync(SyncCall::Vectored),
    },
    EngineOps {
        engine: IoEngine::IoUring,
        name: "io_uring",
        caps: Caps::CMDPRIO.with(Caps::JOB_PRIO_PER_IO),
        op: Op::Queue(QueueKind::IoUring),
    },
    EngineOps {
        engine: IoEngine::Libaio,
        name: "libaio",
        caps: Caps::CMDPRIO,
        op: Op::Queue(QueueKind::Libaio),
    },
    EngineOps {
        engine: IoEngine::FileCreate,
        name: "filecreate",
        caps: SYNC
            .with(Caps::FILEOP)
            .with(Caps::DISKLESSIO)
            .with(Caps::CREATES_FILES),
        op: Op::File(FileCall::Create),
    },
    EngineOps {
        engine: IoEngine::FileStat,
        name: "filestat",
        caps: SYNC.with(Caps::FILEOP),
        op: Op::File(FileCall::Stat),
    },
    EngineOps {
        engine: IoEngine::FileDelete,
        name: "filedelete",
        caps: SYNC.with(Caps::FILEOP).with(Caps::REMOVES_FILES),
        op: Op::File(FileCall::Delete),
    },
    EngineOps {
        engine: IoEngine::Null,
        name: "null",
        caps: Caps::SYNCIO.with(Caps::DISKLESSIO).with(Caps::FAKEIO),
        op: Op::Sync(SyncCall::Nothing),
    },
    EngineOps {
        engine: IoEngine::Falloc,
        name: "falloc",
        caps: SYNC.with(Caps::QUEUE_ERRORS).with(Caps::TRIM_PUNCHES),
        op: Op::Sync(SyncCall::Fallocate),
    },
    EngineOps {
        engine: IoEngine::Ftruncate,
        name: "ftruncate",
        caps: SYNC.with(Caps::QUEUE_ERRORS),
        op: Op::Sync(SyncCall::Truncate),
    },
    EngineOps {
        engine: IoEngine::Pvsync2,
        name: "pvsync2",
        caps: SYNC,
        op: Op::Sync(SyncCall::Vectored2),
    },
    EngineOps {
        engine: IoEngine::Posixaio,
        name: "posixaio",
        caps: Caps::SHARED_FDTABLE,
        op: Op::Queue(QueueKind::Posixaio),
    },
    EngineOps {
        engine: IoEngine::Vsync,
        name: "vsync",
        caps: Caps::FIO_SYNCIO,
        op: Op::Queue(QueueKind::Vsync),
    },
    EngineOps {
        engine: IoEngine::Mmap,
        name: "mmap",
        caps: SYNC.with(Caps::NOEXTEND).with(Caps::MAPPED),
        op: Op::Sync(SyncCall::Mapped),
    },
    EngineOps {
        engine: IoEngine::Splice,
        name: "splice",
        caps: SYNC,
        op: Op::Sync(SyncCall::Splice),
    },
];

/// The entry of `engine` (an index, no search).
#[inline]
pub fn of(engine: IoEngine) -> &'static EngineOps {
    &ENGINES[engine as usize]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::jobfile::{SystemSources, parse_job_text};

    #[test]
    fn every_entry_is_at_its_engines_index_and_named_as_fio_names_it() {
        for (i, e) in ENGINES.iter().enumerate() {
            assert_eq!(e.engine as usize, i, "{} out of place", e.name);
            assert_eq!(e.name, e.engine.as_str());
            assert!(std::ptr::eq(of(e.engine), e));
            // The job file's ioengine= reads the name back as the same engine.
            let set = parse_job_text(
                &format!("[j]\nioengine={}\nsize=4k\n", e.name),
                "t.fio",
                &SystemSources,
            )
            .unwrap();
            assert_eq!(set.jobs[0].ioengine, e.engine, "ioengine={}", e.name);
        }
    }

    #[test]
    fn flags_agree_with_the_job_files_view() {
        for e in &ENGINES {
            assert_eq!(e.has(Caps::SYNCIO), e.engine.is_sync(), "{}", e.name);
            assert_eq!(e.has(Caps::FILEOP), e.engine.is_file_op(), "{}", e.name);
            assert_eq!(
                e.has(Caps::DISKLESSIO),
                e.engine.is_diskless(),
                "{}",
                e.name
            );
            // What one I/O is follows from the flags: a file engine's is a file call, a
            // synchronous engine's a call, the others queue.
            match e.op {
                Op::File(_) => assert!(e.has(Caps::FILEOP)),
                Op::Sync(_) => assert!(e.has(Caps::SYNCIO) && !e.has(Caps::FILEOP)),
                Op::Queue(_) => assert!(!e.has(Caps::SYNCIO)),
            }
        }
    }

    #[test]
    fn flags_are_fios_where_fio_has_them() {
        // fio's FIO_SYNCIO: every engine that completes in its call but null, and vsync.
        for e in &ENGINES {
            let fios =
                (e.engine.is_sync() && e.engine != IoEngine::Null) || e.engine == IoEngine::Vsync;
            assert_eq!(e.has(Caps::FIO_SYNCIO), fios, "{}", e.name);
        }
        // ioengines.h: null is FIO_DISKLESSIO | FIO_FAKEIO, mmap FIO_SYNCIO | FIO_NOEXTEND.
        assert!(of(IoEngine::Null).has(Caps::DISKLESSIO.with(Caps::FAKEIO)));
        assert!(of(IoEngine::Mmap).has(Caps::SYNCIO.with(Caps::NOEXTEND)));
        assert!(!of(IoEngine::Psync).has(Caps::NOEXTEND));
        assert!(!of(IoEngine::Libaio).has(Caps::JOB_PRIO_PER_IO));
        assert_eq!(of(IoEngine::Psync).sync_call(), SyncCall::Positional);
        assert_eq!(of(IoEngine::IoUring).sync_call(), SyncCall::Positional);
        assert_eq!(QueueKind::Libaio.reap_call(), "io_submit/io_getevents");
    }
}
