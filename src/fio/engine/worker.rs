//! One fio job clone: the timed loop, for the synchronous engines (psync, sync, pvsync,
//! pvsync2, mmap, falloc, ftruncate, null), the queueing ones (io_uring, libaio, posixaio,
//! vsync) and the file engines (filecreate, filestat, filedelete).
//!
//! Why it exists: this is where fio's semantics become I/O. Per I/O, as fio defines them:
//! `start` is taken when the I/O is prepared, `issue` just before the system call (sync engines)
//! or just after the `io_uring_enter` / `io_submit` that submits it alone (async engines, fio's
//! default iodepth_batch_submit=1); completion is read when the call
//! returns or the completion is reaped. clat = completion - issue, lat = completion - start,
//! slat = issue - start (async engines only). Stats reset when ramp_time ends; fsync=/fdatasync=
//! latencies go to the sync stats; end_fsync runs inside the runtime but outside every latency
//! stat. A rated job (rate=, rate_iops=) asks `rate` before each I/O and, when ahead, drains
//! what is in flight and sleeps (fio's rate_ddir); a clone ended by another (exitall) stops
//! issuing, completes what is in flight and reports; io_submit_mode=offload runs in `offload`.
//! A failed I/O or verify goes fio's error path (io_failed, verify_failed): continue_on_error
//! counts the errors it continues on, any other ends the job with its stats and fio's error.
//! What it must never do: allocate, log or lock inside the loop (buffers, maps and
//! histograms are made before the clock starts; zonemode=zbd alone takes its file's zone lock
//! per I/O, as fio does, see zbd.rs; only a failed I/O prints fio's line, off the hot path), or
//! keep running after a cancel request.

use super::aio::{AsyncBackend, NativeAio, Uring};
use super::clock::{ClockUse, JobClock, MAX_DRIFT_PPM, Monotonic, TimeOfDay, TimeSource, Tsc};
use super::files::{self, ClonePlan};
use super::iolog::{Completion, IoLogs};
use super::rand::{self, Lfsr, RandomMap, Taus};
use super::stats::{READ, TRIM, ThreadStats, WRITE};
use super::verify;
use crate::fio::jobfile::{
    FileService, IoEngine, JobSpec, RandomDistribution, RandomGenerator, RwSequencer, VerifyKind,
};
use crate::probe::clock::Nanos;
use crate::workload::{CancelToken, WorkloadError};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;

mod offload;

/// A buffer aligned for O_DIRECT, made without unsafe code: an over-sized vector and an offset.
pub struct AlignedBuf {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// `len` bytes aligned to `align` (a power of two).
    pub fn new(len: usize, align: usize) -> AlignedBuf {
        let storage = vec![0u8; len + align];
        let start = storage.as_ptr().align_offset(align);
        AlignedBuf {
            storage,
            start,
            len,
        }
    }
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }
    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

/// Everything a clone needs, fixed before the clock starts.
pub struct CloneSetup<'a> {
    /// The job.
    pub job: &'a JobSpec,
    /// The clone's files.
    pub plan: ClonePlan,
    /// 1-based over all clones in file order (fio's thread_number, which seeds generators).
    pub thread_number: u64,
    /// Memory alignment of buffers.
    pub mem_align: usize,
    /// Stop request.
    pub cancel: &'a CancelToken,
    /// The flow group of the job (flow=), None without flow control.
    pub flow: Option<&'a super::pace::FlowGroup>,
    /// Where the clone publishes its progress for steady-state detection (ss_dur=).
    pub progress: Option<&'a super::steady::Progress>,
    /// Where the clone answers the --status-interval monitor's requests for its stats.
    pub status: Option<&'a super::status::Slot>,
    /// Every clone's initial write-buffer generator (fio's buf_state), by thread number - 1:
    /// dedupe_global builds its working set from them.
    pub buf_starts: &'a [Taus],
    /// The clone's end request from other clones (exitall) and its run state.
    pub exit: Option<&'a super::rate::Exit>,
    /// The run's emulated zones (zonemode=zbd), None without.
    pub zbd: Option<&'a super::zbd::Registry>,
}

struct FileState {
    fd: Option<OwnedFd>,
    /// Start of the region in the file (offset=, offset_increment).
    base: u64,
    region: u64,
    /// Next sequential offset per direction (read, write, trim).
    pos: [u64; 3],
    /// Where the last I/O of each direction started (fio's last_start; u64::MAX before the
    /// first): trimwrite pairs a write with the trim before it.
    last_start: [u64; 3],
    /// Length of the last trim (randtrimwrite writes exactly that range).
    last_trim_len: u64,
    /// The file is a block device (a trim there is BLKDISCARD).
    blkdev: bool,
    /// Bytes issued to this file in the current pass.
    issued: u64,
    done: bool,
    map: Option<RandomMap>,
    lfsr: Option<Lfsr>,
    /// zipf / pareto block generator (random_distribution).
    skew: Option<rand::Skewed>,
    /// Blocks written and not yet verified (verify), per block of the write size: 0, or
    /// LOGGED | the write's numberio (fio's io_piece log of the block).
    written: Vec<u32>,
    /// Where the file offset of the fd is (sync engine: lseek only when it differs).
    fd_pos: u64,
    /// ioengine=mmap: the file's mapping, made at its first I/O, gone with its descriptor.
    mapping: Option<super::mmap::Mapping>,
}

impl FileState {
    fn reset(&mut self) {
        self.pos = [0; 3];
        self.last_start = [u64::MAX; 3];
        self.issued = 0;
        self.done = self.region == 0;
        if let Some(m) = &mut self.map {
            m.clear();
        }
        if let Some(l) = &mut self.lfsr {
            l.reset();
        }
    }
}

/// One prepared I/O.
#[derive(Clone, Copy, Debug)]
struct Io {
    ddir: usize,
    file: usize,
    offset: u64,
    len: usize,
}

/// The per-clone I/O planner: direction (rwmix), file (file_service_type) and offset.
struct Planner<'a> {
    job: &'a JobSpec,
    files: Vec<FileState>,
    block_rand: Taus,
    /// fio's bsrange_state per direction: draws sizes from a bsrange or bssplit.
    bs_rand: [Taus; 3],
    mix_rand: Taus,
    file_rand: Taus,
    /// fio's io_issues per direction (for rwmix switching).
    issues: [u64; 3],
    mix_ddir: usize,
    mix_limit: u64,
    cur_file: usize,
    ios_on_file: u32,
    /// Files done in this pass (so the all-done check is O(1)).
    done_files: usize,
    /// Bytes issued this pass.
    pass_issued: u64,
    /// Bytes issued in all passes (fio's io_issue_bytes): the last pass ends once they reach
    /// loops x the pass, so it makes up for what earlier passes issued beyond theirs (their
    /// last block-size draw ran past the end).
    total_issued: u64,
    pass_bytes: u64,
    /// The last I/O to complete was a sync (fio's last_was_sync): cleared by every read,
    /// write or trim that completes, so a sync owed by the write count is owed again after
    /// each of them until the next write ([`Planner::sync_due`]).
    last_was_sync: bool,
    open_count: u32,
    open_limit: u32,
    /// Completed passes (loops) after ramp.
    passes: u32,
    /// I/Os issued this pass (for number_ios).
    pass_ios: u64,
    /// A pass may go round a file more than once (io_size beyond the region): files wrap
    /// instead of ending the pass. (Holes of rw=...:SIZE wrap by themselves.)
    wraps: bool,
    /// The loops run as one pass of loops x the bytes, with no new seeds: fio's do_io counts
    /// the bytes of a pass only for queued (async) I/O, so a synchronous engine's random job
    /// that does not find its files done (no random map, no LFSR, or rw=rand...:N) issues
    /// every loop's bytes in its first pass; one that finds them done first goes on in the
    /// next loop.
    merged_loops: bool,
    /// fio's seed table, to re-seed at each loop (randrepeat).
    seeds: [u64; 21],
    /// Membership in the job's flow group (flow=).
    flow: Option<super::pace::FlowMember<'a>>,
    /// zonemode=strided: the zones and where the I/O is in them.
    zone: Option<ZoneState>,
    /// fio's zone_state: draws the zone of random_distribution=zoned.
    zone_rand: Taus,
    /// fio's td->ddir_seq_nr: offset attempts left until the next random one (rw=rand...:N);
    /// 1 at the start, so that the first I/O is random. Loops do not reset it (nor do fio's).
    seq_nr_left: u32,
    /// Steady-state detection (ss_dur=): progress published, stop obeyed.
    progress: Option<&'a super::steady::Progress>,
    /// --status-interval: requests for the stats so far, answered between I/Os.
    status: Option<&'a super::status::Slot>,
    /// Which I/Os get a per-command priority (cmdprio_*; asynchronous engines only).
    cmdprio: Option<super::prio::CmdPrio>,
    /// verify_backlog: logged blocks (file, block) not yet verified, oldest first.
    backlog: std::collections::VecDeque<(usize, u64)>,
    /// verify_backlog: reads left in the current round (fio's verify_batch).
    verify_batch: u64,
    /// rate= / rate_iops= / rate_min=: pacing and the minimum check.
    rate: Option<super::rate::Rate>,
    /// The direction the rate chose for the next I/O and the time (µs after the rate's
    /// epoch) it may go at.
    rate_ddir: Option<(usize, u64)>,
    /// The clone's end request and run state (exitall).
    exit: Option<&'a super::rate::Exit>,
    /// zonemode=zbd: the zones the offsets are adjusted to.
    zbd: Option<super::zbd::ZbdClone>,
}

/// A block of `FileState::written` is logged (the low 16 bits are its numberio).
const LOGGED: u32 = 1 << 16;

/// fio's strided zones (setup_strided_zone_mode): `bytes` done in the zone starting `start`
/// bytes into the file's region.
struct ZoneState {
    z: crate::fio::jobfile::StridedZones,
    start: u64,
    bytes: u64,
}

