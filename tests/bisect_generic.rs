//! `fsdelta bisect` end to end on a generic axis: a git repository of a small C program,
//! 32 commits after the good one, one of which makes it 25 % slower and one (the first commit a
//! bisection takes) that does not compile. A command test runs `"$FSDELTA_BISECT_TREE/prog"`,
//! which reports the CPU time of its loop, the best of five (CPU time, not wall time, and the
//! best of a few, as timeit and hyperfine's min do, so that the other processes of a busy machine
//! change the numbers little: they only ever add time; the bisection's own repetitions absorb
//! the rest).
//!
//! Why the best of five: on the shared CI machine one loop's CPU time moved by up to 20 %
//! between interleaved runs (a hyperthread sibling's work, the two tests of this file then
//! running at once, now one at a time), and three runs of the reverted bad end once measured
//! +19.7 % and were called bad.
//!
//! Asserted, whatever the timing: the culprit is named and confirmed against its parent, the
//! commit that does not build is skipped, every step is a stored run labelled with the
//! bisection and the commit, the user's checkout is untouched, and `bisect log` and `bisect
//! report` show it.

mod common;

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::Command;

/// The tests of this file run one at a time: each measures CPU time, which the other's builds and
/// runs would disturb.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The loop's iterations per commit (about 10 ms of CPU, run five times): 25 % more from the
/// culprit on.
const BASE: u64 = 8_000_000;

