//! fio's random number generators, seeding, random map and LFSR, so that a job file picks the
//! same blocks, in the same order, under fsdelta as under fio 3.33.
//!
//! Why it exists: "randrepeat=1" promises a repeatable sequence, and users compare our numbers
//! with fio's; the same offsets make the same I/O pattern (the unit tests pin sequences captured
//! from fio 3.33's `write_iolog`). Never allocates after construction: every call here runs in
//! the hot loop.

/// fio's `FIO_RANDSEED`.
const FIO_RANDSEED: u64 = 0xb1899bed;
/// Multiplier fio uses to spread an explicit seed.
const SEED_SPREAD: u64 = 0x9e370001;
/// fio's FIO_RAND_BS_OFF: the read block-size generator (bsrange, bssplit).
pub const SEED_BS_READ: usize = 0;
/// fio's FIO_RAND_BS1_OFF: the write block-size generator.
pub const SEED_BS_WRITE: usize = 1;
/// FIO_RAND_BS2_OFF: trim block sizes.
pub const SEED_BS_TRIM: usize = 2;
/// Index of the rwmix seed in fio's seed table.
pub const SEED_MIX: usize = 4;
/// Index of the file-selection seed.
pub const SEED_FILE: usize = 5;
/// Index of the block-offset seed.
pub const SEED_BLOCK: usize = 6;
/// Index of the file-size seed (filesize ranges).
pub const SEED_FILE_SIZE: usize = 7;
/// Index of the buffer-content seed.
pub const SEED_BUF: usize = 9;
/// fio's FIO_RAND_ZONE_OFF (random_distribution=zoned).
pub const SEED_ZONE: usize = 16;
/// fio's FIO_RAND_PRIO_CMDS (which I/Os get a cmdprio priority).
pub const SEED_PRIO: usize = 19;
/// fio's FIO_DEDUPE_OFF (dedupe_percentage draws).
pub const SEED_DEDUPE: usize = 14;
/// fio's FIO_RAND_DEDUPE_WORKING_SET_IX (which working-set page a dedupe repeats).
pub const SEED_DEDUPE_WS_INDEX: usize = 20;
/// fio's FIO_RAND_VER_OFF (verify content seeds).
pub const SEED_VERIFY: usize = 3;
/// fio's `FIO_RAND_NR_OFFS`.
pub const NR_SEEDS: usize = 21;

/// fio's per-thread seed table. `thread_number` is 1-based over all job clones, in file order.
pub fn seeds(thread_number: u64, randrepeat: bool, randseed: Option<u64>) -> [u64; NR_SEEDS] {
    let mut out = [0u64; NR_SEEDS];
    if !randrepeat && randseed.is_none() {
        for s in out.iter_mut() {
            *s = rand::random();
        }
        return out;
    }
    seeds_from(&mut out, thread_number, randrepeat, randseed);
    out
}

/// The seed table of a job: fio's `setup_random_seeds` then `td_fill_rand_seeds`
/// (allrandrepeat replaces every seed by `FIO_RANDSEED * thread_number + i`).
pub fn job_seeds(job: &crate::fio::jobfile::JobSpec, thread_number: u64) -> [u64; NR_SEEDS] {
    let mut out = seeds(thread_number, job.randrepeat, job.randseed);
    if job.allrandrepeat {
        for (i, s) in out.iter_mut().enumerate() {
            *s = FIO_RANDSEED
                .wrapping_mul(thread_number)
                .wrapping_add(i as u64);
        }
        if job.randrepeat {
            out[SEED_BLOCK] = FIO_RANDSEED.wrapping_mul(thread_number);
        }
    }
    out
}

fn seeds_from(
    out: &mut [u64; NR_SEEDS],
    thread_number: u64,
    randrepeat: bool,
    randseed: Option<u64>,
) {
    // fio's default randseed is 0x89.
    let mut seed = randseed.unwrap_or(0x89);
    for _ in 0..4 {
        seed = seed.wrapping_mul(SEED_SPREAD);
    }
    for (i, s) in out.iter_mut().enumerate() {
        *s = seed.wrapping_mul(thread_number).wrapping_add(i as u64);
        seed = seed.wrapping_mul(SEED_SPREAD);
    }
    if randrepeat {
        // fio 3.33 overrides the block seed whenever randrepeat is on.
        out[SEED_BLOCK] = FIO_RANDSEED.wrapping_mul(thread_number);
    }
}

/// fio's taus88 (32-bit) or taus258 (64-bit) Tausworthe generator.
#[derive(Clone, Debug)]
pub enum Taus {
    /// 32-bit state.
    T88([u32; 3]),
    /// 64-bit state.
    T258([u64; 5]),
}

fn seed_min32(x: u32, m: u32) -> u32 {
    if x < m { x + m } else { x }
}
fn seed_min64(x: u64, m: u64) -> u64 {
    if x < m { x + m } else { x }
}

// fio writes (2^31) + (2^17) + (2^7): in C `^` is xor, so the constant is 29 + 19 + 5.
const LCG_START: u64 = 53;

