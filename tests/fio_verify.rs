//! fio's verify format, end to end against real fio 3.33: for every verify= kind of fio 3.33,
//! a file written by fio verifies under `fsdelta fio`, a file written by fsdelta verifies
//! under fio, both write the same bytes but the time, and a damaged block fails in both with
//! fio's message naming file and offset; verify_dump writes fio's .received/.expected files;
//! verify_only reads back another run's writes with fio's counts; verify_async changes no
//! count and no error.
//! Skipped, saying why, without fio, unless FSDELTA_REQUIRE_ALL=1.

mod common;

use std::path::Path;

const KINDS: &[&str] = &[
    "md5",
    "crc64",
    "crc32",
    "crc32c",
    "crc32c-intel",
    "crc16",
    "crc7",
    "sha256",
    "sha512",
    "sha3-224",
    "sha3-256",
    "sha3-384",
    "sha3-512",
    "sha1",
    "xxhash",
    "meta",
    "null",
    "pattern\nverify_pattern=0xdeadbeef%o\"ab\"-3",
    "meta\nverify_pattern=0xaa555aa5\nverify_interval=512",
    "crc32c\nverify_offset=512",
    "md5\nverify_interval=1024",
];

fn jobs(kind: &str) -> (String, String) {
    let w = format!("[w]\nrw=write\nbs=4k\nsize=256k\nfilename=f\ndo_verify=0\nverify={kind}\n");
    let r = format!("[r]\nrw=read\nbs=4k\nsize=256k\nfilename=f\nverify={kind}\n");
    (w, r)
}

fn run(tool: &str, dir: &Path, job: &str) -> std::process::Output {
    common::tool_run(tool, dir, job, &[])
}

