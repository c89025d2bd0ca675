//! The setters of the option table that are more than a line: each reads one option's text
//! as fio does (rw= and its offset modifier, block sizes and splits, sizes, the engine,
//! per-direction values, cmdprio, file service, percentiles, steady state) and stores it into
//! a [`JobSpec`].
//!
//! Why it exists: a row names its setter; the short ones sit in the row, these are shared or
//! too long for a row. What it must never do: accept a value fio refuses, or store without
//! the row's check.

use super::table::{RW_CHOICES, Val};
use super::values::{choice_err, size_value, zone_count};
use crate::fio::jobfile::expr::{SizeValue, parse_size};
use crate::fio::jobfile::{
    Bytes, FileService, IoEngine, JobFileError, JobSpec, RawOption, RwMode, SizeRange, SizeSpec,
    SteadyKind, SteadyState, cmdprio, err, split,
};

pub(super) fn set_rw(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let whole = v.s();
    if whole.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let (v, modifier) = match whole.split_once(':') {
        Some((m, n)) => (m, Some(n.trim())),
        None => (whole, None),
    };
    // fio's str_rw_cb: every rw= starts from no modifier.
    j.rw_modifier = 0;
    j.rw_seq_nr = 1;
    if let Some(n) = modifier {
        if v.starts_with("rand") {
            // fio 3.33 reads the count with atoi: "8k" is 8 there and 8192 in later fio, and
            // 0 or garbage silently makes every I/O sequential; only a plain count is taken.
            j.rw_seq_nr = match n.parse::<u32>() {
                Ok(c) if c > 0 && n.bytes().all(|b| b.is_ascii_digit()) => c,
                _ => {
                    return err(
                        &o.origin,
                        format!(
                            "option 'rw': '{whole}': '{n}' is not a count of I/Os per random offset; write a whole number from 1 to {} (e.g. '{v}:8')",
                            u32::MAX
                        ),
                    );
                }
            };
            return set_rw_mode(j, v, o);
        }
        let (neg, digits) = match n.strip_prefix('-') {
            Some(d) => (true, d.trim()),
            None => (false, n),
        };
        let b = match parse_size(digits) {
            Ok(SizeValue::Bytes(b)) if b.0 <= i64::MAX as u64 => b.0 as i64,
            _ => {
                return err(
                    &o.origin,
                    format!("option 'rw': '{whole}': '{n}' is not a size"),
                );
            }
        };
        j.rw_modifier = if neg { -b } else { b };
    }
    set_rw_mode(j, v, o)
}

/// The direction part of rw= (before any ':' modifier).
fn set_rw_mode(j: &mut JobSpec, v: &str, o: &RawOption) -> Result<(), JobFileError> {
    j.rw = match v {
        "read" => RwMode::Read,
        "write" => RwMode::Write,
        "randread" => RwMode::RandRead,
        "randwrite" => RwMode::RandWrite,
        "rw" | "readwrite" => RwMode::ReadWrite,
        "randrw" => RwMode::RandRw,
        "trim" => RwMode::Trim,
        "randtrim" => RwMode::RandTrim,
        "trimwrite" => RwMode::TrimWrite,
        "randtrimwrite" => RwMode::RandTrimWrite,
        _ => {
            return choice_err(
                o,
                v,
                &format!(
                    "{}, each with an optional ':SIZE' hole after every I/O (sequential) or ':N' I/Os per random offset (random)",
                    RW_CHOICES.join(", ")
                ),
            );
        }
    };
    Ok(())
}

/// fio's per-direction value (rate=, rate_iops=, ...): `N` sets every direction,
/// `R,W` sets read and write and trim takes W, `R,W,T` each; an empty part leaves its
/// direction unset (0), as fio's parser.
pub(super) fn set_per_ddir(
    out: &mut [u64; 3],
    v: Val<'_>,
    o: &RawOption,
) -> Result<(), JobFileError> {
    set_per_ddir_with(out, v, o, |p| Ok(size_value(o, p)?.0))
}

