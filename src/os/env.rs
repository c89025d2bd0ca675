//! Secrets in fsdelta's own environment: taken out of the process environment as the binary
//! starts, kept in memory for the code that needs them (the PostgreSQL connection code), and so
//! never inherited by anything fsdelta spawns (workload commands, hooks, fio, mkfs, qemu, perf,
//! and whatever is added later).
//!
//! The rule: `FSDELTA_DB` and every variable whose name starts with `PG` (libpq's environment:
//! `PGPASSWORD`, `PGPASSFILE`, `PGSSLKEY`, `PGSSLPASSWORD`, `PGSERVICEFILE`, `PGUSER`, `PGHOST`...)
//! are fsdelta's own. A prefix rather than a list, so that a variable libpq adds later is covered
//! too; the few harmless ones (`PGHOST`, `PGPORT`) go with them, as a workload has no business
//! reaching fsdelta's database.
//!
//! Why one place at start rather than at each spawn: every `Command` inherits the process
//! environment unless told otherwise, and a spawn site added later would not know to scrub.
//! Removing the variables once, before any thread exists, covers every spawn, present and future.
//!
//! Must never hand a taken variable to a child, and never print one.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

/// The variables taken at start, with their values.
static TAKEN: OnceLock<BTreeMap<OsString, OsString>> = OnceLock::new();

/// Whether `name` is one of fsdelta's own variables ([module docs](self)): `FSDELTA_DB` or a name
/// starting with `PG`.
pub fn is_taken_name(name: &OsStr) -> bool {
    name == "FSDELTA_DB" || name.as_bytes().starts_with(b"PG")
}

/// Move every variable [`is_taken_name`] names out of the process environment into memory,
/// where [`var`] finds them. A second call changes nothing.
///
/// # Safety
///
/// No other thread may exist while this runs (removing a variable while another thread reads
/// the environment is undefined behaviour): call it from `main` before anything starts a thread.
pub unsafe fn take_secrets() {
    if TAKEN.get().is_some() {
        return;
    }
    let taken: BTreeMap<OsString, OsString> = std::env::vars_os()
        .filter(|(k, _)| is_taken_name(k))
        .collect();
    for k in taken.keys() {
        // SAFETY: the caller guarantees that this process runs a single thread.
        unsafe { std::env::remove_var(k) };
    }
    let _ = TAKEN.set(taken);
}

/// A variable of fsdelta's environment as it was at start, empty counted as unset: one taken by
/// [`take_secrets`] from memory, anything else (or everything, when nothing was taken, as in a
/// library user or a unit test) from the process environment.
pub fn var_os(name: &str) -> Option<OsString> {
    let v = match TAKEN.get() {
        Some(taken) if is_taken_name(OsStr::new(name)) => taken.get(OsStr::new(name)).cloned(),
        _ => std::env::var_os(name),
    };
    v.filter(|v| !v.is_empty())
}

/// [`var_os`] as UTF-8 (a value that is not is counted as unset).
pub fn var(name: &str) -> Option<String> {
    var_os(name).and_then(|v| v.into_string().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fsdelta_db_and_every_pg_variable_are_taken_and_nothing_else() {
        for n in [
            "FSDELTA_DB",
            "PGPASSWORD",
            "PGPASSFILE",
            "PGSSLKEY",
            "PGSSLPASSWORD",
            "PGSERVICEFILE",
            "PGUSER",
        ] {
            assert!(is_taken_name(OsStr::new(n)), "{n}");
        }
        for n in [
            "PATH",
            "HOME",
            "FSDELTA_STATE_FILE",
            "XPGPASSWORD",
            "pgpassword",
        ] {
            assert!(!is_taken_name(OsStr::new(n)), "{n}");
        }
    }
}
