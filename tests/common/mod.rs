//! Helpers shared by the end-to-end tests: skipping with a reason (or failing when
//! FSDELTA_REQUIRE_ALL=1), temporary databases, and a tmpfs mount that is always unmounted.
#![allow(dead_code)]

use assert_cmd::Command;
use std::path::{Path, PathBuf};

pub mod attempts;
pub mod fio_vs;
pub mod fuzz;
pub mod git;

/// A suite of one small fs_mark test, "writes" (300 files of 16 KiB).
pub const TINY_SUITE: &str = r#"
name = "tiny"

[[test]]
name = "writes"
workload = "fsmark"
args = "-s 16384 -n 300 -t 1 -S 0"
"#;

/// A suite of one fs_mark test, "files100" (100 empty files).
pub const TINY_FILES100: &str = r#"
name = "tiny"
[[test]]
name = "files100"
workload = "fsmark"
args = "-s 0 -n 100 -t 1 -S 0"
"#;

/// Whether a test that needs `what` may run. Without it, print why the test is skipped, or
/// panic when FSDELTA_REQUIRE_ALL=1 (CI), so that a green CI means everything ran.
pub fn require(available: bool, what: &str) -> bool {
    if available {
        return true;
    }
    if std::env::var("FSDELTA_REQUIRE_ALL").as_deref() == Ok("1") {
        panic!("FSDELTA_REQUIRE_ALL=1 but this test needs {what}");
    }
    eprintln!("SKIPPED: this test needs {what}");
    false
}

/// Whether we run as root.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The fsdelta binary with a private database and no progress noise.
pub fn fsdelta(db: &Path) -> Command {
    let mut c = Command::cargo_bin("fsdelta").unwrap();
    c.env("FSDELTA_DB", db).env_remove("XDG_DATA_HOME");
    c
}

/// A tmpfs of `size` mounted on a fresh temporary directory, unmounted on drop.
pub struct Tmpfs {
    pub dir: tempfile::TempDir,
}

impl Tmpfs {
    pub fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let st = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "fsdelta-test"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(st.success(), "mount tmpfs failed");
        Tmpfs { dir }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

/// A temporary directory with its own store and state file; `cleanup` runs when dropped.
pub struct Env {
    dir: tempfile::TempDir,
}

/// A command test whose metric `v` cycles 1000, 1050, 1100 (a known CV of about 4.8 %), counting
/// its calls in `w/count` of `env`: the work directory and the suite file (`s.toml`).
pub fn cycling_suite(env: &Env) -> (PathBuf, PathBuf) {
    counting_suite(env, "1000 + (n % 3) * 50")
}

/// A suite of one command test, `level`, whose metric `v` (a count, higher is better) is the
/// shell arithmetic `value` of `n`, the number of repetitions run before it over every run of
/// the suite (a counter kept in the work directory): `(n / 3) % 2` is the run's parity at 3
/// repetitions a run. Returns the work directory (the target) and the suite file.
pub fn counting_suite(env: &Env, value: &str) -> (PathBuf, PathBuf) {
    let work = env.path("w");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(work.join("count"), "0\n").unwrap();
    let w = work.display();
    let suite = env.write(
        "s.toml",
        &format!(
            r#"name = "known"
[[test]]
name = "level"
workload = "command"
command = "n=$(cat {w}/count); echo $((n + 1)) > {w}/count; echo \"v $(( {value} ))\""
[[test.metric]]
name = "v"
regex = 'v (\d+)'
unit = "count"
direction = "higher"
"#
        ),
    );
    (work, suite)
}

impl Env {
    pub fn new() -> Env {
        Env {
            dir: tempfile::tempdir_in("/var/tmp").unwrap(),
        }
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }
    pub fn cmd(&self) -> Command {
        let mut c = fsdelta(&self.path("r.sqlite"));
        c.env("FSDELTA_STATE_FILE", self.path("state.json"));
        c
    }
    /// config.toml here: `configs` (`[[config]]` tables) with the scratch location `scratch`
    /// here.
    pub fn config(&self, configs: &str) -> PathBuf {
        self.write(
            "config.toml",
            &format!(
                "scratch = \"{}\"\n{configs}",
                self.path("scratch").display()
            ),
        )
    }
    /// `run -n <n> --quiet --label <label> --suite <suite> --target <target>`, which must not
    /// end with a usage error (2).
    pub fn run_label(&self, n: &str, label: &str, suite: &Path, target: &Path) {
        self.cmd()
            .args(["run", "-n", n, "--quiet", "--label", label, "--suite"])
            .arg(suite)
            .arg("--target")
            .arg(target)
            .assert()
            .code(predicates::ord::ne(2));
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = self.cmd().arg("cleanup").output();
    }
}

/// qemu processes whose parent is `parent`.
pub fn qemu_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let rest = &stat[stat.rfind(')').unwrap_or(0) + 1..];
        let ppid: u32 = rest
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        if ppid == parent && stat.contains("(qemu-system-x86") {
            out.push(pid);
        }
    }
    out
}