/// Panic with `what` and the process's stderr unless it succeeded.
fn assert_ok(o: &std::process::Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn files_written_by_one_tool_verify_under_the_other() {
    if !common::require_fio() {
        return;
    }
    for kind in KINDS {
        let (w, r) = jobs(kind);
        for (writer, reader) in [("fio", "fsdelta"), ("fsdelta", "fio")] {
            let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            let o = run(writer, d.path(), &w);
            assert_ok(&o, &format!("{writer} {kind}"));
            let o = run(reader, d.path(), &r);
            assert_ok(&o, &format!("{reader} reading {writer}'s {kind}"));
        }
    }
}

#[test]
fn a_damaged_block_fails_with_fios_message_and_dump() {
    if !common::require_fio() {
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (w, r) = jobs("crc32c");
    assert!(run("fio", d.path(), &w).status.success());
    // One byte of the data of the block at 8192.
    let mut data = std::fs::read(d.path().join("f")).unwrap();
    data[8192 + 1000] ^= 0xff;
    std::fs::write(d.path().join("f"), &data).unwrap();
    let ours = run(
        "fsdelta",
        d.path(),
        &r.replace("verify=crc32c", "verify=crc32c\nverify_dump=1"),
    );
    let theirs = run("fio", d.path(), &r);
    assert!(!ours.status.success() && !theirs.status.success());
    let line = "crc32c: verify failed at file f offset 8192, length 4096";
    for (who, o) in [("fsdelta", &ours), ("fio", &theirs)] {
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(line), "{who}: {e}");
    }
    let received = std::fs::read(d.path().join("f.8192.received")).unwrap();
    let expected = std::fs::read(d.path().join("f.8192.expected")).unwrap();
    assert_eq!(received, &data[8192..12288]);
    // The expected block is the block as fio wrote it: only the damaged byte differs.
    let diff: Vec<usize> = (0..4096).filter(|&i| received[i] != expected[i]).collect();
    assert_eq!(diff, vec![1000]);
}

/// The checksum kinds fio 3.33 has beyond the first ones fsdelta supported: each is written by
/// both tools with the same bytes, and a damaged block fails under both with fio's message.
const SUMS: &[&str] = &[
    "crc32", "crc16", "crc7", "sha512", "sha3-224", "sha3-256", "sha3-384", "sha3-512", "md5",
    "crc64", "crc32c", "sha256", "sha1", "xxhash",
];

/// Both tools write the same file for every kind: fio's random content from the same seeds,
/// the same headers and sums; only each header's time (bytes 24..32) and so the header's
/// crc32c (36..40) differ.
#[test]
fn both_tools_write_the_same_bytes_but_the_time() {
    if !common::require_fio() {
        return;
    }
    for kind in SUMS.iter().chain(&["meta", "crc7\nverify_interval=1024"]) {
        let (w, _) = jobs(kind);
        let mut files = Vec::new();
        for tool in ["fio", "fsdelta"] {
            let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            let o = run(tool, d.path(), &w);
            assert_ok(&o, &format!("{tool} {kind}"));
            files.push(std::fs::read(d.path().join("f")).unwrap());
        }
        let interval = if kind.contains("verify_interval=1024") {
            1024
        } else {
            4096
        };
        assert_eq!(files[0].len(), files[1].len(), "{kind}");
        let differ: Vec<usize> = (0..files[0].len())
            .filter(|&i| files[0][i] != files[1][i])
            .filter(|&i| !matches!(i % interval, 24..32 | 36..40))
            .collect();
        assert!(
            differ.is_empty(),
            "{kind}: bytes differ at {:?}",
            &differ[..differ.len().min(8)]
        );
        // The header names the kind by fio's number.
        assert_eq!(files[0][2..4], files[1][2..4], "{kind}");
    }
}

/// A byte damaged in the block at 8192 fails the read-back under fio and fsdelta alike,
/// whichever tool wrote the file, with fio's "<kind>: verify failed at file f offset 8192".
/// The damaged byte is the block's last: fio's sha512 checks only the data's tail and start.
#[test]
fn a_damaged_block_fails_under_both_for_every_kind() {
    if !common::require_fio() {
        return;
    }
    for kind in SUMS {
        let (w, r) = jobs(kind);
        for writer in ["fio", "fsdelta"] {
            let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            assert!(
                run(writer, d.path(), &w).status.success(),
                "{writer} {kind}"
            );
            let mut data = std::fs::read(d.path().join("f")).unwrap();
            data[8192 + 4095] ^= 0x10;
            std::fs::write(d.path().join("f"), &data).unwrap();
            let line = format!("{kind}: verify failed at file f offset 8192, length 4096");
            for reader in ["fio", "fsdelta"] {
                let o = run(reader, d.path(), &r);
                let e = String::from_utf8_lossy(&o.stderr);
                assert!(
                    !o.status.success(),
                    "{reader} passed {writer}'s damaged {kind}"
                );
                assert!(e.contains(&line), "{reader} on {writer}'s {kind}: {e}");
            }
        }
    }
}

/// fio's sha512 stores its hash's input buffer, not a digest: damage in the middle of the
/// data goes unseen by fio, and so by fsdelta (a file fio passes, fsdelta passes).
#[test]
fn fios_sha512_misses_what_fio_misses() {
    if !common::require_fio() {
        return;
    }
    let (w, r) = jobs("sha512");
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    assert!(run("fio", d.path(), &w).status.success());
    let mut data = std::fs::read(d.path().join("f")).unwrap();
    data[8192 + 2000] ^= 0x10;
    std::fs::write(d.path().join("f"), &data).unwrap();
    for reader in ["fio", "fsdelta"] {
        let o = run(reader, d.path(), &r);
        assert_ok(&o, reader);
    }
    // Too little data after the 168-byte header for fio's 128-byte buffer: refused.
    let o = run("fsdelta", d.path(), &w.replace("bs=4k", "bs=256"));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("verify=sha512 needs at least 128 bytes"),
        "{e}"
    );
}

/// Per job: [write total_ios, write io_bytes, read total_ios].
fn counts(out: &[u8]) -> Vec<[u64; 3]> {
    let v = common::json_of(out);
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            [
                j["write"]["total_ios"].as_u64().unwrap(),
                j["write"]["io_bytes"].as_u64().unwrap(),
                j["read"]["total_ios"].as_u64().unwrap(),
            ]
        })
        .collect()
}

