//! The sample step: one test, once, on one site, measured and stored.
//!
//! Why a file of its own: this is where a number is made. Everything around the workload
//! (hooks, cache drop, device counters, CPU counters, event counters, the profiler, the
//! timed unmount) happens in one fixed order for every kind of target, so that a number means
//! the same thing wherever it was measured. It must never print, and never lose a measured sample: a sample the store
//! refuses as measured is stored as failed with the reason.

use super::observer::{Observer, PhaseSink};
use super::profile::RunProfiler;
use super::site::Site;
use crate::model::{
    Direction, Metric, MetricKind, NewSample, RunId, SampleId, SampleStatus, SiteFacts, Unit,
};
use crate::probe::blockstat;
use crate::probe::clock::Nanos;
use crate::probe::system;
use crate::store::{Store, StoreError};
use crate::workload::{CancelToken, Measurements, RunContext, Workload, WorkloadError};

/// What one sample produced, before it is stored (one per sample, moved once: its size does
/// not matter).
#[allow(clippy::large_enum_variant)]
pub(crate) enum Outcome {
    /// Measured (or failed) with these facts.
    Done {
        /// The target's facts (boxed: the measurements beside them are small).
        facts: Box<SiteFacts>,
        /// The measurements, or why there are none.
        result: Result<Measurements, String>,
    },
    /// The workload cannot run on this target (the reason); nothing was measured.
    Skipped(String),
    /// Interrupted by a cancel request; nothing is stored.
    Cancelled,
}

/// What the sample step needs besides the site and the workload.
pub(crate) struct Step<'a> {
    pub(crate) cancel: &'a CancelToken,
    pub(crate) observer: &'a dyn Observer,
    pub(crate) drop_caches: bool,
    pub(crate) profiler: Option<&'a mut RunProfiler>,
    /// The test's tracepoint counters, enabled only while the workload runs.
    pub(crate) events: Option<&'a mut crate::probe::events::Counters>,
}

/// Run `w` once on `site`, in a directory named `sample_name` where the site makes one.
pub(crate) fn run_sample(
    site: &mut Site,
    sample_name: &str,
    test: &str,
    w: &dyn Workload,
    step: Step<'_>,
) -> Outcome {
    let fail = |facts: SiteFacts, e: String| Outcome::Done {
        facts: Box::new(facts),
        result: Err(e),
    };
    let began = Nanos::now();
    let prepared = site.prepare(sample_name);
    for w in site.take_warnings() {
        step.observer.event(super::observer::Event::Warning(w));
    }
    let prepared = match prepared {
        Ok(p) => p,
        Err(b) => {
            let (facts, e) = *b;
            return fail(facts, e.to_string());
        }
    };
    let mut facts = prepared.facts;
    if let Some(why) = w.skip_reason(&prepared.dir) {
        let _ = site.end_sample(&prepared.dir, false);
        return Outcome::Skipped(why);
    }
    if let Err(e) = site.before() {
        let _ = site.end_sample(&prepared.dir, false);
        return fail(facts, e.to_string());
    }
    let dropped = step.drop_caches && blockstat::drop_caches().unwrap_or(false);
    facts
        .extra
        .insert("caches_dropped".into(), dropped.to_string());
    let before = site.counters();
    let mut profiler = step.profiler;
    if let Some(p) = profiler.as_deref_mut() {
        p.start();
    }
    let counters = system::Snapshot::take();
    let peaks = system::PeakSampler::start();
    let sink = PhaseSink {
        observer: step.observer,
        config: site.name(),
        test,
    };
    let mut events = step.events;
    if let Some(Err(e)) = events.as_deref_mut().map(|c| c.start()) {
        if let Some(p) = profiler {
            p.stop();
        }
        let _ = site.end_sample(&prepared.dir, false);
        return fail(facts, e.to_string());
    }
    let workload_began = Nanos::now();
    let r = w.run(&RunContext {
        dir: &prepared.dir,
        cancel: step.cancel,
        progress: &sink,
    });
    let workload_s = workload_began.elapsed().as_secs_f64();
    let counted = events.map(|c| c.stop().and_then(|()| c.metrics()));
    if let Some(p) = profiler {
        p.stop();
    }
    let end = system::Snapshot::take();
    let mut around = counters.delta(&end);
    around.extend(peaks.finish());
    // Below 1 MiB, write(2) bytes are a process's chatter (logs, pipes), not a workload's data.
    let written = counters.written_since(&end).filter(|&b| b >= 1 << 20);
    let after_hook = site.after();
    let mut m = match (r, after_hook) {
        (Err(WorkloadError::Cancelled), _) => {
            let _ = site.end_sample(&prepared.dir, false);
            return Outcome::Cancelled;
        }
        (Err(e), _) => {
            let _ = site.end_sample(&prepared.dir, false);
            return fail(facts, e.to_string());
        }
        (Ok(_), Err(e)) => {
            let _ = site.end_sample(&prepared.dir, false);
            return fail(facts, e.to_string());
        }
        (Ok(m), Ok(())) => m,
    };
    facts.extra.append(&mut m.facts);
    m.metrics.extend(around);
    match counted {
        Some(Ok(counts)) => m.metrics.extend(counts),
        Some(Err(e)) => {
            let _ = site.end_sample(&prepared.dir, false);
            return fail(facts, e.to_string());
        }
        None => {}
    }
    // Unmount (timed) before reading the device counters, so that writeback of what the
    // workload left dirty counts in the device's bytes written.
    match site.end_sample(&prepared.dir, true) {
        Ok(timings) => m.metrics.extend(timings),
        Err(e) => return fail(facts, format!("after the workload: {e}")),
    }
    if let (Some(b), Some(a)) = (before, site.counters()) {
        let d = b.delta(&a);
        m.metrics.extend(d.metrics());
        // The workload's own count of logical bytes, else what this process and its
        // children passed to write(2) during the sample (copy, command and external tests).
        if let Some(wa) = m
            .logical_bytes_written
            .or(written)
            .and_then(|l| d.write_amplification(l))
        {
            m.metrics.push(wa);
        }
    }
    // What this sample step spent outside the workload: prepare (mkfs, mount), hooks, the
    // cache drop, counters, the timed unmount and mount.
    m.metrics.push(
        Metric::new(
            "overhead_s",
            (began.elapsed().as_secs_f64() - workload_s).max(0.0),
            Unit::Seconds,
            Direction::Neutral,
        )
        .kind(MetricKind::Mean),
    );
    Outcome::Done {
        facts: Box::new(facts),
        result: Ok(m),
    }
}

/// Store a sample; when the store refuses it as measured (a non-finite metric, say), store it as
/// failed with the reason, so that the run still shows what happened.
pub(crate) fn store_sample(
    store: &mut dyn Store,
    run: RunId,
    mut sample: NewSample,
) -> Result<(SampleId, NewSample), StoreError> {
    match store.add_sample(run, &sample) {
        Ok(id) => Ok((id, sample)),
        Err(e) if sample.status == SampleStatus::Ok => {
            sample.status = SampleStatus::Failed;
            sample.error = Some(format!("not stored as measured: {e}"));
            sample.metrics.clear();
            sample.histograms.clear();
            let id = store.add_sample(run, &sample)?;
            Ok((id, sample))
        }
        Err(e) => Err(e),
    }
}
