//! mkfs for btrfs, ext4, xfs and f2fs (and mkfs.erofs's image builds): finding the program
//! (with the Debian package to install when it is missing), its version for the sample's facts,
//! and running it with the config's options.
//!
//! Why a module: the exact command line and program version are facts a reader of the numbers
//! needs, and the few options fsdelta adds itself are decided in one place. This module must never
//! choose a device: it formats only the path it is given, and the caller
//! ([`super::configured`]) checks that the config allows it (`site::device` refusals).
//!
//! Options fsdelta adds before the config's own (which come last, so they win where the tool
//! lets a later option override an earlier one):
//! - btrfs, xfs, f2fs: `-f`, because a re-format per sample finds the previous filesystem's
//!   signature;
//! - ext4: `-F` once (never twice: `-F -F` would format a mounted device), plus
//!   `-E lazy_itable_init=0,lazy_journal_init=0` unless the config gives `-E` itself, so that no
//!   background inode-table initialisation writes during the measurement.

use super::SiteError;
use crate::plan::config::FsKind;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Directories searched after `$PATH` (root's PATH may lack the sbin directories).
const EXTRA_DIRS: [&str; 4] = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"];

/// A found mkfs program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mkfs {
    /// The filesystem it makes.
    pub fs: FsKind,
    /// Absolute path of the program.
    pub program: PathBuf,
    /// First line of its version output (`mkfs.btrfs, part of btrfs-progs v6.2`).
    pub version: String,
}

/// Program name and Debian package for a filesystem.
pub fn program_and_package(fs: FsKind) -> Option<(&'static str, &'static str)> {
    match fs {
        FsKind::Btrfs => Some(("mkfs.btrfs", "btrfs-progs")),
        FsKind::Ext4 => Some(("mkfs.ext4", "e2fsprogs")),
        FsKind::Xfs => Some(("mkfs.xfs", "xfsprogs")),
        FsKind::F2fs => Some(("mkfs.f2fs", "f2fs-tools")),
        FsKind::Erofs => Some(("mkfs.erofs", "erofs-utils")),
        FsKind::Tmpfs | FsKind::Dir => None,
    }
}

fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(EXTRA_DIRS.iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(p)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

impl Mkfs {
    /// Find the program for `fs` and read its version.
    pub fn find(fs: FsKind) -> Result<Mkfs, SiteError> {
        let Some((name, package)) = program_and_package(fs) else {
            return Err(SiteError::Unusable {
                path: fs.to_string(),
                message: "is not made by mkfs".into(),
            });
        };
        let program = find_program(name).ok_or_else(|| SiteError::MkfsMissing {
            program: name.to_string(),
            package: package.to_string(),
        })?;
        let flag = match fs {
            FsKind::Btrfs => "--version",
            _ => "-V",
        };
        let version = Command::new(&program)
            .arg(flag)
            .stdin(Stdio::null())
            .output()
            .map(|o| {
                let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
                text.push_str(&String::from_utf8_lossy(&o.stderr));
                text.lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .unwrap_or_default()
                    .to_string()
            })
            .unwrap_or_default();
        Ok(Mkfs {
            fs,
            program,
            version,
        })
    }

    /// The arguments for formatting `device` with the config's `options` (program excluded).
    pub fn args(&self, device: &Path, options: &[String]) -> Vec<String> {
        let mut args: Vec<String> = Vec::new();
        match self.fs {
            FsKind::Btrfs | FsKind::Xfs | FsKind::F2fs => args.push("-f".into()),
            FsKind::Ext4 => {
                if !options.iter().any(|o| o == "-F") {
                    args.push("-F".into());
                }
                if !options.iter().any(|o| o.starts_with("-E")) {
                    args.push("-E".into());
                    args.push("lazy_itable_init=0,lazy_journal_init=0".into());
                }
            }
            FsKind::Tmpfs | FsKind::Dir | FsKind::Erofs => {}
        }
        args.extend(options.iter().cloned());
        args.push(device.display().to_string());
        args
    }

    /// The whole command line, for the facts.
    pub fn command_line(&self, device: &Path, options: &[String]) -> String {
        let mut s = self.program.display().to_string();
        for a in self.args(device, options) {
            s.push(' ');
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '\'') {
                s.push_str(&format!("'{}'", a.replace('\'', "'\\''")));
            } else {
                s.push_str(&a);
            }
        }
        s
    }

    /// Format `device`. The caller has checked that it may.
    pub fn run(&self, device: &Path, options: &[String]) -> Result<(), SiteError> {
        self.run_held(None, device, options)
    }

    /// Format `device`, which `hold` keeps claimed (`O_EXCL`) until the moment mkfs is spawned.
    pub fn run_held(
        &self,
        hold: Option<super::device::DeviceHold>,
        device: &Path,
        options: &[String],
    ) -> Result<(), SiteError> {
        if let Some(h) = hold {
            h.release();
        }
        // Between the release of the hold and mkfs's own exclusive open, a short-lived opener
        // (udev's blkid, a btrfs device scan) can claim the device: a busy failure is retried
        // with backoff for up to RELEASE_WAIT, then reported naming who holds the device.
        let began = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(20);
        loop {
            let out = crate::os::child::dies_with_this_thread(&mut Command::new(&self.program))
                .args(self.args(device, options))
                .stdin(Stdio::null())
                .output()
                .map_err(|e| SiteError::Io {
                    op: "run",
                    path: self.program.display().to_string(),
                    source: e,
                })?;
            if out.status.success() {
                return Ok(());
            }
            let busy = is_busy(&out.stderr) || is_busy(&out.stdout);
            if busy && began.elapsed() < super::device::RELEASE_WAIT {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(250));
                continue;
            }
            let holders = busy.then(|| busy_holders(device));
            let failed = SiteError::CommandFailed {
                what: "mkfs".into(),
                command: self.command_line(device, options),
                status: out.status.to_string(),
                output: failure_text(&out.stderr, &out.stdout, device, holders.as_deref()),
            };
            if busy {
                return Err(SiteError::Busy {
                    device: device.display().to_string(),
                    message: failed.to_string(),
                });
            }
            return Err(failed);
        }
    }
}

