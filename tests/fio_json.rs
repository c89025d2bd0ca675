//! The JSON of `fsdelta fio` must be readable by code written for fio 3.33's JSON.
//!
//! `read_fio_json` below is such code: it reads the fields fsperf-style consumers use and fails
//! on any that is missing. It is run on JSON captured from Debian's fio 3.33
//! (tests/data/fio/*.json, from the job files beside them) and on ours for the same job files,
//! and the key structure of the two is compared.

mod common;

use fsdelta::fio::engine::FioWorkload;
use fsdelta::fio::jobfile::{self, SystemSources};
use fsdelta::workload::{CancelToken, NoProgress, RunContext};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// What a consumer takes from one job's direction.
#[derive(Debug)]
#[allow(dead_code)]
struct DirSummary {
    io_bytes: u64,
    io_kbytes: u64,
    bw_bytes: u64,
    bw: u64,
    iops: f64,
    runtime: u64,
    total_ios: u64,
    clat_n: u64,
    clat_p99: Option<u64>,
    lat_min: u64,
    lat_max: u64,
    lat_mean: f64,
}

#[derive(Debug)]
#[allow(dead_code)]
struct JobSummary {
    name: String,
    read: DirSummary,
    write: DirSummary,
    usr_cpu: f64,
    sys_cpu: f64,
    job_runtime: u64,
}

fn field<'a>(v: &'a Value, path: &str) -> Result<&'a Value, String> {
    let mut cur = v;
    for part in path.split('.') {
        cur = cur
            .get(part)
            .ok_or_else(|| format!("missing field '{path}' (at '{part}')"))?;
    }
    Ok(cur)
}

fn u(v: &Value, path: &str) -> Result<u64, String> {
    field(v, path)?
        .as_u64()
        .ok_or_else(|| format!("'{path}' is not an unsigned integer"))
}

fn f(v: &Value, path: &str) -> Result<f64, String> {
    field(v, path)?
        .as_f64()
        .ok_or_else(|| format!("'{path}' is not a number"))
}

/// A reader written for fio's JSON: skips any text before the first '{', then demands every
/// field a consumer relies on.
fn read_fio_json(text: &str) -> Result<(String, Vec<JobSummary>), String> {
    let start = text.find('{').ok_or("no JSON object")?;
    let doc: Value = serde_json::from_str(&text[start..]).map_err(|e| e.to_string())?;
    let version = field(&doc, "fio version")?
        .as_str()
        .ok_or("fio version is not a string")?
        .to_string();
    // fio omits disk_util when it has no device counters (filecreate, tmpfs), so a reader
    // must not demand it; when present it is a list.
    if let Some(d) = doc.get("disk_util") {
        d.as_array().ok_or("disk_util is not a list")?;
    }
    let jobs = field(&doc, "jobs")?
        .as_array()
        .ok_or("jobs is not a list")?;
    let mut out = Vec::new();
    for j in jobs {
        let dir = |d: &str| -> Result<DirSummary, String> {
            let x = field(j, d)?;
            for lat in ["slat_ns", "clat_ns", "lat_ns"] {
                for k in ["min", "max", "mean", "stddev", "N"] {
                    field(x, &format!("{lat}.{k}"))?;
                }
            }
            for k in [
                "bw_min",
                "bw_max",
                "bw_mean",
                "bw_agg",
                "bw_dev",
                "bw_samples",
                "iops_min",
                "iops_max",
                "iops_mean",
                "iops_stddev",
                "iops_samples",
                "short_ios",
                "drop_ios",
            ] {
                field(x, k)?;
            }
            let clat_n = u(x, "clat_ns.N")?;
            let clat_p99 = if clat_n > 0 {
                let p = field(x, "clat_ns.percentile")?;
                Some(
                    p.get("99.000000")
                        .and_then(Value::as_u64)
                        .ok_or("missing clat_ns percentile 99.000000")?,
                )
            } else {
                None
            };
            Ok(DirSummary {
                io_bytes: u(x, "io_bytes")?,
                io_kbytes: u(x, "io_kbytes")?,
                bw_bytes: u(x, "bw_bytes")?,
                bw: u(x, "bw")?,
                iops: f(x, "iops")?,
                runtime: u(x, "runtime")?,
                total_ios: u(x, "total_ios")?,
                clat_n,
                clat_p99,
                lat_min: u(x, "lat_ns.min")?,
                lat_max: u(x, "lat_ns.max")?,
                lat_mean: f(x, "lat_ns.mean")?,
            })
        };
        dir("trim")?;
        for k in [
            "groupid",
            "error",
            "elapsed",
            "ctx",
            "majf",
            "minf",
            "sync.total_ios",
            "sync.lat_ns.N",
            "iodepth_level.1",
            "iodepth_submit.4",
            "iodepth_complete.4",
            "latency_ns.1000",
            "latency_us.1000",
            "latency_ms.>=2000",
            "latency_depth",
            "latency_target",
            "latency_percentile",
            "latency_window",
            "job options",
        ] {
            field(j, k)?;
        }
        out.push(JobSummary {
            name: field(j, "jobname")?
                .as_str()
                .ok_or("jobname is not a string")?
                .to_string(),
            read: dir("read")?,
            write: dir("write")?,
            usr_cpu: f(j, "usr_cpu")?,
            sys_cpu: f(j, "sys_cpu")?,
            job_runtime: u(j, "job_runtime")?,
        });
    }
    Ok((version, out))
}

