//! End-to-end tests of `fsdelta run --config`: a matrix of real filesystems on loop images
//! (btrfs with two compression settings, ext4, xfs), every sample recording the mount options
//! actually in force; a filesystem that fills up; SIGINT and kill -9 in the middle of a run
//! followed by `fsdelta cleanup`, with no loop device or mount left behind.
//!
//! Needs root, loop devices, mkfs.btrfs and mkfs.xfs: skipped with the reason otherwise, unless
//! FSDELTA_REQUIRE_ALL=1.

mod common;

use common::{fsdelta, is_root, require};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn have(program: &str) -> bool {
    ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        .iter()
        .any(|d| Path::new(d).join(program).exists())
}

fn can_run_matrix() -> bool {
    require(is_root(), "root (mkfs, mount, loop devices)")
        && require(Path::new("/dev/loop-control").exists(), "loop devices")
        && require(
            have("mkfs.btrfs"),
            "mkfs.btrfs (Debian package btrfs-progs)",
        )
        && require(have("mkfs.xfs"), "mkfs.xfs (Debian package xfsprogs)")
        && require(have("mkfs.ext4"), "mkfs.ext4 (Debian package e2fsprogs)")
}

/// A scratch location, a state file and a database, all private to one test.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            dir: tempfile::tempdir_in("/var/tmp").unwrap(),
        }
    }
    fn scratch(&self) -> PathBuf {
        self.dir.path().join("scratch")
    }
    fn db(&self) -> PathBuf {
        self.dir.path().join("r.sqlite")
    }
    fn state(&self) -> PathBuf {
        self.dir.path().join("state.json")
    }
    fn config(&self, body: &str) -> PathBuf {
        let p = self.dir.path().join("config.toml");
        fs::write(
            &p,
            format!("scratch = \"{}\"\n\n{body}", self.scratch().display()),
        )
        .unwrap();
        p
    }
    fn cmd(&self) -> assert_cmd::Command {
        let mut c = fsdelta(&self.db());
        c.env("FSDELTA_STATE_FILE", self.state());
        c
    }
    fn spawn(&self, args: &[&str]) -> Child {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("fsdelta"))
            .env("FSDELTA_DB", self.db())
            .env("FSDELTA_STATE_FILE", self.state())
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
    /// Mounts and loop devices under the scratch location.
    fn leftovers(&self) -> Vec<String> {
        common::mounts_and_loops_under(&self.scratch())
    }
    fn export(&self) -> serde_json::Value {
        common::export_latest(self.cmd())
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        // Whatever a failed assertion left, undo it so the machine stays clean.
        let _ = std::process::Command::new(assert_cmd::cargo::cargo_bin("fsdelta"))
            .env("FSDELTA_STATE_FILE", self.state())
            .arg("cleanup")
            .output();
    }
}

const MATRIX: &str = r#"
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

[[config]]
name = "ext4"
fs = "ext4"
device = "loop:1G"
mount = "noatime"

[[config]]
name = "xfs"
fs = "xfs"
device = "loop:1G"
"#;

