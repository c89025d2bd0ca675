//! `fsdelta fio --readonly` writes nothing, as fio's: a job that writes or trims is refused
//! before anything runs, a file a read job would have to lay out (missing, or shorter than the
//! job) is fio's "refusing extend of file due to read-only" and stays as it was, and a read
//! job over an existing file runs with fio's counts and leaves the file's bytes alone.
mod common;

use common::{fio_counts, json_of, require_fio};
use std::process::Command;

fn fsdelta_fio(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fsdelta"))
        .arg("fio")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn readonly_lays_out_no_file_and_refuses_writers() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(d.path().join("w.fio"), "[wr]\nrw=randwrite\nsize=1m\n").unwrap();
    let o = fsdelta_fio(d.path(), &["--readonly", "w.fio"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("--readonly was given"),
        "{e}"
    );
    assert!(!d.path().join("wr.0.0").exists());

    std::fs::write(d.path().join("r.fio"), "[rd]\nrw=read\nsize=1m\n").unwrap();
    let o = fsdelta_fio(d.path(), &["--readonly", "r.fio"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("refusing extend of file due to read-only"),
        "{e}"
    );
    assert!(!d.path().join("rd.0.0").exists(), "a file was created");

    // A file shorter than the job is not extended either.
    std::fs::write(d.path().join("rd.0.0"), vec![7u8; 4096]).unwrap();
    let o = fsdelta_fio(d.path(), &["--readonly", "r.fio"]);
    assert!(!o.status.success());
    assert_eq!(
        std::fs::read(d.path().join("rd.0.0")).unwrap(),
        vec![7u8; 4096]
    );
}

#[test]
fn readonly_reads_an_existing_file_as_fio_and_leaves_it_alone() {
    if !require_fio() {
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let data: Vec<u8> = (0..1u32 << 20).map(|i| (i * 31 % 251) as u8).collect();
    std::fs::write(d.path().join("rd.0.0"), &data).unwrap();
    std::fs::write(
        d.path().join("r.fio"),
        "[rd]\nrw=randread\nbs=4k\nsize=1m\n",
    )
    .unwrap();
    let o = fsdelta_fio(d.path(), &["--readonly", "--output-format=json", "r.fio"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ours = json_of(&o.stdout);
    let f = Command::new("fio")
        .args(["--readonly", "--output-format=json", "r.fio"])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(f.status.success(), "{}", String::from_utf8_lossy(&f.stderr));
    assert_eq!(fio_counts(&ours, 0), fio_counts(&json_of(&f.stdout), 0));
    assert_eq!(std::fs::read(d.path().join("rd.0.0")).unwrap(), data);
}
