//! End-to-end: a suite whose fio job writes lat/bw/iops logs keeps them with its sample (in the
//! sample's own work directory, not where fsdelta was started), and the HTML report draws a
//! chart per log with the lines the log holds.

mod common;

use common::svgs;

/// The tooltips of an SVG.
fn titles(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("malformed SVG: {e}"));
    doc.descendants()
        .filter(|n| n.has_tag_name("title"))
        .filter_map(|n| n.text().map(str::to_string))
        .collect()
}

/// Lines a chart's markers stand for: a marker is one log line unless its tooltip says
/// `(N lines, ...)`.
fn lines_drawn(svg: &str) -> u64 {
    titles(svg)
        .iter()
        .filter(|t| t.contains(" ms: "))
        .map(|t| match t.rsplit_once(" (") {
            Some((_, rest)) if rest.contains(" lines, ") => {
                rest.split(' ').next().unwrap().parse::<u64>().unwrap()
            }
            _ => 1,
        })
        .sum()
}

#[test]
fn a_suites_fio_logs_are_kept_and_drawn_in_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.sqlite");
    let suite = tmp.path().join("s.toml");
    // 1 MiB of 4 KiB writes at 2000 IOPS: 256 I/Os over about 128 ms, so 256 lines in each
    // per-I/O log and a few 50 ms buckets of the iops log.
    std::fs::write(
        &suite,
        "[[test]]\nname = \"logged\"\nworkload = \"fio\"\njob = \"\"\"\n[j]\nrw=randwrite\n\
         bs=4k\nsize=1m\nrate_iops=2000\nwrite_lat_log=x\nwrite_bw_log\nwrite_iops_log=x\n\"\"\"\n",
    )
    .unwrap();
    let target = tmp.path().join("target");
    let cwd = tmp.path().join("cwd");
    std::fs::create_dir(&target).unwrap();
    std::fs::create_dir(&cwd).unwrap();
    common::run_suite(&db, &["--no-drop-caches"], &suite, &target)
        .current_dir(&cwd)
        .assert()
        .success();
    // The logs went into the sample's work directory, not the current one.
    assert_eq!(std::fs::read_dir(&cwd).unwrap().count(), 0);

    let out = tmp.path().join("report.html");
    let o = common::report(&db, &["latest"], &out);
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("<h3>fio logs</h3>"), "no fio logs section");
    let charts: Vec<&str> = svgs(&html)
        .into_iter()
        .filter(|s| s.contains("class=\"card chart fiolog\""))
        .collect();
    // lat, clat, bw and iops; the synchronous engine's slat log is empty and not drawn.
    let mut files: Vec<&str> = charts
        .iter()
        .map(|s| {
            let i = s.find("aria-label=\"fio log ").unwrap() + 20;
            &s[i..i + s[i..].find(' ').unwrap()]
        })
        .collect();
    files.sort();
    assert_eq!(
        files,
        ["j_bw.1.log", "x_clat.1.log", "x_iops.1.log", "x_lat.1.log"]
    );
    for c in &charts {
        assert!(c.contains("of logged on"), "{}", &c[..200]);
        assert_eq!(
            c.matches("<polyline").count(),
            1,
            "one line: one sample, writes"
        );
        // Every I/O's line is behind the markers, in time buckets of writes.
        assert_eq!(lines_drawn(c), 256, "{}", &c[..200]);
        assert!(
            titles(c)
                .iter()
                .filter(|t| t.contains(" ms: "))
                .all(|t| t.contains(", write, ")),
            "{}",
            &c[..200]
        );
    }
    // A per-I/O iops log is drawn as I/Os per second, not as a line of ones.
    let iops = charts.iter().find(|c| c.contains("x_iops.1.log")).unwrap();
    assert!(iops.contains("I/Os per second"));
    assert!(
        !titles(iops)
            .iter()
            .filter(|t| t.contains(" ms: "))
            .any(|t| t.contains(" ms: 1 (")),
        "{}",
        &iops[..400]
    );
}