impl<'a> Planner<'a> {
    fn new(setup: &CloneSetup<'a>) -> Result<Planner<'a>, WorkloadError> {
        let job = setup.job;
        let seeds = rand::job_seeds(job, setup.thread_number);
        let use64 = job.random_generator == RandomGenerator::Tausworthe64;
        let seed_table = seeds;
        let mut files = Vec::with_capacity(setup.plan.files.len());
        let random = job.rw.is_random();
        if job.verify && !job.fixed_bs(WRITE) {
            return Err(WorkloadError::InvalidOptions(format!(
                "job '{}': verify with block sizes from a bsrange or bssplit is not supported; give the writes one bs=",
                job.name
            )));
        }
        // The block the region is counted in: fio issues whole blocks only.
        let region_bs = match (job.rw.reads(), job.rw.writes(), job.rw.trims()) {
            (true, false, _) => job.min_bs(READ),
            (false, true, false) => job.min_bs(WRITE),
            (false, false, true) => job.min_bs(TRIM),
            (false, true, true) => job.min_bs(WRITE).max(job.min_bs(TRIM)),
            _ => job.min_bs(READ).max(job.min_bs(WRITE)),
        };
        // fio's random map and LFSR count blocks of the smallest block size of any direction.
        let map_bs = job.rw_min_bs();
        let zones = job.strided_zones().filter(|_| setup.plan.files.len() == 1);
        for (i, f) in setup.plan.files.iter().enumerate() {
            // Random blocks of a strided job are drawn within a zone (fio's last_block).
            let nblocks = zones.map_or(f.size, |z| z.range.min(f.size)) / map_bs;
            if f.size > 0 && f.size < region_bs {
                return Err(WorkloadError::InvalidOptions(format!(
                    "job '{}': file {} ({} bytes) is smaller than one block of {region_bs} bytes",
                    job.name,
                    f.path.display(),
                    f.size
                )));
            }
            let map = (random && !job.norandommap && job.random_generator != RandomGenerator::Lfsr)
                .then(|| RandomMap::new(nblocks));
            let lfsr = (random && job.random_generator == RandomGenerator::Lfsr).then(|| {
                Lfsr::new(
                    nblocks.max(1),
                    seeds[rand::SEED_BLOCK].wrapping_add(i as u64),
                )
            });
            // fio's __init_rand_distribution: ranges of the smallest block size over the file,
            // seeded by the file's name and the thread number (or the block seed without
            // randrepeat).
            let range = job.min_bs(READ).min(job.min_bs(WRITE)).max(1);
            let nranges = f.size.div_ceil(range);
            let seed = if job.randrepeat {
                rand::jhash(f.fio_name.as_bytes(), 0).wrapping_mul(setup.thread_number as u32)
            } else {
                seeds[rand::SEED_BLOCK] as u32
            };
            let skew = match job.random_distribution {
                _ if !random => None,
                RandomDistribution::Random
                | RandomDistribution::Zoned { .. }
                | RandomDistribution::ZonedAbs { .. } => None,
                RandomDistribution::Zipf { theta, center } => {
                    Some(rand::Skewed::zipf(nranges, theta, center, seed))
                }
                RandomDistribution::Pareto { h, center } => {
                    Some(rand::Skewed::pareto(nranges, h, center, seed))
                }
                RandomDistribution::Normal { dev, center } => {
                    Some(rand::Skewed::gauss(nranges, dev, center, seed))
                }
            };
            if let RandomDistribution::ZonedAbs { index } = &job.random_distribution {
                // fio checks this at each draw ("zoned_abs sizes exceed file size") and ends
                // the job without an error at the first draw of a zone past the end; refused
                // here before any I/O, so that a job never silently stops short.
                let end = index.iter().map(|z| z.1).max().unwrap_or(0);
                if random && end > f.size {
                    return Err(WorkloadError::InvalidOptions(format!(
                        "job '{}': random_distribution=zoned_abs zones end at {end} bytes, past the end of {} ({} bytes); make the zones fit in size=",
                        job.name,
                        f.path.display(),
                        f.size
                    )));
                }
            }
            let empty = f.size == 0;
            let written = if job.verify && job.do_verify && job.rw.writes() {
                vec![0u32; (f.size / job.min_bs(WRITE)) as usize]
            } else {
                Vec::new()
            };
            files.push(FileState {
                written,
                skew,
                fd: None,
                base: f.offset,
                region: if random {
                    f.size
                } else {
                    f.size / region_bs * region_bs
                },
                pos: [0; 3],
                last_start: [u64::MAX; 3],
                last_trim_len: 0,
                blkdev: false,
                issued: 0,
                done: empty,
                map,
                lfsr,
                fd_pos: 0,
                mapping: None,
            });
        }
        let nfiles = files.len() as u32;
        let done_files = files.iter().filter(|f| f.done).count();
        // rw=rand...:N: only every Nth I/O takes a block from the map or LFSR, so a pass
        // of the job's size leaves the files unfinished too.
        let merged_loops = random
            && job.ioengine.is_sync()
            && (job.rw_seq_nr > 1 || files.iter().all(|f| f.map.is_none() && f.lfsr.is_none()));
        let pass_bytes = if merged_loops {
            setup.plan.pass_bytes * job.loops.max(1) as u64
        } else {
            setup.plan.pass_bytes
        };
        // fio's do_io: in trimwrite mode each byte is trimmed and then written, so the job
        // issues twice its size.
        let pass_bytes = if job.rw.trim_then_write() {
            pass_bytes * 2
        } else {
            pass_bytes
        };
        Ok(Planner {
            job,
            files,
            block_rand: Taus::new(seeds[rand::SEED_BLOCK], use64),
            bs_rand: bs_generators(job, &seeds),
            mix_rand: Taus::new(seeds[rand::SEED_MIX], false),
            file_rand: Taus::new(seeds[rand::SEED_FILE], use64),
            issues: [0; 3],
            mix_ddir: READ,
            mix_limit: 0,
            cur_file: 0,
            ios_on_file: 0,
            done_files,
            pass_issued: 0,
            total_issued: 0,
            pass_bytes,
            merged_loops,
            last_was_sync: false,
            open_count: 0,
            open_limit: job.openfiles.unwrap_or(nfiles).max(1),
            passes: 0,
            pass_ios: 0,
            wraps: job
                .io_size
                .is_some_and(|b| b.0 > setup.plan.files.iter().map(|f| f.size).sum()),
            seeds: seed_table,
            flow: setup.flow.map(|g| super::pace::FlowMember::new(g, job)),
            zone_rand: Taus::new(seeds[rand::SEED_ZONE], false),
            seq_nr_left: 1,
            progress: setup.progress,
            status: setup.status,
            cmdprio: None,
            backlog: std::collections::VecDeque::with_capacity(
                (job.verify_backlog.max(job.verify_backlog_batch) as usize).min(1 << 16) + 1,
            ),
            verify_batch: 0,
            rate: super::rate::Rate::new(job, &seed_table, Nanos::ZERO)
                .map_err(WorkloadError::InvalidOptions)?,
            rate_ddir: None,
            exit: setup.exit,
            zbd: setup.zbd.and_then(|r| r.clone_state(job, &setup.plan)),
            zone: zones.map(|z| ZoneState {
                z,
                start: 0,
                bytes: 0,
            }),
        })
    }

    /// A time_based job's files are exhausted: start them over (fio's per-file wrap: map and
    /// positions reset; counters and generators go on).
    fn wrap(&mut self) {
        self.pass_issued = 0;
        self.pass_ios = 0;
        for f in &mut self.files {
            f.reset();
        }
        self.zbd_file_reset();
        self.done_files = self.files.iter().filter(|f| f.done).count();
    }

    /// fio's zbd_file_reset, where fio resets the files.
    fn zbd_file_reset(&mut self) {
        if let Some(z) = &mut self.zbd {
            (0..self.files.len()).for_each(|fi| z.file_reset(fi));
        }
    }

    /// A new loop (fio's clear_io_state): the rwmix cycle restarts; a random job's files start
    /// over and, with randrepeat, its generators are seeded again, so every loop repeats the
    /// same offsets and directions; a sequential job's positions go on where they were (fio
    /// does not rewind them) and wrap at the end of the file.
    fn new_loop(&mut self) {
        self.pass_issued = 0;
        self.pass_ios = 0;
        self.mix_limit = 0;
        if self.job.randrepeat {
            // fio's clear_io_state re-seeds every generator, the cmdprio one whatever rw is.
            if let Some(c) = &mut self.cmdprio {
                c.reseed();
            }
            self.bs_rand = bs_generators(self.job, &self.seeds);
        }
        if self.job.rw.is_random() {
            for f in &mut self.files {
                f.reset();
            }
            if self.job.randrepeat {
                let use64 = self.job.random_generator == RandomGenerator::Tausworthe64;
                self.block_rand = Taus::new(self.seeds[rand::SEED_BLOCK], use64);
                self.mix_rand = Taus::new(self.seeds[rand::SEED_MIX], false);
                self.file_rand = Taus::new(self.seeds[rand::SEED_FILE], use64);
            }
        } else {
            let mixed = self.job.rw.reads() && self.job.rw.writes();
            for f in &mut self.files {
                f.issued = 0;
                f.done = f.region == 0;
                if !mixed {
                    // A one-direction pass ended at the end of the file: start it over.
                    f.pos = [0; 3];
                    f.last_start = [u64::MAX; 3];
                }
            }
        }
        self.zbd_file_reset();
        self.done_files = self.files.iter().filter(|f| f.done).count();
    }

    /// ramp_time ended (fio's reset_all_stats): the byte budget and issue counters restart;
    /// files and generators go on.
    /// fio's reset_all_stats / reset_io_counters at the end of ramp_time: the issue counts
    /// (number_ios, rwmix) start again; the bytes issued and the passes made do not (fio's
    /// io_issue_bytes and loops), so a size-based job's passes are not lengthened by its ramp.
    fn ramp_reset(&mut self) {
        self.pass_ios = 0;
        self.issues = [0; 3];
        self.mix_limit = 0;
        if let Some(z) = &mut self.zbd {
            // fio's reset_io_stats at the end of ramp_time.
            z.resets = 0;
        }
    }

    /// Whether the next I/O is a sync (fsync= / fdatasync=), as fio's get_rw_ddir decides
    /// before it draws the next I/O: the job writes, the last completion was not a sync, and
    /// the writes issued are a multiple of N. In a job that also reads, that stays true after
    /// each read until the next write, so fio syncs before every one of those I/Os, and so
    /// does this. Asked before the next I/O is drawn; the sync is made only if there is one.
    fn sync_due(&self) -> bool {
        let job = self.job;
        let every = if job.fsync > 0 {
            job.fsync
        } else {
            job.fdatasync
        } as u64;
        every > 0
            && job.rw.writes()
            && !self.last_was_sync
            && self.issues[WRITE] > 0
            && self.issues[WRITE] % every == 0
    }

    /// Flow control (flow=): whether the next I/O must wait for the other members of the
    /// group; the caller sleeps flow_sleep (with nothing in flight) and asks again.
    #[inline]
    fn held_back(&mut self) -> bool {
        self.flow.as_mut().is_some_and(|f| f.held_back())
    }

    /// fio's get_rw_ddir.
    #[inline]
    fn next_ddir(&mut self) -> usize {
        let job = self.job;
        if job.rw.trims() && !job.rw.writes() {
            return TRIM;
        }
        if !job.rw.reads() {
            // trimwrite: the file's last trim and write decide (next_io).
            return WRITE;
        }
        if !job.rw.writes() {
            return READ;
        }
        if self.issues[self.mix_ddir] >= self.mix_limit {
            let v = self.mix_rand.between(1, 100);
            let new = if v <= job.rwmixread as u64 {
                READ
            } else {
                WRITE
            };
            if new != self.mix_ddir {
                let other_pct = if new == READ {
                    job.rwmixread
                } else {
                    100 - job.rwmixread
                } as u64;
                self.mix_limit = self.issues[self.mix_ddir] * other_pct / 100;
            }
            self.mix_ddir = new;
        }
        self.mix_ddir
    }

    /// Pick the file for the next I/O (file_service_type), skipping files done in this pass;
    /// None when every file is done (the pass ends there, as fio's does, even if `size` asked
    /// for more than the files hold).
    #[inline]
    fn next_file(&mut self) -> Option<usize> {
        let n = self.files.len();
        if self.done_files == n {
            return None;
        }
        let switch = match self.job.file_service_type {
            FileService::Sequential => self.files[self.cur_file].done,
            FileService::RoundRobin(k) => self.ios_on_file >= k || self.files[self.cur_file].done,
            FileService::Random(k) => self.ios_on_file >= k || self.files[self.cur_file].done,
        };
        if switch {
            let start = match self.job.file_service_type {
                FileService::Random(_) => self.file_rand.between(0, n as u64 - 1) as usize,
                _ => wrapping_next(self.cur_file, n),
            };
            let mut i = start;
            while self.files[i].done {
                i = wrapping_next(i, n);
            }
            self.cur_file = i;
            self.ios_on_file = 0;
        }
        self.ios_on_file += 1;
        Some(self.cur_file)
    }

    /// fio's get_rw_ddir with rate_ddir, before the next I/O of a job with a rate: None when
    /// it may go now, else the microseconds to wait first (the caller drains what is in
    /// flight, sleeps, and calls next_io, which takes the direction chosen here). The clock
    /// is read only for a job with a rate: for the others it would be a third reading per I/O.
    #[inline]
    fn rate_wait<T: TimeSource>(&mut self, clk: T) -> Option<u64> {
        let rate = self.rate.as_ref()?;
        let now = clk.now();
        let now_us = rate.now_us(now);
        if let Some((_, at)) = self.rate_ddir {
            return (at > now_us).then(|| at - now_us);
        }
        let d = self.next_ddir();
        let (d, wait) = match self.rate.as_ref()?.step(d, now) {
            super::rate::RateStep::Go(d) => (d, 0),
            super::rate::RateStep::Wait { ddir, us } => (ddir, us),
        };
        self.mix_ddir = d;
        self.rate_ddir = Some((d, now_us + wait));
        (wait > 0).then_some(wait)
    }

    /// The next I/O, or None when the pass is complete.
    #[inline]
    fn next_io(&mut self) -> Option<Io> {
        let budgeted = !self.job.time_based;
        if budgeted
            && (self.pass_issued >= self.pass_bytes
                || (!self.merged_loops
                    && self.total_issued >= self.pass_bytes * self.job.loops.max(1) as u64))
        {
            return None;
        }
        let loops_in_pass = if self.merged_loops {
            self.job.loops.max(1) as u64
        } else {
            1
        };
        // fio doubles number_ios in trimwrite mode, as the bytes.
        let pairs = if self.job.rw.trim_then_write() { 2 } else { 1 };
        if self.job.number_ios > 0 && self.pass_ios >= self.job.number_ios * loops_in_pass * pairs {
            return None;
        }
        let wraps = self.wraps && budgeted;
        let random = self.job.rw.is_random();
        let mixed = self.job.rw.reads() && self.job.rw.writes();
        loop {
            // As fio's fill_io_u, every attempt (also one that finds its file exhausted)
            // evaluates the direction again, and a random attempt draws its block first: a
            // file is found done lazily, as fio finds it.
            let mut ddir = match self.rate_ddir.take() {
                Some((d, _)) => d,
                // Without a rate, or a retry after a file was found done: the rwmix choice
                // (a retry does not wait again; nothing was issued since the wait).
                None => self.next_ddir(),
            };
            let job = self.job;
            let fi = self.next_file()?;
            if job.rw.trim_then_write() {
                // fio's set_rw_ddir: a trim, unless the file's last trim has no write yet.
                let f = &self.files[fi];
                ddir = if f.last_start[WRITE] == f.last_start[TRIM] {
                    TRIM
                } else {
                    WRITE
                };
            }
            // zonemode=zbd: a mixed job's read with nothing written yet becomes a write.
            let ddir = self.zbd.as_ref().map_or(ddir, |z| z.adjust_ddir(fi, ddir));
            self.mix_ddir = ddir;
            // fio's get_next_offset: with rw=rand...:N every Nth attempt draws a random offset
            // (rw_seq_hit), the others follow rw_sequencer.
            self.seq_nr_left -= 1;
            let hit = self.seq_nr_left == 0;
            if hit {
                self.seq_nr_left = job.rw_seq_nr;
            }
            let random_io = random && hit;
            // The direction whose block sizes apply (bs_is_seq_rand: read's to sequential
            // I/O, write's to random), and the unit random offsets are drawn in (fio's ba).
            let bd = match (job.bs_is_seq_rand, random_io) {
                (false, _) => ddir,
                (true, true) => WRITE,
                (true, false) => READ,
            };
            let min_bs = job.min_bs(bd);
            let ba = job.ba(ddir);
            let ddir_min_bs = job.min_bs(ddir);
            let single_file = self.files.len() == 1;
            let f = &mut self.files[fi];
            if random && job.rw.trim_then_write() && ddir == WRITE {
                // fio's get_next_block / get_next_buflen for randtrimwrite: the write covers
                // the range just trimmed; no block drawn, no size drawn, the map untouched.
                let (offset, len) = (f.last_start[TRIM], f.last_trim_len);
                f.last_start[WRITE] = offset;
                f.issued += len;
                self.pass_issued += len;
                self.total_issued += len;
                self.pass_ios += 1;
                self.issues[WRITE] += 1;
                if let Some(r) = &mut self.rate {
                    r.issued(WRITE, len);
                }
                return Some(Io {
                    ddir,
                    file: fi,
                    offset: f.base + offset,
                    len: len as usize,
                });
            }
            // fio's setup_strided_zone_mode: a zone whose zonesize bytes are done gives way to
            // the next (zonerange + zoneskip on, wrapping to the start); every zonerange bytes
            // the file's positions and map start over within the zone.
            let (zone_start, region) = match &mut self.zone {
                Some(zs) => {
                    if zs.bytes >= zs.z.size {
                        zs.bytes = 0;
                        zs.start += zs.z.range + zs.z.skip;
                        if zs.start >= f.region {
                            zs.start = 0;
                        }
                        f.pos[ddir] = 0;
                    }
                    if f.pos[ddir] >= zs.z.range {
                        f.pos[ddir] = 0;
                    }
                    if zs.bytes % zs.z.range == 0 {
                        f.pos = [0; 3];
                        if let Some(m) = &mut f.map {
                            m.clear();
                        }
                        if let Some(l) = &mut f.lfsr {
                            l.reset();
                        }
                    }
                    (zs.start, zs.z.range.min(f.region - zs.start))
                }
                None => (0, f.region),
            };
            // An I/O of rw=rand...:N between two random offsets (fio's get_next_block without
            // rw_seq), relative to the zone: where the direction's last I/O ended (sequential;
            // a random block once that is past the file) or started (identical). None: a
            // random block is drawn.
            let follow = if random && !hit {
                match job.rw_sequencer {
                    RwSequencer::Sequential => {
                        // fio's get_next_seq_offset (no ddir_seq_add for a random job): a
                        // time_based job of one file starts over at the end.
                        if job.time_based && single_file && f.pos[ddir] >= f.region {
                            f.pos[ddir] = 0;
                        }
                        (zone_start + f.pos[ddir] < f.region).then_some(f.pos[ddir])
                    }
                    RwSequencer::Identical => Some(match f.last_start[ddir] {
                        u64::MAX => 0,
                        s => s.saturating_sub(zone_start),
                    }),
                }
            } else {
                None
            };
            // A random block was drawn from the random map (fio then marks what the I/O
            // covers, in units of the direction's smallest block size; not for a block drawn
            // in place of a sequential one, which fio flags IO_U_F_BUSY_OK).
            let mut mapped = false;
            let offset = zone_start
                + if let Some(rel) = follow {
                    rel
                } else if random {
                    // fio's last_block: the blocks of ba a random offset can start at.
                    let max_size = region - ddir_min_bs.saturating_sub(ba).min(region);
                    let nblocks = max_size / ba;
                    let b = if nblocks == 0 {
                        None
                    } else if let Some(z) = &mut f.skew {
                        Some(z.next_block() % nblocks)
                    } else if let RandomDistribution::Zoned { index } = &job.random_distribution {
                        // fio's __get_next_rand_offset_zoned: a draw in 1..=100 picks the
                        // zone, a block is drawn within it.
                        let v = self.zone_rand.between(1, 100) as usize;
                        let (start, end) = index[v - 1];
                        let first = start as u64 * nblocks / 100;
                        let span = nblocks * (end - start) as u64 / 100;
                        Some(first + self.block_rand.block(span.max(1)))
                    } else if let RandomDistribution::ZonedAbs { index } = &job.random_distribution
                    {
                        // fio's __get_next_rand_offset_zoned_abs: the zone's bytes in blocks of
                        // ba; a zone past the last block ends the file.
                        let v = self.zone_rand.between(1, 100) as usize;
                        let (start, end) = index[v - 1];
                        let (first, last) = (start / ba, end / ba);
                        if last > nblocks {
                            None
                        } else {
                            Some(first + self.block_rand.block((last - first).max(1)))
                        }
                    } else if let Some(l) = &mut f.lfsr {
                        l.next_block()
                    } else {
                        let b = self.block_rand.block(nblocks);
                        match &mut f.map {
                            Some(m) => {
                                mapped = hit;
                                m.free_at_or_after(b)
                            }
                            None => Some(b),
                        }
                    };
                    // fio's get_next_offset: a block past the region (a map counted in a
                    // smaller block size than this direction's) ends the file too.
                    match b.map(|b| b * ba).filter(|o| zone_start + o < f.region) {
                        Some(o) => o,
                        None if wraps && nblocks > 0 => {
                            // io_size beyond the region: the region is covered again.
                            if let Some(z) = &mut self.zbd {
                                z.file_reset(fi);
                                if self.job.randrepeat {
                                    // fio's next pass (clear_io_state) seeds again.
                                    let use64 =
                                        self.job.random_generator == RandomGenerator::Tausworthe64;
                                    self.block_rand =
                                        Taus::new(self.seeds[rand::SEED_BLOCK], use64);
                                }
                            }
                            if let Some(m) = &mut f.map {
                                m.clear();
                            }
                            if let Some(l) = &mut f.lfsr {
                                l.reset();
                            }
                            continue;
                        }
                        None => {
                            f.done = true;
                            self.done_files += 1;
                            continue;
                        }
                    }
                } else if job.rw_modifier < 0 {
                    // fio's get_next_seq_offset with a negative ddir_seq_add: pos is where the
                    // previous I/O ended (0 before the first); each I/O starts that far back from
                    // it, and one that would start before the region or past its end starts at the
                    // end of the region, stepped back.
                    let add = job.rw_modifier;
                    let region = region as i64;
                    let end = f.pos[ddir] as i64;
                    let mut off = match end {
                        0 if f.base == 0 => 0,
                        0 => region + add,
                        e => e + add,
                    };
                    if off < 0 || off >= region {
                        off = region + add;
                    }
                    if off < 0 || off + min_bs as i64 > region {
                        f.done = true;
                        self.done_files += 1;
                        continue;
                    }
                    off as u64
                } else {
                    // fio's get_next_seq_offset with a hole (ddir_seq_add > 0): where the
                    // last I/O ended plus the hole, unless at the start; a hole reaching
                    // past the file wraps to fio's file_offset, taken as relative (0
                    // without offset=; with one, it is past the region, which ends it).
                    let last = f.pos[ddir];
                    let next = match (last, job.rw_modifier) {
                        (0, _) => 0,
                        (last, add) if add > 0 => match last + add as u64 {
                            p if p >= f.base + f.region => f.base,
                            p => p,
                        },
                        (last, _) => last,
                    };
                    if last + min_bs > region || next + min_bs > region {
                        if wraps && region >= min_bs {
                            // io_size beyond the end: the region is covered again.
                            f.pos[ddir] = 0;
                            if let Some(z) = &mut self.zbd {
                                z.file_reset(fi);
                            }
                        } else if !mixed {
                            f.done = true;
                            self.done_files += 1;
                            continue;
                        }
                        // A mixed sequential job resets the file at its end: both directions
                        // start over (fio's fio_file_reset).
                        f.pos = [0; 3];
                        0
                    } else {
                        next
                    }
                };
            // fio's get_next_buflen: a size from the bsrange or bssplit that fits before the
            // end of the region (io_u_fits), or none, which ends the file.
            let mut len = next_buflen(job, bd, &mut self.bs_rand[bd], offset, f.region);
            if len == 0 || offset + len > f.region {
                f.done = true;
                self.done_files += 1;
                continue;
            }
            // zonemode=zbd: writes go to the write pointer, reads stay below it (fio's
            // zbd_adjust_block, after get_next_buflen); a file with nothing left for the
            // direction is done. The random map is marked at the offset drawn, as fio's.
            let drawn = offset;
            let offset = match self
                .zbd
                .as_mut()
                .map(|z| z.adjust(fi, ddir, f.base + offset, len))
            {
                None => offset,
                Some(Some(abs)) => abs - f.base,
                Some(None) => {
                    f.done = true;
                    self.done_files += 1;
                    continue;
                }
            };
            if mapped {
                // fio's mark_random_map: the blocks the I/O covers, up to the first one already
                // done, which shortens the I/O.
                let unit = job.min_bs(ddir);
                if let Some(m) = &mut f.map {
                    let set = m.mark_run((drawn - zone_start) / unit, len.div_ceil(unit));
                    len = len.min(set * unit);
                }
            }
            // fio's last_pos, also of a random I/O (where rw=rand...:N goes on from).
            {
                // (An identical offset from before a strided zone moved on counts from the
                // zone's start.)
                let rel = offset.saturating_sub(zone_start);
                f.pos[ddir] = rel + len;
            }
            if let Some(zs) = &mut self.zone {
                zs.bytes += len;
            }
            if !f.written.is_empty() && ddir == WRITE {
                let b = (offset / job.min_bs(WRITE)) as usize;
                if let Some(w) = f.written.get_mut(b) {
                    // fio's log_io_piece: a newer write of the block replaces the older entry.
                    if *w == 0 && self.job.verify_backlog > 0 {
                        self.backlog.push_back((fi, b as u64));
                    }
                    *w = LOGGED | (self.issues[WRITE] as u16) as u32;
                }
            }
            if job.rw.trim_then_write() && random && ddir == TRIM {
                // fio's get_next_offset: a trim drawn where the last pair was makes the pair
                // look unfinished, so that its write still follows.
                if f.last_start[TRIM] == offset {
                    f.last_start[WRITE] = f.last_start[WRITE].wrapping_sub(1);
                }
                f.last_trim_len = len;
            }
            f.last_start[ddir] = offset;
            let bs = len;
            f.issued += bs;
            self.pass_issued += bs;
            self.total_issued += bs;
            self.pass_ios += 1;
            self.issues[ddir] += 1;
            if let Some(r) = &mut self.rate {
                r.issued(ddir, bs);
            }
            return Some(Io {
                ddir,
                file: fi,
                offset: f.base + offset,
                len: len as usize,
            });
        }
    }
}

/// `(i + 1) % n` without the division (a round-robin job takes it before every I/O).
#[inline]
fn wrapping_next(i: usize, n: usize) -> usize {
    if i + 1 >= n { 0 } else { i + 1 }
}

/// fio's bsrange_state generators (td_fill_rand_seeds_internal): reads from the
/// FIO_RAND_BS_OFF seed, writes from FIO_RAND_BS1_OFF (the read one with verify).
fn bs_generators(job: &JobSpec, seeds: &[u64; 21]) -> [Taus; 3] {
    let use64 = job.random_generator == RandomGenerator::Tausworthe64;
    let write_seed = if job.verify {
        seeds[rand::SEED_BS_READ]
    } else {
        seeds[rand::SEED_BS_WRITE]
    };
    // trimwrite: the trims draw the writes' sizes, so each write covers its trim.
    let trim_seed = if job.rw.trim_then_write() {
        write_seed
    } else {
        seeds[rand::SEED_BS_TRIM]
    };
    [
        Taus::new(seeds[rand::SEED_BS_READ], use64),
        Taus::new(write_seed, use64),
        Taus::new(trim_seed, use64),
    ]
}

/// fio's get_next_buflen for direction `bd` at `offset` into a region of `io_size` bytes:
/// the one block size, or one drawn from the bsrange (uniform) or bssplit (by share, the
/// `r / perc <= rand_max / 100` walk), rounded down to a multiple of the smallest unless
/// bs_unaligned, capped at the largest, drawn again until it fits (io_u_fits). 0 when not even
/// the smallest fits.
fn next_buflen(job: &JobSpec, bd: usize, r: &mut Taus, offset: u64, io_size: u64) -> u64 {
    let (minbs, maxbs) = (job.min_bs(bd), job.max_bs(bd));
    if minbs == maxbs {
        return minbs;
    }
    let fits = |len: u64| offset + len <= io_size;
    if !fits(minbs) {
        return 0;
    }
    let frand_max = r.max_value();
    let split = &job.bssplit[bd];
    // fio draws until a size fits; only a split whose fitting sizes all have no share could
    // loop for ever (fio would hang): after this many draws the file ends instead.
    for _ in 0..1_000_000 {
        let v = r.next_raw();
        let mut buflen = 0;
        if split.is_empty() {
            buflen = minbs + (maxbs as f64 * (v as f64 / (frand_max as f64 + 1.0))) as u64;
        } else {
            let mut perc: u64 = 0;
            for e in split {
                if e.perc == 0 {
                    continue;
                }
                buflen = e.bs.0;
                perc += e.perc as u64;
                if v / perc <= frand_max / 100 && fits(buflen) {
                    break;
                }
            }
        }
        if !job.blocksize_unaligned {
            if minbs.is_power_of_two() {
                buflen &= !(minbs - 1);
            } else {
                buflen -= buflen % minbs;
            }
        }
        buflen = buflen.min(maxbs);
        if fits(buflen) {
            return buflen;
        }
    }
    0
}

/// Write-buffer policy derived from the job as fio's fixup_options does.
#[derive(Clone, Copy)]
struct BufferPolicy {
    refill: bool,
    scramble: bool,
}

impl BufferPolicy {
    fn of(job: &JobSpec) -> BufferPolicy {
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
fn scramble(buf: &mut [u8], offset: u64, now: Nanos) {
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

/// The io_uring ring of a clone, set up as fio's fio_ioring_post_init: the ring (sqthread_poll),
/// then fixedbufs' buffers (a refusal is fio's `io_queue_init` error: the kernel pins them
/// against RLIMIT_MEMLOCK), then registerfiles' files, every one opened first (fio's
/// fio_ioring_register_files), sqthread_poll implying registerfiles.
fn uring_for(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    bufs: &mut [AlignedBuf],
    dir0: &Path,
) -> Result<Uring, WorkloadError> {
    let opts = &setup.job.uring;
    let mut ring = Uring::new(bufs.len(), opts).map_err(|e| io_err("io_uring_setup", dir0, e))?;
    if opts.fixedbufs {
        let regions: Vec<(*mut u8, usize)> = bufs
            .iter_mut()
            .map(|b| {
                let s = b.as_mut_slice();
                (s.as_mut_ptr(), s.len())
            })
            .collect();
        // SAFETY: the buffers outlive the ring (both live until the clone's loop returns, the
        // ring dropped first), and slot i only ever uses buffer i.
        unsafe { ring.register_buffers(&regions) }.map_err(|e| {
            let hint = if e.raw_os_error() == Some(libc::ENOMEM) {
                " (fixedbufs pins iodepth x bs of buffers against RLIMIT_MEMLOCK: raise `ulimit -l`, or lower iodepth / bs, or drop fixedbufs)"
            } else {
                ""
            };
            WorkloadError::io(
                "io_queue_init",
                dir0,
                std::io::Error::new(e.kind(), format!("{e}{hint}")),
            )
        })?;
    }
    if opts.registers_files() {
        for fi in 0..p.files.len() {
            ensure_open(p, setup, fi)?;
        }
        let fds: Vec<std::os::fd::RawFd> = p
            .files
            .iter()
            .map(|f| f.fd.as_ref().expect("opened above").as_raw_fd())
            .collect();
        ring.register_files(&fds)
            .map_err(|e| io_err("ioring_register_files", dir0, e))?;
    }
    Ok(ring)
}

fn io_err(op: &'static str, path: &Path, e: impl Into<std::io::Error>) -> WorkloadError {
    WorkloadError::io(op, path, e.into())
}

/// Open the file an I/O needs, closing another first when `openfiles` are already open.
#[inline]
fn ensure_open(
    p: &mut Planner<'_>,
    setup: &CloneSetup<'_>,
    fi: usize,
) -> Result<(), WorkloadError> {
    if p.files[fi].fd.is_some() || setup.job.ioengine == IoEngine::Null {
        return Ok(());
    }
    open_file(p, setup, fi)
}

/// [`ensure_open`]'s slow path, out of the I/O loop: open file `fi` (closing another first
/// when openfiles= is reached).
#[cold]
#[inline(never)]
fn open_file(p: &mut Planner<'_>, setup: &CloneSetup<'_>, fi: usize) -> Result<(), WorkloadError> {
    if p.open_count >= p.open_limit {
        if let Some(oi) = p.files.iter().position(|f| f.fd.is_some()) {
            close_file(p, setup, oi)?;
        }
    }
    let path = &setup.plan.files[fi].path;
    let fd = files::open_for_io(setup.job, path)?;
    if setup.job.invalidate {
        files::invalidate(&fd, path)?;
    }
    // fio's fadvise_hint: tell the kernel the access pattern (readahead follows it).
    files::access_hint(&fd, setup.job, setup.plan.files[fi].size);
    p.files[fi].fd_pos = 0;
    p.files[fi].blkdev = rustix::fs::fstat(&fd).is_ok_and(|m| {
        rustix::fs::FileType::from_raw_mode(m.st_mode) == rustix::fs::FileType::BlockDevice
    });
    p.files[fi].fd = Some(fd);
    p.open_count += 1;
    if let Some(s) = p.status {
        s.set_open_files(p.open_count);
    }
    Ok(())
}

/// Close file `fi` if it is open (fio's td_io_close_file): its mapping goes, fsync_on_close
/// syncs it first.
fn close_file(p: &mut Planner<'_>, setup: &CloneSetup<'_>, fi: usize) -> Result<(), WorkloadError> {
    let f = &mut p.files[fi];
    f.mapping = None;
    let Some(fd) = f.fd.take() else {
        return Ok(());
    };
    p.open_count -= 1;
    if let Some(s) = p.status {
        s.set_open_files(p.open_count);
    }
    if setup.job.fsync_on_close {
        rustix::fs::fsync(&fd)
            .map_err(|e| io_err("fsync (fsync_on_close)", &setup.plan.files[fi].path, e))?;
    }
    Ok(())
}

/// Timing phase of a clone: ramp, then measured.
/// The Unix time in milliseconds (CLOCK_REALTIME, as fio's set_epoch_time).
fn unix_ms_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

struct Clock {
    sampler: super::stats::Sampler,
    started: Nanos,
    measured_from: Nanos,
    /// The Unix time (ms) when measured_from was last set (fio's alternate_epoch, reset
    /// with td->epoch), for log_unix_epoch.
    measured_from_unix_ms: u64,
    ramping: bool,
    ramp: u64,
    runtime: Option<u64>,
}

impl Clock {
    /// The clone's clock, started at `now`: the clone is in its ramp_time (not yet running
    /// for exit_what=stonewall), or running.
    fn start(setup: &CloneSetup<'_>, now: Nanos) -> Clock {
        let clock = Clock::new(setup.job, now);
        if let Some(e) = setup.exit {
            e.set_phase(if clock.ramping {
                super::status::Phase::Ramp
            } else {
                super::status::Phase::Running
            });
        }
        clock
    }

    fn new(job: &JobSpec, now: Nanos) -> Clock {
        Clock {
            sampler: super::stats::Sampler::new(now),
            started: now,
            measured_from: now,
            measured_from_unix_ms: unix_ms_now(),
            ramping: !job.ramp_time.is_zero(),
            ramp: job.ramp_time.as_nanos() as u64,
            runtime: job.runtime.map(|d| d.as_nanos() as u64),
        }
    }

    /// Whether ramp_time ended at `now` (the caller opens a new window then: [`fresh_window`]).
    #[inline]
    fn ramp_ends(&mut self, now: Nanos) -> bool {
        if self.ramping && (now - self.started).0 >= self.ramp {
            self.ramping = false;
            return true;
        }
        false
    }

    /// Measure from `now`: the runtime, the bandwidth samples and log_unix_epoch's epoch.
    fn measure_from(&mut self, now: Nanos) {
        self.measured_from = now;
        self.measured_from_unix_ms = unix_ms_now();
        self.sampler = super::stats::Sampler::new(now);
    }

    #[inline]
    fn out_of_time(&self, now: Nanos) -> bool {
        !self.ramping
            && self
                .runtime
                .is_some_and(|r| (now - self.measured_from).0 >= r)
    }
}

/// The CPUs a clone runs on (cpumask= / cpus_allowed=): the whole set, or with
/// cpus_allowed_policy=split the one fio's fio_cpus_split picks, the set's
/// (thread_number - 1) % size-th CPU.
fn job_cpus(job: &JobSpec, thread_number: u64) -> Option<Vec<usize>> {
    let cpus = job.cpumask.as_ref()?;
    if job.cpus_split {
        let i = ((thread_number.max(1) - 1) % cpus.len() as u64) as usize;
        return Some(vec![cpus[i]]);
    }
    Some(cpus.clone())
}

/// Run one clone after layout; returns its stats.
pub fn run_clone(setup: &CloneSetup<'_>) -> Result<ThreadStats, WorkloadError> {
    // The clone's descriptors in a table of its own, as a fio job process has (the kernel's
    // cheap fdget path on every I/O); dropped last, after every file the clone opened is
    // closed. Not for posixaio: glibc's helper threads serve every thread of the process and
    // must see the descriptors in the shared table.
    let _fds = crate::os::fdtable::PrivateFdTable::enter(setup.job.ioengine != IoEngine::Posixaio);
    // The job's clock (the TSC is calibrated here, once per process, before the clock starts);
    // the warning of a refused clocksource=cpu is the caller's to show.
    let (jc, _) = JobClock::choose(setup.job.clocksource);
    // fio's thread_main: cpumask= / cpus_allowed= first, then the NUMA placement (before the
    // buffers are allocated), then prio=/prioclass= on the job's thread before the engine
    // starts.
    if let Some(cpus) = job_cpus(setup.job, setup.thread_number) {
        super::numa::set_affinity(&cpus).map_err(|e| {
            WorkloadError::InvalidOptions(format!(
                "job '{}': sched_setaffinity to CPUs {cpus:?} failed: {e} (fio: cpu_set_affinity; the CPUs must be ones this process may use, see taskset -p $$)",
                setup.job.name
            ))
        })?;
    }
    super::numa::apply(setup.job).map_err(|e| WorkloadError::InvalidOptions(e.to_string()))?;
    // fio's backend sets prio=/prioclass= on the job's thread before the engine starts.
    if let Some(v) = setup.job.ioprio() {
        super::prio::set_thread_ioprio(v).map_err(|e| {
            WorkloadError::InvalidOptions(format!(
                "job '{}': ioprio_set(class {}, level {}) failed: {e} (the real-time class, prioclass=1, needs root or CAP_SYS_NICE; use prioclass=2 or 3)",
                setup.job.name,
                v >> 13,
                v & 7
            ))
        })?;
    }
    let mut st = match jc {
        JobClock::TimeOfDay => run_clone_on(setup, TimeOfDay),
        JobClock::Monotonic => run_clone_on(setup, Monotonic),
        JobClock::Tsc(s) => run_clone_on(setup, Tsc(s)),
    }?;
    // The end check of the calibrated clock (fio's clocksource=cpu checks it likewise).
    let drift_ppm = jc.drift_ppm();
    if drift_ppm > MAX_DRIFT_PPM {
        return Err(WorkloadError::InvalidOptions(format!(
            "the TSC clock drifted {drift_ppm:.0} ppm from CLOCK_MONOTONIC during job '{}', so \
             its latencies cannot be trusted; rerun with clocksource=clock_gettime",
            setup.job.name
        )));
    }
    st.clock = ClockUse {
        source: Some(jc.source()),
        drift_ppm,
    };
    st.finish_errors();
    Ok(st)
}

/// [`run_clone`] on the clock `clk`: every timestamp of the clone comes from it.
fn run_clone_on<T: TimeSource + Send>(
    setup: &CloneSetup<'_>,
    clk: T,
) -> Result<ThreadStats, WorkloadError> {
    let job = setup.job;
    if job.ioengine.is_file_op() {
        return run_file_op(setup, clk);
    }
    let mut p = Planner::new(setup)?;
    // Offload: one buffer per submission worker, iodepth of them whatever the engine.
    let depth = if job.ioengine.is_sync() && !job.io_submit_offload {
        1
    } else {
        job.iodepth as usize
    };
    let buf_len = job.max_bs_any() as usize;
    let mut bufs: Vec<AlignedBuf> = (0..depth)
        .map(|_| AlignedBuf::new(buf_len, setup.mem_align))
        .collect();
    let seeds = rand::job_seeds(job, setup.thread_number);
    let mut content = Content::of(setup, &seeds);
    for b in &mut bufs {
        content.fill(job, b.as_mut_slice());
    }
    content.restart();
    let mut vctx = VerifyCtx::of(setup, &seeds)?;
    let policy = BufferPolicy::of(job);
    // Files open before the clock starts (as fio's setup), up to openfiles.
    if !job.create_on_open {
        for fi in 0..p.files.len().min(p.open_limit as usize) {
            ensure_open(&mut p, setup, fi)?;
        }
    }
    let mut st = ThreadStats {
        ioprio: job.ioprio().unwrap_or(0),
        ..ThreadStats::default()
    };
    if matches!(job.ioengine, IoEngine::IoUring | IoEngine::Libaio) {
        if let Some((c, values)) = super::prio::CmdPrio::new(job, p.seeds[rand::SEED_PRIO]) {
            p.cmdprio = Some(c);
            for (d, v) in st.dir.iter_mut().zip(values) {
                d.prios = v.into_iter().map(super::stats::PrioStat::new).collect();
            }
        }
    }
    let expected_ios = if job.time_based {
        1 << 16
    } else {
        setup.plan.pass_bytes / job.rw_min_bs() * job.loops as u64
    };
    let mut logs = IoLogs::for_clone(job, setup.thread_number, expected_ios);
    let mut clock = Clock::start(setup, clk.now());
    if let Some(r) = &mut p.rate {
        r.reset(clock.started);
    }
    let mut ru0 = super::stats::Rusage::thread();
    let mut workers_ru = super::stats::Rusage::default();
    let result = match job.ioengine {
        // verify_only on a write job issues no write, whatever the engine: the verify reads
        // are preads, as every engine's verify phase.
        _ if job.verify_only && job.rw.writes() => {
            run_dry(setup, &mut p, &mut bufs[0], &vctx, &mut st, &mut clock, clk)
        }
        _ if job.io_submit_offload => offload::run(
            setup,
            &mut p,
            std::mem::take(&mut bufs),
            policy,
            &mut content,
            &mut st,
            &mut clock,
            &mut ru0,
            clk,
        )
        .map(|ru| {
            workers_ru = ru;
            false
        }),
        IoEngine::IoUring | IoEngine::Libaio | IoEngine::Posixaio | IoEngine::Vsync => {
            let dir0 = setup
                .plan
                .files
                .first()
                .map(|f| f.path.clone())
                .unwrap_or_default();
            let mut backend: Box<dyn AsyncBackend> = match job.ioengine {
                IoEngine::Libaio => {
                    Box::new(NativeAio::new(depth).map_err(|e| io_err("io_setup", &dir0, e))?)
                }
                IoEngine::Posixaio => Box::new(super::posixaio::PosixAio::new(depth)),
                IoEngine::Vsync => Box::new(super::vsync::Vsync::new(depth)),
                _ => Box::new(uring_for(setup, &mut p, &mut bufs, &dir0)?),
            };
            run_async(
                setup,
                backend.as_mut(),
                &mut p,
                &mut bufs,
                policy,
                &mut content,
                &mut vctx,
                &mut st,
                &mut clock,
                &mut ru0,
                &mut logs,
                clk,
            )
        }
        _ => run_sync(
            setup,
            &mut p,
            &mut bufs[0],
            policy,
            &mut content,
            &mut vctx,
            &mut st,
            &mut clock,
            &mut ru0,
            &mut logs,
            clk,
        ),
    };
    // Ok(true): fill_device filled the device (fio then ends the job without a verify pass).
    result?;
    if job.ioengine.is_sync() && !job.io_submit_offload {
        // The sync loop did not record lat where it equals clat: it is clat's distribution.
        let same = sync_lat_is_clat(job, policy);
        for (d, same) in st.dir.iter_mut().zip(same) {
            if same {
                d.lat = d.clat.clone();
            }
        }
    }
    // fio's do_io: a job that ended in error skips end_fsync.
    if job.end_fsync && st.error.is_none() {
        for (fi, f) in p.files.iter().enumerate() {
            if let Some(fd) = &f.fd {
                rustix::fs::fsync(fd)
                    .map_err(|e| io_err("fsync", &setup.plan.files[fi].path, e))?;
            }
        }
    }
    if clock.ramping {
        st.forget_ramp();
    }
    let end = clk.now();
    let elapsed = end - clock.measured_from;
    close_window(job, &mut st, &clock, &ru0, end);
    st.zone_resets = p.zbd.as_ref().map_or(0, |z| z.resets);
    st.rusage.add(&workers_ru);
    // fio closes the files after the runtime is taken: outside runtime and stats.
    for fi in 0..p.files.len() {
        close_file(&mut p, setup, fi)?;
    }
    drop(p);
    if job.log_unix_epoch {
        logs.set_epoch_ms(clock.measured_from_unix_ms);
    }
    logs.finish(elapsed);
    logs.write()?;
    if job.unlink {
        for f in &setup.plan.files {
            std::fs::remove_file(&f.path).map_err(|e| io_err("unlink", &f.path, e))?;
        }
    }
    Ok(st)
}

/// Where write buffers get their bytes: fsdelta's fast generator, or fio's own (fill_io_buffer
/// with its buf_state and dedupe states) when the content's statistics matter
/// (dedupe_percentage, buffer_compress_percentage).
enum Content {
    Plain { base: u64, seed: u64 },
    Fio(Box<rand::BufState>),
}

impl Content {
    fn of(setup: &CloneSetup<'_>, seeds: &[u64; rand::NR_SEEDS]) -> Content {
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
    fn fill(&mut self, job: &JobSpec, buf: &mut [u8]) {
        match self {
            Content::Plain { seed, .. } => files::fill_like_job(job, buf, seed),
            Content::Fio(b) => b.fill(buf, job.bs[WRITE].0 as usize),
        }
    }

    /// After the initial fills: fsdelta's refills start from the same seed whatever the depth
    /// (every engine writes the same bytes at the same offsets); fio's generator goes on, as
    /// fio's does after filling its io_u buffers.
    fn restart(&mut self) {
        if let Content::Plain { base, seed } = self {
            *seed = *base;
        }
    }
}

/// A verify job's checker and fio's verify_state generator (the seeds of random content).
struct VerifyCtx {
    v: verify::Verifier,
    rand: Taus,
    compress: u32,
}

impl VerifyCtx {
    fn of(
        setup: &CloneSetup<'_>,
        seeds: &[u64; rand::NR_SEEDS],
    ) -> Result<Option<VerifyCtx>, WorkloadError> {
        let job = setup.job;
        if !job.verify {
            return Ok(None);
        }
        // fio's fixup_options: the interval defaults to the write size, is at most the write
        // size (or the read size of a job that reads) and divides the write size.
        let (w, r) = (job.bs[WRITE].0, job.bs[READ].0);
        let mut interval = job.verify_interval.map_or(w, |b| b.0);
        if interval > w {
            interval = w;
        } else if job.rw.reads() && interval > r {
            interval = r;
        }
        if interval == 0 || w % interval != 0 {
            interval = w;
        }
        let hs = verify::hdr_size(job.verify_kind) as u64;
        if interval <= hs {
            return Err(WorkloadError::InvalidOptions(format!(
                "job '{}': verify interval {interval} is too small for the {hs}-byte header of this verify= (raise bs= or verify_interval=)",
                job.name
            )));
        }
        if job.verify_kind == VerifyKind::Sha512 && interval < hs + verify::SHA512_MIN_DATA as u64 {
            // fio's sha512 keeps 128 bytes of its input buffer: with less data after the
            // header some of them are never written, and fio compares them with garbage.
            return Err(WorkloadError::InvalidOptions(format!(
                "job '{}': verify=sha512 needs at least {} bytes of data after its {hs}-byte header, the interval is {interval} (raise bs= or verify_interval= to {} or more)",
                job.name,
                verify::SHA512_MIN_DATA,
                hs + verify::SHA512_MIN_DATA as u64
            )));
        }
        if job.verify_offset.0 > 0 && job.verify_offset.0 < hs {
            // fio accepts it and swaps overlapping ranges (its memswp), which garbles the
            // header it then fails to verify: refused instead.
            return Err(WorkloadError::InvalidOptions(format!(
                "job '{}': verify_offset={} is inside the {hs}-byte header of this verify= (fio 3.33 accepts it and then fails its own verify); give verify_offset={hs} or more",
                job.name, job.verify_offset.0
            )));
        }
        if job.verify_offset.0 > 0 && job.verify_offset.0 + hs > interval {
            return Err(WorkloadError::InvalidOptions(format!(
                "job '{}': verify_offset={} puts the {hs}-byte header past the {interval}-byte interval",
                job.name, job.verify_offset.0
            )));
        }
        let use64 = job.random_generator == RandomGenerator::Tausworthe64;
        Ok(Some(VerifyCtx {
            v: verify::Verifier {
                kind: job.verify_kind,
                interval: interval as usize,
                pattern: job.verify_pattern.clone(),
                header_at: job.verify_offset.0 as usize,
                thread: setup.thread_number as u16,
                // fio's verify_header: not with verify_only (the writes were another run's).
                check_numberio: job.rw.writes() && !job.time_based && !job.verify_only,
                dump: job.verify_dump,
                fatal: job.verify_fatal,
            },
            rand: Taus::new(seeds[rand::SEED_VERIFY], use64),
            compress: job
                .buffer_compress_percentage
                .filter(|&p| p < 100)
                .unwrap_or(0),
        }))
    }

    /// fio's populate_verify_io_u: random content from the verify generator (or the pattern),
    /// then the headers. `numberio` is the write's number.
    #[inline]
    fn stamp(&mut self, data: &mut [u8], offset: u64, numberio: u64) {
        if self.v.kind == VerifyKind::Null {
            // fio's populate_verify_io_u: verify=null leaves the write buffer alone.
            return;
        }
        let rand_seed = if self.v.pattern.is_none() {
            let s = rand::next_seed(&mut self.rand);
            rand::fio_fill_percentage(data, s, self.compress, data.len());
            s
        } else {
            0
        };
        let now = Nanos::now().0;
        let st = verify::Stamp {
            rand_seed,
            numberio: numberio as u16,
            time_sec: (now / 1_000_000_000) as u32,
            time_nsec: (now % 1_000_000_000) as u32,
        };
        self.v.populate(data, offset, st);
    }

    /// Check a block read at `offset` of file `fi`; the error is fio's message (and, with
    /// verify_dump, the names of the dumped files).
    fn check(
        &self,
        setup: &CloneSetup<'_>,
        fi: usize,
        data: &mut [u8],
        offset: u64,
        numberio: Option<u16>,
    ) -> Result<(), WorkloadError> {
        let name = &setup.plan.files[fi].fio_name;
        let numberio = numberio.filter(|_| self.v.check_numberio);
        self.v
            .check(data, offset, numberio, name)
            .map_err(|fs| self.report(setup, fi, &fs))
    }

    /// The job's error for the failures of a block of file `fi`: fio's messages (and, with
    /// verify_dump, the dumps, written here).
    fn report(&self, setup: &CloneSetup<'_>, fi: usize, fs: &[verify::Failure]) -> WorkloadError {
        let path = &setup.plan.files[fi].path;
        let mut m = String::new();
        for f in fs {
            if !m.is_empty() {
                m.push('\n');
            }
            m.push_str(&f.message);
            if self.v.dump {
                m.push_str(&verify::dump(path, f));
            }
        }
        WorkloadError::Io {
            op: "verify",
            path: path.clone(),
            source: std::io::Error::other(m),
        }
    }
}

/// A verify read done: where, the logged write's number, how long it took, bytes read.
struct VerifyRead {
    off: u64,
    numberio: u16,
    took: u64,
    done: usize,
}

/// Read logged block `b` of file `fi` into `data` (None when the block is not logged: nothing
/// is read). Issued with pread whatever the engine (fio uses the job's engine: latencies
/// differ, counts do not). The block leaves the log.
fn read_logged<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    data: &mut [u8],
    clk: T,
    fi: usize,
    b: u64,
) -> Result<Option<VerifyRead>, WorkloadError> {
    let logged = std::mem::take(&mut p.files[fi].written[b as usize]);
    if logged == 0 {
        return Ok(None);
    }
    ensure_open(p, setup, fi)?;
    let fd = p.files[fi].fd.as_ref().expect("opened");
    let off = p.files[fi].base + b * data.len() as u64;
    let t0 = clk.now();
    let mut done = 0usize;
    while done < data.len() {
        let n = rustix::io::pread(fd, &mut data[done..], off + done as u64)
            .map_err(|e| io_err("read (verify)", &setup.plan.files[fi].path, e))?;
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(Some(VerifyRead {
        off,
        numberio: logged as u16,
        took: (clk.now() - t0).0,
        done,
    }))
}

/// Count a verify read as one of the job's reads; a short one is then the job's error.
fn count_verify_read(
    setup: &CloneSetup<'_>,
    st: &mut ThreadStats,
    fi: usize,
    r: &VerifyRead,
) -> Result<(), WorkloadError> {
    let job = setup.job;
    let bs = job.bs[WRITE].0;
    let d = &mut st.dir[READ];
    if !job.disable_clat {
        d.clat.record(r.took);
        st.lat_buckets.mark(r.took);
    }
    if !job.disable_lat {
        d.lat.record(r.took);
    }
    d.io_bytes += bs;
    d.total_ios += 1;
    st.depth_counts[0] += 1;
    st.submit_counts[1] += 1;
    st.complete_counts[1] += 1;
    if (r.done as u64) < bs {
        return Err(io_err(
            "read (verify)",
            &setup.plan.files[fi].path,
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("short read at offset {}", r.off + r.done as u64),
            ),
        ));
    }
    Ok(())
}

/// Read block `b` of file `fi` back and verify it against its logged write (fio's verify read:
/// counted as one of the job's reads).
#[allow(clippy::too_many_arguments)]
fn verify_block<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    buf: &mut AlignedBuf,
    st: &mut ThreadStats,
    clk: T,
    vc: &VerifyCtx,
    fi: usize,
    b: u64,
) -> Result<AfterError, WorkloadError> {
    let data = &mut buf.as_mut_slice()[..setup.job.bs[WRITE].0 as usize];
    let Some(r) = read_logged(setup, p, data, clk, fi, b)? else {
        return Ok(AfterError::Continue);
    };
    count_verify_read(setup, st, fi, &r)?;
    match vc.check(setup, fi, data, r.off, Some(r.numberio)) {
        Ok(()) => Ok(AfterError::Continue),
        Err(e) => Ok(verify_failed(setup, st, &e, setup.job.ioengine.is_sync())),
    }
}

/// fio's verify phase, after every pass of a write job: read every logged block back in
/// offset order (fio's io_hist_tree; random writes with a random map fio checks in issue
/// order, the same blocks) and check its headers and checksums; the reads count as the job's
/// reads, as in fio. A job stopped by its runtime (or by filling the device) is not verified,
/// as fio's is not. With verify_async=N the checks run on N threads (verify_phase_async).
fn verify_phase<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    buf: &mut AlignedBuf,
    st: &mut ThreadStats,
    clk: T,
    vc: &VerifyCtx,
) -> Result<AfterError, WorkloadError> {
    if setup.job.ioengine == IoEngine::Null {
        return Ok(AfterError::Continue);
    }
    if setup.job.verify_async > 0 {
        return verify_phase_async(setup, p, st, clk, vc);
    }
    for fi in 0..p.files.len() {
        for b in 0..p.files[fi].written.len() {
            if p.files[fi].written[b] == 0 {
                continue;
            }
            if setup.cancel.is_cancelled() {
                return Err(WorkloadError::Cancelled);
            }
            if verify_block(setup, p, buf, st, clk, vc, fi, b as u64)? == AfterError::End {
                return Ok(AfterError::End);
            }
        }
    }
    Ok(AfterError::Continue)
}

/// fio's path of a failed verify (EILSEQ returned by verify_io_u, in io_completed): fio's
/// verify messages are printed; a continued error is counted;
/// a fatal one ends the job with fio's verror (io_u_sync_complete or io_u_queued_complete),
/// and on a sync engine break_on_this_error then counts errno 1 (the -1 io_u_sync_complete
/// returned) if continue_on_error takes reads, as fio 3.33 does.
#[cold]
fn verify_failed(
    setup: &CloneSetup<'_>,
    st: &mut ThreadStats,
    e: &WorkloadError,
    sync: bool,
) -> AfterError {
    use crate::fio::jobfile::ErrorClass;
    let job = setup.job;
    let message = match e {
        WorkloadError::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    };
    eprintln!("{message}");
    let errno = libc::EILSEQ;
    if job.error_continues(ErrorClass::Verify, errno) {
        st.errors.count(errno);
        return AfterError::Continue;
    }
    let site = if sync {
        ("io_u.c:2152", "io_u_sync_complete")
    } else {
        ("io_u.c:2190", "io_u_queued_complete")
    };
    st.errors.set_verror(errno, site);
    if sync && job.continues_class(ErrorClass::Read) {
        st.errors.count(1);
        if job.error_continues(ErrorClass::Read, 1) {
            return AfterError::Continue;
        }
    }
    if st.error.is_none() {
        st.error = Some(super::stats::JobError {
            errno,
            verror: st.errors.verror.clone().unwrap_or_default(),
            message,
            told: true,
        });
    }
    AfterError::End
}

/// What became of the verify read numbered `seq` of a phase.
enum Checked {
    /// Read whole and checked (the failures, if any).
    Done(VerifyRead, Result<(), Vec<verify::Failure>>),
    /// Read short: counted, then the job's error.
    Short(VerifyRead),
    /// The read failed: not counted, the job's error.
    Failed(WorkloadError),
}

/// The verify phase with verify_async=N (fio's verify_async offload threads): this thread
/// reads the logged blocks in the same order as the synchronous phase and N threads check
/// them. The outcome is the synchronous one, read for read: results are taken in read order,
/// each read is counted when its turn comes, and the first failed read or check ends the
/// phase with that error; reads issued ahead of it are not counted (fio's own offload goes on
/// reading after a failure; fsdelta keeps the counts and errors of verify_async=0).
fn verify_phase_async<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    st: &mut ThreadStats,
    clk: T,
    vc: &VerifyCtx,
) -> Result<AfterError, WorkloadError> {
    use std::collections::BTreeMap;
    use std::sync::{Mutex, mpsc};
    type Work = (usize, u64, Option<u16>, usize, AlignedBuf);
    let bs = setup.job.bs[WRITE].0 as usize;
    let threads = setup.job.verify_async as usize;
    let names: Vec<&str> = setup
        .plan
        .files
        .iter()
        .map(|f| f.fio_name.as_str())
        .collect();
    let v = &vc.v;
    let (work_tx, work_rx) = mpsc::channel::<Work>();
    let work_rx = Mutex::new(work_rx);
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::scope(|s| {
        // verify_async_cpus=: each checker pins itself first and says whether it could.
        let vcpus = setup.job.verify_cpumask.as_deref();
        let (pin_tx, pin_rx) = mpsc::channel::<std::io::Result<()>>();
        for _ in 0..threads {
            let (rx, tx, names, pin_tx) = (&work_rx, done_tx.clone(), &names, pin_tx.clone());
            s.spawn(move || {
                let pinned = vcpus.map_or(Ok(()), super::numa::set_affinity);
                let ok = pinned.is_ok();
                if pin_tx.send(pinned).is_err() || !ok {
                    return;
                }
                loop {
                    let next = rx.lock().map(|r| r.recv());
                    let Ok(Ok((seq, off, numberio, fi, mut buf))) = next else {
                        return;
                    };
                    let r = v.check(&mut buf.as_mut_slice()[..bs], off, numberio, names[fi]);
                    if tx.send((seq, r, buf)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(pin_tx);
        // Each checker sends once, first: take exactly one answer from each.
        if let Some(e) = pin_rx.iter().take(threads).find_map(Result::err) {
            drop(work_tx);
            return Err(WorkloadError::InvalidOptions(format!(
                "job '{}': sched_setaffinity of a verify_async thread to CPUs {:?} failed: {e} (fio: \"verify thread affinity\"; the CPUs must be ones this process may use, see taskset -p $$)",
                setup.job.name,
                vcpus.unwrap_or_default()
            )));
        }
        drop(done_tx);
        let mut free: Vec<AlignedBuf> = (0..2 * threads)
            .map(|_| AlignedBuf::new(bs, setup.mem_align))
            .collect();
        // Reads by number, their files, and what became of them.
        let mut reads: BTreeMap<usize, (usize, VerifyRead)> = BTreeMap::new();
        let mut outcomes: BTreeMap<usize, (usize, Checked)> = BTreeMap::new();
        let (mut issued, mut committed) = (0usize, 0usize);
        let mut in_flight = 0usize;
        let mut end: Option<Result<AfterError, WorkloadError>> = None;
        // Take the outcomes that are next in read order: count, and stop at an error that
        // ends the job (a failed check continue_on_error continues on is counted, as in the
        // synchronous phase).
        let sync = setup.job.ioengine.is_sync();
        let commit = |outcomes: &mut BTreeMap<usize, (usize, Checked)>,
                      committed: &mut usize,
                      st: &mut ThreadStats|
         -> Option<Result<AfterError, WorkloadError>> {
            while let Some((fi, c)) = outcomes.remove(committed) {
                *committed += 1;
                match c {
                    Checked::Done(r, res) => {
                        if let Err(e) = count_verify_read(setup, st, fi, &r) {
                            return Some(Err(e));
                        }
                        if let Err(f) = res {
                            let e = vc.report(setup, fi, &f);
                            if verify_failed(setup, st, &e, sync) == AfterError::End {
                                return Some(Ok(AfterError::End));
                            }
                        }
                    }
                    Checked::Short(r) => {
                        if let Err(e) = count_verify_read(setup, st, fi, &r) {
                            return Some(Err(e));
                        }
                    }
                    Checked::Failed(e) => return Some(Err(e)),
                }
            }
            None
        };
        // The logged blocks in the synchronous phase's order: by file, then by offset.
        let (mut fi, mut next) = (0usize, 0u64);
        loop {
            while fi < p.files.len() && next as usize >= p.files[fi].written.len() {
                fi += 1;
                next = 0;
            }
            if fi == p.files.len() {
                break;
            }
            let b = next;
            next += 1;
            if p.files[fi].written[b as usize] == 0 {
                continue;
            }
            if setup.cancel.is_cancelled() {
                end = Some(Err(WorkloadError::Cancelled));
                break;
            }
            // Take the checks done; wait for one when every buffer is out.
            loop {
                let got = if free.is_empty() {
                    Some(done_rx.recv().expect("checkers hold the channel"))
                } else {
                    done_rx.try_recv().ok()
                };
                let Some((seq, res, buf)) = got else { break };
                in_flight -= 1;
                free.push(buf);
                let (rfi, r) = reads.remove(&seq).expect("read before checked");
                outcomes.insert(seq, (rfi, Checked::Done(r, res)));
            }
            if let Some(e) = commit(&mut outcomes, &mut committed, st) {
                end = Some(e);
                break;
            }
            let mut buf = free.pop().expect("a free buffer");
            let seq = issued;
            match read_logged(setup, p, &mut buf.as_mut_slice()[..bs], clk, fi, b) {
                Ok(None) => free.push(buf),
                Ok(Some(r)) if r.done < bs => {
                    issued += 1;
                    free.push(buf);
                    outcomes.insert(seq, (fi, Checked::Short(r)));
                    break;
                }
                Ok(Some(r)) => {
                    issued += 1;
                    let numberio = Some(r.numberio).filter(|_| v.check_numberio);
                    work_tx
                        .send((seq, r.off, numberio, fi, buf))
                        .expect("checkers wait for work");
                    reads.insert(seq, (fi, r));
                    in_flight += 1;
                }
                Err(e) => {
                    issued += 1;
                    free.push(buf);
                    outcomes.insert(seq, (fi, Checked::Failed(e)));
                    break;
                }
            }
        }
        drop(work_tx);
        if end.is_none() {
            // Every read issued: take the rest of the checks, in read order.
            while in_flight > 0 {
                let (seq, res, _buf) = done_rx.recv().expect("checkers hold the channel");
                in_flight -= 1;
                let (rfi, r) = reads.remove(&seq).expect("read before checked");
                outcomes.insert(seq, (rfi, Checked::Done(r, res)));
            }
            if let Some(e) = commit(&mut outcomes, &mut committed, st) {
                end = Some(e);
            }
            debug_assert!(end.is_some() || committed == issued);
        }
        end.unwrap_or(Ok(AfterError::Continue))
    })
}

/// fio's do_dry_run, for verify_only on a write job: every write of the pass is planned,
/// logged for verify and counted (fio counts them as done, in no time: they take no runtime
/// and, unlike fio's, which times them from a start never set, record no latency), none is
/// issued, and no fsync either; then the pass is read back and verified as after real writes.
fn run_dry<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    buf: &mut AlignedBuf,
    vctx: &Option<VerifyCtx>,
    st: &mut ThreadStats,
    clock: &mut Clock,
    clk: T,
) -> Result<bool, WorkloadError> {
    let job = setup.job;
    loop {
        if setup.cancel.is_cancelled() {
            return Err(WorkloadError::Cancelled);
        }
        if setup.exit.is_some_and(|e| e.terminated()) {
            return Ok(false);
        }
        let Some(io) = p.next_io() else {
            if let Some(vc) = vctx.as_ref().filter(|_| job.do_verify) {
                if verify_phase(setup, p, buf, st, clk, vc)? == AfterError::End {
                    return Ok(false);
                }
            }
            if next_pass(setup, p, clock, clk.now())? {
                continue;
            }
            return Ok(false);
        };
        let d = &mut st.dir[io.ddir];
        d.io_bytes += io.len as u64;
        d.total_ios += 1;
        st.depth_counts[0] += 1;
        st.submit_counts[1] += 1;
        st.complete_counts[1] += 1;
    }
}

/// What the loop does after an I/O or a check: go on, or stop.
#[inline]
fn after_tick<T: TimeSource>(
    p: &mut Planner<'_>,
    st: &mut ThreadStats,
    clock: &mut Clock,
    ru0: &mut super::stats::Rusage,
    now: Nanos,
    clk: T,
) -> bool {
    let (job, status, exit) = (p.job, p.status, p.exit);
    tick(job, status, exit, st, clock, ru0, now, clk, || {
        p.ramp_reset();
        if let Some(r) = &mut p.rate {
            r.reset(now);
        }
    });
    if let Some(pr) = p.progress {
        pr.publish(
            st.dir.iter().map(|d| d.total_ios).sum::<u64>(),
            st.dir.iter().map(|d| d.io_bytes).sum::<u64>(),
        );
        if pr.stopped() {
            return false;
        }
    }
    !clock.out_of_time(now)
}

/// The block loops' clock (fio's gtod_reduce(td) and fio_fill_issue_time): untimed when
/// nothing is measured per I/O (lat, clat, bandwidth, and slat where the loop records it)
/// and no log, latency target or rate needs a timestamp; then read at completions only,
/// once per 64 I/Os with gtod_reduce=1 (its ts_cache).
fn io_clock(
    job: &JobSpec,
    logs: &IoLogs,
    p: &Planner<'_>,
    latency_target: bool,
    records_slat: bool,
    now: Nanos,
) -> super::clock::IoClock {
    let measured = !(job.disable_lat
        && job.disable_clat
        && job.disable_bw
        && (job.disable_slat || !records_slat));
    let timed = measured || logs.active() || latency_target || p.rate.is_some();
    super::clock::IoClock::new(timed, job.gtod_reduce, now)
}

/// The bookkeeping after every I/O that the block loops and the file-engine loop share: the
/// end of ramp_time (a fresh window; `on_ramp_end` resets the loop's own state, and the clone
/// counts as running for exit_what=stonewall and the status board), a bandwidth sample, a
/// status report that was asked for (at a fresh reading of `clk`: `now` may be a gtod_reduce
/// job's last reading).
#[allow(clippy::too_many_arguments)]
#[inline]
fn tick<T: TimeSource>(
    job: &JobSpec,
    status: Option<&super::status::Slot>,
    exit: Option<&super::rate::Exit>,
    st: &mut ThreadStats,
    clock: &mut Clock,
    ru0: &mut super::stats::Rusage,
    now: Nanos,
    clk: T,
    on_ramp_end: impl FnOnce(),
) {
    if clock.ramp_ends(now) {
        fresh_window(st, ru0, clock, now);
        on_ramp_end();
        if let Some(s) = status {
            s.ramp_ended();
        }
        if let Some(e) = exit {
            e.set_phase(super::status::Phase::Running);
        }
    }
    if !job.disable_bw {
        clock.sampler.tick(now, &mut st.dir);
    }
    if let Some(slot) = status.filter(|s| s.wanted()) {
        slot.answer(running_stats(job, st, clock, ru0, clk.now()), Nanos::now());
    }
}

/// A new measuring window from `now` (fio's reset_all_stats: ramp_time's end, a
/// latency_target's final run): fresh stats and CPU counts, the clock measuring from `now`.
#[cold]
fn fresh_window(
    st: &mut ThreadStats,
    ru0: &mut super::stats::Rusage,
    clock: &mut Clock,
    now: Nanos,
) {
    st.reset();
    *ru0 = super::stats::Rusage::thread();
    clock.measure_from(now);
}

/// Close the measuring window at `now` (at the end, or for a status report): each direction
/// that did something has run for the window, the job for the window, the CPU counts since
/// `ru0`, and the thread's id.
fn close_window(
    job: &JobSpec,
    st: &mut ThreadStats,
    clock: &Clock,
    ru0: &super::stats::Rusage,
    now: Nanos,
) {
    let elapsed = now - clock.measured_from;
    let file_op = job.ioengine.is_file_op();
    for (ddir, d) in st.dir.iter_mut().enumerate() {
        // A file engine's "I/O" may move no bytes: it counts by operations. fio's
        // update_runtime: verify_only's writes, never issued, take no time.
        let ran = if file_op {
            d.total_ios > 0
        } else {
            d.io_bytes > 0 && !(ddir == WRITE && job.verify_only)
        };
        if ran {
            d.runtime_ms = elapsed.0.div_ceil(1_000_000);
        }
    }
    st.job_runtime_ms = elapsed.0 / 1_000_000;
    st.rusage = super::stats::Rusage::thread().since(ru0);
    // SAFETY: gettid(2) takes no arguments and cannot fail.
    st.tid = unsafe { libc::gettid() };
}

/// The clone's stats as `--status-interval` reports them at `now` (fio's
/// `__show_running_run_stats`): every direction that moved bytes has run until now, the CPU
/// counts until now, and the sync loop's lat is its clat (as at the end).
#[cold]
fn running_stats(
    job: &JobSpec,
    st: &ThreadStats,
    clock: &Clock,
    ru0: &super::stats::Rusage,
    now: Nanos,
) -> ThreadStats {
    let mut snap = st.clone();
    if job.ioengine.is_sync() && !job.io_submit_offload && !job.ioengine.is_file_op() {
        let same = sync_lat_is_clat(job, BufferPolicy::of(job));
        for (d, same) in snap.dir.iter_mut().zip(same) {
            if same {
                d.lat = d.clat.clone();
            }
        }
    }
    close_window(job, &mut snap, clock, ru0, now);
    // The job's clock (chosen, and the TSC calibrated, before the clone started: this only
    // reads the decision) and its drift so far.
    let (jc, _) = JobClock::choose(job.clocksource);
    snap.clock = ClockUse {
        source: Some(jc.source()),
        drift_ppm: jc.drift_ppm(),
    };
    // A report while the job runs shows its error as the final one does.
    snap.finish_errors();
    snap
}

/// Whether another pass should start after one ended. A new pass drops the files' cached
/// pages again when invalidate=1 (fio reopens the files of a new loop, and invalidates a
/// time_based job's file when it wraps).
fn next_pass(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    clock: &Clock,
    now: Nanos,
) -> Result<bool, WorkloadError> {
    let more = next_pass_counted(p, clock, now);
    if more && !setup.job.time_based {
        if let Some(r) = &mut p.rate {
            r.new_loop(now, setup.job.randrepeat);
        }
    }
    if more && setup.job.unlink_each_loop && !setup.job.time_based {
        // fio's thread_main: clear_io_state closes the files, unlink_all_files deletes the
        // regular ones; the next loop's open creates them.
        for fi in 0..p.files.len() {
            close_file(p, setup, fi)?;
            let path = &setup.plan.files[fi].path;
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
                std::fs::remove_file(path)
                    .map_err(|e| WorkloadError::io("unlink (unlink_each_loop)", path.clone(), e))?;
            }
        }
    }
    if more && setup.job.invalidate && !setup.job.direct {
        for (fi, f) in p.files.iter().enumerate() {
            if let Some(fd) = &f.fd {
                files::invalidate(fd, &setup.plan.files[fi].path)?;
            }
        }
    }
    Ok(more)
}

fn next_pass_counted(p: &mut Planner<'_>, clock: &Clock, now: Nanos) -> bool {
    let job = p.job;
    if job.time_based {
        // A pass that found nothing to do (zonemode=zbd reads of empty zones) comes round
        // again at once, as fio's does, until the runtime is over.
        let idle = p.pass_ios == 0;
        p.wrap();
        let over = clock.out_of_time(now)
            || clock
                .runtime
                .is_some_and(|r| (now - clock.started).0 >= clock.ramp + r);
        return !(idle && over);
    }
    // A pass made during ramp_time counts as one of the job's loops, as fio's keep_running
    // counts it: a size-based job that ends inside its ramp ends there, with no latencies
    // (`forget_ramp`).
    p.passes += 1;
    // A merged pass (the bytes of every loop) that found its files done first goes on in a
    // new loop with the bytes left, as fio's cumulative io_issue_bytes limit does.
    let merged_left = p.merged_loops && p.pass_issued < p.pass_bytes;
    let more = p.passes < job.loops && (!p.merged_loops || merged_left);
    if more {
        let carried = p.pass_issued;
        p.new_loop();
        if merged_left {
            p.pass_issued = carried;
        }
    }
    more
}

#[inline]
fn do_sync_io(
    job: &JobSpec,
    f: &mut FileState,
    ddir: usize,
    buf: &mut [u8],
    offset: u64,
) -> rustix::io::Result<usize> {
    let engine = job.ioengine;
    if engine == IoEngine::Null {
        // fio's null engine: the I/O completes at once and moves nothing.
        return Ok(buf.len());
    }
    let fd = f.fd.as_ref().expect("file opened before I/O").as_fd();
    if ddir == TRIM {
        // The falloc engine punches a hole (fio's engines/falloc.c); every other engine
        // discards a device's range or punches a file's.
        let blkdev = f.blkdev && engine != IoEngine::Falloc;
        trim_range(fd, blkdev, offset, buf.len() as u64)?;
        return Ok(buf.len());
    }
    match engine {
        IoEngine::Sync => {
            if f.fd_pos != offset {
                rustix::fs::seek(fd, rustix::fs::SeekFrom::Start(offset))?;
            }
            let n = if ddir == READ {
                rustix::io::read(fd, buf)?
            } else {
                rustix::io::write(fd, buf)?
            };
            f.fd_pos = offset + n as u64;
            Ok(n)
        }
        IoEngine::Pvsync => {
            if ddir == READ {
                rustix::io::preadv(fd, &mut [std::io::IoSliceMut::new(buf)], offset)
            } else {
                rustix::io::pwritev(fd, &[std::io::IoSlice::new(buf)], offset)
            }
        }
        IoEngine::Pvsync2 => {
            let flags = if job.hipri {
                rustix::io::ReadWriteFlags::HIPRI
            } else {
                rustix::io::ReadWriteFlags::empty()
            };
            if ddir == READ {
                rustix::io::preadv2(fd, &mut [std::io::IoSliceMut::new(buf)], offset, flags)
            } else {
                rustix::io::pwritev2(fd, &[std::io::IoSlice::new(buf)], offset, flags)
            }
        }
        IoEngine::Falloc => {
            // fio's falloc engine: a write allocates its range, a read allocates it without
            // changing the file size (FALLOC_FL_KEEP_SIZE).
            let mode = if ddir == READ {
                rustix::fs::FallocateFlags::KEEP_SIZE
            } else {
                rustix::fs::FallocateFlags::empty()
            };
            rustix::fs::fallocate(fd, mode, offset, buf.len() as u64)?;
            Ok(buf.len())
        }
        IoEngine::Mmap => {
            let m = f.mapping.as_ref().expect("mapped before the I/O");
            if ddir == READ {
                m.read(offset, buf);
            } else {
                m.write(offset, buf);
            }
            if job.direct {
                m.drop_pages(offset, buf.len())?;
            }
            Ok(buf.len())
        }
        IoEngine::Ftruncate => {
            // fio's ftruncate engine: a write truncates the file to its offset; nothing else
            // is an I/O it can do.
            if ddir != WRITE {
                return Err(rustix::io::Errno::INVAL);
            }
            rustix::fs::ftruncate(fd, offset)?;
            Ok(buf.len())
        }
        _ => {
            if ddir == READ {
                rustix::io::pread(fd, buf, offset)
            } else {
                rustix::io::pwrite(fd, buf, offset)
            }
        }
    }
}

fn direct_hint(job: &JobSpec, e: rustix::io::Errno) -> String {
    if job.direct && e == rustix::io::Errno::INVAL {
        " (O_DIRECT I/O rejected: check that bs and sizes are multiples of the device's logical block size)".to_string()
    } else {
        String::new()
    }
}

/// fio's thinktime: after every `thinktime_blocks` I/Os, spin `thinktime_spin`, then sleep the
/// rest of `thinktime`.
#[inline(always)]
fn think(job: &JobSpec, issued: u64) -> u64 {
    if job.thinktime.is_zero() {
        return 0;
    }
    think_some(job, issued)
}

/// [`think`] of a job with a thinktime, out of the I/O loop.
#[inline(never)]
fn think_some(job: &JobSpec, issued: u64) -> u64 {
    if issued % job.thinktime_blocks.max(1) as u64 != 0 {
        return 0;
    }
    let t0 = Nanos::now();
    let spin = job.thinktime_spin.min(job.thinktime);
    if !spin.is_zero() {
        let until = Nanos::now() + Nanos::from(spin);
        while Nanos::now() < until {
            std::hint::spin_loop();
        }
    }
    let rest = job.thinktime - spin;
    if !rest.is_zero() {
        std::thread::sleep(rest);
    }
    (Nanos::now() - t0).0 / 1000
}

/// A rated job's wait before its next I/O (fio's rate_ddir sleep): never past the runtime,
/// cut short by an end request. False when the job must end instead of issuing (out of
/// runtime, ended by another job, or cancelled).
fn rate_sleep<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &Planner<'_>,
    clock: &Clock,
    us: u64,
    clk: T,
) -> bool {
    let Some(r) = p.rate.as_ref() else {
        return true;
    };
    let limit = if clock.ramping {
        None
    } else {
        clock.runtime.map(|ns| ns / 1000)
    };
    let now = r.now_us(clk.now());
    let mut us = us;
    if let Some(t) = limit {
        if now + us > t {
            if now > t {
                return false;
            }
            us = t - now;
        }
    }
    let stop = || setup.cancel.is_cancelled() || setup.exit.is_some_and(|e| e.terminated());
    super::rate::sleep_us(us, &stop);
    let now = r.now_us(clk.now());
    !(limit.is_some_and(|t| now > t) || stop())
}

/// After an I/O of a job with rate_min / rate_iops_min (not while ramping): fio's
/// check_min_rate. True when the job missed its minimum: it ends (after what is in flight) with
/// fio's error, EIO from check_min_rate, beside its stats.
fn check_min_rate(p: &mut Planner<'_>, st: &mut ThreadStats, clock: &Clock, now: Nanos) -> bool {
    if clock.ramping {
        return false;
    }
    let Some(r) = p.rate.as_mut() else {
        return false;
    };
    let bytes = st.dir.each_ref().map(|d| d.io_bytes);
    let blocks = st.dir.each_ref().map(|d| d.total_ios);
    match r.check_min(now, bytes, blocks) {
        Ok(()) => false,
        Err(message) => {
            st.error = Some(super::stats::JobError::at(
                libc::EIO,
                ("backend.c:1131", "check_min_rate"),
                message,
            ));
            true
        }
    }
}

/// ioengine=mmap: map the I/O's part of its file before the clock starts (fio's
/// fio_mmapio_prep runs before the I/O is timed).
fn mmap_prep(setup: &CloneSetup<'_>, p: &mut Planner<'_>, io: &Io) -> Result<(), WorkloadError> {
    let job = setup.job;
    let plan = &setup.plan.files[io.file];
    let spec = super::mmap::MapSpec {
        write: job.rw.writes() && !job.verify_only,
        read: job.rw.reads() || job.verify || job.verify_only,
        // fio's fio_madvise_file: no advice with fadvise_hint=0, else by the job's
        // randomness (fadvise_hint=random|sequential change only the descriptor's advice).
        hint: job.fadvise_hint != crate::fio::jobfile::FadviseHint::None,
        random: job.rw.is_random(),
        base: plan.offset,
        region: plan.size,
        nrfiles: setup.plan.files.len() as u64,
    };
    let f = &mut p.files[io.file];
    let fd = f.fd.as_ref().expect("opened before the I/O").as_fd();
    super::mmap::Mapping::prep(&mut f.mapping, fd, io.offset, io.len, &spec)
        .map(|_| ())
        .map_err(|e| io_err("mmap", &plan.path, e))
}

/// The priority an asynchronous I/O goes with.
struct IoPrio {
    /// What its stats and logs say (cmdprio's, else the job's).
    prio: u32,
    /// Its index among the direction's per-priority stats.
    index: u16,
    /// What the engine puts on it: cmdprio's; io_uring the job's otherwise (its workers do
    /// not inherit the thread's); libaio and the sync engines none (0: the submitting
    /// thread's applies).
    engine: u16,
}

/// fio's engines with cmdprio: the priority of `io` (cmdprio's draw, made here, in I/O order)
/// for a job whose own priority is `job_prio`.
fn io_priority(p: &mut Planner<'_>, job: &JobSpec, io: &Io, job_prio: u32) -> IoPrio {
    let chosen = p
        .cmdprio
        .as_mut()
        .and_then(|c| c.choose(io.ddir, io.len as u64));
    let (prio, index) = chosen.map_or((job_prio, 0), |c| (c.ioprio, c.index));
    let engine = match (chosen, job.ioengine) {
        (Some(c), _) => c.ioprio,
        (None, IoEngine::IoUring) => job_prio,
        (None, _) => 0,
    } as u16;
    IoPrio {
        prio,
        index,
        engine,
    }
}

/// fio's per-priority sample of a completed I/O: clat, or lat with lat_percentiles=1.
#[inline]
fn record_prio(d: &mut super::stats::DirStats, job: &JobSpec, index: u16, lat: u64, clat: u64) {
    if let Some(ps) = d.prios.get_mut(index as usize) {
        if job.lat_percentiles && !job.disable_lat {
            ps.lat.record(lat);
        } else if !job.lat_percentiles && !job.disable_clat {
            ps.lat.record(clat);
        }
    }
}

/// One fsync (fsync=) or fdatasync (fdatasync=) of file `fi`, recorded in the sync stats.
fn timed_sync<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &Planner<'_>,
    st: &mut ThreadStats,
    fi: usize,
    clk: T,
) -> Result<(), WorkloadError> {
    let job = setup.job;
    let fd = p.files[fi].fd.as_ref().expect("open");
    let t0 = clk.now();
    let r = if job.ioengine == IoEngine::Mmap {
        // fio's mmap engine syncs the mapping (msync MS_SYNC), whichever sync was asked;
        // a file not mapped yet has nothing to sync.
        p.files[fi].mapping.as_ref().map_or(Ok(()), |m| m.sync())
    } else if job.fsync > 0 {
        rustix::fs::fsync(fd)
    } else {
        rustix::fs::fdatasync(fd)
    };
    let t1 = clk.now();
    r.map_err(|e| io_err("fsync", &setup.plan.files[fi].path, e))?;
    st.sync.record((t1 - t0).0);
    if job.fsync > 0 {
        st.fsync_ios += 1;
    } else {
        st.datasync_ios += 1;
    }
    // fio's td_io_queue counts a sync in the depth levels (io_u_map) as it counts a read or
    // write; ours is issued alone (the queue drained first), at depth 1.
    st.depth_counts[0] += 1;
    Ok(())
}

/// Per direction, whether every lat of the sync loop equals its clat, so that the loop records
/// clat alone and lat is a copy of it at the end: start and issue are one clock reading unless a
/// write buffer is scrambled between them, and both are measured.
fn sync_lat_is_clat(job: &JobSpec, policy: BufferPolicy) -> [bool; 3] {
    let both = !job.disable_clat && !job.disable_lat;
    [both, both && !policy.scramble, both]
}

/// fio's io_ddir_name: what an I/O of direction `ddir` is called in errors.
fn ddir_name(ddir: usize) -> &'static str {
    match ddir {
        READ => "read",
        WRITE => "write",
        _ => "trim",
    }
}

/// A trim of `len` bytes at `offset`: on a block device BLKDISCARD (fio's os_trim), on a
/// regular file a hole punched with fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE)
/// (fio 3.33's sync engines fail there with ENOTTY; the falloc engine punches too).
fn trim_range(fd: BorrowedFd<'_>, blkdev: bool, offset: u64, len: u64) -> rustix::io::Result<()> {
    if blkdev {
        // BLKDISCARD = _IO(0x12, 119); the argument is {start, length} in bytes.
        const BLKDISCARD: libc::c_ulong = 0x1277;
        let range: [u64; 2] = [offset, len];
        // SAFETY: the ioctl reads two u64 from `range`, which outlives the call.
        let r = unsafe {
            libc::ioctl(
                std::os::fd::AsRawFd::as_raw_fd(&fd),
                BLKDISCARD as _,
                range.as_ptr(),
            )
        };
        if r != 0 {
            return Err(
                rustix::io::Errno::from_io_error(&std::io::Error::last_os_error())
                    .unwrap_or(rustix::io::Errno::IO),
            );
        }
        return Ok(());
    }
    use rustix::fs::FallocateFlags as F;
    rustix::fs::fallocate(fd, F::PUNCH_HOLE | F::KEEP_SIZE, offset, len)
}

#[allow(clippy::too_many_arguments)]
fn run_sync<T: TimeSource>(
    setup: &CloneSetup<'_>,
    p: &mut Planner<'_>,
    buf: &mut AlignedBuf,
    policy: BufferPolicy,
    content: &mut Content,
    vctx: &mut Option<VerifyCtx>,
    st: &mut ThreadStats,
    clock: &mut Clock,
    ru0: &mut super::stats::Rusage,
    logs: &mut IoLogs,
    clk: T,
) -> Result<bool, WorkloadError> {
    let job = setup.job;
    let mut think_count = 0u64;
    let mut last_ddir = WRITE;
    // A read-only verify job checks every block it reads (fio: verify on a job that does not
    // both read and write).
    let verify_reads = vctx.is_some() && !job.rw.writes();
    let mut target = super::pace::LatencyTarget::new(job, 1, clk.now().0);
    let lat_is_clat = sync_lat_is_clat(job, policy);
    // The sync loop records no slat.
    let mut times = io_clock(job, logs, p, target.is_some(), false, clk.now());
    loop {
        if setup.cancel.is_cancelled() {
            return Err(WorkloadError::Cancelled);
        }
        if setup.exit.is_some_and(|e| e.terminated()) {
            return Ok(false);
        }
        if p.held_back() {
            std::thread::sleep(job.flow_sleep);
            if clock.out_of_time(clk.now()) {
                return Ok(false);
            }
            continue;
        }
        // fio's check_get_verify: every verify_backlog logged writes, read back
        // verify_backlog_batch (default verify_backlog) of them before the next write.
        if let Some(vc) = vctx.as_ref().filter(|_| job.verify_backlog > 0) {
            if let Some((fi, b)) = backlog_next(p, last_ddir, |_, _| false) {
                let verified = verify_block(setup, p, buf, st, clk, vc, fi, b)?;
                // A read that completes, as any (fio's io_completed).
                p.last_was_sync = false;
                if verified == AfterError::End {
                    return Ok(false);
                }
                last_ddir = READ;
                if !after_tick(p, st, clock, ru0, clk.now(), clk) {
                    return Ok(false);
                }
                continue;
            }
        }
        while let Some(us) = p.rate_wait(clk) {
            if !rate_sleep(setup, p, clock, us, clk) {
                if setup.cancel.is_cancelled() {
                    return Err(WorkloadError::Cancelled);
                }
                return Ok(false);
            }
        }
        let sync_owed = p.sync_due();
        let Some(io) = p.next_io() else {
            // fio's thread_main: every pass (loop, or wrap of a time_based job) of a write job
            // is verified before the next starts.
            if let Some(vc) = vctx.as_ref().filter(|_| job.do_verify && job.rw.writes()) {
                if verify_phase(setup, p, buf, st, clk, vc)? == AfterError::End {
                    return Ok(false);
                }
            }
            if next_pass(setup, p, clock, clk.now())? {
                continue;
            }
            return Ok(false);
        };
        last_ddir = io.ddir;
        ensure_open(p, setup, io.file)?;
        if sync_owed {
            timed_sync(setup, p, st, io.file, clk)?;
            p.last_was_sync = true;
            // A synchronous engine has no commit: fio's td_io_queue marks the sync as one
            // I/O submitted and one completed.
            st.submit_counts[1] += 1;
            st.complete_counts[1] += 1;
        }
        if job.ioengine == IoEngine::Mmap && io.ddir != TRIM {
            mmap_prep(setup, p, &io)?;
        }
        let data = &mut buf.as_mut_slice()[..io.len];
        if io.ddir == WRITE && policy.refill {
            content.fill(job, data);
        }
        if io.ddir == WRITE {
            if let Some(vc) = vctx.as_mut() {
                vc.stamp(data, io.offset, p.issues[WRITE] - 1);
            }
        }
        times.issued();
        let start = times.start(clk);
        // fio stamps start before the write buffer is scrambled and issue just before the
        // call; for a read nothing happens in between, so one clock reading serves both.
        let issue = if io.ddir == WRITE && policy.scramble {
            scramble(data, io.offset, start);
            times.start(clk)
        } else {
            start
        };
        let f = &mut p.files[io.file];
        let mut done = 0usize;
        let mut failed = None;
        while done < io.len {
            match do_sync_io(job, f, io.ddir, &mut data[done..], io.offset + done as u64) {
                Ok(0) => {
                    return Err(io_err(
                        ddir_name(io.ddir),
                        &setup.plan.files[io.file].path,
                        std::io::Error::new(
                            std::io::ErrorKind::UnexpectedEof,
                            format!("short transfer at offset {}", io.offset + done as u64),
                        ),
                    ));
                }
                Ok(n) => done += n,
                Err(e) if fills_device(job, io.ddir, e) => {
                    // fill_device: the device is full, the job ends (fio clears the error,
                    // after its engine logged it); the failed write is not logged for verify.
                    let at = io.offset + done as u64;
                    log_io_error(setup, WRITE, io.file, at, io.len - done, e.raw_os_error());
                    unlog(p, &io);
                    st.dir[WRITE].total_ios += full_device_ios(if done > 0 { 1 } else { -1 });
                    return Ok(true);
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        // fio's io_completed: any read, write or trim that completes, failed or not.
        p.last_was_sync = false;
        if let Some(e) = failed {
            // fio counts the failed I/O (and a short one before it, requeued) in total_ios,
            // moves no bytes and records no latency for it; a verify read-back skips it.
            if io.ddir == WRITE {
                unlog(p, &io);
            }
            st.dir[io.ddir].total_ios += full_device_ios(if done > 0 { 1 } else { -1 });
            st.depth_counts[0] += 1;
            st.submit_counts[1] += 1;
            st.complete_counts[1] += 1;
            let via = match (io.ddir, job.ioengine) {
                (TRIM, _) | (_, IoEngine::Falloc | IoEngine::Ftruncate) => FailedVia::Queue,
                _ => FailedVia::SyncXfer,
            };
            if io_failed(setup, st, &io, e, via) == AfterError::End
                || !after_tick(p, st, clock, ru0, clk.now(), clk)
            {
                return Ok(false);
            }
            continue;
        }
        let end = times.end(clk, clock.ramping);
        // fio accounts the read, then verifies it (its end_io).
        let bad = match vctx.as_ref().filter(|_| verify_reads && io.ddir == READ) {
            Some(vc) => vc.check(setup, io.file, data, io.offset, None).err(),
            None => None,
        };
        let d = &mut st.dir[io.ddir];
        let clat = (end - issue).0;
        if !job.disable_clat {
            d.clat.record(clat);
            st.lat_buckets.mark(clat);
        }
        if !job.disable_lat && !lat_is_clat[io.ddir] {
            d.lat.record((end - start).0);
        }
        d.io_bytes += io.len as u64;
        d.total_ios += 1;
        if logs.active() {
            logs.completed(Completion {
                ddir: io.ddir,
                bs: io.len,
                offset: io.offset,
                at: end - clock.measured_from,
                lat: (end - start).0,
                clat,
                prio: st.ioprio,
            });
        }
        st.depth_counts[0] += 1;
        st.submit_counts[1] += 1;
        st.complete_counts[1] += 1;
        if !job.disable_lat
            && !clock.ramping
            && max_latency_exceeded(setup, st, &io, (end - start).0)
        {
            return Ok(false);
        }
        if let Some(e) = bad {
            if verify_failed(setup, st, &e, true) == AfterError::End {
                return Ok(false);
            }
        }
        think_count += 1;
        let thought = think(job, think_count);
        if let Some(l) = &mut target {
            let ios = st.dir.iter().map(|d| d.total_ios).sum::<u64>();
            if let Err(max) = l.completed((end - start).0, end.0, ios) {
                return Err(latency_fatal(setup, max));
            }
        }
        if !after_tick(p, st, clock, ru0, end, clk) {
            return Ok(false);
        }
        if p.rate.is_some() {
            let now = if thought > 0 {
                if let Some(r) = &mut p.rate {
                    r.thought(io.ddir, thought);
                }
                clk.now()
            } else {
                end
            };
            if check_min_rate(p, st, clock, now) {
                return Ok(false);
            }
        }
        if let Some(l) = &mut target {
            if latency_step(l, p, st, clock, ru0, end) {
                return Ok(false);
            }
        }
    }
}

/// fio's io_u_log_error line on stderr: `fio: io_u error on file F: TEXT: DDIR offset=O,
/// buflen=L`.
#[cold]
fn log_io_error(
    setup: &CloneSetup<'_>,
    ddir: usize,
    file: usize,
    offset: u64,
    len: usize,
    errno: i32,
) {
    eprintln!("{}", io_error_line(setup, ddir, file, offset, len, errno));
}

/// The text of fio's io_u_log_error line.
fn io_error_line(
    setup: &CloneSetup<'_>,
    ddir: usize,
    file: usize,
    offset: u64,
    len: usize,
    errno: i32,
) -> String {
    format!(
        "fio: io_u error on file {}: {}: {} offset={offset}, buflen={len}",
        setup.plan.files[file].fio_name,
        crate::fio::output::errno_text(errno),
        ddir_name(ddir),
    )
}

/// fio's line for a write of a fill_device job that failed (`res` < 0) or came back short
/// (the rest, requeued, fails with ENOSPC).
#[cold]
fn log_full_device(setup: &CloneSetup<'_>, io: &Io, res: i64) {
    if res < 0 {
        log_io_error(setup, io.ddir, io.file, io.offset, io.len, -res as i32);
    } else {
        let done = res as usize;
        log_io_error(
            setup,
            io.ddir,
            io.file,
            io.offset + done as u64,
            io.len - done,
            libc::ENOSPC,
        );
    }
}

/// Whether a failed I/O is fill_device's end: a write's ENOSPC or EDQUOT that
/// continue_on_error does not continue on (fio's break_on_this_error asks td_non_fatal_error
/// first).
fn fills_device(job: &JobSpec, ddir: usize, e: rustix::io::Errno) -> bool {
    use crate::fio::jobfile::ErrorClass;
    job.fill_device
        && ddir == WRITE
        && (e == rustix::io::Errno::NOSPC || e == rustix::io::Errno::DQUOT)
        && !job.error_continues(ErrorClass::Write, e.raw_os_error())
}

/// The I/Os fio counts for a write that hit a full device (fill_device), without bytes: one
/// for a failed write (`res` < 0), two for a short one (it and the rest, requeued, failing).
fn full_device_ios(res: i64) -> u64 {
    if res > 0 { 2 } else { 1 }
}

/// fio's check_get_verify and get_next_verify: every verify_backlog logged writes (counted
/// when the last I/O was not a read), read back verify_backlog_batch (default
/// verify_backlog) of them, oldest first, before the next I/O; the block to read, or None.
/// A round once started goes on at the next call. The oldest logged block whose write is
/// still in flight (`in_flight`, async engines) is not read yet: nothing is taken this time,
/// as fio's IP_F_IN_FLIGHT check. A read taken uses the io_size= budget (fio's keep_running
/// counts every byte done).
fn backlog_next(
    p: &mut Planner<'_>,
    last_ddir: usize,
    in_flight: impl Fn(usize, u64) -> bool,
) -> Option<(usize, u64)> {
    let job = p.job;
    let &(fi, b) = p.backlog.front()?;
    if p.verify_batch == 0 {
        if p.backlog.len() as u64 % job.verify_backlog != 0 || last_ddir == READ {
            return None;
        }
        p.verify_batch = if job.verify_backlog_batch > 0 {
            job.verify_backlog_batch
        } else {
            job.verify_backlog
        };
    }
    if in_flight(fi, b) {
        return None;
    }
    p.backlog.pop_front();
    p.verify_batch -= 1;
    if job.io_size.is_some() {
        p.pass_issued += job.bs[WRITE].0;
    }
    Some((fi, b))
}

/// Take a write that failed (fill_device's ENOSPC, an error continue_on_error goes on after)
/// out of the verify log.
fn unlog(p: &mut Planner<'_>, io: &Io) {
    let f = &mut p.files[io.file];
    if f.written.is_empty() {
        return;
    }
    let b = ((io.offset - f.base) / io.len.max(1) as u64) as usize;
    if let Some(w) = f.written.get_mut(b) {
        *w = 0;
    }
    if p.backlog
        .back()
        .is_some_and(|&(fi, bb)| fi == io.file && bb == b as u64)
    {
        p.backlog.pop_back();
    }
}

/// How fio's engine returned a failed I/O, which decides what fio prints, where its verror
/// points and whether a fatal error is counted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FailedVia {
    /// A read or write of a sync engine (engines/sync.c's fio_io_end: io_u_log_error, then
    /// td_verror "xfer"; break_on_this_error counts a fatal error of a continued class).
    SyncXfer,
    /// Completed at queue time without the engine's log (a trim, the falloc and ftruncate
    /// engines: td_io_queue's td_verror; counted as SyncXfer).
    Queue,
    /// Reaped from an async engine (io_completed: io_u_log_error; a fatal error is not
    /// counted).
    Reaped,
}

/// What the job does after a failed I/O: go on (the error was continued and counted), or end
/// with its stats and `st.error` set.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[must_use]
enum AfterError {
    Continue,
    End,
}

/// fio's path of a failed I/O (io_u_log_error, td_verror, td_non_fatal_error,
/// update_error_count, break_on_this_error): print fio's line unless the error is continued
/// without error_dump, keep the job's first verror, count a continued error (and a fatal one
/// of a continued class a sync engine returned), and on a fatal error set the job's error: the
/// job ends with its stats, the others go on, fio exits 1. The I/O counts in total_ios (fio
/// counts it when queued), never in io_bytes or the latencies: the caller's. Off the hot
/// path: only failed I/Os come here.
#[cold]
fn io_failed(
    setup: &CloneSetup<'_>,
    st: &mut ThreadStats,
    io: &Io,
    e: rustix::io::Errno,
    via: FailedVia,
) -> AfterError {
    use crate::fio::jobfile::ErrorClass;
    let job = setup.job;
    if via == FailedVia::SyncXfer
        && e == rustix::io::Errno::INVAL
        && job.direct
        && st.dir[io.ddir].total_ios == 1
    {
        // fio's td_io_queue, when the first I/O of the direction came back EINVAL.
        eprintln!(
            "fio: first direct IO errored. File system may not support direct IO, or iomem_align= is bad, or invalid block size. Try setting direct=0."
        );
    }
    let errno = e.raw_os_error();
    let class = ErrorClass::of(io.ddir == READ, errno);
    let continued = job.error_continues(class, errno);
    if via != FailedVia::Queue && (!continued || job.error_dump) {
        log_io_error(setup, io.ddir, io.file, io.offset, io.len, errno);
        st.errors.set_verror(errno, ("io_u.c:1876", "io_u error"));
    }
    match via {
        FailedVia::SyncXfer => st.errors.set_verror(errno, ("engines/sync.c:126", "xfer")),
        FailedVia::Queue => st
            .errors
            .set_verror(errno, ("ioengines.c:399", "td_io_queue")),
        FailedVia::Reaped => {}
    }
    if continued {
        st.errors.count(errno);
        return AfterError::Continue;
    }
    if via != FailedVia::Reaped && job.continues_class(class) {
        st.errors.count(errno);
    }
    // fio's __td_verror: the job keeps its first fatal error (another in the same batch of
    // completions does not replace it).
    if st.error.is_none() {
        st.error = Some(super::stats::JobError {
            errno,
            verror: st.errors.verror.clone().unwrap_or_default(),
            message: io_error_line(setup, io.ddir, io.file, io.offset, io.len, errno),
            told: true,
        });
    }
    AfterError::End
}

struct Slot {
    io: Io,
    start: Nanos,
    issue: Nanos,
    /// The priority the I/O was issued with (fio's io_u->ioprio) and its index in the
    /// direction's per-priority stats (io_u->clat_prio_index).
    prio: u32,
    prio_index: u16,
    /// A verify_backlog read: the numberio its block's logged write had.
    verify: Option<u16>,
}

#[allow(clippy::too_many_arguments)]
fn run_async<T: TimeSource>(
    setup: &CloneSetup<'_>,
    backend: &mut dyn AsyncBackend,
    p: &mut Planner<'_>,
    bufs: &mut [AlignedBuf],
    policy: BufferPolicy,
    content: &mut Content,
    vctx: &mut Option<VerifyCtx>,
    st: &mut ThreadStats,
    clock: &mut Clock,
    ru0: &mut super::stats::Rusage,
    logs: &mut IoLogs,
    clk: T,
) -> Result<bool, WorkloadError> {
    let job = setup.job;
    let depth = bufs.len();
    let verify_reads = vctx.is_some() && !job.rw.writes();
    let dir0 = setup
        .plan
        .files
        .first()
        .map(|f| f.path.as_path())
        .unwrap_or(Path::new("."));
    let engine_op = match job.ioengine {
        IoEngine::Libaio => "io_submit/io_getevents",
        IoEngine::Posixaio => "aio_suspend",
        IoEngine::Vsync => "xfer vsync",
        _ => "io_uring_enter",
    };
    let mut slots: Vec<Option<Slot>> = (0..depth).map(|_| None).collect();
    let mut free: Vec<usize> = (0..depth).rev().collect();
    let mut inflight = 0usize;
    let mut pass_over = false;
    let mut stop = false;
    // An I/O taken from the planner while a sync was owed and I/O was in flight.
    let mut stashed: Option<Io> = None;
    // The stashed I/O was drawn when a sync was owed (fio decides before it draws): the
    // sync comes first once the queue has drained.
    let mut stash_owes_sync = false;
    let mut think_count = 0u64;
    let mut target = super::pace::LatencyTarget::new(job, depth as u32, clk.now().0);
    let mut times = io_clock(job, logs, p, target.is_some(), true, clk.now());
    let mut late: Option<u64> = None;
    // A rated job waits with nothing in flight (fio's io_u_quiesce before the rate's sleep).
    let mut quiesce = false;
    // fio's last_ddir, for verify_backlog's rounds.
    let mut last_ddir = WRITE;
    loop {
        if setup.exit.is_some_and(|e| e.terminated()) {
            stop = true;
        }
        if setup.cancel.is_cancelled() {
            // Let the kernel finish what it holds before the buffers go away.
            while inflight > 0 {
                let n = backend
                    .reap(1, depth, &mut |_, _| {})
                    .map_err(|e| io_err(engine_op, dir0, e))?;
                inflight -= n;
            }
            return Err(WorkloadError::Cancelled);
        }
        // Fill free slots.
        while !stop
            && !pass_over
            && !free.is_empty()
            && target.as_ref().is_none_or(|l| inflight < l.depth())
        {
            if stashed.is_none() && p.held_back() {
                // fio's flow control quiesces (reaps everything in flight), then sleeps.
                if inflight == 0 {
                    std::thread::sleep(job.flow_sleep);
                    if clock.out_of_time(clk.now()) {
                        return Ok(false);
                    }
                    continue;
                }
                break;
            }
            if stashed.is_none() {
                if let Some(us) = p.rate_wait(clk) {
                    if inflight > 0 {
                        quiesce = true;
                        break;
                    }
                    if !rate_sleep(setup, p, clock, us, clk) {
                        stop = true;
                        break;
                    }
                    continue;
                }
            }
            let sync_owed = stash_owes_sync || (stashed.is_none() && p.sync_due());
            // fio's verify_backlog (check_get_verify): a logged block read back and checked
            // on completion, queued as any read; not while a sync is owed.
            let mut verify_tag = None;
            let backlog =
                if vctx.is_some() && job.verify_backlog > 0 && stashed.is_none() && !sync_owed {
                    let bs = job.bs[WRITE].0;
                    // The blocks whose writes are in flight (a verify block is one write's bs).
                    let busy: Vec<(usize, u64)> = slots
                        .iter()
                        .flatten()
                        .filter(|s| s.io.ddir == WRITE)
                        .map(|s| (s.io.file, (s.io.offset - p.files[s.io.file].base) / bs))
                        .collect();
                    match backlog_next(p, last_ddir, |fi, b| busy.contains(&(fi, b))) {
                        Some((fi, b)) => {
                            let logged = std::mem::take(&mut p.files[fi].written[b as usize]);
                            if logged == 0 {
                                // Unlogged since (its write failed): nothing to read.
                                continue;
                            }
                            verify_tag = Some(logged as u16);
                            Some(Io {
                                ddir: READ,
                                file: fi,
                                offset: p.files[fi].base + b * bs,
                                len: bs as usize,
                            })
                        }
                        None => None,
                    }
                } else {
                    None
                };
            let io = match stashed.take().or(backlog) {
                Some(io) => io,
                None => match p.next_io() {
                    Some(io) => io,
                    None => {
                        pass_over = true;
                        break;
                    }
                },
            };
            stash_owes_sync = false;
            ensure_open(p, setup, io.file)?;
            if sync_owed {
                if inflight > 0 {
                    // The owed sync must follow the writes it covers: drain first.
                    stashed = Some(io);
                    stash_owes_sync = true;
                    break;
                }
                timed_sync(setup, p, st, io.file, clk)?;
            }
            // fio clears last_was_sync when a read, write or trim completes; with several in
            // flight when that happens depends on timing (fio's sync count at iodepth 8 varies
            // from run to run), so here it is cleared when the I/O is queued: at iodepth 1
            // the same, and deeper a sync every N writes, with syncs before the reads that
            // follow until the next write, as at iodepth 1.
            p.last_was_sync = false;
            if io.ddir == TRIM {
                // fio's libaio and io_uring engines trim at queue time (do_io_u_trim), the
                // I/O complete when the call returns, beside what is in flight.
                let start = clk.now();
                let f = &p.files[io.file];
                let fd = f.fd.as_ref().expect("open").as_fd();
                if let Err(e) = trim_range(fd, f.blkdev, io.offset, io.len as u64) {
                    // Completed at queue time, as fio's: counted, no bytes, no latency.
                    st.dir[TRIM].total_ios += 1;
                    if io_failed(setup, st, &io, e, FailedVia::Queue) == AfterError::End {
                        stop = true;
                    }
                    continue;
                }
                let end = clk.now();
                let d = &mut st.dir[TRIM];
                let lat = (end - start).0;
                if !job.disable_clat {
                    d.clat.record(lat);
                    st.lat_buckets.mark(lat);
                }
                if !job.disable_lat {
                    d.lat.record(lat);
                }
                d.io_bytes += io.len as u64;
                d.total_ios += 1;
                if logs.active() {
                    logs.completed(Completion {
                        ddir: TRIM,
                        bs: io.len,
                        offset: io.offset,
                        at: end - clock.measured_from,
                        lat,
                        clat: lat,
                        prio: st.ioprio,
                    });
                }
                st.submit_counts[ThreadStats::batch_index(1)] += 1;
                st.complete_counts[ThreadStats::batch_index(1)] += 1;
                st.depth_counts[ThreadStats::depth_index(inflight as u32 + 1)] += 1;
                think_count += 1;
                think(job, think_count);
                if !after_tick(p, st, clock, ru0, end, clk) {
                    stop = true;
                }
                continue;
            }
            let si = free.pop().expect("a free slot");
            let data = &mut bufs[si].as_mut_slice()[..io.len];
            if io.ddir == WRITE && policy.refill {
                content.fill(job, data);
            }
            if io.ddir == WRITE {
                if let Some(vc) = vctx.as_mut() {
                    vc.stamp(data, io.offset, p.issues[WRITE] - 1);
                }
            }
            let start = times.start(clk);
            if io.ddir == WRITE && policy.scramble {
                scramble(data, io.offset, start);
            }
            let fd = p.files[io.file].fd.as_ref().expect("open").as_raw_fd();
            let IoPrio {
                prio,
                index: prio_index,
                engine: sqe_prio,
            } = io_priority(p, job, &io, st.ioprio);
            // SAFETY: the buffer belongs to slot `si`, which stays out of the free list (and
            // the buffers stay alive) until its completion is reaped; files are closed only
            // with no I/O in flight (openfiles rotation drains, below).
            unsafe {
                backend.queue(
                    si,
                    io.ddir == WRITE,
                    io.file,
                    fd,
                    data.as_mut_ptr(),
                    io.len,
                    io.offset,
                    sqe_prio,
                );
            }
            // fio's default iodepth_batch_submit=1: every I/O is submitted on its own, and
            // its issue time is read right after that submission (slat = issue - start).
            backend.submit().map_err(|e| io_err(engine_op, dir0, e))?;
            let issue = times.start(clk);
            times.issued();
            st.submit_counts[ThreadStats::batch_index(1)] += 1;
            if !job.disable_slat {
                st.dir[io.ddir].slat.record((issue - start).0);
                if logs.active() {
                    logs.submitted(
                        io.ddir,
                        io.len,
                        io.offset,
                        issue - clock.measured_from,
                        (issue - start).0,
                        prio,
                    );
                }
            }
            slots[si] = Some(Slot {
                io,
                start,
                issue,
                prio,
                prio_index,
                verify: verify_tag,
            });
            last_ddir = io.ddir;
            inflight += 1;
            think_count += 1;
            let thought = think(job, think_count);
            if let Some(r) = &mut p.rate {
                r.thought(io.ddir, thought);
            }
            st.depth_counts[ThreadStats::depth_index(inflight as u32)] += 1;
            if (p.open_limit as usize) < p.files.len() {
                // An openfiles rotation may close a file: no I/O may be in flight then.
                break;
            }
        }
        if inflight == 0 {
            if stop {
                return Ok(false);
            }
            if stashed.is_some() {
                continue;
            }
            if pass_over {
                pass_over = false;
                // Nothing in flight: the pass is verified before the next starts (fio).
                if let Some(vc) = vctx.as_ref().filter(|_| job.do_verify && job.rw.writes()) {
                    if verify_phase(setup, p, &mut bufs[0], st, clk, vc)? == AfterError::End {
                        return Ok(false);
                    }
                }
                if next_pass(setup, p, clock, clk.now())? {
                    continue;
                }
                return Ok(false);
            }
            continue;
        }
        let mut err: Option<(Io, i64)> = None;
        // An I/O error continue_on_error does not continue on ended the job (st.error).
        let mut ended = false;
        let vref = vctx.as_ref();
        let mut t = Nanos::ZERO;
        // The queue is full (or nothing is left to issue): wait for at least one completion
        // and take every one available, as fio's wait_for_completions.
        // fio's wait_for_completions: wait for iodepth_batch_complete_min (at least one when
        // nothing else can be done) and take at most iodepth_batch_complete_max (by default
        // the min, 1), so the queue is refilled after every completion and stays full.
        let min_evts = if quiesce {
            inflight
        } else {
            (job.iodepth_batch_complete_min as usize).clamp(1, inflight)
        };
        let measured_from = clock.measured_from;
        // fio accounts no completion in ramp_time (should_account): no max_latency either.
        let ramping = clock.ramping;
        let max_evts = (job.iodepth_batch_complete_max as usize).max(min_evts);
        let reaped = backend
            .reap(min_evts, max_evts, &mut |si, res| {
                if t == Nanos::ZERO {
                    // fio reads the clock once per batch of completions.
                    t = times.end(clk, ramping);
                }
                let s = slots[si].take().expect("completion of a slot in flight");
                free.push(si);
                if res < 0
                    && !fills_device(
                        job,
                        s.io.ddir,
                        rustix::io::Errno::from_raw_os_error(-res as i32),
                    )
                {
                    // fio's io_completed: the failed I/O counts (it was queued), moves no
                    // bytes, records no latency, leaves the verify log; continued, the job
                    // goes on.
                    st.dir[s.io.ddir].total_ios += 1;
                    if s.io.ddir == WRITE {
                        unlog(p, &s.io);
                    }
                    let e = rustix::io::Errno::from_raw_os_error(-res as i32);
                    if io_failed(setup, st, &s.io, e, FailedVia::Reaped) == AfterError::End {
                        ended = true;
                    }
                    return;
                }
                if res < 0 || res as usize != s.io.len {
                    if job.fill_device && s.io.ddir == WRITE {
                        st.dir[WRITE].total_ios += full_device_ios(res);
                        log_full_device(setup, &s.io, res);
                    }
                    err.get_or_insert((s.io, res));
                    return;
                }
                let mut bad = None;
                if (s.verify.is_some() || (verify_reads && s.io.ddir == READ)) && !ended {
                    if let Some(vc) = vref {
                        let data = &mut bufs[si].as_mut_slice()[..s.io.len];
                        bad = vc
                            .check(setup, s.io.file, data, s.io.offset, s.verify)
                            .err();
                    }
                }
                let d = &mut st.dir[s.io.ddir];
                let clat = (t - s.issue).0;
                let lat = (t - s.start).0;
                if !job.disable_clat {
                    d.clat.record(clat);
                    st.lat_buckets.mark(clat);
                }
                if !job.disable_lat {
                    d.lat.record(lat);
                }
                record_prio(d, job, s.prio_index, lat, clat);
                d.io_bytes += s.io.len as u64;
                d.total_ios += 1;
                if !job.disable_lat && !ramping && max_latency_exceeded(setup, st, &s.io, lat) {
                    ended = true;
                }
                // fio accounts the read, then verifies it (its end_io).
                if let Some(e) = bad {
                    if verify_failed(setup, st, &e, false) == AfterError::End {
                        ended = true;
                    }
                }
                if let Some(l) = &mut target {
                    let ios = st.dir.iter().map(|d| d.total_ios).sum::<u64>();
                    if let Err(max) = l.completed((t - s.start).0, t.0, ios) {
                        late.get_or_insert(max);
                    }
                }
                if logs.active() {
                    logs.completed(Completion {
                        ddir: s.io.ddir,
                        bs: s.io.len,
                        offset: s.io.offset,
                        at: t - measured_from,
                        lat,
                        clat,
                        prio: s.prio,
                    });
                }
            })
            .map_err(|e| io_err(engine_op, dir0, e))?;
        inflight -= reaped;
        if inflight == 0 {
            quiesce = false;
        }
        st.complete_counts[ThreadStats::batch_index(reaped)] += 1;
        let full = err.filter(|&(io, res)| {
            job.fill_device
                && io.ddir == WRITE
                && (res >= 0 || res == -(libc::ENOSPC as i64) || res == -(libc::EDQUOT as i64))
        });
        if full.is_some() || ended {
            // fill_device: the device is full; or a fatal error ended the job: what is in
            // flight completes (counted as fio counts it), the job ends.
            if let Some((io, _)) = full {
                unlog(p, &io);
            }
            let filled = full.is_some();
            while inflight > 0 {
                let n = backend
                    .reap(1, depth, &mut |si, res| {
                        let s = slots[si].take().expect("completion of a slot in flight");
                        let d = &mut st.dir[s.io.ddir];
                        if res >= 0 && res as usize == s.io.len {
                            d.io_bytes += s.io.len as u64;
                            d.total_ios += 1;
                        } else {
                            d.total_ios += full_device_ios(res);
                            if filled && s.io.ddir == WRITE {
                                log_full_device(setup, &s.io, res);
                            } else if res < 0 {
                                // After a fatal error fio's io_completed still logs each
                                // failed I/O it reaps.
                                let errno = -res as i32;
                                let class =
                                    crate::fio::jobfile::ErrorClass::of(s.io.ddir == READ, errno);
                                if !job.error_continues(class, errno) || job.error_dump {
                                    log_io_error(
                                        setup,
                                        s.io.ddir,
                                        s.io.file,
                                        s.io.offset,
                                        s.io.len,
                                        errno,
                                    );
                                }
                            }
                        }
                    })
                    .map_err(|e| io_err(engine_op, dir0, e))?;
                inflight -= n;
            }
            return Ok(true);
        }
        // A failed I/O went through io_failed (or ended a fill_device job): what is left is a
        // short transfer.
        if let Some((io, _)) = err {
            let path = &setup.plan.files[io.file].path;
            return Err(io_err(
                "asynchronous I/O",
                path,
                std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "short transfer"),
            ));
        }
        if let Some(max) = late {
            return Err(latency_fatal(setup, max));
        }
        if !after_tick(p, st, clock, ru0, t, clk) {
            stop = true;
        }
        if let Some(l) = &mut target {
            if latency_step(l, p, st, clock, ru0, t) {
                stop = true;
            }
        }
        if check_min_rate(p, st, clock, t) {
            stop = true;
        }
    }
}

/// fio's lat_fatal: latency_target missed at depth 1 with latency_percentile=100.
/// max_latency= (fio's lat_fatal from account_io_completion): an I/O whose latency `lat_ns`
/// exceeds its direction's maximum ends the job with ETIMEDOUT beside its stats (the I/O is
/// counted), after fio's stderr line naming it. True when the job must end.
#[inline]
fn max_latency_exceeded(
    setup: &CloneSetup<'_>,
    st: &mut ThreadStats,
    io: &Io,
    lat_ns: u64,
) -> bool {
    let max = setup.job.max_latency[io.ddir];
    if max == 0 || lat_ns <= max || !setup.job.stats {
        return false;
    }
    max_latency_fatal(setup, st, io, lat_ns, max);
    true
}

#[cold]
fn max_latency_fatal(setup: &CloneSetup<'_>, st: &mut ThreadStats, io: &Io, lat_ns: u64, max: u64) {
    if st.error.is_some() {
        return;
    }
    let message = format!(
        "fio: latency of {lat_ns} nsec exceeds specified max ({max} nsec): {} {} {} {}",
        setup.plan.files[io.file].fio_name,
        ddir_name(io.ddir),
        io.offset,
        io.len
    );
    eprintln!("{message}");
    let mut e = super::stats::JobError::at(
        libc::ETIMEDOUT,
        ("io_u.c:1432", "max latency exceeded"),
        message,
    );
    e.told = true;
    st.error = Some(e);
}

fn latency_fatal(setup: &CloneSetup<'_>, max_ns: u64) -> WorkloadError {
    WorkloadError::InvalidOptions(format!(
        "job '{}': an I/O's latency exceeded latency_target ({} usec) at depth 1 (fio's lat_fatal; lower the target or the latency_percentile)",
        setup.job.name,
        max_ns / 1000
    ))
}

/// After an I/O of a latency_target job (not while ramping): judge the window; true when the
/// job is done. The final window starts with fresh stats, as fio's reset_all_stats.
fn latency_step(
    l: &mut super::pace::LatencyTarget,
    p: &mut Planner<'_>,
    st: &mut ThreadStats,
    clock: &mut Clock,
    ru0: &mut super::stats::Rusage,
    now: Nanos,
) -> bool {
    st.latency_depth = Some(l.depth() as u32);
    if clock.ramping {
        return false;
    }
    let ios = st.dir.iter().map(|d| d.total_ios).sum::<u64>();
    let done = match l.check(now.0, ios) {
        super::pace::LatencyStep::Continue => false,
        super::pace::LatencyStep::FinalRun => {
            fresh_window(st, ru0, clock, now);
            p.ramp_reset();
            false
        }
        super::pace::LatencyStep::Done => true,
    };
    st.latency_depth = Some(l.depth() as u32);
    done
}

/// fio's file engines: each file's creation (filecreate: open with O_CREAT), stat(2)
/// (filestat) or unlink(2) (filedelete) is one timed "I/O", recorded as clat; the file's bytes
/// are counted as fio's fake I/O, none are moved.
fn run_file_op<T: TimeSource>(
    setup: &CloneSetup<'_>,
    clk: T,
) -> Result<ThreadStats, WorkloadError> {
    let job = setup.job;
    let ddir = if job.rw.reads() { READ } else { WRITE };
    let bs = job.bs[ddir].0.max(1);
    let mut st = ThreadStats {
        ioprio: job.ioprio().unwrap_or(0),
        ..ThreadStats::default()
    };
    let mut clock = Clock::start(setup, clk.now());
    let mut ru0 = super::stats::Rusage::thread();
    let limit = (job.openfiles.unwrap_or(u32::MAX).max(1) as usize).min(setup.plan.files.len());
    let mut open: std::collections::VecDeque<OwnedFd> =
        std::collections::VecDeque::with_capacity(limit);
    let mut passes = 0u32;
    'outer: loop {
        for f in &setup.plan.files {
            if setup.cancel.is_cancelled() {
                return Err(WorkloadError::Cancelled);
            }
            // Ended by another job (exitall, exit_what): it reports what it did, as the block
            // loops do.
            if setup.exit.is_some_and(|e| e.terminated()) {
                break 'outer;
            }
            if open.len() >= limit {
                open.pop_front();
            }
            let t0 = clk.now();
            match job.ioengine {
                IoEngine::FileStat => {
                    rustix::fs::stat(&f.path).map_err(|e| io_err("stat", &f.path, e))?;
                }
                IoEngine::FileDelete => {
                    rustix::fs::unlink(&f.path).map_err(|e| io_err("unlink", &f.path, e))?;
                }
                _ => {
                    let fd = rustix::fs::open(
                        &f.path,
                        rustix::fs::OFlags::CREATE
                            | rustix::fs::OFlags::RDWR
                            | rustix::fs::OFlags::CLOEXEC,
                        rustix::fs::Mode::from_raw_mode(0o600),
                    )
                    .map_err(|e| io_err("open", &f.path, e))?;
                    open.push_back(fd);
                }
            }
            let t1 = clk.now();
            st.dir[ddir].clat.record((t1 - t0).0);
            st.lat_buckets.mark((t1 - t0).0);
            st.dir[ddir].io_bytes += f.size;
            st.dir[ddir].total_ios += f.size.div_ceil(bs).max(1);
            st.depth_counts[0] += 1;
            st.submit_counts[1] += 1;
            st.complete_counts[1] += 1;
            tick(
                job,
                setup.status,
                setup.exit,
                &mut st,
                &mut clock,
                &mut ru0,
                t1,
                clk,
                || {},
            );
            if clock.out_of_time(t1) {
                break 'outer;
            }
        }
        passes += 1;
        if !(job.time_based || passes < job.loops) {
            break;
        }
    }
    drop(open);
    if clock.ramping {
        st.forget_ramp();
    }
    close_window(job, &mut st, &clock, &ru0, clk.now());
    if job.unlink && job.ioengine != IoEngine::FileDelete {
        for f in &setup.plan.files {
            std::fs::remove_file(&f.path).map_err(|e| io_err("unlink", &f.path, e))?;
        }
    }
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buffers_are_aligned() {
        for align in [512usize, 4096] {
            let mut b = AlignedBuf::new(8192, align);
            assert_eq!(b.as_slice().as_ptr() as usize % align, 0);
            assert_eq!(b.as_mut_slice().len(), 8192);
        }
    }

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

/// Runs `f` with the first clone's setup of a one-job file and its seed table (no file is
/// opened: the plan points at a directory that does not exist).
#[cfg(test)]
fn with_test_clone<R>(
    text: &str,
    f: impl FnOnce(&CloneSetup<'_>, &[u64; rand::NR_SEEDS]) -> R,
) -> R {
    let set =
        crate::fio::jobfile::parse_job_text(text, "t.fio", &crate::fio::jobfile::SystemSources)
            .unwrap();
    let job = &set.jobs[0];
    let seeds = rand::job_seeds(job, 1);
    let plan = files::plan_clone(job, 0, Path::new("/nonexistent"), &seeds).unwrap();
    let cancel = CancelToken::default();
    let setup = CloneSetup {
        job,
        plan,
        thread_number: 1,
        mem_align: 4096,
        cancel: &cancel,
        flow: None,
        progress: None,
        status: None,
        buf_starts: &[],
        exit: None,
        zbd: None,
    };
    f(&setup, &seeds)
}

#[cfg(test)]
mod distribution_tests {
    use super::*;

    fn offsets(text: &str, n: usize) -> Vec<u64> {
        ios(text, n).into_iter().map(|(_, o, _)| o).collect()
    }

    /// The first `n` I/Os of the job's first clone: (direction, offset, length).
    fn ios(text: &str, n: usize) -> Vec<(usize, u64, usize)> {
        with_test_clone(text, |setup, _| {
            let mut p = Planner::new(setup).unwrap();
            (0..n)
                .map_while(|_| p.next_io().map(|io| (io.ddir, io.offset, io.len)))
                .collect()
        })
    }

    /// random_distribution=zoned offsets equal fio 3.33's (`fio --debug=io --name=z
    /// --ioengine=null --rw=randread --norandommap --size=4m --bs=4k
    /// --random_distribution=zoned:50/5:30/15:20/`).
    #[test]
    fn zoned_offsets_are_fios() {
        let got = offsets(
            "[z]\nioengine=null\nrw=randread\nnorandommap\nsize=4m\nbs=4k\nrandom_distribution=zoned:50/5:30/15:20/\n",
            8,
        );
        assert_eq!(
            got,
            vec![
                0x3000, 0x25000, 0x2b000, 0x24c000, 0x215000, 0x2a000, 0x6d000, 0x12000
            ]
        );
    }

    /// (direction, offset, length) as fio's write_iolog lines read them.
    fn fio_log(v: &[(char, u64, usize)]) -> Vec<(usize, u64, usize)> {
        v.iter()
            .map(|&(d, o, l)| (if d == 'R' { READ } else { WRITE }, o, l))
            .collect()
    }

    /// (direction, offset, length) as fio's write_iolog lines read them, with trims.
    fn fio_trim_log(v: &[(char, u64, usize)]) -> Vec<(usize, u64, usize)> {
        v.iter()
            .map(|&(d, o, l)| {
                let d = match d {
                    'R' => READ,
                    'W' => WRITE,
                    _ => TRIM,
                };
                (d, o, l)
            })
            .collect()
    }

    /// randtrim with bssplit: trims drawn from the random map with the trim direction's
    /// split and its own generator (fio 3.33: `fio --name=j --ioengine=null --rw=randtrim
    /// --bssplit=4k/50:8k/30:64k/20 --size=256k --write_iolog=FILE`, 35 trims).
    #[test]
    fn randtrim_offsets_and_sizes_are_fios() {
        let job = "[j]\nioengine=null\nrw=randtrim\nbssplit=4k/50:8k/30:64k/20\nsize=256k\n";
        assert_eq!(
            ios(job, 12),
            fio_trim_log(&[
                ('T', 12288, 8192),
                ('T', 192512, 4096),
                ('T', 217088, 4096),
                ('T', 122880, 65536),
                ('T', 102400, 4096),
                ('T', 221184, 4096),
                ('T', 98304, 4096),
                ('T', 90112, 8192),
                ('T', 237568, 4096),
                ('T', 20480, 4096),
                ('T', 225280, 4096),
                ('T', 188416, 4096),
            ])
        );
        assert_eq!(ios(job, 1000).len(), 35);
    }

    /// bs=R,W,T: the trims take the third size; the random map counts 4k blocks (fio 3.33:
    /// `--rw=randtrim --bs=4k,8k,16k --size=128k`, six trims).
    #[test]
    fn trim_block_size_is_bs_third_part() {
        let job = "[j]\nioengine=null\nrw=randtrim\nbs=4k,8k,16k\nsize=128k\n";
        assert_eq!(
            ios(job, 1000),
            fio_trim_log(&[
                ('T', 0, 16384),
                ('T', 81920, 16384),
                ('T', 98304, 16384),
                ('T', 49152, 16384),
                ('T', 65536, 16384),
                ('T', 114688, 16384),
            ])
        );
    }

    /// trimwrite: each block trimmed, then written with the same size (the trim generator
    /// seeded as the write one), twice the size issued (fio 3.33: `--rw=trimwrite
    /// --bssplit=4k/50:16k/50 --size=64k`).
    #[test]
    fn trimwrite_pairs_are_fios() {
        let job = "[j]\nioengine=null\nrw=trimwrite\nbssplit=4k/50:16k/50\nsize=64k\n";
        assert_eq!(
            ios(job, 1000),
            fio_trim_log(&[
                ('T', 0, 4096),
                ('W', 0, 4096),
                ('T', 4096, 4096),
                ('W', 4096, 4096),
                ('T', 8192, 4096),
                ('W', 8192, 4096),
                ('T', 12288, 16384),
                ('W', 12288, 16384),
                ('T', 28672, 16384),
                ('W', 28672, 16384),
                ('T', 45056, 4096),
                ('W', 45056, 4096),
                ('T', 49152, 16384),
                ('W', 49152, 16384),
            ])
        );
    }

    /// randtrimwrite: a random trim, then a write of exactly its range (fio 3.33:
    /// `--rw=randtrimwrite --bssplit=4k/50:16k/50 --size=64k`).
    #[test]
    fn randtrimwrite_pairs_are_fios() {
        let job = "[j]\nioengine=null\nrw=randtrimwrite\nbssplit=4k/50:16k/50\nsize=64k\n";
        assert_eq!(
            ios(job, 1000),
            fio_trim_log(&[
                ('T', 0, 4096),
                ('W', 0, 4096),
                ('T', 45056, 4096),
                ('W', 45056, 4096),
                ('T', 53248, 4096),
                ('W', 53248, 4096),
                ('T', 28672, 16384),
                ('W', 28672, 16384),
                ('T', 24576, 4096),
                ('W', 24576, 4096),
                ('T', 57344, 4096),
                ('W', 57344, 4096),
                ('T', 49152, 4096),
                ('W', 49152, 4096),
                ('T', 20480, 4096),
                ('W', 20480, 4096),
                ('T', 61440, 4096),
                ('W', 61440, 4096),
                ('T', 4096, 16384),
                ('W', 4096, 16384),
            ])
        );
    }

    /// bssplit with the random map: sizes drawn as fio's get_next_buflen, and an I/O cut short
    /// where the map already has a block (the 64k write at 397312 becomes 20k), as fio 3.33's
    /// `fio --name=j --ioengine=null --rw=randrw --bssplit=4k/50:8k/30:64k/20 --size=1m
    /// --write_iolog=FILE`, whose 93 I/Os this pass also has.
    #[test]
    fn bssplit_sizes_and_map_cuts_are_fios() {
        let job = "[j]\nioengine=null\nrw=randrw\nbssplit=4k/50:8k/30:64k/20\nsize=1m\n";
        assert_eq!(
            ios(job, 16),
            fio_log(&[
                ('R', 61440, 65536),
                ('R', 774144, 4096),
                ('R', 880640, 4096),
                ('W', 491520, 65536),
                ('R', 417792, 8192),
                ('R', 884736, 4096),
                ('W', 397312, 20480),
                ('W', 368640, 8192),
                ('W', 954368, 4096),
                ('R', 126976, 65536),
                ('W', 892928, 4096),
                ('R', 679936, 4096),
                ('W', 970752, 8192),
                ('R', 258048, 65536),
                ('R', 425984, 8192),
                ('R', 585728, 65536),
            ])
        );
        assert_eq!(ios(job, 1000).len(), 93);
    }

    /// bsrange, sequential: sizes uniform in the range, multiples of the smallest (fio 3.33:
    /// `--rw=read --bsrange=4k-64k --size=1m`, 31 I/Os).
    #[test]
    fn bsrange_sizes_are_fios() {
        let job = "[j]\nioengine=null\nrw=read\nbsrange=4k-64k\nsize=1m\n";
        let got = ios(job, 1000);
        let lens: Vec<usize> = got.iter().take(8).map(|x| x.2).collect();
        assert_eq!(
            lens,
            [12288, 45056, 53248, 24576, 61440, 8192, 65536, 12288]
        );
        assert_eq!(got.len(), 31);
    }

    /// jesd219's split with blockalign=4k and zoned offsets (fio 3.33: `--rw=randread
    /// --bssplit=512/4:...:64k/3 --blockalign=4k --norandommap --size=4m
    /// --random_distribution=zoned:50/5:30/15:20/80`, 481 I/Os).
    #[test]
    fn jesd219_split_aligned_offsets_are_fios() {
        let job = "[j]\nioengine=null\nrw=randread\nbssplit=512/4:1024/1:1536/1:2048/1:2560/1:3072/1:3584/1:4k/67:8k/10:16k/7:32k/3:64k/3\nblockalign=4k\nnorandommap\nsize=4m\nrandom_distribution=zoned:50/5:30/15:20/80\n";
        let got = ios(job, 1000);
        assert_eq!(
            got[..8],
            fio_log(&[
                ('R', 12288, 512),
                ('R', 151552, 4096),
                ('R', 176128, 4096),
                ('R', 2408448, 8192),
                ('R', 2183168, 4096),
                ('R', 172032, 512),
                ('R', 446464, 4096),
                ('R', 73728, 16384),
            ])[..]
        );
        assert_eq!(got[14], (READ, 454656, 1536));
        assert_eq!(got.len(), 481);
    }

    /// Different read and write sizes share one random map counted in the smaller (fio 3.33:
    /// `--rw=randrw --bs=4k,8k --size=64k`: 10 I/Os, the pass ends when a read finds no block).
    #[test]
    fn mixed_block_sizes_share_fios_random_map() {
        let job = "[j]\nioengine=null\nrw=randrw\nbs=4k,8k\nsize=64k\n";
        assert_eq!(
            ios(job, 100),
            fio_log(&[
                ('R', 0, 4096),
                ('R', 45056, 4096),
                ('R', 53248, 4096),
                ('W', 24576, 8192),
                ('R', 24576, 4096),
                ('R', 57344, 4096),
                ('W', 32768, 8192),
                ('W', 16384, 8192),
                ('W', 57344, 8192),
                ('R', 4096, 4096),
            ])
        );
    }

    /// zonemode=strided offsets equal fio 3.33's (`fio --debug=io --name=z --ioengine=null
    /// --rw=read --size=64k --bs=4k --zonemode=strided ...`).
    #[test]
    fn strided_zone_offsets_are_fios() {
        let k = |v: &[u64]| v.iter().map(|x| x * 1024).collect::<Vec<u64>>();
        let job = |extra: &str| {
            format!("[z]\nioengine=null\nrw=read\nsize=64k\nbs=4k\nzonemode=strided\n{extra}")
        };
        assert_eq!(
            offsets(&job("zonesize=8k\nzoneskip=8k\n"), 100),
            k(&[0, 4, 16, 20, 32, 36, 48, 52, 0, 4, 16, 20, 32, 36, 48, 52])
        );
        assert_eq!(
            offsets(&job("zonesize=12k\nzonerange=8k\n"), 16),
            k(&[0, 4, 0, 8, 12, 8, 16, 20, 16, 24, 28, 24, 32, 36, 32, 40])
        );
        // A zone past the end of the file ends the pass there, as fio's.
        assert_eq!(
            offsets(&job("zonesize=8k\nzonerange=16k\nzoneskip=4k\n"), 100),
            k(&[0, 4, 20, 24, 40, 44, 60])
        );
    }

    /// `rw=read:-8k` goes backwards as fio 3.33's does (`fio --debug=io --name=b
    /// --ioengine=null --rw=read:-8k --size=32k --bs=4k`): 0, then from the end of the region
    /// stepping back, and the pass is size/bs I/Os.
    #[test]
    fn backwards_offsets_are_fios() {
        let got = offsets("[b]\nioengine=null\nrw=read:-8k\nsize=32k\nbs=4k\n", 100);
        assert_eq!(
            got,
            vec![0, 0x6000, 0x5000, 0x4000, 0x3000, 0x2000, 0x1000, 0]
        );
        let parsed = crate::fio::jobfile::parse_job_text(
            "[b]\nrw=read:-8k\n",
            "t.fio",
            &crate::fio::jobfile::SystemSources,
        )
        .unwrap();
        assert_eq!(parsed.jobs[0].rw_modifier, -8192);
    }

    /// The first offsets of a zipf job equal fio 3.33's (from `fio --debug=io --name=z
    /// --ioengine=null --rw=randread --norandommap --size=4m --bs=4k
    /// --random_distribution=zipf:1.2`).
    #[test]
    fn zipf_offsets_are_fios() {
        let got: Vec<u64> = with_test_clone(
            "[z]\nioengine=null\nrw=randread\nnorandommap\nsize=4m\nbs=4k\nrandom_distribution=zipf:1.2\n",
            |setup, _| {
                let mut p = Planner::new(setup).unwrap();
                (0..8).map(|_| p.next_io().unwrap().offset).collect()
            },
        );
        assert_eq!(
            got,
            vec![
                0x335000, 0x389000, 0x3f2000, 0x3f2000, 0x3dd000, 0x30b000, 0x2e1000, 0x3dd000
            ]
        );
    }
}

#[cfg(test)]
mod pareto_tests {
    use super::*;

    /// As zipf_offsets_are_fios, for `--name=p ... --random_distribution=pareto:0.3`.
    #[test]
    fn pareto_offsets_are_fios() {
        let got: Vec<u64> = with_test_clone(
            "[p]\nioengine=null\nrw=randread\nnorandommap\nsize=4m\nbs=4k\nrandom_distribution=pareto:0.3\n",
            |setup, _| {
                let mut p = Planner::new(setup).unwrap();
                (0..6).map(|_| p.next_io().unwrap().offset).collect()
            },
        );
        assert_eq!(
            got,
            vec![0x29f000, 0x301000, 0xb0000, 0x23000, 0x16d000, 0x2ad000]
        );
    }

    /// The bytes one clone writes, buffer by buffer, from [`Content`] as the sync loop fills
    /// them (one buffer filled at setup, then a refill before every write).
    fn written_bytes(text: &str, writes: usize) -> Vec<u8> {
        with_test_clone(text, |setup, seeds| written_by(setup, seeds, writes))
    }

    fn written_by(setup: &CloneSetup<'_>, seeds: &[u64; rand::NR_SEEDS], writes: usize) -> Vec<u8> {
        let job = setup.job;
        let mut c = Content::of(setup, seeds);
        let bs = job.bs[WRITE].0 as usize;
        let mut buf = vec![0u8; bs];
        c.fill(job, &mut buf);
        c.restart();
        let refill = BufferPolicy::of(job).refill;
        let mut out = Vec::new();
        for _ in 0..writes {
            if refill {
                c.fill(job, &mut buf);
            }
            out.extend_from_slice(&buf);
        }
        out
    }

    /// buffer_compress_percentage=50 writes fio 3.33's bytes (`fio --name=c --rw=write
    /// --bs=4k --size=64k --buffer_compress_percentage=50`, head of c.0.0).
    #[test]
    fn compressible_buffers_are_fios_bytes() {
        let b = written_bytes(
            "[c]\nrw=write\nbs=4k\nsize=64k\nbuffer_compress_percentage=50\n",
            1,
        );
        let hex = |v: &[u8]| v.iter().map(|x| format!("{x:02x}")).collect::<String>();
        assert_eq!(hex(&b[..16]), "d08e676ada40af0ea01dcfd4b4815e1d");
        assert_eq!(hex(&b[2048..2064]), "4ebe34632419b8d09c7c69c6483270a1");
        assert!(b[256..512].iter().all(|&x| x == 0));
    }

    /// dedupe_mode=repeat repeats fio 3.33's buffers where fio does (`--dedupe_percentage=50
    /// --dedupe_mode=repeat --refill_buffers --bs=4k --size=64k`: blocks 1-4, 5-7 and 11-12
    /// are repeats).
    #[test]
    fn dedupe_repeats_are_fios() {
        let b = written_bytes(
            "[d]\nrw=write\nbs=4k\nsize=64k\ndedupe_percentage=50\ndedupe_mode=repeat\nrefill_buffers=1\n",
            16,
        );
        let hex = |v: &[u8]| v.iter().map(|x| format!("{x:02x}")).collect::<String>();
        assert_eq!(hex(&b[..16]), "d08e676ada40af0ea01dcfd4b4815e1d");
        let blocks: Vec<&[u8]> = b.chunks(4096).collect();
        let same: Vec<bool> = (1..16).map(|i| blocks[i] == blocks[i - 1]).collect();
        let want = [
            false, true, true, true, false, true, true, false, false, false, false, true, false,
            false, false,
        ];
        assert_eq!(same, want);
    }
}

#[cfg(test)]
mod normal_zoned_abs_tests {
    use super::*;

    fn first_offsets(dist: &str, n: usize) -> Vec<u64> {
        with_test_clone(
            &format!(
                "[z]\nioengine=null\nrw=randread\nnorandommap\nsize=4m\nbs=4k\nrandom_distribution={dist}\n"
            ),
            |setup, _| {
                let mut p = Planner::new(setup).unwrap();
                (0..n).map(|_| p.next_io().unwrap().offset).collect()
            },
        )
    }

    /// The first offsets of normal and zoned_abs jobs equal fio 3.33's (`fio --debug=io
    /// --name=z --ioengine=null --rw=randread --norandommap --size=4m --bs=4k
    /// --random_distribution=D --number_ios=8`, the `off=` of each queued io_u).
    #[test]
    fn normal_and_zoned_abs_offsets_are_fios() {
        let cases: [(&str, [u64; 8]); 5] = [
            (
                "normal",
                [
                    0x39a000, 0x6b000, 0x163000, 0x3a4000, 0xff000, 0x2a8000, 0x302000, 0x345000,
                ],
            ),
            (
                "normal:10",
                [
                    0x2e2000, 0x2c000, 0x3cf000, 0x11e000, 0x9000, 0x18000, 0x2ec000, 0x61000,
                ],
            ),
            (
                "normal:10:0.2",
                [
                    0x1af000, 0x2f9000, 0x29c000, 0x3eb000, 0x2d6000, 0x2e5000, 0x1b9000, 0x32e000,
                ],
            ),
            (
                "normal:5:0.7",
                [
                    0x20a000, 0x3bd000, 0x143000, 0x3e2000, 0x2e2000, 0x288000, 0x8a000, 0x181000,
                ],
            ),
            (
                "zoned_abs:60/1m:30/2m:10/1m",
                [
                    0xf000, 0xbd000, 0xd7000, 0x378000, 0x1cd000, 0xd7000, 0x1c2000, 0x5a000,
                ],
            ),
        ];
        for (dist, want) in cases {
            assert_eq!(first_offsets(dist, 8), want.to_vec(), "{dist}");
        }
    }

    /// Zones past the end of the file: fio ends the job at the first such draw without an
    /// error ("zoned_abs sizes exceed file size"); we refuse the job before any I/O.
    #[test]
    fn zoned_abs_past_the_file_is_refused() {
        let err = with_test_clone(
            "[z]\nioengine=null\nrw=randread\nnorandommap\nsize=4m\nbs=4k\nrandom_distribution=zoned_abs:50/8m:50/1m\n",
            |setup, _| Planner::new(setup).err().map(|e| e.to_string()),
        )
        .expect("zones past the file were accepted");
        assert!(err.contains("past the end of"), "{err}");
    }
}

#[cfg(test)]
mod rw_modifier_tests {
    use super::*;

    /// (offset, direction) of the first `n` I/Os of a null-engine job of `opts` (one option
    /// a line) over 4 MiB in 4 KiB blocks.
    fn first_ios(opts: &str, n: usize) -> Vec<(u64, usize)> {
        with_test_clone(
            &format!("[x]\nioengine=null\nsize=4m\nbs=4k\n{opts}\n"),
            |setup, _| {
                let mut p = Planner::new(setup).unwrap();
                (0..n)
                    .map(|_| {
                        let io = p.next_io().unwrap();
                        (io.offset, io.ddir)
                    })
                    .collect()
            },
        )
    }

    /// The first 16 I/Os of rw= offset modifiers equal fio 3.33's (`fio --debug=io
    /// --ioengine=null --size=4m --bs=4k --number_ios=16 --name=x OPTS`, the `off=` and
    /// `ddir=` of each queued io_u).
    #[test]
    fn rw_modifier_offsets_are_fios() {
        let cases: &[(&str, [(u64, usize); 16])] = &[
            (
                "rw=read:8k",
                [
                    (0x0, 0),
                    (0x3000, 0),
                    (0x6000, 0),
                    (0x9000, 0),
                    (0xc000, 0),
                    (0xf000, 0),
                    (0x12000, 0),
                    (0x15000, 0),
                    (0x18000, 0),
                    (0x1b000, 0),
                    (0x1e000, 0),
                    (0x21000, 0),
                    (0x24000, 0),
                    (0x27000, 0),
                    (0x2a000, 0),
                    (0x2d000, 0),
                ],
            ),
            (
                "rw=write:4k",
                [
                    (0x0, 1),
                    (0x2000, 1),
                    (0x4000, 1),
                    (0x6000, 1),
                    (0x8000, 1),
                    (0xa000, 1),
                    (0xc000, 1),
                    (0xe000, 1),
                    (0x10000, 1),
                    (0x12000, 1),
                    (0x14000, 1),
                    (0x16000, 1),
                    (0x18000, 1),
                    (0x1a000, 1),
                    (0x1c000, 1),
                    (0x1e000, 1),
                ],
            ),
            (
                "rw=rw:4k",
                [
                    (0x0, 0),
                    (0x2000, 0),
                    (0x4000, 0),
                    (0x0, 1),
                    (0x6000, 0),
                    (0x8000, 0),
                    (0x2000, 1),
                    (0x4000, 1),
                    (0x6000, 1),
                    (0xa000, 0),
                    (0x8000, 1),
                    (0xc000, 0),
                    (0xa000, 1),
                    (0xe000, 0),
                    (0x10000, 0),
                    (0x12000, 0),
                ],
            ),
            (
                "rw=randread:4",
                [
                    (0x3d000, 0),
                    (0x3e000, 0),
                    (0x3f000, 0),
                    (0x40000, 0),
                    (0x2f6000, 0),
                    (0x2f7000, 0),
                    (0x2f8000, 0),
                    (0x2f9000, 0),
                    (0x35f000, 0),
                    (0x360000, 0),
                    (0x361000, 0),
                    (0x362000, 0),
                    (0x1e1000, 0),
                    (0x1e2000, 0),
                    (0x1e3000, 0),
                    (0x1e4000, 0),
                ],
            ),
            (
                "rw=randread:4\nrw_sequencer=identical",
                [
                    (0x3d000, 0),
                    (0x3d000, 0),
                    (0x3d000, 0),
                    (0x3d000, 0),
                    (0x2f6000, 0),
                    (0x2f6000, 0),
                    (0x2f6000, 0),
                    (0x2f6000, 0),
                    (0x35f000, 0),
                    (0x35f000, 0),
                    (0x35f000, 0),
                    (0x35f000, 0),
                    (0x1e1000, 0),
                    (0x1e1000, 0),
                    (0x1e1000, 0),
                    (0x1e1000, 0),
                ],
            ),
            (
                "rw=randrw:2",
                [
                    (0x3d000, 0),
                    (0x3e000, 0),
                    (0x2f6000, 0),
                    (0x0, 1),
                    (0x35f000, 0),
                    (0x360000, 0),
                    (0x1e1000, 1),
                    (0x1e2000, 1),
                    (0x19b000, 1),
                    (0x361000, 0),
                    (0x35c000, 1),
                    (0x362000, 0),
                    (0x185000, 1),
                    (0x363000, 0),
                    (0x16a000, 0),
                    (0x16b000, 0),
                ],
            ),
            (
                "rw=randrw:3\nrw_sequencer=identical",
                [
                    (0x3d000, 0),
                    (0x3d000, 0),
                    (0x3d000, 0),
                    (0x2f6000, 1),
                    (0x3d000, 0),
                    (0x3d000, 0),
                    (0x35f000, 1),
                    (0x35f000, 1),
                    (0x35f000, 1),
                    (0x1e1000, 0),
                    (0x35f000, 1),
                    (0x1e1000, 0),
                    (0x19b000, 1),
                    (0x1e1000, 0),
                    (0x1e1000, 0),
                    (0x35c000, 0),
                ],
            ),
            (
                "rw=randread:4\nrandrepeat=0\nrandseed=77",
                [
                    (0x231000, 0),
                    (0x232000, 0),
                    (0x233000, 0),
                    (0x234000, 0),
                    (0x2d4000, 0),
                    (0x2d5000, 0),
                    (0x2d6000, 0),
                    (0x2d7000, 0),
                    (0x195000, 0),
                    (0x196000, 0),
                    (0x197000, 0),
                    (0x198000, 0),
                    (0xd5000, 0),
                    (0xd6000, 0),
                    (0xd7000, 0),
                    (0xd8000, 0),
                ],
            ),
            (
                // bs_is_seq_rand: the random I/Os take write's sizes, the sequential read's.
                "rw=randwrite:5\nbs_is_seq_rand=1\nbsrange=4k-16k",
                [
                    (0x3d000, 1),
                    (0x3e000, 1),
                    (0x3f000, 1),
                    (0x42000, 1),
                    (0x46000, 1),
                    (0x2f6000, 1),
                    (0x2f7000, 1),
                    (0x2fb000, 1),
                    (0x2fc000, 1),
                    (0x300000, 1),
                    (0x35f000, 1),
                    (0x361000, 1),
                    (0x362000, 1),
                    (0x363000, 1),
                    (0x364000, 1),
                    (0x1e1000, 1),
                ],
            ),
            (
                "rw=randread:3\nnorandommap",
                [
                    (0x3d000, 0),
                    (0x3e000, 0),
                    (0x3f000, 0),
                    (0x2f6000, 0),
                    (0x2f7000, 0),
                    (0x2f8000, 0),
                    (0x35f000, 0),
                    (0x360000, 0),
                    (0x361000, 0),
                    (0x1e1000, 0),
                    (0x1e2000, 0),
                    (0x1e3000, 0),
                    (0x19b000, 0),
                    (0x19c000, 0),
                    (0x19d000, 0),
                    (0x35c000, 0),
                ],
            ),
            (
                // randseed= with randrepeat (fio 3.33 keeps the block seed, not the mix one).
                "rw=randrw:2\nrandrepeat=1\nrandseed=99\nrw_sequencer=identical",
                [
                    (0x3d000, 1),
                    (0x0, 0),
                    (0x2f6000, 1),
                    (0x0, 0),
                    (0x35f000, 1),
                    (0x35f000, 1),
                    (0x1e1000, 1),
                    (0x1e1000, 1),
                    (0x19b000, 1),
                    (0x0, 0),
                    (0x35c000, 0),
                    (0x35c000, 0),
                    (0x185000, 0),
                    (0x185000, 0),
                    (0x16a000, 1),
                    (0x16a000, 1),
                ],
            ),
        ];
        for (opts, want) in cases {
            assert_eq!(first_ios(opts, 16), want.to_vec(), "{opts}");
        }
    }

    /// Every I/O of a size-based rw=rand...:N job over 32 KiB, with loops: the sequential
    /// I/Os do not mark the random map (a pass of the size leaves it unfinished, so the loops
    /// run on as one), and one that would start past the file takes a random block instead;
    /// equal fio 3.33's (`--size=32k --rw=...` with the options above, every queued io_u).
    #[test]
    fn rw_seq_ends_and_loops_are_fios() {
        let cases: &[(&str, &[u64])] = &[
            (
                "rw=randread:3",
                &[0x0, 0x1000, 0x2000, 0x5000, 0x6000, 0x7000, 0x6000, 0x7000],
            ),
            (
                "rw=randread:3\nloops=2",
                &[
                    0x0, 0x1000, 0x2000, 0x5000, 0x6000, 0x7000, 0x6000, 0x7000, 0x3000, 0x3000,
                    0x4000, 0x5000, 0x7000, 0x4000, 0x5000, 0x2000,
                ],
            ),
            (
                "rw=randrw:2\nrw_sequencer=identical",
                &[0x0, 0x0, 0x5000, 0x0, 0x6000, 0x6000, 0x3000, 0x3000],
            ),
        ];
        for (opts, want) in cases {
            let got = with_test_clone(
                &format!("[x]\nioengine=null\nsize=32k\nbs=4k\n{opts}\n"),
                |setup, _| {
                    let mut p = Planner::new(setup).unwrap();
                    let clock = Clock::new(setup.job, Nanos::ZERO);
                    let mut got = Vec::new();
                    loop {
                        while let Some(io) = p.next_io() {
                            got.push(io.offset);
                        }
                        if !next_pass_counted(&mut p, &clock, Nanos::ZERO) {
                            return got;
                        }
                    }
                },
            );
            assert_eq!(got, want.to_vec(), "{opts}");
        }
    }

    #[test]
    fn rw_modifiers_parse_as_fio() {
        let job = |text: &str| {
            crate::fio::jobfile::parse_job_text(
                &format!("[x]\nsize=1m\n{text}\n"),
                "t.fio",
                &crate::fio::jobfile::SystemSources,
            )
            .unwrap()
            .jobs
            .remove(0)
        };
        let j = job("rw=randrw:8\nrw_sequencer=identical");
        assert_eq!((j.rw_seq_nr, j.rw_modifier), (8, 0));
        assert_eq!(j.rw_sequencer, RwSequencer::Identical);
        // A later rw= starts from no modifier (fio's str_rw_cb).
        let j = job("rw=randread:8\nrw=read:4k");
        assert_eq!((j.rw_seq_nr, j.rw_modifier), (1, 4096));
        let j = job("rw=read:8k\nrw=randread");
        assert_eq!((j.rw_seq_nr, j.rw_modifier), (1, 0));
        assert_eq!(job("rw=read").rw_sequencer, RwSequencer::Sequential);
    }
}

#[cfg(test)]
mod cpu_tests {
    use super::job_cpus;
    use crate::fio::jobfile::JobSpec;

    /// fio's fio_cpus_split: clone k (thread_number k) gets the set's ((k - 1) % size)-th CPU.
    #[test]
    fn split_gives_each_clone_one_cpu_as_fio() {
        let mut j = JobSpec::default();
        assert_eq!(job_cpus(&j, 1), None);
        j.cpumask = Some(vec![1, 3, 5]);
        assert_eq!(job_cpus(&j, 2), Some(vec![1, 3, 5]));
        j.cpus_split = true;
        let got: Vec<_> = (1..=5).map(|t| job_cpus(&j, t).unwrap()).collect();
        assert_eq!(got, [vec![1], vec![3], vec![5], vec![1], vec![3]]);
    }
}

#[cfg(test)]
mod clock_read_tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A clock that counts its readings (1 us apart).
    #[derive(Clone, Copy)]
    struct Counted<'a>(&'a AtomicU64);

    impl TimeSource for Counted<'_> {
        fn now(&self) -> Nanos {
            Nanos((self.0.fetch_add(1, Ordering::Relaxed) + 1) * 1_000)
        }
    }

