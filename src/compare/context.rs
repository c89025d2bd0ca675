//! What differs between the two sides of a comparison besides the change under test: kernel,
//! fsdelta version, host, filesystem, mkfs and mount options, engine and hooks, workload command
//! lines, configurations and tests present on one side only, the machine's settings
//! (`machine.*` facts: governor, SMT, THP, swappiness, ...), and the machine's background load
//! (other processes' CPU share and the load average, as stored with every sample) and the
//! samples measured under disturbance (others' I/O, page-cache drops: `crate::probe::disturbance`).
//!
//! Why a module of its own: a verdict is only as good as the sameness of everything else. A
//! reader must see, before any number, that the sides ran on different kernels or while another
//! user's build took half the CPUs. `compare` prints this block first in text and markdown, as
//! the HTML report does.
//!
//! What it must never do: I/O, or infer a fact that the store did not record. Two sides differ
//! only where their recorded values differ; a configuration or test present on one side only is
//! listed, never dropped in silence.

use crate::model::{RunInfo, RunStatus, SampleRecord, SampleStatus};
use crate::probe::disturbance;
use crate::probe::hygiene::FACT_PREFIX;
use serde::Serialize;
use std::collections::{BTreeSet, HashSet};
use std::fmt::Write;

/// Metric (kind share, neutral) that the run loop stores with every sample: CPU time of every
/// other process during the sample, in percent of all CPUs.
pub const BG_CPU_METRIC: &str = "bg_cpu_pct";
/// Metric (kind share, neutral) stored with every sample: the 1-minute load average when the
/// sample started.
pub const LOADAVG_METRIC: &str = "loadavg_1m_start";
/// Background CPU shares that differ by at least this many percentage points (and by a factor of
/// [`LOAD_RATIO`]) make the comparison warn.
pub const BG_CPU_POINTS: f64 = 10.0;
/// Load averages that differ by at least this much (and by a factor of [`LOAD_RATIO`]) warn.
pub const LOADAVG_POINTS: f64 = 1.0;
/// The factor between the sides' background loads for a warning.
pub const LOAD_RATIO: f64 = 2.0;

/// One side as loaded: its runs and the samples kept for the comparison.
pub struct SideData<'a> {
    /// The runs of the side.
    pub runs: &'a [RunInfo],
    /// Its samples (after --test / --config filtering).
    pub samples: &'a [&'a SampleRecord],
}

/// A recorded fact whose value differs between the sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    /// What it is (`kernel`, `mount options of ext4`, `workload of smallfiles`).
    pub what: String,
    /// The baseline's distinct values, joined with ` | ` (`(none)` when empty).
    pub baseline: String,
    /// The current side's.
    pub current: String,
}

/// The background load of one side: means over its successful samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Load {
    /// Mean of [`BG_CPU_METRIC`] (percent of all CPUs); `None` when not recorded.
    pub bg_cpu_pct: Option<f64>,
    /// Mean of [`LOADAVG_METRIC`]; `None` when not recorded.
    pub loadavg_1m: Option<f64>,
}

/// Everything besides the change under test that a reader should know first.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Context {
    /// Facts whose recorded values differ, most important first.
    pub differences: Vec<Difference>,
    /// Configurations (or, with SEL@CONFIG pairs, tests) that only the baseline has.
    pub only_baseline: Vec<String>,
    /// Those only the current side has.
    pub only_current: Vec<String>,
    /// Metrics measured on one side only (`test/metric (config)`), not compared.
    pub one_sided_metrics: Vec<String>,
    /// Baseline background load.
    pub baseline_load: Load,
    /// Current background load.
    pub current_load: Load,
    /// Warnings about the machine (background load that differs between the sides) and about
    /// samples a side lacks.
    pub warnings: Vec<String>,
    /// Samples the baseline side lacks: failed ones (stored without numbers).
    #[serde(default)]
    pub baseline_missing: Missing,
    /// Samples the current side lacks.
    #[serde(default)]
    pub current_missing: Missing,
}

/// The samples a side lacks, and why.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Missing {
    /// Samples stored as failed (no metric of theirs is compared).
    pub failed: usize,
    /// Samples the side's selection holds, failed ones included.
    pub stored: usize,
    /// The failures' distinct reasons (first line of each error), most frequent first, each
    /// with how many samples it stopped.
    pub reasons: Vec<(String, usize)>,
    /// Runs of the side that did not end `complete` (`run 7 ended aborted`): samples they never
    /// started are not stored at all.
    pub unfinished_runs: Vec<String>,
}

impl Missing {
    /// Whether the side lacks anything: a failed sample, or a run that did not end complete.
    pub fn any(&self) -> bool {
        self.failed > 0 || !self.unfinished_runs.is_empty()
    }
}

/// Distinct values, sorted, joined for display.
fn join(values: BTreeSet<String>) -> String {
    if values.iter().all(|v| v.is_empty()) {
        "(none)".into()
    } else {
        values.into_iter().collect::<Vec<_>>().join(" | ")
    }
}

