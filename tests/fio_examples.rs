//! fio's own example job files (Debian package fio-examples, /usr/share/doc/fio/examples)
//! under `fsdelta fio`: every example whose engines are local goes through `--parse-only` and,
//! shrunk, for real; for the size-based ones the job names, the files left behind and the I/O
//! counts per job and direction are compared with real fio 3.33's JSON of the same shrunk file.
//!
//! Safety: an example that names a device (filename=/dev/sdb, /dev/nvme0n1, /dev/null, ...) is
//! never run against it. The test copies each example, points every /dev/ name and every
//! directory= at files of its own inside a fresh temporary directory (created 16 MiB long, so a
//! job without size= takes their size), and runs both tools in such directories only.
//!
//! NUMA: a numa_cpu_nodes= or numa_mem_policy= node list naming nodes the machine lacks
//! (numa.fio's job2 names nodes 0-1) becomes the machine's nodes, which both tools then use.
//!
//! Shrinking also caps a rate-limited file that nothing else ends (1mbs_clients: 16 MiB at
//! 1250 B/s) at a 2 s runtime and compares it as time-based, cuts an offset or a zonesize
//! larger than the file to 1 MiB, and for randrepeat=0 (fio's own counts differ from run to
//! run) compares the bytes each job moved (within 1 %) instead of its I/O counts.
//!
//! fill_device: a fill_device job without size= writes until its filesystem is full (fio sets
//! its size to "unlimited"), which here is the machine's temporary filesystem, so such a job
//! gets size=16m (surface-scan): it then writes the shrunk 16 MiB, as fio does.
//!
//! offset_increment: the original's clones each own a stripe of a large device, a stride
//! apart. An offset_increment larger than the shrunk file becomes 16 MiB / numjobs (the
//! shrunk numjobs, rounded down to a MiB, at least 1 MiB), and a section without size= gets
//! size= half that stride, so every clone's region (offset= on) stays inside the file and
//! apart from the next clone's. (With a 1 MiB stride and regions running to the end of the
//! file, cross-stripe-verify's clones overwrite each other's blocks and fio itself fails
//! verification: "bad header numberio 3, wanted 11".)
//!
//! Prints the score "N of M" and each failing file with its reason. It fails when the score
//! drops below FLOOR (issue 14's goal, 90 % of the 42: 38; this branch reaches 41) and says how far
//! it is from the 90 % goal of issue 14.
//! Skipped, saying why, without fio-examples or fio, unless FSDELTA_REQUIRE_ALL=1.

mod common;

use common::fio_vs::{self, JobCounts, first_line, jobs_of, json, run, size_of};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const EXAMPLES: &str = "/usr/share/doc/fio/examples";

/// The examples fio 3.33 accepts whose engines are local (no network, GPU, PMEM, SCSI
/// generic, NVMe passthrough or external library engine).
const LOCAL: &[&str] = &[
    "1mbs_clients",
    "aio-read",
    "backwards-read",
    "basic-verify",
    "butterfly",
    "cmdprio-bssplit",
    "cmdprio-percentage",
    "cross-stripe-verify",
    "dedupe-global",
    "disk-zone-profile",
    "enospc-pressure",
    "exitwhat",
    "falloc",
    "filecreate-ioengine",
    "filedelete-ioengine",
    "filestat-ioengine",
    "fio-rand-RW",
    "fio-rand-read",
    "fio-rand-write",
    "fio-seq-RW",
    "fio-seq-read",
    "fio-seq-write",
    "fixed-rate-submission",
    "flow",
    "fsx",
    "ftruncate",
    "iometer-file-access-server",
    "jesd219",
    "latency-profile",
    "null",
    "numa",
    "poisson-rate-submission",
    "rand-zones",
    "ssd-steadystate",
    "ssd-test",
    "steadystate",
    "surface-scan",
    "tiobench-example",
    "waitfor",
    "zbd-rand-write",
    "zbd-seq-read",
    "zipf",
];

