//! fio's `mmap` engine: the file is mapped (MAP_SHARED) and each I/O is a memcpy to or from
//! the mapping; a sync is msync(MS_SYNC) of the mapping, and direct=1 msyncs and drops each
//! I/O's pages after it (fio 3.33's engines/mmap.c).
//!
//! Why it exists: job files name ioengine=mmap to measure page-fault driven I/O, which no
//! read/write engine does. As fio's: the whole region is mapped at the first I/O of a file
//! (fio_mmapio_prep_full), or, where that fails, a window of 1 GiB / nrfiles from the I/O's
//! offset (fio_mmapio_prep_limited), mapped again when an I/O falls outside it; a fresh
//! mapping gets fio's access hint (MADV_SEQUENTIAL / MADV_RANDOM, fadvise_hint) and
//! MADV_DONTNEED. One deviation: fio maps a file from its start but indexes the mapping from
//! the region's (`offset=`), so with an offset it touches other bytes than the I/O names;
//! here the mapping starts at the region. What it must never do: map past the end of the
//! file (a memcpy there is SIGBUS, not an error): a mapping is refused when the file (or block
//! device, BLKGETSIZE64) is shorter than the bytes it would cover; a file truncated by someone
//! else while mapped is the one case no check here can catch.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// fio's MMAP_TOTAL_SZ on 64-bit systems: what the windows of all files share.
const MMAP_TOTAL_SZ: u64 = 1 << 30;

/// One mapping of a file: `len` bytes from file offset `off`.
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
    off: u64,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are what mmap returned; nothing borrows the mapping past its owner.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// What a job maps: its protection and hints.
#[derive(Clone, Copy, Debug)]
pub struct MapSpec {
    /// Writes go through the mapping (PROT_WRITE).
    pub write: bool,
    /// Reads go through it, or a write job verifies (PROT_READ).
    pub read: bool,
    /// fadvise_hint: MADV_RANDOM for random jobs, MADV_SEQUENTIAL otherwise.
    pub hint: bool,
    pub random: bool,
    /// The file's region: where it starts and how long it is (fio's file_offset, io_size).
    pub base: u64,
    pub region: u64,
    /// The job's nrfiles (the windows share MMAP_TOTAL_SZ).
    pub nrfiles: u64,
}

fn page() -> u64 {
    // SAFETY: sysconf reads a system value and has no other effect.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as u64 } else { 4096 }
}

fn map(fd: BorrowedFd<'_>, off: u64, len: u64, spec: &MapSpec) -> io::Result<Mapping> {
    // The kernel maps from a page boundary: start there and point past the slack.
    let slack = off % page();
    let (moff, mlen) = (off - slack, (len + slack) as usize);
    let mut prot = 0;
    if spec.write {
        prot |= libc::PROT_WRITE;
    }
    if spec.read || !spec.write {
        prot |= libc::PROT_READ;
    }
    // SAFETY: a fresh shared mapping of an open descriptor; failure is checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            mlen,
            prot,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            moff as libc::off_t,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let m = Mapping {
        ptr: p.cast(),
        len: mlen,
        off: moff,
    };
    let advise = |a: libc::c_int| {
        // SAFETY: advice on the mapping just made.
        let r = unsafe { libc::posix_madvise(m.ptr.cast(), m.len, a) };
        if r == 0 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(r))
        }
    };
    if spec.hint {
        advise(if spec.random {
            libc::POSIX_MADV_RANDOM
        } else {
            libc::POSIX_MADV_SEQUENTIAL
        })?;
    }
    advise(libc::POSIX_MADV_DONTNEED)?;
    Ok(m)
}

