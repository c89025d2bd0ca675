//! End-to-end tests of issue 35's verdicts and tables on real filesystems: what gates a command
//! test (its time, never fsdelta's own write amplification or mount times), the one-table form
//! of a comparison (`--format table`), and what `compare` says about samples a side lacks.
//!
//! Needs root, loop devices and mkfs.ext4; each test that cannot run says why (and fails under
//! FSDELTA_REQUIRE_ALL=1).

mod common;

use common::{Env, is_root, require};
use std::path::Path;

fn can_mount() -> bool {
    require(is_root(), "root (mkfs, mount, loop devices)")
        && require(Path::new("/dev/loop-control").exists(), "loop devices")
}

/// A command test without declared metrics that writes 8 MiB with fsync after a second's
/// sleep: its time is dominated by the sleep, its write amplification by the journal mode.
const DD_SUITE: &str = r#"
name = "dd"

[[test]]
name = "ddsync"
workload = "command"
command = "sleep 1; dd if=/dev/zero of=f bs=1M count=8 conv=fsync status=none"
"#;

/// Two ext4 configurations: ordered data (the default) and data=journal, which writes every
/// data block twice (journal, then home): a certain write-amplification regression.
const ORDERED_AND_JOURNAL: &str = r#"
[[config]]
name = "ordered"
fs = "ext4"
device = "loop:128M"

[[config]]
name = "journal"
fs = "ext4"
device = "loop:128M"
mount = "data=journal"
"#;

fn metric<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == name)
        .unwrap_or_else(|| panic!("no {name} in {doc}"))
}

