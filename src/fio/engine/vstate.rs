//! fio's verify state (verify_state_save=1, verify_state_load=1): the file
//! `local-NAME-N-verify.state` a write job with verify leaves, and a later read job reads to
//! know which of the last writes completed (fio 3.33's verify.c: get_all_io_list,
//! write_thread_list_state, verify_load_state, verify_state_should_stop; verify-state.h).
//!
//! Why it exists: suites (fio's t0036 and t0037) write with verify_state_save=1, stop, and
//! verify in a second run with verify_state_load=1; a crash test stops at any write and the
//! second run checks only what the first one completed. The file is fio 3.33's, byte for byte
//! for the fields fio reads back: a header (version 3, the body's size, the body's crc32c),
//! then one thread_io_list: completions, iodepth, files, writes issued, the clone's index, the
//! random generator's state (written as zeros: fio 3.33 writes td->random_state there but never
//! reads it back), the job name (63 bytes at most) and per file its last iodepth completed
//! write offsets, most recent first. All little-endian.
//! What it must never do: write a state file the job did not ask for (fsdelta writes one only
//! with an explicit verify_state_save=1, where fio's default writes one for every verify write
//! job), or read one a job did not name with verify_state_load=1.

use crate::fio::engine::verify::crc32c;
use std::path::PathBuf;

/// fio's VSTATE_HDR_VERSION.
const VERSION: u64 = 3;
/// sizeof(struct thread_io_list) without its completions.
const LIST: usize = 8 + 4 + 4 + 8 + 8 + 56 + 64;

/// fio's verify_state_gen_name with prefix `local` (in `aux_path`, fio's --aux-path, when
/// set): `/` in the job name become `.`, N the clone's thread number - 1.
pub fn file_name(aux_path: Option<&str>, job: &str, thread_number: u64) -> PathBuf {
    let name = format!(
        "local-{}-{}-verify.state",
        job.replace('/', "."),
        thread_number.saturating_sub(1)
    );
    match aux_path {
        Some(dir) => std::path::Path::new(dir).join(name),
        None => PathBuf::from(name),
    }
}

/// What one clone saves: its per-file rings of the last `depth` completed write offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    /// The job's iodepth.
    pub depth: u32,
    /// Writes issued (fio's io_issues[DDIR_WRITE]).
    pub numberio: u64,
    /// Writes completed (fio's io_blocks[DDIR_WRITE]): how many of each ring are filled.
    pub completed: u64,
    /// Per file: the ring (depth entries) and the index the next completion goes to.
    pub rings: Vec<(Vec<u64>, usize)>,
}

