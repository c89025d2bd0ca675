//! fio's I/O priority options as typed values: `prio` / `prioclass` (the job's priority, set on
//! its thread) and the libaio / io_uring per-command options `cmdprio_percentage`,
//! `cmdprio_class`, `cmdprio` and `cmdprio_bssplit` (fio 3.33's engines/cmdprio.c and the
//! `split_parse_prio_ddir` of options.c).
//!
//! Why it exists: the option table stores these values and the engine's per-I/O selection
//! (`fio::engine::prio`) reads them; the value syntax (fio's per-direction `R,W` lists and the
//! `bs/perc[/class/level]:...` entries) and the checks fio makes when a job starts live here, in
//! one place, so that `--parse-only` refuses what fio would refuse at start. It must never
//! guess: an entry fio refuses is an error naming it.

use super::split;

/// fio's IOPRIO_CLASS_SHIFT: a priority value is `class << 13 | level`.
pub const CLASS_SHIFT: u32 = 13;
/// The real-time class (fio's IOPRIO_CLASS_RT), cmdprio's default class.
pub const CLASS_RT: u32 = 1;
/// The best-effort class, what class 0 ("none") means in a priority value.
pub const CLASS_BE: u32 = 2;
/// The largest class (idle).
pub const MAX_CLASS: u32 = 3;
/// The largest level (the lowest priority within a class).
pub const MAX_LEVEL: u32 = 7;
/// fio's BSSPLIT_MAX: entries per direction.
pub const MAX_ENTRIES: usize = split::SPLIT_MAX;

/// fio's ioprio_value: the kernel's priority value of `class` and `level`; class 0 (none) is
/// best-effort.
pub fn ioprio_value(class: u32, level: u32) -> u32 {
    let class = if class == 0 { CLASS_BE } else { class };
    (class << CLASS_SHIFT) | level
}

impl super::JobSpec {
    /// The job's priority value (fio's td->ioprio) when prio= or prioclass= is given: the
    /// engine sets it on the job's thread (ioprio_set) and every I/O carries it unless cmdprio
    /// picks another.
    pub fn ioprio(&self) -> Option<u32> {
        (self.prio.is_some() || self.prioclass.is_some())
            .then(|| ioprio_value(self.prioclass.unwrap_or(0), self.prio.unwrap_or(0)))
    }
}

/// One `cmdprio_bssplit` entry (fio's `struct split_prio`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitPrio {
    /// Block size the entry applies to.
    pub bs: u64,
    /// Percent of that block size's I/Os (1..=100; zero entries are dropped as fio drops them).
    pub perc: u32,
    /// The priority value (`/class/level` given), or None for cmdprio_class / cmdprio's.
    pub prio: Option<u32>,
}

/// The per-command priority options of a job (fio's `struct cmdprio_options`), per direction
/// (read, write).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CmdPrioOptions {
    /// cmdprio_percentage: percent of the direction's I/Os given the cmdprio priority.
    pub percentage: [u32; 2],
    /// cmdprio_class (0: not given, which means the real-time class).
    pub class: [u32; 2],
    /// cmdprio (the level).
    pub level: [u32; 2],
    /// cmdprio_bssplit, parsed; None when not given (or given empty).
    pub bssplit: Option<[Vec<SplitPrio>; 2]>,
}

impl CmdPrioOptions {
    /// Whether any I/O can get a per-command priority (fio's cmdprio mode is not NONE).
    pub fn in_use(&self) -> bool {
        self.bssplit.is_some() || self.percentage.iter().any(|&p| p > 0)
    }

