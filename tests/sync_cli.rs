//! `fsdelta sync` through the real binary: runs made by `fsdelta run` in one SQLite store are
//! copied to another SQLite file and to PostgreSQL (a scratch database of the test server named
//! by FSDELTA_TEST_PG; without it that half is skipped with a reason, or fails under
//! FSDELTA_REQUIRE_ALL=1), a second sync copies nothing, and the destination's `list`, `export`,
//! `show --raw` and `compare` show the runs as the source does.

mod common;

use assert_cmd::Command;
use common::require;
use fsdelta::store::postgres::ScratchDatabase;
use predicates::prelude::*;
use std::path::Path;

use common::TINY_FILES100 as TINY;

/// fsdelta with `db` as its store and a private state file.
fn fsdelta(db: &str, work: &Path) -> Command {
    let mut c = Command::cargo_bin("fsdelta").unwrap();
    c.env("FSDELTA_DB", db)
        .env("FSDELTA_STATE_FILE", work.join("state.json"))
        .env_remove("XDG_DATA_HOME");
    c
}

/// A laptop store with two small real runs, `base` and `cur`, two repetitions each.
fn laptop(work: &Path) -> String {
    let db = work.join("laptop.sqlite").display().to_string();
    let suite = work.join("tiny.toml");
    std::fs::write(&suite, TINY).unwrap();
    let target = work.join("target");
    std::fs::create_dir_all(&target).unwrap();
    common::run_labelled_twice(|| fsdelta(&db, work), &["base", "cur"], &suite, &target);
    db
}

fn sync(from: &str, to: &str, work: &Path) -> assert_cmd::assert::Assert {
    fsdelta(from, work)
        .env_remove("FSDELTA_DB")
        .args(["sync", "--from", from, "--to", to])
        .assert()
}

fn stdout(c: &mut Command) -> String {
    let out = c.output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// `export` and `compare` of the destination print what they print on the source (the runs
/// keep their order, so a fresh destination even gives them the same ids).
fn same_as_source(src: &str, dst: &str, work: &Path) {
    fsdelta(dst, work)
        .arg("list")
        .assert()
        .success()
        .stdout(predicate::str::contains("base"))
        .stdout(predicate::str::contains("cur"))
        .stdout(predicate::str::contains("complete"));
    for sel in ["label:base", "label:cur"] {
        let a = stdout(fsdelta(src, work).args(["export", sel, "--format", "json"]));
        let b = stdout(fsdelta(dst, work).args(["export", sel, "--format", "json"]));
        assert!(a.contains("files_per_sec"), "{a}");
        assert_eq!(a, b, "export {sel}");
    }
    // The raw results kept with each sample (fs_mark's per-iteration rows) came along.
    let raw = |db: &str| stdout(fsdelta(db, work).args(["show", "label:base", "--raw"]));
    let (a, b) = (raw(src), raw(dst));
    assert!(a.contains("fs_mark iterations:"), "{a}");
    assert_eq!(a, b, "show --raw");
    let compare = |db: &str| {
        let out = fsdelta(db, work)
            .args(["compare", "label:base", "label:cur", "--all"])
            .output()
            .unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    };
    let (a, b) = (compare(src), compare(dst));
    assert!(a.1.contains("files100"), "{}", a.1);
    assert_eq!(a, b, "compare on the destination");
}

#[test]
fn runs_are_copied_to_sqlite_and_postgres_once() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();
    let src = laptop(work);

    let lab = work.join("lab/results.sqlite").display().to_string();
    sync(&src, &lab, work)
        .success()
        .stdout("copied 2 runs (4 samples), skipped 0 already present\n")
        .stderr(predicate::str::contains(
            "copied run 1 (base, 2 samples) as run 1",
        ));
    sync(&src, &lab, work)
        .success()
        .stdout("copied 0 runs (0 samples), skipped 2 already present\n");
    same_as_source(&src, &lab, work);

    let url = std::env::var("FSDELTA_TEST_PG")
        .ok()
        .filter(|u| !u.is_empty());
    if !require(
        url.is_some(),
        "FSDELTA_TEST_PG (a PostgreSQL administrator URL) for the PostgreSQL half",
    ) {
        return;
    }
    let pg = ScratchDatabase::create(&url.unwrap()).unwrap();
    sync(&src, &pg.url, work)
        .success()
        .stdout("copied 2 runs (4 samples), skipped 0 already present\n");
    sync(&src, &pg.url, work)
        .success()
        .stdout("copied 0 runs (0 samples), skipped 2 already present\n");
    // A run the copy in SQLite also holds is not copied again from PostgreSQL.
    sync(&pg.url, &lab, work)
        .success()
        .stdout("copied 0 runs (0 samples), skipped 2 already present\n");
    same_as_source(&src, &pg.url, work);
    // And PostgreSQL as the source, into a new file.
    let home = work.join("home.sqlite").display().to_string();
    sync(&pg.url, &home, work)
        .success()
        .stdout("copied 2 runs (4 samples), skipped 0 already present\n");
    same_as_source(&src, &home, work);
}

#[test]
fn a_missing_source_or_the_same_store_twice_is_an_error_that_says_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();
    let missing = work.join("nope.sqlite").display().to_string();
    let dst = work.join("dst.sqlite").display().to_string();
    sync(&missing, &dst, work)
        .code(2)
        .stderr(predicate::str::contains("opening the source"))
        .stderr(predicate::str::contains("no such database"));
    assert!(!Path::new(&missing).exists(), "the source is only read");
    assert!(
        !Path::new(&dst).exists(),
        "nothing opened before the source"
    );
    let db = work.join("r.sqlite");
    drop(fsdelta::store::sqlite::SqliteStore::open(&db).unwrap());
    let same = work.join(".").join("r.sqlite").display().to_string();
    sync(&db.display().to_string(), &same, work)
        .code(2)
        .stderr(predicate::str::contains("name the same store"));
}
