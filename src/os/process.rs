//! Which process made something: a pid with its start time, because a pid alone can be reused.
//! The leftover-state file (`crate::site::state`), the store's journals and the run claims of
//! SQLite and PostgreSQL all record an [`Owner`] and ask whether it still runs.
//!
//! Also whether a process is on its way out ([`is_exiting`]): `fsdelta cleanup` lets the
//! children of a killed fsdelta finish dying before it judges what they held.
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

/// Whether process `pid` is on its way out: a zombie, in the kernel's exit path (`PF_EXITING`,
/// field 9 of /proc/PID/stat), or with a SIGKILL pending (a child killed because its fsdelta
/// died, see `os::child`). A process that is gone counts as exiting.
pub fn is_exiting(pid: u32) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    stat_says_exiting(&stat) || status_has_kill_pending(&status)
}

/// The kernel's PF_EXITING task flag.
const PF_EXITING: u64 = 0x4;

fn stat_says_exiting(stat: &str) -> bool {
    let Some(mut fields) = fields_after_name(stat) else {
        return false;
    };
    let state = fields.next().unwrap_or_default();
    // After the state: ppid, pgrp, session, tty_nr, tpgid, then flags (field 9).
    let flags = fields
        .nth(5)
        .and_then(|f| f.parse::<u64>().ok())
        .unwrap_or(0);
    matches!(state, "Z" | "X" | "x") || flags & PF_EXITING != 0
}

fn status_has_kill_pending(status: &str) -> bool {
    let kill_bit = 1u64 << (libc::SIGKILL - 1);
    status.lines().any(|l| {
        l.strip_prefix("SigPnd:")
            .or_else(|| l.strip_prefix("ShdPnd:"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .is_some_and(|mask| mask & kill_bit != 0)
    })
}

/// Field 22 of /proc/PID/stat; the command name (field 2) may hold spaces and parentheses, so
/// count from the last ')'.
fn parse_start_time(stat: &str) -> Option<u64> {
    fields_after_name(stat)?.nth(19)?.parse().ok()
}

/// The fields of a /proc/PID/stat line after the command name (field 3, the state, first).
fn fields_after_name(stat: &str) -> Option<std::str::SplitWhitespace<'_>> {
    Some(stat[stat.rfind(')')? + 1..].split_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exiting_is_read_from_state_flags_and_pending_kill() {
        let running = "7 (mkfs.xfs) D 1 7 7 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765";
        let exiting = "7 (mkfs.xfs) D 1 7 7 0 -1 4194564 100 0 0 0 1 2 0 0 20 0 1 0 98765";
        let zombie = "7 (a) b) Z 1 7 7 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765";
        assert!(!stat_says_exiting(running));
        assert!(stat_says_exiting(exiting));
        assert!(stat_says_exiting(zombie));
        let pending = "Name:\tmkfs.xfs\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000100\n";
        let other = "Name:\tmkfs.xfs\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000004000\n";
        assert!(status_has_kill_pending(pending));
        assert!(!status_has_kill_pending(other));
        assert!(!is_exiting(std::process::id()));
    }

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
