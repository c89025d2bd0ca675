//! The git a bisection needs, read-only on the user's repository: resolve the ends, list the
//! candidates with their parents, name a commit (subject, author), and export a commit's tree
//! (`git archive`) into a directory of fsdelta's, with a commit reverted (`git diff | git
//! apply`) when asked.
//!
//! Why `git archive` and not a worktree: a worktree writes into the user's `.git`
//! (`worktrees/`, a lock, a ref per checkout); an archive reads objects only, so the user's
//! checkout, index and refs are never touched. This module must never run a git command that
//! writes to the repository (no checkout, reset, worktree, bisect, or commit).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A git command failed.
#[derive(Debug, thiserror::Error)]
#[error("git {args} in {repo}: {message}")]
pub struct GitError {
    /// The repository.
    pub repo: PathBuf,
    /// The arguments.
    pub args: String,
    /// What went wrong (git's own message).
    pub message: String,
}

fn git(repo: &Path, args: &[&str]) -> Result<String, GitError> {
    let err = |message: String| GitError {
        repo: repo.to_path_buf(),
        args: args.join(" "),
        message,
    };
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| err(format!("cannot run git: {e} (is git installed?)")))?;
    if !out.status.success() {
        return Err(err(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The full hash of `rev`.
pub fn resolve(repo: &Path, rev: &str) -> Result<String, GitError> {
    Ok(git(
        repo,
        &["rev-parse", "--verify", &format!("{rev}^{{commit}}")],
    )?
    .trim()
    .to_string())
}

/// The candidates between `good` and `bad` (both full hashes): every commit reachable from bad
/// and not from good, oldest first (topological), each with its parents.
pub fn candidates(
    repo: &Path,
    good: &str,
    bad: &str,
) -> Result<Vec<(String, Vec<String>)>, GitError> {
    if git(repo, &["merge-base", "--is-ancestor", good, bad]).is_err() {
        return Err(GitError {
            repo: repo.to_path_buf(),
            args: format!("merge-base --is-ancestor {good} {bad}"),
            message: "the good commit is not an ancestor of the bad one: pass --good an older commit of the bad one's history".into(),
        });
    }
    let text = git(
        repo,
        &[
            "rev-list",
            "--topo-order",
            "--reverse",
            "--parents",
            &format!("{good}..{bad}"),
        ],
    )?;
    Ok(parse_rev_list(&text))
}

/// `git rev-list --parents` output: one commit a line, its parents after it.
pub fn parse_rev_list(text: &str) -> Vec<(String, Vec<String>)> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let c = w.next()?.to_string();
            Some((c, w.map(str::to_string).collect()))
        })
        .collect()
}

/// A commit's subject and author (`Name <mail>`).
pub fn describe(repo: &Path, commit: &str) -> Result<(String, String), GitError> {
    let text = git(repo, &["show", "-s", "--format=%s%x00%an <%ae>", commit])?;
    let (s, a) = text
        .trim_end()
        .split_once('\0')
        .unwrap_or((text.trim_end(), ""));
    Ok((s.to_string(), a.to_string()))
}

/// Export `commit`'s tree into `dir` (emptied first). With `revert`, apply the reverse of that
/// commit's change on top (against its first parent); a patch that does not apply is an error
/// whose message says so.
pub fn export(repo: &Path, commit: &str, dir: &Path, revert: Option<&str>) -> Result<(), GitError> {
    let err = |message: String| GitError {
        repo: repo.to_path_buf(),
        args: format!("archive {commit}"),
        message,
    };
    if dir.exists() {
        std::fs::remove_dir_all(dir)
            .map_err(|e| err(format!("emptying {}: {e}", dir.display())))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| err(format!("creating {}: {e}", dir.display())))?;
    let mut archive = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["archive", "--format=tar", commit])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| err(format!("cannot run git: {e}")))?;
    let stdout = archive.stdout.take().expect("piped");
    let tar = Command::new("tar")
        .args(["-x", "-C"])
        .arg(dir)
        .stdin(stdout)
        .output()
        .map_err(|e| err(format!("cannot run tar: {e}")))?;
    let a = archive
        .wait_with_output()
        .map_err(|e| err(format!("waiting for git archive: {e}")))?;
    if !a.status.success() || !tar.status.success() {
        return Err(err(format!(
            "{}{}",
            String::from_utf8_lossy(&a.stderr).trim(),
            String::from_utf8_lossy(&tar.stderr).trim()
        )));
    }
    if let Some(culprit) = revert {
        let patch = git(repo, &["diff", "--binary", culprit, &format!("{culprit}^")])?;
        let patch_file = dir.join(".fsdelta-revert.patch");
        std::fs::write(&patch_file, patch).map_err(|e| err(format!("writing the revert: {e}")))?;
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["apply", "--whitespace=nowarn", ".fsdelta-revert.patch"])
            .env("GIT_DIR", "/nonexistent-fsdelta")
            .output()
            .map_err(|e| err(format!("cannot run git apply: {e}")))?;
        if !out.status.success() {
            return Err(GitError {
                repo: repo.to_path_buf(),
                args: format!("apply (revert of {culprit})"),
                message: format!(
                    "the culprit does not revert cleanly on the bad end: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            });
        }
        let _ = std::fs::remove_file(&patch_file);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rev_list_with_parents_parses() {
        // Captured: git rev-list --topo-order --reverse --parents of a merge.
        let text = "a1 g0\nb2 a1\nc3 a1\nd4 b2 c3\n";
        let l = parse_rev_list(text);
        assert_eq!(l.len(), 4);
        assert_eq!(
            l[3],
            ("d4".to_string(), vec!["b2".to_string(), "c3".to_string()])
        );
        assert!(parse_rev_list("").is_empty());
    }
}
