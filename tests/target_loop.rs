//! Real filesystems on loop images, through the library: ext4, btrfs with compress-force=zstd,
//! xfs and tmpfs are made, mounted, measured and torn down, leaving no loop device, no mount and
//! no state entry; a kill -9 in the middle is undone by `recover`; a mounted device is refused.
//!
//! Needs root, /dev/loop-control and the mkfs programs. Each test that cannot run says why and
//! passes, unless FSDELTA_REQUIRE_ALL=1, which turns every skip into a failure (CI sets it).

mod common;

use fsdelta::model::Direction;
use fsdelta::plan::config::{TargetConfig, parse};
use fsdelta::probe::blockstat::drop_caches;
use fsdelta::site::env::parse_mounts;
use fsdelta::site::loopdev;
use fsdelta::site::mkfs::Mkfs;
use fsdelta::site::state::recover;
use fsdelta::site::{ConfiguredSite, SiteError, StateFile};
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Whether `fs` can be made here; prints why not (or fails under FSDELTA_REQUIRE_ALL=1).
fn usable(fs: &str) -> bool {
    let why = if !rustix::process::geteuid().is_root() {
        Some("needs root".to_string())
    } else if !Path::new("/dev/loop-control").exists() {
        Some("no /dev/loop-control (modprobe loop)".to_string())
    } else if !fs::read_to_string("/proc/filesystems")
        .unwrap_or_default()
        .split_whitespace()
        .any(|f| f == fs)
    {
        Some(format!("the kernel has no {fs}"))
    } else {
        match fs {
            "btrfs" => Mkfs::find(fsdelta::plan::config::FsKind::Btrfs).err(),
            "ext4" => Mkfs::find(fsdelta::plan::config::FsKind::Ext4).err(),
            "xfs" => Mkfs::find(fsdelta::plan::config::FsKind::Xfs).err(),
            _ => None,
        }
        .map(|e| e.to_string())
    };
    match why {
        None => true,
        Some(why) => {
            if std::env::var("FSDELTA_REQUIRE_ALL").as_deref() == Ok("1") {
                panic!("FSDELTA_REQUIRE_ALL=1 but {fs} cannot be tested: {why}");
            }
            eprintln!("skipped ({fs}): {why}");
            false
        }
    }
}

fn config(body: &str) -> TargetConfig {
    parse(&format!("[[config]]\n{body}\n"), "test.toml")
        .unwrap()
        .configs
        .remove(0)
}

/// A scratch location that, when a test fails half way, undoes what dead processes left and
/// detaches any mount still under it before removing it (a plain `TempDir` would recurse into a
/// mounted filesystem).
struct Scratch {
    dir: Option<tempfile::TempDir>,
    root: PathBuf,
    state: StateFile,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = recover(&self.state);
        for m in mounts_under(&self.root) {
            if let Some((_, target)) = m.split_once(" on ") {
                let _ = rustix::mount::unmount(target, rustix::mount::UnmountFlags::DETACH);
            }
        }
        if mounts_under(&self.root).is_empty() {
            drop(self.dir.take());
        } else if let Some(d) = self.dir.take() {
            let _ = d.keep();
        }
    }
}

fn scratch() -> (Scratch, PathBuf, StateFile) {
    let t = tempfile::Builder::new()
        .prefix("fsdelta-test-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let root = fs::canonicalize(t.path()).unwrap();
    let state = StateFile::new(root.join("leftovers.json"));
    let guard = Scratch {
        dir: Some(t),
        root: root.clone(),
        state: state.clone(),
    };
    (guard, root, state)
}

fn mounts_under(root: &Path) -> Vec<String> {
    parse_mounts(&fs::read_to_string("/proc/self/mounts").unwrap())
        .into_iter()
        .filter(|m| Path::new(&m.target).starts_with(root))
        .map(|m| format!("{} on {}", m.source, m.target))
        .collect()
}

fn loops_under(root: &Path) -> Vec<String> {
    fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let n: u32 = e.file_name().to_str()?.strip_prefix("loop")?.parse().ok()?;
            let b = loopdev::backing_file(n)?;
            b.starts_with(root)
                .then(|| format!("/dev/loop{n} -> {}", b.display()))
        })
        .collect()
}