impl Taus {
    /// A generator seeded as fio's `init_rand_seed`.
    pub fn new(seed: u64, use64: bool) -> Taus {
        if use64 {
            let lcg = |x: u64| x.wrapping_mul(6906969069) ^ seed;
            let s1 = seed_min64(lcg(LCG_START), 1);
            let s2 = seed_min64(lcg(s1), 7);
            let s3 = seed_min64(lcg(s2), 15);
            let s4 = seed_min64(lcg(s3), 33);
            let s5 = seed_min64(lcg(s4), 49);
            let mut t = Taus::T258([s1, s2, s3, s4, s5]);
            for _ in 0..6 {
                t.next_raw();
            }
            t
        } else {
            let seed = seed as u32;
            let lcg = |x: u32| x.wrapping_mul(69069) ^ seed;
            let s1 = seed_min32(lcg(LCG_START as u32), 1);
            let s2 = seed_min32(lcg(s1), 7);
            let s3 = seed_min32(lcg(s2), 15);
            let mut t = Taus::T88([s1, s2, s3]);
            for _ in 0..6 {
                t.next_raw();
            }
            t
        }
    }

    /// Next raw value (fio's `__rand`).
    #[inline]
    pub fn next_raw(&mut self) -> u64 {
        match self {
            Taus::T88(s) => {
                #[inline]
                fn step(s: u32, a: u32, b: u32, c: u32, d: u32) -> u32 {
                    ((s & c) << d) ^ (((s << a) ^ s) >> b)
                }
                s[0] = step(s[0], 13, 19, 4294967294, 12);
                s[1] = step(s[1], 2, 25, 4294967288, 4);
                s[2] = step(s[2], 3, 11, 4294967280, 17);
                (s[0] ^ s[1] ^ s[2]) as u64
            }
            Taus::T258(s) => {
                let mut x = ((s[0] << 1) ^ s[0]) >> 53;
                s[0] = ((s[0] & 18446744073709551614) << 10) ^ x;
                x = ((s[1] << 24) ^ s[1]) >> 50;
                s[1] = ((s[1] & 18446744073709551104) << 5) ^ x;
                x = ((s[2] << 3) ^ s[2]) >> 23;
                s[2] = ((s[2] & 18446744073709547520) << 29) ^ x;
                x = ((s[3] << 5) ^ s[3]) >> 24;
                s[3] = ((s[3] & 18446744073709420544) << 23) ^ x;
                x = ((s[4] << 3) ^ s[4]) >> 33;
                s[4] = ((s[4] & 18446744073701163008) << 8) ^ x;
                s[0] ^ s[1] ^ s[2] ^ s[3] ^ s[4]
            }
        }
    }

    /// fio's `rand_max`: the largest raw value.
    #[inline]
    pub fn max_value(&self) -> u64 {
        match self {
            Taus::T88(_) => u32::MAX as u64,
            Taus::T258(_) => u64::MAX,
        }
    }

    /// `1 / (rand_max + 1)` as a float: a power of two, so `r * this` is exactly fio's
    /// `r / (rand_max + 1.0)`, without a division in the hot loop.
    #[inline]
    fn inv_max_plus_one(&self) -> f64 {
        match self {
            Taus::T88(_) => 1.0 / 4294967296.0,
            Taus::T258(_) => 1.0 / 18446744073709551616.0,
        }
    }

    /// `span * (r / (max + 1))` without clamping (fio's get_rand_file_size).
    #[inline]
    pub fn scaled(&mut self, span: u64) -> u64 {
        let r = self.next_raw() as f64;
        (span as f64 * (r * self.inv_max_plus_one())) as u64
    }

    /// A block in `0..lastb` as fio's `__get_next_rand_offset`: `lastb * (r / (max + 1))`.
    #[inline]
    pub fn block(&mut self, lastb: u64) -> u64 {
        let r = self.next_raw() as f64;
        let b = (lastb as f64 * (r * self.inv_max_plus_one())) as u64;
        b.min(lastb.saturating_sub(1))
    }

    /// A value in `start..=end` as fio's `rand_between`.
    #[inline]
    pub fn between(&mut self, start: u64, end: u64) -> u64 {
        let r = self.next_raw() as f64;
        let span = (end - start + 1) as f64;
        start + (span * (r * self.inv_max_plus_one())) as u64
    }
}

/// One bit per block: which blocks this pass has touched (fio's axmap), so a random pass touches
/// every block exactly once.
#[derive(Clone, Debug)]
pub struct RandomMap {
    words: Vec<u64>,
    nbits: u64,
    used: u64,
}

impl RandomMap {
    /// A map of `nbits` free blocks.
    pub fn new(nbits: u64) -> RandomMap {
        RandomMap {
            words: vec![0; nbits.div_ceil(64) as usize],
            nbits,
            used: 0,
        }
    }

    /// Forget every mark (a new pass).
    pub fn clear(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
        self.used = 0;
    }

