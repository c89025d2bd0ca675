//! End-to-end test of erofs targets (issue 16 item 3): an image built by mkfs.erofs from a
//! tree, attached to a loop device, mounted read-only, read by a command test and by fio read
//! jobs; the facts name the image and mkfs; a writing test (fs_mark, a fio write job) is refused
//! before the run; nothing is left behind; an image built with lz4hc has a `compress_ratio`
//! above 1.5 where one built without has exactly 1.0 (issue 39), and `compare` says so.

mod common;

use common::{fsdelta, is_root, require};
use std::path::{Path, PathBuf};

fn erofs_usable() -> bool {
    let has_mkfs = std::process::Command::new("mkfs.erofs")
        .arg("-V")
        .output()
        .is_ok();
    let _ = std::process::Command::new("modprobe").arg("erofs").status();
    let in_kernel = std::fs::read_to_string("/proc/filesystems")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().last() == Some("erofs"));
    require(
        is_root() && has_mkfs && in_kernel && Path::new("/dev/loop-control").exists(),
        "root, loop devices, erofs in the kernel and mkfs.erofs (Debian erofs-utils)",
    )
}

/// `tmp`/c.toml: the erofs configuration `name`, an image of `src` with the `key = "value"` line
/// `extra`, on the scratch location `tmp`/scratch; (scratch, configuration file).
fn erofs_config(tmp: &Path, name: &str, src: &Path, extra: &str) -> (PathBuf, PathBuf) {
    let scratch = tmp.join("scratch");
    let cfg = tmp.join("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "scratch = \"{}\"\n[[config]]\nname = \"{name}\"\nfs = \"erofs\"\nsource = \"{}\"\n{extra}\n",
            scratch.display(),
            src.display()
        ),
    )
    .unwrap();
    (scratch, cfg)
}

/// `run -n <n> --quiet --config <cfg> --suite <suite>` on `db`, which must succeed; the run as
/// `export latest` shows it.
fn run_and_export(db: &Path, n: &str, cfg: &Path, suite: &Path) -> serde_json::Value {
    fsdelta(db)
        .args(["run", "-n", n, "--quiet", "--config"])
        .arg(cfg)
        .arg("--suite")
        .arg(suite)
        .assert()
        .success();
    common::export_latest(fsdelta(db))
}

