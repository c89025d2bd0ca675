//! Engine tests on real temporary directories: the exact call sequence of every sync method,
//! the directory layout, cleanup after success, failure and cancel, the log file, and that the
//! hot loop does not allocate.

use super::sys::testing::{Call, Recording};
use super::sys::{Libc, Syscalls};
use super::*;
use crate::workload::{CancelToken, NoProgress, RunContext};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

fn opts(args: &str) -> FsMarkOptions {
    let a: Vec<String> = args.split_whitespace().map(str::to_string).collect();
    let mut o = FsMarkOptions::parse(&a).unwrap();
    o.log_file = None;
    o
}

fn run_in<S: Syscalls>(
    dir: &Path,
    o: &FsMarkOptions,
    cancel: &CancelToken,
    make: &(dyn Fn(usize) -> S + Sync),
) -> (Result<FsMarkResult, WorkloadError>, Vec<IterationResult>) {
    let ctx = RunContext {
        dir,
        cancel,
        progress: &NoProgress,
    };
    let mut rows: Vec<IterationResult> = Vec::new();
    let r = run_engine(o, &ctx, make, &mut rows);
    (r, rows)
}

/// Every regular file beneath `dir`, relative, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out.sort();
    out
}

fn record_run(args: &str) -> (Vec<Call>, Vec<String>, FsMarkResult) {
    let tmp = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let o = opts(args);
    let (r, _) = run_in(tmp.path(), &o, &CancelToken::new(), &|_| {
        Recording::new(log.clone())
    });
    let calls = log.lock().unwrap().clone();
    (calls, files_under(tmp.path()), r.unwrap())
}

