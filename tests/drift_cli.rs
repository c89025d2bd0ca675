//! `compare` counts the drift between runs that the machine's calibration measured (issue 38):
//! through the real binary, a command test whose level alternates between 1000 and 1300 from
//! one run to the next (its repetitions 1 % apart within a run) makes two runs of the same
//! thing look 30 % apart. Before a calibration `compare` calls that improved, as the
//! repetitions alone say; `calibrate` (3 runs) then measures the drift (its table prints it,
//! as `compare::power::BetweenRuns` estimates it from the stored values), and the same
//! comparison is inconclusive, saying that it counted the drift and that repetitions cannot
//! resolve it.

mod common;

use fsdelta::compare::power::BetweenRuns;

#[test]
fn compare_counts_the_drift_between_runs_that_calibrate_measured() {
    let env = common::Env::new();
    // 3 repetitions a run: run r = n / 3 has level 1000 or 1300, its repetitions 1 % apart
    let (work, suite) = common::counting_suite(&env, "1000 + ((n / 3) % 2) * 300 + (n % 3) * 10");
    let quiet = ["-n", "3", "--quiet", "--no-drop-caches", "--suite"];
    for label in ["a", "b"] {
        env.cmd()
            .args(["run", "--label", label])
            .args(quiet)
            .arg(&suite)
            .arg("--target")
            .arg(&work)
            .assert()
            .success();
    }
    let compare = |format: &str| {
        let out = env
            .cmd()
            .args(["compare", "--format", format, "1", "2"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    // Before any calibration: the repetitions say +30 % at 1 % noise, improved.
    let json = common::json_of(compare("json").as_bytes());
    let m = &json["metrics"][0];
    assert_eq!(m["verdict"], "improved", "{json}");
    assert!(m.get("drift_pct").is_none(), "{json}");

    // calibrate: 3 runs (levels 1000, 1300, 1000), the drift in its table
    let out = env
        .cmd()
        .arg("calibrate")
        .args(quiet)
        .arg(&suite)
        .arg("--target")
        .arg(&work)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("runs 3 to 5, 3 repetitions each"), "{table}");
    let (lo, hi) = ([1000.0, 1010.0, 1020.0], [1300.0, 1310.0, 1320.0]);
    let drift = BetweenRuns::estimate(&[vec![&lo[..], &hi[..], &lo[..]]]).unwrap();
    assert_eq!(drift.pairs, 2);
    let pct = format!("{:.1} %", drift.pct());
    let row = table
        .lines()
        .find(|l| l.split_whitespace().take(3).eq(["scratch", "level", "v"]))
        .unwrap_or_else(|| panic!("no row for level/v:\n{table}"));
    assert!(row.contains(&pct), "{pct} missing: {row}");
    assert!(
        table.contains("from 2 pairs of consecutive calibration runs"),
        "{table}"
    );

    // The same comparison now counts the drift: inconclusive, and says why.
    let json = common::json_of(compare("json").as_bytes());
    let m = &json["metrics"][0];
    assert_eq!(m["verdict"], "inconclusive", "{json}");
    let got = m["drift_pct"].as_f64().unwrap();
    assert!((got - drift.pct()).abs() < 1e-9, "{got} {drift:?}");
    let reason = m["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!(
            "counts this machine's drift between runs (±{:.1} % a run, from its calibration's 2 run pairs)",
            drift.pct()
        )),
        "{reason}"
    );
    assert!(
        reason.contains("more repetitions will not resolve it"),
        "{reason}"
    );
    let text = compare("text");
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("counts this machine's drift between runs"),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
}
