//! fio's output formats for a run of the native engine: `--output-format=json` (and json+, with
//! latency bins) with fio 3.33's structure, field names and number formatting, the normal text
//! summary in fio's layout, and the terse (version 3) lines with fio's fields in fio's order.
//!
//! Why it exists: programs that parse fio's JSON (fsperf, LKP, users' scripts) must read ours
//! unchanged, and people who read fio's text output should find their numbers where they look.
//! Every renderer is a pure function from a [`FioRun`] to a `String`. It must never measure or
//! invent a number: a field fio has and we do not measure is left out, except where a zero is
//! the true value (`drop_ios`, which it never produces; `short_ios`, zero but for the read
//! direction's, where fio 3.33 counts fdatasyncs) or fio itself writes a zero for "no samples" (`bw_min` with `bw_samples`
//! 0). `disk_util` is left out when no file is on a block device (or every job is
//! filecreate's), and `global options` when there are none, as fio does.

use crate::fio::engine::stats::{DirStats, LAT_BOUNDS, PrioStat, READ, TRIM, ThreadStats, WRITE};
use crate::fio::engine::{FioRun, JobResult, cpu_percent, group_ids, rates, version_string};
use crate::fio::jobfile::JobSpec;
use crate::fio::text::{errno_text, num2str};
use crate::probe::histogram::Histogram;
use std::fmt::Write;

/// A JSON value that keeps key order and prints as fio's json.c does.
enum J {
    Obj(Vec<(String, J)>),
    Arr(Vec<J>),
    Int(i128),
    Float(f64),
    Str(String),
}