#[test]
fn an_erofs_image_is_built_from_a_tree_mounted_read_only_and_read() {
    if !erofs_usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("tree");
    std::fs::create_dir_all(src.join("lib")).unwrap();
    let mut total = 0;
    for i in 0..20 {
        let body: String = (0..2000).map(|j| format!("line {i} {j}\n")).collect();
        total += body.len();
        std::fs::write(src.join("lib").join(format!("f{i}.txt")), body).unwrap();
    }
    let (scratch, cfg) = erofs_config(tmp.path(), "lz4hc", &src, "mkfs = \"-zlz4hc\"");
    let suite = tmp.path().join("s.toml");
    std::fs::write(
        &suite,
        "[[test]]\nname = \"readall\"\nworkload = \"command\"\n\
         command = \"cat lib/*.txt | wc -c; touch x 2>/dev/null && echo WRITABLE || echo readonly\"\n\
         [[test.metric]]\nname = \"bytes\"\nregex = '^(\\d+)'\nunit = \"B\"\ndirection = \"neutral\"\n",
    )
    .unwrap();
    let db = tmp.path().join("r.sqlite");
    let doc = run_and_export(&db, "2", &cfg, &suite);
    let samples = doc["runs"][0]["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2);
    for s in samples {
        assert_eq!(s["status"], "ok", "{s}");
        let bytes = s["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "bytes")
            .unwrap();
        assert_eq!(bytes["value"].as_f64().unwrap() as usize, total);
        let facts = &s["facts"];
        assert_eq!(facts["fs_type"], "erofs", "{facts}");
        assert!(
            facts["mount_options"].as_str().unwrap().starts_with("ro"),
            "{facts}"
        );
        let extra = &facts["extra"];
        let mkfs = extra["mkfs_command"].as_str().unwrap();
        assert!(
            mkfs.contains("mkfs.erofs -zlz4hc") && mkfs.ends_with(&src.display().to_string()),
            "{mkfs}"
        );
        assert_eq!(extra["image_source"], src.display().to_string());
        assert!(
            extra["mkfs_version"]
                .as_str()
                .unwrap()
                .contains("mkfs.erofs")
        );
    }
    // The command saw a read-only filesystem (its raw output is kept).
    let raw = common::show_raw(&db);
    assert!(
        raw.contains(&format!("stdout:\n{total}\nreadonly\n")),
        "{raw}"
    );
    // Nothing left: no mount, no loop device, no image.
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(!mounts.contains(&scratch.display().to_string()), "{mounts}");
    assert_eq!(
        std::fs::read_dir(&scratch).map(|d| d.count()).unwrap_or(0),
        0,
        "the scratch location is empty"
    );
    // The tree is untouched.
    assert_eq!(std::fs::read_dir(src.join("lib")).unwrap().count(), 20);

    // A test that writes is refused before the run is recorded.
    fsdelta(&db)
        .args(["run", "-n", "1", "--test", "emptyfiles", "--config"])
        .arg(&cfg)
        .assert()
        .failure()
        .stderr(predicates::str::contains("read-only"))
        .stderr(predicates::str::contains("only command tests"));
    let list = fsdelta(&db).args(["list"]).output().unwrap();
    let list = String::from_utf8(list.stdout).unwrap();
    assert_eq!(
        list.lines()
            .filter(|l| l.contains("complete") || l.contains("running"))
            .count(),
        1,
        "{list}"
    );
}

#[test]
fn fio_jobs_that_only_read_run_on_an_erofs_image_and_a_writing_job_is_refused() {
    if !erofs_usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("tree");
    std::fs::create_dir_all(&src).unwrap();
    // 1 MiB of varied bytes (a deterministic pattern: erofs packs it as it is).
    let body: Vec<u8> = (0..(1u32 << 20))
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(src.join("data.bin"), &body).unwrap();
    let (scratch, cfg) = erofs_config(tmp.path(), "plain", &src, "fresh = \"sample\"");
    // No size=: each job covers the existing file (1 MiB), as fio does.
    let suite = tmp.path().join("s.toml");
    std::fs::write(
        &suite,
        "[[test]]\nname = \"seqread\"\nworkload = \"fio\"\n\
         job = \"\"\"\n[seq]\nrw=read\nbs=4k\nfilename=data.bin\n\"\"\"\n\
         [[test]]\nname = \"randread\"\nworkload = \"fio\"\n\
         job = \"\"\"\n[rand]\nrw=randread\nbs=4k\nioengine=io_uring\niodepth=4\nfilename=data.bin\n\"\"\"\n",
    )
    .unwrap();
    let db = tmp.path().join("r.sqlite");
    let doc = run_and_export(&db, "1", &cfg, &suite);
    let samples = doc["runs"][0]["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2);
    for s in samples {
        assert_eq!(s["status"], "ok", "{s}");
        assert_eq!(s["facts"]["fs_type"], "erofs");
        let metric = |name: &str| {
            s["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["name"] == name)
                .unwrap_or_else(|| panic!("{name} in {s}"))["value"]
                .as_f64()
                .unwrap()
        };
        // Every block of the file read once, nothing written.
        assert_eq!(metric("read_io_kbytes"), 1024.0, "{s}");
        assert!(metric("read_iops") > 0.0);
    }
    // The tree is untouched.
    assert_eq!(std::fs::read(src.join("data.bin")).unwrap(), body);

    // A fio job that writes is refused before the run is recorded, naming what may run.
    let writing = tmp.path().join("w.toml");
    std::fs::write(
        &writing,
        "[[test]]\nname = \"seqwrite\"\nworkload = \"fio\"\n\
         job = \"\"\"\n[w]\nrw=write\nbs=4k\nsize=64k\n\"\"\"\n",
    )
    .unwrap();
    fsdelta(&db)
        .args(["run", "-n", "1", "--config"])
        .arg(&cfg)
        .arg("--suite")
        .arg(&writing)
        .assert()
        .failure()
        .stderr(predicates::str::contains("test seqwrite (fio) writes"))
        .stderr(predicates::str::contains("fio jobs that only read"));
    let list = fsdelta(&db).args(["list"]).output().unwrap();
    let list = String::from_utf8(list.stdout).unwrap();
    assert_eq!(
        list.lines().filter(|l| l.contains("complete")).count(),
        1,
        "{list}"
    );
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(!mounts.contains(&scratch.display().to_string()), "{mounts}");
}

/// The value of metric `name` in sample `s`, if it has it.
fn metric(s: &serde_json::Value, name: &str) -> Option<f64> {
    s["metrics"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == name)?["value"]
        .as_f64()
}

#[test]
fn an_lz4_erofs_image_has_a_compress_ratio_above_one_and_a_plain_one_exactly_one() {
    if !erofs_usable() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("tree");
    std::fs::create_dir_all(src.join("text")).unwrap();
    // Compressible text, and 256 KiB of bytes lz4 cannot shrink (a deterministic pattern),
    // which mkfs.erofs stores as they are.
    for i in 0..10 {
        let body: String = (0..10_000).map(|j| format!("line {i} {j}\n")).collect();
        std::fs::write(src.join("text").join(format!("f{i}.txt")), body).unwrap();
    }
    let noise: Vec<u8> = (0..(1u64 << 18))
        .map(|i| (i.wrapping_mul(6_364_136_223_846_793_005) >> 56) as u8)
        .collect();
    std::fs::write(src.join("noise.bin"), &noise).unwrap();
    let scratch = tmp.path().join("scratch");
    let cfg = tmp.path().join("c.toml");
    std::fs::write(
        &cfg,
        format!(
            "scratch = \"{}\"\n\
             [[config]]\nname = \"plain\"\nfs = \"erofs\"\nsource = \"{src}\"\n\n\
             [[config]]\nname = \"lz4hc\"\nfs = \"erofs\"\nsource = \"{src}\"\nmkfs = \"-zlz4hc\"\n",
            scratch.display(),
            src = src.display()
        ),
    )
    .unwrap();
    let suite = tmp.path().join("s.toml");
    std::fs::write(
        &suite,
        "ondisk_remount = true\n\
         [[test]]\nname = \"readall\"\nworkload = \"command\"\ncommand = \"cat text/*.txt noise.bin | wc -c\"\n\
         [[test.metric]]\nname = \"bytes\"\nregex = '^(\\d+)'\nunit = \"B\"\ndirection = \"neutral\"\n",
    )
    .unwrap();
    let db = tmp.path().join("r.sqlite");
    let doc = run_and_export(&db, "2", &cfg, &suite);
    let samples = doc["runs"][0]["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 4);
    for s in samples {
        assert_eq!(s["status"], "ok", "{s}");
        let absent = s["facts"]["extra"]["ondisk_absent"].as_str().unwrap_or("");
        let ratio = metric(s, "compress_ratio")
            .unwrap_or_else(|| panic!("no compress_ratio; ondisk_absent: {absent}"));
        let (disk, logical) = (
            metric(s, "compress_disk_bytes").unwrap(),
            metric(s, "compress_logical_bytes").unwrap(),
        );
        eprintln!(
            "{}: compress_ratio {ratio:.3} ({disk} of {logical} bytes)",
            s["config"]
        );
        // Every file's size in whole 4 KiB blocks, whatever the image.
        let blocks: u64 = std::fs::read_dir(src.join("text"))
            .unwrap()
            .flatten()
            .map(|e| e.metadata().unwrap().len())
            .chain([noise.len() as u64])
            .map(|b| b.div_ceil(4096) * 4096)
            .sum();
        assert_eq!(logical, blocks as f64, "{s}");
        // An image is not unmounted and mounted again after a sample: nothing to measure
        // again, and the facts say so.
        assert!(
            absent.contains("all_remounted: config '") && metric(s, "ondisk_remounted_s").is_none(),
            "{absent}"
        );
        if s["config"] == "lz4hc" {
            assert!(ratio > 1.5, "lz4hc compress_ratio {ratio}: {s}");
            // The incompressible file stays as it is: the image is no smaller than it.
            assert!(disk >= noise.len() as f64, "{s}");
        } else {
            assert_eq!(ratio, 1.0, "{s}");
        }
    }
    let out = fsdelta(&db)
        .args(["compare", "latest@plain", "latest@lz4hc"])
        .args(["--metric", "compress_ratio", "--format", "json"])
        .output()
        .unwrap();
    let cmp: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let m = cmp["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "compress_ratio" || m["name"] == "compress_ratio")
        .unwrap_or_else(|| panic!("no compress_ratio in {cmp}"))
        .clone();
    assert_eq!(m["verdict"], "improved", "{m}");
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(!mounts.contains(&scratch.display().to_string()), "{mounts}");
}