/// `extra` facts that name a path or a device instance, which differ between any two runs of
/// the same setup (a loop device number, an image path): not a difference worth a reader's eye.
/// A guest's kernel image path (a .deb is unpacked into a temporary directory) and its boot
/// time (a measurement, not a setting) are such too: the guest kernel's release says which.
/// All stay in the facts (`show`, `export`).
const VOLATILE: &[&str] = &[
    "config",
    "mount_point",
    "image_path",
    "image_fs_device",
    "mkfs_command",
    "device_name",
    "vm_kernel_path",
    "vm_boot_s",
    crate::probe::disturbance::FACT,
    // How others' I/O was told from fsdelta's (its cgroup's io.stat or its processes' counts):
    // a property of the measurement, not of the setup, and it differs from runs stored before it.
    crate::probe::disturbance::ATTRIBUTION_FACT,
];

/// Whether an `extra` fact is one that differs between any two runs of the same setup (a path,
/// a device instance, a boot time, what disturbed a sample): left out of "what differs"
/// wherever it is drawn up, kept in the facts.
pub fn volatile_fact(key: &str) -> bool {
    VOLATILE.contains(&key)
}

/// Mkfs options without the paths of the device or image they formatted (a guest records its
/// whole mkfs command, whose last word is a temporary image or `/dev/vdN`): two runs of one
/// setup differ there, and nowhere that matters.
fn mkfs_without_paths(options: &str) -> String {
    let words: Vec<&str> = options.split_whitespace().collect();
    let target = words
        .iter()
        .rposition(|w| w.starts_with('/') && !w.contains("mkfs"));
    words
        .iter()
        .enumerate()
        .filter(|(i, w)| Some(*i) != target && !w.starts_with("/dev/"))
        .map(|(_, w)| *w)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A readable name for an `extra` fact.
fn extra_name(k: &str) -> String {
    match k {
        "engine" => "engine".into(),
        "before" | "hook_before" => "before hook".into(),
        "after" | "hook_after" => "after hook".into(),
        "caches_dropped" => "page cache dropped".into(),
        "scheduler" => "I/O scheduler".into(),
        "vm_kernel" => "guest kernel".into(),
        "vm_kernel_version" => "guest kernel version".into(),
        other => other.replace('_', " "),
    }
}

fn load(samples: &[&SampleRecord]) -> Load {
    let mean = |name: &str| {
        let v: Vec<f64> = samples
            .iter()
            .filter(|s| s.sample.status == SampleStatus::Ok)
            .flat_map(|s| s.sample.metrics.iter())
            .filter(|m| m.name == name && m.value.is_finite())
            .map(|m| m.value)
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    Load {
        bg_cpu_pct: mean(BG_CPU_METRIC),
        loadavg_1m: mean(LOADAVG_METRIC),
    }
}

/// Whether two loads differ enough to warn: by `points` and by a factor of [`LOAD_RATIO`].
fn differs(a: f64, b: f64, points: f64) -> bool {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    hi - lo >= points && hi >= LOAD_RATIO * lo
}

/// The context of a comparison. `across` is true when two configurations are put side by side
/// (SEL@A vs SEL@B): their names differ by design, so tests rather than configurations are
/// matched.
pub fn context(base: &SideData<'_>, cur: &SideData<'_>, across: bool) -> Context {
    let mut out = Context::default();
    let shown = presence(base, cur, across, &mut out);
    out.differences = run_differences(base, cur);
    out.differences.extend(machine_differences(base, cur));
    for (name, b_cfg, c_cfg) in &shown.pairs {
        config_differences(base, cur, name, b_cfg, c_cfg, &mut out.differences);
    }
    // A guest kernel is a fact of the pair, whatever the configurations: said once per value.
    let guest = |what: &str| {
        what.starts_with("guest kernel")
            .then(|| what.split(" of ").next().unwrap_or(what).to_string())
    };
    let mut kept: Vec<Difference> = Vec::new();
    for d in std::mem::take(&mut out.differences) {
        let dup = guest(&d.what).is_some_and(|f| {
            kept.iter().any(|k| {
                guest(&k.what).as_deref() == Some(f.as_str())
                    && k.baseline == d.baseline
                    && k.current == d.current
            })
        });
        if !dup {
            kept.push(d);
        }
    }
    for fact in ["guest kernel", "guest kernel version"] {
        let of_fact = |d: &Difference| guest(&d.what).as_deref() == Some(fact);
        if kept.iter().filter(|d| of_fact(d)).count() == 1
            && let Some(d) = kept.iter_mut().find(|d| of_fact(d))
        {
            d.what = fact.to_string();
        }
    }
    out.differences = kept;
    // Order: the kernel release first (the question of most comparisons), then the file
    // system, then the other kernel facts, then the rest.
    out.differences.sort_by_key(|d| rank(&d.what));
    out.one_sided_metrics = one_sided_metrics(base, cur, across, &shown);
    out.baseline_load = load(base.samples);
    out.current_load = load(cur.samples);
    out.warnings = machine_warnings(out.baseline_load, out.current_load);
    out.warnings.extend(disturbance_warning(base, cur));
    out.baseline_missing = missing(base);
    out.current_missing = missing(cur);
    for (side, m) in [
        ("baseline", &out.baseline_missing),
        ("current", &out.current_missing),
    ] {
        if let Some(w) = missing_warning(side, m) {
            out.warnings.push(w);
        }
    }
    out
}

/// The samples a side lacks: failed ones with their reasons, and runs that did not end
/// complete.
fn missing(side: &SideData<'_>) -> Missing {
    let mut reasons: Vec<(String, usize)> = Vec::new();
    let mut failed = 0;
    for s in side.samples {
        if s.sample.status == SampleStatus::Ok {
            continue;
        }
        failed += 1;
        let why = failure_reason(s.sample.error.as_deref().unwrap_or(""));
        let why = why.as_str();
        let why: String = if why.chars().count() > 160 {
            why.chars().take(159).chain(['…']).collect()
        } else {
            why.to_string()
        };
        match reasons.iter_mut().find(|(r, _)| *r == why) {
            Some((_, n)) => *n += 1,
            None => reasons.push((why, 1)),
        }
    }
    reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
    let unfinished_runs = side
        .runs
        .iter()
        .filter(|r| !matches!(r.status, RunStatus::Complete))
        .map(|r| format!("run {} ended {}", r.id, r.status.as_str()))
        .collect();
    Missing {
        failed,
        stored: side.samples.len(),
        reasons,
        unfinished_runs,
    }
}

/// A failure's reason in one line: the first line of its error without the command it echoes
/// (`command DIR: `CMD` exited with status 3; stderr:` keeps `exited with status 3; stderr:`), with the
/// last line of the stderr that follows, if any; so the failures of one cause share a reason.
fn failure_reason(error: &str) -> String {
    let mut lines = error.lines().filter(|l| !l.trim().is_empty());
    let Some(first) = lines.next() else {
        return "no error recorded".into();
    };
    let core = first
        .rsplit_once("` ")
        .map_or(first, |(_, r)| r)
        .trim_start_matches(':')
        .trim();
    match lines.next_back() {
        Some(last) if core.ends_with(':') => format!("{core} {}", last.trim()),
        _ => core.to_string(),
    }
}

/// The warning a side that lacks samples gets: how many, and why (the two most frequent
/// reasons).
fn missing_warning(side: &str, m: &Missing) -> Option<String> {
    if !m.any() {
        return None;
    }
    let mut w = format!("{side} side lacks {} of {} samples", m.failed, m.stored);
    if !m.reasons.is_empty() {
        let shown: Vec<String> = m
            .reasons
            .iter()
            .take(2)
            .map(|(r, n)| format!("{n} failed: {r}"))
            .collect();
        let _ = write!(w, " ({}", shown.join("; "));
        if m.reasons.len() > 2 {
            let _ = write!(w, "; and {} other reasons", m.reasons.len() - 2);
        }
        w.push(')');
    }
    if !m.unfinished_runs.is_empty() {
        let _ = write!(w, "; {}", m.unfinished_runs.join(", "));
    }
    w.push_str(
        ": its verdicts rest on the samples that succeeded (`fsdelta show` lists the failures)",
    );
    Some(w)
}

/// A difference when the sides' values differ.
fn difference(what: String, b: BTreeSet<String>, c: BTreeSet<String>) -> Option<Difference> {
    (b != c).then(|| Difference {
        what,
        baseline: join(b),
        current: join(c),
    })
}

/// The facts of the runs that differ: kernel, fsdelta version, host, CPU, memory.
fn run_differences(base: &SideData<'_>, cur: &SideData<'_>) -> Vec<Difference> {
    let run_fact = |s: &SideData<'_>, f: fn(&RunInfo) -> String| -> BTreeSet<String> {
        s.runs.iter().map(f).collect()
    };
    type RunFact = (&'static str, fn(&RunInfo) -> String);
    let run_facts: [RunFact; 7] = [
        ("kernel", |r| r.environment.kernel_release.clone()),
        ("kernel version", |r| r.environment.kernel_version.clone()),
        ("kernel command line", |r| r.environment.cmdline.clone()),
        ("fsdelta version", |r| r.fsdelta_version.clone()),
        ("host", |r| r.environment.host.clone()),
        ("CPU", |r| {
            format!(
                "{} ({} cores)",
                r.environment.cpu_model, r.environment.cores
            )
        }),
        ("memory", |r| {
            format!(
                "{:.1} GiB",
                r.environment.memory_bytes as f64 / (1u64 << 30) as f64
            )
        }),
    ];
    run_facts
        .into_iter()
        .filter_map(|(what, f)| difference(what.to_string(), run_fact(base, f), run_fact(cur, f)))
        .collect()
}

/// The machine settings (`machine.*` facts, `crate::probe::hygiene`) whose recorded values
/// differ between the sides: a setting of the machine, said once whatever the configurations
/// (`machine setting vm.swappiness`). A setting one side did not record (a run made before
/// fsdelta kept it) is left out.
fn machine_differences(base: &SideData<'_>, cur: &SideData<'_>) -> Vec<Difference> {
    let keys: BTreeSet<&str> = base
        .samples
        .iter()
        .chain(cur.samples)
        .flat_map(|r| r.sample.facts.extra.keys())
        .filter(|k| k.starts_with(FACT_PREFIX))
        .map(String::as_str)
        .collect();
    let values = |s: &SideData<'_>, k: &str| -> BTreeSet<String> {
        s.samples
            .iter()
            .filter_map(|r| r.sample.facts.extra.get(k).cloned())
            .collect()
    };
    keys.into_iter()
        .filter_map(|k| {
            let (b, c) = (values(base, k), values(cur, k));
            if b.is_empty() || c.is_empty() {
                return None;
            }
            difference(format!("machine setting {}", &k[FACT_PREFIX.len()..]), b, c)
        })
        .collect()
}

/// The samples of a side measured under disturbance (fact [`disturbance::FACT`]), as
/// `test (config) #repetition: what disturbed it`.
fn disturbed(side: &SideData<'_>) -> (usize, Vec<String>) {
    let ok: Vec<&&SampleRecord> = side
        .samples
        .iter()
        .filter(|s| s.sample.status == SampleStatus::Ok)
        .collect();
    let d = ok
        .iter()
        .filter_map(|s| {
            let why = s.sample.facts.extra.get(disturbance::FACT)?;
            Some(format!(
                "{} ({}) #{}: {why}",
                s.sample.test, s.sample.config, s.sample.repetition
            ))
        })
        .collect();
    (ok.len(), d)
}

/// A warning when either side has samples measured under disturbance (other processes' I/O,
/// a page-cache drop, other processes' CPU: `crate::probe::disturbance`), with both counts
/// and the first sample of each side named.
fn disturbance_warning(base: &SideData<'_>, cur: &SideData<'_>) -> Option<String> {
    let ((bn, bd), (cn, cd)) = (disturbed(base), disturbed(cur));
    if bd.is_empty() && cd.is_empty() {
        return None;
    }
    // The first of each side: on a busy machine every sample is disturbed, and their list would
    // bury the rest of the block (`fsdelta show` lists each sample's).
    const SHOWN: usize = 1;
    let mut named: Vec<String> = Vec::new();
    for (side, d) in [("baseline", &bd), ("current", &cd)] {
        for x in d.iter().take(SHOWN) {
            named.push(format!("{side} {x}"));
        }
        if d.len() > SHOWN {
            named.push(format!("{} more on the {side} side", d.len() - SHOWN));
        }
    }
    let (first, fd, fn_, other, od, on) = if cd.len() >= bd.len() {
        ("current", cd.len(), cn, "baseline", bd.len(), bn)
    } else {
        ("baseline", bd.len(), bn, "current", cd.len(), cn)
    };
    Some(format!(
        "{first} side: {fd} of {fn_} samples measured under disturbance, {other} {od} of {on}: \
         timing verdicts may reflect the machine, not the change ({})",
        named.join("; ")
    ))
}

/// What the sides have in common, as [`presence`] found it.
struct Shown {
    /// The pairs of configurations whose facts are compared: (name, baseline's, current's).
    pairs: Vec<(String, String, String)>,
    /// The baseline's tests (`test (config)`, or `test` across configurations).
    base_tests: BTreeSet<String>,
    /// The current side's.
    cur_tests: BTreeSet<String>,
}

/// Configurations (or tests, across configurations) present on one side only, into `out`;
/// and the pairs of configurations and the tests the sides have.
fn presence(base: &SideData<'_>, cur: &SideData<'_>, across: bool, out: &mut Context) -> Shown {
    let configs = |s: &SideData<'_>| -> BTreeSet<String> {
        s.samples.iter().map(|r| r.sample.config.clone()).collect()
    };
    let tests = |s: &SideData<'_>| -> BTreeSet<(String, String)> {
        s.samples
            .iter()
            .map(|r| (r.sample.config.clone(), r.sample.test.clone()))
            .collect()
    };
    let (bc, cc) = (configs(base), configs(cur));
    let (bt, ct) = (tests(base), tests(cur));
    // the pairs of configurations whose facts are compared
    let pairs: Vec<(String, String, String)> = if across {
        bc.iter()
            .flat_map(|b| {
                cc.iter()
                    .map(move |c| (format!("{b} vs {c}"), b.clone(), c.clone()))
            })
            .collect()
    } else {
        for c in bc.difference(&cc) {
            out.only_baseline.push(format!("configuration {c}"));
        }
        for c in cc.difference(&bc) {
            out.only_current.push(format!("configuration {c}"));
        }
        bc.intersection(&cc)
            .map(|c| (c.clone(), c.clone(), c.clone()))
            .collect()
    };
    let test_names = |t: &BTreeSet<(String, String)>, cfgs: &BTreeSet<String>| {
        t.iter()
            .filter(|(c, _)| across || cfgs.contains(c))
            .map(|(c, t)| {
                if across {
                    t.clone()
                } else {
                    format!("{t} ({c})")
                }
            })
            .collect::<BTreeSet<String>>()
    };
    let shared: BTreeSet<String> = bc.intersection(&cc).cloned().collect();
    let (btn, ctn) = (test_names(&bt, &shared), test_names(&ct, &shared));
    for t in btn.difference(&ctn) {
        out.only_baseline.push(format!("test {t}"));
    }
    for t in ctn.difference(&btn) {
        out.only_current.push(format!("test {t}"));
    }
    Shown {
        pairs,
        base_tests: btn,
        cur_tests: ctn,
    }
}