fn obj(pairs: Vec<(&str, J)>) -> J {
    J::Obj(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn int(v: impl Into<i128>) -> J {
    J::Int(v.into())
}

fn escape(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn render(v: &J, level: usize, out: &mut String) {
    let pad = |n: usize, out: &mut String| out.push_str(&"  ".repeat(n));
    match v {
        J::Obj(pairs) => {
            out.push_str("{\n");
            for (i, (k, v)) in pairs.iter().enumerate() {
                pad(level + 1, out);
                escape(k, out);
                out.push_str(" : ");
                render(v, level + 1, out);
                if i + 1 < pairs.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            pad(level, out);
            out.push('}');
        }
        J::Arr(items) => {
            out.push_str("[\n");
            for (i, v) in items.iter().enumerate() {
                pad(level + 1, out);
                render(v, level + 1, out);
                if i + 1 < items.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            pad(level, out);
            out.push(']');
        }
        J::Int(i) => {
            let _ = write!(out, "{i}");
        }
        J::Float(f) => {
            if f.is_finite() {
                let _ = write!(out, "{f:.6}");
            } else {
                out.push_str("0.000000");
            }
        }
        J::Str(s) => escape(s, out),
    }
}

/// fio's percentile key: `99.000000`.
pub fn percentile_key(p: f64) -> String {
    format!("{p:.6}")
}

/// A latency object; with `plus` (json+) and percentiles, also its `bins`: bucket value (ns) to
/// count for every non-empty bucket, as fio's json+ prints them.
fn lat_json(h: &Histogram, percentiles: Option<&[f64]>, plus: bool) -> J {
    let mut pairs = vec![
        ("min", int(h.min())),
        ("max", int(h.max())),
        ("mean", J::Float(h.mean())),
        ("stddev", J::Float(h.stddev())),
        ("N", int(h.count())),
    ];
    if let Some(ps) = percentiles.filter(|_| h.count() > 0) {
        let vals = h.percentiles(ps);
        let map = ps
            .iter()
            .zip(vals)
            .map(|(p, v)| (percentile_key(*p), int(v.unwrap_or(0))))
            .collect();
        pairs.push(("percentile", J::Obj(map)));
        if plus {
            let bins = h
                .bins()
                .into_iter()
                .map(|(v, c)| (v.to_string(), int(c)))
                .collect();
            pairs.push(("bins", J::Obj(bins)));
        }
    }
    obj(pairs)
}

/// One direction's object; `short`: fio's short_io_u of the direction (see issued rwts).
fn dir_json(d: &DirStats, spec: &JobSpec, group_agg_bw_bytes: u64, short: u64, plus: bool) -> J {
    let (bw_bytes, bw, iops) = rates(d);
    let ps = spec.percentile_list.as_slice();
    let bw_agg = if d.bw_samples.n > 0 && group_agg_bw_bytes > 0 {
        (d.bw_samples.mean() * 100.0 / (group_agg_bw_bytes as f64 / 1024.0)).min(100.0)
    } else {
        0.0
    };
    let mut pairs = vec![
        ("io_bytes", int(d.io_bytes)),
        ("io_kbytes", int(d.io_bytes >> 10)),
        ("bw_bytes", int(bw_bytes)),
        ("bw", int(bw)),
        ("iops", J::Float(iops)),
        ("runtime", int(d.runtime_ms)),
        ("total_ios", int(d.total_ios)),
        ("short_ios", int(short)),
        ("drop_ios", int(0)),
        (
            "slat_ns",
            lat_json(&d.slat, spec.slat_percentiles.then_some(ps), plus),
        ),
        (
            "clat_ns",
            lat_json(&d.clat, spec.clat_percentiles.then_some(ps), plus),
        ),
        (
            "lat_ns",
            lat_json(&d.lat, spec.lat_percentiles.then_some(ps), plus),
        ),
        ("bw_min", int(d.bw_samples.min)),
        ("bw_max", int(d.bw_samples.max)),
        ("bw_agg", J::Float(bw_agg)),
        ("bw_mean", J::Float(d.bw_samples.mean())),
        ("bw_dev", J::Float(d.bw_samples.stddev())),
        ("bw_samples", int(d.bw_samples.n)),
        ("iops_min", int(d.iops_samples.min)),
        ("iops_max", int(d.iops_samples.max)),
        ("iops_mean", J::Float(d.iops_samples.mean())),
        ("iops_stddev", J::Float(d.iops_samples.stddev())),
        ("iops_samples", int(d.iops_samples.n)),
    ];
    // fio's per-priority stats, after lat_ns, when two or more priorities have samples.
    if let Some(prios) = prios_with_samples(d) {
        let name = if spec.lat_percentiles {
            "lat_ns"
        } else {
            "clat_ns"
        };
        let pcts = (spec.clat_percentiles || spec.lat_percentiles).then_some(ps);
        let list = prios
            .map(|p| {
                obj(vec![
                    ("prioclass", int(p.ioprio >> 13)),
                    ("prio", int(p.ioprio & 7)),
                    (name, lat_json(&p.lat, pcts, plus)),
                ])
            })
            .collect();
        let at = pairs
            .iter()
            .position(|(k, _)| *k == "lat_ns")
            .map_or(0, |i| i + 1);
        pairs.insert(at, ("prios", J::Arr(list)));
    }
    obj(pairs)
}

/// A direction's per-priority stats that have samples, when there are two or more (fio prints
/// them only then).
fn prios_with_samples(d: &DirStats) -> Option<impl Iterator<Item = &PrioStat>> {
    let with = || d.prios.iter().filter(|p| p.lat.count() > 0);
    (with().count() >= 2).then(with)
}

fn pct(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        part as f64 * 100.0 / total as f64
    }
}

/// fio's stat_calc_dist: a count's percent of `total`, where a nonzero count under 0.1 %
/// shows as 0.1 (IO depths, submit, complete; text, JSON and terse alike).
fn dist_pct(count: u64, total: u64) -> f64 {
    floored(count, total, 0.1)
}

/// fio's stat_calc_lat: a latency bucket's percent of `total`, where a nonzero count under
/// 0.01 % shows as 0.01 (the `lat (unit)` lines, JSON latency_ns/us/ms, terse).
fn lat_pct(count: u64, total: u64) -> f64 {
    floored(count, total, 0.01)
}

fn floored(count: u64, total: u64, floor: f64) -> f64 {
    let p = pct(count, total);
    if total > 0 && count > 0 && p < floor {
        floor
    } else {
        p
    }
}

/// fio's ddir_rw_sum(total_io_u): the read, write and trim I/Os issued, the total the depth and
/// latency distributions are percentages of (syncs are counted in the depths, not here).
fn rw_issued(st: &ThreadStats) -> u64 {
    st.dir.iter().map(|d| d.total_ios).sum()
}

fn dist(keys: &[&str], counts: &[u64], total: u64) -> J {
    J::Obj(
        keys.iter()
            .zip(counts)
            .map(|(k, c)| (k.to_string(), J::Float(dist_pct(*c, total))))
            .collect(),
    )
}

const DEPTH_KEYS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];
const BATCH_KEYS: [&str; 7] = ["0", "4", "8", "16", "32", "64", ">=64"];

fn lat_keys(n: usize, last_ge: bool) -> Vec<String> {
    let mut k: Vec<String> = LAT_BOUNDS[..n].iter().map(|b| b.to_string()).collect();
    if last_ge {
        k.push(">=2000".to_string());
    }
    k
}

/// Per group and direction: (aggregate bytes/s, per-job bw min, max, io bytes, runtime min, max).
#[derive(Clone, Copy, Debug, Default)]
struct GroupDir {
    io_bytes: u64,
    max_run: u64,
    min_run: u64,
    min_bw: u64,
    max_bw: u64,
}

impl GroupDir {
    fn agg_bw(&self) -> u64 {
        (self.io_bytes * 1000)
            .checked_div(self.max_run)
            .unwrap_or(0)
    }
}

fn group_stats(run: &FioRun) -> Vec<(u32, [GroupDir; 3])> {
    let mut out: Vec<(u32, [GroupDir; 3])> = Vec::new();
    for r in &run.results {
        let idx = match out.iter().position(|(g, _)| *g == r.groupid) {
            Some(i) => i,
            None => {
                out.push((r.groupid, [GroupDir::default(); 3]));
                out.len() - 1
            }
        };
        for d in [READ, WRITE, TRIM] {
            let ds = &r.stats.dir[d];
            if ds.runtime_ms == 0 {
                continue;
            }
            let g = &mut out[idx].1[d];
            let bw = ds.io_bytes * 1000 / ds.runtime_ms;
            if g.max_run == 0 {
                g.min_run = ds.runtime_ms;
                g.min_bw = bw;
            }
            g.io_bytes += ds.io_bytes;
            g.max_run = g.max_run.max(ds.runtime_ms);
            g.min_run = g.min_run.min(ds.runtime_ms);
            g.min_bw = g.min_bw.min(bw);
            g.max_bw = g.max_bw.max(bw);
        }
    }
    out
}

fn job_json(run: &FioRun, r: &JobResult, groups: &[(u32, [GroupDir; 3])], plus: bool) -> J {
    let spec = run.spec(r);
    let st = &r.stats;
    let g = groups
        .iter()
        .find(|(id, _)| *id == r.groupid)
        .map(|(_, d)| *d)
        .unwrap_or_default();
    let (usr, sys) = cpu_percent(st);
    let lb = &st.lat_buckets;
    let rw_total = rw_issued(st);
    let shown = &run.set.jobs[r.options_index].job_options;
    let options = J::Obj(
        shown
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.clone(), J::Str(v.clone())))
            .collect(),
    );
    let sync_ps =
        (spec.clat_percentiles || spec.lat_percentiles).then_some(spec.percentile_list.as_slice());
    let mut pairs = vec![
        ("jobname", J::Str(r.name.clone())),
        ("groupid", int(r.groupid)),
        ("error", int(st.errors.reported.as_ref().map_or(0, |e| e.0))),
        ("eta", int(2147483647)),
        ("elapsed", int(r.elapsed_s)),
    ];
    // fio leaves "job options" out for a job whose section set none (json_add_job_opts).
    if !shown.is_empty() {
        pairs.push(("job options", options));
    }
    pairs.extend([
        (
            "read",
            dir_json(&st.dir[READ], spec, g[READ].agg_bw(), st.datasync_ios, plus),
        ),
        (
            "write",
            dir_json(&st.dir[WRITE], spec, g[WRITE].agg_bw(), 0, plus),
        ),
        (
            "trim",
            dir_json(&st.dir[TRIM], spec, g[TRIM].agg_bw(), 0, plus),
        ),
        (
            "sync",
            obj(vec![
                ("total_ios", int(st.fsync_ios)),
                ("lat_ns", lat_json(&st.sync, sync_ps, plus)),
            ]),
        ),
        ("job_runtime", int(st.job_runtime_ms)),
        ("usr_cpu", J::Float(usr)),
        ("sys_cpu", J::Float(sys)),
        ("ctx", int(st.rusage.ctx)),
        ("majf", int(st.rusage.majf)),
        ("minf", int(st.rusage.minf)),
        (
            "iodepth_level",
            dist(&DEPTH_KEYS, &st.depth_counts, rw_total),
        ),
        (
            "iodepth_submit",
            dist(
                &BATCH_KEYS,
                &st.submit_counts,
                st.submit_counts.iter().sum(),
            ),
        ),
        (
            "iodepth_complete",
            dist(
                &BATCH_KEYS,
                &st.complete_counts,
                st.complete_counts.iter().sum(),
            ),
        ),
        (
            "latency_ns",
            lat_dist(&lat_keys(10, false), &lb.ns, rw_total),
        ),
        (
            "latency_us",
            lat_dist(&lat_keys(10, false), &lb.us, rw_total),
        ),
        (
            "latency_ms",
            lat_dist(&lat_keys(11, true), &lb.ms, rw_total),
        ),
        ("latency_depth", int(latency_depth(st, spec))),
        (
            "latency_target",
            int(spec.latency_target.map_or(0, |t| t.as_nanos() as u64)),
        ),
        ("latency_percentile", J::Float(spec.latency_percentile)),
        (
            "latency_window",
            int(spec.latency_window.as_micros() as u64),
        ),
        // fsdelta's own: which clock timed the job (fio's clocksource= name) and how far a
        // TSC clock was from CLOCK_MONOTONIC at the end of the job.
        (
            "clocksource",
            J::Str(st.clock.source.unwrap_or_default().fio_name().to_string()),
        ),
        ("clocksource_drift_ppm", J::Float(st.clock.drift_ppm)),
    ]);
    // fio's show_thread_status_json: with continue_on_error, the count and the first error
    // after the latency buckets.
    if spec.continue_on_error != 0 {
        let at = pairs
            .iter()
            .position(|(k, _)| *k == "latency_depth")
            .unwrap_or(pairs.len());
        pairs.insert(at, ("first_error", int(st.errors.first)));
        pairs.insert(at, ("total_err", int(st.errors.total)));
    }
    if let Some(d) = spec.description.as_ref().filter(|d| !d.is_empty()) {
        pairs.push(("desc", J::Str(d.clone())));
    }
    obj(pairs)
}

/// fio 3.33's JSON keeps one zeroed entry per clone of a stats=0 job, after the reported
/// ones: no jobname or job options, groupid 4294967295 (fio's -1), the directions, sync, CPU and
/// depth keys all zero, the latency buckets at 0.0; nothing past latency_ms (checked on fio
/// 3.33: three stats=0 jobs, one of them numjobs=2, give four such entries).
fn unreported_entries(run: &FioRun, plus: bool) -> Vec<J> {
    let clones: u32 = run
        .set
        .jobs
        .iter()
        .filter(|j| !j.stats)
        .map(|j| j.numjobs.max(1))
        .sum();
    let spec = JobSpec {
        clat_percentiles: false,
        lat_percentiles: false,
        ..JobSpec::default()
    };
    let st = ThreadStats::default();
    let zero = |d: usize| dir_json(&st.dir[d], &spec, 0, 0, plus);
    let elapsed = run.elapsed.0.div_ceil(1_000_000_000).max(1);
    (0..clones)
        .map(|_| {
            obj(vec![
                ("groupid", int(u32::MAX)),
                ("error", int(0)),
                ("eta", int(2147483647)),
                ("elapsed", int(elapsed)),
                ("read", zero(READ)),
                ("write", zero(WRITE)),
                ("trim", zero(TRIM)),
                (
                    "sync",
                    obj(vec![
                        ("total_ios", int(0)),
                        ("lat_ns", lat_json(&st.sync, None, plus)),
                    ]),
                ),
                ("job_runtime", int(0)),
                ("usr_cpu", J::Float(0.0)),
                ("sys_cpu", J::Float(0.0)),
                ("ctx", int(0)),
                ("majf", int(0)),
                ("minf", int(0)),
                ("iodepth_level", dist(&DEPTH_KEYS, &st.depth_counts, 0)),
                ("iodepth_submit", dist(&BATCH_KEYS, &st.submit_counts, 0)),
                (
                    "iodepth_complete",
                    dist(&BATCH_KEYS, &st.complete_counts, 0),
                ),
                ("latency_ns", lat_dist(&lat_keys(10, false), &[0; 10], 0)),
                ("latency_us", lat_dist(&lat_keys(10, false), &[0; 10], 0)),
                ("latency_ms", lat_dist(&lat_keys(11, true), &[0; 12], 0)),
            ])
        })
        .collect()
}

fn lat_dist(keys: &[String], counts: &[u64], total: u64) -> J {
    J::Obj(
        keys.iter()
            .zip(counts)
            .map(|(k, c)| (k.clone(), J::Float(lat_pct(*c, total))))
            .collect(),
    )
}

/// fio's latency_depth: td->latency_qd, the depth latency_target settled on, else the job's
/// iodepth as set (a synchronous engine's too: fio notes that it runs at depth 1, and still
/// reports the iodepth).
fn latency_depth(st: &ThreadStats, spec: &JobSpec) -> u32 {
    st.latency_depth.unwrap_or(spec.iodepth)
}

/// Local time as C's ctime prints it, without the newline: `Wed Dec  2 10:21:54 2026`.
fn ctime(unix_secs: u64) -> String {
    chrono::DateTime::from_timestamp(unix_secs as i64, 0)
        .map(|t| {
            t.with_timezone(&chrono::Local)
                .format("%a %b %e %H:%M:%S %Y")
                .to_string()
        })
        .unwrap_or_default()
}

/// fio's `--output-format=json`.
pub fn json(run: &FioRun) -> String {
    json_doc(run, false)
}

/// fio's `--output-format=json+`: the JSON with each latency's `bins` where it has percentiles.
pub fn json_plus(run: &FioRun) -> String {
    json_doc(run, true)
}

fn json_doc(run: &FioRun, plus: bool) -> String {
    let groups = group_stats(run);
    // fio stamps a report with the time it prints it (the end of the run, or the moment of a
    // --status-interval report).
    let report_ms = run.started_unix_ms + run.elapsed.0 / 1_000_000;
    let secs = report_ms / 1000;
    let time = ctime(secs);
    let globals: Vec<(String, J)> = run
        .set
        .global_options
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k.clone(), J::Str(v.clone())))
        .collect();
    let mut top = vec![
        ("fio version", J::Str(version_string())),
        ("timestamp", int(secs)),
        ("timestamp_ms", int(report_ms)),
        ("time", J::Str(time)),
    ];
    if !globals.is_empty() {
        top.push(("global options", J::Obj(globals)));
    }
    let mut jobs: Vec<J> = run
        .results
        .iter()
        .map(|r| job_json(run, r, &groups, plus))
        .collect();
    jobs.extend(unreported_entries(run, plus));
    top.push(("jobs", J::Arr(jobs)));
    if !run.disk_util.is_empty() {
        let disks = run
            .disk_util
            .iter()
            .map(|d| {
                obj(vec![
                    ("name", J::Str(d.name.clone())),
                    ("read_ios", int(d.read_ios)),
                    ("write_ios", int(d.write_ios)),
                    ("read_merges", int(d.read_merges)),
                    ("write_merges", int(d.write_merges)),
                    ("read_ticks", int(d.read_ticks)),
                    ("write_ticks", int(d.write_ticks)),
                    ("in_queue", int(d.in_queue)),
                    ("util", J::Float(d.util)),
                ])
            })
            .collect();
        top.push(("disk_util", J::Arr(disks)));
    }
    let doc = obj(top);
    let mut out = String::new();
    render(&doc, 0, &mut out);
    out.push('\n');
    out
}

