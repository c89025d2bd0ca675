//! fio's verify: every written block carries a header (magic, length, offset, checksum of the
//! data), and the verify phase reads the written blocks back in offset order and checks them.
//!
//! Why it exists: fio job files that check data integrity (`verify=crc32c`, 19 of fio's own
//! examples use verify options) must fail when the data read back is not what was written, and
//! say where, in fio's words ("crc32c: verify failed at file F offset N, length L"). What it must
//! never do: pass a block it did not check, or report a failure without its file and offset.
//! The header layout is fsdelta's own (fio's on-disk header is not reproduced), so a file
//! written by fio cannot be verified by fsdelta and the other way round.

/// The header at the start of every verify interval.
pub const HEADER_LEN: usize = 32;
/// fio's verify header magic.
pub const MAGIC: u16 = 0xacca;
/// The checksum kind recorded in the header (crc32c).
const TYPE_CRC32C: u16 = 4;

/// CRC-32C (Castagnoli), as fio's crc32c and crc32c-intel compute it.
pub fn crc32c(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let t = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, e) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0x82F6_3B78 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *e = c;
        }
        t
    });
    let mut crc = !0u32;
    for &b in data {
        crc = t[((crc ^ b as u32) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

/// Write the header of every `interval`-byte chunk of `buf`, which is to be written at `offset`.
pub fn stamp(buf: &mut [u8], offset: u64, interval: usize) {
    let interval = interval.max(HEADER_LEN + 1);
    for (i, chunk) in buf.chunks_mut(interval).enumerate() {
        if chunk.len() < HEADER_LEN {
            continue;
        }
        let off = offset + (i * interval) as u64;
        let len = chunk.len() as u32;
        let crc = crc32c(&chunk[HEADER_LEN..]);
        chunk[0..2].copy_from_slice(&MAGIC.to_le_bytes());
        chunk[2..4].copy_from_slice(&TYPE_CRC32C.to_le_bytes());
        chunk[4..8].copy_from_slice(&len.to_le_bytes());
        chunk[8..16].copy_from_slice(&off.to_le_bytes());
        chunk[16..24].fill(0);
        chunk[24..28].copy_from_slice(&crc.to_le_bytes());
        let hcrc = crc32c(&chunk[0..28]);
        chunk[28..32].copy_from_slice(&hcrc.to_le_bytes());
    }
}

/// Check every chunk of `buf`, read from `offset` of `file`; the error is fio's message.
pub fn check(buf: &[u8], offset: u64, interval: usize, file: &str) -> Result<(), String> {
    let interval = interval.max(HEADER_LEN + 1);
    let req = format!("(requested block: offset={offset}, length={})", buf.len());
    for (i, chunk) in buf.chunks(interval).enumerate() {
        if chunk.len() < HEADER_LEN {
            continue;
        }
        let off = offset + (i * interval) as u64;
        let len = chunk.len();
        let u16_at = |a: usize| u16::from_le_bytes([chunk[a], chunk[a + 1]]);
        let u32_at = |a: usize| u32::from_le_bytes(chunk[a..a + 4].try_into().expect("4 bytes"));
        let magic = u16_at(0);
        if magic != MAGIC {
            return Err(format!(
                "verify: bad magic header {magic:x}, wanted {MAGIC:x} at file {file} offset {off}, length {len} {req}"
            ));
        }
        if crc32c(&chunk[0..28]) != u32_at(28) {
            return Err(format!(
                "verify: bad header crc at file {file} offset {off}, length {len} {req}"
            ));
        }
        let hoff = u64::from_le_bytes(chunk[8..16].try_into().expect("8 bytes"));
        if hoff != off {
            return Err(format!(
                "verify: bad header offset {hoff}, wanted {off} at file {file} offset {off}, length {len} {req}"
            ));
        }
        let hlen = u32_at(4) as usize;
        if hlen != len {
            return Err(format!(
                "verify: bad header length {hlen}, wanted {len} at file {file} offset {off}, length {len} {req}"
            ));
        }
        let want = u32_at(24);
        let got = crc32c(&chunk[HEADER_LEN..]);
        if want != got {
            return Err(format!(
                "crc32c: verify failed at file {file} offset {off}, length {len} {req}\n       Expected CRC: {want:x}\n       Received CRC: {got:x}"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_of_the_standard_check_string() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn stamped_blocks_verify_and_damage_is_found_with_its_offset() {
        let mut buf: Vec<u8> = (0..8192u32).map(|i| (i * 7) as u8).collect();
        stamp(&mut buf, 40960, 4096);
        check(&buf, 40960, 4096, "f").unwrap();
        let mut bad = buf.clone();
        bad[4096 + 100] ^= 1;
        let e = check(&bad, 40960, 4096, "f").unwrap_err();
        assert!(
            e.starts_with("crc32c: verify failed at file f offset 45056, length 4096"),
            "{e}"
        );
        // read from the wrong place: the header says so
        let e = check(&buf, 0, 4096, "f").unwrap_err();
        assert!(e.contains("bad header offset 40960, wanted 0"), "{e}");
        let e = check(&[0u8; 4096], 0, 4096, "f").unwrap_err();
        assert!(e.contains("bad magic header 0, wanted acca"), "{e}");
    }
}
