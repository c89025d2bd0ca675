//! fio's split syntax, `VALUE/PERC:VALUE/PERC...` per direction, `READ,WRITE[,TRIM]`, as
//! options.c's `str_split_parse` and `split_parse_ddir` read it (bssplit; cmdprio_bssplit uses
//! the same entries with more `/` fields).
//!
//! Why it exists: one reading of the syntax, fio's, shared by every option written in it, so
//! the directions, the empty-entry end, the 64-entry limit and the percentages come out as
//! fio's do. What it must never do: guess a value it cannot read (an entry that is not a
//! size is an error naming it), or reorder entries otherwise than fio (a stable sort by
//! percentage, glibc's qsort being a merge sort).

use super::Bytes;
use super::expr::{SizeValue, parse_size};

/// fio's BSSPLIT_MAX: entries per direction; later ones are dropped (fio: "hit max of 64
/// split entries").
pub const SPLIT_MAX: usize = 64;

/// The text of each direction (read, write, trim), as fio's `str_split_parse` hands it out:
/// `A` goes to all three; `A,B` gives read A, write and trim B; `A,B,C` one each.
pub fn per_direction(v: &str) -> [&str; 3] {
    match v.split_once(',') {
        None => [v, v, v],
        Some((r, rest)) => match rest.split_once(',') {
            None => [r, rest, rest],
            Some((w, t)) => [r, w, t],
        },
    }
}

/// The entries of one direction, each split at `/` into its fields, as fio's
/// `split_parse_ddir`: entries are `:`-separated, the list ends at the first empty entry, and
/// at most [`SPLIT_MAX`] are kept. The second result says whether entries were dropped.
pub fn entries(s: &str) -> (Vec<Vec<&str>>, bool) {
    let mut out = Vec::new();
    for e in s.split(':') {
        if e.is_empty() {
            break;
        }
        if out.len() == SPLIT_MAX {
            return (out, true);
        }
        out.push(e.split('/').collect());
    }
    (out, false)
}

/// A split entry's size (fio's `str_to_decimal` with size suffixes, base 1024).
pub fn size_of(text: &str) -> Result<u64, String> {
    match parse_size(text.trim()) {
        Ok(SizeValue::Bytes(b)) => Ok(b.0),
        Ok(SizeValue::Percent(_)) => Err(format!("'{text}' is a percentage, not a size")),
        Err(e) => Err(format!("'{text}' is not a size ({e})")),
    }
}

/// fio's percentage of an entry (`atoi`, capped at 100); None when missing or 0, which fio
/// treats alike: such entries share what the others leave.
pub fn perc_of(text: Option<&str>) -> Option<u32> {
    let t = text?.trim_start();
    let neg = t.starts_with('-');
    let digits: String = t
        .trim_start_matches(['-', '+'])
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let n: u64 = digits.parse().unwrap_or(0);
    match (neg, n) {
        (_, 0) => None,
        // atoi's negative result is a huge unsigned value to fio, capped at 100
        (true, _) => Some(100),
        (false, n) => Some(n.min(100) as u32),
    }
}

/// One block size of a bssplit and its share in percent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BsSplitEntry {
    /// Block size.
    pub bs: Bytes,
    /// Percent of the I/Os (0: never chosen, as in fio).
    pub perc: u32,
}

