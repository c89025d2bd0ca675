//! fio's `--status-interval`: the cumulative stats of every job, taken while the jobs run.
//!
//! Why it exists: fio's helper thread calls `__show_running_run_stats` every interval, which
//! asks each running job for its counters (the job answers at its next I/O, as fio's
//! `rusage_sem` handshake), gives every job's runtime up to now and prints the full report;
//! users read those periodic JSON or normal blocks to watch a long run. Here each clone owns a
//! [`Slot`]: the monitor raises the slot's request flag, the clone answers with a copy of its
//! stats between two I/Os (see `worker::after_tick`), and a clone that ended leaves its final
//! stats. A clone that does not answer within one interval (a long thinktime, a verify pass,
//! a file engine between files) is reported with its last answer, so the monitor never stalls.
//! Jobs not started yet (behind a stonewall) report zeros, as in fio.

use super::stats::ThreadStats;
use crate::probe::clock::Nanos;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// Where a clone stands, for the monitor.
#[derive(Clone, Debug, Default)]
enum State {
    /// Not started (laying out, or behind a stonewall): nothing done yet.
    #[default]
    Pending,
    /// In its timed loop; its last answer, if any (stats and when they were taken).
    Running(Option<(ThreadStats, Nanos)>),
    /// Ended: its final stats and end time.
    Done(ThreadStats, Nanos),
}

/// What a clone is doing, as fio's ETA line shows it (its run_str letter) and exit_what=
/// stonewall asks; kept in the clone's [`super::rate::Exit`]. Phases only move forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Phase {
    /// Not started: waiting for its stonewall batch, wait_for or startdelay (fio's
    /// TD_NOT_CREATED, 'P').
    NotStarted = 0,
    /// Laying out its files (fio's TD_SETTING_UP, 'I').
    SettingUp = 1,
    /// In ramp_time. fio's runstate stays TD_RUNNING there (TD_RAMP only marks the ramp's
    /// end), so the ETA line shows it as running.
    Ramp = 2,
    /// Doing measured I/O (fio's TD_RUNNING: 'r', 'R', 'w', 'W', 'm', 'M', 'd', 'D').
    Running = 3,
    /// Ended (fio's TD_REAPED, '_').
    Done = 4,
    /// Ended by an error (fio's 'X').
    Failed = 5,
}

impl Phase {
    /// The phase stored as `v`.
    pub fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::NotStarted,
            1 => Phase::SettingUp,
            2 => Phase::Ramp,
            3 => Phase::Running,
            4 => Phase::Done,
            _ => Phase::Failed,
        }
    }
}

/// A clone's phase, open files and start, as the ETA monitor reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseSnap {
    /// What it is doing.
    pub phase: Phase,
    /// Files it holds open (fio's nr_open_files).
    pub open_files: u32,
    /// When its I/O started (fio's epoch), once it has.
    pub started: Option<Nanos>,
    /// When it ended, once it has.
    pub ended: Option<Nanos>,
}

/// One clone's side of the handshake.
#[derive(Debug, Default)]
pub struct Slot {
    want: AtomicBool,
    state: Mutex<State>,
    open_files: AtomicU32,
    /// Nanos of the start and the end (0: not yet).
    started_ns: AtomicU64,
    ended_ns: AtomicU64,
}

impl Slot {
    /// Whether the monitor waits for the clone's stats (a relaxed load: cheap on every I/O).
    #[inline]
    pub fn wanted(&self) -> bool {
        self.want.load(Ordering::Relaxed)
    }

    /// The clone's stats now, taken at `at` (its runtimes already up to `at`).
    pub fn answer(&self, stats: ThreadStats, at: Nanos) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*s, State::Running(_)) {
            *s = State::Running(Some((stats, at)));
        }
        self.want.store(false, Ordering::Release);
    }

    /// The clone is about to enter its timed loop.
    pub fn started(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*s, State::Pending) {
            *s = State::Running(None);
        }
        self.started_ns
            .store(Nanos::now().0.max(1), Ordering::Release);
    }

    /// ramp_time ended: the clone's epoch starts again (fio's reset_all_stats), now measured.
    pub fn ramp_ended(&self) {
        self.started_ns
            .store(Nanos::now().0.max(1), Ordering::Release);
    }

    /// The clone holds `n` files open now.
    pub fn set_open_files(&self, n: u32) {
        self.open_files.store(n, Ordering::Relaxed);
    }

    /// The clone's open files, start and end, in `phase`.
    pub fn snap(&self, phase: Phase) -> PhaseSnap {
        let at = |a: &AtomicU64| {
            Some(a.load(Ordering::Acquire))
                .filter(|&n| n > 0)
                .map(Nanos)
        };
        PhaseSnap {
            phase,
            open_files: self.open_files.load(Ordering::Relaxed),
            started: at(&self.started_ns),
            ended: at(&self.ended_ns),
        }
    }

    /// The clone ended with `stats` at `end`.
    pub fn done(&self, stats: ThreadStats, end: Nanos) {
        self.ended_ns.store(end.0.max(1), Ordering::Release);
        self.set_open_files(0);
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = State::Done(stats, end);
        self.want.store(false, Ordering::Release);
    }

    /// The clone ended without stats (an error, or ended before it started): it counts as
    /// done with what it had, so the monitor does not wait for it.
    pub fn ended(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = Nanos::now();
        if self.ended_ns.load(Ordering::Acquire) == 0 {
            self.ended_ns.store(now.0.max(1), Ordering::Release);
            self.set_open_files(0);
        }
        let stats = match std::mem::take(&mut *s) {
            State::Done(st, end) => {
                *s = State::Done(st, end);
                return;
            }
            State::Running(Some((st, _))) => st,
            _ => ThreadStats::default(),
        };
        *s = State::Done(stats, now);
        self.want.store(false, Ordering::Release);
    }
}

