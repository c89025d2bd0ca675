//! ioengine=posixaio (POSIX AIO through the C library, fio's engines/posixaio.c) under
//! `fsdelta fio`: the I/O counts and bytes per direction equal fio 3.33's for size-based jobs
//! (reads, writes, mixed with verify, fsync=, direct=1, verify_backlog), the JSON has fio's
//! keys, and submission latency is measured as for fio's other queued engines.

mod common;

use std::path::Path;

#[test]
fn posixaio_jobs_count_as_fio() {
    if !common::require(
        Path::new("/usr/bin/fio").exists(),
        "fio 3.33 (/usr/bin/fio) to compare with",
    ) {
        return;
    }
    let base = "[j]\nioengine=posixaio\nbs=4k\nsize=1m\nfilename=f\n";
    for extra in [
        "rw=randread\niodepth=8\n",
        "rw=randwrite\niodepth=4\n",
        "rw=randrw\niodepth=16\nverify=crc32c\n",
        "rw=write\nbs=64k\nsize=2m\niodepth=2\nfsync=4\n",
        "rw=read\niodepth=8\ndirect=1\n",
        "rw=randwrite\niodepth=8\nverify=md5\nverify_backlog=16\n",
    ] {
        let job = format!("{base}{extra}");
        let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let fio = common::run_real_fio(d.path(), &job);
        let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let ours = common::run_fsdelta_fio(d.path(), &job);
        assert_eq!(
            common::fio_counts(&ours, 0),
            common::fio_counts(&fio, 0),
            "{job}"
        );
        common::assert_keys_as_fios(&job, &common::key_set(&ours), &common::key_set(&fio));
        // A queued engine: every I/O has a submission latency, in fio and here.
        for d in ["read", "write"] {
            let n = fio["jobs"][0][d]["total_ios"].as_u64().unwrap();
            let slat = |v: &serde_json::Value| v["jobs"][0][d]["slat_ns"]["N"].as_u64().unwrap();
            if n > 0 {
                assert!(slat(&fio) > 0 && slat(&ours) > 0, "{job}: {d} slat");
            }
        }
    }
}
