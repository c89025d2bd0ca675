//! fio's terse output (`--minimal`, `--output-format=terse`, terse version 3): our line per job
//! must have fio 3.33's fields in fio's order, so that scripts that split fio's terse lines on
//! `;` and pick fields by position read ours unchanged. Runs Debian's fio on the same job.

mod common;

use assert_cmd::Command;
use std::path::Path;

const JOB: &str = "\
[global]
size=1m
bs=4k
thread
[w]
rw=write
description=sequential writer
[r]
rw=randread
ioengine=libaio
iodepth=4
";

/// A field's shape: its text when it is a name or a percentile key (`99.000000%=`), else its
/// number format (integer, or float with n decimals, with or without `%`).
fn shape(f: &str) -> String {
    if let Some((k, v)) = f.split_once('=') {
        assert!(v.parse::<u64>().is_ok(), "percentile value {f}");
        return format!("{k}=");
    }
    let (num, pct) = match f.strip_suffix('%') {
        Some(n) => (n, "%"),
        None => (f, ""),
    };
    if num.parse::<u64>().is_ok() {
        return format!("int{pct}");
    }
    if num.parse::<f64>().is_ok() {
        let decimals = num.split_once('.').map_or(0, |(_, d)| d.len());
        return format!("float{decimals}{pct}");
    }
    format!("str:{f}")
}

fn lines(out: &[u8]) -> Vec<Vec<String>> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| l.split(';').map(str::to_string).collect())
        .collect()
}

/// Header (5 fields), then read and write blocks of 41: io KiB, bw, iops, runtime, slat
/// (4), clat (4), 20 percentiles, lat (4), bw min/max/%/mean/dev.
const DIR_LEN: usize = 41;
const CPU_AT: usize = 5 + 2 * DIR_LEN;

#[test]
fn terse_lines_have_fios_fields() {
    if !common::require(Path::new("/usr/bin/fio").exists(), "/usr/bin/fio") {
        return;
    }
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(a.path().join("job.fio"), JOB).unwrap();
    std::fs::write(b.path().join("job.fio"), JOB).unwrap();
    let theirs = std::process::Command::new("/usr/bin/fio")
        .args(["--minimal", "job.fio"])
        .current_dir(a.path())
        .output()
        .unwrap();
    assert!(theirs.status.success(), "{theirs:?}");
    let ours = Command::cargo_bin("fsdelta")
        .unwrap()
        .args([
            "fio",
            "--output-format=terse",
            "--terse-version=3",
            "job.fio",
        ])
        .current_dir(b.path())
        .output()
        .unwrap();
    assert!(ours.status.success(), "{ours:?}");
    let (t, o) = (lines(&theirs.stdout), lines(&ours.stdout));
    assert_eq!(t.len(), 2, "{t:?}");
    assert_eq!(o.len(), 2, "{o:?}");
    for (t, o) in t.iter().zip(&o) {
        assert_eq!(t.len(), o.len(), "field count\nfio's: {t:?}\nours:  {o:?}");
        assert_eq!(o[0], "3");
        // name, groupid, error
        assert_eq!(t[2..5], o[2..5]);
        for (i, (tf, of)) in t.iter().zip(o).enumerate().skip(5) {
            assert_eq!(shape(tf), shape(of), "field {i}: fio's {tf}, ours {of}");
        }
        for d in 0..2 {
            let at = 5 + d * DIR_LEN;
            // io KiB is the job's size; a direction without I/O is all zeros in both.
            assert_eq!(t[at], o[at], "io KiB of direction {d}");
            if t[at] == "0" {
                assert_eq!(t[at..at + DIR_LEN], o[at..at + DIR_LEN]);
            }
        }
        // IO depth distribution: the count of I/Os per depth level.
        assert_eq!(t[CPU_AT + 5..CPU_AT + 12], o[CPU_AT + 5..CPU_AT + 12]);
    }
    // The description, last, only on the job that has one.
    assert_eq!(o[0].last().unwrap(), "sequential writer");
    assert_eq!(t[0].last(), o[0].last());
}

#[test]
fn terse_prints_before_json_as_in_fio() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("job.fio"),
        "[w]\nsize=64k\nbs=4k\nrw=write\n",
    )
    .unwrap();
    let out = Command::cargo_bin("fsdelta")
        .unwrap()
        .args(["fio", "--output-format=json,terse", "job.fio"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("3;"), "{text}");
    let json = &text[text.find('{').unwrap()..];
    assert!(json.contains("\"jobs\""), "{text}");
    let bad = Command::cargo_bin("fsdelta")
        .unwrap()
        .args(["fio", "--terse-version=2", "job.fio"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("terse version 3"));
}
