//! The `fsdelta bisect` command a history page shows for a change: what the runs on either side
//! of it record (a commit in a bisection's label or in the label itself, the kernel they
//! measured, the suite) made into a command line for `src/cli/bisect.rs`, with a placeholder
//! and a sentence for each thing the store does not know (the repository, the build command, a
//! kernel's commit).
//!
//! It exists so that the page's command is one `fsdelta bisect` accepts, not a sketch. It must
//! never guess a value the store does not hold: what it cannot know is a `<placeholder>`.

use crate::model::RunId;
use std::fmt::Write as _;

/// One end of a change, as the store records it.
#[derive(Clone, Debug, Default)]
pub struct End {
    /// The run.
    pub run: RunId,
    /// Its label (`bisect/NAME/COMMIT12` for a bisection's runs).
    pub label: String,
    /// Its suite (a built-in name or the suite file it ran).
    pub suite: String,
    /// The kernel it measured: its guests' kernels (`vm_kernel`), else the host's release.
    pub kernel: String,
    /// Whether that kernel is a guest's.
    pub guest: bool,
}

/// The command and what to fill in before running it.
#[derive(Clone, Debug, PartialEq)]
pub struct Chase {
    /// The command line (values shell-quoted, placeholders as `<what>`).
    pub command: String,
    /// One sentence per placeholder: what to put there.
    pub fill: Vec<String>,
    /// What the command bisects: commits of a program, or of a kernel.
    pub kernel: bool,
}

/// A git commit hash (7 to 40 hex digits, at least one a letter or the whole 40 long, so
/// a plain number such as a date is not taken for one).
fn is_hash(s: &str) -> bool {
    (7..=40).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        && (s.len() == 40 || s.bytes().any(|b| b.is_ascii_alphabetic()))
}

/// The commit a run's label names: `bisect/NAME/COMMIT` (a bisection's step), or a label that
/// is a commit hash.
pub fn commit_of_label(label: &str) -> Option<&str> {
    if let Some(rest) = label.strip_prefix("bisect/")
        && let Some((_, leaf)) = rest.rsplit_once('/')
        && is_hash(leaf)
    {
        return Some(leaf);
    }
    is_hash(label).then_some(label)
}

/// The commit a kernel release names: `…-g<hash>` (`-dirty` after it allowed), as the kernel's
/// `scripts/setlocalversion` appends with CONFIG_LOCALVERSION_AUTO.
pub fn commit_of_kernel(release: &str) -> Option<&str> {
    let r = release.strip_suffix("-dirty").unwrap_or(release);
    let (_, tail) = r.rsplit_once("-g")?;
    is_hash(tail).then_some(tail)
}

/// `s` as one shell word.
fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:@%+=,-".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The `fsdelta bisect` command that chases the change between `good` (the run before it) and
/// `bad` (the run after it) of `test`'s `metric` on configuration `config` (when the history
/// names one).
///
/// Commits named by both runs' labels: a bisection of that repository's commits. Otherwise,
/// when the runs measured different kernels: a kernel bisection (`--kernel`) between the
/// kernels' commits (from a `-g<hash>` release, else to be filled in). Otherwise the commits
/// the runs measured are to be filled in.
pub fn command(test: &str, metric: &str, config: Option<&str>, good: &End, bad: &End) -> Chase {
    let commits = (commit_of_label(&good.label), commit_of_label(&bad.label));
    let kernel = !matches!(commits, (Some(_), Some(_))) && good.kernel != bad.kernel;
    let mut c = String::from("fsdelta bisect");
    let mut fill = Vec::new();
    let mut hole = |c: &mut String, flag: &str, what: &str, why: String| {
        let _ = write!(c, " {flag} <{what}>");
        fill.push(format!("<{what}>: {why}"));
    };
    if kernel {
        c.push_str(" --kernel");
        hole(
            &mut c,
            "--repo",
            "linux tree",
            "a git clone of the kernel that holds both ends' commits".into(),
        );
        hole(
            &mut c,
            "--config",
            "guest configuration file",
            format!(
                "the configuration file whose one configuration boots guests{} (the kernel of \
                 each step replaces its kernel){}",
                config
                    .map(|n| format!(" as configuration {} did", quote(n)))
                    .unwrap_or_default(),
                if good.guest || bad.guest {
                    ""
                } else {
                    "; these runs measured the host's own kernel, a bisection measures each \
                     commit in a guest"
                }
            ),
        );
        for (flag, end) in [("--good", good), ("--bad", bad)] {
            match commit_of_kernel(&end.kernel) {
                Some(h) => {
                    let _ = write!(c, " {flag} {h}");
                }
                None => hole(
                    &mut c,
                    flag,
                    &format!("commit of kernel {}", end.kernel),
                    format!(
                        "the commit run {} booted (its kernel {} does not name one)",
                        end.run,
                        quote(&end.kernel)
                    ),
                ),
            }
        }
    } else {
        let from = match (commit_of_label(&good.label), commit_of_label(&bad.label)) {
            (Some(_), Some(_)) if good.label.starts_with("bisect/") => format!(
                " (the runs are bisection {}'s: `fsdelta bisect log {}` shows its repository \
                 and build)",
                bisection_name(&good.label),
                quote(bisection_name(&good.label))
            ),
            _ => String::new(),
        };
        hole(
            &mut c,
            "--repo",
            "repository",
            format!("the git repository whose commits the runs measured{from}"),
        );
        hole(
            &mut c,
            "--build",
            "build command",
            "the shell command that builds a commit in its tree ($FSDELTA_BISECT_TREE)".into(),
        );
        for (flag, end, label_commit) in [("--good", good, commits.0), ("--bad", bad, commits.1)] {
            match label_commit {
                Some(h) => {
                    let _ = write!(c, " {flag} {h}");
                }
                None => hole(
                    &mut c,
                    flag,
                    &format!("commit of run {}", end.run),
                    format!(
                        "the commit run {} measured (its label {} names none{})",
                        end.run,
                        quote(&end.label),
                        if good.kernel == bad.kernel {
                            ", and both runs measured the same kernel"
                        } else {
                            ""
                        }
                    ),
                ),
            }
        }
        if let Some(n) = config.filter(|n| *n != "scratch") {
            hole(
                &mut c,
                "--config",
                "configuration file",
                format!(
                    "the configuration file that defines configuration {}",
                    quote(n)
                ),
            );
        }
    }
    if bad.suite.is_empty() {
        hole(&mut c, "--suite", "suite", "the suite the runs ran".into());
    } else {
        let _ = write!(c, " --suite {}", quote(&bad.suite));
    }
    let _ = write!(c, " --test {} --metric {}", quote(test), quote(metric));
    Chase {
        command: c,
        fill,
        kernel,
    }
}

