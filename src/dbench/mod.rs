//! The dbench wing: dbench 4.00 in one home. The native engine (this module, [`client`],
//! [`loadfile`]), its options and command line ([`options`]), its output ([`output`]), the
//! driver and parser of the real dbench ([`external`]), and the one metric catalogue both feed
//! ([`metrics`]). The wing meets the run loop only through `crate::workload::Workload`; it never
//! imports the fio or fs_mark wings.
//!
//! The native dbench-compatible engine: N clients (threads) replay a NetBench-style loadfile with
//! dbench 4.00's grammar, path rewriting, operation mapping (the `fileio` backend), expected-status
//! rules, warmup, 1 s ticks and final table.
//!
//! Why native: fsperf's `dbench60` and many mailing-list numbers come from dbench; running the same
//! loadfile with the same semantics inside fsdelta keeps those numbers comparable while the
//! latencies come from our clock (`CLOCK_MONOTONIC`, nanoseconds, with histograms) instead of
//! gettimeofday. The semantics are those of `docs/workloads.md` (dbench 4.00); where we
//! differ on purpose it is said here and in `fsdelta dbench --help`:
//! - clients are threads, not processes (`--clients-per-process` still groups clients the way
//!   dbench does: one thread replays each line for each of its clients in turn), each with a
//!   file-descriptor table of its own (`unshare(CLONE_FILES)`), as dbench's processes have;
//! - the loadfile is parsed once before the run, and a line dbench would skip with a message is
//!   an error with its line number ([`loadfile`]);
//! - `client1` is rewritten in the loadfile's paths only, never in the `-D` directory;
//! - the per-tick `latency` is the largest operation latency in the tick (or the age of the
//!   operation still running), where dbench measures the gap between the starts of consecutive
//!   operations, which adds its own line parsing;
//! - `--warmup` sets the warmup (dbench 4.00 always uses t/5; dbench 5 has the flag).
//!
//! This module must never print: ticks and notices go to a [`DbenchObserver`], the final table is
//! a [`DbenchReport`] rendered by [`output`].

pub mod client;
pub mod external;
pub mod loadfile;
pub mod metrics;
pub mod options;
pub mod output;

pub use options::{DbenchOptions, LoadfileSource};

use crate::probe::clock::Nanos;
use crate::workload::{Measurements, RunContext, Workload, WorkloadError};
use client::{Client, ClientShared, OpStats};
use loadfile::{Loadfile, OP_CLASSES, OpClass};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

/// The loadfile we ship and use when none is named: a NetBench-style office mix of our own
/// making, documented in `data/loadfiles/README.md`.
pub const BUILTIN_LOADFILE: &str = include_str!("../../data/loadfiles/fsdelta-smb.txt");
/// Name under which the built-in loadfile is reported.
pub const BUILTIN_LOADFILE_NAME: &str = "builtin:fsdelta-smb.txt";
/// Where Debian installs dbench's own (GPL) loadfile; read at run time, never shipped.
pub const DEBIAN_CLIENT_TXT: &str = "/usr/share/dbench/client.txt";

/// One line of dbench's progress output.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tick {
    /// `warmup`: not every client has moved bytes yet, or the warmup time has not passed.
    Warmup {
        /// Clients that have moved bytes.
        active: u32,
        /// Lines processed per client (dbench's counter, all passes).
        lines: u64,
        /// Decimal MB/s since the start (or the end of warmup).
        mb_s: f64,
        /// Seconds since the start.
        t: f64,
        /// Largest latency seen in the tick, ms.
        latency_ms: f64,
    },
    /// `execute`: the timed phase.
    Execute {
        /// Clients.
        clients: u32,
        /// Lines processed per client.
        lines: u64,
        /// Decimal MB/s since the end of warmup (cumulative average).
        mb_s: f64,
        /// Seconds since the end of warmup.
        t: f64,
        /// Largest latency seen in the tick, ms.
        latency_ms: f64,
    },
    /// `cleanup`: time is up, clients are removing their files.
    Cleanup {
        /// Clients still cleaning up.
        remaining: u32,
        /// Seconds since the end of warmup.
        t: f64,
    },
}

