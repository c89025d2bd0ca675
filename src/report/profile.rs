//! What a CPU profile says, and how it is shown: the top symbols by self and total share (like
//! `perf top`'s list), the symbols whose share changed most between a baseline and a current set
//! of profiles ("+28.6 % queue_read_lock_slowpath"), a one-line hint when the top gainers point at
//! locks, memory allocation or reclaim, or writeback, and flame graphs (one per side and a
//! differential one, by the inferno crate) for the HTML report.
//!
//! Why here: these are pure functions from folded stacks to numbers and text, next to the other
//! renderers, so they can be tested on synthetic profiles. They must never read the store, run
//! perf, or judge a metric: the verdict comes from `compare`, a profile only explains it.

use crate::compare::profile::{self, ProfileVerdicts, SymbolVerdict};
use crate::compare::verdict::fmt_p;
use crate::probe::profile::Profile;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// The suffix inferno's perf collapser gives kernel frames.
const KERNEL_SUFFIX: &str = "_[k]";

/// One symbol's share of all samples of a profile.
#[derive(Clone, Debug, PartialEq)]
pub struct SymbolShare {
    /// Function name, without the kernel suffix.
    pub symbol: String,
    /// A kernel function.
    pub kernel: bool,
    /// Percent of all samples whose leaf is this symbol (perf top's "overhead").
    pub self_pct: f64,
    /// Percent of all samples with this symbol anywhere on the stack.
    pub total_pct: f64,
}

/// A symbol whose self share differs between two profile sets.
#[derive(Clone, Debug, PartialEq)]
pub struct SymbolDelta {
    /// Function name, without the kernel suffix.
    pub symbol: String,
    /// A kernel function.
    pub kernel: bool,
    /// Self share in the baseline, percent of its samples.
    pub base_pct: f64,
    /// Self share in the current set, percent of its samples.
    pub cur_pct: f64,
}

impl SymbolDelta {
    /// Change of the self share, percentage points (positive: more CPU in it now).
    pub fn delta(&self) -> f64 {
        self.cur_pct - self.base_pct
    }
}

fn split_frame(frame: &str) -> (&str, bool) {
    match frame.strip_suffix(KERNEL_SUFFIX) {
        Some(s) => (s, true),
        None => (frame, false),
    }
}

/// The frames of a folded stack below its root (the root is the process name, not a symbol);
/// a stack perf could not walk counts as `[unknown]`.
fn frames(stack: &str) -> Vec<&str> {
    let f: Vec<&str> = stack.split(';').skip(1).filter(|f| !f.is_empty()).collect();
    if f.is_empty() { vec!["[unknown]"] } else { f }
}

/// Self and total sample counts per frame (kernel suffix kept, so a kernel and a user function
/// of the same name stay apart).
fn counts(p: &Profile) -> BTreeMap<&str, (u64, u64)> {
    let mut out: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for (stack, &n) in &p.stacks {
        let f = frames(stack);
        out.entry(f[f.len() - 1]).or_default().0 += n;
        let distinct: BTreeSet<&str> = f.into_iter().collect();
        for frame in distinct {
            out.entry(frame).or_default().1 += n;
        }
    }
    out
}

