//! random_distribution=: fio's generators (random, zipf, pareto, normal) and its zoned and
//! zoned_abs splits, read as fio's str_random_distribution_cb and its zone split parser.
//!
//! Why it exists: the distribution is the one option whose value is a small language of its
//! own. What it must never do: accept a split fio refuses (sums past 100 %, `,` lists).

use super::table::Val;
use super::values::choice_err;
use crate::fio::jobfile::expr::{SizeValue, parse_size};
use crate::fio::jobfile::{JobFileError, JobSpec, RandomDistribution, RawOption, err};

pub(super) fn set_random_distribution(
    j: &mut JobSpec,
    v: Val<'_>,
    o: &RawOption,
) -> Result<(), JobFileError> {
    let v = v.s();
    let mut parts = v.split(':');
    let kind = parts.next().unwrap_or("");
    let mut num = |default: f64| -> Result<Option<f64>, JobFileError> {
        match parts.next() {
            None => Ok(Some(default).filter(|d| !d.is_nan())),
            Some(t) => t.trim().parse::<f64>().map(Some).or_else(|_| {
                err(
                    &o.origin,
                    format!("option 'random_distribution': '{t}' in '{v}' is not a number"),
                )
            }),
        }
    };
    let center_ok = |c: Option<f64>| -> Result<Option<f64>, JobFileError> {
        match c {
            Some(c) if !(0.0..=1.0).contains(&c) => err(
                &o.origin,
                "option 'random_distribution': the center must be in 0..=1",
            ),
            c => Ok(c),
        }
    };
    j.random_distribution = match kind {
        "random" => RandomDistribution::Random,
        "zipf" => {
            let theta = num(1.1)?.unwrap_or(1.1);
            if theta == 1.0 || theta <= 0.0 {
                return err(
                    &o.origin,
                    "option 'random_distribution': zipf theta must be positive and not 1.0",
                );
            }
            let center = center_ok(num(f64::NAN)?)?;
            RandomDistribution::Zipf { theta, center }
        }
        "pareto" => {
            let h = num(0.2)?.unwrap_or(0.2);
            if h <= 0.0 || h >= 1.0 {
                return err(
                    &o.origin,
                    "option 'random_distribution': pareto input must be in (0, 1)",
                );
            }
            let center = center_ok(num(f64::NAN)?)?;
            RandomDistribution::Pareto { h, center }
        }
        "normal" => {
            // fio's default deviation for normal is 0.0
            let dev = num(0.0)?.unwrap_or(0.0);
            if !(0.0..100.0).contains(&dev) {
                return err(
                    &o.origin,
                    "option 'random_distribution': normal deviation out of range (0 <= input < 100.0)",
                );
            }
            let center = center_ok(num(f64::NAN)?)?;
            RandomDistribution::Normal { dev, center }
        }
        "zoned" => RandomDistribution::Zoned {
            index: Box::new(zoned_index(v, o)?),
        },
        "zoned_abs" => RandomDistribution::ZonedAbs {
            index: Box::new(zoned_abs_index(v, o)?),
        },
        _ => {
            return choice_err(
                o,
                v,
                "random, zipf[:THETA[:CENTER]], pareto[:H[:CENTER]], normal[:DEV[:CENTER]], zoned:A/S[:A/S...], zoned_abs:A/SIZE[:A/SIZE...]",
            );
        }
    };
    Ok(())
}

/// An error in the zone split `v` of random_distribution.
fn zone_split_err<T>(v: &str, o: &RawOption, why: &str) -> Result<T, JobFileError> {
    err(
        &o.origin,
        format!("option 'random_distribution': '{v}': {why}"),
    )
}

/// The entries after `KIND:` of a zoned / zoned_abs split: not empty, one split for every
/// direction (`,` lists are refused).
fn zone_split_spec<'v>(
    v: &'v str,
    o: &RawOption,
    kind: &str,
    entry: &str,
    example: &str,
) -> Result<&'v str, JobFileError> {
    let spec = v
        .strip_prefix(kind)
        .and_then(|r| r.strip_prefix(':'))
        .unwrap_or("");
    if spec.is_empty() {
        return zone_split_err(
            v,
            o,
            &format!("{kind} needs {entry} entries, e.g. {kind}:{example}"),
        );
    }
    if spec.contains(',') {
        return zone_split_err(
            v,
            o,
            &format!("per-direction {kind} splits (',') are not supported"),
        );
    }
    Ok(spec)
}