/// Below this the test fails: issue 14's goal, 90 % of the 42 (the test "fails below 90 %").
/// This branch runs 41; the one left is refused with an error naming the option:
/// enospc-pressure runs (continue_on_error, ignore_error, error_dump, verify_async, verify
/// with rw=randrw and verify_backlog on libaio: tests/fio_errors.rs, tests/fio_verify.rs), but
/// the files left behind differ: fio's randtrim job fails at once (ENOTTY on a regular file),
/// and its exitall stops aio-dio-verifier before that job's create_on_open makes its file;
/// our verifier thread has made it by then. Which wins is a start-up race, so it stays a
/// failure here rather than a comparison bent to pass.
const FLOOR: usize = 38;

/// The bytes a shrunk job may move per file.
const SHRUNK: u64 = 16 << 20;

/// A shrunk, safe copy of an example: device and directory names replaced by local files,
/// sizes capped at 16 MiB, runtimes at 1 s, delays removed. Returns the text and the local
/// files to create beforehand.
fn shrink(text: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut files = Vec::new();
    let sections = sections_of(text);
    let mut section = String::new();
    for line in text.lines() {
        if let Some(name) = line.trim().strip_prefix('[') {
            section = name.trim_end_matches(']').to_string();
        }
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
            "directory" => Some(String::new()),
            "size" | "filesize" | "io_size" | "io_limit" => match size_of(v) {
                Some(b) if b > SHRUNK => Some(format!("{k}=16m")),
                _ => None,
            },
            "runtime" | "timeout" => Some(format!("{k}=1")),
            "ramp_time" | "startdelay" => Some(format!("{k}=0")),
            "ss_dur" => Some(format!("{k}=1s")),
            "ss_ramp" => Some(format!("{k}=0")),
            // A start or a zone past the shrunk file would put the job past its end (fio: "you
            // need to specify valid offset=", or EINVAL for a zone larger than the file).
            "offset" | "zonesize" => match size_of(v) {
                Some(b) if b > SHRUNK => Some(format!("{k}=1m")),
                _ => None,
            },
            // A stride of more than the shrunk file would put every clone but the first past
            // its end (fio: "you need to specify valid offset="): see the module doc.
            "offset_increment" => match size_of(v) {
                Some(b) if b > SHRUNK => {
                    let stride = stride_of(&sections, &section);
                    let mut n = format!("{k}={}m", stride >> 20);
                    if !has_key(&sections, &section, &["size", "filesize"]) {
                        n.push_str(&format!("\nsize={}k", (stride / 2) >> 10));
                    }
                    Some(n)
                }
                _ => None,
            },
            "fill_device" | "fill_fs"
                if truthy(v) && !has_key(&sections, &section, &["size", "filesize"]) =>
            {
                Some(format!("{k}={v}\nsize=16m"))
            }
            // A node list naming nodes this machine lacks (numa: 0-1) would be refused by
            // fio as by us: the machine's own nodes instead, as with a device name.
            "numa_cpu_nodes" => local_nodes(v).map(|n| format!("{k}={n}")),
            "numa_mem_policy" => v
                .split_once(':')
                .and_then(|(mode, nodes)| local_nodes(nodes).map(|n| format!("{k}={mode}:{n}"))),
            "numjobs" => Some(format!("{k}={}", v.parse::<u32>().unwrap_or(1).min(4))),
            "loops" => Some(format!("{k}=1")),
            "nrfiles" | "nr_files" => {
                Some(format!("{k}={}", v.parse::<u32>().unwrap_or(1).min(500)))
            }
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
    if rate_bound(text) {
        out = with_runtime_cap(&out);
    }
    (out, files)
}

/// The nodes this process may use (/proc/self/status Mems_allowed_list, e.g. `0` or `0-1`).
fn machine_nodes() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Mems_allowed_list:"))
        .map_or("0".to_string(), |l| l.trim().to_string())
}

/// The machine's nodes in place of a numeric node list (`0-1`, `0,2`) that names one it does
/// not have; None to keep the list.
fn local_nodes(list: &str) -> Option<String> {
    let have = machine_nodes();
    let ids = |l: &str| -> Option<Vec<u32>> {
        let mut v = Vec::new();
        for part in l.split(',') {
            match part.split_once('-') {
                Some((a, b)) => v.extend(a.trim().parse::<u32>().ok()?..=b.trim().parse().ok()?),
                None => v.push(part.trim().parse().ok()?),
            }
        }
        Some(v)
    };
    let (want, have_ids) = (ids(list)?, ids(&have)?);
    want.iter().any(|n| !have_ids.contains(n)).then_some(have)
}

