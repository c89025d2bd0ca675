//! fio's terse output (`--minimal`, `--output-format=terse`, `--terse-version=2|3|4|5`): our
//! line per job must have fio 3.33's fields in fio's order for each version, so that scripts
//! that split fio's terse lines on `;` and pick fields by position read ours unchanged. Runs
//! Debian's fio on the same job.

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

/// The lines of a terse output, each split on `;`. Version 2 prints a job's description on a
/// line of its own (starting with `;`): it is joined to its job's line.
fn lines(out: &[u8]) -> Vec<Vec<String>> {
    let mut joined: Vec<String> = Vec::new();
    for l in String::from_utf8_lossy(out).lines() {
        match joined.last_mut() {
            Some(prev) if l.starts_with(';') => prev.push_str(l),
            _ => joined.push(l.to_string()),
        }
    }
    joined
        .iter()
        .map(|l| l.split(';').map(str::to_string).collect())
        .collect()
}

/// Where a version's fields are: the header's length, a direction block's length (io KiB,
/// bw, iops, runtime, slat (4), clat (4), 20 percentiles, lat (4), bw min/max/%/mean/dev;
/// version 5 adds bw samples and iops min/max/mean/dev/samples) and how many directions
/// (read, write; trim in versions 2, 4 and 5).
fn layout(version: u32) -> (usize, usize, usize) {
    let header = if version == 2 { 4 } else { 5 };
    let dir_len = if version == 5 { 47 } else { 41 };
    let dirs = if version == 3 { 2 } else { 3 };
    (header, dir_len, dirs)
}

fn run_both(version: u32) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(a.path().join("job.fio"), JOB).unwrap();
    std::fs::write(b.path().join("job.fio"), JOB).unwrap();
    let flag = format!("--terse-version={version}");
    let theirs = std::process::Command::new("/usr/bin/fio")
        .args(["--minimal", &flag, "job.fio"])
        .current_dir(a.path())
        .output()
        .unwrap();
    assert!(theirs.status.success(), "{theirs:?}");
    let ours = Command::cargo_bin("fsdelta")
        .unwrap()
        .args(["fio", "--output-format=terse", &flag, "job.fio"])
        .current_dir(b.path())
        .output()
        .unwrap();
    assert!(ours.status.success(), "{ours:?}");
    (lines(&theirs.stdout), lines(&ours.stdout))
}

#[test]
fn terse_lines_have_fios_fields_in_every_version() {
    if !common::require(Path::new("/usr/bin/fio").exists(), "/usr/bin/fio") {
        return;
    }
    for version in 2..=5u32 {
        let (t, o) = run_both(version);
        let (header, dir_len, dirs) = layout(version);
        let cpu_at = header + dirs * dir_len;
        assert_eq!(t.len(), 2, "version {version}: {t:?}");
        assert_eq!(o.len(), 2, "version {version}: {o:?}");
        for (t, o) in t.iter().zip(&o) {
            assert_eq!(
                t.len(),
                o.len(),
                "version {version} field count\nfio's: {t:?}\nours:  {o:?}"
            );
            // version, then (from version 3 on) the version string (ours names fsdelta);
            // name, groupid, error.
            assert_eq!(o[0], version.to_string());
            assert_eq!(t[0], o[0]);
            assert_eq!(
                t[header - 3..header],
                o[header - 3..header],
                "version {version}"
            );
            for (i, (tf, of)) in t.iter().zip(o).enumerate().skip(header) {
                assert_eq!(
                    shape(tf),
                    shape(of),
                    "version {version} field {i}: fio's {tf}, ours {of}"
                );
            }
            for d in 0..dirs {
                let at = header + d * dir_len;
                // io KiB is the job's size; a direction without I/O is all zeros in both.
                assert_eq!(t[at], o[at], "version {version}: io KiB of direction {d}");
                if t[at] == "0" {
                    assert_eq!(t[at..at + dir_len], o[at..at + dir_len]);
                }
            }
            // usr, sys, ctx, majf, minf, then the IO depth distribution: the share of I/Os
            // per depth level.
            assert_eq!(
                t[cpu_at + 5..cpu_at + 12],
                o[cpu_at + 5..cpu_at + 12],
                "version {version} io depths"
            );
            // After the 10 µs and 12 ms latency buckets: the disk util (9 fields a device,
            // version 3 on) and the description. Version 2 has no disk util.
            let tail = cpu_at + 12 + 10 + 12;
            if version == 2 {
                assert!(o.len() <= tail + 1, "version 2 has no disk util: {o:?}");
            }
        }
        // The description, last, only on the job that has one.
        assert_eq!(o[0].last().unwrap(), "sequential writer");
        assert_eq!(t[0].last(), o[0].last());
    }
}

#[test]
fn terse_version_2_prints_the_description_on_its_own_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("job.fio"), JOB).unwrap();
    let out = Command::cargo_bin("fsdelta")
        .unwrap()
        .args(["fio", "--minimal", "--terse-version=2", "job.fio"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let l: Vec<&str> = text.lines().collect();
    assert_eq!(l.len(), 3, "{text}");
    assert!(l[0].starts_with("2;w;0;0;"), "{text}");
    assert_eq!(l[1], ";sequential writer");
    assert!(l[2].starts_with("2;r;0;0;"), "{text}");
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
        .args(["fio", "--terse-version=6", "job.fio"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("bad terse version"));
}