/// One direction's bssplit as fio's `bssplit_ddir`: sizes and percentages, entries without a
/// percentage sharing the rest evenly (rounded down), sorted by percentage (stable). Empty
/// when the direction's text is empty (that direction keeps bs=). The second result says
/// whether entries beyond [`SPLIT_MAX`] were dropped.
pub fn bssplit_dir(s: &str) -> Result<(Vec<BsSplitEntry>, bool), String> {
    let (list, dropped) = entries(s);
    let mut out: Vec<(u64, Option<u32>)> = Vec::with_capacity(list.len());
    for fields in &list {
        if fields.len() > 2 {
            return Err(format!("'{}' has more than SIZE/PERCENT", fields.join("/")));
        }
        let bs = size_of(fields[0])?;
        if bs == 0 {
            return Err(format!(
                "'{}': block sizes must be greater than 0",
                fields.join("/")
            ));
        }
        out.push((bs, perc_of(fields.get(1).copied())));
    }
    let given: u32 = out.iter().filter_map(|e| e.1).sum();
    let missing = out.iter().filter(|e| e.1.is_none()).count() as u32;
    if given > 100 && missing > 0 {
        // fio refuses this when more than one entry lacks a percentage (and wraps around
        // below zero with one).
        return Err("bssplit percentages add to more than 100%".to_string());
    }
    let share = if missing == 1 && out.len() == 1 {
        100
    } else {
        // no entry without a percentage: no share is needed
        100u32
            .saturating_sub(given)
            .checked_div(missing)
            .unwrap_or(0)
    };
    let mut split: Vec<BsSplitEntry> = out
        .into_iter()
        .map(|(bs, p)| BsSplitEntry {
            bs: Bytes(bs),
            perc: p.unwrap_or(share),
        })
        .collect();
    split.sort_by_key(|e| e.perc);
    Ok((split, dropped))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(bs: u64, perc: u32) -> BsSplitEntry {
        BsSplitEntry {
            bs: Bytes(bs),
            perc,
        }
    }

    #[test]
    fn directions_are_handed_out_as_fios_str_split_parse() {
        assert_eq!(per_direction("4k/50:8k/50"), ["4k/50:8k/50"; 3]);
        assert_eq!(per_direction("4k,8k"), ["4k", "8k", "8k"]);
        assert_eq!(per_direction("4k,8k,16k"), ["4k", "8k", "16k"]);
        assert_eq!(per_direction(",8k/100"), ["", "8k/100", "8k/100"]);
    }

    #[test]
    fn entries_end_at_the_first_empty_one_and_at_64() {
        assert_eq!(entries("4k/10:8k").0, vec![vec!["4k", "10"], vec!["8k"]]);
        assert_eq!(entries("4k/10::8k/5").0.len(), 1);
        assert!(entries("").0.is_empty());
        let long = vec!["4k"; 70].join(":");
        let (l, dropped) = entries(&long);
        assert_eq!((l.len(), dropped), (64, true));
    }

    #[test]
    fn bssplit_percentages_and_order_are_fios() {
        // sorted by percentage, stable among equal ones
        let (s, _) = bssplit_dir("4k/10:64k/50:32k/40").unwrap();
        assert_eq!(s, vec![e(4096, 10), e(32768, 40), e(65536, 50)]);
        // the missing ones share the rest, rounded down; /0 counts as missing
        let (s, _) = bssplit_dir("4k/10:8k:16k/0:32k").unwrap();
        assert_eq!(
            s,
            vec![e(4096, 10), e(8192, 30), e(16384, 30), e(32768, 30)]
        );
        // one entry without a percentage is all of it
        assert_eq!(bssplit_dir("8k").unwrap().0, vec![e(8192, 100)]);
        // percentages above 100 are capped; a sum above 100 without missing entries is fio's
        assert_eq!(
            bssplit_dir("4k/150:8k/20").unwrap().0,
            vec![e(8192, 20), e(4096, 100)]
        );
        assert!(
            bssplit_dir("4k/80:8k/30:16k:32k")
                .unwrap_err()
                .contains("more than 100%")
        );
        assert!(bssplit_dir("4x/10").is_err());
        assert!(bssplit_dir("0/10").is_err());
        assert!(bssplit_dir("4k/10/2").is_err());
        assert!(bssplit_dir("").unwrap().0.is_empty());
    }

    #[test]
    fn jesd219s_split_keeps_its_one_percent_entries_in_order() {
        let (s, _) = bssplit_dir(
            "512/4:1024/1:1536/1:2048/1:2560/1:3072/1:3584/1:4k/67:8k/10:16k/7:32k/3:64k/3",
        )
        .unwrap();
        let sizes: Vec<u64> = s.iter().map(|e| e.bs.0).collect();
        assert_eq!(
            sizes,
            [
                1024, 1536, 2048, 2560, 3072, 3584, 32768, 65536, 512, 16384, 8192, 4096
            ]
        );
    }
}