impl Mkfs {
    /// The arguments that build an image file from the tree `source`: mkfs.erofs's
    /// `[OPTIONS] IMAGE SOURCE`.
    pub fn image_args(&self, image: &Path, source: &Path, options: &[String]) -> Vec<String> {
        let mut args: Vec<String> = options.to_vec();
        args.push(image.display().to_string());
        args.push(source.display().to_string());
        args
    }

    /// Build the image file `image` from `source` (read only). The image is a file fsdelta
    /// created under its scratch location; nothing else is written.
    pub fn build_image(
        &self,
        image: &Path,
        source: &Path,
        options: &[String],
    ) -> Result<(), SiteError> {
        let args = self.image_args(image, source, options);
        let out = crate::os::child::dies_with_this_thread(&mut Command::new(&self.program))
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| SiteError::Io {
                op: "run",
                path: self.program.display().to_string(),
                source: e,
            })?;
        if out.status.success() {
            return Ok(());
        }
        let mut command = self.program.display().to_string();
        for a in &args {
            command.push(' ');
            command.push_str(a);
        }
        Err(SiteError::CommandFailed {
            what: "mkfs".into(),
            command,
            status: out.status.to_string(),
            output: failure_text(&out.stderr, &out.stdout, image, None),
        })
    }
}

fn is_busy(text: &[u8]) -> bool {
    let t = String::from_utf8_lossy(text);
    t.contains("busy") || t.contains("EBUSY")
}

/// Who holds `device` (open, or through a lazily detached filesystem still alive on it).
fn busy_holders(device: &Path) -> String {
    let mut holders = super::holders::of_detached_mounts();
    if let Some(n) = super::device::block_devnum(device) {
        holders.extend(super::holders::of_device(n));
    }
    super::holders::describe(&holders, 6)
}

