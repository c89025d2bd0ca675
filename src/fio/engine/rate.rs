//! fio's rate control and exits: when the next I/O of a direction may go (rate=, rate_iops=,
//! rate_process=, rate_ignore_thinktime), whether a job keeps its minimum rate (rate_min=,
//! rate_iops_min=, rate_cycle=), and which jobs the end of one ends (exitall, exit_what=).
//!
//! Why a module of its own: the run loops ask "may this direction go now, or how long to
//! wait?" and "was the minimum met?"; fio's arithmetic (backend.c usec_for_io,
//! __check_min_rate; io_u.c rate_ddir; libfio.c fio_terminate_threads) stays here, away from
//! the loops' clock readings, so it is unit-tested without a clock. What it must never do:
//! sleep (the loops sleep, after draining what is in flight as fio's io_u_quiesce) or read a
//! clock (callers pass `now`).
//!
//! Rate (fio 3.33): each direction with a rate has `bps` (rate, or rate_iops times the
//! direction's block size). Linear: after `bytes` were issued in a direction, its next I/O may
//! go `bytes / bps` seconds after the job's epoch (its start, or the end of ramp_time).
//! Poisson: each issued I/O pushes the next time on by `1e6 / iops * -ln(u)` microseconds, `u`
//! drawn from fio's 32-bit Tausworthe seeded with the seed table's POISSON entry of the
//! direction, the product taken in single precision as fio's `logf` expression. A direction
//! ahead of its time gives way to the other of a mixed job when that one is behind; if both
//! are ahead, the job waits for the nearer one.

use super::rand::Taus;
use super::stats::{READ, TRIM, WRITE};
use super::status::Phase;
use crate::fio::jobfile::{ExitWhat, JobSpec};
use crate::probe::clock::Nanos;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// fio's FIO_RAND_POISSON_OFF, FIO_RAND_POISSON2_OFF and FIO_RAND_POISSON3_OFF (read, write,
/// trim).
const SEED_POISSON: [usize; 3] = [15, 17, 18];
/// The three directions (fio's for_each_rw_ddir).
const DIRS: [usize; 3] = [READ, WRITE, TRIM];

/// What the rate says about the next I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateStep {
    /// Issue in this direction now.
    Go(usize),
    /// Wait this many microseconds, then issue in this direction.
    Wait {
        /// Direction.
        ddir: usize,
        /// Microseconds from now.
        us: u64,
    },
}

/// A clone's rate state (fio's rate_bps, rate_next_io_time, rate_io_issue_bytes, last_usec,
/// poisson_state and the last_rate_check_* of the minimum check).
#[derive(Clone, Debug)]
pub struct Rate {
    bps: [u64; 3],
    min_bs: [u64; 3],
    /// rwmix share per direction (fio's o.rwmix[]), 0 for a direction the job does not do.
    mix: [u32; 3],
    mixed: bool,
    poisson: Option<[Taus; 3]>,
    seeds: [u64; 3],
    next_us: [u64; 3],
    issue_bytes: [u64; 3],
    last_usec: [u64; 3],
    epoch: Nanos,
    ignore_think: bool,
    min_bytes: [u64; 3],
    min_iops: [u64; 3],
    cycle_ms: u64,
    /// fio's td->start: set at each loop and at the end of ramp_time.
    start: Nanos,
    last_bytes: [u64; 3],
    last_blocks: [u64; 3],
    last_time: [Nanos; 3],
}

