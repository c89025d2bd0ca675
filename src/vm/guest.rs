//! The guest side: `fsdelta guest-run JOB OUT`, started by the initramfs's `/init` inside the
//! QEMU guest. It runs the tests of one repetition on the disks the host formatted, one sample
//! each, and writes every sample as a JSON line to `OUT` (the second serial port) as soon as it
//! is finished, so that a guest that dies later keeps what it measured.
//!
//! One sample is the run loop's own sample step (`runner::sample::run_sample`) on a
//! [`GuestSite`]: the disk the host formatted for this test is mounted (timed, `mount_s`), caches
//! are dropped, CPU and memory are probed around the workload, the disk is unmounted (timed,
//! `umount_s`, writeback included) and its counters give the device metrics and write
//! amplification, exactly as on the host.
//!
//! Must never format anything (the host did, so both kernels see the same mkfs) and never run
//! outside a guest: it refuses unless `/job.json` exists, PID 1 is `init` and the kernel command
//! line carries `fsdelta.guest=1`, so a stray `fsdelta guest-run` cannot mount a host's disks.

use super::VmError;
use super::job::{GuestLine, Job};
use crate::model::{Direction, Metric, NewSample, SampleStatus, SiteFacts, Unit};
use crate::probe::blockstat::BlockStat;
use crate::runner::sample::{self, Outcome};
use crate::runner::{Silent, Site};
use crate::site::mount::Mounted;
use crate::site::{SiteError, StateFile, env};
use crate::workload::CancelToken;
use chrono::Utc;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Whether this process runs inside an fsdelta guest.
pub fn in_guest() -> bool {
    Path::new("/job.json").is_file()
        && fs::read_to_string("/proc/1/comm").is_ok_and(|c| c.trim() == "init")
        && fs::read_to_string("/proc/cmdline").is_ok_and(|c| c.contains("fsdelta.guest=1"))
}

/// The guest's place to run samples: the disks of the job, one per test in order (or one for
/// all with `fresh = "run"`), or a new tmpfs per sample.
#[derive(Debug)]
pub struct GuestSite {
    job: Job,
    state: StateFile,
    /// Samples prepared so far (the next one takes disk `next`).
    next: usize,
    mounted: Option<Mounted>,
    mount_time: Duration,
    /// The kernel name of the current sample's disk (`vda`), for its counters.
    device: Option<String>,
}

fn unusable(what: &str, message: String) -> SiteError {
    SiteError::Unusable {
        path: what.to_string(),
        message,
    }
}

