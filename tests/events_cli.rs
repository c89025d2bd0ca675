//! `fsdelta run --events`: tracepoint counts of a workload whose count is known, on an ext4
//! loop mount of the test's own, and an unknown event failing before any run is recorded.
//!
//! Needs root (loop devices, mount, perf_event_open on every CPU), mkfs.ext4 and a kernel with
//! tracefs: skipped with the reason otherwise, unless FSDELTA_REQUIRE_ALL=1.

mod common;

use common::{fsdelta, is_root, require};
use std::path::{Path, PathBuf};
use std::process::Command;

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn can_run() -> bool {
    require(is_root(), "root (loop devices, mount, perf_event_open)")
        && require(
            have("mkfs.ext4") && have("losetup"),
            "mkfs.ext4 and losetup (Debian packages e2fsprogs, mount)",
        )
        && require(
            Path::new("/sys/kernel/tracing").is_dir(),
            "a kernel with tracefs (/sys/kernel/tracing)",
        )
}

/// An ext4 image on a loop device of its own, mounted on `mnt`; unmounted and detached on drop.
struct Ext4Loop {
    dir: tempfile::TempDir,
    dev: String,
}

impl Ext4Loop {
    fn new() -> Ext4Loop {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("ext4.img");
        std::fs::File::create(&img)
            .unwrap()
            .set_len(256 << 20)
            .unwrap();
        let ok = |c: &mut Command| {
            let o = c.output().unwrap();
            assert!(
                o.status.success(),
                "{c:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            String::from_utf8(o.stdout).unwrap().trim().to_string()
        };
        ok(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&img));
        let dev = ok(Command::new("losetup").args(["-f", "--show"]).arg(&img));
        let me = Ext4Loop { dir, dev };
        std::fs::create_dir(me.mnt()).unwrap();
        ok(Command::new("mount").arg(&me.dev).arg(me.mnt()));
        me
    }

    fn mnt(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }

    /// The device number as the kernel's tracepoints print it: MKDEV(major, minor) =
    /// major << 20 | minor (not glibc's encoding of st_rdev).
    fn kernel_dev(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        let rdev = std::fs::metadata(&self.dev).unwrap().rdev();
        let (major, minor) = (rustix::fs::major(rdev), rustix::fs::minor(rdev));
        (u64::from(major) << 20) | u64::from(minor)
    }
}

impl Drop for Ext4Loop {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.mnt()).status();
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

/// The event metrics of every sample of the latest run: (test, repetition, name, value).
fn event_metrics(db: &Path) -> Vec<(String, u64, String, f64)> {
    let v = common::export_latest(fsdelta(db));
    let mut got = Vec::new();
    for s in v["runs"][0]["samples"].as_array().unwrap() {
        assert_eq!(s["status"], "ok", "{s}");
        for m in s["metrics"].as_array().unwrap() {
            let name = m["name"].as_str().unwrap();
            if name.starts_with("event:") {
                assert_eq!(m["unit"], "count");
                assert_eq!(m["direction"], "neutral");
                got.push((
                    s["test"].as_str().unwrap().to_string(),
                    s["repetition"].as_u64().unwrap(),
                    name.to_string(),
                    m["value"].as_f64().unwrap(),
                ));
            }
        }
    }
    got
}

