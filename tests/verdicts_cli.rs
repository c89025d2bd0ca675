//! End-to-end tests of issue 12's comparisons on real runs: two identical tmpfs configurations in
//! one run with `--order rotate` and 3 repetitions exit 0 with no headline regression; a
//! comparison of 3 sides; and the background-load warning when a CPU hog (started by the test,
//! bounded in time) ran during one side.

mod common;

use common::{Env, is_root, require};
use std::fs;
use std::path::Path;
use std::process::{Child, Command};

/// The tests of this file run one at a time: the CPU-hog test measures other processes' CPU
/// share, which the other tests' workloads would raise.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

use common::TINY_SUITE;

/// The output of fsdelta with `args` in `env`, and its stdout and stderr as one text.
fn output_text(env: &Env, args: &[&str]) -> (std::process::Output, String) {
    let o = env.cmd().args(args).output().unwrap();
    let t = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o, t)
}

#[test]
fn identical_tmpfs_configurations_in_rotated_order_do_not_regress() {
    let _serial = serial();
    if !require(is_root(), "root (tmpfs mounts)") {
        return;
    }
    let env = Env::new();
    let suite = env.write("tiny.toml", TINY_SUITE);
    let cfg = env.config(
        r#"
[[config]]
name = "ram-a"
fs = "tmpfs"
size = "256M"

[[config]]
name = "ram-b"
fs = "tmpfs"
size = "256M"
"#,
    );
    env.cmd()
        .args(["run", "-n", "3", "--quiet", "--order", "rotate", "--suite"])
        .arg(&suite)
        .arg("--config")
        .arg(&cfg)
        .assert()
        .success();
    let (out, t) = output_text(&env, &["compare", "latest@ram-a", "latest@ram-b", "--all"]);
    assert_eq!(out.status.code(), Some(0), "{t}");
    // no headline metric regressed: the only REGRESSED words may be secondary ones
    let headline_block = t
        .split("secondary metrics (do not set the exit code):")
        .next()
        .unwrap();
    assert!(!headline_block.contains("REGRESSED"), "{t}");
    assert!(t.contains("headline: 0 regressed"), "{t}");
    assert!(t.contains("What differs between the sides"), "{t}");
    assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
}

#[test]
fn three_sides_compare_each_against_the_first() {
    let _serial = serial();
    let env = Env::new();
    let suite = env.write("tiny.toml", TINY_SUITE);
    let target = env.path("t");
    fs::create_dir(&target).unwrap();
    for label in ["a", "b", "c"] {
        env.run_label("2", label, &suite, &target);
    }
    let (out, t) = output_text(&env, &["compare", "label:a", "label:b", "label:c"]);
    assert_ne!(out.status.code(), Some(2), "{t}");
    assert!(t.contains("side 1:    label:b"), "{t}");
    assert!(t.contains("side 2:    label:c"), "{t}");
    let header = t.lines().find(|l| l.starts_with("  metric ")).unwrap();
    assert!(
        header.contains("side 1") && header.contains("side 2"),
        "{t}"
    );
    let row = t
        .lines()
        .find(|l| l.trim_start().starts_with("files_per_sec "))
        .unwrap();
    assert_eq!(row.matches('%').count(), 2, "a diff per other side: {row}");
    assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
    // JSON: one entry per other side, each with its context and metrics
    let out = env
        .cmd()
        .args([
            "compare", "label:a", "label:b", "label:c", "--format", "json",
        ])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["sides"].as_array().unwrap().len(), 2);
    let m = &doc["sides"][0]["metrics"][0];
    assert_eq!(m["center"], "geometric_mean", "{m}");
    assert_eq!(m["method"], "welch", "{m}");
    // markdown has one column group per side
    let out = env
        .cmd()
        .args([
            "compare", "label:a", "label:b", "label:c", "--format", "markdown",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("| side 2 | diff 2 | verdict 2 |"));
}

/// `n` busy loops, killed on drop and bounded by `timeout` in any case.
struct Hog(Vec<Child>);

impl Hog {
    fn start(n: usize, seconds: u32) -> Hog {
        Hog((0..n)
            .map(|_| {
                Command::new("timeout")
                    .arg(seconds.to_string())
                    .args(["sh", "-c", "while :; do :; done"])
                    .spawn()
                    .unwrap()
            })
            .collect())
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        // SIGTERM to `timeout`, which passes it on to its shell (SIGKILL would orphan the loop)
        for c in &mut self.0 {
            let _ = Command::new("kill").arg(c.id().to_string()).status();
        }
        for c in &mut self.0 {
            let _ = c.wait();
        }
    }
}

fn mean_bg(env: &Env, sel: &str) -> f64 {
    let out = env
        .cmd()
        .args(["export", sel, "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let v: Vec<f64> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["samples"].as_array().unwrap().iter())
        .flat_map(|s| s["metrics"].as_array().unwrap().iter())
        .filter(|m| m["name"] == "bg_cpu_pct")
        .map(|m| m["value"].as_f64().unwrap())
        .collect();
    assert!(!v.is_empty(), "no bg_cpu_pct stored");
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn a_cpu_hog_on_one_side_is_named_before_the_verdicts() {
    let _serial = serial();
    let env = Env::new();
    // long enough (about a second a sample) for the hog's share to show
    let suite = env.write(
        "tiny.toml",
        r#"
name = "tiny"

[[test]]
name = "writes"
workload = "fsmark"
args = "-s 16384 -n 3000 -t 1 -S 0"
"#,
    );
    let target = env.path("t");
    fs::create_dir(&target).unwrap();
    let run = |label: &str| env.run_label("2", label, &suite, &target);
    run("quiet");
    let quiet = mean_bg(&env, "label:quiet");
    {
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let _hog = Hog::start(cpus, 120);
        run("busy");
    }
    let busy = mean_bg(&env, "label:busy");
    // The warning needs the sides 10 points and a factor 2 apart. Other jobs on a shared
    // machine can take the quiet side's share; say so rather than pass or fail by luck.
    if !require(
        quiet < 25.0 && busy >= 2.0 * quiet + 10.0,
        &format!(
            "a machine quiet enough for a baseline (other processes used {quiet:.0} % of the CPUs \
             without the hog, {busy:.0} % with it)"
        ),
    ) {
        return;
    }
    let (_, t) = output_text(&env, &["compare", "label:quiet", "label:busy"]);
    let warning = t
        .lines()
        .position(|l| l.contains("WARNING current side: other processes used"))
        .unwrap_or_else(|| panic!("no warning:\n{t}"));
    let first_table = t.lines().position(|l| l.contains("95% interval")).unwrap();
    assert!(warning < first_table, "the warning comes first:\n{t}");
    assert!(t.contains("timing verdicts may reflect the machine"), "{t}");
    // markdown says the same, JSON carries the loads
    let out = env
        .cmd()
        .args(["compare", "label:quiet", "label:busy", "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        doc["context"]["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with("current side")
    );
    assert!(
        doc["context"]["current_load"]["bg_cpu_pct"]
            .as_f64()
            .unwrap()
            > 10.0
    );
    let _ = Path::new(&target);
}
