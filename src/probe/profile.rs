//! Kernel and user CPU profiles of a sample: `perf record -e cpu-clock -a -g` around the workload,
//! folded into stacks (`comm;frame;...;leaf count`, root first, kernel frames suffixed `_[k]`)
//! and compressed for the store.
//!
//! Why: a verdict says that something changed, a profile says why (44 % of CPU in
//! `_raw_spin_unlock_irqrestore` explains a 40 % drop of files/s). Recording is system-wide
//! because the filesystem's work happens in kernel threads (writeback, journal) as much as in
//! the workload's own threads; the [`ProfileScope`] is applied when folding, from perf's task
//! records, so another process's work does not describe ours.
//!
//! This module must never decide anything about a profile (that is `report::profile`) and must
//! never leave perf running or its data file behind: perf starts disabled and is enabled through
//! its control FIFO only once it is ready, dies with this process (`PR_SET_PDEATHSIG`), is
//! killed when a [`Recorder`] is dropped, and its data lives in a private temporary directory
//! removed when the [`Recording`] is folded or dropped (or, after a kill -9, by the next
//! profiled run: [`remove_stale`]).

use crate::model::StoredProfile;
use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use inferno::collapse::Collapse;
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The at-rest format of [`Profile::encode`]: gzip of the folded-stack text.
pub const FORMAT_FOLDED_GZ: &str = "folded-gz-v1";

/// Whose CPU time a profile keeps. perf always records the whole machine (the filesystem's work
/// runs in kernel threads as much as in the workload); the scope is applied when the recording
/// is folded, from perf's own task records (the process tree it synthesises at start, and every
/// fork while it records).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ProfileScope {
    /// The workload's process and every process it started, plus kernel threads (kthreadd and
    /// its children: kworker, flush, btrfs-*, jbd2, ...). Another user's fio or a qemu beside
    /// the run is left out; idle time too.
    #[default]
    WorkloadKthreads,
    /// The workload alone: its process and its descendants.
    Workload,
    /// Everything perf saw, idle included (what `perf record -a` gives).
    System,
}

impl ProfileScope {
    /// The name `--profile-scope` takes and sample facts record.
    pub fn name(self) -> &'static str {
        match self {
            ProfileScope::WorkloadKthreads => "workload+kthreads",
            ProfileScope::Workload => "workload",
            ProfileScope::System => "system",
        }
    }
}

/// The pid of kthreadd, the parent of every kernel thread.
const KTHREADD: u32 = 2;