/// No mount, no loop device, no state entry and no directory of ours is left under `root`.
fn assert_nothing_left(root: &Path, state: &StateFile) {
    assert_eq!(mounts_under(root), Vec::<String>::new(), "mounts left");
    assert_eq!(loops_under(root), Vec::<String>::new(), "loop devices left");
    assert_eq!(state.entries().unwrap(), vec![], "state entries left");
    let mut left: Vec<String> = fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("leftovers.json"))
        .collect();
    left.sort();
    assert_eq!(
        left,
        Vec::<String>::new(),
        "files left in the scratch location"
    );
}

/// Write `bytes` of incompressible (xorshift) data and fsync, so that compression cannot hide
/// them from the device counters.
fn write_synced(path: &Path, bytes: usize) {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let data: Vec<u8> = (0..bytes.div_ceil(8))
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()
        })
        .take(bytes)
        .collect();
    let mut f = fs::File::create(path).unwrap();
    f.write_all(&data).unwrap();
    f.sync_all().unwrap();
}

fn metric(metrics: &[fsdelta::model::Metric], name: &str) -> f64 {
    metrics
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no metric {name} in {metrics:?}"))
        .value
}

#[test]
fn ext4_on_a_loop_image_is_made_per_sample_measured_and_removed() {
    if !usable("ext4") {
        return;
    }
    let (_t, root, state) = scratch();
    let c = config("name = \"ext4\"\nfs = \"ext4\"\ndevice = \"loop:256M\"\nmkfs = \"-b 4096\"");
    let mut t = ConfiguredSite::new(&c, &root, state.clone()).unwrap();
    let p = t.prepare().unwrap();
    let f = &p.facts;
    assert_eq!(f.fs_type, "ext4");
    assert!(f.device.starts_with("/dev/loop"), "{f:?}");
    assert!(f.mount_options.split(',').any(|o| o == "rw"), "{f:?}");
    assert_eq!(f.mkfs_options.as_deref(), Some("-b 4096"));
    assert!(f.extra["mkfs_program"].ends_with("mkfs.ext4"), "{f:?}");
    assert!(f.extra["mkfs_version"].contains("1."), "{f:?}");
    assert!(
        f.extra["mkfs_command"].contains("-b 4096 /dev/loop"),
        "{f:?}"
    );
    assert_eq!(f.extra["device_model"], "loop");
    assert_eq!(f.extra["device_size_bytes"], (256u64 << 20).to_string());
    assert!(f.extra.contains_key("device_rotational"), "{f:?}");
    assert!(f.extra.contains_key("device_scheduler"), "{f:?}");
    assert_eq!(
        f.extra["image_path"],
        root.join("ext4.".to_string() + &std::process::id().to_string())
            .join("image")
            .display()
            .to_string()
    );
    assert!(!f.extra["image_fs_type"].is_empty(), "{f:?}");
    assert!(p.dir.starts_with(&root));

    // Device counters see what the workload wrote.
    drop_caches().unwrap();
    let before = t.counters().unwrap().expect("a loop device has counters");
    write_synced(&p.dir.join("data"), 8 << 20);
    let after = t.counters().unwrap().unwrap();
    let delta = before.delta(&after);
    assert!(delta.write_bytes >= 8 << 20, "{delta:?}");
    let wa = delta.write_amplification(8 << 20).unwrap();
    assert!(
        wa.value >= 1.0 && wa.direction == Direction::LowerIsBetter,
        "{wa:?}"
    );
    assert!(metric(&delta.metrics(), "dev_write_kbytes") >= 8192.0);

    let m = t.finish_sample().unwrap();
    assert!(
        metric(&m, "umount_s") > 0.0 && metric(&m, "mount_s") > 0.0,
        "{m:?}"
    );
    assert!(p.dir.join("data").exists(), "the remount keeps the data");

    // fresh = "sample": the next sample gets a new filesystem.
    let p2 = t.prepare().unwrap();
    assert!(!p2.dir.join("data").exists());
    assert!(!p2.dir.parent().unwrap().join("fsdelta-work/data").exists());
    t.teardown().unwrap();
    assert_nothing_left(&root, &state);
}

