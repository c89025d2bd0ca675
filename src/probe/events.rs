//! Kernel tracepoint counts around a workload (`run --events 'btrfs:*,kmem:kmalloc'`): the list
//! is parsed, each event's id is read from tracefs (`events/GROUP/NAME/id`, a `*` or `?` in the
//! name expands over the group), and one counting perf event (`PERF_TYPE_TRACEPOINT`, config =
//! the id) is opened per event and online CPU with pid = -1, so that work the kernel does on
//! behalf of the workload in other threads (writeback, kworkers) counts too. The counters are
//! reset and enabled right before the workload and disabled right after; each count becomes a
//! neutral metric `event:GROUP:NAME`.
//!
//! Why a file of its own: every check (syntax, tracefs, unknown events, permission) must be
//! possible before a run is recorded, and the counters must be closed whatever happens (they
//! are `OwnedFd`s, closed on drop). This module must never print, and never count outside
//! [`Counters::start`]..[`Counters::stop`].

use crate::model::{Direction, Metric, MetricKind, Unit};
pub use crate::plan::events::EventSpec;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Where tracefs is mounted on current kernels.
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// What went wrong with an event list or its counters; each message names the fix.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    /// The list does not parse.
    #[error(
        "bad event '{item}': {why} (write GROUP:NAME, e.g. ext4:ext4_da_write_begin or btrfs:*, separated by commas)"
    )]
    Syntax {
        /// The offending item.
        item: String,
        /// What is wrong with it.
        why: String,
    },
    /// tracefs is absent and could not be mounted.
    #[error(
        "tracefs is not mounted at {TRACEFS} and mounting it failed ({0}): as root run `mount -t tracefs nodev {TRACEFS}` (the kernel needs CONFIG_TRACING)"
    )]
    NoTracefs(String),
    /// tracefs is mounted but this user cannot read it.
    #[error(
        "cannot read {TRACEFS}/events ({0}): counting tracepoints needs root (or a tracefs mounted readable for this user, and kernel.perf_event_paranoid=-1)"
    )]
    TracefsAccess(std::io::Error),
    /// No such group in tracefs.
    #[error("unknown event group '{group}' in '{item}'; {hint}")]
    UnknownGroup {
        /// The item as written.
        item: String,
        /// The group.
        group: String,
        /// Close groups, or the list of groups.
        hint: String,
    },
    /// No such event in its group.
    #[error("unknown event '{item}'; {hint} (all: ls {TRACEFS}/events/{group})")]
    UnknownEvent {
        /// The item as written.
        item: String,
        /// The group.
        group: String,
        /// Close matches.
        hint: String,
    },
    /// A filter names an event that is not counted, or does not parse.
    #[error(
        "bad event filter '{0}': write GROUP:NAME:EXPRESSION for an event of --events, e.g. 'ext4:ext4_da_write_begin:dev == 7340032'"
    )]
    Filter(String),
    /// The kernel refused a filter.
    #[error(
        "the kernel refused filter '{filter}' on {event}: {source} (the fields are in {TRACEFS}/events/{group}/{name}/format)"
    )]
    FilterRejected {
        /// The filter expression.
        filter: String,
        /// The event.
        event: String,
        /// The group.
        group: String,
        /// The name.
        name: String,
        /// The kernel's error.
        source: std::io::Error,
    },
    /// perf_event_open was refused for lack of privilege.
    #[error(
        "counting {event} on every CPU was refused ({source}): run as root, or allow it with `sysctl kernel.perf_event_paranoid=-1` (now {paranoid})"
    )]
    Permission {
        /// The event.
        event: String,
        /// The current /proc/sys/kernel/perf_event_paranoid.
        paranoid: String,
        /// The kernel's error.
        source: std::io::Error,
    },
    /// Another failure of the perf syscalls or of reading tracefs.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

/// A resolved tracepoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracepoint {
    /// Trace group.
    pub group: String,
    /// Event name.
    pub name: String,
    /// Its id in tracefs (perf's `config`).
    pub id: u64,
    /// A tracefs filter expression (`dev == 7340032`), if any.
    pub filter: Option<String>,
}

impl Tracepoint {
    /// The metric name of its count: `event:GROUP:NAME`.
    pub fn metric_name(&self) -> String {
        format!("event:{}:{}", self.group, self.name)
    }
}

