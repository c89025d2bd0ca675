//! The host side of a configuration with a kernel: [`VmSite`] resolves the kernel, its
//! modules, the initramfs and the accelerator once, then runs one repetition per boot
//! ([`VmSite::run_repetition`]): format the disk images with the configuration's mkfs (on the
//! host, so both kernels get the same mkfs version), boot, let the guest run the tests, read the
//! samples back and label them with the guest's facts.
//!
//! Must never leave anything behind: every file (work directory, images, initramfs, console and
//! results logs, pid file) is recorded in the state file before it is created and removed on
//! every path out, a Ctrl-C included; qemu is killed by [`super::qemu::Qemu`]'s guard.

use super::initramfs;
use super::job::{GuestLine, Job, JobDisk};
use super::kernel::{self, Kernel};
use super::modules::{self, ModuleTree};
use super::qemu::{self, Accel, Boot, Disk, Ending};
use super::{EMULATED_LABEL, VmError};
use crate::model::{Direction, Metric, NewSample, SampleStatus, SiteFacts, Unit};
use crate::plan::config::{Device, Fresh, TargetConfig};
use crate::plan::suite::{EngineSpec, TestSpec};
use crate::probe::system;
use crate::site::mkfs::Mkfs;
use crate::site::state::{Record, Resource};
use crate::site::{StateFile, loopdev};
use crate::workload::CancelToken;
use chrono::Utc;
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Guest memory when the configuration names none.
pub const DEFAULT_MEMORY: u64 = 2 << 30;
/// Guest vCPUs when the configuration names none.
pub const DEFAULT_CPUS: u32 = 2;
/// The most tests one guest runs with `fresh = "sample"` (one virtio disk each).
pub const MAX_DISKS: usize = 20;

/// Timeouts and switches of a repetition.
#[derive(Clone, Debug)]
pub struct RepetitionOptions {
    /// Drop the guest's page cache before each sample.
    pub drop_caches: bool,
    /// Measure what each sample left on disk (the suite's `ondisk` key).
    pub ondisk: bool,
    /// Measure fragmentation again on the disk mounted again after each sample (the suite's
    /// `ondisk_remount` key).
    pub ondisk_remount: bool,
    /// Most time from qemu's start to the guest's ready marker.
    pub ready_timeout: Duration,
    /// Most time for a whole boot (all the repetition's tests); a guest still running then is
    /// killed and its unfinished samples fail with the console's last lines.
    pub total_timeout: Duration,
    /// Record a CPU profile around each workload with perf in the guest, folded with this
    /// scope ([`Repetition::profiles`]); `None`: no profiles.
    pub profile: Option<crate::probe::profile::ProfileScope>,
}

impl Default for RepetitionOptions {
    /// Drop caches; 120 s to ready; `$FSDELTA_VM_TIMEOUT` seconds (default 3600) per boot.
    fn default() -> Self {
        let total = std::env::var("FSDELTA_VM_TIMEOUT")
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|s| *s > 0.0)
            .unwrap_or(3600.0);
        RepetitionOptions {
            drop_caches: true,
            ondisk: true,
            ondisk_remount: false,
            ready_timeout: Duration::from_secs(120),
            total_timeout: Duration::from_secs_f64(total),
            profile: None,
        }
    }
}

/// The facts of one boot, put into each of its samples' facts (`extra`).
#[derive(Clone, Debug, PartialEq)]
pub struct VmFacts {
    /// The guest's `uname -r`.
    pub kernel_release: String,
    /// The guest's `uname -v`.
    pub kernel_version: String,
    /// The kernel as the configuration names it.
    pub kernel_path: String,
    /// `kvm` or `tcg`.
    pub accel: Accel,
    /// vCPUs.
    pub cpus: u32,
    /// Memory in bytes.
    pub memory_bytes: u64,
    /// Seconds from qemu's start to the ready marker.
    pub boot_s: f64,
    /// `pvh` (the vmlinux booted directly) or `bzimage`.
    pub entry: &'static str,
    /// QEMU's disk cache mode.
    pub disk_cache: &'static str,
}

impl VmFacts {
    /// The VM's shape in words (`2 vCPU, 2048 MiB, tcg`).
    pub fn shape(&self) -> String {
        format!(
            "{} vCPU, {} MiB, {}",
            self.cpus,
            self.memory_bytes >> 20,
            self.accel.as_str()
        )
    }