    /// Whether every block is used.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.used >= self.nbits
    }

    #[inline]
    fn is_free(&self, b: u64) -> bool {
        self.words[(b / 64) as usize] & (1 << (b % 64)) == 0
    }

    /// Mark block `b` used.
    #[inline]
    pub fn mark(&mut self, b: u64) {
        let w = &mut self.words[(b / 64) as usize];
        let bit = 1u64 << (b % 64);
        if *w & bit == 0 {
            *w |= bit;
            self.used += 1;
        }
    }

    /// Mark up to `nr` blocks from `b` on, stopping at the first one already used or at the
    /// end of the map (fio's axmap_set_nr, which only sets contiguous free runs); returns how
    /// many were marked.
    #[inline]
    pub fn mark_run(&mut self, b: u64, nr: u64) -> u64 {
        let mut n = 0;
        while n < nr && b + n < self.nbits && self.is_free(b + n) {
            self.mark(b + n);
            n += 1;
        }
        n
    }

    /// `b` if free, else the next free block after it, wrapping (fio's `axmap_next_free`);
    /// None when the map is full.
    #[inline]
    pub fn free_at_or_after(&self, b: u64) -> Option<u64> {
        if self.is_full() || b >= self.nbits {
            return None;
        }
        if self.is_free(b) {
            return Some(b);
        }
        let start = if b + 1 == self.nbits { 0 } else { b + 1 };
        self.scan(start, self.nbits).or_else(|| self.scan(0, start))
    }

    fn scan(&self, from: u64, to: u64) -> Option<u64> {
        let mut b = from;
        while b < to {
            let wi = (b / 64) as usize;
            let free = !self.words[wi] & (!0u64 << (b % 64));
            if free != 0 {
                let found = wi as u64 * 64 + free.trailing_zeros() as u64;
                return (found < to).then_some(found);
            }
            b = (wi as u64 + 1) * 64;
        }
        None
    }
}

/// Maximal-length LFSR taps (bit positions, 1-based) for register widths 3..=63: the
/// feedback polynomials of the standard tables (Xilinx XAPP052 and fio's lib/lfsr.c).
const TAPS: [&[u8]; 64] = [
    &[],
    &[],
    &[],
    &[3, 2],
    &[4, 3],
    &[5, 3],
    &[6, 5],
    &[7, 6],
    &[8, 6, 5, 4],
    &[9, 5],
    &[10, 7],
    &[11, 9],
    &[12, 6, 4, 1],
    &[13, 4, 3, 1],
    &[14, 5, 3, 1],
    &[15, 14],
    &[16, 15, 13, 4],
    &[17, 14],
    &[18, 11],
    &[19, 6, 2, 1],
    &[20, 17],
    &[21, 19],
    &[22, 21],
    &[23, 18],
    &[24, 23, 22, 17],
    &[25, 22],
    &[26, 6, 2, 1],
    &[27, 5, 2, 1],
    &[28, 25],
    &[29, 27],
    &[30, 6, 4, 1],
    &[31, 28],
    &[32, 31, 29, 1],
    &[33, 20],
    &[34, 27, 2, 1],
    &[35, 33],
    &[36, 25],
    &[37, 5, 4, 3, 2, 1],
    &[38, 6, 5, 1],
    &[39, 35],
    &[40, 38, 21, 19],
    &[41, 38],
    &[42, 41, 20, 19],
    &[43, 42, 38, 37],
    &[44, 43, 18, 17],
    &[45, 44, 42, 41],
    &[46, 45, 26, 25],
    &[47, 42],
    &[48, 47, 21, 20],
    &[49, 40],
    &[50, 49, 24, 23],
    &[51, 50, 36, 35],
    &[52, 49],
    &[53, 52, 38, 37],
    &[54, 53, 18, 17],
    &[55, 31],
    &[56, 55, 35, 34],
    &[57, 50],
    &[58, 39],
    &[59, 58, 38, 37],
    &[60, 59],
    &[61, 60, 46, 45],
    &[62, 61, 6, 5],
    &[63, 62],
];

/// A Galois LFSR over `1..2^w` that yields each block in `0..nblocks` exactly once per cycle,
/// with no map (random_generator=lfsr).
#[derive(Clone, Debug)]
pub struct Lfsr {
    state: u64,
    start: u64,
    mask: u64,
    nblocks: u64,
    emitted: u64,
}

impl Lfsr {
    /// An LFSR for `nblocks` blocks (>= 1), starting from a state derived from `seed`.
    pub fn new(nblocks: u64, seed: u64) -> Lfsr {
        // smallest width w >= 3 with 2^w - 1 >= nblocks
        let mut w = 3u32;
        while w < 63 && ((1u64 << w) - 1) < nblocks {
            w += 1;
        }
        let mask = TAPS[w as usize]
            .iter()
            .fold(0u64, |m, &t| m | (1u64 << (t - 1)));
        let period = (1u64 << w) - 1;
        let start = seed % period + 1;
        Lfsr {
            state: start,
            start,
            mask,
            nblocks,
            emitted: 0,
        }
    }

    #[inline]
    fn step(&mut self) {
        let lsb = self.state & 1;
        self.state >>= 1;
        if lsb != 0 {
            self.state ^= self.mask;
        }
    }

    /// The next block, or None when every block has been yielded this cycle.
    #[inline]
    pub fn next_block(&mut self) -> Option<u64> {
        if self.emitted >= self.nblocks {
            return None;
        }
        loop {
            let v = self.state;
            self.step();
            if v <= self.nblocks {
                self.emitted += 1;
                return Some(v - 1);
            }
        }
    }

    /// Start a new cycle (same order again).
    pub fn reset(&mut self) {
        self.state = self.start;
        self.emitted = 0;
    }
}