fn scale_lat(min: u64, max: u64, mean: f64, dev: f64) -> (&'static str, u64, u64, f64, f64) {
    if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        (
            "msec",
            min / 1_000_000,
            max / 1_000_000,
            mean / 1e6,
            dev / 1e6,
        )
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        ("usec", min / 1000, max / 1000, mean / 1e3, dev / 1e3)
    } else {
        ("nsec", min, max, mean, dev)
    }
}

fn display_lat(out: &mut String, name: &str, h: &Histogram) {
    if h.count() == 0 {
        return;
    }
    let (base, min, max, mean, dev) = scale_lat(h.min(), h.max(), h.mean(), h.stddev());
    let _ = writeln!(
        out,
        "    {name} ({base}): min={}, max={}, avg={mean:5.02}, stdev={dev:5.02}",
        num2str(min, 6, false, ""),
        num2str(max, 6, false, ""),
    );
}

fn show_percentiles(out: &mut String, name: &str, h: &Histogram, ps: &[f64]) {
    if h.count() == 0 || ps.is_empty() {
        return;
    }
    let vals: Vec<u64> = h
        .percentiles(ps)
        .into_iter()
        .map(|v| v.unwrap_or(0))
        .collect();
    let minv = *vals.iter().min().unwrap_or(&0);
    let maxv = *vals.iter().max().unwrap_or(&0);
    let (unit, divisor, scale) = if minv > 2_000_000 && maxv > 99_999_999 {
        ("msec", 1_000_000u64, 2)
    } else if minv > 2000 && maxv > 99_999 {
        ("usec", 1000, 1)
    } else {
        ("nsec", 1, 0)
    };
    let _ = write!(out, "    {name} percentiles ({unit}):\n     |");
    let width = 5.max(((maxv / divisor).max(1) as f64).log10() as usize + 1);
    let precision = 2;
    let per_line = (80 - 7) / (precision + 10 + width);
    for (j, (p, v)) in ps.iter().zip(&vals).enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let mut v = *v;
        for _ in 0..scale {
            v = v.div_ceil(1000);
        }
        let last = j == ps.len() - 1;
        let _ = write!(
            out,
            " {p:>w$.prec$}th=[{v:>width$}]{}",
            if last { '\n' } else { ',' },
            w = precision + 3,
            prec = precision,
        );
        if last {
            break;
        }
        if j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// fio's show_latencies: the `lat (nsec)`, `lat (usec)` and `lat (msec)` bucket lines, each
/// bucket's share of the read, write and trim I/Os (stat_calc_lat, 0.01 at least when nonzero),
/// empty buckets left out, a new line every five buckets (show_lat).
fn lat_bucket_lines(out: &mut String, st: &ThreadStats) {
    let total = rw_issued(st);
    let scales: [(&str, &[u64], usize); 3] = [
        ("nsec", &st.lat_buckets.ns, 10),
        ("usec", &st.lat_buckets.us, 10),
        ("msec", &st.lat_buckets.ms, 12),
    ];
    for (unit, counts, n) in scales {
        let keys = lat_keys(n.min(11), n == 12);
        let parts: Vec<String> = keys
            .iter()
            .zip(counts.iter())
            .map(|(k, c)| (k, lat_pct(*c, total)))
            .filter(|(_, p)| *p > 0.0)
            .map(|(k, p)| format!("{k}={p:3.2}%"))
            .collect();
        for line in parts.chunks(5) {
            let _ = writeln!(out, "  lat ({unit})   : {}", line.join(", "));
        }
    }
}

/// fio's bw line of show_ddir_status: KiB/s, or MiB/s (min, max, mean and stdev divided by
/// 1024, min and max truncated) when the mean is above 1024 KiB/s squared; `per` is the mean's
/// share of the group's aggregate, from the mean in KiB/s.
fn bw_line(out: &mut String, b: &crate::fio::engine::stats::RunningStat, per: f64) {
    let (mut min, mut max, mut mean, mut dev) = (b.min, b.max, b.mean(), b.stddev());
    let mut unit = "KiB";
    if mean > 1024.0 * 1024.0 {
        min = (min as f64 / 1024.0) as u64;
        max = (max as f64 / 1024.0) as u64;
        mean /= 1024.0;
        dev /= 1024.0;
        unit = "MiB";
    }
    let _ = writeln!(
        out,
        "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={per:3.2}%, avg={mean:5.02}, stdev={dev:5.02}, samples={}",
        b.n
    );
}

/// fio's iops line of show_ddir_status.
fn iops_line(out: &mut String, i: &crate::fio::engine::stats::RunningStat) {
    let _ = writeln!(
        out,
        "   iops        : min={:5}, max={:5}, avg={:5.02}, stdev={:5.02}, samples={}",
        i.min,
        i.max,
        i.mean(),
        i.stddev(),
        i.n
    );
}

/// fio's `bs=(R) 4096B-4096B` part: min and max block size through num2str (4 digits).
fn bs_range(job: &crate::fio::jobfile::JobSpec, d: usize) -> String {
    format!(
        "{}-{}",
        num2str(job.min_bs(d), 4, true, "B"),
        num2str(job.max_bs(d), 4, true, "B")
    )
}

/// fio's normal (text) output.
pub fn normal(run: &FioRun) -> String {
    let mut out = normal_header(&run.set);
    out.push_str(&normal_block(run));
    out
}

/// The lines fio prints before its jobs start (each job's rw, bs, engine and depth, fio's
/// version, "Starting N threads"): the head of [`normal`], printed once when
/// `--status-interval` reports follow.
pub fn normal_header(set: &crate::fio::jobfile::JobSet) -> String {
    let mut out = String::new();
    let gids = group_ids(set);
    let mut threads = 0u32;
    for (i, job) in set.jobs.iter().enumerate() {
        let _ = writeln!(
            out,
            "{}: (g={}): rw={}, bs=(R) {}, (W) {}, (T) {}, ioengine={}, iodepth={}",
            job.name,
            gids[i],
            job.rw.as_str(),
            bs_range(job, READ),
            bs_range(job, WRITE),
            bs_range(job, 2),
            job.ioengine.as_str(),
            job.iodepth
        );
        if job.numjobs > 1 {
            out.push_str("...\n");
        }
        threads += job.numjobs;
    }
    let _ = writeln!(out, "{}", version_string());
    let _ = writeln!(
        out,
        "Starting {threads} thread{}",
        if threads == 1 { "" } else { "s" }
    );
    out
}

/// One direction's lines of a job in fio's normal output (show_ddir_status): IOPS and
/// bandwidth, the latencies, the percentiles, the per-priority latencies and the bandwidth and
/// IOPS samples; nothing for a direction that did not run.
fn normal_dir(
    out: &mut String,
    r: &JobResult,
    spec: &JobSpec,
    groups: &[(u32, [GroupDir; 3])],
    d: usize,
    dname: &str,
) {
    let st = &r.stats;
    let ds = &st.dir[d];
    if ds.runtime_ms == 0 {
        return;
    }
    let (bw_bytes, _, _) = rates(ds);
    let iops = 1000 * ds.total_ios / ds.runtime_ms;
    let _ = writeln!(
        out,
        "  {dname}: IOPS={}, BW={} ({})({}/{}msec){}",
        num2str(iops, 4, false, ""),
        num2str(bw_bytes, 4, true, "B/s"),
        num2str(bw_bytes, 4, false, "B/s"),
        num2str(ds.io_bytes, 4, true, "B"),
        ds.runtime_ms,
        // fio's zbd_write_status, printed for every write line.
        if d == WRITE {
            format!("; {} zone resets", st.zone_resets)
        } else {
            String::new()
        }
    );
    display_lat(out, "slat", &ds.slat);
    display_lat(out, "clat", &ds.clat);
    display_lat(out, " lat", &ds.lat);
    let clat_type = if spec.lat_percentiles { "lat" } else { "clat" };
    let prio_name = |p: &PrioStat| format!("{clat_type} prio {}/{}", p.ioprio >> 13, p.ioprio & 7);
    if let Some(prios) = prios_with_samples(ds) {
        for p in prios {
            display_lat(out, &prio_name(p), &p.lat);
        }
    }
    // fio's show_ddir_status: slat, then clat, then lat percentiles.
    if spec.slat_percentiles {
        show_percentiles(out, "slat", &ds.slat, &spec.percentile_list);
    }
    if spec.clat_percentiles {
        show_percentiles(out, "clat", &ds.clat, &spec.percentile_list);
    }
    if spec.lat_percentiles {
        show_percentiles(out, "lat", &ds.lat, &spec.percentile_list);
    }
    if spec.clat_percentiles || spec.lat_percentiles {
        let all = if spec.lat_percentiles {
            ds.lat.count()
        } else {
            ds.clat.count()
        };
        if let Some(prios) = prios_with_samples(ds) {
            for p in prios {
                let name = format!("{} ({:.2}% of IOs)", prio_name(p), pct(p.lat.count(), all));
                show_percentiles(out, &name, &p.lat, &spec.percentile_list);
            }
        }
    }
    if ds.bw_samples.n > 0 {
        let g = groups
            .iter()
            .find(|(id, _)| *id == r.groupid)
            .map(|(_, g)| g[d].agg_bw())
            .unwrap_or(0);
        let agg = if g > 0 {
            (ds.bw_samples.mean() * 100.0 / (g as f64 / 1024.0)).min(100.0)
        } else {
            0.0
        };
        bw_line(out, &ds.bw_samples, agg);
        iops_line(out, &ds.iops_samples);
    }
}

/// A job's closing lines in fio's normal output: CPU, I/O depths, submit and complete
/// batches, issued I/Os, errors (continue_on_error) and the latency target.
fn normal_job_counts(out: &mut String, spec: &JobSpec, st: &ThreadStats) {
    let (usr, sys) = cpu_percent(st);
    let _ = writeln!(
        out,
        "  cpu          : usr={usr:.2}%, sys={sys:.2}%, ctx={}, majf={}, minf={}",
        st.rusage.ctx, st.rusage.majf, st.rusage.minf
    );
    // Percentages of the read, write and trim I/Os; syncs are among the depth counts (fio's
    // io_u_map), so the levels may add up to more than 100 %.
    let rw_total = rw_issued(st);
    let depth: Vec<String> = DEPTH_KEYS
        .iter()
        .zip(st.depth_counts)
        .map(|(k, c)| format!("{k}={:3.1}%", dist_pct(c, rw_total)))
        .collect();
    let _ = writeln!(out, "  IO depths    : {}", depth.join(", "));
    for (label, counts) in [
        ("submit", &st.submit_counts),
        ("complete", &st.complete_counts),
    ] {
        let total: u64 = counts.iter().sum();
        let parts: Vec<String> = BATCH_KEYS
            .iter()
            .zip(counts.iter())
            .map(|(k, c)| format!("{k}={:3.1}%", dist_pct(*c, total)))
            .collect();
        let _ = writeln!(out, "     {label:<10}: {}", parts.join(", "));
    }
    // fio's total_io_u: read, write, trim and fsync (DDIR_SYNC). fio 3.33 counts an
    // fdatasync in total_io_u[DDIR_DATASYNC], one past that array's end, where short_io_u[0]
    // is: its fdatasyncs show as the first `short` count.
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},{} short={},0,0,0 dropped=0,0,0,0",
        st.dir[READ].total_ios,
        st.dir[WRITE].total_ios,
        st.dir[TRIM].total_ios,
        st.fsync_ios,
        st.datasync_ios
    );
    if spec.continue_on_error != 0 {
        let _ = writeln!(
            out,
            "     errors    : total={}, first_error={}/<{}>",
            st.errors.total,
            st.errors.first,
            errno_text(st.errors.first)
        );
    }
    // fio's latency line: target in ns, window in us, as the JSON has them.
    let depth = latency_depth(st, spec);
    if depth > 0 {
        let _ = writeln!(
            out,
            "     latency   : target={}, window={}, percentile={:.2}%, depth={depth}",
            spec.latency_target.map_or(0, |t| t.as_nanos()),
            spec.latency_window.as_micros(),
            spec.latency_percentile
        );
    }
}

