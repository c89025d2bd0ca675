//! Job files as other projects write them (issue 41): every file of tests/data/fio-corpus/ (fio's
//! own regression jobs t/jobs, the OpenZFS performance suite, fio-plot's preconditioning job,
//! SPDK's vhost and OCF test jobs, kata-containers/tests' fio-k8s jobs, virtuozzo's
//! performance-test-suite; where each comes from, at which commit and under which licence: its
//! PROVENANCE) is shrunk
//! by one rule, run by fio 3.33 and by `fsdelta fio` in fresh directories of their own, and
//! classified:
//!
//! - `agree`: same job names, the same recursive JSON key set (but fsdelta's own clock keys),
//!   the same files left behind, and for a size-bound job I/O counts and bytes per job and
//!   direction within 1 % of fio's (time-based or runtime-capped jobs: names, keys and files);
//! - `differ`: fsdelta runs it but one of those differs (the reason is printed);
//! - `refused`: fsdelta refuses it (its error is printed);
//! - `fio fails`: fio 3.33 itself does not run the shrunk file (an option newer than 3.33, a
//!   file another job of the suite must make first, a job that is an expected failure, a job
//!   its project's harness completes before running it: SPDK's vhost jobs with an empty
//!   filename= its scripts fill in);
//! - `not local`: an engine that needs something other than local files (none today).
//!
//! The shrink rule (`shrink`, written once for every file): sizes (size, filesize, io_size)
//! above 16 MiB become 16 MiB, runtimes 1 s, ramp and start delays 0, loops 1, numjobs at most
//! 4, nrfiles at most 16, offsets or zones past 16 MiB 1 MiB, directory= dropped (the run's own
//! directory), a /dev/ or absolute filename= a file of that name in the run's directory,
//! created 16 MiB long, and a file a job names beside it (read_iolog=, a pattern file) copied
//! in. `${VAR}`s are the OpenZFS suite's, set in the environment of both tools (`SUITE_ENV`).
//! A project whose harness gives fio options on its command line that its job files leave out
//! (kata's fio-k8s: the size among them): those options, shrunk the same way, on both tools'
//! command lines (`HARNESS_ARGS`).
//! A file its project runs after another (fio's run-fio-tests.py runs `tNNNN-pre.fio` before
//! `tNNNN-post.fio` or `tNNNN.fio`; the OpenZFS suite runs mkfiles.fio before its read jobs,
//! which name no size): that one first, shrunk the same way, by the same tool in the same
//! directory (`setup_of`); only the second run's output is compared. A job that replays
//! (read_iolog=) a log its time-based setup wrote (fio's t0031) replays a log of another length
//! under each tool: each tool's I/Os are compared with its own log's lines (`own_log_replayed`). With randrepeat=0 fio
//! itself picks other blocks and sizes on every run: the bytes per job and direction are
//! compared (within 1 %), not the I/O counts.
//!
//! The floor: issue 41 asks that 90 % of the local-engine files fio runs agree. FLOOR is what
//! this branch reaches (a count, so a file fio stops running cannot raise the share); the test
//! prints the figure, each disagreement with its reason, and the distance to 90 %.
//! Safety: nothing outside the runs' temporary directories is touched; no device is opened.
//! Skipped, saying why, without fio, unless FSDELTA_REQUIRE_ALL=1.

mod common;

use common::fio_vs::{self, first_line, jobs_of, json, listing, size_of};

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fio-corpus");

/// Issue 41's goal: this share of the local-engine files fio runs agree.
const GOAL_PERCENT: usize = 90;

/// Below this many agreeing files the test fails: what this branch reaches (63 of the 65 fio
/// runs, 96 %; issue 41's goal is 90 %, 59).
const FLOOR: usize = 63;

/// The bytes a shrunk job may move per file.
const SHRUNK: u64 = 16 << 20;

/// The OpenZFS perf suite's variables (its perf.shlib sets them), small values.
const SUITE_ENV: &[(&str, &str)] = &[
    ("DIRECTORY", "."),
    ("RUNTIME", "1"),
    ("SYNC_TYPE", "0"),
    ("DIRECT", "0"),
    ("NUMJOBS", "2"),
    ("RANDSEED", "1234"),
    ("PERF_RANDSEED", "1234"),
    ("COMPPERCENT", "66"),
    ("PERF_COMPPERCENT", "66"),
    ("COMPCHUNK", "4096"),
    ("PERF_COMPCHUNK", "4096"),
    ("BLOCKSIZE", "128k"),
    ("FILESIZE", "4m"),
    ("FILE_SIZE", "4m"),
];

