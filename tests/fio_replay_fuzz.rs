//! The iolog reader (`fio::engine::replay::parse`, read_iolog=) on seeded random mutations of
//! every captured log in tests/data/fio-iolog (fio 3.33's and the hand-written version 2 one):
//! no input may panic; an accepted log keeps only lines of the input (each line number within
//! it, in order), a wait or I/O only with a known action, and a version of 2 or 3. Arbitrary
//! bytes (not UTF-8, blktrace's magic) are fed too. Seeds are fixed (reproducible); set
//! FSDELTA_FUZZ_ROUNDS to run more mutations per log. The stable-toolchain way the other
//! parsers are fuzzed (tests/external_fuzz.rs).

mod common;

use fsdelta::fio::engine::replay::{Timing, parse};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

fn logs() -> Vec<(String, Vec<u8>)> {
    common::fuzz::fixtures(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fio-iolog"),
        &["log"],
        5,
    )
}

/// Pieces that push the reader down its rarer paths.
const TOKENS: &[&str] = &[
    "fio version 2 iolog\n",
    "fio version 3 iolog\n",
    " add",
    " open",
    " close",
    " read ",
    " write ",
    " trim ",
    " sync ",
    " datasync ",
    " wait ",
    "18446744073709551615",
    "18446744073709551616",
    "4294967296",
    "-1",
    "\n",
    "\t",
    "\u{0}",
    "é",
    "\r\n",
];

fn mutate(rng: &mut Xoshiro256PlusPlus, input: &[u8]) -> Vec<u8> {
    let mut b = input.to_vec();
    for _ in 0..rng.random_range(1..=4) {
        let at = rng.random_range(0..=b.len());
        let op = rng.random_range(0..6);
        if !common::fuzz::edit(rng, &mut b, at, op, TOKENS, 48) {
            // a long word (fio's %256s keeps 256 bytes of it)
            b.splice(
                at..at,
                std::iter::repeat_n(b'x', rng.random_range(200..400)),
            );
        }
    }
    b
}

fn feed(input: &[u8]) {
    let lines = String::from_utf8_lossy(input).split_inclusive('\n').count();
    for timing in [
        Timing::default(),
        Timing {
            no_stall: true,
            time_scale: 1,
        },
    ] {
        if let Ok(p) = parse(input, "fuzz.log", timing) {
            assert!(p.version == 2 || p.version == 3);
            let mut last = 1;
            for l in &p.lines {
                assert!(l.number > last && l.number <= lines, "line {}", l.number);
                last = l.number;
                assert!(l.file.len() <= 256);
                assert!(l.len <= u32::MAX as u64);
            }
        }
    }
}

#[test]
fn mutated_logs_never_panic_the_reader() {
    let rounds: usize = std::env::var("FSDELTA_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(0x696f_6c6f_6721);
    for (name, text) in logs() {
        feed(&text);
        let p = parse(&text, &name, Timing::default()).unwrap();
        assert!(!p.lines.is_empty(), "{name}");
        for round in 0..rounds {
            let input = mutate(&mut rng, &text);
            if std::panic::catch_unwind(|| feed(&input)).is_err() {
                let path = std::env::temp_dir().join(format!("fsdelta-iolog-fuzz-{name}-{round}"));
                let _ = std::fs::write(&path, &input);
                panic!(
                    "{name} round {round}: the reader panicked; input kept at {}",
                    path.display()
                );
            }
        }
    }
    // Bytes that are not text, and blktrace's magic in both byte orders.
    for _ in 0..rounds {
        let n = rng.random_range(0..512);
        let junk: Vec<u8> = (0..n).map(|_| rng.random()).collect();
        feed(&junk);
    }
    for magic in [0x6561_7407u32.to_le_bytes(), 0x6561_7407u32.to_be_bytes()] {
        assert!(parse(&magic, "b", Timing::default()).is_err());
    }
}