/// Every clone's slot, in the order of the run's clones.
#[derive(Debug)]
pub struct Board {
    slots: Vec<Slot>,
    /// One collection at a time (the status and ETA monitors share the request flags).
    collecting: Mutex<()>,
}

impl Board {
    /// A board of `n` clones, none started.
    pub fn new(n: usize) -> Board {
        Board {
            slots: (0..n).map(|_| Slot::default()).collect(),
            collecting: Mutex::new(()),
        }
    }

    /// Clone `i`'s slot.
    pub fn slot(&self, i: usize) -> &Slot {
        &self.slots[i]
    }

    /// Every clone's phase (clone `i`'s is `phase_of(i)`), open files, start and end (no
    /// handshake).
    pub fn phases(&self, phase_of: impl Fn(usize) -> Phase) -> Vec<PhaseSnap> {
        self.slots
            .iter()
            .enumerate()
            .map(|(i, s)| s.snap(phase_of(i)))
            .collect()
    }

    /// Ask every running clone for its stats and wait for the answers (at most `cap`, or
    /// until `stop` says the run is over); then each clone's stats and when they were taken
    /// (now for a clone that has none).
    pub fn collect(&self, cap: Duration, stop: &dyn Fn() -> bool) -> Vec<(ThreadStats, Nanos)> {
        let _one = self.collecting.lock().unwrap_or_else(|e| e.into_inner());
        for s in &self.slots {
            let st = s.state.lock().unwrap_or_else(|e| e.into_inner());
            if matches!(*st, State::Running(_)) {
                s.want.store(true, Ordering::Release);
            }
        }
        let until = std::time::Instant::now() + cap;
        while self.slots.iter().any(|s| s.want.load(Ordering::Acquire))
            && std::time::Instant::now() < until
            && !stop()
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        let now = Nanos::now();
        self.slots
            .iter()
            .map(|s| {
                s.want.store(false, Ordering::Release);
                match &*s.state.lock().unwrap_or_else(|e| e.into_inner()) {
                    State::Pending | State::Running(None) => (ThreadStats::default(), now),
                    State::Running(Some((st, at))) => (st.clone(), *at),
                    State::Done(st, end) => (st.clone(), *end),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_clone_is_waited_for_and_a_pending_one_reports_zeros() {
        let board = Board::new(3);
        board.slot(0).started();
        board.slot(2).started();
        let mut fin = ThreadStats::default();
        fin.dir[0].total_ios = 7;
        board.slot(2).done(fin, Nanos(5));
        std::thread::scope(|s| {
            s.spawn(|| {
                let slot = board.slot(0);
                while !slot.wanted() {
                    std::thread::yield_now();
                }
                let mut st = ThreadStats::default();
                st.dir[1].total_ios = 3;
                slot.answer(st, Nanos(9));
            });
            // The cap is far beyond the answer's time: the test does not race the clock.
            let got = board.collect(Duration::from_secs(60), &|| false);
            assert_eq!(got[0].0.dir[1].total_ios, 3);
            assert_eq!(got[0].1, Nanos(9));
            assert_eq!(got[1].0.dir[0].total_ios, 0);
            assert_eq!(got[2].0.dir[0].total_ios, 7);
            assert_eq!(got[2].1, Nanos(5));
        });
    }

    #[test]
    fn a_clone_that_ends_without_stats_keeps_its_last_answer() {
        let board = Board::new(1);
        let slot = board.slot(0);
        slot.started();
        let mut st = ThreadStats::default();
        st.dir[0].io_bytes = 4096;
        slot.answer(st, Nanos(1));
        slot.ended();
        // Done: collect does not wait for it.
        let got = board.collect(Duration::from_secs(60), &|| false);
        assert_eq!(got[0].0.dir[0].io_bytes, 4096);
        assert!(!slot.wanted());
    }
}