/// Wait for a device node (virtio probing is asynchronous).
fn wait_for(dev: &Path) -> Result<(), SiteError> {
    let t0 = Instant::now();
    while !dev.exists() {
        if t0.elapsed() > Duration::from_secs(20) {
            return Err(unusable(
                &dev.display().to_string(),
                "did not appear in the guest within 20 s: does the kernel have CONFIG_VIRTIO_BLK and CONFIG_VIRTIO_PCI?".into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

impl GuestSite {
    /// The site of `job`.
    pub fn new(job: Job, state: StateFile) -> GuestSite {
        GuestSite {
            job,
            state,
            next: 0,
            mounted: None,
            mount_time: Duration::ZERO,
            device: None,
        }
    }

    /// The configuration's name.
    pub fn name(&self) -> &str {
        &self.job.config
    }

    /// Mount the next sample's filesystem and return its directory and facts.
    pub fn prepare(&mut self) -> Result<(PathBuf, SiteFacts), SiteError> {
        let i = self.next;
        self.next += 1;
        if let Some(m) = self.mounted.take() {
            m.unmount()?;
        }
        let job = &self.job;
        let mnt = PathBuf::from(format!("/mnt/{i}"));
        fs::create_dir_all(&mnt)
            .map_err(|e| unusable(&mnt.display().to_string(), e.to_string()))?;
        let disk = (!job.disks.is_empty()).then(|| &job.disks[i.min(job.disks.len() - 1)]);
        let (source, options) = match disk {
            Some(d) => {
                wait_for(Path::new(&d.device))?;
                (d.device.clone(), job.mount_options.clone())
            }
            None => {
                let mut o = job.mount_options.clone();
                if let Some(size) = job.tmpfs_size {
                    if !o.is_empty() {
                        o.push(',');
                    }
                    o.push_str(&format!("size={size}"));
                }
                (format!("fsdelta-{}", job.config), o)
            }
        };
        let (mounted, took) = Mounted::mount(&self.state, &source, &mnt, &job.fs, &options)?;
        self.mounted = Some(mounted);
        self.mount_time = took;
        self.device = disk.and_then(|d| {
            Path::new(&d.device)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        });
        // fresh = "run": one filesystem, a new directory for every sample.
        let dir = if job.disks.len() == 1 && job.tests.len() > 1 {
            let d = mnt.join(format!("fsdelta-{i}"));
            fs::create_dir_all(&d)
                .map_err(|e| unusable(&d.display().to_string(), e.to_string()))?;
            d
        } else {
            mnt
        };
        let mut facts = env::facts_for(&dir);
        facts.device = source;
        if let Some(d) = disk {
            facts.mkfs_options = Some(d.mkfs_command.clone());
            facts
                .extra
                .insert("mkfs_version".into(), d.mkfs_version.clone());
        }
        facts.extra.insert("config".into(), job.config.clone());
        Ok((dir, facts))
    }

    /// The current disk's counters.
    pub fn counters(&self) -> Option<BlockStat> {
        BlockStat::read(self.device.as_deref()?).ok()
    }

    /// Unmount; when `measured`, the timings (`mount_s`, `umount_s`).
    pub fn end_sample(&mut self, measured: bool) -> Result<Vec<Metric>, SiteError> {
        let Some(m) = self.mounted.take() else {
            return Ok(Vec::new());
        };
        let umount = m.unmount()?;
        if !measured {
            return Ok(Vec::new());
        }
        Ok(vec![
            Metric::new(
                "umount_s",
                umount.as_secs_f64(),
                Unit::Seconds,
                Direction::LowerIsBetter,
            ),
            Metric::new(
                "mount_s",
                self.mount_time.as_secs_f64(),
                Unit::Seconds,
                Direction::LowerIsBetter,
            ),
        ])
    }

    /// Unmount what is still mounted.
    pub fn teardown(mut self) -> Result<(), SiteError> {
        match self.mounted.take() {
            Some(m) => m.unmount().map(|_| ()),
            None => Ok(()),
        }
    }
}

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
    let mut out = fs::OpenOptions::new()
        .write(true)
        .open(out_path)
        .map_err(|e| VmError::io("open", out_path, e))?;
    let mut send = |line: &GuestLine| -> Result<(), VmError> {
        let mut s = serde_json::to_string(line)
            .map_err(|e| VmError::Guest(format!("serialising a result: {e}")))?;
        s.push('\n');
        out.write_all(s.as_bytes())
            .and_then(|_| out.flush())
            .map_err(|e| VmError::io("write", out_path, e))
    };
    let environment = env::environment();
    let uptime_s = fs::read_to_string("/proc/uptime")
        .ok()
        .and_then(|u| u.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    send(&GuestLine::Hello {
        kernel_release: environment.kernel_release.clone(),
        kernel_version: environment.kernel_version.clone(),
        cpus: environment.cores,
        memory_bytes: environment.memory_bytes,
        uptime_s,
    })?;
    let tests = job.tests.clone();
    let (config, repetition, drop_caches) = (job.config.clone(), job.repetition, job.drop_caches);
    let mut site = Site::Guest(Box::new(GuestSite::new(
        job,
        StateFile::new("/tmp/fsdelta-guest-state.json"),
    )));
    let cancel = CancelToken::new();
    for (i, test) in tests.iter().enumerate() {
        let started_at = Utc::now();
        let t0 = Instant::now();
        let sample_of =
            |facts, result: Result<crate::workload::Measurements, String>, desc: &str| {
                let (status, error, m) = match result {
                    Ok(m) => (SampleStatus::Ok, None, m),
                    Err(e) => (SampleStatus::Failed, Some(e), Default::default()),
                };
                NewSample {
                    config: config.clone(),
                    test: test.name.clone(),
                    repetition,
                    sequence: i as u32 + 1,
                    facts,
                    status,
                    error,
                    started_at,
                    duration_s: t0.elapsed().as_secs_f64(),
                    workload: desc.to_string(),
                    metrics: m.metrics,
                    histograms: m.histograms,
                    attachments: m.attachments,
                }
            };
        let line = match crate::engines::build_test(&test.engine, test.external) {
            Err(e) => {
                // Keep the disks in step with the tests.
                let _ = site.prepare(&test.name);
                let _ = site.end_sample(Path::new("/"), false);
                GuestLine::Sample(Box::new(sample_of(
                    SiteFacts::default(),
                    Err(e.to_string()),
                    "",
                )))
            }
            Ok((w, desc)) => {
                let outcome = sample::run_sample(
                    &mut site,
                    &test.name,
                    &test.name,
                    w.as_ref(),
                    sample::Step {
                        cancel: &cancel,
                        observer: &Silent,
                        drop_caches,
                        profiler: None,
                        events: None,
                    },
                );
                match outcome {
                    Outcome::Done { facts, result } => {
                        GuestLine::Sample(Box::new(sample_of(*facts, result, &desc)))
                    }
                    Outcome::Skipped(why) => GuestLine::Skipped {
                        test: test.name.clone(),
                        why,
                    },
                    Outcome::Cancelled => GuestLine::Sample(Box::new(sample_of(
                        SiteFacts::default(),
                        Err("cancelled in the guest".into()),
                        &desc,
                    ))),
                }
            }
        };
        send(&line)?;
    }
    if let Err(e) = site.teardown() {
        return Err(VmError::Guest(format!("unmounting in the guest: {e}")));
    }
    send(&GuestLine::Done)
}
