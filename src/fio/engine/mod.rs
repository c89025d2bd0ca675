//! The native fio-compatible engine: runs the jobs of a fio job file the way fio 3.33 does and
//! measures what fio measures.
//!
//! Why it exists: fio is the I/O benchmark storage developers trust; `fsdelta fio` and suites
//! run existing job files without the external tool, and produce fio's metrics (`write_iops`,
//! `read_clat_ns_p99`, ...) from fio-layout histograms, so our p99 and fio's p99 of the same
//! latencies are the same number. Semantics live in `worker` (the timed loop), `files` (layout,
//! alignment), `rand` (fio's generators); this module runs jobs in fio's order (all concurrently
//! except across `stonewall`), one thread per clone (`numjobs`; fio's `thread` is always on),
//! assigns reporting groups, and turns the stats into metrics. With `--status-interval`, a
//! monitor thread (`status`) collects every clone's stats so far and reports them as it goes.
//! Run as a suite's workload, the jobs write their logs (write_lat_log, ...) into the sample's
//! directory, and the sample keeps them as `fio_log:` attachments for the report.
//!
//! What it must never do: print (results go to `crate::fio::output` or the store), or run a job
//! differently from its file. Deliberate differences from fio are documented where they are made
//! and listed in `fsdelta fio --help`: threads only; layout writes 1 MiB chunks of our own
//! pseudo-random bytes; io_uring and libaio drain before an owed fsync and an openfiles
//! rotation; rw=rw with loops > 1 may split directions slightly differently after a wrap.
//! Everything else (I/O counts per direction, offsets, rwmix, syncs) is checked equal to fio
//! 3.33's by `tests/fio_cli.rs` when /usr/bin/fio is installed.

pub mod aio;
pub mod clock;
pub mod disk;
pub mod eta;
pub mod files;
pub mod iolog;
pub mod mmap;
pub mod numa;
pub mod ops;
pub mod pace;
pub mod posixaio;
pub mod prio;
pub mod rand;
pub mod rate;
pub mod replay;
pub mod splice;
pub mod stats;
pub mod status;
pub mod steady;
pub mod verify;
pub mod vlog;
pub mod vstate;
pub mod vsync;
pub mod worker;
pub mod write_iolog;
pub mod zbd;

use crate::fio::jobfile::{self, JobFileError, JobSet, JobSpec, Sources};
use crate::fio::metrics;
use crate::probe::clock::Nanos;
use crate::workload::{Measurements, RunContext, Workload, WorkloadError};
use stats::{READ, ThreadStats, WRITE};
use std::path::Path;

/// Version string of the engine, for fio's `"fio version"` field.
pub fn version_string() -> String {
    format!(
        "fsdelta-fio-{} (fio 3.33 compatible)",
        env!("CARGO_PKG_VERSION")
    )
}

/// One reported job: a clone, or (group_reporting) every clone of a group merged.
#[derive(Clone, Debug)]
pub struct JobResult {
    /// Index of the job in the job set (the first job of the group when merged).
    pub job_index: usize,
    /// The job whose `job options` the JSON lists: with group_reporting the group's last
    /// (fio's __show_run_stats keeps the opt_list of each td it merges, so the last wins).
    pub options_index: usize,
    /// fio's `jobname`.
    pub name: String,
    /// fio's `groupid`.
    pub groupid: u32,
    /// Clones merged into this entry (1 without group_reporting).
    pub clones: u32,
    /// The measurements.
    pub stats: ThreadStats,
    /// Wall seconds from the start of the run to the end of this job (fio's `elapsed`).
    pub elapsed_s: u64,
}

/// Everything one run of a job set measured.
#[derive(Clone, Debug)]
pub struct FioRun {
    /// The jobs as parsed (options and percentile lists for the report).
    pub set: JobSet,
    /// Reported jobs in order.
    pub results: Vec<JobResult>,
    /// Unix time the run started, in ms.
    pub started_unix_ms: u64,
    /// Wall time of the whole run, layout included.
    pub elapsed: Nanos,
    /// Counters of the block devices holding the files (fio's `disk_util`); empty where the
    /// files are on no block device, or every job is filecreate's (diskless, as in fio).
    pub disk_util: Vec<disk::DiskUtil>,
}

impl FioRun {
    /// The job spec a result belongs to.
    pub fn spec(&self, r: &JobResult) -> &JobSpec {
        &self.set.jobs[r.job_index]
    }
}

/// fio's `--status-interval`: where the cumulative stats go while the jobs run.
pub struct StatusReport<'a> {
    /// How often (fio's status_interval; at least a millisecond).
    pub every: std::time::Duration,
    /// Gets every job's stats so far (a finished job's final ones, zeros for a job not
    /// started), with the runtimes up to now.
    pub report: &'a (dyn Fn(&FioRun) + Sync),
}

/// fio's ETA line (`--eta=always`): handed to `print` about every second while the jobs run
/// ([`eta::line`]), each ending in `\r` as fio's.
pub struct EtaReport<'a> {
    /// Gets each line.
    pub print: &'a (dyn Fn(&str) + Sync),
}

/// A fio job set bound to run as a [`Workload`].
#[derive(Clone, Debug)]
pub struct FioWorkload {
    set: JobSet,
}

impl FioWorkload {
    /// From validated jobs.
    pub fn new(set: JobSet) -> FioWorkload {
        FioWorkload { set }
    }

    /// From job-file text (as a suite holds it inline, or read from a file named `origin`);
    /// `include` and `${VAR}` go through `sources`.
    pub fn from_job_text(
        text: &str,
        origin: &str,
        sources: &dyn Sources,
    ) -> Result<FioWorkload, JobFileError> {
        Ok(FioWorkload::new(jobfile::parse_job_text(
            text, origin, sources,
        )?))
    }

    /// From a job file on disk (`include` resolved beside it, `${VAR}` from the environment).
    pub fn from_job_file(path: &Path) -> Result<FioWorkload, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        FioWorkload::from_job_text(&text, &path.display().to_string(), &jobfile::SystemSources)
            .map_err(|e| e.to_string())
    }

    /// The jobs.
    pub fn jobs(&self) -> &JobSet {
        &self.set
    }

    /// Whether any job uses O_DIRECT (a suite skips such a test where
    /// [`files::probe_direct`] says the target rejects it).
    pub fn needs_direct(&self) -> bool {
        self.set.jobs.iter().any(|j| j.direct)
    }

    /// Whether every job only reads files that exist and writes nothing beside them, so that
    /// the jobs can run on a read-only filesystem (erofs): no write direction, an engine that
    /// only reads or stats, no verify and no per-I/O log files. (A file that is missing or
    /// shorter than the job would be laid out, which a read-only filesystem refuses with the
    /// file's name.)
    pub fn reads_only(&self) -> bool {
        use crate::fio::jobfile::IoEngine as E;
        self.set.jobs.iter().all(|j| {
            !j.rw.writes()
                && !j.rw.trims()
                && matches!(
                    j.ioengine,
                    E::Psync
                        | E::Sync
                        | E::Pvsync
                        | E::Pvsync2
                        | E::IoUring
                        | E::Libaio
                        | E::FileStat
                )
                && !j.verify
                && j.lat_log.is_none()
                && j.bw_log.is_none()
                && j.iops_log.is_none()
                && j.hist_log.is_none()
        })
    }

    /// Run every job in `ctx.dir` (relative `directory=`/`filename=` resolve against it) and
    /// return fio's full results.
    pub fn execute(&self, ctx: &RunContext<'_>) -> Result<FioRun, WorkloadError> {
        execute(&self.set, ctx, None, None)
    }

    /// [`execute`](Self::execute) with fio's `--status-interval` reports and its ETA line,
    /// either or both.
    pub fn execute_with(
        &self,
        ctx: &RunContext<'_>,
        status: Option<&StatusReport<'_>>,
        eta: Option<&EtaReport<'_>>,
    ) -> Result<FioRun, WorkloadError> {
        execute(&self.set, ctx, status, eta)
    }

    /// [`execute`](Self::execute), handing the run so far to `status.report` every
    /// `status.every` while the jobs run (fio's `--status-interval`).
    pub fn execute_with_status(
        &self,
        ctx: &RunContext<'_>,
        status: &StatusReport<'_>,
    ) -> Result<FioRun, WorkloadError> {
        execute(&self.set, ctx, Some(status), None)
    }
}

