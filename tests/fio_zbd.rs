//! zonemode=zbd over emulated zones (a 16 MiB regular file, zones of 1 MiB): the I/O counts of
//! write-then-read-back jobs, where what a read finds depends on every write pointer, are pinned
//! to fio 3.33's (captured with `fio --output-format=json` on the same jobs), and compared with
//! real fio live when it is installed.

mod common;

use fsdelta::fio::engine::FioWorkload;
use fsdelta::fio::jobfile::SystemSources;
use fsdelta::workload::{CancelToken, NoProgress, RunContext};
use std::process::Command;

const GLOBAL: &str = "[global]\nfilename=f\nzonemode=zbd\nzonesize=1m\nbs=64k\nioengine=psync\n";

/// fio 3.33's (job, read I/Os, write I/Os) per reported job.
type Counts = &'static [(&'static str, u64, u64)];

/// (jobs after [global], fio 3.33's counts).
const CASES: &[(&str, Counts)] = &[
    // Sequential writes fill zones 0, 1 and half of 2; the read-back stops at the last wp.
    (
        "[w]\nrw=write\nio_size=2560k\n[r]\nstonewall\nrw=read\n",
        &[("w", 0, 40), ("r", 40, 0)],
    ),
    // fio 3.33 resets no zone when a write job starts (only with verify): the second job
    // resets just the zone it finds full.
    (
        "[w1]\nrw=write\nio_size=2m\n[w2]\nstonewall\nrw=write\nio_size=1m\n[r]\nstonewall\nrw=read\n",
        &[("w1", 0, 32), ("w2", 0, 16), ("r", 32, 0)],
    ),
    // Two zones open at a time: random writes go to the open zones' write pointers.
    (
        "[w]\nrw=randwrite\nmax_open_zones=2\nio_size=3m\n[r]\nstonewall\nrw=read\n[rr]\nstonewall\nrw=randread\n",
        &[("w", 0, 48), ("r", 32, 0), ("rr", 256, 0)],
    ),
    // One zone per job out of four per file.
    (
        "[w]\nrw=randwrite\nmax_open_zones=4\njob_max_open_zones=1\nio_size=5m\n[r]\nstonewall\nrw=read\n",
        &[("w", 0, 80), ("r", 64, 0)],
    ),
    // A mixed job's first read becomes a write (no zone holds data yet).
    (
        "[rw]\nrw=randrw\nmax_open_zones=3\nio_size=6m\n[r]\nstonewall\nrw=read\n",
        &[("rw", 43, 53), ("r", 53, 0)],
    ),
    // Zone resets past 30 % of the region with data, every fourth write.
    (
        "[w]\nrw=randwrite\nio_size=40m\nzone_reset_threshold=0.3\nzone_reset_frequency=0.25\n[r]\nstonewall\nrw=read\n",
        &[("w", 0, 640), ("r", 66, 0)],
    ),
    // Two clones share the zones and the open-zone limit; a region from offset=1m.
    (
        "[w]\nrw=randwrite\nbs=128k\noffset=1m\nsize=8m\nmax_open_zones=2\nnumjobs=2\n",
        &[("w", 0, 64), ("w", 0, 64)],
    ),
];

fn counts(run: &fsdelta::fio::engine::FioRun) -> Vec<(String, u64, u64)> {
    run.results
        .iter()
        .map(|r| {
            let d = &r.stats.dir;
            (r.name.clone(), d[0].total_ios, d[1].total_ios)
        })
        .collect()
}

fn dir_with_file() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let f = std::fs::File::create(dir.path().join("f")).unwrap();
    f.set_len(16 << 20).unwrap();
    dir
}

/// Run GLOBAL and `jobs` under fsdelta on a fresh file.
fn execute(jobs: &str) -> fsdelta::fio::engine::FioRun {
    let dir = dir_with_file();
    let w =
        FioWorkload::from_job_text(&format!("{GLOBAL}{jobs}"), "zbd.fio", &SystemSources).unwrap();
    let cancel = CancelToken::new();
    let ctx = RunContext {
        dir: dir.path(),
        cancel: &cancel,
        progress: &NoProgress,
    };
    w.execute(&ctx).unwrap()
}

fn ours(jobs: &str) -> Vec<(String, u64, u64)> {
    counts(&execute(jobs))
}

#[test]
fn zbd_counts_equal_fio_3_33s() {
    for (jobs, want) in CASES {
        let want: Vec<(String, u64, u64)> = want
            .iter()
            .map(|(n, r, w)| (n.to_string(), *r, *w))
            .collect();
        assert_eq!(ours(jobs), want, "{jobs}");
    }
}

