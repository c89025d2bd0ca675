//! End-to-end tests of the trim direction of `fsdelta fio`: rw=trim, randtrim, trimwrite and
//! randtrimwrite with the falloc engine move fio 3.33's counts (compared with /usr/bin/fio on
//! the same job), and the psync and libaio engines punch real holes into a regular file.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;

#[test]
fn falloc_trim_modes_count_as_fio() {
    if !common::require(
        Path::new("/usr/bin/fio").exists(),
        "fio 3.33 (/usr/bin/fio) to compare with",
    ) {
        return;
    }
    for rw in ["trim", "randtrim", "trimwrite", "randtrimwrite"] {
        let job = format!(
            "[t]\nioengine=falloc\nrw={rw}\nsize=2m\nbssplit=4k/50:16k/30:64k/20\nfilename=f\n"
        );
        let ours = tempfile::tempdir().unwrap();
        let theirs = tempfile::tempdir().unwrap();
        let mine = common::fio_counts(&common::run_fsdelta_fio(ours.path(), &job), 0);
        let fio = common::fio_counts(&common::run_real_fio(theirs.path(), &job), 0);
        assert_eq!(mine, fio, "rw={rw}: (ios, bytes) of read, write, trim");
        assert!(mine[2].0 > 0, "rw={rw} trims");
        let (a, b) = (
            std::fs::metadata(ours.path().join("f")).unwrap(),
            std::fs::metadata(theirs.path().join("f")).unwrap(),
        );
        assert_eq!(a.len(), b.len(), "rw={rw}: file size");
    }
}

#[test]
fn psync_trim_punches_holes_into_a_file() {
    punches_holes("psync");
}

#[test]
fn libaio_trim_punches_holes_into_a_file() {
    punches_holes("libaio");
}

fn punches_holes(engine: &str) {
    let dir = tempfile::tempdir().unwrap();
    // Lay the file out with data first, then trim the first half of it.
    let v = common::run_fsdelta_fio(
        dir.path(),
        &format!(
            "[w]\nrw=write\nbs=64k\nsize=4m\nfilename=f\nend_fsync=1\n\
             [t]\nstonewall\nioengine={engine}\niodepth=4\nrw=trim\nbs=64k\nsize=2m\nfilename=f\n"
        ),
    );
    let file = dir.path().join("f");
    let md = std::fs::metadata(&file).unwrap();
    assert_eq!(md.len(), 4 << 20, "the size is kept (FALLOC_FL_KEEP_SIZE)");
    let t = &v["jobs"][1]["trim"];
    assert_eq!(t["total_ios"], 32);
    assert_eq!(t["io_bytes"], 2 << 20);
    assert!(t["clat_ns"]["N"].as_u64().unwrap() == 32);
    // st_blocks counts 512-byte units: about 2 MiB stay allocated, not 4.
    let allocated = md.blocks() * 512;
    if allocated == 0 || dir.path().starts_with("/dev/shm") {
        return;
    }
    assert!(
        allocated <= (2 << 20) + (256 << 10),
        "{allocated} bytes still allocated after punching 2 MiB out of 4 MiB"
    );
    // The punched range reads back as zeros.
    let data = std::fs::read(&file).unwrap();
    assert!(data[..2 << 20].iter().all(|&b| b == 0));
    assert!(data[2 << 20..].iter().any(|&b| b != 0));
}