/// The JSON object in the output of `fio --output-format=json` or `fsdelta fio` (whatever
/// is printed before it skipped).
pub fn json_of(stdout: &[u8]) -> serde_json::Value {
    let s = String::from_utf8_lossy(stdout);
    serde_json::from_str(&s[s.find('{').expect("a JSON object")..]).unwrap()
}

/// (total_ios, io_bytes) of read, write and trim of job `i` of a fio JSON report.
pub fn fio_counts(v: &serde_json::Value, i: usize) -> Vec<(u64, u64)> {
    ["read", "write", "trim"]
        .iter()
        .map(|d| {
            let x = &v["jobs"][i][d];
            (
                x["total_ios"].as_u64().unwrap(),
                x["io_bytes"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Run `job` (a job file's text, written to `dir`/job.fio) with `fsdelta fio
/// --output-format=json` in `dir`; its JSON report, or a panic with its stderr.
pub fn run_fsdelta_fio(dir: &Path, job: &str) -> serde_json::Value {
    std::fs::write(dir.join("job.fio"), job).unwrap();
    // A job that hangs fails the test after 5 minutes instead of holding CI.
    let out = Command::cargo_bin("fsdelta")
        .unwrap()
        .current_dir(dir)
        .args(["fio", "--output-format=json", "job.fio"])
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out.stdout)
}

/// Whether the real fio (fio 3.33, /usr/bin/fio) runs here to compare with; as `require`.
pub fn require_fio() -> bool {
    let fio = std::process::Command::new("fio")
        .arg("--version")
        .output()
        .is_ok();
    require(fio, "fio 3.33 (/usr/bin/fio) to compare with")
}

/// The real fio for `tool` "fio", else `fsdelta fio`.
pub fn fio_command(tool: &str) -> std::process::Command {
    if tool == "fio" {
        std::process::Command::new("fio")
    } else {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_fsdelta"));
        c.arg("fio");
        c
    }
}

/// Write `job` to `dir`/job.fio and run `tool` ("fio": the real fio, else `fsdelta fio`) in
/// `dir` with `opts` and job.fio; the process's output, whatever its status.
pub fn tool_run(tool: &str, dir: &Path, job: &str, opts: &[&str]) -> std::process::Output {
    std::fs::write(dir.join("job.fio"), job).unwrap();
    let mut c = fio_command(tool);
    c.current_dir(dir)
        .args(opts)
        .arg("job.fio")
        .output()
        .unwrap()
}

/// Write `job` to `dir`/job.fio and run it in `dir` with `tool` ("fio": the real fio, else
/// `fsdelta fio`) and `--output-format=json`; the process's output, whatever its status.
pub fn tool_json(tool: &str, dir: &Path, job: &str) -> std::process::Output {
    tool_run(tool, dir, job, &["--output-format=json"])
}

/// Run `job` with `tool` (as `tool_run`) in `dir` and `--output-format=<format>`, the job file
/// written to a fresh directory outside `dir` (for a `dir` the job fills up).
pub fn tool_run_outside(dir: &Path, tool: &str, job: &str, format: &str) -> std::process::Output {
    let jobdir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let jf = jobdir.path().join("job.fio");
    std::fs::write(&jf, job).unwrap();
    let mut c = fio_command(tool);
    c.current_dir(dir)
        .arg(format!("--output-format={format}"))
        .arg(&jf)
        .output()
        .unwrap()
}

/// Run `job` with `fsdelta fio` and with the real fio, `--output-format=json`, each in a fresh
/// directory under CARGO_TARGET_TMPDIR, and panic with its stderr if either fails; (our
/// directory, our output, fio's directory, fio's output).
pub fn run_ours_and_fio(
    job: &str,
) -> (
    tempfile::TempDir,
    std::process::Output,
    tempfile::TempDir,
    std::process::Output,
) {
    let ours = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let theirs = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let o = tool_json("fsdelta", ours.path(), job);
    assert!(
        o.status.success(),
        "{job}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let f = tool_json("fio", theirs.path(), job);
    assert!(
        f.status.success(),
        "fio: {job}: {}",
        String::from_utf8_lossy(&f.stderr)
    );
    (ours, o, theirs, f)
}

/// Run `job` with the real fio (/usr/bin/fio) in `dir`, as run_fsdelta_fio.
pub fn run_real_fio(dir: &Path, job: &str) -> serde_json::Value {
    std::fs::write(dir.join("job.fio"), job).unwrap();
    let out = std::process::Command::new("fio")
        .current_dir(dir)
        .args(["--output-format=json", "job.fio"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fio failed on\n{job}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out.stdout)
}

/// Every key path of a JSON document; list items are `[]`; `disk_util` is not descended into
/// (its entries depend on the machine's devices).
pub fn key_paths(
    v: &serde_json::Value,
    prefix: &str,
    out: &mut std::collections::BTreeSet<String>,
) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{prefix}.{k}");
                out.insert(p.clone());
                if k != "disk_util" {
                    key_paths(x, &p, out);
                }
            }
        }
        serde_json::Value::Array(items) => {
            for x in items {
                key_paths(x, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// The key paths (`key_paths`) of a JSON document.
pub fn key_set(v: &serde_json::Value) -> std::collections::BTreeSet<String> {
    let mut s = std::collections::BTreeSet::new();
    key_paths(v, "", &mut s);
    s
}

/// The key paths of the JSON document in a fio (or `fsdelta fio`) output.
pub fn json_keys(out: &[u8]) -> std::collections::BTreeSet<String> {
    key_set(&json_of(out))
}

/// fsdelta's own keys in its fio JSON (which clock timed the job), which fio lacks.
pub const OURS_ONLY_KEYS: [&str; 2] = [".jobs[].clocksource", ".jobs[].clocksource_drift_ppm"];

/// Our JSON's key paths are fio's, but for OURS_ONLY_KEYS; else a panic naming `job` and the
/// keys each lacks.
pub fn assert_keys_as_fios(
    job: &str,
    ours: &std::collections::BTreeSet<String>,
    fio: &std::collections::BTreeSet<String>,
) {
    let missing: Vec<&String> = fio.difference(ours).collect();
    let extra: Vec<&String> = ours
        .difference(fio)
        .filter(|k| !OURS_ONLY_KEYS.contains(&k.as_str()))
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{job}: keys fio has and we lack: {missing:#?}; keys we have and fio lacks: {extra:#?}"
    );
}

/// Each .log file of a directory with its lines split into columns (fio's `a, b, c` logs).
pub type FioLogs = std::collections::BTreeMap<String, Vec<Vec<u64>>>;

/// The .log files in `dir`, as FioLogs.
pub fn fio_logs(dir: &Path) -> FioLogs {
    let mut out = std::collections::BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let n = e.unwrap().file_name().to_string_lossy().into_owned();
        if !n.ends_with(".log") {
            continue;
        }
        let text = std::fs::read_to_string(dir.join(&n)).unwrap();
        let lines = text
            .lines()
            .map(|l| l.split(", ").map(|f| f.parse().unwrap()).collect())
            .collect();
        out.insert(n, lines);
    }
    out
}

/// Run `tool` with `args` and job.fio (holding `job`) in a fresh directory under
/// CARGO_TARGET_TMPDIR, panicking with its stderr if it fails; the directory and its logs.
pub fn run_for_logs(tool: &str, args: &[&str], job: &str) -> (tempfile::TempDir, FioLogs) {
    let (d, l, _) = run_for_logs_timed(tool, args, job);
    (d, l)
}

/// [`run_for_logs`], also returning an upper bound of every log time: the milliseconds the
/// process lived, rounded up.
pub fn run_for_logs_timed(
    tool: &str,
    args: &[&str],
    job: &str,
) -> (tempfile::TempDir, FioLogs, u64) {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(d.path().join("job.fio"), job).unwrap();
    let t0 = std::time::Instant::now();
    let o = std::process::Command::new(tool)
        .current_dir(d.path())
        .args(args)
        .arg("job.fio")
        .output()
        .unwrap();
    let lived_ms = t0.elapsed().as_millis() as u64 + 1;
    assert!(
        o.status.success(),
        "{tool}: {job}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let l = fio_logs(d.path());
    (d, l, lived_ms)
}

/// `export latest` as JSON, run by `cmd` (an fsdelta command with its database and
/// environment), which must succeed: the document.
pub fn export_latest(cmd: Command) -> serde_json::Value {
    export_latest_with(cmd, &[])
}

/// `export latest <extra>`, as `export_latest`.
pub fn export_latest_with(mut cmd: Command, extra: &[&str]) -> serde_json::Value {
    let out = cmd.args(["export", "latest"]).args(extra).output().unwrap();
    assert!(
        out.status.success(),
        "export latest: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "export latest: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Mounts and loop devices (by their backing files) under `root`, one line each.
pub fn mounts_and_loops_under(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .filter(|l| {
            l.split(' ')
                .nth(1)
                .is_some_and(|t| Path::new(t).starts_with(root))
        })
        .map(|l| format!("mount: {l}"))
        .collect();
    for e in std::fs::read_dir("/sys/block").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("loop") {
            continue;
        }
        let backing =
            std::fs::read_to_string(e.path().join("loop/backing_file")).unwrap_or_default();
        if Path::new(backing.trim()).starts_with(root) {
            out.push(format!("loop: /dev/{name} -> {}", backing.trim()));
        }
    }
    out
}

/// `fsdelta run -n 1 --quiet <flags> --suite <suite> --target <target>` on the database `db`,
/// to be run by the caller.
pub fn run_suite(db: &Path, flags: &[&str], suite: &Path, target: &Path) -> Command {
    let mut c = fsdelta(db);
    c.args(["run", "-n", "1", "--quiet"])
        .args(flags)
        .arg("--suite")
        .arg(suite)
        .arg("--target")
        .arg(target);
    c
}

/// The output of `show latest --raw` on the database `db`, which must succeed.
pub fn show_raw(db: &Path) -> String {
    let out = fsdelta(db)
        .args(["show", "latest", "--raw"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// What follows the "fs_mark iterations:" heading of `show --raw`'s text, or a panic with it.
pub fn fs_mark_table(text: &str) -> &str {
    text.split("fs_mark iterations:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no fs_mark table: {text}"))
}

/// A child process that said it was ready (a stdout line ending in "ready"); killed and reaped
/// on drop.
pub struct ReadyChild(pub std::process::Child);

impl ReadyChild {
    /// Spawn `cmd` with its stdout piped and wait for its "ready" line; a panic naming `what` if
    /// its stdout ends before.
    pub fn spawn(cmd: &mut std::process::Command, what: &str) -> ReadyChild {
        use std::io::BufRead;
        let mut c = cmd.stdout(std::process::Stdio::piped()).spawn().unwrap();
        let mut r = std::io::BufReader::new(c.stdout.take().unwrap());
        let child = ReadyChild(c);
        loop {
            let mut line = String::new();
            assert!(
                r.read_line(&mut line).unwrap() > 0,
                "{what} did not get ready"
            );
            if line.trim().ends_with("ready") {
                break;
            }
        }
        // Keep the pipe open (the child may print more); it is closed when the child is reaped.
        std::mem::forget(r);
        child
    }
}

impl Drop for ReadyChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The body of a test that holds a device only when `hold_device` runs this test binary again:
/// with the environment variable `var` naming a device, hold it open with O_EXCL, say "ready"
/// and wait to be killed (120 s at most); without `var`, nothing.
pub fn hold_device_when_asked(var: &str) {
    let Some(dev) = std::env::var_os(var) else {
        return;
    };
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_EXCL)
        .open(&dev)
        .unwrap();
    println!("ready");
    std::io::stdout().flush().unwrap();
    std::thread::sleep(std::time::Duration::from_secs(120));
}

/// This test binary again, running only its test `holder` (which calls
/// `hold_device_when_asked(var)`) with `var` set to `dev`: `dev` is held open exclusively once
/// this returns, until the child is dropped.
pub fn hold_device(holder: &str, var: &str, dev: &Path) -> ReadyChild {
    ReadyChild::spawn(
        std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", holder, "--nocapture", "--test-threads=1"])
            .env(var, dev)
            .stderr(std::process::Stdio::inherit()),
        "the holder",
    )
}

/// The Debian kernel package the VM tests boot for `which` ("A": 6.1.0-47, "B": 6.1.0-50):
/// FSDELTA_VM_KERNEL_<which>, else its .deb in /var/cache/fsdelta-ci/kernels (see .ci/run).
pub fn vm_kernel(which: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(format!("FSDELTA_VM_KERNEL_{which}")) {
        return Some(PathBuf::from(p));
    }
    let release = if which == "A" {
        "6.1.0-47-amd64"
    } else {
        "6.1.0-50-amd64"
    };
    std::fs::read_dir("/var/cache/fsdelta-ci/kernels")
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name().is_some_and(|n| {
                n.to_string_lossy()
                    .starts_with(&format!("linux-image-{release}_"))
            })
        })
}

/// Whether guests can boot here: qemu-system-x86_64 and a static busybox; as `require`.
pub fn require_qemu() -> bool {
    require(
        ::fsdelta::vm::qemu::find_qemu().is_ok(),
        "qemu-system-x86_64 (apt-get install qemu-system-x86)",
    ) && require(
        ::fsdelta::vm::initramfs::check_busybox().is_ok(),
        "a static /bin/busybox (apt-get install busybox-static)",
    )
}

/// The VM tests' suite: a tiny fs_mark test ("files") and a tiny fio test ("randwrite").
pub const VM_SUITE: &str = r#"
[[test]]
name = "files"
workload = "fsmark"
args = "-s 4096 -n 300 -t 1 -S 1"

[[test]]
name = "randwrite"
workload = "fio"
job = """
[rw]
rw=randwrite
bs=4k
size=8m
fsync=32
"""
"#;

pub mod ondisk;

/// A temporary directory with a configuration file, a suite file, a database (db.sqlite) and
/// a state file (state.json).
pub struct Setup {
    pub dir: tempfile::TempDir,
}

impl Setup {
    /// In `dir`: `config_file` holding `configs` with the scratch location `scratch` here, and
    /// `suite_file` holding `suite`.
    pub fn in_dir(
        dir: tempfile::TempDir,
        config_file: &str,
        configs: &str,
        suite_file: &str,
        suite: &str,
    ) -> Setup {
        let scratch = dir.path().join("scratch");
        std::fs::write(
            dir.path().join(config_file),
            format!("scratch = \"{}\"\n{configs}", scratch.display()),
        )
        .unwrap();
        std::fs::write(dir.path().join(suite_file), suite).unwrap();
        Setup { dir }
    }
    pub fn p(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    /// fsdelta with this database and state file.
    pub fn cmd(&self) -> Command {
        let mut c = fsdelta(&self.p("db.sqlite"));
        c.env("FSDELTA_STATE_FILE", self.p("state.json"));
        c
    }
    /// Nothing is left under the scratch location.
    pub fn assert_scratch_empty(&self) {
        let left: Vec<_> = std::fs::read_dir(self.p("scratch"))
            .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
    /// The state file names nothing left to clean up.
    pub fn assert_state_empty(&self) {
        let state = std::fs::read_to_string(self.p("state.json")).unwrap_or_default();
        assert!(
            !state.contains("\"kind\""),
            "state file still names: {state}"
        );
    }
}

/// A queue job of one repetition of the suite `suite` (its text `text`), placed anywhere, with
/// no configuration, baseline or test filter and three attempts.
pub fn suite_job(label: &str, suite: &str, text: String) -> ::fsdelta::queue::NewJob {
    ::fsdelta::queue::NewJob {
        label: label.into(),
        suite_name: suite.into(),
        suite_text: Some(text),
        config_name: None,
        config_text: None,
        tests: vec![],
        repeat: 1,
        placement: ::fsdelta::queue::Placement::Any,
        baseline: None,
        max_attempts: 3,
    }
}

/// Every `<svg>...</svg>` of an HTML page (the report never nests them).
pub fn svgs(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("<svg") {
        let j = rest[i..].find("</svg>").expect("every <svg> is closed") + i + 6;
        out.push(&rest[i..j]);
        rest = &rest[j..];
    }
    out
}

/// For each of `labels`, `run -n 2 --quiet --no-drop-caches --label <label> --suite <suite>
/// --target <target>` with a command from `fsdelta` (the binary with its database), which must
/// succeed.
pub fn run_labelled_twice(
    fsdelta: impl Fn() -> Command,
    labels: &[&str],
    suite: &Path,
    target: &Path,
) {
    for label in labels {
        fsdelta()
            .args([
                "run",
                "-n",
                "2",
                "--quiet",
                "--no-drop-caches",
                "--label",
                label,
            ])
            .arg("--suite")
            .arg(suite)
            .arg("--target")
            .arg(target)
            .assert()
            .success();
    }
}

/// `report <args> -o <out>` on the database `db`, which must succeed; its output.
pub fn report(db: &Path, args: &[&str], out: &Path) -> std::process::Output {
    let o = fsdelta(db)
        .arg("report")
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "fsdelta report failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The fleet tests' setup (tests/fleet_cli.rs, tests/fleet_canary.rs): a scratch database on
/// the test server named by FSDELTA_TEST_PG (dropped with it), or `None` after printing why the
/// test is skipped (a failure under FSDELTA_REQUIRE_ALL=1); and the binary run in `work` on
/// `url`, with its state file there.
pub fn fleet_scratch() -> Option<fsdelta::store::postgres::ScratchDatabase> {
    let url = std::env::var("FSDELTA_TEST_PG")
        .ok()
        .filter(|u| !u.is_empty());
    if !require(
        url.is_some(),
        "FSDELTA_TEST_PG (a PostgreSQL administrator URL)",
    ) {
        return None;
    }
    Some(fsdelta::store::postgres::ScratchDatabase::create(&url.unwrap()).unwrap())
}

/// `fsdelta` in `work` on the store `url` (see [`fleet_scratch`]).
pub fn fleet_cmd(url: &str, work: &Path) -> Command {
    let mut c = Command::cargo_bin("fsdelta").unwrap();
    c.env("FSDELTA_DB", url)
        .env("FSDELTA_STATE_FILE", work.join("state.json"))
        .current_dir(work);
    c
}
