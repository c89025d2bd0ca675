//! Response curves end to end (issue 41 item 3): a suite test swept over fio's iodepth (1, 4,
//! 16; a short size-bound io_uring job) runs on two configurations (two existing directories),
//! and `compare` names the curve and every point, in sweep order, in its text, markdown and
//! JSON (with three sides, once a side); the HTML report draws the curve.

mod common;

use common::Env;

const SUITE: &str = r#"
ondisk = false
[[test]]
name = "qd"
workload = "fio"
job = """
rw=randread
bs=4k
size=4m
io_size=8m
ioengine=io_uring
"""
sweep = { iodepth = [16, 1, 4] }
"#;

#[test]
fn a_swept_test_compares_as_one_curve_with_every_point() {
    let env = Env::new();
    for d in ["a", "b", "scratch"] {
        std::fs::create_dir(env.path(d)).unwrap();
    }
    let suite = env.write("curve.toml", SUITE);
    let cfg = env.config(&format!(
        "[[config]]\nname = \"a\"\nfs = \"dir\"\npath = \"{}\"\n\n[[config]]\nname = \"b\"\nfs = \"dir\"\npath = \"{}\"\n",
        env.path("a").display(),
        env.path("b").display()
    ));
    let run = env
        .cmd()
        .args([
            "run",
            "-n",
            "2",
            "--quiet",
            "--no-drop-caches",
            "--label",
            "c",
            "--suite",
        ])
        .arg(&suite)
        .arg("--config")
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let compare = |format: &str| {
        let o = env
            .cmd()
            .args(["compare", "latest@a", "latest@b", "--format", format])
            .output()
            .unwrap();
        assert_ne!(
            o.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    };
    // text: one sentence for the curve, the points in sweep order, and a block per point
    let text = compare("text");
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("curve qd (read, iodepth 1, 4, 16; 3 points, one false-discovery family): "),
        "{text}"
    );
    assert!(
        flat.contains("curves part at iodepth=") || flat.contains("the curves do not part"),
        "{text}"
    );
    assert!(flat.contains("; knee: baseline "), "{text}");
    for qd in [1, 4, 16] {
        assert!(
            text.contains(&format!("qd[iodepth={qd}] (a vs b)")),
            "{text}"
        );
    }
    // the default table and markdown carry the same sentence
    assert!(
        compare("table")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains("curve qd (read, iodepth 1, 4, 16;"),
    );
    assert!(compare("markdown").contains("- curve qd (read, iodepth 1, 4, 16;"));
    // `--test qd` selects every point of the curve, as `run --test qd` does.
    let only = env
        .cmd()
        .args(["compare", "latest@a", "latest@b", "--test", "qd"])
        .output()
        .unwrap();
    let only = String::from_utf8_lossy(&only.stdout);
    assert!(
        only.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains("curve qd (read, iodepth 1, 4, 16;"),
        "{only}"
    );
    // three sides: one sentence a side
    let o = env
        .cmd()
        .args([
            "compare", "latest@a", "latest@b", "latest@b", "--format", "text",
        ])
        .output()
        .unwrap();
    let many = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for side in [1, 2] {
        assert!(
            many.contains(&format!("side {side}, curve qd (read, iodepth 1, 4, 16;")),
            "{many}"
        );
    }
    // JSON: the curve, its points in order with both sides' centers and intervals, verdicts
    let v: serde_json::Value = serde_json::from_str(&compare("json")).unwrap();
    let curves = v["curves"].as_array().expect("a curves list");
    assert_eq!(curves.len(), 1, "{v:#}");
    let c = &curves[0];
    assert_eq!(c["test"], "qd");
    assert_eq!(c["param"], "iodepth");
    assert_eq!(c["direction"], "read");
    let points = c["points"].as_array().unwrap();
    let values: Vec<&str> = points
        .iter()
        .map(|p| p["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["1", "4", "16"]);
    for p in points {
        for side in ["baseline", "current"] {
            for what in ["throughput", "p99"] {
                let e = &p[side][what];
                let (lo, mid, hi) = (
                    e["lo"].as_f64().unwrap(),
                    e["center"].as_f64().unwrap(),
                    e["hi"].as_f64().unwrap(),
                );
                assert!(lo > 0.0 && lo <= mid && mid <= hi, "{p:#}");
            }
        }
        assert!(p["throughput"]["verdict"].is_string(), "{p:#}");
    }
    // every point's IOPS row is in one family of the curve: its q-value is set
    for m in v["metrics"].as_array().unwrap() {
        if m["metric"] == "read_iops" {
            assert!(m["q_value"].is_number(), "{m:#}");
        }
    }
    // the report draws it
    let html = env.path("r.html");
    let o = env
        .cmd()
        .args(["report", "latest@a", "latest@b", "-o"])
        .arg(&html)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    let curve = common::svgs(&page)
        .into_iter()
        .find(|s| s.contains("response curve of qd (read) over iodepth"))
        .expect("the curve's chart");
    assert_eq!(curve.matches("<polyline").count(), 2, "{curve}");
}
