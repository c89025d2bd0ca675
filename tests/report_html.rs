//! End-to-end tests of `fsdelta report`: real runs into a temporary store, the report written by
//! the real binary, its structure checked (every test and judged metric drawn, every SVG
//! well-formed, nothing external), then the page opened in headless Chromium.
//!
//! How console errors are caught: Chromium runs with `--enable-logging=stderr --v=0`, which
//! prints every console message and uncaught exception of the page as a `:CONSOLE` line on
//! standard error; the report logs nothing itself, so any such line fails the test. Because that
//! relies on Chromium's log format, each run first opens a canary page with a deliberate
//! `console.error` and a thrown exception and requires both to be seen; a Chromium that stopped
//! printing them fails the test instead of letting it pass blind. A second run with `--dump-dom`
//! checks that the report's script ran to its end (it marks `<html data-script="ran">`).
//!
//! Without /usr/bin/chromium (Debian packages chromium and chromium-driver) the browser part is
//! skipped with a message, or fails when FSDELTA_REQUIRE_ALL=1. Set FSDELTA_REPORT_ARTIFACTS=DIR
//! to keep the report and its screenshot.

mod common;

use common::{fsdelta, require};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SVG_NS: &str = "http://www.w3.org/2000/svg";
const CHROMIUM: &str = "/usr/bin/chromium";

fn run(db: &Path, target: &Path, label: &str) {
    fsdelta(db)
        .args([
            "run",
            "--test",
            "emptyfiles",
            "-n",
            "2",
            "--quiet",
            "--label",
            label,
        ])
        .arg("--target")
        .arg(target)
        .assert()
        .success();
}

fn report(db: &Path, args: &[&str], out: &Path) -> String {
    let o = common::report(db, args, out);
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("wrote "));
    std::fs::read_to_string(out).unwrap()
}

use common::svgs;

/// Self-contained: no URL but the SVG namespace, no external script or stylesheet; every SVG
/// parses as XML.
fn check_self_contained(html: &str) {
    let stripped = html.replace(&format!("xmlns=\"{SVG_NS}\""), "");
    for bad in [
        "http://",
        "https://",
        "<script src",
        "<link",
        "url(",
        "@import",
        "//cdn",
    ] {
        assert!(!stripped.contains(bad), "the report contains {bad:?}");
    }
    let all = svgs(html);
    assert!(!all.is_empty());
    for s in all {
        if let Err(e) = roxmltree::Document::parse(s) {
            panic!("malformed SVG: {e}\n{}", &s[..s.len().min(400)]);
        }
    }
}