/// fill_device without size= on a 4 MiB tmpfs: both tools write until ENOSPC, count the failed
/// (and short) writes alike, and do not verify a job that filled the device.
#[test]
fn fill_device_ends_at_enospc_with_fios_counts() {
    if !common::require_fio()
        || !common::require(common::is_root(), "root (to mount a small tmpfs)")
    {
        return;
    }
    let jobs = [
        "[w]\nrw=write\nbs=4k\nfill_device=1\nfilename=d\n",
        "[w]\nrw=write\nbs=64k\nfill_device=1\nfilename=d\nverify=crc32c\n",
        "[w]\nrw=write\nbs=64k\nfill_device=1\nfilename=d\nioengine=libaio\niodepth=4\n",
    ];
    for job in jobs {
        let mut got = Vec::new();
        for tool in ["fio", "fsdelta"] {
            let fs = common::Tmpfs::mount("4m");
            // The job file and the output live outside the filesystem that fills up.
            let o = common::tool_run_outside(&fs.path(), tool, job, "json");
            assert_ok(&o, &format!("{tool} {job}"));
            got.push(counts(&o.stdout));
        }
        assert_eq!(got[1], got[0], "fsdelta vs fio: {job}");
    }
}

/// Per job: [read total_ios, read io_bytes, write total_ios, write io_bytes, write runtime].
fn verify_only_counts(out: &[u8]) -> [u64; 5] {
    let v = common::json_of(out);
    let j = &v["jobs"][0];
    let n = |d: &str, k: &str| j[d][k].as_u64().unwrap();
    [
        n("read", "total_ios"),
        n("read", "io_bytes"),
        n("write", "total_ios"),
        n("write", "io_bytes"),
        n("write", "runtime"),
    ]
}

/// verify_only: a random write job that wrote 20 of 64 blocks (io_size=) under one tool is
/// verified by the same job with verify_only under the other: the same offsets and blocks are
/// read back, no write is issued, and the counts are fio's (the writes counted as done, in no
/// runtime; a read of every logged block). A damaged block fails in both with fio's message.
#[test]
fn verify_only_reads_back_what_the_same_job_wrote() {
    if !common::require_fio() {
        return;
    }
    let w =
        "[w]\nrw=randwrite\nbs=4k\nsize=256k\nio_size=80k\nfilename=f\nverify=crc16\ndo_verify=0\n";
    let vo = w.replace("do_verify=0", "verify_only=1");
    for (writer, reader) in [("fio", "fsdelta"), ("fsdelta", "fio")] {
        let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        assert!(run(writer, d.path(), w).status.success(), "{writer}");
        let before = std::fs::read(d.path().join("f")).unwrap();
        let mut got = Vec::new();
        for tool in [reader, writer] {
            let o = common::tool_json(tool, d.path(), &vo);
            assert_ok(&o, &format!("{tool} verify_only on {writer}'s file"));
            got.push(verify_only_counts(&o.stdout));
        }
        assert_eq!(got[0], got[1], "{reader} vs {writer}");
        assert_eq!(got[0], [20, 20 * 4096, 20, 20 * 4096, 0]);
        // Nothing was written.
        assert_eq!(std::fs::read(d.path().join("f")).unwrap(), before);
        // Damage the first written block: both fail at its offset.
        let at = (0..64)
            .map(|b| b * 4096)
            .find(|&o| before[o..o + 2] == [0xca, 0xac])
            .unwrap();
        let mut data = before.clone();
        data[at + 4000] ^= 1;
        std::fs::write(d.path().join("f"), &data).unwrap();
        let line = format!("crc16: verify failed at file f offset {at}, length 4096");
        for tool in ["fio", "fsdelta"] {
            let o = run(tool, d.path(), &vo);
            let e = String::from_utf8_lossy(&o.stderr);
            assert!(!o.status.success() && e.contains(&line), "{tool}: {e}");
        }
    }
}

/// verify_only with loops=2 verifies after each dry pass, as fio: twice the reads.
#[test]
fn verify_only_verifies_every_pass() {
    if !common::require_fio() {
        return;
    }
    let w = "[w]\nrw=write\nbs=4k\nsize=64k\nfilename=f\nverify=sha3-512\ndo_verify=0\n";
    let vo = w.replace("do_verify=0", "verify_only=1\nloops=2");
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    assert!(run("fio", d.path(), w).status.success());
    let counts: Vec<[u64; 5]> = ["fio", "fsdelta"]
        .iter()
        .map(|tool| {
            let o = common::tool_json(tool, d.path(), &vo);
            assert_ok(&o, tool);
            verify_only_counts(&o.stdout)
        })
        .collect();
    assert_eq!(counts[1], counts[0]);
    assert_eq!(counts[0], [32, 32 * 4096, 32, 32 * 4096, 0]);
}