#[test]
fn btrfs_mount_options_are_read_back_from_proc_mounts() {
    if !usable("btrfs") {
        return;
    }
    let (_t, root, state) = scratch();
    let c = config(
        "name = \"btrfs-zstd\"\nfs = \"btrfs\"\ndevice = \"loop:1G\"\nmount = \"compress-force=zstd,noatime\"\nfresh = \"run\"",
    );
    let mut t = ConfiguredSite::new(&c, &root, state.clone()).unwrap();
    let p = t.prepare().unwrap();
    assert_eq!(p.facts.fs_type, "btrfs");
    let opts: Vec<&str> = p.facts.mount_options.split(',').collect();
    assert!(
        opts.iter().any(|o| o.starts_with("compress-force=zstd")),
        "{}",
        p.facts.mount_options
    );
    assert!(opts.contains(&"noatime"), "{}", p.facts.mount_options);
    fs::write(p.dir.parent().unwrap().join("kept"), b"x").unwrap();
    fs::write(p.dir.join("sample-1"), b"x").unwrap();
    let m = t.finish_sample().unwrap();
    assert_eq!(m.len(), 2);
    // fresh = "run": same filesystem, fresh directory.
    let p2 = t.prepare().unwrap();
    assert!(p2.dir.parent().unwrap().join("kept").exists());
    assert!(!p2.dir.join("sample-1").exists());
    t.teardown().unwrap();
    assert_nothing_left(&root, &state);
}

#[test]
fn xfs_on_a_loop_image() {
    if !usable("xfs") {
        return;
    }
    let (_t, root, state) = scratch();
    let c = config("name = \"xfs\"\nfs = \"xfs\"\ndevice = \"loop:512M\"\nmount = \"noatime\"");
    let mut t = ConfiguredSite::new(&c, &root, state.clone()).unwrap();
    let p = t.prepare().unwrap();
    assert_eq!(p.facts.fs_type, "xfs");
    assert!(p.facts.mount_options.contains("noatime"), "{:?}", p.facts);
    assert!(
        p.facts.extra["mkfs_version"].contains("mkfs.xfs"),
        "{:?}",
        p.facts
    );
    t.finish_sample().unwrap();
    t.teardown().unwrap();
    assert_nothing_left(&root, &state);
}

#[test]
fn tmpfs_gets_its_size() {
    if !usable("tmpfs") {
        return;
    }
    let (_t, root, state) = scratch();
    let c = config("name = \"ram\"\nfs = \"tmpfs\"\nsize = \"64M\"");
    let mut t = ConfiguredSite::new(&c, &root, state.clone()).unwrap();
    let p = t.prepare().unwrap();
    assert_eq!(p.facts.fs_type, "tmpfs");
    assert!(
        p.facts.mount_options.contains("size=65536k"),
        "{:?}",
        p.facts
    );
    assert_eq!(p.facts.device, "fsdelta-ram");
    assert!(t.counters().unwrap().is_none());
    fs::write(p.dir.join("x"), b"x").unwrap();
    t.finish_sample().unwrap();
    let p2 = t.prepare().unwrap();
    assert!(!p2.dir.join("x").exists());
    drop(t); // no teardown: dropping undoes everything too
    assert_nothing_left(&root, &state);
}

