//! `atomic=1` as fio 3.33 runs it: its fixup_options turns on O_DIRECT whatever direct= or
//! buffered= said ("O_ATOMIC implies O_DIRECT"), and its open adds O_ATOMIC (040000000, which
//! Linux does not have and ignores: fio 3.33's own openat under strace is
//! `O_RDWR|O_CREAT|O_DIRECT|0x800000`). So the job is a direct one: the same counts, bytes,
//! JSON keys and files as fio's, and the data file opened with O_DIRECT.
mod common;

use common::{fio_counts, json_of, require_fio};
use std::process::Command;

/// A writer that says buffered=1 after atomic=1, and a reader after it.
const JOB: &str = "[global]\nsize=1m\nbs=4k\n[w]\natomic=1\nbuffered=1\nrw=randwrite\n[r]\nstonewall\natomic=1\nrw=read\n";

#[test]
fn atomic_jobs_count_and_leave_files_as_fios() {
    if !require_fio() {
        return;
    }
    let (ours, o, theirs, f) = common::run_ours_and_fio(JOB);
    let (oj, fj) = (json_of(&o.stdout), json_of(&f.stdout));
    for i in 0..2 {
        assert_eq!(fio_counts(&oj, i), fio_counts(&fj, i), "job {i}");
    }
    // 256 writes of 4 KiB, then 256 reads.
    assert_eq!(oj["jobs"][0]["write"]["total_ios"], 256);
    assert_eq!(oj["jobs"][1]["read"]["io_bytes"], 1 << 20);
    assert_eq!(oj["jobs"][0]["job options"]["atomic"], "1");
    common::assert_keys_as_fios(
        JOB,
        &common::json_keys(&o.stdout),
        &common::json_keys(&f.stdout),
    );
    let list = |d: &std::path::Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert_eq!(list(ours.path()), list(theirs.path()));
}

#[test]
fn atomic_opens_the_data_file_with_o_direct_despite_buffered() {
    let strace = Command::new("strace").arg("-V").output().is_ok();
    if !common::require(
        strace,
        "strace (to see the flags the data file is opened with)",
    ) {
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(
        d.path().join("a.fio"),
        "[w]\natomic=1\nbuffered=1\nrw=write\nsize=64k\n",
    )
    .unwrap();
    let o = Command::new("strace")
        .args(["-f", "-e", "trace=open,openat", "-o", "trace.txt"])
        .arg(env!("CARGO_BIN_EXE_fsdelta"))
        .args(["fio", "--output-format=json", "a.fio"])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let trace = std::fs::read_to_string(d.path().join("trace.txt")).unwrap();
    let opens: Vec<&str> = trace
        .lines()
        .filter(|l| l.contains("w.0.0\"") && l.contains("O_RDWR"))
        .collect();
    assert!(!opens.is_empty(), "no read-write open of w.0.0:\n{trace}");
    for l in &opens {
        assert!(l.contains("O_DIRECT"), "opened without O_DIRECT: {l}");
    }
}
