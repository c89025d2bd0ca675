//! The free-space fragmentation fsdelta reads with FS_IOC_GETFSMAP (`free_space_extents`,
//! issue 39 item 3) against the filesystems' own reports of the same thing, on loop images this
//! test makes, fills and punches holes in: xfs's `xfs_spaceman -c 'freesp -s'` ("total free
//! extents", exactly) and ext4's `/proc/fs/ext4/DEV/mb_groups` (the same free blocks; its
//! per-group fragments, less the runs that cross a group boundary, which GETFSMAP merges).
//!
//! Needs root, loop devices, mkfs.ext4, mkfs.xfs and xfs_spaceman; skips with the reason
//! otherwise, unless FSDELTA_REQUIRE_ALL=1 (CI), which turns a skip into a failure.

mod common;

use common::{is_root, require};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A loop image mounted at a directory of its own; unmounted and detached when dropped.
struct Mounted {
    dir: tempfile::TempDir,
    device: String,
}

impl Mounted {
    fn new(mkfs: &[&str], size_mib: u64) -> Mounted {
        let dir = tempfile::Builder::new()
            .prefix("fsdelta-fsmap-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let image = dir.path().join("image");
        std::fs::File::create(&image)
            .unwrap()
            .set_len(size_mib << 20)
            .unwrap();
        let ok = Command::new(mkfs[0])
            .args(&mkfs[1..])
            .arg(&image)
            .status()
            .unwrap();
        assert!(ok.success(), "{mkfs:?}");
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&image)
            .output()
            .unwrap();
        assert!(out.status.success(), "losetup");
        let device = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let m = Mounted { dir, device };
        let ok = Command::new("mount")
            .arg(&m.device)
            .arg(&mnt)
            .status()
            .unwrap();
        assert!(ok.success(), "mount {}", m.device);
        m
    }

    fn mnt(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }

    /// 64 files of 64 KiB .. 4 MiB, written and synced, then every other one removed and the
    /// filesystem mounted again: free space in many pieces, settled.
    fn fragment(&self) {
        for i in 0..64u64 {
            let len = (64 << 10) * (1 + (i * 7) % 64);
            std::fs::write(self.mnt().join(format!("f{i}")), vec![0x5au8; len as usize]).unwrap();
        }
        assert!(Command::new("sync").status().unwrap().success());
        for i in (0..64).step_by(2) {
            std::fs::remove_file(self.mnt().join(format!("f{i}"))).unwrap();
        }
        // Unmounted and mounted again: xfs frees a removed file's extents in the background
        // (inode inactivation), so before that the free space changes between two readings.
        let ok = Command::new("umount").arg(self.mnt()).status().unwrap();
        assert!(ok.success(), "umount {}", self.device);
        let ok = Command::new("mount")
            .arg(&self.device)
            .arg(self.mnt())
            .status()
            .unwrap();
        assert!(ok.success(), "mount {}", self.device);
    }

    fn fsdelta_extents(&self) -> u64 {
        let f = std::fs::File::open(self.mnt()).unwrap();
        fsdelta::probe::ondisk::fsmap_free(&f).unwrap().0
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.mnt()).status();
        let _ = Command::new("losetup").args(["-d", &self.device]).status();
    }
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn can(tools: &[&str]) -> bool {
    require(is_root(), "root (mkfs, mount, loop devices)")
        && require(Path::new("/dev/loop-control").exists(), "loop devices")
        && tools.iter().all(|t| require(have(t), t))
}

#[test]
fn xfs_free_extents_are_what_xfs_spaceman_counts() {
    if !can(&["mkfs.xfs", "xfs_spaceman"]) {
        return;
    }
    let m = Mounted::new(&["mkfs.xfs", "-q", "-f"], 512);
    m.fragment();
    let out = Command::new("xfs_spaceman")
        .args(["-c", "freesp -s"])
        .arg(m.mnt())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let theirs: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("total free extents "))
        .unwrap_or_else(|| panic!("no total in {text}"))
        .trim()
        .parse()
        .unwrap();
    let ours = m.fsdelta_extents();
    assert_eq!(ours, theirs, "{text}");
    assert!(ours > 4, "the holes show: {text}");
}

#[test]
fn ext4_free_space_is_what_mb_groups_holds_with_runs_across_groups_merged() {
    if !can(&["mkfs.ext4"]) {
        return;
    }
    let m = Mounted::new(&["mkfs.ext4", "-q", "-F", "-b", "4096"], 256);
    m.fragment();
    let name = Path::new(&m.device)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let text = std::fs::read_to_string(format!("/proc/fs/ext4/{name}/mb_groups")).unwrap();
    // "#3    : 7933  1     259   [ 1 0 ...": free blocks, fragments, first free after the colon.
    let cols: Vec<(u64, u64)> = text
        .lines()
        .filter(|l| !l.starts_with("#group"))
        .filter_map(|l| l.split_once(':'))
        .filter_map(|(_, rest)| {
            let mut w = rest.split_whitespace();
            Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .collect();
    assert!(cols.len() >= 2, "{text}");
    let free_blocks: u64 = cols.iter().map(|c| c.0).sum();
    let fragments: u64 = cols.iter().map(|c| c.1).sum();
    let groups_with_free = cols.iter().filter(|c| c.0 > 0).count() as u64;
    let f = std::fs::File::open(m.mnt()).unwrap();
    let (extents, bytes) = fsdelta::probe::ondisk::fsmap_free(&f).unwrap();
    // The same free blocks; a free run that crosses a group boundary is one extent to GETFSMAP
    // and one fragment in each group to mb_groups, so there are at most as many extents.
    assert_eq!(bytes, free_blocks * 4096, "{text}");
    assert!(
        extents <= fragments,
        "{extents} extents, {fragments} fragments: {text}"
    );
    assert!(
        extents + groups_with_free > fragments,
        "only runs across a boundary merge: {extents} extents, {fragments} fragments: {text}"
    );
    assert!(extents > 4, "the holes show: {text}");
}
