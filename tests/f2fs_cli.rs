//! f2fs configurations (issue 16 item 3) end to end: on a host kernel without f2fs an f2fs loop
//! configuration is refused before anything is created, with an error naming the module, its
//! kernel option and the guest fix (where the host has f2fs, the same configuration runs there
//! instead); and in a QEMU guest of a Debian 6.1 kernel (f2fs as a module, compression built in)
//! the host's mkfs.f2fs formats the guest's disk with compression, the guest mounts it with
//! `compress_algorithm=lz4,compress_extension=*` and a tiny fs_mark runs on it, stored with fs
//! f2fs and the mkfs facts, and with what it left on disk (issue 39): `compress_ratio` of the
//! files it kept, f2fs's sysfs counters.
//!
//! Needs root, loop devices and mkfs.f2fs (Debian f2fs-tools); the guest test also needs
//! qemu-system-x86, busybox-static and the linux-image-6.1.0-47 .deb (see .ci/run). Each skips
//! saying why without them, unless FSDELTA_REQUIRE_ALL=1.

mod common;

use common::{is_root, require};
use std::path::Path;

fn host_has_f2fs() -> bool {
    let listed = || {
        std::fs::read_to_string("/proc/filesystems")
            .unwrap_or_default()
            .lines()
            .any(|l| l.split_whitespace().last() == Some("f2fs"))
    };
    if listed() {
        return true;
    }
    let _ = std::process::Command::new("modprobe")
        .arg("f2fs")
        .stderr(std::process::Stdio::null())
        .status();
    listed()
}

fn has_mkfs_f2fs() -> bool {
    fsdelta::site::mkfs::Mkfs::find(fsdelta::plan::config::FsKind::F2fs).is_ok()
}

use common::Setup;

impl Setup {
    fn new(configs: &str, suite: &str) -> Setup {
        let dir = tempfile::Builder::new()
            .prefix("fsdelta-f2fs-")
            .tempdir_in("/var/tmp")
            .unwrap();
        Setup::in_dir(dir, "c.toml", configs, "s.toml", suite)
    }
    fn run(&self) -> std::process::Output {
        self.cmd()
            .args(["run", "-n", "1", "--config"])
            .arg(self.p("c.toml"))
            .arg("--suite")
            .arg(self.p("s.toml"))
            .output()
            .unwrap()
    }
    fn samples(&self) -> Vec<serde_json::Value> {
        let doc = common::export_latest_with(self.cmd(), &["--format", "json"]);
        doc["runs"][0]["samples"].as_array().unwrap().clone()
    }
    /// No mount, no loop device and no file of ours under the scratch location, and no state
    /// entry.
    fn assert_clean(&self) {
        self.assert_scratch_empty();
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        assert!(
            !mounts.contains(&self.dir.path().display().to_string()),
            "{mounts}"
        );
        let loops: Vec<String> = std::fs::read_dir("/sys/block")
            .unwrap()
            .flatten()
            .filter_map(|e| {
                let n: u32 = e.file_name().to_str()?.strip_prefix("loop")?.parse().ok()?;
                let b = fsdelta::site::loopdev::backing_file(n)?;
                b.starts_with(self.dir.path())
                    .then(|| b.display().to_string())
            })
            .collect();
        assert!(loops.is_empty(), "loop devices left: {loops:?}");
        self.assert_state_empty();
    }
}

const FILES: &str =
    "[[test]]\nname = \"files\"\nworkload = \"fsmark\"\nargs = \"-s 4096 -n 200 -t 1 -S 1\"\n";

/// fs_mark keeping 100 files of 64 KiB of zeros (16 clusters of 4 blocks each), fsynced.
const KEPT_FILES: &str =
    "[[test]]\nname = \"files\"\nworkload = \"fsmark\"\nargs = \"-s 65536 -n 100 -t 1 -S 1 -k\"\n";

#[test]
fn an_f2fs_loop_config_on_a_host_kernel_without_f2fs_is_refused_before_anything_is_made() {
    if !require(
        is_root() && Path::new("/dev/loop-control").exists() && has_mkfs_f2fs(),
        "root, loop devices and mkfs.f2fs (apt-get install f2fs-tools)",
    ) {
        return;
    }
    let s = Setup::new(
        "[[config]]\nname = \"f2fs-lz4\"\nfs = \"f2fs\"\ndevice = \"loop:512M\"\n\
         mkfs = \"-O extra_attr,compression\"\nmount = \"compress_algorithm=lz4\"\n",
        FILES,
    );
    let out = s.run();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if host_has_f2fs() {
        // Where the host kernel has f2fs, the same configuration runs here.
        eprintln!("this host's kernel has f2fs: checking that the run works instead");
        assert!(out.status.success(), "{stderr}");
        let samples = s.samples();
        assert_eq!(samples.len(), 1);
        assert_eq!(samples[0]["status"], "ok", "{}", samples[0]);
        assert_eq!(samples[0]["facts"]["fs_type"], "f2fs");
        let mkfs = samples[0]["facts"]["extra"]["mkfs_command"]
            .as_str()
            .unwrap();
        assert!(
            mkfs.contains("mkfs.f2fs -f -O extra_attr,compression /dev/loop"),
            "{mkfs}"
        );
        s.assert_clean();
        return;
    }
    assert!(!out.status.success(), "{stderr}");
    for part in [
        "config 'f2fs-lz4'",
        "the running kernel (",
        "has no f2fs",
        "`modprobe f2fs`",
        "the f2fs module",
        "CONFIG_F2FS_FS",
        "run this configuration in a guest kernel",
        "kernel = \"",
    ] {
        assert!(stderr.contains(part), "{part}: {stderr}");
    }
    // Refused before anything was made: no scratch directory at all, no run in the store.
    assert!(!s.p("scratch").exists(), "the scratch location was created");
    s.assert_clean();
    let list = s.cmd().arg("list").output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(
        !list.contains("complete") && !list.contains("running") && !list.contains("failed"),
        "a run was recorded: {list}"
    );
}

