//! `fsdelta doctor` on this machine: it lists its findings and changes nothing; as root,
//! `--apply` makes the advised changes that need no reboot and `--revert` restores every one
//! exactly (on the CI machine and the development VM: transparent huge pages `madvise` ->
//! `never` -> `madvise`); without root `--apply` refuses, saying why, and changes nothing.

mod common;

use assert_cmd::Command;
use fsdelta::probe::hygiene::{self, Settings};
use predicates::prelude::*;
use std::path::Path;
use std::sync::Mutex;

/// The two tests read and change the same machine settings: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn doctor(state: &Path) -> Command {
    let mut c = Command::cargo_bin("fsdelta").unwrap();
    c.env("FSDELTA_STATE_FILE", state.join("leftovers.json"))
        .arg("doctor");
    c
}

fn here() -> Settings {
    Settings::read(Path::new("/"), &[])
}

#[test]
fn doctor_lists_findings_and_changes_nothing() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let state = tempfile::tempdir().unwrap();
    let before = here();
    let advice = hygiene::advise(Path::new("/"), &before);
    let out = doctor(state.path()).assert().success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    if advice.is_empty() {
        assert!(stdout.contains("Nothing to change"), "{stdout}");
    } else {
        assert!(
            stdout.contains(&format!(
                "{} setting(s) a quiet benchmark machine should change",
                advice.len()
            )),
            "{stdout}"
        );
        for a in &advice {
            assert!(
                stdout.contains(&a.key) && stdout.contains(&a.command),
                "{stdout}"
            );
        }
    }
    assert_eq!(here(), before, "doctor without --apply changed a setting");
    assert!(!state.path().join("doctor.json").exists());
    // nothing applied, nothing to revert
    doctor(state.path())
        .arg("--revert")
        .assert()
        .success()
        .stdout(predicate::str::contains("Nothing to revert"));
}

#[test]
fn apply_and_revert_round_trip_or_refuse_with_the_reason() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let state = tempfile::tempdir().unwrap();
    let before = here();
    let advice = hygiene::advise(Path::new("/"), &before);
    let writable: Vec<&hygiene::Advice> = advice.iter().filter(|a| !a.writes.is_empty()).collect();
    if !common::is_root() {
        doctor(state.path()).arg("--apply").assert().code(2).stderr(
            predicate::str::contains("needs root")
                .and(predicate::str::contains("nothing was changed")),
        );
        assert_eq!(here(), before);
        return;
    }
    if !common::require(
        !writable.is_empty(),
        "a setting doctor advises changing that is not already as advised (transparent huge pages not 'never', or a CPU governor not 'performance')",
    ) {
        return;
    }
    let applied = doctor(state.path()).arg("--apply").assert();
    let out = applied.get_output().clone();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let record = state.path().join("doctor.json");
    if !out.status.success() {
        // A machine whose host owns the setting (a container): the refusal names the file and
        // why, and whatever was changed before it is recorded for --revert.
        assert!(
            stderr.contains("cannot write") || stderr.contains("refused"),
            "{stderr}"
        );
    } else {
        let after = here();
        for a in &writable {
            assert_eq!(after.0.get(&a.key), Some(&a.advised), "{}: {stdout}", a.key);
            assert!(stdout.contains(&format!("Changed {}", a.key)), "{stdout}");
        }
        assert!(record.exists(), "no record of the change");
    }
    doctor(state.path()).arg("--revert").assert().success();
    assert_eq!(
        here(),
        before,
        "revert did not restore every setting exactly"
    );
    assert!(!record.exists(), "the record outlived the revert");
}