/// One report of fio's normal output (a blank line, every job's block, the groups' run
/// status and the disk stats): the body of [`normal`], and what each `--status-interval`
/// report prints.
pub fn normal_block(run: &FioRun) -> String {
    let mut out = String::from("\n");
    let groups = group_stats(run);
    let end_ms = run.started_unix_ms + run.elapsed.0 / 1_000_000;
    let end_time = ctime(end_ms / 1000);
    for r in &run.results {
        let spec = run.spec(r);
        let st = &r.stats;
        // fio's "err=%2d (%s)", the verror as fio kept it (empty when nothing set it).
        let err = match &st.errors.reported {
            Some((errno, verror)) => format!("{errno:2} ({verror})"),
            None => " 0".to_string(),
        };
        let _ = writeln!(
            out,
            "{}: (groupid={}, jobs={}): err={err}: pid={}: {}",
            r.name, r.groupid, r.clones, st.tid, end_time
        );
        if let Some(d) = spec.description.as_ref().filter(|d| !d.is_empty()) {
            let _ = writeln!(out, "  Description  : [{d}]");
        }
        for (d, dname) in [(READ, "read"), (WRITE, "write"), (TRIM, "trim")] {
            normal_dir(&mut out, r, spec, &groups, d, dname);
        }
        // fio's show_thread_status_normal: the latency buckets, then the sync block.
        lat_bucket_lines(&mut out, st);
        if st.sync.count() > 0 {
            out.push_str("  fsync/fdatasync/sync_file_range:\n");
            display_lat(&mut out, "sync", &st.sync);
            show_percentiles(&mut out, "sync", &st.sync, &spec.percentile_list);
        }
        normal_job_counts(&mut out, spec, st);
    }
    for (gid, dirs) in &groups {
        let _ = writeln!(out, "\nRun status group {gid} (all jobs):");
        for (d, dname) in [(READ, "READ"), (WRITE, "WRITE"), (TRIM, "TRIM")] {
            let g = &dirs[d];
            if g.max_run == 0 {
                continue;
            }
            let agg = g.agg_bw();
            let _ = writeln!(
                out,
                "{dname:>7}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
                num2str(agg, 4, true, "B/s"),
                num2str(agg, 4, false, "B/s"),
                num2str(g.min_bw, 4, true, "B/s"),
                num2str(g.max_bw, 4, true, "B/s"),
                num2str(g.min_bw, 4, false, "B/s"),
                num2str(g.max_bw, 4, false, "B/s"),
                num2str(g.io_bytes, 4, true, "B"),
                num2str(g.io_bytes, 4, false, "B"),
                g.min_run,
                g.max_run
            );
        }
    }
    if !run.disk_util.is_empty() {
        out.push_str("\nDisk stats (read/write):\n");
        for d in &run.disk_util {
            let _ = writeln!(
                out,
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:.2}%",
                d.name,
                d.read_ios,
                d.write_ios,
                d.read_merges,
                d.write_merges,
                d.read_ticks,
                d.write_ticks,
                d.in_queue,
                d.util
            );
        }
    }
    out
}