/// The facts of one pair of configurations (`name`: the baseline's `b_cfg`, the current's
/// `c_cfg`) that differ, appended to `out`: filesystem, mkfs and mount options, the recorded
/// extra facts, each test's workload command line.
fn config_differences(
    base: &SideData<'_>,
    cur: &SideData<'_>,
    name: &str,
    b_cfg: &str,
    c_cfg: &str,
    out: &mut Vec<Difference>,
) {
    fn of<'s>(s: &SideData<'s>, cfg: &str) -> Vec<&'s SampleRecord> {
        s.samples
            .iter()
            .copied()
            .filter(|r| r.sample.config == cfg)
            .collect()
    }
    let (bs, cs) = (of(base, b_cfg), of(cur, c_cfg));
    let fact = |v: &[&SampleRecord], f: &dyn Fn(&SampleRecord) -> String| -> BTreeSet<String> {
        v.iter().map(|r| f(r)).collect()
    };
    let mut d = |what: &str, f: &dyn Fn(&SampleRecord) -> String| {
        out.extend(difference(
            format!("{what} of {name}"),
            fact(&bs, f),
            fact(&cs, f),
        ));
    };
    d("filesystem", &|r| r.sample.facts.fs_type.clone());
    d("mkfs options", &|r| {
        r.sample
            .facts
            .mkfs_options
            .as_deref()
            .map(mkfs_without_paths)
            .unwrap_or_else(|| "(not formatted by fsdelta)".into())
    });
    d("mount options", &|r| r.sample.facts.mount_options.clone());
    let keys: BTreeSet<String> = bs
        .iter()
        .chain(&cs)
        .flat_map(|r| r.sample.facts.extra.keys().cloned())
        .filter(|k| !VOLATILE.contains(&k.as_str()) && !k.starts_with(FACT_PREFIX))
        .collect();
    for k in keys {
        d(&extra_name(&k), &|r| {
            r.sample.facts.extra.get(&k).cloned().unwrap_or_default()
        });
    }
    let tests: BTreeSet<String> = bs
        .iter()
        .chain(&cs)
        .map(|r| r.sample.test.clone())
        .collect();
    for t in tests {
        let w = |v: &[&SampleRecord]| -> BTreeSet<String> {
            v.iter()
                .filter(|r| r.sample.test == t)
                .map(|r| r.sample.workload.clone())
                .collect()
        };
        let (bw, cw) = (w(&bs), w(&cs));
        if !bw.is_empty() && !cw.is_empty() {
            out.extend(difference(format!("workload of {t} on {name}"), bw, cw));
        }
    }
}