/// The keys of every section of a job file (values as written).
fn sections_of(text: &str) -> Vec<(String, BTreeMap<String, String>)> {
    let mut out: Vec<(String, BTreeMap<String, String>)> = Vec::new();
    for line in text.lines() {
        let body = line.split([';', '#']).next().unwrap_or("").trim();
        if let Some(name) = body.strip_prefix('[') {
            out.push((name.trim_end_matches(']').to_string(), BTreeMap::new()));
        } else if let Some(last) = out.last_mut() {
            let (k, v) = body.split_once('=').unwrap_or((body, "1"));
            if !k.is_empty() {
                last.1.insert(k.trim().to_string(), v.trim().to_string());
            }
        }
    }
    out
}

fn truthy(v: &str) -> bool {
    !matches!(v, "0" | "false" | "no" | "off")
}

/// Whether `section`, or [global] for it, sets one of `keys`; for [global] itself, whether
/// any section does.
fn has_key(sections: &[(String, BTreeMap<String, String>)], section: &str, keys: &[&str]) -> bool {
    sections
        .iter()
        .filter(|(n, _)| n == section || n == "global" || section == "global")
        .any(|(_, m)| keys.iter().any(|k| m.contains_key(*k)))
}

/// The shrunk offset_increment of `section`: 16 MiB / its shrunk numjobs (the largest of any
/// section for [global]), rounded down to a MiB, at least 1 MiB.
fn stride_of(sections: &[(String, BTreeMap<String, String>)], section: &str) -> u64 {
    let numjobs = |m: &BTreeMap<String, String>| {
        m.get("numjobs")
            .and_then(|v| v.parse::<u64>().ok())
            .map(|n| n.clamp(1, 4))
    };
    let global = sections
        .iter()
        .find(|(n, _)| n == "global")
        .and_then(|(_, m)| numjobs(m));
    let n = sections
        .iter()
        .filter(|(n, _)| n == section || (section == "global" && n != "global"))
        .filter_map(|(_, m)| numjobs(m))
        .max()
        .or(global)
        .unwrap_or(1);
    ((SHRUNK / n) >> 20 << 20).max(1 << 20)
}

/// Whether a file limits its jobs' rate (rate=, rate_iops=) and nothing else ends them early
/// (no runtime=, no exitall): such a job may need minutes even shrunk (1mbs_clients reads
/// 16 MiB at 1250 B/s), so it gets a 2 s runtime and is compared as a time-based one.
fn rate_bound(text: &str) -> bool {
    let keys: Vec<String> = text
        .lines()
        .map(|l| l.split([';', '#']).next().unwrap_or("").trim())
        .map(|l| l.split('=').next().unwrap_or("").trim().to_string())
        .collect();
    let has = |k: &str| keys.iter().any(|x| x == k);
    (has("rate") || has("rate_iops")) && !has("runtime") && !has("exitall")
}

/// The file with `runtime=2` as the first line of its first section.
fn with_runtime_cap(text: &str) -> String {
    let mut out = String::new();
    let mut done = false;
    for line in text.lines() {
        out.push_str(line);
        out.push('\n');
        if !done && line.trim_start().starts_with('[') {
            out.push_str("runtime=2\n");
            done = true;
        }
    }
    out
}

/// Whether fio itself picks different blocks or sizes on every run (randrepeat=0): then only
/// the bytes each job moves can be compared, not its I/O counts.
fn unrepeatable(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.split([';', '#']).next().unwrap_or("").replace(' ', "");
        l == "randrepeat=0" || l == "randrepeat=false"
    })
}

fn prepare(dir: &Path, files: &[String]) {
    for f in files {
        let p = dir.join(f);
        let fh = std::fs::File::create(&p).unwrap();
        fh.set_len(SHRUNK).unwrap();
    }
}

