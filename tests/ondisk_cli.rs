//! What a sample left on disk (issue 39 items 1-5), end to end on loop images: btrfs with
//! compress-force=zstd against no compression on compressible data (compress_ratio above 2
//! against exactly 1.0, and `compare` flags it); random 4 KiB writes into a preallocated file
//! against sequential ones (many more extents per file); an fsync-heavy fs_mark run on btrfs
//! (commit_stats counts its commits); ext4 data=journal against data=ordered (more device bytes
//! per byte written); and the facts that say why a metric a filesystem lacks is absent.
//!
//! Needs root, loop devices, mkfs.btrfs and mkfs.ext4; each test that cannot run says why and
//! passes, unless FSDELTA_REQUIRE_ALL=1 (CI), which turns a skip into a failure.

mod common;

use common::Setup;
use common::ondisk::{self, metric, must, run};
use fsdelta::plan::config::FsKind;
use serde_json::Value;

fn can_format(fs: FsKind) -> bool {
    ondisk::can_format(&[fs])
}

fn setup(configs: &str, suite: &str) -> Setup {
    ondisk::setup("fsdelta-ondisk-", configs, suite)
}

/// The latest run's samples of configuration `config`, each ok.
fn samples(s: &Setup, config: &str) -> Vec<Value> {
    let mine: Vec<Value> = ondisk::samples(s)
        .into_iter()
        .filter(|x| x["config"] == config)
        .collect();
    assert!(!mine.is_empty(), "no sample of {config}");
    mine
}

