//! What a sample left on disk, as `show`, `compare`, `history` and the HTML report display it
//! (issue 39): one run of btrfs with compress-force=zstd against no compression, on a loop image
//! each, of a fio job writing data that is three quarters zeros. `show` lists the on-disk
//! metrics under their own heading; `compare`'s text has an "on disk" block in which
//! `compress_ratio` is judged (improved) while it stays secondary (the exit code is the headline
//! metrics'); `history` of `compress_ratio` is a series like any other; the report has an
//! "On disk" section per test.
//!
//! Needs root, loop devices and mkfs.btrfs; without them it says why and passes, unless
//! FSDELTA_REQUIRE_ALL=1 (CI), which turns a skip into a failure.

mod common;

use common::{Setup, is_root, require};
use std::path::Path;

fn stdout(s: &Setup, args: &[&str]) -> (Option<i32>, String) {
    let out = s.cmd().args(args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.code() != Some(2),
        "{args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

/// The lines of `text` from the first that starts (trimmed) with `heading` to the next blank
/// one.
fn block<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with(heading))
        .take_while(|l| !l.trim().is_empty())
        .collect()
}

#[test]
fn show_compare_history_and_the_report_display_what_was_left_on_disk() {
    if !(require(is_root(), "root (mkfs, mount, loop devices)")
        && require(Path::new("/dev/loop-control").exists(), "loop devices")
        && require(
            fsdelta::site::mkfs::Mkfs::find(fsdelta::plan::config::FsKind::Btrfs).is_ok(),
            "mkfs.btrfs",
        ))
    {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("fsdelta-ondisk-display-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let s = Setup::in_dir(
        dir,
        "c.toml",
        "[[config]]\nname = \"plain\"\nfs = \"btrfs\"\ndevice = \"loop:1G\"\n\n\
         [[config]]\nname = \"zstd\"\nfs = \"btrfs\"\ndevice = \"loop:1G\"\nmount = \"compress-force=zstd\"\n",
        "s.toml",
        // As tests/ondisk_cli.rs: a file that stays, three quarters zeros, not preallocated.
        "[[test]]\nname = \"compressible\"\nworkload = \"fio\"\njob = \"\"\"\nrw=write\nbs=1m\nsize=32m\nbuffer_compress_percentage=75\nrefill_buffers=1\nfallocate=none\nend_fsync=1\n\"\"\"\n",
    );
    let config = s.p("c.toml").display().to_string();
    let suite = s.p("s.toml").display().to_string();
    let (code, _) = stdout(
        &s,
        &[
            "run", "-n", "3", "--quiet", "--config", &config, "--suite", &suite,
        ],
    );
    assert_eq!(code, Some(0));

    // show: the test's own metrics, then "on disk:" with compress_ratio, space and extents
    let (_, show) = stdout(&s, &["show", "latest"]);
    for config in ["plain", "zstd"] {
        let b = block(&show, &format!("compressible ({config})"));
        let at = b
            .iter()
            .position(|l| l.trim() == "on disk:")
            .unwrap_or_else(|| panic!("no on disk heading:\n{show}"));
        let (own, disk) = b.split_at(at);
        let name = |l: &&str| l.split_whitespace().next().unwrap_or("").to_string();
        let own: Vec<String> = own.iter().map(name).collect();
        let disk: Vec<String> = disk.iter().map(name).collect();
        assert!(own.contains(&"write_iops".to_string()), "{own:?}");
        for m in [
            "compress_ratio",
            "space_amplification",
            "write_amplification",
        ] {
            assert!(disk.contains(&m.to_string()), "{m} not on disk: {disk:?}");
            assert!(!own.contains(&m.to_string()), "{m} among the own: {own:?}");
        }
    }

    // compare: the "on disk" block judges compress_ratio, which does not set the exit code
    let (code, text) = stdout(&s, &["compare", "latest@plain", "latest@zstd"]);
    // The heading of the pair (a disturbance warning above it may name "compressible (plain)").
    let b = block(&text, "compressible (plain vs zstd)");
    let at = b
        .iter()
        .position(|l| l.trim_start().starts_with("on disk"))
        .unwrap_or_else(|| panic!("no on disk block:\n{text}"));
    let ratio = b[at..]
        .iter()
        .find(|l| l.trim_start().starts_with("compress_ratio"))
        .unwrap_or_else(|| panic!("no compress_ratio in the on disk block:\n{text}"));
    assert!(ratio.trim_end().ends_with("improved"), "{ratio}");
    assert!(
        b[..at]
            .iter()
            .all(|l| !l.trim_start().starts_with("compress_ratio")),
        "{text}"
    );
    // compression is no regression of the test: the exit code follows the headline
    let (_, json) = stdout(
        &s,
        &["compare", "latest@plain", "latest@zstd", "--format", "json"],
    );
    let doc = common::json_of(json.as_bytes());
    let row = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "compress_ratio")
        .unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(row["role"], "secondary", "{row}");
    let headline_regressed = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["role"] == "headline" && m["verdict"] == "regressed");
    assert_eq!(code, Some(i32::from(headline_regressed)), "{text}");

    // history: compress_ratio is a series (one run, its median above 2)
    let (code, hist) = stdout(
        &s,
        &[
            "history",
            "--test",
            "compressible",
            "--metric",
            "compress_ratio",
            "--config",
            "zstd",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, Some(0), "{hist}");
    let h = common::json_of(hist.as_bytes());
    let text = h.to_string();
    assert!(text.contains("compress_ratio"), "{text}");
    let medians: Vec<f64> = h["history"]["points"]
        .as_array()
        .unwrap_or_else(|| panic!("no points in {text}"))
        .iter()
        .filter_map(|p| p["median"].as_f64())
        .collect();
    assert_eq!(medians.len(), 1, "{text}");
    assert!(medians[0] > 2.0, "{text}");

    // the report: an On disk section with compress_ratio's row in its chart, role "on disk"
    let html = s.p("r.html");
    let (code, _) = stdout(
        &s,
        &[
            "report",
            "latest@plain",
            "latest@zstd",
            "-o",
            &html.display().to_string(),
        ],
    );
    assert_eq!(code, Some(0));
    let page = std::fs::read_to_string(&html).unwrap();
    let at = page
        .find("<h3>On disk</h3>")
        .unwrap_or_else(|| panic!("no On disk section"));
    let section = &page[at..];
    let end = section.find("</section>").unwrap_or(section.len());
    assert!(
        section[..end].contains("compress_ratio"),
        "{}",
        &section[..end]
    );
    assert!(
        page.contains("<td>on disk</td>"),
        "the verdicts table's role"
    );
}
