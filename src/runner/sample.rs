//! The sample step: one test, once, on one site, measured and stored.
//!
//! Why a file of its own: this is where a number is made. Everything around the workload
//! (hooks, cache drop, device counters, CPU counters, event counters, the profiler, what the
//! workload left on disk, the timed unmount) happens in one fixed order for every kind of
//! target, so that a number means the same thing wherever it was measured. It must never print, and never lose a measured sample: a sample the store
//! refuses as measured is stored as failed with the reason.

use super::observer::{Observer, PhaseSink};
use super::profile::RunProfiler;
use super::site::Site;
use crate::model::{
    Direction, Metric, MetricKind, NewSample, RunId, SampleId, SampleStatus, SiteFacts, Unit,
};
use crate::probe::blockstat;
use crate::probe::clock::Nanos;
use crate::probe::disturbance;
use crate::probe::ondisk;
use crate::probe::system;
use crate::store::{Store, StoreError};
use crate::workload::{CancelToken, Measurements, RunContext, Workload, WorkloadError};

/// What one sample produced, before it is stored (one per sample, moved once: its size does
/// not matter).
#[allow(clippy::large_enum_variant)]
pub(crate) enum Outcome {
    /// Measured (or failed) with these facts.
    Done {
        /// The target's facts (boxed: the measurements beside them are small).
        facts: Box<SiteFacts>,
        /// The measurements, or why there are none.
        result: Result<Measurements, String>,
    },
    /// The workload cannot run on this target (the reason); nothing was measured.
    Skipped(String),
    /// Interrupted by a cancel request; nothing is stored.
    Cancelled,
}

/// What the sample step needs besides the site and the workload.
pub(crate) struct Step<'a> {
    pub(crate) cancel: &'a CancelToken,
    pub(crate) observer: &'a dyn Observer,
    pub(crate) drop_caches: bool,
    pub(crate) profiler: Option<&'a mut RunProfiler>,
    /// The test's tracepoint counters, enabled only while the workload runs.
    pub(crate) events: Option<&'a mut crate::probe::events::Counters>,
    /// Measure what the sample left on disk (the suite's `ondisk` key, default true).
    pub(crate) ondisk: bool,
    /// Measure fragmentation again after the unmount and mount that end a sample (the suite's
    /// `ondisk_remount` key, default false; `crate::probe::ondisk::remounted`).
    pub(crate) ondisk_remount: bool,
}

/// Run `w` once on `site`, in a directory named `sample_name` where the site makes one,
/// measuring what it left on disk (`crate::probe::ondisk`) where the site is a filesystem
/// fsdelta formatted and [`Step::ondisk`] asks for it.
pub(crate) fn run_sample(
    site: &mut Site,
    sample_name: &str,
    test: &str,
    w: &dyn Workload,
    step: Step<'_>,
) -> Outcome {
    let ondisk = step.ondisk;
    run_sample_with(site, sample_name, test, w, step, ondisk)
}

