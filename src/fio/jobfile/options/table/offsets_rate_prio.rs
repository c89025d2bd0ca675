//! Part of the option table (see [`super`]): where and how much (offset, io_size, number_ios),
//! think time, rate limits, batch completion, I/O priorities (prio, cmdprio_*) and
//! random_distribution.
//!
//! The rows keep the table's order (the order of `--help` within a category and of the
//! supported-options list): a part is a run of that order, never a regrouping. What it must
//! never do: hold a row another part has.

use super::{Kind, OptDef, U32, URING_AIO};
use crate::fio::jobfile::expr::{SizeValue, parse_size};
use crate::fio::jobfile::options::distribution::set_random_distribution;
use crate::fio::jobfile::options::setters::{set_cmdprio, set_per_ddir};
use crate::fio::jobfile::options::values::{size_value, value_of, zone_count};
use crate::fio::jobfile::{Bytes, SizeSpec, cmdprio, err};

/// Rows `offset` to `random_distribution`, in the table's order.
pub(super) static ROWS: &[OptDef] = &[
    opt!(
        "offset",
        [],
        Kind::Text,
        "0",
        Io,
        "start of the I/O region in each file (bytes, N% of the file, or Nz: N zones)",
        |j, v, o| {
            if let Some(n) = zone_count(v.s(), o)? {
                j.offset = SizeSpec::Bytes(Bytes(0));
                j.zone_units.offset = n;
                return Ok(());
            }
            j.offset = match parse_size(v.s()) {
                Ok(SizeValue::Bytes(b)) => SizeSpec::Bytes(b),
                Ok(SizeValue::Percent(p)) if p <= 100 => SizeSpec::Percent(p as u32),
                Ok(SizeValue::Percent(p)) => {
                    return err(
                        &o.origin,
                        format!("option 'offset': {p}% is not in 0..=100"),
                    );
                }
                Err(e) => return err(&o.origin, format!("option 'offset': {e}")),
            };
            Ok(())
        }
    ),
    opt!(
        "offset_increment",
        [],
        Kind::Text,
        "0",
        Io,
        "added to offset for each clone (clone n starts at offset + n * increment; Nz: N zones)",
        |j, v, o| {
            if let Some(n) = zone_count(v.s(), o)? {
                j.offset_increment = Bytes(0);
                j.zone_units.offset_increment = n;
                return Ok(());
            }
            j.offset_increment = size_value(o, value_of(o)?)?;
            Ok(())
        }
    ),
    opt!(
        "io_size",
        ["io_limit"],
        Kind::Text,
        "size",
        Io,
        "bytes of I/O per pass, when not the region's size (Nz: N zones)",
        |j, v, o| {
            if let Some(n) = zone_count(v.s(), o)? {
                j.io_size = None;
                j.zone_units.io_size = n;
                return Ok(());
            }
            let b = size_value(o, value_of(o)?)?;
            if b.0 == 0 {
                return err(&o.origin, "option 'io_size' must be greater than 0");
            }
            j.io_size = Some(b);
            Ok(())
        }
    ),
    opt!(
        "number_ios",
        [],
        Kind::Int {
            min: 0,
            max: u64::MAX
        },
        "0",
        Io,
        "stop after this many I/Os (0: no limit)",
        |j, v, _| {
            j.number_ios = v.n();
            Ok(())
        }
    ),
    opt!(
        "thinktime",
        [],
        Kind::Time { default_us: 1 },
        "0",
        Time,
        "pause after every thinktime_blocks I/Os (bare number: microseconds)",
        |j, v, _| {
            j.thinktime = v.time();
            Ok(())
        }
    ),
    opt!(
        "thinktime_spin",
        [],
        Kind::Time { default_us: 1 },
        "0",
        Time,
        "of thinktime, spin this long instead of sleeping",
        |j, v, _| {
            j.thinktime_spin = v.time();
            Ok(())
        }
    ),
    opt!(
        "thinktime_blocks",
        [],
        Kind::Int { min: 1, max: U32 },
        "1",
        Time,
        "I/Os between think times",
        |j, v, _| {
            j.thinktime_blocks = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "rate",
        [],
        Kind::Text,
        "0",
        Io,
        "bandwidth cap in bytes/s: rate=N (every direction) or rate=READ,WRITE,TRIM",
        |j, v, o| set_per_ddir(&mut j.rate, v, o)
    ),
    opt!(
        "rate_min",
        ["ratemin"],
        Kind::Text,
        "0",
        Io,
        "the job fails when its bandwidth over rate_cycle falls below this (bytes/s per direction)",
        |j, v, o| set_per_ddir(&mut j.rate_min, v, o)
    ),
    opt!(
        "rate_iops",
        [],
        Kind::Text,
        "0",
        Io,
        "I/O cap per second: rate_iops=N or rate_iops=READ,WRITE,TRIM",
        |j, v, o| set_per_ddir(&mut j.rate_iops, v, o)
    ),
    opt!(
        "rate_iops_min",
        [],
        Kind::Text,
        "0",
        Io,
        "the job fails when its IOPS over rate_cycle fall below this (per direction)",
        |j, v, o| set_per_ddir(&mut j.rate_iops_min, v, o)
    ),
    opt!(
        "rate_cycle",
        ["ratecycle"],
        Kind::Int { min: 0, max: U32 },
        "1000",
        Io,
        "window (ms) over which rate_min / rate_iops_min are judged",
        |j, v, _| {
            j.rate_cycle_ms = v.n();
            Ok(())
        }
    ),
    opt!(
        "rate_process",
        [],
        Kind::Choice(&["linear", "poisson"]),
        "linear",
        Io,
        "linear: evenly spaced I/Os; poisson: exponential gaps with the same mean (fio's generator)",
        |j, v, _| {
            j.rate_poisson = v.s() == "poisson";
            Ok(())
        }
    ),
    opt!(
        "rate_ignore_thinktime",
        [],
        Kind::Bool,
        "0",
        Io,
        "the rate counts thinktime as time the job could have issued I/O in (it catches up after)",
        |j, v, _| {
            j.rate_ignore_thinktime = v.b();
            Ok(())
        }
    ),
    opt!(
        "iodepth_batch_complete_min",
        ["iodepth_batch_complete"],
        Kind::Int { min: 0, max: 65536 },
        "1",
        Engine,
        "completions waited for at once (io_uring, libaio, posixaio, vsync; the other engines complete each I/O in its call, so it changes nothing, as in fio)",
        |j, v, _| {
            j.iodepth_batch_complete_min = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "iodepth_batch_complete_max",
        [],
        Kind::Int { min: 0, max: 65536 },
        "iodepth_batch_complete_min",
        Engine,
        "completions taken at once at most",
        |j, v, _| {
            j.iodepth_batch_complete_max = v.n() as u32;
            Ok(())
        }
    ),
    opt!(
        "prio",
        [],
        Kind::Int { min: 0, max: 7 },
        "",
        General,
        "the job's I/O priority level (0 highest), set on its thread with ioprio_set",
        |j, v, _| {
            j.prio = Some(v.n() as u32);
            Ok(())
        }
    ),
    opt!(
        "prioclass",
        [],
        Kind::Int { min: 0, max: 3 },
        "",
        General,
        "the job's I/O priority class: 1 real-time, 2 best-effort, 3 idle (0: best-effort)",
        |j, v, _| {
            j.prioclass = Some(v.n() as u32);
            Ok(())
        }
    ),
    opt!(
        "cmdprio_percentage",
        [],
        Kind::Text,
        "0",
        Engine,
        engines URING_AIO,
        "percent of I/Os (N, or READ,WRITE) issued with the cmdprio_class/cmdprio priority",
        |j, v, o| set_cmdprio(&mut j.cmdprio.percentage, v, o, 0, 100)
    ),
    opt!(
        "cmdprio_class",
        [],
        Kind::Text,
        "1 (real-time)",
        Engine,
        engines URING_AIO,
        "priority class (N, or READ,WRITE) of cmdprio_percentage's and cmdprio_bssplit's I/Os",
        |j, v, o| set_cmdprio(&mut j.cmdprio.class, v, o, 1, 3)
    ),
    opt!(
        "cmdprio",
        [],
        Kind::Text,
        "0",
        Engine,
        engines URING_AIO,
        "priority level (N, or READ,WRITE) of cmdprio_percentage's and cmdprio_bssplit's I/Os",
        |j, v, o| set_cmdprio(&mut j.cmdprio.level, v, o, 0, 7)
    ),
    opt!(
        "cmdprio_bssplit",
        [],
        Kind::Text,
        "",
        Engine,
        engines URING_AIO,
        "per block size, percent of I/Os given a priority: bs/perc[/class/level]:... (READ,WRITE lists)",
        |j, v, o| {
            j.cmdprio.bssplit = if v.s().is_empty() {
                None
            } else {
                Some(
                    cmdprio::parse_bssplit(v.s())
                        .or_else(|e| err(&o.origin, format!("option 'cmdprio_bssplit': {e}")))?,
                )
            };
            Ok(())
        }
    ),
    opt!(
        "log_prio",
        [],
        Kind::Bool,
        "0",
        Stat,
        "log lines carry the I/O's priority value (0x2000 ...) instead of 1 for real-time, else 0",
        |j, v, _| {
            j.log_prio = v.b();
            Ok(())
        }
    ),
    opt!(
        "random_distribution",
        [],
        Kind::Text,
        "random",
        Io,
        "random, zipf[:THETA[:CENTER]], pareto[:H[:CENTER]] (fio's generators; with norandommap)",
        set_random_distribution
    ),
];
