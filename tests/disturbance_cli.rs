//! Disturbances named (issue 38 item 2), end to end: a run of a loop-image ext4 target while a
//! background writer (a bounded `dd` loop, O_DIRECT, on the filesystem that holds the image)
//! writes to the same disk. Its samples carry the `disturbance` fact naming the writer, the run's
//! end table marks them, and `compare` against a run without the writer warns, naming it. And
//! the same writer on another device (a loop image of its own, in /dev/shm) is not the target's
//! disturbance: others' I/O is counted on the target's devices.
//!
//! On this shared machine other processes (other builds) may disturb the quiet run too; the
//! tests assert only what the writer causes: the busy run's samples are disturbed by it, by
//! name, and the writer elsewhere is seen (machine-wide) but never named.
//!
//! Needs root and loop devices; skips with the reason otherwise, unless FSDELTA_REQUIRE_ALL=1.

mod common;

use common::{Env, is_root, require};
use std::path::Path;
use std::process::{Child, Command};

/// fs_mark with an fsync per file: a second or more of I/O on the loop image.
const SUITE: &str = r#"
name = "dist"
[[test]]
name = "syncfiles"
workload = "fsmark"
args = "-s 16384 -n 400 -t 1 -S 1"
"#;

/// The writer: `sh` started under the name `bgwriter` (a symlink, so that its command name,
/// which /proc shows and fsdelta reports, is that), rewriting one 64 MiB file with O_DIRECT dd
/// for as long as the test's process lives (killed when the test ends; it stops by itself if
/// the test is killed first). Not a count of writes: on a fast disk a fixed count ended before a
/// loaded machine's last sample did, and that sample saw no writer.
struct Writer(Child);

impl Writer {
    fn start(dir: &Path) -> Writer {
        Writer::to(dir, &dir.join("bgwriter.data"), "bgwriter")
    }

    /// The writer, writing `file` (a file, or a block device), started under `name`.
    fn to(dir: &Path, file: &Path, name: &str) -> Writer {
        let sh = dir.join(name);
        std::os::unix::fs::symlink("/bin/sh", &sh).unwrap();
        let child = Command::new(&sh)
            .arg("-c")
            .arg(format!(
                "while [ -d /proc/{} ]; do \
                 dd if=/dev/zero of={} bs=1M count=64 oflag=direct status=none || exit 1; done",
                std::process::id(),
                file.display()
            ))
            // Its output nowhere: fsdelta names the processes with a file open on the target's
            // devices, and the test's own output may be a file on that disk.
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        Writer(child)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // The dd the loop may be running (its child, found by parent pid before the loop is
        // killed, which would hand it to init), then the loop.
        let pid = self.0.id();
        let mut kids = Vec::new();
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for e in dir.flatten() {
                let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                    continue;
                };
                let ppid = rest.split_whitespace().nth(1);
                if ppid == Some(&pid.to_string()) && stat.contains("(dd)") {
                    kids.push(e.file_name().to_string_lossy().parse::<i32>().unwrap_or(0));
                }
            }
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
        for k in kids.into_iter().filter(|k| *k > 0) {
            // SAFETY: kill has no memory effects; the pid is our writer's dd.
            unsafe { libc::kill(k, libc::SIGKILL) };
        }
    }
}

