//! End-to-end: `fsdelta run --engine external` and `engine = "external"` in a suite file run the
//! real tools and store the same metric names as the native engines; `fsdelta import fio-json`
//! brings fio's own JSON into the store, where it compares with a native run.
//!
//! Needs /usr/bin/fio and /usr/bin/fs_mark: skipped with the reason otherwise, unless
//! FSDELTA_REQUIRE_ALL=1.

mod common;

use common::{fsdelta, require};
use std::path::Path;

fn metric_names(doc: &serde_json::Value, test: &str) -> Vec<String> {
    doc["runs"][0]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["test"] == test)
        .flat_map(|s| s["metrics"].as_array().unwrap().iter())
        .map(|m| m["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_real_tools_run_as_engines_and_store_native_metric_names() {
    if !require(
        Path::new("/usr/bin/fio").exists(),
        "fio (apt-get install fio)",
    ) || !require(
        Path::new("/usr/bin/fs_mark").exists(),
        "fs_mark (apt-get install fsmark)",
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.sqlite");
    let suite = tmp.path().join("s.toml");
    std::fs::write(
        &suite,
        r#"
[[test]]
name = "fm"
workload = "fsmark"
args = "-s 4096 -n 200 -t 1 -S 0"
engine = "external"

[[test]]
name = "rr"
workload = "fio"
engine = "external"
job = """
rw=randread
bs=4k
size=8m
"""
"#,
    )
    .unwrap();
    let target = tmp.path().join("t");
    std::fs::create_dir(&target).unwrap();
    common::run_suite(&db, &["--label", "ext"], &suite, &target)
        .assert()
        .success();
    let doc = common::export_latest(fsdelta(&db));
    let samples = doc["runs"][0]["samples"].as_array().unwrap();
    for s in samples {
        assert!(
            s["workload"].as_str().unwrap().contains("real tool"),
            "{}",
            s["workload"]
        );
    }
    let fm = metric_names(&doc, "fm");
    assert!(fm.contains(&"files_per_sec".to_string()), "{fm:?}");
    assert!(fm.contains(&"app_overhead_us".to_string()), "{fm:?}");
    let rr = metric_names(&doc, "rr");
    assert!(rr.contains(&"read_iops".to_string()), "{rr:?}");
    assert!(rr.contains(&"read_clat_ns_p99".to_string()), "{rr:?}");

    // --engine external on the command line switches a built-in suite's fs_mark tests too.
    fsdelta(&db)
        .args([
            "run", "-n", "1", "--quiet", "--engine", "external", "--test", "bigdir", "--target",
        ])
        .arg(&target)
        .assert()
        .success();
    let doc = common::export_latest(fsdelta(&db));
    let s = &doc["runs"][0]["samples"][0];
    assert!(
        s["workload"].as_str().unwrap().starts_with("fs_mark"),
        "{}",
        s["workload"]
    );
    assert!(s["workload"].as_str().unwrap().contains("real tool"));
}

#[test]
fn the_real_fs_marks_rows_and_output_are_kept_and_shown() {
    if !require(
        Path::new("/usr/bin/fs_mark").exists(),
        "fs_mark (apt-get install fsmark)",
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.sqlite");
    let suite = tmp.path().join("s.toml");
    std::fs::write(
        &suite,
        "[[test]]\nname = \"fm\"\nworkload = \"fsmark\"\nargs = \"-s 0 -n 40 -t 1 -S 0 -L 3\"\n",
    )
    .unwrap();
    let target = tmp.path().join("t");
    std::fs::create_dir(&target).unwrap();
    common::run_suite(
        &db,
        &["--no-drop-caches", "--engine", "external"],
        &suite,
        &target,
    )
    .assert()
    .success();
    let text = common::show_raw(&db);
    let table = common::fs_mark_table(&text);
    let rows: Vec<&str> = table
        .lines()
        .skip(1)
        // Rows are right-aligned numbers; the next attachment's heading is not.
        .take_while(|l| l.starts_with(' '))
        .collect();
    assert_eq!(rows.len(), 3, "one row per -L loop: {text}");
    let counts: Vec<&str> = rows
        .iter()
        .map(|r| r.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(counts, ["40", "80", "120"], "{text}");
    // fs_mark's own output, as it printed it: its header and the same table.
    let stdout = text
        .split("\nstdout:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no stdout kept: {text}"));
    assert!(stdout.contains("Version 3.3"), "{text}");
    assert!(stdout.contains("FSUse%"), "{text}");
    assert!(text.contains("\nstderr:"), "{text}");

    // It was the real tool that ran.
    let doc = common::export_latest(fsdelta(&db));
    let s = &doc["runs"][0]["samples"][0];
    assert!(s["workload"].as_str().unwrap().contains("real tool"), "{s}");
}

#[test]
fn fio_json_is_imported_and_compares_with_a_native_run() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.sqlite");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/external/fio_randread.json");
    fsdelta(&db)
        .args(["import", "fio-json", "--label", "from-fio"])
        .arg(&fixture)
        .assert()
        .success()
        .stderr(predicates::str::contains("imported 1 fio job(s)"));
    let doc = common::export_latest(fsdelta(&db));
    assert_eq!(doc["runs"][0]["label"], "from-fio");
    assert_eq!(doc["runs"][0]["suite"], "import:fio-json");
    let s = &doc["runs"][0]["samples"][0];
    assert_eq!(s["config"], "imported");
    assert!(s["workload"].as_str().unwrap().starts_with("fio "));
    let iops = s["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "read_iops")
        .unwrap();
    assert_eq!(iops["unit"], "ops/s");
    assert_eq!(iops["direction"], "higher_is_better");
    assert!(iops["value"].as_f64().unwrap() > 0.0);

    // Not fio JSON: a clear error, nothing stored.
    let bad = tmp.path().join("bad.json");
    std::fs::write(&bad, "{\"hello\": 1}").unwrap();
    fsdelta(&db)
        .args(["import", "fio-json", "--label", "x"])
        .arg(&bad)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not fio JSON"));
    let out = fsdelta(&db).args(["list"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
}