/// [`run_sample`], with the on-disk measurement on or off (`ondisk`: the suite's `ondisk` key).
pub(crate) fn run_sample_with(
    site: &mut Site,
    sample_name: &str,
    test: &str,
    w: &dyn Workload,
    step: Step<'_>,
    ondisk: bool,
) -> Outcome {
    let remount = ondisk && step.ondisk_remount;
    let fail = |facts: SiteFacts, e: String| Outcome::Done {
        facts: Box::new(facts),
        result: Err(e),
    };
    let began = Nanos::now();
    let prepared = site.prepare(sample_name);
    for w in site.take_warnings() {
        step.observer.event(super::observer::Event::Warning(w));
    }
    let prepared = match prepared {
        Ok(p) => p,
        Err(b) => {
            let (facts, e) = *b;
            return fail(facts, e.to_string());
        }
    };
    let mut facts = prepared.facts;
    if let Some(why) = w.skip_reason(&prepared.dir) {
        let _ = site.end_sample(&prepared.dir, false);
        return Outcome::Skipped(why);
    }
    if let Err(e) = site.before() {
        let _ = site.end_sample(&prepared.dir, false);
        return fail(facts, e.to_string());
    }
    let dropped = step.drop_caches && blockstat::drop_caches().unwrap_or(false);
    facts
        .extra
        .insert("caches_dropped".into(), dropped.to_string());
    let disk = on_disk_before(ondisk, &prepared.dir, &facts);
    let before = site.counters();
    let mut profiler = step.profiler;
    if let Some(p) = profiler.as_deref_mut() {
        p.start();
    }
    let counters = system::Snapshot::take();
    let devices = device_probe(site, &prepared.dir, &counters);
    let peaks = system::PeakSampler::start();
    let sink = PhaseSink {
        observer: step.observer,
        config: site.name(),
        test,
    };
    let mut events = step.events;
    if let Some(Err(e)) = events.as_deref_mut().map(|c| c.start()) {
        if let Some(p) = profiler {
            p.stop();
        }
        let _ = site.end_sample(&prepared.dir, false);
        return fail(facts, e.to_string());
    }
    let workload_began = Nanos::now();
    let r = w.run(&RunContext {
        dir: &prepared.dir,
        cancel: step.cancel,
        progress: &sink,
    });
    let workload_s = workload_began.elapsed().as_secs_f64();
    let counted = events.map(|c| c.stop().and_then(|()| c.metrics()));
    if let Some(p) = profiler {
        p.stop();
    }
    let end = system::Snapshot::take();
    let on_devices = devices.finish_from(end.scan());
    let mut around = counters.delta(&end);
    around.extend(peaks.finish());
    around.extend(on_devices.metrics.iter().cloned());
    note_disturbance(site, &mut facts, &around, on_devices, workload_s, || {
        counters.others_io(&end)
    });
    // Below 1 MiB, write(2) bytes are a process's chatter (logs, pipes), not a workload's data.
    let written = counters.written_since(&end).filter(|&b| b >= 1 << 20);
    let after_hook = site.after();
    let mut m = match (r, after_hook) {
        (Err(WorkloadError::Cancelled), _) => {
            let _ = site.end_sample(&prepared.dir, false);
            return Outcome::Cancelled;
        }
        (Err(e), _) => {
            let _ = site.end_sample(&prepared.dir, false);
            return fail(facts, e.to_string());
        }
        (Ok(_), Err(e)) => {
            let _ = site.end_sample(&prepared.dir, false);
            return fail(facts, e.to_string());
        }
        (Ok(m), Ok(())) => m,
    };
    facts.extra.append(&mut m.facts);
    m.metrics.extend(around);
    match counted {
        Some(Ok(counts)) => m.metrics.extend(counts),
        Some(Err(e)) => {
            let _ = site.end_sample(&prepared.dir, false);
            return fail(facts, e.to_string());
        }
        None => {}
    }
    let logical = workload_bytes(&m, written);
    // What the workload left on disk, before the unmount (its syncfs does the writeback the
    // unmount would do; its time is added to umount_s below, so umount_s keeps its meaning).
    let report = disk.map(|d| d.map(|b| b.after(logical)));
    // Unmount (timed) before reading the device counters, so that writeback of what the
    // workload left dirty counts in the device's bytes written.
    let ended = match site.end_sample(&prepared.dir, true) {
        Ok(timings) => timings,
        Err(e) => return fail(facts, format!("after the workload: {e}")),
    };
    m.metrics.extend(ended.iter().cloned());
    let measured_before = matches!(report, Some(Ok(_)));
    // After the timings: the syncfs's time is added to their `umount_s`.
    on_disk_after(report, &mut m.metrics, &mut facts);
    if let (Some(b), Some(a)) = (before, site.counters()) {
        let d = b.delta(&a);
        m.metrics.extend(d.metrics());
        if let Some(wa) = logical.and_then(|l| d.write_amplification(l)) {
            m.metrics.push(wa);
        }
    }
    // After the device counters: a cold mount's maps read the disk (their own I/O).
    if remount && measured_before {
        on_disk_remounted(site, &ended, &prepared.dir, &mut m.metrics, &mut facts);
    }
    // What this sample step spent outside the workload: prepare (mkfs, mount), hooks, the
    // cache drop, counters, the timed unmount and mount.
    m.metrics.push(
        Metric::new(
            "overhead_s",
            (began.elapsed().as_secs_f64() - workload_s).max(0.0),
            Unit::Seconds,
            Direction::Neutral,
        )
        .kind(MetricKind::Mean),
    );
    Outcome::Done {
        facts: Box::new(facts),
        result: Ok(m),
    }
}