/// Receives what dbench prints while it runs. Called from the ticker thread (ticks) and from
/// client threads (notices); implementations must be quick.
pub trait DbenchObserver: Sync {
    /// Every clients' threads are set up; the run starts now.
    fn started(&self, _opts: &DbenchOptions, _loadfile: &str) {}
    /// A 1 s tick.
    fn tick(&self, _tick: &Tick) {}
    /// A status mismatch dbench reports and carries on from (client id, message).
    fn notice(&self, _client: u32, _message: &str) {}
}

/// An observer that ignores everything.
pub struct Silent;
impl DbenchObserver for Silent {}

/// Aggregated statistics of one operation class.
#[derive(Clone, Debug)]
pub struct OpSummary {
    /// The class.
    pub class: OpClass,
    /// Count, total, max and histogram over every client.
    pub stats: OpStats,
}

impl OpSummary {
    /// Mean latency in ms (0 when nothing was counted).
    pub fn avg_ms(&self) -> f64 {
        if self.stats.count == 0 {
            0.0
        } else {
            self.stats.total.0 as f64 / self.stats.count as f64 / 1e6
        }
    }

    /// Largest latency in ms.
    pub fn max_ms(&self) -> f64 {
        self.stats.max.0 as f64 / 1e6
    }
}

/// Everything dbench prints at the end.
#[derive(Clone, Debug)]
pub struct DbenchReport {
    /// Total clients.
    pub clients: u32,
    /// Client threads (dbench's processes).
    pub procs: u32,
    /// `-s` was given.
    pub sync_open: bool,
    /// `-S` was given.
    pub sync_dirs: bool,
    /// Per class, in table order (classes with no operation included, with count 0).
    pub ops: Vec<OpSummary>,
    /// The last execute tick's MB/s (0 when no execute tick happened, as dbench).
    pub throughput_mb_s: f64,
    /// Largest tick latency after warmup, ms.
    pub max_latency_ms: f64,
    /// Status mismatches reported as notices.
    pub notices: u64,
}

impl DbenchReport {
    /// The metrics of this report, by the catalogue ([`metrics`]): `throughput_mb_s`,
    /// `max_latency_ms`, and for every class that ran `<op>_count`, `<op>_avg_ms`, `<op>_max_ms`
    /// (`<op>` = [`OpClass::metric_stem`]) with its `<op>_lat_ns` histogram.
    pub fn measurements(&self) -> Measurements {
        metrics::measurements(&metrics::Summary {
            throughput_mb_s: self.throughput_mb_s,
            max_latency_ms: self.max_latency_ms,
            ops: self
                .ops
                .iter()
                .map(|op| metrics::OpLine {
                    class: op.class,
                    count: op.stats.count,
                    avg_ms: op.avg_ms(),
                    max_ms: op.max_ms(),
                    histogram: Some(&op.stats.hist),
                })
                .collect(),
        })
    }
}

/// The dbench workload: options bound to a parsed loadfile.
pub struct Dbench {
    opts: DbenchOptions,
    loadfile: Arc<Loadfile>,
    observer: Arc<dyn DbenchObserver + Send>,
}

impl std::fmt::Debug for Dbench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dbench")
            .field("opts", &self.opts)
            .field("loadfile", &self.loadfile.name)
            .finish()
    }
}