fn prog(iterations: u64, broken: bool) -> String {
    format!(
        r#"#include <stdio.h>
#include <time.h>
static double cpu_ms(void) {{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}}
int main(void) {{
    volatile unsigned long x = 1;
    double best = 1e300;
    for (int k = 0; k < 5; k++) {{
        double a = cpu_ms();
        for (unsigned long i = 0; i < {iterations}UL; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
        double d = cpu_ms() - a;
        if (d < best) best = d;
    }}
    printf("cpu_ms=%.4f\n", best);
    return 0{}
}}
"#,
        if broken {
            " this does not compile"
        } else {
            ";"
        }
    )
}

/// `git` as common::git runs it, its output trimmed (commit ids, status).
fn git(repo: &Path, args: &[&str]) -> String {
    common::git::git(repo, args).trim().to_string()
}

/// The repository: the good commit, then 32 commits; returns (good, broken, culprit, bad).
fn repository(
    repo: &Path,
    culprit_at: usize,
    broken_at: usize,
) -> (String, String, String, String) {
    std::fs::create_dir_all(repo).unwrap();
    git(repo, &["init", "-q", "-b", "main"]);
    let commit = |i: usize, iterations: u64, broken: bool, subject: &str| {
        std::fs::write(repo.join("prog.c"), prog(iterations, broken)).unwrap();
        // Each commit adds a note of its own, so the culprit reverts cleanly on the bad end.
        std::fs::create_dir_all(repo.join("notes")).unwrap();
        std::fs::write(repo.join(format!("notes/{i}")), format!("change {i}\n")).unwrap();
        git(repo, &["add", "-A"]);
        git(repo, &["commit", "-q", "-m", subject]);
        git(repo, &["rev-parse", "HEAD"])
    };
    let good = commit(0, BASE, false, "the good one");
    let (mut broken, mut culprit, mut bad) = (String::new(), String::new(), String::new());
    for i in 1..=32 {
        let slow = i > culprit_at;
        let iterations = if slow { BASE * 5 / 4 } else { BASE };
        let subject = if i == culprit_at + 1 {
            "loop: a quarter more work".to_string()
        } else if i == broken_at + 1 {
            "prog: a typo".to_string()
        } else {
            format!("notes: change {i}")
        };
        let h = commit(i, iterations, i == broken_at + 1, &subject);
        if i == culprit_at + 1 {
            culprit = h.clone();
        }
        if i == broken_at + 1 {
            broken = h.clone();
        }
        bad = h;
    }
    (good, broken, culprit, bad)
}

/// `bisect --name NAME` of `repo` from `good` to main, building prog with cc and measuring it
/// with `suite` in `target`.
fn bisect_args(
    name: &str,
    repo: &Path,
    good: &str,
    suite: &Path,
    target: &Path,
) -> Vec<std::ffi::OsString> {
    let mut a: Vec<std::ffi::OsString> = ["bisect", "--name", name, "--build"]
        .iter()
        .map(Into::into)
        .collect();
    a.push("cc -O1 -o prog prog.c".into());
    a.push("--no-drop-caches".into());
    a.push("--repo".into());
    a.push(repo.into());
    for x in ["--good", good, "--bad", "main", "--suite"] {
        a.push(x.into());
    }
    a.push(suite.into());
    a.push("--target".into());
    a.push(target.into());
    a
}

const SUITE: &str = r#"
name = "prog"
[[test]]
name = "prog"
workload = "command"
command = '"$FSDELTA_BISECT_TREE/prog"'
[[test.metric]]
name = "cpu_ms"
regex = 'cpu_ms=([0-9.]+)'
unit = "ms"
direction = "lower"
required = true
"#;

#[test]
fn a_planted_regression_is_found_confirmed_and_a_broken_commit_skipped() {
    let _serial = serial();
    if !common::require(
        Command::new("cc").arg("--version").output().is_ok()
            && Command::new("git").arg("--version").output().is_ok(),
        "git and a C compiler (cc)",
    ) {
        return;
    }
    let env = common::Env::new();
    let repo = env.path("repo");
    // Candidates are the 32 commits; git bisect's first choice is the 16th (index 15): it
    // does not build. The culprit is the 22nd (index 21).
    let (good, broken, culprit, bad) = repository(&repo, 21, 15);
    let status_before = git(&repo, &["status", "--porcelain"]);
    let suite = env.write("prog.toml", SUITE);
    let target = env.path("target");
    std::fs::create_dir_all(&target).unwrap();
    // A bisection that ends with a range instead of one commit (exit 125) is the honest answer
    // when the machine's load swamps the planted 25 % (under stress-ng one step measured the
    // culprit at +16 % after 12 runs a side and called it unclear); such a chance outcome does
    // not repeat, so a second bisection (a fresh name and state) decides. Every other outcome,
    // a wrong culprit above all, fails at once.
    let mut name = String::new();
    let mut stdout = String::new();
    common::attempts::passes_in_one_of(2, "the planted regression's bisection", |i| {
        name = if i == 0 {
            "e2e".into()
        } else {
            format!("e2e{i}")
        };
        let out = env
            .cmd()
            .env("FSDELTA_CACHE_DIR", env.path("cache"))
            .args(bisect_args(&name, &repo, &good, &suite, &target))
            .args(["--revert"])
            .output()
            .unwrap();
        stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        println!("{stdout}\n--- stderr ---\n{stderr}");
        match out.status.code() {
            Some(0) => Ok(()),
            Some(125) if stdout.contains(&culprit[..12]) => Err(format!(
                "bisect {name} ended with a range that holds the culprit:\n{stdout}"
            )),
            other => panic!("bisect {name} exited {other:?}:\n{stdout}\n{stderr}"),
        }
    });
    assert!(
        stdout.contains(&format!("culprit: {culprit}")),
        "wrong culprit"
    );
    assert!(stdout.contains("subject: loop: a quarter more work"));
    assert!(stdout.contains("author:  Ada Tester <ada@example.org>"));
    assert!(stdout.contains("against its parent with fresh runs: regressed"));
    assert!(stdout.contains("the bad end with it reverted measures: good"));
    assert!(stdout.contains("culprit^ against culprit"), "no comparison");

    // The state: the broken commit skipped, as git bisect skip.
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(env.path(&format!("bisect/{name}/state.json"))).unwrap(),
    )
    .unwrap();
    let commits = state["state"]["commits"].as_array().unwrap();
    assert_eq!(commits.len(), 32);
    assert_eq!(commits[15][0], broken.as_str());
    assert_eq!(
        state["state"]["skipped"][15], true,
        "the broken commit was not skipped"
    );
    assert_eq!(commits.last().unwrap()[0], bad.as_str());

    // Every step is a stored run labelled with the bisection and the commit.
    for commit in [&culprit, &good] {
        let label = format!("bisect/{name}/{}", &commit[..12]);
        let out = env
            .cmd()
            .args(["list", "--label", &label])
            .output()
            .unwrap();
        let rows = String::from_utf8_lossy(&out.stdout).lines().count();
        assert!(
            rows >= 4,
            "runs labelled {label}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }

    // log and report show it; the user's checkout is as it was.
    let log = env.cmd().args(["bisect", "log", &name]).output().unwrap();
    assert!(String::from_utf8_lossy(&log.stdout).contains("build failed"));
    let report = env.cmd().args(["bisect", "report"]).output().unwrap();
    assert!(String::from_utf8_lossy(&report.stdout).contains(&format!("culprit: {culprit}")));
    assert_eq!(git(&repo, &["status", "--porcelain"]), status_before);
    assert_eq!(git(&repo, &["worktree", "list"]).lines().count(), 1);
    assert!(
        !env.path(&format!("cache/bisect/{name}")).exists(),
        "exported trees left behind"
    );
}

/// Ctrl-C (SIGINT to the bisection, as a terminal sends to its process group) keeps the state;
/// `bisect resume` continues from the last finished step and names the culprit.
#[test]
fn an_interrupted_bisection_resumes() {
    let _serial = serial();
    if !common::require(
        Command::new("cc").arg("--version").output().is_ok()
            && Command::new("git").arg("--version").output().is_ok(),
        "git and a C compiler (cc)",
    ) {
        return;
    }
    let env = common::Env::new();
    let repo = env.path("repo");
    let (good, _, culprit, _) = repository(&repo, 9, 30);
    let suite = env.write("prog.toml", SUITE);
    let target = env.path("target");
    std::fs::create_dir_all(&target).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("fsdelta");
    let mut child = Command::new(&bin)
        .env("FSDELTA_DB", env.path("r.sqlite"))
        .env("FSDELTA_STATE_FILE", env.path("state.json"))
        .env("FSDELTA_CACHE_DIR", env.path("cache"))
        .args(bisect_args("ctrlc", &repo, &good, &suite, &target))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(env.path("bisect.err")).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    // Wait until two steps are saved (the ends and one commit), then interrupt the group.
    let state = env.path("bisect/ctrlc/state.json");
    let steps = || -> usize {
        std::fs::read_to_string(&state)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["state"]["steps"].as_array().map(Vec::len))
            .unwrap_or(0)
    };
    while steps() < 2 {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the bisection ended before it was interrupted: {status}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    rustix::process::kill_process_group(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "an interrupted bisection exits 130; it said:\n{}",
        std::fs::read_to_string(env.path("bisect.err")).unwrap_or_default()
    );
    let kept = steps();
    assert!(kept >= 2);
    let out = env
        .cmd()
        .env("FSDELTA_CACHE_DIR", env.path("cache"))
        .args(["bisect", "resume", "ctrlc"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout.contains(&format!("culprit: {culprit}")));
    assert!(steps() > kept, "resume took no step");
}