impl Workload for FioWorkload {
    fn engine(&self) -> &'static str {
        "fio"
    }

    fn run(&self, ctx: &RunContext<'_>) -> Result<Measurements, WorkloadError> {
        let set = logs_into(&self.set, ctx.dir);
        // A log the clones append to (per_job_logs=0) starts empty in the sample's directory,
        // so the sample keeps its own lines only.
        for path in log_paths(&set) {
            if path.starts_with(ctx.dir) {
                match std::fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(WorkloadError::io("remove old log", path, e));
                    }
                    _ => {}
                }
            }
        }
        let run = execute(&set, ctx, None, None)?;
        // A job that ended in error (a missed rate_min, an I/O error continue_on_error does
        // not continue on) fails the sample, naming it.
        if let Some((r, e)) = run
            .results
            .iter()
            .find_map(|r| r.stats.error.as_ref().map(|e| (r, e)))
        {
            let hint = if e.errno == libc::EIO && e.verror.contains("check_min_rate") {
                "lower the minimum rate or use a faster target"
            } else {
                "fix the target, or let continue_on_error= and ignore_error= continue on this errno"
            };
            return Err(WorkloadError::InvalidOptions(format!(
                "fio job '{}': {} (fio fails the job with errno {}, {}): {hint}",
                r.name, e.message, e.errno, e.verror
            )));
        }
        let mut m = measurements(&run);
        m.attachments = log_attachments(&set, ctx)?;
        Ok(m)
    }
}

/// The name of a kept fio log is this and its file name (`fio_log:x_clat.1.log`).
pub const FIO_LOG_ATTACHMENT: &str = "fio_log:";

/// `set` with every relative log prefix (write_lat_log, write_bw_log, write_iops_log,
/// write_hist_log; none given means the job's name), a relative write_iolog= and the verify
/// state files (aux_path) under `dir`, so that a suite's sample writes its logs into its own
/// work directory, not wherever fsdelta was started.
fn logs_into(set: &JobSet, dir: &Path) -> JobSet {
    let mut set = set.clone();
    for j in &mut set.jobs {
        let name = j.name.clone();
        // write_iolog= and the verify state files (fio's aux_path) go there too.
        if let Some(p) = &mut j.write_iolog {
            if Path::new(p.as_str()).is_relative() {
                *p = dir.join(p.as_str()).to_string_lossy().into_owned();
            }
        }
        match &mut j.aux_path {
            Some(p) if Path::new(p.as_str()).is_relative() => {
                *p = dir.join(p.as_str()).to_string_lossy().into_owned();
            }
            Some(_) => {}
            None => j.aux_path = Some(dir.to_string_lossy().into_owned()),
        }
        for p in [
            &mut j.lat_log,
            &mut j.bw_log,
            &mut j.iops_log,
            &mut j.hist_log,
        ]
        .into_iter()
        .flatten()
        {
            let pre = if p.is_empty() {
                name.as_str()
            } else {
                p.as_str()
            };
            if Path::new(pre).is_relative() {
                *p = dir.join(pre).to_string_lossy().into_owned();
            }
        }
    }
    set
}

/// The logs the jobs of `set` wrote, each kept as a `text-gz` attachment named
/// [`FIO_LOG_ATTACHMENT`] and its file name (cut at the attachments' size limit, which the
/// reader notices). A log that was not written (a job that never started) is a warning, not a
/// failure.
fn log_attachments(
    set: &JobSet,
    ctx: &RunContext<'_>,
) -> Result<Vec<crate::model::Attachment>, WorkloadError> {
    let mut out: Vec<crate::model::Attachment> = Vec::new();
    for path in log_paths(set) {
        let name = format!(
            "{FIO_LOG_ATTACHMENT}{}",
            path.file_name().unwrap_or_default().to_string_lossy()
        );
        if out.iter().any(|a| a.name == name) {
            continue;
        }
        match std::fs::read(&path) {
            Ok(text) => out.push(crate::model::Attachment::text_gz(&name, &text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => ctx
                .progress
                .warning(&format!("fio log {} was not written", path.display())),
            Err(e) => return Err(WorkloadError::io("read log", path, e)),
        }
    }
    Ok(out)
}

/// Every log file the clones of `set` write, once each (per_job_logs=0: the clones share
/// one), in job and clone order. Thread numbers count the clones in job order, as `execute`
/// numbers them.
fn log_paths(set: &JobSet) -> Vec<std::path::PathBuf> {
    let mut out: Vec<std::path::PathBuf> = Vec::new();
    let mut thread_number = 0u64;
    for job in &set.jobs {
        for _ in 0..job.numjobs {
            thread_number += 1;
            for path in iolog::IoLogs::for_clone(job, thread_number, 0).paths() {
                if !out.contains(&path) {
                    out.push(path);
                }
            }
        }
    }
    out
}

/// fio's reporting groups: a job with `stonewall` or `new_group` (other than the first)
/// starts a new group.
pub fn group_ids(set: &JobSet) -> Vec<u32> {
    let mut g = 0u32;
    set.jobs
        .iter()
        .enumerate()
        .map(|(i, j)| {
            if i > 0 && (j.stonewall || j.new_group) {
                g += 1;
            }
            g
        })
        .collect()
}

/// fio's steady-state helper: once a second, per clone (or per reporting group with
/// group_reporting) of jobs with ss_dur, judge the window; stop those that are steady.
fn steady_monitor(
    clones: Vec<(&JobSpec, usize)>,
    groups: &[u32],
    progress: &[steady::Progress],
    left: &std::sync::atomic::AtomicUsize,
) {
    use std::sync::atomic::Ordering;
    // Units: (window, members, ramp).
    let mut units: Vec<(steady::Window, Vec<usize>, std::time::Duration, Option<u32>)> = Vec::new();
    for (i, (job, ji)) in clones.iter().enumerate() {
        if job.ss_dur.is_zero() {
            continue;
        }
        let key = job.group_reporting.then_some(groups[*ji]);
        if let Some(u) = units.iter_mut().find(|u| key.is_some() && u.3 == key) {
            u.1.push(i);
            continue;
        }
        units.push((
            steady::Window::new(job.ss, job.ss_dur.as_secs()),
            vec![i],
            job.ss_ramp,
            key,
        ));
    }
    let t0 = std::time::Instant::now();
    let mut last = t0;
    let mut attained = vec![false; units.len()];
    while left.load(Ordering::SeqCst) > 0 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        if last.elapsed() < std::time::Duration::from_secs(1) {
            continue;
        }
        let elapsed_ms = last.elapsed().as_millis() as u64;
        last = std::time::Instant::now();
        for (ui, (w, members, ramp, _)) in units.iter_mut().enumerate() {
            if attained[ui] {
                continue;
            }
            let (ios, bytes) = members.iter().fold((0, 0), |(a, b), &m| {
                let (i, y) = progress[m].totals();
                (a + i, b + y)
            });
            // fio starts recording one second after ss_ramp.
            if t0.elapsed() < *ramp + std::time::Duration::from_secs(1) {
                w.skip(ios, bytes);
                continue;
            }
            if w.sample(ios, bytes, elapsed_ms) {
                attained[ui] = true;
                for &m in members.iter() {
                    progress[m].stop();
                }
            }
        }
    }
}

/// One clone, planned before anything runs.
struct Planned<'a> {
    job_index: usize,
    job: &'a JobSpec,
    plan: files::ClonePlan,
    /// The clone whose files are planned when its batch starts.
    deferred: Option<u32>,
    thread_number: u64,
    mem_align: usize,
}

struct CloneOut {
    job_index: usize,
    stats: ThreadStats,
    end: Nanos,
}

/// Whether job `ji` runs after a stonewall (in a later batch than the first job).
fn behind_stonewall(set: &JobSet, ji: usize) -> bool {
    (1..=ji).any(|k| set.jobs[k].stonewall)
}

/// Plan every clone of every job, in order (fio's thread numbers), with its zones and, for
/// O_DIRECT, its alignment checked; a job behind a stonewall whose files do not exist yet is
/// planned when its batch starts.
fn plan_clones<'s>(
    set: &'s JobSet,
    ctx: &RunContext<'_>,
) -> Result<(Vec<Planned<'s>>, zbd::Registry), WorkloadError> {
    let mut planned: Vec<Planned<'_>> = Vec::new();
    let mut thread_number = 0u64;
    let mut zones = zbd::Registry::default();
    for (ji, job) in set.jobs.iter().enumerate() {
        for clone in 0..job.numjobs {
            thread_number += 1;
            let seeds = rand::job_seeds(job, thread_number);
            let mut plan = match files::plan_clone(job, clone, ctx.dir, &seeds) {
                Ok(plan) => plan,
                // A job after a stonewall may read what an earlier one writes (fio sets each
                // job's files up when it starts): its files are planned when its batch starts.
                Err(_) if behind_stonewall(set, ji) => {
                    planned.push(Planned {
                        job_index: ji,
                        job,
                        plan: files::ClonePlan::default(),
                        deferred: Some(clone),
                        thread_number,
                        mem_align: 4096,
                    });
                    continue;
                }
                Err(e) => return Err(e),
            };
            for note in zones.add(job, &mut plan)? {
                ctx.progress.warning(&note);
            }
            let mut mem_align = 4096;
            if job.direct {
                let probe_dir = plan
                    .files
                    .first()
                    .and_then(|f| f.path.parent())
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| ctx.dir.to_path_buf());
                std::fs::create_dir_all(&probe_dir)
                    .map_err(|e| WorkloadError::io("mkdir", &probe_dir, e))?;
                // ext4 and others report the O_DIRECT alignment of regular files only: ask
                // the job's file when it exists (a device too), else a probe file beside it.
                let (off_align, m) = match plan.files.first() {
                    Some(f) if f.path.exists() => files::dio_alignment(&f.path),
                    _ => files::dio_alignment_in(&probe_dir),
                };
                mem_align = m.max(4096);
                files::check_direct_alignment(job, &plan, off_align)?;
            }
            planned.push(Planned {
                job_index: ji,
                job,
                plan,
                deferred: None,
                thread_number,
                mem_align,
            });
        }
    }
    Ok((planned, zones))
}

