//! fio's verify, in fio 3.33's on-disk format: every verify interval of a written block starts
//! with fio's `struct verify_header` (magic 0xacca, verify type, length, rand_seed, offset,
//! time, thread, numberio, crc32c of the header), followed by the checksum of the data after
//! it; with `verify_offset=` the header is swapped with the bytes at that offset. Files written
//! by fio verify under fsdelta and the other way round.
//!
//! Why it exists: fio job files that check data integrity must fail when the data read back is
//! not what was written, and say where, in fio's words ("crc32c: verify failed at file F offset
//! N, length L"). What it must never do: pass a block it did not check (as far as fio's sum
//! covers it: fio's sha512 covers part of the data, verify=null nothing), or report a failure
//! without its file and offset.
//!
//! fio's own checksum code is reproduced where it is not the textbook algorithm: its sha256
//! appends the bit count little-endian and keeps the low byte of each state word plus the tail
//! of its last block (64 bytes in the header); its sha512 never finishes the hash and stores
//! the hash's input buffer (the data's tail and part of its first 128 bytes: only those bytes
//! are checked, by fio and so by fsdelta); its sha1 words are stored in host (little-endian)
//! order; its crc64 has no initial or final inversion; its crc32c (also the header's) is not
//! inverted at the end; its crc32 is MSB-first, from 0, not inverted; crc16 is CRC-16/ARC,
//! crc7 CRC-7/MMC, the sha3 kinds FIPS 202. verify=null writes and checks nothing (the blocks
//! are still read back). verify=pattern is fio's headerless pattern; verify_pattern= without
//! verify= writes a header (type pattern) and the pattern after it. The header's rand_seed is
//! not checked: fio takes it from the header itself unless a job both reads and writes, which
//! fsdelta refuses with verify.

use crate::fio::jobfile::VerifyKind;
use crate::fio::jobfile::pattern::Pattern;

/// fio's `struct verify_header` size.
pub const HEADER_LEN: usize = 40;
/// fio's FIO_HDR_MAGIC.
pub const MAGIC: u16 = 0xacca;

/// fio's verify type number (enum in verify.h).
pub fn type_code(k: VerifyKind) -> u16 {
    match k {
        VerifyKind::Meta => 1,
        VerifyKind::Md5 => 2,
        VerifyKind::Crc64 => 3,
        VerifyKind::Crc32 => 4,
        // fio 3.33's option table maps crc32c-intel to VERIFY_CRC32C: its headers say 5.
        VerifyKind::Crc32c | VerifyKind::Crc32cIntel => 5,
        VerifyKind::Crc16 => 7,
        VerifyKind::Crc7 => 8,
        VerifyKind::Sha256 => 9,
        VerifyKind::Sha512 => 10,
        VerifyKind::Sha3_224 => 11,
        VerifyKind::Sha3_256 => 12,
        VerifyKind::Sha3_384 => 13,
        VerifyKind::Sha3_512 => 14,
        VerifyKind::Xxhash => 15,
        VerifyKind::Sha1 => 16,
        VerifyKind::Pattern => 17,
        VerifyKind::PatternNoHdr => 18,
        VerifyKind::Null => 19,
    }
}

/// The checksum bytes after the header (fio's vhdr_* sizes).
pub fn sum_len(k: VerifyKind) -> usize {
    match k {
        VerifyKind::Meta | VerifyKind::Pattern | VerifyKind::PatternNoHdr | VerifyKind::Null => 0,
        VerifyKind::Md5 => 16,
        VerifyKind::Crc64 => 8,
        VerifyKind::Crc32 | VerifyKind::Crc32c | VerifyKind::Crc32cIntel | VerifyKind::Xxhash => 4,
        VerifyKind::Crc16 => 2,
        VerifyKind::Crc7 => 1,
        VerifyKind::Sha256 => 64,
        VerifyKind::Sha512 => 128,
        VerifyKind::Sha3_224 => 28,
        VerifyKind::Sha3_256 => 32,
        VerifyKind::Sha3_384 => 48,
        VerifyKind::Sha3_512 => 64,
        VerifyKind::Sha1 => 20,
    }
}

/// Header plus checksum (fio's __hdr_size; nothing for verify=pattern and verify=null, which
/// write no header).
pub fn hdr_size(k: VerifyKind) -> usize {
    if matches!(k, VerifyKind::PatternNoHdr | VerifyKind::Null) {
        return 0;
    }
    HEADER_LEN + sum_len(k)
}

/// The name fio prints in a checksum failure.
fn sum_name(k: VerifyKind) -> &'static str {
    match k {
        VerifyKind::Meta => "meta",
        VerifyKind::Md5 => "md5",
        VerifyKind::Crc64 => "crc64",
        VerifyKind::Crc32 => "crc32",
        VerifyKind::Crc32c | VerifyKind::Crc32cIntel => "crc32c",
        VerifyKind::Crc16 => "crc16",
        VerifyKind::Crc7 => "crc7",
        VerifyKind::Sha256 => "sha256",
        VerifyKind::Sha512 => "sha512",
        VerifyKind::Sha3_224 => "sha3-224",
        VerifyKind::Sha3_256 => "sha3-256",
        VerifyKind::Sha3_384 => "sha3-384",
        VerifyKind::Sha3_512 => "sha3-512",
        VerifyKind::Xxhash => "xxhash",
        VerifyKind::Sha1 => "sha1",
        VerifyKind::Pattern | VerifyKind::PatternNoHdr => "pattern",
        VerifyKind::Null => "null",
    }
}

