//! What to run: built-in suites and suite files (the tests) and config files (the
//! configurations), parsed and validated into plain values. fio job files are the fio wing's
//! (`crate::fio::jobfile`); a suite keeps a fio test's job text as it is.
//!
//! Suite and config files are read into derived raw structs (`raw`: serde with
//! `deny_unknown_fields`, each value kept as written) and then checked by a validation pass that
//! gives the plan's own messages: file, line, key and the fix.
//!
//! Why a room of its own: every mistake in what the user asked for is found here, with its file
//! and line, before anything touches a filesystem. The order in which configurations, tests and
//! repetitions then run is the runner's (`runner::order`). This room never creates, formats or
//! writes anything; it reads only the files it is asked to parse (suites, configs, loadfiles and
//! imports through the bounded reader `crate::os::input`).

pub mod config;
pub mod events;
mod raw;
pub mod suite;
pub mod suitefile;

/// Errors of the plan room.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A test name that the suite does not have.
    #[error("unknown test '{name}' in suite '{suite}'; known tests: {known}")]
    UnknownTest {
        /// What was asked.
        name: String,
        /// The suite.
        suite: String,
        /// Comma-separated known names.
        known: String,
    },
    /// A suite name that is not built in.
    #[error("unknown suite '{name}'; built-in suites: {known}")]
    UnknownSuite {
        /// What was asked.
        name: String,
        /// Comma-separated known names.
        known: String,
    },
    /// Zero repetitions.
    #[error("-n must be at least 1")]
    NoRepetitions,
    /// A scale outside (0, 1].
    #[error("--scale must be above 0 and at most 1 (fsperf's own sizes), not {0}")]
    BadScale(f64),
}