impl Rate {
    /// The rate state of a clone of `job` whose seed table is `seeds`, started at `now`; None
    /// when the job neither paces nor checks its rate. An error names what fio cannot do
    /// (fio 3.33 divides by zero on a Poisson rate below one I/O per second).
    pub fn new(job: &JobSpec, seeds: &[u64; 21], now: Nanos) -> Result<Option<Rate>, String> {
        if !job.checks_rate() {
            return Ok(None);
        }
        // fio: rate_iops x o.min_bs, per direction.
        let min_bs = DIRS.map(|d| job.min_bs(d).max(1));
        let mut bps = [0u64; 3];
        for d in DIRS {
            bps[d] = if job.rate[d] > 0 {
                job.rate[d]
            } else {
                job.rate_iops[d] * min_bs[d]
            };
        }
        let used = [job.rw.reads(), job.rw.writes(), job.rw.trims()];
        if job.rate_poisson {
            for d in DIRS {
                if used[d] && bps[d] / min_bs[d] == 0 {
                    return Err(format!(
                        "job '{}': rate_process=poisson needs a rate of at least one block per second in every direction the job does ({} bytes/s for {} blocks of {}; fio 3.33 divides by zero here): raise rate= or use rate_iops=",
                        job.name,
                        bps[d],
                        ["read", "write", "trim"][d],
                        min_bs[d]
                    ));
                }
            }
        }
        let seeds = SEED_POISSON.map(|i| seeds[i]);
        Ok(Some(Rate {
            bps,
            min_bs,
            mix: [
                if used[READ] { job.rwmixread } else { 0 },
                if used[WRITE] { 100 - job.rwmixread } else { 0 },
                0,
            ],
            mixed: used[READ] && used[WRITE],
            poisson: job.rate_poisson.then(|| seeds.map(|s| Taus::new(s, false))),
            seeds,
            next_us: [0; 3],
            issue_bytes: [0; 3],
            last_usec: [0; 3],
            epoch: now,
            ignore_think: job.rate_ignore_thinktime,
            min_bytes: job.rate_min,
            min_iops: job.rate_iops_min,
            cycle_ms: job.rate_cycle_ms,
            start: now,
            last_bytes: [0; 3],
            last_blocks: [0; 3],
            last_time: [now; 3],
        }))
    }

    /// Microseconds since the rate's epoch.
    #[inline]
    pub fn now_us(&self, now: Nanos) -> u64 {
        now.0.saturating_sub(self.epoch.0) / 1000
    }

    /// fio's rate_ddir: may `ddir` (the rwmix choice) go at `now`, or the other direction of
    /// a mixed job, or how long must the job wait and for which.
    pub fn step(&self, ddir: usize, now: Nanos) -> RateStep {
        let now = self.now_us(now);
        if self.next_us[ddir] <= now {
            return RateStep::Go(ddir);
        }
        // A mixed job reads and writes (fio's td_rw); a trim has no other direction.
        let odir = ddir ^ 1;
        if self.mixed && ddir != TRIM && self.mix[odir] > 0 {
            if self.next_us[odir] <= now {
                return RateStep::Go(odir);
            }
            if self.next_us[ddir] <= self.next_us[odir] {
                return RateStep::Wait {
                    ddir,
                    us: self.next_us[ddir] - now,
                };
            }
            return RateStep::Wait {
                ddir: odir,
                us: self.next_us[odir] - now,
            };
        }
        RateStep::Wait {
            ddir,
            us: self.next_us[ddir] - now,
        }
    }

    /// An I/O of `bytes` was issued in `ddir` (fio's td_io_queue and usec_for_io).
    pub fn issued(&mut self, ddir: usize, bytes: u64) {
        self.issue_bytes[ddir] += bytes;
        self.next_us[ddir] = self.usec_for_io(ddir);
    }

    fn usec_for_io(&mut self, ddir: usize) -> u64 {
        let bps = self.bps[ddir];
        if let Some(states) = &mut self.poisson {
            if bps == 0 {
                // A direction without a rate the job does not do (checked in new).
                return 0;
            }
            let iops = bps / self.min_bs[ddir];
            let r = states[ddir].next_raw();
            // fio: (int64_t)(1000000 / iops) * -logf(__rand_0_1(...)), in float.
            let u = ((r as f64 + 1.0) / 4294967296.0) as f32;
            let val = ((1_000_000 / iops) as i64 as f32) * -u.ln();
            self.last_usec[ddir] += val as u64;
            return self.last_usec[ddir];
        }
        if bps == 0 {
            return 0;
        }
        let bytes = self.issue_bytes[ddir];
        (bytes % bps) * 1_000_000 / bps + bytes / bps * 1_000_000
    }

