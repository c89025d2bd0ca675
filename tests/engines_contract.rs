//! The contract the suite runner relies on: every native engine of issue 6 is built from typed
//! options, runs as a `dyn Workload` in a target directory, leaves the directory empty of its
//! files, and yields the documented metric names with their units and directions. Small sizes:
//! a few MiB and a few seconds in all.

use fsdelta::dbench::{Dbench, DbenchOptions};
use fsdelta::model::{Direction, Unit};
use fsdelta::workload::command::{CommandMetric, CommandOptions, CommandWorkload};
use fsdelta::workload::copy::{Copy, CopyMethod, CopyOptions};
use fsdelta::workload::stream::{Stream, StreamOptions};
use fsdelta::workload::untar::{TarballSource, Untar, UntarOptions};
use fsdelta::workload::{CancelToken, Measurements, NoProgress, RunContext, Workload};

fn run(w: &dyn Workload) -> (Measurements, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancelToken::new();
    let m = w
        .run(&RunContext {
            dir: dir.path(),
            cancel: &cancel,
            progress: &NoProgress,
        })
        .unwrap_or_else(|e| panic!("{} failed: {e}", w.engine()));
    (m, dir)
}

fn expect(m: &Measurements, name: &str, unit: Unit, direction: Direction) -> f64 {
    let x = m
        .metrics
        .iter()
        .find(|x| x.name == name)
        .unwrap_or_else(|| panic!("no metric {name} in {:?}", m.metrics));
    assert_eq!((x.unit, x.direction), (unit, direction), "{name}");
    assert!(
        x.value.is_finite() && x.value >= 0.0,
        "{name} = {}",
        x.value
    );
    x.value
}

fn files_left(p: &std::path::Path) -> usize {
    std::fs::read_dir(p)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                files_left(&e.path())
            } else {
                1
            }
        })
        .sum()
}

#[test]
fn dbench_with_the_builtin_loadfile() {
    let w = Dbench::new(DbenchOptions {
        nprocs: 2,
        time_limit_s: 2,
        warmup_s: Some(0),
        ..DbenchOptions::default()
    })
    .unwrap();
    assert_eq!(w.engine(), "dbench");
    let (m, dir) = run(&w);
    // -t 2 without warmup: one execute tick at 1 s (its rate is the throughput), cleanup at 2 s.
    assert!(
        expect(
            &m,
            "throughput_mb_s",
            Unit::MBPerSec,
            Direction::HigherIsBetter
        ) > 0.0
    );
    expect(
        &m,
        "max_latency_ms",
        Unit::Milliseconds,
        Direction::LowerIsBetter,
    );
    let n = expect(&m, "ntcreatex_count", Unit::Count, Direction::Neutral);
    assert!(n > 0.0);
    expect(
        &m,
        "ntcreatex_avg_ms",
        Unit::Milliseconds,
        Direction::LowerIsBetter,
    );
    expect(
        &m,
        "ntcreatex_max_ms",
        Unit::Milliseconds,
        Direction::LowerIsBetter,
    );
    assert!(
        m.histograms
            .iter()
            .any(|h| h.name == "ntcreatex_lat_ns" && h.count as f64 == n)
    );
    assert_eq!(files_left(dir.path()), 0);
}

#[test]
fn stream_copy_untar_and_command() {
    let stream = Stream::new(StreamOptions {
        size: 4 << 20,
        block_size: 256 << 10,
        drop_caches: false,
        ..StreamOptions::default()
    })
    .unwrap();
    let (m, dir) = run(&stream);
    for n in ["write_mb_s", "read_cold_mb_s", "read_warm_mb_s"] {
        assert!(expect(&m, n, Unit::MBPerSec, Direction::HigherIsBetter) > 0.0);
    }
    expect(&m, "caches_dropped", Unit::Count, Direction::Neutral);
    assert_eq!(files_left(dir.path()), 0);

    let src = tempfile::tempdir().unwrap();
    let copy = Copy::new(CopyOptions {
        size: 4 << 20,
        method: CopyMethod::ReadWrite,
        source_dir: Some(src.path().into()),
        ..CopyOptions::default()
    })
    .unwrap();
    let (m, dir) = run(&copy);
    for n in ["copy_s", "sync_s", "total_s"] {
        expect(&m, n, Unit::Seconds, Direction::LowerIsBetter);
    }
    assert_eq!(
        expect(&m, "copy_file_range_used", Unit::Count, Direction::Neutral),
        0.0
    );
    assert_eq!(files_left(dir.path()) + files_left(src.path()), 0);

    let cache = tempfile::tempdir().unwrap();
    let untar = Untar::new(UntarOptions {
        source: TarballSource::Generated {
            files: 200,
            seed: 5,
        },
        cache_dir: Some(cache.path().into()),
    })
    .unwrap();
    let (m, dir) = run(&untar);
    expect(&m, "elapsed_s", Unit::Seconds, Direction::LowerIsBetter);
    expect(&m, "sync_s", Unit::Seconds, Direction::LowerIsBetter);
    assert!(
        expect(
            &m,
            "files_per_sec",
            Unit::FilesPerSec,
            Direction::HigherIsBetter
        ) > 0.0
    );
    assert_eq!(files_left(dir.path()), 0);

    let cmd = CommandWorkload::new(CommandOptions {
        command: "echo 'launch took 17 ms'".into(),
        metrics: vec![
            CommandMetric::parse(
                "launch_ms",
                Some(r"launch took (\d+) ms"),
                None,
                "ms",
                "lower",
            )
            .unwrap(),
        ],
        timeout: None,
    })
    .unwrap();
    let (m, _dir) = run(&cmd);
    expect(&m, "elapsed_s", Unit::Seconds, Direction::LowerIsBetter);
    assert_eq!(
        expect(
            &m,
            "launch_ms",
            Unit::Milliseconds,
            Direction::LowerIsBetter
        ),
        17.0
    );
}