#[test]
fn a_matrix_records_the_mount_options_in_force_and_leaves_nothing() {
    if !can_run_matrix() {
        return;
    }
    let env = Env::new();
    let cfg = env.config(MATRIX);
    env.cmd()
        .args([
            "run",
            "--test",
            "smallfiles",
            "-n",
            "1",
            "--label",
            "matrix",
            "--quiet",
        ])
        .arg("--config")
        .arg(&cfg)
        .assert()
        .success();
    assert_eq!(env.leftovers(), Vec::<String>::new());
    let doc = env.export();
    let samples = doc["runs"][0]["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 4);
    let by = |name: &str| {
        samples
            .iter()
            .find(|s| s["config"] == name)
            .unwrap_or_else(|| panic!("no sample of {name}"))
    };
    for (name, fs_type, option) in [
        ("btrfs-lzo", "btrfs", "compress-force=lzo"),
        ("btrfs-zstd", "btrfs", "compress-force=zstd"),
        ("ext4", "ext4", "noatime"),
        ("xfs", "xfs", "rw"),
    ] {
        let s = by(name);
        assert_eq!(s["status"], "ok", "{name}: {}", s["error"]);
        assert_eq!(s["facts"]["fs_type"], fs_type, "{name}");
        let opts = s["facts"]["mount_options"].as_str().unwrap();
        assert!(opts.contains(option), "{name}: {opts}");
        assert!(
            s["facts"]["extra"]["mkfs_program"].as_str().is_some(),
            "{name}: {}",
            s["facts"]
        );
        let names: Vec<&str> = s["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        for m in [
            "files_per_sec",
            "dev_write_kbytes",
            "write_amplification",
            "umount_s",
            "mount_s",
        ] {
            assert!(names.contains(&m), "{name} lacks {m}: {names:?}");
        }
    }
    // Forced compression of zero-filled files writes less than ext4 does.
    let wa = |name: &str| {
        by(name)["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "dev_write_kbytes")
            .unwrap()["value"]
            .as_f64()
            .unwrap()
    };
    assert!(wa("btrfs-zstd") > 0.0 && wa("ext4") > 0.0);

    // Two configurations side by side.
    env.cmd()
        .args(["compare", "latest@btrfs-lzo", "latest@btrfs-zstd", "--all"])
        .assert()
        .stdout(predicates::str::contains("btrfs-lzo vs btrfs-zstd"));
}

#[test]
fn a_filesystem_that_fills_up_fails_that_sample_and_the_run_goes_on() {
    if !can_run_matrix() {
        return;
    }
    let env = Env::new();
    let cfg = env.config(
        r#"
[[config]]
name = "tiny"
fs = "tmpfs"
size = "3M"

[[config]]
name = "roomy"
fs = "ext4"
device = "loop:256M"
"#,
    );
    let out = env
        .cmd()
        .args(["run", "--test", "smallfiles", "-n", "1", "--quiet"])
        .arg("--config")
        .arg(&cfg)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.leftovers(), Vec::<String>::new());
    let doc = env.export();
    assert_eq!(doc["runs"][0]["status"], "failed");
    let samples = doc["runs"][0]["samples"].as_array().unwrap();
    let tiny = samples.iter().find(|s| s["config"] == "tiny").unwrap();
    assert_eq!(tiny["status"], "failed");
    assert!(
        tiny["error"]
            .as_str()
            .unwrap()
            .contains("filesystem is full"),
        "{tiny}"
    );
    let roomy = samples.iter().find(|s| s["config"] == "roomy").unwrap();
    assert_eq!(roomy["status"], "ok", "{roomy}");
}

/// Wait until the run has stored at least one sample.
fn wait_for_a_sample(env: &Env) {
    let start = Instant::now();
    loop {
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "no sample in 180 s"
        );
        std::thread::sleep(Duration::from_millis(300));
        let out = env.cmd().args(["list"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let stored = text.lines().skip(1).any(|l| {
            l.split_whitespace()
                .nth(6)
                .is_some_and(|n| n.parse::<u32>().is_ok_and(|n| n > 0))
        });
        if stored {
            return;
        }
    }
}

#[test]
fn sigint_in_a_matrix_run_unmounts_and_detaches_everything() {
    if !can_run_matrix() {
        return;
    }
    let env = Env::new();
    let cfg = env.config(MATRIX);
    let cfg = cfg.to_str().unwrap().to_string();
    let mut child = env.spawn(&[
        "run", "--config", &cfg, "--test", "bigdir", "-n", "50", "--label", "int",
    ]);
    wait_for_a_sample(&env);
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_eq!(env.leftovers(), Vec::<String>::new());
    let doc = env.export();
    assert_eq!(doc["runs"][0]["status"], "aborted");
    assert!(!doc["runs"][0]["samples"].as_array().unwrap().is_empty());
}

/// A run killed with SIGKILL between samples: its mounts lived in its own mount namespace, which
/// dies with it (and the loop devices they held detach), so `cleanup` finds at most what the
/// kernel had not yet torn down; after it nothing of the run is mounted or attached, and a second
/// cleanup has nothing to do.
/// SIGKILL the run `child`, then `fsdelta cleanup` must succeed and leave no mount or loop
/// device under the scratch location (its output is the failure message).
fn kill_9_then_cleanup(env: &Env, mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
    let out = env.cmd().arg("cleanup").output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.leftovers(), Vec::<String>::new());
}

#[test]
fn kill_9_leftovers_are_undone_by_cleanup() {
    if !can_run_matrix() {
        return;
    }
    let env = Env::new();
    let cfg = env.config(MATRIX);
    let cfg = cfg.to_str().unwrap().to_string();
    let child = env.spawn(&["run", "--config", &cfg, "--test", "bigdir", "-n", "50"]);
    wait_for_a_sample(&env);
    kill_9_then_cleanup(&env, child);
    let again = env.cmd().arg("cleanup").output().unwrap();
    assert!(again.status.success());
}

/// A run killed with SIGKILL while a child of its own runs in its mount namespace (here the
/// `before` hook, which stands for mkfs, losetup or a workload's tool): the child dies with
/// fsdelta (it would otherwise keep the namespace, and the mount in it, alive for as long as it
/// ran), and `cleanup` waits for it to finish dying, so nothing is left. Before children died
/// with fsdelta, a kill during the mkfs of a matrix run's second configuration left the first
/// one's mount to an mkfs that outlived it, and cleanup failed.
#[test]
fn kill_9_while_a_child_runs_leaves_nothing_the_child_could_hold() {
    if !can_run_matrix() {
        return;
    }
    let env = Env::new();
    let pid_file = env.dir.path().join("hook.pid");
    let cfg = env.config(&format!(
        r#"
[[config]]
name = "ext4"
fs = "ext4"
device = "loop:64M"
before = "echo $$ > {}; exec sleep 600"
"#,
        pid_file.display()
    ));
    let cfg = cfg.to_str().unwrap().to_string();
    let child = env.spawn(&["run", "--config", &cfg, "--test", "bigdir", "-n", "50"]);
    // Hang guard only: the hook starts within seconds of the run.
    let start = Instant::now();
    let hook: u32 = loop {
        if let Some(pid) = fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            break pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "the hook never ran"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    kill_9_then_cleanup(&env, child);
    // Gone, or a zombie that init has not reaped yet (a container's init may never reap).
    let stat = fs::read_to_string(format!("/proc/{hook}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .unwrap_or("gone");
    assert!(
        matches!(state, "gone" | "Z" | "X"),
        "the hook (pid {hook}) outlived the fsdelta that ran it: {stat}"
    );
}

#[test]
fn two_configurations_with_one_name_are_a_config_error_with_the_line() {
    let env = Env::new();
    let cfg = env.config(
        r#"
[[config]]
name = "a"
fs = "tmpfs"

[[config]]
name = "a"
fs = "tmpfs"
"#,
    );
    env.cmd()
        .args(["run", "--quiet", "--config"])
        .arg(&cfg)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("config.toml:"))
        .stderr(predicates::str::contains("'a'"));
}

/// `--config-name a --config-name b` runs only those configurations of the file, and with
/// `--until-confident` repeats until b against a is resolved: an A/A of two identical ext4
/// configurations, whose command prints the same scripted values on each side (103, 97, 100,
/// ...), ends "unchanged" (judged each on its own, it stopped at 4 repetitions inconclusive).
#[test]
fn config_names_pick_configurations_and_an_a_a_runs_until_unchanged() {
    if !can_run_matrix() {
        return;
    }
    let env = Env::new();
    let cfg = env.config(
        r#"
[[config]]
name = "a"
fs = "ext4"
device = "loop:64M"

[[config]]
name = "b"
fs = "ext4"
device = "loop:64M"

[[config]]
name = "never"
fs = "xfs"
device = "loop:300M"
"#,
    );
    let counters = env.dir.path().join("counters");
    fs::create_dir(&counters).unwrap();
    let suite = env.dir.path().join("suite.toml");
    fs::write(
        &suite,
        format!(
            r#"
name = "aa"
[[test]]
name = "aa"
workload = "command"
command = """
case "$FSDELTA_TARGET" in */scratch/a.*) f={c}/a ;; *) f={c}/b ;; esac
n=$(cat $f 2>/dev/null || echo 0); echo $((n + 1)) > $f
set -- 103 97 100; shift $((n % 3)); echo "v $1"
"""
[[test.metric]]
name = "v"
regex = 'v (\d+)'
unit = "ops/s"
direction = "higher"
"#,
            c = counters.display()
        ),
    )
    .unwrap();
    let out = env
        .cmd()
        .args(["run", "-n", "2", "--until-confident", "--max-repeat", "12"])
        .args(["--config-name", "a", "--config-name", "b", "--suite"])
        .arg(&suite)
        .arg("--config")
        .arg(&cfg)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = env.export();
    let samples = doc["runs"][0]["samples"].as_array().unwrap();
    assert!(samples.iter().all(|s| s["config"] != "never"), "{doc}");
    let n = |c: &str| samples.iter().filter(|s| s["config"] == c).count();
    assert_eq!(n("a"), n("b"));
    assert!(n("a") > 4, "stopped after {} repetitions", n("a"));
    assert_eq!(env.leftovers(), Vec::<String>::new());
    // The closing comparison of b with a says unchanged.
    env.cmd()
        .args(["compare", "latest@a", "latest@b", "--test", "aa"])
        .assert()
        .success()
        .stdout(predicates::str::contains("unchanged"));
    // A name the file lacks is refused, naming the ones it has.
    env.cmd()
        .args(["run", "--config-name", "c", "--config"])
        .arg(&cfg)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("it has: a, b, never"));
}