#[test]
fn zbd_counts_equal_real_fios() {
    let fio = Command::new("fio").arg("--version").output().is_ok();
    if !common::require(fio, "fio (Debian package fio) on PATH") {
        return;
    }
    for (jobs, _) in CASES {
        let dir = dir_with_file();
        std::fs::write(dir.path().join("zbd.fio"), format!("{GLOBAL}{jobs}")).unwrap();
        let out = Command::new("fio")
            .args(["--output-format=json", "zbd.fio"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "fio failed on {jobs}");
        // fio's notes (rounded offsets) come before the JSON.
        let json = common::json_of(&out.stdout);
        let theirs: Vec<(String, u64, u64)> = json["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| {
                (
                    j["jobname"].as_str().unwrap().to_string(),
                    j["read"]["total_ios"].as_u64().unwrap(),
                    j["write"]["total_ios"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(ours(jobs), theirs, "{jobs}");
    }
}

#[test]
fn zbd_refusals_say_how_to_fix_the_job() {
    let dir = dir_with_file();
    let run = |jobs: &str| {
        let w = FioWorkload::from_job_text(&format!("{GLOBAL}{jobs}"), "zbd.fio", &SystemSources)
            .map_err(|e| e.to_string())?;
        let cancel = CancelToken::new();
        let ctx = RunContext {
            dir: dir.path(),
            cancel: &cancel,
            progress: &NoProgress,
        };
        w.execute(&ctx).map(|_| ()).map_err(|e| e.to_string())
    };
    let e = run("[a]\nrw=write\nzonesize=32m\n").unwrap_err();
    assert!(e.contains("smaller than zone size"), "{e}");
    let e =
        run("[a]\nrw=write\nmax_open_zones=2\nsize=2m\n[b]\nrw=write\nmax_open_zones=3\nsize=2m\n")
            .unwrap_err();
    assert!(e.contains("different 'max_open_zones' values"), "{e}");
    let e = run("[a]\nrw=write\nzonesize=512k\n[b]\nrw=write\nsize=2m\n").unwrap_err();
    assert!(e.contains("does not match the device zone size"), "{e}");
    let e = run("[a]\nrw=write\noffset=100k\nsize=200k\n").unwrap_err();
    assert!(e.contains("io_size must be at least one zone"), "{e}");
}

/// fio's "; N zone resets" after each write line: the second sequential writer resets the one
/// full zone it comes to (fio 3.33: 0, then 1).
#[test]
fn zone_resets_are_counted_as_fios() {
    let run = execute("[w1]\nrw=write\nio_size=2m\n[w2]\nstonewall\nrw=write\nio_size=1m\n");
    let resets: Vec<u64> = run.results.iter().map(|r| r.stats.zone_resets).collect();
    assert_eq!(resets, [0, 1]);
}

/// A time-based read of empty zones finds nothing to read on every pass: it ends at its
/// runtime with no I/O, as fio's does (fio 3.33: 0 reads), on sync and async engines.
#[test]
fn a_time_based_read_of_empty_zones_ends_at_its_runtime() {
    for engine in ["psync", "libaio"] {
        let jobs = format!("[r]\nrw=randread\nioengine={engine}\ntime_based\nruntime=1\n");
        let t0 = std::time::Instant::now();
        assert_eq!(ours(&jobs), [("r".to_string(), 0, 0)], "{engine}");
        // A hang guard (a read of empty zones that never ends), not a timing assertion.
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(120),
            "{engine}"
        );
    }
}

/// fio's `z` suffix (FIO_OPT_STR_VAL_ZONE): size, io_size, offset, offset_increment and
/// zoneskip may be counted in zones of zonesize, with zonemode=zbd or strided; without a zone
/// size `size=2z` leaves size unset (the job covers the existing file), as fio. The same bytes
/// and I/Os as under real fio, and the same files left; `1.5z` is refused by both.
#[test]
fn zone_suffix_counts_in_zones_as_fio() {
    if !common::require(
        Command::new("fio").arg("--version").output().is_ok(),
        "/usr/bin/fio",
    ) {
        return;
    }
    let cases = [
        "zonemode=zbd\nzonesize=1m\nsize=2z\n",
        "zonemode=zbd\nzonesize=512k\nsize=3z\nrw=randwrite\n",
        "zonemode=strided\nzonesize=1m\nzonerange=2m\nsize=2z\noffset=1z\n",
        "zonemode=strided\nzonesize=256k\nzoneskip=1z\nsize=2m\nio_size=2z\n",
        "zonemode=strided\nzonesize=256k\nsize=1m\noffset_increment=1z\nio_size=256k\nnumjobs=2\n",
        "size=2z\n",
    ];
    for extra in cases {
        let job = format!("[z]\nrw=write\nbs=64k\nfilename=z.dat\n{extra}");
        let mut seen = Vec::new();
        for tool in ["fio", "fsdelta"] {
            let dir = tempfile::tempdir().unwrap();
            let f = std::fs::File::create(dir.path().join("z.dat")).unwrap();
            f.set_len(4 << 20).unwrap();
            let out = common::tool_json(tool, dir.path(), &job);
            assert!(
                out.status.success(),
                "{tool}: {job}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v = common::json_of(&out.stdout);
            let n = v["jobs"].as_array().unwrap().len();
            let counts: Vec<_> = (0..n).map(|i| common::fio_counts(&v, i)).collect();
            let len = std::fs::metadata(dir.path().join("z.dat")).unwrap().len();
            seen.push((counts, len));
        }
        assert_eq!(seen[1], seen[0], "{job}");
    }
    for tool in ["fio", "fsdelta"] {
        let dir = tempfile::tempdir().unwrap();
        let out = common::tool_json(
            tool,
            dir.path(),
            "[z]\nrw=write\nfilename=z.dat\nsize=1.5z\n",
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("unexpected zone value '1.5z'"),
            "{tool}: {err}"
        );
    }
}
