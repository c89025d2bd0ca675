//! fio's write_iolog=FILE: the clone's I/O pattern as fio 3.33 writes it (iolog.c's
//! init_iolog_write, log_file and log_io_u), a file fio's read_iolog and blktrace tools read.
//!
//! Why it exists: job files of other projects (fio's own regression jobs t0007 and t0031) ask
//! for it, and a user compares the pattern fsdelta issued with fio's. The format: the line
//! `fio version 3 iolog`, then `USEC FILE add` for each of the clone's files, `USEC FILE open`
//! and `USEC FILE close` as files open and close, and one `USEC FILE DDIR OFFSET LENGTH` per
//! I/O as it is issued (DDIR read, write, trim, sync or datasync; a sync's offset is the
//! clone's last I/O's and its length 0, as fio's reused io_u gives), USEC the microseconds
//! since the log was set up. Clones append to the same file (fio opens it with "a").
//! What it must never do: write anywhere but the file the job names, or allocate per line:
//! lines go through one 8 KiB buffer, as fio's setvbuf, so a write(2) happens every 8 KiB
//! of log, inside the loop, the one thing the loop does that fio's also does for this option.

use std::cell::RefCell;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

/// fio's iolog_ver3 line.
pub const VERSION_LINE: &str = "fio version 3 iolog";

/// fio's io_ddir_name for the directions a clone issues: read, write, trim.
const DDIR: [&str; 3] = ["read", "write", "trim"];

/// One clone's open log.
pub struct WriteIolog {
    /// The clone's file names (fio's file_name), by file index.
    names: Vec<String>,
    out: RefCell<BufWriter<File>>,
    start: Instant,
    /// The last I/O's offset (what fio's reused io_u still holds when a sync is logged).
    last_offset: std::cell::Cell<u64>,
}

impl WriteIolog {
    /// Open `path` for appending, write the version line and an `add` line per file name
    /// (`names`, the clone's files by index).
    pub fn open(path: &Path, names: Vec<String>) -> std::io::Result<WriteIolog> {
        let f = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)?;
        let log = WriteIolog {
            names,
            out: RefCell::new(BufWriter::with_capacity(8192, f)),
            start: Instant::now(),
            last_offset: std::cell::Cell::new(0),
        };
        writeln!(log.out.borrow_mut(), "{VERSION_LINE}")?;
        for fi in 0..log.names.len() {
            log.file(fi, "add");
        }
        Ok(log)
    }

    fn usec(&self) -> u128 {
        self.start.elapsed().as_micros()
    }

    /// `USEC FILE ACTION` (add, open, close) for file `fi`. A failed write is dropped, as fio's fprintf.
    pub fn file(&self, fi: usize, action: &str) {
        let name = &self.names[fi];
        let t = self.usec();
        let _ = writeln!(self.out.borrow_mut(), "{t} {name} {action}");
    }

    /// `USEC FILE DDIR OFFSET LENGTH` for a read, write or trim (`ddir` 0, 1, 2).
    pub fn io(&self, fi: usize, ddir: usize, offset: u64, len: u64) {
        let name = &self.names[fi];
        self.last_offset.set(offset);
        let t = self.usec();
        let _ = writeln!(
            self.out.borrow_mut(),
            "{t} {name} {} {offset} {len}",
            DDIR[ddir.min(2)]
        );
    }

    /// `USEC FILE sync OFFSET 0` (or datasync).
    pub fn sync(&self, fi: usize, data_only: bool) {
        let name = &self.names[fi];
        let t = self.usec();
        let what = if data_only { "datasync" } else { "sync" };
        let off = self.last_offset.get();
        let _ = writeln!(self.out.borrow_mut(), "{t} {name} {what} {off} 0");
    }

    /// Write out what is buffered (the clone's end).
    pub fn finish(&self) -> std::io::Result<()> {
        self.out.borrow_mut().flush()
    }
}

impl Drop for WriteIolog {
    fn drop(&mut self) {
        let _ = self.out.get_mut().flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lines, without their times, are fio 3.33's for the same events (fio's t0007 log:
    /// `foo.0.0 add`, `foo.0.0 open`, `foo.0.0 read 0 1048576`, ..., `foo.0.0 close`), and a
    /// second clone appends after the first.
    #[test]
    fn lines_are_fios_and_clones_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        for _ in 0..2 {
            let log = WriteIolog::open(&path, vec!["foo.0.0".to_string()]).unwrap();
            log.file(0, "open");
            log.io(0, 0, 0, 1048576);
            log.io(0, 1, 1572864, 4096);
            log.sync(0, false);
            log.io(0, 2, 8192, 4096);
            log.sync(0, true);
            log.file(0, "close");
            log.finish().unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let body: Vec<String> = text
            .lines()
            .map(|l| match l.split_once(' ') {
                Some((t, rest)) if t.parse::<u64>().is_ok() => rest.to_string(),
                _ => l.to_string(),
            })
            .collect();
        let one = [
            "fio version 3 iolog",
            "foo.0.0 add",
            "foo.0.0 open",
            "foo.0.0 read 0 1048576",
            "foo.0.0 write 1572864 4096",
            "foo.0.0 sync 1572864 0",
            "foo.0.0 trim 8192 4096",
            "foo.0.0 datasync 8192 0",
            "foo.0.0 close",
        ];
        let want: Vec<&str> = one.iter().chain(one.iter()).copied().collect();
        assert_eq!(body, want);
    }
}
