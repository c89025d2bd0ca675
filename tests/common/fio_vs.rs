//! The harness that runs a job file under the real fio and under `fsdelta fio` and compares
//! the two (tests/fio_examples.rs on fio's own examples, tests/fio_corpus.rs on other projects'
//! job files): a child run with a time limit that kills fio's job processes too, the JSON of
//! its output, each job's counts, the files a run left, and the first difference between the
//! two runs' job names and files.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A fio size (`16m`, `4k`, `1gb`) in bytes, base 1024; `None` for anything else.
pub fn size_of(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let n: u64 = t[..end].parse().ok()?;
    let mult = match &t[end..] {
        "" | "b" => 1,
        "k" | "kb" => 1 << 10,
        "m" | "mb" => 1 << 20,
        "g" | "gb" => 1 << 30,
        "t" | "tb" => 1 << 40,
        _ => return None,
    };
    Some(n * mult)
}

/// Run `cmd` for at most `limit`, its output kept in files (a child must never block on a full
/// pipe while we wait). Its own process group, so that a timeout kills fio's job processes too
/// (fio forks one per job; killing the parent alone left them running, orphaned), then every
/// process left in its working directory ([`kill_in_dir`]). Err says it did not finish.
pub fn run(cmd: &mut Command, limit: Duration) -> Result<std::process::Output, String> {
    let out = tempfile::tempfile().map_err(|e| e.to_string())?;
    let err = tempfile::tempfile().map_err(|e| e.to_string())?;
    use std::os::unix::process::CommandExt;
    let mut child = cmd
        .process_group(0)
        .stdout(out.try_clone().map_err(|e| e.to_string())?)
        .stderr(err.try_clone().map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| e.to_string())?;
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            break st;
        }
        if start.elapsed() > limit {
            // SAFETY: kill(2) on the child's process group (its pid, made by process_group(0)).
            unsafe {
                libc::kill(-(child.id() as i32), libc::SIGKILL);
            }
            let _ = child.wait();
            // fio's job processes call setsid(): they leave the group and outlive the kill
            // above. Every one of them works in the run's own directory, so kill by cwd.
            if let Some(dir) = cmd.get_current_dir() {
                kill_in_dir(dir);
            }
            return Err(format!("did not finish within {}s", limit.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read = |mut f: std::fs::File| -> Vec<u8> {
        use std::io::{Read, Seek};
        let mut v = Vec::new();
        let _ = f.rewind();
        let _ = f.read_to_end(&mut v);
        v
    };
    Ok(std::process::Output {
        status,
        stdout: read(out),
        stderr: read(err),
    })
}

/// SIGKILL every process whose working directory is `dir` (the run's own temporary
/// directory, so nothing outside the test is touched), until none is left.
pub fn kill_in_dir(dir: &Path) {
    let Ok(dir) = dir.canonicalize() else { return };
    for _ in 0..50 {
        let mut found = false;
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            if std::fs::read_link(e.path().join("cwd")).is_ok_and(|c| c == dir) {
                found = true;
                // SAFETY: kill(2) of a pid read from /proc; at worst it has exited already.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
        if !found {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The first line of an error output that says something (not a warning, not empty), at most
/// 160 characters.
pub fn first_line(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    s.lines()
        .find(|l| !l.contains("warning:") && !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(160)
        .collect()
}

/// The JSON document of a fio or `fsdelta fio` output (any text before it skipped).
pub fn json(out: &[u8]) -> Result<serde_json::Value, String> {
    let text = String::from_utf8_lossy(out);
    let start = text
        .find("{\n")
        .or_else(|| text.find('{'))
        .ok_or("no JSON")?;
    serde_json::from_str(&text[start..]).map_err(|e| format!("bad JSON: {e}"))
}

/// Per job: name, [read, write, trim] total_ios, [read, write, trim] io_bytes.
pub type JobCounts = (String, [u64; 3], [u64; 3]);

/// Each job's [`JobCounts`], in the output's order (none without a jobs array).
pub fn jobs_of(v: &serde_json::Value) -> Vec<JobCounts> {
    let dirs = ["read", "write", "trim"];
    v["jobs"]
        .as_array()
        .map(|jobs| {
            jobs.iter()
                .map(|j| {
                    (
                        j["jobname"].as_str().unwrap_or("").to_string(),
                        dirs.map(|d| j[d]["total_ios"].as_u64().unwrap_or(0)),
                        dirs.map(|d| j[d]["io_bytes"].as_u64().unwrap_or(0)),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The files a run left in `dir`, sorted, without the job file and fio's verify state
/// (`verify_state_save`, which fio writes on exit unless told not to).
pub fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "job.fio")
        .filter(|n| !n.ends_with("-verify.state"))
        .collect();
    v.sort();
    v
}

/// Err naming the first difference between our run (jobs `ours`, directory `our_dir`) and
/// fio's: the job names, in order, then the files left behind.
pub fn same_names_and_files(
    ours: &[JobCounts],
    fio: &[JobCounts],
    our_dir: &Path,
    fio_dir: &Path,
) -> Result<(), String> {
    let names = |j: &[JobCounts]| j.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
    if names(ours) != names(fio) {
        return Err(format!(
            "job names {:?}, fio's {:?}",
            names(ours),
            names(fio)
        ));
    }
    let (ol, fl) = (listing(our_dir), listing(fio_dir));
    if ol != fl {
        return Err(format!("files {ol:?}, fio's {fl:?}"));
    }
    Ok(())
}
