//! Kernel A/B with `fsdelta run`: two configurations with Debian kernels (6.1.0-47 and -50) and
//! one on the host in one run, a tiny fs_mark test and a tiny fio test on ext4, n = 2, order
//! rotated; the samples carry each guest's kernel release and the emulation label, and the two
//! kernels compare. Ctrl-C during a boot aborts the run; a kill -9 takes qemu down with fsdelta
//! and `fsdelta cleanup` removes what is left. Nothing may be left behind.
//!
//! Needs root, qemu-system-x86, busybox-static and the kernel packages (see .ci/run); skipped,
//! saying why, without them unless FSDELTA_REQUIRE_ALL=1.

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::vm_kernel as kernel;

fn ready() -> bool {
    common::require(common::is_root(), "root")
        && common::require_qemu()
        && common::require(
            kernel("A").is_some() && kernel("B").is_some(),
            "the linux-image-6.1.0-47/-50 .debs in /var/cache/fsdelta-ci/kernels (see .ci/run)",
        )
}

/// One test at a time boots: they look for qemu processes of the fsdelta they started.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

use common::VM_SUITE as SUITE;

use common::Setup;

impl Setup {
    fn new(configs: &str) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        Setup::in_dir(dir, "ab.toml", configs, "tiny.toml", SUITE)
    }
    fn run_args(&self) -> Vec<String> {
        vec![
            "run".into(),
            "--config".into(),
            self.p("ab.toml").display().to_string(),
            "--suite".into(),
            self.p("tiny.toml").display().to_string(),
            "-n".into(),
            "2".into(),
        ]
    }
    fn assert_clean(&self) {
        self.assert_scratch_empty();
        self.assert_state_empty();
    }
}

fn vm_config(name: &str, kernel: &Path) -> String {
    format!(
        "\n[[config]]\nname = \"{name}\"\nfs = \"ext4\"\ndevice = \"loop:512M\"\nkernel = \"{}\"\nmemory = \"1G\"\n",
        kernel.display()
    )
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s[s.rfind(')').unwrap_or(0) + 1..]
            .trim_start()
            .starts_with('Z')
    })
}