/// fio's terse version 3 `;min;max;mean;stdev` of a latency in µs (integer min/max, fio's
/// `calc_lat` zeros when there are no samples).
fn terse_lat(out: &mut String, h: &Histogram) {
    if h.count() == 0 {
        out.push_str(";0;0;0.000000;0.000000");
    } else {
        let _ = write!(
            out,
            ";{};{};{:.6};{:.6}",
            h.min() / 1000,
            h.max() / 1000,
            h.mean() / 1000.0,
            h.stddev() / 1000.0
        );
    }
}

/// One direction of a terse line (fio's show_ddir_status_terse, version 3).
fn terse_dir(
    out: &mut String,
    d: &DirStats,
    spec: &JobSpec,
    group_agg_bw_bytes: u64,
    version: TerseVersion,
) {
    let (bw, iops) = match d.runtime_ms {
        0 => (0, 0),
        runt => ((1000 * d.io_bytes / runt) / 1024, 1000 * d.total_ios / runt),
    };
    let _ = write!(
        out,
        ";{};{};{};{}",
        d.io_bytes >> 10,
        bw,
        iops,
        d.runtime_ms
    );
    terse_lat(out, &d.slat);
    terse_lat(out, &d.clat);
    // Twenty percentile slots: the list's values (0 when there are no samples), then `0%=0`.
    let ps = spec.percentile_list.as_slice();
    let hist = if spec.lat_percentiles {
        Some(&d.lat)
    } else if spec.clat_percentiles {
        Some(&d.clat)
    } else {
        None
    };
    let vals: Vec<u64> = match hist {
        Some(h) if h.count() > 0 => h
            .percentiles(ps)
            .into_iter()
            .map(|v| v.unwrap_or(0))
            .collect(),
        Some(_) => vec![0; ps.len()],
        None => Vec::new(),
    };
    for (p, v) in ps.iter().zip(&vals).take(TERSE_PERCENTILES) {
        let _ = write!(out, ";{p:.6}%={}", v / 1000);
    }
    for _ in vals.len().min(TERSE_PERCENTILES)..TERSE_PERCENTILES {
        out.push_str(";0%=0");
    }
    terse_lat(out, &d.lat);
    let b = &d.bw_samples;
    if b.n == 0 {
        out.push_str(";0;0;0.000000%;0.000000;0.000000");
    } else {
        let agg_kib = group_agg_bw_bytes / 1024;
        let p_of_agg = if group_agg_bw_bytes > 0 {
            (b.mean() * 100.0 / agg_kib as f64).min(100.0)
        } else {
            100.0
        };
        let _ = write!(
            out,
            ";{};{};{:.6}%;{:.6};{:.6}",
            b.min,
            b.max,
            p_of_agg,
            b.mean(),
            b.stddev()
        );
    }
    // Version 5 adds the bw sample count and the iops samples' min;max;mean;dev;count.
    if version.0 == 5 {
        let _ = write!(out, ";{}", b.n);
        let i = &d.iops_samples;
        if i.n == 0 {
            out.push_str(";0;0;0.000000;0.000000;0");
        } else {
            let _ = write!(
                out,
                ";{};{};{:.6};{:.6};{}",
                i.min,
                i.max,
                i.mean(),
                i.stddev(),
                i.n
            );
        }
    }
}