#[test]
fn a_mounted_device_is_refused_and_a_failed_mkfs_leaves_nothing() {
    if !usable("ext4") {
        return;
    }
    let (_t, root, state) = scratch();
    let c = config("name = \"a\"\nfs = \"ext4\"\ndevice = \"loop:128M\"");
    let mut t = ConfiguredSite::new(&c, &root, state.clone()).unwrap();
    let p = t.prepare().unwrap();
    let dev = p.facts.device.clone();
    let other = config(&format!(
        "name = \"b\"\nfs = \"xfs\"\ndevice = \"{dev}\"\ndestroy = true"
    ));
    match ConfiguredSite::new(&other, &root, state.clone()) {
        Err(SiteError::Refused { reason, .. }) => {
            assert!(reason.contains("is mounted at"), "{reason}")
        }
        Err(e) if e.to_string().contains("mkfs.xfs not found") => {}
        r => panic!("formatting a mounted device was not refused: {r:?}"),
    }
    t.teardown().unwrap();

    let bad = config(
        "name = \"bad\"\nfs = \"ext4\"\ndevice = \"loop:128M\"\nmkfs = \"--no-such-option\"",
    );
    let mut t = ConfiguredSite::new(&bad, &root, state.clone()).unwrap();
    let e = t.prepare().unwrap_err();
    assert!(matches!(e, SiteError::CommandFailed { .. }), "{e}");
    assert!(e.to_string().contains("mkfs options"), "{e}");
    drop(t);
    assert_nothing_left(&root, &state);
}

const CHILD_ENV: &str = "FSDELTA_TEST_CHILD_SCRATCH";

#[test]
fn mounts_a_hook_makes_under_the_mount_point_are_unmounted_between_samples_and_at_teardown() {
    if !usable("tmpfs") {
        return;
    }
    let (_t, root, state) = scratch();
    let c = config(
        "name = \"hooked\"\nfs = \"tmpfs\"\nsize = \"64M\"\n\
         before = \"mkdir -p img/inner && mount -t tmpfs hookfs img && mkdir -p img/inner && mount -t tmpfs hookfs2 img/inner\"",
    );
    let mut t = ConfiguredSite::new(&c, &root, state.clone()).unwrap();
    for _ in 0..2 {
        let p = t.prepare().unwrap();
        t.before_sample().unwrap();
        assert!(p.dir.join("img/inner").is_dir());
        let hooked: Vec<String> = mounts_under(&root)
            .into_iter()
            .filter(|m| m.starts_with("hookfs"))
            .collect();
        assert_eq!(hooked.len(), 2, "the hook mounted twice: {hooked:?}");
        t.finish_sample().unwrap();
    }
    t.teardown().unwrap();
    assert_nothing_left(&root, &state);
}

#[test]
fn kill_9_leaves_leftovers_that_recover_undoes() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        // The child: make a mount, say where, and wait to be killed.
        let root = PathBuf::from(dir);
        let state = StateFile::new(root.join("leftovers.json"));
        let c = config("name = \"killed\"\nfs = \"ext4\"\ndevice = \"loop:128M\"");
        let mut t = ConfiguredSite::new(&c, &root, state).unwrap();
        let p = t.prepare().unwrap();
        println!("READY {}", p.dir.display());
        std::io::stdout().flush().unwrap();
        std::thread::sleep(Duration::from_secs(120));
        panic!("the parent test should have killed this process");
    }
    if !usable("ext4") {
        return;
    }
    let (_scratch, root, state) = scratch();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "kill_9_leaves_leftovers_that_recover_undoes",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &root)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // libtest prints "test NAME ... " without a newline before the test's own output.
            if let Some((_, dir)) = line.split_once("READY ") {
                let _ = tx.send(PathBuf::from(dir.trim()));
                return;
            }
        }
    });
    // A hang guard: the child formats and mounts a small image, seconds even on a loaded machine.
    let ready = rx.recv_timeout(Duration::from_secs(300));
    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();
    let dir = ready.expect("the child never mounted its target");

    let mounts = mounts_under(&root);
    assert_eq!(mounts.len(), 1, "the kill left the mount: {mounts:?}");
    assert!(dir.exists());
    // A hook's mount inside the sample directory (what a `before` hook mounting an image
    // leaves): recovery unmounts it first, then fsdelta's own.
    fs::create_dir(dir.join("hooked")).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "hookfs"])
        .arg(dir.join("hooked"))
        .status()
        .unwrap();
    assert!(ok.success());
    assert_eq!(mounts_under(&root).len(), 2);
    assert_eq!(loops_under(&root).len(), 1, "and its loop device");
    assert!(state.entries().unwrap().len() >= 4, "all of it recorded");

    let report = recover(&state).unwrap();
    assert!(report.failed.is_empty(), "{report}");
    assert!(report.live.is_empty(), "{report}");
    assert!(
        report
            .undone
            .iter()
            .any(|s| s.starts_with("unmounted /dev/loop")),
        "{report}"
    );
    assert!(
        report
            .undone
            .iter()
            .any(|s| s.starts_with("removed ") && s.ends_with("/image")),
        "{report}"
    );
    assert_nothing_left(&root, &state);
    assert!(
        recover(&state).unwrap().is_empty(),
        "a second recovery finds nothing"
    );
}

