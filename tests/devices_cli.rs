//! Issue 33, item 7 (the device and import parts): a device named by number inside mount
//! options (`journal_dev=1795`) is refused like a device named by path; a read-only block
//! device is refused before mkfs, saying it is read-only; `mkfs = "-E offset=4096"` is blamed
//! on the mkfs option, not on the (empty) mount options; `import fio-json` of a write job
//! without its `write` object is refused naming the job and the object.
//!
//! The device tests need root and /dev/loop-control; every loop device is one this test
//! attached to an image in its own temporary directory, and is detached on drop.

mod common;

use fsdelta::plan::config::{FsKind, TargetConfig, parse};
use fsdelta::site::loopdev::AttachedLoop;
use fsdelta::site::mkfs::Mkfs;
use fsdelta::site::state::recover;
use fsdelta::site::{ConfiguredSite, StateFile};
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

fn usable() -> bool {
    common::require(common::is_root(), "root")
        && common::require(Path::new("/dev/loop-control").exists(), "/dev/loop-control")
        && common::require(Mkfs::find(FsKind::Ext4).is_ok(), "mkfs.ext4")
}

/// A temporary directory with its own state file and an image whose first MiB holds a known
/// pattern; every loop device attached here is detached on drop.
struct Lab {
    dir: tempfile::TempDir,
    state: StateFile,
    loops: Vec<AttachedLoop>,
    ro: Vec<PathBuf>,
}

