//! `fsdelta calibrate` through the real binary: two runs labelled `calibrate` are stored, and
//! the printed noise and detectable changes are those `compare::power` gives for the stored
//! values (a command test whose values cycle 1000, 1050, 1100: a known CV of about 4.8 %).

mod common;

use fsdelta::compare::power::{self, Noise};
use fsdelta::compare::verdict::{Margins, MetricClass};
use predicates::prelude::*;

#[test]
fn calibrate_stores_an_a_a_pair_and_prints_what_this_machine_detects() {
    let env = common::Env::new();
    let (work, suite) = common::cycling_suite(&env);
    let out = env
        .cmd()
        .args([
            "calibrate",
            "-n",
            "3",
            "--runs",
            "2",
            "--quiet",
            "--no-drop-caches",
            "--suite",
        ])
        .arg(&suite)
        .arg("--target")
        .arg(&work)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "runs 1 and 2, 3 repetitions each, labelled calibrate",
        ))
        .stdout(predicate::str::contains("A/A: no headline metric flagged"));
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let values = [1000.0, 1050.0, 1100.0];
    let noise = Noise::pooled(&[&values, &values]).unwrap();
    let expected: Vec<String> =
        power::table(noise, MetricClass::Throughput, 1, &Margins::default())
            .into_iter()
            .map(|(_, e)| power::fmt_effect(e))
            .collect();
    let line = stdout
        .lines()
        .find(|l| l.split_whitespace().take(3).eq(["scratch", "level", "v"]))
        .unwrap_or_else(|| panic!("no row for level/v:\n{stdout}"));
    assert!(
        line.contains(&format!("{:.1} %", 100.0 * noise.cv())),
        "{line}"
    );
    for e in &expected {
        assert!(line.contains(e.as_str()), "{e} missing: {line}");
    }
    // the same values on both sides, but at CV 4.8 % three runs a side cannot bound the change
    // within the +-5 % band: inconclusive, not flagged
    assert!(line.trim_end().ends_with("inconclusive"), "{line}");
    // both runs are stored with the label, so the noise has a history
    env.cmd()
        .args(["list", "--label", "calibrate"])
        .assert()
        .success()
        .stdout(predicate::str::contains("calibrate").count(2));
}
