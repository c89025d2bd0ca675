//! The guest's sample loop: `fsdelta guest-run JOB OUT`, started by the initramfs's `/init`
//! inside the QEMU guest. It runs the tests of one repetition on the disks the host formatted,
//! one sample each, and writes every sample as a JSON line to `OUT` (the second serial port) as
//! soon as it is finished, so that a guest that dies later keeps what it measured.
//!
//! Why here and not in `crate::vm`: every sample loop is the run loop's. One sample is the run
//! loop's own sample step (`sample::run_sample`) on a [`Site::Guest`], the guest's disks as
//! `crate::vm::guest::GuestSite` describes them: the disk the host formatted for this test is
//! mounted (timed, `mount_s`), caches are dropped, CPU and memory are probed around the workload,
//! the disk is unmounted (timed, `umount_s`, writeback included) and its counters give the
//! device metrics and write amplification, exactly as on the host. The vm room only carries the
//! job in and the lines out (`crate::vm::job`) and describes the guest's disks; it never imports
//! the runner.
//!
//! Must never format anything (the host did, so both kernels see the same mkfs), never store
//! (the host stores what comes back) and never run outside a guest: it refuses unless
//! `crate::vm::guest::in_guest` (`/job.json` exists, PID 1 is `init` and the kernel command line
//! carries `fsdelta.guest=1`), so a stray `fsdelta guest-run` cannot mount a host's disks.

use super::profile::{ProfileMode, RunProfiler};
use super::sample::{self, Outcome};
use super::{Event, Observer, Silent, Site};
use crate::model::{NewRun, NewSample, RunId, SampleStatus, SiteFacts, StoredProfile};
use crate::plan::suite::TestSpec;
use crate::probe::profile::ProfileScope;
use crate::site::{StateFile, env};
use crate::store::Store;
use crate::store::memory::MemoryStore;
use crate::vm::VmError;
use crate::vm::guest::{GuestSite, in_guest};
use crate::vm::job::{GuestLine, Job};
use crate::workload::{CancelToken, Measurements};
use chrono::{DateTime, Utc};
use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// Run the job at `job_path`, writing results to `out_path`.
pub fn run(job_path: &Path, out_path: &Path) -> Result<(), VmError> {
    if !in_guest() {
        return Err(VmError::Unsupported(
            "guest-run only runs inside an fsdelta guest (it is started by the guest's /init); use `fsdelta run` with a configuration that has kernel = \"PATH\"".into(),
        ));
    }
    let text = fs::read_to_string(job_path).map_err(|e| VmError::io("read", job_path, e))?;
    let job: Job = serde_json::from_str(&text)
        .map_err(|e| VmError::Guest(format!("{}: {e}", job_path.display())))?;
    let mut channel = Channel::open(out_path)?;
    channel.send(&hello())?;
    let tests = job.tests.clone();
    let (config, repetition, drop_caches, ondisk, ondisk_remount) = (
        job.config.clone(),
        job.repetition,
        job.drop_caches,
        job.ondisk,
        job.ondisk_remount,
    );
    let mut profiles = GuestProfiles::new(job.profile.as_deref())?;
    let in_host_root = crate::vm::guest::in_host_root();
    let mut site = Site::Guest(Box::new(GuestSite::new(
        job,
        // Inside the host's root, /tmp is a shared directory (mode 1777), which the state file
        // refuses; /run/fsdelta is root's alone.
        StateFile::new(if in_host_root {
            Path::new(crate::vm::initramfs::GUEST_RUN_DIR).join("state.json")
        } else {
            "/tmp/fsdelta-guest-state.json".into()
        }),
    )));
    let cancel = CancelToken::new();
    for (i, test) in tests.iter().enumerate() {
        let warnings = Collect::default();
        let (line, profile) = one_test(
            &mut site,
            test,
            &Numbering {
                config: &config,
                repetition,
                sequence: i as u32 + 1,
            },
            Around {
                drop_caches,
                ondisk,
                ondisk_remount,
                cancel: &cancel,
                observer: &warnings,
                profiles: profiles.as_mut(),
            },
        );
        for what in warnings.take() {
            channel.send(&GuestLine::Warning {
                test: test.name.clone(),
                what,
            })?;
        }
        channel.send(&line)?;
        if let Some(p) = profile {
            channel.send(&GuestLine::Profile {
                test: test.name.clone(),
                format: p.format,
                data: p.data,
            })?;
        }
    }
    if let Err(e) = site.teardown() {
        return Err(VmError::Guest(format!("unmounting in the guest: {e}")));
    }
    channel.send(&GuestLine::Done)
}