/// verify_async=N checks on N threads and changes nothing else: the counts of a clean
/// write+verify job (and of a verify_only job) are those of verify_async=0 and of fio with
/// verify_async=3; with two damaged blocks the error is the synchronous one, word for word
/// (the first damaged block in read order), and fio (run synchronously) names the same block.
#[test]
fn verify_async_gives_the_synchronous_results() {
    if !common::require_fio() {
        return;
    }
    let job = "[w]\nrw=randwrite\nbs=4k\nsize=1m\nfilename=f\nverify=sha3-256\n";
    let mut got = Vec::new();
    for (tool, n) in [("fio", 3), ("fsdelta", 0), ("fsdelta", 3)] {
        let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let o = common::tool_json(tool, d.path(), &format!("{job}verify_async={n}\n"));
        assert_ok(&o, &format!("{tool} {n}"));
        got.push(verify_only_counts(&o.stdout));
    }
    assert_eq!(got[0][..4], [256, 1 << 20, 256, 1 << 20]);
    assert_eq!(got[1][..4], got[0][..4]);
    assert_eq!(got[2][..4], got[0][..4]);

    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let w = "[w]\nrw=write\nbs=4k\nsize=1m\nfilename=f\nverify=crc32\ndo_verify=0\n";
    assert!(run("fio", d.path(), w).status.success());
    let clean: Vec<[u64; 5]> = [0, 3]
        .iter()
        .map(|n| {
            let vo = w.replace("do_verify=0", &format!("verify_only=1\nverify_async={n}"));
            let o = common::tool_json("fsdelta", d.path(), &vo);
            assert_ok(&o, "fsdelta");
            verify_only_counts(&o.stdout)
        })
        .collect();
    assert_eq!(clean[0], [256, 1 << 20, 256, 1 << 20, 0]);
    assert_eq!(clean[1], clean[0]);
    let mut data = std::fs::read(d.path().join("f")).unwrap();
    data[100 * 4096 + 500] ^= 1;
    data[200 * 4096 + 7] ^= 4;
    std::fs::write(d.path().join("f"), &data).unwrap();
    let line = "crc32: verify failed at file f offset 409600, length 4096";
    let mut errs = Vec::new();
    // fio 3.33's own verify_async run can hang after a fatal failure (its offload threads
    // wait on each other), so fio runs that one synchronously.
    for (tool, n) in [("fsdelta", 0), ("fsdelta", 3), ("fio", 0)] {
        let vo = w.replace("do_verify=0", &format!("verify_only=1\nverify_async={n}"));
        let o = run(tool, d.path(), &vo);
        let e = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!o.status.success() && e.contains(line), "{tool} {n}: {e}");
        // The `fio: pid=N, err=...` line names the process: compare without it.
        let e: String = e
            .lines()
            .map(|l| match l.find("pid=").zip(l.find(", err=")) {
                Some((a, b)) if a < b => format!("{}{}\n", &l[..a + 4], &l[b..]),
                _ => format!("{l}\n"),
            })
            .collect();
        errs.push(e);
    }
    assert_eq!(errs[1], errs[0]);
}

/// verify=null writes no header and checks nothing, but the written blocks are still read
/// back, as fio counts them; a file of zeros "verifies".
#[test]
fn verify_null_reads_back_and_checks_nothing() {
    if !common::require_fio() {
        return;
    }
    let job = "[w]\nrw=randwrite\nbs=4k\nsize=256k\nfilename=f\nverify=null\n";
    let mut got = Vec::new();
    for tool in ["fio", "fsdelta"] {
        let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let o = common::tool_json(tool, d.path(), job);
        assert_ok(&o, tool);
        got.push(verify_only_counts(&o.stdout)[..4].to_vec());
        let data = std::fs::read(d.path().join("f")).unwrap();
        assert!(
            (0..64).all(|b| data[b * 4096..b * 4096 + 2] != [0xca, 0xac]),
            "{tool} wrote a header"
        );
        std::fs::write(d.path().join("f"), vec![0u8; 256 << 10]).unwrap();
        let o = run(tool, d.path(), &job.replace("randwrite", "read"));
        assert_ok(&o, tool);
    }
    assert_eq!(got[0], [64, 256 << 10, 64, 256 << 10]);
    assert_eq!(got[1], got[0]);
}