/// Every symbol's self and total share, highest self share first (then total share, then name).
pub fn top_symbols(p: &Profile) -> Vec<SymbolShare> {
    let total = p.total();
    if total == 0 {
        return Vec::new();
    }
    let pct = |n: u64| 100.0 * n as f64 / total as f64;
    let mut out: Vec<SymbolShare> = counts(p)
        .into_iter()
        .map(|(frame, (s, t))| {
            let (symbol, kernel) = split_frame(frame);
            SymbolShare {
                symbol: symbol.to_string(),
                kernel,
                self_pct: pct(s),
                total_pct: pct(t),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.self_pct
            .total_cmp(&a.self_pct)
            .then(b.total_pct.total_cmp(&a.total_pct))
            .then(a.symbol.cmp(&b.symbol))
    });
    out
}

/// Self shares of both sets, symbol by symbol, largest absolute change first. Shares are of each
/// side's own samples, so sets of different lengths compare.
pub fn diff(base: &Profile, cur: &Profile) -> Vec<SymbolDelta> {
    let share = |p: &Profile| -> BTreeMap<String, f64> {
        let total = p.total().max(1) as f64;
        counts(p)
            .into_iter()
            .filter(|(_, (s, _))| *s > 0)
            .map(|(f, (s, _))| (f.to_string(), 100.0 * s as f64 / total))
            .collect()
    };
    let b = share(base);
    let c = share(cur);
    let names: BTreeSet<&String> = b.keys().chain(c.keys()).collect();
    let mut out: Vec<SymbolDelta> = names
        .into_iter()
        .map(|frame| {
            let (symbol, kernel) = split_frame(frame);
            SymbolDelta {
                symbol: symbol.to_string(),
                kernel,
                base_pct: b.get(frame).copied().unwrap_or(0.0),
                cur_pct: c.get(frame).copied().unwrap_or(0.0),
            }
        })
        .collect();
    out.sort_by(|x, y| {
        y.delta()
            .abs()
            .total_cmp(&x.delta().abs())
            .then(x.symbol.cmp(&y.symbol))
    });
    out
}

/// What the top gainers of a diff point at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// Lock slow paths: contention.
    Locks,
    /// Memory allocation or reclaim.
    Memory,
    /// Writeback of dirty pages.
    Writeback,
}

impl Cause {
    /// The cause a kernel symbol belongs to, if any.
    pub fn of(symbol: &str) -> Option<Cause> {
        let s = symbol.strip_suffix(KERNEL_SUFFIX).unwrap_or(symbol);
        let lock = s.ends_with("_slowpath")
            || s.contains("spin_lock")
            || s.contains("spin_unlock")
            || s.contains("rwsem")
            || s.contains("mutex")
            || s.contains("osq_lock");
        let memory = s.contains("kmem_cache_alloc")
            || s.contains("alloc_pages")
            || s.contains("kmalloc")
            || s.starts_with("shrink_")
            || s.contains("reclaim");
        let writeback = s.starts_with("wb_") || s.contains("writeback") || s.contains("writepages");
        // Writeback and memory names are more specific than lock names, so they win when a
        // name matches both (`__mutex_lock` in reclaim stays a lock; `wb_..._lock` is writeback).
        if writeback {
            Some(Cause::Writeback)
        } else if memory {
            Some(Cause::Memory)
        } else if lock {
            Some(Cause::Locks)
        } else {
            None
        }
    }

    fn advice(self) -> &'static str {
        match self {
            Cause::Locks => {
                "lock slow paths: contention; look for a lock the change made hotter (perf lock contention)"
            }
            Cause::Memory => {
                "memory allocation or reclaim: look at memory pressure, slab and page allocation (/proc/vmstat, slabtop)"
            }
            Cause::Writeback => {
                "writeback: look at dirty limits and flushing (vm.dirty_*, nr_dirty and nr_writeback in /proc/vmstat)"
            }
        }
    }
}

/// How many of the largest gainers a hint looks at.
const HINT_GAINERS: usize = 3;
/// Smallest gain, percentage points, that counts as a gainer.
const HINT_MIN_GAIN: f64 = 1.0;

/// A one-line hint when the largest of the top gainers (the [`HINT_GAINERS`] symbols whose share
/// grew most, by at least [`HINT_MIN_GAIN`] points) has a [`Cause`], or when most of their gain
/// falls in one cause.
pub fn hint(deltas: &[SymbolDelta]) -> Option<String> {
    let mut gainers: Vec<&SymbolDelta> = deltas
        .iter()
        .filter(|d| d.delta() >= HINT_MIN_GAIN)
        .collect();
    gainers.sort_by(|a, b| b.delta().total_cmp(&a.delta()));
    gainers.truncate(HINT_GAINERS);
    let gained: f64 = gainers.iter().map(|d| d.delta()).sum();
    if gainers.is_empty() {
        return None;
    }
    let mut by_cause: Vec<(Cause, f64, Vec<&str>)> = Vec::new();
    for d in &gainers {
        if let Some(c) = Cause::of(&d.symbol) {
            match by_cause.iter_mut().find(|(k, _, _)| *k == c) {
                Some(e) => {
                    e.1 += d.delta();
                    e.2.push(&d.symbol);
                }
                None => by_cause.push((c, d.delta(), vec![&d.symbol])),
            }
        }
    }
    // The cause of the largest gainer speaks even when ordinary symbols share the rest of the
    // gain (a whole-system profile spreads it over other processes' functions); otherwise the
    // cause holding most of the gain does.
    let top = Cause::of(&gainers[0].symbol);
    let (cause, share, names) = match top {
        Some(c) => by_cause.into_iter().find(|(k, _, _)| *k == c)?,
        None => {
            let best = by_cause.into_iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
            if best.1 * 2.0 < gained {
                return None;
            }
            best
        }
    };
    Some(format!(
        "hint: the top gainers ({}, {:+.1} %) are {}",
        names.join(", "),
        share,
        cause.advice()
    ))
}