    /// Put the facts into a sample's target facts.
    pub fn apply(&self, facts: &mut SiteFacts) {
        let x = &mut facts.extra;
        x.insert("vm_kernel".into(), self.kernel_release.clone());
        x.insert("vm_kernel_version".into(), self.kernel_version.clone());
        x.insert("vm_kernel_path".into(), self.kernel_path.clone());
        x.insert("vm_accel".into(), self.accel.as_str().into());
        x.insert("vm_shape".into(), self.shape());
        x.insert("vm_boot_s".into(), format!("{:.3}", self.boot_s));
        x.insert("vm_entry".into(), self.entry.into());
        x.insert("vm_disk_cache".into(), self.disk_cache.into());
        if self.accel == Accel::Tcg {
            x.insert("emulated".into(), EMULATED_LABEL.into());
        }
    }
}

/// What one repetition (one boot) gave.
#[derive(Debug)]
pub struct Repetition {
    /// One sample per test that was not skipped, in test order; failed ones carry the reason
    /// (and, when the guest hung or died, the console's last lines).
    pub samples: Vec<NewSample>,
    /// Tests the guest skipped (test, why).
    pub skipped: Vec<(String, String)>,
    /// The CPU profile of each profiled sample (its test, the profile as the store keeps it),
    /// folded in the guest; store each with its sample.
    pub profiles: Vec<(String, crate::model::StoredProfile)>,
    /// Warnings of the guest's samples (a declared metric missing from a command's output),
    /// each naming its configuration and test, to say as the host's own.
    pub warnings: Vec<String>,
    /// The boot's facts, when the guest reached ready and said hello.
    pub facts: Option<VmFacts>,
    /// Seconds of the whole cycle: images, mkfs, boot, job, power-off, cleanup.
    pub cycle_s: f64,
}

/// The disks of one boot: the image files made for it alone (removed when dropped), what the
/// job says of each disk, and what qemu attaches.
type BootDisks = (Vec<OwnedFile>, Vec<JobDisk>, Vec<Disk>);

/// A file this process made, recorded in the state file; removed on drop.
#[derive(Debug)]
struct OwnedFile {
    path: PathBuf,
    record: Option<Record>,
}

impl OwnedFile {
    fn record(state: &StateFile, path: PathBuf) -> Result<OwnedFile, VmError> {
        let record = state.record(Resource::File { path: path.clone() })?;
        Ok(OwnedFile {
            path,
            record: Some(record),
        })
    }
}

impl Drop for OwnedFile {
    fn drop(&mut self) {
        if let Some(r) = self.record.take() {
            match fs::remove_file(&self.path) {
                Ok(()) => {
                    let _ = r.clear();
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let _ = r.clear();
                }
                // Stays in the state file for `fsdelta cleanup`.
                Err(_) => {}
            }
        }
    }
}

/// A directory this process made (empty when removed); removed on drop.
#[derive(Debug)]
struct OwnedDir {
    path: PathBuf,
    record: Option<Record>,
}

impl OwnedDir {
    fn create(state: &StateFile, path: PathBuf) -> Result<OwnedDir, VmError> {
        let record = state.record(Resource::Dir { path: path.clone() })?;
        if let Err(e) = fs::create_dir(&path) {
            let _ = record.clear();
            return Err(VmError::io("create directory", &path, e));
        }
        Ok(OwnedDir {
            path,
            record: Some(record),
        })
    }
}

impl Drop for OwnedDir {
    fn drop(&mut self) {
        if let Some(r) = self.record.take()
            && fs::remove_dir(&self.path).is_ok()
        {
            let _ = r.clear();
        }
    }
}

/// One configuration with a kernel, ready to boot. Fields holding files are declared in the
/// order they are removed (drop order: the run disk before the work directory).
#[derive(Debug)]
pub struct VmSite {
    run_disk: Option<OwnedFile>,
    work: Option<OwnedDir>,
    /// The directory every configuration's per-boot disk images are made in (the first
    /// configuration of the process makes and owns it): one place for all, so that where the
    /// host's filesystem puts an image does not depend on the configuration (the A/A bias,
    /// issue 36).
    disks: Option<OwnedDir>,
    disks_dir: PathBuf,
    config: TargetConfig,
    kernel: Kernel,
    qemu: PathBuf,
    base: PathBuf,
    payload: PathBuf,
    accel: Accel,
    warnings: Vec<String>,
    mkfs: Option<Mkfs>,
    state: StateFile,
    cpus: u32,
    memory_bytes: u64,
    disk_cache: &'static str,
    /// Whether the guest mounts the host's root directory (the host's userland and files), or
    /// why not (a kernel without 9p).
    host_root: Result<(), String>,
}