/// How much a kind of difference changes results: the file system first, then the kernel,
/// then the workload and engine, then the rest.
fn rank(what: &str) -> u8 {
    if what == "kernel" || what == "guest kernel" || what.starts_with("guest kernel of ") {
        0
    } else if what.starts_with("mount options") {
        1
    } else if what.starts_with("mkfs options") || what.starts_with("filesystem") {
        2
    } else if what.starts_with("kernel") || what.starts_with("guest kernel") {
        3
    } else if what.starts_with("workload") || what.starts_with("engine") {
        4
    } else {
        5
    }
}

/// Metrics measured on one side only, for tests both sides ran (a test on one side only is
/// already listed).
fn one_sided_metrics(
    base: &SideData<'_>,
    cur: &SideData<'_>,
    across: bool,
    shown: &Shown,
) -> Vec<String> {
    let metrics = |s: &SideData<'_>| -> BTreeSet<String> {
        // Distinct (test, configuration, metric) first, by borrowed names: a side holds many
        // repetitions of the same metrics, and only the distinct ones need a string.
        let distinct: HashSet<(&str, &str, &str)> = s
            .samples
            .iter()
            .filter(|r| r.sample.status == SampleStatus::Ok)
            .flat_map(|r| {
                let (test, cfg) = (r.sample.test.as_str(), r.sample.config.as_str());
                r.sample
                    .metrics
                    .iter()
                    .map(move |m| (test, if across { "" } else { cfg }, m.name.as_str()))
            })
            .collect();
        distinct
            .into_iter()
            .map(|(test, cfg, name)| {
                if across {
                    format!("{test}/{name}")
                } else {
                    format!("{test}/{name} ({cfg})")
                }
            })
            .collect()
    };
    let (bm, cm) = (metrics(base), metrics(cur));
    let both: BTreeSet<String> = shown
        .base_tests
        .intersection(&shown.cur_tests)
        .cloned()
        .collect();
    let in_shared_test = |m: &String| {
        let test = m.split('/').next().unwrap_or("");
        let cfg = m
            .rsplit_once(" (")
            .map(|(_, c)| c.trim_end_matches(')'))
            .unwrap_or("");
        if across {
            both.contains(test)
        } else {
            both.contains(&format!("{test} ({cfg})"))
        }
    };
    bm.symmetric_difference(&cm)
        .filter(|m| in_shared_test(m))
        .cloned()
        .collect()
}