fn mark(kernel: bool) -> &'static str {
    if kernel { "[k]" } else { "[.]" }
}

/// `perf top`-like text: the `limit` symbols with the highest self share, kernel `[k]` and user
/// `[.]`.
pub fn top_text(title: &str, p: &Profile, limit: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{title}");
    let top = top_symbols(p);
    if top.is_empty() {
        let _ = writeln!(out, "  (no samples)");
        return out;
    }
    let _ = writeln!(
        out,
        "  {} sampled; shares of all CPUs' time (idle included)",
        cpu_time(p)
    );
    let _ = writeln!(out, "  {:>6} {:>6}      symbol", "self", "total");
    for s in top.iter().take(limit) {
        let _ = writeln!(
            out,
            "  {:>5.1}% {:>5.1}%  {}  {}",
            s.self_pct,
            s.total_pct,
            mark(s.kernel),
            clip(&s.symbol, 58)
        );
    }
    if top.len() > limit {
        let _ = writeln!(out, "  ({} more symbols)", top.len() - limit);
    }
    out
}

/// The CPU time a profile sampled, in seconds.
fn cpu_time(p: &Profile) -> String {
    format!("{:.3} CPU-s", p.total() as f64 / 1e9)
}

fn clip(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(w - 1).collect();
        t.push('~');
        t
    }
}

/// A frame that only passes a lock (or an allocation) on: the kernel's generic locking API, a
/// scheduler entry, the page and slab allocators. The caller that names the lock is above them
/// (`btrfs_tree_read_lock`, `ext4_buffered_write_iter`).
fn passes_on(frame: &str) -> bool {
    const GENERIC: &[&str] = &[
        "down_",
        "up_",
        "__down",
        "__up",
        "_raw_",
        "do_raw_",
        "queued_",
        "native_queued",
        "__pv_queued",
        "pv_",
        "mutex_",
        "__mutex",
        "rwsem",
        "__rwsem",
        "osq_",
        "schedule",
        "__schedule",
        "preempt_schedule",
        "rt_mutex",
        "percpu_down",
        "percpu_up",
        "spin_",
        "read_lock",
        "write_lock",
        "lock_",
    ];
    let (f, _) = split_frame(frame);
    f.ends_with("_slowpath")
        || GENERIC.iter().any(|g| f.starts_with(g))
        || Cause::of(f) == Some(Cause::Memory)
}

