//! The external tools' parsers on real output captured from fs_mark 3.3, dbench 4.00 and
//! fio 3.33 (tests/data/external/, made by running the Debian packages): every fixture parses,
//! its numbers land in the native engines' metric names with the native units and directions,
//! and fio's own derived numbers (iops, bw_bytes, percentiles) are reproduced from its raw ones.

use fsdelta::dbench::external as dbench;
use fsdelta::fio::external as fio;
use fsdelta::fio::import::import_fio_json;
use fsdelta::fsmark::external as fsmark;
use fsdelta::model::{Direction, Metric, Unit};
use serde_json::Value;

fn fixture(name: &str) -> String {
    let p = format!("{}/tests/data/external/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn get<'a>(m: &'a [Metric], name: &str) -> &'a Metric {
    m.iter()
        .find(|x| x.name == name)
        .unwrap_or_else(|| panic!("no metric {name} in {:?}", names(m)))
}

fn names(m: &[Metric]) -> Vec<&str> {
    m.iter().map(|x| x.name.as_str()).collect()
}

fn has(m: &[Metric], name: &str) -> bool {
    m.iter().any(|x| x.name == name)
}

// ---------------------------------------------------------------- fs_mark

#[test]
fn fsmark_three_iterations_two_threads() {
    let p = fsmark::parse(&fixture("fsmark_S1_L3_t2.txt")).unwrap();
    assert_eq!(
        p.command_line.as_deref(),
        Some("fs_mark -d a -s 4096 -n 200 -L 3 -t 2")
    );
    assert_eq!(p.version.as_deref(), Some("3.3"));
    assert_eq!(p.threads, Some(2));
    assert_eq!(
        p.sync_method.as_deref(),
        Some("INBAND FSYNC: fsync() per file in write loop.")
    );
    assert!(!p.verbose);
    let counts: Vec<u64> = p.rows.iter().map(|r| r.count).collect();
    assert_eq!(counts, [400, 800, 1200]);
    assert_eq!(p.rows[1].files_per_sec, 1172.2);
    assert_eq!(p.rows[1].app_overhead_us, 15150);
    assert_eq!(p.rows[0].line, 11);
    let m = p.metrics();
    let v = get(&m, "files_per_sec");
    assert!((v.value - (1327.0 + 1172.2 + 535.0) / 3.0).abs() < 1e-9);
    assert_eq!(
        (v.unit, v.direction),
        (Unit::FilesPerSec, Direction::HigherIsBetter)
    );
    assert_eq!(get(&m, "app_overhead_us").value, 19380.0 / 3.0);
    assert_eq!(get(&m, "app_overhead_us_per_file").value, 19380.0 / 1200.0);
    assert_eq!(get(&m, "files").value, 1200.0);
    assert_eq!(get(&m, "fs_use_pct").value, 73.0);
    assert_eq!(get(&m, "fs_use_pct").unit, Unit::Percent);
    // fs_mark prints no latency without -v, and never percentiles or wall time.
    assert_eq!(m.len(), 5, "{:?}", names(&m));
    assert!(!has(&m, "files_per_sec_wall"));
}

#[test]
fn fsmark_no_sync_zero_size() {
    let p = fsmark::parse(&fixture("fsmark_S0.txt")).unwrap();
    assert_eq!(p.rows.len(), 1);
    assert_eq!(p.rows[0].size, 0);
    assert_eq!(p.threads, Some(1));
    assert!(p.sync_method.as_deref().unwrap().starts_with("NO SYNC"));
    assert_eq!(get(&p.metrics(), "files").value, 300.0);
}

#[test]
fn fsmark_verbose_columns_give_means_and_maxima_of_the_calls_that_happened() {
    // -S 1, -L 2 (files kept): no sync() and no unlink.
    let p = fsmark::parse(&fixture("fsmark_v_2dirs.txt")).unwrap();
    assert!(p.verbose);
    assert_eq!(p.rows.len(), 2);
    let s = p.rows[0].syscalls.unwrap();
    assert_eq!((s[0].min_us, s[0].avg_us, s[0].max_us), (76, 126, 3441));
    let m = p.metrics();
    let mean = get(&m, "create_lat_ns_mean");
    assert_eq!(mean.value, (126.0 + 206.0) / 2.0 * 1e3);
    assert_eq!(
        (mean.unit, mean.direction),
        (Unit::Nanoseconds, Direction::LowerIsBetter)
    );
    assert_eq!(get(&m, "create_lat_ns_max").value, 5116e3);
    assert_eq!(get(&m, "fsync_lat_ns_max").value, 12385e3);
    assert!(has(&m, "write_lat_ns_mean") && has(&m, "close_lat_ns_max"));
    for absent in [
        "sync_lat_ns_mean",
        "unlink_lat_ns_mean",
        "create_lat_ns_p99",
    ] {
        assert!(!has(&m, absent), "{absent}");
    }

    // -S 2: fs_mark records only an average for the after-loop fsync and sync.
    let p = fsmark::parse(&fixture("fsmark_v_S2_D4.txt")).unwrap();
    let m = p.metrics();
    assert_eq!(get(&m, "fsync_lat_ns_mean").value, 25e3);
    assert_eq!(get(&m, "sync_lat_ns_mean").value, 35442e3);
    assert!(!has(&m, "fsync_lat_ns_max") && !has(&m, "sync_lat_ns_max"));
    assert_eq!(get(&m, "unlink_lat_ns_max").value, 19234e3);

    // -S 3 without -L: files are unlinked.
    let p = fsmark::parse(&fixture("fsmark_v_S3_unlink.txt")).unwrap();
    let m = p.metrics();
    assert_eq!(get(&m, "unlink_lat_ns_mean").value, 2440e3);
    assert_eq!(get(&m, "fsync_lat_ns_max").value, 21663e3);
}

#[test]
fn fsmark_fill_mode_ends_with_its_free_space_line() {
    let p = fsmark::parse(&fixture("fsmark_F_fill.txt")).unwrap();
    assert_eq!(p.rows.len(), 6);
    assert_eq!(
        p.fill_stopped.as_deref(),
        Some("Insufficient free space in f to create 10 new files, exiting")
    );
    let m = p.metrics();
    assert_eq!(get(&m, "files").value, 60.0);
    assert_eq!(get(&m, "fs_use_pct").value, 93.0);
    let mut more = fixture("fsmark_F_fill.txt");
    more.push_str("    99           70        65536      29069.8               36\n");
    let e = fsmark::parse(&more).unwrap_err();
    assert_eq!(e.line, 18, "{e}");
}

#[test]
fn fsmark_refusal_is_the_error() {
    let e = fsmark::parse(&fixture("fsmark_error_long_dir.txt")).unwrap_err();
    assert_eq!(e.line, 1);
    assert!(e.message.contains("directory pathname too long"), "{e}");
}

// ---------------------------------------------------------------- dbench

#[test]
fn dbench_stock_loadfile_two_clients() {
    let p = dbench::parse(&fixture("dbench_t3_c2.txt")).unwrap();
    assert_eq!(p.version.as_deref(), Some("4.00"));
    assert_eq!(p.loadfile.as_deref(), Some("/usr/share/dbench/client.txt"));
    assert_eq!(p.ticks.len(), 2);
    assert_eq!(p.ticks[1].mb_s, 111.05);
    assert_eq!(p.ticks[1].latency_ms, 260.074);
    assert_eq!(p.ops.len(), 16, "every class but Rmdir ran");
    assert_eq!((p.clients, p.procs), (2, 2));
    let m = p.metrics();
    let t = get(&m, "throughput_mb_s");
    assert_eq!(t.value, 111.049);
    assert_eq!(
        (t.unit, t.direction),
        (Unit::MBPerSec, Direction::HigherIsBetter)
    );
    assert_eq!(get(&m, "max_latency_ms").value, 260.074);
    assert_eq!(get(&m, "ntcreatex_count").value, 12204.0);
    assert_eq!(get(&m, "ntcreatex_count").direction, Direction::Neutral);
    assert_eq!(get(&m, "flush_avg_ms").value, 4.112);
    assert_eq!(get(&m, "flush_max_ms").unit, Unit::Milliseconds);
    assert_eq!(get(&m, "qpathinfo_max_ms").value, 12.254);
    assert!(!has(&m, "rmdir_count"));
    assert_eq!(m.len(), 2 + 16 * 3);
}

#[test]
fn dbench_other_runs() {
    for (f, clients, throughput) in [
        ("dbench_t2_c1_fsdelta_loadfile.txt", 1, 40.9055),
        ("dbench_t3_c3_F_S.txt", 3, f64::NAN),
        ("dbench_t6_c2_warmup.txt", 2, f64::NAN),
        ("dbench_t2_c1_s_S.txt", 1, 11.3765),
    ] {
        let p = dbench::parse(&fixture(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!(p.clients, clients, "{f}");
        if !throughput.is_nan() {
            assert_eq!(p.throughput_mb_s, throughput, "{f}");
        }
        // dbench's Throughput is the last execute tick's rate.
        let last = p.ticks.last().unwrap();
        assert!(
            (last.mb_s - p.throughput_mb_s).abs() < 0.006,
            "{f}: {} vs {}",
            last.mb_s,
            p.throughput_mb_s
        );
        assert!(p.ops.iter().all(|o| o.count > 0));
    }
}

#[test]
fn dbench_sync_flags_are_read_from_the_throughput_line() {
    let p = dbench::parse(&fixture("dbench_t3_c3_F_S.txt")).unwrap();
    assert!(p.sync_dirs && !p.sync_open);
    assert_eq!(p.max_latency_ms, 41.844);
    let p = dbench::parse(&fixture("dbench_t2_c1_s_S.txt")).unwrap();
    assert!(p.sync_dirs && p.sync_open);
    assert_eq!(p.throughput_mb_s, 11.3765);
    let p = dbench::parse(&fixture("dbench_t3_c2.txt")).unwrap();
    assert!(!p.sync_dirs && !p.sync_open);
}

#[test]
fn dbench_fatal_error_is_the_error() {
    let e = dbench::parse(&fixture("dbench_error_no_loadfile.txt")).unwrap_err();
    assert_eq!(e.line, 4);
    assert!(e.message.contains("error opening '/nonexistent'"), "{e}");
}

// ---------------------------------------------------------------- fio

/// fio's own numbers for one job and direction, read straight from the JSON.
fn raw(fixture_text: &str, job: usize, dir: &str) -> Value {
    let start = fixture_text.find('{').unwrap();
    let v: Value = serde_json::from_str(&fixture_text[start..]).unwrap();
    v["jobs"][job][dir].clone()
}

#[test]
fn fio_single_jobs_reproduce_fios_own_numbers() {
    for (f, dirs) in [
        ("fio_seqwrite.json", &["write"][..]),
        ("fio_randread.json", &["read"][..]),
        ("fio_randrw.json", &["read", "write"][..]),
        ("fio_randrw.jsonplus.json", &["read", "write"][..]),
        ("fio_group_reporting.json", &["write"][..]),
        ("fio_group_reporting.jsonplus.json", &["write"][..]),
        ("fio_note_prefix.json", &["write"][..]),
    ] {
        let text = fixture(f);
        let p = fio::parse(&text).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!(p.version, "fio-3.33");
        assert_eq!(p.jobs.len(), 1, "{f}");
        let m = p.measurements().metrics;
        for d in dirs {
            let r = raw(&text, 0, d);
            let iops = get(&m, &format!("{d}_iops"));
            assert!(
                (iops.value - r["iops"].as_f64().unwrap()).abs() < 1e-3,
                "{f} {d}"
            );
            assert_eq!(
                (iops.unit, iops.direction),
                (Unit::OpsPerSec, Direction::HigherIsBetter)
            );
            assert_eq!(
                get(&m, &format!("{d}_bw_bytes")).value,
                r["bw_bytes"].as_f64().unwrap(),
                "{f} {d}"
            );
            assert_eq!(
                get(&m, &format!("{d}_io_kbytes")).value,
                r["io_kbytes"].as_f64().unwrap()
            );
            for (p, key) in [("p50", "50.000000"), ("p99", "99.000000")] {
                assert_eq!(
                    get(&m, &format!("{d}_clat_ns_{p}")).value,
                    r["clat_ns"]["percentile"][key].as_f64().unwrap(),
                    "{f} {d} {p}"
                );
            }
            assert_eq!(
                get(&m, &format!("{d}_clat_ns_max")).value,
                r["clat_ns"]["max"].as_f64().unwrap()
            );
            assert!(
                (get(&m, &format!("{d}_lat_ns_mean")).value
                    - r["lat_ns"]["mean"].as_f64().unwrap())
                .abs()
                    < 1e-6
            );
            assert_eq!(
                get(&m, &format!("{d}_lat_ns_min")).value,
                r["lat_ns"]["min"].as_f64().unwrap()
            );
        }
        if dirs.len() == 1 {
            let other = if dirs[0] == "read" { "write" } else { "read" };
            assert!(
                m.iter().all(|x| !x.name.starts_with(other)),
                "{f}: {:?}",
                names(&m)
            );
        }
        assert_eq!(get(&m, "usr_cpu").unit, Unit::Percent);
        assert_eq!(get(&m, "elapsed").unit, Unit::Seconds);
    }
}

#[test]
fn fio_text_before_the_json_is_skipped() {
    let p = fio::parse(&fixture("fio_note_prefix.json")).unwrap();
    assert_eq!(p.json_line, 2);
}

#[test]
fn fio_json_plus_bins_rebuild_fios_histogram() {
    let text = fixture("fio_randrw.jsonplus.json");
    let m = fio::parse(&text).unwrap().measurements();
    let h = m
        .histograms
        .iter()
        .find(|h| h.name == "read_clat_ns")
        .expect("read_clat_ns histogram from json+ bins");
    let r = raw(&text, 0, "read");
    assert_eq!(h.count, r["clat_ns"]["N"].as_u64().unwrap());
    assert_eq!(h.min, r["clat_ns"]["min"].as_u64().unwrap());
    assert_eq!(h.max, r["clat_ns"]["max"].as_u64().unwrap());
    assert_eq!(h.layout, "fio-loglinear-6x29");
    // Every one of fio's printed percentiles comes back out of the rebuilt histogram.
    let rebuilt = fsdelta::probe::histogram::Histogram::from_record(h).unwrap();
    for (k, v) in r["clat_ns"]["percentile"].as_object().unwrap() {
        let p: f64 = k.parse().unwrap();
        assert_eq!(rebuilt.percentile(p), v.as_u64(), "p{k}");
    }
    // Plain json has no bins, hence no histogram.
    assert!(
        fio::parse(&fixture("fio_randrw.json"))
            .unwrap()
            .measurements()
            .histograms
            .is_empty()
    );
}

#[test]
fn fio_several_jobs_merge_like_the_native_engine() {
    for f in ["fio_multi_jobs.json", "fio_multi_jobs.jsonplus.json"] {
        let text = fixture(f);
        let p = fio::parse(&text).unwrap();
        assert_eq!(p.jobs.len(), 3);
        let groups: Vec<u64> = p.jobs.iter().map(|j| j.groupid).collect();
        assert_eq!(groups, [0, 1, 1]);
        let m = p.measurements().metrics;
        // Sums of bytes, the longest runtime.
        let io: u64 = (0..3)
            .map(|j| raw(&text, j, "read")["io_bytes"].as_u64().unwrap())
            .sum();
        let rt = (0..3)
            .map(|j| raw(&text, j, "read")["runtime"].as_u64().unwrap())
            .max()
            .unwrap();
        assert_eq!(get(&m, "read_io_kbytes").value, (io >> 10) as f64);
        assert_eq!(
            get(&m, "read_bw_bytes").value,
            (io as u128 * 1000 / rt as u128) as f64
        );
        let maxima = (0..3)
            .map(|j| raw(&text, j, "read")["clat_ns"]["max"].as_u64().unwrap())
            .max()
            .unwrap();
        assert_eq!(get(&m, "read_clat_ns_max").value, maxima as f64);
        assert!(has(&m, "write_iops"));
        let plus = f.contains("jsonplus");
        // Percentiles of several jobs exist only where fio's histograms were printed.
        assert_eq!(has(&m, "read_clat_ns_p99"), plus, "{f}");
        assert_eq!(has(&m, "read_clat_ns_p50"), plus, "{f}");
        // The single write job's percentiles are fio's own either way.
        let w = raw(&text, 0, "write");
        assert_eq!(
            get(&m, "write_clat_ns_p99").value,
            w["clat_ns"]["percentile"]["99.000000"].as_f64().unwrap()
        );
    }
}

#[test]
fn fio_group_reporting_over_mixed_jobs_skips_fios_empty_entry() {
    // m and n (2 clones) share group 0; group_reporting merges all three into the entry named
    // m, and fio 3.33 then prints an empty entry without a jobname, which is no job.
    let text = fixture("fio_group_mixed.jsonplus.json");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["jobs"].as_array().unwrap().len(), 2);
    assert!(v["jobs"][1].get("jobname").is_none());
    let p = fio::parse(&text).unwrap();
    assert_eq!(p.jobs.len(), 1);
    assert_eq!(p.jobs[0].name, "m");
    let m = p.measurements().metrics;
    assert!(has(&m, "read_clat_ns_p99") && has(&m, "write_clat_ns_p99"));
    // An entry without a jobname that did I/O is not fio's placeholder: an error.
    let bad = text.replacen("\"jobname\" : \"m\",", "", 1);
    assert_ne!(bad, text);
    let e = fio::parse(&bad).unwrap_err();
    assert!(e.message.contains("jobs[0].jobname: missing"), "{e}");
}

#[test]
fn fio_import_gives_one_sample_per_reported_job() {
    let s = import_fio_json(&fixture("fio_multi_jobs.json")).unwrap();
    let tests: Vec<&str> = s.iter().map(|x| x.test.as_str()).collect();
    assert_eq!(tests, ["w", "r", "rr"]);
    assert_eq!(
        s[1].workload,
        "fio --bs=16k --invalidate=0 --size=2m --name=r --filename=w.0.0 --rw=read"
    );
    assert!(has(&s[0].metrics, "write_iops") && !has(&s[0].metrics, "read_iops"));
    assert!(has(&s[2].metrics, "read_clat_ns_p99"));
    assert!(
        s.iter()
            .all(|x| x.error == 0 && x.fio_version == "fio-3.33")
    );
    // started_at = when fio wrote the results minus the job's elapsed seconds.
    let text = fixture("fio_multi_jobs.json");
    let doc: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
    let expect =
        doc["timestamp_ms"].as_i64().unwrap() - 1000 * doc["jobs"][0]["elapsed"].as_i64().unwrap();
    assert_eq!(s[0].started_at.unwrap().timestamp_millis(), expect);
    assert_eq!(s[0].duration_s, doc["jobs"][0]["elapsed"].as_f64().unwrap());

    let s = import_fio_json(&fixture("fio_group_reporting.json")).unwrap();
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].test, "writers");
    assert!(s[0].workload.contains("--numjobs=2"), "{}", s[0].workload);

    let s = import_fio_json(&fixture("fio_numjobs2.json")).unwrap();
    let tests: Vec<&str> = s.iter().map(|x| x.test.as_str()).collect();
    assert_eq!(tests, ["clones.0", "clones.1"]);
    assert_eq!(get(&s[1].metrics, "write_io_kbytes").value, 1024.0);

    let s = import_fio_json(&fixture("fio_randrw.jsonplus.json")).unwrap();
    assert!(s[0].histograms.iter().any(|h| h.name == "write_clat_ns"));
    let sample =
        s[0].clone()
            .into_new_sample("imported", 1, Default::default(), chrono::Utc::now());
    assert_eq!(sample.test, "randrw");
    assert_eq!(sample.status, fsdelta::model::SampleStatus::Ok);
    assert_eq!(sample.metrics, s[0].metrics);
}