/// Keep only the samples of `scope` from `perf script --show-task-events` output printed with
/// `pid/tid` (see [`SCOPED_FIELDS`]): the processes descending from `root` (and kernel threads,
/// when the scope has them), but not `perf` (perf's own process, a child of `root`). Task
/// records themselves are dropped; samples pass unchanged.
pub fn filter_script(
    script: impl BufRead,
    scope: ProfileScope,
    root: u32,
    perf: u32,
    out: &mut impl Write,
) -> io::Result<()> {
    use std::collections::HashSet;
    let mut inside: HashSet<u32> = HashSet::from([root]);
    let mut kthreads: HashSet<u32> = HashSet::from([KTHREADD]);
    let mut keeping = false;
    for line in script.lines() {
        let line = line?;
        if line.starts_with(|c: char| c.is_whitespace()) || line.is_empty() {
            if keeping {
                writeln!(out, "{line}")?;
            }
            if line.is_empty() {
                keeping = false;
            }
            continue;
        }
        if let Some(rest) = line.split_once("PERF_RECORD_FORK(").map(|(_, r)| r) {
            // PERF_RECORD_FORK(child_pid:child_tid):(parent_pid:parent_tid)
            let pid_of = |t: &str| t.split(':').next().and_then(|p| p.parse::<u32>().ok());
            let mut parts = rest.split("):(");
            let child = parts.next().and_then(pid_of);
            let parent = parts.next().and_then(pid_of);
            if let (Some(c), Some(p)) = (child, parent)
                && c != p
            {
                if inside.contains(&p) && c != perf {
                    inside.insert(c);
                }
                if kthreads.contains(&p) {
                    kthreads.insert(c);
                }
            }
            keeping = false;
            continue;
        }
        if line.contains("PERF_RECORD_") {
            keeping = false;
            continue;
        }
        let pid = line
            .split_whitespace()
            .find_map(|t| {
                t.split_once('/').filter(|(a, b)| {
                    !a.is_empty()
                        && a.bytes().all(|c| c.is_ascii_digit())
                        && !b.is_empty()
                        && b.bytes().all(|c| c.is_ascii_digit())
                })
            })
            .and_then(|(p, _)| p.parse::<u32>().ok());
        keeping = match (scope, pid) {
            (ProfileScope::System, _) => true,
            (_, None) => false,
            (ProfileScope::Workload, Some(p)) => inside.contains(&p),
            (ProfileScope::WorkloadKthreads, Some(p)) => {
                inside.contains(&p) || kthreads.contains(&p)
            }
        };
        if keeping {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// The `perf script` fields of a scoped fold: the default ones, with `pid/tid` instead of the
/// thread id alone, so that a sample can be traced to its process.
pub const SCOPED_FIELDS: &str = "comm,pid,tid,cpu,time,period,event,ip,sym,symoff,dso";

/// The frame perf gives an address it cannot name.
const UNKNOWN: &str = "[unknown]";

/// Environment variable naming the perf binary (default `perf` on the PATH).
pub const PERF_ENV: &str = "FSDELTA_PERF";

/// How long perf may take to become ready, or to write its data after SIGINT.
const PERF_TIMEOUT: Duration = Duration::from_secs(60);

/// Why no profile could be recorded or read.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// No perf binary.
    #[error(
        "cannot run perf ({0}): install Debian's package linux-perf (`apt-get install linux-perf`), \
         or run with --profile=optional to go on without profiles"
    )]
    NotInstalled(String),
    /// perf exists but may not record the whole system.
    #[error(
        "perf may not profile the whole system (kernel.perf_event_paranoid is {paranoid}): run \
         fsdelta as root, or allow it with `sysctl kernel.perf_event_paranoid=-1`, or run with \
         --profile=optional to go on without profiles ({detail})"
    )]
    NotPermitted {
        /// The sysctl's current value.
        paranoid: String,
        /// perf's own words.
        detail: String,
    },
    /// perf ran and failed.
    #[error("perf failed: {0}")]
    Failed(String),
    /// A stored profile that this version cannot read.
    #[error("a stored profile cannot be read: {0}")]
    Corrupt(String),
}

/// Folded stacks: for each distinct stack (`comm;outer;...;leaf`, kernel frames ending in
/// `_[k]`), the CPU time sampled in it, in nanoseconds (each cpu-clock sample weighs its period,
/// so the shares stay right if perf lowers its frequency).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// Stack to sample count.
    pub stacks: BTreeMap<String, u64>,
}