/// Who calls `symbol` (a kernel frame when `kernel`) in the stacks where it is the leaf: for each
/// such stack the nearest caller that is not a generic lock, scheduler or allocation primitive
/// (so `rwsem_down_write_slowpath` is attributed to `ext4_buffered_write_iter`, not `down_write`),
/// with its share of the symbol's samples, largest first.
pub fn callers(p: &Profile, symbol: &str, kernel: bool) -> Vec<(String, f64)> {
    let leaf = if kernel {
        format!("{symbol}{KERNEL_SUFFIX}")
    } else {
        symbol.to_string()
    };
    let mut by: BTreeMap<String, u64> = BTreeMap::new();
    let mut total = 0u64;
    for (stack, &n) in &p.stacks {
        let f = frames(stack);
        if f.last() != Some(&leaf.as_str()) {
            continue;
        }
        total += n;
        let caller = f[..f.len() - 1]
            .iter()
            .rev()
            .find(|fr| !passes_on(fr))
            .map_or("(no caller recorded)", |fr| split_frame(fr).0);
        *by.entry(caller.to_string()).or_default() += n;
    }
    let mut out: Vec<(String, f64)> = by
        .into_iter()
        .map(|(c, n)| (c, 100.0 * n as f64 / total.max(1) as f64))
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// How many callers a changed lock or allocation symbol lists.
const CALLERS_SHOWN: usize = 3;

/// The `limit` largest changes of self share, with the hint when there is one, indented by two.
/// A lock, allocation or writeback symbol whose share grew by at least [`HINT_MIN_GAIN`] points
/// gets its top callers in the current profile (from the stored stacks), so the lock is named.
pub fn diff_text(base: &Profile, cur: &Profile, limit: usize) -> String {
    let mut out = String::new();
    let deltas = diff(base, cur);
    let _ = writeln!(
        out,
        "  self share of all CPUs' time; baseline {}, current {}",
        cpu_time(base),
        cpu_time(cur)
    );
    let shown: Vec<&SymbolDelta> = deltas
        .iter()
        .filter(|d| d.delta().abs() >= 0.05)
        .take(limit)
        .collect();
    if shown.is_empty() {
        let _ = writeln!(out, "  no symbol's share changed");
    }
    for d in shown {
        let _ = writeln!(
            out,
            "  {:+6.1} %  {:>5.1}% -> {:>5.1}%  {}  {}",
            d.delta(),
            d.base_pct,
            d.cur_pct,
            mark(d.kernel),
            clip(&d.symbol, 44)
        );
        if d.delta() >= HINT_MIN_GAIN && Cause::of(&d.symbol).is_some() {
            let top: Vec<String> = callers(cur, &d.symbol, d.kernel)
                .into_iter()
                .take(CALLERS_SHOWN)
                .map(|(c, pct)| format!("{c} {pct:.0} %"))
                .collect();
            if !top.is_empty() {
                out.push_str(&wrap(&format!("called from: {}", top.join(", ")), 14));
            }
        }
    }
    if let Some(h) = hint(&deltas) {
        out.push_str(&wrap(&h, 2));
    }
    out
}

/// One test's symbols judged across the repetitions (`compare --profile`), indented by two: how
/// many profiles and symbols were tested, each named symbol with its mean share on both sides
/// and its q-value, the top callers of a lock, allocation or writeback symbol whose share grew
/// (from `cur`, the current side's profiles pooled), and the hint. With fewer than two profiles
/// a side nothing can be judged: the pooled profiles' largest changes are shown as such.
pub fn judged_text(v: &ProfileVerdicts, base: &Profile, cur: &Profile, limit: usize) -> String {
    let mut out = String::new();
    if !v.judgeable() {
        out.push_str(&wrap(
            &format!(
                "{} baseline and {} current profiles: a share is judged across the repetitions \
                 with two profiles a side; the pooled profiles' largest changes, not judged:",
                v.base_n, v.cur_n
            ),
            2,
        ));
        out.push_str(&diff_text(base, cur, limit));
        return out;
    }
    let named: Vec<&SymbolVerdict> = v.named().collect();
    out.push_str(&wrap(
        &format!(
            "{} baseline and {} current profiles; {} of {} symbols tested (at least {} % self \
             share on a side), {} changed beyond the repetitions' spread",
            v.base_n,
            v.cur_n,
            v.tested.len(),
            v.seen,
            profile::MIN_TESTED_PCT,
            named.len()
        ),
        2,
    ));
    if named.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "  mean self share of all CPUs' time; baseline {}, current {}",
        cpu_time(base),
        cpu_time(cur)
    );
    for d in named.iter().take(limit) {
        let q = d
            .comparison
            .q_value
            .map(|q| format!("q {}", fmt_p(q)))
            .unwrap_or_default();
        let line = format!(
            "  {:+6.1} %  {:>5.1}% -> {:>5.1}%  {}  {:<33}  {q}",
            d.delta(),
            d.base_pct,
            d.cur_pct,
            mark(d.kernel),
            clip(&d.symbol, 33)
        );
        let _ = writeln!(out, "{}", line.trim_end());
        if d.delta() >= HINT_MIN_GAIN && Cause::of(&d.symbol).is_some() {
            let top: Vec<String> = callers(cur, &d.symbol, d.kernel)
                .into_iter()
                .take(CALLERS_SHOWN)
                .map(|(c, pct)| format!("{c} {pct:.0} %"))
                .collect();
            if !top.is_empty() {
                out.push_str(&wrap(&format!("called from: {}", top.join(", ")), 14));
            }
        }
    }
    if named.len() > limit {
        let _ = writeln!(out, "  ({} more named symbols)", named.len() - limit);
    }
    let deltas: Vec<SymbolDelta> = named
        .iter()
        .map(|d| SymbolDelta {
            symbol: d.symbol.clone(),
            kernel: d.kernel,
            base_pct: d.base_pct,
            cur_pct: d.cur_pct,
        })
        .collect();
    if let Some(h) = hint(&deltas) {
        out.push_str(&wrap(&h, 2));
    }
    out
}

