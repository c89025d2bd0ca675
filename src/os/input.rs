//! Reading an input file (a suite, a config, a dbench loadfile, a fio job file, an imported fio
//! JSON report) with bounds: it must be a regular file (not /dev/zero, a FIFO, a socket or a
//! directory) of at most [`MAX_INPUT_BYTES`], else it is refused with its name. The limit is
//! applied while reading too, so a file that grows under us cannot take the memory.
//!
//! Why here: the plan room reads what the user asks to run; every reader of such files calls
//! this one function instead of `fs::read_to_string`. This module must never write.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest input file accepted (64 MiB: far above any real suite, config or job file).
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// Why an input file was refused.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// It could not be opened or read.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error (in the message, not a separate cause, so it is printed once).
        error: std::io::Error,
    },
    /// It is not a regular file.
    #[error("{path}: is {what}, not a regular file; name a file")]
    NotAFile {
        /// The file.
        path: PathBuf,
        /// What it is (`a character device`, `a FIFO`, ...).
        what: &'static str,
    },
    /// It is too large.
    #[error("{path}: larger than {limit} bytes; an input file this large is refused")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit.
        limit: u64,
    },
    /// It is not UTF-8 text.
    #[error("{path}: not UTF-8 text")]
    NotText {
        /// The file.
        path: PathBuf,
    },
}

/// The bytes of `path`, bounded (see the module docs).
pub fn read(path: &Path) -> Result<Vec<u8>, InputError> {
    read_bounded(path, MAX_INPUT_BYTES)
}

/// The text of `path`, bounded; a UTF-8 byte-order mark is skipped.
pub fn read_to_string(path: &Path) -> Result<String, InputError> {
    let bytes = read(path)?;
    let bytes = bytes
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(&bytes)
        .to_vec();
    String::from_utf8(bytes).map_err(|_| InputError::NotText {
        path: path.to_path_buf(),
    })
}

/// [`read`] with another limit.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let io = |source| InputError::Io {
        path: path.to_path_buf(),
        error: source,
    };
    // Look before opening: opening a FIFO would block until a writer comes.
    let meta = fs::metadata(path).map_err(io)?;
    let ft = meta.file_type();
    let what = if ft.is_file() {
        None
    } else if ft.is_dir() {
        Some("a directory")
    } else if ft.is_char_device() {
        Some("a character device")
    } else if ft.is_block_device() {
        Some("a block device")
    } else if ft.is_fifo() {
        Some("a FIFO")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    };
    if let Some(what) = what {
        return Err(InputError::NotAFile {
            path: path.to_path_buf(),
            what,
        });
    }
    let too_large = || InputError::TooLarge {
        path: path.to_path_buf(),
        limit,
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    // O_NONBLOCK: if the path was swapped for a FIFO since the look, the open does not hang.
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let m = f.metadata().map_err(io)?;
    if !m.file_type().is_file() {
        return Err(InputError::NotAFile {
            path: path.to_path_buf(),
            what: "not a regular file",
        });
    }
    let mut buf = Vec::with_capacity(m.len().min(limit) as usize);
    f.take(limit + 1).read_to_end(&mut buf).map_err(io)?;
    if buf.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_directories_and_large_files_are_refused_with_their_name() {
        let e = read(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(
            e.contains("/dev/zero") && e.contains("character device"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("directory"), "{e}");
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let e = read(&fifo).unwrap_err().to_string();
        assert!(e.contains("FIFO") && e.contains("fifo"), "{e}");
        let big = dir.path().join("big");
        fs::write(&big, vec![b'x'; 2048]).unwrap();
        let e = read_bounded(&big, 1024).unwrap_err().to_string();
        assert!(e.contains("big") && e.contains("larger than 1024"), "{e}");
        assert_eq!(read_bounded(&big, 2048).unwrap().len(), 2048);
        let sparse = dir.path().join("sparse");
        fs::File::create(&sparse)
            .unwrap()
            .set_len(MAX_INPUT_BYTES + 1)
            .unwrap();
        assert!(matches!(read(&sparse), Err(InputError::TooLarge { .. })));
        let e = read(&dir.path().join("missing")).unwrap_err().to_string();
        assert!(e.contains("missing"), "{e}");
    }

    #[test]
    fn text_skips_a_byte_order_mark() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        fs::write(&p, b"\xEF\xBB\xBFname = 1\n").unwrap();
        assert_eq!(read_to_string(&p).unwrap(), "name = 1\n");
    }
}
