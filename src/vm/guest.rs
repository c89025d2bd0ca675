//! The guest's disks: the [`GuestSite`] a guest runs its samples on (the disks the host
//! formatted for one repetition, one per test in order, or one for all with `fresh = "run"`, or
//! a new tmpfs per sample), and [`in_guest`], the check that this process runs inside an
//! fsdelta guest.
//!
//! Why here: the vm room knows what it put into the guest (the [`Job`] and its disks), so it
//! says how to mount them and which facts describe them. The sample loop that runs on them is
//! the run loop's (`crate::runner::guest`, run by the hidden `fsdelta guest-run`); this module
//! never imports the runner.
//!
//! Must never format anything (the host did, so both kernels see the same mkfs) and never be
//! used outside a guest: the guest's loop refuses unless [`in_guest`] (`/job.json`, or
//! `/run/fsdelta/job.json` inside the host's root, exists, PID 1 is `init` and the kernel command
//! line carries `fsdelta.guest=1`), so a stray `fsdelta guest-run` cannot mount a host's disks.

use super::job::Job;
use crate::model::{Direction, Metric, SiteFacts, Unit};
use crate::probe::blockstat::BlockStat;
use crate::site::mount::Mounted;
use crate::site::{SiteError, StateFile, env};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Whether this process runs inside an fsdelta guest.
pub fn in_guest() -> bool {
    (Path::new("/job.json").is_file()
        || Path::new(super::initramfs::GUEST_RUN_DIR)
            .join("job.json")
            .is_file())
        && fs::read_to_string("/proc/1/comm").is_ok_and(|c| c.trim() == "init")
        && fs::read_to_string("/proc/cmdline").is_ok_and(|c| c.contains("fsdelta.guest=1"))
}

/// Whether this guest process runs inside the host's root directory (shared read-only over 9p;
/// `/init` put the job into its `/run/fsdelta`).
pub fn in_host_root() -> bool {
    Path::new(super::initramfs::GUEST_RUN_DIR)
        .join("job.json")
        .is_file()
}

/// Whose programs the guest's commands, hooks and perf are: the host's root directory, or the
/// initramfs's busybox (a kernel without 9p).
pub fn userland() -> &'static str {
    if in_host_root() {
        "host root (9p, read-only)"
    } else {
        "busybox (initramfs)"
    }
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
    /// The current sample's directory, where hooks run.
    dir: Option<PathBuf>,
    /// What the current sample's disk was mounted with (source, mount point, options), to
    /// mount it again for [`GuestSite::mount_again`].
    last_mount: Option<(String, PathBuf, String)>,
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
            dir: None,
            last_mount: None,
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
                let mut o = job.mount_options.clone();
                if job.read_only && !o.split(',').any(|x| x == "ro") {
                    if !o.is_empty() {
                        o.push(',');
                    }
                    o.push_str("ro");
                }
                (d.device.clone(), o)
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
        self.last_mount = disk.map(|_| (source.clone(), mnt.clone(), options.clone()));
        self.mounted = Some(mounted);
        self.mount_time = took;
        self.device = disk.and_then(|d| {
            Path::new(&d.device)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        });
        // fresh = "run": one filesystem, a new directory for every sample.
        let dir = if job.disks.len() == 1 && job.tests.len() > 1 && !job.read_only {
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
        facts.extra.insert("vm_userland".into(), userland().into());
        self.dir = Some(dir.clone());
        Ok((dir, facts))
    }

    /// Run the configuration's `before` hook (if any), as the host runs it: `sh -c CMD` in the
    /// sample's directory with `FSDELTA_CONFIG`, `FSDELTA_DIR`, `FSDELTA_DEVICE`,
    /// `FSDELTA_SAMPLE` and `FSDELTA_HOOK` set; a failure names the command and its output's
    /// last lines.
    pub fn before_sample(&self) -> Result<(), SiteError> {
        self.hook("before", self.job.before.as_deref())
    }

    /// Run the configuration's `after` hook (if any); see [`GuestSite::before_sample`].
    pub fn after_sample(&self) -> Result<(), SiteError> {
        self.hook("after", self.job.after.as_deref())
    }

    fn hook(&self, which: &str, cmd: Option<&str>) -> Result<(), SiteError> {
        let Some(cmd) = cmd else { return Ok(()) };
        let dir = self.dir.clone().unwrap_or_else(|| PathBuf::from("/"));
        let mut c = std::process::Command::new("sh");
        c.arg("-c")
            .arg(cmd)
            .current_dir(&dir)
            .env("FSDELTA_CONFIG", &self.job.config)
            .env("FSDELTA_DIR", &dir)
            .env("FSDELTA_SAMPLE", self.next.to_string())
            .env("FSDELTA_HOOK", which)
            .stdin(std::process::Stdio::null());
        if let Some(d) = &self.device {
            c.env("FSDELTA_DEVICE", format!("/dev/{d}"));
        }
        let out = c.output().map_err(|source| SiteError::Io {
            op: "run sh -c",
            path: cmd.to_string(),
            source,
        })?;
        if out.status.success() {
            return Ok(());
        }
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let tail: Vec<&str> = text.lines().rev().take(6).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Err(SiteError::CommandFailed {
            what: format!("config '{}': {which} (in the guest)", self.job.config),
            command: cmd.to_string(),
            status: out.status.to_string(),
            output: if tail.is_empty() {
                "no output; fix the command or remove it from the config".into()
            } else {
                tail.join(" | ")
            },
        })
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

    /// Mount the sample's disk again after [`GuestSite::end_sample`] unmounted it, as it was,
    /// for the suite's `ondisk_remount` (the maps read again from a fresh mount); it stays
    /// mounted until the next sample's prepare or the teardown. `false`: nothing to mount again
    /// (tmpfs, a read-only image, or the disk is still mounted).
    pub fn mount_again(&mut self) -> Result<bool, SiteError> {
        let Some((source, mnt, options)) = self.last_mount.clone() else {
            return Ok(false);
        };
        if self.mounted.is_some() || self.job.read_only {
            return Ok(false);
        }
        let (mounted, _) = Mounted::mount(&self.state, &source, &mnt, &self.job.fs, &options)?;
        self.mounted = Some(mounted);
        Ok(true)
    }

    /// Unmount what is still mounted.
    pub fn teardown(mut self) -> Result<(), SiteError> {
        match self.mounted.take() {
            Some(m) => m.unmount().map(|_| ()),
            None => Ok(()),
        }
    }
}