    /// The job thought (thinktime) for `total_us` after an I/O in `ddir`: with
    /// rate_ignore_thinktime the time counts as time the job could have issued in (fio's
    /// handle_thinktime; where fio's unsigned arithmetic would wrap below zero, nothing is
    /// added instead).
    pub fn thought(&mut self, ddir: usize, total_us: u64) {
        let bps = self.bps[ddir];
        if !self.ignore_think || total_us == 0 || bps == 0 {
            return;
        }
        let missed = bps * total_us / 1_000_000;
        let bs = self.min_bs[ddir];
        let usperop = bs * 1_000_000 / bps;
        let over = if usperop <= total_us { bs } else { 0 };
        self.issue_bytes[ddir] += missed.saturating_sub(over);
        self.last_usec[ddir] += total_us;
    }

    /// ramp_time ended (fio's reset_all_stats): counters start over from `now`.
    pub fn reset(&mut self, now: Nanos) {
        self.next_us = [0; 3];
        self.issue_bytes = [0; 3];
        self.last_usec = [0; 3];
        self.last_bytes = [0; 3];
        self.last_blocks = [0; 3];
        self.epoch = now;
        self.start = now;
        self.last_time = [now; 3];
    }

    /// A new loop starts at `now` (fio's thread_main sets td->start; with randrepeat its
    /// clear_io_state seeds the Poisson generators again).
    pub fn new_loop(&mut self, now: Nanos, randrepeat: bool) {
        self.start = now;
        if randrepeat {
            if let Some(p) = &mut self.poisson {
                *p = self.seeds.map(|s| Taus::new(s, false));
            }
        }
    }

    /// fio's check_min_rate after an I/O, with the bytes and I/Os completed per direction
    /// since the start (or ramp_time): Err(fio's message) when a direction with a minimum
    /// fell below it over the last rate_cycle. The first 2 s are never judged.
    pub fn check_min(
        &mut self,
        now: Nanos,
        bytes: [u64; 3],
        blocks: [u64; 3],
    ) -> Result<(), String> {
        for d in DIRS {
            if bytes[d] == 0 || (self.min_bytes[d] == 0 && self.min_iops[d] == 0) {
                continue;
            }
            if (now - self.start).0 / 1_000_000 < 2000 {
                continue;
            }
            if self.last_bytes[d] > 0 || self.last_blocks[d] > 0 {
                let spent = (now - self.last_time[d]).0 / 1_000_000;
                if spent < self.cycle_ms || spent == 0 {
                    continue;
                }
                if self.min_bytes[d] > 0 {
                    let got = (bytes[d] - self.last_bytes[d]) * 1000 / spent;
                    if got < self.min_bytes[d] {
                        return Err(format!(
                            "rate_min={}B/s not met, got {got}B/s",
                            self.min_bytes[d]
                        ));
                    }
                } else {
                    let got = (blocks[d] - self.last_blocks[d]) * 1000 / spent;
                    if got < self.min_iops[d] {
                        return Err(format!(
                            "rate_iops_min={} not met, got {got} IOPS",
                            self.min_iops[d]
                        ));
                    }
                }
            }
            self.last_bytes[d] = bytes[d];
            self.last_blocks[d] = blocks[d];
            self.last_time[d] = now;
        }
        Ok(())
    }
}

/// fio's usec_sleep: sleep `us` in steps of at most about 2 s (fio caps a step's seconds at
/// one), looking at `stop` between steps. Returns the microseconds slept.
pub fn sleep_us(us: u64, stop: &dyn Fn() -> bool) -> u64 {
    let t0 = Nanos::now();
    let mut left = us;
    loop {
        let step = if left >= 1_000_000 {
            1_000_000 + left % 1_000_000
        } else {
            left
        };
        std::thread::sleep(std::time::Duration::from_micros(step));
        let slept = (Nanos::now() - t0).0 / 1000;
        if slept >= us || stop() {
            return slept;
        }
        left = us - slept;
    }
}

/// One clone's end request and phase, shared with every other clone of the run (exitall)
/// and with the ETA line: the one record of where the clone is in its life.
#[derive(Debug, Default)]
pub struct Exit {
    terminate: AtomicBool,
    phase: AtomicU8,
}