/// A per-direction option (`N` for all three, `R,W,T` each; an empty part leaves that
/// direction, and the last value given also sets the directions after it), each part read by
/// `value`.
pub(super) fn set_per_ddir_with(
    out: &mut [u64; 3],
    v: Val<'_>,
    o: &RawOption,
    value: impl Fn(&str) -> Result<u64, JobFileError>,
) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() > 3 {
        return err(
            &o.origin,
            format!(
                "option '{}': '{v}': at most three values (READ,WRITE,TRIM)",
                o.key
            ),
        );
    }
    let mut last = 0;
    for (i, p) in parts.iter().enumerate() {
        if p.trim().is_empty() {
            continue;
        }
        last = value(p)?;
        out[i] = last;
    }
    if !parts[parts.len() - 1].trim().is_empty() {
        for x in out.iter_mut().skip(parts.len()) {
            *x = last;
        }
    }
    Ok(())
}

pub(super) fn set_engine(j: &mut JobSpec, v: Val<'_>, _o: &RawOption) -> Result<(), JobFileError> {
    j.ioengine = match v.s() {
        "psync" => IoEngine::Psync,
        "sync" => IoEngine::Sync,
        "pvsync" => IoEngine::Pvsync,
        "io_uring" => IoEngine::IoUring,
        "libaio" => IoEngine::Libaio,
        "filestat" => IoEngine::FileStat,
        "filedelete" => IoEngine::FileDelete,
        "null" => IoEngine::Null,
        "falloc" => IoEngine::Falloc,
        "ftruncate" => IoEngine::Ftruncate,
        "pvsync2" => IoEngine::Pvsync2,
        "posixaio" => IoEngine::Posixaio,
        "vsync" => IoEngine::Vsync,
        "mmap" => IoEngine::Mmap,
        "splice" => IoEngine::Splice,
        _ => IoEngine::FileCreate,
    };
    Ok(())
}

/// A per-direction cmdprio_* number (fio's two-offset FIO_OPT_INT).
pub(super) fn set_cmdprio(
    dst: &mut [u32; 2],
    v: Val<'_>,
    o: &RawOption,
    min: u64,
    max: u64,
) -> Result<(), JobFileError> {
    let vals = cmdprio::parse_per_dir(v.s(), min, max)
        .or_else(|e| err(&o.origin, format!("option '{}': {e}", o.key)))?;
    for (d, x) in dst.iter_mut().zip(vals) {
        if let Some(x) = x {
            *d = x;
        }
    }
    Ok(())
}

pub(super) fn set_bs(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let parts: Vec<&str> = v.split(',').collect();
    if parts.len() > 3 {
        return err(
            &o.origin,
            format!("option 'bs': '{v}': at most three sizes (bs=READ,WRITE,TRIM)"),
        );
    }
    for (i, p) in parts.iter().enumerate() {
        if p.trim().is_empty() {
            continue;
        }
        let b = size_value(o, p)?;
        if b.0 == 0 {
            return err(&o.origin, "option 'bs' must be greater than 0");
        }
        if i == 2 {
            // The trim size (bs=R,W,T); without it trims take the write size (bs[1]).
            j.bs_minmax[2] = Some((b, b));
            continue;
        }
        j.bs[i] = b;
        if parts.len() == 1 {
            j.bs[1] = b;
        }
    }
    Ok(())
}

/// `bsrange=LOW-HIGH[,LOW-HIGH[,LOW-HIGH]]` (or `LOW:HIGH`) as fio's FIO_OPT_RANGE: one range
/// for all directions, or read then write (trim takes the write one); the ends are swapped
/// when LOW > HIGH; an empty part keeps that direction as it was.
pub(super) fn set_bsrange(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let parts: Vec<&str> = v.split(',').collect();
    for (i, p) in parts.iter().enumerate().take(3) {
        if p.trim().is_empty() && parts.len() > 1 {
            continue;
        }
        let Some((lo, hi)) = p.split_once(['-', ':']) else {
            return err(
                &o.origin,
                format!(
                    "option '{}': '{p}' is not a range LOW-HIGH (e.g. 4k-16k)",
                    o.key
                ),
            );
        };
        let (mut lo, mut hi) = (size_value(o, lo)?, size_value(o, hi)?);
        if lo > hi {
            std::mem::swap(&mut lo, &mut hi);
        }
        if lo.0 == 0 {
            return err(
                &o.origin,
                format!("option '{}' must be greater than 0", o.key),
            );
        }
        let last = i == parts.len().min(3) - 1;
        for d in i..if last { 3 } else { i + 1 } {
            j.bs_minmax[d] = Some((lo, hi));
        }
    }
    Ok(())
}

