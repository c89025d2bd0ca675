//! iodepth_batch (iodepth_batch_submit) above 1 with libaio and io_uring, as fio 3.33: the
//! queued I/Os go to the kernel in one io_submit / io_uring_enter once a batch is queued (or
//! when the queue is full), so the JSON's `iodepth_submit` counts calls of up to that many
//! I/Os. Which bucket a call of fewer lands in depends on how many completions a wait
//! returned, so the test asserts what holds whatever the timing: no call of more than the
//! batch, some of the batch's bucket, fio's counts, bytes and keys, and fio's files.
mod common;

use common::{fio_counts, json_of, require_fio};

/// The percentages of `iodepth_submit` at buckets 4 (1-4 I/Os), 8 (5-8) and 16 (9-16).
fn submit_buckets(v: &serde_json::Value) -> [f64; 3] {
    let s = &v["jobs"][0]["iodepth_submit"];
    ["4", "8", "16"].map(|k| s[k].as_f64().unwrap_or_else(|| panic!("no {k} in {s}")))
}

#[test]
fn batches_of_eight_are_submitted_as_fios() {
    if !require_fio() {
        return;
    }
    for engine in ["libaio", "io_uring"] {
        let job = format!(
            "[b]\nioengine={engine}\niodepth=16\niodepth_batch=8\nrw=randread\nbs=4k\nsize=2m\ndirect=1\n"
        );
        let (ours, o, theirs, f) = common::run_ours_and_fio(&job);
        let (oj, fj) = (json_of(&o.stdout), json_of(&f.stdout));
        assert_eq!(fio_counts(&oj, 0), fio_counts(&fj, 0), "{job}");
        assert_eq!(oj["jobs"][0]["read"]["total_ios"], 512, "{job}");
        common::assert_keys_as_fios(
            &job,
            &common::json_keys(&o.stdout),
            &common::json_keys(&f.stdout),
        );
        for (who, v) in [("ours", &oj), ("fio", &fj)] {
            let [b4, b8, b16] = submit_buckets(v);
            // At least the first call is a whole batch of 8; none is more.
            assert!(
                b8 > 0.0,
                "{who}, {job}: no call of 5-8 I/Os: {b4} {b8} {b16}"
            );
            assert_eq!(b16, 0.0, "{who}, {job}: a call of more than 8 I/Os");
        }
        let list = |d: &std::path::Path| {
            let mut v: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        assert_eq!(list(ours.path()), list(theirs.path()), "{job}");
    }
}

/// Without iodepth_batch every I/O is submitted on its own: all calls in the 1-4 bucket (the
/// test above would pass without batching only if this one failed).
#[test]
fn without_a_batch_every_call_submits_one() {
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let v = common::run_fsdelta_fio(
        d.path(),
        "[b]\nioengine=libaio\niodepth=16\nrw=randread\nbs=4k\nsize=1m\ndirect=1\n",
    );
    assert_eq!(submit_buckets(&v), [100.0, 0.0, 0.0]);
}
