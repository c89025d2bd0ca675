//! `fsdelta fsmark` end to end: the real binary, real directories, and (when installed) the real
//! fs_mark side by side, so that a script written for fs_mark's output reads ours.
//!
//! Tests that need something the machine may lack (fs_mark, root for tmpfs mounts) say why they
//! skip; with `FSDELTA_REQUIRE_ALL=1` a skip is a failure.

use assert_cmd::Command;
use std::path::{Path, PathBuf};
use std::process::Output;

const FS_MARK: &str = "/usr/bin/fs_mark";

fn skip(why: &str) {
    if std::env::var("FSDELTA_REQUIRE_ALL").as_deref() == Ok("1") {
        panic!("FSDELTA_REQUIRE_ALL=1 but this test cannot run: {why}");
    }
    eprintln!("SKIPPED: {why}");
}

fn fsdelta(cwd: &Path, args: &[&str]) -> Output {
    Command::cargo_bin("fsdelta")
        .unwrap()
        .current_dir(cwd)
        .arg("fsmark")
        .args(args)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn count_files(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                n += 1;
            }
        }
    }
    n
}

/// The columns of a table row, cut at fs_mark's fixed widths `%6u %12u %12u %12.1f %16llu`.
fn columns(row: &str) -> Vec<String> {
    let widths = [6, 12, 12, 12, 16];
    let mut out = Vec::new();
    let mut pos = 0;
    for (i, w) in widths.iter().enumerate() {
        if i > 0 {
            assert_eq!(&row[pos..pos + 1], " ", "column separator in {row:?}");
            pos += 1;
        }
        let cell = &row[pos..pos + w];
        assert!(
            cell.starts_with(' ') || cell.trim() == cell,
            "cell {cell:?} in {row:?}"
        );
        out.push(cell.trim().to_string());
        pos += w;
    }
    out
}

/// A regular expression, via predicates' regex support.
struct Re(predicates::str::RegexPredicate);

impl Re {
    fn is_match(&self, s: &str) -> bool {
        use predicates::Predicate;
        self.0.eval(s)
    }
}

fn re(pattern: &str) -> Re {
    Re(predicates::str::is_match(pattern).unwrap())
}

const TABLE_HEADER: &str = "FSUse%        Count         Size    Files/sec     App Overhead";

#[test]
fn header_and_table_have_fs_marks_format() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    let d = dir.to_str().unwrap();
    let o = fsdelta(
        tmp.path(),
        &[
            "-d", d, "-s", "0", "-n", "50", "-L", "2", "-t", "2", "-S", "0",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "");
    assert_eq!(
        lines[1],
        format!("#  fs_mark  -d  {d}  -s  0  -n  50  -L  2  -t  2  -S  0 ")
    );
    assert!(
        re(r"^#\tVersion 3\.3, 2 thread\(s\) starting at (Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ 123]\d \d\d:\d\d:\d\d \d{4}$")
            .is_match(lines[2]),
        "{:?}",
        lines[2]
    );
    assert_eq!(
        lines[3],
        "#\tSync method: NO SYNC: Test does not issue sync() or fsync() calls."
    );
    assert_eq!(lines[4], "#\tDirectories:  no subdirectories used");
    assert_eq!(
        lines[5],
        "#\tFile names: 40 bytes long, (16 initial bytes of time stamp with 24 random bytes at end of name)"
    );
    assert_eq!(
        lines[6],
        "#\tFiles info: size 0 bytes, written with an IO size of 16384 bytes per write"
    );
    assert_eq!(
        lines[7],
        "#\tApp overhead is time in microseconds spent in the test not doing file writing related system calls."
    );
    assert_eq!(lines[8], "");
    assert_eq!(lines[9], TABLE_HEADER);
    assert_eq!(lines.len(), 12, "{out}");
    for (row, count) in lines[10..].iter().zip(["100", "200"]) {
        let c = columns(row);
        assert!(re(r"^\d{1,3}$").is_match(&c[0]), "{row}");
        assert_eq!(c[1], count);
        assert_eq!(c[2], "0");
        assert!(re(r"^\d+\.\d$").is_match(&c[3]) && c[3] != "0.0", "{row}");
        assert!(re(r"^\d+$").is_match(&c[4]), "{row}");
        assert_eq!(row.len(), 62);
    }
    // fs_mark's log file in the current directory: same header (with '#' for the blank line).
    let log = std::fs::read_to_string(tmp.path().join("fs_log.txt")).unwrap();
    assert!(log.contains(&format!("#\n{TABLE_HEADER}\n")), "{log}");
    assert_eq!(
        log.lines()
            .filter(|l| re(r"^\s+\d+\s+\d+").is_match(l))
            .count(),
        2
    );
}

