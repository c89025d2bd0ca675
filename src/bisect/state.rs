//! Where a bisection's state and log live between steps and between processes: a directory of
//! its own under fsdelta's state directory (`$XDG_STATE_HOME/fsdelta/bisect/NAME/`, beside the
//! leftover-state file; see `crate::os::state`), holding `state.json` (rewritten atomically after
//! every step) and `log.txt` (appended).
//!
//! Why a file and not the result store: the state changes after every step and is read back
//! whole by `bisect resume`; the store keeps what was measured (every step's runs, labelled
//! with the bisection and the commit, so `fsdelta compare` can re-judge any step), and its rows
//! are immutable once the run ends. The state only points at those runs by label; losing it
//! loses the bookkeeping, never a measurement. This module must never interpret the state.

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The state directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// No state directory.
    #[error("no state directory for bisections: {0}")]
    NoDir(String),
    /// An I/O error on a path.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was done.
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The state file does not parse.
    #[error("{path} is not a bisection state this fsdelta reads: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// No such bisection.
    #[error("no bisection named {0:?}; `fsdelta bisect list` lists them")]
    Unknown(String),
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> StateError {
    let path = path.to_path_buf();
    move |source| StateError::Io { what, path, source }
}

/// The directory of every bisection: `bisect/` beside the leftover-state file.
pub fn root() -> Result<PathBuf, StateError> {
    let file = crate::os::state::default_path().map_err(|e| StateError::NoDir(e.message))?;
    Ok(file
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
        .join("bisect"))
}

/// One bisection's directory.
#[derive(Clone, Debug)]
pub struct Dir {
    /// The directory.
    pub path: PathBuf,
}

impl Dir {
    /// The directory of bisection `name` under `root` (created).
    pub fn create(root: &Path, name: &str) -> Result<Dir, StateError> {
        let path = root.join(name);
        std::fs::create_dir_all(&path).map_err(io("creating", &path))?;
        Ok(Dir { path })
    }

    /// The existing directory of bisection `name` under `root`.
    pub fn open(root: &Path, name: &str) -> Result<Dir, StateError> {
        let path = root.join(name);
        if !path.join("state.json").is_file() {
            return Err(StateError::Unknown(name.to_string()));
        }
        Ok(Dir { path })
    }

    /// The bisection's name (its directory's).
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// Write the state atomically (a temporary file, then rename).
    pub fn save<T: Serialize>(&self, state: &T) -> Result<(), StateError> {
        let text = serde_json::to_string_pretty(state).map_err(|e| StateError::Parse {
            path: self.path.join("state.json"),
            message: e.to_string(),
        })?;
        let tmp = self.path.join("state.json.tmp");
        std::fs::write(&tmp, text).map_err(io("writing", &tmp))?;
        let to = self.path.join("state.json");
        std::fs::rename(&tmp, &to).map_err(io("renaming into", &to))
    }

    /// Read the state.
    pub fn load<T: DeserializeOwned>(&self) -> Result<T, StateError> {
        let path = self.path.join("state.json");
        let text = std::fs::read_to_string(&path).map_err(io("reading", &path))?;
        serde_json::from_str(&text).map_err(|e| StateError::Parse {
            path,
            message: e.to_string(),
        })
    }

    /// The log file's path.
    pub fn log_path(&self) -> PathBuf {
        self.path.join("log.txt")
    }

    /// Append a line (or lines) to the log, prefixed with the UTC time.
    pub fn log(&self, text: &str) -> Result<(), StateError> {
        let stamp = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ");
        self.append(&format!("[{stamp}] {text}"))
    }

    /// Append text to the log as it is (a child's output).
    pub fn append(&self, text: &str) -> Result<(), StateError> {
        let path = self.log_path();
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io("opening", &path))?;
        f.write_all(text.as_bytes())
            .map_err(io("appending to", &path))?;
        if !text.ends_with('\n') {
            f.write_all(b"\n").map_err(io("appending to", &path))?;
        }
        Ok(())
    }
}

/// The bisections under `root`, newest first (by the state file's time), as names.
pub fn list(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut found: Vec<(std::time::SystemTime, String)> = entries
        .flatten()
        .filter_map(|e| {
            let m = e
                .path()
                .join("state.json")
                .metadata()
                .ok()?
                .modified()
                .ok()?;
            Some((m, e.file_name().to_string_lossy().into_owned()))
        })
        .collect();
    found.sort_by(|a, b| b.cmp(a));
    found.into_iter().map(|(_, n)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_and_the_log_appends() {
        let root = tempfile::tempdir().unwrap();
        let d = Dir::create(root.path(), "b1").unwrap();
        d.save(&vec![1, 2, 3]).unwrap();
        assert_eq!(d.load::<Vec<i32>>().unwrap(), vec![1, 2, 3]);
        d.log("one").unwrap();
        d.log("two\n").unwrap();
        d.append("three").unwrap();
        let text = std::fs::read_to_string(d.log_path()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(
            lines[0].starts_with('[') && lines[0].ends_with("] one"),
            "{text}"
        );
        assert!(lines[1].ends_with("] two") && lines[2] == "three", "{text}");
        assert_eq!(Dir::open(root.path(), "b1").unwrap().name(), "b1");
        assert!(matches!(
            Dir::open(root.path(), "nope"),
            Err(StateError::Unknown(_))
        ));
        assert_eq!(list(root.path()), vec!["b1".to_string()]);
    }
}
