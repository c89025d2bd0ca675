//! The command-line edge (being written).

/// Entry point; returns the process exit code.
pub fn main() -> i32 {
    0
}

pub mod fsmark;
