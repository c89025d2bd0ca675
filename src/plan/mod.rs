//! What to run: built-in suites and the test definitions in them.
//!
//! Why a room of its own: the matrix of configurations x tests x repetitions is decided here,
//! before anything touches a filesystem. This room must never touch the filesystem.

pub mod jobfile;