/// What others did while the workload ran (on the target's devices where they could be read,
/// else anywhere: `anywhere` gives the heaviest other processes by their I/O), named in the
/// facts, so that compare, the end table and --until-confident can tell a disturbed sample;
/// and how fsdelta's own I/O was told apart. A guest's samples are measured inside it: the
/// host's devices say nothing of them, so they carry no attribution.
fn note_disturbance(
    site: &Site,
    facts: &mut SiteFacts,
    around: &[Metric],
    on_devices: disturbance::DeviceReport,
    workload_s: f64,
    anywhere: impl FnOnce() -> Vec<(String, u64)>,
) {
    if !matches!(site, Site::Guest(_) | Site::Vm(_)) {
        facts
            .extra
            .insert(disturbance::ATTRIBUTION_FACT.into(), on_devices.attribution);
    }
    let (top, on) = if on_devices.metrics.is_empty() {
        (anywhere(), None)
    } else {
        (on_devices.named, Some(on_devices.devices))
    };
    if let Some(why) = disturbance::judge(around, &top, on.as_deref(), workload_s) {
        facts.extra.insert(disturbance::FACT.into(), why);
    }
}

/// The device probe of a sample, started with the /proc scan the sample's counters just took.
fn device_probe(
    site: &Site,
    dir: &std::path::Path,
    counters: &system::Snapshot,
) -> disturbance::DeviceProbe {
    disturbance::DeviceProbe::start_from(target_devices(site, dir), counters.scan().clone())
}

/// The block devices the target's I/O reaches, for the per-device attribution of others' I/O
/// ([`disturbance::DeviceProbe`]): the device holding the sample's directory and, when that is
/// a loop device, the device holding its image (where the loop's I/O lands). None for a guest
/// (its own probes run inside it) or a directory on a filesystem without a block device.
fn target_devices(site: &Site, dir: &std::path::Path) -> Vec<disturbance::TargetDevice> {
    use crate::site::device::device_name_holding;
    if matches!(site, Site::Guest(_) | Site::Vm(_)) {
        return Vec::new();
    }
    // A configured target's loop device is fsdelta's: nothing else mounts it.
    let owned = matches!(site, Site::Configured(_));
    let Some(first) = device_name_holding(dir)
        .and_then(|n| disturbance::TargetDevice::named(&n, None, owned && n.starts_with("loop")))
    else {
        return Vec::new();
    };
    let backing = first
        .name
        .strip_prefix("loop")
        .and_then(|n| n.parse::<u32>().ok())
        .and_then(crate::site::loopdev::backing_file)
        .and_then(|image| device_name_holding(&image))
        .filter(|b| *b != first.name)
        .and_then(|b| disturbance::TargetDevice::named(&b, Some(0), false));
    std::iter::once(first).chain(backing).collect()
}