/// Options a project's harness gives fio on its command line, which its job files leave out
/// (they name no size): kata-containers/tests' fio-k8s runner (cmd/fiotest/main.go) runs
/// `fio --append-terse --blocksize --direct --directory --iodepth --numjobs --runtime --size
/// --output-format=json JOB`, with its defaults 4K, 0, 16, 1 and 200M; here shrunk like a job
/// file's (size 16 MiB, runtime 1 s), --directory dropped (the run's own directory) and
/// --append-terse left out (the JSON is what is compared). Given to both tools alike.
const HARNESS_ARGS: &[(&str, &[&str])] = &[(
    "kata-fio-k8s/",
    &[
        "--blocksize=4K",
        "--direct=0",
        "--iodepth=16",
        "--numjobs=1",
        "--runtime=1",
        "--size=16m",
    ],
)];

/// The harness options of the corpus file `rel` ([`HARNESS_ARGS`]), if any.
fn harness_args(rel: &str) -> &'static [&'static str] {
    HARNESS_ARGS
        .iter()
        .find(|(dir, _)| rel.starts_with(dir))
        .map_or(&[], |(_, args)| args)
}

/// Files fio 3.33 itself hangs on at times (killed after 30 s here in some runs, finished in
/// others): fio's regression jobs for io_submit_mode=offload. fio is not run on them, so the
/// classification does not depend on the hang; fsdelta still runs them (the note says how).
const FIO_HANGS: &[&str] = &["fio-t-jobs/t0010-b7aae4ba.fio", "fio-t-jobs/t0013.fio"];

/// Engines that work on local files only.
const LOCAL_ENGINES: &[&str] = &[
    "sync",
    "psync",
    "vsync",
    "pvsync",
    "pvsync2",
    "libaio",
    "io_uring",
    "posixaio",
    "mmap",
    "splice",
    "null",
    "falloc",
    "ftruncate",
    "filecreate",
    "filestat",
    "filedelete",
    "dircreate",
    "dirstat",
    "dirdelete",
];