/// A loop device with a partition table, attached with `losetup -P` (fsdelta itself never scans
/// partitions), detached again on drop.
struct PartitionedLoop {
    device: String,
}

impl Drop for PartitionedLoop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.device]).status();
        // A device still open (udev probing the partition after the unmount) is only marked
        // autoclear by `losetup -d`; the kernel detaches it at the last close. Wait for that,
        // bounded, so the leftover check sees the detach rather than racing udev.
        let name = self.device.trim_start_matches("/dev/");
        let backing = format!("/sys/block/{name}/loop/backing_file");
        let start = std::time::Instant::now();
        while Path::new(&backing).exists() && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Add partition 1 (from 1 MiB to the end) to a partition-scanning loop device with the BLKPG
/// ioctl, which works without any partition-table parser in the kernel.
fn add_partition(device: &str, size: u64) {
    #[repr(C)]
    struct BlkpgPartition {
        start: i64,
        length: i64,
        pno: i32,
        devname: [u8; 64],
        volname: [u8; 64],
    }
    #[repr(C)]
    struct BlkpgIoctlArg {
        op: i32,
        flags: i32,
        datalen: i32,
        data: *mut BlkpgPartition,
    }
    const BLKPG: libc::c_ulong = 0x1269;
    const BLKPG_ADD_PARTITION: i32 = 1;
    let mut part = BlkpgPartition {
        start: 1 << 20,
        length: (size - (1 << 20)) as i64,
        pno: 1,
        devname: [0; 64],
        volname: [0; 64],
    };
    let mut arg = BlkpgIoctlArg {
        op: BLKPG_ADD_PARTITION,
        flags: 0,
        datalen: std::mem::size_of::<BlkpgPartition>() as i32,
        data: &mut part,
    };
    let f = fs::File::open(device).unwrap();
    use std::os::fd::AsRawFd;
    // SAFETY: BLKPG reads a blkpg_ioctl_arg pointing at a blkpg_partition, both alive here.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), BLKPG, &mut arg) };
    assert_eq!(
        r,
        0,
        "BLKPG_ADD_PARTITION: {}",
        std::io::Error::last_os_error()
    );
}