impl Exit {
    /// Whether the clone was asked to end (fio's td->terminate): it stops issuing, completes
    /// what is in flight and reports what it did.
    #[inline]
    pub fn terminated(&self) -> bool {
        self.terminate.load(Ordering::Relaxed)
    }

    /// Ask the clone to end.
    pub fn terminate(&self) {
        self.terminate.store(true, Ordering::Relaxed);
    }

    /// The clone reached `phase` (phases only move forward).
    pub fn set_phase(&self, phase: Phase) {
        self.phase.fetch_max(phase as u8, Ordering::Release);
    }

    /// Where the clone is now.
    pub fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Acquire))
    }

    /// Whether exit_what=stonewall counts the clone as running (fio's runstate: TD_RUNNING
    /// or later; one waiting to start, laying out its files or in ramp_time is not).
    fn running(&self) -> bool {
        self.phase() >= Phase::Running
    }
}

/// Every clone's [`Exit`], with its reporting group, and whether exitall is on for the run
/// (fio: one job with exitall sets it for all).
#[derive(Debug)]
pub struct Exits {
    clones: Vec<(Exit, u32)>,
    exitall: bool,
}

impl Exits {
    /// For clones whose reporting groups are `groups`, in run order.
    pub fn new(groups: Vec<u32>, exitall: bool) -> Exits {
        Exits {
            clones: groups.into_iter().map(|g| (Exit::default(), g)).collect(),
            exitall,
        }
    }

    /// The state of clone `i`.
    pub fn get(&self, i: usize) -> &Exit {
        &self.clones[i].0
    }

    /// Clone `i` of `job` ended (fio's thread_main end, or a missed minimum rate): with exitall,
    /// end what its exit_what names (fio's fio_terminate_threads).
    pub fn ended(&self, i: usize, job: &JobSpec) {
        if self.exitall {
            self.terminate(self.clones[i].1, job.exit_what);
        }
    }