/// The shrink rule (module doc): the shrunk text, the local files to create 16 MiB long
/// beforehand, and the files beside the job file it names (to copy in).
fn shrink(text: &str) -> (String, Vec<String>, Vec<String>) {
    let mut out = String::new();
    let mut files = Vec::new();
    let mut beside = Vec::new();
    for line in text.lines() {
        let body = line.split([';', '#']).next().unwrap_or("").trim();
        let Some((k, v)) = body.split_once('=') else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        let new = match k {
            "filename" => {
                let names: Vec<String> = v
                    .split(':')
                    .map(|n| {
                        let local = n.trim_start_matches('/').replace('/', "-");
                        if n.starts_with('/') {
                            files.push(local.clone());
                        }
                        local
                    })
                    .collect();
                Some(format!("filename={}", names.join(":")))
            }
            "read_iolog" | "replay_redirect_iolog" => {
                beside.push(v.to_string());
                None
            }
            "buffer_pattern" | "verify_pattern" if v.starts_with('\'') => {
                beside.push(v.trim_matches('\'').to_string());
                None
            }
            "directory" => Some(String::new()),
            "size" | "filesize" | "io_size" | "io_limit" => match size_of(v) {
                Some(b) if b > SHRUNK => Some(format!("{k}=16m")),
                _ => None,
            },
            "runtime" | "timeout" => Some(format!("{k}=1")),
            "ramp_time" | "startdelay" => Some(format!("{k}=0")),
            "offset" | "zonesize" => match size_of(v) {
                Some(b) if b > SHRUNK => Some(format!("{k}=1m")),
                _ => None,
            },
            "numjobs" => v.parse::<u32>().ok().map(|n| format!("{k}={}", n.min(4))),
            "loops" => Some(format!("{k}=1")),
            "nrfiles" | "nr_files" => v.parse::<u32>().ok().map(|n| format!("{k}={}", n.min(16))),
            _ => None,
        };
        match new {
            Some(n) => out.push_str(&n),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    files.sort();
    files.dedup();
    (out, files, beside)
}

/// The engines a job file names (psync when it names none, fio's default).
fn engines(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .lines()
        .map(|l| l.split([';', '#']).next().unwrap_or("").trim())
        .filter_map(|l| l.strip_prefix("ioengine="))
        .map(|e| e.trim().to_string())
        .collect();
    if v.is_empty() {
        v.push("psync".into());
    }
    v
}

fn key_is(text: &str, pred: impl Fn(&str, &str) -> bool) -> bool {
    text.lines().any(|l| {
        let l = l.split([';', '#']).next().unwrap_or("").replace(' ', "");
        let (k, v) = l.split_once('=').unwrap_or((&l, "1"));
        pred(k, v)
    })
}

/// [`fio_vs::run`] with the suite's environment ([`SUITE_ENV`]).
fn run(cmd: &mut Command, limit: Duration) -> Result<std::process::Output, String> {
    fio_vs::run(cmd.envs(SUITE_ENV.iter().copied()), limit)
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
enum Class {
    Agree,
    Differ,
    Refused,
    FioFails,
    NotLocal,
}

impl Class {
    fn label(self) -> &'static str {
        match self {
            Class::Agree => "agree",
            Class::Differ => "differ",
            Class::Refused => "refused",
            Class::FioFails => "fio fails",
            Class::NotLocal => "not local",
        }
    }
}

/// A fresh directory holding the shrunk job file, its 16 MiB device stand-ins and the
/// corpus files it names.
fn stage(src: &Path, shrunk: &str, files: &[String], beside: &[String]) -> tempfile::TempDir {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for f in files {
        std::fs::File::create(d.path().join(f))
            .unwrap()
            .set_len(SHRUNK)
            .unwrap();
    }
    for b in beside {
        let from = src.parent().unwrap().join(b);
        if from.is_file() {
            std::fs::copy(&from, d.path().join(b)).unwrap();
        }
    }
    std::fs::write(d.path().join("job.fio"), shrunk).unwrap();
    d
}

/// The file its project runs before `path` in the same directory, if any (module doc).
fn setup_of(path: &Path) -> Option<PathBuf> {
    let stem = path.file_stem()?.to_str()?;
    let dir = path.parent()?;
    let pre = match stem.strip_suffix("-post") {
        Some(base) => format!("{base}-pre.fio"),
        None => format!("{stem}-pre.fio"),
    };
    if dir.join(&pre).is_file() {
        return Some(dir.join(pre));
    }
    let text = std::fs::read_to_string(path).ok()?;
    let sized = key_is(&text, |k, _| k == "size" || k == "filesize");
    let zfs = dir.ends_with("openzfs-perf") && stem != "mkfiles";
    (zfs && !sized).then(|| dir.join("mkfiles.fio"))
}

/// Run the setup file (shrunk) with `tool` in `dir`; an error if it fails.
fn run_setup(setup: &Path, dir: &Path, tool: &str) -> Result<(), String> {
    let (shrunk, files, beside) = shrink(&std::fs::read_to_string(setup).unwrap());
    for f in files {
        std::fs::File::create(dir.join(&f))
            .unwrap()
            .set_len(SHRUNK)
            .unwrap();
    }
    for b in beside {
        let from = setup.parent().unwrap().join(&b);
        if from.is_file() {
            std::fs::copy(&from, dir.join(&b)).unwrap();
        }
    }
    std::fs::write(dir.join("setup.fio"), shrunk).unwrap();
    let mut cmd = common::fio_command(tool);
    let out = run(
        cmd.current_dir(dir)
            .args(["--output-format=json", "setup.fio"]),
        Duration::from_secs(120),
    )?;
    std::fs::remove_file(dir.join("setup.fio")).unwrap();
    if !out.status.success() {
        return Err(format!("its setup job fails: {}", first_line(&out.stderr)));
    }
    Ok(())
}

/// One corpus file: its class and a note (the reason for anything but agree).
fn check(path: &Path) -> (Class, String) {
    let text = std::fs::read_to_string(path).unwrap();
    if let Some(e) = engines(&text)
        .into_iter()
        .find(|e| !LOCAL_ENGINES.contains(&e.as_str()))
    {
        return (Class::NotLocal, format!("ioengine={e}"));
    }
    let (shrunk, files, beside) = shrink(&text);
    // A hang guard: a shrunk job takes a second or two; a loaded CI machine must not turn a
    // slow run into a disagreement.
    let limit = Duration::from_secs(120);
    let rel = path.strip_prefix(CORPUS).unwrap().to_string_lossy();
    let rel = rel.trim_start_matches('/');
    let extra = harness_args(rel);
    // What the tools are given: the shrunk file and the harness's options as its lines (the
    // comparison reads runtime= and the like from it).
    let judged: String = extra
        .iter()
        .map(|a| format!("{}\n", a.trim_start_matches("--")))
        .fold(shrunk.clone(), |s, l| s + &l);
    if FIO_HANGS.contains(&rel) {
        let ours = stage(path, &shrunk, &files, &beside);
        let out = run(
            Command::new(env!("CARGO_BIN_EXE_fsdelta"))
                .current_dir(ours.path())
                .args(["fio", "--output-format=json", "job.fio"]),
            limit,
        );
        let how = match out {
            Ok(o) if o.status.success() => "fsdelta runs it".to_string(),
            Ok(o) => format!("fsdelta: {}", first_line(&o.stderr)),
            Err(e) => format!("fsdelta: {e}"),
        };
        return (
            Class::FioFails,
            format!("fio 3.33 hangs on it at times (io_submit_mode=offload), not run; {how}"),
        );
    }
    let theirs = stage(path, &shrunk, &files, &beside);
    let setup = setup_of(path);
    if let Some(s) = &setup {
        if let Err(e) = run_setup(s, theirs.path(), "fio") {
            return (Class::FioFails, e);
        }
    }
    let fout = run(
        Command::new("fio")
            .current_dir(theirs.path())
            .args(extra)
            .args(["--output-format=json", "job.fio"]),
        limit,
    );
    let fio_json = match &fout {
        Err(e) => return (Class::FioFails, e.clone()),
        Ok(o) if !o.status.success() => {
            return (Class::FioFails, first_line(&o.stderr));
        }
        Ok(o) => match json(&o.stdout) {
            Ok(v) => v,
            Err(e) => return (Class::FioFails, e),
        },
    };
    let ours = stage(path, &shrunk, &files, &beside);
    if let Some(s) = &setup {
        if let Err(e) = run_setup(s, ours.path(), "fsdelta") {
            return (Class::Refused, e);
        }
    }
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_fsdelta"));
    let out = match run(
        Command::new(&bin)
            .current_dir(ours.path())
            .arg("fio")
            .args(extra)
            .args(["--output-format=json", "job.fio"]),
        limit,
    ) {
        Ok(o) => o,
        Err(e) => return (Class::Differ, e),
    };
    if !out.status.success() {
        let err = first_line(&out.stderr);
        // An error before any job ran is a refusal; one after is a disagreement.
        return match json(&out.stdout) {
            Ok(_) => (Class::Differ, format!("exit {}: {err}", out.status)),
            Err(_) => (Class::Refused, err),
        };
    }
    let our_json = match json(&out.stdout) {
        Ok(v) => v,
        Err(e) => return (Class::Differ, e),
    };
    match compare(&judged, &our_json, &fio_json, ours.path(), theirs.path()) {
        Ok(note) => (Class::Agree, note),
        Err(why) => (Class::Differ, why),
    }
}

/// Names, keys, files and (size-bound) counts and bytes: Ok(what was compared) or Err(the
/// first difference).
fn compare(
    shrunk: &str,
    ours: &serde_json::Value,
    fio: &serde_json::Value,
    our_dir: &Path,
    fio_dir: &Path,
) -> Result<String, String> {
    let (oj, fj) = (jobs_of(ours), jobs_of(fio));
    fio_vs::same_names_and_files(&oj, &fj, our_dir, fio_dir)?;
    let (ok, fk) = (common::key_set(ours), common::key_set(fio));
    let missing: BTreeSet<&String> = fk.difference(&ok).collect();
    let extra: BTreeSet<&String> = ok
        .difference(&fk)
        .filter(|k| !common::OURS_ONLY_KEYS.contains(&k.as_str()))
        .collect();
    if !missing.is_empty() || !extra.is_empty() {
        let few =
            |s: &BTreeSet<&String>| s.iter().take(4).map(|k| k.to_string()).collect::<Vec<_>>();
        return Err(format!(
            "JSON keys: {} fio has and we lack {:?}, {} we have and fio lacks {:?}",
            missing.len(),
            few(&missing),
            extra.len(),
            few(&extra)
        ));
    }
    let timed = key_is(shrunk, |k, v| k == "time_based" && v != "0")
        || key_is(shrunk, |k, _| k == "runtime" || k == "timeout");
    if timed {
        return Ok("time-bound: names, keys and files".into());
    }
    if let Some(note) = own_log_replayed(shrunk, &oj, &fj, our_dir, fio_dir)? {
        return Ok(note);
    }
    let near = |a: u64, b: u64| a.abs_diff(b) * 100 <= b;
    let unrepeatable = key_is(shrunk, |k, v| {
        k == "randrepeat" && (v == "0" || v == "false")
    });
    for (o, f) in oj.iter().zip(&fj) {
        for d in 0..3 {
            let ios = unrepeatable || near(o.1[d], f.1[d]);
            if !ios || !near(o.2[d], f.2[d]) {
                return Err(format!(
                    "job {}: I/Os {:?} bytes {:?}, fio's {:?} {:?}",
                    o.0, o.1, o.2, f.1, f.2
                ));
            }
        }
    }
    if unrepeatable {
        return Ok("size-bound, randrepeat=0: names, keys, files and bytes".into());
    }
    Ok("size-bound: names, keys, files, I/Os and bytes".into())
}

/// A job replaying (read_iolog=) a log that each tool's setup job wrote in its own directory
/// (fio's t0031: a time-based write job logs for 1 s, so the two logs differ in length): each
/// tool's I/Os must be its own log's reads and writes. None when both replay the same log
/// (the ordinary comparison applies), Err on a difference.
fn own_log_replayed(
    shrunk: &str,
    oj: &[fio_vs::JobCounts],
    fj: &[fio_vs::JobCounts],
    our_dir: &Path,
    fio_dir: &Path,
) -> Result<Option<String>, String> {
    let Some(log) = shrunk.lines().find_map(|l| {
        l.split([';', '#'])
            .next()
            .and_then(|b| b.trim().strip_prefix("read_iolog="))
            .map(|v| v.trim().to_string())
    }) else {
        return Ok(None);
    };
    let (ours, theirs) = (
        std::fs::read_to_string(our_dir.join(&log)).unwrap_or_default(),
        std::fs::read_to_string(fio_dir.join(&log)).unwrap_or_default(),
    );
    if ours == theirs {
        return Ok(None);
    }
    let lines = |text: &str, act: &str| {
        text.lines()
            .filter(|l| l.split_whitespace().nth(2) == Some(act))
            .count() as u64
    };
    for (who, jobs, text) in [("fsdelta", oj, &ours), ("fio", fj, &theirs)] {
        let want = [lines(text, "read"), lines(text, "write")];
        let got = jobs.first().map(|j| [j.1[0], j.1[1]]).unwrap_or_default();
        if got != want {
            return Err(format!(
                "{who} replayed {got:?} reads and writes of its own {log}, which holds {want:?}"
            ));
        }
    }
    Ok(Some(format!(
        "replays its own setup's {log}: names, keys, files, and each tool's I/Os are its log's lines"
    )))
}

fn corpus_files() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for dir in std::fs::read_dir(CORPUS).unwrap().flatten() {
        if !dir.path().is_dir() {
            continue;
        }
        for f in std::fs::read_dir(dir.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "fio") {
                v.push(f.path());
            }
        }
    }
    v.sort();
    v
}

