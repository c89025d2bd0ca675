//! Where a workload runs: scratch directories (and, with a config file, loop images and devices),
//! and the facts of a target (filesystem type, mount options, device) recorded with every sample.
//!
//! Why a room of its own: setting up and always tearing down what fsdelta creates is the one job
//! here, and environment capture must read the truth (/proc/self/mounts, not what was asked).
//! This room must never decide what to run.

pub mod env;
pub mod scratch;

/// Errors of the target room.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The target directory cannot be used.
    #[error("target {path}: {message}")]
    Unusable {
        /// The directory.
        path: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// An I/O error while setting up or tearing down.
    #[error("{op} {path}: {source}")]
    Io {
        /// The operation.
        op: &'static str,
        /// The path.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
}
