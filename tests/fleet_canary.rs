//! Machines that drift (issue 38), through the real binary on a scratch database of the test
//! server named by FSDELTA_TEST_PG: an agent runs its canary before each job; the first three
//! build its history, a steady one lets it work, one made to drift (its command reports half
//! the value) marks the machine unhealthy, and from then on the agent runs no canary and takes
//! no job, saying why, until `fsdelta machines clear NAME`; `machines` and `jobs` show it.
//! Without FSDELTA_TEST_PG the test is skipped with the reason (a failure under
//! FSDELTA_REQUIRE_ALL=1).

mod common;

use assert_cmd::Command;
use fsdelta::queue::{JobState, Queue};
use predicates::prelude::*;
use std::path::Path;

use common::TINY_FILES100 as TINY;

use common::{fleet_cmd, fleet_scratch};

/// A canary whose one metric the test sets: `level` plus 0, 1 or 2 (a deterministic jitter,
/// from a counter of the canary's samples, so that the noise is not zero).
fn canary_suite(work: &Path) -> String {
    let w = work.display();
    format!(
        r#"name = "drift"
[[test]]
name = "level"
workload = "command"
command = "n=$(cat {w}/count); echo $((n + 1)) > {w}/count; echo \"v $(( $(cat {w}/level) + n % 3 ))\""
[[test.metric]]
name = "v"
regex = 'v (\d+)'
unit = "count"
direction = "higher"
"#
    )
}

fn agent(url: &str, work: &Path, extra: &[&str]) -> Command {
    let mut c = fleet_cmd(url, work);
    c.args([
        "agent",
        "--no-drop-caches",
        "--heartbeat",
        "1",
        "--name",
        "box",
    ])
    .arg("--canary")
    .arg(work.join("canary.toml"))
    .arg("--target")
    .arg(work)
    .args(extra);
    c
}

fn count(work: &Path) -> u32 {
    std::fs::read_to_string(work.join("count"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn state(url: &str, id: i64) -> JobState {
    Queue::open(url).unwrap().job(id).unwrap().state
}

#[test]
fn an_agent_whose_canary_drifts_stops_taking_jobs_until_cleared() {
    let Some(db) = fleet_scratch() else { return };
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let url = db.url.as_str();
    std::fs::write(w.join("tiny.toml"), TINY).unwrap();
    std::fs::write(w.join("canary.toml"), canary_suite(w)).unwrap();
    std::fs::write(w.join("count"), "0\n").unwrap();
    std::fs::write(w.join("level"), "1000\n").unwrap();
    for i in 1..=5 {
        fleet_cmd(url, w)
            .args(["submit", "--suite", "tiny.toml", "-n", "1", "--label"])
            .arg(format!("j{i}"))
            .assert()
            .success();
    }
    // Three jobs, each after a canary: the canaries build the history.
    agent(url, w, &["--max-jobs", "3"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "learning: 2 of 3 earlier canaries",
        ));
    assert_eq!(count(w), 9, "three canaries of three samples");
    for id in 1..=3 {
        assert_eq!(state(url, id), JobState::Done);
    }
    // A steady canary: the job runs.
    agent(url, w, &["--once"]).assert().success().stderr(
        predicate::str::contains("canary steady").and(predicate::str::contains("job 4: done")),
    );
    // The canary drifts to half its value: the machine marks itself unhealthy, says why and
    // how to clear it, and takes no job.
    std::fs::write(w.join("level"), "500\n").unwrap();
    agent(url, w, &["--once"]).assert().success().stderr(
        predicate::str::contains("box marked unhealthy: canary moved: level/v -")
            .and(predicate::str::contains("fsdelta machines clear box"))
            .and(predicate::str::contains("claimed").not()),
    );
    assert_eq!(state(url, 5), JobState::Queued);
    // Back to normal by itself does not matter: it is unhealthy until cleared, runs no canary
    // and takes no job.
    std::fs::write(w.join("level"), "1000\n").unwrap();
    let before = count(w);
    agent(url, w, &["--once"]).assert().success().stderr(
        predicate::str::contains("box is unhealthy since")
            .and(predicate::str::contains("canary moved"))
            .and(predicate::str::contains("claimed").not()),
    );
    assert_eq!(count(w), before, "an unhealthy machine runs no canary");
    assert_eq!(state(url, 5), JobState::Queued);
    fleet_cmd(url, w).arg("machines").assert().success().stdout(
        predicate::str::contains("box").and(predicate::str::contains("UNHEALTHY: canary moved")),
    );
    fleet_cmd(url, w)
        .arg("jobs")
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "machines: box UNHEALTHY (canary moved",
        ));
    // The owner clears it; its next canary is steady and it takes the job.
    fleet_cmd(url, w)
        .args(["machines", "clear", "box", "--note", "disk replaced"])
        .assert()
        .success()
        .stdout("box cleared: it takes jobs again\n");
    agent(url, w, &["--once"]).assert().success().stderr(
        predicate::str::contains("canary steady").and(predicate::str::contains("job 5: done")),
    );
    fleet_cmd(url, w).arg("machines").assert().success().stdout(
        predicate::str::contains("healthy").and(predicate::str::contains("UNHEALTHY").not()),
    );
    fleet_cmd(url, w)
        .args(["machines", "clear", "nobody"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no machine named 'nobody'"));
}
