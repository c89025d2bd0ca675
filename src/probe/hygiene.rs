//! Machine hygiene (issue 38): the settings of a machine that move benchmark results without
//! being part of the change under test: CPU governor and frequency limits, turbo/boost, SMT,
//! idle states, transparent huge pages, swappiness and dirty ratios, the target device's
//! scheduler and queue settings, the kernel command line and mitigations, and the versions of
//! mkfs and the external tools used. A run records them ([`Settings::read`]), `compare` lists the
//! ones that differ between the sides ([`differing`]), and `fsdelta doctor` lists what a quiet
//! benchmark machine should change ([`advise`]), changes it on `--apply` ([`apply`]) and puts it
//! back on `--revert` ([`revert`]), as pyperf's `system tune` / `system reset` do for CPU
//! benchmarks.
//!
//! Why a module of its own: these are a handful of sysfs and procfs files read the same way by
//! the runner, the doctor and the tests; reading them under a root directory lets the tests use
//! a captured tree instead of this machine.
//!
//! What it must never do: write anything except in [`apply`] and [`revert`], which write only the
//! sysfs and procfs files of the [`Advice`] the user asked to apply (and the values recorded
//! before), never a device or a file of the user's. A setting that cannot be read is absent, not
//! an error: a container or a guest lacks many of them. Settings that define what is measured
//! (dirty ratios, the device's scheduler) are recorded, never advised: changing them changes the
//! experiment, not its noise.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The prefix of these settings among a target's recorded facts (`machine.vm.swappiness`).
pub const FACT_PREFIX: &str = "machine.";

/// External tools whose versions a run records when they are installed.
pub const TOOLS: &[&str] = &[
    "mkfs.ext4",
    "mkfs.xfs",
    "mkfs.btrfs",
    "mkfs.f2fs",
    "mkfs.erofs",
    "fio",
    "dbench",
    "stress-ng",
    "perf",
];

/// procfs and sysfs files read as one setting each: (key, path under the root).
const PLAIN: &[(&str, &str)] = &[
    ("cpu.smt", "sys/devices/system/cpu/smt/control"),
    (
        "cpu.intel_no_turbo",
        "sys/devices/system/cpu/intel_pstate/no_turbo",
    ),
    (
        "cpu.intel_pstate",
        "sys/devices/system/cpu/intel_pstate/status",
    ),
    ("cpu.boost", "sys/devices/system/cpu/cpufreq/boost"),
    (
        "mm.thp.enabled",
        "sys/kernel/mm/transparent_hugepage/enabled",
    ),
    ("mm.thp.defrag", "sys/kernel/mm/transparent_hugepage/defrag"),
    ("vm.swappiness", "proc/sys/vm/swappiness"),
    ("vm.dirty_ratio", "proc/sys/vm/dirty_ratio"),
    (
        "vm.dirty_background_ratio",
        "proc/sys/vm/dirty_background_ratio",
    ),
    ("vm.dirty_bytes", "proc/sys/vm/dirty_bytes"),
    (
        "vm.dirty_background_bytes",
        "proc/sys/vm/dirty_background_bytes",
    ),
    (
        "vm.dirty_expire_centisecs",
        "proc/sys/vm/dirty_expire_centisecs",
    ),
    (
        "vm.dirty_writeback_centisecs",
        "proc/sys/vm/dirty_writeback_centisecs",
    ),
    ("vm.vfs_cache_pressure", "proc/sys/vm/vfs_cache_pressure"),
    ("kernel.numa_balancing", "proc/sys/kernel/numa_balancing"),
    ("kernel.nmi_watchdog", "proc/sys/kernel/nmi_watchdog"),
    (
        "kernel.randomize_va_space",
        "proc/sys/kernel/randomize_va_space",
    ),
    ("kernel.cmdline", "proc/cmdline"),
];

/// Queue settings of a block device recorded per run: files under `queue/`.
const QUEUE: &[&str] = &[
    "scheduler",
    "nr_requests",
    "read_ahead_kb",
    "max_sectors_kb",
    "rotational",
    "wbt_lat_usec",
    "write_cache",
    "nomerges",
    "rq_affinity",
];