/// fio's percentile slots in a terse line (FIO_IO_U_LIST_MAX_LEN).
const TERSE_PERCENTILES: usize = 20;

/// A terse format version fio 3.33 prints (`--terse-version`, 2 to 5; 3 is fio's default).
/// Version 2 has no fio version field, a trim block and no disk utilization; 3 drops the trim
/// block and adds the fio version and disk utilization; 4 is 3 with the trim block back; 5 is 4
/// with each direction's bw sample count and iops samples (min, max, mean, dev, count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TerseVersion(u32);

impl TerseVersion {
    /// fio's default terse version.
    pub const DEFAULT: TerseVersion = TerseVersion(3);

    /// The version `v`, when fio 3.33 knows it (2 to 5).
    pub fn new(v: u32) -> Option<TerseVersion> {
        (2..=5).contains(&v).then_some(TerseVersion(v))
    }
}

impl Default for TerseVersion {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// fio's `--output-format=terse` (`--minimal`) in terse version `version`: one `;`-separated
/// line per job, as fio 3.33's show_thread_status_terse_all prints it (read and write blocks,
/// the trim block in versions 2, 4 and 5; the disk util fields from version 3 on, when a file
/// is on a block device; version 2 puts the description on a line of its own, as fio does).
pub fn terse(run: &FioRun, version: TerseVersion) -> String {
    let groups = group_stats(run);
    let mut out = String::new();
    for r in &run.results {
        let spec = run.spec(r);
        let st = &r.stats;
        let g = groups
            .iter()
            .find(|(id, _)| *id == r.groupid)
            .map(|(_, d)| *d)
            .unwrap_or_default();
        let errno = st.errors.reported.as_ref().map_or(0, |e| e.0);
        let v = version.0;
        if v == 2 {
            let _ = write!(out, "2;{};{};{errno}", r.name, r.groupid);
        } else {
            let _ = write!(
                out,
                "{v};{};{};{};{errno}",
                version_string(),
                r.name,
                r.groupid
            );
        }
        terse_dir(&mut out, &st.dir[READ], spec, g[READ].agg_bw(), version);
        terse_dir(&mut out, &st.dir[WRITE], spec, g[WRITE].agg_bw(), version);
        if v != 3 {
            terse_dir(&mut out, &st.dir[TRIM], spec, g[TRIM].agg_bw(), version);
        }
        let (usr, sys) = cpu_percent(st);
        let _ = write!(
            out,
            ";{usr:.6}%;{sys:.6}%;{};{};{}",
            st.rusage.ctx, st.rusage.majf, st.rusage.minf
        );
        let rw_total = rw_issued(st);
        for c in &st.depth_counts {
            let _ = write!(out, ";{:.1}%", dist_pct(*c, rw_total));
        }
        // fio folds the nanosecond buckets into the first microsecond one ("to keep the terse
        // format unaltered").
        // (stat_calc_lat_nu: the first µs bucket's floored share plus the ns buckets' share.)
        let lb = &st.lat_buckets;
        let ns: u64 = lb.ns.iter().sum();
        for (i, c) in lb.us.iter().enumerate() {
            let extra = if i == 0 { pct(ns, rw_total) } else { 0.0 };
            let _ = write!(out, ";{:.2}%", lat_pct(*c, rw_total) + extra);
        }
        for c in &lb.ms {
            let _ = write!(out, ";{:.2}%", lat_pct(*c, rw_total));
        }
        for d in run.disk_util.iter().filter(|_| v >= 3) {
            let _ = write!(
                out,
                ";{};{};{};{};{};{};{};{};{:.2}%",
                d.name,
                d.read_ios,
                d.write_ios,
                d.read_merges,
                d.write_merges,
                d.read_ticks,
                d.write_ticks,
                d.in_queue,
                d.util
            );
        }
        // fio's "additional output if continue_on_error set".
        if spec.continue_on_error != 0 {
            let _ = write!(out, ";{};{}", st.errors.total, st.errors.first);
        }
        if let Some(desc) = spec.description.as_ref().filter(|d| !d.is_empty()) {
            if v == 2 {
                out.push('\n');
            }
            let _ = write!(out, ";{desc}");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_keys_are_fios() {
        assert_eq!(percentile_key(99.0), "99.000000");
        assert_eq!(percentile_key(99.95), "99.950000");
    }

    #[test]
    fn json_renders_with_fios_separators_and_floats() {
        let doc = obj(vec![
            ("a", int(1)),
            ("b", J::Float(2.5)),
            ("c", J::Arr(vec![J::Str("x\"y".into())])),
        ]);
        let mut s = String::new();
        render(&doc, 0, &mut s);
        assert_eq!(
            s,
            "{\n  \"a\" : 1,\n  \"b\" : 2.500000,\n  \"c\" : [\n    \"x\\\"y\"\n  ]\n}"
        );
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["b"], 2.5);
    }

    #[test]
    fn percentile_rows_follow_fios_layout() {
        let mut h = Histogram::new();
        for v in 1000..2000u64 {
            h.record(v);
        }
        let mut out = String::new();
        show_percentiles(&mut out, "clat", &h, &[1.0, 5.0, 10.0, 20.0, 50.0]);
        assert!(
            out.starts_with("    clat percentiles (nsec):\n     |  1.00th=[ 1012],"),
            "{out}"
        );
        assert!(out.contains("\n     | 50.00th=["), "{out}");
        assert!(out.ends_with("]\n"));
    }

    /// A one-job run of `job` (a job file's text) that measured `st`.
    fn run_of(job: &str, st: ThreadStats) -> FioRun {
        use crate::fio::jobfile::{SystemSources, parse_job_text};
        let set = parse_job_text(job, "t.fio", &SystemSources).unwrap();
        FioRun {
            results: vec![JobResult {
                job_index: 0,
                options_index: 0,
                name: set.jobs[0].name.clone(),
                groupid: 0,
                clones: 1,
                stats: st,
                elapsed_s: 1,
            }],
            set,
            started_unix_ms: 0,
            elapsed: crate::probe::clock::Nanos(0),
            disk_util: Vec::new(),
        }
    }

    /// Lines of `text` from the first one starting with `from` to the first after it
    /// starting with `to`, both kept.
    fn lines_between<'a>(text: &'a str, from: &str, to: &str) -> Vec<&'a str> {
        let mut out = Vec::new();
        for l in text.lines().skip_while(|l| !l.starts_with(from)) {
            out.push(l);
            if l.starts_with(to) {
                break;
            }
        }
        out
    }

