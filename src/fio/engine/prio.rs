//! Which I/Os of a libaio / io_uring clone get a per-command priority (fio 3.33's
//! engines/cmdprio.c), and the per-priority latency stats they are counted in.
//!
//! Why it exists: fio's cmdprio_percentage and cmdprio_bssplit pick the prioritized I/Os with
//! their own generator (`prio_state`, seeded from fio's FIO_RAND_PRIO_CMDS seed), drawing once
//! per I/O whose direction (and, for bssplit, block size) has a non-zero percentage; drawing
//! with the same generator from the same seed at the same points makes our set of prioritized
//! I/Os fio's. The priorities a direction can see (the job's own first, then each cmdprio one
//! in order of first appearance) index fio's `clat_prio` stats, which the report prints when
//! two or more of them have samples. What it must never do: allocate or draw where fio does
//! not, since either would change the sequence (`choose` runs in the timed loop).

use super::rand::Taus;
use crate::fio::jobfile::JobSpec;
use crate::fio::jobfile::cmdprio::{CLASS_RT, ioprio_value};

/// One priority a direction may give: its value, its percent, its index in the direction's
/// per-priority stats (fio's cmdprio_prio).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Prio {
    ioprio: u32,
    perc: u32,
    index: u16,
}

/// The priorities of one block size (fio's cmdprio_bsprio).
#[derive(Clone, Debug, PartialEq, Eq)]
struct BsPrio {
    bs: u64,
    total: u32,
    prios: Vec<Prio>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Mode {
    Percentage([Option<Prio>; 2]),
    BsSplit([Vec<BsPrio>; 2]),
}

/// A clone's per-command priority selection (None where the job uses no cmdprio option).
#[derive(Clone, Debug)]
pub struct CmdPrio {
    mode: Mode,
    rand: Taus,
    seed: u64,
}

/// The priority an I/O is issued with, and where its latency is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chosen {
    /// The kernel's priority value (class << 13 | level).
    pub ioprio: u32,
    /// Index in the direction's per-priority stats.
    pub index: u16,
}

/// fio's assign_clat_prio_index: the index of `ioprio` in `values`, appended when new.
fn index_of(values: &mut Vec<u32>, ioprio: u32) -> u16 {
    match values.iter().position(|&v| v == ioprio) {
        Some(i) => i as u16,
        None => {
            values.push(ioprio);
            (values.len() - 1) as u16
        }
    }
}

impl CmdPrio {
    /// The selection of a clone of `job` whose seed table holds `seed` at
    /// [`super::rand::SEED_PRIO`], and per
    /// direction the priority values its per-priority stats count (fio's ts->clat_prio; empty
    /// where the direction has none, as fio allocates none). None when the job sets no
    /// cmdprio option.
    pub fn new(job: &JobSpec, seed: u64) -> Option<(CmdPrio, [Vec<u32>; 2])> {
        let o = &job.cmdprio;
        if !o.in_use() {
            return None;
        }
        let own = job.ioprio().unwrap_or(0);
        let dirs = [job.rw.reads(), job.rw.writes()];
        // fio: a cmdprio_class not given is the real-time class.
        let class = o.class.map(|c| if c == 0 { CLASS_RT } else { c });
        let implicit = [
            ioprio_value(class[0], o.level[0]),
            ioprio_value(class[1], o.level[1]),
        ];
        let mut values: [Vec<u32>; 2] = [Vec::new(), Vec::new()];
        let mode = match &o.bssplit {
            Some(split) => {
                let mut per: [Vec<BsPrio>; 2] = [Vec::new(), Vec::new()];
                for d in 0..2 {
                    if split[d].is_empty() || !dirs[d] {
                        continue;
                    }
                    values[d].push(own);
                    for e in &split[d] {
                        let ioprio = e.prio.unwrap_or(implicit[d]);
                        let index = index_of(&mut values[d], ioprio);
                        let p = Prio {
                            ioprio,
                            perc: e.perc,
                            index,
                        };
                        match per[d].last_mut().filter(|b| b.bs == e.bs) {
                            Some(b) => {
                                b.total += e.perc;
                                b.prios.push(p);
                            }
                            None => per[d].push(BsPrio {
                                bs: e.bs,
                                total: e.perc,
                                prios: vec![p],
                            }),
                        }
                    }
                }
                Mode::BsSplit(per)
            }
            None => {
                let mut per = [None, None];
                for d in 0..2 {
                    if o.percentage[d] == 0 || !dirs[d] {
                        continue;
                    }
                    values[d].push(own);
                    let index = index_of(&mut values[d], implicit[d]);
                    per[d] = Some(Prio {
                        ioprio: implicit[d],
                        perc: o.percentage[d],
                        index,
                    });
                }
                Mode::Percentage(per)
            }
        };
        Some((
            CmdPrio {
                mode,
                rand: Taus::new(seed, false),
                seed,
            },
            values,
        ))
    }

