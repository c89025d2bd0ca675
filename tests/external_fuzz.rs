//! Seeded random mutations of every captured fixture, fed to every external parser (fs_mark,
//! dbench, fio, and the fio-JSON import): no input may panic, and an error's line must be a
//! line of the input. This is the stable-toolchain companion of the cargo-fuzz targets in
//! `fuzz/`, so that CI exercises the parsers on malformed output without nightly features.
//! Seeds are fixed (reproducible); set FSDELTA_FUZZ_ROUNDS to run more mutations per fixture.

mod common;

use fsdelta::dbench::external as dbench;
use fsdelta::fio::external as fio;
use fsdelta::fio::import::import_fio_json;
use fsdelta::fsmark::external as fsmark;
use fsdelta::workload::external::ParseError;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn fixtures() -> Vec<(String, String)> {
    let dir = format!("{}/tests/data/external", env!("CARGO_MANIFEST_DIR"));
    common::fuzz::fixtures(&dir, &["txt", "json"], 15)
        .into_iter()
        .map(|(name, bytes)| (name, String::from_utf8(bytes).unwrap()))
        .collect()
}

/// Pieces that push the parsers down their rarer paths.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "\n",
    "#",
    "FSUse%",
    "Count",
    "Throughput",
    "Operation",
    "MB/sec",
    "(sync",
    "max_latency=",
    "execute",
    "warmup",
    "latency",
    "-1",
    "1e309",
    "NaN",
    "18446744073709551616",
    "4294967295",
    "0.000000",
    "\"N\" : 0",
    "\"bins\" : {}",
    "\"jobname\"",
    "\"percentile\"",
    "é",
    "\u{0}",
    "\r",
    "          ",
];

fn mutate(rng: &mut Xoshiro256PlusPlus, text: &str) -> String {
    let mut b: Vec<u8> = text.as_bytes().to_vec();
    let edits = rng.random_range(1..=4);
    for _ in 0..edits {
        let len = b.len().max(1);
        let at = rng.random_range(0..len).min(b.len());
        let op = rng.random_range(0..9);
        if common::fuzz::edit(rng, &mut b, at, op, TOKENS, 64) {
            continue;
        }
        match op {
            5 => {
                // duplicate a line
                let s = String::from_utf8_lossy(&b).into_owned();
                let lines: Vec<&str> = s.lines().collect();
                if !lines.is_empty() {
                    let i = rng.random_range(0..lines.len());
                    let mut out: Vec<&str> = lines.clone();
                    out.insert(rng.random_range(0..=lines.len()), lines[i]);
                    b = out.join("\n").into_bytes();
                }
            }
            6 => {
                // swap two lines
                let s = String::from_utf8_lossy(&b).into_owned();
                let mut lines: Vec<&str> = s.lines().collect();
                if lines.len() > 1 {
                    let i = rng.random_range(0..lines.len());
                    let j = rng.random_range(0..lines.len());
                    lines.swap(i, j);
                    b = lines.join("\n").into_bytes();
                }
            }
            7 => {
                // a huge number where a number was
                if let Some(i) = (at..b.len()).find(|&i| b[i].is_ascii_digit()) {
                    b.splice(i..i, b"99999999999999999999".iter().copied());
                }
            }
            _ => {
                // drop a line
                let s = String::from_utf8_lossy(&b).into_owned();
                let mut lines: Vec<&str> = s.lines().collect();
                if !lines.is_empty() {
                    lines.remove(rng.random_range(0..lines.len()));
                    b = lines.join("\n").into_bytes();
                }
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn check_line(input: &str, e: &ParseError) {
    let lines = input.lines().count();
    assert!(
        e.line <= lines.max(1),
        "error line {} beyond the input's {lines} lines: {e}",
        e.line
    );
}

fn feed(input: &str) {
    match fsmark::parse(input) {
        Err(e) => check_line(input, &e),
        Ok(p) => {
            for m in p.metrics() {
                assert!(m.value.is_finite(), "fs_mark {} = {}", m.name, m.value);
            }
        }
    }
    match dbench::parse(input) {
        Err(e) => check_line(input, &e),
        Ok(p) => {
            for m in p.metrics() {
                assert!(m.value.is_finite(), "dbench {} = {}", m.name, m.value);
            }
        }
    }
    match fio::parse(input) {
        Err(e) => check_line(input, &e),
        Ok(p) => {
            for m in p.measurements().metrics {
                assert!(m.value.is_finite(), "fio {} = {}", m.name, m.value);
            }
        }
    }
    if let Err(e) = import_fio_json(input) {
        check_line(input, &e);
    }
}

#[test]
fn mutated_fixtures_never_panic_any_parser() {
    let rounds: usize = std::env::var("FSDELTA_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x0066_7364_656c_7461);
    let mut parsed_ok = 0usize;
    for (name, text) in fixtures() {
        feed(&text);
        for round in 0..rounds {
            let input = mutate(&mut rng, &text);
            let ok = std::panic::catch_unwind(|| feed(&input));
            if ok.is_err() {
                let path = std::env::temp_dir().join(format!("fsdelta-fuzz-{name}-{round}"));
                let _ = std::fs::write(&path, &input);
                panic!(
                    "{name}, round {round}: a parser panicked; the input is in {}",
                    path.display()
                );
            }
            if fsmark::parse(&input).is_ok()
                || dbench::parse(&input).is_ok()
                || fio::parse(&input).is_ok()
            {
                parsed_ok += 1;
            }
        }
    }
    // The mutations must leave some inputs readable, or the deeper paths go untested.
    assert!(parsed_ok > 0, "every mutation was rejected");
}

#[test]
fn every_parser_rejects_every_other_tools_output() {
    for (name, text) in fixtures() {
        let fs = fsmark::parse(&text).is_ok();
        let db = dbench::parse(&text).is_ok();
        let fi = fio::parse(&text).is_ok();
        let expected = (
            name.starts_with("fsmark") && !name.contains("error"),
            name.starts_with("dbench") && !name.contains("error"),
            name.starts_with("fio"),
        );
        assert_eq!((fs, db, fi), expected, "{name}");
    }
}