impl Profile {
    /// Read folded-stack text (`stack count` per line; blank lines ignored).
    pub fn parse_folded(text: &str) -> Result<Profile, ProfileError> {
        let mut p = Profile::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim_end();
            if line.is_empty() {
                continue;
            }
            let (stack, count) = line
                .rsplit_once(' ')
                .and_then(|(s, c)| Some((s, c.parse::<u64>().ok()?)))
                .ok_or_else(|| {
                    ProfileError::Corrupt(format!(
                        "line {} is not `stack count`: {line:.80}",
                        i + 1
                    ))
                })?;
            *p.stacks.entry(stack.to_string()).or_default() += count;
        }
        Ok(p)
    }

    /// Folded-stack text, one `stack count` line per stack, sorted by stack.
    pub fn to_folded(&self) -> String {
        let mut out = String::new();
        for (stack, count) in &self.stacks {
            out.push_str(stack);
            out.push(' ');
            out.push_str(&count.to_string());
            out.push('\n');
        }
        out
    }

    /// Total CPU time sampled, nanoseconds.
    pub fn total(&self) -> u64 {
        self.stacks.values().sum()
    }

    /// Whether no sample was recorded.
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    /// Add the samples of `other` (pooling the repetitions of a test).
    pub fn merge(&mut self, other: &Profile) {
        for (stack, count) in &other.stacks {
            *self.stacks.entry(stack.clone()).or_default() += count;
        }
    }

    /// Fold the text of `perf script` (inferno's perf collapser, kernel frames annotated).
    pub fn from_perf_script(script: impl BufRead) -> Result<Profile, ProfileError> {
        let mut opts = inferno::collapse::perf::Options::default();
        opts.annotate_kernel = true;
        opts.nthreads = 1;
        let mut folded = Vec::new();
        inferno::collapse::perf::Folder::from(opts)
            .collapse(script, &mut folded)
            .map_err(|e| ProfileError::Failed(format!("folding perf script output: {e}")))?;
        let text = String::from_utf8_lossy(&folded);
        let raw = Profile::parse_folded(&text)?;
        // Code built without frame pointers gives towers of `[unknown]` frames, hundreds deep,
        // that bury a flame graph; one such frame says as much.
        let mut p = Profile::default();
        for (stack, count) in raw.stacks {
            let mut kept: Vec<&str> = Vec::new();
            for frame in stack.split(';') {
                if !(frame == UNKNOWN && kept.last() == Some(&UNKNOWN)) {
                    kept.push(frame);
                }
            }
            *p.stacks.entry(kept.join(";")).or_default() += count;
        }
        Ok(p)
    }

    /// The compressed form kept in the store.
    pub fn encode(&self) -> StoredProfile {
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(self.to_folded().as_bytes())
            .expect("writing to a Vec cannot fail");
        StoredProfile {
            format: FORMAT_FOLDED_GZ.to_string(),
            data: enc.finish().expect("writing to a Vec cannot fail"),
        }
    }

    /// Read a stored profile back.
    pub fn decode(stored: &StoredProfile) -> Result<Profile, ProfileError> {
        if stored.format != FORMAT_FOLDED_GZ {
            return Err(ProfileError::Corrupt(format!(
                "format '{}' is unknown to this fsdelta (it reads {FORMAT_FOLDED_GZ}); upgrade fsdelta",
                stored.format
            )));
        }
        let mut text = String::new();
        GzDecoder::new(stored.data.as_slice())
            .read_to_string(&mut text)
            .map_err(|e| ProfileError::Corrupt(format!("decompressing: {e}")))?;
        Profile::parse_folded(&text)
    }
}

/// Prefix of the private directories, followed by `<pid>-<n>`.
const DIR_PREFIX: &str = "fsdelta-perf-";

/// A private temporary directory, removed on drop.
#[derive(Debug)]
struct PrivateDir(PathBuf);

