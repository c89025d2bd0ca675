//! Files fsdelta writes or replays, opened so that nobody else can choose what they are: no
//! symlink is ever followed (`O_NOFOLLOW`), a file fsdelta reads back as an instruction or as
//! its own data must be a regular file owned by the user fsdelta runs as and writable by no one
//! else, new files are created with mode 0600, and a file replaced whole is written to an
//! exclusive temporary beside it, fsynced and renamed over it.
//!
//! Must never follow a symlink, never trust a file another user owns or can write, and never
//! create a file readable by others.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why a path was refused, or the I/O error that stopped it. The message names the path and
/// says how to fix the problem.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The path exists but must not be trusted (a symlink, another owner, open modes).
    #[error("{path}: {why}")]
    Unsafe {
        /// The path refused.
        path: String,
        /// What is wrong and how to fix it.
        why: String,
    },
    /// The operation failed.
    #[error("{path}: {what}: {source}")]
    Io {
        /// The path.
        path: String,
        /// What was being done.
        what: &'static str,
        /// The error.
        source: io::Error,
    },
}

impl FileError {
    fn unsafe_(path: &Path, why: impl Into<String>) -> FileError {
        FileError::Unsafe {
            path: path.display().to_string(),
            why: why.into(),
        }
    }

    fn io(path: &Path, what: &'static str, source: io::Error) -> FileError {
        if source.raw_os_error() == Some(libc::ELOOP) {
            return FileError::unsafe_(
                path,
                "is a symlink, which fsdelta never follows here; remove it or name another path",
            );
        }
        FileError::Io {
            path: path.display().to_string(),
            what,
            source,
        }
    }

    /// Whether the path was refused as unsafe (rather than failing with an I/O error).
    pub fn is_unsafe(&self) -> bool {
        matches!(self, FileError::Unsafe { .. })
    }
}

fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// A directory fsdelta keeps private files in must be a real directory (not a symlink) owned by
/// the current user or root and writable by no one else, unless it is sticky (as /tmp): a sticky
/// directory is accepted, since nobody else can remove or rename our files in it, but the files
/// themselves must then pass [`check_own_file`].
pub fn check_dir(dir: &Path) -> Result<(), FileError> {
    let m = fs::symlink_metadata(dir).map_err(|e| FileError::io(dir, "cannot inspect", e))?;
    if !m.is_dir() {
        return Err(FileError::unsafe_(
            dir,
            "is not a directory (a symlink is not followed)",
        ));
    }
    let me = euid();
    if m.uid() != me && m.uid() != 0 {
        return Err(FileError::unsafe_(
            dir,
            format!(
                "is owned by uid {}, not by you (uid {me}) or root; use a directory of your own",
                m.uid()
            ),
        ));
    }
    if m.mode() & 0o022 != 0 && m.mode() & 0o1000 == 0 {
        return Err(FileError::unsafe_(
            dir,
            format!(
                "is writable by others (mode {:o}) and not sticky: another user could replace \
                 fsdelta's files there; use a directory only you can write (chmod go-w)",
                m.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// Whether `dir` is shared: writable by group or others (sticky or not) or owned by someone else.
pub fn is_shared_dir(dir: &Path) -> bool {
    match fs::symlink_metadata(dir) {
        Ok(m) => m.mode() & 0o022 != 0 || (m.uid() != euid() && m.uid() != 0),
        Err(_) => false,
    }
}

/// A file fsdelta reads back (a journal, a lock, a state file) must be a regular file owned by the
/// current user and writable by no one else.
pub fn check_own_file(path: &Path, m: &Metadata) -> Result<(), FileError> {
    if !m.file_type().is_file() {
        return Err(FileError::unsafe_(
            path,
            "is not a regular file (symlinks are never followed); remove it if you did not make it",
        ));
    }
    let me = euid();
    if m.uid() != me {
        return Err(FileError::unsafe_(
            path,
            format!(
                "is owned by uid {}, not by you (uid {me}): it may have been planted by another \
                 user; fsdelta will not use it: remove it if you did not make it",
                m.uid()
            ),
        ));
    }
    if m.mode() & 0o022 != 0 {
        return Err(FileError::unsafe_(
            path,
            format!(
                "is writable by others (mode {:o}): chmod go-w it, or remove it",
                m.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// How [`open`] opens a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read an existing file.
    Read,
    /// Append, creating the file (0600) when absent.
    Append,
    /// Read and write, creating the file (0600) when absent, never truncating (a lock file).
    ReadWrite,
    /// Create a new file (0600); an existing one is an error (`AlreadyExists`).
    CreateNew,
}

/// Open `path` without following a symlink at its last component and check, on the open file,
/// that it is a regular file of ours that no one else can write ([`check_own_file`]).
pub fn open(path: &Path, access: Access) -> Result<File, FileError> {
    let mut o = OpenOptions::new();
    o.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .mode(0o600);
    match access {
        Access::Read => o.read(true),
        Access::Append => o.append(true).create(true),
        Access::ReadWrite => o.read(true).write(true).create(true).truncate(false),
        Access::CreateNew => o.write(true).create_new(true),
    };
    let f = o
        .open(path)
        .map_err(|e| FileError::io(path, "cannot open", e))?;
    let m = f
        .metadata()
        .map_err(|e| FileError::io(path, "cannot inspect", e))?;
    check_own_file(path, &m)?;
    Ok(f)
}

/// Whether [`read_regular`] follows a symlink at the path's last component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Symlinks {
    /// A symlink is refused (a file another user could have planted a link at).
    Refuse,
    /// A symlink is followed (a certificate under /etc/ssl/certs, which are links).
    Follow,
}

/// Read a file that must be a regular file of at most `max` bytes, whoever owns it: the file is
/// opened non-blocking (a FIFO named by mistake or planted returns at once, refused, instead of
/// blocking the read forever), checked on the open descriptor, and read at most `max + 1` bytes
/// (a larger file, or one that grows, is refused rather than read whole).
pub fn read_regular(path: &Path, max: u64, symlinks: Symlinks) -> Result<Vec<u8>, FileError> {
    use std::io::Read;
    let not_regular = |m: &Metadata| {
        let what = if m.file_type().is_fifo() {
            "a FIFO"
        } else if m.file_type().is_char_device() || m.file_type().is_block_device() {
            "a device"
        } else if m.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        FileError::unsafe_(
            path,
            format!("is {what}, not a regular file; name a regular file"),
        )
    };
    // Refuse what is visibly not a regular file before opening it at all (opening a device can
    // have effects of its own); the check on the descriptor below is the one that counts.
    let before = match symlinks {
        Symlinks::Refuse => fs::symlink_metadata(path),
        Symlinks::Follow => fs::metadata(path),
    }
    .map_err(|e| FileError::io(path, "cannot inspect", e))?;
    if before.file_type().is_symlink() {
        return Err(FileError::io(
            path,
            "cannot open",
            io::Error::from_raw_os_error(libc::ELOOP),
        ));
    }
    if !before.is_file() {
        return Err(not_regular(&before));
    }
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC;
    if symlinks == Symlinks::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| FileError::io(path, "cannot open", e))?;
    let m = f
        .metadata()
        .map_err(|e| FileError::io(path, "cannot inspect", e))?;
    if !m.is_file() {
        return Err(not_regular(&m));
    }
    let mut bytes = Vec::new();
    f.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| FileError::io(path, "cannot read", e))?;
    if bytes.len() as u64 > max {
        return Err(FileError::unsafe_(
            path,
            format!(
                "is larger than {max} bytes, more than such a file ever needs; name the right file"
            ),
        ));
    }
    Ok(bytes)
}

/// Whether `path` lies under `/dev` or `/proc`, where only root and the kernel make entries:
/// `/dev/null`, `/dev/stdout` and `/dev/fd/N` (a shell's `>(cmd)`) are used as they are, links
/// followed, as nobody else can have planted them.
fn is_system_path(path: &Path) -> bool {
    path.starts_with("/dev/") || path.starts_with("/proc/")
}

/// An output file the user named (`--output`, `-o`) may be written when it is absent (it is
/// then created with mode 0600), a regular file or FIFO owned by the user fsdelta runs as, or a
/// path under `/dev` or `/proc` (`/dev/null`, `/dev/stdout`). A symlink anywhere else is refused,
/// never followed (another user may have planted it in a shared directory, pointing at a file
/// of ours), as is a file another user owns. Checks without creating anything; [`open_output`]
/// and [`write_output`] check again on what they open.
pub fn check_output(path: &Path) -> Result<(), FileError> {
    if is_system_path(path) {
        return Ok(());
    }
    match fs::symlink_metadata(path) {
        Ok(m) => check_output_meta(path, &m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(FileError::io(path, "cannot inspect", e)),
    }
}

fn check_output_meta(path: &Path, m: &Metadata) -> Result<(), FileError> {
    let t = m.file_type();
    if t.is_symlink() {
        return Err(FileError::unsafe_(
            path,
            "is a symlink, which fsdelta never follows for an output file (another user may have \
             planted it); remove it or name the file itself",
        ));
    }
    if !(t.is_file() || t.is_fifo()) {
        return Err(FileError::unsafe_(
            path,
            "is not a regular file; name a file to write",
        ));
    }
    let me = euid();
    if m.uid() != me {
        return Err(FileError::unsafe_(
            path,
            format!(
                "is owned by uid {}, not by you (uid {me}): fsdelta does not write into another \
                 user's file; remove it or name another path",
                m.uid()
            ),
        ));
    }
    Ok(())
}

/// The exclusive temporary [`write_output`] writes beside `path` (`.NAME.PID.tmp`, 0600), created.
fn output_temporary(path: &Path) -> Result<(PathBuf, File), FileError> {
    let name = path
        .file_name()
        .ok_or_else(|| FileError::unsafe_(path, "is not a file name; name a file to write"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.join(&tmp_name),
        None => PathBuf::from(&tmp_name),
    };
    let file = match open(&tmp, Access::CreateNew) {
        // Left by a crashed process of the same pid, or planted: unlinked (never followed).
        Err(FileError::Io { source, .. }) if source.kind() == io::ErrorKind::AlreadyExists => {
            fs::remove_file(&tmp).map_err(|e| FileError::io(&tmp, "cannot remove", e))?;
            open(&tmp, Access::CreateNew)
        }
        other => other,
    }
    .map_err(|e| match e {
        // Named by the output's own path: the temporary is an implementation detail.
        FileError::Io { source, .. } => {
            FileError::io(path, "cannot create a file in its directory", source)
        }
        other => other,
    })?;
    Ok((tmp, file))
}

/// Check now that [`write_output`] will be able to write `path` later (it passes
/// [`check_output`], and its temporary can be created beside it; the temporary is removed
/// again), so that a long run is not lost for an output file it cannot write at the end.
pub fn probe_output(path: &Path) -> Result<(), FileError> {
    check_output(path)?;
    let fifo = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo());
    if is_system_path(path) || fifo {
        return Ok(());
    }
    let (tmp, file) = output_temporary(path)?;
    drop(file);
    let _ = fs::remove_file(&tmp);
    Ok(())
}

/// Open an output file the user named for writing from the start, checked as [`check_output`]
/// says on the open file itself (`O_NOFOLLOW`, so a symlink swapped in after the check is not
/// followed either); a new file gets mode 0600, an existing one of ours is truncated only once
/// checked. For output written as it comes (`fio --status-interval`).
pub fn open_output(path: &Path) -> Result<File, FileError> {
    open_checked_output(path, false)
}

/// [`open_output`] for appending (fs_mark's `-l` log, which fs_mark appends to): an existing
/// file of ours keeps what it holds.
pub fn open_append_output(path: &Path) -> Result<File, FileError> {
    open_checked_output(path, true)
}

fn open_checked_output(path: &Path, append: bool) -> Result<File, FileError> {
    let mut o = OpenOptions::new();
    if append {
        o.append(true);
    } else {
        o.write(true);
    }
    if is_system_path(path) {
        return o
            .truncate(!append)
            .open(path)
            .map_err(|e| FileError::io(path, "cannot open", e));
    }
    check_output(path)?;
    let f = o
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| FileError::io(path, "cannot open", e))?;
    let m = f
        .metadata()
        .map_err(|e| FileError::io(path, "cannot inspect", e))?;
    check_output_meta(path, &m)?;
    if !append && m.is_file() {
        f.set_len(0)
            .map_err(|e| FileError::io(path, "cannot truncate", e))?;
    }
    Ok(f)
}

/// Write a whole output file the user named: checked as [`check_output`] says, then written to
/// an exclusive temporary beside it (`.NAME.PID.tmp`, mode 0600, or the mode of the file it
/// replaces), fsynced and renamed over it, so that a reader never sees half of it and a symlink
/// planted meanwhile is replaced, never followed. A FIFO or a path under `/dev` or `/proc` is
/// written in place.
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    check_output(path)?;
    let existing = fs::symlink_metadata(path).ok();
    if is_system_path(path) || existing.as_ref().is_some_and(|m| m.file_type().is_fifo()) {
        let mut f = open_output(path)?;
        return f
            .write_all(bytes)
            .map_err(|e| FileError::io(path, "cannot write", e));
    }
    let (tmp, mut file) = output_temporary(path)?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let keep_mode = existing
        .filter(|m| m.is_file())
        .map(|m| fs::Permissions::from_mode(m.mode() & 0o777));
    let written = keep_mode
        .map_or(Ok(()), |p| file.set_permissions(p))
        .and_then(|()| file.write_all(bytes))
        .and_then(|()| file.sync_all())
        .map_err(|e| FileError::io(&tmp, "cannot write", e))
        .and_then(|()| {
            fs::rename(&tmp, path)
                .map_err(|e| FileError::io(path, "cannot rename the temporary over", e))
        });
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    if let Ok(d) = File::open(dir.unwrap_or(Path::new("."))) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// `<path><suffix>`: a sibling name (`x.journal` -> `x.journal.tmp`).
pub fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// Replace `path` whole with `bytes`: write an exclusive temporary `<path>.tmp` (mode 0600; one
/// left by a crash is unlinked first, which never follows a symlink), fsync it, rename it over
/// `path` and fsync the directory. A symlink at `path` is replaced, never followed. The caller
/// serialises writers (a lock), as two replacing at once would share the temporary.
pub fn replace(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    let tmp = sibling(path, ".tmp");
    let mut file = match open(&tmp, Access::CreateNew) {
        Err(FileError::Io { source, .. }) if source.kind() == io::ErrorKind::AlreadyExists => {
            fs::remove_file(&tmp).map_err(|e| FileError::io(&tmp, "cannot remove", e))?;
            open(&tmp, Access::CreateNew)?
        }
        Err(FileError::Unsafe { .. }) => {
            // A symlink or a foreign file planted as our temporary: unlink it (never followed).
            fs::remove_file(&tmp).map_err(|e| FileError::io(&tmp, "cannot remove", e))?;
            open(&tmp, Access::CreateNew)?
        }
        other => other?,
    };
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| FileError::io(&tmp, "cannot write", e));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    fs::rename(&tmp, path)
        .map_err(|e| FileError::io(path, "cannot rename the temporary over", e))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && let Ok(d) = File::open(dir)
    {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{PermissionsExt, symlink};

    #[test]
    fn a_symlink_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "keep").unwrap();
        let link = dir.path().join("link");
        symlink(&victim, &link).unwrap();
        for a in [
            Access::Read,
            Access::Append,
            Access::ReadWrite,
            Access::CreateNew,
        ] {
            let e = open(&link, a).unwrap_err();
            if a == Access::CreateNew {
                assert!(matches!(e, FileError::Io { .. }), "{a:?}: {e}");
            } else {
                assert!(e.is_unsafe(), "{a:?}: {e}");
                assert!(e.to_string().contains("symlink"), "{e}");
            }
        }
        replace(&link, b"new").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(fs::read_to_string(&link).unwrap(), "new");
        assert!(
            !fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn new_files_are_private_and_open_modes_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("j");
        drop(open(&p, Access::Append).unwrap());
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
        fs::set_permissions(&p, fs::Permissions::from_mode(0o666)).unwrap();
        let e = open(&p, Access::Read).unwrap_err();
        assert!(
            e.is_unsafe() && e.to_string().contains("writable by others"),
            "{e}"
        );
    }

    #[test]
    fn a_left_temporary_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "keep").unwrap();
        let p = dir.path().join("state");
        symlink(&victim, sibling(&p, ".tmp")).unwrap();
        replace(&p, b"x").unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(fs::read_to_string(&p).unwrap(), "x");
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
    }

    #[test]
    fn outputs_refuse_symlinks_and_others_files_and_are_written_private() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "keep").unwrap();
        let link = dir.path().join("link");
        symlink(&victim, &link).unwrap();
        for e in [
            check_output(&link).unwrap_err(),
            probe_output(&link).unwrap_err(),
            write_output(&link, b"x").unwrap_err(),
            open_output(&link).unwrap_err(),
        ] {
            assert!(e.is_unsafe() && e.to_string().contains("symlink"), "{e}");
        }
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        let new = dir.path().join("new");
        probe_output(&new).unwrap();
        assert!(!new.exists(), "a probe leaves nothing behind");
        write_output(&new, b"report").unwrap();
        assert_eq!(fs::metadata(&new).unwrap().mode() & 0o777, 0o600);
        // A file of ours keeps its mode when replaced.
        fs::set_permissions(&new, fs::Permissions::from_mode(0o644)).unwrap();
        write_output(&new, b"again").unwrap();
        assert_eq!(fs::read_to_string(&new).unwrap(), "again");
        assert_eq!(fs::metadata(&new).unwrap().mode() & 0o777, 0o644);
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            3,
            "no temporary left"
        );
        write_output(Path::new("/dev/null"), b"x").unwrap();
        if euid() == 0 {
            let theirs = dir.path().join("theirs");
            fs::write(&theirs, "theirs").unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
            let e = write_output(&theirs, b"x").unwrap_err();
            assert!(e.to_string().contains("owned by uid 65534"), "{e}");
            assert!(open_output(&theirs).is_err());
            assert_eq!(fs::read_to_string(&theirs).unwrap(), "theirs");
        }
    }

    #[test]
    fn read_regular_refuses_fifos_at_once_and_large_files() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("fifo");
        let c = std::ffi::CString::new(f.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for s in [Symlinks::Refuse, Symlinks::Follow] {
            let e = read_regular(&f, 10, s).unwrap_err();
            assert!(e.to_string().contains("is a FIFO"), "{e}");
        }
        let big = dir.path().join("big");
        fs::write(&big, [b'x'; 11]).unwrap();
        assert!(
            read_regular(&big, 10, Symlinks::Refuse)
                .unwrap_err()
                .to_string()
                .contains("larger than 10 bytes")
        );
        assert_eq!(read_regular(&big, 11, Symlinks::Refuse).unwrap().len(), 11);
        let link = dir.path().join("link");
        symlink(&big, &link).unwrap();
        assert!(
            read_regular(&link, 11, Symlinks::Refuse)
                .unwrap_err()
                .is_unsafe()
        );
        assert_eq!(read_regular(&link, 11, Symlinks::Follow).unwrap().len(), 11);
    }

    #[test]
    fn directories_writable_by_others_are_refused_unless_sticky() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("open");
        fs::create_dir(&d).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(check_dir(&d).unwrap_err().is_unsafe());
        assert!(is_shared_dir(&d));
        fs::set_permissions(&d, fs::Permissions::from_mode(0o1777)).unwrap();
        check_dir(&d).unwrap();
        assert!(is_shared_dir(&d));
        fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
        check_dir(&d).unwrap();
        assert!(!is_shared_dir(&d));
    }
}
