//! Process- and file-level helpers that every room may use: the leaf of the import graph.
//!
//! Why a room of its own: several rooms write or replay files in places another user may reach
//! (a store's journal beside a store in a shared directory, the leftover-state file, an output
//! file named on the command line), and each must make the same decisions about symlinks,
//! ownership and modes. Deciding them once keeps them the same everywhere. Likewise the secrets
//! in fsdelta's environment ([`env`]) are taken out of it once, at start, so that no child
//! process inherits them.
//!
//! Must never import from another room of the crate: everything may depend on it, it depends on
//! nothing of ours.

pub mod child;
pub mod env;
pub mod fdtable;
pub mod files;
pub mod input;
pub mod namespace;
pub mod process;
pub mod state;

/// Report a test that cannot run here: prints why, or fails when `FSDELTA_REQUIRE_ALL=1` (CI,
/// where every test must really run).
#[cfg(test)]
pub(crate) fn skip_test(why: &str) {
    if std::env::var("FSDELTA_REQUIRE_ALL").as_deref() == Ok("1") {
        panic!("FSDELTA_REQUIRE_ALL=1 but this test cannot run: {why}");
    }
    eprintln!("skipped: {why}");
}