/// The bytes the workload wrote: its own count of logical bytes, else the larger of what this
/// process and its children passed to write(2) during the sample (copy, command and external
/// tests; a fio job's layout included) and the fio job's own `write_io_kbytes` (io_uring and
/// libaio writes do not pass through write(2)).
fn workload_bytes(m: &Measurements, written: Option<u64>) -> Option<u64> {
    if let Some(l) = m.logical_bytes_written {
        return Some(l);
    }
    let fio = m
        .metrics
        .iter()
        .find(|x| x.name == "write_io_kbytes" && x.unit == Unit::KiB)
        .map(|x| (x.value.max(0.0) * 1024.0) as u64)
        .filter(|&b| b > 0);
    match (written, fio) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// Before the workload: the on-disk baseline, or why there is none (`None`: the suite turned
/// the measurement off). Only on a filesystem fsdelta formatted (its facts name the mkfs): a
/// user's directory shares its filesystem with everything else, whose space and counters would
/// be measured too.
fn on_disk_before(
    ondisk: bool,
    dir: &std::path::Path,
    facts: &SiteFacts,
) -> Option<Result<ondisk::Before, String>> {
    if !ondisk {
        return None;
    }
    if facts.mkfs_options.is_none() || facts.device.is_empty() {
        return Some(Err(
            "not a filesystem fsdelta formatted (a directory or tmpfs target)".into(),
        ));
    }
    Some(Ok(ondisk::Before::take(dir, &facts.fs_type, &facts.device)))
}

/// Store the on-disk report: its metrics, why the others are absent (fact `ondisk_absent`),
/// and its syncfs time added to `umount_s` (the writeback the unmount would have done).
fn on_disk_after(
    report: Option<Result<ondisk::Report, String>>,
    metrics: &mut Vec<Metric>,
    facts: &mut SiteFacts,
) {
    let r = match report {
        None => {
            facts.extra.insert(
                "ondisk".into(),
                "off (the suite says ondisk = false)".into(),
            );
            return;
        }
        Some(Err(why)) => {
            facts
                .extra
                .insert("ondisk_absent".into(), format!("all: {why}"));
            return;
        }
        Some(Ok(r)) => r,
    };
    let sync_s = r.sync.as_secs_f64();
    if let Some(u) = metrics.iter_mut().find(|m| m.name == "umount_s") {
        u.value += sync_s;
        facts
            .extra
            .insert("umount_s_syncfs_s".into(), format!("{sync_s:.6}"));
    }
    if !r.absent.is_empty() {
        facts.extra.insert("ondisk_absent".into(), r.absent_text());
    }
    facts.extra.extend(r.facts);
    metrics.extend(r.metrics);
}

/// The suite's `ondisk_remount`: fragmentation measured again on the filesystem the site
/// mounted again (`Site::mount_again`, after `end_sample` returned `ended`), its metrics named
/// `..._remounted`;
/// absent, with the reason, where there is nothing to mount again (tmpfs, dir, erofs image).
fn on_disk_remounted(
    site: &mut Site,
    ended: &[Metric],
    dir: &std::path::Path,
    metrics: &mut Vec<Metric>,
    facts: &mut SiteFacts,
) {
    let config = site.name().to_string();
    let why = match site.mount_again(ended) {
        Err(e) => Some(format!("mounting the sample's filesystem again: {e}")),
        Ok(false) => Some(format!(
            "config '{config}' has no filesystem to mount again after the sample (only one \
             fsdelta formats: not tmpfs, a directory, nor an erofs image)"
        )),
        Ok(true) if !dir.is_dir() => Some(format!(
            "{} is gone after the mount (the site mounted another filesystem there)",
            dir.display()
        )),
        Ok(true) => None,
    };
    let r = match why {
        Some(why) => ondisk::Report {
            absent: vec![(format!("all{}", ondisk::REMOUNTED), why)],
            ..Default::default()
        },
        None => ondisk::remounted(dir, &facts.fs_type),
    };
    if !r.absent.is_empty() {
        let text = r.absent_text();
        facts
            .extra
            .entry("ondisk_absent".into())
            .and_modify(|t| {
                t.push_str("; ");
                t.push_str(&text);
            })
            .or_insert(text);
    }
    facts.extra.extend(r.facts);
    metrics.extend(r.metrics);
}

/// Store a sample; when the store refuses it as measured (a non-finite metric, say), store it as
/// failed with the reason, so that the run still shows what happened.
pub(crate) fn store_sample(
    store: &mut dyn Store,
    run: RunId,
    mut sample: NewSample,
) -> Result<(SampleId, NewSample), StoreError> {
    match store.add_sample(run, &sample) {
        Ok(id) => Ok((id, sample)),
        Err(e) if sample.status == SampleStatus::Ok => {
            sample.status = SampleStatus::Failed;
            sample.error = Some(format!("not stored as measured: {e}"));
            sample.metrics.clear();
            sample.histograms.clear();
            let id = store.add_sample(run, &sample)?;
            Ok((id, sample))
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn with(metrics: Vec<Metric>, own: Option<u64>) -> Measurements {
        Measurements {
            metrics,
            logical_bytes_written: own,
            ..Default::default()
        }
    }

    #[test]
    fn the_workloads_bytes_are_its_own_count_else_the_larger_of_write_calls_and_fios_count() {
        let fio = Metric::new("write_io_kbytes", 2048.0, Unit::KiB, Direction::Neutral);
        assert_eq!(
            workload_bytes(&with(vec![fio.clone()], Some(7)), Some(9 << 20)),
            Some(7)
        );
        // io_uring writes do not pass through write(2): fio's count is larger.
        assert_eq!(
            workload_bytes(&with(vec![fio.clone()], None), Some(1 << 20)),
            Some(2 << 20)
        );
        // A layout written with pwrite before the job: write(2) saw more.
        assert_eq!(
            workload_bytes(&with(vec![fio], None), Some(5 << 20)),
            Some(5 << 20)
        );
        assert_eq!(workload_bytes(&with(vec![], None), Some(3)), Some(3));
        assert_eq!(workload_bytes(&with(vec![], None), None), None);
    }

    #[test]
    fn only_filesystems_fsdelta_formatted_are_measured_and_off_means_not_at_all() {
        let dir = std::path::Path::new("/");
        let mut facts = SiteFacts::default();
        assert!(on_disk_before(false, dir, &facts).is_none());
        let why = on_disk_before(true, dir, &facts).unwrap().unwrap_err();
        assert!(why.contains("not a filesystem fsdelta formatted"), "{why}");
        facts.mkfs_options = Some(String::new());
        facts.device = "/dev/null".into();
        assert!(on_disk_before(true, dir, &facts).unwrap().is_ok());
    }

    #[test]
    fn the_syncfs_time_joins_umount_s_and_absent_metrics_are_named_in_the_facts() {
        let mut metrics = vec![Metric::new(
            "umount_s",
            0.5,
            Unit::Seconds,
            Direction::LowerIsBetter,
        )];
        let mut facts = SiteFacts::default();
        let report = ondisk::Report {
            metrics: vec![Metric::new(
                "mapped_files",
                3.0,
                Unit::Count,
                Direction::Neutral,
            )],
            absent: vec![("compress_ratio".into(), "ext4 does not compress".into())],
            sync: Duration::from_millis(250),
            facts: vec![("ondisk_extents_sampled".into(), "1000 of 5000".into())],
        };
        on_disk_after(Some(Ok(report)), &mut metrics, &mut facts);
        assert_eq!(metrics[0].value, 0.75);
        assert_eq!(metrics[1].name, "mapped_files");
        assert_eq!(facts.extra["umount_s_syncfs_s"], "0.250000");
        assert_eq!(facts.extra["ondisk_extents_sampled"], "1000 of 5000");
        assert_eq!(
            facts.extra["ondisk_absent"],
            "compress_ratio: ext4 does not compress"
        );
        let mut facts = SiteFacts::default();
        on_disk_after(None, &mut metrics, &mut facts);
        assert!(facts.extra["ondisk"].starts_with("off"));
        on_disk_after(Some(Err("why".into())), &mut metrics, &mut facts);
        assert_eq!(facts.extra["ondisk_absent"], "all: why");
        assert_eq!(metrics.len(), 2);
    }
}