#[test]
fn btrfs_compress_force_zstd_compresses_compressible_data_and_compare_flags_it() {
    if !can_format(FsKind::Btrfs) {
        return;
    }
    let s = setup(
        "[[config]]\nname = \"plain\"\nfs = \"btrfs\"\ndevice = \"loop:1G\"\n\n\
         [[config]]\nname = \"zstd\"\nfs = \"btrfs\"\ndevice = \"loop:1G\"\nmount = \"compress-force=zstd\"\n",
        // A fio job, whose file stays for the measurement (the copy workload removes its
        // copy before it returns), of data that is three quarters zeros; not preallocated, as
        // btrfs writes into preallocated extents in place, uncompressed.
        "[[test]]\nname = \"compressible\"\nworkload = \"fio\"\njob = \"\"\"\nrw=write\nbs=1m\nsize=32m\nbuffer_compress_percentage=75\nrefill_buffers=1\nfallocate=none\nend_fsync=1\n\"\"\"\n",
    );
    run(&s, 3);
    for x in samples(&s, "zstd") {
        let r = must(&x, "compress_ratio");
        assert!(r > 2.0, "zstd compress_ratio {r}");
        assert!(must(&x, "compress_disk_bytes") < must(&x, "compress_logical_bytes"));
        assert!(must(&x, "space_data_bytes") > 0.0);
        assert!(must(&x, "space_metadata_bytes") > 0.0);
        assert!(must(&x, "btrfs_commits") >= 1.0, "the syncfs commits");
        // Less space than bytes written: the copy compressed.
        assert!(must(&x, "space_amplification") < 1.0, "{x}");
    }
    for x in samples(&s, "plain") {
        assert_eq!(must(&x, "compress_ratio"), 1.0);
        assert_eq!(
            must(&x, "compress_logical_bytes"),
            must(&x, "compress_disk_bytes")
        );
        assert!(must(&x, "compress_logical_bytes") >= (32 << 20) as f64);
        let extra = &x["facts"]["extra"];
        assert!(
            extra["umount_s_syncfs_s"].as_str().is_some(),
            "the syncfs time is recorded: {extra}"
        );
    }
    let out = s
        .cmd()
        .args(["compare", "latest@plain", "latest@zstd"])
        .args(["--metric", "compress_ratio", "--format", "json"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let m = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "compress_ratio" || m["name"] == "compress_ratio")
        .unwrap_or_else(|| panic!("no compress_ratio in {doc}"))
        .clone();
    assert_eq!(m["verdict"], "improved", "{m}");
}

#[test]
fn random_writes_into_a_preallocated_file_leave_many_more_extents_than_sequential_ones() {
    if !can_format(FsKind::Ext4) {
        return;
    }
    // A 64 MiB preallocated file, a sixteenth of it written: randomly, the written 4 KiB
    // blocks are split out of the unwritten extent one by one; sequentially, they are one run.
    let job = |rw: &str| {
        format!(
            "[[test]]\nname = \"{rw}\"\nworkload = \"fio\"\njob = \"\"\"\nrw={rw}\nbs=4k\nsize=64m\nio_size=4m\nfallocate=native\nend_fsync=1\nrandseed=1\n\"\"\"\n"
        )
    };
    let s = setup(
        "[[config]]\nname = \"ext4\"\nfs = \"ext4\"\ndevice = \"loop:512M\"\n",
        &format!("{}{}", job("randwrite"), job("write")),
    );
    run(&s, 1);
    let all = samples(&s, "ext4");
    let of = |t: &str| all.iter().find(|x| x["test"] == t).unwrap().clone();
    let (rand, seq) = (of("randwrite"), of("write"));
    let (r, q) = (
        must(&rand, "extents_per_file_max"),
        must(&seq, "extents_per_file_max"),
    );
    assert!(r >= 10.0 * q, "random {r} extents against sequential {q}");
    assert!(r >= 100.0, "random {r}");
    assert_eq!(must(&rand, "mapped_files"), 1.0);
    assert_eq!(must(&rand, "fragmented_files_pct"), 100.0);
    for x in [&rand, &seq] {
        let absent = x["facts"]["extra"]["ondisk_absent"].as_str().unwrap_or("");
        assert!(
            absent.contains("compress_ratio: ext4 does not compress"),
            "{absent}"
        );
        assert!(metric(x, "compress_ratio").is_none());
        assert!(metric(x, "ext4_lifetime_write_kbytes").unwrap() > 0.0);
        assert_eq!(metric(x, "ext4_errors"), Some(0.0));
        // Free-space fragmentation from GETFSMAP: at least one free extent, and no more free
        // bytes than the 512 MiB image holds.
        let (n, avg) = (
            must(x, "free_space_extents"),
            must(x, "free_space_extent_avg_kib"),
        );
        assert!(n >= 1.0, "{x}");
        assert!(n * avg <= 512.0 * 1024.0, "{n} extents of {avg} KiB");
    }
}

#[test]
fn btrfs_commit_stats_count_the_commits_of_an_fsync_heavy_fs_mark_run() {
    if !can_format(FsKind::Btrfs) {
        return;
    }
    let s = setup(
        "[[config]]\nname = \"btrfs\"\nfs = \"btrfs\"\ndevice = \"loop:1G\"\n",
        "[[test]]\nname = \"fsyncs\"\nworkload = \"fsmark\"\nargs = \"-s 4096 -n 600 -t 2 -S 1 -D 8 -k\"\n",
    );
    run(&s, 1);
    let x = &samples(&s, "btrfs")[0];
    assert!(must(x, "btrfs_commits") >= 1.0);
    assert!(must(x, "btrfs_commit_avg_ms") >= 0.0);
    // 1200 files: the extents of an evenly spaced half are counted (at most 1000 are), the
    // compression of all of them.
    assert_eq!(
        x["facts"]["extra"]["ondisk_extents_sampled"],
        "600 of 1200 files (one in 2)"
    );
    assert_eq!(must(x, "mapped_files"), 600.0, "every file has its 4 KiB");
    assert_eq!(must(x, "extents_per_file_max"), 1.0);
    assert_eq!(must(x, "compress_logical_bytes"), (1200 * 4096) as f64);
    assert_eq!(must(x, "compress_ratio"), 1.0);
    assert!(must(x, "write_amplification") > 1.0, "metadata and fsyncs");
    assert!(must(x, "ondisk_s") > 0.0);
    // Free-space fragmentation from the free space tree: data, metadata and system block
    // groups at least, each with its free extents counted.
    assert!(must(x, "btrfs_block_groups") >= 2.0, "{x}");
    assert!(must(x, "btrfs_free_space_extents") >= 1.0, "{x}");
}

#[test]
fn ext4_data_journal_writes_more_device_bytes_per_byte_than_data_ordered() {
    if !can_format(FsKind::Ext4) {
        return;
    }
    let s = setup(
        "[[config]]\nname = \"ordered\"\nfs = \"ext4\"\ndevice = \"loop:512M\"\nmount = \"data=ordered\"\n\n\
         [[config]]\nname = \"journal\"\nfs = \"ext4\"\ndevice = \"loop:512M\"\nmount = \"data=journal\"\n",
        "[[test]]\nname = \"seq\"\nworkload = \"fio\"\njob = \"\"\"\nrw=write\nbs=64k\nsize=48m\nend_fsync=1\n\"\"\"\n",
    );
    run(&s, 1);
    let o = &samples(&s, "ordered")[0];
    let j = &samples(&s, "journal")[0];
    let (wo, wj) = (
        must(o, "write_amplification"),
        must(j, "write_amplification"),
    );
    // data=journal writes every data block twice (the journal, then its place).
    assert!(wj > 1.5 * wo, "journal {wj} against ordered {wo}");
    assert!(wo >= 0.9, "ordered {wo}");
    assert_eq!(must(o, "workload_write_bytes"), (48u64 << 20) as f64);
    assert!(must(j, "ext4_lifetime_write_kbytes") > must(o, "ext4_lifetime_write_kbytes"));
}

#[test]
fn a_suite_with_ondisk_false_measures_nothing_on_disk_but_keeps_the_device_counters() {
    if !can_format(FsKind::Ext4) {
        return;
    }
    let s = setup(
        "[[config]]\nname = \"ext4\"\nfs = \"ext4\"\ndevice = \"loop:512M\"\n",
        "ondisk = false\n[[test]]\nname = \"seq\"\nworkload = \"fio\"\njob = \"\"\"\nrw=write\nbs=64k\nsize=16m\nend_fsync=1\n\"\"\"\n",
    );
    run(&s, 1);
    let x = &samples(&s, "ext4")[0];
    for name in fsdelta::model::ONDISK_METRICS {
        assert!(metric(x, name).is_none(), "{name} measured: {x}");
    }
    let extra = &x["facts"]["extra"];
    assert!(
        extra["ondisk"]
            .as_str()
            .is_some_and(|v| v.starts_with("off")),
        "{extra}"
    );
    // The device's counters are not the on-disk measurement: they stay.
    assert!(must(x, "dev_write_kbytes") >= 16.0 * 1024.0);
    assert!(must(x, "write_amplification") > 0.0);
    assert!(must(x, "overhead_s") > 0.0);
}
