//! A scratch directory for one run: created fresh inside a parent directory (by default the current
//! directory, so the run measures the filesystem the user is on), emptied between samples, and
//! removed when dropped, on success, on error and on Ctrl-C (the CLI edge turns signals into a
//! normal return so drops run).
//!
//! Must never remove anything it did not create: it only ever deletes its own `fsdelta-scratch-*`
//! directory.

use super::SiteError;
use super::state::{Record, Resource, StateFile};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// A directory fsdelta created and will remove.
#[derive(Debug)]
pub struct ScratchSite {
    path: PathBuf,
    keep: bool,
    /// Its entry in the state file, when made with [`ScratchSite::create_recorded`].
    record: Option<Record>,
}

impl ScratchSite {
    /// Create `fsdelta-scratch-<pid>-<n>` inside `parent`, checking that it is writable.
    pub fn create_in(parent: &Path) -> Result<ScratchSite, SiteError> {
        ScratchSite::create(parent, None)
    }

    /// Like [`create_in`](ScratchSite::create_in), but recorded in `state` before it is created
    /// (and cleared once removed), so that `fsdelta cleanup` removes it after a kill -9.
    pub fn create_recorded(parent: &Path, state: &StateFile) -> Result<ScratchSite, SiteError> {
        ScratchSite::create(parent, Some(state))
    }

    fn create(parent: &Path, state: Option<&StateFile>) -> Result<ScratchSite, SiteError> {
        let meta = fs::metadata(parent).map_err(|e| SiteError::Unusable {
            path: parent.display().to_string(),
            message: format!("{e}; choose an existing directory with --target"),
        })?;
        if !meta.is_dir() {
            return Err(SiteError::Unusable {
                path: parent.display().to_string(),
                message: "not a directory; choose a directory with --target".into(),
            });
        }
        let parent = &fs::canonicalize(parent).map_err(|e| SiteError::Unusable {
            path: parent.display().to_string(),
            message: format!("{e}; choose an existing directory with --target"),
        })?;
        let pid = std::process::id();
        for n in 0..1000 {
            let path = parent.join(format!("fsdelta-scratch-{pid}-{n}"));
            let record = state
                .map(|s| s.record(Resource::ScratchTree { path: path.clone() }))
                .transpose()?;
            match fs::create_dir(&path) {
                Ok(()) => {
                    return Ok(ScratchSite {
                        path,
                        keep: false,
                        record,
                    });
                }
                Err(e) => {
                    if let Some(r) = record {
                        r.clear()?;
                    }
                    if e.kind() == io::ErrorKind::AlreadyExists {
                        continue;
                    }
                    let hint = match e.raw_os_error() {
                        Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) => {
                            "; the directory is not writable: choose another with --target"
                        }
                        Some(libc::ENOSPC) => "; the filesystem is full",
                        _ => "",
                    };
                    return Err(SiteError::Unusable {
                        path: parent.display().to_string(),
                        message: format!("cannot create a scratch directory: {e}{hint}"),
                    });
                }
            }
        }
        Err(SiteError::Unusable {
            path: parent.display().to_string(),
            message: "1000 leftover fsdelta-scratch directories; remove them".into(),
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A fresh, empty subdirectory for one sample (`sample-N`), replacing any earlier one.
    pub fn fresh_subdir(&self, name: &str) -> Result<PathBuf, SiteError> {
        let dir = self.path.join(name);
        if dir.exists() {
            remove_tree(&dir)?;
        }
        fs::create_dir(&dir).map_err(|source| SiteError::Io {
            op: "mkdir",
            path: dir.display().to_string(),
            source,
        })?;
        Ok(dir)
    }

    /// Empty a sample directory and remove it.
    pub fn discard_subdir(&self, dir: &Path) -> Result<(), SiteError> {
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

fn remove_tree(dir: &Path) -> Result<(), SiteError> {
    fs::remove_dir_all(dir).map_err(|source| SiteError::Io {
        op: "remove",
        path: dir.display().to_string(),
        source,
    })
}

impl Drop for ScratchSite {
    fn drop(&mut self) {
        let removed = self.keep || fs::remove_dir_all(&self.path).is_ok() || !self.path.exists();
        if removed && let Some(r) = self.record.take() {
            let _ = r.clear();
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
            let s = ScratchSite::create_in(parent.path()).unwrap();
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
    fn a_recorded_scratch_dir_is_in_the_state_file_until_removed_and_recovered_after_a_kill() {
        let parent = tempfile::tempdir().unwrap();
        let state = StateFile::new(parent.path().join("state/leftovers.json"));
        let s = ScratchSite::create_recorded(parent.path(), &state).unwrap();
        let path = s.path().to_path_buf();
        let entries = state.entries().unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(
            entries[0].resource,
            Resource::ScratchTree { path: path.clone() }
        );
        drop(s);
        assert!(!path.exists());
        assert!(state.entries().unwrap().is_empty());

        // A kill -9 leaves the directory and its entry; recovery removes the whole tree.
        let mut s = ScratchSite::create_recorded(parent.path(), &state).unwrap();
        let path = s.path().to_path_buf();
        fs::write(s.fresh_subdir("sample-1").unwrap().join("f"), b"x").unwrap();
        s.record = None; // as if the process died: the entry stays
        s.keep();
        drop(s);
        super::super::state::tests_support::make_dead(&state);
        let report = super::super::state::recover(&state).unwrap();
        assert!(!path.exists(), "{report}");
        assert!(state.entries().unwrap().is_empty(), "{report}");
    }

    #[test]
    fn missing_parent_says_how_to_fix() {
        let e = ScratchSite::create_in(Path::new("/nonexistent/fsdelta")).unwrap_err();
        assert!(e.to_string().contains("--target"), "{e}");
    }
}