/// Without a module tree, every driver in `needs` must be built into the kernel, as its
/// configuration (`config-RELEASE` beside it, a build tree's `.config`) says; else the kernel is
/// refused before booting, naming the `modules =` key.
fn built_in(kernel: &Kernel, needs: &[modules::Need]) -> Result<(), VmError> {
    let config = kernel::config_text(kernel);
    for need in needs {
        let value = config
            .as_deref()
            .and_then(|c| kernel::config_value(c, &need.option));
        let message = match (value, &config) {
            (Some('y'), _) => continue,
            (Some(_), _) => format!(
                "builds {} as a module (CONFIG_{}=m), needed because {}, but its modules are not beside it (lib/modules/{} next to its boot/ directory) nor in /lib/modules/{}: give modules = \"DIR\" (the kernel's lib/modules/{} or build tree) in the configuration",
                need.module, need.option, need.why, kernel.release, kernel.release, kernel.release
            ),
            (None, Some(_)) => format!(
                "has no {} driver (CONFIG_{} is not set), needed because {}: build the kernel with CONFIG_{}=y or =m",
                need.module, need.option, need.why, need.option
            ),
            (None, None) => format!(
                "has no modules beside it (lib/modules/{} next to its boot/ directory, /lib/modules/{}) and no config-{} that says {} (CONFIG_{}) is built in, needed because {}: give modules = \"DIR\" (the kernel's lib/modules/{} or build tree) in the configuration",
                kernel.release,
                kernel.release,
                kernel.release,
                need.module,
                need.option,
                need.why,
                kernel.release
            ),
        };
        return Err(VmError::Kernel {
            path: kernel.given.display().to_string(),
            message,
        });
    }
    Ok(())
}

