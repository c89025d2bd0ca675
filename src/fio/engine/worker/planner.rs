//! The per-clone I/O planner (fio's get_io_u side: get_rw_ddir, get_next_file, get_next_offset,
//! get_next_buflen): which direction, file, offset and length the next I/O has, and the files'
//! open state (openfiles=).
//!
//! Why it exists: every engine loop asks the same planner, so fio's offset semantics live in one
//! place. What it must never do: issue I/O, read a clock it was not asked to, or allocate per I/O.

use super::CloneSetup;
use super::errors::io_err;
use crate::fio::engine::clock::TimeSource;
use crate::fio::engine::files::{self};
use crate::fio::engine::ops::{self, Caps, EngineOps};
use crate::fio::engine::rand::{self, Lfsr, RandomMap, Taus};
use crate::fio::engine::stats::{READ, TRIM, WRITE};
use crate::fio::jobfile::{FileService, JobSpec, RandomDistribution, RandomGenerator, RwSequencer};
use crate::probe::clock::Nanos;
use crate::workload::WorkloadError;
use std::os::fd::OwnedFd;

pub(super) struct FileState {
    pub(super) fd: Option<OwnedFd>,
    /// Start of the region in the file (offset=, offset_increment).
    pub(super) base: u64,
    pub(super) region: u64,
    /// Next sequential offset per direction (read, write, trim).
    pub(super) pos: [u64; 3],
    /// Where the last I/O of each direction started (fio's last_start; u64::MAX before the
    /// first): trimwrite pairs a write with the trim before it.
    pub(super) last_start: [u64; 3],
    /// Length of the last trim (randtrimwrite writes exactly that range).
    pub(super) last_trim_len: u64,
    /// The file is a block device (a trim there is BLKDISCARD).
    pub(super) blkdev: bool,
    /// Bytes issued to this file in the current pass.
    pub(super) issued: u64,
    pub(super) done: bool,
    pub(super) map: Option<RandomMap>,
    pub(super) lfsr: Option<Lfsr>,
    /// zipf / pareto block generator (random_distribution).
    pub(super) skew: Option<rand::Skewed>,
    /// Writes logged and not yet verified (verify): each piece's offset from `base`, length
    /// and numberio (fio's io_piece log); empty when the job does not verify its writes.
    pub(super) written: crate::fio::engine::vlog::PieceLog,
    /// Where the file offset of the fd is (sync engine: lseek only when it differs).
    pub(super) fd_pos: u64,
    /// ioengine=mmap: the file's mapping, made at its first I/O, gone with its descriptor.
    pub(super) mapping: Option<crate::fio::engine::mmap::Mapping>,
    /// ioengine=splice: the pipe its I/O goes through (read end, write end), made at its
    /// first I/O.
    pub(super) pipe: Option<(OwnedFd, OwnedFd)>,
    /// verify_state_save=1: the last iodepth write offsets issued (fio's last_write_comp)
    /// and the slot the next goes to; empty without.
    pub(super) last_write_comp: Vec<u64>,
    pub(super) last_write_idx: usize,
}