/// `bssplit=SIZE/PERC:...[,WRITE[,TRIM]]` (fio's str_bssplit_cb): each direction with entries
/// gets them, and its smallest and largest size become its min and max block size.
pub(super) fn set_bssplit(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let dirs = split::per_direction(v);
    let mut parsed = Vec::with_capacity(3);
    for text in dirs {
        let (entries, dropped) = split::bssplit_dir(text)
            .or_else(|why| err(&o.origin, format!("option 'bssplit': '{v}': {why}")))?;
        if dropped {
            return err(
                &o.origin,
                format!(
                    "option 'bssplit': '{v}': more than {} entries in a direction",
                    split::SPLIT_MAX
                ),
            );
        }
        parsed.push(entries);
    }
    for (d, entries) in parsed.into_iter().enumerate() {
        if entries.is_empty() {
            continue;
        }
        let lo = entries.iter().map(|e| e.bs).min().unwrap_or(Bytes(4096));
        let hi = entries.iter().map(|e| e.bs).max().unwrap_or(Bytes(4096));
        j.bs_minmax[d] = Some((lo, hi));
        j.bssplit[d] = entries;
    }
    Ok(())
}

/// `ba=N[,N[,N]]` (blockalign): read, write, trim; one value is all three, two give trim the
/// write one (fio's FIO_OPT_ULL with three offsets).
pub(super) fn set_blockalign(
    j: &mut JobSpec,
    v: Val<'_>,
    o: &RawOption,
) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let parts: Vec<&str> = v.split(',').collect();
    for (i, p) in parts.iter().enumerate().take(3) {
        if p.trim().is_empty() {
            continue;
        }
        let b = size_value(o, p)?;
        if b.0 == 0 {
            return err(
                &o.origin,
                format!("option '{}': min value out of range: 0 (1 min)", o.key),
            );
        }
        let last = i == parts.len().min(3) - 1;
        for d in i..if last { 3 } else { i + 1 } {
            j.blockalign[d] = Some(b);
        }
    }
    Ok(())
}

pub(super) fn set_size(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    if let Some(n) = zone_count(v, o)? {
        // fio's str_size_cb: size 0 (not given) until the zones are counted.
        j.size = None;
        j.zone_units.size = n;
        return Ok(());
    }
    j.size = Some(match parse_size(v) {
        Ok(SizeValue::Bytes(b)) => SizeSpec::Bytes(b),
        Ok(SizeValue::Percent(p)) if (1..=100).contains(&p) => SizeSpec::Percent(p as u32),
        Ok(SizeValue::Percent(p)) => {
            return err(&o.origin, format!("option 'size': {p}% is not in 1..=100"));
        }
        Err(e) => return err(&o.origin, format!("option 'size': {e}")),
    });
    Ok(())
}

pub(super) fn set_filesize(j: &mut JobSpec, v: Val<'_>, o: &RawOption) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let range = match v.split_once([':', '-']).filter(|(lo, _)| !lo.is_empty()) {
        Some((lo, hi)) => {
            let (low, high) = (size_value(o, lo)?, size_value(o, hi)?);
            if low > high {
                return err(
                    &o.origin,
                    format!("option 'filesize': range '{v}' runs backwards"),
                );
            }
            SizeRange { low, high }
        }
        None => SizeRange::fixed(size_value(o, v)?),
    };
    if range.low.0 == 0 {
        return err(
            &o.origin,
            "option 'filesize' must be at least 1 byte, as in fio (for empty files use ioengine=filecreate: it creates the files empty whatever their filesize, e.g. filesize=4k as fsperf's emptyfiles500k)",
        );
    }
    j.filesize = Some(range);
    Ok(())
}

