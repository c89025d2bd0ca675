//! Alerts and their triage (issue 40): what `fsdelta serve`'s inbox lists, kept in the store so
//! that every viewer of a lab's store sees the same states.
//!
//! Why a store record: a change point of a metric's history, or a REGRESSED verdict of a job's
//! baseline comparison, is found again every time the history is read; whether somebody looked
//! at it (acknowledged), found it wrong (invalid), knew it was coming (expected: the history
//! stops flagging it) or fixed it is a human fact that must outlive the process that showed it.
//! An alert is written once per key ([`NewAlert::key`]: the same change found again is the same
//! alert), and its triage is a state with a note, who and when.
//!
//! The types here are the store's; the backends (SQLite schema 9, PostgreSQL schema 8) keep
//! them in a table `alerts`. This module must never compute statistics (the finding of a change
//! is `compare`'s) nor decide what becomes an alert (the server's sweep does).

use crate::model::RunId;
use chrono::{DateTime, Utc};
use serde::Serialize;

/// An alert's id in its store.
pub type AlertId = i64;

/// What raised an alert.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertKind {
    /// A change point of a metric's history (E-divisive, as `fsdelta history`).
    ChangePoint,
    /// A REGRESSED verdict of a job's comparison with its baseline.
    Regressed,
}

impl AlertKind {
    /// Its name at rest and in URLs.
    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::ChangePoint => "change_point",
            AlertKind::Regressed => "regressed",
        }
    }

    /// The kind a stored name names.
    pub fn parse(s: &str) -> Option<AlertKind> {
        match s {
            "change_point" => Some(AlertKind::ChangePoint),
            "regressed" => Some(AlertKind::Regressed),
            _ => None,
        }
    }
}

/// Where an alert is in its triage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertState {
    /// Nobody looked at it yet (untriaged).
    New,
    /// Somebody looked at it and is on it.
    Acknowledged,
    /// Not a real change (noise, a broken run).
    Invalid,
    /// A known shift (a change meant to happen): the history stops flagging it.
    Expected,
    /// The cause was fixed.
    Fixed,
}

impl AlertState {
    /// Every state, in triage order.
    pub const ALL: [AlertState; 5] = [
        AlertState::New,
        AlertState::Acknowledged,
        AlertState::Invalid,
        AlertState::Expected,
        AlertState::Fixed,
    ];

    /// Its name at rest, in URLs and forms.
    pub fn as_str(self) -> &'static str {
        match self {
            AlertState::New => "new",
            AlertState::Acknowledged => "acknowledged",
            AlertState::Invalid => "invalid",
            AlertState::Expected => "expected",
            AlertState::Fixed => "fixed",
        }
    }

    /// The state a name names (`None` for anything else).
    pub fn parse(s: &str) -> Option<AlertState> {
        AlertState::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

/// An alert as it is raised.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NewAlert {
    /// What makes it the same alert when it is found again (kind, machine, configuration,
    /// test, metric and the run where the change shows); unique in a store.
    pub key: String,
    /// What raised it.
    pub kind: AlertKind,
    /// The machine (host name) the runs are of.
    pub machine: String,
    /// The configuration.
    pub config: String,
    /// The test.
    pub test: String,
    /// The metric.
    pub metric: String,
    /// The size of the change: the relative change of the center, as a fraction (-0.2 is
    /// 20 % lower).
    pub size: f64,
    /// The metric's unit, as shown.
    pub unit: String,
    /// When the change was measured (the start of the first run after it).
    pub detected_at: DateTime<Utc>,
    /// The run before the change (the last of the segment before it, or the baseline).
    pub before_run: RunId,
    /// The run after the change (the first of the segment after it, or the current run).
    pub after_run: RunId,
}

/// An alert as stored, with its triage.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Alert {
    /// Its id.
    pub id: AlertId,
    /// What was raised.
    pub alert: NewAlert,
    /// Its state.
    pub state: AlertState,
    /// The triage note (empty when none).
    pub note: String,
    /// Who triaged it last (empty when nobody).
    pub who: String,
    /// When it was triaged last.
    pub triaged_at: Option<DateTime<Utc>>,
}

/// Which alerts [`super::Store::alerts`] lists. Every field narrows; the default lists all.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AlertFilter {
    /// Only this machine.
    pub machine: Option<String>,
    /// Only this test.
    pub test: Option<String>,
    /// Only this state.
    pub state: Option<AlertState>,
    /// At most this many.
    pub limit: Option<usize>,
}

/// A triage decision: the new state, a note, who and when.
#[derive(Clone, Debug, PartialEq)]
pub struct Triage {
    /// The new state.
    pub state: AlertState,
    /// Why (may be empty).
    pub note: String,
    /// Who decided.
    pub who: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// The longest triage note kept, in bytes; a longer one is refused (not cut).
pub const MAX_NOTE: usize = 4000;

/// The longest "who" kept, in bytes.
pub const MAX_WHO: usize = 200;

/// Check a triage before it is written: bounded note and who, no control characters in who.
pub fn check_triage(t: &Triage) -> Result<(), super::StoreError> {
    if t.note.len() > MAX_NOTE {
        return Err(super::StoreError::Unsupported(format!(
            "a triage note is at most {MAX_NOTE} bytes (this one is {}); shorten it",
            t.note.len()
        )));
    }
    if t.who.len() > MAX_WHO || t.who.chars().any(char::is_control) {
        return Err(super::StoreError::Unsupported(format!(
            "who triaged is a name of at most {MAX_WHO} bytes without control characters"
        )));
    }
    Ok(())
}