/// Fill `buf` with pseudo-random bytes from `seed` (splitmix64; fast, not fio's exact bytes).
pub fn fill_random(buf: &mut [u8], seed: &mut u64) {
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&splitmix(seed).to_le_bytes());
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let v = splitmix(seed).to_le_bytes();
        let n = rest.len();
        rest.copy_from_slice(&v[..n]);
    }
}

#[inline]
fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9e3779b97f4a7c15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

/// fio's __get_next_seed: two draws of the generator multiplied (64-bit longs).
#[inline]
pub fn next_seed(t: &mut Taus) -> u64 {
    let r = t.next_raw();
    r.wrapping_mul(t.next_raw())
}

/// fio's __fill_random_buf (CONFIG_SEED_BUCKETS=4, Debian's build): four interleaved streams
/// `seed * prime`, each advanced by a golden-ratio multiply, the tail from the first stream.
pub fn fio_fill_random(buf: &mut [u8], seed: u64) {
    const BUCKETS: usize = 4;
    const PRIME: [u64; BUCKETS] = [1, 2, 3, 5];
    let mut s = PRIME.map(|p| seed.wrapping_mul(p));
    let whole = buf.len() / 8 / BUCKETS * BUCKETS * 8;
    let (head, tail) = buf.split_at_mut(whole);
    for group in head.chunks_exact_mut(8 * BUCKETS) {
        for (p, w) in group.chunks_exact_mut(8).enumerate() {
            w.copy_from_slice(&s[p].to_ne_bytes());
            s[p] = s[p].wrapping_mul(GOLDEN_RATIO_64);
        }
    }
    // __fill_random_buf_small from s[0].
    let mut v = s[0];
    let mut words = tail.chunks_exact_mut(8);
    for w in &mut words {
        w.copy_from_slice(&v.to_ne_bytes());
        v = v.wrapping_mul(GOLDEN_RATIO_64);
    }
    let rest = words.into_remainder();
    let n = rest.len();
    rest.copy_from_slice(&v.to_ne_bytes()[..n]);
}

/// fio's __fill_random_buf_percentage: per `segment`, the first (100 - pct)% random from
/// `seed` (the same seed for every segment), the rest zeros, or with a buffer_pattern
/// (`pattern` not empty) that pattern, restarted at each such stretch (fio's cpy_pattern).
pub fn fio_fill_percentage(buf: &mut [u8], seed: u64, pct: u32, segment: usize, pattern: &[u8]) {
    if pct >= 100 {
        fill_pattern_or_zeros(buf, pattern);
        return;
    }
    let segment = segment.min(buf.len()).max(1);
    let mut rest = buf;
    while !rest.is_empty() {
        let r = (segment * (100 - pct as usize) / 100).min(rest.len());
        let (a, b) = rest.split_at_mut(r);
        fio_fill_random(a, seed);
        rest = b;
        if rest.is_empty() {
            break;
        }
        let mut z = segment - r;
        if z > rest.len() || rest.len() - z <= 8 {
            z = rest.len();
        }
        let (a, b) = rest.split_at_mut(z);
        fill_pattern_or_zeros(a, pattern);
        rest = b;
    }
}

/// fio's cpy_pattern (the pattern repeated from the start of `buf`), or zeros without one.
fn fill_pattern_or_zeros(buf: &mut [u8], pattern: &[u8]) {
    if pattern.is_empty() {
        buf.fill(0);
    } else {
        for (dst, src) in buf.iter_mut().zip(pattern.iter().cycle()) {
            *dst = *src;
        }
    }
}

pub use crate::fio::jobfile::DedupeMode;

/// fio's write-buffer generator state (buf_state, buf_state_prev, dedupe_state and the dedupe
/// working set) and its fill_io_buffer for compressible / deduplicable buffers.
#[derive(Clone)]
pub struct BufState {
    buf: Taus,
    prev: Taus,
    dedupe: Taus,
    ws_index: Taus,
    /// The generator state at each unique page of the working set.
    working_set: Vec<Taus>,
    dedupe_pct: u32,
    mode: DedupeMode,
    compress_pct: u32,
    compress_chunk: usize,
    pattern: Vec<u8>,
}

/// What a [`BufState`] needs of the job.
pub struct BufSpec {
    /// dedupe_percentage.
    pub dedupe_pct: u32,
    /// dedupe_mode.
    pub mode: DedupeMode,
    /// buffer_compress_percentage (0 when none, 100 handled as zeros by the caller).
    pub compress_pct: u32,
    /// buffer_compress_chunk (0 = the write size).
    pub compress_chunk: usize,
    /// random_generator=tausworthe64.
    pub use64: bool,
    /// buffer_pattern's bytes (empty when none): the compressible part of each segment.
    pub pattern: Vec<u8>,
}

impl BufState {
    /// The states of a clone from its seed table (fio's td_fill_rand_seeds).
    pub fn new(spec: &BufSpec, seeds: &[u64; NR_SEEDS]) -> BufState {
        let buf = Taus::new(seeds[SEED_BUF], spec.use64);
        BufState {
            prev: buf.clone(),
            buf,
            dedupe: Taus::new(seeds[SEED_DEDUPE], false),
            ws_index: Taus::new(seeds[SEED_DEDUPE_WS_INDEX], spec.use64),
            working_set: Vec::new(),
            dedupe_pct: spec.dedupe_pct,
            mode: spec.mode,
            compress_pct: spec.compress_pct,
            compress_chunk: spec.compress_chunk,
            pattern: spec.pattern.clone(),
        }
    }

