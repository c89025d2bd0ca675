//! Write-buffer contents: fio's buffer policy (refill_buffers, scramble_buffers) and the
//! generators that fill a buffer (patterns, compression, dedupe).
//!
//! Why it exists: the sync, async and offload loops fill buffers the same way. What it must never
//! do: allocate per I/O (the generators are made before the clock starts).

use super::CloneSetup;
use crate::fio::engine::files::{self};
use crate::fio::engine::rand::{self};
use crate::fio::engine::stats::WRITE;
use crate::fio::jobfile::{JobSpec, RandomGenerator};
use crate::probe::clock::Nanos;

/// Write-buffer policy derived from the job as fio's fixup_options does.
#[derive(Clone, Copy)]
pub(super) struct BufferPolicy {
    pub(super) refill: bool,
    pub(super) scramble: bool,
}

impl BufferPolicy {
    pub(super) fn of(job: &JobSpec) -> BufferPolicy {
        let compress = job
            .buffer_compress_percentage
            .is_some_and(|p| p > 0 && p < 100);
        // fio's str_buffer_pattern_cb: a job that reads refills its pattern before every write
        // (its buffers may hold what it read).
        let pattern_reads = job.buffer_pattern.is_some() && job.rw.reads();
        let refill = job.refill_buffers.unwrap_or(compress || pattern_reads);
        BufferPolicy {
            refill,
            // A verify header covers the data: nothing may change the bytes after stamping.
            scramble: job.scramble_buffers
                && !job.zero_buffers
                && !refill
                && !compress
                && !job.verify,
        }
    }
}

/// fio's small_content_scramble: stamp the offset and time into each 512-byte block so a
/// deduplicating filesystem cannot collapse the writes.
#[inline]
pub(super) fn scramble(buf: &mut [u8], offset: u64, now: Nanos) {
    let sec = now.0 / 1_000_000_000;
    let nsec = now.0 % 1_000_000_000;
    let slot = (((nsec ^ offset) & 7) << 6) as usize;
    let mut boff = offset;
    for block in buf.chunks_exact_mut(512) {
        block[slot..slot + 8].copy_from_slice(&boff.to_ne_bytes());
        block[48..56].copy_from_slice(&sec.to_ne_bytes());
        block[56..64].copy_from_slice(&nsec.to_ne_bytes());
        boff += 512;
    }
}

/// Where write buffers get their bytes: fsdelta's fast generator, or fio's own (fill_io_buffer
/// with its buf_state and dedupe states) when the content's statistics matter
/// (dedupe_percentage, buffer_compress_percentage).
pub(super) enum Content {
    Plain { base: u64, seed: u64 },
    Fio(Box<rand::BufState>),
}

impl Content {
    pub(super) fn of(setup: &CloneSetup<'_>, seeds: &[u64; rand::NR_SEEDS]) -> Content {
        let job = setup.job;
        let compress = job
            .buffer_compress_percentage
            .filter(|&p| p > 0 && p < 100)
            .unwrap_or(0);
        if job.dedupe_percentage == 0 && compress == 0 {
            let base = seeds[rand::SEED_BUF];
            return Content::Plain { base, seed: base };
        }
        let use64 = job.random_generator == RandomGenerator::Tausworthe64;
        let spec = rand::BufSpec {
            dedupe_pct: job.dedupe_percentage,
            mode: job.dedupe_mode,
            compress_pct: compress,
            compress_chunk: job.buffer_compress_chunk.0 as usize,
            use64,
            pattern: job.buffer_pattern.clone().unwrap_or_default(),
        };
        let mut b = rand::BufState::new(&spec, seeds);
        // fio's init_dedupe_working_set_seeds: size * dedupe_working_set_percentage / 100
        // bytes of unique pages.
        let size = match job.size {
            Some(crate::fio::jobfile::SizeSpec::Bytes(b)) => b.0,
            _ => setup.plan.files.iter().map(|f| f.size).sum(),
        };
        let bs = job.bs[WRITE].0.max(1);
        let pages = size * job.dedupe_working_set_percentage as u64 / 100 / bs;
        let me = (setup.thread_number - 1) as usize;
        let starts = job.dedupe_global.then_some((setup.buf_starts, me));
        b.init_working_set(pages, bs as usize, starts);
        Content::Fio(Box::new(b))
    }

    #[inline]
    pub(super) fn fill(&mut self, job: &JobSpec, buf: &mut [u8]) {
        match self {
            Content::Plain { seed, .. } => files::fill_like_job(job, buf, seed),
            Content::Fio(b) => b.fill(buf, job.bs[WRITE].0 as usize),
        }
    }

    /// After the initial fills: fsdelta's refills start from the same seed whatever the depth
    /// (every engine writes the same bytes at the same offsets); fio's generator goes on, as
    /// fio's does after filling its io_u buffers.
    pub(super) fn restart(&mut self) {
        if let Content::Plain { base, seed } = self {
            *seed = *base;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scramble_stamps_every_512_byte_block() {
        let mut buf = vec![0u8; 2048];
        scramble(&mut buf, 4096, Nanos(1_000_000_005));
        for (i, block) in buf.chunks(512).enumerate() {
            assert_eq!(&block[48..56], &1u64.to_ne_bytes());
            assert_eq!(&block[56..64], &5u64.to_ne_bytes());
            let slot = (((5u64 ^ 4096) & 7) << 6) as usize;
            assert_eq!(
                &block[slot..slot + 8],
                &(4096 + 512 * i as u64).to_ne_bytes()
            );
        }
    }
}
