//! One configuration of a config file made real: a loop image or block device formatted with the
//! config's mkfs options and mounted with its mount options, a tmpfs, or an existing directory;
//! a fresh, empty directory for every sample; the facts of that sample; the commands around it;
//! the umount/mount timings after it; and the teardown.
//!
//! Life cycle (the run orchestration calls, per configuration):
//! [`ConfiguredSite::new`] (checks only, creates nothing) -> per sample [`ConfiguredSite::prepare`] ->
//! [`ConfiguredSite::before_sample`] -> workload (with [`ConfiguredSite::counters`] before and after) ->
//! [`ConfiguredSite::after_sample`] -> [`ConfiguredSite::finish_sample`] -> at the end [`ConfiguredSite::teardown`].
//! Dropping a `ConfiguredSite` without `teardown` (error, Ctrl-C turned into a return, panic) undoes the
//! same things.
//!
//! Layout under the scratch location: `<scratch>/<name>.<pid>/` holding `image` (loop images),
//! `mnt/` (the mount point) and `hooks.log` (output of `before`/`after`); the workload runs in
//! `mnt/fsdelta-work`. A `dir` target runs in `<path>/fsdelta-work-<pid>` and marks `<path>`
//! with `.fsdelta-target`.
//!
//! Must never format a device the config does not name with `destroy = true` (guaranteed by
//! `plan::config`), nor one that is mounted or holds a mounted partition (checked by
//! `site::device` right before every mkfs), and never delete what it did not create: every
//! resource is recorded in the state file before it is created, and removed only through its
//! guard.

use super::SiteError;
use super::device::{self, Sysfs};
use super::env::facts_for;
use super::loopdev::{self, Abandoned, AttachedLoop};
use super::mkfs::Mkfs;
use super::mount::Mounted;
use super::state::{Record, Resource, StateFile};
use crate::model::{Direction, Metric, SiteFacts, Unit};
use crate::plan::config::{ConfigFile, Device, Fresh, TargetConfig};
use crate::probe::blockstat::BlockStat;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The marker file that makes a non-empty directory usable as a `dir` target.
pub const DIR_MARKER: &str = ".fsdelta-target";

const WORK: &str = "fsdelta-work";

/// What a sample runs on.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The fresh, empty directory the workload runs in.
    pub dir: PathBuf,
    /// The facts of this sample's target, read after mounting.
    pub facts: SiteFacts,
}

/// A file fsdelta created, removed on drop.
#[derive(Debug)]
struct OwnedFile {
    path: PathBuf,
    record: Option<Record>,
}

impl OwnedFile {
    fn create(
        state: &StateFile,
        path: PathBuf,
        make: impl FnOnce(&Path) -> Result<(), SiteError>,
    ) -> Result<OwnedFile, SiteError> {
        let record = state.record(Resource::File { path: path.clone() })?;
        if let Err(e) = make(&path) {
            let _ = fs::remove_file(&path);
            record.clear()?;
            return Err(e);
        }
        Ok(OwnedFile {
            path,
            record: Some(record),
        })
    }

    fn remove(&mut self) -> Result<(), SiteError> {
        let Some(record) = self.record.take() else {
            return Ok(());
        };
        match fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                self.record = Some(record);
                return Err(SiteError::Io {
                    op: "remove",
                    path: self.path.display().to_string(),
                    source,
                });
            }
        }
        record.clear()
    }
}

impl Drop for OwnedFile {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// A directory fsdelta created, removed (only when empty) on drop.
#[derive(Debug)]
struct OwnedDir {
    path: PathBuf,
    record: Option<Record>,
}

impl OwnedDir {
    fn create(state: &StateFile, path: PathBuf) -> Result<OwnedDir, SiteError> {
        let record = state.record(Resource::Dir { path: path.clone() })?;
        if let Err(source) = fs::create_dir(&path) {
            record.clear()?;
            let hint = if source.kind() == std::io::ErrorKind::AlreadyExists {
                " (a leftover: run `fsdelta cleanup`)"
            } else {
                ""
            };
            return Err(SiteError::Unusable {
                path: path.display().to_string(),
                message: format!("cannot create: {source}{hint}"),
            });
        }
        Ok(OwnedDir {
            path,
            record: Some(record),
        })
    }

    fn remove(&mut self) -> Result<(), SiteError> {
        let Some(record) = self.record.take() else {
            return Ok(());
        };
        match fs::remove_dir(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                self.record = Some(record);
                return Err(SiteError::Io {
                    op: "rmdir",
                    path: self.path.display().to_string(),
                    source,
                });
            }
        }
        record.clear()
    }
}

