//! fio's per-I/O logs: write_lat_log, write_bw_log and write_iops_log.
//!
//! Why it exists: plots of fio runs (fio_generate_plots, fiologparser) read these files, so
//! their names and lines are fio 3.33's: `PREFIX_TYPE.N.log` (N the clone's thread number, 1-based
//! over the run; without `.N` when per_job_logs=0), PREFIX the option's value or the job name,
//! TYPE `lat`, `slat`, `clat` (write_lat_log makes the three), `bw` or `iops`. One line per
//! completed I/O (log_avg_msec=0, the default): `msec, value, ddir, bs, prio` or, with
//! log_offset=1, `msec, value, ddir, bs, offset, prio`; msec since the clone's clock started,
//! latencies in nanoseconds, bw = bytes * 10^6 / clat in ns (fio's add_bw_sample), iops 1, prio
//! the I/O's priority: 1 when its class is real-time, else 0, or with log_prio=1 its whole value
//! as `0x%04x` (`0x2000`). slat is measured for the asynchronous engines only, so a
//! synchronous job's slat log is empty, as fio's. The files are written when the clone ends.
//! With log_avg_msec=N (fio's add_log_sample) each log keeps one window per direction and
//! writes a line when a window has lasted N ms: `msec, value, ddir, 0, [0,] 0` (bs, offset and
//! prio are 0 in fio's averaged lines), msec the time the window closed, value its samples'
//! mean rounded (log_max_value=1: their maximum); windows still open when the clone ends are
//! closed then (finalize_logs). The averaged bw/iops logs hold rates, as fio's helper thread
//! samples them every N ms: KiB/s and I/Os per second over the time since the last sample.
//! Invariant: recording a sample never allocates while the capacity reserved before the clock
//! started lasts (the job's expected I/Os, at most 2^18 per log, 8 MiB); beyond it the list
//! grows as fio's log chunks do.

use crate::plan::jobfile::JobSpec;
use crate::plan::jobfile::cmdprio::{CLASS_RT, CLASS_SHIFT};
use crate::probe::clock::Nanos;
use crate::workload::WorkloadError;
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sample {
    ms: u64,
    val: u64,
    ddir: u8,
    bs: u32,
    offset: u64,
    prio: u32,
}

/// One direction's open averaging window (fio's avg_window io_stat).
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    samples: u64,
    sum: u128,
    max: u64,
}

#[derive(Debug)]
struct Log {
    path: PathBuf,
    samples: Vec<Sample>,
    /// log_avg_msec (0: one line per sample).
    avg_msec: u64,
    /// log_max_value: a window's line carries its maximum, not its mean.
    log_max: bool,
    /// fio's inline_log: lat/slat/clat close a window exactly at avg_msec; bw/iops (sampled
    /// by fio's helper thread) accept a window LOG_MSEC_SLACK (1 ms) short.
    inline: bool,
    win: [Window; 2],
    /// Per direction, the start (ms) of the open window (fio's avg_last).
    avg_last: [u64; 2],
}

/// fio's LOG_MSEC_SLACK.
const LOG_MSEC_SLACK: u64 = 1;

impl Log {
    /// Add one sample (fio's add_log_sample): a line of its own without averaging, else into
    /// the direction's window, which becomes a line once it has lasted avg_msec.
    #[inline]
    fn add(&mut self, s: Sample) {
        if self.avg_msec == 0 {
            self.samples.push(s);
            return;
        }
        let d = usize::from(s.ddir & 1);
        let w = &mut self.win[d];
        w.samples += 1;
        w.sum += u128::from(s.val);
        w.max = w.max.max(s.val);
        let last = self.avg_last[d];
        if s.ms < last {
            return;
        }
        let this_window = s.ms - last;
        if this_window < self.avg_msec
            && (self.inline || self.avg_msec - this_window > LOG_MSEC_SLACK)
        {
            return;
        }
        self.close(d, s.ms);
        self.avg_last[d] = s.ms - s.ms % self.avg_msec;
    }

