//! What the seeded fuzz tests of external input share (tests/external_fuzz.rs,
//! tests/fio_replay_fuzz.rs): the captured inputs they start from, and the byte edits every
//! mutation is made of. Each test keeps its own choice of where and which edit (its random
//! sequence), and its own edits beyond these.

use rand::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

/// Every file of `dir` whose extension is one of `exts`, by name, with its bytes; at least
/// `at_least` of them, or the fixtures are missing.
pub fn fixtures(dir: &str, exts: &[&str], at_least: usize) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| exts.iter().any(|x| e == *x)))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    assert!(v.len() >= at_least, "fixtures missing from {dir}");
    v
}

/// Edit `op` of the common five at `at` in `b`: 0 flips a bit of the byte there, 1 deletes up
/// to `max_delete - 1` bytes from it, 2 inserts one of `tokens`, 3 changes the next digit, 4
/// truncates there. `false` (nothing drawn, nothing done) for another `op`: the caller's own.
pub fn edit(
    rng: &mut Xoshiro256PlusPlus,
    b: &mut Vec<u8>,
    at: usize,
    op: u32,
    tokens: &[&str],
    max_delete: usize,
) -> bool {
    match op {
        0 => {
            if at < b.len() {
                b[at] ^= 1 << rng.random_range(0..8);
            }
        }
        1 => {
            let end = (at + rng.random_range(1..max_delete)).min(b.len());
            b.drain(at..end);
        }
        2 => {
            let t = tokens[rng.random_range(0..tokens.len())];
            b.splice(at..at, t.bytes());
        }
        3 => {
            if let Some(i) = (at..b.len()).find(|&i| b[i].is_ascii_digit()) {
                b[i] = b"0123456789"[rng.random_range(0..10)];
            }
        }
        4 => b.truncate(at),
        _ => return false,
    }
    true
}