/// Parse `btrfs:*,kmem:kmalloc` (the syntax is the plan's, [`crate::plan::events::parse_list`]).
pub fn parse_list(list: &str) -> Result<Vec<EventSpec>, EventError> {
    crate::plan::events::parse_list(list).map_err(|e| EventError::Syntax {
        item: e.item,
        why: e.why,
    })
}

/// Does `name` match the glob `pat` (`*` any run, `?` one character)?
pub fn glob_match(pat: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pat.chars().collect(), name.chars().collect());
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Up to five of `candidates` close to `want` (a substring either way, or a few edits away),
/// closest first.
pub fn close_matches(want: &str, candidates: &[String]) -> Vec<String> {
    let mut scored: Vec<(usize, &String)> = candidates
        .iter()
        .filter_map(|c| {
            let d = edit_distance(want, c);
            let near = d <= (want.len() / 3).max(2);
            let sub = want.len() >= 3 && (c.contains(want) || want.contains(c.as_str()));
            (near || sub).then_some((d, c))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(5).map(|(_, c)| c.clone()).collect()
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> EventError {
    let what = what.into();
    move |source| EventError::Io { what, source }
}

fn names_in(dir: &Path) -> Result<Vec<String>, EventError> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io(format!("listing {}", dir.display())))? {
        let e = e.map_err(io(format!("listing {}", dir.display())))?;
        if e.path().is_dir() {
            v.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    v.sort();
    Ok(v)
}

/// The `events` directory of tracefs, mounting tracefs at [`TRACEFS`] when it is absent.
pub fn tracefs_events() -> Result<PathBuf, EventError> {
    let events = Path::new(TRACEFS).join("events");
    match std::fs::metadata(&events) {
        Ok(m) if m.is_dir() => return Ok(events),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Err(EventError::TracefsAccess(e));
        }
        _ => {}
    }
    let debugfs = Path::new("/sys/kernel/debug/tracing/events");
    if debugfs.is_dir() {
        return Ok(debugfs.to_path_buf());
    }
    let c = |s: &str| std::ffi::CString::new(s).expect("no NUL");
    let (src, target, fstype) = (c("nodev"), c(TRACEFS), c("tracefs"));
    // SAFETY: valid NUL-terminated strings; no data argument.
    let rc = unsafe {
        libc::mount(
            src.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(EventError::NoTracefs(
            std::io::Error::last_os_error().to_string(),
        ));
    }
    if events.is_dir() {
        Ok(events)
    } else {
        Err(EventError::NoTracefs(format!(
            "mounted, but {} is missing",
            events.display()
        )))
    }
}

/// Resolve `specs` against the tracefs `events` directory `root`: every glob expanded (in name
/// order), every name checked, duplicates dropped.
pub fn resolve(specs: &[EventSpec], root: &Path) -> Result<Vec<Tracepoint>, EventError> {
    let mut out: Vec<Tracepoint> = Vec::new();
    for s in specs {
        let item = format!("{}:{}", s.group, s.name);
        let gdir = root.join(&s.group);
        if !gdir.is_dir() {
            let groups = names_in(root)?;
            let close = close_matches(&s.group, &groups);
            let hint = if close.is_empty() {
                format!("the groups are: {}", groups.join(", "))
            } else {
                format!("did you mean {}?", close.join(", "))
            };
            return Err(EventError::UnknownGroup {
                item,
                group: s.group.clone(),
                hint,
            });
        }
        let names: Vec<String> = if s.name.contains(['*', '?']) {
            let all = names_in(&gdir)?;
            let m: Vec<String> = all
                .into_iter()
                .filter(|n| glob_match(&s.name, n) && gdir.join(n).join("id").is_file())
                .collect();
            if m.is_empty() {
                return Err(EventError::UnknownEvent {
                    item,
                    group: s.group.clone(),
                    hint: "the glob matches no event of the group".into(),
                });
            }
            m
        } else {
            if !gdir.join(&s.name).join("id").is_file() {
                let all = names_in(&gdir)?;
                let close = close_matches(&s.name, &all);
                let hint = if close.is_empty() {
                    format!("no event of group {} is close", s.group)
                } else {
                    let q: Vec<String> = close.iter().map(|n| format!("{}:{n}", s.group)).collect();
                    format!("did you mean {}?", q.join(", "))
                };
                return Err(EventError::UnknownEvent {
                    item,
                    group: s.group.clone(),
                    hint,
                });
            }
            vec![s.name.clone()]
        };
        for n in names {
            let p = gdir.join(&n).join("id");
            let text =
                std::fs::read_to_string(&p).map_err(io(format!("reading {}", p.display())))?;
            let id = text.trim().parse::<u64>().map_err(|e| EventError::Io {
                what: format!("reading {}", p.display()),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            })?;
            if !out.iter().any(|t| t.id == id) {
                out.push(Tracepoint {
                    group: s.group.clone(),
                    name: n,
                    id,
                    filter: None,
                });
            }
        }
    }
    Ok(out)
}

/// Attach `filters` (`GROUP:NAME:EXPRESSION`) to the matching tracepoints of `tps`.
pub fn apply_filters(tps: &mut [Tracepoint], filters: &[String]) -> Result<(), EventError> {
    for f in filters {
        let mut parts = f.splitn(3, ':');
        let (Some(g), Some(n), Some(expr)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(EventError::Filter(f.clone()));
        };
        let expr = expr.trim();
        let mut hit = false;
        for t in tps.iter_mut().filter(|t| t.group == g && t.name == n) {
            t.filter = Some(expr.to_string());
            hit = true;
        }
        if !hit || expr.is_empty() {
            return Err(EventError::Filter(f.clone()));
        }
    }
    Ok(())
}

/// The tracepoints of one test: the run's `--events` list and filters plus the test's own
/// `events = [...]`, resolved against tracefs (mounted if needed). Empty when none is asked.
pub fn for_test(
    run_list: Option<&str>,
    filters: &[String],
    test_events: &[String],
) -> Result<Vec<Tracepoint>, EventError> {
    let mut specs = match run_list {
        Some(l) => parse_list(l)?,
        None => Vec::new(),
    };
    for e in test_events {
        for s in parse_list(e)? {
            if !specs.contains(&s) {
                specs.push(s);
            }
        }
    }
    if specs.is_empty() {
        if let Some(f) = filters.first() {
            return Err(EventError::Filter(f.clone()));
        }
        return Ok(Vec::new());
    }
    let mut tps = resolve(&specs, &tracefs_events()?)?;
    apply_filters(&mut tps, filters)?;
    Ok(tps)
}

/// The online CPUs (`/sys/devices/system/cpu/online`, e.g. `0-3,6`).
pub fn online_cpus() -> Result<Vec<i32>, EventError> {
    let p = "/sys/devices/system/cpu/online";
    let text = std::fs::read_to_string(p).map_err(io(format!("reading {p}")))?;
    parse_cpu_list(text.trim()).ok_or_else(|| EventError::Io {
        what: format!("reading {p}"),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, text.trim().to_string()),
    })
}

/// A kernel CPU or node list (`0-3,6`, as in sysfs and /proc/self/status), ascending as written.
pub fn parse_cpu_list(s: &str) -> Option<Vec<i32>> {
    let mut v = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => v.extend(a.parse::<i32>().ok()?..=b.parse::<i32>().ok()?),
            None => v.push(part.parse().ok()?),
        }
    }
    Some(v)
}