    /// Close direction `d`'s window at `ms` (fio's __add_stat_to_log): a line when it holds
    /// samples, with bs, offset and prio 0 as fio writes them.
    fn close(&mut self, d: usize, ms: u64) {
        let w = std::mem::take(&mut self.win[d]);
        if w.samples == 0 {
            return;
        }
        let val = if self.log_max {
            w.max
        } else {
            // fio's mean + 0.50, truncated.
            ((w.sum as f64 / w.samples as f64) + 0.5) as u64
        };
        self.samples.push(Sample {
            ms,
            val,
            ddir: d as u8,
            bs: 0,
            offset: 0,
            prio: 0,
        });
    }
}

/// bw/iops with log_avg_msec: fio's helper thread's __add_samples, run at completions: once
/// avg_msec has passed since the last sample, one rate per direction
/// that moved, over the time spent (bw in KiB/s, iops in I/Os per second).
#[derive(Clone, Copy, Debug, Default)]
struct RateSampler {
    last_ms: u64,
    bytes: [u64; 2],
    blocks: [u64; 2],
    stat_bytes: [u64; 2],
    stat_blocks: [u64; 2],
}

/// The logs of one clone.
#[derive(Debug, Default)]
pub struct IoLogs {
    lat: Option<Log>,
    slat: Option<Log>,
    clat: Option<Log>,
    bw: Option<Log>,
    iops: Option<Log>,
    offset: bool,
    log_prio: bool,
    /// Some when the bw/iops logs are averaged (log_avg_msec > 0).
    rate: Option<RateSampler>,
    avg_msec: u64,
}

/// One completed I/O as the logs see it.
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    /// 0 read, 1 write.
    pub ddir: usize,
    /// Bytes.
    pub bs: usize,
    /// File offset.
    pub offset: u64,
    /// Since the clone's clock started.
    pub at: Nanos,
    /// lat (ns).
    pub lat: u64,
    /// clat (ns).
    pub clat: u64,
    /// The priority value it was issued with (fio's io_u->ioprio).
    pub prio: u32,
}

fn log_name(prefix: &str, job: &JobSpec, kind: &str, thread_number: u64) -> PathBuf {
    let pre = if prefix.is_empty() { &job.name } else { prefix };
    PathBuf::from(if job.per_job_logs {
        format!("{pre}_{kind}.{thread_number}.log")
    } else {
        format!("{pre}_{kind}.log")
    })
}

impl IoLogs {
    /// The logs a clone of `job` (fio thread number `thread_number`) keeps; `ios` is the
    /// number of I/Os expected (capacity reserved now, before the clock starts).
    pub fn for_clone(job: &JobSpec, thread_number: u64, ios: u64) -> IoLogs {
        let cap = ios.min(1 << 18) as usize;
        let mk = |prefix: &Option<String>, kind: &str, on: bool| {
            prefix.as_ref().filter(|_| on).map(|p| Log {
                path: log_name(p, job, kind, thread_number),
                samples: Vec::with_capacity(cap),
                avg_msec: job.log_avg_msec,
                log_max: job.log_max,
                inline: !matches!(kind, "bw" | "iops"),
                win: [Window::default(); 2],
                avg_last: [0; 2],
            })
        };
        let reduce = job.gtod_reduce;
        IoLogs {
            lat: mk(&job.lat_log, "lat", !job.disable_lat),
            slat: mk(&job.lat_log, "slat", !job.disable_slat),
            clat: mk(&job.lat_log, "clat", !job.disable_clat),
            bw: mk(&job.bw_log, "bw", !job.disable_bw),
            iops: mk(&job.iops_log, "iops", !reduce),
            offset: job.log_offset,
            log_prio: job.log_prio,
            rate: (job.log_avg_msec > 0).then(RateSampler::default),
            avg_msec: job.log_avg_msec,
        }
    }

    /// Whether any log is kept (the loops skip the call otherwise).
    #[inline]
    pub fn active(&self) -> bool {
        self.lat.is_some()
            || self.slat.is_some()
            || self.clat.is_some()
            || self.bw.is_some()
            || self.iops.is_some()
    }