pub(super) fn set_file_service(
    j: &mut JobSpec,
    v: Val<'_>,
    o: &RawOption,
) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let (kind, n) = match v.split_once(':') {
        Some((k, n)) => match n.parse::<u32>() {
            Ok(n) if n > 0 => (k, n),
            _ => {
                return err(
                    &o.origin,
                    format!("option 'file_service_type': bad count in '{v}'"),
                );
            }
        },
        None => (v, 1),
    };
    j.file_service_type = match kind {
        "roundrobin" => FileService::RoundRobin(n),
        "random" => FileService::Random(n),
        "sequential" if n == 1 => FileService::Sequential,
        _ => return choice_err(o, v, "roundrobin[:N], random[:N], sequential"),
    };
    Ok(())
}

pub(super) fn set_percentile_list(
    j: &mut JobSpec,
    v: Val<'_>,
    o: &RawOption,
) -> Result<(), JobFileError> {
    let v = v.s();
    if v.is_empty() {
        return err(&o.origin, format!("option '{}' needs a value", o.key));
    }
    let mut list = Vec::new();
    for p in v.split(':') {
        match p.trim().parse::<f64>() {
            Ok(f) if f > 0.0 && f <= 100.0 => list.push(f),
            _ => {
                return err(
                    &o.origin,
                    format!("option 'percentile_list': '{p}' is not a percentile in (0, 100]"),
                );
            }
        }
    }
    if list.len() > 20 {
        return err(&o.origin, "option 'percentile_list': at most 20 entries");
    }
    // fio sorts the list.
    list.sort_by(f64::total_cmp);
    j.percentile_list = list;
    Ok(())
}

pub(super) fn set_steadystate(
    j: &mut JobSpec,
    v: Val<'_>,
    o: &RawOption,
) -> Result<(), JobFileError> {
    let v = v.s();
    let (kind, limit) = v.split_once(':').unwrap_or((v, ""));
    let kind = match kind {
        "iops" => SteadyKind::Iops,
        "iops_slope" => SteadyKind::IopsSlope,
        "bw" => SteadyKind::Bw,
        "bw_slope" => SteadyKind::BwSlope,
        _ => return choice_err(o, v, "iops, iops_slope, bw, bw_slope, each :LIMIT[%]"),
    };
    let (num, percent) = match limit.strip_suffix('%') {
        Some(n) => (n, true),
        None => (limit, false),
    };
    let Ok(limit) = num.trim().parse::<f64>() else {
        return err(
            &o.origin,
            format!("option '{}': '{v}' needs a limit, e.g. iops:10%", o.key),
        );
    };
    if limit < 0.0 {
        return err(
            &o.origin,
            format!("option '{}': the limit must be >= 0", o.key),
        );
    }
    j.ss = SteadyState {
        kind,
        limit,
        percent,
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn steadystate_options_parse_as_fios() {
        let j = crate::fio::jobfile::parse_job_text(
            "[s]\nss=bw_slope:1%\nss_dur=30\nss_ramp=5s\n",
            "t.fio",
            &crate::fio::jobfile::SystemSources,
        )
        .unwrap()
        .jobs
        .remove(0);
        assert_eq!(j.ss.kind, SteadyKind::BwSlope);
        assert!(j.ss.percent && j.ss.limit == 1.0);
        assert_eq!(j.ss_dur, Duration::from_secs(30));
        assert_eq!(j.ss_ramp, Duration::from_secs(5));
        for bad in ["[s]\nss=lat:1%\n", "[s]\nss=iops\n"] {
            assert!(
                crate::fio::jobfile::parse_job_text(
                    bad,
                    "t.fio",
                    &crate::fio::jobfile::SystemSources
                )
                .is_err(),
                "{bad}"
            );
        }
    }
}
