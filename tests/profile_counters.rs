//! The always-on CPU counters (issue 8) tell a CPU-bound sample from an fsync-bound one: the
//! first spends its time computing (user and system time), the second waiting for the disk
//! (iowait or idle, voluntary context switches).
//!
//! One test in its own binary, so that no other test thread adds to this process's rusage.

mod common;

use common::require;
use fsdelta::model::Metric;
use fsdelta::probe::system::Snapshot;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, Instant};

const PHASE: Duration = Duration::from_millis(1500);

fn get(m: &[Metric], name: &str) -> f64 {
    m.iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no {name} in {m:?}"))
        .value
}

/// Spin on every CPU for `PHASE`.
fn cpu_bound() -> (Vec<Metric>, f64) {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let s = Snapshot::take();
    let t = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..cpus {
            scope.spawn(|| {
                let mut x = 0u64;
                while t.elapsed() < PHASE {
                    for _ in 0..10_000 {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                }
            });
        }
    });
    (s.metrics_since(), t.elapsed().as_secs_f64())
}

/// Small writes, each followed by fsync, in `dir`, for `PHASE`.
fn fsync_bound(dir: &std::path::Path) -> (Vec<Metric>, f64, u64) {
    let path = dir.join("fsync-loop");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&path)
        .unwrap();
    let block = [0x5au8; 4096];
    let s = Snapshot::take();
    let t = Instant::now();
    let mut n = 0u64;
    while t.elapsed() < PHASE {
        f.write_all(&block).unwrap();
        f.sync_all().unwrap();
        n += 1;
    }
    (s.metrics_since(), t.elapsed().as_secs_f64(), n)
}

fn is_tmpfs(dir: &std::path::Path) -> bool {
    let st = rustix::fs::statfs(dir).unwrap();
    // TMPFS_MAGIC and RAMFS_MAGIC: fsync there never waits for a device.
    matches!(st.f_type as u64, 0x0102_1994 | 0x8584_58f6)
}

#[test]
fn cpu_bound_and_fsync_bound_samples_differ_in_the_expected_direction() {
    // A directory on the disk that holds the build (never tmpfs in CI).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    if !require(
        !is_tmpfs(dir.path()),
        "a target directory on a real disk (CARGO_TARGET_TMPDIR is on tmpfs)",
    ) {
        return;
    }
    // How busy the rest of the machine keeps the CPUs (a build next to the test, say).
    let background = {
        let s = Snapshot::take();
        std::thread::sleep(Duration::from_millis(500));
        s.metrics_since()
    };
    let (cpu, cpu_wall) = cpu_bound();
    let (io, io_wall, fsyncs) = fsync_bound(dir.path());
    assert!(fsyncs > 0);

    // This process: busy whenever it ran in the CPU-bound phase, mostly asleep in fsync.
    // How many CPUs the spinning threads got is the load's business (issue 33: this once
    // wanted 0.3 CPUs, which a busy machine does not give); the fsync loop sleeps whatever
    // the load, so it uses far less CPU per second than the spinning threads got.
    let busy = |m: &[Metric], wall: f64| (get(m, "proc_user_s") + get(m, "proc_system_s")) / wall;
    let (cpu_busy, io_busy) = (busy(&cpu, cpu_wall), busy(&io, io_wall));
    assert!(cpu_busy > 0.0, "CPU-bound: {cpu_busy:.2} CPUs busy");
    assert!(
        io_busy < cpu_busy / 2.0,
        "fsync-bound used {io_busy:.2} CPUs, CPU-bound {cpu_busy:.2}"
    );
    // Its CPU time is in the kernel (write, fsync), the spinning one's in user space.
    let sys_share = |m: &[Metric]| {
        get(m, "proc_system_s") / (get(m, "proc_user_s") + get(m, "proc_system_s")).max(1e-9)
    };
    assert!(
        sys_share(&cpu) < 0.5,
        "the CPU-bound phase's time is user time: system share {:.2}",
        sys_share(&cpu)
    );
    assert!(
        sys_share(&io) > sys_share(&cpu),
        "system share of CPU time: fsync-bound {:.2}, CPU-bound {:.2}",
        sys_share(&io),
        sys_share(&cpu)
    );
    // Every fsync sleeps until the device is done: voluntary context switches.
    assert!(
        get(&io, "proc_ctx_voluntary") > get(&cpu, "proc_ctx_voluntary") + fsyncs as f64 / 2.0,
        "voluntary context switches: fsync-bound {}, CPU-bound {}, {fsyncs} fsyncs",
        get(&io, "proc_ctx_voluntary"),
        get(&cpu, "proc_ctx_voluntary")
    );
    // System-wide: the CPUs compute during the first, wait or idle during the second; on a
    // machine that other processes keep busy, they compute during both, and that comparison
    // says nothing (the tests of a binary run beside each other, and CI's machine is shared).
    let active = |m: &[Metric]| get(m, "sys_user_pct") + get(m, "sys_system_pct");
    let waiting = |m: &[Metric]| get(m, "sys_iowait_pct") + get(m, "sys_idle_pct");
    // Others' share during the fsync phase too (load that came after the background reading):
    // the machine's busy share less this process's.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let others_io = active(&io) - 100.0 * io_busy / cpus;
    if active(&background) > 25.0 || others_io > 25.0 {
        eprintln!(
            "NOTE: system-wide shares not compared: other processes kept the CPUs {:.0} % busy \
             before, {:.0} % during the fsync phase",
            active(&background),
            others_io
        );
        return;
    }
    assert!(
        active(&cpu) > active(&io),
        "user+system: CPU-bound {:.1} %, fsync-bound {:.1} %",
        active(&cpu),
        active(&io)
    );
    assert!(
        waiting(&io) > waiting(&cpu),
        "iowait+idle: fsync-bound {:.1} %, CPU-bound {:.1} %",
        waiting(&io),
        waiting(&cpu)
    );
}
