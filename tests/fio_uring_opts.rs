//! io_uring's registerfiles, fixedbufs, sqthread_poll and sqthread_poll_cpu under `fsdelta fio`
//! and real fio 3.33: the same size-based jobs (randread / randwrite, direct=1 and buffered,
//! iodepth 1, 8 and 32) must do the same number of I/Os and bytes; the options must really
//! reach the kernel, which the ring's /proc/PID/fdinfo shows while the job runs (UserFiles,
//! UserBufs, SqThread, SqThreadCpu) next to the `iou-sqp-*` kernel thread of SQPOLL; and
//! registered files with fewer open files are refused as fio refuses them.
//!
//! Needs /usr/bin/fio (and io_uring) for the comparisons; skips otherwise, saying why, unless
//! FSDELTA_REQUIRE_ALL=1.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

fn have_fio() -> bool {
    Command::new("fio").arg("--version").output().is_ok()
}

fn have_uring() -> bool {
    io_uring::IoUring::new(2).is_ok()
}

/// One job file: every rw x direct x iodepth combination as its own job (own file, stonewall),
/// each with `opts`.
fn matrix(opts: &str) -> (String, usize) {
    let mut text = String::from("[global]\nioengine=io_uring\nbs=4k\nsize=1m\nstonewall\n");
    let mut n = 0;
    for rw in ["randread", "randwrite"] {
        for direct in [0, 1] {
            for depth in [1, 8, 32] {
                text += &format!(
                    "[{rw}-d{direct}-q{depth}]\nrw={rw}\ndirect={direct}\niodepth={depth}\nfilename=f{n}\n{opts}"
                );
                n += 1;
            }
        }
    }
    (text, n)
}

#[test]
fn counts_equal_real_fio_with_each_option() {
    if !common::require(have_fio(), "/usr/bin/fio") || !common::require(have_uring(), "io_uring") {
        return;
    }
    for opts in [
        "registerfiles\n",
        "fixedbufs\n",
        "sqthread_poll\n",
        "registerfiles\nfixedbufs\nsqthread_poll\nsqthread_poll_cpu=0\n",
    ] {
        let (text, n) = matrix(opts);
        let ours = tempfile::tempdir().unwrap();
        let theirs = tempfile::tempdir().unwrap();
        let a = common::run_fsdelta_fio(ours.path(), &text);
        let b = common::run_real_fio(theirs.path(), &text);
        for i in 0..n {
            let name = a["jobs"][i]["jobname"].as_str().unwrap().to_string();
            assert_eq!(b["jobs"][i]["jobname"].as_str().unwrap(), name);
            assert_eq!(a["jobs"][i]["error"], 0, "{opts} {name}");
            let counts = common::fio_counts(&a, i);
            assert_eq!(counts, common::fio_counts(&b, i), "{opts} {name}");
            // 1 MiB of 4 KiB I/Os in the job's direction.
            assert!(
                counts.contains(&(256, 1 << 20)),
                "{opts} {name}: {counts:?}"
            );
        }
    }
}

