//! fio's verify format, end to end against real fio 3.33: for every verify= kind fsdelta
//! supports, a file written by fio verifies under `fsdelta fio`, a file written by fsdelta
//! verifies under fio, and a damaged block fails in both with fio's message naming file and
//! offset; verify_dump writes fio's .received/.expected files.
//! Skipped, saying why, without fio, unless FSDELTA_REQUIRE_ALL=1.

mod common;

use std::path::Path;
use std::process::Command;

const KINDS: &[&str] = &[
    "md5",
    "crc64",
    "crc32c",
    "crc32c-intel",
    "sha256",
    "sha1",
    "xxhash",
    "meta",
    "pattern\nverify_pattern=0xdeadbeef%o\"ab\"-3",
    "meta\nverify_pattern=0xaa555aa5\nverify_interval=512",
    "crc32c\nverify_offset=512",
    "md5\nverify_interval=1024",
];

fn jobs(kind: &str) -> (String, String) {
    let w = format!("[w]\nrw=write\nbs=4k\nsize=256k\nfilename=f\ndo_verify=0\nverify={kind}\n");
    let r = format!("[r]\nrw=read\nbs=4k\nsize=256k\nfilename=f\nverify={kind}\n");
    (w, r)
}

fn run(tool: &str, dir: &Path, job: &str) -> std::process::Output {
    std::fs::write(dir.join("job.fio"), job).unwrap();
    let mut c = if tool == "fio" {
        Command::new("fio")
    } else {
        let mut c = Command::new(env!("CARGO_BIN_EXE_fsdelta"));
        c.arg("fio");
        c
    };
    c.current_dir(dir).arg("job.fio").output().unwrap()
}

#[test]
fn files_written_by_one_tool_verify_under_the_other() {
    let fio = Command::new("fio").arg("--version").output().is_ok();
    if !common::require(fio, "fio 3.33 (/usr/bin/fio) to compare with") {
        return;
    }
    for kind in KINDS {
        let (w, r) = jobs(kind);
        for (writer, reader) in [("fio", "fsdelta"), ("fsdelta", "fio")] {
            let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            let o = run(writer, d.path(), &w);
            assert!(
                o.status.success(),
                "{writer} {kind}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            let o = run(reader, d.path(), &r);
            assert!(
                o.status.success(),
                "{reader} reading {writer}'s {kind}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
}

#[test]
fn a_damaged_block_fails_with_fios_message_and_dump() {
    let fio = Command::new("fio").arg("--version").output().is_ok();
    if !common::require(fio, "fio 3.33 (/usr/bin/fio) to compare with") {
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (w, r) = jobs("crc32c");
    assert!(run("fio", d.path(), &w).status.success());
    // One byte of the data of the block at 8192.
    let mut data = std::fs::read(d.path().join("f")).unwrap();
    data[8192 + 1000] ^= 0xff;
    std::fs::write(d.path().join("f"), &data).unwrap();
    let ours = run(
        "fsdelta",
        d.path(),
        &r.replace("verify=crc32c", "verify=crc32c\nverify_dump=1"),
    );
    let theirs = run("fio", d.path(), &r);
    assert!(!ours.status.success() && !theirs.status.success());
    let line = "crc32c: verify failed at file f offset 8192, length 4096";
    for (who, o) in [("fsdelta", &ours), ("fio", &theirs)] {
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(line), "{who}: {e}");
    }
    let received = std::fs::read(d.path().join("f.8192.received")).unwrap();
    let expected = std::fs::read(d.path().join("f.8192.expected")).unwrap();
    assert_eq!(received, &data[8192..12288]);
    // The expected block is the block as fio wrote it: only the damaged byte differs.
    let diff: Vec<usize> = (0..4096).filter(|&i| received[i] != expected[i]).collect();
    assert_eq!(diff, vec![1000]);
}

/// Per job: [write total_ios, write io_bytes, read total_ios].
fn counts(out: &[u8]) -> Vec<[u64; 3]> {
    let text = String::from_utf8_lossy(out);
    let v: serde_json::Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            [
                j["write"]["total_ios"].as_u64().unwrap(),
                j["write"]["io_bytes"].as_u64().unwrap(),
                j["read"]["total_ios"].as_u64().unwrap(),
            ]
        })
        .collect()
}

/// fill_device without size= on a 4 MiB tmpfs: both tools write until ENOSPC, count the failed
/// (and short) writes alike, and do not verify a job that filled the device.
#[test]
fn fill_device_ends_at_enospc_with_fios_counts() {
    let fio = Command::new("fio").arg("--version").output().is_ok();
    if !common::require(fio, "fio 3.33 (/usr/bin/fio) to compare with")
        || !common::require(common::is_root(), "root (to mount a small tmpfs)")
    {
        return;
    }
    let jobs = [
        "[w]\nrw=write\nbs=4k\nfill_device=1\nfilename=d\n",
        "[w]\nrw=write\nbs=64k\nfill_device=1\nfilename=d\nverify=crc32c\n",
        "[w]\nrw=write\nbs=64k\nfill_device=1\nfilename=d\nioengine=libaio\niodepth=4\n",
    ];
    for job in jobs {
        let mut got = Vec::new();
        for tool in ["fio", "fsdelta"] {
            let fs = common::Tmpfs::mount("4m");
            // The job file and the output live outside the filesystem that fills up.
            let jobdir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            let jf = jobdir.path().join("job.fio");
            std::fs::write(&jf, job).unwrap();
            let mut c = if tool == "fio" {
                Command::new("fio")
            } else {
                let mut c = Command::new(env!("CARGO_BIN_EXE_fsdelta"));
                c.arg("fio");
                c
            };
            let o = c
                .current_dir(fs.path())
                .arg("--output-format=json")
                .arg(&jf)
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{tool} {job}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            got.push(counts(&o.stdout));
        }
        assert_eq!(got[1], got[0], "fsdelta vs fio: {job}");
    }
}