#[test]
fn an_ab_run_of_two_kernels_and_the_host_stores_each_guests_release_and_compares() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !ready() {
        return;
    }
    let (a, b) = (kernel("A").unwrap(), kernel("B").unwrap());
    let s = Setup::new(&format!(
        "{}{}\n[[config]]\nname = \"host\"\nfs = \"tmpfs\"\nsize = \"256M\"\nkernel = \"host\"\n",
        vm_config("k47", &a),
        vm_config("k50", &b)
    ));
    let t0 = Instant::now();
    let out = s.cmd().args(s.run_args()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    eprintln!(
        "the whole A/B run (2 kernels + host, 2 tests, n = 2): {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let json = s
        .cmd()
        .args(["export", "1", "--format", "json"])
        .output()
        .unwrap();
    assert!(json.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let samples = doc["runs"][0]["samples"].as_array().unwrap();
    assert_eq!(
        samples.len(),
        12,
        "3 configurations x 2 tests x 2 repetitions"
    );
    let mut by_seq: Vec<(u64, String, u64)> = Vec::new();
    for smp in samples {
        let config = smp["config"].as_str().unwrap();
        let extra = &smp["facts"]["extra"];
        assert_eq!(smp["status"], "ok", "{smp}");
        by_seq.push((
            smp["sequence"].as_u64().unwrap(),
            config.to_string(),
            smp["repetition"].as_u64().unwrap(),
        ));
        match config {
            "k47" | "k50" => {
                let release = if config == "k47" {
                    "6.1.0-47-amd64"
                } else {
                    "6.1.0-50-amd64"
                };
                assert_eq!(extra["vm_kernel"], release, "{smp}");
                assert!(
                    extra["vm_shape"]
                        .as_str()
                        .unwrap()
                        .starts_with("2 vCPU, 1024 MiB")
                );
                if extra["vm_accel"] == "tcg" {
                    assert_eq!(extra["emulated"], fsdelta::vm::EMULATED_LABEL);
                }
                assert_eq!(smp["facts"]["fs_type"], "ext4");
                let metrics = smp["metrics"].as_array().unwrap();
                assert!(metrics.iter().any(|m| m["name"] == "vm_boot_s"));
                assert!(metrics.iter().any(|m| m["name"] == "umount_s"));
                assert!(metrics.iter().any(|m| m["name"] == "dev_write_kbytes"));
            }
            "host" => {
                assert!(extra.get("vm_kernel").is_none());
                assert_eq!(smp["facts"]["fs_type"], "tmpfs");
            }
            other => panic!("unexpected config {other}"),
        }
    }
    // Rotated order: repetition 1 runs k47, k50, host; repetition 2 starts with k50.
    by_seq.sort();
    let order: Vec<&str> = by_seq.iter().map(|(_, c, _)| c.as_str()).collect();
    assert_eq!(
        order,
        [
            "k47", "k47", "k50", "k50", "host", "host", "k50", "k50", "host", "host", "k47", "k47"
        ]
    );
    // The two kernels side by side.
    let cmp = s
        .cmd()
        .args(["compare", "1@k47", "1@k50", "--all"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&cmp.stdout);
    eprintln!("{text}");
    assert!(
        matches!(cmp.status.code(), Some(0) | Some(1)),
        "{}",
        String::from_utf8_lossy(&cmp.stderr)
    );
    assert!(
        text.contains("files_per_sec") && text.contains("write_iops") && text.contains("vm_boot_s"),
        "{text}"
    );
    s.assert_clean();
}

/// Start `fsdelta run`, wait until its qemu runs, send `signal`; returns the child and the
/// qemu pid.
fn interrupt_mid_boot(s: &Setup, signal: i32) -> (std::process::Child, u32) {
    let bin = assert_cmd::cargo::cargo_bin("fsdelta");
    let child = std::process::Command::new(bin)
        .args(s.run_args())
        .env("FSDELTA_DB", s.p("db.sqlite"))
        .env("FSDELTA_STATE_FILE", s.p("state.json"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let qemu = loop {
        if let Some(q) = common::qemu_of(child.id()).first() {
            break *q;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "qemu never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(700));
    unsafe { libc::kill(child.id() as i32, signal) };
    (child, qemu)
}

#[test]
fn ctrl_c_during_a_boot_kills_qemu_removes_the_images_and_aborts_the_run() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !ready() {
        return;
    }
    let s = Setup::new(&vm_config("k47", &kernel("A").unwrap()));
    let (child, qemu) = interrupt_mid_boot(&s, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!alive(qemu), "qemu {qemu} still runs");
    let list = s.cmd().args(["list"]).output().unwrap();
    assert!(String::from_utf8_lossy(&list.stdout).contains("aborted"));
    s.assert_clean();
}

#[test]
fn kill_9_takes_qemu_down_and_cleanup_removes_what_is_left() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !ready() {
        return;
    }
    let s = Setup::new(&vm_config("k50", &kernel("B").unwrap()));
    let (mut child, qemu) = interrupt_mid_boot(&s, libc::SIGKILL);
    child.wait().unwrap();
    // A hang guard: SIGKILL'd qemu goes within milliseconds, however loaded the machine.
    let t0 = Instant::now();
    while alive(qemu) {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "qemu {qemu} outlived a kill -9 of fsdelta"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let state = std::fs::read_to_string(s.p("state.json")).unwrap();
    assert!(
        state.contains(".img") && state.contains(".pid"),
        "images and the pid file are recorded: {state}"
    );
    let out = s.cmd().arg("cleanup").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(".img"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    s.assert_clean();
}

#[test]
fn run_kernel_a_kernel_b_applies_both_kernels_to_every_configuration_and_compares_them() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    if !ready() {
        return;
    }
    let (a, b) = (kernel("A").unwrap(), kernel("B").unwrap());
    let s = Setup::new("\n[[config]]\nname = \"e4\"\nfs = \"ext4\"\ndevice = \"loop:512M\"\n");
    std::fs::write(
        s.p("one.toml"),
        "[[test]]\nname = \"files\"\nworkload = \"fsmark\"\nargs = \"-s 4096 -n 100 -t 1 -S 0\"\n",
    )
    .unwrap();
    let out = s
        .cmd()
        .args(["run", "--config"])
        .arg(s.p("ab.toml"))
        .arg("--suite")
        .arg(s.p("one.toml"))
        // One repetition a kernel: what this test checks is where the kernels go and how they
        // are named; the first test compares two kernels at n = 2 already.
        .args(["-n", "1", "--kernel"])
        .arg(&a)
        .arg("--kernel")
        .arg(&b)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Exit 0 or 1: the comparison of two kernels decides, not an error.
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "{stdout}\n{stderr}"
    );
    eprintln!("{stdout}");
    let tag_a = fsdelta::plan::config::kernel_tag(&a);
    let tag_b = fsdelta::plan::config::kernel_tag(&b);
    assert!(
        stdout.contains(&format!("1@e4-{tag_a}")) && stdout.contains(&format!("1@e4-{tag_b}")),
        "the closing comparison names both kernels' configurations:\n{stdout}"
    );
    let json = s
        .cmd()
        .args(["export", "1", "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let samples = doc["runs"][0]["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2, "2 kernels x 1 test x 1 repetition");
    assert!(samples.iter().all(|x| x["status"] == "ok"), "{stdout}");
    // The output names the kernels (issue 36 item 4): the end table prints each configuration's
    // whole name, `list` and `export` give the guests' kernels, not the host's.
    let (ra, rb) = ("6.1.0-47-amd64", "6.1.0-50-amd64");
    for (tag, release) in [(&tag_a, ra), (&tag_b, rb)] {
        let name = format!("e4-{tag}");
        assert!(
            stdout
                .lines()
                .any(|l| l.contains(&name) && !l.contains(&format!("1@{name}"))),
            "the end table names {name} whole:\n{stdout}"
        );
        let of_config: Vec<&serde_json::Value> = samples
            .iter()
            .filter(|x| x["config"] == name.as_str())
            .collect();
        assert_eq!(of_config.len(), 1, "{name}");
        for x in of_config {
            assert_eq!(x["facts"]["extra"]["vm_kernel"], release, "{x}");
        }
    }
    let mut guests: Vec<&str> = doc["runs"][0]["guest_kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| k.as_str())
        .collect();
    guests.sort();
    assert_eq!(guests, [ra, rb]);
    let list = s.cmd().args(["list"]).output().unwrap();
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(listed.contains(ra) && listed.contains(rb), "{listed}");
    let show = s.cmd().args(["show", "1"]).output().unwrap();
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("kernel under test (guest):")
                && l.contains(ra)
                && l.contains(rb)),
        "{shown}"
    );
    let csv = s
        .cmd()
        .args(["export", "1", "--format", "csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&csv.stdout);
    let host = fsdelta::site::env::environment().kernel_release;
    for line in csv
        .lines()
        .skip(1)
        .filter(|l| l.contains(",files_per_sec,"))
    {
        let cols: Vec<&str> = line.split(',').collect();
        let want = if cols[4].ends_with(tag_a.as_str()) {
            ra
        } else {
            rb
        };
        assert_eq!(
            cols[3], want,
            "the CSV kernel column is the guest's: {line}"
        );
        assert_eq!(cols.last().copied(), Some(host.as_str()), "{line}");
    }
    s.assert_clean();
}