/// `set` with every read_iolog= job prepared for its replay ([`replay::prepare`]): fio's
/// messages for the lines it skips are warnings; a log that names a file the job may not
/// touch, or writes under `--readonly`, is an error before any I/O.
fn replay_set(set: &JobSet, ctx: &RunContext<'_>) -> Result<JobSet, WorkloadError> {
    let mut set = set.clone();
    for job in &mut set.jobs {
        if job.read_iolog.is_none() {
            continue;
        }
        let diskless = ops::of(job.ioengine).has(ops::Caps::FAKEIO);
        replay::prepare(job, ctx.dir, diskless).map_err(|e| {
            WorkloadError::InvalidOptions(format!(
                "job '{}': read_iolog={}: {e}",
                job.name,
                job.read_iolog.as_deref().unwrap_or_default()
            ))
        })?;
        if let Some(r) = &job.replay {
            for note in &r.notes {
                ctx.progress.warning(&format!("job '{}': {note}", job.name));
            }
        }
        if set.read_only && job.rw.writes() {
            return Err(WorkloadError::InvalidOptions(format!(
                "job '{}': --readonly, and the log read_iolog={} replays writes (fio 3.33 skips them and says so; fsdelta refuses): drop --readonly or replay a log of reads",
                job.name,
                job.read_iolog.as_deref().unwrap_or_default()
            )));
        }
    }
    Ok(set)
}

fn execute(
    set: &JobSet,
    ctx: &RunContext<'_>,
    status: Option<&StatusReport<'_>>,
    eta: Option<&EtaReport<'_>>,
) -> Result<FioRun, WorkloadError> {
    let t0 = Nanos::now();
    let started_unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    // read_iolog=: each replaying job rewritten from its log (its files, direction, size),
    // and every file the log names checked, before anything runs.
    let replayed;
    let set = if set.jobs.iter().any(|j| j.read_iolog.is_some()) {
        replayed = replay_set(set, ctx)?;
        &replayed
    } else {
        set
    };
    // Plan every clone (and check O_DIRECT alignment) before anything runs.
    let (mut planned, zones) = plan_clones(set, ctx)?;
    let watch = disk::DiskWatch::start(
        planned
            .iter()
            // fio measures the disk of a job's own files (filename=) before a replay
            // (read_iolog=) replaces them with the log's: none without.
            .filter(|p| {
                !ops::of(p.job.ioengine).has(ops::Caps::DISKLESSIO)
                    && p.job.replay.as_ref().is_none_or(|r| r.own_files)
            })
            .flat_map(|p| p.plan.files.iter())
            .filter_map(|f| f.path.parent()),
    );
    // Every clone's initial buffer generator (dedupe_global shares working sets across them).
    let buf_starts: Vec<rand::Taus> = planned
        .iter()
        .map(|p| {
            let use64 =
                p.job.random_generator == crate::fio::jobfile::RandomGenerator::Tausworthe64;
            rand::Taus::new(
                rand::job_seeds(p.job, p.thread_number)[rand::SEED_BUF],
                use64,
            )
        })
        .collect();
    let buf_starts = &buf_starts[..];
    let flows = pace::Flows::of(&set.jobs);
    let groups_all = group_ids(set);
    let flows = &flows;
    // exitall / exit_what: every clone's end request, by reporting group.
    let exits = rate::Exits::new(
        planned.iter().map(|p| groups_all[p.job_index]).collect(),
        set.jobs.iter().any(|j| j.exitall),
    );
    let exits = &exits;
    let zones = &zones;
    // Every job's clock, decided (and the TSC calibrated) before anything runs; a refused
    // clocksource=cpu is a warning, as the fallback is still a clock.
    for job in &set.jobs {
        if let (_, Some(w)) = clock::JobClock::choose(job.clocksource) {
            ctx.progress.warning(&format!("job '{}': {w}", job.name));
        }
    }
    // --status-interval: every clone's slot, and the monitor that reports them.
    let board = (status.is_some() || eta.is_some()).then(|| status::Board::new(planned.len()));
    let board = board.as_ref();
    let clone_jobs: Vec<usize> = planned.iter().map(|p| p.job_index).collect();
    // fio's total_io_size of each clone, for its ETA.
    let clone_bytes: Vec<u64> = planned
        .iter()
        .map(|p| p.plan.pass_bytes * p.job.loops.max(1) as u64)
        .collect();
    let finished = std::sync::atomic::AtomicBool::new(false);
    let mut outs: Vec<CloneOut> = Vec::with_capacity(planned.len());
    let ran = std::thread::scope(|outer| {
        if let (Some(sr), Some(board)) = (status, board) {
            let (clone_jobs, finished, watch) = (&clone_jobs, &finished, &watch);
            let cancel = ctx.cancel;
            outer.spawn(move || {
                status_monitor(
                    set,
                    clone_jobs,
                    board,
                    watch,
                    (t0, started_unix_ms),
                    sr,
                    &|| finished.load(std::sync::atomic::Ordering::SeqCst) || cancel.is_cancelled(),
                )
            });
        }
        if let (Some(er), Some(board)) = (eta, board) {
            let (clone_jobs, clone_bytes, finished) = (&clone_jobs, &clone_bytes, &finished);
            let cancel = ctx.cancel;
            outer.spawn(move || {
                eta_monitor(
                    set,
                    (clone_jobs, clone_bytes),
                    board,
                    exits,
                    t0,
                    er,
                    &|| finished.load(std::sync::atomic::Ordering::SeqCst) || cancel.is_cancelled(),
                )
            });
        }
        // The monitors end when the batches do, even by a panic.
        struct Finished<'f>(&'f std::sync::atomic::AtomicBool);
        impl Drop for Finished<'_> {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let _finished = Finished(&finished);
        run_batches(
            set,
            ctx,
            &mut planned,
            &mut outs,
            board,
            buf_starts,
            flows,
            exits,
            zones,
            &groups_all,
        )
    });
    ran?;
    let results = assemble(set, outs, t0);
    Ok(FioRun {
        set: set.clone(),
        results,
        started_unix_ms,
        elapsed: Nanos::now() - t0,
        disk_util: watch.finish(),
    })
}

/// Sleep until `due` in steps of at most 10 ms; false when `stop` said so first.
fn sleep_until(due: std::time::Instant, stop: &dyn Fn() -> bool) -> bool {
    loop {
        if stop() {
            return false;
        }
        let now = std::time::Instant::now();
        if now >= due {
            return true;
        }
        std::thread::sleep((due - now).min(std::time::Duration::from_millis(10)));
    }
}

/// fio's helper thread for `--status-interval`: every `sr.every`, the stats of every clone
/// so far, assembled as the final report is, handed to `sr.report`; ends when `stop` says so
/// (the final report follows).
fn status_monitor(
    set: &JobSet,
    clone_jobs: &[usize],
    board: &status::Board,
    watch: &disk::DiskWatch,
    (t0, started_unix_ms): (Nanos, u64),
    sr: &StatusReport<'_>,
    stop: &dyn Fn() -> bool,
) {
    let start = std::time::Instant::now();
    for k in 1u32.. {
        let due = start + sr.every * k;
        if !sleep_until(due, stop) {
            return;
        }
        let snaps = board.collect(sr.every, stop);
        if stop() {
            return;
        }
        let outs = clone_jobs
            .iter()
            .zip(snaps)
            .map(|(&job_index, (stats, end))| CloneOut {
                job_index,
                stats,
                end,
            })
            .collect();
        let run = FioRun {
            set: set.clone(),
            results: assemble(set, outs, t0),
            started_unix_ms,
            elapsed: Nanos::now() - t0,
            disk_util: watch.peek(),
        };
        (sr.report)(&run);
    }
}