#[test]
fn the_corpus_runs_as_under_fio() {
    if !common::require_fio() {
        return;
    }
    let mut results: BTreeMap<String, (Class, String)> = BTreeMap::new();
    for path in corpus_files() {
        let name = path.strip_prefix(CORPUS).unwrap().display().to_string();
        results.insert(name.trim_start_matches('/').to_string(), check(&path));
    }
    let count = |c: Class| results.values().filter(|r| r.0 == c).count();
    let runs = results.len() - count(Class::FioFails) - count(Class::NotLocal);
    let agree = count(Class::Agree);
    println!(
        "fio corpus: {} files; fio 3.33 runs {runs} with local engines; {agree} agree ({} %), {} differ, {} refused; fio fails {}, not local {}",
        results.len(),
        agree * 100 / runs.max(1),
        count(Class::Differ),
        count(Class::Refused),
        count(Class::FioFails),
        count(Class::NotLocal),
    );
    let mut by_class: Vec<(&String, &(Class, String))> = results.iter().collect();
    by_class.sort_by_key(|(n, r)| (r.0, n.to_string()));
    for (name, (class, note)) in by_class {
        println!("  {:<9} {name}: {note}", class.label());
    }
    let goal = (runs * GOAL_PERCENT).div_ceil(100);
    if agree < goal {
        println!(
            "issue 41's goal is {goal} of {runs} ({GOAL_PERCENT} %); {} to go",
            goal - agree
        );
    }
    assert!(
        agree >= FLOOR,
        "{agree} of {runs} corpus files agree with fio 3.33; the floor is {FLOOR}"
    );
}