#[test]
fn a_background_writer_on_the_same_disk_is_named_in_the_run_and_in_compare() {
    if !(require(is_root(), "root (mkfs, mount, loop devices)")
        && require(Path::new("/dev/loop-control").exists(), "loop devices"))
    {
        return;
    }
    let env = Env::new();
    let suite = env.write("dist.toml", SUITE);
    let cfg = env.config(
        "[[config]]\nname = \"ext4\"\nfs = \"ext4\"\ndevice = \"loop:256M\"\nfresh = \"run\"\n",
    );
    let run = |label: &str| {
        let out = env
            .cmd()
            .args(["run", "-n", "2", "--label", label, "--suite"])
            .arg(&suite)
            .arg("--config")
            .arg(&cfg)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Lines wrapped at 80 columns, joined again.
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    run("quiet");
    let writer = Writer::start(&env.path(""));
    // Let it get going (its first dd written) before the run starts.
    let data = env.path("bgwriter.data");
    for _ in 0..600 {
        if std::fs::metadata(&data).is_ok_and(|m| m.len() >= 64 << 20) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let end_table = run("busy");
    drop(writer);
    let pid_free = |t: &str| t.contains("bgwriter[") || t.contains("dd[");
    // The end table marks the test and names the writer for each disturbed sample.
    assert!(
        end_table.contains("! measured under disturbance (2 samples"),
        "{end_table}"
    );
    assert!(end_table.contains("! syncfiles ext4"), "{end_table}");
    assert!(pid_free(&end_table), "{end_table}");
    let out = env
        .cmd()
        .args(["compare", "label:quiet", "label:busy"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_ne!(out.status.code(), Some(2), "{text}");
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let warning = text
        .split("WARNING ")
        .find(|w| w.contains("measured under disturbance"))
        .unwrap_or_else(|| panic!("no disturbance warning: {text}"));
    assert!(
        warning.contains("current side: 2 of 2 samples measured under disturbance"),
        "{text}"
    );
    // Counted on the target's devices (the loop image and the disk under it).
    assert!(warning.contains("other processes' I/O on loop"), "{text}");
    assert!(pid_free(warning), "{text}");
}

/// A loop device of the test's own over an image in /dev/shm (memory: another device than the
/// target's loop image and the disk under it), detached when dropped.
struct ShmLoop {
    dev: String,
    _dir: tempfile::TempDir,
}

impl ShmLoop {
    fn attach() -> Option<ShmLoop> {
        let dir = tempfile::tempdir_in("/dev/shm").ok()?;
        let image = dir.path().join("elsewhere.img");
        std::fs::File::create(&image)
            .and_then(|f| f.set_len(96 << 20))
            .ok()?;
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&image)
            .output()
            .ok()?;
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && dev.starts_with("/dev/loop")).then_some(ShmLoop { dev, _dir: dir })
    }
}

impl Drop for ShmLoop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

#[test]
fn a_writer_on_another_device_is_seen_but_not_the_targets_disturbance() {
    if !(require(is_root(), "root (mkfs, mount, loop devices)")
        && require(Path::new("/dev/loop-control").exists(), "loop devices")
        && require(Path::new("/dev/shm").is_dir(), "/dev/shm"))
    {
        return;
    }
    let Some(elsewhere) = ShmLoop::attach() else {
        require(false, "a loop device over an image in /dev/shm (losetup)");
        return;
    };
    let env = Env::new();
    let suite = env.write("dist.toml", SUITE);
    let cfg = env.config(
        "[[config]]\nname = \"ext4\"\nfs = \"ext4\"\ndevice = \"loop:256M\"\nfresh = \"run\"\n",
    );
    // A name of its own: another test or bench may run a `bgwriter` on this disk meanwhile.
    let writer = Writer::to(&env.path(""), Path::new(&elsewhere.dev), "bgw-elsewhere");
    let out = env
        .cmd()
        .args(["run", "-n", "2", "--label", "elsewhere", "--suite"])
        .arg(&suite)
        .arg("--config")
        .arg(&cfg)
        .output()
        .unwrap();
    drop(writer);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Whatever else disturbed the samples (other work on this disk), never the writer.
    assert!(!text.contains("bgw-elsewhere["), "{text}");
    let csv = env
        .cmd()
        .args(["export", "label:elsewhere", "--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&csv.stdout).to_string();
    // Rows `...,syncfiles,REP,...,METRIC,VALUE,...` (mount options are quoted, with commas).
    let values = |metric: &str| -> Vec<f64> {
        csv.lines()
            .filter(|l| l.contains(",syncfiles,"))
            .filter_map(|l| l.split_once(&format!(",{metric},")))
            .filter_map(|(_, rest)| rest.split(',').next()?.parse().ok())
            .collect()
    };
    // Per-process accounting saw the writer in every sample (machine-wide: others' I/O
    // anywhere); the attribution to the target's devices is recorded beside it.
    let anywhere = values("others_io_bytes");
    assert_eq!(anywhere.len(), 2, "{csv}");
    assert!(
        anywhere.iter().all(|b| *b >= (64 << 20) as f64),
        "{anywhere:?}"
    );
    assert_eq!(values("others_device_write_bytes").len(), 2, "{csv}");
    // The samples' facts say how fsdelta's own I/O was told apart.
    let json = env
        .cmd()
        .args(["export", "label:elsewhere", "--format", "json"])
        .output()
        .unwrap();
    let json = String::from_utf8_lossy(&json.stdout);
    assert!(
        json.contains("\"disturbance_attribution\": \"per-process accounting (")
            || json.contains("\"disturbance_attribution\": \"cgroup io.stat"),
        "{json}"
    );
}
