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

use super::sample::{self, Outcome};
use super::{Silent, Site};
use crate::model::{NewSample, SampleStatus, SiteFacts};
use crate::plan::suite::TestSpec;
use crate::site::{StateFile, env};
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
    let (config, repetition, drop_caches) = (job.config.clone(), job.repetition, job.drop_caches);
    let mut site = Site::Guest(Box::new(GuestSite::new(
        job,
        StateFile::new("/tmp/fsdelta-guest-state.json"),
    )));
    let cancel = CancelToken::new();
    for (i, test) in tests.iter().enumerate() {
        let line = one_test(
            &mut site,
            test,
            &Numbering {
                config: &config,
                repetition,
                sequence: i as u32 + 1,
            },
            drop_caches,
            &cancel,
        );
        channel.send(&line)?;
    }
    if let Err(e) = site.teardown() {
        return Err(VmError::Guest(format!("unmounting in the guest: {e}")));
    }
    channel.send(&GuestLine::Done)
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

/// One sample of `test` on the guest's next disk, as the line to send.
fn one_test(
    site: &mut Site,
    test: &TestSpec,
    at: &Numbering<'_>,
    drop_caches: bool,
    cancel: &CancelToken,
) -> GuestLine {
    let started_at = Utc::now();
    let t0 = Instant::now();
    let sample_of = |facts, result, desc: &str| {
        GuestLine::Sample(Box::new(new_sample(
            at,
            &test.name,
            (started_at, t0),
            facts,
            result,
            desc,
        )))
    };
    match crate::engines::build_test(&test.engine, test.external) {
        Err(e) => {
            // Keep the disks in step with the tests.
            let _ = site.prepare(&test.name);
            let _ = site.end_sample(Path::new("/"), false);
            sample_of(SiteFacts::default(), Err(e.to_string()), "")
        }
        Ok((w, desc)) => {
            let outcome = sample::run_sample(
                site,
                &test.name,
                &test.name,
                w.as_ref(),
                sample::Step {
                    cancel,
                    observer: &Silent,
                    drop_caches,
                    profiler: None,
                    events: None,
                },
            );
            match outcome {
                Outcome::Done { facts, result } => sample_of(*facts, result, &desc),
                Outcome::Skipped(why) => GuestLine::Skipped {
                    test: test.name.clone(),
                    why,
                },
                Outcome::Cancelled => sample_of(
                    SiteFacts::default(),
                    Err("cancelled in the guest".into()),
                    &desc,
                ),
            }
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