impl Drop for OwnedDir {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

/// One configuration, prepared sample by sample. Fields that hold resources are declared in the
/// order they must be undone (drop order).
#[derive(Debug)]
pub struct ConfiguredSite {
    mounted: Option<Mounted>,
    attached: Option<AttachedLoop>,
    /// Loop devices given up because someone else kept them busy (see
    /// [`ConfiguredSite::format_and_mount`]); the kernel detaches them when their holder lets go.
    abandoned: Vec<Abandoned>,
    /// Warnings for the run's output, taken by [`ConfiguredSite::take_warnings`].
    warnings: Vec<String>,
    image: Option<OwnedFile>,
    log: Option<OwnedFile>,
    mount_dir: Option<OwnedDir>,
    base: Option<OwnedDir>,
    /// The `dir` target's work directory (removed recursively: fsdelta made all of it).
    dir_work: Option<PathBuf>,
    config: TargetConfig,
    scratch: PathBuf,
    state: StateFile,
    mkfs: Option<Mkfs>,
    /// Kernel name of the block device (`loop3`, `sdb`), once known.
    device_name: Option<String>,
    formatted: bool,
    samples: u32,
    work: Option<PathBuf>,
}

impl ConfiguredSite {
    /// Check that `config` can run here (root, mkfs program, device safety, dir target usable)
    /// without creating anything. `scratch` is the config file's scratch location; `state` the
    /// leftover-state file (normally [`StateFile::default_location`]).
    pub fn new(
        config: &TargetConfig,
        scratch: &Path,
        state: StateFile,
    ) -> Result<ConfiguredSite, SiteError> {
        let unusable = |message: String| SiteError::Unusable {
            path: format!("config '{}'", config.name),
            message,
        };
        // A configuration with a kernel runs in a guest (crate::vm::VmSite), never here.
        if let Some(vm) = &config.vm {
            return Err(unusable(format!(
                "kernel = \"{}\": this configuration runs in a QEMU guest, not on the host target (crate::vm::VmSite runs it)",
                vm.kernel.display()
            )));
        }
        // A state file that cannot be trusted (relative, planted, shared) fails the run now,
        // before any resource would be recorded in it.
        state.check()?;
        let needs_root = !matches!(config.device, Device::Existing { .. });
        if needs_root && !rustix::process::geteuid().is_root() {
            return Err(unusable(format!(
                "fs = \"{}\" needs root (mkfs, mount, loop devices): run fsdelta as root, or use fs = \"dir\"",
                config.fs
            )));
        }
        // A kernel without the filesystem (f2fs and erofs are modules many hosts lack) refuses
        // the run here, before an image, a loop device or a mount point exists.
        if config.fs != crate::plan::config::FsKind::Dir {
            check_kernel_has(config.fs)?;
        }
        let builds_image = matches!(config.device, Device::Image { .. });
        let mkfs = if config.fs.needs_mkfs() || builds_image {
            Some(Mkfs::find(config.fs)?)
        } else {
            None
        };
        if let Device::Image { source } = &config.device {
            match fs::metadata(source) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(unusable(format!(
                        "source '{}' is not a directory: give the tree to pack into the erofs image",
                        source.display()
                    )));
                }
                Err(e) => {
                    return Err(unusable(format!(
                        "source '{}': {e}; give an existing directory to pack into the erofs image",
                        source.display()
                    )));
                }
            }
        }
        if config.fs.needs_mkfs() || builds_image {
            let own = match &config.device {
                Device::Block { path } => Some(path.as_path()),
                _ => None,
            };
            device::check_option_devices(own, &config.mkfs_options, &config.mount_options)?;
        }
        let mut device_name = None;
        match &config.device {
            Device::Block { path } => {
                device_name = Some(device::check_can_format(path, scratch)?.name);
            }
            Device::Existing { path } => check_dir_target(path)?,
            Device::Loop { .. } | Device::Memory { .. } | Device::Image { .. } => {}
        }
        Ok(ConfiguredSite {
            mounted: None,
            attached: None,
            abandoned: Vec::new(),
            warnings: Vec::new(),
            image: None,
            log: None,
            mount_dir: None,
            base: None,
            dir_work: None,
            config: config.clone(),
            scratch: scratch.to_path_buf(),
            state,
            mkfs,
            device_name,
            formatted: false,
            samples: 0,
            work: None,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &TargetConfig {
        &self.config
    }

    /// The kernel name of the device whose counters describe this target (`loop3`, `sdb`, or
    /// the device under a `dir` target); `None` for tmpfs.
    pub fn device_name(&self) -> Option<String> {
        match &self.config.device {
            Device::Memory { .. } => None,
            Device::Existing { path } => device::device_name_holding(path),
            _ => self.device_name.clone(),
        }
    }

    /// Read the device counters now (`None` when the target has no block device). Take one
    /// before and one after the workload; [`BlockStat::delta`] gives the per-sample metrics.
    pub fn counters(&self) -> Result<Option<BlockStat>, SiteError> {
        Ok(self
            .device_name()
            .map(|n| BlockStat::read(&n))
            .transpose()?)
    }

    fn ensure_base(&mut self) -> Result<PathBuf, SiteError> {
        if let Some(b) = &self.base {
            return Ok(b.path.clone());
        }
        fs::create_dir_all(&self.scratch).map_err(|e| SiteError::Unusable {
            path: self.scratch.display().to_string(),
            message: format!("cannot create the scratch location: {e}; set scratch = \"...\" in the config to a writable place"),
        })?;
        let scratch = fs::canonicalize(&self.scratch).map_err(|source| SiteError::Io {
            op: "resolve",
            path: self.scratch.display().to_string(),
            source,
        })?;
        let path = scratch.join(format!("{}.{}", self.config.name, std::process::id()));
        let dir = OwnedDir::create(&self.state, path.clone())?;
        self.base = Some(dir);
        Ok(path)
    }

    /// What happened that the run's output should say (a busy loop device replaced by a fresh
    /// one), since the last call.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// For `device = "loop:SIZE"`: create the sparse image and attach it to a loop device now,
    /// if not done yet (the first [`ConfiguredSite::prepare`] does it otherwise), and return the loop
    /// device. `None` for every other kind of device.
    pub fn attach_loop(&mut self) -> Result<Option<PathBuf>, SiteError> {
        let Device::Loop { size_bytes } = self.config.device else {
            return Ok(None);
        };
        let base = self.ensure_base()?;
        if self.attached.is_none() {
            let image_path = base.join("image");
            if self.image.is_none() {
                let image = OwnedFile::create(&self.state, image_path.clone(), |p| {
                    loopdev::create_sparse_image(p, size_bytes)
                })?;
                self.image = Some(image);
            }
            let l = AttachedLoop::attach(&image_path, &self.state)?;
            self.device_name = Some(l.name());
            self.attached = Some(l);
        }
        Ok(self.attached.as_ref().map(|l| l.device().to_path_buf()))
    }

    /// Make this sample's filesystem (mkfs per sample, or once for `fresh = "run"`), mount it,
    /// and return a fresh, empty directory on it with the facts read back from the system.
    pub fn prepare(&mut self) -> Result<Prepared, SiteError> {
        self.samples += 1;
        let work = match self.config.device.clone() {
            Device::Loop { .. } => {
                let base = self.ensure_base()?;
                let dev = self.attach_loop()?.unwrap_or_default();
                self.format_and_mount(&base, &dev)?
            }
            Device::Block { path } => {
                let base = self.ensure_base()?;
                self.format_and_mount(&base, &path)?
            }
            Device::Image { source } => {
                let base = self.ensure_base()?;
                self.build_and_mount(&base, &source)?
            }
            Device::Memory { size_bytes } => {
                let base = self.ensure_base()?;
                if self.config.fresh == Fresh::Sample {
                    self.unmount_kept()?;
                }
                if self.mounted.is_none() {
                    let mut options = self.config.mount_options.clone();
                    if let Some(size) = size_bytes {
                        if !options.is_empty() {
                            options.push(',');
                        }
                        options.push_str(&format!("size={size}"));
                    }
                    let source = format!("fsdelta-{}", self.config.name);
                    self.mount(&base, &source, "tmpfs", &options)?;
                }
                self.fresh_work_dir()?
            }
            // No scratch directory: a dir target must work without root, where the scratch
            // location may not be writable (it is only needed for hook output).
            Device::Existing { path } => {
                mark_dir_target(&path)?;
                let work = path.join(format!("{WORK}-{}", std::process::id()));
                if work.exists() {
                    remove_tree(&work)?;
                }
                self.dir_work = Some(work.clone());
                fs::create_dir(&work).map_err(|source| SiteError::Io {
                    op: "mkdir",
                    path: work.display().to_string(),
                    source,
                })?;
                work
            }
        };
        self.work = Some(work.clone());
        Ok(Prepared {
            facts: self.facts(&work),
            dir: work,
        })
    }

    /// mkfs (when due) and mount. A loop device fsdelta attached itself that stays busy after
    /// the wait (someone else claims it exclusively, or mkfs says busy) is given up: the image
    /// is attached to a fresh loop device and formatted there once, with a warning; when that
    /// one is busy too, the error names its holders. A device the config names is never
    /// swapped.
    fn format_and_mount(&mut self, base: &Path, dev: &Path) -> Result<PathBuf, SiteError> {
        let mut dev = dev.to_path_buf();
        if !self.formatted || self.config.fresh == Fresh::Sample {
            self.unmount_kept()?;
            match self.format(&dev) {
                Ok(()) => {}
                Err(SiteError::Busy { message, .. }) if self.is_own_loop(&dev) => {
                    let old = dev.clone();
                    dev = self.replace_loop(&message)?;
                    self.format(&dev).map_err(|e| match e {
                        SiteError::Busy { device, message: again } => SiteError::Busy {
                            device,
                            message: format!(
                                "{again} (fsdelta attached the image to it because the loop device it had first, {}, was busy too: {message})",
                                old.display()
                            ),
                        },
                        e => e,
                    })?;
                }
                Err(e) => return Err(e),
            }
            self.formatted = true;
        }
        if self.mounted.is_none() {
            let fs_type = self.config.fs.as_str();
            let options = self.config.mount_options.clone();
            self.mount(base, &dev.display().to_string(), fs_type, &options)?;
        }
        self.fresh_work_dir()
    }

    /// The safety checks and mkfs on `dev`.
    fn format(&mut self, dev: &Path) -> Result<(), SiteError> {
        // Checked right before every mkfs: a loop device is a block device too. The device
        // stays held (O_EXCL) from the checks until mkfs is spawned.
        device::check_option_devices(
            Some(dev),
            &self.config.mkfs_options,
            &self.config.mount_options,
        )?;
        let hold = device::check_can_format(dev, &self.scratch)?;
        self.device_name = Some(hold.name.clone());
        let mkfs = self.mkfs.as_ref().ok_or_else(|| SiteError::Unusable {
            path: dev.display().to_string(),
            message: "no mkfs program".into(),
        })?;
        mkfs.run_held(Some(hold), dev, &self.config.mkfs_options)
    }

    /// Whether `dev` is the loop device fsdelta attached for `device = "loop:SIZE"`.
    fn is_own_loop(&self, dev: &Path) -> bool {
        matches!(self.config.device, Device::Loop { .. })
            && self.attached.as_ref().map(|l| l.device()) == Some(dev)
    }

    /// Give up the attached loop device (busy: `why`) and attach the image to a fresh one.
    fn replace_loop(&mut self, why: &str) -> Result<PathBuf, SiteError> {
        let Some(old) = self.attached.take() else {
            return Err(SiteError::Unusable {
                path: self.config.name.clone(),
                message: "no loop device attached".into(),
            });
        };
        let image = old.backing_file().to_path_buf();
        let abandoned = old.abandon()?;
        let old_dev = abandoned.device().to_path_buf();
        self.abandoned.push(abandoned);
        let l = AttachedLoop::attach(&image, &self.state)?;
        let new = l.device().to_path_buf();
        self.device_name = Some(l.name());
        self.attached = Some(l);
        self.warnings.push(format!(
            "config '{}': loop device {} stayed busy, so fsdelta gave it up and attached the image to {} instead ({} is detached by the kernel when its holder closes it). Why it was busy: {why}",
            self.config.name,
            old_dev.display(),
            new.display(),
            old_dev.display()
        ));
        Ok(new)
    }

    /// erofs: build the image from `source` once (it is read-only, so every sample would build
    /// the same bytes), attach it, and mount it read-only; `fresh = "sample"` remounts it for
    /// every sample so that each starts cold. The workload runs at the image's root.
    fn build_and_mount(&mut self, base: &Path, source: &Path) -> Result<PathBuf, SiteError> {
        if self.attached.is_none() {
            let image_path = base.join("image.erofs");
            let mkfs = self.mkfs.as_ref().ok_or_else(|| SiteError::Unusable {
                path: self.config.name.clone(),
                message: "no mkfs program".into(),
            })?;
            let options = self.config.mkfs_options.clone();
            let image = OwnedFile::create(&self.state, image_path.clone(), |p| {
                mkfs.build_image(p, source, &options)
            })?;
            self.image = Some(image);
            let l = AttachedLoop::attach(&image_path, &self.state)?;
            self.device_name = Some(l.name());
            self.attached = Some(l);
            self.formatted = true;
        }
        if self.config.fresh == Fresh::Sample {
            self.unmount_kept()?;
        }
        if self.mounted.is_none() {
            let dev = self
                .attached
                .as_ref()
                .map(|l| l.device().display().to_string())
                .unwrap_or_default();
            let mut options = self.config.mount_options.clone();
            if !options.split(',').any(|o| o == "ro") {
                if !options.is_empty() {
                    options.push(',');
                }
                options.push_str("ro");
            }
            self.mount(base, &dev, self.config.fs.as_str(), &options)?;
        }
        self.mounted
            .as_ref()
            .map(|m| m.target().to_path_buf())
            .ok_or_else(|| SiteError::Unusable {
                path: self.config.name.clone(),
                message: "not mounted".into(),
            })
    }

    fn mount(
        &mut self,
        base: &Path,
        source: &str,
        fs_type: &str,
        options: &str,
    ) -> Result<std::time::Duration, SiteError> {
        if self.mount_dir.is_none() {
            self.mount_dir = Some(OwnedDir::create(&self.state, base.join("mnt"))?);
        }
        let target = base.join("mnt");
        let (m, took) = Mounted::mount(&self.state, source, &target, fs_type, options)?;
        self.mounted = Some(m);
        Ok(took)
    }

    /// Unmount the current filesystem (if any) between samples. A busy mount is retried briefly
    /// and then kept, mounted and guarded, with an error naming its holders: never detached
    /// lazily here, because a detached btrfs stays alive holding the loop device and every
    /// following mkfs would fail with EBUSY (issue 13 item 10). The next sample retries.
    fn unmount_kept(&mut self) -> Result<std::time::Duration, SiteError> {
        let Some(m) = self.mounted.as_mut() else {
            return Ok(std::time::Duration::ZERO);
        };
        let took = m.try_unmount()?;
        self.mounted = None;
        Ok(took)
    }

    fn fresh_work_dir(&self) -> Result<PathBuf, SiteError> {
        let mnt = self
            .mounted
            .as_ref()
            .map(|m| m.target().to_path_buf())
            .ok_or_else(|| SiteError::Unusable {
                path: self.config.name.clone(),
                message: "not mounted".into(),
            })?;
        let work = mnt.join(WORK);
        if work.exists() {
            remove_tree(&work)?;
        }
        fs::create_dir(&work).map_err(|source| SiteError::Io {
            op: "mkdir",
            path: work.display().to_string(),
            source,
        })?;
        Ok(work)
    }

    /// The facts of the target under `dir`, read from /proc/self/mounts and /sys.
    fn facts(&self, dir: &Path) -> SiteFacts {
        let mut facts = facts_for(dir);
        let c = &self.config;
        let mut put = |k: &str, v: String| {
            facts.extra.insert(k.to_string(), v);
        };
        put("config", c.name.clone());
        put("fresh", c.fresh.as_str().to_string());
        // The hooks are part of the configuration (issue 16): kept with every sample, shown by
        // `show`, and a changed hook is a "what differs" line of `compare` and the report.
        for (k, cmd) in [("hook_before", &c.before), ("hook_after", &c.after)] {
            if let Some(cmd) = cmd {
                put(k, cmd.clone());
            }
        }
        if let Some(mkfs) = &self.mkfs {
            put("mkfs_program", mkfs.program.display().to_string());
            put("mkfs_version", mkfs.version.clone());
            if let (Device::Image { source }, Some(image)) = (&c.device, &self.image) {
                let mut line = mkfs.program.display().to_string();
                for a in mkfs.image_args(&image.path, source, &c.mkfs_options) {
                    line.push(' ');
                    line.push_str(&a);
                }
                put("mkfs_command", line);
                put("image_source", source.display().to_string());
            } else if let Some(dev) = self.mounted_source() {
                put(
                    "mkfs_command",
                    mkfs.command_line(Path::new(&dev), &c.mkfs_options),
                );
            }
        }
        if let Some(name) = self.device_name() {
            for (k, v) in Sysfs::default().facts(&name) {
                put(&k, v);
            }
        }
        if let Some(l) = &self.attached {
            let image = l.backing_file();
            put("image_path", image.display().to_string());
            if let Device::Loop { size_bytes } = c.device {
                put("image_size_bytes", size_bytes.to_string());
            } else if let Ok(m) = fs::metadata(image) {
                put("image_size_bytes", m.len().to_string());
            }
            let holder = facts_for(image.parent().unwrap_or(Path::new("/")));
            put("image_fs_type", holder.fs_type);
            put("image_fs_device", holder.device);
            put("image_fs_mount_options", holder.mount_options);
            if let Ok(dio) = fs::read_to_string(format!("/sys/block/{}/loop/dio", l.name())) {
                put("loop_direct_io", dio.trim().to_string());
            }
        }
        if c.fs.needs_mkfs() || matches!(c.device, Device::Image { .. }) {
            facts.mkfs_options = Some(c.mkfs_options.join(" "));
        }
        facts
    }

    fn mounted_source(&self) -> Option<String> {
        match &self.config.device {
            Device::Block { path } => Some(path.display().to_string()),
            Device::Loop { .. } | Device::Image { .. } => self
                .attached
                .as_ref()
                .map(|l| l.device().display().to_string()),
            _ => None,
        }
    }

    /// Run the config's `before` command (if any) in the sample directory.
    pub fn before_sample(&mut self) -> Result<(), SiteError> {
        let cmd = self.config.before.clone();
        self.hook("before", cmd)
    }

    /// Run the config's `after` command (if any) in the sample directory.
    pub fn after_sample(&mut self) -> Result<(), SiteError> {
        let cmd = self.config.after.clone();
        self.hook("after", cmd)
    }

    /// Runs `sh -c CMD` in the sample directory with `FSDELTA_CONFIG`, `FSDELTA_DIR`,
    /// `FSDELTA_DEVICE` (when there is one), `FSDELTA_SAMPLE` and `FSDELTA_HOOK` set. Output goes
    /// to `hooks.log` (not a pipe: a command may leave a profiler running in the background).
    fn hook(&mut self, which: &str, cmd: Option<String>) -> Result<(), SiteError> {
        let Some(cmd) = cmd else {
            return Ok(());
        };
        let base = self.ensure_base()?;
        if self.log.is_none() {
            self.log = Some(OwnedFile::create(
                &self.state,
                base.join("hooks.log"),
                |p| {
                    fs::File::create_new(p)
                        .map(drop)
                        .map_err(|source| SiteError::Io {
                            op: "create",
                            path: p.display().to_string(),
                            source,
                        })
                },
            )?);
        }
        let log_path = base.join("hooks.log");
        let io = |op, source| SiteError::Io {
            op,
            path: log_path.display().to_string(),
            source,
        };
        let log = fs::OpenOptions::new()
            .append(true)
            .open(&log_path)
            .map_err(|e| io("open", e))?;
        let start = log.metadata().map(|m| m.len()).unwrap_or(0);
        let dir = self.work.clone().unwrap_or(base);
        let mut command = Command::new("sh");
        crate::os::child::dies_with_this_thread(&mut command)
            .arg("-c")
            .arg(&cmd)
            .current_dir(&dir)
            .env("FSDELTA_CONFIG", &self.config.name)
            .env("FSDELTA_DIR", &dir)
            .env("FSDELTA_SAMPLE", self.samples.to_string())
            .env("FSDELTA_HOOK", which)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| io("dup", e))?)
            .stderr(log);
        if let Some(dev) = self.mounted_source() {
            command.env("FSDELTA_DEVICE", dev);
        }
        let status = command.status().map_err(|source| SiteError::Io {
            op: "run sh -c",
            path: cmd.clone(),
            source,
        })?;
        if status.success() {
            return Ok(());
        }
        let mut output = String::new();
        if let Ok(mut f) = fs::File::open(&log_path)
            && f.seek(SeekFrom::Start(start)).is_ok()
        {
            let _ = f.take(64 * 1024).read_to_string(&mut output);
        }
        let tail: Vec<&str> = output.lines().rev().take(6).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Err(SiteError::CommandFailed {
            what: format!("config '{}': {which}", self.config.name),
            command: cmd,
            status: status.to_string(),
            output: if tail.is_empty() {
                "no output; fix the command or remove it from the config".into()
            } else {
                tail.join(" | ")
            },
        })
    }