impl PrivateDir {
    fn create() -> Result<PrivateDir, ProfileError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = std::env::temp_dir().join(format!(
            "{DIR_PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir(&path).map_err(|e| {
            ProfileError::Failed(format!(
                "creating {}: {e} (set TMPDIR to a writable directory)",
                path.display()
            ))
        })?;
        Ok(PrivateDir(path))
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Remove the perf directories in `tmp` left by fsdelta processes that no longer exist (killed
/// with -9 while recording); returns how many were removed.
pub fn remove_stale(tmp: &Path) -> usize {
    let Ok(entries) = fs::read_dir(tmp) else {
        return 0;
    };
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(DIR_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() && fs::remove_dir_all(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

fn perf_binary() -> PathBuf {
    std::env::var_os(PERF_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("perf"))
}

fn paranoid() -> String {
    fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Turn perf's complaint into an error that says how to fix it.
pub fn classify_failure(stderr: &str, paranoid: &str) -> ProfileError {
    let s = stderr.trim();
    let has = |needle: &str| s.to_ascii_lowercase().contains(needle);
    if has("perf_event_paranoid") || has("permission denied") || has("not permitted") {
        let detail = s
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.eq_ignore_ascii_case("error:"))
            .unwrap_or(s)
            .to_string();
        ProfileError::NotPermitted {
            paranoid: paranoid.to_string(),
            detail,
        }
    } else if has("not found for kernel") || has("command not found") {
        ProfileError::NotInstalled(s.lines().next().unwrap_or(s).to_string())
    } else {
        let tail: Vec<&str> = s.lines().rev().take(4).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        ProfileError::Failed(if tail.is_empty() {
            "it exited without saying why".to_string()
        } else {
            tail.join(" / ")
        })
    }
}

fn mkfifo(path: &Path) -> Result<(), ProfileError> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|e| ProfileError::Failed(e.to_string()))?;
    // SAFETY: `c` is a valid NUL-terminated path.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        return Err(ProfileError::Failed(format!(
            "mkfifo {}: {}",
            path.display(),
            io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Wait until `fd` is readable, up to `ms` milliseconds.
fn readable(fd: &File, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut p, 1, ms) > 0 }
}

/// perf recording the whole system; stop it with [`Recorder::stop`].
#[derive(Debug)]
pub struct Recorder {
    child: Option<Child>,
    dir: PrivateDir,
    data: PathBuf,
}

impl Recorder {
    /// Start `perf record -e cpu-clock -a -g` and return once it samples. perf starts disabled
    /// and is enabled through its control FIFO, so its own start-up is not in the profile.
    pub fn start() -> Result<Recorder, ProfileError> {
        let dir = PrivateDir::create()?;
        let data = dir.0.join("perf.data");
        let ctl_path = dir.0.join("ctl");
        let ack_path = dir.0.join("ack");
        mkfifo(&ctl_path)?;
        mkfifo(&ack_path)?;
        let stderr = File::create(dir.0.join("stderr"))
            .map_err(|e| ProfileError::Failed(format!("creating perf's log: {e}")))?;
        let mut cmd = Command::new(perf_binary());
        cmd.args(["record", "-e", "cpu-clock", "-a", "-g", "--no-buildid"])
            .args(["--no-buildid-cache", "--delay=-1", "--control"])
            .arg(format!(
                "fifo:{},{}",
                ctl_path.display(),
                ack_path.display()
            ))
            .arg("-o")
            .arg(&data)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        // perf cannot outlive a killed fsdelta.
        crate::os::child::dies_with_this_thread(&mut cmd);
        let child = cmd.spawn().map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                ProfileError::NotInstalled(format!("{} not found", perf_binary().display()))
            } else {
                ProfileError::Failed(format!("starting {}: {e}", perf_binary().display()))
            }
        })?;
        let mut rec = Recorder {
            child: Some(child),
            dir,
            data,
        };
        // Opening a FIFO read-write never blocks, even before perf opened its end.
        let open = |p: &Path| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .open(p)
                .map_err(|e| ProfileError::Failed(format!("opening {}: {e}", p.display())))
        };
        let mut ctl = open(&ctl_path)?;
        let ack = open(&ack_path)?;
        ctl.write_all(b"enable\n")
            .map_err(|e| ProfileError::Failed(format!("enabling perf: {e}")))?;
        let t0 = Instant::now();
        loop {
            if readable(&ack, 100) {
                let mut line = String::new();
                BufReader::new(&ack)
                    .read_line(&mut line)
                    .map_err(|e| ProfileError::Failed(format!("reading perf's ack: {e}")))?;
                if line.trim() == "ack" {
                    return Ok(rec);
                }
                return Err(ProfileError::Failed(format!(
                    "perf answered '{}' instead of ack",
                    line.trim()
                )));
            }
            let child = rec.child.as_mut().expect("running");
            if let Ok(Some(_)) = child.try_wait() {
                rec.child = None;
                let log = fs::read_to_string(rec.dir.0.join("stderr")).unwrap_or_default();
                return Err(classify_failure(&log, &paranoid()));
            }
            if t0.elapsed() > PERF_TIMEOUT {
                return Err(ProfileError::Failed(format!(
                    "perf did not start sampling within {} s",
                    PERF_TIMEOUT.as_secs()
                )));
            }
        }
    }

    /// Stop perf (SIGINT, as Ctrl-C would) and wait until its data is written.
    pub fn stop(mut self) -> Result<Recording, ProfileError> {
        let mut child = self.child.take().expect("running");
        let pid = rustix::process::Pid::from_child(&child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
        let t0 = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(st)) => break st,
                Ok(None) if t0.elapsed() > PERF_TIMEOUT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(ProfileError::Failed(format!(
                        "perf did not stop within {} s of SIGINT",
                        PERF_TIMEOUT.as_secs()
                    )));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(ProfileError::Failed(format!("waiting for perf: {e}"))),
            }
        };
        // perf re-raises the SIGINT it was stopped with once its data is written; any other
        // way out, or no data, means it failed.
        let stopped = status.success() || status.signal() == Some(libc::SIGINT);
        if !stopped || fs::metadata(&self.data).map_or(true, |m| m.len() == 0) {
            let log = fs::read_to_string(self.dir.0.join("stderr")).unwrap_or_default();
            return Err(classify_failure(&log, &paranoid()));
        }
        let dir = std::mem::replace(&mut self.dir, PrivateDir(PathBuf::new()));
        Ok(Recording {
            dir,
            data: self.data.clone(),
            perf: pid.as_raw_nonzero().get() as u32,
        })
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// perf's data of one sample, not yet folded; the file is deleted on drop.
#[derive(Debug)]
pub struct Recording {
    dir: PrivateDir,
    data: PathBuf,
    /// perf's pid, left out of scoped profiles.
    perf: u32,
}

