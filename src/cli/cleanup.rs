//! `fsdelta cleanup`: undo what an fsdelta killed with -9 (or a power cut) left behind — mounts,
//! loop devices, images, directories — as named by the leftover-state file, and say what was done.
//!
//! Why a subcommand: every start of fsdelta already recovers (`site::recover_leftovers`), but
//! a user who sees a stray loop device wants to clean up without starting a run. This edge only
//! prints; it must never undo anything itself: the target room decides what still matches.

use crate::site::state::{StateFile, recover};
use std::io::Write;

/// Entry point of `fsdelta cleanup`; returns the exit code (0 done or nothing to do, 2 when
/// something could not be undone).
pub fn main() -> i32 {
    let state = StateFile::default_location();
    let code = run(&state, &mut std::io::stdout(), &mut std::io::stderr());
    let db = super::DbArg {
        db: crate::os::env::var("FSDELTA_DB"),
    }
    .location();
    let code2 = abort_orphans(&db, &mut std::io::stdout(), &mut std::io::stderr());
    code.max(code2)
}

/// Mark the runs in the store at `db` whose fsdelta is gone as aborted, and say so. A SQLite
/// store that does not exist is not created; a PostgreSQL store's schema is brought up to date.
/// Opening it replays its journals (`store::journal`); a journal that is not ours (another
/// user's, a symlink) is not replayed, and the message says why.
pub fn abort_orphans(db: &str, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let pg = crate::store::Backend::of(db) == crate::store::Backend::Postgres;
    if db.is_empty() || !(pg || std::path::Path::new(db).exists()) {
        return 0;
    }
    let opened = crate::store::open_replaying(db);
    if let Ok((_, replayed)) = &opened
        && let Some(m) = replayed.message(&crate::store::journals_for(db).primary)
    {
        let _ = writeln!(err, "fsdelta cleanup: {m}");
    }
    match opened.and_then(|(mut s, _)| s.abort_orphaned_runs()) {
        Ok(ids) => {
            for id in ids {
                let _ = writeln!(
                    out,
                    "run {id} was left running by an fsdelta that is gone: marked aborted"
                );
            }
            0
        }
        Err(e) => {
            let _ = writeln!(err, "fsdelta cleanup: {e}");
            2
        }
    }
}

/// Recover from `state`, writing the report to `out` and problems to `err`.
pub fn run(state: &StateFile, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    match recover(state) {
        Ok(report) if report.is_empty() => {
            let _ = writeln!(
                out,
                "nothing to clean up (state file {})",
                state.path().display()
            );
            0
        }
        Ok(report) => {
            let _ = write!(out, "{report}");
            if report.failed.is_empty() {
                0
            } else {
                let _ = writeln!(
                    err,
                    "fsdelta cleanup: {} leftover(s) could not be undone; they stay in {} for the next attempt",
                    report.failed.len(),
                    state.path().display()
                );
                2
            }
        }
        Err(e) => {
            let _ = writeln!(err, "fsdelta cleanup: {e}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn cleanup_says_what_it_did_and_then_that_nothing_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateFile::new(dir.path().join("leftovers.json"));
        let base = dir.path().join(format!("cfg.{}", std::process::id()));
        fs::create_dir(&base).unwrap();
        let image = base.join("image");
        fs::write(&image, b"x").unwrap();
        // Entries of a process that no longer exists (start time 1 is never this process's).
        let json = format!(
            r#"{{"version":1,"entries":[{{"id":1,"owner":{{"pid":{0},"start_time":1}},"kind":"dir","path":"{1}"}},{{"id":2,"owner":{{"pid":{0},"start_time":1}},"kind":"file","path":"{2}"}}]}}"#,
            std::process::id(),
            base.display(),
            image.display()
        );
        fs::write(state.path(), json).unwrap();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        assert_eq!(run(&state, &mut out, &mut err), 0);
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.contains(&format!("removed {}", image.display())),
            "{out}"
        );
        assert!(!image.exists() && !base.exists());
        let mut out = Vec::new();
        assert_eq!(run(&state, &mut out, &mut err), 0);
        assert!(
            String::from_utf8(out)
                .unwrap()
                .starts_with("nothing to clean up")
        );
        assert!(err.is_empty());
    }

    #[test]
    fn an_unreadable_state_file_is_an_error_that_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateFile::new(dir.path().join("leftovers.json"));
        fs::write(state.path(), "{not json").unwrap();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        assert_eq!(run(&state, &mut out, &mut err), 2);
        let err = String::from_utf8(err).unwrap();
        assert!(err.contains("delete it"), "{err}");
    }
}