/// The sequence as compact text: `op:name-index` using the order files were created.
fn script(calls: &[Call]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    calls
        .iter()
        .map(|c| {
            if c.op == "open_create" {
                order.push(c.name.clone());
            }
            let idx = order.iter().position(|n| *n == c.name);
            match (c.op, idx) {
                ("mkdir", _) => "mkdir".to_string(),
                ("sync", _) => "sync".to_string(),
                ("write", Some(i)) => format!("write{i}({})", c.len),
                (op, Some(i)) => format!("{op}{i}"),
                (op, None) => format!("{op}?"),
            }
        })
        .collect()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn sync_0_creates_writes_closes_then_unlinks() {
    let (calls, left, res) = record_run("-s 0 -n 2 -S 0");
    assert_eq!(
        script(&calls),
        s(&[
            "mkdir",
            "open_create0",
            "write0(0)",
            "close0",
            "mkdir",
            "open_create1",
            "write1(0)",
            "close1",
            "unlink0",
            "unlink1"
        ])
    );
    assert!(left.is_empty(), "{left:?}");
    let ops = res.op_stats();
    assert_eq!(ops[&Op::Create].count, 2);
    assert_eq!(ops[&Op::Write].count, 2);
    assert_eq!(ops[&Op::Unlink].count, 2);
    assert!(!ops.contains_key(&Op::Fsync) && !ops.contains_key(&Op::Sync));
}

#[test]
fn sync_1_fsyncs_before_each_close_and_writes_in_w_chunks() {
    let (calls, _, _) = record_run("-s 5000 -w 2048 -n 2 -S 1 -k");
    assert_eq!(
        script(&calls),
        s(&[
            "mkdir",
            "open_create0",
            "write0(2048)",
            "write0(2048)",
            "write0(904)",
            "fsync0",
            "close0",
            "mkdir",
            "open_create1",
            "write1(2048)",
            "write1(2048)",
            "write1(904)",
            "fsync1",
            "close1"
        ])
    );
}

#[test]
fn sync_2_syncs_then_fsyncs_the_first_file_only() {
    let (calls, _, res) = record_run("-s 10 -n 3 -S 2 -k");
    let tail: Vec<String> = script(&calls).into_iter().skip(3 * 4).collect();
    assert_eq!(tail, s(&["sync", "open_read0", "fsync0", "close0"]));
    let ops = res.op_stats();
    assert_eq!(ops[&Op::Sync].count, 1);
    assert_eq!(
        ops[&Op::Fsync].count,
        1,
        "reopen+fsync+close timed as one fsync"
    );
}

#[test]
fn sync_3_and_4_reopen_in_reverse_order() {
    let post = |v: &[&str]| -> Vec<String> {
        let mut out = s(v);
        for i in [2, 1, 0] {
            out.extend(s(&[
                &format!("open_read{i}"),
                &format!("fsync{i}"),
                &format!("close{i}"),
            ]));
        }
        out
    };
    let (calls, _, res) = record_run("-s 1 -n 3 -S 3 -k");
    assert_eq!(script(&calls)[12..].to_vec(), post(&[]));
    assert_eq!(res.op_stats()[&Op::Fsync].count, 3);
    assert!(!res.op_stats().contains_key(&Op::Sync));
    let (calls, _, res) = record_run("-s 1 -n 3 -S 4 -k");
    assert_eq!(script(&calls)[12..].to_vec(), post(&["sync"]));
    assert_eq!(res.op_stats()[&Op::Sync].count, 1);
}

#[test]
fn sync_5_and_6_reopen_in_creation_order() {
    let post = |v: &[&str]| -> Vec<String> {
        let mut out = s(v);
        for i in [0, 1, 2] {
            out.extend(s(&[
                &format!("open_read{i}"),
                &format!("fsync{i}"),
                &format!("close{i}"),
            ]));
        }
        out
    };
    let (calls, _, _) = record_run("-s 1 -n 3 -S 5 -k");
    assert_eq!(script(&calls)[12..].to_vec(), post(&[]));
    let (calls, _, _) = record_run("-s 1 -n 3 -S 6 -k");
    assert_eq!(script(&calls)[12..].to_vec(), post(&["sync"]));
}

#[test]
fn round_robin_fills_n_files_per_subdir() {
    let tmp = tempfile::tempdir().unwrap();
    let o = opts("-d a -s 0 -n 8 -S 0 -D 4 -N 2 -k");
    let (r, rows) = run_in(tmp.path(), &o, &CancelToken::new(), &|_| Libc);
    r.unwrap();
    assert_eq!(rows.len(), 1);
    let files = files_under(&tmp.path().join("a"));
    assert_eq!(files.len(), 8);
    let mut per_dir: BTreeMap<String, usize> = BTreeMap::new();
    for f in &files {
        let (dir, name) = f.split_once('/').expect("files are in subdirectories");
        assert_eq!(name.len(), 40);
        assert!(
            name[..16]
                .bytes()
                .all(|b| b.is_ascii_hexdigit() || b == b'~'),
            "{name}"
        );
        assert!(
            name[16..]
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()),
            "{name}"
        );
        *per_dir.entry(dir.to_string()).or_default() += 1;
    }
    assert_eq!(
        per_dir.keys().cloned().collect::<Vec<_>>(),
        s(&["00", "01", "02", "03"])
    );
    assert!(per_dir.values().all(|n| *n == 2), "{per_dir:?}");
}

#[test]
fn time_hash_keeps_a_short_run_in_one_subdir() {
    let tmp = tempfile::tempdir().unwrap();
    let o = opts("-s 0 -n 20 -S 0 -D 16 -k");
    run_in(tmp.path(), &o, &CancelToken::new(), &|_| Libc)
        .0
        .unwrap();
    let dirs: std::collections::BTreeSet<String> = files_under(tmp.path())
        .iter()
        .map(|f| f.split_once('/').unwrap().0.to_string())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let d = dirs.iter().next().unwrap();
    assert!(u32::from_str_radix(d, 16).unwrap() < 16 && d.len() == 2);
}

