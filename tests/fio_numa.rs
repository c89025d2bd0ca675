//! End-to-end tests of numa_cpu_nodes= and numa_mem_policy= under `fsdelta fio`: a job placed
//! on node 0 runs and moves fio 3.33's counts, and a node list naming a node the machine lacks
//! is refused before anything runs, as fio refuses it, with fio's words (also by
//! `--parse-only`, where fio's dry run skips the check).

mod common;

use std::path::Path;

/// The nodes this process may use (Mems_allowed_list), highest last.
fn nodes() -> Vec<u32> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Mems_allowed_list:"))
        .expect("Mems_allowed_list in /proc/self/status")
        .trim()
        .to_string();
    let mut v = Vec::new();
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => v.extend(a.parse::<u32>().unwrap()..=b.parse().unwrap()),
            None => v.push(part.parse().unwrap()),
        }
    }
    v
}

#[test]
fn node0_jobs_count_as_fio() {
    if !common::require(
        Path::new("/usr/bin/fio").exists(),
        "fio 3.33 (/usr/bin/fio) to compare with",
    ) {
        return;
    }
    for policy in ["bind:0", "interleave:0", "prefer:0", "local", "default"] {
        let job = format!(
            "[j]\nioengine=psync\nrw=randread\nbs=64k\nsize=2m\nfilename=f\nnuma_cpu_nodes=0\nnuma_mem_policy={policy}\n"
        );
        let ours = tempfile::tempdir().unwrap();
        let theirs = tempfile::tempdir().unwrap();
        let mine = common::fio_counts(&common::run_fsdelta_fio(ours.path(), &job), 0);
        let fio = common::fio_counts(&common::run_real_fio(theirs.path(), &job), 0);
        assert_eq!(mine, fio, "numa_mem_policy={policy}");
        assert_eq!(
            mine[0].0, 32,
            "numa_mem_policy={policy}: 2 MiB in 64 KiB reads"
        );
    }
}

#[test]
fn a_missing_node_is_refused_as_fio_refuses_it() {
    let missing = nodes().last().copied().unwrap_or(0) + 1;
    for (opt, libnuma) in [
        (format!("numa_cpu_nodes={missing}"), "is out of range"),
        (format!("numa_cpu_nodes=0-{missing}"), "out of range"),
        (format!("numa_mem_policy=bind:{missing}"), "is out of range"),
        (
            format!("numa_mem_policy=interleave:0-{missing}"),
            "out of range",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let job = format!("[j]\nrw=read\nsize=1m\nfilename=f\n{opt}\n");
        std::fs::write(dir.path().join("job.fio"), &job).unwrap();
        let out = assert_cmd::Command::cargo_bin("fsdelta")
            .unwrap()
            .current_dir(dir.path())
            .args(["fio", "--parse-only", "job.fio"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{opt}: accepted");
        assert!(err.contains("job.fio:5:"), "{opt}: no file and line: {err}");
        assert!(
            err.contains(&format!("node argument {missing} {libnuma}")),
            "{opt}: {err}"
        );
        assert!(
            !dir.path().join("f").exists(),
            "{opt}: the file was laid out"
        );
        if Path::new("/usr/bin/fio").exists() {
            // fio's --parse-only is a dry run that skips this check; run for real, fio drops
            // the job and runs nothing.
            let fio = std::process::Command::new("fio")
                .current_dir(dir.path())
                .args(["--output-format=terse", "job.fio"])
                .output()
                .unwrap();
            let ferr = String::from_utf8_lossy(&fio.stderr);
            assert!(!fio.status.success(), "{opt}: fio ran it");
            assert!(
                ferr.contains(&format!("node argument {missing} {libnuma}"))
                    && ferr.contains("numa_parse_nodestring failed"),
                "{opt}: fio said {ferr}"
            );
            assert!(
                !dir.path().join("f").exists(),
                "{opt}: fio laid the file out"
            );
        }
    }
}