    #[test]
    fn lat_buckets_wrap_every_five_and_floor_at_001() {
        // fio 3.33, randread bs=512 size=16m libaio iodepth=4 (32768 I/Os):
        let fio = "  lat (usec)   : 2=0.01%, 4=0.01%, 10=76.17%, 20=0.66%, 50=7.61%\n\
                   \x20 lat (usec)   : 100=8.09%, 250=4.54%, 500=0.37%, 750=1.74%, 1000=0.08%\n\
                   \x20 lat (msec)   : 2=0.61%, 4=0.08%, 10=0.05%\n";
        let mut st = ThreadStats::default();
        st.dir[READ].total_ios = 32768;
        st.lat_buckets.us = [1, 1, 24959, 216, 2494, 2651, 1488, 121, 571, 26];
        st.lat_buckets.ms[..3].copy_from_slice(&[200, 26, 16]);
        let mut out = String::new();
        lat_bucket_lines(&mut out, &st);
        assert_eq!(out, fio);
        // Its JSON: "latency_us" : { "2" : 0.010000, ...
        let j = lat_dist(&lat_keys(10, false), &st.lat_buckets.us, 32768);
        let mut s = String::new();
        render(&j, 0, &mut s);
        assert!(
            s.starts_with("{\n  \"2\" : 0.010000,\n  \"4\" : 0.010000,"),
            "{s}"
        );
    }

    #[test]
    fn depth_levels_floor_at_01() {
        // fio 3.33, the same job: "IO depths    : 1=0.1%, 2=0.1%, 4=100.0%, 8=0.0%, ..." and
        // JSON iodepth_level "1" : 0.100000.
        assert_eq!(format!("{:3.1}", dist_pct(4, 32768)), "0.1");
        assert_eq!(format!("{:3.1}", dist_pct(32760, 32768)), "100.0");
        assert_eq!(format!("{:3.1}", dist_pct(0, 32768)), "0.0");
        assert_eq!(dist_pct(3, 0), 0.0);
        let j = dist(&DEPTH_KEYS, &[4, 4, 32760, 0, 0, 0, 0], 32768);
        let mut s = String::new();
        render(&j, 0, &mut s);
        assert!(
            s.starts_with("{\n  \"1\" : 0.100000,\n  \"2\" : 0.100000,"),
            "{s}"
        );
    }

