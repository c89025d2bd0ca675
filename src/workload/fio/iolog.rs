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

#[derive(Debug)]
struct Log {
    path: PathBuf,
    samples: Vec<Sample>,
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
                l.samples.push(Sample { val, ..base });
            }
        };
        push(&mut self.lat, c.lat);
        push(&mut self.clat, c.clat);
        let bw = (c.bs as u64 * 1_000_000).checked_div(c.clat).unwrap_or(0);
        push(&mut self.bw, bw);
        push(&mut self.iops, 1);
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
            l.samples.push(Sample {
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
}