impl FileState {
    pub(super) fn reset(&mut self) {
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
pub(super) struct Io {
    pub(super) ddir: usize,
    pub(super) file: usize,
    pub(super) offset: u64,
    pub(super) len: usize,
}

/// The per-clone I/O planner: direction (rwmix), file (file_service_type) and offset.
pub(super) struct Planner<'a> {
    pub(super) job: &'a JobSpec,
    /// The job's engine (its entry in the engine table), taken once.
    pub(super) ops: &'static EngineOps,
    pub(super) files: Vec<FileState>,
    pub(super) block_rand: Taus,
    /// fio's bsrange_state per direction: draws sizes from a bsrange or bssplit.
    pub(super) bs_rand: [Taus; 3],
    pub(super) mix_rand: Taus,
    pub(super) file_rand: Taus,
    /// fio's io_issues per direction (for rwmix switching).
    pub(super) issues: [u64; 3],
    pub(super) mix_ddir: usize,
    pub(super) mix_limit: u64,
    pub(super) cur_file: usize,
    pub(super) ios_on_file: u32,
    /// Files done in this pass (so the all-done check is O(1)).
    pub(super) done_files: usize,
    /// Bytes issued this pass.
    pub(super) pass_issued: u64,
    /// Bytes issued in all passes (fio's io_issue_bytes): the last pass ends once they reach
    /// loops x the pass, so it makes up for what earlier passes issued beyond theirs (their
    /// last block-size draw ran past the end).
    pub(super) total_issued: u64,
    pub(super) pass_bytes: u64,
    /// The last I/O to complete was a sync (fio's last_was_sync): cleared by every read,
    /// write or trim that completes, so a sync owed by the write count is owed again after
    /// each of them until the next write ([`Planner::sync_due`]).
    pub(super) last_was_sync: bool,
    pub(super) open_count: u32,
    pub(super) open_limit: u32,
    /// Completed passes (loops) after ramp.
    pub(super) passes: u32,
    /// I/Os issued this pass (for number_ios).
    pub(super) pass_ios: u64,
    /// A pass may go round a file more than once (io_size beyond the region): files wrap
    /// instead of ending the pass. (Holes of rw=...:SIZE wrap by themselves.)
    pub(super) wraps: bool,
    /// The loops run as one pass of loops x the bytes, with no new seeds: fio's do_io counts
    /// the bytes of a pass only for queued (async) I/O, so a synchronous engine's random job
    /// that does not find its files done (no random map, no LFSR, or rw=rand...:N) issues
    /// every loop's bytes in its first pass; one that finds them done first goes on in the
    /// next loop.
    pub(super) merged_loops: bool,
    /// fio's seed table, to re-seed at each loop (randrepeat).
    pub(super) seeds: [u64; 21],
    /// Membership in the job's flow group (flow=).
    pub(super) flow: Option<crate::fio::engine::pace::FlowMember<'a>>,
    /// zonemode=strided: the zones and where the I/O is in them.
    pub(super) zone: Option<ZoneState>,
    /// fio's zone_state: draws the zone of random_distribution=zoned.
    pub(super) zone_rand: Taus,
    /// fio's td->ddir_seq_nr: offset attempts left until the next random one (rw=rand...:N);
    /// 1 at the start, so that the first I/O is random. Loops do not reset it (nor do fio's).
    pub(super) seq_nr_left: u32,
    /// Steady-state detection (ss_dur=): progress published, stop obeyed.
    pub(super) progress: Option<&'a crate::fio::engine::steady::Progress>,
    /// --status-interval: requests for the stats so far, answered between I/Os.
    pub(super) status: Option<&'a crate::fio::engine::status::Slot>,
    /// Which I/Os get a per-command priority (cmdprio_*; asynchronous engines only).
    pub(super) cmdprio: Option<crate::fio::engine::prio::CmdPrio>,
    /// verify_backlog: logged pieces (file, offset from the region's start) not yet
    /// verified, oldest first.
    pub(super) backlog: std::collections::VecDeque<(usize, u64)>,
    /// verify_backlog: reads left in the current round (fio's verify_batch).
    pub(super) verify_batch: u64,
    /// rate= / rate_iops= / rate_min=: pacing and the minimum check.
    pub(super) rate: Option<crate::fio::engine::rate::Rate>,
    /// The direction the rate chose for the next I/O and the time (µs after the rate's
    /// epoch) it may go at.
    pub(super) rate_ddir: Option<(usize, u64)>,
    /// The clone's end request and run state (exitall).
    pub(super) exit: Option<&'a crate::fio::engine::rate::Exit>,
    /// zonemode=zbd: the zones the offsets are adjusted to.
    pub(super) zbd: Option<crate::fio::engine::zbd::ZbdClone>,
    /// write_iolog=: the log each issued I/O and each open and close go to.
    pub(super) wlog: Option<crate::fio::engine::write_iolog::WriteIolog>,
    /// Writes issued (fio's io_issues[DDIR_WRITE], over every loop), for the verify state.
    pub(super) writes_issued: u64,
    /// verify_state_load=1: the saved state the verifying reads stop at.
    pub(super) vstate: Option<crate::fio::engine::vstate::Loaded>,
    /// read_iolog=: the log's steps, replayed in place of the offset generator.
    pub(super) replay: Option<ReplayCursor<'a>>,
}

/// Where a replay is (fio's io_log_list and the times iolog_delay keeps).
pub(super) struct ReplayCursor<'a> {
    steps: std::sync::Arc<Vec<crate::fio::engine::replay::Step>>,
    next: usize,
    /// When the job started (fio's genesis, for version 2's waits).
    genesis: std::time::Instant,
    /// When the last I/O was handed out (fio's last_issue).
    last_issue: std::time::Instant,
    /// How much the last sleep overshot (fio's time_offset), taken off the next delay.
    time_offset: u64,
    /// The syncs the log asks for before the I/O just handed out (or after its last one):
    /// the file, whether they are fdatasyncs, how many in a row.
    pub(super) sync: Option<(usize, bool, u32)>,
    cancel: &'a crate::workload::CancelToken,
}

impl ReplayCursor<'_> {
    /// fio's iolog_delay: wait `delay` µs less the time since the last I/O was issued (and
    /// less what the last wait overshot), in slices of at most 500 ms, stopping at a cancel.
    fn delay(&mut self, delay: u64) {
        if delay == 0 {
            return;
        }
        let since = self.last_issue.elapsed().as_micros() as u64;
        if delay < self.time_offset {
            self.time_offset = 0;
            return;
        }
        let left = delay - self.time_offset;
        if left < since {
            return;
        }
        let mut left = left - since;
        let t0 = std::time::Instant::now();
        while left > 0 && !self.cancel.is_cancelled() {
            let d = left.min(500_000);
            std::thread::sleep(std::time::Duration::from_micros(d));
            left -= d;
        }
        let slept = t0.elapsed().as_micros() as u64;
        self.time_offset = slept.saturating_sub(delay);
    }

    /// Whether the next step (past file actions and waits) is a sync.
    fn sync_next(&self) -> bool {
        use crate::fio::engine::replay::Step;
        self.steps[self.next.min(self.steps.len())..]
            .iter()
            .find(|s| !matches!(s, Step::Pause { .. } | Step::Wait { .. }))
            .is_some_and(|s| matches!(s, Step::Sync { .. }))
    }
}