#[test]
fn verbose_adds_min_avg_max_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let o = fsdelta(
        tmp.path(),
        &[
            "-v", "-d", "v", "-s", "100", "-n", "20", "-S", "2", "-l", "my.log",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[8],
        "#\tAll system call times are reported in microseconds."
    );
    assert_eq!(lines[9], "");
    assert_eq!(
        lines[10],
        format!(
            "{TABLE_HEADER}        CREAT (Min/Avg/Max)        WRITE (Min/Avg/Max)        FSYNC (Min/Avg/Max)         SYNC (Min/Avg/Max)        CLOSE (Min/Avg/Max)       UNLINK (Min/Avg/Max)"
        )
    );
    let row = lines[11];
    assert_eq!(row.len(), 62 + 18 * 9, "{row:?}");
    let fields: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(fields.len(), 23);
    assert!(fields.iter().skip(5).all(|f| f.parse::<u64>().is_ok()));
    assert!(tmp.path().join("my.log").exists() && !tmp.path().join("fs_log.txt").exists());
}

#[test]
fn json_parses_and_holds_the_measurements() {
    let tmp = tempfile::tempdir().unwrap();
    let o = fsdelta(
        tmp.path(),
        &[
            "-d", "j", "-s", "4096", "-n", "30", "-t", "2", "-L", "2", "--json",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["engine"], "fsmark");
    assert_eq!(
        v["command_line"],
        "fs_mark -d j -s 4096 -n 30 -t 2 -S 1 -L 2"
    );
    let its = v["iterations"].as_array().unwrap();
    assert_eq!(its.len(), 2);
    assert_eq!(its[1]["count"], 120);
    assert_eq!(its[0]["workers"].as_array().unwrap().len(), 2);
    assert!(its[0]["ops"]["fsync"]["count"].as_u64() == Some(60));
    let metric = |n: &str| {
        v["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == n)
            .unwrap_or_else(|| panic!("no metric {n}"))
            .clone()
    };
    assert!(metric("files_per_sec")["value"].as_f64().unwrap() > 0.0);
    assert_eq!(metric("files")["value"], 120.0);
    assert_eq!(metric("create_lat_ns_p99")["unit"], "ns");
    assert!(
        v["histograms"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["name"] == "write_lat_ns")
    );
}

#[test]
fn bad_flags_print_usage_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    for (args, reason) in [
        (vec!["-x", "-d", "a"], "invalid option -- 'x'"),
        (vec!["-d", "a", "-S", "9"], "must be 0 to 6"),
        (
            vec!["-d", "a", "-D", "1"],
            "Number of subdirs needs to be greater than 1",
        ),
        (vec!["-d", "a", "-N", "4"], "-D switch for -N"),
        (vec!["-d", "a", "-t", "65"], "Max threads is 64"),
        (
            vec!["-d", "a", "-w", "2000000"],
            "MAX IO buffer size is 1048576",
        ),
        (vec!["-d", "a", "-n", "ten"], "not a whole number"),
        (
            vec!["-s", "0"],
            "Must specify at least one directory with -d switch",
        ),
        (vec!["-d"], "option requires an argument -- 'd'"),
    ] {
        let o = fsdelta(tmp.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert!(err.contains(reason), "{args:?}: {err}");
        assert!(err.contains("Usage: fsdelta fsmark"), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    assert!(
        !tmp.path().join("a").exists(),
        "nothing runs on a usage error"
    );
}

#[test]
fn help_exits_0_and_says_workers_are_threads() {
    for flag in ["-h", "--help"] {
        let o = Command::cargo_bin("fsdelta")
            .unwrap()
            .args(["fsmark", flag])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0));
        let out = stdout(&o);
        assert!(out.starts_with("Usage: fsdelta fsmark"), "{out}");
        assert!(out.contains("Workers are threads"), "{out}");
    }
}

#[test]
fn files_are_removed_unless_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let o = fsdelta(
        tmp.path(),
        &["-d", "gone", "-s", "10", "-n", "25", "-t", "2"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(tmp.path().join("gone").is_dir());
    assert_eq!(count_files(&tmp.path().join("gone")), 0);
    let o = fsdelta(
        tmp.path(),
        &["-d", "kept", "-s", "10", "-n", "25", "-t", "2", "-k"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(count_files(&tmp.path().join("kept")), 50);
}

#[test]
fn subdirectories_follow_d_and_n() {
    let tmp = tempfile::tempdir().unwrap();
    let o = fsdelta(
        tmp.path(),
        &[
            "-d", "rr", "-s", "0", "-n", "12", "-S", "0", "-D", "3", "-N", "4", "-k",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(
        "#\tDirectories:  Round Robin between directories across 3 subdirectories with 4 files per subdirectory.\n"
    ));
    let root = tmp.path().join("rr");
    let mut subs: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    subs.sort();
    assert_eq!(subs, vec!["00", "01", "02"]);
    for s in &subs {
        assert_eq!(count_files(&root.join(s)), 4, "subdirectory {s}");
    }
}

/// The header lines that must be identical (argv[0] and the start time aside), and each row's
/// column count.
fn shape(out: &str) -> (Vec<String>, Vec<usize>) {
    let mut header = Vec::new();
    let mut rows = Vec::new();
    for line in out.lines() {
        if line.starts_with('#') || line.is_empty() || line.starts_with("FSUse%") {
            let mut line = line.to_string();
            if let Some(rest) = line.strip_prefix("#  ") {
                // argv[0]: /usr/bin/fs_mark or fs_mark
                let after = rest.split_once("  ").map_or("", |(_, a)| a);
                line = format!("#  ARGV0  {after}");
            }
            if let Some(at) = line.find("starting at ") {
                line.truncate(at);
                line.push_str("starting at TIME");
            }
            header.push(line);
        } else {
            rows.push(line.split_whitespace().count());
        }
    }
    (header, rows)
}

#[test]
fn same_header_and_columns_as_the_real_fs_mark() {
    if !Path::new(FS_MARK).exists() {
        skip(&format!(
            "{FS_MARK} is not installed (Debian package fsmark)"
        ));
        return;
    }
    for flags in [
        vec!["-s", "4096", "-n", "40", "-L", "2", "-t", "2"],
        vec![
            "-v", "-s", "0", "-n", "30", "-D", "4", "-N", "10", "-S", "0",
        ],
        vec![
            "-s", "100", "-w", "50", "-n", "20", "-D", "3", "-S", "4", "-p", "30", "-r", "10",
        ],
        vec!["-v", "-s", "10", "-n", "10", "-S", "6", "-k"],
        vec!["-s", "0", "-n", "10", "-S", "2"],
        vec!["-s", "0", "-n", "10", "-S", "3"],
        vec!["-s", "0", "-n", "10", "-S", "5"],
    ] {
        let tmp = tempfile::tempdir().unwrap();
        // Debian's fs_mark rejects -d paths of 40 bytes or more: keep them short.
        let run = |dir: PathBuf, prog: Option<&str>| -> (String, usize) {
            let mut args = vec!["-d".to_string(), dir.to_str().unwrap().to_string()];
            args.extend(flags.iter().map(|s| s.to_string()));
            let o = match prog {
                Some(p) => std::process::Command::new(p)
                    .current_dir(tmp.path())
                    .args(&args)
                    .output()
                    .unwrap(),
                None => {
                    let a: Vec<&str> = args.iter().map(String::as_str).collect();
                    fsdelta(tmp.path(), &a)
                }
            };
            assert!(o.status.success(), "{prog:?} {args:?}: {}", stderr(&o));
            let files = if dir.exists() { count_files(&dir) } else { 0 };
            (stdout(&o), files)
        };
        let (theirs, their_files) = run(tmp.path().join("t"), Some(FS_MARK));
        let (ours, our_files) = run(tmp.path().join("o"), None);
        let (their_header, their_rows) = shape(&theirs);
        let (our_header, our_rows) = shape(&ours);
        let their_header: Vec<String> = their_header
            .iter()
            .map(|l| l.replace(&tmp.path().join("t").display().to_string(), "DIR"))
            .collect();
        let our_header: Vec<String> = our_header
            .iter()
            .map(|l| l.replace(&tmp.path().join("o").display().to_string(), "DIR"))
            .collect();
        assert_eq!(our_header, their_header, "{flags:?}");
        assert_eq!(our_rows, their_rows, "{flags:?}\n{ours}\n{theirs}");
        assert_eq!(our_files, their_files, "{flags:?}: files left behind");
        // Count and Size columns agree exactly.
        let cs = |out: &str| -> Vec<(String, String)> {
            out.lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty() && !l.starts_with("FSUse%"))
                .map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    (f[1].to_string(), f[2].to_string())
                })
                .collect()
        };
        assert_eq!(cs(&ours), cs(&theirs), "{flags:?}");
        // Both appended the same header to their fs_log.txt.
        let log = std::fs::read_to_string(tmp.path().join("fs_log.txt")).unwrap();
        assert_eq!(log.matches("#  ").count(), 2, "{log}");
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A tmpfs mounted on a temporary directory for the test's lifetime.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(options: &str) -> Option<Tmpfs> {
        if !is_root() {
            skip("mounting a tmpfs needs root");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                options,
                "fsdelta-test",
                dir.path().to_str().unwrap(),
            ])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            skip("mount -t tmpfs failed");
            return None;
        }
        Some(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

#[test]
fn fill_runs_until_the_space_check_fails() {
    let Some(fs) = Tmpfs::mount("size=1m") else {
        return;
    };
    let cwd = tempfile::tempdir().unwrap();
    let d = fs.path().join("f");
    let o = fsdelta(
        cwd.path(),
        &[
            "-d",
            d.to_str().unwrap(),
            "-F",
            "-s",
            "102400",
            "-n",
            "2",
            "-S",
            "0",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let rows = out
        .lines()
        .filter(|l| re(r"^\s+\d+\s+\d+\s+102400\s").is_match(l))
        .count();
    assert!(
        (3..=5).contains(&rows),
        "1 MiB holds 4 to 5 iterations of 200 KiB: {out}"
    );
    assert!(
        out.ends_with(&format!(
            "Insufficient free space in {} to create 2 new files, exiting\n",
            d.display()
        )),
        "{out}"
    );
    assert_eq!(count_files(&d), rows * 2, "-F keeps its files");
}

#[test]
fn enospc_mid_run_is_an_error_and_leaves_nothing() {
    let Some(fs) = Tmpfs::mount("size=4m,nr_inodes=40") else {
        return;
    };
    let cwd = tempfile::tempdir().unwrap();
    let d = fs.path().join("e");
    let o = fsdelta(
        cwd.path(),
        &["-d", d.to_str().unwrap(), "-s", "0", "-n", "100", "-S", "0"],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.starts_with("fsdelta fsmark: open "), "{err}");
    assert!(
        err.contains("No space left on device") && err.contains("filesystem is full"),
        "{err}"
    );
    assert_eq!(count_files(&d), 0, "a failed run removes its files");
}

#[test]
fn sigint_stops_the_run_with_130_and_cleans_up() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("s");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("fsdelta"))
        .current_dir(tmp.path())
        .args([
            "fsmark",
            "-d",
            d.to_str().unwrap(),
            "-s",
            "0",
            "-n",
            "1000000",
            "-t",
            "2",
            "-S",
            "0",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until files are being created, then interrupt.
    let t0 = std::time::Instant::now();
    while !(d.exists() && count_files(&d) > 100) {
        assert!(t0.elapsed().as_secs() < 30, "the run never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: kill() on our own child's pid.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    assert!(stderr(&o).contains("interrupted"));
    assert_eq!(count_files(&d), 0, "an interrupted run removes its files");
    assert!(
        stdout(&o).contains(TABLE_HEADER),
        "the header was printed before the run"
    );
}
