//! Where fsdelta keeps its state between runs: the leftover-state file's path
//! (`crate::site::state::StateFile`), whose directory also holds the store journals that have no
//! writable place beside their database (`crate::store::journal::state_dir`).
//!
//! Why here: the site room and the store both need the one rule, and must not import each other.
//! This module only computes a path; it must never create, open or check anything.

use std::path::PathBuf;

/// No usable location for the state file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatePathError {
    /// The path that cannot be used, or `(none)`.
    pub path: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// The state file of this process's environment: [`locate`] with `$FSDELTA_STATE_FILE`,
/// `$XDG_STATE_HOME`, `$HOME` (empty counts as unset) and whether we are root.
pub fn default_path() -> Result<PathBuf, StatePathError> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    locate(
        var("FSDELTA_STATE_FILE").as_deref(),
        var("XDG_STATE_HOME").as_deref(),
        var("HOME").as_deref(),
        rustix::process::geteuid().is_root(),
    )
}

/// The first of `$FSDELTA_STATE_FILE` (which must be absolute),
/// `$XDG_STATE_HOME/fsdelta/leftovers.json` (when absolute, as the XDG spec requires),
/// `$HOME/.local/state/fsdelta/leftovers.json`, and for root `/var/lib/fsdelta/leftovers.json`.
pub fn locate(
    override_path: Option<&std::ffi::OsStr>,
    xdg_state_home: Option<&std::ffi::OsStr>,
    home: Option<&std::ffi::OsStr>,
    is_root: bool,
) -> Result<PathBuf, StatePathError> {
    if let Some(p) = override_path.map(PathBuf::from) {
        if !p.is_absolute() {
            return Err(StatePathError {
                path: p.display().to_string(),
                message: "FSDELTA_STATE_FILE is a relative path; give an absolute one (the state file must be found again from any directory)".into(),
            });
        }
        return Ok(p);
    }
    if let Some(p) = xdg_state_home
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        return Ok(p.join("fsdelta/leftovers.json"));
    }
    if let Some(p) = home.map(PathBuf::from).filter(|p| p.is_absolute()) {
        return Ok(p.join(".local/state/fsdelta/leftovers.json"));
    }
    if is_root {
        return Ok(PathBuf::from("/var/lib/fsdelta/leftovers.json"));
    }
    Err(StatePathError {
        path: "(none)".into(),
        message: "neither HOME nor XDG_STATE_HOME is set: set FSDELTA_STATE_FILE to an absolute path in a directory only you can write".into(),
    })
}
