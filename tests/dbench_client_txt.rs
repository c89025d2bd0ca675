//! End to end: `fsdelta dbench` replays Debian's dbench 4.00 loadfile (GPL, read from where the
//! package installs it, never shipped) for a few seconds and prints dbench's output format.
//! Skipped, saying why, when dbench is not installed, unless FSDELTA_REQUIRE_ALL=1.

use assert_cmd::Command;

const CLIENT_TXT: &str = "/usr/share/dbench/client.txt";

fn available() -> bool {
    if std::path::Path::new("/usr/bin/dbench").exists() && std::path::Path::new(CLIENT_TXT).exists()
    {
        return true;
    }
    let why = "SKIPPED: /usr/bin/dbench or /usr/share/dbench/client.txt is missing \
               (apt-get install dbench)";
    if std::env::var("FSDELTA_REQUIRE_ALL").as_deref() == Ok("1") {
        panic!("{why}, and FSDELTA_REQUIRE_ALL=1 requires it");
    }
    eprintln!("{why}");
    false
}

#[test]
fn replays_debian_client_txt_and_prints_dbench_output() {
    if !available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("fsdelta")
        .unwrap()
        .args(["dbench", "-c", CLIENT_TXT, "-t", "3", "-D"])
        .arg(dir.path())
        .arg("2")
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let execute: Vec<&str> = stdout.lines().filter(|l| l.contains(" execute ")).collect();
    assert!(!execute.is_empty(), "{stdout}");
    for l in &execute {
        // "%4d  %8d  %7.2f MB/sec  execute %3.0f sec  latency %.03f ms"
        assert!(l.starts_with("   2  "), "{l}");
        assert!(l.ends_with(" ms") && l.contains(" MB/sec  execute "), "{l}");
    }
    assert!(
        stdout.contains("\n Operation      Count    AvgLat    MaxLat\n"),
        "{stdout}"
    );
    for op in ["NTCreateX", "ReadX", "WriteX", "Qpathinfo", "Flush"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!(" {op:<12} "))),
            "no {op} row in\n{stdout}"
        );
    }
    let last = stdout.lines().last().unwrap();
    assert!(last.starts_with("Throughput "), "{last}");
    assert!(
        last.contains(" MB/sec  2 clients  2 procs  max_latency="),
        "{last}"
    );
    let mbs: f64 = last.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(mbs > 0.0, "{last}");
    // The same throughput as the last execute tick (dbench prints that tick's value).
    let tick: f64 = execute
        .last()
        .unwrap()
        .split_whitespace()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    assert!((tick - mbs).abs() < 0.006, "{tick} vs {mbs}");
}

#[test]
fn a_missing_loadfile_is_an_error_that_names_the_problem() {
    let out = Command::cargo_bin("fsdelta")
        .unwrap()
        .args(["dbench", "-c", "/nonexistent/client.txt", "-t", "1", "1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot read loadfile /nonexistent/client.txt"),
        "{err}"
    );
}