    /// The generator state the working set starts from (fio copies buf_state).
    pub fn start_state(&self) -> Taus {
        self.buf.clone()
    }

    /// fio's init_dedupe_working_set_seeds: `pages` unique pages of `min_bs` bytes; with
    /// dedupe_global, every `pages / njobs` pages the state is taken from the next job's
    /// (`starts[i]` is job i's start state, `me` this job's index).
    pub fn init_working_set(
        &mut self,
        pages: u64,
        min_bs: usize,
        starts: Option<(&[Taus], usize)>,
    ) {
        if self.dedupe_pct == 0 || self.mode != DedupeMode::WorkingSet {
            return;
        }
        let chunk = if self.compress_chunk == 0 {
            min_bs
        } else {
            self.compress_chunk.min(min_bs)
        };
        let advances = min_bs / chunk.max(1);
        let mut state = self.buf.clone();
        let mut set = Vec::with_capacity(pages as usize);
        if pages > 0 {
            set.push(state.clone());
        }
        let njobs = starts.map_or(1, |(s, _)| s.len() as u64).max(1);
        let per_seed = (pages / njobs).max(1);
        let mut tindex = starts.map_or(0, |(_, me)| me as u64);
        for i in 1..pages {
            for _ in 0..advances {
                next_seed(&mut state);
            }
            if let Some((s, _)) = starts {
                if i % per_seed == 0 {
                    tindex += 1;
                    state = s[(tindex % njobs) as usize].clone();
                }
            }
            set.push(state.clone());
        }
        self.working_set = set;
    }

    /// fio's get_buf_state: which generator the next buffer comes from. None is the job's
    /// own state, Some(t) a copy to fill from (a dedupe).
    fn pick(&mut self) -> Option<Taus> {
        if self.dedupe_pct == 0 {
            return None;
        }
        if self.dedupe_pct == 100 {
            self.prev = self.buf.clone();
            return None;
        }
        let v = self.dedupe.between(1, 100);
        if v > self.dedupe_pct as u64 {
            return None;
        }
        match self.mode {
            DedupeMode::Repeat => Some(self.prev.clone()),
            DedupeMode::WorkingSet => {
                let n = self.working_set.len() as u64;
                let i = self.ws_index.between(0, n.saturating_sub(1));
                Some(self.working_set[i as usize].clone())
            }
        }
    }

    /// fio's fill_io_buffer with compress_percentage or dedupe_percentage set.
    pub fn fill(&mut self, buf: &mut [u8], min_write: usize) {
        let mut chosen: Option<Option<Taus>> = None;
        let mut rest = buf;
        let mut min_write = min_write.max(1);
        while !rest.is_empty() {
            let pick = match &mut chosen {
                Some(p) => p,
                None => chosen.insert(self.pick()),
            };
            min_write = min_write.min(rest.len());
            let this = if self.compress_chunk == 0 {
                min_write
            } else {
                min_write.min(self.compress_chunk)
            };
            let t = match pick {
                Some(t) => t,
                None => &mut self.buf,
            };
            let seed = next_seed(t);
            let (a, b) = rest.split_at_mut(this);
            fio_fill_percentage(a, seed, self.compress_pct, this, &self.pattern);
            rest = b;
            // save_buf_state
            if self.dedupe_pct == 100 {
                if let Some(Some(t)) = &mut chosen {
                    *t = self.prev.clone();
                } else {
                    self.buf = self.prev.clone();
                }
            } else if matches!(chosen, Some(None)) {
                self.prev = self.buf.clone();
            }
        }
    }
}

