//! The engine's timed loop must allocate nothing: the number of heap allocations of a whole run
//! may not grow with the number of I/Os. A counting allocator measures the same job at 64 and at
//! 2048 I/Os, for every engine.

use fsdelta::fio::engine::FioWorkload;
use fsdelta::fio::jobfile::SystemSources;
use fsdelta::workload::{CancelToken, NoProgress, RunContext};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Tests in this file run one at a time: the counter is process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

fn allocations_of(job: &str) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let w = FioWorkload::from_job_text(job, "alloc.fio", &SystemSources).unwrap();
    let cancel = CancelToken::new();
    let ctx = RunContext {
        dir: dir.path(),
        cancel: &cancel,
        progress: &NoProgress,
    };
    // Lay the files out first, so both measured runs find them in place.
    w.execute(&ctx).unwrap();
    let before = ALLOCS.load(Ordering::Relaxed);
    let run = w.execute(&ctx).unwrap();
    let after = ALLOCS.load(Ordering::Relaxed);
    let ios: u64 = run.results[0].stats.dir.iter().map(|d| d.total_ios).sum();
    assert!(ios > 0);
    drop(run);
    after - before
}

#[test]
fn the_timed_loop_does_not_allocate_per_io() {
    let _g = SERIAL.lock().unwrap();
    let engines = [
        "ioengine=psync\nrw=randread\ninvalidate=0\n",
        "ioengine=sync\nrw=write\n",
        "ioengine=pvsync\nrw=randrw\nfsync=8\n",
        "ioengine=io_uring\niodepth=8\nrw=randwrite\nfdatasync=16\n",
        "ioengine=libaio\niodepth=8\nrw=randread\n",
        "ioengine=libaio\niodepth=8\nrw=randrw\nprioclass=2\ncmdprio_percentage=30\ncmdprio_class=3\n",
        "ioengine=io_uring\niodepth=8\nrw=randread\ncmdprio_bssplit=4k/20/3/1:4k/30/2/0\n",
        "ioengine=io_uring\niodepth=8\nrw=randrw\nnrfiles=2\nfixedbufs\nsqthread_poll\n",
        "ioengine=io_uring\niodepth=4\nrw=randread\nregisterfiles\n",
        "ioengine=psync\nrw=randwrite\nnrfiles=4\nopenfiles=2\nrefill_buffers=1\n",
    ];
    for e in engines {
        let small = allocations_of(&format!("[a]\nsize=256k\n{e}"));
        let large = allocations_of(&format!("[a]\nsize=8m\n{e}"));
        assert_eq!(
            small, large,
            "{e:?}: {small} allocations for 64 I/Os, {large} for 2048: the loop allocates"
        );
    }
}
