//! Where a workload runs: scratch directories (and, with a config file, loop images and devices),
//! and the facts of a target (filesystem type, mount options, device) recorded with every sample.
//!
//! Why a room of its own: setting up and always tearing down what fsdelta creates is the one job
//! here, and environment capture must read the truth (/proc/self/mounts, not what was asked).
//! This room must never decide what to run.
//!
//! With a config file: [`configured::Target`] makes one configuration real (loop image or block
//! device, mkfs, mount, tmpfs or existing directory), [`blockstat`] reads the device counters
//! and drops caches, [`state`] records everything created so that [`state::recover_leftovers`]
//! can undo it after a kill -9.

pub mod blockstat;
pub mod configured;
pub mod device;
pub mod env;
pub mod holders;
pub mod loopdev;
pub mod mkfs;
pub mod mount;
pub mod scratch;
pub mod state;

pub use configured::{Prepared, Target, targets};
pub use state::{RecoveryReport, StateFile, recover_leftovers};

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
    /// The mkfs program for a configured filesystem is not installed.
    #[error(
        "{program} not found: install the Debian package {package} (apt-get install {package})"
    )]
    MkfsMissing {
        /// The program (`mkfs.xfs`).
        program: String,
        /// The Debian package that has it (`xfsprogs`).
        package: String,
    },
    /// A safety check refused to format a device.
    #[error("refusing to format {device}: {reason}")]
    Refused {
        /// The device as configured.
        device: String,
        /// Why, and what to do instead.
        reason: String,
    },
    /// The device to format stayed busy (claimed exclusively by someone else, or mkfs said
    /// "busy") after the wait. Separate from [`TargetError::Refused`] so that a loop device
    /// fsdelta attached itself can be given up for a fresh one; the message names the holders.
    #[error("{message}")]
    Busy {
        /// The device.
        device: String,
        /// The whole message: what was refused or failed, who holds it, how to fix it.
        message: String,
    },
    /// A command fsdelta ran (mkfs, a before/after hook) failed.
    #[error("{what} failed ({status}): {command}: {output}")]
    CommandFailed {
        /// Which command (`mkfs`, `config 'x': before`).
        what: String,
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// The tail of its output, and how to fix it.
        output: String,
    },
    /// An error of one configuration of a config file. The inner error is part of the message,
    /// not a `source` (anyhow would print it twice).
    #[error("config '{name}' (line {line}): {error}")]
    Config {
        /// The configuration's name.
        name: String,
        /// Its `[[config]]` line.
        line: usize,
        /// What went wrong.
        error: Box<TargetError>,
    },
    /// The leftover-state file cannot be used.
    #[error("state file {path}: {message}")]
    State {
        /// The state file.
        path: String,
        /// What is wrong and how to fix it.
        message: String,
    },
}

/// Report a test that cannot run here: prints why, or fails when `FSDELTA_REQUIRE_ALL=1` (CI,
/// where every test must really run).
#[cfg(test)]
pub(crate) fn skip_test(why: &str) {
    if std::env::var("FSDELTA_REQUIRE_ALL").as_deref() == Ok("1") {
        panic!("FSDELTA_REQUIRE_ALL=1 but this test cannot run: {why}");
    }
    eprintln!("skipped: {why}");
}