/// A mixed job with verify= (rw, randrw) verifies as fio's: its own reads are not checked,
/// and after the pass every block it wrote is read back and checked; the read and write
/// counts (the read-back included) equal fio 3.33's for psync, libaio, io_uring and
/// verify_backlog jobs.
#[test]
fn mixed_jobs_verify_what_they_wrote_as_fio() {
    if !common::require_fio() {
        return;
    }
    let base = "[j]\nbs=4k\nsize=1m\nfilename=f\n";
    let jobs = [
        "rw=randrw\nverify=crc32c\n",
        "rw=rw\nverify=md5\n",
        "rw=randrw\nverify=crc32c\nioengine=libaio\niodepth=8\ndirect=1\n",
        "rw=randrw\nverify=crc32c\nverify_backlog=16\n",
        "rw=randrw\nverify=sha256\nrwmixread=70\nrandseed=5\nioengine=io_uring\niodepth=4\n",
    ];
    for extra in jobs {
        let job = format!("{base}{extra}");
        let got = counts_as_fio(&job);
        // The reads are the job's own plus one read-back per block written.
        let (reads, writes) = (got[0].0, got[1].0);
        assert!(writes > 0 && reads > writes, "{job}: {got:?}");
    }
}

/// Run `job` under fio and fsdelta, each in a fresh directory; both succeed and their
/// (total_ios, io_bytes) per direction are equal: fio's.
fn counts_as_fio(job: &str) -> Vec<(u64, u64)> {
    let mut got = Vec::new();
    for tool in ["fio", "fsdelta"] {
        let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let o = common::tool_json(tool, d.path(), job);
        assert_ok(&o, &format!("{tool}: {job}"));
        got.push(common::fio_counts(&common::json_of(&o.stdout), 0));
    }
    assert_eq!(got[1], got[0], "fsdelta vs fio: {job}");
    got.swap_remove(0)
}

/// verify_backlog on libaio and io_uring (fio's check_get_verify: the backlog reads are
/// queued beside the job's own I/O; a block whose write is still in flight waits): the read
/// and write counts equal fio 3.33's, with verify_backlog_batch, verify_async, a mixed job
/// and loops.
#[test]
fn async_verify_backlog_counts_as_fio() {
    if !common::require_fio() {
        return;
    }
    let base = "[j]\nbs=4k\nsize=1m\nfilename=f\nverify=crc32c\n";
    let jobs = [
        "rw=randwrite\nverify_backlog=16\nioengine=libaio\niodepth=8\ndirect=1\n",
        "rw=randrw\nverify_backlog=16\nioengine=libaio\niodepth=8\ndirect=1\nverify_async=4\n",
        "rw=write\nverify_backlog=7\nverify_backlog_batch=3\nioengine=io_uring\niodepth=16\n",
        "rw=randwrite\nverify_backlog=64\nioengine=libaio\niodepth=8\nloops=2\n",
    ];
    for extra in jobs {
        counts_as_fio(&format!("{base}{extra}"));
    }
}

#[test]
fn a_verify_offset_inside_the_header_is_an_error_not_a_panic() {
    // Below fio's 40-byte header fio refuses it too; from 40 up to the header with its
    // checksum fio accepts it and fails its own verify (its swap overlaps the header).
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for (offset, kind, want) in [
        (16, "crc32c", "min value out of range: 16 (40 min)"),
        (39, "md5", "min value out of range: 39 (40 min)"),
        (40, "md5", "inside the 56-byte header"),
        (43, "crc32c", "inside the 44-byte header"),
    ] {
        let job = format!(
            "[w]\nrw=randwrite\nbs=4k\nsize=64k\nfilename=f\nverify={kind}\nverify_offset={offset}\n"
        );
        let o = run("fsdelta", d.path(), &job);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && e.contains(want), "{offset}: {e}");
        assert!(!e.contains("panicked"), "{e}");
        if offset < 40 {
            // refused as the job file is read, as fio does
            assert!(
                !d.path().join("f").exists(),
                "{offset}: the file was laid out"
            );
        }
    }
    // 44 is the end of crc32c's header: accepted, and verifies.
    let job = "[w]\nrw=randwrite\nbs=4k\nsize=64k\nfilename=f\nverify=crc32c\nverify_offset=44\n";
    let o = run("fsdelta", d.path(), job);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Issue 41: verify with writes of several sizes (bssplit=, bsrange=): each write is logged
