//! fio's ETA line and "Laying out IO file" lines under `fsdelta fio`, against real fio 3.33 on
//! the same job: with --eta=always the same kinds of line (the job counts, fio's rate bounds,
//! the run string, percent, rates, IOPS and time left), each ended by a carriage return, the
//! last followed by the report; none with --eta=never, with the default to a pipe, or when
//! stdout gets only JSON; the layout line where fio prints it.
mod common;

use std::process::Command;

fn run(tool: &str, dir: &std::path::Path, args: &[&str]) -> String {
    let mut c = if tool == "fio" {
        Command::new("fio")
    } else {
        let mut c = Command::new(env!("CARGO_BIN_EXE_fsdelta"));
        c.arg("fio");
        c
    };
    let o = c.args(args).current_dir(dir).output().unwrap();
    assert!(
        o.status.success(),
        "{tool}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// The shape of an ETA line: numbers replaced by 9 and rate units by B/s (a rate near a
/// unit's edge prints as 7.8MiB/s or 8000KiB/s by the second it was measured in), trailing
/// padding dropped.
fn shape(line: &str) -> String {
    let mut s: String = line
        .trim_end()
        .chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect();
    while s.contains("99") {
        s = s.replace("99", "9");
    }
    s = s.replace("9.9MiB/s", "9B/s").replace("9.9KiB/s", "9B/s");
    for unit in ["KiB/s", "MiB/s", "GiB/s"] {
        s = s.replace(&format!("9{unit}"), "9B/s");
    }
    s
}

/// The ETA lines of `out` (between the header and the report), and what follows them.
fn eta_lines(out: &str) -> (Vec<String>, String) {
    let Some(start) = out.find("Jobs: ") else {
        return (Vec::new(), out.to_string());
    };
    let end = out.rfind('\r').unwrap();
    let lines = out[start..end].split('\r').map(str::to_string).collect();
    (lines, out[end + 1..].to_string())
}

#[test]
fn eta_always_prints_fios_lines_and_never_does_not() {
    if !common::require_fio() {
        return;
    }
    let job = "[e]\nrw=randread\nbs=4k\nsize=16m\nrate_iops=2000\ntime_based\nruntime=6\n";
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(d.path().join("e.fio"), job).unwrap();
    let mut shapes = Vec::new();
    for tool in ["fio", "fsdelta"] {
        let _ = std::fs::remove_file(d.path().join("e.0.0"));
        let out = run(tool, d.path(), &["--eta=always", "e.fio"]);
        assert!(
            out.contains("e: Laying out IO file (1 file / 16MiB)\n"),
            "{tool}:\n{out}"
        );
        let (lines, rest) = eta_lines(&out);
        assert!(lines.len() >= 3, "{tool}: {lines:?}");
        assert!(rest.starts_with("\ne: (groupid=0"), "{tool}: {rest:?}");
        let s: std::collections::BTreeSet<String> = lines.iter().map(|l| shape(l)).collect();
        // Every line names the job count and fio's IOPS bounds; the estimate lines the
        // run string, percent, rates and time left.
        assert!(
            s.iter().all(|l| l.starts_with("Jobs: 9 (f=9), 9-9 IOPS")),
            "{tool}: {s:?}"
        );
        assert!(
            s.iter().any(
                |l| l.starts_with("Jobs: 9 (f=9), 9-9 IOPS: [r(9)][9.9%][r=9")
                    && l.ends_with("B/s][r=9 IOPS][eta 9m:9s]")
            ),
            "{tool}: {s:?}"
        );
        shapes.push(s);
    }
    // Every kind of line ours prints is one fio prints too; fio prints the estimate without
    // the rates when a second saw no I/O (it may or may not in one run), so that shape is
    // fio's too.
    let no_rates = "Jobs: 9 (f=9), 9-9 IOPS: [r(9)][9.9%][eta 9m:9s]";
    let extra: Vec<_> = shapes[1]
        .difference(&shapes[0])
        .filter(|l| l.as_str() != no_rates)
        .collect();
    assert!(
        extra.is_empty(),
        "ours only: {extra:?}\nfio: {:?}",
        shapes[0]
    );
    // Never, the default to a pipe, and JSON alone on stdout: no ETA line.
    for args in [
        &["--eta=never", "e.fio"][..],
        &["e.fio"][..],
        &["--eta=always", "--output-format=json", "e.fio"][..],
    ] {
        let out = run("fsdelta", d.path(), args);
        assert!(!out.contains("Jobs: ") && !out.contains('\r'), "{args:?}");
        // laid out already, or not the normal format: no layout line either
        assert!(!out.contains("Laying out"), "{args:?}");
    }
}

/// The lines before the report (up to the first blank line), with the version line and the
/// "Starting N process(es)/thread(s)" line, which differ by design, made neutral.
fn header_lines(out: &str) -> Vec<String> {
    out.lines()
        .take_while(|l| !l.is_empty())
        .map(|l| {
            if l.starts_with("fio-") || l.starts_with("fsdelta-fio-") {
                "VERSION".to_string()
            } else if l.starts_with("Starting ") {
                "STARTING".to_string()
            } else {
                l.to_string()
            }
        })
        .collect()
}

/// fio's start-up note of a synchronous engine with iodepth > 1 comes as the clone starts,
/// after its file is laid out, with or without the ETA line (it printed before the run, above
/// the layout line, when the ETA was on); with --output it appears nowhere, as fio's.
#[test]
fn start_up_notes_follow_the_layout_as_fios() {
    if !common::require_fio() {
        return;
    }
    let job = "[n]\nrw=read\nbs=4k\nsize=1m\nioengine=psync\niodepth=4\n";
    let d = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(d.path().join("n.fio"), job).unwrap();
    for args in [
        &["--eta=always", "n.fio"][..],
        &["--eta=never", "n.fio"][..],
    ] {
        let mut got = Vec::new();
        for tool in ["fio", "fsdelta"] {
            let _ = std::fs::remove_file(d.path().join("n.0.0"));
            got.push(header_lines(&run(tool, d.path(), args)));
        }
        assert!(
            got[0].iter().any(|l| l.starts_with("n: Laying out"))
                && got[0].iter().any(|l| l.starts_with("note: both iodepth")),
            "{args:?}: {:?}",
            got[0]
        );
        assert_eq!(got[1], got[0], "{args:?}: fsdelta, then fio");
    }
    let mut files = Vec::new();
    for tool in ["fio", "fsdelta"] {
        let _ = std::fs::remove_file(d.path().join("n.0.0"));
        let out = run(tool, d.path(), &["--output=o.txt", "n.fio"]);
        assert_eq!(out, "", "{tool}: stdout with --output");
        files.push(header_lines(
            &std::fs::read_to_string(d.path().join("o.txt")).unwrap(),
        ));
    }
    assert!(
        !files[0].iter().any(|l| l.starts_with("note:")),
        "{files:?}"
    );
    assert_eq!(
        files[1], files[0],
        "the --output file's header: fsdelta, then fio"
    );
}
