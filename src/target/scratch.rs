//! A scratch directory for one run: created fresh inside a parent directory (by default the current
//! directory, so the run measures the filesystem the user is on), emptied between samples, and
//! removed when dropped, on success, on error and on Ctrl-C (the CLI edge turns signals into a
//! normal return so drops run).
//!
//! Must never remove anything it did not create: it only ever deletes its own `fsdelta-scratch-*`
//! directory.

use super::TargetError;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// A directory fsdelta created and will remove.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
    keep: bool,
}

impl ScratchDir {
    /// Create `fsdelta-scratch-<pid>-<n>` inside `parent`, checking that it is writable.
    pub fn create_in(parent: &Path) -> Result<ScratchDir, TargetError> {
        let meta = fs::metadata(parent).map_err(|e| TargetError::Unusable {
            path: parent.display().to_string(),
            message: format!("{e}; choose an existing directory with --target"),
        })?;
        if !meta.is_dir() {
            return Err(TargetError::Unusable {
                path: parent.display().to_string(),
                message: "not a directory; choose a directory with --target".into(),
            });
        }
        let pid = std::process::id();
        for n in 0..1000 {
            let path = parent.join(format!("fsdelta-scratch-{pid}-{n}"));
            match fs::create_dir(&path) {
                Ok(()) => {
                    return Ok(ScratchDir { path, keep: false });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    let hint = match e.raw_os_error() {
                        Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => {
                            "; the directory is not writable: choose another with --target"
                        }
                        Some(libc::ENOSPC) => "; the filesystem is full",
                        _ => "",
                    };
                    return Err(TargetError::Unusable {
                        path: parent.display().to_string(),
                        message: format!("cannot create a scratch directory: {e}{hint}"),
                    });
                }
            }
        }
        Err(TargetError::Unusable {
            path: parent.display().to_string(),
            message: "1000 leftover fsdelta-scratch directories; remove them".into(),
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A fresh, empty subdirectory for one sample (`sample-N`), replacing any earlier one.
    pub fn fresh_subdir(&self, name: &str) -> Result<PathBuf, TargetError> {
        let dir = self.path.join(name);
        if dir.exists() {
            remove_tree(&dir)?;
        }
        fs::create_dir(&dir).map_err(|source| TargetError::Io {
            op: "mkdir",
            path: dir.display().to_string(),
            source,
        })?;
        Ok(dir)
    }

    /// Empty a sample directory and remove it.
    pub fn discard_subdir(&self, dir: &Path) -> Result<(), TargetError> {
        if dir.starts_with(&self.path) && dir.exists() {
            remove_tree(dir)?;
        }
        Ok(())
    }

    /// Keep the directory when dropped (for debugging).
    pub fn keep(&mut self) {
        self.keep = true;
    }
}

fn remove_tree(dir: &Path) -> Result<(), TargetError> {
    fs::remove_dir_all(dir).map_err(|source| TargetError::Io {
        op: "remove",
        path: dir.display().to_string(),
        source,
    })
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_is_created_and_removed() {
        let parent = tempfile::tempdir().unwrap();
        let path;
        {
            let s = ScratchDir::create_in(parent.path()).unwrap();
            path = s.path().to_path_buf();
            let sub = s.fresh_subdir("sample-1").unwrap();
            fs::write(sub.join("f"), b"x").unwrap();
            let again = s.fresh_subdir("sample-1").unwrap();
            assert!(!again.join("f").exists());
            assert!(path.is_dir());
        }
        assert!(!path.exists());
    }

    #[test]
    fn missing_parent_says_how_to_fix() {
        let e = ScratchDir::create_in(Path::new("/nonexistent/fsdelta")).unwrap_err();
        assert!(e.to_string().contains("--target"), "{e}");
    }
}
