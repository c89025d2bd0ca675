//! What the drivers of the real tools share: fs_mark 3.3, fio 3.33 and dbench 4.00 run as child
//! processes ([`run_child`]: found by [`Tool`], in its own process group, stopped on cancel),
//! and their output is read into the metric names the native engines produce, so that a number
//! from `engine = "external"` compares with one from the native engine of the same test.
//!
//! Each tool's driver is its wing's `external.rs` (`crate::fio::external`,
//! `crate::fsmark::external`, `crate::dbench::external`), in two halves that must stay apart: a
//! pure `parse(&str) -> Result<_, ParseError>` that knows the tool's exact output format, tested
//! on captured real output (`tests/data/external/`) and fuzzed (`fuzz/`,
//! `tests/external_fuzz.rs`), and a runner that only finds the binary, runs it in the target
//! directory and hands stdout to the parser. This module holds the shared half: [`Tool`],
//! [`run_child`], [`ParseError`].
//!
//! What this room must never do: invent a number the tool did not print (a metric the real tool
//! cannot give, such as fs_mark's latency percentiles, is absent, never estimated), print to the
//! terminal, leave a child process running after a cancel, or panic on any input text.

use crate::probe::clock::Nanos;
use crate::workload::{RunContext, WorkloadError};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

/// Output of a real tool that does not have the expected shape. `line` is 1-based in the text
/// given to the parser; 0 when the problem is the text as a whole (a table that never started).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{tool} output{}: {message}", if *line > 0 { format!(", line {line}") } else { String::new() })]
pub struct ParseError {
    /// The tool whose output it is (`fs_mark`, `fio`, `dbench`).
    pub tool: &'static str,
    /// 1-based line, or 0 for the whole text.
    pub line: usize,
    /// What was expected and what was found.
    pub message: String,
}

impl ParseError {
    pub(crate) fn new(tool: &'static str, line: usize, message: impl Into<String>) -> Self {
        ParseError {
            tool,
            line,
            message: message.into(),
        }
    }
}

/// A tool the drivers run: its binary name and the Debian package that installs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tool {
    /// Binary name looked up in `PATH` (`fs_mark`).
    pub binary: &'static str,
    /// Debian package (`fsmark`).
    pub package: &'static str,
}

/// fs_mark, from Debian's `fsmark`.
pub const FS_MARK: Tool = Tool {
    binary: "fs_mark",
    package: "fsmark",
};
/// fio, from Debian's `fio`.
pub const FIO: Tool = Tool {
    binary: "fio",
    package: "fio",
};
/// dbench, from Debian's `dbench`.
pub const DBENCH: Tool = Tool {
    binary: "dbench",
    package: "dbench",
};

impl Tool {
    /// The binary to run: `explicit` when given (it must exist), else the first executable
    /// `binary` in `PATH`. A missing tool is an error that says how to install it.
    pub fn locate(self, explicit: Option<&Path>) -> Result<PathBuf, WorkloadError> {
        let missing = |where_: String| {
            WorkloadError::InvalidOptions(format!(
                "the external {} engine needs `{}`, which is not installed ({where_}): install the Debian package with `apt-get install {}`, or use the native engine",
                self.binary, self.binary, self.package
            ))
        };
        if let Some(p) = explicit {
            return if is_executable(p) {
                Ok(p.to_path_buf())
            } else {
                Err(missing(format!("no executable {}", p.display())))
            };
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|d| d.join(self.binary))
            .find(|p| is_executable(p))
            .ok_or_else(|| missing(format!("no `{}` in PATH", self.binary)))
    }

