//! Stress of the per-sample filesystem cycle through the real binary (issue 13 item 10, "the
//! intermittent EBUSY"): `fsdelta run` with 40 fresh btrfs samples in a row on one reused loop
//! device must pass every time (mkfs, mount, workload, timed umount and mount, again), and a
//! process that keeps the mount busy fails only its own sample, named in the error, instead of a
//! lazily detached filesystem holding the loop device and failing every following mkfs with
//! EBUSY.
//!
//! Needs root, loop devices, btrfs in the kernel and mkfs.btrfs: skipped with the reason
//! otherwise, unless FSDELTA_REQUIRE_ALL=1.

mod common;

use common::{Env, is_root, require};
use std::fs;
use std::path::Path;

fn can_run() -> bool {
    require(is_root(), "root (mkfs, mount, loop devices)")
        && require(Path::new("/dev/loop-control").exists(), "loop devices")
        && require(
            fs::read_to_string("/proc/filesystems")
                .unwrap_or_default()
                .split_whitespace()
                .any(|f| f == "btrfs"),
            "btrfs in the kernel (modprobe btrfs)",
        )
        && require(
            ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
                .iter()
                .any(|d| Path::new(d).join("mkfs.btrfs").exists()),
            "mkfs.btrfs (Debian package btrfs-progs)",
        )
}

/// A tiny workload: 50 files of 4 KiB, each fsynced, so every umount has something to write.
const SUITE: &str = r#"
name = "stress"
[[test]]
name = "tiny"
workload = "fsmark"
args = "-s 4096 -n 50 -t 1 -S 1"
"#;

fn config(env: &Env, extra: &str) -> std::path::PathBuf {
    env.write(
        "config.toml",
        &format!(
            "scratch = \"{}\"\n\n[[config]]\nname = \"fresh-btrfs\"\nfs = \"btrfs\"\ndevice = \"loop:256M\"\nfresh = \"sample\"\n{extra}\n",
            env.path("scratch").display()
        ),
    )
}

/// Mounts and loop devices under the test's directory.
fn leftovers(env: &Env) -> Vec<String> {
    common::mounts_and_loops_under(&env.path(""))
}

fn samples(env: &Env) -> Vec<serde_json::Value> {
    let doc = common::export_latest(env.cmd());
    doc["runs"][0]["samples"].as_array().unwrap().clone()
}

/// `run -n <n> --quiet --no-drop-caches --label <label> --suite <suite> --config <cfg>`.
fn run(env: &Env, n: &str, label: &str, suite: &Path, cfg: &Path) -> std::process::Output {
    env.cmd()
        .args([
            "run",
            "-n",
            n,
            "--quiet",
            "--no-drop-caches",
            "--label",
            label,
        ])
        .arg("--suite")
        .arg(suite)
        .arg("--config")
        .arg(cfg)
        .output()
        .unwrap()
}

fn has_metric(sample: &serde_json::Value, name: &str) -> bool {
    sample["metrics"]
        .as_array()
        .is_some_and(|m| m.iter().any(|x| x["name"] == name))
}

#[test]
fn forty_fresh_btrfs_samples_in_a_row_on_a_reused_loop_device_all_pass() {
    if !can_run() {
        return;
    }
    let env = Env::new();
    let suite = env.write("suite.toml", SUITE);
    let cfg = config(&env, "");
    let out = run(&env, "40", "stress", &suite, &cfg);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("busy"), "{stderr}");
    assert_eq!(leftovers(&env), Vec::<String>::new());
    let samples = samples(&env);
    assert_eq!(samples.len(), 40);
    let mut devices: Vec<&str> = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        assert_eq!(s["status"], "ok", "sample {i}: {}", s["error"]);
        assert!(has_metric(s, "umount_s") && has_metric(s, "mount_s"), "{i}");
        let dev = s["facts"]["device"].as_str().unwrap_or_default();
        if !devices.contains(&dev) {
            devices.push(dev);
        }
    }
    assert_eq!(devices.len(), 1, "one loop device reused: {devices:?}");
    assert!(devices[0].starts_with("/dev/loop"), "{devices:?}");
}

/// A process left behind by a hook, with its working directory in the mount, keeps the
/// filesystem busy for 3 s: the sample's unmount (retried for 2 s) fails naming it, the mount is
/// kept (not detached lazily), the next sample's unmount succeeds once it has gone, and every
/// following sample gets a fresh filesystem on the same loop device.
#[test]
fn a_holder_fails_only_its_own_sample_and_is_named() {
    if !can_run() {
        return;
    }
    let env = Env::new();
    let suite = env.write("suite.toml", SUITE);
    let cfg = config(
        &env,
        "after = 'if [ \"$FSDELTA_SAMPLE\" = 1 ]; then (exec sleep 3 &); fi'",
    );
    // The holder's 3 s must fall between sample 1's unmount giving up (after 2 s) and sample 2's
    // retries ending: a machine loaded enough to delay the hook or the unmount by a second moves
    // it out of that window, and then no sample or the second fails. That is timing, not a bug,
    // and does not repeat in each of three attempts (common::attempts); what is checked when
    // the window is hit must hold every time.
    common::attempts::passes_in_one_of(3, "the held unmount", |i| {
        let out = run(&env, "4", &format!("held{i}"), &suite, &cfg);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(leftovers(&env), Vec::<String>::new());
        let samples = samples(&env);
        assert_eq!(samples.len(), 4, "{samples:?}");
        if samples[0]["status"] == "ok" || samples[1]["status"] != "ok" {
            return Err(format!(
                "the holder's 3 s missed the window (sample 1 {}, sample 2 {}): {stderr}",
                samples[0]["status"], samples[1]["status"]
            ));
        }
        assert_ne!(out.status.code(), Some(0), "{stderr}");
        let error = samples[0]["error"].as_str().unwrap_or_default();
        assert_eq!(samples[0]["status"], "failed", "{}", samples[0]);
        assert!(
            error.contains("umount") && error.contains("(sleep): cwd"),
            "the holder is named: {error}"
        );
        for (i, s) in samples.iter().enumerate().skip(1) {
            assert_eq!(s["status"], "ok", "sample {}: {}", i + 1, s["error"]);
        }
        Ok(())
    });
}
