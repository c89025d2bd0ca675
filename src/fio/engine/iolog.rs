//! fio's per-I/O logs: write_lat_log, write_bw_log and write_iops_log.
//!
//! Why it exists: plots of fio runs (fio_generate_plots, fiologparser) read these files, so
//! their names and lines are fio 3.33's: `PREFIX_TYPE.N.log` (N the clone's thread number, 1-based
//! over the run; without `.N` when per_job_logs=0, when the clones append to one file, as fio
//! does), PREFIX the option's value or the job name,
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
//! write_hist_log with log_hist_msec=N (fio's clat_hist_log, add_clat_sample and
//! flush_hist_samples): `PREFIX_clat_hist.N.log`, per direction one line once N ms have passed
//! since the direction's window opened (its first completion at 1 ms or later opens it; each
//! window then starts N ms after the last one, as fio's hist_last), written at that
//! completion: `msec, ddir, bs, b0, b1, ...`, bs the completing I/O's, the b's the window's
//! clat counts in fio's 1856 buckets (`probe::histogram`'s layout), each 2^log_hist_coarseness
//! neighbours summed (1856 >> c of them). Counts are kept only with clat_percentiles (fio's
//! io_u_plat), so without it the lines hold zeros; what is left of a window at the end is
//! dropped, as fio does. Without log_hist_msec, or without clat (disable_clat, gtod_reduce),
//! the file is written empty, as fio's.
//! Invariant: recording a sample never allocates while the capacity reserved before the clock
//! started lasts (the job's expected I/Os, at most 2^18 per log, 8 MiB; for the histogram log,
//! runtime / log_hist_msec lines per direction, at most 8 MiB); beyond it the list grows as
//! fio's log chunks do.

use crate::fio::jobfile::JobSpec;
use crate::fio::jobfile::cmdprio::{CLASS_RT, CLASS_SHIFT};
use crate::probe::clock::Nanos;
use crate::probe::histogram::{PLAT_NR, value_to_index};
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

/// fio's DDIR_RWDIR_CNT: read, write, trim.
const HIST_DIRS: usize = 3;

/// The clat histogram log (fio's clat_hist_log).
#[derive(Debug)]
struct HistLog {
    path: PathBuf,
    /// log_hist_msec (0: no lines).
    msec: u64,
    /// log_hist_coarseness: 2^c buckets a column.
    coarseness: u32,
    /// fio's ts.clat_percentiles: buckets are counted only then.
    count: bool,
    /// Per direction, the clat counts since its last line (fio's io_u_plat minus the copy
    /// taken at that line).
    win: Box<[[u64; PLAT_NR]; HIST_DIRS]>,
    /// Per direction, the start (ms) of the open window; 0 until a completion at 1 ms or
    /// later (fio's hist_last).
    last: [u64; HIST_DIRS],
    /// The lines, each `msec, ddir, bs` and then the columns, flat.
    rows: Vec<u64>,
}

impl HistLog {
    fn new(path: PathBuf, job: &JobSpec) -> HistLog {
        let cols = PLAT_NR >> job.log_hist_coarseness;
        let lines = match (job.log_hist_msec, job.runtime) {
            (0, _) => 0,
            (m, Some(r)) => (r.as_millis() as u64 / m + 1) * HIST_DIRS as u64,
            (_, None) => 64,
        };
        let cap = (lines as usize * (cols + 3)).min(1 << 20);
        HistLog {
            path,
            // fio adds histogram samples where it measures clat (add_clat_sample), but
            // writes the file all the same: empty without clat (disable_clat, gtod_reduce).
            msec: if job.disable_clat {
                0
            } else {
                job.log_hist_msec
            },
            coarseness: job.log_hist_coarseness,
            count: job.clat_percentiles,
            win: vec![[0; PLAT_NR]; HIST_DIRS]
                .into_boxed_slice()
                .try_into()
                .expect("HIST_DIRS rows"),
            last: [0; HIST_DIRS],
            rows: Vec::with_capacity(cap),
        }
    }

    /// Columns a line carries after `msec, ddir, bs`.
    fn cols(&self) -> usize {
        PLAT_NR >> self.coarseness
    }