/// The bytes of a state file (header and body), as fio 3.33's write_thread_list_state.
pub fn encode(s: &Saved, name: &str, index: u64) -> Vec<u8> {
    let depth = s.depth.max(1) as usize;
    let nofiles = s.rings.len();
    let mut body = vec![0u8; LIST + depth * nofiles * 16];
    let comps_per_file = s.completed.min(depth as u64) as usize;
    let mut at = LIST;
    let mut no_comps = 0u64;
    for (fileno, (ring, idx)) in s.rings.iter().enumerate() {
        // fio's __fill_file_completions: from the slot before the next one, backwards.
        let mut j = *idx as isize - 1;
        for _ in 0..comps_per_file {
            if j == -1 {
                j = depth as isize - 1;
            }
            body[at..at + 8].copy_from_slice(&(fileno as u64).to_le_bytes());
            body[at + 8..at + 16].copy_from_slice(&ring[j as usize].to_le_bytes());
            at += 16;
            no_comps += 1;
            j -= 1;
        }
    }
    body[0..8].copy_from_slice(&no_comps.to_le_bytes());
    body[8..12].copy_from_slice(&(depth as u32).to_le_bytes());
    body[12..16].copy_from_slice(&(nofiles as u32).to_le_bytes());
    body[16..24].copy_from_slice(&s.numberio.to_le_bytes());
    body[24..32].copy_from_slice(&index.to_le_bytes());
    // 32..88: the random state, zeros (module doc).
    let n = name.len().min(63);
    body[88..88 + n].copy_from_slice(&name.as_bytes()[..n]);
    let mut out = Vec::with_capacity(24 + body.len());
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&(crc32c(&body) as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// A loaded state: what verify_state_should_stop needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    pub depth: u64,
    pub numberio: u64,
    /// (file index, offset) of the completions saved.
    pub comps: Vec<(u64, u64)>,
}

/// Read a state file's bytes as fio 3.33's verify_load_state: the version, the size and the
/// crc must hold, with fio's messages.
pub fn decode(bytes: &[u8]) -> Result<Loaded, String> {
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    if bytes.len() < 24 {
        return Err("failed reading verify state header".into());
    }
    let (version, size, crc) = (u64_at(bytes, 0), u64_at(bytes, 8), u64_at(bytes, 16));
    if version != VERSION {
        return Err(format!(
            "unsupported ({version}) version in verify state header"
        ));
    }
    let body = &bytes[24..];
    if (body.len() as u64) < size || (size as usize) < LIST {
        return Err("failed reading verity state".into());
    }
    let body = &body[..size as usize];
    if crc32c(body) as u64 != crc {
        return Err("verify state is corrupt".into());
    }
    let no_comps = u64_at(body, 0) as usize;
    let depth = u32::from_le_bytes(body[8..12].try_into().unwrap()) as u64;
    let numberio = u64_at(body, 16);
    let comps = (0..no_comps)
        .map(|i| LIST + i * 16)
        .take_while(|&at| at + 16 <= body.len())
        .map(|at| (u64_at(body, at), u64_at(body, at + 8)))
        .collect();
    Ok(Loaded {
        depth,
        numberio,
        comps,
    })
}

impl Loaded {
    /// fio's verify_state_should_stop: whether the read of `offset` in file `fileno`, after
    /// `reads_done` completed reads, must not be issued (a write the saved run may not have
    /// completed).
    pub fn should_stop(&self, reads_done: u64, fileno: u64, offset: u64) -> bool {
        let (s_depth, s_num) = (self.depth, self.numberio);
        if (reads_done < s_depth || s_num.wrapping_sub(reads_done) > s_depth) && s_num > s_depth {
            return false;
        }
        !self.comps.iter().any(|&(f, o)| f == fileno && o == offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio 3.33's file after t0036-pre.fio (psync, 128 writes of 4 KiB, job "job"), as xxd
    /// showed it: 192 bytes, crc 0x93d9ca52, one completion at 0x7f000.
    #[test]
    fn t0036s_state_is_fios_bytes() {
        let s = Saved {
            depth: 1,
            numberio: 128,
            completed: 128,
            rings: vec![(vec![0x7f000], 0)],
        };
        let b = encode(&s, "job", 0);
        assert_eq!(b.len(), 192);
        assert_eq!(&b[0..8], &3u64.to_le_bytes());
        assert_eq!(&b[8..16], &168u64.to_le_bytes());
        assert_eq!(&b[16..24], &0x93d9ca52u64.to_le_bytes());
        assert_eq!(&b[0x70..0x73], b"job");
        assert_eq!(&b[0xb8..0xc0], &0x7f000u64.to_le_bytes());
        assert_eq!(
            file_name(None, "job", 1),
            PathBuf::from("local-job-0-verify.state")
        );
        let l = decode(&b).unwrap();
        assert_eq!((l.depth, l.numberio), (1, 128));
        assert_eq!(l.comps, vec![(0, 0x7f000)]);
        // Every read goes until the window of the last write; there its offset must be saved.
        assert!(!l.should_stop(5, 0, 0x5000));
        assert!(!l.should_stop(127, 0, 0x7f000));
        assert!(l.should_stop(127, 0, 0x7e000));
        let mut bad = b.clone();
        bad[100] ^= 1;
        assert_eq!(decode(&bad).unwrap_err(), "verify state is corrupt");
    }
}
