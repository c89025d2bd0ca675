//! continue_on_error=, ignore_error= and error_dump= against real fio 3.33, on a filesystem
//! that runs out of space at a known block: a 1 MiB tmpfs (256 pages of 4 KiB), written past
//! its end. Which writes fail is fixed by the sizes alone (a page either fits or not), so the
//! counts are deterministic: for each job both tools must agree on the exit status, `error`,
//! `total_err`, `first_error`, the write counts and bytes, the JSON key set and the number of
//! "fio: io_u error" lines on stderr. Among the jobs is fio's enospc-pressure example's
//! [global] section with its randwrite job, shrunk to the tmpfs (buffered: tmpfs has no
//! O_DIRECT). Verify failures (EILSEQ) are compared on a file of zeros read with verify=.
//! The tmpfs test needs root (the mount); both need fio; skipped saying why otherwise, unless
//! FSDELTA_REQUIRE_ALL=1.

mod common;

/// What is compared of one run.
#[derive(Debug, PartialEq)]
struct Outcome {
    exit: Option<i32>,
    /// Per job: error, total_err, first_error (-1 when absent), read total_ios, io_bytes,
    /// write total_ios, io_bytes.
    jobs: Vec<[i64; 7]>,
    /// "fio: io_u error on file ..." and "verify: ..." lines on stderr.
    dumped: usize,
    /// The normal output's "errors    :" line, when asked for.
    errors_line: Option<String>,
    /// The normal output's job line up to its pid (`err=28 (file:..., func=..., error=...)`).
    err_line: Option<String>,
}

fn outcome(o: &std::process::Output, json: bool) -> Outcome {
    let text = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    let dumped = stderr
        .lines()
        .filter(|l| l.starts_with("fio: io_u error on file ") || l.starts_with("verify: "))
        .count();
    if !json {
        return Outcome {
            exit: o.status.code(),
            jobs: Vec::new(),
            dumped,
            errors_line: text
                .lines()
                .find(|l| l.starts_with("     errors    :"))
                .map(str::to_string),
            err_line: text
                .lines()
                .find(|l| l.contains("(groupid="))
                .and_then(|l| l.split(": pid=").next())
                .map(str::to_string),
        };
    }
    let v: serde_json::Value = serde_json::from_str(&text[text.find('{').unwrap()..])
        .unwrap_or_else(|e| panic!("bad JSON ({e}): {text}"));
    let jobs = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            let n = |v: &serde_json::Value| v.as_i64().unwrap_or(-1);
            [
                n(&j["error"]),
                n(&j["total_err"]),
                n(&j["first_error"]),
                n(&j["read"]["total_ios"]),
                n(&j["read"]["io_bytes"]),
                n(&j["write"]["total_ios"]),
                n(&j["write"]["io_bytes"]),
            ]
        })
        .collect();
    Outcome {
        exit: o.status.code(),
        jobs,
        dumped,
        errors_line: None,
        err_line: None,
    }
}

/// Run `job` with `tool` in a fresh 1 MiB tmpfs; the job file and the output stay outside it.
fn run(tool: &str, job: &str, format: &str) -> std::process::Output {
    let fs = common::Tmpfs::mount("1m");
    common::tool_run_outside(&fs.path(), tool, job, format)
}

const W: &str = "[w]\nrw=write\nbs=4k\nsize=1040k\nfilename=f\n";

/// Our JSON has fio's keys (and fsdelta's two clock keys).
fn same_keys(job: &str, f: &std::process::Output, o: &std::process::Output) {
    let (fk, ok) = (common::json_keys(&f.stdout), common::json_keys(&o.stdout));
    common::assert_keys_as_fios(job, &ok, &fk);
}