    /// Record one completed I/O (fio's account_io_completion, per-I/O samples).
    #[inline]
    pub fn completed(&mut self, c: Completion) {
        let base = Sample {
            ms: c.at.0 / 1_000_000,
            val: 0,
            ddir: c.ddir as u8,
            bs: c.bs as u32,
            offset: c.offset,
            prio: c.prio,
        };
        let push = |log: &mut Option<Log>, val: u64| {
            if let Some(l) = log {
                l.add(Sample { val, ..base });
            }
        };
        push(&mut self.lat, c.lat);
        push(&mut self.clat, c.clat);
        let Some(r) = &mut self.rate else {
            let bw = (c.bs as u64 * 1_000_000).checked_div(c.clat).unwrap_or(0);
            push(&mut self.bw, bw);
            push(&mut self.iops, 1);
            return;
        };
        let d = c.ddir & 1;
        r.bytes[d] += c.bs as u64;
        r.blocks[d] += 1;
        let spent = base.ms.saturating_sub(r.last_ms);
        // fio's helper thread sleeps until avg_msec has passed; the first completion after
        // that stands in for its wake-up (its LOG_MSEC_SLACK early-wake case never arises).
        if spent < self.avg_msec {
            return;
        }
        for d in 0..2 {
            let (bytes, blocks) = (r.bytes[d] - r.stat_bytes[d], r.blocks[d] - r.stat_blocks[d]);
            if bytes == 0 {
                continue;
            }
            let (bw, iops) = match spent {
                0 => (0, 0),
                s => (bytes * 1000 / s / 1024, blocks * 1000 / s),
            };
            let line = Sample {
                ddir: d as u8,
                ..base
            };
            if let Some(l) = &mut self.bw {
                l.add(Sample { val: bw, ..line });
            }
            if let Some(l) = &mut self.iops {
                l.add(Sample { val: iops, ..line });
            }
            r.stat_bytes[d] = r.bytes[d];
            r.stat_blocks[d] = r.blocks[d];
        }
        r.last_ms = base.ms;
    }

    /// The clone's I/O ended `at` after its clock started: close the open windows (fio's
    /// finalize_logs).
    pub fn finish(&mut self, at: Nanos) {
        let ms = at.0 / 1_000_000;
        for l in [
            &mut self.lat,
            &mut self.slat,
            &mut self.clat,
            &mut self.bw,
            &mut self.iops,
        ]
        .into_iter()
        .flatten()
        {
            if l.avg_msec > 0 {
                l.close(0, ms);
                l.close(1, ms);
            }
        }
    }

    /// Record the submission latency of an asynchronous I/O (fio's add_slat_sample) issued
    /// with priority `prio`.
    #[inline]
    pub fn submitted(
        &mut self,
        ddir: usize,
        bs: usize,
        offset: u64,
        at: Nanos,
        slat: u64,
        prio: u32,
    ) {
        if let Some(l) = &mut self.slat {
            l.add(Sample {
                ms: at.0 / 1_000_000,
                val: slat,
                ddir: ddir as u8,
                bs: bs as u32,
                offset,
                prio,
            });
        }
    }

    /// The text of one log, in fio's line format (flush_samples).
    fn text(samples: &[Sample], offset: bool, log_prio: bool) -> String {
        let mut out = String::with_capacity(samples.len() * 24);
        for s in samples {
            let _ = write!(out, "{}, {}, {}, {}, ", s.ms, s.val, s.ddir, s.bs);
            if offset {
                let _ = write!(out, "{}, ", s.offset);
            }
            let _ = if log_prio {
                writeln!(out, "0x{:04x}", s.prio)
            } else {
                // fio's ioprio_value_is_class_rt.
                writeln!(out, "{}", u8::from(s.prio >> CLASS_SHIFT == CLASS_RT))
            };
        }
        out
    }