    /// Whether the tool can be found in `PATH`.
    pub fn is_installed(self) -> bool {
        self.locate(None).is_ok()
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// How long a cancelled tool gets to stop after SIGTERM before its group is killed.
const CANCEL_GRACE: Duration = Duration::from_secs(3);

/// What a finished child left.
#[derive(Debug)]
pub(crate) struct ChildOutput {
    pub tool: Tool,
    pub stdout: String,
    pub stderr: String,
    /// Wall time from spawn to exit.
    pub wall: Nanos,
    /// How it ended.
    pub status: ExitStatus,
}

/// Run `cmd` (already given its arguments) in `cwd`, in a process group of its own, feeding it
/// `stdin` and collecting its output. A cancel request stops the whole group (the tools fork
/// workers) and returns [`WorkloadError::Cancelled`]; the exit status is the caller's to judge
/// ([`ChildOutput::succeeded`]).
pub(crate) fn run_child(
    tool: Tool,
    mut cmd: Command,
    cwd: &Path,
    stdin: Option<String>,
    ctx: &RunContext<'_>,
) -> Result<ChildOutput, WorkloadError> {
    cmd.current_dir(cwd)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("LC_ALL", "C")
        .process_group(0);
    crate::os::child::dies_with_this_thread(&mut cmd);
    let t0 = Nanos::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| WorkloadError::io("spawn", tool.binary, e))?;
    let pgid = rustix::process::Pid::from_raw(child.id() as i32);
    let signal_group = |sig: rustix::process::Signal| {
        if let Some(p) = pgid {
            let _ = rustix::process::kill_process_group(p, sig);
        }
    };
    let writer = match (stdin, child.stdin.take()) {
        (Some(text), Some(mut pipe)) => Some(std::thread::spawn(move || {
            use std::io::Write;
            // A tool that exits early closes the pipe; its exit status tells why.
            let _ = pipe.write_all(text.as_bytes());
        })),
        _ => None,
    };
    let read_all = |mut r: Box<dyn Read + Send>| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            let _ = tx.send(v);
        });
        rx
    };
    let out_rx = read_all(Box::new(child.stdout.take().expect("piped stdout")));
    let err_rx = read_all(Box::new(child.stderr.take().expect("piped stderr")));
    let mut cancelled_at: Option<Nanos> = None;
    let status: ExitStatus = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(e) => {
                signal_group(rustix::process::Signal::KILL);
                return Err(WorkloadError::io("wait for", tool.binary, e));
            }
        }
        match cancelled_at {
            None if ctx.cancel.is_cancelled() => {
                // SIGTERM first: fio stops the jobs it forked into sessions of their own (out
                // of reach of a group kill); the others die with it.
                signal_group(rustix::process::Signal::TERM);
                cancelled_at = Some(Nanos::now());
            }
            Some(t) if t.elapsed() > Nanos::from(CANCEL_GRACE) => {
                signal_group(rustix::process::Signal::KILL);
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let wall = t0.elapsed();
    // Forked workers may outlive the leader; none may linger.
    signal_group(rustix::process::Signal::KILL);
    if let Some(w) = writer {
        let _ = w.join();
    }
    if cancelled_at.is_some() {
        // A process outside the group may still hold the pipes; do not wait on it.
        return Err(WorkloadError::Cancelled);
    }
    let stdout = String::from_utf8_lossy(&out_rx.recv().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_rx.recv().unwrap_or_default()).into_owned();
    Ok(ChildOutput {
        tool,
        stdout,
        stderr,
        wall,
        status,
    })
}

impl ChildOutput {
    /// The tool's stdout and stderr as the `stdout` and `stderr` attachments (compressed,
    /// capped at [`crate::model::ATTACHMENT_TEXT_LIMIT`] each, as a command test's), so a number
    /// can be checked against what the tool printed (`fsdelta show --raw`).
    pub(crate) fn attachments(&self) -> Vec<crate::model::Attachment> {
        vec![
            crate::model::Attachment::text_gz("stdout", self.stdout.as_bytes()),
            crate::model::Attachment::text_gz("stderr", self.stderr.as_bytes()),
        ]
    }

    /// The output of a tool that exited with status 0, else an error that keeps the tail of
    /// its stderr and stdout.
    pub(crate) fn succeeded(self) -> Result<ChildOutput, WorkloadError> {
        if self.status.success() {
            return Ok(self);
        }
        let how = match (
            self.status.code(),
            std::os::unix::process::ExitStatusExt::signal(&self.status),
        ) {
            (Some(c), _) => format!("exited with status {c}"),
            (None, Some(s)) => format!("was killed by signal {s}"),
            _ => "failed".into(),
        };
        Err(WorkloadError::InvalidOptions(format!(
            "{} {how}; stderr:\n{}\nstdout:\n{}",
            self.tool.binary,
            tail(&self.stderr, 2000),
            tail(&self.stdout, 2000)
        )))
    }
}

/// A parse failure of a real run's output, with the output kept for the reader.
pub(crate) fn unreadable(e: ParseError, out: &ChildOutput) -> WorkloadError {
    WorkloadError::InvalidOptions(format!(
        "could not read the output of the real tool: {e}; stdout:\n{}\nstderr:\n{}",
        tail(&out.stdout, 2000),
        tail(&out.stderr, 2000)
    ))
}

/// The last `max` bytes of `s`, cut at a character boundary.
fn tail(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Split `text` into 1-based numbered lines without their `\r`.
pub(crate) fn numbered_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_end_matches('\r')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tool_names_its_debian_package() {
        let e = FS_MARK
            .locate(Some(Path::new("/nonexistent/fs_mark")))
            .unwrap_err()
            .to_string();
        assert!(e.contains("apt-get install fsmark"), "{e}");
        assert!(e.contains("/nonexistent/fs_mark"), "{e}");
        let e = Tool {
            binary: "fsdelta-no-such-tool",
            package: "nosuchpkg",
        }
        .locate(None)
        .unwrap_err()
        .to_string();
        assert!(e.contains("apt-get install nosuchpkg"), "{e}");
        assert!(e.contains("not installed"), "{e}");
    }

    #[test]
    fn parse_errors_carry_their_line() {
        let e = ParseError::new("fio", 3, "expected a number");
        assert_eq!(e.to_string(), "fio output, line 3: expected a number");
        let e = ParseError::new("dbench", 0, "no final table");
        assert_eq!(e.to_string(), "dbench output: no final table");
    }

    #[test]
    fn tail_cuts_at_a_character_boundary() {
        assert_eq!(tail("abc", 10), "abc");
        assert_eq!(tail("aé", 1), "");
        assert_eq!(tail("héllo", 4), "llo");
    }
}
