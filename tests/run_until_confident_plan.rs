//! `run --until-confident` plans its starting repetitions from the machine's newest
//! calibration (`calibrate::planned_repeat`) and says so: a command test whose values cycle
//! 1000, 1050, 1100 (CV about 4.8 %) needs more than 10 runs a side to resolve a change within
//! the 5 % band, so with --max-repeat 6 the run starts with 6, not -n 2; without a calibration
//! it starts with -n and says why.

mod common;

use predicates::prelude::*;

#[test]
fn until_confident_starts_with_what_the_calibration_plans() {
    let env = common::Env::new();
    let (work, suite) = common::cycling_suite(&env);
    let run = || {
        let mut c = env.cmd();
        c.args([
            "run",
            "--until-confident",
            "--max-repeat",
            "6",
            "-n",
            "2",
            "--no-drop-caches",
            "--suite",
        ])
        .arg(&suite)
        .arg("--target")
        .arg(&work);
        c
    };
    // No calibration yet: -n, and why.
    run().assert().success().stderr(predicate::str::contains(
        "fsdelta: --until-confident: starting with -n 2 repetitions a test: no calibration of this machine in the store",
    ));
    env.cmd()
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
        .success();
    // Runs 2 and 3 are the calibration; run 4 starts from it.
    run().assert().success().stderr(predicate::str::contains(
        "fsdelta: --until-confident: starting with 6 repetitions a test, not -n 2: the calibration of this machine (runs 2 and 3) plans 6 a side",
    ));
    let doc = common::export_latest(env.cmd());
    let samples = doc["runs"][0]["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 6, "started with 6 repetitions");
    // Every sample says where its run's starting repetitions came from.
    for s in samples {
        let fact = s["facts"]["extra"]["until_confident_start"]
            .as_str()
            .unwrap_or_else(|| panic!("no until_confident_start fact: {s}"));
        assert!(fact.contains("runs 2 and 3"), "{fact}");
    }
}
