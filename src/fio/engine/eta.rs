//! fio's ETA line (`--eta=always`, or `auto` on a terminal): every second while the jobs run,
//! `Jobs: N (f=F): [run_str][perc][rates][iops][eta ..]`, as fio 3.33's eta.c computes it
//! (calc_thread_status, thread_eta, calc_rate, calc_iops, update_condensed_str).
//!
//! Why it exists: users watch long runs with it, and scripts that read fio's stdout meet it. The
//! numbers are fio's: bytes and I/Os done (every clone's stats, taken with the status handshake)
//! over the time since the last line, each clone's remaining time from its bytes done against
//! its total, or its runtime, and the stonewall batches still to come. What it must never do:
//! print anything the jobs did not measure; an estimate fio cannot make (the first three
//! seconds, a job with nothing to go by) leaves the bracket out, as fio does.

use super::stats::{READ, TRIM, ThreadStats, WRITE};
use super::status::{Phase, PhaseSnap};
use crate::fio::jobfile::JobSpec;
use crate::probe::clock::Nanos;

/// One clone as the ETA sees it.
pub struct CloneEta<'a> {
    /// Its job.
    pub job: &'a JobSpec,
    /// fio's total_io_size: the bytes of all its passes.
    pub total_bytes: u64,
    /// Its phase, open files, start and end.
    pub phase: PhaseSnap,
    /// Its stats so far.
    pub stats: &'a ThreadStats,
}

/// What the line keeps from one call to the next (fio's statics in eta.c).
#[derive(Debug)]
pub struct EtaState {
    prev_bytes: [u64; 3],
    prev_ios: [u64; 3],
    prev_time: Nanos,
    linelen_last: usize,
    eta_good: bool,
    /// Whether any line was printed (the last is ended with a newline).
    pub printed: bool,
}

impl EtaState {
    /// A run that started at `t0` (fio's genesis).
    pub fn new(t0: Nanos) -> EtaState {
        EtaState {
            prev_bytes: [0; 3],
            prev_ios: [0; 3],
            prev_time: t0,
            linelen_last: 0,
            eta_good: false,
            printed: false,
        }
    }
}

/// fio's run_str letter of a clone.
fn letter(job: &JobSpec, phase: Phase) -> char {
    let random = job.rw.is_random();
    let pick = |upper: char, lower: char| if random { lower } else { upper };
    match phase {
        Phase::NotStarted => 'P',
        Phase::SettingUp => 'I',
        Phase::Done => '_',
        Phase::Failed => 'X',
        // fio's runstate stays TD_RUNNING through ramp_time (TD_RAMP is set only as the ramp
        // ends, for a moment): a ramping clone shows as running.
        Phase::Ramp | Phase::Running => {
            if job.rw.reads() && job.rw.writes() {
                match job.rwmixread {
                    100 => pick('R', 'r'),
                    0 => pick('W', 'w'),
                    _ => pick('M', 'm'),
                }
            } else if job.rw.reads() {
                pick('R', 'r')
            } else if job.rw.writes() {
                pick('W', 'w')
            } else {
                pick('D', 'd')
            }
        }
    }
}

