//! End-to-end tests of fio's rw= offset modifiers under `fsdelta fio`: a sequential job with
//! holes (`rw=read:8k`), random jobs with a new random offset only every N I/Os
//! (`rw=randread:N`, rw_sequencer=sequential|identical) move as many I/Os and bytes per
//! direction as fio 3.33 (/usr/bin/fio) on the same size-based job.

mod common;

use std::path::Path;

#[test]
fn size_based_modifier_jobs_count_as_fio() {
    if !common::require(
        Path::new("/usr/bin/fio").exists(),
        "fio 3.33 (/usr/bin/fio) to compare with",
    ) {
        return;
    }
    let jobs = [
        // Holes: a hole past the end wraps (4k), an I/O ending at the end ends the file
        // (8k), with offset= the wrap ends it, with io_size= the file is covered again.
        "rw=read:4k",
        "rw=read:8k",
        "rw=read:4k\noffset=256k",
        "rw=read:8k\nio_size=2m",
        "rw=write:112k\nbs=16k\nio_size=4m",
        "rw=write:-8k",
        "rw=rw:4k\nrwmixread=70",
        "rw=randread:4",
        "rw=randrw:3\nrw_sequencer=identical",
        "rw=randwrite:5\nbs_is_seq_rand=1\nbsrange=4k-16k",
        "rw=randread:3\nloops=2",
        "rw=randrw:2\nrandrepeat=0\nrandseed=77\nbssplit=4k/50:16k/50",
    ];
    for opts in jobs {
        let job = format!("[j]\nsize=1m\nbs=4k\nfilename=f\n{opts}\n");
        let ours = tempfile::tempdir().unwrap();
        let theirs = tempfile::tempdir().unwrap();
        let mine = common::fio_counts(&common::run_fsdelta_fio(ours.path(), &job), 0);
        let fio = common::fio_counts(&common::run_real_fio(theirs.path(), &job), 0);
        assert_eq!(
            mine, fio,
            "{opts}: (total_ios, io_bytes) of read, write, trim"
        );
        assert!(mine.iter().any(|c| c.0 > 0), "{opts}: no I/O");
    }
}