/// fio's zone_split_ddir and __td_zone_gen_index for `zoned:A/S:A/S...` (one split for every
/// direction): access percentages must add up to 100, a missing size percentage gets an equal
/// part of what the others leave.
fn zoned_index(v: &str, o: &RawOption) -> Result<[(u8, u8); 100], JobFileError> {
    let bad = |why: &str| zone_split_err(v, o, why);
    let spec = zone_split_spec(v, o, "zoned", "ACCESS%/SIZE%", "60/10:30/20:10/70")?;
    let mut entries: Vec<(u32, Option<u32>)> = Vec::new();
    for part in spec.split(':') {
        let (a, s) = part.split_once('/').unwrap_or((part, ""));
        let num = |t: &str| t.trim().trim_end_matches('%').parse::<u32>().ok();
        let Some(a) = num(a).filter(|a| *a <= 100) else {
            return bad(&format!("'{part}' is not ACCESS%/SIZE%"));
        };
        let s = if s.trim().is_empty() {
            None
        } else {
            match num(s).filter(|s| *s <= 100) {
                Some(s) => Some(s),
                None => return bad(&format!("'{part}' is not ACCESS%/SIZE%")),
            }
        };
        entries.push((a, s));
    }
    let access: u32 = entries.iter().map(|e| e.0).sum();
    let sized: u32 = entries.iter().filter_map(|e| e.1).sum();
    if access > 100 || sized > 100 {
        return bad("percentages add to more than 100%");
    }
    if access < 100 {
        return bad(&format!("access percentages add up to {access}, not 100"));
    }
    let missing = entries.iter().filter(|e| e.1.is_none()).count() as u32;
    let mut index = [(0u8, 0u8); 100];
    let (mut aprev, mut sprev) = (0usize, 0u32);
    for (a, s) in entries {
        let s = s.unwrap_or_else(|| (100 - sized) / missing.max(1));
        for slot in index.iter_mut().skip(aprev).take(a as usize) {
            *slot = (sprev as u8, (sprev + s) as u8);
        }
        aprev += a as usize;
        sprev += s;
    }
    Ok(index)
}

/// fio's zone_split_ddir with `absolute` and __td_zone_gen_index for
/// `zoned_abs:A/SIZE:A/SIZE...` (one split for every direction): access percentages must add
/// up to 100; a missing size is 0 bytes, as in fio.
fn zoned_abs_index(v: &str, o: &RawOption) -> Result<[(u64, u64); 100], JobFileError> {
    let bad = |why: &str| zone_split_err(v, o, why);
    let spec = zone_split_spec(v, o, "zoned_abs", "ACCESS%/SIZE", "60/1g:40/9g")?;
    let mut entries: Vec<(u32, u64)> = Vec::new();
    // fio's split_parse_ddir stops at the first empty entry.
    for part in spec.split(':').take_while(|p| !p.is_empty()) {
        let (a, s) = match part.split_once('/') {
            Some((a, s)) => (a, Some(s)),
            None => (part, None),
        };
        let a = match a.trim().trim_end_matches('%').parse::<u32>() {
            Ok(a) if a <= 100 => a,
            _ => return bad(&format!("'{part}': '{a}' is not an access percentage")),
        };
        let size = match s {
            None => 0,
            Some(s) => match parse_size(s) {
                Ok(SizeValue::Bytes(b)) => b.0,
                _ => return bad(&format!("'{part}': '{s}' is not a size in bytes")),
            },
        };
        entries.push((a, size));
    }
    let access: u32 = entries.iter().map(|e| e.0).sum();
    if access > 100 {
        return bad("percentages add to more than 100%");
    }
    if access < 100 {
        return bad(&format!("access percentages add up to {access}, not 100"));
    }
    let mut index = [(0u64, 0u64); 100];
    let (mut aprev, mut sprev) = (0usize, 0u64);
    for (a, size) in entries {
        let a = a as usize;
        for slot in index.iter_mut().skip(aprev).take(a) {
            *slot = (sprev, sprev + size);
        }
        aprev += a;
        sprev += size;
    }
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio's zone_state_index for the rand-zones example's split.
    #[test]
    fn zoned_split_index_is_fios() {
        let o = RawOption {
            key: "random_distribution".into(),
            value: None,
            origin: crate::fio::jobfile::Origin {
                file: "t".into(),
                line: 1,
            },
        };
        let idx = zoned_index("zoned:50/5:30/15:20/", &o).unwrap();
        assert!(idx[..50].iter().all(|e| *e == (0, 5)));
        assert!(idx[50..80].iter().all(|e| *e == (5, 20)));
        assert!(idx[80..].iter().all(|e| *e == (20, 100)));
        assert!(zoned_index("zoned:60/10:50/10", &o).is_err());
        assert!(zoned_index("zoned:", &o).is_err());
        // zoned_abs: byte ranges, a missing size is 0 bytes, as fio's.
        let idx = zoned_abs_index("zoned_abs:60/1m:30/2m:10", &o).unwrap();
        assert!(idx[..60].iter().all(|e| *e == (0, 1 << 20)));
        assert!(idx[60..90].iter().all(|e| *e == (1 << 20, 3 << 20)));
        assert!(idx[90..].iter().all(|e| *e == (3 << 20, 3 << 20)));
        assert!(zoned_abs_index("zoned_abs:50/1m:40/1m", &o).is_err());
        assert!(zoned_abs_index("zoned_abs:50/1m,50/1m", &o).is_err());
        assert!(zoned_abs_index("zoned_abs:", &o).is_err());
    }
}