/// The warnings of one sample (a declared metric missing from a command's output), sent to the
/// host, which says them as its own run would.
#[derive(Default)]
struct Collect(std::sync::Mutex<Vec<String>>);

impl Collect {
    fn take(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }
}

impl Observer for Collect {
    fn event(&self, e: Event) {
        if let Event::Warning(w) = e
            && let Ok(mut v) = self.0.lock()
        {
            v.push(w);
        }
    }
}

/// The guest's profiler (perf of the host's userland, recording the guest's kernel) and the
/// in-memory store it folds each profile into, as the host's run loop stores it, before the
/// profile is sent to the host.
struct GuestProfiles {
    profiler: RunProfiler,
    store: MemoryStore,
    run: RunId,
}

impl GuestProfiles {
    /// `None` when the job asks for no profile; an error when perf cannot record here.
    fn new(scope: Option<&str>) -> Result<Option<GuestProfiles>, VmError> {
        let Some(name) = scope else { return Ok(None) };
        let scope = [
            ProfileScope::WorkloadKthreads,
            ProfileScope::Workload,
            ProfileScope::System,
        ]
        .into_iter()
        .find(|s| s.name() == name)
        .ok_or_else(|| VmError::Guest(format!("unknown profile scope '{name}'")))?;
        let profiler = RunProfiler::new(Some(ProfileMode::Always), scope, &Silent)
            .map_err(|e| VmError::Guest(format!("in the guest: {e}")))?
            .ok_or_else(|| VmError::Guest("in the guest: no profiler".into()))?;
        let mut store = MemoryStore::new();
        let run = store
            .create_run(&NewRun {
                label: "guest".into(),
                suite: String::new(),
                started_at: Utc::now(),
                fsdelta_version: env!("CARGO_PKG_VERSION").into(),
                environment: env::environment(),
            })
            .map_err(|e| VmError::Guest(format!("the guest's profile store: {e}")))?;
        Ok(Some(GuestProfiles {
            profiler,
            store,
            run,
        }))
    }

    /// Fold what the profiler recorded around `sample`'s workload, as the host stores it.
    fn fold(&mut self, sample: &NewSample) -> Result<Option<StoredProfile>, String> {
        let id = self
            .store
            .add_sample(self.run, sample)
            .map_err(|e| e.to_string())?;
        self.profiler
            .store(&mut self.store, id, &Silent)
            .map_err(|e| e.to_string())?;
        self.store.profile(id).map_err(|e| e.to_string())
    }
}

/// What surrounds every sample of the job.
struct Around<'a> {
    drop_caches: bool,
    ondisk: bool,
    /// The suite's `ondisk_remount`.
    ondisk_remount: bool,
    cancel: &'a CancelToken,
    observer: &'a dyn Observer,
    profiles: Option<&'a mut GuestProfiles>,
}

/// The results channel: one JSON object a line, flushed at once.
struct Channel<'a> {
    out: fs::File,
    path: &'a Path,
}

impl<'a> Channel<'a> {
    fn open(path: &'a Path) -> Result<Channel<'a>, VmError> {
        let out = fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| VmError::io("open", path, e))?;
        Ok(Channel { out, path })
    }

    fn send(&mut self, line: &GuestLine) -> Result<(), VmError> {
        let mut s = serde_json::to_string(line)
            .map_err(|e| VmError::Guest(format!("serialising a result: {e}")))?;
        s.push('\n');
        self.out
            .write_all(s.as_bytes())
            .and_then(|_| self.out.flush())
            .map_err(|e| VmError::io("write", self.path, e))
    }
}

/// The first line: what the guest is.
fn hello() -> GuestLine {
    let environment = env::environment();
    let uptime_s = fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|u| u.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    GuestLine::Hello {
        kernel_release: environment.kernel_release.clone(),
        kernel_version: environment.kernel_version.clone(),
        cpus: environment.cores,
        memory_bytes: environment.memory_bytes,
        uptime_s,
    }
}