#[test]
fn workers_share_directories_round_robin_and_files_per_sec_adds_up() {
    let tmp = tempfile::tempdir().unwrap();
    let o = opts("-d x -d y -t 4 -s 100 -n 5 -S 0 -L 2");
    let (r, rows) = run_in(tmp.path(), &o, &CancelToken::new(), &|_| Libc);
    let res = r.unwrap();
    assert_eq!(files_under(&tmp.path().join("x")).len(), 20);
    assert_eq!(files_under(&tmp.path().join("y")).len(), 20);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].count, 20);
    assert_eq!(rows[1].count, 40);
    for row in &rows {
        assert_eq!(row.workers.len(), 4);
        let sum: f64 = row.workers.iter().map(|w| w.files_per_sec).sum();
        assert!((row.files_per_sec - sum).abs() < 1e-6);
        assert!(row.files_per_sec_wall.unwrap() > 0.0 && row.wall_ns.unwrap() > 0);
        assert_eq!(row.size, 100);
        assert!(row.fs_use_pct <= 100);
    }
    assert_eq!(res.total_files(), 40);
    assert_eq!(res.op_stats()[&Op::Write].count, 40);
    assert!(!res.op_stats().contains_key(&Op::Unlink), "-L keeps files");
}

#[test]
fn a_failing_write_stops_every_worker_and_removes_their_files() {
    let tmp = tempfile::tempdir().unwrap();
    let o = opts("-t 2 -s 10 -n 200 -S 0");
    let log = Arc::new(Mutex::new(Vec::new()));
    let (r, rows) = run_in(tmp.path(), &o, &CancelToken::new(), &|i| {
        let mut rec = Recording::new(log.clone());
        if i == 1 {
            // mkdir, open, write per file: the 3rd call of the 6th file is its write.
            rec.fail_at = Some((5 * 4 + 2, libc::ENOSPC));
        }
        rec
    });
    match r {
        Err(WorkloadError::Io { op, source, .. }) => {
            assert_eq!(op, "write");
            assert_eq!(source.raw_os_error(), Some(libc::ENOSPC));
        }
        other => panic!(
            "expected an ENOSPC write error, got {:?}",
            other.map(|_| ())
        ),
    }
    assert!(rows.is_empty());
    assert!(
        files_under(tmp.path()).is_empty(),
        "{:?}",
        files_under(tmp.path())
    );
}

#[test]
fn a_kept_run_that_fails_keeps_what_it_made() {
    let tmp = tempfile::tempdir().unwrap();
    let o = opts("-s 0 -n 10 -S 0 -k");
    let log = Arc::new(Mutex::new(Vec::new()));
    let (r, _) = run_in(tmp.path(), &o, &CancelToken::new(), &|_| {
        let mut rec = Recording::new(log.clone());
        rec.fail_at = Some((3 * 4 + 1, libc::EACCES)); // the 4th open
        rec
    });
    let e = r.unwrap_err();
    assert!(e.to_string().starts_with("open "), "{e}");
    assert!(e.to_string().contains("not writable"), "{e}");
    assert_eq!(files_under(tmp.path()).len(), 3);
}

/// Cancels the token when the worker makes its `at`-th open.
struct CancelAt {
    token: CancelToken,
    at: usize,
    opens: usize,
}

impl Syscalls for CancelAt {
    fn mkdir(&mut self, p: &CStr, m: u32) -> std::io::Result<()> {
        Libc.mkdir(p, m)
    }
    fn open(&mut self, p: &CStr, f: i32, m: u32) -> std::io::Result<RawFd> {
        self.opens += 1;
        if self.opens == self.at {
            self.token.cancel();
        }
        Libc.open(p, f, m)
    }
    fn write(&mut self, fd: RawFd, b: &[u8]) -> std::io::Result<usize> {
        Libc.write(fd, b)
    }
    fn fsync(&mut self, fd: RawFd) -> std::io::Result<()> {
        Libc.fsync(fd)
    }
    fn close(&mut self, fd: RawFd) -> std::io::Result<()> {
        Libc.close(fd)
    }
    fn sync(&mut self) {}
    fn unlink(&mut self, p: &CStr) -> std::io::Result<()> {
        Libc.unlink(p)
    }
}

