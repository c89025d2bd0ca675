//! The device refusals of issue 13 against real loop devices: a device hidden in mkfs options (as
//! a path, `logdev=` or a symlink), a device active as swap, mounted in another mount namespace,
//! or held open exclusively by another process is refused with the holder named, and its first
//! MiB is unchanged afterwards. And 40 fresh btrfs filesystems in a row on one loop device never
//! meet a busy device.
//!
//! Needs root, /dev/loop-control and the mkfs programs; every device is one this test attached to
//! an image in its own temporary directory. Skips say why, unless FSDELTA_REQUIRE_ALL=1.

mod common;

use fsdelta::plan::config::{FsKind, TargetConfig, parse};
use fsdelta::site::device::check_can_format;
use fsdelta::site::loopdev::AttachedLoop;
use fsdelta::site::mkfs::Mkfs;
use fsdelta::site::state::recover;
use fsdelta::site::{ConfiguredSite, StateFile};
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn usable(fs: Option<FsKind>) -> bool {
    let root = common::is_root();
    if !common::require(root, "root") {
        return false;
    }
    if !common::require(Path::new("/dev/loop-control").exists(), "/dev/loop-control") {
        return false;
    }
    match fs {
        Some(f) => common::require(Mkfs::find(f).is_ok(), &format!("mkfs for {f}")),
        None => true,
    }
}

/// A temporary directory with its own state file and a victim loop device whose first MiB holds
/// a known pattern; everything is detached and removed on drop.
struct Lab {
    dir: tempfile::TempDir,
    state: StateFile,
    victim: Option<AttachedLoop>,
}

impl Lab {
    fn new() -> Lab {
        let dir = tempfile::Builder::new()
            .prefix("fsdelta-safety-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let state = StateFile::new(dir.path().join("leftovers.json"));
        let image = dir.path().join("victim.img");
        let mut f = fs::File::create(&image).unwrap();
        let pattern: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
        f.write_all(&pattern).unwrap();
        f.set_len(400 << 20).unwrap();
        drop(f);
        let victim = AttachedLoop::attach(&image, &state).unwrap();
        Lab {
            dir,
            state,
            victim: Some(victim),
        }
    }

    fn victim(&self) -> PathBuf {
        self.victim.as_ref().unwrap().device().to_path_buf()
    }

    fn scratch(&self) -> PathBuf {
        fs::canonicalize(self.dir.path()).unwrap()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Some(v) = self.victim.take() {
            let _ = v.detach();
        }
        let _ = recover(&self.state);
    }
}

fn first_mib(dev: &Path) -> u64 {
    let mut buf = vec![0u8; 1 << 20];
    fs::File::open(dev).unwrap().read_exact(&mut buf).unwrap();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    buf.hash(&mut h);
    h.finish()
}

fn config(body: &str) -> TargetConfig {
    parse(&format!("[[config]]\nname = \"c\"\n{body}\n"), "t.toml")
        .unwrap()
        .configs
        .remove(0)
}

#[test]
fn devices_hidden_in_mkfs_options_are_refused_and_untouched() {
    if !usable(Some(FsKind::Btrfs)) || !usable(Some(FsKind::Xfs)) {
        return;
    }
    let lab = Lab::new();
    let v = lab.victim();
    let before = first_mib(&v);
    let link = lab.dir.path().join("innocent-name");
    std::os::unix::fs::symlink(&v, &link).unwrap();
    for body in [
        format!(
            "fs = \"btrfs\"\ndevice = \"loop:200M\"\nmkfs = \"{}\"",
            v.display()
        ),
        format!(
            "fs = \"xfs\"\ndevice = \"loop:400M\"\nmkfs = \"-l logdev={},size=64m\"",
            v.display()
        ),
        format!(
            "fs = \"btrfs\"\ndevice = \"loop:200M\"\nmkfs = \"{}\"",
            link.display()
        ),
        format!(
            "fs = \"xfs\"\ndevice = \"loop:400M\"\nmount = \"logdev={}\"",
            v.display()
        ),
    ] {
        let c = config(&body);
        let e = ConfiguredSite::new(&c, &lab.scratch(), lab.state.clone())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("named inside the mkfs or mount options"),
            "{body}: {e}"
        );
    }
    assert_eq!(first_mib(&v), before, "the victim's first MiB changed");
}

