//! Loop devices by hand: a sparse image attached with `LOOP_CTL_GET_FREE` + `LOOP_CONFIGURE`
//! (falling back to `LOOP_SET_FD` + `LOOP_SET_STATUS64` on kernels without it), with
//! `LO_FLAGS_AUTOCLEAR` so the kernel detaches the device once its last user is gone, and direct
//! I/O when the image's filesystem allows it (no double caching of the image in the host page
//! cache). Detaching is `LOOP_CLR_FD` followed by a wait, because the kernel detaches
//! asynchronously.
//!
//! Why by hand: the loopdev crates need bindgen and libclang; the ioctls are few. `losetup` is
//! used only when /dev/loop-control is missing.
//!
//! Must never detach a loop device it did not attach: [`AttachedLoop`] detaches only its own, and
//! recovery ([`detach_number`]) is only called after checking the recorded backing file.

use super::SiteError;
use super::state::{Record, Resource, StateFile};
use linux_raw_sys::loop_device as sys;
use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::ioctl::{Ioctl, IoctlOutput, Opcode};
use std::ffi::c_void;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long to wait for the kernel's asynchronous detach.
const DETACH_WAIT: Duration = Duration::from_secs(10);

/// `LOOP_CTL_GET_FREE`: returns the number of a free (possibly new) loop device.
struct GetFree;

// SAFETY: LOOP_CTL_GET_FREE takes no argument and returns the device number as the ioctl's
// return value; nothing is read or written through the pointer.
unsafe impl Ioctl for GetFree {
    type Output = u32;
    const IS_MUTATING: bool = false;
    fn opcode(&self) -> Opcode {
        sys::LOOP_CTL_GET_FREE as Opcode
    }
    fn as_ptr(&mut self) -> *mut c_void {
        std::ptr::null_mut()
    }
    unsafe fn output_from_ptr(out: IoctlOutput, _: *mut c_void) -> rustix::io::Result<u32> {
        u32::try_from(out).map_err(|_| Errno::INVAL)
    }
}

fn get_free(ctl: &OwnedFd) -> rustix::io::Result<u32> {
    // SAFETY: see `GetFree`.
    unsafe { rustix::ioctl::ioctl(ctl, GetFree) }
}

fn configure(dev: &OwnedFd, cfg: sys::loop_config) -> rustix::io::Result<()> {
    // SAFETY: LOOP_CONFIGURE reads a `struct loop_config`, which `Setter` passes by pointer.
    unsafe {
        rustix::ioctl::ioctl(
            dev,
            rustix::ioctl::Setter::<{ sys::LOOP_CONFIGURE as Opcode }, sys::loop_config>::new(cfg),
        )
    }
}

fn set_fd(dev: &OwnedFd, image: &OwnedFd) -> rustix::io::Result<()> {
    // SAFETY: LOOP_SET_FD takes the backing file descriptor as an integer argument.
    unsafe {
        rustix::ioctl::ioctl(
            dev,
            rustix::ioctl::IntegerSetter::<{ sys::LOOP_SET_FD as Opcode }>::new_usize(
                image.as_raw_fd() as usize,
            ),
        )
    }
}

fn set_status64(dev: &OwnedFd, info: sys::loop_info64) -> rustix::io::Result<()> {
    // SAFETY: LOOP_SET_STATUS64 reads a `struct loop_info64` by pointer.
    unsafe {
        rustix::ioctl::ioctl(
            dev,
            rustix::ioctl::Setter::<{ sys::LOOP_SET_STATUS64 as Opcode }, sys::loop_info64>::new(
                info,
            ),
        )
    }
}

fn clr_fd(dev: impl AsFd) -> rustix::io::Result<()> {
    // SAFETY: LOOP_CLR_FD takes no argument.
    unsafe {
        rustix::ioctl::ioctl(
            dev,
            rustix::ioctl::NoArg::<{ sys::LOOP_CLR_FD as Opcode }>::new(),
        )
    }
}

/// Create a sparse image of `size_bytes` at `path` (which must not exist).
pub fn create_sparse_image(path: &Path, size_bytes: u64) -> Result<(), SiteError> {
    let io = |op, source| SiteError::Io {
        op,
        path: path.display().to_string(),
        source,
    };
    let f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| io("create image", e))?;
    f.set_len(size_bytes).map_err(|e| io("size image", e))?;
    Ok(())
}

/// A loop device this process attached. Detached on [`detach`](AttachedLoop::detach) or drop;
/// its state-file entry is cleared once it is gone.
#[derive(Debug)]
pub struct AttachedLoop {
    number: u32,
    device: PathBuf,
    backing_file: PathBuf,
    fd: Option<OwnedFd>,
    record: Option<Record>,
}