#[test]
fn cancel_stops_within_a_file_and_cleans_up() {
    let tmp = tempfile::tempdir().unwrap();
    let token = CancelToken::new();
    let o = opts("-t 2 -s 0 -n 100000 -S 0");
    let (r, rows) = run_in(tmp.path(), &o, &token, &|_| CancelAt {
        token: token.clone(),
        at: 50,
        opens: 0,
    });
    assert!(matches!(r, Err(WorkloadError::Cancelled)));
    assert!(rows.is_empty());
    assert!(files_under(tmp.path()).is_empty());
}

#[test]
fn cancel_between_iterations_keeps_finished_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let token = CancelToken::new();
    let o = opts("-s 0 -n 10 -S 0 -L 3");
    let ctx = RunContext {
        dir: tmp.path(),
        cancel: &token,
        progress: &NoProgress,
    };
    struct CancelAfterRow<'a>(&'a CancelToken, u32);
    impl IterationSink for CancelAfterRow<'_> {
        fn row(&mut self, _: &IterationResult) -> Result<(), WorkloadError> {
            self.1 += 1;
            self.0.cancel();
            Ok(())
        }
    }
    let mut sink = CancelAfterRow(&token, 0);
    let r = run_engine(&o, &ctx, &|_| Libc, &mut sink);
    assert!(matches!(r, Err(WorkloadError::Cancelled)));
    assert_eq!(sink.1, 1);
    assert_eq!(
        files_under(tmp.path()).len(),
        10,
        "-L keeps the finished iteration's files"
    );
}

#[test]
fn fill_without_room_for_one_iteration_is_enospc() {
    let tmp = tempfile::tempdir().unwrap();
    let o = opts("-F -s 2147483647 -n 1000000 -S 0");
    let (r, rows) = run_in(tmp.path(), &o, &CancelToken::new(), &|_| Libc);
    let e = r.unwrap_err();
    assert!(e.to_string().contains("filesystem is full"), "{e}");
    assert!(rows.is_empty());
}

#[test]
fn missing_parent_directory_is_reported_with_its_path() {
    let tmp = tempfile::tempdir().unwrap();
    let o = opts("-d no/such/dir -s 0 -n 1");
    let e = run_in(tmp.path(), &o, &CancelToken::new(), &|_| Libc)
        .0
        .unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("mkdir ") && text.contains("no/such/dir"),
        "{text}"
    );
}

#[test]
fn invalid_options_built_in_code_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    for o in [
        FsMarkOptions {
            threads: 0,
            ..FsMarkOptions::default()
        },
        FsMarkOptions {
            files: 0,
            ..FsMarkOptions::default()
        },
        FsMarkOptions {
            io_size: 0,
            ..FsMarkOptions::default()
        },
        FsMarkOptions {
            rand_len: 41,
            ..FsMarkOptions::default()
        },
        FsMarkOptions {
            dirs: vec!["a".into(), "b".into()],
            threads: 3,
            ..FsMarkOptions::default()
        },
    ] {
        let r = run_in(tmp.path(), &o, &CancelToken::new(), &|_| Libc).0;
        assert!(matches!(r, Err(WorkloadError::InvalidOptions(_))), "{o:?}");
    }
}