#[test]
fn every_corpus_file_has_its_provenance() {
    let prov = std::fs::read_to_string(Path::new(CORPUS).join("PROVENANCE")).unwrap();
    let listed: BTreeSet<&str> = prov
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(" | ").next())
        .collect();
    for f in corpus_files() {
        let rel = f
            .strip_prefix(CORPUS)
            .unwrap()
            .to_string_lossy()
            .to_string();
        let rel = rel.trim_start_matches('/');
        assert!(listed.contains(rel), "{rel} is not in PROVENANCE");
    }
    for l in prov.lines().filter(|l| !l.starts_with('#')) {
        let cols: Vec<&str> = l.split(" | ").collect();
        assert_eq!(cols.len(), 5, "{l}");
        assert_eq!(cols[3].len(), 40, "a full commit: {l}");
        let licence = cols[4].split('(').nth(1).unwrap().trim_end_matches(')');
        assert!(Path::new(CORPUS).join(licence).is_file(), "{l}");
    }
}

#[test]
fn the_shrink_rule_caps_sizes_and_never_leaves_a_device_name() {
    let (t, files, beside) = shrink(
        "[a]\nfilename=/dev/sdb\ndirectory=/scratch\nsize=100g\nruntime=60\nnumjobs=64\nloops=9\nread_iolog=x.iolog\n",
    );
    assert_eq!(
        t,
        "[a]\nfilename=dev-sdb\n\nsize=16m\nruntime=1\nnumjobs=4\nloops=1\nread_iolog=x.iolog\n"
    );
    assert_eq!(files, vec!["dev-sdb"]);
    assert_eq!(beside, vec!["x.iolog"]);
    assert_eq!(engines("[a]\nrw=read\n"), vec!["psync"]);
    assert_eq!(engines("[a]\nioengine=libaio ; deep\n"), vec!["libaio"]);
}

