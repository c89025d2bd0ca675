//! Kernel A/B: booting a configuration's kernel in a QEMU guest and running that configuration's
//! samples inside it (issue 18).
//!
//! Why a room of its own: comparing two kernels on one machine needs both kernels running
//! interleaved, sample by sample, on the same hardware and with the same mkfs; only a virtual
//! machine gives that. Everything about guests lives here: finding what to boot ([`kernel`]),
//! which modules it needs ([`modules`]), the initramfs ([`initramfs`], [`cpio`]), the QEMU
//! process with its accelerator, timeouts and results channel ([`qemu`]), the job that crosses
//! into the guest and the samples that come back ([`job`]), the host side of one repetition
//! ([`host`]) and the guest's disks ([`guest`]). The samples inside the guest are run by the run
//! loop (`crate::runner::guest`, the hidden `fsdelta guest-run`), which imports this room; this
//! room never imports the runner.
//!
//! This room must never measure on the host (every number it returns was measured inside the
//! guest, except the boot time), never print to the terminal (warnings are returned), and never
//! leave a qemu process, an image or an initramfs behind: every file is recorded in the state file
//! before it is created, qemu runs in its own process group and dies with the thread that started
//! it (`PR_SET_PDEATHSIG`), and a guard kills and reaps it on every path out.

pub mod cpio;
pub mod elf;
pub mod guest;
pub mod host;
pub mod initramfs;
pub mod job;
pub mod kernel;
pub mod modules;
pub mod qemu;

pub use host::{RepetitionOptions, VmFacts, VmSite};
pub use kernel::Kernel;

use std::path::PathBuf;

/// The label of results made under TCG (emulation): their numbers compare CPU paths of two
/// kernels relative to each other, not the speed of the hardware.
pub const EMULATED_LABEL: &str = "emulated: relative comparison of CPU paths only";

/// Errors of the vm room; each says what is wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    /// The kernel path cannot be booted.
    #[error("kernel {path}: {message}")]
    Kernel {
        /// The path as given.
        path: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The kernel lacks a driver the configuration needs.
    #[error(
        "kernel {release} has no {module} driver (CONFIG_{option}), neither built in nor as a module under {searched}: {why}; build the kernel with CONFIG_{option}=y or =m, or give modules = \"DIR\" in the configuration"
    )]
    MissingModule {
        /// The kernel release.
        release: String,
        /// The module (`ext4`, `virtio_blk`).
        module: String,
        /// The config option without `CONFIG_` (`EXT4_FS`).
        option: String,
        /// Where modules were looked for.
        searched: String,
        /// What needs it.
        why: String,
    },
    /// A program fsdelta drives is not installed.
    #[error(
        "{program} not found: install the Debian package {package} (apt-get install {package})"
    )]
    Missing {
        /// The program (`qemu-system-x86_64`).
        program: String,
        /// The Debian package that has it.
        package: String,
    },
    /// An I/O error.
    #[error("{op} {path}: {source}")]
    Io {
        /// The operation.
        op: &'static str,
        /// The path.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Setting up the disk (image, mkfs) or the state file failed.
    #[error(transparent)]
    Target(#[from] crate::site::SiteError),
    /// The configuration or job cannot run in a guest.
    #[error("{0}")]
    Unsupported(String),
    /// The guest did not do what it should (hang, panic, garbled results).
    #[error("{0}")]
    Guest(String),
    /// Ctrl-C (or SIGTERM): qemu was killed and its files removed.
    #[error("cancelled")]
    Cancelled,
}

impl VmError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        VmError::Io {
            op,
            path: path.into().display().to_string(),
            source,
        }
    }
}

/// Where kernels unpacked from Debian packages, extracted vmlinux files and initramfs archives
/// are kept between runs: `$FSDELTA_CACHE_DIR`, `$XDG_CACHE_HOME/fsdelta`,
/// `$HOME/.cache/fsdelta`, else `/var/tmp/fsdelta-cache` (the first variable set and absolute).
pub fn cache_dir() -> PathBuf {
    let var = |k: &str| {
        std::env::var_os(k)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(p) = var("FSDELTA_CACHE_DIR") {
        return p;
    }
    if let Some(p) = var("XDG_CACHE_HOME") {
        return p.join("fsdelta");
    }
    if let Some(p) = var("HOME") {
        return p.join(".cache/fsdelta");
    }
    PathBuf::from("/var/tmp/fsdelta-cache")
}

/// Write `data` to `path` atomically (a temporary file beside it, then rename), so that a
/// concurrent reader of the cache never sees half a file.
pub(crate) fn write_atomically(path: &std::path::Path, data: &[u8]) -> Result<(), VmError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| VmError::io("create directory", dir, e))?;
    }
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}.{seq}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, data).map_err(|e| VmError::io("write", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        VmError::io("rename", path, e)
    })
}

/// A short stable hash (FNV-1a, 64 bits) for cache keys.
pub(crate) fn hash_key(parts: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.iter().chain(std::iter::once(&0xffu8)) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// Find a program on `$PATH` or in the usual system directories.
pub(crate) fn find_program(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/bin", "/bin", "/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}