fn data(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fio")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn our_json(job_file: &str, dir: &Path) -> String {
    let text = data(job_file);
    let set = jobfile::parse_job_text(&text, job_file, &SystemSources).unwrap();
    let cancel = CancelToken::new();
    let run = FioWorkload::new(set)
        .execute(&RunContext {
            dir,
            cancel: &cancel,
            progress: &NoProgress,
        })
        .unwrap();
    fsdelta::fio::output::json(&run)
}

fn paths_of(text: &str) -> BTreeSet<String> {
    common::json_keys(text.as_bytes())
}

#[test]
fn the_reader_reads_real_fio_3_33_json() {
    let (version, jobs) = read_fio_json(&data("randrw.json")).unwrap();
    assert_eq!(version, "fio-3.33");
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].write.io_bytes, 4 << 20);
    assert_eq!(jobs[1].read.io_bytes + jobs[1].write.io_bytes, 4 << 20);
    let (_, fc) = read_fio_json(&data("filecreate.json")).unwrap();
    assert_eq!(fc[0].write.clat_n, 200);
}

#[test]
fn the_reader_reads_ours_for_the_same_job_file() {
    let dir = tempfile::tempdir().unwrap();
    let ours = our_json("randrw.fio", dir.path());
    let (version, jobs) = read_fio_json(&ours).unwrap_or_else(|e| panic!("{e}\n{ours}"));
    assert!(version.starts_with("fsdelta-fio-"), "{version}");
    assert!(version.ends_with("(fio 3.33 compatible)"));
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0].name, "seqwrite");
    let w = &jobs[0].write;
    assert_eq!(w.io_bytes, 4 << 20);
    assert_eq!(w.io_kbytes, 4096);
    assert_eq!(w.total_ios, 1024);
    assert_eq!(w.clat_n, 1024);
    assert_eq!(w.bw_bytes, 1000 * w.io_bytes / w.runtime);
    assert_eq!(w.bw, w.bw_bytes / 1024);
    assert!((w.iops - 1000.0 * w.total_ios as f64 / w.runtime as f64).abs() < 1e-6);
    assert!(w.lat_min <= w.lat_max && w.lat_mean > 0.0);
    assert!(w.clat_p99.is_some());
    let m = &jobs[1];
    assert_eq!(m.read.io_bytes + m.write.io_bytes, 4 << 20);
    assert!(m.usr_cpu >= 0.0 && m.sys_cpu >= 0.0);
    let _ = m.job_runtime;
}

#[test]
fn our_json_has_every_key_real_fio_has_for_the_same_job() {
    for (job, fixture) in [
        ("randrw.fio", "randrw.json"),
        ("filecreate.fio", "filecreate.json"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let fio_keys = paths_of(&data(fixture));
        let our_keys = paths_of(&our_json(job, dir.path()));
        // disk_util is there when the files are on a block device: fio ran the fixture on one;
        // the temporary directory here may be tmpfs.
        let on_block_device = !fsdelta::fio::engine::disk::DiskWatch::start([dir.path()])
            .finish()
            .is_empty();
        let missing: Vec<&String> = fio_keys
            .difference(&our_keys)
            .filter(|k| on_block_device || k.as_str() != ".disk_util")
            .collect();
        assert!(
            missing.is_empty(),
            "{job}: keys fio has and we lack: {missing:#?}"
        );
        // fsdelta's own keys (documented in docs/fio.md): which clock timed the job.
        let ours_only = common::OURS_ONLY_KEYS;
        for k in ours_only {
            assert!(our_keys.contains(k), "{job}: {k} missing");
        }
        let extra: Vec<&String> = our_keys
            .difference(&fio_keys)
            .filter(|k| !ours_only.contains(&k.as_str()))
            .collect();
        assert!(
            extra.is_empty(),
            "{job}: keys we have and fio lacks: {extra:#?}"
        );
    }
}

#[test]
fn the_filecreate_engine_reports_as_fio_does() {
    let dir = tempfile::tempdir().unwrap();
    let (_, ours) = read_fio_json(&our_json("filecreate.fio", dir.path())).unwrap();
    let (_, theirs) = read_fio_json(&data("filecreate.json")).unwrap();
    let (a, b) = (&ours[0].write, &theirs[0].write);
    assert_eq!(a.io_bytes, b.io_bytes);
    assert_eq!(a.total_ios, b.total_ios);
    assert_eq!(a.clat_n, b.clat_n);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 200);
}

/// With group_reporting the group's one JSON entry lists the `job options` of its last job,
/// as fio 3.33's __show_run_stats does (it keeps each merged job's option list; fio's t0002
/// jobs showed it): the same object under both tools.
#[test]
fn a_groups_entry_lists_its_last_jobs_options_as_fio() {
    if !common::require_fio() {
        return;
    }
    let job = "[global]\nsize=64k\nfilename=f\ngroup_reporting=1\n[first]\nrw=write\n[second]\nrw=read\nbs=8k\noffset=0\n";
    let mut seen = Vec::new();
    for tool in ["fio", "fsdelta"] {
        let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let o = common::tool_json(tool, d.path(), job);
        assert!(
            o.status.success(),
            "{tool}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v = common::json_of(&o.stdout);
        let jobs = v["jobs"].as_array().unwrap().clone();
        assert_eq!(jobs.len(), 1, "{tool}: one entry for the group");
        seen.push((jobs[0]["jobname"].clone(), jobs[0]["job options"].clone()));
    }
    assert_eq!(seen[1], seen[0], "fsdelta vs fio");
    assert_eq!(seen[0].0, "first");
    assert_eq!(seen[0].1["bs"], "8k");
}