    #[test]
    fn bw_and_iops_lines_are_padded_and_scaled_as_fios() {
        // fio 3.33, psync write bs=4k size=8m fsync=4: two samples.
        let mut bw = crate::fio::engine::stats::RunningStat::default();
        bw.add(4352);
        bw.add(6592);
        let mut iops = crate::fio::engine::stats::RunningStat::default();
        iops.add(1088);
        iops.add(1648);
        let mut out = String::new();
        bw_line(&mut out, &bw, 97.39);
        iops_line(&mut out, &iops);
        assert_eq!(
            out,
            "   bw (  KiB/s): min= 4352, max= 6592, per=97.39%, avg=5472.00, stdev=1583.92, samples=2\n\
             \x20  iops        : min= 1088, max= 1648, avg=1368.00, stdev=395.98, samples=2\n"
        );
        // fio 3.33, psync read bs=1m time_based runtime=1: a mean above 1 GiB/s in MiB/s.
        let mut bw = crate::fio::engine::stats::RunningStat::default();
        bw.add(1898 * 1024);
        let mut out = String::new();
        bw_line(&mut out, &bw, 96.44);
        assert_eq!(
            out,
            "   bw (  MiB/s): min= 1898, max= 1898, per=96.44%, avg=1898.00, stdev= 0.00, samples=1\n"
        );
    }

    #[test]
    fn sync_block_follows_lat_buckets_and_syncs_are_issued_and_in_depths() {
        // fio 3.33 on this job (fs.out): the lat buckets, then the sync block, then cpu; the
        // 511 fsyncs in `issued rwts` and in the depth levels (2559 of 2048 I/Os).
        let job = "[fs]\nrw=write\nbs=4k\nsize=8m\nioengine=psync\nfsync=4\niodepth=8\n";
        let mut st = ThreadStats::default();
        let w = &mut st.dir[WRITE];
        w.total_ios = 2048;
        w.io_bytes = 8 << 20;
        w.runtime_ms = 1458;
        st.lat_buckets.us[..5].copy_from_slice(&[367, 1149, 426, 95, 7]);
        st.lat_buckets.us[6] = 1;
        st.lat_buckets.ms[1] = 1;
        st.lat_buckets.ms[2] = 2;
        for v in [160_000, 2_442_000, 47_773_000] {
            st.sync.record(v);
        }
        st.fsync_ios = 511;
        st.depth_counts[0] = 2048 + 511;
        st.submit_counts[1] = 2048 + 511;
        st.complete_counts[1] = 2048 + 511;
        let out = normal_block(&run_of(job, st));
        let got = lines_between(&out, "  lat (usec)", "     latency");
        let cut = |l: &str| -> String {
            if l.starts_with("    sync (") || l.starts_with("  cpu ") {
                l[..l.find(':').unwrap()].to_string()
            } else {
                l.to_string()
            }
        };
        let got: Vec<String> = got
            .into_iter()
            .filter(|l| !l.starts_with("    sync percentiles") && !l.starts_with("     |"))
            .map(cut)
            .collect();
        let fio = [
            "  lat (usec)   : 2=17.92%, 4=56.10%, 10=20.80%, 20=4.64%, 50=0.34%",
            "  lat (usec)   : 250=0.05%",
            "  lat (msec)   : 4=0.05%, 10=0.10%",
            "  fsync/fdatasync/sync_file_range:",
            "    sync (usec)",
            "  cpu          ",
            "  IO depths    : 1=125.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=0.0%, >=64=0.0%",
            "     submit    : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%",
            "     complete  : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%",
            "     issued rwts: total=0,2048,0,511 short=0,0,0,0 dropped=0,0,0,0",
            "     latency   : target=0, window=0, percentile=100.00%, depth=8",
        ];
        assert_eq!(got, fio, "{out}");
    }

    #[test]
    fn fdatasyncs_show_as_read_short_ios() {
        // fio 3.33, psync write bs=4k size=4m fdatasync=8: "issued rwts: total=0,1024,0,0
        // short=127,0,0,0" and JSON read "short_ios" : 127, sync "total_ios" : 0.
        let job = "[fds]\nrw=write\nbs=4k\nsize=4m\nfdatasync=8\n";
        let mut st = ThreadStats::default();
        st.dir[WRITE].total_ios = 1024;
        st.dir[WRITE].runtime_ms = 10;
        st.datasync_ios = 127;
        let run = run_of(job, st);
        let out = normal_block(&run);
        assert!(
            out.contains("     issued rwts: total=0,1024,0,0 short=127,0,0,0 dropped=0,0,0,0\n"),
            "{out}"
        );
        let v: serde_json::Value = serde_json::from_str(&json(&run)).unwrap();
        assert_eq!(v["jobs"][0]["read"]["short_ios"], 127);
        assert_eq!(v["jobs"][0]["write"]["short_ios"], 0);
        assert_eq!(v["jobs"][0]["sync"]["total_ios"], 0);
    }

    #[test]
    fn latency_line_has_the_target_window_and_percentile() {
        // fio 3.33, libaio iodepth=4 latency_target=10ms latency_window=100ms
        // latency_percentile=90 (the depth it settled on: 2).
        let job = "[lt]\nrw=randread\nbs=4k\nsize=8m\nioengine=libaio\niodepth=4\n\
                   latency_target=10ms\nlatency_window=100ms\nlatency_percentile=90\n";
        let mut st = ThreadStats::default();
        st.dir[READ].total_ios = 100;
        st.dir[READ].runtime_ms = 10;
        st.latency_depth = Some(2);
        let out = normal_block(&run_of(job, st));
        assert!(
            out.contains(
                "\n     latency   : target=10000000, window=100000, percentile=90.00%, depth=2\n"
            ),
            "{out}"
        );
    }

    #[test]
    fn sync_engine_reports_its_iodepth() {
        // fio 3.33, psync iodepth=8: "latency   : ... depth=8", JSON "latency_depth" : 8.
        let job = "[s]\nrw=read\nbs=4k\nsize=4m\nioengine=psync\niodepth=8\n";
        let mut st = ThreadStats::default();
        st.dir[READ].total_ios = 1024;
        st.dir[READ].runtime_ms = 10;
        let run = run_of(job, st);
        assert!(normal_block(&run).contains("percentile=100.00%, depth=8\n"));
        let v: serde_json::Value = serde_json::from_str(&json(&run)).unwrap();
        assert_eq!(v["jobs"][0]["latency_depth"], 8);
    }
}
