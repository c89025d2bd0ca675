//! fsdelta's mounts live in a private mount namespace of its own: a process elsewhere on the
//! machine that calls `unshare -m` while a run is mounted copies nothing of fsdelta's, so it pins
//! no mount and no loop device, and every later sample of the run still succeeds.
//!
//! The workload itself starts the outsider, so that it is sure to unshare while the sample's
//! filesystem is mounted: it enters the test's own mount namespace (the machine's, as far as the
//! run is concerned) with `nsenter` in a session of its own (the sample ends by killing its
//! process group), runs `unshare -m sleep` there in the background, and waits
//! until the outsider has become `sleep` (unshare is done) before it goes on.
//!
//! Needs root, loop devices, mkfs.ext4, nsenter and unshare (util-linux). Skips say why, unless
//! FSDELTA_REQUIRE_ALL=1.

mod common;

use common::{Env, is_root, require};
use std::path::Path;

fn have(tool: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn can_run() -> bool {
    require(is_root(), "root (mkfs, mount, loop devices)")
        && require(Path::new("/dev/loop-control").exists(), "loop devices")
        && require(have("mkfs.ext4"), "mkfs.ext4 (Debian package e2fsprogs)")
        && require(
            have("nsenter") && have("unshare"),
            "nsenter and unshare (Debian package util-linux)",
        )
}

/// The outsider `sleep`, killed when the test ends however it ends.
struct Outsider {
    pidfile: std::path::PathBuf,
}

impl Outsider {
    fn pid(&self) -> Option<i32> {
        std::fs::read_to_string(&self.pidfile)
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}

impl Drop for Outsider {
    fn drop(&mut self) {
        if let Some(pid) = self.pid().and_then(rustix::process::Pid::from_raw) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

#[test]
fn another_process_unsharing_its_mount_namespace_does_not_break_later_samples() {
    if !can_run() {
        return;
    }
    let env = Env::new();
    let outsider = Outsider {
        pidfile: env.path("outsider.pid"),
    };
    let host = std::process::id();
    // The first sample starts the outsider in the test's mount namespace and waits until it has
    // unshared (it is `sleep` from then on); every sample then writes a file and syncs.
    let suite = env.write(
        "suite.toml",
        &format!(
            r#"
name = "pin"
[[test]]
name = "pin"
workload = "command"
command = """
if [ ! -e {pidfile} ]; then
  setsid nsenter -t {host} -m -- unshare -m sleep 600 </dev/null >/dev/null 2>&1 &
  echo $! > {pidfile}
  until [ "$(cat /proc/$(cat {pidfile})/comm)" = sleep ]; do sleep 0.01; done
fi
cat /proc/$(cat {pidfile})/mounts >> {seen}
dd if=/dev/zero of=f bs=64k count=16 2>/dev/null && sync
"""
"#,
            pidfile = outsider.pidfile.display(),
            seen = env.path("seen").display(),
        ),
    );
    let cfg = env.config(
        r#"
[[config]]
name = "ext4"
fs = "ext4"
device = "loop:64M"
"#,
    );
    let out = env
        .cmd()
        .args(["run", "-n", "4", "--quiet", "--suite"])
        .arg(&suite)
        .arg("--config")
        .arg(&cfg)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let pid = outsider
        .pid()
        .expect("the first sample started the outsider");
    // The outsider is alive and in a namespace of its own, and at no sample did it hold one of
    // the run's mounts (each sample appended the outsider's mount table to `seen`).
    let ns = |p: u32| std::fs::read_link(format!("/proc/{p}/ns/mnt")).unwrap();
    assert_ne!(ns(pid as u32), ns(host), "the outsider did not unshare");
    let scratch = env.path("scratch");
    let theirs = std::fs::read_to_string(env.path("seen")).unwrap();
    assert!(
        !theirs.lines().any(|l| l
            .split(' ')
            .nth(1)
            .is_some_and(|t| Path::new(t).starts_with(&scratch))),
        "the outsider copied a mount of the run:\n{theirs}"
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc = common::export_latest(env.cmd());
    let samples = doc["runs"][0]["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 4, "{doc}");
    for s in samples {
        assert_eq!(s["status"], "ok", "{s}");
    }
    drop(outsider);
    assert_eq!(
        common::mounts_and_loops_under(&scratch),
        Vec::<String>::new()
    );
}