/// fs_mark (native) creates 37 new files of 20 KiB in 4 KiB write()s (`-s 20480 -w 4096`) with
/// no sync: 185 buffered, page-aligned 4 KiB writes into fresh delalloc ext4 files, each of
/// which calls ext4_da_write_begin exactly once (one page per write). The count is filtered on
/// the loop device's number, so writes by other processes to other ext4 filesystems (this
/// machine's root is ext4) are not counted, and it is enabled only while the workload runs,
/// so fsdelta's own writes are not either: the count equals 185 in every sample.
#[test]
fn ext4_da_write_begin_counts_every_buffered_4k_write() {
    if !can_run() {
        return;
    }
    let fs = Ext4Loop::new();
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("db.sqlite");
    let suite = work.path().join("events.toml");
    std::fs::write(
        &suite,
        "[[test]]\nname = \"w4k\"\nworkload = \"fsmark\"\nargs = \"-s 20480 -w 4096 -n 37 -t 1 -S 0\"\nevents = [\"ext4:ext4_da_write_begin\"]\n\n[[test]]\nname = \"w4k-wide\"\nworkload = \"fsmark\"\nargs = \"-s 8192 -w 4096 -n 50 -t 2 -S 0\"\n\n[[test]]\nname = \"w4k-again\"\nworkload = \"fsmark\"\nargs = \"-s 4096 -w 4096 -n 25 -t 1 -S 0\"\n",
    )
    .unwrap();
    let filter = format!("ext4:ext4_da_write_begin:dev == {}", fs.kernel_dev());
    fsdelta(&db)
        .env("FSDELTA_STATE_FILE", work.path().join("state"))
        .arg("run")
        .arg("--suite")
        .arg(&suite)
        .arg("--target")
        .arg(fs.mnt())
        .args([
            "-n",
            "2",
            "--events",
            "writeback:writeback_start,ext4:ext4_da_write_*",
        ])
        .args(["--events-filter", &filter])
        .assert()
        .success();
    let got = event_metrics(&db);
    let count = |test: &str, rep: u64, name: &str| {
        got.iter()
            .find(|(t, r, n, _)| t == test && *r == rep && n == name)
            .map(|g| g.3)
            .unwrap_or_else(|| panic!("no {name} in {test} rep {rep}: {got:?}"))
    };
    for rep in 1..=2 {
        // The test's own `events` and the run's --events glob name this event twice: one count.
        assert_eq!(count("w4k", rep, "event:ext4:ext4_da_write_begin"), 185.0);
        // 50 files of 8 KiB in 4 KiB writes from 2 threads: 2 x 50 x 2 writes.
        assert_eq!(
            count("w4k-wide", rep, "event:ext4:ext4_da_write_begin"),
            200.0
        );
        // Same tracepoints as w4k-wide, so the same counters, reset before each sample.
        assert_eq!(
            count("w4k-again", rep, "event:ext4:ext4_da_write_begin"),
            25.0
        );
        // The glob expanded over the group, and --events counts for every test.
        for t in ["w4k", "w4k-wide"] {
            count(t, rep, "event:ext4:ext4_da_write_end");
            count(t, rep, "event:writeback:writeback_start");
        }
    }
    let show = fsdelta(&db).args(["show", "latest"]).output().unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(show.contains("event:ext4:ext4_da_"), "{show}");
}

