//! `compare` says beside an unchanged or inconclusive headline metric what this machine detects
//! there, from its newest calibration (issue 38 item 1), through the real binary: a command test
//! whose values cycle 1000, 1050, 1100 (a known CV of about 4.8 %) is calibrated, run twice, and
//! compared; the phrase is the one `compare::power` gives for those values with 3 runs a side, in
//! the text, the one-table form (a note), Markdown (a footnote), JSON and the HTML report's
//! reason cell. Without a calibration
//! nothing is said. The calibration's values have a history (`history --label-glob calibrate`).

mod common;

use fsdelta::compare::power::{self, Noise};
use fsdelta::compare::verdict::{Margins, MetricClass};
use predicates::prelude::*;

#[test]
fn compare_names_what_the_calibrated_machine_detects_beside_an_unresolved_headline() {
    let env = common::Env::new();
    let (work, suite) = common::cycling_suite(&env);
    let run = |label: &str| {
        env.cmd()
            .args(["run", "-n", "3", "--quiet", "--no-drop-caches"])
            .args(["--label", label, "--suite"])
            .arg(&suite)
            .arg("--target")
            .arg(&work)
            .assert()
            .success();
    };
    // Before any calibration: runs 1 and 2 compare without the phrase.
    run("before");
    run("before");
    let compare = |format: &str, a: &str, b: &str| {
        let out = env
            .cmd()
            .args(["compare", "--format", format, a, b])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let text = compare("text", "1", "2");
    assert!(!text.contains("this machine detects"), "{text}");
    env.cmd()
        .args([
            "calibrate",
            "-n",
            "3",
            "--runs",
            "2",
            "--quiet",
            "--no-drop-caches",
        ])
        .arg("--suite")
        .arg(&suite)
        .arg("--target")
        .arg(&work)
        .assert()
        .success();
    run("after");
    run("after");
    let values = [1000.0, 1050.0, 1100.0];
    let noise = Noise::pooled(&[&values, &values]).unwrap();
    let effect =
        power::detectable_effect(noise, 3, MetricClass::Throughput, 1, &Margins::default());
    let phrase = power::detects_phrase(3, effect);
    assert!(phrase.contains("% or more"), "{phrase}");

    // text: the phrase under the row (wrapped at 80 columns: compare it unwrapped)
    let text = compare("text", "5", "6");
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("v "))
        .unwrap_or_else(|| panic!("no row for v:\n{text}"));
    // the same values on both sides, 3 runs a side at CV 4.8 %: not resolved
    assert!(row.ends_with('?') || row.ends_with("unchanged"), "{row}");
    assert!(flat.contains(&phrase), "{phrase} missing:\n{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");

    // the one-table form: the mark carries a note number, the note the phrase
    let table = compare("table", "5", "6");
    let flat = table.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains(&phrase), "{phrase} missing:\n{table}");
    let row = table
        .lines()
        .find(|l| l.split_whitespace().take(2).eq(["level", "v"]))
        .unwrap_or_else(|| panic!("no row for level v:\n{table}"));
    assert!(
        row.trim_end().ends_with("?1") || row.trim_end().ends_with("=1"),
        "{row}"
    );
    assert!(table.lines().all(|l| l.chars().count() <= 80), "{table}");

    // Markdown: a footnote
    let md = compare("markdown", "5", "6");
    assert!(md.contains(&phrase), "{phrase} missing:\n{md}");

    // JSON: the row's `detects`
    let json = common::json_of(compare("json", "5", "6").as_bytes());
    let m = &json["metrics"][0];
    assert_eq!(m["metric"], "v", "{json}");
    assert_eq!(m["detects"].as_str(), Some(phrase.as_str()), "{json}");

    // The HTML report: the phrase in the row's reason cell
    let html = env.path("r.html");
    env.cmd()
        .args(["report", "5", "6", "-o"])
        .arg(&html)
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains(&phrase), "no {phrase} in the report");

    // The calibration's values are a history: its two runs, nothing else.
    env.cmd()
        .args(["history", "--test", "level", "--metric", "v"])
        .args(["--label-glob", "calibrate"])
        .assert()
        .success()
        .stdout(predicate::str::contains("calibrate"))
        .stdout(predicate::str::contains("before").not())
        .stdout(predicate::str::contains("after").not());
}