/// The jobs of a run's output (`fio_vs::jobs_of`); Err when it holds no JSON with a jobs
/// array (fio could not run the file).
fn jobs_in(out: &[u8]) -> Result<Vec<JobCounts>, String> {
    let v = json(out)?;
    if !v["jobs"].is_array() {
        return Err("no jobs array".into());
    }
    Ok(jobs_of(&v))
}

/// Whether the shrunk file caps its jobs' time (runtime= or timeout=, cut to 1 s).
fn capped(shrunk: &str) -> bool {
    shrunk.lines().any(|l| {
        let l = l.split([';', '#']).next().unwrap_or("").replace(' ', "");
        l.starts_with("runtime=") || l.starts_with("timeout=")
    })
}

/// Whether a job of this JSON ran for (nearly) the whole 1 s cap, i.e. time, not its size,
/// ended it.
fn ran_to_cap(out: &[u8]) -> bool {
    json(out).is_ok_and(|v| {
        v["jobs"].as_array().is_some_and(|jobs| {
            jobs.iter()
                .any(|j| j["job_runtime"].as_u64().is_some_and(|ms| ms >= 950))
        })
    })
}

/// How long fio may take on a shrunk file: 60 s, but 10 s with io_submit_mode=offload, which
/// fio 3.33 never finishes here (fixed-rate-submission and poisson-rate-submission: its job
/// stays in state 5, with or without a runtime=, until fio's own 300 s "appears to be stuck"
/// exit, then "free(): double free detected"), so that waiting longer only costs CI time.
fn fio_limit(shrunk: &str) -> Duration {
    let offload = shrunk.lines().any(|l| {
        let l = l.split([';', '#']).next().unwrap_or("").replace(' ', "");
        l == "io_submit_mode=offload"
    });
    Duration::from_secs(if offload { 10 } else { 60 })
}