/// fio's ETA display: about every second (fio's eta_interval), every clone's phase and stats
/// so far make one line ([`eta::line`]) for `er.print`; ends when `stop` says so.
fn eta_monitor(
    set: &JobSet,
    (clone_jobs, clone_bytes): (&[usize], &[u64]),
    board: &status::Board,
    exits: &rate::Exits,
    t0: Nanos,
    er: &EtaReport<'_>,
    stop: &dyn Fn() -> bool,
) {
    let every = std::time::Duration::from_secs(1);
    let start = std::time::Instant::now();
    let mut state = eta::EtaState::new(t0);
    for k in 1u32.. {
        let due = start + every * k;
        if !sleep_until(due, stop) {
            return;
        }
        let snaps = board.collect(every, stop);
        let phases = board.phases(|i| exits.get(i).phase());
        if stop() {
            return;
        }
        let clones: Vec<eta::CloneEta<'_>> = clone_jobs
            .iter()
            .zip(clone_bytes)
            .zip(snaps.iter().zip(phases))
            .map(|((&ji, &total_bytes), ((stats, _), phase))| eta::CloneEta {
                job: &set.jobs[ji],
                total_bytes,
                phase,
                stats,
            })
            .collect();
        if let Some(l) = eta::line(&clones, Nanos::now(), t0, &mut state) {
            (er.print)(&l);
        }
    }
}

/// What every clone thread of a batch shares.
struct BatchShared<'b, 'c> {
    set: &'b JobSet,
    ctx: &'b RunContext<'c>,
    /// Clones ended, per job (wait_for).
    done: &'b [std::sync::atomic::AtomicU32],
    /// Clones of the batch still running (the steady-state monitor).
    left: &'b std::sync::atomic::AtomicUsize,
    /// Every clone of the batch has laid its files out.
    laid: &'b std::sync::Barrier,
    /// How many create_serialize clones of the batch have laid their files out.
    layout_turn: &'b std::sync::atomic::AtomicUsize,
    /// Each clone's place among the batch's create_serialize clones (its turn).
    layout_rank: &'b [usize],
    /// Each clone's steady-state progress.
    progress: &'b [steady::Progress],
    board: Option<&'b status::Board>,
    buf_starts: &'b [rand::Taus],
    flows: &'b pace::Flows,
    exits: &'b rate::Exits,
    zones: &'b zbd::Registry,
}

/// Plan the files of a batch's clones deferred behind a stonewall (the files an earlier
/// batch wrote exist now), with their O_DIRECT alignment.
fn plan_deferred(batch: &mut [Planned<'_>], ctx: &RunContext<'_>) -> Result<(), WorkloadError> {
    for pl in batch {
        if let Some(clone) = pl.deferred.take() {
            let seeds = rand::job_seeds(pl.job, pl.thread_number);
            pl.plan = files::plan_clone(pl.job, clone, ctx.dir, &seeds)?;
            if pl.job.direct {
                if let Some(dir) = pl.plan.files.first().and_then(|f| f.path.parent()) {
                    let (off_align, m) = files::dio_alignment(dir);
                    pl.mem_align = m.max(4096);
                    files::check_direct_alignment(pl.job, &pl.plan, off_align)?;
                }
            }
        }
    }
    Ok(())
}

/// One clone of a batch, on its own thread: lay its files out, wait for the batch and its
/// wait_for job, then run it (clone `ci` of the run, `bi` of the batch).
fn run_batch_clone(
    sh: &BatchShared<'_, '_>,
    pl: &Planned<'_>,
    ci: usize,
    bi: usize,
) -> Result<CloneOut, WorkloadError> {
    let BatchShared {
        set,
        ctx,
        done,
        left,
        laid,
        layout_turn,
        layout_rank,
        progress,
        board,
        buf_starts,
        flows,
        exits,
        zones,
    } = *sh;
    let cancel = ctx.cancel;
    struct Finish<'d>(&'d std::sync::atomic::AtomicU32);
    impl Drop for Finish<'_> {
        fn drop(&mut self) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let _finish = Finish(&done[pl.job_index]);
    struct Left<'d>(&'d std::sync::atomic::AtomicUsize);
    impl Drop for Left<'_> {
        fn drop(&mut self) {
            self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let _left = Left(left);
    // The status monitor stops waiting for a clone that ended; a clone
    // that ended without stats (an error, or before it started) is
    // done as far as the ETA line and exitall are concerned.
    struct Ended<'d>(Option<&'d status::Slot>, &'d rate::Exit);
    impl Drop for Ended<'_> {
        fn drop(&mut self) {
            if let Some(s) = self.0 {
                s.ended();
            }
            self.1.set_phase(status::Phase::Done);
        }
    }
    let slot = board.map(|b| b.slot(ci));
    let job = pl.job;
    let exit = exits.get(ci);
    let _ended = Ended(slot, exit);
    // fio lays every job's files out before any job starts
    // (create_serialize): the clones of a batch lay out first, then
    // start together (so a quick job's exitall meets the others at
    // work, as in fio).
    exit.set_phase(status::Phase::SettingUp);
    let layout_seed = rand::job_seeds(job, pl.thread_number)[rand::SEED_BUF];
    let laid_out = {
        // create_serialize=1 (fio's default): one clone lays its files out at a time, in job
        // order, as fio's setup_files before any job runs: a file several jobs share is laid
        // out by the first of them (a write job's bare fallocate, or a read job's filled
        // file), never by whichever thread came first (a read job's O_DIRECT reads then hit
        // unwritten extents in some runs). With 0 they do so in parallel, as in fio.
        struct Turn<'t>(&'t std::sync::atomic::AtomicUsize, bool);
        impl Drop for Turn<'_> {
            fn drop(&mut self) {
                if self.1 {
                    self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            }
        }
        if job.create_serialize {
            while layout_turn.load(std::sync::atomic::Ordering::SeqCst) != layout_rank[bi] {
                if cancel.is_cancelled() {
                    return Err(WorkloadError::Cancelled);
                }
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        }
        let _next = Turn(layout_turn, job.create_serialize);
        files::layout(job, &pl.plan, layout_seed, set.read_only)
    };
    laid.wait();
    if let Some(l) = laid_out?.fio_line(&job.name) {
        ctx.progress.peer_line(&l);
    }
    if let Some(w) = &job.wait_for {
        let wi = set.jobs[..pl.job_index]
            .iter()
            .rposition(|o| &o.name == w)
            .expect("wait_for checked at parse");
        let need = set.jobs[wi].numjobs;
        while done[wi].load(std::sync::atomic::Ordering::SeqCst) < need {
            if cancel.is_cancelled() {
                return Err(WorkloadError::Cancelled);
            }
            if exit.terminated() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    sleep_cancellable(job.startdelay, cancel, exit)?;
    if exit.terminated() {
        // Ended by another job before it started (fio: "never got a
        // chance to start"): it reports nothing done.
        return Ok(CloneOut {
            job_index: pl.job_index,
            stats: stats::ThreadStats::default(),
            end: Nanos::now(),
        });
    }
    let setup = worker::CloneSetup {
        job,
        plan: pl.plan.clone(),
        thread_number: pl.thread_number,
        mem_align: pl.mem_align,
        cancel,
        flow: flows.group_of(job),
        progress: (!job.ss_dur.is_zero()).then_some(&progress[bi]),
        buf_starts,
        exit: Some(exit),
        zbd: Some(zones),
        status: slot,
    };
    if let Some(n) = sync_depth_note(job) {
        ctx.progress.peer_note(n);
    }
    if let Some(s) = slot {
        s.started();
    }
    let stats = worker::run_clone(&setup)?;
    if let Some(s) = slot {
        s.done(stats.clone(), Nanos::now());
    }
    exit.set_phase(if stats.error.is_some() {
        status::Phase::Failed
    } else {
        status::Phase::Done
    });
    exits.ended(ci, job);
    Ok(CloneOut {
        job_index: pl.job_index,
        stats,
        end: Nanos::now(),
    })
}

/// Run the clones in stonewall batches (all clones of a batch at once), their results into
/// `outs` in clone order.
#[allow(clippy::too_many_arguments)]
fn run_batches<'p>(
    set: &JobSet,
    ctx: &RunContext<'_>,
    planned: &mut [Planned<'p>],
    outs: &mut Vec<CloneOut>,
    board: Option<&status::Board>,
    buf_starts: &[rand::Taus],
    flows: &pace::Flows,
    exits: &rate::Exits,
    zones: &zbd::Registry,
    groups_all: &[u32],
) -> Result<(), WorkloadError> {
    let mut i = 0;
    while i < planned.len() {
        let mut j = i + 1;
        while j < planned.len()
            && !(planned[j].job.stonewall && planned[j].job_index != planned[j - 1].job_index)
        {
            j += 1;
        }
        plan_deferred(&mut planned[i..j], ctx)?;
        let batch = &planned[i..j];
        ctx.progress.phase(&format!("fio: {}", batch[0].job.name));
        // wait_for: a clone waits until every clone of the named job has ended (well or not).
        let done: Vec<std::sync::atomic::AtomicU32> = set
            .jobs
            .iter()
            .map(|_| std::sync::atomic::AtomicU32::new(0))
            .collect();
        for pl in &planned[..i] {
            done[pl.job_index].fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        let done = &done;
        let progress: Vec<steady::Progress> =
            batch.iter().map(|_| steady::Progress::default()).collect();
        let progress = &progress;
        let left = std::sync::atomic::AtomicUsize::new(batch.len());
        let left = &left;
        let laid = std::sync::Barrier::new(batch.len());
        let laid = &laid;
        let layout_turn = std::sync::atomic::AtomicUsize::new(0);
        let layout_turn = &layout_turn;
        // Each serialized clone's place among the batch's serialized clones.
        let layout_rank: Vec<usize> = batch
            .iter()
            .scan(0, |n, pl| {
                let r = *n;
                *n += usize::from(pl.job.create_serialize);
                Some(r)
            })
            .collect();
        let layout_rank = &layout_rank;
        let shared = &BatchShared {
            set,
            ctx,
            done,
            left,
            laid,
            layout_turn,
            layout_rank,
            progress,
            board,
            buf_starts,
            flows,
            exits,
            zones,
        };
        let results: Vec<Result<CloneOut, WorkloadError>> = std::thread::scope(|s| {
            if batch.iter().any(|pl| !pl.job.ss_dur.is_zero()) {
                let clones: Vec<(&JobSpec, usize)> =
                    batch.iter().map(|p| (p.job, p.job_index)).collect();
                let groups_all = &groups_all;
                s.spawn(move || steady_monitor(clones, groups_all, progress, left));
            }
            let handles: Vec<_> = batch
                .iter()
                .enumerate()
                .map(|(bi, pl)| {
                    let ci = i + bi;
                    std::thread::Builder::new()
                        .name(format!("fio-{}", pl.job.name))
                        .spawn_scoped(s, move || run_batch_clone(shared, pl, ci, bi))
                        .expect("spawn a worker thread")
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(WorkloadError::InvalidOptions(
                            "a fio worker thread panicked".to_string(),
                        ))
                    })
                })
                .collect()
        });
        for r in results {
            outs.push(r?);
        }
        ctx.progress.fraction(j as f64 / planned.len() as f64);
        i = j;
    }
    Ok(())
}

