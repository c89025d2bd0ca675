//! read_iolog= replay (issue 41), end to end against real fio 3.33: logs fio 3.33 wrote
//! (tests/data/fio-iolog, PROVENANCE says how) and a hand-written version 2 log replay with
//! fio's counts, bytes, syncs, JSON keys and files on the sync engine, libaio and null; a log
//! `fsdelta fio` writes (write_iolog=) replays under both tools alike, and fio's under ours;
//! replay_redirect, replay_scale and replay_align move the I/O as in fio; and a log naming a
//! file the job may not touch (an absolute path, `..`, a symlink) is refused before any I/O.
//! Skipped, saying why, without fio, unless FSDELTA_REQUIRE_ALL=1.

mod common;

use std::path::Path;

const LOGS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fio-iolog");

const CAPTURED: &[&str] = &[
    "seq-write-libaio.log",
    "randrw-fsync.log",
    "two-files-bssplit.log",
    "write-fdatasync.log",
    "handmade-v2.log",
    "handmade-syncs-v2.log",
];

/// A directory with `log` copied in and the files the captured logs name, 1 MiB of zeros each.
fn stage(log: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::copy(Path::new(LOGS).join(log), d.path().join(log)).unwrap();
    for f in ["data", "f.0", "f.1"] {
        std::fs::write(d.path().join(f), vec![0u8; 1 << 20]).unwrap();
    }
    d
}

/// Per direction (total_ios, io_bytes), then the sync and datasync counts (fio's JSON `sync`
/// total_ios and its read `short_ios`, where fio 3.33 counts an fdatasync).
fn counts(v: &serde_json::Value) -> (Vec<(u64, u64)>, u64) {
    let syncs = v["jobs"][0]["sync"]["total_ios"].as_u64().unwrap_or(0);
    (common::fio_counts(v, 0), syncs)
}

/// The files a run left, without the job file and fio's verify state.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "job.fio" && !n.ends_with("-verify.state"))
        .collect();
    v.sort();
    v
}

/// The largest I/O a log's lines name.
fn largest_io(log: &str) -> u64 {
    std::fs::read_to_string(Path::new(LOGS).join(log))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // v2: FILE ACTION OFFSET LEN; v3: TIME FILE ACTION OFFSET LEN
            let at = f.iter().position(|w| *w == "read" || *w == "write")?;
            f.get(at + 2)?.parse::<u64>().ok()
        })
        .max()
        .unwrap_or(0)
}

/// Run `job` in a fresh stage of `log` under both tools; both succeed with the same counts,
/// JSON keys (but our clock keys) and files. Returns fio's counts.
fn as_fio(log: &str, job: &str) -> (Vec<(u64, u64)>, u64) {
    as_fio_within(log, job, 0)
}

