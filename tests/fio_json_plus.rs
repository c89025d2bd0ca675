//! fio's `--output-format=json+`: the JSON of `--output-format=json` plus, in every latency
//! object that has percentiles, `bins` (the value a histogram bucket stands for, in ns, to its
//! count). Ours must have the keys of real fio 3.33's json+ for the same job, bins whose counts
//! add up to the I/Os, and bucket values of fio's layout. Runs Debian's fio.

mod common;

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

const JOB: &str = "\
[global]
size=1m
bs=4k
thread
[w]
rw=write
[r]
rw=randread
ioengine=libaio
iodepth=4
";

/// Every key path; a bins object's keys (bucket values) count as one `<bin>`.
fn keys(v: &Value, path: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let k = if path.ends_with(".bins") { "<bin>" } else { k };
                let p = format!("{path}.{k}");
                out.insert(p.clone());
                keys(v, &p, out);
            }
        }
        Value::Array(a) => {
            for v in a {
                keys(v, &format!("{path}[]"), out);
            }
        }
        _ => {}
    }
}

fn run(cmd: &mut std::process::Command) -> Value {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn json_plus_has_fios_keys_and_bins() {
    if !common::require(Path::new("/usr/bin/fio").exists(), "/usr/bin/fio") {
        return;
    }
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(a.path().join("job.fio"), JOB).unwrap();
    std::fs::write(b.path().join("job.fio"), JOB).unwrap();
    let theirs = run(std::process::Command::new("/usr/bin/fio")
        .args(["--output-format=json+", "job.fio"])
        .current_dir(a.path()));
    let mut ours_cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("fsdelta"));
    let ours = run(ours_cmd
        .args(["fio", "--output-format=json+", "job.fio"])
        .current_dir(b.path()));
    let (mut kt, mut ko) = (BTreeSet::new(), BTreeSet::new());
    keys(&theirs, "", &mut kt);
    keys(&ours, "", &mut ko);
    // fsdelta's own two keys (which clock timed the job).
    ko.retain(|k| !k.ends_with(".clocksource") && !k.ends_with(".clocksource_drift_ppm"));
    assert_eq!(kt, ko, "fio's:\n{kt:#?}\nours:\n{ko:#?}");
    assert!(ko.contains(".jobs[].write.clat_ns.bins.<bin>"), "{ko:#?}");
    for (jt, jo) in theirs["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(ours["jobs"].as_array().unwrap())
    {
        for d in ["read", "write"] {
            let bins = |j: &Value| -> Vec<(u64, u64)> {
                j[d]["clat_ns"]["bins"]
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.parse().unwrap(), v.as_u64().unwrap()))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let (bt, bo) = (bins(jt), bins(jo));
            let total = |b: &[(u64, u64)]| b.iter().map(|(_, c)| c).sum::<u64>();
            assert_eq!(total(&bt), jt[d]["total_ios"].as_u64().unwrap());
            assert_eq!(total(&bo), total(&bt), "{d} bins of {}", jo["jobname"]);
            // Every value one of fio's bucket values.
            for (v, _) in bt.iter().chain(&bo) {
                let i = fsdelta::probe::histogram::value_to_index(*v);
                assert_eq!(fsdelta::probe::histogram::index_to_value(i), *v);
            }
        }
    }
}