impl Dbench {
    /// Check the options and read and parse the loadfile. Errors say how to fix them.
    pub fn new(opts: DbenchOptions) -> Result<Dbench, WorkloadError> {
        opts.validate()?;
        let loadfile = match &opts.loadfile {
            LoadfileSource::Builtin => loadfile::parse(BUILTIN_LOADFILE_NAME, BUILTIN_LOADFILE),
            LoadfileSource::Path(p) => {
                let text = crate::os::input::read(p).map_err(|e| {
                    let hint = if p == std::path::Path::new(DEBIAN_CLIENT_TXT) {
                        " (install it with `apt-get install dbench`, or leave out -c to use \
                         fsdelta's own loadfile)"
                    } else {
                        ""
                    };
                    // `e` names the file first ("PATH: why").
                    WorkloadError::InvalidOptions(format!("cannot read loadfile {e}{hint}"))
                })?;
                let text = String::from_utf8_lossy(&text);
                loadfile::parse(&p.display().to_string(), &text)
            }
        }
        .map_err(|e| WorkloadError::InvalidOptions(e.to_string()))?;
        if !loadfile.moves_bytes() {
            return Err(WorkloadError::InvalidOptions(format!(
                "loadfile {} has no ReadX or WriteX line; dbench's warmup only ends once every \
                 client has moved bytes, so it would never end",
                loadfile.name
            )));
        }
        Ok(Dbench {
            opts,
            loadfile: Arc::new(loadfile),
            observer: Arc::new(Silent),
        })
    }

    /// Send ticks and notices to `observer` (the CLI prints them in dbench's format).
    pub fn with_observer(mut self, observer: Arc<dyn DbenchObserver + Send>) -> Dbench {
        self.observer = observer;
        self
    }

    /// The options.
    pub fn options(&self) -> &DbenchOptions {
        &self.opts
    }

    /// The parsed loadfile.
    pub fn loadfile(&self) -> &Loadfile {
        &self.loadfile
    }

