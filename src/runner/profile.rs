//! CPU profiles around each workload of a run (`fsdelta run --profile`): start perf right before
//! the workload, stop it right after, and fold and store what it recorded once the sample has its
//! id, outside the sample's timing and counters.
//!
//! Why a file of its own: the run loop stays readable with profiling behind three calls. It must
//! never analyse a profile (that is `report::profile`) nor drive perf itself (`probe::profile`).

use super::RunError;
use super::observer::{Event, Observer};
use crate::model::SampleId;
use crate::probe::profile::{self as probe, ProfileError, ProfileScope, Recorder, Recording};
use crate::store::Store;

/// Which samples a run profiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileMode {
    /// Every sample; the run stops with an error when perf cannot record.
    Always,
    /// The first repetition of each test only; the run stops when perf cannot record.
    First,
    /// Every sample when perf can record; without perf or permission the run goes on without
    /// profiles.
    Optional,
}

/// Records a profile around each workload and stores it with the sample.
pub(crate) struct RunProfiler {
    mode: ProfileMode,
    scope: ProfileScope,
    recorder: Option<Recorder>,
    pending: Option<Result<Recording, ProfileError>>,
    /// Optional profiling failed once: no more profiles in this run.
    gave_up: bool,
}

impl RunProfiler {
    /// A profiler for `mode`, or `None` when profiles were not asked for (or are optional and
    /// this machine cannot record them, which is said once). Checks perf before the run starts,
    /// so that a missing perf fails fast.
    pub(crate) fn new(
        mode: Option<ProfileMode>,
        scope: ProfileScope,
        observer: &dyn Observer,
    ) -> Result<Option<RunProfiler>, RunError> {
        let Some(mode) = mode else {
            return Ok(None);
        };
        match probe::check() {
            Ok(()) => Ok(Some(RunProfiler {
                mode,
                scope,
                recorder: None,
                pending: None,
                gave_up: false,
            })),
            Err(e) if mode == ProfileMode::Optional => {
                observer.event(Event::Warning(format!(
                    "--profile=optional: this run records no profiles: {e}"
                )));
                Ok(None)
            }
            Err(e) => Err(RunError::Profile(format!("--profile: {e}"))),
        }
    }

    /// The scope its profiles keep (recorded in each profiled sample's facts).
    pub(crate) fn scope(&self) -> ProfileScope {
        self.scope
    }

    /// Whether the samples of repetition `rep` (from 1) are profiled.
    pub(crate) fn wants(&self, rep: u32) -> bool {
        !self.gave_up && (self.mode != ProfileMode::First || rep == 1)
    }

    /// Start perf; call right before the workload.
    pub(crate) fn start(&mut self) {
        self.recorder = None;
        self.pending = None;
        match Recorder::start() {
            Ok(r) => self.recorder = Some(r),
            Err(e) => self.pending = Some(Err(e)),
        }
    }

    /// Stop perf; call right after the workload.
    pub(crate) fn stop(&mut self) {
        if let Some(r) = self.recorder.take() {
            self.pending = Some(r.stop());
        }
    }

    /// Fold what was recorded and store it with `sample`. With `--profile=optional` a failure
    /// is said once and profiling stops for the rest of the run; otherwise it is an error.
    pub(crate) fn store(
        &mut self,
        store: &mut dyn Store,
        sample: SampleId,
        observer: &dyn Observer,
    ) -> Result<(), RunError> {
        let Some(recorded) = self.pending.take() else {
            return Ok(());
        };
        let root = std::process::id();
        match recorded.and_then(|r| r.fold(self.scope, root)) {
            Ok(p) => store
                .add_profile(sample, &p.encode())
                .map_err(|e| RunError::Store {
                    what: format!("storing the profile of sample {sample}"),
                    source: e,
                }),
            Err(e) if self.mode == ProfileMode::Optional => {
                observer.event(Event::Warning(format!(
                    "--profile=optional: no more profiles in this run after: {e}"
                )));
                self.gave_up = true;
                Ok(())
            }
            Err(e) => Err(RunError::Profile(format!(
                "profiling sample {sample} (it is stored; --profile=optional goes on without profiles): {e}"
            ))),
        }
    }
}