/// The recorded settings of a machine: key (`vm.swappiness`, `device.vda.scheduler`,
/// `tool.fio`) to value as read (a sysfs choice list is reduced to the chosen entry).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings(pub BTreeMap<String, String>);

impl Settings {
    /// The settings of the machine whose procfs and sysfs are under `root` (`/` for this one),
    /// with the queue settings of the block `devices` (kernel names or /dev paths; a partition
    /// is read through its disk). Tool versions are not included: see [`Settings::add_tools`].
    pub fn read(root: &Path, devices: &[String]) -> Settings {
        let mut out = BTreeMap::new();
        for (key, rel) in PLAIN {
            if let Some(v) = read_value(&root.join(rel)) {
                out.insert((*key).to_string(), v);
            }
        }
        cpu_settings(root, &mut out);
        if let Some(m) = mitigations(&root.join("sys/devices/system/cpu/vulnerabilities")) {
            out.insert("cpu.mitigations".into(), m);
        }
        for dev in devices {
            if let Some(disk) = disk_of(root, dev) {
                for q in QUEUE {
                    let p = root.join("sys/block").join(&disk).join("queue").join(q);
                    if let Some(v) = read_value(&p) {
                        out.insert(format!("device.{disk}.{q}"), v);
                    }
                }
            }
        }
        Settings(out)
    }

    /// Adds `tool.NAME` = the version of each of `tools` found on PATH (absent when the tool is
    /// not installed or prints no version fsdelta recognises).
    pub fn add_tools(&mut self, tools: &[&str]) {
        for t in tools {
            if let Some(v) = tool_version(t) {
                self.0.insert(format!("tool.{t}"), v);
            }
        }
    }

    /// These settings as facts of a target (`machine.` + key), for its `extra` map.
    pub fn to_facts(&self) -> BTreeMap<String, String> {
        self.0
            .iter()
            .map(|(k, v)| (format!("{FACT_PREFIX}{k}"), v.clone()))
            .collect()
    }
}

/// This machine's settings as facts of a sample on `device` (the mount's source: `/dev/vda1`;
/// anything else adds no device settings): what the runner records with every sample. The
/// sysfs and procfs files are read each time (cheap: a setting changed in the middle of a run
/// shows in its samples); the tool versions once per process.
pub fn facts(device: &str) -> BTreeMap<String, String> {
    static TOOLS_SEEN: std::sync::OnceLock<BTreeMap<String, String>> = std::sync::OnceLock::new();
    let devices: Vec<String> = if device.starts_with("/dev/") {
        vec![device.to_string()]
    } else {
        Vec::new()
    };
    let mut s = Settings::read(Path::new("/"), &devices);
    s.0.extend(
        TOOLS_SEEN
            .get_or_init(|| {
                let mut t = Settings::default();
                t.add_tools(TOOLS);
                t.0
            })
            .clone(),
    );
    s.to_facts()
}

/// The settings among a sample's facts (`machine.` keys, the prefix taken off).
pub fn from_facts(extra: &BTreeMap<String, String>) -> Settings {
    Settings(
        extra
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(FACT_PREFIX)?.to_string(), v.clone())))
            .collect(),
    )
}

/// One setting whose value differs between two recorded sets: (key, baseline, current), `None`
/// where a side did not record it.
pub type Differing = (String, Option<String>, Option<String>);

/// The settings that differ between `a` and `b`, in key order. A setting only one side recorded
/// is listed (a run recorded before fsdelta kept it compares as absent).
pub fn differing(a: &Settings, b: &Settings) -> Vec<Differing> {
    let keys: std::collections::BTreeSet<&String> = a.0.keys().chain(b.0.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let (x, y) = (a.0.get(k), b.0.get(k));
            (x != y).then(|| (k.clone(), x.cloned(), y.cloned()))
        })
        .collect()
}

/// The trimmed content of a sysfs or procfs file; a choice list (`always [madvise] never`) is
/// reduced to its chosen entry. `None` when unreadable or empty.
fn read_value(path: &Path) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    Some(chosen(s).unwrap_or(s).to_string())
}

/// The bracketed entry of a sysfs choice list, if it is one.
pub fn chosen(s: &str) -> Option<&str> {
    s.split_whitespace()
        .find(|w| w.starts_with('[') && w.ends_with(']') && w.len() > 2)
        .map(|w| &w[1..w.len() - 1])
}

