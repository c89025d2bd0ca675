//! Part of the option table (see [`super`]): zoned I/O (zonemode, zonesize, zone resets), the
//! latency target and steady state.
//!
//! The rows keep the table's order (the order of `--help` within a category and of the
//! supported-options list): a part is a run of that order, never a regrouping. What it must
//! never do: hold a row another part has.

use super::{Kind, OptDef, SEC};
use crate::fio::jobfile::options::setters::{set_per_ddir_with, set_steadystate};
use crate::fio::jobfile::options::values::{
    size_value, time_value, unit_fraction, value_of, zone_count,
};
use crate::fio::jobfile::{RawOption, ZoneMode, err};

/// Rows `zonemode` to `steadystate_ramp_time`, in the table's order.
pub(super) static ROWS: &[OptDef] = &[
    opt!(
        "zonemode",
        [],
        Kind::Choice(&["none", "strided", "zbd"]),
        "none (strided with zonesize=)",
        Io,
        "none, strided (zones of zonerange bytes, zonesize bytes of I/O each, zoneskip between) or zbd (zones of zonesize emulated over a regular file or non-zoned device, written at their write pointers)",
        |j, v, _| {
            j.zonemode = match v.s() {
                "none" => Some(ZoneMode::None),
                "strided" => Some(ZoneMode::Strided),
                _ => Some(ZoneMode::Zbd),
            };
            Ok(())
        }
    ),
    opt!(
        "zonesize",
        [],
        Kind::Size,
        "0",
        Io,
        "bytes of I/O done in a zone before moving to the next",
        |j, v, _| {
            j.zonesize = v.size().0;
            Ok(())
        }
    ),
    opt!(
        "zonerange",
        [],
        Kind::Size,
        "zonesize",
        Io,
        "extent of a zone",
        |j, v, _| {
            j.zonerange = v.size().0;
            Ok(())
        }
    ),
    opt!(
        "zoneskip",
        [],
        Kind::Text,
        "0",
        Io,
        "bytes skipped between zones (Nz: N zones)",
        |j, v, o| {
            if let Some(n) = zone_count(v.s(), o)? {
                j.zoneskip = 0;
                j.zone_units.zoneskip = n;
                return Ok(());
            }
            j.zoneskip = size_value(o, value_of(o)?)?.0;
            Ok(())
        }
    ),
    opt!(
        "read_beyond_wp",
        [],
        Kind::Bool,
        "0",
        Io,
        "zonemode=zbd: reads may go past a zone's write pointer",
        |j, v, _| {
            j.read_beyond_wp = v.b();
            Ok(())
        }
    ),
    opt!(
        "max_open_zones",
        [],
        Kind::Int { min: 0, max: 4096 },
        "0",
        Io,
        "zonemode=zbd: zones open for writing at once per file, over all jobs (0 = no limit)",
        |j, v, _| {
            j.max_open_zones = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "job_max_open_zones",
        [],
        Kind::Int { min: 0, max: 4096 },
        "0",
        Io,
        "zonemode=zbd: zones one job clone keeps open at once (0 = no limit)",
        |j, v, _| {
            j.job_max_open_zones = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "zone_reset_threshold",
        [],
        Kind::Text,
        "0",
        Io,
        "zonemode=zbd: fraction (0..1) of the region holding data above which writes reset zones",
        |j, v, o| {
            j.zone_reset_threshold = unit_fraction(v.s(), o)?;
            Ok(())
        }
    ),
    opt!(
        "zone_reset_frequency",
        [],
        Kind::Text,
        "0",
        Io,
        "zonemode=zbd: past the threshold, one write in 1/F resets its zone first (0 = never)",
        |j, v, o| {
            j.zone_reset_frequency = unit_fraction(v.s(), o)?;
            Ok(())
        }
    ),
    opt!(
        "max_latency",
        [],
        Kind::Text,
        "0",
        Io,
        "end the job with ETIMEDOUT when an I/O's latency exceeds this (per direction; bare number: microseconds)",
        |j, v, o| set_per_ddir_with(&mut j.max_latency, v, o, |p| {
            let t = time_value(
                &RawOption {
                    value: Some(p.to_string()),
                    ..o.clone()
                },
                1,
            )?;
            Ok(t.as_nanos() as u64)
        })
    ),
    opt!(
        "latency_target",
        [],
        Kind::Time { default_us: 1 },
        "0",
        Io,
        "find the largest depth (up to iodepth) whose I/Os complete within this (bare number: microseconds)",
        |j, v, _| {
            j.latency_target = Some(v.time()).filter(|t| !t.is_zero());
            Ok(())
        }
    ),
    opt!(
        "latency_window",
        [],
        Kind::Time { default_us: 1 },
        "0",
        Io,
        "window over which latency_target is judged (bare number: microseconds)",
        |j, v, _| {
            j.latency_window = v.time();
            Ok(())
        }
    ),
    opt!(
        "latency_percentile",
        [],
        Kind::Text,
        "100",
        Io,
        "percent of a window's I/Os that must meet latency_target",
        |j, v, o| {
            match v.s().parse::<f64>() {
                Ok(p) if p > 0.0 && p <= 100.0 => {
                    j.latency_percentile = p;
                    Ok(())
                }
                _ => err(
                    &o.origin,
                    format!(
                        "option 'latency_percentile': '{}' is not a percentage in (0, 100]",
                        v.s()
                    ),
                ),
            }
        }
    ),
    opt!(
        "latency_run",
        [],
        Kind::Bool,
        "0",
        Io,
        "keep adjusting the depth for the whole run",
        |j, v, _| {
            j.latency_run = v.b();
            Ok(())
        }
    ),
    opt!(
        "steadystate",
        ["ss"],
        Kind::Text,
        "iops_slope:0.01%",
        Time,
        "steady-state criterion iops|iops_slope|bw|bw_slope:LIMIT[%] (with ss_dur)",
        set_steadystate
    ),
    opt!(
        "steadystate_duration",
        ["ss_dur"],
        Kind::Time { default_us: SEC },
        "0",
        Time,
        "stop once steady for this long (bare number: seconds; 0: no detection)",
        |j, v, _| {
            j.ss_dur = v.time();
            Ok(())
        }
    ),
    opt!(
        "steadystate_ramp_time",
        ["ss_ramp"],
        Kind::Time { default_us: SEC },
        "0",
        Time,
        "time before steady-state samples are taken (bare number: seconds)",
        |j, v, _| {
            j.ss_ramp = v.time();
            Ok(())
        }
    ),
];