    /// One completion's clat (fio's add_clat_sample, its hist_msec part).
    #[inline]
    fn add(&mut self, ddir: usize, ms: u64, bs: u64, clat: u64) {
        if self.msec == 0 || ddir >= HIST_DIRS {
            return;
        }
        if self.count {
            self.win[ddir][value_to_index(clat)] += 1;
        }
        if self.last[ddir] == 0 {
            self.last[ddir] = ms;
        }
        let this_window = ms.saturating_sub(self.last[ddir]);
        if this_window < self.msec {
            return;
        }
        let stride = 1usize << self.coarseness;
        self.rows.extend_from_slice(&[ms, ddir as u64, bs]);
        let win = &mut self.win[ddir];
        self.rows
            .extend(win.chunks_exact(stride).map(|c| c.iter().sum::<u64>()));
        win.fill(0);
        // fio: the window's start moves on by msec, keeping the drift.
        self.last[ddir] = ms - (this_window - self.msec);
    }

    /// The file's text (fio's flush_hist_samples).
    fn text(&self, epoch_ms: u64) -> String {
        let width = self.cols() + 3;
        let mut out = String::with_capacity(self.rows.len() * 3);
        for row in self.rows.chunks_exact(width) {
            for (i, v) in row.iter().enumerate() {
                let sep = if i + 1 == width { "\n" } else { ", " };
                // The first column is the time.
                let v = if i == 0 { v + epoch_ms } else { *v };
                let _ = write!(out, "{v}{sep}");
            }
        }
        out
    }
}