/// [`as_fio`], the bytes of each direction allowed to differ by `slack`: the I/Os a job has in
/// flight when its log ends count without bytes in both tools, and with direct I/O on an
/// asynchronous engine how many are still in flight then depends on when the device completed
/// them, not on the tool (at most iodepth - 1 of them). The I/O counts and syncs are equal
/// whatever the timing.
fn as_fio_within(log: &str, job: &str, slack: u64) -> (Vec<(u64, u64)>, u64) {
    let mut got = Vec::new();
    for tool in ["fio", "fsdelta"] {
        let d = stage(log);
        let o = common::tool_json(tool, d.path(), job);
        assert!(
            o.status.success(),
            "{tool}: {job}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v = common::json_of(&o.stdout);
        got.push((counts(&v), common::key_set(&v), listing(d.path())));
    }
    let (ours, fio) = (&got[1], &got[0]);
    if slack == 0 {
        assert_eq!(ours.0, fio.0, "counts, fsdelta vs fio: {job}");
    } else {
        let ios = |c: &(Vec<(u64, u64)>, u64)| (c.0.iter().map(|d| d.0).collect::<Vec<_>>(), c.1);
        assert_eq!(
            ios(&ours.0),
            ios(&fio.0),
            "I/Os and syncs, fsdelta vs fio: {job}"
        );
        for (o, f) in ours.0.0.iter().zip(&fio.0.0) {
            assert!(
                o.1.abs_diff(f.1) <= slack,
                "bytes {} against fio's {} beyond the {slack} in flight at the log's end: {job}",
                o.1,
                f.1
            );
        }
    }
    assert_eq!(ours.2, fio.2, "files, fsdelta vs fio: {job}");
    let extra: Vec<&String> = ours
        .1
        .difference(&fio.1)
        .filter(|k| !common::OURS_ONLY_KEYS.contains(&k.as_str()))
        .collect();
    let missing: Vec<&String> = fio.1.difference(&ours.1).collect();
    assert!(
        extra.is_empty() && missing.is_empty(),
        "JSON keys: {job}: extra {extra:?} missing {missing:?}"
    );
    got.swap_remove(0).0
}

/// Every captured log replays with fio's counts on psync, libaio (fio's I/Os still in
/// flight when the log ends count without bytes: it reaps nothing once the log is done) and
/// null, with and without the log's times.
#[test]
fn fios_logs_replay_as_in_fio() {
    if !common::require_fio() {
        return;
    }
    for log in CAPTURED {
        for extra in [
            "replay_no_stall=1\n",
            "",
            "replay_no_stall=1\nioengine=libaio\niodepth=8\n",
            "replay_no_stall=1\nioengine=libaio\niodepth=2\ndirect=1\n",
            "replay_no_stall=1\nioengine=null\niodepth=4\n",
            "replay_no_stall=1\nread_iolog_chunked=1\n",
        ] {
            let job = format!("[r]\nread_iolog={log}\n{extra}");
            // direct=1 at iodepth 2: one I/O may be in flight when the log ends
            let slack = if extra.contains("direct=1") {
                largest_io(log)
            } else {
                0
            };
            let (c, _) = as_fio_within(log, &job, slack);
            assert!(c[0].0 + c[1].0 > 0, "{job}: nothing replayed");
        }
    }
}

/// replay_redirect sends every I/O to one file (the job file names it), replay_scale divides
/// the offsets and replay_align rounds them down, as in fio.
#[test]
fn redirect_scale_and_align_as_in_fio() {
    if !common::require_fio() {
        return;
    }
    for extra in [
        "replay_redirect=other\n",
        "replay_scale=4\n",
        "replay_align=65536\n",
        "replay_redirect=other\nreplay_scale=2\nreplay_align=8192\nioengine=libaio\niodepth=4\n",
    ] {
        let job = format!("[r]\nread_iolog=two-files-bssplit.log\nreplay_no_stall=1\n{extra}");
        as_fio("two-files-bssplit.log", &job);
    }
}

/// The round trip: `fsdelta fio` writes a log (write_iolog=), both tools replay it with the
/// same counts, which are the log's own lines; a log fio writes replays under ours likewise
/// (`fios_logs_replay_as_in_fio`).
#[test]
fn our_write_iolog_replays_under_both_tools() {
    if !common::require_fio() {
        return;
    }
    for writer in [
        "[w]\nrw=randrw\nbs=4k\nsize=256k\nfsync=8\nfilename=data\nwrite_iolog=ours.log\n",
        "[w]\nrw=randwrite\nbssplit=4k/50:64k/50\nsize=512k\nnrfiles=2\nfilename_format=f.$filenum\nwrite_iolog=ours.log\n",
    ] {
        let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let o = common::tool_run("fsdelta", d.path(), writer, &[]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = std::fs::read_to_string(d.path().join("ours.log")).unwrap();
        assert!(text.starts_with("fio version 3 iolog\n"), "{text}");
        let lines = |act: &str| {
            text.lines()
                .filter(|l| l.split_whitespace().nth(2) == Some(act))
                .count() as u64
        };
        let (reads, writes) = (lines("read"), lines("write"));
        let log = std::fs::read(d.path().join("ours.log")).unwrap();
        let mut got = Vec::new();
        for tool in ["fio", "fsdelta"] {
            let r = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            std::fs::write(r.path().join("ours.log"), &log).unwrap();
            for f in ["data", "f.0", "f.1"] {
                std::fs::write(r.path().join(f), vec![0u8; 1 << 20]).unwrap();
            }
            let o = common::tool_json(
                tool,
                r.path(),
                "[r]\nread_iolog=ours.log\nreplay_no_stall=1\n",
            );
            assert!(
                o.status.success(),
                "{tool}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            got.push(counts(&common::json_of(&o.stdout)));
        }
        assert_eq!(
            got[1], got[0],
            "fsdelta vs fio replaying our log of {writer}"
        );
        assert_eq!((got[0].0[0].0, got[0].0[1].0), (reads, writes), "{writer}");
    }
}

/// The safety rule: a log may only touch files the job names or relative paths inside the
/// directory it runs in. A log naming an absolute path, a path climbing out with `..`, or a
/// symlink in the run directory is refused before any I/O (exit status 2, the line named, how
/// to fix it), even when its first I/Os are to a file it may touch: that file is not created,
/// the outside file is not created or changed.
#[test]
fn a_log_naming_files_outside_the_job_is_refused_before_any_io() {
    let top = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let run = top.path().join("run");
    std::fs::create_dir(&run).unwrap();
    let outside = top.path().join("outside");
    std::fs::write(&outside, b"keep me").unwrap();
    std::os::unix::fs::symlink(&outside, run.join("link")).unwrap();
    let abs = outside.display().to_string();
    for (name, why) in [
        (abs.as_str(), "outside the directory the job runs in"),
        ("/etc/passwd", "outside the directory the job runs in"),
        ("/dev/sda", "outside the directory the job runs in"),
        ("../outside", "outside the directory the job runs in"),
        ("../new-file", "outside the directory the job runs in"),
        ("link", "a symlink"),
    ] {
        std::fs::write(
            run.join("evil.log"),
            format!(
                "fio version 2 iolog\nok add\nok open\nok write 0 4096\n{name} add\n{name} open\n{name} write 0 4096\n"
            ),
        )
        .unwrap();
        let o = common::tool_run(
            "fsdelta",
            &run,
            "[r]\nread_iolog=evil.log\nreplay_no_stall=1\n",
            &[],
        );
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {e}");
        assert!(
            e.contains(&format!("evil.log:5: the log names '{name}'")) && e.contains(why),
            "{name}: {e}"
        );
        assert!(e.contains("replay_redirect=FILE"), "{e}");
        assert!(!run.join("ok").exists(), "{name}: I/O before the refusal");
        assert!(!top.path().join("new-file").exists());
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep me");
    }
    // The job naming the file itself (filename=) is the user naming it.
    let named = format!("[r]\nread_iolog=evil.log\nreplay_no_stall=1\nfilename={abs}\n");
    std::fs::write(
        run.join("evil.log"),
        format!("fio version 2 iolog\n{abs} add\n{abs} open\n{abs} read 0 4\n"),
    )
    .unwrap();
    let o = common::tool_run("fsdelta", &run, &named, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(&outside).unwrap(), b"keep me");
}

/// What stays refused says so, naming the option: the blktrace binary format, a log without
/// fio's header, the log from standard input, verify with replay, and writes under
/// --readonly.
#[test]
fn what_replay_refuses_is_named() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut bt = 0x6561_7407u32.to_le_bytes().to_vec();
    bt.extend([0u8; 60]);
    std::fs::write(d.path().join("trace.bin"), bt).unwrap();
    std::fs::write(d.path().join("v1.log"), "data read 0 4096\n").unwrap();
    std::fs::copy(
        Path::new(LOGS).join("write-fdatasync.log"),
        d.path().join("w.log"),
    )
    .unwrap();
    for (job, opts, want) in [
        ("read_iolog=trace.bin\n", "", "blktrace binary trace"),
        ("read_iolog=v1.log\n", "", "not a fio iolog"),
        (
            "read_iolog=-\n",
            "",
            "read_iolog=- (the log from standard input)",
        ),
        (
            "read_iolog=w.log\nverify=md5\n",
            "",
            "verify= with read_iolog=",
        ),
        ("read_iolog=w.log\n", "--readonly", "--readonly"),
        (
            "read_iolog=w.log\nreplay_align=3000\n",
            "",
            "replay_align=3000 must be a power of 2",
        ),
    ] {
        let opts: Vec<&str> = if opts.is_empty() { vec![] } else { vec![opts] };
        let o = common::tool_run("fsdelta", d.path(), &format!("[r]\n{job}"), &opts);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && e.contains(want), "{job}: {e}");
    }
    assert!(!d.path().join("data").exists(), "a refused replay wrote");
}
