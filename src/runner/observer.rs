//! What a run tells the outside while it goes: events to an [`Observer`].
//!
//! Why a file of its own: the run loop never prints. The command line draws bars or lines from
//! these events, a fleet agent logs them, a test records them; each is one implementation of
//! [`Observer`]. An observer must be cheap and must never block the run.

use crate::model::{NewSample, RunId};
use crate::workload::ProgressSink;
use std::sync::Mutex;

/// One thing that happened in a run.
#[derive(Clone, Debug)]
pub enum Event {
    /// The run was recorded in the store and its first sample is about to start.
    RunStarted {
        /// Its id.
        run_id: RunId,
        /// Its label.
        label: String,
        /// Suite name.
        suite: String,
        /// Number of tests.
        tests: usize,
        /// Configuration names.
        configs: Vec<String>,
        /// Repetitions asked for.
        repetitions: u32,
    },
    /// A sample starts.
    SampleStarted {
        /// Configuration.
        config: String,
        /// Test.
        test: String,
        /// Repetition, from 1.
        repetition: u32,
        /// Repetitions planned so far (grows with until-confident).
        of: u32,
    },
    /// A running workload entered a phase ("iteration 2/3").
    Phase {
        /// Configuration.
        config: String,
        /// Test.
        test: String,
        /// The phase.
        what: String,
    },
    /// A sample was measured and stored.
    SampleEnded {
        /// Repetitions planned so far.
        of: u32,
        /// The stored sample (`crate::report::text::headline` shows its headline number).
        sample: Box<NewSample>,
    },
    /// A sample failed; it is stored as failed with its error.
    SampleFailed {
        /// Repetitions planned so far.
        of: u32,
        /// The stored sample.
        sample: Box<NewSample>,
    },
    /// A test cannot run on a configuration; nothing was measured or stored.
    Skipped {
        /// Configuration.
        config: String,
        /// Test.
        test: String,
        /// Repetition.
        repetition: u32,
        /// Repetitions planned so far.
        of: u32,
        /// Why.
        why: String,
    },
    /// Something the user should know; the run goes on.
    Warning(String),
}

/// Receives a run's events.
pub trait Observer: Sync {
    /// One event.
    fn event(&self, e: Event);
}

/// An observer that ignores everything.
pub struct Silent;

impl Observer for Silent {
    fn event(&self, _e: Event) {}
}

/// An observer that keeps every event, for tests.
#[derive(Default)]
pub struct Recorder(Mutex<Vec<Event>>);

impl Recorder {
    /// Every event so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl Observer for Recorder {
    fn event(&self, e: Event) {
        if let Ok(mut v) = self.0.lock() {
            v.push(e);
        }
    }
}

/// The [`ProgressSink`] handed to a workload: its phases become [`Event::Phase`].
pub(crate) struct PhaseSink<'a> {
    pub(crate) observer: &'a dyn Observer,
    pub(crate) config: &'a str,
    pub(crate) test: &'a str,
}

impl ProgressSink for PhaseSink<'_> {
    fn phase(&self, what: &str) {
        self.observer.event(Event::Phase {
            config: self.config.to_string(),
            test: self.test.to_string(),
            what: what.to_string(),
        });
    }
    fn warning(&self, what: &str) {
        self.observer.event(Event::Warning(format!(
            "{} / {}: {what}",
            self.config, self.test
        )));
    }
}