    /// A new loop with randrepeat (fio's clear_io_state re-seeds every generator).
    pub fn reseed(&mut self) {
        self.rand = Taus::new(self.seed, false);
    }

    /// fio's fio_cmdprio_set_ioprio for an I/O of direction `ddir` and `len` bytes: the
    /// priority it gets, or None (it keeps the job's own). Draws only where the percentage is
    /// not zero.
    #[inline]
    pub fn choose(&mut self, ddir: usize, len: u64) -> Option<Chosen> {
        let (total, prios): (u32, &[Prio]) = match &self.mode {
            Mode::Percentage(per) => match &per[ddir] {
                Some(p) => (p.perc, std::slice::from_ref(p)),
                None => return None,
            },
            Mode::BsSplit(per) => match per[ddir].iter().find(|b| b.bs == len) {
                Some(b) => (b.total, &b.prios),
                None => return None,
            },
        };
        if total == 0 {
            return None;
        }
        let r = self.rand.between(0, 99) as u32;
        if r >= total {
            return None;
        }
        let mut acc = 0;
        for p in prios {
            acc += p.perc;
            if r < acc {
                return Some(Chosen {
                    ioprio: p.ioprio,
                    index: p.index,
                });
            }
        }
        None
    }
}

/// Set the calling thread's I/O priority (fio's ioprio_set(IOPRIO_WHO_PROCESS, 0, ...) in the
/// job's thread: only this clone's thread changes).
pub fn set_thread_ioprio(ioprio: u32) -> std::io::Result<()> {
    const IOPRIO_WHO_PROCESS: libc::c_long = 1;
    // SAFETY: ioprio_set takes three integers and touches no memory of ours.
    let r = unsafe {
        libc::syscall(
            libc::SYS_ioprio_set,
            IOPRIO_WHO_PROCESS,
            0 as libc::c_long,
            ioprio as libc::c_long,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's I/O priority value (ioprio_get).
#[cfg(test)]
fn thread_ioprio() -> std::io::Result<u32> {
    // SAFETY: as above.
    let r = unsafe { libc::syscall(libc::SYS_ioprio_get, 1 as libc::c_long, 0 as libc::c_long) };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(r as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(text: &str) -> JobSpec {
        crate::fio::jobfile::parse_job_text(text, "t.fio", &crate::fio::jobfile::SystemSources)
            .unwrap()
            .jobs
            .remove(0)
    }

    fn seed(j: &JobSpec, thread_number: u64) -> u64 {
        crate::fio::engine::rand::job_seeds(j, thread_number)[crate::fio::engine::rand::SEED_PRIO]
    }

    #[test]
    fn the_priority_is_set_on_the_calling_thread_only() {
        let before = thread_ioprio().unwrap();
        let inside = std::thread::spawn(|| {
            set_thread_ioprio(0x4005).unwrap();
            thread_ioprio().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(inside, 0x4005);
        assert_eq!(thread_ioprio().unwrap(), before);
    }

    #[test]
    fn without_cmdprio_options_nothing_is_selected() {
        assert!(CmdPrio::new(&job("[a]\nioengine=libaio\nprio=3\n"), 0).is_none());
    }

    /// The prio column of real fio 3.33's clat log at iodepth=1 (I/O order): which I/Os got
    /// the priority. `[s] rw=randread bs=4k size=256k ioengine=libaio cmdprio_percentage=30`
    /// as thread 1, and `rw=randrw cmdprio_percentage=50,10` as thread 2 (after a job `[a]`),
    /// given as "DIRECTION PRIO" pairs: a write draws only with its own 10 %.
    #[test]
    fn the_prioritized_ios_are_real_fios() {
        let j = job("[s]\nrw=randread\nioengine=libaio\ncmdprio_percentage=30\n");
        let (mut c, _) = CmdPrio::new(&j, seed(&j, 1)).unwrap();
        let fio = "1011000000000100001000111000100011011010000010000001010000001100";
        let ours: String = (0..64)
            .map(|_| {
                if c.choose(0, 4096).is_some() {
                    '1'
                } else {
                    '0'
                }
            })
            .collect();
        assert_eq!(ours, fio);
        let fio = "00 10 10 10 10 10 00 10 11 10 10 10 10 01 01 00 10 01 10 10 00 00 01 11 10 10 \
                   01 10 11 00 00 10 00 10 01 10 10 10 11 00 00 10 00 10 01 00 00 10 00 01 10 00 \
                   10 11 10 00 01 01 10 01 10 10 10 01";
        let j = job("[s]\nrw=randrw\nioengine=libaio\ncmdprio_percentage=50,10\n");
        let (mut c, _) = CmdPrio::new(&j, seed(&j, 2)).unwrap();
        for (i, pair) in fio.split_whitespace().enumerate() {
            let ddir = (pair.as_bytes()[0] - b'0') as usize;
            let want = pair.as_bytes()[1] == b'1';
            assert_eq!(c.choose(ddir, 4096).is_some(), want, "I/O {i} ({pair})");
        }
    }

    /// examples/cmdprio-percentage.fio: the job's own class idle, 20 % real-time.
    #[test]
    fn percentage_counts_the_own_priority_first() {
        let j = job(
            "[r]\nrw=randread\nioengine=libaio\nprioclass=3\ncmdprio_percentage=20\ncmdprio_class=1\n",
        );
        let (mut c, values) = CmdPrio::new(&j, seed(&j, 1)).unwrap();
        assert_eq!(values, [vec![0x6000, 0x2000], vec![]]);
        let n = 10_000;
        let hit = (0..n).filter(|_| c.choose(0, 4096).is_some()).count();
        assert!((1800..2200).contains(&hit), "{hit} of {n}");
        assert_eq!(
            c.choose(1, 4096),
            None,
            "a direction the job does not do gets nothing"
        );
        // The same priority as the job's own is one entry.
        let j = job("[r]\nrw=read\nioengine=io_uring\nprioclass=1\ncmdprio_percentage=50\n");
        assert_eq!(
            CmdPrio::new(&j, seed(&j, 1)).unwrap().1,
            [vec![0x2000], vec![]]
        );
    }

    #[test]
    fn draws_happen_only_where_a_percentage_applies() {
        let j = job("[m]\nrw=randrw\nioengine=libaio\ncmdprio_percentage=30,0\n");
        let (mut a, values) = CmdPrio::new(&j, seed(&j, 2)).unwrap();
        assert_eq!(values, [vec![0, 0x2000], vec![]]);
        let (mut b, _) = CmdPrio::new(&j, seed(&j, 2)).unwrap();
        // Writes in between do not advance the generator.
        let mut seq_a = Vec::new();
        let mut seq_b = Vec::new();
        for i in 0..200 {
            seq_a.push(a.choose(0, 4096));
            if i % 3 == 0 {
                assert_eq!(b.choose(1, 4096), None);
            }
            seq_b.push(b.choose(0, 4096));
        }
        assert_eq!(seq_a, seq_b);
        a.reseed();
        let again: Vec<_> = (0..200).map(|_| a.choose(0, 4096)).collect();
        assert_eq!(again, seq_a, "a reseed starts the sequence over");
    }

    /// examples/cmdprio-bssplit.fio's second job, on its 64k reads only.
    #[test]
    fn bssplit_splits_one_draw_over_the_entries_of_the_block_size() {
        let j = job(
            "[a]\nrw=randread\nbs=64k\nioengine=libaio\ncmdprio_bssplit=64k/25/1/1:64k/75/3/2:1024k/0,1024k/0\n",
        );
        let (mut c, values) = CmdPrio::new(&j, seed(&j, 1)).unwrap();
        assert_eq!(values, [vec![0, 0x2001, 0x6002], vec![]]);
        let mut n = [0usize; 3];
        for _ in 0..4000 {
            let ch = c.choose(0, 65536).expect("100 % of 64k reads");
            n[ch.index as usize] += 1;
        }
        assert_eq!(n[0], 0);
        assert!((800..1200).contains(&n[1]), "{n:?}");
        assert_eq!(c.choose(0, 4096), None, "a size without entries");
        // Implicit entries take cmdprio_class / cmdprio; the default class is real-time.
        let j = job(
            "[a]\nrw=randwrite\nioengine=io_uring\nprioclass=2\nprio=7\ncmdprio_bssplit=4k/10:4k/10/3/0\ncmdprio=4\n",
        );
        assert_eq!(
            CmdPrio::new(&j, seed(&j, 1)).unwrap().1,
            [vec![], vec![0x4007, 0x2004, 0x6000]]
        );
    }
}