/// Fill `buf` as fio's `buffer_compress_percentage`: in each `chunk`, the first
/// `(100 - pct)%` bytes are random and the rest zeros, or the buffer_pattern (`pattern` not
/// empty) from its start.
pub fn fill_compressible(buf: &mut [u8], pct: u32, chunk: usize, seed: &mut u64, pattern: &[u8]) {
    if pct >= 100 {
        fill_pattern_or_zeros(buf, pattern);
        return;
    }
    for c in buf.chunks_mut(chunk.max(1)) {
        let random_len = (c.len() * (100 - pct as usize) / 100).min(c.len());
        let (r, z) = c.split_at_mut(random_len);
        fill_random(r, seed);
        fill_pattern_or_zeros(z, pattern);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fio_blocks(nblocks: u64, n: usize, map: bool) -> Vec<u64> {
        let s = seeds(1, true, None);
        let mut t = Taus::new(s[SEED_BLOCK], false);
        let mut m = RandomMap::new(nblocks);
        (0..n)
            .map(|_| {
                let mut b = t.block(nblocks);
                if map {
                    b = m.free_at_or_after(b).unwrap();
                    m.mark(b);
                }
                b
            })
            .collect()
    }

    /// Captured from fio 3.33: `fio --name=r --rw=randread --bs=4k --size=1m --norandommap
    /// --write_iolog=...` (block numbers = offset / 4096).
    #[test]
    fn tausworthe_offsets_match_fio_3_33() {
        assert_eq!(
            fio_blocks(256, 8, false),
            [15, 189, 215, 120, 102, 215, 97, 90]
        );
    }

    /// Same job with the random map: the repeated 215 moves to the next free block, 216.
    #[test]
    fn random_map_takes_the_next_free_block_as_fio() {
        assert_eq!(
            fio_blocks(256, 12, true),
            [15, 189, 215, 120, 102, 216, 97, 90, 233, 17, 218, 166]
        );
    }

    /// Captured from fio 3.33 with rw=randrw norandommap: the direction sequence of the first
    /// 24 I/Os (fio's rwmix switching with the MIX seed).
    #[test]
    fn rwmix_sequence_matches_fio_3_33() {
        let s = seeds(1, true, None);
        let mut mix = Taus::new(s[SEED_MIX], false);
        let mut issues = [0u64; 2];
        let mut ddir = 0usize;
        let mut limit = 0u64;
        let rwmix = [50u64, 50];
        let mut seq = String::new();
        for _ in 0..24 {
            if issues[ddir] >= limit {
                let v = mix.between(1, 100);
                let new = if v <= rwmix[0] { 0 } else { 1 };
                if new != ddir {
                    limit = issues[ddir] * rwmix[new] / 100;
                }
                ddir = new;
            }
            issues[ddir] += 1;
            seq.push(if ddir == 0 { 'r' } else { 'w' });
        }
        assert_eq!(seq, "rrrwrrwwwrwrwrrrwwrrwwww");
    }

    #[test]
    fn random_map_pass_covers_every_block_once() {
        let n = 1000;
        let mut m = RandomMap::new(n);
        let mut t = Taus::new(42, false);
        let mut seen = vec![0u32; n as usize];
        while let Some(b) = m.free_at_or_after(t.block(n)) {
            m.mark(b);
            seen[b as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c == 1));
        assert!(m.is_full());
        m.clear();
        assert_eq!(m.free_at_or_after(999), Some(999));
    }

    #[test]
    fn lfsr_yields_every_block_exactly_once() {
        for n in [1u64, 2, 3, 7, 8, 100, 1000, 4097, 70_000] {
            let mut l = Lfsr::new(n, 12345);
            let mut seen = vec![false; n as usize];
            while let Some(b) = l.next_block() {
                assert!(!seen[b as usize], "n={n} b={b} twice");
                seen[b as usize] = true;
            }
            assert!(seen.iter().all(|&s| s), "n={n}");
            l.reset();
            assert!(l.next_block().is_some());
        }
    }

    #[test]
    fn lfsr_taps_are_maximal_for_small_widths() {
        for w in 3..=18u32 {
            let mask = TAPS[w as usize]
                .iter()
                .fold(0u64, |m, &t| m | (1 << (t - 1)));
            let mut s = 1u64;
            let mut period = 0u64;
            loop {
                let lsb = s & 1;
                s >>= 1;
                if lsb != 0 {
                    s ^= mask;
                }
                period += 1;
                if s == 1 {
                    break;
                }
            }
            assert_eq!(period, (1 << w) - 1, "width {w}");
        }
    }

    #[test]
    fn taus258_is_deterministic_and_spread() {
        let mut a = Taus::new(7, true);
        let mut b = Taus::new(7, true);
        let xs: Vec<u64> = (0..100).map(|_| a.block(1 << 40)).collect();
        let ys: Vec<u64> = (0..100).map(|_| b.block(1 << 40)).collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().any(|&x| x > 1 << 39));
        assert!(xs.iter().all(|&x| x < 1 << 40));
    }

    #[test]
    fn compressible_fill_has_the_asked_share_of_zeros() {
        let mut buf = vec![0xffu8; 4096];
        let mut seed = 1;
        fill_compressible(&mut buf, 75, 512, &mut seed, &[]);
        for c in buf.chunks(512) {
            assert!(c[128..].iter().all(|&b| b == 0));
            assert!(c[..128].iter().any(|&b| b != 0));
        }
        // With a buffer_pattern (the OpenZFS perf suite's 0xdeadbeef) the pattern, restarted
        // at each compressible stretch, takes the zeros' place.
        fill_compressible(&mut buf, 75, 512, &mut seed, &[0xde, 0xad, 0xbe, 0xef]);
        for c in buf.chunks(512) {
            assert_eq!(&c[128..132], &[0xde, 0xad, 0xbe, 0xef]);
            assert!(c[128..].chunks(4).all(|w| w == [0xde, 0xad, 0xbe, 0xef]));
        }
    }

    /// fio's __fill_random_buf_percentage with a pattern: 66 % of a 4 KiB segment compressible
    /// is 1392 random bytes, then the pattern from its first byte to the segment's end.
    #[test]
    fn fio_percentage_fill_puts_the_pattern_where_zeros_were() {
        let mut buf = vec![0u8; 8192];
        fio_fill_percentage(&mut buf, 7, 66, 4096, b"ab");
        for seg in buf.chunks(4096) {
            assert!(seg[1392..].chunks(2).all(|w| w == b"ab"), "pattern");
            assert!(seg[..1392].iter().any(|&b| b != b'a' && b != b'b'));
        }
        let mut zeros = vec![1u8; 4096];
        fio_fill_percentage(&mut zeros, 7, 66, 4096, &[]);
        assert!(zeros[1392..].iter().all(|&b| b == 0));
    }
}

