//! Files fsdelta writes on the user's behalf, in shared directories (issue 33, item 3): an
//! output file (`fio --output`, `report -o`, `export -o`) is never written through a planted
//! symlink nor into another user's file, and is created with mode 0600; the leftover-state file
//! is refused in a sticky or foreign-owned directory, with what to do instead.

mod common;

use assert_cmd::Command;
use common::{is_root, require};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;

const JOB: &str = "[j]\nrw=write\nsize=64k\nbs=4k\n";

/// A world-writable sticky directory, as /tmp, inside a fresh temporary directory.
fn sticky(root: &Path) -> std::path::PathBuf {
    let d = root.join("shared");
    fs::create_dir(&d).unwrap();
    fs::set_permissions(&d, fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

fn fio(work: &Path, extra: &[&str]) -> Command {
    let mut c = Command::cargo_bin("fsdelta").unwrap();
    c.current_dir(work)
        .env("FSDELTA_STATE_FILE", work.join("state/leftovers.json"))
        .arg("fio")
        .args(extra)
        .arg("job.fio");
    c
}

#[test]
fn fio_output_never_follows_a_planted_symlink() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    fs::write(w.join("job.fio"), JOB).unwrap();
    let shared = sticky(w);
    let victim = w.join("precious");
    fs::write(&victim, "keep me").unwrap();
    let link = shared.join("out.json");
    symlink(&victim, &link).unwrap();
    for extra in [&[][..], &["--status-interval=1"]] {
        let out = fio(w, extra)
            .arg(format!("--output={}", link.display()))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(
            err.contains(&link.display().to_string()) && err.contains("symlink"),
            "{extra:?}: the error names the symlink: {err}"
        );
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep me");
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
}

#[test]
fn fio_output_is_created_private_and_replaces_a_file_of_ours() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    fs::write(w.join("job.fio"), JOB).unwrap();
    let shared = sticky(w);
    let out = shared.join("new.json");
    fio(w, &["--output-format=json"])
        .arg(format!("--output={}", out.display()))
        .assert()
        .success();
    assert_eq!(fs::metadata(&out).unwrap().mode() & 0o777, 0o600);
    assert!(fs::read_to_string(&out).unwrap().contains("\"jobs\""));
    // An earlier output of ours is replaced whole.
    fs::write(&out, "old").unwrap();
    fio(w, &["--output-format=json"])
        .arg(format!("--output={}", out.display()))
        .assert()
        .success();
    assert!(!fs::read_to_string(&out).unwrap().contains("old"));
}

#[test]
fn fio_output_never_writes_into_another_users_file() {
    if !require(is_root(), "root (to chown a file to another user)") {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    fs::write(w.join("job.fio"), JOB).unwrap();
    let shared = sticky(w);
    let theirs = shared.join("theirs.json");
    fs::write(&theirs, "theirs").unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    for extra in [&[][..], &["--status-interval=1"]] {
        fio(w, extra)
            .arg(format!("--output={}", theirs.display()))
            .assert()
            .code(2)
            .stderr(predicates::str::contains("owned by uid 65534"));
        assert_eq!(fs::read_to_string(&theirs).unwrap(), "theirs");
        assert_eq!(fs::metadata(&theirs).unwrap().uid(), 65534);
    }
}

/// `export -o` and `report -o` go through the same checks.
#[test]
fn export_and_report_outputs_never_follow_a_planted_symlink() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let db = w.join("r.sqlite");
    fs::write(
        w.join("s.toml"),
        "[[test]]\nname = \"c\"\nworkload = \"command\"\ncommand = \"echo 'v 1'\"\n\
         [[test.metric]]\nname = \"v\"\nregex = 'v (\\d+)'\nunit = \"count\"\ndirection = \"higher\"\n",
    )
    .unwrap();
    fs::create_dir(w.join("t")).unwrap();
    let cmd = || {
        let mut c = common::fsdelta(&db);
        c.current_dir(w)
            .env("FSDELTA_STATE_FILE", w.join("state/leftovers.json"));
        c
    };
    for _ in 0..2 {
        cmd()
            .args([
                "run", "-n", "1", "--quiet", "--suite", "s.toml", "--target", "t",
            ])
            .assert()
            .success();
    }
    let shared = sticky(w);
    let victim = w.join("precious");
    fs::write(&victim, "keep me").unwrap();
    let link = shared.join("out");
    symlink(&victim, &link).unwrap();
    for args in [
        vec!["export", "latest", "-o"],
        vec!["report", "1", "2", "-o"],
    ] {
        cmd()
            .args(&args)
            .arg(&link)
            .assert()
            .code(2)
            .stderr(predicates::str::contains("symlink"));
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep me", "{args:?}");
    }
    // A plain new output is written, private.
    let out = shared.join("export.json");
    cmd()
        .args(["export", "latest", "-o"])
        .arg(&out)
        .assert()
        .success();
    assert_eq!(fs::metadata(&out).unwrap().mode() & 0o777, 0o600);
}

/// docs/configurations.md: the state file is never in a shared directory. In a sticky world-writable one
/// (as /tmp) it is refused, even before it exists, with what to do.
#[test]
fn a_state_file_in_a_sticky_directory_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let shared = sticky(work.path());
    Command::cargo_bin("fsdelta")
        .unwrap()
        .env("FSDELTA_STATE_FILE", shared.join("leftovers.json"))
        .env("FSDELTA_DB", work.path().join("r.sqlite"))
        .arg("cleanup")
        .assert()
        .code(2)
        .stderr(
            predicates::str::contains("is shared")
                .and(predicates::str::contains("FSDELTA_STATE_FILE")),
        );
    assert!(!shared.join("leftovers.json").exists());
}

use predicates::prelude::PredicateBooleanExt;

#[test]
fn fsmark_log_never_follows_a_planted_symlink() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let shared = sticky(w);
    let victim = w.join("precious");
    fs::write(&victim, "keep me").unwrap();
    let link = shared.join("fs_log.txt");
    symlink(&victim, &link).unwrap();
    fs::create_dir(w.join("d")).unwrap();
    let out = Command::cargo_bin("fsdelta")
        .unwrap()
        .current_dir(w)
        .env("FSDELTA_STATE_FILE", w.join("state/leftovers.json"))
        .args(["fsmark", "-d", "d", "-n", "4", "-s", "0", "-L", "1", "-l"])
        .arg(&link)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&link.display().to_string()) && err.contains("symlink"),
        "the error names the symlink: {err}"
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "keep me");
}