    /// Readings of the clock by a whole clone of the null engine doing 256 4 KiB reads, and
    /// the I/Os it completed.
    fn reads_of(extra: &str) -> (u64, u64) {
        let text = format!("[j]\nioengine=null\nrw=randread\nbs=4k\nsize=1m\n{extra}");
        with_test_clone(&text, |setup, _| {
            let n = AtomicU64::new(0);
            let st = run_clone_on(setup, Counted(&n)).unwrap();
            (n.load(Ordering::Relaxed), st.dir[READ].total_ios)
        })
    }

    /// fio's ramp_time_over reads the clock at every completion: a gtod_reduce job's ramp
    /// ends at the first I/O past it, not at the next cached reading. On the counting clock
    /// (1 us per reading) a 20 us ramp is over within about 20 of the 256 I/Os and the rest
    /// are counted; read only every 64 I/Os it would outlast the job, which then counts all
    /// 256 as one that ended in its ramp.
    #[test]
    fn a_gtod_reduce_ramp_ends_on_time() {
        let (reads, ios) = reads_of("gtod_reduce=1\nramp_time=20us\n");
        assert!(
            (200..256).contains(&ios),
            "{ios} I/Os counted, {reads} readings"
        );
    }

    /// The asynchronous loop: 256 reads of a 1 MiB file by libaio at iodepth 1 (one
    /// completion per batch). None where io_setup is refused.
    fn async_reads_of(extra: &str) -> Option<(u64, u64)> {
        if let Err(e) = NativeAio::new(1) {
            crate::os::skip_test(&format!("io_setup is refused here: {e}"));
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::File::create(&path)
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
        let text = format!(
            "[j]\nfilename={}\nioengine=libaio\niodepth=1\nrw=randread\nbs=4k\nsize=1m\n{extra}",
            path.display()
        );
        Some(with_test_clone(&text, |setup, _| {
            let n = AtomicU64::new(0);
            let st = run_clone_on(setup, Counted(&n)).unwrap();
            (n.load(Ordering::Relaxed), st.dir[READ].total_ios)
        }))
    }

    /// As the synchronous loop: start, issue and completion timed; with nothing measured
    /// per I/O one reading per batch of completions; with gtod_reduce=1 one per 64.
    #[test]
    fn the_async_loop_reads_the_clock_as_fios_gtod_reduce() {
        let Some((timed, ios)) = async_reads_of("") else {
            return;
        };
        assert_eq!(ios, 256);
        assert!((768..800).contains(&timed), "{timed}");
        let (once, ios) = async_reads_of(
            "disable_lat=1\ndisable_clat=1\ndisable_slat=1\ndisable_bw_measurement=1\n",
        )
        .unwrap();
        assert_eq!(ios, 256);
        assert_eq!(once - 256, timed - 768, "{once} {timed}");
        let (reduced, ios) = async_reads_of("gtod_reduce=1\n").unwrap();
        assert_eq!(ios, 256);
        assert_eq!(reduced - 4, timed - 768, "{reduced} {timed}");
        // slat alone still times every submission.
        let (slat, _) =
            async_reads_of("disable_lat=1\ndisable_clat=1\ndisable_bw_measurement=1\n").unwrap();
        assert_eq!(slat, timed);
    }

    /// A job that measures latency reads the clock around every I/O; one that measures
    /// nothing per I/O reads it once per I/O, and with gtod_reduce=1 once every 64 (fio's
    /// ts_cache).
    #[test]
    fn the_sync_loop_reads_the_clock_as_fios_gtod_reduce() {
        let (timed, ios) = reads_of("");
        assert_eq!(ios, 256);
        assert!((512..540).contains(&timed), "{timed}");
        let (once, ios) = reads_of("disable_lat=1\ndisable_clat=1\ndisable_bw_measurement=1\n");
        assert_eq!(ios, 256);
        assert!((256..284).contains(&once), "{once}");
        let (reduced, ios) = reads_of("gtod_reduce=1\n");
        assert_eq!(ios, 256);
        assert!((4..32).contains(&reduced), "{reduced}");
        // The few readings outside the loop are the same in all three.
        assert_eq!(timed - 512, once - 256);
        assert_eq!(once - 256, reduced - 4);
    }
}