/// Wrap `text` at 80 columns, every line indented by `indent`.
pub fn wrap(text: &str, indent: usize) -> String {
    let mut out = String::new();
    let mut line = " ".repeat(indent);
    for word in text.split_whitespace() {
        if line.len() + word.len() + 1 > 80 && !line.trim().is_empty() {
            out.push_str(line.trim_end());
            out.push('\n');
            line = " ".repeat(indent + 2);
        }
        line.push_str(word);
        line.push(' ');
    }
    if !line.trim().is_empty() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn svg(opts: &mut inferno::flamegraph::Options<'_>, folded: &str) -> std::io::Result<String> {
    let mut buf = Vec::new();
    inferno::flamegraph::from_lines(opts, folded.lines(), &mut buf)?;
    String::from_utf8(buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

fn flame_options(title: &str) -> inferno::flamegraph::Options<'static> {
    let mut o = inferno::flamegraph::Options::default();
    o.title = title.to_string();
    o.count_name = "ns".to_string();
    // Kernel frames (`_[k]`) orange, user frames red.
    o.colors =
        inferno::flamegraph::color::Palette::Multi(inferno::flamegraph::color::MultiPalette::Java);
    o.deterministic = true;
    o
}

/// Whether a flame graph keeps one root per thread (`fsmark-0` .. `fsmark-15`, `kworker/u8:2`)
/// or merges the threads of one program under one root (`fsmark`, `kworker`), the default: the
/// same stacks cut into 16 slivers hide what they share. The stored stacks stay raw either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Threads {
    /// One root per program: the thread's number left out of the root frame.
    #[default]
    Merged,
    /// One root per thread, as recorded.
    PerThread,
}

/// The program a root frame (a thread's name) belongs to: without a trailing `-N` worker number
/// or a `/CPU`-style kernel-thread suffix (`fsmark-3` -> `fsmark`, `ksoftirqd/0` -> `ksoftirqd`,
/// `kworker/u8:2` -> `kworker`).
pub fn program_of(root: &str) -> &str {
    let root = match root.split_once('/') {
        Some((name, rest)) if !name.is_empty() && rest.chars().any(|c| c.is_ascii_digit()) => name,
        _ => root,
    };
    match root.rsplit_once('-') {
        Some((name, n))
            if !name.is_empty() && !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) =>
        {
            name
        }
        _ => root,
    }
}

/// `p` with the threads of one program merged under one root ([`program_of`]).
pub fn merge_threads(p: &Profile) -> Profile {
    let mut out = Profile::default();
    for (stack, &n) in &p.stacks {
        let (root, rest) = stack.split_once(';').unwrap_or((stack.as_str(), ""));
        let merged = if rest.is_empty() {
            program_of(root).to_string()
        } else {
            format!("{};{rest}", program_of(root))
        };
        *out.stacks.entry(merged).or_default() += n;
    }
    out
}

fn threads(p: &Profile, t: Threads) -> std::borrow::Cow<'_, Profile> {
    match t {
        Threads::Merged => std::borrow::Cow::Owned(merge_threads(p)),
        Threads::PerThread => std::borrow::Cow::Borrowed(p),
    }
}

/// A flame graph of one profile (set), as SVG.
pub fn flamegraph_svg(p: &Profile, title: &str, t: Threads) -> std::io::Result<String> {
    svg(&mut flame_options(title), &threads(p, t).to_folded())
}