/// NAME of a `bisect/NAME/COMMIT` label.
fn bisection_name(label: &str) -> &str {
    label
        .strip_prefix("bisect/")
        .and_then(|r| r.rsplit_once('/'))
        .map_or("", |(n, _)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(run: RunId, label: &str, kernel: &str, guest: bool) -> End {
        End {
            run,
            label: label.into(),
            suite: "quick".into(),
            kernel: kernel.into(),
            guest,
        }
    }

    #[test]
    fn commits_from_labels_and_kernel_releases() {
        assert_eq!(
            commit_of_label("bisect/e2e/f1ba62de9dbc"),
            Some("f1ba62de9dbc")
        );
        assert_eq!(commit_of_label("bisect/e2e/f1ba62de9dbc/warmup"), None);
        assert_eq!(commit_of_label("bisect/e2e/warmup"), None);
        assert_eq!(commit_of_label("61686f63fe1a"), Some("61686f63fe1a"));
        assert_eq!(commit_of_label("20261106"), None, "a date is no commit");
        assert_eq!(commit_of_label("nightly"), None);
        assert_eq!(
            commit_of_kernel("6.1.0-rc3-00042-gdeadbeef1234"),
            Some("deadbeef1234")
        );
        assert_eq!(
            commit_of_kernel("6.1.0-00001-gabcdef1-dirty"),
            Some("abcdef1")
        );
        assert_eq!(commit_of_kernel("6.1.0-47-amd64"), None);
        assert_eq!(commit_of_kernel("6.18.0-gcp"), None);
    }

    #[test]
    fn a_bisections_runs_give_both_commits() {
        let c = command(
            "prog",
            "cpu_ms",
            None,
            &end(56, "bisect/e2e/f1ba62de9dbc", "6.18.0", false),
            &end(57, "bisect/e2e/61686f63fe1a", "6.18.0", false),
        );
        assert_eq!(
            c.command,
            "fsdelta bisect --repo <repository> --build <build command> --good f1ba62de9dbc \
             --bad 61686f63fe1a --suite quick --test prog --metric cpu_ms"
        );
        assert!(!c.kernel);
        assert_eq!(c.fill.len(), 2);
        assert!(c.fill[0].contains("fsdelta bisect log e2e"), "{:?}", c.fill);
    }

    #[test]
    fn guest_kernels_that_differ_make_a_kernel_bisection() {
        let c = command(
            "smallfiles",
            "files_per_sec",
            Some("ext4-guest"),
            &end(6, "nightly", "6.1.0-00041-g1111111aaaa", true),
            &end(7, "nightly", "6.1.0-47-amd64", true),
        );
        assert!(c.kernel);
        assert_eq!(
            c.command,
            "fsdelta bisect --kernel --repo <linux tree> --config <guest configuration file> \
             --good 1111111aaaa --bad <commit of kernel 6.1.0-47-amd64> --suite quick \
             --test smallfiles --metric files_per_sec"
        );
        assert!(c.fill.iter().any(|f| f.contains("ext4-guest")));
        assert!(c.fill.iter().any(|f| f.contains("run 7 booted")));
        assert!(!c.fill.iter().any(|f| f.contains("host's own kernel")));
    }

    #[test]
    fn nothing_recorded_asks_for_the_commits_and_quotes_hostile_names() {
        let c = command(
            "a b",
            "m'1",
            Some("ext4'><svg>"),
            &end(6, "<script>", "6.18.0", false),
            &end(7, "x", "6.18.0", false),
        );
        assert!(!c.kernel);
        assert!(
            c.command
                .contains("--good <commit of run 6> --bad <commit of run 7>")
        );
        assert!(
            c.command
                .ends_with("--suite quick --test 'a b' --metric 'm'\\''1'"),
            "{}",
            c.command
        );
        assert!(c.command.contains("--config <configuration file>"));
        assert!(c.fill.iter().any(|f| f.contains("same kernel")));
        assert_eq!(c.fill.len(), 5, "{:?}", c.fill);
    }
}
