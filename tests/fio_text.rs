//! fio's normal (text) output: ours for a job file must have the lines fio 3.33 prints for the
//! same job file (tests/data/fio/randrw.normal.txt, captured from Debian's fio), in the same
//! order, so that people (and scripts that grep fio's text) find their numbers where they look.

use fsdelta::plan::jobfile::{self, SystemSources};
use fsdelta::workload::fio::FioWorkload;
use fsdelta::workload::{CancelToken, NoProgress, RunContext};
use std::path::Path;

/// A line's kind: the text before its first value, with the time unit normalised (fio picks
/// nsec/usec/msec from the values). Value-dependent lines (percentile rows, latency buckets)
/// and lines that depend on the program or the machine (fio's own version, process start-up,
/// disk statistics) are left out.
fn kinds(text: &str) -> Vec<String> {
    // Disk stats depend on the device the files are on; they come last.
    let text = text.split("\nDisk stats").next().unwrap_or(text);
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| !l.trim_start().starts_with('|'))
        .filter(|l| !l.starts_with("  lat ("))
        .filter(|l| !l.starts_with("fio-") && !l.starts_with("fsdelta-fio-"))
        .filter(|l| !l.starts_with("Starting "))
        .map(|l| {
            let cut = l.find(['=', ':']).unwrap_or(l.len());
            l[..cut]
                .replace("(usec)", "(nsec)")
                .replace("(msec)", "(nsec)")
                .trim_end()
                .to_string()
        })
        .collect()
}

/// fio's normal output captured for tests/data/fio/`name`.fio (`name`.normal.txt) and ours
/// for the same job file, run in a temporary directory.
fn fio_and_ours(name: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fio");
    let job = std::fs::read_to_string(data.join(format!("{name}.fio"))).unwrap();
    let theirs = std::fs::read_to_string(data.join(format!("{name}.normal.txt"))).unwrap();
    let set = jobfile::parse_job_text(&job, &format!("{name}.fio"), &SystemSources).unwrap();
    let cancel = CancelToken::new();
    let run = FioWorkload::new(set)
        .execute(&RunContext {
            dir: dir.path(),
            cancel: &cancel,
            progress: &NoProgress,
        })
        .unwrap();
    (theirs, fsdelta::report::fio::normal(&run))
}

#[test]
fn normal_output_has_fios_lines_in_fios_order() {
    let (theirs, ours) = fio_and_ours("randrw");
    let (k_theirs, k_ours) = (kinds(&theirs), kinds(&ours));
    // fio prints bw/iops sample lines only when a job ran long enough to sample; this job is
    // too short for both.
    let k_ours: Vec<String> = k_ours
        .into_iter()
        .filter(|k| !k.starts_with("   bw (") && !k.starts_with("   iops"))
        .collect();
    assert_eq!(k_theirs, k_ours, "fio's:\n{theirs}\nours:\n{ours}");
    // Numbers in fio's formats.
    assert!(ours.contains("(4096KiB/"), "{ours}");
    assert!(ours.contains("issued rwts: total=0,1024,0,0"), "{ours}");
    assert!(ours.contains("run="), "{ours}");
}

/// The trim direction's lines (`trim:`, its clat/lat, `issued rwts` with the trim count, the
/// group's `TRIM:` line) where fio 3.33 prints them (tests/data/fio/trim.normal.txt: a
/// trimwrite and a randtrim job with the falloc engine).
#[test]
fn trim_lines_are_fios() {
    let (theirs, ours) = fio_and_ours("trim");
    // fio's own layout message, and sample lines of a job long enough to sample, aside.
    let theirs_kept: String = theirs
        .lines()
        .filter(|l| !l.contains(": Laying out IO file"))
        .map(|l| format!("{l}\n"))
        .collect();
    let k_theirs = kinds(&theirs_kept);
    let k_ours: Vec<String> = kinds(&ours)
        .into_iter()
        .filter(|k| !k.starts_with("   bw (") && !k.starts_with("   iops"))
        .collect();
    assert_eq!(k_theirs, k_ours, "fio's:\n{theirs}\nours:\n{ours}");
    assert!(ours.contains("issued rwts: total=0,256,256,0"), "{ours}");
    assert!(ours.contains("issued rwts: total=0,0,256,0"), "{ours}");
    assert!(ours.contains("   TRIM: bw="), "{ours}");
}
