//! End-to-end tests of issue 12's comparisons on real runs: two identical tmpfs configurations in
//! one run with `--order rotate` and 3 repetitions exit 0 with no headline regression (in one of
//! three attempts: a chance flag does not repeat, common::attempts); a
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
    // A headline flag can come by chance (the false-alarm rate); one that repeats in each of
    // three rotated runs cannot (common::attempts).
    let mut t = String::new();
    common::attempts::passes_in_one_of(3, "tmpfs against its twin", |_| {
        env.cmd()
            .args(["run", "-n", "3", "--quiet", "--order", "rotate", "--suite"])
            .arg(&suite)
            .arg("--config")
            .arg(&cfg)
            .assert()
            .success();
        let (out, text) = output_text(&env, &["compare", "latest@ram-a", "latest@ram-b", "--all"]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{text}");
        t = text;
        // no headline metric regressed: the only REGRESSED words may be secondary ones
        let headline_block = t
            .split("secondary metrics (do not set the exit code):")
            .next()
            .unwrap();
        if out.status.code() == Some(0)
            && !headline_block.contains("REGRESSED")
            && t.contains("headline: 0 regressed")
        {
            Ok(())
        } else {
            Err(t.clone())
        }
    });
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
    // markdown: one table, a column group (center, diff, mark) per side
    let out = env
        .cmd()
        .args([
            "compare", "label:a", "label:b", "label:c", "--format", "markdown",
        ])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert_eq!(md.matches("| test | metric |").count(), 1, "{md}");
    assert!(
        md.contains("| label:a | label:b | diff | | label:c | diff | |"),
        "{md}"
    );
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

/// CPUs the machine has (`cpuN` lines of /proc/stat), which bg_cpu_pct is a share of.
fn machine_cpus() -> usize {
    fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count()
}

/// `compare label:quiet label:busy` in text and JSON, checked against the loads the sides
/// stored (`quiet`, `busy`: their mean bg_cpu_pct): the background-load warning is printed
/// exactly when they are 10 points and a factor 2 apart (compare's rule), names the busier side
/// with both numbers, and comes before the first table of verdicts; JSON carries both loads.
/// Whether the warning was printed.
fn compare_names_the_busier_side(env: &Env, quiet: f64, busy: f64) -> bool {
    let (lo, hi) = (quiet.min(busy), quiet.max(busy));
    let expected = hi - lo >= 10.0 && hi >= 2.0 * lo;
    let (_, t) = output_text(env, &["compare", "label:quiet", "label:busy"]);
    let first_table = t
        .lines()
        .position(|l| l.contains("95% interval"))
        .unwrap_or_else(|| panic!("no table of verdicts:\n{t}"));
    let warning = t
        .lines()
        .position(|l| l.contains("other processes used") && l.contains("WARNING"));
    let out = env
        .cmd()
        .args(["compare", "label:quiet", "label:busy", "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ctx = &doc["context"];
    let stored = |side: &str| ctx[side]["bg_cpu_pct"].as_f64().unwrap();
    assert!((stored("baseline_load") - quiet).abs() < 1e-6, "{ctx}");
    assert!((stored("current_load") - busy).abs() < 1e-6, "{ctx}");
    let json_warning = ctx["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .find(|w| w.contains("other processes used"));
    if !expected {
        assert!(
            warning.is_none(),
            "loads {quiet:.1} and {busy:.1} %, a warning:\n{t}"
        );
        assert!(json_warning.is_none(), "{ctx}");
        return false;
    }
    let (first, fv, other, ov) = if busy > quiet {
        ("current", busy, "baseline", quiet)
    } else {
        ("baseline", quiet, "current", busy)
    };
    let says =
        format!("{first} side: other processes used {fv:.0} % of the CPUs, {other} {ov:.0} %");
    let warning = warning.unwrap_or_else(|| panic!("no warning ({says}):\n{t}"));
    let line = t.lines().nth(warning).unwrap();
    assert!(line.contains(&says), "want {says:?}:\n{t}");
    assert!(warning < first_table, "the warning comes first:\n{t}");
    assert!(t.contains("timing verdicts may reflect the machine"), "{t}");
    assert!(
        json_warning.is_some_and(|w| w.starts_with(&says)),
        "want {says:?}: {ctx}"
    );
    true
}

/// A CPU hog on every CPU during the "busy" side. What holds whatever else the machine runs
/// (issue 33: this test once needed a quiet machine for its baseline, and failed under load):
/// with a hog on every CPU no CPU is ever idle, so the busy side's bg_cpu_pct is everything but
/// fsdelta's own share (one fs_mark thread: at most one CPU); compare warns exactly when the
/// stored loads call for it, naming the busier side before the verdicts; and with the quiet
/// side's loads replaced by those of an idle machine (1 %), it must warn.
#[test]
fn a_cpu_hog_on_one_side_is_named_before_the_verdicts() {
    let _serial = serial();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if !require(
        cpus >= 2,
        "at least 2 CPUs (a hog on each leaves fsdelta's one thread at most half the machine)",
    ) {
        return;
    }
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
        // Bounded in time only in case this test is killed; dropped (killed) after the run.
        let _hog = Hog::start(cpus, 3600);
        run("busy");
    }
    let busy = mean_bg(&env, "label:busy");
    // 5 points for the clock ticks /proc/stat counts in against the exact rusage.
    let floor = 100.0 * (cpus - 1) as f64 / machine_cpus() as f64 - 5.0;
    assert!(
        busy >= floor,
        "with a hog on each of {cpus} CPUs other processes used {busy:.0} % of the machine's {} \
         CPUs, want at least {floor:.0} %",
        machine_cpus()
    );
    compare_names_the_busier_side(&env, quiet, busy);
    // The quiet side as an idle machine stores it: the warning must be there now.
    let db = rusqlite::Connection::open(env.path("r.sqlite")).unwrap();
    let n = db
        .execute(
            "UPDATE metrics SET value = 1.0 WHERE name = 'bg_cpu_pct' AND sample_id IN \
             (SELECT s.id FROM samples s JOIN runs r ON r.id = s.run_id WHERE r.label = 'quiet')",
            [],
        )
        .unwrap();
    assert_eq!(n, 2, "one bg_cpu_pct per quiet sample");
    drop(db);
    assert_eq!(mean_bg(&env, "label:quiet"), 1.0);
    assert!(compare_names_the_busier_side(&env, 1.0, busy));
    let _ = Path::new(&target);
}