/// CPUs of the machine under `root`, numbered, from sys/devices/system/cpu/cpuN.
fn cpus(root: &Path) -> Vec<u32> {
    let mut out: Vec<u32> = std::fs::read_dir(root.join("sys/devices/system/cpu"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    e.file_name()
                        .to_str()?
                        .strip_prefix("cpu")?
                        .parse::<u32>()
                        .ok()
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_unstable();
    out
}

/// One value per CPU summarised: `performance` when all agree, else `performance (cpus 0-1);
/// powersave (cpus 2-3)`.
fn summarise(per_cpu: &[(u32, String)]) -> Option<String> {
    let mut by: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for (c, v) in per_cpu {
        by.entry(v.as_str()).or_default().push(*c);
    }
    match by.len() {
        0 => None,
        1 => by.keys().next().map(|v| v.to_string()),
        _ => Some(
            by.iter()
                .map(|(v, cs)| format!("{v} (cpus {})", cpu_list(cs)))
                .collect::<Vec<_>>()
                .join("; "),
        ),
    }
}

/// `0-3,6` for CPUs 0, 1, 2, 3, 6.
fn cpu_list(cs: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        let mut j = i;
        while j + 1 < cs.len() && cs[j + 1] == cs[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cs[i].to_string()
        } else {
            format!("{}-{}", cs[i], cs[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// Governor, frequency limits and idle states, summarised over the CPUs.
fn cpu_settings(root: &Path, out: &mut BTreeMap<String, String>) {
    let base = root.join("sys/devices/system/cpu");
    let cs = cpus(root);
    let per = |rel: &str| -> Vec<(u32, String)> {
        cs.iter()
            .filter_map(|c| Some((*c, read_value(&base.join(format!("cpu{c}/{rel}")))?)))
            .collect()
    };
    for (key, rel) in [
        ("cpu.governor", "cpufreq/scaling_governor"),
        ("cpu.driver", "cpufreq/scaling_driver"),
        ("cpu.min_freq_khz", "cpufreq/scaling_min_freq"),
        ("cpu.max_freq_khz", "cpufreq/scaling_max_freq"),
        (
            "cpu.energy_perf_preference",
            "cpufreq/energy_performance_preference",
        ),
    ] {
        if let Some(v) = summarise(&per(rel)) {
            out.insert(key.to_string(), v);
        }
    }
    let idle: Vec<(u32, String)> = cs
        .iter()
        .filter_map(|c| Some((*c, idle_states(&base.join(format!("cpu{c}/cpuidle")))?)))
        .collect();
    if let Some(v) = summarise(&idle) {
        out.insert("cpu.idle_states".into(), v);
    }
}

/// `POLL, C1 (disabled), C6` from a CPU's cpuidle directory.
fn idle_states(dir: &Path) -> Option<String> {
    let mut states: Vec<(u32, String)> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n: u32 = e
                .file_name()
                .to_str()?
                .strip_prefix("state")?
                .parse()
                .ok()?;
            let name = read_value(&e.path().join("name"))?;
            let off = read_value(&e.path().join("disable")).is_some_and(|d| d != "0");
            Some((
                n,
                if off {
                    format!("{name} (disabled)")
                } else {
                    name
                },
            ))
        })
        .collect();
    states.sort();
    (!states.is_empty()).then(|| {
        states
            .into_iter()
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// The CPU vulnerabilities the kernel mitigates or leaves open (`spectre_v2: Mitigation: ...`),
/// `not affected` when none applies.
fn mitigations(dir: &Path) -> Option<String> {
    let mut rows: Vec<(String, String)> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            Some((name, read_value(&e.path())?))
        })
        .filter(|(_, v)| v != "Not affected")
        .collect();
    rows.sort();
    Some(if rows.is_empty() {
        "not affected".to_string()
    } else {
        rows.into_iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// The disk (sys/block entry) holding `dev`: `vda` for `/dev/vda1`, `loop3` for `loop3`.
fn disk_of(root: &Path, dev: &str) -> Option<String> {
    let name = dev.strip_prefix("/dev/").unwrap_or(dev);
    if name.is_empty() || name.contains('/') {
        return None;
    }
    if root.join("sys/block").join(name).is_dir() {
        return Some(name.to_string());
    }
    // a partition: sys/class/block/NAME is a link into its disk's directory
    let real = std::fs::canonicalize(root.join("sys/class/block").join(name)).ok()?;
    let disk = real.parent()?.file_name()?.to_str()?.to_string();
    root.join("sys/block").join(&disk).is_dir().then_some(disk)
}

/// The version `tool` reports, from its usual flag (`-V`, `--version`, or none for tools that
/// print it in their usage). `None` when it is not installed or says nothing recognisable.
pub fn tool_version(tool: &str) -> Option<String> {
    let args: &[&str] = match tool {
        "mkfs.ext4" | "mkfs.xfs" | "mkfs.f2fs" => &["-V"],
        "mkfs.erofs" | "dbench" => &["--help"],
        _ => &["--version"],
    };
    let out = Command::new(tool)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    parse_version(&text)
}

/// The first version-looking word (digits and dots, at least one dot, optionally after `v` or a
/// `tool-` prefix as `fio-3.33`) of a tool's output.
pub fn parse_version(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')')
        .map(|w| {
            let w = w.rsplit('-').next().unwrap_or(w);
            w.strip_prefix('v').unwrap_or(w)
        })
        .find(|w| {
            w.contains('.')
                && w.starts_with(|c: char| c.is_ascii_digit())
                && w.chars().all(|c| c.is_ascii_digit() || c == '.')
                && !w.ends_with('.')
        })
        .map(str::to_string)
}

/// One change a quiet benchmark machine should make.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Advice {
    /// The setting ([`Settings`] key).
    pub key: String,
    /// Its current value.
    pub current: String,
    /// The value advised.
    pub advised: String,
    /// Why it moves results.
    pub why: String,
    /// The shell command that makes the change (what `--apply` does).
    pub command: String,
    /// The files `--apply` writes and what it writes to each; empty when the change needs a
    /// reboot or a tool fsdelta does not run (then only the command is shown).
    pub writes: Vec<(PathBuf, String)>,
}

/// What a quiet benchmark machine whose procfs and sysfs are under `root` should change: the
/// CPU governor (`performance`), turbo/boost (off), transparent huge pages (`never`: no
/// khugepaged compaction in the middle of a sample), the NMI watchdog (off), automatic NUMA
/// balancing (off), and, needing a reboot, CPUs isolated from the scheduler. Settings already
/// as advised, or absent here, give no advice.
pub fn advise(root: &Path, settings: &Settings) -> Vec<Advice> {
    let mut out = Vec::new();
    let get = |k: &str| settings.0.get(k).cloned();
    let cpu_base = root.join("sys/devices/system/cpu");
    let cs = cpus(root);
    // CPU frequency scaling governor
    if let Some(gov) = get("cpu.governor")
        && gov != "performance"
    {
        let writes: Vec<(PathBuf, String)> = cs
            .iter()
            .map(|c| cpu_base.join(format!("cpu{c}/cpufreq/scaling_governor")))
            .filter(|p| p.exists())
            .map(|p| (p, "performance".to_string()))
            .collect();
        out.push(Advice {
            key: "cpu.governor".into(),
            current: gov,
            advised: "performance".into(),
            why: "a governor that scales the clock with load makes the same work take different times".into(),
            command: "for f in /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; do echo performance > $f; done".into(),
            writes,
        });
    }
    if get("cpu.intel_no_turbo").as_deref() == Some("0") {
        out.push(sysfs_advice(
            root,
            "cpu.intel_no_turbo",
            "0",
            "1",
            "sys/devices/system/cpu/intel_pstate/no_turbo",
            "turbo frequencies depend on temperature and on how many cores are busy",
        ));
    }
    if get("cpu.boost").as_deref() == Some("1") {
        out.push(sysfs_advice(
            root,
            "cpu.boost",
            "1",
            "0",
            "sys/devices/system/cpu/cpufreq/boost",
            "boost frequencies depend on temperature and on how many cores are busy",
        ));
    }
    if let Some(v) = get("mm.thp.enabled")
        && v != "never"
    {
        out.push(sysfs_advice(
            root,
            "mm.thp.enabled",
            &v,
            "never",
            "sys/kernel/mm/transparent_hugepage/enabled",
            "khugepaged collapses and compacts memory in the background, at times no run controls",
        ));
    }
    if get("kernel.nmi_watchdog").is_some_and(|v| v != "0") {
        out.push(sysfs_advice(
            root,
            "kernel.nmi_watchdog",
            "1",
            "0",
            "proc/sys/kernel/nmi_watchdog",
            "the watchdog's periodic NMI interrupts every CPU and holds a performance counter",
        ));
    }
    if get("kernel.numa_balancing").is_some_and(|v| v != "0") {
        out.push(sysfs_advice(
            root,
            "kernel.numa_balancing",
            &get("kernel.numa_balancing").unwrap_or_default(),
            "0",
            "proc/sys/kernel/numa_balancing",
            "automatic NUMA balancing unmaps and migrates pages while a workload runs",
        ));
    }
    if cs.len() > 2
        && get("kernel.cmdline")
            .is_some_and(|c| !c.split_whitespace().any(|w| w.starts_with("isolcpus=")))
    {
        let last = cs[cs.len() - 1];
        out.push(Advice {
            key: "kernel.cmdline".into(),
            current: "no isolcpus=".into(),
            advised: format!("isolcpus={last} nohz_full={last} rcu_nocbs={last}"),
            why: "an isolated CPU runs the benchmark with no other task scheduled on it (pyperf's advice)".into(),
            command: format!(
                "add 'isolcpus={last} nohz_full={last} rcu_nocbs={last}' to GRUB_CMDLINE_LINUX in /etc/default/grub, update-grub, reboot (needs a reboot: not applied by --apply)"
            ),
            writes: Vec::new(),
        });
    }
    out
}

/// An advice that writes one sysfs or procfs file.
fn sysfs_advice(
    root: &Path,
    key: &str,
    current: &str,
    advised: &str,
    rel: &str,
    why: &str,
) -> Advice {
    Advice {
        key: key.into(),
        current: current.into(),
        advised: advised.into(),
        why: why.into(),
        command: format!("echo {advised} > /{rel}"),
        writes: vec![(root.join(rel), advised.to_string())],
    }
}

/// What `doctor --apply` changed, kept so that `doctor --revert` puts it back.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// Each file written, with the value it had before (as read: a choice list's chosen entry)
    /// and the value written.
    pub changes: Vec<Change>,
}

/// One file `doctor --apply` wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The setting.
    pub key: String,
    /// The file.
    pub path: PathBuf,
    /// Its value before.
    pub before: String,
    /// The value written.
    pub after: String,
}

/// Why a change could not be made or undone.
#[derive(Debug, thiserror::Error)]
pub enum HygieneError {
    /// A file could not be read or written.
    #[error(
        "cannot {action} {path}: {source} (run as root on the machine itself; in a container or a guest the host may own this setting)"
    )]
    Io {
        /// `read` or `write`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The kernel accepted the write but the value read back differs.
    #[error("wrote '{wrote}' to {path} but it reads '{reads}': the kernel refused the value")]
    NotTaken {
        /// The file.
        path: PathBuf,
        /// What was written.
        wrote: String,
        /// What it reads now.
        reads: String,
    },
}

/// Write one value and read it back.
fn write_checked(path: &Path, value: &str) -> Result<(), HygieneError> {
    std::fs::write(path, format!("{value}\n")).map_err(|source| HygieneError::Io {
        action: "write",
        path: path.to_path_buf(),
        source,
    })?;
    let reads = read_value(path).unwrap_or_default();
    if reads != value {
        return Err(HygieneError::NotTaken {
            path: path.to_path_buf(),
            wrote: value.to_string(),
            reads,
        });
    }
    Ok(())
}

/// Makes the changes of `advice` (those that write files), adding each to `applied` before the
/// next is made, so that whatever happens `applied` holds every change made, with the value
/// before. A file already in `applied` keeps its first recorded value (applying twice reverts
/// to the original). Stops at the first failure, returning it: `applied` still says what was
/// changed.
pub fn apply(advice: &[Advice], applied: &mut Applied) -> Result<(), HygieneError> {
    for a in advice {
        for (path, value) in &a.writes {
            let before = read_value(path).ok_or_else(|| HygieneError::Io {
                action: "read",
                path: path.clone(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "unreadable or empty"),
            })?;
            if before == *value {
                continue;
            }
            write_checked(path, value)?;
            if !applied.changes.iter().any(|c| c.path == *path) {
                applied.changes.push(Change {
                    key: a.key.clone(),
                    path: path.clone(),
                    before,
                    after: value.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Undoes `applied`, last change first, removing each change from it once undone. Stops at the
/// first failure: what is left in `applied` is still to undo.
pub fn revert(applied: &mut Applied) -> Result<(), HygieneError> {
    while let Some(c) = applied.changes.last() {
        write_checked(&c.path, &c.before)?;
        applied.changes.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small captured tree: this development VM's files (2 CPUs, haltpoll idle, THP madvise,
    /// no cpufreq) plus a governor, to exercise every reader.
    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let w = |rel: &str, v: &str| {
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, v).unwrap();
        };
        w("sys/devices/system/cpu/smt/control", "notsupported\n");
        w(
            "sys/kernel/mm/transparent_hugepage/enabled",
            "always [madvise] never\n",
        );
        w(
            "sys/kernel/mm/transparent_hugepage/defrag",
            "always defer defer+madvise [madvise] never\n",
        );
        w("proc/sys/vm/swappiness", "60\n");
        w("proc/sys/vm/dirty_ratio", "20\n");
        w("proc/sys/kernel/nmi_watchdog", "0\n");
        w("proc/cmdline", "mitigations=auto console=ttyS0 quiet\n");
        for c in 0..2 {
            w(
                &format!("sys/devices/system/cpu/cpu{c}/cpuidle/state0/name"),
                "POLL\n",
            );
            w(
                &format!("sys/devices/system/cpu/cpu{c}/cpuidle/state0/disable"),
                "0\n",
            );
            w(
                &format!("sys/devices/system/cpu/cpu{c}/cpuidle/state1/name"),
                "haltpoll idle\n",
            );
            w(
                &format!("sys/devices/system/cpu/cpu{c}/cpuidle/state1/disable"),
                if c == 1 { "1\n" } else { "0\n" },
            );
            w(
                &format!("sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"),
                "schedutil\n",
            );
        }
        w(
            "sys/devices/system/cpu/vulnerabilities/meltdown",
            "Not affected\n",
        );
        w(
            "sys/devices/system/cpu/vulnerabilities/spectre_v1",
            "Mitigation: usercopy/swapgs barriers and __user pointer sanitization\n",
        );
        w(
            "sys/block/vda/queue/scheduler",
            "none [mq-deadline] kyber \n",
        );
        w("sys/block/vda/queue/nr_requests", "256\n");
        std::fs::create_dir_all(d.path().join("sys/block/vda/vda1")).unwrap();
        std::fs::create_dir_all(d.path().join("sys/class/block")).unwrap();
        std::os::unix::fs::symlink(
            d.path().join("sys/block/vda/vda1"),
            d.path().join("sys/class/block/vda1"),
        )
        .unwrap();
        d
    }

    #[test]
    fn reads_a_captured_tree() {
        let d = tree();
        let s = Settings::read(d.path(), &["/dev/vda1".to_string()]);
        let g = |k: &str| s.0.get(k).map(String::as_str);
        assert_eq!(g("mm.thp.enabled"), Some("madvise"));
        assert_eq!(g("mm.thp.defrag"), Some("madvise"));
        assert_eq!(g("vm.swappiness"), Some("60"));
        assert_eq!(g("cpu.smt"), Some("notsupported"));
        assert_eq!(g("cpu.governor"), Some("schedutil"));
        assert_eq!(
            g("cpu.idle_states"),
            Some("POLL, haltpoll idle (cpus 0); POLL, haltpoll idle (disabled) (cpus 1)")
        );
        assert_eq!(
            g("cpu.mitigations"),
            Some(
                "spectre_v1: Mitigation: usercopy/swapgs barriers and __user pointer sanitization"
            )
        );
        assert_eq!(g("device.vda.scheduler"), Some("mq-deadline"));
        assert_eq!(g("device.vda.nr_requests"), Some("256"));
        assert_eq!(g("cpu.boost"), None, "absent here, so not recorded");
        assert_eq!(
            s.to_facts()
                .get("machine.vm.swappiness")
                .map(String::as_str),
            Some("60")
        );
    }

    #[test]
    fn differing_lists_changed_and_one_sided_settings() {
        let a = Settings(BTreeMap::from([
            ("vm.swappiness".to_string(), "60".to_string()),
            ("cpu.governor".to_string(), "schedutil".to_string()),
            ("mm.thp.enabled".to_string(), "madvise".to_string()),
        ]));
        let mut b = a.clone();
        b.0.insert("cpu.governor".into(), "performance".into());
        b.0.remove("mm.thp.enabled");
        assert_eq!(
            differing(&a, &b),
            vec![
                (
                    "cpu.governor".to_string(),
                    Some("schedutil".to_string()),
                    Some("performance".to_string())
                ),
                (
                    "mm.thp.enabled".to_string(),
                    Some("madvise".to_string()),
                    None
                ),
            ]
        );
        assert!(differing(&a, &a).is_empty());
    }

    #[test]
    fn versions_of_real_tool_output() {
        // captured on the development VM (Debian 12)
        for (out, v) in [
            (
                "mke2fs 1.47.0 (5-Feb-2023)\n\tUsing EXT2FS Library version 1.47.0\n",
                "1.47.0",
            ),
            ("mkfs.xfs version 6.1.0\n", "6.1.0"),
            ("mkfs.btrfs, part of btrfs-progs v6.2\n", "6.2"),
            ("mkfs.f2fs 1.15.0 (2022-05-13)\n", "1.15.0"),
            ("fio-3.33\n", "3.33"),
            (
                "dbench version 4.00 - Copyright Andrew Tridgell 1999-2004\n",
                "4.00",
            ),
            (
                "stress-ng, version 0.15.06 (gcc 12.2.0, x86_64 Linux 6.18.44-fc-v1272)\n",
                "0.15.06",
            ),
            ("perf version 6.1.159\n", "6.1.159"),
        ] {
            assert_eq!(parse_version(out).as_deref(), Some(v), "{out}");
        }
        // mkfs.erofs 1.5 prints no version: nothing is made up
        assert_eq!(
            parse_version("<E> erofs: missing argument: FILE\nusage: [options] FILE DIRECTORY\n"),
            None
        );
        assert_eq!(chosen("none [mq-deadline] kyber "), Some("mq-deadline"));
        assert_eq!(chosen("60"), None);
    }

    #[test]
    fn advice_apply_and_revert_round_trip_in_a_tree() {
        let d = tree();
        let s = Settings::read(d.path(), &[]);
        let advice = advise(d.path(), &s);
        let keys: Vec<&str> = advice.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(keys, ["cpu.governor", "mm.thp.enabled"], "{advice:#?}");
        let mut applied = Applied::default();
        apply(&advice, &mut applied).unwrap();
        assert_eq!(applied.changes.len(), 3, "two governors and THP");
        let after = Settings::read(d.path(), &[]);
        assert_eq!(after.0["cpu.governor"], "performance");
        // a tree file holds what was written, not a choice list
        assert_eq!(after.0["mm.thp.enabled"], "never");
        assert!(advise(d.path(), &after).is_empty());
        // applying again records nothing new: the original values stay
        apply(&advise(d.path(), &after), &mut applied).unwrap();
        assert_eq!(applied.changes.len(), 3);
        revert(&mut applied).unwrap();
        assert!(applied.changes.is_empty());
        let back = Settings::read(d.path(), &[]);
        assert_eq!(back.0["cpu.governor"], "schedutil");
        assert_eq!(back.0["mm.thp.enabled"], "madvise");
    }

    #[test]
    fn facts_of_this_machine() {
        // /proc/cmdline exists on every Linux; a mount source that is not a device adds no
        // device settings
        let f = facts("tmpfs");
        assert!(f.contains_key("machine.kernel.cmdline"), "{f:?}");
        assert!(!f.keys().any(|k| k.starts_with("machine.device.")), "{f:?}");
        assert!(f.keys().all(|k| k.starts_with(FACT_PREFIX)));
    }
}
