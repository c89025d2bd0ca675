//! fio's normal (text) output: ours for a job file must have the lines fio 3.33 prints for the
//! same job file (tests/data/fio/randrw.normal.txt, captured from Debian's fio), in the same
//! order, so that people (and scripts that grep fio's text) find their numbers where they look.

use fsdelta::fio::engine::FioWorkload;
use fsdelta::fio::jobfile::{self, SystemSources};
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
    (theirs, fsdelta::fio::output::normal(&run))
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

/// `fsdelta fio ARGS job` run in a fresh directory holding tests/data/fio/`job`: its stdout.
fn run_cli(job: &str, args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fio");
    std::fs::copy(data.join(job), dir.path().join(job)).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fsdelta"))
        .arg("fio")
        .args(args)
        .arg(job)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// [`kinds`] with the latency bucket lines kept, as one `  lat` kind per run of them (how
/// many lines a run has depends on the values), and fio's layout message left out.
fn kinds_with_lat(text: &str) -> Vec<String> {
    let kept: String = text
        .lines()
        .filter(|l| !l.contains(": Laying out IO file"))
        .map(|l| {
            if l.starts_with("  lat (") {
                "  lat: x\n".to_string()
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    let mut k = Vec::new();
    for line in kept.lines() {
        let mut one = kinds(&format!("{line}\n"));
        if line.starts_with("  lat:") {
            one = vec!["  lat".to_string()];
        }
        for x in one {
            if !(x == "  lat" && k.last() == Some(&x)) {
                k.push(x);
            }
        }
    }
    k
}

/// The `name=value` fields of a line, value with its padding (`min= 4352` gives ("min", " 4352")).
fn fields(line: &str) -> Vec<(String, String)> {
    let body = &line[line.find(':').unwrap() + 1..];
    body.split(',')
        .filter_map(|f| f.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim_end_matches('%').to_string()))
        .collect()
}

/// A psync job with fsync=4 and iodepth=8 (tests/data/fio/sync.normal.txt, fio 3.33): fio's
/// note that a synchronous engine caps the depth (after the header, on stdout), the latency
/// buckets wrapped every five and before the fsync/fdatasync/sync_file_range block, the
/// fsyncs as `issued rwts`' 4th count and in the depth levels (1=125.0%), bw and iops lines
/// padded as fio pads them, and `depth=8`.
#[test]
fn sync_job_lines_are_fios() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fio");
    let theirs = std::fs::read_to_string(data.join("sync.normal.txt")).unwrap();
    let ours = run_cli("sync.fio", &[]);
    assert_eq!(
        kinds_with_lat(&theirs),
        kinds_with_lat(&ours),
        "fio's:\n{theirs}\nours:\n{ours}"
    );
    // Every bucket line holds at most five buckets; a unit's line before another of the same
    // unit holds five (fio's show_lat).
    let lat: Vec<&str> = ours.lines().filter(|l| l.starts_with("  lat (")).collect();
    for (i, l) in lat.iter().enumerate() {
        let n = fields(l).len();
        assert!((1..=5).contains(&n), "{l}");
        if let Some(next) = lat.get(i + 1) {
            if next[..12] == l[..12] {
                assert_eq!(n, 5, "{ours}");
            }
        }
    }
    // Syncs: `total=0,W,0,S` with S the fsyncs of W writes, and among the depth levels.
    let issued = ours.lines().find(|l| l.contains("issued rwts")).unwrap();
    let total = issued.split("total=").nth(1).unwrap();
    let total = total.split_whitespace().next().unwrap();
    let n: Vec<u64> = total.split(',').map(|x| x.parse().unwrap()).collect();
    assert_eq!((n[0], n[2]), (0, 0), "{issued}");
    // (A run that ends right after a fourth write may not have issued its fsync yet.)
    assert!(n[3] == n[1] / 4 || n[3] + 1 == n[1] / 4, "{issued}");
    let depths = ours.lines().find(|l| l.starts_with("  IO depths")).unwrap();
    let one: f64 = fields(depths)[0].1.parse().unwrap();
    let want = 100.0 * (n[1] + n[3]) as f64 / n[1] as f64;
    assert!((one - want).abs() < 0.051, "{depths} for {issued}");
    assert!(ours.contains("percentile=100.00%, depth=8\n"), "{ours}");
    // bw and iops: min and max at least 5 wide, avg and stdev too (fio's %5llu, %5.02f).
    for l in ours
        .lines()
        .filter(|l| l.starts_with("   bw (") || l.starts_with("   iops"))
    {
        for (k, v) in fields(l) {
            if ["min", "max", "avg", "stdev"].contains(&k.as_str()) {
                assert!(v.len() >= 5, "{k}={v} in {l}");
            }
        }
    }
    assert!(theirs.contains("stdev= 0.00"));
}

/// The skeleton of an output: lines outside the JSON document, which is one `<json>`.
fn skeleton(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_json = false;
    for l in text.lines() {
        if l == "{" {
            in_json = true;
            out.push("<json>".to_string());
        } else if in_json {
            in_json = l != "}";
        } else if !l.contains(": Laying out IO file") {
            out.push(l.to_string());
        }
    }
    // One kind per line (value-dependent lines and disk stats left out, as in `kinds`), blank
    // lines kept: they separate the reports.
    let mut kept = Vec::new();
    for l in out {
        if l.starts_with("Disk stats") {
            break;
        }
        if l.is_empty() || l == "<json>" {
            kept.push(l);
        } else {
            kept.extend(kinds(&format!("{l}\n")));
        }
    }
    kept
}

/// `--output-format=json,normal` (tests/data/fio/jn.json-normal.txt, fio 3.33): fio's job
/// lines and start-up note, then the JSON document, then the normal report.
#[test]
fn json_normal_prints_header_json_then_normal_report() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fio");
    let theirs = std::fs::read_to_string(data.join("jn.json-normal.txt")).unwrap();
    let ours = run_cli("jn.fio", &["--output-format=json,normal"]);
    let (s_theirs, s_ours) = (skeleton(&theirs), skeleton(&ours));
    // bw/iops sample lines depend on how long the job ran.
    let s_ours: Vec<String> = s_ours
        .into_iter()
        .filter(|k| !k.starts_with("   bw (") && !k.starts_with("   iops"))
        .collect();
    assert_eq!(s_theirs, s_ours);
    assert!(ours.starts_with("jn: (g=0): rw=read"), "{ours}");
    assert!(ours.contains(
        "\nnote: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will \
         be capped at 1\n{\n"
    ));
}