/// with its own length and read back whole, and a write that overlaps earlier ones replaces
/// them in the log (fio's log_io_piece), so the reads and bytes equal fio 3.33's: sequential
/// and random, with and without random map (norandommap overlaps), verify_backlog, a mixed job
/// with verify_async, loops, libaio.
#[test]
fn variable_block_sizes_verify_as_fio() {
    if !common::require_fio() {
        return;
    }
    let base = "[j]\nfilename=f\nrandrepeat=1\nverify_state_save=0\n";
    let jobs = [
        "rw=write\nbssplit=4k/50:64k/30:1m/20\nsize=8m\nverify=crc32c\n",
        "rw=randwrite\nbsrange=4k-64k\nsize=4m\nnorandommap\nverify=md5\n",
        "rw=randwrite\nbsrange=4k-64k\nsize=4m\nverify=md5\n",
        "rw=randwrite\nbsrange=4k-64k\nsize=4m\nnorandommap\nverify=md5\nverify_backlog=4\n",
        "rw=randwrite\nioengine=libaio\niodepth=16\ndirect=1\nbssplit=4k/60:16k/30:128k/10\nsize=4m\nverify=crc32c\nverify_backlog=8\n",
        "rw=randrw\nbssplit=4k/50:32k/50\nsize=4m\nverify=sha256\nverify_async=2\n",
        "rw=write\nbsrange=512-128k\nsize=2m\nverify=crc64\nloops=3\n",
    ];
    for extra in jobs {
        counts_as_fio(&format!("{base}{extra}"));
    }
}

/// Issue 41: a damaged interval inside a write of several intervals (bssplit's 64k writes, a
/// 4k interval): fio 3.33's verify_io_u keeps only the last interval's result without
/// verify_fatal, so the failure is printed and the job goes on (exit status 0, error 0); when
/// the damaged interval is the write's last, or with verify_fatal=1, the job fails with
/// EILSEQ (exit status 1). Both tools, the same message, reads and error.
#[test]
fn a_damaged_interval_of_a_long_write_fails_as_in_fio() {
    if !common::require_fio() {
        return;
    }
    let job = |extra: &str| {
        format!(
            "[g]\nrw=write\nbssplit=4k/50:64k/50\nsize=1m\nverify=crc32c\nfilename=g\nrandrepeat=1\nverify_state_save=0\n{extra}"
        )
    };
    // The 64k write at 139264 holds intervals 139264..204800; 196608 is not its last one,
    // 200704 is.
    for (at, extra, fails) in [
        (200_000u64, "", false),
        (203_000, "", true),
        (200_000, "verify_fatal=1\n", true),
    ] {
        let mut seen = Vec::new();
        for tool in ["fio", "fsdelta"] {
            let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            let o = run(tool, d.path(), &job("do_verify=0\n"));
            assert_ok(&o, &format!("{tool}: write"));
            let f = d.path().join("g");
            let mut bytes = std::fs::read(&f).unwrap();
            bytes[at as usize] ^= 0xff;
            std::fs::write(&f, &bytes).unwrap();
            let o = common::tool_json(tool, d.path(), &job(&format!("verify_only=1\n{extra}")));
            let e = String::from_utf8_lossy(&o.stderr).into_owned();
            let want = if at < 200_704 { 196_608 } else { 200_704 };
            assert!(
                e.contains(&format!(
                    "crc32c: verify failed at file g offset {want}, length 4096 (requested block: offset=139264, length=65536"
                )),
                "{tool} {at} {extra}: {e}"
            );
            assert_eq!(o.status.success(), !fails, "{tool} {at} {extra}: {e}");
            let v = common::json_of(&o.stdout);
            let j = &v["jobs"][0];
            seen.push((
                j["read"]["total_ios"].as_u64().unwrap(),
                j["error"].as_u64().unwrap(),
            ));
        }
        assert_eq!(seen[0], seen[1], "fio vs fsdelta, damage at {at} {extra}");
        assert_eq!(seen[0].1 != 0, fails, "{seen:?}");
    }
}