impl Lab {
    fn new() -> Lab {
        let dir = tempfile::Builder::new()
            .prefix("fsdelta-devices-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let state = StateFile::new(dir.path().join("leftovers.json"));
        let image = dir.path().join("victim.img");
        let mut f = fs::File::create(&image).unwrap();
        let pattern: Vec<u8> = (0..1u32 << 20).map(|i| (i % 251) as u8).collect();
        f.write_all(&pattern).unwrap();
        f.set_len(64 << 20).unwrap();
        drop(f);
        Lab {
            dir,
            state,
            loops: Vec::new(),
            ro: Vec::new(),
        }
    }

    fn image(&self) -> PathBuf {
        self.dir.path().join("victim.img")
    }

    /// The image attached read-write.
    fn attach(&mut self) -> PathBuf {
        let l = AttachedLoop::attach(&self.image(), &self.state).unwrap();
        let d = l.device().to_path_buf();
        self.loops.push(l);
        d
    }

    /// The image attached read-only (`losetup -r`).
    fn attach_read_only(&mut self) -> PathBuf {
        let out = std::process::Command::new("losetup")
            .args(["-r", "-f", "--show"])
            .arg(self.image())
            .output()
            .unwrap();
        assert!(out.status.success(), "losetup -r: {out:?}");
        let d = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
        self.ro.push(d.clone());
        d
    }

    fn scratch(&self) -> PathBuf {
        fs::canonicalize(self.dir.path()).unwrap()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for l in self.loops.drain(..) {
            let _ = l.detach();
        }
        for d in &self.ro {
            let _ = std::process::Command::new("losetup")
                .arg("-d")
                .arg(d)
                .status();
        }
        let _ = recover(&self.state);
    }
}

fn first_mib(p: &Path) -> u64 {
    let mut buf = vec![0u8; 1 << 20];
    fs::File::open(p).unwrap().read_exact(&mut buf).unwrap();
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

/// The kernel's `new_encode_dev`: the number ext4's `journal_dev=` takes.
fn encode_dev(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let rdev = fs::metadata(path).unwrap().rdev();
    let (major, minor) = (
        rustix::fs::major(rdev) as u64,
        rustix::fs::minor(rdev) as u64,
    );
    (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)
}

#[test]
fn a_device_named_by_number_in_mount_options_is_refused_naming_it() {
    if !usable() {
        return;
    }
    let mut lab = Lab::new();
    let victim = lab.attach();
    let before = first_mib(&victim);
    let n = encode_dev(&victim);
    let c = config(&format!(
        "fs = \"ext4\"\ndevice = \"loop:64M\"\nmount = \"journal_dev={n}\""
    ));
    let e = ConfiguredSite::new(&c, &lab.scratch(), lab.state.clone())
        .unwrap_err()
        .to_string();
    assert!(e.contains(&format!("journal_dev={n}")), "{e}");
    assert!(e.contains(&victim.display().to_string()), "{e}");
    assert!(e.contains("named inside the mkfs or mount options"), "{e}");
    assert_eq!(first_mib(&victim), before);
}

#[test]
fn a_device_number_that_names_no_device_is_refused_too() {
    // 4095:1048575 (0xffffffff) exists on no machine; the number must still be refused before mkfs.
    let c = config("fs = \"ext4\"\ndevice = \"loop:64M\"\nmount = \"journal_dev=4294967295\"");
    let tmp = tempfile::tempdir().unwrap();
    let state = StateFile::new(tmp.path().join("leftovers.json"));
    let e = ConfiguredSite::new(&c, tmp.path(), state)
        .unwrap_err()
        .to_string();
    assert!(e.contains("journal_dev=4294967295"), "{e}");
    assert!(e.contains("name the device by its /dev path"), "{e}");
}

#[test]
fn a_read_only_device_is_refused_before_mkfs_saying_so() {
    if !usable() {
        return;
    }
    let mut lab = Lab::new();
    let dev = lab.attach_read_only();
    let before = first_mib(&dev);
    let c = config(&format!(
        "fs = \"ext4\"\ndevice = \"{}\"\ndestroy = true",
        dev.display()
    ));
    let e = ConfiguredSite::new(&c, &lab.scratch(), lab.state.clone())
        .unwrap_err()
        .to_string();
    assert!(e.contains("read-only"), "{e}");
    assert!(!e.contains("mkfs options"), "{e}");
    assert_eq!(first_mib(&dev), before);
}

#[test]
fn an_ext4_offset_is_blamed_on_the_mkfs_option() {
    let e = parse(
        "[[config]]\nname = \"c\"\nfs = \"ext4\"\ndevice = \"loop:64M\"\nmkfs = \"-E offset=4096\"\n",
        "t.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("offset=4096"), "{e}");
    assert!(e.contains("mkfs"), "{e}");
    assert!(!e.contains("mount options"), "{e}");
}

#[test]
fn importing_a_write_job_without_its_write_object_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.sqlite");
    let file = tmp.path().join("w.json");
    let empty = r#"{"min":0,"max":0,"mean":0.0,"stddev":0.0,"N":0}"#;
    fs::write(
        &file,
        format!(
            r#"{{"fio version":"fio-3.33","timestamp_ms":1000,"global options":{{}},"jobs":[{{"jobname":"wr","groupid":0,"error":0,"elapsed":1,"job options":{{"rw":"write","bs":"4k"}},"read":{{"io_bytes":0,"total_ios":0,"runtime":0,"slat_ns":{empty},"clat_ns":{empty},"lat_ns":{empty}}},"job_runtime":1000,"usr_cpu":1.0,"sys_cpu":1.0}}]}}"#
        ),
    )
    .unwrap();
    let out = common::fsdelta(&db)
        .args(["import", "fio-json", "--label", "x"])
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("'wr'"), "{text}");
    assert!(text.contains("no `write` object"), "{text}");
    // Refused before the store was opened: nothing was stored.
    assert!(!db.exists());
}

/// Why `-E offset=4096` was blamed on empty mount options: the kernel answers EINVAL when it
/// finds no filesystem at the start of the device, and the mount error read every EINVAL as
/// refused options. Without options, the error now says the filesystem was not found.
#[test]
fn a_device_without_a_filesystem_is_not_blamed_on_empty_mount_options() {
    if !usable() {
        return;
    }
    let mut lab = Lab::new();
    let dev = lab.attach();
    let at = lab.dir.path().join("mnt");
    fs::create_dir(&at).unwrap();
    let e = fsdelta::site::mount::mount(&dev.display().to_string(), &at, "ext4", "")
        .unwrap_err()
        .to_string();
    assert!(e.contains("found no ext4 filesystem"), "{e}");
    assert!(!e.contains("refused the options ''"), "{e}");
}