    /// fio's fio_terminate_threads(group, what).
    pub fn terminate(&self, group: u32, what: ExitWhat) {
        for (e, g) in &self.clones {
            let hit = match what {
                ExitWhat::Group => *g == group,
                ExitWhat::Stonewall => e.running(),
                ExitWhat::All => true,
            };
            if hit {
                e.terminate();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::jobfile::{self, SystemSources};

    fn job(text: &str) -> JobSpec {
        jobfile::parse_job_text(text, "t.fio", &SystemSources)
            .unwrap()
            .jobs
            .remove(0)
    }

    fn rate(text: &str) -> Rate {
        let j = job(text);
        let seeds = super::super::rand::job_seeds(&j, 1);
        Rate::new(&j, &seeds, Nanos(0)).unwrap().unwrap()
    }

    #[test]
    fn linear_rate_spaces_ios_by_bytes_over_bps() {
        let mut r = rate("[r]\nrw=read\nbs=4k\nrate=8k\n");
        assert_eq!(r.step(READ, Nanos(0)), RateStep::Go(READ));
        r.issued(READ, 4096);
        assert_eq!(
            r.step(READ, Nanos(100_000_000)),
            RateStep::Wait {
                ddir: READ,
                us: 400_000
            }
        );
        assert_eq!(r.step(READ, Nanos(500_000_000)), RateStep::Go(READ));
        // rate_iops: bps = iops * bs.
        let mut r = rate("[r]\nrw=write\nbs=4k\nrate_iops=1000\n");
        r.issued(WRITE, 4096);
        assert_eq!(r.next_us[WRITE], 1000);
    }

    #[test]
    fn a_mixed_job_ahead_in_one_direction_takes_the_other() {
        // exitwhat.fio's fast jobs: 300 B/s each way, 4 KiB blocks.
        let mut r = rate("[f]\nrw=randrw\nbs=4k\nrate=300,300,300\n");
        r.issued(READ, 4096);
        assert_eq!(r.step(READ, Nanos(1000)), RateStep::Go(WRITE));
        r.issued(WRITE, 4096);
        // 4096 / 300 s = 13.653333 s.
        assert_eq!(
            r.step(WRITE, Nanos(0)),
            RateStep::Wait {
                ddir: WRITE,
                us: 13_653_333
            }
        );
        // A one-direction job never switches.
        let mut r = rate("[f]\nrw=read\nbs=4k\nrate=300\n");
        r.issued(READ, 4096);
        assert!(matches!(
            r.step(READ, Nanos(0)),
            RateStep::Wait { ddir: READ, .. }
        ));
    }

    /// The Poisson gaps equal fio 3.33's: `fio --debug=rate --name=p --ioengine=null
    /// --rw=randread --size=16m --rate_iops=50 --rate_process=poisson --runtime=1` prints
    /// "poisson rate iops=1000000/gap" per I/O.
    #[test]
    fn poisson_gaps_are_fios() {
        let mut r =
            rate("[p]\nrw=randread\nioengine=null\nsize=16m\nrate_iops=50\nrate_process=poisson\n");
        let mut last = 0;
        let mut iops = Vec::new();
        for _ in 0..12 {
            r.issued(READ, 4096);
            iops.push(1_000_000 / (r.next_us[READ] - last));
            last = r.next_us[READ];
        }
        assert_eq!(iops, [21, 105, 161, 47, 13, 32, 61, 157, 41, 46, 594, 56]);
        // Below one block per second fio divides by zero; we refuse.
        let j = job("[p]\nrw=read\nrate=300\nrate_process=poisson\n");
        let seeds = super::super::rand::job_seeds(&j, 1);
        assert!(
            Rate::new(&j, &seeds, Nanos(0))
                .unwrap_err()
                .contains("poisson")
        );
    }

    #[test]
    fn per_direction_values_fill_as_fios_parser() {
        let j = job("[r]\nrate=1m\n");
        assert_eq!(j.rate, [1 << 20; 3]);
        let j = job("[r]\nrate=300,500\n");
        assert_eq!(j.rate, [300, 500, 500]);
        let j = job("[r]\nrate=,500\nratemin=,100\n");
        assert_eq!((j.rate, j.rate_min), ([0, 500, 500], [0, 100, 100]));
        let e = jobfile::parse_job_text("[r]\nrate=1m\nrate_iops=5\n", "t.fio", &SystemSources)
            .unwrap_err();
        assert!(e.to_string().contains("mutually exclusive"), "{e}");
        let e = jobfile::parse_job_text("[r]\nrate=1k\nrate_min=2k\n", "t.fio", &SystemSources)
            .unwrap_err();
        assert!(e.to_string().contains("minimum rate exceeds"), "{e}");
    }

    #[test]
    fn the_minimum_is_judged_after_two_seconds_over_each_cycle() {
        let mut r = rate("[r]\nrw=read\nbs=4k\nrate=1250\nratemin=1024\n");
        let s = |x: u64| Nanos(x * 1_000_000_000);
        // Settling: never judged.
        assert!(r.check_min(s(1), [4096, 0, 0], [1, 0, 0]).is_ok());
        // First judged call only records.
        assert!(r.check_min(s(3), [4096, 0, 0], [1, 0, 0]).is_ok());
        // 4 KiB more over 3 s: 1365 B/s, met.
        assert!(r.check_min(s(6), [8192, 0, 0], [2, 0, 0]).is_ok());
        // Nothing over 2 s: fio's message.
        assert_eq!(
            r.check_min(s(8), [8192, 0, 0], [2, 0, 0]).unwrap_err(),
            "rate_min=1024B/s not met, got 0B/s"
        );
    }

    #[test]
    fn exit_what_picks_fios_victims() {
        let ex = Exits::new(vec![0, 1, 1, 2], true);
        ex.get(1).set_phase(Phase::Running);
        ex.get(2).set_phase(Phase::Ramp);
        ex.terminate(0, ExitWhat::Stonewall);
        let t: Vec<bool> = (0..4).map(|i| ex.get(i).terminated()).collect();
        assert_eq!(t, [false, true, false, false]);
        ex.terminate(2, ExitWhat::Group);
        assert!(ex.get(3).terminated() && !ex.get(2).terminated());
        ex.terminate(0, ExitWhat::All);
        assert!((0..4).all(|i| ex.get(i).terminated()));
    }
}