fn size_of(p: &Path) -> u64 {
    fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

impl VmSite {
    /// Check and prepare `config` (which must have a kernel): qemu and busybox-static present,
    /// the kernel resolved, its modules found, the initramfs built (or taken from the cache),
    /// enough memory, the accelerator chosen. `guest_binary` is the fsdelta binary the guest
    /// runs (normally this one, `/proc/self/exe`).
    pub fn new(
        config: &TargetConfig,
        scratch: &Path,
        state: StateFile,
        guest_binary: &Path,
    ) -> Result<VmSite, VmError> {
        Self::with_cache(config, scratch, state, guest_binary, &super::cache_dir())
    }

    /// [`VmSite::new`] with the cache at `cache` instead of [`super::cache_dir`].
    pub fn with_cache(
        config: &TargetConfig,
        scratch: &Path,
        state: StateFile,
        guest_binary: &Path,
        cache: &Path,
    ) -> Result<VmSite, VmError> {
        let vm = config.vm.as_ref().ok_or_else(|| {
            VmError::Unsupported(format!(
                "config '{}' has no kernel: it runs on the host",
                config.name
            ))
        })?;
        if !rustix::process::geteuid().is_root() {
            return Err(VmError::Unsupported(format!(
                "config '{}': a guest's disk is formatted and its files recorded as root: run fsdelta as root",
                config.name
            )));
        }
        let qemu = qemu::find_qemu()?;
        initramfs::check_busybox()?;
        let kernel = kernel::resolve(&vm.kernel, vm.modules.as_deref(), cache)?;
        let fs_name = config.fs.as_str();
        // A formatted image, or an erofs image built from `source`: either is a virtio disk.
        let erofs_source = match &config.device {
            Device::Image { source } => Some(source.clone()),
            _ => None,
        };
        if let Some(src) = &erofs_source
            && !src.is_dir()
        {
            return Err(VmError::Unsupported(format!(
                "config '{}': source = \"{}\" is not a directory: give the tree to pack into the erofs image",
                config.name,
                src.display()
            )));
        }
        let disk = config.fs.needs_mkfs() || erofs_source.is_some();
        let needs = modules::needs(fs_name, disk);
        let (mods, host_root) = match &kernel.modules {
            Some(root) => {
                let tree = ModuleTree::open(root)?;
                let mut mods = tree.resolve(&needs, &kernel.release)?;
                let mut wanted = modules::host_root_needs();
                wanted.extend(modules::host_root_wants());
                let share = tree
                    .resolve(&wanted, &kernel.release)
                    .or_else(|_| tree.resolve(&modules::host_root_needs(), &kernel.release));
                let host_root = match share {
                    Ok(extra) => {
                        for m in extra {
                            if !mods.contains(&m) {
                                mods.push(m);
                            }
                        }
                        Ok(())
                    }
                    Err(e) => Err(e.to_string()),
                };
                (mods, host_root)
            }
            None => {
                built_in(&kernel, &needs)?;
                let host_root =
                    built_in(&kernel, &modules::host_root_needs()).map_err(|e| e.to_string());
                (Vec::new(), host_root)
            }
        };
        let base = initramfs::base(&kernel.release, &mods, fs_name, host_root.is_ok(), cache)?;
        let payload = initramfs::payload(guest_binary, cache)?;
        let memory_bytes = vm.memory_bytes.unwrap_or(DEFAULT_MEMORY);
        let initrd = size_of(&base) + size_of(&payload);
        // The archive and its unpacked copy both sit in guest memory while the kernel unpacks,
        // and the kernel with its page cache needs room besides.
        let least = 2 * initrd + (192 << 20);
        let tmpfs_size = match config.device {
            Device::Memory { size_bytes } => size_bytes.unwrap_or(0),
            _ => 0,
        };
        if memory_bytes < least + tmpfs_size {
            return Err(VmError::Unsupported(format!(
                "config '{}': memory = {} MiB is too little: the guest's initramfs is {} MiB{}; give memory = \"{}M\" or more",
                config.name,
                memory_bytes >> 20,
                initrd >> 20,
                if tmpfs_size > 0 {
                    " and its tmpfs takes size"
                } else {
                    ""
                },
                (least + tmpfs_size).div_ceil(1 << 20)
            )));
        }
        let mkfs = if disk {
            Some(Mkfs::find(config.fs)?)
        } else {
            None
        };

        // The scratch location is the configuration's (as for host targets: made, never removed).
        fs::create_dir_all(scratch)
            .map_err(|e| VmError::io("create the scratch location", scratch, e))?;
        let scratch = fs::canonicalize(scratch).map_err(|e| VmError::io("resolve", scratch, e))?;
        let disks_dir = scratch.join(format!("vm-disks.{}", std::process::id()));
        let disks = if disks_dir.is_dir() {
            None
        } else {
            Some(OwnedDir::create(&state, disks_dir.clone())?)
        };
        let work = OwnedDir::create(
            &state,
            scratch.join(format!("vm-{}.{}", config.name, std::process::id())),
        )?;
        let disk_cache = direct_io_cache_mode(&work.path, &state)?;
        let mut t = VmSite {
            run_disk: None,
            work: Some(work),
            disks,
            disks_dir,
            config: config.clone(),
            kernel,
            qemu,
            base,
            payload,
            accel: Accel::Tcg,
            warnings: Vec::new(),
            mkfs,
            state,
            cpus: vm.cpus.unwrap_or(DEFAULT_CPUS),
            memory_bytes,
            disk_cache,
            host_root,
        };
        let (accel, warning) = t.probe_accel(cache)?;
        t.accel = accel;
        t.warnings.extend(warning);
        kernel::remember(&t.kernel, cache);
        Ok(t)
    }

    /// The configuration.
    pub fn config(&self) -> &TargetConfig {
        &self.config
    }

    /// The resolved kernel.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The accelerator chosen.
    pub fn accel(&self) -> Accel {
        self.accel
    }

    /// Warnings for the user (a fallback to TCG), to print once.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    fn work_dir(&self) -> &Path {
        self.work
            .as_ref()
            .map(|w| w.path.as_path())
            .unwrap_or(Path::new("/nonexistent"))
    }

    /// Per-boot files: console, results, stderr, pid file, initramfs; recorded, removed on
    /// drop.
    fn boot_files(&self, tag: &str) -> Result<(Vec<OwnedFile>, [PathBuf; 5]), VmError> {
        let names = ["console", "results", "stderr", "pid", "initrd"];
        let mut owned = Vec::new();
        let mut paths: [PathBuf; 5] = Default::default();
        for (i, n) in names.iter().enumerate() {
            let p = self.work_dir().join(format!("{tag}.{n}"));
            owned.push(OwnedFile::record(&self.state, p.clone())?);
            paths[i] = p;
        }
        Ok((owned, paths))
    }

    fn boot_spec(&self, paths: &[PathBuf; 5], disks: Vec<Disk>, opts: &RepetitionOptions) -> Boot {
        let vm = self.config.vm.as_ref();
        Boot {
            kernel: self.kernel.boot.clone(),
            initrd: paths[4].clone(),
            cmdline: vm.and_then(|v| v.cmdline.clone()),
            accel: self.accel,
            cpus: self.cpus,
            memory_bytes: self.memory_bytes,
            disks,
            console: paths[0].clone(),
            results: paths[1].clone(),
            stderr: paths[2].clone(),
            pidfile: paths[3].clone(),
            ready_timeout: opts.ready_timeout,
            total_timeout: opts.total_timeout,
            host_root: self.host_root.is_ok(),
        }
    }

    fn write_initrd(&self, path: &Path, job: Option<&[u8]>) -> Result<(), VmError> {
        let mut f = fs::File::create(path).map_err(|e| VmError::io("create", path, e))?;
        for part in [&self.base, &self.payload] {
            let bytes = fs::read(part).map_err(|e| {
                VmError::io(
                    "read (another fsdelta's clean-up of the cache removed it? run again)",
                    part,
                    e,
                )
            })?;
            f.write_all(&bytes)
                .map_err(|e| VmError::io("write", path, e))?;
        }
        if let Some(j) = job {
            f.write_all(&initramfs::job_archive(j))
                .map_err(|e| VmError::io("write", path, e))?;
        }
        Ok(())
    }

    fn probe_accel(&self, cache: &Path) -> Result<(Accel, Option<String>), VmError> {
        let (_files, paths) = self.boot_files("probe")?;
        self.write_initrd(&paths[4], None)?;
        let spec = self.boot_spec(&paths, Vec::new(), &RepetitionOptions::default());
        qemu::choose_accel(&self.qemu, &spec, cache, Duration::from_secs(8))
    }

    /// An erofs image built from `source` with the configuration's mkfs.erofs options (on the
    /// host, so both kernels read the same bytes); the guest gets it read-only.
    fn make_image(&self, path: PathBuf, source: &Path) -> Result<(OwnedFile, JobDisk), VmError> {
        let owned = OwnedFile::record(&self.state, path.clone())?;
        let mkfs = self.mkfs.as_ref().expect("mkfs.erofs for an erofs image");
        mkfs.build_image(&path, source, &self.config.mkfs_options)?;
        let disk = JobDisk {
            device: String::new(),
            mkfs_command: self.image_command(&path, source),
            mkfs_version: mkfs.version.clone(),
        };
        Ok((owned, disk))
    }

    fn image_command(&self, path: &Path, source: &Path) -> String {
        let mkfs = self.mkfs.as_ref().expect("mkfs.erofs for an erofs image");
        std::iter::once(mkfs.program.display().to_string())
            .chain(mkfs.image_args(path, source, &self.config.mkfs_options))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A sparse image, formatted with the configuration's mkfs.
    fn make_disk(&self, path: PathBuf) -> Result<(OwnedFile, JobDisk), VmError> {
        let owned = OwnedFile::record(&self.state, path.clone())?;
        let Device::Loop { size_bytes } = self.config.device else {
            return Err(VmError::Unsupported(
                "only device = \"loop:SIZE\" can be given to a guest".into(),
            ));
        };
        loopdev::create_sparse_image(&path, size_bytes)?;
        let mkfs = self.mkfs.as_ref().expect("mkfs for a formatted filesystem");
        mkfs.run(&path, &self.config.mkfs_options)?;
        let disk = JobDisk {
            device: String::new(),
            mkfs_command: mkfs.command_line(&path, &self.config.mkfs_options),
            mkfs_version: mkfs.version.clone(),
        };
        Ok((owned, disk))
    }

    /// Whether the guest sees the host's root directory (its userland and files), or why not.
    pub fn host_root(&self) -> Result<(), &str> {
        self.host_root.as_ref().map(|_| ()).map_err(String::as_str)
    }

    /// Check that every test can run in a guest: what reads the host's files or runs the host's
    /// programs needs the host's root directory in the guest.
    pub fn check_tests(&self, tests: &[TestSpec]) -> Result<(), VmError> {
        for t in tests {
            self.check_test(t).map_err(VmError::Unsupported)?;
        }
        self.check_disks(tests)
    }

    /// Why `t` cannot run in this configuration's guest, if it cannot.
    pub fn check_test(&self, t: &TestSpec) -> Result<(), String> {
        {
            let Err(why) = &self.host_root else {
                return Ok(());
            };
            let host_file = match &t.engine {
                EngineSpec::Dbench {
                    loadfile: Some(p), ..
                } => Some(format!("its file {}", p.display())),
                EngineSpec::Untar {
                    tarball: Some(p), ..
                }
                | EngineSpec::Copy {
                    source: Some(p), ..
                }
                | EngineSpec::Stream {
                    source: Some(p), ..
                } => Some(format!("its file {}", p.display())),
                EngineSpec::Command { .. } => Some("its command".to_string()),
                // Every variant is named: a new engine that reads a host file must say so here.
                EngineSpec::Dbench { loadfile: None, .. }
                | EngineSpec::Untar { tarball: None, .. }
                | EngineSpec::Copy { source: None, .. }
                | EngineSpec::Stream { source: None, .. }
                | EngineSpec::FsMark { .. }
                | EngineSpec::Fio { .. } => None,
            };
            let host_file = host_file.or_else(|| {
                (t.external && crate::engines::has_external(&t.engine))
                    .then(|| "the real tool (external = true)".to_string())
            });
            if let Some(what) = host_file {
                return Err(format!(
                    "test {}: {what} needs the host's programs and files, which the guest of kernel {} cannot see ({why}): build the kernel with 9p (CONFIG_NET_9P_VIRTIO, CONFIG_9P_FS) or give modules = \"DIR\" holding them",
                    t.name, self.kernel.release
                ));
            }
        }
        Ok(())
    }

    /// Whether one guest has disks enough for `tests`.
    fn check_disks(&self, tests: &[TestSpec]) -> Result<(), VmError> {
        if self.config.fresh == Fresh::Sample
            && self.config.fs.needs_mkfs()
            && tests.len() > MAX_DISKS
        {
            return Err(VmError::Unsupported(format!(
                "config '{}': {} tests in one guest need as many disks (fresh = \"sample\"); at most {MAX_DISKS}: select fewer with --test, or use fresh = \"run\"",
                self.config.name,
                tests.len()
            )));
        }
        Ok(())
    }

    /// The disks of one boot: an erofs image (built once, read-only), one formatted image per
    /// test (`fresh = "sample"`, made in the run's shared disk directory and removed after the
    /// boot: the returned files), or the run's one disk (`fresh = "run"`); none for tmpfs.
    fn make_disks(
        &mut self,
        tag: &str,
        n_tests: usize,
        cancel: &CancelToken,
    ) -> Result<BootDisks, VmError> {
        let mut images: Vec<OwnedFile> = Vec::new();
        let mut job_disks = Vec::new();
        let mut disks = Vec::new();
        if let Device::Image { source } = &self.config.device {
            // Read-only: one image for every boot, built once.
            if let Some(owned) = &self.run_disk {
                let mkfs = self.mkfs.as_ref().expect("mkfs");
                job_disks.push(JobDisk {
                    device: String::new(),
                    mkfs_command: self.image_command(&owned.path, source),
                    mkfs_version: mkfs.version.clone(),
                });
            } else {
                let p = self.work_dir().join("image.erofs");
                let (owned, jd) = self.make_image(p, source)?;
                self.run_disk = Some(owned);
                job_disks.push(jd);
            }
            disks.push(Disk {
                image: self.run_disk.as_ref().expect("erofs image").path.clone(),
                cache: self.disk_cache,
                read_only: true,
            });
        } else if self.config.fs.needs_mkfs() {
            match self.config.fresh {
                Fresh::Sample => {
                    for i in 0..n_tests {
                        if cancel.is_cancelled() {
                            return Err(VmError::Cancelled);
                        }
                        let p = self
                            .disks_dir
                            .join(format!("{}.{tag}.disk{i}.img", self.config.name));
                        let (owned, jd) = self.make_disk(p.clone())?;
                        images.push(owned);
                        job_disks.push(jd);
                        disks.push(Disk {
                            image: p,
                            cache: self.disk_cache,
                            read_only: false,
                        });
                    }
                }
                Fresh::Run => {
                    if let Some(owned) = &self.run_disk {
                        let mkfs = self.mkfs.as_ref().expect("mkfs");
                        job_disks.push(JobDisk {
                            device: String::new(),
                            mkfs_command: mkfs.command_line(&owned.path, &self.config.mkfs_options),
                            mkfs_version: mkfs.version.clone(),
                        });
                    } else {
                        let p = self.work_dir().join("run.disk.img");
                        let (owned, jd) = self.make_disk(p)?;
                        self.run_disk = Some(owned);
                        job_disks.push(jd);
                    }
                    disks.push(Disk {
                        image: self.run_disk.as_ref().expect("run disk").path.clone(),
                        cache: self.disk_cache,
                        read_only: false,
                    });
                }
            }
        }
        Ok((images, job_disks, disks))
    }

    /// Boot once and run `tests` as repetition `repetition` (see the module docs).
    /// Err([`VmError::Cancelled`]) when `cancel` fired: qemu is killed and every file removed.
    pub fn run_repetition(
        &mut self,
        tests: &[TestSpec],
        repetition: u32,
        opts: &RepetitionOptions,
        cancel: &CancelToken,
    ) -> Result<Repetition, VmError> {
        let t0 = Instant::now();
        // A test that cannot run here fails alone, with its own reason; the others run.
        let mut refused = Vec::new();
        let mut runnable = Vec::new();
        for t in tests {
            match self.check_test(t) {
                Ok(()) => runnable.push(t.clone()),
                Err(e) => refused.push((t.name.clone(), e)),
            }
        }
        let tests = runnable.as_slice();
        self.check_disks(tests)?;
        if tests.is_empty() {
            return Ok(Repetition {
                samples: refused
                    .into_iter()
                    .map(|(name, e)| self.failed_sample(&name, repetition, Utc::now(), 0.0, e))
                    .collect(),
                skipped: Vec::new(),
                profiles: Vec::new(),
                warnings: Vec::new(),
                facts: None,
                cycle_s: t0.elapsed().as_secs_f64(),
            });
        }
        if let (Some(_), Err(why)) = (opts.profile, &self.host_root) {
            return Err(VmError::Unsupported(format!(
                "config '{}': profiles in the guest of kernel {} need the host's perf, which the guest cannot see ({why}): build the kernel with 9p (CONFIG_NET_9P_VIRTIO, CONFIG_9P_FS), or leave out --profile",
                self.config.name, self.kernel.release
            )));
        }
        let tag = format!("rep{repetition}");
        let (images, mut job_disks, disks) = self.make_disks(&tag, tests.len(), cancel)?;
        for (i, d) in job_disks.iter_mut().enumerate() {
            d.device = format!("/dev/vd{}", char::from(b'a' + i as u8));
        }
        let job = Job {
            config: self.config.name.clone(),
            fs: self.config.fs.as_str().to_string(),
            mount_options: self.config.mount_options.clone(),
            repetition,
            drop_caches: opts.drop_caches,
            ondisk: opts.ondisk,
            ondisk_remount: opts.ondisk_remount,
            disks: job_disks,
            tmpfs_size: match self.config.device {
                Device::Memory { size_bytes } => size_bytes,
                _ => None,
            },
            tests: tests.to_vec(),
            profile: opts.profile.map(|s| s.name().to_string()),
            read_only: matches!(self.config.device, Device::Image { .. }),
            before: self.config.before.clone(),
            after: self.config.after.clone(),
        };
        let json = serde_json::to_vec(&job)
            .map_err(|e| VmError::Guest(format!("serialising the job: {e}")))?;
        let (files, paths) = self.boot_files(&tag)?;
        self.write_initrd(&paths[4], Some(&json))?;
        let spec = self.boot_spec(&paths, disks, opts);
        let started_at = Utc::now();
        let host0 = system::Snapshot::take();
        let boot0 = Instant::now();
        let outcome = qemu::run(&self.qemu, &spec, cancel)?;
        // qemu is reaped: its CPU time is in this process's children's.
        let host = system::host_context(
            &host0,
            &system::Snapshot::take(),
            boot0.elapsed().as_secs_f64(),
        );
        drop(files);
        drop(images);
        let mut rep = self.collect(tests, repetition, started_at, outcome, t0);
        for s in &mut rep.samples {
            if s.status == SampleStatus::Ok {
                s.metrics.extend(host.iter().cloned());
            }
            s.facts.extra.insert(
                "host_context".into(),
                "host_* and vm_qemu_* metrics: the host during the whole boot (all its samples)"
                    .into(),
            );
        }
        for (name, e) in refused {
            rep.samples
                .push(self.failed_sample(&name, repetition, started_at, 0.0, e));
        }
        Ok(rep)
    }

    /// A failed sample of test `test` of this configuration, labelled with the kernel.
    fn failed_sample(
        &self,
        test: &str,
        repetition: u32,
        started_at: chrono::DateTime<Utc>,
        duration_s: f64,
        error: String,
    ) -> NewSample {
        let mut s = NewSample {
            config: self.config.name.clone(),
            test: test.to_string(),
            repetition,
            sequence: 0,
            facts: SiteFacts::default(),
            status: SampleStatus::Failed,
            error: Some(error),
            started_at,
            duration_s,
            workload: String::new(),
            metrics: Vec::new(),
            histograms: Vec::new(),
            attachments: Vec::new(),
        };
        let x = &mut s.facts.extra;
        x.insert(
            "vm_kernel_path".into(),
            self.kernel.given.display().to_string(),
        );
        x.insert("vm_accel".into(), self.accel.as_str().into());
        if self.accel == Accel::Tcg {
            x.insert("emulated".into(), EMULATED_LABEL.into());
        }
        s
    }

    fn collect(
        &self,
        tests: &[TestSpec],
        repetition: u32,
        started_at: chrono::DateTime<Utc>,
        out: qemu::Outcome,
        t0: Instant,
    ) -> Repetition {
        let lines = super::job::parse_lines(&out.results);
        let mut hello = None;
        let mut samples: Vec<NewSample> = Vec::new();
        let mut skipped = Vec::new();
        let mut profiles = Vec::new();
        let mut warnings = Vec::new();
        let mut garbled = None;
        match lines {
            Ok(lines) => {
                for l in lines {
                    match l {
                        GuestLine::Hello {
                            kernel_release,
                            kernel_version,
                            ..
                        } => hello = Some((kernel_release, kernel_version)),
                        GuestLine::Sample(s) => samples.push(*s),
                        GuestLine::Skipped { test, why } => skipped.push((test, why)),
                        GuestLine::Profile { test, format, data } => {
                            profiles.push((test, crate::model::StoredProfile { format, data }))
                        }
                        GuestLine::Warning { what, .. } => warnings.push(what),
                        GuestLine::Done => {}
                    }
                }
            }
            Err(e) => garbled = Some(e),
        }
        let facts = match (&hello, out.boot_s) {
            (Some((r, v)), Some(boot_s)) => Some(VmFacts {
                kernel_release: r.clone(),
                kernel_version: v.clone(),
                kernel_path: self.kernel.given.display().to_string(),
                accel: self.accel,
                cpus: self.cpus,
                memory_bytes: self.memory_bytes,
                boot_s,
                entry: if self.kernel.pvh { "pvh" } else { "bzimage" },
                disk_cache: self.disk_cache,
            }),
            _ => None,
        };
        // Why the samples the guest did not send are missing.
        let why_missing = || -> String {
            let mut why = match &out.ending {
                Ending::Timeout {
                    ready: false,
                    after,
                } => format!(
                    "the guest of kernel {} did not reach its ready marker within {:.0} s (qemu killed)",
                    self.kernel.release,
                    after.as_secs_f64()
                ),
                Ending::Timeout { ready: true, after } => format!(
                    "the guest hung: the repetition did not finish within {:.0} s (qemu killed; FSDELTA_VM_TIMEOUT sets the limit)",
                    after.as_secs_f64()
                ),
                Ending::Crashed { status } => format!(
                    "the guest of kernel {} died before this sample finished (qemu {status}; a kernel panic ends qemu)",
                    self.kernel.release
                ),
                Ending::Finished { code } => {
                    format!("the guest's job ended (exit code {code}) without this sample")
                }
            };
            if let Some(fs) = &out.nofs {
                why = format!(
                    "kernel {} has no {fs} driver, neither built in nor loaded: build it with CONFIG_{}_FS, or give modules = \"DIR\"; {why}",
                    self.kernel.release,
                    fs.to_uppercase()
                );
            }
            if !out.modfail.is_empty() {
                why.push_str(&format!(
                    "; modules that did not load: {}",
                    out.modfail.join(", ")
                ));
            }
            if let Some(g) = &garbled {
                why.push_str(&format!("; the results channel was garbled: {g}"));
            }
            if !out.stderr.is_empty() {
                why.push_str(&format!("; qemu said: {}", out.stderr));
            }
            format!("{why}\nconsole's last lines:\n{}", out.console_tail)
        };
        let mut result = Vec::new();
        for t in tests {
            if skipped.iter().any(|(n, _)| n == &t.name) {
                continue;
            }
            let pos = samples.iter().position(|s| s.test == t.name);
            let mut s = match pos {
                Some(p) => samples.remove(p),
                None => NewSample {
                    config: self.config.name.clone(),
                    test: t.name.clone(),
                    repetition,
                    sequence: 0,
                    facts: SiteFacts::default(),
                    status: SampleStatus::Failed,
                    error: Some(why_missing()),
                    started_at,
                    duration_s: t0.elapsed().as_secs_f64(),
                    workload: crate::engines::describe(&t.engine),
                    metrics: Vec::new(),
                    histograms: Vec::new(),
                    attachments: Vec::new(),
                },
            };
            if let Some(f) = &facts {
                f.apply(&mut s.facts);
                if s.status == SampleStatus::Ok {
                    s.metrics.push(Metric::new(
                        "vm_boot_s",
                        f.boot_s,
                        Unit::Seconds,
                        Direction::LowerIsBetter,
                    ));
                }
            } else {
                let x = &mut s.facts.extra;
                x.insert(
                    "vm_kernel_path".into(),
                    self.kernel.given.display().to_string(),
                );
                x.insert("vm_accel".into(), self.accel.as_str().into());
                if self.accel == Accel::Tcg {
                    x.insert("emulated".into(), EMULATED_LABEL.into());
                }
            }
            result.push(s);
        }
        Repetition {
            samples: result,
            skipped,
            profiles,
            warnings,
            facts,
            cycle_s: t0.elapsed().as_secs_f64(),
        }
    }

    /// Remove every file and directory made for this configuration.
    pub fn teardown(mut self) -> Result<(), VmError> {
        self.run_disk = None;
        self.work = None;
        self.disks = None;
        Ok(())
    }
}

/// `none` (O_DIRECT, no double caching in the host's page cache) when files in `dir` can be
/// opened with O_DIRECT, else `writeback` (tmpfs).
fn direct_io_cache_mode(dir: &Path, state: &StateFile) -> Result<&'static str, VmError> {
    let p = dir.join(".direct-probe");
    let _owned = OwnedFile::record(state, p.clone())?;
    let ok = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(&p)
        .is_ok();
    Ok(if ok { "none" } else { "writeback" })
}
