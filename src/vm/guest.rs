//! The guest side: `fsdelta guest-run JOB OUT`, started by the initramfs's `/init` inside the
//! QEMU guest. It runs the tests of one repetition on the disks the host formatted, one sample
//! each, and writes every sample as a JSON line to `OUT` (the second serial port) as soon as it
//! is finished, so that a guest that dies later keeps what it measured.
//!
//! One sample is the same step the host's run loop takes on a configured target: mount (timed,
//! `mount_s`), drop caches, CPU and memory probes around the workload, unmount (timed,
//! `umount_s`, writeback included), the device's counters and write amplification.
//!
//! Must never format anything (the host did, so both kernels see the same mkfs) and never run
//! outside a guest: it refuses unless it is PID 1's child in an initramfs (`/job.json` present
//! and `/proc/1/comm` is `init`), so a stray `fsdelta guest-run` cannot mount a host's disks.

use super::VmError;
use super::job::{GuestLine, Job};
use crate::model::{Direction, Metric, NewSample, SampleStatus, TargetFacts, Unit};
use crate::probe::system;
use crate::target::blockstat::{self, BlockStat};
use crate::target::mount::Mounted;
use crate::target::{StateFile, env};
use crate::workload::{self, CancelToken, Measurements, NoProgress, RunContext};
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
    let state = StateFile::new("/tmp/fsdelta-guest-state.json");
    let cancel = CancelToken::new();
    for (i, test) in job.tests.iter().enumerate() {
        let started_at = Utc::now();
        let t0 = Instant::now();
        let (w, desc) = match workload::build_test(&test.engine, test.external) {
            Ok(x) => x,
            Err(e) => {
                let s = failed(
                    &job,
                    test,
                    started_at,
                    t0,
                    TargetFacts::default(),
                    e.to_string(),
                    "",
                );
                send(&GuestLine::Sample(Box::new(s)))?;
                continue;
            }
        };
        let line = match one_sample(&job, i, w.as_ref(), &state, &cancel) {
            Ok(Step::Measured(facts, m)) => GuestLine::Sample(Box::new(NewSample {
                config: job.config.clone(),
                test: test.name.clone(),
                repetition: job.repetition,
                facts,
                status: SampleStatus::Ok,
                error: None,
                started_at,
                duration_s: t0.elapsed().as_secs_f64(),
                workload: desc,
                metrics: m.metrics,
                histograms: m.histograms,
            })),
            Ok(Step::Skipped(why)) => GuestLine::Skipped {
                test: test.name.clone(),
                why,
            },
            Err(f) => {
                let (facts, e) = *f;
                GuestLine::Sample(Box::new(failed(
                    &job, test, started_at, t0, facts, e, &desc,
                )))
            }
        };
        send(&line)?;
    }
    send(&GuestLine::Done)
}

fn failed(
    job: &Job,
    test: &crate::plan::suite::TestSpec,
    started_at: chrono::DateTime<Utc>,
    t0: Instant,
    facts: TargetFacts,
    error: String,
    desc: &str,
) -> NewSample {
    NewSample {
        config: job.config.clone(),
        test: test.name.clone(),
        repetition: job.repetition,
        facts,
        status: SampleStatus::Failed,
        error: Some(error),
        started_at,
        duration_s: t0.elapsed().as_secs_f64(),
        workload: desc.to_string(),
        metrics: Vec::new(),
        histograms: Vec::new(),
    }
}

enum Step {
    Measured(TargetFacts, Measurements),
    Skipped(String),
}

/// Wait for a device node (virtio probing is asynchronous).
fn wait_for(dev: &Path) -> Result<(), String> {
    let t0 = Instant::now();
    while !dev.exists() {
        if t0.elapsed() > Duration::from_secs(20) {
            return Err(format!(
                "{} did not appear in the guest within 20 s: does the kernel have CONFIG_VIRTIO_BLK and CONFIG_VIRTIO_PCI?",
                dev.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// One sample of the i-th test (see the module docs).
fn one_sample(
    job: &Job,
    i: usize,
    w: &dyn workload::Workload,
    state: &StateFile,
    cancel: &CancelToken,
) -> Result<Step, Box<(TargetFacts, String)>> {
    let no_facts = |e: String| Box::new((TargetFacts::default(), e));
    let mnt = PathBuf::from(format!("/mnt/{i}"));
    fs::create_dir_all(&mnt).map_err(|e| no_facts(format!("mkdir {}: {e}", mnt.display())))?;
    let disk = if job.disks.is_empty() {
        None
    } else {
        Some(&job.disks[i.min(job.disks.len() - 1)])
    };
    let (source, options) = match disk {
        Some(d) => {
            wait_for(Path::new(&d.device)).map_err(no_facts)?;
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
    let (mounted, mount_time) = Mounted::mount(state, &source, &mnt, &job.fs, &options)
        .map_err(|e| no_facts(format!("mount in the guest: {e}")))?;
    let dir = if job.disks.len() == 1 && job.tests.len() > 1 {
        // fresh = "run": one filesystem, a new directory for every sample.
        let d = mnt.join(format!("fsdelta-{i}-{}", job.tests[i].name));
        fs::create_dir_all(&d).map_err(|e| no_facts(format!("mkdir {}: {e}", d.display())))?;
        d
    } else {
        mnt.clone()
    };
    let mut facts = env::facts_for(&dir);
    facts.device = source.clone();
    if let Some(d) = disk {
        facts.mkfs_options = Some(d.mkfs_command.clone());
        facts
            .extra
            .insert("mkfs_version".into(), d.mkfs_version.clone());
    }
    facts.extra.insert("config".into(), job.config.clone());
    if let Some(why) = w.skip_reason(&dir) {
        let _ = mounted.unmount();
        return Ok(Step::Skipped(why));
    }
    let dropped = job.drop_caches && blockstat::drop_caches().unwrap_or(false);
    facts
        .extra
        .insert("caches_dropped".into(), dropped.to_string());
    let dev_name = disk.and_then(|d| {
        Path::new(&d.device)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
    });
    let before = dev_name.as_deref().and_then(|n| BlockStat::read(n).ok());
    let counters = system::Snapshot::take();
    let peaks = system::PeakSampler::start();
    let r = w.run(&RunContext {
        dir: &dir,
        cancel,
        progress: &NoProgress,
    });
    let mut cpu = counters.metrics_since();
    cpu.extend(peaks.finish());
    let mut m = match r {
        Ok(m) => m,
        Err(e) => {
            let _ = mounted.unmount();
            return Err(Box::new((facts, e.to_string())));
        }
    };
    m.metrics.extend(cpu);
    let umount = mounted
        .unmount()
        .map_err(|e| Box::new((facts.clone(), format!("after the workload: {e}"))))?;
    m.metrics.push(Metric::new(
        "mount_s",
        mount_time.as_secs_f64(),
        Unit::Seconds,
        Direction::LowerIsBetter,
    ));
    m.metrics.push(Metric::new(
        "umount_s",
        umount.as_secs_f64(),
        Unit::Seconds,
        Direction::LowerIsBetter,
    ));
    if let (Some(b), Some(a)) = (
        before,
        dev_name.as_deref().and_then(|n| BlockStat::read(n).ok()),
    ) {
        let d = b.delta(&a);
        m.metrics.extend(d.metrics());
        if let Some(wa) = m
            .logical_bytes_written
            .and_then(|l| d.write_amplification(l))
        {
            m.metrics.push(wa);
        }
    }
    Ok(Step::Measured(facts, m))
}