#[test]
fn f2fs_with_lz4_compression_runs_in_a_debian_guest_and_records_its_mkfs() {
    if !(require(is_root(), "root")
        && require(has_mkfs_f2fs(), "mkfs.f2fs (apt-get install f2fs-tools)")
        && common::require_qemu()
        && require(
            common::vm_kernel("A").is_some(),
            "the linux-image-6.1.0-47 .deb in /var/cache/fsdelta-ci/kernels (see .ci/run)",
        ))
    {
        return;
    }
    let kernel = common::vm_kernel("A").unwrap();
    let s = Setup::new(
        &format!(
            "[[config]]\nname = \"f2fs-lz4\"\nfs = \"f2fs\"\ndevice = \"loop:512M\"\n\
             mkfs = \"-O extra_attr,compression\"\n\
             mount = \"compress_algorithm=lz4,compress_extension=*\"\n\
             kernel = \"{}\"\nmemory = \"1G\"\n",
            kernel.display()
        ),
        KEPT_FILES,
    );
    let t0 = std::time::Instant::now();
    let out = s.run();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    eprintln!(
        "f2fs guest run (boot + fs_mark 100 files of 64 KiB, n = 1): {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    assert!(out.status.success(), "{stderr}");
    let samples = s.samples();
    assert_eq!(samples.len(), 1);
    let smp = &samples[0];
    assert_eq!(smp["status"], "ok", "{smp}");
    let facts = &smp["facts"];
    assert_eq!(facts["fs_type"], "f2fs", "{facts}");
    let extra = &facts["extra"];
    assert_eq!(extra["vm_kernel"], "6.1.0-47-amd64", "{facts}");
    // The host formatted the guest's disk image with its own mkfs.f2fs: the facts keep that
    // command line (program, options, image) and the program's version.
    let mkfs = facts["mkfs_options"].as_str().unwrap();
    assert!(
        mkfs.contains("mkfs.f2fs -f -O extra_attr,compression ")
            && mkfs.ends_with(".img")
            && mkfs.contains(&s.p("scratch").display().to_string()),
        "{mkfs}"
    );
    assert!(
        extra["mkfs_version"]
            .as_str()
            .unwrap()
            .starts_with("mkfs.f2fs "),
        "{facts}"
    );
    assert_eq!(facts["device"], "/dev/vda", "{facts}");
    // The options in force, as the guest's kernel reports them.
    let mount = facts["mount_options"].as_str().unwrap();
    assert!(mount.contains("compress_algorithm=lz4"), "{mount}");
    let files = smp["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "files_per_sec")
        .unwrap_or_else(|| panic!("no files_per_sec: {smp}"));
    assert!(files["value"].as_f64().unwrap() > 0.0, "{files}");
    eprintln!("f2fs in the guest: {} files/s", files["value"]);
    // What the sample left on disk (issue 39), in the same boot: f2fs compressed the kept
    // files (zeros: every 4-block cluster into one block), its counters moved.
    let metric = |n: &str| -> Option<f64> {
        smp["metrics"].as_array()?.iter().find(|m| m["name"] == n)?["value"].as_f64()
    };
    let absent = extra["ondisk_absent"].as_str().unwrap_or("");
    for (n, v) in smp["metrics"].as_array().unwrap().iter().filter_map(|m| {
        let n = m["name"].as_str()?;
        ["f2fs_", "compress_", "extents_", "fs_used_", "space_"]
            .iter()
            .any(|p| n.starts_with(p))
            .then(|| (n, m["value"].clone()))
    }) {
        eprintln!("  {n} = {v}");
    }
    eprintln!("  ondisk_absent: {absent}");
    let ratio = metric("compress_ratio")
        .unwrap_or_else(|| panic!("no compress_ratio; absent: {absent}; {smp}"));
    assert!(ratio > 2.0, "compress_ratio {ratio}: {smp}");
    assert_eq!(
        metric("compress_logical_bytes"),
        Some(100.0 * 65536.0),
        "{smp}"
    );
    for n in [
        "f2fs_lifetime_write_kbytes",
        "f2fs_compr_written_blocks",
        "f2fs_compr_saved_blocks",
        "f2fs_compr_new_inodes",
        "f2fs_free_segments",
        "f2fs_dirty_segments",
    ] {
        assert!(metric(n).is_some(), "{n} missing; absent: {absent}; {smp}");
    }
    // The counter of blocks compression saved agrees with the files' own counts (each
    // file's saved blocks, summed, in bytes).
    let saved = metric("f2fs_compr_saved_blocks").unwrap();
    let by_files =
        metric("compress_logical_bytes").unwrap() - metric("compress_disk_bytes").unwrap();
    assert!(saved > 0.0, "{smp}");
    assert_eq!(saved * 4096.0, by_files, "{smp}");
    assert!(metric("f2fs_lifetime_write_kbytes").unwrap() > 0.0, "{smp}");
    assert!(metric("extents_per_file_max").is_some(), "{absent}");
    // No qemu of this run is left, nor anything under the scratch location.
    s.assert_clean();
}