#[test]
fn a_device_holding_a_mounted_partition_is_refused() {
    if !usable("ext4") {
        return;
    }
    if Command::new("losetup").arg("--version").output().is_err() {
        if std::env::var("FSDELTA_REQUIRE_ALL").as_deref() == Ok("1") {
            panic!("FSDELTA_REQUIRE_ALL=1 but losetup (util-linux) is missing");
        }
        eprintln!("skipped: no losetup to attach with partition scanning");
        return;
    }
    let (_scratch, root, state) = scratch();
    let image = root.join("partitioned.img");
    fs::File::create(&image).unwrap().set_len(64 << 20).unwrap();
    let out = Command::new("losetup")
        .args(["-P", "--find", "--show"])
        .arg(&image)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let lo = PartitionedLoop {
        device: String::from_utf8(out.stdout).unwrap().trim().to_string(),
    };
    add_partition(&lo.device, 64 << 20);
    let part = format!("{}p1", lo.device);
    let start = std::time::Instant::now();
    while !Path::new(&part).exists() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "{part} never appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mkfs = Mkfs::find(fsdelta::plan::config::FsKind::Ext4).unwrap();
    mkfs.run(Path::new(&part), &[]).unwrap();
    let mnt = root.join("mnt");
    fs::create_dir(&mnt).unwrap();
    fsdelta::site::mount::mount(&part, &mnt, "ext4", "").unwrap();

    let whole = config(&format!(
        "name = \"whole\"\nfs = \"xfs\"\ndevice = \"{}\"\ndestroy = true",
        lo.device
    ));
    let refused = ConfiguredSite::new(&whole, &root, state.clone());
    let partition = config(&format!(
        "name = \"part\"\nfs = \"ext4\"\ndevice = \"{part}\"\ndestroy = true"
    ));
    let refused_part = ConfiguredSite::new(&partition, &root, state.clone());
    rustix::mount::unmount(&mnt, rustix::mount::UnmountFlags::empty()).unwrap();
    fs::remove_dir(&mnt).unwrap();

    match refused {
        Err(SiteError::Refused { reason, .. }) => assert!(
            reason.contains(&format!(
                "holds partition {}",
                part.trim_start_matches("/dev/")
            )),
            "{reason}"
        ),
        Err(e) if e.to_string().contains("mkfs.xfs not found") => {}
        r => panic!("a disk with a mounted partition was not refused: {r:?}"),
    }
    match refused_part {
        Err(SiteError::Refused { reason, .. }) => {
            assert!(reason.contains("is mounted"), "{reason}")
        }
        r => panic!("a mounted partition was not refused: {r:?}"),
    }
    // Unmounted, the partition may be formatted when the config says so.
    assert!(ConfiguredSite::new(&partition, &root, state.clone()).is_ok());
    drop(lo);
    fs::remove_file(&image).unwrap();
    assert_nothing_left(&root, &state);
}

/// The shape of the run orchestration, at library level: a config file's matrix, every
/// configuration prepared per repetition (repetition-major), each sample recording the mount
/// options actually in force and its device counters, and nothing left afterwards.
#[test]
fn a_matrix_from_a_config_file_runs_repetition_major_and_leaves_nothing() {
    if !(usable("btrfs") && usable("ext4") && usable("xfs")) {
        return;
    }
    let (_scratch, root, state) = scratch();
    let text = format!(
        r#"scratch = "{}"

[[config]]
name = "btrfs-lzo"
fs = "btrfs"
device = "loop:1G"
mount = "compress-force=lzo"

[[config]]
name = "btrfs-zstd"
fs = "btrfs"
device = "loop:1G"
mount = "compress-force=zstd"
fresh = "run"

[[config]]
name = "ext4"
fs = "ext4"
device = "loop:256M"
mount = "noatime"

[[config]]
name = "xfs"
fs = "xfs"
device = "loop:512M"
mount = "noatime"
"#,
        root.display()
    );
    let file = parse(&text, "matrix.toml").unwrap();
    let mut targets = fsdelta::site::configured_sites(&file, &state).unwrap();
    let mut samples = Vec::new();
    for rep in 0..2 {
        for t in targets.iter_mut() {
            let p = t.prepare().unwrap();
            t.before_sample().unwrap();
            drop_caches().unwrap();
            let before = t.counters().unwrap().unwrap();
            write_synced(&p.dir.join("data"), 1 << 20);
            let delta = before.delta(&t.counters().unwrap().unwrap());
            t.after_sample().unwrap();
            let mut metrics = delta.metrics();
            metrics.extend(t.finish_sample().unwrap());
            samples.push((rep, t.config().name.clone(), p.facts, metrics));
        }
    }
    assert_eq!(samples.len(), 8);
    for (rep, name, facts, metrics) in &samples {
        let wanted = file
            .configs
            .iter()
            .find(|c| &c.name == name)
            .unwrap()
            .mount_options
            .clone();
        assert!(
            facts
                .mount_options
                .split(',')
                .any(|o| o.starts_with(wanted.as_str())),
            "rep {rep} {name}: asked {wanted}, in force {}",
            facts.mount_options
        );
        assert!(
            metric(metrics, "dev_write_kbytes") >= 1024.0,
            "{name}: {metrics:?}"
        );
        assert!(metric(metrics, "umount_s") > 0.0, "{name}");
    }
    for t in targets {
        t.teardown().unwrap();
    }
    assert_nothing_left(&root, &state);
}

