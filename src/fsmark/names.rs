//! File names and subdirectory choice, exactly as fs_mark 3.3 makes them.
//!
//! Why a module of its own: both are pure functions of the clock and a random stream, so they are
//! tested here without touching a filesystem, and the hot loop calls them without allocating.
//! Nothing here may allocate after construction, do I/O or read the clock itself (callers pass
//! the epoch second in).
//!
//! A name is `name_len` bytes: the last `name_len - rand_len` hex digits of the epoch second
//! (`%lx`), padded on the right with `~` when the time stamp is shorter, then `rand_len`
//! characters drawn uniformly from `[0-9A-Z]` (fs_mark draws `random()` until a digit or an
//! upper-case letter comes up; we draw from a xoshiro stream, same alphabet, same uniformity).

use super::options::DirPolicy;
use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

const ALPHABET: &[u8; 36] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// Writes fs_mark-style names into caller-owned buffers.
pub struct NameGen {
    seq_len: usize,
    rand_len: usize,
    rng: Xoshiro256PlusPlus,
}

impl NameGen {
    /// A generator for names of `seq_len` time-stamp bytes and `rand_len` random bytes.
    pub fn new(seq_len: usize, rand_len: usize, seed: u64) -> Self {
        NameGen {
            seq_len,
            rand_len,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    /// Length of every name.
    pub fn len(&self) -> usize {
        self.seq_len + self.rand_len
    }

    /// Whether names are empty (never, once options are validated).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fill `out` (exactly [`NameGen::len`] bytes) with the name for a file created in epoch
    /// second `sec`.
    #[inline]
    pub fn fill(&mut self, sec: u64, out: &mut [u8]) {
        debug_assert_eq!(out.len(), self.len());
        let (seq, rand) = out.split_at_mut(self.seq_len);
        // "%lx" of the second, most significant digit first.
        let mut hex = [0u8; 16];
        let mut n = 0;
        let mut v = sec;
        loop {
            hex[15 - n] = b"0123456789abcdef"[(v & 0xf) as usize];
            n += 1;
            v >>= 4;
            if v == 0 {
                break;
            }
        }
        let digits = &hex[16 - n..];
        if digits.len() >= seq.len() {
            // Keep the least significant digits: the most significant ones never change.
            seq.copy_from_slice(&digits[digits.len() - seq.len()..]);
        } else {
            seq[..digits.len()].copy_from_slice(digits);
            seq[digits.len()..].fill(b'~');
        }
        let mut chunks = rand.chunks_exact_mut(2);
        for pair in &mut chunks {
            let r = self.rng.next_u64();
            pair[0] = ALPHABET[pick36(r as u32)];
            pair[1] = ALPHABET[pick36((r >> 32) as u32)];
        }
        if let [last] = chunks.into_remainder() {
            *last = ALPHABET[pick36(self.rng.next_u64() as u32)];
        }
    }
}

/// Map 32 random bits onto 0..36 (multiply-shift; bias below 1e-8).
#[inline]
fn pick36(r: u32) -> usize {
    ((r as u64 * 36) >> 32) as usize
}

/// Which subdirectory (`%02x` of the returned number) the next file goes to, fs_mark's state
/// machine for one worker and one iteration.
#[derive(Clone, Debug)]
pub struct SubdirChooser {
    policy: DirPolicy,
    current: u32,
    files_in_current: u32,
    started: Option<u64>,
}

impl SubdirChooser {
    /// State at the start of an iteration: the first subdirectory is `now_sec % subdirs`, so
    /// that short runs do not all write into the first few (fs_mark's `setup()`).
    pub fn new(policy: DirPolicy, now_sec: u64) -> Self {
        let n = policy.subdirs();
        SubdirChooser {
            policy,
            current: if n > 0 {
                (now_sec % n as u64) as u32
            } else {
                0
            },
            files_in_current: 0,
            started: None,
        }
    }

    /// The subdirectory of the next file created in epoch second `sec`, or `None` without -D.
    #[inline]
    pub fn next(&mut self, sec: u64) -> Option<u32> {
        // The time hash measures from the first file's second.
        let start = *self.started.get_or_insert(sec);
        match self.policy {
            DirPolicy::NoSubdirs => None,
            DirPolicy::RoundRobin {
                subdirs,
                files_per_subdir,
            } => {
                if files_per_subdir > 0 {
                    if self.files_in_current >= files_per_subdir {
                        self.current += 1;
                        self.files_in_current = 0;
                    }
                    self.current %= subdirs;
                    self.files_in_current += 1;
                }
                Some(self.current)
            }
            DirPolicy::TimeHash {
                subdirs,
                secs_per_subdir,
            } => {
                if sec.saturating_sub(start) > secs_per_subdir {
                    self.current = (self.current + 1) % subdirs;
                    self.started = Some(sec);
                }
                Some(self.current)
            }
        }
    }
}

/// Write `%02x` of `n` into `out`, returning the number of bytes (2 to 8).
#[inline]
pub fn subdir_name(n: u32, out: &mut [u8; 8]) -> usize {
    let mut len = 0;
    let mut v = n;
    let mut tmp = [0u8; 8];
    loop {
        tmp[7 - len] = b"0123456789abcdef"[(v & 0xf) as usize];
        len += 1;
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    if len < 2 {
        tmp[6] = b'0';
        len = 2;
    }
    out[..len].copy_from_slice(&tmp[8 - len..]);
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(seq: usize, rand: usize, sec: u64) -> String {
        let mut g = NameGen::new(seq, rand, 42);
        let mut out = vec![0u8; g.len()];
        g.fill(sec, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn default_names_are_hex_seconds_padded_then_random() {
        let sec = 0x6930_3a3b;
        let n = name(16, 24, sec);
        assert_eq!(n.len(), 40);
        assert_eq!(&n[..16], "69303a3b~~~~~~~~");
        assert!(
            n[16..]
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase()),
            "{n}"
        );
    }

    #[test]
    fn short_time_stamp_keeps_the_least_significant_digits() {
        assert_eq!(name(4, 0, 0x6930_3a3b), "3a3b");
        assert_eq!(name(8, 0, 0x6930_3a3b), "69303a3b");
        assert_eq!(name(9, 0, 0x6930_3a3b), "69303a3b~");
        assert_eq!(name(3, 0, 0), "0~~");
        // No time stamp at all: only random characters.
        let n = name(0, 10, 0x6930_3a3b);
        assert_eq!(n.len(), 10);
        assert!(!n.contains('~'));
    }

    #[test]
    fn odd_random_lengths_are_filled() {
        for r in 0..8 {
            let n = name(2, r, 0xab);
            assert_eq!(n.len(), 2 + r);
            assert!(n[2..].bytes().all(|b| ALPHABET.contains(&b)));
        }
    }

    #[test]
    fn random_characters_cover_the_alphabet_evenly() {
        let mut g = NameGen::new(0, 36, 7);
        let mut counts = [0u32; 36];
        let mut out = [0u8; 36];
        for _ in 0..2000 {
            g.fill(0, &mut out);
            for b in out {
                counts[ALPHABET.iter().position(|a| *a == b).unwrap()] += 1;
            }
        }
        // 72000 draws, 2000 expected per character; 4 sigma is about 180.
        for (i, c) in counts.iter().enumerate() {
            assert!(
                (1800..2200).contains(c),
                "char {} drawn {c} times",
                ALPHABET[i] as char
            );
        }
    }

    #[test]
    fn names_differ_between_seeds_and_calls() {
        let mut g = NameGen::new(16, 24, 1);
        let mut a = [0u8; 40];
        let mut b = [0u8; 40];
        g.fill(5, &mut a);
        g.fill(5, &mut b);
        assert_ne!(a, b);
        assert_eq!(a[..16], b[..16]);
    }

    #[test]
    fn subdir_names_are_two_hex_digits_at_least() {
        let mut out = [0u8; 8];
        let mut s = |n| {
            let l = subdir_name(n, &mut out);
            String::from_utf8(out[..l].to_vec()).unwrap()
        };
        assert_eq!(s(0), "00");
        assert_eq!(s(9), "09");
        assert_eq!(s(15), "0f");
        assert_eq!(s(255), "ff");
        assert_eq!(s(256), "100");
        assert_eq!(s(u32::MAX), "ffffffff");
    }

    #[test]
    fn no_subdirs_without_d() {
        let mut c = SubdirChooser::new(DirPolicy::NoSubdirs, 1234);
        assert_eq!(c.next(1234), None);
        assert_eq!(c.next(99999), None);
    }

    #[test]
    fn round_robin_starts_at_time_mod_n_and_moves_every_n_files() {
        let policy = DirPolicy::RoundRobin {
            subdirs: 4,
            files_per_subdir: 3,
        };
        let mut c = SubdirChooser::new(policy, 1002); // 1002 % 4 = 2
        let got: Vec<u32> = (0..13).map(|_| c.next(1002).unwrap()).collect();
        assert_eq!(got, vec![2, 2, 2, 3, 3, 3, 0, 0, 0, 1, 1, 1, 2]);
    }

    #[test]
    fn round_robin_with_zero_per_subdir_stays_put() {
        let policy = DirPolicy::RoundRobin {
            subdirs: 5,
            files_per_subdir: 0,
        };
        let mut c = SubdirChooser::new(policy, 7);
        assert!((0..20).all(|_| c.next(7) == Some(2)));
    }

    #[test]
    fn time_hash_moves_after_more_than_180_seconds() {
        let policy = DirPolicy::TimeHash {
            subdirs: 3,
            secs_per_subdir: 180,
        };
        let t0 = 3000; // 3000 % 3 = 0
        let mut c = SubdirChooser::new(policy, t0);
        assert_eq!(c.next(t0 + 10), Some(0)); // clock starts at the first file
        assert_eq!(c.next(t0 + 190), Some(0)); // exactly 180 s later: not yet
        assert_eq!(c.next(t0 + 191), Some(1));
        assert_eq!(c.next(t0 + 371), Some(1));
        assert_eq!(c.next(t0 + 372), Some(2));
        assert_eq!(c.next(t0 + 553), Some(0)); // wraps
    }
}