impl Recording {
    /// Size of perf's data file, bytes.
    pub fn data_bytes(&self) -> u64 {
        fs::metadata(&self.data).map(|m| m.len()).unwrap_or(0)
    }

    /// Run `perf script` and fold its output, keeping what `scope` keeps of the processes
    /// descending from `root` (this process, for the workloads it runs); the data file is
    /// deleted afterwards.
    pub fn fold(self, scope: ProfileScope, root: u32) -> Result<Profile, ProfileError> {
        let mut cmd = Command::new(perf_binary());
        cmd.arg("script").arg("-i").arg(&self.data);
        if scope != ProfileScope::System {
            cmd.args(["--show-task-events", "-F", SCOPED_FIELDS]);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| ProfileError::Failed(format!("starting perf script: {e}")))?;
        let out = child.stdout.take().expect("piped");
        let folded = if scope == ProfileScope::System {
            Profile::from_perf_script(BufReader::new(out))
        } else {
            let mut kept = Vec::new();
            filter_script(BufReader::new(out), scope, root, self.perf, &mut kept)
                .map_err(|e| ProfileError::Failed(format!("reading perf script output: {e}")))
                .and_then(|()| Profile::from_perf_script(&kept[..]))
        };
        let status = child
            .wait()
            .map_err(|e| ProfileError::Failed(format!("waiting for perf script: {e}")))?;
        let profile = folded?;
        if !status.success() {
            return Err(ProfileError::Failed(format!(
                "perf script -i {} exited with {status}",
                self.data.display()
            )));
        }
        drop(self.dir);
        Ok(profile)
    }
}