/// fio's jhash (hash.h), byte for byte, including its reading of single bytes (not words) in
/// the 12-byte blocks: it seeds the zipf and pareto generators from a file's name.
pub fn jhash(key: &[u8], initval: u32) -> u32 {
    const GOLDEN_RATIO_32: u32 = 0x61C8_8647;
    let mut length = key.len() as u32;
    let init = GOLDEN_RATIO_32.wrapping_add(length).wrapping_add(initval);
    let (mut a, mut b, mut c) = (init, init, init);
    let mut k = key;
    while length > 12 {
        a = a.wrapping_add(k[0] as u32);
        b = b.wrapping_add(k[4] as u32);
        c = c.wrapping_add(k[8] as u32);
        // __jhash_mix
        a = a.wrapping_sub(c);
        a ^= c.rotate_left(4);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a);
        b ^= a.rotate_left(6);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b);
        c ^= b.rotate_left(8);
        b = b.wrapping_add(a);
        a = a.wrapping_sub(c);
        a ^= c.rotate_left(16);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a);
        b ^= a.rotate_left(19);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b);
        c ^= b.rotate_left(4);
        b = b.wrapping_add(a);
        length -= 12;
        k = &k[12..];
    }
    if length == 0 {
        return c;
    }
    let at = |i: usize, shift: u32| (k[i] as u32) << shift;
    let n = length as usize;
    if n >= 12 {
        c = c.wrapping_add(at(11, 24));
    }
    if n >= 11 {
        c = c.wrapping_add(at(10, 16));
    }
    if n >= 10 {
        c = c.wrapping_add(at(9, 8));
    }
    if n >= 9 {
        c = c.wrapping_add(at(8, 0));
    }
    if n >= 8 {
        b = b.wrapping_add(at(7, 24));
    }
    if n >= 7 {
        b = b.wrapping_add(at(6, 16));
    }
    if n >= 6 {
        b = b.wrapping_add(at(5, 8));
    }
    if n >= 5 {
        b = b.wrapping_add(at(4, 0));
    }
    if n >= 4 {
        a = a.wrapping_add(at(3, 24));
    }
    if n >= 3 {
        a = a.wrapping_add(at(2, 16));
    }
    if n >= 2 {
        a = a.wrapping_add(at(1, 8));
    }
    a = a.wrapping_add(at(0, 0));
    // __jhash_final
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(14));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(11));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(25));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(16));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(4));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(14));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(24));
    c
}

const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;
const ZIPF_MAX_GEN: u64 = 10_000_000;
const FRAND32_MAX: f64 = u32::MAX as f64;

/// fio's zipf and pareto generators (lib/zipf.c): block indexes over `nranges`, hashed so that
/// the hot blocks are spread over the file, offset by a random start.
#[derive(Clone, Debug)]
pub struct Skewed {
    rand: Taus,
    nranges: u64,
    rand_off: u64,
    kind: SkewKind,
}

#[derive(Clone, Copy, Debug)]
enum SkewKind {
    Zipf {
        theta: f64,
        zeta2: f64,
        zetan: f64,
    },
    Pareto {
        pow: f64,
    },
    /// fio's gauss_state (lib/gauss.c): `stddev` in ranges, its `rand_off` is a C
    /// `unsigned int` (kept in `Skewed::rand_off`).
    Gauss {
        stddev: u32,
    },
}

/// fio's GAUSS_ITERS: the sum of this many uniform draws approximates a normal one.
const GAUSS_ITERS: u64 = 12;

impl Skewed {
    fn shared(nranges: u64, center: Option<f64>, seed: u32) -> (Taus, u64) {
        let mut rand = Taus::new(seed as u64, false);
        let mut rand_off = rand.next_raw();
        if let Some(c) = center {
            rand_off = (nranges as f64 * c) as u64;
        }
        (rand, rand_off)
    }

    /// fio's zipf_init.
    pub fn zipf(nranges: u64, theta: f64, center: Option<f64>, seed: u32) -> Skewed {
        let (rand, rand_off) = Skewed::shared(nranges, center, seed);
        let zeta2 = 1.0f64.powf(theta) + 0.5f64.powf(theta);
        let mut zetan = 0.0;
        for i in 0..nranges.min(ZIPF_MAX_GEN) {
            zetan += (1.0 / (i + 1) as f64).powf(theta);
        }
        Skewed {
            rand,
            nranges,
            rand_off,
            kind: SkewKind::Zipf {
                theta,
                zeta2,
                zetan,
            },
        }
    }

    /// fio's pareto_init.
    pub fn pareto(nranges: u64, h: f64, center: Option<f64>, seed: u32) -> Skewed {
        let (rand, rand_off) = Skewed::shared(nranges, center, seed);
        Skewed {
            rand,
            nranges,
            rand_off,
            kind: SkewKind::Pareto {
                pow: h.ln() / (1.0 - h).ln(),
            },
        }
    }

