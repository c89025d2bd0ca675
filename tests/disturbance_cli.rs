//! Disturbances named (issue 38 item 2), end to end: a run of a loop-image ext4 target while a
//! background writer (a bounded `dd` loop, O_DIRECT, on the filesystem that holds the image)
//! writes to the same disk. Its samples carry the `disturbance` fact naming the writer, the run's
//! end table marks them, and `compare` against a run without the writer warns, naming it.
//!
//! On this shared machine other processes (other builds) may disturb the quiet run too; the test
//! asserts only what the writer causes: the busy run's samples are disturbed by it, by name.
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
/// at most 200 times (13 GiB, minutes on this disk), killed when the test ends.
struct Writer(Child);

impl Writer {
    fn start(dir: &Path) -> Writer {
        let sh = dir.join("bgwriter");
        std::os::unix::fs::symlink("/bin/sh", &sh).unwrap();
        let file = dir.join("bgwriter.data");
        let child = Command::new(&sh)
            .arg("-c")
            .arg(format!(
                "i=0; while [ $i -lt 200 ]; do i=$((i+1)); \
                 dd if=/dev/zero of={} bs=1M count=64 oflag=direct status=none || exit 1; done",
                file.display()
            ))
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
    assert!(warning.contains("other processes' I/O"), "{text}");
    assert!(pid_free(warning), "{text}");
}