/// fio's update_condensed_str: each run of one letter as `c(n)`, comma-separated.
pub fn condensed(letters: &str) -> String {
    let mut out = String::new();
    let b: Vec<char> = letters.chars().collect();
    let mut i = 0;
    while i < b.len() {
        let mut n = 1;
        while i + n < b.len() && b[i + n] == b[i] {
            n += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(&format!("{}({n})", b[i]));
        i += n;
    }
    out
}

/// fio's eta_to_str.
pub fn eta_to_str(eta_sec: u64) -> String {
    let (s, m, h, d) = (
        eta_sec % 60,
        eta_sec / 60 % 60,
        eta_sec / 3600 % 24,
        eta_sec / 86400,
    );
    let mut out = String::new();
    if d > 0 {
        out.push_str(&format!("{d:02}d:"));
    }
    if h > 0 || d > 0 {
        out.push_str(&format!("{h:02}h:"));
    }
    out.push_str(&format!("{m:02}m:{s:02}s"));
    out
}

/// fio's thread_eta: seconds left of one clone at `now`.
fn thread_eta(c: &CloneEta<'_>, now: Nanos, done_secs: u64) -> u64 {
    let job = c.job;
    let elapsed = c
        .phase
        .started
        .map_or(0, |s| ((now - s).0 / 1_000_000).div_ceil(1000));
    let timeout = job.runtime.map_or(0, |r| r.as_secs());
    let mut total = c.total_bytes;
    if job.do_verify && job.verify && job.rw.writes() {
        if job.rw.reads() {
            let perc = match 100 - job.rwmixread {
                0 => 50,
                w => w as u64,
            };
            total += total * perc / 100;
        } else {
            total <<= 1;
        }
    }
    match c.phase.phase {
        Phase::Ramp | Phase::Running => {
            let done: u64 = c.stats.dir.iter().map(|d| d.io_bytes).sum();
            let mut perc = if total > 0 {
                (done as f64 / total as f64).min(1.0)
            } else {
                0.0
            };
            if job.time_based {
                perc = if timeout > 0 {
                    perc.min(elapsed as f64 / timeout as f64)
                } else {
                    0.0
                };
            }
            let mut eta = if perc == 0.0 {
                timeout
            } else {
                ((elapsed as f64 * (1.0 / perc)) as u64).saturating_sub(elapsed)
            };
            if timeout > 0 && eta > (timeout + done_secs).saturating_sub(elapsed) {
                eta = (timeout + done_secs).saturating_sub(elapsed);
            }
            eta
        }
        Phase::NotStarted | Phase::SettingUp => {
            let mut t_eta = 0u64;
            if timeout > 0 {
                let mut t = timeout * 1_000_000 + job.startdelay.as_micros() as u64;
                t += job.ramp_time.as_micros() as u64;
                t_eta = t / 1_000_000;
            }
            let mut rate = 0;
            for (d, on) in [job.rw.reads(), job.rw.writes(), job.rw.trims()]
                .into_iter()
                .enumerate()
            {
                if on {
                    rate += job.rate[d];
                }
            }
            let r_eta = total
                .checked_div(rate)
                .map_or(0, |t| t + job.startdelay.as_secs());
            match (r_eta, t_eta) {
                (0, t) => t,
                (r, 0) => r,
                (r, t) => r.min(t),
            }
        }
        Phase::Done | Phase::Failed => 0,
    }
}

/// The line fio's display_thread_status prints at `now` (its `\r` included), or None where
/// fio prints nothing (no job running and none to come).
pub fn line(clones: &[CloneEta<'_>], now: Nanos, t0: Nanos, st: &mut EtaState) -> Option<String> {
    let elapsed_sec = ((now - t0).0 / 1_000_000).div_ceil(1000);
    let (mut nr_running, mut nr_setting_up, mut nr_pending) = (0, 0, 0);
    let mut files_open = 0u32;
    let (mut t_rate, mut m_rate, mut t_iops, mut m_iops) = (0u64, 0u64, 0u64, 0u64);
    let mut letters = String::new();
    let mut bytes = [0u64; 3];
    let mut ios = [0u64; 3];
    let done_secs: u64 = clones
        .iter()
        .filter_map(|c| Some((c.phase.started?, c.phase.ended?)))
        .map(|(s, e)| (e - s).0 / 1_000_000_000)
        .sum();
    let mut etas = Vec::with_capacity(clones.len());
    for c in clones {
        let job = c.job;
        match c.phase.phase {
            Phase::Ramp | Phase::Running => {
                nr_running += 1;
                for (d, on) in [job.rw.reads(), job.rw.writes(), job.rw.trims()]
                    .into_iter()
                    .enumerate()
                {
                    if on {
                        t_rate += job.rate[d];
                        t_iops += job.rate_iops[d];
                        m_rate += job.rate_min[d];
                        m_iops += job.rate_iops_min[d];
                    }
                }
                files_open += c.phase.open_files;
            }
            Phase::SettingUp => nr_setting_up += 1,
            Phase::NotStarted => nr_pending += 1,
            Phase::Done | Phase::Failed => {}
        }
        etas.push((elapsed_sec >= 3).then(|| thread_eta(c, now, done_secs)));
        letters.push(letter(job, c.phase.phase));
        if c.phase.phase > Phase::SettingUp {
            for d in [READ, WRITE, TRIM] {
                bytes[d] += c.stats.dir[d].io_bytes;
                ios[d] += c.stats.dir[d].total_ios;
            }
        }
    }
    // fio: with exitall the first job to end ends them all, else the longest, plus the
    // stonewall batches not started.
    let eta_sec: Option<u64> = if etas.iter().any(Option::is_none) {
        None
    } else if clones.iter().any(|c| c.job.exitall) {
        etas.iter().flatten().min().copied()
    } else {
        let mut eta = 0u64;
        let mut stone = 0u64;
        for (c, e) in clones.iter().zip(&etas) {
            let e = e.unwrap_or(0);
            if c.phase.phase == Phase::NotStarted && c.job.stonewall {
                stone += e;
            } else {
                eta = eta.max(e);
            }
        }
        Some(eta + stone)
    };
    let disp_ms = (now - st.prev_time).0 / 1_000_000;
    let mut rate = [0u64; 3];
    let mut iops = [0u64; 3];
    for d in [READ, WRITE, TRIM] {
        let db = bytes[d].saturating_sub(st.prev_bytes[d]);
        let di = ios[d].saturating_sub(st.prev_ios[d]);
        rate[d] = (1000 * db).checked_div(disp_ms).unwrap_or(0) / 1024;
        iops[d] = (di * 1000).checked_div(disp_ms).unwrap_or(0);
    }
    st.prev_bytes = bytes;
    st.prev_ios = ios;
    st.prev_time = now;
    if nr_running == 0 && nr_pending == 0 {
        return None;
    }
    let mut out = format!("Jobs: {nr_running} (f={files_open})");
    if m_rate > 0 || t_rate > 0 {
        let s = |v: u64| crate::fio::text::num2str(v, 4, true, "B/s");
        out.push_str(&format!(", {}-{}", s(m_rate), s(t_rate)));
    } else if m_iops > 0 || t_iops > 0 {
        out.push_str(&format!(", {m_iops}-{t_iops} IOPS"));
    }
    if let Some(eta) = eta_sec.filter(|_| nr_running > 0) {
        let perc_str = if eta == 0 && !st.eta_good {
            "-.-%".to_string()
        } else {
            let mut mult = 100.0;
            if nr_setting_up > 0 && nr_running > 0 {
                mult *= 1.0 - nr_setting_up as f64 / nr_running as f64;
            }
            st.eta_good = true;
            let perc = if elapsed_sec > 0 {
                elapsed_sec as f64 / (elapsed_sec + eta) as f64
            } else {
                0.0
            };
            format!("{:3.1}%", perc * mult)
        };
        out.push_str(&format!(": [{}][{perc_str}]", condensed(&letters)));
        let has: Vec<usize> = (0..3).filter(|&d| rate[d] > 0 || iops[d] > 0).collect();
        if !has.is_empty() {
            let c = ['r', 'w', 't'];
            let rates: Vec<String> = has
                .iter()
                .map(|&d| {
                    format!(
                        "{}={}",
                        c[d],
                        crate::fio::text::num2str(rate[d] * 1024, 4, true, "B/s")
                    )
                })
                .collect();
            let iops_s: Vec<String> = has
                .iter()
                .map(|&d| {
                    format!(
                        "{}={}",
                        c[d],
                        crate::fio::text::num2str(iops[d], 4, false, "")
                    )
                })
                .collect();
            out.push_str(&format!("[{}][{} IOPS]", rates.join(","), iops_s.join(",")));
        }
        out.push_str(&format!("[eta {}]", eta_to_str(eta)));
        let len = out.len();
        if len < st.linelen_last {
            out.push_str(&" ".repeat(st.linelen_last - len));
        }
        st.linelen_last = len;
    }
    out.push('\r');
    st.printed = true;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_strings_and_times_are_fios() {
        assert_eq!(condensed("r"), "r(1)");
        assert_eq!(condensed("rrw__P"), "r(2),w(1),_(2),P(1)");
        assert_eq!(eta_to_str(3), "00m:03s");
        assert_eq!(eta_to_str(3725), "01h:02m:05s");
        assert_eq!(eta_to_str(90_061), "01d:01h:01m:01s");
    }

    fn job(text: &str) -> JobSpec {
        crate::fio::jobfile::parse_job_text(text, "t.fio", &crate::fio::jobfile::SystemSources)
            .unwrap()
            .jobs
            .remove(0)
    }

    fn running(start_s: u64) -> PhaseSnap {
        PhaseSnap {
            phase: Phase::Running,
            open_files: 1,
            started: Some(Nanos(start_s * 1_000_000_000)),
            ended: None,
        }
    }

    /// fio 3.33's lines for `[e] rw=randread bs=4k size=64m rate_iops=4000 time_based
    /// runtime=5`: no estimate in the first seconds, then elapsed / (elapsed + eta), the rates
    /// of the last second, fio's rate bounds after the open files.
    #[test]
    fn a_rated_time_based_job_reads_as_fios() {
        let j = job("[e]\nrw=randread\nbs=4k\nsize=64m\nrate_iops=4000\ntime_based\nruntime=5\n");
        let t0 = Nanos(0);
        let mut st = EtaState::new(t0);
        let mut stats = ThreadStats::default();
        stats.dir[READ].io_bytes = 2 * 4000 * 4096;
        stats.dir[READ].total_ios = 2 * 4000;
        let at = |s: u64| Nanos(s * 1_000_000_000);
        let c = CloneEta {
            job: &j,
            total_bytes: 64 << 20,
            phase: running(0),
            stats: &stats,
        };
        let l = line(&[c], at(2), t0, &mut st).unwrap();
        assert_eq!(l, "Jobs: 1 (f=1), 0-4000 IOPS\r");
        stats.dir[READ].io_bytes = 3 * 4000 * 4096;
        stats.dir[READ].total_ios = 3 * 4000;
        let c = CloneEta {
            job: &j,
            total_bytes: 64 << 20,
            phase: running(0),
            stats: &stats,
        };
        let l = line(&[c], at(3), t0, &mut st).unwrap();
        // 4000 I/Os of 4 KiB in the last second; runtime 5 s, 3 s gone: 2 s left, 60 %.
        assert_eq!(
            l,
            "Jobs: 1 (f=1), 0-4000 IOPS: [r(1)][60.0%][r=15.6MiB/s][r=4000 IOPS][eta 00m:02s]\r"
        );
        // Every job done: nothing to print.
        let c = CloneEta {
            job: &j,
            total_bytes: 64 << 20,
            phase: PhaseSnap {
                phase: Phase::Done,
                ..running(0)
            },
            stats: &stats,
        };
        assert!(line(&[c], at(6), t0, &mut st).is_none());
    }
}