    /// fio's gauss_init: `dev` is the deviation in percent of the ranges (0 = a plain sum of
    /// uniform draws); `center` moves the peak, as a fraction of the file (None = the middle).
    pub fn gauss(nranges: u64, dev: f64, center: Option<f64>, seed: u32) -> Skewed {
        let rand = Taus::new(seed as u64, false);
        let mut stddev = 0u32;
        if dev != 0.0 {
            stddev = (nranges as f64 * dev / 100.0).ceil() as u32;
            if stddev as u64 > nranges / 2 {
                stddev = (nranges / 2) as u32;
            }
        }
        // fio stores `nranges * (center - 0.5)` in an unsigned int: gcc's conversion of a
        // negative double keeps the low 32 bits of the 64-bit integer, and fio then adds
        // that (zero-extended) to a 64-bit sum, so a center below the middle is 2^32 - k, not
        // -k. Reproduced as is, because it decides which blocks are hot.
        let rand_off = center.map_or(0, |c| (nranges as f64 * (c - 0.5)) as i64 as u32) as u64;
        Skewed {
            rand,
            nranges,
            rand_off,
            kind: SkewKind::Gauss { stddev },
        }
    }

    /// fio's gauss_next: the mean of 12 draws over 0..=nranges, moved by a uniform deviation
    /// (halved until it stays below nranges), hashed over the file and offset by the center.
    fn gauss_next(&mut self, stddev: u32) -> u64 {
        let n = self.nranges;
        let mut sum = 0u64;
        for _ in 0..GAUSS_ITERS {
            sum = sum.wrapping_add(self.rand.next_raw() % (n + 1));
        }
        sum = sum.div_ceil(GAUSS_ITERS);
        if stddev != 0 {
            // gauss_dev: an int, computed in unsigned arithmetic as C does.
            let r = self.rand.next_raw() as f64;
            let vr = (stddev as f64 * (r / (FRAND32_MAX + 1.0))) as i32;
            let mut dev = (vr as u32).wrapping_sub(stddev / 2) as i32;
            // The int is widened to 64 bits with its sign, so a negative one that passes the
            // sum wraps high and is halved too. (fio loops for ever when the sum is nranges
            // and dev 0; that needs all 12 draws to be nranges, and here it stops.)
            while (dev as i64 as u64).wrapping_add(sum) >= n && dev != 0 {
                dev /= 2;
            }
            sum = sum.wrapping_add(dev as i64 as u64);
        }
        sum.wrapping_mul(GOLDEN_RATIO_64)
            .wrapping_add(self.rand_off)
            % n.max(1)
    }

    /// The next block (fio's zipf_next / pareto_next / gauss_next).
    pub fn next_block(&mut self) -> u64 {
        let n = self.nranges.max(1);
        let mut rand_uni = || self.rand.next_raw() as f64 / FRAND32_MAX;
        let val = match self.kind {
            SkewKind::Zipf {
                theta,
                zeta2,
                zetan,
            } => {
                let alpha = 1.0 / (1.0 - theta);
                let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
                let rand_uni = rand_uni();
                let rand_z = rand_uni * zetan;
                let v: u64 = if rand_z < 1.0 {
                    1
                } else if rand_z < 1.0 + 0.5f64.powf(theta) {
                    2
                } else {
                    1 + (n as f64 * (eta * rand_uni - eta + 1.0).powf(alpha)) as u64
                };
                v.wrapping_sub(1)
            }
            SkewKind::Pareto { pow } => ((n - 1) as f64 * rand_uni().powf(pow)) as u64,
            SkewKind::Gauss { stddev } => return self.gauss_next(stddev),
        };
        val.wrapping_mul(GOLDEN_RATIO_64)
            .wrapping_add(self.rand_off)
            % n
    }
}

#[cfg(test)]
mod skew_tests {
    use super::*;

    #[test]
    fn jhash_is_deterministic_and_reads_every_tail_byte() {
        assert_eq!(jhash(b"", 0), 0x61C8_8647);
        // values from fio 3.33's hash.h compiled with gcc
        assert_eq!(jhash(b"job.0.0", 0), 88_798_828);
        assert_eq!(jhash(b"a-long-file-name.0.0", 0), 401_394_115);
        assert_eq!(jhash(b"zipf-test.0.0", 0), 3_724_194_927);
        let a = jhash(b"job.0.0", 0);
        assert_eq!(a, jhash(b"job.0.0", 0));
        assert_ne!(a, jhash(b"job.0.1", 0));
        // more than one block
        assert_ne!(
            jhash(b"a-long-file-name.0.0", 0),
            jhash(b"a-long-file-name.0.1", 0)
        );
    }

    #[test]
    fn zipf_blocks_are_in_range_and_skewed() {
        let n = 1000;
        let mut z = Skewed::zipf(n, 1.2, None, 12345);
        let mut counts = vec![0u32; n as usize];
        for _ in 0..20_000 {
            let b = z.next_block();
            assert!(b < n);
            counts[b as usize] += 1;
        }
        counts.sort_unstable_by(|a, b| b.cmp(a));
        // the hottest 10 % of blocks take far more than 10 % of the I/O
        let hot: u32 = counts[..100].iter().sum();
        assert!(hot > 20_000 / 2, "{hot}");
        let mut p = Skewed::pareto(n, 0.2, None, 7);
        for _ in 0..1000 {
            assert!(p.next_block() < n);
        }
    }
}