#[test]
fn a_device_in_use_as_swap_is_refused_naming_swap() {
    if !usable(Some(FsKind::Ext4)) {
        return;
    }
    let lab = Lab::new();
    let v = lab.victim();
    assert!(
        Command::new("mkswap")
            .arg(&v)
            .output()
            .unwrap()
            .status
            .success()
    );
    let before = first_mib(&v);
    if !Command::new("swapon").arg(&v).status().unwrap().success() {
        common::require(false, "swapon on a loop device");
        return;
    }
    struct Off(PathBuf);
    impl Drop for Off {
        fn drop(&mut self) {
            let _ = Command::new("swapoff").arg(&self.0).status();
        }
    }
    let _off = Off(v.clone());
    let c = config(&format!(
        "fs = \"ext4\"\ndevice = \"{}\"\ndestroy = true",
        v.display()
    ));
    let e = ConfiguredSite::new(&c, &lab.scratch(), lab.state.clone())
        .unwrap_err()
        .to_string();
    assert!(e.contains("in use as swap"), "{e}");
    assert!(!e.contains("mkfs options"), "{e}");
    assert_eq!(first_mib(&v), before);
}

#[test]
fn a_device_mounted_in_another_mount_namespace_is_refused_naming_it() {
    if !usable(Some(FsKind::Ext4)) {
        return;
    }
    let lab = Lab::new();
    let v = lab.victim();
    assert!(
        Command::new("mkfs.ext4")
            .args(["-q", "-F"])
            .arg(&v)
            .status()
            .unwrap()
            .success()
    );
    let mnt = lab.dir.path().join("elsewhere");
    fs::create_dir(&mnt).unwrap();
    let script = format!(
        "mount {} {} && echo ready && exec sleep 120",
        v.display(),
        mnt.display()
    );
    let holder = common::ReadyChild::spawn(
        Command::new("unshare")
            .args(["--mount", "--propagation", "private", "sh", "-c", &script])
            .stderr(Stdio::inherit()),
        "unshare",
    );
    let e = check_can_format(&v, &lab.scratch())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("mount namespace of pid") && e.contains("elsewhere"),
        "{e}"
    );
    // (No checksum here: the other namespace's ext4 mount writes its own superblock.)
    drop(holder);
}

const HOLD_ENV: &str = "FSDELTA_TEST_HOLD_DEVICE";

/// Not a test on its own: with FSDELTA_TEST_HOLD_DEVICE set (by the test below, which runs this
/// binary again), hold that device open with O_EXCL and wait to be killed.
#[test]
fn exclusive_holder() {
    common::hold_device_when_asked(HOLD_ENV);
}

#[test]
fn a_device_held_open_exclusively_is_refused_naming_the_process() {
    if !usable(None) {
        return;
    }
    let lab = Lab::new();
    let v = lab.victim();
    let before = first_mib(&v);
    // This test binary itself, running only `exclusive_holder` with the device to hold.
    let holder = common::hold_device("exclusive_holder", HOLD_ENV, &v);
    let pid = holder.0.id();
    let e = check_can_format(&v, &lab.scratch())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("held open exclusively") && e.contains(&format!("pid {pid} (")),
        "{e}"
    );
    drop(holder);
    // Once it is gone the device can be held by us.
    let hold = check_can_format(&v, &lab.scratch()).unwrap();
    hold.release();
    assert_eq!(first_mib(&v), before);
}