    /// Write the files (in the current directory, as fio does).
    pub fn write(&self) -> Result<(), WorkloadError> {
        for l in [&self.lat, &self.slat, &self.clat, &self.bw, &self.iops]
            .into_iter()
            .flatten()
        {
            std::fs::write(&l.path, Self::text(&l.samples, self.offset, self.log_prio))
                .map_err(|e| WorkloadError::io("write log", &l.path, e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(text: &str) -> JobSpec {
        crate::plan::jobfile::parse_job_text(text, "t.fio", &crate::plan::jobfile::SystemSources)
            .unwrap()
            .jobs
            .remove(0)
    }

    #[test]
    fn names_are_fios() {
        let j = job("[disk]\nwrite_bw_log\nwrite_lat_log=pfx\nwrite_iops_log=io\n");
        let l = IoLogs::for_clone(&j, 3, 0);
        let names: Vec<String> = [&l.lat, &l.slat, &l.clat, &l.bw, &l.iops]
            .into_iter()
            .flatten()
            .map(|l| l.path.display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "pfx_lat.3.log",
                "pfx_slat.3.log",
                "pfx_clat.3.log",
                "disk_bw.3.log",
                "io_iops.3.log"
            ]
        );
        let j = job("[disk]\nwrite_bw_log=x\nper_job_logs=0\n");
        let l = IoLogs::for_clone(&j, 3, 0);
        assert_eq!(l.bw.unwrap().path, PathBuf::from("x_bw.log"));
        // disable_* drop their logs, as fio sets them up only for what is measured.
        let j = job("[d]\nwrite_lat_log\ndisable_slat=1\n");
        let l = IoLogs::for_clone(&j, 1, 0);
        assert!(l.slat.is_none() && l.lat.is_some());
    }

    /// Lines as fio 3.33 writes them (compare `0, 24115, 1, 4096, 0` and, with log_offset=1,
    /// `7, 752655, 0, 65536, 65536, 0`).
    #[test]
    fn lines_are_fios() {
        let j = job("[d]\nwrite_bw_log\nwrite_lat_log\n");
        let mut l = IoLogs::for_clone(&j, 1, 4);
        l.completed(Completion {
            ddir: 0,
            bs: 65536,
            offset: 65536,
            at: Nanos(7_400_000),
            lat: 90_000,
            clat: 87_073,
            prio: 0,
        });
        let bw = &l.bw.as_ref().unwrap().samples;
        assert_eq!(IoLogs::text(bw, false, false), "7, 752655, 0, 65536, 0\n");
        assert_eq!(
            IoLogs::text(bw, true, false),
            "7, 752655, 0, 65536, 65536, 0\n"
        );
        let lat = &l.lat.as_ref().unwrap().samples;
        assert_eq!(IoLogs::text(lat, false, false), "7, 90000, 0, 65536, 0\n");
        assert!(l.slat.as_ref().unwrap().samples.is_empty());
        l.submitted(1, 4096, 0, Nanos(1_000_000), 1234, 0x2000);
        let slat = &l.slat.as_ref().unwrap().samples;
        assert_eq!(IoLogs::text(slat, false, false), "1, 1234, 1, 4096, 1\n");
    }

    /// The prio column as fio 3.33 writes it: 1 for a real-time I/O and 0 otherwise, or with
    /// log_prio=1 the value (`0x6000` an idle one), after the offset with log_offset=1.
    #[test]
    fn the_prio_column_is_fios() {
        let j = job("[d]\nwrite_lat_log\n");
        let mut l = IoLogs::for_clone(&j, 1, 4);
        for prio in [0x6000, 0x2000, 0x2007, 0] {
            l.completed(Completion {
                ddir: 0,
                bs: 4096,
                offset: 8192,
                at: Nanos(3_000_000),
                lat: 10,
                clat: 9,
                prio,
            });
        }
        let clat = &l.clat.as_ref().unwrap().samples;
        assert_eq!(
            IoLogs::text(clat, false, false),
            "3, 9, 0, 4096, 0\n3, 9, 0, 4096, 1\n3, 9, 0, 4096, 1\n3, 9, 0, 4096, 0\n"
        );
        assert_eq!(
            IoLogs::text(&clat[..2], false, true),
            "3, 9, 0, 4096, 0x6000\n3, 9, 0, 4096, 0x2000\n"
        );
        assert_eq!(
            IoLogs::text(&clat[3..], true, true),
            "3, 9, 0, 4096, 8192, 0x0000\n"
        );
    }

    #[test]
    fn files_are_written_in_the_current_directory_form() {
        let d = tempfile::tempdir().unwrap();
        let j = job("[d]\nwrite_iops_log\n");
        let mut l = IoLogs::for_clone(&j, 2, 1);
        l.iops.as_mut().unwrap().path = d.path().join("d_iops.2.log");
        l.completed(Completion {
            ddir: 1,
            bs: 4096,
            offset: 0,
            at: Nanos(0),
            lat: 1,
            clat: 1,
            prio: 0,
        });
        l.write().unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("d_iops.2.log")).unwrap(),
            "0, 1, 1, 4096, 0\n"
        );
    }
    fn done(ddir: usize, ms: u64, clat: u64) -> Completion {
        Completion {
            ddir,
            bs: 4096,
            offset: 8192,
            at: Nanos(ms * 1_000_000 + 300_000),
            lat: clat + 1000,
            clat,
            prio: 0x2000,
        }
    }

    /// log_avg_msec=100 with a fake clock: one line per window and direction, at the time the
    /// window closed, the mean rounded half up, bs/offset/prio 0; the rest at finish.
    #[test]
    fn windows_average_as_fio_does() {
        let j = job("[d]\nwrite_lat_log\nlog_avg_msec=100\nlog_offset=1\n");
        let mut l = IoLogs::for_clone(&j, 1, 16);
        for (d, ms, clat) in [
            (0, 10, 100),
            (0, 60, 201),
            (1, 70, 5000),
            (0, 99, 300),
            (0, 100, 999),
            (0, 150, 10),
            (1, 230, 7000),
            (0, 250, 20),
        ] {
            l.completed(done(d, ms, clat));
        }
        l.finish(Nanos(260_000_000));
        let clat = &l.clat.as_ref().unwrap().samples;
        assert_eq!(
            IoLogs::text(clat, true, false),
            // (100+201+300+999)/4 = 400; write's window 70..230 has lasted 100 ms at 230; at
            // 250 the read window (150, 250) closes, its start was 100.
            "100, 400, 0, 0, 0, 0\n230, 6000, 1, 0, 0, 0\n250, 15, 0, 0, 0, 0\n"
        );
        let lat = &l.lat.as_ref().unwrap().samples;
        assert_eq!(lat[0].val, 1400);
        assert!(l.slat.as_ref().unwrap().samples.is_empty());
    }

    #[test]
    fn log_max_value_logs_the_maximum_and_finish_closes_open_windows() {
        let j = job("[d]\nwrite_lat_log\nlog_avg_msec=50\nlog_max_value=1\n");
        let mut l = IoLogs::for_clone(&j, 1, 16);
        for (d, ms, clat) in [(0, 1, 7), (0, 20, 90), (0, 49, 3), (1, 10, 4)] {
            l.completed(done(d, ms, clat));
        }
        l.finish(Nanos(49_900_000));
        let clat = &l.clat.as_ref().unwrap().samples;
        assert_eq!(
            IoLogs::text(clat, false, false),
            "49, 90, 0, 0, 0\n49, 4, 1, 0, 0\n"
        );
    }

    /// Averaged bw/iops: rates over the time since the last sample, sampled once avg_msec has
    /// passed (KiB/s and I/Os per second); bw without log_avg_msec stays per I/O.
    #[test]
    fn averaged_bw_and_iops_are_rates() {
        let j = job("[d]\nwrite_bw_log\nwrite_iops_log\nlog_avg_msec=100\n");
        let mut l = IoLogs::for_clone(&j, 1, 64);
        for ms in (5..=200).step_by(5) {
            l.completed(done(0, ms, 1000));
        }
        l.finish(Nanos(201_000_000));
        let bw = &l.bw.as_ref().unwrap().samples;
        let iops = &l.iops.as_ref().unwrap().samples;
        // 20 I/Os of 4 KiB in 100 ms: 800 KiB/s, 200 IOPS.
        assert_eq!(
            IoLogs::text(bw, false, false),
            "100, 800, 0, 0, 0\n200, 800, 0, 0, 0\n"
        );
        assert_eq!(
            IoLogs::text(iops, false, false),
            "100, 200, 0, 0, 0\n200, 200, 0, 0, 0\n"
        );
        let j = job("[d]\nwrite_bw_log\n");
        let mut l = IoLogs::for_clone(&j, 1, 4);
        l.completed(done(0, 5, 1000));
        l.completed(done(0, 6, 1000));
        l.finish(Nanos(7_000_000));
        assert_eq!(l.bw.as_ref().unwrap().samples.len(), 2);
    }
}