#[test]
fn workload_trait_gives_measurements() {
    let tmp = tempfile::tempdir().unwrap();
    let w = FsMark::new(opts("-s 4096 -n 20 -t 2 -S 1"));
    assert_eq!(w.engine(), "fsmark");
    let token = CancelToken::new();
    let m = w
        .run(&RunContext {
            dir: tmp.path(),
            cancel: &token,
            progress: &NoProgress,
        })
        .unwrap();
    let names: Vec<&str> = m.metrics.iter().map(|m| m.name.as_str()).collect();
    for n in [
        "files_per_sec",
        "files_per_sec_wall",
        "app_overhead_us",
        "app_overhead_us_per_file",
        "elapsed_s",
        "files",
        "fs_use_pct",
        "create_lat_ns_p50",
        "write_lat_ns_p99",
        "fsync_lat_ns_max",
        "close_lat_ns_mean",
        "unlink_lat_ns_p99",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    assert!(!names.iter().any(|n| n.starts_with("sync_")));
    let files = m.metrics.iter().find(|m| m.name == "files").unwrap().value;
    assert_eq!(files, 40.0);
    let hist: Vec<&str> = m.histograms.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(
        hist,
        vec![
            "create_lat_ns",
            "write_lat_ns",
            "fsync_lat_ns",
            "close_lat_ns",
            "unlink_lat_ns"
        ]
    );
    assert!(files_under(tmp.path()).is_empty());
}

// --- the hot loop does not allocate -------------------------------------------------------

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

struct CountingAlloc;

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCS.with(|a| a.set(a.get() + 1));
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(|c| c.get()) {
            ALLOCS.with(|a| a.set(a.get() + 1));
        }
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// Real system calls; counts allocations on its worker thread from creation to drop.
struct AllocProbe(Arc<AtomicUsize>);

impl AllocProbe {
    fn new(total: Arc<AtomicUsize>) -> Self {
        ALLOCS.with(|a| a.set(0));
        COUNTING.with(|c| c.set(true));
        AllocProbe(total)
    }
}

impl Drop for AllocProbe {
    fn drop(&mut self) {
        COUNTING.with(|c| c.set(false));
        self.0
            .fetch_add(ALLOCS.with(|a| a.get()), Ordering::Relaxed);
    }
}

impl Syscalls for AllocProbe {
    fn mkdir(&mut self, p: &CStr, m: u32) -> std::io::Result<()> {
        Libc.mkdir(p, m)
    }
    fn open(&mut self, p: &CStr, f: i32, m: u32) -> std::io::Result<RawFd> {
        Libc.open(p, f, m)
    }
    fn write(&mut self, fd: RawFd, b: &[u8]) -> std::io::Result<usize> {
        Libc.write(fd, b)
    }
    fn fsync(&mut self, fd: RawFd) -> std::io::Result<()> {
        Libc.fsync(fd)
    }
    fn close(&mut self, fd: RawFd) -> std::io::Result<()> {
        Libc.close(fd)
    }
    fn sync(&mut self) {}
    fn unlink(&mut self, p: &CStr) -> std::io::Result<()> {
        Libc.unlink(p)
    }
}

fn worker_allocations(args: &str) -> usize {
    let tmp = tempfile::tempdir().unwrap();
    let total = Arc::new(AtomicUsize::new(0));
    let o = opts(args);
    run_in(tmp.path(), &o, &CancelToken::new(), &|_| {
        AllocProbe::new(total.clone())
    })
    .0
    .unwrap();
    total.load(Ordering::Relaxed)
}

#[test]
fn the_hot_loop_does_not_allocate() {
    // Setup allocates a fixed number of buffers; the per-file loop, the sync phases and the
    // unlinks must add nothing, so the count cannot depend on -n.
    for method in ["-S 0 -D 4 -N 3", "-S 1", "-S 2", "-S 3", "-S 6 -D 2"] {
        let few = worker_allocations(&format!("-s 3000 -w 1024 -n 5 {method}"));
        let many = worker_allocations(&format!("-s 3000 -w 1024 -n 300 {method}"));
        assert!(few > 0, "the probe counts setup allocations");
        assert_eq!(few, many, "allocations grew with -n under {method}");
    }
}

#[test]
fn start_gate_holds_workers_until_opened() {
    use super::worker::StartGate;
    let gate = StartGate::default();
    let passed = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                gate.arrive_and_wait();
                passed.fetch_add(1, Ordering::SeqCst);
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(
            passed.load(Ordering::SeqCst),
            0,
            "nobody passes a closed gate"
        );
        gate.open_when_ready(2);
    });
    assert_eq!(passed.load(Ordering::SeqCst), 2);
    // Opened at once (a worker could not be started): the ones that did start are released.
    let gate = StartGate::default();
    std::thread::scope(|s| {
        s.spawn(|| gate.arrive_and_wait());
        gate.open_now();
    });
}