/// Where a sample sits in the job (the host renumbers `sequence` as it stores).
struct Numbering<'a> {
    config: &'a str,
    repetition: u32,
    sequence: u32,
}

/// One sample of `test` on the guest's next disk, as the line to send, with its profile when
/// the job asks for profiles. The test's tracepoints are resolved against this kernel's tracefs
/// and counted during the workload, as on the host.
fn one_test(
    site: &mut Site,
    test: &TestSpec,
    at: &Numbering<'_>,
    around: Around<'_>,
) -> (GuestLine, Option<StoredProfile>) {
    let started_at = Utc::now();
    let t0 = Instant::now();
    let sample_of = |facts, result, desc: &str| {
        new_sample(at, &test.name, (started_at, t0), facts, result, desc)
    };
    let line = |s: NewSample| GuestLine::Sample(Box::new(s));
    let built = crate::engines::build_test(&test.engine, test.external)
        .map_err(|e| e.to_string())
        .and_then(|wd| {
            let events = crate::probe::events::for_test(None, &[], &test.events)
                .and_then(|tps| {
                    if tps.is_empty() {
                        Ok(None)
                    } else {
                        crate::probe::events::Counters::open(&tps).map(Some)
                    }
                })
                .map_err(|e| format!("event counters in the guest: {e}"))?;
            Ok((wd, events))
        });
    let ((w, desc), mut events) = match built {
        Err(e) => {
            // Keep the disks in step with the tests.
            let _ = site.prepare(&test.name);
            let _ = site.end_sample(Path::new("/"), false);
            return (line(sample_of(SiteFacts::default(), Err(e), "")), None);
        }
        Ok(b) => b,
    };
    let mut profiles = around.profiles;
    let outcome = sample::run_sample(
        site,
        &test.name,
        &test.name,
        w.as_ref(),
        sample::Step {
            cancel: around.cancel,
            observer: around.observer,
            drop_caches: around.drop_caches,
            ondisk: around.ondisk,
            ondisk_remount: around.ondisk_remount,
            profiler: profiles.as_deref_mut().map(|p| &mut p.profiler),
            events: events.as_mut(),
        },
    );
    let (mut facts, result) = match outcome {
        Outcome::Done { facts, result } => (*facts, result),
        Outcome::Skipped(why) => {
            return (
                GuestLine::Skipped {
                    test: test.name.clone(),
                    why,
                },
                None,
            );
        }
        Outcome::Cancelled => (SiteFacts::default(), Err("cancelled in the guest".into())),
    };
    let Some(p) = profiles else {
        return (line(sample_of(facts, result, &desc)), None);
    };
    facts
        .extra
        .insert("profile_scope".into(), p.profiler.scope().name().into());
    facts.extra.insert(
        "profile_taken".into(),
        "in the guest: perf record -e cpu-clock -a -g of the guest kernel (the host's perf over the shared root), folded in the guest".into(),
    );
    let mut sample = sample_of(facts, result, &desc);
    match p.fold(&sample) {
        Ok(profile) => (line(sample), profile),
        // The measured sample stays; why it has no profile is said with it.
        Err(e) => {
            sample
                .facts
                .extra
                .insert("profile_error".into(), format!("in the guest: {e}"));
            (line(sample), None)
        }
    }
}

/// The sample of `test` that began at `began` (wall clock, monotonic), ok or failed.
fn new_sample(
    at: &Numbering<'_>,
    test: &str,
    began: (DateTime<Utc>, Instant),
    facts: SiteFacts,
    result: Result<Measurements, String>,
    desc: &str,
) -> NewSample {
    let (status, error, m) = match result {
        Ok(m) => (SampleStatus::Ok, None, m),
        Err(e) => (SampleStatus::Failed, Some(e), Default::default()),
    };
    NewSample {
        config: at.config.to_string(),
        test: test.to_string(),
        repetition: at.repetition,
        sequence: at.sequence,
        facts,
        status,
        error,
        started_at: began.0,
        duration_s: began.1.elapsed().as_secs_f64(),
        workload: desc.to_string(),
        metrics: m.metrics,
        histograms: m.histograms,
        attachments: m.attachments,
    }
}