    /// The checks fio's fio_cmdprio_init makes when the job starts; `dirs` says which
    /// directions the job does (read, write): fio checks only those.
    pub fn check(&self, dirs: [bool; 2]) -> Result<(), String> {
        let Some(split) = &self.bssplit else {
            return Ok(());
        };
        if self.percentage.iter().any(|&p| p > 0) {
            return Err(
                "cmdprio_percentage and cmdprio_bssplit options are mutually exclusive (as in fio): keep one"
                    .to_string(),
            );
        }
        for (d, entries) in split.iter().enumerate() {
            if !dirs[d] {
                continue;
            }
            let mut i = 0;
            while i < entries.len() {
                let bs = entries[i].bs;
                let mut total = 0u32;
                while i < entries.len() && entries[i].bs == bs {
                    total += entries[i].perc;
                    i += 1;
                }
                if total > 100 {
                    return Err(format!(
                        "cmdprio_bssplit total percentage for bs: {bs} exceeds 100 (as fio refuses it): lower the entries of that block size"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// sscanf's `%u`: leading blanks, an optional sign (a minus wraps, as in C), digits; the rest
/// of the text after it.
fn scan_u32(s: &str) -> Option<(u32, &str)> {
    let t = s.trim_start();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if end == 0 {
        return None;
    }
    let v = t[..end].bytes().fold(0u64, |a, b| {
        a.saturating_mul(10).saturating_add((b - b'0') as u64)
    });
    let v = if neg { v.wrapping_neg() } else { v };
    Some((v as u32, &t[end..]))
}

/// One entry, as fio's parse_cmdprio_bssplit_entry, given split at `/` ([`split::entries`]):
/// `bs/` or `bs/perc` (the priority of cmdprio_class / cmdprio) or `bs/perc/class/level`;
/// percent above 100 is 100, class and level are capped at 3 and 7.
fn parse_entry(fields: &[&str]) -> Result<SplitPrio, String> {
    let s = fields.join("/");
    if fields[0].is_empty() {
        return Err(format!(
            "'{s}': an entry starts with its block size (bs/perc)"
        ));
    }
    let bs = split::size_of(fields[0]).map_err(|e| format!("'{s}': {e}"))?;
    // sscanf's `%u/%u/%u` matches: the fields read before the first that does not parse (a
    // field followed by anything but its `/` ends the matches after it).
    let mut nums = Vec::with_capacity(3);
    for f in fields[1..].iter().take(3) {
        let Some((v, after)) = scan_u32(f) else { break };
        nums.push(v);
        if !after.is_empty() {
            break;
        }
    }
    let perc = nums.first().copied().unwrap_or(0).min(100);
    let prio = match nums.len() {
        0 | 1 => None,
        3 => Some(ioprio_value(nums[1].min(MAX_CLASS), nums[2].min(MAX_LEVEL))),
        _ => {
            return Err(format!(
                "'{s}': give bs/perc or bs/perc/class/level (a class needs its level)"
            ));
        }
    };
    Ok(SplitPrio { bs, perc, prio })
}

/// One direction's list (fio's split_parse_prio_ddir): the entries of fio's split syntax
/// ([`split::entries`]: up to the first empty one), more than [`MAX_ENTRIES`] refused as fio
/// refuses them (bssplit drops them instead), zero-percent entries dropped, sorted by block
/// size (a stable sort, as glibc's qsort of these small arrays is, so equal sizes keep their
/// order).
fn parse_dir(s: &str) -> Result<Vec<SplitPrio>, String> {
    let (items, dropped) = split::entries(s);
    if dropped {
        return Err(format!(
            "too many cmdprio_bssplit entries (fio takes at most {MAX_ENTRIES} per direction)"
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for fields in &items {
        let entry = parse_entry(fields)?;
        if entry.perc > 0 {
            out.push(entry);
        }
    }
    out.sort_by_key(|e| e.bs);
    Ok(out)
}

/// `cmdprio_bssplit=READ[,WRITE[,TRIM]]` as fio's str_split_parse ([`split::per_direction`]):
/// one list for every direction, or per direction separated by commas. Trim's list is parsed
/// (fio fails on its errors) and dropped: the engine issues no trims with it. Returns (read,
/// write).
pub fn parse_bssplit(text: &str) -> Result<[Vec<SplitPrio>; 2], String> {
    let [read, write, trim] = split::per_direction(text.trim());
    parse_dir(trim)?;
    Ok([parse_dir(read)?, parse_dir(write)?])
}

/// A per-direction whole-number option (fio's FIO_OPT_INT with two offsets): `N` sets both
/// directions, `R,W` each (an empty part leaves that direction as it was; a third, trim, value
/// is read and unused). Each value must be in `min..=max`.
pub fn parse_per_dir(text: &str, min: u64, max: u64) -> Result<[Option<u32>; 2], String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("needs a value".to_string());
    }
    let parts: Vec<&str> = t.split(',').collect();
    if parts.len() > 3 {
        return Err(format!("'{t}': give N or READ,WRITE"));
    }
    let mut out = [None, None];
    for (i, p) in parts.iter().enumerate() {
        let p = p.trim();
        if p.is_empty() {
            continue;
        }
        let n = super::expr::parse_number(p).map_err(|e| format!("'{p}': {e}"))?;
        if !(min..=max).contains(&n) {
            return Err(format!("{n} is out of range {min}..={max}"));
        }
        if i < 2 {
            out[i] = Some(n as u32);
        }
    }
    if parts.len() == 1 {
        out[1] = out[0];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(bs: u64, perc: u32, prio: Option<u32>) -> SplitPrio {
        SplitPrio { bs, perc, prio }
    }

    #[test]
    fn priority_values_are_the_kernels() {
        assert_eq!(ioprio_value(1, 0), 0x2000);
        assert_eq!(ioprio_value(3, 2), 0x6002);
        // Class 0 (none) is best-effort, as fio's ioprio_value.
        assert_eq!(ioprio_value(0, 7), 0x4007);
    }

    /// The two formats of fio's examples/cmdprio-bssplit.fio.
    #[test]
    fn bssplit_reads_fios_examples() {
        let [r, w] = parse_bssplit("64k/100:1024k/0,1024k/0").unwrap();
        assert_eq!(r, vec![e(65536, 100, None)]);
        assert!(w.is_empty(), "zero-percent entries are dropped");
        let [r, w] = parse_bssplit("64k/25/1/1:64k/75/3/2:1024k/0,1024k/0").unwrap();
        assert_eq!(
            r,
            vec![e(65536, 25, Some(0x2001)), e(65536, 75, Some(0x6002))]
        );
        assert!(w.is_empty());
    }

    #[test]
    fn bssplit_without_a_comma_applies_to_both_directions_sorted_by_size() {
        let [r, w] = parse_bssplit(" 1m/10:4k/20/2/3:4k/5 ").unwrap();
        let want = vec![
            e(4096, 20, Some(0x4003)),
            e(4096, 5, None),
            e(1 << 20, 10, None),
        ];
        assert_eq!(r, want);
        assert_eq!(w, want);
    }

    #[test]
    fn bssplit_entries_as_fios_sscanf_reads_them() {
        // No percentage (bs, bs/, bs/junk): 0, dropped.
        for s in ["4k", "4k/", "4k/x"] {
            assert_eq!(parse_bssplit(s).unwrap(), [vec![], vec![]], "{s}");
        }
        // Percent capped at 100, class and level capped at 3 and 7.
        assert_eq!(
            parse_bssplit("4k/250/9/9").unwrap()[0],
            vec![e(4096, 100, Some(0x6007))]
        );
        // A class without a level, an empty block size, a bad size: refused.
        assert!(parse_bssplit("4k/50/1").is_err());
        assert!(parse_bssplit("/50").is_err());
        assert!(parse_bssplit("4q/50").is_err());
        // An empty entry ends the list, as fio's strsep loop.
        assert_eq!(
            parse_bssplit("4k/50::8k/50").unwrap()[0],
            vec![e(4096, 50, None)]
        );
        let many = vec!["4k/1"; 65].join(":");
        assert!(parse_bssplit(&many).unwrap_err().contains("too many"));
        // Trim's list is read (its errors count) and dropped.
        assert!(parse_bssplit("4k/1,4k/1,4k/1/2").is_err());
        assert_eq!(
            parse_bssplit("4k/1,8k/2,16k/3").unwrap(),
            [vec![e(4096, 1, None)], vec![e(8192, 2, None)]]
        );
    }

    #[test]
    fn check_refuses_what_fio_refuses_at_start() {
        let mut o = CmdPrioOptions {
            bssplit: Some(parse_bssplit("4k/60:4k/50,4k/10").unwrap()),
            ..Default::default()
        };
        assert!(o.check([true, true]).unwrap_err().contains("exceeds 100"));
        // fio checks only the directions the job does.
        assert!(o.check([false, true]).is_ok());
        o.bssplit = Some(parse_bssplit("4k/60").unwrap());
        o.percentage = [0, 5];
        assert!(
            o.check([true, true])
                .unwrap_err()
                .contains("mutually exclusive")
        );
        o.percentage = [0, 0];
        assert!(o.check([true, true]).is_ok() && o.in_use());
    }

    #[test]
    fn per_direction_values_as_fios_int_options() {
        assert_eq!(parse_per_dir("20", 0, 100).unwrap(), [Some(20), Some(20)]);
        assert_eq!(
            parse_per_dir("20,30", 0, 100).unwrap(),
            [Some(20), Some(30)]
        );
        assert_eq!(parse_per_dir(",30", 0, 100).unwrap(), [None, Some(30)]);
        assert_eq!(parse_per_dir("20,", 0, 100).unwrap(), [Some(20), None]);
        assert_eq!(parse_per_dir("1,2,3", 1, 3).unwrap(), [Some(1), Some(2)]);
        assert!(
            parse_per_dir("101", 0, 100)
                .unwrap_err()
                .contains("out of range")
        );
        assert!(parse_per_dir("0", 1, 3).is_err());
        assert!(parse_per_dir("x", 0, 7).is_err());
    }
}
