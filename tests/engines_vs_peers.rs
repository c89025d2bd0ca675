//! Benchmarks of the native engines against their peers, kept beside the tests so they build with
//! the crate; ignored by default (they take minutes and need GNU tar and dd). Run with
//!
//! ```text
//! FSDELTA_BENCH_DIR=/mnt/test cargo test --release --test engines_vs_peers -- --ignored --nocapture
//! ```
//!
//! - untar vs GNU `tar -xf` of the same generated tarball (extraction time; sync untimed);
//! - stream vs `dd bs=1M conv=fsync` write, then dd read after drop_caches (root) and warm.
//!
//! Rounds alternate the tools; medians are printed as a markdown table for
//! benches/RESULTS-engines.md.

use fsdelta::workload::stream::{Stream, StreamOptions};
use fsdelta::workload::untar::{Untar, UntarOptions, cached_tarball};
use fsdelta::workload::{CancelToken, Measurements, NoProgress, RunContext, Workload};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn bench_dir() -> PathBuf {
    std::env::var_os("FSDELTA_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
}

fn run(w: &dyn Workload, dir: &Path) -> Measurements {
    let cancel = CancelToken::new();
    w.run(&RunContext {
        dir,
        cancel: &cancel,
        progress: &NoProgress,
    })
    .unwrap()
}

fn metric(m: &Measurements, n: &str) -> f64 {
    m.metrics.iter().find(|x| x.name == n).unwrap().value
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn sync_and_drop() -> bool {
    Command::new("sync").status().unwrap();
    rustix::process::geteuid().is_root() && std::fs::write("/proc/sys/vm/drop_caches", b"3").is_ok()
}

/// Which of two tools goes first in round `r` (`true`: ours): they take turns.
fn alternating(r: usize) -> [bool; 2] {
    if r % 2 == 0 {
        [true, false]
    } else {
        [false, true]
    }
}

#[test]
#[ignore = "benchmark: minutes long, needs GNU tar"]
fn untar_vs_gnu_tar() {
    let rounds = 5;
    let files = 10_000;
    let base = tempfile::tempdir_in(bench_dir()).unwrap();
    let cache = base.path().join("cache");
    let tarball = cached_tarball(files, 1, &cache).unwrap();
    let w = Untar::new(UntarOptions {
        source: fsdelta::workload::untar::TarballSource::Path(tarball.clone()),
        cache_dir: None,
    })
    .unwrap();
    let (mut ours, mut tar) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let order = alternating(r);
        for native in order {
            let dir = base.path().join("x");
            std::fs::create_dir(&dir).unwrap();
            // The tarball itself is read once untimed so both start with it cached.
            std::fs::read(&tarball).unwrap();
            Command::new("sync").status().unwrap();
            if native {
                ours.push(metric(&run(&w, &dir), "elapsed_s"));
            } else {
                let t = Instant::now();
                let st = Command::new("tar")
                    .arg("-xf")
                    .arg(&tarball)
                    .arg("-C")
                    .arg(&dir)
                    .status()
                    .unwrap();
                tar.push(t.elapsed().as_secs_f64());
                assert!(st.success());
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    let (o, t) = (median(ours), median(tar));
    println!(
        "| untar, {files} generated files, {rounds} rounds | GNU tar -xf | fsdelta untar | tar / fsdelta (speed-up) |"
    );
    println!("|---|---|---|---|");
    println!(
        "| median extraction time (s) | {t:.3} | {o:.3} | {:.2} |",
        t / o
    );
}

/// Parse dd's `N bytes (...) copied, T s, R MB/s` into MB/s (decimal, recomputed from N / T).
fn dd_rate(stderr: &str) -> f64 {
    let line = stderr.lines().find(|l| l.contains(" copied, ")).unwrap();
    let bytes: f64 = line.split_whitespace().next().unwrap().parse().unwrap();
    let secs: f64 = line
        .split(" copied, ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    bytes / secs / 1e6
}

fn dd(args: &[&str]) -> f64 {
    let out = Command::new("dd")
        .args(args)
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dd_rate(&String::from_utf8_lossy(&out.stderr))
}

#[test]
#[ignore = "benchmark: minutes long, needs dd (and root for cold reads)"]
fn stream_vs_dd() {
    let rounds = 5;
    let mib = 512u64;
    let base = tempfile::tempdir_in(bench_dir()).unwrap();
    let w = Stream::new(StreamOptions {
        size: mib << 20,
        block_size: 1 << 20,
        compressibility: 1.0, // zeros, as if=/dev/zero
        ..StreamOptions::default()
    })
    .unwrap();
    let mut ours: [Vec<f64>; 3] = Default::default();
    let mut dds: [Vec<f64>; 3] = Default::default();
    let mut dropped = false;
    for r in 0..rounds {
        let order = alternating(r);
        for native in order {
            sync_and_drop();
            if native {
                let m = run(&w, base.path());
                ours[0].push(metric(&m, "write_mb_s"));
                ours[1].push(metric(&m, "read_cold_mb_s"));
                ours[2].push(metric(&m, "read_warm_mb_s"));
                dropped = metric(&m, "caches_dropped") == 1.0;
            } else {
                let f = base.path().join("dd.dat");
                let of = format!("of={}", f.display());
                let inf = format!("if={}", f.display());
                let count = format!("count={mib}");
                dds[0].push(dd(&["if=/dev/zero", &of, "bs=1M", &count, "conv=fsync"]));
                sync_and_drop();
                dds[1].push(dd(&[&inf, "of=/dev/null", "bs=1M"]));
                dds[2].push(dd(&[&inf, "of=/dev/null", "bs=1M"]));
                std::fs::remove_file(&f).unwrap();
            }
        }
    }
    println!(
        "| stream, {mib} MiB, bs=1M, {rounds} rounds, caches dropped: {dropped} | dd | fsdelta stream | fsdelta / dd |"
    );
    println!("|---|---|---|---|");
    for (i, name) in [
        "write (conv=fsync) MB/s",
        "cold read MB/s",
        "warm read MB/s",
    ]
    .iter()
    .enumerate()
    {
        let (d, o) = (median(dds[i].clone()), median(ours[i].clone()));
        println!("| {name} | {d:.0} | {o:.0} | {:.2} |", o / d);
    }
}

#[test]
fn dd_output_is_read_as_decimal_mb_per_second() {
    let s = "64+0 records in\n64+0 records out\n67108864 bytes (67 MB, 64 MiB) copied, 0.0825927 s, 813 MB/s\n";
    let r = dd_rate(s);
    assert!((r - 812.53).abs() < 0.1, "{r}");
}

/// One untar of a 2000-file tree, for profiling the engine alone (`strace -c`, `perf record`
/// on the test binary).
#[test]
#[ignore = "profiling helper"]
fn untar_once() {
    let base = tempfile::tempdir_in(bench_dir()).unwrap();
    let w = Untar::new(UntarOptions {
        source: fsdelta::workload::untar::TarballSource::Generated {
            files: 2000,
            seed: 1,
        },
        cache_dir: Some(bench_dir().join("fsdelta-bench-cache")),
    })
    .unwrap();
    w.prepare().unwrap();
    let m = run(&w, base.path());
    println!("untar_once: {:.3} s", metric(&m, "elapsed_s"));
}