    /// After the workload: unmount (timed: `umount_s`, writeback of what the workload left dirty
    /// included) and mount again (timed: `mount_s`), as fsperf does. Leaves the filesystem
    /// mounted for the next [`prepare`](ConfiguredSite::prepare). Only for filesystems fsdelta formats;
    /// tmpfs and dir targets return no metrics.
    pub fn finish_sample(&mut self) -> Result<Vec<Metric>, SiteError> {
        self.work = None;
        if !self.config.fs.needs_mkfs() {
            return Ok(Vec::new());
        }
        if self.mounted.is_none() {
            return Ok(Vec::new());
        }
        let umount = self.unmount_kept()?;
        let base = self.ensure_base()?;
        let dev = self.mounted_source().unwrap_or_default();
        let fs_type = self.config.fs.as_str();
        let options = self.config.mount_options.clone();
        let mount = self.mount(&base, &dev, fs_type, &options)?;
        Ok(vec![
            Metric::new(
                "umount_s",
                umount.as_secs_f64(),
                Unit::Seconds,
                Direction::LowerIsBetter,
            ),
            Metric::new(
                "mount_s",
                mount.as_secs_f64(),
                Unit::Seconds,
                Direction::LowerIsBetter,
            ),
        ])
    }

    /// Undo everything: unmount, detach the loop device (and wait for the kernel), remove the
    /// image, the log and the directories fsdelta made. Every step is tried; the first error is
    /// returned (what failed stays in the state file for `fsdelta cleanup`).
    pub fn teardown(mut self) -> Result<(), SiteError> {
        self.undo_all()
    }