    /// Run once in `ctx.dir`, returning the full report.
    pub fn run_report(&self, ctx: &RunContext<'_>) -> Result<DbenchReport, WorkloadError> {
        let opts = &self.opts;
        let nclients = opts.clients() as usize;
        let cpp = opts.clients_per_process as usize;
        let lf: &Loadfile = &self.loadfile;
        let shared: Vec<ClientShared> = (0..nclients).map(|_| ClientShared::default()).collect();
        let done = AtomicBool::new(false);
        let failed = AtomicBool::new(false);
        let generation = AtomicU32::new(0);
        let notices = std::sync::atomic::AtomicU64::new(0);
        let observer = &*self.observer;
        let notice = |id: u32, msg: &str| {
            notices.fetch_add(1, Ordering::Relaxed);
            observer.notice(id, msg);
        };
        let notice: &(dyn Fn(u32, &str) + Sync) = &notice;
        let stop = || {
            done.load(Ordering::Relaxed)
                || failed.load(Ordering::Relaxed)
                || ctx.cancel.is_cancelled()
        };

        std::thread::scope(|scope| {
            let mut handles = Vec::new();
            for p in 0..opts.nprocs as usize {
                let shared = &shared;
                let generation = &generation;
                let failed = &failed;
                let stop = &stop;
                let dir = ctx.dir;
                let flags = opts.flags;
                let skip_cleanup = opts.skip_cleanup;
                handles.push(scope.spawn(move || {
                    // A file-descriptor table of this thread's own, as each dbench child
                    // process has: with one table shared by every client thread, each read,
                    // write and lock takes a reference on its file and every open and close
                    // takes the table's lock against the other clients (the kernel's fast
                    // path is for a table with one user). Every fd this thread's clients open
                    // is opened, used and closed here, before the guard (declared first,
                    // dropped last) closes the table's copies. Best effort: on failure the
                    // shared table still works, only slower.
                    let _fds = crate::os::fdtable::PrivateFdTable::enter(true);
                    // Whatever happens in this thread (even a panic), its clients end up
                    // finished and the run failed-or-done, so the ticker never waits forever.
                    struct Finish<'s>(&'s [ClientShared], &'s AtomicBool);
                    impl Drop for Finish<'_> {
                        fn drop(&mut self) {
                            if std::thread::panicking() {
                                self.1.store(true, Ordering::Relaxed);
                            }
                            for c in self.0 {
                                c.finished.store(true, Ordering::Relaxed);
                            }
                        }
                    }
                    let finish = Finish(&shared[p * cpp..(p + 1) * cpp], failed);
                    let mut clients: Vec<Client<'_>> = (0..cpp)
                        .map(|k| {
                            let id = p * cpp + k;
                            Client::new(id as u32, dir, flags, lf.max_io, &shared[id], notice)
                        })
                        .collect();
                    let r = replay(&mut clients, lf, generation, stop);
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    for c in &mut clients {
                        if !skip_cleanup {
                            c.cleanup();
                        }
                        c.shared.finished.store(true, Ordering::Relaxed);
                    }
                    drop(finish);
                    r.map(|()| clients.into_iter().map(|c| c.stats).collect::<Vec<_>>())
                }));
            }
            observer.started(opts, &lf.name);
            let ticker = ticker(opts, &shared, &done, &generation, ctx, observer);
            let mut ops: Vec<OpSummary> = OpClass::ALL
                .iter()
                .map(|&class| OpSummary {
                    class,
                    stats: OpStats::default(),
                })
                .collect();
            let mut first_err = None;
            for h in handles {
                match h.join() {
                    Ok(Ok(per_client)) => {
                        for stats in per_client {
                            for (sum, s) in ops.iter_mut().zip(stats.iter()) {
                                sum.stats.merge(s);
                            }
                        }
                    }
                    Ok(Err(e)) => {
                        if first_err.is_none() {
                            first_err = Some(e);
                        }
                    }
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            if let Some(e) = first_err {
                return Err(e);
            }
            if ctx.cancel.is_cancelled() {
                return Err(WorkloadError::Cancelled);
            }
            debug_assert_eq!(ops.len(), OP_CLASSES);
            Ok(DbenchReport {
                clients: opts.clients(),
                procs: opts.nprocs,
                sync_open: opts.flags.sync_open,
                sync_dirs: opts.flags.sync_dirs,
                ops,
                throughput_mb_s: ticker.throughput,
                max_latency_ms: ticker.worst_latency.0 as f64 / 1e6,
                notices: notices.load(Ordering::Relaxed),
            })
        })
    }
}

/// Replay the loadfile for a group of clients until told to stop (dbench's `child_run`).
fn replay(
    clients: &mut [Client<'_>],
    lf: &Loadfile,
    generation: &AtomicU32,
    stop: &(dyn Fn() -> bool + Sync),
) -> Result<(), WorkloadError> {
    let mut seen_generation = 0u32;
    let mut pass_base = 0u64;
    loop {
        let pass_start = Nanos::now();
        for line in &lf.lines {
            if stop() {
                return Ok(());
            }
            let g = generation.load(Ordering::Relaxed);
            if g != seen_generation {
                seen_generation = g;
                for c in clients.iter_mut() {
                    c.reset_stats();
                }
            }
            if let Some(target) = line.target_time {
                let target = Nanos((target * 1e9) as u64);
                loop {
                    let el = pass_start.elapsed();
                    if el >= target || stop() {
                        break;
                    }
                    std::thread::sleep(Duration::from_nanos((target - el).0.min(100_000_000)));
                }
            }
            for c in clients.iter_mut() {
                c.shared
                    .lines
                    .store(pass_base + line.lineno as u64, Ordering::Relaxed);
                c.run_line(line)?;
            }
        }
        pass_base += lf.text_lines as u64;
    }
}

/// What the ticker hands back.
struct TickerResult {
    throughput: f64,
    worst_latency: Nanos,
}

/// dbench's `sig_alarm`, run every second until every client has finished its cleanup.
fn ticker(
    opts: &DbenchOptions,
    shared: &[ClientShared],
    done: &AtomicBool,
    generation: &AtomicU32,
    ctx: &RunContext<'_>,
    observer: &dyn DbenchObserver,
) -> TickerResult {
    let n = shared.len();
    let mut tv_start = Nanos::now();
    let mut warmup = opts.warmup() as f64;
    let timelimit = opts.time_limit_s as f64;
    let mut in_cleanup = false;
    let mut throughput = 0.0;
    let mut worst = Nanos::ZERO;
    let mut bytes_at_warmup = vec![0u64; n];
    let mut next_tick = tv_start + Nanos(1_000_000_000);
    let total_s = (opts.warmup() + opts.time_limit_s).max(1) as f64;
    let run_start = tv_start;
    ctx.progress
        .phase(if warmup > 0.0 { "warmup" } else { "execute" });
    let all_finished = || shared.iter().all(|c| c.finished.load(Ordering::Relaxed));
    let mut last = false;
    loop {
        // Wait for the next tick, or for every client to finish (then one last tick, as
        // dbench calls sig_alarm once more after its children exit).
        loop {
            if all_finished() {
                last = true;
                break;
            }
            if ctx.cancel.is_cancelled() {
                done.store(true, Ordering::Relaxed);
            }
            let now = Nanos::now();
            if now >= next_tick {
                break;
            }
            std::thread::sleep(Duration::from_nanos((next_tick - now).0.min(20_000_000)));
        }
        let tnow = Nanos::now();
        let mut total_bytes = 0u64;
        let mut total_lines = 0u64;
        let mut in_warmup = false;
        let mut active = 0u32;
        let mut finished = 0u32;
        for (i, c) in shared.iter().enumerate() {
            let b = c.bytes.load(Ordering::Relaxed);
            total_bytes += b - bytes_at_warmup[i];
            if b == 0 {
                in_warmup = true;
            } else {
                active += 1;
            }
            total_lines += c.lines.load(Ordering::Relaxed);
            if c.finished.load(Ordering::Relaxed) {
                finished += 1;
            }
        }
        let t = (tnow - tv_start).as_secs_f64();
        next_tick = tnow + Nanos(1_000_000_000);
        if !in_warmup && warmup > 0.0 && t > warmup && !last {
            tv_start = tnow;
            warmup = 0.0;
            for (i, c) in shared.iter().enumerate() {
                bytes_at_warmup[i] = c.bytes.load(Ordering::Relaxed);
            }
            worst = Nanos::ZERO;
            generation.fetch_add(1, Ordering::Relaxed);
            ctx.progress.phase("execute");
            continue;
        }
        if t < warmup {
            in_warmup = true;
        } else if !in_warmup && !in_cleanup && t > timelimit {
            done.store(true, Ordering::Relaxed);
            in_cleanup = true;
            ctx.progress.phase("cleanup");
        }
        ctx.progress
            .fraction(((tnow - run_start).as_secs_f64() / total_s).min(1.0));
        if t >= 1.0 {
            let mut latency = Nanos::ZERO;
            if !in_cleanup {
                for c in shared {
                    let m = Nanos(c.max_latency.swap(0, Ordering::Relaxed));
                    let start = c.op_start.load(Ordering::Relaxed);
                    let running = if start == 0 || c.finished.load(Ordering::Relaxed) {
                        Nanos::ZERO
                    } else {
                        tnow - Nanos(start)
                    };
                    latency = latency.max(m).max(running);
                }
                worst = worst.max(latency);
            }
            let latency_ms = latency.0 as f64 / 1e6;
            let mb_s = 1e-6 * total_bytes as f64 / t;
            let lines = total_lines / n as u64;
            let tick = if in_warmup {
                Tick::Warmup {
                    active,
                    lines,
                    mb_s,
                    t,
                    latency_ms,
                }
            } else if in_cleanup {
                Tick::Cleanup {
                    remaining: n as u32 - finished,
                    t,
                }
            } else {
                throughput = mb_s;
                Tick::Execute {
                    clients: n as u32,
                    lines,
                    mb_s,
                    t,
                    latency_ms,
                }
            };
            observer.tick(&tick);
        }
        if last {
            break;
        }
    }
    TickerResult {
        throughput,
        worst_latency: worst,
    }
}

impl Workload for Dbench {
    fn engine(&self) -> &'static str {
        "dbench"
    }

    fn run(&self, ctx: &RunContext<'_>) -> Result<Measurements, WorkloadError> {
        self.run_report(ctx).map(|r| r.measurements())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{CancelToken, NoProgress};
    use std::sync::Mutex;

    #[test]
    fn the_builtin_loadfile_parses_and_moves_bytes() {
        let lf = loadfile::parse(BUILTIN_LOADFILE_NAME, BUILTIN_LOADFILE).unwrap();
        assert!(lf.moves_bytes());
        assert!(lf.lines.len() > 1000);
        for c in OpClass::ALL {
            if !matches!(c, OpClass::Rmdir) {
                assert!(
                    lf.lines.iter().any(|l| l.op.class() == Some(c)),
                    "{c:?} missing from the builtin loadfile"
                );
            }
        }
    }

    #[derive(Default)]
    struct Record(Mutex<Vec<Tick>>);
    impl DbenchObserver for Record {
        fn tick(&self, t: &Tick) {
            self.0.lock().unwrap().push(*t);
        }
    }

    #[test]
    fn two_clients_run_warm_up_tick_and_clean_up() {
        let d = tempfile::tempdir().unwrap();
        let rec = Arc::new(Record::default());
        let engine = Dbench::new(DbenchOptions {
            nprocs: 1,
            clients_per_process: 2,
            time_limit_s: 2,
            warmup_s: Some(1),
            ..DbenchOptions::default()
        })
        .unwrap()
        .with_observer(rec.clone());
        let cancel = CancelToken::new();
        let ctx = RunContext {
            dir: d.path(),
            cancel: &cancel,
            progress: &NoProgress,
        };
        let r = engine.run_report(&ctx).unwrap();
        assert_eq!((r.clients, r.procs), (2, 1));
        assert!(r.throughput_mb_s > 0.0);
        let ticks = rec.0.lock().unwrap().clone();
        assert!(
            matches!(ticks[0], Tick::Execute { clients: 2, t, .. } if (1.0..1.5).contains(&t)),
            "warmup ends at the first tick where every client moved bytes: {ticks:?}"
        );
        assert!(matches!(
            ticks.last(),
            Some(Tick::Cleanup { remaining: 0, .. })
        ));
        let m = r.measurements();
        let names: Vec<&str> = m.metrics.iter().map(|m| m.name.as_str()).collect();
        for n in [
            "throughput_mb_s",
            "max_latency_ms",
            "ntcreatex_count",
            "readx_avg_ms",
        ] {
            assert!(names.contains(&n), "{n} missing from {names:?}");
        }
        assert!(names.contains(&"writex_max_ms"));
        assert_eq!(m.histograms.len() * 3 + 2, m.metrics.len());
        // Cleanup removed every file.
        let files = walk(d.path());
        assert_eq!(files, 0, "cleanup leaves no files");
    }

    fn walk(p: &std::path::Path) -> usize {
        std::fs::read_dir(p)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    walk(&e.path())
                } else {
                    1
                }
            })
            .sum()
    }

    #[test]
    fn cancel_stops_the_run() {
        let d = tempfile::tempdir().unwrap();
        let engine = Dbench::new(DbenchOptions {
            time_limit_s: 600,
            ..DbenchOptions::default()
        })
        .unwrap();
        let cancel = CancelToken::new();
        let c2 = cancel.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            c2.cancel();
        });
        let ctx = RunContext {
            dir: d.path(),
            cancel: &cancel,
            progress: &NoProgress,
        };
        let start = std::time::Instant::now();
        assert!(matches!(engine.run(&ctx), Err(WorkloadError::Cancelled)));
        // Far before the 600 s time limit, however busy the machine.
        assert!(start.elapsed() < Duration::from_secs(120));
        t.join().unwrap();
    }

    #[test]
    fn bad_options_and_loadfiles_are_refused_with_a_fix() {
        let e = Dbench::new(DbenchOptions {
            nprocs: 0,
            ..DbenchOptions::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("NPROCS"));
        let e = Dbench::new(DbenchOptions {
            loadfile: LoadfileSource::Path("/nonexistent/client.txt".into()),
            ..DbenchOptions::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("cannot read loadfile"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("l.txt");
        std::fs::write(&p, "Mkdir \"\\x\" NT_STATUS_OK\n").unwrap();
        let e = Dbench::new(DbenchOptions {
            loadfile: LoadfileSource::Path(p),
            ..DbenchOptions::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("never end"), "{e}");
    }
}
