//! Where a sample runs, the "site": a scratch directory, or a configuration of a config file
//! (loop image, block device, tmpfs, existing directory), and the facts of a site (filesystem
//! type, mount options, device) recorded with every sample. The command line and the messages
//! call it the target (`--target DIR`); in code it is a site everywhere: [`ConfiguredSite`],
//! [`scratch::ScratchSite`], `crate::vm::VmSite` (a configuration whose repetitions boot a
//! kernel), `crate::vm::guest::GuestSite` (inside such a guest), and the run loop's
//! `crate::runner::Site` over all four. (The room was `target/`, a name that tools and globs
//! skipping Cargo's build folder also skipped.)
//!
//! Why a room of its own: setting up and always tearing down what fsdelta creates is the one job
//! here, and environment capture must read the truth (/proc/self/mounts, not what was asked).
//! This room must never decide what to run.
//!
//! With a config file: [`ConfiguredSite`] makes one configuration real (loop image or block
//! device, mkfs, mount, tmpfs or existing directory), `crate::probe::blockstat` reads the device
//! counters and drops caches, [`state`] records everything created so that
//! [`state::recover_leftovers`] can undo it after a kill -9.

pub mod configured;
pub mod device;
pub mod env;
pub mod holders;
pub mod loopdev;
pub mod mkfs;
pub mod mount;
pub mod scratch;
pub mod state;

pub use configured::{ConfiguredSite, Prepared, configured_sites};
pub use state::{RecoveryReport, StateFile, recover_leftovers};

/// Errors of the site room (their text says "target", as the command line does).
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
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
    /// "busy") after the wait. Separate from [`SiteError::Refused`] so that a loop device
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
        error: Box<SiteError>,
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

impl From<crate::probe::blockstat::BlockStatError> for SiteError {
    fn from(e: crate::probe::blockstat::BlockStatError) -> Self {
        use crate::probe::blockstat::BlockStatError as B;
        match e {
            B::Io { op, path, source } => SiteError::Io { op, path, source },
            B::Unusable { path, message } => SiteError::Unusable { path, message },
        }
    }
}