    fn undo_all(&mut self) -> Result<(), SiteError> {
        let mut first: Option<SiteError> = None;
        let mut keep = |r: Result<(), SiteError>| {
            if let Err(e) = r
                && first.is_none()
            {
                first = Some(e);
            }
        };
        if let Some(w) = self.dir_work.take() {
            keep(remove_tree(&w));
        }
        if let Some(m) = self.mounted.take() {
            keep(m.unmount().map(drop));
        }
        if let Some(l) = self.attached.take() {
            keep(l.detach());
        }
        for a in std::mem::take(&mut self.abandoned) {
            keep(a.finish());
        }
        for f in [self.image.as_mut(), self.log.as_mut()]
            .into_iter()
            .flatten()
        {
            keep(f.remove());
        }
        for d in [self.mount_dir.as_mut(), self.base.as_mut()]
            .into_iter()
            .flatten()
        {
            keep(d.remove());
        }
        self.image = None;
        self.log = None;
        self.mount_dir = None;
        self.base = None;
        match first {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// A [`ConfiguredSite`] for every configuration of `file`, all checked before any is used, so that a
/// missing mkfs program or a refused device fails the run before its first sample. Errors name
/// the configuration.
pub fn configured_sites(
    file: &ConfigFile,
    state: &StateFile,
) -> Result<Vec<ConfiguredSite>, SiteError> {
    file.configs
        .iter()
        .map(|c| {
            ConfiguredSite::new(c, &file.scratch, state.clone()).map_err(|e| SiteError::Config {
                name: c.name.clone(),
                line: c.line,
                error: Box::new(e),
            })
        })
        .collect()
}

impl Drop for ConfiguredSite {
    fn drop(&mut self) {
        let _ = self.undo_all();
    }
}

/// Whether the running kernel can mount `fs` (listed in /proc/filesystems, or a module that
/// can be loaded); the error names the module and the kernel option, and for a filesystem a
/// guest can format (f2fs) says how to run the configuration in a guest kernel instead.
fn check_kernel_has(fs: crate::plan::config::FsKind) -> Result<(), SiteError> {
    let name = fs.as_str();
    let listed = |t: &str| t.lines().any(|l| l.split_whitespace().last() == Some(name));
    let text = fs::read_to_string("/proc/filesystems").unwrap_or_default();
    if listed(&text) {
        return Ok(());
    }
    let modprobe = std::process::Command::new("modprobe")
        .arg(name)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output();
    if listed(&fs::read_to_string("/proc/filesystems").unwrap_or_default()) {
        return Ok(());
    }
    Err(SiteError::Unusable {
        path: format!("fs = \"{name}\""),
        message: missing_fs_message(fs, &kernel_release(), &modprobe_said(&modprobe)),
    })
}

/// The running kernel's release (`uname -r`), or "unknown".
fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Why `modprobe NAME` did not load the module, in a few words.
fn modprobe_said(out: &std::io::Result<std::process::Output>) -> String {
    match out {
        Err(e) => format!("modprobe could not run: {e}"),
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stderr);
            let line = text.lines().map(str::trim).find(|l| !l.is_empty());
            match line {
                Some(l) => format!("modprobe said: {l}"),
                None => format!("modprobe exited with {}", o.status),
            }
        }
    }
}

fn missing_fs_message(fs: crate::plan::config::FsKind, release: &str, modprobe: &str) -> String {
    let name = fs.as_str();
    let option = format!("CONFIG_{}_FS", name.to_ascii_uppercase());
    let mut m = format!(
        "the running kernel ({release}) has no {name}: it is not in /proc/filesystems and `modprobe {name}` did not load the {name} module ({modprobe}); load the {name} module, or boot a kernel built with {option}"
    );
    if fs == crate::plan::config::FsKind::F2fs {
        m.push_str(&format!(
            ", or run this configuration in a guest kernel that has it: add kernel = \"/path/to/linux-image-RELEASE.deb\" (or a vmlinuz) to the [[config]], see `fsdelta kernels` and \"Kernel A/B runs\" in docs/kernels.md (Debian's 6.1 kernels build {name} as a module with {option}=m)"
        ));
    }
    m
}

fn remove_tree(dir: &Path) -> Result<(), SiteError> {
    fs::remove_dir_all(dir).map_err(|source| SiteError::Io {
        op: "remove",
        path: dir.display().to_string(),
        source,
    })
}

/// A `dir` target must exist and be empty, or carry fsdelta's marker (then only fsdelta's own
/// work directories are ever touched in it).
fn check_dir_target(path: &Path) -> Result<(), SiteError> {
    let unusable = |message: String| SiteError::Unusable {
        path: path.display().to_string(),
        message,
    };
    let entries = fs::read_dir(path).map_err(|e| {
        unusable(format!(
            "{e}; a dir target must be an existing directory: create it (mkdir -p)"
        ))
    })?;
    if path.join(DIR_MARKER).exists() {
        return Ok(());
    }
    if let Some(e) = entries.flatten().next() {
        return Err(unusable(format!(
            "is not empty (it holds {}) and has no {DIR_MARKER} marker: fsdelta never deletes what it did not create, so give an empty directory",
            e.file_name().to_string_lossy()
        )));
    }
    Ok(())
}

fn mark_dir_target(path: &Path) -> Result<(), SiteError> {
    let marker = path.join(DIR_MARKER);
    if marker.exists() {
        return Ok(());
    }
    check_dir_target(path)?;
    fs::write(
        &marker,
        "fsdelta uses this directory as a benchmark target; it only ever removes its own fsdelta-work-* directories in it.\n",
    )
    .map_err(|source| SiteError::Io {
        op: "write",
        path: marker.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::config::parse;

    fn config(body: &str) -> TargetConfig {
        parse(&format!("[[config]]\nname = \"t\"\n{body}\n"), "t.toml")
            .unwrap()
            .configs
            .remove(0)
    }

    #[test]
    fn a_dir_target_is_marked_gets_fresh_work_dirs_and_keeps_user_files() {
        let scratch = tempfile::tempdir().unwrap();
        let target = tempfile::tempdir().unwrap();
        let state = StateFile::new(scratch.path().join("state.json"));
        let c = config(&format!(
            "fs = \"dir\"\npath = \"{}\"\nfresh = \"run\"\nbefore = \"echo hello > hook-was-here\"\nafter = \"test -f hook-was-here\"",
            target.path().display()
        ));
        let mut t = ConfiguredSite::new(&c, scratch.path(), state.clone()).unwrap();
        let p = t.prepare().unwrap();
        assert!(p.dir.starts_with(target.path()));
        assert!(target.path().join(DIR_MARKER).exists());
        assert_eq!(p.facts.extra["config"], "t");
        assert!(!p.facts.fs_type.is_empty());
        assert_eq!(p.facts.extra["hook_before"], "echo hello > hook-was-here");
        assert_eq!(p.facts.extra["hook_after"], "test -f hook-was-here");
        t.before_sample().unwrap();
        assert!(
            p.dir.join("hook-was-here").exists(),
            "hooks run in the sample dir"
        );
        t.after_sample().unwrap();
        fs::write(p.dir.join("data"), b"x").unwrap();
        assert!(t.finish_sample().unwrap().is_empty());
        let p2 = t.prepare().unwrap();
        assert!(!p2.dir.join("data").exists(), "every sample starts empty");
        fs::write(target.path().join("user-file"), b"mine").unwrap();
        t.teardown().unwrap();
        assert!(!p2.dir.exists());
        assert!(target.path().join("user-file").exists());
        assert!(state.entries().unwrap().is_empty(), "nothing left recorded");
        assert_eq!(
            fs::read_dir(scratch.path()).unwrap().count(),
            2,
            "state + lock only"
        );

        // Without hooks, a dir target never touches the scratch location.
        let c = config(&format!(
            "fs = \"dir\"\npath = \"{}\"",
            target.path().display()
        ));
        let nowhere = Path::new("/nonexistent/fsdelta-scratch");
        let mut t = ConfiguredSite::new(&c, nowhere, state.clone()).unwrap();
        t.prepare().unwrap();
        t.teardown().unwrap();
        assert!(!nowhere.exists());
    }

    #[test]
    fn a_failing_hook_says_what_it_printed() {
        let scratch = tempfile::tempdir().unwrap();
        let target = tempfile::tempdir().unwrap();
        let state = StateFile::new(scratch.path().join("state.json"));
        let c = config(&format!(
            "fs = \"dir\"\npath = \"{}\"\nbefore = \"echo profiler-missing >&2; exit 3\"",
            target.path().display()
        ));
        let mut t = ConfiguredSite::new(&c, scratch.path(), state.clone()).unwrap();
        t.prepare().unwrap();
        let e = t.before_sample().unwrap_err().to_string();
        assert!(
            e.contains("profiler-missing") && e.contains("before"),
            "{e}"
        );
        drop(t);
        assert!(
            state.entries().unwrap().is_empty(),
            "drop undoes everything"
        );
    }

    #[test]
    fn targets_are_checked_up_front_and_errors_name_the_config() {
        let scratch = tempfile::tempdir().unwrap();
        let target = tempfile::tempdir().unwrap();
        let text = format!(
            "scratch = \"{}\"\n[[config]]\nname = \"ok\"\nfs = \"dir\"\npath = \"{}\"\n\n[[config]]\nname = \"gone\"\nfs = \"dir\"\npath = \"/nonexistent/x\"\n",
            scratch.path().display(),
            target.path().display()
        );
        let file = parse(&text, "t.toml").unwrap();
        let state = StateFile::new(scratch.path().join("s.json"));
        let e = configured_sites(&file, &state).unwrap_err().to_string();
        assert!(e.starts_with("config 'gone' (line 7): "), "{e}");
        let file = ConfigFile {
            configs: file.configs[..1].to_vec(),
            ..file
        };
        let ts = configured_sites(&file, &state).unwrap();
        assert_eq!(ts.len(), 1);
        assert_eq!(ts[0].config().name, "ok");
    }

    #[test]
    fn a_kernel_without_f2fs_is_named_with_the_module_and_the_guest_fix() {
        use crate::plan::config::FsKind;
        let m = missing_fs_message(
            FsKind::F2fs,
            "6.18.44",
            "modprobe said: FATAL: Module f2fs not found",
        );
        for part in [
            "the running kernel (6.18.44) has no f2fs",
            "`modprobe f2fs`",
            "the f2fs module",
            "Module f2fs not found",
            "CONFIG_F2FS_FS",
            "kernel = \"",
            "Kernel A/B runs",
        ] {
            assert!(m.contains(part), "{part}: {m}");
        }
        // erofs cannot run in a guest yet: its message offers no guest.
        let m = missing_fs_message(FsKind::Erofs, "6.18.44", "modprobe exited with 1");
        assert!(
            m.contains("CONFIG_EROFS_FS") && !m.contains("kernel = "),
            "{m}"
        );
    }

    #[test]
    fn a_non_empty_unmarked_dir_is_refused() {
        let scratch = tempfile::tempdir().unwrap();
        let target = tempfile::tempdir().unwrap();
        fs::write(target.path().join("precious"), b"x").unwrap();
        let c = config(&format!(
            "fs = \"dir\"\npath = \"{}\"",
            target.path().display()
        ));
        let e = ConfiguredSite::new(&c, scratch.path(), StateFile::new(scratch.path().join("s")))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("precious") && e.contains("empty directory"),
            "{e}"
        );
        let c = config("fs = \"dir\"\npath = \"/nonexistent/fsdelta\"");
        let e = ConfiguredSite::new(&c, scratch.path(), StateFile::new(scratch.path().join("s")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("mkdir -p"), "{e}");
    }
}