/// mkfs's own reason (every line it printed on stderr that says something, up to 40; stdout
/// when stderr is empty), and a hint that fits it: a busy device is not an options problem.
fn failure_text(stderr: &[u8], stdout: &[u8], device: &Path, holders: Option<&str>) -> String {
    let stderr = String::from_utf8_lossy(stderr);
    let stdout = String::from_utf8_lossy(stdout);
    let text = if stderr.trim().is_empty() {
        &stdout
    } else {
        &stderr
    };
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let skip = lines.len().saturating_sub(40);
    let mut reason = lines[skip..].join(" | ");
    if reason.is_empty() {
        reason = "no output".into();
    }
    let hint = if text.contains("busy") || text.contains("EBUSY") {
        let who = holders
            .map(|h| {
                format!(
                    " (retried for {}s; holders: {h})",
                    super::device::RELEASE_WAIT.as_secs()
                )
            })
            .unwrap_or_default();
        format!(
            "{} is in use{who}: mounted, a filesystem still being released, or held open: see `fuser -v {0}`, /proc/*/mountinfo and dmesg",
            device.display()
        )
    } else {
        "check the config's mkfs options, and the loop size (mkfs.xfs needs 300M, mkfs.btrfs 114M)"
            .to_string()
    };
    format!("{reason}; {hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(fs: FsKind) -> Mkfs {
        Mkfs {
            fs,
            program: PathBuf::from(format!("/usr/sbin/mkfs.{fs}")),
            version: String::new(),
        }
    }

    #[test]
    fn ext4_is_forced_once_and_initialised_eagerly() {
        let m = fake(FsKind::Ext4);
        let dev = Path::new("/dev/loop9");
        assert_eq!(
            m.args(dev, &[]),
            vec![
                "-F",
                "-E",
                "lazy_itable_init=0,lazy_journal_init=0",
                "/dev/loop9"
            ]
        );
        let own = vec!["-F".to_string(), "-E".into(), "stride=4".into()];
        assert_eq!(
            m.args(dev, &own),
            vec!["-F", "-E", "stride=4", "/dev/loop9"]
        );
    }

    #[test]
    fn config_options_come_last_before_the_device() {
        let m = fake(FsKind::Btrfs);
        let opts = vec!["-L".to_string(), "my label".into()];
        assert_eq!(
            m.command_line(Path::new("/dev/loop1"), &opts),
            "/usr/sbin/mkfs.btrfs -f -L 'my label' /dev/loop1"
        );
    }

    #[test]
    fn a_failure_keeps_mkfs_own_reason_and_a_busy_device_is_not_blamed_on_options() {
        let err: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        let t = failure_text(err.as_bytes(), b"", Path::new("/dev/loop9"), None);
        assert!(t.contains("line 1 |") && t.contains("line 12"), "{t}");
        assert!(t.contains("mkfs options"), "{t}");
        let t = failure_text(
            b"ERROR: unable to open /dev/loop9: Device or resource busy\n",
            b"",
            Path::new("/dev/loop9"),
            Some("pid 42 (sleep): fd 3 /m/f on a detached (lazily unmounted) filesystem"),
        );
        assert!(
            t.contains("Device or resource busy") && t.contains("in use"),
            "{t}"
        );
        assert!(!t.contains("mkfs options"), "{t}");
        assert!(t.contains("holders: pid 42 (sleep)"), "{t}");
        let t = failure_text(b"", b"only on stdout\n", Path::new("/dev/x"), None);
        assert!(t.contains("only on stdout"), "{t}");
    }

    #[test]
    fn f2fs_is_forced_and_keeps_its_feature_options() {
        let m = fake(FsKind::F2fs);
        let opts = vec!["-O".to_string(), "extra_attr,compression".into()];
        assert_eq!(
            m.command_line(Path::new("/dev/loop4"), &opts),
            "/usr/sbin/mkfs.f2fs -f -O extra_attr,compression /dev/loop4"
        );
        assert_eq!(
            program_and_package(FsKind::F2fs),
            Some(("mkfs.f2fs", "f2fs-tools"))
        );
    }

    #[test]
    fn a_missing_program_names_the_package() {
        assert_eq!(
            program_and_package(FsKind::Xfs),
            Some(("mkfs.xfs", "xfsprogs"))
        );
        let e = SiteError::MkfsMissing {
            program: "mkfs.xfs".into(),
            package: "xfsprogs".into(),
        };
        assert!(e.to_string().contains("apt-get install xfsprogs"), "{e}");
        assert!(find_program("fsdelta-no-such-mkfs").is_none());
    }
}
