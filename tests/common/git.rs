//! `git` for the tests that make repositories of their own (stand-in kernel trees, a small
//! program's history): a fixed author and committer, so that commits do not depend on the
//! machine's git configuration, and a failed command fails the test with git's own message.

use std::path::Path;
use std::process::Command;

/// Run `git -C repo ARGS` as "Ada Tester"; its stdout. Panics, with git's stderr, when it fails.
pub fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Ada Tester")
        .env("GIT_AUTHOR_EMAIL", "ada@example.org")
        .env("GIT_COMMITTER_NAME", "Ada Tester")
        .env("GIT_COMMITTER_EMAIL", "ada@example.org")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        repo.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