/// `key:\tvalue` of the first io_uring fdinfo of `pid` that has `SqThread:`, with the
/// process's thread names, once the ring is up; None if the process ended first. Every
/// thread's table is looked at: a job's descriptors live in its thread's own table (fsdelta
/// unshares it, as a fio job process has its own), not in the main thread's.
fn ring_of(pid: u32) -> Option<(String, Vec<String>)> {
    loop {
        // A process that exited (a zombie until it is waited for) has no tasks with tables.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        if stat
            .rsplit(')')
            .next()?
            .trim_start()
            .starts_with(['Z', 'X'])
        {
            return None;
        }
        let tasks: Vec<_> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .ok()?
            .flatten()
            .map(|t| t.path())
            .collect();
        for fd in tasks
            .iter()
            .filter_map(|t| std::fs::read_dir(t.join("fdinfo")).ok())
            .flat_map(|d| d.flatten())
        {
            if let Ok(info) = std::fs::read_to_string(fd.path()) {
                if info.contains("SqThread:") && info.contains("UserBufs:") {
                    // The task list read above may predate the ring (and its SQPOLL thread,
                    // which io_uring_setup starts before it returns): read it again now.
                    let comms = std::fs::read_dir(format!("/proc/{pid}/task"))
                        .ok()?
                        .flatten()
                        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                        .map(|c| c.trim().to_string())
                        .collect();
                    return Some((info, comms));
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn field<'a>(info: &'a str, key: &str) -> &'a str {
    info.lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} in\n{info}"))
        .trim()
}

/// Run `opts` on 2 files for 16 I/Os with 100 ms of thinktime each (the ring lives for 1.6 s
/// at least) and read the ring's fdinfo while it runs.
fn observe(dir: &Path, opts: &str) -> (String, Vec<String>) {
    let job = format!(
        "[j]\nioengine=io_uring\nrw=randread\nbs=4k\nsize=64k\nnrfiles=2\niodepth=4\nthinktime=100ms\n{opts}"
    );
    std::fs::write(dir.join("job.fio"), job).unwrap();
    let child = Command::new(assert_cmd::cargo::cargo_bin("fsdelta"))
        .current_dir(dir)
        .args(["fio", "job.fio"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let seen = ring_of(child.id());
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    seen.expect("the job ended before its ring could be seen in /proc")
}

#[test]
fn the_kernel_sees_the_registered_files_buffers_and_sq_thread() {
    if !common::require(have_uring(), "io_uring") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (info, comms) = observe(
        dir.path(),
        "sqthread_poll\nfixedbufs\nsqthread_poll_cpu=0\n",
    );
    // sqthread_poll registers the files (fio forces registerfiles), fixedbufs one buffer per
    // iodepth slot, and the SQ thread is pinned to CPU 0.
    assert_eq!(field(&info, "UserFiles:"), "2", "{info}");
    assert_eq!(field(&info, "UserBufs:"), "4", "{info}");
    assert_eq!(field(&info, "SqThreadCpu:"), "0", "{info}");
    let sq = field(&info, "SqThread:");
    assert!(sq.parse::<i64>().unwrap() > 0, "{info}");
    assert!(
        comms.iter().any(|c| c.starts_with("iou-sqp-")),
        "no SQPOLL thread among {comms:?}"
    );

    let (info, comms) = observe(dir.path(), "registerfiles\n");
    assert_eq!(field(&info, "UserFiles:"), "2", "{info}");
    assert_eq!(field(&info, "UserBufs:"), "0", "{info}");
    assert_eq!(field(&info, "SqThread:"), "-1", "{info}");
    assert!(
        !comms.iter().any(|c| c.starts_with("iou-sqp-")),
        "{comms:?}"
    );

    let (info, _) = observe(dir.path(), "");
    assert_eq!(field(&info, "UserFiles:"), "0", "{info}");
    assert_eq!(field(&info, "UserBufs:"), "0", "{info}");
}

#[test]
fn registered_files_need_every_file_open_as_fio() {
    let env = common::Env::new();
    let job = "[j]\nioengine=io_uring\nrw=read\nsize=64k\nnrfiles=2\nopenfiles=1\nsqthread_poll\n";
    let path = env.write("open.fio", job);
    let out = env
        .cmd()
        .current_dir(env.path(""))
        .arg("fio")
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("io_uring registered files require nr_files to be identical to open_files"),
        "{err}"
    );
    assert!(err.contains("open.fio"), "{err}");
    if !common::require(have_fio(), "/usr/bin/fio") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("open.fio"), job).unwrap();
    let fio = Command::new("fio")
        .current_dir(dir.path())
        .arg("open.fio")
        .output()
        .unwrap();
    let ferr = String::from_utf8_lossy(&fio.stderr);
    assert!(
        ferr.contains("io_uring registered files require nr_files to be identical to open_files"),
        "{ferr}"
    );
}

/// `cmd` under RLIMIT_MEMLOCK=64 KiB and without CAP_IPC_LOCK (which would exempt it).
fn memlocked(program: &Path, dir: &Path) -> std::process::Output {
    Command::new("prlimit")
        .current_dir(dir)
        .args(["--memlock=65536", "setpriv", "--inh-caps=-ipc_lock"])
        .arg("--bounding-set=-ipc_lock")
        .arg(program)
        .args(
            ["fio", "job.fio"]
                .iter()
                .skip(usize::from(program == Path::new("fio"))),
        )
        .output()
        .unwrap()
}

#[test]
fn fixedbufs_beyond_memlock_fails_as_fio() {
    let tools = Command::new("setpriv").arg("--version").output().is_ok()
        && Command::new("prlimit").arg("--version").output().is_ok();
    if !common::require(have_uring(), "io_uring")
        || !common::require(tools, "setpriv and prlimit (util-linux)")
    {
        return;
    }
    // 32 buffers of 1 MiB to pin, 64 KiB allowed.
    let job = "[j]\nioengine=io_uring\nrw=randread\nsize=1m\nbs=1m\niodepth=32\nfixedbufs\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("job.fio"), job).unwrap();
    let ours = memlocked(&assert_cmd::cargo::cargo_bin("fsdelta"), dir.path());
    let err = String::from_utf8_lossy(&ours.stderr);
    assert!(
        !ours.status.success(),
        "{err}{}",
        String::from_utf8_lossy(&ours.stdout)
    );
    assert!(err.contains("io_queue_init"), "{err}");
    assert!(err.contains("Cannot allocate memory"), "{err}");
    assert!(err.contains("RLIMIT_MEMLOCK"), "{err}");
    if !common::require(have_fio(), "/usr/bin/fio") {
        return;
    }
    let fio = memlocked(Path::new("fio"), dir.path());
    // fio reports a job's error on stdout.
    let ferr = String::from_utf8_lossy(&fio.stdout);
    assert!(
        ferr.contains("func=io_queue_init, error=Cannot allocate memory"),
        "{ferr}"
    );
}

/// fio's io_uring `hipri` is IORING_SETUP_IOPOLL: hipri=0 runs as without it, and hipri=1
/// polls, so I/O to a file whose driver does not poll (ext4 or tmpfs files, a block device
/// without poll queues) fails with EOPNOTSUPP: under both tools the same job error, exit status
/// and I/O counts, buffered and direct. Also iodepth_batch_complete_min/max, general options
/// in fio, are accepted with psync and null and change nothing, as in fio.
#[test]
fn hipri_polls_and_batch_options_are_general_as_in_fio() {
    if !common::require(have_fio(), "/usr/bin/fio") || !common::require(have_uring(), "io_uring") {
        return;
    }
    let jobs = [
        "[j]\nioengine=io_uring\nrw=randread\nsize=256k\nhipri=0\niodepth=4\n",
        "[j]\nioengine=io_uring\nrw=randread\nsize=256k\nhipri=1\n",
        "[j]\nioengine=io_uring\nrw=write\nsize=256k\nhipri\ndirect=1\niodepth=4\n",
        "[global]\niodepth_batch_complete_min=2\niodepth_batch_complete_max=4\n[j]\nioengine=psync\nrw=randwrite\nsize=256k\niodepth=4\n",
        "[global]\niodepth_batch_complete_min=4\n[j]\nioengine=null\nrw=read\nsize=1m\niodepth=8\n",
    ];
    for job in jobs {
        let mut seen = Vec::new();
        for tool in ["fio", "fsdelta"] {
            let dir = tempfile::tempdir().unwrap();
            let out = common::tool_json(tool, dir.path(), job);
            let v = common::json_of(&out.stdout);
            let j = &v["jobs"][0];
            seen.push((
                out.status.code(),
                j["error"].clone(),
                common::fio_counts(&v, 0),
                j["iodepth_level"].clone(),
            ));
        }
        assert_eq!(seen[1], seen[0], "{job}");
    }
}