#[test]
fn a_command_tests_write_amplification_regression_does_not_gate_the_exit_code() {
    if !can_mount() {
        return;
    }
    let env = Env::new();
    let suite = env.write("dd.toml", DD_SUITE);
    let cfg = env.config(ORDERED_AND_JOURNAL);
    env.cmd()
        .args(["run", "-n", "3", "--quiet", "--label", "wa", "--suite"])
        .arg(&suite)
        .arg("--config")
        .arg(&cfg)
        .assert()
        .success();
    let out = env
        .cmd()
        .args(["compare", "latest@ordered", "latest@journal", "--all"])
        .args(["--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let wa = metric(&doc, "write_amplification");
    // data=journal writes each block twice: the regression is real and certain ...
    assert_eq!(wa["verdict"], "regressed", "{wa}");
    // ... and it is fsdelta's own number beside the test: secondary, not gating.
    assert_eq!(wa["role"], "secondary", "{wa}");
    assert_eq!(wa["gates"], false, "{wa}");
    for own in ["mount_s", "umount_s", "dev_write_kbytes"] {
        let m = metric(&doc, own);
        assert_eq!(m["role"], "secondary", "{m}");
    }
    // The command's time is its headline, and the only thing that can set the exit code.
    let elapsed = metric(&doc, "elapsed_s");
    assert_eq!(elapsed["role"], "headline", "{elapsed}");
    let expected = if elapsed["verdict"] == "regressed" {
        1
    } else {
        0
    };
    assert_eq!(out.status.code(), Some(expected), "{doc}");
}

#[test]
fn three_differently_named_configurations_compare_as_one_table_with_a_column_per_side() {
    if !can_mount() {
        return;
    }
    let env = Env::new();
    let suite = env.write("dd.toml", DD_SUITE);
    let cfg = env.config(&format!(
        "{ORDERED_AND_JOURNAL}\n[[config]]\nname = \"writeback\"\nfs = \"ext4\"\n\
         device = \"loop:128M\"\nmount = \"data=writeback\"\n"
    ));
    env.cmd()
        .args(["run", "-n", "2", "--quiet", "--label", "three", "--suite"])
        .arg(&suite)
        .arg("--config")
        .arg(&cfg)
        .assert()
        .success();
    let sides = ["latest@ordered", "latest@journal", "latest@writeback"];
    let out = env
        .cmd()
        .arg("compare")
        .args(sides)
        .args(["--format", "table"])
        .output()
        .unwrap();
    let t = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(out.status.code(), Some(2), "{t}");
    let heads: Vec<&str> = t.lines().filter(|l| l.starts_with("  test ")).collect();
    assert_eq!(heads.len(), 1, "one table:\n{t}");
    let names: Vec<&str> = heads[0].split_whitespace().collect();
    assert_eq!(
        names,
        [
            "test",
            "metric",
            "ordered",
            "journal",
            "diff",
            "writeback",
            "diff"
        ],
        "{t}"
    );
    // One row for the test's headline, a center, diff and mark per side; nothing clipped.
    // (Table rows are indented two columns; a disturbance warning above may name the test.)
    let rows: Vec<&str> = t.lines().filter(|l| l.starts_with("  ddsync")).collect();
    assert_eq!(rows.len(), 1, "{t}");
    assert!(
        rows[0].contains("elapsed_s") && rows[0].matches('%').count() == 2,
        "{t}"
    );
    assert!(
        !t.contains("write_amplification"),
        "headline only by default:\n{t}"
    );
    assert!(
        t.contains("ordered = latest@ordered (run 1, label three) (baseline)"),
        "{t}"
    );
    assert!(
        t.contains("R regressed, i improved, = unchanged, ? inconclusive"),
        "{t}"
    );
    assert!(t.lines().all(|l| l.chars().count() <= 80), "{t}");
    assert!(!t.contains('~'), "{t}");
    // The text form of three sides: one block for the test, not one per configuration pair.
    let out = env.cmd().arg("compare").args(sides).output().unwrap();
    let t = String::from_utf8_lossy(&out.stdout);
    assert_eq!(t.matches("ddsync, geometric means").count(), 1, "{t}");
    // Markdown: the same one table.
    let out = env
        .cmd()
        .arg("compare")
        .args(sides)
        .args(["--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&out.stdout);
    assert_eq!(md.matches("| test | metric |").count(), 1, "{md}");
    assert!(
        md.contains("| test | metric | ordered | journal | diff | | writeback | diff | |"),
        "{md}"
    );
}

#[test]
fn compare_of_a_run_with_failed_samples_says_what_each_side_lacks_and_exits_2() {
    if !can_mount() {
        return;
    }
    let env = Env::new();
    // Every third invocation (the 2nd and the 5th of six) fails, whatever the order.
    let count = env.path("count");
    let suite = env.write(
        "flaky.toml",
        &format!(
            "name = \"flaky\"\n[[test]]\nname = \"flaky\"\nworkload = \"command\"\n\
             command = \"n=$(cat {c} 2>/dev/null || echo 0); echo $((n+1)) > {c}; \
             if [ $((n % 3)) -eq 1 ]; then echo 'disk on fire' >&2; exit 3; fi; \
             dd if=/dev/zero of=f bs=1M count=2 conv=fsync status=none\"\n",
            c = count.display()
        ),
    );
    let cfg = env.config(ORDERED_AND_JOURNAL);
    let run = env
        .cmd()
        .args(["run", "-n", "3", "--quiet", "--label", "flaky", "--suite"])
        .arg(&suite)
        .arg("--config")
        .arg(&cfg)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2), "the run ends failed");
    for format in ["text", "table"] {
        let out = env
            .cmd()
            .args([
                "compare",
                "latest@ordered",
                "latest@journal",
                "--format",
                format,
            ])
            .output()
            .unwrap();
        let t = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        // Each side that lacks samples says how many of how many, and the failure's reason.
        let lacks: usize = t
            .lines()
            .filter_map(|l| l.split_once(" side lacks "))
            .filter_map(|(_, rest)| rest.split_whitespace().next()?.parse::<usize>().ok())
            .sum();
        assert_eq!(lacks, 2, "{t}");
        let flat = t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains("1 failed: exited with status 3; stderr: disk on fire)"),
            "{t}"
        );
        assert!(flat.contains("run 1 ended failed"), "{t}");
        // A regression would stand; otherwise the missing samples make it exit 2.
        let regressed = !t.contains("headline: 0 regressed");
        assert_eq!(
            out.status.code(),
            Some(if regressed { 1 } else { 2 }),
            "{t}"
        );
    }
}