impl Mapping {
    /// fio_mmapio_prep: the mapping that holds `len` bytes at file offset `offset`, made anew
    /// (the old one unmapped first) when `cur` does not hold them.
    pub fn prep<'a>(
        cur: &'a mut Option<Mapping>,
        fd: BorrowedFd<'_>,
        offset: u64,
        len: usize,
        spec: &MapSpec,
    ) -> io::Result<&'a mut Mapping> {
        let holds = |m: &Mapping| offset >= m.off && offset + len as u64 <= m.off + m.len as u64;
        if !cur.as_ref().is_some_and(holds) {
            *cur = None;
            let st = rustix::fs::fstat(fd)?;
            let size = if rustix::fs::FileType::from_raw_mode(st.st_mode)
                == rustix::fs::FileType::BlockDevice
            {
                super::files::blkdev_size(fd)?
            } else {
                st.st_size as u64
            };
            let end = spec.base + spec.region;
            if end > size {
                return Err(io::Error::other(format!(
                    "the file holds {size} bytes, fewer than the {end} its region needs (a memcpy past its end would kill the job); lay the file out in full"
                )));
            }
            let m = match map(fd, spec.base, spec.region, spec) {
                Ok(m) => m,
                Err(_) => {
                    // fio_mmapio_prep_limited: a window from the I/O's offset.
                    let window = MMAP_TOTAL_SZ / spec.nrfiles.max(1);
                    if len as u64 > window {
                        return Err(io::Error::other("bs too big for mmap engine"));
                    }
                    map(fd, offset, window.min(end.saturating_sub(offset)), spec)?
                }
            };
            if !holds(&m) {
                return Err(io::Error::other(format!(
                    "the I/O at {offset} (+{len}) lies outside the file's region"
                )));
            }
            *cur = Some(m);
        }
        Ok(cur.as_mut().expect("mapped above"))
    }

    /// The `len` bytes at file offset `offset` (inside the mapping, by `prep`).
    fn at(&self, offset: u64, len: usize) -> *mut u8 {
        debug_assert!(offset >= self.off && offset + len as u64 <= self.off + self.len as u64);
        // SAFETY: inside the mapping, as prep checked.
        unsafe { self.ptr.add((offset - self.off) as usize) }
    }

    /// A read: copy from the mapping (page faults are the I/O).
    pub fn read(&self, offset: u64, buf: &mut [u8]) {
        // SAFETY: `at` is inside the live mapping for buf.len() bytes, which buf does not
        // overlap (it is the job's own buffer).
        unsafe {
            std::ptr::copy_nonoverlapping(self.at(offset, buf.len()), buf.as_mut_ptr(), buf.len())
        };
    }

    /// A write: copy into the mapping.
    pub fn write(&self, offset: u64, buf: &[u8]) {
        // SAFETY: as in read; the mapping is writable for jobs that write.
        unsafe {
            std::ptr::copy_nonoverlapping(buf.as_ptr(), self.at(offset, buf.len()), buf.len())
        };
    }

    /// fio's sync: msync(MS_SYNC) of the whole mapping. Errors are errnos, as the other
    /// engines' system calls give them to the I/O loop.
    pub fn sync(&self) -> rustix::io::Result<()> {
        self.sync_range(self.ptr, self.len)
    }

    /// direct=1 ("not really direct, but should drop the pages from the cache"): msync the
    /// I/O's bytes and drop their pages. The range starts on a page (fio's mmap init asks a
    /// page-sized minimum block with direct=1).
    pub fn drop_pages(&self, offset: u64, len: usize) -> rustix::io::Result<()> {
        let p = self.at(offset, len);
        self.sync_range(p, len)?;
        // SAFETY: inside the live mapping.
        let r = unsafe { libc::posix_madvise(p.cast(), len, libc::POSIX_MADV_DONTNEED) };
        if r != 0 {
            return Err(rustix::io::Errno::from_raw_os_error(r));
        }
        Ok(())
    }

    /// msync(MS_SYNC) of `len` bytes at `p`, inside the mapping.
    fn sync_range(&self, p: *mut u8, len: usize) -> rustix::io::Result<()> {
        // SAFETY: the caller's range is inside the live mapping.
        if unsafe { libc::msync(p.cast(), len, libc::MS_SYNC) } != 0 {
            return Err(
                rustix::io::Errno::from_io_error(&io::Error::last_os_error())
                    .unwrap_or(rustix::io::Errno::IO),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn spec(base: u64, region: u64) -> MapSpec {
        MapSpec {
            write: true,
            read: true,
            hint: true,
            random: false,
            base,
            region,
            nrfiles: 1,
        }
    }

    #[test]
    fn reads_and_writes_go_through_the_region_mapped_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m");
        std::fs::write(&path, vec![0u8; 3 * 4096]).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let mut cur = None;
        // the region starts at 4096 + 100: the mapping starts on its page
        let s = spec(4096 + 100, 8192 - 100);
        let m = Mapping::prep(&mut cur, f.as_fd(), 4096 + 100, 512, &s).unwrap();
        m.write(4096 + 100, &[7u8; 512]);
        let first = m.ptr;
        let m = Mapping::prep(&mut cur, f.as_fd(), 8192, 4096, &s).unwrap();
        assert_eq!(m.ptr, first, "an I/O inside the mapping does not map again");
        m.write(8192, &[9u8; 4096]);
        m.sync().unwrap();
        let mut back = [0u8; 512];
        m.read(4096 + 100, &mut back);
        assert_eq!(back, [7u8; 512]);
        m.drop_pages(8192, 4096).unwrap();
        let data = std::fs::read(&path).unwrap();
        assert!(data[4196..4196 + 512].iter().all(|&b| b == 7));
        assert!(data[8192..].iter().all(|&b| b == 9));
        assert!(data[..4196].iter().all(|&b| b == 0));
    }

    #[test]
    fn a_file_shorter_than_the_mapping_is_an_error_not_a_fault() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m");
        std::fs::write(&path, vec![0u8; 4096]).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let mut cur = None;
        let s = MapSpec {
            write: false,
            ..spec(0, 8192)
        };
        let e = Mapping::prep(&mut cur, f.as_fd(), 4096, 512, &s)
            .err()
            .unwrap();
        assert!(e.to_string().contains("fewer than the 8192"), "{e}");
    }
}
