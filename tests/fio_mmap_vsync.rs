//! ioengine=mmap and ioengine=vsync against real fio 3.33 (I/O counts of every rw mode, the
//! bytes an mmap write job leaves; vsync's gathering is unit-tested in its module), and fsync=N in jobs that also read: fio syncs again before every I/O that follows
//! the Nth write until the next write (its get_rw_ddir asks should_fsync before each I/O),
//! so the sync counts of mixed jobs equal fio's on every engine at iodepth 1.
mod common;

use common::{fio_counts, require_fio, run_fsdelta_fio, run_real_fio};

fn syncs(v: &serde_json::Value) -> u64 {
    v["jobs"][0]["sync"]["total_ios"].as_u64().unwrap()
}

#[test]
fn mmap_and_vsync_move_fios_counts_in_every_mode() {
    if !require_fio() {
        return;
    }
    for engine in ["mmap", "vsync"] {
        for rw in ["read", "write", "randread", "randwrite", "rw", "randrw"] {
            for extra in ["", "iodepth=4\n", "bs=16k\nfsync=8\n"] {
                let job = format!("[j]\nioengine={engine}\nrw={rw}\nbs=4k\nsize=2m\n{extra}");
                let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
                let ours = run_fsdelta_fio(d.path(), &job);
                std::fs::remove_file(d.path().join("j.0.0")).unwrap();
                let fio = run_real_fio(d.path(), &job);
                let (o, f) = (fio_counts(&ours, 0), fio_counts(&fio, 0));
                if engine == "vsync" && !extra.is_empty() && extra.starts_with("iodepth") {
                    // fio 3.33's vsync deeper than 1 issues every I/O but accounts the bytes
                    // of iodepth - 1 fewer (its last gathered I/Os complete unaccounted);
                    // ours accounts each one it completed.
                    let ios = |c: &[(u64, u64)]| c.iter().map(|x| x.0).collect::<Vec<_>>();
                    assert_eq!(ios(&o), ios(&f), "{job}");
                    let bytes = |c: &[(u64, u64)]| c.iter().map(|x| x.1).sum::<u64>();
                    assert_eq!(bytes(&o), 2 << 20, "{job}");
                    assert_eq!(bytes(&f), (2 << 20) - 3 * 4096, "{job}");
                } else {
                    assert_eq!(o, f, "{job}");
                }
                assert_eq!(syncs(&ours), syncs(&fio), "sync count of\n{job}");
            }
        }
    }
}

#[test]
fn an_mmap_write_job_leaves_the_bytes_it_wrote() {
    // buffer_pattern makes the bytes known: the file must hold them everywhere after the
    // job (the layout's bytes are all overwritten by a sequential pass).
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let job = "[j]\nioengine=mmap\nrw=write\nbs=8k\nsize=1m\nbuffer_pattern=0x5a\nfsync=16\n";
    let ours = run_fsdelta_fio(d.path(), job);
    assert_eq!(fio_counts(&ours, 0)[1], (128, 1 << 20));
    let data = std::fs::read(d.path().join("j.0.0")).unwrap();
    assert_eq!(data.len(), 1 << 20);
    assert!(data.iter().all(|&b| b == 0x5a));
}

#[test]
fn fsync_in_a_mixed_job_counts_as_fios_on_every_engine() {
    if !require_fio() {
        return;
    }
    for engine in [
        "psync", "sync", "pvsync", "libaio", "io_uring", "posixaio", "mmap",
    ] {
        for sync in [
            "fsync=16",
            "fdatasync=7\nrwmixread=80",
            "fsync=3\nrwmixread=30",
        ] {
            let job = format!("[j]\nioengine={engine}\nrw=randrw\nbs=4k\nsize=4m\n{sync}\n");
            let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            let ours = run_fsdelta_fio(d.path(), &job);
            let fio = run_real_fio(d.path(), &job);
            assert_eq!(fio_counts(&ours, 0), fio_counts(&fio, 0), "{job}");
            assert_eq!(syncs(&ours), syncs(&fio), "sync count of\n{job}");
        }
    }
    // verify_backlog's read-backs count as completions too.
    let job = "[v]\nrw=randwrite\nbs=4k\nsize=2m\nverify=crc32c\nverify_backlog=8\nfsync=4\n";
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ours = run_fsdelta_fio(d.path(), job);
    let fio = run_real_fio(d.path(), job);
    assert_eq!(fio_counts(&ours, 0), fio_counts(&fio, 0), "{job}");
    assert_eq!(syncs(&ours), syncs(&fio), "sync count of\n{job}");
}

/// ioengine=mmap on a block device (a loop device over a file of this test's): its size comes
/// from BLKGETSIZE64 (fstat says 0), and the counts equal fio's.
#[test]
fn mmap_maps_a_block_device() {
    if !require_fio() || !common::require(common::is_root(), "root (a loop device)") {
        return;
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let img = d.path().join("lo.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    let out = std::process::Command::new("losetup")
        .args(["-f", "--show"])
        .arg(&img)
        .output()
        .unwrap();
    if !common::require(out.status.success(), "a free loop device (losetup -f)") {
        return;
    }
    struct Detach(String);
    impl Drop for Detach {
        fn drop(&mut self) {
            let _ = std::process::Command::new("losetup")
                .args(["-d", &self.0])
                .status();
        }
    }
    let dev = Detach(String::from_utf8(out.stdout).unwrap().trim().to_string());
    let job = format!(
        "[b]\nioengine=mmap\nrw=randrw\nbs=4k\nfilename={}\nsize=8m\nfsync=8\n",
        dev.0
    );
    let ours = run_fsdelta_fio(d.path(), &job);
    let fio = run_real_fio(d.path(), &job);
    assert_eq!(fio_counts(&ours, 0), fio_counts(&fio, 0), "{job}");
    assert_eq!(syncs(&ours), syncs(&fio), "{job}");
}