/// Warnings about the machine: background CPU or load average that differ between the sides.
fn machine_warnings(b: Load, c: Load) -> Vec<String> {
    let mut out = Vec::new();
    let busier = |bv: f64, cv: f64| if cv > bv { "current" } else { "baseline" };
    if let (Some(bv), Some(cv)) = (b.bg_cpu_pct, c.bg_cpu_pct)
        && differs(bv, cv, BG_CPU_POINTS)
    {
        let (first, fv, other, ov) = if cv > bv {
            ("current", cv, "baseline", bv)
        } else {
            ("baseline", bv, "current", cv)
        };
        out.push(format!(
            "{first} side: other processes used {fv:.0} % of the CPUs, {other} {ov:.0} %: \
             timing verdicts may reflect the machine, not the change"
        ));
    }
    if let (Some(bv), Some(cv)) = (b.loadavg_1m, c.loadavg_1m)
        && differs(bv, cv, LOADAVG_POINTS)
    {
        let side = busier(bv, cv);
        let (fv, ov) = if side == "current" {
            (cv, bv)
        } else {
            (bv, cv)
        };
        let other = if side == "current" {
            "baseline"
        } else {
            "current"
        };
        out.push(format!(
            "{side} side: load average {fv:.1} at the start of its samples, {other} {ov:.1}: \
             the machine was busier"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NewSample;
    use crate::model::{Direction, Environment, Metric, MetricKind, RunStatus, SiteFacts, Unit};

    fn run(id: i64, kernel: &str) -> RunInfo {
        RunInfo {
            id,
            label: format!("r{id}"),
            suite: "quick".into(),
            started_at: chrono::Utc::now(),
            finished_at: None,
            status: RunStatus::Complete,
            fsdelta_version: "0.1.0".into(),
            environment: Environment {
                host: "vm".into(),
                kernel_release: kernel.into(),
                ..Environment::default()
            },
            sample_count: 0,
        }
    }

    fn sample(config: &str, test: &str, mount: &str, bg: Option<f64>) -> SampleRecord {
        let mut metrics = vec![Metric::new(
            "files_per_sec",
            100.0,
            Unit::FilesPerSec,
            Direction::HigherIsBetter,
        )];
        if let Some(bg) = bg {
            let mut m = Metric::new(BG_CPU_METRIC, bg, Unit::Percent, Direction::Neutral);
            m.kind = MetricKind::Share;
            metrics.push(m);
            let mut m = Metric::new(LOADAVG_METRIC, bg / 25.0, Unit::Count, Direction::Neutral);
            m.kind = MetricKind::Share;
            metrics.push(m);
        }
        SampleRecord {
            id: 1,
            run_id: 1,
            sample: NewSample {
                config: config.into(),
                test: test.into(),
                repetition: 1,
                sequence: 0,
                facts: SiteFacts {
                    fs_type: "ext4".into(),
                    mount_options: mount.into(),
                    device: format!("/dev/loop{}", test.len()),
                    ..SiteFacts::default()
                },
                status: SampleStatus::Ok,
                error: None,
                started_at: chrono::Utc::now(),
                duration_s: 1.0,
                workload: format!("fs_mark {test}"),
                metrics,
                histograms: vec![],
                attachments: Vec::new(),
            },
        }
    }

    #[test]
    fn differing_facts_are_listed_mount_options_first_and_devices_ignored() {
        let (br, cr) = ([run(1, "6.17")], [run(2, "6.18")]);
        let b = [sample("a", "t", "rw,relatime", None)];
        let c = [sample("a", "t", "rw,sync", None)];
        let (bs, cs): (Vec<&SampleRecord>, Vec<&SampleRecord>) =
            (b.iter().collect(), c.iter().collect());
        let ctx = context(
            &SideData {
                runs: &br,
                samples: &bs,
            },
            &SideData {
                runs: &cr,
                samples: &cs,
            },
            false,
        );
        let what: Vec<&str> = ctx.differences.iter().map(|d| d.what.as_str()).collect();
        // The kernel release first: it is what most comparisons ask about.
        assert_eq!(what, ["kernel", "mount options of a"]);
        assert_eq!(ctx.differences[1].baseline, "rw,relatime");
        assert_eq!(ctx.differences[1].current, "rw,sync");
        assert!(ctx.warnings.is_empty());
        assert_eq!(ctx.current_load, Load::default());
    }

    fn ctx_of(br: &[RunInfo], b: &[SampleRecord], cr: &[RunInfo], c: &[SampleRecord]) -> Context {
        let (bs, cs): (Vec<&SampleRecord>, Vec<&SampleRecord>) =
            (b.iter().collect(), c.iter().collect());
        context(
            &SideData {
                runs: br,
                samples: &bs,
            },
            &SideData {
                runs: cr,
                samples: &cs,
            },
            true,
        )
    }

    #[test]
    fn the_guest_kernel_comes_first_and_temporary_paths_are_left_out() {
        let r = [run(1, "6.12.0-host")];
        let guest = |kernel: &str, image: &str, dev: &str| {
            let mut s = sample("ext4", "t", "rw", None);
            let x = &mut s.sample.facts.extra;
            x.insert("vm_kernel".into(), kernel.into());
            x.insert(
                "vm_kernel_path".into(),
                format!("/tmp/fsdelta-k{kernel}/vmlinuz"),
            );
            x.insert("vm_boot_s".into(), format!("{}", dev.len()));
            x.insert("device_name".into(), dev.into());
            s.sample.facts.mkfs_options = Some(format!("mkfs.ext4 -q -b 4096 {image}"));
            s
        };
        let b = [
            guest("6.1.0-47-amd64", "/tmp/a1/disk0.img", "vda"),
            guest("6.1.0-47-amd64", "/tmp/a2/disk0.img", "vda"),
        ];
        let c = [guest("6.1.0-50-amd64", "/tmp/b9/disk0.img", "vdb")];
        let ctx = ctx_of(&r, &b, &r, &c);
        let what: Vec<&str> = ctx.differences.iter().map(|d| d.what.as_str()).collect();
        assert_eq!(what, ["guest kernel"], "{:?}", ctx.differences);
        assert_eq!(ctx.differences[0].baseline, "6.1.0-47-amd64");
        assert_eq!(ctx.differences[0].current, "6.1.0-50-amd64");
        // A real mkfs difference is still one.
        let mut c2 = c.clone();
        c2[0].sample.facts.mkfs_options = Some("mkfs.ext4 -q -b 1024 /tmp/b9/disk0.img".into());
        let ctx = ctx_of(&r, &b, &r, &c2);
        let what: Vec<&str> = ctx.differences.iter().map(|d| d.what.as_str()).collect();
        assert_eq!(what, ["guest kernel", "mkfs options of ext4 vs ext4"]);
        assert_eq!(ctx.differences[1].current, "mkfs.ext4 -q -b 1024");
    }

    #[test]
    fn a_side_that_lacks_samples_says_how_many_and_why() {
        let ok = [run(1, "6.18")];
        let mut failed_run = run(2, "6.18");
        failed_run.status = RunStatus::Failed;
        let b = [sample("a", "t", "rw", None), sample("a", "t", "rw", None)];
        let mut c = vec![sample("a", "t", "rw", None)];
        for pid in [41, 42, 43] {
            let mut f = sample("a", "t", "rw", None);
            f.sample.status = SampleStatus::Failed;
            f.sample.error = Some(format!(
                "umount /mnt/x: target is busy\nis mounted in the mount namespace of pid {pid}"
            ));
            c.push(f);
        }
        let ctx = ctx_of(&ok, &b, &[failed_run], &c);
        assert!(!ctx.baseline_missing.any());
        assert_eq!(ctx.current_missing.failed, 3);
        assert_eq!(ctx.current_missing.stored, 4);
        let w = ctx.warnings.last().unwrap();
        assert!(
            w.starts_with(
                "current side lacks 3 of 4 samples (3 failed: umount /mnt/x: target is busy)"
            ),
            "{w}"
        );
        assert!(w.contains("run 2 ended failed"), "{w}");
        // A command's failure without the command it echoes, with its stderr's last line.
        assert_eq!(
            failure_reason(
                "command /s/ordered.1/mnt/w: `n=1; echo x` exited with status 3; stderr:\n\ndisk on fire\n"
            ),
            "exited with status 3; stderr: disk on fire"
        );
        assert_eq!(failure_reason(""), "no error recorded");
    }

    #[test]
    fn a_changed_hook_is_a_difference() {
        let r = [run(1, "6.18")];
        let b = [sample("a", "t", "rw", None)];
        let mut c = [sample("a", "t", "rw", None)];
        c[0].sample.facts.extra.insert(
            "hook_before".into(),
            "echo 1 > /sys/block/loop0/queue/nomerges".into(),
        );
        let (bs, cs): (Vec<&SampleRecord>, Vec<&SampleRecord>) =
            (b.iter().collect(), c.iter().collect());
        let ctx = context(
            &SideData {
                runs: &r,
                samples: &bs,
            },
            &SideData {
                runs: &r,
                samples: &cs,
            },
            false,
        );
        let d: Vec<(&str, &str, &str)> = ctx
            .differences
            .iter()
            .map(|d| (d.what.as_str(), d.baseline.as_str(), d.current.as_str()))
            .collect();
        assert_eq!(
            d,
            [(
                "before hook of a",
                "(none)",
                "echo 1 > /sys/block/loop0/queue/nomerges"
            )]
        );
    }

    #[test]
    fn configurations_and_tests_on_one_side_are_listed() {
        let r = [run(1, "6.18")];
        let b = [sample("a", "t", "rw", None), sample("b", "t", "rw", None)];
        let c = [
            sample("a", "t", "rw", None),
            sample("a", "u", "rw", None),
            sample("c", "t", "rw", None),
        ];
        let (bs, cs): (Vec<&SampleRecord>, Vec<&SampleRecord>) =
            (b.iter().collect(), c.iter().collect());
        let ctx = context(
            &SideData {
                runs: &r,
                samples: &bs,
            },
            &SideData {
                runs: &r,
                samples: &cs,
            },
            false,
        );
        assert_eq!(ctx.only_baseline, ["configuration b"]);
        assert_eq!(ctx.only_current, ["configuration c", "test u (a)"]);
        assert!(ctx.differences.is_empty(), "{:?}", ctx.differences);
    }

    #[test]
    fn a_disturbed_sample_warns_naming_it_and_machine_settings_are_said_once() {
        let r = [run(1, "6.18")];
        let mut b = vec![
            sample("a", "t", "rw", Some(2.0)),
            sample("b", "t", "rw", Some(2.0)),
        ];
        let mut c = b.clone();
        for s in b.iter_mut() {
            s.sample
                .facts
                .extra
                .insert("machine.vm.swappiness".into(), "60".into());
        }
        for s in c.iter_mut() {
            s.sample
                .facts
                .extra
                .insert("machine.vm.swappiness".into(), "10".into());
        }
        c[1].sample.repetition = 2;
        c[1].sample.facts.extra.insert(
            disturbance::FACT.into(),
            "other processes' I/O 210 MiB (dd[4242] 200 MiB)".into(),
        );
        let ctx = ctx_of(&r, &b, &r, &c);
        let what: Vec<&str> = ctx.differences.iter().map(|d| d.what.as_str()).collect();
        // One line for the setting, not one per configuration; the disturbance is no setting.
        assert_eq!(
            what,
            ["machine setting vm.swappiness"],
            "{:?}",
            ctx.differences
        );
        assert_eq!(
            (
                ctx.differences[0].baseline.as_str(),
                ctx.differences[0].current.as_str()
            ),
            ("60", "10")
        );
        assert_eq!(
            ctx.warnings,
            [
                "current side: 1 of 2 samples measured under disturbance, baseline 0 of 2: timing \
              verdicts may reflect the machine, not the change (current t (b) #2: other \
              processes' I/O 210 MiB (dd[4242] 200 MiB))"
            ]
        );
        // A setting only one side recorded is left out.
        c[0].sample
            .facts
            .extra
            .insert("machine.mm.thp.enabled".into(), "never".into());
        assert_eq!(ctx_of(&r, &b, &r, &c).differences.len(), 1);
        // Undisturbed sides: no warning.
        let ctx = ctx_of(&r, &b, &r, &b);
        assert!(ctx.warnings.is_empty(), "{:?}", ctx.warnings);
        // A failed sample's disturbance is not counted (nothing of it is compared).
        c[1].sample.status = SampleStatus::Failed;
        let w = ctx_of(&r, &b, &r, &c).warnings;
        assert!(!w.iter().any(|x| x.contains("disturbance")), "{w:?}");
    }

    #[test]
    fn a_busier_side_warns_with_both_shares() {
        let r = [run(1, "6.18")];
        let b = [
            sample("a", "t", "rw", Some(2.0)),
            sample("a", "t", "rw", Some(4.0)),
        ];
        let c = [sample("a", "t", "rw", Some(45.0))];
        let (bs, cs): (Vec<&SampleRecord>, Vec<&SampleRecord>) =
            (b.iter().collect(), c.iter().collect());
        let ctx = context(
            &SideData {
                runs: &r,
                samples: &bs,
            },
            &SideData {
                runs: &r,
                samples: &cs,
            },
            false,
        );
        assert_eq!(ctx.baseline_load.bg_cpu_pct, Some(3.0));
        assert_eq!(
            ctx.warnings[0],
            "current side: other processes used 45 % of the CPUs, baseline 3 %: timing verdicts \
             may reflect the machine, not the change"
        );
        assert!(
            ctx.warnings[1].starts_with("current side: load average 1.8"),
            "{:?}",
            ctx.warnings
        );
        // the same in the other direction names the baseline
        let ctx = context(
            &SideData {
                runs: &r,
                samples: &cs,
            },
            &SideData {
                runs: &r,
                samples: &bs,
            },
            false,
        );
        assert!(ctx.warnings[0].starts_with("baseline side: other processes used 45 %"));
        // close loads do not warn: 3 % against 9 % is under 10 points apart
        let c = [sample("a", "t", "rw", Some(9.0))];
        let cs: Vec<&SampleRecord> = c.iter().collect();
        let ctx = context(
            &SideData {
                runs: &r,
                samples: &bs,
            },
            &SideData {
                runs: &r,
                samples: &cs,
            },
            false,
        );
        assert!(ctx.warnings.is_empty(), "{:?}", ctx.warnings);
        // 40 % against 60 %: 20 points, but not twice: no warning
        assert!(!differs(40.0, 60.0, BG_CPU_POINTS));
        assert!(differs(3.0, 45.0, BG_CPU_POINTS));
    }

    #[test]
    fn across_configurations_compares_the_pair_and_matches_tests() {
        let r = [run(1, "6.18")];
        let b = [sample("ext4", "t", "rw", None)];
        let c = [
            sample("sync", "t", "rw,sync", None),
            sample("sync", "u", "rw,sync", None),
        ];
        let (bs, cs): (Vec<&SampleRecord>, Vec<&SampleRecord>) =
            (b.iter().collect(), c.iter().collect());
        let ctx = context(
            &SideData {
                runs: &r,
                samples: &bs,
            },
            &SideData {
                runs: &r,
                samples: &cs,
            },
            true,
        );
        assert_eq!(ctx.differences[0].what, "mount options of ext4 vs sync");
        assert!(ctx.only_baseline.is_empty());
        assert_eq!(ctx.only_current, ["test u"]);
    }
}