#[test]
fn forty_fresh_btrfs_samples_in_a_row_never_meet_a_busy_device() {
    if !usable(Some(FsKind::Btrfs)) {
        return;
    }
    let lab = Lab::new();
    let c = config("fs = \"btrfs\"\ndevice = \"loop:256M\"\nfresh = \"sample\"");
    let mut t = ConfiguredSite::new(&c, &lab.scratch(), lab.state.clone()).unwrap();
    for i in 0..40 {
        let p = t
            .prepare()
            .unwrap_or_else(|e| panic!("sample {i}: prepare: {e}"));
        // A workload-like pattern: files written, fsynced and closed, one directory fd held
        // while writing.
        let dirfd = fs::File::open(&p.dir).unwrap();
        for n in 0..20 {
            let mut f = fs::File::create(p.dir.join(format!("f{n}"))).unwrap();
            f.write_all(&[n as u8; 8192]).unwrap();
            f.sync_all().unwrap();
        }
        dirfd.sync_all().unwrap();
        drop(dirfd);
        t.finish_sample()
            .unwrap_or_else(|e| panic!("sample {i}: finish: {e}"));
    }
    t.teardown().unwrap();
    assert!(
        lab.state.entries().unwrap().len() == 1,
        "only the victim is left recorded"
    );
}

/// Issue 13 item 10: a filesystem detached lazily while a process still has its working
/// directory in it stays alive and keeps its device claimed. The check before mkfs waits for it
/// briefly, then refuses naming that process (not the mkfs options); once it has gone, the
/// device can be formatted again.
#[test]
fn a_lazily_detached_filesystem_keeps_the_device_busy_and_its_holder_is_named() {
    if !usable(Some(FsKind::Btrfs)) {
        return;
    }
    let lab = Lab::new();
    let v = lab.victim();
    Mkfs::find(FsKind::Btrfs).unwrap().run(&v, &[]).unwrap();
    let mnt = lab.scratch().join("mnt");
    fs::create_dir(&mnt).unwrap();
    rustix::mount::mount(
        v.as_path(),
        &mnt,
        "btrfs",
        rustix::mount::MountFlags::empty(),
        c"",
    )
    .unwrap();
    let holder = common::ReadyChild::spawn(
        Command::new("sh")
            .args(["-c", "echo ready; exec sleep 30"])
            .current_dir(&mnt),
        "sh",
    );
    rustix::mount::unmount(&mnt, rustix::mount::UnmountFlags::DETACH).unwrap();
    let pid = holder.0.id();
    let e = check_can_format(&v, &lab.scratch())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!("pid {pid} (sleep): cwd")) && e.contains("detached"),
        "{e}"
    );
    assert!(!e.contains("mkfs options"), "{e}");
    drop(holder);
    // The last user gone, the kernel releases the filesystem and the device is free again.
    let hold = check_can_format(&v, &lab.scratch()).unwrap();
    hold.release();
}

/// A process in a mount namespace of its own (every `fsdelta run` enters one) keeps the files
/// it opened before in the namespace it left: those mounts are alive, not detached, and such a
/// process holds no device. Found when a run in another shell was named as the holder of a
/// device it had never touched ("pid 8269 (fsdelta): fd 0 /dev/null on a detached filesystem").
#[test]
fn a_process_in_another_mount_namespace_is_not_a_detached_holder() {
    if !usable(None) {
        return;
    }
    let opened_before = fs::File::open("/etc/hostname").unwrap();
    let other = common::ReadyChild::spawn(
        Command::new("unshare")
            .args(["--mount", "--propagation", "slave", "sh", "-c"])
            .arg("echo ready; exec sleep 30")
            .stdin(opened_before),
        "unshare",
    );
    let pid = other.0.id();
    let named: Vec<String> = fsdelta::site::holders::of_detached_mounts()
        .iter()
        .filter(|h| h.pid == pid)
        .map(|h| h.to_string())
        .collect();
    assert!(named.is_empty(), "{named:?}");
}