/// The reported entries of a run's clones (`outs` in clone order), as fio's __show_run_stats
/// builds them: group_reporting merges, per-priority stats, each entry's elapsed time.
fn assemble(set: &JobSet, outs: Vec<CloneOut>, t0: Nanos) -> Vec<JobResult> {
    let groups = group_ids(set);
    // The reported entry of each clone (None: stats=0, the job ran and fio reports nothing of
    // it). fio's rule: a clone of a group_reporting job joins the entry before it when that
    // entry is of the same group; anything else starts an entry.
    let mut entry_of: Vec<Option<usize>> = Vec::with_capacity(outs.len());
    let mut last: Option<(usize, u32)> = None;
    for out in &outs {
        let job = &set.jobs[out.job_index];
        if !job.stats {
            entry_of.push(None);
            continue;
        }
        let g = groups[out.job_index];
        match last.filter(|(_, lg)| job.group_reporting && *lg == g) {
            Some((e, _)) => entry_of.push(Some(e)),
            None => {
                let e = last.map_or(0, |(e, _)| e + 1);
                entry_of.push(Some(e));
                last = Some((e, g));
            }
        }
    }
    // fio's init_per_prio_stats: an entry keeps per-priority latencies when a clone of it gave
    // several priorities (cmdprio) or its clones' own priorities differ.
    let entries = last.map_or(0, |(e, _)| e + 1);
    let mut first_prio: Vec<Option<u32>> = vec![None; entries];
    let mut per_prio = vec![false; entries];
    for (out, e) in outs.iter().zip(&entry_of) {
        let Some(e) = *e else { continue };
        let own = *first_prio[e].get_or_insert(out.stats.ioprio);
        if own != out.stats.ioprio || out.stats.dir.iter().any(|d| !d.prios.is_empty()) {
            per_prio[e] = true;
        }
    }
    let mut results: Vec<JobResult> = Vec::new();
    for (out, e) in outs.into_iter().zip(entry_of) {
        let Some(e) = e else { continue };
        let g = groups[out.job_index];
        let elapsed_s = (out.end - t0).0.div_ceil(1_000_000_000);
        let lat_pct = set.jobs[out.job_index].lat_percentiles;
        if let Some(r) = results.get_mut(e) {
            r.stats.merge(&out.stats);
            if per_prio[e] {
                r.stats.add_prios(&out.stats, lat_pct);
            }
            r.clones += 1;
            r.elapsed_s = r.elapsed_s.max(elapsed_s);
            r.options_index = out.job_index;
            continue;
        }
        let mut stats = out.stats;
        if per_prio[e] {
            let own = stats.clone();
            for d in &mut stats.dir {
                d.prios.clear();
            }
            stats.add_prios(&own, lat_pct);
        }
        results.push(JobResult {
            job_index: out.job_index,
            options_index: out.job_index,
            name: set.jobs[out.job_index].name.clone(),
            groupid: g,
            clones: 1,
            stats,
            elapsed_s,
        });
    }
    results
}

/// fio's note for a clone of a synchronous engine (every engine with fio's FIO_SYNCIO: all but
/// io_uring, libaio, posixaio and null; vsync has it though it queues) with iodepth above 1:
/// backend.c's thread_main writes it with log_info as the clone starts (after the files are
/// laid out), to stdout, whatever the output format. The depth stays the job's iodepth in the
/// report.
pub fn sync_depth_note(job: &JobSpec) -> Option<&'static str> {
    let syncio = ops::of(job.ioengine).has(ops::Caps::FIO_SYNCIO);
    (syncio && job.iodepth > 1).then_some(
        "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be \
         capped at 1",
    )
}

fn sleep_cancellable(
    d: std::time::Duration,
    cancel: &crate::workload::CancelToken,
    exit: &rate::Exit,
) -> Result<(), WorkloadError> {
    let end = Nanos::now() + Nanos::from(d);
    while Nanos::now() < end {
        if cancel.is_cancelled() {
            return Err(WorkloadError::Cancelled);
        }
        if exit.terminated() {
            return Ok(());
        }
        let left = end - Nanos::now();
        std::thread::sleep(std::time::Duration::from_nanos(left.0.min(50_000_000)));
    }
    Ok(())
}

/// fio's derived numbers for one direction: (bw_bytes, bw KiB/s, iops), by the metric
/// catalogue's arithmetic ([`crate::fio::metrics::rates`]).
pub fn rates(d: &stats::DirStats) -> (u64, u64, f64) {
    crate::fio::metrics::rates(d.io_bytes, d.total_ios, d.runtime_ms)
}

/// The metrics and histograms of a run, over every job of the run merged (fio's
/// group_reporting arithmetic, [`ThreadStats::merge`]), named and computed by the metric
/// catalogue ([`crate::fio::metrics`]); the facts say which clock timed the latencies.
pub fn measurements(run: &FioRun) -> Measurements {
    let mut all = ThreadStats::default();
    for r in &run.results {
        all.merge(&r.stats);
    }
    let reported = metrics::Reported::of(run.set.jobs.iter().map(|j| j.rw));
    let dir = |di: usize| {
        let d = &all.dir[di];
        metrics::DirSummary {
            io_bytes: d.io_bytes,
            total_ios: d.total_ios,
            runtime_ms: d.runtime_ms,
            slat: metrics::LatencySummary::of_histogram(&d.slat),
            clat: metrics::LatencySummary::of_histogram(&d.clat),
            lat: metrics::LatencySummary::of_histogram(&d.lat),
        }
    };
    let (usr_cpu, sys_cpu) = cpu_percent(&all);
    let summary = metrics::RunSummary {
        dirs: [READ, WRITE, stats::TRIM].map(|di| reported.0[di].then(|| dir(di))),
        usr_cpu,
        sys_cpu,
        elapsed_s: run.elapsed.as_secs_f64(),
        sync: Some(&all.sync),
    };
    let mut m = metrics::measurements(&summary);
    // Which clock timed the latencies (one name, or several joined by ',' when jobs differ),
    // and the largest end-of-job drift of a TSC clock.
    let mut sources: Vec<&str> = Vec::new();
    for r in &run.results {
        let s = r.stats.clock.source.unwrap_or_default().fio_name();
        if !sources.contains(&s) {
            sources.push(s);
        }
    }
    if !sources.is_empty() {
        m.facts.insert("clocksource".into(), sources.join(","));
        m.facts.insert(
            "clocksource_drift_ppm".into(),
            format!("{:.1}", all.clock.drift_ppm),
        );
    }
    m
}

