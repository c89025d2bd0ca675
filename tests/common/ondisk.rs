//! Helpers of the on-disk tests (tests/ondisk_cli.rs, ondisk_remount.rs, ondisk_vm.rs): whether
//! loop images of some filesystems can be made here, a [`Setup`] under /var/tmp (loop images
//! want a real disk, not the tmpfs /tmp may be), `run -n N` that must succeed, the latest run's
//! samples, and a sample's metrics by name.

use super::{Setup, is_root, require};
use fsdelta::plan::config::FsKind;
use serde_json::Value;
use std::path::Path;

/// Whether loop images of each of `kinds` can be made and mounted here: root, loop devices and
/// each mkfs; says what is missing otherwise (see [`require`]).
pub fn can_format(kinds: &[FsKind]) -> bool {
    let mkfs: Vec<String> = kinds.iter().map(|k| format!("mkfs.{k}")).collect();
    require(is_root(), "root (mkfs, mount, loop devices)")
        && require(Path::new("/dev/loop-control").exists(), "loop devices")
        && require(
            kinds
                .iter()
                .all(|&k| fsdelta::site::mkfs::Mkfs::find(k).is_ok()),
            &mkfs.join(" and "),
        )
}

/// A [`Setup`] in a new directory under /var/tmp named `prefix...`: `c.toml` holds `configs`,
/// `s.toml` holds `suite`.
pub fn setup(prefix: &str, configs: &str, suite: &str) -> Setup {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/var/tmp")
        .unwrap();
    Setup::in_dir(dir, "c.toml", configs, "s.toml", suite)
}

/// `run -n N --config c.toml --suite s.toml`; it must succeed.
pub fn run(s: &Setup, n: u32) {
    let out = s
        .cmd()
        .args(["run", "-n", &n.to_string(), "--quiet", "--config"])
        .arg(s.p("c.toml"))
        .arg("--suite")
        .arg(s.p("s.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "run: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The latest run's samples, each ok.
pub fn samples(s: &Setup) -> Vec<Value> {
    let doc = super::export_latest_with(s.cmd(), &["--format", "json"]);
    let all = doc["runs"][0]["samples"].as_array().unwrap().clone();
    for x in &all {
        assert_eq!(x["status"], "ok", "{x}");
    }
    all
}

/// The value of metric `name` in sample `x`, if it has it.
pub fn metric(x: &Value, name: &str) -> Option<f64> {
    x["metrics"]
        .as_array()?
        .iter()
        .find(|m| m["name"] == name)?["value"]
        .as_f64()
}

/// The value of metric `name` in sample `x`; panics, saying why the sample has it not
/// (`ondisk_absent`), when it is absent.
pub fn must(x: &Value, name: &str) -> f64 {
    metric(x, name).unwrap_or_else(|| {
        panic!(
            "{name} missing in {}; ondisk_absent: {}",
            x["config"], x["facts"]["extra"]["ondisk_absent"]
        )
    })
}