/// A differential flame graph: the current profile's shape, red where a frame's share grew since
/// the baseline and blue where it shrank; the baseline is scaled to the current sample count.
pub fn differential_svg(
    base: &Profile,
    cur: &Profile,
    title: &str,
    t: Threads,
) -> std::io::Result<String> {
    let (base, cur) = (threads(base, t), threads(cur, t));
    let mut folded = Vec::new();
    let opt = inferno::differential::Options {
        normalize: true,
        strip_hex: false,
    };
    inferno::differential::from_readers(
        opt,
        base.to_folded().as_bytes(),
        cur.to_folded().as_bytes(),
        &mut folded,
    )?;
    let text = String::from_utf8_lossy(&folded);
    let mut o = flame_options(title);
    o.colors = inferno::flamegraph::color::Palette::default();
    svg(&mut o, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judged_text_names_a_lock_that_grew_in_every_repetition_with_its_callers() {
        let side = |lock: u64| -> Vec<Profile> {
            [0u64, 4, 9]
                .iter()
                .map(|j| {
                    let mut t = format!("p;open_[k];btrfs_create_[k] {}\np;x 1\n", 700 + j);
                    if lock > 0 {
                        t.push_str(&format!(
                            "p;open_[k];btrfs_tree_read_lock_[k];queue_read_lock_slowpath_[k] {}\n",
                            lock + j
                        ));
                    }
                    profile(&t)
                })
                .collect()
        };
        let (b, c) = (side(0), side(300));
        let v = crate::compare::profile::judge(
            &[(b.clone(), c.clone())],
            &crate::compare::verdict::Margins::default(),
        );
        let pool = |ps: &[Profile]| {
            let mut p = Profile::default();
            ps.iter().for_each(|x| p.merge(x));
            p
        };
        let text = judged_text(&v[0], &pool(&b), &pool(&c), 10);
        assert!(text.contains("3 baseline and 3 current profiles"), "{text}");
        assert!(text.contains("symbols tested"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.contains("[k]  queue_read_lock_slowpath") && l.contains(" q ")),
            "{text}"
        );
        assert!(
            text.contains("called from: btrfs_tree_read_lock 100 %"),
            "{text}"
        );
        assert!(text.contains("are lock slow"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");

        // One profile a side: the pooled changes, marked as not judged.
        let v = crate::compare::profile::judge(
            &[(b[..1].to_vec(), c[..1].to_vec())],
            &crate::compare::verdict::Margins::default(),
        );
        let text = judged_text(&v[0], &b[0], &c[0], 10);
        assert!(text.contains("not judged"), "{text}");
        assert!(text.contains("queue_read_lock_slowpath"), "{text}");
    }

    #[test]
    fn the_threads_of_one_program_share_one_root_unless_asked() {
        let mut text = String::new();
        for t in 0..16 {
            text.push_str(&format!(
                "fsmark-{t};entry_SYSCALL_64_[k];ext4_create_[k] 10\n"
            ));
        }
        text.push_str("kworker/u8:2;wb_workfn_[k] 5\nksoftirqd/0;run_ksoftirqd_[k] 1\nsh;main 1\n");
        let p = profile(&text);
        let m = merge_threads(&p);
        assert_eq!(m.stacks["fsmark;entry_SYSCALL_64_[k];ext4_create_[k]"], 160);
        assert_eq!(m.stacks["kworker;wb_workfn_[k]"], 5);
        assert_eq!(m.stacks["ksoftirqd;run_ksoftirqd_[k]"], 1);
        assert_eq!(m.stacks["sh;main"], 1);
        assert_eq!(m.total(), p.total());
        let merged = flamegraph_svg(&p, "t", Threads::Merged).unwrap();
        let raw = flamegraph_svg(&p, "t", Threads::PerThread).unwrap();
        assert!(!merged.contains("fsmark-7") && merged.contains("fsmark"));
        assert!(raw.contains("fsmark-7"));
        assert_eq!(program_of("fs_mark"), "fs_mark");
        assert_eq!(program_of("dbench-x"), "dbench-x");
    }

    fn profile(text: &str) -> Profile {
        Profile::parse_folded(text).unwrap()
    }

    /// The shape of the btrfs fs_mark regression of issue 8: before, CPU goes to creating files;
    /// after, to the extent-buffer lock's slow paths.
    fn pair() -> (Profile, Profile) {
        let base = profile(
            "fsmark-0;__GI___libc_open;entry_SYSCALL_64_[k];do_sys_openat2_[k];btrfs_create_[k] 600\n\
             fsmark-0;__GI___libc_open;entry_SYSCALL_64_[k];do_sys_openat2_[k];_raw_spin_unlock_irqrestore_[k] 100\n\
             fsmark-0;fsmark_loop 100\n\
             swapper;pv_native_safe_halt_[k] 200\n",
        );
        let cur = profile(
            "fsmark-0;__GI___libc_open;entry_SYSCALL_64_[k];do_sys_openat2_[k];btrfs_create_[k] 200\n\
             fsmark-0;__GI___libc_open;entry_SYSCALL_64_[k];do_sys_openat2_[k];btrfs_tree_read_lock_[k];queue_read_lock_slowpath_[k] 300\n\
             fsmark-0;__GI___libc_open;entry_SYSCALL_64_[k];do_sys_openat2_[k];btrfs_tree_lock_[k];queue_write_lock_slowpath_[k] 150\n\
             fsmark-0;__GI___libc_open;entry_SYSCALL_64_[k];do_sys_openat2_[k];_raw_spin_unlock_irqrestore_[k] 200\n\
             fsmark-0;fsmark_loop 50\n\
             swapper;pv_native_safe_halt_[k] 100\n",
        );
        (base, cur)
    }

    #[test]
    fn top_symbols_have_self_and_total_shares() {
        let (base, _) = pair();
        let top = top_symbols(&base);
        assert_eq!(top[0].symbol, "btrfs_create");
        assert!(top[0].kernel);
        assert!((top[0].self_pct - 60.0).abs() < 1e-9);
        let open = top.iter().find(|s| s.symbol == "__GI___libc_open").unwrap();
        assert!(!open.kernel);
        assert_eq!(open.self_pct, 0.0);
        assert!((open.total_pct - 70.0).abs() < 1e-9);
        // The process name (root frame) is not a symbol.
        assert!(top.iter().all(|s| s.symbol != "fsmark-0"));
        let text = top_text("emptyfiles (scratch)", &base, 3);
        assert!(text.contains(" 60.0%  60.0%  [k]  btrfs_create"), "{text}");
        assert!(text.contains("more symbols"), "{text}");
    }

    #[test]
    fn a_slow_path_as_top_gainer_gives_the_lock_hint_beside_ordinary_gainers() {
        // The top gainer is rwsem_down_write_slowpath (+30 points); two ordinary symbols gain
        // +25 and +20 points, more than it together, which the majority rule alone missed.
        let base = profile(
            "fsmark-0;entry_SYSCALL_64_[k];btrfs_create_[k] 900\n\
             other;busy_loop 50\n\
             other;crc32c_pcl_intel_update_[k] 50\n",
        );
        let cur = profile(
            "fsmark-0;entry_SYSCALL_64_[k];btrfs_create_[k] 150\n\
             fsmark-0;entry_SYSCALL_64_[k];down_write_[k];rwsem_down_write_slowpath_[k] 300\n\
             other;busy_loop 300\n\
             other;crc32c_pcl_intel_update_[k] 250\n",
        );
        let d = diff(&base, &cur);
        let h = hint(&d).expect("a hint");
        assert!(h.contains("lock slow paths"), "{h}");
        assert!(h.contains("rwsem_down_write_slowpath"), "{h}");
        assert!(h.contains("+30.0 %"), "{h}");
        // An ordinary top gainer with a minority of lock gain stays quiet.
        let cur2 = profile(
            "fsmark-0;entry_SYSCALL_64_[k];btrfs_create_[k] 150\n\
             fsmark-0;entry_SYSCALL_64_[k];down_write_[k];rwsem_down_write_slowpath_[k] 200\n\
             other;busy_loop 400\n\
             other;crc32c_pcl_intel_update_[k] 250\n",
        );
        assert_eq!(hint(&diff(&base, &cur2)), None);
    }

    #[test]
    fn a_synthetic_lock_regression_gives_its_deltas_and_the_lock_hint() {
        let (base, cur) = pair();
        let d = diff(&base, &cur);
        // Each side's shares are of its own samples: 1000 then 1000.
        assert_eq!(d[0].symbol, "btrfs_create");
        assert!((d[0].delta() + 40.0).abs() < 1e-9);
        let slow = d
            .iter()
            .find(|x| x.symbol == "queue_read_lock_slowpath")
            .unwrap();
        assert!((slow.delta() - 30.0).abs() < 1e-9);
        assert_eq!(slow.base_pct, 0.0);
        let h = hint(&d).expect("a hint");
        assert!(h.contains("lock slow paths"), "{h}");
        assert!(h.contains("queue_read_lock_slowpath"), "{h}");
        assert!(h.contains("+55.0 %"), "{h}");
        let text = diff_text(&base, &cur, 5);
        assert!(
            text.contains(" +30.0 %    0.0% ->  30.0%  [k]  queue_read_lock_slowpath"),
            "{text}"
        );
        assert!(text.contains(" -40.0 %"), "{text}");
        assert!(text.lines().all(|l| l.len() <= 80), "{text}");
        // The slow path's caller names the lock: btrfs's extent-buffer lock.
        let line = text.find("queue_read_lock_slowpath").unwrap();
        assert!(
            text[line..].contains("\n              called from: btrfs_tree_read_lock 100 %"),
            "{text}"
        );
    }

    #[test]
    fn a_grown_lock_slow_path_is_attributed_to_the_callers_that_take_the_lock() {
        // ext4 under fs_mark: the inode rwsem taken for writes and for setattr.
        let base =
            profile("fsmark-0;write;ext4_buffered_write_iter_[k];generic_perform_write_[k] 100\n");
        let cur = profile(
            "fsmark-0;write;ext4_buffered_write_iter_[k];down_write_[k];rwsem_down_write_slowpath_[k] 60\n\
             fsmark-1;write;ext4_buffered_write_iter_[k];down_write_[k];rwsem_down_write_slowpath_[k];schedule_[k] 1\n\
             fsmark-2;chmod;notify_change_[k];ext4_setattr_[k];down_write_[k];rwsem_down_write_slowpath_[k] 20\n\
             fsmark-0;write;ext4_buffered_write_iter_[k];generic_perform_write_[k] 20\n",
        );
        let c = callers(&cur, "rwsem_down_write_slowpath", true);
        assert_eq!(c[0].0, "ext4_buffered_write_iter");
        assert!((c[0].1 - 75.0).abs() < 1e-9, "{c:?}");
        assert_eq!(c[1].0, "ext4_setattr");
        let text = diff_text(&base, &cur, 5);
        assert!(
            text.contains("called from: ext4_buffered_write_iter 75 %, ext4_setattr 25 %"),
            "{text}"
        );
        // A symbol that is no lock, memory or writeback gets no callers line.
        assert_eq!(text.matches("called from").count(), 1, "{text}");
    }

    #[test]
    fn hints_name_memory_and_writeback_and_stay_quiet_otherwise() {
        let base = profile("p;a 100\n");
        let mem = profile("p;a 50\np;__alloc_pages_[k] 30\np;shrink_folio_list_[k] 20\n");
        let h = hint(&diff(&base, &mem)).unwrap();
        assert!(h.contains("memory allocation or reclaim"), "{h}");
        let wb = profile("p;a 40\np;wb_writeback_[k] 35\np;ext4_writepages_[k] 25\n");
        let h = hint(&diff(&base, &wb)).unwrap();
        assert!(h.contains("writeback"), "{h}");
        // A gain spread over ordinary functions gives no hint.
        let plain = profile("p;a 40\np;crc32c_[k] 35\np;memcpy 25\n");
        assert_eq!(hint(&diff(&base, &plain)), None);
        // Nor does an unchanged profile.
        assert_eq!(hint(&diff(&base, &base)), None);
        assert_eq!(Cause::of("_raw_spin_lock_[k]"), Some(Cause::Locks));
        assert_eq!(Cause::of("down_write_rwsem"), Some(Cause::Locks));
        assert_eq!(Cause::of("kmem_cache_alloc_lru_[k]"), Some(Cause::Memory));
        assert_eq!(Cause::of("btrfs_create_[k]"), None);
    }

    #[test]
    fn flame_graphs_are_svg_with_the_frames() {
        let (base, cur) = pair();
        let one = flamegraph_svg(&base, "baseline", Threads::Merged).unwrap();
        assert!(one.starts_with("<?xml"), "{}", &one[..60]);
        // inferno shows frames without their `_[k]` mark (it only colours by it).
        assert!(one.contains("btrfs_create"));
        assert!(one.contains("baseline"));
        let d = differential_svg(&base, &cur, "baseline vs current", Threads::Merged).unwrap();
        assert!(d.contains("queue_read_lock_slowpath"));
        assert!(d.contains("</svg>"));
    }
}
