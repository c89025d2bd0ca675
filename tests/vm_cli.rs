//! `fsdelta kernels` and the hidden `fsdelta guest-run` from the command line.

mod common;

use predicates::prelude::*;

#[test]
fn kernels_lists_the_host_and_the_cached_debian_packages() {
    let have = std::fs::read_dir("/var/cache/fsdelta-ci/kernels")
        .map(|rd| {
            rd.filter_map(Result::ok).any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with("linux-image-6.1.0-47-amd64_")
            })
        })
        .unwrap_or(false);
    if !common::require(
        have,
        "the Debian kernel packages in /var/cache/fsdelta-ci/kernels (see .ci/run)",
    ) {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let db = cache.path().join("db.sqlite");
    let release = rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned();
    common::fsdelta(&db)
        .arg("kernels")
        .env("FSDELTA_CACHE_DIR", cache.path())
        .env_remove("FSDELTA_KERNEL_DIR")
        .assert()
        .success()
        .stdout(predicate::str::contains("RELEASE"))
        .stdout(predicate::str::contains(format!("{release}  host")))
        .stdout(predicate::str::is_match(r"6\.1\.0-47-amd64\s+deb\s+/var/cache/fsdelta-ci/kernels/linux-image-6\.1\.0-47-amd64_").unwrap());
}

#[test]
fn guest_run_refuses_to_run_outside_a_guest() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db.sqlite");
    let job = dir.path().join("job.json");
    std::fs::write(&job, "{}").unwrap();
    common::fsdelta(&db)
        .args(["guest-run"])
        .arg(&job)
        .arg(dir.path().join("out"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "only runs inside an fsdelta guest",
        ));
    assert!(!dir.path().join("out").exists());
}