/// Whether this machine can record profiles: start perf and stop it at once. Removes what
/// killed fsdelta processes left in the temporary directory first.
pub fn check() -> Result<(), ProfileError> {
    remove_stale(&std::env::temp_dir());
    Recorder::start()?.stop().map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `perf script --show-task-events -F comm,pid,tid,...` as perf 6.1 prints it (shortened):
    /// the synthesised tree at time 0, a fork while recording, samples of the workload (pid 100,
    /// its worker thread and a child 300), a kernel thread, perf (pid 200), a stranger and idle.
    const SCOPED: &str = "\
swapper     0/0     [000]     0.000000: PERF_RECORD_FORK(2:2):(0:0)
kthreadd     0/0     [000]     0.000000: PERF_RECORD_FORK(14:14):(2:2)
ksoftirqd/0     0/0     [000]     0.000000: PERF_RECORD_COMM: ksoftirqd/0:14/14
fsdelta     0/0     [000]     0.000000: PERF_RECORD_FORK(200:200):(100:100)
fsdelta  100/100  [001]  1505.238693: PERF_RECORD_FORK(100:101):(100:100)
fsdelta  100/100  [001]  1505.238700: PERF_RECORD_FORK(300:300):(100:100)
sh  300/300  [001]  1505.238701: PERF_RECORD_COMM exec: sh:300/300
fsmark-0  100/101  [000]  1505.300000:     250000 cpu-clock: 
\tffffffff8226e69c _raw_spin_lock+0xc ([kernel.kallsyms])

sh  300/300  [001]  1505.300001:     250000 cpu-clock: 
\t          1234 main+0x4 (/usr/bin/dash)

ksoftirqd/0  14/14  [000]  1505.300002:     250000 cpu-clock: 
\tffffffff81234567 run_ksoftirqd+0xb ([kernel.kallsyms])

perf  200/200  [000]  1505.300003:     250000 cpu-clock: 
\tffffffff81234568 perf_poll+0xb ([kernel.kallsyms])

lto cgu.05  3982/7897  [000]  1505.300004:     250000 cpu-clock: 
\t         940a72c CodeGenPrepare::_run+0x1 (/usr/lib/libLLVM.so)

swapper  0/0  [001]  1505.300005:     250000 cpu-clock: 
\tffffffff81234569 pv_native_safe_halt+0xb ([kernel.kallsyms])

";

    fn scoped(scope: ProfileScope) -> Vec<String> {
        let mut out = Vec::new();
        filter_script(SCOPED.as_bytes(), scope, 100, 200, &mut out).unwrap();
        let p = Profile::from_perf_script(&out[..]).unwrap();
        let mut roots: Vec<String> = p
            .stacks
            .keys()
            .map(|s| s.split(';').next().unwrap().to_string())
            .collect();
        roots.sort();
        roots.dedup();
        roots
    }

    #[test]
    fn a_scoped_fold_keeps_the_workload_its_children_and_kernel_threads_only() {
        assert_eq!(scoped(ProfileScope::Workload), ["fsmark-0", "sh"]);
        assert_eq!(
            scoped(ProfileScope::WorkloadKthreads),
            ["fsmark-0", "ksoftirqd/0", "sh"]
        );
        let mut out = Vec::new();
        filter_script(SCOPED.as_bytes(), ProfileScope::System, 100, 200, &mut out).unwrap();
        let all = Profile::from_perf_script(&out[..]).unwrap();
        assert_eq!(
            all.total(),
            6 * 250_000,
            "system keeps every sample, idle and perf included"
        );
    }

    const SCRIPT: &str = "\
fsmark-0 24352 [000]  2185.436665:     250000 cpu-clock: 
\tffffffff8226e69c _raw_spin_lock+0xc ([kernel.kallsyms])
\tffffffff816fe3b2 __d_instantiate+0x32 ([kernel.kallsyms])
\t           f8090 __GI___libc_open+0xd0 (/usr/lib/x86_64-linux-gnu/libc.so.6)

fsmark-0 24352 [000]  2185.436916:     250000 cpu-clock: 
\tffffffff8226e69c _raw_spin_lock+0xc ([kernel.kallsyms])
\tffffffff816fe3b2 __d_instantiate+0x32 ([kernel.kallsyms])
\t           f8090 __GI___libc_open+0xd0 (/usr/lib/x86_64-linux-gnu/libc.so.6)

swapper 0 [001]  2185.437000:     250000 cpu-clock: 
\tffffffff81234567 pv_native_safe_halt+0xb ([kernel.kallsyms])

rustc 4242 [001]  2185.437250:     250000 cpu-clock: 
\t          1234 intern_ty+0x4 (/usr/bin/rustc)
\t    7f0000000001 [unknown] ([unknown])
\t    7f0000000002 [unknown] ([unknown])
\t    7f0000000003 [unknown] ([unknown])
\t          5678 main+0x8 (/usr/bin/rustc)

";

    #[test]
    fn perf_script_folds_with_kernel_frames_marked() {
        let p = Profile::from_perf_script(SCRIPT.as_bytes()).unwrap();
        // Weighted by the 250 us period of each sample.
        assert_eq!(p.total(), 1_000_000);
        // A run of unnamed frames folds into one.
        assert_eq!(
            p.stacks.get("rustc;main;[unknown];intern_ty"),
            Some(&250_000),
            "{p:?}"
        );
        assert_eq!(
            p.stacks
                .get("fsmark-0;__GI___libc_open;__d_instantiate_[k];_raw_spin_lock_[k]"),
            Some(&500_000),
            "{p:?}"
        );
        assert_eq!(
            p.stacks.get("swapper;pv_native_safe_halt_[k]"),
            Some(&250_000)
        );
    }

    #[test]
    fn encoding_round_trips_and_merging_adds() {
        let p = Profile::parse_folded("a;b 3\na;c_[k] 2\n\na;b 1\n").unwrap();
        assert_eq!(p.stacks["a;b"], 4);
        let back = Profile::decode(&p.encode()).unwrap();
        assert_eq!(back, p);
        let mut m = p.clone();
        m.merge(&back);
        assert_eq!(m.total(), 12);
        assert!(Profile::parse_folded("a;b x\n").is_err());
        let bad = StoredProfile {
            format: "other".into(),
            data: vec![],
        };
        assert!(
            Profile::decode(&bad)
                .unwrap_err()
                .to_string()
                .contains("upgrade")
        );
    }

    #[test]
    fn only_the_directories_of_dead_processes_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        // Above the kernel's largest pid (2^22): never alive.
        let dead = tmp.path().join(format!("{DIR_PREFIX}99999999-0"));
        let alive = tmp
            .path()
            .join(format!("{DIR_PREFIX}{}-3", std::process::id()));
        let other = tmp.path().join("fsdelta-perf-notapid-1");
        for d in [&dead, &alive, &other] {
            fs::create_dir(d).unwrap();
        }
        fs::write(dead.join("perf.data"), b"x").unwrap();
        assert_eq!(remove_stale(tmp.path()), 1);
        assert!(!dead.exists());
        assert!(alive.exists() && other.exists());
    }

    #[test]
    fn perfs_permission_error_names_the_sysctl() {
        // perf 6.1's words when run as an unprivileged user with perf_event_paranoid = 2.
        let stderr = "Error:\nAccess to performance monitoring and observability operations is limited.\n\
                      Consider adjusting /proc/sys/kernel/perf_event_paranoid setting to open\n";
        let e = classify_failure(stderr, "2");
        assert!(matches!(e, ProfileError::NotPermitted { .. }), "{e:?}");
        let s = e.to_string();
        assert!(s.contains("kernel.perf_event_paranoid is 2"), "{s}");
        assert!(s.contains("sysctl kernel.perf_event_paranoid=-1"), "{s}");
        assert!(s.contains("Access to performance monitoring"), "{s}");
        let e = classify_failure(
            "E: linux-perf-6.18 is not installed.\n/usr/bin/perf: perf not found for kernel 6.18",
            "2",
        );
        assert!(e.to_string().contains("apt-get install linux-perf"), "{e}");
        let e = classify_failure("", "2");
        assert!(e.to_string().contains("without saying why"), "{e}");
    }
}