/// fio's usr_cpu / sys_cpu: CPU time over job runtime, in percent.
pub fn cpu_percent(st: &ThreadStats) -> (f64, f64) {
    if st.job_runtime_ms == 0 {
        return (0.0, 0.0);
    }
    let runt = st.job_runtime_ms as f64;
    (
        st.rusage.utime_us as f64 / 1000.0 * 100.0 / runt,
        st.rusage.stime_us as f64 / 1000.0 * 100.0 / runt,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::jobfile::SystemSources;
    use crate::model::{Direction, Unit};
    use crate::workload::{CancelToken, NoProgress};

    #[test]
    fn sync_engines_with_depth_have_fios_note() {
        // fio 3.33: a psync job with iodepth=2 prints it (once per clone, as it starts), so do
        // filecreate and vsync with a depth; libaio, null and iodepth=1 do not.
        let job = "[a]\nioengine=psync\niodepth=2\nnumjobs=2\nsize=4m\n\
                   [b]\nioengine=libaio\niodepth=2\nsize=4m\n\
                   [c]\nioengine=null\niodepth=2\nsize=4m\n\
                   [d]\nioengine=filecreate\niodepth=4\nnrfiles=3\nfilesize=4k\n\
                   [e]\nioengine=psync\nsize=4m\n\
                   [f]\nioengine=vsync\niodepth=4\nsize=4m\n";
        let set = jobfile::parse_job_text(job, "t.fio", &SystemSources).unwrap();
        let notes: Vec<bool> = set
            .jobs
            .iter()
            .map(|j| sync_depth_note(j).is_some())
            .collect();
        assert_eq!(notes, [true, false, false, true, false, true]);
        assert_eq!(
            sync_depth_note(&set.jobs[0]).unwrap(),
            "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will \
             be capped at 1"
        );
    }

    #[test]
    fn only_jobs_that_read_existing_files_and_write_nothing_may_run_read_only() {
        let ro = |text: &str| {
            FioWorkload::from_job_text(text, "t.fio", &SystemSources)
                .unwrap()
                .reads_only()
        };
        assert!(ro(
            "[a]\nrw=read\nsize=1m\n[b]\nrw=randread\nioengine=io_uring\nsize=1m\n"
        ));
        assert!(ro("[s]\nioengine=filestat\nnrfiles=4\nfilesize=4k\n"));
        assert!(!ro("[a]\nrw=read\nsize=1m\n[b]\nrw=write\nsize=1m\n"));
        assert!(!ro("[m]\nrw=randrw\nsize=1m\n"));
        assert!(!ro("[c]\nioengine=filecreate\nnrfiles=4\nfilesize=4k\n"));
        assert!(!ro("[l]\nrw=read\nsize=1m\nwrite_lat_log=x\n"));
        assert!(!ro("[l]\nrw=read\nsize=1m\nwrite_hist_log=x\n"));
    }

    /// A suite's sample writes its logs into its work directory and keeps them: relative
    /// prefixes (and none, the job's name) go under it, absolute ones stay; each log becomes a
    /// `fio_log:` attachment (once when per_job_logs=0 makes the clones append to one file).
    #[test]
    fn a_samples_logs_go_into_its_directory_and_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let abs = dir.path().join("abs");
        let w = FioWorkload::from_job_text(
            &format!(
                "[j]\nrw=write\nsize=64k\nnumjobs=2\nwrite_lat_log=x\nwrite_bw_log\n\
                 write_iops_log={}\nwrite_hist_log=h\nlog_hist_msec=1\nper_job_logs=0\n",
                abs.display()
            ),
            "t.fio",
            &SystemSources,
        )
        .unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let set = logs_into(w.jobs(), &work);
        let j = &set.jobs[0];
        let under = |p: &Option<String>, name: &str| {
            assert_eq!(p.as_deref(), Some(work.join(name).to_str().unwrap()));
        };
        under(&j.lat_log, "x");
        under(&j.bw_log, "j");
        under(&j.hist_log, "h");
        assert_eq!(j.iops_log.as_deref(), abs.to_str());
        let cancel = CancelToken::new();
        let m = w
            .run(&RunContext {
                dir: &work,
                cancel: &cancel,
                progress: &NoProgress,
            })
            .unwrap();
        let names: Vec<&str> = m.attachments.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "fio_log:x_lat.log",
                "fio_log:x_slat.log",
                "fio_log:x_clat.log",
                "fio_log:j_bw.log",
                "fio_log:abs_iops.log",
                "fio_log:h_clat_hist.log",
            ]
        );
        assert!(work.join("x_clat.log").exists() && dir.path().join("abs_iops.log").exists());
        // Both clones' lines (fio appends with per_job_logs=0), none from before the sample.
        let clat = m.attachments[2].text().unwrap();
        assert_eq!(clat.lines().count(), 32, "{clat}");
        let again = w
            .run(&RunContext {
                dir: &work,
                cancel: &cancel,
                progress: &NoProgress,
            })
            .unwrap();
        assert_eq!(again.attachments[2].text().unwrap().lines().count(), 32);
    }

    /// A sample's write_iolog= and verify state files go into its work directory, never
    /// where fsdelta was started, and its verify_state_load=1 read job finds the state there.
    #[test]
    fn a_samples_iolog_and_verify_state_go_into_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let pre = "[job]\nfilename=f\nrw=write\nsize=64k\nverify=md5\nverify_state_save=1\n\
                   write_iolog=io.log\n";
        let post = "[job]\nfilename=f\nrw=read\nsize=64k\nverify=md5\nverify_state_load=1\n";
        let w = FioWorkload::from_job_text(pre, "t.fio", &SystemSources).unwrap();
        let set = logs_into(w.jobs(), &work);
        assert_eq!(
            set.jobs[0].write_iolog.as_deref(),
            work.join("io.log").to_str()
        );
        assert_eq!(set.jobs[0].aux_path.as_deref(), work.to_str());
        let cancel = CancelToken::new();
        let ctx = RunContext {
            dir: &work,
            cancel: &cancel,
            progress: &NoProgress,
        };
        w.run(&ctx).unwrap();
        assert!(work.join("local-job-0-verify.state").is_file());
        let log = std::fs::read_to_string(work.join("io.log")).unwrap();
        assert!(log.starts_with("fio version 3 iolog\n"), "{log}");
        assert_eq!(log.lines().filter(|l| l.contains(" f write ")).count(), 16);
        // The read job finds the state in the sample's directory, and fails without it.
        let r = FioWorkload::from_job_text(post, "t.fio", &SystemSources).unwrap();
        r.run(&ctx).unwrap();
        std::fs::remove_file(work.join("local-job-0-verify.state")).unwrap();
        let e = r.run(&ctx).unwrap_err().to_string();
        assert!(e.contains("local-job-0-verify.state"), "{e}");
        assert!(!Path::new("io.log").exists());
        assert!(!Path::new("local-job-0-verify.state").exists());
    }

    fn run_text(text: &str, dir: &Path) -> Result<FioRun, WorkloadError> {
        let w = FioWorkload::from_job_text(text, "t.fio", &SystemSources).unwrap();
        let cancel = CancelToken::new();
        w.execute(&RunContext {
            dir,
            cancel: &cancel,
            progress: &NoProgress,
        })
    }

    #[test]
    fn sequential_write_moves_exactly_size_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_text("[w]\nrw=write\nsize=2m\nbs=64k\nend_fsync=1\n", dir.path()).unwrap();
        let st = &run.results[0].stats;
        assert_eq!(st.dir[WRITE].io_bytes, 2 << 20);
        assert_eq!(st.dir[WRITE].total_ios, 32);
        assert_eq!(st.dir[WRITE].clat.count(), 32);
        assert_eq!(st.dir[READ].io_bytes, 0);
        assert_eq!(
            std::fs::metadata(dir.path().join("w.0.0")).unwrap().len(),
            2 << 20
        );
        assert!(st.dir[WRITE].runtime_ms >= 1);
        assert_eq!(st.dir[WRITE].slat.count(), 0, "sync engines have no slat");
    }

    #[test]
    fn random_pass_with_the_map_touches_every_block_once() {
        let dir = tempfile::tempdir().unwrap();
        // A random write pass over a fresh (sparse) file: every 4k block must be written once,
        // so the file ends up with no hole and exactly size bytes moved.
        let run = run_text(
            "[r]\nrw=randwrite\nsize=1m\nfallocate=none\nzero_buffers=0\nscramble_buffers=1\n",
            dir.path(),
        )
        .unwrap();
        let st = &run.results[0].stats;
        assert_eq!(st.dir[WRITE].total_ios, 256);
        let data = std::fs::read(dir.path().join("r.0.0")).unwrap();
        assert_eq!(data.len(), 1 << 20);
        for (i, block) in data.chunks(4096).enumerate() {
            // scrambled blocks carry their own offset in the first 512-byte sector
            let slot_has_offset =
                (0..8).any(|s| block[s * 64..s * 64 + 8] == ((i * 4096) as u64).to_ne_bytes());
            assert!(slot_has_offset, "block {i} was not written by its own I/O");
        }
    }

    #[test]
    fn rw_mix_moves_size_bytes_in_both_directions() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_text(
            "[m]\nrw=randrw\nrwmixread=70\nsize=1m\ninvalidate=0\n",
            dir.path(),
        )
        .unwrap();
        let st = &run.results[0].stats;
        assert_eq!(st.dir[READ].io_bytes + st.dir[WRITE].io_bytes, 1 << 20);
        assert!(st.dir[READ].total_ios > st.dir[WRITE].total_ios);
    }

    #[test]
    fn ramp_time_resets_the_stats() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_text(
            "[r]\nrw=randread\nsize=1m\ninvalidate=0\ntime_based\nruntime=300ms\nramp_time=1s\n",
            dir.path(),
        )
        .unwrap();
        let st = &run.results[0].stats;
        // runtime counts only after the ramp: about 300 ms, not 1300 (slack for a loaded CI).
        let rt = st.dir[READ].runtime_ms;
        assert!((290..1000).contains(&rt), "runtime {rt} ms");
        assert_eq!(st.dir[READ].clat.count(), st.dir[READ].total_ios);
        assert!(st.job_runtime_ms < 1000);
    }

    #[test]
    fn loops_and_numjobs_multiply_the_work_and_group_reporting_merges() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_text(
            "[w]\nrw=write\nsize=256k\nloops=2\nnumjobs=3\ngroup_reporting\n",
            dir.path(),
        )
        .unwrap();
        assert_eq!(run.results.len(), 1);
        assert_eq!(run.results[0].clones, 3);
        assert_eq!(
            run.results[0].stats.dir[WRITE].io_bytes,
            3 * 2 * (256 << 10)
        );
        for c in 0..3 {
            assert!(dir.path().join(format!("w.{c}.0")).exists());
        }
        let run = run_text("[w]\nrw=write\nsize=64k\nnumjobs=2\n", dir.path()).unwrap();
        assert_eq!(run.results.len(), 2);
    }

    #[test]
    fn stonewall_starts_a_new_group_and_runs_after() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_text(
            "[global]\nsize=64k\n[a]\nrw=write\n[b]\nstonewall\nrw=read\n[c]\nnew_group\nrw=read\n",
            dir.path(),
        )
        .unwrap();
        let g: Vec<u32> = run.results.iter().map(|r| r.groupid).collect();
        assert_eq!(g, vec![0, 1, 2]);
    }

    #[test]
    fn fsync_every_n_writes_is_counted_apart_from_write_latency() {
        let dir = tempfile::tempdir().unwrap();
        // 64 writes, fsync=16: fio syncs before the I/O that follows every 16th write, so the
        // last interval (no I/O follows) gets none: 3 syncs, as fio 3.33 reports.
        for engine in ["psync", "io_uring\niodepth=4", "libaio\niodepth=4"] {
            let run = run_text(
                &format!("[w]\nrw=write\nsize=256k\nfsync=16\nioengine={engine}\n"),
                dir.path(),
            )
            .unwrap();
            let st = &run.results[0].stats;
            assert_eq!(st.sync.count(), 3, "{engine}");
            assert_eq!(st.dir[WRITE].clat.count(), 64, "{engine}");
        }
    }

    #[test]
    fn filecreate_times_each_creation() {
        let dir = tempfile::tempdir().unwrap();
        let run = run_text(
            "[e]\nioengine=filecreate\nrw=write\nnrfiles=50\nfilesize=4k\nopenfiles=1\ncreate_on_open=1\nfallocate=none\n",
            dir.path(),
        )
        .unwrap();
        let st = &run.results[0].stats;
        assert_eq!(st.dir[WRITE].clat.count(), 50);
        assert_eq!(st.dir[WRITE].lat.count(), 0);
        assert_eq!(st.dir[WRITE].io_bytes, 50 * 4096);
        assert_eq!(
            std::fs::metadata(dir.path().join("e.0.49")).unwrap().len(),
            0
        );
    }

    #[test]
    fn io_uring_libaio_and_psync_leave_the_same_bytes_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let base = "rw=randwrite\nsize=512k\nrefill_buffers=1\nrandrepeat=1\nfallocate=none\n";
        let a = run_text(&format!("[a]\nfilename=a.dat\n{base}"), dir.path()).unwrap();
        assert_eq!(a.results[0].stats.dir[WRITE].io_bytes, 512 << 10);
        let da = std::fs::read(dir.path().join("a.dat")).unwrap();
        for (engine, file) in [("io_uring", "b.dat"), ("libaio", "c.dat")] {
            let b = run_text(
                &format!("[a]\nfilename={file}\nioengine={engine}\niodepth=8\n{base}"),
                dir.path(),
            );
            let b = match b {
                Ok(b) => b,
                Err(e) if e.to_string().contains("_setup") => {
                    eprintln!("skipping {engine}: unavailable here: {e}");
                    continue;
                }
                Err(e) => panic!("{engine}: {e}"),
            };
            assert_eq!(
                b.results[0].stats.dir[WRITE].io_bytes,
                512 << 10,
                "{engine}"
            );
            assert!(
                b.results[0].stats.dir[WRITE].slat.count() > 0,
                "{engine} has slat"
            );
            let db = std::fs::read(dir.path().join(file)).unwrap();
            assert_eq!(da.len(), db.len(), "{engine}");
            assert!(
                da == db,
                "{engine}: same seeds, same offsets, same buffer refills in issue order: same bytes"
            );
        }
    }

    #[test]
    fn unlink_removes_the_files_and_create_on_open_creates_them_in_the_job() {
        let dir = tempfile::tempdir().unwrap();
        run_text("[u]\nrw=write\nsize=64k\nnrfiles=2\nunlink=1\n", dir.path()).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let run = run_text(
            "[c]\nrw=write\nsize=64k\ncreate_on_open=1\nfallocate=none\n",
            dir.path(),
        )
        .unwrap();
        assert_eq!(run.results[0].stats.dir[WRITE].io_bytes, 64 << 10);
        assert_eq!(
            std::fs::metadata(dir.path().join("c.0.0")).unwrap().len(),
            64 << 10
        );
    }

    #[test]
    fn written_data_follows_zero_and_compress_options() {
        let dir = tempfile::tempdir().unwrap();
        run_text("[z]\nrw=write\nsize=64k\nzero_buffers\n", dir.path()).unwrap();
        let z = std::fs::read(dir.path().join("z.0.0")).unwrap();
        assert!(z.iter().all(|&b| b == 0), "zero_buffers writes zeros");
        run_text(
            "[c]\nrw=write\nsize=256k\nbuffer_compress_percentage=75\nbuffer_compress_chunk=1k\n",
            dir.path(),
        )
        .unwrap();
        let c = std::fs::read(dir.path().join("c.0.0")).unwrap();
        let zeros = c.iter().filter(|&&b| b == 0).count() as f64 / c.len() as f64;
        assert!((0.74..0.77).contains(&zeros), "75 % compressible: {zeros}");
        run_text("[r]\nrw=write\nsize=64k\n", dir.path()).unwrap();
        let r = std::fs::read(dir.path().join("r.0.0")).unwrap();
        let zeros = r.iter().filter(|&&b| b == 0).count() as f64 / r.len() as f64;
        // Random bytes, plus fio's scramble stamps (offsets and times, mostly zero high bytes)
        // that accumulate in the reused buffer: well under a fifth zeros.
        assert!(zeros < 0.2, "default buffers are random: {zeros}");
    }

    /// A failed verify ends its job with its stats (fio's error 84, the read counted), the
    /// other job goes on, and a sample of it fails naming the file and offset in fio's words.
    #[test]
    fn a_failed_verify_ends_its_job_and_the_sample_names_the_block() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::File::create(dir.path().join("z"))
            .unwrap()
            .set_len(16 << 10)
            .unwrap();
        let text =
            "[v]\nrw=read\nbs=4k\nsize=16k\nfilename=z\nverify=crc32c\n[w]\nrw=write\nsize=64k\n";
        let run = run_text(text, dir.path()).unwrap();
        let v = &run.results[0].stats;
        let e = v.error.as_ref().expect("the verify job's error");
        assert_eq!(e.errno, libc::EILSEQ);
        assert!(e.verror.contains("func=io_u_sync_complete"), "{}", e.verror);
        assert_eq!(v.dir[READ].total_ios, 1);
        assert_eq!(v.errors.reported.as_ref().map(|r| r.0), Some(libc::EILSEQ));
        let w = &run.results[1].stats;
        assert!(w.error.is_none());
        assert_eq!(w.dir[WRITE].io_bytes, 64 << 10);
        let wl = FioWorkload::from_job_text(text, "t.fio", &SystemSources).unwrap();
        let cancel = CancelToken::new();
        let err = wl
            .run(&RunContext {
                dir: dir.path(),
                cancel: &cancel,
                progress: &NoProgress,
            })
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("fio job 'v'") && err.contains("at file z offset 0"),
            "{err}"
        );
    }

    #[test]
    fn runtime_caps_a_job_and_startdelay_waits_outside_it() {
        let dir = tempfile::tempdir().unwrap();
        let t0 = Nanos::now();
        let run = run_text(
            "[s]\nrw=randread\nsize=256k\ninvalidate=0\nloops=1000000\nruntime=200ms\nstartdelay=300ms\n",
            dir.path(),
        )
        .unwrap();
        let wall_ms = t0.elapsed().0 / 1_000_000;
        let st = &run.results[0].stats;
        // At least the runtime, and within what the wall clock allows after the start delay
        // (a busy machine stretches both; neither bound depends on how busy it is).
        assert!(
            st.dir[READ].runtime_ms >= 200 && st.dir[READ].runtime_ms + 300 <= wall_ms,
            "runtime {} ms, wall {wall_ms} ms",
            st.dir[READ].runtime_ms
        );
        assert!(wall_ms >= 500, "startdelay then runtime");
    }

    #[test]
    fn direct_io_runs_where_the_filesystem_allows_it() {
        let dir = tempfile::tempdir().unwrap();
        if let Err(e) = files::probe_direct(dir.path()) {
            eprintln!("skipping: {e}");
            return;
        }
        for engine in ["psync", "io_uring\niodepth=4", "libaio\niodepth=4"] {
            let run = run_text(
                &format!("[d]\nrw=randrw\nsize=256k\ndirect=1\nioengine={engine}\n"),
                dir.path(),
            )
            .unwrap();
            let st = &run.results[0].stats;
            assert_eq!(
                st.dir[READ].io_bytes + st.dir[WRITE].io_bytes,
                256 << 10,
                "{engine}"
            );
        }
    }

    #[test]
    fn size_percent_uses_part_of_each_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        run_text("[w]\nrw=write\nsize=256k\nfilename=f.dat\n", dir.path()).unwrap();
        let run = run_text(
            "[r]\nrw=read\nsize=50%\nfilename=f.dat\ninvalidate=0\n",
            dir.path(),
        )
        .unwrap();
        assert_eq!(run.results[0].stats.dir[READ].io_bytes, 128 << 10);
        let e = run_text("[r]\nrw=read\nsize=50%\nfilename=none.dat\n", dir.path()).unwrap_err();
        assert!(e.to_string().contains("needs existing files"), "{e}");
    }

    #[test]
    fn openfiles_rotation_and_sequential_file_service_reach_every_file() {
        let dir = tempfile::tempdir().unwrap();
        for fst in ["roundrobin", "sequential", "random"] {
            let run = run_text(
                &format!(
                    "[o]\nrw=randwrite\nsize=256k\nnrfiles=4\nopenfiles=1\nfile_service_type={fst}\nfallocate=none\nfsync_on_close=1\n"
                ),
                dir.path(),
            )
            .unwrap();
            assert_eq!(run.results[0].stats.dir[WRITE].io_bytes, 256 << 10, "{fst}");
            for i in 0..4 {
                let len = std::fs::metadata(dir.path().join(format!("o.0.{i}")))
                    .unwrap()
                    .len();
                assert_eq!(len, 64 << 10, "{fst}: file {i} fully written");
            }
            for i in 0..4 {
                std::fs::remove_file(dir.path().join(format!("o.0.{i}"))).unwrap();
            }
        }
    }

    #[test]
    fn fallocate_modes_shape_the_laid_out_file() {
        let dir = tempfile::tempdir().unwrap();
        for (mode, len) in [
            ("posix", 128u64 << 10),
            ("keep", 0),
            ("none", 0),
            ("truncate", 128 << 10),
        ] {
            let name = format!("f{mode}");
            // Layout alone (a write job's files are created and preallocated, not written).
            let job = JobSpec {
                name: name.clone(),
                rw: crate::fio::jobfile::RwMode::Write,
                size: Some(crate::fio::jobfile::SizeSpec::Bytes(
                    crate::fio::jobfile::Bytes(128 << 10),
                )),
                fallocate: match mode {
                    "posix" => crate::fio::jobfile::Fallocate::Posix,
                    "keep" => crate::fio::jobfile::Fallocate::Keep,
                    "none" => crate::fio::jobfile::Fallocate::None,
                    _ => crate::fio::jobfile::Fallocate::Truncate,
                },
                ..JobSpec::default()
            };
            let plan = files::plan_clone(&job, 0, dir.path(), &[0; 21]).unwrap();
            files::layout(&job, &plan, 1, false).unwrap();
            let got = std::fs::metadata(&plan.files[0].path).unwrap().len();
            assert_eq!(got, len, "fallocate={mode}");
        }
    }

    #[test]
    fn cancel_stops_a_time_based_job() {
        let dir = tempfile::tempdir().unwrap();
        let w = FioWorkload::from_job_text(
            "[r]\nrw=randread\nsize=256k\ntime_based\nruntime=60\ninvalidate=0\n",
            "t.fio",
            &SystemSources,
        )
        .unwrap();
        let cancel = CancelToken::new();
        let c2 = cancel.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            c2.cancel();
        });
        let t0 = Nanos::now();
        let r = w.execute(&RunContext {
            dir: dir.path(),
            cancel: &cancel,
            progress: &NoProgress,
        });
        t.join().unwrap();
        assert!(matches!(r, Err(WorkloadError::Cancelled)));
        // Well before the job's own 60 s runtime, however busy the machine.
        assert!(t0.elapsed().as_secs_f64() < 30.0);
    }

    #[test]
    fn the_clock_used_is_in_the_json_and_the_facts_and_lat_equals_clat_for_reads() {
        let dir = tempfile::tempdir().unwrap();
        for (opt, want) in [
            ("clocksource=clock_gettime\n", Some("clock_gettime")),
            ("clocksource=gettimeofday\n", Some("gettimeofday")),
            ("clocksource=cpu\n", None),
            ("", None),
        ] {
            let run = run_text(
                &format!("[r]\nrw=randread\nsize=256k\nioengine=psync\n{opt}"),
                dir.path(),
            )
            .unwrap();
            let st = &run.results[0].stats;
            // cpu (and the default) where the TSC calibrates, else clock_gettime.
            let tsc = crate::probe::clock::tsc_calibration().is_ok();
            let want = want.unwrap_or(if tsc { "cpu" } else { "clock_gettime" });
            assert_eq!(st.clock.source.unwrap().fio_name(), want, "{opt}");
            let m = measurements(&run);
            assert_eq!(m.facts["clocksource"], want);
            assert!(m.facts.contains_key("clocksource_drift_ppm"));
            let json = crate::fio::output::json(&run);
            assert!(
                json.contains(&format!("\"clocksource\" : \"{want}\"")),
                "{json}"
            );
            assert!(json.contains("\"clocksource_drift_ppm\" : "));
            // Reads: lat is the same distribution as clat (one clock reading serves both).
            let d = &st.dir[READ];
            assert_eq!(d.lat.count(), 64);
            assert_eq!(
                d.lat.percentiles(&[50.0, 99.0]),
                d.clat.percentiles(&[50.0, 99.0])
            );
            assert_eq!((d.lat.min(), d.lat.max()), (d.clat.min(), d.clat.max()));
        }
    }

    #[test]
    fn metrics_carry_fio_names_units_and_directions() {
        let dir = tempfile::tempdir().unwrap();
        let w =
            FioWorkload::from_job_text("[w]\nrw=randwrite\nsize=256k\n", "t.fio", &SystemSources)
                .unwrap();
        let cancel = CancelToken::new();
        let m = w
            .run(&RunContext {
                dir: dir.path(),
                cancel: &cancel,
                progress: &NoProgress,
            })
            .unwrap();
        let get = |n: &str| {
            m.metrics
                .iter()
                .find(|x| x.name == n)
                .unwrap_or_else(|| panic!("{n}"))
        };
        assert_eq!(get("write_iops").unit, Unit::OpsPerSec);
        assert_eq!(get("write_iops").direction, Direction::HigherIsBetter);
        assert_eq!(get("write_io_kbytes").value, 256.0);
        assert_eq!(get("write_clat_ns_p99").direction, Direction::LowerIsBetter);
        assert!(get("write_clat_ns_p99").value >= get("write_clat_ns_p50").value);
        assert!(get("write_lat_ns_max").value >= get("write_lat_ns_min").value);
        assert_eq!(get("sys_cpu").unit, Unit::Percent);
        assert_eq!(get("elapsed").unit, Unit::Seconds);
        assert!(m.metrics.iter().all(|x| !x.name.starts_with("read_")));
        assert!(
            m.histograms
                .iter()
                .any(|h| h.name == "write_clat_ns" && h.count == 64)
        );
    }
}