/// The texts of the SVG whose class contains `class` and whose label mentions `label`.
/// The texts of every `class` chart whose SVG mentions `label` (a test's diff chart is split in
/// two: the headline and changed metrics first, the others in a closed <details>).
fn svg_texts(html: &str, class: &str, label: &str) -> Vec<String> {
    let found: Vec<&str> = svgs(html)
        .into_iter()
        .filter(|s| s.contains(&format!("class=\"{class}\"")) && s.contains(label))
        .collect();
    assert!(!found.is_empty(), "no {class} chart for {label}");
    found
        .into_iter()
        .flat_map(|s| {
            let doc = roxmltree::Document::parse(s).unwrap();
            doc.descendants()
                .filter(|n| n.has_tag_name("text"))
                .filter_map(|n| n.text().map(str::to_string))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// (test, metric) of every judged metric, as `compare --all --format json` lists them.
fn judged(db: &Path, base: &str, cur: &str) -> Vec<(String, String)> {
    let o = fsdelta(db)
        .args(["compare", base, cur, "--all", "--format", "json"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["test"].as_str().unwrap().to_string(),
                m["metric"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The tests of this file one at a time: each measures runs, and the other's load would show
/// in its background figures.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn report_of_real_runs_is_complete_self_contained_and_renders_in_chromium() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.sqlite");
    let target = tmp.path().join("target");
    std::fs::create_dir(&target).unwrap();
    run(&db, &target, "base");
    run(&db, &target, "cur");

    let out = tmp.path().join("report.html");
    let html = report(&db, &["1", "2"], &out);
    check_self_contained(&html);
    assert!(html.contains("baseline</b> 1 (run 1, label base)"));
    assert!(html.contains("current</b> 2 (run 2, label cur)"));
    // Same machine and scratch directory on both sides: nothing recorded differs. The only line
    // allowed is the machine's background load (other processes' CPU share is measured, not
    // recorded configuration; a busy CI machine can make one side look loaded).
    if !html.contains("Nothing recorded differs between the sides") {
        let boxed = html
            .split("id=\"differences\"")
            .nth(1)
            .and_then(|d| d.split("</ol>").next())
            .unwrap_or("no differences box");
        let items: Vec<&str> = boxed.split("<li>").skip(1).collect();
        assert!(
            !items.is_empty() && items.iter().all(|i| i.starts_with("<b>the machine</b>")),
            "{boxed}"
        );
    }
    assert!(html.contains("id=\"summary\""));
    // Every judged metric of every test has a row in its test's diff chart.
    let metrics = judged(&db, "1", "2");
    assert!(metrics.len() > 20, "{metrics:?}");
    let texts = svg_texts(&html, "chart diff", "of emptyfiles");
    for (test, metric) in &metrics {
        assert_eq!(test, "emptyfiles");
        assert!(
            texts
                .iter()
                .any(|t| t == metric || t.starts_with(&format!("{metric} "))),
            "{metric} is not drawn"
        );
    }
    // Percentile curves of every stored latency histogram, both sides.
    for h in [
        "create_lat_ns",
        "write_lat_ns",
        "close_lat_ns",
        "unlink_lat_ns",
    ] {
        let t = svg_texts(&html, "card chart pct", &format!("percentiles of {h} "));
        assert!(t.iter().any(|t| t.starts_with("baseline")), "{h}");
        assert!(t.iter().any(|t| t.starts_with("current")), "{h}");
        assert!(
            t.iter().any(|t| t.contains("log scale")),
            "{h}: axis titles"
        );
    }
    // Two runs: no history yet.
    assert!(!html.contains("class=\"card chart hist\""));
    // The text table of `compare`, for mail.
    let text = fsdelta(&db).args(["compare", "1", "2"]).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    // (its first table row: the line under the first column header)
    let lines: Vec<&str> = text.lines().collect();
    let header = lines
        .iter()
        .position(|l| l.contains("95% interval"))
        .unwrap();
    let first_row = lines[header + 1];
    assert!(html.contains(first_row.trim_end()), "{first_row}");

    // A third run gives every metric a history of three points.
    run(&db, &target, "third");
    let html3 = report(&db, &["2", "3"], &tmp.path().join("r3.html"));
    check_self_contained(&html3);
    assert_eq!(
        html3.matches("class=\"card chart hist\"").count(),
        judged(&db, "2", "3").len(),
        "one history per metric"
    );
    assert!(html3.contains("3 runs, "));

    // A single-selection report.
    let one = report(&db, &["latest"], &tmp.path().join("one.html"));
    check_self_contained(&one);
    assert!(one.contains("class=\"chart spread\""));
    assert!(!one.contains("class=\"chart diff\""));

    if let Some(dir) = std::env::var_os("FSDELTA_REPORT_ARTIFACTS") {
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&out, Path::new(&dir).join("report.html")).unwrap();
    }
    if !require(
        Path::new(CHROMIUM).exists(),
        "/usr/bin/chromium (Debian packages chromium and chromium-driver)",
    ) {
        return;
    }
    browser_check(tmp.path(), &out);
}

/// Chromium's output of one headless page load.
struct Loaded {
    stdout: String,
    console: Vec<String>,
}

fn chromium(work: &Path, page: &Path, extra: &[&str]) -> Loaded {
    let profile = tempfile::tempdir_in(work).unwrap();
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start chromium");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let o = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).unwrap();
        s
    });
    let e = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).unwrap();
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("chromium did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (stdout, stderr) = (o.join().unwrap(), e.join().unwrap());
    assert!(status.success(), "chromium failed ({status}):\n{stderr}");
    Loaded {
        stdout,
        console: stderr
            .lines()
            .filter(|l| l.contains(":CONSOLE"))
            .map(str::to_string)
            .collect(),
    }
}

/// PNG width and height from its IHDR chunk.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert!(
        png.len() > 24 && png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "not a PNG"
    );
    let w = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(png[20..24].try_into().unwrap());
    (w, h)
}

fn browser_check(work: &Path, report: &Path) {
    // The canary: console detection must see a logged error and an uncaught exception.
    let canary = work.join("canary.html");
    std::fs::write(
        &canary,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>c</title></head><body>\
         <script>console.error(\"canary-error\"); undefinedCanaryFunction();</script></body></html>",
    )
    .unwrap();
    let c = chromium(work, &canary, &["--dump-dom"]);
    assert!(
        c.console.iter().any(|l| l.contains("canary-error"))
            && c.console
                .iter()
                .any(|l| l.contains("undefinedCanaryFunction")),
        "this Chromium no longer prints console messages on stderr; the console check would be blind: {:?}",
        c.console
    );

    // The report: a screenshot, and no console message at all.
    let shot: PathBuf = work.join("report.png");
    let l = chromium(
        work,
        report,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000",
        ],
    );
    assert!(l.console.is_empty(), "console messages: {:#?}", l.console);
    let png = std::fs::read(&shot).expect("a screenshot");
    assert_eq!(png_size(&png), (1280, 2000));
    // A blank 1280x2000 page compresses to a few kB; the report's text and charts do not.
    assert!(
        png.len() > 40_000,
        "screenshot of {} bytes looks empty",
        png.len()
    );
    if let Some(dir) = std::env::var_os("FSDELTA_REPORT_ARTIFACTS") {
        std::fs::copy(&shot, Path::new(&dir).join("report.png")).unwrap();
    }

    // The DOM after the script ran: it reached its end, and the page has its charts.
    let d = chromium(work, report, &["--dump-dom"]);
    assert!(d.console.is_empty(), "console messages: {:#?}", d.console);
    assert!(
        d.stdout.contains("data-script=\"ran\""),
        "the report's script did not finish"
    );
    assert!(d.stdout.contains("class=\"chart diff\""));
}

/// `show --raw` of `sel`: per sample id, its fs_mark rows (FSUse%, Count, Size, Files/sec, App
/// Overhead as fs_mark prints them).
fn raw_rows(db: &Path, sel: &str) -> Vec<(i64, Vec<Vec<String>>)> {
    let o = fsdelta(db).args(["show", sel, "--raw"]).output().unwrap();
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    let mut out = Vec::new();
    for part in text.split("\n== ").skip(1) {
        let Some(id) = part
            .split("(sample ")
            .nth(1)
            .and_then(|r| r.split(')').next())
            .and_then(|n| n.parse::<i64>().ok())
        else {
            continue;
        };
        let Some(table) = part.split("fs_mark iterations:\n").nth(1) else {
            continue;
        };
        let rows: Vec<Vec<String>> = table
            .lines()
            .skip(1)
            .take_while(|l| !l.trim().is_empty() && !l.starts_with("=="))
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect();
        out.push((id, rows));
    }
    out
}

/// The `<table class="iter">` of sample `id` in a report, its body rows as cell texts.
fn report_rows(html: &str, id: i64) -> Option<Vec<Vec<String>>> {
    let start = html.find(&format!("<table class=\"iter\" data-sample=\"{id}\">"))?;
    let table = &html[start..start + html[start..].find("</table>").unwrap()];
    let body = &table[table.find("<tbody>").unwrap() + 7..];
    Some(
        body.split("<tr>")
            .filter(|r| !r.is_empty())
            .map(|r| {
                r.split("<td class=\"num\">")
                    .skip(1)
                    .map(|c| c.split("</td>").next().unwrap().to_string())
                    .collect()
            })
            .collect(),
    )
}

#[test]
fn fs_mark_iterations_of_the_covered_samples_are_in_the_report() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.sqlite");
    let suite = tmp.path().join("s.toml");
    std::fs::write(
        &suite,
        "[[test]]\nname = \"loops\"\nworkload = \"fsmark\"\nargs = \"-s 0 -n 60 -t 1 -S 0 -L 3\"\n\
         [[test]]\nname = \"one\"\nworkload = \"fsmark\"\nargs = \"-s 0 -n 30 -t 1 -S 0\"\n\
         [[test]]\nname = \"say\"\nworkload = \"command\"\ncommand = \"echo 'took 5 ms'\"\n\
         [[test.metric]]\nname = \"t\"\nregex = 'took (\\d+) ms'\nunit = \"ms\"\ndirection = \"lower\"\n",
    )
    .unwrap();
    let target = tmp.path().join("target");
    std::fs::create_dir(&target).unwrap();
    common::run_labelled_twice(|| fsdelta(&db), &["base", "cur"], &suite, &target);
    let (raw1, raw2) = (raw_rows(&db, "1"), raw_rows(&db, "2"));
    // Per run: 2 repetitions of 2 fs_mark tests.
    assert_eq!(raw1.len(), 4, "{raw1:?}");
    assert_eq!(raw2.len(), 4, "{raw2:?}");

    let html = report(&db, &["1", "2"], &tmp.path().join("report.html"));
    check_self_contained(&html);
    // Every fs_mark sample of both runs has its table, with the rows `show --raw` prints:
    // iteration index, then FSUse%, Count, Size, Files/sec, App Overhead as fs_mark's.
    for (id, rows) in raw1.iter().chain(&raw2) {
        let got = report_rows(&html, *id).unwrap_or_else(|| panic!("no table of sample {id}"));
        assert_eq!(got.len(), rows.len(), "sample {id}");
        assert!(!rows.is_empty());
        for (i, (g, r)) in got.iter().zip(rows).enumerate() {
            assert_eq!(g[0], (i + 1).to_string(), "iteration index");
            assert_eq!(&g[1..6], &r[..], "sample {id} iteration {}", i + 1);
        }
    }
    assert_eq!(html.matches("<table class=\"iter\"").count(), 8);
    // -L 3 is open with its plot; the single-loop test is folded and has none.
    assert_eq!(html.matches("<details class=\"iters\" open>").count(), 1);
    assert_eq!(
        html.matches("<details class=\"iters\"><summary>").count(),
        1
    );
    let plots: Vec<&str> = svgs(&html)
        .into_iter()
        .filter(|s| s.contains("class=\"card chart iters\""))
        .collect();
    assert_eq!(plots.len(), 1);
    assert!(plots[0].contains("of loops on"));
    assert_eq!(
        plots[0].matches("<polyline").count(),
        4,
        "one line per sample"
    );
    // The command test keeps stdout, not fs_mark rows: no table in its section.
    let say = html.find("<h2>say ").unwrap();
    let say = &html[say..say + html[say..].find("</section>").unwrap()];
    assert!(!say.contains("class=\"iters\""));

    // Only the samples the report covers: run 2 alone, and --test narrows further.
    let one = report(&db, &["2"], &tmp.path().join("one.html"));
    for (id, _) in &raw1 {
        assert!(report_rows(&one, *id).is_none(), "sample {id} of run 1");
    }
    for (id, _) in &raw2 {
        assert!(report_rows(&one, *id).is_some(), "sample {id} of run 2");
    }
    let narrowed = report(
        &db,
        &["1", "2", "--test", "loops"],
        &tmp.path().join("n.html"),
    );
    assert_eq!(narrowed.matches("<table class=\"iter\"").count(), 4);
    assert!(!narrowed.contains("<details class=\"iters\"><summary>"));

    if !require(
        Path::new(CHROMIUM).exists(),
        "/usr/bin/chromium (Debian packages chromium and chromium-driver)",
    ) {
        return;
    }
    let page = tmp.path().join("report.html");
    let d = chromium(tmp.path(), &page, &["--dump-dom"]);
    assert!(d.console.is_empty(), "console messages: {:#?}", d.console);
    assert!(d.stdout.contains("data-script=\"ran\""));
    assert_eq!(d.stdout.matches("<table class=\"iter\"").count(), 8);
}