/// One example: Ok(note) when fsdelta parses it, runs it shrunk, and (size-based, fio able
/// to run it) matches fio; Err(reason) otherwise.
fn check(name: &str, fio: bool) -> Result<String, String> {
    let text = std::fs::read_to_string(Path::new(EXAMPLES).join(format!("{name}.fio")))
        .map_err(|e| e.to_string())?;
    let (shrunk, files) = shrink(&text);
    let ours = tempfile::tempdir().unwrap();
    prepare(ours.path(), &files);
    let theirs = tempfile::tempdir().unwrap();
    prepare(theirs.path(), &files);
    std::fs::write(ours.path().join("job.fio"), &shrunk).unwrap();
    std::fs::write(theirs.path().join("job.fio"), &shrunk).unwrap();
    // fio runs beside ours, in its own directory (the two share nothing but the machine;
    // every comparison below is of counts, bytes, names and files, none of time): the test
    // takes the longer of the two runs per file rather than their sum.
    let fio_limit = fio_limit(&shrunk);
    let fio_run = fio.then(|| {
        let dir = theirs.path().to_path_buf();
        std::thread::spawn(move || {
            run(
                Command::new("fio")
                    .current_dir(&dir)
                    .args(["--output-format=json", "job.fio"]),
                fio_limit,
            )
        })
    });
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_fsdelta"));
    let ours_result = (|| {
        let out = run(
            Command::new(&bin)
                .current_dir(ours.path())
                .args(["fio", "--parse-only", "job.fio"]),
            Duration::from_secs(20),
        )?;
        if !out.status.success() {
            return Err(format!("--parse-only: {}", first_line(&out.stderr)));
        }
        let out = run(
            Command::new(&bin).current_dir(ours.path()).args([
                "fio",
                "--output-format=json",
                "job.fio",
            ]),
            Duration::from_secs(60),
        )?;
        if !out.status.success() {
            return Err(format!("run: {}", first_line(&out.stderr)));
        }
        Ok(out)
    })();
    // fio's run is waited for whatever ours gave, so that none outlives its directory.
    let fout = fio_run.map(|h| h.join().expect("the fio thread panicked"));
    let out = ours_result?;
    let our_jobs = jobs_in(&out.stdout)?;
    let Some(fout) = fout else {
        return Ok("ran (no fio to compare with)".into());
    };
    let Ok(fout) = fout else {
        return Ok(format!(
            "ran; fio itself does not finish the shrunk file in {} s",
            fio_limit.as_secs()
        ));
    };
    let Ok(fio_jobs) = jobs_in(&fout.stdout) else {
        return Ok(format!(
            "ran; fio itself cannot run the shrunk file ({})",
            first_line(&fout.stderr)
        ));
    };
    fio_vs::same_names_and_files(&our_jobs, &fio_jobs, ours.path(), theirs.path())?;
    let time_based = shrunk.lines().any(|l| l.trim().starts_with("time_based"));
    if time_based {
        return Ok("ran; time-based, names and files match fio".into());
    }
    if rate_bound(&text) {
        return Ok("ran; rate-bound (2 s cap), names and files match fio".into());
    }
    if unrepeatable(&text) {
        // Bytes per job, read and write together: with randrepeat=0 even the mix differs,
        // and with drawn block sizes so does the last I/O's overshoot of the size (fio itself
        // gave 67,166,208, 67,144,704 and 67,189,760 bytes for jesd219's 4 x 16 MiB): equal
        // within 1 %.
        let bytes = |j: &[JobCounts]| {
            j.iter()
                .map(|x| x.2.iter().sum::<u64>())
                .collect::<Vec<_>>()
        };
        let near = |a: u64, b: u64| a.abs_diff(b) * 100 <= b.max(1);
        let (ob, fb) = (bytes(&our_jobs), bytes(&fio_jobs));
        if ob.len() != fb.len() || ob.iter().zip(&fb).any(|(a, b)| !near(*a, *b)) {
            return Err(format!(
                "bytes per job {:?}, fio's {:?}",
                bytes(&our_jobs),
                bytes(&fio_jobs)
            ));
        }
        return Ok(
            "ran; randrepeat=0, names, files and bytes per job (within 1 %) match fio".into(),
        );
    }
    let counts = |j: &[JobCounts]| j.iter().map(|x| x.1).collect::<Vec<_>>();
    if counts(&our_jobs) != counts(&fio_jobs)
        && capped(&shrunk)
        && (ran_to_cap(&out.stdout) || ran_to_cap(&fout.stdout))
    {
        // tiobench-example: 16 MiB of O_DIRECT writes per clone, cut at 1 s; on a busy
        // machine the 1 s runtime (not the size) ends the job, and the counts are the load's.
        return Ok("ran; a job hit the 1 s runtime cap, names and files match fio".into());
    }
    if counts(&our_jobs) != counts(&fio_jobs) {
        return Err(format!(
            "I/O counts {:?}, fio's {:?}",
            counts(&our_jobs),
            counts(&fio_jobs)
        ));
    }
    Ok("ran; names, files and I/O counts match fio".into())
}

#[test]
fn fios_own_examples_run_and_match_fio() {
    let have_examples = Path::new(EXAMPLES).join("fio-seq-read.fio").is_file();
    if !common::require(
        have_examples,
        "the fio-examples package (/usr/share/doc/fio/examples)",
    ) {
        return;
    }
    if !common::require_fio() {
        return;
    }
    let mut results: BTreeMap<&str, Result<String, String>> = BTreeMap::new();
    for name in LOCAL {
        results.insert(name, check(name, true));
    }
    let ok = results.values().filter(|r| r.is_ok()).count();
    let m = LOCAL.len();
    println!("fio examples: {ok} of {m} local-engine example files run and match fio");
    for (name, r) in &results {
        match r {
            Ok(note) => println!("  ok    {name}: {note}"),
            Err(why) => println!("  FAIL  {name}: {why}"),
        }
    }
    let goal = (m * 9).div_ceil(10);
    if ok < goal {
        println!(
            "issue 14's goal is {goal} of {m} (90 %); {} to go",
            goal - ok
        );
    }
    assert!(
        ok >= FLOOR,
        "only {ok} of {m} examples pass; issue 14 asks for {FLOOR} (90 %)"
    );
}

#[test]
fn shrinking_never_leaves_a_device_name() {
    let (t, files) = shrink(
        "[a]\nfilename=/dev/sdb:/dev/nvme0n1\ndirectory=/scratch\nsize=100g\nruntime=60\n[b]\nfilename=/dev/null\n",
    );
    assert!(!t.contains("/dev/"), "{t}");
    assert!(!t.contains("/scratch"), "{t}");
    assert!(t.contains("size=16m") && t.contains("runtime=1"), "{t}");
    assert_eq!(files, vec!["dev-null", "dev-nvme0n1", "dev-sdb"]);
}