impl Planner<'_> {
    /// write_iolog=: the line of `io`, as it is issued (fio's log_io_u in td_io_queue).
    #[inline]
    pub(super) fn log_issue(&mut self, io: &Io) {
        if let Some(l) = &self.wlog {
            l.io(io.file, io.ddir, io.offset, io.len as u64);
        }
        if io.ddir == WRITE {
            self.writes_issued += 1;
            let f = &mut self.files[io.file];
            if !f.last_write_comp.is_empty() {
                f.last_write_comp[f.last_write_idx] = io.offset;
                f.last_write_idx = (f.last_write_idx + 1) % f.last_write_comp.len();
            }
        }
    }

    /// read_iolog=: the file of the syncs the log ends with (after its last I/O), if any;
    /// the loop runs them ([`timed_sync`](super::sync_loop::timed_sync)) before the pass ends.
    pub(super) fn replay_trailing_sync(&self) -> Option<usize> {
        self.replay.as_ref().and_then(|r| r.sync).map(|(f, _, _)| f)
    }

    /// The log's pending syncs were run.
    pub(super) fn replay_synced(&mut self) {
        if let Some(r) = &mut self.replay {
            r.sync = None;
        }
    }

    /// read_iolog= with the null engine deeper than 1: whether the I/O just handed out was
    /// the log's last. fio's null engine queues each I/O and reaps it when the next one is
    /// queued; the last is still queued when the log runs out, and fio then reaps nothing
    /// (td->done): it counts as issued, without bytes or latency (fio's t0038: 10 writes,
    /// the bytes of 9).
    pub(super) fn replay_abandons(&self) -> bool {
        use crate::fio::engine::replay::Step;
        self.job.iodepth > 1
            && self.ops.has(Caps::FAKEIO)
            && self.replay.as_ref().is_some_and(|r| {
                // A sync after it is queued after it and reaps it (the sync is then the one
                // left queued).
                !r.steps[r.next..]
                    .iter()
                    .any(|s| matches!(s, Step::Io { .. } | Step::Sync { .. }))
            })
    }

    /// verify_state_load=1: whether the verifying read `io` must not be issued, after
    /// `reads_done` completed reads (fio's verify_state_should_stop).
    #[inline]
    pub(super) fn vstate_stops(&self, io: &Io, reads_done: u64) -> bool {
        self.vstate
            .as_ref()
            .is_some_and(|s| s.should_stop(reads_done, io.file as u64, io.offset))
    }
}

/// The unit the verify log counts a file in: every write starts on it and is a whole number
/// of it (the gcd of the write sizes and the alignment).
fn log_unit(job: &JobSpec) -> u64 {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 { a } else { gcd(b, a % b) }
    }
    let mut u = job.ba(WRITE);
    if !job.fixed_bs(WRITE) && job.bssplit[WRITE].is_empty() {
        // bsrange: fio's get_next_buflen rounds to min_bs when it is a power of 2.
        let lo = job.min_bs(WRITE);
        u = gcd(
            u,
            if lo.is_power_of_two() && !job.blocksize_unaligned {
                lo
            } else {
                1
            },
        );
    }
    for b in job.bs_candidates(WRITE) {
        u = gcd(u, b);
    }
    u.max(1)
}

/// Verify with writes of several sizes keeps a slot per [`log_unit`] bytes: refused when the
/// sizes share no unit worth one (a bsrange of sizes that are not a power of 2, or
/// bs_unaligned), which would take a slot per byte or so.
fn check_log_unit(job: &JobSpec) -> Result<(), WorkloadError> {
    let u = log_unit(job);
    if job.fixed_bs(WRITE) || u >= 512 {
        return Ok(());
    }
    Err(WorkloadError::InvalidOptions(format!(
        "job '{}': verify with these block sizes logs the writes in units of {u} bytes (their common divisor); give bsrange= a power-of-2 low end or bssplit= sizes that are multiples of 512, without bs_unaligned",
        job.name
    )))
}

/// fio's strided zones (setup_strided_zone_mode): `bytes` done in the zone starting `start`
/// bytes into the file's region.
pub(super) struct ZoneState {
    pub(super) z: crate::fio::jobfile::StridedZones,
    pub(super) start: u64,
    pub(super) bytes: u64,
}