#[test]
fn an_unknown_event_fails_before_any_run_with_the_close_matches() {
    if !can_run() {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("db.sqlite");
    let out = fsdelta(&db)
        .env("FSDELTA_STATE_FILE", work.path().join("state"))
        .args(["run", "--suite", "quick", "--target"])
        .arg(work.path())
        .args(["--events", "kmem:kmalloc,ext4:ext4_da_write_begn"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "unknown event 'ext4:ext4_da_write_begn'; did you mean ext4:ext4_da_write_begin"
        ),
        "{err}"
    );
    let out = fsdelta(&db)
        .args(["run", "--suite", "quick", "--target"])
        .arg(work.path())
        .args(["--events", "ext4_da_write_begin"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no ':' between group and name"),
        "{out:?}"
    );
    // Nothing was recorded: no run, no sample.
    let list = fsdelta(&db).arg("list").output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(!list.contains("quick"), "{list}");
}

/// Event counts are shown everywhere a metric is, as neutral counts: `compare` gives their
/// difference and never a verdict (a count that doubles exits 0), `history` lists each run's
/// count, and the report draws them. Two runs of a test differing only in the number of files:
/// 185 buffered 4 KiB writes against 370.
#[test]
fn event_counts_are_shown_by_compare_history_and_report_and_never_judged() {
    if !can_run() {
        return;
    }
    let fs = Ext4Loop::new();
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("db.sqlite");
    let suite = work.path().join("events.toml");
    let filter = format!("ext4:ext4_da_write_begin:dev == {}", fs.kernel_dev());
    for (label, files) in [("a", 37), ("b", 74), ("c", 74)] {
        std::fs::write(
            &suite,
            format!(
                "[[test]]\nname = \"w4k\"\nworkload = \"fsmark\"\nargs = \"-s 20480 -w 4096 -n {files} -t 1 -S 0\"\n"
            ),
        )
        .unwrap();
        fsdelta(&db)
            .env("FSDELTA_STATE_FILE", work.path().join("state"))
            .args(["run", "--quiet", "-n", "2", "--label", label, "--suite"])
            .arg(&suite)
            .arg("--target")
            .arg(fs.mnt())
            .args(["--events", "ext4:ext4_da_write_begin"])
            .args(["--events-filter", &filter])
            .assert()
            .success();
    }
    const EV: &str = "event:ext4:ext4_da_write_begin";
    // compare: the difference, not judged; alone it cannot fail the comparison.
    let o = fsdelta(&db)
        .args(["compare", "1", "2", "--metric", EV, "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = doc["metrics"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{doc}");
    let row = &rows[0];
    assert_eq!(row["metric"], EV);
    assert_eq!(row["verdict"], "not_judged", "{row}");
    let text = serde_json::to_string(row).unwrap();
    assert!(text.contains("185") && text.contains("370"), "{text}");
    assert!(text.contains("100"), "a +100 % difference: {text}");
    // Listed by the plain text compare too (no --all needed: the counts were asked for).
    let o = fsdelta(&db).args(["compare", "1", "2"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("event:ext4:ext4_da_wr"))
        .unwrap_or_else(|| panic!("no event row in compare: {text}"));
    assert!(
        line.contains("185") && line.contains("370") && line.contains("+100.0%"),
        "{line}"
    );
    assert!(
        !line.contains("REGRESSED") && !line.contains("improved"),
        "{line}"
    );
    // history: one point per run, its median count.
    let o = fsdelta(&db)
        .args([
            "history", "--test", "w4k", "--metric", EV, "--format", "json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let h = String::from_utf8_lossy(&o.stdout);
    assert!(
        h.contains("185") && h.matches("370").count() >= 2,
        "three runs, 185 then 370 twice: {h}"
    );
    // the report: the metric drawn in its test's diff chart, with both counts.
    let out = work.path().join("r.html");
    fsdelta(&db)
        .args(["report", "1", "2", "-o"])
        .arg(&out)
        .assert()
        .success();
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains(EV), "the report lacks {EV}");
    // It leads its test's section (before the folded other metrics), as in compare's text.
    let section = &html[html.find("<h2>w4k ").unwrap()..];
    let fold = section.find("<details class=\"rest\">").unwrap();
    assert!(
        section[..fold].contains(&format!("<g><title>{EV}")),
        "{EV} is folded away"
    );
    let chart_row = html
        .split("<g><title>")
        .find(|t| t.starts_with(EV))
        .unwrap_or_else(|| panic!("no chart row of {EV}"));
    assert!(
        chart_row.contains("185") && chart_row.contains("370"),
        "{chart_row}"
    );
}

/// When tracefs is not mounted, `run --events` mounts it recorded in the state file (as every
/// mount fsdelta makes) and unmounts it at the end, clearing the entry. The test runs fsdelta in
/// a private mount namespace of its own where tracefs (and debugfs) are unmounted first, so the
/// machine's tracefs is never touched; the workload copies the state file while the run goes on.
#[test]
fn events_mount_tracefs_recorded_and_undo_it_at_the_end() {
    if !(can_run() && require(have("unshare"), "unshare (Debian package util-linux)")) {
        return;
    }
    let tmp = tempfile::tempdir_in("/var/tmp").unwrap();
    let state = tmp.path().join("state/leftovers.json");
    let seen = tmp.path().join("seen.json");
    let suite = tmp.path().join("suite.toml");
    std::fs::write(
        &suite,
        format!(
            "[[test]]\nname = \"look\"\nworkload = \"command\"\ncommand = \"cat $FSDELTA_STATE_FILE > {}\"\n",
            seen.display()
        ),
    )
    .unwrap();
    let target = tmp.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let script = format!(
        "umount -l /sys/kernel/tracing 2>/dev/null; umount -l /sys/kernel/debug 2>/dev/null; \
         test -d /sys/kernel/tracing/events && exit 99; \
         exec {} run -n 1 --quiet --events raw_syscalls:sys_enter --suite {} --target {}",
        assert_cmd::cargo::cargo_bin("fsdelta").display(),
        suite.display(),
        target.display()
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .env("FSDELTA_DB", tmp.path().join("r.sqlite"))
        .env("FSDELTA_STATE_FILE", &state)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let during: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    let entries = during["entries"].as_array().unwrap();
    assert!(
        entries
            .iter()
            .any(|e| e["kind"] == "mount" && e["target"] == "/sys/kernel/tracing"),
        "tracefs was not recorded while the run went on: {during}"
    );
    let after: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert_eq!(after["entries"], serde_json::json!([]), "{after}");
}
