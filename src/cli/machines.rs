//! `fsdelta machines`: the fleet's registered machines with their health (a machine whose
//! canary moved beyond what it detects is unhealthy and takes no job), and `machines clear
//! NAME`, the owner's way to put an unhealthy machine back to work.
//!
//! It must never clear a machine on its own: only the command names one, and only the fleet
//! database's owner role can (see `crate::queue::health`).

use super::jobs::{age, clip};
use super::{DbArg, EXIT_OK};
use crate::queue::{Cleared, MachineInfo, Queue};
use anyhow::Result;
use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};
use std::fmt::Write;

/// Options of `fsdelta machines`.
#[derive(Debug, Args)]
pub struct MachinesArgs {
    /// What to do (default: list).
    #[command(subcommand)]
    pub action: Option<MachinesAction>,
    #[command(flatten)]
    pub db: DbArg,
}

/// `fsdelta machines` subcommands.
#[derive(Debug, Subcommand)]
pub enum MachinesAction {
    /// Let an unhealthy machine take jobs again (the fleet database's owner only). Example:
    /// fsdelta machines clear nvme-box --note "noisy neighbour moved"
    Clear {
        /// The machine (agent name).
        name: String,
        /// Why it may run again: kept with its health.
        #[arg(long, default_value = "cleared by hand")]
        note: String,
        /// Forget its earlier canaries: the machine changed for good (a new disk, a new
        /// kernel) and its next canaries build a new history.
        #[arg(long)]
        reset_history: bool,
        #[command(flatten)]
        db: DbArg,
    },
}

/// A machine's health in a word or two, with the reason when unhealthy.
pub fn health_word(m: &MachineInfo) -> String {
    match &m.health {
        Some(h) if !h.healthy => format!("UNHEALTHY: {}", h.reason),
        _ if m.canaries == 0 => "healthy (no canary yet)".into(),
        _ => "healthy".into(),
    }
}

/// The machines as text, one line each.
pub fn render(machines: &[MachineInfo], now: DateTime<Utc>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<16} {:<16} {:<12} {:>5} {:>8}  health",
        "name", "host", "classes", "seen", "canaries"
    );
    for m in machines {
        let _ = writeln!(
            out,
            "{:<16} {:<16} {:<12} {:>5} {:>8}  {}",
            clip(&m.name, 16),
            clip(&m.host, 16),
            clip(&m.classes.join(","), 12),
            age(m.last_heartbeat, now),
            m.canaries,
            health_word(m)
        );
    }
    out
}

/// `fsdelta machines`.
pub fn main(args: &MachinesArgs) -> Result<i32> {
    match &args.action {
        None => {
            let mut q = Queue::open(&args.db.location())?;
            let ms = q.machines()?;
            if ms.is_empty() {
                eprintln!("no machines; start one with `fsdelta agent`");
            } else {
                super::query::write_stdout(&render(&ms, Utc::now()))?;
            }
        }
        Some(MachinesAction::Clear {
            name,
            note,
            reset_history,
            db,
        }) => {
            let db = if db.db.is_some() { db } else { &args.db };
            let mut q = Queue::open(&db.location())?;
            match q.clear_machine(name, *reset_history, note)? {
                Cleared::Cleared => println!("{name} cleared: it takes jobs again"),
                Cleared::WasHealthy => {
                    println!("{name} was not marked unhealthy; nothing to clear")
                }
            }
            if *reset_history {
                println!(
                    "{name}: earlier canaries forgotten; its next canaries build a new history"
                );
            }
        }
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::Health;

    #[test]
    fn the_list_shows_health_and_why() {
        let now = Utc::now();
        let mut m = MachineInfo {
            name: "nvme-box".into(),
            host: "lab3".into(),
            classes: vec!["nvme".into()],
            last_heartbeat: now - chrono::Duration::seconds(30),
            health: None,
            canaries: 0,
        };
        let mut sick = m.clone();
        sick.name = "hdd-box".into();
        sick.canaries = 4;
        sick.health = Some(Health {
            healthy: false,
            reason: "canary moved: canary-files/files_per_sec -48.0 %".into(),
            since: now,
        });
        m.canaries = 5;
        let text = render(&[sick, m], now);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[1].contains("hdd-box") && lines[1].contains("UNHEALTHY: canary moved"),
            "{text}"
        );
        assert!(
            lines[2].contains("nvme-box") && lines[2].ends_with("healthy"),
            "{text}"
        );
        assert!(lines[2].contains("30s"), "{text}");
    }
}