/// `struct perf_event_attr` up to PERF_ATTR_SIZE_VER0 (64 bytes), which every kernel accepts.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    bp_addr: u64,
}

const PERF_TYPE_TRACEPOINT: u32 = 2;
const FLAG_DISABLED: u64 = 1;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_RESET: libc::c_ulong = 0x2403;
// _IOW('$', 6, char *)
const IOC_SET_FILTER: libc::c_ulong = 0x4008_2406;

fn paranoid() -> String {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Open counters: per tracepoint, one descriptor per online CPU. Closed when dropped.
pub struct Counters {
    events: Vec<(Tracepoint, Vec<OwnedFd>)>,
}

impl Counters {
    /// Open a disabled counter of every tracepoint on every online CPU (pid = -1), with its
    /// filter. Fails on the first refusal, naming the fix.
    pub fn open(tps: &[Tracepoint]) -> Result<Counters, EventError> {
        let cpus = online_cpus()?;
        let mut events = Vec::new();
        for t in tps {
            let mut fds = Vec::new();
            for &cpu in &cpus {
                let attr = PerfEventAttr {
                    type_: PERF_TYPE_TRACEPOINT,
                    size: std::mem::size_of::<PerfEventAttr>() as u32,
                    config: t.id,
                    flags: FLAG_DISABLED,
                    ..Default::default()
                };
                // SAFETY: attr is a valid perf_event_attr of the size it declares.
                let fd = unsafe {
                    libc::syscall(
                        libc::SYS_perf_event_open,
                        &attr as *const PerfEventAttr,
                        -1 as libc::pid_t,
                        cpu,
                        -1 as libc::c_int,
                        PERF_FLAG_FD_CLOEXEC,
                    )
                };
                if fd < 0 {
                    let e = std::io::Error::last_os_error();
                    let event = format!("{}:{}", t.group, t.name);
                    return Err(match e.raw_os_error() {
                        Some(libc::EACCES) | Some(libc::EPERM) => EventError::Permission {
                            event,
                            paranoid: paranoid(),
                            source: e,
                        },
                        Some(libc::EMFILE) => EventError::Io {
                            what: format!(
                                "perf_event_open of {event}: {} events x {} CPUs need one descriptor each; raise `ulimit -n` or count fewer events",
                                tps.len(),
                                cpus.len()
                            ),
                            source: e,
                        },
                        _ => EventError::Io {
                            what: format!("perf_event_open of {event} (id {}) on CPU {cpu}", t.id),
                            source: e,
                        },
                    });
                }
                // SAFETY: a new descriptor that nothing else owns.
                let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
                if let Some(f) = &t.filter {
                    let c = std::ffi::CString::new(f.as_str())
                        .map_err(|_| EventError::Filter(f.clone()))?;
                    // SAFETY: a valid descriptor and a NUL-terminated string.
                    if unsafe { libc::ioctl(fd.as_raw_fd(), IOC_SET_FILTER, c.as_ptr()) } != 0 {
                        return Err(EventError::FilterRejected {
                            filter: f.clone(),
                            event: format!("{}:{}", t.group, t.name),
                            group: t.group.clone(),
                            name: t.name.clone(),
                            source: std::io::Error::last_os_error(),
                        });
                    }
                }
                fds.push(fd);
            }
            events.push((t.clone(), fds));
        }
        Ok(Counters { events })
    }

    fn each(&self, req: libc::c_ulong, what: &str) -> Result<(), EventError> {
        for (t, fds) in &self.events {
            for fd in fds {
                // SAFETY: a valid perf descriptor; these requests take no argument.
                if unsafe { libc::ioctl(fd.as_raw_fd(), req, 0) } != 0 {
                    return Err(EventError::Io {
                        what: format!("{what} the counter of {}:{}", t.group, t.name),
                        source: std::io::Error::last_os_error(),
                    });
                }
            }
        }
        Ok(())
    }

    /// Zero and enable every counter (right before the workload).
    pub fn start(&mut self) -> Result<(), EventError> {
        self.each(IOC_RESET, "resetting")?;
        self.each(IOC_ENABLE, "enabling")
    }

    /// Disable every counter (right after the workload).
    pub fn stop(&mut self) -> Result<(), EventError> {
        self.each(IOC_DISABLE, "disabling")
    }

    /// The counts since [`Counters::start`], summed over the CPUs, as neutral count metrics.
    pub fn metrics(&self) -> Result<Vec<Metric>, EventError> {
        let mut out = Vec::new();
        for (t, fds) in &self.events {
            let mut sum = 0u64;
            for fd in fds {
                let mut v = 0u64;
                // SAFETY: reading 8 bytes into a u64 from a valid descriptor.
                let n = unsafe { libc::read(fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
                if n != 8 {
                    return Err(EventError::Io {
                        what: format!("reading the counter of {}:{}", t.group, t.name),
                        source: std::io::Error::last_os_error(),
                    });
                }
                sum += v;
            }
            out.push(
                Metric::new(t.metric_name(), sum as f64, Unit::Count, Direction::Neutral)
                    .kind(MetricKind::Count),
            );
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracefs_fixture() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (g, n, id) in [
            ("ext4", "ext4_da_write_begin", 10),
            ("ext4", "ext4_da_write_end", 11),
            ("ext4", "ext4_write_begin", 12),
            ("kmem", "kmalloc", 20),
            ("kmem", "kfree", 21),
            ("writeback", "writeback_start", 30),
        ] {
            let p = d.path().join(g).join(n);
            std::fs::create_dir_all(&p).unwrap();
            std::fs::write(p.join("id"), format!("{id}\n")).unwrap();
        }
        // tracefs puts `enable` and `filter` files beside the event directories.
        std::fs::write(d.path().join("ext4").join("enable"), "0\n").unwrap();
        d
    }

    #[test]
    fn parses_lists() {
        let v =
            parse_list(" btrfs:* , kmem:kmalloc,writeback:writeback_start,kmem:kmalloc").unwrap();
        let names: Vec<String> = v
            .iter()
            .map(|s| format!("{}:{}", s.group, s.name))
            .collect();
        assert_eq!(
            names,
            ["btrfs:*", "kmem:kmalloc", "writeback:writeback_start"]
        );
    }

    #[test]
    fn bad_syntax_says_how_to_write_it() {
        for (list, why) in [
            ("kmalloc", "no ':'"),
            ("kmem:kmalloc,,ext4:x", "an empty item"),
            ("kmem:kmalloc:call_site", "more than one ':'"),
            ("km*:kmalloc", "a glob only in the name"),
            ("kmem:kmal-loc", "the name must be"),
        ] {
            let e = parse_list(list).unwrap_err().to_string();
            assert!(e.contains(why), "{list}: {e}");
            assert!(e.contains("write GROUP:NAME"), "{e}");
        }
    }

    #[test]
    fn globs_match() {
        assert!(glob_match("*", "anything"));
        assert!(glob_match("ext4_da_*", "ext4_da_write_begin"));
        assert!(glob_match("ext4_?a_write_*", "ext4_da_write_end"));
        assert!(!glob_match("ext4_da_*", "ext4_write_begin"));
        assert!(glob_match("*_begin", "ext4_write_begin"));
        assert!(!glob_match("*_begin", "ext4_write_end"));
        assert!(!glob_match("kmalloc", "kmalloc_node"));
    }

    #[test]
    fn globs_expand_over_the_group_in_name_order() {
        let d = tracefs_fixture();
        let tps = resolve(&parse_list("ext4:*,kmem:kmalloc").unwrap(), d.path()).unwrap();
        let got: Vec<(String, u64)> = tps.iter().map(|t| (t.metric_name(), t.id)).collect();
        assert_eq!(
            got,
            [
                ("event:ext4:ext4_da_write_begin".to_string(), 10),
                ("event:ext4:ext4_da_write_end".to_string(), 11),
                ("event:ext4:ext4_write_begin".to_string(), 12),
                ("event:kmem:kmalloc".to_string(), 20),
            ]
        );
        // An event named twice (by a glob and by name) is counted once.
        let tps = resolve(
            &parse_list("ext4:ext4_da_*,ext4:ext4_da_write_end").unwrap(),
            d.path(),
        )
        .unwrap();
        assert_eq!(tps.len(), 2);
        let e = resolve(&parse_list("ext4:xfs_*").unwrap(), d.path()).unwrap_err();
        assert!(e.to_string().contains("matches no event"), "{e}");
    }

    #[test]
    fn unknown_events_list_close_matches() {
        let d = tracefs_fixture();
        let e = resolve(&parse_list("ext4:ext4_da_write_begn").unwrap(), d.path())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("did you mean ext4:ext4_da_write_begin, ext4:ext4_da_write_end"),
            "{e}"
        );
        assert!(e.contains("ls /sys/kernel/tracing/events/ext4"), "{e}");
        let e = resolve(&parse_list("kmme:kmalloc").unwrap(), d.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown event group 'kmme'"), "{e}");
        assert!(e.contains("did you mean kmem?"), "{e}");
        let e = resolve(&parse_list("zzzzzzzz:x").unwrap(), d.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("the groups are: ext4, kmem, writeback"), "{e}");
    }

    #[test]
    fn filters_attach_to_counted_events_only() {
        let d = tracefs_fixture();
        let mut tps = resolve(&parse_list("ext4:ext4_da_write_begin").unwrap(), d.path()).unwrap();
        apply_filters(
            &mut tps,
            &["ext4:ext4_da_write_begin:dev == 7340032".into()],
        )
        .unwrap();
        assert_eq!(tps[0].filter.as_deref(), Some("dev == 7340032"));
        for bad in [
            "kmem:kmalloc:bytes_req > 1",
            "ext4:ext4_da_write_begin",
            "ext4:ext4_da_write_begin: ",
        ] {
            assert!(apply_filters(&mut tps, &[bad.into()]).is_err(), "{bad}");
        }
    }

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(parse_cpu_list("0-3,6"), Some(vec![0, 1, 2, 3, 6]));
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("x"), None);
    }
}
