//! Which process made something: a pid with its start time, because a pid alone can be reused.
//! The leftover-state file (`crate::site::state`), the store's journals and the run claims of
//! SQLite and PostgreSQL all record an [`Owner`] and ask whether it still runs.
//!
//! Why here: it is a fact about processes, used by three rooms that must not import each other.
//! It must never signal, wait for or otherwise act on the process it describes.

use serde::{Deserialize, Serialize};
use std::fs;

/// The process that created an entry: a pid alone could be reused, so its start time (clock
/// ticks since boot, field 22 of /proc/PID/stat) comes with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Process id.
    pub pid: u32,
    /// Start time in clock ticks since boot.
    pub start_time: u64,
}

impl Owner {
    /// This process.
    pub fn current() -> Owner {
        let pid = std::process::id();
        Owner {
            pid,
            start_time: start_time_of(pid).unwrap_or(0),
        }
    }

    /// Whether this process still runs.
    pub fn is_alive(&self) -> bool {
        start_time_of(self.pid) == Some(self.start_time)
    }
}

fn start_time_of(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start_time(&stat)
}

/// Field 22 of /proc/PID/stat; the command name (field 2) may hold spaces and parentheses, so
/// count from the last ')'.
fn parse_start_time(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_survives_odd_command_names() {
        let stat =
            "1234 (a b) c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 100";
        assert_eq!(parse_start_time(stat), Some(98765));
        assert!(Owner::current().is_alive());
        assert!(
            !Owner {
                pid: std::process::id(),
                start_time: 1
            }
            .is_alive()
        );
    }
}