#[test]
fn shrinking_caps_a_rate_bound_file_and_the_stride() {
    let (t, _) = shrink("[global]\nrate=1250\n[a]\noffset_increment=124g\n");
    assert_eq!(
        t,
        "[global]\nruntime=2\nrate=1250\n[a]\noffset_increment=16m\nsize=8192k\n"
    );
    // The stride splits the file among the shrunk clones; a region of half a stride each.
    let (t, _) = shrink("[global]\noffset_increment=124g\n[w]\nnumjobs=30\n");
    assert_eq!(
        t,
        "[global]\noffset_increment=4m\nsize=2048k\n[w]\nnumjobs=4\n"
    );
    // fill_device without a size would fill the machine's disk: capped.
    let (t, _) = shrink("[w]\nfill_device=1\n[v]\nrw=read\n");
    assert_eq!(t, "[w]\nfill_device=1\nsize=16m\n[v]\nrw=read\n");
    let (t, _) = shrink("[w]\nsize=1m\nfill_device=1\n");
    assert_eq!(t, "[w]\nsize=1m\nfill_device=1\n");
    // Ended otherwise (a runtime, exitall): left alone.
    let (t, _) = shrink("[a]\nrate_iops=50\nruntime=9\n");
    assert_eq!(t, "[a]\nrate_iops=50\nruntime=1\n");
    let (t, _) = shrink("[a]\nrate=300\nexitall\n");
    assert_eq!(t, "[a]\nrate=300\nexitall\n");
    // A start or a zone past the 16 MiB file: 1 MiB.
    let (t, _) = shrink("[a]\noffset=140660178944\noffset=120k\nzonesize=256M\n");
    assert_eq!(t, "[a]\noffset=1m\noffset=120k\nzonesize=1m\n");
    // Node lists: kept when the machine has the nodes, else the machine's nodes.
    let nodes = machine_nodes();
    let (t, _) = shrink("[a]\nnuma_cpu_nodes=0\nnuma_mem_policy=interleave:0-4095\n");
    assert_eq!(
        t,
        format!("[a]\nnuma_cpu_nodes=0\nnuma_mem_policy=interleave:{nodes}\n")
    );
    assert!(unrepeatable("[a]\nrandrepeat=0 ; fresh seeds\n"));
    assert!(!unrepeatable("[a]\nrandrepeat=1\n"));
}

/// io_uring, libaio, group_reporting and verify jobs: our JSON has exactly real fio 3.33's
/// keys, run live on the same filesystem; the verify job's read-back counts equal fio's.
#[test]
fn json_keys_equal_real_fios_for_async_and_grouped_jobs() {
    if !common::require_fio() {
        return;
    }
    let jobs = [
        "[u]\nioengine=io_uring\niodepth=8\nrw=randread\nsize=4m\ndirect=1\n",
        "[a]\nioengine=libaio\niodepth=8\nrw=randwrite\nsize=4m\ndirect=1\n",
        "[global]\nsize=2m\ngroup_reporting\n[g]\nrw=write\nnumjobs=3\n",
        "[v]\nioengine=libaio\niodepth=16\nrw=randwrite\nsize=4m\ndirect=1\nverify=crc32c\n",
    ];
    for job in jobs {
        let (_ours, o, _theirs, f) = common::run_ours_and_fio(job);
        if job.contains("verify") {
            assert_eq!(
                jobs_in(&o.stdout).unwrap(),
                jobs_in(&f.stdout).unwrap(),
                "{job}"
            );
        }
        let (ok, fk) = (common::json_keys(&o.stdout), common::json_keys(&f.stdout));
        // fsdelta's own two keys (which clock timed the job) are the only ones fio lacks.
        for k in common::OURS_ONLY_KEYS {
            assert!(ok.contains(k), "{job}: no {k}");
        }
        common::assert_keys_as_fios(job, &ok, &fk);
    }
}