#[test]
fn continued_and_fatal_enospc_count_as_fios() {
    if !common::require_fio()
        || !common::require(common::is_root(), "root (to mount a small tmpfs)")
    {
        return;
    }
    let jobs = [
        // Continued: the 4 writes past the 256 pages are counted, the job exits 0 with
        // error=28 in its JSON.
        format!("{W}continue_on_error=write\nignore_error=,ENOSPC\n"),
        format!("{W}continue_on_error=write\nignore_error=,ENOSPC\nerror_dump=1\n"),
        // ignore_error= alone turns its class on.
        format!("{W}ignore_error=,ENOSPC\nioengine=libaio\n"),
        format!("{W}ignore_error=,ENOSPC\nioengine=io_uring\niodepth=8\n"),
        // Fatal: ENOSPC is not in the write list. psync counts it, libaio does not (fio's
        // break_on_this_error against io_completed); both exit 1.
        format!("{W}continue_on_error=write\nignore_error=,EIO\n"),
        format!("{W}continue_on_error=write\nignore_error=,EIO\nioengine=libaio\n"),
        // Reads continued, not writes: fatal and uncounted.
        format!("{W}continue_on_error=read\n"),
        // No continue_on_error: the job ends with its stats and error 28, exit status 1, no
        // total_err keys; libaio logs every failed write it reaps.
        W.to_string(),
        format!("{W}ioengine=libaio\niodepth=4\n"),
        // A continued ENOSPC does not end a fill_device job (fio asks td_non_fatal_error
        // first).
        format!("{W}fill_device=1\ncontinue_on_error=write\nignore_error=,ENOSPC\n"),
        // fio's enospc-pressure example, shrunk: its [global] and the randwrite job.
        "[global]\nioengine=libaio\nfilesize=2m\nsize=2m\niodepth=128\ncontinue_on_error=write\n\
         ignore_error=,ENOSPC\nerror_dump=0\nfallocate=none\n[dio-raicer]\nbs=128k\n\
         rw=randwrite\nfilename=raicer\n"
            .to_string(),
    ];
    for job in &jobs {
        let f = run("fio", job, "json");
        let o = run("fsdelta", job, "json");
        let (fo, oo) = (outcome(&f, true), outcome(&o, true));
        assert_eq!(
            oo,
            fo,
            "fsdelta vs fio: {job}\nfsdelta's stderr: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            fo.jobs.iter().all(|j| j[0] == 28),
            "the job hits ENOSPC: {job}: {fo:?}"
        );
        same_keys(job, &f, &o);
    }
    // The normal output's errors line and job line (fio's verror: the engine's xfer, empty
    // for libaio's continued errors, io_u_log_error's with error_dump or a fatal error).
    for (i, verror) in [
        (
            0,
            "file:engines/sync.c:126, func=xfer, error=No space left on device",
        ),
        (
            1,
            "file:io_u.c:1876, func=io_u error, error=No space left on device",
        ),
        (2, ""),
        (
            4,
            "file:io_u.c:1876, func=io_u error, error=No space left on device",
        ),
    ] {
        let job = &jobs[i];
        let (f, o) = (run("fio", job, "normal"), run("fsdelta", job, "normal"));
        let (fo, oo) = (outcome(&f, false), outcome(&o, false));
        assert_eq!(
            fo.err_line,
            Some(format!("w: (groupid=0, jobs=1): err=28 ({verror})")),
            "{job}"
        );
        assert_eq!(oo, fo, "{job}");
    }
    let job = &jobs[0];
    let f = run("fio", job, "normal");
    assert_eq!(
        outcome(&f, false).errors_line.as_deref(),
        Some("     errors    : total=4, first_error=28/<No space left on device>")
    );
    let tail = |o: &std::process::Output| {
        let t = String::from_utf8_lossy(&o.stdout).trim_end().to_string();
        t.rsplit(';')
            .take(2)
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let (f, o) = (run("fio", job, "terse"), run("fsdelta", job, "terse"));
    assert_eq!(tail(&f), vec!["28", "4"]);
    assert_eq!(tail(&o), tail(&f));
}

/// A verify read job over 16 KiB of zeros: every block fails its header check (EILSEQ);
/// without continue_on_error the first ends the job (exit status 1).
/// continue_on_error=verify counts the four and exits 0; a VERIFY list without EILSEQ makes the
/// first fatal, where fio's sync path also counts errno 1 (break_on_this_error reads the -1
/// io_u_sync_complete returned as an errno) and libaio counts nothing.
#[test]
fn continued_and_fatal_verify_failures_count_as_fios() {
    if !common::require_fio() {
        return;
    }
    let base = "[v]\nrw=read\nbs=4k\nsize=16k\nfilename=z\nverify=crc32c\n";
    let jobs = [
        format!("{base}continue_on_error=verify\n"),
        format!("{base}continue_on_error=verify\nioengine=libaio\niodepth=4\n"),
        format!("{base}continue_on_error=all\nignore_error=,,5\n"),
        format!("{base}continue_on_error=all\nignore_error=,,5\nioengine=libaio\n"),
        format!("{base}continue_on_error=read\n"),
        base.to_string(),
    ];
    let mut got = Vec::new();
    for job in &jobs {
        let mut outs = Vec::new();
        for tool in ["fio", "fsdelta"] {
            let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            std::fs::File::create(dir.path().join("z"))
                .unwrap()
                .set_len(16 << 10)
                .unwrap();
            outs.push(common::tool_run_outside(dir.path(), tool, job, "json"));
        }
        let (fo, oo) = (outcome(&outs[0], true), outcome(&outs[1], true));
        assert_eq!(
            oo,
            fo,
            "fsdelta vs fio: {job}\nfsdelta's stderr: {}",
            String::from_utf8_lossy(&outs[1].stderr)
        );
        same_keys(job, &outs[0], &outs[1]);
        got.push(fo);
    }
    // What fio 3.33 does, so that a change of either tool shows.
    assert_eq!(got[0].exit, Some(0));
    assert_eq!(got[0].jobs[0][..3], [84, 4, 84]);
    assert_eq!(got[2].exit, Some(1));
    assert_eq!(got[2].jobs[0][..3], [84, 1, 1]);
    assert_eq!(got[3].jobs[0][..3], [84, 0, 0]);
    assert_eq!(got[5].exit, Some(1));
    assert_eq!(got[5].jobs[0][..3], [84, -1, -1]);
}

/// The verify phase (here verify_only's, on a file fio wrote, two blocks then damaged) takes
/// the same error path with and without verify_async: continued failures are counted as fio
/// counts them (fio 3.33: error 84, total_err 2, every block read), fatal ones end the job as
/// fio's synchronous verify ends it (fio's own fatal verify_async run may hang).
#[test]
fn verify_phase_failures_count_as_fios_with_and_without_verify_async() {
    if !common::require_fio() {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let w = "[w]\nrw=write\nbs=4k\nsize=256k\nfilename=f\nverify=crc32c\n";
    let o = common::tool_run_outside(dir.path(), "fio", &format!("{w}do_verify=0\n"), "json");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let f = dir.path().join("f");
    let mut data = std::fs::read(&f).unwrap();
    data[10 * 4096 + 100] ^= 1;
    data[20 * 4096 + 7] ^= 2;
    std::fs::write(&f, &data).unwrap();
    let mut got = Vec::new();
    for coe in ["continue_on_error=verify\n", ""] {
        for n in [0, 2] {
            let job = format!("{w}verify_only=1\nverify_async={n}\n{coe}");
            // fio 3.33 itself can hang when an async verify failure is fatal (its offload
            // threads wait on each other), so that case is compared with fio's synchronous
            // run of the same job: fsdelta's verify_async gives the synchronous results.
            let fio_job = if coe.is_empty() {
                format!("{w}verify_only=1\nverify_async=0\n")
            } else {
                job.clone()
            };
            let outs = [
                common::tool_run_outside(dir.path(), "fio", &fio_job, "json"),
                common::tool_run_outside(dir.path(), "fsdelta", &job, "json"),
            ];
            let (fo, oo) = (outcome(&outs[0], true), outcome(&outs[1], true));
            assert_eq!(
                (oo.exit, &oo.jobs),
                (fo.exit, &fo.jobs),
                "fsdelta vs fio: {job}\nfsdelta's stderr: {}",
                String::from_utf8_lossy(&outs[1].stderr)
            );
            got.push(fo);
        }
    }
    assert_eq!(got[0].exit, Some(0));
    assert_eq!(got[0].jobs[0][..5], [84, 2, 84, 64, 256 << 10]);
    assert_eq!(got[1].jobs, got[0].jobs);
    assert_eq!(got[2].exit, Some(1));
}

/// max_latency (fio's lat_fatal): the first I/O over the limit is counted and ends its job with
/// ETIMEDOUT, fio's stderr line naming file, direction, offset and length, exit status 1; a
/// limit nothing reaches changes nothing. Compared with fio 3.33 on psync and libaio (the
/// measured latency in the message is each run's own). The reads are O_DIRECT, so every one
/// goes to the disk and takes far more than the 1 us limit: the first ends the job in both.
#[test]
fn max_latency_ends_the_job_as_fios_lat_fatal() {
    if !common::require_fio() {
        return;
    }
    let norm = |e: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(e)
            .lines()
            .filter(|l| l.starts_with("fio:"))
            .map(|l| {
                let l = match l.split_once("latency of ") {
                    Some((a, b)) => format!("{a}latency of N{}", &b[b.find(' ').unwrap()..]),
                    None => l.to_string(),
                };
                match l.split_once("pid=") {
                    Some((a, b)) => format!("{a}pid=P{}", &b[b.find(',').unwrap()..]),
                    None => l,
                }
            })
            .collect()
    };
    for engine in ["psync", "libaio"] {
        let job = format!(
            "[m]\nrw=randread\nbs=4k\nsize=1m\ndirect=1\nioengine={engine}\nmax_latency=1us\n"
        );
        let mut seen = Vec::new();
        for tool in ["fio", "fsdelta"] {
            let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            let o = common::tool_json(tool, d.path(), &job);
            assert_eq!(o.status.code(), Some(1), "{tool} {engine}");
            let v = common::json_of(&o.stdout);
            let mut lines = norm(&o.stderr);
            lines.extend(norm(&o.stdout));
            seen.push((
                v["jobs"][0]["error"].as_u64(),
                common::fio_counts(&v, 0),
                lines,
            ));
        }
        assert_eq!(seen[0], seen[1], "{engine}");
        assert_eq!(seen[1].0, Some(110));
    }
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let v = common::run_fsdelta_fio(
        d.path(),
        "[m]\nrw=randread\nbs=4k\nsize=1m\nmax_latency=10s,10s\n",
    );
    assert_eq!(v["jobs"][0]["error"], 0);
    assert_eq!(common::fio_counts(&v, 0)[0], (256, 1 << 20));
}
