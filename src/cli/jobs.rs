//! `fsdelta jobs`: the fleet's queue as a list (state, agent, age, run, verdict), `jobs cancel
//! ID` and `jobs reap` (requeue the jobs of agents that stopped heartbeating).

use super::{DbArg, EXIT_OK};
use crate::queue::{Cancelled, JobInfo, JobState, Queue};
use anyhow::Result;
use chrono::{DateTime, Utc};
use clap::{Args, Subcommand, ValueEnum};
use std::fmt::Write;

/// A job state on the command line.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum StateArg {
    /// Waiting for an agent.
    Queued,
    /// Being run.
    Running,
    /// Ran.
    Done,
    /// Could not run.
    Failed,
    /// Cancelled before it ran.
    Cancelled,
    /// Cancelled while running.
    Aborted,
}

impl From<StateArg> for JobState {
    fn from(s: StateArg) -> JobState {
        match s {
            StateArg::Queued => JobState::Queued,
            StateArg::Running => JobState::Running,
            StateArg::Done => JobState::Done,
            StateArg::Failed => JobState::Failed,
            StateArg::Cancelled => JobState::Cancelled,
            StateArg::Aborted => JobState::Aborted,
        }
    }
}

/// Options of `fsdelta jobs`.
#[derive(Debug, Args)]
pub struct JobsArgs {
    /// What to do (default: list).
    #[command(subcommand)]
    pub action: Option<JobsAction>,
    /// Only jobs in this state (repeatable).
    #[arg(long = "state", value_enum)]
    pub states: Vec<StateArg>,
    /// At most this many jobs, newest first.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    #[command(flatten)]
    pub db: DbArg,
}

/// `fsdelta jobs` subcommands.
#[derive(Debug, Subcommand)]
pub enum JobsAction {
    /// Cancel a job: a queued one never runs; a running one stops its sample like Ctrl-C and
    /// ends aborted. Example: fsdelta jobs cancel 42
    Cancel {
        /// The job id.
        id: i64,
        #[command(flatten)]
        db: DbArg,
    },
    /// Requeue the jobs whose agents stopped heartbeating (agents do this too, before each
    /// claim), and mark their partial runs aborted. Example: fsdelta jobs reap
    Reap {
        #[command(flatten)]
        db: DbArg,
    },
}

pub(crate) fn age(t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let s = (now - t).num_seconds().max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

pub(crate) fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(n.saturating_sub(1)).collect();
        c.push('~');
        c
    }
}

/// The queue as text, one line per job.
pub fn render(jobs: &[JobInfo], now: DateTime<Utc>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>5}  {:<9} {:<14} {:>4}  {:<14} {:>6}  verdict / error",
        "id", "state", "agent", "age", "label", "run"
    );
    for j in jobs {
        let placed = match (&j.agent, &j.class, &j.host) {
            (Some(a), _, _) => a.clone(),
            (None, _, Some(h)) => format!("host:{h}"),
            (None, Some(c), None) => format!("class:{c}"),
            _ => "any".into(),
        };
        let note = match (&j.verdict, &j.error) {
            (Some(v), Some(e)) => format!("{v}; {e}"),
            (Some(v), None) => v.clone(),
            (None, Some(e)) => e.clone(),
            (None, None) if j.attempts > 1 => format!("attempt {}", j.attempts),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "{:>5}  {:<9} {:<14} {:>4}  {:<14} {:>6}  {}",
            j.id,
            j.state.as_str(),
            clip(&placed, 14),
            age(j.submitted_at, now),
            clip(&j.label, 14),
            j.run_id
                .map(|r| r.to_string())
                .unwrap_or_else(|| "-".into()),
            clip(&note, 60)
        );
    }
    out
}

/// The machines' health under the jobs: `machines: a healthy, b UNHEALTHY (why)`; empty when
/// none is registered.
pub fn machines_line(machines: &[crate::queue::MachineInfo]) -> String {
    if machines.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = machines
        .iter()
        .map(|m| match &m.health {
            Some(h) if !h.healthy => format!("{} UNHEALTHY ({})", m.name, clip(&h.reason, 80)),
            _ => format!("{} healthy", m.name),
        })
        .collect();
    format!(
        "\nmachines: {}{}\n",
        parts.join(", "),
        if machines.iter().any(|m| !m.healthy()) {
            " (an unhealthy machine takes no jobs until `fsdelta machines clear NAME`)"
        } else {
            ""
        }
    )
}

/// `fsdelta jobs`.
pub fn main(args: &JobsArgs) -> Result<i32> {
    match &args.action {
        None => {
            let mut q = Queue::open(&args.db.location())?;
            let states: Vec<JobState> = args.states.iter().map(|s| (*s).into()).collect();
            let jobs = q.list(&states, args.limit)?;
            let machines = q.machines()?;
            let mut text = String::new();
            if jobs.is_empty() {
                eprintln!("no jobs; submit one with `fsdelta submit`");
            } else {
                text.push_str(&render(&jobs, Utc::now()));
            }
            text.push_str(&machines_line(&machines));
            super::query::write_stdout(&text)?;
        }
        Some(JobsAction::Cancel { id, db }) => {
            let db = if db.db.is_some() { db } else { &args.db };
            let mut q = Queue::open(&db.location())?;
            match q.cancel(*id)? {
                Cancelled::Dequeued => println!("job {id} cancelled; it will not run"),
                Cancelled::Stopping => println!(
                    "job {id} is running: its agent was asked to stop it (it ends aborted, its finished samples kept)"
                ),
            }
        }
        Some(JobsAction::Reap { db }) => {
            let db = if db.db.is_some() { db } else { &args.db };
            let mut q = Queue::open(&db.location())?;
            let reaped = q.reap()?;
            if reaped.is_empty() {
                println!("no job has a silent agent");
            }
            for r in reaped {
                println!(
                    "job {}: agent {} stopped heartbeating; now {}{}",
                    r.id,
                    r.agent.as_deref().unwrap_or("?"),
                    r.state,
                    r.run_id
                        .map(|id| format!(", run {id} marked aborted"))
                        .unwrap_or_default()
                );
            }
        }
    }
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_shows_state_agent_age_run_and_verdict() {
        let now = Utc::now();
        let j = JobInfo {
            id: 7,
            state: JobState::Done,
            submitted_at: now - chrono::Duration::seconds(125),
            claimed_at: None,
            finished_at: None,
            agent: Some("nvme-box".into()),
            class: Some("nvme".into()),
            host: None,
            label: "6.18-rc1".into(),
            suite_name: "quick".into(),
            run_id: Some(12),
            verdict: Some("no regression".into()),
            error: None,
            attempts: 1,
            history: String::new(),
        };
        let mut q = j.clone();
        q.id = 8;
        q.state = JobState::Queued;
        q.agent = None;
        q.run_id = None;
        q.verdict = None;
        let text = render(&[q, j], now);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(
            lines[1].contains("queued") && lines[1].contains("class:nvme"),
            "{text}"
        );
        assert!(
            lines[2].contains("nvme-box") && lines[2].contains("2m"),
            "{text}"
        );
        assert!(
            lines[2].contains("12") && lines[2].contains("no regression"),
            "{text}"
        );
    }
}
