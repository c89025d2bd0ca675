//! ramp_time in size-based jobs, against real fio 3.33: the passes made during the ramp count
//! as the job's loops (fio's keep_running), so a job whose size is done before its ramp ends
//! ends there, with its bytes and I/Os counted and no latencies (fio's should_account), and a
//! ramp that ends mid-pass leaves the rest of that pass to be measured. Before this, such a
//! job never ended: it started pass after pass waiting for a ramp end that only an I/O could
//! bring.
mod common;

use common::{fio_counts, json_of, require_fio};
use std::time::Duration;

/// `job` under `fsdelta fio --output-format=json`, ended after 60 s if it hangs.
fn ours(dir: &std::path::Path, job: &str) -> serde_json::Value {
    std::fs::write(dir.join("job.fio"), job).unwrap();
    let out = assert_cmd::Command::cargo_bin("fsdelta")
        .unwrap()
        .current_dir(dir)
        .args(["fio", "--output-format=json", "job.fio"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fsdelta fio failed or hung (status {:?}) on\n{job}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(&out.stdout)
}

fn clat_n(v: &serde_json::Value, dir: &str) -> u64 {
    v["jobs"][0][dir]["clat_ns"]["N"].as_u64().unwrap()
}

#[test]
fn a_size_based_job_done_inside_its_ramp_ends_with_fios_counts_and_no_latencies() {
    if !require_fio() {
        return;
    }
    // Each is done long before a 30 s ramp could end.
    let jobs = [
        ("randread", "rw=randread\nbs=4k\nsize=4m"),
        ("read, two loops", "rw=read\nbs=4k\nsize=4m\nloops=2"),
        (
            "randwrite, no map",
            "rw=randwrite\nbs=4k\nsize=4m\nnorandommap",
        ),
        ("randrw, fsync", "rw=randrw\nbs=4k\nsize=4m\nfsync=8"),
    ];
    for (what, body) in jobs {
        let job = format!("[r]\nramp_time=30\n{body}\n");
        let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let o = ours(d.path(), &job);
        let f = common::run_real_fio(d.path(), &job);
        assert_eq!(fio_counts(&o, 0), fio_counts(&f, 0), "{what}");
        for dir in ["read", "write"] {
            assert_eq!(
                clat_n(&f, dir),
                0,
                "fio records no latency in a ramp ({what})"
            );
            assert_eq!(
                clat_n(&o, dir),
                0,
                "{what}: {dir} latencies kept from the ramp"
            );
            assert_eq!(o["jobs"][0][dir]["bw_samples"], 0, "{what}");
        }
        assert_eq!(o["jobs"][0]["sync"]["lat_ns"]["N"], 0, "{what}");
        let buckets = o["jobs"][0]["latency_us"].as_object().unwrap();
        assert!(buckets.values().all(|v| v == 0.0), "{what}: {buckets:?}");
    }
}

#[test]
fn a_ramp_that_ends_mid_pass_leaves_the_rest_of_the_pass_measured() {
    if !require_fio() {
        return;
    }
    // 2048 blocks at 2000 IOPS take at least a second; the ramp ends after 300 ms, inside the
    // pass (after an I/O: the I/O that ends it is the ramp's). The pass is not made longer by
    // the ramp: what is measured is what is left of it. Without the random map only the bytes
    // issued end the pass, so a ramp that restarted them would measure all 2048 blocks again.
    let job = "[r]\nrw=randread\nbs=4k\nsize=8m\nnorandommap\nrate_iops=2000\nramp_time=300ms\n";
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let o = ours(d.path(), job);
    let (ios, bytes) = fio_counts(&o, 0)[0];
    assert!(ios > 0 && ios < 2048, "{ios} I/Os measured after the ramp");
    assert_eq!(bytes, ios * 4096);
    assert_eq!(
        clat_n(&o, "read"),
        ios,
        "every measured I/O has its latency"
    );
}