impl AttachedLoop {
    /// Attach `image` (an existing file) to a free loop device, recording it in `state` before
    /// attaching. Retries when another process takes the same free device first.
    pub fn attach(image: &Path, state: &StateFile) -> Result<AttachedLoop, SiteError> {
        let image = fs::canonicalize(image).map_err(|source| SiteError::Io {
            op: "resolve image",
            path: image.display().to_string(),
            source,
        })?;
        let ctl = match rustix::fs::open(
            "/dev/loop-control",
            OFlags::RDWR | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return attach_with_losetup(&image, state),
            Err(e) => {
                return Err(SiteError::Unusable {
                    path: "/dev/loop-control".into(),
                    message: format!(
                        "{e}; loop devices need root (run as root or use fs = \"dir\" / --target)"
                    ),
                });
            }
        };
        let image_fd = rustix::fs::open(&image, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| SiteError::Io {
                op: "open image",
                path: image.display().to_string(),
                source: e.into(),
            })?;
        let mut last = Errno::BUSY;
        for _ in 0..20 {
            let number = get_free(&ctl).map_err(|e| loop_err("LOOP_CTL_GET_FREE", e))?;
            let device = PathBuf::from(format!("/dev/loop{number}"));
            let record = state.record(Resource::Loop {
                device: device.clone(),
                backing_file: image.clone(),
            })?;
            ensure_node(number)?;
            let dev_fd =
                match rustix::fs::open(&device, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()) {
                    Ok(fd) => fd,
                    Err(e) => {
                        record.clear()?;
                        return Err(loop_err("open", e).at(&device));
                    }
                };
            match configure_device(&dev_fd, &image_fd, &image) {
                Ok(()) => {
                    return Ok(AttachedLoop {
                        number,
                        device,
                        backing_file: image,
                        fd: Some(dev_fd),
                        record: Some(record),
                    });
                }
                Err(e) => {
                    record.clear()?;
                    if e != Errno::BUSY {
                        return Err(loop_err("LOOP_CONFIGURE", e).at(&device));
                    }
                    last = e;
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        Err(loop_err(
            "attach (every free loop device was taken by another process first)",
            last,
        )
        .into())
    }

    /// `/dev/loopN`.
    pub fn device(&self) -> &Path {
        &self.device
    }

    /// `loopN`, the name under /sys/block.
    pub fn name(&self) -> String {
        format!("loop{}", self.number)
    }

    /// The image (canonical path).
    pub fn backing_file(&self) -> &Path {
        &self.backing_file
    }

    /// Detach and wait until the kernel has done it; clears the state-file entry.
    pub fn detach(mut self) -> Result<(), SiteError> {
        self.detach_inner()
    }

    fn detach_inner(&mut self) -> Result<(), SiteError> {
        let Some(fd) = self.fd.take() else {
            return Ok(());
        };
        match clr_fd(&fd) {
            Ok(()) | Err(Errno::NXIO) => {}
            Err(e) => return Err(loop_err("LOOP_CLR_FD", e).at(&self.device)),
        }
        drop(fd);
        wait_detached(self.number, &self.backing_file)?;
        if let Some(r) = self.record.take() {
            r.clear()?;
        }
        Ok(())
    }
}

impl AttachedLoop {
    /// Give this device up because someone else holds it: ask the kernel to detach it
    /// (`LOOP_CLR_FD`, which with other openers only marks it for autoclear: the kernel detaches
    /// it when the last one closes it) and close fsdelta's own descriptor, without waiting.
    /// The state-file entry moves to the returned [`Abandoned`], cleared once it is gone.
    pub fn abandon(mut self) -> Result<Abandoned, SiteError> {
        if let Some(fd) = self.fd.take() {
            match clr_fd(&fd) {
                Ok(()) | Err(Errno::NXIO) => {}
                Err(e) => {
                    self.fd = Some(fd);
                    return Err(loop_err("LOOP_CLR_FD", e).at(&self.device));
                }
            }
        }
        Ok(Abandoned {
            number: self.number,
            device: self.device.clone(),
            backing_file: self.backing_file.clone(),
            record: self.record.take(),
        })
    }
}

/// A loop device fsdelta attached and then gave up ([`AttachedLoop::abandon`]) because another
/// opener kept it busy. The kernel detaches it when that opener closes it.
#[derive(Debug)]
pub struct Abandoned {
    number: u32,
    device: PathBuf,
    backing_file: PathBuf,
    record: Option<Record>,
}

impl Abandoned {
    /// `/dev/loopN`.
    pub fn device(&self) -> &Path {
        &self.device
    }

    /// Whether the kernel has detached it from fsdelta's image.
    pub fn is_detached(&self) -> bool {
        backing_file(self.number).as_deref() != Some(self.backing_file.as_path())
    }

    /// Whether the kernel will detach it by itself on its last close (`LO_FLAGS_AUTOCLEAR`).
    pub fn detaches_on_last_close(&self) -> bool {
        fs::read_to_string(format!("/sys/block/loop{}/loop/autoclear", self.number))
            .map(|s| s.trim() == "1")
            .unwrap_or(false)
    }

    /// At teardown: the state-file entry is cleared when the device is detached, or when the
    /// kernel will detach it on its holder's last close (nothing is left for `fsdelta cleanup`
    /// to do, and its image may be removed: the kernel keeps the open file). Otherwise the entry
    /// stays and the error says what to check.
    pub fn finish(mut self) -> Result<(), SiteError> {
        self.finish_inner()
    }

    fn finish_inner(&mut self) -> Result<(), SiteError> {
        if self.record.is_none() {
            return Ok(());
        }
        if self.is_detached() || self.detaches_on_last_close() {
            if let Some(r) = self.record.take() {
                r.clear()?;
            }
            return Ok(());
        }
        Err(SiteError::Unusable {
            path: self.device.display().to_string(),
            message: format!(
                "still attached to {} and not marked to detach itself: something still holds it; check `losetup -a` and `fuser -v {}`, then run fsdelta cleanup",
                self.backing_file.display(),
                self.device.display()
            ),
        })
    }
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        // Best effort: on failure the state-file entry stays for `fsdelta cleanup`.
        let _ = self.finish_inner();
    }
}

impl Drop for AttachedLoop {
    fn drop(&mut self) {
        // Best effort: on failure the state-file entry stays for `fsdelta cleanup`.
        let _ = self.detach_inner();
    }
}

fn configure_device(dev: &OwnedFd, image_fd: &OwnedFd, image: &Path) -> rustix::io::Result<()> {
    // SAFETY: loop_info64 and loop_config are plain C structs for which all-zero is valid.
    let mut info: sys::loop_info64 = unsafe { std::mem::zeroed() };
    let name = image.as_os_str().as_encoded_bytes();
    let n = name.len().min(info.lo_file_name.len() - 1);
    info.lo_file_name[..n].copy_from_slice(&name[..n]);
    let autoclear = sys::LO_FLAGS_AUTOCLEAR as u32;
    let direct = sys::LO_FLAGS_DIRECT_IO as u32;

    let with_flags = |flags: u32| {
        // SAFETY: as above, all-zero is a valid loop_config.
        let mut cfg: sys::loop_config = unsafe { std::mem::zeroed() };
        cfg.fd = image_fd.as_raw_fd() as u32;
        cfg.info = info;
        cfg.info.lo_flags = flags;
        cfg
    };
    match configure(dev, with_flags(autoclear | direct)) {
        Ok(()) => Ok(()),
        // Direct I/O refused by the image's filesystem: plain buffered I/O.
        Err(Errno::INVAL) | Err(Errno::NOTTY) => match configure(dev, with_flags(autoclear)) {
            Ok(()) => Ok(()),
            // No LOOP_CONFIGURE (kernels before 5.8).
            Err(Errno::INVAL) | Err(Errno::NOTTY) => {
                set_fd(dev, image_fd)?;
                info.lo_flags = autoclear;
                if let Err(e) = set_status64(dev, info) {
                    let _ = clr_fd(dev);
                    return Err(e);
                }
                Ok(())
            }
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    }
}

/// Create /dev/loopN from /sys when the device manager did not (containers without udev and
/// without devtmpfs).
fn ensure_node(number: u32) -> Result<(), SiteError> {
    let device = PathBuf::from(format!("/dev/loop{number}"));
    if device.exists() {
        return Ok(());
    }
    let devnum = fs::read_to_string(format!("/sys/block/loop{number}/dev")).unwrap_or_default();
    let Some((major, minor)) = devnum
        .trim()
        .split_once(':')
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
    else {
        return Err(SiteError::Unusable {
            path: device.display().to_string(),
            message: "the loop device node is missing and /sys does not say its number".into(),
        });
    };
    match rustix::fs::mknodat(
        rustix::fs::CWD,
        &device,
        rustix::fs::FileType::BlockDevice,
        Mode::from_raw_mode(0o660),
        rustix::fs::makedev(major, minor),
    ) {
        Ok(()) | Err(Errno::EXIST) => Ok(()),
        Err(e) => Err(loop_err("mknod", e).at(&device)),
    }
}

fn attach_with_losetup(image: &Path, state: &StateFile) -> Result<AttachedLoop, SiteError> {
    // losetup picks the device itself, so the entry can only be written once its name is known;
    // the image's own entry (written before it was created) still lets recovery find it.
    let out = crate::os::child::dies_with_this_thread(&mut std::process::Command::new("losetup"))
        .args(["--find", "--show", "--direct-io=on"])
        .arg(image)
        .output()
        .map_err(|e| SiteError::Unusable {
            path: "/dev/loop-control".into(),
            message: format!(
                "missing, and losetup cannot run ({e}): load the loop module (modprobe loop) or install util-linux"
            ),
        })?;
    if !out.status.success() {
        return Err(SiteError::Unusable {
            path: image.display().to_string(),
            message: format!(
                "losetup failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    let device = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let number = number_of(&device).ok_or_else(|| SiteError::Unusable {
        path: device.display().to_string(),
        message: "losetup printed an unexpected device name".into(),
    })?;
    let record = state.record(Resource::Loop {
        device: device.clone(),
        backing_file: image.to_path_buf(),
    })?;
    let fd = rustix::fs::open(&device, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| loop_err("open", e).at(&device))?;
    Ok(AttachedLoop {
        number,
        device,
        backing_file: image.to_path_buf(),
        fd: Some(fd),
        record: Some(record),
    })
}

/// N of `/dev/loopN`.
pub fn number_of(device: &Path) -> Option<u32> {
    device
        .to_str()?
        .strip_prefix("/dev/loop")?
        .parse::<u32>()
        .ok()
}

/// The file backing loop device N, as the kernel reports it (`None` when detached).
pub fn backing_file(number: u32) -> Option<PathBuf> {
    let s = fs::read_to_string(format!("/sys/block/loop{number}/loop/backing_file")).ok()?;
    let s = s.trim_end_matches('\n');
    let s = s.strip_suffix(" (deleted)").unwrap_or(s);
    (!s.is_empty()).then(|| PathBuf::from(s))
}

/// The loop device backed by `image`, if any.
pub fn attached_to(image: &Path) -> Option<PathBuf> {
    let image = fs::canonicalize(image).unwrap_or_else(|_| image.to_path_buf());
    let entries = fs::read_dir("/sys/block").ok()?;
    entries
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("loop")?
                .parse::<u32>()
                .ok()
        })
        .find(|&n| backing_file(n).as_deref() == Some(image.as_path()))
        .map(|n| PathBuf::from(format!("/dev/loop{n}")))
}

/// Detach loop device N (recovery: the caller checked its backing file) and wait for it.
pub fn detach_number(number: u32) -> Result<(), SiteError> {
    let device = PathBuf::from(format!("/dev/loop{number}"));
    let Some(image) = backing_file(number) else {
        return Ok(());
    };
    let fd = rustix::fs::open(&device, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| loop_err("open", e).at(&device))?;
    match clr_fd(&fd) {
        Ok(()) | Err(Errno::NXIO) => {}
        Err(e) => return Err(loop_err("LOOP_CLR_FD", e).at(&device)),
    }
    drop(fd);
    wait_detached(number, &image)
}

fn wait_detached(number: u32, image: &Path) -> Result<(), SiteError> {
    let start = Instant::now();
    while backing_file(number).as_deref() == Some(image) {
        if start.elapsed() > DETACH_WAIT {
            return Err(SiteError::Unusable {
                path: format!("/dev/loop{number}"),
                message: format!(
                    "still attached to {} after {}s: something still uses it (a mount, or a process holding it open); check `losetup -a` and /proc/mounts, then run fsdelta cleanup",
                    image.display(),
                    DETACH_WAIT.as_secs()
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

struct LoopErr {
    op: &'static str,
    errno: Errno,
}

fn loop_err(op: &'static str, errno: Errno) -> LoopErr {
    LoopErr { op, errno }
}

impl LoopErr {
    fn at(self, device: &Path) -> SiteError {
        let hint = match self.errno {
            Errno::ACCESS | Errno::PERM => {
                "; loop devices need root (run as root, or use fs = \"dir\" / --target)"
            }
            Errno::BUSY => "; the loop device is in use",
            _ => "",
        };
        SiteError::Unusable {
            path: device.display().to_string(),
            message: format!("{}: {}{hint}", self.op, self.errno),
        }
    }
}

impl From<LoopErr> for SiteError {
    fn from(e: LoopErr) -> SiteError {
        e.at(Path::new("/dev/loop-control"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_numbers_are_parsed_from_device_paths() {
        assert_eq!(number_of(Path::new("/dev/loop12")), Some(12));
        assert_eq!(number_of(Path::new("/dev/loop-control")), None);
        assert_eq!(number_of(Path::new("/dev/sda")), None);
    }

    #[test]
    fn sparse_images_take_no_space() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        create_sparse_image(&p, 1 << 30).unwrap();
        let m = fs::metadata(&p).unwrap();
        assert_eq!(m.len(), 1 << 30);
        use std::os::unix::fs::MetadataExt;
        assert!(m.blocks() < 64, "{} blocks", m.blocks());
        assert!(create_sparse_image(&p, 1).is_err(), "never overwrites");
    }
}