fn json_of_run(tool: &str, dir: &Path, job: &str) -> serde_json::Value {
    let out = common::tool_json(tool, dir, job);
    assert!(
        out.status.success(),
        "{tool}: {job}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out.stdout).unwrap()
}

/// Issue 41's small parser items, each against fio 3.33 on the same job: a number followed by
/// arithmetic is its leading number (the depth fio keeps: iodepth_level), time_based=10 is on,
/// verifysort is accepted and kept in `job options`, experimental_verify=1 reads back what fio
/// reads.
#[test]
fn issue_41_options_run_as_in_fio() {
    if !common::require_fio() {
        return;
    }
    let depth_job = "[j]\nsize=2m\nrw=randread\nioengine=libaio\ndirect=1\niodepth=2*16\n";
    let timed_job = "[j]\nsize=64k\ntime_based=10\nruntime=1\nioengine=null\n";
    let sorted_job = "[j]\nsize=64k\nverifysort=1\nverifysort_nr=4\n";
    let verify_job =
        "[j]\nfilename=f\nsize=1m\nrw=randwrite\ndo_verify=1\nverify=md5\nexperimental_verify=1\n";
    for job in [depth_job, timed_job, sorted_job, verify_job] {
        let (o, f) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (ours, fio) = (
            json_of_run("fsdelta", o.path(), job),
            json_of_run("fio", f.path(), job),
        );
        let (oj, fj) = (&ours["jobs"][0], &fio["jobs"][0]);
        assert_eq!(oj["job options"], fj["job options"], "{job}");
        if job == depth_job {
            // Every I/O but the first at depth 2 (a queue of 2, never 32).
            for j in [oj, fj] {
                let two = j["iodepth_level"]["2"].as_f64().unwrap();
                assert!(two > 99.0, "{job}: {}", j["iodepth_level"]);
                assert_eq!(j["iodepth_level"]["16"].as_f64(), Some(0.0), "{job}");
            }
        }
        if job == timed_job {
            // Time-based: the 64 KiB are read again and again for the second.
            for j in [oj, fj] {
                assert!(j["read"]["total_ios"].as_u64().unwrap() > 16, "{job}");
            }
        }
        if job == verify_job || job == sorted_job {
            assert_eq!(jobs_of(&ours), jobs_of(&fio), "{job}");
        }
    }
}

/// Issue 41: fio 3.33's JSON keeps a zeroed entry per clone of a stats=0 job (no jobname,
/// groupid 4294967295), after the reported jobs; ours has the same entries, value for value.
#[test]
fn stats_0_jobs_keep_fios_zeroed_entries() {
    if !common::require_fio() {
        return;
    }
    let job = "[a]\nsize=64k\nioengine=null\n[b]\nsize=64k\nioengine=null\nstats=0\n[d]\nsize=64k\nioengine=null\nnumjobs=2\nstats=0\n";
    let (o, f) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (ours, fio) = (
        json_of_run("fsdelta", o.path(), job),
        json_of_run("fio", f.path(), job),
    );
    let (oj, fj) = (
        ours["jobs"].as_array().unwrap(),
        fio["jobs"].as_array().unwrap(),
    );
    assert_eq!(oj.len(), 4);
    assert_eq!(oj.len(), fj.len());
    assert_eq!(oj[0]["jobname"], "a");
    for (a, b) in oj[1..].iter().zip(&fj[1..]) {
        // Every value but elapsed (the run's seconds so far, rounded up: timing, not content).
        let bare = |v: &serde_json::Value| {
            let mut v = v.clone();
            v.as_object_mut().unwrap().remove("elapsed");
            v
        };
        assert_eq!(bare(a), bare(b), "a stats=0 clone's entry");
        assert_eq!(a["groupid"], 4294967295u64);
        assert!(a.get("jobname").is_none());
    }
    let (ok, fk) = (common::key_set(&ours), common::key_set(&fio));
    common::assert_keys_as_fios(job, &ok, &fk);
}

/// Issue 41: a file several jobs share is laid out once, by the first job in the file, before
/// any job runs (fio's setup_files in job order): the "Laying out IO file" line names the
/// first job on every run, fio's as ours (before, whichever clone thread came first did it,
/// and a read job's O_DIRECT reads could hit a write job's unwritten extents).
#[test]
fn a_shared_file_is_laid_out_by_the_first_job_as_in_fio() {
    if !common::require_fio() {
        return;
    }
    let head = "[global]\nfilename=shared\nsize=4m\nbs=64k\n";
    for (first, job) in [
        (
            "w",
            format!(
                "{head}[w]\nrw=randwrite\n[r1]\nrw=randread\n[r2]\nrw=read\n[r3]\nrw=randread\n"
            ),
        ),
        (
            "r1",
            format!("{head}[r1]\nrw=randread\n[w]\nrw=randwrite\n[r2]\nrw=read\n"),
        ),
    ] {
        for tool in ["fio", "fsdelta", "fsdelta", "fsdelta"] {
            let d = tempfile::tempdir().unwrap();
            let out = common::tool_run(tool, d.path(), &job, &[]);
            assert!(out.status.success(), "{tool}: {job}");
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            let lines: Vec<&str> = text.lines().filter(|l| l.contains("Laying out")).collect();
            assert_eq!(
                lines,
                [format!("{first}: Laying out IO file (1 file / 4MiB)")],
                "{tool}: {job}"
            );
        }
    }
}

/// Issue 41: slat_percentiles=1 adds slat's percentiles where slat is measured (libaio), in the
/// JSON (`slat_ns.percentile`, json+ `bins`) and the normal output (`slat percentiles`, before
/// clat's), and nothing with a synchronous engine: fio 3.33's keys and blocks.
#[test]
fn slat_percentiles_as_in_fio() {
    if !common::require_fio() {
        return;
    }
    for job in [
        "[j]\nsize=1m\nioengine=libaio\niodepth=4\nrw=randread\nslat_percentiles=1\n",
        "[j]\nsize=1m\nrw=randread\nslat_percentiles=1\n",
    ] {
        for format in ["json", "json+"] {
            let (o, f) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
            let fmt = format!("--output-format={format}");
            let ours = common::tool_run("fsdelta", o.path(), job, &[&fmt]);
            let fio = common::tool_run("fio", f.path(), job, &[&fmt]);
            let (ok, fk) = (
                common::json_keys(&ours.stdout),
                common::json_keys(&fio.stdout),
            );
            assert_eq!(
                ok.contains(".jobs[].read.slat_ns.percentile"),
                job.contains("libaio"),
                "{job}"
            );
            // Bin values are latencies: compare the keys above the bins.
            let trim = |s: &BTreeSet<String>| {
                s.iter()
                    .filter(|k| !k.contains(".bins."))
                    .cloned()
                    .collect::<BTreeSet<String>>()
            };
            common::assert_keys_as_fios(job, &trim(&ok), &trim(&fk));
        }
        let (o, f) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let ours = common::tool_run("fsdelta", o.path(), job, &[]);
        let fio = common::tool_run("fio", f.path(), job, &[]);
        let blocks = |out: &[u8]| -> Vec<String> {
            String::from_utf8_lossy(out)
                .lines()
                .filter(|l| l.contains("percentiles ("))
                .map(|l| l.trim().split(' ').next().unwrap().to_string())
                .collect()
        };
        assert_eq!(blocks(&ours.stdout), blocks(&fio.stdout), "{job}");
    }
}

/// Issue 41: ioengine=splice (file to pipe to buffer, buffer to pipe to file) gives fio 3.33's
/// counts and files for writes, random reads, verify and O_DIRECT random mixes.
#[test]
fn splice_counts_are_fios() {
    if !common::require_fio() {
        return;
    }
    for job in [
        "[w]\nfilename=f\nioengine=splice\nrw=write\nbs=128k\nsize=2m\n[r]\nstonewall\nfilename=f\nioengine=splice\nrw=randread\nbs=4k\nsize=2m\n",
        "[v]\nfilename=g\nioengine=splice\nrw=randwrite\nbs=8k\nsize=1m\nverify=crc32c\n",
        "[d]\nfilename=d\nioengine=splice\nrw=randrw\nbs=4k\nsize=1m\ndirect=1\n",
    ] {
        let (o, f) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (ours, fio) = (
            json_of_run("fsdelta", o.path(), job),
            json_of_run("fio", f.path(), job),
        );
        assert_eq!(jobs_of(&ours), jobs_of(&fio), "{job}");
        assert_eq!(listing(o.path()), listing(f.path()), "{job}");
        let (ok, fk) = (common::key_set(&ours), common::key_set(&fio));
        common::assert_keys_as_fios(job, &ok, &fk);
    }
}

/// Issue 41: write_iolog=FILE holds fio 3.33's lines (times aside): the version line, each
/// file's add, open and close, one line per I/O as issued, and the syncs fio's get_rw_ddir
/// owes, for fio's t0007 (rw=read:512k, norandommap, O_DIRECT), a libaio job at depth 8 and
/// a write job with fdatasync=2.
#[test]
fn write_iolog_lines_are_fios() {
    if !common::require_fio() {
        return;
    }
    for job in [
        "[foo]\nsize=16m\nrw=read:512k\nbs=1m\nnorandommap\nwrite_iolog=log\ndirect=1\n",
        "[j]\nioengine=libaio\niodepth=8\nrw=write\nbs=4k\nsize=256k\nwrite_iolog=log\n",
        "[w]\nrw=write\nbs=16k\nsize=64k\nfdatasync=2\nwrite_iolog=log\n",
    ] {
        let (o, f) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (ours, fio) = (
            json_of_run("fsdelta", o.path(), job),
            json_of_run("fio", f.path(), job),
        );
        assert_eq!(jobs_of(&ours), jobs_of(&fio), "{job}");
        let lines = |d: &Path| -> Vec<String> {
            std::fs::read_to_string(d.join("log"))
                .unwrap()
                .lines()
                .map(|l| match l.split_once(' ') {
                    Some((t, rest)) if t.parse::<u64>().is_ok() => rest.to_string(),
                    _ => l.to_string(),
                })
                .collect()
        };
        let (ol, fl) = (lines(o.path()), lines(f.path()));
        assert_eq!(ol[0], "fio version 3 iolog", "{job}");
        assert!(ol.len() > 4, "{job}: {ol:?}");
        assert_eq!(ol, fl, "{job}");
    }
}

/// Issue 41: verify_state_save=1 leaves fio 3.33's `local-job-0-verify.state` byte for byte
/// (fio's t0036 with psync, t0037 with libaio at depth 32 over 4 files and 4 loops), and
/// verify_state_load=1 reads it: the read job of t0036 verifies what fio's verifies, from
/// fsdelta's state file or from fio's.
#[test]
fn verify_state_files_are_fios() {
    if !common::require_fio() {
        return;
    }
    let t36 = "[global]\nfilename=t0036file\nverify=md5\nsize=512k\n[job]\n";
    let t37 = "[global]\nfilename=t0037file.1:t0037file.2:t0037file.3:t0037file.4\nverify=md5\nioengine=libaio\niodepth=32\nsize=512k\nloops=4\n[job]\n";
    for global in [t36, t37] {
        let pre = format!("{global}readwrite=write\nverify_state_save=1\n");
        let (o, f) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (ours, fio) = (
            json_of_run("fsdelta", o.path(), &pre),
            json_of_run("fio", f.path(), &pre),
        );
        assert_eq!(jobs_of(&ours), jobs_of(&fio), "{pre}");
        let state = |d: &Path| std::fs::read(d.join("local-job-0-verify.state")).unwrap();
        assert_eq!(state(o.path()), state(f.path()), "{pre}");
    }
    let post = format!("{t36}readwrite=read\nverify_state_load=1\n");
    let pre = format!("{t36}readwrite=write\nverify_state_save=1\n");
    let (o, f) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    json_of_run("fio", f.path(), &pre);
    let fio = json_of_run("fio", f.path(), &post);
    // fsdelta's read job on fio's data and fio's state file.
    for name in ["t0036file", "local-job-0-verify.state"] {
        std::fs::copy(f.path().join(name), o.path().join(name)).unwrap();
    }
    let ours = json_of_run("fsdelta", o.path(), &post);
    assert_eq!(jobs_of(&ours), jobs_of(&fio), "{post}");
    assert_eq!(jobs_of(&ours)[0].1[0], 128, "{post}");
    // Without the state file the job fails, naming it, as fio's does.
    std::fs::remove_file(o.path().join("local-job-0-verify.state")).unwrap();
    let out = common::tool_json("fsdelta", o.path(), &post);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("local-job-0-verify.state"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
