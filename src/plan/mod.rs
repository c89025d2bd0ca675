//! What to run: built-in suites and the test definitions in them.
//!
//! Why a room of its own: the matrix of configurations x tests x repetitions is decided here,
//! before anything touches a filesystem. This room must never touch the filesystem (it only
//! reads the input files it is given, through [`input`]).

pub mod config;
pub mod input;
pub mod jobfile;
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