/// fio's crc32c (crc/crc32c.c, and its SSE4.2 version): CRC-32C (Castagnoli) started at ~0
/// and, unlike the textbook CRC-32C, not inverted at the end.
pub fn crc32c(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let t = TABLE.get_or_init(|| reflected_table32(0x82F6_3B78));
    let mut crc = !0u32;
    for &b in data {
        crc = t[((crc ^ b as u32) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

fn reflected_table32(poly: u32) -> [u32; 256] {
    let mut t = [0u32; 256];
    for (i, e) in t.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { poly ^ (c >> 1) } else { c >> 1 };
        }
        *e = c;
    }
    t
}

/// fio's crc32 (crc/crc32.c, from GNU cksum): CRC-32 most significant bit first with
/// polynomial 0x04C11DB7, started at 0, not inverted and, unlike cksum, without the length.
pub fn crc32(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let t = TABLE.get_or_init(|| {
        std::array::from_fn(|i| {
            let mut c = (i as u32) << 24;
            for _ in 0..8 {
                c = if c & 0x8000_0000 != 0 {
                    (c << 1) ^ 0x04C1_1DB7
                } else {
                    c << 1
                };
            }
            c
        })
    });
    let mut crc = 0u32;
    for &b in data {
        crc = (crc << 8) ^ t[((crc >> 24) ^ b as u32) as usize & 0xff];
    }
    crc
}

/// fio's crc16 (crc/crc16.c): reflected polynomial 0xA001 (0x8005), started at 0, not
/// inverted (CRC-16/ARC).
pub fn crc16(data: &[u8]) -> u16 {
    static TABLE: std::sync::OnceLock<[u16; 256]> = std::sync::OnceLock::new();
    let t = TABLE.get_or_init(|| {
        std::array::from_fn(|i| {
            let mut c = i as u16;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xA001 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            c
        })
    });
    let mut crc = 0u16;
    for &b in data {
        crc = (crc >> 8) ^ t[((crc ^ b as u16) & 0xff) as usize];
    }
    crc
}

/// fio's crc7 (crc/crc7.c, Linux's old crc7): x^7 + x^3 + 1, most significant bit first,
/// started at 0, the 7-bit value in the low bits (CRC-7/MMC). Its table entry `i` is
/// `i * x^7 mod P`, looked up with `(crc << 1) ^ byte`.
pub fn crc7(data: &[u8]) -> u8 {
    static TABLE: std::sync::OnceLock<[u8; 256]> = std::sync::OnceLock::new();
    let t = TABLE.get_or_init(|| {
        std::array::from_fn(|i| {
            let mut v = (i as u32) << 7;
            for bit in (7..15).rev() {
                if v & (1 << bit) != 0 {
                    v ^= 0x89 << (bit - 7);
                }
            }
            v as u8
        })
    });
    let mut crc = 0u8;
    for &b in data {
        crc = t[((crc << 1) ^ b) as usize];
    }
    crc
}

/// Keccak-f[1600] (FIPS 202), as fio's crc/sha3.c.
fn keccakf(st: &mut [u64; 25]) {
    const RC: [u64; 24] = [
        0x0000000000000001,
        0x0000000000008082,
        0x800000000000808a,
        0x8000000080008000,
        0x000000000000808b,
        0x0000000080000001,
        0x8000000080008081,
        0x8000000000008009,
        0x000000000000008a,
        0x0000000000000088,
        0x0000000080008009,
        0x000000008000000a,
        0x000000008000808b,
        0x800000000000008b,
        0x8000000000008089,
        0x8000000000008003,
        0x8000000000008002,
        0x8000000000000080,
        0x000000000000800a,
        0x800000008000000a,
        0x8000000080008081,
        0x8000000000008080,
        0x0000000080000001,
        0x8000000080008008,
    ];
    const ROTC: [u32; 24] = [
        1, 3, 6, 10, 15, 21, 28, 36, 45, 55, 2, 14, 27, 41, 56, 8, 25, 43, 62, 18, 39, 61, 20, 44,
    ];
    const PILN: [usize; 24] = [
        10, 7, 11, 17, 18, 3, 5, 16, 8, 21, 24, 4, 15, 23, 19, 13, 12, 2, 20, 14, 22, 9, 6, 1,
    ];
    for rc in RC {
        let bc: [u64; 5] =
            std::array::from_fn(|i| st[i] ^ st[i + 5] ^ st[i + 10] ^ st[i + 15] ^ st[i + 20]);
        for i in 0..5 {
            let t = bc[(i + 4) % 5] ^ bc[(i + 1) % 5].rotate_left(1);
            for j in (0..25).step_by(5) {
                st[j + i] ^= t;
            }
        }
        let mut t = st[1];
        for (&j, &r) in PILN.iter().zip(&ROTC) {
            let next = st[j];
            st[j] = t.rotate_left(r);
            t = next;
        }
        for j in (0..25).step_by(5) {
            let row: [u64; 5] = std::array::from_fn(|i| st[j + i]);
            for i in 0..5 {
                st[j + i] ^= !row[(i + 1) % 5] & row[(i + 2) % 5];
            }
        }
        st[0] ^= rc;
    }
}

/// SHA3-`md_len * 8` of `data` (fio's crc/sha3.c: the standard FIPS 202 digest).
pub fn sha3(data: &[u8], md_len: usize) -> Sum {
    let rsiz = 200 - 2 * md_len;
    let mut st = [0u64; 25];
    let absorb = |st: &mut [u64; 25], block: &[u8]| {
        for (w, c) in st.iter_mut().zip(block.chunks_exact(8)) {
            *w ^= u64::from_le_bytes(c.try_into().expect("8 bytes"));
        }
        keccakf(st);
    };
    let mut blocks = data.chunks_exact(rsiz);
    for b in &mut blocks {
        absorb(&mut st, b);
    }
    let rest = blocks.remainder();
    let mut last = [0u8; 144];
    last[..rest.len()].copy_from_slice(rest);
    last[rest.len()] = 0x06;
    last[rsiz - 1] |= 0x80;
    absorb(&mut st, &last[..rsiz]);
    let mut out = [0u8; 200];
    for (o, w) in out.chunks_exact_mut(8).zip(st) {
        o.copy_from_slice(&w.to_le_bytes());
    }
    Sum::of(&out[..md_len])
}

/// The 128 bytes fio 3.33's sha512 verify stores (crc/sha512.c and verify.c's fill_sha512):
/// fio calls fio_sha512_update and no final step, and keeps the context's input buffer, not
/// the state. So the "sum" of `data` (at least 128 bytes) is its tail after the last whole
/// 128-byte block, followed by the rest of the first block from that length on.
/// Only those bytes are checked, as in fio. Shorter data would leave bytes fio never writes
/// (its verify compares them with an uninitialised buffer): the caller refuses it.
pub fn sha512_fio(data: &[u8]) -> [u8; 128] {
    debug_assert!(data.len() >= 128, "fio's sha512 needs 128 bytes of data");
    let rem = data.len() % 128;
    let mut out = [0u8; 128];
    out[..rem].copy_from_slice(&data[data.len() - rem..]);
    out[rem..].copy_from_slice(&data[rem..128]);
    out
}

/// Bytes of data after the header fio's sha512 needs (see [`sha512_fio`]).
pub const SHA512_MIN_DATA: usize = 128;

/// fio's crc64 (crc/crc64.c): reflected polynomial 0x95AC9329AC4BC9B5, start 0, no inversion.
pub fn crc64(data: &[u8]) -> u64 {
    static TABLE: std::sync::OnceLock<[u64; 256]> = std::sync::OnceLock::new();
    let t = TABLE.get_or_init(|| {
        let mut t = [0u64; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u64;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0x95AC_9329_AC4B_C9B5 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *e = c;
        }
        t
    });
    let mut crc = 0u64;
    for &b in data {
        crc = t[((crc ^ b as u64) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// XXH32 with seed 1, as fio's xxhash verify.
pub fn xxh32(data: &[u8], seed: u32) -> u32 {
    const P1: u32 = 2654435761;
    const P2: u32 = 2246822519;
    const P3: u32 = 3266489917;
    const P4: u32 = 668265263;
    const P5: u32 = 374761393;
    let rd = |p: &[u8]| u32::from_le_bytes([p[0], p[1], p[2], p[3]]);
    let round = |v: u32, x: u32| {
        v.wrapping_add(x.wrapping_mul(P2))
            .rotate_left(13)
            .wrapping_mul(P1)
    };
    let mut p = data;
    let mut h = if data.len() >= 16 {
        let mut v = [
            seed.wrapping_add(P1).wrapping_add(P2),
            seed.wrapping_add(P2),
            seed,
            seed.wrapping_sub(P1),
        ];
        while p.len() >= 16 {
            for (i, vi) in v.iter_mut().enumerate() {
                *vi = round(*vi, rd(&p[i * 4..]));
            }
            p = &p[16..];
        }
        v[0].rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18))
    } else {
        seed.wrapping_add(P5)
    };
    h = h.wrapping_add(data.len() as u32);
    while p.len() >= 4 {
        h = h
            .wrapping_add(rd(p).wrapping_mul(P3))
            .rotate_left(17)
            .wrapping_mul(P4);
        p = &p[4..];
    }
    for &b in p {
        h = h
            .wrapping_add((b as u32).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^ (h >> 16)
}

/// MD5 digest (fio stores the four state words little-endian: the standard digest bytes).
pub fn md5(data: &[u8]) -> [u8; 16] {
    const S: [u32; 64] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5,
        9, 14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10,
        15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ];
    static K: std::sync::OnceLock<[u32; 64]> = std::sync::OnceLock::new();
    let k = K.get_or_init(|| {
        std::array::from_fn(|i| ((i as f64 + 1.0).sin().abs() * 4294967296.0) as u32)
    });
    let mut h = [0x67452301u32, 0xefcdab89, 0x98badcfe, 0x10325476];
    let block = |h: &mut [u32; 4], b: &[u8]| {
        let m: [u32; 16] =
            std::array::from_fn(|i| u32::from_le_bytes(b[i * 4..i * 4 + 4].try_into().expect("4")));
        let [mut a, mut bb, mut c, mut d] = *h;
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((bb & c) | (!bb & d), i),
                1 => ((d & bb) | (!d & c), (5 * i + 1) % 16),
                2 => (bb ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (bb | !d), (7 * i) % 16),
            };
            let t = d;
            d = c;
            c = bb;
            bb = bb.wrapping_add(
                a.wrapping_add(f)
                    .wrapping_add(k[i])
                    .wrapping_add(m[g])
                    .rotate_left(S[i]),
            );
            a = t;
        }
        h[0] = h[0].wrapping_add(a);
        h[1] = h[1].wrapping_add(bb);
        h[2] = h[2].wrapping_add(c);
        h[3] = h[3].wrapping_add(d);
    };
    let (tail, n) = md_padded(data, (data.len() as u64 * 8).to_le_bytes());
    for b in data.chunks_exact(64).chain(tail[..n].chunks_exact(64)) {
        block(&mut h, b);
    }
    let mut out = [0u8; 16];
    for (o, w) in out.chunks_exact_mut(4).zip(h) {
        o.copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// The last one or two 64-byte blocks of a Merkle-Damgard hash (the data's tail, 0x80, zeros
/// and the 8 length bytes) and how many bytes of them there are (64 or 128).
fn md_padded(data: &[u8], len: [u8; 8]) -> ([u8; 128], usize) {
    let rest = &data[data.len() / 64 * 64..];
    let mut t = [0u8; 128];
    t[..rest.len()].copy_from_slice(rest);
    t[rest.len()] = 0x80;
    let n = if rest.len() < 56 { 64 } else { 128 };
    t[n - 8..n].copy_from_slice(&len);
    (t, n)
}

fn sha256_blocks(h: &mut [u32; 8], b: &[u8]) {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut w = [0u32; 64];
    for (i, c) in b.chunks_exact(4).enumerate() {
        w[i] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
    }
    for i in 16..64 {
        let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
        let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16]
            .wrapping_add(s0)
            .wrapping_add(w[i - 7])
            .wrapping_add(s1);
    }
    let mut s = *h;
    for i in 0..64 {
        let e = s[4];
        let a = s[0];
        let t1 = s[7]
            .wrapping_add(e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25))
            .wrapping_add((e & s[5]) ^ (!e & s[6]))
            .wrapping_add(K[i])
            .wrapping_add(w[i]);
        let t2 = (a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22))
            .wrapping_add((a & s[1]) ^ (a & s[2]) ^ (s[1] & s[2]));
        s = [
            t1.wrapping_add(t2),
            a,
            s[1],
            s[2],
            s[3].wrapping_add(t1),
            s[4],
            s[5],
            s[6],
        ];
    }
    for (x, y) in h.iter_mut().zip(s) {
        *x = x.wrapping_add(y);
    }
}

/// The SHA-256 of textbook FIPS 180-4 (for the test vectors).
pub fn sha256_standard(data: &[u8]) -> [u8; 32] {
    let mut h = SHA256_H;
    let (tail, n) = md_padded(data, (data.len() as u64 * 8).to_be_bytes());
    for b in data.chunks_exact(64).chain(tail[..n].chunks_exact(64)) {
        sha256_blocks(&mut h, b);
    }
    let mut out = [0u8; 32];
    for (o, w) in out.chunks_exact_mut(4).zip(h) {
        o.copy_from_slice(&w.to_be_bytes());
    }
    out
}

const SHA256_H: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// The 64 bytes fio 3.33's sha256 verify stores (crc/sha256.c): its last padded block, with the
/// bit count appended little-endian, whose first 8 bytes are replaced by the low byte of each
/// state word (fio writes `buf[i] = state[i]` into a byte array).
pub fn sha256_fio(data: &[u8]) -> [u8; 64] {
    let mut h = SHA256_H;
    let (tail, n) = md_padded(data, (data.len() as u64 * 8).to_le_bytes());
    for b in data.chunks_exact(64).chain(tail[..n].chunks_exact(64)) {
        sha256_blocks(&mut h, b);
    }
    let mut out = [0u8; 64];
    out.copy_from_slice(&tail[n - 64..n]);
    for (o, w) in out.iter_mut().zip(h) {
        *o = w as u8;
    }
    out
}

fn sha1_words(data: &[u8]) -> [u32; 5] {
    let mut h = [
        0x67452301u32,
        0xefcdab89,
        0x98badcfe,
        0x10325476,
        0xc3d2e1f0,
    ];
    let (tail, n) = md_padded(data, (data.len() as u64 * 8).to_be_bytes());
    let mut block = |b: &[u8]| {
        let mut w = [0u32; 80];
        for (i, c) in b.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b2, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i / 20 {
                0 => ((b2 & c) | (!b2 & d), 0x5a827999),
                1 => (b2 ^ c ^ d, 0x6ed9eba1),
                2 => ((b2 & c) | (b2 & d) | (c & d), 0x8f1bbcdc),
                _ => (b2 ^ c ^ d, 0xca62c1d6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            e = d;
            d = c;
            c = b2.rotate_left(30);
            b2 = a;
            a = t;
        }
        for (x, y) in h.iter_mut().zip([a, b2, c, d, e]) {
            *x = x.wrapping_add(y);
        }
    };
    for b in data.chunks_exact(64).chain(tail[..n].chunks_exact(64)) {
        block(b);
    }
    h
}

/// SHA-1 as fio stores it: the five state words in host (little-endian) order.
pub fn sha1_fio(data: &[u8]) -> [u8; 20] {
    let mut out = [0u8; 20];
    for (o, w) in out.chunks_exact_mut(4).zip(sha1_words(data)) {
        o.copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// A checksum's bytes (fixed storage: no allocation per block).
#[derive(Clone, Copy)]
pub struct Sum {
    bytes: [u8; 128],
    len: usize,
}

impl Sum {
    fn of(v: &[u8]) -> Sum {
        let mut bytes = [0u8; 128];
        bytes[..v.len()].copy_from_slice(v);
        Sum {
            bytes,
            len: v.len(),
        }
    }
}

impl AsRef<[u8]> for Sum {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The checksum bytes of `data` for kind `k` (empty for meta and pattern).
pub fn checksum(k: VerifyKind, data: &[u8]) -> Sum {
    match k {
        VerifyKind::Meta | VerifyKind::Pattern | VerifyKind::PatternNoHdr | VerifyKind::Null => {
            Sum::of(&[])
        }
        VerifyKind::Md5 => Sum::of(&md5(data)),
        VerifyKind::Crc64 => Sum::of(&crc64(data).to_le_bytes()),
        VerifyKind::Crc32 => Sum::of(&crc32(data).to_le_bytes()),
        VerifyKind::Crc32c | VerifyKind::Crc32cIntel => Sum::of(&crc32c(data).to_le_bytes()),
        VerifyKind::Crc16 => Sum::of(&crc16(data).to_le_bytes()),
        VerifyKind::Crc7 => Sum::of(&[crc7(data)]),
        VerifyKind::Sha256 => Sum::of(&sha256_fio(data)),
        VerifyKind::Sha512 => Sum::of(&sha512_fio(data)),
        VerifyKind::Sha3_224 => sha3(data, 28),
        VerifyKind::Sha3_256 => sha3(data, 32),
        VerifyKind::Sha3_384 => sha3(data, 48),
        VerifyKind::Sha3_512 => sha3(data, 64),
        VerifyKind::Xxhash => Sum::of(&xxh32(data, 1).to_le_bytes()),
        VerifyKind::Sha1 => Sum::of(&sha1_fio(data)),
    }
}

/// The fields of one header fio fills (the rest are fixed per job).
#[derive(Clone, Copy, Debug, Default)]
pub struct Stamp {
    /// The seed the block's random content came from (0 with a pattern).
    pub rand_seed: u64,
    /// The write's number (fio's io_u->numberio: writes issued before it).
    pub numberio: u16,
    /// When the write was prepared.
    pub time_sec: u32,
    /// Nanoseconds part of that time.
    pub time_nsec: u32,
}

/// The job's verify settings, fixed before the clock starts.
#[derive(Clone, Debug)]
pub struct Verifier {
    /// verify=.
    pub kind: VerifyKind,
    /// Bytes covered by one header (fio's verify_interval, at most the write size).
    pub interval: usize,
    /// verify_pattern=.
    pub pattern: Option<Pattern>,
    /// verify_offset=: where the header is swapped to.
    pub header_at: usize,
    /// fio's thread number of the job (the header's `thread`).
    pub thread: u16,
    /// Check each header's numberio against the logged write's (fio: a write job with one
    /// block size, not time_based).
    pub check_numberio: bool,
    /// verify_dump=: write the received and expected bytes of a failed block.
    pub dump: bool,
    /// verify_fatal=: stop at a block's first failed interval (else every failed interval
    /// of the block is reported, as fio does).
    pub fatal: bool,
}

/// A verify failure: fio's message, and what fio's verify_dump writes.
#[derive(Debug)]
pub struct Failure {
    /// fio's message, naming file and offset.
    pub message: String,
    /// Offset of the failed interval in the file.
    pub at: u64,
    /// The interval as read.
    pub received: Vec<u8>,
    /// The interval as it should be (None for a header failure: fio dumps the header only).
    pub expected: Option<Vec<u8>>,
    /// fio prints it but the I/O does not fail: without verify_fatal fio's verify_io_u keeps
    /// only the last interval's result, so a failed interval followed by a good one in the
    /// same I/O (a write of several intervals, as bsrange and bssplit make) is lost.
    pub lost: bool,
}

impl Verifier {
    /// Header spacing within an I/O of `len` bytes (fio's get_hdr_inc).
    pub fn hdr_inc(&self, len: usize) -> usize {
        if self.interval > 0 && self.interval <= len {
            self.interval
        } else {
            len
        }
    }

    /// Fill `buf` (the content is already random or the caller wants the pattern) with the
    /// pattern if any, and stamp every interval's header and checksum (fio's
    /// fill_pattern_headers / populate_hdr). `offset` is where the block goes.
    pub fn populate(&self, buf: &mut [u8], offset: u64, s: Stamp) {
        if self.kind == VerifyKind::Null {
            // fio's populate_verify_io_u: verify=null leaves the buffer as it is.
            return;
        }
        if let Some(p) = &self.pattern {
            p.fill(buf, offset);
        }
        let inc = self.hdr_inc(buf.len());
        let hs = hdr_size(self.kind);
        if self.kind == VerifyKind::PatternNoHdr {
            return;
        }
        for (num, chunk) in buf.chunks_mut(inc).enumerate() {
            if chunk.len() <= hs {
                continue;
            }
            let off = offset + (num * self.interval) as u64;
            let mut h = [0u8; HEADER_LEN];
            h[0..2].copy_from_slice(&MAGIC.to_le_bytes());
            h[2..4].copy_from_slice(&type_code(self.kind).to_le_bytes());
            h[4..8].copy_from_slice(&(inc as u32).to_le_bytes());
            h[8..16].copy_from_slice(&s.rand_seed.to_le_bytes());
            h[16..24].copy_from_slice(&off.to_le_bytes());
            h[24..28].copy_from_slice(&s.time_sec.to_le_bytes());
            h[28..32].copy_from_slice(&s.time_nsec.to_le_bytes());
            h[32..34].copy_from_slice(&self.thread.to_le_bytes());
            h[34..36].copy_from_slice(&s.numberio.to_le_bytes());
            let hcrc = crc32c(&h[..36]);
            h[36..40].copy_from_slice(&hcrc.to_le_bytes());
            chunk[..HEADER_LEN].copy_from_slice(&h);
            let sum = checksum(self.kind, &chunk[hs..]);
            chunk[HEADER_LEN..hs].copy_from_slice(sum.as_ref());
            if self.header_at > 0 && self.header_at + hs <= chunk.len() {
                swap(chunk, self.header_at, hs);
            }
        }
    }

    /// Check a block read from `offset` of `file`; `numberio` is the logged write's number
    /// (None when it is not to be checked, as for a read-only job).
    pub fn check(
        &self,
        buf: &mut [u8],
        offset: u64,
        numberio: Option<u16>,
        file: &str,
    ) -> Result<(), Vec<Failure>> {
        if self.kind == VerifyKind::Null {
            // fio's verify_io_u: verify=null pretends.
            return Ok(());
        }
        let mut failed = Vec::new();
        let inc = self.hdr_inc(buf.len());
        let hs = hdr_size(self.kind);
        let buflen = buf.len();
        let req = format!("(requested block: offset={offset}, length={buflen})");
        // Whether the last interval checked failed: fio's ret after its loop.
        let mut last_failed = false;
        for num in 0..buflen.div_ceil(inc) {
            let start = num * inc;
            let chunk = &mut buf[start..(start + inc).min(buflen)];
            if chunk.len() <= hs || (hs == 0 && chunk.is_empty()) {
                continue;
            }
            let at = offset + start as u64;
            if self.header_at > 0 && self.header_at + hs <= chunk.len() {
                swap(chunk, self.header_at, hs);
            }
            let u16_at = |a: usize| u16::from_le_bytes([chunk[a], chunk[a + 1]]);
            let u32_at =
                |a: usize| u32::from_le_bytes(chunk[a..a + 4].try_into().expect("4 bytes"));
            let u64_at =
                |a: usize| u64::from_le_bytes(chunk[a..a + 8].try_into().expect("8 bytes"));
            let want_off = offset + (num * self.interval) as u64;
            let no_hdr = self.kind == VerifyKind::PatternNoHdr;
            let bad = if no_hdr {
                None
            } else if u16_at(0) != MAGIC {
                Some(format!(
                    "bad magic header {:x}, wanted {MAGIC:x}",
                    u16_at(0)
                ))
            } else if u32_at(4) as usize != inc {
                Some(format!("bad header length {}, wanted {inc}", u32_at(4)))
            } else if u64_at(16) != want_off {
                Some(format!("bad header offset {}, wanted {offset}", u64_at(16)))
            } else if numberio.is_some_and(|n| n != u16_at(34)) {
                Some(format!(
                    "bad header numberio {}, wanted {}",
                    u16_at(34),
                    numberio.unwrap_or(0)
                ))
            } else if crc32c(&chunk[..36]) != u32_at(36) {
                Some(format!(
                    "bad header crc {:x}, calculated {:x}",
                    u32_at(36),
                    crc32c(&chunk[..36])
                ))
            } else {
                None
            };
            if let Some(b) = bad {
                // fio's verify_header failing ends the block's check, verify_fatal or not.
                failed.push(Failure {
                    message: format!("verify: {b} at file {file} offset {at}, length {inc} {req}"),
                    at,
                    received: chunk.to_vec(),
                    expected: None,
                    lost: false,
                });
                return Err(failed);
            }
            let stamp = Stamp {
                rand_seed: u64_at(8),
                numberio: u16_at(34),
                time_sec: u32_at(24),
                time_nsec: u32_at(28),
            };
            // fio's log_verify_failure: "<name>: verify failed at ...", then the sums.
            let fail = |name: &str, sums: String, chunk: &[u8], exp: Vec<u8>| {
                Box::new(Failure {
                    message: format!(
                        "{name}: verify failed at file {file} offset {at}, length {inc} (requested block: offset={offset}, length={buflen}, flags=0){sums}"
                    ),
                    at,
                    received: chunk.to_vec(),
                    expected: Some(exp),
                    lost: false,
                })
            };
            let before = failed.len();
            match self.kind {
                VerifyKind::Meta
                | VerifyKind::Pattern
                | VerifyKind::PatternNoHdr
                | VerifyKind::Null => {
                    if let Some(p) = &self.pattern {
                        let first = start + hs.min(HEADER_LEN);
                        let bad = chunk[hs.min(HEADER_LEN)..]
                            .iter()
                            .enumerate()
                            .map(|(i, &b)| (i, b, p.byte_at(first + i, offset)))
                            .find(|&(_, b, w)| b != w);
                        if let Some((i, b, w)) = bad {
                            let exp = self.expected(chunk, start, offset, stamp);
                            let mut f = fail("pattern", String::new(), chunk, exp);
                            f.message = format!(
                                "fio: got pattern '{b:02x}', wanted '{w:02x}'. Bad bits {}\nfio: bad pattern block offset {i}\n{}",
                                (b ^ w).count_ones(),
                                f.message
                            );
                            failed.push(*f);
                        }
                    }
                }
                k => {
                    let want = &chunk[HEADER_LEN..hs];
                    let got = checksum(k, &chunk[hs..]);
                    if want != got.as_ref() {
                        let hex =
                            |v: &[u8]| v.iter().map(|b| format!("{b:02x}")).collect::<String>();
                        let sums = format!(
                            "\n       Expected CRC: {}\n       Received CRC: {}",
                            hex(want),
                            hex(got.as_ref())
                        );
                        let exp = self.expected(chunk, start, offset, stamp);
                        failed.push(*fail(sum_name(k), sums, chunk, exp));
                    }
                }
            }
            last_failed = failed.len() > before;
            if self.fatal && !failed.is_empty() {
                return Err(failed);
            }
        }
        if !last_failed {
            for f in &mut failed {
                f.lost = true;
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(failed)
        }
    }

    /// The interval at `start` of a block read at `offset` as it was written: the content from
    /// the header's seed (random, fio's generator) or the pattern, stamped again with the
    /// header's fields (fio's __dump_verify_buffers regenerates it likewise).
    fn expected(&self, chunk: &[u8], start: usize, offset: u64, s: Stamp) -> Vec<u8> {
        let mut block = vec![0u8; start + chunk.len()];
        if self.pattern.is_none() {
            super::rand::fio_fill_random(&mut block, s.rand_seed);
        }
        self.populate(&mut block, offset, s);
        block[start..].to_vec()
    }
}

/// fio's memswp: exchange the header with the `len` bytes at `at`.
fn swap(chunk: &mut [u8], at: usize, len: usize) {
    let (a, b) = chunk.split_at_mut(at);
    a[..len].swap_with_slice(&mut b[..len]);
}

/// fio's verify_dump: `<basename>.<offset>.received` and `.expected` (or `.hdr_fail` for a
/// header failure) in the working directory; returns fio's lines naming them.
pub fn dump(file: &std::path::Path, f: &Failure) -> String {
    let base = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut lines = String::new();
    let mut put = |kind: &str, data: &[u8]| {
        let name = format!("{base}.{}.{kind}", f.at);
        match std::fs::write(&name, data) {
            Ok(()) => lines.push_str(&format!("\n       {kind} data dumped as {name}")),
            Err(e) => lines.push_str(&format!("\n       cannot dump {kind} data as {name}: {e}")),
        }
    };
    match &f.expected {
        Some(e) => {
            put("received", &f.received);
            put("expected", e);
        }
        None => put("hdr_fail", &f.received),
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(v: &[u8]) -> String {
        v.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn checksums_match_their_test_vectors() {
        // The CRC-32C check value 0xE3069283, not inverted at the end as fio's.
        assert_eq!(crc32c(b"123456789"), !0xE306_9283);
        assert_eq!(hex(&md5(b"")), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(
            hex(&md5(b"The quick brown fox jumps over the lazy dog")),
            "9e107d9d372bb6826bd81d3542a419d6"
        );
        assert_eq!(
            hex(&sha256_standard(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let m = [b'a'; 1000];
        assert_eq!(
            hex(&sha256_standard(&m[..56])),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"
        );
        // sha1("abc") = a9993e36 4706816a ba3e2571 7850c26c 9cd0d89d, words stored LE.
        assert_eq!(
            hex(&sha1_fio(b"abc")),
            "363e99a96a810647_71253eba6cc25078_9dd8d09c".replace('_', "")
        );
        // XXH32 reference values.
        assert_eq!(xxh32(b"", 0), 0x02CC5D05);
        assert_eq!(xxh32(b"abc", 0), 0x32D153FF);
        // fio's crc64 table starts 0, 0x7ad870c830358979 (crc of the byte 1).
        assert_eq!(crc64(&[1]), 0x7ad870c830358979);
        assert_eq!(crc64(&[]), 0);
    }

    #[test]
    fn the_crcs_match_their_catalogue_check_values() {
        // Check values for "123456789": CRC-32/POSIX without its length and final inversion,
        // CRC-16/ARC, CRC-7/MMC.
        assert_eq!(crc32(b"123456789"), !0x765E_7680);
        assert_eq!(crc16(b"123456789"), 0xBB3D);
        assert_eq!(crc7(b"123456789"), 0x75);
        // Entries of fio's tables (crc/crc7.c, crc/crc16.c, crc/crc32.c): the CRC of one byte.
        assert_eq!(
            [crc7(&[1]), crc7(&[0x10]), crc7(&[0x28]), crc7(&[0xff])],
            [0x09, 0x19, 0x7a, 0x79]
        );
        assert_eq!([crc16(&[1]), crc16(&[0xff])], [0xC0C1, 0x4040]);
        assert_eq!([crc32(&[1]), crc32(&[0xff])], [0x04C11DB7, 0xB1F740B4]);
    }

    #[test]
    fn sha3_matches_fips_202() {
        let cases: [(usize, &str); 4] = [
            (
                28,
                "e642824c3f8cf24ad09234ee7d3c766fc9a3a5168d0c94ad73b46fdf",
            ),
            (
                32,
                "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532",
            ),
            (
                48,
                "ec01498288516fc926459f58e2c6ad8df9b473cb0fc08c2596da7cf0e49be4b298d88cea927ac7f539f1edf228376d25",
            ),
            (
                64,
                "b751850b1a57168a5693cd924b6b096e08f621827444f70d884f5d0240d2712e10e116e9192af3c91a7ec57647e3934057340b4cf408d5a56592f8274eec53f0",
            ),
        ];
        for (n, want) in cases {
            assert_eq!(hex(sha3(b"abc", n).as_ref()), want, "sha3-{}", n * 8);
        }
        // More than one 136-byte block, and a message of exactly one block.
        assert_eq!(
            hex(sha3(&[b'a'; 200], 32).as_ref()),
            "cce34485baf2bf2aca99b94833892a4f52896d3d153f7b840cc4f9fe695f1387"
        );
        assert_eq!(
            hex(sha3(&[b'a'; 136], 32).as_ref()),
            "3fc5559f14db8e453a0a3091edbd2bc25e11528d81c66fa570a4efdcc2695ee1"
        );
        assert_eq!(
            hex(sha3(b"", 32).as_ref()),
            "a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a"
        );
    }

    #[test]
    fn fios_sha512_keeps_its_input_buffer() {
        let d: Vec<u8> = (0..3928u32).map(|i| (i * 13 + i / 256) as u8).collect();
        let s = sha512_fio(&d);
        // 3928 = 30 * 128 + 88: the 88 tail bytes, then bytes 88..128 of the first block.
        assert_eq!(&s[..88], &d[3840..]);
        assert_eq!(&s[88..], &d[88..128]);
        // A whole number of blocks: the buffer still holds the first block.
        assert_eq!(&sha512_fio(&d[..256])[..], &d[..128]);
    }

    #[test]
    fn fios_sha256_keeps_low_state_bytes_and_its_last_block() {
        let d = vec![7u8; 100];
        let s = sha256_fio(&d);
        // The last block: 36 data bytes, 0x80, zeros, the bit count 800 little-endian.
        assert_eq!(&s[8..36], &d[8..36]);
        assert_eq!(s[36], 0x80);
        assert_eq!(&s[56..], &800u64.to_le_bytes());
    }

    fn verifier(kind: VerifyKind, interval: usize) -> Verifier {
        Verifier {
            kind,
            interval,
            pattern: None,
            header_at: 0,
            thread: 1,
            check_numberio: true,
            dump: false,
            fatal: true,
        }
    }

    #[test]
    fn header_layout_is_fios() {
        let v = Verifier {
            pattern: Some(crate::fio::jobfile::pattern::parse("0xaa555aa5").unwrap()),
            ..verifier(VerifyKind::Meta, 512)
        };
        let mut buf = vec![0u8; 1024];
        v.populate(
            &mut buf,
            0,
            Stamp {
                rand_seed: 0,
                numberio: 0,
                time_sec: 0x3275,
                time_nsec: 0x31b1e104,
            },
        );
        // Bytes as fio 3.33 wrote them for surface-scan (xxd of its data file).
        assert_eq!(
            hex(&buf[..44]),
            "caac010000020000000000000000000000000000000000007532000004e1b13101000000c05fe07baa555aa5"
        );
        assert_eq!(&buf[..2], &[0xca, 0xac]);
        assert_eq!(&buf[2..4], &[1, 0]);
        assert_eq!(&buf[4..8], &512u32.to_le_bytes());
        assert_eq!(&buf[24..32], &[0x75, 0x32, 0, 0, 0x04, 0xe1, 0xb1, 0x31]);
        assert_eq!(&buf[32..34], &[1, 0]);
        assert_eq!(&buf[40..44], &[0xaa, 0x55, 0x5a, 0xa5]);
        assert_eq!(&buf[512 + 16..512 + 24], &512u64.to_le_bytes());
        v.check(&mut buf.clone(), 0, None, "f").unwrap();
    }

    #[test]
    fn every_kind_verifies_and_finds_damage_with_its_offset() {
        for k in [
            VerifyKind::Md5,
            VerifyKind::Crc64,
            VerifyKind::Crc32,
            VerifyKind::Crc32c,
            VerifyKind::Crc16,
            VerifyKind::Crc7,
            VerifyKind::Sha256,
            VerifyKind::Sha512,
            VerifyKind::Sha3_224,
            VerifyKind::Sha3_256,
            VerifyKind::Sha3_384,
            VerifyKind::Sha3_512,
            VerifyKind::Sha1,
            VerifyKind::Xxhash,
        ] {
            let v = verifier(k, 4096);
            let mut buf: Vec<u8> = (0..8192u32).map(|i| (i * 7) as u8).collect();
            let s = Stamp {
                numberio: 3,
                ..Stamp::default()
            };
            v.populate(&mut buf, 40960, s);
            v.check(&mut buf.clone(), 40960, Some(3), "f").unwrap();
            let mut bad = buf.clone();
            // The last byte: inside what every kind checks (fio's sha512 keeps only the tail and
            // the start of the data).
            bad[4096 + 4095] ^= 1;
            let e = v
                .check(&mut bad, 40960, Some(3), "f")
                .unwrap_err()
                .remove(0);
            assert!(
                e.message.starts_with(&format!(
                    "{}: verify failed at file f offset 45056, length 4096",
                    sum_name(k)
                )),
                "{}",
                e.message
            );
            assert!(e.expected.is_some());
            let e = v
                .check(&mut buf.clone(), 40960, Some(4), "f")
                .unwrap_err()
                .remove(0);
            assert!(
                e.message.contains("bad header numberio 3, wanted 4"),
                "{}",
                e.message
            );
            let e = v
                .check(&mut buf.clone(), 0, None, "f")
                .unwrap_err()
                .remove(0);
            assert!(
                e.message.contains("bad header offset 40960, wanted 0"),
                "{}",
                e.message
            );
        }
        let v = verifier(VerifyKind::Crc32c, 4096);
        let e = v
            .check(&mut [0u8; 4096], 0, None, "f")
            .unwrap_err()
            .remove(0);
        assert!(
            e.message.contains("bad magic header 0, wanted acca"),
            "{}",
            e.message
        );
    }

    #[test]
    fn without_verify_fatal_every_bad_interval_is_reported() {
        let mut v = verifier(VerifyKind::Crc32c, 1024);
        let mut buf = vec![5u8; 4096];
        v.populate(&mut buf, 0, Stamp::default());
        buf[100] ^= 1;
        buf[3000] ^= 1;
        assert_eq!(
            v.check(&mut buf.clone(), 0, None, "f").unwrap_err().len(),
            1
        );
        v.fatal = false;
        let e = v.check(&mut buf, 0, None, "f").unwrap_err();
        assert_eq!(e.iter().map(|f| f.at).collect::<Vec<_>>(), vec![0, 2048]);
    }

    #[test]
    fn verify_offset_moves_the_header() {
        let v = Verifier {
            header_at: 512,
            ..verifier(VerifyKind::Crc32c, 4096)
        };
        let mut buf = vec![9u8; 4096];
        v.populate(&mut buf, 0, Stamp::default());
        assert_eq!(&buf[512..514], &[0xca, 0xac]);
        v.check(&mut buf, 0, None, "f").unwrap();
    }

    #[test]
    fn a_pattern_mismatch_names_the_byte() {
        let v = Verifier {
            pattern: Some(crate::fio::jobfile::pattern::parse("0x01020304").unwrap()),
            ..verifier(VerifyKind::Pattern, 512)
        };
        let mut buf = vec![0u8; 512];
        v.populate(&mut buf, 0, Stamp::default());
        buf[100] = 0;
        let e = v.check(&mut buf, 0, None, "f").unwrap_err().remove(0);
        assert!(e.message.starts_with("fio: got pattern '00', wanted '01'. Bad bits 1\nfio: bad pattern block offset 60\npattern: verify failed at file f offset 0, length 512"), "{}", e.message);
    }
}