const HOLD_ENV: &str = "FSDELTA_TEST_HOLD_LOOP";

/// Not a test on its own: with FSDELTA_TEST_HOLD_LOOP set (by the test below, which runs this
/// binary again), hold that device open with O_EXCL, say "ready", and wait to be killed.
#[test]
fn loop_holder() {
    common::hold_device_when_asked(HOLD_ENV);
}

/// Issue 13 item 10: a loop device fsdelta attached that stays busy after the wait is given up
/// for a fresh one. Deterministic: a child process holds the first device open with `O_EXCL`
/// (as a stray opener would) from between its attach and its mkfs until after the teardown.
#[test]
fn a_loop_device_held_by_someone_else_is_replaced_by_a_fresh_one_with_a_warning() {
    if !usable("ext4") {
        return;
    }
    let (_t, root, state) = scratch();
    let c = config("name = \"swap\"\nfs = \"ext4\"\ndevice = \"loop:64M\"\nfresh = \"sample\"");
    let mut t = ConfiguredSite::new(&c, &root, state.clone()).unwrap();
    let first = t
        .attach_loop()
        .unwrap()
        .expect("a loop config has a loop device");
    let first_n = loopdev::number_of(&first).unwrap();
    let hold = common::hold_device("loop_holder", HOLD_ENV, &first);
    let holder_pid = hold.0.id();
    let began = std::time::Instant::now();
    let p = t.prepare().unwrap();
    let waited = began.elapsed();
    assert!(
        waited >= fsdelta::site::device::RELEASE_WAIT,
        "gave up after {waited:?}, before the wait"
    );
    let second = PathBuf::from(&p.facts.device);
    assert_ne!(second, first, "{:?}", p.facts);
    assert!(loopdev::number_of(&second).is_some(), "{:?}", p.facts);
    assert_eq!(
        t.device_name(),
        Some(second.display().to_string().replace("/dev/", ""))
    );
    let warnings = t.take_warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    for part in [
        format!("loop device {} stayed busy", first.display()),
        format!("attached the image to {} instead", second.display()),
        "held open exclusively".to_string(),
        format!("pid {holder_pid} ("),
    ] {
        assert!(w.contains(&part), "{part}: {w}");
    }
    // The sample runs on the fresh device, and the next sample formats it again in place.
    assert!(
        mounts_under(&root)
            .iter()
            .any(|m| m.starts_with(&format!("{} on ", second.display()))),
        "{:?}",
        mounts_under(&root)
    );
    write_synced(&p.dir.join("f"), 1 << 20);
    t.finish_sample().unwrap();
    let p2 = t.prepare().unwrap();
    assert_eq!(PathBuf::from(&p2.facts.device), second);
    assert!(t.take_warnings().is_empty());
    t.finish_sample().unwrap();
    t.teardown().unwrap();
    // The first device stays attached while its holder keeps it, and goes with it.
    assert!(loopdev::backing_file(first_n).is_some());
    drop(hold);
    let gone = std::time::Instant::now();
    while loopdev::backing_file(first_n).is_some() {
        assert!(
            gone.elapsed() < Duration::from_secs(120),
            "{} not detached after its holder closed it",
            first.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_nothing_left(&root, &state);
}