/// The logs of one clone.
#[derive(Debug, Default)]
pub struct IoLogs {
    lat: Option<Log>,
    slat: Option<Log>,
    clat: Option<Log>,
    bw: Option<Log>,
    iops: Option<Log>,
    hist: Option<HistLog>,
    /// per_job_logs=0: the clones share each file and append to it (fio's flush_log with
    /// do_append), so it holds every clone's lines, and whatever it held before.
    append: bool,
    offset: bool,
    log_prio: bool,
    /// Some when the bw/iops logs are averaged (log_avg_msec > 0).
    rate: Option<RateSampler>,
    avg_msec: u64,
    /// log_unix_epoch: added to every line's time when written (fio's alternate_epoch).
    epoch_ms: u64,
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
            hist: job
                .hist_log
                .as_ref()
                .map(|p| HistLog::new(log_name(p, job, "clat_hist", thread_number), job)),
            append: !job.per_job_logs,
            offset: job.log_offset,
            log_prio: job.log_prio,
            rate: (job.log_avg_msec > 0).then(RateSampler::default),
            avg_msec: job.log_avg_msec,
            epoch_ms: 0,
        }
    }

    /// log_unix_epoch: the Unix time (ms) at which the clone's measured time started, added
    /// to each line's time when the logs are written, as fio stores `t + alternate_epoch`.
    pub fn set_epoch_ms(&mut self, ms: u64) {
        self.epoch_ms = ms;
    }

    /// The files [`write`](Self::write) writes, in its order.
    pub fn paths(&self) -> Vec<PathBuf> {
        [&self.lat, &self.slat, &self.clat, &self.bw, &self.iops]
            .into_iter()
            .flatten()
            .map(|l| l.path.clone())
            .chain(self.hist.as_ref().map(|h| h.path.clone()))
            .collect()
    }

    /// Whether any log is kept (the loops skip the call otherwise).
    #[inline]
    pub fn active(&self) -> bool {
        self.lat.is_some()
            || self.slat.is_some()
            || self.clat.is_some()
            || self.bw.is_some()
            || self.iops.is_some()
            || self.hist.is_some()
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
        if let Some(h) = &mut self.hist {
            h.add(c.ddir, base.ms, c.bs as u64, c.clat);
        }
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
    fn text(samples: &[Sample], offset: bool, log_prio: bool, epoch_ms: u64) -> String {
        let mut out = String::with_capacity(samples.len() * 24);
        for s in samples {
            let _ = write!(
                out,
                "{}, {}, {}, {}, ",
                s.ms + epoch_ms,
                s.val,
                s.ddir,
                s.bs
            );
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
            let text = Self::text(&l.samples, self.offset, self.log_prio, self.epoch_ms);
            self.put(&l.path, &text)?;
        }
        if let Some(h) = &self.hist {
            self.put(&h.path, &h.text(self.epoch_ms))?;
        }
        Ok(())
    }

    /// Write one file: replaced, or appended to when the clones share it (one write(2) each,
    /// so concurrent clones' texts do not interleave).
    fn put(&self, path: &std::path::Path, text: &str) -> Result<(), WorkloadError> {
        use std::io::Write as _;
        let r = if self.append {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(text.as_bytes()))
        } else {
            std::fs::write(path, text)
        };
        r.map_err(|e| WorkloadError::io("write log", path, e))
    }
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
        assert_eq!(l.paths(), [PathBuf::from("x_bw.log")]);
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
        assert_eq!(
            IoLogs::text(bw, false, false, 0),
            "7, 752655, 0, 65536, 0\n"
        );
        assert_eq!(
            IoLogs::text(bw, true, false, 0),
            "7, 752655, 0, 65536, 65536, 0\n"
        );
        let lat = &l.lat.as_ref().unwrap().samples;
        assert_eq!(
            IoLogs::text(lat, false, false, 0),
            "7, 90000, 0, 65536, 0\n"
        );
        // log_unix_epoch: the epoch's milliseconds are added to the time.
        assert_eq!(
            IoLogs::text(lat, false, false, 1_000_000),
            "1000007, 90000, 0, 65536, 0\n"
        );
        assert!(l.slat.as_ref().unwrap().samples.is_empty());
        l.submitted(1, 4096, 0, Nanos(1_000_000), 1234, 0x2000);
        let slat = &l.slat.as_ref().unwrap().samples;
        assert_eq!(IoLogs::text(slat, false, false, 0), "1, 1234, 1, 4096, 1\n");
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
            IoLogs::text(clat, false, false, 0),
            "3, 9, 0, 4096, 0\n3, 9, 0, 4096, 1\n3, 9, 0, 4096, 1\n3, 9, 0, 4096, 0\n"
        );
        assert_eq!(
            IoLogs::text(&clat[..2], false, true, 0),
            "3, 9, 0, 4096, 0x6000\n3, 9, 0, 4096, 0x2000\n"
        );
        assert_eq!(
            IoLogs::text(&clat[3..], true, true, 0),
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
    /// per_job_logs=0: every clone appends to the one file, and so does a later run (fio 3.33
    /// run twice with numjobs=2 leaves 32 and then 64 lines of a 16-I/O job).
    #[test]
    fn shared_logs_are_appended_to() {
        let d = tempfile::tempdir().unwrap();
        let j = job("[d]\nwrite_iops_log\nper_job_logs=0\n");
        for n in 1..=3 {
            let mut l = IoLogs::for_clone(&j, n, 1);
            l.iops.as_mut().unwrap().path = d.path().join("d_iops.log");
            l.completed(done(0, n, 10));
            l.write().unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(d.path().join("d_iops.log")).unwrap(),
            "1, 1, 0, 4096, 1\n2, 1, 0, 4096, 1\n3, 1, 0, 4096, 1\n"
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
            IoLogs::text(clat, true, false, 0),
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
            IoLogs::text(clat, false, false, 0),
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
            IoLogs::text(bw, false, false, 0),
            "100, 800, 0, 0, 0\n200, 800, 0, 0, 0\n"
        );
        assert_eq!(
            IoLogs::text(iops, false, false, 0),
            "100, 200, 0, 0, 0\n200, 200, 0, 0, 0\n"
        );
        let j = job("[d]\nwrite_bw_log\n");
        let mut l = IoLogs::for_clone(&j, 1, 4);
        l.completed(done(0, 5, 1000));
        l.completed(done(0, 6, 1000));
        l.finish(Nanos(7_000_000));
        assert_eq!(l.bw.as_ref().unwrap().samples.len(), 2);
    }

    /// The clat histogram log: fio's name, a line per direction once log_hist_msec has passed
    /// since its window opened (the first completion at 1 ms or later opens it), drift kept,
    /// `msec, ddir, bs` and 1856 >> c columns of summed neighbouring buckets, the window
    /// emptied at each line, nothing written for what is left at the end.
    #[test]
    fn the_histogram_log_is_fios() {
        let j = job("[d]\nwrite_hist_log=h\nlog_hist_msec=100\nlog_hist_coarseness=2\n");
        let mut l = IoLogs::for_clone(&j, 2, 16);
        assert_eq!(
            l.hist.as_ref().unwrap().path,
            PathBuf::from("h_clat_hist.2.log")
        );
        // (ddir, ms, clat): 0 ms does not open the read window, 5 ms does; 105 closes it
        // (100 ms), the next opens at 105 and 230 closes it (125 ms, the drift kept: 205).
        for (d, ms, clat) in [
            (0, 0, 3),
            (0, 5, 5),
            (1, 7, 200),
            (0, 50, 130),
            (0, 105, 4),
            (0, 230, 7),
            (0, 240, 7),
        ] {
            let mut c = done(d, ms, clat);
            c.at = Nanos(ms * 1_000_000 + 300_000);
            l.completed(c);
        }
        l.finish(Nanos(300_000_000));
        let h = l.hist.as_ref().unwrap();
        assert_eq!(h.cols(), 464);
        assert_eq!(h.last[0], 205);
        let text = h.text(0);
        let lines: Vec<Vec<u64>> = text
            .lines()
            .map(|l| l.split(", ").map(|v| v.parse().unwrap()).collect())
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        for l in &lines {
            assert_eq!(l.len(), 467);
        }
        assert_eq!(&lines[0][..3], &[105, 0, 4096]);
        assert_eq!(&lines[1][..3], &[230, 0, 4096]);
        // Window one: 3, 5, 4 (buckets 0..=7 in column 0 and 1), 130 (bucket 129 -> column 32).
        let mut want = vec![0u64; 464];
        want[value_to_index(3) >> 2] += 1;
        want[value_to_index(5) >> 2] += 1;
        want[value_to_index(4) >> 2] += 1;
        want[value_to_index(130) >> 2] += 1;
        assert_eq!(&lines[0][3..], &want[..]);
        assert_eq!(want[0] + want[1], 3);
        let mut want = vec![0u64; 464];
        want[value_to_index(7) >> 2] = 1;
        assert_eq!(&lines[1][3..], &want[..]);
        // The write direction never lasted 100 ms: no line. The trailing 240 ms read is not
        // written.
        assert!(text.ends_with(", 0\n"));
        // Coarseness 0 keeps every bucket; clat_percentiles=0 writes zeros; no
        // log_hist_msec: an empty file.
        let j = job("[d]\nwrite_hist_log\nlog_hist_msec=10\nclat_percentiles=0\n");
        let mut l = IoLogs::for_clone(&j, 1, 4);
        l.completed(done(1, 1, 9));
        l.completed(done(1, 11, 9));
        let h = l.hist.as_ref().unwrap();
        assert_eq!(h.path, PathBuf::from("d_clat_hist.1.log"));
        let line = h.text(0);
        assert_eq!(line.matches(", ").count(), 1858, "{line}");
        assert!(line.starts_with("11, 1, 4096, 0, 0,"));
        assert!(
            line.trim_end().split(", ").skip(3).all(|v| v == "0"),
            "{line}"
        );
        let j = job("[d]\nwrite_hist_log\n");
        let mut l = IoLogs::for_clone(&j, 1, 4);
        l.completed(done(0, 500, 9));
        assert_eq!(l.hist.as_ref().unwrap().text(0), "");
        // Without clat (disable_clat, gtod_reduce) fio 3.33 writes the file empty.
        for opt in ["disable_clat=1", "gtod_reduce=1"] {
            let j = job(&format!("[d]\nwrite_hist_log\nlog_hist_msec=10\n{opt}\n"));
            let mut l = IoLogs::for_clone(&j, 1, 4);
            l.completed(done(0, 5, 9));
            l.completed(done(0, 50, 9));
            assert_eq!(l.hist.as_ref().unwrap().text(0), "", "{opt}");
        }
        // fio's option range.
        let e = crate::fio::jobfile::parse_job_text(
            "[d]\nlog_hist_coarseness=7\n",
            "t.fio",
            &crate::fio::jobfile::SystemSources,
        )
        .unwrap_err();
        assert!(e.to_string().contains("log_hist_coarseness"), "{e}");
    }
}