impl<'a> Planner<'a> {
    pub(super) fn new(setup: &CloneSetup<'a>) -> Result<Planner<'a>, WorkloadError> {
        let job = setup.job;
        let ops = ops::of(job.ioengine);
        let seeds = rand::job_seeds(job, setup.thread_number);
        let use64 = job.random_generator == RandomGenerator::Tausworthe64;
        let seed_table = seeds;
        let mut files = Vec::with_capacity(setup.plan.files.len());
        let random = job.rw.is_random();
        if job.verify && job.do_verify && job.rw.writes() {
            check_log_unit(job)?;
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
            files.push(file_state(
                setup, i, f, &seeds, random, region_bs, map_bs, zones,
            )?);
        }
        let nfiles = files.len() as u32;
        let done_files = files.iter().filter(|f| f.done).count();
        // rw=rand...:N: only every Nth I/O takes a block from the map or LFSR, so a pass
        // of the job's size leaves the files unfinished too.
        let merged_loops = random
            && ops.has(Caps::SYNCIO)
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
            ops,
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
            flow: setup
                .flow
                .map(|g| crate::fio::engine::pace::FlowMember::new(g, job)),
            zone_rand: Taus::new(seeds[rand::SEED_ZONE], false),
            seq_nr_left: 1,
            progress: setup.progress,
            status: setup.status,
            cmdprio: None,
            backlog: std::collections::VecDeque::with_capacity(
                (job.verify_backlog.max(job.verify_backlog_batch) as usize).min(1 << 16) + 1,
            ),
            verify_batch: 0,
            rate: crate::fio::engine::rate::Rate::new(job, &seed_table, Nanos::ZERO)
                .map_err(WorkloadError::InvalidOptions)?,
            rate_ddir: None,
            exit: setup.exit,
            zbd: setup.zbd.and_then(|r| r.clone_state(job, &setup.plan)),
            writes_issued: 0,
            vstate: if job.verify_state_load && job.verify {
                let path = crate::fio::engine::vstate::file_name(
                    job.aux_path.as_deref(),
                    &job.name,
                    setup.thread_number,
                );
                let bytes = std::fs::read(&path)
                    .map_err(|e| WorkloadError::io("open (verify_state_load)", &path, e))?;
                Some(crate::fio::engine::vstate::decode(&bytes).map_err(|e| {
                    WorkloadError::InvalidOptions(format!(
                        "{}: {e} (verify_state_load=1 reads the state a run with verify_state_save=1 left; run that first or set verify_state_load=0)",
                        path.display()
                    ))
                })?)
            } else {
                None
            },
            wlog: match &job.write_iolog {
                Some(path) => Some(
                    crate::fio::engine::write_iolog::WriteIolog::open(
                        std::path::Path::new(path),
                        setup
                            .plan
                            .files
                            .iter()
                            .map(|f| f.fio_name.clone())
                            .collect(),
                    )
                    .map_err(|e| WorkloadError::io("open (write_iolog)", path, e))?,
                ),
                None => None,
            },
            replay: job.replay.as_ref().map(|r| ReplayCursor {
                steps: r.steps.clone(),
                next: 0,
                genesis: std::time::Instant::now(),
                last_issue: std::time::Instant::now(),
                time_offset: 0,
                sync: None,
                cancel: setup.cancel,
            }),
            zone: zones.map(|z| ZoneState {
                z,
                start: 0,
                bytes: 0,
            }),
        })
    }

    /// A time_based job's files are exhausted: start them over (fio's per-file wrap: map and
    /// positions reset; counters and generators go on).
    pub(super) fn wrap(&mut self) {
        self.pass_issued = 0;
        self.pass_ios = 0;
        for f in &mut self.files {
            f.reset();
        }
        self.zbd_file_reset();
        self.done_files = self.files.iter().filter(|f| f.done).count();
    }

    /// fio's zbd_file_reset, where fio resets the files.
    pub(super) fn zbd_file_reset(&mut self) {
        if let Some(z) = &mut self.zbd {
            (0..self.files.len()).for_each(|fi| z.file_reset(fi));
        }
    }

    /// A new loop (fio's clear_io_state): the rwmix cycle restarts; a random job's files start
    /// over and, with randrepeat, its generators are seeded again, so every loop repeats the
    /// same offsets and directions; a sequential job's positions go on where they were (fio
    /// does not rewind them) and wrap at the end of the file.
    pub(super) fn new_loop(&mut self) {
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
    pub(super) fn ramp_reset(&mut self) {
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
    pub(super) fn sync_due(&self) -> bool {
        if let Some(r) = &self.replay {
            return r.sync_next();
        }
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
    pub(super) fn held_back(&mut self) -> bool {
        self.flow.as_mut().is_some_and(|f| f.held_back())
    }

    /// fio's get_rw_ddir.
    #[inline]
    pub(super) fn next_ddir(&mut self) -> usize {
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
    pub(super) fn next_file(&mut self) -> Option<usize> {
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
    pub(super) fn rate_wait<T: TimeSource>(&mut self, clk: T) -> Option<u64> {
        let rate = self.rate.as_ref()?;
        let now = clk.now();
        let now_us = rate.now_us(now);
        if let Some((_, at)) = self.rate_ddir {
            return (at > now_us).then(|| at - now_us);
        }
        let d = self.next_ddir();
        let (d, wait) = match self.rate.as_ref()?.step(d, now) {
            crate::fio::engine::rate::RateStep::Go(d) => (d, 0),
            crate::fio::engine::rate::RateStep::Wait { ddir, us } => (ddir, us),
        };
        self.mix_ddir = d;
        self.rate_ddir = Some((d, now_us + wait));
        (wait > 0).then_some(wait)
    }

    /// The next I/O, or None when the pass is complete (fio's fill_io_u: get_rw_ddir,
    /// get_next_file, get_next_offset, get_next_buflen). An attempt that finds its file done
    /// (or wrapped) tries again with a new direction and file.
    #[inline]
    pub(super) fn next_io(&mut self) -> Option<Io> {
        if self.replay.is_some() {
            return self.next_replayed();
        }
        if self.pass_complete() {
            return None;
        }
        let budgeted = !self.job.time_based;
        let wraps = self.wraps && budgeted;
        let random = self.job.rw.is_random();
        loop {
            let (ddir, fi) = self.next_target()?;
            let job = self.job;
            // fio's get_next_offset: with rw=rand...:N every Nth attempt draws a random offset
            // (rw_seq_hit), the others follow rw_sequencer.
            self.seq_nr_left -= 1;
            let hit = self.seq_nr_left == 0;
            if hit {
                self.seq_nr_left = job.rw_seq_nr;
            }
            if random && job.rw.trim_then_write() && ddir == WRITE {
                return Some(self.trimmed_range_write(fi));
            }
            // The direction whose block sizes apply (bs_is_seq_rand: read's to sequential
            // I/O, write's to random).
            let bd = match (job.bs_is_seq_rand, random && hit) {
                (false, _) => ddir,
                (true, true) => WRITE,
                (true, false) => READ,
            };
            let (zone_start, region) = self.strided_zone(fi, ddir);
            // An I/O of rw=rand...:N between two random offsets follows the last one.
            let follow = if random && !hit {
                self.follow_offset(fi, ddir, zone_start)
            } else {
                None
            };
            // A random block was drawn from the random map (fio then marks what the I/O
            // covers, in units of the direction's smallest block size; not for a block drawn
            // in place of a sequential one, which fio flags IO_U_F_BUSY_OK).
            let mut mapped = false;
            let rel = if let Some(rel) = follow {
                rel
            } else if random {
                match self.random_offset(fi, ddir, zone_start, region, wraps, hit, &mut mapped) {
                    Some(o) => o,
                    None => continue,
                }
            } else if job.rw_modifier < 0 {
                match self.backward_offset(fi, ddir, region, job.min_bs(bd)) {
                    Some(o) => o,
                    None => continue,
                }
            } else {
                match self.sequential_offset(fi, ddir, region, job.min_bs(bd), wraps) {
                    Some(o) => o,
                    None => continue,
                }
            };
            if let Some(io) = self.take(fi, ddir, bd, zone_start, zone_start + rel, mapped) {
                return Some(io);
            }
        }
    }

    /// Whether the pass has issued its bytes (all loops' bytes, when the loops are merged or
    /// counted together) or number_ios= of I/Os.
    #[inline]
    /// read_iolog=: the log's next read or write (fio's read_iolog_get), after the waits of
    /// the steps before it; a sync on the way is left in `ReplayCursor::sync` for the loop,
    /// which [`Planner::sync_due`] announced. None when the log is done.
    fn next_replayed(&mut self) -> Option<Io> {
        use crate::fio::engine::replay::Step;
        let r = self.replay.as_mut()?;
        r.sync = None;
        loop {
            let step = *r.steps.get(r.next)?;
            r.next += 1;
            match step {
                Step::Pause { delay_us } => r.delay(delay_us),
                Step::Wait { ms } => {
                    let due = r.genesis + std::time::Duration::from_millis(ms);
                    while std::time::Instant::now() < due && !r.cancel.is_cancelled() {
                        let left = due - std::time::Instant::now();
                        std::thread::sleep(left.min(std::time::Duration::from_millis(500)));
                    }
                }
                Step::Sync {
                    file,
                    data,
                    delay_us,
                } => {
                    r.delay(delay_us);
                    let n = r.sync.map_or(0, |(_, _, n)| n);
                    r.sync = Some((file, data, n + 1));
                }
                Step::Io {
                    ddir,
                    file,
                    offset,
                    len,
                    delay_us,
                } => {
                    r.delay(delay_us);
                    r.last_issue = std::time::Instant::now();
                    self.issues[ddir] += 1;
                    self.pass_issued += len;
                    self.total_issued += len;
                    self.pass_ios += 1;
                    return Some(Io {
                        ddir,
                        file,
                        offset,
                        len: len as usize,
                    });
                }
            }
        }
    }

    fn pass_complete(&self) -> bool {
        let budgeted = !self.job.time_based;
        if budgeted
            && (self.pass_issued >= self.pass_bytes
                || (!self.merged_loops
                    && self.total_issued >= self.pass_bytes * self.job.loops.max(1) as u64))
        {
            return true;
        }
        let loops_in_pass = if self.merged_loops {
            self.job.loops.max(1) as u64
        } else {
            1
        };
        // fio doubles number_ios in trimwrite mode, as the bytes.
        let pairs = if self.job.rw.trim_then_write() { 2 } else { 1 };
        self.job.number_ios > 0 && self.pass_ios >= self.job.number_ios * loops_in_pass * pairs
    }

    /// The direction and file of the next attempt. As fio's fill_io_u, every attempt (also
    /// one that finds its file exhausted) evaluates the direction again, and a random attempt
    /// draws its block first: a file is found done lazily, as fio finds it. None: every file
    /// is done.
    #[inline]
    fn next_target(&mut self) -> Option<(usize, usize)> {
        let mut ddir = match self.rate_ddir.take() {
            Some((d, _)) => d,
            // Without a rate, or a retry after a file was found done: the rwmix choice (a
            // retry does not wait again; nothing was issued since the wait).
            None => self.next_ddir(),
        };
        let fi = self.next_file()?;
        if self.job.rw.trim_then_write() {
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
        Some((ddir, fi))
    }

    /// fio's get_next_block / get_next_buflen for randtrimwrite's write: it covers the range
    /// just trimmed; no block drawn, no size drawn, the map untouched.
    fn trimmed_range_write(&mut self, fi: usize) -> Io {
        let f = &mut self.files[fi];
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
        Io {
            ddir: WRITE,
            file: fi,
            offset: f.base + offset,
            len: len as usize,
        }
    }

    /// fio's setup_strided_zone_mode: a zone whose zonesize bytes are done gives way to the
    /// next (zonerange + zoneskip on, wrapping to the start); every zonerange bytes the file's
    /// positions and map start over within the zone. The zone's start in the region and the
    /// bytes the I/O may range over (the whole region without zones).
    #[inline]
    fn strided_zone(&mut self, fi: usize, ddir: usize) -> (u64, u64) {
        let f = &mut self.files[fi];
        let Some(zs) = &mut self.zone else {
            return (0, f.region);
        };
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

    /// An I/O of rw=rand...:N between two random offsets (fio's get_next_block without
    /// rw_seq), relative to the zone: where the direction's last I/O ended (sequential; a
    /// random block once that is past the file) or started (identical). None: a random block
    /// is drawn.
    #[inline]
    fn follow_offset(&mut self, fi: usize, ddir: usize, zone_start: u64) -> Option<u64> {
        let job = self.job;
        let single_file = self.files.len() == 1;
        let f = &mut self.files[fi];
        match job.rw_sequencer {
            RwSequencer::Sequential => {
                // fio's get_next_seq_offset (no ddir_seq_add for a random job): a time_based
                // job of one file starts over at the end.
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
    }

    /// A random offset relative to the zone (fio's get_next_rand_offset and its
    /// distributions). None: the attempt found the file done (or wrapped it) and another is
    /// made. `mapped` is set when the block came from the random map.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn random_offset(
        &mut self,
        fi: usize,
        ddir: usize,
        zone_start: u64,
        region: u64,
        wraps: bool,
        hit: bool,
        mapped: &mut bool,
    ) -> Option<u64> {
        let job = self.job;
        let ba = job.ba(ddir);
        let ddir_min_bs = job.min_bs(ddir);
        let f = &mut self.files[fi];
        // fio's last_block: the blocks of ba a random offset can start at.
        let max_size = region - ddir_min_bs.saturating_sub(ba).min(region);
        let nblocks = max_size / ba;
        let b = if nblocks == 0 {
            None
        } else if let Some(z) = &mut f.skew {
            Some(z.next_block() % nblocks)
        } else if let RandomDistribution::Zoned { index } = &job.random_distribution {
            // fio's __get_next_rand_offset_zoned: a draw in 1..=100 picks the zone, a block
            // is drawn within it.
            let v = self.zone_rand.between(1, 100) as usize;
            let (start, end) = index[v - 1];
            let first = start as u64 * nblocks / 100;
            let span = nblocks * (end - start) as u64 / 100;
            Some(first + self.block_rand.block(span.max(1)))
        } else if let RandomDistribution::ZonedAbs { index } = &job.random_distribution {
            // fio's __get_next_rand_offset_zoned_abs: the zone's bytes in blocks of ba; a
            // zone past the last block ends the file.
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
                    *mapped = hit;
                    m.free_at_or_after(b)
                }
                None => Some(b),
            }
        };
        // fio's get_next_offset: a block past the region (a map counted in a smaller block
        // size than this direction's) ends the file too.
        match b.map(|b| b * ba).filter(|o| zone_start + o < f.region) {
            Some(o) => Some(o),
            None if wraps && nblocks > 0 => {
                // io_size beyond the region: the region is covered again.
                if let Some(z) = &mut self.zbd {
                    z.file_reset(fi);
                    if self.job.randrepeat {
                        // fio's next pass (clear_io_state) seeds again.
                        let use64 = self.job.random_generator == RandomGenerator::Tausworthe64;
                        self.block_rand = Taus::new(self.seeds[rand::SEED_BLOCK], use64);
                    }
                }
                if let Some(m) = &mut f.map {
                    m.clear();
                }
                if let Some(l) = &mut f.lfsr {
                    l.reset();
                }
                None
            }
            None => {
                f.done = true;
                self.done_files += 1;
                None
            }
        }
    }

    /// fio's get_next_seq_offset with a negative ddir_seq_add: pos is where the previous I/O
    /// ended (0 before the first); each I/O starts that far back from it, and one that would
    /// start before the region or past its end starts at the end of the region, stepped back.
    /// None: the file is done.
    #[inline]
    fn backward_offset(&mut self, fi: usize, ddir: usize, region: u64, min_bs: u64) -> Option<u64> {
        let add = self.job.rw_modifier;
        let f = &mut self.files[fi];
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
            return None;
        }
        Some(off as u64)
    }

    /// fio's get_next_seq_offset with a hole (ddir_seq_add > 0): where the last I/O ended
    /// plus the hole, unless at the start; a hole reaching past the file wraps to fio's
    /// file_offset, taken as relative (0 without offset=; with one, it is past the region,
    /// which ends it). None: the file is done.
    #[inline]
    fn sequential_offset(
        &mut self,
        fi: usize,
        ddir: usize,
        region: u64,
        min_bs: u64,
        wraps: bool,
    ) -> Option<u64> {
        let job = self.job;
        let mixed = job.rw.reads() && job.rw.writes();
        let f = &mut self.files[fi];
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
                return None;
            }
            // A mixed sequential job resets the file at its end: both directions start over
            // (fio's fio_file_reset).
            f.pos = [0; 3];
            Some(0)
        } else {
            Some(next)
        }
    }

    /// The I/O at `offset` (relative to the file's region) in direction `ddir` with block
    /// sizes of `bd`: its length drawn (fio's get_next_buflen), zonemode=zbd's adjustment,
    /// the random map marked, and everything fio records of an issued I/O. None: the file is
    /// done and another attempt is made.
    #[inline]
    fn take(
        &mut self,
        fi: usize,
        ddir: usize,
        bd: usize,
        zone_start: u64,
        offset: u64,
        mapped: bool,
    ) -> Option<Io> {
        let job = self.job;
        let random = job.rw.is_random();
        let f = &mut self.files[fi];
        // fio's get_next_buflen: a size from the bsrange or bssplit that fits before the end
        // of the region (io_u_fits), or none, which ends the file.
        let mut len = next_buflen(job, bd, &mut self.bs_rand[bd], offset, f.region);
        if len == 0 || offset + len > f.region {
            f.done = true;
            self.done_files += 1;
            return None;
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
                return None;
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
        // fio's last_pos, also of a random I/O (where rw=rand...:N goes on from). (An
        // identical offset from before a strided zone moved on counts from the zone's start.)
        f.pos[ddir] = offset.saturating_sub(zone_start) + len;
        if let Some(zs) = &mut self.zone {
            zs.bytes += len;
        }
        if f.written.is_enabled() && ddir == WRITE {
            // fio's log_io_piece: the write replaces every logged piece it overlaps (and
            // they leave the backlog too, as fio's io_hist_len goes down).
            let mut dropped = false;
            let logged = f
                .written
                .log(offset, len, self.issues[WRITE] as u16, |_| dropped = true);
            if self.job.verify_backlog > 0 {
                if dropped {
                    let w = &f.written;
                    self.backlog
                        .retain(|&(bf, bo)| bf != fi || w.get(bo).is_some());
                }
                if logged {
                    self.backlog.push_back((fi, offset));
                }
            }
        }
        if job.rw.trim_then_write() && random && ddir == TRIM {
            // fio's get_next_offset: a trim drawn where the last pair was makes the pair look
            // unfinished, so that its write still follows.
            if f.last_start[TRIM] == offset {
                f.last_start[WRITE] = f.last_start[WRITE].wrapping_sub(1);
            }
            f.last_trim_len = len;
        }
        f.last_start[ddir] = offset;
        f.issued += len;
        self.pass_issued += len;
        self.total_issued += len;
        self.pass_ios += 1;
        self.issues[ddir] += 1;
        if let Some(r) = &mut self.rate {
            r.issued(ddir, len);
        }
        Some(Io {
            ddir,
            file: fi,
            offset: f.base + offset,
            len: len as usize,
        })
    }
}

/// The state of the clone's file `i` (`f`) before its first I/O: its region counted in
/// `region_bs` blocks, its random map or LFSR over blocks of `map_bs` (within a strided zone),
/// its skewed distribution (fio's __init_rand_distribution) and its verify log.
#[allow(clippy::too_many_arguments)]
fn file_state(
    setup: &CloneSetup<'_>,
    i: usize,
    f: &files::FilePlan,
    seeds: &[u64; rand::NR_SEEDS],
    random: bool,
    region_bs: u64,
    map_bs: u64,
    zones: Option<crate::fio::jobfile::StridedZones>,
) -> Result<FileState, WorkloadError> {
    let job = setup.job;
    // Random blocks of a strided job are drawn within a zone (fio's last_block).
    let nblocks = zones.map_or(f.size, |z| z.range.min(f.size)) / map_bs;
    if f.size > 0 && f.size < region_bs && job.replay.is_none() {
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
        crate::fio::engine::vlog::PieceLog::new(f.size, log_unit(job))
    } else {
        crate::fio::engine::vlog::PieceLog::default()
    };
    Ok(FileState {
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
        pipe: None,
        last_write_comp: if job.verify_state_save && job.verify {
            vec![0; job.iodepth.max(1) as usize]
        } else {
            Vec::new()
        },
        last_write_idx: 0,
    })
}

/// `(i + 1) % n` without the division (a round-robin job takes it before every I/O).
#[inline]
pub(super) fn wrapping_next(i: usize, n: usize) -> usize {
    if i + 1 >= n { 0 } else { i + 1 }
}

/// fio's bsrange_state generators (td_fill_rand_seeds_internal): reads from the
/// FIO_RAND_BS_OFF seed, writes from FIO_RAND_BS1_OFF (the read one with verify).
pub(super) fn bs_generators(job: &JobSpec, seeds: &[u64; 21]) -> [Taus; 3] {
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
pub(super) fn next_buflen(
    job: &JobSpec,
    bd: usize,
    r: &mut Taus,
    offset: u64,
    io_size: u64,
) -> u64 {
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

/// Open the file an I/O needs, closing another first when `openfiles` are already open.
#[inline]
pub(super) fn ensure_open(
    p: &mut Planner<'_>,
    setup: &CloneSetup<'_>,
    fi: usize,
) -> Result<(), WorkloadError> {
    if p.files[fi].fd.is_some() || p.ops.has(Caps::FAKEIO) {
        return Ok(());
    }
    open_file(p, setup, fi)
}

/// [`ensure_open`]'s slow path, out of the I/O loop: open file `fi` (closing another first
/// when openfiles= is reached).
#[cold]
#[inline(never)]
pub(super) fn open_file(
    p: &mut Planner<'_>,
    setup: &CloneSetup<'_>,
    fi: usize,
) -> Result<(), WorkloadError> {
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
    if let Some(l) = &p.wlog {
        l.file(fi, "open");
    }
    if let Some(s) = p.status {
        s.set_open_files(p.open_count);
    }
    Ok(())
}

/// Close file `fi` if it is open (fio's td_io_close_file): its mapping goes, fsync_on_close
/// syncs it first.
pub(super) fn close_file(
    p: &mut Planner<'_>,
    setup: &CloneSetup<'_>,
    fi: usize,
) -> Result<(), WorkloadError> {
    let f = &mut p.files[fi];
    f.mapping = None;
    let Some(fd) = f.fd.take() else {
        return Ok(());
    };
    p.open_count -= 1;
    if let Some(l) = &p.wlog {
        l.file(fi, "close");
    }
    if let Some(s) = p.status {
        s.set_open_files(p.open_count);
    }
    if setup.job.fsync_on_close {
        rustix::fs::fsync(&fd)
            .map_err(|e| io_err("fsync (fsync_on_close)", &setup.plan.files[fi].path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod distribution_tests {
    use super::super::with_test_clone;
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
    use super::super::buffers::{BufferPolicy, Content};
    use super::super::with_test_clone;
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
    use super::super::with_test_clone;
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
    use super::super::timing::{Clock, next_pass_counted};
    use super::super::with_test_clone;
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
    // Over 150 lines: a table of fio 3.33's offsets, one case per modifier and option.
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
mod replay_tests {
    use super::*;
    use crate::fio::engine::worker::CloneSetup;
    use crate::workload::CancelToken;

    /// Per I/O handed out: whether a sync was due before it, the syncs to run with it, its
    /// direction, offset and length (usize::MAX: the end of the log).
    type Handed = (bool, Option<(usize, bool, u32)>, usize, u64, usize);

    /// The planner of a job replaying `log` (written to a temporary directory): what it hands
    /// out, in order.
    fn replayed(job: &str, log: &str) -> Vec<Handed> {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("log"), log).unwrap();
        let set =
            crate::fio::jobfile::parse_job_text(job, "t.fio", &crate::fio::jobfile::SystemSources)
                .unwrap();
        let mut job = set.jobs[0].clone();
        let diskless = ops::of(job.ioengine).has(Caps::FAKEIO);
        crate::fio::engine::replay::prepare(&mut job, d.path(), diskless).unwrap();
        let seeds = rand::job_seeds(&job, 1);
        let plan = files::plan_clone(&job, 0, d.path(), &seeds).unwrap();
        let cancel = CancelToken::default();
        let setup = CloneSetup {
            job: &job,
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
        let mut p = Planner::new(&setup).unwrap();
        let mut out = Vec::new();
        loop {
            let due = p.sync_due();
            let Some(io) = p.next_io() else {
                out.push((due, p.replay.as_ref().unwrap().sync, usize::MAX, 0, 0));
                break;
            };
            let sync = p.replay.as_ref().unwrap().sync;
            out.push((due, sync, io.ddir, io.offset, io.len));
        }
        out
    }

    #[test]
    fn the_log_is_replayed_in_order_with_its_syncs_announced() {
        let got = replayed(
            "[r]\nread_iolog=log\nreplay_no_stall=1\n",
            "fio version 2 iolog\nf add\nf open\nf write 0 4096\nf sync 0 0\nf datasync 0 0\nf read 8192 512\nf wait 0 0\nf sync 0 0\nf close\n",
        );
        assert_eq!(
            got,
            vec![
                (false, None, WRITE, 0, 4096),
                // Two syncs in a row before the read: both run with it, the last one's kind.
                (true, Some((0, true, 2)), READ, 8192, 512),
                // The sync after the last I/O is left for the loop (replay_trailing_sync).
                (true, Some((0, false, 1)), usize::MAX, 0, 0),
            ]
        );
    }
}
