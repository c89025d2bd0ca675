//! End-to-end tests of verdicts on real runs (issue 5) and of suite files (issue 6): two identical
//! configurations compare as no regression; the `sync` mount option under a buffered-write test
//! is reported as regressed; `--bisect` exit codes; `history`; `run --baseline`; a user command
//! with extracted metrics, and a failing one kept as a failed sample with its stderr.

mod common;

use common::{Env, is_root, require};
use std::fs;
use std::path::Path;

use common::TINY_SUITE;

fn can_mount() -> bool {
    require(is_root(), "root (mkfs, mount, loop devices)")
        && require(Path::new("/dev/loop-control").exists(), "loop devices")
}

/// Two identical ext4 configurations: the A/A pair of the test below.
const TWINS: &str = r#"
[[config]]
name = "ext4"
fs = "ext4"
device = "loop:256M"
fresh = "run"

[[config]]
name = "ext4-twin"
fs = "ext4"
device = "loop:256M"
fresh = "run"
"#;

#[test]
fn the_sync_mount_option_regresses_buffered_writes_and_identical_configs_do_not() {
    if !can_mount() {
        return;
    }
    let env = Env::new();
    let suite = env.write("tiny.toml", TINY_SUITE);
    let cfg = env.config(&format!(
        r#"{TWINS}
[[config]]
name = "ext4-sync"
fs = "ext4"
device = "loop:256M"
mount = "sync"
fresh = "run"
"#
    ));
    env.cmd()
        .args(["run", "-n", "5", "--quiet", "--label", "m", "--suite"])
        .arg(&suite)
        .arg("--config")
        .arg(&cfg)
        .assert()
        .success();

    // sync makes every buffered write synchronous: a large, certain slowdown.
    let out = env
        .cmd()
        .args([
            "compare",
            "latest@ext4",
            "latest@ext4-sync",
            "--metric",
            "files_per_sec",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("REGRESSED"), "{text}");
    assert!(text.contains("ext4 vs ext4-sync"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");

    // JSON carries the interval and the p-value; markdown has a table.
    let out = env
        .cmd()
        .args([
            "compare",
            "latest@ext4",
            "latest@ext4-sync",
            "--metric",
            "files_per_sec",
        ])
        .args(["--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &doc["metrics"][0];
    assert_eq!(m["verdict"], "regressed");
    assert!(m["p_value"].as_f64().unwrap() < 0.05);
    assert!(m["diff_hi_pct"].as_f64().unwrap() < 0.0);
    let out = env
        .cmd()
        .args([
            "compare",
            "latest@ext4",
            "latest@ext4-sync",
            "--format",
            "markdown",
        ])
        .output()
        .unwrap();
    // One table: test, metric, the baseline's center, then the current side's center, diff
    // and verdict mark.
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("| test | metric | ext4 | ext4-sync | diff | |")
    );

    // Every metric judged, as a developer runs it: the headline metric gates the exit code.
    let out = env
        .cmd()
        .args(["compare", "latest@ext4", "latest@ext4-sync"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("files_per_sec "))
        .unwrap();
    assert!(row.ends_with("REGRESSED"), "{text}");
    assert!(
        text.contains("mount options of ext4 vs ext4-sync"),
        "{text}"
    );

    // git bisect run: bad.
    env.cmd()
        .args([
            "compare",
            "latest@ext4",
            "latest@ext4-sync",
            "--bisect",
            "--metric",
            "files_per_sec",
        ])
        .assert()
        .code(1);

    // The same configuration twice (interleaved samples): no regression of the headline
    // metric. A flag can come by chance (the false-alarm rate); one that repeats in each of three
    // runs cannot (common::attempts). Attempts after the first run the twins again.
    let twins = env.write("twins.toml", TWINS);
    common::attempts::passes_in_one_of(3, "ext4 against its twin", |i| {
        if i > 0 {
            env.cmd()
                .args([
                    "run",
                    "-n",
                    "5",
                    "--quiet",
                    "--label",
                    &format!("m{i}"),
                    "--suite",
                ])
                .arg(&suite)
                .arg("--config")
                .arg(&twins)
                .assert()
                .success();
        }
        let out = env
            .cmd()
            .args([
                "compare",
                "latest@ext4",
                "latest@ext4-twin",
                "--metric",
                "files_per_sec",
            ])
            .args(["--metric", "files_per_sec_wall", "--all"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        match out.status.code() {
            Some(0) if !text.contains("REGRESSED") => Ok(()),
            Some(0) | Some(1) => Err(format!("identical configs flagged:\n{text}")),
            other => panic!(
                "compare exited {other:?}: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    });
}

#[test]
fn bisect_skips_when_one_run_a_side_cannot_decide_and_history_lists_runs() {
    let env = Env::new();
    let suite = env.write("tiny.toml", TINY_SUITE);
    let target = env.path("t");
    fs::create_dir(&target).unwrap();
    for label in ["a", "b", "c"] {
        env.run_label("1", label, &suite, &target);
    }
    // One run a side: no variance, inconclusive: git bisect's "skip".
    env.cmd()
        .args([
            "compare",
            "label:a",
            "label:b",
            "--bisect",
            "--metric",
            "files_per_sec",
        ])
        .assert()
        .code(125)
        .stdout(predicates::str::contains("one run a side"));
    let out = env
        .cmd()
        .args(["history", "--test", "writes", "--metric", "files_per_sec"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.contains("  1 ")).count(),
        3,
        "{text}"
    );
    let out = env
        .cmd()
        .args([
            "history",
            "--test",
            "writes",
            "--metric",
            "files_per_sec",
            "--format",
            "json",
            "--label-glob",
            "a*",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    env.cmd()
        .args(["history", "--test", "writes", "--metric", "nope"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("has metric 'nope'"));
    // --baseline gates the run: one run a side is inconclusive, not a regression (exit 0).
    env.cmd()
        .args([
            "run",
            "-n",
            "1",
            "--quiet",
            "--baseline",
            "label:a",
            "--suite",
        ])
        .arg(&suite)
        .arg("--target")
        .arg(&target)
        .assert()
        .code(0)
        .stdout(predicates::str::contains("baseline: label:a"));
}

#[test]
fn a_user_command_is_a_test_and_its_failure_is_kept_with_stderr() {
    let env = Env::new();
    let suite = env.write(
        "cmd.toml",
        r#"
[[test]]
name = "launch"
workload = "command"
command = "echo 'launch took 42 ms'; echo '{\"db\": {\"tps\": 1234.5}}' > out.json; cat out.json"
[[test.metric]]
name = "launch_ms"
regex = 'launch took (\d+) ms'
unit = "ms"
direction = "lower"

[[test]]
name = "broken"
workload = "command"
command = "echo 'disk on fire' >&2; exit 3"
"#,
    );
    let target = env.path("t");
    fs::create_dir(&target).unwrap();
    env.cmd()
        .args(["run", "-n", "1", "--quiet", "--suite"])
        .arg(&suite)
        .arg("--target")
        .arg(&target)
        .assert()
        .code(2)
        .stdout(predicates::str::contains("FAILED broken"))
        .stdout(predicates::str::contains("disk on fire"));
    let doc = common::export_latest(env.cmd());
    assert_eq!(doc["runs"][0]["suite"], "cmd");
    let samples = doc["runs"][0]["samples"].as_array().unwrap();
    let launch = samples.iter().find(|s| s["test"] == "launch").unwrap();
    let m = launch["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "launch_ms")
        .unwrap();
    assert_eq!(m["value"], 42.0);
    assert_eq!(m["unit"], "ms");
    assert_eq!(m["direction"], "lower_is_better");
    let broken = samples.iter().find(|s| s["test"] == "broken").unwrap();
    assert_eq!(broken["status"], "failed");

    // A malformed suite file names the problem.
    let bad = env.write(
        "bad.toml",
        "[[test]]\nname = 'x'\nworkload = 'fsmark'\nargs = '-s 0'\niodepth = 4\n",
    );
    env.cmd()
        .args(["run", "--suite"])
        .arg(&bad)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("unknown key 'iodepth'"));
}

#[test]
fn until_confident_adds_repetitions_only_while_the_headline_is_unresolved() {
    let env = Env::new();
    // The noisy test's values come from a fixed, widely spread list (a counter file picks the
    // next), never inside a 5 % band of each other: deterministic, unlike a random source.
    let counter = env.path("counter").display().to_string();
    let suite = env.write(
        "conf.toml",
        &r#"
[[test]]
name = "steady"
workload = "command"
command = "echo 'v 100'"
[[test.metric]]
name = "v"
regex = 'v (\d+)'
unit = "count"
direction = "higher"

[[test]]
name = "noisy"
workload = "command"
command = "n=$(cat @@COUNTER@@ 2>/dev/null || echo 0); echo $((n + 1)) > @@COUNTER@@; set -- 10 1000 40 900 120 700 300 500; shift $((n % 8)); echo \"v $1\""
[[test.metric]]
name = "v"
regex = 'v (\d+)'
unit = "count"
direction = "higher"
"#
        .replace("@@COUNTER@@", &counter),
    );
    let target = env.path("t");
    fs::create_dir(&target).unwrap();
    env.cmd()
        .args([
            "run",
            "-n",
            "2",
            "--until-confident",
            "--max-repeat",
            "6",
            "--quiet",
            "--suite",
        ])
        .arg(&suite)
        .arg("--target")
        .arg(&target)
        .assert()
        .success();
    let doc = common::export_latest(env.cmd());
    let samples = doc["runs"][0]["samples"].as_array().unwrap();
    let count = |t: &str| samples.iter().filter(|s| s["test"] == t).count();
    // Identical values: resolved after the first two repetitions.
    assert_eq!(count("steady"), 2);
    // Values spread over 10..1000: never inside a 5 % band, so it runs to --max-repeat.
    assert_eq!(count("noisy"), 6);
}
